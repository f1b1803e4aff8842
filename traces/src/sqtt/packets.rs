//! SQTT packet layouts for the three stream families, in one place.
//!
//! Every packet type is described by data: the byte pattern that selects it, its size in nibbles
//! and its bit fields, in the order the reference decoder (tinygrad's `sqtt.py`) declares them.
//! The decoder, the canonical printer, wave reconstruction and the emulator's SQTT encoder all read
//! these tables, so a layout is never written down twice.
//!
//! Bit ranges are `[hi:lo]` inclusive, counted from bit 0 of the packet's first nibble (see
//! `docs/sqtt-format.md` §2).

/// What a field means to wavescope's analysis. Fields with unknown roles are `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Delta,
    Wave,
    Simd,
    /// RDNA WGP index within the shader array.
    Wgp,
    /// RDNA shader array bit (`sa`), CDNA `sh`.
    Sa,
    /// CDNA compute unit.
    Cu,
    /// Instruction op (InstOp / InstOpRDNA4 / InstOpCDNA).
    Op,
    /// Wave bitmask (IMMEDIATE_MASK, WAVERDY).
    Mask,
    /// Register address / data (REG, CDNA_REG*).
    RegAddr,
    RegData,
    /// REG `hi_byte`: bit 7 set means an SH (compute) register offset rather than an absolute address.
    RegHi,
    /// TS_DELTA_OR_MARK flags.
    Pl,
    Rt,
    /// LAYOUT_HEADER layout number.
    Layout,
    /// CDNA absolute timestamp.
    Timestamp,
    /// WAVESTART `id7` (tinygrad's name): not a wave index on hardware but per-dispatch constants
    /// and the active lanes - 1 (docs/conformance.md).
    WaveIndex,
    Other,
}

/// One named bit field of a packet.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub name: &'static str,
    pub lo: u8,
    pub hi: u8,
    pub role: Role,
}

impl Field {
    /// Extract this field from a packet's first 64 bits. Fields never reach past bit 63.
    #[inline(always)]
    pub fn get(&self, raw: u64) -> u64 {
        (raw >> self.lo) & self.mask()
    }

    /// `raw` with this field set to `v`, cut to the field's width (the other bits kept).
    pub fn set(&self, raw: u64, v: u64) -> u64 {
        (raw & !(self.mask() << self.lo)) | ((v & self.mask()) << self.lo)
    }

    pub const fn width(&self) -> u32 {
        (self.hi - self.lo + 1) as u32
    }

    /// The field's value bits, unshifted.
    #[inline(always)]
    const fn mask(&self) -> u64 {
        if self.width() >= 64 {
            u64::MAX
        } else {
            (1u64 << self.width()) - 1
        }
    }
}

/// How a packet changes the time counter beyond "add the delta field".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeRule {
    /// Add the delta field (or nothing when the type has none).
    Plain,
    /// TS_DELTA_OR_MARK: a realtime marker when `rt=1, pl=0` (adds nothing), else a long delta.
    DeltaOrMarker,
    /// TS_DELTA_SHORT: the field is stored minus a fixed offset (see [`super::DecodeOptions`]).
    Short,
    /// CDNA_MISC: the field counts units of 4 cycles.
    Times4,
    /// CDNA_TIMESTAMP: an absolute timestamp re-anchors the counter when bits [15:4] are zero.
    CdnaTimestamp,
}

/// What kind of event a packet is, independent of the layout it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Nop,
    LayoutHeader,
    TimeDelta,
    DeltaOrMarker,
    WaveStart,
    WaveEnd,
    WaveAlloc,
    WaveReady,
    Inst,
    ValuInst,
    Immediate,
    ImmediateMask,
    AluExec,
    VmemExec,
    Reg,
    Event,
    Perf,
    UtilCtr,
    Snapshot,
    WaveState,
    CdnaMisc,
    CdnaTimestamp,
    CdnaInstPc,
    CdnaUserData,
    CdnaIssue,
    /// CDNA register writes seen through the CS pipe (REG_CS / REG_CS_PRIV).
    RegCs,
}

/// The three table families. RDNA3 = layout 3 (gfx11), RDNA4 = layout 4 (gfx12), CDNA = gfx9.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Layout {
    Rdna3,
    Rdna4,
    Cdna,
}

impl Layout {
    /// Every layout, in declaration order (`layout as usize` indexes it).
    pub const ALL: [Layout; 3] = [Layout::Rdna3, Layout::Rdna4, Layout::Cdna];

    pub fn name(self) -> &'static str {
        match self {
            Layout::Rdna3 => "rdna3",
            Layout::Rdna4 => "rdna4",
            Layout::Cdna => "cdna",
        }
    }
}

/// A packet type: its selecting pattern, size and fields.
#[derive(Debug)]
pub struct PacketType {
    pub name: &'static str,
    /// The rocprof type id (RDNA) or the CDNA packet format number; the reference decoder's key.
    pub id: u8,
    /// Bits of the first byte that select this type, and the value they must have.
    pub mask: u8,
    pub value: u8,
    /// Size in nibbles: the highest bit of any field (padding included), rounded up to a nibble.
    pub nibbles: u8,
    pub kind: Kind,
    pub time: TimeRule,
    /// The delta field, if the type advances time.
    pub delta: Option<Field>,
    /// Fields in declaration order, as printed in canonical lines (no encoding, no padding).
    pub fields: &'static [Field],
}

impl PacketType {
    /// The first field with a role, if any.
    #[inline]
    pub fn field(&self, role: Role) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.role == role)
    }

    /// A field by its canonical name.
    pub fn field_named(&self, name: &str) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

const fn f(name: &'static str, hi: u8, lo: u8, role: Role) -> Field {
    Field { name, lo, hi, role }
}

const fn d(hi: u8, lo: u8) -> Field {
    f("delta", hi, lo, Role::Delta)
}

/// Nibble count from the highest defined bit (padding included).
const fn nib(max_hi: u8) -> u8 {
    (max_hi + 4) / 4
}

