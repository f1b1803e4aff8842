//! Issue #17: on multi-XCC parts (gfx950) SQTT streams are named "XCC x · SE y" in `info`,
//! `stats` and the app; single-XCC devices keep "SE n". The oracles are independent of our
//! split: the capture's own KFD properties with tinygrad's formula
//! (`se_cnt = array_count // simd_arrays_per_engine // num_xcc`, `ops_amd.py`), tinygrad's
//! stream files (`kern0_se{i}` in the recording's meta.json, with their itrace flags) and the
//! emulated MI350's documented topology (8 XCCs × 4 SEs, docs/conformance.md A60/A77).

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use profiler_ui::app::{App, Tab};

fn shared() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    for base in [
        here.join("../../shared"),
        here.join("../shared"),
        PathBuf::from("/work/shared"),
    ] {
        if base.join("traces").is_dir() {
            return base;
        }
    }
    panic!("shared/ not found: the gfx950 recording is this test's oracle");
}

fn gfx950_run() -> PathBuf {
    shared().join("traces/gfx950/empty_run_0")
}

fn exe() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wavescope"))
}

fn run(args: &[&str], file: &Path) -> String {
    let out = exe().args(args).arg(file).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?} {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn json(args: &[&str], file: &Path) -> serde_json::Value {
    serde_json::from_str(&run(args, file)).unwrap()
}

/// (XCCs, SEs per XCC) of the file's GPU from its device properties, tinygrad's way.
fn tinygrad_split(info: &serde_json::Value) -> (u64, u64) {
    let dev = info["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "AMD")
        .expect("device AMD");
    let p = |k: &str| {
        dev["props"][k]
            .as_u64()
            .unwrap_or_else(|| panic!("prop {k}"))
    };
    let xccs = p("num_xcc");
    (xccs, p("array_count") / p("simd_arrays_per_engine") / xccs)
}

/// Every stream of `info --json` carries the XCC and SE tinygrad's numbering gives it, and
/// the text names it so.
fn check_info(file: &Path, want: (u64, u64)) {
    let info = json(&["info", "--json"], file);
    assert_eq!(tinygrad_split(&info), want);
    let (xccs, per) = want;
    let sqtt = info["sqtt"].as_array().unwrap();
    let mut kerns = std::collections::BTreeMap::<i64, u64>::new();
    for s in sqtt {
        let se = s["se"].as_u64().unwrap();
        assert_eq!(s["xcc"].as_u64(), Some(se / per), "{s}");
        assert_eq!(s["xcc_se"].as_u64(), Some(se % per), "{s}");
        *kerns.entry(s["kern"].as_i64().unwrap()).or_default() += 1;
    }
    assert!(!kerns.is_empty());
    for (k, n) in kerns {
        assert_eq!(n, xccs * per, "kern {k}: one stream per SE of every XCC");
    }
    let text = run(&["info"], file);
    let last = format!(
        "se {:>2} XCC {} · SE {} ",
        xccs * per - 1,
        xccs - 1,
        per - 1
    );
    assert!(text.contains(&last), "no {last:?} in\n{text}");
    assert!(text.contains("se  4 XCC 1 · SE 0 "), "{text}");
}

#[test]
fn gfx950_recording_streams_are_named_by_xcc_and_se() {
    let dir = gfx950_run();
    let pkl = dir.join("profile.pkl");
    check_info(&pkl, (8, 4));
    // tinygrad's files: kern0_se{i}; the instruction-traced ones are the recording's own flags.
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("meta.json")).unwrap()).unwrap();
    let traced: Vec<u64> = meta["sqtt"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["itrace"] == true)
        .map(|s| {
            let se = s["se"].as_u64().unwrap();
            assert_eq!(s["file"], format!("kern0_se{se}.sqtt"));
            se
        })
        .collect();
    assert!(!traced.is_empty());
    let stats = json(&["stats", "--json"], &pkl);
    let k = &stats[0];
    assert_eq!(
        k["itraced_ses"],
        serde_json::json!(traced),
        "existing field unchanged"
    );
    let named: Vec<(u64, u64, u64)> = k["itraced_xcc_ses"]
        .as_array()
        .expect("itraced_xcc_ses on a multi-XCC device")
        .iter()
        .map(|x| {
            (
                x["se"].as_u64().unwrap(),
                x["xcc"].as_u64().unwrap(),
                x["xcc_se"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(u64, u64, u64)> = traced.iter().map(|&s| (s, s / 4, s % 4)).collect();
    assert_eq!(named, want);
    let text = run(&["stats"], &pkl);
    let list: Vec<String> = want
        .iter()
        .map(|(_, x, e)| format!("XCC {x} · SE {e}"))
        .collect();
    let line = format!("itraced SEs [{}]", list.join(", "));
    assert!(text.contains(&line), "no {line:?} in\n{text}");
}

#[test]
fn emulated_mi350_captures_are_named_by_xcc_and_se() {
    let dir = tempfile::tempdir().unwrap();
    for dev in ["emu-pci:gfx950", "emu:gfx950"] {
        let wst = dir.path().join(format!("{}.wst", dev.replace(':', "_")));
        let out = exe()
            .args(["capture", "--demo", "--device", dev, "-o"])
            .arg(&wst)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{dev}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        check_info(&wst, (8, 4));
        let text = run(&["stats"], &wst);
        assert!(text.contains("XCC 7 · SE 3"), "{dev}:\n{text}");
    }
}

#[test]
fn single_xcc_streams_keep_their_se_names() {
    let pkl = shared().join("traces/gfx1100/gemm_run_0/profile.pkl");
    let info = json(&["info", "--json"], &pkl);
    assert_eq!(tinygrad_split(&info).0, 1);
    for s in info["sqtt"].as_array().unwrap() {
        assert!(s.get("xcc").is_none() && s.get("xcc_se").is_none(), "{s}");
    }
    assert!(run(&["info"], &pkl).contains("kern 0 se  0 itrace"));
    let stats = json(&["stats", "--json"], &pkl);
    assert!(stats[0].get("itraced_xcc_ses").is_none());
    assert!(!run(&["stats"], &pkl).contains("XCC"));
}

/// The app's SQTT view on the gfx950 recording: row headers and the wave buttons name the XCC.
#[test]
fn app_sqtt_rows_name_xcc_and_se_on_gfx950() {
    let app = App::with_config_dir(Some(gfx950_run().join("profile.pkl")), None);
    let mut h = Harness::builder()
        .with_size(egui::vec2(1500.0, 950.0))
        .build_ui_state(|ui, app: &mut App| app.show(ui), app);
    common::wait(&mut h);
    assert!(h.state().loaded().is_some(), "trace did not load");
    h.state_mut().open_kernel(0);
    h.run_steps(2);
    common::wait(&mut h);
    let kv = h
        .state()
        .loaded()
        .unwrap()
        .kernel_view
        .as_ref()
        .expect("no SQTT view");
    assert_eq!(h.state().tab, Tab::Sqtt);
    assert_eq!(kv.data.se_name(5), "XCC 1 · SE 1");
    assert!(
        h.query_by_label("XCC 0 · SE 0, itrace").is_some(),
        "row header of stream 0"
    );
    assert!(
        h.query_by_label("XCC 0 · SE 1, itrace").is_some(),
        "row header of stream 1"
    );
    assert!(h.query_by_label("SE 1, itrace").is_none());
    assert!(
        h.query_by_label_contains("waves on 32 SEs (8 XCCs × 4)")
            .is_some(),
        "header names the XCCs"
    );
}
