//! Rows of a kernel's SQTT view: SE -> CU/WGP -> SIMD/wave-slot rows, each holding its waves
//! sorted by start, and the per-frame layout of the visible rows with level of detail.

use std::cell::Cell;
use std::collections::{BTreeSet, HashMap};

use traces::sqtt::{InstToken, OpName, TokenKind};

use super::lod::{layout_row, Item, RowSummary};
use super::traced::TracedWaves;
use super::view::TimeView;
use crate::data::{KernelSqtt, SeClock};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RowKind {
    Se {
        se: usize,
    },
    Cu {
        se: usize,
        cu: u16,
    },
    Wave {
        se: usize,
        cu: u16,
        simd: u8,
        slot: u8,
    },
}

#[derive(Debug, Clone)]
pub struct Row {
    pub kind: RowKind,
    /// Wave indices (into the SE's waves, stream order) sorted by start; empty for headers.
    pub waves: Vec<u32>,
    /// Their (start, end) in shader cycles, in the same order: the row's only copy of its
    /// waves' times (20 bytes per wave with the index). x comes from the SE's clock as a frame
    /// reads the row, in sequence.
    pub cycles: Vec<(i64, i64)>,
    pub max_len: f64,
    /// The waves' level-of-detail summary (empty for headers).
    pub summary: RowSummary,
    /// Waves below this header (headers) or in this row.
    pub wave_count: usize,
    pub itraced: bool,
}

/// Every row of a kernel, in display order, and each SE's clock (cycles to x).
#[derive(Clone, Default)]
pub struct SqttRows {
    pub rows: Vec<Row>,
    /// By SE index (`KernelSqtt::ses` order).
    pub clocks: Vec<SeClock>,
    /// By SE index: its waves with tokens and their tokens (empty for an SE without).
    pub traced: Vec<TracedWaves>,
}

pub const HEADER_H: f32 = 18.0;
pub const WAVE_H: f32 = 15.0;

impl Row {
    pub fn height(&self) -> f32 {
        match self.kind {
            RowKind::Wave { .. } => WAVE_H,
            _ => HEADER_H,
        }
    }

    /// The (start, end) x of every wave of the row, in order.
    pub fn xs<'a>(&'a self, clock: &'a SeClock) -> impl Iterator<Item = (f64, f64)> + 'a {
        let mut h = [0usize; 2];
        self.cycles
            .iter()
            .map(move |&(a, b)| (clock.x_hinted(a, &mut h), clock.x_hinted(b, &mut h)))
    }

    /// The (start, end) x of the row's `i`-th wave.
    pub fn x(&self, clock: &SeClock, i: usize) -> (f64, f64) {
        let (a, b) = self.cycles.get(i).copied().unwrap_or((0, 0));
        (clock.x(a), clock.x(b))
    }
}

/// `clock.x` for a sequence of times that mostly moves forward (a row's waves, a wave's
/// tokens), behind `Fn` closures: the hint lives in a cell.
struct Hinted<'a> {
    clock: &'a SeClock,
    hint: Cell<[usize; 2]>,
}

impl<'a> Hinted<'a> {
    fn new(clock: &'a SeClock) -> Self {
        Hinted {
            clock,
            hint: Cell::new([0; 2]),
        }
    }

    #[inline]
    fn x(&self, c: i64) -> f64 {
        let mut h = self.hint.get();
        let x = self.clock.x_hinted(c, &mut h);
        self.hint.set(h);
        x
    }
}

/// The waves of one slot (CU, SIMD, wave slot) in stream order, with their cycles.
#[derive(Debug, Clone, Default)]
pub struct SlotWaves {
    pub key: (u16, u8, u8),
    pub waves: Vec<u32>,
    pub cycles: Vec<(i64, i64)>,
}

/// An SE's waves grouped by slot, slots in key order: what its rows are made of before x is
/// known. Made as soon as the SE is decoded, so its 48-byte wave records can go then.
#[derive(Debug, Clone, Default)]
pub struct SeWaves {
    pub count: usize,
    pub slots: Vec<SlotWaves>,
}

