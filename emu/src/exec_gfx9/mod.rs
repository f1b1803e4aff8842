//! The gfx9 (CDNA3/CDNA4, gfx950) wave64 interpreter: one [`Wave9`]'s SGPRs, VGPRs and AGPRs
//! (accumulation registers), exec/vcc/scc, the gfx9 `s_waitcnt` counters, and [`step`], which
//! executes one instruction decoded by `traces::isa` (the workspace's one decoder; the gfx9
//! memory and MFMA fields come from its typed accessors).
//!
//! Covered: SOP1/SOP2/SOPK/SOPC/SOPP, SMEM loads, the VALU forms tinygrad and clang-22 emit for
//! gfx950 (VOP1/VOP2/VOPC/VOP3/VOP3P without DPP/SDWA), `v_pk_*_f32`, `v_accvgpr_*`,
//! single-block `v_mfma_*` with f32/f16/bf16/i8 inputs (A/B/C/D in VGPRs or AGPRs), DS, FLAT/
//! GLOBAL/SCRATCH and MUBUF (raw buffers). Anything else stops the wave with an
//! `illegal instruction` fault naming the instruction, never a silent wrong result.
//!
//! Timing (deterministic, see `docs/emulator.md`): a wave64 VALU op takes 4 cycles (one pass of
//! the SIMD16 per quarter-wave), SALU 1 (issued as 4: one issue slot per wave on gfx9), MFMA
//! its pass count × 4, and memory completes after the latencies of [`crate::cycles`].

// Lane loops index several same-length arrays at once.
#![allow(clippy::needless_range_loop)]

use std::collections::VecDeque;

use traces::isa::{decode, Encoding as E, Instruction, Opcode, Src, GFX9_NULL};
use traces::target::GfxTarget;

use crate::cycles;
use crate::exec::ops::{f16_to_f32, f32_to_f16};
use crate::exec::{Fault, State, PRIVATE_HI, SHARED_HI};
use crate::mem::Memory;

/// The gfx9 interpreter's fixed memory latencies (the RDNA cycle model's caches and pipes are
/// not applied to gfx9; see docs/emulator-timing.md).
const SMEM_LATENCY: u64 = 40;
const VMEM_LATENCY: u64 = 300;

/// gfx9 scalar-register-file slots.
pub const VCC: usize = 106;
pub const M0: usize = 124;
pub const EXEC: usize = 126;
const NULL: usize = GFX9_NULL as usize;

/// Cycles one wave64 issue slot takes on a SIMD16.
pub const ISSUE: u64 = 4;

type L = [u32; 64];

/// What an instruction was, for timing and for the SQTT token the hardware writes for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class9 {
    Salu,
    Smem,
    Valu,
    Mfma,
    Lds,
    /// FLAT, GLOBAL and SCRATCH loads and stores (atomics count as stores).
    FlatLoad,
    FlatStore,
    /// MUBUF.
    BufferLoad,
    BufferStore,
    Branch,
    /// s_nop, s_waitcnt, s_setprio...
    Immediate,
    Barrier,
    Message,
    End,
}

/// The decoded program, addressed by byte offset from its entry.
pub struct Program9 {
    pub base: u64,
    insts: Vec<Option<Result<(Instruction, Opcode), String>>>,
}

impl Program9 {
    /// Decodes `code` (bytes from the entry point to the end of its mapping) up to the first
    /// `s_code_end` or undecodable word.
    pub fn new(code: &[u8], base: u64, target: GfxTarget) -> Program9 {
        let mut insts: Vec<Option<Result<(Instruction, Opcode), String>>> =
            (0..code.len() / 4).map(|_| None).collect();
        let mut off = 0usize;
        while off + 4 <= code.len() {
            let Some(rest) = code.get(off..) else { break };
            let (r, len) = match decode(rest, target) {
                Ok(i) => match i.op() {
                    Some(o) => (Ok((i, o)), i.len()),
                    None => (Err(format!("no operation for {}", i.text())), 4),
                },
                Err(e) => (Err(e.to_string()), 4),
            };
            let end = matches!(&r, Ok((_, Opcode::SCodeEnd)) | Err(_));
            if let Some(s) = insts.get_mut(off / 4) {
                *s = Some(r);
            }
            off += len.max(4);
            if end {
                break;
            }
        }
        Program9 { base, insts }
    }

    pub fn at(&self, off: u32) -> Result<(Instruction, Opcode), Fault> {
        let pc = self.base + u64::from(off);
        match self.insts.get(off as usize / 4) {
            Some(Some(Ok(x))) => Ok(*x),
            Some(Some(Err(e))) => Err(Fault::Illegal {
                pc,
                what: e.clone(),
            }),
            _ => Err(Fault::Illegal {
                pc,
                what: "no decodable instruction here (outside the program)".into(),
            }),
        }
    }
}

/// One wave64's registers, program counter and clock.
pub struct Wave9 {
    pub s: [u32; 128],
    pub v: Vec<L>,
    /// Accumulation VGPRs (AGPRs).
    pub a: Vec<L>,
    pub scc: bool,
    /// Byte offset from the program entry.
    pub pc: u32,
    pub state: State,
    /// Absolute clock in shader cycles.
    pub time: u64,
    vm: VecDeque<u64>,
    lgkm: VecDeque<u64>,
    /// Private (scratch) bytes per lane, lane-major.
    pub private: Vec<u8>,
    pub priv_bytes: u32,
    /// (issue time, byte offset, class, taken branch) per instruction when traced.
    pub trace: Option<Vec<(u64, u32, Class9, bool)>>,
    pub insts: u64,
    /// Performance-counter counts, made at issue ([`count`]).
    pub pmc: crate::pmc::WaveCounts,
}

pub struct Ctx9<'a> {
    pub mem: &'a mut Memory,
    pub lds: &'a mut [u8],
    pub prog: &'a Program9,
}

/// Why [`run`] returned before the wave stopped being ready.
#[derive(Debug)]
pub enum Stop9 {
    Budget,
    Fault(Fault),
}

/// The inline constants are RDNA's ([`crate::exec::inline32`]).
fn inline32(c: u8) -> u32 {
    crate::exec::inline32(c.into())
}

fn inline16(c: u8) -> u32 {
    let h = |x: f32| u32::from(f32_to_f16(x, false));
    match c {
        240..=247 => h(f32::from_bits(inline32(c))),
        248 => 0x3118,
        _ => inline32(c) & 0xFFFF,
    }
}

fn fl(x: u32) -> f32 {
    f32::from_bits(x)
}
fn fb(x: f32) -> u32 {
    x.to_bits()
}
fn bf16_to_f32(h: u32) -> f32 {
    f32::from_bits((h & 0xFFFF) << 16)
}

/// IEEE min/max as the VALU does them: a NaN operand yields the other one.
fn fmin(a: f32, b: f32) -> f32 {
    a.min(b)
}
fn fmax(a: f32, b: f32) -> f32 {
    a.max(b)
}

impl Wave9 {
    pub fn new(vgprs: usize, agprs: usize, priv_bytes: u32) -> Wave9 {
        Wave9 {
            s: [0; 128],
            v: vec![[0; 64]; vgprs.clamp(1, 512)],
            a: vec![[0; 64]; agprs.clamp(1, 256)],
            scc: false,
            pc: 0,
            state: State::Ready,
            time: 0,
            vm: VecDeque::new(),
            lgkm: VecDeque::new(),
            private: vec![0; priv_bytes as usize * 64],
            priv_bytes,
            trace: None,
            insts: 0,
            pmc: crate::pmc::WaveCounts::default(),
        }
    }

    pub fn exec(&self) -> u64 {
        u64::from(self.s[EXEC]) | (u64::from(self.s[EXEC + 1]) << 32)
    }
    fn set_exec(&mut self, m: u64) {
        self.s[EXEC] = m as u32;
        self.s[EXEC + 1] = (m >> 32) as u32;
    }
    fn sget(&self, i: usize) -> u32 {
        if i == NULL {
            0
        } else {
            self.s.get(i).copied().unwrap_or(0)
        }
    }
    fn sset(&mut self, i: usize, v: u32) {
        if i != NULL {
            if let Some(x) = self.s.get_mut(i) {
                *x = v;
            }
        }
    }
    fn sget64(&self, i: usize) -> u64 {
        u64::from(self.sget(i)) | (u64::from(self.sget(i + 1)) << 32)
    }
    fn sset64(&mut self, i: usize, v: u64) {
        self.sset(i, v as u32);
        if i != NULL {
            self.sset(i + 1, (v >> 32) as u32);
        }
    }

    /// A scalar source (SALU, or a VALU operand that is not a VGPR).
    fn ssrc(&self, s: Src) -> u32 {
        match s {
            Src::Scalar(r) => self.sget(usize::from(r)),
            Src::Inline(251) => u32::from(self.sget64(VCC) == 0),
            Src::Inline(252) => u32::from(self.exec() == 0),
            Src::Inline(253) => u32::from(self.scc),
            Src::Inline(c) => inline32(c),
            Src::Literal(v) => v,
            Src::Vgpr(_) => 0,
        }
    }
    /// A 64-bit scalar source; `float`: inline float constants are f64.
    fn ssrc64(&self, s: Src, float: bool) -> u64 {
        match s {
            Src::Scalar(r) => self.sget64(usize::from(r)),
            Src::Inline(c @ (128..=208 | 235 | 237 | 240..=248)) => {
                crate::exec::inline64(c.into(), float)
            }
            Src::Literal(v) if float => u64::from(v) << 32,
            s => u64::from(self.ssrc(s)),
        }
    }
    fn v32(&self, s: Src, l: usize) -> u32 {
        match s {
            Src::Vgpr(r) => self.v.get(usize::from(r)).map_or(0, |x| x[l]),
            s => self.ssrc(s),
        }
    }
    fn v64(&self, s: Src, l: usize, float: bool) -> u64 {
        match s {
            Src::Vgpr(r) => {
                let r = usize::from(r);
                let lo = self.v.get(r).map_or(0, |x| x[l]);
                let hi = self.v.get(r + 1).map_or(0, |x| x[l]);
                u64::from(lo) | (u64::from(hi) << 32)
            }
            s => self.ssrc64(s, float),
        }
    }

    fn wait(q: &mut VecDeque<u64>, n: usize, t: &mut u64) {
        while q.len() > n {
            if let Some(x) = q.pop_front() {
                *t = (*t).max(x);
            }
        }
    }
}

/// Executes the wave while it is ready (until a barrier or its end), one budget unit per
/// instruction. Returns whether any instruction ran.
pub fn run(w: &mut Wave9, cx: &mut Ctx9<'_>, budget: &mut u64) -> Result<bool, Stop9> {
    let mut ran = false;
    while w.state == State::Ready {
        if *budget == 0 {
            return Err(Stop9::Budget);
        }
        *budget -= 1;
        step(w, cx).map_err(Stop9::Fault)?;
        ran = true;
    }
    Ok(ran)
}

fn illegal(pc: u64, i: &Instruction, why: &str) -> Fault {
    Fault::Illegal {
        pc,
        what: format!("{} ({why} on the emulated gfx9)", i.text()),
    }
}

/// A VALU source with VOP3 abs/neg applied to its f32 value.
fn fmod(x: u32, k: usize, abs: u8, neg: u8) -> u32 {
    let mut x = x;
    if abs & (1 << k) != 0 {
        x &= 0x7FFF_FFFF;
    }
    if neg & (1 << k) != 0 {
        x ^= 0x8000_0000;
    }
    x
}

