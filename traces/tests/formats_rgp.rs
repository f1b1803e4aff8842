//! `.rgp` export against tinygrad's rgptool output in reference-rgp/, and import round trips.

mod formats_common;
use formats_common::*;

use std::collections::BTreeSet;
use std::sync::Arc;
use traces::model::BlobStore;
use traces::open::open_path;
use traces::rgp::{self, layout::asic_info as A, ChunkInfo, ChunkType};

/// ASIC_INFO fields by offset range, to name the differences.
const ASIC_FIELDS: &[(usize, usize, &str)] = &[
    (A::FLAGS, 8, "flags"),
    (A::TRACE_SHADER_CORE_CLOCK, 8, "trace_shader_core_clock"),
    (A::TRACE_MEMORY_CLOCK, 8, "trace_memory_clock"),
    (A::DEVICE_ID, 4, "device_id"),
    (A::DEVICE_REVISION_ID, 4, "device_revision_id"),
    (A::VGPRS_PER_SIMD, 4, "vgprs_per_simd"),
    (A::SGPRS_PER_SIMD, 4, "sgprs_per_simd"),
    (A::SHADER_ENGINES, 4, "shader_engines"),
    (A::CU_PER_SE, 4, "compute_unit_per_shader_engine"),
    (A::SIMD_PER_CU, 4, "simd_per_compute_unit"),
    (A::WAVES_PER_SIMD, 4, "wavefronts_per_simd"),
    (A::MIN_VGPR_ALLOC, 16, "alloc granularities"),
    (A::HARDWARE_CONTEXTS, 4, "hardware_contexts"),
    (A::GPU_TYPE, 4, "gpu_type"),
    (A::GFXIP_LEVEL, 4, "gfxip_level"),
    (A::VRAM_SIZE, 8, "vram_size"),
    (A::VRAM_BUS_WIDTH, 4, "vram_bus_width"),
    (A::L2_CACHE_SIZE, 4, "l2_cache_size"),
    (A::L1_CACHE_SIZE, 4, "l1_cache_size"),
    (A::LDS_SIZE, 4, "lds_size"),
    (A::GPU_NAME, 256, "gpu_name"),
    (A::ALU_PER_CLOCK, 16, "per-clock rates"),
    (A::GPU_TIMESTAMP_FREQ, 8, "gpu_timestamp_frequency"),
    (A::MAX_SHADER_CORE_CLOCK, 8, "max_shader_core_clock"),
    (A::MAX_MEMORY_CLOCK, 8, "max_memory_clock"),
    (A::MEMORY_OPS_PER_CLOCK, 4, "memory_ops_per_clock"),
    (A::MEMORY_CHIP_TYPE, 4, "memory_chip_type"),
    (A::LDS_GRANULARITY, 4, "lds_granularity"),
    (A::CU_MASK, 128, "cu_mask"),
    (A::GL1_CACHE_SIZE, 16, "cache sizes"),
];

fn asic_diffs(a: &[u8], b: &[u8]) -> BTreeSet<&'static str> {
    let mut out = BTreeSet::new();
    for i in 0..a.len().max(b.len()) {
        if a.get(i) != b.get(i) {
            let name = ASIC_FIELDS
                .iter()
                .find(|(o, n, _)| i >= *o && i < o + n)
                .map_or("<unnamed>", |f| f.2);
            out.insert(name);
        }
    }
    out
}

fn chunk_bytes<'a>(data: &'a [u8], c: &ChunkInfo) -> &'a [u8] {
    &data[c.offset as usize..(c.offset + c.size) as usize]
}

