//! PCIe through the bridge's TLP engine: config and memory requests of ≤ 4 bytes with completion
//! checks and retries, streamed memory reads/writes (custom firmware), and the "PCI-cacheable"
//! write filter for ranges whose last written value the host knows (doorbells, rings).
//!
//! Retries (usb-asm24.md §3/§4): the custom firmware's return status ≠ 0 (engine error, 0xFF
//! completion timeout) and the stock engine's error bit are transient — the request is re-sent
//! after 1 ms, at most [`TLP_RETRIES`] times. A Configuration Request Retry Status completion
//! (a device still initialising) is retried the same way. Unsupported Request and Completer
//! Abort are final.

use std::time::Duration;

use crate::controller::{xdata, Asm24, Batch, Firmware};
use crate::error::{CplStatus, Result, UsbError};
use crate::proto::{tlp, Completion, Request, TlpMode};

pub const TLP_RETRIES: u32 = 10;
/// Largest streamed TLP run per F0 request (tinygrad's USB_MAX_STREAM).
pub const MAX_STREAM: usize = 1 << 20;
/// Stock-firmware TLP engine polls before giving up.
const STOCK_POLLS: u32 = 1000;

/// A PCIe function address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Bdf {
    pub bus: u8,
    pub dev: u8,
    pub func: u8,
}

impl Bdf {
    pub const fn new(bus: u8, dev: u8, func: u8) -> Bdf {
        Bdf { bus, dev, func }
    }
}

impl std::fmt::Display for Bdf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:02x}:{:02x}.{}", self.bus, self.dev, self.func)
    }
}

fn what(fmt_type: u8) -> &'static str {
    match (tlp::is_config(fmt_type), tlp::is_write(fmt_type)) {
        (true, false) => "config read",
        (true, true) => "config write",
        (false, false) => "memory read",
        (false, true) => "memory write",
    }
}

impl Asm24 {
    /// Marks a bus address range PCI-cacheable: a 32-bit write whose value equals the last one
    /// written to that address is dropped (the device never changes these locations).
    pub fn add_pci_cacheable(&mut self, start: u64, len: u64) {
        self.pci_cacheable.push(start..start + len);
    }

    fn cacheable(&self, addr: u64) -> bool {
        self.pci_cacheable.iter().any(|r| r.contains(&addr))
    }

    /// The write cache: true when writing `v` at `addr` can be dropped (a PCI-cacheable address
    /// that already holds it); otherwise remembers `v` there and the write must go out.
    fn cached(&mut self, addr: u64, v: u32) -> bool {
        if !self.cacheable(addr) {
            return false;
        }
        if self.pci_cache.get(&addr) == Some(&v) {
            self.stats.cache_hits += 1;
            return true;
        }
        self.pci_cache.insert(addr, v);
        false
    }

