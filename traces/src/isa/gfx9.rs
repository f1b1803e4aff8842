//! gfx9-encoding dispatch for gfx950 (CDNA3). Scalar and VOP1/VOP2/VOPC words are laid out as on
//! gfx11; VOP3 uses prefix 0x34, VOP3P (including MFMA) 0x1A7, SMEM 0x30 and DS keeps its opcode in
//! [24:17]; MTBUF (0x3A) keeps its 4-bit opcode in [18:15] and dfmt/nfmt above it. SDWA is a
//! VOP1/VOP2/VOPC form (src0 = 0xF9). CDNA has no MIMG or EXP, so those words are not decoded.

use super::gfx11::{literal_candidate, lookup, needs_literal};
use super::table::OpInfo;
use super::tables_gfx9 as t;
use super::{dword, Arch, Encoding, Instruction, IsaError};
use crate::target::GfxTarget;

use super::table::{Field as F, Opnd as O, RegKind as K};

/// MTBUF opcodes (the 16 of gfx9; data VGPRs per opcode, d16 forms packed two per VGPR).
static MTBUF: [Option<OpInfo>; 16] = [
    mtbuf("tbuffer_load_format_x", 1),
    mtbuf("tbuffer_load_format_xy", 2),
    mtbuf("tbuffer_load_format_xyz", 3),
    mtbuf("tbuffer_load_format_xyzw", 4),
    mtbuf("tbuffer_store_format_x", 1),
    mtbuf("tbuffer_store_format_xy", 2),
    mtbuf("tbuffer_store_format_xyz", 3),
    mtbuf("tbuffer_store_format_xyzw", 4),
    mtbuf("tbuffer_load_format_d16_x", 1),
    mtbuf("tbuffer_load_format_d16_xy", 1),
    mtbuf("tbuffer_load_format_d16_xyz", 2),
    mtbuf("tbuffer_load_format_d16_xyzw", 2),
    mtbuf("tbuffer_store_format_d16_x", 1),
    mtbuf("tbuffer_store_format_d16_xy", 1),
    mtbuf("tbuffer_store_format_d16_xyz", 2),
    mtbuf("tbuffer_store_format_d16_xyzw", 2),
];

const fn mtbuf(name: &'static str, data: u8) -> Option<OpInfo> {
    // One operand list per register count: vdata, vaddr, srsrc, soffset (as MUBUF).
    const OPS: [&[O]; 4] = [
        &[
            O::Reg(F::Vdata, 1, K::V, false),
            O::Reg(F::Vaddr, 1, K::V, false),
            O::Reg(F::Srsrc, 4, K::S, false),
            O::Reg(F::Soffset, 1, K::S, false),
        ],
        &[
            O::Reg(F::Vdata, 2, K::V, false),
            O::Reg(F::Vaddr, 1, K::V, false),
            O::Reg(F::Srsrc, 4, K::S, false),
            O::Reg(F::Soffset, 1, K::S, false),
        ],
        &[
            O::Reg(F::Vdata, 3, K::V, false),
            O::Reg(F::Vaddr, 1, K::V, false),
            O::Reg(F::Srsrc, 4, K::S, false),
            O::Reg(F::Soffset, 1, K::S, false),
        ],
        &[
            O::Reg(F::Vdata, 4, K::V, false),
            O::Reg(F::Vaddr, 1, K::V, false),
            O::Reg(F::Srsrc, 4, K::S, false),
            O::Reg(F::Soffset, 1, K::S, false),
        ],
    ];
    Some(OpInfo {
        name,
        ops: OPS[data as usize - 1],
    })
}

/// Encoding, opcode and base length (without literal) of the word `w`.
#[inline(always)]
fn classify(w: u32) -> Option<(Encoding, u32, usize)> {
    match w >> 23 {
        0x17D => return Some((Encoding::Sop1, (w >> 8) & 0xFF, 4)),
        0x17E => return Some((Encoding::Sopc, (w >> 16) & 0x7F, 4)),
        0x17F => return Some((Encoding::Sopp, (w >> 16) & 0x7F, 4)),
        0x1A7 => return Some((Encoding::Vop3p, (w >> 16) & 0x7F, 8)),
        _ => {}
    }
    if w >> 28 == 0xB {
        return Some((Encoding::Sopk, (w >> 23) & 0x1F, 4));
    }
    if w >> 30 == 0b10 {
        return Some((Encoding::Sop2, (w >> 23) & 0x7F, 4));
    }
    match w >> 25 {
        0x3F => return Some((Encoding::Vop1, (w >> 9) & 0xFF, 4)),
        0x3E => return Some((Encoding::Vopc, (w >> 17) & 0xFF, 4)),
        _ if w >> 31 == 0 => return Some((Encoding::Vop2, (w >> 25) & 0x3F, 4)),
        _ => {}
    }
    Some(match w >> 26 {
        0x34 => (Encoding::Vop3, (w >> 16) & 0x3FF, 8),
        0x30 => (Encoding::Smem, (w >> 18) & 0xFF, 8),
        0x36 => (Encoding::Ds, (w >> 17) & 0xFF, 8),
        0x37 => {
            let enc = match (w >> 14) & 3 {
                0 => Encoding::Flat,
                1 => Encoding::Scratch,
                2 => Encoding::Global,
                _ => return None,
            };
            (enc, (w >> 18) & 0x7F, 8)
        }
        0x38 => (Encoding::Mubuf, (w >> 18) & 0x7F, 8),
        0x3A => (Encoding::Mtbuf, (w >> 15) & 0xF, 8),
        _ => return None,
    })
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
        Encoding::Ds => &t::DS,
        Encoding::Flat => &t::FLAT,
        Encoding::Global => &t::GLOBAL,
        Encoding::Scratch => &t::SCRATCH,
        Encoding::Mubuf => &t::MUBUF,
        Encoding::Mtbuf => &MTBUF,
        _ => return None,
    })
}

#[inline(always)]
pub(super) fn decode(bytes: &[u8], target: GfxTarget) -> Result<Instruction, IsaError> {
    let w0 = dword(bytes, 0).ok_or(IsaError::Truncated {
        need: 4,
        have: bytes.len(),
    })?;
    let (encoding, op, base) = classify(w0).ok_or(IsaError::Unsupported {
        word: w0,
        what: "no supported gfx9 encoding matches",
    })?;
    let info = table(encoding)
        .and_then(|tb| lookup(tb, op))
        .ok_or(IsaError::UnknownOpcode {
            encoding,
            opcode: op as u16,
            word: w0,
        })?;
    let mut base = base;
    let mut dpp = 0;
    if matches!(encoding, Encoding::Vop1 | Encoding::Vop2 | Encoding::Vopc) {
        match w0 & 0x1FF {
            0xFA => dpp = 1,
            0xF9 => dpp = 3,
            _ => {}
        }
        if dpp != 0 {
            base = 8;
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
        arch: Arch::Gfx9,
        dpp,
        info,
        info_y: None,
    };
    if dpp == 0
        && encoding != Encoding::Vop3
        && encoding != Encoding::Vop3p
        && literal_candidate(encoding, w0, w1, info, None)
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
