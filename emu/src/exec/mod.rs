//! The wave interpreter: one [`Wave`]'s architectural state and [`step`], which executes one
//! pre-decoded instruction against memory, LDS and scratch, advancing the wave's clock by the
//! [cycle model](crate::cycles).

// Lane loops index several same-length arrays at once, and the float compares follow the
// ISA's unordered semantics literally.
#![allow(clippy::needless_range_loop, clippy::neg_cmp_op_on_partial_ord)]

pub mod ext;
pub mod ops;

use std::collections::VecDeque;

use super::code::{Op, Program, Src};
use super::cycles::{self, Class};
use super::mem::Memory;
use ops::{At, Br, Cmp, Mem, Ty, K, L, W12};

/// SGPR-file slots of the special registers (the operand encoding).
pub const VCC: usize = 106;
pub const NULL: usize = 124;
pub const M0: usize = 125;
pub const EXEC: usize = 126;

/// High dwords of the flat apertures (src_shared_base / src_private_base); chosen far above any
/// address the emulated memory hands out.
pub const SHARED_HI: u32 = 0x1000_0000;
pub const PRIVATE_HI: u32 = 0x2000_0000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Ready,
    Barrier,
    Done,
}

/// One wave's registers, program counter and clock.
pub struct Wave {
    pub s: [u32; 128],
    pub v: Vec<L>,
    pub scc: bool,
    /// Byte offset from the program entry.
    pub pc: u32,
    pub lanes: u32,
    pub state: State,
    /// The wave's clock in shader cycles (absolute).
    pub time: u64,
    vm: VecDeque<u64>,
    vs: VecDeque<u64>,
    /// gfx11 lgkmcnt (SMEM and LDS); with `split_counters` the gfx12 kmcnt (SMEM only).
    lgkm: VecDeque<u64>,
    /// gfx12 dscnt (LDS, and FLAT, which may address LDS).
    ds: VecDeque<u64>,
    /// gfx12 counters: LDS completes on `ds`, not `lgkm`.
    pub split_counters: bool,
    /// Private (scratch) memory, `priv_bytes` per lane.
    pub private: Vec<u8>,
    pub priv_bytes: u32,
    /// Instruction tokens for SQTT: (issue time, class, taken branch) when traced.
    pub trace: Option<Vec<(u64, Class, bool)>>,
    pub insts: u64,
    /// Performance-counter events of this wave, counted at issue.
    pub pmc: crate::pmc::WaveCounts,
    /// Scratch for global loads (the bytes one read fetches for all lanes).
    span_buf: Vec<u8>,
    /// Scalar operands of a VALU instruction broadcast to all lanes.
    bcast: Box<[L; 3]>,
    /// The WGP (index into the cycle model's per-WGP caches) and SIMD (index into its
    /// arbiters) the wave runs on.
    pub unit: u32,
    pub simd: u32,
    /// When the results of the last 4 VALU, last 3 transcendental and last 3 SALU
    /// instructions are ready (most recent first), for `s_delay_alu`.
    valu_ready: [u64; 4],
    trans_ready: [u64; 3],
    salu_ready: [u64; 3],
    /// `s_delay_alu`: the next instruction issues no earlier than `delay_next`; the one
    /// `delay_later.0` instructions after it no earlier than `delay_later.1`.
    delay_next: u64,
    delay_later: (u8, u64),
}

/// How a wave's execution stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    Memory {
        va: u64,
        len: u64,
        pc: u64,
        what: &'static str,
    },
    Illegal {
        pc: u64,
        what: String,
    },
}

pub struct Ctx<'a> {
    pub mem: &'a mut Memory,
    pub lds: &'a mut [u8],
    pub prog: &'a Program,
    /// The cycle model's caches and SIMD arbiters.
    pub timing: &'a mut cycles::Timing,
}

pub(crate) fn inline32(c: u16) -> u32 {
    match c {
        128..=192 => u32::from(c - 128),
        193..=208 => (-(i32::from(c) - 192)) as u32,
        240 => 0.5f32.to_bits(),
        241 => (-0.5f32).to_bits(),
        242 => 1.0f32.to_bits(),
        243 => (-1.0f32).to_bits(),
        244 => 2.0f32.to_bits(),
        245 => (-2.0f32).to_bits(),
        246 => 4.0f32.to_bits(),
        247 => (-4.0f32).to_bits(),
        248 => 0x3e22_f983, // 1/(2*pi)
        235 => SHARED_HI,
        237 => PRIVATE_HI,
        236 | 238 => u32::MAX,
        _ => 0,
    }
}

pub(crate) fn inline64(c: u16, float: bool) -> u64 {
    match c {
        128..=208 => inline32(c) as i32 as i64 as u64,
        240..=247 if float => f64::from(f32::from_bits(inline32(c))).to_bits(),
        248 if float => 0x3fc4_5f30_6dc9_c882,
        235 => u64::from(SHARED_HI) << 32,
        237 => u64::from(PRIVATE_HI) << 32,
        236 | 238 => u64::MAX,
        _ => u64::from(inline32(c)),
    }
}

impl Wave {
    pub fn new(lanes: u32, vgprs: usize, priv_bytes: u32) -> Wave {
        Wave {
            s: [0; 128],
            v: vec![[0; 64]; vgprs.max(1)],
            scc: false,
            pc: 0,
            lanes,
            state: State::Ready,
            time: 0,
            vm: VecDeque::new(),
            vs: VecDeque::new(),
            lgkm: VecDeque::new(),
            ds: VecDeque::new(),
            split_counters: false,
            private: vec![0; (priv_bytes as usize) * lanes as usize],
            priv_bytes,
            trace: None,
            insts: 0,
            pmc: crate::pmc::WaveCounts::default(),
            span_buf: Vec::new(),
            bcast: Box::new([[0; 64]; 3]),
            unit: 0,
            simd: 0,
            valu_ready: [0; 4],
            trans_ready: [0; 3],
            salu_ready: [0; 3],
            delay_next: 0,
            delay_later: (0, 0),
        }
    }

    #[inline]
    pub fn exec(&self) -> u64 {
        if self.lanes == 32 {
            u64::from(self.s[EXEC])
        } else {
            u64::from(self.s[EXEC]) | (u64::from(self.s[EXEC + 1]) << 32)
        }
    }

    fn full(&self) -> u64 {
        if self.lanes == 32 {
            0xFFFF_FFFF
        } else {
            u64::MAX
        }
    }

    #[inline]
    fn sget(&self, i: usize) -> u32 {
        if i == NULL {
            0
        } else {
            self.s.get(i).copied().unwrap_or(0)
        }
    }

    #[inline]
    fn sset(&mut self, i: usize, v: u32) {
        if i != NULL {
            if let Some(x) = self.s.get_mut(i) {
                *x = v;
            }
        }
    }

    /// A lane mask (VCC/EXEC/SGPR) read from slot `i`.
    fn mask_get(&self, i: usize) -> u64 {
        // `null` is a 64-bit zero in wave64 too (the slot after it is M0).
        if self.lanes == 32 || i == NULL {
            u64::from(self.sget(i))
        } else {
            u64::from(self.sget(i)) | (u64::from(self.sget(i + 1)) << 32)
        }
    }

    fn mask_set(&mut self, i: usize, m: u64) {
        if self.lanes == 64 {
            self.sset64(i, m);
        } else {
            self.sset(i, m as u32);
        }
    }

    /// Writes an SGPR pair; `null` discards both halves (its upper neighbour is M0).
    #[inline]
    fn sset64(&mut self, i: usize, v: u64) {
        if i != NULL {
            self.sset(i, v as u32);
            self.sset(i + 1, (v >> 32) as u32);
        }
    }

    pub fn set_exec(&mut self, m: u64) {
        self.mask_set(EXEC, m & self.full());
    }

    fn s32(&self, s: Src) -> u32 {
        match s {
            Src::S(i) => self.sget(i as usize),
            Src::Inline(253) => self.scc as u32,
            Src::Inline(251) => (self.mask_get(VCC) == 0) as u32,
            Src::Inline(252) => (self.exec() == 0) as u32,
            Src::Inline(c) => inline32(c),
            Src::Lit(x) => x,
            Src::V(_) | Src::None => 0,
        }
    }

    fn s64(&self, s: Src, float: bool) -> u64 {
        match s {
            Src::S(i) if i as usize == NULL => 0,
            Src::S(i) => {
                u64::from(self.sget(i as usize)) | (u64::from(self.sget(i as usize + 1)) << 32)
            }
            Src::Inline(253) => self.scc as u64,
            Src::Inline(c) => inline64(c, float),
            Src::Lit(x) => {
                if float {
                    u64::from(x) << 32
                } else {
                    u64::from(x)
                }
            }
            Src::V(_) | Src::None => 0,
        }
    }

    /// Lane values of a VALU source: a VGPR by reference, anything else broadcast into `tmp`.
    #[inline]
    fn vsrc<'a>(&'a self, s: Src, tmp: &'a mut L, pc: u64) -> Result<&'a L, Fault> {
        match s {
            Src::V(r) => self.v.get(r as usize).ok_or_else(|| vgpr_fault(pc, r)),
            _ => {
                *tmp = [self.s32(s); 64];
                Ok(tmp)
            }
        }
    }

    /// Lane values of operand `k` of a VALU instruction after [`valu32`] filled the
    /// broadcast rows.
    #[inline]
    fn vsrc_ref(&self, s: Src, k: usize, pc: u64) -> Result<&L, Fault> {
        static ZERO: L = [0; 64];
        match s {
            Src::V(r) => self.v.get(r as usize).ok_or_else(|| vgpr_fault(pc, r)),
            Src::None => Ok(&ZERO),
            _ => Ok(&self.bcast[k]),
        }
    }

