//! Absolute time: every traced wave, placed on the 100 MHz GPU clock through the realtime
//! markers, must fall inside its kernel's execution range (the command processor's timestamps
//! around the dispatch, `amd_kernel_ranges` in the reference) give or take 1 µs.

use serde_json::Value;
use std::path::Path;
use traces::sqtt::{self, dispatch_time_maps, Layout};

#[test]
fn waves_fall_inside_their_kernel_range() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces");
    assert!(
        root.is_dir(),
        "shared captures missing at {}",
        root.display()
    );
    let mut worst_us = f64::NEG_INFINITY;
    let mut worst_at = String::new();
    let mut placed = 0usize;
    let mut unplaceable = Vec::new();
    let mut cases: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .flat_map(|a| {
            std::fs::read_dir(a.path())
                .unwrap()
                .flatten()
                .map(|c| c.path())
        })
        .collect();
    cases.sort();
    for dir in cases {
        let r: Value =
            serde_json::from_slice(&std::fs::read(dir.join("reference.json")).unwrap()).unwrap();
        let ranges = r["amd_kernel_ranges"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let events = r["sqtt_events"].as_array().unwrap();
        // Each blob is held against its own kernel's range: a capture of several kernels has
        // one range per kernel, in dispatch order (`kern` indexes them).
        let mut kerns: Vec<u64> = events.iter().filter_map(|e| e["kern"].as_u64()).collect();
        kerns.sort_unstable();
        kerns.dedup();
        for kern in kerns {
            let Some(range) = ranges.get(kern as usize) else {
                panic!("{}: no kernel range for kern {kern}", dir.display());
            };
            let st: f64 = range["st_us"].as_str().unwrap().parse().unwrap();
            let en: f64 = range["en_us"].as_str().unwrap().parse().unwrap();
            let kev: Vec<&Value> = events.iter().filter(|e| e["kern"] == kern).collect();
            let blobs: Vec<Vec<u8>> = kev
                .iter()
                .map(|e| {
                    std::fs::read(dir.join(format!("kern{}_se{}.sqtt", e["kern"], e["se"])))
                        .unwrap()
                })
                .collect();
            let analyses: Vec<_> = blobs
                .iter()
                .map(|b| sqtt::analyze(b, None).unwrap())
                .collect();
            let refs: Vec<_> = analyses.iter().collect();
            let maps = dispatch_time_maps(&refs, Some((st * 100.0).round() as u64));
            for ((ev, a), map) in kev.iter().zip(&analyses).zip(&maps) {
                if a.waves.is_empty() {
                    continue;
                }
                let ctx = format!("{} kern {kern} se {}", dir.display(), ev["se"]);
                let Some(map) = map else {
                    assert_eq!(
                        a.layout,
                        Some(Layout::Cdna),
                        "{ctx}: an RDNA blob could not be placed"
                    );
                    unplaceable.push(ctx);
                    continue;
                };
                for w in &a.waves {
                    for t in [w.start, w.end] {
                        let us = map.us(t).unwrap();
                        // How far outside [st, en] the wave lies (negative: inside).
                        let excursion = (st - us).max(us - en);
                        if excursion > worst_us {
                            worst_us = excursion;
                            worst_at =
                                format!("{ctx} wave cu{} simd{} slot{}", w.cu, w.simd, w.wave);
                        }
                        assert!(
                            excursion <= 1.0,
                            "{ctx}: wave at {us:.3} µs, kernel {st:.2}..{en:.2} µs"
                        );
                    }
                    placed += 1;
                }
            }
        }
    }
    println!(
        "placed {placed} waves; largest excursion outside the kernel range: {worst_us:+.3} µs \
         ({worst_at}); not placeable (no realtime markers in CDNA streams): {unplaceable:?}"
    );
    assert!(placed > 2000, "only {placed} waves placed");
}
