//! Comparing two captures, kernel by kernel and instruction by instruction: what got faster or
//! slower between run A and run B, and at which instructions. No device, no screen: the
//! `wavescope diff` command and the app's compare mode are thin layers over this module.
//!
//! **Kernels** ([`match_kernels`]) are matched first by name and the hash of their machine code
//! (the bytes of the kernel's symbol in its code object), then by name alone (the kernel was
//! edited between the runs); repeated launches pair up in launch order. Whatever is left is
//! `removed` (only in A) or `added` (only in B).
//!
//! **Instructions** of a matched pair with SQTT data are matched
//! - by offset from the kernel's entry when both runs executed the same machine code
//!   (`instruction_match: "pc"`);
//! - otherwise by a sequence alignment of the two disassemblies ([`align`]: a longest common
//!   subsequence of the instruction texts, Myers' linear-space algorithm, branch targets left
//!   out of the comparison so an inserted instruction does not turn every branch across it into
//!   an edit). Runs of unmatched instructions between two matches are aligned once more on the
//!   mnemonic alone; those pairs are `changed` (same operation, other operands), the rest
//!   `removed` / `added` (`instruction_match: "alignment"`);
//! - not at all across architectures, where only kernel-level numbers compare
//!   (`instruction_match: "none"`).
//!
//! Per instruction the latency statistics are those of `wavescope stats`
//! ([`crate::analysis::inst_stats`]): hit count, and the cycles from the previous instruction's
//! issue to this one (total, mean, median, max), with B − A deltas. The JSON form of
//! [`ProfileDiff`] is documented field by field in `docs/diff-json.md` (schema
//! [`SCHEMA`]).

pub mod align;

use std::collections::{HashMap, VecDeque};

use serde::Serialize;

use crate::analysis::{
    analyze_kernel_with, inst_stats, sqtt_matches, InstStat, KernelOptions, KernelSqtt,
};
use crate::isa::{self, CodeObject};
use crate::model::Profile;
use crate::GfxTarget;
use align::{Interner, Step};

/// The `schema` value of the JSON output; bumped when a field changes meaning or goes away.
pub const SCHEMA: &str = "wavescope-diff/1";

/// What to compare.
#[derive(Debug, Clone, Default)]
pub struct DiffOptions {
    /// Only kernels whose name contains this (in A or B).
    pub kernel: Option<String>,
}

/// How a kernel pair was matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelMatch {
    /// Same name, same machine code.
    Code,
    /// Same name, different (or unknown) machine code.
    Name,
    /// Only in A.
    Removed,
    /// Only in B.
    Added,
}

/// How the instructions of a kernel pair were matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InstMatch {
    Pc,
    Alignment,
    /// Different architectures, or no instruction data on one side.
    None,
}

/// The status of one instruction row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InstStatus {
    /// The same instruction in A and B.
    Same,
    /// Same mnemonic, different operands.
    Changed,
    /// Only in A.
    Removed,
    /// Only in B.
    Added,
}

/// One capture's identity in the report.
#[derive(Debug, Clone, Serialize)]
pub struct CaptureInfo {
    pub file: String,
    /// The GPU target of the capture's first device with one (`gfx1100`), if known.
    pub target: Option<String>,
    pub kernels: usize,
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileDiff {
    pub schema: &'static str,
    pub a: CaptureInfo,
    pub b: CaptureInfo,
    /// True when A and B ran on different architectures (kernels compare by time only).
    pub cross_arch: bool,
    pub kernels: Vec<KernelDiff>,
}

/// One side of a kernel pair.
#[derive(Debug, Clone, Serialize)]
pub struct KernelSide {
    /// Index in the capture's kernel list (`wavescope info`).
    pub index: usize,
    pub name: String,
    /// SHA-256 of the kernel's machine code, when its code object is in the capture.
    pub code_hash: Option<String>,
    pub target: Option<String>,
    /// Duration on the GPU clock (µs), else the host-side duration.
    pub gpu_time_us: Option<f64>,
    /// Whether SQTT data was captured for this run.
    pub sqtt: bool,
    /// Waves seen by SQTT (all SEs).
    pub waves: usize,
    /// Mean number of waves in flight over the traced SEs: per SE, the summed wave lifetimes
    /// over the span from its first wave start to its last wave end, summed over SEs.
    pub waves_in_flight: f64,
    /// Instructions in the kernel's code (0 when the code object is not in the capture).
    pub static_instructions: usize,
    /// Instruction executions seen by instruction tracing (sum of the hit counts).
    pub executed_instructions: u64,
    /// Sum of all instruction latencies (cycles).
    pub latency_cycles: i64,
    /// The part of `latency_cycles` no other wave of the SIMD filled (`analysis::hidden`).
    pub exposed_cycles: i64,
}

/// Counts of instruction rows by status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct InstSummary {
    pub same: usize,
    pub changed: usize,
    pub removed: usize,
    pub added: usize,
}