impl SeWaves {
    /// One counting pass, each slot's lists allocated at their exact size.
    pub fn group(waves: &[traces::sqtt::Wave]) -> SeWaves {
        let key = |w: &traces::sqtt::Wave| (w.cu, w.simd, w.wave);
        // The distinct slots (a few hundred per SE) and a dense id per wave.
        let mut keys: Vec<(u16, u8, u8)> = Vec::new();
        let mut ids: HashMap<(u16, u8, u8), u32> = HashMap::new();
        let mut last: Option<((u16, u8, u8), u32)> = None;
        let mut wave_id: Vec<u32> = Vec::with_capacity(waves.len());
        let mut counts: Vec<usize> = Vec::new();
        for w in waves {
            let k = key(w);
            let id = match last {
                Some((lk, id)) if lk == k => id,
                _ => *ids.entry(k).or_insert_with(|| {
                    keys.push(k);
                    counts.push(0);
                    (keys.len() - 1) as u32
                }),
            };
            last = Some((k, id));
            counts[id as usize] += 1;
            wave_id.push(id);
        }
        let mut slots: Vec<SlotWaves> = keys
            .into_iter()
            .zip(&counts)
            .map(|(key, &n)| SlotWaves {
                key,
                waves: Vec::with_capacity(n),
                cycles: Vec::with_capacity(n),
            })
            .collect();
        for ((wi, &id), w) in wave_id.iter().enumerate().zip(waves) {
            let s = &mut slots[id as usize];
            s.waves.push(wi as u32);
            s.cycles.push((w.start, w.end));
        }
        slots.sort_unstable_by_key(|s| s.key);
        SeWaves {
            count: waves.len(),
            slots,
        }
    }
}

impl SqttRows {
    /// The rows of `k`: an SE's waves from `grouped` when given (its wave records already
    /// gone), else from its analysis; `clocks` and `traced` ([`SqttRows::traced`]) by SE index
    /// (either may be shorter).
    pub fn build(
        k: &KernelSqtt,
        clocks: Vec<SeClock>,
        grouped: Vec<Option<SeWaves>>,
        mut traced: Vec<TracedWaves>,
    ) -> SqttRows {
        traced.resize_with(k.ses.len(), TracedWaves::default);
        let mut rows = Vec::new();
        let mut grouped = grouped.into_iter();
        for (si, se) in k.ses.iter().enumerate() {
            let g = grouped
                .next()
                .flatten()
                .unwrap_or_else(|| SeWaves::group(&se.analysis.waves));
            let cycles = SeClock::cycles();
            let clock = clocks.get(si).unwrap_or(&cycles);
            rows.push(Row {
                kind: RowKind::Se { se: si },
                waves: Vec::new(),
                cycles: Vec::new(),
                max_len: 0.0,
                summary: RowSummary::default(),
                wave_count: g.count,
                itraced: se.itrace,
            });
            let mut slots = g.slots.into_iter().peekable();
            while let Some(first) = slots.next() {
                // A CU's header, then the rows of its slots (which follow, in key order).
                let cu = first.key.0;
                let mut group = vec![first];
                while let Some(next) = slots.next_if(|s| s.key.0 == cu) {
                    group.push(next);
                }
                rows.push(Row {
                    kind: RowKind::Cu { se: si, cu },
                    waves: Vec::new(),
                    cycles: Vec::new(),
                    max_len: 0.0,
                    summary: RowSummary::default(),
                    wave_count: group.iter().map(|g| g.waves.len()).sum(),
                    itraced: se.itrace,
                });
                for slot in group {
                    rows.push(wave_row(clock, &traced[si], si, slot));
                }
            }
        }
        let mut clocks = clocks;
        clocks.resize_with(k.ses.len(), SeClock::cycles);
        SqttRows {
            rows,
            clocks,
            traced,
        }
    }

    /// The position in `traced[se]` of SE index `se`'s wave `w` (`None`: it has no tokens).
    pub fn wave_index(&self, se: usize, w: u32) -> Option<usize> {
        self.traced.get(se)?.index(w)
    }

    /// The clock of SE index `se`.
    pub fn clock(&self, se: usize) -> SeClock {
        self.clocks.get(se).cloned().unwrap_or_else(SeClock::cycles)
    }

    /// Indices of the rows shown when the headers in `collapsed` are folded.
    pub fn visible(&self, collapsed: &BTreeSet<RowKind>) -> Vec<usize> {
        let mut out = Vec::new();
        let mut hide_se = None;
        let mut hide_cu = None;
        for (i, r) in self.rows.iter().enumerate() {
            match r.kind {
                RowKind::Se { se } => {
                    hide_cu = None;
                    hide_se = collapsed.contains(&r.kind).then_some(se);
                    out.push(i);
                }
                RowKind::Cu { se, cu } => {
                    if hide_se == Some(se) {
                        continue;
                    }
                    hide_cu = collapsed.contains(&r.kind).then_some((se, cu));
                    out.push(i);
                }
                RowKind::Wave { se, cu, .. } => {
                    if hide_se == Some(se) || hide_cu == Some((se, cu)) {
                        continue;
                    }
                    out.push(i);
                }
            }
        }
        out
    }

