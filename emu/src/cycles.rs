//! The cycle model (docs/emulator-timing.md): every instruction belongs to a [`Class`] that
//! fixes its issue cost (shader clock cycles the wave is busy); VALU instructions take a free
//! cycle of their SIMD ([`Arbiter`]), memory instructions one of their WGP's memory pipes;
//! `s_delay_alu` makes the instructions it names wait for earlier results; memory latency
//! depends on where the accessed lines are found ([`Timing`]: per-WGP L0 and scalar caches, a
//! shared L2, DRAM). Deterministic for a given seed.
//!
//! | class | issue |
//! |---|---|
//! | SALU, branch, s_*_saveexec, message | 1 |
//! | immediate SOPP (s_nop N: N+1, s_waitcnt: until the counters allow) | 1 |
//! | VALU (wave64: ×2) | 1 |
//! | VALU transcendental | 4 |
//! | VALU 64-bit shift / mad64 / f64 | 2 / 4 / 16 |
//! | WMMA | [`WMMA_ISSUE`] |
//! | SMEM | 1 |
//! | LDS, global/flat/buffer | 1 (+1 per extra dword) |
//! | s_barrier (gfx12 s_barrier_wait) | 1, then waits for the last wave of the work-group |
//!
//! The SPI launches one wave per [`WAVE_LAUNCH`] cycles per SE, plus [`WG_LAUNCH`] per
//! work-group. The shader clock is [`SHADER_CLOCK_HZ`]; the 100 MHz GPU timestamp advances one
//! tick every [`CYCLES_PER_TICK`] shader cycles.

/// Shader clock of the emulated GPU (2.5 GHz: 25 cycles per 100 MHz tick).
pub const SHADER_CLOCK_HZ: u64 = 2_500_000_000;
pub const CYCLES_PER_TICK: u64 = SHADER_CLOCK_HZ / 100_000_000;
/// Cycles between two wave launches on one SE.
pub const WAVE_LAUNCH: u64 = 2;
/// Cycles the SPI of one SE spends per work-group (resource allocation, SGPR/VGPR
/// initialisation) before the next one: chosen so that the 1024 one-wave work-groups of the
/// captured gemm (gemm_run_0) take about the hardware's time, not derived from a document.
pub const WG_LAUNCH: u64 = 32;
/// Cycles from the DISPATCH_DIRECT to the first wave.
pub const DISPATCH_LATENCY: u64 = 200;
/// Cycles from the last wave's end to the end-of-kernel.
pub const DRAIN_LATENCY: u64 = 100;

/// Cycles a 16x16x16 WMMA keeps its SIMD busy (wave32).
pub const WMMA_ISSUE: u64 = 16;
pub const LDS_LATENCY: u64 = 40;

/// What an instruction is for timing and for the SQTT token it produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// No token, no time (s_delay_alu, s_endpgm's own token is the WAVEEND).
    Silent,
    Salu,
    SaluSaveexec,
    Branch,
    Message,
    /// s_nop, s_waitcnt*, s_clause...: an IMMEDIATE token.
    Immediate,
    Barrier,
    /// gfx12 s_barrier_signal (INST BARRIER_SIGNAL).
    BarrierSignal,
    /// gfx12 s_barrier_wait: blocks like s_barrier; no token (`exclude_barrier_wait`).
    BarrierWait,
    Smem,
    Valu,
    ValuTrans,
    Valu64Shift,
    ValuMad64,
    Valu64,
    ValuCmpx,
    /// v_wmma_* (a VALU token on both generations).
    Wmma,
    /// dwords moved, store?, saddr form?, flat?
    Vmem {
        dwords: u8,
        store: bool,
        saddr: bool,
        flat: bool,
    },
    Lds {
        dwords: u8,
        store: bool,
    },
}

impl Class {
    /// Issue cost in cycles for a wave of `lanes` lanes.
    pub fn issue(self, lanes: u32) -> u64 {
        let w64 = u64::from(lanes > 32) + 1;
        match self {
            Class::Silent => 0,
            Class::Valu | Class::ValuCmpx => w64,
            Class::ValuTrans => 4 * w64,
            Class::Valu64Shift => 2 * w64,
            Class::ValuMad64 => 4 * w64,
            Class::Valu64 => 16 * w64,
            Class::Wmma => WMMA_ISSUE * w64,
            Class::Vmem { dwords, .. } | Class::Lds { dwords, .. } => u64::from(dwords.max(1)),
            _ => 1,
        }
    }

