//! Instruction semantics by mnemonic: the [`K`] an instruction executes as, and its timing
//! [`Class`]. Lane-wise VALU operations are monomorphised `fn` items over 64 lanes so the
//! interpreter loop calls one function per instruction, not one per lane.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

use traces::isa::Encoding;

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
}

static INTERN: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();

/// A `'static` copy of a mnemonic (a bounded set: one entry per distinct mnemonic).
pub fn intern(s: &str) -> &'static str {
    let m = INTERN.get_or_init(|| Mutex::new(HashSet::new()));
    let mut g = m.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(v) = g.get(s) {
        return v;
    }
    let v: &'static str = Box::leak(s.to_string().into_boxed_str());
    g.insert(v);
    v
}

/// `v_dual_<x>` → `v_<x>`.
pub fn intern_dual(rest: &str) -> &'static str {
    intern(&format!("v_{rest}"))
}

pub fn is_vop3sd(n: &str) -> bool {
    matches!(
        n,
        "v_add_co_u32"
            | "v_sub_co_u32"
            | "v_subrev_co_u32"
            | "v_add_co_ci_u32"
            | "v_sub_co_ci_u32"
            | "v_subrev_co_ci_u32"
            | "v_div_scale_f32"
            | "v_div_scale_f64"
            | "v_mad_u64_u32"
            | "v_mad_i64_i32"
    )
}

