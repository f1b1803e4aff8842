//! The emulated cards: topology properties (7900 XTX values from kfd-interface.md §2; the RDNA4
//! and gfx950 shader-array numbers from the ProfileDeviceEvent props of the captures in
//! shared/traces/{gfx1200,gfx950}/*/meta.json), IP versions (mockgpu.md §2) and segment bases.

use runtime::regs;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmuArch {
    /// Radeon RX 7900 XTX (Navi 31), gfx1100.
    Gfx1100,
    /// RDNA4 (Navi 48) as captured in shared/traces/gfx1200: its KFD target version is 120001
    /// (gfx1201).
    Gfx1201,
    /// CDNA4 gfx950 (8 XCCs).
    Gfx950,
}

impl EmuArch {
    pub const ALL: [EmuArch; 3] = [EmuArch::Gfx1100, EmuArch::Gfx1201, EmuArch::Gfx950];

    pub fn parse(s: &str) -> Option<EmuArch> {
        match s {
            "gfx1100" => Some(EmuArch::Gfx1100),
            "gfx1200" | "gfx1201" => Some(EmuArch::Gfx1201),
            "gfx950" => Some(EmuArch::Gfx950),
            _ => None,
        }
    }

    /// `(key, value)` topology properties.
    pub fn properties(&self, render_minor: u32) -> Vec<(&'static str, u64)> {
        let common: [(&'static str, u64); 12] = [
            ("cpu_cores_count", 0),
            ("mem_banks_count", 1),
            ("caches_count", 206),
            ("io_links_count", 1),
            ("cpu_core_id_base", 0),
            ("simd_id_base", 2147488032),
            ("gds_size_in_kb", 0),
            ("num_gws", 64),
            ("vendor_id", 4098),
            ("domain", 0),
            ("hive_id", 0),
            ("num_sdma_xgmi_engines", 0),
        ];
        // (simd_count, max_waves_per_simd, lds_kb, wave_front, array_count, simd_arrays_per_engine,
        //  cu_per_simd_array, gfx_target_version, device_id, num_xcc)
        let (simd, waves, lds, wf, arrays, sape, cupsa, tv, dev, xcc) = match self {
            EmuArch::Gfx1100 => (192, 16, 64, 32, 12, 2, 8, 110000, 0x744c, 1),
            EmuArch::Gfx1201 => (128, 16, 64, 32, 8, 2, 8, 120001, 0x7550, 1),
            EmuArch::Gfx950 => (576, 8, 160, 64, 32, 1, 9, 90500, 0x75a0, 8),
        };
        let mut v: Vec<(&'static str, u64)> = common.to_vec();
        v.extend_from_slice(&[
            ("simd_count", simd),
            ("max_waves_per_simd", waves),
            ("lds_size_in_kb", lds),
            ("wave_front_size", wf),
            ("array_count", arrays),
            ("simd_arrays_per_engine", sape),
            ("cu_per_simd_array", cupsa),
            ("simd_per_cu", 2),
            ("max_slots_scratch_cu", 32),
            ("gfx_target_version", tv),
            ("device_id", dev),
            ("location_id", 34304),
            ("drm_render_minor", u64::from(render_minor)),
            ("num_sdma_engines", 2),
            ("num_sdma_queues_per_engine", 6),
            ("num_cp_queues", 8),
            ("local_mem_size", 0),
            ("num_xcc", xcc),
        ]);
        v
    }

    pub fn gc_version(&self) -> (u32, u32, u32) {
        match self {
            EmuArch::Gfx1100 => (11, 0, 0),
            EmuArch::Gfx1201 => (12, 0, 0),
            EmuArch::Gfx950 => (9, 5, 0),
        }
    }
    pub fn sdma_version(&self) -> (u32, u32, u32) {
        match self {
            EmuArch::Gfx1100 | EmuArch::Gfx1201 => (6, 0, 0),
            EmuArch::Gfx950 => (4, 4, 5),
        }
    }
    pub fn nbio_version(&self) -> (u32, u32, u32) {
        match self {
            EmuArch::Gfx1100 => (4, 3, 0),
            EmuArch::Gfx1201 => (6, 3, 1),
            EmuArch::Gfx950 => (7, 9, 0),
        }
    }
    fn major(&self) -> u32 {
        self.gc_version().0
    }
    /// Segment bases reported through IP discovery (the static navi/vega tables).
    pub fn bases(&self, ip: &str) -> Vec<u32> {
        regs::static_bases(self.major(), ip)
            .map(|s| s.to_vec())
            .unwrap_or_default()
    }
    pub fn num_se(&self) -> u32 {
        let p = self.properties(0);
        let g = |k: &str| {
            p.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| *v as u32)
                .unwrap_or(1)
        };
        g("array_count") / g("simd_arrays_per_engine").max(1)
    }
    pub fn num_xcc(&self) -> u32 {
        if *self == EmuArch::Gfx950 {
            8
        } else {
            1
        }
    }
}
