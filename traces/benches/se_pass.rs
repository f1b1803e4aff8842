//! The per-SE analysis pass beside the raw decoder, on the same blobs of real size (issue #23).
//!
//! `WAVESCOPE_SE_PASS=/work/scale-cap/256M/big.wst cargo bench -p traces --bench se_pass`
//! (default: `../../scale-cap/256M/big.wst` from this crate) runs, on every SE blob of the
//! capture's first kernel, one after the other on this thread:
//! - `decode`: the raw decoder alone ([`Decoder::for_each_run`], the loop the analysis uses);
//! - `analyze waves`: [`sqtt::analyze_with`] without tokens;
//! - `untraced`: on the SEs without instruction tokens, their analysis with wave records, then
//!   the achieved occupancy of their waves (what `stats` ran there before), beside the decode
//!   of the same blobs;
//! - `recordfree`: the same without wave records ([`AnalyzeOptions::record_free`], what `stats`
//!   runs there now), beside the decode of the same blobs;
//! - `analyze tokens`: [`sqtt::analyze_with`] keeping every instruction token (what `stats`
//!   runs on untraced SEs, and the app);
//! - `analyze mapped`: [`traces::pipeline::analyze_mapped`] on the itraced SEs (analysis and
//!   PC mapping in one decode, what `stats` runs there), beside the decode of the same blobs
//!   and their analysis alone (what the mapping adds);
//! - `fold`: the instruction table's and latency splits' fold of each itraced SE once decoded
//!   and mapped with its tokens ([`traces::pipeline::TablePart::of_se`], what `stats` ran on
//!   them after `analyze mapped`), beside the decode of the same blobs;
//! - `fused`: [`traces::pipeline::analyze_folded`] on the itraced SEs (analysis, PC mapping,
//!   instruction table and latency splits in one decode, no token kept, no wave record: the
//!   waves that may take tokens queued for the fold; what `stats` runs there instead of
//!   `mapped` and `fold`), beside the decode of the same blobs.
//!
//! `WAVESCOPE_SE_PASS_STEPS=mapped` (any of `waves,untraced,recordfree,tokens,mapped,fold,fused`) runs only those steps
//! beside the decode (for a profiler's view of one).
//!
//! It prints MB of SQTT per CPU second (CPU time of this thread from
//! `/proc/thread-self/schedstat`, so a loaded machine does not skew it; best of
//! `WAVESCOPE_SE_PASS_RUNS`, default 3) and the ratio of each step's time to the raw decode's,
//! and exits non-zero when the analysis with tokens or the mapped pass takes more than 2x the
//! decode (the goal of issue #23's per-SE pass).

use std::hint::black_box;
use std::path::PathBuf;
use traces::sqtt::{self, AnalyzeOptions, DecodeOptions, Decoder};

/// CPU time this thread has run, in seconds (user + system; nanoseconds from the scheduler).
fn cpu_seconds() -> f64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns: u64 = s
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .expect("/proc/thread-self/schedstat (Linux) is needed for CPU time");
    ns as f64 * 1e-9
}

/// The least CPU time of `runs` runs of `f` over every blob.
fn best(runs: usize, blobs: &[&[u8]], mut f: impl FnMut(&[u8]) -> u64) -> f64 {
    (0..runs)
        .map(|_| {
            let t = cpu_seconds();
            for b in blobs {
                black_box(f(black_box(b)));
            }
            cpu_seconds() - t
        })
        .fold(f64::INFINITY, f64::min)
}

