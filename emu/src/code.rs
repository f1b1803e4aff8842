//! Pre-decoded kernel code: every instruction is decoded once with `traces::isa::decode` and
//! turned into an [`Op`] (semantics chosen by mnemonic, operand fields read from the dwords),
//! so the interpreter's hot loop never touches the decoder again.

use std::collections::HashMap;

use traces::isa::{decode, Encoding, Instruction};
use traces::target::{Family, GfxTarget};

use super::cycles::Class;
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
        match code {
            0..=127 => Src::S(code as u8),
            255 => Src::Lit(literal),
            128..=254 => Src::Inline(code as u16),
            _ => Src::V((code - 256) as u16),
        }
    }
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
    /// Second half of a VOPD pair.
    pub y: Option<Box<Op>>,
    /// The words, for error reports.
    pub word: u32,
    pub mnemonic: &'static str,
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
            let end = matches!(&res, Ok(op) if op.mnemonic == "s_code_end");
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

fn sext(v: u32, bits: u32) -> i32 {
    ((v << (32 - bits)) as i32) >> (32 - bits)
}

/// The mnemonic without the `_e32`/`_e64` suffix.
fn base_name(m: &str) -> &str {
    m.strip_suffix("_e32")
        .or_else(|| m.strip_suffix("_e64"))
        .unwrap_or(m)
}

fn blank(i: &Instruction, k: K, class: Class) -> Op {
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
        mnemonic: mnemonic_static(i),
    }
}

