//! Exposed vs hidden latency (`docs/kernel-analysis.md` defines it).
//!
//! An instruction's measured latency is the cycles from its wave's previous issue (or the
//! wave's start) to its own issue, as SQTT timestamps them: the interval `(prev, issue]`. Each
//! cycle of it is *hidden* when another wave on the same SIMD issued an instruction in that
//! cycle (the SIMD did useful work for someone else), attributed to that instruction's class,
//! and *exposed* otherwise. So `exposed + hidden == latency` for every execution, by
//! construction, and per instruction, wave and kernel by summation.
//!
//! The computation takes plain issue streams ([`IssueWave`]) so any pipeline that has the
//! decoded waves can call [`split_latency`]; [`kernel_splits`] is the adapter for
//! [`KernelSqtt`].

use std::collections::HashMap;

use serde::Serialize;

use super::KernelSqtt;

/// What an issued instruction did, for attributing the cycles it hid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum InstClass {
    Valu,
    Salu,
    Vmem,
    Lds,
    Smem,
    Branch,
    /// Waits, nops, barriers, messages, `s_endpgm`, exports: issue-slot users that do no
    /// arithmetic or memory work.
    Other,
}

impl InstClass {
    /// Every class, in attribution priority (a cycle where several other waves issued counts
    /// once, for the first class here).
    pub const ALL: [InstClass; 7] = [
        InstClass::Valu,
        InstClass::Salu,
        InstClass::Vmem,
        InstClass::Lds,
        InstClass::Smem,
        InstClass::Branch,
        InstClass::Other,
    ];

    pub fn name(self) -> &'static str {
        match self {
            InstClass::Valu => "VALU",
            InstClass::Salu => "SALU",
            InstClass::Vmem => "VMEM",
            InstClass::Lds => "LDS",
            InstClass::Smem => "SMEM",
            InstClass::Branch => "branch",
            InstClass::Other => "other",
        }
    }

    /// Class of a disassembled instruction, by its mnemonic.
    pub fn from_disasm(text: &str) -> InstClass {
        let m = text.split_whitespace().next().unwrap_or("");
        const VMEM: [&str; 7] = [
            "global_", "buffer_", "flat_", "scratch_", "tbuffer_", "image_", "bvh",
        ];
        const SMEM: [&str; 6] = [
            "s_load",
            "s_buffer_load",
            "s_store",
            "s_buffer_store",
            "s_dcache",
            "s_atomic",
        ];
        const BRANCH: [&str; 5] = ["s_branch", "s_cbranch", "s_setpc", "s_swappc", "s_call"];
        const OTHER: [&str; 16] = [
            "s_waitcnt",
            "s_wait_",
            "s_nop",
            "s_endpgm",
            "s_barrier",
            "s_sendmsg",
            "s_delay_alu",
            "s_sleep",
            "s_clause",
            "s_inst_prefetch",
            "s_set_inst_prefetch",
            "s_ttrace",
            "s_icache",
            "s_trap",
            "s_setprio",
            "s_code_end",
        ];
        let starts = |list: &[&str]| list.iter().any(|p| m.starts_with(p));
        if m.starts_with("v_") {
            InstClass::Valu
        } else if m.starts_with("ds_") {
            InstClass::Lds
        } else if starts(&VMEM) {
            InstClass::Vmem
        } else if starts(&SMEM) {
            InstClass::Smem
        } else if starts(&BRANCH) {
            InstClass::Branch
        } else if starts(&OTHER) || m.starts_with("exp") {
            InstClass::Other
        } else if m.starts_with("s_") {
            InstClass::Salu
        } else {
            InstClass::Other
        }
    }

    /// Class from the SQTT token's name alone, when the PC is unknown.
    pub fn from_token(name: &str) -> InstClass {
        let has = |s: &str| name.contains(s);
        if has("VALU") || has("VINTERP") {
            InstClass::Valu
        } else if has("SALU") {
            InstClass::Salu
        } else if has("SMEM") {
            InstClass::Smem
        } else if has("LDS") {
            InstClass::Lds
        } else if has("FLAT") || has("GMEM") || has("VMEM") {
            InstClass::Vmem
        } else if has("JUMP") || has("CALL") {
            InstClass::Branch
        } else {
            InstClass::Other
        }
    }
}

/// Hidden cycles by the class of the other waves' instructions that filled them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct HiddenBy {
    pub valu: i64,
    pub salu: i64,
    pub vmem: i64,
    pub lds: i64,
    pub smem: i64,
    pub branch: i64,
    pub other: i64,
}

impl HiddenBy {
    pub fn get(&self, c: InstClass) -> i64 {
        match c {
            InstClass::Valu => self.valu,
            InstClass::Salu => self.salu,
            InstClass::Vmem => self.vmem,
            InstClass::Lds => self.lds,
            InstClass::Smem => self.smem,
            InstClass::Branch => self.branch,
            InstClass::Other => self.other,
        }
    }

    fn slot(&mut self, c: InstClass) -> &mut i64 {
        match c {
            InstClass::Valu => &mut self.valu,
            InstClass::Salu => &mut self.salu,
            InstClass::Vmem => &mut self.vmem,
            InstClass::Lds => &mut self.lds,
            InstClass::Smem => &mut self.smem,
            InstClass::Branch => &mut self.branch,
            InstClass::Other => &mut self.other,
        }
    }

    pub fn total(&self) -> i64 {
        InstClass::ALL.iter().map(|&c| self.get(c)).sum()
    }
}

/// One instruction's (or a sum of executions') latency, split.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LatencySplit {
    /// Measured latency: cycles from the previous issue of the wave to this issue.
    pub latency: i64,
    /// Cycles of it in which no other wave of the SIMD issued anything.
    pub exposed: i64,
    /// Cycles of it another wave of the SIMD filled, by that wave's instruction class.
    pub hidden: HiddenBy,
}

impl LatencySplit {
    pub fn hidden_total(&self) -> i64 {
        self.hidden.total()
    }

    /// Hidden share of the latency (0 when there is none).
    pub fn hidden_share(&self) -> f64 {
        if self.latency > 0 {
            self.hidden_total() as f64 / self.latency as f64
        } else {
            0.0
        }
    }

    pub fn add(&mut self, o: &LatencySplit) {
        self.latency += o.latency;
        self.exposed += o.exposed;
        for c in InstClass::ALL {
            *self.hidden.slot(c) += o.hidden.get(c);
        }
    }
}

