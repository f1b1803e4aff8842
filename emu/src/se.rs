//! The emulated shader engines ([`EmuShaderEngines`]): a dispatch's work-groups are spread over
//! SEs, shader arrays, WGPs and SIMDs like the device properties say, their waves are
//! interpreted ([`super::exec`]) with the initial SGPR/VGPR state the kernel descriptor asks for,
//! timed by the [cycle model](super::cycles), and recorded for SQTT ([`super::sqtt_enc`]).
//!
//! Placement: work-group `g` goes to SE `g % num_se`; within the SE the `k = g / num_se`-th
//! group goes to SA `k % 2`, WGP `(k / 2) % wgps_per_sa`; its waves take SIMDs round-robin and,
//! on each SIMD, the wave slot (of 16) that frees up first. Work-groups run one after another in
//! the interpreter (their memory effects are sequential), but their waves' clocks overlap as the
//! placement allows, which is what the SQTT stream shows.

use traces::target::{Family, GfxTarget};

use super::arch::EmuArch;
use super::code::ProgramCache;
use super::cycles::{self, Class, CYCLES_PER_TICK};
use super::exec::{self, Ctx, Fault, State, Stop, Wave, EXEC};
use super::mem::Memory;
use super::regfile::RegFile;
use super::shader::{DeviceFault, DispatchInfo, DispatchResult, ShaderEngines};
use super::sqtt_enc::{self, Ev, EvKind, Written};
use runtime::regs::{self, IpRegs};

/// SGPR-file slot of ttmp0 (gfx11/gfx12 operand encoding 108..=123).
const TTMP0: usize = 108;
/// Wave slots per SIMD.
const SLOTS: usize = 16;
const SIMDS_PER_WGP: usize = 4;

/// Register addresses the engines read for SQTT.
#[derive(Debug, Clone, Default)]
struct TraceRegs {
    mask: u32,
    token_mask: u32,
    userdata: [u32; 2],
    simd_sel: (u32, u32),
    wgp_sel: (u32, u32),
    sa_sel: (u32, u32),
    exclude: (u32, u32),
}

fn field(r: &regs::Reg, name: &str) -> (u32, u32) {
    r.def
        .field(name)
        .map(|f| (u32::from(f.lo), u32::from(f.hi)))
        .unwrap_or((0, 0))
}

fn get_field(v: u32, (lo, hi): (u32, u32)) -> u32 {
    let w = hi - lo + 1;
    (v >> lo) & if w >= 32 { u32::MAX } else { (1 << w) - 1 }
}

impl TraceRegs {
    fn new(arch: EmuArch) -> TraceRegs {
        let gc = IpRegs::new(
            regs::gc_table(arch.gc_version()).unwrap_or(&regs::GC_11_0_0),
            arch.bases("GC"),
        );
        let mut t = TraceRegs::default();
        if let Ok(r) = gc.get("SQ_THREAD_TRACE_MASK") {
            t.mask = r.addr;
            t.simd_sel = field(&r, "simd_sel");
            t.wgp_sel = field(&r, "wgp_sel");
            t.sa_sel = field(&r, "sa_sel");
        }
        if let Ok(r) = gc.get("SQ_THREAD_TRACE_TOKEN_MASK") {
            t.token_mask = r.addr;
            t.exclude = field(&r, "token_exclude");
        }
        for (i, n) in ["SQ_THREAD_TRACE_USERDATA_2", "SQ_THREAD_TRACE_USERDATA_3"]
            .iter()
            .enumerate()
        {
            t.userdata[i] = gc.get(n).map(|r| r.addr).unwrap_or(0);
        }
        t
    }
}

/// Running counters (the benchmark and tests read them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineStats {
    pub dispatches: u64,
    pub waves: u64,
    pub wave_instructions: u64,
}

/// One SE's capture in progress.
#[derive(Debug, Default)]
struct SeTrace {
    events: Vec<Ev>,
    written: Written,
    /// Whether this SE traced instructions in the last dispatch (its LAYOUT_HEADER says so).
    itrace: bool,
}

