//! The emulated gfx950 shader engines ([`Gfx9ShaderEngines`]): each XCC's copy of a dispatch runs
//! the work-groups the hardware gives that XCC, as wave64 on the gfx9 interpreter
//! ([`super::exec_gfx9`]).
//!
//! Placement: the CP of every XCC sees the same DISPATCH_DIRECT; work-group `g` (x fastest) runs
//! on XCC `g % num_xcc` (work-groups are dealt to the XCCs round-robin). Within the XCC the
//! `k = g / num_xcc`-th group goes to SE `k % se_per_xcc`, then CU `j % 8` and first SIMD
//! `(j / 8) % 4` with `j = k / se_per_xcc`: the gfx950 gemm capture has 32 single-wave groups
//! on every SE, one per (CU 0..7, SIMD 0..3). Further waves of a group take the next SIMDs, and
//! on each SIMD the wave slot that frees up first. Which SE the SPI starts with is hardware
//! state we do not model: the one-group plus capture ran on SE 2, ours runs on SE 0.
//! Work-groups run one after another in the interpreter; their clocks overlap per SE as the
//! placement allows.
//!
//! SQTT ([`super::sqtt_enc_gfx9`]): every SE writes WAVESTART/WAVEEND for its waves; SEs whose
//! SQ_THREAD_TRACE_TOKEN_MASK enables INST tokens also trace the instructions of CU 0's
//! waves (the runtime's SQ_THREAD_TRACE_MASK cu_sel = sh_sel = 0, all SIMDs).

use traces::target::GfxTarget;

use super::arch::EmuArch;
use super::cycles::{self, CYCLES_PER_TICK};
use super::exec_gfx9::{self as x9, Class9, Ctx9, Program9, Stop9, Wave9, EXEC};
use super::mem::Memory;
use super::pmc::DispatchCounts;
use super::regfile::RegFile;
use super::se::read_code;
use super::shader::{DeviceFault, DispatchInfo, DispatchResult, ShaderEngines};
use super::sqtt_enc_gfx9::{self as enc, Ev9, Ev9Kind, Written9};
use runtime::regs::{self, IpRegs};

/// Wave slots per SIMD (max_waves_per_simd of the gfx950 topology).
const SLOTS: usize = 8;
const CUS_PER_SE: u64 = 8;
/// SQ_THREAD_TRACE_TOKEN_MASK.token_mask bit of CDNA_INST (the CDNA packet type code).
const TOKEN_INST: u32 = 1 << 10;

/// One traced wave's walk: global SE, CU, SIMD, and (issue cycle, byte offset, class, taken).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Walk9 {
    pub se: u32,
    pub cu: u32,
    pub simd: u32,
    pub insts: Vec<(u64, u32, Class9, bool)>,
}

/// The emulated gfx950 shader engines.
pub struct Gfx9ShaderEngines {
    arch: EmuArch,
    target: GfxTarget,
    cache: Option<(u64, std::sync::Arc<Program9>)>,
    pub max_wave_instructions: u64,
    pub waves: u64,
    pub wave_instructions: u64,
    /// Every traced wave's instruction walk (recorded only while thread trace is on; bounded
    /// by the dispatches' size, cleared by whoever reads them).
    pub last_walks: Vec<Walk9>,
    /// SQ_THREAD_TRACE_TOKEN_MASK address and its token_mask field (lo, width).
    token_mask: Option<(u32, u32, u32)>,
    /// Absolute cycle the capture started (None: no capture).
    t0: Option<u64>,
    ses: Vec<Vec<Ev9>>,
    seq: u64,
    /// What the last finished stream of each SE held.
    pub last_written: Vec<Written9>,
    /// What the last dispatch counted for the performance counters.
    counts: Option<DispatchCounts>,
}

impl Gfx9ShaderEngines {
    pub fn new(arch: EmuArch) -> Self {
        Gfx9ShaderEngines {
            arch,
            target: GfxTarget::from_target_version(90500),
            cache: None,
            max_wave_instructions: super::se::DEFAULT_MAX_WAVE_INSTRUCTIONS,
            waves: 0,
            wave_instructions: 0,
            last_walks: Vec::new(),
            token_mask: token_mask_reg(arch),
            t0: None,
            ses: Vec::new(),
            seq: 0,
            last_written: Vec::new(),
            counts: None,
        }
    }

    fn push(&mut self, se: u32, t: u64, kind: Ev9Kind) {
        self.seq += 1;
        if let Some(s) = self.ses.get_mut(se as usize) {
            s.push(Ev9 {
                t,
                seq: self.seq,
                kind,
            });
        }
    }

    fn program(&mut self, mem: &Memory, pc: u64) -> std::sync::Arc<Program9> {
        if let Some((base, p)) = &self.cache {
            if *base == pc {
                return p.clone();
            }
        }
        let code = read_code(mem, pc);
        let p = std::sync::Arc::new(Program9::new(&code, pc, self.target));
        self.cache = Some((pc, p.clone()));
        p
    }
}

