//! The instruction families beyond the base interpreter: WMMA (gfx11 and gfx12, wave32), DPP16
//! and DPP8 source permutes on VOP1/VOP2/VOPC/VOP3, and MUBUF/MTBUF buffer memory through
//! resource descriptors. Layouts come from `traces::isa` (`Instruction::dpp`, `buf`); the
//! semantics follow the RDNA3/RDNA4 ISA guides as LLVM and tinygrad use them.

use super::{mem_fault, ops, Ctx, Fault, Op, Src, Wave, L, NULL};
use crate::cycles::Class;
use ops::{Mem, K};
use traces::isa::Opcode as O;

/// The WMMA forms emulated (16x16x16, wave32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wm {
    F32F16,
    F32Bf16,
    /// i32 += iu8 x iu8, signedness of A/B from neg_lo bits 0/1.
    I32Iu8,
}

/// The WMMA semantics of `op` (None: not a WMMA, or a form not emulated).
pub fn wmma_lookup(op: O, gfx12: bool) -> Option<(K, Class)> {
    let k = match op {
        O::VWmmaF3216x16x16F16 => Wm::F32F16,
        O::VWmmaF3216x16x16Bf16 => Wm::F32Bf16,
        O::VWmmaI3216x16x16Iu8 => Wm::I32Iu8,
        _ => return None,
    };
    Some((K::Wmma(k, gfx12), Class::Wmma))
}

/// Element `k` (0..16 along K) of row/column `r` of a WMMA A or B operand at VGPR `base`, for
/// elements of `bits` bits. RDNA3: lane r (lanes 16..31 repeat 0..15) holds all 16, packed in
/// order. RDNA4: lane half h holds K = 4h + 0..3 and 4h + 8..11, in that order.
fn ab(
    w: &Wave,
    base: u16,
    k: usize,
    r: usize,
    bits: usize,
    g12: bool,
    pc: u64,
) -> Result<u32, Fault> {
    let (lane, i) = if g12 {
        (r + 16 * ((k / 4) % 2), k % 4 + (k / 8) * 4)
    } else {
        (r, k)
    };
    let per = 32 / bits;
    let v = w.vreg(base + (i / per) as u16, pc)?[lane];
    Ok((v >> ((i % per) * bits)) & (u32::MAX >> (32 - bits)))
}

/// VGPR and lane of element (row, col) of a 16x16 32-bit C/D matrix.
fn cd(row: usize, col: usize, g12: bool) -> (usize, usize) {
    if g12 {
        (row % 8, col + 16 * (row / 8))
    } else {
        (row / 2, col + 16 * (row % 2))
    }
}

/// D = A x B + C for one 16x16x16 tile. Float products are exact in f64 and the row sums are
/// rounded once when added to C (hardware accumulates in its own order; results agree to f32
/// rounding, not bit for bit).
pub fn wmma(w: &mut Wave, op: &Op, kind: Wm, g12: bool, pc: u64) -> Result<(), Fault> {
    if w.lanes != 32 {
        return Err(Fault::Illegal {
            pc,
            what: format!("{}: wave64 WMMA is not emulated", op.opcode),
        });
    }
    let (Src::V(a), Src::V(b), c) = (op.src[0], op.src[1], op.src[2]) else {
        return Err(Fault::Illegal {
            pc,
            what: format!("{}: A and B must be VGPRs", op.opcode),
        });
    };
    let bits = if kind == Wm::I32Iu8 { 8 } else { 16 };
    let mut av = [[0u32; 16]; 16];
    let mut bv = [[0u32; 16]; 16];
    for r in 0..16 {
        for k in 0..16 {
            av[r][k] = ab(w, a, k, r, bits, g12, pc)?;
            bv[r][k] = ab(w, b, k, r, bits, g12, pc)?;
        }
    }
    let mut out = [[0u32; 64]; 8];
    for row in 0..16 {
        for col in 0..16 {
            let (reg, lane) = cd(row, col, g12);
            let cval = match c {
                Src::V(cr) => w.vreg(cr + reg as u16, pc)?[lane],
                // An inline constant accumulator (0 is what clang emits for a zero C).
                s => w.s32(s),
            };
            out[reg][lane] = match kind {
                Wm::F32F16 | Wm::F32Bf16 => {
                    let f = |x: u32| -> f64 {
                        if kind == Wm::F32F16 {
                            f64::from(ops::f16_to_f32(x as u16))
                        } else {
                            f64::from(f32::from_bits(x << 16))
                        }
                    };
                    let s: f64 = (0..16).map(|k| f(av[row][k]) * f(bv[col][k])).sum();
                    ((s + f64::from(f32::from_bits(cval))) as f32).to_bits()
                }
                Wm::I32Iu8 => {
                    let (sa, sb) = (op.neg & 1 != 0, op.neg & 2 != 0);
                    let v = |x: u32, s: bool| {
                        if s {
                            i32::from(x as u8 as i8)
                        } else {
                            x as i32
                        }
                    };
                    let s: i32 = (0..16)
                        .map(|k| v(av[row][k], sa).wrapping_mul(v(bv[col][k], sb)))
                        .fold(0i32, i32::wrapping_add);
                    (cval as i32).wrapping_add(s) as u32
                }
            };
        }
    }
    for (i, r) in out.iter().enumerate() {
        w.vwrite(op.d + i as u16, r, u64::from(u32::MAX), pc)?;
    }
    Ok(())
}