/// The emulated shader engines: the default for emulated gfx11 and gfx12 devices.
pub struct EmuShaderEngines {
    arch: EmuArch,
    /// Shader engines work-groups are spread over (the arch's, or fewer on a smaller part).
    pub num_se: u32,
    target: GfxTarget,
    cache: ProgramCache,
    /// A dispatch running more wave-instructions than this is reported as a device hang.
    pub max_wave_instructions: u64,
    pub stats: EngineStats,
    tr: TraceRegs,
    /// Absolute cycle the capture started (None: no capture active).
    t0: Option<u64>,
    ses: Vec<SeTrace>,
    seq: u64,
    /// What the last finished streams contained, per SE.
    pub last_written: Vec<Written>,
    /// Seed of the cycle model's DRAM latency variation (same seed, same timing).
    pub seed: u64,
    /// Performance-counter events of the last dispatch (taken by the CP).
    counts: Option<super::pmc::DispatchCounts>,
}

/// Default bound on a dispatch's work (≈ 10 s of interpretation): beyond it the dispatch is
/// reported as hung, like a kernel that never ends.
pub const DEFAULT_MAX_WAVE_INSTRUCTIONS: u64 = 200_000_000;

impl EmuShaderEngines {
    pub fn new(arch: EmuArch) -> Self {
        let (maj, min, step) = arch.gc_version();
        let tv = maj * 10000 + min * 100 + step;
        let tv = if arch == EmuArch::Gfx1201 { 120001 } else { tv };
        EmuShaderEngines {
            arch,
            num_se: arch.num_se(),
            target: GfxTarget::from_target_version(tv),
            cache: ProgramCache::default(),
            max_wave_instructions: DEFAULT_MAX_WAVE_INSTRUCTIONS,
            stats: EngineStats::default(),
            tr: TraceRegs::new(arch),
            t0: None,
            ses: Vec::new(),
            seq: 0,
            last_written: Vec::new(),
            seed: 0,
            counts: None,
        }
    }

    /// Whether this target's instructions can be interpreted (gfx11 and gfx12).
    pub fn can_execute(&self) -> bool {
        matches!(self.target.family(), Some(Family::Rdna3 | Family::Rdna4))
    }

    fn gfx12(&self) -> bool {
        self.target.family() == Some(Family::Rdna4)
    }

    fn push(&mut self, se: usize, t: u64, kind: EvKind) {
        self.seq += 1;
        if let Some(s) = self.ses.get_mut(se) {
            s.events.push(Ev {
                t,
                seq: self.seq,
                kind,
            });
        }
    }
}

/// Reads the code from `pc` to the end of its mapping (at most 1 MiB).
pub(crate) fn read_code(mem: &Memory, pc: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let mut chunk = vec![0u8; 4096];
    // The first piece may end at a page boundary.
    let first = (4096 - (pc % 4096)) as usize;
    let mut va = pc;
    let mut n = first;
    while out.len() < (1 << 20) {
        let b = &mut chunk[..n];
        if mem.read(va, b).is_err() {
            // Try dword by dword up to the end of the mapping.
            for k in 0..n / 4 {
                let mut d = [0u8; 4];
                if mem.read(va + 4 * k as u64, &mut d).is_err() {
                    return out;
                }
                out.extend_from_slice(&d);
            }
            return out;
        }
        out.extend_from_slice(b);
        va += n as u64;
        n = 4096;
    }
    out
}

struct Placement {
    sa: u8,
    wgp: u8,
    simd: u8,
    slot: u8,
}

impl ShaderEngines for EmuShaderEngines {
    fn dispatch(
        &mut self,
        regs: &RegFile,
        mem: &mut Memory,
        d: &DispatchInfo,
    ) -> Result<DispatchResult, DeviceFault> {
        if !self.can_execute() {
            return Err(DeviceFault {
                va: d.pgm_addr,
                reason: format!(
                    "the emulated {} shader engines cannot execute {} code yet (no decoder)",
                    self.target, self.target
                ),
                mmu: false,
            });
        }
        self.stats.dispatches += 1;
        let lanes: u32 = if d.wave32 { 32 } else { 64 };
        let code = read_code(mem, d.pgm_addr);
        let prog = self.cache.get(d.pgm_addr, &code, self.target);
        let granule = if lanes == 32 { 8 } else { 4 };
        let vgprs = (((d.rsrc1 & 0x3F) + 1) * granule).min(256) as usize;
        let scratch_en = d.rsrc2 & 1;
        let wavesize = (d.tmpring_size >> 12) & 0x7FFF;
        let priv_bytes = if scratch_en != 0 {
            wavesize * 256 / lanes
        } else {
            0
        };
        let local = [d.local[0].max(1), d.local[1].max(1), d.local[2].max(1)];
        let threads = local[0] * local[1] * local[2];
        let nwaves = threads.div_ceil(lanes) as usize;
        let grid = d.grid;
        let total_wg = u64::from(grid[0]) * u64::from(grid[1]) * u64::from(grid[2]);
        let num_se = self.num_se.max(1) as usize;
        let props = self.arch.properties(0);
        let prop = |k: &str| {
            props
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| *v)
                .unwrap_or(1)
        };
        let sa_per_se = prop("simd_arrays_per_engine").max(1) as usize;
        let wgp_per_sa = (prop("cu_per_simd_array") / 2).max(1) as usize;
        let lds_bytes = (d.lds_bytes as usize).max(4);

