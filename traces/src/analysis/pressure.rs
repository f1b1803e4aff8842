//! Register pressure: live VGPRs and SGPRs at each instruction of a kernel, from the ISA
//! decoder's operands and a backward liveness pass over the kernel's control-flow graph
//! (`docs/kernel-analysis.md`).
//!
//! Defs are the operands LLVM prints first (destinations); stores, compares into SCC/EXEC,
//! branches and atomics without a visible return define nothing. The special registers VCC,
//! EXEC, SCC and M0 are tracked too, from their operands and the instructions that read or write
//! them implicitly ([`implicit`]). VCC is counted as two SGPRs while live: it is allocated as an
//! SGPR pair on every supported arch and LLVM counts it in `.sgpr_count` (the ceiling). EXEC,
//! SCC and M0 are registers of their own, outside the allocation: shown, not counted.

use std::collections::HashMap;

use serde::Serialize;

use crate::isa::{self, Operand, SpecialReg};
use crate::GfxTarget;

/// A set of registers: VGPRs 0..512 (AGPRs after the 256 architectural VGPRs, as gfx90a+
/// allocates them) and SGPRs 0..128.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Regs {
    v: [u64; 8],
    s: [u64; 2],
    /// Special registers, [`X_VCC_LO`] and on.
    x: u8,
}

const X_VCC_LO: u8 = 1;
const X_VCC_HI: u8 = 2;
const X_VCC: u8 = X_VCC_LO | X_VCC_HI;
const X_EXEC_LO: u8 = 4;
const X_EXEC_HI: u8 = 8;
const X_EXEC: u8 = X_EXEC_LO | X_EXEC_HI;
const X_SCC: u8 = 16;
const X_M0: u8 = 32;

impl Regs {
    fn set_v(&mut self, r: u32) {
        if r < 512 {
            self.v[(r / 64) as usize] |= 1 << (r % 64);
        }
    }
    fn set_s(&mut self, r: u32) {
        if r < 128 {
            self.s[(r / 64) as usize] |= 1 << (r % 64);
        }
    }
    fn union(&mut self, o: &Regs) {
        for (a, b) in self.v.iter_mut().zip(o.v) {
            *a |= b;
        }
        for (a, b) in self.s.iter_mut().zip(o.s) {
            *a |= b;
        }
        self.x |= o.x;
    }
    fn minus(&mut self, o: &Regs) {
        for (a, b) in self.v.iter_mut().zip(o.v) {
            *a &= !b;
        }
        for (a, b) in self.s.iter_mut().zip(o.s) {
            *a &= !b;
        }
        self.x &= !o.x;
    }
    /// Live VGPRs and SGPRs, VCC counting as its allocated pair.
    fn count(&self) -> (u32, u32) {
        let vcc = if self.x & X_VCC != 0 { 2 } else { 0 };
        (
            self.v.iter().map(|x| x.count_ones()).sum(),
            self.s.iter().map(|x| x.count_ones()).sum::<u32>() + vcc,
        )
    }
    fn add(&mut self, o: &Operand) {
        match *o {
            Operand::Vgpr { first, count, .. } => {
                for r in first as u32..first as u32 + count.max(1) as u32 {
                    self.set_v(r);
                }
            }
            Operand::Agpr { first, count } => {
                for r in first as u32..first as u32 + count.max(1) as u32 {
                    self.set_v(256 + r);
                }
            }
            Operand::Sgpr { first, count } => {
                for r in first as u32..first as u32 + count.max(1) as u32 {
                    self.set_s(r);
                }
            }
            Operand::Special(r) => {
                self.x |= match r {
                    SpecialReg::VccLo => X_VCC_LO,
                    SpecialReg::VccHi => X_VCC_HI,
                    SpecialReg::Vcc | SpecialReg::Vccz => X_VCC,
                    SpecialReg::ExecLo => X_EXEC_LO,
                    SpecialReg::ExecHi => X_EXEC_HI,
                    SpecialReg::Exec | SpecialReg::Execz => X_EXEC,
                    SpecialReg::Scc => X_SCC,
                    SpecialReg::M0 => X_M0,
                    _ => 0,
                }
            }
            _ => {}
        }
    }
}

