//! A small PCIe endpoint for the usb crate's tests: a config space with memory BARs that size
//! like real ones (writes masked by the BAR size), a resizable-BAR capability at 0x100, and
//! memory behind BAR0/BAR2/BAR5 at whatever addresses enumeration assigned.
#![allow(dead_code)]

use usb::device::{BridgeCore, CoreTransport, PcieEndpoint};
use usb::{Asm24, CplStatus, Firmware};

pub struct BarSpec {
    pub size: u64,
    pub is64: bool,
    pub pref: bool,
}

pub struct SmallEndpoint {
    pub cfg: Vec<u8>,
    pub bars: Vec<(u8, BarSpec)>,
    pub mem: Vec<Vec<u8>>,
    pub cfg_writes: Vec<(u16, u32, u8)>,
}

impl SmallEndpoint {
    /// Like tinygrad's mock: BAR0 64-bit prefetchable 512 MiB (backed by 1 MiB here, reads
    /// beyond it are zero), BAR2 32-bit 8 KiB, BAR5 32-bit 2 MiB.
    pub fn new() -> Self {
        let bars = vec![
            (
                0u8,
                BarSpec {
                    size: 512 << 20,
                    is64: true,
                    pref: true,
                },
            ),
            (
                2,
                BarSpec {
                    size: 8 << 10,
                    is64: false,
                    pref: false,
                },
            ),
            (
                5,
                BarSpec {
                    size: 2 << 20,
                    is64: false,
                    pref: false,
                },
            ),
        ];
        let mut cfg = vec![0u8; 4096];
        cfg[0..4].copy_from_slice(&0x744c_1002u32.to_le_bytes());
        for (i, b) in &bars {
            let r = 0x10 + 4 * usize::from(*i);
            let flags = (if b.is64 { 4u32 } else { 0 }) | (if b.pref { 8 } else { 0 });
            cfg[r..r + 4].copy_from_slice(&flags.to_le_bytes());
        }
        // REBAR capability: id 0x15, next 0; sizes 1 MiB..512 MiB (bits 4..13); control: BAR0.
        cfg[0x100..0x104].copy_from_slice(&0x0001_0015u32.to_le_bytes());
        cfg[0x104..0x108].copy_from_slice(&(0x3FFu32 << 4).to_le_bytes());
        cfg[0x108..0x10C].copy_from_slice(&0u32.to_le_bytes());
        SmallEndpoint {
            cfg,
            mem: bars
                .iter()
                .map(|(_, b)| vec![0u8; b.size.min(1 << 20) as usize])
                .collect(),
            bars,
            cfg_writes: Vec::new(),
        }
    }

    fn dword(&self, reg: u16) -> u32 {
        let r = usize::from(reg);
        u32::from_le_bytes([
            self.cfg[r],
            self.cfg[r + 1],
            self.cfg[r + 2],
            self.cfg[r + 3],
        ])
    }

    pub fn bar_addr(&self, i: u8) -> u64 {
        let lo = u64::from(self.dword(0x10 + 4 * u16::from(i)) & !0xF);
        let spec = &self.bars.iter().find(|(j, _)| *j == i).expect("bar").1;
        if spec.is64 {
            lo | u64::from(self.dword(0x14 + 4 * u16::from(i))) << 32
        } else {
            lo
        }
    }

    fn decode(&self, addr: u64, len: usize) -> Option<(usize, usize)> {
        if self.dword(4) & 2 == 0 {
            return None;
        }
        for (k, (i, b)) in self.bars.iter().enumerate() {
            let base = self.bar_addr(*i);
            if base != 0 && addr >= base && addr + len as u64 <= base + b.size {
                return Some((k, (addr - base) as usize));
            }
        }
        None
    }
}

impl PcieEndpoint for SmallEndpoint {
    fn cfg_read(&mut self, reg: u16) -> u32 {
        self.dword(reg)
    }
    fn cfg_write(&mut self, reg: u16, value: u32, be: u8) {
        self.cfg_writes.push((reg, value, be));
        let mut v = self.dword(reg);
        for i in 0..4 {
            if be & (1 << i) != 0 {
                v = (v & !(0xFF << (8 * i))) | (value & (0xFF << (8 * i)));
            }
        }
        // BAR registers keep their flag bits and drop address bits below the size.
        for (i, b) in &self.bars {
            let lo = 0x10 + 4 * u16::from(*i);
            let flags = (if b.is64 { 4u32 } else { 0 }) | (if b.pref { 8 } else { 0 });
            if reg == lo {
                v = (v & !((b.size as u32).wrapping_sub(1)) & !0xF) | flags;
            } else if b.is64 && reg == lo + 4 {
                v &= !(((b.size - 1) >> 32) as u32);
            }
        }
        // Unimplemented BARs are hard-wired to zero.
        let implemented = |r: u16| {
            self.bars.iter().any(|(i, b)| {
                let lo = 0x10 + 4 * u16::from(*i);
                r == lo || (b.is64 && r == lo + 4)
            })
        };
        if (0x10..0x28).contains(&reg) && !implemented(reg) {
            v = 0;
        }
        let r = usize::from(reg);
        self.cfg[r..r + 4].copy_from_slice(&v.to_le_bytes());
    }
    fn mem_read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), CplStatus> {
        let (k, off) = self
            .decode(addr, out.len())
            .ok_or(CplStatus::UnsupportedRequest)?;
        let m = &self.mem[k];
        for (i, o) in out.iter_mut().enumerate() {
            *o = m.get(off + i).copied().unwrap_or(0);
        }
        Ok(())
    }
    fn mem_write(&mut self, addr: u64, data: &[u8], be: u8) -> Result<(), CplStatus> {
        let (k, off) = self
            .decode(addr, data.len())
            .ok_or(CplStatus::UnsupportedRequest)?;
        let m = &mut self.mem[k];
        for (i, &d) in data.iter().enumerate() {
            if i < 4 && be & (1 << i) == 0 {
                continue;
            }
            if let Some(x) = m.get_mut(off + i) {
                *x = d;
            }
        }
        Ok(())
    }
}

pub type Fake = CoreTransport<SmallEndpoint>;

/// A controller over an in-memory bridge of the given firmware, plus a handle on the device.
pub fn bridge(fw: Firmware) -> (Asm24, Fake) {
    bridge_with(fw, SmallEndpoint::new())
}

pub fn bridge_with(fw: Firmware, ep: SmallEndpoint) -> (Asm24, Fake) {
    let t = CoreTransport::new(BridgeCore::new(fw, ep));
    (Asm24::new(Box::new(t.clone())).expect("bridge comes up"), t)
}

pub mod replies;