#[allow(clippy::too_many_arguments)]
const fn t(
    name: &'static str,
    id: u8,
    pattern_bits: u8,
    value: u8,
    max_hi: u8,
    kind: Kind,
    time: TimeRule,
    delta: Option<Field>,
    fields: &'static [Field],
) -> PacketType {
    let mask = if pattern_bits >= 8 {
        0xff
    } else {
        (1u8 << pattern_bits) - 1
    };
    PacketType {
        name,
        id,
        mask,
        value,
        nibbles: nib(max_hi),
        kind,
        time,
        delta,
        fields,
    }
}

use Kind as K;
use Role as R;
use TimeRule as T;

// ---- shared RDNA field lists --------------------------------------------------------------------

const VALUINST_F: &[Field] = &[
    d(5, 3),
    f("flag", 6, 6, R::Other),
    f("wave", 11, 7, R::Wave),
];
const EXEC_F: &[Field] = &[d(5, 4), f("src", 7, 6, R::Other)];
const IMMEDIATE_F: &[Field] = &[d(6, 4), f("wave", 11, 7, R::Wave)];
const MASK_F: &[Field] = &[d(7, 5), f("mask", 23, 8, R::Mask)];
const D10_8: &[Field] = &[d(10, 8)];
const D6_5: &[Field] = &[d(6, 5)];
const D7_5: &[Field] = &[d(7, 5)];
const D9_7: &[Field] = &[d(9, 7)];
const WAVEEND3_F: &[Field] = &[
    d(7, 5),
    f("sa", 8, 8, R::Sa),
    f("simd", 10, 9, R::Simd),
    f("wgp", 13, 11, R::Wgp),
    f("wave", 19, 15, R::Wave),
];
const WAVEEND4_F: &[Field] = &[
    d(7, 5),
    f("sa", 8, 8, R::Sa),
    f("simd", 10, 9, R::Simd),
    f("wgp", 14, 11, R::Wgp),
    f("wave", 19, 15, R::Wave),
];
const WAVESTART3_F: &[Field] = &[
    d(6, 5),
    f("sa", 7, 7, R::Sa),
    f("simd", 9, 8, R::Simd),
    f("wgp", 12, 10, R::Wgp),
    f("wave", 17, 13, R::Wave),
    f("id7", 31, 18, R::WaveIndex),
];
const WAVESTART4_F: &[Field] = &[
    d(6, 5),
    f("sa", 7, 7, R::Sa),
    f("simd", 9, 8, R::Simd),
    f("wgp", 13, 10, R::Wgp),
    f("wave", 19, 15, R::Wave),
    f("id7", 31, 20, R::WaveIndex),
];
const PERF3_F: &[Field] = &[d(7, 5), f("arg", 27, 8, R::Other)];
const PERF4_F: &[Field] = &[d(9, 7), f("arg", 31, 10, R::Other)];
const UTILCTR_F: &[Field] = &[d(8, 7), f("ctr", 47, 9, R::Other)];
const SHORT_F: &[Field] = &[d(7, 4)];
const WAVE_STATE_F: &[Field] = &[d(15, 7), f("coarse", 23, 16, R::Other)];
const EVENT_F: &[Field] = &[d(10, 8), f("event", 23, 11, R::Other)];
const EVENT_BIG_F: &[Field] = &[d(10, 8), f("event", 31, 11, R::Other)];
const REG_F: &[Field] = &[
    d(6, 4),
    f("slot", 9, 7, R::Other),
    f("hi_byte", 15, 8, R::RegHi),
    f("subop", 31, 16, R::RegAddr),
    f("val32", 63, 32, R::RegData),
];
const SNAPSHOT_F: &[Field] = &[d(9, 7), f("snap", 63, 10, R::Other)];
const MARK3_F: &[Field] = &[d(47, 12), f("pl", 8, 8, R::Pl), f("rt", 9, 9, R::Rt)];
const MARK4_F: &[Field] = &[
    d(63, 12),
    f("rt", 7, 7, R::Rt),
    f("pl", 8, 8, R::Pl),
    f("tl", 9, 9, R::Other),
];
const LAYOUT_F: &[Field] = &[
    f("layout", 12, 7, R::Layout),
    f("simd", 14, 13, R::Other),
    f("group", 17, 15, R::Other),
    f("sel_a", 31, 28, R::Other),
    f("sel_b", 36, 33, R::Other),
    f("flag4", 59, 59, R::Other),
];
const INST3_F: &[Field] = &[
    d(6, 4),
    f("flag1", 3, 3, R::Other),
    f("flag2", 7, 7, R::Other),
    f("wave", 12, 8, R::Wave),
    f("op", 19, 13, R::Op),
];
const INST4_F: &[Field] = &[
    d(5, 3),
    f("w64h", 6, 6, R::Other),
    f("wave", 11, 7, R::Wave),
    f("op", 19, 12, R::Op),
];

const fn delta_of(fields: &'static [Field]) -> Option<Field> {
    let mut i = 0;
    while i < fields.len() {
        if matches!(fields[i].role, Role::Delta) {
            return Some(fields[i]);
        }
        i += 1;
    }
    None
}

const LAYOUT_HEADER: PacketType = t(
    "LAYOUT_HEADER",
    23,
    7,
    0b0010001,
    63,
    K::LayoutHeader,
    T::Plain,
    None,
    LAYOUT_F,
);
const NOP: PacketType = t("NOP", 16, 4, 0b0000, 3, K::Nop, T::Plain, None, &[]);

macro_rules! rdna {
    ($name:literal, $id:literal, $bits:literal, $val:literal, $hi:literal, $kind:expr, $time:expr, $fields:expr) => {
        t(
            $name,
            $id,
            $bits,
            $val,
            $hi,
            $kind,
            $time,
            delta_of($fields),
            $fields,
        )
    };
}

/// Which size the reference decoder of May 2026 gives TS_DELTA_S8_W3 (72 bits), and the one
/// the hardware evidence supports on layout 3 (64 bits; see `DecodeOptions::framing`).
pub const TS_DELTA_S8_W3_NIBBLES_72: u8 = 18;
pub const TS_DELTA_S8_W3_NIBBLES_64: u8 = 16;

