//! Performance counters around each kernel launch, through the PM4 queue (so KFD, PCI and USB
//! all get them): select, reset/start, and per instance (as GRBM_GFX_INDEX banks it) read into
//! a buffer whose layout is tinygrad's `PMCSample` list ([`traces::model::PmcSample`]).
//!
//! Sequence (tinygrad `pmc_start` / `pmc_read`, amdgpu's `CP_PERFMON_CNTL` states): at device
//! open, `perfmon_state = 0` (stop and reset), the SQ control registers, one `*_SELECT` per
//! counter, `COMPUTE_PERFCOUNT_ENABLE`, then `perfmon_state = 1` (count). After each kernel:
//! `perfmon_state = 1, perfmon_sample_enable = 1` (latch), per counter and instance a
//! GRBM_GFX_INDEX write and a COPY_DATA (src_sel perf, dst_sel memory) of `_LO` (and `_HI`
//! where the register exists), then reset and restart, so each read holds one kernel.
//!
//! Banking: SQ on gfx11/gfx12 counts per SE / SA / WGP (GRBM_GFX_INDEX `instance_index` =
//! WGP << 2); on gfx9 per SE (of each XCC, read under PRED_EXEC); GRBM once; GL2C (gfx11/12) 32
//! and TCC (gfx9) 16 instances selected by `instance_index` with SE/SA broadcast.
//! On gfx11/gfx12 an SQ counter `i` is selected through `SQ_PERFCOUNTER{2i}_SELECT` (only the
//! even selects feed the 32-bit `SQ_PERFCOUNTER{i}_LO`).
//!
//! Register offsets and fields come from [`crate::regs`]; the counter select values are from
//! AMD's rocprofiler-compute `counter_defs.yaml` (as tabulated by tinygrad's `autogen/am/pmc.py`).

use traces::model::PmcSample;

use crate::error::{Error, Result};
use crate::pm4::{CopyData, Packet};
use crate::queue::ComputeCmds;

/// A counter block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Block {
    Sq,
    Grbm,
    Gl2c,
    Tcc,
}

impl Block {
    pub fn name(self) -> &'static str {
        match self {
            Block::Sq => "SQ",
            Block::Grbm => "GRBM",
            Block::Gl2c => "GL2C",
            Block::Tcc => "TCC",
        }
    }
    /// Counters the block has (SQ gfx11/12: 16 selects, of which the even 8 feed counters).
    fn slots(self, gfx_major: u32) -> usize {
        match self {
            Block::Sq if gfx_major >= 10 => 8,
            Block::Sq => 16,
            Block::Grbm => 2,
            Block::Gl2c | Block::Tcc => 4,
        }
    }
}

/// Which counter table: gfx11, gfx12, or gfx950 (CDNA4, GC 9.5).
fn table(gfx_major: u32) -> &'static [(&'static str, Block, u32)] {
    use Block::*;
    match gfx_major {
        11 => &[
            ("SQ_WAVES", Sq, 4),
            ("SQ_BUSY_CYCLES", Sq, 3),
            ("SQ_WAVE_CYCLES", Sq, 24),
            ("SQ_INSTS_VALU", Sq, 62),
            ("SQ_INSTS_SALU", Sq, 58),
            ("SQ_INSTS_SMEM", Sq, 59),
            ("SQ_INSTS_LDS", Sq, 57),
            ("SQ_INSTS_FLAT", Sq, 56),
            ("SQC_LDS_IDX_ACTIVE", Sq, 261),
            ("SQC_LDS_BANK_CONFLICT", Sq, 256),
            ("GRBM_COUNT", Grbm, 0),
            ("GRBM_GUI_ACTIVE", Grbm, 2),
            ("GL2C_HIT", Gl2c, 42),
            ("GL2C_MISS", Gl2c, 43),
        ],
        12 => &[
            ("SQ_WAVES", Sq, 4),
            ("SQ_BUSY_CYCLES", Sq, 3),
            ("SQ_WAVE_CYCLES", Sq, 24),
            ("SQ_INSTS_VALU", Sq, 50),
            ("SQ_INSTS_SALU", Sq, 46),
            ("SQ_INSTS_SMEM", Sq, 47),
            ("SQ_INSTS_LDS", Sq, 45),
            ("SQ_INSTS_FLAT", Sq, 44),
            ("SQC_LDS_IDX_ACTIVE", Sq, 293),
            ("SQC_LDS_BANK_CONFLICT", Sq, 288),
            ("GRBM_COUNT", Grbm, 0),
            ("GRBM_GUI_ACTIVE", Grbm, 2),
            ("GL2C_HIT", Gl2c, 41),
            ("GL2C_MISS", Gl2c, 42),
        ],
        9 => &[
            ("SQ_WAVES", Sq, 4),
            ("SQ_BUSY_CYCLES", Sq, 3),
            ("SQ_WAVE_CYCLES", Sq, 95),
            ("SQ_INSTS_VALU", Sq, 26),
            ("SQ_INSTS_SALU", Sq, 62),
            ("SQ_INSTS_SMEM", Sq, 63),
            ("SQ_INSTS_LDS", Sq, 67),
            ("SQ_INSTS_FLAT", Sq, 64),
            ("SQ_LDS_IDX_ACTIVE", Sq, 147),
            ("SQ_LDS_BANK_CONFLICT", Sq, 142),
            ("GRBM_COUNT", Grbm, 0),
            ("GRBM_GUI_ACTIVE", Grbm, 2),
            ("TCC_HIT", Tcc, 21),
            ("TCC_MISS", Tcc, 23),
        ],
        _ => &[],
    }
}

