//! Compare mode in the app, headless (egui_kittest): two emulator captures of the fixture pair
//! that differs by one instruction; B's kernels appear on the timeline strip, and the
//! instruction table becomes the A / B / delta table with the edit marked.

use std::path::{Path, PathBuf};

mod common;

use common::wait;
use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use profiler_ui::app::{App, Tab};
use profiler_ui::views::compare;

fn capture(dir: &Path, hsaco: &str, out: &str) -> PathBuf {
    let path = dir.join(out);
    let k = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/kernels/emu")
        .join(hsaco);
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_wavescope"))
        .arg("capture")
        .arg(&k)
        .args(["--kernel", "edited", "--device", "emu", "--grid", "2"])
        .args([
            "--arg",
            "buf:512",
            "--arg",
            "buf:512:rand",
            "--arg",
            "buf:512:rand",
        ])
        .args(["--arg", "u32:128", "-o"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    path
}

#[test]
fn compare_with_shows_b_on_the_timeline_and_delta_columns() {
    let dir = tempfile::tempdir().unwrap();
    let a = capture(dir.path(), "diff_a.hsaco", "a.wst");
    let b = capture(dir.path(), "diff_b.hsaco", "b.wst");
    let app = App::with_config_dir(Some(a), None);
    let mut h = Harness::builder()
        .with_size(egui::vec2(1500.0, 900.0))
        .build_ui_state(|ui, app: &mut App| app.show(ui), app);
    wait(&mut h);
    assert!(h.state().loaded().is_some());
    // Without a compare capture there is no B lane.
    assert!(h.query_by_label("B kernel edited").is_none());
    h.state_mut().compare_with(b);
    wait(&mut h);
    let c = h.state().loaded().unwrap().compare.loaded.as_ref();
    let c = c.expect("compare capture loaded");
    assert_eq!(
        c.pairs.get(&0).map(|p| p.0),
        Some(0),
        "kernel 0 pairs with B's kernel 0"
    );
    assert!(h.query_by_label("A kernel edited").is_some());
    assert!(h.query_by_label("B kernel edited").is_some());
    // A's lane uses the timeline's x mapping: its kernel sits right above the track's.
    let strip = h.get_by_label("A kernel edited").rect();
    let track = h.get_by_label("kernel edited").rect();
    assert!(
        (strip.left() - track.left()).abs() < 1.0 && (strip.right() - track.right()).abs() < 1.0,
        "strip {strip:?} vs track {track:?}"
    );

    // The instruction tab of the kernel: A / B / delta columns and the edit marked.
    h.state_mut().open_kernel(0);
    wait(&mut h);
    h.state_mut().tab = Tab::Instructions;
    h.run_steps(2);
    wait(&mut h);
    for col in ["Hits A", "Hits B", "Δ total", "Δ mean"] {
        assert!(h.query_by_label(col).is_some(), "column {col} missing");
    }
    assert!(h.query_by_label_contains("1 removed, 1 added").is_some());
    assert!(h.query_by_label("v_sub_nc_u32_e32 v6, v2, v3").is_some());
    assert!(h.query_by_label("v_add_nc_u32_e32 v6, v3, v2").is_some());
    // The added row's mark ("-" for the removed one also fills empty cells, so not queried).
    assert!(h.query_by_label("+").is_some());

    // Headers sort: a click sorts by the column (numbers largest first), a second reverses.
    h.get_by_label("Total B").click();
    h.run_steps(2);
    assert!(h.query_by_label("Total B v").is_some());
    h.get_by_label("Total B v").click();
    h.run_steps(2);
    assert!(h.query_by_label("Total B ^").is_some());
    let c = h.state().loaded().unwrap().compare.loaded.as_ref().unwrap();
    let Some((_, Ok(d))) = &c.kernel_diff else {
        panic!("kernel diff missing")
    };
    let rows = &d.instructions;
    let total_b = |i: usize| rows[i].b.as_ref().map_or(-1, |s| s.total);
    let order = compare::sorted_order(rows, Some((7, true)));
    assert_eq!(order.len(), rows.len());
    assert!(order.windows(2).all(|w| total_b(w[0]) >= total_b(w[1])));
    let order = compare::sorted_order(rows, Some((7, false)));
    assert!(order.windows(2).all(|w| total_b(w[0]) <= total_b(w[1])));
    // The removed instruction has no B side: it sorts below every B value.
    assert!(rows[order[0]].b.is_none());
}

#[test]
fn open_with_compare_loads_both() {
    // `wavescope open A --compare B`: B is opened once A has loaded.
    let dir = tempfile::tempdir().unwrap();
    let a = capture(dir.path(), "diff_a.hsaco", "a.wst");
    let b = capture(dir.path(), "diff_b.hsaco", "b.wst");
    let app = App::with_config_dir(Some(a), None).with_compare(b);
    let mut h = Harness::builder()
        .with_size(egui::vec2(1500.0, 900.0))
        .build_ui_state(|ui, app: &mut App| app.show(ui), app);
    wait(&mut h);
    wait(&mut h);
    let l = h.state().loaded().expect("A loaded");
    let c = l
        .compare
        .loaded
        .as_ref()
        .expect("B loaded as the compare capture");
    assert_eq!(c.pairs.get(&0).map(|p| p.0), Some(0));
    assert!(h.query_by_label("B kernel edited").is_some());
}