// Types laid out the same in both RDNA layouts.
const VALUINST_T: PacketType = rdna!(
    "VALUINST",
    1,
    3,
    0b011,
    11,
    K::ValuInst,
    T::Plain,
    VALUINST_F
);
const VMEMEXEC_T: PacketType = rdna!("VMEMEXEC", 2, 4, 0b1111, 7, K::VmemExec, T::Plain, EXEC_F);
const ALUEXEC_T: PacketType = rdna!("ALUEXEC", 3, 4, 0b1110, 7, K::AluExec, T::Plain, EXEC_F);
const IMMEDIATE_T: PacketType = rdna!(
    "IMMEDIATE",
    4,
    4,
    0b1101,
    11,
    K::Immediate,
    T::Plain,
    IMMEDIATE_F
);
const IMMEDIATE_MASK_T: PacketType = rdna!(
    "IMMEDIATE_MASK",
    5,
    5,
    0b00100,
    23,
    K::ImmediateMask,
    T::Plain,
    MASK_F
);
const WAVERDY_T: PacketType = rdna!("WAVERDY", 6, 5, 0b10100, 23, K::WaveReady, T::Plain, MASK_F);
const TS_DELTA_S8_W3_T: PacketType = rdna!(
    "TS_DELTA_S8_W3",
    7,
    7,
    0b0100001,
    71,
    K::TimeDelta,
    T::Plain,
    D10_8
);
const UTILCTR_T: PacketType = rdna!(
    "UTILCTR",
    14,
    7,
    0b0110001,
    47,
    K::UtilCtr,
    T::Plain,
    UTILCTR_F
);
const TS_DELTA_SHORT_T: PacketType = rdna!(
    "TS_DELTA_SHORT",
    15,
    4,
    0b1000,
    7,
    K::TimeDelta,
    T::Short,
    SHORT_F
);
const TS_WAVE_STATE_T: PacketType = rdna!(
    "TS_WAVE_STATE",
    17,
    7,
    0b1010001,
    23,
    K::WaveState,
    T::Plain,
    WAVE_STATE_F
);
const EVENT_T: PacketType = rdna!("EVENT", 18, 8, 0b01100001, 23, K::Event, T::Plain, EVENT_F);
const EVENT_BIG_T: PacketType = rdna!(
    "EVENT_BIG",
    19,
    8,
    0b11100001,
    31,
    K::Event,
    T::Plain,
    EVENT_BIG_F
);
const REG_T: PacketType = rdna!("REG", 20, 4, 0b1001, 63, K::Reg, T::Plain, REG_F);
const SNAPSHOT_T: PacketType = rdna!(
    "SNAPSHOT",
    21,
    7,
    0b1110001,
    63,
    K::Snapshot,
    T::Plain,
    SNAPSHOT_F
);

/// RDNA3 (layout 3) packet types in the reference decoder's key order (rocprof ids 1..=24).
pub static RDNA3: [PacketType; 24] = [
    VALUINST_T,
    VMEMEXEC_T,
    ALUEXEC_T,
    IMMEDIATE_T,
    IMMEDIATE_MASK_T,
    WAVERDY_T,
    TS_DELTA_S8_W3_T,
    rdna!(
        "WAVEEND",
        8,
        5,
        0b10101,
        19,
        K::WaveEnd,
        T::Plain,
        WAVEEND3_F
    ),
    rdna!(
        "WAVESTART",
        9,
        5,
        0b01100,
        31,
        K::WaveStart,
        T::Plain,
        WAVESTART3_F
    ),
    rdna!(
        "TS_DELTA_S5_W2",
        10,
        5,
        0b11100,
        47,
        K::TimeDelta,
        T::Plain,
        D6_5
    ),
    rdna!(
        "WAVEALLOC",
        11,
        5,
        0b00101,
        19,
        K::WaveAlloc,
        T::Plain,
        D7_5
    ),
    rdna!(
        "TS_DELTA_S5_W3",
        12,
        5,
        0b00110,
        51,
        K::TimeDelta,
        T::Plain,
        D7_5
    ),
    rdna!("PERF", 13, 5, 0b10110, 27, K::Perf, T::Plain, PERF3_F),
    UTILCTR_T,
    TS_DELTA_SHORT_T,
    NOP,
    TS_WAVE_STATE_T,
    EVENT_T,
    EVENT_BIG_T,
    REG_T,
    SNAPSHOT_T,
    rdna!(
        "TS_DELTA_OR_MARK",
        22,
        7,
        0b0000001,
        47,
        K::DeltaOrMarker,
        T::DeltaOrMarker,
        MARK3_F
    ),
    LAYOUT_HEADER,
    rdna!("INST", 24, 3, 0b010, 19, K::Inst, T::Plain, INST3_F),
];

/// RDNA4 (layout 4): RDNA3 with eight types replaced, same key order.
pub static RDNA4: [PacketType; 24] = [
    VALUINST_T,
    VMEMEXEC_T,
    ALUEXEC_T,
    IMMEDIATE_T,
    IMMEDIATE_MASK_T,
    WAVERDY_T,
    TS_DELTA_S8_W3_T,
    rdna!(
        "WAVEEND_RDNA4",
        8,
        5,
        0b10101,
        19,
        K::WaveEnd,
        T::Plain,
        WAVEEND4_F
    ),
    rdna!(
        "WAVESTART_RDNA4",
        9,
        5,
        0b01100,
        31,
        K::WaveStart,
        T::Plain,
        WAVESTART4_F
    ),
    rdna!(
        "TS_DELTA_S5_W2_RDNA4",
        10,
        5,
        0b11100,
        39,
        K::TimeDelta,
        T::Plain,
        D6_5
    ),
    rdna!(
        "WAVEALLOC_RDNA4",
        11,
        5,
        0b00101,
        23,
        K::WaveAlloc,
        T::Plain,
        D7_5
    ),
    rdna!(
        "TS_DELTA_S5_W3_RDNA4",
        12,
        5,
        0b00110,
        55,
        K::TimeDelta,
        T::Plain,
        D9_7
    ),
    rdna!("PERF_RDNA4", 13, 5, 0b10110, 31, K::Perf, T::Plain, PERF4_F),
    UTILCTR_T,
    TS_DELTA_SHORT_T,
    NOP,
    TS_WAVE_STATE_T,
    EVENT_T,
    EVENT_BIG_T,
    REG_T,
    SNAPSHOT_T,
    rdna!(
        "TS_DELTA_OR_MARK_RDNA4",
        22,
        7,
        0b0000001,
        63,
        K::DeltaOrMarker,
        T::DeltaOrMarker,
        MARK4_F
    ),
    LAYOUT_HEADER,
    rdna!("INST_RDNA4", 24, 3, 0b010, 19, K::Inst, T::Plain, INST4_F),
];

