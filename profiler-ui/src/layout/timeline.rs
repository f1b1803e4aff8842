//! The global timeline's tracks, built once per profile: one track per device/queue (kernels,
//! copies, CPU ranges) with nesting levels, point events, and counter graphs.

use std::collections::HashMap;

use traces::model::{Profile, Time};

use crate::layout::view::{Break, TimeAxis};

/// An idle gap is collapsed when it is longer than this many times the GPU work on either side
/// of it (see docs/kernel-analysis.md, "Collapsed idle time").
pub const IDLE_RATIO: f64 = 5.0;
/// ... and longer than this (µs): shorter gaps cost little width at true scale.
pub const IDLE_MIN_US: f64 = 2.0;
/// All collapsed gaps together take about this share of the axis.
pub const BREAK_SHARE: f64 = 0.35;

/// What a span stands for in the profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Range(u32),
    Kernel(u32),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    /// µs since the model's origin.
    pub start: f64,
    pub end: f64,
    /// Index into [`TimelineModel::names`].
    pub name: u32,
    pub target: Target,
}

/// One nesting level of a track; spans sorted by start.
#[derive(Debug, Clone, Default)]
pub struct Level {
    pub spans: Vec<Span>,
    pub max_len: f64,
}

#[derive(Debug, Clone, Default)]
pub struct Track {
    pub name: String,
    pub levels: Vec<Level>,
    /// Point events: (µs, name).
    pub points: Vec<(f64, u32)>,
}

#[derive(Debug, Clone)]
pub struct CounterTrack {
    pub name: String,
    pub unit: String,
    pub points: Vec<(f64, f64)>,
    pub min: f64,
    pub max: f64,
}

#[derive(Debug, Clone, Default)]
pub struct TimelineModel {
    pub tracks: Vec<Track>,
    pub counters: Vec<CounterTrack>,
    pub names: Vec<String>,
    /// Common-clock time of x = 0.
    pub origin: Time,
    /// x range of everything.
    pub start: f64,
    pub end: f64,
    /// Where each kernel is drawn: kernel index -> (track, level, span).
    pub kernel_pos: HashMap<u32, (usize, usize, usize)>,
    /// x range where the GPU worked: kernels and ranges on GPU devices (copies), if any.
    pub gpu_work: Option<(f64, f64)>,
    /// The time axis with long idle gaps between GPU work collapsed (the default view).
    pub idle_axis: TimeAxis,
}

fn us_since(t: Time, origin: Time) -> f64 {
    (t.0 - origin.0) as f64 / Time::PS_PER_US as f64
}

