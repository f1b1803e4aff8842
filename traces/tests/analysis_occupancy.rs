//! Theoretical occupancy against hand computations written out here, from the limits in
//! docs/kernel-analysis.md (LLVM AMDGPUBaseInfo facts): the demo kernels (capture/assets) at
//! their launch sizes, the shared captures' kernels, and VGPR-, LDS- and work-group-limited
//! variants on gfx11 (gfx1100: 1536 VGPRs; gfx1102: 1024), gfx12 and gfx950 limits.

use traces::analysis::occupancy::{theoretical, ArchLimits, KernelResources, Occupancy};
use traces::isa::CodeObject;
use traces::GfxTarget;

const GFX1102: GfxTarget = GfxTarget::new(11, 0, 2);

fn limits(t: GfxTarget) -> ArchLimits {
    ArchLimits::for_target(t).unwrap()
}

fn kernel(bytes: &[u8]) -> (KernelResources, GfxTarget) {
    let c = CodeObject::parse(bytes).unwrap();
    let k = &c.kernels[0];
    (KernelResources::from_kernel(k, c.target), c.target)
}

fn demo(name: &str) -> (KernelResources, GfxTarget) {
    let p = format!(
        "{}/../capture/assets/{name}.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    kernel(&std::fs::read(p).unwrap())
}

fn limit(o: &Occupancy, r: &str) -> u32 {
    o.limits
        .iter()
        .find(|l| l.resource == r)
        .unwrap_or_else(|| panic!("no {r} limit in {o:?}"))
        .waves_per_simd
}

fn next(o: &Occupancy, r: &str) -> String {
    o.limits
        .iter()
        .find(|l| l.resource == r)
        .and_then(|l| l.next_step.clone())
        .unwrap_or_default()
}

#[test]
fn demo_kernels_at_their_launch_sizes() {
    // vadd: 6 VGPRs used -> 1 block of 8 -> granule 24 on gfx1100: 1536 / 24 = 64 -> 16 slots.
    // No LDS. Work-group 64 = 2 waves: min(64 slots / 2, 32 barriers) = 32 groups = 64 waves
    // over 4 SIMDs = 16.
    let (r, t) = demo("vadd");
    assert_eq!(t, GfxTarget::GFX1100);
    assert_eq!((r.wave_size, r.vgprs, r.lds_bytes), (32, 8, 0));
    let o = theoretical(&r.with_workgroup_size(64), &limits(t));
    assert_eq!((limit(&o, "VGPR"), limit(&o, "work-group")), (16, 16));
    assert_eq!(o.waves_per_simd, 16);
    assert!(o.limited_by.is_empty());

    // reduce: 1028 bytes of LDS -> 3 granules of 512 = 1536: 131072 / 1536 = 85 groups of
    // 8 waves (256 work-items) -> 680 / 4 = 170 -> 16. Work-group: 64 / 8 = 8 groups -> 16.
    let (r, t) = demo("reduce");
    assert_eq!((r.vgprs, r.lds_bytes), (8, 1028));
    let o = theoretical(&r.with_workgroup_size(256), &limits(t));
    assert_eq!(
        (limit(&o, "LDS"), limit(&o, "work-group"), o.waves_per_simd),
        (16, 16, 16)
    );

    // matmul: 43 VGPRs -> 6 blocks = 48 -> 48 (granule 24): 1536 / 48 = 32 -> 16. 2048 bytes
    // of LDS: 64 groups -> 16. 16x16 = 256 work-items: 16.
    let (r, t) = demo("matmul");
    assert_eq!((r.vgprs, r.lds_bytes), (48, 2048));
    let o = theoretical(&r.with_workgroup_size(256), &limits(t));
    assert_eq!(
        (limit(&o, "VGPR"), limit(&o, "LDS"), o.waves_per_simd),
        (16, 16, 16)
    );
    // On a gfx1102 (1024 VGPRs, granule 16): 1024 / 48 = 21 -> 16 still.
    let o = theoretical(&r.with_workgroup_size(256), &limits(GFX1102));
    assert_eq!(limit(&o, "VGPR"), 16);
}

#[test]
fn shared_captures_kernels() {
    let Some(dir) = testdata::require_shared("traces") else {
        return;
    };
    let read = |p: &str| std::fs::read(dir.join(p)).unwrap();
    // gfx1100 gemm: 10 VGPRs -> 16 -> 24 (granule): 64 -> 16. 64 bytes of LDS -> 512: 256
    // one-wave groups / 4 SIMDs = 64 -> 16. Work-group 16 (metadata) = 1 wave: 64 groups -> 16.
    let (r, t) = kernel(&read("gfx1100/gemm_run_0/program0_r_32_32_16_2.elf"));
    assert_eq!((r.vgprs, r.lds_bytes, r.workgroup_size), (16, 64, Some(16)));
    let o = theoretical(&r, &limits(t));
    assert_eq!(
        (limit(&o, "VGPR"), limit(&o, "LDS"), limit(&o, "work-group")),
        (16, 16, 16)
    );
    assert_eq!(o.waves_per_simd, 16);
    // gfx1201 gemm (1.5x VGPRs too): the same numbers.
    let (r, t) = kernel(&read("gfx1200/gemm_run_0/program0_r_32_32_16_2.elf"));
    assert_eq!(t.major, 12);
    assert_eq!((r.vgprs, r.lds_bytes), (16, 64));
    assert_eq!(theoretical(&r, &limits(t)).waves_per_simd, 16);
    // gfx950 gemm: wave64, 17 VGPRs -> 3 blocks of 8 = 24: 512 / 24 = 21 -> 8 slots. 16 SGPRs
    // (<= 80: 10) -> 8. LDS 64 -> 512: 163840 / 512 = 320 groups -> 8. 1 wave per group: 32 -> 8.
    let (r, t) = kernel(&read("gfx950/gemm_run_0/program0_r_32_32_16_2.elf"));
    assert_eq!(t, GfxTarget::GFX950);
    assert_eq!((r.wave_size, r.vgprs, r.sgprs), (64, 24, Some(16)));
    let o = theoretical(&r, &limits(t));
    assert_eq!(
        (
            limit(&o, "VGPR"),
            limit(&o, "SGPR"),
            limit(&o, "LDS"),
            o.waves_per_simd
        ),
        (8, 8, 8, 8)
    );
    // sync's hand-assembled kernel: no metadata (no work-group size), 512 bytes of LDS.
    let b = read("gfx1100/sync_run_0/program0_custom_lds_sync.elf");
    let c = CodeObject::parse_with_target(&b, Some(GfxTarget::GFX1100)).unwrap();
    let r = KernelResources::from_kernel(&c.kernels[0], GfxTarget::GFX1100);
    assert_eq!((r.vgprs, r.lds_bytes, r.workgroup_size), (8, 512, None));
    let o = theoretical(&r, &limits(GfxTarget::GFX1100));
    assert_eq!((limit(&o, "LDS"), o.waves_per_simd), (16, 16));
}

#[test]
fn vgpr_limited() {
    // matmul's resources with 128 VGPRs.
    let (r, _) = demo("matmul");
    let r = KernelResources { vgprs: 128, ..r }.with_workgroup_size(256);
    // gfx1100: 128 -> 144 (granule 24): 1536 / 144 = 10. 11 waves need 1536 / 11 = 139 -> 120.
    let o = theoretical(&r, &limits(GfxTarget::GFX1100));
    assert_eq!((o.waves_per_simd, o.limited_by.clone()), (10, vec!["VGPR"]));
    assert_eq!(next(&o, "VGPR"), "120 VGPRs or fewer: 11 waves");
    // gfx1102: 1024 / 128 = 8; 9 waves: 1024 / 9 = 113 -> 112.
    let o = theoretical(&r, &limits(GFX1102));
    assert_eq!(o.waves_per_simd, 8);
    assert_eq!(next(&o, "VGPR"), "112 VGPRs or fewer: 9 waves");
    // gfx1200: as gfx1100.
    assert_eq!(
        theoretical(&r, &limits(GfxTarget::GFX1200)).waves_per_simd,
        10
    );
    // gfx950, wave64: 512 / 128 = 4; 5 waves: 512 / 5 = 102 -> 96.
    let r64 = KernelResources { wave_size: 64, ..r };
    let o = theoretical(&r64, &limits(GfxTarget::GFX950));
    assert_eq!((o.waves_per_simd, o.limited_by.clone()), (4, vec!["VGPR"]));
    assert_eq!(next(&o, "VGPR"), "96 VGPRs or fewer: 5 waves");
}

#[test]
fn lds_limited() {
    // reduce's resources with 32 KiB of LDS, 256 work-items.
    let (r, _) = demo("reduce");
    let r = KernelResources {
        lds_bytes: 32 * 1024,
        ..r
    }
    .with_workgroup_size(256);
    // gfx1100: 131072 / 32768 = 4 groups of 8 waves = 32 waves / 4 SIMDs = 8. For 9: 36 waves
    // = 5 groups: 131072 / 5 = 26214 -> 51 granules of 512 = 26112 bytes; 5 groups give
    // 40 / 4 = 10.
    let o = theoretical(&r, &limits(GfxTarget::GFX1100));
    assert_eq!((o.waves_per_simd, o.limited_by.clone()), (8, vec!["LDS"]));
    assert_eq!(
        next(&o, "LDS"),
        "26112 bytes of LDS or less per work-group: 5 work-groups per WGP, 10 waves"
    );
    assert_eq!(
        theoretical(&r, &limits(GfxTarget::GFX1200)).waves_per_simd,
        8
    );
    // gfx950, wave64: 256 work-items = 4 waves; 163840 / 32768 = 5 groups = 20 waves / 4 = 5.
    // For 6: 24 waves = 6 groups: 163840 / 6 = 27306 -> 27136.
    let r64 = KernelResources { wave_size: 64, ..r };
    let o = theoretical(&r64, &limits(GfxTarget::GFX950));
    assert_eq!((o.waves_per_simd, o.limited_by.clone()), (5, vec!["LDS"]));
    assert_eq!(
        next(&o, "LDS"),
        "27136 bytes of LDS or less per work-group: 6 work-groups per CU, 6 waves"
    );
}

#[test]
fn workgroup_limited() {
    // vadd's resources, launched with 768 work-items of wave64.
    let (r, _) = demo("vadd");
    let r = KernelResources { wave_size: 64, ..r }.with_workgroup_size(768);
    // gfx1100: 12 waves per group; 64 slots / 12 = 5 groups = 60 waves / 4 SIMDs = 15.
    // Smaller groups: 11 waves -> 5 groups, 55 -> 14; 10 -> 6, 60 -> 15; 9 -> 7, 63 -> 16.
    let o = theoretical(&r, &limits(GfxTarget::GFX1100));
    assert_eq!(
        (o.waves_per_simd, o.limited_by.clone()),
        (15, vec!["work-group"])
    );
    assert_eq!(
        next(&o, "work-group"),
        "work-groups of 9 waves (576 work-items): 16 waves"
    );
    assert_eq!(
        theoretical(&r, &limits(GfxTarget::GFX1200)).waves_per_simd,
        15
    );
    // gfx950: 32 slots / 12 = 2 groups = 24 / 4 = 6. 11 -> 2, 22 -> 6; 10 -> 3, 30 -> 8.
    let o = theoretical(&r, &limits(GfxTarget::GFX950));
    assert_eq!(
        (o.waves_per_simd, o.limited_by.clone()),
        (6, vec!["work-group"])
    );
    assert_eq!(
        next(&o, "work-group"),
        "work-groups of 10 waves (640 work-items): 8 waves"
    );
}

/// `tests/fixtures/kernels/scratch.c` compiled by clang-22 for `mcpu` (None without clang:
/// missing under CI).
fn scratch_kernel(mcpu: &str) -> Option<(KernelResources, GfxTarget)> {
    let clang = testdata::require_tool("clang-22")?;
    let src = format!(
        "{}/tests/fixtures/kernels/scratch.c",
        env!("CARGO_MANIFEST_DIR")
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("scratch.hsaco");
    let st = std::process::Command::new(clang)
        .args(["-target", "amdgcn-amd-amdhsa", "-nogpulib", "-O2"])
        .arg(format!("-mcpu={mcpu}"))
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success(), "clang-22 -mcpu={mcpu} {src}");
    Some(kernel(&std::fs::read(&out).unwrap()))
}

fn props(slots: i64, wave_bytes: Option<i64>) -> std::collections::BTreeMap<String, i64> {
    let mut m = std::collections::BTreeMap::new();
    m.insert("max_slots_scratch_cu".to_string(), slots);
    if let Some(b) = wave_bytes {
        m.insert("scratch_wave_bytes".to_string(), b);
    }
    m
}

#[test]
fn scratch_limited() {
    let Some((r, t)) = scratch_kernel("gfx1100") else {
        return;
    };
    // 96 floats indexed by a loaded value live in scratch: 388 bytes per lane, wave32, the
    // metadata's 256 work-items (8 waves).
    assert_eq!(t, GfxTarget::GFX1100);
    assert_eq!((r.wave_size, r.scratch_bytes), (32, 388));
    // Without the runtime's scratch ring in the profile, scratch is a note, not a limit.
    let o = theoretical(&r, &limits(t));
    assert!(o.limits.iter().all(|l| l.resource != "scratch"));
    assert!(o.notes.iter().any(|n| n.contains("388 bytes of scratch")));
    // wavescope's runtime: 32 slots per CU, an 8 KiB slice per wave. 388 x 32 = 12416 bytes,
    // in 256-byte units 12544 > 8192: no wave of it can run; 8192 / 32 = 256 bytes per lane fit.
    let o = theoretical(&r, &limits(t).with_device_props(&props(32, Some(8192))));
    assert_eq!(
        (limit(&o, "scratch"), o.waves_per_simd, o.limited_by.clone()),
        (0, 0, vec!["scratch"])
    );
    assert_eq!(
        next(&o, "scratch"),
        "256 bytes of scratch per lane or less (or a larger scratch slice)"
    );
    // A 16 KiB slice holds it; 32 slots per CU over its 2 SIMDs = 16: not limiting.
    let o = theoretical(&r, &limits(t).with_device_props(&props(32, Some(16384))));
    assert_eq!((limit(&o, "scratch"), o.waves_per_simd), (16, 16));
    assert!(o.limited_by.is_empty());
    // 8 slots per CU: 8 / 2 SIMDs = 4 waves per SIMD, the limit.
    let o = theoretical(&r, &limits(t).with_device_props(&props(8, Some(16384))));
    assert_eq!(
        (o.waves_per_simd, o.limited_by.clone()),
        (4, vec!["scratch"])
    );
    assert_eq!(
        next(&o, "scratch"),
        "no scratch (private arrays kept in registers): 16 waves"
    );
    // The hardware's own bound: 15 bits of 256-byte units per wave on gfx11 = 8388352 bytes,
    // 262136 per lane of wave32.
    let big = KernelResources {
        scratch_bytes: 300_000,
        ..r
    };
    let o = theoretical(&big, &limits(t));
    assert_eq!(limit(&o, "scratch"), 0);
    assert_eq!(
        next(&o, "scratch"),
        "262136 bytes of scratch per lane or less"
    );

    // gfx950, wave64: 388 x 64 = 24832 bytes, in 1 KiB units 25600 > 8192: none. With the
    // slice large enough, 16 slots per CU over 4 SIMDs = 4 of 8 waves.
    let Some((r, t)) = scratch_kernel("gfx950") else {
        return;
    };
    assert_eq!((r.wave_size, r.scratch_bytes), (64, 388));
    let o = theoretical(&r, &limits(t).with_device_props(&props(32, Some(8192))));
    assert_eq!(o.waves_per_simd, 0);
    assert_eq!(
        next(&o, "scratch"),
        "128 bytes of scratch per lane or less (or a larger scratch slice)"
    );
    let o = theoretical(&r, &limits(t).with_device_props(&props(16, Some(32768))));
    assert_eq!(
        (o.waves_per_simd, o.limited_by.clone()),
        (4, vec!["scratch"])
    );
    let o = theoretical(&r, &limits(t).with_device_props(&props(32, Some(32768))));
    assert_eq!((limit(&o, "scratch"), o.waves_per_simd), (8, 8));
}

/// Achieved occupancy from the sums the analyzer keeps as waves start and end
/// (`BlobAnalysis::residency`) against the sweep of the wave records, on every SE blob of the
/// shared captures (real streams of three architectures): the sums are kept wherever every
/// wave ended, and give the same numbers.
#[test]
fn residency_sums_of_shared_blobs_equal_the_records() {
    use traces::analysis::occupancy::{achieved_of, achieved_se, Achieved, WaveLife};
    let Some(dir) = testdata::require_shared("traces") else {
        return;
    };
    let mut kept = 0;
    for arch in std::fs::read_dir(&dir).unwrap() {
        for case in std::fs::read_dir(arch.unwrap().path()).unwrap() {
            for f in std::fs::read_dir(case.unwrap().path()).unwrap() {
                let p = f.unwrap().path();
                if p.extension().is_none_or(|e| e != "sqtt") {
                    continue;
                }
                let blob = std::fs::read(&p).unwrap();
                let Ok(a) = traces::sqtt::analyze(&blob, None) else {
                    continue;
                };
                let all_ended = !a.wave_anomalies.contains_key("start_without_end");
                assert_eq!(
                    a.residency.is_some(),
                    all_ended && !a.waves.is_empty(),
                    "{}",
                    p.display()
                );
                let (mut got, mut want) = (Achieved::default(), Achieved::default());
                achieved_of(&mut got, 7, &a);
                achieved_se(&mut want, 7, a.waves.iter().map(WaveLife::of));
                assert_eq!(got, want, "{}", p.display());
                kept += a.residency.is_some() as usize;
            }
        }
    }
    assert!(kept >= 20, "{kept} blobs with the sums kept");
}
