//! Names of the SQTT instruction-token `op` values (INST, INST_RDNA4, CDNA_INST).
//!
//! The meanings are empirical (tinygrad's discovery, `docs/sqtt-format.md` §8); names follow
//! the reference decoder of May 2026 so histograms can be compared. Unknown values are kept as
//! raw numbers, never rejected.

use super::packets::Layout;
use std::fmt;

/// A named op value, or the raw number when the value has no name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpName {
    Named(&'static str),
    /// Memory instructions of other SIMDs sharing the traced WGP's memory path:
    /// `OTHER_<category>_<n>`.
    Other(&'static str, u32),
    Unknown(u32),
}

impl OpName {
    /// True for `OTHER_*` ops, which belong to another SIMD and are not part of any traced
    /// wave's instruction stream.
    pub fn is_other_simd(&self) -> bool {
        matches!(self, OpName::Other(..))
            || matches!(self, OpName::Named(n) if n.starts_with("OTHER_"))
    }

    pub fn is_known(&self) -> bool {
        !matches!(self, OpName::Unknown(_))
    }

    /// A taken branch (the PC moves by the branch offset).
    pub fn is_jump_taken(&self) -> bool {
        matches!(self, OpName::Named("JUMP"))
    }

    /// A branch token, taken or not.
    pub fn is_jump(&self) -> bool {
        matches!(self, OpName::Named("JUMP" | "JUMP_NO"))
    }
}

/// The op of an instruction token, packed in 2 bytes (a token list of a capture of real size
/// holds millions; an [`OpName`] is 24): the layout whose table names it and the op field's
/// value. [`TokenOp::name`] is the name that layout gives the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TokenOp(u16);

impl TokenOp {
    /// No op (tokens other than INST).
    pub const NONE: TokenOp = TokenOp(0);
    const PRESENT: u16 = 1 << 15;
    /// Op fields are at most 8 bits wide (`packets` tests it); 12 bits are kept.
    pub(crate) const VALUE_BITS: u32 = 12;
    const VALUE_MASK: u16 = (1 << Self::VALUE_BITS) - 1;

    /// The op `value` (an op field) of a `layout` stream.
    pub fn new(layout: Layout, value: u32) -> TokenOp {
        debug_assert!(value < 1 << Self::VALUE_BITS);
        TokenOp(
            Self::PRESENT | (layout as u16) << Self::VALUE_BITS | (value as u16 & Self::VALUE_MASK),
        )
    }

    /// The packed value (equal ops, equal bits).
    #[inline]
    pub(crate) fn bits(self) -> u16 {
        self.0
    }

    /// The layout and op field value, if there is an op.
    pub fn raw(self) -> Option<(Layout, u32)> {
        if self.0 & Self::PRESENT == 0 {
            return None;
        }
        let at = ((self.0 >> Self::VALUE_BITS) & 3) as usize;
        let layout = Layout::ALL.get(at).copied().unwrap_or(Layout::Cdna);
        Some((layout, (self.0 & Self::VALUE_MASK) as u32))
    }

    /// The op's name, as [`op_name`] gives it.
    pub fn name(self) -> Option<OpName> {
        self.raw().map(|(l, v)| op_info(l, v).name)
    }
}

impl fmt::Display for OpName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpName::Named(n) => f.write_str(n),
            OpName::Other(cat, n) => write!(f, "OTHER_{cat}_{n}"),
            OpName::Unknown(v) => write!(f, "0x{v:02x}"),
        }
    }
}

const RDNA3_NAMES: &[(u32, &str)] = &[
    (0x00, "SALU"),
    (0x01, "SMEM_RD"),
    (0x03, "JUMP"),
    (0x04, "JUMP_NO"),
    (0x05, "CALL"),
    (0x09, "MESSAGE"),
    (0x0b, "VALUT_4"),
    (0x0d, "VALUB_2"),
    (0x0e, "VALUB_4"),
    (0x0f, "VALUB_16"),
    (0x12, "VINTERP"),
    (0x13, "BARRIER"),
    (0x1c, "FLAT_RD_2"),
    (0x1d, "FLAT_WR_3"),
    (0x1e, "FLAT_WR_4"),
    (0x1f, "FLAT_WR_5"),
    (0x20, "FLAT_WR_6"),
    (0x21, "SGMEM_RD_1"),
    (0x22, "SGMEM_RD_2"),
    (0x24, "SGMEM_WR_2"),
    (0x25, "SGMEM_WR_3"),
    (0x26, "SGMEM_WR_4"),
    (0x27, "SGMEM_WR_5"),
    (0x28, "SGMEM_WR_6"),
    (0x29, "LDS_RD"),
    (0x2a, "LDS_WR_1"),
    (0x2b, "LDS_WR_2"),
    (0x2c, "LDS_WR_3"),
    (0x2d, "LDS_WR_4"),
    (0x2e, "LDS_WR_5"),
    (0x72, "SALU_WR_EXEC"),
    (0x73, "VALU1_WR_EXEC"),
];

