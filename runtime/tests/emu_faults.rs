//! Bad kernels on the emulated GPU end in a clear device-hang / memory-fault report within a
//! bounded time, and the process (and a fresh device) keeps working — on the emulated gfx1100
//! and gfx1201 (the same sources built for each) behind KFD, on the PCI and USB gfx1100 and
//! gfx1201, and on the PCI gfx950 (8-XCC MI350, its own interpreter).

#[macro_use]
mod common;

use std::time::{Duration, Instant};

use common::{fixture, opts, Target};
use emu::{EmuArch, EmuShaderEngines, Gfx9ShaderEngines, ShaderEngines};
use runtime::error::Error;
use runtime::platform::AllocKind;
use runtime::{Device, DeviceOptions};

/// The interpreting engines of `arch` (gfx950 has its own CDNA interpreter) with an
/// instruction budget per wave.
fn engines(arch: EmuArch, max_insts: u64) -> Box<dyn ShaderEngines> {
    if arch == EmuArch::Gfx950 {
        let mut se = Gfx9ShaderEngines::new(arch);
        se.max_wave_instructions = max_insts;
        return Box::new(se);
    }
    let mut se = EmuShaderEngines::new(arch);
    se.max_wave_instructions = max_insts;
    Box::new(se)
}

fn device(t: Target, max_insts: u64) -> Device {
    let opts = DeviceOptions {
        wait_timeout: Duration::from_secs(1),
        ..opts()
    };
    t.open_with(opts, engines(t.arch(), max_insts)).0
}

fn run(t: Target, name: &str, idx: u32) -> (Error, Duration) {
    let mut d = device(t, 5_000_000);
    let prg = d.load_program(&fixture(t.arch(), name)).unwrap();
    let out = d.alloc(4096, AllocKind::VRAM).unwrap();
    let inp = d.alloc(4096, AllocKind::VRAM).unwrap();
    d.copyin(&inp, &idx.to_le_bytes()).unwrap();
    let t = Instant::now();
    d.launch(&prg, &[&out, &inp], &[], [1, 1, 1], [32, 1, 1])
        .unwrap();
    let e = d.synchronize().expect_err("a bad kernel must not complete");
    (e, t.elapsed())
}

fn still_works(t: Target) {
    // A fresh device in the same process runs a good kernel.
    let mut d = device(t, 5_000_000);
    let prg = d.load_program(&fixture(t.arch(), "vadd")).unwrap();
    let a = d.alloc(256, AllocKind::VRAM).unwrap();
    d.copyin(&a, &[0u8; 256]).unwrap();
    d.launch(&prg, &[&a, &a, &a], &[64], [1, 1, 1], [64, 1, 1])
        .unwrap();
    d.synchronize().unwrap();
}

fn infinite_loop_is_a_device_hang(t: Target) {
    let (e, took) = run(t, "bad_loop", 0);
    let Error::DeviceHang(rep) = &e else {
        panic!("expected a device hang, got {e}")
    };
    assert!(rep.mmu_fault.is_none(), "a hang is no memory fault: {e}");
    assert!(e.to_string().contains("timeout"), "{e}");
    assert!(took < Duration::from_secs(30), "reported after {took:?}");
    still_works(t);
}

fn out_of_bounds_store_is_a_memory_fault(t: Target) {
    let (e, _) = run(t, "bad_oob", 0x1000_0000);
    let Error::DeviceHang(rep) = &e else {
        panic!("expected a device hang, got {e}")
    };
    let f = rep
        .mmu_fault
        .expect("the fault report (KFD memory event, PCI/USB IH entry) names the address");
    assert!(f.not_present);
    assert!(e.to_string().contains("MMU fault"), "{e}");
    still_works(t);
}

fn unknown_instruction_stops_the_queue(t: Target) {
    let (e, _) = run(t, "bad_inst", 0);
    assert!(matches!(e, Error::DeviceHang(_)), "{e}");
    still_works(t);
}

fn unknown_instruction_is_named_with_pc_and_encoding(t: Target) {
    // Through the engines directly: the fault text names the PC and the word.
    let arch = t.arch();
    let mut se = engines(arch, 5_000_000);
    let mut mem = emu::Memory::new();
    let elf = fixture(arch, "bad_inst");
    let co = runtime::kernel::Code::parse(&elf).unwrap();
    let base = mem.reserve(co.image.len() as u64 + 0x1000);
    mem.map(base, (co.image.len() as u64).div_ceil(4096) * 4096)
        .unwrap();
    mem.write(base, &co.image).unwrap();
    let out = mem.reserve(4096);
    mem.map(out, 4096).unwrap();
    let args = mem.reserve(4096);
    mem.map(args, 4096).unwrap();
    mem.write64(args, out).unwrap();
    let regs = emu::RegFile::new(0, 6);
    let d = emu::DispatchInfo {
        pgm_addr: base + co.kernel.entry,
        rsrc1: co.kernel.descriptor.compute_pgm_rsrc1,
        rsrc2: co.kernel.descriptor.compute_pgm_rsrc2,
        user_data: vec![args as u32, (args >> 32) as u32],
        grid: [1, 1, 1],
        local: [32, 1, 1],
        // gfx950 (CDNA) runs wave64 only.
        wave32: arch != EmuArch::Gfx950,
        ..Default::default()
    };
    let f = se.dispatch(&regs, &mut mem, &d).unwrap_err();
    // The `.long 0xffffffff` the source plants after the store (its offset differs per target).
    let entry = co.kernel.entry as usize;
    let bad = co.image[entry..]
        .chunks_exact(4)
        .position(|w| w == [0xFF; 4])
        .expect("the planted word");
    let pc = base + co.kernel.entry + 4 * bad as u64;
    assert_eq!(f.va, pc);
    assert!(
        f.reason.contains(&format!("{pc:#x}")) && f.reason.contains("0xffffffff"),
        "{}",
        f.reason
    );
    // The store before it happened.
    assert_eq!(mem.read32(out).unwrap(), 1);
}