/// Executes the instruction at the wave's PC.
pub fn step(w: &mut Wave9, cx: &mut Ctx9<'_>) -> Result<(), Fault> {
    let (i, op) = cx.prog.at(w.pc)?;
    let pc = cx.prog.base + u64::from(w.pc);
    let name = op.name();
    let mut next = w.pc + i.len() as u32;
    let issue_t = w.time;
    let mut taken = false;
    let class = match i.encoding {
        E::Sop1 | E::Sop2 | E::Sopk | E::Sopc => {
            scalar(w, &i, name, pc, &mut next)?;
            Class9::Salu
        }
        E::Sopp => sopp(w, &i, op, name, &mut next, &mut taken, pc)?,
        E::Smem => {
            smem(w, cx, &i, name, pc)?;
            Class9::Smem
        }
        E::Vop1 | E::Vop2 | E::Vopc | E::Vop3 | E::Vop3p => {
            if i.is_dpp() {
                return Err(illegal(pc, &i, "DPP/SDWA is not modelled"));
            }
            valu(w, &i, name, pc)?
        }
        E::Ds => {
            ds(w, cx, &i, name, pc)?;
            Class9::Lds
        }
        E::Flat | E::Global | E::Scratch => flat(w, cx, &i, name, pc)?,
        E::Mubuf => mubuf(w, cx, &i, name, pc)?,
        _ => return Err(illegal(pc, &i, "encoding not modelled")),
    };
    let cost = match class {
        Class9::Mfma => ISSUE * mfma_passes(name),
        _ => ISSUE,
    };
    w.time += cost;
    w.insts += 1;
    count(&mut w.pmc, class);
    if let Some(tr) = w.trace.as_mut() {
        tr.push((issue_t, w.pc, class, taken));
    }
    w.pc = next;
    Ok(())
}

/// One issued instruction as the gfx950 SQ counts it (the gfx950 captures: the gemm's 30 VALU
/// and 7 SALU per wave include v_cmp, v_pk_mul_f32 and s_and_saveexec, and leave out s_load,
/// s_waitcnt, s_cbranch and s_endpgm). MFMA and v_accvgpr_* issue on the VALU port and count
/// as VALU (no capture has them yet); FLAT/GLOBAL/SCRATCH count as FLAT.
pub fn count(c: &mut crate::pmc::WaveCounts, class: Class9) {
    match class {
        Class9::Salu => c.salu += 1,
        Class9::Valu | Class9::Mfma => c.valu += 1,
        Class9::Smem => c.smem += 1,
        Class9::Lds => c.lds += 1,
        Class9::FlatLoad | Class9::FlatStore => c.flat += 1,
        Class9::BufferLoad
        | Class9::BufferStore
        | Class9::Branch
        | Class9::Immediate
        | Class9::Barrier
        | Class9::Message
        | Class9::End => {}
    }
}

fn sopp(
    w: &mut Wave9,
    i: &Instruction,
    op: Opcode,
    name: &str,
    next: &mut u32,
    taken: &mut bool,
    pc: u64,
) -> Result<Class9, Fault> {
    let imm = i.simm16().unwrap_or(0);
    let cond = match name {
        "s_branch" => Some(true),
        "s_cbranch_scc0" => Some(!w.scc),
        "s_cbranch_scc1" => Some(w.scc),
        "s_cbranch_vccz" => Some(w.sget64(VCC) == 0),
        "s_cbranch_vccnz" => Some(w.sget64(VCC) != 0),
        "s_cbranch_execz" => Some(w.exec() == 0),
        "s_cbranch_execnz" => Some(w.exec() != 0),
        _ => None,
    };
    if let Some(c) = cond {
        if c {
            *next = (w.pc as i64 + 4 + i64::from(imm) * 4) as u32;
            *taken = true;
        }
        return Ok(Class9::Branch);
    }
    Ok(match op {
        Opcode::SEndpgm => {
            w.state = State::Done;
            // The wave ends when its outstanding memory is done (stores drain).
            let mut t = w.time;
            Wave9::wait(&mut w.vm, 0, &mut t);
            Wave9::wait(&mut w.lgkm, 0, &mut t);
            w.time = t;
            Class9::End
        }
        Opcode::SWaitcnt => {
            let v = imm as u16 as u32;
            // gfx9: vmcnt [3:0] + [15:14], expcnt [6:4], lgkmcnt [11:8].
            let vm = ((v & 0xF) | ((v >> 14) & 3) << 4) as usize;
            let lgkm = ((v >> 8) & 0xF) as usize;
            let mut t = w.time;
            Wave9::wait(&mut w.vm, vm, &mut t);
            Wave9::wait(&mut w.lgkm, lgkm, &mut t);
            w.time = t;
            Class9::Immediate
        }
        Opcode::SNop => {
            w.time += (imm as u64) & 0xF;
            Class9::Immediate
        }
        Opcode::SBarrier => {
            w.state = State::Barrier;
            Class9::Barrier
        }
        Opcode::SSendmsg | Opcode::SSendmsghalt => Class9::Message,
        _ if name.starts_with("s_set")
            || name.starts_with("s_sleep")
            || name.starts_with("s_icache")
            || name.starts_with("s_ttrace")
            || name == "s_code_end" =>
        {
            Class9::Immediate
        }
        _ => return Err(illegal(pc, i, "SOPP not modelled")),
    })
}

fn scalar(
    w: &mut Wave9,
    i: &Instruction,
    name: &str,
    pc: u64,
    next: &mut u32,
) -> Result<(), Fault> {
    let s0 = i.src(0).map_or(0, |s| w.ssrc(s));
    let s1 = i.src(1).map_or(0, |s| w.ssrc(s));
    let a64 = i.src(0).map_or(0, |s| w.ssrc64(s, false));
    let b64 = i.src(1).map_or(0, |s| w.ssrc64(s, false));
    let d = i.sdst().map_or(NULL, usize::from);
    let k = i.simm16().unwrap_or(0);
    let scc = w.scc;
    // (32-bit result, new scc)
    let r32 = |v: u32, c: bool| Some((v, c));
    let res: Option<(u32, bool)> = match name {
        "s_mov_b32" => r32(s0, scc),
        "s_movk_i32" => r32(k as i32 as u32, scc),
        "s_cmovk_i32" => r32(if scc { k as i32 as u32 } else { w.sget(d) }, scc),
        "s_cmov_b32" => r32(if scc { s0 } else { w.sget(d) }, scc),
        "s_not_b32" => r32(!s0, !s0 != 0),
        "s_brev_b32" => r32(s0.reverse_bits(), scc),
        "s_bcnt1_i32_b32" => r32(s0.count_ones(), s0 != 0),
        "s_bcnt1_i32_b64" => r32(a64.count_ones(), a64 != 0),
        "s_ff1_i32_b32" => r32(
            if s0 == 0 {
                u32::MAX
            } else {
                s0.trailing_zeros()
            },
            scc,
        ),
        "s_ff1_i32_b64" => r32(
            if a64 == 0 {
                u32::MAX
            } else {
                a64.trailing_zeros()
            },
            scc,
        ),
        "s_flbit_i32_b32" => r32(
            if s0 == 0 {
                u32::MAX
            } else {
                s0.leading_zeros()
            },
            scc,
        ),
        "s_sext_i32_i8" => r32(s0 as i8 as i32 as u32, scc),
        "s_sext_i32_i16" => r32(s0 as i16 as i32 as u32, scc),
        "s_abs_i32" => {
            let v = (s0 as i32).unsigned_abs();
            r32(v, v != 0)
        }
        "s_add_u32" => {
            let (v, c) = s0.overflowing_add(s1);
            r32(v, c)
        }
        "s_sub_u32" => {
            let (v, c) = s0.overflowing_sub(s1);
            r32(v, c)
        }
        "s_addc_u32" => {
            let v = u64::from(s0) + u64::from(s1) + u64::from(scc);
            r32(v as u32, v >> 32 != 0)
        }
        "s_subb_u32" => {
            let v = i64::from(s0) - i64::from(s1) - i64::from(scc);
            r32(v as u32, v < 0)
        }
        "s_add_i32" => {
            let (v, o) = (s0 as i32).overflowing_add(s1 as i32);
            r32(v as u32, o)
        }
        "s_sub_i32" => {
            let (v, o) = (s0 as i32).overflowing_sub(s1 as i32);
            r32(v as u32, o)
        }
        "s_addk_i32" => {
            let (v, o) = (w.sget(d) as i32).overflowing_add(i32::from(k));
            r32(v as u32, o)
        }
        "s_mulk_i32" => r32((w.sget(d) as i32).wrapping_mul(i32::from(k)) as u32, scc),
        "s_mul_i32" => r32((s0 as i32).wrapping_mul(s1 as i32) as u32, scc),
        "s_mul_hi_u32" => r32(((u64::from(s0) * u64::from(s1)) >> 32) as u32, scc),
        "s_mul_hi_i32" => r32(
            ((i64::from(s0 as i32) * i64::from(s1 as i32)) >> 32) as u32,
            scc,
        ),
        "s_min_i32" => r32((s0 as i32).min(s1 as i32) as u32, (s0 as i32) < (s1 as i32)),
        "s_min_u32" => r32(s0.min(s1), s0 < s1),
        "s_max_i32" => r32((s0 as i32).max(s1 as i32) as u32, (s0 as i32) > (s1 as i32)),
        "s_max_u32" => r32(s0.max(s1), s0 > s1),
        "s_absdiff_i32" => {
            let v = (s0 as i32).wrapping_sub(s1 as i32).unsigned_abs();
            r32(v, v != 0)
        }
        "s_cselect_b32" => r32(if scc { s0 } else { s1 }, scc),
        "s_and_b32" => r32(s0 & s1, s0 & s1 != 0),
        "s_or_b32" => r32(s0 | s1, s0 | s1 != 0),
        "s_xor_b32" => r32(s0 ^ s1, s0 ^ s1 != 0),
        "s_andn2_b32" => r32(s0 & !s1, s0 & !s1 != 0),
        "s_orn2_b32" => r32(s0 | !s1, s0 | !s1 != 0),
        "s_nand_b32" => r32(!(s0 & s1), !(s0 & s1) != 0),
        "s_nor_b32" => r32(!(s0 | s1), !(s0 | s1) != 0),
        "s_xnor_b32" => r32(!(s0 ^ s1), !(s0 ^ s1) != 0),
        "s_lshl_b32" => {
            let v = s0 << (s1 & 31);
            r32(v, v != 0)
        }
        "s_lshr_b32" => {
            let v = s0 >> (s1 & 31);
            r32(v, v != 0)
        }
        "s_ashr_i32" => {
            let v = ((s0 as i32) >> (s1 & 31)) as u32;
            r32(v, v != 0)
        }
        "s_lshl1_add_u32" | "s_lshl2_add_u32" | "s_lshl3_add_u32" | "s_lshl4_add_u32" => {
            let sh = u32::from(name.as_bytes()[6] - b'0');
            let v = (u64::from(s0) << sh) + u64::from(s1);
            r32(v as u32, v >> 32 != 0)
        }
        "s_bfm_b32" => r32(
            ((1u64 << (s0 & 31)) as u32).wrapping_sub(1) << (s1 & 31),
            scc,
        ),
        "s_bfe_u32" => {
            let (o, n) = (s1 & 31, (s1 >> 16) & 0x7F);
            let v = if n == 0 {
                0
            } else {
                ((u64::from(s0) >> o) & ((1u64 << n.min(32)) - 1)) as u32
            };
            r32(v, v != 0)
        }
        "s_bfe_i32" => {
            let (o, n) = (s1 & 31, (s1 >> 16) & 0x7F);
            let v = if n == 0 {
                0
            } else {
                let x = s0 >> o;
                let n = n.min(32);
                (((x << (32 - n)) as i32) >> (32 - n)) as u32
            };
            r32(v, v != 0)
        }
        "s_pack_ll_b32_b16" => r32((s0 & 0xFFFF) | (s1 << 16), scc),
        "s_pack_lh_b32_b16" => r32((s0 & 0xFFFF) | (s1 & 0xFFFF_0000), scc),
        "s_pack_hh_b32_b16" => r32((s0 >> 16) | (s1 & 0xFFFF_0000), scc),
        "s_cmp_eq_i32" | "s_cmp_eq_u32" => r32(0, s0 == s1),
        "s_cmp_lg_i32" | "s_cmp_lg_u32" => r32(0, s0 != s1),
        "s_cmp_gt_i32" => r32(0, (s0 as i32) > (s1 as i32)),
        "s_cmp_ge_i32" => r32(0, (s0 as i32) >= (s1 as i32)),
        "s_cmp_lt_i32" => r32(0, (s0 as i32) < (s1 as i32)),
        "s_cmp_le_i32" => r32(0, (s0 as i32) <= (s1 as i32)),
        "s_cmp_gt_u32" => r32(0, s0 > s1),
        "s_cmp_ge_u32" => r32(0, s0 >= s1),
        "s_cmp_lt_u32" => r32(0, s0 < s1),
        "s_cmp_le_u32" => r32(0, s0 <= s1),
        "s_cmp_eq_u64" => r32(0, a64 == b64),
        "s_cmp_lg_u64" => r32(0, a64 != b64),
        "s_bitcmp0_b32" => r32(0, s0 & (1 << (s1 & 31)) == 0),
        "s_bitcmp1_b32" => r32(0, s0 & (1 << (s1 & 31)) != 0),
        "s_cmpk_eq_i32" | "s_cmpk_eq_u32" => r32(0, w.sget(d) == k as i32 as u32),
        "s_cmpk_lg_i32" | "s_cmpk_lg_u32" => r32(0, w.sget(d) != k as i32 as u32),
        "s_cmpk_gt_i32" => r32(0, w.sget(d) as i32 > i32::from(k)),
        "s_cmpk_ge_i32" => r32(0, w.sget(d) as i32 >= i32::from(k)),
        "s_cmpk_lt_i32" => r32(0, (w.sget(d) as i32) < i32::from(k)),
        "s_cmpk_le_i32" => r32(0, w.sget(d) as i32 <= i32::from(k)),
        "s_cmpk_gt_u32" => r32(0, w.sget(d) > u32::from(k as u16)),
        "s_cmpk_ge_u32" => r32(0, w.sget(d) >= u32::from(k as u16)),
        "s_cmpk_lt_u32" => r32(0, w.sget(d) < u32::from(k as u16)),
        "s_cmpk_le_u32" => r32(0, w.sget(d) <= u32::from(k as u16)),
        _ => None,
    };
    if let Some((v, c)) = res {
        if !name.starts_with("s_cmp") && !name.starts_with("s_bitcmp") {
            w.sset(d, v);
        }
        w.scc = c;
        return Ok(());
    }
    // 64-bit results.
    let r64: Option<(u64, bool)> = match name {
        "s_mov_b64" => Some((a64, scc)),
        "s_cmov_b64" => Some((if scc { a64 } else { w.sget64(d) }, scc)),
        "s_not_b64" => Some((!a64, !a64 != 0)),
        "s_cselect_b64" => Some((if scc { a64 } else { b64 }, scc)),
        "s_and_b64" => Some((a64 & b64, a64 & b64 != 0)),
        "s_or_b64" => Some((a64 | b64, a64 | b64 != 0)),
        "s_xor_b64" => Some((a64 ^ b64, a64 ^ b64 != 0)),
        "s_andn2_b64" => Some((a64 & !b64, a64 & !b64 != 0)),
        "s_orn2_b64" => Some((a64 | !b64, a64 | !b64 != 0)),
        "s_nand_b64" => Some((!(a64 & b64), !(a64 & b64) != 0)),
        "s_nor_b64" => Some((!(a64 | b64), !(a64 | b64) != 0)),
        "s_xnor_b64" => Some((!(a64 ^ b64), !(a64 ^ b64) != 0)),
        "s_lshl_b64" => {
            let v = a64 << (s1 & 63);
            Some((v, v != 0))
        }
        "s_lshr_b64" => {
            let v = a64 >> (s1 & 63);
            Some((v, v != 0))
        }
        "s_ashr_i64" => {
            let v = ((a64 as i64) >> (s1 & 63)) as u64;
            Some((v, v != 0))
        }
        "s_bfm_b64" => Some((((1u128 << (s0 & 63)) - 1) as u64) << (s1 & 63)).map(|v| (v, scc)),
        "s_bfe_u64" => {
            let (o, n) = (s1 & 63, (s1 >> 16) & 0x7F);
            let v = if n == 0 {
                0
            } else {
                ((u128::from(a64) >> o) & ((1u128 << n.min(64)) - 1)) as u64
            };
            Some((v, v != 0))
        }
        "s_getpc_b64" => Some((pc + 4, scc)),
        _ => None,
    };
    if let Some((v, c)) = r64 {
        w.sset64(d, v);
        w.scc = c;
        return Ok(());
    }
    // saveexec: d = exec; exec = f(s0, exec); scc = exec != 0.
    let ex = w.exec();
    let se: Option<u64> = match name {
        "s_and_saveexec_b64" => Some(a64 & ex),
        "s_or_saveexec_b64" => Some(a64 | ex),
        "s_xor_saveexec_b64" => Some(a64 ^ ex),
        "s_andn2_saveexec_b64" => Some(a64 & !ex),
        "s_orn2_saveexec_b64" => Some(a64 | !ex),
        "s_nand_saveexec_b64" => Some(!(a64 & ex)),
        "s_nor_saveexec_b64" => Some(!(a64 | ex)),
        "s_xnor_saveexec_b64" => Some(!(a64 ^ ex)),
        "s_andn1_saveexec_b64" => Some(!a64 & ex),
        "s_orn1_saveexec_b64" => Some(!a64 | ex),
        _ => None,
    };
    if let Some(e) = se {
        w.sset64(d, ex);
        w.set_exec(e);
        w.scc = e != 0;
        return Ok(());
    }
    match name {
        "s_andn1_wrexec_b64" | "s_andn2_wrexec_b64" => {
            let e = if name == "s_andn1_wrexec_b64" {
                !a64 & ex
            } else {
                a64 & !ex
            };
            w.set_exec(e);
            w.sset64(d, e);
            w.scc = e != 0;
        }
        "s_setpc_b64" => *next = a64.wrapping_sub(w_base(pc, w.pc)) as u32,
        "s_swappc_b64" => {
            w.sset64(d, pc + 4);
            *next = a64.wrapping_sub(w_base(pc, w.pc)) as u32;
        }
        "s_getreg_b32" => w.sset(d, 0),
        "s_setreg_b32" | "s_setreg_imm32_b32" => {}
        _ => return Err(illegal(pc, i, "SALU op not modelled")),
    }
    Ok(())
}