/// One kernel pair (or unpaired kernel).
#[derive(Debug, Clone, Serialize)]
pub struct KernelDiff {
    pub name: String,
    #[serde(rename = "match")]
    pub matched_by: KernelMatch,
    pub a: Option<KernelSide>,
    pub b: Option<KernelSide>,
    /// B's GPU time over A's (< 1: B is faster).
    pub time_ratio: Option<f64>,
    pub instruction_match: InstMatch,
    pub summary: InstSummary,
    /// Sorted by the absolute change of total cycles, largest first; ties in code order.
    pub instructions: Vec<InstDiff>,
}

/// One instruction on one side, with its latency statistics (zeros when it never ran).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstSide {
    /// `0x1700` (ELF virtual address), or `#12` when tokens could not be mapped to PCs.
    pub key: String,
    /// Byte offset from the kernel's entry, when the PC is known.
    pub offset: Option<u64>,
    pub text: String,
    pub count: u64,
    pub total: i64,
    pub mean: f64,
    pub median: i64,
    pub max: i64,
    /// Exposed cycles of `total` (`analysis::hidden`).
    pub exposed: i64,
    /// `(total - exposed) / total`.
    pub hidden_share: f64,
}

/// B − A (a missing side counts as zeros).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct InstDelta {
    pub count: i64,
    pub total: i64,
    pub mean: f64,
    pub median: i64,
    pub max: i64,
    pub exposed: i64,
}

/// One row of the instruction comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstDiff {
    /// Position in the aligned code order (0-based).
    pub position: usize,
    pub status: InstStatus,
    pub a: Option<InstSide>,
    pub b: Option<InstSide>,
    pub delta: InstDelta,
}

/// The machine code of one kernel: where it starts, its hash and its instructions.
#[derive(Debug, Clone)]
pub struct KernelCode {
    pub target: GfxTarget,
    pub entry: u64,
    pub hash: String,
    /// (PC, text, mnemonic) in address order.
    pub insts: Vec<(u64, String, String)>,
}

impl KernelCode {
    /// The code of kernel `name` in `code` (or its only kernel, when the name is not a symbol).
    pub fn from_code_object(code: &CodeObject, name: &str) -> Option<KernelCode> {
        let k = find_kernel(code, name)?;
        let bytes = code.kernel_code(k);
        let insts = isa::disassemble(bytes, k.entry, code.target)
            .map(|l| {
                let mnemonic = match &l.insn {
                    Ok(i) => i.mnemonic().to_string(),
                    Err(_) => ".long".to_string(),
                };
                (l.addr, l.text(), mnemonic)
            })
            .collect();
        Some(KernelCode {
            target: code.target,
            entry: k.entry,
            hash: crate::open::sha256_hex(bytes),
            insts,
        })
    }
}

/// Everything the diff needs about one kernel run, computed once (decoding its SQTT).
pub struct KernelData {
    pub side: KernelSide,
    pub code: Option<KernelCode>,
    pub stats: Vec<InstStat>,
    target: Option<GfxTarget>,
}

impl KernelData {
    /// Kernel `ki` of `p`: its code, and with SQTT data its analysis and instruction table.
    pub fn from_profile(p: &Profile, ki: usize) -> Option<KernelData> {
        let analysis = if p.sqtt.iter().any(|s| sqtt_matches(p, &p.kernels[ki], s)) {
            // The table and wave counts only: no per-token detail.
            analyze_kernel_with(p, ki, &|_, _| {}, KernelOptions::WAVES)
        } else {
            None
        };
        Self::from_analysis(p, ki, analysis.as_ref())
    }

