//! Operand extraction and LLVM-syntax printing shared by the decoders.

use std::fmt::Write;

use super::table::{CType, Field, ImmFmt, OpInfo, Opnd, RegKind};
use super::{Arch, Encoding, Instruction, Operand, SpecialReg};

fn bits(w: u32, lo: u32, n: u32) -> u32 {
    (w >> lo) & ((1u32 << n) - 1)
}

/// Raw value of `f` (register fields as register numbers; SMEM/MUBUF bases as SGPR numbers).
#[inline]
pub(super) fn field(i: &Instruction, f: Field, y: bool) -> u32 {
    let [w0, w1, w2, ..] = i.words;
    use Encoding as E;
    use Field as F;
    if i.arch == Arch::Gfx12 {
        match (i.encoding, f) {
            (E::Flat | E::Global | E::Scratch, F::Vdst) => return bits(w1, 0, 8),
            (E::Flat | E::Global | E::Scratch, F::Addr) => return bits(w2, 0, 8),
            (E::Flat | E::Global | E::Scratch, F::Data) => return bits(w1, 23, 8),
            (E::Flat | E::Global | E::Scratch, F::Saddr) => return bits(w0, 0, 7),
            (E::Mubuf | E::Mtbuf | E::Mimg, F::Vdata) => return bits(w1, 0, 8),
            (E::Mubuf | E::Mtbuf | E::Mimg, F::Vaddr) => return bits(w2, 0, 8),
            (E::Mubuf | E::Mtbuf | E::Mimg, F::Srsrc) => return bits(w1, 9, 7),
            (E::Mubuf | E::Mtbuf, F::Soffset) => return bits(w0, 0, 7),
            (E::Mimg, F::Ssamp) => return bits(w1, 23, 7),
            _ => {}
        }
    }
    match (i.encoding, f) {
        (E::Sop1 | E::Sop2 | E::Sopk, F::Sdst) => bits(w0, 16, 7),
        (E::Sop1 | E::Sop2 | E::Sopc, F::Ssrc0) => bits(w0, 0, 8),
        (E::Sop2 | E::Sopc, F::Ssrc1) => bits(w0, 8, 8),
        (E::Smem, F::Sdata) => bits(w0, 6, 7),
        (E::Smem, F::Sbase) => bits(w0, 0, 6) * 2,
        (E::Smem, F::Soffset) => bits(w1, 25, 7),
        (E::Vop1 | E::Vop2, F::Vdst) => bits(w0, 17, 8),
        (E::Vop1 | E::Vop2 | E::Vopc, F::Src0) => bits(w0, 0, 9),
        (E::Vop2 | E::Vopc, F::Vsrc1) => bits(w0, 9, 8),
        (E::Vop3 | E::Vop3p | E::Vinterp | E::Ldsdir, F::Vdst) => bits(w0, 0, 8),
        (E::Vop3, F::Sdst) => bits(w0, 8, 7),
        (E::Vop3 | E::Vop3p | E::Vinterp, F::Src0) => bits(w1, 0, 9),
        (E::Vop3 | E::Vop3p | E::Vinterp, F::Src1) => bits(w1, 9, 9),
        (E::Vop3 | E::Vop3p | E::Vinterp, F::Src2) => bits(w1, 18, 9),
        (E::Vopd, F::Src0) if !y => bits(w0, 0, 9),
        (E::Vopd, F::Vsrc1) if !y => bits(w0, 9, 8),
        (E::Vopd, F::Vdst) if !y => bits(w1, 24, 8),
        (E::Vopd, F::Src0) => bits(w1, 0, 9),
        (E::Vopd, F::Vsrc1) => bits(w1, 9, 8),
        (E::Vopd, F::Vdst) => (bits(w1, 17, 7) << 1) | ((bits(w1, 24, 8) & 1) ^ 1),
        (E::Ds | E::Flat | E::Global | E::Scratch, F::Vdst) => bits(w1, 24, 8),
        (E::Ds | E::Flat | E::Global | E::Scratch, F::Addr) => bits(w1, 0, 8),
        (E::Ds, F::Data0) => bits(w1, 8, 8),
        (E::Ds, F::Data1) => bits(w1, 16, 8),
        (E::Flat | E::Global | E::Scratch, F::Data) => bits(w1, 8, 8),
        (E::Flat | E::Global | E::Scratch, F::Saddr) => bits(w1, 16, 7),
        (E::Mubuf | E::Mtbuf | E::Mimg, F::Vdata) => bits(w1, 8, 8),
        (E::Mubuf | E::Mtbuf | E::Mimg, F::Vaddr) => bits(w1, 0, 8),
        (E::Mubuf | E::Mtbuf | E::Mimg, F::Srsrc) => bits(w1, 16, 5) * 4,
        (E::Mubuf | E::Mtbuf, F::Soffset) => bits(w1, 24, 8),
        (E::Mimg, F::Ssamp) => bits(w1, 26, 5) * 4,
        _ => 0,
    }
}

/// A typed operand plus what printing needs.
#[derive(Debug, Clone, Copy)]
pub(super) struct Op {
    pub op: Operand,
    pub ctype: CType,
    pub neg: bool,
    pub abs: bool,
    /// SDWA integer sign extension (`sext(v1)`).
    pub sext: bool,
    pub imm_fmt: Option<ImmFmt>,
}

impl Op {
    fn new(op: Operand) -> Op {
        Op {
            op,
            ctype: CType::C32,
            neg: false,
            abs: false,
            sext: false,
            imm_fmt: None,
        }
    }
}

/// Operand list with fixed capacity, so printing allocates nothing.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ops {
    buf: [Op; 10],
    len: usize,
}

impl Ops {
    fn new() -> Ops {
        Ops {
            buf: [Op::new(Operand::Off); 10],
            len: 0,
        }
    }
    fn push(&mut self, o: Op) {
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = o;
            self.len += 1;
        }
    }
    fn insert_front(&mut self, o: Op) {
        if self.len < self.buf.len() {
            self.buf.copy_within(0..self.len, 1);
            self.buf[0] = o;
            self.len += 1;
        }
    }
    pub fn as_slice(&self) -> &[Op] {
        &self.buf[..self.len]
    }
}

/// Decode an 8/9-bit scalar/source operand value.
fn src_operand(v: u32, n: u8, literal: u32) -> Operand {
    src_operand_a(v, n, literal, Arch::Gfx11)
}

/// [`src_operand`] for `arch`: gfx9 has flat_scratch/xnack_mask at 102..105 and m0 at 124.
/// Always inlined: returned through memory, the operand is read back at once in other widths,
/// which stalls store forwarding.
#[inline(always)]
fn src_operand_a(v: u32, n: u8, literal: u32, arch: Arch) -> Operand {
    use SpecialReg as R;
    if arch == Arch::Gfx9 {
        match v {
            102 if n >= 2 => return Operand::Special(R::FlatScratch),
            102 => return Operand::Special(R::FlatScratchLo),
            103 => return Operand::Special(R::FlatScratchHi),
            104 if n >= 2 => return Operand::Special(R::XnackMask),
            104 => return Operand::Special(R::XnackMaskLo),
            105 => return Operand::Special(R::XnackMaskHi),
            124 => return Operand::Special(R::M0),
            125 => return Operand::Special(R::Null),
            _ => {}
        }
    }
    match v {
        0..=105 => Operand::Sgpr {
            first: v as u16,
            count: n,
        },
        106 if n >= 2 => Operand::Special(R::Vcc),
        106 => Operand::Special(R::VccLo),
        107 => Operand::Special(R::VccHi),
        108..=123 => Operand::Ttmp {
            first: (v - 108) as u16,
            count: n,
        },
        124 => Operand::Special(R::Null),
        125 => Operand::Special(R::M0),
        126 if n >= 2 => Operand::Special(R::Exec),
        126 => Operand::Special(R::ExecLo),
        127 => Operand::Special(R::ExecHi),
        128..=192 => Operand::InlineInt(v as i32 - 128),
        193..=208 => Operand::InlineInt(192 - v as i32),
        235 => Operand::Special(R::SharedBase),
        236 => Operand::Special(R::SharedLimit),
        237 => Operand::Special(R::PrivateBase),
        238 => Operand::Special(R::PrivateLimit),
        239 => Operand::Special(R::PopsExitingWaveId),
        240 => Operand::InlineFloat(0.5),
        241 => Operand::InlineFloat(-0.5),
        242 => Operand::InlineFloat(1.0),
        243 => Operand::InlineFloat(-1.0),
        244 => Operand::InlineFloat(2.0),
        245 => Operand::InlineFloat(-2.0),
        246 => Operand::InlineFloat(4.0),
        247 => Operand::InlineFloat(-4.0),
        248 => Operand::InlineFloat(0.15915494309189535),
        251 => Operand::Special(R::Vccz),
        252 => Operand::Special(R::Execz),
        253 => Operand::Special(R::Scc),
        254 => Operand::Special(R::LdsDirect),
        255 => Operand::Literal(literal),
        256..=511 => Operand::Vgpr {
            first: (v - 256) as u16,
            count: n,
            hi: None,
        },
        _ => Operand::Text("<invalid>"),
    }
}

pub(super) fn literal(i: &Instruction) -> Option<u32> {
    if i.dpp != 0 {
        // The dword after a DPP/SDWA instruction's base is its control word, never a literal.
        return None;
    }
    let base = match i.encoding {
        Encoding::Vop3 | Encoding::Vop3p | Encoding::Vopd | Encoding::Vinterp => 8,
        _ => 4,
    };
    if i.len() > base {
        i.words.get(base / 4).copied()
    } else {
        None
    }
}

fn is_e32_true16(e: Encoding) -> bool {
    matches!(e, Encoding::Vop1 | Encoding::Vop2 | Encoding::Vopc)
}

fn op_index(f: Field) -> Option<u32> {
    match f {
        Field::Src0 => Some(0),
        Field::Src1 => Some(1),
        Field::Src2 => Some(2),
        _ => None,
    }
}

