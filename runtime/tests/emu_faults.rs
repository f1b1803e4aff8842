//! Bad kernels on the emulated GPU end in a clear device-hang / memory-fault report within a
//! bounded time, and the process (and a fresh device) keeps working.

use std::sync::Arc;
use std::time::{Duration, Instant};

use runtime::emu::{EmuArch, EmuConfig, EmuPlatform, EmuShaderEngines};
use runtime::error::Error;
use runtime::platform::{AllocKind, Platform};
use runtime::{Device, DeviceOptions};

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/../tests/fixtures/kernels/emu/{name}.hsaco",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn opts() -> DeviceOptions {
    DeviceOptions {
        wait_timeout: Duration::from_secs(1),
        compute_ring_size: 1 << 20,
        sdma_ring_size: 1 << 16,
        kernargs_size: 1 << 20,
        staging_chunk: 64 << 10,
        staging_count: 2,
        profile: true,
        sqtt: false,
        sqtt_buffer_size: 1 << 20,
        sqtt_itrace_se_mask: 0b11,
    }
}

fn device(max_insts: u64) -> Device {
    let mut se = EmuShaderEngines::new(EmuArch::Gfx1100);
    se.max_wave_instructions = max_insts;
    let emu = EmuPlatform::with_shader_engines(EmuConfig::new(EmuArch::Gfx1100), Box::new(se));
    let p: Arc<dyn Platform> = Arc::new(emu);
    Device::new(
        Box::new(runtime::kfd::KfdIface::open(p, 0).unwrap()),
        opts(),
    )
    .unwrap()
}

fn run(name: &str, idx: u32) -> (Error, Duration) {
    let mut d = device(5_000_000);
    let prg = d.load_program(&fixture(name)).unwrap();
    let out = d.alloc(4096, AllocKind::VRAM).unwrap();
    let inp = d.alloc(4096, AllocKind::VRAM).unwrap();
    d.copyin(&inp, &idx.to_le_bytes()).unwrap();
    let t = Instant::now();
    d.launch(&prg, &[&out, &inp], &[], [1, 1, 1], [32, 1, 1])
        .unwrap();
    let e = d.synchronize().expect_err("a bad kernel must not complete");
    (e, t.elapsed())
}

fn still_works() {
    // A fresh device in the same process runs a good kernel.
    let mut d = device(5_000_000);
    let prg = d.load_program(&fixture("vadd")).unwrap();
    let a = d.alloc(256, AllocKind::VRAM).unwrap();
    d.copyin(&a, &[0u8; 256]).unwrap();
    d.launch(&prg, &[&a, &a, &a], &[64], [1, 1, 1], [64, 1, 1])
        .unwrap();
    d.synchronize().unwrap();
}

#[test]
fn infinite_loop_is_a_device_hang() {
    let (e, t) = run("bad_loop", 0);
    let Error::DeviceHang(rep) = &e else {
        panic!("expected a device hang, got {e}")
    };
    assert!(rep.mmu_fault.is_none(), "a hang is no memory fault: {e}");
    assert!(e.to_string().contains("timeout"), "{e}");
    assert!(t < Duration::from_secs(30), "reported after {t:?}");
    still_works();
}

#[test]
fn out_of_bounds_store_is_a_memory_fault() {
    let (e, _) = run("bad_oob", 0x1000_0000);
    let Error::DeviceHang(rep) = &e else {
        panic!("expected a device hang, got {e}")
    };
    let f = rep
        .mmu_fault
        .expect("the KFD memory exception names the address");
    assert!(f.not_present);
    assert!(e.to_string().contains("MMU fault"), "{e}");
    still_works();
}

#[test]
fn unknown_instruction_stops_the_queue() {
    let (e, _) = run("bad_inst", 0);
    assert!(matches!(e, Error::DeviceHang(_)), "{e}");
    still_works();
}

#[test]
fn unknown_instruction_is_named_with_pc_and_encoding() {
    // Through the engines directly: the fault text names the PC and the word.
    use runtime::emu::ShaderEngines;
    let mut se = EmuShaderEngines::new(EmuArch::Gfx1100);
    let mut mem = runtime::emu::Memory::new();
    let elf = fixture("bad_inst");
    let co = runtime::program::parse_code_object(&elf).unwrap();
    let base = mem.reserve(co.image.len() as u64 + 0x1000);
    mem.map(base, (co.image.len() as u64).div_ceil(4096) * 4096)
        .unwrap();
    mem.write(base, &co.image).unwrap();
    let out = mem.reserve(4096);
    mem.map(out, 4096).unwrap();
    let args = mem.reserve(4096);
    mem.map(args, 4096).unwrap();
    mem.write64(args, out).unwrap();
    let regs = runtime::emu::RegFile::new(0, 6);
    let d = runtime::emu::DispatchInfo {
        pgm_addr: base + co.kernel.entry_offset,
        rsrc1: co.kernel.rsrc1,
        rsrc2: co.kernel.rsrc2,
        user_data: vec![args as u32, (args >> 32) as u32],
        grid: [1, 1, 1],
        local: [32, 1, 1],
        wave32: true,
        ..Default::default()
    };
    let f = se.dispatch(&regs, &mut mem, &d).unwrap_err();
    let pc = base + co.kernel.entry_offset + 0x1C;
    assert_eq!(f.va, pc);
    assert!(
        f.reason.contains(&format!("{pc:#x}")) && f.reason.contains("0xffffffff"),
        "{}",
        f.reason
    );
    // The store before it happened.
    assert_eq!(mem.read32(out).unwrap(), 1);
}
