//! Instruction semantics by operation ([`Opcode`](traces::isa::Opcode)): the [`K`] an
//! instruction executes as, and its timing [`Class`]. Lane-wise VALU operations are monomorphised `fn` items over 64 lanes so the
//! interpreter loop calls one function per instruction, not one per lane.

use traces::isa::{Encoding, Opcode as O};

use crate::cycles::Class;

pub type L = [u32; 64];
/// A lane-wise 32-bit VALU operation: `d[i] = f(a[i], b[i], c[i])` for the first `n` lanes
/// (32 or 64: the wave size; lanes beyond it are left as they are).
pub type VFn = fn(&mut L, &L, &L, &L, usize);
/// A scalar operation on (src0, src1, scc) giving (result, new scc if it changes).
pub type SFn = fn(u64, u64, bool) -> (u64, Option<bool>);
/// A 64-bit lane operation.
pub type V64Fn = fn(u64, u64, u64) -> u64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Br {
    Always,
    Scc0,
    Scc1,
    Vccz,
    Vccnz,
    Execz,
    Execnz,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    F,
    Lt,
    Eq,
    Le,
    Gt,
    Ne,
    Ge,
    T,
    O,
    U,
    Nge,
    Nlg,
    Ngt,
    Nle,
    Neq,
    Nlt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    F32,
    I32,
    U32,
    F64,
    I64,
    U64,
    I16,
    U16,
    F16,
}

/// Memory element: bytes per lane access and sign extension for sub-dword loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mem {
    pub bytes: u8,
    pub signed: bool,
    pub dwords: u8,
    /// The d16 forms: 0 none; 1 the low, 2 the high 16 bits of the VGPR are loaded (the other
    /// half is kept) or stored.
    pub d16: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    Add,
    Sub,
    Min,
    Max,
    Umin,
    Umax,
    And,
    Or,
    Xor,
    Swap,
    Inc,
    Dec,
    Cmpswap,
    AddF32,
}

/// The counters of a gfx12 `s_wait_*` instruction (simm16 layout: one count in [5:0], or for
/// the combined forms loadcnt/storecnt in [13:8] and dscnt in [5:0]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum W12 {
    Load,
    Store,
    Km,
    Ds,
    LoadDs,
    StoreDs,
}

/// What an instruction does.
#[derive(Debug, Clone, Copy)]
pub enum K {
    Nop,
    SNop,
    Waitcnt,
    WaitVs,
    /// gfx12 `s_wait_*cnt`: which counters the simm16 bounds.
    Wait12(W12),
    Endpgm,
    Barrier,
    Branch(Br),
    /// s_getpc_b64
    Getpc,
    /// s_setpc_b64 / s_swappc_b64 are not emulated (reported).
    /// Scalar op; bit 0: src0 64-bit, 1: src1 64-bit, 2: dst 64-bit.
    S(SFn, u8),
    /// Compare to SCC; 64-bit operands when the flag is set.
    Sc(fn(u64, u64) -> bool, bool),
    /// s_*_saveexec: dst = exec; exec = f(src, exec); scc = exec != 0.
    Saveexec(fn(u64, u64) -> u64, bool),
    Movk,
    Cmovk,
    Addk,
    Mulk,
    Cmpk(fn(u64, u64) -> bool, bool),
    /// s_load_b32..b512 (dwords).
    Smem(u8),
    /// Lane-wise 32-bit; float result (clamp/omod apply).
    V(VFn, bool),
    /// 64-bit lane op: bit 0/1/2 = src0/1/2 are 64-bit, bit 3 = 32-bit result (the cvt to
    /// 32-bit forms); float result flag.
    V64(V64Fn, u8, bool),
    Cmp(Cmp, Ty, bool),
    CmpClass(bool),
    Cndmask,
    /// carry-out add/sub: (sub, reversed)
    AddCo(bool, bool),
    /// carry-in add/sub
    AddCoCi(bool, bool),
    MadU64U32(bool),
    DivScale,
    DivFmas,
    DivFixup,
    Readlane,
    Readfirstlane,
    Writelane,
    MbcntLo,
    MbcntHi,
    /// 16-bit lane op on the halves the true16 register bit or op_sel picks: `f` sees 16-bit
    /// values (zero-extended) for the operands in the mask (bit k: src k, bit 3: dst, whose
    /// other half is kept) and whole dwords for the others; float flag.
    V16(VFn, bool, u8),
    /// VOP3P packed op: `f` computes each 16-bit half from the halves op_sel / op_sel_hi pick.
    Pk(VFn, bool),
    /// v_fma_mix_f32 (0), v_fma_mixlo_f16 (1), v_fma_mixhi_f16 (2): f32 or f16 sources
    /// (op_sel_hi), one rounding.
    FmaMix(u8),
    GLoad(Mem),
    GStore(Mem),
    GAtomic(At, bool, u8),
    DsLoad(Mem),
    DsStore(Mem),
    /// two addresses: dwords per element, stride64
    DsLoad2(u8, bool),
    DsStore2(u8, bool),
    DsAtomic(At, bool),
    /// ds_bpermute_b32: each lane reads DATA0 of lane (ADDR + offset) / 4.
    DsBpermute,
    /// ds_swizzle_b32: lanes exchange ADDR's value as the offset's pattern says.
    DsSwizzle,
    /// Cache invalidates/writebacks: no effect on the emulated (coherent) memory.
    CacheOp,
    /// s_delay_alu: the dependency waits of the next instructions (cycle model only).
    DelayAlu,
    /// v_wmma_* (the form; gfx12 operand layout).
    Wmma(super::ext::Wm, bool),
    /// A DPP instruction: the operation is in `Op::y`, the control in `imm`/`imm1`.
    Dpp,
    /// f64 division steps and class compare (lane masks besides VGPRs).
    F64x(super::ext::F64x),
    /// MUBUF/MTBUF load or store (store flag).
    Buf(Mem, bool),
}

/// Whether `op` is a VALU comparison the emulator runs (its result is a lane mask).
pub fn is_cmp(op: O) -> bool {
    vcmp(op).is_some()
}

macro_rules! vf {
    (|$a:ident, $b:ident, $c:ident| $e:expr) => {{
        fn f(d: &mut L, a: &L, b: &L, c: &L, n: usize) {
            // A constant trip count per wave size lets the loop vectorize fully.
            #[inline(always)]
            #[allow(unused_variables, clippy::redundant_closure_call)]
            fn go<const N: usize>(d: &mut L, a: &L, b: &L, c: &L) {
                for i in 0..N {
                    let ($a, $b, $c) = (a[i], b[i], c[i]);
                    d[i] = $e;
                }
            }
            if n <= 32 {
                go::<32>(d, a, b, c)
            } else {
                go::<64>(d, a, b, c)
            }
        }
        f as VFn
    }};
}

macro_rules! sf {
    (|$a:ident, $b:ident, $s:ident| $e:expr) => {{
        #[allow(unused_variables)]
        fn f($a: u64, $b: u64, $s: bool) -> (u64, Option<bool>) {
            $e
        }
        f as SFn
    }};
}

#[inline]
pub fn fl(x: u32) -> f32 {
    f32::from_bits(x)
}
#[inline]
pub fn fb(x: f32) -> u32 {
    x.to_bits()
}
#[inline]
fn dl(x: u64) -> f64 {
    f64::from_bits(x)
}

/// `v_fma_f32`: one fused multiply-add per lane (correctly rounded, like the hardware). Where
/// the build targets no FMA unit, `mul_add` is a library call per lane; a CPU-specific fast path
/// would need `unsafe`, which this crate keeps to its mmap/ioctl/MMIO layer.
fn fma_f32(d: &mut L, a: &L, b: &L, c: &L, n: usize) {
    for i in 0..n.min(64) {
        d[i] = fb(fl(a[i]).mul_add(fl(b[i]), fl(c[i])));
    }
}

/// IEEE-754 minNum/maxNum as the hardware does in IEEE mode (a NaN operand yields the other).
fn fmin(a: f32, b: f32) -> f32 {
    a.min(b)
}
fn fmax(a: f32, b: f32) -> f32 {
    a.max(b)
}
fn med3(a: f32, b: f32, c: f32) -> f32 {
    fmax(fmin(a, b), fmin(fmax(a, b), c))
}

fn bfe_u(v: u32, off: u32, w: u32) -> u32 {
    let (o, w) = (off & 31, w & 31);
    if w == 0 {
        0
    } else if o + w < 32 {
        (v >> o) & ((1 << w) - 1)
    } else {
        v >> o
    }
}
fn bfe_i(v: u32, off: u32, w: u32) -> u32 {
    let (o, w) = (off & 31, w & 31);
    if w == 0 {
        0
    } else if o + w < 32 {
        (((v << (32 - o - w)) as i32) >> (32 - w)) as u32
    } else {
        ((v as i32) >> o) as u32
    }
}

fn cnd(b: bool) -> Option<bool> {
    Some(b)
}

