//! Absolute time: the realtime markers carry the 100 MHz GPU timestamp counter (the clock the
//! command processor's RELEASE_MEM timestamps use), so every packet time in shader cycles can
//! be placed on the GPU timeline by interpolating between the markers around it.
//!
//! RDNA3 markers carry the counter's low 36 bits (it wraps every ~687 s), RDNA4 markers 52 bits.
//! CDNA streams have no such marker.

use super::packets::Layout;
use super::waves::Marker;

/// GPU timestamp ticks per second (the 100 MHz "REFCLK" counter).
pub const TICKS_PER_SECOND: f64 = 100e6;

/// Maps shader-cycle times of one blob to 100 MHz GPU ticks.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeMap {
    /// (cycles, ticks) at each marker, strictly increasing in both.
    points: Vec<(i64, f64)>,
    /// Ticks per cycle used before the first and after the last marker when there is only one.
    fallback_slope: Option<f64>,
}

impl TimeMap {
    /// Build the map from a blob's markers.
    ///
    /// `reference_ticks` is any 100 MHz timestamp taken near the capture (a kernel's start, for
    /// instance); it picks the right wrap of RDNA3's 36-bit values. Without it the low bits are
    /// taken as they are.
    pub fn from_markers(
        markers: &[Marker],
        layout: Layout,
        reference_ticks: Option<u64>,
    ) -> Option<TimeMap> {
        let mut keep = Self::point_filter(*markers.first()?, layout, reference_ticks)?;
        // At its final size at once: a large capture has millions of markers, and a list
        // grown by doubling copies itself and faults its pages in twice.
        let mut points: Vec<(i64, f64)> = Vec::with_capacity(markers.len());
        points.extend(markers.iter().filter_map(|m| keep(*m)));
        Some(Self::of_points(points))
    }

    /// [`TimeMap::from_markers`] of a marker list no longer needed: the points are written
    /// over the markers in their own allocation (a marker and a point are both 16 bytes), so a
    /// large capture's map costs no fresh pages. The same map as [`TimeMap::from_markers`].
    pub fn from_marker_list(
        markers: Vec<Marker>,
        layout: Layout,
        reference_ticks: Option<u64>,
    ) -> Option<TimeMap> {
        let keep = Self::point_filter(*markers.first()?, layout, reference_ticks)?;
        // `Vec` -> `into_iter` -> `filter_map` -> `collect` reuses the source allocation.
        let points: Vec<(i64, f64)> = markers.into_iter().filter_map(keep).collect();
        Some(Self::of_points(points))
    }

    /// The map's points, kept for as long as the kernel's view (a large capture has millions
    /// of markers).
    fn of_points(mut points: Vec<(i64, f64)>) -> TimeMap {
        points.shrink_to_fit();
        TimeMap {
            points,
            fallback_slope: None,
        }
    }

    /// Given the markers in order from `first` on, the point each adds to the map, if any:
    /// the counter unwrapped from its low bits, and the map kept strictly increasing (markers
    /// in the same cycle add nothing). None for a layout without markers (CDNA).
    fn point_filter(
        first: Marker,
        layout: Layout,
        reference_ticks: Option<u64>,
    ) -> Option<impl FnMut(Marker) -> Option<(i64, f64)>> {
        let bits = match layout {
            Layout::Rdna3 => 36,
            Layout::Rdna4 => 52,
            Layout::Cdna => return None,
        };
        let modulus = 1u64 << bits;
        let mut full = unwrap_near(first.realtime & (modulus - 1), bits, reference_ticks);
        let mut prev_rt = first.realtime & (modulus - 1);
        let mut last: Option<(i64, f64)> = None;
        Some(move |m: Marker| {
            let Some(l) = last else {
                // The first marker is the first point.
                last = Some((first.time, full as f64));
                return last;
            };
            let rt = m.realtime & (modulus - 1);
            full = full.wrapping_add(rt.wrapping_sub(prev_rt) & (modulus - 1));
            prev_rt = rt;
            if m.time > l.0 && full as f64 > l.1 {
                last = Some((m.time, full as f64));
                return last;
            }
            None
        })
    }

