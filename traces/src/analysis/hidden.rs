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
        .map(|g| match rows.rows[g as usize].pc {
            Some(_) => InstClass::from_disasm(&rows.row_name(g)),
            None => InstClass::from_token(&rows.row_name(g)),
        })
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
        self.waves.extend(o.waves);
        self.total.add(&o.total);
    }
}

/// (wave index, split) of the waves of an SE that have tokens, in wave order.
type WaveSplits = Vec<(u32, LatencySplit)>;

/// One SE of [`kernel_splits`]: per row sums, and per wave with tokens (in wave order) its
/// sum. Only the waves with tokens get one: a split for each of the millions of waves of a big
/// capture was most of the analysis' memory.
fn se_splits(
    se: &crate::analysis::SeTrace,
    token_rows: &[u32],
    classes: &[InstClass],
    n_rows: usize,
) -> (Vec<LatencySplit>, WaveSplits) {
    let tokens = &se.analysis.tokens;
    let waves = &se.analysis.waves;
    let mut by_row = vec![LatencySplit::default(); n_rows];
    let mut by_wave: WaveSplits = Vec::new();
    // Waves by SIMD (CU and SIMD), each SIMD's issues as one time-sorted event list.
    let mut order: Vec<u32> = (0..waves.len() as u32)
        .filter(|&w| !se.wave_tokens(w as usize).is_empty())
        .collect();
    order.sort_by_key(|&w| (waves[w as usize].cu, waves[w as usize].simd));
    let groups: Vec<&[u32]> = order
        .chunk_by(|&a, &b| {
            (waves[a as usize].cu, waves[a as usize].simd)
                == (waves[b as usize].cu, waves[b as usize].simd)
        })
        .collect();
    let mut group_of = vec![u32::MAX; waves.len()];
    for (g, members) in groups.iter().enumerate() {
        for &w in *members {
            group_of[w as usize] = g as u32;
        }
    }
    // Each SIMD's issues in stream order, which is time order: only the issues of one cycle
    // need sorting then (events are whole values, so any sort gives the same list).
    // Each list at its size at once: grown by doubling, a big SE's copies and fresh pages
    // cost more than this count.
    let mut sizes = vec![0usize; groups.len()];
    for t in tokens {
        if let Some(&g) = group_of.get(t.wave as usize).filter(|&&g| g != u32::MAX) {
            sizes[g as usize] += 1;
        }
    }
    let mut by_group: Vec<Vec<(i64, u32, InstClass)>> =
        sizes.iter().map(|&n| Vec::with_capacity(n)).collect();
    for (ti, t) in tokens.iter().enumerate() {
        if let Some(&g) = group_of.get(t.wave as usize).filter(|&&g| g != u32::MAX) {
            by_group[g as usize].push((t.time, t.wave, classes[token_rows[ti] as usize]));
        }
    }
    drop(group_of);
    for (members, mut events) in groups.into_iter().zip(by_group) {
        if events.is_sorted_by_key(|e| e.0) {
            for same in events.chunk_by_mut(|a, b| a.0 == b.0) {
                same.sort_unstable();
            }
        } else {
            events.sort_unstable();
        }
        let cycles = Cycles::of(&events);
        for &w in members {
            let wave_tokens = se.wave_tokens(w as usize);
            let in_order = wave_tokens
                .iter()
                .filter_map(|&ti| tokens.get(ti as usize))
                .is_sorted_by_key(|t| t.time);
            let mut ws = LatencySplit::default();
            let mut add = |ti: u32, s: &LatencySplit| {
                by_row[token_rows[ti as usize] as usize].add(s);
                ws.add(s);
            };
            if in_order {
                cycles.wave_splits(w, waves[w as usize].start, wave_tokens, tokens, &mut add);
            } else {
                scan_wave_splits(
                    w,
                    waves[w as usize].start,
                    wave_tokens,
                    tokens,
                    &events,
                    add,
                );
            }
            by_wave.push((w, ws));
        }
    }
    by_wave.sort_unstable_by_key(|e| e.0);
    (by_row, by_wave)
}

/// The distinct cycles of one SIMD's issue events (sorted by time), each with the class that
/// fills it for a wave that did not issue in it: the least class of its events. A wave's
/// windows between its own issues hold none of its own events when its tokens come in time
/// order, so every cycle inside a window is hidden by that class, and only the window's last
/// cycle (where the wave itself issued) needs its events looked at: one byte per cycle read
/// instead of every event of every other wave compared.
struct Cycles<'e> {
    events: &'e [(i64, u32, InstClass)],
    times: Vec<i64>,
    /// Index in `events` of each cycle's first event (one more entry at the end).
    first: Vec<u32>,
    /// The least class issued in each cycle, as its index in [`InstClass::ALL`].
    least: Vec<u8>,
}