    /// Like [`KernelData::from_profile`] with an analysis already made (the app has one).
    pub fn from_analysis(
        p: &Profile,
        ki: usize,
        analysis: Option<&KernelSqtt>,
    ) -> Option<KernelData> {
        let sqtt = analysis.map(|a| SqttSummary {
            stats: inst_stats(a),
            waves: a.wave_count(),
            waves_in_flight: waves_in_flight(a),
        });
        Self::from_summary(p, ki, sqtt)
    }

    /// Like [`KernelData::from_analysis`] with what the diff needs of the analysis saved
    /// before (a `.wst` analysis index): no SQTT decoded.
    pub fn from_summary(p: &Profile, ki: usize, sqtt: Option<SqttSummary>) -> Option<KernelData> {
        let k = p.kernels.get(ki)?;
        let code = kernel_code(p, ki);
        let target = p
            .props_device(k.device)
            .and_then(|d| d.target())
            .or(code.as_ref().map(|c| c.target));
        let has_sqtt = sqtt.is_some();
        let (stats, waves, in_flight) = match sqtt {
            Some(s) => (s.stats, s.waves, s.waves_in_flight),
            None => (Vec::new(), 0, 0.0),
        };
        let gpu_time_us = match (k.gpu_start, k.gpu_end) {
            (Some(s), Some(e)) => Some((e - s) as f64 / 100.0),
            _ => k.end.map(|e| (e.0 - k.start.0) as f64 / 1e6),
        };
        let side = KernelSide {
            index: ki,
            name: k.name.clone(),
            code_hash: code.as_ref().map(|c| c.hash.clone()),
            target: target.map(|t| t.to_string()),
            gpu_time_us,
            sqtt: has_sqtt,
            waves,
            waves_in_flight: in_flight,
            static_instructions: code.as_ref().map_or(0, |c| c.insts.len()),
            executed_instructions: stats.iter().map(|s| s.count).sum(),
            latency_cycles: stats.iter().map(|s| s.total).sum(),
            exposed_cycles: stats.iter().map(|s| s.exposed).sum(),
        };
        Some(KernelData {
            side,
            code,
            stats,
            target,
        })
    }
}

/// What the diff takes from a kernel's SQTT analysis.
pub struct SqttSummary {
    /// The instruction table ([`inst_stats`]).
    pub stats: Vec<InstStat>,
    pub waves: usize,
    /// [`waves_in_flight_of`] over the kernel's SEs.
    pub waves_in_flight: f64,
}

/// Mean waves in flight: per SE, summed wave lifetimes over the SE's wave span.
fn waves_in_flight(k: &KernelSqtt) -> f64 {
    waves_in_flight_of(
        k.ses
            .iter()
            .map(|s| s.analysis.waves.iter().map(|w| (w.start, w.end))),
    )
}

/// Mean waves in flight from each SE's waves as (start, end) cycles, SEs in order.
pub fn waves_in_flight_of<I>(ses: impl Iterator<Item = I>) -> f64
where
    I: Iterator<Item = (i64, i64)> + Clone,
{
    ses.map(|w| {
        let lo = w.clone().map(|w| w.0).min();
        let hi = w.clone().map(|w| w.1).max();
        match (lo, hi) {
            (Some(lo), Some(hi)) if hi > lo => {
                // Saturating: the times may come from a file's index.
                w.map(|(s, e)| e.saturating_sub(s).max(0) as f64)
                    .sum::<f64>()
                    / hi.saturating_sub(lo) as f64
            }
            _ => 0.0,
        }
    })
    .sum()
}

/// Kernel `name` of a code object, or its only kernel when the name is not a symbol.
fn find_kernel<'c>(code: &'c CodeObject, name: &str) -> Option<&'c isa::Kernel> {
    code.kernels
        .iter()
        .find(|k| k.name == name)
        .or_else(|| (code.kernels.len() == 1).then(|| &code.kernels[0]))
}

