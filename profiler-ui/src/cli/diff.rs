//! `wavescope diff A B [--kernel NAME] [--json]`: what got faster or slower between two
//! captures, per kernel and per instruction (`traces::diff`; the JSON schema is in
//! docs/diff-json.md). `--fail-if-slower RATIO` turns it into a check (exit status 3).

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use traces::diff::{self, DiffOptions, InstDiff, InstStatus, KernelData, KernelDiff, ProfileDiff};

#[derive(Args)]
pub struct DiffArgs {
    /// The baseline capture (profile.pkl, .wst or .rgp).
    pub a: PathBuf,
    /// The capture to compare with it.
    pub b: PathBuf,
    /// Only kernels whose name contains this.
    #[arg(long, value_name = "NAME")]
    pub kernel: Option<String>,
    /// Print JSON (schema wavescope-diff/1, docs/diff-json.md).
    #[arg(long)]
    pub json: bool,
    /// Instruction rows per kernel in the text output (all with --json).
    #[arg(long, default_value_t = 25)]
    pub top: usize,
    /// Fail (exit status 3) when a kernel's GPU time in B exceeds RATIO times its time in A
    /// (e.g. 1.05: more than 5% slower).
    #[arg(long, value_name = "RATIO", value_parser = parse_ratio)]
    pub fail_if_slower: Option<f64>,
}

fn parse_ratio(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err(format!("{s:?} is not a positive ratio (e.g. 1.05)")),
    }
}

/// One side of the diff: the profile and, from a `.wst` analysis index, what the diff needs of
/// each indexed kernel's analysis (taken out as the diff asks for it).
struct Side {
    profile: traces::model::Profile,
    saved: RefCell<HashMap<usize, diff::SqttSummary>>,
}

fn open_side(path: &Path) -> Result<Side> {
    let name = path.display().to_string();
    // The open errors name the file.
    let store = traces::open::map_file(path).map_err(|error| traces::open::OpenError::Io {
        path: name.clone(),
        error,
    })?;
    let (_, profile) = traces::open::open_store(store.clone(), &name)?;
    let saved = saved_summaries(&store).unwrap_or_else(|e| {
        super::warn_index(path, &e);
        HashMap::new()
    });
    Ok(Side {
        profile,
        saved: RefCell::new(saved),
    })
}

/// Every indexed kernel's table, wave count and waves in flight (none without an index).
fn saved_summaries(
    store: &traces::model::BlobStore,
) -> Result<HashMap<usize, diff::SqttSummary>, traces::wst::index::IndexError> {
    let mut out = HashMap::new();
    let Some(v) = profiler_ui::data::open_index(store.bytes())? else {
        return Ok(out);
    };
    for e in v.entries()? {
        let ses = v.ses(&e)?;
        for s in &ses {
            s.verify()?;
        }
        // Read in place from the map, not copied: the wave tables are as long as the SQTT's
        // wave count (32 bytes a wave). A checked table's records are all in bounds.
        let waves_in_flight = diff::waves_in_flight_of(ses.iter().map(|s| {
            (0..s.wave_count()).map(move |i| s.wave(i).map_or((0, 0), |w| (w.start, w.end)))
        }));
        // Scanned: the wave tables' pages need not stay resident.
        for s in &ses {
            store.release(s.wave_range());
        }
        out.insert(
            e.kernel,
            diff::SqttSummary {
                stats: e.rows()?,
                waves: e.waves as usize,
                waves_in_flight,
            },
        );
    }
    Ok(out)
}

/// Opens both files and compares them, each kernel's analysis from the file's index when it
/// has one (else decoded).
pub fn compute(a: &Path, b: &Path, kernel: Option<String>) -> Result<ProfileDiff> {
    let sa = open_side(a)?;
    let sb = open_side(b)?;
    let wanted = |p: &traces::model::Profile| {
        p.kernels
            .iter()
            .filter(|k| kernel.as_deref().is_none_or(|q| k.name.contains(q)))
            .count()
    };
    let total = wanted(&sa.profile) + wanted(&sb.profile);
    let bar = super::progress_bar(total as u64, "diff");
    let data = |side: &Side, k: usize| {
        bar.inc(1);
        let saved = side.saved.borrow_mut().remove(&k);
        match saved {
            Some(s) => KernelData::from_summary(&side.profile, k, Some(s)),
            None => KernelData::from_profile(&side.profile, k),
        }
    };
    let d = diff::diff_profiles_with(
        &sa.profile,
        &a.display().to_string(),
        &sb.profile,
        &b.display().to_string(),
        &DiffOptions { kernel },
        &|_, k| data(&sa, k),
        &|_, k| data(&sb, k),
    );
    bar.finish_and_clear();
    Ok(d)
}

pub fn run(a: DiffArgs) -> Result<()> {
    let d = compute(&a.a, &a.b, a.kernel.clone())?;
    if d.kernels.is_empty() {
        anyhow::bail!(
            "no kernel{} in either capture",
            a.kernel
                .map(|k| format!(" matching {k:?}"))
                .unwrap_or_default()
        );
    }
    if a.json {
        super::print_json(&d)?;
    } else {
        let mut o = super::Out::new();
        write!(o, "{}", text(&d, a.top))?;
        o.flush()?;
    }
    if let Some(limit) = a.fail_if_slower {
        let slower: Vec<String> = d
            .kernels
            .iter()
            .filter_map(|k| Some((k, k.time_ratio?)))
            .filter(|(_, r)| *r > limit)
            .map(|(k, r)| format!("{} ({r:.3}x)", k.name))
            .collect();
        if !slower.is_empty() {
            return Err(super::CheckFailed(format!(
                "slower than {limit}x in B: {}",
                slower.join(", ")
            ))
            .into());
        }
    }
    Ok(())
}

