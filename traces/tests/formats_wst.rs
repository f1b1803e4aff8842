//! `.wst` round trips and bad input.

mod formats_common;
use formats_common::*;

use std::sync::Arc;
use traces::model::BlobStore;
use traces::open::open_path;
use traces::wst;

#[test]
fn pkl_to_wst_to_wst_is_lossless() {
    let tmp = tempfile::tempdir().unwrap();
    for dir in capture_dirs() {
        let (_, from_pkl) = open_path(&dir.join("profile.pkl")).unwrap();
        let a = tmp.path().join("a.wst");
        let b = tmp.path().join("b.wst");
        wst::write_file(&from_pkl, &a).unwrap();
        let (_, pa) = open_path(&a).unwrap();
        assert_eq!(pa, from_pkl, "{}: pkl -> wst", dir.display());
        // Blobs compare by content in PartialEq; also check the ids resolve to the same bytes.
        for s in &from_pkl.sqtt {
            assert_eq!(pa.blob(s.blob), from_pkl.blob(s.blob));
        }
        wst::write_file(&pa, &b).unwrap();
        let (_, pb) = open_path(&b).unwrap();
        assert_eq!(pb, pa, "{}: wst -> wst", dir.display());
        assert_eq!(
            std::fs::read(&a).unwrap(),
            std::fs::read(&b).unwrap(),
            "wst output is deterministic"
        );
        // The streaming reader sees the same model.
        let streamed = wst::read_from(std::fs::File::open(&a).unwrap()).unwrap();
        assert_eq!(streamed, pa);
    }
}

#[test]
fn blobs_are_stored_raw_and_aligned() {
    let dir = &capture_dirs()[0];
    let (_, p) = open_path(&dir.join("profile.pkl")).unwrap();
    let mut bytes = Vec::new();
    wst::write_to(&p, &mut bytes).unwrap();
    for s in &p.sqtt {
        let blob = p.blob(s.blob);
        let at = bytes
            .windows(blob.len())
            .position(|w| w == blob)
            .expect("blob stored raw");
        assert_eq!(at % 64, 0, "blob aligned to 64");
    }
}

#[test]
fn truncated_and_corrupt_wst_give_offsets() {
    let dir = &capture_dirs()[0];
    let (_, p) = open_path(&dir.join("profile.pkl")).unwrap();
    let mut bytes = Vec::new();
    wst::write_to(&p, &mut bytes).unwrap();
    // Every truncation point fails cleanly (no panic) with a message naming an offset or magic.
    for cut in [
        0,
        3,
        8,
        20,
        31,
        32,
        40,
        100,
        bytes.len() / 2,
        bytes.len() - 1,
    ] {
        let err = wst::read_store(Arc::new(BlobStore::Owned(bytes[..cut].to_vec())))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("offset") || err.contains("magic"),
            "cut {cut}: {err}"
        );
        assert!(wst::read_from(&bytes[..cut]).is_err(), "stream cut {cut}");
    }
    // Corrupt metadata: the error names the META section's offset.
    let meta = wst::sections(&bytes).unwrap()[0];
    assert_eq!(&meta.tag, b"META");
    let mut bad = bytes.clone();
    let at = meta.offset as usize + 8;
    for b in &mut bad[at..at + 20] {
        *b ^= 0x5A;
    }
    let err = wst::read_store(Arc::new(BlobStore::Owned(bad)))
        .unwrap_err()
        .to_string();
    assert!(err.contains(&format!("offset {}", meta.offset)), "{err}");
    // A future container version is refused, saying which versions this build reads.
    let mut v9 = bytes.clone();
    v9[8] = 9;
    let err = wst::read_store(Arc::new(BlobStore::Owned(v9)))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("version 9 at offset 8") && err.contains("versions 1 to 2"),
        "{err}"
    );
    // A section table entry pointing past the end of the file.
    let mut bad = bytes.clone();
    bad[32 + 56..32 + 64].copy_from_slice(&u64::MAX.to_le_bytes());
    let err = wst::read_store(Arc::new(BlobStore::Owned(bad)))
        .unwrap_err()
        .to_string();
    assert!(err.contains("offset 64"), "{err}");
}

