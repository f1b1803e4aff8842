//! AMD GPU machine-code decoding and disassembly, and AMDGPU code objects ([`codeobj`]).
//!
//! Targets: gfx11 (RDNA3, `gfx11.rs`), gfx12 (RDNA4, `gfx12.rs`: new SMEM, VFLAT/VGLOBAL/VSCRATCH,
//! VBUFFER, VIMAGE/VSAMPLE layouts) and gfx950 (CDNA3 with gfx9 encodings, `gfx9.rs`, SDWA and
//! MTBUF included; CDNA has no MIMG or EXP). DPP covers VOP1/VOP2/VOPC and, on gfx11/gfx12, VOP3
//! and VOP3P (`_e64_dpp`). Opcode names and operand layouts come from generated
//! tables (`tables_*.rs`, written by `gen/gen_tables.py`, which learns them from LLVM's
//! disassembler); printing follows LLVM's syntax so that text can be compared with
//! `llvm-objdump -d` and pasted into LLVM tools.

pub mod codeobj;
mod fields;
mod format;
#[rustfmt::skip]
mod opcode;
mod gfx11;
mod gfx12;
mod gfx9;
mod table;
#[rustfmt::skip]
#[allow(clippy::all)]
mod tables_gfx11;
#[rustfmt::skip]
#[allow(clippy::all)]
mod tables_gfx12;
#[rustfmt::skip]
#[allow(clippy::all)]
mod tables_gfx9;
#[rustfmt::skip]
mod tables_opsel;

pub use codeobj::{CodeObject, CodeObjectError, Kernel, KernelArg, KernelDescriptor};
pub use fields::{
    BufFields, Dpp, DsFields, FlatFields, MfmaFields, MubufFields, SmemFields, Src, Vop3Mods,
    Vop3pMods, VopdHalf, GFX9_NULL,
};
pub use opcode::Opcode;
pub use table::{CType, Field};

impl Opcode {
    /// The mnemonic without an encoding suffix (`v_add_f32`).
    pub fn name(self) -> &'static str {
        opcode::NAMES[self as usize]
    }

    /// The operation an LLVM mnemonic names; `_e32`/`_e64`/`_dpp`/`_sdwa` suffixes are ignored.
    pub fn from_mnemonic(mnemonic: &str) -> Option<Opcode> {
        let mut m = mnemonic;
        for suffix in ["_dpp", "_sdwa", "_e32", "_e64"] {
            m = m.strip_suffix(suffix).unwrap_or(m);
        }
        let k = opcode::NAMES.binary_search(&m).ok()?;
        opcode::ALL.get(k).copied()
    }
}

impl std::fmt::Display for Opcode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

use crate::target::{Family, GfxTarget};

/// Error decoding one instruction.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IsaError {
    #[error("truncated instruction: need {need} bytes, {have} available")]
    Truncated { need: usize, have: usize },
    #[error("unknown {encoding:?} opcode {opcode} (word 0x{word:08x})")]
    UnknownOpcode {
        encoding: Encoding,
        opcode: u16,
        word: u32,
    },
    #[error("unsupported encoding in word 0x{word:08x}: {what}")]
    Unsupported { word: u32, what: &'static str },
    #[error("target {0} is not supported by the decoder")]
    UnsupportedTarget(GfxTarget),
}

/// Instruction encoding family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    Sop1,
    Sop2,
    Sopk,
    Sopc,
    Sopp,
    Smem,
    Vop1,
    Vop2,
    Vopc,
    Vop3,
    Vop3p,
    Vopd,
    Ds,
    Flat,
    Global,
    Scratch,
    Mubuf,
    Mtbuf,
    Mimg,
    Exp,
    Vinterp,
    Ldsdir,
}

