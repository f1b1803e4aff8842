//! gfx12 (RDNA4) encoding dispatch. Scalar, VALU, DS, EXP and VINTERP words are laid out as on
//! gfx11; SMEM moved its opcode, and the memory families became 96-bit VFLAT/VGLOBAL/VSCRATCH,
//! VBUFFER (MUBUF and MTBUF in one opcode space), VIMAGE and VSAMPLE.

use super::gfx11::{literal_candidate, lookup, needs_literal};
use super::table::OpInfo;
use super::tables_gfx12 as t;
use super::{dword, Arch, Encoding, Instruction, IsaError};
use crate::target::GfxTarget;

/// Which generated table an encoding's opcode indexes.
#[derive(Clone, Copy)]
enum Tab {
    Enc(Encoding),
    Vbuffer,
    Vimage,
    Vsample,
}

/// Encoding, table, opcode and base length (without literal) of the word `w`.
#[inline(always)]
fn classify(w: u32) -> Option<(Encoding, Tab, u32, usize)> {
    let top9 = w >> 23;
    let e = |e: Encoding, op: u32, n: usize| Some((e, Tab::Enc(e), op, n));
    match top9 {
        0x17D => return e(Encoding::Sop1, (w >> 8) & 0xFF, 4),
        0x17E => return e(Encoding::Sopc, (w >> 16) & 0x7F, 4),
        0x17F => return e(Encoding::Sopp, (w >> 16) & 0x7F, 4),
        _ => {}
    }
    if w >> 28 == 0xB {
        return e(Encoding::Sopk, (w >> 23) & 0x1F, 4);
    }
    if w >> 30 == 0b10 {
        return e(Encoding::Sop2, (w >> 23) & 0x7F, 4);
    }
    match w >> 25 {
        0x3F => return e(Encoding::Vop1, (w >> 9) & 0xFF, 4),
        0x3E => return e(Encoding::Vopc, (w >> 17) & 0xFF, 4),
        _ if w >> 31 == 0 => return e(Encoding::Vop2, (w >> 25) & 0x3F, 4),
        _ => {}
    }
    match w >> 24 {
        0xCC => return e(Encoding::Vop3p, (w >> 16) & 0x7F, 8),
        0xCD => return e(Encoding::Vinterp, (w >> 16) & 0x7F, 8),
        0xCE => return e(Encoding::Ldsdir, (w >> 20) & 0x3, 4),
        _ => {}
    }
    match w >> 26 {
        0x35 => e(Encoding::Vop3, (w >> 16) & 0x3FF, 8),
        0x32 => e(Encoding::Vopd, (w >> 22) & 0xF, 8),
        0x36 => e(Encoding::Ds, (w >> 18) & 0xFF, 8),
        0x3D => e(Encoding::Smem, (w >> 13) & 0xFF, 8),
        0x3B => {
            let enc = match (w >> 24) & 3 {
                0 => Encoding::Flat,
                1 => Encoding::Scratch,
                2 => Encoding::Global,
                _ => return None,
            };
            e(enc, (w >> 14) & 0x7F, 12)
        }
        0x31 => {
            let op = (w >> 14) & 0xFF;
            // tbuffer opcodes live at 0x80.. of the shared VBUFFER opcode space.
            let enc = if op >= 0x80 {
                Encoding::Mtbuf
            } else {
                Encoding::Mubuf
            };
            Some((enc, Tab::Vbuffer, op, 12))
        }
        0x34 => Some((Encoding::Mimg, Tab::Vimage, (w >> 14) & 0xFF, 12)),
        0x39 => Some((Encoding::Mimg, Tab::Vsample, (w >> 14) & 0xFF, 12)),
        0x3E => Some((Encoding::Exp, Tab::Enc(Encoding::Exp), 0, 8)),
        _ => None,
    }
}

#[inline(always)]
fn table(tab: Tab) -> Option<&'static [Option<OpInfo>]> {
    Some(match tab {
        Tab::Vbuffer => &t::VBUFFER,
        Tab::Vimage => &t::VIMAGE,
        Tab::Vsample => &t::VSAMPLE,
        Tab::Enc(enc) => match enc {
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
            Encoding::Vinterp => &t::VINTERP,
            Encoding::Ldsdir => &t::LDSDIR,
            _ => return None,
        },
    })
}

static EXP: OpInfo = OpInfo {
    name: "export",
    ops: &[],
};

#[inline(always)]
pub(super) fn decode(bytes: &[u8], target: GfxTarget) -> Result<Instruction, IsaError> {
    let w0 = dword(bytes, 0).ok_or(IsaError::Truncated {
        need: 4,
        have: bytes.len(),
    })?;
    let (encoding, tab, op, base) = classify(w0).ok_or(IsaError::Unsupported {
        word: w0,
        what: "no gfx12 encoding matches",
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
            table(tab)
                .and_then(|tb| lookup(tb, op))
                .ok_or_else(unknown)?,
            None,
        ),
    };
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
        arch: Arch::Gfx12,
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

/// Printed unified-format suffix of a VBUFFER tbuffer format ("" for the default format).
pub(super) fn mtbuf_format(f: u32) -> &'static str {
    t::MTBUF_FMT.get(f as usize).copied().unwrap_or("")
}

/// Register counts of VIMAGE (`sample` false) or VSAMPLE opcode `op`.
pub(super) fn image_shape(sample: bool, op: u16) -> Option<&'static super::table::ImgShape> {
    if sample {
        t::VSAMPLE_SHAPE.get(op as usize)
    } else {
        t::VIMAGE_SHAPE.get(op as usize)
    }
}