/// The program's base address from an instruction's absolute PC and its offset.
fn w_base(pc: u64, off: u32) -> u64 {
    pc - u64::from(off)
}

fn smem(
    w: &mut Wave9,
    cx: &mut Ctx9<'_>,
    i: &Instruction,
    name: &str,
    pc: u64,
) -> Result<(), Fault> {
    let f = i.smem().ok_or_else(|| illegal(pc, i, "no SMEM fields"))?;
    if name.starts_with("s_dcache") {
        return Ok(());
    }
    if name == "s_memtime" || name == "s_memrealtime" {
        let t = if name == "s_memtime" {
            w.time
        } else {
            w.time / cycles::CYCLES_PER_TICK
        };
        w.sset64(usize::from(f.sdata), t);
        w.lgkm.push_back(w.time + SMEM_LATENCY);
        return Ok(());
    }
    let n = match name.rsplit("dword").next() {
        Some("") => 1,
        Some(x) => x.trim_start_matches('x').parse::<usize>().unwrap_or(1),
        None => 1,
    };
    let sb = usize::from(f.sbase);
    let mut base = w.sget64(sb);
    if name.starts_with("s_buffer") {
        base &= 0xFFFF_FFFF_FFFF;
    }
    let soff = if usize::from(f.soffset) == NULL {
        0
    } else {
        u64::from(w.sget(usize::from(f.soffset)))
    };
    let va = base.wrapping_add(f.offset as i64 as u64).wrapping_add(soff) & !3;
    if name.starts_with("s_load") || name.starts_with("s_buffer_load") {
        for k in 0..n {
            let a = va + 4 * k as u64;
            let v = cx.mem.read32(a).map_err(|_| Fault::Memory {
                va: a,
                len: 4 * n as u64,
                pc,
                what: "scalar load",
            })?;
            w.sset(usize::from(f.sdata) + k, v);
        }
    } else if name.starts_with("s_store") || name.starts_with("s_buffer_store") {
        for k in 0..n {
            let a = va + 4 * k as u64;
            let v = w.sget(usize::from(f.sdata) + k);
            cx.mem.write32(a, v).map_err(|_| Fault::Memory {
                va: a,
                len: 4 * n as u64,
                pc,
                what: "scalar store",
            })?;
        }
    } else {
        return Err(illegal(pc, i, "SMEM op not modelled"));
    }
    w.lgkm.push_back(w.time + SMEM_LATENCY);
    Ok(())
}

/// MFMA shape from its name: (M, N, K, input type); single-block forms only.
fn mfma_shape(name: &str) -> Option<(usize, usize, usize, &str)> {
    let rest = name.strip_prefix("v_mfma_")?;
    let (dt, rest) = rest.split_once('_')?;
    if dt != "f32" && dt != "i32" {
        return None;
    }
    let (shape, ty) = rest.split_once('_')?;
    if ty.contains('_') {
        // "_2b_f32" style names have several blocks.
        return None;
    }
    let mut it = shape.split('x');
    let m = it.next()?.parse().ok()?;
    let n = it.next()?.parse().ok()?;
    let k = it.next()?.parse().ok()?;
    Some((m, n, k, ty))
}

/// Passes (4 cycles each) of an MFMA: CDNA3 ISA guide table (16 for 32x32 f32-class, 8 for
/// 16x16; the gfx950 double-rate f16/bf16 forms keep the pass count of their shape).
fn mfma_passes(name: &str) -> u64 {
    match mfma_shape(name) {
        Some((32, ..)) => 16,
        Some((16, ..)) => 8,
        _ => 4,
    }
}