fn scalar(op: O) -> Option<(K, Class)> {
    use Class::Salu as C;
    let s = |f: SFn, w: u8| Some((K::S(f, w), C));
    match op {
        O::SMovB32 => s(sf!(|a, b, s| (a, None)), 0),
        O::SMovB64 => s(sf!(|a, b, s| (a, None)), 0b101),
        O::SCmovB32 => None,
        O::SNotB32 => s(sf!(|a, b, s| (!a & 0xFFFF_FFFF, cnd(!a as u32 != 0))), 0),
        O::SNotB64 => s(sf!(|a, b, s| (!a, cnd(!a != 0))), 0b101),
        O::SBrevB32 => s(sf!(|a, b, s| ((a as u32).reverse_bits() as u64, None)), 0),
        O::SBcnt1I32B32 => s(
            sf!(|a, b, s| {
                let r = (a as u32).count_ones() as u64;
                (r, cnd(r != 0))
            }),
            0,
        ),
        O::SBcnt1I32B64 => s(
            sf!(|a, b, s| {
                let r = a.count_ones() as u64;
                (r, cnd(r != 0))
            }),
            0b001,
        ),
        O::SCtzI32B32 => s(
            sf!(|a, b, s| {
                let a = a as u32;
                (
                    if a == 0 {
                        0xFFFF_FFFF
                    } else {
                        a.trailing_zeros() as u64
                    },
                    None,
                )
            }),
            0,
        ),
        O::SCtzI32B64 => s(
            sf!(|a, b, s| {
                (
                    if a == 0 {
                        0xFFFF_FFFF
                    } else {
                        a.trailing_zeros() as u64
                    },
                    None,
                )
            }),
            0b001,
        ),
        O::SClzI32U32 => s(
            sf!(|a, b, s| {
                let a = a as u32;
                (
                    if a == 0 {
                        0xFFFF_FFFF
                    } else {
                        a.leading_zeros() as u64
                    },
                    None,
                )
            }),
            0,
        ),
        O::SSextI32I8 => s(sf!(|a, b, s| (a as u8 as i8 as i32 as u32 as u64, None)), 0),
        O::SSextI32I16 => s(
            sf!(|a, b, s| (a as u16 as i16 as i32 as u32 as u64, None)),
            0,
        ),
        O::SAbsI32 => s(
            sf!(|a, b, s| {
                let r = (a as i32).unsigned_abs() as u64;
                (r, cnd(r != 0))
            }),
            0,
        ),
        O::SAddU32 => s(
            sf!(|a, b, s| {
                let r = (a as u32 as u64) + (b as u32 as u64);
                (r & 0xFFFF_FFFF, cnd(r >> 32 != 0))
            }),
            0,
        ),
        O::SAddcU32 => s(
            sf!(|a, b, s| {
                let r = (a as u32 as u64) + (b as u32 as u64) + s as u64;
                (r & 0xFFFF_FFFF, cnd(r >> 32 != 0))
            }),
            0,
        ),
        O::SSubU32 => s(
            sf!(|a, b, s| {
                let (a, b) = (a as u32, b as u32);
                (a.wrapping_sub(b) as u64, cnd(b > a))
            }),
            0,
        ),
        O::SSubbU32 => s(
            sf!(|a, b, s| {
                let (a, b) = (a as u32 as u64, b as u32 as u64 + s as u64);
                (a.wrapping_sub(b) & 0xFFFF_FFFF, cnd(b > a))
            }),
            0,
        ),
        O::SAddI32 => s(
            sf!(|a, b, s| {
                let (r, o) = (a as i32).overflowing_add(b as i32);
                (r as u32 as u64, cnd(o))
            }),
            0,
        ),
        O::SSubI32 => s(
            sf!(|a, b, s| {
                let (r, o) = (a as i32).overflowing_sub(b as i32);
                (r as u32 as u64, cnd(o))
            }),
            0,
        ),
        O::SMinI32 => s(
            sf!(|a, b, s| {
                let lt = (a as i32) < (b as i32);
                (if lt { a } else { b } & 0xFFFF_FFFF, cnd(lt))
            }),
            0,
        ),
        O::SMaxI32 => s(
            sf!(|a, b, s| {
                let gt = (a as i32) > (b as i32);
                (if gt { a } else { b } & 0xFFFF_FFFF, cnd(gt))
            }),
            0,
        ),
        O::SMinU32 => s(
            sf!(|a, b, s| {
                let lt = (a as u32) < (b as u32);
                (if lt { a } else { b } & 0xFFFF_FFFF, cnd(lt))
            }),
            0,
        ),
        O::SMaxU32 => s(
            sf!(|a, b, s| {
                let gt = (a as u32) > (b as u32);
                (if gt { a } else { b } & 0xFFFF_FFFF, cnd(gt))
            }),
            0,
        ),
        O::SLshlB32 => s(
            sf!(|a, b, s| {
                let r = ((a as u32) << (b & 31)) as u64;
                (r, cnd(r != 0))
            }),
            0,
        ),
        O::SLshlB64 => s(
            sf!(|a, b, s| {
                let r = a << (b & 63);
                (r, cnd(r != 0))
            }),
            0b101,
        ),
        O::SLshrB32 => s(
            sf!(|a, b, s| {
                let r = ((a as u32) >> (b & 31)) as u64;
                (r, cnd(r != 0))
            }),
            0,
        ),
        O::SLshrB64 => s(
            sf!(|a, b, s| {
                let r = a >> (b & 63);
                (r, cnd(r != 0))
            }),
            0b101,
        ),
        O::SAshrI32 => s(
            sf!(|a, b, s| {
                let r = ((a as i32) >> (b & 31)) as u32 as u64;
                (r, cnd(r != 0))
            }),
            0,
        ),
        O::SAshrI64 => s(
            sf!(|a, b, s| {
                let r = ((a as i64) >> (b & 63)) as u64;
                (r, cnd(r != 0))
            }),
            0b101,
        ),
        O::SLshl1AddU32 | O::SLshl2AddU32 | O::SLshl3AddU32 | O::SLshl4AddU32 => {
            let f = match op {
                O::SLshl1AddU32 => sf!(|a, b, s| lsh_add(a, b, 1)),
                O::SLshl2AddU32 => sf!(|a, b, s| lsh_add(a, b, 2)),
                O::SLshl3AddU32 => sf!(|a, b, s| lsh_add(a, b, 3)),
                _ => sf!(|a, b, s| lsh_add(a, b, 4)),
            };
            s(f, 0)
        }
        O::SAndB32 | O::SAndB64 => s(sf!(|a, b, s| (a & b, cnd(a & b != 0))), w64(op)),
        O::SOrB32 | O::SOrB64 => s(sf!(|a, b, s| (a | b, cnd(a | b != 0))), w64(op)),
        O::SXorB32 | O::SXorB64 => s(sf!(|a, b, s| (a ^ b, cnd(a ^ b != 0))), w64(op)),
        O::SAndNot1B32 | O::SAndNot1B64 => s(sf!(|a, b, s| (a & !b, cnd(a & !b != 0))), w64(op)),
        O::SOrNot1B32 | O::SOrNot1B64 => s(
            sf!(|a, b, s| {
                let r = a | !b;
                (r, cnd(r != 0))
            }),
            w64(op),
        ),
        O::SNandB32 | O::SNandB64 => s(sf!(|a, b, s| (!(a & b), cnd(!(a & b) != 0))), w64(op)),
        O::SNorB32 | O::SNorB64 => s(sf!(|a, b, s| (!(a | b), cnd(!(a | b) != 0))), w64(op)),
        O::SXnorB32 | O::SXnorB64 => s(sf!(|a, b, s| (!(a ^ b), cnd(!(a ^ b) != 0))), w64(op)),
        O::SMulI32 => s(
            sf!(|a, b, s| ((a as u32).wrapping_mul(b as u32) as u64, None)),
            0,
        ),
        O::SMulHiU32 => s(
            sf!(|a, b, s| (((a as u32 as u64) * (b as u32 as u64)) >> 32, None)),
            0,
        ),
        O::SMulHiI32 => s(
            sf!(|a, b, s| {
                let r = (a as i32 as i64) * (b as i32 as i64);
                ((r >> 32) as u32 as u64, None)
            }),
            0,
        ),
        O::SCselectB32 => s(sf!(|a, b, s| (if s { a } else { b }, None)), 0),
        O::SCselectB64 => s(sf!(|a, b, s| (if s { a } else { b }, None)), 0b111),
        O::SBfeU32 => s(
            sf!(|a, b, s| {
                let r = bfe_u(a as u32, b as u32 & 31, (b as u32 >> 16) & 0x7F) as u64;
                (r, cnd(r != 0))
            }),
            0,
        ),
        O::SBfeI32 => s(
            sf!(|a, b, s| {
                let r = bfe_i(a as u32, b as u32 & 31, (b as u32 >> 16) & 0x7F) as u64;
                (r, cnd(r != 0))
            }),
            0,
        ),
        O::SBfmB32 => s(
            sf!(|a, b, s| {
                let w = a as u32 & 31;
                let m = if w == 0 { 0 } else { (1u32 << w) - 1 };
                ((m << (b as u32 & 31)) as u64, None)
            }),
            0,
        ),
        O::SPackLlB32B16 => s(
            sf!(|a, b, s| ((a & 0xFFFF) | ((b & 0xFFFF) << 16), None)),
            0,
        ),
        O::SPackLhB32B16 => s(sf!(|a, b, s| ((a & 0xFFFF) | (b & 0xFFFF_0000), None)), 0),
        O::SPackHhB32B16 => s(
            sf!(|a, b, s| (((a >> 16) & 0xFFFF) | (b & 0xFFFF_0000), None)),
            0,
        ),
        _ => None,
    }
}

fn lsh_add(a: u64, b: u64, n: u32) -> (u64, Option<bool>) {
    let r = ((a as u32 as u64) << n) + (b as u32 as u64);
    (r & 0xFFFF_FFFF, cnd(r >> 32 != 0))
}

/// `0b111` (64-bit operands and result) for the 64-bit forms of the bitwise scalar operations.
fn w64(op: O) -> u8 {
    if matches!(
        op,
        O::SAndB64
            | O::SOrB64
            | O::SXorB64
            | O::SAndNot1B64
            | O::SOrNot1B64
            | O::SNandB64
            | O::SNorB64
            | O::SXnorB64
    ) {
        0b111
    } else {
        0
    }
}

fn saveexec(op: O) -> Option<(K, Class)> {
    let f: fn(u64, u64) -> u64 = match op {
        O::SAndNot0SaveexecB32 | O::SAndNot0SaveexecB64 => |s, e| !s & e,
        O::SAndNot1SaveexecB32 | O::SAndNot1SaveexecB64 => |s, e| s & !e,
        O::SAndSaveexecB32 | O::SAndSaveexecB64 => |s, e| s & e,
        O::SNandSaveexecB32 | O::SNandSaveexecB64 => |s, e| !(s & e),
        O::SNorSaveexecB32 | O::SNorSaveexecB64 => |s, e| !(s | e),
        O::SOrNot0SaveexecB32 | O::SOrNot0SaveexecB64 => |s, e| !s | e,
        O::SOrNot1SaveexecB32 | O::SOrNot1SaveexecB64 => |s, e| s | !e,
        O::SOrSaveexecB32 | O::SOrSaveexecB64 => |s, e| s | e,
        O::SXnorSaveexecB32 | O::SXnorSaveexecB64 => |s, e| !(s ^ e),
        O::SXorSaveexecB32 | O::SXorSaveexecB64 => |s, e| s ^ e,
        _ => return None,
    };
    let w = matches!(
        op,
        O::SAndNot0SaveexecB64
            | O::SAndNot1SaveexecB64
            | O::SAndSaveexecB64
            | O::SNandSaveexecB64
            | O::SNorSaveexecB64
            | O::SOrNot0SaveexecB64
            | O::SOrNot1SaveexecB64
            | O::SOrSaveexecB64
            | O::SXnorSaveexecB64
            | O::SXorSaveexecB64
    );
    Some((K::Saveexec(f, w), Class::SaluSaveexec))
}

/// SOPC `s_cmp_*` and SOPK `s_cmpk_*` comparisons.
fn scmp(op: O) -> Option<fn(u64, u64) -> bool> {
    Some(match op {
        O::SCmpEqI32 | O::SCmpEqU32 | O::SCmpEqU64 | O::SCmpkEqI32 | O::SCmpkEqU32 => |a, b| a == b,
        O::SCmpGeI32 | O::SCmpkGeI32 => |a, b| (a as i32) >= (b as i32),
        O::SCmpGeU32 | O::SCmpkGeU32 => |a, b| (a as u32) >= (b as u32),
        O::SCmpGtI32 | O::SCmpkGtI32 => |a, b| (a as i32) > (b as i32),
        O::SCmpGtU32 | O::SCmpkGtU32 => |a, b| (a as u32) > (b as u32),
        O::SCmpLeI32 | O::SCmpkLeI32 => |a, b| (a as i32) <= (b as i32),
        O::SCmpLeU32 | O::SCmpkLeU32 => |a, b| (a as u32) <= (b as u32),
        O::SCmpLgI32 | O::SCmpLgU32 | O::SCmpLgU64 | O::SCmpkLgI32 | O::SCmpkLgU32 => |a, b| a != b,
        O::SCmpLtI32 | O::SCmpkLtI32 => |a, b| (a as i32) < (b as i32),
        O::SCmpLtU32 | O::SCmpkLtU32 => |a, b| (a as u32) < (b as u32),
        _ => return None,
    })
}

