//! Radeon GPU Profiler captures (`.rgp`): export from and import into the [`Profile`] model.
//!
//! Layout per `rgp-format.md`; [`layout`] holds every offset, used by both [`reader`] and
//! [`writer`].

pub mod layout;
mod reader;
mod writer;

use serde::Serialize;

pub use reader::{import, list_chunks};
pub use writer::{export, export_file, write_to, ExportOptions};

use crate::bytes::Reader;
use layout::{chunk, file};

/// `"B00P"` little endian.
pub const FILE_MAGIC: u32 = 0x5030_3042;

/// RGP chunk types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkType {
    AsicInfo,
    SqttDesc,
    SqttData,
    ApiInfo,
    Reserved,
    QueueEventTimings,
    ClockCalibration,
    CpuInfo,
    SpmDb,
    CodeObjectDatabase,
    CodeObjectLoaderEvents,
    PsoCorrelation,
    InstrumentationTable,
    DerivedSpmDb,
    Unknown(u8),
}

impl ChunkType {
    pub fn from_u8(t: u8) -> ChunkType {
        match t {
            0 => ChunkType::AsicInfo,
            1 => ChunkType::SqttDesc,
            2 => ChunkType::SqttData,
            3 => ChunkType::ApiInfo,
            4 => ChunkType::Reserved,
            5 => ChunkType::QueueEventTimings,
            6 => ChunkType::ClockCalibration,
            7 => ChunkType::CpuInfo,
            8 => ChunkType::SpmDb,
            9 => ChunkType::CodeObjectDatabase,
            10 => ChunkType::CodeObjectLoaderEvents,
            11 => ChunkType::PsoCorrelation,
            12 => ChunkType::InstrumentationTable,
            128 => ChunkType::DerivedSpmDb,
            o => ChunkType::Unknown(o),
        }
    }

    pub fn to_u8(self) -> u8 {
        match self {
            ChunkType::AsicInfo => 0,
            ChunkType::SqttDesc => 1,
            ChunkType::SqttData => 2,
            ChunkType::ApiInfo => 3,
            ChunkType::Reserved => 4,
            ChunkType::QueueEventTimings => 5,
            ChunkType::ClockCalibration => 6,
            ChunkType::CpuInfo => 7,
            ChunkType::SpmDb => 8,
            ChunkType::CodeObjectDatabase => 9,
            ChunkType::CodeObjectLoaderEvents => 10,
            ChunkType::PsoCorrelation => 11,
            ChunkType::InstrumentationTable => 12,
            ChunkType::DerivedSpmDb => 128,
            ChunkType::Unknown(t) => t,
        }
    }

    /// The names used in rgp-format.md (`ASIC_INFO`, `SQTT_DESC`, ...).
    pub fn name(self) -> String {
        match self {
            ChunkType::AsicInfo => "ASIC_INFO".into(),
            ChunkType::SqttDesc => "SQTT_DESC".into(),
            ChunkType::SqttData => "SQTT_DATA".into(),
            ChunkType::ApiInfo => "API_INFO".into(),
            ChunkType::Reserved => "RESERVED".into(),
            ChunkType::QueueEventTimings => "QUEUE_EVENT_TIMINGS".into(),
            ChunkType::ClockCalibration => "CLOCK_CALIBRATION".into(),
            ChunkType::CpuInfo => "CPU_INFO".into(),
            ChunkType::SpmDb => "SPM_DB".into(),
            ChunkType::CodeObjectDatabase => "CODE_OBJECT_DATABASE".into(),
            ChunkType::CodeObjectLoaderEvents => "CODE_OBJECT_LOADER_EVENTS".into(),
            ChunkType::PsoCorrelation => "PSO_CORRELATION".into(),
            ChunkType::InstrumentationTable => "INSTRUMENTATION_TABLE".into(),
            ChunkType::DerivedSpmDb => "DERIVED_SPM_DB".into(),
            ChunkType::Unknown(t) => format!("UNKNOWN_{t}"),
        }
    }
}

/// One chunk as found in a file (what `wavescope info` lists).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChunkInfo {
    #[serde(rename = "type")]
    pub type_name: String,
    #[serde(skip)]
    pub kind: ChunkTypeRepr,
    pub index: u8,
    pub offset: u64,
    pub version_major: u16,
    pub version_minor: u16,
    pub size: u64,
}

/// Raw chunk type byte (kept next to the name for programmatic use).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChunkTypeRepr(pub u8);