/// The parsed code object of kernel run `ki` and the names to look the kernel up by (the
/// run's, then its program's).
fn run_code(p: &Profile, ki: usize) -> Option<(CodeObject, &str, &str)> {
    let k = p.kernels.get(ki)?;
    let (code, prog) = p.run_code_object(ki)?;
    Some((code, &k.name, &prog.name))
}

/// The machine code of kernel run `ki`, when its program's code object is in the profile.
pub fn kernel_code(p: &Profile, ki: usize) -> Option<KernelCode> {
    let (code, run, prog) = run_code(p, ki)?;
    KernelCode::from_code_object(&code, run).or_else(|| KernelCode::from_code_object(&code, prog))
}

/// The hash of kernel run `ki`'s machine code ([`KernelCode::hash`]) without disassembling it.
fn kernel_hash(p: &Profile, ki: usize) -> Option<String> {
    let (code, run, prog) = run_code(p, ki)?;
    let k = find_kernel(&code, run).or_else(|| find_kernel(&code, prog))?;
    Some(crate::open::sha256_hex(code.kernel_code(k)))
}

/// A kernel's identity for matching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelKey {
    pub name: String,
    pub hash: Option<String>,
}

/// The matching keys of kernel runs `indices` of `p` (each program's code hashed once).
pub fn kernel_keys(p: &Profile, indices: &[usize]) -> Vec<KernelKey> {
    let mut cache: HashMap<(Option<i64>, u32, String), Option<String>> = HashMap::new();
    indices
        .iter()
        .map(|&i| {
            let k = &p.kernels[i];
            let base = p.devices.get(k.device as usize).map_or(k.device, |d| {
                p.find_device(d.process, d.base_name()).unwrap_or(k.device)
            });
            let hash = cache
                .entry((k.kern, base, k.name.clone()))
                .or_insert_with(|| kernel_hash(p, i))
                .clone();
            KernelKey {
                name: k.name.clone(),
                hash,
            }
        })
        .collect()
}

/// Pairs kernels of A and B: (A index, B index, how). Indices are positions in the given
/// slices. Matched and removed kernels come in A's order, added ones after, in B's order.
pub fn match_kernels(
    a: &[KernelKey],
    b: &[KernelKey],
) -> Vec<(Option<usize>, Option<usize>, KernelMatch)> {
    let mut pair: Vec<Option<(usize, KernelMatch)>> = vec![None; a.len()];
    let mut taken = vec![false; b.len()];
    // Pass 1: name and code hash; pass 2: name only. Each in launch order.
    for pass in [KernelMatch::Code, KernelMatch::Name] {
        let mut queues: HashMap<(&str, Option<&str>), VecDeque<usize>> = HashMap::new();
        for (j, kb) in b.iter().enumerate() {
            if taken[j] || (pass == KernelMatch::Code && kb.hash.is_none()) {
                continue;
            }
            let h = if pass == KernelMatch::Code {
                kb.hash.as_deref()
            } else {
                None
            };
            queues.entry((&kb.name, h)).or_default().push_back(j);
        }
        for (i, ka) in a.iter().enumerate() {
            if pair[i].is_some() || (pass == KernelMatch::Code && ka.hash.is_none()) {
                continue;
            }
            let h = if pass == KernelMatch::Code {
                ka.hash.as_deref()
            } else {
                None
            };
            if let Some(j) = queues
                .get_mut(&(ka.name.as_str(), h))
                .and_then(|q| q.pop_front())
            {
                pair[i] = Some((j, pass));
                taken[j] = true;
            }
        }
    }
    let mut out: Vec<_> = pair
        .iter()
        .enumerate()
        .map(|(i, p)| match p {
            Some((j, how)) => (Some(i), Some(*j), *how),
            None => (Some(i), None, KernelMatch::Removed),
        })
        .collect();
    out.extend(
        (0..b.len())
            .filter(|&j| !taken[j])
            .map(|j| (None, Some(j), KernelMatch::Added)),
    );
    out
}

/// The first device target of a profile, if any device declares one.
fn profile_target(p: &Profile) -> Option<GfxTarget> {
    p.devices.iter().find_map(|d| d.target())
}

