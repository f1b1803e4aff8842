//! The app driven headless with egui_kittest on the shared gfx1100 gemm capture: the kernel is
//! on the timeline, clicking it opens the SQTT view with the reference's wave count, clicking a
//! wave lists its instructions, search finds the kernel, export writes a file `info` reads.

use std::path::{Path, PathBuf};

mod common;

use common::wait;
use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use profiler_ui::app::{App, ExportKind, State, Tab};

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
    panic!("shared/ not found");
}

fn gemm() -> PathBuf {
    shared().join("traces/gfx1100/gemm_run_0/profile.pkl")
}

/// The wave count of the independent reference decode (tinygrad), summed over the SEs.
fn reference_waves() -> usize {
    let r: serde_json::Value = serde_json::from_slice(
        &std::fs::read(shared().join("traces/gfx1100/gemm_run_0/reference.json")).unwrap(),
    )
    .unwrap();
    r["sqtt_events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["decoder_2026_08"]["wave_count"].as_u64().unwrap() as usize)
        .sum()
}

fn l_timeline_clone(h: &Harness<'static, App>) -> profiler_ui::layout::timeline::TimelineModel {
    h.state().loaded().unwrap().timeline.clone()
}

fn harness(file: PathBuf) -> Harness<'static, App> {
    let app = App::with_config_dir(Some(file), None);
    let mut h = Harness::builder()
        .with_size(egui::vec2(1500.0, 950.0))
        .build_ui_state(|ui, app: &mut App| app.show(ui), app);
    wait(&mut h);
    h
}

#[test]
fn kernel_on_timeline_click_opens_sqtt_and_a_wave_lists_instructions() {
    let mut h = harness(gemm());
    assert!(h.state().loaded().is_some(), "trace did not load");
    // The whole profile is 30 ms wide, the kernel 4.7 µs: zoom onto it first (the search's
    // jump-to), then it is a span on the AMD track with its name as an accessible label.
    let l = h.state().loaded().unwrap();
    assert_eq!(l.timeline.search_kernels("r_32_32_16_2").len(), 1);
    let amd = l
        .timeline
        .tracks
        .iter()
        .position(|t| t.name == "AMD")
        .expect("AMD track");
    assert_eq!(l.timeline.kernel_pos.get(&0).map(|p| p.0), Some(amd));
    let tm = l_timeline_clone(&h);
    h.state_mut()
        .loaded_mut()
        .unwrap()
        .tl
        .jump_to_kernel(&tm, 0);
    h.run_steps(2);
    let kernel = h.get_by_label("kernel r_32_32_16_2");
    kernel.click();
    h.run_steps(2);
    wait(&mut h);
    assert_eq!(h.state().tab, Tab::Sqtt);
    let kv = h
        .state()
        .loaded()
        .unwrap()
        .kernel_view
        .as_ref()
        .expect("no SQTT view");
    assert_eq!(kv.waves, reference_waves());
    let shown = format!("{} waves on 6 SEs", reference_waves());
    assert!(
        h.query_by_label_contains(&shown).is_some(),
        "header with the wave count missing"
    );
    // Waves of the itraced SE 0 are clickable; the first one on the traced SIMD has tokens.
    let wave = h.get_by_label_contains("wave SE0 CU0 SIMD0 W0 #0");
    wave.click();
    h.run_steps(3);
    assert!(h.query_by_label_contains("Wave #0").is_some());
    // Its instruction list: the first instruction of the program, disassembled.
    assert!(h
        .query_by_label("s_load_b128 s[4:7], s[0:1], null")
        .is_some());
    assert!(h.query_by_label("58 instructions").is_some());
}

#[test]
fn search_finds_and_jumps_to_a_kernel() {
    let mut h = harness(gemm());
    h.get_by_role(egui::accesskit::Role::TextInput).click();
    h.run_steps(2);
    h.get_by_role(egui::accesskit::Role::TextInput)
        .type_text("r_32");
    h.run_steps(3);
    assert_eq!(h.state().loaded().unwrap().search, "r_32");
    assert!(h.query_by_label("1 found").is_some());
    h.get_by_label_contains("r_32_32_16_2 @").click();
    h.run_steps(3);
    let l = h.state().loaded().unwrap();
    let s = l.timeline.kernel_span(0).unwrap();
    // Jump-to zooms so that the kernel fills about a third of the view, and selects it (the
    // view is on the time axis, idle gaps collapsed; a kernel is never inside a gap).
    let ax = l.tl.axis(&l.timeline);
    let (a, b) = (ax.to_axis(s.start), ax.to_axis(s.end));
    assert!((b - a - (s.end - s.start)).abs() < 1e-6);
    assert!(l.tl.view.start <= a && l.tl.view.end >= b);
    assert!(l.tl.view.len() < (s.end - s.start) * 4.0);
    assert_eq!(
        l.tl.selected,
        Some(profiler_ui::layout::timeline::Target::Kernel(0))
    );
}