fn vcmp(op: O) -> Option<(K, Class)> {
    let (c, ty, x) = match op {
        O::VCmpClassF32 => return Some((K::CmpClass(false), Class::Valu)),
        O::VCmpxClassF32 => return Some((K::CmpClass(true), Class::ValuCmpx)),
        O::VCmpEqF16 => (Cmp::Eq, Ty::F16, false),
        O::VCmpEqF32 => (Cmp::Eq, Ty::F32, false),
        O::VCmpEqF64 => (Cmp::Eq, Ty::F64, false),
        O::VCmpEqI16 => (Cmp::Eq, Ty::I16, false),
        O::VCmpEqI32 => (Cmp::Eq, Ty::I32, false),
        O::VCmpEqI64 => (Cmp::Eq, Ty::I64, false),
        O::VCmpEqU16 => (Cmp::Eq, Ty::U16, false),
        O::VCmpEqU32 => (Cmp::Eq, Ty::U32, false),
        O::VCmpEqU64 => (Cmp::Eq, Ty::U64, false),
        O::VCmpFF16 => (Cmp::F, Ty::F16, false),
        O::VCmpFF32 => (Cmp::F, Ty::F32, false),
        O::VCmpFF64 => (Cmp::F, Ty::F64, false),
        O::VCmpFI16 => (Cmp::F, Ty::I16, false),
        O::VCmpFI32 => (Cmp::F, Ty::I32, false),
        O::VCmpFI64 => (Cmp::F, Ty::I64, false),
        O::VCmpFU16 => (Cmp::F, Ty::U16, false),
        O::VCmpFU32 => (Cmp::F, Ty::U32, false),
        O::VCmpFU64 => (Cmp::F, Ty::U64, false),
        O::VCmpGeF16 => (Cmp::Ge, Ty::F16, false),
        O::VCmpGeF32 => (Cmp::Ge, Ty::F32, false),
        O::VCmpGeF64 => (Cmp::Ge, Ty::F64, false),
        O::VCmpGeI16 => (Cmp::Ge, Ty::I16, false),
        O::VCmpGeI32 => (Cmp::Ge, Ty::I32, false),
        O::VCmpGeI64 => (Cmp::Ge, Ty::I64, false),
        O::VCmpGeU16 => (Cmp::Ge, Ty::U16, false),
        O::VCmpGeU32 => (Cmp::Ge, Ty::U32, false),
        O::VCmpGeU64 => (Cmp::Ge, Ty::U64, false),
        O::VCmpGtF16 => (Cmp::Gt, Ty::F16, false),
        O::VCmpGtF32 => (Cmp::Gt, Ty::F32, false),
        O::VCmpGtF64 => (Cmp::Gt, Ty::F64, false),
        O::VCmpGtI16 => (Cmp::Gt, Ty::I16, false),
        O::VCmpGtI32 => (Cmp::Gt, Ty::I32, false),
        O::VCmpGtI64 => (Cmp::Gt, Ty::I64, false),
        O::VCmpGtU16 => (Cmp::Gt, Ty::U16, false),
        O::VCmpGtU32 => (Cmp::Gt, Ty::U32, false),
        O::VCmpGtU64 => (Cmp::Gt, Ty::U64, false),
        O::VCmpLeF16 => (Cmp::Le, Ty::F16, false),
        O::VCmpLeF32 => (Cmp::Le, Ty::F32, false),
        O::VCmpLeF64 => (Cmp::Le, Ty::F64, false),
        O::VCmpLeI16 => (Cmp::Le, Ty::I16, false),
        O::VCmpLeI32 => (Cmp::Le, Ty::I32, false),
        O::VCmpLeI64 => (Cmp::Le, Ty::I64, false),
        O::VCmpLeU16 => (Cmp::Le, Ty::U16, false),
        O::VCmpLeU32 => (Cmp::Le, Ty::U32, false),
        O::VCmpLeU64 => (Cmp::Le, Ty::U64, false),
        O::VCmpLgF16 => (Cmp::Ne, Ty::F16, false),
        O::VCmpLgF32 => (Cmp::Ne, Ty::F32, false),
        O::VCmpLgF64 => (Cmp::Ne, Ty::F64, false),
        O::VCmpLtF16 => (Cmp::Lt, Ty::F16, false),
        O::VCmpLtF32 => (Cmp::Lt, Ty::F32, false),
        O::VCmpLtF64 => (Cmp::Lt, Ty::F64, false),
        O::VCmpLtI16 => (Cmp::Lt, Ty::I16, false),
        O::VCmpLtI32 => (Cmp::Lt, Ty::I32, false),
        O::VCmpLtI64 => (Cmp::Lt, Ty::I64, false),
        O::VCmpLtU16 => (Cmp::Lt, Ty::U16, false),
        O::VCmpLtU32 => (Cmp::Lt, Ty::U32, false),
        O::VCmpLtU64 => (Cmp::Lt, Ty::U64, false),
        O::VCmpNeI16 => (Cmp::Ne, Ty::I16, false),
        O::VCmpNeI32 => (Cmp::Ne, Ty::I32, false),
        O::VCmpNeI64 => (Cmp::Ne, Ty::I64, false),
        O::VCmpNeU16 => (Cmp::Ne, Ty::U16, false),
        O::VCmpNeU32 => (Cmp::Ne, Ty::U32, false),
        O::VCmpNeU64 => (Cmp::Ne, Ty::U64, false),
        O::VCmpNeqF16 => (Cmp::Neq, Ty::F16, false),
        O::VCmpNeqF32 => (Cmp::Neq, Ty::F32, false),
        O::VCmpNeqF64 => (Cmp::Neq, Ty::F64, false),
        O::VCmpNgeF16 => (Cmp::Nge, Ty::F16, false),
        O::VCmpNgeF32 => (Cmp::Nge, Ty::F32, false),
        O::VCmpNgeF64 => (Cmp::Nge, Ty::F64, false),
        O::VCmpNgtF16 => (Cmp::Ngt, Ty::F16, false),
        O::VCmpNgtF32 => (Cmp::Ngt, Ty::F32, false),
        O::VCmpNgtF64 => (Cmp::Ngt, Ty::F64, false),
        O::VCmpNleF16 => (Cmp::Nle, Ty::F16, false),
        O::VCmpNleF32 => (Cmp::Nle, Ty::F32, false),
        O::VCmpNleF64 => (Cmp::Nle, Ty::F64, false),
        O::VCmpNlgF16 => (Cmp::Nlg, Ty::F16, false),
        O::VCmpNlgF32 => (Cmp::Nlg, Ty::F32, false),
        O::VCmpNlgF64 => (Cmp::Nlg, Ty::F64, false),
        O::VCmpNltF16 => (Cmp::Nlt, Ty::F16, false),
        O::VCmpNltF32 => (Cmp::Nlt, Ty::F32, false),
        O::VCmpNltF64 => (Cmp::Nlt, Ty::F64, false),
        O::VCmpOF16 => (Cmp::O, Ty::F16, false),
        O::VCmpOF32 => (Cmp::O, Ty::F32, false),
        O::VCmpOF64 => (Cmp::O, Ty::F64, false),
        O::VCmpTF16 => (Cmp::T, Ty::F16, false),
        O::VCmpTF32 => (Cmp::T, Ty::F32, false),
        O::VCmpTF64 => (Cmp::T, Ty::F64, false),
        O::VCmpTI16 => (Cmp::T, Ty::I16, false),
        O::VCmpTI32 => (Cmp::T, Ty::I32, false),
        O::VCmpTI64 => (Cmp::T, Ty::I64, false),
        O::VCmpTU16 => (Cmp::T, Ty::U16, false),
        O::VCmpTU32 => (Cmp::T, Ty::U32, false),
        O::VCmpTU64 => (Cmp::T, Ty::U64, false),
        O::VCmpUF16 => (Cmp::U, Ty::F16, false),
        O::VCmpUF32 => (Cmp::U, Ty::F32, false),
        O::VCmpUF64 => (Cmp::U, Ty::F64, false),
        O::VCmpxEqF16 => (Cmp::Eq, Ty::F16, true),
        O::VCmpxEqF32 => (Cmp::Eq, Ty::F32, true),
        O::VCmpxEqF64 => (Cmp::Eq, Ty::F64, true),
        O::VCmpxEqI16 => (Cmp::Eq, Ty::I16, true),
        O::VCmpxEqI32 => (Cmp::Eq, Ty::I32, true),
        O::VCmpxEqI64 => (Cmp::Eq, Ty::I64, true),
        O::VCmpxEqU16 => (Cmp::Eq, Ty::U16, true),
        O::VCmpxEqU32 => (Cmp::Eq, Ty::U32, true),
        O::VCmpxEqU64 => (Cmp::Eq, Ty::U64, true),
        O::VCmpxFF16 => (Cmp::F, Ty::F16, true),
        O::VCmpxFF32 => (Cmp::F, Ty::F32, true),
        O::VCmpxFF64 => (Cmp::F, Ty::F64, true),
        O::VCmpxFI16 => (Cmp::F, Ty::I16, true),
        O::VCmpxFI32 => (Cmp::F, Ty::I32, true),
        O::VCmpxFI64 => (Cmp::F, Ty::I64, true),
        O::VCmpxFU16 => (Cmp::F, Ty::U16, true),
        O::VCmpxFU32 => (Cmp::F, Ty::U32, true),
        O::VCmpxFU64 => (Cmp::F, Ty::U64, true),
        O::VCmpxGeF16 => (Cmp::Ge, Ty::F16, true),
        O::VCmpxGeF32 => (Cmp::Ge, Ty::F32, true),
        O::VCmpxGeF64 => (Cmp::Ge, Ty::F64, true),
        O::VCmpxGeI16 => (Cmp::Ge, Ty::I16, true),
        O::VCmpxGeI32 => (Cmp::Ge, Ty::I32, true),
        O::VCmpxGeI64 => (Cmp::Ge, Ty::I64, true),
        O::VCmpxGeU16 => (Cmp::Ge, Ty::U16, true),
        O::VCmpxGeU32 => (Cmp::Ge, Ty::U32, true),
        O::VCmpxGeU64 => (Cmp::Ge, Ty::U64, true),
        O::VCmpxGtF16 => (Cmp::Gt, Ty::F16, true),
        O::VCmpxGtF32 => (Cmp::Gt, Ty::F32, true),
        O::VCmpxGtF64 => (Cmp::Gt, Ty::F64, true),
        O::VCmpxGtI16 => (Cmp::Gt, Ty::I16, true),
        O::VCmpxGtI32 => (Cmp::Gt, Ty::I32, true),
        O::VCmpxGtI64 => (Cmp::Gt, Ty::I64, true),
        O::VCmpxGtU16 => (Cmp::Gt, Ty::U16, true),
        O::VCmpxGtU32 => (Cmp::Gt, Ty::U32, true),
        O::VCmpxGtU64 => (Cmp::Gt, Ty::U64, true),
        O::VCmpxLeF16 => (Cmp::Le, Ty::F16, true),
        O::VCmpxLeF32 => (Cmp::Le, Ty::F32, true),
        O::VCmpxLeF64 => (Cmp::Le, Ty::F64, true),
        O::VCmpxLeI16 => (Cmp::Le, Ty::I16, true),
        O::VCmpxLeI32 => (Cmp::Le, Ty::I32, true),
        O::VCmpxLeI64 => (Cmp::Le, Ty::I64, true),
        O::VCmpxLeU16 => (Cmp::Le, Ty::U16, true),
        O::VCmpxLeU32 => (Cmp::Le, Ty::U32, true),
        O::VCmpxLeU64 => (Cmp::Le, Ty::U64, true),
        O::VCmpxLgF16 => (Cmp::Ne, Ty::F16, true),
        O::VCmpxLgF32 => (Cmp::Ne, Ty::F32, true),
        O::VCmpxLgF64 => (Cmp::Ne, Ty::F64, true),
        O::VCmpxLtF16 => (Cmp::Lt, Ty::F16, true),
        O::VCmpxLtF32 => (Cmp::Lt, Ty::F32, true),
        O::VCmpxLtF64 => (Cmp::Lt, Ty::F64, true),
        O::VCmpxLtI16 => (Cmp::Lt, Ty::I16, true),
        O::VCmpxLtI32 => (Cmp::Lt, Ty::I32, true),
        O::VCmpxLtI64 => (Cmp::Lt, Ty::I64, true),
        O::VCmpxLtU16 => (Cmp::Lt, Ty::U16, true),
        O::VCmpxLtU32 => (Cmp::Lt, Ty::U32, true),
        O::VCmpxLtU64 => (Cmp::Lt, Ty::U64, true),
        O::VCmpxNeI16 => (Cmp::Ne, Ty::I16, true),
        O::VCmpxNeI32 => (Cmp::Ne, Ty::I32, true),
        O::VCmpxNeI64 => (Cmp::Ne, Ty::I64, true),
        O::VCmpxNeU16 => (Cmp::Ne, Ty::U16, true),
        O::VCmpxNeU32 => (Cmp::Ne, Ty::U32, true),
        O::VCmpxNeU64 => (Cmp::Ne, Ty::U64, true),
        O::VCmpxNeqF16 => (Cmp::Neq, Ty::F16, true),
        O::VCmpxNeqF32 => (Cmp::Neq, Ty::F32, true),
        O::VCmpxNeqF64 => (Cmp::Neq, Ty::F64, true),
        O::VCmpxNgeF16 => (Cmp::Nge, Ty::F16, true),
        O::VCmpxNgeF32 => (Cmp::Nge, Ty::F32, true),
        O::VCmpxNgeF64 => (Cmp::Nge, Ty::F64, true),
        O::VCmpxNgtF16 => (Cmp::Ngt, Ty::F16, true),
        O::VCmpxNgtF32 => (Cmp::Ngt, Ty::F32, true),
        O::VCmpxNgtF64 => (Cmp::Ngt, Ty::F64, true),
        O::VCmpxNleF16 => (Cmp::Nle, Ty::F16, true),
        O::VCmpxNleF32 => (Cmp::Nle, Ty::F32, true),
        O::VCmpxNleF64 => (Cmp::Nle, Ty::F64, true),
        O::VCmpxNlgF16 => (Cmp::Nlg, Ty::F16, true),
        O::VCmpxNlgF32 => (Cmp::Nlg, Ty::F32, true),
        O::VCmpxNlgF64 => (Cmp::Nlg, Ty::F64, true),
        O::VCmpxNltF16 => (Cmp::Nlt, Ty::F16, true),
        O::VCmpxNltF32 => (Cmp::Nlt, Ty::F32, true),
        O::VCmpxNltF64 => (Cmp::Nlt, Ty::F64, true),
        O::VCmpxOF16 => (Cmp::O, Ty::F16, true),
        O::VCmpxOF32 => (Cmp::O, Ty::F32, true),
        O::VCmpxOF64 => (Cmp::O, Ty::F64, true),
        O::VCmpxTF16 => (Cmp::T, Ty::F16, true),
        O::VCmpxTF32 => (Cmp::T, Ty::F32, true),
        O::VCmpxTF64 => (Cmp::T, Ty::F64, true),
        O::VCmpxTI16 => (Cmp::T, Ty::I16, true),
        O::VCmpxTI32 => (Cmp::T, Ty::I32, true),
        O::VCmpxTI64 => (Cmp::T, Ty::I64, true),
        O::VCmpxTU16 => (Cmp::T, Ty::U16, true),
        O::VCmpxTU32 => (Cmp::T, Ty::U32, true),
        O::VCmpxTU64 => (Cmp::T, Ty::U64, true),
        O::VCmpxUF16 => (Cmp::U, Ty::F16, true),
        O::VCmpxUF32 => (Cmp::U, Ty::F32, true),
        O::VCmpxUF64 => (Cmp::U, Ty::F64, true),
        _ => return None,
    };
    let class = if matches!(ty, Ty::F64 | Ty::I64 | Ty::U64) && !x {
        Class::Valu64
    } else if x {
        Class::ValuCmpx
    } else {
        Class::Valu
    };
    Some((K::Cmp(c, ty, x), class))
}