/// Packs a DPP control into an [`Op`]'s `imm` / `imm1` (`imm1` 1: DPP16, 2: DPP8, bit 2: FI).
pub fn dpp_pack(d: traces::isa::Dpp) -> (i32, i32) {
    match d {
        traces::isa::Dpp::Dpp16 {
            ctrl,
            row_mask,
            bank_mask,
            bound_ctrl,
            fi,
            ..
        } => (
            i32::from(ctrl)
                | i32::from(row_mask) << 9
                | i32::from(bank_mask) << 13
                | i32::from(bound_ctrl) << 17,
            1 | i32::from(fi) << 2,
        ),
        traces::isa::Dpp::Dpp8 { sel, fi } => (
            sel.iter()
                .enumerate()
                .fold(0, |a, (k, &s)| a | i32::from(s) << (3 * k)),
            2 | i32::from(fi) << 2,
        ),
    }
}

/// The lane DPP16 control `ctrl` makes `lane` read (None: outside its row, an invalid source).
fn dpp16_src(ctrl: u32, lane: usize) -> Option<usize> {
    let (row, i) = (lane & !15, lane & 15);
    let n = (ctrl & 15) as usize;
    match ctrl {
        0..=0xFF => Some((lane & !3) | ((ctrl >> (2 * (lane & 3))) & 3) as usize),
        0x101..=0x10F => (i + n < 16).then_some(lane + n),
        0x111..=0x11F => (i >= n).then(|| lane - n),
        0x121..=0x12F => Some(row + ((i + 16 - n) & 15)),
        0x140 => Some(row + 15 - i),
        0x141 => Some((lane & !7) + 7 - (lane & 7)),
        0x150..=0x15F => Some(row + n),
        0x160..=0x16F => Some(row + (i ^ n)),
        _ => None,
    }
}

/// A DPP instruction: src0 read through the lane permute, lanes the row/bank masks (or an
/// invalid source without bound_ctrl) disable keep their destination; then the operation (the
/// `y` op) runs on the permuted row.
pub fn dpp(w: &mut Wave, op: &Op, pc: u64, exec: u64) -> Result<(), Fault> {
    let Some(inner) = op.y.as_deref() else {
        return Ok(());
    };
    let Src::V(r) = op.src[0] else {
        return Ok(());
    };
    let lanes = w.lanes as usize;
    let src = *w.vreg(r, pc)?;
    let (c, kind) = (op.imm as u32, op.imm1 as u32);
    let fi = kind & 4 != 0;
    let mut row = [0u32; 64];
    let mut write = exec;
    for lane in 0..lanes {
        if exec >> lane & 1 == 0 {
            continue;
        }
        let s = if kind & 3 == 2 {
            Some((lane & !7) + (c >> (3 * (lane & 7)) & 7) as usize)
        } else {
            let (rows, banks) = (c >> 9 & 15, c >> 13 & 15);
            if rows >> (lane / 16) & 1 == 0 || banks >> ((lane & 15) / 4) & 1 == 0 {
                write &= !(1 << lane);
                continue;
            }
            dpp16_src(c & 0x1FF, lane)
        };
        match s.filter(|&s| s < lanes && (fi || exec >> s & 1 != 0)) {
            Some(s) => row[lane] = src[s],
            // DPP8 and bound_ctrl read 0 for an invalid source; DPP16 without it writes nothing.
            None if kind & 3 == 2 || c >> 17 & 1 != 0 => row[lane] = 0,
            None => write &= !(1 << lane),
        }
    }
    // The permuted row as one more VGPR, read by a copy of the operation.
    let idx = w.v.len();
    w.v.push(row);
    let mut o = inner.clone();
    o.src[0] = Src::V(idx as u16);
    w.set_exec(write);
    let res = match o.k {
        K::V(f, float) => super::valu32(w, &o, f, float, pc, write),
        _ => super::valu_or_mem(w, &o, pc, write),
    };
    w.set_exec(exec);
    w.v.pop();
    res
}

