//! [`UsbPciDevice`]: the GPU behind an ASM2464 bridge as a [`PciDevice`], so the driverless PCI
//! driver (AM) runs over USB unchanged. Config space and BARs are TLPs through the bridge; the
//! "pinned system memory" the driver asks for is carved from the bridge's DMA windows (the
//! 4 KiB system buffer at bus 0x820000 first, then the 512 KiB SRAM at 0x200000); there are no
//! interrupts over USB.

use std::sync::{Arc, Mutex};

use ::usb::controller::xdata;
use ::usb::proto::SRAM_SLOT;
use ::usb::{Bdf, Endpoint, UsbError};

use super::link::{BarView, SramView, UsbLink, XdataView};
use crate::pci::{PciDevice, PciError, PciResult, SysMem};
use crate::platform::{Errno, Mmio};

const PAGE: u64 = 0x1000;

/// Maps a bridge failure to the PCI layer's error (the message keeps the USB cause).
pub fn pci_err(what: &str, e: UsbError) -> PciError {
    PciError::Sys {
        path: format!("USB bridge: {what}: {e}"),
        errno: if e.is_disconnect() {
            Errno::ENODEV
        } else {
            Errno::EIO
        },
        hint: None,
    }
}

#[derive(Default)]
struct Windows {
    sys_used: bool,
    /// (offset, len) of SRAM allocations, sorted by offset.
    sram: Vec<(u64, u64)>,
}

/// The GPU function behind the bridge.
pub struct UsbPciDevice {
    pub link: Arc<UsbLink>,
    pub endpoint: Endpoint,
    windows: Mutex<Windows>,
}

impl UsbPciDevice {
    pub fn new(link: Arc<UsbLink>, endpoint: Endpoint) -> Self {
        UsbPciDevice {
            link,
            endpoint,
            windows: Mutex::new(Windows::default()),
        }
    }

    fn bdf(&self) -> Bdf {
        self.endpoint.bdf
    }

    /// Bus address of a BAR (0 when absent).
    pub fn bar_bus(&self, bar: u8) -> u64 {
        self.endpoint.bars.get(&bar).map_or(0, |b| b.addr)
    }
}

impl PciDevice for UsbPciDevice {
    fn bus_id(&self) -> String {
        format!("usb:{} {}", self.link.describe(), self.bdf())
    }
    fn config_read(&self, offset: u16, len: u8) -> PciResult<u32> {
        let bdf = self.bdf();
        self.link
            .with(|c| c.cfg_read(bdf, offset, len))
            .map_err(|e| pci_err(&format!("config read {offset:#x}"), e))
    }
    fn config_write(&self, offset: u16, len: u8, value: u32) -> PciResult<()> {
        let bdf = self.bdf();
        self.link
            .with(|c| c.cfg_write(bdf, offset, value, len))
            .map_err(|e| pci_err(&format!("config write {offset:#x}"), e))
    }
    fn bar_len(&self, bar: u8) -> u64 {
        self.endpoint.bars.get(&bar).map_or(0, |b| b.size)
    }
    fn bar(&self, bar: u8) -> PciResult<Arc<dyn Mmio>> {
        let b = self
            .endpoint
            .bars
            .get(&bar)
            .ok_or_else(|| PciError::NoDevice {
                detail: format!("BAR{bar} is not implemented by the GPU behind the bridge"),
            })?;
        Ok(Arc::new(BarView {
            link: self.link.clone(),
            bus: b.addr,
            size: b.size,
        }))
    }
    fn alloc_sysmem(&self, size: u64) -> PciResult<SysMem> {
        let size = size.max(1).div_ceil(PAGE) * PAGE;
        let mut w = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        if size <= xdata::SYS_SIZE && !w.sys_used {
            w.sys_used = true;
            return Ok(SysMem {
                cpu: Arc::new(XdataView {
                    link: self.link.clone(),
                    xaddr: xdata::SYS,
                    size,
                    bus: xdata::SYS_BUS,
                }),
                pages: (0..size / PAGE)
                    .map(|i| xdata::SYS_BUS + i * PAGE)
                    .collect(),
            });
        }
        // First fit in the SRAM window.
        let mut at = 0u64;
        for &(o, l) in &w.sram {
            if at + size <= o {
                break;
            }
            // Buffers start on the F2 engine's 16 KiB slots.
            at = (o + l).div_ceil(SRAM_SLOT) * SRAM_SLOT;
        }
        if at + size > xdata::SRAM_SIZE {
            return Err(PciError::OutOfMemory {
                what: "bridge DMA window (4 KiB system buffer + 512 KiB SRAM)",
                size,
            });
        }
        let pos = w.sram.partition_point(|&(o, _)| o < at);
        w.sram.insert(pos, (at, size));
        Ok(SysMem {
            cpu: Arc::new(SramView {
                link: self.link.clone(),
                offset: at,
                size,
            }),
            pages: (0..size / PAGE)
                .map(|i| xdata::SRAM_BUS + at + i * PAGE)
                .collect(),
        })
    }
    fn free_sysmem(&self, mem: &SysMem) {
        let Some(&first) = mem.pages.first() else {
            return;
        };
        let mut w = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        if first == xdata::SYS_BUS {
            w.sys_used = false;
        } else {
            let off = first - xdata::SRAM_BUS;
            w.sram.retain(|&(o, _)| o != off);
        }
    }
    fn wait_interrupt(&self, _timeout_ms: u32) -> PciResult<bool> {
        // No MSI over USB: the runtime polls. A dead link ends the wait with its cause.
        match self.link.fault().filter(UsbError::is_disconnect) {
            Some(e) => Err(pci_err("waiting for the GPU", e)),
            None => Ok(false),
        }
    }
}