    /// The RDNA3 INST `op` of this class (None: VALUINST / IMMEDIATE / no token).
    pub fn inst_op_rdna3(self) -> Option<u32> {
        Some(match self {
            Class::Salu => 0x00,
            Class::Smem => 0x01,
            Class::Message => 0x09,
            Class::ValuTrans => 0x0b,
            Class::Valu64Shift => 0x0d,
            Class::ValuMad64 => 0x0e,
            Class::Valu64 => 0x0f,
            Class::Barrier => 0x13,
            Class::SaluSaveexec => 0x72,
            Class::ValuCmpx => 0x73,
            Class::Vmem {
                dwords,
                store,
                saddr,
                flat,
            } => {
                let size = u32::from(dwords.clamp(1, 4)) - 1;
                match (flat, store) {
                    (true, false) => 0x1c,
                    (true, true) => 0x1d + size,
                    (false, false) => {
                        if saddr {
                            0x21
                        } else {
                            0x22
                        }
                    }
                    (false, true) => 0x24 + size + u32::from(!saddr),
                }
            }
            Class::Lds { dwords, store } => {
                if store {
                    0x2b + u32::from(dwords.clamp(1, 4)) - 1
                } else {
                    0x29
                }
            }
            _ => return None,
        })
    }

    /// The RDNA4 INST_RDNA4 `op` (names of docs/sqtt-format.md §8, HEAD column).
    pub fn inst_op_rdna4(self) -> Option<u32> {
        Some(match self {
            Class::Vmem {
                dwords,
                store,
                saddr,
                flat,
            } => {
                let size = u32::from(dwords.clamp(1, 4)) - 1;
                match (flat, store) {
                    (true, false) => 0x1c,
                    (true, true) => 0x1d + size,
                    (false, false) => {
                        if saddr {
                            0x21
                        } else {
                            0x22
                        }
                    }
                    (false, true) => 0x24 + size + u32::from(!saddr),
                }
            }
            Class::Barrier => 0x13,
            Class::BarrierSignal => 0x7a,
            Class::BarrierWait => return None,
            c => return c.inst_op_rdna3(),
        })
    }
}

/// Result latency of a VALU instruction (cycles from its issue until a dependent instruction
/// that `s_delay_alu` makes wait may issue).
pub const VALU_DEP_LATENCY: u64 = 5;
/// Result latency of a transcendental (v_exp, v_rcp, v_sqrt...).
pub const TRANS_DEP_LATENCY: u64 = 10;

/// Vector memory latencies by where the line is found (shader cycles, load issue to data).
pub const L0_HIT: u64 = 150;
pub const L2_HIT: u64 = 500;
pub const DRAM: u64 = 1200;
/// Scalar memory: scalar cache hit, else as a vector access from L2 / memory.
pub const SCALAR_HIT: u64 = 30;
/// Extra cycles per additional cache line an access touches (the address and data paths move
/// one line at a time).
pub const PER_LINE: u64 = 4;
/// DRAM latency varies by up to this many cycles (a per-seed hash of the line and the access).
pub const DRAM_JITTER: u64 = 300;

/// A set-associative cache of line tags with LRU replacement (no data: memory is coherent in
/// the emulator; only hits and misses are modelled).
#[derive(Debug, Clone)]
pub struct Cache {
    line_shift: u32,
    sets: usize,
    ways: usize,
    tags: Vec<u64>,
    stamp: Vec<u32>,
    /// When each way's data arrives (a hit before that waits for the fill in flight).
    ready: Vec<u64>,
    clock: u32,
    pub hits: u64,
    pub misses: u64,
}

impl Cache {
    pub fn new(bytes: usize, ways: usize, line: usize) -> Cache {
        let sets = (bytes / line / ways).max(1);
        Cache {
            line_shift: line.trailing_zeros(),
            sets,
            ways,
            tags: vec![u64::MAX; sets * ways],
            stamp: vec![0; sets * ways],
            ready: vec![0; sets * ways],
            clock: 0,
            hits: 0,
            misses: 0,
        }
    }

