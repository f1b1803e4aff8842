//! `wavescope stats FILE [--kernel NAME] [--json]`: the per-instruction timing table of each
//! kernel with SQTT data, for scripts and CI (the same numbers as the Instructions tab).

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use profiler_ui::data::{
    hidden, kernel_table, kernels_with_sqtt, occupancy, pressure, source, InstStat, KernelTable,
    XUnit,
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

/// A stream of a multi-XCC device: `se` is the stream number (as in `itraced_ses`), `xcc`
/// and `xcc_se` where it sits.
#[derive(Serialize)]
struct XccSe {
    se: u32,
    xcc: u32,
    xcc_se: u32,
}

/// The kernel's XCC/SE split, its itraced streams named by it, and its error lines (the JSON
/// keeps "SE n: ..." as before; the table names the XCC).
fn xcc_names(
    profile: &traces::model::Profile,
    k: usize,
    itraced: &[u32],
    errors: &[(u32, String)],
) -> (Option<Vec<XccSe>>, Vec<String>) {
    let layout = profile.se_layout(profile.kernels[k].device);
    let named = layout.map(|l| {
        itraced
            .iter()
            .map(|&se| {
                let (xcc, xcc_se) = l.split(se);
                XccSe { se, xcc, xcc_se }
            })
            .collect()
    });
    let lines = errors
        .iter()
        .map(|(se, e)| format!("{}: {e}", traces::model::se_label(layout, *se)))
        .collect();
    (named, lines)
}

#[derive(Serialize)]
struct KernelStats<'a> {
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
    traced_waves: Traced<'a>,
    /// Performance counters of the run: totals and per-instance (SE/SA/WGP) samples.
    pmc: Vec<profiler_ui::data::PmcCounter>,
    /// Multi-XCC devices only (absent otherwise): `itraced_ses` as XCC and SE.
    #[serde(skip_serializing_if = "Option::is_none")]
    itraced_xcc_ses: Option<Vec<XccSe>>,
    /// `errors` as the table prints them, streams named by XCC on multi-XCC devices.
    #[serde(skip)]
    error_lines: Vec<String>,
    /// What the results of an SE that decoded do not cover ("SE n: ..."): the decoder's
    /// warnings, where instruction mapping lost track (absent when there is none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notes: Vec<String>,
    /// `notes` as the table prints them (named as `error_lines`).
    #[serde(skip)]
    note_lines: Vec<String>,
}

/// "SE n: text" of each (SE, text), as the JSON keeps errors and notes.
fn se_lines(v: &[(u32, String)]) -> Vec<String> {
    v.iter().map(|(se, e)| format!("SE {se}: {e}")).collect()
}

/// A kernel's traced waves: none (the plain table), or kernel `ki` of the profile, whose
/// instruction-traced SEs are decoded and mapped one at a time while the JSON is printed, each
/// SE's waves written and its mapped instructions dropped before the next SE: the report never
/// holds more than one SE's instruction list (most of the memory of a large capture otherwise).
enum Traced<'a> {
    None,
    Kernel(&'a traces::model::Profile, usize),
}

impl Serialize for Traced<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(None)?;
        if let Traced::Kernel(p, ki) = *self {
            let mut err = None;
            traces::analysis::traced::run_traced_waves_each(p, ki, &mut |w| match seq
                .serialize_element(&w)
            {
                Ok(()) => true,
                Err(e) => {
                    err = Some(e);
                    false
                }
            });
            if let Some(e) = err {
                return Err(e);
            }
        }
        seq.end()
    }
}

