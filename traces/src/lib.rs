//! `traces`: everything wavescope knows about profile data, with no device and no screen.
//!
//! - [`sqtt`]: the SQ thread-trace decoder (gfx11 / gfx12 / gfx950), wave reconstruction and
//!   absolute time from the realtime markers.
//! - [`isa`]: AMD machine-code decoding and disassembly (RDNA3, RDNA4, CDNA3/gfx950) and code objects.
//! - [`model`] and the file formats: tinygrad pickles, wavescope's `.wst`, `.rgp`, Perfetto JSON.

// No `unsafe` but the file mappings in `mapped` (forbid would not let that one module opt out).
#![deny(unsafe_code)]

pub mod analysis;
/// The bounded little-endian reader every binary parser uses (the `le-reader` crate, shared with
/// `usb`, which may not depend on `traces`).
pub use le_reader as bytes;
pub mod diff;
pub mod isa;
mod mapped;
pub mod model;
pub mod open;
pub mod perfetto;
pub mod pickle;
pub mod pipeline;
pub mod rgp;
mod spare;
pub mod sqtt;
pub mod target;
pub mod tinygrad;
pub mod wst;

pub use target::{Family, GfxTarget};