fn token_mask_reg(arch: EmuArch) -> Option<(u32, u32, u32)> {
    let table = regs::gc_table(arch.gc_version())?;
    let gc = IpRegs::new(table, arch.bases("GC"));
    let r = gc.get("SQ_THREAD_TRACE_TOKEN_MASK").ok()?;
    let f = r.def.field("token_mask")?;
    Some((r.addr, u32::from(f.lo), f.width()))
}

fn fault(f: crate::exec::Fault) -> DeviceFault {
    match f {
        crate::exec::Fault::Memory { va, len, pc, what } => DeviceFault {
            va,
            reason: format!(
                "memory fault: {what} of {len} bytes at {va:#x} is not mapped (wave at PC {pc:#x})"
            ),
            mmu: true,
        },
        crate::exec::Fault::Illegal { pc, what } => DeviceFault {
            va: pc,
            reason: format!("illegal instruction at PC {pc:#x}: {what}"),
            mmu: false,
        },
    }
}

impl ShaderEngines for Gfx9ShaderEngines {
    fn dispatch(
        &mut self,
        regs: &RegFile,
        mem: &mut Memory,
        d: &DispatchInfo,
    ) -> Result<DispatchResult, DeviceFault> {
        if d.wave32 {
            return Err(DeviceFault {
                va: d.pgm_addr,
                reason: "gfx9 has no wave32 mode (CS_W32_EN set)".into(),
                mmu: false,
            });
        }
        let prog = self.program(mem, d.pgm_addr);
        let scratch_en = d.rsrc2 & 1;
        // gfx9 TMPRING_SIZE.WAVESIZE counts 1 KiB (256-dword) units per wave.
        let wavesize = (d.tmpring_size >> 12) & 0x1FFF;
        let priv_bytes = if scratch_en != 0 {
            wavesize * 1024 / 64
        } else {
            0
        };
        let local = [d.local[0].max(1), d.local[1].max(1), d.local[2].max(1)];
        let threads = local[0] * local[1] * local[2];
        let nwaves = threads.div_ceil(64) as usize;
        let grid = d.grid;
        let total = u64::from(grid[0]) * u64::from(grid[1]) * u64::from(grid[2]);
        let num_xcc = u64::from(d.num_xcc.max(1));
        let xcc = u64::from(d.xcc_id);
        let se_per_xcc = (self.arch.num_se() / self.arch.num_xcc()).max(1) as u64;
        let lds_bytes = (d.lds_bytes as usize).max(4);
        let start = d.clock * CYCLES_PER_TICK + cycles::DISPATCH_LATENCY;
        let mut launch = vec![start; se_per_xcc as usize];
        let mut end_max = start;
        let mut budget = self.max_wave_instructions;
        let mut lds = vec![0u8; lds_bytes];
        let tracing = d.sqtt && self.t0.is_some();
        if tracing && self.ses.len() < self.arch.num_se() as usize {
            self.ses.resize_with(self.arch.num_se() as usize, Vec::new);
        }
        // Which of this XCC's SEs trace instructions.
        let itrace: Vec<bool> = (0..se_per_xcc)
            .map(|s| {
                let se = (xcc * se_per_xcc + s) as u32;
                self.token_mask.is_some_and(|(addr, lo, w)| {
                    let v = (regs.read_se(addr, se) >> lo) & ((1u64 << w) - 1) as u32;
                    v & TOKEN_INST != 0
                })
            })
            .collect();
        let mut slot_free = vec![[[0u64; SLOTS]; 4]; (se_per_xcc * CUS_PER_SE) as usize];
        // Per (global SE, 0, CU): gfx9 banks its SQ counters per SE (the CP sums the CUs).
        // SQ_BUSY_CYCLES is not counted here (it is the SE's SQ busy time, not a CU's).
        let mut counts = DispatchCounts::default();
        let mut g = xcc;
        while g < total {
            let [gx, gy, gz] = d.group_xyz(g);
            let k = g / num_xcc;
            let se_local = (k % se_per_xcc) as usize;
            let j = k / se_per_xcc;
            let cu = (j % CUS_PER_SE) as u32;
            let first_simd = ((j / CUS_PER_SE) % 4) as usize;
            let se = (xcc * se_per_xcc) as u32 + se_local as u32;
            let unit = se_local * CUS_PER_SE as usize + cu as usize;
            lds.iter_mut().for_each(|b| *b = 0);
            // (simd, slot) per wave; the group starts when all its waves have a slot.
            let mut places: Vec<(u8, u8)> = Vec::with_capacity(nwaves);
            let mut wg_start = launch[se_local];
            for wv in 0..nwaves {
                let simd = (first_simd + wv) % 4;
                let (slot, free) = slot_free[unit][simd]
                    .iter()
                    .enumerate()
                    .filter(|(s, _)| !places.contains(&(simd as u8, *s as u8)))
                    .min_by_key(|(_, t)| **t)
                    .map(|(s, t)| (s, *t))
                    .unwrap_or((0, 0));
                wg_start = wg_start.max(free);
                places.push((simd as u8, slot as u8));
            }
            let mut waves: Vec<Wave9> = Vec::with_capacity(nwaves);
            for wv in 0..nwaves {
                let mut w = Wave9::new(512, 256, priv_bytes);
                let m = d.wave_init(
                    &mut w.s,
                    Some(&mut w.v[0][..]),
                    [gx, gy, gz],
                    wv,
                    nwaves,
                    64,
                );
                w.s[EXEC] = m as u32;
                w.s[EXEC + 1] = (m >> 32) as u32;
                w.time = wg_start + cycles::WAVE_LAUNCH * wv as u64;
                if tracing && itrace[se_local] && cu == 0 {
                    w.trace = Some(Vec::new());
                }
                waves.push(w);
            }
            launch[se_local] = wg_start + cycles::WAVE_LAUNCH * nwaves as u64;
            let mut cx = Ctx9 {
                mem,
                lds: &mut lds,
                prog: &prog,
            };
            loop {
                let mut progressed = false;
                for w in waves.iter_mut() {
                    match x9::run(w, &mut cx, &mut budget) {
                        Ok(ran) => progressed |= ran,
                        Err(Stop9::Budget) => {
                            let pc = prog.base + u64::from(w.pc);
                            return Err(DeviceFault {
                                va: pc,
                                reason: format!(
                                    "device hang: the dispatch ran more than {} wave-instructions \
                                     without finishing (a wave was at PC {pc:#x})",
                                    self.max_wave_instructions
                                ),
                                mmu: false,
                            });
                        }
                        Err(Stop9::Fault(f)) => return Err(fault(f)),
                    }
                }
                if !super::se::barrier_round(&mut waves, progressed, |w| {
                    (&mut w.state, &mut w.time)
                }) {
                    break;
                }
            }
            for (wv, w) in waves.iter_mut().enumerate() {
                self.waves += 1;
                self.wave_instructions += w.insts;
                let u = counts.units.entry((se, 0, cu)).or_default();
                u.waves += 1;
                u.wave_cycles += w
                    .time
                    .saturating_sub(wg_start + cycles::WAVE_LAUNCH * wv as u64);
                u.insts.add(&w.pmc);
                end_max = end_max.max(w.time);
                let (simd, slot) = places[wv];
                slot_free[unit][simd as usize][slot as usize] = w.time + 1;
                if !tracing {
                    continue;
                }
                let st = wg_start + cycles::WAVE_LAUNCH * wv as u64;
                let count = (threads - (wv as u32 * 64).min(threads)).min(64) as u8;
                let cu8 = cu as u8;
                self.push(
                    se,
                    st,
                    Ev9Kind::WaveStart {
                        cu: cu8,
                        simd,
                        slot,
                        count,
                    },
                );
                if let Some(tr) = w.trace.take() {
                    for &(t, off, class, taken) in &tr {
                        let len = prog.at(off).map_or(4, |(i, _)| i.len() as u32);
                        let (issue, op) = enc::token(class, len, taken);
                        self.push(
                            se,
                            t.max(st),
                            Ev9Kind::Inst {
                                simd,
                                slot,
                                issue,
                                op,
                            },
                        );
                    }
                    self.last_walks.push(Walk9 {
                        se,
                        cu,
                        simd: u32::from(simd),
                        insts: tr,
                    });
                }
                self.push(
                    se,
                    w.time.max(st),
                    Ev9Kind::WaveEnd {
                        cu: cu8,
                        simd,
                        slot,
                    },
                );
            }
            g += num_xcc;
        }
        self.counts = Some(counts);
        let cyc = end_max + cycles::DRAIN_LATENCY - d.clock * CYCLES_PER_TICK;
        Ok(DispatchResult {
            ticks: cyc.div_ceil(CYCLES_PER_TICK).max(1),
        })
    }