    /// Looks `addr`'s line up: on a hit, when its data is there (`Some`); a miss allocates the
    /// line (evicting the least recently used way) and returns `None` (then [`Cache::fill`]).
    pub fn access(&mut self, addr: u64) -> Option<u64> {
        let line = addr >> self.line_shift;
        let set = (line % self.sets as u64) as usize * self.ways;
        self.clock = self.clock.wrapping_add(1);
        let ways = set..set + self.ways;
        if let Some(k) = ways.clone().find(|&k| self.tags[k] == line) {
            self.stamp[k] = self.clock;
            self.hits += 1;
            return Some(self.ready[k]);
        }
        let victim = ways
            .max_by_key(|&k| self.clock.wrapping_sub(self.stamp[k]))
            .unwrap_or(set);
        self.tags[victim] = line;
        self.stamp[victim] = self.clock;
        self.ready[victim] = 0;
        self.misses += 1;
        None
    }

    /// Sets when the data of `addr`'s (just allocated) line arrives.
    pub fn fill(&mut self, addr: u64, at: u64) {
        let line = addr >> self.line_shift;
        let set = (line % self.sets as u64) as usize * self.ways;
        if let Some(k) = (set..set + self.ways).find(|&k| self.tags[k] == line) {
            self.ready[k] = at;
        }
    }
}

/// Blocks of 64 cycles one SIMD's bitmap remembers (a direct-mapped window: a block evicted by
/// one 64 Ki cycles later counts as free).
const ARB_BLOCKS: usize = 1024;

/// The VALU issue slots of one SIMD: at most one VALU instruction issues per cycle, the waves
/// the interpreter runs first (the oldest) keep the cycles they took.
#[derive(Debug, Clone)]
pub struct Arbiter {
    blocks: Vec<(u64, u64)>,
    /// One past the latest cycle taken: from there on everything is free.
    frontier: u64,
}

impl Default for Arbiter {
    /// Allocated on first use (most SIMDs of a small dispatch never issue).
    fn default() -> Self {
        Arbiter {
            blocks: Vec::new(),
            frontier: 0,
        }
    }
}

impl Arbiter {
    fn take(&mut self, t: u64) {
        if self.blocks.is_empty() {
            self.blocks = vec![(u64::MAX, 0); ARB_BLOCKS];
        }
        let b = t / 64;
        let e = &mut self.blocks[(b % ARB_BLOCKS as u64) as usize];
        if e.0 != b {
            *e = (b, 0);
        }
        e.1 |= 1 << (t % 64);
    }

    /// The bits of the 64-cycle block holding cycle `t`.
    #[inline]
    fn block(&self, t: u64) -> u64 {
        let b = t / 64;
        match self.blocks.get((b % ARB_BLOCKS as u64) as usize) {
            Some(&(tag, bits)) if tag == b => bits,
            _ => 0,
        }
    }

    /// The first free cycle at or after `t`.
    #[inline]
    fn next_free(&self, mut t: u64) -> u64 {
        loop {
            let free = !self.block(t) >> (t % 64);
            if free != 0 {
                return t + u64::from(free.trailing_zeros());
            }
            t = (t / 64 + 1) * 64;
        }
    }

    /// How many consecutive cycles from `t` are free, counting up to `n`.
    #[inline]
    fn free_run(&self, mut t: u64, n: u64) -> u64 {
        let mut run = 0;
        while run < n {
            let k = t % 64;
            let free = (!self.block(t) >> k).trailing_ones().min(64 - k as u32);
            run += u64::from(free);
            if free == 0 || k + u64::from(free) < 64 {
                break;
            }
            t += u64::from(free);
        }
        run
    }

    /// The first cycle at or after `t` where `n` consecutive issue cycles are free; takes them.
    pub fn reserve(&mut self, mut t: u64, n: u64) -> u64 {
        let n = n.max(1);
        if t >= self.frontier {
            for k in 0..n {
                self.take(t + k);
            }
            self.frontier = t + n;
            return t;
        }
        loop {
            t = self.next_free(t);
            let run = self.free_run(t, n);
            if run >= n {
                for k in 0..n {
                    self.take(t + k);
                }
                self.frontier = self.frontier.max(t + n);
                return t;
            }
            t += run;
        }
    }
}

