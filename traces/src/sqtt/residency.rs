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
//!
//! Without wave records a stream cut by a full trace buffer still has its sums: its waves that
//! never ended are the ones live at the end, which the records drop
//! ([`ResidencySweep::finish_cut`]). They added no busy cycles (added at the end) and their
//! SIMDs' counts lose them; a SIMD's peak is the most of its live waves at a start time `a`
//! less its unended waves started by `a`. Only the times the live count rose above the SIMD's
//! peak so far need keeping for that: an earlier such time with at least as many live waves has
//! no more unended ones started by then (they never leave), so it gives at least as much.

/// An SE's waves by SIMD as achieved occupancy sums them: what the sweep of its wave records
/// would give (see the module's note), kept only when the wave events came in time order and
/// every wave ended, or, without records, of the waves that ended
/// ([`ResidencySweep::finish_cut`]).
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

/// At most this many raises of a SIMD's peak are kept ([`ResidencySweep::keep_raises`]): a
/// SIMD's live waves are bounded by its wave slots (32 per shader array) without records, so
/// only a damaged stream reaches it; past it, a cut stream's sums are given up.
pub(crate) const RAISES_CAP: usize = 1 << 16;

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
    /// The least start of a wave that ended (`i64::MAX`: none yet).
    first_ended: i64,
    /// Each time a SIMD's live count rose above its peak: (its pending start, SIMD, the count),
    /// kept ([`ResidencySweep::keep_raises`]) for [`ResidencySweep::finish_cut`].
    raises: Vec<(i64, u32, u32)>,
    keep_raises: bool,
    /// More raises came than [`RAISES_CAP`].
    raises_lost: bool,
}

impl Default for ResidencySweep {
    fn default() -> Self {
        ResidencySweep {
            simds: Box::default(),
            last: i64::MIN,
            last_end: i64::MIN,
            ok: true,
            first_ended: i64::MAX,
            raises: Vec::new(),
            keep_raises: false,
            raises_lost: false,
        }
    }
}

impl ResidencySweep {
    /// Keeps the raises of each SIMD's peak, which [`ResidencySweep::finish_cut`] needs.
    pub(crate) fn keep_raises(&mut self) {
        self.keep_raises = true;
    }

    /// The index of (`cu`, `simd`), when it has a slot; its event at `time` in time order.
    #[inline(always)]
    fn at(&mut self, cu: u16, simd: u8, time: i64) -> Option<usize> {
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
        Some(g)
    }

    /// The table, at the first wave: out of the analyzer's per-wave code.
    #[cold]
    #[inline(never)]
    fn allocate(&mut self) {
        self.simds = vec![SimdLive::default(); CUS * SIMDS].into_boxed_slice();
    }

    /// SIMD `g`'s live count rose to `live` above its peak at its pending start `at`.
    #[cold]
    #[inline(never)]
    fn raise(&mut self, g: usize, at: i64, live: u32) {
        if !self.keep_raises {
            return;
        }
        match self.raises.len() < RAISES_CAP {
            true => self.raises.push((at, g as u32, live)),
            false => self.raises_lost = true,
        }
    }

    /// The peak at SIMD `g`'s pending start, once every end at or before it is in: its new
    /// live count by the event at `time`, if the event settles it.
    #[inline(always)]
    fn settle_before(&mut self, g: usize, time: i64) {
        if self.simds.get(g).is_some_and(|s| s.pending < time) {
            self.settle(g);
        }
    }

    /// The peak at SIMD `g`'s pending start, its raise kept.
    #[inline(always)]
    fn settle(&mut self, g: usize) {
        let Some(s) = self.simds.get_mut(g) else {
            return;
        };
        if s.live > s.peak {
            s.peak = s.live;
            let (at, live) = (s.pending, s.live);
            self.raise(g, at, live);
        }
    }

    /// Every SIMD's last pending start settled (no later event came).
    fn settle_all(&mut self) {
        for g in 0..self.simds.len() {
            self.settle(g);
        }
    }