// ---- CDNA (gfx9) --------------------------------------------------------------------------------

const CDNA_WAVE_F: &[Field] = &[
    f("sh", 5, 5, R::Sa),
    f("cu", 9, 6, R::Cu),
    f("wave", 13, 10, R::Wave),
    f("simd", 15, 14, R::Simd),
];
const CDNA_REG_CS_F: &[Field] = &[
    f("pipe", 6, 5, R::Other),
    f("regaddr", 15, 9, R::RegAddr),
    f("regdata", 47, 16, R::RegData),
];

/// CDNA packet types, keyed by the low nibble (0..=15), plus LAYOUT_HEADER (key 16) whose 7-bit
/// pattern outranks CDNA_TIMESTAMP for the bytes 0x11 and 0x91.
pub static CDNA: [PacketType; 17] = [
    t(
        "CDNA_MISC",
        0,
        4,
        0,
        15,
        K::CdnaMisc,
        T::Times4,
        Some(d(11, 4)),
        &[
            d(11, 4),
            f("sh", 12, 12, R::Sa),
            f("misc_type", 15, 13, R::Other),
        ],
    ),
    t(
        "CDNA_TIMESTAMP",
        1,
        4,
        1,
        63,
        K::CdnaTimestamp,
        T::CdnaTimestamp,
        None,
        &[f("timestamp", 63, 16, R::Timestamp)],
    ),
    t(
        "CDNA_REG",
        2,
        4,
        2,
        63,
        K::Reg,
        T::Plain,
        None,
        &[
            f("pipe", 6, 5, R::Other),
            f("regaddr", 31, 16, R::RegAddr),
            f("regdata", 63, 32, R::RegData),
        ],
    ),
    t(
        "CDNA_WAVESTART",
        3,
        4,
        3,
        31,
        K::WaveStart,
        T::Plain,
        None,
        &[
            f("sh", 5, 5, R::Sa),
            f("cu", 9, 6, R::Cu),
            f("wave", 13, 10, R::Wave),
            f("simd", 15, 14, R::Simd),
            f("pipe", 17, 16, R::Other),
            f("me", 19, 18, R::Other),
            f("count", 28, 22, R::Other),
        ],
    ),
    t(
        "CDNA_WAVEALLOC",
        4,
        4,
        4,
        15,
        K::WaveAlloc,
        T::Plain,
        None,
        CDNA_WAVE_F,
    ),
    t(
        "CDNA_REG_CS",
        5,
        4,
        5,
        47,
        K::RegCs,
        T::Plain,
        None,
        CDNA_REG_CS_F,
    ),
    t(
        "CDNA_WAVEEND",
        6,
        4,
        6,
        15,
        K::WaveEnd,
        T::Plain,
        None,
        CDNA_WAVE_F,
    ),
    t("CDNA_EVENT", 7, 4, 7, 15, K::Event, T::Plain, None, &[]),
    t("CDNA_EVENT_CS", 8, 4, 8, 15, K::Event, T::Plain, None, &[]),
    t(
        "CDNA_EVENT_GFX1",
        9,
        4,
        9,
        15,
        K::Event,
        T::Plain,
        None,
        &[],
    ),
    t(
        "CDNA_INST",
        10,
        4,
        10,
        15,
        K::Inst,
        T::Plain,
        None,
        &[
            f("wave", 8, 5, R::Wave),
            f("simd", 10, 9, R::Simd),
            f("op", 15, 11, R::Op),
        ],
    ),
    t(
        "CDNA_INST_PC",
        11,
        4,
        11,
        63,
        K::CdnaInstPc,
        T::Plain,
        None,
        &[
            f("wave", 8, 5, R::Wave),
            f("simd", 10, 9, R::Simd),
            f("err", 15, 15, R::Other),
            f("pc", 63, 16, R::Other),
        ],
    ),
    t(
        "CDNA_USERDATA",
        12,
        4,
        12,
        47,
        K::CdnaUserData,
        T::Plain,
        None,
        &[
            f("sh", 5, 5, R::Sa),
            f("cu", 9, 6, R::Cu),
            f("wave", 13, 10, R::Wave),
            f("simd", 15, 14, R::Simd),
            f("data", 47, 16, R::Other),
        ],
    ),
    t(
        "CDNA_ISSUE",
        13,
        4,
        13,
        31,
        K::CdnaIssue,
        T::Plain,
        None,
        &[
            f("simd", 6, 5, R::Simd),
            f("inst0", 9, 8, R::Other),
            f("inst1", 11, 10, R::Other),
            f("inst2", 13, 12, R::Other),
            f("inst3", 15, 14, R::Other),
            f("inst4", 17, 16, R::Other),
            f("inst5", 19, 18, R::Other),
            f("inst6", 21, 20, R::Other),
            f("inst7", 23, 22, R::Other),
            f("inst8", 25, 24, R::Other),
            f("inst9", 27, 26, R::Other),
        ],
    ),
    t(
        "CDNA_PERF",
        14,
        4,
        14,
        63,
        K::Perf,
        T::Plain,
        None,
        &[
            f("sh", 5, 5, R::Sa),
            f("cu", 9, 6, R::Cu),
            f("cntr_bank", 11, 10, R::Other),
            f("cntr0", 24, 12, R::Other),
            f("cntr1", 37, 25, R::Other),
            f("cntr2", 50, 38, R::Other),
            f("cntr3", 63, 51, R::Other),
        ],
    ),
    t(
        "CDNA_REG_CS_PRIV",
        15,
        4,
        15,
        47,
        K::RegCs,
        T::Plain,
        None,
        CDNA_REG_CS_F,
    ),
    LAYOUT_HEADER,
];

