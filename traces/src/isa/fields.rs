//! Typed access to the encoding fields of a decoded instruction, for consumers that execute
//! code rather than print it (the emulator). Register fields go through [`format::field`], the
//! function the disassembler prints operands from, so both read a field the same way.
//!
//! The memory layouts (SMEM, DS, FLAT, and gfx9's MUBUF) are given for gfx9, gfx11 and gfx12.

use super::format::{self, field};
use super::table::{Field, Opnd};
use super::{Arch, Encoding, Instruction, Opcode};

fn bits(w: u32, lo: u32, n: u32) -> u32 {
    (w >> lo) & ((1u32 << n) - 1)
}

fn sext(v: u32, bits: u32) -> i32 {
    ((v << (32 - bits)) as i32) >> (32 - bits)
}

/// A source operand as encoded: the 8-bit (SALU) or 9-bit (VALU) source code, or a VGPR-only
/// field (`vsrc1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Src {
    /// Scalar-register-file slot 0..=127 (SGPRs, `vcc_lo` = 106, `null` = 124, `m0` = 125,
    /// `exec_lo` = 126, ...).
    Scalar(u8),
    /// A VGPR.
    Vgpr(u16),
    /// An inline constant or special source, code 128..=254 (128 = 0, 129..=192 = 1..=64,
    /// 193..=208 = -1..=-16, 240..=248 floats, 250..=254 DPP/SDWA markers, `scc`, ...).
    Inline(u8),
    /// The literal dword that follows the instruction.
    Literal(u32),
}

impl Src {
    /// A 9-bit (VALU) or 8-bit (SALU) source code; `literal` is the value code 255 reads.
    pub fn from_code(code: u32, literal: u32) -> Src {
        match code {
            0..=127 => Src::Scalar(code as u8),
            128..=254 => Src::Inline(code as u8),
            255 => Src::Literal(literal),
            _ => Src::Vgpr((code - 256) as u16),
        }
    }
}

/// VOP3 input/output modifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Vop3Mods {
    /// abs per source (bit k: src k); 0 on VOP3SD forms, whose bits hold `sdst`.
    pub abs: u8,
    /// neg per source.
    pub neg: u8,
    /// op_sel: bit k picks the high half of 16-bit src k, bit 3 of the destination; 0 on VOP3SD.
    pub op_sel: u8,
    pub clamp: bool,
    /// Output modifier: 0 none, 1 ×2, 2 ×4, 3 ÷2.
    pub omod: u8,
}

/// VOP3P (packed) modifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Vop3pMods {
    pub neg_lo: u8,
    /// neg_hi (the `v_fma_mix*` forms use it as abs).
    pub neg_hi: u8,
    /// op_sel: the half each source's low result lane reads.
    pub op_sel: u8,
    /// op_sel_hi: the half each source's high result lane reads (bit 2 lives in word 0).
    pub op_sel_hi: u8,
    pub clamp: bool,
}

/// SMEM fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmemFields {
    /// First SGPR of the destination.
    pub sdata: u8,
    /// First SGPR of the 64-bit base address.
    pub sbase: u8,
    /// Signed immediate byte offset (21 bits on gfx11, 24 on gfx12).
    pub offset: i32,
    /// Scalar-register-file slot added to the address (`null` for none: 124, on gfx9 125).
    pub soffset: u8,
}

/// gfx9's `null` scalar slot (gfx9 has M0 at 124).
pub const GFX9_NULL: u8 = 125;

/// DS (LDS) fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DsFields {
    pub offset0: u8,
    pub offset1: u8,
    pub gds: bool,
    pub addr: u16,
    pub data0: u16,
    pub data1: u16,
    pub vdst: u16,
}

/// FLAT / GLOBAL / SCRATCH fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlatFields {
    /// Signed immediate byte offset (13 bits on gfx11, 24 on gfx12).
    pub offset: i32,
    /// Address VGPR(s).
    pub addr: u16,
    /// Store/atomic data VGPR(s).
    pub data: u16,
    /// Scalar-register-file slot of the 64-bit scalar base (`null` = 124 for none).
    pub saddr: u8,
    pub vdst: u16,
    /// SCRATCH: whether the address VGPR takes part (SVE).
    pub sve: bool,
    /// Atomics return the pre-op value (GLC on gfx11, TH_ATOMIC_RETURN on gfx12).
    pub atomic_return: bool,
}