impl TimelineModel {
    pub fn build(p: &Profile) -> TimelineModel {
        let origin = p
            .ranges
            .iter()
            .map(|r| r.start)
            .chain(p.kernels.iter().map(|k| k.start))
            .chain(p.points.iter().map(|e| e.ts))
            .min()
            .unwrap_or_default();
        let mut m = TimelineModel {
            origin,
            ..Default::default()
        };
        let mut interned: HashMap<String, u32> = HashMap::new();
        let mut intern = |names: &mut Vec<String>, s: &str| -> u32 {
            let clean;
            let s = if s.contains('\x1b') {
                clean = strip_ansi(s);
                clean.as_str()
            } else {
                s
            };
            if let Some(&i) = interned.get(s) {
                return i;
            }
            names.push(s.to_string());
            let i = (names.len() - 1) as u32;
            interned.insert(s.to_string(), i);
            i
        };
        // Where the GPU worked (kernels, copies): the idle gaps between are collapsible.
        let mut work: Vec<(f64, f64)> = Vec::new();
        let kernel_of_range: HashMap<u32, u32> = p
            .kernels
            .iter()
            .enumerate()
            .filter_map(|(k, ke)| Some((ke.range?, k as u32)))
            .collect();
        // Host tracks (undeclared) first, then devices in declaration order, like tinygrad VIZ.
        let mut order: Vec<usize> = (0..p.devices.len()).collect();
        order.sort_by_key(|&d| (p.devices[d].declared, d));
        let mut track_of: HashMap<u32, usize> = HashMap::new();
        for d in order {
            track_of.insert(d as u32, m.tracks.len());
            m.tracks.push(Track {
                name: p.devices[d].name.clone(),
                ..Default::default()
            });
        }
        let mut track_for = |m: &mut TimelineModel, dev: u32| -> usize {
            *track_of.entry(dev).or_insert_with(|| {
                m.tracks.push(Track {
                    name: format!("device {dev}"),
                    ..Default::default()
                });
                m.tracks.len() - 1
            })
        };
        for (ri, r) in p.ranges.iter().enumerate() {
            let t = track_for(&mut m, r.device);
            let name = intern(&mut m.names, &r.name);
            let start = us_since(r.start, origin);
            let end = us_since(r.end.unwrap_or(r.start), origin).max(start);
            let target = match kernel_of_range.get(&(ri as u32)) {
                Some(&k) => Target::Kernel(k),
                None => Target::Range(ri as u32),
            };
            if matches!(target, Target::Kernel(_)) || p.props_device(r.device).is_some() {
                m.gpu_work = widen(m.gpu_work, start, end);
                work.push((start, end));
            }
            push_span(
                &mut m.tracks[t],
                r.depth as usize,
                Span {
                    start,
                    end,
                    name,
                    target,
                },
            );
        }
        for (ki, k) in p.kernels.iter().enumerate() {
            if k.range.is_some() {
                continue;
            }
            let t = track_for(&mut m, k.device);
            let name = intern(&mut m.names, &k.name);
            let start = us_since(k.start, origin);
            let end = us_since(k.end.unwrap_or(k.start), origin).max(start);
            let level = m.tracks[t].levels.len();
            m.gpu_work = widen(m.gpu_work, start, end);
            work.push((start, end));
            push_span(
                &mut m.tracks[t],
                level,
                Span {
                    start,
                    end,
                    name,
                    target: Target::Kernel(ki as u32),
                },
            );
        }
        for e in &p.points {
            let t = track_for(&mut m, e.device);
            let label = match (&e.kind, e.key.as_str()) {
                (_, Some(s)) => s.to_string(),
                (k, None) => format!("{k:?}"),
            };
            let name = intern(&mut m.names, &label);
            m.tracks[t].points.push((us_since(e.ts, origin), name));
        }
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for (ti, t) in m.tracks.iter_mut().enumerate() {
            for (li, l) in t.levels.iter_mut().enumerate() {
                l.spans.sort_by(|a, b| a.start.total_cmp(&b.start));
                l.max_len = l.spans.iter().map(|s| s.end - s.start).fold(0.0, f64::max);
                for (si, s) in l.spans.iter().enumerate() {
                    lo = lo.min(s.start);
                    hi = hi.max(s.end);
                    if let Target::Kernel(k) = s.target {
                        m.kernel_pos.insert(k, (ti, li, si));
                    }
                }
            }
            t.points.sort_by(|a, b| a.0.total_cmp(&b.0));
            for p in &t.points {
                lo = lo.min(p.0);
                hi = hi.max(p.0);
            }
        }
        m.tracks
            .retain(|t| !t.levels.is_empty() || !t.points.is_empty());
        // Track indices changed: recompute kernel positions.
        m.kernel_pos.clear();
        for (ti, t) in m.tracks.iter().enumerate() {
            for (li, l) in t.levels.iter().enumerate() {
                for (si, s) in l.spans.iter().enumerate() {
                    if let Target::Kernel(k) = s.target {
                        m.kernel_pos.insert(k, (ti, li, si));
                    }
                }
            }
        }
        for c in &p.counters {
            let points: Vec<(f64, f64)> = c
                .points
                .iter()
                .map(|&(t, v)| (us_since(t, origin), v))
                .collect();
            let min = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
            let max = points.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
            m.counters.push(CounterTrack {
                name: c.name.clone(),
                unit: c.unit.clone(),
                points,
                min: min.min(0.0),
                max,
            });
        }
        if lo > hi {
            (lo, hi) = (0.0, 1.0);
        }
        m.start = lo;
        m.end = hi;
        m.idle_axis = idle_axis(work, lo, hi);
        m
    }

    pub fn name(&self, i: u32) -> &str {
        self.names.get(i as usize).map_or("", String::as_str)
    }