/// Key of the fallback type for bytes no pattern matches (NOP on RDNA; CDNA's patterns cover
/// every byte, and the reference's fallback key 16 is LAYOUT_HEADER there).
const FALLBACK_ID: u8 = 16;

/// How the decoder's hot loop treats a packet's time (a compact [`TimeRule`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    Plain,
    Marker,
    Short,
    Times4,
    CdnaTimestamp,
    LayoutHeader,
}

/// Everything the decoder needs about the packet a first byte selects, laid out so the hot loop
/// computes the time as `((raw >> delta_lo) & delta_mask) + add` without branching on the type
/// and decides with one test of `flags` whether the packet needs anything else. 32 bytes.
#[derive(Debug, Clone, Copy)]
pub struct Info {
    pub ty: &'static PacketType,
    /// Mask of the delta field in place after shifting by `delta_lo` (0: no delta). CDNA_MISC
    /// counts units of 4 cycles: its field is shifted down two bits less and masked two bits
    /// higher, which multiplies it by 4.
    pub delta_mask: u64,
    /// Added to the delta: TS_DELTA_SHORT's offset at its default of 4 (the fast path is not
    /// used with another offset). 64 bits wide so that it is added straight from the table.
    pub add: u64,
    pub delta_lo: u8,
    /// Index of `ty` in the table's `types`.
    pub index: u8,
    pub nibbles: u8,
    /// TS_DELTA_OR_MARK: bit positions of `rt` and `pl`.
    pub rt_bit: u8,
    pub pl_bit: u8,
    pub rule: Rule,
    /// Zero for a packet that only adds its delta (the common case), else the `FLAG_*` bits
    /// saying what else it needs.
    pub flags: u8,
}

/// [`Info::flags`]: a TS_DELTA_OR_MARK that may be a realtime marker.
pub const FLAG_MARKER: u8 = 1;
/// [`Info::flags`]: a CDNA timestamp.
pub const FLAG_CDNA_TIMESTAMP: u8 = 2;
/// [`Info::flags`]: a packet for the decoder's general path (a layout header or a packet longer
/// than 16 nibbles).
pub const FLAG_SPECIAL: u8 = 4;
/// [`Info::flags`]: a zero first nibble on RDNA, the start of a run of one-nibble NOPs.
pub const FLAG_NOP_RUN: u8 = 8;

/// TS_DELTA_SHORT's offset baked into the tables' fast path.
pub const DEFAULT_SHORT_OFFSET: u8 = 4;

const fn info_of(index: usize, ty: &'static PacketType) -> Info {
    let rule = match ty.time {
        TimeRule::Plain => {
            if matches!(ty.kind, Kind::LayoutHeader) {
                Rule::LayoutHeader
            } else {
                Rule::Plain
            }
        }
        TimeRule::DeltaOrMarker => Rule::Marker,
        TimeRule::Short => Rule::Short,
        TimeRule::Times4 => Rule::Times4,
        TimeRule::CdnaTimestamp => Rule::CdnaTimestamp,
    };
    let (delta_lo, delta_mask) = match ty.delta {
        Some(f) => {
            let mask = (1u64 << (f.hi - f.lo + 1)) - 1;
            if matches!(rule, Rule::Times4) {
                (f.lo - 2, mask << 2)
            } else {
                (f.lo, mask)
            }
        }
        None => (0, 0),
    };
    let (mut rt_bit, mut pl_bit) = (0u8, 0u8);
    let mut i = 0;
    while i < ty.fields.len() {
        match ty.fields[i].role {
            Role::Rt => rt_bit = ty.fields[i].lo,
            Role::Pl => pl_bit = ty.fields[i].lo,
            _ => {}
        }
        i += 1;
    }
    let special = matches!(rule, Rule::LayoutHeader) || ty.nibbles > 16;
    Info {
        ty,
        delta_mask,
        delta_lo,
        add: if matches!(rule, Rule::Short) {
            DEFAULT_SHORT_OFFSET as u64
        } else {
            0
        },
        index: index as u8,
        nibbles: ty.nibbles,
        rt_bit,
        pl_bit,
        rule,
        flags: match rule {
            Rule::Marker => FLAG_MARKER,
            Rule::CdnaTimestamp => FLAG_CDNA_TIMESTAMP,
            _ => 0,
        } | if special { FLAG_SPECIAL } else { 0 },
    }
}

/// CDNA_MISC (every byte with a zero low nibble on CDNA, about 85% of CDNA packets) as
/// constants: the decoder's fast path decodes it without a table lookup, so that the position
/// of the next packet does not wait for one (the branch on the nibble is predicted instead).
pub const CDNA_MISC_INFO: Info = info_of(0, &CDNA[0]);

/// The same for RDNA3 and RDNA4: for each value of a packet's low 5 bits, the type, size and
/// time rule shared by every byte with those bits, when those bytes are of one type that only
/// adds a delta (None otherwise).
pub const RDNA3_BY_LOW5: [Option<Info>; 32] = by_low5(&build(Layout::Rdna3, &RDNA3));
pub const RDNA4_BY_LOW5: [Option<Info>; 32] = by_low5(&build(Layout::Rdna4, &RDNA4));

const fn by_low5(table: &Table) -> [Option<Info>; 32] {
    let mut out = [None; 32];
    let mut n = 0;
    while n < 32 {
        let first = table.info[n];
        let mut same = true;
        let mut h = 0;
        while h < 8 {
            let i = table.info[h << 5 | n];
            same &= i.flags == 0
                && i.index == first.index
                && i.nibbles == first.nibbles
                && i.delta_lo == first.delta_lo
                && i.delta_mask == first.delta_mask
                && i.add == first.add;
            h += 1;
        }
        if same {
            out[n] = Some(first);
        }
        n += 1;
    }
    out
}