fn valu(op: O) -> Option<(K, Class)> {
    use Class::{Valu as C, ValuTrans as T};
    let v = |f: VFn, float: bool| Some((K::V(f, float), C));
    let t = |f: VFn| Some((K::V(f, true), T));
    match op {
        O::VMovB32 => v(vf!(|a, b, c| a), false),
        O::VNotB32 => v(vf!(|a, b, c| !a), false),
        O::VBfrevB32 => v(vf!(|a, b, c| a.reverse_bits()), false),
        O::VClzI32U32 => v(
            vf!(|a, b, c| if a == 0 { u32::MAX } else { a.leading_zeros() }),
            false,
        ),
        O::VCtzI32B32 => v(
            vf!(|a, b, c| if a == 0 { u32::MAX } else { a.trailing_zeros() }),
            false,
        ),
        O::VCvtF32I32 => v(vf!(|a, b, c| fb(a as i32 as f32)), true),
        O::VCvtF32U32 => v(vf!(|a, b, c| fb(a as f32)), true),
        O::VCvtU32F32 => v(vf!(|a, b, c| fl(a) as u32), false),
        O::VCvtI32F32 => v(vf!(|a, b, c| fl(a) as i32 as u32), false),
        O::VCvtF32Ubyte0 => v(vf!(|a, b, c| fb((a & 0xFF) as f32)), true),
        O::VTruncF32 => v(vf!(|a, b, c| fb(fl(a).trunc())), true),
        O::VCeilF32 => v(vf!(|a, b, c| fb(fl(a).ceil())), true),
        O::VFloorF32 => v(vf!(|a, b, c| fb(fl(a).floor())), true),
        O::VRndneF32 => v(vf!(|a, b, c| fb(fl(a).round_ties_even())), true),
        O::VFractF32 => v(vf!(|a, b, c| fb(fl(a) - fl(a).floor())), true),
        O::VExpF32 => t(vf!(|a, b, c| fb(fl(a).exp2()))),
        O::VLogF32 => t(vf!(|a, b, c| fb(fl(a).log2()))),
        O::VRcpF32 | O::VRcpIflagF32 => t(vf!(|a, b, c| fb(1.0 / fl(a)))),
        O::VRsqF32 => t(vf!(|a, b, c| fb(1.0 / fl(a).sqrt()))),
        O::VSqrtF32 => t(vf!(|a, b, c| fb(fl(a).sqrt()))),
        O::VSinF32 => t(vf!(|a, b, c| fb((fl(a) * std::f32::consts::TAU).sin()))),
        O::VCosF32 => t(vf!(|a, b, c| fb((fl(a) * std::f32::consts::TAU).cos()))),
        O::VAddF32 => v(vf!(|a, b, c| fb(fl(a) + fl(b))), true),
        O::VSubF32 => v(vf!(|a, b, c| fb(fl(a) - fl(b))), true),
        O::VSubrevF32 => v(vf!(|a, b, c| fb(fl(b) - fl(a))), true),
        O::VMulF32 => v(vf!(|a, b, c| fb(fl(a) * fl(b))), true),
        O::VMulDx9ZeroF32 => v(
            vf!(|a, b, c| if fl(a) == 0.0 || fl(b) == 0.0 {
                0
            } else {
                fb(fl(a) * fl(b))
            }),
            true,
        ),
        O::VMinF32 => v(vf!(|a, b, c| fb(fmin(fl(a), fl(b)))), true),
        O::VMaxF32 => v(vf!(|a, b, c| fb(fmax(fl(a), fl(b)))), true),
        O::VMin3F32 => v(vf!(|a, b, c| fb(fmin(fmin(fl(a), fl(b)), fl(c)))), true),
        O::VMax3F32 => v(vf!(|a, b, c| fb(fmax(fmax(fl(a), fl(b)), fl(c)))), true),
        O::VMed3F32 => v(vf!(|a, b, c| fb(med3(fl(a), fl(b), fl(c)))), true),
        O::VFmaF32 | O::VFmacF32 | O::VFmamkF32 | O::VFmaakF32 => v(fma_f32, true),
        O::VLdexpF32 => v(vf!(|a, b, c| fb(ldexp(fl(a), b as i32))), true),
        O::VMinI32 => v(vf!(|a, b, c| (a as i32).min(b as i32) as u32), false),
        O::VMaxI32 => v(vf!(|a, b, c| (a as i32).max(b as i32) as u32), false),
        O::VMinU32 => v(vf!(|a, b, c| a.min(b)), false),
        O::VMaxU32 => v(vf!(|a, b, c| a.max(b)), false),
        O::VMin3I32 => v(
            vf!(|a, b, c| (a as i32).min(b as i32).min(c as i32) as u32),
            false,
        ),
        O::VMax3I32 => v(
            vf!(|a, b, c| (a as i32).max(b as i32).max(c as i32) as u32),
            false,
        ),
        O::VMin3U32 => v(vf!(|a, b, c| a.min(b).min(c)), false),
        O::VMax3U32 => v(vf!(|a, b, c| a.max(b).max(c)), false),
        O::VMed3I32 => v(
            vf!(|a, b, c| {
                let (a, b, c) = (a as i32, b as i32, c as i32);
                a.min(b).max(a.max(b).min(c)) as u32
            }),
            false,
        ),
        O::VMed3U32 => v(vf!(|a, b, c| a.min(b).max(a.max(b).min(c))), false),
        O::VLshlrevB32 => v(vf!(|a, b, c| b << (a & 31)), false),
        O::VLshrrevB32 => v(vf!(|a, b, c| b >> (a & 31)), false),
        O::VAshrrevI32 => v(vf!(|a, b, c| ((b as i32) >> (a & 31)) as u32), false),
        O::VAndB32 => v(vf!(|a, b, c| a & b), false),
        O::VOrB32 => v(vf!(|a, b, c| a | b), false),
        O::VXorB32 => v(vf!(|a, b, c| a ^ b), false),
        O::VXnorB32 => v(vf!(|a, b, c| !(a ^ b)), false),
        O::VAddNcU32 => v(vf!(|a, b, c| a.wrapping_add(b)), false),
        O::VSubNcU32 => v(vf!(|a, b, c| a.wrapping_sub(b)), false),
        O::VSubrevNcU32 => v(vf!(|a, b, c| b.wrapping_sub(a)), false),
        O::VMulI32I24 => v(vf!(|a, b, c| (sx24(a).wrapping_mul(sx24(b))) as u32), false),
        O::VMulU32U24 => v(
            vf!(|a, b, c| (a & 0xFF_FFFF).wrapping_mul(b & 0xFF_FFFF)),
            false,
        ),
        O::VMulHiU32U24 => v(
            vf!(|a, b, c| (((a & 0xFF_FFFF) as u64 * (b & 0xFF_FFFF) as u64) >> 32) as u32),
            false,
        ),
        O::VMadU32U24 => v(
            vf!(|a, b, c| (a & 0xFF_FFFF).wrapping_mul(b & 0xFF_FFFF).wrapping_add(c)),
            false,
        ),
        O::VMadI32I24 => v(
            vf!(|a, b, c| (sx24(a).wrapping_mul(sx24(b)) as u32).wrapping_add(c)),
            false,
        ),
        O::VMulLoU32 => v(vf!(|a, b, c| a.wrapping_mul(b)), false),
        O::VMulHiU32 => v(vf!(|a, b, c| ((a as u64 * b as u64) >> 32) as u32), false),
        O::VMulHiI32 => v(
            vf!(|a, b, c| ((a as i32 as i64 * b as i32 as i64) >> 32) as u32),
            false,
        ),
        O::VBfeU32 => v(vf!(|a, b, c| bfe_u(a, b, c)), false),
        O::VBfeI32 => v(vf!(|a, b, c| bfe_i(a, b, c)), false),
        O::VBfiB32 => v(vf!(|a, b, c| (a & b) | (!a & c)), false),
        O::VBfmB32 => v(
            vf!(|a, b, c| {
                let w = a & 31;
                (if w == 0 { 0 } else { (1u32 << w) - 1 }) << (b & 31)
            }),
            false,
        ),
        O::VAlignbitB32 => v(
            vf!(|a, b, c| ((((a as u64) << 32) | b as u64) >> (c & 31)) as u32),
            false,
        ),
        O::VAlignbyteB32 => v(
            vf!(|a, b, c| ((((a as u64) << 32) | b as u64) >> (8 * (c & 3))) as u32),
            false,
        ),
        O::VLshlAddU32 => v(vf!(|a, b, c| (a << (b & 31)).wrapping_add(c)), false),
        O::VAddLshlU32 => v(vf!(|a, b, c| a.wrapping_add(b) << (c & 31)), false),
        O::VLshlOrB32 => v(vf!(|a, b, c| (a << (b & 31)) | c), false),
        O::VAndOrB32 => v(vf!(|a, b, c| (a & b) | c), false),
        O::VOr3B32 => v(vf!(|a, b, c| a | b | c), false),
        O::VXor3B32 => v(vf!(|a, b, c| a ^ b ^ c), false),
        O::VAdd3U32 => v(vf!(|a, b, c| a.wrapping_add(b).wrapping_add(c)), false),
        O::VXadU32 => v(vf!(|a, b, c| (a ^ b).wrapping_add(c)), false),
        O::VBcntU32B32 => v(vf!(|a, b, c| a.count_ones().wrapping_add(b)), false),
        O::VPermB32 => v(vf!(|a, b, c| perm(a, b, c)), false),
        O::VCvtPkRtzF16F32 => v(
            vf!(|a, b, c| f32_to_f16(fl(a), true) as u32 | ((f32_to_f16(fl(b), true) as u32) << 16)),
            false,
        ),
        O::VCndmaskB32 => Some((K::Cndmask, C)),
        O::VAddCoU32 => Some((K::AddCo(false, false), C)),
        O::VSubCoU32 => Some((K::AddCo(true, false), C)),
        O::VSubrevCoU32 => Some((K::AddCo(true, true), C)),
        O::VAddCoCiU32 => Some((K::AddCoCi(false, false), C)),
        O::VSubCoCiU32 => Some((K::AddCoCi(true, false), C)),
        O::VSubrevCoCiU32 => Some((K::AddCoCi(true, true), C)),
        O::VMadU64U32 => Some((K::MadU64U32(false), Class::ValuMad64)),
        O::VMadI64I32 => Some((K::MadU64U32(true), Class::ValuMad64)),
        O::VDivScaleF32 => Some((K::DivScale, C)),
        O::VDivFmasF32 => Some((K::DivFmas, C)),
        O::VDivFixupF32 => Some((K::DivFixup, C)),
        O::VReadlaneB32 => Some((K::Readlane, C)),
        O::VReadfirstlaneB32 => Some((K::Readfirstlane, C)),
        O::VWritelaneB32 => Some((K::Writelane, C)),
        O::VMbcntLoU32B32 => Some((K::MbcntLo, C)),
        O::VMbcntHiU32B32 => Some((K::MbcntHi, C)),
        O::VLshlrevB64 => Some((
            K::V64(|a, b, _| b << (a & 63), 0b010, false),
            Class::Valu64Shift,
        )),
        O::VLshrrevB64 => Some((
            K::V64(|a, b, _| b >> (a & 63), 0b010, false),
            Class::Valu64Shift,
        )),
        O::VAshrrevI64 => Some((
            K::V64(|a, b, _| ((b as i64) >> (a & 63)) as u64, 0b010, false),
            Class::Valu64Shift,
        )),
        O::VAddF64 => Some((
            K::V64(|a, b, _| (dl(a) + dl(b)).to_bits(), 0b011, true),
            Class::Valu64,
        )),
        O::VMulF64 => Some((
            K::V64(|a, b, _| (dl(a) * dl(b)).to_bits(), 0b011, true),
            Class::Valu64,
        )),
        O::VFmaF64 => Some((
            K::V64(|a, b, c| dl(a).mul_add(dl(b), dl(c)).to_bits(), 0b111, true),
            Class::Valu64,
        )),
        O::VCvtF64F32 => Some((
            K::V64(|a, _, _| (fl(a as u32) as f64).to_bits(), 0, true),
            Class::Valu64,
        )),
        O::VCvtF32F64 => Some((
            K::V64(|a, _, _| fb(dl(a) as f32) as u64, 0b1001, false),
            Class::Valu64,
        )),
        O::VCvtF64I32 => Some((
            K::V64(|a, _, _| (a as u32 as i32 as f64).to_bits(), 0, true),
            Class::Valu64,
        )),
        O::VCvtF64U32 => Some((
            K::V64(|a, _, _| (a as u32 as f64).to_bits(), 0, true),
            Class::Valu64,
        )),
        O::VCvtI32F64 => Some((
            K::V64(|a, _, _| dl(a) as i32 as u32 as u64, 0b1001, false),
            Class::Valu64,
        )),
        O::VCvtU32F64 => Some((
            K::V64(|a, _, _| dl(a) as u32 as u64, 0b1001, false),
            Class::Valu64,
        )),
        _ => None,
    }
}

