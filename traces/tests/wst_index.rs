//! The `.wst` analysis index: what is saved reads back equal to a fresh analysis, files without
//! one still open, and a damaged or foreign index is reported (with its offset) and ignored.

mod formats_common;
use formats_common::*;

use std::sync::Arc;
use traces::analysis::{analyze_kernel_par, hidden, inst_stats_with, kernels_with_sqtt};
use traces::model::{BlobStore, Profile};
use traces::wst::{self, index};

fn indexed_bytes(p: &Profile) -> Vec<u8> {
    let recs = index::build(p, &|_, _| {});
    let mut out = Vec::new();
    wst::write_to_indexed(p, Some(&recs), &mut out).unwrap();
    out
}

fn index_section(bytes: &[u8]) -> wst::Section {
    wst::sections(bytes)
        .unwrap()
        .into_iter()
        .find(|s| s.tag == wst::TAG_INDEX)
        .expect("an INDX section")
}

#[test]
fn index_round_trip_equals_a_fresh_analysis() {
    let mut kernels_seen = 0;
    for dir in capture_dirs() {
        let (_, p) = traces::open::open_path(&dir.join("profile.pkl")).unwrap();
        let bytes = indexed_bytes(&p);
        // The model is the same as without the index.
        let back = wst::read_store(Arc::new(BlobStore::Owned(bytes.clone()))).unwrap();
        assert_eq!(back, p, "{}", dir.display());
        let idx = wst::read_index(&bytes)
            .unwrap()
            .expect("an index was written");
        let ks = kernels_with_sqtt(&p);
        assert_eq!(idx.kernel_count(), ks.len(), "{}", dir.display());
        for k in ks {
            let a = analyze_kernel_par(&p, k, &|_, _| {}).unwrap();
            let splits = hidden::kernel_splits(&a);
            let rows = inst_stats_with(&a, &splits);
            let e = idx.kernel(k).expect("kernel indexed").unwrap();
            let what = format!("{} kernel {k}", dir.display());
            // Rows compare through their JSON (what `stats --json` prints) and their PCs.
            assert_eq!(
                serde_json::to_string(&e.rows().unwrap()).unwrap(),
                serde_json::to_string(&rows).unwrap(),
                "{what}"
            );
            let pcs: Vec<_> = rows.iter().map(|r| r.pc).collect();
            let ipcs: Vec<_> = e.rows().unwrap().iter().map(|r| r.pc).collect();
            assert_eq!(ipcs, pcs, "{what}");
            assert_eq!(e.latency, splits.total, "{what}");
            // The per-wave splits `stats --json` prints (version 2).
            assert_eq!(
                serde_json::to_string(&e.wave_splits().expect("version 2").unwrap()).unwrap(),
                serde_json::to_string(&splits.waves).unwrap(),
                "{what}"
            );
            assert_eq!(e.unit, a.unit, "{what}");
            assert_eq!(e.kernel_len, a.kernel_len, "{what}");
            assert_eq!(e.x_range, a.x_range(), "{what}");
            assert_eq!(e.waves as usize, a.wave_count(), "{what}");
            let ses = idx.ses(&e).unwrap();
            assert_eq!(ses.len(), a.ses.len(), "{what}");
            for (s, t) in ses.iter().zip(&a.ses) {
                assert_eq!((s.se, s.itrace), (t.se, t.itrace), "{what}");
                assert_eq!(s.error, t.error.as_deref(), "{what}");
                let waves = s.waves().unwrap();
                assert_eq!(waves.len(), t.analysis.waves.len(), "{what}");
                for (w, x) in waves.iter().zip(&t.analysis.waves) {
                    assert_eq!(
                        (
                            w.start,
                            w.end,
                            w.start_offset,
                            w.cu,
                            w.simd,
                            w.slot,
                            w.insts
                        ),
                        (
                            x.start,
                            x.end,
                            x.start_offset,
                            x.cu,
                            x.simd,
                            x.wave,
                            x.insts
                        ),
                        "{what}"
                    );
                }
                assert_eq!(
                    s.overview(),
                    traces::analysis::occupancy::active_waves(&t.wave_x, index::OVERVIEW_POINTS),
                    "{what}"
                );
            }
            kernels_seen += 1;
        }
    }
    assert!(kernels_seen > 0);
}