/// tinygrad's default set (SQ instruction counts and busy cycles, LDS activity and bank
/// conflicts, GPU cycles, L2 hits and misses).
pub fn default_counters(gfx_major: u32) -> Vec<String> {
    let (lds, l2) = if gfx_major == 9 {
        ("SQ", "TCC")
    } else {
        ("SQC", "GL2C")
    };
    [
        "SQ_BUSY_CYCLES".to_string(),
        "SQ_INSTS_VALU".into(),
        "SQ_INSTS_SALU".into(),
        format!("{lds}_LDS_IDX_ACTIVE"),
        format!("{lds}_LDS_BANK_CONFLICT"),
        "GRBM_GUI_ACTIVE".into(),
        format!("{l2}_HIT"),
        format!("{l2}_MISS"),
    ]
    .into()
}

/// The counter names known for a GC generation.
pub fn known_counters(gfx_major: u32) -> Vec<&'static str> {
    table(gfx_major).iter().map(|c| c.0).collect()
}

/// A counter by name: its block and select value.
pub fn lookup(gfx_major: u32, name: &str) -> Option<(Block, u32)> {
    table(gfx_major)
        .iter()
        .find(|c| c.0 == name)
        .map(|c| (c.1, c.2))
}

/// A counter by block and select value (the emulated device decodes its selects with this).
pub fn name_of(gfx_major: u32, block: Block, sel: u32) -> Option<&'static str> {
    table(gfx_major)
        .iter()
        .find(|c| c.1 == block && c.2 == sel)
        .map(|c| c.0)
}

/// Register names of counter `slot` of `block`: (select, lo, hi).
pub fn regs_of(gfx_major: u32, block: Block, slot: usize) -> (String, String, String) {
    let b = block.name();
    let sel = if block == Block::Sq && gfx_major >= 10 {
        2 * slot
    } else {
        slot
    };
    (
        format!("{b}_PERFCOUNTER{sel}_SELECT"),
        format!("{b}_PERFCOUNTER{slot}_LO"),
        format!("{b}_PERFCOUNTER{slot}_HI"),
    )
}

/// Instances of a block: (xcc, inst, se, sa, wgp) counts, as tinygrad lays them out.
#[derive(Debug, Clone, Copy)]
pub struct Topology {
    pub gfx_major: u32,
    pub num_xcc: u32,
    /// SEs per XCC.
    pub se: u32,
    pub sa_per_se: u32,
    pub wgp_per_sa: u32,
}

impl Topology {
    pub fn from_props(gfx_major: u32, p: &crate::platform::DeviceProps) -> Topology {
        let num_xcc = p.num_xcc.max(1);
        Topology {
            gfx_major,
            num_xcc,
            se: (p.num_se() / num_xcc).max(1),
            sa_per_se: p.simd_arrays_per_engine.max(1),
            wgp_per_sa: (p.cu_per_simd_array / 2).max(1),
        }
    }
    fn shape(&self, b: Block) -> (u32, u32, u32, u32) {
        match b {
            Block::Grbm => (1, 1, 1, 1),
            Block::Gl2c => (32, 1, 1, 1),
            Block::Tcc => (16, 1, 1, 1),
            Block::Sq if self.gfx_major == 9 => (1, self.se, 1, 1),
            Block::Sq => (1, self.se, self.sa_per_se, self.wgp_per_sa),
        }
    }
}

