//! SQTT (SQ thread trace): decoding the per-shader-engine streams the hardware writes.
//!
//! - [`packets`]: every packet layout of the three families (RDNA3 layout 3, RDNA4 layout 4,
//!   CDNA/gfx9), in one place.
//! - [`decoder`]: the streaming decoder over a byte slice (or an mmap'd file), no allocation per
//!   packet, time accumulation and layout detection.
//! - [`waves`]: waves, instruction tokens, markers and RGP userdata writes of one blob.
//! - [`residency`]: each SIMD's resident waves summed as they start and end (achieved
//!   occupancy's sums without a second pass over the records).
//! - [`time`]: absolute GPU time from the realtime markers.
//! - [`marker`]: the RGP marker dwords a runtime writes to the userdata registers.
//! - [`canonical`]: the one-line-per-packet form shared with the reference decode.

pub mod canonical;
pub mod decoder;
pub mod encode;
pub mod file;
pub mod inst_op;
pub mod map;
pub mod marker;
pub mod packets;
pub mod residency;
pub mod synth;
pub mod time;
pub mod waves;

pub use decoder::{decode, Cut, DecodeOptions, Decoder, Framing, Packet, RunSink, Tail};
pub use inst_op::{op_name, OpName, TokenOp};
pub use packets::{Kind, Layout, PacketType, Role};
pub use residency::Residency;
pub use time::{dispatch_time_maps, link_time_maps, TimeMap};
pub use waves::{
    analyze, analyze_with, analyze_with_progress, AnalyzeOptions, BlobAnalysis, DecodeError,
    InstToken, Marker, TokenKind, UserdataWrite, Warning, Wave, WaveTag,
};