/// Special registers an instruction reads and writes without naming them (ISA guides, "SALU
/// instructions write SCC", "VALU instructions are masked by EXEC", ...): (uses, defs).
/// VCC in the VOP2/VOPC `_e32` forms is printed by LLVM as an operand, so it is not here.
fn implicit(m: &str) -> (u8, u8) {
    let (mut u, mut d) = (0, 0);
    const VECTOR: [&str; 9] = [
        "v_", "global_", "buffer_", "flat_", "scratch_", "ds_", "image_", "tbuffer_", "exp",
    ];
    if VECTOR.iter().any(|p| m.starts_with(p)) {
        u |= X_EXEC;
    }
    if m.starts_with("v_cmpx") {
        d |= X_EXEC;
    }
    if m.contains("saveexec") || m.contains("wrexec") {
        (u, d) = (u | X_EXEC, d | X_EXEC | X_SCC);
    }
    if m.starts_with("s_cbranch_exec") {
        u |= X_EXEC;
    }
    if m.starts_with("s_cbranch_vcc") {
        u |= X_VCC;
    }
    if m.starts_with("s_cbranch_scc")
        || m.starts_with("s_cselect")
        || m.starts_with("s_cmov")
        || m.starts_with("s_addc")
        || m.starts_with("s_subb")
    {
        u |= X_SCC;
    }
    // SALU operations that set SCC (compares, carries, logic, shifts, bit fields, min/max).
    const SCC_DEF: [&str; 27] = [
        "s_cmp",
        "s_bitcmp",
        "s_add_",
        "s_sub_",
        "s_addc",
        "s_subb",
        "s_and_",
        "s_or_",
        "s_xor_",
        "s_andn2",
        "s_orn2",
        "s_nand",
        "s_nor",
        "s_xnor",
        "s_and_not1",
        "s_or_not1",
        "s_lshl",
        "s_lshr",
        "s_ashr",
        "s_bfe_",
        "s_not_",
        "s_abs",
        "s_min_",
        "s_max_",
        "s_bcnt",
        "s_absdiff",
        "s_quadmask",
    ];
    if SCC_DEF.iter().any(|p| m.starts_with(p)) && !m.starts_with("s_add_co") {
        d |= X_SCC;
    }
    if m.contains("movrel") || m.starts_with("s_sendmsg") || m.starts_with("ds_gws") {
        u |= X_M0;
    }
    (u, d)
}

/// Whether the instruction's first operand is a destination.
fn first_is_def(mnemonic: &str) -> bool {
    const NO_DEF: [&str; 14] = [
        "s_cmp",
        "s_bitcmp",
        "v_cmpx",
        "s_cbranch",
        "s_branch",
        "s_setpc",
        "s_waitcnt",
        "s_endpgm",
        "s_sendmsg",
        "s_barrier",
        "exp",
        "s_nop",
        "s_delay_alu",
        "s_clause",
    ];
    !(mnemonic.contains("store")
        || mnemonic.contains("_atomic")
        || mnemonic.starts_with("ds_write")
        || NO_DEF.iter().any(|p| mnemonic.starts_with(p)))
}

/// Defs and uses of one instruction.
fn defs_uses(i: &isa::Instruction) -> (Regs, Regs) {
    let ops = i.operands();
    let mut d = Regs::default();
    let mut u = Regs::default();
    let text = i.text();
    // VOPD: two halves, each with its own destination; the X half's operand count is its
    // comma-separated list in the text.
    let halves: Vec<usize> = match text.split_once("::") {
        Some((x, _)) => {
            let n = x
                .split_once(' ')
                .map_or(0, |(_, rest)| rest.split(',').count());
            vec![0, n]
        }
        None => vec![0],
    };
    let def_first = first_is_def(i.mnemonic());
    for (k, o) in ops.iter().enumerate() {
        // A carry-out (`v_add_co_u32 v2, vcc_lo, ...`, `v_mad_u64_u32 v[0:1], s[2:3], ...`) is a
        // second destination; gfx9's `v_cmpx_*_e32 vcc, ...` writes the VCC it prints first.
        let m = i.mnemonic();
        let sdst = matches!(o, Operand::Special(_) | Operand::Sgpr { .. });
        let carry_out = k == 1
            && def_first
            && sdst
            && (m.contains("_co_")
                || m.starts_with("v_div_scale")
                || m.starts_with("v_mad_u64")
                || m.starts_with("v_mad_i64"));
        let cmpx_vcc = k == 0 && m.starts_with("v_cmpx") && matches!(o, Operand::Special(_));
        if (def_first && halves.contains(&k)) || carry_out || cmpx_vcc {
            d.add(o);
        } else {
            u.add(o);
        }
    }
    let (iu, id) = implicit(i.mnemonic());
    u.x |= iu;
    d.x |= id;
    (d, u)
}

