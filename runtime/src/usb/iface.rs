//! [`UsbIface`]: the [`GpuIface`] of a GPU behind an ASM2464 bridge. It is the PCI interface
//! ([`PciIface`], the AM driver) over a [`UsbPciDevice`], with the placement USB needs
//! (usb-asm24.md §6, HEAD tinygrad): every CPU-visible buffer lives in VRAM and is written with
//! streamed memory TLPs, except small uncached buffers (the first signal page), which go to the
//! bridge's 4 KiB system buffer so GPU signal writes land where one E4 read sees them. The
//! doorbell BAR and the compute ring are PCI-cacheable, so unchanged ring dwords and doorbell
//! halves are not re-sent.

use std::sync::Arc;

use crate::error::{Error, FaultReport, Result};
use crate::pci::iface::PciIface;
use crate::pci::{PciOptions, BAR_DOORBELL, BAR_VRAM};
use crate::platform::{
    AllocKind, DeviceProps, GpuBuffer, GpuIface, IpBases, IpVersions, QueueBuffers, QueueDesc,
    QueueKind,
};

use super::device::UsbPciDevice;
use super::link::UsbLink;

pub struct UsbIface {
    pub pci: PciIface,
    pub link: Arc<UsbLink>,
    vram_bus: u64,
}

impl UsbIface {
    /// Brings the GPU behind `dev` up with the AM driver.
    pub fn new(dev: Arc<UsbPciDevice>, opts: &PciOptions) -> Result<UsbIface> {
        let link = dev.link.clone();
        let vram_bus = dev.bar_bus(BAR_VRAM);
        let db = dev.endpoint.bars.get(&BAR_DOORBELL).copied();
        let pci = PciIface::new(dev, opts).map_err(|e| with_cause(e, &link))?;
        if let Some(db) = db {
            link.add_pci_cacheable(db.addr, db.size);
        }
        Ok(UsbIface {
            pci,
            link,
            vram_bus,
        })
    }

    fn cause(&self, e: Error) -> Error {
        with_cause(e, &self.link)
    }
}

/// An MMIO error over USB says only "unreachable"; add the transfer failure behind it.
pub fn with_cause(e: Error, link: &UsbLink) -> Error {
    let m = match &e {
        Error::Mmio(m) | Error::Pci(crate::pci::PciError::Mmio(m)) if m.size == 0 => *m,
        _ => return e,
    };
    match link.fault() {
        Some(f) => Error::Invalid(format!(
            "USB access to bus address {:#x}+{:#x} failed: {f}",
            m.base, m.offset
        )),
        None => e,
    }
}

impl GpuIface for UsbIface {
    fn props(&self) -> &DeviceProps {
        self.pci.props()
    }
    fn ip_versions(&self) -> IpVersions {
        self.pci.ip_versions()
    }
    fn ip_bases(&self) -> &IpBases {
        self.pci.ip_bases()
    }
    fn describe(&self) -> String {
        format!("USB ({}) → {}", self.link.describe(), self.pci.describe())
    }
    fn alloc(&mut self, size: u64, kind: AllocKind) -> Result<GpuBuffer> {
        if kind == AllocKind::UNCACHED && size <= 0x1000 {
            if let Ok(b) = self.pci.alloc(size, kind) {
                return Ok(b);
            }
        }
        // Anything the CPU must see becomes plain VRAM with a CPU view: host memory is not
        // reachable over the bridge, and uncached VRAM with a CPU view is what the PCI iface
        // calls sysmem (the host reaches VRAM through BAR0 either way).
        let kind = if kind.cpu_access {
            AllocKind::VRAM_CPU
        } else {
            kind
        };
        self.pci.alloc(size, kind).map_err(|e| self.cause(e))
    }
    fn free(&mut self, buf: GpuBuffer) -> Result<()> {
        self.pci.free(buf).map_err(|e| self.cause(e))
    }
    fn map(&mut self, buf: &GpuBuffer) -> Result<()> {
        self.pci.map(buf)
    }
    fn create_queue(
        &mut self,
        kind: QueueKind,
        bufs: QueueBuffers<'_>,
        xcc_id: u32,
    ) -> Result<QueueDesc> {
        if kind == QueueKind::Compute {
            if let Some(m) = self.pci.mapping(bufs.ring.handle) {
                for r in m.runs.iter().filter(|r| !r.system) {
                    self.link.add_pci_cacheable(self.vram_bus + r.addr, r.len);
                }
            }
        }
        self.pci
            .create_queue(kind, bufs, xcc_id)
            .map_err(|e| self.cause(e))
    }
    fn sleep(&mut self, ms: u32) -> Result<()> {
        self.pci.sleep(ms).map_err(|e| self.cause(e))
    }
    fn on_device_hang(&mut self) -> FaultReport {
        let mut r = self.pci.on_device_hang();
        if let Some(f) = self.link.fault() {
            r.context.push_str(&format!("; USB link: {f}"));
        }
        r
    }
}
