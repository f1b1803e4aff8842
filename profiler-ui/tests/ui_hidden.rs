//! The kernel-level exposed latency is one number: what `wavescope stats --json` reports
//! (`latency_split.exposed`, and the sum of its instructions' `exposed`) is what the app's
//! instruction table states, on the shared gemm and sync captures.

use std::path::PathBuf;

mod common;

use common::wait;
use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use profiler_ui::app::{App, Tab};

fn stats_json(profile: &std::path::Path) -> serde_json::Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wavescope"))
        .args(["stats", "--json"])
        .arg(profile)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn check(rel: &str) {
    let Some(dir) = testdata::require_shared(rel) else {
        return;
    };
    let profile: PathBuf = dir.join("profile.pkl");
    let v = stats_json(&profile);
    for k in v.as_array().unwrap() {
        let split = &k["latency_split"];
        let exposed = split["exposed"].as_i64().unwrap();
        let latency = split["latency"].as_i64().unwrap();
        let insts = k["instructions"].as_array().unwrap();
        let (mut sum_total, mut sum_exposed) = (0, 0);
        for i in insts {
            let hidden: i64 = i["hidden"]
                .as_object()
                .unwrap()
                .values()
                .map(|x| x.as_i64().unwrap())
                .sum();
            let (t, e) = (i["total"].as_i64().unwrap(), i["exposed"].as_i64().unwrap());
            assert_eq!(e + hidden, t, "{i}");
            sum_total += t;
            sum_exposed += e;
        }
        assert_eq!(
            (sum_total, sum_exposed),
            (latency, exposed),
            "{}",
            k["kernel"]
        );
        let waves_exposed: i64 = k["wave_latency"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["exposed"].as_i64().unwrap())
            .sum();
        assert_eq!(waves_exposed, exposed);
        if latency == 0 {
            continue;
        }
        // The app, on the same kernel: its instruction table states the same total.
        let app = App::with_config_dir(Some(profile.clone()), None);
        let mut h = Harness::builder()
            .with_size(egui::vec2(1500.0, 950.0))
            .build_ui_state(|ui, app: &mut App| app.show(ui), app);
        wait(&mut h);
        h.state_mut()
            .open_kernel(k["index"].as_u64().unwrap() as usize);
        wait(&mut h);
        h.state_mut().tab = Tab::Instructions;
        h.run_steps(3);
        let want = format!("latency {latency} clk · exposed {exposed} clk");
        assert!(
            h.query_by_label_contains(&want).is_some(),
            "{rel}: the app does not show {want:?}"
        );
    }
}

#[test]
fn gemm_exposed_total_is_the_same_in_stats_json_and_the_app() {
    check("traces/gfx1100/gemm_run_0");
}

#[test]
fn sync_exposed_total_is_the_same_in_stats_json_and_the_app() {
    check("traces/gfx1100/sync_run_0");
}