/// The JSON spelling of an enum value (`code`, `alignment`), for the text output too.
fn word<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn opt_us(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.3}"))
}

fn status_mark(s: InstStatus) -> &'static str {
    match s {
        InstStatus::Same => " ",
        InstStatus::Changed => "~",
        InstStatus::Removed => "-",
        InstStatus::Added => "+",
    }
}

fn kernel_text(out: &mut String, k: &KernelDiff, top: usize) {
    let idx = |s: &Option<diff::KernelSide>| s.as_ref().map_or("-".into(), |s| s.index.to_string());
    let _ = writeln!(
        out,
        "{} (A #{} / B #{}, matched by {})",
        k.name,
        idx(&k.a),
        idx(&k.b),
        word(&k.matched_by)
    );
    let g = |f: &dyn Fn(&diff::KernelSide) -> String, s: &Option<diff::KernelSide>| {
        s.as_ref().map_or("-".into(), f)
    };
    let _ = writeln!(
        out,
        "  GPU time  {:>12} µs -> {:>12} µs   ratio {}",
        g(&|s| opt_us(s.gpu_time_us), &k.a),
        g(&|s| opt_us(s.gpu_time_us), &k.b),
        k.time_ratio.map_or("-".into(), |r| format!("{r:.3}"))
    );
    let _ = writeln!(
        out,
        "  waves {} -> {}, waves in flight {} -> {}, instructions executed {} -> {} (static {} -> {})",
        g(&|s| s.waves.to_string(), &k.a),
        g(&|s| s.waves.to_string(), &k.b),
        g(&|s| format!("{:.2}", s.waves_in_flight), &k.a),
        g(&|s| format!("{:.2}", s.waves_in_flight), &k.b),
        g(&|s| s.executed_instructions.to_string(), &k.a),
        g(&|s| s.executed_instructions.to_string(), &k.b),
        g(&|s| s.static_instructions.to_string(), &k.a),
        g(&|s| s.static_instructions.to_string(), &k.b),
    );
    if k.instructions.is_empty() {
        return;
    }
    let s = &k.summary;
    let _ = writeln!(
        out,
        "  instructions by {}: {} same, {} changed, {} removed, {} added",
        word(&k.instruction_match),
        s.same,
        s.changed,
        s.removed,
        s.added
    );
    let _ = writeln!(
        out,
        "    {:<8} {:<8} {:<44} {:>7} {:>7} {:>9} {:>9} {:>9} {:>8} {:>8} {:>6} {:>6}",
        "A",
        "B",
        "instruction",
        "hits A",
        "hits B",
        "total A",
        "total B",
        "Δtotal",
        "mean A",
        "mean B",
        "max A",
        "max B"
    );
    // Rows that ran somewhere, or that were edited; identical never-run code is noise.
    let shown: Vec<&InstDiff> = k
        .instructions
        .iter()
        .filter(|r| {
            r.status != InstStatus::Same
                || r.a.as_ref().is_some_and(|s| s.count > 0)
                || r.b.as_ref().is_some_and(|s| s.count > 0)
        })
        .collect();
    for r in shown.iter().take(top) {
        let key = |s: &Option<diff::InstSide>| s.as_ref().map_or("".into(), |s| s.key.clone());
        let text = match (&r.a, &r.b) {
            (Some(a), Some(b)) if a.text != b.text => format!("{} => {}", a.text, b.text),
            (Some(a), _) => a.text.clone(),
            (None, Some(b)) => b.text.clone(),
            (None, None) => String::new(),
        };
        let num = |s: &Option<diff::InstSide>, f: &dyn Fn(&diff::InstSide) -> String| {
            s.as_ref().map_or("-".into(), f)
        };
        let _ = writeln!(
            out,
            "  {} {:<8} {:<8} {:<44.44} {:>7} {:>7} {:>9} {:>9} {:>+9} {:>8} {:>8} {:>6} {:>6}",
            status_mark(r.status),
            key(&r.a),
            key(&r.b),
            text,
            num(&r.a, &|s| s.count.to_string()),
            num(&r.b, &|s| s.count.to_string()),
            num(&r.a, &|s| s.total.to_string()),
            num(&r.b, &|s| s.total.to_string()),
            r.delta.total,
            num(&r.a, &|s| format!("{:.1}", s.mean)),
            num(&r.b, &|s| format!("{:.1}", s.mean)),
            num(&r.a, &|s| s.max.to_string()),
            num(&r.b, &|s| s.max.to_string()),
        );
    }
    if shown.len() > top {
        let _ = writeln!(
            out,
            "    ... {} more rows (--top N, or --json)",
            shown.len() - top
        );
    }
}

/// The human-readable report.
pub fn text(d: &ProfileDiff, top: usize) -> String {
    let mut out = String::new();
    let t = |x: &Option<String>| x.clone().unwrap_or_else(|| "?".into());
    let _ = writeln!(
        out,
        "A: {} ({}, {} kernels)",
        d.a.file,
        t(&d.a.target),
        d.a.kernels
    );
    let _ = writeln!(
        out,
        "B: {} ({}, {} kernels)",
        d.b.file,
        t(&d.b.target),
        d.b.kernels
    );
    if d.cross_arch {
        let _ = writeln!(out, "different architectures: kernels compare by time only");
    }
    for k in &d.kernels {
        let _ = writeln!(out);
        kernel_text(&mut out, k, top);
    }
    out
}
