//! Byte layouts of the `.rgp` structures (rgp-format.md), defined once for reader and writer.
//! Offsets are from the start of the chunk (chunk header included) unless noted.

/// File header (56 bytes).
pub mod file {
    pub const SIZE: usize = 56;
    pub const MAGIC: usize = 0;
    pub const VERSION_MAJOR: usize = 4;
    pub const VERSION_MINOR: usize = 8;
    pub const FLAGS: usize = 12;
    pub const CHUNK_OFFSET: usize = 16;
}

/// Chunk header (16 bytes) at the start of every chunk.
pub mod chunk {
    pub const SIZE: usize = 16;
    /// u32: type [7:0], index [15:8].
    pub const ID: usize = 0;
    pub const MINOR: usize = 4;
    pub const MAJOR: usize = 6;
    pub const SIZE_IN_BYTES: usize = 8;
}

pub mod cpu_info {
    pub const SIZE: usize = 112;
    pub const VENDOR_ID: usize = 16;
    pub const PROCESSOR_BRAND: usize = 32;
    pub const TIMESTAMP_FREQ: usize = 88;
    pub const CLOCK_SPEED: usize = 96;
    pub const LOGICAL_CORES: usize = 100;
    pub const PHYSICAL_CORES: usize = 104;
    pub const RAM_MIB: usize = 108;
}

pub mod asic_info {
    pub const SIZE: usize = 768;
    pub const FLAGS: usize = 16;
    pub const TRACE_SHADER_CORE_CLOCK: usize = 24;
    pub const TRACE_MEMORY_CLOCK: usize = 32;
    pub const DEVICE_ID: usize = 40;
    pub const DEVICE_REVISION_ID: usize = 44;
    pub const VGPRS_PER_SIMD: usize = 48;
    pub const SGPRS_PER_SIMD: usize = 52;
    pub const SHADER_ENGINES: usize = 56;
    pub const CU_PER_SE: usize = 60;
    pub const SIMD_PER_CU: usize = 64;
    pub const WAVES_PER_SIMD: usize = 68;
    pub const MIN_VGPR_ALLOC: usize = 72;
    pub const VGPR_ALLOC_GRANULARITY: usize = 76;
    pub const MIN_SGPR_ALLOC: usize = 80;
    pub const SGPR_ALLOC_GRANULARITY: usize = 84;
    pub const HARDWARE_CONTEXTS: usize = 88;
    pub const GPU_TYPE: usize = 92;
    pub const GFXIP_LEVEL: usize = 96;
    pub const GPU_INDEX: usize = 100;
    pub const VRAM_SIZE: usize = 128;
    pub const VRAM_BUS_WIDTH: usize = 136;
    pub const L2_CACHE_SIZE: usize = 140;
    pub const L1_CACHE_SIZE: usize = 144;
    pub const LDS_SIZE: usize = 148;
    pub const GPU_NAME: usize = 152;
    pub const GPU_NAME_LEN: usize = 256;
    pub const ALU_PER_CLOCK: usize = 408;
    pub const PRIMS_PER_CLOCK: usize = 416;
    pub const GPU_TIMESTAMP_FREQ: usize = 424;
    pub const MAX_SHADER_CORE_CLOCK: usize = 432;
    pub const MAX_MEMORY_CLOCK: usize = 440;
    pub const MEMORY_OPS_PER_CLOCK: usize = 448;
    pub const MEMORY_CHIP_TYPE: usize = 452;
    pub const LDS_GRANULARITY: usize = 456;
    /// u16 cu_mask[32][2].
    pub const CU_MASK: usize = 460;
    pub const CU_MASK_SES: usize = 32;
    pub const CU_MASK_SAS: usize = 2;
    pub const GL1_CACHE_SIZE: usize = 748;
    pub const INSTRUCTION_CACHE_SIZE: usize = 752;
    pub const SCALAR_CACHE_SIZE: usize = 756;
    pub const MALL_CACHE_SIZE: usize = 760;
}