    fn vreg(&self, r: u16, pc: u64) -> Result<&L, Fault> {
        self.v.get(r as usize).ok_or_else(|| vgpr_fault(pc, r))
    }

    /// Writes `r` into VGPR `d` for the lanes in `mask`.
    #[inline]
    fn vwrite(&mut self, d: u16, r: &L, mask: u64, pc: u64) -> Result<(), Fault> {
        let lanes = self.lanes as usize;
        let full = self.full();
        let dst = self
            .v
            .get_mut(d as usize)
            .ok_or_else(|| vgpr_fault(pc, d))?;
        if mask == full {
            // Constant lengths: a few vector moves instead of a memcpy call.
            if lanes == 32 {
                dst[..32].copy_from_slice(&r[..32]);
            } else {
                dst[..lanes].copy_from_slice(&r[..lanes]);
            }
        } else {
            let mut m = mask;
            while m != 0 {
                let i = m.trailing_zeros() as usize;
                m &= m - 1;
                dst[i] = r[i];
            }
        }
        Ok(())
    }

    fn wait(q: &mut VecDeque<u64>, n: usize, t: &mut u64) {
        while q.len() > n {
            if let Some(x) = q.pop_front() {
                *t = (*t).max(x);
            }
        }
    }

    /// Completes all outstanding memory operations (at s_endpgm).
    pub fn drain(&mut self) {
        let mut t = self.time;
        Self::wait(&mut self.vm, 0, &mut t);
        Self::wait(&mut self.lgkm, 0, &mut t);
        Self::wait(&mut self.ds, 0, &mut t);
        self.vs.clear();
        self.time = t;
    }
}

fn vgpr_fault(pc: u64, r: u16) -> Fault {
    Fault::Illegal {
        pc,
        what: format!("v{r} is beyond the VGPRs the kernel descriptor allocates"),
    }
}

fn mem_fault(pc: u64, va: u64, len: u64, what: &'static str) -> Fault {
    Fault::Memory { va, len, pc, what }
}

fn abs_neg(x: &L, abs: bool, neg: bool, out: &mut L) {
    for i in 0..64 {
        let mut v = x[i];
        if abs {
            v &= 0x7FFF_FFFF;
        }
        if neg {
            v ^= 0x8000_0000;
        }
        out[i] = v;
    }
}

fn cmp_f(c: Cmp, a: f64, b: f64) -> bool {
    let un = a.is_nan() || b.is_nan();
    match c {
        Cmp::F => false,
        Cmp::T => true,
        Cmp::Lt => a < b,
        Cmp::Eq => a == b,
        Cmp::Le => a <= b,
        Cmp::Gt => a > b,
        Cmp::Ne => !un && a != b,
        Cmp::Ge => a >= b,
        Cmp::O => !un,
        Cmp::U => un,
        Cmp::Nge => !(a >= b),
        Cmp::Nlg => un || a == b,
        Cmp::Ngt => !(a > b),
        Cmp::Nle => !(a <= b),
        Cmp::Neq => a != b,
        Cmp::Nlt => !(a < b),
    }
}

fn cmp_i<T: PartialOrd>(c: Cmp, a: T, b: T) -> bool {
    match c {
        Cmp::F => false,
        Cmp::T => true,
        Cmp::Lt => a < b,
        Cmp::Eq => a == b,
        Cmp::Le => a <= b,
        Cmp::Gt => a > b,
        Cmp::Ne => a != b,
        Cmp::Ge => a >= b,
        _ => false,
    }
}

/// v_cmp_class_f32 mask bits: 0 sNaN, 1 qNaN, 2 -inf, 3 -normal, 4 -denorm, 5 -0, 6 +0,
/// 7 +denorm, 8 +normal, 9 +inf.
fn fclass(x: f32) -> u32 {
    let neg = x.is_sign_negative();
    if x.is_nan() {
        return if x.to_bits() & 0x40_0000 != 0 { 1 } else { 0 };
    }
    match (x.classify(), neg) {
        (std::num::FpCategory::Infinite, true) => 2,
        (std::num::FpCategory::Normal, true) => 3,
        (std::num::FpCategory::Subnormal, true) => 4,
        (std::num::FpCategory::Zero, true) => 5,
        (std::num::FpCategory::Zero, false) => 6,
        (std::num::FpCategory::Subnormal, false) => 7,
        (std::num::FpCategory::Normal, false) => 8,
        _ => 9,
    }
}

pub(crate) fn div_fixup(q: f32, den: f32, num: f32) -> f32 {
    let sign = den.is_sign_negative() ^ num.is_sign_negative();
    let s = |v: f32| if sign { -v.abs() } else { v.abs() };
    if den.is_nan() || num.is_nan() {
        return f32::NAN;
    }
    if (den == 0.0 && num == 0.0) || (den.is_infinite() && num.is_infinite()) {
        return f32::NAN;
    }
    if den == 0.0 || num.is_infinite() {
        return s(f32::INFINITY);
    }
    if den.is_infinite() || num == 0.0 {
        return s(0.0);
    }
    if q.is_nan() {
        return q;
    }
    // The scale/rcp/fma/fmas sequence clang emits yields the correctly rounded quotient.
    num / den
}

fn atomic_op(a: At, old: u64, src: u64, cmp: u64, w64: bool) -> u64 {
    let m = if w64 { u64::MAX } else { 0xFFFF_FFFF };
    let (o, s) = (old & m, src & m);
    let sx = |v: u64| {
        if w64 {
            v as i64
        } else {
            v as u32 as i32 as i64
        }
    };
    (match a {
        At::Add => o.wrapping_add(s),
        At::Sub => o.wrapping_sub(s),
        At::Min => {
            if sx(s) < sx(o) {
                s
            } else {
                o
            }
        }
        At::Max => {
            if sx(s) > sx(o) {
                s
            } else {
                o
            }
        }
        At::Umin => o.min(s),
        At::Umax => o.max(s),
        At::And => o & s,
        At::Or => o | s,
        At::Xor => o ^ s,
        At::Swap => s,
        At::Inc => {
            if o >= s {
                0
            } else {
                o + 1
            }
        }
        At::Dec => {
            if o == 0 || o > s {
                s
            } else {
                o - 1
            }
        }
        At::Cmpswap => {
            if o == cmp & m {
                s
            } else {
                o
            }
        }
        At::AddF32 => u64::from((f32::from_bits(o as u32) + f32::from_bits(s as u32)).to_bits()),
    }) & m
}

/// Where a flat address points.
enum Space {
    Global(u64),
    Lds(u32),
    Private(u32),
}

fn flat_space(addr: u64) -> Space {
    match (addr >> 32) as u32 {
        SHARED_HI => Space::Lds(addr as u32),
        PRIVATE_HI => Space::Private(addr as u32),
        _ => Space::Global(addr),
    }
}

/// What [`step`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Next,
    Barrier,
    End,
}

/// Why [`run`] returned before the wave stopped being ready.
#[derive(Debug)]
pub enum Stop {
    /// The instruction budget ran out (the dispatch is hung).
    Budget,
    Fault(Fault),
}

/// Executes the wave's instructions while it is [`State::Ready`] (until a barrier or its
/// end), one unit of `budget` each. Returns whether any instruction ran.
pub fn run(w: &mut Wave, cx: &mut Ctx<'_>, budget: &mut u64) -> Result<bool, Stop> {
    let mut ran = false;
    while w.state == State::Ready {
        if *budget == 0 {
            return Err(Stop::Budget);
        }
        *budget -= 1;
        step(w, cx).map_err(Stop::Fault)?;
        ran = true;
    }
    Ok(ran)
}