/// Rewrites the tag, schema and flags of section entry `i` of a version-2 file.
fn patch_section(bytes: &mut [u8], i: usize, tag: &[u8; 4], schema: u32, flags: u32) {
    let e = 32 + 32 * i;
    bytes[e..e + 4].copy_from_slice(tag);
    bytes[e + 4..e + 8].copy_from_slice(&schema.to_le_bytes());
    bytes[e + 8..e + 12].copy_from_slice(&flags.to_le_bytes());
}

#[test]
fn sections_added_later_are_skipped_or_refused_by_their_flag() {
    let dir = &capture_dirs()[0];
    let (_, p) = open_path(&dir.join("profile.pkl")).unwrap();
    let mut bytes = Vec::new();
    wst::write_to(&p, &mut bytes).unwrap();
    let read = |b: &[u8]| wst::read_store(Arc::new(BlobStore::Owned(b.to_vec())));
    let stream = |b: &[u8]| wst::read_from(b);
    // Append an optional section of a kind this build does not know (what a later release's
    // analysis index looks like to this one): table entry 2, data after the blobs.
    let mut grown = bytes.clone();
    let extra_off = grown.len().div_ceil(64) * 64;
    grown.resize(extra_off, 0);
    grown.extend_from_slice(b"future index payload");
    // Make room for a third table entry: the header and table end at 96 < 128 (first section).
    assert!(wst::sections(&bytes).unwrap()[0].offset >= 128);
    grown[16..20].copy_from_slice(&3u32.to_le_bytes());
    let e = 32 + 64;
    grown[e..e + 4].copy_from_slice(b"INDX");
    grown[e + 4..e + 8].copy_from_slice(&1u32.to_le_bytes());
    grown[e + 8..e + 12].copy_from_slice(&0u32.to_le_bytes());
    grown[e + 16..e + 24].copy_from_slice(&(extra_off as u64).to_le_bytes());
    grown[e + 24..e + 32].copy_from_slice(&20u64.to_le_bytes());
    assert_eq!(read(&grown).unwrap(), p, "optional unknown section skipped");
    assert_eq!(
        stream(&grown).unwrap(),
        p,
        "optional unknown section skipped"
    );
    let secs = wst::sections(&grown).unwrap();
    assert_eq!(&secs[2].tag, b"INDX");
    assert_eq!(
        &grown[secs[2].offset as usize..][..secs[2].len as usize],
        b"future index payload"
    );
    // The same section marked required: refused, naming the tag and the entry's offset.
    let mut req = grown.clone();
    req[e + 8] = 1;
    let err = read(&req).unwrap_err().to_string();
    assert!(
        err.contains("'INDX'") && err.contains("offset 96") && err.contains("required"),
        "{err}"
    );
    assert!(stream(&req).is_err());
    // A known section with a newer schema than this build reads.
    let mut newer = bytes.clone();
    patch_section(&mut newer, 0, b"META", 2, 1);
    let err = read(&newer).unwrap_err().to_string();
    assert!(
        err.contains("'META'") && err.contains("schema 2") && err.contains("offset 32"),
        "{err}"
    );
}

/// Content that matters to a user, with blobs by hash: what a saved file must keep meaning.
fn content(p: &traces::model::Profile) -> serde_json::Value {
    let h = |b: &[u8]| traces::open::sha256_hex(b);
    serde_json::json!({
        "devices": p.devices.iter().map(|d| (d.name.clone(), d.props.clone(), d.clock_offset.0.to_string())).collect::<Vec<_>>(),
        "programs": p.programs.iter().map(|x| (x.device, x.name.clone(), x.tag, x.base, x.elf.map(|b| h(p.blob(b))))).collect::<Vec<_>>(),
        "kernels": p.kernels.iter().map(|k| (k.device, k.name.clone(), k.kern, k.exec_tag, k.start.0.to_string(), k.end.map(|t| t.0.to_string()))).collect::<Vec<_>>(),
        "sqtt": p.sqtt.iter().map(|s| (s.device, s.kern, s.se, s.itrace, h(p.blob(s.blob)))).collect::<Vec<_>>(),
        "pmc": p.pmc.iter().map(|s| (s.device, s.kern, s.samples.len(), h(p.blob(s.blob)))).collect::<Vec<_>>(),
        "ranges": p.ranges.len(),
        "points": p.points.len(),
    })
}

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/wst")
        .join(name)
}

