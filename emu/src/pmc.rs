//! The emulated performance counters: what the shader engines count, and the counter registers
//! the command processor exposes (selects, CP_PERFMON_CNTL, banked reads through
//! GRBM_GFX_INDEX). Select values and register names come from [`runtime::pmc`] and
//! [`runtime::regs`]; nothing here defines a layout.
//!
//! Counted exactly from execution (per SE / SA / WGP; gfx9: per SE / CU, read per SE):
//! SQ_WAVES, SQ_INSTS_VALU, SQ_INSTS_SALU,
//! SQ_INSTS_SMEM, SQ_INSTS_LDS, SQ_INSTS_FLAT (instructions issued, whatever the EXEC mask,
//! classed as the hardware does: s_waitcnt/s_nop/s_delay_alu/branches/messages are not SALU, a
//! VOPD pair is one VALU), SQC_LDS_IDX_ACTIVE and SQC_LDS_BANK_CONFLICT (gfx9: SQ_LDS_*) from
//! the LDS addresses ([`crate::lds_banks`]).
//! From the cycle model (so only as good as it is): SQ_BUSY_CYCLES (cycles with a wave on the
//! WGP), SQ_WAVE_CYCLES (sum of wave lifetimes), GRBM_GUI_ACTIVE (dispatch cycles) and
//! GRBM_COUNT (cycles since the counters were reset).
//! Not modelled, read as zero: GL2C_HIT/MISS and TCC_HIT/MISS (there is no cache model).

use std::collections::HashMap;

use runtime::pmc::{self, Block};
use runtime::regs::{self, IpRegs};

use crate::arch::EmuArch;
use crate::cycles::{Class, CYCLES_PER_TICK};
use crate::lds_banks::LdsCycles;

/// One wave's counts, made at issue by the interpreter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WaveCounts {
    pub valu: u64,
    pub salu: u64,
    pub smem: u64,
    pub lds: u64,
    pub flat: u64,
    pub lds_idx_active: u64,
    pub lds_bank_conflict: u64,
}

impl WaveCounts {
    /// Adds another wave's counts.
    pub fn add(&mut self, b: &WaveCounts) {
        self.valu += b.valu;
        self.salu += b.salu;
        self.smem += b.smem;
        self.lds += b.lds;
        self.flat += b.flat;
        self.lds_idx_active += b.lds_idx_active;
        self.lds_bank_conflict += b.lds_bank_conflict;
    }

    /// One issued instruction of `class`.
    #[inline]
    pub fn issue(&mut self, class: Class) {
        match class {
            Class::Salu | Class::SaluSaveexec => self.salu += 1,
            Class::Valu
            | Class::ValuTrans
            | Class::Valu64Shift
            | Class::ValuMad64
            | Class::Valu64
            | Class::ValuCmpx
            // v_wmma_* issues as a VALU instruction (a VALU token on both generations).
            | Class::Wmma => self.valu += 1,
            Class::Smem => self.smem += 1,
            Class::Lds { .. } => self.lds += 1,
            Class::Vmem { flat: true, .. } => self.flat += 1,
            _ => {}
        }
    }

    /// The LDS cycles of one DS instruction.
    #[inline]
    pub fn lds_access(&mut self, c: LdsCycles) {
        self.lds_idx_active += c.active;
        self.lds_bank_conflict += c.conflict;
    }
}

/// Counts of one WGP (one SQ instance) over a dispatch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnitCounts {
    pub waves: u64,
    pub busy_cycles: u64,
    pub wave_cycles: u64,
    pub insts: WaveCounts,
}

impl UnitCounts {
    fn add(&mut self, o: &UnitCounts) {
        self.waves += o.waves;
        self.busy_cycles += o.busy_cycles;
        self.wave_cycles += o.wave_cycles;
        self.insts.add(&o.insts);
    }

    /// The value of counter `name`, if it is an SQ counter the emulator counts.
    fn get(&self, name: &str) -> u64 {
        let i = &self.insts;
        match name {
            "SQ_WAVES" => self.waves,
            "SQ_BUSY_CYCLES" => self.busy_cycles,
            "SQ_WAVE_CYCLES" => self.wave_cycles,
            "SQ_INSTS_VALU" => i.valu,
            "SQ_INSTS_SALU" => i.salu,
            "SQ_INSTS_SMEM" => i.smem,
            "SQ_INSTS_LDS" => i.lds,
            "SQ_INSTS_FLAT" => i.flat,
            "SQC_LDS_IDX_ACTIVE" | "SQ_LDS_IDX_ACTIVE" => i.lds_idx_active,
            "SQC_LDS_BANK_CONFLICT" | "SQ_LDS_BANK_CONFLICT" => i.lds_bank_conflict,
            _ => 0,
        }
    }
}

