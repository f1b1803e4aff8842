//! Rows of a kernel's SQTT view: SE -> CU/WGP -> SIMD/wave-slot rows, each holding its waves
//! sorted by start, and the per-frame layout of the visible rows with level of detail.

use std::collections::{BTreeSet, HashMap};

use traces::sqtt::{InstToken, OpName, TokenKind};

use super::lod::{layout_row, Item, RowSummary};
use super::view::TimeView;
use crate::data::KernelSqtt;

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
    /// Wave indices (into the SE's waves) sorted by start; empty for headers.
    pub waves: Vec<u32>,
    /// Their x (start, end), in the same order: a frame reads a row's times in sequence, not
    /// scattered over the SE's columns (16 bytes per wave).
    pub x: Vec<(f64, f64)>,
    pub max_len: f64,
    /// The waves' level-of-detail summary (empty for headers).
    pub summary: RowSummary,
    /// Waves below this header (headers) or in this row.
    pub wave_count: usize,
    pub itraced: bool,
}

/// Every row of a kernel, in display order.
#[derive(Debug, Clone, Default)]
pub struct SqttRows {
    pub rows: Vec<Row>,
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
}

impl SqttRows {
    pub fn build(k: &KernelSqtt) -> SqttRows {
        let mut rows = Vec::new();
        for (si, se) in k.ses.iter().enumerate() {
            rows.push(Row {
                kind: RowKind::Se { se: si },
                waves: Vec::new(),
                x: Vec::new(),
                max_len: 0.0,
                summary: RowSummary::default(),
                wave_count: se.analysis.waves.len(),
                itraced: se.itrace,
            });
            let mut slots = group_by_slot(se).into_iter().peekable();
            while let Some(((cu, simd, slot), waves)) = slots.next() {
                // A CU's header, then the rows of its slots (which follow, in key order).
                let mut group = vec![((cu, simd, slot), waves)];
                while let Some(next) = slots.next_if(|s| s.0 .0 == cu) {
                    group.push(next);
                }
                rows.push(Row {
                    kind: RowKind::Cu { se: si, cu },
                    waves: Vec::new(),
                    x: Vec::new(),
                    max_len: 0.0,
                    summary: RowSummary::default(),
                    wave_count: group.iter().map(|g| g.1.len()).sum(),
                    itraced: se.itrace,
                });
                for (key, waves) in group {
                    rows.push(wave_row(se, si, key, waves));
                }
            }
        }
        SqttRows { rows }
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
}

/// The SE's waves by slot (CU, SIMD, wave slot), slots in key order, each slot's waves in
/// stream order: one counting pass, each row's list allocated at its exact size.
fn group_by_slot(se: &crate::data::SeTrace) -> Vec<((u16, u8, u8), Vec<u32>)> {
    let waves = &se.analysis.waves;
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
    let mut lists: Vec<Vec<u32>> = counts.iter().map(|&n| Vec::with_capacity(n)).collect();
    for (wi, &id) in wave_id.iter().enumerate() {
        lists[id as usize].push(wi as u32);
    }
    drop(wave_id);
    let mut out: Vec<_> = keys.into_iter().zip(lists).collect();
    out.sort_unstable_by_key(|e| e.0);
    out
}

/// The row of one wave slot: its waves sorted by start (they come nearly so, in WAVESTART
/// order), their x in that order and the level-of-detail summary.
fn wave_row(
    se: &crate::data::SeTrace,
    si: usize,
    (cu, simd, slot): (u16, u8, u8),
    mut waves: Vec<u32>,
) -> Row {
    let x = |w: &u32| se.wave_x.get(*w as usize).copied().unwrap_or((0.0, 0.0));
    if !waves.is_sorted_by(|a, b| x(a).0.total_cmp(&x(b).0).is_le()) {
        // Stable: equal starts keep stream order.
        waves.sort_by(|a, b| x(a).0.total_cmp(&x(b).0));
    }
    let xs: Vec<(f64, f64)> = waves.iter().map(x).collect();
    let max_len = xs.iter().map(|w| w.1 - w.0).fold(0.0, f64::max);
    let summary = RowSummary::build(xs.len(), |i| xs[i].0, |i| xs[i].1);
    let itraced = waves
        .iter()
        .any(|&w| se.token_start.get(w as usize + 1) > se.token_start.get(w as usize));
    Row {
        kind: RowKind::Wave {
            se: si,
            cu,
            simd,
            slot,
        },
        wave_count: waves.len(),
        waves,
        x: xs,
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
        TokenKind::Inst => match t.op {
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
    k: &KernelSqtt,
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
            let Some(st) = k.ses.get(se) else {
                y += h;
                continue;
            };
            let wx = |i: usize| row.x.get(i).copied().unwrap_or((0.0, 0.0));
            items.clear();
            layout_row(
                row.waves.len(),
                |i| wx(i).0,
                |i| wx(i).1,
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
                        if let Some(w) = w {
                            if row.itraced && x1 - x0 >= TOKEN_MIN_WAVE_PX {
                                layout_tokens(
                                    st,
                                    w as usize,
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
    st: &crate::data::SeTrace,
    w: usize,
    y: f32,
    view: &TimeView,
    left: f32,
    width: f32,
    items: &mut Vec<Item>,
    frame: &mut Frame,
) {
    let toks = st.wave_tokens(w);
    if toks.is_empty() {
        return;
    }
    let wave_end = st.wave_x.get(w).map_or(0.0, |x| x.1);
    let tx = |i: usize| {
        toks.get(i)
            .and_then(|&t| st.token_x.get(t as usize))
            .copied()
            .unwrap_or(wave_end)
    };
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
                let cat = toks
                    .get(index)
                    .and_then(|&t| st.analysis.tokens.get(t as usize))
                    .map(token_cat);
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
        let rows = SqttRows::build(&k);
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
            let x: Vec<(f64, f64)> = r.waves.iter().map(|&w| se.wave_x[w as usize]).collect();
            assert_eq!(r.x, x);
        }
    }
}