/// One programmed counter.
#[derive(Debug, Clone)]
pub struct Counter {
    pub name: String,
    pub block: Block,
    pub sel: u32,
    pub slot: usize,
}

/// The counters of a capture and their buffer layout.
#[derive(Debug, Clone)]
pub struct PmcPlan {
    pub topo: Topology,
    pub counters: Vec<Counter>,
    pub samples: Vec<PmcSample>,
    /// Bytes of one read.
    pub size: u64,
}

impl PmcPlan {
    /// Resolves counter names (`default` stands for [`default_counters`]); unknown names and
    /// more counters than a block has are errors.
    pub fn new(topo: Topology, names: &[String]) -> Result<PmcPlan> {
        let g = topo.gfx_major;
        let names: Vec<String> = names
            .iter()
            .flat_map(|n| {
                if n.trim() == "default" {
                    default_counters(g)
                } else {
                    vec![n.clone()]
                }
            })
            .collect();
        if table(g).is_empty() {
            return Err(Error::Unsupported(format!(
                "performance counters are not known for gfx{g}"
            )));
        }
        let mut counters: Vec<Counter> = Vec::new();
        let mut samples = Vec::new();
        let mut off = 0u64;
        for name in &names {
            let name = name.trim();
            let (block, sel) = lookup(g, name).ok_or_else(|| {
                Error::Unsupported(format!(
                    "unknown performance counter {name:?} for gfx{g}; known: {}",
                    known_counters(g).join(", ")
                ))
            })?;
            if counters.iter().any(|c| c.name == name) {
                return Err(Error::Unsupported(format!(
                    "performance counter {name} is asked for twice"
                )));
            }
            let slot = counters.iter().filter(|c| c.block == block).count();
            if slot >= block.slots(g) {
                return Err(Error::Unsupported(format!(
                    "too many {} counters: the block has {} on gfx{g} ({name} would be one more)",
                    block.name(),
                    block.slots(g)
                )));
            }
            let (inst, se, sa, wgp) = topo.shape(block);
            let size = u64::from(topo.num_xcc * inst * se * sa * wgp) * 8;
            samples.push(PmcSample {
                name: name.to_string(),
                block: block.name().to_string(),
                xcc: topo.num_xcc,
                inst,
                se,
                sa,
                wgp,
                off,
                size,
                regsample: format!("reg{}_PERFCOUNTER{slot}", block.name()),
            });
            off += size;
            counters.push(Counter {
                name: name.to_string(),
                block,
                sel,
                slot,
            });
        }
        Ok(PmcPlan {
            topo,
            counters,
            samples,
            size: off,
        })
    }
}

fn perfmon_cntl(c: &ComputeCmds) -> &'static str {
    if c.ctx.gfx_major >= 12 {
        "CP_PERFMON_CNTL_1"
    } else {
        "CP_PERFMON_CNTL"
    }
}

fn sa_field(c: &ComputeCmds) -> &'static str {
    if c.ctx.gfx_major == 9 {
        "sh"
    } else {
        "sa"
    }
}

/// GRBM_GFX_INDEX: each of instance / SE / SA either an index or broadcast.
fn set_grbm(
    c: &mut ComputeCmds,
    instance: Option<u32>,
    se: Option<u32>,
    sa: Option<u32>,
) -> Result<()> {
    let sa_n = sa_field(c);
    let (sa_i, sa_b) = (format!("{sa_n}_index"), format!("{sa_n}_broadcast_writes"));
    let mut f: Vec<(&str, u32)> = Vec::new();
    match instance {
        Some(i) => f.push(("instance_index", i)),
        None => f.push(("instance_broadcast_writes", 1)),
    }
    match se {
        Some(i) => f.push(("se_index", i)),
        None => f.push(("se_broadcast_writes", 1)),
    }
    match sa {
        Some(i) => f.push((sa_i.as_str(), i)),
        None => f.push((sa_b.as_str(), 1)),
    }
    c.wreg_fields("GRBM_GFX_INDEX", &f)
}

fn reset(c: &mut ComputeCmds, enable: bool) -> Result<()> {
    set_grbm(c, None, None, None)?;
    let r = perfmon_cntl(c);
    c.wreg_fields(r, &[("perfmon_state", 0)])?;
    if enable {
        c.wreg_fields(r, &[("perfmon_state", 1)])?;
    }
    Ok(())
}