/// One issued instruction of a wave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Issue {
    /// Shader cycles; every wave of one SIMD on the same clock.
    pub time: i64,
    pub class: InstClass,
}

/// One wave's issue stream, in time order.
#[derive(Debug, Clone)]
pub struct IssueWave {
    /// Waves with equal `simd` share one SIMD (e.g. SE, WGP/CU and SIMD packed together).
    pub simd: u64,
    /// The wave's start: the first instruction's latency is measured from here.
    pub start: i64,
    pub issues: Vec<Issue>,
}

/// Splits every instruction latency of `waves`: result `[w][i]` is issue `i` of wave `w`.
pub fn split_latency(waves: &[IssueWave]) -> Vec<Vec<LatencySplit>> {
    let mut out: Vec<Vec<LatencySplit>> = waves
        .iter()
        .map(|w| vec![LatencySplit::default(); w.issues.len()])
        .collect();
    let mut by_simd: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, w) in waves.iter().enumerate() {
        by_simd.entry(w.simd).or_default().push(i);
    }
    for members in by_simd.values() {
        // Every issue on the SIMD: (time, wave, class), sorted by time.
        let mut events: Vec<(i64, usize, InstClass)> = members
            .iter()
            .flat_map(|&w| waves[w].issues.iter().map(move |x| (x.time, w, x.class)))
            .collect();
        events.sort_unstable();
        for &w in members {
            let mut prev = waves[w].start;
            for (i, x) in waves[w].issues.iter().enumerate() {
                let s = &mut out[w][i];
                s.latency = x.time - prev;
                // Events in (prev, time]: each distinct cycle another wave issued in is hidden.
                let lo = events.partition_point(|e| e.0 <= prev);
                let hi = events.partition_point(|e| e.0 <= x.time);
                let mut j = lo;
                while j < hi {
                    let t = events[j].0;
                    let mut best: Option<InstClass> = None;
                    while j < hi && events[j].0 == t {
                        if events[j].1 != w {
                            best = Some(best.map_or(events[j].2, |b| b.min(events[j].2)));
                        }
                        j += 1;
                    }
                    if let Some(c) = best {
                        *s.hidden.slot(c) += 1;
                    }
                }
                s.exposed = s.latency - s.hidden_total();
                prev = x.time;
            }
        }
    }
    out
}

/// The key [`super::inst_stats`] groups executions by: (PC or `u64::MAX`, position in the
/// wave when the PC is unknown, disassembly or token name).
pub type InstKey = (u64, usize, String);

/// One wave's latency split.
#[derive(Debug, Clone, Serialize)]
pub struct WaveSplit {
    pub se: u32,
    /// Index in the SE's wave list.
    pub wave: usize,
    pub cu: u16,
    pub simd: u8,
    pub slot: u8,
    pub instructions: usize,
    #[serde(flatten)]
    pub split: LatencySplit,
}

/// The splits of a kernel: per instruction (summed over executions, keyed like
/// [`super::inst_stats`]) and per wave with instructions.
#[derive(Debug, Clone, Default)]
pub struct KernelSplits {
    pub by_inst: HashMap<InstKey, LatencySplit>,
    pub waves: Vec<WaveSplit>,
    pub total: LatencySplit,
}

/// Exposed vs hidden latency of every instruction-traced wave of a kernel.
///
/// [`split_latency`]'s rule, streamed: tokens are grouped into the instruction table's rows
/// ([`crate::pipeline::Rows`], no string per token), each SE's issues sorted per SIMD in a
/// compact event list, and each split added to its row and wave at once instead of being
/// kept per execution. The SEs are independent (a SIMD belongs to one) and run in parallel.
pub fn kernel_splits(k: &KernelSqtt) -> KernelSplits {
    splits_of(&k.ses, &k.disasm)
}

/// [`kernel_splits`] of `ses` alone, whose mapped PCs' disassembly is in `disasm` (one SE's
/// splits, [`KernelSplits::merge`]d in SE order, are the kernel's).
pub fn splits_of(ses: &[super::SeTrace], disasm: &HashMap<u64, String>) -> KernelSplits {
    let mut rows = crate::pipeline::Rows::new(ses, disasm);
    // Per SE, each token's row (u32::MAX: in no wave).
    let mut token_rows: Vec<Vec<u32>> = Vec::with_capacity(ses.len());
    for se in ses {
        let tokens = &se.analysis.tokens;
        let mut tr = vec![u32::MAX; tokens.len()];
        for w in 0..se.analysis.waves.len() {
            for (i, &ti) in se.wave_tokens(w).iter().enumerate() {
                let Some(t) = tokens.get(ti as usize) else {
                    continue;
                };
                let kind = rows.name_id(t);
                let pc = se.token_pc.get(ti as usize).copied().unwrap_or(u64::MAX);
                tr[ti as usize] = rows.row(i, kind, pc);
            }
        }
        token_rows.push(tr);
    }
    splits_with_rows(ses, &rows, &token_rows)
}

/// [`splits_of`] with the rows already found: `rows` met in [`splits_of`]'s order (SEs, waves,
/// tokens) and each SE's token rows (`u32::MAX`: in no wave), as the instruction table's pass
/// finds them too ([`crate::pipeline::TablePart::with_splits`]).
pub(crate) fn splits_with_rows(
    ses: &[super::SeTrace],
    rows: &crate::pipeline::Rows<'_>,
    token_rows: &[Vec<u32>],
) -> KernelSplits {
    use rayon::prelude::*;
    // A row's class: from its disassembly, or its token name (once per row).
    let classes: Vec<InstClass> = (0..rows.rows.len() as u32)
        .map(|g| row_class(rows, g))
        .collect();
    let n_rows = rows.rows.len();
    // Per SE: the split of each row (summed) and of each wave.
    let per_se: Vec<(Vec<LatencySplit>, WaveSplits)> = ses
        .par_iter()
        .zip(token_rows)
        .map(|(se, tr)| se_splits(se, tr, &classes, n_rows))
        .collect();
    let mut by_row = vec![LatencySplit::default(); n_rows];
    let mut out = KernelSplits::default();
    for (se, (rs, ws)) in ses.iter().zip(per_se) {
        for (a, b) in by_row.iter_mut().zip(&rs) {
            a.add(b);
        }
        // Only waves with tokens have a split (in wave order).
        for &(w, split) in &ws {
            let w = w as usize;
            let Some(wave) = se.analysis.waves.get(w) else {
                continue;
            };
            let n = se
                .wave_tokens(w)
                .iter()
                .filter(|&&ti| (ti as usize) < se.analysis.tokens.len())
                .count();
            if n == 0 {
                continue;
            }
            out.total.add(&split);
            out.waves.push(WaveSplit {
                se: se.se,
                wave: w,
                cu: wave.cu,
                simd: wave.simd,
                slot: wave.wave,
                instructions: n,
                split,
            });
        }
    }
    // Rows that executed: every one did, as rows are made by their first execution.
    for (g, s) in by_row.into_iter().enumerate() {
        out.by_inst.insert(rows.inst_key(g as u32), s);
    }
    out
}