fn valu(w: &mut Wave9, i: &Instruction, name: &str, pc: u64) -> Result<Class9, Fault> {
    let exec = w.exec();
    let s0 = i.src(0).unwrap_or(Src::Inline(128));
    let s1 = i.src(1).unwrap_or(Src::Inline(128));
    let s2 = i.src(2).unwrap_or(Src::Inline(128));
    let m3 = i.vop3_mods().unwrap_or_default();
    let d = i.vdst().map_or(0, usize::from);
    let vop3 = i.encoding == E::Vop3;
    let lanes = || (0..64usize).filter(move |l| exec >> l & 1 != 0);

    if i.encoding == E::Vop3p {
        return vop3p(w, i, name, pc);
    }

    // Compares: a lane mask into vcc (e32) or the VOP3 sdst (the vdst field).
    if let Some(rest) = name.strip_prefix("v_cmp") {
        let x = rest.starts_with('x');
        let rest = rest.trim_start_matches('x').trim_start_matches('_');
        let (cc, ty) = rest
            .split_once('_')
            .ok_or_else(|| illegal(pc, i, "compare"))?;
        let mut m = 0u64;
        for l in lanes() {
            let (a, b) = (w.v32(s0, l), w.v32(s1, l));
            let r = match ty {
                "f32" => {
                    let (a, b) = (
                        fl(fmod(a, 0, m3.abs, m3.neg)),
                        fl(fmod(b, 1, m3.abs, m3.neg)),
                    );
                    fcmp(cc, a.partial_cmp(&b))
                }
                "u32" => icmp(cc, a.cmp(&b)),
                "i32" => icmp(cc, (a as i32).cmp(&(b as i32))),
                "u64" | "i64" | "f64" => {
                    let (a, b) = (w.v64(s0, l, ty == "f64"), w.v64(s1, l, ty == "f64"));
                    match ty {
                        "u64" => icmp(cc, a.cmp(&b)),
                        "i64" => icmp(cc, (a as i64).cmp(&(b as i64))),
                        _ => fcmp(cc, f64::from_bits(a).partial_cmp(&f64::from_bits(b))),
                    }
                }
                "u16" => icmp(cc, (a & 0xFFFF).cmp(&(b & 0xFFFF))),
                "i16" => icmp(cc, (a as i16).cmp(&(b as i16))),
                "f16" => fcmp(cc, f16_to_f32(a as u16).partial_cmp(&f16_to_f32(b as u16))),
                _ => return Err(illegal(pc, i, "compare type not modelled")),
            }
            .ok_or_else(|| illegal(pc, i, "compare condition not modelled"))?;
            m |= u64::from(r) << l;
        }
        let dst = if vop3 { d } else { VCC };
        w.sset64(dst, m);
        if x {
            w.set_exec(m);
        }
        return Ok(Class9::Valu);
    }

    if name.starts_with("v_mfma") {
        return Err(illegal(pc, i, "MFMA outside VOP3P"));
    }

    // Carry ops and their mask operands.
    let carry_in_src = if vop3 { s2 } else { Src::Scalar(VCC as u8) };
    let sd = if vop3 {
        i.sdst().map_or(VCC, usize::from)
    } else {
        VCC
    };
    match name {
        "v_add_co_u32" | "v_sub_co_u32" | "v_subrev_co_u32" | "v_addc_co_u32" | "v_subb_co_u32"
        | "v_subbrev_co_u32" => {
            let cin = if name.contains("addc") || name.contains("subb") {
                w.ssrc64(carry_in_src, false)
            } else {
                0
            };
            let mut m = 0u64;
            for l in lanes() {
                let (mut a, mut b) = (u64::from(w.v32(s0, l)), u64::from(w.v32(s1, l)));
                if name.contains("rev") {
                    std::mem::swap(&mut a, &mut b);
                }
                let c = cin >> l & 1;
                let (v, co) = if name.starts_with("v_add") {
                    let v = a + b + c;
                    (v as u32, v >> 32 != 0)
                } else {
                    (
                        a.wrapping_sub(b).wrapping_sub(c) as u32,
                        (a as i64 - b as i64 - c as i64) < 0,
                    )
                };
                w.v[d][l] = v;
                m |= u64::from(co) << l;
            }
            w.sset64(sd, m);
            return Ok(Class9::Valu);
        }
        // The f32 division sequence clang emits (scale, rcp, fmas, fixup), as the RDNA
        // interpreter runs it: operands in the normal range need no 2^64 pre-scaling, so
        // v_div_scale passes src0 through and clears its mask.
        "v_div_scale_f32" => {
            for l in lanes() {
                w.v[d][l] = fmod(w.v32(s0, l), 0, m3.abs, m3.neg);
            }
            w.sset64(sd, 0);
            return Ok(Class9::Valu);
        }
        "v_div_fmas_f32" => {
            let vcc = w.ssrc64(Src::Scalar(VCC as u8), false);
            for l in lanes() {
                let a = fl(fmod(w.v32(s0, l), 0, m3.abs, m3.neg));
                let b = fl(fmod(w.v32(s1, l), 1, m3.abs, m3.neg));
                let c = fl(fmod(w.v32(s2, l), 2, m3.abs, m3.neg));
                let v = a.mul_add(b, c);
                // A lane v_div_scale flagged: undo its 2^±64 scaling (never set above).
                w.v[d][l] = fb(if vcc >> l & 1 != 0 {
                    v * 2f32.powi(64)
                } else {
                    v
                });
            }
            return Ok(Class9::Valu);
        }
        "v_cndmask_b32" => {
            let mask = w.ssrc64(carry_in_src, false);
            for l in lanes() {
                let (a, b) = (
                    fmod(w.v32(s0, l), 0, m3.abs, m3.neg),
                    fmod(w.v32(s1, l), 1, m3.abs, m3.neg),
                );
                w.v[d][l] = if mask >> l & 1 != 0 { b } else { a };
            }
            return Ok(Class9::Valu);
        }
        "v_readfirstlane_b32" => {
            let l = if exec == 0 {
                0
            } else {
                exec.trailing_zeros() as usize
            };
            let v = w.v32(s0, l);
            w.sset(d, v);
            return Ok(Class9::Valu);
        }
        "v_readlane_b32" => {
            let l = (w.ssrc(s1) & 63) as usize;
            let v = w.v32(s0, l);
            w.sset(d, v);
            return Ok(Class9::Valu);
        }
        "v_writelane_b32" => {
            let l = (w.ssrc(s1) & 63) as usize;
            w.v[d][l] = w.ssrc(s0);
            return Ok(Class9::Valu);
        }
        "v_nop" => return Ok(Class9::Valu),
        "v_mad_u64_u32" | "v_mad_i64_i32" => {
            for l in lanes() {
                let (a, b, c) = (w.v32(s0, l), w.v32(s1, l), w.v64(s2, l, false));
                let v = if name == "v_mad_u64_u32" {
                    (u64::from(a) * u64::from(b)).wrapping_add(c)
                } else {
                    ((i64::from(a as i32) * i64::from(b as i32)) as u64).wrapping_add(c)
                };
                w.v[d][l] = v as u32;
                w.v[d + 1][l] = (v >> 32) as u32;
            }
            w.sset64(sd, 0);
            return Ok(Class9::Valu);
        }
        _ => {}
    }
    if d + 1 >= w.v.len() && name.ends_with("64") {
        return Err(illegal(pc, i, "destination outside the VGPRs"));
    }
    // 64-bit results.
    let f64op = |f: fn(f64, f64, f64) -> f64, w: &mut Wave9| {
        for l in lanes() {
            let g = |s: Src, k: usize| {
                let mut x = f64::from_bits(w.v64(s, l, true));
                if m3.abs & (1 << k) != 0 {
                    x = x.abs();
                }
                if m3.neg & (1 << k) != 0 {
                    x = -x;
                }
                x
            };
            let v = f(g(s0, 0), g(s1, 1), g(s2, 2)).to_bits();
            w.v[d][l] = v as u32;
            w.v[d + 1][l] = (v >> 32) as u32;
        }
    };
    let r64: Option<fn(u64, u64, u64) -> u64> = match name {
        "v_lshl_add_u64" => Some(|a, b, c| (a << (b & 7)).wrapping_add(c)),
        "v_lshlrev_b64" => Some(|a, b, _| b << (a & 63)),
        "v_lshrrev_b64" => Some(|a, b, _| b >> (a & 63)),
        "v_ashrrev_i64" => Some(|a, b, _| ((b as i64) >> (a & 63)) as u64),
        "v_mov_b64" => Some(|a, _, _| a),
        _ => None,
    };
    if let Some(f) = r64 {
        for l in lanes() {
            // Shift counts are 32-bit operands; the shifted value and the addend 64-bit.
            let (a, b) = match name {
                "v_lshl_add_u64" => (w.v64(s0, l, false), u64::from(w.v32(s1, l))),
                "v_mov_b64" => (w.v64(s0, l, false), 0),
                _ => (u64::from(w.v32(s0, l)), w.v64(s1, l, false)),
            };
            let c = w.v64(s2, l, false);
            let v = f(a, b, c);
            w.v[d][l] = v as u32;
            w.v[d + 1][l] = (v >> 32) as u32;
        }
        return Ok(Class9::Valu);
    }
    let fd: Option<fn(f64, f64, f64) -> f64> = match name {
        "v_add_f64" => Some(|a, b, _| a + b),
        "v_mul_f64" => Some(|a, b, _| a * b),
        "v_fma_f64" => Some(|a, b, c| a.mul_add(b, c)),
        "v_max_f64" => Some(|a, b, _| a.max(b)),
        "v_min_f64" => Some(|a, b, _| a.min(b)),
        "v_rcp_f64" => Some(|a, _, _| 1.0 / a),
        "v_sqrt_f64" => Some(|a, _, _| a.sqrt()),
        _ => None,
    };
    if let Some(f) = fd {
        f64op(f, w);
        return Ok(Class9::Valu);
    }
    match name {
        "v_cvt_f64_f32" | "v_cvt_f64_i32" | "v_cvt_f64_u32" => {
            for l in lanes() {
                let a = w.v32(s0, l);
                let x = match name {
                    "v_cvt_f64_f32" => f64::from(fl(fmod(a, 0, m3.abs, m3.neg))),
                    "v_cvt_f64_i32" => f64::from(a as i32),
                    _ => f64::from(a),
                }
                .to_bits();
                w.v[d][l] = x as u32;
                w.v[d + 1][l] = (x >> 32) as u32;
            }
            return Ok(Class9::Valu);
        }
        "v_cvt_f32_f64" | "v_cvt_i32_f64" | "v_cvt_u32_f64" => {
            for l in lanes() {
                let x = f64::from_bits(w.v64(s0, l, true));
                w.v[d][l] = match name {
                    "v_cvt_f32_f64" => fb(x as f32),
                    "v_cvt_i32_f64" => x as i32 as u32,
                    _ => x as u32,
                };
            }
            return Ok(Class9::Valu);
        }
        _ => {}
    }
    // 32-bit lane ops: f(a, b, c); the mac forms read the old destination as c.
    type F3 = fn(u32, u32, u32) -> u32;
    let fop: Option<fn(f32, f32, f32) -> f32> = match name {
        "v_div_fixup_f32" => Some(crate::exec::div_fixup),
        "v_add_f32" => Some(|a, b, _| a + b),
        "v_sub_f32" => Some(|a, b, _| a - b),
        "v_subrev_f32" => Some(|a, b, _| b - a),
        "v_mul_f32" => Some(|a, b, _| a * b),
        "v_mul_legacy_f32" => Some(|a, b, _| if a == 0.0 || b == 0.0 { 0.0 } else { a * b }),
        "v_min_f32" => Some(|a, b, _| fmin(a, b)),
        "v_max_f32" => Some(|a, b, _| fmax(a, b)),
        "v_fma_f32" | "v_mad_f32" => Some(|a, b, c| a.mul_add(b, c)),
        "v_fmac_f32" | "v_mac_f32" => Some(|a, b, c| a.mul_add(b, c)),
        "v_min3_f32" => Some(|a, b, c| fmin(fmin(a, b), c)),
        "v_max3_f32" => Some(|a, b, c| fmax(fmax(a, b), c)),
        "v_med3_f32" => Some(|a, b, c| fmax(fmin(a, b), fmin(fmax(a, b), c))),
        "v_mov_b32" => None,
        "v_exp_f32" => Some(|a, _, _| a.exp2()),
        "v_log_f32" => Some(|a, _, _| a.log2()),
        "v_rcp_f32" | "v_rcp_iflag_f32" => Some(|a, _, _| 1.0 / a),
        "v_rsq_f32" => Some(|a, _, _| 1.0 / a.sqrt()),
        "v_sqrt_f32" => Some(|a, _, _| a.sqrt()),
        "v_sin_f32" => Some(|a, _, _| (a * std::f32::consts::TAU).sin()),
        "v_cos_f32" => Some(|a, _, _| (a * std::f32::consts::TAU).cos()),
        "v_fract_f32" => Some(|a, _, _| a - a.floor()),
        "v_trunc_f32" => Some(|a, _, _| a.trunc()),
        "v_ceil_f32" => Some(|a, _, _| a.ceil()),
        "v_floor_f32" => Some(|a, _, _| a.floor()),
        "v_rndne_f32" => Some(|a, _, _| a.round_ties_even()),
        _ => None,
    };
    if let Some(f) = fop {
        let mac = name == "v_fmac_f32" || name == "v_mac_f32";
        for l in lanes() {
            let a = fl(fmod(w.v32(s0, l), 0, m3.abs, m3.neg));
            let b = fl(fmod(w.v32(s1, l), 1, m3.abs, m3.neg));
            let c = if mac {
                fl(w.v[d][l])
            } else {
                fl(fmod(w.v32(s2, l), 2, m3.abs, m3.neg))
            };
            let mut r = f(a, b, c);
            r *= match m3.omod {
                1 => 2.0,
                2 => 4.0,
                3 => 0.5,
                _ => 1.0,
            };
            if m3.clamp {
                r = r.clamp(0.0, 1.0);
            }
            w.v[d][l] = fb(r);
        }
        return Ok(Class9::Valu);
    }
    let iop: Option<F3> = match name {
        "v_mov_b32" => Some(|a, _, _| a),
        "v_not_b32" => Some(|a, _, _| !a),
        "v_bfrev_b32" => Some(|a, _, _| a.reverse_bits()),
        "v_ffbh_u32" => Some(|a, _, _| if a == 0 { u32::MAX } else { a.leading_zeros() }),
        "v_ffbl_b32" => Some(|a, _, _| if a == 0 { u32::MAX } else { a.trailing_zeros() }),
        "v_add_u32" => Some(|a, b, _| a.wrapping_add(b)),
        "v_sub_u32" => Some(|a, b, _| a.wrapping_sub(b)),
        "v_subrev_u32" => Some(|a, b, _| b.wrapping_sub(a)),
        "v_add_i32" => Some(|a, b, _| a.wrapping_add(b)),
        "v_sub_i32" => Some(|a, b, _| a.wrapping_sub(b)),
        "v_mul_lo_u32" => Some(|a, b, _| a.wrapping_mul(b)),
        "v_mul_hi_u32" => Some(|a, b, _| ((u64::from(a) * u64::from(b)) >> 32) as u32),
        "v_mul_hi_i32" => {
            Some(|a, b, _| ((i64::from(a as i32) * i64::from(b as i32)) >> 32) as u32)
        }
        "v_mul_u32_u24" => Some(|a, b, _| (a & 0xFF_FFFF).wrapping_mul(b & 0xFF_FFFF)),
        "v_mul_i32_i24" => Some(|a, b, _| {
            let s = |x: u32| ((x << 8) as i32) >> 8;
            s(a).wrapping_mul(s(b)) as u32
        }),
        "v_mul_hi_u32_u24" => {
            Some(|a, b, _| ((u64::from(a & 0xFF_FFFF) * u64::from(b & 0xFF_FFFF)) >> 32) as u32)
        }
        "v_mad_u32_u24" => {
            Some(|a, b, c| (a & 0xFF_FFFF).wrapping_mul(b & 0xFF_FFFF).wrapping_add(c))
        }
        "v_mad_i32_i24" => Some(|a, b, c| {
            let s = |x: u32| ((x << 8) as i32) >> 8;
            s(a).wrapping_mul(s(b)).wrapping_add(c as i32) as u32
        }),
        "v_min_u32" => Some(|a, b, _| a.min(b)),
        "v_max_u32" => Some(|a, b, _| a.max(b)),
        "v_min_i32" => Some(|a, b, _| (a as i32).min(b as i32) as u32),
        "v_max_i32" => Some(|a, b, _| (a as i32).max(b as i32) as u32),
        "v_min3_u32" => Some(|a, b, c| a.min(b).min(c)),
        "v_max3_u32" => Some(|a, b, c| a.max(b).max(c)),
        "v_min3_i32" => Some(|a, b, c| (a as i32).min(b as i32).min(c as i32) as u32),
        "v_max3_i32" => Some(|a, b, c| (a as i32).max(b as i32).max(c as i32) as u32),
        "v_med3_u32" => Some(|a, b, c| a.min(b).max(a.max(b).min(c))),
        "v_med3_i32" => Some(|a, b, c| {
            let (a, b, c) = (a as i32, b as i32, c as i32);
            a.min(b).max(a.max(b).min(c)) as u32
        }),
        "v_lshlrev_b32" => Some(|a, b, _| b << (a & 31)),
        "v_lshrrev_b32" => Some(|a, b, _| b >> (a & 31)),
        "v_ashrrev_i32" => Some(|a, b, _| ((b as i32) >> (a & 31)) as u32),
        "v_and_b32" => Some(|a, b, _| a & b),
        "v_or_b32" => Some(|a, b, _| a | b),
        "v_xor_b32" => Some(|a, b, _| a ^ b),
        "v_xnor_b32" => Some(|a, b, _| !(a ^ b)),
        "v_lshl_or_b32" => Some(|a, b, c| (a << (b & 31)) | c),
        "v_lshl_add_u32" => Some(|a, b, c| (a << (b & 31)).wrapping_add(c)),
        "v_add_lshl_u32" => Some(|a, b, c| a.wrapping_add(b) << (c & 31)),
        "v_add3_u32" => Some(|a, b, c| a.wrapping_add(b).wrapping_add(c)),
        "v_and_or_b32" => Some(|a, b, c| (a & b) | c),
        "v_or3_b32" => Some(|a, b, c| a | b | c),
        "v_xad_u32" => Some(|a, b, c| (a ^ b).wrapping_add(c)),
        "v_bfe_u32" => Some(|a, b, c| {
            let (o, n) = (b & 31, c & 31);
            if n == 0 {
                0
            } else {
                (a >> o) & ((1u32 << n) - 1)
            }
        }),
        "v_bfe_i32" => Some(|a, b, c| {
            let (o, n) = (b & 31, c & 31);
            if n == 0 {
                0
            } else {
                (((a >> o) << (32 - n)) as i32 >> (32 - n)) as u32
            }
        }),
        "v_bfi_b32" => Some(|a, b, c| (a & b) | (!a & c)),
        "v_bfm_b32" => Some(|a, b, _| ((1u64 << (a & 31)) as u32).wrapping_sub(1) << (b & 31)),
        "v_alignbit_b32" => {
            Some(|a, b, c| ((u64::from(a) << 32 | u64::from(b)) >> (c & 31)) as u32)
        }
        "v_alignbyte_b32" => {
            Some(|a, b, c| ((u64::from(a) << 32 | u64::from(b)) >> (8 * (c & 3))) as u32)
        }
        "v_perm_b32" => Some(perm),
        "v_bcnt_u32_b32" => Some(|a, b, _| a.count_ones() + b),
        "v_cvt_f32_i32" => Some(|a, _, _| fb(a as i32 as f32)),
        "v_cvt_f32_u32" => Some(|a, _, _| fb(a as f32)),
        "v_cvt_u32_f32" => Some(|a, _, _| fl(a) as u32),
        "v_cvt_i32_f32" => Some(|a, _, _| fl(a) as i32 as u32),
        "v_cvt_f32_f16" => Some(|a, _, _| fb(f16_to_f32(a as u16))),
        "v_cvt_f16_f32" => Some(|a, _, _| u32::from(f32_to_f16(fl(a), false))),
        "v_cvt_f32_bf16" => Some(|a, _, _| fb(bf16_to_f32(a))),
        "v_cvt_pkrtz_f16_f32" => Some(|a, b, _| {
            u32::from(f32_to_f16(fl(a), true)) | u32::from(f32_to_f16(fl(b), true)) << 16
        }),
        "v_cvt_pk_f16_f32" => Some(|a, b, _| {
            u32::from(f32_to_f16(fl(a), false)) | u32::from(f32_to_f16(fl(b), false)) << 16
        }),
        "v_cvt_pk_bf16_f32" => Some(|a, b, _| u32::from(to_bf16(a)) | u32::from(to_bf16(b)) << 16),
        "v_pack_b32_f16" => Some(|a, b, _| (a & 0xFFFF) | (b << 16)),
        "v_cvt_f32_ubyte0" => Some(|a, _, _| fb((a & 0xFF) as f32)),
        "v_cvt_f32_ubyte1" => Some(|a, _, _| fb(((a >> 8) & 0xFF) as f32)),
        "v_cvt_f32_ubyte2" => Some(|a, _, _| fb(((a >> 16) & 0xFF) as f32)),
        "v_cvt_f32_ubyte3" => Some(|a, _, _| fb((a >> 24) as f32)),
        "v_ldexp_f32" => Some(|a, b, _| fb(fl(a) * 2f32.powi(b as i32))),
        "v_add_f16" => Some(|a, b, _| h2(|x, y| x + y, a, b)),
        "v_sub_f16" => Some(|a, b, _| h2(|x, y| x - y, a, b)),
        "v_mul_f16" => Some(|a, b, _| h2(|x, y| x * y, a, b)),
        "v_max_f16" => Some(|a, b, _| h2(fmax, a, b)),
        "v_min_f16" => Some(|a, b, _| h2(fmin, a, b)),
        _ => None,
    };
    if let Some(f) = iop {
        for l in lanes() {
            let v = f(w.v32(s0, l), w.v32(s1, l), w.v32(s2, l));
            w.v[d][l] = v;
        }
        return Ok(Class9::Valu);
    }
    match name {
        // Lanes below this one that are set in the mask (lo: lanes 0-31, hi: 32-63).
        "v_mbcnt_lo_u32_b32" | "v_mbcnt_hi_u32_b32" => {
            for l in lanes() {
                let m = w.v32(s0, l);
                let below = if name.contains("lo") {
                    let n = l.min(32);
                    m & ((1u64 << n) - 1) as u32
                } else {
                    let n = l.saturating_sub(32);
                    m & ((1u64 << n) - 1) as u32
                };
                w.v[d][l] = below.count_ones().wrapping_add(w.v32(s1, l));
            }
            Ok(Class9::Valu)
        }
        _ => Err(illegal(pc, i, "VALU op not modelled")),
    }
}

