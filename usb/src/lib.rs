//! `usb`: the ASM2464PD USB-to-PCIe bridge that puts an eGPU on USB. Knows no GPU and no trace.
//!
//! Layers, lowest first:
//! - [`transport`]: [`transport::UsbTransport`] (control/bulk transfers with timeouts, batched
//!   submission) and [`transport::Faulty`] for injected stalls, short reads and unplugs;
//!   [`rusb_transport`] is the libusb implementation (finding bridges by USB id, claiming them).
//! - [`stream`]: streamed submission (several transfers in flight, order rules, cancellation on
//!   failure); [`libusb_async`] is its libusb engine.
//! - [`layout`] + [`proto`]: the wire formats of both firmwares (UAS command IUs with vendor
//!   CDBs; vendor control requests), one layout per message for encoder and parser.
//! - [`controller`]: [`controller::Asm24`]: XDATA access with the write cache, SRAM window
//!   writes, round-trip accounting.
//! - [`pcie`]: TLPs with completion checks and retries, config space, streamed memory access,
//!   the PCI-cacheable write filter. [`enumerate`]: bridges, resizable BAR, BAR sizing and
//!   assignment.

// The only unsafe code is the libusb asynchronous-transfer engine (`libusb_async`).
#![deny(unsafe_code)]

pub mod controller;
pub mod device;
pub mod enumerate;
pub mod error;
pub mod layout;
#[allow(unsafe_code)]
pub mod libusb_async;
pub mod pcie;
pub mod proto;
pub mod rusb_transport;
pub mod stream;
pub mod transport;

pub use controller::{Asm24, Firmware, Stats};
pub use enumerate::{setup_bars, Bar, BusLayout, Endpoint};
pub use error::{CplStatus, ProtoError, Result, UsbError};
pub use pcie::Bdf;
pub use stream::StreamReport;
pub use transport::{BridgeInfo, Fault, Faulty, Transfer, UsbTransport};