impl KernelSplits {
    /// Adds the splits of the SEs after these ones'.
    pub fn merge(&mut self, o: KernelSplits) {
        for (k, s) in o.by_inst {
            self.by_inst.entry(k).or_default().add(&s);
        }
        // The first part's list is moved, not copied.
        if self.waves.is_empty() {
            self.waves = o.waves;
        } else {
            self.waves.extend(o.waves);
        }
        self.total.add(&o.total);
    }
}

/// (wave index, split) of the waves of an SE that have tokens, in wave order.
type WaveSplits = Vec<(u32, LatencySplit)>;

/// One SE of [`kernel_splits`]: per row sums, and per wave with tokens (in wave order) its
/// sum. Only the waves with tokens get one: a split for each of the millions of waves of a big
/// capture was most of the analysis' memory.
///
/// Each SIMD's issues are swept once in time order ([`sweep_splits`]); a wave whose tokens are
/// out of time order has its windows scanned instead ([`scan_wave_splits`]).
fn se_splits(
    se: &crate::analysis::SeTrace,
    token_rows: &[u32],
    classes: &[InstClass],
    n_rows: usize,
) -> (Vec<LatencySplit>, WaveSplits) {
    let tokens = &se.analysis.tokens;
    let waves = &se.analysis.waves;
    let class_of = |ti: u32| classes[token_rows[ti as usize] as usize];
    let mut by_row = vec![LatencySplit::default(); n_rows];
    // The waves with tokens (in wave order), then by SIMD (CU and SIMD): each wave's slot is
    // its place in that order, so per-wave state is kept for these waves only.
    let with_tokens: Vec<u32> = (0..waves.len() as u32)
        .filter(|&w| !se.wave_tokens(w as usize).is_empty())
        .collect();
    let mut order = with_tokens.clone();
    order.sort_by_key(|&w| (waves[w as usize].cu, waves[w as usize].simd));
    let mut slot_of = vec![u32::MAX; waves.len()];
    for (s, &w) in order.iter().enumerate() {
        slot_of[w as usize] = s as u32;
    }
    // Each SIMD: its range of slots.
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    for (s, same) in order
        .chunk_by(|&a, &b| {
            (waves[a as usize].cu, waves[a as usize].simd)
                == (waves[b as usize].cu, waves[b as usize].simd)
        })
        .scan(0, |at, c| {
            *at += c.len();
            Some((*at - c.len(), c.len()))
        })
    {
        groups.push(s..s + same);
    }
    let mut group_at = vec![0u32; order.len()];
    for (g, r) in groups.iter().enumerate() {
        group_at[r.clone()].fill(g as u32);
    }
    // Each SIMD's issues in token order, each list at its size at once (a wave's tokens are
    // the ones naming it): grown by doubling, a big SE's copies and fresh pages cost more.
    let mut by_group: Vec<Vec<Event>> = groups
        .iter()
        .map(|r| {
            let n = order[r.clone()]
                .iter()
                .map(|&w| se.wave_tokens(w as usize).len())
                .sum();
            Vec::with_capacity(n)
        })
        .collect();
    // A wave is in time order when none of its tokens is earlier than one before it (the token
    // index lists them in token order).
    let mut latest = vec![i64::MIN; order.len()];
    let mut in_order = vec![true; order.len()];
    // Each SIMD's list in time order as it is filled (then its issues of one cycle are in
    // token order too).
    let mut sorted = vec![true; groups.len()];
    for (ti, t) in tokens.iter().enumerate() {
        let Some(&s) = slot_of.get(t.wave as usize).filter(|&&s| s != u32::MAX) else {
            continue;
        };
        let g = group_at[s as usize] as usize;
        let events = &mut by_group[g];
        if events.last().is_some_and(|e| e.time > t.time) {
            sorted[g] = false;
        }
        events.push(Event {
            time: t.time,
            slot: s,
            ti: ti as u32,
        });
        let l = &mut latest[s as usize];
        if t.time < *l {
            in_order[s as usize] = false;
        } else {
            *l = t.time;
        }
    }
    drop((slot_of, group_at, latest));
    let mut clocks = vec![WaveClock::OFF; order.len()];
    let mut by_slot = vec![LatencySplit::default(); order.len()];
    for ((r, mut events), sorted) in groups.into_iter().zip(by_group).zip(sorted) {
        if !sorted {
            events.sort_unstable();
        }
        let mut starts: Vec<(i64, u32)> = r
            .clone()
            .filter(|&s| in_order[s])
            .map(|s| (waves[order[s] as usize].start, s as u32))
            .collect();
        sweep_splits(
            &events,
            &mut starts,
            &mut clocks,
            class_of,
            |s, ti, split| {
                let split = split.split();
                by_row[token_rows[ti as usize] as usize].add(&split);
                by_slot[s as usize].add(&split);
            },
        );
        if r.clone().all(|s| in_order[s]) {
            continue;
        }
        let scan_events: Vec<(i64, u32, InstClass)> = events
            .iter()
            .map(|e| (e.time, e.slot, class_of(e.ti)))
            .collect();
        for s in r.filter(|&s| !in_order[s]) {
            let w = order[s] as usize;
            let add = |ti: u32, split: &LatencySplit| {
                by_row[token_rows[ti as usize] as usize].add(split);
                by_slot[s].add(split);
            };
            let wave_tokens = se.wave_tokens(w);
            scan_wave_splits(
                s as u32,
                waves[w].start,
                wave_tokens,
                tokens,
                &scan_events,
                add,
            );
        }
    }
    // Slots back to wave order.
    let mut by_wave: WaveSplits = order.iter().copied().zip(by_slot).collect();
    by_wave.sort_unstable_by_key(|e| e.0);
    debug_assert!(by_wave.iter().map(|e| e.0).eq(with_tokens));
    (by_row, by_wave)
}