// Every case above, on every emulated backend; the engines-only case needs no device, so it
// runs once per generation.
per_target!(
    infinite_loop_is_a_device_hang,
    out_of_bounds_store_is_a_memory_fault,
    unknown_instruction_stops_the_queue,
    unknown_instruction_is_named_with_pc_and_encoding except [pci_gfx1100, usb_gfx1100, pci_gfx1201, usb_gfx1201],
);

/// A kernel whose private segment exceeds the scratch the runtime reserves per lane is refused
/// at launch, naming the sizes, instead of running into its neighbours' scratch.
#[test]
fn a_kernel_needing_more_scratch_than_reserved_is_refused() {
    let t = Target::KfdGfx1100;
    let mut elf = fixture(t.arch(), "scratch");
    let co = traces::isa::CodeObject::parse(&elf).unwrap();
    let need = co.kernels[0].descriptor.private_segment_fixed_size;
    assert!(need > 0, "the scratch fixture uses scratch");
    // Find the descriptor by its contents and raise private_segment_fixed_size (offset 4).
    let kd = co.kernels[0].descriptor;
    let size = traces::isa::KernelDescriptor::SIZE;
    let at = elf
        .windows(size)
        .position(|w| traces::isa::KernelDescriptor::parse(w) == Some(kd))
        .expect("descriptor in the file");
    elf[at + 4..at + 8].copy_from_slice(&4096u32.to_le_bytes());
    let mut d = t.device(opts());
    let prg = d.load_program(&elf).unwrap();
    let out = d.alloc(4096, AllocKind::VRAM).unwrap();
    let e = d
        .launch(&prg, &[&out, &out], &[], [1, 1, 1], [32, 1, 1])
        .expect_err("4096 bytes per lane do not fit");
    let msg = e.to_string();
    assert!(
        msg.contains("4096") && msg.contains("scratch per work-item"),
        "{msg}"
    );
}

/// Launches queued behind a faulted kernel fill the ring; the submission that finds no room
/// fails as a hang within the device's wait timeout (not a fixed 30 s), carrying the fault.
#[test]
fn a_ring_that_stays_full_is_a_hang_within_the_wait_timeout() {
    let t = Target::KfdGfx1100;
    let opts = DeviceOptions {
        wait_timeout: Duration::from_secs(1),
        compute_ring_size: 4096,
        ..opts()
    };
    let mut d = t.device(opts);
    let prg = d.load_program(&fixture(t.arch(), "bad_oob")).unwrap();
    let out = d.alloc(4096, AllocKind::VRAM).unwrap();
    let inp = d.alloc(4096, AllocKind::VRAM).unwrap();
    d.copyin(&inp, &0x1000_0000u32.to_le_bytes()).unwrap();
    let t0 = Instant::now();
    let e = (0..10_000)
        .find_map(|_| {
            d.launch(&prg, &[&out, &inp], &[], [1, 1, 1], [32, 1, 1])
                .err()
        })
        .expect("a 4 KiB ring behind a stopped queue must fill");
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert!(matches!(e, Error::DeviceHang(_)), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("ring full") || msg.contains("MMU fault"),
        "{msg}"
    );
}

/// A kernarg buffer smaller than the launches need wraps, waiting for the queue before it
/// reuses a slot; every launch still sees its own arguments.
#[test]
fn kernarg_wrap_keeps_every_launch_arguments() {
    let t = Target::KfdGfx1100;
    let opts = DeviceOptions {
        kernargs_size: 1024,
        ..opts()
    };
    let mut d = t.device(opts);
    let prg = d.load_program(&fixture(t.arch(), "vadd")).unwrap();
    // vadd(out, a, b, n): out[i] = a[i] + b[i] (f32) for i < n; each launch has its own output.
    let a = d.alloc(256, AllocKind::VRAM).unwrap();
    let ones: Vec<u8> = (0..64).flat_map(|_| 1.0f32.to_le_bytes()).collect();
    d.copyin(&a, &ones).unwrap();
    // The buffer rounds up to a page: 300 launches of 32+ bytes wrap it at least twice.
    let outs: Vec<_> = (0..300)
        .map(|_| {
            let o = d.alloc(256, AllocKind::VRAM).unwrap();
            d.copyin(&o, &[0u8; 256]).unwrap();
            o
        })
        .collect();
    for (i, o) in outs.iter().enumerate() {
        // Launch i adds over its first i % 64 + 1 elements only.
        d.launch(
            &prg,
            &[o, &a, &a],
            &[i as u32 % 64 + 1],
            [1, 1, 1],
            [64, 1, 1],
        )
        .unwrap();
    }
    d.synchronize().unwrap();
    assert!(
        d.kernarg_wraps > 0,
        "1 KiB of kernargs must wrap over 40 launches"
    );
    for (i, o) in outs.iter().enumerate() {
        let mut b = vec![0u8; 256];
        d.copyout(o, &mut b).unwrap();
        let got: Vec<u32> = b
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let two = 2.0f32.to_bits();
        let want: Vec<u32> = (0..64).map(|j| if j <= i % 64 { two } else { 0 }).collect();
        assert_eq!(got, want, "launch {i}");
    }
}