pub fn is_cmp(n: &str) -> bool {
    n.starts_with("v_cmp_") || n.starts_with("v_cmpx_")
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

fn scalar(n: &str) -> Option<(K, Class)> {
    use Class::Salu as C;
    let s = |f: SFn, w: u8| Some((K::S(f, w), C));
    match n {
        "s_mov_b32" => s(sf!(|a, b, s| (a, None)), 0),
        "s_mov_b64" => s(sf!(|a, b, s| (a, None)), 0b101),
        "s_cmov_b32" => None,
        "s_not_b32" => s(sf!(|a, b, s| (!a & 0xFFFF_FFFF, cnd(!a as u32 != 0))), 0),
        "s_not_b64" => s(sf!(|a, b, s| (!a, cnd(!a != 0))), 0b101),
        "s_brev_b32" => s(sf!(|a, b, s| ((a as u32).reverse_bits() as u64, None)), 0),
        "s_bcnt1_i32_b32" => s(
            sf!(|a, b, s| {
                let r = (a as u32).count_ones() as u64;
                (r, cnd(r != 0))
            }),
            0,
        ),
        "s_bcnt1_i32_b64" => s(
            sf!(|a, b, s| {
                let r = a.count_ones() as u64;
                (r, cnd(r != 0))
            }),
            0b001,
        ),
        "s_ctz_i32_b32" => s(
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
        "s_ctz_i32_b64" => s(
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
        "s_clz_i32_u32" => s(
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
        "s_sext_i32_i8" => s(sf!(|a, b, s| (a as u8 as i8 as i32 as u32 as u64, None)), 0),
        "s_sext_i32_i16" => s(
            sf!(|a, b, s| (a as u16 as i16 as i32 as u32 as u64, None)),
            0,
        ),
        "s_abs_i32" => s(
            sf!(|a, b, s| {
                let r = (a as i32).unsigned_abs() as u64;
                (r, cnd(r != 0))
            }),
            0,
        ),
        "s_add_u32" => s(
            sf!(|a, b, s| {
                let r = (a as u32 as u64) + (b as u32 as u64);
                (r & 0xFFFF_FFFF, cnd(r >> 32 != 0))
            }),
            0,
        ),
        "s_addc_u32" => s(
            sf!(|a, b, s| {
                let r = (a as u32 as u64) + (b as u32 as u64) + s as u64;
                (r & 0xFFFF_FFFF, cnd(r >> 32 != 0))
            }),
            0,
        ),
        "s_sub_u32" => s(
            sf!(|a, b, s| {
                let (a, b) = (a as u32, b as u32);
                (a.wrapping_sub(b) as u64, cnd(b > a))
            }),
            0,
        ),
        "s_subb_u32" => s(
            sf!(|a, b, s| {
                let (a, b) = (a as u32 as u64, b as u32 as u64 + s as u64);
                (a.wrapping_sub(b) & 0xFFFF_FFFF, cnd(b > a))
            }),
            0,
        ),
        "s_add_i32" => s(
            sf!(|a, b, s| {
                let (r, o) = (a as i32).overflowing_add(b as i32);
                (r as u32 as u64, cnd(o))
            }),
            0,
        ),
        "s_sub_i32" => s(
            sf!(|a, b, s| {
                let (r, o) = (a as i32).overflowing_sub(b as i32);
                (r as u32 as u64, cnd(o))
            }),
            0,
        ),
        "s_min_i32" => s(
            sf!(|a, b, s| {
                let lt = (a as i32) < (b as i32);
                (if lt { a } else { b } & 0xFFFF_FFFF, cnd(lt))
            }),
            0,
        ),
        "s_max_i32" => s(
            sf!(|a, b, s| {
                let gt = (a as i32) > (b as i32);
                (if gt { a } else { b } & 0xFFFF_FFFF, cnd(gt))
            }),
            0,
        ),
        "s_min_u32" => s(
            sf!(|a, b, s| {
                let lt = (a as u32) < (b as u32);
                (if lt { a } else { b } & 0xFFFF_FFFF, cnd(lt))
            }),
            0,
        ),
        "s_max_u32" => s(
            sf!(|a, b, s| {
                let gt = (a as u32) > (b as u32);
                (if gt { a } else { b } & 0xFFFF_FFFF, cnd(gt))
            }),
            0,
        ),
        "s_lshl_b32" => s(
            sf!(|a, b, s| {
                let r = ((a as u32) << (b & 31)) as u64;
                (r, cnd(r != 0))
            }),
            0,
        ),
        "s_lshl_b64" => s(
            sf!(|a, b, s| {
                let r = a << (b & 63);
                (r, cnd(r != 0))
            }),
            0b101,
        ),
        "s_lshr_b32" => s(
            sf!(|a, b, s| {
                let r = ((a as u32) >> (b & 31)) as u64;
                (r, cnd(r != 0))
            }),
            0,
        ),
        "s_lshr_b64" => s(
            sf!(|a, b, s| {
                let r = a >> (b & 63);
                (r, cnd(r != 0))
            }),
            0b101,
        ),
        "s_ashr_i32" => s(
            sf!(|a, b, s| {
                let r = ((a as i32) >> (b & 31)) as u32 as u64;
                (r, cnd(r != 0))
            }),
            0,
        ),
        "s_ashr_i64" => s(
            sf!(|a, b, s| {
                let r = ((a as i64) >> (b & 63)) as u64;
                (r, cnd(r != 0))
            }),
            0b101,
        ),
        "s_lshl1_add_u32" | "s_lshl2_add_u32" | "s_lshl3_add_u32" | "s_lshl4_add_u32" => {
            let f = match n {
                "s_lshl1_add_u32" => sf!(|a, b, s| lsh_add(a, b, 1)),
                "s_lshl2_add_u32" => sf!(|a, b, s| lsh_add(a, b, 2)),
                "s_lshl3_add_u32" => sf!(|a, b, s| lsh_add(a, b, 3)),
                _ => sf!(|a, b, s| lsh_add(a, b, 4)),
            };
            s(f, 0)
        }
        "s_and_b32" | "s_and_b64" => s(sf!(|a, b, s| (a & b, cnd(a & b != 0))), w64(n)),
        "s_or_b32" | "s_or_b64" => s(sf!(|a, b, s| (a | b, cnd(a | b != 0))), w64(n)),
        "s_xor_b32" | "s_xor_b64" => s(sf!(|a, b, s| (a ^ b, cnd(a ^ b != 0))), w64(n)),
        "s_and_not1_b32" | "s_and_not1_b64" => s(sf!(|a, b, s| (a & !b, cnd(a & !b != 0))), w64(n)),
        "s_or_not1_b32" | "s_or_not1_b64" => s(
            sf!(|a, b, s| {
                let r = a | !b;
                (r, cnd(r != 0))
            }),
            w64(n),
        ),
        "s_nand_b32" | "s_nand_b64" => s(sf!(|a, b, s| (!(a & b), cnd(!(a & b) != 0))), w64(n)),
        "s_nor_b32" | "s_nor_b64" => s(sf!(|a, b, s| (!(a | b), cnd(!(a | b) != 0))), w64(n)),
        "s_xnor_b32" | "s_xnor_b64" => s(sf!(|a, b, s| (!(a ^ b), cnd(!(a ^ b) != 0))), w64(n)),
        "s_mul_i32" => s(
            sf!(|a, b, s| ((a as u32).wrapping_mul(b as u32) as u64, None)),
            0,
        ),
        "s_mul_hi_u32" => s(
            sf!(|a, b, s| (((a as u32 as u64) * (b as u32 as u64)) >> 32, None)),
            0,
        ),
        "s_mul_hi_i32" => s(
            sf!(|a, b, s| {
                let r = (a as i32 as i64) * (b as i32 as i64);
                ((r >> 32) as u32 as u64, None)
            }),
            0,
        ),
        "s_cselect_b32" => s(sf!(|a, b, s| (if s { a } else { b }, None)), 0),
        "s_cselect_b64" => s(sf!(|a, b, s| (if s { a } else { b }, None)), 0b111),
        "s_bfe_u32" => s(
            sf!(|a, b, s| {
                let r = bfe_u(a as u32, b as u32 & 31, (b as u32 >> 16) & 0x7F) as u64;
                (r, cnd(r != 0))
            }),
            0,
        ),
        "s_bfe_i32" => s(
            sf!(|a, b, s| {
                let r = bfe_i(a as u32, b as u32 & 31, (b as u32 >> 16) & 0x7F) as u64;
                (r, cnd(r != 0))
            }),
            0,
        ),
        "s_bfm_b32" => s(
            sf!(|a, b, s| {
                let w = a as u32 & 31;
                let m = if w == 0 { 0 } else { (1u32 << w) - 1 };
                ((m << (b as u32 & 31)) as u64, None)
            }),
            0,
        ),
        "s_pack_ll_b32_b16" => s(
            sf!(|a, b, s| ((a & 0xFFFF) | ((b & 0xFFFF) << 16), None)),
            0,
        ),
        "s_pack_lh_b32_b16" => s(sf!(|a, b, s| ((a & 0xFFFF) | (b & 0xFFFF_0000), None)), 0),
        "s_pack_hh_b32_b16" => s(
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

fn w64(n: &str) -> u8 {
    if n.ends_with("_b64") {
        0b111
    } else {
        0
    }
}

fn saveexec(n: &str) -> Option<(K, Class)> {
    let w = n.ends_with("_b64");
    let base = n.strip_suffix("_b64").or_else(|| n.strip_suffix("_b32"))?;
    let f: fn(u64, u64) -> u64 = match base {
        "s_and_saveexec" => |s, e| s & e,
        "s_or_saveexec" => |s, e| s | e,
        "s_xor_saveexec" => |s, e| s ^ e,
        "s_and_not1_saveexec" => |s, e| s & !e,
        "s_or_not1_saveexec" => |s, e| s | !e,
        "s_and_not0_saveexec" => |s, e| !s & e,
        "s_or_not0_saveexec" => |s, e| !s | e,
        "s_nand_saveexec" => |s, e| !(s & e),
        "s_nor_saveexec" => |s, e| !(s | e),
        "s_xnor_saveexec" => |s, e| !(s ^ e),
        _ => return None,
    };
    Some((K::Saveexec(f, w), Class::SaluSaveexec))
}

fn scmp(n: &str) -> Option<fn(u64, u64) -> bool> {
    let (c, t) = n.rsplit_once('_')?;
    let c = c
        .strip_prefix("s_cmp_")
        .or_else(|| c.strip_prefix("s_cmpk_"))?;
    Some(match (c, t) {
        ("eq", "i32" | "u32" | "u64") => |a, b| a == b,
        ("lg", "i32" | "u32" | "u64") => |a, b| a != b,
        ("gt", "i32") => |a, b| (a as i32) > (b as i32),
        ("ge", "i32") => |a, b| (a as i32) >= (b as i32),
        ("lt", "i32") => |a, b| (a as i32) < (b as i32),
        ("le", "i32") => |a, b| (a as i32) <= (b as i32),
        ("gt", "u32") => |a, b| (a as u32) > (b as u32),
        ("ge", "u32") => |a, b| (a as u32) >= (b as u32),
        ("lt", "u32") => |a, b| (a as u32) < (b as u32),
        ("le", "u32") => |a, b| (a as u32) <= (b as u32),
        _ => return None,
    })
}

fn vcmp(n: &str) -> Option<(K, Class)> {
    let (x, rest) = if let Some(r) = n.strip_prefix("v_cmpx_") {
        (true, r)
    } else {
        (false, n.strip_prefix("v_cmp_")?)
    };
    let class = if x { Class::ValuCmpx } else { Class::Valu };
    if rest == "class_f32" {
        return Some((K::CmpClass(x), class));
    }
    let (c, t) = rest.rsplit_once('_')?;
    let ty = match t {
        "f32" => Ty::F32,
        "i32" => Ty::I32,
        "u32" => Ty::U32,
        "f64" => Ty::F64,
        "i64" => Ty::I64,
        "u64" => Ty::U64,
        "i16" => Ty::I16,
        "u16" => Ty::U16,
        "f16" => Ty::F16,
        _ => return None,
    };
    let c = match c {
        "f" => Cmp::F,
        "lt" => Cmp::Lt,
        "eq" => Cmp::Eq,
        "le" => Cmp::Le,
        "gt" => Cmp::Gt,
        "lg" | "ne" => Cmp::Ne,
        "ge" => Cmp::Ge,
        "t" => Cmp::T,
        "o" => Cmp::O,
        "u" => Cmp::U,
        "nge" => Cmp::Nge,
        "nlg" => Cmp::Nlg,
        "ngt" => Cmp::Ngt,
        "nle" => Cmp::Nle,
        "neq" => Cmp::Neq,
        "nlt" => Cmp::Nlt,
        _ => return None,
    };
    let class = if matches!(ty, Ty::F64 | Ty::I64 | Ty::U64) && !x {
        Class::Valu64
    } else {
        class
    };
    Some((K::Cmp(c, ty, x), class))
}

fn valu(n: &str) -> Option<(K, Class)> {
    use Class::{Valu as C, ValuTrans as T};
    let v = |f: VFn, float: bool| Some((K::V(f, float), C));
    let t = |f: VFn| Some((K::V(f, true), T));
    match n {
        "v_mov_b32" => v(vf!(|a, b, c| a), false),
        "v_not_b32" => v(vf!(|a, b, c| !a), false),
        "v_bfrev_b32" => v(vf!(|a, b, c| a.reverse_bits()), false),
        "v_clz_i32_u32" => v(
            vf!(|a, b, c| if a == 0 { u32::MAX } else { a.leading_zeros() }),
            false,
        ),
        "v_ctz_i32_b32" => v(
            vf!(|a, b, c| if a == 0 { u32::MAX } else { a.trailing_zeros() }),
            false,
        ),
        "v_cvt_f32_i32" => v(vf!(|a, b, c| fb(a as i32 as f32)), true),
        "v_cvt_f32_u32" => v(vf!(|a, b, c| fb(a as f32)), true),
        "v_cvt_u32_f32" => v(vf!(|a, b, c| fl(a) as u32), false),
        "v_cvt_i32_f32" => v(vf!(|a, b, c| fl(a) as i32 as u32), false),
        "v_cvt_f32_ubyte0" => v(vf!(|a, b, c| fb((a & 0xFF) as f32)), true),
        "v_trunc_f32" => v(vf!(|a, b, c| fb(fl(a).trunc())), true),
        "v_ceil_f32" => v(vf!(|a, b, c| fb(fl(a).ceil())), true),
        "v_floor_f32" => v(vf!(|a, b, c| fb(fl(a).floor())), true),
        "v_rndne_f32" => v(vf!(|a, b, c| fb(fl(a).round_ties_even())), true),
        "v_fract_f32" => v(vf!(|a, b, c| fb(fl(a) - fl(a).floor())), true),
        "v_exp_f32" => t(vf!(|a, b, c| fb(fl(a).exp2()))),
        "v_log_f32" => t(vf!(|a, b, c| fb(fl(a).log2()))),
        "v_rcp_f32" | "v_rcp_iflag_f32" => t(vf!(|a, b, c| fb(1.0 / fl(a)))),
        "v_rsq_f32" => t(vf!(|a, b, c| fb(1.0 / fl(a).sqrt()))),
        "v_sqrt_f32" => t(vf!(|a, b, c| fb(fl(a).sqrt()))),
        "v_sin_f32" => t(vf!(|a, b, c| fb((fl(a) * std::f32::consts::TAU).sin()))),
        "v_cos_f32" => t(vf!(|a, b, c| fb((fl(a) * std::f32::consts::TAU).cos()))),
        "v_add_f32" => v(vf!(|a, b, c| fb(fl(a) + fl(b))), true),
        "v_sub_f32" => v(vf!(|a, b, c| fb(fl(a) - fl(b))), true),
        "v_subrev_f32" => v(vf!(|a, b, c| fb(fl(b) - fl(a))), true),
        "v_mul_f32" => v(vf!(|a, b, c| fb(fl(a) * fl(b))), true),
        "v_mul_dx9_zero_f32" => v(
            vf!(|a, b, c| if fl(a) == 0.0 || fl(b) == 0.0 {
                0
            } else {
                fb(fl(a) * fl(b))
            }),
            true,
        ),
        "v_min_f32" => v(vf!(|a, b, c| fb(fmin(fl(a), fl(b)))), true),
        "v_max_f32" => v(vf!(|a, b, c| fb(fmax(fl(a), fl(b)))), true),
        "v_min3_f32" => v(vf!(|a, b, c| fb(fmin(fmin(fl(a), fl(b)), fl(c)))), true),
        "v_max3_f32" => v(vf!(|a, b, c| fb(fmax(fmax(fl(a), fl(b)), fl(c)))), true),
        "v_med3_f32" => v(vf!(|a, b, c| fb(med3(fl(a), fl(b), fl(c)))), true),
        "v_fma_f32" | "v_fmac_f32" | "v_fmamk_f32" | "v_fmaak_f32" => v(fma_f32, true),
        "v_ldexp_f32" => v(vf!(|a, b, c| fb(ldexp(fl(a), b as i32))), true),
        "v_min_i32" => v(vf!(|a, b, c| (a as i32).min(b as i32) as u32), false),
        "v_max_i32" => v(vf!(|a, b, c| (a as i32).max(b as i32) as u32), false),
        "v_min_u32" => v(vf!(|a, b, c| a.min(b)), false),
        "v_max_u32" => v(vf!(|a, b, c| a.max(b)), false),
        "v_min3_i32" => v(
            vf!(|a, b, c| (a as i32).min(b as i32).min(c as i32) as u32),
            false,
        ),
        "v_max3_i32" => v(
            vf!(|a, b, c| (a as i32).max(b as i32).max(c as i32) as u32),
            false,
        ),
        "v_min3_u32" => v(vf!(|a, b, c| a.min(b).min(c)), false),
        "v_max3_u32" => v(vf!(|a, b, c| a.max(b).max(c)), false),
        "v_med3_i32" => v(
            vf!(|a, b, c| {
                let (a, b, c) = (a as i32, b as i32, c as i32);
                a.min(b).max(a.max(b).min(c)) as u32
            }),
            false,
        ),
        "v_med3_u32" => v(vf!(|a, b, c| a.min(b).max(a.max(b).min(c))), false),
        "v_lshlrev_b32" => v(vf!(|a, b, c| b << (a & 31)), false),
        "v_lshrrev_b32" => v(vf!(|a, b, c| b >> (a & 31)), false),
        "v_ashrrev_i32" => v(vf!(|a, b, c| ((b as i32) >> (a & 31)) as u32), false),
        "v_and_b32" => v(vf!(|a, b, c| a & b), false),
        "v_or_b32" => v(vf!(|a, b, c| a | b), false),
        "v_xor_b32" => v(vf!(|a, b, c| a ^ b), false),
        "v_xnor_b32" => v(vf!(|a, b, c| !(a ^ b)), false),
        "v_add_nc_u32" => v(vf!(|a, b, c| a.wrapping_add(b)), false),
        "v_sub_nc_u32" => v(vf!(|a, b, c| a.wrapping_sub(b)), false),
        "v_subrev_nc_u32" => v(vf!(|a, b, c| b.wrapping_sub(a)), false),
        "v_mul_i32_i24" => v(vf!(|a, b, c| (sx24(a).wrapping_mul(sx24(b))) as u32), false),
        "v_mul_u32_u24" => v(
            vf!(|a, b, c| (a & 0xFF_FFFF).wrapping_mul(b & 0xFF_FFFF)),
            false,
        ),
        "v_mul_hi_u32_u24" => v(
            vf!(|a, b, c| (((a & 0xFF_FFFF) as u64 * (b & 0xFF_FFFF) as u64) >> 32) as u32),
            false,
        ),
        "v_mad_u32_u24" => v(
            vf!(|a, b, c| (a & 0xFF_FFFF).wrapping_mul(b & 0xFF_FFFF).wrapping_add(c)),
            false,
        ),
        "v_mad_i32_i24" => v(
            vf!(|a, b, c| (sx24(a).wrapping_mul(sx24(b)) as u32).wrapping_add(c)),
            false,
        ),
        "v_mul_lo_u32" => v(vf!(|a, b, c| a.wrapping_mul(b)), false),
        "v_mul_hi_u32" => v(vf!(|a, b, c| ((a as u64 * b as u64) >> 32) as u32), false),
        "v_mul_hi_i32" => v(
            vf!(|a, b, c| ((a as i32 as i64 * b as i32 as i64) >> 32) as u32),
            false,
        ),
        "v_bfe_u32" => v(vf!(|a, b, c| bfe_u(a, b, c)), false),
        "v_bfe_i32" => v(vf!(|a, b, c| bfe_i(a, b, c)), false),
        "v_bfi_b32" => v(vf!(|a, b, c| (a & b) | (!a & c)), false),
        "v_bfm_b32" => v(
            vf!(|a, b, c| {
                let w = a & 31;
                (if w == 0 { 0 } else { (1u32 << w) - 1 }) << (b & 31)
            }),
            false,
        ),
        "v_alignbit_b32" => v(
            vf!(|a, b, c| ((((a as u64) << 32) | b as u64) >> (c & 31)) as u32),
            false,
        ),
        "v_alignbyte_b32" => v(
            vf!(|a, b, c| ((((a as u64) << 32) | b as u64) >> (8 * (c & 3))) as u32),
            false,
        ),
        "v_lshl_add_u32" => v(vf!(|a, b, c| (a << (b & 31)).wrapping_add(c)), false),
        "v_add_lshl_u32" => v(vf!(|a, b, c| a.wrapping_add(b) << (c & 31)), false),
        "v_lshl_or_b32" => v(vf!(|a, b, c| (a << (b & 31)) | c), false),
        "v_and_or_b32" => v(vf!(|a, b, c| (a & b) | c), false),
        "v_or3_b32" => v(vf!(|a, b, c| a | b | c), false),
        "v_xor3_b32" => v(vf!(|a, b, c| a ^ b ^ c), false),
        "v_add3_u32" => v(vf!(|a, b, c| a.wrapping_add(b).wrapping_add(c)), false),
        "v_xad_u32" => v(vf!(|a, b, c| (a ^ b).wrapping_add(c)), false),
        "v_bcnt_u32_b32" => v(vf!(|a, b, c| a.count_ones().wrapping_add(b)), false),
        "v_perm_b32" => v(vf!(|a, b, c| perm(a, b, c)), false),
        "v_cvt_pk_rtz_f16_f32" => v(
            vf!(|a, b, c| f32_to_f16(fl(a), true) as u32 | ((f32_to_f16(fl(b), true) as u32) << 16)),
            false,
        ),
        "v_cndmask_b32" => Some((K::Cndmask, C)),
        "v_add_co_u32" => Some((K::AddCo(false, false), C)),
        "v_sub_co_u32" => Some((K::AddCo(true, false), C)),
        "v_subrev_co_u32" => Some((K::AddCo(true, true), C)),
        "v_add_co_ci_u32" => Some((K::AddCoCi(false, false), C)),
        "v_sub_co_ci_u32" => Some((K::AddCoCi(true, false), C)),
        "v_subrev_co_ci_u32" => Some((K::AddCoCi(true, true), C)),
        "v_mad_u64_u32" => Some((K::MadU64U32(false), Class::ValuMad64)),
        "v_mad_i64_i32" => Some((K::MadU64U32(true), Class::ValuMad64)),
        "v_div_scale_f32" => Some((K::DivScale, C)),
        "v_div_fmas_f32" => Some((K::DivFmas, C)),
        "v_div_fixup_f32" => Some((K::DivFixup, C)),
        "v_readlane_b32" => Some((K::Readlane, C)),
        "v_readfirstlane_b32" => Some((K::Readfirstlane, C)),
        "v_writelane_b32" => Some((K::Writelane, C)),
        "v_mbcnt_lo_u32_b32" => Some((K::MbcntLo, C)),
        "v_mbcnt_hi_u32_b32" => Some((K::MbcntHi, C)),
        "v_lshlrev_b64" => Some((
            K::V64(|a, b, _| b << (a & 63), 0b010, false),
            Class::Valu64Shift,
        )),
        "v_lshrrev_b64" => Some((
            K::V64(|a, b, _| b >> (a & 63), 0b010, false),
            Class::Valu64Shift,
        )),
        "v_ashrrev_i64" => Some((
            K::V64(|a, b, _| ((b as i64) >> (a & 63)) as u64, 0b010, false),
            Class::Valu64Shift,
        )),
        "v_add_f64" => Some((
            K::V64(|a, b, _| (dl(a) + dl(b)).to_bits(), 0b011, true),
            Class::Valu64,
        )),
        "v_mul_f64" => Some((
            K::V64(|a, b, _| (dl(a) * dl(b)).to_bits(), 0b011, true),
            Class::Valu64,
        )),
        "v_fma_f64" => Some((
            K::V64(|a, b, c| dl(a).mul_add(dl(b), dl(c)).to_bits(), 0b111, true),
            Class::Valu64,
        )),
        "v_cvt_f64_f32" => Some((
            K::V64(|a, _, _| (fl(a as u32) as f64).to_bits(), 0, true),
            Class::Valu64,
        )),
        "v_cvt_f32_f64" => Some((
            K::V64(|a, _, _| fb(dl(a) as f32) as u64, 0b1001, false),
            Class::Valu64,
        )),
        "v_cvt_f64_i32" => Some((
            K::V64(|a, _, _| (a as u32 as i32 as f64).to_bits(), 0, true),
            Class::Valu64,
        )),
        "v_cvt_f64_u32" => Some((
            K::V64(|a, _, _| (a as u32 as f64).to_bits(), 0, true),
            Class::Valu64,
        )),
        "v_cvt_i32_f64" => Some((
            K::V64(|a, _, _| dl(a) as i32 as u32 as u64, 0b1001, false),
            Class::Valu64,
        )),
        "v_cvt_u32_f64" => Some((
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

fn mem_ty(suffix: &str) -> Option<Mem> {
    let (bytes, signed, dwords) = match suffix {
        "b32" | "dword" => (4, false, 1),
        "b64" => (8, false, 2),
        "b96" => (12, false, 3),
        "b128" => (16, false, 4),
        "u8" | "b8" => (1, false, 1),
        "i8" => (1, true, 1),
        "u16" | "b16" => (2, false, 1),
        "i16" => (2, true, 1),
        _ => return None,
    };
    Some(Mem {
        bytes,
        signed,
        dwords,
        d16: 0,
    })
}

/// A FLAT/GLOBAL/SCRATCH element type, with the d16 forms (`d16_b16`, `d16_hi_u8`, ...).
fn d16_ty(t: &str) -> Option<Mem> {
    let (d16, t) = if let Some(r) = t.strip_prefix("d16_hi_") {
        (2, r)
    } else if let Some(r) = t.strip_prefix("d16_") {
        (1, r)
    } else {
        (0, t)
    };
    let m = mem_ty(t)?;
    (d16 == 0 || m.bytes <= 2).then_some(Mem { d16, ..m })
}

fn atomic(n: &str) -> Option<(At, u8)> {
    let (a, t) = n.rsplit_once('_')?;
    let w = match t {
        "u32" | "i32" | "b32" | "f32" => 1,
        "u64" | "i64" | "b64" => 2,
        _ => return None,
    };
    let at = match (a, t) {
        ("add", "f32") => At::AddF32,
        ("add", _) => At::Add,
        ("sub", _) => At::Sub,
        ("min", "i32" | "i64") => At::Min,
        ("max", "i32" | "i64") => At::Max,
        ("min", _) => At::Umin,
        ("max", _) => At::Umax,
        ("and", _) => At::And,
        ("or", _) => At::Or,
        ("xor", _) => At::Xor,
        ("swap", _) | ("storexchg", _) => At::Swap,
        ("inc", _) => At::Inc,
        ("dec", _) => At::Dec,
        ("cmpswap", _) | ("cmpstore", _) => At::Cmpswap,
        _ => return None,
    };
    Some((at, w))
}

fn vmem(enc: Encoding, n: &str) -> Option<(K, Class)> {
    let flat = enc == Encoding::Flat;
    let rest = n
        .strip_prefix("global_")
        .or_else(|| n.strip_prefix("flat_"))
        .or_else(|| n.strip_prefix("scratch_"))?;
    let vclass = |m: Mem, store: bool| Class::Vmem {
        dwords: m.dwords,
        store,
        saddr: true,
        flat,
    };
    if let Some(t) = rest.strip_prefix("load_") {
        let m = d16_ty(t)?;
        return Some((K::GLoad(m), vclass(m, false)));
    }
    if let Some(t) = rest.strip_prefix("store_") {
        let m = d16_ty(t)?;
        return Some((K::GStore(m), vclass(m, true)));
    }
    if let Some(a) = rest.strip_prefix("atomic_") {
        let (a, rtn) = match a.strip_suffix("_rtn") {
            Some(x) => (x, true),
            None => (a, false),
        };
        let (at, w) = atomic(a)?;
        let m = Mem {
            bytes: 4 * w,
            signed: false,
            dwords: w,
            d16: 0,
        };
        return Some((K::GAtomic(at, rtn, w), vclass(m, !rtn)));
    }
    None
}

/// A DS element type, with the d16 forms (`u16_d16`, `b8_d16_hi`, ...).
fn ds_d16_ty(t: &str) -> Option<Mem> {
    let (t, d16) = if let Some(r) = t.strip_suffix("_d16_hi") {
        (r, 2)
    } else if let Some(r) = t.strip_suffix("_d16") {
        (r, 1)
    } else {
        (t, 0)
    };
    let m = mem_ty(t)?;
    (d16 == 0 || m.bytes <= 2).then_some(Mem { d16, ..m })
}

fn ds(n: &str) -> Option<(K, Class)> {
    let rest = n.strip_prefix("ds_")?;
    let lc = |d: u8, store: bool| Class::Lds { dwords: d, store };
    match rest {
        "bpermute_b32" => return Some((K::DsBpermute, lc(1, false))),
        "swizzle_b32" => return Some((K::DsSwizzle, lc(1, false))),
        _ => {}
    }
    if let Some(t) = rest.strip_prefix("load_2addr_stride64_") {
        let d = mem_ty(t)?.dwords;
        return Some((K::DsLoad2(d, true), lc(2 * d, false)));
    }
    if let Some(t) = rest.strip_prefix("load_2addr_") {
        let d = mem_ty(t)?.dwords;
        return Some((K::DsLoad2(d, false), lc(2 * d, false)));
    }
    if let Some(t) = rest.strip_prefix("store_2addr_stride64_") {
        let d = mem_ty(t)?.dwords;
        return Some((K::DsStore2(d, true), lc(2 * d, true)));
    }
    if let Some(t) = rest.strip_prefix("store_2addr_") {
        let d = mem_ty(t)?.dwords;
        return Some((K::DsStore2(d, false), lc(2 * d, true)));
    }
    if let Some(t) = rest.strip_prefix("load_") {
        let m = ds_d16_ty(t)?;
        return Some((K::DsLoad(m), lc(m.dwords, false)));
    }
    if let Some(t) = rest.strip_prefix("store_") {
        let m = ds_d16_ty(t)?;
        return Some((K::DsStore(m), lc(m.dwords, true)));
    }
    let (a, rtn) = match rest
        .strip_suffix("_rtn_u32")
        .or_else(|| rest.strip_suffix("_rtn_b32"))
    {
        Some(x) => (x, true),
        None => (rest.rsplit_once('_').map(|x| x.0)?, false),
    };
    let suffix = if rtn { "u32" } else { rest.rsplit_once('_')?.1 };
    if !matches!(suffix, "u32" | "i32" | "b32" | "f32") {
        return None;
    }
    let (at, _) = atomic(&format!("{a}_{suffix}"))?;
    Some((K::DsAtomic(at, rtn), lc(1, !rtn)))
}

/// Semantics and class of `name` (mnemonic without `_e32`/`_e64`) in encoding `enc`.
pub fn lookup(enc: Encoding, n: &str) -> Option<(K, Class)> {
    use Encoding as E;
    match enc {
        E::Sopp => Some(match n {
            "s_nop" => (K::SNop, Class::Immediate),
            "s_clause"
            | "s_waitcnt_depctr"
            | "s_set_inst_prefetch_distance"
            | "s_sleep"
            | "s_setprio"
            | "s_waitcnt_expcnt" => (K::Nop, Class::Immediate),
            "s_delay_alu" | "s_code_end" | "s_icache_inv" => (K::Nop, Class::Silent),
            "s_waitcnt" => (K::Waitcnt, Class::Immediate),
            "s_endpgm" => (K::Endpgm, Class::Silent),
            "s_barrier" => (K::Barrier, Class::Barrier),
            "s_sendmsg" | "s_sendmsghalt" => (K::Nop, Class::Message),
            "s_branch" => (K::Branch(Br::Always), Class::Branch),
            "s_cbranch_scc0" => (K::Branch(Br::Scc0), Class::Branch),
            "s_cbranch_scc1" => (K::Branch(Br::Scc1), Class::Branch),
            "s_cbranch_vccz" => (K::Branch(Br::Vccz), Class::Branch),
            "s_cbranch_vccnz" => (K::Branch(Br::Vccnz), Class::Branch),
            "s_cbranch_execz" => (K::Branch(Br::Execz), Class::Branch),
            "s_cbranch_execnz" => (K::Branch(Br::Execnz), Class::Branch),
            _ => return None,
        }),
        E::Sopk => Some(match n {
            "s_movk_i32" => (K::Movk, Class::Salu),
            "s_cmovk_i32" => (K::Cmovk, Class::Salu),
            "s_addk_i32" => (K::Addk, Class::Salu),
            "s_mulk_i32" => (K::Mulk, Class::Salu),
            "s_waitcnt_vscnt" => (K::WaitVs, Class::Immediate),
            "s_waitcnt_vmcnt" | "s_waitcnt_lgkmcnt" | "s_waitcnt_expcnt" => {
                (K::Waitcnt, Class::Immediate)
            }
            _ => {
                let f = scmp(n)?;
                (K::Cmpk(f, n.ends_with("i32")), Class::Salu)
            }
        }),
        E::Sopc => {
            let f = scmp(n)?;
            Some((K::Sc(f, n.ends_with("u64")), Class::Salu))
        }
        E::Sop1 => {
            if n == "s_getpc_b64" {
                return Some((K::Getpc, Class::Salu));
            }
            saveexec(n).or_else(|| scalar(n))
        }
        E::Sop2 => scalar(n),
        E::Smem => {
            let t = n.strip_prefix("s_load_")?;
            let d = match t {
                "b32" => 1,
                "b64" => 2,
                "b128" => 4,
                "b256" => 8,
                "b512" => 16,
                _ => return None,
            };
            Some((K::Smem(d), Class::Smem))
        }
        E::Vop1 | E::Vop2 | E::Vop3 | E::Vopc => {
            if is_cmp(n) {
                vcmp(n)
            } else {
                valu(n).or_else(|| half16(n))
            }
        }
        E::Vop3p => packed(n),
        E::Flat | E::Global | E::Scratch => vmem(enc, n),
        E::Ds => ds(n),
        E::Mubuf => match n {
            "buffer_gl0_inv" | "buffer_gl1_inv" => Some((K::CacheOp, Class::Immediate)),
            _ => None,
        },
        _ => None,
    }
}

/// gfx12 (RDNA4) names of operations whose gfx11 semantics are unchanged.
pub fn alias12(n: &str) -> &str {
    match n {
        "s_add_co_i32" => "s_add_i32",
        "s_sub_co_i32" => "s_sub_i32",
        "s_add_co_u32" => "s_add_u32",
        "s_sub_co_u32" => "s_sub_u32",
        "s_add_co_ci_u32" => "s_addc_u32",
        "s_sub_co_ci_u32" => "s_subb_u32",
        "v_mad_co_u64_u32" => "v_mad_u64_u32",
        "v_mad_co_i64_i32" => "v_mad_i64_i32",
        // IEEE minNum/maxNum: what gfx11's v_min/max_f32 compute in IEEE mode.
        "v_max_num_f32" => "v_max_f32",
        "v_min_num_f32" => "v_min_f32",
        "v_max3_num_f32" => "v_max3_f32",
        "v_min3_num_f32" => "v_min3_f32",
        "v_med3_num_f32" => "v_med3_f32",
        "v_max_num_f16" => "v_max_f16",
        "v_min_num_f16" => "v_min_f16",
        "v_pk_max_num_f16" => "v_pk_max_f16",
        "v_pk_min_num_f16" => "v_pk_min_f16",
        _ => n,
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

/// Semantics and class of `name` on gfx12: the operations RDNA4 added or split, then the gfx11
/// table under the gfx11 name ([`alias12`]).
pub fn lookup12(enc: Encoding, n: &str) -> Option<(K, Class)> {
    use Encoding as E;
    let v = |f: VFn| Some((K::V(f, true), Class::Valu));
    let s = |f: SFn| Some((K::S(f, 0b111), Class::Salu));
    match (enc, n) {
        (E::Sopp, "s_wait_loadcnt") => Some((K::Wait12(W12::Load), Class::Immediate)),
        (E::Sopp, "s_wait_storecnt") => Some((K::Wait12(W12::Store), Class::Immediate)),
        (E::Sopp, "s_wait_kmcnt") => Some((K::Wait12(W12::Km), Class::Immediate)),
        (E::Sopp, "s_wait_dscnt") => Some((K::Wait12(W12::Ds), Class::Immediate)),
        (E::Sopp, "s_wait_loadcnt_dscnt") => Some((K::Wait12(W12::LoadDs), Class::Immediate)),
        (E::Sopp, "s_wait_storecnt_dscnt") => Some((K::Wait12(W12::StoreDs), Class::Immediate)),
        // Counters of operations the emulator does not issue (sampler, BVH, export).
        (E::Sopp, "s_wait_samplecnt" | "s_wait_bvhcnt" | "s_wait_expcnt") => {
            Some((K::Nop, Class::Immediate))
        }
        // Dependency hints: no token on hardware either (sqtt-format.md §7.2).
        (E::Sopp, "s_wait_alu") => Some((K::Nop, Class::Silent)),
        // Split barrier: the wave arrives at signal and blocks at wait. With
        // `exclude_barrier_wait` (how captures are configured) only the signal has a token.
        (E::Sop1, "s_barrier_signal") => Some((K::Nop, Class::BarrierSignal)),
        (E::Sopp, "s_barrier_wait") => Some((K::Barrier, Class::BarrierWait)),
        (E::Global, "global_inv" | "global_wb" | "global_wbinv") => {
            Some((K::CacheOp, Class::Immediate))
        }
        (E::Smem, "s_load_b96") => Some((K::Smem(3), Class::Smem)),
        (E::Sop2, "s_add_nc_u64") => s(sf!(|a, b, s| (a.wrapping_add(b), None))),
        (E::Sop2, "s_sub_nc_u64") => s(sf!(|a, b, s| (a.wrapping_sub(b), None))),
        (E::Sop2, "s_mul_u64") => s(sf!(|a, b, s| (a.wrapping_mul(b), None))),
        (E::Vop1 | E::Vop2 | E::Vop3, "v_maximum_f32") => {
            v(vf!(|a, b, c| fb(fmaximum(fl(a), fl(b)))))
        }
        (E::Vop1 | E::Vop2 | E::Vop3, "v_minimum_f32") => {
            v(vf!(|a, b, c| fb(fminimum(fl(a), fl(b)))))
        }
        (E::Vop3, "v_maximum3_f32") => {
            v(vf!(|a, b, c| fb(fmaximum(fmaximum(fl(a), fl(b)), fl(c)))))
        }
        (E::Vop3, "v_minimum3_f32") => {
            v(vf!(|a, b, c| fb(fminimum(fminimum(fl(a), fl(b)), fl(c)))))
        }
        (E::Vop3, "v_maxmin_num_f32") => v(vf!(|a, b, c| fb(fmin(fmax(fl(a), fl(b)), fl(c))))),
        (E::Vop3, "v_minmax_num_f32") => v(vf!(|a, b, c| fb(fmax(fmin(fl(a), fl(b)), fl(c))))),
        _ => lookup(enc, alias12(n)),
    }
}

/// Which operands of a 16-bit VALU instruction are 16-bit (bit k: src k, bit 3: dst): they
/// read or write one half of a VGPR (true16 register bit 7 in VOP1/VOP2/VOPC, op_sel in VOP3).
/// 0 for everything else (32-bit operands, and VOP3P, which has its own op_sel rules).
pub fn half_mask(n: &str) -> u8 {
    if n.starts_with("v_pk_") || n.starts_with("v_fma_mix") || n == "v_cvt_pk_rtz_f16_f32" {
        return 0;
    }
    match n {
        "v_cvt_f32_f16" | "v_cvt_i32_i16" | "v_cvt_u32_u16" => 0b0001,
        "v_cvt_f16_f32" => 0b1000,
        "v_mad_u32_u16" | "v_mad_i32_i16" | "v_pack_b32_f16" => 0b0011,
        _ if is_cmp(n) && (n.ends_with("_f16") || n.ends_with("_i16") || n.ends_with("_u16")) => {
            0b0011
        }
        _ if is_cmp(n) => 0,
        _ if n.ends_with("_f16")
            || n.ends_with("_i16")
            || n.ends_with("_u16")
            || n.ends_with("_b16") =>
        {
            0b1111
        }
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
fn half16(n: &str) -> Option<(K, Class)> {
    use Class::{Valu as C, ValuTrans as T};
    let m = half_mask(n);
    let v = |f: VFn, float: bool| Some((K::V16(f, float, m), C));
    let t = |f: VFn| Some((K::V16(f, true, m), T));
    match n {
        "v_mov_b16" => v(vf!(|a, b, c| a), false),
        "v_cvt_f16_f32" => v(vf!(|a, b, c| hb32(fl(a))), true),
        "v_cvt_f32_f16" => v(vf!(|a, b, c| fb(h32(a))), true),
        "v_cvt_i32_i16" => v(vf!(|a, b, c| sx16(a) as u32), false),
        "v_cvt_u32_u16" => v(vf!(|a, b, c| a & 0xFFFF), false),
        "v_cvt_f16_i16" => v(vf!(|a, b, c| hb64(f64::from(sx16(a)))), true),
        "v_cvt_f16_u16" => v(vf!(|a, b, c| hb64(f64::from(a as u16))), true),
        // Rust's float-to-int casts saturate and send NaN to 0, as the hardware does.
        "v_cvt_i16_f16" => v(vf!(|a, b, c| h32(a) as i16 as u16 as u32), false),
        "v_cvt_u16_f16" => v(vf!(|a, b, c| h32(a) as u16 as u32), false),
        "v_add_f16" => v(vf!(|a, b, c| hb64(h64(a) + h64(b))), true),
        "v_sub_f16" => v(vf!(|a, b, c| hb64(h64(a) - h64(b))), true),
        "v_subrev_f16" => v(vf!(|a, b, c| hb64(h64(b) - h64(a))), true),
        "v_mul_f16" => v(vf!(|a, b, c| hb64(h64(a) * h64(b))), true),
        "v_fma_f16" | "v_fmac_f16" | "v_fmamk_f16" | "v_fmaak_f16" => {
            v(vf!(|a, b, c| hb64(fma_odd(h64(a) * h64(b), h64(c)))), true)
        }
        "v_max_f16" => v(vf!(|a, b, c| hb32(fmax(h32(a), h32(b)))), true),
        "v_min_f16" => v(vf!(|a, b, c| hb32(fmin(h32(a), h32(b)))), true),
        "v_max3_f16" => v(
            vf!(|a, b, c| hb32(fmax(fmax(h32(a), h32(b)), h32(c)))),
            true,
        ),
        "v_min3_f16" => v(
            vf!(|a, b, c| hb32(fmin(fmin(h32(a), h32(b)), h32(c)))),
            true,
        ),
        "v_med3_f16" => v(vf!(|a, b, c| hb32(med3(h32(a), h32(b), h32(c)))), true),
        "v_ldexp_f16" => v(
            vf!(|a, b, c| hb64(h64(a) * 2f64.powi(sx16(b).clamp(-100, 100)))),
            true,
        ),
        "v_trunc_f16" => v(vf!(|a, b, c| hb32(h32(a).trunc())), true),
        "v_ceil_f16" => v(vf!(|a, b, c| hb32(h32(a).ceil())), true),
        "v_floor_f16" => v(vf!(|a, b, c| hb32(h32(a).floor())), true),
        "v_rndne_f16" => v(vf!(|a, b, c| hb32(h32(a).round_ties_even())), true),
        "v_fract_f16" => v(vf!(|a, b, c| hb32(h32(a) - h32(a).floor())), true),
        "v_sqrt_f16" => t(vf!(|a, b, c| hb64(h64(a).sqrt()))),
        "v_rcp_f16" => t(vf!(|a, b, c| hb64(1.0 / h64(a)))),
        "v_rsq_f16" => t(vf!(|a, b, c| hb64(1.0 / h64(a).sqrt()))),
        "v_exp_f16" => t(vf!(|a, b, c| hb64(h64(a).exp2()))),
        "v_log_f16" => t(vf!(|a, b, c| hb64(h64(a).log2()))),
        "v_add_nc_u16" | "v_add_nc_i16" => v(vf!(|a, b, c| a.wrapping_add(b)), false),
        "v_sub_nc_u16" | "v_sub_nc_i16" => v(vf!(|a, b, c| a.wrapping_sub(b)), false),
        "v_mul_lo_u16" => v(vf!(|a, b, c| a.wrapping_mul(b)), false),
        "v_mad_u16" | "v_mad_i16" => v(vf!(|a, b, c| a.wrapping_mul(b).wrapping_add(c)), false),
        "v_mad_u32_u16" => v(vf!(|a, b, c| a.wrapping_mul(b).wrapping_add(c)), false),
        "v_mad_i32_i16" => v(
            vf!(|a, b, c| sx16(a).wrapping_mul(sx16(b)).wrapping_add(c as i32) as u32),
            false,
        ),
        "v_min_i16" => v(vf!(|a, b, c| sx16(a).min(sx16(b)) as u32), false),
        "v_max_i16" => v(vf!(|a, b, c| sx16(a).max(sx16(b)) as u32), false),
        "v_min_u16" => v(vf!(|a, b, c| a.min(b)), false),
        "v_max_u16" => v(vf!(|a, b, c| a.max(b)), false),
        "v_lshlrev_b16" => v(vf!(|a, b, c| b << (a & 15)), false),
        "v_lshrrev_b16" => v(vf!(|a, b, c| b >> (a & 15)), false),
        "v_ashrrev_i16" => v(vf!(|a, b, c| (sx16(b) >> (a & 15)) as u32), false),
        "v_and_b16" => v(vf!(|a, b, c| a & b), false),
        "v_or_b16" => v(vf!(|a, b, c| a | b), false),
        "v_xor_b16" => v(vf!(|a, b, c| a ^ b), false),
        "v_not_b16" => v(vf!(|a, b, c| !a), false),
        "v_pack_b32_f16" => v(vf!(|a, b, c| (a & 0xFFFF) | (b << 16)), false),
        _ => None,
    }
}

/// VOP3P packed 16-bit operations ([`K::Pk`]) and the mixed-precision FMAs.
fn packed(n: &str) -> Option<(K, Class)> {
    let v = |f: VFn, float: bool| Some((K::Pk(f, float), Class::Valu));
    match n {
        "v_fma_mix_f32" => Some((K::FmaMix(0), Class::Valu)),
        "v_fma_mixlo_f16" => Some((K::FmaMix(1), Class::Valu)),
        "v_fma_mixhi_f16" => Some((K::FmaMix(2), Class::Valu)),
        "v_pk_add_f16" => v(vf!(|a, b, c| hb64(h64(a) + h64(b))), true),
        "v_pk_mul_f16" => v(vf!(|a, b, c| hb64(h64(a) * h64(b))), true),
        "v_pk_fma_f16" => v(vf!(|a, b, c| hb64(fma_odd(h64(a) * h64(b), h64(c)))), true),
        "v_pk_max_f16" => v(vf!(|a, b, c| hb32(fmax(h32(a), h32(b)))), true),
        "v_pk_min_f16" => v(vf!(|a, b, c| hb32(fmin(h32(a), h32(b)))), true),
        "v_pk_add_u16" | "v_pk_add_i16" => v(vf!(|a, b, c| a.wrapping_add(b)), false),
        "v_pk_sub_u16" | "v_pk_sub_i16" => v(vf!(|a, b, c| a.wrapping_sub(b)), false),
        "v_pk_mul_lo_u16" => v(vf!(|a, b, c| a.wrapping_mul(b)), false),
        "v_pk_mad_u16" | "v_pk_mad_i16" => {
            v(vf!(|a, b, c| a.wrapping_mul(b).wrapping_add(c)), false)
        }
        "v_pk_min_i16" => v(vf!(|a, b, c| sx16(a).min(sx16(b)) as u32), false),
        "v_pk_max_i16" => v(vf!(|a, b, c| sx16(a).max(sx16(b)) as u32), false),
        "v_pk_min_u16" => v(vf!(|a, b, c| a.min(b)), false),
        "v_pk_max_u16" => v(vf!(|a, b, c| a.max(b)), false),
        "v_pk_lshlrev_b16" => v(vf!(|a, b, c| b << (a & 15)), false),
        "v_pk_lshrrev_b16" => v(vf!(|a, b, c| b >> (a & 15)), false),
        "v_pk_ashrrev_i16" => v(vf!(|a, b, c| (sx16(b) >> (a & 15)) as u32), false),
        _ => None,
    }
}