/// Executes the instruction at the wave's PC.
#[inline(always)]
pub fn step(w: &mut Wave, cx: &mut Ctx<'_>) -> Result<Step, Fault> {
    let prog = cx.prog;
    let op = prog.at(w.pc).map_err(|u| Fault::Illegal {
        pc: u.pc,
        what: u.what,
    })?;
    let pc = prog.base + u64::from(w.pc);
    let mut next = w.pc + u32::from(op.len);
    let mut taken = false;
    let mut res = Step::Next;
    let exec = w.exec();
    if op.class != Class::Silent {
        apply_delay(w);
    }
    let issue = u64::from(op.issue[usize::from(w.lanes > 32)]);
    // One instruction per cycle through each shared pipe (the SIMD's VALU; the WGP's vector
    // memory, LDS and scalar memory pipes): wait for a free slot.
    let t = &mut cx.timing;
    let pipe = match op.class {
        c if is_valu(c) => t.simd.get_mut(w.simd as usize),
        Class::Vmem { .. } => t.vmem.get_mut(w.unit as usize),
        Class::Lds { .. } => t.lds.get_mut(w.unit as usize),
        Class::Smem => t.smem.get_mut(w.unit as usize),
        _ => None,
    };
    if let Some(a) = pipe {
        w.time = a.reserve(w.time, issue);
    }
    match op.k {
        K::Nop | K::CacheOp => {}
        K::DelayAlu => delay_alu(w, op.imm as u32),
        K::Wmma(kind, g12) => ext::wmma(w, op, kind, g12, pc)?,
        K::Dpp => ext::dpp(w, op, pc, exec)?,
        K::Buf(m, store) => ext::buffer(w, cx, op, pc, exec, m, store)?,
        K::F64x(x) => ext::f64x(w, op, x, pc, exec)?,
        K::SNop => w.time += (op.imm as u64) & 0xF,
        K::Waitcnt => {
            let v = op.imm as u32;
            let vm = ((v >> 10) & 0x3F) as usize;
            let lgkm = ((v >> 4) & 0x3F) as usize;
            let mut t = w.time;
            Wave::wait(&mut w.vm, vm, &mut t);
            Wave::wait(&mut w.lgkm, lgkm, &mut t);
            w.time = t;
        }
        K::Wait12(q) => {
            let v = op.imm as u32;
            let (lo, hi) = ((v & 0x3F) as usize, ((v >> 8) & 0x3F) as usize);
            let mut t = w.time;
            match q {
                W12::Load => Wave::wait(&mut w.vm, lo, &mut t),
                W12::Store => Wave::wait(&mut w.vs, lo, &mut t),
                W12::Km => Wave::wait(&mut w.lgkm, lo & 0x1F, &mut t),
                W12::Ds => Wave::wait(&mut w.ds, lo, &mut t),
                W12::LoadDs => {
                    Wave::wait(&mut w.vm, hi, &mut t);
                    Wave::wait(&mut w.ds, lo, &mut t);
                }
                W12::StoreDs => {
                    Wave::wait(&mut w.vs, hi, &mut t);
                    Wave::wait(&mut w.ds, lo, &mut t);
                }
            }
            w.time = t;
        }
        K::WaitVs => {
            let n = (op.imm as u32 & 0x3F) as usize;
            let mut t = w.time;
            Wave::wait(&mut w.vs, n, &mut t);
            w.time = t;
        }
        K::Endpgm => {
            w.drain();
            w.state = State::Done;
            res = Step::End;
        }
        K::Barrier => {
            w.state = State::Barrier;
            res = Step::Barrier;
        }
        K::Branch(b) => {
            taken = match b {
                Br::Always => true,
                Br::Scc0 => !w.scc,
                Br::Scc1 => w.scc,
                Br::Vccz => w.mask_get(VCC) == 0,
                Br::Vccnz => w.mask_get(VCC) != 0,
                Br::Execz => exec == 0,
                Br::Execnz => exec != 0,
            };
            if taken {
                next = (w.pc as i64 + 4 + i64::from(op.imm) * 4) as u32;
            }
        }
        K::Getpc => {
            w.sset64(op.d as usize, pc + 4);
        }
        K::S(f, wd) => {
            let a = if wd & 1 != 0 {
                w.s64(op.src[0], false)
            } else {
                u64::from(w.s32(op.src[0]))
            };
            let b = if wd & 2 != 0 {
                w.s64(op.src[1], false)
            } else {
                u64::from(w.s32(op.src[1]))
            };
            let (r, scc) = f(a, b, w.scc);
            if wd & 4 != 0 {
                w.sset64(op.d as usize, r);
            } else {
                w.sset(op.d as usize, r as u32);
            }
            if let Some(s) = scc {
                w.scc = s;
            }
        }
        K::Sc(f, w64) => {
            let (a, b) = if w64 {
                (w.s64(op.src[0], false), w.s64(op.src[1], false))
            } else {
                (u64::from(w.s32(op.src[0])), u64::from(w.s32(op.src[1])))
            };
            w.scc = f(a, b);
        }
        K::Saveexec(f, w64) => {
            let s = if w64 {
                w.s64(op.src[0], false)
            } else {
                u64::from(w.s32(op.src[0]))
            };
            let old = exec;
            let new = f(s, old) & w.full();
            w.set_exec(new);
            if w64 {
                w.sset64(op.d as usize, old);
            } else {
                w.sset(op.d as usize, old as u32);
            }
            w.scc = new != 0;
        }
        K::Movk => w.sset(op.d as usize, op.imm as u32),
        K::Cmovk => {
            if w.scc {
                w.sset(op.d as usize, op.imm as u32)
            }
        }
        K::Addk => {
            let a = w.sget(op.d as usize) as i32;
            let (r, o) = a.overflowing_add(op.imm);
            w.sset(op.d as usize, r as u32);
            w.scc = o;
        }
        K::Mulk => {
            let a = w.sget(op.d as usize) as i32;
            w.sset(op.d as usize, a.wrapping_mul(op.imm) as u32);
        }
        K::Cmpk(f, signed) => {
            let a = u64::from(w.sget(op.d as usize));
            let b = if signed {
                op.imm as u32
            } else {
                op.imm as u32 & 0xFFFF
            };
            w.scc = f(a, u64::from(b));
        }
        K::Smem(n) => {
            let base = w.s64(op.src[0], false);
            let soff = if op.imm1 as usize == NULL {
                0
            } else {
                u64::from(w.sget(op.imm1 as usize))
            };
            let addr = base.wrapping_add(op.imm as i64 as u64).wrapping_add(soff) & !3;
            let mut buf = [0u8; 64];
            let len = usize::from(n) * 4;
            let b = buf.get_mut(..len).unwrap_or(&mut []);
            cx.mem
                .read(addr, b)
                .map_err(|_| mem_fault(pc, addr, len as u64, "scalar load"))?;
            for i in 0..usize::from(n) {
                let d = u32::from_le_bytes([
                    buf[4 * i],
                    buf[4 * i + 1],
                    buf[4 * i + 2],
                    buf[4 * i + 3],
                ]);
                w.sset(op.d as usize + i, d);
            }
            let lat = cx.timing.scalar(w.unit as usize, w.time, addr, len as u64);
            w.lgkm.push_back(w.time + lat);
        }
        // Memory operations (never half of a VOPD pair).
        K::GLoad(m) => vmem_load(w, cx, op, pc, exec, m)?,
        K::GStore(m) => vmem_store(w, cx, op, pc, exec, m)?,
        K::GAtomic(a, rtn, n) => vmem_atomic(w, cx, op, pc, exec, a, rtn, n)?,
        K::DsLoad(_)
        | K::DsStore(_)
        | K::DsLoad2(..)
        | K::DsStore2(..)
        | K::DsAtomic(..)
        | K::DsBpermute
        | K::DsSwizzle => {
            ds(w, cx, op, pc, exec)?;
            let done = w.time + cycles::LDS_LATENCY;
            if w.split_counters {
                w.ds.push_back(done);
            } else {
                w.lgkm.push_back(done);
            }
        }
        K::V(f, float) if op.y.is_none() => valu32(w, op, f, float, pc, exec)?,
        _ => valu_or_mem(w, op, pc, exec)?,
    }
    let issue_at = w.time;
    w.time = issue_at + issue;
    track_ready(w, op.class, issue_at);
    if let Some(t) = &mut w.trace {
        if op.class != Class::Silent {
            t.push((issue_at, op.class, taken));
        }
    }
    w.insts += 1;
    w.pmc.issue(op.class);
    w.pc = next;
    Ok(res)
}

/// A lane-wise 32-bit VALU operation ([`K::V`]) that is not half of a VOPD pair.
fn valu32(
    w: &mut Wave,
    op: &Op,
    f: ops::VFn,
    float: bool,
    pc: u64,
    exec: u64,
) -> Result<(), Fault> {
    let mut r = [0u32; 64];
    if op.abs | op.neg != 0 {
        let mut m = [[0u32; 64]; 3];
        for (k, mk) in m.iter_mut().enumerate() {
            let mut tmp = [0u32; 64];
            let s = w.vsrc(op.src[k], &mut tmp, pc)?;
            abs_neg(s, op.abs >> k & 1 != 0, op.neg >> k & 1 != 0, mk);
        }
        f(&mut r, &m[0], &m[1], &m[2], w.lanes as usize);
    } else {
        // Scalar and constant operands are broadcast into the wave's scratch rows (no
        // temporaries to clear for VGPR operands); absent ones read as 0.
        for k in 0..3 {
            if !matches!(op.src[k], Src::V(_) | Src::None) {
                let v = w.s32(op.src[k]);
                w.bcast[k] = [v; 64];
            }
        }
        let w: &Wave = w;
        let a = w.vsrc_ref(op.src[0], 0, pc)?;
        let b = w.vsrc_ref(op.src[1], 1, pc)?;
        let c = w.vsrc_ref(op.src[2], 2, pc)?;
        f(&mut r, a, b, c, w.lanes as usize);
    }
    if op.clamp || op.omod != 0 {
        if !float {
            return Err(Fault::Illegal {
                pc,
                what: format!("{}: integer clamp/omod is not emulated", op.opcode),
            });
        }
        for x in r.iter_mut() {
            let mut v = f32::from_bits(*x);
            v *= match op.omod {
                1 => 2.0,
                2 => 4.0,
                3 => 0.5,
                _ => 1.0,
            };
            if op.clamp {
                v = if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) };
            }
            *x = v.to_bits();
        }
    }
    w.vwrite(op.d, &r, exec, pc)
}