/// A byte -> type dispatch table for one family.
pub struct Table {
    pub layout: Layout,
    pub types: &'static [PacketType],
    /// Index into `types` for each value of a packet's first byte.
    pub by_byte: [u8; 256],
    /// Decode information for each value of a packet's first byte.
    pub info: [Info; 256],
}

/// Build the dispatch table as the reference decoder does: among the types whose pattern
/// matches a byte, the one with the most pattern bits wins; ties go to the earlier key, except
/// that the fallback key loses ties.
const fn build(layout: Layout, types: &'static [PacketType]) -> Table {
    let mut by_byte = [0u8; 256];
    let mut fallback = 0usize;
    let mut i = 0;
    while i < types.len() {
        if types[i].id == FALLBACK_ID {
            fallback = i;
        }
        i += 1;
    }
    let mut b = 0usize;
    while b < 256 {
        let mut best: i32 = -1;
        let mut best_bits = 0u32;
        let mut best_is_fallback = true;
        let mut i = 0;
        while i < types.len() {
            let ty = &types[i];
            if (b as u8) & ty.mask == ty.value {
                let bits = ty.mask.count_ones();
                let is_fb = ty.id == FALLBACK_ID;
                let better = best < 0
                    || bits > best_bits
                    || (bits == best_bits && best_is_fallback && !is_fb);
                if better {
                    best = i as i32;
                    best_bits = bits;
                    best_is_fallback = is_fb;
                }
            }
            i += 1;
        }
        by_byte[b] = if best < 0 { fallback as u8 } else { best as u8 };
        b += 1;
    }
    let mut info = [info_of(0, &types[0]); 256];
    let mut b = 0usize;
    while b < 256 {
        let i = by_byte[b] as usize;
        info[b] = info_of(i, &types[i]);
        // RDNA: a zero nibble is a one-nibble NOP (on CDNA it starts a CDNA_MISC packet).
        if !matches!(layout, Layout::Cdna) && b & 0xf == 0 {
            info[b].flags |= FLAG_NOP_RUN;
        }
        b += 1;
    }
    Table {
        layout,
        types,
        by_byte,
        info,
    }
}

pub static RDNA3_TABLE: Table = build(Layout::Rdna3, &RDNA3);
pub static RDNA4_TABLE: Table = build(Layout::Rdna4, &RDNA4);
pub static CDNA_TABLE: Table = build(Layout::Cdna, &CDNA);

impl Table {
    pub fn for_layout(layout: Layout) -> &'static Table {
        match layout {
            Layout::Rdna3 => &RDNA3_TABLE,
            Layout::Rdna4 => &RDNA4_TABLE,
            Layout::Cdna => &CDNA_TABLE,
        }
    }

    #[inline(always)]
    pub fn lookup(&self, byte: u8) -> &'static PacketType {
        &self.types[self.by_byte[byte as usize] as usize]
    }

    /// A type by its canonical name (for the encoder and tests).
    pub fn by_name(&self, name: &str) -> Option<&'static PacketType> {
        self.types.iter().find(|t| t.name == name)
    }
}

/// Where one field of a packet type sits: its value is `(raw >> lo) & mask`; `mask` is 0 when
/// the type has no such field (its value reads as 0, as `Packet::get(..).unwrap_or(0)` did).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bits {
    pub lo: u8,
    pub mask: u64,
}

impl Bits {
    fn of(f: Option<&Field>) -> Bits {
        match f {
            Some(f) if f.width() >= 64 => Bits {
                lo: f.lo,
                mask: u64::MAX,
            },
            Some(f) => Bits {
                lo: f.lo,
                mask: (1u64 << f.width()) - 1,
            },
            None => Bits::default(),
        }
    }

    #[inline(always)]
    pub fn get(self, raw: u64) -> u64 {
        (raw >> self.lo) & self.mask
    }

    /// Whether the type has the field.
    #[inline(always)]
    pub fn present(self) -> bool {
        self.mask != 0
    }

    /// The value, when the type has the field.
    #[inline(always)]
    pub fn opt(self, raw: u64) -> Option<u64> {
        self.present().then(|| self.get(raw))
    }
}

/// The fields the analysis reads from a packet type, resolved once per type: the analysis
/// reads them on most packets it looks at, where a search of the type's fields by role would
/// cost more than the rest of the packet.
#[derive(Debug, Clone, Copy, Default)]
pub struct Places {
    pub wave: Bits,
    pub simd: Bits,
    pub sa: Bits,
    pub cu: Bits,
    pub wgp: Bits,
    /// RDNA: where the SA bit goes in a wave's `cu` (just above the WGP field).
    pub sa_shift: u8,
    pub op: Bits,
    pub mask: Bits,
    /// RDNA WAVESTART `id7`, CDNA WAVESTART `count`.
    pub index: Bits,
    pub count: Bits,
    pub reg_addr: Bits,
    pub reg_data: Bits,
    pub reg_hi: Bits,
    pub delta: Bits,
    pub rt: Bits,
    pub pl: Bits,
    /// The raw bits [`Places::on_unit_zero`] tests: those of the fields [`Places::cu`] (for
    /// the table's layout) and `simd` read, as far as their values reach.
    pub unit: u64,
}

impl Places {
    fn of(t: &PacketType, layout: Layout) -> Places {
        let r = |role| Bits::of(t.field(role));
        let mut p = Places {
            wave: r(Role::Wave),
            simd: r(Role::Simd),
            sa: r(Role::Sa),
            cu: r(Role::Cu),
            wgp: r(Role::Wgp),
            sa_shift: t.field(Role::Wgp).map_or(3, |f| f.width() as u8),
            op: r(Role::Op),
            mask: r(Role::Mask),
            index: r(Role::WaveIndex),
            count: Bits::of(t.field_named("count")),
            reg_addr: r(Role::RegAddr),
            reg_data: r(Role::RegData),
            reg_hi: r(Role::RegHi),
            delta: r(Role::Delta),
            rt: r(Role::Rt),
            pl: r(Role::Pl),
            unit: 0,
        };
        // A field's value bits `keep` as raw bits (`get` reads raw bit `lo + k` as bit k).
        let raw_bits = |b: Bits, keep: u64| (b.mask & keep).checked_shl(b.lo as u32).unwrap_or(0);
        // `cu` is a u16: only the value bits that reach it count.
        let cu = match layout {
            Layout::Cdna => raw_bits(p.cu, 0xffff),
            _ => {
                raw_bits(p.wgp, 0xffff)
                    | raw_bits(p.sa, 0xffffu64.checked_shr(p.sa_shift as u32).unwrap_or(0))
            }
        };
        p.unit = cu | raw_bits(p.simd, u64::MAX);
        p
    }