    /// Kernel spans whose name contains `query` (case-insensitive): (kernel, start, name).
    pub fn search_kernels(&self, query: &str) -> Vec<(u32, f64, String)> {
        let q = query.to_lowercase();
        let mut out: Vec<(u32, f64, String)> = Vec::new();
        for (&k, &(t, l, s)) in &self.kernel_pos {
            let span = &self.tracks[t].levels[l].spans[s];
            let name = self.name(span.name);
            if name.to_lowercase().contains(&q) {
                out.push((k, span.start, name.to_string()));
            }
        }
        out.sort_by(|a, b| a.1.total_cmp(&b.1));
        out
    }

    pub fn kernel_span(&self, k: u32) -> Option<&Span> {
        let &(t, l, s) = self.kernel_pos.get(&k)?;
        self.tracks.get(t)?.levels.get(l)?.spans.get(s)
    }
}

/// Collapses the idle gaps between GPU work (and before the first and after the last, back to
/// the capture's ends) that are longer than [`IDLE_RATIO`] times the work item on either side
/// and than [`IDLE_MIN_US`]; work between collapsed gaps forms a stretch.
/// Together the gaps take [`BREAK_SHARE`] of the axis, each in proportion to
/// `(1 + log10(gap / shortest collapsed gap))^2` (a longer idle reads longer: a few µs between
/// two copies is a sliver, milliseconds between launches have room for their label; a 100 ms
/// one never swamps the work) and at most the longest stretch, so the stretches fill the width
/// whatever the host did in between.
pub fn idle_axis(mut work: Vec<(f64, f64)>, start: f64, end: f64) -> TimeAxis {
    if work.is_empty() {
        return TimeAxis::default();
    }
    work.sort_by(|a, b| a.0.total_cmp(&b.0));
    let long = |gap: f64, a: f64, b: f64| gap > IDLE_MIN_US && gap > IDLE_RATIO * a.max(b);
    // Stretches: work separated by gaps too short to collapse.
    let mut stretches: Vec<(f64, f64)> = Vec::new();
    let mut gaps: Vec<(f64, f64)> = Vec::new();
    let (mut cs, mut ce) = work[0];
    // The work item that ends last so far: the gap's left neighbour (not the whole stretch,
    // which would swallow every gap shorter than itself).
    let mut prev_len = work[0].1 - work[0].0;
    for &(a, b) in &work[1..] {
        if long(a - ce, prev_len, b - a) {
            stretches.push((cs, ce));
            gaps.push((ce, a));
            (cs, ce) = (a, b);
            prev_len = b - a;
        } else if b >= ce {
            ce = b;
            prev_len = b - a;
        }
    }
    stretches.push((cs, ce));
    let first = stretches[0];
    let last = *stretches.last().unwrap_or(&first);
    if long(first.0 - start, first.1 - first.0, 0.0) {
        gaps.push((start, first.0));
    }
    if long(end - last.1, last.1 - last.0, 0.0) {
        gaps.push((last.1, end));
    }
    if gaps.is_empty() {
        return TimeAxis::default();
    }
    // Instant-only work still gets a visible width.
    let work_len: f64 = stretches.iter().map(|s| s.1 - s.0).sum::<f64>().max(1e-3);
    let shortest = gaps.iter().map(|g| g.1 - g.0).fold(f64::INFINITY, f64::min);
    let weight = |g: &(f64, f64)| (1.0 + ((g.1 - g.0) / shortest).log10()).powi(2);
    let weights: f64 = gaps.iter().map(weight).sum();
    let unit = BREAK_SHARE / (1.0 - BREAK_SHARE) * work_len / weights;
    let cap = stretches.iter().map(|s| s.1 - s.0).fold(1e-3, f64::max);
    TimeAxis::new(
        gaps.iter()
            .map(|g| Break {
                start: g.0,
                end: g.1,
                shown: (unit * weight(g)).min(cap),
            })
            .collect(),
    )
}

fn widen(r: Option<(f64, f64)>, a: f64, b: f64) -> Option<(f64, f64)> {
    Some(r.map_or((a, b), |(x, y)| (x.min(a), y.max(b))))
}

fn push_span(t: &mut Track, level: usize, s: Span) {
    while t.levels.len() <= level {
        t.levels.push(Level::default());
    }
    t.levels[level].spans.push(s);
}

/// Removes ANSI colour sequences (tinygrad colours its range names).
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\x1b' {
            if it.peek() == Some(&'[') {
                it.next();
                for d in it.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}
