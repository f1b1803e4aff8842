//! Interpreter speed: wave-instructions per second on the tiled matmul fixture (one core).
//! `cargo bench -p runtime --bench interp`
//!
//! Both the wall time of the dispatches and the CPU time of the thread running them are
//! measured; on a loaded machine the CPU-time figure is the one that says what one core does.
//! `INTERP_BENCH_LAUNCHES` sets the number of launches (default 3; 1 for profiling runs).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::time::{clock_gettime, ClockId};

use emu::se::EngineStats;
use emu::{
    DeviceFault, DispatchInfo, DispatchResult, EmuArch, EmuConfig, EmuPlatform, EmuShaderEngines,
    Memory, RegFile, ShaderEngines,
};
use runtime::platform::{AllocKind, Platform};
use runtime::{Device, DeviceOptions};

/// Engine counters, wall seconds and thread-CPU seconds spent in dispatches.
type Stats = (EngineStats, f64, f64);

struct Counted {
    inner: EmuShaderEngines,
    stats: Arc<Mutex<Stats>>,
}

/// CPU time consumed by the calling thread.
fn thread_cpu() -> Duration {
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(Duration::from)
        .unwrap_or_default()
}

impl ShaderEngines for Counted {
    fn dispatch(
        &mut self,
        r: &RegFile,
        m: &mut Memory,
        d: &DispatchInfo,
    ) -> Result<DispatchResult, DeviceFault> {
        let (t, c) = (Instant::now(), thread_cpu());
        let res = self.inner.dispatch(r, m, d);
        let (wall, cpu) = (t.elapsed(), thread_cpu().saturating_sub(c));
        let mut s = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        s.0 = self.inner.stats;
        s.1 += wall.as_secs_f64();
        s.2 += cpu.as_secs_f64();
        res
    }
}

fn main() {
    let n = 256u32;
    let elf = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/kernels/emu/matmul.hsaco"
    ))
    .expect("matmul fixture");
    let launches: u32 = std::env::var("INTERP_BENCH_LAUNCHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    let stats = Arc::new(Mutex::new((EngineStats::default(), 0.0, 0.0)));
    let emu = EmuPlatform::with_shader_engines(
        EmuConfig::new(EmuArch::Gfx1100),
        Box::new(Counted {
            inner: EmuShaderEngines::new(EmuArch::Gfx1100),
            stats: stats.clone(),
        }),
    );
    let p: Arc<dyn Platform> = Arc::new(emu);
    let opts = DeviceOptions {
        sqtt: false,
        ..DeviceOptions::default()
    };
    let mut dev = Device::new(
        Box::new(runtime::kfd::KfdIface::open(p, 0).expect("kfd")),
        opts,
    )
    .expect("device");
    let prg = dev.load_program(&elf).expect("load");
    let bytes = u64::from(n * n * 4);
    let a = dev.alloc(bytes, AllocKind::VRAM).expect("alloc");
    let data: Vec<u8> = (0..n * n)
        .flat_map(|i| ((i % 7) as f32).to_bits().to_le_bytes())
        .collect();
    dev.copyin(&a, &data).expect("copyin");
    let c = dev.alloc(bytes, AllocKind::VRAM).expect("alloc");
    for _ in 0..launches {
        dev.launch(&prg, &[&c, &a, &a], &[n], [n / 16, n / 16, 1], [16, 16, 1])
            .expect("launch");
        dev.synchronize().expect("sync");
    }
    let (s, wall, cpu) = *stats.lock().unwrap_or_else(|p| p.into_inner());
    let per_s = |secs: f64| s.wave_instructions as f64 / secs / 1e6;
    println!(
        "interp/matmul {n}x{n}: {} dispatches, {} waves, {} wave-instructions; \
         wall {:.3} s = {:.1} M wave-instructions/s; \
         thread CPU {:.3} s = {:.1} M wave-instructions/s (target >= 20 M/s on one core)",
        s.dispatches,
        s.waves,
        s.wave_instructions,
        wall,
        per_s(wall),
        cpu,
        per_s(cpu)
    );
}
