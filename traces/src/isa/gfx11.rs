//! gfx11 (RDNA3) encoding dispatch: which family a dword belongs to, its opcode and length.

use super::table::{OpInfo, Opnd};
use super::tables_gfx11 as t;
use super::{dword, Encoding, Instruction, IsaError};
use crate::target::GfxTarget;

#[inline(always)]
pub(super) fn lookup(table: &'static [Option<OpInfo>], op: u32) -> Option<&'static OpInfo> {
    table.get(op as usize).and_then(|o| o.as_ref())
}

/// Encoding, opcode and base length (without literal) of the word `w`.
#[inline(always)]
fn classify(w: u32) -> Option<(Encoding, u32, usize)> {
    let top9 = w >> 23;
    let e = match top9 {
        0x17D => (Encoding::Sop1, (w >> 8) & 0xFF, 4),
        0x17E => (Encoding::Sopc, (w >> 16) & 0x7F, 4),
        0x17F => (Encoding::Sopp, (w >> 16) & 0x7F, 4),
        _ if w >> 28 == 0xB => (Encoding::Sopk, (w >> 23) & 0x1F, 4),
        _ if w >> 30 == 0b10 => (Encoding::Sop2, (w >> 23) & 0x7F, 4),
        _ if w >> 25 == 0x3F => (Encoding::Vop1, (w >> 9) & 0xFF, 4),
        _ if w >> 25 == 0x3E => (Encoding::Vopc, (w >> 17) & 0xFF, 4),
        _ if w >> 31 == 0 => (Encoding::Vop2, (w >> 25) & 0x3F, 4),
        _ => match w >> 24 {
            0xCC => (Encoding::Vop3p, (w >> 16) & 0x7F, 8),
            0xCD => (Encoding::Vinterp, (w >> 16) & 0x7F, 8),
            0xCE => (Encoding::Ldsdir, (w >> 20) & 0x3, 4),
            _ => match w >> 26 {
                0x35 => (Encoding::Vop3, (w >> 16) & 0x3FF, 8),
                0x32 => (Encoding::Vopd, (w >> 22) & 0xF, 8),
                0x36 => (Encoding::Ds, (w >> 18) & 0xFF, 8),
                0x37 => {
                    let enc = match (w >> 16) & 3 {
                        0 => Encoding::Flat,
                        1 => Encoding::Scratch,
                        2 => Encoding::Global,
                        _ => return None,
                    };
                    (enc, (w >> 18) & 0x7F, 8)
                }
                0x3D => (Encoding::Smem, (w >> 18) & 0xFF, 8),
                0x38 => (Encoding::Mubuf, (w >> 18) & 0xFF, 8),
                0x3A => (Encoding::Mtbuf, (w >> 15) & 0xF, 8),
                0x3C => (Encoding::Mimg, (w >> 18) & 0xFF, 8),
                0x3E => (Encoding::Exp, 0, 8),
                _ => return None,
            },
        },
    };
    Some(e)
}

#[inline(always)]
fn table(enc: Encoding) -> Option<&'static [Option<OpInfo>]> {
    Some(match enc {
        Encoding::Sop1 => &t::SOP1,
        Encoding::Sop2 => &t::SOP2,
        Encoding::Sopk => &t::SOPK,
        Encoding::Sopc => &t::SOPC,
        Encoding::Sopp => &t::SOPP,
        Encoding::Smem => &t::SMEM,
        Encoding::Vop1 => &t::VOP1,
        Encoding::Vop2 => &t::VOP2,
        Encoding::Vopc => &t::VOPC,
        Encoding::Vop3 => &t::VOP3,
        Encoding::Vop3p => &t::VOP3P,
        Encoding::Vopd => &t::VOPDX,
        Encoding::Ds => &t::DS,
        Encoding::Flat => &t::FLAT,
        Encoding::Global => &t::GLOBAL,
        Encoding::Scratch => &t::SCRATCH,
        Encoding::Mubuf => &t::MUBUF,
        Encoding::Mtbuf => &t::MTBUF,
        Encoding::Mimg => &t::MIMG,
        Encoding::Vinterp => &t::VINTERP,
        Encoding::Ldsdir => &t::LDSDIR,
        Encoding::Exp => return None,
    })
}

static EXP: OpInfo = OpInfo {
    name: "exp",
    ops: &[],
};