/// Selects the counters and starts counting (once, at device open).
pub fn start(c: &mut ComputeCmds, plan: &PmcPlan) -> Result<()> {
    let g = c.ctx.gfx_major;
    reset(c, false)?;
    let mut ctrl = vec![("cs_en", 1), ("ps_en", 1), ("gs_en", 1), ("hs_en", 1)];
    if g == 9 {
        ctrl.push(("vmid_mask", 0xffff));
    }
    c.wreg_fields("SQ_PERFCOUNTER_CTRL", &ctrl)?;
    if g != 9 {
        c.wreg_fields(
            "SQ_PERFCOUNTER_CTRL2",
            &[("force_en", 1), ("vmid_en", 0xffff)],
        )?;
    }
    for k in &plan.counters {
        let (sel, _, _) = regs_of(g, k.block, k.slot);
        let mut f = vec![("perf_sel", k.sel)];
        if g == 9 && k.block == Block::Sq {
            f.extend([
                ("simd_mask", 0xf),
                ("sqc_bank_mask", 0xf),
                ("sqc_client_mask", 0xf),
            ]);
        }
        c.wreg_fields(&sel, &f).map_err(|e| {
            Error::Unsupported(format!(
                "{}: {} out of counter registers ({e})",
                k.name,
                k.block.name()
            ))
        })?;
    }
    if g == 9 {
        c.wreg_fields(
            "SQ_PERFCOUNTER_MASK",
            &[("sh0_mask", 0xffff), ("sh1_mask", 0xffff)],
        )?;
    }
    c.wreg_fields("COMPUTE_PERFCOUNT_ENABLE", &[("perfcount_enable", 1)])?;
    reset(c, true)
}

fn copy_perf(c: &mut ComputeCmds, reg: u32, dst: u64) {
    c.packet(Packet::CopyData(CopyData {
        src_sel: CopyData::SRC_REG_PERF,
        dst_sel: CopyData::DST_MEM,
        count_sel: false,
        wr_confirm: false,
        src: u64::from(reg),
        dst,
    }));
}

/// Latches the counters, copies every instance into `buf_va` (layout of `plan.samples`), then
/// resets and restarts them.
pub fn read(c: &mut ComputeCmds, plan: &PmcPlan, buf_va: u64) -> Result<()> {
    read_begin(c)?;
    for i in 0..plan.counters.len() {
        read_counter(c, plan, i, buf_va)?;
    }
    read_end(c)
}

/// The first part of [`read`]: latch the counters.
pub fn read_begin(c: &mut ComputeCmds) -> Result<()> {
    set_grbm(c, None, None, None)?;
    c.wreg_fields(
        perfmon_cntl(c),
        &[("perfmon_state", 1), ("perfmon_sample_enable", 1)],
    )
}

/// The last part of [`read`]: reset and restart the counters.
pub fn read_end(c: &mut ComputeCmds) -> Result<()> {
    reset(c, true)
}

/// Copies every instance of counter `i` of `plan` (a part of [`read`], so a read can be split
/// over submissions that fit a small ring).
pub fn read_counter(c: &mut ComputeCmds, plan: &PmcPlan, i: usize, buf_va: u64) -> Result<()> {
    let g = c.ctx.gfx_major;
    if let (Some(k), Some(s)) = (plan.counters.get(i), plan.samples.get(i)) {
        let (_, lo, hi) = regs_of(g, k.block, k.slot);
        let lo = c.ctx.reg(&lo)?.addr;
        let hi = c.ctx.gc.opt(&hi).map(|r| r.addr);
        let mut off = s.off;
        for xcc in 0..s.xcc {
            let pred = c.pred_exec_begin(1 << xcc);
            for inst in 0..s.inst {
                for se in 0..s.se {
                    for sa in 0..s.sa {
                        for wgp in 0..s.wgp {
                            if s.inst > 1 {
                                set_grbm(c, Some(inst), None, None)?;
                            } else if g == 9 {
                                set_grbm(c, None, Some(se), None)?;
                            } else if k.block == Block::Sq {
                                set_grbm(c, Some(wgp << 2), Some(se), Some(sa))?;
                            } else {
                                set_grbm(c, Some(0), Some(se), Some(sa))?;
                            }
                            copy_perf(c, lo, buf_va + off);
                            if let Some(hi) = hi {
                                copy_perf(c, hi, buf_va + off + 4);
                            }
                            off += 8;
                        }
                    }
                }
            }
            c.pred_exec_end(pred);
        }
    }
    Ok(())
}