    /// The x range covered by all waves (`None` without waves): as `KernelSqtt::x_range`
    /// over the x the rows draw.
    pub fn x_range(&self) -> Option<(f64, f64)> {
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for r in &self.rows {
            let RowKind::Wave { se, .. } = r.kind else {
                continue;
            };
            let clock = self.clocks.get(se);
            let (Some(clock), Some(&(a, _))) = (clock, r.cycles.first()) else {
                continue;
            };
            // Starts are sorted; the latest end is the summary's.
            lo = lo.min(clock.x(a));
            if let Some(e) = r.summary.max_end() {
                hi = hi.max(e);
            }
        }
        (lo <= hi).then_some((lo, hi))
    }

    /// Where wave `w` of SE index `se` is: (row, position in it).
    pub fn find(&self, se: usize, w: u32) -> Option<(usize, usize)> {
        self.rows
            .iter()
            .enumerate()
            .find_map(|(ri, r)| match r.kind {
                RowKind::Wave { se: s, .. } if s == se => {
                    r.waves.iter().position(|&x| x == w).map(|p| (ri, p))
                }
                _ => None,
            })
    }
}

/// The row of one wave slot: its waves sorted by start x (they come nearly so, in WAVESTART
/// order; stable, so equal starts keep stream order) and the level-of-detail summary.
fn wave_row(clock: &SeClock, traced: &TracedWaves, si: usize, slot: SlotWaves) -> Row {
    let SlotWaves {
        key: (cu, simd, slot),
        mut waves,
        mut cycles,
    } = slot;
    let h = Hinted::new(clock);
    let mut starts: Vec<f64> = cycles.iter().map(|c| h.x(c.0)).collect();
    if !starts.is_sorted_by(|a, b| a.total_cmp(b).is_le()) {
        let mut order: Vec<u32> = (0..waves.len() as u32).collect();
        order.sort_by(|&a, &b| starts[a as usize].total_cmp(&starts[b as usize]));
        waves = order.iter().map(|&i| waves[i as usize]).collect();
        cycles = order.iter().map(|&i| cycles[i as usize]).collect();
        starts = order.iter().map(|&i| starts[i as usize]).collect();
    }
    // The starts' x are made (a clock conversion is most of a row's cost): only the ends'.
    let h = Hinted::new(clock);
    let summary = RowSummary::build(cycles.len(), |i| starts[i], |i| h.x(cycles[i].1));
    let max_len = summary.max_len();
    let itraced = !traced.is_empty() && waves.iter().any(|&w| traced.index(w).is_some());
    Row {
        kind: RowKind::Wave {
            se: si,
            cu,
            simd,
            slot,
        },
        wave_count: waves.len(),
        waves,
        cycles,
        max_len,
        summary,
        itraced,
    }
}

/// Colour class of an instruction token (tinygrad VIZ's palette, by op category).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cat {
    Valu,
    Salu,
    Smem,
    Store,
    Vmem,
    Lds,
    Immediate,
    Barrier,
    Jump,
    JumpNo,
    Message,
    Other,
}

pub fn token_cat(t: &InstToken) -> Cat {
    match t.kind {
        TokenKind::ValuInst => Cat::Valu,
        TokenKind::Immediate | TokenKind::ImmediateMask => Cat::Immediate,
        TokenKind::Inst => match t.op.name() {
            Some(OpName::Named(n)) => name_cat(n),
            Some(OpName::Other(c, _)) => name_cat(c),
            _ => Cat::Other,
        },
    }
}

fn name_cat(n: &str) -> Cat {
    let n = n.strip_prefix("OTHER_").unwrap_or(n);
    if n.starts_with("VALU") {
        Cat::Valu
    } else if n.starts_with("SALU") {
        Cat::Salu
    } else if n.starts_with("SMEM") || n.starts_with("SGMEM_RD") || n.starts_with("FLAT_RD") {
        Cat::Smem
    } else if n.contains("WR") || n.contains("STORE") {
        Cat::Store
    } else if n.starts_with("LDS") {
        Cat::Lds
    } else if n.contains("VMEM") || n.contains("SGMEM") || n.contains("FLAT") {
        Cat::Vmem
    } else if n.starts_with("BARRIER") {
        Cat::Barrier
    } else if n == "JUMP" {
        Cat::Jump
    } else if n == "JUMP_NO" {
        Cat::JumpNo
    } else if n.starts_with("MESSAGE") {
        Cat::Message
    } else {
        Cat::Other
    }
}