/// The buffer (MUBUF/MTBUF) semantics of `op`.
pub fn buf_lookup(op: O) -> Option<(K, Class)> {
    let m = |bytes: u8, signed: bool, dwords: u8| Mem {
        bytes,
        signed,
        dwords,
        d16: 0,
    };
    let (mem, store) = match op {
        O::BufferLoadU8 | O::BufferLoadUbyte => (m(1, false, 1), false),
        O::BufferLoadI8 | O::BufferLoadSbyte => (m(1, true, 1), false),
        O::BufferLoadU16 | O::BufferLoadUshort => (m(2, false, 1), false),
        O::BufferLoadI16 | O::BufferLoadSshort => (m(2, true, 1), false),
        O::BufferLoadB32 | O::BufferLoadDword | O::TbufferLoadFormatX => (m(4, false, 1), false),
        O::BufferLoadB64 | O::BufferLoadDwordx2 | O::TbufferLoadFormatXy => (m(8, false, 2), false),
        O::BufferLoadB96 | O::BufferLoadDwordx3 | O::TbufferLoadFormatXyz => {
            (m(12, false, 3), false)
        }
        O::BufferLoadB128 | O::BufferLoadDwordx4 | O::TbufferLoadFormatXyzw => {
            (m(16, false, 4), false)
        }
        O::BufferStoreB8 | O::BufferStoreByte => (m(1, false, 1), true),
        O::BufferStoreB16 | O::BufferStoreShort => (m(2, false, 1), true),
        O::BufferStoreB32 | O::BufferStoreDword | O::TbufferStoreFormatX => (m(4, false, 1), true),
        O::BufferStoreB64 | O::BufferStoreDwordx2 | O::TbufferStoreFormatXy => {
            (m(8, false, 2), true)
        }
        O::BufferStoreB96 | O::BufferStoreDwordx3 | O::TbufferStoreFormatXyz => {
            (m(12, false, 3), true)
        }
        O::BufferStoreB128 | O::BufferStoreDwordx4 | O::TbufferStoreFormatXyzw => {
            (m(16, false, 4), true)
        }
        _ => return None,
    };
    Some((
        K::Buf(mem, store),
        Class::Vmem {
            dwords: mem.dwords,
            store,
            saddr: true,
            flat: false,
        },
    ))
}

/// Whether an MTBUF format moves `dwords` whole 32-bit components unchanged (the formats the
/// emulator runs: `BUF_FMT_32[_32...]_{UINT,SINT,FLOAT}`).
pub fn raw_format(format: &str, dwords: u8) -> bool {
    let Some(rest) = format.strip_prefix("BUF_FMT_") else {
        return false;
    };
    let n = rest.matches("32_").count();
    n == usize::from(dwords)
        && rest.len() == 3 * n + rest.rsplit('_').next().map_or(0, str::len)
        && matches!(rest.rsplit('_').next(), Some("UINT" | "SINT" | "FLOAT"))
}

/// A buffer descriptor's fields (V# layout shared by gfx11 and gfx12 for these bits).
struct Rsrc {
    base: u64,
    stride: u64,
    num_records: u64,
    add_tid: bool,
    oob: u32,
}