/// What one dispatch counted, per (global SE, SA, WGP).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DispatchCounts {
    pub units: HashMap<(u32, u32, u32), UnitCounts>,
}

/// Union length of `[start, end)` intervals (cycles with at least one wave resident).
pub fn busy_cycles(iv: &mut [(u64, u64)]) -> u64 {
    iv.sort_unstable();
    let mut total = 0;
    let mut cur: Option<(u64, u64)> = None;
    for &(s, e) in iv.iter() {
        match &mut cur {
            Some((_, ce)) if s <= *ce => *ce = (*ce).max(e),
            _ => {
                if let Some((cs, ce)) = cur {
                    total += ce - cs;
                }
                cur = Some((s, e));
            }
        }
    }
    if let Some((cs, ce)) = cur {
        total += ce - cs;
    }
    total
}

#[derive(Debug, Clone, Copy)]
struct Field {
    lo: u32,
    mask: u32,
}

impl Field {
    fn of(r: &regs::Reg, name: &str) -> Option<Field> {
        let f = r.def.field(name)?;
        Some(Field {
            lo: u32::from(f.lo),
            mask: f.value_mask(),
        })
    }
    fn get(self, v: u32) -> u32 {
        (v >> self.lo) & self.mask
    }
}

/// A counter register: which block and slot, and whether it is the high half.
#[derive(Debug, Clone, Copy)]
struct CounterReg {
    block: Block,
    /// Select register address.
    select: u32,
    hi: bool,
}

/// The counter registers of the emulated GC and the counts since the last reset.
pub struct PerfCounters {
    gfx_major: u32,
    se_per_xcc: u32,
    perfmon_cntl: u32,
    perfmon_state: Option<Field>,
    grbm_gfx_index: u32,
    instance: Option<Field>,
    sa: Option<Field>,
    se: Option<Field>,
    /// Read address → counter register.
    reads: HashMap<u32, CounterReg>,
    /// Per XCC: each XCC's CP starts, stops and resets its own SEs' counters.
    counting: Vec<bool>,
    units: HashMap<(u32, u32, u32), UnitCounts>,
    gui_active: u64,
    /// GPU clock (100 MHz ticks) at the last reset.
    reset_clock: u64,
    stopped_clock: Option<u64>,
}

impl PerfCounters {
    pub fn new(arch: EmuArch, num_se: u32) -> PerfCounters {
        let ver = arch.gc_version();
        let g = ver.0;
        let gc = IpRegs::new(
            regs::gc_table(ver).unwrap_or(&regs::GC_11_0_0),
            arch.bases("GC"),
        );
        let cntl = gc.opt(if g >= 12 {
            "CP_PERFMON_CNTL_1"
        } else {
            "CP_PERFMON_CNTL"
        });
        let idx = gc.opt("GRBM_GFX_INDEX");
        let f = |n: &str| idx.as_ref().and_then(|r| Field::of(r, n));
        let mut reads = HashMap::new();
        for block in [Block::Sq, Block::Grbm, Block::Gl2c, Block::Tcc] {
            for slot in 0..16 {
                let (sel, lo, hi) = pmc::regs_of(g, block, slot);
                let (Some(sel), Some(lo)) = (gc.opt(&sel), gc.opt(&lo)) else {
                    continue;
                };
                reads.insert(
                    lo.addr,
                    CounterReg {
                        block,
                        select: sel.addr,
                        hi: false,
                    },
                );
                if let Some(hi) = gc.opt(&hi) {
                    reads.insert(
                        hi.addr,
                        CounterReg {
                            block,
                            select: sel.addr,
                            hi: true,
                        },
                    );
                }
            }
        }
        let num_xcc = arch.num_xcc().max(1);
        PerfCounters {
            gfx_major: g,
            se_per_xcc: (num_se / num_xcc).max(1),
            perfmon_cntl: cntl.map(|r| r.addr).unwrap_or(u32::MAX),
            perfmon_state: cntl.and_then(|r| Field::of(&r, "perfmon_state")),
            grbm_gfx_index: idx.map(|r| r.addr).unwrap_or(u32::MAX),
            instance: f("instance_index"),
            sa: f("sa_index").or_else(|| f("sh_index")),
            se: f("se_index"),
            reads,
            counting: vec![false; num_xcc as usize],
            units: HashMap::new(),
            gui_active: 0,
            reset_clock: 0,
            stopped_clock: None,
        }
    }