/// Compares two captures (`a_name`/`b_name` label them in the report).
pub fn diff_profiles(
    a: &Profile,
    a_name: &str,
    b: &Profile,
    b_name: &str,
    opts: &DiffOptions,
) -> ProfileDiff {
    diff_profiles_with(
        a,
        a_name,
        b,
        b_name,
        opts,
        &KernelData::from_profile,
        &KernelData::from_profile,
    )
}

/// [`diff_profiles`] with each side's kernel data from `data_a` / `data_b` (called with the
/// side's profile and a kernel index; [`KernelData::from_profile`] decodes its SQTT, a caller
/// with a saved analysis gives [`KernelData::from_summary`]).
pub fn diff_profiles_with(
    a: &Profile,
    a_name: &str,
    b: &Profile,
    b_name: &str,
    opts: &DiffOptions,
    data_a: &dyn Fn(&Profile, usize) -> Option<KernelData>,
    data_b: &dyn Fn(&Profile, usize) -> Option<KernelData>,
) -> ProfileDiff {
    let wanted = |p: &Profile, i: usize| {
        opts.kernel
            .as_deref()
            .is_none_or(|q| p.kernels[i].name.contains(q))
    };
    let ia: Vec<usize> = (0..a.kernels.len()).filter(|&i| wanted(a, i)).collect();
    let ib: Vec<usize> = (0..b.kernels.len()).filter(|&i| wanted(b, i)).collect();
    let ka = kernel_keys(a, &ia);
    let kb = kernel_keys(b, &ib);
    let ta = profile_target(a);
    let tb = profile_target(b);
    let mut kernels = Vec::new();
    for (x, y, how) in match_kernels(&ka, &kb) {
        let da = x.and_then(|x| data_a(a, ia[x]));
        let db = y.and_then(|y| data_b(b, ib[y]));
        kernels.push(diff_kernel(da.as_ref(), db.as_ref(), how));
    }
    ProfileDiff {
        schema: SCHEMA,
        a: CaptureInfo {
            file: a_name.to_string(),
            target: ta.map(|t| t.to_string()),
            kernels: a.kernels.len(),
        },
        b: CaptureInfo {
            file: b_name.to_string(),
            target: tb.map(|t| t.to_string()),
            kernels: b.kernels.len(),
        },
        cross_arch: matches!((ta, tb), (Some(x), Some(y)) if x != y),
        kernels,
    }
}

/// One side's instruction sequence: the kernel's code with each instruction's statistics, or
/// (without the code object) the statistics rows in order.
struct Seq<'d> {
    items: Vec<SeqItem<'d>>,
}

struct SeqItem<'d> {
    key: String,
    offset: Option<u64>,
    text: String,
    mnemonic: String,
    stat: Option<&'d InstStat>,
}