    /// The sums of `waves` waves, every SIMD settled: None unless its counts add up to them.
    fn sums(&self, waves: usize, first_start: i64) -> Option<Residency> {
        let mut simds = Vec::new();
        let mut total = 0usize;
        for (g, s) in self.simds.iter().enumerate() {
            if s.waves == 0 {
                continue;
            }
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

    /// A wave of (`cu`, `simd`) starts at `time`.
    #[inline(always)]
    pub(crate) fn start(&mut self, cu: u16, simd: u8, time: i64) {
        if let Some(g) = self.at(cu, simd, time) {
            self.settle_before(g, time);
            if let Some(s) = self.simds.get_mut(g) {
                s.pending = time;
                s.live += 1;
                s.waves += 1;
            }
        }
    }

    /// A wave of (`cu`, `simd`) that started at `start` ends at `end`.
    #[inline(always)]
    pub(crate) fn end(&mut self, cu: u16, simd: u8, start: i64, end: i64) {
        self.last_end = self.last_end.max(end);
        self.first_ended = self.first_ended.min(start);
        if let Some(g) = self.at(cu, simd, end) {
            // As the sweep of the records takes it: never before its start.
            let end = end.max(start);
            self.settle_before(g, end);
            if let Some(s) = self.simds.get_mut(g) {
                s.live = s.live.wrapping_sub(1);
                // `end >= start`: the difference fits in u64.
                s.busy += (end as u64).wrapping_sub(start as u64) as u128;
            }
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
        self.settle_all();
        self.sums(waves, first_start)
    }

    /// The sums of the `ended` waves of a stream whose other waves never ended (`unended`:
    /// each one's CU, SIMD and start), as the records give them once those are dropped
    /// (see the module's note): None where they do not hold (as [`ResidencySweep::finish`]),
    /// where the raises were not kept or some were lost, or for no ended wave.
    pub(crate) fn finish_cut(
        &mut self,
        ended: usize,
        unended: &mut [(u16, u8, i64)],
    ) -> Option<Residency> {
        if unended.is_empty() {
            let first = (self.first_ended != i64::MAX).then_some(self.first_ended);
            return self.finish(ended, first, true);
        }
        if !(self.ok && self.keep_raises) || ended == 0 {
            return None;
        }
        // The last pending starts' peaks (no later event settled them).
        self.settle_all();
        if self.raises_lost {
            return None;
        }
        let group = |&(cu, simd, _): &(u16, u8, i64)| cu as usize * SIMDS + simd as usize;
        if unended.iter().any(|u| group(u) >= self.simds.len()) {
            return None;
        }
        unended.sort_unstable_by_key(|&u| (group(&u), u.2));
        // Raises by SIMD, each SIMD's in time order (they came so).
        self.raises.sort_by_key(|r| r.1);
        let mut raises = &self.raises[..];
        for run in unended.chunk_by(|a, b| group(a) == group(b)) {
            let g = group(&run[0]);
            let s = &mut self.simds[g];
            s.waves = s.waves.checked_sub(run.len() as u64)?;
            let skip = raises.partition_point(|r| (r.1 as usize) < g);
            raises = &raises[skip..];
            let mine = raises.partition_point(|r| r.1 as usize == g);
            // The most ended waves live at a raise: its count less the unended waves started
            // by then (none started after it ended, so all were live at it).
            let mut peak = 0u32;
            let mut by = 0usize;
            for &(at, _, live) in &raises[..mine] {
                while by < run.len() && run[by].2 <= at {
                    by += 1;
                }
                peak = peak.max(live.saturating_sub(by as u32));
            }
            s.peak = peak;
            raises = &raises[mine..];
        }
        self.sums(ended, self.first_ended)
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

    /// Random waves on one SIMD or many, in time order with equal times often, long-lived
    /// ones among them, some never ended (none, a few or all of those live at the end):
    /// [`ResidencySweep::finish_cut`] gives what the waves that ended give, counted here
    /// plainly: per SIMD its waves, busy cycles and most waves resident at one of its starts
    /// (started by it, ending after it), the first start and last end.
    #[test]
    fn a_cut_stream_gives_the_sums_of_its_ended_waves() {
        let mut next = crate::analysis::test_rng(0x5eed_c0ff_ee17);
        let (mut lowered, mut cut, mut all_cut) = (0, 0, 0);
        for case in 0..3000 {
            let simds = [1, 2, 5][next(3) as usize];
            // (cu, simd, start, end: None for a wave live at the end)
            let mut waves: Vec<(u16, u8, i64, Option<i64>)> = Vec::new();
            let mut live: Vec<usize> = Vec::new();
            let mut s = ResidencySweep::default();
            s.keep_raises();
            let mut time = next(3) as i64;
            let long = next(2) == 0;
            for _ in 0..next(120) {
                time += [0, 0, 1, 3][next(4) as usize] as i64;
                if live.is_empty() || next(2) == 0 {
                    let g = next(simds) as u16;
                    let (cu, simd) = (g / 2 * 7, (g % 2) as u8 * 3);
                    s.start(cu, simd, time);
                    live.push(waves.len());
                    waves.push((cu, simd, time, None));
                } else {
                    // Mostly the newest waves end when some live long.
                    let i = match long {
                        true => live.len() - 1 - next(live.len().min(3) as u64) as usize,
                        false => next(live.len() as u64) as usize,
                    };
                    let w = live.remove(i);
                    let (cu, simd, start, _) = waves[w];
                    s.end(cu, simd, start, time);
                    waves[w].3 = Some(time);
                }
            }
            // Some of those live at the end end now (the rest never do).
            let ending = match next(3) {
                0 => live.len(),
                1 => 0,
                _ => next(live.len() as u64 + 1) as usize,
            };
            for w in live.drain(..ending) {
                time += next(2) as i64;
                let (cu, simd, start, _) = waves[w];
                s.end(cu, simd, start, time);
                waves[w].3 = Some(time);
            }
            let mut unended: Vec<(u16, u8, i64)> = live
                .iter()
                .map(|&w| (waves[w].0, waves[w].1, waves[w].2))
                .collect();
            let ended: Vec<_> = waves
                .iter()
                .filter_map(|&(cu, simd, a, e)| Some((cu, simd, a, e?)))
                .collect();
            let got = s.finish_cut(ended.len(), &mut unended);
            let want = (!ended.is_empty()).then(|| {
                let mut places: Vec<(u16, u8)> = ended.iter().map(|w| (w.0, w.1)).collect();
                places.sort();
                places.dedup();
                let simds = places
                    .into_iter()
                    .map(|p| {
                        let mine: Vec<_> = ended.iter().filter(|w| (w.0, w.1) == p).collect();
                        let busy = mine.iter().map(|w| (w.3 - w.2) as u128).sum();
                        let peak = mine
                            .iter()
                            .map(|a| {
                                let by = |w: &&&(u16, u8, i64, i64)| w.2 <= a.2 && w.3 > a.2;
                                mine.iter().filter(by).count()
                            })
                            .max()
                            .unwrap_or(0);
                        (p, mine.len(), busy, peak)
                    })
                    .collect();
                Residency {
                    waves: ended.len(),
                    first_start: ended.iter().map(|w| w.2).min().unwrap(),
                    last_end: ended.iter().map(|w| w.3).max().unwrap(),
                    simds,
                }
            });
            assert_eq!(got, want, "case {case}");
            cut += !live.is_empty() as u64;
            all_cut += (!live.is_empty() && ending == 0) as u64;
            // A peak that counted a wave never ended: the sums of every wave give more.
            let all_peaks = {
                let mut s = ResidencySweep::default();
                let mut events: Vec<(i64, bool, usize)> = Vec::new();
                for (i, w) in waves.iter().enumerate() {
                    events.push((w.2, false, i));
                    events.push((w.3.unwrap_or(time + 1), true, i));
                }
                // Starts before ends at equal times: the order the stream had them in.
                events.sort_by_key(|e| (e.0, e.1));
                for (t, end, i) in events {
                    let (cu, simd, start, _) = waves[i];
                    match end {
                        false => s.start(cu, simd, t),
                        true => s.end(cu, simd, start, t),
                    }
                }
                let r = s.finish(waves.len(), waves.first().map(|w| w.2), true);
                r.map_or(0, |r| r.simds.iter().map(|s| s.3).sum::<usize>())
            };
            let peaks = want.map_or(0, |r| r.simds.iter().map(|s| s.3).sum::<usize>());
            lowered += (all_peaks > peaks) as u64;
        }
        eprintln!("{cut} cut, {all_cut} with every live wave never ended, {lowered} peaks lowered");
        assert!(
            cut > 500 && all_cut > 200 && lowered > 200,
            "{cut} {all_cut} {lowered}"
        );
    }

    /// A cut stream's sums are given up where they may not be exact: raises not kept, more
    /// raises than [`RAISES_CAP`] (a damaged stream: live waves beyond any SIMD's slots),
    /// events out of time order; with the raises kept and under the cap, the same stream with
    /// every wave ended keeps them (out of time order, it gives them up too).
    #[test]
    fn a_cut_stream_gives_up_its_sums_where_they_may_not_hold() {
        let run = |keep: bool, starts: usize, back: bool, cut: bool| {
            let mut s = ResidencySweep::default();
            if keep {
                s.keep_raises();
            }
            // Every start raises the peak; the first wave ends last, or never.
            for t in 0..starts as i64 {
                s.start(1, 2, t);
            }
            let end = starts as i64 - if back { 2 } else { 0 };
            for t in 1..starts as i64 {
                s.end(1, 2, t, end);
            }
            let mut unended = vec![(1, 2, 0)];
            if !cut {
                s.end(1, 2, 0, end + 1);
                unended.clear();
            }
            let n = starts - unended.len();
            let r = s.finish_cut(n, &mut unended);
            r.map(|r| (r.waves, r.simds[0].3))
        };
        assert_eq!(run(true, 10, false, true), Some((9, 9)));
        assert_eq!(run(true, 10, false, false), Some((10, 10)));
        assert_eq!(run(false, 10, false, true), None);
        assert_eq!(run(false, 10, false, false), Some((10, 10)));
        let many = RAISES_CAP + 1;
        assert_eq!(
            run(true, RAISES_CAP, false, true),
            Some((many - 2, many - 2))
        );
        assert_eq!(run(true, many, false, true), None);
        assert_eq!(run(true, many, false, false), Some((many, many)));
        assert_eq!(run(true, 10, true, true), None);
        assert_eq!(run(true, 10, true, false), None);
    }
}