    /// Whether the packet is of CU 0 and SIMD 0 (a type without those fields is): what
    /// `cu(layout, raw) == 0 && simd.get(raw) == 0` says for the table's layout, by one mask.
    #[inline(always)]
    pub fn on_unit_zero(&self, raw: u64) -> bool {
        raw & self.unit == 0
    }

    /// The compute unit of a wave packet (see `Packet::cu`).
    #[inline(always)]
    pub fn cu(&self, layout: Layout, raw: u64) -> u16 {
        match layout {
            Layout::Cdna => self.cu.get(raw) as u16,
            _ => self.wgp.get(raw) as u16 | (self.sa.get(raw) as u16) << self.sa_shift,
        }
    }

    /// A TS_DELTA_OR_MARK packet that carries the realtime clock (`rt=1, pl=0`).
    #[inline(always)]
    pub fn is_marker(&self, raw: u64) -> bool {
        self.rt.get(raw) == 1 && self.pl.get(raw) == 0
    }
}

/// Every type's [`Places`] by layout and index in its table (`Packet::index`); 32 per layout.
pub type PlacesTable = [[Places; 32]; 3];

/// The [`PlacesTable`], built once.
pub fn places() -> &'static PlacesTable {
    static P: std::sync::LazyLock<PlacesTable> = std::sync::LazyLock::new(|| {
        let mut t = [[Places::default(); 32]; 3];
        for layout in Layout::ALL {
            for (i, ty) in Table::for_layout(layout).types.iter().enumerate() {
                t[layout as usize][i] = Places::of(ty, layout);
            }
        }
        t
    });
    &P
}

