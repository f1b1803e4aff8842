//! Types of the generated opcode tables (`tables_*.rs`, written by `gen/gen_tables.py`).

/// An instruction field that an operand is printed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Sdst,
    Ssrc0,
    Ssrc1,
    Sdata,
    Sbase,
    Soffset,
    Vdst,
    Src0,
    Src1,
    Src2,
    Vsrc1,
    Addr,
    Data0,
    Data1,
    Data,
    Saddr,
    Vdata,
    Vaddr,
    Srsrc,
    Ssamp,
}

/// Register file of an 8-bit (non-"source") register field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegKind {
    /// Scalar: printed with the scalar operand encoding (106 = vcc_lo, 124 = null, ...).
    S,
    V,
    /// Accumulation VGPRs (gfx90a+ tables).
    #[allow(dead_code)]
    A,
}

/// How an inline constant or literal in a source operand prints (learned from LLVM).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CType {
    /// 32-bit (int or float): 1/(2pi) = 0.15915494, literals as 32-bit hex.
    C32,
    /// 64-bit: 1/(2pi) printed with double precision.
    C64,
    /// 16-bit float: literals as 16-bit hex.
    C16F,
    /// 16-bit integer: inline float constants as their f16 bit pattern.
    C16I,
}

/// How an immediate field (SOPP/SOPK simm16) prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImmFmt {
    Dec,
    Hex,
    Special,
}

/// One printed operand of an opcode: which field, how many consecutive registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opnd {
    /// Register field: field, register count, register file, true16 half-register syntax.
    Reg(Field, u8, RegKind, bool),
    /// 8/9-bit source operand (register, inline constant or literal).
    Src(Field, u8, bool, CType),
    /// Operand LLVM always prints the same (`vcc_lo`, `off`).
    Fixed(&'static str),
    /// simm16.
    Imm(ImmFmt),
    /// The 32-bit literal dword (v_fmamk/fmaak, VOPD).
    Lit,
}

/// Static description of one opcode of one encoding family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpInfo {
    pub name: &'static str,
    pub ops: &'static [Opnd],
}

/// Register counts of an image (MIMG/VIMAGE/VSAMPLE) opcode, learned from LLVM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImgShape {
    /// Address VGPRs per `a16 * 8 + dim`.
    pub addr: [u8; 16],
    /// Data VGPRs for a dmask with 1..=4 bits set.
    pub data: [u8; 4],
    /// Whether LLVM prints `dim:` for this opcode (not for BVH ops).
    pub dim: bool,
}