fn vop3_mods(i: &Instruction) -> bool {
    matches!(i.encoding, Encoding::Vop3 | Encoding::Vinterp) && !is_bitop3(i) && !is_sd(i.info)
}

/// gfx950 v_bitop3_*: the abs/neg/omod bits hold the 8-bit truth table instead.
fn is_bitop3(i: &Instruction) -> bool {
    i.arch == Arch::Gfx9 && i.info.name.starts_with("v_bitop3")
}

/// Whether LLVM defines an op_sel operand for this VOP3 opcode (learned: `gen/gen_opsel.py`).
fn vop3_has_opsel(i: &Instruction) -> bool {
    use super::tables_opsel as t;
    let set = match i.arch {
        Arch::Gfx9 => &t::GFX9_VOP3_OPSEL,
        Arch::Gfx11 => &t::GFX11_VOP3_OPSEL,
        Arch::Gfx12 => &t::GFX12_VOP3_OPSEL,
    };
    let op = usize::from(i.opcode);
    set.get(op / 64).is_some_and(|w| w >> (op % 64) & 1 != 0)
}

/// v_fma_mix_f32 / v_fma_mixlo_f16 / v_fma_mixhi_f16 (VOP3P encoding, VOP3-style modifiers).
fn is_fma_mix(i: &Instruction) -> bool {
    i.encoding == Encoding::Vop3p && i.info.name.starts_with("v_fma_mix")
}

fn is_sd(info: &OpInfo) -> bool {
    info.ops
        .iter()
        .any(|o| matches!(o, Opnd::Reg(Field::Sdst, ..)))
}

fn half_op(info: &OpInfo, i: &Instruction, y: bool, out: &mut Ops) {
    let lit = literal(i).unwrap_or(0);
    let mods = vop3_mods(i);
    for o in info.ops {
        out.push(one_op(info, i, y, o, lit, mods));
    }
}

/// The typed operand that template operand `o` of `info` (the Y half when `y`) prints; `lit`
/// is the literal dword (or 0) and `mods` is [`vop3_mods`].
#[inline(always)]
fn one_op(info: &OpInfo, i: &Instruction, y: bool, o: &Opnd, lit: u32, mods: bool) -> Op {
    let [w0, w1, ..] = i.words;
    {
        match *o {
            Opnd::Fixed(s) if i.dpp == 3 && i.encoding == Encoding::Vopc && s == "vcc" => {
                // VOPC SDWA: SD selects an explicit SGPR pair (or vcc again) as the destination.
                let w = i.words[1];
                Op::new(if bits(w, 15, 1) != 0 {
                    // A 64-bit pair starts at an even register.
                    src_operand_a(bits(w, 8, 7) & !1, 2, 0, i.arch)
                } else {
                    Operand::Special(SpecialReg::Vcc)
                })
            }
            Opnd::Fixed(s) => Op::new(fixed_operand(i, s)),
            Opnd::Lit => Op::new(Operand::Literal(lit)),
            Opnd::Imm(fmt) => {
                // SOP1 (s_sendmsg_rtn) keeps its immediate in the 8-bit ssrc0 field.
                let v = if i.encoding == Encoding::Sop1 {
                    w0 & 0xFF
                } else {
                    w0 & 0xFFFF
                };
                let mut op = Op::new(Operand::Imm(i64::from(v)));
                op.imm_fmt = Some(fmt);
                op
            }
            Opnd::Reg(f, n, kind, half) => {
                let v = field(i, f, y);
                let mut op = Op::new(match kind {
                    RegKind::S => src_operand_a(v, n, lit, i.arch),
                    RegKind::V => Operand::Vgpr {
                        first: v as u16,
                        count: n,
                        hi: None,
                    },
                    RegKind::A => Operand::Agpr {
                        first: v as u16,
                        count: n,
                    },
                });
                if half {
                    set_half(&mut op, i, f, v);
                }
                if matches!(
                    i.encoding,
                    Encoding::Global | Encoding::Scratch | Encoding::Mubuf | Encoding::Mtbuf
                ) {
                    op = fix_mem_reg(i, f, op);
                }
                if i.arch == Arch::Gfx9 && mem_acc(i) && !matches!(f, Field::Addr | Field::Vaddr) {
                    to_agpr(&mut op);
                }
                if f == Field::Vsrc1 {
                    match i.dpp {
                        1 if is_e32_true16(i.encoding) => {
                            op.neg = bits(i.words[1], 22, 1) != 0;
                            op.abs = bits(i.words[1], 23, 1) != 0;
                        }
                        3 => {
                            sdwa_src(&mut op, i, v, n, 24);
                            // A constant in src1 prints with the opcode's source type (src0's).
                            if let Some(Opnd::Src(_, _, _, ct)) =
                                info.ops.iter().find(|o| matches!(o, Opnd::Src(..)))
                            {
                                op.ctype = *ct;
                            }
                        }
                        _ => {}
                    }
                }
                op
            }
            Opnd::Src(f, n, half, ct) => {
                let v = field(i, f, y);
                let mut op = Op::new(src_operand_a(v, n, lit, i.arch));
                op.ctype = ct;
                if half {
                    set_half(&mut op, i, f, v);
                }
                if let (true, Some(k)) = (mods, op_index(f)) {
                    // VINTERP has neg bits only (its [10:8] hold wait_exp).
                    op.abs = i.encoding == Encoding::Vop3 && bits(w0, 8 + k, 1) != 0;
                    op.neg = bits(w1, 29 + k, 1) != 0;
                } else if let (true, Some(k)) = (is_fma_mix(i), op_index(f)) {
                    // v_fma_mix*: VOP3P's neg_lo/neg_hi act as the f32-style neg/abs modifiers.
                    op.abs = bits(w0, 8 + k, 1) != 0;
                    op.neg = bits(w1, 29 + k, 1) != 0;
                }
                if let (Some(dw), Field::Src0) = (i.dpp_word(), f) {
                    // The real src0 is the low byte of the DPP/SDWA dword.
                    let r = bits(dw, 0, 8);
                    if i.dpp == 3 {
                        sdwa_src(&mut op, i, r, n, 16);
                    } else if is_e32_true16(i.encoding) {
                        op.op = Operand::Vgpr {
                            first: if half { (r & 0x7F) as u16 } else { r as u16 },
                            count: n,
                            hi: half.then_some(r & 0x80 != 0),
                        };
                        if i.dpp == 1 {
                            op.neg = bits(dw, 20, 1) != 0;
                            op.abs = bits(dw, 21, 1) != 0;
                        }
                    } else {
                        // VOP3 DPP keeps its modifiers and op_sel in the VOP3 words.
                        op.op = Operand::Vgpr {
                            first: r as u16,
                            count: n,
                            hi: half.then_some(bits(w0, 11, 1) != 0),
                        };
                    }
                }
                op
            }
        }
    }
}

/// An SDWA source: register number `r` (a VGPR, or a scalar operand when the S bit is set) and
/// its sel/sext/neg/abs bits, which start at bit `lo` of the SDWA dword (16 for src0, 24 for src1).
fn sdwa_src(op: &mut Op, i: &Instruction, r: u32, n: u8, lo: u32) {
    let w = i.words[1];
    op.op = if bits(w, lo + 7, 1) != 0 {
        src_operand_a(r, n, 0, i.arch)
    } else {
        Operand::Vgpr {
            first: r as u16,
            count: n,
            hi: None,
        }
    };
    op.sext = bits(w, lo + 3, 1) != 0;
    op.neg = bits(w, lo + 4, 1) != 0;
    op.abs = bits(w, lo + 5, 1) != 0;
}

fn set_half(op: &mut Op, i: &Instruction, f: Field, v: u32) {
    if let Operand::Vgpr { first, count, .. } = op.op {
        let (reg, hi) = if is_e32_true16(i.encoding) || i.encoding == Encoding::Vopd {
            let r = if matches!(f, Field::Src0) { v - 256 } else { v };
            ((r & 0x7F) as u16, r & 0x80 != 0)
        } else {
            let sel = match f {
                Field::Src0 => 11,
                Field::Src1 => 12,
                Field::Src2 => 13,
                _ => 14,
            };
            (first, bits(i.words[0], sel, 1) != 0)
        };
        op.op = Operand::Vgpr {
            first: reg,
            count,
            hi: Some(hi),
        };
    }
}

/// Memory-instruction address operands whose shape depends on other fields.
fn fix_mem_reg(i: &Instruction, f: Field, op: Op) -> Op {
    if i.arch == Arch::Gfx12 {
        return fix_mem_reg12(i, f, op);
    }
    if i.arch == Arch::Gfx9 {
        return fix_mem_reg9(i, f, op);
    }
    let w1 = i.words[1];
    match (i.encoding, f) {
        (Encoding::Global, Field::Saddr) => {
            let s = bits(w1, 16, 7);
            if s == 124 || s == 125 {
                return Op::new(Operand::Off);
            }
            Op::new(src_operand(s, 2, 0))
        }
        (Encoding::Global, Field::Addr) => {
            let s = bits(w1, 16, 7);
            let n = if s == 124 || s == 125 { 2 } else { 1 };
            Op::new(Operand::Vgpr {
                first: bits(w1, 0, 8) as u16,
                count: n,
                hi: None,
            })
        }
        (Encoding::Scratch, Field::Saddr) => {
            let s = bits(w1, 16, 7);
            if s == 124 || s == 125 {
                return Op::new(Operand::Off);
            }
            Op::new(src_operand(s, 1, 0))
        }
        (Encoding::Scratch, Field::Addr) => {
            if bits(w1, 23, 1) == 0 {
                return Op::new(Operand::Off);
            }
            op
        }
        (Encoding::Mubuf | Encoding::Mtbuf, Field::Vaddr) => {
            let idxen = bits(w1, 23, 1);
            let offen = bits(w1, 22, 1);
            match idxen + offen {
                0 => Op::new(Operand::Off),
                n => Op::new(Operand::Vgpr {
                    first: bits(w1, 0, 8) as u16,
                    count: n as u8,
                    hi: None,
                }),
            }
        }
        (Encoding::Mubuf | Encoding::Mtbuf, Field::Soffset) => {
            Op::new(src_operand(bits(w1, 24, 8), 1, 0))
        }
        _ => op,
    }
}