/// gfx9 MUBUF fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MubufFields {
    /// Unsigned 12-bit immediate byte offset.
    pub offset: u32,
    pub offen: bool,
    pub idxen: bool,
    pub vaddr: u16,
    pub vdata: u16,
    /// First SGPR of the 128-bit buffer resource.
    pub srsrc: u8,
    /// Scalar-register-file slot (or inline constant code) of the offset.
    pub soffset: u8,
    pub acc: bool,
}

/// gfx90a+ MFMA controls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MfmaFields {
    pub acc_cd: bool,
    /// Bit 0: src0 (A) is an AGPR, bit 1: src1 (B).
    pub acc: u8,
    pub cbsz: u8,
    pub abid: u8,
    pub blgp: u8,
}

/// One half of a VOPD dual-issue instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VopdHalf {
    /// The half's operation (`v_dual_*`).
    pub op: Opcode,
    pub vdst: u16,
    pub src0: Src,
    pub vsrc1: u16,
}

impl Instruction {
    /// The raw value of field `f` (register fields as register numbers, SMEM bases as SGPR
    /// numbers; the X half of a VOPD pair), as the disassembler reads it; 0 where the encoding
    /// has no such field.
    #[inline]
    pub fn field(&self, f: Field) -> u32 {
        field(self, f, false)
    }

    /// Whether the instruction carries a DPP or SDWA control word (its src0 is a marker then).
    #[inline]
    pub fn is_dpp(&self) -> bool {
        self.dpp != 0
    }

    /// Source operand `k` of a SALU or VALU instruction (VOPD: the X half), or `None` where the
    /// encoding has no such source.
    #[inline]
    pub fn src(&self, k: usize) -> Option<Src> {
        use Encoding as E;
        let lit = format::literal(self).unwrap_or(0);
        let f = match (self.encoding, k) {
            (E::Sop1 | E::Sop2 | E::Sopc, 0) => Field::Ssrc0,
            (E::Sop2 | E::Sopc, 1) => Field::Ssrc1,
            (E::Vop1 | E::Vop2 | E::Vopc | E::Vop3 | E::Vop3p | E::Vopd, 0) => Field::Src0,
            (E::Vop2 | E::Vopc | E::Vopd, 1) => {
                return Some(Src::Vgpr(field(self, Field::Vsrc1, false) as u16))
            }
            (E::Vop3 | E::Vop3p, 1) => Field::Src1,
            (E::Vop3 | E::Vop3p, 2) => Field::Src2,
            _ => return None,
        };
        // DPP16/DPP8: src0 is a marker code; the VGPR is the control word's low byte.
        if let (Field::Src0, 1 | 2, Some(w)) = (f, self.dpp, self.dpp_word()) {
            return Some(Src::Vgpr(bits(w, 0, 8) as u16));
        }
        Some(Src::from_code(field(self, f, false), lit))
    }

    /// The VGPR destination of a VALU, DS or FLAT instruction (VOPD: the X half).
    #[inline]
    pub fn vdst(&self) -> Option<u16> {
        use Encoding as E;
        match self.encoding {
            E::Vop1 | E::Vop2 | E::Vop3 | E::Vop3p | E::Vopd | E::Vinterp | E::Ldsdir => {}
            E::Ds | E::Flat | E::Global | E::Scratch => {}
            _ => return None,
        }
        Some(field(self, Field::Vdst, false) as u16)
    }

    /// The scalar destination slot: SOP1/SOP2/SOPK `sdst`, or the carry/mask `sdst` of a VOP3SD
    /// form (`v_add_co_u32`, `v_div_scale_f32`, `v_mad_u64_u32`, ...).
    #[inline]
    pub fn sdst(&self) -> Option<u8> {
        match self.encoding {
            Encoding::Sop1 | Encoding::Sop2 | Encoding::Sopk => {}
            Encoding::Vop3 if self.is_vop3sd() => {}
            _ => return None,
        }
        Some(field(self, Field::Sdst, false) as u8)
    }