const RDNA4_NAMES: &[(u32, &str)] = &[
    (0x00, "SALU"),
    (0x01, "SMEM"),
    (0x02, "SMEM_WR"),
    (0x03, "JUMP"),
    (0x04, "JUMP_NO"),
    (0x05, "CALL"),
    (0x07, "SALU_NO_EXEC"),
    (0x09, "MESSAGE"),
    (0x0a, "VALU_1"),
    (0x0b, "VALUT_4"),
    (0x0c, "VALUB_1"),
    (0x0d, "VALUB_2"),
    (0x0e, "VALUB_4"),
    (0x0f, "VALUB_16"),
    (0x12, "VINTERP"),
    (0x13, "BARRIER_WAIT"),
    (0x1c, "FLAT_RD_2"),
    (0x1d, "FLAT_WR_3"),
    (0x1e, "FLAT_WR_4"),
    (0x1f, "FLAT_WR_5"),
    (0x20, "FLAT_WR_6"),
    (0x21, "VMEM_RD_1"),
    (0x22, "VMEM_RD_2"),
    (0x23, "VMEM_WR_1"),
    (0x24, "VMEM_WR_2"),
    (0x25, "VMEM_WR_3"),
    (0x26, "VMEM_WR_4"),
    (0x27, "VMEM_WR_5"),
    (0x28, "VMEM_WR_6"),
    (0x29, "LDS_RD"),
    (0x2a, "LDS_WR_1"),
    (0x2b, "LDS_WR_2"),
    (0x2c, "LDS_WR_3"),
    (0x2d, "LDS_WR_4"),
    (0x2e, "LDS_WR_5"),
    (0x2f, "BUF_RD_1"),
    (0x30, "BUF_RD_2"),
    (0x31, "BUF_WR_1"),
    (0x32, "BUF_WR_2"),
    (0x33, "BUF_WR_3"),
    (0x34, "BUF_WR_4"),
    (0x35, "BUF_WR_5"),
    (0x36, "BUF_WR_6"),
    (0x6e, "LDS_DIR_LOAD"),
    (0x6f, "LDS_PARAM_LOAD"),
    (0x72, "SALU_WR_EXEC"),
    (0x73, "VALU1_WR_EXEC"),
    (0x74, "VALU_WR_EXEC_2"),
    (0x77, "OTHER_LDS_6"),
    (0x78, "OTHER_LDS_10"),
    (0x7a, "BARRIER_SIGNAL"),
    (0x87, "DYN_VGPR"),
    (0x8a, "BARRIER_JOIN"),
    (0x8c, "WMMA_8"),
    (0x8d, "WMMA_16"),
    (0x8e, "WMMA_32"),
    (0x8f, "WMMA_64"),
    (0x92, "VALU_DPFP"),
    (0x98, "SALU_FLOAT_3"),
    (0x99, "VALU_SCL_TRANS"),
    (0x9b, "SALU_2"),
    (0x9c, "SALU_5"),
];

const CDNA_NAMES: &[(u32, &str)] = &[
    (0, "SMEM_RD"),
    (1, "SALU_32"),
    (2, "VMEM_RD"),
    (3, "VMEM_WR"),
    (4, "FLAT_WR"),
    (5, "VALU_32"),
    (6, "LDS"),
    (7, "PC"),
    (12, "JUMP"),
    (13, "NEXT"),
    (14, "FLAT_RD"),
    (15, "OTHER_MSG"),
    (16, "SMEM_WR"),
    (17, "SALU_64"),
    (18, "VALU_64"),
    (28, "VALU_MAI"),
];

/// `(category, first value, last value, cycle count of the first value)` of an other-SIMD range.
type OtherRange = (&'static str, u32, u32, u32);
/// Op values with a fixed name.
type Names = &'static [(u32, &'static str)];

const RDNA3_OTHER: &[OtherRange] = &[
    ("LDS", 0x50, 0x54, 1),
    ("FLAT", 0x55, 0x59, 2),
    ("VMEM", 0x5a, 0x66, 1),
];
const RDNA4_OTHER: &[OtherRange] = &[
    ("LDS", 0x50, 0x54, 1),
    ("FLAT", 0x55, 0x59, 2),
    ("VMEM", 0xbc, 0xdd, 1),
];

/// The name of an instruction token's op value for a layout.
pub fn op_name(layout: Layout, op: u32) -> OpName {
    let (names, other): (Names, &[OtherRange]) = match layout {
        Layout::Rdna3 => (RDNA3_NAMES, RDNA3_OTHER),
        Layout::Rdna4 => (RDNA4_NAMES, RDNA4_OTHER),
        Layout::Cdna => (CDNA_NAMES, &[]),
    };
    if let Some((_, n)) = names.iter().find(|(v, _)| *v == op) {
        return OpName::Named(n);
    }
    for &(cat, lo, hi, base) in other {
        if (lo..=hi).contains(&op) {
            return OpName::Other(cat, op - lo + base);
        }
    }
    OpName::Unknown(op)
}

