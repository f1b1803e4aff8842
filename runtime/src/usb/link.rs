//! The shared handle on a bridge ([`UsbLink`]) and the CPU views the driver uses over it: a BAR
//! reached with memory TLPs ([`BarView`]), the 4 KiB system buffer reached as XDATA bytes
//! ([`XdataView`]) and the 512 KiB SRAM window written by DMA ([`SramView`]).
//!
//! [`Mmio`] errors carry no cause, so a failed USB transfer is recorded in the link
//! ([`UsbLink::fault`]); a disconnect is sticky: every later access fails at once instead of
//! waiting for timeouts, and callers that see an MMIO error ask the link why.

use std::sync::{Arc, Mutex, MutexGuard};

use ::usb::controller::xdata;
use ::usb::proto::{tlp, SECTOR, SRAM_SLOT};
use ::usb::{Asm24, Stats, UsbError};

use crate::platform::{check_range, Mmio, MmioError};

/// A bridge shared by every view and the PCI device.
pub struct UsbLink {
    ctrl: Mutex<Asm24>,
    fault: Mutex<Option<UsbError>>,
    /// What the host last wrote into the SRAM window (the host cannot read most of it back).
    sram_shadow: Mutex<Vec<u8>>,
}

impl UsbLink {
    pub fn new(ctrl: Asm24) -> Arc<UsbLink> {
        Arc::new(UsbLink {
            ctrl: Mutex::new(ctrl),
            fault: Mutex::new(None),
            sram_shadow: Mutex::new(vec![0; xdata::SRAM_SIZE as usize]),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Asm24> {
        self.ctrl.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the controller; a failure is recorded, and after a disconnect nothing is
    /// sent any more.
    pub fn with<R>(&self, f: impl FnOnce(&mut Asm24) -> ::usb::Result<R>) -> ::usb::Result<R> {
        if let Some(e) = self.fault().filter(UsbError::is_disconnect) {
            return Err(e);
        }
        let r = f(&mut self.lock());
        if let Err(e) = &r {
            *self.fault.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.clone());
        }
        r
    }

    /// The last transfer failure (sticky for disconnects).
    pub fn fault(&self) -> Option<UsbError> {
        self.fault.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Round trips, transfers and bytes so far.
    pub fn stats(&self) -> Stats {
        self.lock().stats
    }

    pub fn describe(&self) -> String {
        let c = self.lock();
        format!(
            "{} {:04x}:{:04x} {:?} firmware",
            c.info().location,
            c.info().vid,
            c.info().pid,
            c.firmware()
        )
    }

    /// Records one line per USB submission from now on (`None` stops): see [`Self::take_trace`].
    pub fn set_trace(&self, on: bool) {
        self.lock().set_trace(on);
    }
    pub fn take_trace(&self) -> Vec<String> {
        self.lock().take_trace()
    }

    /// Marks a bus range PCI-cacheable (doorbells, the compute ring).
    pub fn add_pci_cacheable(&self, start: u64, len: u64) {
        self.lock().add_pci_cacheable(start, len);
    }
}

fn mmio_err(base: u64, offset: u64, len: u64) -> MmioError {
    // The size 0 marks "the window is unreachable"; the cause is in UsbLink::fault.
    MmioError {
        base,
        offset,
        len,
        size: 0,
    }
}

/// A BAR (or part of one) at bus address `bus`, reached with memory TLPs.
pub struct BarView {
    pub link: Arc<UsbLink>,
    pub bus: u64,
    pub size: u64,
}

impl BarView {
    fn fail(&self, offset: u64, len: u64) -> MmioError {
        mmio_err(self.bus, offset, len)
    }
}

impl Mmio for BarView {
    fn addr(&self) -> u64 {
        self.bus
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn read_bytes(&self, offset: u64, out: &mut [u8]) -> Result<(), MmioError> {
        check_range(self.bus, self.size, offset, out.len() as u64)?;
        if out.is_empty() {
            return Ok(());
        }
        let start = self.bus + offset;
        let a0 = start & !3;
        let a1 = (start + out.len() as u64).div_ceil(4) * 4;
        let data = self
            .link
            .with(|c| c.mem_read(a0, (a1 - a0) as usize))
            .map_err(|_| self.fail(offset, out.len() as u64))?;
        let skip = (start - a0) as usize;
        out.copy_from_slice(&data[skip..skip + out.len()]);
        Ok(())
    }
    fn write_bytes(&self, offset: u64, data: &[u8]) -> Result<(), MmioError> {
        check_range(self.bus, self.size, offset, data.len() as u64)?;
        let mut a = self.bus + offset;
        let mut rest = data;
        let r = self.link.with(|c| {
            // Partial head dword: one TLP with byte enables.
            if a & 3 != 0 && !rest.is_empty() {
                let n = (4 - (a & 3) as usize).min(rest.len());
                let mut v = 0u32;
                for (i, b) in rest[..n].iter().enumerate() {
                    v |= u32::from(*b) << (8 * i);
                }
                c.pcie_request(tlp::MEM_WR, a, Some(v), n as u8)?;
                a += n as u64;
                rest = &rest[n..];
            }
            let whole = rest.len() / 4 * 4;
            if whole > 0 {
                c.mem_write(a, &rest[..whole])?;
                a += whole as u64;
                rest = &rest[whole..];
            }
            if !rest.is_empty() {
                let mut v = 0u32;
                for (i, b) in rest.iter().enumerate() {
                    v |= u32::from(*b) << (8 * i);
                }
                c.pcie_request(tlp::MEM_WR, a, Some(v), rest.len() as u8)?;
            }
            Ok(())
        });
        r.map_err(|_| self.fail(offset, data.len() as u64))
    }
    fn read32(&self, offset: u64) -> Result<u32, MmioError> {
        check_range(self.bus, self.size, offset, 4)?;
        if (self.bus + offset) & 3 != 0 {
            let mut b = [0u8; 4];
            self.read_bytes(offset, &mut b)?;
            return Ok(u32::from_le_bytes(b));
        }
        self.link
            .with(|c| c.mem_read32(self.bus + offset))
            .map_err(|_| self.fail(offset, 4))
    }
    fn write32(&self, offset: u64, v: u32) -> Result<(), MmioError> {
        check_range(self.bus, self.size, offset, 4)?;
        if (self.bus + offset) & 3 != 0 {
            return self.write_bytes(offset, &v.to_le_bytes());
        }
        self.link
            .with(|c| c.mem_write32(self.bus + offset, v))
            .map_err(|_| self.fail(offset, 4))
    }
    fn write64(&self, offset: u64, v: u64) -> Result<(), MmioError> {
        check_range(self.bus, self.size, offset, 8)?;
        if (self.bus + offset) & 3 != 0 {
            return self.write_bytes(offset, &v.to_le_bytes());
        }
        // Upper half first: a 64-bit doorbell fires on the low dword.
        self.link
            .with(|c| c.mem_write64(self.bus + offset, v))
            .map_err(|_| self.fail(offset, 8))
    }
}

/// Bytes of the bridge's XDATA space (the 0xA000 system buffer), one E4/E5 request per ≤ 255
/// bytes read / per byte written. Writes bypass the XDATA write cache: the GPU writes these
/// bytes too (signals), so the host's shadow is not authoritative.
pub struct XdataView {
    pub link: Arc<UsbLink>,
    pub xaddr: u16,
    pub size: u64,
    /// Bus address the GPU sees this window at (reported as `addr()`).
    pub bus: u64,
}

impl Mmio for XdataView {
    fn addr(&self) -> u64 {
        self.bus
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn read_bytes(&self, offset: u64, out: &mut [u8]) -> Result<(), MmioError> {
        check_range(self.bus, self.size, offset, out.len() as u64)?;
        let d = self
            .link
            .with(|c| c.read_xdata(self.xaddr + offset as u16, out.len()))
            .map_err(|_| mmio_err(self.bus, offset, out.len() as u64))?;
        out.copy_from_slice(&d);
        Ok(())
    }
    fn write_bytes(&self, offset: u64, data: &[u8]) -> Result<(), MmioError> {
        check_range(self.bus, self.size, offset, data.len() as u64)?;
        self.link
            .with(|c| c.write_xdata(self.xaddr + offset as u16, data, true))
            .map_err(|_| mmio_err(self.bus, offset, data.len() as u64))
    }
}

/// Part of the 512 KiB SRAM window (GPU bus address 0x200000 + `offset`). Writes go by DMA
/// (F2 + bulk OUT, or SCSI WRITE(16)) in whole 16 KiB slots taken from the host's shadow of the
/// window; reads are only possible for the first 4 KiB, which XDATA 0xF000 shows — the rest is
/// readable only by a GPU-triggered F2 read, so reading it here is an error, not stale data.
pub struct SramView {
    pub link: Arc<UsbLink>,
    pub offset: u64,
    pub size: u64,
}

impl Mmio for SramView {
    fn addr(&self) -> u64 {
        xdata::SRAM_BUS + self.offset
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn read_bytes(&self, offset: u64, out: &mut [u8]) -> Result<(), MmioError> {
        check_range(self.addr(), self.size, offset, out.len() as u64)?;
        let at = self.offset + offset;
        if at + out.len() as u64 > 0x1000 {
            return Err(mmio_err(self.addr(), offset, out.len() as u64));
        }
        let d = self
            .link
            .with(|c| c.read_xdata(xdata::SRAM + at as u16, out.len()))
            .map_err(|_| mmio_err(self.addr(), offset, out.len() as u64))?;
        out.copy_from_slice(&d);
        Ok(())
    }
    fn write_bytes(&self, offset: u64, data: &[u8]) -> Result<(), MmioError> {
        check_range(self.addr(), self.size, offset, data.len() as u64)?;
        if data.is_empty() {
            return Ok(());
        }
        let at = (self.offset + offset) as usize;
        let mut shadow = self
            .link
            .sram_shadow
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        shadow[at..at + data.len()].copy_from_slice(data);
        let first = at as u64 / SRAM_SLOT * SRAM_SLOT;
        let end = ((at + data.len()) as u64).div_ceil(SECTOR) * SECTOR;
        let piece = shadow[first as usize..end as usize].to_vec();
        drop(shadow);
        self.link
            .with(|c| c.sram_write(first, &piece))
            .map_err(|_| mmio_err(self.addr(), offset, data.len() as u64))
    }
}