fn rsrc(w: &Wave, s: u8) -> Rsrc {
    let d = |k: usize| w.s.get(s as usize + k).copied().unwrap_or(0);
    let (w0, w1, w2, w3) = (d(0), d(1), d(2), d(3));
    Rsrc {
        base: u64::from(w0) | u64::from(w1 & 0xFFFF) << 32,
        stride: u64::from(w1 >> 16 & 0x3FFF),
        num_records: u64::from(w2),
        add_tid: w3 >> 23 & 1 != 0,
        oob: w3 >> 28 & 3,
    }
}

/// MUBUF/MTBUF load or store. Address = base + soffset + offset + (offen: VGPR) + stride *
/// ((idxen: VGPR) + (add_tid: lane)). Out-of-range accesses (OOB_SELECT: 0 index and
/// offset-within-stride, 1 index, 2 none unless num_records is 0, 3 and stride 0: bytes
/// against num_records) read 0 and drop stores. Swizzled buffers are not emulated.
pub fn buffer(
    w: &mut Wave,
    cx: &mut Ctx<'_>,
    op: &Op,
    pc: u64,
    exec: u64,
    m: Mem,
    store: bool,
) -> Result<(), Fault> {
    let rs = rsrc(w, op.sd);
    let soff = if op.imm1 as usize == NULL {
        0
    } else {
        u64::from(w.s32(Src::from_code(op.imm1 as u32, 0)))
    };
    let (offen, idxen) = (op.hi & 1 != 0, op.hi & 2 != 0);
    let Src::V(va) = op.src[0] else {
        return Ok(());
    };
    let vidx = if idxen { Some(*w.vreg(va, pc)?) } else { None };
    let voff = if offen {
        Some(*w.vreg(va + u16::from(idxen), pc)?)
    } else {
        None
    };
    let bytes = u64::from(m.bytes);
    let mut addrs = [0u64; 64];
    let mut inb = 0u64;
    for i in 0..w.lanes as usize {
        if exec >> i & 1 == 0 {
            continue;
        }
        let off = u64::from(op.imm as u32) + voff.map_or(0, |v| u64::from(v[i]));
        let idx = vidx.map_or(0, |v| u64::from(v[i])) + if rs.add_tid { i as u64 } else { 0 };
        let oob = match rs.oob {
            _ if rs.stride == 0 || rs.oob == 3 => off + bytes > rs.num_records,
            0 => idx >= rs.num_records || off + bytes > rs.stride,
            1 => idx >= rs.num_records,
            _ => rs.num_records == 0,
        };
        if !oob {
            inb |= 1 << i;
            addrs[i] = rs.base + soff + off + rs.stride * idx;
        }
    }
    let n = m.bytes as usize;
    if store {
        let Src::V(data) = op.src[1] else {
            return Ok(());
        };
        for i in 0..w.lanes as usize {
            if inb >> i & 1 == 0 {
                continue;
            }
            let mut b = [0u8; 16];
            for k in 0..m.dwords as usize {
                b[4 * k..4 * k + 4].copy_from_slice(&w.vreg(data + k as u16, pc)?[i].to_le_bytes());
            }
            cx.mem
                .write(addrs[i], &b[..n])
                .map_err(|_| mem_fault(pc, addrs[i], bytes, "buffer store"))?;
        }
    } else {
        let mut out: [L; 4] = [[0u32; 64]; 4];
        for i in 0..w.lanes as usize {
            if inb >> i & 1 == 0 {
                continue;
            }
            let mut b = [0u8; 16];
            cx.mem
                .read(addrs[i], &mut b[..n])
                .map_err(|_| mem_fault(pc, addrs[i], bytes, "buffer load"))?;
            if n >= 4 {
                for k in 0..m.dwords as usize {
                    out[k][i] =
                        u32::from_le_bytes([b[4 * k], b[4 * k + 1], b[4 * k + 2], b[4 * k + 3]]);
                }
            } else {
                let v = u32::from(u16::from_le_bytes([b[0], b[1]])) & (u32::MAX >> (32 - 8 * n));
                out[0][i] = match (m.signed, n) {
                    (true, 1) => v as u8 as i8 as i32 as u32,
                    (true, _) => v as u16 as i16 as i32 as u32,
                    _ => v,
                };
            }
        }
        for k in 0..m.dwords as usize {
            w.vwrite(op.d + k as u16, &out[k], exec, pc)?;
        }
    }
    super::vmem_issued(w, cx, &addrs, inb, bytes, store);
    Ok(())
}