fn sx24(a: u32) -> i32 {
    ((a << 8) as i32) >> 8
}

pub fn ldexp(x: f32, e: i32) -> f32 {
    let e = e.clamp(-300, 300);
    (f64::from(x) * 2f64.powi(e)) as f32
}

fn perm(a: u32, b: u32, sel: u32) -> u32 {
    let bytes = ((a as u64) << 32) | b as u64;
    let mut r = 0u32;
    for i in 0..4 {
        let s = (sel >> (8 * i)) & 0xFF;
        let v = match s {
            0..=7 => ((bytes >> (8 * s)) & 0xFF) as u32,
            8..=11 => {
                let byte = ((bytes >> (8 * ((s - 8) * 2 + 1))) & 0x80) as u32;
                if byte != 0 {
                    0xFF
                } else {
                    0
                }
            }
            12 => 0,
            _ => 0xFF,
        };
        r |= v << (8 * i);
    }
    r
}

/// f32 → f16 bits (round to nearest even, or toward zero with `rtz`).
pub fn f32_to_f16(x: f32, rtz: bool) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xFF) as i32;
    let man = b & 0x7F_FFFF;
    if exp == 0xFF {
        return sign | 0x7C00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 31 {
        return if rtz { sign | 0x7BFF } else { sign | 0x7C00 };
    }
    let (m, shift) = if e <= 0 {
        if e < -10 {
            return sign;
        }
        (man | 0x80_0000, (14 - e) as u32)
    } else {
        (man, 13u32)
    };
    let mut h = (m >> shift) as u16;
    let rem = m & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    if !rtz && (rem > half || (rem == half && h & 1 == 1)) {
        h += 1;
    }
    if e <= 0 {
        sign | h
    } else {
        sign | (((e as u16) << 10) + h)
    }
}

pub fn f16_to_f32(h: u16) -> f32 {
    let sign = (u32::from(h) & 0x8000) << 16;
    let exp = (u32::from(h) >> 10) & 0x1F;
    let man = u32::from(h) & 0x3FF;
    let bits = if exp == 0 {
        if man == 0 {
            sign
        } else {
            return f32::from_bits(sign)
                + (man as f32) * 2f32.powi(-24) * if sign != 0 { -1.0 } else { 1.0 };
        }
    } else if exp == 31 {
        sign | 0x7F80_0000 | (man << 13)
    } else {
        sign | ((exp + 112) << 23) | (man << 13)
    };
    f32::from_bits(bits)
}

/// A memory element: bytes per lane, sign extension, dwords, d16 half.
const fn mem(bytes: u8, signed: bool, dwords: u8, d16: u8) -> Mem {
    Mem {
        bytes,
        signed,
        dwords,
        d16,
    }
}

