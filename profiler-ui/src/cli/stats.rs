//! `wavescope stats FILE [--kernel NAME] [--json]`: the per-instruction timing table of each
//! kernel with SQTT data, for scripts and CI (the same numbers as the Instructions tab).

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use profiler_ui::data::{
    analyze_kernel_with, hidden, inst_stats_with, kernels_with_sqtt, occupancy, pressure, source,
    traced_waves, InstStat, KernelOptions, TracedWave, XUnit,
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
    /// Recompute from the SQTT even when the .wst holds an analysis index.
    #[arg(long)]
    pub no_index: bool,
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
    /// The kernel's latency over every traced wave, split into exposed and hidden cycles
    /// (docs/kernel-analysis.md); `exposed` is the kernel-level exposed total.
    latency_split: hidden::LatencySplit,
    /// The same split per instruction-traced wave.
    wave_latency: Vec<hidden::WaveSplit>,
    /// Theoretical occupancy from the kernel descriptor (null without the code object).
    occupancy: Option<occupancy::Occupancy>,
    /// Achieved occupancy from every wave SQTT saw, per SE and per SIMD (always there in
    /// the JSON report; the table from the index leaves it out).
    achieved_occupancy: Option<occupancy::Achieved>,
    /// Live VGPRs and SGPRs at each instruction of the code, with the allocation as ceiling.
    register_pressure: Option<pressure::Pressure>,
    /// Per source line (DWARF line table, -g), the instruction table rolled up; empty with
    /// `source_error` saying why when there is no line table.
    source_lines: Vec<source::LineCost>,
    source_error: Option<String>,
    /// Per traced wave, every instruction it executed: our token time beside AMD's issue
    /// time, stall and duration.
    traced_waves: Vec<TracedWave>,
    /// Performance counters of the run: totals and per-instance (SE/SA/WGP) samples.
    pmc: Vec<profiler_ui::data::PmcCounter>,
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
    // The table (not the JSON report, which holds per-wave detail the index has not) comes from
    // the .wst's analysis index when it has a usable one.
    let mut indexed = if a.json || a.no_index {
        None
    } else {
        profiler_ui::data::load_index(&a.file).unwrap_or_else(|w| {
            eprintln!("warning: {w}");
            None
        })
    };
    let bar = super::progress_bar(selected.len() as u64, "stats");
    for k in selected {
        if let Some(ik) = indexed.as_mut().and_then(|m| m.remove(&k)) {
            bar.inc(1);
            out.push(KernelStats {
                kernel: profile.kernels[k].name.clone(),
                index: k,
                waves: ik.waves as usize,
                itraced_ses: ik.ses.iter().filter(|s| s.itrace).map(|s| s.se).collect(),
                time_unit: ik.unit,
                errors: ik
                    .ses
                    .iter()
                    .filter_map(|s| s.error.as_ref().map(|e| format!("SE {}: {e}", s.se)))
                    .collect(),
                instructions: ik.rows,
                latency_split: ik.latency,
                wave_latency: Vec::new(),
                occupancy: None,
                achieved_occupancy: None,
                register_pressure: None,
                source_lines: Vec::new(),
                source_error: None,
                traced_waves: Vec::new(),
                pmc: profiler_ui::data::pmc_counters(&profile, k),
            });
            continue;
        }
        bar.set_message(profile.kernels[k].name.clone());
        // Per-token detail only for the JSON report's traced waves.
        let analyzed =
            analyze_kernel_with(&profile, k, &|_, _| {}, KernelOptions { detail: a.json });
        bar.inc(1);
        let Some(ks) = analyzed else {
            continue;
        };
        let splits = hidden::kernel_splits(&ks);
        let instructions = inst_stats_with(&ks, &splits);
        let (source_lines, source_error) = match source::kernel_lines(&profile, k) {
            Ok(t) => (source::line_costs(&t, &instructions), None),
            Err(e) => (Vec::new(), Some(e)),
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
            instructions,
            latency_split: splits.total,
            wave_latency: splits.waves,
            occupancy: occupancy::kernel_occupancy(&profile, k),
            achieved_occupancy: Some(occupancy::achieved(&ks)),
            register_pressure: pressure::kernel_pressure(&profile, k),
            source_lines,
            source_error,
            // Every instruction of every traced wave: only the JSON report has them.
            traced_waves: if a.json {
                traced_waves(&ks)
            } else {
                Vec::new()
            },
            pmc: profiler_ui::data::pmc_counters(&profile, k),
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
        outln!(
            o,
            "  latency {} cycles: exposed {}, hidden {} ({:.1}%)",
            k.latency_split.latency,
            k.latency_split.exposed,
            k.latency_split.hidden_total(),
            k.latency_split.hidden_share() * 100.0
        );
        for e in &k.errors {
            outln!(o, "  error: {e}");
        }
        for c in &k.pmc {
            outln!(
                o,
                "  pmc {:<24} {:>14} ({} instances)",
                c.name,
                c.total,
                c.instances.len()
            );
        }
        outln!(
            o,
            "  {:<8} {:<40} {:>6} {:>9} {:>8} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8} {:>6}",
            "instr",
            "name",
            "count",
            "total",
            "mean",
            "min",
            "median",
            "max",
            "share",
            "stall",
            "exposed",
            "hidden"
        );
        for r in &k.instructions {
            outln!(
                o,
                "  {:<8} {:<40.40} {:>6} {:>9} {:>8.1} {:>6} {:>6} {:>6} {:>5.1}% {:>5.0}% {:>8} {:>5.0}%",
                r.key,
                r.name,
                r.count,
                r.total,
                r.mean,
                r.min,
                r.median,
                r.max,
                r.share * 100.0,
                r.stall_share * 100.0,
                r.exposed,
                r.hidden_share * 100.0
            );
        }
    }
    o.flush()?;
    Ok(())
}
