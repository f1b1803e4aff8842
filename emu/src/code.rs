//! Pre-decoded kernel code: every instruction is decoded once with `traces::isa::decode` and
//! turned into an [`Op`] (semantics chosen by its [`Opcode`], operands read through the
//! decoder's typed field accessors), so the interpreter's hot loop never touches the decoder
//! again.

use std::collections::HashMap;

use traces::isa::{self, decode, Encoding, Instruction, Opcode as O};
use traces::target::{Family, GfxTarget};

use super::cycles::Class;
use super::exec::ext;
use super::exec::ops::{self, K};

/// A source operand: SGPR-file slot (0..=127: s0.., vcc, ttmp, null, m0, exec), VGPR, an inline
/// constant code (128..=254), the literal, or nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Src {
    S(u8),
    V(u16),
    Inline(u16),
    Lit(u32),
    None,
}

impl Src {
    /// From a 9-bit (VALU) or 8-bit (SALU) source field.
    pub fn from_code(code: u32, literal: u32) -> Src {
        isa::Src::from_code(code, literal).into()
    }
}

impl From<isa::Src> for Src {
    fn from(s: isa::Src) -> Src {
        match s {
            isa::Src::Scalar(r) => Src::S(r),
            isa::Src::Vgpr(r) => Src::V(r),
            isa::Src::Inline(c) => Src::Inline(u16::from(c)),
            isa::Src::Literal(v) => Src::Lit(v),
        }
    }
}

/// Source `k` of `i` (`Src::None` where the encoding has none).
fn src(i: &Instruction, k: usize) -> Src {
    i.src(k).map_or(Src::None, Src::from)
}

/// One pre-decoded instruction.
#[derive(Debug, Clone)]
pub struct Op {
    pub k: K,
    pub enc: Encoding,
    pub len: u8,
    pub class: Class,
    /// `class.issue()` for wave32 and wave64, worked out once.
    pub issue: [u8; 2],
    /// Destination: VGPR number, or SGPR-file slot for scalar results.
    pub d: u16,
    /// Second destination (VOP3SD carry / VOPC e64 mask), SGPR-file slot.
    pub sd: u8,
    pub src: [Src; 3],
    /// VOP3P: neg_hi (the fma_mix ops use it as abs).
    pub abs: u8,
    /// VOP3P: neg_lo.
    pub neg: u8,
    /// 16-bit operands that use the high half of their VGPR (bit k: src k, bit 3: dst); VOP3P:
    /// op_sel.
    pub hi: u8,
    /// VOP3P op_sel_hi.
    pub hi2: u8,
    pub clamp: bool,
    pub omod: u8,
    /// SOPP/SOPK simm16, memory offsets (sign-extended), DS offset0.
    pub imm: i32,
    /// DS offset1, SMEM soffset slot, FLAT saddr slot.
    pub imm1: i32,
    /// Second half of a VOPD pair, or the operation of a DPP instruction (`K::Dpp`).
    pub y: Option<Box<Op>>,
    /// The words, for error reports.
    pub word: u32,
    /// The operation (for error reports: semantics are in `k`).
    pub opcode: O,
}

/// Why an instruction cannot be run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    pub pc: u64,
    pub what: String,
}

/// The decoded program, addressed by byte offset from its entry.
pub struct Program {
    pub base: u64,
    ops: Vec<Option<Result<Op, String>>>,
}

impl Program {
    /// Decodes `code` (bytes from the entry point to the end of the mapped region).
    pub fn new(code: &[u8], base: u64, target: GfxTarget) -> Program {
        let n = code.len() / 4;
        let mut ops: Vec<Option<Result<Op, String>>> = (0..n).map(|_| None).collect();
        // Decode linearly; s_code_end marks the end of the kernel (padding follows).
        let mut off = 0usize;
        while off + 4 <= code.len() {
            let Some(rest) = code.get(off..) else { break };
            let r = decode(rest, target);
            let (res, len) = match r {
                Ok(i) => {
                    let len = i.len();
                    let words = |i: &Instruction| {
                        i.words()
                            .iter()
                            .map(|w| format!("{w:08X}"))
                            .collect::<Vec<_>>()
                            .join(" ")
                    };
                    let r = build(&i).map_err(|e| {
                        format!(
                            "{e} ({}; {:?} encoding {})",
                            i.text(),
                            i.encoding,
                            words(&i)
                        )
                    });
                    (r, len)
                }
                Err(e) => (Err(e.to_string()), 4),
            };
            let end = matches!(&res, Ok(op) if op.opcode == O::SCodeEnd);
            if let Some(slot) = ops.get_mut(off / 4) {
                *slot = Some(res);
            }
            off += len.max(4);
            if end {
                break;
            }
        }
        Program { base, ops }
    }