    /// Whether a VOP3 opcode is a VOP3SD form (a scalar destination where abs/op_sel would be).
    fn is_vop3sd(&self) -> bool {
        self.info
            .ops
            .iter()
            .any(|o| matches!(o, Opnd::Reg(Field::Sdst, ..)))
    }

    /// VOP3 modifiers.
    #[inline]
    pub fn vop3_mods(&self) -> Option<Vop3Mods> {
        if self.encoding != Encoding::Vop3 {
            return None;
        }
        let [w0, w1, ..] = self.words;
        // Only look the form up when the shared bits are set (the disassembler's hot path).
        let sd = bits(w0, 8, 7) != 0 && self.is_vop3sd();
        Some(Vop3Mods {
            abs: if sd { 0 } else { bits(w0, 8, 3) as u8 },
            neg: bits(w1, 29, 3) as u8,
            op_sel: if sd { 0 } else { bits(w0, 11, 4) as u8 },
            clamp: bits(w0, 15, 1) != 0,
            omod: bits(w1, 27, 2) as u8,
        })
    }

    /// VOP3P modifiers.
    #[inline]
    pub fn vop3p_mods(&self) -> Option<Vop3pMods> {
        if self.encoding != Encoding::Vop3p {
            return None;
        }
        let [w0, w1, ..] = self.words;
        Some(Vop3pMods {
            neg_lo: bits(w1, 29, 3) as u8,
            neg_hi: bits(w0, 8, 3) as u8,
            op_sel: bits(w0, 11, 3) as u8,
            op_sel_hi: (bits(w1, 27, 2) | bits(w0, 14, 1) << 2) as u8,
            clamp: bits(w0, 15, 1) != 0,
        })
    }

    /// SMEM fields (gfx9, gfx11, gfx12). gfx9: the offset is the 21-bit immediate when IMM is
    /// set, else its low byte names an SGPR (then in `soffset`); SOE adds the SGPR in [31:25].
    pub fn smem(&self) -> Option<SmemFields> {
        if self.encoding != Encoding::Smem {
            return None;
        }
        let [w0, w1, ..] = self.words;
        if self.arch == Arch::Gfx9 {
            let imm = bits(w0, 17, 1) != 0;
            let soe = bits(w0, 14, 1) != 0;
            return Some(SmemFields {
                sdata: bits(w0, 6, 7) as u8,
                sbase: (bits(w0, 0, 6) * 2) as u8,
                offset: if imm { sext(bits(w1, 0, 21), 21) } else { 0 },
                soffset: match (imm, soe) {
                    (_, true) => bits(w1, 25, 7) as u8,
                    (false, false) => bits(w1, 0, 8) as u8,
                    (true, false) => GFX9_NULL,
                },
            });
        }
        Some(SmemFields {
            sdata: field(self, Field::Sdata, false) as u8,
            sbase: field(self, Field::Sbase, false) as u8,
            offset: if self.arch == Arch::Gfx12 {
                sext(bits(w1, 0, 24), 24)
            } else {
                sext(bits(w1, 0, 21), 21)
            },
            soffset: field(self, Field::Soffset, false) as u8,
        })
    }

    /// DS fields (gfx9, gfx11, gfx12: the same layout; gfx9's GDS bit is [16]).
    pub fn ds(&self) -> Option<DsFields> {
        if self.encoding != Encoding::Ds {
            return None;
        }
        let w0 = self.words[0];
        let f = |f| field(self, f, false) as u16;
        Some(DsFields {
            offset0: bits(w0, 0, 8) as u8,
            offset1: bits(w0, 8, 8) as u8,
            gds: bits(w0, if self.arch == Arch::Gfx9 { 16 } else { 17 }, 1) != 0,
            addr: f(Field::Addr),
            data0: f(Field::Data0),
            data1: f(Field::Data1),
            vdst: f(Field::Vdst),
        })
    }