    /// Use this shader clock (Hz) outside the markers when the map has a single marker.
    pub fn with_fallback_clock(mut self, shader_hz: f64) -> Self {
        if shader_hz > 0.0 {
            self.fallback_slope = Some(TICKS_PER_SECOND / shader_hz);
        }
        self
    }

    pub fn markers(&self) -> usize {
        self.points.len()
    }

    /// The shader clock (Hz) averaged over the whole map, if it spans two markers.
    pub fn mean_clock_hz(&self) -> Option<f64> {
        let (a, b) = (self.points.first()?, self.points.last()?);
        if b.0 <= a.0 {
            return None;
        }
        Some((b.0 - a.0) as f64 / (b.1 - a.1) * TICKS_PER_SECOND)
    }

    /// 100 MHz ticks at a time in shader cycles: linear between the markers around it, and
    /// with the nearest interval's rate outside them.
    pub fn ticks(&self, cycles: i64) -> Option<f64> {
        let pts = &self.points;
        match pts.len() {
            0 => None,
            1 => {
                let (c, t) = pts[0];
                let slope = self.fallback_slope?;
                Some(t + (cycles - c) as f64 * slope)
            }
            n => {
                // Index of the interval [i, i+1] to use.
                let i = match pts.binary_search_by(|p| p.0.cmp(&cycles)) {
                    Ok(i) => return Some(pts[i].1),
                    Err(0) => 0,
                    Err(i) if i >= n => n - 2,
                    Err(i) => i - 1,
                };
                let (c0, t0) = pts[i];
                let (c1, t1) = pts[i + 1];
                Some(t0 + (cycles - c0) as f64 * (t1 - t0) / (c1 - c0) as f64)
            }
        }
    }

    /// Microseconds on the GPU clock (ticks / 100).
    pub fn us(&self, cycles: i64) -> Option<f64> {
        self.ticks(cycles).map(|t| t / 100.0)
    }

    /// [`TimeMap::us`] for times that mostly move forward (a stream's tokens): `hint` keeps the
    /// last interval used, so each call checks it and the next before searching. Same result.
    #[inline]
    pub fn us_hinted(&self, cycles: i64, hint: &mut usize) -> Option<f64> {
        let pts = &self.points;
        let n = pts.len();
        if n >= 2 {
            for i in [*hint, *hint + 1] {
                if i + 1 < n && pts[i].0 <= cycles && cycles < pts[i + 1].0 {
                    *hint = i;
                    let (c0, t0) = pts[i];
                    if c0 == cycles {
                        return Some(t0 / 100.0);
                    }
                    let (c1, t1) = pts[i + 1];
                    return Some(
                        (t0 + (cycles - c0) as f64 * (t1 - t0) / (c1 - c0) as f64) / 100.0,
                    );
                }
            }
            *hint = pts.partition_point(|p| p.0 <= cycles).saturating_sub(1);
        }
        self.us(cycles)
    }

    /// [`TimeMap::us_hinted`] for two interleaved sequences that each mostly move forward (wave
    /// starts and ends): the last two intervals used are checked before searching, so the
    /// ends do not throw the starts' interval away. Same result (the map is strictly
    /// increasing, so each time has one interval).
    #[inline]
    pub fn us_hinted2(&self, cycles: i64, hints: &mut [usize; 2]) -> Option<f64> {
        let pts = &self.points;
        let n = pts.len();
        if n >= 2 {
            for k in 0..2 {
                for i in [hints[k], hints[k] + 1] {
                    if i + 1 < n && pts[i].0 <= cycles && cycles < pts[i + 1].0 {
                        hints[k] = i;
                        if k == 1 {
                            hints.swap(0, 1);
                        }
                        let mut h = i;
                        return self.us_hinted(cycles, &mut h);
                    }
                }
            }
            hints[1] = hints[0];
        }
        self.us_hinted(cycles, &mut hints[0])
    }
}

