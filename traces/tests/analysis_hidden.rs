//! Exposed vs hidden latency (`traces::analysis::hidden`, defined in docs/kernel-analysis.md):
//! a synthetic trace with a hand-worked answer for every class, and the shared real captures,
//! where every instruction's exposed + hidden must equal the latency the instruction table
//! measures, and a brute-force cycle-by-cycle recount must agree.

use std::collections::HashMap;

use traces::analysis::hidden::{
    kernel_splits, split_latency, HiddenBy, InstClass, Issue, IssueWave, LatencySplit,
};
use traces::analysis::{analyze_kernel, inst_stats, kernels_with_sqtt, wave_insts};

fn issue(time: i64, class: InstClass) -> Issue {
    Issue { time, class }
}

#[test]
fn two_waves_known_answer_for_each_class() {
    use InstClass::*;
    // Wave A issues a load at 1, then waits until 20. Wave B, on the same SIMD, issues one
    // instruction of each class inside A's wait. Wave C is on another SIMD: it hides nothing.
    let a = IssueWave {
        simd: 0,
        start: 0,
        issues: vec![issue(1, Vmem), issue(20, Other)],
    };
    let b = IssueWave {
        simd: 0,
        start: 0,
        issues: vec![
            issue(3, Valu),
            issue(4, Valu),
            issue(5, Salu),
            issue(7, Lds),
            issue(8, Smem),
            issue(9, Vmem),
            issue(10, Branch),
            issue(12, Other),
        ],
    };
    let c = IssueWave {
        simd: 1,
        start: 0,
        issues: vec![issue(6, Valu), issue(13, Salu)],
    };
    let s = split_latency(&[a, b, c]);
    // A's wait covers cycles 2..=20 (19 cycles): B filled 2 VALU cycles (3, 4), one of each
    // other class (5, 7, 8, 9, 10, 12): 8 hidden, 11 exposed.
    assert_eq!(
        s[0][1],
        LatencySplit {
            latency: 19,
            exposed: 11,
            hidden: HiddenBy {
                valu: 2,
                salu: 1,
                vmem: 1,
                lds: 1,
                smem: 1,
                branch: 1,
                other: 1,
            },
        }
    );
    // A's load: cycle 1 only, nobody else issued then.
    assert_eq!((s[0][0].latency, s[0][0].exposed), (1, 1));
    // B's first instruction waits over cycles 1..=3; A's load filled cycle 1.
    assert_eq!(
        s[1][0],
        LatencySplit {
            latency: 3,
            exposed: 2,
            hidden: HiddenBy {
                vmem: 1,
                ..Default::default()
            },
        }
    );
    // B's later instructions: gaps 1, 1, 2, 1, 1, 1, 2, all exposed (A is silent until 20).
    let gaps: Vec<(i64, i64)> = s[1][1..].iter().map(|x| (x.latency, x.exposed)).collect();
    assert_eq!(
        gaps,
        [(1, 1), (1, 1), (2, 2), (1, 1), (1, 1), (1, 1), (2, 2)]
    );
    // C is alone on its SIMD.
    assert!(s[2]
        .iter()
        .all(|x| x.hidden_total() == 0 && x.exposed == x.latency));
}

#[test]
fn a_cycle_two_waves_fill_counts_once_for_the_first_class() {
    use InstClass::*;
    let w = |issues| IssueWave {
        simd: 7,
        start: 0,
        issues,
    };
    let s = split_latency(&[
        w(vec![issue(10, Other)]),
        w(vec![issue(4, Salu)]),
        w(vec![issue(4, Valu), issue(6, Lds)]),
    ]);
    // Cycles 1..=10: cycle 4 (SALU and VALU: VALU wins), cycle 6 (LDS).
    assert_eq!(s[0][0].latency, 10);
    assert_eq!(s[0][0].hidden.valu, 1);
    assert_eq!(s[0][0].hidden.salu, 0);
    assert_eq!(s[0][0].hidden.lds, 1);
    assert_eq!(s[0][0].exposed, 8);
}