/// gfx12 counterpart of [`fix_mem_reg`] (96-bit VFLAT/VGLOBAL/VSCRATCH/VBUFFER layouts).
fn fix_mem_reg12(i: &Instruction, f: Field, op: Op) -> Op {
    let [w0, w1, w2, ..] = i.words;
    let saddr = bits(w0, 0, 7);
    let v = |first: u32, count: u8| {
        Op::new(Operand::Vgpr {
            first: first as u16,
            count,
            hi: None,
        })
    };
    match (i.encoding, f) {
        (Encoding::Global | Encoding::Scratch, Field::Saddr) if saddr == 124 => {
            Op::new(Operand::Off)
        }
        (Encoding::Global, Field::Saddr) => Op::new(src_operand(saddr, 2, 0)),
        (Encoding::Scratch, Field::Saddr) => Op::new(src_operand(saddr, 1, 0)),
        (Encoding::Global, Field::Addr) => v(bits(w2, 0, 8), if saddr == 124 { 2 } else { 1 }),
        (Encoding::Scratch, Field::Addr) if bits(w1, 17, 1) == 0 => Op::new(Operand::Off),
        (Encoding::Mubuf | Encoding::Mtbuf, Field::Vaddr) => {
            match bits(w1, 31, 1) + bits(w1, 30, 1) {
                0 => Op::new(Operand::Off),
                n => v(bits(w2, 0, 8), n as u8),
            }
        }
        (Encoding::Mubuf | Encoding::Mtbuf, Field::Soffset) => Op::new(src_operand(saddr, 1, 0)),
        _ => op,
    }
}

/// gfx9 counterpart of [`fix_mem_reg`]: saddr `off` is 0x7F, scratch vaddr enabled by [13],
/// MUBUF offen/idxen in dword 0.
fn fix_mem_reg9(i: &Instruction, f: Field, op: Op) -> Op {
    let [w0, w1, ..] = i.words;
    let saddr = bits(w1, 16, 7);
    let v = |first: u32, count: u8| {
        Op::new(Operand::Vgpr {
            first: first as u16,
            count,
            hi: None,
        })
    };
    match (i.encoding, f) {
        (Encoding::Global | Encoding::Scratch, Field::Saddr) if saddr == 0x7F => {
            Op::new(Operand::Off)
        }
        (Encoding::Global, Field::Saddr) => Op::new(src_operand_a(saddr, 2, 0, Arch::Gfx9)),
        (Encoding::Scratch, Field::Saddr) => Op::new(src_operand_a(saddr, 1, 0, Arch::Gfx9)),
        (Encoding::Global, Field::Addr) => v(bits(w1, 0, 8), if saddr == 0x7F { 2 } else { 1 }),
        (Encoding::Scratch, Field::Addr) if bits(w0, 13, 1) == 0 => Op::new(Operand::Off),
        (Encoding::Mubuf | Encoding::Mtbuf, Field::Vaddr) => {
            match bits(w0, 13, 1) + bits(w0, 12, 1) {
                0 => Op::new(Operand::Off),
                n => v(bits(w1, 0, 8), n as u8),
            }
        }
        (Encoding::Mubuf | Encoding::Mtbuf, Field::Soffset) => {
            Op::new(src_operand_a(bits(w1, 24, 8), 1, 0, Arch::Gfx9))
        }
        _ => op,
    }
}

fn fixed_operand(i: &Instruction, s: &'static str) -> Operand {
    match s {
        "attr0.x" => Operand::Attr {
            index: bits(i.words[0], 10, 6) as u8,
            chan: bits(i.words[0], 8, 2) as u8,
        },
        "vcc_lo" => Operand::Special(SpecialReg::VccLo),
        "vcc" => Operand::Special(SpecialReg::Vcc),
        "exec_lo" => Operand::Special(SpecialReg::ExecLo),
        "exec" => Operand::Special(SpecialReg::Exec),
        "off" => Operand::Off,
        "null" => Operand::Special(SpecialReg::Null),
        "m0" => Operand::Special(SpecialReg::M0),
        "scc" => Operand::Special(SpecialReg::Scc),
        _ => Operand::Text(s),
    }
}

/// Typed operands of `i` (X half then Y half for VOPD).
pub(super) fn operands(i: &Instruction) -> Ops {
    let mut v = Ops::new();
    operands_into(i, &mut v);
    v
}

/// Fill `v` (empty) with the typed operands of `i`, avoiding a large by-value return.
fn operands_into(i: &Instruction, v: &mut Ops) {
    half_op(i.info, i, false, v);
    if let Some(y) = i.info_y {
        half_op(y, i, true, v);
    }
    atomic_return(i, v);
    if i.arch == Arch::Gfx9 {
        agpr_fixups(i, v);
    }
    if matches!(i.encoding, Encoding::Mubuf | Encoding::Mtbuf) {
        let tfe = match i.arch {
            Arch::Gfx12 => bits(i.words[0], 22, 1),
            Arch::Gfx11 => bits(i.words[1], 21, 1),
            Arch::Gfx9 => 0,
        };
        if tfe != 0 {
            if let Some(Operand::Vgpr { count, .. }) = v.buf.first_mut().map(|o| &mut o.op) {
                *count += 1;
            }
        }
    }
    if i.encoding == Encoding::Mimg {
        mimg_shape(i, v);
    }
}

/// gfx90a+ memory `acc` bit: data registers are AGPRs.
fn mem_acc(i: &Instruction) -> bool {
    match i.encoding {
        Encoding::Flat
        | Encoding::Global
        | Encoding::Scratch
        | Encoding::Mubuf
        | Encoding::Mtbuf => bits(i.words[1], 23, 1) != 0,
        Encoding::Ds => bits(i.words[0], 25, 1) != 0,
        _ => false,
    }
}

fn to_agpr(o: &mut Op) {
    if let Operand::Vgpr { first, count, .. } = o.op {
        o.op = Operand::Agpr { first, count };
    }
}

/// gfx90a+ accumulation registers: MFMA acc_cd/acc bits, v_accvgpr_*, and the memory `acc` bit
/// (register operands then name AGPRs).
fn agpr_fixups(i: &Instruction, v: &mut Ops) {
    let [w0, w1, ..] = i.words;
    let n = v.len;
    let name = i.info.name;
    match i.encoding {
        Encoding::Vop3p if name.starts_with("v_mfma") || name.starts_with("v_smfmac") => {
            let acc_cd = bits(w0, 15, 1) != 0;
            for (k, o) in v.buf[..n].iter_mut().enumerate() {
                let agpr = match k {
                    0 | 3 => acc_cd,
                    1 => bits(w1, 27, 1) != 0,
                    _ => bits(w1, 28, 1) != 0,
                };
                if agpr {
                    to_agpr(o);
                }
            }
        }
        Encoding::Vop3p if name == "v_accvgpr_read_b32" || name == "v_accvgpr_mov_b32" => {
            if let Some(o) = v.buf[..n].get_mut(1) {
                to_agpr(o);
            }
        }
        _ => {}
    }
}

/// gfx11 atomics with GLC set return the old value: LLVM prints an extra vdst first.
fn atomic_return(i: &Instruction, v: &mut Ops) {
    // gfx11: glc; gfx12: th bit 0 (TH_ATOMIC_RETURN).
    let rtn = match i.arch {
        Arch::Gfx12 => bits(i.words[1], 20, 1),
        Arch::Gfx9 => bits(i.words[0], 16, 1),
        Arch::Gfx11 => bits(i.words[0], 14, 1),
    };
    if !matches!(
        i.encoding,
        Encoding::Flat | Encoding::Global | Encoding::Scratch
    ) || rtn == 0
    {
        return;
    }
    let name = i.info.name;
    if !name.contains("atomic") {
        return;
    }
    match i.encoding {
        Encoding::Flat | Encoding::Global | Encoding::Scratch => {
            let data = v.as_slice().iter().find_map(|o| match o.op {
                Operand::Vgpr { count, .. } => Some(count),
                _ => None,
            });
            let mut n = v.as_slice().get(1).and_then(|o| match o.op {
                Operand::Vgpr { count, .. } => Some(count),
                _ => None,
            });
            if n.is_none() {
                n = data;
            }
            let mut n = n.unwrap_or(1);
            if name.contains("cmpswap") {
                n /= 2;
            }
            let dst = match i.arch {
                Arch::Gfx12 => bits(i.words[1], 0, 8),
                _ => bits(i.words[1], 24, 8),
            } as u16;
            let mut o = Op::new(Operand::Vgpr {
                first: dst,
                count: n.max(1),
                hi: None,
            });
            if i.arch == Arch::Gfx9 && mem_acc(i) {
                to_agpr(&mut o);
            }
            v.insert_front(o);
        }
        _ => {}
    }
}