/// What the cycle model keeps for one dispatch: caches and the SIMDs' issue slots.
#[derive(Debug, Clone)]
pub struct Timing {
    /// One vector L0 per WGP.
    pub l0: Vec<Cache>,
    /// One scalar cache per WGP.
    pub k0: Vec<Cache>,
    pub l2: Cache,
    /// Per SIMD (WGP-major).
    pub simd: Vec<Arbiter>,
    /// Per WGP: the vector memory (texture address) pipe, the LDS pipe and the scalar memory
    /// pipe, each taking one instruction at a time for its issue cycles.
    pub vmem: Vec<Arbiter>,
    pub lds: Vec<Arbiter>,
    pub smem: Vec<Arbiter>,
    pub seed: u64,
    accesses: u64,
}

/// Cache geometry (bytes, ways, line bytes).
pub const L0_GEOMETRY: (usize, usize, usize) = (16 << 10, 4, 128);
pub const SCALAR_GEOMETRY: (usize, usize, usize) = (16 << 10, 4, 64);
pub const L2_GEOMETRY: (usize, usize, usize) = (4 << 20, 16, 128);

impl Timing {
    /// Cold caches for `units` WGPs of 4 SIMDs each.
    pub fn new(units: usize, seed: u64) -> Timing {
        let c = |(b, w, l): (usize, usize, usize)| Cache::new(b, w, l);
        Timing {
            l0: vec![c(L0_GEOMETRY); units],
            k0: vec![c(SCALAR_GEOMETRY); units],
            l2: c(L2_GEOMETRY),
            simd: vec![Arbiter::default(); units * 4],
            vmem: vec![Arbiter::default(); units],
            lds: vec![Arbiter::default(); units],
            smem: vec![Arbiter::default(); units],
            seed,
            accesses: 0,
        }
    }

    fn dram(&mut self, line: u64) -> u64 {
        self.accesses += 1;
        let mut x = self.seed ^ line.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ self.accesses;
        x ^= x >> 33;
        x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        x ^= x >> 33;
        DRAM + x % (DRAM_JITTER + 1)
    }

    /// Latency from L2 on for line address `a` requested at `now`: an L2 hit (waiting for a
    /// fill in flight), else DRAM.
    fn beyond_l0(&mut self, a: u64, now: u64) -> u64 {
        match self.l2.access(a) {
            Some(ready) => L2_HIT.max(ready.saturating_sub(now)),
            None => {
                let lat = self.dram(a >> 7);
                self.l2.fill(a, now + lat);
                lat
            }
        }
    }

    /// Latency of a vector access issued at `now` by a wave of WGP `unit` touching the
    /// (sorted, distinct) 128-byte `lines`: the slowest line, plus [`PER_LINE`] for each line
    /// after the first. Stores and atomics are written through to L2 (their L0 lines are not
    /// allocated).
    pub fn vector(&mut self, unit: usize, now: u64, lines: &[u64], store: bool) -> u64 {
        let mut worst = 0;
        for &l in lines {
            let a = l << 7;
            let l0 = if store {
                None
            } else {
                self.l0.get_mut(unit).map(|c| c.access(a))
            };
            let lat = match l0 {
                Some(Some(ready)) => L0_HIT.max(ready.saturating_sub(now)),
                Some(None) => {
                    let lat = L0_HIT.max(self.beyond_l0(a, now));
                    if let Some(c) = self.l0.get_mut(unit) {
                        c.fill(a, now + lat);
                    }
                    lat
                }
                None => self.beyond_l0(a, now),
            };
            worst = worst.max(lat);
        }
        worst + PER_LINE * (lines.len().max(1) as u64 - 1)
    }

    /// Latency of a scalar load of `bytes` at `addr` issued at `now` by a wave of WGP `unit`.
    pub fn scalar(&mut self, unit: usize, now: u64, addr: u64, bytes: u64) -> u64 {
        let (first, last) = (addr >> 6, (addr + bytes.max(1) - 1) >> 6);
        let mut worst = 0;
        for l in first..=last {
            let a = l << 6;
            let lat = match self.k0.get_mut(unit).map(|c| c.access(a)) {
                Some(Some(ready)) => SCALAR_HIT.max(ready.saturating_sub(now)),
                _ => {
                    let lat = SCALAR_HIT.max(self.beyond_l0(a, now));
                    if let Some(c) = self.k0.get_mut(unit) {
                        c.fill(a, now + lat);
                    }
                    lat
                }
            };
            worst = worst.max(lat);
        }
        worst
    }
}