pub mod api_info {
    pub const SIZE: usize = 560;
    pub const API_TYPE: usize = 16;
    pub const MAJOR: usize = 20;
    pub const MINOR: usize = 22;
    pub const PROFILING_MODE: usize = 24;
    pub const INSTRUCTION_TRACE_MODE: usize = 544;
    pub const SE_MASK: usize = 552;
}

pub mod sqtt_desc {
    pub const SIZE: usize = 32;
    pub const SHADER_ENGINE_INDEX: usize = 16;
    pub const SQTT_VERSION: usize = 20;
    pub const INSTRUMENTATION_SPEC_VERSION: usize = 24;
    pub const INSTRUMENTATION_API_VERSION: usize = 26;
    pub const COMPUTE_UNIT_INDEX: usize = 28;
}

pub mod sqtt_data {
    /// Fixed part; the payload follows.
    pub const SIZE: usize = 24;
    pub const OFFSET: usize = 16;
    pub const DATA_SIZE: usize = 20;
}

/// Fixed part shared by CODE_OBJECT_DATABASE, CODE_OBJECT_LOADER_EVENTS and PSO_CORRELATION.
pub mod record_table {
    pub const SIZE: usize = 32;
    pub const OFFSET: usize = 16;
    pub const FLAGS: usize = 20;
    /// Whole chunk size (code object database) or record size (loader events, PSO).
    pub const SIZE_OR_RECORD_SIZE: usize = 24;
    pub const RECORD_COUNT: usize = 28;
}

pub mod loader_record {
    pub const SIZE: usize = 40;
    pub const EVENT_TYPE: usize = 0;
    pub const BASE_ADDRESS: usize = 8;
    pub const HASH: usize = 16;
    pub const TIME_STAMP: usize = 32;
}

pub mod pso_record {
    pub const SIZE: usize = 88;
    pub const API_PSO_HASH: usize = 0;
    pub const PIPELINE_HASH: usize = 8;
    pub const NAME: usize = 24;
    /// `char api_level_obj_name[64]`, NUL-terminated.
    pub const NAME_LEN: usize = 64;
}

pub mod queue_timings {
    pub const SIZE: usize = 32;
    pub const QUEUE_INFO_COUNT: usize = 16;
    pub const QUEUE_INFO_SIZE: usize = 20;
    pub const EVENT_COUNT: usize = 24;
    pub const EVENT_SIZE: usize = 28;
    pub const QUEUE_INFO_RECORD: usize = 24;
    pub const EVENT_RECORD: usize = 56;
    // Event record fields.
    pub const EV_TYPE: usize = 0;
    pub const EV_CB_ID: usize = 4;
    pub const EV_FRAME: usize = 8;
    pub const EV_QUEUE_INDEX: usize = 16;
    pub const EV_SUB_INDEX: usize = 20;
    pub const EV_API_ID: usize = 24;
    pub const EV_CPU_TS: usize = 32;
    pub const EV_GPU_TS0: usize = 40;
    pub const EV_GPU_TS1: usize = 48;
}

pub mod clock_calibration {
    pub const SIZE: usize = 40;
    pub const CPU_TS: usize = 16;
    pub const GPU_TS: usize = 24;
}

/// Writes into a buffer the writer sized itself (offsets are the constants above).
pub fn wr(b: &mut [u8], off: usize, bytes: &[u8]) {
    if let Some(dst) = b.get_mut(off..off + bytes.len()) {
        dst.copy_from_slice(bytes);
    }
}
pub fn wr_u16(b: &mut [u8], off: usize, v: u16) {
    wr(b, off, &v.to_le_bytes())
}
pub fn wr_u32(b: &mut [u8], off: usize, v: u32) {
    wr(b, off, &v.to_le_bytes())
}
pub fn wr_u64(b: &mut [u8], off: usize, v: u64) {
    wr(b, off, &v.to_le_bytes())
}