#[test]
fn files_without_an_index_open_and_have_none() {
    let dir = shared().join("traces/gfx1100/gemm_run_0");
    let (_, p) = traces::open::open_path(&dir.join("profile.pkl")).unwrap();
    let mut plain = Vec::new();
    wst::write_to(&p, &mut plain).unwrap();
    assert!(wst::read_index(&plain).unwrap().is_none());
    // Written without an index, the file is byte for byte what it was before indexes existed
    // (two sections).
    assert_eq!(wst::sections(&plain).unwrap().len(), 2);
    for f in ["gfx1100-plus-v1.wst", "emu-demo-v1.wst"] {
        let raw = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/wst")
                .join(f),
        )
        .unwrap();
        assert!(wst::read_index(&raw).unwrap().is_none(), "{f}");
    }
}

/// Every error names an offset inside the index section (or its table entry).
fn check_err(e: &index::IndexError, s: &wst::Section, what: &str) {
    assert!(
        (s.offset..=s.offset + s.len).contains(&e.offset) || e.offset == s.entry_offset,
        "{what}: error offset {} outside the index ({}..{}): {e}",
        e.offset,
        s.offset,
        s.offset + s.len
    );
}

/// Reads everything the index holds; the first error, if any.
fn read_all(bytes: &[u8]) -> Result<usize, index::IndexError> {
    let Some(idx) = wst::read_index(bytes)? else {
        return Ok(0);
    };
    let mut n = 0;
    for e in idx.entries()? {
        n += e.rows()?.len();
        if let Some(w) = e.wave_splits() {
            n += w?.len();
        }
        for s in idx.ses(&e)? {
            n += s.waves()?.len() + s.overview().len();
        }
    }
    Ok(n)
}

#[test]
fn corrupt_stale_or_newer_index_is_reported_and_the_file_still_opens() {
    let dir = shared().join("traces/gfx1100/gemm_run_0");
    let (_, p) = traces::open::open_path(&dir.join("profile.pkl")).unwrap();
    let good = indexed_bytes(&p);
    let s = index_section(&good);
    assert!(read_all(&good).unwrap() > 0);
    // Every single byte flipped: an error naming an offset in the index, or (padding and
    // reserved bytes) the same content; never a panic, and the model always opens.
    let mut errors = 0;
    for i in s.offset..s.offset + s.len {
        let mut bad = good.clone();
        bad[i as usize] ^= 0x5a;
        match read_all(&bad) {
            Err(e) => {
                check_err(&e, &s, &format!("byte {i}"));
                errors += 1;
            }
            Ok(n) => assert_eq!(n, read_all(&good).unwrap(), "byte {i} changed content"),
        }
        if i % 97 == 0 {
            wst::read_store(Arc::new(BlobStore::Owned(bad))).unwrap();
        }
    }
    assert!(errors as u64 > s.len / 2, "{errors} of {} bytes", s.len);
    // Another index version.
    let mut v2 = good.clone();
    let at = s.offset as usize + 8;
    v2[at..at + 4].copy_from_slice(&(index::VERSION + 1).to_le_bytes());
    let e = read_all(&v2).unwrap_err();
    assert_eq!(e.offset, s.offset + 8);
    assert!(e.why.contains("version"), "{e}");
    // A newer section schema.
    let mut sch = good.clone();
    let at = s.entry_offset as usize + 4;
    sch[at..at + 4].copy_from_slice(&2u32.to_le_bytes());
    let e = read_all(&sch).unwrap_err();
    assert_eq!(e.offset, s.entry_offset);
    wst::read_store(Arc::new(BlobStore::Owned(sch))).unwrap();
    // An index written for other metadata (stale).
    let mut stale = good.clone();
    let at = s.offset as usize + 24;
    stale[at] ^= 1;
    let e = read_all(&stale).unwrap_err();
    assert!(e.why.contains("stale"), "{e}");
    // Truncated file: the index is cut off.
    let cut = &good[..(s.offset + s.len / 2) as usize];
    assert!(read_all(cut).is_err());
}

