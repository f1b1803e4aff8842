//! The command line's grammar and manners, on the real binary: bad values are usage errors
//! (exit 2, clap's usage text, the valid forms listed); every reporting command has `--json`;
//! exit statuses 0/1/2/3 as `--help` documents; a closed stdout is a quiet exit; environment
//! variables arrive through clap; written files get ordinary permissions; a directory or a
//! missing file is reported plainly, each cause once.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

fn exe() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wavescope"));
    // The tests set what they need; nothing leaks in from the caller's shell.
    for v in [
        "WAVESCOPE_PCI_UNBIND",
        "WAVESCOPE_PCI_VFIO",
        "WAVESCOPE_USB_DETACH",
        "WAVESCOPE_AMDGPU_FIRMWARE",
        "WAVESCOPE_SQTT_BUFFER_MB",
        "WAVESCOPE_CONFIG_DIR",
    ] {
        c.env_remove(v);
    }
    c
}

fn run(args: &[&str]) -> Output {
    exe().args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)))
}

fn fixture(name: &str) -> String {
    format!(
        "{}/../tests/fixtures/kernels/emu/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// One demo capture on the emulator, shared by the tests of this file.
fn demo() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        let o = exe()
            .args(["capture", "--demo", "--device", "emu", "-o"])
            .arg(dir.join("demo.wst"))
            .arg("--rgp")
            .arg(dir.join("demo.rgp"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        dir
    })
}

/// A usage error: status 2, clap's `Usage:` line, and `want` in the message.
fn usage_error(args: &[&str], want: &[&str]) {
    let o = run(args);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
    assert!(e.contains("Usage:"), "{args:?}: {e}");
    for w in want {
        assert!(e.contains(w), "{args:?}: no {w:?} in {e}");
    }
    assert!(o.stdout.is_empty(), "{args:?}");
}

#[test]
fn bad_values_are_usage_errors_listing_valid_forms() {
    // The three, as a user types them.
    usage_error(
        &["capture", "--grid", "x"],
        &["--grid", "X[,Y[,Z]]", "positive numbers"],
    );
    usage_error(&["capture", "--arg", "buf:zz"], &["--arg", "N, NK or NM"]);
    usage_error(
        &["capture", "--device", "nope"],
        &[
            "--device",
            "emu, emu:gfx1100, emu:gfx1201, emu:gfx950, emu-pci[:gfx1201|:gfx950], emu-usb[:gfx1201], kfd[:N], pci:N, usb:N",
        ],
    );
    let k = fixture("vadd.hsaco");
    usage_error(
        &["capture", &k, "--grid", "x"],
        &["--grid", "positive numbers"],
    );
    usage_error(&["capture", &k, "--block", "1,2,3,4"], &["--block"]);
    usage_error(
        &["capture", &k, "--arg", "buf:zz"],
        &["--arg", "N, NK or NM"],
    );
    usage_error(
        &["capture", &k, "--arg", "buf:4:nope"],
        &["zero, iota, rand[=SEED], u32=V or f32=V"],
    );
    usage_error(
        &["capture", &k, "--arg", "vec:3"],
        &["buf:SIZE[:FILL], u32:V, i32:V or f32:V"],
    );
    usage_error(
        &["capture", "--demo", "--device", "nope"],
        &[
            "--device",
            "emu, emu:gfx1100, emu:gfx1201, emu:gfx950, emu-pci[:gfx1201|:gfx950], emu-usb[:gfx1201], kfd[:N], pci:N, usb:N",
        ],
    );
    usage_error(&["capture", "--demo", "--device", "emu,usb:x"], &["usb:x"]);
    usage_error(&["capture", "--demo", "--repeat", "0"], &["--repeat"]);
    usage_error(
        &["capture", "--demo", "--itrace-se-mask", "0xg"],
        &["--itrace-se-mask"],
    );
    usage_error(&["capture"], &["CODE_OBJECT"]);
    usage_error(&["capture", "--demo", &k], &["cannot be used with"]);
    usage_error(
        &["devices", "--emulated", "gfx9999"],
        &["gfx1100, gfx1201 (or gfx1200), gfx950"],
    );
    usage_error(&["decode", "x.sqtt", "--arch", "rdna3"], &["gfx1100"]);
    usage_error(
        &["decode", "x.sqtt", "--format", "yaml"],
        &["canonical", "summary"],
    );
    usage_error(&["open", "x.wst", "--size", "big"], &["WIDTHxHEIGHT"]);
    usage_error(
        &["diff", "a", "b", "--fail-if-slower", "0"],
        &["positive ratio"],
    );
}

#[test]
fn environment_variables_arrive_through_clap() {
    // Invalid values from the environment are usage errors naming the variable's flag, which
    // shows the variable is read where clap reads it (and nowhere it would be ignored).
    let k = fixture("vadd.hsaco");
    for (var, val, flag) in [
        ("WAVESCOPE_SQTT_BUFFER_MB", "0", "--sqtt-buffer-mib"),
        ("WAVESCOPE_PCI_UNBIND", "maybe", "--pci-unbind"),
        ("WAVESCOPE_PCI_VFIO", "maybe", "--pci-vfio"),
        ("WAVESCOPE_USB_DETACH", "maybe", "--usb-detach"),
    ] {
        let o = exe().args(["capture", &k]).env(var, val).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{var}: {}", stderr(&o));
        assert!(stderr(&o).contains(flag), "{var}: {}", stderr(&o));
    }
    let help = String::from_utf8_lossy(&run(&["capture", "--help"]).stdout).into_owned();
    for var in [
        "WAVESCOPE_SQTT_BUFFER_MB",
        "WAVESCOPE_PCI_UNBIND",
        "WAVESCOPE_PCI_VFIO",
        "WAVESCOPE_USB_DETACH",
        "WAVESCOPE_AMDGPU_FIRMWARE",
    ] {
        assert!(help.contains(&format!("env: {var}")), "{var}: {help}");
    }
}

#[test]
fn help_documents_exit_statuses() {
    for args in [&["--help"][..], &["capture", "--help"], &["diff", "--help"]] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(0));
        let h = String::from_utf8_lossy(&o.stdout);
        for line in [
            "0  success",
            "1  error",
            "2  usage error",
            "3  a check failed",
        ] {
            assert!(h.contains(line), "{args:?}: {h}");
        }
    }
}

