//! The runtime on the emulated GPU: copies, kernel ranges in the profile, the emulated clock and
//! ring wrap-around on every emulated backend (KFD gfx1100/gfx1201, PCI and USB gfx1100); then
//! the KFD code path's own errors (KfdIface over EmuPlatform).

#[macro_use]
mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{opts, pattern, Target, E3_ELF};
use emu::{EmuArch, EmuConfig, EmuPlatform, FaultingShaderEngines, ShaderEngines};
use runtime::error::Error;
use runtime::kfd::{ioctl, KfdIface};
use runtime::platform::{AllocKind, Errno, GpuIface, Platform};
use runtime::{Device, DeviceOptions};

fn copy_round_trip(mut dev: Device, emu: &EmuPlatform, what: &str) {
    // Larger than the staging chunks × count, so slots are reused (not on USB, whose staging is
    // 2 × 4 MiB); odd size on purpose.
    let data = pattern(300_001, 7);
    let a = dev.alloc(data.len() as u64, AllocKind::VRAM).unwrap();
    let b = dev.alloc(data.len() as u64, AllocKind::VRAM).unwrap();
    dev.copyin(&a, &data).unwrap();
    dev.copy(&b, &a, data.len() as u64).unwrap();
    let mut back = vec![0u8; data.len()];
    dev.copyout(&b, &mut back).unwrap();
    assert!(
        back == data,
        "{what}: bytes differ after host -> device -> device -> host"
    );
    let st = emu.stats();
    assert!(
        st.sdma_bytes_copied >= 3 * data.len() as u64,
        "{what}: SDMA copied {}",
        st.sdma_bytes_copied
    );
    dev.free(a).unwrap();
    dev.free(b).unwrap();
}

fn copy_round_trip_through_sdma(t: Target) {
    let (dev, emu) = t.open(opts());
    copy_round_trip(dev, emu.platform(), &format!("{t:?}"));
}

/// The emulated gfx950 (KFD only) copies too.
#[test]
fn copy_round_trip_through_sdma_on_gfx950() {
    let (dev, emu) = emu::open_kfd(EmuArch::Gfx950, opts()).unwrap();
    copy_round_trip(dev, &emu, "Gfx950");
}