/// The wave-split table (large: one record per traced wave) is checked when read, not when its
/// kernel entry is: a damaged one leaves the entry, its rows and its SEs readable, and is
/// reported, at the table's offset, by `wave_splits` and `verify_wave_splits`.
#[test]
fn a_damaged_wave_split_table_is_reported_when_read() {
    let dir = shared().join("traces/gfx1100/gemm_run_0");
    let (_, p) = traces::open::open_path(&dir.join("profile.pkl")).unwrap();
    let good = indexed_bytes(&p);
    let s = index_section(&good);
    // Layout from the format's spec (module doc of traces::wst::index): the directory offset
    // at header byte 32; the wave-split table ref (u64 offset, u32 count) at entry byte 168.
    let u64_at =
        |at: u64| u64::from_le_bytes(good[at as usize..at as usize + 8].try_into().unwrap());
    let entry = s.offset + u64_at(s.offset + 32);
    let table = s.offset + u64_at(entry + 168);
    let count = u32::from_le_bytes(
        good[(entry + 176) as usize..(entry + 180) as usize]
            .try_into()
            .unwrap(),
    );
    assert!(count > 0, "gemm has instruction-traced waves");
    let mut bad = good.clone();
    bad[table as usize + 10] ^= 0x21;
    let idx = wst::read_index(&bad).unwrap().expect("an index");
    let e = idx
        .entry(0)
        .expect("the entry reads without its wave splits");
    e.rows().unwrap();
    for se in idx.ses(&e).unwrap() {
        se.verify().unwrap();
    }
    let err = e.wave_splits().expect("version 2").unwrap_err();
    assert_eq!(err.offset, table, "{err}");
    assert!(err.why.contains("wave split table checksum"), "{err}");
    assert_eq!(e.verify_wave_splits().unwrap_err().offset, table);
    // Undamaged: the same table reads and verifies.
    let idx = wst::read_index(&good).unwrap().unwrap();
    let e = idx.entry(0).unwrap();
    e.verify_wave_splits().unwrap();
    assert_eq!(e.wave_splits().unwrap().unwrap().len(), count as usize);
}

/// `write_file_index_streamed` (each kernel's tables written as it is analysed, the section's
/// header and directory patched in at the end) writes the same file as the owned records of
/// `index::build`, whose index the round-trip test above checks against a fresh analysis.
#[test]
fn streamed_index_file_equals_the_one_built_from_records() {
    let tmp = tempfile::tempdir().unwrap();
    let mut seen = 0;
    let mut spilled_ses = 0;
    for dir in capture_dirs() {
        let (_, p) = traces::open::open_path(&dir.join("profile.pkl")).unwrap();
        let path = tmp.path().join("streamed.wst");
        let done = std::cell::Cell::new(0);
        wst::write_file_index_streamed(&p, &path, &|d, _| done.set(d)).unwrap();
        let streamed = std::fs::read(&path).unwrap();
        assert_eq!(done.get(), kernels_with_sqtt(&p).len(), "{}", dir.display());
        assert!(
            streamed == indexed_bytes(&p),
            "{}: the streamed index file differs from the record-built one",
            dir.display()
        );
        assert!(wst::read_index(&streamed).unwrap().is_some());
        // SEs with waves but no instruction tokens are the ones whose waves the streamed
        // writer spills to a temporary file: count them so the spill path is known exercised.
        for k in kernels_with_sqtt(&p) {
            let a = analyze_kernel_par(&p, k, &|_, _| {}).unwrap();
            spilled_ses += a
                .ses
                .iter()
                .filter(|s| s.analysis.tokens.is_empty() && !s.analysis.waves.is_empty())
                .count();
        }
        seen += 1;
    }
    assert!(seen > 0, "no capture directories");
    assert!(
        spilled_ses > 0,
        "no capture has an SE whose waves are spilled"
    );
}