/// Append `n` in decimal (cheaper than `write!`, which dominates disassembly time).
pub(super) fn push_dec(out: &mut String, n: u32) {
    // Register numbers and counts are almost always one or two digits.
    if n < 10 {
        out.push((b'0' + n as u8) as char);
        return;
    }
    if n < 100 {
        let k = n as usize * 2;
        out.push(DIGITS2[k] as char);
        out.push(DIGITS2[k + 1] as char);
        return;
    }
    let mut buf = [0u8; 10];
    let mut k = buf.len();
    let mut n = n;
    loop {
        k -= 1;
        buf[k] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.push_str(std::str::from_utf8(&buf[k..]).unwrap_or("?"));
}

/// Append `0x` and `n` in lower-case hex.
pub(super) fn push_hex(out: &mut String, n: u32) {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut buf = *b"0x00000000";
    let digits = ((32 - n.leading_zeros()).max(1)).div_ceil(4) as usize;
    for k in 0..digits {
        buf[2 + k] = D[((n >> (4 * (digits - 1 - k))) & 0xF) as usize];
    }
    out.push_str(std::str::from_utf8(&buf[..2 + digits]).unwrap_or("?"));
}

fn push_int(out: &mut String, n: i32) {
    if n < 0 {
        out.push('-');
    }
    push_dec(out, n.unsigned_abs());
}

/// Two ASCII digits of every number below 100.
const DIGITS2: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Append `n` in decimal, digit by digit: for register numbers (one to three digits) this beats
/// a copy of a formatted buffer.
#[inline(always)]
fn push_reg_num(out: &mut String, n: u32) {
    if n < 10 {
        out.push(char::from(b'0' + n as u8));
    } else if n < 100 {
        let k = n as usize * 2;
        out.push(char::from(DIGITS2[k]));
        out.push(char::from(DIGITS2[k + 1]));
    } else {
        push_dec(out, n);
    }
}

fn write_reg(out: &mut String, prefix: &str, first: u16, count: u8) {
    for c in prefix.bytes() {
        out.push(char::from(c));
    }
    if count <= 1 {
        push_reg_num(out, u32::from(first));
    } else {
        out.push('[');
        push_reg_num(out, u32::from(first));
        out.push(':');
        push_reg_num(out, u32::from(first) + u32::from(count) - 1);
        out.push(']');
    }
}

fn write_operand(out: &mut String, i: &Instruction, o: &Op) {
    // LLVM writes a negated constant as `neg(2)` / `neg(-2.0)` (a bare `-2` would read as the
    // constant -2), but keeps `-|..|` when abs is set too.
    let neg_call = o.neg
        && !o.abs
        && matches!(
            o.op,
            Operand::InlineInt(_) | Operand::InlineFloat(_) | Operand::Literal(_)
        );
    if neg_call {
        out.push_str("neg(");
    } else if o.neg {
        out.push('-');
    }
    if o.abs {
        out.push('|');
    }
    if o.sext {
        out.push_str("sext(");
    }
    match o.op {
        Operand::Sgpr { first, count } => write_reg(out, "s", first, count),
        Operand::Vgpr { first, count, hi } => {
            write_reg(out, "v", first, count);
            match hi {
                Some(true) => out.push_str(".h"),
                Some(false) => out.push_str(".l"),
                None => {}
            }
        }
        Operand::Agpr { first, count } => write_reg(out, "a", first, count),
        Operand::Ttmp { first, count } => write_reg(out, "ttmp", first, count),
        Operand::Special(r) => out.push_str(special_name(r)),
        Operand::InlineInt(n) => push_int(out, n),
        Operand::InlineFloat(f) => out.push_str(float_text(f, o.ctype)),
        Operand::Literal(l) => {
            let l = match o.ctype {
                CType::C16F | CType::C16I => l & 0xFFFF,
                _ => l,
            };
            push_hex(out, l);
        }
        Operand::Imm(v) => write_imm(out, i, v as u16, o.imm_fmt.unwrap_or(ImmFmt::Dec)),
        Operand::Off => out.push_str("off"),
        Operand::Text(s) => out.push_str(s),
        Operand::Attr { index, chan } => {
            out.push_str("attr");
            push_dec(out, u32::from(index));
            out.push('.');
            out.push(['x', 'y', 'z', 'w'][usize::from(chan & 3)]);
        }
    }
    if o.sext {
        out.push(')');
    }
    if o.abs {
        out.push('|');
    }
    if neg_call {
        out.push(')');
    }
}

const INLINE_F: [f64; 8] = [0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 4.0, -4.0];
const INLINE_F_TEXT: [&str; 8] = ["0.5", "-0.5", "1.0", "-1.0", "2.0", "-2.0", "4.0", "-4.0"];
const INLINE_F16_BITS: [&str; 8] = [
    "0x3800", "0xb800", "0x3c00", "0xbc00", "0x4000", "0xc000", "0x4400", "0xc400",
];

fn float_text(f: f64, ct: CType) -> &'static str {
    let k = INLINE_F.iter().position(|&x| x == f);
    match (k, ct) {
        (Some(k), CType::C16I) => INLINE_F16_BITS[k],
        (Some(k), _) => INLINE_F_TEXT[k],
        (None, CType::C16I) => "0x3118",
        (None, CType::C64) => "0.15915494309189532",
        (None, _) => "0.15915494",
    }
}

fn special_name(r: SpecialReg) -> &'static str {
    use SpecialReg as R;
    match r {
        R::VccLo => "vcc_lo",
        R::VccHi => "vcc_hi",
        R::Vcc => "vcc",
        R::Null => "null",
        R::M0 => "m0",
        R::ExecLo => "exec_lo",
        R::ExecHi => "exec_hi",
        R::Exec => "exec",
        R::Scc => "src_scc",
        R::Vccz => "src_vccz",
        R::Execz => "src_execz",
        R::SharedBase => "src_shared_base",
        R::SharedLimit => "src_shared_limit",
        R::PrivateBase => "src_private_base",
        R::PrivateLimit => "src_private_limit",
        R::PopsExitingWaveId => "src_pops_exiting_wave_id",
        R::LdsDirect => "src_lds_direct",
        R::FlatScratchLo => "flat_scratch_lo",
        R::FlatScratchHi => "flat_scratch_hi",
        R::FlatScratch => "flat_scratch",
        R::XnackMaskLo => "xnack_mask_lo",
        R::XnackMaskHi => "xnack_mask_hi",
        R::XnackMask => "xnack_mask",
    }
}

const DEP: [&str; 12] = [
    "NO_DEP",
    "VALU_DEP_1",
    "VALU_DEP_2",
    "VALU_DEP_3",
    "VALU_DEP_4",
    "TRANS32_DEP_1",
    "TRANS32_DEP_2",
    "TRANS32_DEP_3",
    "FMA_ACCUM_CYCLE_1",
    "SALU_CYCLE_1",
    "SALU_CYCLE_2",
    "SALU_CYCLE_3",
];
const SKIP: [&str; 7] = [
    "SAME", "NEXT", "SKIP_1", "SKIP_2", "SKIP_3", "SKIP_4", "SKIP_5",
];

/// `s_waitcnt_depctr` / `s_wait_alu` fields: name, bit offset, width (LLVM's order).
const DEPCTR: [(&str, u32, u32); 7] = [
    ("depctr_hold_cnt", 7, 1),
    ("depctr_sa_sdst", 0, 1),
    ("depctr_va_vdst", 12, 4),
    ("depctr_va_sdst", 9, 3),
    ("depctr_va_ssrc", 8, 1),
    ("depctr_va_vcc", 1, 1),
    ("depctr_vm_vsrc", 2, 3),
];

fn write_depctr(out: &mut String, v: u16) {
    let v = u32::from(v);
    // Bits 5 and 6 belong to no field: such values only print as hex.
    if v & 0x60 != 0 {
        push_hex(out, v);
        return;
    }
    let non_default = DEPCTR
        .iter()
        .any(|&(_, lo, n)| bits(v, lo, n) != (1 << n) - 1);
    let mut first = true;
    for &(name, lo, n) in &DEPCTR {
        let f = bits(v, lo, n);
        if non_default && f == (1 << n) - 1 {
            continue;
        }
        if !first {
            out.push(' ');
        }
        first = false;
        out.push_str(name);
        out.push('(');
        push_dec(out, f);
        out.push(')');
    }
}

fn msg_name(id: u32, rtn: bool, arch: Arch) -> Option<&'static str> {
    Some(match (id, rtn) {
        (0x87, true) if arch == Arch::Gfx12 => "MSG_RTN_GET_SE_AID_ID",
        (1, _) => "MSG_INTERRUPT",
        (2, false) => "MSG_HS_TESSFACTOR",
        (3, false) => "MSG_DEALLOC_VGPRS",
        (0x80, true) => "MSG_RTN_GET_DOORBELL",
        (0x81, true) => "MSG_RTN_GET_DDID",
        (0x82, true) => "MSG_RTN_GET_TMA",
        (0x83, true) => "MSG_RTN_GET_REALTIME",
        (0x84, true) => "MSG_RTN_SAVE_WAVE",
        (0x85, true) => "MSG_RTN_GET_TBA",
        (0x86, true) => "MSG_RTN_GET_TBA_TO_PC",
        _ => return None,
    })
}