fn h2(f: fn(f32, f32) -> f32, a: u32, b: u32) -> u32 {
    u32::from(f32_to_f16(
        f(f16_to_f32(a as u16), f16_to_f32(b as u16)),
        false,
    ))
}

fn to_bf16(a: u32) -> u16 {
    // Round to nearest even; NaN stays NaN.
    if fl(a).is_nan() {
        return ((a >> 16) | 0x40) as u16;
    }
    let r = 0x7FFF + ((a >> 16) & 1);
    (a.wrapping_add(r) >> 16) as u16
}

/// v_perm_b32: each selector byte picks a byte of {src0, src1} (src1 is bytes 0-3) or a
/// constant.
fn perm(a: u32, b: u32, sel: u32) -> u32 {
    let bytes = u64::from(b) | (u64::from(a) << 32);
    let mut r = 0u32;
    for k in 0..4 {
        let s = (sel >> (8 * k)) & 0xFF;
        let v = match s {
            0..=7 => ((bytes >> (8 * s)) & 0xFF) as u32,
            8 => {
                if bytes >> 15 & 1 != 0 {
                    0xFF
                } else {
                    0
                }
            }
            9 => {
                if bytes >> 31 & 1 != 0 {
                    0xFF
                } else {
                    0
                }
            }
            10 => {
                if bytes >> 47 & 1 != 0 {
                    0xFF
                } else {
                    0
                }
            }
            11 => {
                if bytes >> 63 & 1 != 0 {
                    0xFF
                } else {
                    0
                }
            }
            12 => 0,
            _ => 0xFF,
        };
        r |= v << (8 * k);
    }
    r
}

fn fcmp(cc: &str, o: Option<std::cmp::Ordering>) -> Option<bool> {
    use std::cmp::Ordering::*;
    Some(match cc {
        "f" => false,
        "tru" => true,
        "lt" => o == Some(Less),
        "eq" => o == Some(Equal),
        "le" => matches!(o, Some(Less | Equal)),
        "gt" => o == Some(Greater),
        "lg" => matches!(o, Some(Less | Greater)),
        "ge" => matches!(o, Some(Greater | Equal)),
        "o" => o.is_some(),
        "u" => o.is_none(),
        "nge" => !matches!(o, Some(Greater | Equal)),
        "nlg" => !matches!(o, Some(Less | Greater)),
        "ngt" => o != Some(Greater),
        "nle" => !matches!(o, Some(Less | Equal)),
        "neq" => o != Some(Equal),
        "nlt" => o != Some(Less),
        _ => return None,
    })
}