/// f64 operations that read or write a lane mask besides their VGPRs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum F64x {
    /// v_div_scale_f64: D and VCC (the VOP3SD sdst).
    DivScale,
    /// v_div_fmas_f64: fma, scaled by 2^64 in the lanes VCC has set (the ISA's pseudo-code).
    DivFmas,
    /// v_cmp_class_f64: mask of the lanes whose class src1 selects.
    CmpClass,
}

fn dl(x: u64) -> f64 {
    f64::from_bits(x)
}

/// x * 2^e, exact where the result is representable (two steps keep 2^e itself in range).
fn ldexp64(x: f64, e: i32) -> f64 {
    let e = e.clamp(-2200, 2200);
    let h = e / 2;
    x * 2f64.powi(h) * 2f64.powi(e - h)
}

fn exponent(x: f64) -> i32 {
    (x.to_bits() >> 52 & 0x7FF) as i32
}

fn denorm(x: f64) -> bool {
    x != 0.0 && exponent(x) == 0
}

/// v_div_fixup_f64 (S0 the quotient estimate, S1 the denominator, S2 the numerator).
fn div_fixup64(q: u64, den: u64, num: u64) -> u64 {
    let (q, d, n) = (dl(q), dl(den), dl(num));
    let neg = d.is_sign_negative() ^ n.is_sign_negative();
    let s = |x: f64| if neg { -x } else { x };
    let r = if n.is_nan() {
        f64::from_bits(num | 1 << 51)
    } else if d.is_nan() {
        f64::from_bits(den | 1 << 51)
    } else if (d == 0.0 && n == 0.0) || (d.is_infinite() && n.is_infinite()) {
        f64::from_bits(0xFFF8_0000_0000_0000)
    } else if d == 0.0 || n.is_infinite() {
        s(f64::INFINITY)
    } else if d.is_infinite() || n == 0.0 {
        s(0.0)
    } else if exponent(n) - exponent(d) < -1075 {
        s(f64::from_bits(1))
    } else if exponent(d) == 2047 {
        s(f64::MAX)
    } else {
        s(q.abs())
    };
    r.to_bits()
}

/// The f64 operations beyond the base table: division steps, reciprocal, square root, ldexp,
/// class compare.
pub fn f64_lookup(op: O) -> Option<(K, Class)> {
    let v = |f: ops::V64Fn, wide: u8| Some((K::V64(f, wide, true), Class::Valu64));
    match op {
        O::VDivScaleF64 => Some((K::F64x(F64x::DivScale), Class::Valu64)),
        O::VDivFmasF64 => Some((K::F64x(F64x::DivFmas), Class::Valu64)),
        O::VCmpClassF64 => Some((K::F64x(F64x::CmpClass), Class::Valu)),
        O::VDivFixupF64 => v(div_fixup64, 0b111),
        O::VRcpF64 => v(|a, _, _| (1.0 / dl(a)).to_bits(), 0b001),
        O::VRsqF64 => v(|a, _, _| (1.0 / dl(a).sqrt()).to_bits(), 0b001),
        O::VSqrtF64 => v(|a, _, _| dl(a).sqrt().to_bits(), 0b001),
        O::VLdexpF64 => v(|a, b, _| ldexp64(dl(a), b as u32 as i32).to_bits(), 0b001),
        _ => None,
    }
}

/// Source `k` of `op` as 64-bit values per lane (neg/abs applied when `float`), or 32-bit ones
/// zero-extended when not `wide`.
fn src64(w: &Wave, op: &Op, k: usize, wide: bool, pc: u64) -> Result<[u64; 64], Fault> {
    let mut out = [0u64; 64];
    match op.src[k] {
        Src::V(r) => {
            let lo = w.vreg(r, pc)?;
            let hi = if wide { Some(w.vreg(r + 1, pc)?) } else { None };
            for i in 0..w.lanes as usize {
                out[i] = u64::from(lo[i]) | hi.map_or(0, |h| u64::from(h[i]) << 32);
            }
        }
        s => {
            let v = if wide {
                w.s64(s, true)
            } else {
                u64::from(w.s32(s))
            };
            out = [v; 64];
        }
    }
    if wide {
        for x in out.iter_mut() {
            if op.abs >> k & 1 != 0 {
                *x &= !(1 << 63);
            }
            if op.neg >> k & 1 != 0 {
                *x ^= 1 << 63;
            }
        }
    }
    Ok(out)
}

