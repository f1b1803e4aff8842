//! `analysis::kernel_table` (each SE folded into the table as soon as it is decoded and then
//! dropped: what `wavescope stats` runs) against the whole kernel's analysis, and the
//! instruction table's rows against a plain per-execution recomputation from the decoded
//! tokens, on every shared capture, with its code object and without it (then rows are keyed
//! by position in the wave and token name, and token names merge across SEs).

mod formats_common;
use formats_common::*;

use std::collections::HashMap;
use traces::analysis::{
    analyze_kernel_par, hidden, inst_stats, inst_stats_by_se, inst_stats_with, kernel_table,
    kernels_with_sqtt, occupancy, token_name,
};
use traces::model::Profile;

/// The capture as recorded, and the same without any program's code object.
fn variants(dir: &std::path::Path) -> Vec<(String, Profile)> {
    let (_, p) = traces::open::open_path(&dir.join("profile.pkl")).unwrap();
    let mut bare = p.clone();
    for prog in &mut bare.programs {
        prog.elf = None;
    }
    vec![
        (format!("{}", dir.display()), p),
        (format!("{} without code", dir.display()), bare),
    ]
}

#[test]
fn kernel_table_equals_the_whole_kernel_analysis() {
    let (mut mapped_rows, mut unmapped_rows, mut multi_se) = (0, 0, 0);
    for dir in capture_dirs() {
        for (what, p) in variants(&dir) {
            for k in kernels_with_sqtt(&p) {
                let what = format!("{what} kernel {k}");
                let a = analyze_kernel_par(&p, k, &|_, _| {}).unwrap();
                let splits = hidden::kernel_splits(&a);
                let rows = inst_stats_with(&a, &splits);
                let t = kernel_table(&p, k).unwrap();
                assert_table_is_the_analysis(&t, &a, &what);
                let pcs = |r: &[traces::analysis::InstStat]| -> Vec<_> {
                    r.iter().map(|r| r.pc).collect()
                };
                assert_eq!(pcs(&t.instructions), pcs(&rows), "{what}");
                // The view's table, made one SE at a time over the kept analysis.
                let by_se = inst_stats_by_se(&a);
                assert_eq!(json(&by_se), json(&rows), "{what}");
                assert_eq!(pcs(&by_se), pcs(&rows), "{what}");
                assert_eq!(t.achieved, occupancy::achieved(&a), "{what}");
                assert_eq!(t.kernel.unit, a.unit, "{what}");
                let ses = |k: &traces::analysis::KernelSqtt| -> Vec<_> {
                    k.ses
                        .iter()
                        .map(|s| (s.se, s.itrace, s.error.clone()))
                        .collect()
                };
                assert_eq!(ses(&t.kernel), ses(&a), "{what}");
                // Neither waves nor tokens stay in the folded kernel.
                assert!(t
                    .kernel
                    .ses
                    .iter()
                    .all(|s| s.analysis.waves.is_empty() && s.analysis.tokens.is_empty()));
                mapped_rows += rows.iter().filter(|r| r.pc.is_some()).count();
                unmapped_rows += rows.iter().filter(|r| r.pc.is_none()).count();
                multi_se += usize::from(
                    a.ses
                        .iter()
                        .filter(|s| !s.analysis.tokens.is_empty())
                        .count()
                        > 1,
                );
            }
        }
    }
    // Both kinds of row, and SEs merged, were compared.
    assert!(mapped_rows > 0 && unmapped_rows > 0 && multi_se > 0);
}

