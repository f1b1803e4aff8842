//! Helpers shared by the formats_* tests (included with `mod`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The shared data (`../shared`): these tests cannot do without it.
pub fn shared() -> PathBuf {
    testdata::shared("")
}

/// Every `traces/<arch>/<case>/` folder with a profile.pkl.
pub fn capture_dirs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for arch in std::fs::read_dir(shared().join("traces")).unwrap() {
        let arch = arch.unwrap().path();
        if !arch.is_dir() {
            continue;
        }
        for case in std::fs::read_dir(&arch).unwrap() {
            let case = case.unwrap().path();
            if case.join("profile.pkl").is_file() {
                out.push(case);
            }
        }
    }
    out.sort();
    assert!(!out.is_empty(), "no captures found");
    out
}

pub fn meta(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("meta.json")).unwrap()).unwrap()
}