    /// The instruction at byte offset `off`.
    #[inline]
    pub fn at(&self, off: u32) -> Result<&Op, Unsupported> {
        match self.ops.get((off / 4) as usize) {
            Some(Some(Ok(op))) if off.is_multiple_of(4) => Ok(op),
            Some(Some(Err(e))) => Err(Unsupported {
                pc: self.base + u64::from(off),
                what: e.clone(),
            }),
            _ => Err(Unsupported {
                pc: self.base + u64::from(off),
                what: "no instruction decoded at this address (jump into data or past the code)"
                    .into(),
            }),
        }
    }
}

/// A cache of decoded programs keyed by entry address (reloaded if the code bytes change).
#[derive(Default)]
pub struct ProgramCache {
    map: HashMap<u64, (u64, std::sync::Arc<Program>)>,
}

impl ProgramCache {
    pub fn get(&mut self, base: u64, code: &[u8], target: GfxTarget) -> std::sync::Arc<Program> {
        let h = code.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
            (h ^ u64::from(x)).wrapping_mul(0x0000_0100_0000_01B3)
        });
        if let Some((hh, p)) = self.map.get(&base) {
            if *hh == h {
                return p.clone();
            }
        }
        let p = std::sync::Arc::new(Program::new(code, base, target));
        self.map.insert(base, (h, p.clone()));
        p
    }
}

fn blank(i: &Instruction, opcode: O, k: K, class: Class) -> Op {
    Op {
        k,
        enc: i.encoding,
        len: i.len() as u8,
        class,
        issue: [0; 2],
        d: 0,
        sd: 0,
        src: [Src::None; 3],
        abs: 0,
        neg: 0,
        hi: 0,
        hi2: 0,
        clamp: false,
        omod: 0,
        imm: 0,
        imm1: 0,
        y: None,
        word: i.words().first().copied().unwrap_or(0),
        opcode,
    }
}

/// Builds the [`Op`] of one decoded instruction.
pub fn build(i: &Instruction) -> Result<Op, String> {
    let mut op = build_op(i)?;
    for (k, lanes) in [32, 64].into_iter().enumerate() {
        op.issue[k] = u8::try_from(op.class.issue(lanes)).unwrap_or(u8::MAX);
    }
    Ok(op)
}