fn write_imm(out: &mut String, i: &Instruction, v: u16, fmt: ImmFmt) {
    let name = i.info.name;
    if fmt == ImmFmt::Hex {
        push_hex(out, u32::from(v));
        return;
    }
    if fmt == ImmFmt::Dec && v < 0x8000 {
        push_dec(out, u32::from(v));
        return;
    }
    match name {
        "s_waitcnt" => {
            // gfx9: vmcnt [3:0]+[15:14], expcnt [6:4], lgkmcnt [11:8]; gfx11: [15:10], [2:0], [9:4].
            let (vm, exp, lgkm, lgkm_max) = if i.arch == Arch::Gfx9 {
                (
                    (v & 0xF) | ((v >> 14) << 4),
                    (v >> 4) & 7,
                    (v >> 8) & 0xF,
                    0xF,
                )
            } else {
                ((v >> 10) & 0x3F, v & 7, (v >> 4) & 0x3F, 0x3F)
            };
            let all = vm == 0x3F && exp == 7 && lgkm == lgkm_max;
            let mut sep = "";
            for (label, val, show) in [
                ("vmcnt(", vm, vm != 0x3F || all),
                ("expcnt(", exp, exp != 7 || all),
                ("lgkmcnt(", lgkm, lgkm != lgkm_max || all),
            ] {
                if show {
                    out.push_str(sep);
                    out.push_str(label);
                    push_dec(out, u32::from(val));
                    out.push(')');
                    sep = " ";
                }
            }
        }
        "s_waitcnt_depctr" | "s_wait_alu" => write_depctr(out, v),
        "s_delay_alu" => {
            let id0 = (v & 0xF) as usize;
            let skip = ((v >> 4) & 7) as usize;
            let id1 = ((v >> 7) & 0xF) as usize;
            if v >> 11 != 0 || id0 >= DEP.len() || id1 >= DEP.len() || skip >= SKIP.len() {
                push_hex(out, u32::from(v));
                return;
            }
            let mut sep = "";
            for (label, text, show) in [
                ("instid0(", DEP[id0], id0 != 0),
                ("instskip(", SKIP[skip], skip != 0),
                ("instid1(", DEP[id1], id1 != 0),
            ] {
                if show {
                    out.push_str(sep);
                    out.push_str(label);
                    out.push_str(text);
                    out.push(')');
                    sep = " | ";
                }
            }
            if sep.is_empty() {
                out.push('0');
            }
        }
        "s_sendmsg" | "s_sendmsghalt" | "s_sendmsg_rtn_b32" | "s_sendmsg_rtn_b64" => {
            let rtn = name.starts_with("s_sendmsg_rtn");
            let id = u32::from(v & 0xFF);
            match msg_name(id, rtn, i.arch) {
                Some(m) if v >> 8 == 0 => {
                    out.push_str("sendmsg(");
                    out.push_str(m);
                    out.push(')');
                }
                // s_sendmsg_rtn has no operation/stream fields.
                _ if rtn => {
                    let _ = write!(out, "sendmsg({id}, 0, 0)");
                }
                _ => {
                    let _ = write!(out, "sendmsg({}, {}, {})", id, (v >> 4) & 7, (v >> 8) & 3);
                }
            }
        }
        "s_getreg_b32" | "s_setreg_b32" | "s_setreg_imm32_b32" => {
            let id = v & 0x3F;
            let off = (v >> 6) & 0x1F;
            let size = ((v >> 11) & 0x1F) + 1;
            out.push_str("hwreg(");
            push_dec(out, u32::from(id));
            out.push_str(", ");
            push_dec(out, u32::from(off));
            out.push_str(", ");
            push_dec(out, u32::from(size));
            out.push(')');
        }
        _ => match fmt {
            // Branch offsets and s_endpgm print unsigned; other "decimal" fields (s_nop,
            // s_sleep, ...) switch to hex once the 16-bit value would be negative.
            ImmFmt::Dec
                if v >= 0x8000
                    && !name.starts_with("s_cbranch")
                    && !matches!(name, "s_branch" | "s_endpgm" | "s_call_b64") =>
            {
                push_hex(out, u32::from(v))
            }
            ImmFmt::Dec => push_dec(out, u32::from(v)),
            _ => push_hex(out, u32::from(v)),
        },
    }
}

/// Modifiers printed after the operands.
fn write_mods(out: &mut String, i: &Instruction) {
    if i.dpp == 3 {
        write_sdwa(out, i);
        return;
    }
    write_enc_mods(out, i);
    if i.dpp != 0 && matches!(i.encoding, Encoding::Vop3 | Encoding::Vop3p) {
        // VOP3 DPP: the VOP3 modifiers (clamp, op_sel, ...) come first, then the DPP controls.
        write_dpp(out, i);
    }
}

const SDWA_SEL: [&str; 8] = [
    "BYTE_0",
    "BYTE_1",
    "BYTE_2",
    "BYTE_3",
    "WORD_0",
    "WORD_1",
    "DWORD",
    "<invalid>",
];
const SDWA_UNUSED: [&str; 4] = ["UNUSED_PAD", "UNUSED_SEXT", "UNUSED_PRESERVE", "<invalid>"];

/// gfx9 SDWA controls: `clamp`, output modifier, `dst_sel`/`dst_unused` (not on VOPC) and the
/// source selects (src1 only on VOP2/VOPC).
fn write_sdwa(out: &mut String, i: &Instruction) {
    let w = i.words[1];
    let vopc = i.encoding == Encoding::Vopc;
    if !vopc {
        if bits(w, 13, 1) != 0 {
            out.push_str(" clamp");
        }
        match bits(w, 14, 2) {
            1 => out.push_str(" mul:2"),
            2 => out.push_str(" mul:4"),
            3 => out.push_str(" div:2"),
            _ => {}
        }
        out.push_str(" dst_sel:");
        out.push_str(SDWA_SEL[bits(w, 8, 3) as usize]);
        out.push_str(" dst_unused:");
        out.push_str(SDWA_UNUSED[bits(w, 11, 2) as usize]);
    }
    out.push_str(" src0_sel:");
    out.push_str(SDWA_SEL[bits(w, 16, 3) as usize]);
    if i.encoding != Encoding::Vop1 {
        out.push_str(" src1_sel:");
        out.push_str(SDWA_SEL[bits(w, 24, 3) as usize]);
    }
}

/// Modifiers of the encoding itself (everything but DPP/SDWA controls on VOP3).
fn write_enc_mods(out: &mut String, i: &Instruction) {
    let [w0, w1, ..] = i.words;
    let name = i.info.name;
    if i.arch == Arch::Gfx12 && write_mods12(out, i) {
        return;
    }
    if i.arch == Arch::Gfx9 && write_mods9(out, i) {
        return;
    }
    match i.encoding {
        Encoding::Smem => {}
        Encoding::Vop3 => {
            let Some(m) = i.vop3_mods() else { return };
            // 16-bit ops show op_sel both as .h suffixes and as an explicit list (srcs then dst);
            // VOP3SD forms have none (their sdst sits there).
            let op_sel = u32::from(m.op_sel);
            let has_half = i
                .info
                .ops
                .iter()
                .any(|o| matches!(o, Opnd::Src(_, _, true, _) | Opnd::Reg(_, _, _, true)));
            if op_sel != 0 && (has_half || vop3_has_opsel(i)) {
                let nsrc = i
                    .info
                    .ops
                    .iter()
                    .filter(|o| matches!(o, Opnd::Src(..)))
                    .count() as u32;
                out.push_str(" op_sel:[");
                for k in 0..nsrc {
                    out.push(if (op_sel >> k) & 1 != 0 { '1' } else { '0' });
                    out.push(',');
                }
                out.push(if (op_sel >> 3) & 1 != 0 { '1' } else { '0' });
                out.push(']');
            }
            if is_bitop3(i) {
                let t = bits(w1, 29, 3) | (bits(w0, 8, 3) << 3) | (bits(w1, 27, 2) << 6);
                if t != 0 {
                    out.push_str(" bitop3:");
                    if t < 16 {
                        push_dec(out, t);
                    } else {
                        push_hex(out, t);
                    }
                }
                return;
            }
            if m.clamp {
                out.push_str(" clamp");
            }
            match m.omod {
                1 => out.push_str(" mul:2"),
                2 => out.push_str(" mul:4"),
                3 => out.push_str(" div:2"),
                _ => {}
            }
        }
        Encoding::Vop3p
            if i.arch == Arch::Gfx9
                && (name.starts_with("v_mfma") || name.starts_with("v_smfmac")) =>
        {
            for (label, val) in [
                (" cbsz:", bits(w0, 8, 3)),
                (" abid:", bits(w0, 11, 4)),
                (" blgp:", bits(w1, 29, 3)),
            ] {
                if val != 0 {
                    out.push_str(label);
                    push_dec(out, val);
                }
            }
        }
        Encoding::Vop3p => {
            let nsrc = i
                .info
                .ops
                .iter()
                .filter(|o| matches!(o, Opnd::Src(..)))
                .count() as u32;
            let Some(m) = i.vop3p_mods() else { return };
            let op_sel = u32::from(m.op_sel);
            let op_sel_hi = u32::from(m.op_sel_hi);
            let neg_lo = u32::from(m.neg_lo);
            let neg_hi = u32::from(m.neg_hi);
            let mask = (1u32 << nsrc) - 1;
            let list = |out: &mut String, label: &str, v: u32| {
                out.push_str(label);
                for k in 0..nsrc {
                    if k > 0 {
                        out.push(',');
                    }
                    out.push(if (v >> k) & 1 != 0 { '1' } else { '0' });
                }
                out.push(']');
            };
            let mix = name.starts_with("v_fma_mix");
            if op_sel & mask != 0 {
                list(out, " op_sel:[", op_sel);
            }
            let hi_default = if mix { 0 } else { mask };
            if op_sel_hi & mask != hi_default {
                list(out, " op_sel_hi:[", op_sel_hi);
            }
            // v_fma_mix* print neg_lo/neg_hi as the operands' `-` and `|..|` (see half_op).
            if neg_lo & mask != 0 && !mix {
                list(out, " neg_lo:[", neg_lo);
            }
            if neg_hi & mask != 0 && !mix {
                list(out, " neg_hi:[", neg_hi);
            }
            if m.clamp {
                out.push_str(" clamp");
            }
        }
        Encoding::Ds => {
            let o0 = bits(w0, 0, 8);
            let o1 = bits(w0, 8, 8);
            if name.contains("2addr") {
                if o0 != 0 {
                    out.push_str(" offset0:");
                    push_dec(out, o0);
                }
                if o1 != 0 {
                    out.push_str(" offset1:");
                    push_dec(out, o1);
                }
            } else if name == "ds_swizzle_b32" {
                write_swizzle(out, o0 | (o1 << 8));
            } else if o0 | (o1 << 8) != 0 {
                out.push_str(" offset:");
                push_dec(out, o0 | (o1 << 8));
            }
            if bits(w0, 17, 1) != 0 {
                out.push_str(" gds");
            }
        }
        Encoding::Flat | Encoding::Global | Encoding::Scratch => {
            let off = bits(w0, 0, 13);
            let off = if i.encoding == Encoding::Flat {
                off & 0xFFF
            } else {
                ((off << 19) as i32 >> 19) as u32
            };
            if off != 0 {
                out.push_str(" offset:");
                push_int(out, off as i32);
            }
            cpol(out, bits(w0, 14, 1), bits(w0, 15, 1), bits(w0, 13, 1));
        }
        Encoding::Mubuf | Encoding::Mtbuf => {
            if i.encoding == Encoding::Mtbuf {
                let f = super::gfx11::mtbuf_format(bits(w0, 19, 7));
                if !f.is_empty() {
                    out.push(' ');
                    out.push_str(f);
                }
            }
            let idxen = bits(w1, 23, 1) != 0;
            let offen = bits(w1, 22, 1) != 0;
            if idxen {
                out.push_str(" idxen");
            }
            if offen {
                out.push_str(" offen");
            }
            let off = bits(w0, 0, 12);
            if off != 0 {
                out.push_str(" offset:");
                push_dec(out, off);
            }
            cpol(out, bits(w0, 14, 1), bits(w0, 12, 1), bits(w0, 13, 1));
            if bits(w1, 21, 1) != 0 {
                out.push_str(" tfe");
            }
        }
        Encoding::Mimg => write_mimg_mods(out, i),
        Encoding::Vop1 | Encoding::Vop2 | Encoding::Vopc if i.dpp != 0 => write_dpp(out, i),
        Encoding::Vinterp => {
            if bits(w0, 15, 1) != 0 {
                out.push_str(" clamp");
            }
            out.push_str(" wait_exp:");
            push_dec(out, bits(w0, 8, 3));
        }
        Encoding::Ldsdir => {
            out.push_str(" wait_vdst:");
            push_dec(out, bits(w0, 16, 4));
        }
        _ => {}
    }
}

