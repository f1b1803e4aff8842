//! Opening emulated devices through the runtime's real driver paths: the emulated KFD behind
//! [`runtime::kfd::KfdIface`], the emulated PCI GPU behind the AM driver, and the emulated
//! ASM2464 bridge behind the USB path. Each returns the runtime's [`Device`] and the handle a
//! test (or `wavescope devices --emulated`) inspects.

use std::sync::Arc;

use runtime::error::Result;
use runtime::kfd::KfdIface;
use runtime::platform::Platform;
use runtime::usb::link::UsbLink;
use runtime::usb::{iface, open_bridge};
use runtime::{Device, DeviceOptions};

use crate::asm24::EmuGpuEndpoint;
use crate::pci::{EmuPciConfig, EmuPciGpu};
use crate::{EmuArch, EmuConfig, EmuPlatform};

/// Opens an emulated GPU through the same KFD code path as a real one.
pub fn open_kfd(arch: EmuArch, opts: DeviceOptions) -> Result<(Device, EmuPlatform)> {
    let emu = EmuPlatform::new(EmuConfig::new(arch));
    let p: Arc<dyn Platform> = Arc::new(emu.clone());
    Ok((Device::new(Box::new(KfdIface::open(p, 0)?), opts)?, emu))
}

/// Opens an emulated PCI GPU (gfx1100 or gfx1201) through the real PCI driver (only the PCI
/// device is emulated; synthetic firmware files under the names the driver asks for on that
/// GPU are written to a temporary directory, removed after bring-up).
pub fn open_pci(arch: EmuArch, opts: DeviceOptions) -> Result<(Device, EmuPciGpu)> {
    open_pci_with(EmuPciConfig::new(arch), opts)
}

/// [`open_pci`] with the device `cfg` (e.g. [`EmuPciConfig::navi44`], tinygrad's recorded GPU).
pub fn open_pci_with(cfg: EmuPciConfig, opts: DeviceOptions) -> Result<(Device, EmuPciGpu)> {
    open_pci_on(EmuPciGpu::new(cfg)?, opts)
}

/// [`open_pci_with`] on an existing emulated GPU (which keeps its state across sessions: a
/// second open after a teardown finds what the first left).
pub fn open_pci_on(gpu: EmuPciGpu, opts: DeviceOptions) -> Result<(Device, EmuPciGpu)> {
    let fw = crate::pci::firmware::temp_firmware_dir_for(&crate::pci::firmware::names_for(
        &gpu.config().ips,
    ))?;
    let popts = runtime::pci::PciOptions {
        firmware_dir: fw.path().to_path_buf(),
        ..Default::default()
    };
    let dev = Device::open_on_pci(Arc::new(gpu.clone()), opts, &popts)?;
    Ok((dev, gpu))
}

/// The emulated USB eGPU: the fake bridge's transport handle and the GPU behind it.
pub struct EmuUsb {
    pub gpu: EmuPciGpu,
    pub transport: ::usb::device::CoreTransport<EmuGpuEndpoint>,
    pub link: Arc<UsbLink>,
    /// What enumeration found behind the bridge.
    pub endpoint: ::usb::Endpoint,
}

/// Opens the emulated gfx1100 behind the emulated ASM2464 (`fw` protocol) through the real USB
/// code path: controller, enumeration, [`runtime::usb::device::UsbPciDevice`], the AM driver,
/// [`iface::UsbIface`]. `wrap` may put the transport behind a fault injector.
pub fn open_usb(
    fw: ::usb::Firmware,
    opts: DeviceOptions,
    wrap: impl FnOnce(::usb::device::CoreTransport<EmuGpuEndpoint>) -> Box<dyn ::usb::UsbTransport>,
) -> Result<(Device, EmuUsb)> {
    open_usb_arch(EmuArch::Gfx1100, fw, opts, wrap)
}

/// [`open_usb`] with the GPU of `arch` (gfx1100 or gfx1201) behind the bridge.
pub fn open_usb_arch(
    arch: EmuArch,
    fw: ::usb::Firmware,
    opts: DeviceOptions,
    wrap: impl FnOnce(::usb::device::CoreTransport<EmuGpuEndpoint>) -> Box<dyn ::usb::UsbTransport>,
) -> Result<(Device, EmuUsb)> {
    open_usb_with(EmuPciConfig::new(arch), fw, opts, wrap)
}

/// [`open_usb_arch`] with the device `cfg` behind the bridge.
pub fn open_usb_with(
    cfg: EmuPciConfig,
    fw: ::usb::Firmware,
    opts: DeviceOptions,
    wrap: impl FnOnce(::usb::device::CoreTransport<EmuGpuEndpoint>) -> Box<dyn ::usb::UsbTransport>,
) -> Result<(Device, EmuUsb)> {
    open_usb_on(EmuPciGpu::new(cfg)?, fw, opts, wrap)
}

/// [`open_usb_with`] on an existing emulated GPU (which keeps its state across sessions: a
/// second open after a teardown finds what the first left).
pub fn open_usb_on(
    gpu: EmuPciGpu,
    fw: ::usb::Firmware,
    opts: DeviceOptions,
    wrap: impl FnOnce(::usb::device::CoreTransport<EmuGpuEndpoint>) -> Box<dyn ::usb::UsbTransport>,
) -> Result<(Device, EmuUsb)> {
    let names = crate::pci::firmware::names_for(&gpu.config().ips);
    let transport = crate::asm24::fake_transport(gpu.clone(), fw);
    let dev = open_bridge(wrap(transport.clone()))?;
    let link = dev.link.clone();
    let endpoint = dev.endpoint.clone();
    // Removed when `fw` drops at the end of this function, bring-up done or failed.
    let fw = crate::pci::firmware::temp_firmware_dir_for(&names)?;
    let popts = runtime::pci::PciOptions {
        firmware_dir: fw.path().to_path_buf(),
        ..Default::default()
    };
    let iface = iface::UsbIface::new(dev, &popts)?;
    let device = Device::new(Box::new(iface), runtime::usb::device_options(opts))
        .map_err(|e| iface::with_cause(e, &link))?;
    Ok((
        device,
        EmuUsb {
            gpu,
            transport,
            link,
            endpoint,
        },
    ))
}
