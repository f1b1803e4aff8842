//! Time ruler: tick spacing on a 1-2-5 scale and labels with sensible units.

/// Tick step (in µs) so that ticks are at least `min_px` apart.
pub fn tick_step(view_len_us: f64, width_px: f32, min_px: f32) -> f64 {
    let per_px = view_len_us / width_px.max(1.0) as f64;
    let raw = per_px * min_px as f64;
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if mag * m >= raw {
            return mag * m;
        }
    }
    mag * 10.0
}

/// Formats a duration/time in µs with a unit that fits its size (`1.5 ms`, `250 ns`).
pub fn format_us(us: f64) -> String {
    let a = us.abs();
    let (v, unit) = if a >= 1e6 {
        (us / 1e6, "s")
    } else if a >= 1e3 {
        (us / 1e3, "ms")
    } else if a >= 1.0 || a == 0.0 {
        (us, "µs")
    } else {
        (us * 1e3, "ns")
    };
    format!("{} {unit}", trim(v))
}

/// Formats cycles (`12.5 Kclk`).
pub fn format_cycles(c: f64) -> String {
    let a = c.abs();
    if a >= 1e6 {
        format!("{} Mclk", trim(c / 1e6))
    } else if a >= 1e3 {
        format!("{} Kclk", trim(c / 1e3))
    } else {
        format!("{} clk", trim(c))
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// Tick positions (µs or cycles) inside `[start, end]`.
pub fn ticks(start: f64, end: f64, step: f64) -> impl Iterator<Item = f64> {
    let first = (start / step).ceil() as i64;
    let last = (end / step).floor() as i64;
    let n = (last - first).clamp(-1, 10_000);
    (0..=n).map(move |i| (first + i) as f64 * step)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_and_units() {
        assert_eq!(tick_step(1000.0, 1000.0, 80.0), 100.0);
        assert_eq!(tick_step(1.0, 1000.0, 80.0), 0.1);
        assert_eq!(format_us(1500.0), "1.5 ms");
        assert_eq!(format_us(0.25), "250 ns");
        assert_eq!(format_us(12.0), "12 µs");
        assert_eq!(format_cycles(12500.0), "12.5 Kclk");
    }
}