fn valu_or_mem(w: &mut Wave, op: &Op, pc: u64, exec: u64) -> Result<(), Fault> {
    let mut t0 = [0u32; 64];
    let mut t1 = [0u32; 64];
    let mut r = [0u32; 64];
    if let Some(y) = &op.y {
        // VOPD: both halves read their operands before either writes.
        let mut ry = [0u32; 64];
        vopd_half(w, op, &mut r, pc)?;
        vopd_half(w, y, &mut ry, pc)?;
        w.vwrite(op.d, &r, exec, pc)?;
        w.vwrite(y.d, &ry, exec, pc)?;
        return Ok(());
    }
    match op.k {
        K::V64(f, wide, float) => {
            let mut lo = [0u32; 64];
            let mut hi = [0u32; 64];
            let mut vals = [[0u64; 64]; 3];
            let n = w.lanes as usize;
            for k in 0..3 {
                let w64 = wide >> k & 1 != 0;
                match op.src[k] {
                    Src::V(rg) => {
                        let a = w.vreg(rg, pc)?;
                        if w64 {
                            let b = w.vreg(rg + 1, pc)?;
                            for i in 0..n {
                                vals[k][i] = u64::from(a[i]) | (u64::from(b[i]) << 32);
                            }
                        } else {
                            for i in 0..n {
                                vals[k][i] = u64::from(a[i]);
                            }
                        }
                    }
                    s => {
                        let v = if w64 {
                            w.s64(s, float)
                        } else {
                            u64::from(w.s32(s))
                        };
                        vals[k] = [v; 64];
                    }
                }
                let neg = op.neg >> k & 1 != 0;
                let abs = op.abs >> k & 1 != 0;
                if neg || abs {
                    let bit = if w64 { 63 } else { 31 };
                    for v in vals[k].iter_mut() {
                        if abs {
                            *v &= !(1u64 << bit);
                        }
                        if neg {
                            *v ^= 1u64 << bit;
                        }
                    }
                }
            }
            for i in 0..n {
                let x = f(vals[0][i], vals[1][i], vals[2][i]);
                lo[i] = x as u32;
                hi[i] = (x >> 32) as u32;
            }
            w.vwrite(op.d, &lo, exec, pc)?;
            // 64-bit results unless the op narrows (cvt to 32-bit).
            if wide & 8 == 0 {
                w.vwrite(op.d + 1, &hi, exec, pc)?;
            }
        }
        K::Cmp(c, ty, x) => {
            let mut m = 0u64;
            let wide = matches!(ty, Ty::F64 | Ty::I64 | Ty::U64);
            let get64 = |w: &Wave, s: Src, i: usize| -> Result<u64, Fault> {
                Ok(match s {
                    Src::V(rg) => {
                        u64::from(w.vreg(rg, pc)?[i]) | (u64::from(w.vreg(rg + 1, pc)?[i]) << 32)
                    }
                    s => w.s64(s, ty == Ty::F64),
                })
            };
            let mut a32 = [0u32; 64];
            let mut b32 = [0u32; 64];
            if matches!(ty, Ty::F16 | Ty::I16 | Ty::U16) {
                // The halves the true16 bits / op_sel pick; abs/neg act on bit 15.
                for (k, v) in [&mut a32, &mut b32].into_iter().enumerate() {
                    src_row(w, op.src[k], ty == Ty::F16, pc, v)?;
                    half_in(v, op, k, w.lanes as usize);
                }
            } else if !wide {
                a32 = *w.vsrc(op.src[0], &mut t0, pc)?;
                b32 = *w.vsrc(op.src[1], &mut t1, pc)?;
                if op.abs | op.neg != 0 {
                    let (c0, c1) = (a32, b32);
                    abs_neg(&c0, op.abs & 1 != 0, op.neg & 1 != 0, &mut a32);
                    abs_neg(&c1, op.abs & 2 != 0, op.neg & 2 != 0, &mut b32);
                }
            }
            for i in 0..w.lanes as usize {
                if exec >> i & 1 == 0 {
                    continue;
                }
                let (a, b) = (a32[i], b32[i]);
                let bit = match ty {
                    Ty::F32 => cmp_f(
                        c,
                        f64::from(f32::from_bits(a)),
                        f64::from(f32::from_bits(b)),
                    ),
                    Ty::I32 => cmp_i(c, a as i32, b as i32),
                    Ty::U32 => cmp_i(c, a, b),
                    Ty::I16 => cmp_i(c, a as i16, b as i16),
                    Ty::U16 => cmp_i(c, a as u16, b as u16),
                    Ty::F16 => cmp_f(
                        c,
                        f64::from(ops::f16_to_f32(a as u16)),
                        f64::from(ops::f16_to_f32(b as u16)),
                    ),
                    Ty::F64 => cmp_f(
                        c,
                        f64::from_bits(get64(w, op.src[0], i)?),
                        f64::from_bits(get64(w, op.src[1], i)?),
                    ),
                    Ty::I64 => cmp_i(
                        c,
                        get64(w, op.src[0], i)? as i64,
                        get64(w, op.src[1], i)? as i64,
                    ),
                    Ty::U64 => cmp_i(c, get64(w, op.src[0], i)?, get64(w, op.src[1], i)?),
                };
                m |= u64::from(bit) << i;
            }
            if x {
                w.set_exec(m);
            } else {
                w.mask_set(op.sd as usize, m);
            }
        }
        K::CmpClass(x) => {
            let a = *w.vsrc(op.src[0], &mut t0, pc)?;
            let b = *w.vsrc(op.src[1], &mut t1, pc)?;
            let mut m = 0u64;
            for i in 0..w.lanes as usize {
                if exec >> i & 1 != 0 && b[i] >> fclass(f32::from_bits(a[i])) & 1 != 0 {
                    m |= 1 << i;
                }
            }
            if x {
                w.set_exec(m);
            } else {
                w.mask_set(op.sd as usize, m);
            }
        }
        K::Cndmask => {
            let mask = match op.src[2] {
                Src::S(i) => w.mask_get(i as usize),
                s => u64::from(w.s32(s)),
            };
            {
                let mut m = [[0u32; 64]; 2];
                for (k, mk) in m.iter_mut().enumerate() {
                    let mut tmp = [0u32; 64];
                    let s = w.vsrc(op.src[k], &mut tmp, pc)?;
                    abs_neg(s, op.abs >> k & 1 != 0, op.neg >> k & 1 != 0, mk);
                }
                for i in 0..64 {
                    r[i] = if mask >> i & 1 != 0 { m[1][i] } else { m[0][i] };
                }
            }
            w.vwrite(op.d, &r, exec, pc)?;
        }
        K::AddCo(sub, rev) | K::AddCoCi(sub, rev) => {
            let cin = if matches!(op.k, K::AddCoCi(..)) {
                match op.src[2] {
                    Src::S(i) => w.mask_get(i as usize),
                    s => u64::from(w.s32(s)),
                }
            } else {
                0
            };
            let mut carry = 0u64;
            {
                let mut a = w.vsrc(op.src[0], &mut t0, pc)?;
                let mut b = w.vsrc(op.src[1], &mut t1, pc)?;
                if rev {
                    std::mem::swap(&mut a, &mut b);
                }
                let n = w.lanes as usize;
                if sub {
                    for i in 0..n {
                        let ci = cin >> i & 1;
                        let (x, y) = (u64::from(a[i]), u64::from(b[i]));
                        r[i] = x.wrapping_sub(y).wrapping_sub(ci) as u32;
                        carry |= u64::from(y + ci > x) << i;
                    }
                } else {
                    for i in 0..n {
                        let v = u64::from(a[i]) + u64::from(b[i]) + (cin >> i & 1);
                        r[i] = v as u32;
                        carry |= (v >> 32) << i;
                    }
                }
            }
            w.vwrite(op.d, &r, exec, pc)?;
            w.mask_set(op.sd as usize, carry & exec);
        }
        K::MadU64U32(signed) => {
            let a = *w.vsrc(op.src[0], &mut t0, pc)?;
            let b = *w.vsrc(op.src[1], &mut t1, pc)?;
            let mut hi = [0u32; 64];
            let mut carry = 0u64;
            for i in 0..w.lanes as usize {
                let c = match op.src[2] {
                    Src::V(rg) => {
                        u64::from(w.vreg(rg, pc)?[i]) | (u64::from(w.vreg(rg + 1, pc)?[i]) << 32)
                    }
                    s => w.s64(s, false),
                };
                let (v, o) = if signed {
                    let p =
                        i128::from(a[i] as i32) * i128::from(b[i] as i32) + i128::from(c as i64);
                    (
                        p as u64,
                        p > i128::from(i64::MAX) || p < i128::from(i64::MIN),
                    )
                } else {
                    let p = u128::from(a[i]) * u128::from(b[i]) + u128::from(c);
                    (p as u64, p >> 64 != 0)
                };
                r[i] = v as u32;
                hi[i] = (v >> 32) as u32;
                carry |= u64::from(o) << i;
            }
            w.vwrite(op.d, &r, exec, pc)?;
            w.vwrite(op.d + 1, &hi, exec, pc)?;
            w.mask_set(op.sd as usize, carry & exec);
        }
        K::DivScale => {
            // Operands in the normal range need no scaling: d = src0, VCC = 0.
            let mut m = [[0u32; 64]; 3];
            for (k, mk) in m.iter_mut().enumerate() {
                let mut tmp = [0u32; 64];
                let s = w.vsrc(op.src[k], &mut tmp, pc)?;
                abs_neg(s, false, op.neg >> k & 1 != 0, mk);
            }
            w.vwrite(op.d, &m[0], exec, pc)?;
            w.mask_set(op.sd as usize, 0);
        }
        K::DivFmas => {
            let mut m = [[0u32; 64]; 3];
            for (k, mk) in m.iter_mut().enumerate() {
                let mut tmp = [0u32; 64];
                let s = w.vsrc(op.src[k], &mut tmp, pc)?;
                abs_neg(s, op.abs >> k & 1 != 0, op.neg >> k & 1 != 0, mk);
            }
            let vcc = w.mask_get(VCC);
            for i in 0..64 {
                let v = f32::from_bits(m[0][i])
                    .mul_add(f32::from_bits(m[1][i]), f32::from_bits(m[2][i]));
                // VCC set by v_div_scale: undo the 2^±64 pre-scaling (never set by our div_scale).
                r[i] = if vcc >> i & 1 != 0 {
                    ops::ldexp(v, 64).to_bits()
                } else {
                    v.to_bits()
                };
            }
            w.vwrite(op.d, &r, exec, pc)?;
        }
        K::DivFixup => {
            let mut m = [[0u32; 64]; 3];
            for (k, mk) in m.iter_mut().enumerate() {
                let mut tmp = [0u32; 64];
                let s = w.vsrc(op.src[k], &mut tmp, pc)?;
                abs_neg(s, op.abs >> k & 1 != 0, op.neg >> k & 1 != 0, mk);
            }
            for i in 0..64 {
                r[i] = div_fixup(
                    f32::from_bits(m[0][i]),
                    f32::from_bits(m[1][i]),
                    f32::from_bits(m[2][i]),
                )
                .to_bits();
            }
            w.vwrite(op.d, &r, exec, pc)?;
        }
        K::Readlane | K::Readfirstlane => {
            let Src::V(rg) = op.src[0] else {
                return Err(Fault::Illegal {
                    pc,
                    what: "readlane source is not a VGPR".into(),
                });
            };
            let lane = if matches!(op.k, K::Readlane) {
                (w.s32(op.src[1]) & (w.lanes - 1)) as usize
            } else if exec == 0 {
                0
            } else {
                exec.trailing_zeros() as usize
            };
            let v = w.vreg(rg, pc)?[lane];
            w.sset(op.d as usize, v);
        }
        K::Writelane => {
            let v = w.s32(op.src[0]);
            let lane = (w.s32(op.src[1]) & (w.lanes - 1)) as usize;
            let d =
                w.v.get_mut(op.d as usize)
                    .ok_or_else(|| vgpr_fault(pc, op.d))?;
            d[lane] = v;
        }
        K::MbcntLo | K::MbcntHi => {
            let a = *w.vsrc(op.src[0], &mut t0, pc)?;
            let b = *w.vsrc(op.src[1], &mut t1, pc)?;
            for i in 0..64usize {
                let m = match op.k {
                    K::MbcntLo => {
                        let n = i.min(32) as u32;
                        if n == 32 {
                            a[i]
                        } else {
                            a[i] & ((1u32 << n) - 1)
                        }
                    }
                    _ => {
                        if i < 32 {
                            0
                        } else {
                            a[i] & ((1u32 << (i - 32)) - 1)
                        }
                    }
                };
                r[i] = m.count_ones().wrapping_add(b[i]);
            }
            w.vwrite(op.d, &r, exec, pc)?;
        }
        K::V16(f, float, mask) => valu16(w, op, f, float, mask, pc, exec)?,
        K::Pk(f, float) => valu_packed(w, op, f, float, pc, exec)?,
        K::FmaMix(kind) => fma_mix(w, op, kind, pc, exec)?,
        _ => {
            return Err(Fault::Illegal {
                pc,
                what: format!("{} has no implementation in this position", op.opcode),
            })
        }
    }
    Ok(())
}