        // Tracing: which SEs trace instructions, and which SIMD.
        let tracing = d.sqtt && self.t0.is_some();
        let mut itrace = vec![false; num_se];
        let mut sel = vec![(0u32, 0u32, 0u32); num_se];
        if tracing {
            for se in 0..num_se {
                let m = regs.read_se(self.tr.mask, se as u32);
                let tm = regs.read_se(self.tr.token_mask, se as u32);
                let excl = get_field(tm, self.tr.exclude);
                itrace[se] = excl & (1 << 8) == 0;
                sel[se] = (
                    get_field(m, self.tr.sa_sel),
                    get_field(m, self.tr.wgp_sel),
                    get_field(m, self.tr.simd_sel),
                );
            }
            if self.ses.len() < num_se {
                self.ses.resize_with(num_se, SeTrace::default);
            }
            for (s, it) in self.ses.iter_mut().zip(&itrace) {
                s.itrace = *it;
            }
        }

        let start = d.clock * CYCLES_PER_TICK + cycles::DISPATCH_LATENCY;
        // slot_free[se][sa][wgp][simd][slot]
        let mut slot_free = vec![[[0u64; SLOTS]; SIMDS_PER_WGP]; num_se * sa_per_se * wgp_per_sa];
        // Cold caches and free SIMDs for every dispatch.
        let mut timing = cycles::Timing::new(num_se * sa_per_se * wgp_per_sa, self.seed);
        let mut launch = vec![start; num_se];
        let mut end_max = start;
        let mut budget = self.max_wave_instructions;
        let mut lds = vec![0u8; lds_bytes];
        let mut waves: Vec<Wave> = Vec::with_capacity(nwaves);
        let mut places: Vec<Placement> = Vec::with_capacity(nwaves);
        // Each wave's active lanes at launch (its WAVESTART carries the count).
        let mut active: Vec<u8> = Vec::with_capacity(nwaves);
        // Performance counters per (SE, SA, WGP), and each unit's wave lifetimes.
        let mut counts = super::pmc::DispatchCounts::default();
        let mut lifetimes: std::collections::HashMap<(u32, u32, u32), Vec<(u64, u64)>> =
            Default::default();