#[test]
fn table_rows_equal_a_per_execution_recomputation() {
    let mut compared = 0;
    for dir in capture_dirs() {
        for (what, p) in variants(&dir) {
            for k in kernels_with_sqtt(&p) {
                let what = format!("{what} kernel {k}");
                let a = analyze_kernel_par(&p, k, &|_, _| {}).unwrap();
                // Every execution: (row key, token name, latency), as documented on `InstStat`.
                let mut execs: Vec<((u64, usize, String), String, i64)> = Vec::new();
                for se in &a.ses {
                    for (w, wave) in se.analysis.waves.iter().enumerate() {
                        let mut prev = wave.start;
                        for (i, &ti) in se.wave_tokens(w).iter().enumerate() {
                            let t = &se.analysis.tokens[ti as usize];
                            let gap = t.time - prev;
                            prev = t.time;
                            let pc = se.token_pc.get(ti as usize).copied();
                            let key = match pc.and_then(|pc| a.disasm.get(&pc).map(|d| (pc, d))) {
                                Some((pc, d)) => (pc, 0, d.clone()),
                                None => (u64::MAX, i, token_name(t)),
                            };
                            execs.push((key, token_name(t), gap));
                        }
                    }
                }
                let mut best: HashMap<&str, i64> = HashMap::new();
                for (_, name, gap) in &execs {
                    let b = best.entry(name.as_str()).or_insert(i64::MAX);
                    *b = (*b).min(*gap);
                }
                let mut by_key: HashMap<&(u64, usize, String), (Vec<i64>, i64)> = HashMap::new();
                for (key, name, gap) in &execs {
                    let e = by_key.entry(key).or_default();
                    e.0.push(*gap);
                    e.1 += (gap - best[name.as_str()]).max(0);
                }
                let rows = inst_stats(&a);
                assert_eq!(rows.len(), by_key.len(), "{what}");
                for r in &rows {
                    let key = match r.pc {
                        Some(pc) => (pc, 0, r.name.clone()),
                        None => (u64::MAX, r.key[1..].parse().unwrap(), r.name.clone()),
                    };
                    let (gaps, stall) = by_key.get_mut(&key).expect("a row of the executions");
                    gaps.sort_unstable();
                    let row = |r: &traces::analysis::InstStat| {
                        (r.count, r.total, r.min, r.median, r.max, r.stall)
                    };
                    let want = (
                        gaps.len() as u64,
                        gaps.iter().sum::<i64>(),
                        gaps[0],
                        gaps[gaps.len() / 2],
                        gaps[gaps.len() - 1],
                        *stall,
                    );
                    assert_eq!(row(r), want, "{what} row {}", r.key);
                    compared += 1;
                }
            }
        }
    }
    assert!(compared > 0);
}

/// What the report prints, for comparing through it.
fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap()
}

/// `kernel_table`'s instruction table, latency splits and wave count against those of the
/// whole kernel analysis `a`.
fn assert_table_is_the_analysis(
    t: &traces::analysis::KernelTable,
    a: &traces::analysis::KernelSqtt,
    what: &str,
) {
    let splits = hidden::kernel_splits(a);
    let rows = inst_stats_with(a, &splits);
    assert_eq!(json(&t.instructions), json(&rows), "{what}");
    assert_eq!(json(&t.splits.waves), json(&splits.waves), "{what}");
    assert_eq!(t.splits.total, splits.total, "{what}");
    let by = |m: &HashMap<hidden::InstKey, hidden::LatencySplit>| {
        let mut v: Vec<_> = m.iter().map(|(k, s)| (k.clone(), *s)).collect();
        v.sort_by(|x, y| x.0.cmp(&y.0));
        v
    };
    assert_eq!(by(&t.splits.by_inst), by(&splits.by_inst), "{what}");
    assert_eq!(t.waves, a.wave_count(), "{what}");
}

/// The analysis of `blob` without wave records against the one with them (`None` when that
/// fails to decode): the same wave count, first wave, achieved occupancy (against the sweep of
/// the records) and everything else of the analysis; both analyses.
fn assert_record_free_is_the_records(
    blob: &[u8],
    target: Option<traces::target::GfxTarget>,
    se: u32,
    what: &str,
) -> Option<(traces::sqtt::BlobAnalysis, traces::sqtt::BlobAnalysis)> {
    use traces::sqtt::{self, AnalyzeOptions, BlobAnalysis};
    let rest = |a: &BlobAnalysis| {
        serde_json::to_string(&BlobAnalysis {
            waves: Vec::new(),
            ..a.clone()
        })
        .unwrap()
    };
    let opts = AnalyzeOptions::default();
    let rec = sqtt::analyze_with(blob, target, opts).ok()?;
    let free = AnalyzeOptions {
        record_free: true,
        ..opts
    };
    let free = sqtt::analyze_with(blob, target, free).unwrap();
    assert_eq!(free.waves_without_records, Some(rec.waves.len()), "{what}");
    assert_eq!(free.first_wave_start(), rec.first_wave_start(), "{what}");
    let (mut want, mut got) = (occupancy::Achieved::default(), Default::default());
    occupancy::achieved_se(&mut want, se, rec.waves.iter().map(occupancy::WaveLife::of));
    occupancy::achieved_of(&mut got, se, &free);
    assert_eq!(got, want, "{what}");
    // Not from the records' sweep: the sums counted without them.
    assert!(free.residency.is_some() || rec.waves.is_empty(), "{what}");
    assert_eq!(rest(&free), rest(&rec), "{what}");
    Some((rec, free))
}