    /// A register write the CP of XCC `xcc` executed (CP_PERFMON_CNTL: 0 stops and resets, 1
    /// counts); it acts on that XCC's SEs only.
    pub fn reg_write(&mut self, addr: u32, v: u32, xcc: u32, clock: u64) {
        if addr != self.perfmon_cntl {
            return;
        }
        let per = self.se_per_xcc;
        let Some(counting) = self.counting.get_mut(xcc as usize) else {
            return;
        };
        match self.perfmon_state.map(|f| f.get(v)) {
            Some(0) => {
                *counting = false;
                self.units.retain(|k, _| k.0 / per != xcc);
                self.gui_active = 0;
                self.reset_clock = clock;
                self.stopped_clock = Some(clock);
            }
            Some(1) if !*counting => {
                *counting = true;
                self.stopped_clock = None;
            }
            // 2 = stop (keep the values).
            Some(2) => {
                *counting = false;
                self.stopped_clock = Some(clock);
            }
            _ => {}
        }
    }

    /// What a dispatch of XCC `xcc` counted and how long it ran (100 MHz ticks).
    pub fn dispatch(&mut self, c: Option<DispatchCounts>, xcc: u32, ticks: u64) {
        if !self.counting.get(xcc as usize).copied().unwrap_or(false) {
            return;
        }
        self.gui_active += ticks * CYCLES_PER_TICK;
        for (k, u) in c.into_iter().flat_map(|c| c.units) {
            self.units.entry(k).or_default().add(&u);
        }
    }

    /// A COPY_DATA from a counter register: its value for the instance GRBM_GFX_INDEX selects
    /// (`index` = its value, `xcc` = the executing XCC), or None for other registers.
    pub fn read(&self, addr: u32, index: u32, xcc: u32, select: u32, clock: u64) -> Option<u32> {
        let r = self.reads.get(&addr)?;
        let sel = select & 0x3FF;
        let name = pmc::name_of(self.gfx_major, r.block, sel).unwrap_or("");
        let get = |f: Option<Field>| f.map(|f| f.get(index)).unwrap_or(0);
        let v: u64 = match r.block {
            Block::Sq => {
                let se = xcc * self.se_per_xcc + get(self.se);
                if self.gfx_major == 9 {
                    // One SQ per SE: the sum over its arrays and CUs.
                    self.units
                        .iter()
                        .filter(|(k, _)| k.0 == se)
                        .map(|(_, u)| u.get(name))
                        .sum()
                } else {
                    let (sa, wgp) = (get(self.sa), get(self.instance) >> 2);
                    self.units
                        .get(&(se, sa, wgp))
                        .map(|u| u.get(name))
                        .unwrap_or(0)
                }
            }
            Block::Grbm => match name {
                "GRBM_GUI_ACTIVE" => self.gui_active,
                "GRBM_COUNT" => {
                    let end = self.stopped_clock.unwrap_or(clock);
                    end.saturating_sub(self.reset_clock) * CYCLES_PER_TICK
                }
                _ => 0,
            },
            // No cache model: L2 hits and misses are not counted.
            Block::Gl2c | Block::Tcc => 0,
        };
        Some(if r.hi { (v >> 32) as u32 } else { v as u32 })
    }

    /// The GRBM_GFX_INDEX address (the CP passes its current value to [`Self::read`]).
    pub fn grbm_gfx_index(&self) -> u32 {
        self.grbm_gfx_index
    }

    /// The select register feeding counter register `addr`.
    pub fn select_of(&self, addr: u32) -> Option<u32> {
        self.reads.get(&addr).map(|r| r.select)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_is_the_union_of_wave_lifetimes() {
        assert_eq!(busy_cycles(&mut [(0, 10), (5, 20), (30, 40)]), 30);
        assert_eq!(busy_cycles(&mut []), 0);
    }

    #[test]
    fn classes_as_the_hardware_counts_them() {
        let mut w = WaveCounts::default();
        for c in [
            Class::Salu,
            Class::SaluSaveexec,
            Class::Valu,
            Class::ValuCmpx,
            Class::Immediate,
            Class::Branch,
            Class::Message,
            Class::Silent,
        ] {
            w.issue(c);
        }
        assert_eq!((w.salu, w.valu), (2, 2));
    }
}