impl ChunkInfo {
    pub fn chunk_type(&self) -> ChunkType {
        ChunkType::from_u8(self.kind.0)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RgpError {
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("not an .rgp file (magic 0x{0:08x} at offset 0, expected 0x50303042)")]
    BadMagic(u32),
    #[error(".rgp truncated: {what} at offset {offset} needs {needed} bytes, file has {have}")]
    Truncated {
        what: String,
        offset: u64,
        needed: u64,
        have: u64,
    },
    #[error(".rgp chunk at offset {offset} is corrupt: {why}")]
    BadChunk { offset: u64, why: String },
    #[error("cannot export RGP: {0}")]
    Export(String),
}

/// Walks the chunk list. Every chunk must lie inside the file; an unknown type is listed, not
/// an error.
pub fn walk(data: &[u8]) -> Result<Vec<ChunkInfo>, RgpError> {
    let have = data.len() as u64;
    let rd = Reader::new(data);
    let magic = rd
        .u32_at(file::MAGIC, "magic")
        .map_err(|_| RgpError::Truncated {
            what: "file header".into(),
            offset: 0,
            needed: file::SIZE as u64,
            have,
        })?;
    if magic != FILE_MAGIC {
        return Err(RgpError::BadMagic(magic));
    }
    let first = rd
        .u32_at(file::CHUNK_OFFSET, "chunk offset")
        .map_err(|_| RgpError::Truncated {
            what: "file header".into(),
            offset: 0,
            needed: file::SIZE as u64,
            have,
        })? as u64;
    if first < 20 || first > have {
        return Err(RgpError::BadChunk {
            offset: file::CHUNK_OFFSET as u64,
            why: format!("first chunk offset {first} outside the file"),
        });
    }
    let mut out = Vec::new();
    let mut off = first;
    while off < have {
        let o = off as usize;
        if have - off < chunk::SIZE as u64 {
            return Err(RgpError::Truncated {
                what: "chunk header".into(),
                offset: off,
                needed: chunk::SIZE as u64,
                have: have - off,
            });
        }
        // The whole chunk header is in the file (checked above).
        let id = rd.u32_at(o + chunk::ID, "chunk id").unwrap_or(0);
        let minor = rd.u16_at(o + chunk::MINOR, "chunk minor").unwrap_or(0);
        let major = rd.u16_at(o + chunk::MAJOR, "chunk major").unwrap_or(0);
        let size = rd
            .i32_at(o + chunk::SIZE_IN_BYTES, "chunk size")
            .unwrap_or(0);
        let t = (id & 0xFF) as u8;
        if size < chunk::SIZE as i32 {
            return Err(RgpError::BadChunk {
                offset: off,
                why: format!("size {size} smaller than a chunk header"),
            });
        }
        let size = size as u64;
        if size > have - off {
            return Err(RgpError::Truncated {
                what: format!("{} chunk", ChunkType::from_u8(t).name()),
                offset: off,
                needed: size,
                have: have - off,
            });
        }
        out.push(ChunkInfo {
            type_name: ChunkType::from_u8(t).name(),
            kind: ChunkTypeRepr(t),
            index: ((id >> 8) & 0xFF) as u8,
            offset: off,
            version_major: major,
            version_minor: minor,
            size,
        });
        off += size;
    }
    Ok(out)
}

/// tinygrad's 64-bit code-object hash: the first 8 bytes of MD5(ELF), little endian.
pub fn code_object_hash(elf: &[u8]) -> u64 {
    use md5::{Digest, Md5};
    let d = Md5::digest(elf);
    let mut a = [0u8; 8];
    a.copy_from_slice(&d[..8]);
    u64::from_le_bytes(a)
}

/// Nominal board facts per target. KFD topology (tinygrad's device props) does not carry
/// clocks, memory or PCI ids, so ASIC_INFO takes them from the card each target ships on.
#[derive(Debug, Clone, Copy)]
pub struct AsicFacts {
    pub target_version: u32,
    pub name: &'static str,
    pub device_id: u32,
    pub revision: u32,
    pub shader_clock_hz: u64,
    pub memory_clock_hz: u64,
    pub vram_bytes: u64,
    pub vram_bus_width: u32,
    pub l2_bytes: u32,
    pub mall_bytes: u32,
    /// `ac_gfx_level`-style gfxip enum of ASIC_INFO.
    pub gfxip_level: u32,
    pub memory_chip_type: u32,
    pub vgprs_per_simd: u32,
    pub sgprs_per_simd: u32,
    /// KFD props RGP has no field for (restored on import).
    pub num_xcc: i64,
    pub max_slots_scratch_cu: i64,
    pub sqtt_version: u32,
}

pub const ASIC_TABLE: &[AsicFacts] = &[
    // Radeon RX 7900 XTX (the values rgptool hard-codes for every card).
    AsicFacts {
        target_version: 110000,
        name: "NAVI31",
        device_id: 0x744C,
        revision: 0xC8,
        shader_clock_hz: 2_482_000_000,
        memory_clock_hz: 1_249_000_000,
        vram_bytes: 24 << 30,
        vram_bus_width: 384,
        l2_bytes: 6 << 20,
        mall_bytes: 96 << 20,
        gfxip_level: 0xC,
        memory_chip_type: 0x13,
        vgprs_per_simd: 1536,
        sgprs_per_simd: 2048,
        num_xcc: 1,
        max_slots_scratch_cu: 32,
        sqtt_version: 0xB,
    },
    // Radeon 780M class APU is gfx1103; the 7600 (NAVI33) is gfx1102.
    AsicFacts {
        target_version: 110003,
        name: "PHOENIX",
        device_id: 0x1900,
        revision: 0xC1,
        shader_clock_hz: 2_700_000_000,
        memory_clock_hz: 2_800_000_000,
        vram_bytes: 2 << 30,
        vram_bus_width: 128,
        l2_bytes: 2 << 20,
        mall_bytes: 0,
        gfxip_level: 0xC,
        memory_chip_type: 0x13,
        vgprs_per_simd: 1024,
        sgprs_per_simd: 2048,
        num_xcc: 1,
        max_slots_scratch_cu: 32,
        sqtt_version: 0xB,
    },
    // Radeon RX 9060 (NAVI44).
    AsicFacts {
        target_version: 120000,
        name: "NAVI44",
        device_id: 0x7590,
        revision: 0xC0,
        shader_clock_hz: 3_130_000_000,
        memory_clock_hz: 1_250_000_000,
        vram_bytes: 16 << 30,
        vram_bus_width: 128,
        l2_bytes: 4 << 20,
        mall_bytes: 32 << 20,
        gfxip_level: 0x10,
        memory_chip_type: 0x13,
        vgprs_per_simd: 1536,
        sgprs_per_simd: 2048,
        num_xcc: 1,
        max_slots_scratch_cu: 32,
        sqtt_version: 0xC,
    },
    // Radeon RX 9070 XT / AI PRO R9700 (NAVI48); rgptool's id 0x7550.
    AsicFacts {
        target_version: 120001,
        name: "NAVI48",
        device_id: 0x7550,
        revision: 0xC0,
        shader_clock_hz: 2_970_000_000,
        memory_clock_hz: 1_258_000_000,
        vram_bytes: 16 << 30,
        vram_bus_width: 256,
        l2_bytes: 8 << 20,
        mall_bytes: 64 << 20,
        gfxip_level: 0x10,
        memory_chip_type: 0x13,
        vgprs_per_simd: 1536,
        sgprs_per_simd: 2048,
        num_xcc: 1,
        max_slots_scratch_cu: 32,
        sqtt_version: 0xC,
    },
    // Instinct MI355X (gfx950): 8 XCDs, HBM3E.
    AsicFacts {
        target_version: 90500,
        name: "MI355X",
        device_id: 0x75A3,
        revision: 0x00,
        shader_clock_hz: 2_400_000_000,
        memory_clock_hz: 2_000_000_000,
        vram_bytes: 288 << 30,
        vram_bus_width: 8192,
        l2_bytes: 4 << 20,
        mall_bytes: 256 << 20,
        gfxip_level: 5,
        memory_chip_type: 0x20,
        vgprs_per_simd: 512,
        sgprs_per_simd: 800,
        num_xcc: 8,
        max_slots_scratch_cu: 32,
        sqtt_version: 6,
    },
];

pub fn asic_facts_for_version(v: u32) -> Option<&'static AsicFacts> {
    ASIC_TABLE.iter().find(|f| f.target_version == v)
}