#[inline(always)]
pub(super) fn decode(bytes: &[u8], target: GfxTarget) -> Result<Instruction, IsaError> {
    let w0 = dword(bytes, 0).ok_or(IsaError::Truncated {
        need: 4,
        have: bytes.len(),
    })?;
    let (encoding, op, base) = classify(w0).ok_or(IsaError::Unsupported {
        word: w0,
        what: "no gfx11 encoding matches",
    })?;
    let unknown = || IsaError::UnknownOpcode {
        encoding,
        opcode: op as u16,
        word: w0,
    };
    let (info, info_y) = match encoding {
        Encoding::Exp => (&EXP, None),
        Encoding::Vopd => {
            let x = lookup(&t::VOPDX, op).ok_or_else(unknown)?;
            let y = lookup(&t::VOPDY, (w0 >> 17) & 0x1F).ok_or_else(unknown)?;
            (x, Some(y))
        }
        _ => (
            table(encoding)
                .and_then(|tb| lookup(tb, op))
                .ok_or_else(unknown)?,
            None,
        ),
    };
    // DPP: src0 = 0xFA (DPP16) or 0xE9/0xEA (DPP8) adds a control dword.
    let mut base = base;
    let mut dpp = 0;
    if matches!(encoding, Encoding::Vop1 | Encoding::Vop2 | Encoding::Vopc) {
        match w0 & 0x1FF {
            0xFA => dpp = 1,
            0xE9 | 0xEA => dpp = 2,
            _ => {}
        }
        if dpp != 0 {
            base = 8;
        }
    } else if matches!(encoding, Encoding::Vop3 | Encoding::Vop3p) {
        // VOP3 DPP (`_e64_dpp`): the same markers in src0 add a control dword after the pair.
        match dword(bytes, 1).map(|w1| w1 & 0x1FF) {
            Some(0xFA) => dpp = 1,
            Some(0xE9 | 0xEA) => dpp = 2,
            _ => {}
        }
        if dpp != 0 {
            base = 12;
        }
    }
    // MIMG: [1:0] counts extra dwords of non-sequential address registers.
    if encoding == Encoding::Mimg {
        base = 8 + 4 * (w0 & 3) as usize;
    }
    if bytes.len() < base {
        return Err(IsaError::Truncated {
            need: base,
            have: bytes.len(),
        });
    }
    // Built from scalars in one go: filling the array word by word and copying the
    // instruction right after stalls store forwarding (measurable on short SOPP words).
    let w = |k: usize| {
        if k < base / 4 {
            dword(bytes, k).unwrap_or(0)
        } else {
            0
        }
    };
    let (w1, w2, w3, w4) = (w(1), w(2), w(3), w(4));
    let words = [w0, w1, w2, w3, w4];
    // Built from scalars in one go, never read back: copying an instruction just stored field by
    // field (for `needs_literal`) stalls store forwarding on every instruction.
    let mk = |words: [u32; 5], len: usize| Instruction {
        target,
        encoding,
        opcode: op as u16,
        words,
        len: len as u8,
        arch: super::Arch::Gfx11,
        dpp,
        info,
        info_y,
    };
    if dpp == 0
        && literal_candidate(encoding, w0, w1, info, info_y)
        && needs_literal(&mk(words, base))
    {
        let need = base + 4;
        let lit = dword(bytes, base / 4).ok_or(IsaError::Truncated {
            need,
            have: bytes.len(),
        })?;
        let pick = |k: usize, w: u32| if base / 4 == k { lit } else { w };
        return Ok(mk(
            [w0, pick(1, w1), pick(2, w2), pick(3, w3), pick(4, w4)],
            need,
        ));
    }
    Ok(mk(words, base))
}

