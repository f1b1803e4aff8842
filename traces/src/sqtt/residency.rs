//! Each SIMD's resident waves counted as the analyzer meets their WAVESTARTs and WAVEENDs: what
//! achieved occupancy (`analysis::occupancy`) sums over an SE's wave records, without reading
//! the records (millions per SE, 48 bytes each) a second time.
//!
//! The sweep over the records (`achieved_se`) takes the waves in start order and, per SIMD, at
//! each start time `a` counts the waves started by `a` that end after it (ends first at equal
//! times). In a stream whose wave events come in time order the same count is the SIMD's live
//! waves when its next event later than `a` arrives: every end at or before `a` came before it,
//! no later one did. The sums hold only for such a stream in which every wave ended; the
//! analyzer keeps them only then ([`ResidencySweep::finish`]).

/// An SE's waves by SIMD as achieved occupancy sums them: what the sweep of its wave records
/// would give (see the module's note), kept only when every wave ended and the wave events
/// came in time order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Residency {
    /// The waves summed: the analysis' wave records, while it has them.
    pub waves: usize,
    /// The first wave's start and the latest end.
    pub first_start: i64,
    pub last_end: i64,
    /// Per SIMD, in (CU, SIMD) order: its place, waves, busy cycles (the exact sum of the
    /// waves' lifetimes; achieved occupancy saturates it) and most waves resident at once.
    pub simds: Vec<((u16, u8), usize, u128, usize)>,
}

/// One SIMD's running sums.
#[derive(Debug, Clone, Copy, Default)]
struct SimdLive {
    waves: u64,
    /// Exact: each lifetime is at least 0.
    busy: u128,
    /// Its latest start not yet settled (the peak at it not taken); 0 before the first, which
    /// settles nothing (no wave is live).
    pending: i64,
    live: u32,
    peak: u32,
}

impl SimdLive {
    /// The peak at the pending start, once every end at or before it is in.
    #[inline(always)]
    fn settle(&mut self) {
        self.peak = self.peak.max(self.live);
    }
}

/// CUs and SIMDs with a slot in the table: every place of today's layouts (a CU number of
/// 8 bits, 2 bits of SIMD). A wave elsewhere gives up the sums.
const CUS: usize = 256;
const SIMDS: usize = 4;

/// The sums as waves start and end ([`crate::sqtt::waves::Analyzer`]).
#[derive(Debug)]
pub(crate) struct ResidencySweep {
    /// By `cu * SIMDS + simd`, so in (CU, SIMD) order; empty until the first wave.
    simds: Box<[SimdLive]>,
    /// The latest wave event's time.
    last: i64,
    last_end: i64,
    /// False once a wave event came out of time order or a wave's place has no slot.
    ok: bool,
}

impl Default for ResidencySweep {
    fn default() -> Self {
        ResidencySweep {
            simds: Box::default(),
            last: i64::MIN,
            last_end: i64::MIN,
            ok: true,
        }
    }
}

impl ResidencySweep {
    /// The SIMD of (`cu`, `simd`), when it has a slot; its event at `time` in time order.
    #[inline(always)]
    fn at(&mut self, cu: u16, simd: u8, time: i64) -> Option<&mut SimdLive> {
        let in_order = time >= self.last;
        self.last = time;
        let g = cu as usize * SIMDS + simd as usize;
        if !(in_order && (cu as usize) < CUS && (simd as usize) < SIMDS) {
            self.ok = false;
            return None;
        }
        if self.simds.is_empty() {
            self.allocate();
        }
        self.simds.get_mut(g)
    }

    /// The table, at the first wave: out of the analyzer's per-wave code.
    #[cold]
    #[inline(never)]
    fn allocate(&mut self) {
        self.simds = vec![SimdLive::default(); CUS * SIMDS].into_boxed_slice();
    }

    /// A wave of (`cu`, `simd`) starts at `time`.
    #[inline(always)]
    pub(crate) fn start(&mut self, cu: u16, simd: u8, time: i64) {
        if let Some(s) = self.at(cu, simd, time) {
            if s.pending < time {
                s.settle();
            }
            s.pending = time;
            s.live += 1;
            s.waves += 1;
        }
    }

    /// A wave of (`cu`, `simd`) that started at `start` ends at `end`.
    #[inline(always)]
    pub(crate) fn end(&mut self, cu: u16, simd: u8, start: i64, end: i64) {
        self.last_end = self.last_end.max(end);
        if let Some(s) = self.at(cu, simd, end) {
            // As the sweep of the records takes it: never before its start.
            let end = end.max(start);
            if s.pending < end {
                s.settle();
            }
            s.live = s.live.wrapping_sub(1);
            // `end >= start`: the difference fits in u64.
            s.busy += (end as u64).wrapping_sub(start as u64) as u128;
        }
    }

    /// The sums of `waves` waves whose first started at `first_start`, when they hold: every
    /// event in time order through a slotted SIMD, and `all_ended` (the caller's count; a wave
    /// that never ended is dropped from the records but was counted here). None for no waves.
    pub(crate) fn finish(
        &mut self,
        waves: usize,
        first_start: Option<i64>,
        all_ended: bool,
    ) -> Option<Residency> {
        let first_start = first_start?;
        if !(self.ok && all_ended) {
            return None;
        }
        let mut simds = Vec::new();
        let mut total = 0usize;
        for (g, s) in self.simds.iter_mut().enumerate() {
            if s.waves == 0 {
                continue;
            }
            s.settle();
            total += s.waves as usize;
            let place = ((g / SIMDS) as u16, (g % SIMDS) as u8);
            simds.push((place, s.waves as usize, s.busy, s.peak as usize));
        }
        (total == waves).then_some(Residency {
            waves,
            first_start,
            last_end: self.last_end,
            simds,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sums are given up for events out of time order, a place without a slot, or a wave
    /// that never ended; kept otherwise.
    #[test]
    fn kept_only_where_they_hold() {
        let run = |events: &[(bool, u16, i64, i64)], all_ended: bool| {
            let mut s = ResidencySweep::default();
            let mut n = 0;
            for &(end, cu, start, time) in events {
                if end {
                    s.end(cu, 1, start, time);
                } else {
                    s.start(cu, 1, time);
                    n += 1;
                }
            }
            s.finish(n, Some(events[0].3), all_ended)
        };
        let good = [
            (false, 3, 5, 5),
            (false, 3, 6, 6),
            (true, 3, 5, 9),
            (true, 3, 6, 9),
        ];
        let r = run(&good, true).unwrap();
        assert_eq!(r.simds, vec![((3, 1), 2, 7, 2)]);
        assert_eq!((r.first_start, r.last_end, r.waves), (5, 9, 2));
        assert_eq!(run(&good, false), None);
        let back = [
            (false, 3, 5, 5),
            (true, 3, 5, 9),
            (false, 3, 8, 8),
            (true, 3, 8, 10),
        ];
        assert_eq!(run(&back, true), None);
        let far = [(false, 300, 5, 5), (true, 300, 5, 9)];
        assert_eq!(run(&far, true), None);
        assert_eq!(ResidencySweep::default().finish(0, None, true), None);
    }
}
