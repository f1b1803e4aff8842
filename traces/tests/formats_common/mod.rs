//! Helpers shared by the formats_* tests (included with `mod`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub fn shared() -> PathBuf {
    // The shared captures sit next to the repository (/work/shared) or under $WAVESCOPE_SHARED.
    if let Ok(p) = std::env::var("WAVESCOPE_SHARED") {
        return PathBuf::from(p);
    }
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    for cand in [
        here.join("../../shared"),
        here.join("../shared"),
        PathBuf::from("/work/shared"),
    ] {
        if cand.join("traces").is_dir() {
            return cand;
        }
    }
    panic!("shared captures not found; set WAVESCOPE_SHARED");
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
