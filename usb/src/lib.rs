//! `usb`: the ASM2464PD USB-to-PCIe bridge that puts an eGPU on USB. Knows no GPU and no trace.
//!
//! Layers, lowest first:
//! - [`transport`]: [`transport::UsbTransport`] (control/bulk transfers with timeouts, batched
//!   submission) and [`transport::Faulty`] for injected stalls, short reads and unplugs;
//!   [`rusb_transport`] is the libusb implementation (finding bridges by USB id, claiming them).
//! - [`layout`] + [`proto`]: the wire formats of both firmwares (UAS command IUs with vendor
//!   CDBs; vendor control requests), one layout per message for encoder and parser.
//! - [`controller`]: [`controller::Asm24`]: XDATA access with the write cache, SRAM window
//!   writes, round-trip accounting.
//! - [`pcie`]: TLPs with completion checks and retries, config space, streamed memory access,
//!   the PCI-cacheable write filter. [`enumerate`]: bridges, resizable BAR, BAR sizing and
//!   assignment.

#![forbid(unsafe_code)]

pub mod controller;
pub mod device;
pub mod enumerate;
pub mod error;
pub mod layout;
pub mod pcie;
pub mod proto;
pub mod rusb_transport;
pub mod transport;

pub use controller::{Asm24, Firmware, Stats};
pub use enumerate::{setup_bars, Bar, BusLayout, Endpoint};
pub use error::{CplStatus, ProtoError, Result, UsbError};
pub use pcie::Bdf;
pub use transport::{BridgeInfo, Fault, Faulty, Transfer, UsbTransport};
