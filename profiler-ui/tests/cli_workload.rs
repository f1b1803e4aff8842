//! `wavescope capture --workload FILE.toml [--dump DIR]` on the example in examples/workloads:
//! two launches sharing buffers, compared with expected outputs written by
//! examples/workloads/make_data.py (the CPU reference, computed in Python); a wrong expected
//! output exits 3; a malformed file, a launch that does not fit its kernel, an unknown kernel
//! and a dump directory that cannot be written exit 1 with nothing written.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn exe() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wavescope"))
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/workloads")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The data of a `.npy` as the reader sees it.
fn npy_data(p: &Path) -> Vec<u8> {
    let b = std::fs::read(p).unwrap();
    capture::npy::parse(&b)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .data
        .to_vec()
}

fn capture(workload: &Path, dir: &Path, extra: &[&str]) -> Output {
    exe()
        .arg("capture")
        .arg("--workload")
        .arg(workload)
        .args(["--device", "emu", "-o"])
        .arg(dir.join("t.wst"))
        .args(extra)
        .output()
        .unwrap()
}

/// The gfx1100 example copied into `dir` with `edit` applied to its text.
fn edited(dir: &Path, name: &str, edit: impl Fn(String) -> String) -> PathBuf {
    let text = std::fs::read_to_string(examples().join("add_mul.gfx1100.toml")).unwrap();
    let ex = examples();
    let text = edit(text)
        .replace("\"add_mul.", &format!("\"{}/add_mul.", ex.display()))
        .replace("\"data/", &format!("\"{}/data/", ex.display()));
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn the_example_runs_matches_its_expected_outputs_and_dumps() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("out");
    let o = capture(
        &examples().join("add_mul.gfx1100.toml"),
        dir.path(),
        &["--dump", dump.to_str().unwrap(), "--json"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ks = v["kernels"].as_array().unwrap();
    let names: Vec<&str> = ks.iter().map(|k| k["kernel"].as_str().unwrap()).collect();
    assert_eq!(names, ["k_add", "k_mul"]);
    assert!(ks.iter().all(|k| k["result"] == "ok"), "{v}");
    for b in ["a", "b", "c", "d"] {
        let raw = std::fs::read(dump.join(format!("{b}.bin"))).unwrap();
        assert_eq!(npy_data(&dump.join(format!("{b}.npy"))), raw, "{b}");
    }
    // d = (a + b) * 0.5, the second launch over the first one's output, as Python computed it.
    assert_eq!(
        std::fs::read(dump.join("d.bin")).unwrap(),
        npy_data(&examples().join("data/d.npy"))
    );
    assert!(dir.path().join("t.wst").exists());
}

#[test]
fn an_output_that_differs_from_its_expected_file_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    // d compared with c: every value is twice what it should be.
    let w = edited(dir.path(), "w1.toml", |t| {
        t.replace(
            "{ buffer = \"d\", file = \"data/d.npy\"",
            "{ buffer = \"d\", file = \"data/c.npy\"",
        )
    });
    let o = capture(&w, dir.path(), &[]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("WRONG RESULT k_mul")
            && out.contains("buffer d differs from")
            && out.contains("data/c.npy in 1000 of 1000 f32 values"),
        "{out}"
    );
}

#[test]
fn bad_input_is_a_clear_error_with_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let wst = dir.path().join("t.wst");
    let cases: Vec<(PathBuf, &str, Vec<String>)> = vec![
        // Malformed: a string where the grid goes, on line 17 of the copy.
        (
            edited(dir.path(), "w2.toml", |t| {
                t.replacen("grid = 16", "grid = \"sixteen\"", 1)
            }),
            "emu",
            vec!["w2.toml:17:8: invalid value: grid and block are".into()],
        ),
        (
            edited(dir.path(), "w3.toml", |t| {
                t.replace("\"c\", \"a\", \"b\",", "\"c\", \"a\",")
            }),
            "emu",
            vec![
                "launch 1 (k_add)".into(),
                "kernel k_add takes 4 argument(s)".into(),
                "gives 3".into(),
            ],
        ),
        (
            edited(dir.path(), "w4.toml", |t| {
                t.replace("{ f32 = 0.5 }", "\"a\"")
            }),
            "emu",
            vec![
                "kernel k_mul, argument 2".into(),
                "expected a 4-byte value (by_value), the launch gives a buffer".into(),
            ],
        ),
        (
            edited(dir.path(), "w5.toml", |t| {
                t.replace("kernel = \"k_mul\"", "kernel = \"k_div\"")
            }),
            "emu",
            vec![
                "no kernel \"k_div\"".into(),
                "its kernels: k_add, k_mul".into(),
            ],
        ),
        (
            edited(dir.path(), "w6.toml", |t| t),
            "emu:gfx1201",
            vec!["is for gfx1100, but emu:gfx1201 runs gfx1201: use --device emu".into()],
        ),
    ];
    for (w, device, want) in cases {
        let _ = std::fs::remove_file(&wst);
        let o = exe()
            .arg("capture")
            .arg("--workload")
            .arg(&w)
            .args(["--device", device])
            .arg("-o")
            .arg(&wst)
            .output()
            .unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{e}");
        for w in &want {
            assert!(e.contains(w.as_str()), "want {w:?} in {e}");
        }
        assert!(!wst.exists(), "nothing written: {e}");
    }

    // A dump directory that cannot be written: under a file, or not empty. Refused before the
    // capture, and neither the trace nor a partial directory is left.
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let full = dir.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("keep"), b"x").unwrap();
    for (d, want) in [
        (file.join("out"), "cannot be used: Not a directory"),
        (dir.path().join("no/such/parent"), "cannot create it in"),
        (full.clone(), "exists and is not empty"),
        (file.clone(), "exists and is not a directory"),
    ] {
        let o = capture(
            &examples().join("add_mul.gfx1100.toml"),
            dir.path(),
            &["--dump", d.to_str().unwrap()],
        );
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{e}");
        assert!(e.contains("dump directory") && e.contains(want), "{e}");
        assert!(!wst.exists(), "no trace: {e}");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("partial"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(std::fs::read_dir(&full).unwrap().count(), 1);
}
