//! Level of detail for rows of time spans: spans narrower than a pixel are merged into blocks,
//! and only the visible part of a row is visited (binary search on sorted starts), so the cost
//! of a frame depends on the pixels drawn, not on the number of spans.

use super::view::TimeView;

/// What to draw for a row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Item {
    /// One span (its index in the row) wide enough to stand alone.
    Span { index: usize, x0: f32, x1: f32 },
    /// `count` spans starting at `first`, merged because each is under a pixel.
    Block {
        first: usize,
        count: usize,
        x0: f32,
        x1: f32,
    },
}

/// Spans narrower than this (px) are merged.
pub const MIN_PX: f32 = 1.0;

/// Spans per [`RowSummary`] chunk.
const CHUNK: usize = 64;

/// What a row's merge loop needs to take whole runs of spans at once, so a zoomed-out frame
/// costs per pixel, not per span: per [`CHUNK`] spans, the longest span, the largest gap
/// before a span (its start after the latest end of every span before it) and the latest end.
/// Built once per row (24 bytes per 64 spans).
#[derive(Debug, Clone, Default)]
pub struct RowSummary {
    chunks: Vec<Chunk>,
}

#[derive(Debug, Clone, Copy)]
struct Chunk {
    max_len: f64,
    max_gap: f64,
    max_end: f64,
}

impl RowSummary {
    /// The summary of `n` spans given by `start`/`end` (starts sorted ascending).
    pub fn build(n: usize, start: impl Fn(usize) -> f64, end: impl Fn(usize) -> f64) -> Self {
        let mut chunks = Vec::with_capacity(n.div_ceil(CHUNK));
        let mut latest = f64::NEG_INFINITY;
        for c in 0..n.div_ceil(CHUNK) {
            let mut ch = Chunk {
                max_len: 0.0,
                max_gap: f64::NEG_INFINITY,
                max_end: f64::NEG_INFINITY,
            };
            for i in c * CHUNK..((c + 1) * CHUNK).min(n) {
                let (s, e) = (start(i), end(i));
                ch.max_len = ch.max_len.max(e - s);
                // The first span of the row has nothing before it to join.
                ch.max_gap = ch
                    .max_gap
                    .max(if i == 0 { f64::INFINITY } else { s - latest });
                latest = latest.max(e);
                ch.max_end = latest;
            }
            chunks.push(ch);
        }
        RowSummary { chunks }
    }

    /// The longest span (0 for none).
    pub fn max_len(&self) -> f64 {
        self.chunks.iter().map(|c| c.max_len).fold(0.0, f64::max)
    }

    /// The latest end of every span (`None` for none).
    pub fn max_end(&self) -> Option<f64> {
        self.chunks.last().map(|c| c.max_end)
    }
}

/// Lays out one row: `start(i)`/`end(i)` give span `i`'s times, starts sorted ascending;
/// `max_len` is the longest span of the row (for finding spans that began before the view);
/// `summary`, when given, is the row's [`RowSummary`] (blocks then jump over whole chunks).
#[allow(clippy::too_many_arguments)]
pub fn layout_row(
    n: usize,
    start: impl Fn(usize) -> f64,
    end: impl Fn(usize) -> f64,
    max_len: f64,
    summary: Option<&RowSummary>,
    view: &TimeView,
    left: f32,
    width: f32,
    out: &mut Vec<Item>,
) {
    let right = left + width;
    // A pixel in time: spans shorter than it are merged, gaps shorter than it joined.
    let px_t = view.len() / width.max(1.0) as f64 * MIN_PX as f64;
    let mut i = partition(0, n, |k| start(k) < view.start - max_len);
    while i < n {
        let s0 = start(i);
        if s0 > view.end {
            break;
        }
        let x0 = view.to_px(s0, left, width);
        let x1 = view.to_px(end(i), left, width);
        if x1 < left {
            i += 1;
            continue;
        }
        if x1 - x0 >= MIN_PX {
            out.push(Item::Span { index: i, x0, x1 });
            i += 1;
            continue;
        }
        // Merge what starts within a pixel of the block's end, jumping by binary search.
        let mut block_end = x1.max(x0 + MIN_PX);
        let mut j = i + 1;
        loop {
            if block_end > right {
                j = partition(j, n, |k| start(k) <= view.end);
                break;
            }
            // The rest of j's chunk joins at once when all of it is sub-pixel spans, each
            // starting within a pixel of the latest end before it.
            if let Some(c) = summary.and_then(|s| s.chunks.get(j / CHUNK)) {
                if j < n && c.max_len < px_t && c.max_gap < px_t {
                    block_end = block_end.max(view.to_px(c.max_end, left, width));
                    j = ((j / CHUNK + 1) * CHUNK).min(n);
                    continue;
                }
            }
            let t = view.from_px(block_end + MIN_PX, left, width);
            let k = gallop(j, n, |m| start(m) < t);
            if k == j {
                break;
            }
            let last = k - 1;
            let lx0 = view.to_px(start(last), left, width);
            let lx1 = view.to_px(end(last), left, width);
            if lx1 - lx0 >= MIN_PX {
                // The last one is wide: keep it as a span of its own.
                j = last;
                if last > i + 1 || lx0 > block_end {
                    block_end = block_end.max(lx0);
                }
                break;
            }
            block_end = block_end.max(lx1);
            j = k;
        }
        let count = j - i;
        out.push(Item::Block {
            first: i,
            count,
            x0,
            x1: block_end.min(right + 1.0),
        });
        i = j.max(i + 1);
    }
}

