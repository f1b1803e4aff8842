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
    // A byte of the kernel directory, the index version, and a byte of the first kernel's
    // wave-split table (checked when read, and by stats even when not: a damaged file).
    // Positions from the format's spec (traces::wst::index): the directory offset at header
    // byte 32, the wave-split table's offset at entry byte 168, both from the section's start.
    let u64_at =
        |at: u64| u64::from_le_bytes(bytes[at as usize..at as usize + 8].try_into().unwrap());
    let splits = s.offset + u64_at(s.offset + u64_at(s.offset + 32) + 168);
    for (at, what) in [
        (s.offset + 64, "checksum"),
        (s.offset + 8, "version"),
        (splits + 10, "wave split table checksum"),
    ] {
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

/// Every shared capture (each `traces/<arch>/<run>/profile.pkl`).
fn every_capture() -> Vec<PathBuf> {
    let Some(dir) = testdata::require_shared("traces") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for arch in std::fs::read_dir(dir).unwrap() {
        for run in std::fs::read_dir(arch.unwrap().path()).unwrap() {
            let p = run.unwrap().path().join("profile.pkl");
            if p.exists() {
                out.push(p);
            }
        }
    }
    out.sort();
    assert!(out.len() >= 10, "shared captures: {out:?}");
    out
}

/// Where the bytes of `needle` lie in `hay` (a blob stored as is in a .wst).
fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len())
        .position(|w| w == needle)
        .expect("blob stored verbatim")
}

#[test]
fn stats_json_and_diff_from_the_index_equal_a_fresh_analysis_on_every_capture() {
    let tmp = tempfile::tempdir().unwrap();
    let (plain_dir, idx_dir) = (tmp.path().join("plain"), tmp.path().join("idx"));
    std::fs::create_dir_all(&plain_dir).unwrap();
    std::fs::create_dir_all(&idx_dir).unwrap();
    let mut with_traced_waves = 0;
    for pkl in every_capture() {
        let plain = plain_dir.join("a.wst");
        let indexed = idx_dir.join("a.wst");
        let conv = |out: &Path, extra: &[&str]| {
            let mut a: Vec<&std::ffi::OsStr> = vec!["convert".as_ref(), pkl.as_os_str()];
            a.extend(extra.iter().map(|s| std::ffi::OsStr::new(*s)));
            a.extend(["-o".as_ref(), out.as_os_str()]);
            run(&a);
        };
        conv(&plain, &["--no-index"]);
        conv(&indexed, &[]);
        let fresh = stats(&plain, &["--json"]);
        let saved = stats(&indexed, &["--json"]);
        assert!(
            saved.stderr.is_empty(),
            "{}: {:?}",
            pkl.display(),
            saved.stderr
        );
        assert_eq!(
            String::from_utf8_lossy(&saved.stdout),
            String::from_utf8_lossy(&fresh.stdout),
            "{}",
            pkl.display()
        );
        let v: serde_json::Value = serde_json::from_slice(&saved.stdout).unwrap();
        if v[0]["traced_waves"]
            .as_array()
            .is_some_and(|w| !w.is_empty())
        {
            with_traced_waves += 1;
        }
        // The diff reads each side's analysis from the index: same report as decoding it
        // (same file names, relative to each directory).
        let diff = |dir: &Path| {
            let o = wavescope()
                .current_dir(dir)
                .args(["diff", "a.wst", "a.wst", "--json"])
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            o.stdout
        };
        assert_eq!(
            String::from_utf8_lossy(&diff(&idx_dir)),
            String::from_utf8_lossy(&diff(&plain_dir)),
            "diff {}",
            pkl.display()
        );
    }
    assert!(
        with_traced_waves >= 3,
        "{with_traced_waves} captures with traced waves"
    );
}

