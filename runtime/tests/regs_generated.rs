//! The committed register files (src/regs/tables.rs and src/pci/am/regs.rs) are byte for byte
//! what the one register generator (tools/gen_regs.py) writes from ../shared/amd-registers today:
//! a hand edit of either file, a change of the JSON or of the generator's lists without
//! regenerating, or output that depends on Python's hash seed fails here.

use std::path::{Path, PathBuf};
use std::process::Command;

const GENERATED: [&str; 2] = ["regs/tables.rs", "pci/am/regs.rs"];

/// Runs the generator into a fresh directory with the given hash seed; returns that directory.
fn generate(python: &Path, json: &Path, hash_seed: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::env::temp_dir().join(format!(
        "wavescope-gen-regs-{}-{hash_seed}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&out);
    let run = Command::new(python)
        .arg(root.join("tools/gen_regs.py"))
        .arg(json)
        .arg("--out")
        .arg(&out)
        .env("PYTHONHASHSEED", hash_seed)
        .output()
        .expect("run python3 tools/gen_regs.py");
    assert!(
        run.status.success(),
        "tools/gen_regs.py failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    out
}

#[test]
fn committed_register_files_are_what_the_generator_writes() {
    let Some(python) = testdata::require_tool("python3") else {
        return;
    };
    let Some(json) = testdata::require_shared("amd-registers") else {
        return;
    };
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    // Two seeds: set or dict order leaking into the output would make the runs differ.
    for seed in ["1", "2"] {
        let out = generate(&python, &json, seed);
        for rel in GENERATED {
            let want = std::fs::read(out.join(rel)).expect("generated file");
            let have = std::fs::read(src.join(rel)).expect("committed file");
            if want != have {
                let line = want
                    .split(|&b| b == b'\n')
                    .zip(have.split(|&b| b == b'\n'))
                    .position(|(a, b)| a != b)
                    .map_or_else(
                        || "past the shorter file's end".into(),
                        |i| format!("{}", i + 1),
                    );
                panic!(
                    "src/{rel} differs from what tools/gen_regs.py writes (PYTHONHASHSEED={seed}) \
                     at line {line}; regenerate with `python3 runtime/tools/gen_regs.py \
                     {}` instead of editing it",
                    json.display()
                );
            }
        }
        let _ = std::fs::remove_dir_all(&out);
    }
}