        for g in 0..total_wg {
            let [gx, gy, gz] = d.group_xyz(g);
            let se = (g % num_se as u64) as usize;
            let k = (g / num_se as u64) as usize;
            let sa = k % sa_per_se;
            let wgp = (k / sa_per_se) % wgp_per_sa;
            let unit = (se * sa_per_se + sa) * wgp_per_sa + wgp;
            let first_simd = (k / (sa_per_se * wgp_per_sa)) % SIMDS_PER_WGP;
            // Choose slots; the work-group starts when all its waves have one.
            places.clear();
            let mut wg_start = launch[se];
            for wv in 0..nwaves {
                let simd = (first_simd + wv) % SIMDS_PER_WGP;
                let slots = &slot_free[unit][simd];
                let taken: Vec<u8> = places
                    .iter()
                    .filter(|p| p.simd as usize == simd)
                    .map(|p| p.slot)
                    .collect();
                let (slot, free) = slots
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !taken.contains(&(*i as u8)))
                    .min_by_key(|(_, t)| **t)
                    .map(|(i, t)| (i, *t))
                    .unwrap_or((0, 0));
                wg_start = wg_start.max(free);
                places.push(Placement {
                    sa: sa as u8,
                    wgp: wgp as u8,
                    simd: simd as u8,
                    slot: slot as u8,
                });
            }
            lds.iter_mut().for_each(|b| *b = 0);
            waves.clear();
            active.clear();
            for (wv, p) in places.iter().enumerate() {
                let mut w = Wave::new(lanes, vgprs, priv_bytes);
                if self.gfx12() {
                    // Architected SGPRs: the work-group id is in TTMP9 (x) and TTMP7 (y in
                    // [15:0], z in [31:16]) whatever the descriptor enables.
                    w.s[TTMP0 + 9] = gx;
                    w.s[TTMP0 + 7] = (gy & 0xFFFF) | (gz << 16);
                    w.split_counters = true;
                }
                let m = d.wave_init(
                    &mut w.s,
                    w.v.get_mut(0).map(|v| &mut v[..]),
                    [gx, gy, gz],
                    wv,
                    nwaves,
                    lanes,
                );
                w.s[EXEC] = m as u32;
                active.push(m.count_ones() as u8);
                if lanes == 64 {
                    w.s[EXEC + 1] = (m >> 32) as u32;
                }
                w.time = wg_start + cycles::WAVE_LAUNCH * wv as u64;
                w.unit = unit as u32;
                w.simd = (unit * SIMDS_PER_WGP + p.simd as usize) as u32;
                let traced = tracing
                    && itrace[se]
                    && (u32::from(p.sa), u32::from(p.wgp), u32::from(p.simd)) == sel[se];
                if traced {
                    w.trace = Some(Vec::new());
                }
                waves.push(w);
            }
            launch[se] = wg_start + cycles::WG_LAUNCH + cycles::WAVE_LAUNCH * nwaves as u64;
            let starts: Vec<u64> = waves.iter().map(|w| w.time).collect();

            // Run the work-group: each wave until a barrier or its end, then release barriers.
            let mut cx = Ctx {
                mem,
                lds: &mut lds,
                prog: &prog,
                timing: &mut timing,
            };
            loop {
                let mut progressed = false;
                for w in waves.iter_mut() {
                    match exec::run(w, &mut cx, &mut budget) {
                        Ok(ran) => progressed |= ran,
                        Err(Stop::Budget) => {
                            return Err(hang(&prog, w, self.max_wave_instructions));
                        }
                        Err(Stop::Fault(f)) => return Err(fault(f)),
                    }
                }
                if !barrier_round(&mut waves, progressed, |w| (&mut w.state, &mut w.time)) {
                    break;
                }
            }

            for (wv, (w, p)) in waves.iter_mut().zip(places.iter()).enumerate() {
                self.stats.wave_instructions += w.insts;
                self.stats.waves += 1;
                let end = w.time;
                let key = (se as u32, u32::from(p.sa), u32::from(p.wgp));
                let u = counts.units.entry(key).or_default();
                u.waves += 1;
                u.wave_cycles += end.saturating_sub(starts[wv]);
                u.insts.add(&w.pmc);
                lifetimes.entry(key).or_default().push((starts[wv], end));
                end_max = end_max.max(end);
                if let Some(s) = slot_free.get_mut(unit) {
                    s[p.simd as usize][p.slot as usize] = end + 1;
                }
                if tracing {
                    let st = starts[wv];
                    self.push(
                        se,
                        st,
                        EvKind::WaveStart {
                            sa: p.sa,
                            wgp: p.wgp,
                            simd: p.simd,
                            slot: p.slot,
                            lanes: active[wv],
                        },
                    );
                    if let Some(tr) = w.trace.take() {
                        for (t, class, taken) in tr {
                            let kind = token(class, taken, p.slot, self.gfx12());
                            if let Some(kind) = kind {
                                self.push(se, t.max(st), kind);
                            }
                        }
                    }
                    self.push(
                        se,
                        end.max(st),
                        EvKind::WaveEnd {
                            sa: p.sa,
                            wgp: p.wgp,
                            simd: p.simd,
                            slot: p.slot,
                        },
                    );
                }
            }
        }
        for (k, mut iv) in lifetimes {
            if let Some(u) = counts.units.get_mut(&k) {
                u.busy_cycles = super::pmc::busy_cycles(&mut iv);
            }
        }
        self.counts = Some(counts);
        let cyc = end_max + cycles::DRAIN_LATENCY - d.clock * CYCLES_PER_TICK;
        Ok(DispatchResult {
            ticks: cyc.div_ceil(CYCLES_PER_TICK).max(1),
        })
    }

    fn take_counts(&mut self) -> Option<super::pmc::DispatchCounts> {
        self.counts.take()
    }

    fn sqtt_start(&mut self, num_se: u32) {
        self.ses = (0..num_se).map(|_| SeTrace::default()).collect();
        self.t0 = None;
    }

    fn sqtt_reg_write(&mut self, addr: u32, value: u32, clock: u64) {
        let t = clock * CYCLES_PER_TICK;
        if self.t0.is_none() {
            self.t0 = Some(t);
        }
        let ev = if self.tr.userdata.contains(&addr) {
            Some(EvKind::Reg {
                subop: addr as u16,
                value,
                config: false,
            })
        } else if (0x2E00..0x2F00).contains(&addr) {
            Some(EvKind::Reg {
                subop: (addr - 0x2E00) as u16,
                value,
                config: true,
            })
        } else {
            None
        };
        if let Some(k) = ev {
            for se in 0..self.ses.len() {
                self.push(se, t, k);
            }
        }
    }

    fn sqtt_finish(&mut self, se: u32) -> Vec<u8> {
        let Some(t0) = self.t0 else {
            return Vec::new();
        };
        let gfx12 = self.gfx12();
        let Some(s) = self.ses.get_mut(se as usize) else {
            return Vec::new();
        };
        let mut ev = std::mem::take(&mut s.events);
        match sqtt_enc::encode(&mut ev, t0, gfx12, s.itrace) {
            Ok((bytes, w)) => {
                s.written = w;
                if self.last_written.len() <= se as usize {
                    self.last_written
                        .resize(se as usize + 1, Written::default());
                }
                self.last_written[se as usize] = w;
                bytes
            }
            Err(_) => Vec::new(),
        }
    }
}

