//! Interpreter speed: wave-instructions per second on the tiled matmul fixture (one core).
//! `cargo bench -p runtime --bench interp`

use std::sync::{Arc, Mutex};
use std::time::Instant;

use runtime::emu::se::EngineStats;
use runtime::emu::{
    DeviceFault, DispatchInfo, DispatchResult, EmuArch, EmuConfig, EmuPlatform, EmuShaderEngines,
    Memory, RegFile, ShaderEngines,
};
use runtime::platform::{AllocKind, Platform};
use runtime::{Device, DeviceOptions};

struct Counted {
    inner: EmuShaderEngines,
    stats: Arc<Mutex<(EngineStats, f64)>>,
}

impl ShaderEngines for Counted {
    fn dispatch(
        &mut self,
        r: &RegFile,
        m: &mut Memory,
        d: &DispatchInfo,
    ) -> Result<DispatchResult, DeviceFault> {
        let t = Instant::now();
        let res = self.inner.dispatch(r, m, d);
        let mut s = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        s.0 = self.inner.stats;
        s.1 += t.elapsed().as_secs_f64();
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
    let stats = Arc::new(Mutex::new((EngineStats::default(), 0.0)));
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
    for _ in 0..3 {
        dev.launch(&prg, &[&c, &a, &a], &[n], [n / 16, n / 16, 1], [16, 16, 1])
            .expect("launch");
        dev.synchronize().expect("sync");
    }
    let (s, secs) = *stats.lock().unwrap_or_else(|p| p.into_inner());
    let rate = s.wave_instructions as f64 / secs;
    println!(
        "interp/matmul {n}x{n}: {} dispatches, {} waves, {} wave-instructions in {:.3} s of dispatch time = {:.1} M wave-instructions/s (target >= 20 M/s)",
        s.dispatches,
        s.waves,
        s.wave_instructions,
        secs,
        rate / 1e6
    );
}