/// `offset:swizzle(...)` of ds_swizzle_b32 (LLVM's symbolic forms, else decimal).
fn write_swizzle(out: &mut String, v: u32) {
    if v == 0 {
        return;
    }
    out.push_str(" offset:");
    if v & 0xFF00 == 0x8000 {
        let _ = write!(
            out,
            "swizzle(QUAD_PERM,{},{},{},{})",
            v & 3,
            (v >> 2) & 3,
            (v >> 4) & 3,
            (v >> 6) & 3
        );
    } else if v & 0x8000 == 0 {
        let and = v & 0x1F;
        let or = (v >> 5) & 0x1F;
        let xor = (v >> 10) & 0x1F;
        if and == 0x1F && or == 0 && xor.count_ones() == 1 {
            let _ = write!(out, "swizzle(SWAP,{xor})");
        } else if and == 0x1F && or == 0 && xor > 0 && (xor + 1).is_power_of_two() {
            let _ = write!(out, "swizzle(REVERSE,{})", xor + 1);
        } else {
            let group = 0x1F - and + 1;
            if group > 1 && group.is_power_of_two() && or < group && xor == 0 {
                let _ = write!(out, "swizzle(BROADCAST,{group},{or})");
            } else {
                let p0 = or ^ xor;
                let p1 = (and | or) ^ xor;
                out.push_str("swizzle(BITMASK_PERM,\"");
                for b in (0..5).rev() {
                    let (a, c) = ((p0 >> b) & 1, (p1 >> b) & 1);
                    out.push(match (a, c) {
                        (0, 0) => '0',
                        (1, 1) => '1',
                        (0, _) => 'p',
                        _ => 'i',
                    });
                }
                out.push_str("\")");
            }
        }
    } else if v & 0xE000 == 0xE000 {
        let _ = write!(out, "swizzle(FFT,{})", v & 0x1F);
    } else if v & 0xE000 == 0xC000 {
        let _ = write!(out, "swizzle(ROTATE,{},{})", (v >> 10) & 1, (v >> 5) & 0x1F);
    } else {
        push_dec(out, v);
    }
}

/// DPP controls after the operands of a `_dpp` / `_e64_dpp` instruction.
fn write_dpp(out: &mut String, i: &Instruction) {
    let Some(w1) = i.dpp_word() else { return };
    // DPP8 with fetch-inactive is the src0 marker 0xEA (VOP3: in word 1).
    let marker = if matches!(i.encoding, Encoding::Vop3 | Encoding::Vop3p) {
        bits(i.words[1], 0, 9)
    } else {
        bits(i.words[0], 0, 9)
    };
    if i.dpp == 2 {
        out.push_str(" dpp8:[");
        for k in 0..8 {
            if k > 0 {
                out.push(',');
            }
            push_dec(out, bits(w1, 8 + 3 * k, 3));
        }
        out.push(']');
        if marker == 0xEA {
            out.push_str(" fi:1");
        }
        return;
    }
    let ctrl = bits(w1, 8, 9);
    out.push(' ');
    match ctrl {
        0..=0xFF => {
            out.push_str("quad_perm:[");
            for k in 0..4 {
                if k > 0 {
                    out.push(',');
                }
                out.push((b'0' + ((ctrl >> (2 * k)) & 3) as u8) as char);
            }
            out.push(']');
        }
        0x101..=0x10F => {
            out.push_str("row_shl:");
            push_dec(out, ctrl & 0xF);
        }
        0x111..=0x11F => {
            out.push_str("row_shr:");
            push_dec(out, ctrl & 0xF);
        }
        0x121..=0x12F => {
            out.push_str("row_ror:");
            push_dec(out, ctrl & 0xF);
        }
        0x140 => out.push_str("row_mirror"),
        0x141 => out.push_str("row_half_mirror"),
        0x150..=0x16F if i.arch == Arch::Gfx9 => out.push_str("/* Invalid dpp_ctrl value */"),
        0x150..=0x15F => {
            out.push_str("row_share:");
            push_dec(out, ctrl & 0xF);
        }
        0x160..=0x16F => {
            out.push_str("row_xmask:");
            push_dec(out, ctrl & 0xF);
        }
        0x130 | 0x134 | 0x138 | 0x13C | 0x142 | 0x143 if i.arch == Arch::Gfx9 => {
            out.push_str(match ctrl {
                0x130 => "wave_shl:1",
                0x134 => "wave_rol:1",
                0x138 => "wave_shr:1",
                0x13C => "wave_ror:1",
                0x142 => "row_bcast:15",
                _ => "row_bcast:31",
            })
        }
        0x130 => out.push_str("/* wave_shl is not supported starting from GFX10 */"),
        0x134 => out.push_str("/* wave_rol is not supported starting from GFX10 */"),
        0x138 => out.push_str("/* wave_shr is not supported starting from GFX10 */"),
        0x13C => out.push_str("/* wave_ror is not supported starting from GFX10 */"),
        0x142 | 0x143 => out.push_str("/* row_bcast is not supported starting from GFX10 */"),
        _ => out.push_str("/* Invalid dpp_ctrl value */"),
    }
    out.push_str(" row_mask:");
    push_hex(out, bits(w1, 28, 4));
    out.push_str(" bank_mask:");
    push_hex(out, bits(w1, 24, 4));
    if bits(w1, 19, 1) != 0 {
        out.push_str(" bound_ctrl:1");
    }
    if bits(w1, 18, 1) != 0 {
        out.push_str(" fi:1");
    }
}

const DIM: [&str; 8] = [
    "1D",
    "2D",
    "3D",
    "CUBE",
    "1D_ARRAY",
    "2D_ARRAY",
    "2D_MSAA",
    "2D_MSAA_ARRAY",
];

/// MIMG data/address register counts from dmask, d16, tfe, dim and a16.
fn mimg_shape(i: &Instruction, v: &mut Ops) {
    let [w0, w1, ..] = i.words;
    // (shape, dmask, d16, tfe, a16, dim) per layout.
    let (shape, dmask, d16, tfe, a16, dim) = if i.arch == Arch::Gfx12 {
        let sample = w0 >> 26 == 0x39;
        let tfe = if sample {
            bits(w0, 3, 1)
        } else {
            bits(w1, 23, 1)
        };
        (
            super::gfx12::image_shape(sample, i.opcode),
            bits(w0, 22, 4),
            bits(w0, 5, 1),
            tfe,
            bits(w0, 6, 1),
            bits(w0, 0, 3),
        )
    } else {
        (
            super::gfx11::mimg_shape(i.opcode),
            bits(w0, 8, 4),
            bits(w0, 17, 1),
            bits(w1, 21, 1),
            bits(w0, 16, 1),
            bits(w0, 2, 3),
        )
    };
    let Some(shape) = shape else {
        return;
    };
    let dmask = dmask.count_ones().max(1) as usize;
    let mut nd = u32::from(shape.data.get(dmask - 1).copied().unwrap_or(1));
    if d16 != 0 {
        nd = nd.div_ceil(2);
    }
    nd += tfe;
    let na = shape
        .addr
        .get((a16 * 8 + dim) as usize)
        .copied()
        .unwrap_or(1);
    let n = v.len;
    // vdata is printed first, vaddr second.
    for (k, count) in [(0, nd.max(1) as u8), (1, na.max(1))] {
        if let Some(o) = v.buf[..n].get_mut(k) {
            if let Operand::Vgpr { first, hi, .. } = o.op {
                o.op = Operand::Vgpr { first, count, hi };
            }
        }
    }
}

/// `[v4, v8, v9]`: MIMG non-sequential address registers (first from vaddr, rest from the
/// extra dwords, one byte each).
fn write_nsa(out: &mut String, i: &Instruction, count: u8) {
    out.push('[');
    for k in 0..u32::from(count) {
        if k > 0 {
            out.push_str(", ");
        }
        let r = if k == 0 {
            bits(i.words[1], 0, 8)
        } else {
            let w = i.words.get(2 + (k as usize - 1) / 4).copied().unwrap_or(0);
            bits(w, 8 * ((k - 1) % 4), 8)
        };
        out.push('v');
        push_dec(out, r);
    }
    out.push(']');
}

/// gfx12 image addresses: one register per byte slot (VIMAGE has a fifth in dword 1), the
/// last slot holding a range when there are more addresses than slots.
fn write_addr_list12(out: &mut String, i: &Instruction, count: u8) {
    let [w0, w1, w2, ..] = i.words;
    let slots: u32 = if w0 >> 26 == 0x39 { 4 } else { 5 };
    let reg = |k: u32| {
        if k < 4 {
            bits(w2, 8 * k, 8)
        } else {
            bits(w1, 24, 8)
        }
    };
    let count = u32::from(count);
    out.push('[');
    for k in 0..count.min(slots) {
        if k > 0 {
            out.push_str(", ");
        }
        let rest = count - k;
        if k == slots - 1 && rest > 1 {
            write_reg(out, "v", reg(k) as u16, rest as u8);
        } else {
            out.push('v');
            push_dec(out, reg(k));
        }
    }
    out.push(']');
}