/// Special (non-general-purpose) registers and source operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpecialReg {
    VccLo,
    VccHi,
    Vcc,
    Null,
    M0,
    ExecLo,
    ExecHi,
    Exec,
    Scc,
    Vccz,
    Execz,
    SharedBase,
    SharedLimit,
    PrivateBase,
    PrivateLimit,
    PopsExitingWaveId,
    LdsDirect,
    /// gfx9 only.
    FlatScratchLo,
    FlatScratchHi,
    FlatScratch,
    XnackMaskLo,
    XnackMaskHi,
    XnackMask,
}

/// A typed operand.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Operand {
    /// `count` consecutive SGPRs from `first`.
    Sgpr {
        first: u16,
        count: u8,
    },
    /// `count` consecutive VGPRs from `first`; `hi` selects the high 16 bits (true16 `.h`).
    Vgpr {
        first: u16,
        count: u8,
        hi: Option<bool>,
    },
    Agpr {
        first: u16,
        count: u8,
    },
    Ttmp {
        first: u16,
        count: u8,
    },
    Special(SpecialReg),
    /// Inline integer constant (-16..=64).
    InlineInt(i32),
    /// Inline float constant (0.5, -0.5, 1.0, ..., 1/(2pi)).
    InlineFloat(f64),
    /// 32-bit literal dword following the instruction.
    Literal(u32),
    /// Immediate field (simm16, offsets...).
    Imm(i64),
    /// `off` (no address register).
    Off,
    /// Something printed verbatim (exp targets).
    Text(&'static str),
    /// Interpolation attribute and channel (`attr3.y`).
    Attr {
        index: u8,
        chan: u8,
    },
}

/// Encoding generation, which selects field layouts shared by several targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arch {
    Gfx9,
    Gfx11,
    Gfx12,
}

/// One decoded instruction. Cheap to copy; text and operands are derived on demand.
#[derive(Debug, Clone, Copy)]
pub struct Instruction {
    pub target: GfxTarget,
    pub encoding: Encoding,
    pub opcode: u16,
    words: [u32; 5],
    len: u8,
    arch: Arch,
    /// DPP/SDWA variant: 0 none, 1 DPP16, 2 DPP8, 3 SDWA (gfx9 VOP1/VOP2/VOPC). On VOP1/VOP2/
    /// VOPC the control dword is word 1; on VOP3/VOP3P (gfx11+ `_e64_dpp`) it is word 2.
    dpp: u8,
    info: &'static table::OpInfo,
    /// Second half of a VOPD dual-issue instruction.
    info_y: Option<&'static table::OpInfo>,
}

impl Instruction {
    /// Length in bytes, including any literal.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// LLVM mnemonic (for VOPD, the X half).
    pub fn mnemonic(&self) -> &str {
        self.info.name
    }

    /// The operation (for VOPD, the X half). Every opcode the decoder knows has one (a test walks
    /// the tables), so `None` would only mean a table and `Opcode` went out of step.
    pub fn op(&self) -> Option<Opcode> {
        Opcode::from_mnemonic(self.info.name)
    }

    /// The Y half's operation of a VOPD dual-issue instruction.
    pub fn op_y(&self) -> Option<Opcode> {
        self.info_y.and_then(|y| Opcode::from_mnemonic(y.name))
    }

    /// The raw dwords (only the first `len()/4` are meaningful).
    pub fn words(&self) -> &[u32] {
        &self.words[..self.len as usize / 4]
    }

    pub fn is_sopp(&self) -> bool {
        self.encoding == Encoding::Sopp
    }

    /// s_branch / s_cbranch_*: SOPP with a signed dword offset relative to the next instruction.
    pub fn is_branch(&self) -> bool {
        self.is_sopp() && (self.info.name == "s_branch" || self.info.name.starts_with("s_cbranch_"))
    }

    /// Branch target for a branch at `pc`: pc + 4 + simm16 * 4.
    pub fn branch_target(&self, pc: u64) -> Option<u64> {
        if !self.is_branch() {
            return None;
        }
        let off = i64::from(self.simm16()?) * 4;
        Some(pc.wrapping_add(4).wrapping_add(off as u64))
    }

