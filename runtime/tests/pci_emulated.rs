//! The runtime on the emulated PCI GPU through the real PCI (AM) driver: only the PCI device is
//! emulated; discovery, firmware loading, PSP/SMU handshakes, page tables, IH and queue setup are
//! the driver's own code. What the PCI path does beyond the tests every backend runs
//! (emulated_kfd.rs, emu_kernels.rs, ...): properties from the discovery table and MMU faults
//! from the IH ring, on the emulated PCI GPU and on the same GPU behind the emulated USB bridge.

#[macro_use]
mod common;

use std::time::Duration;

use common::{opts, Target};
use runtime::platform::AllocKind;
use runtime::DeviceOptions;

fn props_come_from_the_discovery_table(t: Target) {
    let dev = t.device(opts());
    let p = &dev.props;
    // Navi31 (6 SEs, 96 CUs) or Navi48 (4 SEs, 64 CUs), as the emulated tables say.
    let (target, se, cu, id) = match t.arch() {
        emu::EmuArch::Gfx1201 => (120001, 4, 64, 0x7550),
        // MI350-class: 8 XCCs of the table's 4 SEs x 2 arrays x 4 WGPs (2 CUs each).
        emu::EmuArch::Gfx950 => (90500, 32, 512, 0x75a0),
        _ => (110000, 6, 96, 0x744c),
    };
    assert_eq!(p.gfx_target_version, target);
    assert_eq!(p.num_se(), se);
    assert_eq!(p.num_cu(), cu);
    assert_eq!(p.vendor_id, 0x1002);
    assert_eq!(p.device_id, id);
    assert_eq!(p.local_mem_size, 1 << 30);
}

fn an_mmu_fault_interrupt_ends_the_wait_with_the_fault(t: Target) {
    let mut dev = t.device(DeviceOptions {
        wait_timeout: Duration::from_secs(2),
        ..opts()
    });
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

per_target!(
    props_come_from_the_discovery_table except [kfd_gfx1100, kfd_gfx1201],
    an_mmu_fault_interrupt_ends_the_wait_with_the_fault except [kfd_gfx1100, kfd_gfx1201],
);