/// The index is what `stats --json` and `diff` read: with a SE that is not instruction-traced
/// damaged in the file (its blob, not the metadata the index is bound to), they print what the
/// intact file gave, while a fresh analysis sees the damage.
#[test]
fn stats_json_and_diff_read_the_index_not_the_sqtt() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = testdata::require_shared("traces/gfx1100/gemm_run_0").unwrap_or_default();
    if !dir.exists() {
        return;
    }
    let good = tmp.path().join("good.wst");
    run(&[
        "convert".as_ref(),
        dir.join("profile.pkl").as_os_str(),
        "-o".as_ref(),
        good.as_os_str(),
    ]);
    let mut bytes = std::fs::read(&good).unwrap();
    // SE 2 is not instruction-traced in this capture (`wavescope info`).
    let blob = std::fs::read(dir.join("kern0_se2.sqtt")).unwrap();
    let at = find(&bytes, &blob);
    for b in &mut bytes[at + blob.len() / 4..at + blob.len() * 3 / 4] {
        *b = 0x5a;
    }
    let bad = tmp.path().join("bad.wst");
    std::fs::write(&bad, &bytes).unwrap();
    let want = stats(&good, &["--json"]).stdout;
    assert_eq!(stats(&bad, &["--json"]).stdout, want);
    assert_ne!(stats(&bad, &["--json", "--no-index"]).stdout, want);
    let diff = |a: &Path, b: &Path| {
        let o = wavescope()
            .arg("diff")
            .arg(a)
            .arg(b)
            .arg("--json")
            .output()
            .unwrap();
        assert!(o.status.success());
        let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["a"]["file"] = serde_json::Value::Null;
        v["b"]["file"] = serde_json::Value::Null;
        v
    };
    assert_eq!(diff(&good, &bad), diff(&good, &good));
    let plain = tmp.path().join("plain.wst");
    run(&[
        "convert".as_ref(),
        bad.as_os_str(),
        "--no-index".as_ref(),
        "-o".as_ref(),
        plain.as_os_str(),
    ]);
    assert_ne!(
        diff(&good, &plain),
        diff(&good, &good),
        "the damage shows when decoded"
    );
}

/// A `.wst` whose index has the first layout (written by the build before the per-wave latency
/// splits were saved, commit cd677d0): it opens, its table comes from that index, and
/// `stats --json` recomputes with a note, printing what a fresh analysis prints.
#[test]
fn a_version_1_index_is_still_read() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gfx1200_gemm_index_v1.wst");
    let c = run(&["index".as_ref(), "--check".as_ref(), f.as_os_str()]);
    assert!(String::from_utf8_lossy(&c.stderr).contains("analysis index of 1 kernels"));
    let table = stats(&f, &[]);
    assert!(
        table.stderr.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&table.stderr)
    );
    assert_eq!(table.stdout, stats(&f, &["--no-index"]).stdout);
    let json = stats(&f, &["--json"]);
    let note = String::from_utf8_lossy(&json.stderr);
    assert!(
        note.contains("version 1") && note.contains("recomputing"),
        "{note}"
    );
    assert_eq!(json.stdout, stats(&f, &["--json", "--no-index"]).stdout);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(!v[0]["wave_latency"].as_array().unwrap().is_empty());
    // `index` rewrites it with the current layout, and then nothing is recomputed.
    let tmp = tempfile::tempdir().unwrap();
    let new = tmp.path().join("v2.wst");
    run(&[
        "index".as_ref(),
        f.as_os_str(),
        "-o".as_ref(),
        new.as_os_str(),
    ]);
    let j2 = stats(&new, &["--json"]);
    assert!(j2.stderr.is_empty());
    assert_eq!(j2.stdout, json.stdout);
}

/// A capture whose first instruction-traced SE lost the first WAVESTART of the traced unit
/// (`sqtt::synth::without_first`): its instruction mapping loses track there, and `stats` says so
/// in the table and the JSON, alike from a fresh analysis and from the saved index.
#[test]
fn stats_says_where_instruction_mapping_lost_track() {
    use traces::sqtt::{Kind, Role};
    let src = testdata::shared("traces/gfx1100/gemm_run_0/profile.pkl");
    let (_, mut p) = traces::open::open_path(&src).unwrap();
    let i = p.sqtt.iter().position(|s| s.itrace).expect("an itraced SE");
    let se = p.sqtt[i].se;
    let blob = traces::sqtt::synth::without_first(p.blob(p.sqtt[i].blob), |pk| {
        pk.ty.kind == Kind::WaveStart
            && pk.cu() == 0
            && pk.get(Role::Sa).unwrap_or(0) == 0
            && pk.get(Role::Simd).unwrap_or(0) == 0
    })
    .expect("a WAVESTART of the traced unit");
    p.sqtt[i].blob = p.add_blob(traces::model::Blob::from_vec(blob));
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().join("damaged.wst");
    traces::wst::write_file(&p, &plain).unwrap();
    let indexed = tmp.path().join("indexed.wst");
    run(&[
        "index".as_ref(),
        plain.as_os_str(),
        "-o".as_ref(),
        indexed.as_os_str(),
    ]);
    let want = format!("SE {se}: instruction mapping lost track at nibble ");
    for file in [&plain, &indexed] {
        let table = String::from_utf8(stats(file, &[]).stdout).unwrap();
        assert!(
            table.contains(&format!("  note: {want}")),
            "{}: no note in the table:\n{table}",
            file.display()
        );
        let json: serde_json::Value =
            serde_json::from_slice(&stats(file, &["--json"]).stdout).expect("stats --json");
        let notes = &json[0]["notes"];
        assert!(
            notes.as_array().is_some_and(|n| n
                .iter()
                .any(|n| n.as_str().is_some_and(|n| n.starts_with(&want)))),
            "{}: no note in the JSON: {notes}",
            file.display()
        );
    }
}
