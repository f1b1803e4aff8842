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
}