/// Whether the instruction may carry a literal: from scalars only, so that decoders need not
/// build an `Instruction` in memory for the common case (reading it back right after stalls store
/// forwarding). False means [`needs_literal`] is false; true means ask it.
#[inline(always)]
pub(super) fn literal_candidate(
    encoding: Encoding,
    w0: u32,
    w1: u32,
    info: &OpInfo,
    info_y: Option<&OpInfo>,
) -> bool {
    use Encoding as E;
    // Fast reject: a source selects the literal with 255, and sources sit at fixed places per
    // encoding; only when one of those places holds 255 is the exact per-operand walk needed.
    let maybe = match encoding {
        E::Sop1 => w0 & 0xFF == 255,
        E::Sop2 | E::Sopc => w0 & 0xFF == 255 || (w0 >> 8) & 0xFF == 255,
        E::Sopk => false,
        E::Vop1 | E::Vop2 | E::Vopc => w0 & 0x1FF == 255,
        E::Vopd => w0 & 0x1FF == 255 || w1 & 0x1FF == 255,
        E::Vop3 | E::Vop3p => {
            w1 & 0x1FF == 255 || (w1 >> 9) & 0x1FF == 255 || (w1 >> 18) & 0x1FF == 255
        }
        _ => return false,
    };
    let lit = |info: &OpInfo| info.ops.iter().any(|o| matches!(o, Opnd::Lit));
    maybe || lit(info) || info_y.is_some_and(lit)
}

/// Whether any source operand selects the literal (255) or the opcode always carries one.
#[inline]
pub(super) fn needs_literal(i: &Instruction) -> bool {
    use Encoding as E;
    if !matches!(
        i.encoding,
        E::Sop1
            | E::Sop2
            | E::Sopk
            | E::Sopc
            | E::Vop1
            | E::Vop2
            | E::Vopc
            | E::Vop3
            | E::Vop3p
            | E::Vopd
    ) {
        return false;
    }
    let [w0, w1, ..] = i.words;
    let maybe = match i.encoding {
        E::Sop1 => w0 & 0xFF == 255,
        E::Sop2 | E::Sopc => w0 & 0xFF == 255 || (w0 >> 8) & 0xFF == 255,
        E::Sopk => false,
        E::Vop1 | E::Vop2 | E::Vopc => w0 & 0x1FF == 255,
        E::Vopd => w0 & 0x1FF == 255 || w1 & 0x1FF == 255,
        _ => w1 & 0x1FF == 255 || (w1 >> 9) & 0x1FF == 255 || (w1 >> 18) & 0x1FF == 255,
    };
    if !maybe {
        let lit = |info: &OpInfo| info.ops.iter().any(|o| matches!(o, Opnd::Lit));
        return lit(i.info) || i.info_y.is_some_and(lit);
    }
    let infos = [Some(i.info), i.info_y];
    for (half, info) in infos.iter().enumerate() {
        let Some(info) = info else { continue };
        for o in info.ops {
            match *o {
                Opnd::Lit => return true,
                Opnd::Src(f, ..) if super::format::field(i, f, half == 1) == 255 => return true,
                _ => {}
            }
        }
    }
    false
}

/// `exp` (export) text: `exp mrt0 v0, v1, v2, v3 done`.
pub(super) fn write_exp(i: &Instruction, out: &mut String) {
    use std::fmt::Write;
    let [w0, w1, ..] = i.words;
    let en = w0 & 0xF;
    let tgt = (w0 >> 4) & 0x3F;
    out.push_str(i.info.name);
    out.push(' ');
    match tgt {
        0..=7 => {
            let _ = write!(out, "mrt{tgt}");
        }
        8 => out.push_str("mrtz"),
        9 => out.push_str("null"),
        12..=16 => {
            let _ = write!(out, "pos{}", tgt - 12);
        }
        20 => out.push_str("prim"),
        32..=63 => {
            let _ = write!(out, "param{}", tgt - 32);
        }
        _ => {
            let _ = write!(out, "invalid_target_{tgt}");
        }
    }
    for k in 0..4 {
        out.push_str(if k == 0 { " " } else { ", " });
        if en & (1 << k) != 0 {
            let _ = write!(out, "v{}", (w1 >> (8 * k)) & 0xFF);
        } else {
            out.push_str("off");
        }
    }
    if w0 & (1 << 11) != 0 {
        out.push_str(" done");
    }
    if w0 & (1 << 12) != 0 {
        out.push_str(" row_en");
    }
}

/// Printed unified-format suffix of an MTBUF format value ("" for the default format).
pub(super) fn mtbuf_format(f: u32) -> &'static str {
    t::MTBUF_FMT.get(f as usize).copied().unwrap_or("")
}

/// Register counts of MIMG opcode `op`.
pub(super) fn mimg_shape(op: u16) -> Option<&'static super::table::ImgShape> {
    t::MIMG_SHAPE.get(op as usize)
}
