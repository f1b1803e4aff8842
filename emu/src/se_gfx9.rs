//! The emulated gfx950 shader engines ([`Gfx9ShaderEngines`]): each XCC's copy of a dispatch runs
//! the work-groups the hardware gives that XCC, as wave64 on the gfx9 interpreter
//! ([`super::exec_gfx9`]).
//!
//! Placement: the CP of every XCC sees the same DISPATCH_DIRECT; work-group `g` (x fastest) runs
//! on XCC `g % num_xcc` (CDNA3 ISA guide, "workgroups are dispatched to XCCs round-robin"; the
//! gfx950 captures' plus and gemm kernels only have waves on the XCCs that order predicts).
//! Within the XCC the `k = g / num_xcc`-th group goes to SE `k % se_per_xcc`, CU
//! `(k / se_per_xcc) % cu_per_se`; its waves take SIMDs 0..3 round-robin. Work-groups run one
//! after another in the interpreter, their clocks overlap per SE as the SPI would launch them.
//!
//! **Not modelled yet**: the gfx9 SQTT encoder. With thread trace on, these engines record the
//! instruction walk of every traced wave ([`Gfx9ShaderEngines::last_walks`]) but write no SQTT
//! bytes: an emulated gfx950 capture still has empty SQTT blobs.

use traces::target::GfxTarget;

use super::arch::EmuArch;
use super::cycles::{self, CYCLES_PER_TICK};
use super::exec::State;
use super::exec_gfx9::{self as x9, Class9, Ctx9, Program9, Stop9, Wave9, EXEC};
use super::mem::Memory;
use super::regfile::RegFile;
use super::se::read_code;
use super::shader::{DeviceFault, DispatchInfo, DispatchResult, ShaderEngines};

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
        _regs: &RegFile,
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
        let user_n = DispatchInfo::user_sgpr_count(d.rsrc2) as usize;
        let tgid_en = [(d.rsrc2 >> 7) & 1, (d.rsrc2 >> 8) & 1, (d.rsrc2 >> 9) & 1];
        let tg_size_en = (d.rsrc2 >> 10) & 1;
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
        let cu_per_se = 9u64;
        let lds_bytes = (d.lds_bytes as usize).max(4);
        let start = d.clock * CYCLES_PER_TICK + cycles::DISPATCH_LATENCY;
        let mut launch = vec![start; se_per_xcc as usize];
        let mut end_max = start;
        let mut budget = self.max_wave_instructions;
        let mut lds = vec![0u8; lds_bytes];
        let tracing = d.sqtt;
        let mut g = xcc;
        while g < total {
            let gx = (g % u64::from(grid[0])) as u32;
            let gy = ((g / u64::from(grid[0])) % u64::from(grid[1])) as u32;
            let gz = (g / (u64::from(grid[0]) * u64::from(grid[1]))) as u32;
            let k = g / num_xcc;
            let se_local = (k % se_per_xcc) as usize;
            let cu = ((k / se_per_xcc) % cu_per_se) as u32;
            let se = (xcc * se_per_xcc) as u32 + se_local as u32;
            lds.iter_mut().for_each(|b| *b = 0);
            let wg_start = launch[se_local];
            let mut waves: Vec<Wave9> = Vec::with_capacity(nwaves);
            for wv in 0..nwaves {
                let mut w = Wave9::new(512, 256, priv_bytes);
                for (i, v) in d.user_data.iter().enumerate().take(user_n) {
                    w.s[i] = *v;
                }
                let mut si = user_n;
                for (dim, en) in tgid_en.iter().enumerate() {
                    if *en != 0 {
                        w.s[si] = [gx, gy, gz][dim];
                        si += 1;
                    }
                }
                if tg_size_en != 0 {
                    w.s[si] = ((wv as u32) << 6) | nwaves as u32;
                    si += 1;
                }
                if scratch_en != 0 {
                    w.s[si] = 0; // private segment wave offset: scratch is per wave here
                }
                let mut m = 0u64;
                for l in 0..64u32 {
                    let t = wv as u32 * 64 + l;
                    if t >= threads {
                        break;
                    }
                    // gfx90a+ packs the work-item ids into v0: x [9:0], y [19:10], z [29:20].
                    let x = t % local[0];
                    let y = (t / local[0]) % local[1];
                    let z = t / (local[0] * local[1]);
                    w.v[0][l as usize] = x | (y << 10) | (z << 20);
                    m |= 1 << l;
                }
                w.s[EXEC] = m as u32;
                w.s[EXEC + 1] = (m >> 32) as u32;
                w.time = wg_start + cycles::WAVE_LAUNCH * wv as u64;
                if tracing {
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
                let waiting: Vec<usize> = (0..waves.len())
                    .filter(|&i| waves[i].state == State::Barrier)
                    .collect();
                if waiting.is_empty() {
                    break;
                }
                if waves.iter().all(|w| w.state != State::Ready) {
                    let t = waiting.iter().map(|&i| waves[i].time).max().unwrap_or(0) + 1;
                    for &i in &waiting {
                        waves[i].time = t;
                        waves[i].state = State::Ready;
                    }
                    continue;
                }
                if !progressed {
                    break;
                }
            }
            for (wv, w) in waves.iter_mut().enumerate() {
                self.waves += 1;
                self.wave_instructions += w.insts;
                end_max = end_max.max(w.time);
                if let Some(tr) = w.trace.take() {
                    self.last_walks.push(Walk9 {
                        se,
                        cu,
                        simd: (wv % 4) as u32,
                        insts: tr,
                    });
                }
            }
            g += num_xcc;
        }
        let cyc = end_max + cycles::DRAIN_LATENCY - d.clock * CYCLES_PER_TICK;
        Ok(DispatchResult {
            ticks: cyc.div_ceil(CYCLES_PER_TICK).max(1),
        })
    }
}