    /// FLAT / GLOBAL / SCRATCH fields (gfx9, gfx11, gfx12). gfx9: `off` saddr is 0x7F (reported
    /// as [`GFX9_NULL`]), SVE is [13] of dword 0, GLC (atomic return) [16].
    pub fn flat(&self) -> Option<FlatFields> {
        use Encoding as E;
        if !matches!(self.encoding, E::Flat | E::Global | E::Scratch) {
            return None;
        }
        let [w0, w1, w2, ..] = self.words;
        if self.arch == Arch::Gfx9 {
            let saddr = bits(w1, 16, 7);
            return Some(FlatFields {
                // FLAT's offset is unsigned 12 bits on gfx9; GLOBAL/SCRATCH sign-extend 13.
                offset: if self.encoding == E::Flat {
                    bits(w0, 0, 12) as i32
                } else {
                    sext(bits(w0, 0, 13), 13)
                },
                addr: bits(w1, 0, 8) as u16,
                data: bits(w1, 8, 8) as u16,
                saddr: if saddr == 0x7F {
                    GFX9_NULL
                } else {
                    saddr as u8
                },
                vdst: bits(w1, 24, 8) as u16,
                sve: bits(w0, 13, 1) != 0,
                atomic_return: bits(w0, 16, 1) != 0,
            });
        }
        let g12 = self.arch == Arch::Gfx12;
        let f = |f| field(self, f, false);
        Some(FlatFields {
            offset: if g12 {
                (w2 as i32) >> 8
            } else {
                sext(bits(w0, 0, 13), 13)
            },
            addr: f(Field::Addr) as u16,
            data: f(Field::Data) as u16,
            saddr: f(Field::Saddr) as u8,
            vdst: f(Field::Vdst) as u16,
            sve: bits(w1, if g12 { 17 } else { 23 }, 1) != 0,
            atomic_return: if g12 {
                bits(w1, 20, 1) != 0
            } else {
                bits(w0, 14, 1) != 0
            },
        })
    }

    /// gfx9 MUBUF fields: [`Instruction::buf`]'s, plus gfx90a+'s `acc`.
    pub fn mubuf9(&self) -> Option<MubufFields> {
        if self.encoding != Encoding::Mubuf || self.arch != Arch::Gfx9 {
            return None;
        }
        let b = self.buf()?;
        Some(MubufFields {
            offset: b.offset,
            offen: b.offen,
            idxen: b.idxen,
            vaddr: b.vaddr,
            vdata: b.vdata,
            srsrc: b.srsrc,
            soffset: b.soffset,
            acc: self.mem_acc9(),
        })
    }

    /// gfx90a+ `acc` bit of a memory instruction: its data registers are AGPRs.
    pub fn mem_acc9(&self) -> bool {
        self.arch == Arch::Gfx9
            && match self.encoding {
                Encoding::Flat
                | Encoding::Global
                | Encoding::Scratch
                | Encoding::Mubuf
                | Encoding::Mtbuf => bits(self.words[1], 23, 1) != 0,
                Encoding::Ds => bits(self.words[0], 25, 1) != 0,
                _ => false,
            }
    }

    /// gfx9 MFMA (VOP3P) fields: `acc_cd` (vdst and src2 are AGPRs), `acc` per A/B source,
    /// and the broadcast controls cbsz, abid, blgp.
    pub fn mfma9(&self) -> Option<MfmaFields> {
        if self.encoding != Encoding::Vop3p || self.arch != Arch::Gfx9 {
            return None;
        }
        let [w0, w1, ..] = self.words;
        Some(MfmaFields {
            acc_cd: bits(w0, 15, 1) != 0,
            acc: bits(w1, 27, 2) as u8,
            cbsz: bits(w0, 8, 3) as u8,
            abid: bits(w0, 11, 4) as u8,
            blgp: bits(w1, 29, 3) as u8,
        })
    }

