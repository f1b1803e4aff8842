//! Test-only crate: the ASM2464PD USB bridge played by a Linux FunctionFS gadget on `dummy_hcd`
//! inside a qemu guest, so that the real rusb code path (usbfs, libusb) can enumerate, claim and
//! drive it without hardware.
//!
//! * `run-guest.sh` (next to this crate's Cargo.toml) fetches Debian's kernel, builds a busybox
//!   initramfs with the gadget modules and the two programs below, and boots it under TCG.
//! * `usb-gadget` (src/bin) is the device side: [`ffs`] writes the ASM2464 interface (vendor class,
//!   bulk OUT 0x02, bulk IN 0x81) to FunctionFS, and [`bridge_gadget`] serves EP0 vendor requests
//!   and bulk data from the usb crate's bridge model ([`usb::device::BridgeCore`]) with a PCIe
//!   endpoint behind it ([`scratch::ScratchEndpoint`] for the protocol-level test).
//! * `usb-host` (src/bin) is the host side: the usb crate's rusb transport and controller.
//! * `tests/usb_qemu.rs` runs the script and checks the guest's `USB-QEMU-RESULT:` line.

#![forbid(unsafe_code)]

pub mod bridge_gadget;
pub mod ffs;
pub mod scratch;

/// The line the guest prints last: `USB-QEMU-RESULT: PASS` or `USB-QEMU-RESULT: FAIL <why>`.
pub const RESULT_MARKER: &str = "USB-QEMU-RESULT:";