fn write_mimg_mods(out: &mut String, i: &Instruction) {
    let [w0, w1, ..] = i.words;
    let dmask = bits(w0, 8, 4);
    if dmask != 0 {
        out.push_str(" dmask:");
        push_hex(out, dmask);
    }
    if super::gfx11::mimg_shape(i.opcode).is_some_and(|s| s.dim) {
        out.push_str(" dim:SQ_RSRC_IMG_");
        out.push_str(DIM[bits(w0, 2, 3) as usize]);
    }
    for (bit, word, text) in [
        (7, w0, " unorm"),
        (14, w0, " glc"),
        (12, w0, " slc"),
        (13, w0, " dlc"),
        (15, w0, " r128"),
        (16, w0, " a16"),
        (21, w1, " tfe"),
        (22, w1, " lwe"),
        (17, w0, " d16"),
    ] {
        if bits(word, bit, 1) != 0 {
            out.push_str(text);
        }
    }
}

/// gfx12 modifiers of the encodings whose layout changed; false when gfx11's printing applies.
fn write_mods12(out: &mut String, i: &Instruction) -> bool {
    let [w0, w1, w2, ..] = i.words;
    match i.encoding {
        Encoding::Flat | Encoding::Global | Encoding::Scratch => {
            let off = ((w2 as i32) >> 8) as u32;
            if off != 0 {
                out.push_str(" offset:");
                push_int(out, off as i32);
            }
            th_scope(out, i, bits(w1, 20, 3), bits(w1, 18, 2));
        }
        Encoding::Mubuf | Encoding::Mtbuf => {
            if i.encoding == Encoding::Mtbuf {
                let f = super::gfx12::mtbuf_format(bits(w1, 23, 7));
                if !f.is_empty() {
                    out.push(' ');
                    out.push_str(f);
                }
            }
            if bits(w1, 31, 1) != 0 {
                out.push_str(" idxen");
            }
            if bits(w1, 30, 1) != 0 {
                out.push_str(" offen");
            }
            let off = w2 >> 8;
            if off != 0 {
                out.push_str(" offset:");
                push_dec(out, off);
            }
            th_scope(out, i, bits(w1, 20, 3), bits(w1, 18, 2));
            if bits(w0, 22, 1) != 0 {
                out.push_str(" tfe");
            }
        }
        Encoding::Ldsdir => {
            let _ = write!(
                out,
                " wait_va_vdst:{} wait_vm_vsrc:{}",
                bits(w0, 16, 4),
                bits(w0, 23, 1)
            );
        }
        Encoding::Mimg => {
            let sample = w0 >> 26 == 0x39;
            let dmask = bits(w0, 22, 4);
            if dmask != 0 {
                out.push_str(" dmask:");
                push_hex(out, dmask);
            }
            if super::gfx12::image_shape(sample, i.opcode).is_some_and(|s| s.dim) {
                out.push_str(" dim:SQ_RSRC_IMG_");
                out.push_str(DIM[bits(w0, 0, 3) as usize]);
            }
            if sample && bits(w0, 13, 1) != 0 {
                out.push_str(" unorm");
            }
            th_scope(out, i, bits(w1, 20, 3), bits(w1, 18, 2));
            if bits(w0, 4, 1) != 0 {
                out.push_str(" r128");
            }
            if bits(w0, 6, 1) != 0 {
                out.push_str(" a16");
            }
            if (!sample && bits(w1, 23, 1) != 0) || (sample && bits(w0, 3, 1) != 0) {
                out.push_str(" tfe");
            }
            if sample && bits(w1, 8, 1) != 0 {
                out.push_str(" lwe");
            }
            if bits(w0, 5, 1) != 0 {
                out.push_str(" d16");
            }
        }
        _ => return false,
    }
    true
}

/// gfx9 (gfx950) modifiers of the encodings whose layout differs from gfx11.
fn write_mods9(out: &mut String, i: &Instruction) -> bool {
    let [w0, ..] = i.words;
    match i.encoding {
        Encoding::Flat | Encoding::Global | Encoding::Scratch => {
            let off = if i.encoding == Encoding::Flat {
                bits(w0, 0, 12) as i32
            } else {
                ((bits(w0, 0, 13) << 19) as i32) >> 19
            };
            if off != 0 {
                out.push_str(" offset:");
                push_int(out, off);
            }
            sc_nt(out, bits(w0, 16, 1), bits(w0, 17, 1), bits(w0, 25, 1));
        }
        Encoding::Mubuf => {
            if bits(w0, 13, 1) != 0 {
                out.push_str(" idxen");
            }
            if bits(w0, 12, 1) != 0 {
                out.push_str(" offen");
            }
            let off = bits(w0, 0, 12);
            if off != 0 {
                out.push_str(" offset:");
                push_dec(out, off);
            }
            sc_nt(out, bits(w0, 14, 1), bits(w0, 17, 1), bits(w0, 15, 1));
            if bits(w0, 16, 1) != 0 {
                out.push_str(" lds");
            }
        }
        Encoding::Mtbuf => {
            let w1 = i.words[1];
            let (dfmt, nfmt) = (bits(w0, 19, 4), bits(w0, 23, 3));
            // The default format (8 bits, unorm) is not printed; otherwise the non-default parts.
            if dfmt != 1 || nfmt != 0 {
                out.push_str(" format:[");
                if dfmt != 1 {
                    out.push_str(MTBUF_DFMT9[dfmt as usize]);
                }
                if nfmt != 0 {
                    if dfmt != 1 {
                        out.push(',');
                    }
                    out.push_str(MTBUF_NFMT9[nfmt as usize]);
                }
                out.push(']');
            }
            if bits(w0, 13, 1) != 0 {
                out.push_str(" idxen");
            }
            if bits(w0, 12, 1) != 0 {
                out.push_str(" offen");
            }
            let off = bits(w0, 0, 12);
            if off != 0 {
                out.push_str(" offset:");
                push_dec(out, off);
            }
            sc_nt(out, bits(w0, 14, 1), bits(w1, 22, 1), bits(w1, 21, 1));
        }
        Encoding::Ds => {
            let (o0, o1) = (bits(w0, 0, 8), bits(w0, 8, 8));
            if i.info.name.contains("2st64")
                || i.info.name.contains("read2")
                || i.info.name.contains("write2")
            {
                if o0 != 0 {
                    out.push_str(" offset0:");
                    push_dec(out, o0);
                }
                if o1 != 0 {
                    out.push_str(" offset1:");
                    push_dec(out, o1);
                }
            } else if i.info.name == "ds_swizzle_b32" {
                write_swizzle(out, o0 | (o1 << 8));
            } else if o0 | (o1 << 8) != 0 {
                out.push_str(" offset:");
                push_dec(out, o0 | (o1 << 8));
            }
            if bits(w0, 16, 1) != 0 {
                out.push_str(" gds");
            }
        }
        _ => return false,
    }
    true
}

/// gfx9 MTBUF data formats (dfmt), LLVM's symbolic names.
const MTBUF_DFMT9: [&str; 16] = [
    "BUF_DATA_FORMAT_INVALID",
    "BUF_DATA_FORMAT_8",
    "BUF_DATA_FORMAT_16",
    "BUF_DATA_FORMAT_8_8",
    "BUF_DATA_FORMAT_32",
    "BUF_DATA_FORMAT_16_16",
    "BUF_DATA_FORMAT_10_11_11",
    "BUF_DATA_FORMAT_11_11_10",
    "BUF_DATA_FORMAT_10_10_10_2",
    "BUF_DATA_FORMAT_2_10_10_10",
    "BUF_DATA_FORMAT_8_8_8_8",
    "BUF_DATA_FORMAT_32_32",
    "BUF_DATA_FORMAT_16_16_16_16",
    "BUF_DATA_FORMAT_32_32_32",
    "BUF_DATA_FORMAT_32_32_32_32",
    "BUF_DATA_FORMAT_RESERVED_15",
];

/// gfx9 MTBUF numeric formats (nfmt).
const MTBUF_NFMT9: [&str; 8] = [
    "BUF_NUM_FORMAT_UNORM",
    "BUF_NUM_FORMAT_SNORM",
    "BUF_NUM_FORMAT_USCALED",
    "BUF_NUM_FORMAT_SSCALED",
    "BUF_NUM_FORMAT_UINT",
    "BUF_NUM_FORMAT_SINT",
    "BUF_NUM_FORMAT_RESERVED_6",
    "BUF_NUM_FORMAT_FLOAT",
];

/// gfx940-style cache bits, in LLVM's printing order.
fn sc_nt(out: &mut String, sc0: u32, nt: u32, sc1: u32) {
    if sc0 != 0 {
        out.push_str(" sc0");
    }
    if nt != 0 {
        out.push_str(" nt");
    }
    if sc1 != 0 {
        out.push_str(" sc1");
    }
}

/// gfx12 cache policy: `th:TH_*` (named per load/store/atomic) and `scope:SCOPE_*`.
fn th_scope(out: &mut String, i: &Instruction, th: u32, scope: u32) {
    let name = i.info.name;
    if th != 0 {
        out.push_str(" th:");
        if name.contains("atomic") {
            out.push_str("TH_ATOMIC_");
            if th & 4 != 0 {
                if scope >= 2 {
                    out.push_str(if th & 2 != 0 {
                        "CASCADE_NT"
                    } else {
                        "CASCADE_RT"
                    });
                } else {
                    push_hex(out, th);
                }
            } else if th & 2 != 0 {
                out.push_str(if th & 1 != 0 { "NT_RETURN" } else { "NT" });
            } else {
                out.push_str("RETURN");
            }
        } else {
            let store = name.contains("store");
            if !store && th == 7 {
                push_hex(out, th);
            } else {
                out.push_str(if store { "TH_STORE_" } else { "TH_LOAD_" });
                out.push_str(match th {
                    1 => "NT",
                    2 => "HT",
                    3 if scope == 3 => "BYPASS",
                    3 if store => "WB",
                    3 => "LU",
                    4 => "NT_RT",
                    5 => "RT_NT",
                    6 => "NT_HT",
                    _ => "NT_WB",
                });
            }
        }
    }
    if scope != 0 {
        out.push_str(" scope:");
        out.push_str(["", "SCOPE_SE", "SCOPE_DEV", "SCOPE_SYS"][scope as usize & 3]);
    }
}