    /// The DPP or SDWA control dword, if the instruction has one.
    pub(crate) fn dpp_word(&self) -> Option<u32> {
        match (self.dpp, self.encoding) {
            (0, _) => None,
            (_, Encoding::Vop3 | Encoding::Vop3p) => Some(self.words[2]),
            _ => Some(self.words[1]),
        }
    }

    /// SOPP/SOPK 16-bit immediate.
    pub fn simm16(&self) -> Option<i16> {
        match self.encoding {
            Encoding::Sopp | Encoding::Sopk => Some(self.words[0] as u16 as i16),
            _ => None,
        }
    }

    /// The literal dword, if the instruction has one.
    pub fn literal(&self) -> Option<u32> {
        format::literal(self)
    }

    /// Typed operands in LLVM's printing order.
    pub fn operands(&self) -> Vec<Operand> {
        format::operands(self)
            .as_slice()
            .iter()
            .map(|o| o.op)
            .collect()
    }

    /// Full LLVM-syntax text, e.g. `s_load_b128 s[4:7], s[0:1], null`.
    pub fn text(&self) -> String {
        let mut s = String::with_capacity(48);
        self.write_text(&mut s);
        s
    }

    /// Append the LLVM-syntax text to `out` (no allocation when `out` has room).
    pub fn write_text(&self, out: &mut String) {
        format::write_text(self, out)
    }
}

/// Decode the instruction at `bytes[0..]`.
#[inline]
pub fn decode(bytes: &[u8], target: GfxTarget) -> Result<Instruction, IsaError> {
    decode_inline(bytes, target)
}

/// [`decode`], always inlined (into [`Disassembly::next`]): a returned instruction would be
/// copied right after being stored field by field, which stalls store forwarding.
#[inline(always)]
fn decode_inline(bytes: &[u8], target: GfxTarget) -> Result<Instruction, IsaError> {
    match target.family() {
        Some(Family::Rdna3) => gfx11::decode(bytes, target),
        Some(Family::Rdna4) => gfx12::decode(bytes, target),
        Some(Family::Cdna) if target.major == 9 && target.minor == 5 => gfx9::decode(bytes, target),
        _ => Err(IsaError::UnsupportedTarget(target)),
    }
}

/// One line of a disassembly.
#[derive(Debug, Clone)]
pub struct Line {
    pub addr: u64,
    /// The decoded instruction, or the error and the raw dword LLVM would print as `.long`.
    pub insn: Result<Instruction, (IsaError, u32)>,
}

impl Line {
    /// Size in bytes this line covers.
    pub fn size(&self) -> usize {
        match &self.insn {
            Ok(i) => i.len(),
            Err(_) => 4,
        }
    }

    /// LLVM text; undecodable words print as `.long 0x...` like llvm-objdump.
    pub fn text(&self) -> String {
        match &self.insn {
            Ok(i) => i.text(),
            Err((_, w)) => format!(".long 0x{w:x}"),
        }
    }
}

/// Iterator over the instructions of a code blob; never panics, skips 4 bytes after a bad word.
#[derive(Debug, Clone)]
pub struct Disassembly<'a> {
    code: &'a [u8],
    pos: usize,
    base: u64,
    target: GfxTarget,
}

impl Iterator for Disassembly<'_> {
    type Item = Line;
    // Inlined into the caller's loop so that the `Line` need not go through memory (a copy of
    // a struct just stored field by field stalls store forwarding).
    #[inline(always)]
    fn next(&mut self) -> Option<Line> {
        let rest = self.code.get(self.pos..)?;
        if rest.is_empty() {
            return None;
        }
        let addr = self.base.wrapping_add(self.pos as u64);
        let insn = decode_inline(rest, self.target).map_err(|e| {
            let mut w = [0u8; 4];
            let n = rest.len().min(4);
            w[..n].copy_from_slice(&rest[..n]);
            (e, u32::from_le_bytes(w))
        });
        self.pos += match &insn {
            Ok(i) => i.len(),
            Err(_) => 4,
        };
        Some(Line { addr, insn })
    }
}