#[test]
fn every_reporting_command_has_json() {
    let d = demo();
    let wst = d.join("demo.wst");
    let wst = wst.to_str().unwrap();

    let v = json(&run(&["devices", "--emulated", "gfx1100", "--json"]));
    assert_eq!(v["kfd"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["kfd"][0]["target"], "gfx1100");
    assert_eq!(v["kfd"][0]["ses"], 6);
    // Every emulated device `capture --device` accepts is offered, each once.
    let mut offered: Vec<String> = v["emulated"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["device"].as_str().unwrap().to_string())
        .collect();
    offered.sort();
    assert_eq!(
        offered,
        [
            "emu",
            "emu-pci",
            "emu-pci:gfx1201",
            "emu-pci:gfx950",
            "emu-usb",
            "emu-usb:gfx1201",
            "emu:gfx1201",
            "emu:gfx950"
        ],
        "{v}"
    );

    let v = json(&run(&["disasm", &fixture("vadd.hsaco"), "--json"]));
    assert_eq!(v["target"], "gfx1100");
    let k = &v["kernels"][0];
    assert_eq!(k["name"], "vadd");
    assert_eq!(k["args"].as_array().unwrap().len(), 4);
    let insts = k["instructions"].as_array().unwrap();
    assert!(insts
        .iter()
        .any(|i| i["text"].as_str().unwrap().starts_with("s_endpgm")));
    // --kernel filters by name, as in stats and diff.
    let v = json(&run(&[
        "disasm",
        &fixture("vadd.hsaco"),
        "--kernel",
        "va",
        "--json",
    ]));
    assert_eq!(v["kernels"].as_array().unwrap().len(), 1);

    let conv = d.join("conv.wst");
    let v = json(&run(&[
        "convert",
        d.join("demo.rgp").to_str().unwrap(),
        "-o",
        conv.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(v["input_format"], "rgp");
    assert_eq!(v["output"], conv.to_str().unwrap());
    assert_eq!(v["kernels"], 3);
    assert_eq!(v["bytes"], std::fs::metadata(&conv).unwrap().len());

    let rgp = d.join("again.rgp");
    let v = json(&run(&[
        "export",
        "rgp",
        wst,
        "-o",
        rgp.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(v["format"], "rgp");
    assert_eq!(v["bytes"], std::fs::metadata(&rgp).unwrap().len());

    let pf = d.join("p.json");
    let v = json(&run(&[
        "export",
        "perfetto",
        wst,
        "-o",
        pf.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(v["format"], "perfetto");
    assert_eq!(v["kernel_slices"], 3);
    // Wave32 demo: 32 + 64 + 128 waves.
    assert_eq!(v["wave_slices"], 224);

    for args in [
        vec!["info", wst, "--json"],
        vec!["stats", wst, "--json"],
        vec!["diff", wst, wst, "--json"],
    ] {
        let v = json(&run(&args));
        assert!(v.is_object() || v.is_array(), "{args:?}");
    }
}

#[test]
fn a_failed_check_exits_3() {
    let wst = demo().join("demo.wst");
    let wst = wst.to_str().unwrap();
    // The same capture twice: every kernel's time ratio is 1.
    let o = run(&["diff", wst, wst, "--fail-if-slower", "1.0"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(&["diff", wst, wst, "--fail-if-slower", "0.5"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("slower than 0.5x"), "{}", stderr(&o));
    // Plain errors are 1.
    assert_eq!(run(&["info", "/nonexistent/x.wst"]).status.code(), Some(1));
    // `conform`: a recording matches itself (0); with and without SQTT the streams differ
    // beyond what docs/conformance.md accepts (3).
    let rec = testdata::shared("conformance/tinygrad");
    let (add, sqtt) = (
        rec.join("kfd_gfx1100_add.jsonl"),
        rec.join("kfd_gfx1100_add_sqtt.jsonl"),
    );
    let (add, sqtt) = (add.to_str().unwrap(), sqtt.to_str().unwrap());
    let o = run(&["conform", add, add]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(&["conform", add, sqtt]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("DIFFERS"), "{}", stderr(&o));
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let wst = demo().join("demo.wst");
    for args in [
        vec!["info", wst.to_str().unwrap()],
        vec!["disasm", &fixture("matmul.hsaco")],
        vec!["stats", wst.to_str().unwrap()],
    ] {
        let mut child = exe()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // No reader: the first write fails with EPIPE.
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(o.stderr.is_empty(), "{args:?}: {}", stderr(&o));
    }
}

/// This process's umask, from /proc (children inherit it).
fn umask() -> u32 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = s.lines().find(|l| l.starts_with("Umask:")).unwrap();
    u32::from_str_radix(line.split_whitespace().nth(1).unwrap(), 8).unwrap()
}

#[test]
fn written_files_have_ordinary_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let d = demo();
    let wst = d.join("demo.wst");
    let (conv, rgp, pf) = (d.join("perm.wst"), d.join("perm.rgp"), d.join("perm.json"));
    let s = |p: &Path| p.to_str().unwrap().to_string();
    for args in [
        vec!["convert".into(), s(&wst), "-o".into(), s(&conv)],
        vec!["export".into(), "rgp".into(), s(&wst), "-o".into(), s(&rgp)],
        vec![
            "export".into(),
            "perfetto".into(),
            s(&wst),
            "-o".into(),
            s(&pf),
        ],
    ] {
        let o = exe().args(&args).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    }
    let want = 0o666 & !umask();
    for f in [d.join("demo.wst"), d.join("demo.rgp"), conv, rgp, pf] {
        let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, want, "{}: {mode:o}", f.display());
    }
}

#[test]
fn a_directory_and_a_missing_file_are_reported_plainly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    for args in [
        vec!["info", d],
        vec!["stats", d],
        vec!["decode", d],
        vec!["convert", d, "-o", "/tmp/never.wst"],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let e = stderr(&o);
        assert!(e.contains(&format!("{d}: is a directory")), "{args:?}: {e}");
    }
    let missing = dir.path().join("missing.wst");
    let m = missing.to_str().unwrap();
    for args in [
        vec!["info", m],
        vec!["decode", m],
        vec!["disasm", m],
        vec!["diff", m, m],
        vec!["capture", m],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let e = stderr(&o);
        assert_eq!(
            e.matches("No such file or directory").count(),
            1,
            "{args:?}: {e}"
        );
        assert_eq!(e.matches(m).count(), 1, "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
    }
}
