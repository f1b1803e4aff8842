//! Profiles written by tinygrad 0.11 to 0.14 open, with the event counts Python's own pickle
//! module reads from them (`tests/fixtures/tinygrad-versions/expected.jsonl`).

use std::path::Path;

#[test]
fn pickles_from_tinygrad_0_11_to_0_14_open() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tinygrad-versions");
    let expected = std::fs::read_to_string(dir.join("expected.jsonl")).unwrap();
    let mut n = 0;
    for line in expected.lines() {
        let e: serde_json::Value = serde_json::from_str(line).unwrap();
        let version = e["version"].as_str().unwrap();
        let info = traces::open::info_path(&dir.join(format!("tinygrad-{version}.pkl")))
            .unwrap_or_else(|err| panic!("tinygrad {version}: {err}"));
        let counts = info
            .source_event_counts
            .expect("a pickle reports its event counts");
        let want: std::collections::BTreeMap<String, u64> =
            serde_json::from_value(e["counts"].clone()).unwrap();
        assert_eq!(counts, want, "tinygrad {version}");
        n += 1;
    }
    assert_eq!(n, 4);
}

/// `.wst` files from before the analysis index (container 1, and container 2 without an `INDX`
/// section) open as before, and report no index; one with an index opens to the same model.
#[test]
fn wst_without_an_index_still_opens() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/wst");
    for f in ["gfx1100-plus-v1.wst", "emu-demo-v1.wst"] {
        let path = fixtures.join(f);
        let (_, p) = traces::open::open_path(&path).unwrap_or_else(|e| panic!("{f}: {e}"));
        let raw = std::fs::read(&path).unwrap();
        assert!(traces::wst::read_index(&raw).unwrap().is_none(), "{f}");
        let mut plain = Vec::new();
        traces::wst::write_to(&p, &mut plain).unwrap();
        assert!(traces::wst::read_index(&plain).unwrap().is_none(), "{f}");
        let recs = traces::wst::index::build(&p, &|_, _| {});
        let mut indexed = Vec::new();
        traces::wst::write_to_indexed(&p, Some(&recs), &mut indexed).unwrap();
        let store = std::sync::Arc::new(traces::model::BlobStore::Owned(indexed.clone()));
        assert_eq!(traces::wst::read_store(store).unwrap(), p, "{f}");
        // The streaming reader stops after the blobs; the index after them is skipped.
        assert_eq!(traces::wst::read_from(&indexed[..]).unwrap(), p, "{f}");
        assert!(traces::wst::read_index(&indexed).unwrap().is_some(), "{f}");
    }
}