    /// The X and Y halves of a VOPD dual-issue instruction.
    pub fn vopd(&self) -> Option<[VopdHalf; 2]> {
        if self.encoding != Encoding::Vopd {
            return None;
        }
        let lit = format::literal(self).unwrap_or(0);
        let half = |op: Opcode, y: bool| VopdHalf {
            op,
            vdst: field(self, Field::Vdst, y) as u16,
            src0: Src::from_code(field(self, Field::Src0, y), lit),
            vsrc1: field(self, Field::Vsrc1, y) as u16,
        };
        Some([half(self.op()?, false), half(self.op_y()?, true)])
    }
}

/// MUBUF / MTBUF (gfx12 VBUFFER) fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufFields {
    /// Unsigned immediate byte offset (12 bits on gfx11, 24 on gfx12).
    pub offset: u32,
    /// First address VGPR: the index (idxen) then the offset (offen).
    pub vaddr: u16,
    /// Data VGPR(s).
    pub vdata: u16,
    /// First SGPR of the 128-bit resource descriptor.
    pub srsrc: u8,
    /// Scalar-register-file slot (or inline constant code) of the scalar offset.
    pub soffset: u8,
    pub offen: bool,
    pub idxen: bool,
    /// TFE (texture-fail-enable: an extra status dword).
    pub tfe: bool,
    /// GLC (gfx11) / TH_ATOMIC_RETURN (gfx12): atomics return the pre-op value.
    pub atomic_return: bool,
    /// MTBUF: the unified format's name (`BUF_FMT_32_UINT`...; empty for the default format).
    pub format: &'static str,
}

/// A DPP control word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dpp {
    /// DPP16: `ctrl` (quad_perm, row shifts/rotates/mirrors, row_share, row_xmask), the row and
    /// bank write masks, bound_ctrl (an invalid source lane reads 0 rather than disabling the
    /// write), fetch-inactive, and the VOP1/VOP2/VOPC src0/src1 neg/abs bits (bit k: src k).
    Dpp16 {
        ctrl: u16,
        row_mask: u8,
        bank_mask: u8,
        bound_ctrl: bool,
        fi: bool,
        neg: u8,
        abs: u8,
    },
    /// DPP8: lane `j` of every group of 8 reads lane `sel[j]` of its group.
    Dpp8 { sel: [u8; 8], fi: bool },
}

impl Instruction {
    /// MUBUF / MTBUF fields (gfx11, gfx12; gfx9 MUBUF, whose `tfe` bit gfx90a+ reuses as
    /// `acc`, so it reads false there).
    pub fn buf(&self) -> Option<BufFields> {
        if !matches!(self.encoding, Encoding::Mubuf | Encoding::Mtbuf) {
            return None;
        }
        let [w0, w1, w2, ..] = self.words;
        let mt = self.encoding == Encoding::Mtbuf;
        let (offset, offen, idxen, tfe, glc, fmt) = match self.arch {
            Arch::Gfx11 => (
                bits(w0, 0, 12),
                bits(w1, 22, 1),
                bits(w1, 23, 1),
                bits(w1, 21, 1),
                bits(w0, 14, 1),
                mt.then(|| super::gfx11::mtbuf_format(bits(w0, 19, 7))),
            ),
            Arch::Gfx12 => (
                w2 >> 8,
                bits(w1, 30, 1),
                bits(w1, 31, 1),
                bits(w0, 22, 1),
                bits(w1, 20, 1),
                mt.then(|| super::gfx12::mtbuf_format(bits(w1, 23, 7))),
            ),
            Arch::Gfx9 if !mt => (
                bits(w0, 0, 12),
                bits(w0, 12, 1),
                bits(w0, 13, 1),
                0,
                bits(w0, 14, 1),
                None,
            ),
            Arch::Gfx9 => return None,
        };
        let f = |f| field(self, f, false);
        Some(BufFields {
            offset,
            vaddr: f(Field::Vaddr) as u16,
            vdata: f(Field::Vdata) as u16,
            srsrc: f(Field::Srsrc) as u8,
            soffset: f(Field::Soffset) as u8,
            offen: offen != 0,
            idxen: idxen != 0,
            tfe: tfe != 0,
            atomic_return: glc != 0,
            format: fmt
                .unwrap_or("")
                .trim_start_matches("format:[")
                .trim_end_matches(']'),
        })
    }