pub fn asic_facts_for_device_id(id: u32) -> Option<&'static AsicFacts> {
    ASIC_TABLE.iter().find(|f| f.device_id == id)
}

/// SQTT_DESC `sqtt_version` by GPU generation.
pub fn sqtt_version_for_major(major: u32) -> u32 {
    match major {
        12 => 0xC,
        11 => 0xB,
        10 => 7,
        9 => 6,
        _ => 5,
    }
}

/// ASIC_INFO `gfxip_level` by version (GFXIP_11_0 etc.).
pub fn gfxip_level_for(major: u32, minor: u32) -> u32 {
    match (major, minor) {
        (12, _) => 0x10,
        (11, 5) => 0xD,
        (11, _) => 0xC,
        (10, 3) => 9,
        (10, _) => 7,
        (9, _) => 5,
        (8, 1) => 4,
        (8, _) => 3,
        (7, _) => 2,
        _ => 1,
    }
}

/// Inverse of [`gfxip_level_for`]: (major, minor).
pub fn version_for_gfxip_level(level: u32) -> (u32, u32) {
    match level {
        0x10 => (12, 0),
        0xD => (11, 5),
        0xC => (11, 0),
        9 => (10, 3),
        7 => (10, 1),
        5 => (9, 0),
        4 => (8, 1),
        3 => (8, 0),
        2 => (7, 0),
        _ => (6, 0),
    }
}