    fn take_counts(&mut self) -> Option<DispatchCounts> {
        self.counts.take()
    }

    fn sqtt_start(&mut self, num_se: u32) {
        // Every XCC's queue turns tracing on; the SEs an earlier XCC drained keep their data
        // (it is in their buffers), so only a fresh capture resets.
        if self.t0.is_none() {
            self.ses = (0..num_se).map(|_| Vec::new()).collect();
            self.last_walks.clear();
        }
    }

    fn sqtt_reg_write(&mut self, _addr: u32, _value: u32, clock: u64) {
        if self.t0.is_none() {
            self.t0 = Some(clock * CYCLES_PER_TICK);
        }
    }

    fn sqtt_finish(&mut self, se: u32) -> Vec<u8> {
        let Some(t0) = self.t0 else {
            return Vec::new();
        };
        let Some(ev) = self.ses.get_mut(se as usize) else {
            return Vec::new();
        };
        let mut ev = std::mem::take(ev);
        let out = match enc::encode(&mut ev, t0) {
            Ok((bytes, w)) => {
                if self.last_written.len() <= se as usize {
                    self.last_written
                        .resize(se as usize + 1, Written9::default());
                }
                self.last_written[se as usize] = w;
                bytes
            }
            Err(_) => Vec::new(),
        };
        // The capture ends when every SE has been drained.
        if self.ses.iter().all(|s| s.is_empty()) && se + 1 == self.ses.len() as u32 {
            self.t0 = None;
        }
        out
    }
}
