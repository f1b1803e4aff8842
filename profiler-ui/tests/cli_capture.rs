//! `wavescope capture` end to end on the emulated gfx1100: the demo writes a .wst and an .rgp
//! that `info` reads back, a user kernel runs with `--arg` buffers and scalars, `--json` reports
//! the summary, and a wrong kernel name is an error. (The engine itself: capture/tests/demo.rs.)

use std::process::Command;

/// The demo's launches as documented for users: kernel, work-groups, work-items per group.
const DEMO: [(&str, u32, u32); 3] = [("vadd", 16, 64), ("reduce", 8, 256), ("matmul", 16, 256)];
/// Shader engines of the emulated gfx1100 (docs: Navi 31 has 6).
const NUM_SE: u64 = 6;

fn exe() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wavescope"))
}

fn json(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn vadd() -> String {
    format!(
        "{}/../tests/fixtures/kernels/emu/vadd.hsaco",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn capture_command_writes_files_info_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (wst, rgp) = (dir.path().join("x.wst"), dir.path().join("x.rgp"));
    let out = exe()
        .args(["capture", "--demo", "--device", "emu", "-o"])
        .arg(&wst)
        .arg("--rgp")
        .arg(&rgp)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (name, _, _) in DEMO {
        assert!(
            stdout
                .lines()
                .any(|l| l.contains(name) && l.contains(" ok ")),
            "{stdout}"
        );
    }
    assert!(
        stdout.contains("x.wst") && stdout.contains("x.rgp"),
        "{stdout}"
    );
    for f in [&wst, &rgp] {
        let v = json(&exe().arg("info").arg("--json").arg(f).output().unwrap());
        assert_eq!(v["counts"]["kernels"], 3, "{}", f.display());
        assert_eq!(v["counts"]["sqtt"], 3 * NUM_SE, "{}", f.display());
        assert_eq!(v["counts"]["programs"], 3, "{}", f.display());
    }

    // A user kernel with --arg buffers and scalars.
    let out = exe()
        .args(["capture", "--device", "emu", &vadd(), "--kernel", "vadd"])
        .args(["--grid", "4", "--block", "64"])
        .args([
            "--arg",
            "buf:1K",
            "--arg",
            "buf:1K:f32=1.5",
            "--arg",
            "buf:1K:iota",
        ])
        .args(["--arg", "u32:256", "--repeat", "2", "-o"])
        .arg(dir.path().join("k.wst"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.lines().filter(|l| l.contains("vadd")).count(),
        2,
        "{stdout}"
    );
    // A name that is not one of the code object's kernels is an error (1, not a usage error).
    let out = exe()
        .args([
            "capture",
            "--device",
            "emu",
            &vadd(),
            "--kernel",
            "nope",
            "-o",
        ])
        .arg(dir.path().join("n.wst"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no kernel \"nope\"") && err.contains("(its kernels: vadd)"),
        "{err}"
    );
}

#[test]
fn capture_json_reports_kernels_results_and_files() {
    let dir = tempfile::tempdir().unwrap();
    let wst = dir.path().join("j.wst");
    let v = json(
        &exe()
            .args(["capture", "--demo", "--device", "emu", "--json", "-o"])
            .arg(&wst)
            .output()
            .unwrap(),
    );
    assert_eq!(v["devices"], serde_json::json!(["emu"]));
    assert_eq!(v["all_correct"], true);
    assert_eq!(v["wst"], wst.to_str().unwrap());
    assert!(v["rgp"].is_null());
    let ks = v["kernels"].as_array().unwrap();
    assert_eq!(ks.len(), 3);
    for ((name, groups, threads), k) in DEMO.iter().zip(ks) {
        assert_eq!(k["kernel"], *name);
        assert_eq!(k["result"], "ok");
        assert_eq!(k["sqtt_bytes"].as_array().unwrap().len() as u64, NUM_SE);
        // Wave32: ceil(threads / 32) waves per work-group.
        assert_eq!(k["waves"], groups * threads.div_ceil(32), "{name}");
        let grid: Vec<u64> = serde_json::from_value(k["grid"].clone()).unwrap();
        assert_eq!(grid.iter().product::<u64>(), u64::from(*groups), "{name}");
    }
}
