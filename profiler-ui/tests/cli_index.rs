//! The `.wst` analysis index end to end: `convert` and `index` write it, `stats` of an indexed
//! file (its table from the index) prints what a fresh analysis prints, `stats --json` is the
//! same with or without it, and a damaged index is ignored with a warning naming the file and
//! the offset, the stats recomputed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn wavescope() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wavescope"))
}

fn run(args: &[&std::ffi::OsStr]) -> Output {
    let o = wavescope().args(args).output().unwrap();
    assert!(
        o.status.success(),
        "wavescope {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn captures() -> Vec<PathBuf> {
    [
        "gfx1100/gemm_run_0",
        "gfx1200/gemm_run_0",
        "gfx950/gemm_run_0",
    ]
    .iter()
    .map(|c| testdata::shared(&format!("traces/{c}/profile.pkl")))
    .collect()
}

fn stats(file: &Path, extra: &[&str]) -> Output {
    let mut a: Vec<&std::ffi::OsStr> = vec!["stats".as_ref(), file.as_os_str()];
    a.extend(extra.iter().map(|s| std::ffi::OsStr::new(*s)));
    run(&a)
}

#[test]
fn stats_from_the_index_equal_a_fresh_analysis() {
    let tmp = tempfile::tempdir().unwrap();
    for pkl in captures() {
        let plain = tmp.path().join("plain.wst");
        let indexed = tmp.path().join("indexed.wst");
        let conv = tmp.path().join("conv.wst");
        run(&[
            "convert".as_ref(),
            pkl.as_os_str(),
            "--no-index".as_ref(),
            "-o".as_ref(),
            plain.as_os_str(),
        ]);
        run(&[
            "convert".as_ref(),
            pkl.as_os_str(),
            "-o".as_ref(),
            conv.as_os_str(),
        ]);
        run(&[
            "index".as_ref(),
            plain.as_os_str(),
            "-o".as_ref(),
            indexed.as_os_str(),
        ]);
        // `index` and `convert` write the same file.
        assert_eq!(
            std::fs::read(&indexed).unwrap(),
            std::fs::read(&conv).unwrap(),
            "{}",
            pkl.display()
        );
        run(&["index".as_ref(), "--check".as_ref(), indexed.as_os_str()]);
        let no = wavescope()
            .args(["index", "--check"])
            .arg(&plain)
            .output()
            .unwrap();
        assert!(
            !no.status.success(),
            "a file without an index fails --check"
        );
        let fresh = stats(&plain, &[]);
        let saved = stats(&indexed, &[]);
        assert!(!fresh.stdout.is_empty());
        assert_eq!(
            String::from_utf8_lossy(&saved.stdout),
            String::from_utf8_lossy(&fresh.stdout),
            "{}",
            pkl.display()
        );
        assert!(saved.stderr.is_empty(), "no warning on a good index");
        assert_eq!(
            stats(&indexed, &["--json"]).stdout,
            stats(&plain, &["--json"]).stdout,
            "{}",
            pkl.display()
        );
        assert_eq!(stats(&indexed, &["--no-index"]).stdout, fresh.stdout);
    }
}

#[test]
fn a_corrupt_index_is_ignored_with_a_warning_and_stats_recomputed() {
    let tmp = tempfile::tempdir().unwrap();
    let pkl = &captures()[0];
    let good = tmp.path().join("good.wst");
    run(&[
        "convert".as_ref(),
        pkl.as_os_str(),
        "-o".as_ref(),
        good.as_os_str(),
    ]);
    let bytes = std::fs::read(&good).unwrap();
    let s = traces::wst::sections(&bytes)
        .unwrap()
        .into_iter()
        .find(|s| s.tag == traces::wst::TAG_INDEX)
        .expect("convert writes the index");
    let fresh = stats(&good, &["--no-index"]);
    // A byte of the kernel directory, and the index version.
    for (at, what) in [(s.offset + 64, "checksum"), (s.offset + 8, "version")] {
        let mut bad = bytes.clone();
        bad[at as usize] ^= 0x21;
        let f = tmp.path().join("bad.wst");
        std::fs::write(&f, &bad).unwrap();
        let o = stats(&f, &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("warning:")
                && err.contains(&f.display().to_string())
                && err.contains("offset")
                && err.contains(what),
            "{what}: {err}"
        );
        assert_eq!(o.stdout, fresh.stdout, "{what}: recomputed");
        let c = wavescope()
            .args(["index", "--check"])
            .arg(&f)
            .output()
            .unwrap();
        assert!(!c.status.success());
        // `index` repairs it.
        run(&["index".as_ref(), f.as_os_str()]);
        assert_eq!(
            std::fs::read(&f).unwrap(),
            bytes,
            "{what}: rewritten as new"
        );
    }
}