/// Runs an [`F64x`] operation.
pub fn f64x(w: &mut Wave, op: &Op, x: F64x, pc: u64, exec: u64) -> Result<(), Fault> {
    let n = w.lanes as usize;
    let mut lo = [0u32; 64];
    let mut hi = [0u32; 64];
    let mut put = |i: usize, v: f64| {
        lo[i] = v.to_bits() as u32;
        hi[i] = (v.to_bits() >> 32) as u32;
    };
    match x {
        F64x::CmpClass => {
            let a = src64(w, op, 0, true, pc)?;
            let b = src64(w, op, 1, false, pc)?;
            let mut m = 0u64;
            for i in 0..n {
                let v = dl(a[i]);
                let neg = v.is_sign_negative();
                let bit = if v.is_nan() {
                    // Quiet NaNs have the top mantissa bit set.
                    if a[i] >> 51 & 1 != 0 {
                        1
                    } else {
                        0
                    }
                } else if v.is_infinite() {
                    if neg {
                        2
                    } else {
                        9
                    }
                } else if exponent(v) > 0 {
                    if neg {
                        3
                    } else {
                        8
                    }
                } else if v != 0.0 {
                    if neg {
                        4
                    } else {
                        7
                    }
                } else if neg {
                    5
                } else {
                    6
                };
                if exec >> i & 1 != 0 && b[i] >> bit & 1 != 0 {
                    m |= 1 << i;
                }
            }
            // VOPC writes VCC; the VOP3 form names its mask destination in vdst.
            let dst = if op.enc == traces::isa::Encoding::Vop3 {
                op.d as usize
            } else {
                op.sd as usize
            };
            w.mask_set(dst, m);
            return Ok(());
        }
        F64x::DivScale => {
            let (s0, s1, s2) = (
                src64(w, op, 0, true, pc)?,
                src64(w, op, 1, true, pc)?,
                src64(w, op, 2, true, pc)?,
            );
            let mut vcc = 0u64;
            for i in 0..n {
                let (a, d, num) = (dl(s0[i]), dl(s1[i]), dl(s2[i]));
                let mut r = a;
                let mut flag = false;
                if num == 0.0 || d == 0.0 {
                    r = f64::NAN;
                } else if exponent(num) - exponent(d) >= 768 {
                    flag = true;
                    if a == d {
                        r = ldexp64(a, 128);
                    }
                } else if denorm(d) {
                    r = ldexp64(a, 128);
                } else if denorm(1.0 / d) && denorm(num / d) {
                    flag = true;
                    if a == d {
                        r = ldexp64(a, 128);
                    }
                } else if denorm(1.0 / d) {
                    r = ldexp64(a, -128);
                } else if denorm(num / d) {
                    flag = true;
                    if a == num {
                        r = ldexp64(a, 128);
                    }
                } else if exponent(num) <= 53 {
                    r = ldexp64(a, 128);
                }
                if flag {
                    vcc |= 1 << i;
                }
                put(i, r);
            }
            w.mask_set(op.sd as usize, vcc & exec);
        }
        F64x::DivFmas => {
            let (s0, s1, s2) = (
                src64(w, op, 0, true, pc)?,
                src64(w, op, 1, true, pc)?,
                src64(w, op, 2, true, pc)?,
            );
            let vcc = w.mask_get(super::VCC);
            for i in 0..n {
                let f = dl(s0[i]).mul_add(dl(s1[i]), dl(s2[i]));
                put(i, if vcc >> i & 1 != 0 { ldexp64(f, 64) } else { f });
            }
        }
    }
    w.vwrite(op.d, &lo, exec, pc)?;
    w.vwrite(op.d + 1, &hi, exec, pc)
}
