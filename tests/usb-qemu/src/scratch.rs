//! A small PCIe endpoint for the protocol-level test: what the bridge needs from "a GPU" and no
//! more. Config space with two memory BARs that size like real ones (BAR0: 64-bit prefetchable
//! "VRAM", BAR5: 32-bit registers), and in BAR5 a copy engine that moves bytes between bus
//! addresses — its own VRAM and the bridge's SRAM/system windows — the way the GPU's SDMA does
//! for tinygrad's USB copy paths, optionally writing the completion-queue trigger (bus
//! 0x82200C) afterwards so an armed SRAM→host read starts.

use std::sync::{Arc, Mutex};

use usb::device::{PcieEndpoint, Windows};
use usb::CplStatus;

/// PCI ids the endpoint reports (AMD Navi31, as the real eGPU would).
pub const VENDOR: u16 = 0x1002;
pub const DEVICE: u16 = 0x744C;

/// BAR sizes: VRAM 256 MiB (backed by the first [`VRAM_BACKING`] bytes; reads beyond are zero,
/// writes beyond are dropped), registers 512 KiB.
pub const VRAM_SIZE: u64 = 256 << 20;
/// (64 MiB so the copy bench can stream 64 MiB each way.)
pub const VRAM_BACKING: usize = 64 << 20;
pub const REGS_SIZE: u64 = 512 << 10;

/// Copy engine registers (BAR5 offsets, 32-bit).
pub mod regs {
    pub const SRC_LO: u64 = 0x00;
    pub const SRC_HI: u64 = 0x04;
    pub const DST_LO: u64 = 0x08;
    pub const DST_HI: u64 = 0x0C;
    pub const LEN: u64 = 0x10;
    /// Bit 0: start the copy. Bit 1: afterwards write 0 to the bridge's trigger at 0x82200C.
    pub const GO: u64 = 0x14;
    pub const GO_START: u32 = 1;
    pub const GO_TRIGGER: u32 = 2;
    /// Copies done so far.
    pub const DONE: u64 = 0x18;
    /// 1 after a copy whose source or destination no BAR or window backs.
    pub const FAULT: u64 = 0x1C;
}

const BAR_CFG: [(u16, u64, u32); 2] = [
    // (config offset, size, flag bits)
    (0x10, VRAM_SIZE, 0x4 | 0x8), // 64-bit, prefetchable
    (0x24, REGS_SIZE, 0),         // BAR5, 32-bit
];

pub struct ScratchEndpoint {
    cfg: Vec<u8>,
    vram: Vec<u8>,
    regs: [u32; 8],
    windows: Arc<Mutex<Windows>>,
}