fn cpol(out: &mut String, glc: u32, slc: u32, dlc: u32) {
    if glc != 0 {
        out.push_str(" glc");
    }
    if slc != 0 {
        out.push_str(" slc");
    }
    if dlc != 0 {
        out.push_str(" dlc");
    }
}

/// SMEM operand list: `sdata, sbase, (soffset | offset | null) [offset:N]`.
fn write_smem(out: &mut String, i: &Instruction, ops: &[Op]) {
    if i.arch == Arch::Gfx12 {
        write_smem12(out, i, ops);
        return;
    }
    if i.arch == Arch::Gfx9 {
        write_smem9(out, i, ops);
        return;
    }
    let [w0, w1, ..] = i.words;
    let soff = bits(w1, 25, 7);
    let off = bits(w1, 0, 21);
    let mut first = true;
    for o in ops {
        let is_soff =
            matches!(o.op, Operand::Sgpr { .. } | Operand::Special(_)) && o.imm_fmt.is_none();
        let _ = is_soff;
        if !first {
            out.push_str(", ");
        }
        first = false;
        write_operand(out, i, o);
    }
    let _ = w0;
    // The last template operand is soffset; LLVM folds a null soffset into the offset.
    if soff == 124 {
        if let Some(pos) = out.rfind(", null") {
            if off != 0 {
                out.truncate(pos);
                let _ = write!(out, ", 0x{off:x}");
            }
        }
    } else if off != 0 {
        let _ = write!(out, " offset:0x{off:x}");
    }
    if bits(w0, 14, 1) != 0 {
        out.push_str(" glc");
    }
    if bits(w0, 13, 1) != 0 {
        out.push_str(" dlc");
    }
}

/// gfx12 SMEM: a null soffset prints the (signed 24-bit) offset in its place; otherwise
/// `offset:` always follows, even when zero.
fn write_smem12(out: &mut String, i: &Instruction, ops: &[Op]) {
    let [w0, w1, ..] = i.words;
    let soff = bits(w1, 25, 7);
    let off = ((w1 << 8) as i32) >> 8;
    let has_soff = ops
        .last()
        .is_some_and(|o| matches!(o.op, Operand::Special(SpecialReg::Null)) && soff == 124);
    let n = if has_soff { ops.len() - 1 } else { ops.len() };
    for (k, o) in ops[..n].iter().enumerate() {
        if k > 0 {
            out.push_str(", ");
        }
        write_operand(out, i, o);
    }
    if has_soff {
        out.push_str(", ");
        push_signed_hex(out, off);
    } else if ops.len() >= 2 {
        out.push_str(" offset:");
        push_signed_hex(out, off);
    }
    th_scope(out, i, bits(w0, 23, 2), bits(w0, 21, 2));
}

/// gfx9 SMEM: imm [17] selects a 21-bit offset, else the offset field names an SGPR; soffset_en
/// [14] adds an SGPR from dword 1 [31:25] with the immediate as `offset:`.
fn write_smem9(out: &mut String, i: &Instruction, ops: &[Op]) {
    let [w0, w1, ..] = i.words;
    let imm = bits(w0, 17, 1) != 0;
    let soe = bits(w0, 14, 1) != 0;
    let off = bits(w1, 0, 21);
    // The learned template ends with the offset operand when the opcode has one.
    let has_off = ops.len() >= 2 && ops.last().is_some_and(|o| matches!(o.op, Operand::Text(_)));
    let n = if has_off { ops.len() - 1 } else { ops.len() };
    for (k, o) in ops[..n].iter().enumerate() {
        if k > 0 {
            out.push_str(", ");
        }
        write_operand(out, i, o);
    }
    if has_off {
        out.push_str(", ");
        if soe {
            write_operand(
                out,
                i,
                &Op::new(src_operand_a(bits(w1, 25, 7), 1, 0, Arch::Gfx9)),
            );
            if imm {
                out.push_str(" offset:");
                push_hex(out, off);
            }
        } else if imm {
            push_hex(out, off);
        } else {
            write_operand(
                out,
                i,
                &Op::new(src_operand_a(off & 0x7F, 1, 0, Arch::Gfx9)),
            );
        }
    }
    if bits(w0, 16, 1) != 0 {
        out.push_str(" glc");
    }
}

fn push_signed_hex(out: &mut String, v: i32) {
    if v < 0 {
        out.push('-');
    }
    push_hex(out, v.unsigned_abs());
}

fn write_half(out: &mut String, i: &Instruction, info: &OpInfo, ops: &[Op]) {
    write_name(out, i, info);
    if i.encoding == Encoding::Smem {
        if !ops.is_empty() {
            out.push(' ');
            write_smem(out, i, ops);
        }
        return;
    }
    for (k, o) in ops.iter().enumerate() {
        // s_endpgm's optional immediate is only printed when non-zero.
        if matches!(o.op, Operand::Imm(0)) && info.name == "s_endpgm" {
            continue;
        }
        // Two pushes: a constant length each, so no call to memcpy.
        if k > 0 {
            out.push(',');
        }
        out.push(' ');
        if k == 1 && i.encoding == Encoding::Mimg {
            if let Operand::Vgpr { count, .. } = o.op {
                if i.arch == Arch::Gfx12 && count > 1 {
                    write_addr_list12(out, i, count);
                    continue;
                }
                if i.arch == Arch::Gfx11 && i.words[0] & 3 != 0 {
                    write_nsa(out, i, count);
                    continue;
                }
            }
        }
        write_operand(out, i, o);
    }
}

/// The mnemonic with the suffix of a DPP/SDWA form.
fn write_name(out: &mut String, i: &Instruction, info: &OpInfo) {
    if matches!(i.encoding, Encoding::Vop3 | Encoding::Vop3p) && i.dpp != 0 {
        // v_fma_f32 / v_add_f32_e64 -> v_fma_f32_e64_dpp / v_add_f32_e64_dpp.
        out.push_str(info.name.strip_suffix("_e64").unwrap_or(info.name));
        out.push_str("_e64_dpp");
    } else if i.dpp == 3 {
        // v_mov_b32_e32 -> v_mov_b32_sdwa (VOPC too).
        out.push_str(info.name.strip_suffix("_e32").unwrap_or(info.name));
        out.push_str("_sdwa");
    } else if i.dpp != 0 {
        // v_mov_b32_e32 -> v_mov_b32_dpp; VOPC DPP drops the suffix.
        let base = info.name.strip_suffix("_e32").unwrap_or(info.name);
        out.push_str(base);
        if i.encoding != Encoding::Vopc {
            out.push_str("_dpp");
        }
    } else {
        out.push_str(info.name);
    }
}

pub(super) fn write_text(i: &Instruction, out: &mut String) {
    if i.encoding == Encoding::Exp {
        super::gfx11::write_exp(i, out);
        return;
    }
    if i.info.ops.is_empty() && i.info_y.is_none() && i.dpp == 0 {
        // s_code_end, s_endpgm-like opcodes: nothing to extract.
        out.push_str(i.info.name);
        if !is_scalar_alu(i.encoding) {
            write_mods(out, i);
        }
        return;
    }
    if streamable(i) {
        // Each operand is written as soon as it is known: nothing edits the list afterwards.
        let info = i.info;
        write_name(out, i, info);
        let lit = literal(i).unwrap_or(0);
        let mods = vop3_mods(i);
        for (k, o) in info.ops.iter().enumerate() {
            let op = one_op(info, i, false, o, lit, mods);
            // s_endpgm's optional immediate is only printed when non-zero.
            if matches!(op.op, Operand::Imm(0)) && info.name == "s_endpgm" {
                continue;
            }
            // Two pushes: a constant length each, so no call to memcpy.
            if k > 0 {
                out.push(',');
            }
            out.push(' ');
            write_operand(out, i, &op);
        }
        if !is_scalar_alu(i.encoding) || i.dpp != 0 {
            write_mods(out, i);
        }
        return;
    }
    let mut ops = Ops::new();
    operands_into(i, &mut ops);
    let ops = ops.as_slice();
    if let Some(y) = i.info_y {
        let nx = i.info.ops.len().min(ops.len());
        write_half(out, i, i.info, &ops[..nx]);
        out.push_str(" :: ");
        write_half(out, i, y, &ops[nx..]);
        return;
    }
    write_half(out, i, i.info, ops);
    if !is_scalar_alu(i.encoding) || i.dpp != 0 {
        write_mods(out, i);
    }
}

/// Whether the operand list of `i` is final as [`half_op`] makes it, and [`write_half`] prints it
/// plainly: none of the list edits of [`operands_into`] applies (VOPD halves, atomics returning
/// a value, gfx9 accumulation registers, MUBUF/MTBUF tfe, MIMG shapes), nor SMEM printing.
fn streamable(i: &Instruction) -> bool {
    if i.info_y.is_some() {
        return false;
    }
    match i.encoding {
        Encoding::Smem | Encoding::Mubuf | Encoding::Mtbuf | Encoding::Mimg => false,
        Encoding::Flat | Encoding::Global | Encoding::Scratch => {
            let rtn = match i.arch {
                Arch::Gfx12 => bits(i.words[1], 20, 1),
                Arch::Gfx9 => bits(i.words[0], 16, 1),
                Arch::Gfx11 => bits(i.words[0], 14, 1),
            };
            rtn == 0
        }
        Encoding::Vop3p => i.arch != Arch::Gfx9,
        _ => true,
    }
}

/// SOP1/SOP2/SOPK/SOPC/SOPP: no encoding has modifiers to print after the operands.
fn is_scalar_alu(e: Encoding) -> bool {
    matches!(
        e,
        Encoding::Sop1 | Encoding::Sop2 | Encoding::Sopk | Encoding::Sopc | Encoding::Sopp
    )
}