fn build_op(i: &Instruction) -> Result<Op, String> {
    let lit = i.literal().unwrap_or(0);
    let opcode = i
        .op()
        .ok_or_else(|| format!("{:?} opcode {} has no operation", i.encoding, i.opcode))?;
    // RDNA4 moved the memory fields (the accessors know where), renamed some operations and
    // added others; everything else keeps the gfx11 semantics.
    let g12 = i.target.family() == Some(Family::Rdna4);
    let look: fn(Encoding, O) -> Option<(K, Class)> = if g12 { ops::lookup12 } else { ops::lookup };
    let o = if g12 { ops::alias12(opcode) } else { opcode };
    let name = o.name();
    // DPP (src0 = 0xFA / 0xE9 / 0xEA with a control dword): the operation is built as usual
    // (`src(0)` is the real VGPR) and wrapped in a K::Dpp that permutes src0 first.
    let dpp = if i.is_dpp() {
        let d = i
            .dpp()
            .ok_or_else(|| format!("{name}: SDWA is not emulated"))?;
        if ops::is_cmp(o) && name.starts_with("v_cmpx") {
            return Err(format!("{name}: DPP on v_cmpx is not emulated"));
        }
        Some(d)
    } else {
        None
    };
    let (k, class) = if i.encoding == Encoding::Vopd {
        (K::Nop, Class::Valu)
    } else {
        look(i.encoding, o)
            .ok_or_else(|| format!("instruction {name} ({:?}) is not emulated", i.encoding))?
    };
    let mut op = blank(i, opcode, k, class);
    let vdst = || i.vdst().map_or(0, u16::from);
    let sdst = || i.sdst().map_or(0, u16::from);
    let simm16 = || i.simm16().map_or(0, i32::from);
    let unsupported = || format!("{:?} instructions are not emulated", i.encoding);
    match i.encoding {
        Encoding::Sop1 => {
            op.d = sdst();
            op.src[0] = src(i, 0);
        }
        Encoding::Sop2 => {
            op.d = sdst();
            op.src[0] = src(i, 0);
            op.src[1] = src(i, 1);
        }
        Encoding::Sopk => {
            op.d = sdst();
            op.imm = simm16();
        }
        Encoding::Sopc => {
            op.src[0] = src(i, 0);
            op.src[1] = src(i, 1);
        }
        Encoding::Sopp => {
            op.imm = simm16();
        }
        Encoding::Smem => {
            let m = i.smem().ok_or_else(unsupported)?;
            op.d = u16::from(m.sdata);
            op.src[0] = Src::S(m.sbase);
            op.imm = m.offset;
            op.imm1 = i32::from(m.soffset);
        }
        Encoding::Vop1 => {
            op.d = vdst();
            op.src[0] = src(i, 0);
            true16(&mut op, o);
        }
        Encoding::Vop2 => {
            op.d = vdst();
            op.src[0] = src(i, 0);
            op.src[1] = src(i, 1);
            true16(&mut op, o);
            // VOP2 forms with an implicit third operand.
            match o {
                O::VFmacF32 | O::VFmacF64 => op.src[2] = Src::V(op.d),
                O::VFmacF16 => {
                    // The accumulator is the destination half.
                    op.src[2] = Src::V(op.d);
                    op.hi |= (op.hi >> 3 & 1) << 2;
                }
                O::VFmamkF32 | O::VFmamkF16 => {
                    op.src[2] = op.src[1];
                    op.src[1] = Src::Lit(lit);
                    op.hi = (op.hi & !0b110) | (op.hi & 2) << 1;
                }
                O::VFmaakF32 | O::VFmaakF16 => op.src[2] = Src::Lit(lit),
                O::VCndmaskB32 | O::VAddCoCiU32 | O::VSubCoCiU32 | O::VSubrevCoCiU32 => {
                    op.src[2] = Src::S(106);
                    op.sd = 106;
                }
                _ => {}
            }
        }
        Encoding::Vopc => {
            op.src[0] = src(i, 0);
            op.src[1] = src(i, 1);
            op.sd = 106;
            true16(&mut op, o);
        }
        Encoding::Vop3 => {
            let m = i.vop3_mods().ok_or_else(unsupported)?;
            op.d = vdst();
            for k in 0..3 {
                op.src[k] = src(i, k);
            }
            op.neg = m.neg;
            op.omod = m.omod;
            op.clamp = m.clamp;
            // VOP3SD forms keep their carry/mask destination where abs and op_sel would be
            // (the accessor reports neither for them).
            if let Some(sd) = i.sdst() {
                op.sd = sd;
            }
            op.abs = m.abs;
            // op_sel picks the halves of the 16-bit operands; on anything else it is a form the
            // emulator does not know.
            let half = ops::half_mask(o);
            if m.op_sel & !half != 0 {
                return Err(format!(
                    "VOP3 op_sel {:#x} is not emulated on {name}",
                    m.op_sel
                ));
            }
            op.hi = m.op_sel;
            if ops::is_cmp(o) {
                // VOPC promoted to VOP3: the mask goes to vdst (an SGPR).
                op.sd = op.d as u8;
            }
            if matches!(o, O::VFmacF32 | O::VFmacF16 | O::VFmacF64) {
                op.src[2] = Src::V(op.d);
                op.hi |= (op.hi >> 3 & 1) << 2;
            }
        }
        Encoding::Vopd => {
            // X half in this op, Y half in `y`; both read before either writes.
            let [x, y] = i.vopd().ok_or("VOPD without a Y half")?;
            let (xo, yo) = (vopd_base(x.op), vopd_base(y.op));
            let xk = look(Encoding::Vop2, xo)
                .ok_or_else(|| format!("VOPD X {} is not emulated", x.op))?;
            let yk = look(Encoding::Vop2, yo)
                .ok_or_else(|| format!("VOPD Y {} is not emulated", y.op))?;
            op.k = xk.0;
            op.class = Class::Valu;
            op.d = x.vdst;
            op.src[0] = x.src0.into();
            op.src[1] = Src::V(x.vsrc1);
            let mut yop = blank(i, y.op, yk.0, Class::Valu);
            yop.d = y.vdst;
            yop.src[0] = y.src0.into();
            yop.src[1] = Src::V(y.vsrc1);
            vopd_fix(&mut op, xo, lit);
            vopd_fix(&mut yop, yo, lit);
            op.y = Some(Box::new(yop));
        }
        Encoding::Vop3p => {
            let m = i.vop3p_mods().ok_or_else(unsupported)?;
            op.d = vdst();
            for k in 0..3 {
                op.src[k] = src(i, k);
            }
            op.neg = m.neg_lo;
            op.abs = m.neg_hi;
            op.hi = m.op_sel;
            op.hi2 = m.op_sel_hi;
            op.clamp = m.clamp;
            if op.clamp {
                return Err(format!("{name}: clamp is not emulated"));
            }
        }
        Encoding::Ds => {
            let m = i.ds().ok_or_else(unsupported)?;
            op.imm = i32::from(m.offset0);
            op.imm1 = i32::from(m.offset1);
            if m.gds {
                return Err("GDS is not emulated".into());
            }
            op.src[0] = Src::V(m.addr);
            op.src[1] = Src::V(m.data0);
            op.src[2] = Src::V(m.data1);
            op.d = m.vdst;
        }
        Encoding::Flat | Encoding::Global | Encoding::Scratch => {
            let m = i.flat().ok_or_else(unsupported)?;
            op.imm = m.offset;
            op.src[0] = Src::V(m.addr);
            op.src[1] = Src::V(m.data);
            op.imm1 = i32::from(m.saddr);
            op.d = m.vdst;
            // Scratch: SVE says whether VADDR takes part.
            if i.encoding == Encoding::Scratch && !m.sve {
                op.src[0] = Src::None;
            }
            if let Class::Vmem { saddr, .. } = &mut op.class {
                *saddr = op.imm1 != 124;
            }
            // GLC (gfx11) / TH_ATOMIC_RETURN (gfx12) makes an atomic return the old value.
            atomic_return(&mut op, m.atomic_return);
        }
        Encoding::Mubuf | Encoding::Mtbuf if matches!(op.k, K::Buf(..)) => {
            let b = i.buf().ok_or_else(unsupported)?;
            if b.tfe {
                return Err(format!("{name}: tfe is not emulated"));
            }
            if let (Encoding::Mtbuf, K::Buf(m, _)) = (i.encoding, op.k) {
                if !ext::raw_format(b.format, m.dwords) {
                    return Err(format!(
                        "{name}: format {:?} is not emulated (32-bit components only)",
                        b.format
                    ));
                }
            }
            op.src[0] = Src::V(b.vaddr);
            op.src[1] = Src::V(b.vdata);
            op.d = b.vdata;
            op.imm = b.offset as i32;
            op.imm1 = i32::from(b.soffset);
            op.sd = b.srsrc;
            op.hi = u8::from(b.offen) | u8::from(b.idxen) << 1;
        }
        Encoding::Mubuf if !g12 => {}
        _ => return Err(unsupported()),
    }
    if let Some(d) = dpp {
        // VOP1/VOP2/VOPC DPP16 carries src0/src1 neg/abs in its control word.
        if let traces::isa::Dpp::Dpp16 { neg, abs, .. } = d {
            op.neg |= neg;
            op.abs |= abs;
        }
        let mut outer = blank(i, opcode, K::Dpp, op.class);
        outer.src[0] = op.src[0];
        outer.d = op.d;
        (outer.imm, outer.imm1) = ext::dpp_pack(d);
        outer.y = Some(Box::new(op));
        return Ok(outer);
    }
    Ok(op)
}