fn kernel_range_lands_in_profile_and_wst_reopens(t: Target) {
    let (mut dev, emu) = t.open(opts());
    let emu = emu.platform();
    let prg = dev.load_program(E3_ELF).unwrap();
    assert_eq!(prg.name, "E_3");
    // llvm-readelf: .rodata at 0x5c0 (descriptor), .text at 0x1600.
    assert_eq!(prg.code.kernel.descriptor_addr, 0x5C0);
    assert_eq!(prg.code.kernel.entry, 0x1600);
    assert_eq!(&prg.code.image[0x1600..0x1800], &E3_ELF[0x600..0x800]);
    let out = dev.alloc(64, AllocKind::VRAM).unwrap();
    let inp = dev.alloc(64, AllocKind::VRAM).unwrap();
    for _ in 0..3 {
        dev.launch(&prg, &[&out, &inp, &inp], &[], [1, 1, 1], [3, 1, 1])
            .unwrap();
    }
    dev.synchronize().unwrap();
    let st = emu.stats();
    assert_eq!(st.dispatches, 3);
    let d = st.recent_dispatches.last().unwrap();
    assert_eq!(d.pgm_addr, prg.prog_addr);
    assert_eq!(d.local, [3, 1, 1]);
    // The kernarg pointer is in the user data and the kernargs (read through the GPU page
    // tables on PCI and USB) hold the buffer VAs.
    let kva = u64::from(d.user_data[0]) | (u64::from(d.user_data[1]) << 32);
    let mut ka = [0u8; 16];
    emu.read_mem(kva, &mut ka).unwrap();
    assert_eq!(u64::from_le_bytes(ka[..8].try_into().unwrap()), out.va);
    assert_eq!(u64::from_le_bytes(ka[8..].try_into().unwrap()), inp.va);

    let prof = dev.profile().unwrap();
    assert_eq!(prof.kernels.len(), 3);
    let mut last_end = None;
    for k in &prof.kernels {
        let (s, e) = (k.gpu_start.unwrap(), k.gpu_end.unwrap());
        assert!(e > s, "kernel end {e} must be after start {s}");
        if let Some(le) = last_end {
            assert!(s >= le, "timestamps must increase across launches");
        }
        last_end = Some(e);
        assert!(k.end.unwrap() > k.start);
    }
    assert!(
        prof.ranges.iter().any(|r| r.device == 1),
        "copies are ranges on the SDMA device"
    );
    assert_eq!(prof.programs.len(), 1);
    assert!(prof.points.len() >= 2, "allocations are recorded");

    let dir = std::env::temp_dir().join(format!(
        "wavescope-runtime-test-{t:?}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("emulated.wst");
    dev.save_trace(&path).unwrap();
    let back = traces::wst::open(&path).unwrap();
    assert_eq!(back.kernels.len(), 3);
    assert_eq!(back.kernels[0].gpu_start, prof.kernels[0].gpu_start);
    assert_eq!(back.blob(back.programs[0].elf.unwrap()), E3_ELF);
    std::fs::remove_dir_all(&dir).ok();
}

fn signals_and_timestamps_on_the_emulated_clock(t: Target) {
    let (mut dev, emu) = t.open(opts());
    let t0 = emu.platform().clock();
    let buf = dev.alloc(4096, AllocKind::VRAM).unwrap();
    dev.copyin(&buf, &[1, 2, 3, 4]).unwrap();
    dev.synchronize().unwrap();
    assert!(emu.platform().clock() > t0);
    let prof = dev.profile().unwrap();
    let copy = prof.ranges.iter().find(|r| r.device == 1).unwrap();
    assert!(copy.end.unwrap() > copy.start);
}

fn ten_thousand_dispatches_without_overrunning_the_ring(t: Target) {
    let opts = DeviceOptions {
        profile: false,
        // 16 Ki dwords: the ring wraps ~90 times (USB's own 8 KiB ring, more often).
        compute_ring_size: 64 << 10,
        ..opts()
    };
    let (mut dev, emu) = t.open(opts);
    let prg = dev.load_program(E3_ELF).unwrap();
    let out = dev.alloc(64, AllocKind::VRAM).unwrap();
    for _ in 0..10_000 {
        dev.launch(&prg, &[&out, &out, &out], &[], [1, 1, 1], [3, 1, 1])
            .unwrap();
    }
    dev.synchronize().unwrap();
    assert_eq!(emu.stats().dispatches, 10_000);
}

// The E_3 kernel is gfx1100 code, so its cases leave out the gfx1201.
per_target!(
    copy_round_trip_through_sdma,
    // pci_gfx950 (and gfx1201): the test's kernel is tinygrad's gfx1100 E_3 code object.
    kernel_range_lands_in_profile_and_wst_reopens except [kfd_gfx1201, pci_gfx1201, usb_gfx1201, pci_gfx950],
    signals_and_timestamps_on_the_emulated_clock,
    ten_thousand_dispatches_without_overrunning_the_ring except [kfd_gfx1201, pci_gfx1201, usb_gfx1201, pci_gfx950],
);

#[test]
fn missing_kfd_is_a_clear_error() {
    let mut cfg = EmuConfig::new(EmuArch::Gfx1100);
    cfg.kfd_present = false;
    let p: Arc<dyn Platform> = Arc::new(EmuPlatform::new(cfg));
    let e = KfdIface::open(p, 0).err().unwrap();
    assert!(matches!(e, Error::NoKfd { .. }), "{e}");
    assert!(e.to_string().contains("/dev/kfd does not exist"), "{e}");
}

#[test]
fn no_gpu_node_is_a_clear_error() {
    let mut cfg = EmuConfig::new(EmuArch::Gfx1100);
    cfg.gpu_node = false;
    let p: Arc<dyn Platform> = Arc::new(EmuPlatform::new(cfg));
    let e = KfdIface::open(p.clone(), 0).err().unwrap();
    assert!(matches!(e, Error::NoGpuNode { .. }), "{e}");
    // Asking for a second GPU on a one-GPU machine is the same error.
    let p: Arc<dyn Platform> = Arc::new(EmuPlatform::new(EmuConfig::new(EmuArch::Gfx1100)));
    let e = KfdIface::open(p, 1).err().unwrap();
    assert!(matches!(e, Error::NoGpuNode { .. }), "{e}");
}

#[test]
fn failing_ioctls_name_the_call_and_errno() {
    for (req, errno) in [
        (ioctl::AMDKFD_IOC_ACQUIRE_VM, Errno::EACCES),
        (ioctl::AMDKFD_IOC_CREATE_EVENT, Errno::ENOSPC),
        (ioctl::AMDKFD_IOC_MAP_MEMORY_TO_GPU, Errno::EFAULT),
    ] {
        let mut cfg = EmuConfig::new(EmuArch::Gfx1100);
        cfg.fail_ioctl = Some((req, errno));
        let p: Arc<dyn Platform> = Arc::new(EmuPlatform::new(cfg));
        match KfdIface::open(p, 0) {
            Err(Error::Ioctl { name, errno: e, .. }) => {
                assert_eq!(name, ioctl::ioctl_name(req));
                assert_eq!(e, errno);
            }
            Err(e) => panic!("unexpected error {e}"),
            Ok(_) => panic!("ioctl failure not reported"),
        }
    }
    // CREATE_QUEUE failing surfaces from Device::new.
    let emu = EmuPlatform::new(EmuConfig::new(EmuArch::Gfx1100));
    let p: Arc<dyn Platform> = Arc::new(emu.clone());
    let iface = KfdIface::open(p, 0).unwrap();
    emu.set_fail_ioctl(Some((ioctl::AMDKFD_IOC_CREATE_QUEUE, Errno::EBUSY)));
    let e = Device::new(Box::new(iface), opts()).err().unwrap();
    let msg = e.to_string();
    assert!(
        msg.contains("AMDKFD_IOC_CREATE_QUEUE") && msg.contains("EBUSY"),
        "{msg}"
    );
}

#[test]
fn allocation_errnos_become_bar_and_memory_errors() {
    let mut cfg = EmuConfig::new(EmuArch::Gfx1100);
    cfg.bar_size = 256 << 20;
    cfg.memory_limit = 1 << 30;
    let p: Arc<dyn Platform> = Arc::new(EmuPlatform::new(cfg));
    let mut k = KfdIface::open(p, 0).unwrap();
    // EINVAL on VRAM + PUBLIC: no resizable BAR.
    let e = k.alloc(512 << 20, AllocKind::VRAM_CPU).err().unwrap();
    assert!(matches!(e, Error::NoResizableBar { .. }), "{e}");
    assert!(e.to_string().contains("Resizable BAR"), "{e}");
    // The same size without CPU access is fine.
    let b = k.alloc(512 << 20, AllocKind::VRAM).unwrap();
    // ENOMEM: out of memory.
    let e = k.alloc(768 << 20, AllocKind::VRAM).err().unwrap();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
    k.free(b).unwrap();
    assert!(
        k.alloc(768 << 20, AllocKind::VRAM).is_ok(),
        "freeing gives the memory back"
    );
}

/// KFD only: its memory event names the faulting address exactly (the IH fault entry of PCI and
/// USB, only its page; pci_emulated.rs checks that).
#[test]
fn device_hang_becomes_a_fault_report() {
    let opts = DeviceOptions {
        wait_timeout: Duration::from_millis(200),
        ..opts()
    };
    let (mut dev, emu) = emu::open_kfd(EmuArch::Gfx1100, opts).unwrap();
    let prg = dev.load_program(E3_ELF).unwrap();
    let out = dev.alloc(64, AllocKind::VRAM).unwrap();
    let faulting: Box<dyn ShaderEngines> = Box::new(FaultingShaderEngines);
    emu.set_shader_engines(faulting);
    dev.launch(&prg, &[&out, &out, &out], &[], [1, 1, 1], [3, 1, 1])
        .unwrap();
    match dev.synchronize() {
        Err(Error::DeviceHang(rep)) => {
            let f = rep
                .mmu_fault
                .expect("memory fault reported through the KFD memory event");
            assert_eq!(f.va, prg.prog_addr);
            assert!(f.not_present);
            let msg = Error::DeviceHang(rep).to_string();
            assert!(
                msg.contains("timeout") && msg.contains("MMU fault"),
                "{msg}"
            );
        }
        other => panic!("expected a device hang, got {other:?}", other = other.err()),
    }
}