/// One issue of a SIMD: its cycle, the issuing wave's slot, and its token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Event {
    time: i64,
    slot: u32,
    ti: u32,
}

/// One wave's place in [`sweep_splits`].
#[derive(Debug, Clone, Copy)]
struct WaveClock {
    /// Its last issue cycle so far, its start before the first.
    prev: i64,
    /// The SIMD's cycles up to `prev` (included), by filling class (`seen` in
    /// [`sweep_splits`] when the wave reached `prev`).
    upto: Counts,
    state: ClockState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClockState {
    /// Not swept (a wave out of time order, or of another SIMD).
    Off,
    /// Before its start and its first issue: `upto` not known yet.
    Waiting,
    Live,
}

impl WaveClock {
    const OFF: WaveClock = WaveClock {
        prev: 0,
        upto: [0; LANES],
        state: ClockState::Off,
    };

    /// After a cycle its wave issued in: its window starts after the cycle (`seen` counts the
    /// cycles through it). False for a wave not swept.
    #[inline(always)]
    fn issued_through(&mut self, seen: Counts) -> bool {
        if self.state == ClockState::Off {
            return false;
        }
        self.upto = seen;
        self.state = ClockState::Live;
        true
    }

    /// Waves of `starts` (sorted, those before `next_start` done) that started before cycle
    /// `t` go live: every cycle up to their start is swept (`seen` of them).
    #[inline(always)]
    fn wake(
        starts: &[(i64, u32)],
        next_start: &mut usize,
        seen: &Counts,
        clocks: &mut [WaveClock],
        t: i64,
    ) {
        while let Some(&(_, s)) = starts.get(*next_start).filter(|e| e.0 < t) {
            let c = &mut clocks[s as usize];
            if c.state == ClockState::Waiting {
                c.upto = *seen;
                c.state = ClockState::Live;
            }
            *next_start += 1;
        }
    }

    /// A wave's clock waiting from its start (`upto` not known until it is swept).
    fn waiting(start: i64) -> WaveClock {
        WaveClock {
            prev: start,
            upto: [0; LANES],
            state: ClockState::Waiting,
        }
    }

    /// Sorts one SIMD's `starts` ((start, slot) of its swept waves) and sets each wave's clock
    /// waiting from its start.
    fn wait_for(starts: &mut [(i64, u32)], clocks: &mut [WaveClock]) {
        starts.sort_unstable();
        for &(start, s) in starts.iter() {
            clocks[s as usize] = WaveClock::waiting(start);
        }
    }
}

/// The splits of the waves `starts` ((start, slot) of waves whose tokens come in time order)
/// of one SIMD, from its issues `events` (sorted by time, a wave's issues of one cycle in token
/// order), each handed to `emit(slot, token, split)`: [`scan_wave_splits`]'s results in one
/// pass over the events instead of one walk per wave over every cycle of its windows.
///
/// A cycle is filled for a wave that did not issue in it by the least class issued in it, so
/// the hidden cycles of a window holding none of the wave's own issues (tokens in time order)
/// are the cycles between its ends counted by their least class: per class, the count of
/// cycles swept so far minus the count when the wave last issued (or started). Only the
/// window's last cycle, where the wave itself issued, looks at its events: the least class of
/// another wave's.
fn sweep_splits(
    events: &[Event],
    starts: &mut [(i64, u32)],
    clocks: &mut [WaveClock],
    class_of: impl Fn(u32) -> InstClass,
    mut emit: impl FnMut(u32, u32, &SweptSplit),
) {
    WaveClock::wait_for(starts, clocks);
    // Cycles swept so far, by their least class.
    let mut seen: Counts = [0; LANES];
    let mut next_start = 0;
    for cycle in events.chunk_by(|a, b| a.time == b.time) {
        let sweep = CycleSweep {
            time: cycle[0].time,
            starts,
            next_start: &mut next_start,
            seen: &mut seen,
        };
        sweep.run(
            cycle,
            clocks,
            |e| e.slot,
            |e| class_of(e.ti),
            |e, split| emit(e.slot, e.ti, split),
        );
    }
}

/// Lanes of a per-class count: the classes (lane = place in [`InstClass::ALL`]), padded to 8
/// so an array of them is whole vectors; the padding lane counts nothing the split reports.
const LANES: usize = 8;
const PAD: u8 = InstClass::ALL.len() as u8;
type Counts = [u32; LANES];

/// One lane set per class (and the padding lane), to add a count lane by lane: an indexed
/// 4-byte store under the whole-array reads after it stalls them (no store forwarding), and
/// a per-lane compare is not made whole vectors of.
const ONE_HOT: [Counts; LANES] = {
    let mut t = [[0; LANES]; LANES];
    let mut k = 0;
    while k < LANES {
        t[k][k] = 1;
        k += 1;
    }
    t
};

/// `a + b` lane by lane.
#[inline(always)]
fn plus(a: &Counts, b: &Counts) -> Counts {
    std::array::from_fn(|k| a[k] + b[k])
}

/// One issue's split as the sweep finds it: its latency and its hidden cycles by class (the
/// padding lane, ignored, takes [`CycleSweep::run`]'s fill when no other wave filled its
/// cycle). [`SweptSplit::split`] is the [`LatencySplit`].
#[derive(Debug, Clone, Copy)]
struct SweptSplit {
    latency: i64,
    hidden: Counts,
}

impl SweptSplit {
    fn split(&self) -> LatencySplit {
        let mut sum = SplitSum::<u64>::default();
        sum.add(self);
        sum.split()
    }
}

/// A sum of [`SweptSplit`]s: the latencies, and the hidden cycles by class in lanes of `T`
/// (a wave's fit a u32: its windows are disjoint, so they count each cycle of its SIMD at
/// most once, and `seen` counts those in a u32; a row's sums many waves' windows, so u64).
/// The exposed cycles are the latency minus the hidden ones, taken once at the end: the sum
/// of each issue's, as i64 sums wrap alike.
#[derive(Debug, Clone, Copy, Default)]
struct SplitSum<T> {
    latency: i64,
    hidden: [T; LANES],
}

impl<T: Copy + Into<u64> + From<u32> + std::ops::AddAssign> SplitSum<T> {
    #[inline(always)]
    fn add(&mut self, s: &SweptSplit) {
        self.latency += s.latency;
        for (h, &b) in self.hidden.iter_mut().zip(&s.hidden) {
            *h += T::from(b);
        }
    }