impl<'e> Cycles<'e> {
    fn of(events: &'e [(i64, u32, InstClass)]) -> Cycles<'e> {
        // At most a cycle per event.
        let mut c = Cycles {
            events,
            times: Vec::with_capacity(events.len()),
            first: Vec::with_capacity(events.len() + 1),
            least: Vec::with_capacity(events.len()),
        };
        for (i, e) in events.iter().enumerate() {
            match c.times.last() {
                Some(&t) if t == e.0 => {
                    let l = c.least.last_mut().expect("a cycle per time");
                    *l = (*l).min(e.2 as u8);
                }
                _ => {
                    c.times.push(e.0);
                    c.first.push(i as u32);
                    c.least.push(e.2 as u8);
                }
            }
        }
        c.first.push(events.len() as u32);
        c
    }

    /// The splits of wave `w`'s tokens (`order` into `tokens`, in time order), from its start
    /// on, each handed to `add` with its token index: [`scan_wave_splits`]'s results.
    fn wave_splits(
        &self,
        w: u32,
        start: i64,
        order: &[u32],
        tokens: &[crate::sqtt::InstToken],
        add: &mut impl FnMut(u32, &LatencySplit),
    ) {
        let times = &self.times;
        let mut prev = start;
        // The first cycle after `prev`.
        let mut k = times.partition_point(|&x| x <= prev);
        for &ti in order {
            let Some(t) = tokens.get(ti as usize) else {
                continue;
            };
            let mut by = [0i64; 8];
            if t.time > prev {
                while k < times.len() && times[k] < t.time {
                    by[self.least[k] as usize & 7] += 1;
                    k += 1;
                }
                if k < times.len() && times[k] == t.time {
                    // This wave issued here too: the least class of the others, if any.
                    let (a, b) = (self.first[k] as usize, self.first[k + 1] as usize);
                    let other = self.events[a..b]
                        .iter()
                        .filter(|e| e.1 != w)
                        .map(|e| e.2 as usize)
                        .min();
                    if let Some(c) = other {
                        by[c & 7] += 1;
                    }
                    k += 1;
                }
            } else if t.time < prev {
                k = times.partition_point(|&x| x <= t.time);
            }
            let mut s = LatencySplit {
                latency: t.time - prev,
                ..Default::default()
            };
            for (i, c) in InstClass::ALL.into_iter().enumerate() {
                *s.hidden.slot(c) = by[i];
            }
            s.exposed = s.latency - s.hidden_total();
            prev = t.time;
            add(ti, &s);
        }
    }
}

/// [`Cycles::wave_splits`] for a wave whose tokens are out of time order: each window's
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

    /// The per-cycle rule gives what comparing every event of each window gives, for waves
    /// whose tokens come in time order (ties, several waves issuing in one cycle, a first
    /// token before the wave's start, a wave alone on its SIMD).
    #[test]
    fn cycle_classes_give_the_scanned_splits() {
        use crate::sqtt::{InstToken, TokenKind};
        let mut next = crate::analysis::test_rng(0x9e37_79b9_7f4a_7c15u64);
        for case in 0..500 {
            let waves = 1 + next(6) as u32;
            let mut tokens = Vec::new();
            let mut starts = Vec::new();
            for w in 0..waves {
                let start = next(20) as i64;
                starts.push(start);
                let mut t = start - next(3) as i64;
                for _ in 0..next(12) {
                    t += next(4) as i64;
                    tokens.push(InstToken {
                        time: t,
                        wave: w,
                        kind: TokenKind::ValuInst,
                        op: crate::sqtt::TokenOp::NONE,
                        offset: 0,
                    });
                }
            }
            tokens.sort_by_key(|t| t.time);
            let classes: Vec<InstClass> = (0..tokens.len())
                .map(|_| InstClass::ALL[next(7) as usize])
                .collect();
            let mut events: Vec<(i64, u32, InstClass)> = tokens
                .iter()
                .zip(&classes)
                .map(|(t, &c)| (t.time, t.wave, c))
                .collect();
            events.sort_unstable();
            let cycles = Cycles::of(&events);
            for w in 0..waves {
                let order: Vec<u32> = (0..tokens.len() as u32)
                    .filter(|&i| tokens[i as usize].wave == w)
                    .collect();
                let (mut fast, mut scan) = (Vec::new(), Vec::new());
                let start = starts[w as usize];
                cycles.wave_splits(w, start, &order, &tokens, &mut |ti, s| fast.push((ti, *s)));
                scan_wave_splits(w, start, &order, &tokens, &events, |ti, s| {
                    scan.push((ti, *s))
                });
                assert_eq!(fast, scan, "case {case} wave {w}");
            }
        }
    }
}
