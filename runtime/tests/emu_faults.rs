//! Bad kernels on the emulated GPU end in a clear device-hang / memory-fault report within a
//! bounded time, and the process (and a fresh device) keeps working — on the emulated gfx1100
//! and gfx1201 (the same sources built for each).

use std::sync::Arc;
use std::time::{Duration, Instant};

use runtime::emu::{EmuArch, EmuConfig, EmuPlatform, EmuShaderEngines};
use runtime::error::Error;
use runtime::platform::{AllocKind, Platform};
use runtime::{Device, DeviceOptions};

fn fixture(arch: EmuArch, name: &str) -> Vec<u8> {
    let sub = if arch == EmuArch::Gfx1201 {
        "gfx1201/"
    } else {
        ""
    };
    std::fs::read(format!(
        "{}/../tests/fixtures/kernels/emu/{sub}{name}.hsaco",
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

fn device(arch: EmuArch, max_insts: u64) -> Device {
    let mut se = EmuShaderEngines::new(arch);
    se.max_wave_instructions = max_insts;
    let emu = EmuPlatform::with_shader_engines(EmuConfig::new(arch), Box::new(se));
    let p: Arc<dyn Platform> = Arc::new(emu);
    Device::new(
        Box::new(runtime::kfd::KfdIface::open(p, 0).unwrap()),
        opts(),
    )
    .unwrap()
}

fn run(arch: EmuArch, name: &str, idx: u32) -> (Error, Duration) {
    let mut d = device(arch, 5_000_000);
    let prg = d.load_program(&fixture(arch, name)).unwrap();
    let out = d.alloc(4096, AllocKind::VRAM).unwrap();
    let inp = d.alloc(4096, AllocKind::VRAM).unwrap();
    d.copyin(&inp, &idx.to_le_bytes()).unwrap();
    let t = Instant::now();
    d.launch(&prg, &[&out, &inp], &[], [1, 1, 1], [32, 1, 1])
        .unwrap();
    let e = d.synchronize().expect_err("a bad kernel must not complete");
    (e, t.elapsed())
}

fn still_works(arch: EmuArch) {
    // A fresh device in the same process runs a good kernel.
    let mut d = device(arch, 5_000_000);
    let prg = d.load_program(&fixture(arch, "vadd")).unwrap();
    let a = d.alloc(256, AllocKind::VRAM).unwrap();
    d.copyin(&a, &[0u8; 256]).unwrap();
    d.launch(&prg, &[&a, &a, &a], &[64], [1, 1, 1], [64, 1, 1])
        .unwrap();
    d.synchronize().unwrap();
}

fn infinite_loop_is_a_device_hang(arch: EmuArch) {
    let (e, t) = run(arch, "bad_loop", 0);
    let Error::DeviceHang(rep) = &e else {
        panic!("expected a device hang, got {e}")
    };
    assert!(rep.mmu_fault.is_none(), "a hang is no memory fault: {e}");
    assert!(e.to_string().contains("timeout"), "{e}");
    assert!(t < Duration::from_secs(30), "reported after {t:?}");
    still_works(arch);
}

fn out_of_bounds_store_is_a_memory_fault(arch: EmuArch) {
    let (e, _) = run(arch, "bad_oob", 0x1000_0000);
    let Error::DeviceHang(rep) = &e else {
        panic!("expected a device hang, got {e}")
    };
    let f = rep
        .mmu_fault
        .expect("the KFD memory exception names the address");
    assert!(f.not_present);
    assert!(e.to_string().contains("MMU fault"), "{e}");
    still_works(arch);
}

fn unknown_instruction_stops_the_queue(arch: EmuArch) {
    let (e, _) = run(arch, "bad_inst", 0);
    assert!(matches!(e, Error::DeviceHang(_)), "{e}");
    still_works(arch);
}

fn unknown_instruction_is_named_with_pc_and_encoding(arch: EmuArch) {
    // Through the engines directly: the fault text names the PC and the word.
    use runtime::emu::ShaderEngines;
    let mut se = EmuShaderEngines::new(arch);
    let mut mem = runtime::emu::Memory::new();
    let elf = fixture(arch, "bad_inst");
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
    // The `.long 0xffffffff` the source plants after the store (its offset differs per target).
    let entry = co.kernel.entry_offset as usize;
    let bad = co.image[entry..]
        .chunks_exact(4)
        .position(|w| w == [0xFF; 4])
        .expect("the planted word");
    let pc = base + co.kernel.entry_offset + 4 * bad as u64;
    assert_eq!(f.va, pc);
    assert!(
        f.reason.contains(&format!("{pc:#x}")) && f.reason.contains("0xffffffff"),
        "{}",
        f.reason
    );
    // The store before it happened.
    assert_eq!(mem.read32(out).unwrap(), 1);
}

/// Every case above, once per emulated generation.
macro_rules! per_arch {
    ($($name:ident),* $(,)?) => {
        mod gfx1100 {
            use runtime::emu::EmuArch;
            $(#[test] fn $name() { super::$name(EmuArch::Gfx1100) })*
        }
        mod gfx1201 {
            use runtime::emu::EmuArch;
            $(#[test] fn $name() { super::$name(EmuArch::Gfx1201) })*
        }
    };
}

per_arch!(
    infinite_loop_is_a_device_hang,
    out_of_bounds_store_is_a_memory_fault,
    unknown_instruction_stops_the_queue,
    unknown_instruction_is_named_with_pc_and_encoding,
);