#[test]
fn v1_fixture_converted_from_a_shared_capture_keeps_opening() {
    let path = fixture("gfx1100-plus-v1.wst");
    let raw = std::fs::read(&path).unwrap();
    // The fixture is the first release's container: it must not be regenerated by a newer writer.
    assert_eq!(u32::from_le_bytes(raw[8..12].try_into().unwrap()), 1);
    let (_, old) = open_path(&path).unwrap();
    let (_, mut fresh) =
        open_path(&shared().join("traces/gfx1100/plus_run_0/profile.pkl")).unwrap();
    assert_eq!(content(&old), content(&fresh));
    // The process records the path the pickle was opened by; the fixture was made from
    // /work/shared, this run may reach the same file by another path.
    for (o, f) in old.processes.iter().zip(&mut fresh.processes) {
        assert!(
            o.source.ends_with("gfx1100/plus_run_0/profile.pkl"),
            "{}",
            o.source
        );
        f.source.clone_from(&o.source);
    }
    assert!(old == fresh, "the whole model, field by field");
    assert_eq!(old.sqtt.len(), 6);
    // The streaming reader agrees, and a rewrite (current container) reads back the same.
    assert_eq!(wst::read_from(&raw[..]).unwrap(), old);
    let mut again = Vec::new();
    wst::write_to(&old, &mut again).unwrap();
    assert_eq!(
        u32::from_le_bytes(again[8..12].try_into().unwrap()),
        wst::VERSION
    );
    assert_eq!(
        wst::read_store(Arc::new(BlobStore::Owned(again))).unwrap(),
        old
    );
}

#[test]
fn v1_fixture_of_an_emulated_capture_keeps_opening() {
    // Written by `wavescope capture --demo --device emu --itrace-se-mask 1 --sqtt-buffer-mib 1`
    // of the first release, which printed these SQTT bytes per SE for the three kernels.
    let (_, p) = open_path(&fixture("emu-demo-v1.wst")).unwrap();
    let names: Vec<&str> = p.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["vadd", "reduce", "matmul"]);
    let printed: [[usize; 6]; 3] = [
        [512, 480, 480, 480, 448, 448],
        [1952, 544, 480, 480, 480, 480],
        [1664, 608, 608, 608, 544, 544],
    ];
    for (k, kernel) in p.kernels.iter().enumerate() {
        let mut per_se: Vec<(u32, usize, bool)> = p
            .sqtt
            .iter()
            .filter(|s| Some(s.kern) == kernel.kern)
            .map(|s| (s.se, p.blob(s.blob).len(), s.itrace))
            .collect();
        per_se.sort();
        let lens: Vec<usize> = per_se.iter().map(|x| x.1).collect();
        assert_eq!(lens, printed[k], "{}", kernel.name);
        // --itrace-se-mask 1: instruction tracing on SE 0 only.
        let itrace: Vec<bool> = per_se.iter().map(|x| x.2).collect();
        assert_eq!(itrace, [true, false, false, false, false, false]);
        let prog = p.program_for(kernel.device, kernel.kern.unwrap()).unwrap();
        assert!(p.blob(prog.elf.unwrap()).starts_with(b"\x7fELF"));
    }
    let dev = p.props_device(p.kernels[0].device).unwrap();
    assert_eq!(dev.props.get("gfx_target_version"), Some(&110000));
    // Rewriting it in the current container keeps the model.
    let mut again = Vec::new();
    wst::write_to(&p, &mut again).unwrap();
    let back = wst::read_store(Arc::new(BlobStore::Owned(again))).unwrap();
    assert_eq!(content(&back), content(&p));
    assert_eq!(back, p);
}

#[test]
fn failed_write_keeps_the_earlier_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = &capture_dirs()[0];
    let (_, p) = open_path(&dir.join("profile.pkl")).unwrap();
    let out = tmp.path().join("cap.wst");
    wst::write_file(&p, &out).unwrap();
    let before = std::fs::read(&out).unwrap();
    // A profile referencing a blob that does not exist cannot be read back; writing one must
    // either fail or replace the file whole. Simulate a crash instead: a writer that fails
    // half-way through leaves the target untouched because it only writes a temp file.
    struct Failing(usize);
    impl std::io::Write for Failing {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.0 < b.len() {
                return Err(std::io::Error::other("disk full"));
            }
            self.0 -= b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    assert!(wst::write_to(&p, Failing(100)).is_err());
    assert_eq!(std::fs::read(&out).unwrap(), before);
    // No temp files left behind by the successful write.
    let names: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}