/// What one frame of the SQTT view draws, in screen coordinates.
#[derive(Debug, Default)]
pub struct Frame {
    /// (visible row index, y top) of each row on screen.
    pub rows: Vec<(usize, f32)>,
    /// Wave bars: (row, se, wave, x0, x1); `wave` is `None` for merged blocks.
    pub waves: Vec<(usize, usize, Option<u32>, f32, f32, usize)>,
    /// Token segments: (y top, x0, x1, category or None for a merged block).
    pub tokens: Vec<(f32, f32, f32, Option<Cat>)>,
}

/// Tokens are drawn inside waves at least this wide (px).
const TOKEN_MIN_WAVE_PX: f32 = 3.0;

/// Lays out the rows `visible[first..]` from `y0` down to `y1`, for the time window `view`
/// over `[left, left + width)`.
#[allow(clippy::too_many_arguments)]
pub fn layout_frame(
    rows: &SqttRows,
    visible: &[usize],
    scroll_y: f32,
    y0: f32,
    y1: f32,
    view: &TimeView,
    left: f32,
    width: f32,
    frame: &mut Frame,
) {
    let mut y = y0 - scroll_y;
    let mut items = Vec::new();
    let mut tok_items = Vec::new();
    for &ri in visible {
        let Some(row) = rows.rows.get(ri) else {
            continue;
        };
        let h = row.height();
        if y + h < y0 {
            y += h;
            continue;
        }
        if y > y1 {
            break;
        }
        frame.rows.push((ri, y));
        if let RowKind::Wave { se, .. } = row.kind {
            let (Some(traced), Some(clock)) = (rows.traced.get(se), rows.clocks.get(se)) else {
                y += h;
                continue;
            };
            let hx = Hinted::new(clock);
            let cyc = |i: usize| row.cycles.get(i).copied().unwrap_or((0, 0));
            items.clear();
            layout_row(
                row.waves.len(),
                |i| hx.x(cyc(i).0),
                |i| hx.x(cyc(i).1),
                row.max_len,
                Some(&row.summary),
                view,
                left,
                width,
                &mut items,
            );
            for it in &items {
                match *it {
                    Item::Span { index, x0, x1 } => {
                        let w = row.waves.get(index).copied();
                        frame.waves.push((ri, se, w, x0, x1, 1));
                        if let Some(w) = w.and_then(|w| rows.wave_index(se, w)) {
                            if row.itraced && x1 - x0 >= TOKEN_MIN_WAVE_PX {
                                layout_tokens(
                                    traced,
                                    clock,
                                    w,
                                    hx.x(cyc(index).1),
                                    y,
                                    view,
                                    left,
                                    width,
                                    &mut tok_items,
                                    frame,
                                );
                            }
                        }
                    }
                    Item::Block { count, x0, x1, .. } => {
                        frame.waves.push((ri, se, None, x0, x1, count));
                    }
                }
            }
        }
        y += h;
    }
}