/// Every packet type of every family, for lookups by name.
pub fn all_types() -> impl Iterator<Item = &'static PacketType> {
    RDNA3.iter().chain(RDNA4.iter()).chain(CDNA.iter())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The unit mask says what the CU and SIMD fields say, for every type of every layout, on
    /// random raw values and on each single bit.
    #[test]
    fn unit_mask_is_cu_and_simd_zero() {
        let mut next = crate::analysis::test_rng(0xd1b5_4a32_d192_ed03);
        let t = places();
        for layout in Layout::ALL {
            for (i, pl) in t[layout as usize].iter().enumerate() {
                let raws = (0..64)
                    .map(|b| 1u64 << b)
                    .chain((0..2000).map(|_| next(u64::MAX) & next(u64::MAX)))
                    .chain([0, u64::MAX]);
                for raw in raws {
                    let want = pl.cu(layout, raw) == 0 && pl.simd.get(raw) == 0;
                    assert_eq!(
                        pl.on_unit_zero(raw),
                        want,
                        "{layout:?} type {i} raw {raw:#x}"
                    );
                }
            }
        }
    }

    /// The places table holds every type, and reads each role's field as the search by role
    /// does, on every bit pattern's low and high bits.
    #[test]
    fn places_read_what_the_fields_say() {
        let all = places();
        for layout in Layout::ALL {
            let types = Table::for_layout(layout).types;
            assert!(types.len() <= 32, "{layout:?}: {} types", types.len());
            // The analyzer keeps sets of kinds as bits of a u32.
            for ty in types {
                assert!((ty.kind as u32) < 32, "{}: {:?}", ty.name, ty.kind);
            }
            for (i, ty) in types.iter().enumerate() {
                let pl = &all[layout as usize][i];
                for raw in [0u64, u64::MAX, 0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210] {
                    let want = |role| ty.field(role).map(|f: &Field| f.get(raw));
                    assert_eq!(pl.wave.opt(raw), want(Role::Wave), "{}", ty.name);
                    assert_eq!(pl.simd.opt(raw), want(Role::Simd), "{}", ty.name);
                    assert_eq!(pl.sa.opt(raw), want(Role::Sa), "{}", ty.name);
                    assert_eq!(pl.cu.opt(raw), want(Role::Cu), "{}", ty.name);
                    assert_eq!(pl.wgp.opt(raw), want(Role::Wgp), "{}", ty.name);
                    assert_eq!(pl.op.opt(raw), want(Role::Op), "{}", ty.name);
                    assert_eq!(pl.mask.opt(raw), want(Role::Mask), "{}", ty.name);
                    assert_eq!(pl.index.opt(raw), want(Role::WaveIndex), "{}", ty.name);
                    assert_eq!(pl.reg_addr.opt(raw), want(Role::RegAddr), "{}", ty.name);
                    assert_eq!(pl.reg_data.opt(raw), want(Role::RegData), "{}", ty.name);
                    assert_eq!(pl.reg_hi.opt(raw), want(Role::RegHi), "{}", ty.name);
                    assert_eq!(
                        pl.count.opt(raw),
                        ty.field_named("count").map(|f| f.get(raw)),
                        "{}",
                        ty.name
                    );
                }
            }
        }
    }

    #[test]
    fn sizes_follow_the_highest_bit() {
        let s = |t: &Table, n: &str| t.by_name(n).unwrap().nibbles;
        assert_eq!(s(&RDNA3_TABLE, "NOP"), 1);
        assert_eq!(s(&RDNA3_TABLE, "VALUINST"), 3);
        assert_eq!(s(&RDNA3_TABLE, "INST"), 5);
        assert_eq!(s(&RDNA3_TABLE, "WAVESTART"), 8);
        assert_eq!(s(&RDNA3_TABLE, "TS_DELTA_OR_MARK"), 12);
        assert_eq!(s(&RDNA3_TABLE, "TS_DELTA_S5_W3"), 13);
        assert_eq!(s(&RDNA3_TABLE, "REG"), 16);
        assert_eq!(s(&RDNA4_TABLE, "TS_DELTA_OR_MARK_RDNA4"), 16);
        assert_eq!(s(&RDNA4_TABLE, "TS_DELTA_S5_W2_RDNA4"), 10);
        assert_eq!(s(&CDNA_TABLE, "CDNA_MISC"), 4);
        assert_eq!(s(&CDNA_TABLE, "CDNA_REG_CS"), 12);
    }

    #[test]
    fn rdna_dispatch_matches_the_spec_table() {
        // Bytes that match no pattern: the 16 with low nibble 7, plus 0x41 and 0xC1 (spec §2.2).
        let nops: Vec<usize> = (0..256)
            .filter(|&b| RDNA3_TABLE.lookup(b as u8).name == "NOP")
            .collect();
        let expected: Vec<usize> = (0..256)
            .filter(|b| b & 0xf == 0 || b & 0xf == 7 || *b == 0x41 || *b == 0xc1)
            .collect();
        assert_eq!(nops, expected);
        assert_eq!(RDNA3_TABLE.lookup(0x11).name, "LAYOUT_HEADER");
        assert_eq!(RDNA3_TABLE.lookup(0x61).name, "EVENT");
        assert_eq!(RDNA3_TABLE.lookup(0xe1).name, "EVENT_BIG");
        assert_eq!(RDNA3_TABLE.lookup(0x0c).name, "WAVESTART");
        assert_eq!(RDNA3_TABLE.lookup(0x1c).name, "TS_DELTA_S5_W2");
        assert_eq!(RDNA4_TABLE.lookup(0x15).name, "WAVEEND_RDNA4");
        // No byte matches two RDNA patterns of equal specificity.
        for table in [&RDNA3_TABLE, &RDNA4_TABLE] {
            for b in 0..=255u8 {
                let best = table.lookup(b);
                let ties = table
                    .types
                    .iter()
                    .filter(|t| {
                        b & t.mask == t.value && t.mask.count_ones() == best.mask.count_ones()
                    })
                    .count();
                assert!(best.name == "NOP" || ties == 1, "byte {b:#x}");
            }
        }
    }

    #[test]
    fn fast_path_flags() {
        // The decoder's hot loop indexes 32-byte entries.
        assert_eq!(std::mem::size_of::<Info>(), 32);
        for table in [&RDNA3_TABLE, &RDNA4_TABLE, &CDNA_TABLE] {
            for b in 0..=255u8 {
                let info = &table.info[b as usize];
                let ty = info.ty;
                assert!(std::ptr::eq(ty, table.lookup(b)));
                let nop_run = table.layout != Layout::Cdna && b & 0xf == 0;
                assert_eq!(info.flags & FLAG_NOP_RUN != 0, nop_run, "byte {b:#x}");
                if nop_run {
                    // A zero nibble: a one-nibble NOP that adds nothing and needs nothing else.
                    assert_eq!(
                        (ty.kind, ty.nibbles, info.flags),
                        (Kind::Nop, 1, FLAG_NOP_RUN)
                    );
                    assert_eq!((info.delta_mask, info.add), (0, 0));
                }
                let special = ty.kind == Kind::LayoutHeader || ty.nibbles > 16;
                assert_eq!(info.flags & FLAG_SPECIAL != 0, special, "byte {b:#x}");
                assert_eq!(
                    info.flags & FLAG_MARKER != 0,
                    ty.time == TimeRule::DeltaOrMarker
                );
                assert_eq!(
                    info.flags & FLAG_CDNA_TIMESTAMP != 0,
                    ty.time == TimeRule::CdnaTimestamp
                );
                if info.flags == 0 {
                    // Only a delta: the rules the flags leave out add the field (plus the
                    // default TS_DELTA_SHORT offset).
                    assert!(matches!(
                        ty.time,
                        TimeRule::Plain | TimeRule::Short | TimeRule::Times4
                    ));
                }
            }
        }
    }

    #[test]
    fn nibble_constants_are_the_table_entries() {
        let fixed = |c: Info| (c.nibbles, c.delta_lo, c.delta_mask, c.add, c.flags);
        for b in (0..=255u8).filter(|b| b & 0xf == 0) {
            let i = CDNA_TABLE.info[b as usize];
            assert_eq!(i.ty.name, "CDNA_MISC");
            assert_eq!(fixed(i), fixed(CDNA_MISC_INFO));
            assert_eq!(i.index, CDNA_MISC_INFO.index);
            assert!(std::ptr::eq(i.ty, CDNA_MISC_INFO.ty));
        }
        // The low 5 bits the decoder's fast path decodes from constants (its `known!` lists).
        for (table, by_low5, list) in [
            (&RDNA3_TABLE, RDNA3_BY_LOW5, &RDNA3_KNOWN_LOW5[..]),
            (&RDNA4_TABLE, RDNA4_BY_LOW5, &RDNA4_KNOWN_LOW5[..]),
        ] {
            let known: Vec<usize> = (0..32).filter(|&n| by_low5[n].is_some()).collect();
            assert_eq!(known, list, "{:?}", table.layout);
            for b in 0..=255u8 {
                if let Some(c) = by_low5[(b & 0x1f) as usize] {
                    let i = table.info[b as usize];
                    assert_eq!(fixed(i), fixed(c), "byte {b:#x}");
                    // The decoder takes the type from the constants too.
                    assert_eq!(i.index, c.index, "byte {b:#x}");
                    assert!(std::ptr::eq(i.ty, c.ty), "byte {b:#x}");
                }
            }
        }
    }

    const RDNA3_KNOWN_LOW5: [usize; 28] = [
        2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28,
        29, 30, 31,
    ];
    const RDNA4_KNOWN_LOW5: [usize; 28] = RDNA3_KNOWN_LOW5;

    #[test]
    fn cdna_dispatch_is_the_low_nibble_except_layout_header() {
        for b in 0..=255u8 {
            let ty = CDNA_TABLE.lookup(b);
            if b & 0x7f == 0x11 {
                assert_eq!(ty.name, "LAYOUT_HEADER");
            } else {
                assert_eq!(ty.id, b & 0xf, "byte {b:#x}");
            }
        }
    }
}
