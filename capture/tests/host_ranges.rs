//! The runtime's host-side work (code-object loads, allocations, copies, submits, waits and
//! launches) on the CPU track of a demo capture on the emulated gfx1100: every kind present, in
//! the order the capture does it, nested inside the capture's own range, kept by `.wst` and
//! exported to Perfetto as a CPU track.

use capture::{run_demo, CaptureOptions, DeviceSpec};
use traces::model::{Attr, Profile, RangeEvent};

fn kind(r: &RangeEvent) -> &str {
    match &r.key {
        Some(Attr::Str(s)) => s,
        _ => "",
    }
}

fn cpu_ranges(p: &Profile) -> (u32, Vec<(usize, &RangeEvent)>) {
    let cpu = p
        .devices
        .iter()
        .position(|d| d.name == "CPU" && !d.declared)
        .expect("an undeclared CPU device") as u32;
    let rs = p
        .ranges
        .iter()
        .enumerate()
        .filter(|(_, r)| r.device == cpu)
        .collect();
    (cpu, rs)
}

#[test]
fn demo_capture_has_nested_host_ranges_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let wst = dir.path().join("demo.wst");
    let opts = CaptureOptions {
        devices: vec![DeviceSpec::Emu],
        wst: Some(wst.clone()),
        ..Default::default()
    };
    let r = run_demo(&opts, &mut |_, _, _| {}).unwrap();
    let p = &r.profile;
    let (_, rs) = cpu_ranges(p);

    // One outer range: the capture, with everything else inside it (by time and by nesting).
    let outer: Vec<_> = rs.iter().filter(|(_, r)| r.depth == 0).collect();
    assert_eq!(outer.len(), 1, "{outer:?}");
    let (ci, cap) = *outer[0];
    assert_eq!((cap.name.as_str(), kind(cap)), ("capture", "capture"));
    let cap_end = cap.end.unwrap();
    for (_, r) in &rs {
        assert!(r.start >= cap.start && r.end.unwrap() <= cap_end, "{r:?}");
        let mut at: &RangeEvent = r;
        while let Some(parent) = at.parent {
            at = &p.ranges[parent as usize];
        }
        assert!(
            std::ptr::eq(at, &p.ranges[ci]),
            "{} is not inside the capture",
            r.name
        );
    }
    for k in ["load", "alloc", "copy", "submit", "wait", "launch"] {
        assert!(rs.iter().any(|(_, r)| kind(r) == k), "no {k} range");
    }

    // Per demo kernel: loaded, its inputs copied in, launched, waited for, in that order; the
    // load's own allocation, upload and wait nest inside it, the launch's submit inside it.
    let find = |name: &str| {
        rs.iter()
            .find(|(_, r)| r.name == name)
            .unwrap_or_else(|| panic!("no host range {name:?}"))
    };
    let children = |i: usize| -> Vec<&str> {
        rs.iter()
            .filter(|(_, r)| r.parent == Some(i as u32))
            .map(|(_, r)| kind(r))
            .collect()
    };
    for k in ["vadd", "reduce", "matmul"] {
        let (li, load) = *find(&format!("load {k}"));
        let (ni, launch) = *find(&format!("launch {k}"));
        assert!(load.end.unwrap() <= launch.start, "{k}: load after launch");
        for want in ["alloc", "copy", "wait"] {
            assert!(children(li).contains(&want), "load {k}: no {want} inside");
        }
        assert!(
            children(ni).contains(&"submit"),
            "launch {k}: no submit inside"
        );
        assert!(
            rs.iter().any(|(_, r)| kind(r) == "copy"
                && r.start >= load.end.unwrap()
                && r.end.unwrap() <= launch.start),
            "{k}: no copy between load and launch"
        );
        let wait = rs
            .iter()
            .find(|(_, r)| kind(r) == "wait" && r.depth == 1 && r.start >= launch.end.unwrap())
            .unwrap_or_else(|| panic!("{k}: no wait after the launch"));
        assert!(wait.1.end.unwrap() <= cap_end);
    }

    // The .wst keeps them, device and nesting included.
    let back = traces::wst::open(&wst).unwrap();
    let (_, brs) = cpu_ranges(&back);
    assert_eq!(brs.len(), rs.len());
    for ((_, a), (_, b)) in rs.iter().zip(&brs) {
        assert_eq!(a, b);
    }

    // Perfetto: a CPU process whose thread carries every host range as a slice.
    let mut json = Vec::new();
    traces::perfetto::write_json(&back, &Default::default(), &mut json).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let cpu_pid = events
        .iter()
        .find(|e| e["name"] == "process_name" && e["args"]["name"] == "CPU")
        .expect("a CPU process")["pid"]
        .clone();
    let slices = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["pid"] == cpu_pid)
        .count();
    assert_eq!(slices, rs.len());
}

#[test]
fn old_wst_without_host_ranges_still_opens() {
    // Written before host ranges existed: it opens, with no CPU track.
    let p = format!(
        "{}/../traces/tests/fixtures/wst/emu-demo-v1.wst",
        env!("CARGO_MANIFEST_DIR")
    );
    let prof = traces::wst::open(std::path::Path::new(&p)).unwrap();
    assert!(!prof.kernels.is_empty());
    assert!(prof.devices.iter().all(|d| d.name != "CPU"));
}