fn vmem(enc: Encoding, op: O) -> Option<(K, Class)> {
    let flat = enc == Encoding::Flat;
    let vclass = |m: Mem, store: bool| Class::Vmem {
        dwords: m.dwords,
        store,
        saddr: true,
        flat,
    };
    let load = |m: Mem| (K::GLoad(m), vclass(m, false));
    let store = |m: Mem| (K::GStore(m), vclass(m, true));
    // Whether an atomic returns is refined from the encoding's GLC/TH bit (`code.rs`).
    let atomic = |at: At, rtn: bool, w: u8| {
        (
            K::GAtomic(at, rtn, w),
            vclass(mem(4 * w, false, w, 0), !rtn),
        )
    };
    Some(match op {
        O::FlatAtomicAddF32 | O::GlobalAtomicAddF32 => atomic(At::AddF32, false, 1),
        O::FlatAtomicAddU32 | O::GlobalAtomicAddU32 => atomic(At::Add, false, 1),
        O::FlatAtomicAddU64 | O::GlobalAtomicAddU64 => atomic(At::Add, false, 2),
        O::FlatAtomicAndB32 | O::GlobalAtomicAndB32 => atomic(At::And, false, 1),
        O::FlatAtomicAndB64 | O::GlobalAtomicAndB64 => atomic(At::And, false, 2),
        O::FlatAtomicCmpswapB32
        | O::FlatAtomicCmpswapF32
        | O::GlobalAtomicCmpswapB32
        | O::GlobalAtomicCmpswapF32 => atomic(At::Cmpswap, false, 1),
        O::FlatAtomicCmpswapB64 | O::GlobalAtomicCmpswapB64 => atomic(At::Cmpswap, false, 2),
        O::FlatAtomicDecU32 | O::GlobalAtomicDecU32 => atomic(At::Dec, false, 1),
        O::FlatAtomicDecU64 | O::GlobalAtomicDecU64 => atomic(At::Dec, false, 2),
        O::FlatAtomicIncU32 | O::GlobalAtomicIncU32 => atomic(At::Inc, false, 1),
        O::FlatAtomicIncU64 | O::GlobalAtomicIncU64 => atomic(At::Inc, false, 2),
        O::FlatAtomicMaxF32
        | O::FlatAtomicMaxU32
        | O::GlobalAtomicMaxF32
        | O::GlobalAtomicMaxU32 => atomic(At::Umax, false, 1),
        O::FlatAtomicMaxI32 | O::GlobalAtomicMaxI32 => atomic(At::Max, false, 1),
        O::FlatAtomicMaxI64 | O::GlobalAtomicMaxI64 => atomic(At::Max, false, 2),
        O::FlatAtomicMaxU64 | O::GlobalAtomicMaxU64 => atomic(At::Umax, false, 2),
        O::FlatAtomicMinF32
        | O::FlatAtomicMinU32
        | O::GlobalAtomicMinF32
        | O::GlobalAtomicMinU32 => atomic(At::Umin, false, 1),
        O::FlatAtomicMinI32 | O::GlobalAtomicMinI32 => atomic(At::Min, false, 1),
        O::FlatAtomicMinI64 | O::GlobalAtomicMinI64 => atomic(At::Min, false, 2),
        O::FlatAtomicMinU64 | O::GlobalAtomicMinU64 => atomic(At::Umin, false, 2),
        O::FlatAtomicOrB32 | O::GlobalAtomicOrB32 => atomic(At::Or, false, 1),
        O::FlatAtomicOrB64 | O::GlobalAtomicOrB64 => atomic(At::Or, false, 2),
        O::FlatAtomicSubU32 | O::GlobalAtomicSubU32 => atomic(At::Sub, false, 1),
        O::FlatAtomicSubU64 | O::GlobalAtomicSubU64 => atomic(At::Sub, false, 2),
        O::FlatAtomicSwapB32 | O::GlobalAtomicSwapB32 => atomic(At::Swap, false, 1),
        O::FlatAtomicSwapB64 | O::GlobalAtomicSwapB64 => atomic(At::Swap, false, 2),
        O::FlatAtomicXorB32 | O::GlobalAtomicXorB32 => atomic(At::Xor, false, 1),
        O::FlatAtomicXorB64 | O::GlobalAtomicXorB64 => atomic(At::Xor, false, 2),
        O::FlatLoadB128 | O::GlobalLoadB128 | O::ScratchLoadB128 => load(mem(16, false, 4, 0)),
        O::FlatLoadB32
        | O::FlatLoadDword
        | O::GlobalLoadB32
        | O::GlobalLoadDword
        | O::ScratchLoadB32
        | O::ScratchLoadDword => load(mem(4, false, 1, 0)),
        O::FlatLoadB64 | O::GlobalLoadB64 | O::ScratchLoadB64 => load(mem(8, false, 2, 0)),
        O::FlatLoadB96 | O::GlobalLoadB96 | O::ScratchLoadB96 => load(mem(12, false, 3, 0)),
        O::FlatLoadD16B16 | O::GlobalLoadD16B16 | O::ScratchLoadD16B16 => load(mem(2, false, 1, 1)),
        O::FlatLoadD16HiB16 | O::GlobalLoadD16HiB16 | O::ScratchLoadD16HiB16 => {
            load(mem(2, false, 1, 2))
        }
        O::FlatLoadD16HiI8 | O::GlobalLoadD16HiI8 | O::ScratchLoadD16HiI8 => {
            load(mem(1, true, 1, 2))
        }
        O::FlatLoadD16HiU8 | O::GlobalLoadD16HiU8 | O::ScratchLoadD16HiU8 => {
            load(mem(1, false, 1, 2))
        }
        O::FlatLoadD16I8 | O::GlobalLoadD16I8 | O::ScratchLoadD16I8 => load(mem(1, true, 1, 1)),
        O::FlatLoadD16U8 | O::GlobalLoadD16U8 | O::ScratchLoadD16U8 => load(mem(1, false, 1, 1)),
        O::FlatLoadI16 | O::GlobalLoadI16 | O::ScratchLoadI16 => load(mem(2, true, 1, 0)),
        O::FlatLoadI8 | O::GlobalLoadI8 | O::ScratchLoadI8 => load(mem(1, true, 1, 0)),
        O::FlatLoadU16 | O::GlobalLoadU16 | O::ScratchLoadU16 => load(mem(2, false, 1, 0)),
        O::FlatLoadU8 | O::GlobalLoadU8 | O::ScratchLoadU8 => load(mem(1, false, 1, 0)),
        O::FlatStoreB128 | O::GlobalStoreB128 | O::ScratchStoreB128 => store(mem(16, false, 4, 0)),
        O::FlatStoreB16 | O::GlobalStoreB16 | O::ScratchStoreB16 => store(mem(2, false, 1, 0)),
        O::FlatStoreB32
        | O::FlatStoreDword
        | O::GlobalStoreB32
        | O::GlobalStoreDword
        | O::ScratchStoreB32
        | O::ScratchStoreDword => store(mem(4, false, 1, 0)),
        O::FlatStoreB64 | O::GlobalStoreB64 | O::ScratchStoreB64 => store(mem(8, false, 2, 0)),
        O::FlatStoreB8 | O::GlobalStoreB8 | O::ScratchStoreB8 => store(mem(1, false, 1, 0)),
        O::FlatStoreB96 | O::GlobalStoreB96 | O::ScratchStoreB96 => store(mem(12, false, 3, 0)),
        O::FlatStoreD16HiB16 | O::GlobalStoreD16HiB16 | O::ScratchStoreD16HiB16 => {
            store(mem(2, false, 1, 2))
        }
        O::FlatStoreD16HiB8 | O::GlobalStoreD16HiB8 | O::ScratchStoreD16HiB8 => {
            store(mem(1, false, 1, 2))
        }
        _ => return None,
    })
}

fn ds(op: O) -> Option<(K, Class)> {
    let lc = |d: u8, store: bool| Class::Lds { dwords: d, store };
    let ds_load = |m: Mem| (K::DsLoad(m), lc(m.dwords, false));
    let ds_store = |m: Mem| (K::DsStore(m), lc(m.dwords, true));
    Some(match op {
        O::DsAddF32 => (K::DsAtomic(At::AddF32, false), lc(1, true)),
        O::DsAddRtnU32 => (K::DsAtomic(At::Add, true), lc(1, false)),
        O::DsAddU32 => (K::DsAtomic(At::Add, false), lc(1, true)),
        O::DsAndB32 => (K::DsAtomic(At::And, false), lc(1, true)),
        O::DsAndRtnB32 => (K::DsAtomic(At::And, true), lc(1, false)),
        O::DsBpermuteB32 => (K::DsBpermute, lc(1, false)),
        O::DsCmpstoreB32 | O::DsCmpstoreF32 => (K::DsAtomic(At::Cmpswap, false), lc(1, true)),
        O::DsCmpstoreRtnB32 => (K::DsAtomic(At::Cmpswap, true), lc(1, false)),
        O::DsDecRtnU32 => (K::DsAtomic(At::Dec, true), lc(1, false)),
        O::DsDecU32 => (K::DsAtomic(At::Dec, false), lc(1, true)),
        O::DsIncRtnU32 => (K::DsAtomic(At::Inc, true), lc(1, false)),
        O::DsIncU32 => (K::DsAtomic(At::Inc, false), lc(1, true)),
        O::DsLoad2addrB32 => (K::DsLoad2(1, false), lc(2, false)),
        O::DsLoad2addrB64 => (K::DsLoad2(2, false), lc(4, false)),
        O::DsLoad2addrStride64B32 => (K::DsLoad2(1, true), lc(2, false)),
        O::DsLoad2addrStride64B64 => (K::DsLoad2(2, true), lc(4, false)),
        O::DsLoadB128 => ds_load(mem(16, false, 4, 0)),
        O::DsLoadB32 => ds_load(mem(4, false, 1, 0)),
        O::DsLoadB64 => ds_load(mem(8, false, 2, 0)),
        O::DsLoadB96 => ds_load(mem(12, false, 3, 0)),
        O::DsLoadI16 => ds_load(mem(2, true, 1, 0)),
        O::DsLoadI8 => ds_load(mem(1, true, 1, 0)),
        O::DsLoadI8D16 => ds_load(mem(1, true, 1, 1)),
        O::DsLoadI8D16Hi => ds_load(mem(1, true, 1, 2)),
        O::DsLoadU16 => ds_load(mem(2, false, 1, 0)),
        O::DsLoadU16D16 => ds_load(mem(2, false, 1, 1)),
        O::DsLoadU16D16Hi => ds_load(mem(2, false, 1, 2)),
        O::DsLoadU8 => ds_load(mem(1, false, 1, 0)),
        O::DsLoadU8D16 => ds_load(mem(1, false, 1, 1)),
        O::DsLoadU8D16Hi => ds_load(mem(1, false, 1, 2)),
        O::DsMaxF32 | O::DsMaxU32 => (K::DsAtomic(At::Umax, false), lc(1, true)),
        O::DsMaxI32 => (K::DsAtomic(At::Max, false), lc(1, true)),
        O::DsMaxRtnU32 => (K::DsAtomic(At::Umax, true), lc(1, false)),
        O::DsMinF32 | O::DsMinU32 => (K::DsAtomic(At::Umin, false), lc(1, true)),
        O::DsMinI32 => (K::DsAtomic(At::Min, false), lc(1, true)),
        O::DsMinRtnU32 => (K::DsAtomic(At::Umin, true), lc(1, false)),
        O::DsOrB32 => (K::DsAtomic(At::Or, false), lc(1, true)),
        O::DsOrRtnB32 => (K::DsAtomic(At::Or, true), lc(1, false)),
        O::DsStore2addrB32 => (K::DsStore2(1, false), lc(2, true)),
        O::DsStore2addrB64 => (K::DsStore2(2, false), lc(4, true)),
        O::DsStore2addrStride64B32 => (K::DsStore2(1, true), lc(2, true)),
        O::DsStore2addrStride64B64 => (K::DsStore2(2, true), lc(4, true)),
        O::DsStoreB128 => ds_store(mem(16, false, 4, 0)),
        O::DsStoreB16 => ds_store(mem(2, false, 1, 0)),
        O::DsStoreB16D16Hi => ds_store(mem(2, false, 1, 2)),
        O::DsStoreB32 => ds_store(mem(4, false, 1, 0)),
        O::DsStoreB64 => ds_store(mem(8, false, 2, 0)),
        O::DsStoreB8 => ds_store(mem(1, false, 1, 0)),
        O::DsStoreB8D16Hi => ds_store(mem(1, false, 1, 2)),
        O::DsStoreB96 => ds_store(mem(12, false, 3, 0)),
        O::DsStorexchgRtnB32 => (K::DsAtomic(At::Swap, true), lc(1, false)),
        O::DsSubRtnU32 => (K::DsAtomic(At::Sub, true), lc(1, false)),
        O::DsSubU32 => (K::DsAtomic(At::Sub, false), lc(1, true)),
        O::DsSwizzleB32 => (K::DsSwizzle, lc(1, false)),
        O::DsXorB32 => (K::DsAtomic(At::Xor, false), lc(1, true)),
        O::DsXorRtnB32 => (K::DsAtomic(At::Xor, true), lc(1, false)),
        _ => return None,
    })
}