#[test]
fn export_matches_rgptool_references() {
    let refs = shared().join("reference-rgp");
    let mut checked = 0;
    for entry in std::fs::read_dir(&refs).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
        let (arch, case) = stem.split_once('_').unwrap();
        let pkl = shared()
            .join("traces")
            .join(arch)
            .join(case)
            .join("profile.pkl");
        if !pkl.exists() {
            continue;
        }
        let reference = std::fs::read(&path).unwrap();
        let (_, p) = open_path(&pkl).unwrap();
        let ours = rgp::export(&p, &Default::default()).unwrap();
        let rc = rgp::list_chunks(&reference).unwrap();
        let oc = rgp::list_chunks(&ours).unwrap();

        // Same file header (magic, version 1.5, flags, chunk offset, zero time).
        assert_eq!(&ours[..56], &reference[..56], "{stem}: file header");
        // Same chunk sequence, versions and sizes; ours appends QUEUE_EVENT_TIMINGS and
        // CLOCK_CALIBRATION because the pickle has kernel timestamps and tdiff (the issue asks
        // for them "where the data exists"; rgptool writes neither).
        assert_eq!(oc.len(), rc.len() + 2, "{stem}");
        for (o, r) in oc.iter().zip(&rc) {
            assert_eq!(
                (
                    &o.type_name,
                    o.index,
                    o.version_major,
                    o.version_minor,
                    o.size,
                    o.offset
                ),
                (
                    &r.type_name,
                    r.index,
                    r.version_major,
                    r.version_minor,
                    r.size,
                    r.offset
                ),
                "{stem}"
            );
        }
        assert_eq!(oc[rc.len()].chunk_type(), ChunkType::QueueEventTimings);
        assert_eq!(oc[rc.len() + 1].chunk_type(), ChunkType::ClockCalibration);

        for (o, r) in oc.iter().zip(&rc) {
            let (ob, rb) = (chunk_bytes(&ours, o), chunk_bytes(&reference, r));
            if o.chunk_type() != ChunkType::AsicInfo {
                // CPU_INFO, API_INFO, SQTT_DESC/DATA, code objects, loader events, PSO: identical.
                assert_eq!(ob, rb, "{stem}: {} chunk differs", o.type_name);
                continue;
            }
            // ASIC_INFO: rgptool hard-codes a 7900 XTX (documented bug). The differences, each
            // because we describe the real device:
            let diffs = asic_diffs(ob, rb);
            let expected: BTreeSet<&str> = match arch {
                // gfx1100 is the 7900 XTX: only the max clocks (rgptool rounds them to 2.5 / 1.25
                // GHz while its trace clocks say 2.482 / 1.249; we use the same value for both)
                // and the primitive rate (= shader engines, like Mesa; rgptool writes 6 too, so
                // equal here).
                "gfx1100" => ["max_shader_core_clock", "max_memory_clock"].into(),
                // gfx1200 (RX 9070 XT, NAVI48): name, revision, clocks, memory and L2/MALL of
                // that card; 4 shader engines in cu_mask and the primitive rate instead of the
                // hard-coded 6.
                "gfx1200" => [
                    "trace_shader_core_clock",
                    "trace_memory_clock",
                    "device_revision_id",
                    "gpu_name",
                    "per-clock rates",
                    "max_shader_core_clock",
                    "max_memory_clock",
                    "cu_mask",
                    "vram_size",
                    "vram_bus_width",
                    "l2_cache_size",
                    "cache sizes",
                ]
                .into(),
                _ => panic!("no expectation for {arch}"),
            };
            assert_eq!(diffs, expected, "{stem}: ASIC_INFO differences");
            // Fields derived from the props agree with rgptool's derivation.
            for off in [
                A::SHADER_ENGINES,
                A::CU_PER_SE,
                A::SIMD_PER_CU,
                A::WAVES_PER_SIMD,
                A::LDS_SIZE,
                A::GFXIP_LEVEL,
                A::DEVICE_ID,
            ] {
                assert_eq!(
                    ob[off..off + 4],
                    rb[off..off + 4],
                    "{stem}: ASIC_INFO @{off}"
                );
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 4, "all four references checked");
}

#[test]
fn pkl_to_rgp_to_model_round_trip() {
    for dir in capture_dirs() {
        let name = dir.display().to_string();
        let (_, p) = open_path(&dir.join("profile.pkl")).unwrap();
        let bytes = rgp::export(&p, &Default::default()).unwrap();
        let q = rgp::import(Arc::new(BlobStore::Owned(bytes)), "x.rgp").unwrap();
        // SQTT blobs: same (se, itrace, bytes) in order.
        assert_eq!(q.sqtt.len(), p.sqtt.len(), "{name}");
        for (a, b) in p.sqtt.iter().zip(&q.sqtt) {
            assert_eq!((a.se, a.itrace, a.kern), (b.se, b.itrace, b.kern), "{name}");
            assert_eq!(p.blob(a.blob), q.blob(b.blob), "{name}: se {}", a.se);
        }
        // Code objects with their load address and kernel name.
        assert_eq!(q.programs.len(), p.programs.len(), "{name}");
        for (a, b) in p.programs.iter().zip(&q.programs) {
            assert_eq!(p.blob(a.elf.unwrap()), q.blob(b.elf.unwrap()), "{name}");
            assert_eq!(a.base, b.base);
            assert_eq!(a.name, b.name);
        }
        // Device props (all ten KFD props; see rgp::reader for which come from ASIC_INFO fields
        // and which from the per-target table).
        let amd = p.devices.iter().find(|d| d.name == "AMD").unwrap();
        assert_eq!(q.devices[0].props, amd.props, "{name}");
        // Kernel timing and clock offset (to the nanosecond: CLOCK_CALIBRATION stores ns).
        assert_eq!(q.kernels.len(), p.kernels.len());
        for (a, b) in p.kernels.iter().zip(&q.kernels) {
            assert_eq!((a.gpu_start, a.gpu_end), (b.gpu_start, b.gpu_end));
            assert!(
                (a.start.0 - b.start.0).abs() < 1000,
                "{name}: {:?} vs {:?}",
                a.start,
                b.start
            );
        }
    }
}

#[test]
fn imports_rgptool_references() {
    for entry in std::fs::read_dir(shared().join("reference-rgp")).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
        let (arch, case) = stem.split_once('_').unwrap();
        let dir = shared().join("traces").join(arch).join(case);
        let (_, q) = open_path(&path).unwrap();
        let meta = meta(&dir);
        // One kernel: rgptool's per-SE concatenation is just the one blob, equal to the .sqtt file.
        let msq = meta["sqtt"].as_array().unwrap();
        assert_eq!(q.sqtt.len(), msq.len(), "{stem}");
        for (got, want) in q.sqtt.iter().zip(msq) {
            assert_eq!(got.se as u64, want["se"].as_u64().unwrap());
            assert_eq!(
                got.itrace,
                want["itrace"].as_bool().unwrap(),
                "{stem} se {}",
                got.se
            );
            assert_eq!(
                q.blob(got.blob),
                &std::fs::read(dir.join(want["file"].as_str().unwrap())).unwrap()[..]
            );
        }
        let mp = &meta["programs"][0];
        assert_eq!(q.programs[0].base, mp["base"].as_u64());
        assert_eq!(
            q.blob(q.programs[0].elf.unwrap()),
            &std::fs::read(dir.join(mp["file"].as_str().unwrap())).unwrap()[..]
        );
        assert_eq!(q.programs[0].name, mp["name"].as_str().unwrap());
    }
}