    fn split(&self) -> LatencySplit {
        let mut out = LatencySplit {
            latency: self.latency,
            ..Default::default()
        };
        for (k, c) in InstClass::ALL.into_iter().enumerate() {
            *out.hidden.slot(c) = self.hidden[k].into() as i64;
        }
        out.exposed = out.latency - out.hidden_total();
        out
    }
}

/// The least class issued in a cycle and its wave, and the least class of the other waves
/// (`u8::MAX`: none), over the cycle's issues in issue order.
#[derive(Debug, Clone, Copy)]
struct Least {
    least: u8,
    slot: u32,
    other: u8,
}

impl Least {
    const NONE: Least = Least {
        least: u8::MAX,
        slot: u32::MAX,
        other: u8::MAX,
    };

    #[inline(always)]
    fn add(&mut self, slot: u32, class: InstClass) {
        let c = class as u8;
        if c < self.least {
            if slot != self.slot {
                self.other = self.least;
            }
            self.least = c;
            self.slot = slot;
        } else if slot != self.slot {
            self.other = self.other.min(c);
        }
    }

    /// The class that filled the cycle for the wave in `slot`: the least of another wave's
    /// (`u8::MAX`: none).
    #[inline(always)]
    fn fill(&self, slot: u32) -> u8 {
        if slot != self.slot {
            self.least
        } else {
            self.other
        }
    }

    /// The lane the cycle counts in ([`LANES`]' padding when no issue was added).
    #[inline(always)]
    fn lane(&self) -> usize {
        self.least as usize & (LANES - 1)
    }
}

/// One cycle of a SIMD's sweep ([`sweep_splits`]; [`StreamSplits`] does the same a token at a
/// time): its time, the SIMD's waves by start and how many of them are swept, and the cycles
/// swept so far by least class.
struct CycleSweep<'a> {
    time: i64,
    starts: &'a [(i64, u32)],
    next_start: &'a mut usize,
    seen: &'a mut Counts,
}

impl CycleSweep<'_> {
    /// Sweeps the cycle's `issues` (in issue order, each of the wave in slot `slot` and of
    /// class `class`): waves that started before it go live, each issue's split goes to `emit`, and
    /// the cycle is counted by its least class.
    #[inline(always)]
    fn run<I>(
        self,
        issues: &[I],
        clocks: &mut [WaveClock],
        slot: impl Fn(&I) -> u32,
        class: impl Fn(&I) -> InstClass,
        mut emit: impl FnMut(&I, &SweptSplit),
    ) {
        let t = self.time;
        WaveClock::wake(self.starts, self.next_start, self.seen, clocks, t);
        let mut least = Least::NONE;
        for e in issues {
            least.add(slot(e), class(e));
        }
        let seen = self.seen;
        for e in issues {
            let slot = slot(e);
            let c = &mut clocks[slot as usize];
            if c.state == ClockState::Off {
                continue;
            }
            // A wave's later issues in this cycle find `prev` here: no latency, none hidden.
            let mut split = SweptSplit {
                latency: t - c.prev,
                hidden: ONE_HOT[PAD as usize],
            };
            if t > c.prev {
                debug_assert_eq!(c.state, ClockState::Live, "a start before {t} is swept");
                // No other wave issued here: the padding lane.
                let fill = PAD.min(least.fill(slot));
                let before: Counts = std::array::from_fn(|k| seen[k] - c.upto[k]);
                split.hidden = plus(&before, &ONE_HOT[fill as usize]);
            }
            c.prev = t;
            emit(e, &split);
        }
        // The count bumped lane by lane ([`ONE_HOT`]); `least` is a class (`issues` is not
        // empty).
        let next = plus(seen, &ONE_HOT[least.lane()]);
        *seen = next;
        for e in issues {
            clocks[slot(e) as usize].issued_through(next);
        }
    }
}

/// [`sweep_splits`] fed one issue at a time, for a pass that meets each SIMD's issues in time
/// order as it goes (the instruction table's fold over an SE's tokens,
/// [`crate::pipeline::TablePart::of_se`]). Each issue's split is added to its row's and its
/// wave's sum as it comes, but for its own cycle's fill, which depends on the other issues of
/// that cycle: those are kept (most cycles have one, which no other wave fills) and the fill
/// is added once a later cycle comes, as the SIMD's count by least class and its waves' `upto`
/// are advanced ([`sweep_splits`] does all of it a cycle at a time). Every wave must be in
/// time order: an issue earlier than its SIMD's current cycle is refused
/// ([`StreamSplits::issue`]), and the caller then takes [`splits_with_rows`] instead.
pub(crate) struct StreamSplits {
    simds: Vec<SimdSweep>,
    clocks: Vec<WaveClock>,
    /// Per row: its class, and its executions' splits summed.
    classes: Vec<InstClass>,
    by_row: Vec<SplitSum<u64>>,
    /// Per wave slot, its executions' splits summed.
    by_slot: Vec<SplitSum<u32>>,
}

/// One SIMD of [`StreamSplits`]: [`sweep_splits`]'s state, its current cycle open.
struct SimdSweep {
    /// (start, slot) of its waves, sorted; those before `next_start` are swept.
    starts: Vec<(i64, u32)>,
    next_start: usize,
    /// Cycles swept so far (the current one not yet), by their least class.
    seen: Counts,
    /// The current cycle and its issues (slot, row, whether it had a window to split), in
    /// issue order.
    time: i64,
    cycle: Vec<(u32, u32, bool)>,
    /// The current cycle's least classes, kept as its issues come.
    least: Least,
}

impl SimdSweep {
    /// A SIMD's sweep over its waves' `starts` (sorted), before its first cycle.
    fn of(starts: Vec<(i64, u32)>) -> SimdSweep {
        SimdSweep {
            starts,
            next_start: 0,
            seen: [0; LANES],
            time: i64::MIN,
            cycle: Vec::new(),
            least: Least::NONE,
        }
    }

    /// Counts the current cycle by its least class and starts gathering the next one's: the
    /// cycles swept so far.
    #[inline(always)]
    fn count_cycle(&mut self) -> Counts {
        self.seen = plus(&self.seen, &ONE_HOT[self.least.lane()]);
        self.least = Least::NONE;
        self.seen
    }
}

