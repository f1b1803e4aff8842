//! Perfetto / Chrome trace JSON export.

mod formats_common;
use formats_common::*;

use traces::open::open_path;
use traces::perfetto::{write_json, PerfettoOptions};

#[test]
fn perfetto_json_is_valid_and_complete() {
    for dir in capture_dirs() {
        let name = dir.display().to_string();
        let (_, p) = open_path(&dir.join("profile.pkl")).unwrap();
        let mut out = Vec::new();
        let stats = write_json(&p, &PerfettoOptions::default(), &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let events = v["traceEvents"].as_array().unwrap();
        let mut kernels = 0;
        let mut waves = 0;
        let mut ranges = 0;
        for e in events {
            if e["ph"] != "X" {
                continue;
            }
            assert!(
                e["pid"].as_u64().is_some() && e["tid"].as_u64().is_some(),
                "{name}: {e}"
            );
            let ts = e["ts"].as_f64().unwrap();
            let dur = e["dur"].as_f64().unwrap();
            assert!(
                ts.is_finite() && dur.is_finite() && dur >= 0.0,
                "{name}: {e}"
            );
            match e["cat"].as_str().unwrap() {
                "kernel" => kernels += 1,
                "wave" => waves += 1,
                "range" => ranges += 1,
                c => panic!("{c}"),
            }
        }
        assert_eq!(kernels, p.kernels.len(), "{name}");
        assert_eq!(ranges, p.ranges.len(), "{name}");
        // Wave slices = waves the decoder reconstructs from every SQTT stream of the model.
        let mut expected_waves = 0;
        for s in &p.sqtt {
            let target = p.props_device(s.device).and_then(|d| d.target());
            expected_waves +=
                traces::sqtt::analyze(p.blob(s.blob), target).map_or(0, |a| a.waves.len());
        }
        assert_eq!(waves, expected_waves, "{name}");
        assert_eq!(stats.wave_slices, waves);
        assert!(waves > 0, "{name}: no waves decoded");
        // Every (pid, tid) used by a slice is named.
        let named: std::collections::HashSet<(u64, u64)> = events
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
            .map(|e| (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()))
            .collect();
        for e in events.iter().filter(|e| e["ph"] == "X") {
            assert!(
                named.contains(&(e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap())),
                "{name}: unnamed thread {e}"
            );
        }
    }
}

#[test]
fn rdna_waves_fall_inside_their_kernel() {
    // With realtime markers, wave slices are placed on the GPU clock and must lie within the
    // kernel's start/end timestamps (taken from HCQ signals, independent of the SQTT stream).
    let dir = shared().join("traces/gfx1100/gemm_run_0");
    let (_, p) = open_path(&dir.join("profile.pkl")).unwrap();
    let mut out = Vec::new();
    let stats = write_json(&p, &PerfettoOptions::default(), &mut out).unwrap();
    assert_eq!(stats.approximate_placement, 0);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let ev = v["traceEvents"].as_array().unwrap();
    let k = ev.iter().find(|e| e["cat"] == "kernel").unwrap();
    let (ks, ke) = (
        k["ts"].as_f64().unwrap(),
        k["ts"].as_f64().unwrap() + k["dur"].as_f64().unwrap(),
    );
    for w in ev.iter().filter(|e| e["cat"] == "wave") {
        let (ws, we) = (
            w["ts"].as_f64().unwrap(),
            w["ts"].as_f64().unwrap() + w["dur"].as_f64().unwrap(),
        );
        assert!(
            ws >= ks - 0.05 && we <= ke + 0.05,
            "wave {ws}..{we} outside kernel {ks}..{ke}"
        );
    }
}
