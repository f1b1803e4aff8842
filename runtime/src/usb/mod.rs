//! The USB path (usb-asm24.md): a GPU behind an ASM2464PD USB-to-PCIe bridge. The `usb` crate
//! speaks the bridge's protocol and sets up the PCIe bus; here the GPU becomes a
//! [`crate::pci::PciDevice`] ([`device::UsbPciDevice`]) so the driverless PCI driver runs over
//! USB unchanged, and [`iface::UsbIface`] is its [`crate::platform::GpuIface`] with USB buffer
//! placement. [`link::UsbLink`] shares the bridge between the device, its views and the stats.
//!
//! Opening: [`open_bridge`] takes any [`::usb::UsbTransport`] (the real rusb one, or the emulated
//! bridge of the `emu` crate), brings the controller up, enumerates the bus behind it and
//! returns the PCI device.

pub mod device;
pub mod iface;
pub mod link;

use std::sync::Arc;

use ::usb::{setup_bars, Asm24, BusLayout, UsbTransport};

use crate::device::DeviceOptions;
use crate::error::{Error, Result};
use device::UsbPciDevice;
use link::UsbLink;

/// Controller up, bus enumerated, GPU BARs assigned.
pub fn open_bridge(t: Box<dyn UsbTransport>) -> Result<Arc<UsbPciDevice>> {
    // An installed command recorder sees every transfer ([`crate::record_io`]).
    let t = crate::record_io::wrap_transport(t);
    let ctrl = Asm24::new(t).map_err(|e| Error::Invalid(format!("USB bridge: {e}")))?;
    let link = UsbLink::new(ctrl);
    let ep = link
        .with(|c| setup_bars(c, BusLayout::default()))
        .map_err(|e| Error::Invalid(format!("USB bridge: PCIe setup: {e}")))?;
    Ok(Arc::new(UsbPciDevice::new(link, ep)))
}

/// Opens real bridge number `index` through libusb.
pub fn open_rusb(index: usize, detach_kernel_driver: bool) -> Result<Arc<UsbPciDevice>> {
    let t = ::usb::rusb_transport::RusbTransport::open(
        index,
        ::usb::rusb_transport::OpenOptions {
            detach_kernel_driver,
        },
    )
    .map_err(|e| Error::Invalid(format!("USB bridge usb:{index}: {e}")))?;
    open_bridge(Box::new(t))
}

pub use ::usb::Firmware;

/// Device options for USB (usb-asm24.md §6): small rings and kernel-argument area; staging
/// buffers (in VRAM, written with streamed TLPs) of 4 MiB so a chunk, its SDMA packets and the
/// doorbell share one submission.
pub fn device_options(mut o: DeviceOptions) -> DeviceOptions {
    o.compute_ring_size = 0x2000;
    o.sdma_ring_size = 0x1000;
    o.kernargs_size = 0x10000;
    o.staging_chunk = 4 << 20;
    o.staging_count = 2;
    o
}

/// ASM2464 bridges libusb sees, one line each, or why USB cannot be listed here.
pub fn list_bridges() -> std::result::Result<Vec<String>, String> {
    ::usb::rusb_transport::list_bridges()
        .map(|v| {
            v.iter()
                .map(|b| {
                    format!(
                        "usb:{} bus {} port {} address {}: {:04x}:{:04x} {}",
                        b.index, b.bus, b.port, b.address, b.vid, b.pid, b.what
                    )
                })
                .collect()
        })
        .map_err(|e| e.to_string())
}

/// Opens real bridge `index` as a device. The kernel driver (uas/usb-storage) is detached only
/// when `detach` is set.
pub fn open_device(
    index: usize,
    opts: DeviceOptions,
    detach: bool,
    popts: &crate::pci::PciOptions,
) -> Result<crate::device::Device> {
    let dev = open_rusb(index, detach)?;
    let link = dev.link.clone();
    let iface = iface::UsbIface::new(dev, popts)?;
    crate::device::Device::new(Box::new(iface), device_options(opts))
        .map_err(|e| iface::with_cause(e, &link))
}