/// Every SE without instruction tracing of every shared capture (and of the tiled 10 MiB
/// capture of the scale bench, `../scale-cap/10M/big.wst`, when it is there) analysed without
/// wave records as `kernel_table` does and with them: exact on each (none gives up), with the
/// same wave count, first wave, sums, achieved occupancy (against the sweep of the records)
/// and everything else of the analysis.
#[test]
fn record_free_equals_the_records_on_every_untraced_se() {
    let mut files: Vec<std::path::PathBuf> = capture_dirs()
        .into_iter()
        .map(|d| d.join("profile.pkl"))
        .collect();
    let tiled = shared().join("../scale-cap/10M/big.wst");
    match tiled.is_file() {
        true => files.push(tiled),
        false => eprintln!("{} is not there: not compared", tiled.display()),
    }
    let (mut ses, mut waves) = (0, 0);
    for f in files {
        let (_, p) = traces::open::open_path(&f).unwrap();
        for (i, s) in p.sqtt.iter().enumerate().filter(|(_, s)| !s.itrace) {
            let what = format!("{} stream {i} (SE {})", f.display(), s.se);
            let target = p.props_device(s.device).and_then(|d| d.target());
            let Some((rec, free)) =
                assert_record_free_is_the_records(p.blob(s.blob), target, s.se, &what)
            else {
                continue;
            };
            assert_eq!(free.residency, rec.residency, "{what}");
            ses += 1;
            waves += rec.waves.len();
        }
    }
    assert!(ses > 0 && waves > 0, "{ses} SEs, {waves} waves");
    eprintln!("{ses} untraced SEs, {waves} waves analysed without records");
}

/// Every SE without instruction tracing of every shared capture (and of the tiled 10 MiB
/// capture, when it is there: slots used again, many waves live at once) cut at many places
/// (as a trace buffer that filled leaves it: waves started and never ended, a packet cut short)
/// analysed without wave records and with them: exact at every cut (the waves never ended
/// dropped as the records drop them), with the same wave count, first wave, achieved occupancy
/// (against the sweep of the records), anomalies, warnings and everything else.
#[test]
fn record_free_equals_the_records_on_every_untraced_se_cut_short() {
    let mut files: Vec<(std::path::PathBuf, usize)> = capture_dirs()
        .into_iter()
        .map(|d| (d.join("profile.pkl"), 24))
        .collect();
    let tiled = shared().join("../scale-cap/10M/big.wst");
    match tiled.is_file() {
        true => files.push((tiled, 5)),
        false => eprintln!("{} is not there: not compared", tiled.display()),
    }
    let (mut cuts, mut unended) = (0, 0);
    for (f, parts) in files {
        let (_, p) = traces::open::open_path(&f).unwrap();
        for (i, s) in p.sqtt.iter().enumerate().filter(|(_, s)| !s.itrace) {
            let target = p.props_device(s.device).and_then(|d| d.target());
            let whole = p.blob(s.blob);
            for cut in 1..parts {
                // Some at a 32-byte unit, some mid-packet.
                let at = whole.len() * cut / parts + (cut % 3) * 5;
                let blob = &whole[..at.min(whole.len())];
                let what = format!("{} stream {i} (SE {}) cut at {at}", f.display(), s.se);
                let Some((rec, _)) = assert_record_free_is_the_records(blob, target, s.se, &what)
                else {
                    continue;
                };
                cuts += 1;
                unended += rec.wave_anomalies.contains_key("start_without_end") as usize;
            }
        }
    }
    assert!(
        unended > 50,
        "{cuts} cuts, {unended} with waves never ended"
    );
    eprintln!("{cuts} cut untraced SEs, {unended} with waves never ended");
}

