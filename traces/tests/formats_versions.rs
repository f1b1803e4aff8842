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