/// [`partition`] for an answer usually near `lo` (the next spans of a block): steps of 1, 2,
/// 4, ... from `lo`, then a binary search in the last step, so a block of a few spans costs a
/// few reads near each other instead of a search over the whole row.
fn gallop(lo: usize, hi: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut from, mut step) = (lo, 1);
    loop {
        let probe = lo + step - 1;
        if probe >= hi {
            return partition(from, hi, pred);
        }
        if !pred(probe) {
            return partition(from, probe, pred);
        }
        from = probe + 1;
        step *= 2;
    }
}

/// First index in `[lo, hi)` where `pred` is false (pred true then false over the range).
fn partition(mut lo: usize, mut hi: usize, pred: impl Fn(usize) -> bool) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(spans: &[(f64, f64)], view: TimeView, width: f32) -> Vec<Item> {
        let max_len = spans.iter().map(|s| s.1 - s.0).fold(0.0, f64::max);
        let mut out = Vec::new();
        layout_row(
            spans.len(),
            |i| spans[i].0,
            |i| spans[i].1,
            max_len,
            None,
            &view,
            0.0,
            width,
            &mut out,
        );
        out
    }

    #[test]
    fn wide_spans_stay_and_tiny_ones_merge() {
        // 1000 spans of 0.1 µs each, back to back, then one 50 µs span.
        let mut s: Vec<(f64, f64)> = (0..1000)
            .map(|i| (i as f64 * 0.1, i as f64 * 0.1 + 0.1))
            .collect();
        s.push((100.0, 150.0));
        let items = run(&s, TimeView::new(0.0, 200.0), 200.0);
        let covered: usize = items
            .iter()
            .map(|it| match it {
                Item::Span { .. } => 1,
                Item::Block { count, .. } => *count,
            })
            .sum();
        assert_eq!(covered, 1001, "{items:?}");
        assert!(items.len() <= 3, "{items:?}");
        assert!(matches!(items.last(), Some(Item::Span { index: 1000, .. })));
    }

    /// `spans` over 1000 px, laid out with or without their summary.
    fn items(spans: &[(f64, f64)], view: TimeView, summary: bool) -> Vec<Item> {
        let max_len = spans.iter().map(|s| s.1 - s.0).fold(0.0, f64::max);
        let sum = RowSummary::build(spans.len(), |i| spans[i].0, |i| spans[i].1);
        let mut out = Vec::new();
        layout_row(
            spans.len(),
            |i| spans[i].0,
            |i| spans[i].1,
            max_len,
            summary.then_some(&sum),
            &view,
            0.0,
            1000.0,
            &mut out,
        );
        out
    }

    #[test]
    fn the_summary_merges_what_the_span_walk_merges() {
        // 200k tiny spans back to back in runs, with gaps of a few pixels between runs, and a
        // few wide spans: zoomed out, zoomed to a part, zoomed to single spans.
        let mut s = Vec::new();
        let mut t = 0.0;
        for i in 0..200_000usize {
            let len = if i % 50_000 == 7 { 3_000.0 } else { 0.9 };
            s.push((t, t + len));
            t += len + if i % 20_000 == 19_999 { 2_000.0 } else { 0.05 };
        }
        for view in [
            TimeView::new(0.0, t),
            TimeView::new(t * 0.3, t * 0.6),
            TimeView::new(t * 0.5, t * 0.5 + 200.0),
        ] {
            let (a, b) = (items(&s, view, false), items(&s, view, true));
            let cover = |v: &[Item]| -> usize {
                v.iter()
                    .map(|it| match it {
                        Item::Span { .. } => 1,
                        Item::Block { count, .. } => *count,
                    })
                    .sum()
            };
            assert_eq!(cover(&a), cover(&b), "{view:?}");
            assert_eq!(a.len(), b.len(), "{view:?}: {a:?} vs {b:?}");
            for (x, y) in a.iter().zip(&b) {
                match (x, y) {
                    (Item::Span { index: i, .. }, Item::Span { index: j, .. }) => {
                        assert_eq!(i, j)
                    }
                    (
                        Item::Block {
                            first: f,
                            count: c,
                            x0,
                            x1,
                        },
                        Item::Block {
                            first: g,
                            count: d,
                            x0: y0,
                            x1: y1,
                        },
                    ) => {
                        assert_eq!((f, c), (g, d), "{view:?}");
                        assert!((x0 - y0).abs() < 1.0 && (x1 - y1).abs() < 1.0, "{view:?}");
                    }
                    _ => panic!("{view:?}: {x:?} vs {y:?}"),
                }
            }
        }
        // The zoomed-out row is a handful of blocks, not one per pixel.
        assert!(items(&s, TimeView::new(0.0, t), true).len() < 40);
    }

    #[test]
    fn only_visible_spans_are_visited() {
        let s: Vec<(f64, f64)> = (0..1_000_000).map(|i| (i as f64, i as f64 + 0.5)).collect();
        let items = run(&s, TimeView::new(500_000.0, 500_010.0), 1000.0);
        assert_eq!(items.len(), 11);
        assert!(matches!(items[0], Item::Span { index: 500_000, .. }));
    }

    #[test]
    fn gallop_finds_what_partition_finds() {
        let v: Vec<usize> = (0..1000).map(|i| i / 3).collect();
        for lo in [0, 1, 5, 500, 999, 1000] {
            for t in [0, 1, 2, 7, 170, 333, 334, 400] {
                assert_eq!(
                    gallop(lo, v.len(), |m| v[m] < t),
                    partition(lo, v.len(), |m| v[m] < t),
                    "lo {lo} t {t}"
                );
            }
        }
    }

    #[test]
    fn a_span_that_began_before_the_view_is_drawn() {
        let s = vec![(0.0, 100.0), (200.0, 201.0)];
        let items = run(&s, TimeView::new(50.0, 60.0), 100.0);
        assert!(matches!(items[0], Item::Span { index: 0, .. }));
    }
}