/// `kernel_table` where an SE without instruction tracing cannot be analysed without records
/// (its stream re-framed with its first WAVESTART twice: a wave started while its slot is
/// live) and where it can (without its first WAVEEND: a wave never ended, its slot not used
/// again in these captures; without its first WAVESTART: an end without a live wave): the SE
/// is analysed again with records where it gave up, and the table, wave count, achieved
/// occupancy and notes equal the whole kernel's analysis either way.
#[test]
fn kernel_table_analyses_again_where_the_record_free_analysis_gives_up() {
    use traces::sqtt::{self, AnalyzeOptions, Kind};
    let (mut given_up, mut exact) = (0, 0);
    for dir in capture_dirs() {
        let (_, orig) = traces::open::open_path(&dir.join("profile.pkl")).unwrap();
        for (i, s) in orig.sqtt.iter().enumerate().filter(|(_, s)| !s.itrace) {
            // (Without the first of a kind, or with the first WAVESTART twice.)
            for (drop, kind) in [
                (true, Kind::WaveEnd),
                (true, Kind::WaveStart),
                (false, Kind::WaveStart),
            ] {
                let mut p = orig.clone();
                let src = p.blob(s.blob);
                let pick = |pk: &sqtt::Packet| pk.ty.kind == kind;
                let blob = match drop {
                    true => sqtt::synth::without_first(src, pick),
                    false => sqtt::synth::with_first_twice(src, pick),
                };
                let Some(blob) = blob else {
                    continue;
                };
                let target = p.props_device(s.device).and_then(|d| d.target());
                let free = AnalyzeOptions {
                    record_free: true,
                    ..Default::default()
                };
                let a = sqtt::analyze_with(&blob, target, free).unwrap();
                match a.waves_without_records {
                    None => given_up += 1,
                    Some(_) => exact += 1,
                }
                p.sqtt[i].blob = p.add_blob(traces::model::Blob::from_vec(blob));
                let what = format!("{} stream {i} drop {drop} first {kind:?}", dir.display());
                for k in kernels_with_sqtt(&p) {
                    let a = analyze_kernel_par(&p, k, &|_, _| {}).unwrap();
                    let t = kernel_table(&p, k).unwrap();
                    assert_table_is_the_analysis(&t, &a, &what);
                    assert_eq!(t.achieved, occupancy::achieved(&a), "{what}");
                    let notes = |k: &traces::analysis::KernelSqtt| -> Vec<Vec<String>> {
                        k.ses.iter().map(|s| s.notes()).collect()
                    };
                    assert_eq!(notes(&t.kernel), notes(&a), "{what}");
                }
            }
        }
    }
    assert!(
        given_up > 0 && exact > 0,
        "{given_up} given up, {exact} exact"
    );
    eprintln!("{given_up} SEs given up and analysed again, {exact} exact");
}

/// `stats`' fold of an instruction-traced SE made in its decode, with no token kept, falls
/// back to decoding the SE again with its tokens where it cannot be exact (waves that never
/// end: the analysis drops them and renumbers the waves), and either way gives the whole
/// kernel analysis' table and splits: the gemm captures with each traced SE's stream cut at
/// several places (each cut leaves waves started but not ended) and whole; and with every SE
/// cut (as trace buffers that filled leave a capture: the SEs without tokens are exact
/// without records, whatever a traced SE's fold did).
#[test]
fn kernel_table_of_cut_traced_streams_equals_the_whole_kernel_analysis() {
    let (mut cut_short, mut untraced_short) = (0, 0);
    for arch in ["gfx1100", "gfx1200"] {
        let Some(path) = testdata::require_shared(&format!("traces/{arch}/gemm_run_0/profile.pkl"))
        else {
            return;
        };
        let (_, orig) = traces::open::open_path(&path).unwrap();
        for (cut, all) in [
            (0u32, false),
            (3, false),
            (5, false),
            (7, false),
            (9, false),
            (4, true),
            (9, true),
        ] {
            let mut p = orig.clone();
            for i in 0..p.sqtt.len() {
                if !(p.sqtt[i].itrace || all) || cut == 0 {
                    continue;
                }
                let blob = p.blob(p.sqtt[i].blob).to_vec();
                // At a 32-byte unit, so the cut is no decoder warning of its own.
                let at = (blob.len() * cut as usize / 10) & !31;
                let a = traces::sqtt::analyze(&blob[..at], None).unwrap();
                if a.wave_anomalies
                    .get("start_without_end")
                    .copied()
                    .unwrap_or(0)
                    > 0
                {
                    match p.sqtt[i].itrace {
                        true => cut_short += 1,
                        false => untraced_short += 1,
                    }
                }
                let b = traces::model::Blob::from_vec(blob[..at].to_vec());
                p.sqtt[i].blob = p.add_blob(b);
            }
            for k in kernels_with_sqtt(&p) {
                let what = format!("{arch} cut at {cut}/10 (all {all}) kernel {k}");
                let a = analyze_kernel_par(&p, k, &|_, _| {}).unwrap();
                assert_table_is_the_analysis(&kernel_table(&p, k).unwrap(), &a, &what);
            }
        }
    }
    assert!(
        cut_short > 4 && untraced_short > 4,
        "{cut_short} traced and {untraced_short} untraced streams cut with waves left live"
    );
}