    /// One TLP of `size` (1..=4) bytes at `addr`. Returns the read data for reads, `None` for
    /// writes. Posted writes cost one round trip; reads and config writes two (custom) or a
    /// few polls (stock).
    pub fn pcie_request(
        &mut self,
        fmt_type: u8,
        addr: u64,
        value: Option<u32>,
        size: u8,
    ) -> Result<Option<u32>> {
        if size == 0 || size > 4 || u64::from(size) + (addr & 3) > 4 {
            return Err(UsbError::Invalid(format!(
                "TLP of {size} bytes at {addr:#x} crosses a dword"
            )));
        }
        let mut tries = 0;
        loop {
            let r = match self.fw_kind() {
                Firmware::Custom => self.tlp_custom(fmt_type, addr, value, size),
                Firmware::Stock => self.tlp_stock(fmt_type, addr, value, size),
            };
            match r {
                Err(TlpErr::Transient(_)) | Err(TlpErr::Status(CplStatus::ConfigRetry))
                    if tries < TLP_RETRIES =>
                {
                    tries += 1;
                    self.stats.retries += 1;
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(TlpErr::Transient(code)) => {
                    return Err(UsbError::TlpFailed {
                        what: what(fmt_type),
                        addr,
                        tries: tries + 1,
                        code,
                    })
                }
                Err(TlpErr::Status(status)) => {
                    return Err(UsbError::Completion {
                        what: what(fmt_type),
                        addr,
                        status,
                    })
                }
                Err(TlpErr::Usb(e)) => return Err(e),
                Ok(v) => {
                    self.stats.tlps += 1;
                    let shift = 8 * (addr & 3);
                    let mask = if size == 4 {
                        u32::MAX
                    } else {
                        (1u32 << (8 * size)) - 1
                    };
                    return Ok(v.map(|d| (d >> shift) & mask));
                }
            }
        }
    }

    fn fw_kind(&self) -> Firmware {
        self.firmware()
    }

    fn tlp_custom(
        &mut self,
        fmt_type: u8,
        addr: u64,
        value: Option<u32>,
        size: u8,
    ) -> Result<Option<u32>, TlpErr> {
        let off = addr & 3;
        let mut b = Batch::default();
        self.push_tlp_request(
            &mut b,
            fmt_type,
            tlp::byte_enable(addr, size),
            TlpMode::Single,
            addr & !3,
            value.map(|v| v << (8 * off)).unwrap_or(0),
        )?;
        if tlp::is_posted(fmt_type) {
            self.run(b)?;
            return Ok(None);
        }
        self.push_request(&mut b, Request::TlpCompletion)?;
        let r = self.run(b)?;
        let c = Completion::parse(r.first().map(Vec::as_slice).unwrap_or(&[]))
            .map_err(UsbError::from)?;
        if c.ret != 0 {
            return Err(TlpErr::Transient(c.ret));
        }
        if c.status != CplStatus::Success {
            return Err(TlpErr::Status(c.status));
        }
        Ok(if tlp::is_write(fmt_type) {
            None
        } else {
            Some(c.data)
        })
    }

    fn tlp_stock(
        &mut self,
        fmt_type: u8,
        addr: u64,
        value: Option<u32>,
        size: u8,
    ) -> Result<Option<u32>, TlpErr> {
        let off = addr & 3;
        let mut b = Batch::default();
        if let Some(v) = value {
            let d = (v << (8 * off)).to_be_bytes();
            for (i, x) in d.iter().enumerate() {
                self.push_xdata_write(&mut b, xdata::TLP_DATA + i as u16, *x, false)?;
            }
        }
        for (i, x) in ((addr & 0xFFFF_FFFC) as u32)
            .to_be_bytes()
            .iter()
            .enumerate()
        {
            self.push_xdata_write(&mut b, xdata::TLP_ADDR + i as u16, *x, false)?;
        }
        for (i, x) in ((addr >> 32) as u32).to_be_bytes().iter().enumerate() {
            self.push_xdata_write(&mut b, xdata::TLP_ADDR_HI + i as u16, *x, false)?;
        }
        self.push_xdata_write(&mut b, xdata::TLP_BE, tlp::byte_enable(addr, size), false)?;
        self.push_xdata_write(&mut b, xdata::TLP_FMT, fmt_type, false)?;
        self.push_xdata_write(&mut b, xdata::TLP_FIRE, 0x0F, true)?;
        self.push_xdata_write(&mut b, xdata::TLP_STATUS, 0x04, true)?;
        if tlp::is_posted(fmt_type) {
            self.run(b)?;
            return Ok(None);
        }
        // Poll the status register (the first poll rides in the same round trip).
        let mut polls = 0;
        loop {
            self.push_xdata_read(&mut b, xdata::TLP_STATUS, 1)?;
            let st = self.run(std::mem::take(&mut b))?.concat();
            let st = st.first().copied().unwrap_or(0);
            if st & 1 != 0 {
                self.write_xdata(xdata::TLP_STATUS, &[0x01], true)?;
                return Err(TlpErr::Transient(1));
            }
            if st & 2 != 0 {
                break;
            }
            polls += 1;
            if polls >= STOCK_POLLS {
                return Err(TlpErr::Transient(0xFF));
            }
        }
        self.push_xdata_write(&mut b, xdata::TLP_STATUS, 0x02, true)?;
        self.push_xdata_read(&mut b, xdata::TLP_CPL_FLAGS, 1)?;
        self.push_xdata_read(&mut b, xdata::TLP_DATA, 12)?;
        let r = self.run(b)?;
        let (flags, regs) = match (r.first(), r.get(1)) {
            (Some(f), Some(d)) if !f.is_empty() && d.len() >= 12 => (f[0], d),
            _ => {
                return Err(TlpErr::Usb(UsbError::Invalid(
                    "TLP completion registers: short XDATA read".into(),
                )))
            }
        };
        let hdr = u16::from_be_bytes([regs[10], regs[11]]);
        let status = CplStatus::from_bits((hdr >> 13) as u8);
        if status != CplStatus::Success {
            return Err(TlpErr::Status(status));
        }
        if tlp::is_config(fmt_type) && (flags & 1 != 0) == tlp::is_write(fmt_type) {
            return Err(TlpErr::Usb(UsbError::Invalid(format!(
                "{} at {addr:#x}: completion {} data (B284 = {flags:#04x})",
                what(fmt_type),
                if flags & 1 != 0 { "carried" } else { "lacked" }
            ))));
        }
        Ok(if tlp::is_write(fmt_type) {
            None
        } else {
            Some(u32::from_be_bytes([regs[0], regs[1], regs[2], regs[3]]))
        })
    }

    /// Config-space read of `size` bytes at `reg` of `bdf` (type 1 when bus > 0).
    pub fn cfg_read(&mut self, bdf: Bdf, reg: u16, size: u8) -> Result<u32> {
        let t = if bdf.bus > 0 {
            tlp::CFG_RD1
        } else {
            tlp::CFG_RD0
        };
        let a = tlp::cfg_addr(bdf.bus, bdf.dev, bdf.func, reg);
        Ok(self.pcie_request(t, a, None, size)?.unwrap_or(0))
    }

    /// Config-space write (non-posted: waits for the completion).
    pub fn cfg_write(&mut self, bdf: Bdf, reg: u16, value: u32, size: u8) -> Result<()> {
        let t = if bdf.bus > 0 {
            tlp::CFG_WR1
        } else {
            tlp::CFG_WR0
        };
        let a = tlp::cfg_addr(bdf.bus, bdf.dev, bdf.func, reg);
        self.pcie_request(t, a, Some(value), size).map(|_| ())
    }

    /// A 32-bit memory read.
    pub fn mem_read32(&mut self, addr: u64) -> Result<u32> {
        Ok(self.pcie_request(tlp::MEM_RD, addr, None, 4)?.unwrap_or(0))
    }

    /// A 32-bit posted memory write (dropped when the address is PCI-cacheable and unchanged).
    pub fn mem_write32(&mut self, addr: u64, v: u32) -> Result<()> {
        if self.cached(addr, v) {
            return Ok(());
        }
        self.pcie_request(tlp::MEM_WR, addr, Some(v), 4).map(|_| ())
    }

    /// A 64-bit write as two 32-bit TLPs, upper half first (a doorbell fires on the low half).
    pub fn mem_write64(&mut self, addr: u64, v: u64) -> Result<()> {
        self.mem_write32(addr + 4, (v >> 32) as u32)?;
        self.mem_write32(addr, v as u32)
    }

    /// Writes dwords at a dword-aligned bus address. Custom firmware: one streamed F0 request
    /// plus one bulk OUT per MiB, all in one round trip; stock: one MemWr TLP per dword.
    /// In a PCI-cacheable range, dwords equal to their last written value are not re-sent.
    pub fn mem_write(&mut self, addr: u64, data: &[u8]) -> Result<()> {
        if !addr.is_multiple_of(4) || !data.len().is_multiple_of(4) {
            return Err(UsbError::Invalid(format!(
                "memory write of {} bytes at {addr:#x}: TLP writes are whole dwords",
                data.len()
            )));
        }
        if data.is_empty() {
            return Ok(());
        }
        // Split into runs of dwords that must be sent (cache misses).
        let mut runs: Vec<(u64, Vec<u8>)> = Vec::new();
        let mut words = le_reader::Reader::new(data);
        while let Ok(v) = words.u32("dword") {
            let a = addr + words.offset() - 4;
            if self.cached(a, v) {
                continue;
            }
            let w = v.to_le_bytes();
            match runs.last_mut() {
                Some((s, d)) if *s + d.len() as u64 == a => d.extend_from_slice(&w),
                _ => runs.push((a, w.to_vec())),
            }
        }
        // A gap of cached dwords costs more transfers than resending it: merge runs whose gap
        // is short (resending equal values is harmless).
        let mut merged: Vec<(u64, Vec<u8>)> = Vec::new();
        for (a, d) in runs {
            match merged.last_mut() {
                Some((s, md)) if a - (*s + md.len() as u64) <= 64 => {
                    let from = (*s + md.len() as u64 - addr) as usize;
                    let to = (a - addr) as usize;
                    md.extend_from_slice(&data[from..to]);
                    md.extend_from_slice(&d);
                }
                _ => merged.push((a, d)),
            }
        }
        match self.firmware() {
            Firmware::Custom => {
                let mut b = Batch::default();
                let mut first_done = false;
                for (a, d) in merged {
                    for (k, chunk) in d.chunks(MAX_STREAM).enumerate() {
                        let ca = a + (k * MAX_STREAM) as u64;
                        let from = b.transfers.len();
                        if let (4, Ok(v)) =
                            (chunk.len(), le_reader::Reader::new(chunk).u32("dword"))
                        {
                            self.push_tlp_request(
                                &mut b,
                                tlp::MEM_WR,
                                0xF,
                                TlpMode::Single,
                                ca,
                                v,
                            )?;
                        } else {
                            self.push_tlp_request(
                                &mut b,
                                tlp::MEM_WR,
                                0xF,
                                TlpMode::StreamWrite,
                                ca,
                                (chunk.len() / 4) as u32,
                            )?;
                            self.push_bulk_out(&mut b, chunk.to_vec());
                            let off = ca - addr;
                            b.chunk(
                                from,
                                format!(
                                    "memory write to bus {ca:#x}: bytes {off}..{} of {}",
                                    off + chunk.len() as u64,
                                    data.len()
                                ),
                                first_done,
                            );
                            first_done = true;
                        }
                        self.stats.tlps += (chunk.len() / 4) as u64;
                    }
                }
                self.run(b).map(|_| ())
            }
            Firmware::Stock => {
                for (a, d) in merged {
                    let mut words = le_reader::Reader::new(&d);
                    while let Ok(v) = words.u32("dword") {
                        self.pcie_request(tlp::MEM_WR, a + words.offset() - 4, Some(v), 4)?;
                    }
                }
                Ok(())
            }
        }
    }

    /// Reads `len` bytes (whole dwords) at a dword-aligned bus address. Custom firmware: one
    /// streamed F0 read plus bulk IN per MiB, one round trip; stock: one MemRd per dword.
    pub fn mem_read(&mut self, addr: u64, len: usize) -> Result<Vec<u8>> {
        if !addr.is_multiple_of(4) || !len.is_multiple_of(4) {
            return Err(UsbError::Invalid(format!(
                "memory read of {len} bytes at {addr:#x}: TLP reads are whole dwords"
            )));
        }
        match self.firmware() {
            Firmware::Custom => {
                if len == 4 {
                    return Ok(self.mem_read32(addr)?.to_le_bytes().to_vec());
                }
                let mut b = Batch::default();
                let mut off = 0;
                while off < len {
                    let n = (len - off).min(MAX_STREAM);
                    self.push_tlp_request(
                        &mut b,
                        tlp::MEM_RD,
                        0xF,
                        TlpMode::StreamRead,
                        addr + off as u64,
                        (n / 4) as u32,
                    )?;
                    self.push_bulk_in(&mut b, n);
                    b.chunk(
                        b.transfers.len() - 2,
                        format!(
                            "memory read from bus {:#x}: bytes {off}..{} of {len}",
                            addr + off as u64,
                            off + n
                        ),
                        off > 0,
                    );
                    self.stats.tlps += (n / 4) as u64;
                    off += n;
                }
                Ok(self.run(b)?.concat())
            }
            Firmware::Stock => {
                let mut out = Vec::with_capacity(len);
                for i in 0..len / 4 {
                    out.extend_from_slice(&self.mem_read32(addr + 4 * i as u64)?.to_le_bytes());
                }
                Ok(out)
            }
        }
    }
}

/// Internal outcome of one TLP attempt.
enum TlpErr {
    Transient(u8),
    Status(CplStatus),
    Usb(UsbError),
}

impl From<UsbError> for TlpErr {
    fn from(e: UsbError) -> Self {
        TlpErr::Usb(e)
    }
}