impl StreamSplits {
    /// `starts[simd]`: (start, slot) of each wave of that SIMD; slots are below `slots`.
    pub(crate) fn new(starts: Vec<Vec<(i64, u32)>>, slots: usize) -> StreamSplits {
        let mut clocks = vec![WaveClock::OFF; slots];
        let simds = starts
            .into_iter()
            .map(|mut starts| {
                WaveClock::wait_for(&mut starts, &mut clocks);
                SimdSweep::of(starts)
            })
            .collect();
        StreamSplits {
            simds,
            clocks,
            classes: Vec::new(),
            by_row: Vec::new(),
            by_slot: vec![SplitSum::default(); slots],
        }
    }

    /// A SIMD with no wave yet (the next index), for waves added as they start
    /// ([`StreamSplits::add_wave`]).
    pub(crate) fn add_simd(&mut self) -> u32 {
        self.simds.push(SimdSweep::of(Vec::new()));
        (self.simds.len() - 1) as u32
    }

    /// A wave of SIMD `simd` starting at `start`, added as the stream meets its start: its
    /// slot (the next one), or `None` when that is not what [`StreamSplits::new`] would have
    /// made of it, with every start known up front: a start before one added before it (the
    /// starts are kept sorted), or before the SIMD's current cycle (a cycle after the start
    /// was already counted, which the wave's window would have to leave out).
    pub(crate) fn add_wave(&mut self, simd: u32, start: i64) -> Option<u32> {
        let m = self.simds.get_mut(simd as usize)?;
        if m.time > start || m.starts.last().is_some_and(|l| l.0 > start) {
            return None;
        }
        let s = self.clocks.len() as u32;
        m.starts.push((start, s));
        self.clocks.push(WaveClock::waiting(start));
        self.by_slot.push(SplitSum::default());
        Some(s)
    }

    /// A new row (the next index), of this class.
    pub(crate) fn add_row(&mut self, class: InstClass) {
        self.classes.push(class);
        self.by_row.push(SplitSum::default());
    }

    /// The issue of wave `slot` (of SIMD `simd`) at `time`, of row `row`; false when it is
    /// earlier than the SIMD's last (the stream is not in time order: nothing more may be
    /// asked of this).
    #[inline(always)]
    pub(crate) fn issue(&mut self, simd: u32, time: i64, slot: u32, row: u32) -> bool {
        let m = &mut self.simds[simd as usize];
        if time != m.time {
            if !m.cycle.is_empty() {
                if time < m.time {
                    return false;
                }
                if let [(s, _, _)] = m.cycle[..] {
                    // One issue (most cycles): no other wave filled its cycle, only the count
                    // and its window's start move ([`StreamSplits::close`] inline).
                    let next = m.count_cycle();
                    self.clocks[s as usize].issued_through(next);
                    m.cycle.clear();
                } else {
                    Self::close(m, &mut self.clocks, &mut self.by_row, &mut self.by_slot);
                }
            }
            m.time = time;
            WaveClock::wake(
                &m.starts,
                &mut m.next_start,
                &m.seen,
                &mut self.clocks,
                time,
            );
        }
        m.least.add(slot, self.classes[row as usize]);
        let c = &mut self.clocks[slot as usize];
        // A wave's later issues in this cycle find `prev` here: no latency, none hidden.
        let window = c.state != ClockState::Off && time > c.prev;
        if c.state != ClockState::Off {
            let mut split = SweptSplit {
                latency: time - c.prev,
                hidden: [0; LANES],
            };
            if window {
                debug_assert_eq!(c.state, ClockState::Live, "a start before {time} is swept");
                split.hidden = std::array::from_fn(|k| m.seen[k] - c.upto[k]);
            }
            c.prev = time;
            self.by_row[row as usize].add(&split);
            self.by_slot[slot as usize].add(&split);
        }
        m.cycle.push((slot, row, window));
        true
    }

    /// Closes the SIMD's current cycle: each of its issues with a window gets the cycle's
    /// fill (the least class of another wave's issues here, if any), the cycle is counted by
    /// its least class, and its waves' windows start after it.
    #[inline(never)]
    fn close(
        m: &mut SimdSweep,
        clocks: &mut [WaveClock],
        by_row: &mut [SplitSum<u64>],
        by_slot: &mut [SplitSum<u32>],
    ) {
        let least = m.least;
        let next = m.count_cycle();
        for &(slot, row, window) in &m.cycle {
            if !clocks[slot as usize].issued_through(next) {
                continue;
            }
            let fill = least.fill(slot);
            if window && fill < PAD {
                by_row[row as usize].hidden[fill as usize] += 1;
                by_slot[slot as usize].hidden[fill as usize] += 1;
            }
        }
        m.cycle.clear();
    }

    /// Closes every SIMD's last cycle: the splits summed per row and per wave slot.
    pub(crate) fn finish(mut self) -> (Vec<LatencySplit>, Vec<LatencySplit>) {
        for m in &mut self.simds {
            if !m.cycle.is_empty() {
                Self::close(m, &mut self.clocks, &mut self.by_row, &mut self.by_slot);
            }
        }
        (
            self.by_row.iter().map(SplitSum::split).collect(),
            self.by_slot.iter().map(SplitSum::split).collect(),
        )
    }
}

/// A row's class for the latency splits: from its disassembly, or its token name when it
/// has no PC.
pub(crate) fn row_class(rows: &crate::pipeline::Rows<'_>, g: u32) -> InstClass {
    match rows.rows[g as usize].pc {
        Some(_) => InstClass::from_disasm(&rows.row_name(g)),
        None => InstClass::from_token(&rows.row_name(g)),
    }
}