#[allow(clippy::too_many_arguments)]
fn layout_tokens(
    traced: &TracedWaves,
    clock: &SeClock,
    w: usize,
    wave_end: f64,
    y: f32,
    view: &TimeView,
    left: f32,
    width: f32,
    items: &mut Vec<Item>,
    frame: &mut Frame,
) {
    let toks = traced.times(w);
    if toks.is_empty() {
        return;
    }
    let hx = Hinted::new(clock);
    let tx = |i: usize| toks.get(i).map_or(wave_end, |&t| hx.x(t));
    // Each token spans from its issue to the next one's issue (the wave's end for the last).
    let end = |i: usize| {
        if i + 1 < toks.len() {
            tx(i + 1)
        } else {
            wave_end
        }
    };
    let max_len = f64::INFINITY;
    items.clear();
    layout_row(
        toks.len(),
        tx,
        end,
        max_len.min(wave_end - tx(0)),
        None,
        view,
        left,
        width,
        items,
    );
    for it in items.iter() {
        match *it {
            Item::Span { index, x0, x1 } => {
                let cat = traced.cat(w, index);
                frame.tokens.push((y, x0, x1, cat.or(Some(Cat::Other))));
            }
            Item::Block { x0, x1, .. } => frame.tokens.push((y, x0, x1, None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{SeTrace, XUnit};
    use traces::sqtt::{BlobAnalysis, Wave};

    fn wave(cu: u16, simd: u8, slot: u8, start: i64) -> Wave {
        Wave {
            cu,
            simd,
            wave: slot,
            sa: None,
            tag: traces::sqtt::WaveTag::None,
            start,
            end: start + 50,
            insts: 0,
            start_offset: 0,
            end_delta: 0,
        }
    }

    /// Rows by their definition: per SE a header, per CU (ascending) a header with its wave
    /// count, per (CU, SIMD, slot) ascending a row of its waves stably sorted by start.
    fn by_definition(k: &KernelSqtt) -> Vec<(RowKind, Vec<u32>, usize)> {
        let mut out = Vec::new();
        for (si, se) in k.ses.iter().enumerate() {
            out.push((RowKind::Se { se: si }, vec![], se.analysis.waves.len()));
            let mut keys: Vec<(u16, u8, u8)> = se
                .analysis
                .waves
                .iter()
                .map(|w| (w.cu, w.simd, w.wave))
                .collect();
            keys.sort();
            keys.dedup();
            let mut cur = None;
            for (cu, simd, slot) in keys {
                if cur != Some(cu) {
                    cur = Some(cu);
                    let n = se.analysis.waves.iter().filter(|w| w.cu == cu).count();
                    out.push((RowKind::Cu { se: si, cu }, vec![], n));
                }
                let mut ws: Vec<u32> = (0..se.analysis.waves.len() as u32)
                    .filter(|&i| {
                        let w = &se.analysis.waves[i as usize];
                        (w.cu, w.simd, w.wave) == (cu, simd, slot)
                    })
                    .collect();
                ws.sort_by_key(|&i| se.analysis.waves[i as usize].start);
                let n = ws.len();
                out.push((
                    RowKind::Wave {
                        se: si,
                        cu,
                        simd,
                        slot,
                    },
                    ws,
                    n,
                ));
            }
        }
        out
    }

    #[test]
    fn rows_group_waves_by_slot_sorted_by_start() {
        // Slots interleaved and out of key order; one slot's waves out of start order, two
        // with equal starts (stream order kept); an SE without waves.
        let mut a = BlobAnalysis::default();
        let mut r = 7u64;
        for i in 0..3000i64 {
            r = r
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let cu = [9u16, 2, 5][(r >> 40) as usize % 3];
            let simd = ((r >> 20) % 4) as u8;
            let slot = ((r >> 30) % 3) as u8;
            a.waves.push(wave(cu, simd, slot, i * 10));
        }
        a.waves.push(wave(5, 1, 1, 40));
        a.waves.push(wave(5, 1, 1, 40));
        a.waves.push(wave(5, 1, 1, 5));
        let k = KernelSqtt {
            kernel: 0,
            name: "k".into(),
            unit: XUnit::Cycles,
            ses: vec![
                SeTrace::new(0, false, a, &|c| c as f64),
                SeTrace::new(1, false, BlobAnalysis::default(), &|c| c as f64),
            ],
            kernel_len: None,
            disasm: Default::default(),
            se_layout: None,
        };
        let rows = SqttRows::build(&k, vec![SeClock::cycles(); 2], Vec::new(), Vec::new());
        let want = by_definition(&k);
        let got: Vec<_> = rows
            .rows
            .iter()
            .map(|r| (r.kind, r.waves.clone(), r.wave_count))
            .collect();
        assert_eq!(got, want);
        for r in &rows.rows {
            let se = &k.ses[match r.kind {
                RowKind::Se { se } | RowKind::Cu { se, .. } | RowKind::Wave { se, .. } => se,
            }];
            let c: Vec<(i64, i64)> = r
                .waves
                .iter()
                .map(|&w| {
                    let w = &se.analysis.waves[w as usize];
                    (w.start, w.end)
                })
                .collect();
            assert_eq!(r.cycles, c);
            // x as the analysis computes it (here, cycles).
            for (i, &w) in r.waves.iter().enumerate() {
                assert_eq!(r.x(&rows.clocks[0], i), se.wave_x[w as usize]);
            }
        }
        // The rows of an SE grouped as it was decoded (its wave records gone) are the same.
        let grouped = vec![Some(SeWaves::group(&k.ses[0].analysis.waves)), None];
        let mut k2 = k;
        k2.ses[0].analysis.waves = Vec::new();
        let again = SqttRows::build(&k2, vec![SeClock::cycles(); 2], grouped, Vec::new());
        let got2: Vec<_> = again
            .rows
            .iter()
            .map(|r| (r.kind, r.waves.clone(), r.cycles.clone(), r.wave_count))
            .collect();
        let got1: Vec<_> = rows
            .rows
            .iter()
            .map(|r| (r.kind, r.waves.clone(), r.cycles.clone(), r.wave_count))
            .collect();
        assert_eq!(got1, got2);
    }
}