impl<'d> Seq<'d> {
    fn new(d: &'d KernelData) -> Seq<'d> {
        let mut by_pc: HashMap<u64, &InstStat> = HashMap::new();
        let mut loose = Vec::new();
        for s in &d.stats {
            match s.pc {
                Some(pc) if d.code.is_some() => {
                    by_pc.insert(pc, s);
                }
                _ => loose.push(s),
            }
        }
        let mut items = Vec::new();
        if let Some(code) = &d.code {
            for (pc, text, mnemonic) in &code.insts {
                items.push(SeqItem {
                    key: format!("0x{pc:x}"),
                    offset: Some(pc - code.entry),
                    text: text.clone(),
                    mnemonic: mnemonic.clone(),
                    stat: by_pc.remove(pc),
                });
            }
        }
        // Executed PCs outside the kernel's code (should not happen) and unmapped rows.
        let mut rest: Vec<&InstStat> = by_pc.into_values().collect();
        rest.sort_by_key(|s| s.pc);
        rest.extend(loose);
        for s in rest {
            items.push(SeqItem {
                key: s.key.clone(),
                offset: match (&d.code, s.pc) {
                    (Some(c), Some(pc)) => pc.checked_sub(c.entry),
                    _ => None,
                },
                text: s.name.clone(),
                mnemonic: s.name.split_whitespace().next().unwrap_or("").to_string(),
                stat: Some(s),
            });
        }
        Seq { items }
    }

    fn side(&self, i: usize) -> InstSide {
        let it = &self.items[i];
        let (count, total, mean, median, max) = it.stat.map_or((0, 0, 0.0, 0, 0), |s| {
            (s.count, s.total, s.mean, s.median, s.max)
        });
        let (exposed, hidden_share) = it.stat.map_or((0, 0.0), |s| (s.exposed, s.hidden_share));
        InstSide {
            key: it.key.clone(),
            offset: it.offset,
            text: it.text.clone(),
            count,
            total,
            mean,
            median,
            max,
            exposed,
            hidden_share,
        }
    }
}

/// What instruction texts are compared on: branch targets move when code is inserted before
/// them, so a branch compares by its mnemonic.
fn align_token(text: &str, mnemonic: &str) -> String {
    if mnemonic == "s_branch" || mnemonic.starts_with("s_cbranch") {
        mnemonic.to_string()
    } else {
        text.to_string()
    }
}

/// Aligns two instruction sequences: texts first, then mnemonics inside the unmatched runs.
/// Returns (A index, B index, status) in code order.
pub fn align_instructions(
    a: &[(&str, &str)],
    b: &[(&str, &str)],
) -> Vec<(Option<usize>, Option<usize>, InstStatus)> {
    let toks_a: Vec<String> = a.iter().map(|(t, m)| align_token(t, m)).collect();
    let toks_b: Vec<String> = b.iter().map(|(t, m)| align_token(t, m)).collect();
    let mut texts = Interner::default();
    let ta: Vec<u32> = toks_a.iter().map(|s| texts.id(s)).collect();
    let tb: Vec<u32> = toks_b.iter().map(|s| texts.id(s)).collect();
    let mut mn = Interner::default();
    let ma: Vec<u32> = a.iter().map(|(_, m)| mn.id(m)).collect();
    let mb: Vec<u32> = b.iter().map(|(_, m)| mn.id(m)).collect();
    let steps = align::align(&ta, &tb);
    let mut out = Vec::with_capacity(steps.len());
    let mut dels: Vec<usize> = Vec::new();
    let mut ins: Vec<usize> = Vec::new();
    let flush = |dels: &mut Vec<usize>, ins: &mut Vec<usize>, out: &mut Vec<_>| {
        if dels.is_empty() || ins.is_empty() {
            out.extend(dels.drain(..).map(|i| (Some(i), None, InstStatus::Removed)));
            out.extend(ins.drain(..).map(|j| (None, Some(j), InstStatus::Added)));
            return;
        }
        let sa: Vec<u32> = dels.iter().map(|&i| ma[i]).collect();
        let sb: Vec<u32> = ins.iter().map(|&j| mb[j]).collect();
        for s in align::align(&sa, &sb) {
            out.push(match s {
                Step::Match(x, y) => (Some(dels[x]), Some(ins[y]), InstStatus::Changed),
                Step::Delete(x) => (Some(dels[x]), None, InstStatus::Removed),
                Step::Insert(y) => (None, Some(ins[y]), InstStatus::Added),
            });
        }
        dels.clear();
        ins.clear();
    };
    for s in steps {
        match s {
            Step::Match(i, j) => {
                flush(&mut dels, &mut ins, &mut out);
                // A branch matched by mnemonic whose target text differs is still the same
                // instruction of the program; its text shows both.
                out.push((Some(i), Some(j), InstStatus::Same));
            }
            Step::Delete(i) => dels.push(i),
            Step::Insert(j) => ins.push(j),
        }
    }
    flush(&mut dels, &mut ins, &mut out);
    out
}

/// Pairs items by their offset from the kernel entry (identical code); items without an
/// offset are aligned by text after them.
fn pair_by_offset(a: &Seq, b: &Seq) -> Vec<(Option<usize>, Option<usize>, InstStatus)> {
    let off_b: HashMap<u64, usize> = b
        .items
        .iter()
        .enumerate()
        .filter_map(|(j, it)| it.offset.map(|o| (o, j)))
        .collect();
    let mut used = vec![false; b.items.len()];
    let mut out = Vec::new();
    let mut rest_a = Vec::new();
    for (i, it) in a.items.iter().enumerate() {
        match it.offset.and_then(|o| off_b.get(&o)) {
            Some(&j) if !used[j] => {
                used[j] = true;
                out.push((Some(i), Some(j), InstStatus::Same));
            }
            _ => rest_a.push(i),
        }
    }
    let rest_b: Vec<usize> = (0..b.items.len()).filter(|&j| !used[j]).collect();
    let ta: Vec<(&str, &str)> = rest_a
        .iter()
        .map(|&i| (a.items[i].text.as_str(), a.items[i].mnemonic.as_str()))
        .collect();
    let tb: Vec<(&str, &str)> = rest_b
        .iter()
        .map(|&j| (b.items[j].text.as_str(), b.items[j].mnemonic.as_str()))
        .collect();
    for (x, y, st) in align_instructions(&ta, &tb) {
        out.push((x.map(|x| rest_a[x]), y.map(|y| rest_b[y]), st));
    }
    out
}

/// Compares one kernel pair (either side may be missing: an added or removed kernel).
pub fn diff_kernel(a: Option<&KernelData>, b: Option<&KernelData>, how: KernelMatch) -> KernelDiff {
    let name = a.or(b).map(|d| d.side.name.clone()).unwrap_or_default();
    let time_ratio = match (
        a.and_then(|d| d.side.gpu_time_us),
        b.and_then(|d| d.side.gpu_time_us),
    ) {
        (Some(x), Some(y)) if x > 0.0 => Some(y / x),
        _ => None,
    };
    let mut out = KernelDiff {
        name,
        matched_by: how,
        a: a.map(|d| d.side.clone()),
        b: b.map(|d| d.side.clone()),
        time_ratio,
        instruction_match: InstMatch::None,
        summary: InstSummary::default(),
        instructions: Vec::new(),
    };
    let (Some(a), Some(b)) = (a, b) else {
        return out;
    };
    let cross_arch = matches!((a.target, b.target), (Some(x), Some(y)) if x != y);
    let has_insts = |d: &KernelData| d.code.is_some() || !d.stats.is_empty();
    if cross_arch || !has_insts(a) || !has_insts(b) {
        return out;
    }
    let sa = Seq::new(a);
    let sb = Seq::new(b);
    let same_code =
        a.code.is_some() && a.code.as_ref().map(|c| &c.hash) == b.code.as_ref().map(|c| &c.hash);
    let pairs = if same_code {
        out.instruction_match = InstMatch::Pc;
        pair_by_offset(&sa, &sb)
    } else {
        out.instruction_match = InstMatch::Alignment;
        let ta: Vec<(&str, &str)> = sa
            .items
            .iter()
            .map(|i| (i.text.as_str(), i.mnemonic.as_str()))
            .collect();
        let tb: Vec<(&str, &str)> = sb
            .items
            .iter()
            .map(|i| (i.text.as_str(), i.mnemonic.as_str()))
            .collect();
        align_instructions(&ta, &tb)
    };
    for (position, (x, y, status)) in pairs.into_iter().enumerate() {
        let sa_ = x.map(|i| sa.side(i));
        let sb_ = y.map(|j| sb.side(j));
        let z = |s: &Option<InstSide>| {
            s.as_ref().map_or((0i64, 0i64, 0.0, 0i64, 0i64), |s| {
                (s.count as i64, s.total, s.mean, s.median, s.max)
            })
        };
        let (ac, at, am, amed, amax) = z(&sa_);
        let (bc, bt, bm, bmed, bmax) = z(&sb_);
        let d_exposed =
            sb_.as_ref().map_or(0, |s| s.exposed) - sa_.as_ref().map_or(0, |s| s.exposed);
        match status {
            InstStatus::Same => out.summary.same += 1,
            InstStatus::Changed => out.summary.changed += 1,
            InstStatus::Removed => out.summary.removed += 1,
            InstStatus::Added => out.summary.added += 1,
        }
        out.instructions.push(InstDiff {
            position,
            status,
            a: sa_,
            b: sb_,
            delta: InstDelta {
                count: bc - ac,
                total: bt - at,
                mean: bm - am,
                median: bmed - amed,
                max: bmax - amax,
                exposed: d_exposed,
            },
        });
    }
    out.instructions
        .sort_by_key(|r| (std::cmp::Reverse(r.delta.total.unsigned_abs()), r.position));
    out
}
