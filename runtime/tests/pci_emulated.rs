//! The runtime on the emulated PCI GPU through the real PCI (AM) driver: only the PCI device is
//! emulated; discovery, firmware loading, PSP/SMU handshakes, page tables, IH and queue setup are
//! the driver's own code.

use std::time::Duration;

use runtime::emu::pci::EmuPciGpu;
use runtime::emu::EmuArch;
use runtime::platform::AllocKind;
use runtime::{Device, DeviceOptions};

pub fn small_opts() -> DeviceOptions {
    DeviceOptions {
        wait_timeout: Duration::from_secs(5),
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

fn open() -> (Device, EmuPciGpu) {
    Device::open_emulated_pci(EmuArch::Gfx1100, small_opts()).unwrap()
}

fn pattern(n: usize, seed: u32) -> Vec<u8> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (x >> 24) as u8
        })
        .collect()
}

#[test]
fn copy_round_trip_through_sdma() {
    let (mut dev, gpu) = open();
    let data = pattern(300_001, 7);
    let a = dev.alloc(data.len() as u64, AllocKind::VRAM).unwrap();
    let b = dev.alloc(data.len() as u64, AllocKind::VRAM).unwrap();
    dev.copyin(&a, &data).unwrap();
    dev.copy(&b, &a, data.len() as u64).unwrap();
    let mut back = vec![0u8; data.len()];
    dev.copyout(&b, &mut back).unwrap();
    assert!(
        back == data,
        "bytes differ after host -> device -> device -> host"
    );
    assert!(gpu.stats().sdma_bytes_copied >= 3 * data.len() as u64);
}

const ELF: &[u8] = include_bytes!("data/gfx1100_E_3.elf");

#[test]
fn kernel_range_lands_in_profile() {
    let (mut dev, gpu) = open();
    let prg = dev.load_program(ELF).unwrap();
    let out = dev.alloc(64, AllocKind::VRAM).unwrap();
    let inp = dev.alloc(64, AllocKind::VRAM).unwrap();
    for _ in 0..3 {
        dev.launch(&prg, &[&out, &inp, &inp], &[], [1, 1, 1], [3, 1, 1])
            .unwrap();
    }
    dev.synchronize().unwrap();
    let st = gpu.stats();
    assert_eq!(st.dispatches, 3);
    let d = st.recent_dispatches.last().unwrap();
    assert_eq!(d.pgm_addr, prg.prog_addr);
    // The kernargs, read through the GPU page tables, hold the buffer VAs.
    let kva = u64::from(d.user_data[0]) | (u64::from(d.user_data[1]) << 32);
    let mut ka = [0u8; 16];
    assert!(gpu.read_va(kva, &mut ka));
    assert_eq!(u64::from_le_bytes(ka[..8].try_into().unwrap()), out.va);
    assert_eq!(u64::from_le_bytes(ka[8..].try_into().unwrap()), inp.va);
    let prof = dev.profile().unwrap();
    assert_eq!(prof.kernels.len(), 3);
    for k in &prof.kernels {
        assert!(k.gpu_end.unwrap() > k.gpu_start.unwrap());
    }
    assert!(prof.ranges.iter().any(|r| r.device == 1), "SDMA copies");
}

#[test]
fn ten_thousand_dispatches_without_overrunning_the_ring() {
    let mut opts = small_opts();
    opts.profile = false;
    opts.compute_ring_size = 64 << 10;
    let (mut dev, gpu) = Device::open_emulated_pci(EmuArch::Gfx1100, opts).unwrap();
    let prg = dev.load_program(ELF).unwrap();
    let out = dev.alloc(64, AllocKind::VRAM).unwrap();
    for _ in 0..10_000 {
        dev.launch(&prg, &[&out, &out, &out], &[], [1, 1, 1], [3, 1, 1])
            .unwrap();
    }
    dev.synchronize().unwrap();
    assert_eq!(gpu.stats().dispatches, 10_000);
}

#[test]
fn signals_and_timestamps_on_the_emulated_clock() {
    let (mut dev, gpu) = open();
    let t0 = gpu.platform().clock();
    let buf = dev.alloc(4096, AllocKind::VRAM).unwrap();
    dev.copyin(&buf, &[1, 2, 3, 4]).unwrap();
    dev.synchronize().unwrap();
    assert!(gpu.platform().clock() > t0);
    let prof = dev.profile().unwrap();
    let copy = prof.ranges.iter().find(|r| r.device == 1).unwrap();
    assert!(copy.end.unwrap() > copy.start);
}

#[test]
fn props_come_from_the_discovery_table() {
    let (dev, _gpu) = open();
    let p = &dev.props;
    assert_eq!(p.gfx_target_version, 110000);
    assert_eq!(p.num_se(), 6);
    assert_eq!(p.num_cu(), 96);
    assert_eq!(p.vendor_id, 0x1002);
    assert_eq!(p.device_id, 0x744c);
    assert_eq!(p.local_mem_size, 1 << 30);
}

#[test]
fn an_mmu_fault_interrupt_ends_the_wait_with_the_fault() {
    let mut opts = small_opts();
    opts.wait_timeout = Duration::from_secs(2);
    let (mut dev, _gpu) = Device::open_emulated_pci(EmuArch::Gfx1100, opts).unwrap();
    let a = dev.alloc(8192, AllocKind::VRAM).unwrap();
    let b = dev.alloc(8192, AllocKind::VRAM).unwrap();
    let stale = a.clone();
    dev.free(a).unwrap();
    let t0 = std::time::Instant::now();
    // SDMA reads the freed (unmapped) range: the GMC faults, IH raises an interrupt.
    let e = dev.copy(&b, &stale, 4096).and_then(|_| dev.synchronize());
    let e = e.expect_err("copy from an unmapped VA must fail");
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "the interrupt ends the wait, not the timeout"
    );
    match &e {
        runtime::Error::DeviceHang(rep) => {
            let f = rep.mmu_fault.expect("fault decoded");
            assert_eq!(f.va & !0xFFF, stale.va, "{rep}");
            assert!(f.not_present);
        }
        other => panic!("expected a device hang, got {other}"),
    }
    let msg = e.to_string();
    assert!(
        msg.contains("page fault") && msg.contains(&format!("{:#x}", stale.va)),
        "{msg}"
    );
}