fn icmp(cc: &str, o: std::cmp::Ordering) -> Option<bool> {
    use std::cmp::Ordering::*;
    Some(match cc {
        "f" => false,
        "t" => true,
        "lt" => o == Less,
        "eq" => o == Equal,
        "le" => o != Greater,
        "gt" => o == Greater,
        "ne" | "lg" => o != Equal,
        "ge" => o != Less,
        _ => return None,
    })
}

fn vop3p(w: &mut Wave9, i: &Instruction, name: &str, pc: u64) -> Result<Class9, Fault> {
    let exec = w.exec();
    let s0 = i.src(0).unwrap_or(Src::Inline(128));
    let s1 = i.src(1).unwrap_or(Src::Inline(128));
    let s2 = i.src(2).unwrap_or(Src::Inline(128));
    let d = i.vdst().map_or(0, usize::from);
    let lanes = || (0..64usize).filter(move |l| exec >> l & 1 != 0);
    match name {
        "v_accvgpr_write_b32" => {
            for l in lanes() {
                let v = w.v32(s0, l);
                set_a(w, d, l, v, pc, i)?;
            }
            return Ok(Class9::Valu);
        }
        "v_accvgpr_read_b32" => {
            let r = match s0 {
                Src::Vgpr(r) => usize::from(r),
                _ => return Err(illegal(pc, i, "accvgpr_read source")),
            };
            for l in lanes() {
                let v = w.a.get(r).map_or(0, |x| x[l]);
                w.v[d][l] = v;
            }
            return Ok(Class9::Valu);
        }
        "v_accvgpr_mov_b32" => {
            let r = match s0 {
                Src::Vgpr(r) => usize::from(r),
                _ => return Err(illegal(pc, i, "accvgpr_mov source")),
            };
            for l in lanes() {
                let v = w.a.get(r).map_or(0, |x| x[l]);
                set_a(w, d, l, v, pc, i)?;
            }
            return Ok(Class9::Valu);
        }
        _ => {}
    }
    if name.starts_with("v_mfma") {
        mfma(w, i, name, pc)?;
        return Ok(Class9::Mfma);
    }
    let m = i.vop3p_mods().unwrap_or_default();
    // Packed f32 (gfx90a+): 64-bit register pairs; op_sel picks the lo result's half,
    // op_sel_hi the hi result's.
    let pk32: Option<fn(f32, f32, f32) -> f32> = match name {
        "v_pk_mul_f32" => Some(|a, b, _| a * b),
        "v_pk_add_f32" => Some(|a, b, _| a + b),
        "v_pk_fma_f32" => Some(|a, b, c| a.mul_add(b, c)),
        "v_pk_mov_b32" => Some(|a, b, _| {
            let _ = b;
            a
        }),
        _ => None,
    };
    if let Some(f) = pk32 {
        if d + 1 >= w.v.len() {
            return Err(illegal(pc, i, "destination outside the VGPRs"));
        }
        for l in lanes() {
            let src = [
                w.v64(s0, l, false),
                w.v64(s1, l, false),
                w.v64(s2, l, false),
            ];
            let pick = |k: usize, hi: bool| -> f32 {
                let sel = if hi { m.op_sel_hi } else { m.op_sel };
                let half = (src[k] >> (32 * u64::from(sel >> k & 1))) as u32;
                let neg = if hi { m.neg_hi } else { m.neg_lo };
                fl(if neg >> k & 1 != 0 {
                    half ^ 0x8000_0000
                } else {
                    half
                })
            };
            let (lo, hi) = if name == "v_pk_mov_b32" {
                // v_pk_mov_b32: lo from src0's op_sel half, hi from src1's op_sel half.
                (pick(0, false), pick(1, false))
            } else {
                (
                    f(pick(0, false), pick(1, false), pick(2, false)),
                    f(pick(0, true), pick(1, true), pick(2, true)),
                )
            };
            w.v[d][l] = fb(lo);
            w.v[d + 1][l] = fb(hi);
        }
        return Ok(Class9::Valu);
    }
    let pk16: Option<fn(f32, f32, f32) -> f32> = match name {
        "v_pk_mul_f16" => Some(|a, b, _| a * b),
        "v_pk_add_f16" => Some(|a, b, _| a + b),
        "v_pk_fma_f16" => Some(|a, b, c| a.mul_add(b, c)),
        "v_pk_max_f16" => Some(|a, b, _| fmax(a, b)),
        "v_pk_min_f16" => Some(|a, b, _| fmin(a, b)),
        _ => None,
    };
    if let Some(f) = pk16 {
        for l in lanes() {
            let src = [pk_src(w, s0, l), pk_src(w, s1, l), pk_src(w, s2, l)];
            let pick = |k: usize, hi: bool| -> f32 {
                let sel = if hi { m.op_sel_hi } else { m.op_sel };
                let h = (src[k] >> (16 * (sel >> k & 1))) as u16;
                let neg = if hi { m.neg_hi } else { m.neg_lo };
                let x = f16_to_f32(h);
                if neg >> k & 1 != 0 {
                    -x
                } else {
                    x
                }
            };
            let lo = f32_to_f16(f(pick(0, false), pick(1, false), pick(2, false)), false);
            let hi = f32_to_f16(f(pick(0, true), pick(1, true), pick(2, true)), false);
            w.v[d][l] = u32::from(lo) | (u32::from(hi) << 16);
        }
        return Ok(Class9::Valu);
    }
    if name == "v_dot2_f32_f16" || name == "v_dot2c_f32_f16" {
        for l in lanes() {
            let (a, b) = (w.v32(s0, l), w.v32(s1, l));
            let c = if name == "v_dot2c_f32_f16" {
                fl(w.v[d][l])
            } else {
                fl(w.v32(s2, l))
            };
            let p = f16_to_f32(a as u16) * f16_to_f32(b as u16)
                + f16_to_f32((a >> 16) as u16) * f16_to_f32((b >> 16) as u16);
            w.v[d][l] = fb(p + c);
        }
        return Ok(Class9::Valu);
    }
    Err(illegal(pc, i, "VOP3P op not modelled"))
}

/// A packed 16-bit source: inline constants are f16 values in the low half.
fn pk_src(w: &Wave9, s: Src, l: usize) -> u32 {
    match s {
        Src::Inline(c) => inline16(c),
        s => w.v32(s, l),
    }
}

fn set_a(w: &mut Wave9, r: usize, l: usize, v: u32, pc: u64, i: &Instruction) -> Result<(), Fault> {
    match w.a.get_mut(r) {
        Some(x) => {
            x[l] = v;
            Ok(())
        }
        None => Err(illegal(pc, i, "AGPR outside the allocation")),
    }
}

/// Single-block MFMA: D = A × B + C over the whole wave. Layouts (CDNA3 ISA §7.1, AMD matrix
/// instruction calculator): A's row `i` and k-group `g` live in lane `i + M·g` (M = 32 or 16),
/// each lane holding K·M/64 consecutive k values; B likewise by column; D/C: lane `j + N·g`
/// (column j), register r → row 8·(r/4) + 4·g + r%4 for 32×32, 4·g + r for 16×16. Products are
/// summed in f32 (i32 for i8) in k order.
fn mfma(w: &mut Wave9, i: &Instruction, name: &str, pc: u64) -> Result<(), Fault> {
    let (m, n, k, ty) =
        mfma_shape(name).ok_or_else(|| illegal(pc, i, "multi-block MFMA not modelled"))?;
    let f = i.mfma9().ok_or_else(|| illegal(pc, i, "no MFMA fields"))?;
    if f.cbsz != 0 || f.abid != 0 || f.blgp != 0 {
        return Err(illegal(pc, i, "MFMA broadcast controls not modelled"));
    }
    if m != n || !(m == 32 || m == 16) {
        return Err(illegal(pc, i, "MFMA shape not modelled"));
    }
    let groups = 64 / m;
    let kpl = k / groups; // k values per lane
    let (bits, int) = match ty {
        "f32" => (32, false),
        "f16" | "bf16" => (16, false),
        "i8" => (8, true),
        _ => return Err(illegal(pc, i, "MFMA input type not modelled")),
    };
    let regs_in = (kpl * bits).div_ceil(32);
    let nd = m * n / 64;
    let reg = |s: Option<Src>| match s {
        Some(Src::Vgpr(r)) => Ok(usize::from(r)),
        _ => Err(illegal(pc, i, "MFMA operand not a register")),
    };
    let (ra, rb) = (reg(i.src(0))?, reg(i.src(1))?);
    let d = i.vdst().map_or(0, usize::from);
    let file = |w: &Wave9, agpr: bool, r: usize, l: usize| -> u32 {
        let f = if agpr { &w.a } else { &w.v };
        f.get(r).map_or(0, |x| x[l])
    };
    // Element e (0..kpl) of lane l of A or B.
    let elem = |w: &Wave9, agpr: bool, r: usize, l: usize, e: usize| -> f64 {
        let bit = e * bits;
        let word = file(w, agpr, r + bit / 32, l) >> (bit % 32);
        match ty {
            "f32" => f64::from(fl(word)),
            "f16" => f64::from(f16_to_f32(word as u16)),
            "bf16" => f64::from(bf16_to_f32(word)),
            _ => f64::from(word as u8 as i8),
        }
    };
    let _ = regs_in;
    // C: src2 (an inline constant 0 for a zero start).
    let c_src = i.src(2);
    let mut out = vec![[0u32; 64]; nd];
    for col in 0..n {
        for row in 0..m {
            let mut acc_f = 0f32;
            let mut acc_i = 0i64;
            for kk in 0..k {
                let (g, e) = (kk / kpl, kk % kpl);
                let a = elem(w, f.acc & 1 != 0, ra, row + m * g, e);
                let b = elem(w, f.acc & 2 != 0, rb, col + n * g, e);
                if int {
                    acc_i += (a as i64) * (b as i64);
                } else {
                    acc_f = (a as f32).mul_add(b as f32, acc_f);
                }
            }
            // Where D[row][col] lives.
            let (g, r) = if m == 32 {
                ((row % 8) / 4, (row / 8) * 4 + row % 4)
            } else {
                (row / 4, row % 4)
            };
            let lane = col + n * g;
            let c = match c_src {
                Some(Src::Vgpr(cr)) => file(w, f.acc_cd, usize::from(cr) + r, lane),
                Some(s) => w.ssrc(s),
                None => 0,
            };
            out[r][lane] = if int {
                (acc_i as i32).wrapping_add(c as i32) as u32
            } else {
                fb(fl(c) + acc_f)
            };
        }
    }
    let exec = w.exec();
    for (r, v) in out.iter().enumerate() {
        for l in 0..64 {
            if exec >> l & 1 == 0 {
                continue;
            }
            if f.acc_cd {
                set_a(w, d + r, l, v[l], pc, i)?;
            } else {
                match w.v.get_mut(d + r) {
                    Some(x) => x[l] = v[l],
                    None => return Err(illegal(pc, i, "MFMA destination outside the VGPRs")),
                }
            }
        }
    }
    Ok(())
}

/// Element size, sign extension and d16-high placement of a memory op, from its name.
struct Elem {
    bytes: usize,
    sext: bool,
    dwords: usize,
    /// d16: write/read the low (false) or high (true) half of the VGPR, keeping the other.
    d16: Option<bool>,
}