pub fn run(a: StatsArgs) -> Result<()> {
    let name = a.file.display().to_string();
    // One map of the file: the profile's blobs and the analysis index are slices of it.
    let store = traces::open::map_file(&a.file).map_err(|error| traces::open::OpenError::Io {
        path: name.clone(),
        error,
    })?;
    let (_, profile) = traces::open::open_store(store.clone(), &name)?;
    let mut out = Vec::new();
    let selected: Vec<usize> = kernels_with_sqtt(&profile)
        .into_iter()
        .filter(|&k| {
            let name = &profile.kernels[k].name;
            a.kernel.as_deref().is_none_or(|q| name.contains(q))
        })
        .collect();
    // The .wst's analysis index, when it has a usable one: the table and, with `--json`, the
    // per-wave detail it saved; only the traced waves' instructions are decoded again.
    let index = if a.no_index {
        None
    } else {
        saved_index(&a.file, store.bytes())
    };
    let bar = super::progress_bar(selected.len() as u64, "stats");
    for k in selected {
        bar.set_message(profile.kernels[k].name.clone());
        if let Some(ks) = index
            .as_ref()
            .and_then(|v| from_index(&a.file, v, &store, &profile, k, a.json))
        {
            bar.inc(1);
            out.push(ks);
            continue;
        }
        // The table's analysis, each SE folded into the table, splits, wave count and achieved
        // occupancy as it is decoded and then dropped; the JSON report's traced waves are
        // mapped per SE as printed.
        let analyzed = kernel_table(&profile, k);
        bar.inc(1);
        let Some(KernelTable {
            kernel: ks,
            waves,
            instructions,
            splits,
            achieved,
        }) = analyzed
        else {
            continue;
        };
        let (source_lines, source_error) = match source::kernel_lines(&profile, k) {
            Ok(t) => (source::line_costs(&t, &instructions), None),
            Err(e) => (Vec::new(), Some(e)),
        };
        let itraced_ses: Vec<u32> = ks.ses.iter().filter(|s| s.itrace).map(|s| s.se).collect();
        let se_errors: Vec<(u32, String)> = ks
            .ses
            .iter()
            .filter_map(|s| s.error.as_ref().map(|e| (s.se, e.to_string())))
            .collect();
        let (itraced_xcc_ses, error_lines) = xcc_names(&profile, k, &itraced_ses, &se_errors);
        let se_notes: Vec<(u32, String)> = ks
            .ses
            .iter()
            .flat_map(|s| s.notes().into_iter().map(move |n| (s.se, n)))
            .collect();
        let (_, note_lines) = xcc_names(&profile, k, &itraced_ses, &se_notes);
        out.push(KernelStats {
            kernel: ks.name.clone(),
            index: k,
            waves,
            itraced_ses,
            time_unit: ks.unit,
            errors: se_lines(&se_errors),
            itraced_xcc_ses,
            error_lines,
            notes: se_lines(&se_notes),
            note_lines,
            instructions,
            latency_split: splits.total,
            wave_latency: splits.waves,
            occupancy: occupancy::kernel_occupancy(&profile, k),
            achieved_occupancy: Some(achieved),
            register_pressure: pressure::kernel_pressure(&profile, k),
            source_lines,
            source_error,
            // Every instruction of every traced wave: only the JSON report has them.
            traced_waves: if a.json {
                Traced::Kernel(&profile, k)
            } else {
                Traced::None
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
            "{} (kernel {}): {} waves, itraced SEs {}",
            k.kernel,
            k.index,
            k.waves,
            match &k.itraced_xcc_ses {
                Some(n) => format!(
                    "[{}]",
                    n.iter()
                        .map(|x| format!("XCC {} · SE {}", x.xcc, x.xcc_se))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => format!("{:?}", k.itraced_ses),
            }
        );
        outln!(
            o,
            "  latency {} cycles: exposed {}, hidden {} ({:.1}%)",
            k.latency_split.latency,
            k.latency_split.exposed,
            k.latency_split.hidden_total(),
            k.latency_split.hidden_share() * 100.0
        );
        for e in &k.error_lines {
            outln!(o, "  error: {e}");
        }
        for n in &k.note_lines {
            outln!(o, "  note: {n}");
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

/// The file's analysis index, or `None` (with a warning when it is there but not usable).
fn saved_index<'a>(
    path: &std::path::Path,
    data: &'a [u8],
) -> Option<traces::wst::index::IndexView<'a>> {
    profiler_ui::data::open_index(data).unwrap_or_else(|e| {
        super::warn_index(path, &e);
        None
    })
}

/// Kernel `k`'s report from the index, or `None` to recompute it (not indexed, a damaged
/// entry, or `--json` from a version-1 index, which lacks the per-wave latency splits).
fn from_index<'a>(
    path: &std::path::Path,
    v: &traces::wst::index::IndexView<'_>,
    store: &traces::model::BlobStore,
    profile: &'a traces::model::Profile,
    k: usize,
    json: bool,
) -> Option<KernelStats<'a>> {
    use traces::wst::index::IndexError;
    let read = || -> Result<Option<KernelStats<'a>>, IndexError> {
        let Some(e) = v.kernel(k).transpose()? else {
            return Ok(None);
        };
        let ses = v.ses(&e)?;
        let instructions = e.rows()?;
        let itraced_ses: Vec<u32> = ses.iter().filter(|s| s.itrace).map(|s| s.se).collect();
        let se_errors: Vec<(u32, String)> = ses
            .iter()
            .filter_map(|s| s.error.map(|err| (s.se, err.to_string())))
            .collect();
        let errors = se_lines(&se_errors);
        let (itraced_xcc_ses, error_lines) = xcc_names(profile, k, &itraced_ses, &se_errors);
        // The index keeps an SE's notes as one string, a line each.
        let se_notes: Vec<(u32, String)> = ses
            .iter()
            .flat_map(|s| {
                s.note
                    .into_iter()
                    .flat_map(str::lines)
                    .map(|n| (s.se, n.into()))
            })
            .collect();
        let (_, note_lines) = xcc_names(profile, k, &itraced_ses, &se_notes);
        let pmc = profiler_ui::data::pmc_counters(profile, k);
        let mut ks = KernelStats {
            kernel: profile.kernels[k].name.clone(),
            index: k,
            waves: e.waves as usize,
            itraced_ses,
            time_unit: e.unit,
            errors,
            instructions,
            latency_split: e.latency,
            wave_latency: Vec::new(),
            occupancy: None,
            achieved_occupancy: None,
            register_pressure: None,
            source_lines: Vec::new(),
            source_error: None,
            traced_waves: Traced::None,
            pmc,
            itraced_xcc_ses,
            error_lines,
            notes: se_lines(&se_notes),
            note_lines,
        };
        if !json {
            // Every SE's wave table (and the wave splits) is checked even unread: a damaged one
            // means a damaged file.
            // Once checked, their pages need not stay resident (they are 32 bytes a wave).
            e.verify_wave_splits()?;
            store.release(e.wave_split_range());
            for s in &ses {
                s.verify()?;
                store.release(s.wave_range());
            }
            return Ok(Some(ks));
        }
        let Some(splits) = e.wave_splits() else {
            eprintln!(
                "note: {}: its analysis index (version {}) lacks the per-wave latency splits; \
                 recomputing (`wavescope index` refreshes it)",
                path.display(),
                v.version()
            );
            return Ok(None);
        };
        ks.wave_latency = splits?;
        store.release(e.wave_split_range());
        let mut achieved = occupancy::Achieved::default();
        for s in &ses {
            s.verify()?;
            // In place from the map (a checked table's records are all in bounds).
            let lives = (0..s.wave_count())
                .filter_map(|i| s.wave(i).ok())
                .map(|w| w.life());
            occupancy::achieved_se(&mut achieved, s.se, lives);
            // Scanned once: its pages need not stay resident.
            store.release(s.wave_range());
        }
        ks.achieved_occupancy = Some(achieved);
        ks.occupancy = occupancy::kernel_occupancy(profile, k);
        ks.register_pressure = pressure::kernel_pressure(profile, k);
        (ks.source_lines, ks.source_error) = match source::kernel_lines(profile, k) {
            Ok(t) => (source::line_costs(&t, &ks.instructions), None),
            Err(e) => (Vec::new(), Some(e)),
        };
        ks.traced_waves = Traced::Kernel(profile, k);
        Ok(Some(ks))
    };
    read().unwrap_or_else(|e| {
        super::warn_index(path, &e);
        None
    })
}