fn mnemonic_static(i: &Instruction) -> &'static str {
    // The decoder's names are 'static table entries; keep a copy of the reference.
    ops::intern(i.mnemonic())
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
    let w = i.words();
    let w0 = w.first().copied().unwrap_or(0);
    let w1 = w.get(1).copied().unwrap_or(0);
    let lit = i.literal().unwrap_or(0);
    // RDNA4 moved the memory fields, renamed some operations and added others; everything
    // else (SOP*, VOP*, VOPD, DS) keeps the gfx11 layout.
    let g12 = i.target.family() == Some(Family::Rdna4);
    let look: fn(Encoding, &str) -> Option<(K, Class)> =
        if g12 { ops::lookup12 } else { ops::lookup };
    let name = base_name(i.mnemonic());
    let name = if g12 { ops::alias12(name) } else { name };
    // DPP (src0 = 0xFA / 0xE9 / 0xEA with a control dword): lane shuffles are not emulated, and
    // reading the marker as an inline constant would compute garbage.
    let dpp_src = match i.encoding {
        Encoding::Vop1 | Encoding::Vop2 | Encoding::Vopc => Some(w0 & 0x1FF),
        Encoding::Vop3 | Encoding::Vop3p if w.len() >= 3 => Some(w1 & 0x1FF),
        _ => None,
    };
    if matches!(dpp_src, Some(0xFA | 0xE9 | 0xEA)) {
        return Err(format!("{name}: DPP operands are not emulated"));
    }
    let (k, class) = if i.encoding == Encoding::Vopd {
        (K::Nop, Class::Valu)
    } else {
        look(i.encoding, name)
            .ok_or_else(|| format!("instruction {name} ({:?}) is not emulated", i.encoding))?
    };
    let mut op = blank(i, k, class);
    match i.encoding {
        Encoding::Sop1 => {
            op.d = ((w0 >> 16) & 0x7F) as u16;
            op.src[0] = Src::from_code(w0 & 0xFF, lit);
        }
        Encoding::Sop2 => {
            op.d = ((w0 >> 16) & 0x7F) as u16;
            op.src[0] = Src::from_code(w0 & 0xFF, lit);
            op.src[1] = Src::from_code((w0 >> 8) & 0xFF, lit);
        }
        Encoding::Sopk => {
            op.d = ((w0 >> 16) & 0x7F) as u16;
            op.imm = i32::from(w0 as u16 as i16);
        }
        Encoding::Sopc => {
            op.src[0] = Src::from_code(w0 & 0xFF, lit);
            op.src[1] = Src::from_code((w0 >> 8) & 0xFF, lit);
        }
        Encoding::Sopp => {
            op.imm = i32::from(w0 as u16 as i16);
        }
        Encoding::Smem => {
            op.d = ((w0 >> 6) & 0x7F) as u16;
            op.src[0] = Src::S(((w0 & 0x3F) << 1) as u8);
            // gfx12 widened the immediate offset to 24 bits.
            op.imm = if g12 {
                sext(w1 & 0xFF_FFFF, 24)
            } else {
                sext(w1 & 0x1F_FFFF, 21)
            };
            op.imm1 = ((w1 >> 25) & 0x7F) as i32;
        }
        Encoding::Vop1 => {
            op.d = ((w0 >> 17) & 0xFF) as u16;
            op.src[0] = Src::from_code(w0 & 0x1FF, lit);
            true16(&mut op, name);
        }
        Encoding::Vop2 => {
            op.d = ((w0 >> 17) & 0xFF) as u16;
            op.src[0] = Src::from_code(w0 & 0x1FF, lit);
            op.src[1] = Src::V(((w0 >> 9) & 0xFF) as u16);
            true16(&mut op, name);
            // VOP2 forms with an implicit third operand.
            match name {
                "v_fmac_f32" | "v_fmac_f64" => op.src[2] = Src::V(op.d),
                "v_fmac_f16" => {
                    // The accumulator is the destination half.
                    op.src[2] = Src::V(op.d);
                    op.hi |= (op.hi >> 3 & 1) << 2;
                }
                "v_fmamk_f32" | "v_fmamk_f16" => {
                    op.src[2] = op.src[1];
                    op.src[1] = Src::Lit(lit);
                    op.hi = (op.hi & !0b110) | (op.hi & 2) << 1;
                }
                "v_fmaak_f32" | "v_fmaak_f16" => op.src[2] = Src::Lit(lit),
                "v_cndmask_b32" | "v_add_co_ci_u32" | "v_sub_co_ci_u32" | "v_subrev_co_ci_u32" => {
                    op.src[2] = Src::S(106);
                    op.sd = 106;
                }
                _ => {}
            }
        }
        Encoding::Vopc => {
            op.src[0] = Src::from_code(w0 & 0x1FF, lit);
            op.src[1] = Src::V(((w0 >> 9) & 0xFF) as u16);
            op.sd = 106;
            true16(&mut op, name);
        }
        Encoding::Vop3 => {
            op.d = (w0 & 0xFF) as u16;
            op.src[0] = Src::from_code(w1 & 0x1FF, lit);
            op.src[1] = Src::from_code((w1 >> 9) & 0x1FF, lit);
            op.src[2] = Src::from_code((w1 >> 18) & 0x1FF, lit);
            op.neg = ((w1 >> 29) & 7) as u8;
            op.omod = ((w1 >> 27) & 3) as u8;
            op.clamp = w0 & (1 << 15) != 0;
            if ops::is_vop3sd(name) {
                op.sd = ((w0 >> 8) & 0x7F) as u8;
            } else {
                op.abs = ((w0 >> 8) & 7) as u8;
                // op_sel picks the halves of the 16-bit operands; on anything else it is a
                // form the emulator does not know.
                let sel = ((w0 >> 11) & 0xF) as u8;
                let half = ops::half_mask(name);
                if sel & !half != 0 {
                    return Err(format!("VOP3 op_sel {sel:#x} is not emulated on {name}"));
                }
                op.hi = sel;
            }
            if ops::is_cmp(name) {
                // VOPC promoted to VOP3: the mask goes to vdst (an SGPR).
                op.sd = (w0 & 0xFF) as u8;
            }
            if matches!(name, "v_fmac_f32" | "v_fmac_f16" | "v_fmac_f64") {
                op.src[2] = Src::V(op.d);
                op.hi |= (op.hi >> 3 & 1) << 2;
            }
        }
        Encoding::Vopd => {
            // X half in this op, Y half in `y`; both read before either writes.
            let text = i.text();
            let yname = text
                .split(" :: ")
                .nth(1)
                .and_then(|s| s.split_whitespace().next())
                .ok_or("VOPD without a Y half")?;
            let xk = look(Encoding::Vop2, vopd_base(name))
                .ok_or_else(|| format!("VOPD X {name} is not emulated"))?;
            let yk = look(Encoding::Vop2, vopd_base(yname))
                .ok_or_else(|| format!("VOPD Y {yname} is not emulated"))?;
            op.k = xk.0;
            op.class = Class::Valu;
            op.d = ((w1 >> 24) & 0xFF) as u16;
            op.src[0] = Src::from_code(w0 & 0x1FF, lit);
            op.src[1] = Src::V(((w0 >> 9) & 0xFF) as u16);
            let ydst = ((((w1 >> 17) & 0x7F) << 1) | ((op.d as u32 & 1) ^ 1)) as u16;
            let mut y = blank(i, yk.0, Class::Valu);
            y.d = ydst;
            y.src[0] = Src::from_code(w1 & 0x1FF, lit);
            y.src[1] = Src::V(((w1 >> 9) & 0xFF) as u16);
            vopd_fix(&mut op, vopd_base(name), lit);
            vopd_fix(&mut y, vopd_base(yname), lit);
            op.y = Some(Box::new(y));
        }
        Encoding::Vop3p => {
            op.d = (w0 & 0xFF) as u16;
            op.src[0] = Src::from_code(w1 & 0x1FF, lit);
            op.src[1] = Src::from_code((w1 >> 9) & 0x1FF, lit);
            op.src[2] = Src::from_code((w1 >> 18) & 0x1FF, lit);
            op.neg = ((w1 >> 29) & 7) as u8;
            op.abs = ((w0 >> 8) & 7) as u8;
            op.hi = ((w0 >> 11) & 7) as u8;
            op.hi2 = (((w1 >> 27) & 3) | (((w0 >> 14) & 1) << 2)) as u8;
            op.clamp = w0 & (1 << 15) != 0;
            if op.clamp {
                return Err(format!("{name}: clamp is not emulated"));
            }
        }
        Encoding::Ds => {
            op.imm = (w0 & 0xFF) as i32;
            op.imm1 = ((w0 >> 8) & 0xFF) as i32;
            if w0 & (1 << 17) != 0 {
                return Err("GDS is not emulated".into());
            }
            op.src[0] = Src::V((w1 & 0xFF) as u16);
            op.src[1] = Src::V(((w1 >> 8) & 0xFF) as u16);
            op.src[2] = Src::V(((w1 >> 16) & 0xFF) as u16);
            op.d = ((w1 >> 24) & 0xFF) as u16;
        }
        Encoding::Flat | Encoding::Global | Encoding::Scratch if g12 => {
            // VFLAT/VGLOBAL/VSCRATCH: saddr [6:0]; vdst w1[7:0], SVE w1[17], th w1[22:20],
            // vsrc (data) w1[30:23]; vaddr w2[7:0], signed 24-bit offset w2[31:8].
            let w2 = w.get(2).copied().unwrap_or(0);
            op.imm = (w2 as i32) >> 8;
            op.src[0] = Src::V((w2 & 0xFF) as u16);
            op.src[1] = Src::V(((w1 >> 23) & 0xFF) as u16);
            op.imm1 = (w0 & 0x7F) as i32;
            op.d = (w1 & 0xFF) as u16;
            if i.encoding == Encoding::Scratch && w1 & (1 << 17) == 0 {
                op.src[0] = Src::None;
            }
            if let Class::Vmem { saddr, .. } = &mut op.class {
                *saddr = op.imm1 != 124;
            }
            // th bit 0 (TH_ATOMIC_RETURN) makes an atomic return the old value.
            atomic_return(&mut op, (w1 >> 20) & 1 != 0);
        }
        Encoding::Flat | Encoding::Global | Encoding::Scratch => {
            op.imm = sext(w0 & 0x1FFF, 13);
            op.src[0] = Src::V((w1 & 0xFF) as u16);
            op.src[1] = Src::V(((w1 >> 8) & 0xFF) as u16);
            op.imm1 = ((w1 >> 16) & 0x7F) as i32;
            op.d = ((w1 >> 24) & 0xFF) as u16;
            // Scratch: SVE (bit 23 of w1) says whether VADDR takes part.
            if i.encoding == Encoding::Scratch && w1 & (1 << 23) == 0 {
                op.src[0] = Src::None;
            }
            if let Class::Vmem { saddr, .. } = &mut op.class {
                *saddr = op.imm1 != 124;
            }
            // GLC makes an atomic return the old value.
            atomic_return(&mut op, (w0 >> 14) & 1 != 0);
        }
        Encoding::Mubuf if !g12 => {}
        e => return Err(format!("{e:?} instructions are not emulated")),
    }
    Ok(op)
}

/// True16 register fields of VOP1/VOP2/VOPC: for a 16-bit operand, bit 7 of the VGPR number
/// selects the high half (v0..v127 only).
fn true16(op: &mut Op, name: &str) {
    let half = ops::half_mask(name);
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

fn vopd_base(n: &str) -> &str {
    match n.strip_prefix("v_dual_") {
        Some(r) => ops::intern_dual(r),
        None => n,
    }
}

fn vopd_fix(op: &mut Op, name: &str, lit: u32) {
    match name {
        "v_fmac_f32" => op.src[2] = Src::V(op.d),
        "v_fmamk_f32" => {
            op.src[2] = op.src[1];
            op.src[1] = Src::Lit(lit);
        }
        "v_fmaak_f32" => op.src[2] = Src::Lit(lit),
        "v_cndmask_b32" => op.src[2] = Src::S(106),
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