/// Semantics and class of `op` in encoding `enc`.
pub fn lookup(enc: Encoding, op: O) -> Option<(K, Class)> {
    use Encoding as E;
    match enc {
        E::Sopp => Some(match op {
            O::SNop => (K::SNop, Class::Immediate),
            O::SClause
            | O::SWaitcntDepctr
            | O::SSetInstPrefetchDistance
            | O::SSleep
            | O::SSetprio
            | O::SWaitcntExpcnt => (K::Nop, Class::Immediate),
            O::SDelayAlu => (K::DelayAlu, Class::Silent),
            O::SCodeEnd | O::SIcacheInv => (K::Nop, Class::Silent),
            O::SWaitcnt => (K::Waitcnt, Class::Immediate),
            O::SEndpgm => (K::Endpgm, Class::Silent),
            O::SBarrier => (K::Barrier, Class::Barrier),
            O::SSendmsg | O::SSendmsghalt => (K::Nop, Class::Message),
            O::SBranch => (K::Branch(Br::Always), Class::Branch),
            O::SCbranchScc0 => (K::Branch(Br::Scc0), Class::Branch),
            O::SCbranchScc1 => (K::Branch(Br::Scc1), Class::Branch),
            O::SCbranchVccz => (K::Branch(Br::Vccz), Class::Branch),
            O::SCbranchVccnz => (K::Branch(Br::Vccnz), Class::Branch),
            O::SCbranchExecz => (K::Branch(Br::Execz), Class::Branch),
            O::SCbranchExecnz => (K::Branch(Br::Execnz), Class::Branch),
            _ => return None,
        }),
        E::Sopk => Some(match op {
            O::SMovkI32 => (K::Movk, Class::Salu),
            O::SCmovkI32 => (K::Cmovk, Class::Salu),
            O::SAddkI32 => (K::Addk, Class::Salu),
            O::SMulkI32 => (K::Mulk, Class::Salu),
            O::SWaitcntVscnt => (K::WaitVs, Class::Immediate),
            O::SWaitcntVmcnt | O::SWaitcntLgkmcnt | O::SWaitcntExpcnt => {
                (K::Waitcnt, Class::Immediate)
            }
            _ => {
                let f = scmp(op)?;
                let signed = matches!(
                    op,
                    O::SCmpkEqI32
                        | O::SCmpkGeI32
                        | O::SCmpkGtI32
                        | O::SCmpkLeI32
                        | O::SCmpkLgI32
                        | O::SCmpkLtI32
                        | O::SCmpEqI32
                        | O::SCmpGeI32
                        | O::SCmpGtI32
                        | O::SCmpLeI32
                        | O::SCmpLgI32
                        | O::SCmpLtI32
                );
                (K::Cmpk(f, signed), Class::Salu)
            }
        }),
        E::Sopc => {
            let f = scmp(op)?;
            Some((
                K::Sc(f, matches!(op, O::SCmpEqU64 | O::SCmpLgU64)),
                Class::Salu,
            ))
        }
        E::Sop1 => {
            if op == O::SGetpcB64 {
                return Some((K::Getpc, Class::Salu));
            }
            saveexec(op).or_else(|| scalar(op))
        }
        E::Sop2 => scalar(op),
        E::Smem => match op {
            O::SLoadB128 => Some((K::Smem(4), Class::Smem)),
            O::SLoadB256 => Some((K::Smem(8), Class::Smem)),
            O::SLoadB32 => Some((K::Smem(1), Class::Smem)),
            O::SLoadB512 => Some((K::Smem(16), Class::Smem)),
            O::SLoadB64 => Some((K::Smem(2), Class::Smem)),
            _ => None,
        },
        E::Vop1 | E::Vop2 | E::Vop3 | E::Vopc => {
            if is_cmp(op) {
                vcmp(op)
            } else {
                valu(op)
                    .or_else(|| half16(op))
                    .or_else(|| super::ext::f64_lookup(op))
            }
        }
        E::Vop3p => packed(op).or_else(|| super::ext::wmma_lookup(op, false)),
        E::Flat | E::Global | E::Scratch => vmem(enc, op),
        E::Ds => ds(op),
        E::Mubuf | E::Mtbuf => match op {
            O::BufferGl0Inv | O::BufferGl1Inv => Some((K::CacheOp, Class::Immediate)),
            _ => super::ext::buf_lookup(op),
        },
        _ => None,
    }
}

/// The gfx11 operation of a gfx12 (RDNA4) one whose semantics are unchanged.
pub fn alias12(op: O) -> O {
    match op {
        O::SAddCoI32 => O::SAddI32,
        O::SSubCoI32 => O::SSubI32,
        O::SAddCoU32 => O::SAddU32,
        O::SSubCoU32 => O::SSubU32,
        O::SAddCoCiU32 => O::SAddcU32,
        O::SSubCoCiU32 => O::SSubbU32,
        O::VMadCoU64U32 => O::VMadU64U32,
        O::VMadCoI64I32 => O::VMadI64I32,
        // IEEE minNum/maxNum: what gfx11's v_min/max_f32 compute in IEEE mode.
        O::VMaxNumF32 => O::VMaxF32,
        O::VMinNumF32 => O::VMinF32,
        O::VMax3NumF32 => O::VMax3F32,
        O::VMin3NumF32 => O::VMin3F32,
        O::VMed3NumF32 => O::VMed3F32,
        O::VMaxNumF16 => O::VMaxF16,
        O::VMinNumF16 => O::VMinF16,
        O::VPkMaxNumF16 => O::VPkMaxF16,
        O::VPkMinNumF16 => O::VPkMinF16,
        _ => op,
    }
}

/// IEEE 754-2019 minimum/maximum (gfx12 v_minimum/v_maximum): NaN propagates, -0 < +0.
fn fminimum(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a == b {
        if a.is_sign_negative() {
            a
        } else {
            b
        }
    } else {
        a.min(b)
    }
}
fn fmaximum(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a == b {
        if a.is_sign_positive() {
            a
        } else {
            b
        }
    } else {
        a.max(b)
    }
}

/// Semantics and class of `op` on gfx12: the operations RDNA4 added or split, then the gfx11
/// table under the gfx11 operation ([`alias12`]).
pub fn lookup12(enc: Encoding, op: O) -> Option<(K, Class)> {
    use Encoding as E;
    let v = |f: VFn| Some((K::V(f, true), Class::Valu));
    let s = |f: SFn| Some((K::S(f, 0b111), Class::Salu));
    match (enc, op) {
        (E::Sopp, O::SWaitLoadcnt) => Some((K::Wait12(W12::Load), Class::Immediate)),
        (E::Sopp, O::SWaitStorecnt) => Some((K::Wait12(W12::Store), Class::Immediate)),
        (E::Sopp, O::SWaitKmcnt) => Some((K::Wait12(W12::Km), Class::Immediate)),
        (E::Sopp, O::SWaitDscnt) => Some((K::Wait12(W12::Ds), Class::Immediate)),
        (E::Sopp, O::SWaitLoadcntDscnt) => Some((K::Wait12(W12::LoadDs), Class::Immediate)),
        (E::Sopp, O::SWaitStorecntDscnt) => Some((K::Wait12(W12::StoreDs), Class::Immediate)),
        // Counters of operations the emulator does not issue (sampler, BVH, export).
        (E::Sopp, O::SWaitSamplecnt | O::SWaitBvhcnt | O::SWaitExpcnt) => {
            Some((K::Nop, Class::Immediate))
        }
        // Dependency hints: no token on hardware either (sqtt-format.md §7.2).
        (E::Sopp, O::SWaitAlu) => Some((K::Nop, Class::Silent)),
        // Split barrier: the wave arrives at signal and blocks at wait. With
        // `exclude_barrier_wait` (how captures are configured) only the signal has a token.
        (E::Sop1, O::SBarrierSignal) => Some((K::Nop, Class::BarrierSignal)),
        (E::Sopp, O::SBarrierWait) => Some((K::Barrier, Class::BarrierWait)),
        (E::Global, O::GlobalInv | O::GlobalWb | O::GlobalWbinv) => {
            Some((K::CacheOp, Class::Immediate))
        }
        (E::Smem, O::SLoadB96) => Some((K::Smem(3), Class::Smem)),
        (E::Vop3p, _) if super::ext::wmma_lookup(op, true).is_some() => {
            super::ext::wmma_lookup(op, true)
        }
        (E::Sop2, O::SAddNcU64) => s(sf!(|a, b, s| (a.wrapping_add(b), None))),
        (E::Sop2, O::SSubNcU64) => s(sf!(|a, b, s| (a.wrapping_sub(b), None))),
        (E::Sop2, O::SMulU64) => s(sf!(|a, b, s| (a.wrapping_mul(b), None))),
        (E::Vop1 | E::Vop2 | E::Vop3, O::VMaximumF32) => {
            v(vf!(|a, b, c| fb(fmaximum(fl(a), fl(b)))))
        }
        (E::Vop1 | E::Vop2 | E::Vop3, O::VMinimumF32) => {
            v(vf!(|a, b, c| fb(fminimum(fl(a), fl(b)))))
        }
        (E::Vop3, O::VMaximum3F32) => v(vf!(|a, b, c| fb(fmaximum(fmaximum(fl(a), fl(b)), fl(c))))),
        (E::Vop3, O::VMinimum3F32) => v(vf!(|a, b, c| fb(fminimum(fminimum(fl(a), fl(b)), fl(c))))),
        (E::Vop3, O::VMaxminNumF32) => v(vf!(|a, b, c| fb(fmin(fmax(fl(a), fl(b)), fl(c))))),
        (E::Vop3, O::VMinmaxNumF32) => v(vf!(|a, b, c| fb(fmax(fmin(fl(a), fl(b)), fl(c))))),
        _ => lookup(enc, alias12(op)),
    }
}

/// Which operands of a 16-bit VALU instruction are 16-bit (bit k: src k, bit 3: dst): they
/// read or write one half of a VGPR (true16 register bit 7 in VOP1/VOP2/VOPC, op_sel in VOP3).
/// 0 for everything else (32-bit operands, and VOP3P, which has its own op_sel rules).
pub fn half_mask(op: O) -> u8 {
    match op {
        O::SPackHhB32B16
        | O::SPackLhB32B16
        | O::SPackLlB32B16
        | O::SSextI32I16
        | O::VAddF16
        | O::VAddNcI16
        | O::VAddNcU16
        | O::VAndB16
        | O::VAshrrevI16
        | O::VCeilF16
        | O::VCvtF16I16
        | O::VCvtF16U16
        | O::VCvtI16F16
        | O::VCvtU16F16
        | O::VExpF16
        | O::VFloorF16
        | O::VFmaF16
        | O::VFmaakF16
        | O::VFmacF16
        | O::VFmamkF16
        | O::VFractF16
        | O::VLdexpF16
        | O::VLogF16
        | O::VLshlrevB16
        | O::VLshrrevB16
        | O::VMadI16
        | O::VMadU16
        | O::VMax3F16
        | O::VMaxF16
        | O::VMaxI16
        | O::VMaxNumF16
        | O::VMaxU16
        | O::VMed3F16
        | O::VMin3F16
        | O::VMinF16
        | O::VMinI16
        | O::VMinNumF16
        | O::VMinU16
        | O::VMovB16
        | O::VMulF16
        | O::VMulLoU16
        | O::VNotB16
        | O::VOrB16
        | O::VRcpF16
        | O::VRndneF16
        | O::VRsqF16
        | O::VSqrtF16
        | O::VSubF16
        | O::VSubNcI16
        | O::VSubNcU16
        | O::VSubrevF16
        | O::VTruncF16
        | O::VXorB16 => 0b1111,
        O::VCmpEqF16
        | O::VCmpEqI16
        | O::VCmpEqU16
        | O::VCmpFF16
        | O::VCmpFI16
        | O::VCmpFU16
        | O::VCmpGeF16
        | O::VCmpGeI16
        | O::VCmpGeU16
        | O::VCmpGtF16
        | O::VCmpGtI16
        | O::VCmpGtU16
        | O::VCmpLeF16
        | O::VCmpLeI16
        | O::VCmpLeU16
        | O::VCmpLgF16
        | O::VCmpLtF16
        | O::VCmpLtI16
        | O::VCmpLtU16
        | O::VCmpNeI16
        | O::VCmpNeU16
        | O::VCmpNeqF16
        | O::VCmpNgeF16
        | O::VCmpNgtF16
        | O::VCmpNleF16
        | O::VCmpNlgF16
        | O::VCmpNltF16
        | O::VCmpOF16
        | O::VCmpTF16
        | O::VCmpTI16
        | O::VCmpTU16
        | O::VCmpUF16
        | O::VCmpxEqF16
        | O::VCmpxEqI16
        | O::VCmpxEqU16
        | O::VCmpxFF16
        | O::VCmpxFI16
        | O::VCmpxFU16
        | O::VCmpxGeF16
        | O::VCmpxGeI16
        | O::VCmpxGeU16
        | O::VCmpxGtF16
        | O::VCmpxGtI16
        | O::VCmpxGtU16
        | O::VCmpxLeF16
        | O::VCmpxLeI16
        | O::VCmpxLeU16
        | O::VCmpxLgF16
        | O::VCmpxLtF16
        | O::VCmpxLtI16
        | O::VCmpxLtU16
        | O::VCmpxNeI16
        | O::VCmpxNeU16
        | O::VCmpxNeqF16
        | O::VCmpxNgeF16
        | O::VCmpxNgtF16
        | O::VCmpxNleF16
        | O::VCmpxNlgF16
        | O::VCmpxNltF16
        | O::VCmpxOF16
        | O::VCmpxTF16
        | O::VCmpxTI16
        | O::VCmpxTU16
        | O::VCmpxUF16
        | O::VMadI32I16
        | O::VMadU32U16
        | O::VPackB32F16 => 0b0011,
        O::VCvtF16F32 => 0b1000,
        O::VCvtF32F16 | O::VCvtI32I16 | O::VCvtU32U16 => 0b0001,
        _ => 0,
    }
}