/// Live registers at one instruction.
#[derive(Debug, Clone, Serialize)]
pub struct PressureRow {
    pub pc: u64,
    pub text: String,
    /// Registers live into the instruction or written by it (SGPRs: VCC's pair included).
    pub vgprs: u32,
    pub sgprs: u32,
    /// Special registers live into the instruction or written by it.
    pub vcc: bool,
    pub exec: bool,
    pub scc: bool,
    pub m0: bool,
}

impl PressureRow {
    /// The live special registers as text (`VCC EXEC SCC`).
    pub fn specials(&self) -> String {
        [
            (self.vcc, "VCC"),
            (self.exec, "EXEC"),
            (self.scc, "SCC"),
            (self.m0, "M0"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| *n)
        .collect::<Vec<_>>()
        .join(" ")
    }
}

/// Register pressure over a kernel's code.
#[derive(Debug, Clone, Serialize)]
pub struct Pressure {
    pub rows: Vec<PressureRow>,
    pub max_vgprs: u32,
    pub max_sgprs: u32,
    /// The kernel's allocation (descriptor VGPRs, metadata SGPRs): the column's ceiling.
    pub vgpr_ceiling: Option<u32>,
    pub sgpr_ceiling: Option<u32>,
}

/// Register pressure of the code `code` at `base`, from its entry to its end.
pub fn pressure(code: &[u8], base: u64, target: GfxTarget) -> Pressure {
    let lines: Vec<(u64, isa::Instruction)> = isa::disassemble(code, base, target)
        .filter_map(|l| l.insn.ok().map(|i| (l.addr, i)))
        .collect();
    let index: HashMap<u64, usize> = lines
        .iter()
        .enumerate()
        .map(|(k, (a, _))| (*a, k))
        .collect();
    let n = lines.len();
    let mut du = Vec::with_capacity(n);
    let mut succ: Vec<Vec<usize>> = Vec::with_capacity(n);
    for (k, (pc, i)) in lines.iter().enumerate() {
        du.push(defs_uses(i));
        let m = i.mnemonic();
        let mut s = Vec::new();
        let ends = m == "s_endpgm" || m.starts_with("s_setpc") || m == "s_branch";
        if !ends && k + 1 < n {
            s.push(k + 1);
        }
        if let Some(t) = i.branch_target(*pc).and_then(|t| index.get(&t)) {
            s.push(*t);
        }
        succ.push(s);
    }
    // Backward liveness to a fixed point.
    let mut live_in = vec![Regs::default(); n];
    let mut changed = true;
    while changed {
        changed = false;
        for k in (0..n).rev() {
            let mut out = Regs::default();
            for &s in &succ[k] {
                out.union(&live_in[s]);
            }
            let (d, u) = &du[k];
            out.minus(d);
            out.union(u);
            if out != live_in[k] {
                live_in[k] = out;
                changed = true;
            }
        }
    }
    let mut rows = Vec::with_capacity(n);
    let (mut mv, mut ms) = (0, 0);
    for (k, (pc, i)) in lines.iter().enumerate() {
        let mut at = live_in[k];
        at.union(&du[k].0);
        let (v, s) = at.count();
        mv = mv.max(v);
        ms = ms.max(s);
        rows.push(PressureRow {
            pc: *pc,
            text: i.text(),
            vgprs: v,
            sgprs: s,
            vcc: at.x & X_VCC != 0,
            exec: at.x & X_EXEC != 0,
            scc: at.x & X_SCC != 0,
            m0: at.x & X_M0 != 0,
        });
    }
    Pressure {
        rows,
        max_vgprs: mv,
        max_sgprs: ms,
        vgpr_ceiling: None,
        sgpr_ceiling: None,
    }
}

/// Register pressure of kernel run `ki` of `p`, when its code object is in the profile.
pub fn kernel_pressure(p: &crate::model::Profile, ki: usize) -> Option<Pressure> {
    let k = p.kernels.get(ki)?;
    let (code, prog) = p.run_code_object(ki)?;
    let kernel = code
        .kernels
        .iter()
        .find(|c| c.name == k.name || c.name == prog.name)
        .or_else(|| (code.kernels.len() == 1).then(|| &code.kernels[0]))?;
    Some(kernel_code_pressure(&code, kernel))
}

/// Register pressure of `kernel` in `code`, with its allocation as the ceiling.
pub fn kernel_code_pressure(code: &isa::CodeObject, kernel: &isa::Kernel) -> Pressure {
    let mut pr = pressure(code.kernel_code(kernel), kernel.entry, code.target);
    let r = super::occupancy::KernelResources::from_kernel(kernel, code.target);
    pr.vgpr_ceiling = Some(r.vgprs);
    pr.sgpr_ceiling = r.sgprs;
    pr
}
