//! Compare mode in the app, headless (egui_kittest): two emulator captures of the fixture pair
//! that differs by one instruction; B's kernels appear on the timeline strip, and the
//! instruction table becomes the A / B / delta table with the edit marked.

use std::path::{Path, PathBuf};

use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use profiler_ui::app::{App, Tab};

fn capture(dir: &Path, hsaco: &str, out: &str) -> PathBuf {
    let path = dir.join(out);
    let k = format!(
        "{}:edited",
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/kernels/emu")
            .join(hsaco)
            .display()
    );
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_wavescope"))
        .args(["capture", "--device", "emu", "--kernel", &k, "--grid", "2"])
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

fn wait(h: &mut Harness<'static, App>) {
    for _ in 0..2000 {
        h.step();
        if !h.state().busy() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    h.run_steps(3);
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
}