fn token(class: Class, taken: bool, slot: u8, gfx12: bool) -> Option<EvKind> {
    match class {
        Class::Silent => None,
        Class::Valu | Class::Wmma => Some(EvKind::Valu { slot }),
        // RDNA4 issues v_cmpx as a plain VALUINST (the gfx1200 gemm capture), RDNA3 as
        // INST VALU_CMPX.
        Class::ValuCmpx if gfx12 => Some(EvKind::Valu { slot }),
        Class::Immediate => Some(EvKind::Immediate { slot }),
        Class::Branch => Some(EvKind::Inst {
            slot,
            op: if taken { 0x03 } else { 0x04 },
        }),
        c => {
            let op = if gfx12 {
                c.inst_op_rdna4()
            } else {
                c.inst_op_rdna3()
            }?;
            Some(EvKind::Inst { slot, op: op as u8 })
        }
    }
}

fn fault(f: Fault) -> DeviceFault {
    match f {
        Fault::Memory { va, len, pc, what } => DeviceFault {
            va,
            reason: format!(
                "memory fault: {what} of {len} bytes at {va:#x} is not mapped (wave at PC {pc:#x})"
            ),
            mmu: true,
        },
        Fault::Illegal { pc, what } => DeviceFault {
            va: pc,
            reason: format!("illegal instruction at PC {pc:#x}: {what}"),
            mmu: false,
        },
    }
}

/// After a round of running a work-group's waves: when every wave that has not ended waits
/// at the barrier, releases them all one cycle after the last arrived. Whether to run another
/// round (`false`: no wave waits at a barrier, or nothing progressed). Both interpreters'.
pub(crate) fn barrier_round<W>(
    waves: &mut [W],
    progressed: bool,
    f: impl Fn(&mut W) -> (&mut State, &mut u64),
) -> bool {
    let mut waiting: Vec<usize> = Vec::new();
    let mut any_ready = false;
    let mut t = 0;
    for (i, w) in waves.iter_mut().enumerate() {
        let (state, time) = f(w);
        if *state == State::Barrier {
            waiting.push(i);
            t = t.max(*time);
        }
        any_ready |= *state == State::Ready;
    }
    if waiting.is_empty() {
        return false;
    }
    if !any_ready {
        for &i in &waiting {
            let (state, time) = f(&mut waves[i]);
            *time = t + 1;
            *state = State::Ready;
        }
        return true;
    }
    progressed
}

fn hang(prog: &super::code::Program, w: &Wave, limit: u64) -> DeviceFault {
    let pc = prog.base + u64::from(w.pc);
    DeviceFault {
        va: pc,
        reason: format!(
            "device hang: the dispatch ran more than {limit} wave-instructions without finishing \
             (a wave was at PC {pc:#x}); the kernel does not terminate"
        ),
        mmu: false,
    }
}