/// Every kernel with SQTT in a shared capture: the invariant, and a brute-force recount.
fn check_capture(rel: &str) -> Option<(i64, i64)> {
    let dir = testdata::require_shared(rel)?;
    let (_, p) = traces::open::open_path(&dir.join("profile.pkl")).unwrap();
    let (mut latency, mut exposed) = (0i64, 0i64);
    let kernels = kernels_with_sqtt(&p);
    assert!(!kernels.is_empty(), "{rel}: no kernel with SQTT");
    for ki in kernels {
        let k = analyze_kernel(&p, ki, &mut |_, _| {}).unwrap();
        let rows = inst_stats(&k);
        let splits = kernel_splits(&k);
        for r in &rows {
            assert_eq!(
                r.exposed + r.hidden.total(),
                r.total,
                "{rel} {} {}: exposed + hidden != measured latency",
                k.name,
                r.key
            );
            assert!(r.exposed >= 0 && r.hidden.total() >= 0, "{r:?}");
        }
        let row_exposed: i64 = rows.iter().map(|r| r.exposed).sum();
        let row_total: i64 = rows.iter().map(|r| r.total).sum();
        assert_eq!(row_exposed, splits.total.exposed);
        assert_eq!(row_total, splits.total.latency);
        let wave_exposed: i64 = splits.waves.iter().map(|w| w.split.exposed).sum();
        assert_eq!(wave_exposed, splits.total.exposed);

        // Brute force: for each execution, walk its cycles one by one and look for another
        // wave's issue on the same SIMD in that cycle.
        let mut issued: HashMap<(usize, u16, u8), HashMap<i64, Vec<usize>>> = HashMap::new();
        for (si, se) in k.ses.iter().enumerate() {
            for (w, wave) in se.analysis.waves.iter().enumerate() {
                for wi in wave_insts(&k, si, w) {
                    issued
                        .entry((si, wave.cu, wave.simd))
                        .or_default()
                        .entry(wi.cycle)
                        .or_default()
                        .push(w);
                }
            }
        }
        let (mut brute_hidden, mut brute_latency) = (0i64, 0i64);
        for (si, se) in k.ses.iter().enumerate() {
            for (w, wave) in se.analysis.waves.iter().enumerate() {
                let on = &issued.get(&(si, wave.cu, wave.simd));
                let mut prev = wave.start;
                for wi in wave_insts(&k, si, w) {
                    brute_latency += wi.gap;
                    for c in prev + 1..=wi.cycle {
                        if on
                            .and_then(|m| m.get(&c))
                            .is_some_and(|ws| ws.iter().any(|&o| o != w))
                        {
                            brute_hidden += 1;
                        }
                    }
                    prev = wi.cycle;
                }
            }
        }
        assert_eq!(brute_latency, splits.total.latency);
        assert_eq!(
            brute_hidden,
            splits.total.hidden_total(),
            "{rel} {}",
            k.name
        );
        eprintln!(
            "{rel} {}: latency {} exposed {} hidden {:?}",
            k.name, splits.total.latency, splits.total.exposed, splits.total.hidden
        );
        latency += splits.total.latency;
        exposed += splits.total.exposed;
    }
    Some((latency, exposed))
}

#[test]
fn gemm_exposed_plus_hidden_is_the_measured_latency() {
    if let Some((latency, exposed)) = check_capture("traces/gfx1100/gemm_run_0") {
        assert!(latency > 0);
        // Several waves share each traced SIMD: some of the waiting is hidden.
        assert!(exposed < latency, "nothing hidden: {exposed} of {latency}");
    }
}

#[test]
fn sync_exposed_plus_hidden_is_the_measured_latency() {
    if let Some((latency, _)) = check_capture("traces/gfx1100/sync_run_0") {
        assert!(latency > 0);
    }
}

#[test]
fn gfx950_and_gfx1200_captures_keep_the_invariant() {
    for rel in ["traces/gfx950/gemm_run_0", "traces/gfx1200"] {
        let Some(d) = testdata::require_shared(rel) else {
            continue;
        };
        if d.join("profile.pkl").is_file() {
            check_capture(rel);
        } else {
            let mut cases: Vec<_> = std::fs::read_dir(&d).unwrap().flatten().collect();
            cases.sort_by_key(|e| e.path());
            for c in cases {
                let rel = format!("{rel}/{}", c.file_name().to_string_lossy());
                check_capture(&rel);
            }
        }
    }
}