impl ScratchEndpoint {
    /// `windows`: the bridge's windows, shared with its `BridgeCore` (`with_windows`).
    pub fn new(windows: Arc<Mutex<Windows>>) -> Self {
        let mut cfg = vec![0u8; 4096];
        cfg[0..4].copy_from_slice(&(u32::from(VENDOR) | u32::from(DEVICE) << 16).to_le_bytes());
        for (reg, _, flags) in BAR_CFG {
            let r = usize::from(reg);
            cfg[r..r + 4].copy_from_slice(&flags.to_le_bytes());
        }
        ScratchEndpoint {
            cfg,
            vram: vec![0; VRAM_BACKING],
            regs: [0; 8],
            windows,
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

    fn bar_base(&self, k: usize) -> u64 {
        let (reg, _, flags) = BAR_CFG[k];
        let lo = u64::from(self.dword(reg) & !0xF);
        if flags & 4 != 0 {
            lo | u64::from(self.dword(reg + 4)) << 32
        } else {
            lo
        }
    }

    /// Which BAR (0 = VRAM, 1 = registers) and offset an access hits, if memory decoding is on.
    fn decode(&self, addr: u64, len: usize) -> Option<(usize, u64)> {
        if self.dword(4) & 2 == 0 {
            return None;
        }
        (0..BAR_CFG.len()).find_map(|k| {
            let base = self.bar_base(k);
            let size = BAR_CFG[k].1;
            (base != 0 && addr >= base && addr + len as u64 <= base + size)
                .then(|| (k, addr - base))
        })
    }

    fn vram_read(&self, off: u64, out: &mut [u8]) {
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.vram.get(off as usize + i).copied().unwrap_or(0);
        }
    }

    fn vram_write(&mut self, off: u64, data: &[u8], first_be: u8) {
        for (i, &d) in data.iter().enumerate() {
            if i < 4 && first_be & (1 << i) == 0 {
                continue;
            }
            if let Some(x) = self.vram.get_mut(off as usize + i) {
                *x = d;
            }
        }
    }

    /// Bus-master read: own VRAM or a bridge window.
    fn dma_read(&mut self, addr: u64, out: &mut [u8]) -> bool {
        if let Some((0, off)) = self.decode(addr, out.len()) {
            self.vram_read(off, out);
            return true;
        }
        self.windows
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .bus_read(addr, out)
    }

    fn dma_write(&mut self, addr: u64, data: &[u8]) -> bool {
        if let Some((0, off)) = self.decode(addr, data.len()) {
            self.vram_write(off, data, 0xF);
            return true;
        }
        self.windows
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .bus_write(addr, data)
    }

    fn reg(&self, off: u64) -> u32 {
        self.regs.get((off / 4) as usize).copied().unwrap_or(0)
    }

    fn run_copy(&mut self, go: u32) {
        let src = u64::from(self.reg(regs::SRC_LO)) | u64::from(self.reg(regs::SRC_HI)) << 32;
        let dst = u64::from(self.reg(regs::DST_LO)) | u64::from(self.reg(regs::DST_HI)) << 32;
        let mut buf = vec![0u8; self.reg(regs::LEN) as usize];
        let ok = self.dma_read(src, &mut buf) && self.dma_write(dst, &buf);
        if !ok {
            self.regs[(regs::FAULT / 4) as usize] = 1;
            return;
        }
        self.regs[(regs::DONE / 4) as usize] += 1;
        if go & regs::GO_TRIGGER != 0 {
            self.dma_write(usb::controller::xdata::CQ_TRIGGER_BUS, &0u32.to_le_bytes());
        }
    }
}

impl PcieEndpoint for ScratchEndpoint {
    fn cfg_read(&mut self, reg: u16) -> u32 {
        self.dword(reg & 0xFFC)
    }

    fn cfg_write(&mut self, reg: u16, value: u32, byte_enable: u8) {
        let reg = reg & 0xFFC;
        let mut v = self.dword(reg);
        for i in 0..4 {
            if byte_enable & (1 << i) != 0 {
                v = (v & !(0xFF << (8 * i))) | (value & (0xFF << (8 * i)));
            }
        }
        // Unimplemented BARs are hard-wired to zero; implemented ones keep their flag bits and
        // drop address bits below their size.
        if (0x10..0x28).contains(&reg)
            && !BAR_CFG
                .iter()
                .any(|&(r, _, flags)| reg == r || (flags & 4 != 0 && reg == r + 4))
        {
            return;
        }
        for (r, size, flags) in BAR_CFG {
            if reg == r {
                v = (v & !((size as u32).wrapping_sub(1)) & !0xF) | flags;
            } else if flags & 4 != 0 && reg == r + 4 {
                v &= !(((size - 1) >> 32) as u32);
            }
        }
        let r = usize::from(reg);
        self.cfg[r..r + 4].copy_from_slice(&v.to_le_bytes());
    }

    fn mem_read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), CplStatus> {
        match self.decode(addr, out.len()) {
            Some((0, off)) => self.vram_read(off, out),
            Some((_, off)) => {
                for (i, chunk) in out.chunks_mut(4).enumerate() {
                    let v = self.reg(off + 4 * i as u64).to_le_bytes();
                    chunk.copy_from_slice(&v[..chunk.len()]);
                }
            }
            None => return Err(CplStatus::UnsupportedRequest),
        }
        Ok(())
    }

    fn mem_write(&mut self, addr: u64, data: &[u8], first_be: u8) -> Result<(), CplStatus> {
        match self.decode(addr, data.len()) {
            Some((0, off)) => self.vram_write(off, data, first_be),
            Some((_, off)) => {
                for (i, chunk) in data.chunks(4).enumerate() {
                    let mut b = [0u8; 4];
                    b[..chunk.len()].copy_from_slice(chunk);
                    let (o, v) = (off + 4 * i as u64, u32::from_le_bytes(b));
                    if o == regs::GO {
                        if v & regs::GO_START != 0 {
                            self.run_copy(v);
                        }
                    } else if let Some(r) = self.regs.get_mut((o / 4) as usize) {
                        *r = v;
                    }
                }
            }
            None => return Err(CplStatus::UnsupportedRequest),
        }
        Ok(())
    }
}