/// An op's name and what the analysis asks of it, worked out once per layout and value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OpInfo {
    pub name: OpName,
    pub known: bool,
    pub other_simd: bool,
    pub jump: bool,
    pub jump_taken: bool,
    /// Cycles the op keeps the wave busy in AMD's reading: the cycle count at the end of the
    /// op's name (`VALUB_2`, `SGMEM_RD_2`, `LDS_WR_2`, `OTHER_<cat>_<n>`), else 1.
    pub cycles: i64,
}

impl OpInfo {
    fn of(name: OpName) -> OpInfo {
        OpInfo {
            name,
            known: name.is_known(),
            other_simd: name.is_other_simd(),
            jump: name.is_jump(),
            jump_taken: name.is_jump_taken(),
            cycles: match name {
                OpName::Named(n) => n.rsplit('_').next().and_then(|n| n.parse::<i64>().ok()),
                OpName::Other(_, n) => Some(n as i64),
                OpName::Unknown(_) => None,
            }
            .unwrap_or(1),
        }
    }
}

/// [`op_name`] and its tests by table (a search of the names and a string compare per token
/// otherwise): every op value of 8 bits, the others worked out.
#[inline]
pub(crate) fn op_info(layout: Layout, op: u32) -> OpInfo {
    match op_info_ref(layout, op) {
        Some(i) => *i,
        None => OpInfo::of(op_name(layout, op)),
    }
}

/// [`op_info`] by reference for a per-token caller: from the table ([`op_info_ref`]) for an
/// op value below 256, else worked out into `spare`.
#[inline(always)]
pub(crate) fn op_info_in(layout: Layout, op: u32, spare: &mut Option<OpInfo>) -> &OpInfo {
    match op_info_ref(layout, op) {
        Some(i) => i,
        None => spare.insert(op_info(layout, op)),
    }
}

/// [`op_info`] of an op value below 256 (every op field of the RDNA layouts), by reference
/// into the table: a per-token caller reads the one field it tests instead of copying the
/// record (whose copy through memory stalled the per-packet walk).
#[inline]
pub(crate) fn op_info_ref(layout: Layout, op: u32) -> Option<&'static OpInfo> {
    static T: std::sync::LazyLock<Vec<[OpInfo; 256]>> = std::sync::LazyLock::new(|| {
        Layout::ALL
            .iter()
            .map(|&l| std::array::from_fn(|v| OpInfo::of(op_name(l, v as u32))))
            .collect()
    });
    T[layout as usize].get(op as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(op_name(Layout::Rdna3, 0x22).to_string(), "SGMEM_RD_2");
        assert_eq!(op_name(Layout::Rdna3, 0x5b).to_string(), "OTHER_VMEM_2");
        assert_eq!(op_name(Layout::Rdna3, 0x55).to_string(), "OTHER_FLAT_2");
        assert!(op_name(Layout::Rdna3, 0x50).is_other_simd());
        assert_eq!(op_name(Layout::Rdna4, 0xdd).to_string(), "OTHER_VMEM_34");
        assert!(op_name(Layout::Rdna4, 0x77).is_other_simd());
        assert_eq!(op_name(Layout::Rdna3, 0x7f), OpName::Unknown(0x7f));
        assert_eq!(op_name(Layout::Cdna, 28).to_string(), "VALU_MAI");
    }

    /// A packed op names what its layout and value name, and every op field fits it.
    #[test]
    fn token_op_names_as_op_name() {
        assert_eq!(TokenOp::NONE.name(), None);
        assert_eq!(TokenOp::default(), TokenOp::NONE);
        for layout in Layout::ALL {
            for v in 0..1u32 << TokenOp::VALUE_BITS {
                let t = TokenOp::new(layout, v);
                assert_eq!(t.raw(), Some((layout, v)));
                assert_eq!(t.name(), Some(op_name(layout, v)));
            }
            // Every op field of the layout's packets fits the packed value.
            for ty in super::super::packets::Table::for_layout(layout).types {
                for f in ty
                    .fields
                    .iter()
                    .filter(|f| f.role == super::super::Role::Op)
                {
                    assert!(
                        (f.hi - f.lo + 1) as u32 <= TokenOp::VALUE_BITS,
                        "{} op field of {} bits",
                        ty.name,
                        f.hi - f.lo + 1
                    );
                }
            }
        }
    }

    /// The table answers as the names and their tests do.
    #[test]
    fn op_info_is_op_name() {
        for layout in Layout::ALL {
            for op in 0..600u32 {
                let n = op_name(layout, op);
                let i = op_info(layout, op);
                assert_eq!(op_info_ref(layout, op).copied(), (op < 256).then_some(i));
                assert_eq!(i.name, n);
                // The count ends the displayed name, if anywhere.
                let shown = n.to_string();
                let tail = shown.rsplit('_').next().and_then(|t| t.parse::<i64>().ok());
                let unknown = matches!(n, OpName::Unknown(_));
                assert_eq!(i.cycles, if unknown { 1 } else { tail.unwrap_or(1) });
                assert_eq!(
                    (i.known, i.other_simd, i.jump, i.jump_taken),
                    (
                        n.is_known(),
                        n.is_other_simd(),
                        n.is_jump(),
                        n.is_jump_taken()
                    ),
                    "{layout:?} {op:#x}"
                );
            }
        }
    }
}