/// True16 register fields of VOP1/VOP2/VOPC: for a 16-bit operand, bit 7 of the VGPR number
/// selects the high half (v0..v127 only).
fn true16(op: &mut Op, o: O) {
    let half = ops::half_mask(o);
    if half == 0 {
        return;
    }
    for k in 0..2 {
        if let (true, Src::V(r)) = (half >> k & 1 != 0, op.src[k]) {
            op.src[k] = Src::V(r & 0x7F);
            op.hi |= ((r >> 7) as u8 & 1) << k;
        }
    }
    if half & 8 != 0 {
        op.hi |= ((op.d >> 7) as u8 & 1) << 3;
        op.d &= 0x7F;
    }
}

/// Whether a FLAT/GLOBAL atomic returns the pre-op value (an encoding bit, not the name).
fn atomic_return(op: &mut Op, rtn: bool) {
    if let K::GAtomic(a, _, n) = op.k {
        op.k = K::GAtomic(a, rtn, n);
        if let Class::Vmem { store, .. } = &mut op.class {
            *store = !rtn;
        }
    }
}

/// The VOP2 operation a VOPD half (`v_dual_*`) performs.
fn vopd_base(o: O) -> O {
    match o {
        O::VDualAddF32 => O::VAddF32,
        O::VDualAddNcU32 => O::VAddNcU32,
        O::VDualAndB32 => O::VAndB32,
        O::VDualCndmaskB32 => O::VCndmaskB32,
        O::VDualDot2accF32F16 => O::VDot2accF32F16,
        O::VDualFmaakF32 => O::VFmaakF32,
        O::VDualFmacF32 => O::VFmacF32,
        O::VDualFmamkF32 => O::VFmamkF32,
        O::VDualLshlrevB32 => O::VLshlrevB32,
        O::VDualMaxF32 => O::VMaxF32,
        O::VDualMaxNumF32 => O::VMaxNumF32,
        O::VDualMinF32 => O::VMinF32,
        O::VDualMinNumF32 => O::VMinNumF32,
        O::VDualMovB32 => O::VMovB32,
        O::VDualMulDx9ZeroF32 => O::VMulDx9ZeroF32,
        O::VDualMulF32 => O::VMulF32,
        O::VDualSubF32 => O::VSubF32,
        O::VDualSubrevF32 => O::VSubrevF32,
        o => o,
    }
}