#[test]
fn instruction_table_and_pmc_tabs() {
    let mut h = harness(gemm());
    h.state_mut().open_kernel(0);
    wait(&mut h);
    h.state_mut().tab = Tab::Instructions;
    h.run_steps(3);
    assert!(h.query_by_label_contains("Median").is_some());
    h.state_mut().tab = Tab::Pmc;
    h.run_steps(3);
    assert!(h.query_by_label("SQ_INSTS_VALU").is_some());
    // Sum of the counter as the reference (tinygrad's own PMC decode) has it.
    assert!(h.query_by_label("30720").is_some());
}

#[test]
fn export_writes_a_file_that_info_reads() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("profile.pkl");
    std::fs::copy(gemm(), &copy).unwrap();
    let mut h = harness(copy);
    // Through the menu: File > Export to .rgp… > Export (default path next to the trace).
    h.get_by_label("File").click();
    h.run_steps(2);
    h.get_by_label("Export to .rgp…").click();
    h.run_steps(2);
    h.get_by_label("Export").click();
    h.run_steps(1);
    wait(&mut h);
    let out = dir.path().join("profile.rgp");
    assert!(out.exists(), "no .rgp written");
    assert!(h.query_by_label_contains("wrote").is_some());
    // `wavescope info` reads it back.
    let info = std::process::Command::new(env!("CARGO_BIN_EXE_wavescope"))
        .arg("info")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        info.status.success(),
        "{}",
        String::from_utf8_lossy(&info.stderr)
    );
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(
        text.contains("(rgp)") && text.contains("r_32_32_16_2"),
        "{text}"
    );
    // Perfetto through the API.
    let pf = dir.path().join("p.json");
    h.state_mut().export(ExportKind::Perfetto, pf.clone());
    wait(&mut h);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&pf).unwrap()).unwrap();
    assert!(v.to_string().contains("r_32_32_16_2"));
}

#[test]
fn welcome_screen_and_recent_files() {
    let dir = tempfile::tempdir().unwrap();
    let app = App::with_config_dir(None, Some(dir.path().to_path_buf()));
    let mut h = Harness::builder()
        .with_size(egui::vec2(1200.0, 800.0))
        .build_ui_state(|ui, app: &mut App| app.show(ui), app);
    h.run_steps(2);
    assert!(h.query_by_label("Recent files").is_some());
    h.state_mut().open(gemm());
    wait(&mut h);
    // The file is remembered for the next start.
    let app2 = App::with_config_dir(None, Some(dir.path().to_path_buf()));
    assert_eq!(app2.recent.len(), 1);
    assert!(app2.recent[0].ends_with("profile.pkl"));
}

/// Every malformed-file case shows an error in the window (and nothing panics).
#[test]
fn bad_files_show_an_error_in_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(gemm()).unwrap();
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("unknown-magic", b"hello world, not a trace".to_vec()),
        ("truncated-pickle", good[..good.len() / 2].to_vec()),
        (
            "pickle-huge-bytes-length",
            b"\x80\x04\x8e\x00\x00\x00\x00\x00\x00\x00\x40.".to_vec(),
        ),
        ("pickle-not-a-list", b"\x80\x04K\x01.".to_vec()),
    ];
    let mut flipped = good.clone();
    let at = flipped.len() / 3;
    flipped[at] ^= 0xff;
    cases.push(("corrupt-byte", flipped));
    // A .wst and an .rgp cut short (written from the good capture first).
    let (_, profile) = traces::open::open_path(&gemm()).unwrap();
    let rgp = traces::rgp::export(&profile, &Default::default()).unwrap();
    cases.push(("truncated-rgp", rgp[..rgp.len() / 2].to_vec()));
    let mut rgp_bad = rgp.clone();
    for b in rgp_bad.iter_mut().skip(64).take(64) {
        *b = 0xff;
    }
    cases.push(("corrupt-rgp-chunk-headers", rgp_bad));
    let wst_path = dir.path().join("g.wst");
    traces::wst::write_file(&profile, &wst_path).unwrap();
    let wst = std::fs::read(&wst_path).unwrap();
    cases.push(("truncated-wst", wst[..wst.len() / 2].to_vec()));
    let mut shown = 0;
    for (name, bytes) in &cases {
        let p = dir.path().join(format!("{name}.bin"));
        std::fs::write(&p, bytes).unwrap();
        let mut h = harness(p);
        match &h.state().state {
            State::Failed { error, .. } => {
                assert!(!error.is_empty());
                assert!(
                    h.query_by_label("Could not open the file").is_some(),
                    "{name}"
                );
                assert!(h.query_by_label(error).is_some(), "{name}: error not shown");
                shown += 1;
            }
            // A corruption the importer tolerates must still give a usable window.
            State::Loaded(_) => assert!(*name == "corrupt-byte", "{name} loaded"),
            _ => panic!("{name}: still loading"),
        }
        h.run_steps(1);
    }
    assert!(shown >= cases.len() - 1, "{shown} of {}", cases.len());
    // A path that does not exist.
    let mut h = harness(dir.path().join("missing.pkl"));
    assert!(matches!(h.state().state, State::Failed { .. }));
    h.run_steps(1);
}
