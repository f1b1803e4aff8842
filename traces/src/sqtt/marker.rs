//! RGP SQTT marker dwords (`rgp_sqtt_marker_*`, rgp-format.md §4.1; what tinygrad emits:
//! sqtt-format.md §1.4). The runtime writes them to SQ_THREAD_TRACE_USERDATA_2/3 before a
//! dispatch; readers find them again as [`super::UserdataWrite`]s. One layout for every writer.

pub use super::waves::{USERDATA_2, USERDATA_3};

/// Marker identifiers: bits [3:0] of a marker's first dword.
pub mod id {
    pub const EVENT: u32 = 0x0;
    pub const CB_START: u32 = 0x1;
    pub const CB_END: u32 = 0x2;
    pub const BARRIER_START: u32 = 0x3;
    pub const BARRIER_END: u32 = 0x4;
    pub const USER_EVENT: u32 = 0x5;
    pub const GENERAL_API: u32 = 0x6;
    pub const BIND_PIPELINE: u32 = 0xC;
}

/// Bits [3:0] of a first dword.
pub const ID_MASK: u32 = 0xF;
/// BIND_PIPELINE `bind_point` (bit 7): 1 compute, 0 graphics.
pub const BIND_POINT_COMPUTE: u32 = 1 << 7;
/// EVENT `has_thread_dims` (bit 31): three thread-dimension dwords follow.
pub const HAS_THREAD_DIMS: u32 = 1 << 31;

/// `rgp_sqtt_marker_pipeline_bind` for a compute pipeline, cb_id 0: d0, then `api_pso_hash`
/// low and high.
pub fn pipeline_bind_compute(api_pso_hash: u64) -> [u32; 3] {
    [
        id::BIND_PIPELINE | BIND_POINT_COMPUTE,
        api_pso_hash as u32,
        (api_pso_hash >> 32) as u32,
    ]
}

/// `rgp_sqtt_marker_event` with thread dims, as tinygrad writes it (api_type 0, cb_id 0):
/// d0, d1 (cb_id and register indices, all 0), `cmd_id`, then x, y, z.
pub fn dispatch_event(cmd_id: u32, dims: [u32; 3]) -> [u32; 6] {
    [
        id::EVENT | HAS_THREAD_DIMS,
        0,
        cmd_id,
        dims[0],
        dims[1],
        dims[2],
    ]
}

/// The identifier of a marker whose first dword is `d0`.
pub fn identifier(d0: u32) -> u32 {
    d0 & ID_MASK
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words sqtt-format.md §1.4 spells out for tinygrad's dispatch markers.
    #[test]
    fn tinygrad_dispatch_markers() {
        assert_eq!(
            pipeline_bind_compute(0x1122_3344_5566_7788),
            [0x8C, 0x5566_7788, 0x1122_3344]
        );
        assert_eq!(dispatch_event(7, [4, 2, 1]), [0x8000_0000, 0, 7, 4, 2, 1]);
        assert_eq!(identifier(0x8C), id::BIND_PIPELINE);
        assert_eq!(identifier(0x8000_0000), id::EVENT);
    }
}