/// f16 bits (low 16 of `x`) as f64 (exact).
#[inline]
fn h64(x: u32) -> f64 {
    f64::from(f16_to_f32(x as u16))
}

/// f64 → f16 bits, round to nearest even (one rounding: the f16 operations compute their
/// exact result in f64 first, see [`fma_odd`]).
pub fn f64_to_f16(x: f64) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 48) & 0x8000) as u16;
    let exp = ((b >> 52) & 0x7FF) as i32;
    let man = b & ((1u64 << 52) - 1);
    if exp == 0x7FF {
        return sign
            | 0x7C00
            | if man != 0 {
                0x200 | (man >> 42) as u16
            } else {
                0
            };
    }
    let e = exp - 1023 + 15;
    if e >= 31 {
        return sign | 0x7C00;
    }
    let (m, shift) = if e <= 0 {
        // Below 2^-35: far under half the smallest subnormal (2^-24).
        if e < -20 {
            return sign;
        }
        (man | (1 << 52), (43 - e) as u32)
    } else {
        (man, 42u32)
    };
    let mut h = (m >> shift) as u16;
    let rem = m & ((1u64 << shift) - 1);
    let half = 1u64 << (shift - 1);
    if rem > half || (rem == half && h & 1 == 1) {
        h += 1;
    }
    if e <= 0 {
        sign | h
    } else {
        // A carry out of the mantissa bumps the exponent (up to infinity), as it should.
        sign | (((e as u16) << 10) + h)
    }
}

/// `p + c` rounded to f64 with round-to-odd, where `p` is an exact product (f16×f16 and
/// f32×f32 products are exact in f64). Rounding that once more to f32 or f16 (both narrower
/// than 53 - 2 bits) gives the correctly rounded fused result.
pub fn fma_odd(p: f64, c: f64) -> f64 {
    let s = p + c;
    if !s.is_finite() {
        return s;
    }
    // Two-sum: the exact rounding error of the addition.
    let bb = s - p;
    let err = (p - (s - bb)) + (c - bb);
    if err != 0.0 && s.to_bits() & 1 == 0 {
        // Inexact with an even last bit: take the neighbour toward the exact value (odd).
        let away = (err > 0.0) == (s > 0.0);
        return f64::from_bits(if away {
            s.to_bits() + 1
        } else {
            s.to_bits() - 1
        });
    }
    s
}

/// An exact f64 result rounded to f16 bits.
#[inline]
fn hb64(x: f64) -> u32 {
    u32::from(f64_to_f16(x))
}

/// A result computed in f32 from f16 inputs (min/max/rounding: exact) back to f16 bits.
#[inline]
fn hb32(x: f32) -> u32 {
    u32::from(f32_to_f16(x, false))
}

#[inline]
fn h32(x: u32) -> f32 {
    f16_to_f32(x as u16)
}

fn sx16(x: u32) -> i32 {
    i32::from(x as u16 as i16)
}

/// 16-bit (true16 / op_sel) VALU operations. The lane functions see 16-bit operands
/// zero-extended in the low half; only the low 16 bits of a 16-bit result are kept.
fn half16(op: O) -> Option<(K, Class)> {
    use Class::{Valu as C, ValuTrans as T};
    let m = half_mask(op);
    let v = |f: VFn, float: bool| Some((K::V16(f, float, m), C));
    let t = |f: VFn| Some((K::V16(f, true, m), T));
    match op {
        O::VMovB16 => v(vf!(|a, b, c| a), false),
        O::VCvtF16F32 => v(vf!(|a, b, c| hb32(fl(a))), true),
        O::VCvtF32F16 => v(vf!(|a, b, c| fb(h32(a))), true),
        O::VCvtI32I16 => v(vf!(|a, b, c| sx16(a) as u32), false),
        O::VCvtU32U16 => v(vf!(|a, b, c| a & 0xFFFF), false),
        O::VCvtF16I16 => v(vf!(|a, b, c| hb64(f64::from(sx16(a)))), true),
        O::VCvtF16U16 => v(vf!(|a, b, c| hb64(f64::from(a as u16))), true),
        // Rust's float-to-int casts saturate and send NaN to 0, as the hardware does.
        O::VCvtI16F16 => v(vf!(|a, b, c| h32(a) as i16 as u16 as u32), false),
        O::VCvtU16F16 => v(vf!(|a, b, c| h32(a) as u16 as u32), false),
        O::VAddF16 => v(vf!(|a, b, c| hb64(h64(a) + h64(b))), true),
        O::VSubF16 => v(vf!(|a, b, c| hb64(h64(a) - h64(b))), true),
        O::VSubrevF16 => v(vf!(|a, b, c| hb64(h64(b) - h64(a))), true),
        O::VMulF16 => v(vf!(|a, b, c| hb64(h64(a) * h64(b))), true),
        O::VFmaF16 | O::VFmacF16 | O::VFmamkF16 | O::VFmaakF16 => {
            v(vf!(|a, b, c| hb64(fma_odd(h64(a) * h64(b), h64(c)))), true)
        }
        O::VMaxF16 => v(vf!(|a, b, c| hb32(fmax(h32(a), h32(b)))), true),
        O::VMinF16 => v(vf!(|a, b, c| hb32(fmin(h32(a), h32(b)))), true),
        O::VMax3F16 => v(
            vf!(|a, b, c| hb32(fmax(fmax(h32(a), h32(b)), h32(c)))),
            true,
        ),
        O::VMin3F16 => v(
            vf!(|a, b, c| hb32(fmin(fmin(h32(a), h32(b)), h32(c)))),
            true,
        ),
        O::VMed3F16 => v(vf!(|a, b, c| hb32(med3(h32(a), h32(b), h32(c)))), true),
        O::VLdexpF16 => v(
            vf!(|a, b, c| hb64(h64(a) * 2f64.powi(sx16(b).clamp(-100, 100)))),
            true,
        ),
        O::VTruncF16 => v(vf!(|a, b, c| hb32(h32(a).trunc())), true),
        O::VCeilF16 => v(vf!(|a, b, c| hb32(h32(a).ceil())), true),
        O::VFloorF16 => v(vf!(|a, b, c| hb32(h32(a).floor())), true),
        O::VRndneF16 => v(vf!(|a, b, c| hb32(h32(a).round_ties_even())), true),
        O::VFractF16 => v(vf!(|a, b, c| hb32(h32(a) - h32(a).floor())), true),
        O::VSqrtF16 => t(vf!(|a, b, c| hb64(h64(a).sqrt()))),
        O::VRcpF16 => t(vf!(|a, b, c| hb64(1.0 / h64(a)))),
        O::VRsqF16 => t(vf!(|a, b, c| hb64(1.0 / h64(a).sqrt()))),
        O::VExpF16 => t(vf!(|a, b, c| hb64(h64(a).exp2()))),
        O::VLogF16 => t(vf!(|a, b, c| hb64(h64(a).log2()))),
        O::VAddNcU16 | O::VAddNcI16 => v(vf!(|a, b, c| a.wrapping_add(b)), false),
        O::VSubNcU16 | O::VSubNcI16 => v(vf!(|a, b, c| a.wrapping_sub(b)), false),
        O::VMulLoU16 => v(vf!(|a, b, c| a.wrapping_mul(b)), false),
        O::VMadU16 | O::VMadI16 => v(vf!(|a, b, c| a.wrapping_mul(b).wrapping_add(c)), false),
        O::VMadU32U16 => v(vf!(|a, b, c| a.wrapping_mul(b).wrapping_add(c)), false),
        O::VMadI32I16 => v(
            vf!(|a, b, c| sx16(a).wrapping_mul(sx16(b)).wrapping_add(c as i32) as u32),
            false,
        ),
        O::VMinI16 => v(vf!(|a, b, c| sx16(a).min(sx16(b)) as u32), false),
        O::VMaxI16 => v(vf!(|a, b, c| sx16(a).max(sx16(b)) as u32), false),
        O::VMinU16 => v(vf!(|a, b, c| a.min(b)), false),
        O::VMaxU16 => v(vf!(|a, b, c| a.max(b)), false),
        O::VLshlrevB16 => v(vf!(|a, b, c| b << (a & 15)), false),
        O::VLshrrevB16 => v(vf!(|a, b, c| b >> (a & 15)), false),
        O::VAshrrevI16 => v(vf!(|a, b, c| (sx16(b) >> (a & 15)) as u32), false),
        O::VAndB16 => v(vf!(|a, b, c| a & b), false),
        O::VOrB16 => v(vf!(|a, b, c| a | b), false),
        O::VXorB16 => v(vf!(|a, b, c| a ^ b), false),
        O::VNotB16 => v(vf!(|a, b, c| !a), false),
        O::VPackB32F16 => v(vf!(|a, b, c| (a & 0xFFFF) | (b << 16)), false),
        _ => None,
    }
}

/// VOP3P packed 16-bit operations ([`K::Pk`]) and the mixed-precision FMAs.
fn packed(op: O) -> Option<(K, Class)> {
    let v = |f: VFn, float: bool| Some((K::Pk(f, float), Class::Valu));
    match op {
        O::VFmaMixF32 => Some((K::FmaMix(0), Class::Valu)),
        O::VFmaMixloF16 => Some((K::FmaMix(1), Class::Valu)),
        O::VFmaMixhiF16 => Some((K::FmaMix(2), Class::Valu)),
        O::VPkAddF16 => v(vf!(|a, b, c| hb64(h64(a) + h64(b))), true),
        O::VPkMulF16 => v(vf!(|a, b, c| hb64(h64(a) * h64(b))), true),
        O::VPkFmaF16 => v(vf!(|a, b, c| hb64(fma_odd(h64(a) * h64(b), h64(c)))), true),
        O::VPkMaxF16 => v(vf!(|a, b, c| hb32(fmax(h32(a), h32(b)))), true),
        O::VPkMinF16 => v(vf!(|a, b, c| hb32(fmin(h32(a), h32(b)))), true),
        O::VPkAddU16 | O::VPkAddI16 => v(vf!(|a, b, c| a.wrapping_add(b)), false),
        O::VPkSubU16 | O::VPkSubI16 => v(vf!(|a, b, c| a.wrapping_sub(b)), false),
        O::VPkMulLoU16 => v(vf!(|a, b, c| a.wrapping_mul(b)), false),
        O::VPkMadU16 | O::VPkMadI16 => v(vf!(|a, b, c| a.wrapping_mul(b).wrapping_add(c)), false),
        O::VPkMinI16 => v(vf!(|a, b, c| sx16(a).min(sx16(b)) as u32), false),
        O::VPkMaxI16 => v(vf!(|a, b, c| sx16(a).max(sx16(b)) as u32), false),
        O::VPkMinU16 => v(vf!(|a, b, c| a.min(b)), false),
        O::VPkMaxU16 => v(vf!(|a, b, c| a.max(b)), false),
        O::VPkLshlrevB16 => v(vf!(|a, b, c| b << (a & 15)), false),
        O::VPkLshrrevB16 => v(vf!(|a, b, c| b >> (a & 15)), false),
        O::VPkAshrrevI16 => v(vf!(|a, b, c| (sx16(b) >> (a & 15)) as u32), false),
        _ => None,
    }
}
