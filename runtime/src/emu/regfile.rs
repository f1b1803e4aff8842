//! The emulated register file: registers keyed by dword address, banked per shader engine for
//! writes made while GRBM_GFX_INDEX selects one SE (SQTT buffers are per SE).

use std::collections::HashMap;

use crate::pm4::{SH_REG_BASE, SH_REG_END};

pub struct RegFile {
    /// SH window (COMPUTE_*), not banked, flat for speed.
    sh: Vec<u32>,
    /// Other registers: (address, se) → value; se = u8::MAX for unbanked.
    other: HashMap<(u32, u8), u32>,
    grbm_gfx_index: u32,
    num_se: u32,
    se_index: u32,
    broadcast: bool,
}

/// GRBM_GFX_INDEX SE field and broadcast bit (same positions on gfx9, 11 and 12).
const SE_SHIFT: u32 = 16;
const SE_MASK: u32 = 0xFF;
const SE_BROADCAST: u32 = 1 << 31;

impl RegFile {
    pub fn new(grbm_gfx_index: u32, num_se: u32) -> Self {
        RegFile {
            sh: vec![0; (SH_REG_END - SH_REG_BASE) as usize],
            other: HashMap::new(),
            grbm_gfx_index,
            num_se: num_se.max(1),
            se_index: 0,
            broadcast: true,
        }
    }

    pub fn num_se(&self) -> u32 {
        self.num_se
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
        if self.broadcast {
            for se in 0..self.num_se {
                self.other.insert((addr, se as u8), v);
            }
        } else {
            self.other.insert((addr, self.se_index as u8), v);
        }
    }

    fn grbm_gfx_index_write(&mut self, v: u32) {
        self.other.insert((self.grbm_gfx_index, u8::MAX), v);
        self.broadcast = v & SE_BROADCAST != 0;
        self.se_index = (v >> SE_SHIFT) & SE_MASK;
    }

    /// Reads with the current SE selection.
    pub fn read(&self, addr: u32) -> u32 {
        if let Some(v) = addr
            .checked_sub(SH_REG_BASE)
            .and_then(|i| self.sh.get(i as usize))
        {
            return *v;
        }
        if addr == self.grbm_gfx_index {
            return self.other.get(&(addr, u8::MAX)).copied().unwrap_or(0);
        }
        let se = if self.broadcast { 0 } else { self.se_index };
        self.read_se(addr, se)
    }

    pub fn read_se(&self, addr: u32, se: u32) -> u32 {
        if !self.banked(addr) {
            return self.read(addr);
        }
        self.other.get(&(addr, se as u8)).copied().unwrap_or(0)
    }

    pub fn write_se(&mut self, addr: u32, se: u32, v: u32) {
        if self.banked(addr) {
            self.other.insert((addr, se as u8), v);
        } else {
            self.write(addr, v);
        }
    }
}