/// Disassemble `code` located at `base_addr`.
pub fn disassemble(code: &[u8], base_addr: u64, target: GfxTarget) -> Disassembly<'_> {
    Disassembly {
        code,
        pos: 0,
        base: base_addr,
        target,
    }
}

/// Little-endian dword `i` of `bytes`, if present.
#[inline]
pub(crate) fn dword(bytes: &[u8], i: usize) -> Option<u32> {
    crate::bytes::Reader::new(bytes)
        .u32_at(i.checked_mul(4)?, "dword")
        .ok()
}

#[cfg(test)]
mod tests {
    use super::table::OpInfo;
    use super::{tables_gfx11 as g11, tables_gfx12 as g12, tables_gfx9 as g9, Opcode};

    fn names(tables: &[&[Option<OpInfo>]]) -> Vec<&'static str> {
        tables
            .iter()
            .flat_map(|t| t.iter().flatten().map(|i| i.name))
            .collect()
    }

    #[test]
    fn every_table_mnemonic_has_an_opcode() {
        let mut all = names(&[
            &g9::SOP2,
            &g9::SOPK,
            &g9::SOP1,
            &g9::SOPC,
            &g9::SOPP,
            &g9::SMEM,
            &g9::VOP2,
            &g9::VOP1,
            &g9::VOPC,
            &g9::VOP3,
            &g9::VOP3P,
            &g9::DS,
            &g9::FLAT,
            &g9::SCRATCH,
            &g9::GLOBAL,
            &g9::MUBUF,
        ]);
        all.extend(names(&[
            &g11::SOP2,
            &g11::SOPK,
            &g11::SOP1,
            &g11::SOPC,
            &g11::SOPP,
            &g11::SMEM,
            &g11::VOP2,
            &g11::VOP1,
            &g11::VOPC,
            &g11::VOP3,
            &g11::VOP3P,
            &g11::DS,
            &g11::FLAT,
            &g11::SCRATCH,
            &g11::GLOBAL,
            &g11::MUBUF,
            &g11::MTBUF,
            &g11::MIMG,
            &g11::VINTERP,
            &g11::LDSDIR,
            &g11::VOPDX,
            &g11::VOPDY,
        ]));
        all.extend(names(&[
            &g12::SOP2,
            &g12::SOPK,
            &g12::SOP1,
            &g12::SOPC,
            &g12::SOPP,
            &g12::VOP2,
            &g12::VOP1,
            &g12::VOPC,
            &g12::VOP3,
            &g12::VOP3P,
            &g12::DS,
            &g12::VINTERP,
            &g12::LDSDIR,
            &g12::SMEM,
            &g12::FLAT,
            &g12::SCRATCH,
            &g12::GLOBAL,
            &g12::VBUFFER,
            &g12::VIMAGE,
            &g12::VSAMPLE,
            &g12::VOPDX,
            &g12::VOPDY,
        ]));
        assert!(all.len() > 3000, "{} mnemonics", all.len());
        for n in all {
            let op = Opcode::from_mnemonic(n).unwrap_or_else(|| panic!("{n} has no Opcode"));
            let base = n
                .strip_suffix("_e32")
                .or_else(|| n.strip_suffix("_e64"))
                .unwrap_or(n);
            assert_eq!(op.name(), base, "{n}");
        }
    }

    #[test]
    fn encodings_share_an_opcode() {
        let e32 = Opcode::from_mnemonic("v_add_f32_e32");
        assert_eq!(e32, Some(Opcode::VAddF32));
        assert_eq!(Opcode::from_mnemonic("v_add_f32_e64_dpp"), e32);
        assert_eq!(Opcode::from_mnemonic("v_add_f32_sdwa"), e32);
        assert_eq!(
            Opcode::from_mnemonic("s_load_b128"),
            Some(Opcode::SLoadB128)
        );
        assert_eq!(Opcode::from_mnemonic("v_not_a_real_op"), None);
        assert_eq!(Opcode::VAddF32.to_string(), "v_add_f32");
    }
}