    /// The DPP control of a gfx11/gfx12 `_dpp` / `_e64_dpp` instruction (`None` without one,
    /// and for gfx9 SDWA). Its src0 is the low byte of the control word ([`Instruction::src`]
    /// reports it as a VGPR).
    pub fn dpp(&self) -> Option<Dpp> {
        let w = self.dpp_word()?;
        match self.dpp {
            1 => Some(Dpp::Dpp16 {
                ctrl: bits(w, 8, 9) as u16,
                fi: bits(w, 18, 1) != 0,
                bound_ctrl: bits(w, 19, 1) != 0,
                neg: (bits(w, 20, 1) | bits(w, 22, 1) << 1) as u8,
                abs: (bits(w, 21, 1) | bits(w, 23, 1) << 1) as u8,
                bank_mask: bits(w, 24, 4) as u8,
                row_mask: bits(w, 28, 4) as u8,
            }),
            2 => {
                let marker = if matches!(self.encoding, Encoding::Vop3 | Encoding::Vop3p) {
                    bits(self.words[1], 0, 9)
                } else {
                    bits(self.words[0], 0, 9)
                };
                let mut sel = [0u8; 8];
                for (k, s) in sel.iter_mut().enumerate() {
                    *s = bits(w, 8 + 3 * k as u32, 3) as u8;
                }
                Some(Dpp::Dpp8 {
                    sel,
                    fi: marker == 0xEA,
                })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::decode;
    use crate::target::GfxTarget;

    fn insn(words: &[u32], t: GfxTarget) -> Instruction {
        let b: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        decode(&b, t).unwrap()
    }

    #[test]
    fn vop3p_modifiers() {
        // v_pk_fma_f16 v0, v1, v2, v3 op_sel:[1,0,0] op_sel_hi:[0,1,1] neg_lo:[0,1,0]
        let i = insn(&[0xCC0E_4800, 0x540E_0501], GfxTarget::GFX1100);
        assert_eq!(i.op(), Some(Opcode::VPkFmaF16));
        assert_eq!(i.vdst(), Some(0));
        let s: Vec<_> = (0..3).filter_map(|k| i.src(k)).collect();
        assert_eq!(s, [Src::Vgpr(1), Src::Vgpr(2), Src::Vgpr(3)]);
        let m = i.vop3p_mods().unwrap();
        assert_eq!(
            (m.op_sel, m.op_sel_hi, m.neg_lo, m.neg_hi),
            (0b001, 0b110, 0b010, 0)
        );
        assert!(!m.clamp);
    }

    #[test]
    fn vop3sd_has_sdst_and_no_abs() {
        // v_add_co_u32 v0, s2, v1, v2 (VOP3SD; sdst = s2 sits where abs/op_sel would be)
        let i = insn(&[0xD700_0200, 0x0002_0501], GfxTarget::GFX1100);
        assert_eq!(i.op(), Some(Opcode::VAddCoU32), "{}", i.text());
        assert_eq!(i.sdst(), Some(2));
        assert_eq!(i.vop3_mods().map(|m| (m.abs, m.op_sel)), Some((0, 0)));
        // v_add_f32_e64 v0, |v1|, v2 has abs and no sdst.
        let i = insn(&[0xD503_0100, 0x0002_0501], GfxTarget::GFX1100);
        assert_eq!(i.op(), Some(Opcode::VAddF32), "{}", i.text());
        assert_eq!(i.sdst(), None);
        assert_eq!(i.vop3_mods().map(|m| m.abs), Some(1));
    }

    #[test]
    fn literal_and_inline_sources() {
        // s_add_u32 s0, s1, 0x12345678 ; s_mov_b32 s3, -1
        let i = insn(&[0x8000_FF01, 0x1234_5678], GfxTarget::GFX1100);
        assert_eq!(i.src(0), Some(Src::Scalar(1)));
        assert_eq!(i.src(1), Some(Src::Literal(0x1234_5678)));
        assert_eq!(i.sdst(), Some(0));
        let i = insn(&[0xBE83_00C1], GfxTarget::GFX1100);
        assert_eq!((i.src(0), i.sdst()), (Some(Src::Inline(0xC1)), Some(3)));
    }

    #[test]
    fn dpp_and_buffer_fields() {
        // gfx11 v_mov_b32_dpp v5, v15 row_shr:2 row_mask:0xf bank_mask:0xf bound_ctrl:1
        let i = insn(&[0x7E0A_02FA, 0xFF09_120F], GfxTarget::GFX1100);
        assert_eq!(i.src(0), Some(Src::Vgpr(15)), "{}", i.text());
        assert_eq!(
            i.dpp(),
            Some(Dpp::Dpp16 {
                ctrl: 0x112,
                row_mask: 0xF,
                bank_mask: 0xF,
                bound_ctrl: true,
                fi: false,
                neg: 0,
                abs: 0
            })
        );
        // gfx11 v_mov_b32_dpp v12, v12 dpp8:[7,6,5,4,3,2,1,0]
        let i = insn(&[0x7E18_02E9, 0x0539_770C], GfxTarget::GFX1100);
        assert_eq!(
            i.dpp(),
            Some(Dpp::Dpp8 {
                sel: [7, 6, 5, 4, 3, 2, 1, 0],
                fi: false
            }),
            "{}",
            i.text()
        );
        // gfx11 tbuffer_load_format_x v1, v[0:1], s[12:15], 0 format:[BUF_FMT_32_UINT] idxen
        // offen offset:4 (soffset: inline constant 0)
        let i = insn(&[0xE8A0_0004, 0x80C3_0100], GfxTarget::GFX1100);
        let b = i.buf().unwrap();
        assert_eq!(
            (b.vdata, b.vaddr, b.srsrc, b.soffset, b.format, b.idxen, b.offen, b.offset),
            (1, 0, 12, 128, "BUF_FMT_32_UINT", true, true, 4),
            "{}",
            i.text()
        );
        // gfx12 buffer_load_b32 v11, v0, s[12:15], null idxen offset:8
        let i = insn(&[0xC405_007C, 0x8080_180B, 0x0000_0800], GfxTarget::GFX1200);
        let b = i.buf().unwrap();
        assert_eq!(
            (b.vdata, b.vaddr, b.srsrc, b.soffset, b.idxen, b.offen, b.offset),
            (11, 0, 12, 124, true, false, 8),
            "{}",
            i.text()
        );
        // gfx12 tbuffer_load_format_x v1, v[0:1], s[12:15], null format:[BUF_FMT_32_UINT]
        // idxen offen offset:4
        let i = insn(&[0xC420_007C, 0xCA00_1801, 0x0000_0400], GfxTarget::GFX1200);
        let b = i.buf().unwrap();
        assert_eq!(
            (b.format, b.idxen, b.offen, b.offset),
            ("BUF_FMT_32_UINT", true, true, 4),
            "{}",
            i.text()
        );
    }

    #[test]
    fn memory_fields_per_generation() {
        // gfx11 global_load_b32 v1, v0, s[2:3] offset:-4
        let i = insn(&[0xDC52_1FFC, 0x0102_0000], GfxTarget::GFX1100);
        let f = i.flat().unwrap();
        assert_eq!(
            (f.offset, f.addr, f.saddr, f.vdst),
            (-4, 0, 2, 1),
            "{}",
            i.text()
        );
        // gfx11 ds_load_2addr_b32 v[2:3], v1 offset0:1 offset1:2
        let i = insn(&[0xD8DC_0201, 0x0200_0001], GfxTarget::GFX1100);
        let d = i.ds().unwrap();
        assert_eq!(
            (d.offset0, d.offset1, d.addr, d.vdst),
            (1, 2, 1, 2),
            "{}",
            i.text()
        );
        // gfx12 s_load_b32 s4, s[0:1], 0x10 (24-bit offset, soffset null)
        let i = insn(&[0xF400_0100, 0xF800_0010], GfxTarget::GFX1200);
        let s = i.smem().unwrap();
        assert_eq!(
            (s.sdata, s.sbase, s.offset, s.soffset),
            (4, 0, 0x10, 124),
            "{}",
            i.text()
        );
    }
}
