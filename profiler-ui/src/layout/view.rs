//! The visible time window of a timeline and its mapping to screen x.

/// A time window `[start, end)` shown across `width` pixels starting at `left`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeView {
    pub start: f64,
    pub end: f64,
}

impl TimeView {
    pub fn new(start: f64, end: f64) -> TimeView {
        let end = if end > start { end } else { start + 1e-9 };
        TimeView { start, end }
    }

    pub fn len(&self) -> f64 {
        self.end - self.start
    }

    /// Screen x of time `t` for a canvas `[left, left + width)`.
    pub fn to_px(&self, t: f64, left: f32, width: f32) -> f32 {
        left + ((t - self.start) / self.len() * width as f64) as f32
    }

    /// Time at screen x.
    pub fn from_px(&self, x: f32, left: f32, width: f32) -> f64 {
        self.start + (x - left) as f64 / width.max(1.0) as f64 * self.len()
    }

    /// Zoom by `factor` (< 1 zooms in) keeping time `at` under the same pixel.
    pub fn zoom(&mut self, factor: f64, at: f64) {
        let factor = factor.clamp(0.01, 100.0);
        let new_len = (self.len() * factor).max(1e-9);
        let frac = if self.len() > 0.0 {
            (at - self.start) / self.len()
        } else {
            0.5
        };
        self.start = at - frac * new_len;
        self.end = self.start + new_len;
    }

    /// Pan by a fraction of the window (positive moves right/later).
    pub fn pan(&mut self, frac: f64) {
        let d = self.len() * frac;
        self.start += d;
        self.end += d;
    }

    /// A window around `[a, b]` with a margin of `margin` times its length on each side.
    pub fn around(a: f64, b: f64, margin: f64) -> TimeView {
        let len = (b - a).max(1e-6);
        TimeView::new(a - len * margin, b + len * margin)
    }
}

/// An idle stretch of the timeline drawn narrower than its true length ("collapse idle").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Break {
    /// True times (µs) of the idle stretch.
    pub start: f64,
    pub end: f64,
    /// How long it is drawn, in axis units (µs at the scale of the work around it).
    pub shown: f64,
}

impl Break {
    pub fn len(&self) -> f64 {
        self.end - self.start
    }
}

/// Maps true times to axis positions, which [`TimeView`] maps to pixels. Outside breaks the
/// axis runs at true scale (shifted by the idle time removed before), inside a break it is
/// compressed linearly, so the mapping is continuous and monotonic and every pixel still has
/// one true time: hover, measure and labels convert back with [`TimeAxis::to_true`].
/// No breaks is the identity (true scale).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TimeAxis {
    breaks: Vec<Break>,
    /// Idle time removed by the breaks before break `i` (prefix sums of `len - shown`).
    removed: Vec<f64>,
    /// Axis position of break `i`'s start.
    axis_start: Vec<f64>,
}

impl TimeAxis {
    pub const IDENTITY: TimeAxis = TimeAxis {
        breaks: Vec::new(),
        removed: Vec::new(),
        axis_start: Vec::new(),
    };

    /// `breaks` must be sorted and disjoint; each is drawn `shown` long (at most its length).
    pub fn new(mut breaks: Vec<Break>) -> TimeAxis {
        breaks.retain(|b| b.end > b.start);
        breaks.sort_by(|a, b| a.start.total_cmp(&b.start));
        let mut removed = Vec::with_capacity(breaks.len());
        let mut acc = 0.0;
        for b in &mut breaks {
            b.shown = b.shown.clamp(0.0, b.len());
            removed.push(acc);
            acc += b.len() - b.shown;
        }
        let axis_start = breaks
            .iter()
            .zip(&removed)
            .map(|(b, r)| b.start - r)
            .collect();
        TimeAxis {
            breaks,
            removed,
            axis_start,
        }
    }

    pub fn breaks(&self) -> &[Break] {
        &self.breaks
    }

    /// Idle time the axis hides in total.
    pub fn hidden(&self) -> f64 {
        self.breaks.iter().map(|b| b.len() - b.shown).sum()
    }

    /// Axis position of true time `t`.
    pub fn to_axis(&self, t: f64) -> f64 {
        // Last break starting at or before t.
        let i = self.breaks.partition_point(|b| b.start <= t);
        if i == 0 {
            return t;
        }
        let b = &self.breaks[i - 1];
        let b_axis = self.axis_start[i - 1];
        if t < b.end {
            b_axis + (t - b.start) / b.len() * b.shown
        } else {
            t - self.removed[i - 1] - (b.len() - b.shown)
        }
    }

    /// True time at axis position `x` (inverse of [`TimeAxis::to_axis`]).
    pub fn to_true(&self, x: f64) -> f64 {
        let i = self.axis_start.partition_point(|&a| a <= x);
        if i == 0 {
            return x;
        }
        let b = &self.breaks[i - 1];
        let b_axis = self.axis_start[i - 1];
        if x < b_axis + b.shown {
            b.start + (x - b_axis) / b.shown * b.len()
        } else {
            x + self.removed[i - 1] + (b.len() - b.shown)
        }
    }

    /// Breaks whose axis range meets `[a, b]`, with their axis start.
    pub fn breaks_in(&self, a: f64, b: f64) -> impl Iterator<Item = (f64, &Break)> {
        // The break before the first one starting at or after `a` may still reach into it.
        let lo = self
            .axis_start
            .partition_point(|&x| x < a)
            .saturating_sub(1);
        self.axis_start[lo..]
            .iter()
            .copied()
            .zip(&self.breaks[lo..])
            .skip_while(move |(x, k)| x + k.shown < a)
            .take_while(move |(x, _)| *x <= b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zoom_keeps_the_anchor_in_place() {
        let mut v = TimeView::new(0.0, 100.0);
        let px = v.to_px(30.0, 0.0, 1000.0);
        v.zoom(0.5, 30.0);
        assert!((v.to_px(30.0, 0.0, 1000.0) - px).abs() < 1e-3);
        assert!((v.len() - 50.0).abs() < 1e-9);
    }

    #[test]
    fn axis_round_trips_and_compresses_breaks() {
        let ax = TimeAxis::new(vec![
            Break {
                start: 10.0,
                end: 1010.0,
                shown: 5.0,
            },
            Break {
                start: 1020.0,
                end: 3020.0,
                shown: 5.0,
            },
        ]);
        assert_eq!(ax.to_axis(5.0), 5.0);
        assert_eq!(ax.to_axis(10.0), 10.0);
        assert_eq!(ax.to_axis(1010.0), 15.0);
        assert_eq!(ax.to_axis(1015.0), 20.0);
        assert_eq!(ax.to_axis(1020.0), 25.0);
        assert_eq!(ax.to_axis(3020.0), 30.0);
        assert_eq!(ax.to_axis(3030.0), 40.0);
        assert!((ax.to_axis(510.0) - 12.5).abs() < 1e-9);
        for t in [
            0.0, 9.0, 10.0, 400.0, 1010.0, 1017.0, 2000.0, 3020.0, 5000.0,
        ] {
            assert!((ax.to_true(ax.to_axis(t)) - t).abs() < 1e-6, "{t}");
        }
        assert_eq!(ax.hidden(), 2990.0);
        let seen: Vec<f64> = ax.breaks_in(0.0, 12.0).map(|(x, _)| x).collect();
        assert_eq!(seen, vec![10.0]);
        let seen: Vec<f64> = ax.breaks_in(16.0, 100.0).map(|(x, _)| x).collect();
        assert_eq!(seen, vec![25.0]);
    }
}