/// f16 values of the inline float constants (16-bit float operands read these, not the f32
/// ones).
fn inline16(c: u16) -> u32 {
    match c {
        240 => 0x3800,
        241 => 0xB800,
        242 => 0x3C00,
        243 => 0xBC00,
        244 => 0x4000,
        245 => 0xC000,
        246 => 0x4400,
        247 => 0xC400,
        248 => 0x3118,
        _ => inline32(c),
    }
}

/// The dwords of source `s` for every lane: a VGPR row, or a scalar, literal or constant
/// broadcast (inline float constants as f16 when `f16c`).
fn src_row(w: &Wave, s: Src, f16c: bool, pc: u64, out: &mut L) -> Result<(), Fault> {
    *out = match s {
        Src::V(r) => *w.vreg(r, pc)?,
        Src::Inline(c @ 240..=248) if f16c => [inline16(c); 64],
        Src::None => [0; 64],
        s => [w.s32(s); 64],
    };
    Ok(())
}

/// Reduces source `k`'s row to the 16-bit half `op.hi` picks, with abs/neg on bit 15.
fn half_in(row: &mut L, op: &Op, k: usize, n: usize) {
    let sh = if op.hi >> k & 1 != 0 { 16 } else { 0 };
    let abs = if op.abs >> k & 1 != 0 { 0x7FFF } else { 0xFFFF };
    let neg = if op.neg >> k & 1 != 0 { 0x8000 } else { 0 };
    for x in row[..n].iter_mut() {
        *x = ((*x >> sh) & abs) ^ neg;
    }
}

/// Puts the 16-bit values of `r` into the low (or high) half of VGPR `d`'s current value.
fn merge16(w: &Wave, d: u16, r: &mut L, hi: bool, pc: u64) -> Result<(), Fault> {
    let old = w.vreg(d, pc)?;
    for i in 0..w.lanes as usize {
        r[i] = if hi {
            (old[i] & 0xFFFF) | (r[i] << 16)
        } else {
            (old[i] & 0xFFFF_0000) | (r[i] & 0xFFFF)
        };
    }
    Ok(())
}

fn no_clamp(op: &Op, pc: u64) -> Result<(), Fault> {
    if op.clamp || op.omod != 0 {
        return Err(Fault::Illegal {
            pc,
            what: format!(
                "{}: clamp/omod on a 16-bit operation is not emulated",
                op.opcode
            ),
        });
    }
    Ok(())
}

/// A [`K::V16`] operation: 16-bit operands from the halves the instruction picks, a 16-bit
/// result into one half of the destination (the other half is kept).
fn valu16(
    w: &mut Wave,
    op: &Op,
    f: ops::VFn,
    float: bool,
    mask: u8,
    pc: u64,
    exec: u64,
) -> Result<(), Fault> {
    no_clamp(op, pc)?;
    let n = w.lanes as usize;
    let mut m = [[0u32; 64]; 3];
    for (k, row) in m.iter_mut().enumerate() {
        let half = mask >> k & 1 != 0;
        src_row(w, op.src[k], float && half, pc, row)?;
        if half {
            half_in(row, op, k, n);
        } else if op.abs | op.neg != 0 {
            let c = *row;
            abs_neg(&c, op.abs >> k & 1 != 0, op.neg >> k & 1 != 0, row);
        }
    }
    let mut r = [0u32; 64];
    f(&mut r, &m[0], &m[1], &m[2], n);
    if mask & 8 != 0 {
        merge16(w, op.d, &mut r, op.hi & 8 != 0, pc)?;
    }
    w.vwrite(op.d, &r, exec, pc)
}

/// A [`K::Pk`] operation: each half of the result from the source halves op_sel (low) and
/// op_sel_hi (high) pick, negated by neg_lo / neg_hi for float operations.
fn valu_packed(
    w: &mut Wave,
    op: &Op,
    f: ops::VFn,
    float: bool,
    pc: u64,
    exec: u64,
) -> Result<(), Fault> {
    let n = w.lanes as usize;
    let mut lo = [[0u32; 64]; 3];
    let mut hi = [[0u32; 64]; 3];
    let mut row = [0u32; 64];
    for k in 0..3 {
        src_row(w, op.src[k], float, pc, &mut row)?;
        let sl = if op.hi >> k & 1 != 0 { 16 } else { 0 };
        let sh = if op.hi2 >> k & 1 != 0 { 16 } else { 0 };
        let nl = if float && op.neg >> k & 1 != 0 {
            0x8000
        } else {
            0
        };
        let nh = if float && op.abs >> k & 1 != 0 {
            0x8000
        } else {
            0
        };
        for i in 0..n {
            lo[k][i] = ((row[i] >> sl) & 0xFFFF) ^ nl;
            hi[k][i] = ((row[i] >> sh) & 0xFFFF) ^ nh;
        }
    }
    let mut rl = [0u32; 64];
    let mut rh = [0u32; 64];
    f(&mut rl, &lo[0], &lo[1], &lo[2], n);
    f(&mut rh, &hi[0], &hi[1], &hi[2], n);
    for i in 0..n {
        row[i] = (rl[i] & 0xFFFF) | (rh[i] << 16);
    }
    w.vwrite(op.d, &row, exec, pc)
}

/// v_fma_mix*: each source is an f32, or (op_sel_hi) the f16 half op_sel picks; neg_lo
/// negates and neg_hi takes the absolute value; the exact a*b+c is rounded once to f32
/// (mix_f32) or to f16 in the low (mixlo) or high (mixhi) half of the destination.
fn fma_mix(w: &mut Wave, op: &Op, kind: u8, pc: u64, exec: u64) -> Result<(), Fault> {
    let n = w.lanes as usize;
    let mut v = [[0f64; 64]; 3];
    let mut row = [0u32; 64];
    for k in 0..3 {
        let f16 = op.hi2 >> k & 1 != 0;
        src_row(w, op.src[k], f16, pc, &mut row)?;
        let sh = if op.hi >> k & 1 != 0 { 16 } else { 0 };
        for i in 0..n {
            let mut x = if f16 {
                f64::from(ops::f16_to_f32((row[i] >> sh) as u16))
            } else {
                f64::from(f32::from_bits(row[i]))
            };
            if op.abs >> k & 1 != 0 {
                x = x.abs();
            }
            if op.neg >> k & 1 != 0 {
                x = -x;
            }
            v[k][i] = x;
        }
    }
    for i in 0..n {
        let x = ops::fma_odd(v[0][i] * v[1][i], v[2][i]);
        row[i] = match kind {
            0 => (x as f32).to_bits(),
            _ => u32::from(ops::f64_to_f16(x)),
        };
    }
    if kind != 0 {
        merge16(w, op.d, &mut row, kind == 2, pc)?;
    }
    w.vwrite(op.d, &row, exec, pc)
}

/// One half of a VOPD pair computed into `out` (lane ops and v_dual_cndmask_b32).
fn vopd_half(w: &Wave, h: &Op, out: &mut L, pc: u64) -> Result<(), Fault> {
    let mut t0 = [0u32; 64];
    let mut t1 = [0u32; 64];
    let mut t2 = [0u32; 64];
    let a = w.vsrc(h.src[0], &mut t0, pc)?;
    let b = w.vsrc(h.src[1], &mut t1, pc)?;
    match h.k {
        K::V(f, _) => {
            let c = w.vsrc(h.src[2], &mut t2, pc)?;
            f(out, a, b, c, w.lanes as usize);
        }
        K::Cndmask => {
            let mask = w.mask_get(VCC);
            for i in 0..64 {
                out[i] = if mask >> i & 1 != 0 { b[i] } else { a[i] };
            }
        }
        _ => {
            return Err(Fault::Illegal {
                pc,
                what: format!("VOPD half {} is not emulated", h.opcode),
            })
        }
    }
    Ok(())
}

