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
    // Corrupt metadata.
    let mut bad = bytes.clone();
    for b in &mut bad[40..60] {
        *b ^= 0x5A;
    }
    let err = wst::read_store(Arc::new(BlobStore::Owned(bad)))
        .unwrap_err()
        .to_string();
    assert!(err.contains("offset 32"), "{err}");
    // A future version is refused.
    let mut v2 = bytes.clone();
    v2[8] = 2;
    assert!(wst::read_store(Arc::new(BlobStore::Owned(v2)))
        .unwrap_err()
        .to_string()
        .contains("version 2"));
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