fn vopd_fix(op: &mut Op, o: O, lit: u32) {
    match o {
        O::VFmacF32 => op.src[2] = Src::V(op.d),
        O::VFmamkF32 => {
            op.src[2] = op.src[1];
            op.src[1] = Src::Lit(lit);
        }
        O::VFmaakF32 => op.src[2] = Src::Lit(lit),
        O::VCndmaskB32 => op.src[2] = Src::S(106),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(words: &[u32]) -> Program {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        Program::new(&bytes, 0x1000, GfxTarget::GFX1100)
    }

    #[test]
    fn true16_register_bit_selects_the_high_half() {
        // v_cmp_lt_i16_e32 vcc_lo, v15.l, v15.h; v_mov_b16_e32 v6.l, v15.h
        let p = program(&[0x7C63_1F0F, 0x7E0C_398F]);
        let cmp = p.at(0).unwrap();
        assert_eq!(
            (cmp.src[0], cmp.src[1], cmp.hi),
            (Src::V(15), Src::V(15), 0b10)
        );
        let mov = p.at(4).unwrap();
        assert_eq!((mov.src[0], mov.d, mov.hi), (Src::V(15), 6, 0b0001));
    }

    #[test]
    fn vopd_halves_come_from_the_decoder() {
        // v_dual_fmac_f32 v0, v1, v2 :: v_dual_mov_b32 v3, 0x42
        let p = program(&[0xC810_0501, 0x0002_00FF, 0x42]);
        let x = p.at(0).unwrap();
        assert_eq!(x.len, 12);
        assert_eq!(
            (x.opcode, x.d, x.src),
            (O::VDualFmacF32, 0, [Src::V(1), Src::V(2), Src::V(0)])
        );
        let y = x.y.as_deref().unwrap();
        assert_eq!(
            (y.opcode, y.d, y.src[0]),
            (O::VDualMovB32, 3, Src::Lit(0x42))
        );
        // gfx12: v_dual_max_num_f32 v0, v1, v2 :: v_dual_cndmask_b32 v3, v4, v5 (the max runs
        // as gfx11's v_max_f32; the cndmask reads vcc).
        let bytes: Vec<u8> = [0xCA92_0501u32, 0x0002_0B04]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        let p = Program::new(&bytes, 0, GfxTarget::GFX1200);
        let x = p.at(0).unwrap();
        assert!(matches!(x.k, K::V(_, true)), "{:?}", x.k);
        let y = x.y.as_deref().unwrap();
        assert!(matches!(y.k, K::Cndmask), "{:?}", y.k);
        assert_eq!((y.d, y.src), (3, [Src::V(4), Src::V(5), Src::S(106)]));
    }

    #[test]
    fn vop3p_modifiers_are_decoded() {
        // v_pk_fma_f16 v0, v1, v2, v3 op_sel:[1,0,0] op_sel_hi:[0,1,1] neg_lo:[0,1,0]
        let p = program(&[0xCC0E_4800, 0x540E_0501]);
        let op = p.at(0).unwrap();
        assert_eq!(op.src, [Src::V(1), Src::V(2), Src::V(3)]);
        assert_eq!((op.hi, op.hi2, op.neg, op.abs), (0b001, 0b110, 0b010, 0));
    }

    #[test]
    fn unknown_packed_forms_are_reported_with_their_words() {
        // v_dot2_f32_f16 v0, v1, v2, v3; v_pk_add_f16 v0, v1, v2 clamp
        let p = program(&[0xCC13_4000, 0x1C0E_0501, 0xCC0F_C000, 0x1802_0501]);
        let e = p.at(0).unwrap_err();
        assert_eq!(e.pc, 0x1000);
        assert!(
            e.what.contains("v_dot2_f32_f16") && e.what.contains("CC134000 1C0E0501"),
            "{}",
            e.what
        );
        let e = p.at(8).unwrap_err();
        assert_eq!(e.pc, 0x1008);
        assert!(
            e.what.contains("clamp") && e.what.contains("CC0FC000"),
            "{}",
            e.what
        );
    }
}
