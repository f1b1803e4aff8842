//! The instruction table on gfx950 (CDNA): every instruction AMD's decoder lists has a row,
//! `s_waitcnt` and `s_nop` included, with AMD's execution count. CDNA_INST packets carry no time of their own and internal instructions have
//! none, so the table is built from the mapper's issue times (`traces/src/analysis/cdna.rs`).

use std::collections::BTreeMap;

use traces::analysis::{analyze_kernel, inst_stats, kernels_with_sqtt};

#[test]
fn gfx950_table_has_every_instruction_amd_lists() {
    let Some(dir) = testdata::require_shared("traces/gfx950/gemm_run_0") else {
        return;
    };
    let Some(amd_dir) = testdata::require_shared("conformance/rocprof/gfx950/gemm_run_0") else {
        return;
    };
    let (_, p) = traces::open::open_path(&dir.join("profile.pkl")).unwrap();
    let ki = kernels_with_sqtt(&p)[0];
    let k = analyze_kernel(&p, ki, &mut |_, _| {}).unwrap();
    let rows = inst_stats(&k);

    // AMD's executions per code offset (its PCs are load base + offset), every SE of kern 0.
    let mut amd: BTreeMap<u64, (u64, String)> = BTreeMap::new();
    let mut files: Vec<_> = std::fs::read_dir(&amd_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|f| {
            f.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("kern0_se"))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for f in files {
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
        let base = v["programs"][0]["load_base"].as_u64().unwrap();
        let text: BTreeMap<u64, String> = v["pc_table"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["address"].as_u64().unwrap(),
                    e["text"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        for w in v["waves"].as_array().unwrap() {
            for i in w["instructions_array"].as_array().unwrap() {
                let a = i["pc"]["address"].as_u64().unwrap();
                let e = amd.entry(a - base).or_insert((0, text[&a].clone()));
                e.0 += 1;
            }
        }
    }
    let ours: BTreeMap<u64, (u64, String)> = rows
        .iter()
        .filter_map(|r| Some((r.pc?, (r.count, r.name.clone()))))
        .collect();
    assert_eq!(rows.len(), ours.len(), "every row has a PC");
    for (off, (n, text)) in &amd {
        let (m, name) = ours
            .get(off)
            .unwrap_or_else(|| panic!("no row for {off:#x} {text}"));
        assert_eq!(
            (m, name.split_whitespace().next()),
            (n, text.split_whitespace().next()),
            "{off:#x}"
        );
    }
    assert_eq!(ours.len(), amd.len());
    assert!(rows.iter().any(|r| r.name.starts_with("s_waitcnt")));
    assert!(rows.iter().any(|r| r.name.starts_with("s_nop")));
}

/// AMD's instruction records of kern 0, every SE: per wave, (code offset, AMD time), and the
/// wave's begin time.
fn amd_waves(amd_dir: &std::path::Path) -> Vec<(i64, Vec<(u64, i64)>)> {
    let mut files: Vec<_> = std::fs::read_dir(amd_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|f| {
            f.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("kern0_se"))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let mut out = Vec::new();
    for f in files {
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
        let base = v["programs"][0]["load_base"].as_u64().unwrap();
        for w in v["waves"].as_array().unwrap() {
            let insts = w["instructions_array"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| {
                    (
                        i["pc"]["address"].as_u64().unwrap() - base,
                        i["time"].as_i64().unwrap(),
                    )
                })
                .collect();
            out.push((w["begin_time"].as_i64().unwrap(), insts));
        }
    }
    out
}

/// The latency column on gfx950 is AMD's: each instruction's latency (from the wave's previous
/// instruction) summed per PC equals the same sum over AMD's records, for every instruction but
/// a wave's first (dated from the wave's start on our clock). So no two issues of a wave share
/// a cycle, each kind's best case is a real issue (gfx9: 4 cycles), and the Stall column is
/// the time beyond it, not ~100% as when bursts shared a cycle.
#[test]
fn gfx950_latency_is_amds_and_stall_is_not_everything() {
    let Some(dir) = testdata::require_shared("traces/gfx950/gemm_run_0") else {
        return;
    };
    let Some(amd_dir) = testdata::require_shared("conformance/rocprof/gfx950/gemm_run_0") else {
        return;
    };
    let (_, p) = traces::open::open_path(&dir.join("profile.pkl")).unwrap();
    let ki = kernels_with_sqtt(&p)[0];
    let k = analyze_kernel(&p, ki, &mut |_, _| {}).unwrap();
    let rows = inst_stats(&k);

    let mut amd_lat: BTreeMap<u64, i64> = BTreeMap::new();
    let mut amd_min: BTreeMap<u64, i64> = BTreeMap::new();
    let mut firsts = std::collections::BTreeSet::new();
    for (_, insts) in amd_waves(&amd_dir) {
        if let Some(f) = insts.first() {
            firsts.insert(f.0);
        }
        for pair in insts.windows(2) {
            let gap = pair[1].1 - pair[0].1;
            *amd_lat.entry(pair[1].0).or_default() += gap;
            let m = amd_min.entry(pair[1].0).or_insert(i64::MAX);
            *m = (*m).min(gap);
        }
    }
    let mut compared = 0;
    let mut off = Vec::new();
    for r in &rows {
        let pc = r.pc.expect("every row has a PC");
        if firsts.contains(&pc) {
            continue;
        }
        let (t, m) = (amd_lat[&pc], amd_min[&pc]);
        if (r.total, r.min) != (t, m) {
            // Known: a few rows around the first s_waitcnts of the waves are a 4-cycle tick
            // or two off AMD (sums over 4 executions here; see docs/kernel-analysis.md).
            assert!(
                (r.total - t).abs() <= 8 * r.count as i64 && (r.min - m).abs() <= 8,
                "{pc:#x} {} x{}: total {} vs AMD {t}, min {} vs AMD {m}",
                r.name,
                r.count,
                r.total,
                r.min
            );
            off.push(pc);
        }
        compared += 1;
    }
    // 50 of the 57 rows compared are AMD's exactly (7 within the bound above).
    assert!(
        off.len() * 8 <= compared,
        "{} of {compared} rows differ",
        off.len()
    );
    assert!(
        compared + firsts.len() >= rows.len() && compared > 40,
        "{compared}"
    );
    let amd_floor = amd_min.values().copied().min().unwrap();
    assert_eq!(
        amd_floor, 4,
        "AMD: a gfx9 wave issues at most every 4 cycles"
    );
    assert!(rows
        .iter()
        .all(|r| r.min >= amd_floor || firsts.contains(&r.pc.unwrap())));
    // Stall = latency beyond each kind's best case: now well under the whole latency.
    let (stall, total): (i64, i64) = rows
        .iter()
        .fold((0, 0), |a, r| (a.0 + r.stall, a.1 + r.total));
    let share = stall as f64 / total as f64;
    assert!(share < 0.95, "stall share {share:.3}");
    // Back-to-back issues (AMD's 4-cycle gaps) are not stalls: some rows read 0 stall.
    assert!(rows.iter().any(|r| r.stall == 0 && r.count > 1));
}