/// Re-lays our export in Mesa RADV's chunk order (code objects and timings first, SQTT last),
/// fixing the absolute offsets inside the chunks, and checks import gives the same model.
#[test]
fn imports_mesa_chunk_order() {
    let dir = &capture_dirs()[0];
    let (_, p) = open_path(&dir.join("profile.pkl")).unwrap();
    let ours = rgp::export(&p, &Default::default()).unwrap();
    let chunks = rgp::list_chunks(&ours).unwrap();
    let rank = |c: &ChunkInfo| match c.chunk_type() {
        ChunkType::CpuInfo => 0,
        ChunkType::AsicInfo => 1,
        ChunkType::ApiInfo => 2,
        ChunkType::CodeObjectDatabase => 3,
        ChunkType::CodeObjectLoaderEvents => 4,
        ChunkType::PsoCorrelation => 5,
        ChunkType::QueueEventTimings => 6,
        ChunkType::ClockCalibration => 7,
        _ => 8,
    };
    let mut order: Vec<&ChunkInfo> = chunks.iter().collect();
    order.sort_by_key(|c| rank(c));
    let mut mesa = ours[..56].to_vec();
    for c in order {
        let start = mesa.len() as u32;
        let mut b = chunk_bytes(&ours, c).to_vec();
        match c.chunk_type() {
            ChunkType::SqttData => b[16..20].copy_from_slice(&(start + 24).to_le_bytes()),
            ChunkType::CodeObjectDatabase
            | ChunkType::CodeObjectLoaderEvents
            | ChunkType::PsoCorrelation => b[16..20].copy_from_slice(&start.to_le_bytes()),
            _ => {}
        }
        mesa.extend_from_slice(&b);
    }
    let a = rgp::import(Arc::new(BlobStore::Owned(ours)), "a").unwrap();
    let b = rgp::import(Arc::new(BlobStore::Owned(mesa)), "b").unwrap();
    // Blob ids follow file order, so compare contents.
    let sq = |p: &traces::model::Profile| {
        p.sqtt
            .iter()
            .map(|s| (s.se, s.itrace, s.kern, s.exec_tag, p.blob(s.blob).to_vec()))
            .collect::<Vec<_>>()
    };
    assert_eq!(sq(&a), sq(&b));
    let pr = |p: &traces::model::Profile| {
        p.programs
            .iter()
            .map(|x| {
                (
                    x.name.clone(),
                    x.base,
                    x.tag,
                    p.blob(x.elf.unwrap()).to_vec(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(pr(&a), pr(&b));
    assert_eq!(a.devices, b.devices);
    assert_eq!(a.kernels, b.kernels);
}

#[test]
fn gfx950_exports() {
    let dir = shared().join("traces/gfx950/plus_run_0");
    let (_, p) = open_path(&dir.join("profile.pkl")).unwrap();
    let bytes = rgp::export(&p, &Default::default()).unwrap();
    let chunks = rgp::list_chunks(&bytes).unwrap();
    let asic = chunks
        .iter()
        .find(|c| c.chunk_type() == ChunkType::AsicInfo)
        .unwrap();
    let b = chunk_bytes(&bytes, asic);
    let u32at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    // 32 shader engines (8 XCC x 4), GFX9 level, LDS 160 KiB, from the device props.
    assert_eq!(u32at(A::SHADER_ENGINES), 32);
    assert_eq!(u32at(A::GFXIP_LEVEL), 5);
    assert_eq!(u32at(A::LDS_SIZE), 160 * 1024);
    assert_eq!(
        chunks
            .iter()
            .filter(|c| c.chunk_type() == ChunkType::SqttData)
            .count(),
        32
    );
}

#[test]
fn truncated_rgp_gives_offsets() {
    let dir = &capture_dirs()[0];
    let (_, p) = open_path(&dir.join("profile.pkl")).unwrap();
    let bytes = rgp::export(&p, &Default::default()).unwrap();
    // (A cut exactly at a chunk boundary is a valid, shorter file: the format has no index.)
    for cut in [0, 2, 10, 60, 100, 1000, bytes.len() / 2, bytes.len() - 1] {
        let err = rgp::import(Arc::new(BlobStore::Owned(bytes[..cut].to_vec())), "t")
            .unwrap_err()
            .to_string();
        assert!(err.contains("offset"), "cut {cut}: {err}");
    }
    let mut bad = bytes.clone();
    bad[56 + 8..56 + 12].copy_from_slice(&4u32.to_le_bytes());
    let err = rgp::import(Arc::new(BlobStore::Owned(bad)), "t")
        .unwrap_err()
        .to_string();
    assert!(err.contains("offset 56"), "{err}");
}

/// Inputs the fuzzer found (an ASIC_INFO whose SE and CU counts overflowed a multiplication):
/// they must give a model or an error, never a panic.
#[test]
fn fuzzer_findings_do_not_panic() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let name = "rgp-fuzz-mul-overflow.rgp";
    let bytes = std::fs::read(dir.join(name)).unwrap();
    let _ = rgp::import(Arc::new(BlobStore::Owned(bytes)), name);
}