/// Time maps for the SE blobs of one dispatch.
///
/// SEs with markers get their own map. An SE whose stream has no marker (RDNA4 writes few,
/// clustered around the dispatch) borrows the map of one that has, shifted by the offset
/// between the two streams' RGP userdata register writes: the command processor broadcasts
/// those writes to every SE at the same moment, so they tie the SE clocks together. An SE with
/// a single marker uses the mean clock of the others around it.
pub fn dispatch_time_maps(
    blobs: &[&super::waves::BlobAnalysis],
    reference_ticks: Option<u64>,
) -> Vec<Option<TimeMap>> {
    let maps: Vec<Option<TimeMap>> = blobs
        .iter()
        .map(|a| TimeMap::from_markers(&a.markers, a.layout?, reference_ticks))
        .collect();
    link_time_maps(blobs, maps)
}

/// [`dispatch_time_maps`] given each blob's own map (its [`TimeMap::from_markers`], or
/// [`TimeMap::from_marker_list`] of its markers where they are not kept): the maps of the SEs
/// with fewer than two markers completed from the others.
pub fn link_time_maps(
    blobs: &[&super::waves::BlobAnalysis],
    mut maps: Vec<Option<TimeMap>>,
) -> Vec<Option<TimeMap>> {
    let clocks: Vec<f64> = maps
        .iter()
        .flatten()
        .filter_map(|m| m.mean_clock_hz())
        .collect();
    let mean_clock = (!clocks.is_empty()).then(|| clocks.iter().sum::<f64>() / clocks.len() as f64);
    for m in maps.iter_mut().flatten() {
        if m.markers() == 1 {
            if let Some(c) = mean_clock {
                *m = m.clone().with_fallback_clock(c);
            }
        }
    }
    let donor = maps
        .iter()
        .enumerate()
        .filter_map(|(i, m)| m.as_ref().filter(|m| m.markers() >= 2).map(|_| i))
        .max_by_key(|&i| maps[i].as_ref().map_or(0, |m| m.markers()));
    if let Some(d) = donor {
        for i in 0..maps.len() {
            if maps[i].is_some() {
                continue;
            }
            if let Some(shift) = userdata_offset(blobs[d], blobs[i]) {
                maps[i] = maps[d].as_ref().map(|m| m.shifted(shift));
            }
        }
    }
    maps
}

/// Cycles to add to `other`'s times to express them on `base`'s counter, from the RGP userdata
/// writes both streams saw (the same values, in the same order): the median difference.
fn userdata_offset(
    base: &super::waves::BlobAnalysis,
    other: &super::waves::BlobAnalysis,
) -> Option<i64> {
    let a = &base.userdata_writes;
    let b = &other.userdata_writes;
    if a.is_empty() || a.len() != b.len() {
        return None;
    }
    if a.iter()
        .zip(b)
        .any(|(x, y)| x.value != y.value || x.reg != y.reg)
    {
        return None;
    }
    let mut d: Vec<i64> = a.iter().zip(b).map(|(x, y)| x.time - y.time).collect();
    d.sort_unstable();
    Some(d[d.len() / 2])
}

impl TimeMap {
    /// The same map for a stream whose cycle counter is `shift` cycles behind this one's.
    pub fn shifted(&self, shift: i64) -> TimeMap {
        TimeMap {
            points: self.points.iter().map(|&(c, t)| (c - shift, t)).collect(),
            fallback_slope: self.fallback_slope,
        }
    }
}

