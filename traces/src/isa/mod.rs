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
mod format;
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
pub use table::CType;

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
    fn next(&mut self) -> Option<Line> {
        let rest = self.code.get(self.pos..)?;
        if rest.is_empty() {
            return None;
        }
        let addr = self.base.wrapping_add(self.pos as u64);
        let insn = decode(rest, self.target).map_err(|e| {
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
pub(crate) fn dword(bytes: &[u8], i: usize) -> Option<u32> {
    let b = bytes.get(i * 4..i * 4 + 4)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}
