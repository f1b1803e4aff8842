//! The emulated register file: registers keyed by dword address, banked per shader engine for
//! writes made while GRBM_GFX_INDEX selects one SE (SQTT buffers are per SE).
//!
//! On multi-XCC parts (gfx950) every XCC has its own GRBM_GFX_INDEX and its own SEs: the CP
//! says which XCC is executing ([`RegFile::set_xcc`]), a write selecting local SE `s` lands in
//! global SE `xcc * se_per_xcc + s`, and a broadcast write reaches the SEs of that XCC only
//! (the other XCCs execute the same ring words themselves). SE numbers in [`RegFile::read_se`]
//! and [`RegFile::write_se`] are global.

use std::collections::HashMap;

use runtime::pm4::{SH_REG_BASE, SH_REG_END};

pub struct RegFile {
    /// SH window (COMPUTE_*), not banked, flat for speed.
    sh: Vec<u32>,
    /// Other registers: (address, global se) → value.
    other: HashMap<(u32, u8), u32>,
    grbm_gfx_index: u32,
    num_se: u32,
    se_per_xcc: u32,
    /// The XCC whose command processor is executing.
    xcc: u32,
    /// GRBM_GFX_INDEX state of each XCC.
    sel: Vec<Select>,
}

#[derive(Debug, Clone, Copy)]
struct Select {
    raw: u32,
    se_index: u32,
    broadcast: bool,
}

/// GRBM_GFX_INDEX SE field and broadcast bit (same positions on gfx9, 11 and 12).
const SE_SHIFT: u32 = 16;
const SE_MASK: u32 = 0xFF;
const SE_BROADCAST: u32 = 1 << 31;

impl RegFile {
    /// A single-XCC register file with `num_se` shader engines.
    pub fn new(grbm_gfx_index: u32, num_se: u32) -> Self {
        Self::with_xccs(grbm_gfx_index, num_se, 1)
    }

    /// `num_se` shader engines in total, split evenly over `num_xcc` XCCs.
    pub fn with_xccs(grbm_gfx_index: u32, num_se: u32, num_xcc: u32) -> Self {
        let num_se = num_se.max(1);
        let num_xcc = num_xcc.clamp(1, num_se);
        RegFile {
            sh: vec![0; (SH_REG_END - SH_REG_BASE) as usize],
            other: HashMap::new(),
            grbm_gfx_index,
            num_se,
            se_per_xcc: num_se / num_xcc,
            xcc: 0,
            sel: vec![
                Select {
                    raw: 0,
                    se_index: 0,
                    broadcast: true,
                };
                num_xcc as usize
            ],
        }
    }

    /// Shader engines over all XCCs.
    pub fn num_se(&self) -> u32 {
        self.num_se
    }

    pub fn se_per_xcc(&self) -> u32 {
        self.se_per_xcc
    }

    /// The XCC whose CP executes the following accesses (out-of-range ids use XCC 0).
    pub fn set_xcc(&mut self, xcc: u32) {
        self.xcc = if (xcc as usize) < self.sel.len() {
            xcc
        } else {
            0
        };
    }

    /// The XCC set by [`RegFile::set_xcc`].
    pub fn xcc(&self) -> u32 {
        self.xcc
    }

    fn select(&self) -> Select {
        self.sel.get(self.xcc as usize).copied().unwrap_or(Select {
            raw: 0,
            se_index: 0,
            broadcast: true,
        })
    }

    /// The global SEs a write made now reaches (all SEs of the current XCC when broadcasting).
    pub fn selected_ses(&self) -> std::ops::Range<u32> {
        let s = self.select();
        let first = self.xcc * self.se_per_xcc;
        if s.broadcast {
            first..first + self.se_per_xcc
        } else {
            let se = (first + s.se_index).min(self.num_se);
            se..se + 1
        }
    }

    /// Whether `addr` is one of the per-SE banked registers (the SQ thread-trace block).
    fn banked(&self, addr: u32) -> bool {
        !(SH_REG_BASE..SH_REG_END).contains(&addr) && addr != self.grbm_gfx_index
    }

    pub fn write(&mut self, addr: u32, v: u32) {
        if let Some(slot) = addr
            .checked_sub(SH_REG_BASE)
            .and_then(|i| self.sh.get_mut(i as usize))
        {
            *slot = v;
            return;
        }
        if addr == self.grbm_gfx_index {
            self.grbm_gfx_index_write(v);
            return;
        }
        for se in self.selected_ses() {
            self.other.insert((addr, se as u8), v);
        }
    }

    fn grbm_gfx_index_write(&mut self, v: u32) {
        if let Some(s) = self.sel.get_mut(self.xcc as usize) {
            *s = Select {
                raw: v,
                se_index: (v >> SE_SHIFT) & SE_MASK,
                broadcast: v & SE_BROADCAST != 0,
            };
        }
    }

    /// Reads with the current XCC's SE selection.
    pub fn read(&self, addr: u32) -> u32 {
        if let Some(v) = addr
            .checked_sub(SH_REG_BASE)
            .and_then(|i| self.sh.get(i as usize))
        {
            return *v;
        }
        let s = self.select();
        if addr == self.grbm_gfx_index {
            return s.raw;
        }
        let local = if s.broadcast { 0 } else { s.se_index };
        self.read_se(addr, self.xcc * self.se_per_xcc + local)
    }

    /// Reads SE `se` (global) of a banked register.
    pub fn read_se(&self, addr: u32, se: u32) -> u32 {
        if !self.banked(addr) {
            return self.read(addr);
        }
        self.other.get(&(addr, se as u8)).copied().unwrap_or(0)
    }

    /// Writes SE `se` (global) of a banked register.
    pub fn write_se(&mut self, addr: u32, se: u32, v: u32) {
        if self.banked(addr) {
            self.other.insert((addr, se as u8), v);
        } else {
            self.write(addr, v);
        }
    }
}