/// [`sweep_splits`] for a wave whose tokens are out of time order: each window's
/// events compared one by one, the wave's own left out.
fn scan_wave_splits(
    w: u32,
    start: i64,
    order: &[u32],
    tokens: &[crate::sqtt::InstToken],
    events: &[(i64, u32, InstClass)],
    mut add: impl FnMut(u32, &LatencySplit),
) {
    let mut prev = start;
    // The end of the last token's window: its window ends where the next one's starts
    // (tokens of a wave come in time order), so only a wave's first token searches.
    let mut next_lo: Option<usize> = None;
    for &ti in order {
        let Some(t) = tokens.get(ti as usize) else {
            continue;
        };
        let mut s = LatencySplit {
            latency: t.time - prev,
            ..Default::default()
        };
        // Events in (prev, time]: each distinct cycle another wave issued in is hidden.
        let lo = match next_lo {
            Some(lo) => lo,
            None => events.partition_point(|e| e.0 <= prev),
        };
        let mut hi = lo;
        while hi < events.len() && events[hi].0 <= t.time {
            hi += 1;
        }
        // A token earlier than the last (out of time order) searches again.
        next_lo = (t.time >= prev).then_some(hi);
        let mut j = lo;
        while j < hi {
            let tj = events[j].0;
            let mut best: Option<InstClass> = None;
            while j < hi && events[j].0 == tj {
                if events[j].1 != w {
                    best = Some(best.map_or(events[j].2, |b| b.min(events[j].2)));
                }
                j += 1;
            }
            if let Some(c) = best {
                *s.hidden.slot(c) += 1;
            }
        }
        s.exposed = s.latency - s.hidden_total();
        prev = t.time;
        add(ti, &s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_from_mnemonics() {
        use InstClass::*;
        for (t, c) in [
            ("v_fmac_f32 v1, v2, v3", Valu),
            ("s_add_u32 s0, s1, s2", Salu),
            ("global_load_b32 v1, v0, s[6:7]", Vmem),
            ("ds_load_b32 v1, v2", Lds),
            ("s_load_b128 s[0:3], s[0:1], 0x0", Smem),
            ("s_cbranch_scc1 4", Branch),
            ("s_waitcnt vmcnt(0)", Other),
            ("s_endpgm", Other),
        ] {
            assert_eq!(InstClass::from_disasm(t), c, "{t}");
        }
        assert_eq!(InstClass::from_token("VALUINST"), Valu);
        assert_eq!(InstClass::from_token("SGMEM_RD_1"), Vmem);
        assert_eq!(InstClass::from_token("IMMEDIATE"), Other);
    }

    /// The sweep gives what comparing every event of each window gives, for the waves whose
    /// tokens come in time order (ties, several waves issuing in one cycle, a wave issuing
    /// twice in one cycle, a first token before the wave's start, a wave alone on its SIMD),
    /// beside waves out of time order (swept only as other waves' issues) and tokens not in
    /// time order across waves.
    #[test]
    fn sweep_gives_the_scanned_splits() {
        use crate::sqtt::{InstToken, TokenKind};
        let mut next = crate::analysis::test_rng(0x9e37_79b9_7f4a_7c15u64);
        for case in 0..2000 {
            let waves = 1 + next(6) as u32;
            let mut tokens = Vec::new();
            let mut starts = Vec::new();
            for w in 0..waves {
                let start = next(20) as i64;
                starts.push(start);
                let shuffled = next(5) == 0;
                let mut t = start - next(3) as i64;
                for _ in 0..next(12) {
                    t += next(4) as i64;
                    let time = if shuffled { t - next(6) as i64 } else { t };
                    tokens.push(InstToken {
                        time,
                        wave: w,
                        kind: TokenKind::ValuInst,
                        op: crate::sqtt::TokenOp::NONE,
                        offset: 0,
                    });
                }
            }
            // Tokens in time order (each wave's kept: a stable sort), or wave after wave.
            if next(4) != 0 {
                tokens.sort_by_key(|t| t.time);
            }
            let classes: Vec<InstClass> = (0..tokens.len())
                .map(|_| InstClass::ALL[next(7) as usize])
                .collect();
            let mut events: Vec<Event> = (0..tokens.len() as u32)
                .map(|ti| Event {
                    time: tokens[ti as usize].time,
                    slot: tokens[ti as usize].wave,
                    ti,
                })
                .collect();
            if !events.is_sorted_by_key(|e| e.time) {
                events.sort_unstable();
            }
            let scan_events: Vec<(i64, u32, InstClass)> = events
                .iter()
                .map(|e| (e.time, e.slot, classes[e.ti as usize]))
                .collect();
            let order_of = |w: u32| -> Vec<u32> {
                (0..tokens.len() as u32)
                    .filter(|&i| tokens[i as usize].wave == w)
                    .collect()
            };
            let in_order = |w: u32| {
                order_of(w)
                    .iter()
                    .map(|&i| tokens[i as usize].time)
                    .is_sorted()
            };
            let mut swept_starts: Vec<(i64, u32)> = (0..waves)
                .filter(|&w| in_order(w))
                .map(|w| (starts[w as usize], w))
                .collect();
            let mut clocks = vec![WaveClock::OFF; waves as usize];
            let mut fast = vec![None; tokens.len()];
            sweep_splits(
                &events,
                &mut swept_starts,
                &mut clocks,
                |ti| classes[ti as usize],
                |w, ti, s| {
                    assert_eq!(tokens[ti as usize].wave, w);
                    let s = s.split();
                    assert!(fast[ti as usize].replace(s).is_none(), "token {ti} twice");
                },
            );
            for w in 0..waves {
                let order = order_of(w);
                let mut scan = vec![None; tokens.len()];
                scan_wave_splits(
                    w,
                    starts[w as usize],
                    &order,
                    &tokens,
                    &scan_events,
                    |ti, s| scan[ti as usize] = Some(*s),
                );
                for &ti in &order {
                    let fast = fast[ti as usize];
                    if in_order(w) {
                        assert_eq!(fast, scan[ti as usize], "case {case} wave {w} token {ti}");
                    } else {
                        assert_eq!(fast, None, "case {case} wave {w} is out of order");
                    }
                }
            }
        }
    }

    /// A random SIMD count (1-3) and row classes (1-8 rows) for the streamed sweep's tests.
    fn random_simds_and_classes(next: &mut impl FnMut(u64) -> u64) -> (usize, Vec<InstClass>) {
        let simds = 1 + next(3) as usize;
        let n_rows = 1 + next(8) as usize;
        let classes = (0..n_rows)
            .map(|_| InstClass::ALL[next(7) as usize])
            .collect();
        (simds, classes)
    }

    /// The streamed sweep's sums per row and per wave are the scanned splits summed: several
    /// SIMDs fed interleaved, waves issuing several times in a cycle or before their start,
    /// rows shared across waves and SIMDs.
    #[test]
    fn streamed_sums_are_the_scanned_ones() {
        use crate::sqtt::{InstToken, TokenKind};
        let mut next = crate::analysis::test_rng(0x51ee_7f00_d15c_a11b);
        for case in 0..2000 {
            let (simds, classes) = random_simds_and_classes(&mut next);
            let n_rows = classes.len();
            // Per wave (slot): its SIMD and start; per token: (time, slot, row), each wave's
            // in time order.
            let mut waves: Vec<(usize, i64)> = Vec::new();
            let mut tokens: Vec<(i64, u32, u32)> = Vec::new();
            for _ in 0..1 + next(8) {
                let slot = waves.len() as u32;
                let start = next(30) as i64;
                waves.push((next(simds as u64) as usize, start));
                let mut t = start - next(3) as i64;
                for _ in 0..next(15) {
                    t += next(5) as i64;
                    tokens.push((t, slot, next(n_rows as u64) as u32));
                }
            }
            // Every SIMD's issues in time order, the SIMDs interleaved (a stable sort keeps
            // each wave's order within a cycle).
            tokens.sort_by_key(|t| t.0);
            let mut starts = vec![Vec::new(); simds];
            for (s, &(simd, start)) in waves.iter().enumerate() {
                starts[simd].push((start, s as u32));
            }
            let mut stream = StreamSplits::new(starts, waves.len());
            for &c in &classes {
                stream.add_row(c);
            }
            for &(time, slot, row) in &tokens {
                let simd = waves[slot as usize].0 as u32;
                assert!(stream.issue(simd, time, slot, row), "case {case}");
            }
            let (by_row, by_slot) = stream.finish();
            let mut want_row = vec![LatencySplit::default(); n_rows];
            let mut want_slot = vec![LatencySplit::default(); waves.len()];
            let inst: Vec<InstToken> = tokens
                .iter()
                .map(|&(time, slot, _)| InstToken {
                    time,
                    wave: slot,
                    kind: TokenKind::ValuInst,
                    op: crate::sqtt::TokenOp::NONE,
                    offset: 0,
                })
                .collect();
            for (w, &(simd, start)) in waves.iter().enumerate() {
                let events: Vec<(i64, u32, InstClass)> = tokens
                    .iter()
                    .filter(|t| waves[t.1 as usize].0 == simd)
                    .map(|&(time, slot, row)| (time, slot, classes[row as usize]))
                    .collect();
                let order: Vec<u32> = (0..tokens.len() as u32)
                    .filter(|&i| tokens[i as usize].1 == w as u32)
                    .collect();
                scan_wave_splits(w as u32, start, &order, &inst, &events, |ti, s| {
                    want_row[tokens[ti as usize].2 as usize].add(s);
                    want_slot[w].add(s);
                });
            }
            assert_eq!(by_row, want_row, "case {case}: rows");
            assert_eq!(by_slot, want_slot, "case {case}: waves");
        }
    }

    /// Waves added to the sweep as the stream meets their starts ([`StreamSplits::add_wave`],
    /// the decode's in-pass fold) sweep as with every start given up front
    /// ([`StreamSplits::new`], of the waves with tokens only): waves without tokens added too
    /// change nothing, a start at the time of its SIMD's current cycle is taken, and a start
    /// before an earlier start or before its SIMD's current cycle is refused.
    #[test]
    fn waves_added_as_they_start_sweep_as_given_up_front() {
        let mut next = crate::analysis::test_rng(0x7f4a_7c15_51ee_d15c);
        let mut refused = 0;
        for case in 0..2000 {
            let (simds, classes) = random_simds_and_classes(&mut next);
            let n_rows = classes.len();
            // Per wave in start order: its SIMD and start; per token: (time, wave, row), each
            // wave's at or after its start, in time order.
            let mut waves: Vec<(usize, i64)> = (0..1 + next(8))
                .map(|_| (next(simds as u64) as usize, next(30) as i64))
                .collect();
            waves.sort_by_key(|w| w.1);
            let mut tokens: Vec<(i64, u32, u32)> = Vec::new();
            for (w, &(_, start)) in waves.iter().enumerate() {
                let mut t = start;
                for _ in 0..next(15) {
                    t += next(5) as i64;
                    tokens.push((t, w as u32, next(n_rows as u64) as u32));
                }
            }
            tokens.sort_by_key(|t| t.0);
            // Up front: the waves with tokens, numbered in wave order.
            let with: Vec<usize> = (0..waves.len())
                .filter(|&w| tokens.iter().any(|t| t.1 == w as u32))
                .collect();
            let mut starts = vec![Vec::new(); simds];
            for (s, &w) in with.iter().enumerate() {
                starts[waves[w].0].push((waves[w].1, s as u32));
            }
            let mut want = StreamSplits::new(starts, with.len());
            // As they start: every wave, each added before the first issue after its start
            // (at random before or after the issues at its start).
            let mut got = StreamSplits::new(Vec::new(), 0);
            for _ in 0..simds {
                got.add_simd();
            }
            for &c in &classes {
                want.add_row(c);
                got.add_row(c);
            }
            let mut added = 0;
            for (i, &(time, w, row)) in tokens.iter().enumerate() {
                while added < waves.len()
                    && (waves[added].1 < time || (waves[added].1 == time && next(2) == 0))
                {
                    let (simd, start) = waves[added];
                    assert_eq!(got.add_wave(simd as u32, start), Some(added as u32));
                    added += 1;
                }
                // A wave's first issue comes after its start.
                while added <= w as usize {
                    let (simd, start) = waves[added];
                    assert_eq!(got.add_wave(simd as u32, start), Some(added as u32));
                    added += 1;
                }
                let simd = waves[w as usize].0 as u32;
                let s = with.iter().position(|&x| x == w as usize).unwrap() as u32;
                assert!(want.issue(simd, time, s, row), "case {case}");
                assert!(got.issue(simd, time, w, row), "case {case}");
                // A start before this issue, or before the last start, is refused.
                if i + 1 == tokens.len() && time > 0 {
                    let last = waves[..added].iter().map(|w| w.1).max().unwrap_or(0);
                    let early = time.min(last) - 1;
                    assert_eq!(got.add_wave(simd, early), None, "case {case}");
                    refused += 1;
                }
            }
            let (want_row, want_slot) = want.finish();
            let (got_row, got_slot) = got.finish();
            assert_eq!(got_row, want_row, "case {case}: rows");
            let got_with: Vec<LatencySplit> = with.iter().map(|&w| got_slot[w]).collect();
            assert_eq!(got_with, want_slot, "case {case}: waves");
        }
        assert!(refused > 500, "{refused}");
    }
}