fn elem(name: &str) -> Option<Elem> {
    let tail = name.rsplit_once('_').map(|x| x.1)?;
    let d16 = if name.contains("d16_hi") || name.ends_with("_hi") {
        Some(true)
    } else if name.contains("d16") {
        Some(false)
    } else {
        None
    };
    let base = name.trim_end_matches("_hi").trim_end_matches("_d16");
    let t = base.rsplit_once('_').map(|x| x.1).unwrap_or(tail);
    Some(match t {
        "ubyte" | "byte" => Elem {
            bytes: 1,
            sext: false,
            dwords: 1,
            d16,
        },
        "sbyte" => Elem {
            bytes: 1,
            sext: true,
            dwords: 1,
            d16,
        },
        "ushort" | "short" => Elem {
            bytes: 2,
            sext: false,
            dwords: 1,
            d16,
        },
        "sshort" => Elem {
            bytes: 2,
            sext: true,
            dwords: 1,
            d16,
        },
        "dword" => Elem {
            bytes: 4,
            sext: false,
            dwords: 1,
            d16,
        },
        "dwordx2" => Elem {
            bytes: 8,
            sext: false,
            dwords: 2,
            d16,
        },
        "dwordx3" => Elem {
            bytes: 12,
            sext: false,
            dwords: 3,
            d16,
        },
        "dwordx4" => Elem {
            bytes: 16,
            sext: false,
            dwords: 4,
            d16,
        },
        _ => return None,
    })
}

enum Space {
    Global(u64),
    Lds(u32),
    Private(u32),
}

fn space(a: u64) -> Space {
    match (a >> 32) as u32 {
        SHARED_HI => Space::Lds(a as u32),
        PRIVATE_HI => Space::Private(a as u32),
        _ => Space::Global(a),
    }
}

fn lds_range(lds: &[u8], a: u32, n: usize) -> Option<std::ops::Range<usize>> {
    let s = a as usize;
    (s + n <= lds.len()).then_some(s..s + n)
}

fn flat(
    w: &mut Wave9,
    cx: &mut Ctx9<'_>,
    i: &Instruction,
    name: &str,
    pc: u64,
) -> Result<Class9, Fault> {
    let f = i.flat().ok_or_else(|| illegal(pc, i, "no FLAT fields"))?;
    if i.mem_acc9() {
        return Err(illegal(pc, i, "AGPR memory data not modelled"));
    }
    let exec = w.exec();
    let store = name.contains("_store");
    let atomic = name.contains("_atomic");
    let scratch = i.encoding == E::Scratch;
    let saddr = usize::from(f.saddr);
    let addr_of = |w: &Wave9, l: usize| -> u64 {
        let off = f.offset as i64 as u64;
        match i.encoding {
            E::Global if saddr != NULL => w
                .sget64(saddr)
                .wrapping_add(u64::from(w.v[usize::from(f.addr)][l]))
                .wrapping_add(off),
            E::Scratch => {
                let mut a = off as u32;
                if saddr != NULL {
                    a = a.wrapping_add(w.sget(saddr));
                }
                if f.sve || saddr == NULL {
                    a = a.wrapping_add(w.v[usize::from(f.addr)][l]);
                }
                u64::from(PRIVATE_HI) << 32 | u64::from(a)
            }
            _ => {
                let r = usize::from(f.addr);
                let lo = w.v[r][l];
                let hi = w.v.get(r + 1).map_or(0, |x| x[l]);
                (u64::from(lo) | (u64::from(hi) << 32)).wrapping_add(off)
            }
        }
    };
    let mem_fault = |va: u64, len: usize, what: &'static str| Fault::Memory {
        va,
        len: len as u64,
        pc,
        what,
    };
    let mut touched_lds = false;
    if atomic {
        let op = name
            .split("_atomic_")
            .nth(1)
            .ok_or_else(|| illegal(pc, i, "atomic"))?;
        let x2 = op.ends_with("_x2");
        if x2 {
            return Err(illegal(pc, i, "64-bit atomics not modelled"));
        }
        for l in (0..64).filter(|l| exec >> l & 1 != 0) {
            let a = addr_of(w, l);
            let data = w.v[usize::from(f.data)][l];
            let data1 = w.v.get(usize::from(f.data) + 1).map_or(0, |x| x[l]);
            let old = read_u32(w, cx, a, l).ok_or_else(|| mem_fault(a, 4, "atomic"))?;
            let new = match op {
                "add" => old.wrapping_add(data),
                "sub" => old.wrapping_sub(data),
                "swap" => data,
                "cmpswap" => {
                    if old == data1 {
                        data
                    } else {
                        old
                    }
                }
                "smax" => (old as i32).max(data as i32) as u32,
                "smin" => (old as i32).min(data as i32) as u32,
                "umax" => old.max(data),
                "umin" => old.min(data),
                "and" => old & data,
                "or" => old | data,
                "xor" => old ^ data,
                "inc" => {
                    if old >= data {
                        0
                    } else {
                        old + 1
                    }
                }
                "dec" => {
                    if old == 0 || old > data {
                        data
                    } else {
                        old - 1
                    }
                }
                "add_f32" => fb(fl(old) + fl(data)),
                _ => return Err(illegal(pc, i, "atomic op not modelled")),
            };
            write_u32(w, cx, a, l, new).ok_or_else(|| mem_fault(a, 4, "atomic"))?;
            if f.atomic_return {
                w.v[usize::from(f.vdst)][l] = old;
            }
            if let Space::Lds(_) = space(a) {
                touched_lds = true;
            }
        }
        w.vm.push_back(w.time + VMEM_LATENCY);
        if touched_lds && i.encoding == E::Flat {
            w.lgkm.push_back(w.time + cycles::LDS_LATENCY);
        }
        return Ok(Class9::FlatStore);
    }
    let e = elem(name).ok_or_else(|| illegal(pc, i, "memory element size"))?;
    let mut buf = [0u8; 16];
    for l in (0..64).filter(|l| exec >> l & 1 != 0) {
        let a = addr_of(w, l);
        let n = e.bytes;
        let sp = if scratch {
            Space::Private(a as u32)
        } else {
            space(a)
        };
        if store {
            for k in 0..e.dwords {
                let v = w.v.get(usize::from(f.data) + k).map_or(0, |x| x[l]);
                let v = if e.d16 == Some(true) { v >> 16 } else { v };
                let b = v.to_le_bytes();
                let m = (n - 4 * k).min(4);
                buf[4 * k..4 * k + m].copy_from_slice(&b[..m]);
            }
            match sp {
                Space::Global(va) => {
                    cx.mem
                        .write(va, &buf[..n])
                        .map_err(|_| mem_fault(va, n, "store"))?;
                }
                Space::Lds(o) => {
                    let r = lds_range(cx.lds, o, n).ok_or_else(|| mem_fault(a, n, "LDS store"))?;
                    cx.lds[r].copy_from_slice(&buf[..n]);
                    touched_lds = true;
                }
                Space::Private(o) => {
                    let r =
                        priv_range(w, o, n, l).ok_or_else(|| mem_fault(a, n, "scratch store"))?;
                    w.private[r].copy_from_slice(&buf[..n]);
                }
            }
        } else {
            match sp {
                Space::Global(va) => {
                    cx.mem
                        .read(va, &mut buf[..n])
                        .map_err(|_| mem_fault(va, n, "load"))?;
                }
                Space::Lds(o) => {
                    let r = lds_range(cx.lds, o, n).ok_or_else(|| mem_fault(a, n, "LDS load"))?;
                    buf[..n].copy_from_slice(&cx.lds[r]);
                    touched_lds = true;
                }
                Space::Private(o) => {
                    let r =
                        priv_range(w, o, n, l).ok_or_else(|| mem_fault(a, n, "scratch load"))?;
                    buf[..n].copy_from_slice(&w.private[r]);
                }
            }
            write_loaded(w, usize::from(f.vdst), l, &buf, &e, pc, i)?;
        }
    }
    if touched_lds && i.encoding == E::Flat {
        w.lgkm.push_back(w.time + cycles::LDS_LATENCY);
    }
    w.vm.push_back(w.time + VMEM_LATENCY);
    Ok(if store {
        Class9::FlatStore
    } else {
        Class9::FlatLoad
    })
}

fn priv_range(w: &Wave9, o: u32, n: usize, l: usize) -> Option<std::ops::Range<usize>> {
    let pb = w.priv_bytes as usize;
    let o = o as usize;
    (o + n <= pb).then(|| l * pb + o..l * pb + o + n)
}

fn read_u32(w: &Wave9, cx: &Ctx9<'_>, a: u64, l: usize) -> Option<u32> {
    let mut b = [0u8; 4];
    match space(a) {
        Space::Global(va) => cx.mem.read(va, &mut b).ok()?,
        Space::Lds(o) => b.copy_from_slice(&cx.lds[lds_range(cx.lds, o, 4)?]),
        Space::Private(o) => b.copy_from_slice(&w.private[priv_range(w, o, 4, l)?]),
    }
    Some(u32::from_le_bytes(b))
}

fn write_u32(w: &mut Wave9, cx: &mut Ctx9<'_>, a: u64, l: usize, v: u32) -> Option<()> {
    let b = v.to_le_bytes();
    match space(a) {
        Space::Global(va) => cx.mem.write(va, &b).ok()?,
        Space::Lds(o) => {
            let r = lds_range(cx.lds, o, 4)?;
            cx.lds[r].copy_from_slice(&b);
        }
        Space::Private(o) => {
            let r = priv_range(w, o, 4, l)?;
            w.private[r].copy_from_slice(&b);
        }
    }
    Some(())
}