/// Per-lane addresses of a FLAT/GLOBAL/SCRATCH instruction.
fn addresses(w: &Wave, op: &Op, pc: u64, exec: u64, out: &mut [u64; 64]) -> Result<(), Fault> {
    use traces::isa::Encoding as E;
    let saddr = op.imm1 as usize;
    let off = op.imm as i64 as u64;
    match op.enc {
        E::Scratch => {
            let sbase = if saddr == NULL {
                0
            } else {
                u64::from(w.sget(saddr))
            };
            let v = match op.src[0] {
                Src::V(r) => Some(w.vreg(r, pc)?),
                _ => None,
            };
            for i in 0..w.lanes as usize {
                if exec >> i & 1 != 0 {
                    let va = v.map(|v| u64::from(v[i])).unwrap_or(0);
                    out[i] = (u64::from(PRIVATE_HI) << 32)
                        | (sbase.wrapping_add(va).wrapping_add(off) & 0xFFFF_FFFF);
                }
            }
        }
        _ if saddr != NULL && saddr < 0x7C => {
            let base = w.s64(Src::S(saddr as u8), false);
            let Src::V(r) = op.src[0] else { return Ok(()) };
            let v = w.vreg(r, pc)?;
            for i in 0..w.lanes as usize {
                if exec >> i & 1 != 0 {
                    out[i] = base.wrapping_add(u64::from(v[i])).wrapping_add(off);
                }
            }
        }
        _ => {
            let Src::V(r) = op.src[0] else { return Ok(()) };
            let lo = w.vreg(r, pc)?;
            let hi = w.vreg(r + 1, pc)?;
            for i in 0..w.lanes as usize {
                if exec >> i & 1 != 0 {
                    out[i] = (u64::from(lo[i]) | (u64::from(hi[i]) << 32)).wrapping_add(off);
                }
            }
        }
    }
    Ok(())
}

/// Reads `out.len()` bytes from any space.
fn read_any(
    w: &Wave,
    cx: &Ctx<'_>,
    lane: usize,
    addr: u64,
    out: &mut [u8],
    pc: u64,
) -> Result<(), Fault> {
    match flat_space(addr) {
        Space::Global(a) => cx
            .mem
            .read(a, out)
            .map_err(|_| mem_fault(pc, a, out.len() as u64, "vector load")),
        Space::Lds(o) => {
            for (k, b) in out.iter_mut().enumerate() {
                *b = cx.lds.get(o as usize + k).copied().unwrap_or(0);
            }
            Ok(())
        }
        Space::Private(o) => {
            let base = lane * w.priv_bytes as usize;
            let end = o as usize + out.len();
            if end > w.priv_bytes as usize {
                return Err(mem_fault(
                    pc,
                    addr,
                    out.len() as u64,
                    "scratch access beyond the private segment",
                ));
            }
            let src = w
                .private
                .get(base + o as usize..base + end)
                .ok_or_else(|| mem_fault(pc, addr, out.len() as u64, "scratch"))?;
            out.copy_from_slice(src);
            Ok(())
        }
    }
}

fn write_any(
    w: &mut Wave,
    cx: &mut Ctx<'_>,
    lane: usize,
    addr: u64,
    data: &[u8],
    pc: u64,
) -> Result<(), Fault> {
    match flat_space(addr) {
        Space::Global(a) => cx
            .mem
            .write(a, data)
            .map_err(|_| mem_fault(pc, a, data.len() as u64, "vector store")),
        Space::Lds(o) => {
            for (k, b) in data.iter().enumerate() {
                if let Some(x) = cx.lds.get_mut(o as usize + k) {
                    *x = *b;
                }
            }
            Ok(())
        }
        Space::Private(o) => {
            let base = lane * w.priv_bytes as usize;
            let end = o as usize + data.len();
            if end > w.priv_bytes as usize {
                return Err(mem_fault(
                    pc,
                    addr,
                    data.len() as u64,
                    "scratch access beyond the private segment",
                ));
            }
            let dst = w
                .private
                .get_mut(base + o as usize..base + end)
                .ok_or_else(|| mem_fault(pc, addr, data.len() as u64, "scratch"))?;
            dst.copy_from_slice(data);
            Ok(())
        }
    }
}

/// The span of global addresses of the active lanes, if one read can serve them all.
fn span(addrs: &[u64; 64], exec: u64, lanes: u32, bytes: u64) -> Option<(u64, u64)> {
    let mut lo = u64::MAX;
    let mut hi = 0u64;
    let mut m = if lanes == 32 {
        exec & 0xFFFF_FFFF
    } else {
        exec
    };
    while m != 0 {
        let a = addrs[m.trailing_zeros() as usize];
        m &= m - 1;
        if !matches!(flat_space(a), Space::Global(_)) {
            return None;
        }
        lo = lo.min(a);
        hi = hi.max(a.checked_add(bytes)?);
    }
    (lo < hi && hi - lo <= 16384).then_some((lo, hi))
}

fn vmem_load(
    w: &mut Wave,
    cx: &mut Ctx<'_>,
    op: &Op,
    pc: u64,
    exec: u64,
    m: Mem,
) -> Result<(), Fault> {
    // The span buffer is the wave's, reused from load to load.
    let mut spanbuf = std::mem::take(&mut w.span_buf);
    let r = vmem_load_in(w, cx, op, pc, exec, m, &mut spanbuf);
    w.span_buf = spanbuf;
    r
}

fn vmem_load_in(
    w: &mut Wave,
    cx: &mut Ctx<'_>,
    op: &Op,
    pc: u64,
    exec: u64,
    m: Mem,
    spanbuf: &mut Vec<u8>,
) -> Result<(), Fault> {
    let mut addrs = [0u64; 64];
    addresses(w, op, pc, exec, &mut addrs)?;
    let bytes = u64::from(m.bytes);
    let sp = span(&addrs, exec, w.lanes, bytes);
    spanbuf.clear();
    if let Some((lo, hi)) = sp {
        spanbuf.resize((hi - lo) as usize, 0);
        if cx.mem.read(lo, spanbuf).is_err() {
            spanbuf.clear();
        }
    }
    let (d, dwords) = (op.d as usize, m.dwords as usize);
    let mask = exec & w.full();
    if let (Some((lo, _)), false, true, Some(dst)) = (
        sp,
        spanbuf.is_empty(),
        m.bytes >= 4,
        w.v.get_mut(d..d + dwords),
    ) {
        // Whole dwords from one read serving every lane, straight into the VGPRs.
        for (k, row) in dst.iter_mut().enumerate() {
            let mut e = mask;
            while e != 0 {
                let i = e.trailing_zeros() as usize;
                e &= e - 1;
                let o = (addrs[i] - lo) as usize + 4 * k;
                if let Some(&[b0, b1, b2, b3]) = spanbuf.get(o..o + 4) {
                    row[i] = u32::from_le_bytes([b0, b1, b2, b3]);
                }
            }
        }
    } else {
        let mut out = [[0u32; 64]; 4];
        let mut buf = [0u8; 16];
        vmem_load_lanes(w, cx, &addrs, pc, exec, m, sp, spanbuf, &mut out, &mut buf)?;
        if m.d16 != 0 {
            merge16(w, op.d, &mut out[0], m.d16 == 2, pc)?;
        }
        for k in 0..dwords {
            w.vwrite(op.d + k as u16, &out[k], exec, pc)?;
        }
    }
    vmem_issued(w, cx, &addrs, exec & w.full(), u64::from(m.bytes), false);
    flat_ds(w, op);
    Ok(())
}

/// [`vmem_load`] lane by lane (sub-dword elements, or lanes one read cannot serve).
#[allow(clippy::too_many_arguments)]
fn vmem_load_lanes(
    w: &Wave,
    cx: &Ctx<'_>,
    addrs: &[u64; 64],
    pc: u64,
    exec: u64,
    m: Mem,
    sp: Option<(u64, u64)>,
    spanbuf: &[u8],
    out: &mut [L; 4],
    buf: &mut [u8; 16],
) -> Result<(), Fault> {
    for i in 0..w.lanes as usize {
        if exec >> i & 1 == 0 {
            continue;
        }
        let b = &mut buf[..m.bytes as usize];
        match (sp, spanbuf.is_empty()) {
            (Some((lo, _)), false) => {
                let o = (addrs[i] - lo) as usize;
                b.copy_from_slice(&spanbuf[o..o + m.bytes as usize]);
            }
            _ => read_any(w, cx, i, addrs[i], b, pc)?,
        }
        if m.bytes >= 4 {
            for k in 0..m.dwords as usize {
                out[k][i] = u32::from_le_bytes([
                    buf[4 * k],
                    buf[4 * k + 1],
                    buf[4 * k + 2],
                    buf[4 * k + 3],
                ]);
            }
        } else {
            let v = if m.bytes == 1 {
                u32::from(buf[0])
            } else {
                u32::from(u16::from_le_bytes([buf[0], buf[1]]))
            };
            out[0][i] = match (m.signed, m.bytes) {
                (true, 1) => v as u8 as i8 as i32 as u32,
                (true, _) => v as u16 as i16 as i32 as u32,
                _ => v,
            };
        }
    }
    Ok(())
}

