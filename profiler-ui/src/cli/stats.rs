//! `wavescope stats FILE [--kernel NAME] [--json]`: the per-instruction timing table of each
//! kernel with SQTT data, for scripts and CI (the same numbers as the Instructions tab).

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use profiler_ui::data::{
    analyze_kernel_par, inst_stats, kernels_with_sqtt, traced_waves, InstStat, TracedWave, XUnit,
};
use serde::Serialize;

use super::{outln, Out};

#[derive(Args)]
pub struct StatsArgs {
    /// A tinygrad profile.pkl, a .wst or an .rgp file.
    pub file: PathBuf,
    /// Only kernels whose name contains this.
    #[arg(long)]
    pub kernel: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct KernelStats {
    kernel: String,
    index: usize,
    waves: usize,
    itraced_ses: Vec<u32>,
    time_unit: XUnit,
    errors: Vec<String>,
    instructions: Vec<InstStat>,
    /// Per traced wave, every instruction it executed: our token time beside AMD's issue
    /// time, stall and duration.
    traced_waves: Vec<TracedWave>,
}

pub fn run(a: StatsArgs) -> Result<()> {
    let (_, profile) = traces::open::open_path(&a.file)?;
    let mut out = Vec::new();
    let selected: Vec<usize> = kernels_with_sqtt(&profile)
        .into_iter()
        .filter(|&k| {
            let name = &profile.kernels[k].name;
            a.kernel.as_deref().is_none_or(|q| name.contains(q))
        })
        .collect();
    let bar = super::progress_bar(selected.len() as u64, "stats");
    for k in selected {
        bar.set_message(profile.kernels[k].name.clone());
        let analyzed = analyze_kernel_par(&profile, k, &|_, _| {});
        bar.inc(1);
        let Some(ks) = analyzed else {
            continue;
        };
        out.push(KernelStats {
            kernel: ks.name.clone(),
            index: k,
            waves: ks.wave_count(),
            itraced_ses: ks.ses.iter().filter(|s| s.itrace).map(|s| s.se).collect(),
            time_unit: ks.unit,
            errors: ks
                .ses
                .iter()
                .filter_map(|s| s.error.as_ref().map(|e| format!("SE {}: {e}", s.se)))
                .collect(),
            instructions: inst_stats(&ks),
            // Every instruction of every traced wave: only the JSON report has them.
            traced_waves: if a.json {
                traced_waves(&ks)
            } else {
                Vec::new()
            },
        });
    }
    bar.finish_and_clear();
    if out.is_empty() {
        bail!(
            "{}: no kernel with SQTT data{}",
            a.file.display(),
            a.kernel
                .map(|k| format!(" matching {k:?}"))
                .unwrap_or_default()
        );
    }
    if a.json {
        return super::print_json(&out);
    }
    let mut o = Out::new();
    for k in &out {
        outln!(
            o,
            "{} (kernel {}): {} waves, itraced SEs {:?}",
            k.kernel,
            k.index,
            k.waves,
            k.itraced_ses
        );
        for e in &k.errors {
            outln!(o, "  error: {e}");
        }
        outln!(
            o,
            "  {:<8} {:<40} {:>6} {:>9} {:>8} {:>6} {:>6} {:>6} {:>6} {:>6}",
            "instr",
            "name",
            "count",
            "total",
            "mean",
            "min",
            "median",
            "max",
            "share",
            "stall"
        );
        for r in &k.instructions {
            outln!(
                o,
                "  {:<8} {:<40.40} {:>6} {:>9} {:>8.1} {:>6} {:>6} {:>6} {:>5.1}% {:>5.0}%",
                r.key,
                r.name,
                r.count,
                r.total,
                r.mean,
                r.min,
                r.median,
                r.max,
                r.share * 100.0,
                r.stall_share * 100.0
            );
        }
    }
    o.flush()?;
    Ok(())
}