fn write_loaded(
    w: &mut Wave9,
    vd: usize,
    l: usize,
    buf: &[u8; 16],
    e: &Elem,
    pc: u64,
    i: &Instruction,
) -> Result<(), Fault> {
    if vd + e.dwords > w.v.len() {
        return Err(illegal(pc, i, "load destination outside the VGPRs"));
    }
    if e.bytes < 4 {
        let raw = if e.bytes == 1 {
            u32::from(buf[0])
        } else {
            u32::from(u16::from_le_bytes([buf[0], buf[1]]))
        };
        let v = if e.sext {
            if e.bytes == 1 {
                raw as u8 as i8 as i32 as u32
            } else {
                raw as u16 as i16 as i32 as u32
            }
        } else {
            raw
        };
        w.v[vd][l] = match e.d16 {
            Some(true) => (w.v[vd][l] & 0xFFFF) | (v << 16),
            Some(false) => (w.v[vd][l] & 0xFFFF_0000) | (v & 0xFFFF),
            None => v,
        };
        return Ok(());
    }
    for k in 0..e.dwords {
        let b = &buf[4 * k..4 * k + 4];
        w.v[vd + k][l] = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    Ok(())
}

/// The LDS cycles of a DS instruction from its per-lane addresses
/// ([`crate::lds_banks::cycles_gfx950`]).
fn lds_cycles(
    addr: &L,
    name: &str,
    off16: u32,
    o0: u8,
    o1: u8,
    exec: u64,
) -> crate::lds_banks::LdsCycles {
    use crate::lds_banks::cycles_gfx950 as cycles;
    let read = name.starts_with("ds_read");
    let at = |l: usize, o: u32| addr[l].wrapping_add(o);
    if name.starts_with("ds_read2") || name.starts_with("ds_write2") {
        let n = if name.contains("b64") { 2 } else { 1 };
        let sz = 4 * n as u32 * if name.contains("st64") { 64 } else { 1 };
        let (o0, o1) = (u32::from(o0) * sz, u32::from(o1) * sz);
        return cycles(exec, 2 * n, read, |l, k| {
            let (o, k) = if k < n { (o0, k) } else { (o1, k - n) };
            at(l, o) + 4 * k as u32
        });
    }
    if read || name.starts_with("ds_write") {
        let suffix = name
            .trim_start_matches("ds_read_")
            .trim_start_matches("ds_write_");
        let n = match suffix {
            "b64" => 2,
            "b96" => 3,
            "b128" => 4,
            _ => 1,
        };
        return cycles(exec, n, read, |l, k| at(l, off16) + 4 * k as u32);
    }
    if name.contains("permute") || name == "ds_nop" {
        // The crossbar, no bank: one pass per 32 lanes.
        return cycles(0, 1, false, |_, _| 0);
    }
    // Read-modify-write atomics: one dword per lane.
    cycles(exec, 1, false, |l, _| at(l, off16))
}

fn ds(w: &mut Wave9, cx: &mut Ctx9<'_>, i: &Instruction, name: &str, pc: u64) -> Result<(), Fault> {
    let f = i.ds().ok_or_else(|| illegal(pc, i, "no DS fields"))?;
    if f.gds || i.mem_acc9() {
        return Err(illegal(pc, i, "GDS / AGPR data not modelled"));
    }
    let exec = w.exec();
    let lanes: Vec<usize> = (0..64).filter(|l| exec >> l & 1 != 0).collect();
    let (addr, d0, d1, vd) = (
        usize::from(f.addr),
        usize::from(f.data0),
        usize::from(f.data1),
        usize::from(f.vdst),
    );
    let off16 = u32::from(f.offset0) | (u32::from(f.offset1) << 8);
    // Counted from the addresses before the instruction may overwrite its address VGPR.
    if let Some(a) = w.v.get(addr) {
        let c = lds_cycles(a, name, off16, f.offset0, f.offset1, exec);
        w.pmc.lds_access(c);
    }
    let fault = |a: u32, n: usize| Fault::Memory {
        va: u64::from(a),
        len: n as u64,
        pc,
        what: "LDS access out of range",
    };
    let get = |w: &Wave9, r: usize, l: usize| w.v.get(r).map_or(0, |x| x[l]);
    match name {
        "ds_bpermute_b32" | "ds_permute_b32" => {
            let src: Vec<u32> = (0..64).map(|l| get(w, d0, l)).collect();
            let idx: Vec<usize> = (0..64)
                .map(|l| ((get(w, addr, l).wrapping_add(off16) >> 2) & 63) as usize)
                .collect();
            let mut out = w.v[vd];
            if name == "ds_bpermute_b32" {
                for &l in &lanes {
                    out[l] = if exec >> idx[l] & 1 != 0 {
                        src[idx[l]]
                    } else {
                        0
                    };
                }
            } else {
                for &l in &lanes {
                    out[idx[l]] = src[l];
                }
            }
            w.v[vd] = out;
        }
        "ds_swizzle_b32" => {
            // No LDS access: lanes exchange ADDR's value. GCN/CDNA has two modes (offset bit
            // 15: quad permute, else bit masks within 32 lanes); the rotate/FFT forms
            // (0xC000..) are refused rather than guessed.
            if off16 >= 0xC000 {
                return Err(illegal(
                    pc,
                    i,
                    "ds_swizzle_b32 rotate/FFT mode not modelled",
                ));
            }
            let src: Vec<u32> = (0..64).map(|l| get(w, addr, l)).collect();
            let Some(mut out) = w.v.get(vd).copied() else {
                return Err(illegal(pc, i, "destination outside the VGPRs"));
            };
            for &l in &lanes {
                let j = if off16 & 0x8000 != 0 {
                    // Lane l takes lane (l & !3) + off[2(l%4)+1 : 2(l%4)].
                    (l & !3) + ((off16 >> (2 * (l & 3))) & 3) as usize
                } else {
                    // ((l & and) | or) ^ xor within each group of 32 lanes.
                    let (and, or, xor) = (off16 & 0x1F, (off16 >> 5) & 0x1F, (off16 >> 10) & 0x1F);
                    (l & !31) | ((((l as u32 & 31) & and) | or) ^ xor) as usize
                };
                out[l] = if exec >> j & 1 != 0 { src[j] } else { 0 };
            }
            w.v[vd] = out;
        }
        "ds_nop" => {}
        _ if name.starts_with("ds_read2") || name.starts_with("ds_write2") => {
            let b64 = name.contains("b64");
            let n = if b64 { 8 } else { 4 };
            let scale = n as u32 * if name.contains("st64") { 64 } else { 1 };
            for &l in &lanes {
                let base = get(w, addr, l);
                for (h, o) in [f.offset0, f.offset1].into_iter().enumerate() {
                    let a = base.wrapping_add(u32::from(o) * scale);
                    let r = lds_range(cx.lds, a, n).ok_or_else(|| fault(a, n))?;
                    if name.starts_with("ds_write2") {
                        let src = if h == 0 { d0 } else { d1 };
                        let mut b = [0u8; 8];
                        b[..4].copy_from_slice(&get(w, src, l).to_le_bytes());
                        b[4..].copy_from_slice(&get(w, src + 1, l).to_le_bytes());
                        cx.lds[r].copy_from_slice(&b[..n]);
                    } else {
                        let words = n / 4;
                        for k in 0..words {
                            let s = r.start + 4 * k;
                            let v = u32::from_le_bytes([
                                cx.lds[s],
                                cx.lds[s + 1],
                                cx.lds[s + 2],
                                cx.lds[s + 3],
                            ]);
                            let dst = vd + h * words + k;
                            match w.v.get_mut(dst) {
                                Some(x) => x[l] = v,
                                None => {
                                    return Err(illegal(pc, i, "destination outside the VGPRs"))
                                }
                            }
                        }
                    }
                }
            }
        }
        _ if name.starts_with("ds_read") || name.starts_with("ds_write") => {
            let (n, sext, d16hi) = match name
                .trim_start_matches("ds_read_")
                .trim_start_matches("ds_write_")
            {
                "b32" => (4, false, false),
                "b64" => (8, false, false),
                "b96" => (12, false, false),
                "b128" => (16, false, false),
                "u8" | "b8" => (1, false, false),
                "i8" => (1, true, false),
                "u16" | "b16" => (2, false, false),
                "i16" => (2, true, false),
                "b16_d16_hi" | "u16_d16_hi" => (2, false, true),
                _ => return Err(illegal(pc, i, "DS op not modelled")),
            };
            for &l in &lanes {
                let a = get(w, addr, l).wrapping_add(off16);
                let r = lds_range(cx.lds, a, n).ok_or_else(|| fault(a, n))?;
                if name.starts_with("ds_write") {
                    let mut b = [0u8; 16];
                    for k in 0..n.div_ceil(4) {
                        let v = get(w, d0 + k, l);
                        let v = if d16hi { v >> 16 } else { v };
                        b[4 * k..4 * k + 4].copy_from_slice(&v.to_le_bytes());
                    }
                    cx.lds[r].copy_from_slice(&b[..n]);
                } else {
                    let mut b = [0u8; 16];
                    b[..n].copy_from_slice(&cx.lds[r]);
                    let e = Elem {
                        bytes: n,
                        sext,
                        dwords: n.div_ceil(4),
                        d16: d16hi.then_some(true),
                    };
                    write_loaded(w, vd, l, &b, &e, pc, i)?;
                }
            }
        }
        _ => {
            // Read-modify-write forms (ds_add_u32, ds_max_f32, ...): the _rtn forms return the
            // old value.
            let rtn = name.contains("_rtn_");
            let op = name.trim_start_matches("ds_").replace("rtn_", "");
            for &l in &lanes {
                let a = get(w, addr, l).wrapping_add(off16);
                let r = lds_range(cx.lds, a, 4).ok_or_else(|| fault(a, 4))?;
                let old = u32::from_le_bytes([
                    cx.lds[r.start],
                    cx.lds[r.start + 1],
                    cx.lds[r.start + 2],
                    cx.lds[r.start + 3],
                ]);
                let x = get(w, d0, l);
                let new = match op.as_str() {
                    "add_u32" => old.wrapping_add(x),
                    "sub_u32" => old.wrapping_sub(x),
                    "max_u32" => old.max(x),
                    "min_u32" => old.min(x),
                    "max_i32" => (old as i32).max(x as i32) as u32,
                    "min_i32" => (old as i32).min(x as i32) as u32,
                    "and_b32" => old & x,
                    "or_b32" => old | x,
                    "xor_b32" => old ^ x,
                    "add_f32" => fb(fl(old) + fl(x)),
                    "max_f32" => fb(fmax(fl(old), fl(x))),
                    "min_f32" => fb(fmin(fl(old), fl(x))),
                    "wrxchg_b32" => x,
                    _ => return Err(illegal(pc, i, "DS op not modelled")),
                };
                cx.lds[r].copy_from_slice(&new.to_le_bytes());
                if rtn {
                    w.v[vd][l] = old;
                }
            }
        }
    }
    w.lgkm.push_back(w.time + cycles::LDS_LATENCY);
    Ok(())
}

fn mubuf(
    w: &mut Wave9,
    cx: &mut Ctx9<'_>,
    i: &Instruction,
    name: &str,
    pc: u64,
) -> Result<Class9, Fault> {
    let f = i
        .mubuf9()
        .ok_or_else(|| illegal(pc, i, "no MUBUF fields"))?;
    if f.acc {
        return Err(illegal(pc, i, "AGPR memory data not modelled"));
    }
    let e = elem(name)
        .filter(|_| !name.contains("format") && !name.contains("atomic"))
        .ok_or_else(|| illegal(pc, i, "MUBUF op not modelled"))?;
    let store = name.starts_with("buffer_store");
    let rs = usize::from(f.srsrc);
    let base = w.sget64(rs) & 0xFFFF_FFFF_FFFF;
    let stride = u64::from((w.sget(rs + 1) >> 16) & 0x3FFF);
    let num = u64::from(w.sget(rs + 2));
    let soff = u64::from(w.ssrc(Src::from_code(u32::from(f.soffset), 0)));
    let exec = w.exec();
    let mut buf = [0u8; 16];
    for l in (0..64).filter(|l| exec >> l & 1 != 0) {
        let va0 = w.v.get(usize::from(f.vaddr)).map_or(0, |x| x[l]);
        let va1 = w.v.get(usize::from(f.vaddr) + 1).map_or(0, |x| x[l]);
        let (idx, voff) = match (f.idxen, f.offen) {
            (true, true) => (u64::from(va0), u64::from(va1)),
            (true, false) => (u64::from(va0), 0),
            (false, true) => (0, u64::from(va0)),
            _ => (0, 0),
        };
        let off = u64::from(f.offset) + voff;
        // Range check: raw buffers (stride 0) by byte offset, structured ones by index.
        let inside = if stride == 0 {
            off + soff + e.bytes as u64 <= num
        } else {
            idx < num
        };
        let va = base + soff + off + idx * stride;
        let n = e.bytes;
        if store {
            if !inside {
                continue;
            }
            for k in 0..e.dwords {
                let v = w.v.get(usize::from(f.vdata) + k).map_or(0, |x| x[l]);
                let m = (n - 4 * k).min(4);
                buf[4 * k..4 * k + m].copy_from_slice(&v.to_le_bytes()[..m]);
            }
            cx.mem.write(va, &buf[..n]).map_err(|_| Fault::Memory {
                va,
                len: n as u64,
                pc,
                what: "buffer store",
            })?;
        } else {
            buf = [0u8; 16];
            if inside {
                cx.mem.read(va, &mut buf[..n]).map_err(|_| Fault::Memory {
                    va,
                    len: n as u64,
                    pc,
                    what: "buffer load",
                })?;
            }
            write_loaded(w, usize::from(f.vdata), l, &buf, &e, pc, i)?;
        }
    }
    w.vm.push_back(w.time + VMEM_LATENCY);
    Ok(if store {
        Class9::BufferStore
    } else {
        Class9::BufferLoad
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mfma_shapes_parse() {
        assert_eq!(
            mfma_shape("v_mfma_f32_32x32x2_f32"),
            Some((32, 32, 2, "f32"))
        );
        assert_eq!(
            mfma_shape("v_mfma_f32_16x16x32_bf16"),
            Some((16, 16, 32, "bf16"))
        );
        assert_eq!(mfma_shape("v_mfma_f32_32x32x1_2b_f32"), None);
    }

    #[test]
    fn perm_selects_bytes() {
        // Selector 0x07060504 returns src0 unchanged; 0x03020100 src1.
        assert_eq!(perm(0xAABBCCDD, 0x11223344, 0x0706_0504), 0xAABBCCDD);
        assert_eq!(perm(0xAABBCCDD, 0x11223344, 0x0302_0100), 0x11223344);
        assert_eq!(perm(0xAABBCCDD, 0x11223344, 0x0C0C_0C0C), 0);
    }
}