fn decode(b: &[u8]) -> u64 {
    let mut t = 0i64;
    let mut n = 0u64;
    Decoder::new(b, DecodeOptions::default()).for_each_run(|p, r| {
        n += r as u64;
        t = t.wrapping_add(p.time);
    });
    n ^ t as u64
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is taken.
    let path = std::env::var_os("WAVESCOPE_SE_PASS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scale-cap/256M/big.wst")
        });
    let runs: usize = std::env::var("WAVESCOPE_SE_PASS_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let (_, p) = traces::open::open_path(&path).unwrap_or_else(|e| {
        eprintln!("{e} (build one with `WAVESCOPE_SCALE=256M cargo bench -p profiler-ui --bench scale`, or set WAVESCOPE_SE_PASS)");
        std::process::exit(2)
    });
    let k = p.kernels.first().expect("a kernel in the capture");
    let target = p.props_device(k.device).and_then(|d| d.target());
    let code = p.run_code_object(0).map(|(c, _)| c);
    let all: Vec<&[u8]> = p.sqtt.iter().map(|s| p.blob(s.blob)).collect();
    let itraced: Vec<&[u8]> = p
        .sqtt
        .iter()
        .filter(|s| s.itrace)
        .map(|s| p.blob(s.blob))
        .collect();
    let untraced: Vec<&[u8]> = p
        .sqtt
        .iter()
        .filter(|s| !s.itrace)
        .map(|s| p.blob(s.blob))
        .collect();
    let mb = |bs: &[&[u8]]| bs.iter().map(|b| b.len()).sum::<usize>() as f64 / 1e6;
    let (all_mb, it_mb) = (mb(&all), mb(&itraced));
    println!(
        "{}: {} SE blobs, {all_mb:.1} MB ({} itraced, {it_mb:.1} MB); best of {runs} runs, CPU s of this thread",
        path.display(),
        all.len(),
        itraced.len()
    );
    let row = |name: &str, mb: f64, s: f64, base: f64| {
        println!(
            "{name:<34} {s:>7.3} CPU s {:>8.0} MB/CPU s   x{:.2} the decode",
            mb / s,
            s / base
        );
    };
    let steps = std::env::var("WAVESCOPE_SE_PASS_STEPS").unwrap_or_default();
    let wanted = |s: &str| steps.is_empty() || steps.split(',').any(|x| x == s);
    let dec = best(runs, &all, decode);
    row("decode (all SEs)", all_mb, dec, dec);
    let mut worst = 0f64;
    if wanted("waves") {
        let waves = best(runs, &all, |b| {
            let o = AnalyzeOptions {
                keep_tokens: false,
                ..Default::default()
            };
            sqtt::analyze_with(b, target, o).map_or(0, |a| a.waves.len() as u64)
        });
        row("analyze waves (all SEs)", all_mb, waves, dec);
    }
    if wanted("untraced") && !untraced.is_empty() {
        let un_mb = mb(&untraced);
        let dec_un = best(runs, &untraced, decode);
        row("decode (untraced SEs)", un_mb, dec_un, dec_un);
        // What `stats` runs on an SE without instruction tokens: its waves, then their
        // achieved occupancy.
        let folded = best(runs, &untraced, |b| {
            let a = sqtt::analyze_with(b, target, Default::default());
            a.map_or(0, |a| {
                let mut ach = traces::analysis::occupancy::Achieved::default();
                // From the sums kept during the analysis when they hold, as `stats` takes it.
                traces::analysis::occupancy::achieved_of(&mut ach, 0, &a);
                let n = a.waves.len() as u64;
                sqtt::waves::recycle(a.waves, a.tokens);
                n + ach.per_simd.len() as u64
            })
        });
        row("analyze + occupancy (untraced)", un_mb, folded, dec_un);
    }
    if wanted("recordfree") && !untraced.is_empty() {
        let un_mb = mb(&untraced);
        let dec_un = best(runs, &untraced, decode);
        row("decode (untraced SEs)", un_mb, dec_un, dec_un);
        // The same without wave records, as `stats` runs it now.
        let free = AnalyzeOptions {
            record_free: true,
            ..Default::default()
        };
        let folded = best(runs, &untraced, |b| {
            let a = sqtt::analyze_with(b, target, free);
            a.map_or(0, |a| {
                // (A stream it gives up on is analysed again with records by `stats`.)
                assert!(a.waves_without_records.is_some(), "record-free gave up");
                let mut ach = traces::analysis::occupancy::Achieved::default();
                traces::analysis::occupancy::achieved_of(&mut ach, 0, &a);
                (a.wave_count() + ach.per_simd.len()) as u64
            })
        });
        row("record-free + occupancy (untraced)", un_mb, folded, dec_un);
    }
    if wanted("tokens") {
        let tokens = best(runs, &all, |b| {
            sqtt::analyze_with(b, target, Default::default()).map_or(0, |a| a.tokens.len() as u64)
        });
        row("analyze tokens (all SEs)", all_mb, tokens, dec);
        worst = worst.max(tokens / dec);
    }
    match (&code, itraced.is_empty()) {
        _ if !wanted("mapped") => {}
        (Some(code), false) => {
            let dec_it = best(runs, &itraced, decode);
            row("decode (itraced SEs)", it_mb, dec_it, dec_it);
            // The analysis alone on the same blobs: what the mapping adds to it.
            let analysed = best(runs, &itraced, |b| {
                sqtt::analyze_with(b, target, Default::default())
                    .map_or(0, |a| a.tokens.len() as u64)
            });
            row("analyze tokens (itraced SEs)", it_mb, analysed, dec_it);
            let mapped = best(runs, &itraced, |b| {
                traces::pipeline::analyze_mapped(
                    b,
                    target,
                    Default::default(),
                    code,
                    false,
                    &mut |_| {},
                )
                .map_or(0, |(a, m)| (a.tokens.len() + m.token_pc.len()) as u64)
            });
            row("analyze mapped (itraced SEs)", it_mb, mapped, dec_it);
            worst = worst.max(mapped / dec_it);
        }
        _ => println!("analyze mapped: no itraced SE with a code object in the capture"),
    }
    if wanted("fold") && !itraced.is_empty() {
        let dec_it = best(runs, &itraced, decode);
        // Each SE's fold timed on the thread that decoded it, as `stats` runs it.
        // Each SE as `analyze mapped` gives it, with its tokens (a fold of the kernel now
        // takes what `fused` folded in the decode).
        let table = traces::analysis::KernelOptions::TABLE;
        match traces::analysis::analyze_kernel_with(&p, 0, &|_, _| {}, table) {
            Some(k) => {
                let s: f64 = k
                    .ses
                    .iter()
                    .filter(|st| st.itrace)
                    .map(|st| {
                        (0..runs)
                            .map(|_| {
                                let t = cpu_seconds();
                                black_box(traces::pipeline::TablePart::of_se(st, &k.disasm));
                                cpu_seconds() - t
                            })
                            .fold(f64::INFINITY, f64::min)
                    })
                    .sum();
                row("fold (itraced SEs)", it_mb, s, dec_it);
            }
            None => println!("fold: the first kernel could not be analysed"),
        }
    }
    if let (true, Some(code), false) = (wanted("fused"), &code, itraced.is_empty()) {
        let dec_it = best(runs, &itraced, decode);
        let mut exact = true;
        // As `stats` runs it (`KernelOptions::STATS`): without wave records, the waves
        // that may take tokens queued for the fold.
        let opts = AnalyzeOptions {
            record_free: true,
            ..Default::default()
        };
        let fused = best(runs, &itraced, |b| {
            let r = traces::pipeline::analyze_folded(b, target, opts, code, false, &mut |_| {});
            match r {
                Ok(Ok((a, _))) => a.wave_count() as u64,
                _ => {
                    exact = false;
                    0
                }
            }
        });
        row("analyze folded (itraced SEs)", it_mb, fused, dec_it);
        if !exact {
            println!("fused: some SE could not be folded in its decode (stats decodes it again)");
        }
    }
    println!("goal: the analysis within 2x the raw decode; worst x{worst:.2}");
    if worst > 2.0 {
        std::process::exit(1);
    }
}