fn vmem_store(
    w: &mut Wave,
    cx: &mut Ctx<'_>,
    op: &Op,
    pc: u64,
    exec: u64,
    m: Mem,
) -> Result<(), Fault> {
    let mut addrs = [0u64; 64];
    addresses(w, op, pc, exec, &mut addrs)?;
    let Src::V(data) = op.src[1] else {
        return Ok(());
    };
    let mut regs = [[0u32; 64]; 4];
    for (k, r) in regs.iter_mut().enumerate().take(m.dwords as usize) {
        *r = *w.vreg(data + k as u16, pc)?;
    }
    if m.d16 == 2 {
        // d16_hi: the high half of the VGPR is stored.
        regs[0].iter_mut().for_each(|x| *x >>= 16);
    }
    let bytes = u64::from(m.bytes);
    let lane_bytes = |i: usize, buf: &mut [u8; 16]| {
        for k in 0..4 {
            buf[4 * k..4 * k + 4].copy_from_slice(&regs[k][i].to_le_bytes());
        }
    };
    let mut buf = [0u8; 16];
    if let Some((lo, hi)) = span(&addrs, exec, w.lanes, bytes) {
        let mut sb = vec![0u8; (hi - lo) as usize];
        if cx.mem.read(lo, &mut sb).is_ok() {
            for i in 0..w.lanes as usize {
                if exec >> i & 1 != 0 {
                    lane_bytes(i, &mut buf);
                    let o = (addrs[i] - lo) as usize;
                    sb[o..o + m.bytes as usize].copy_from_slice(&buf[..m.bytes as usize]);
                }
            }
            cx.mem
                .write(lo, &sb)
                .map_err(|_| mem_fault(pc, lo, hi - lo, "vector store"))?;
            vmem_issued(w, cx, &addrs, exec & w.full(), bytes, true);
            flat_ds(w, op);
            return Ok(());
        }
    }
    for i in 0..w.lanes as usize {
        if exec >> i & 1 != 0 {
            lane_bytes(i, &mut buf);
            let d = buf;
            write_any(w, cx, i, addrs[i], &d[..m.bytes as usize], pc)?;
        }
    }
    vmem_issued(w, cx, &addrs, exec & w.full(), bytes, true);
    flat_ds(w, op);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn vmem_atomic(
    w: &mut Wave,
    cx: &mut Ctx<'_>,
    op: &Op,
    pc: u64,
    exec: u64,
    a: At,
    rtn: bool,
    n: u8,
) -> Result<(), Fault> {
    let mut addrs = [0u64; 64];
    addresses(w, op, pc, exec, &mut addrs)?;
    let Src::V(data) = op.src[1] else {
        return Ok(());
    };
    let w64 = n == 2;
    let mut old_lo = [0u32; 64];
    let mut old_hi = [0u32; 64];
    for i in 0..w.lanes as usize {
        if exec >> i & 1 == 0 {
            continue;
        }
        let g = |w: &Wave, k: u16| -> Result<u32, Fault> { Ok(w.vreg(data + k, pc)?[i]) };
        let (src, cmp) = match (a, w64) {
            (At::Cmpswap, false) => (u64::from(g(w, 0)?), u64::from(g(w, 1)?)),
            (At::Cmpswap, true) => (
                u64::from(g(w, 0)?) | u64::from(g(w, 1)?) << 32,
                u64::from(g(w, 2)?) | u64::from(g(w, 3)?) << 32,
            ),
            (_, false) => (u64::from(g(w, 0)?), 0),
            (_, true) => (u64::from(g(w, 0)?) | u64::from(g(w, 1)?) << 32, 0),
        };
        let mut b = [0u8; 8];
        let len = 4 * n as usize;
        read_any(w, cx, i, addrs[i], &mut b[..len], pc)?;
        let old = u64::from_le_bytes(b);
        let new = atomic_op(a, old, src, cmp, w64);
        write_any(w, cx, i, addrs[i], &new.to_le_bytes()[..len], pc)?;
        old_lo[i] = old as u32;
        old_hi[i] = (old >> 32) as u32;
    }
    if rtn {
        w.vwrite(op.d, &old_lo, exec, pc)?;
        if w64 {
            w.vwrite(op.d + 1, &old_hi, exec, pc)?;
        }
    }
    // Atomics execute in L2: timed like stores, counted on vmcnt when they return data.
    let lat = access_latency(w, cx, &addrs, exec & w.full(), 4 * u64::from(n), true);
    if rtn {
        w.vm.push_back(w.time + lat);
    } else {
        w.vs.push_back(w.time + lat);
    }
    flat_ds(w, op);
    Ok(())
}

/// gfx12 FLAT instructions also count on dscnt (they may address LDS); clang waits for both
/// (completing with the access just counted on the vector counters).
#[inline]
fn flat_ds(w: &mut Wave, op: &Op) {
    if w.split_counters && op.enc == traces::isa::Encoding::Flat {
        let done =
            w.vm.back()
                .copied()
                .max(w.vs.back().copied())
                .unwrap_or(w.time);
        w.ds.push_back(done);
    }
}

/// The cycle model's latency of a vector access to `bytes` at each of the lanes of `mask`
/// (distinct 128-byte lines, through the WGP's L0 and the L2).
fn access_latency(
    w: &Wave,
    cx: &mut Ctx<'_>,
    addrs: &[u64; 64],
    mask: u64,
    bytes: u64,
    store: bool,
) -> u64 {
    let mut lines = [0u64; 128];
    let mut n = 0;
    let mut m = mask;
    while m != 0 {
        let i = m.trailing_zeros() as usize;
        m &= m - 1;
        let (a, b) = (addrs[i] >> 7, (addrs[i] + bytes.max(1) - 1) >> 7);
        for l in [a, b] {
            // Neighbouring lanes mostly share the last line seen.
            if (n > 0 && lines[n - 1] == l) || lines[..n].contains(&l) {
                continue;
            }
            if n < lines.len() {
                lines[n] = l;
                n += 1;
            }
        }
    }
    let lines = &mut lines[..n];
    lines.sort_unstable();
    cx.timing.vector(w.unit as usize, w.time, lines, store)
}

/// Counts a vector load (vmcnt) or store (vscnt) issued now, completing after the cycle
/// model's latency for its addresses.
fn vmem_issued(
    w: &mut Wave,
    cx: &mut Ctx<'_>,
    addrs: &[u64; 64],
    mask: u64,
    bytes: u64,
    store: bool,
) {
    let lat = access_latency(w, cx, addrs, mask, bytes, store);
    if store {
        w.vs.push_back(w.time + lat);
    } else {
        w.vm.push_back(w.time + lat);
    }
}

/// Whether an instruction class issues through its SIMD's VALU.
#[inline]
fn is_valu(c: Class) -> bool {
    matches!(
        c,
        Class::Valu
            | Class::ValuCmpx
            | Class::ValuTrans
            | Class::Valu64
            | Class::Valu64Shift
            | Class::ValuMad64
            | Class::Wmma
    )
}

/// Records when the result of an instruction issued at `t` is ready (`s_delay_alu` reads it).
#[inline]
fn track_ready(w: &mut Wave, c: Class, t: u64) {
    let push = |r: &mut [u64], v: u64| {
        r.rotate_right(1);
        r[0] = v;
    };
    match c {
        Class::ValuTrans => {
            let done = t + cycles::TRANS_DEP_LATENCY;
            push(&mut w.trans_ready, done);
            push(&mut w.valu_ready, done);
        }
        c if is_valu(c) => {
            let done = t + c.issue(w.lanes).max(1) - 1 + cycles::VALU_DEP_LATENCY;
            push(&mut w.valu_ready, done);
        }
        Class::Salu | Class::SaluSaveexec => push(&mut w.salu_ready, t + 1),
        _ => {}
    }
}

/// `s_delay_alu` (simm16: instid0 [3:0], instskip [6:4], instid1 [10:7]): the next
/// instruction waits for the result instid0 names, the one instskip after it for instid1's.
fn delay_alu(w: &mut Wave, v: u32) {
    let ready = |w: &Wave, id: u32| -> u64 {
        match id {
            1..=4 => w.valu_ready[(id - 1) as usize],
            5..=7 => w.trans_ready[(id - 5) as usize],
            // FMA_ACCUM_CYCLE_1: one cycle after the last VALU issued.
            8 => w.valu_ready[0].saturating_sub(cycles::VALU_DEP_LATENCY - 1),
            // SALU_CYCLE_1..3.
            9..=11 => w.salu_ready[0] + u64::from(id - 9),
            _ => 0,
        }
    };
    let (id0, skip, id1) = (v & 0xF, v >> 4 & 7, v >> 7 & 0xF);
    w.delay_next = ready(w, id0);
    let t1 = ready(w, id1);
    if skip == 0 {
        w.delay_next = w.delay_next.max(t1);
    } else if id1 != 0 {
        w.delay_later = (skip as u8, t1);
    }
}

/// Applies a pending `s_delay_alu` wait to the instruction about to issue.
#[inline]
fn apply_delay(w: &mut Wave) {
    if w.delay_next > w.time {
        w.time = w.delay_next;
    }
    w.delay_next = 0;
    if w.delay_later.0 > 0 {
        w.delay_later.0 -= 1;
        if w.delay_later.0 == 0 {
            w.delay_next = w.delay_later.1;
        }
    }
}

/// Reads LDS bytes; bytes beyond the allocation read as 0.
#[inline]
fn lds_read(lds: &[u8], a: usize, out: &mut [u8]) {
    if let Some(src) = lds.get(a..a + out.len()) {
        out.copy_from_slice(src);
        return;
    }
    for (k, b) in out.iter_mut().enumerate() {
        *b = lds.get(a + k).copied().unwrap_or(0);
    }
}

/// One LDS dword (little-endian), as [`lds_read`] of 4 bytes.
#[inline]
fn lds_read32(lds: &[u8], a: usize) -> u32 {
    match lds.get(a..a + 4) {
        Some(&[b0, b1, b2, b3]) => u32::from_le_bytes([b0, b1, b2, b3]),
        _ => {
            let mut b = [0u8; 4];
            lds_read(lds, a, &mut b);
            u32::from_le_bytes(b)
        }
    }
}

/// Writes LDS bytes; bytes beyond the allocation are dropped.
#[inline]
fn lds_write(lds: &mut [u8], a: u32, data: &[u8]) {
    let a = a as usize;
    if let Some(dst) = lds.get_mut(a..a + data.len()) {
        dst.copy_from_slice(data);
        return;
    }
    for (k, b) in data.iter().enumerate() {
        if let Some(x) = lds.get_mut(a + k) {
            *x = *b;
        }
    }
}

/// The LDS bank cycles of a DS instruction from its per-lane addresses ([`crate::lds_banks`]).
fn lds_cycles(
    op: &Op,
    addr: &L,
    off16: u32,
    lanes: usize,
    exec: u64,
) -> crate::lds_banks::LdsCycles {
    use crate::lds_banks::cycles;
    let at = |l: usize, o: u32| addr[l].wrapping_add(o);
    match op.k {
        K::DsLoad(m) | K::DsStore(m) => {
            let n = usize::from(m.dwords.max(1));
            cycles(lanes, exec, n, |l, k| at(l, off16) + 4 * k as u32)
        }
        K::DsLoad2(n, s64) | K::DsStore2(n, s64) => {
            let sz = 4 * u32::from(n) * if s64 { 64 } else { 1 };
            let (o0, o1) = (op.imm as u32 * sz, op.imm1 as u32 * sz);
            let n = usize::from(n);
            cycles(lanes, exec, 2 * n, |l, k| {
                let (o, k) = if k < n { (o0, k) } else { (o1, k - n) };
                at(l, o) + 4 * k as u32
            })
        }
        K::DsAtomic(..) => cycles(lanes, exec, 1, |l, _| at(l, off16)),
        // The crossbar, no bank: one pass per 32 lanes.
        _ => cycles(lanes, 0, 1, |_, _| 0),
    }
}

fn ds(w: &mut Wave, cx: &mut Ctx<'_>, op: &Op, pc: u64, exec: u64) -> Result<(), Fault> {
    let Src::V(ar) = op.src[0] else { return Ok(()) };
    let addr = *w.vreg(ar, pc)?;
    let off16 = (op.imm as u32) | ((op.imm1 as u32) << 8);
    let lanes = w.lanes as usize;
    w.pmc.lds_access(lds_cycles(op, &addr, off16, lanes, exec));
    let data = |w: &Wave, k: usize, n: u16| -> Result<L, Fault> {
        match op.src[k] {
            Src::V(r) => Ok(*w.vreg(r + n, pc)?),
            _ => Ok([0; 64]),
        }
    };
    match op.k {
        K::DsBpermute | K::DsSwizzle => {
            // Inactive source lanes read as 0 (the ISA's `tmp` copy takes active lanes only).
            let src = if matches!(op.k, K::DsBpermute) {
                data(w, 1, 0)?
            } else {
                addr
            };
            let mut out = [0u32; 64];
            for i in 0..lanes {
                if exec >> i & 1 == 0 {
                    continue;
                }
                let j = if matches!(op.k, K::DsBpermute) {
                    (addr[i].wrapping_add(off16) >> 2) as usize & (lanes - 1)
                } else if off16 >= 0xC000 {
                    // Rotate (0xC000..) and FFT (0xE000..) modes.
                    return Err(Fault::Illegal {
                        pc,
                        what: format!("ds_swizzle_b32 offset {off16:#x}: mode not emulated"),
                    });
                } else if off16 & 0x8000 != 0 {
                    // Quad permute: lane i takes lane (i & !3) + off[2(i%4)+1 : 2(i%4)].
                    (i & !3) + ((off16 >> (2 * (i & 3))) & 3) as usize
                } else {
                    // Bit-mask mode within groups of 32: ((i & and) | or) ^ xor.
                    let (and, or, xor) = (off16 & 0x1F, (off16 >> 5) & 0x1F, (off16 >> 10) & 0x1F);
                    (i & !31) | ((((i as u32 & 31) & and) | or) ^ xor) as usize
                };
                out[i] = if exec >> j & 1 != 0 { src[j] } else { 0 };
            }
            w.vwrite(op.d, &out, exec, pc)?;
        }
        K::DsLoad(m) => {
            let mut out = [[0u32; 64]; 4];
            let mut buf = [0u8; 16];
            for i in 0..lanes {
                if exec >> i & 1 == 0 {
                    continue;
                }
                let b = &mut buf[..m.bytes as usize];
                lds_read(cx.lds, addr[i].wrapping_add(off16) as usize, b);
                if m.bytes >= 4 {
                    for k in 0..m.dwords as usize {
                        out[k][i] = u32::from_le_bytes([
                            buf[4 * k],
                            buf[4 * k + 1],
                            buf[4 * k + 2],
                            buf[4 * k + 3],
                        ]);
                    }
                } else {
                    let v = if m.bytes == 1 {
                        u32::from(buf[0])
                    } else {
                        u32::from(u16::from_le_bytes([buf[0], buf[1]]))
                    };
                    out[0][i] = match (m.signed, m.bytes) {
                        (true, 1) => v as u8 as i8 as i32 as u32,
                        (true, _) => v as u16 as i16 as i32 as u32,
                        _ => v,
                    };
                }
            }
            if m.d16 != 0 {
                merge16(w, op.d, &mut out[0], m.d16 == 2, pc)?;
            }
            for k in 0..m.dwords as usize {
                w.vwrite(op.d + k as u16, &out[k], exec, pc)?;
            }
        }
        K::DsStore(m) => {
            let mut regs = [[0u32; 64]; 4];
            for (k, r) in regs.iter_mut().enumerate().take(m.dwords as usize) {
                *r = data(w, 1, k as u16)?;
            }
            if m.d16 == 2 {
                regs[0].iter_mut().for_each(|x| *x >>= 16);
            }
            for i in 0..lanes {
                if exec >> i & 1 == 0 {
                    continue;
                }
                let mut buf = [0u8; 16];
                for k in 0..4 {
                    buf[4 * k..4 * k + 4].copy_from_slice(&regs[k][i].to_le_bytes());
                }
                lds_write(
                    cx.lds,
                    addr[i].wrapping_add(off16),
                    &buf[..m.bytes as usize],
                );
            }
        }
        K::DsLoad2(n, s64) => {
            let sz = 4 * u32::from(n) * if s64 { 64 } else { 1 };
            let (o0, o1) = (op.imm as u32 * sz, op.imm1 as u32 * sz);
            let (d, n) = (op.d as usize, n as usize);
            let (mask, full) = (exec & w.full(), w.full());
            if let Some(dst) = w.v.get_mut(d..d + 2 * n) {
                // The address was copied out first, so results can go straight to the VGPRs.
                let lds = &*cx.lds;
                let (first, second) = dst.split_at_mut(n);
                let lanes = lanes.min(64);
                for k in 0..n {
                    let (r0, r1) = (&mut first[k], &mut second[k]);
                    if mask == full {
                        for i in 0..lanes {
                            let a = addr[i];
                            r0[i] = lds_read32(lds, a.wrapping_add(o0) as usize + 4 * k);
                            r1[i] = lds_read32(lds, a.wrapping_add(o1) as usize + 4 * k);
                        }
                        continue;
                    }
                    let mut m = mask;
                    while m != 0 {
                        let i = m.trailing_zeros() as usize;
                        m &= m - 1;
                        let a = addr[i];
                        r0[i] = lds_read32(lds, a.wrapping_add(o0) as usize + 4 * k);
                        r1[i] = lds_read32(lds, a.wrapping_add(o1) as usize + 4 * k);
                    }
                }
                return Ok(());
            }
            let mut out = [[0u32; 64]; 4];
            let mut m = exec & w.full();
            while m != 0 {
                let i = m.trailing_zeros() as usize;
                m &= m - 1;
                for (h, o) in [o0, o1].into_iter().enumerate() {
                    let a = addr[i].wrapping_add(o) as usize;
                    for k in 0..n {
                        out[h * n + k][i] = lds_read32(cx.lds, a + 4 * k);
                    }
                }
            }
            for k in 0..2 * n {
                w.vwrite(op.d + k as u16, &out[k], exec, pc)?;
            }
        }
        K::DsStore2(n, s64) => {
            let sz = 4 * u32::from(n) * if s64 { 64 } else { 1 };
            let (o0, o1) = (op.imm as u32 * sz, op.imm1 as u32 * sz);
            let mut d = [[0u32; 64]; 4];
            for k in 0..n as usize {
                d[k] = data(w, 1, k as u16)?;
                d[2 + k] = data(w, 2, k as u16)?;
            }
            for i in 0..lanes {
                if exec >> i & 1 == 0 {
                    continue;
                }
                for (h, o) in [o0, o1].into_iter().enumerate() {
                    for k in 0..n as usize {
                        lds_write(
                            cx.lds,
                            addr[i].wrapping_add(o) + 4 * k as u32,
                            &d[2 * h + k][i].to_le_bytes(),
                        );
                    }
                }
            }
        }
        K::DsAtomic(a, rtn) => {
            let s = data(w, 1, 0)?;
            let c = data(w, 2, 0)?;
            let mut old = [0u32; 64];
            for i in 0..lanes {
                if exec >> i & 1 == 0 {
                    continue;
                }
                let ad = addr[i].wrapping_add(off16);
                let mut b = [0u8; 4];
                lds_read(cx.lds, ad as usize, &mut b);
                let o = u32::from_le_bytes(b);
                // ds_cmpstore: data0 is the compare value, data1 the new one.
                let (src, cmp) = if a == At::Cmpswap {
                    (u64::from(c[i]), u64::from(s[i]))
                } else {
                    (u64::from(s[i]), 0)
                };
                let n = atomic_op(a, u64::from(o), src, cmp, false) as u32;
                lds_write(cx.lds, ad, &n.to_le_bytes());
                old[i] = o;
            }
            if rtn {
                w.vwrite(op.d, &old, exec, pc)?;
            }
        }
        _ => {}
    }
    Ok(())
}