/// The full counter value whose low `bits` are `low`, closest to `reference`.
fn unwrap_near(low: u64, bits: u32, reference: Option<u64>) -> u64 {
    let Some(r) = reference else { return low };
    if bits >= 64 {
        return low;
    }
    let modulus = 1u64 << bits;
    let base = r & !(modulus - 1);
    let candidates = [base.wrapping_sub(modulus), base, base.wrapping_add(modulus)];
    candidates
        .iter()
        .map(|b| b.wrapping_add(low))
        .min_by_key(|v| v.abs_diff(r))
        .unwrap_or(low)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(time: i64, realtime: u64) -> Marker {
        Marker { time, realtime }
    }

    /// The points as the map's rule says, plainly: the counter unwrapped near the reference
    /// from the first marker's low bits, then by the low bits' differences; a point per marker
    /// later in cycles and counter than the last point.
    fn plain_points(markers: &[Marker], layout: Layout, reference: Option<u64>) -> Vec<(i64, f64)> {
        let bits = if layout == Layout::Rdna3 { 36 } else { 52 };
        let low = |m: &Marker| m.realtime % (1u64 << bits);
        let mut full = unwrap_near(low(&markers[0]), bits, reference);
        let mut points = vec![(markers[0].time, full as f64)];
        for w in markers.windows(2) {
            full = full.wrapping_add(low(&w[1]).wrapping_sub(low(&w[0])) % (1u64 << bits));
            let last = points[points.len() - 1];
            if w[1].time > last.0 && full as f64 > last.1 {
                points.push((w[1].time, full as f64));
            }
        }
        points
    }

    /// The map made over a marker list no longer needed is the map made from a borrowed one,
    /// on random markers: equal and going-back times, counters that wrap or go back, both
    /// layouts, with and without a reference; and it is made in the markers' allocation.
    #[test]
    fn map_over_the_markers_is_the_same_map() {
        let mut next = crate::analysis::test_rng(0x7157);
        for case in 0..2000 {
            let layout = [Layout::Rdna3, Layout::Rdna4][case % 2];
            let n = (next(40) as usize).max(1);
            let (mut time, mut rt) = (next(1000) as i64, next(1 << 40));
            let markers: Vec<Marker> = (0..n)
                .map(|_| {
                    time += next(5) as i64 - 1;
                    rt = match next(10) {
                        0 => rt.wrapping_sub(next(100)),
                        1 => rt.wrapping_add(next(1 << 37)),
                        _ => rt + next(50),
                    };
                    m(time, rt)
                })
                .collect();
            let reference = (case % 3 == 0).then(|| next(1 << 45));
            let borrowed = TimeMap::from_markers(&markers, layout, reference);
            assert_eq!(
                borrowed.as_ref().map(|t| &t.points),
                Some(&plain_points(&markers, layout, reference)),
                "case {case}"
            );
            let owned = TimeMap::from_marker_list(markers, layout, reference);
            assert_eq!(owned, borrowed, "case {case}");
        }
        // Strictly increasing markers, every one a point: nothing to shrink, so the same
        // allocation.
        let markers: Vec<Marker> = (0..1000).map(|i| m(i * 10, 5000 + i as u64)).collect();
        let at = markers.as_ptr() as usize;
        let map = TimeMap::from_marker_list(markers, Layout::Rdna3, None).unwrap();
        assert_eq!(map.points.as_ptr() as usize, at);
        assert_eq!(map.markers(), 1000);
        assert_eq!(
            TimeMap::from_marker_list(Vec::new(), Layout::Rdna3, None),
            None
        );
        assert_eq!(
            TimeMap::from_marker_list(vec![m(0, 1)], Layout::Cdna, None),
            None
        );
    }

    #[test]
    fn interpolates_and_extrapolates() {
        let map = TimeMap::from_markers(&[m(0, 100), m(1000, 200)], Layout::Rdna4, None).unwrap();
        assert_eq!(map.ticks(500), Some(150.0));
        assert_eq!(map.ticks(2000), Some(300.0));
        assert_eq!(map.ticks(-1000), Some(0.0));
        assert_eq!(map.mean_clock_hz(), Some(1e9));
    }

    #[test]
    fn unwraps_rdna3_low_bits() {
        let modulus = 1u64 << 36;
        let reference = 5 * modulus + 10;
        // The counter passes a wrap between the two markers.
        let map = TimeMap::from_markers(
            &[m(0, modulus - 50), m(100, 50)],
            Layout::Rdna3,
            Some(reference),
        )
        .unwrap();
        assert_eq!(map.ticks(0), Some((5 * modulus - 50) as f64));
        assert_eq!(map.ticks(100), Some((5 * modulus + 50) as f64));
    }

    #[test]
    fn single_marker_needs_a_clock() {
        let map = TimeMap::from_markers(&[m(100, 1000)], Layout::Rdna4, None).unwrap();
        assert_eq!(map.ticks(200), None);
        let map = map.with_fallback_clock(1e9);
        assert_eq!(map.ticks(200), Some(1010.0));
    }
}
