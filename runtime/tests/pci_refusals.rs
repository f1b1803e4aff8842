//! The driverless path refuses, with a message that names the block, its version and the fix,
//! a GPU whose discovery table lists an IP version the driver was not generated for (the
//! versions come from the register JSON, `regs::COMPATIBLE`), before it writes a register; a
//! missing firmware file by name with the package that has it; and a GPU a crashed session
//! left that it cannot reset, with the ways to reset it.

use runtime::pci::am::discovery::{hw_id, Discovery};
use runtime::pci::am::{check_versions, AmIp};
use runtime::pci::PciError;

fn navi31() -> Discovery {
    let t = emu::pci::discovery::build((6, 4, 0, 2, 16, 32, 64));
    Discovery::parse(&t, 0x1000).expect("the emulator's table parses")
}

fn with(ip: AmIp, v: (u32, u32, u32)) -> Discovery {
    let mut d = navi31();
    d.ips.get_mut(&(hw_id(ip), 0)).expect("IP present").version = v;
    d
}

fn refusal(d: &Discovery) -> (String, String) {
    match check_versions(d) {
        Err(e @ PciError::UnsupportedIp { ip, .. }) => (ip.to_string(), e.to_string()),
        other => panic!("expected an unsupported-IP refusal, got {other:?}"),
    }
}

#[test]
fn the_emulated_navi31_passes() {
    check_versions(&navi31()).unwrap();
}

#[test]
fn cdna_is_refused_by_name_with_the_kfd_path_as_the_fix() {
    // GC 12 has register tables: on navi31's other blocks it is refused by the first of them
    // that is not RDNA4's (SDMA 6), naming that block.
    let (ip, msg) = refusal(&with(AmIp::Gc, (12, 0, 1)));
    assert_eq!(ip, "SDMA0", "{msg}");
    assert!(msg.contains("SDMA 7") && msg.contains("kfd:N"), "{msg}");
    // GC 9.4.3 / 9.5.0 (CDNA3/4) have register tables too: on navi31's blocks the SDMA 6 is refused.
    for v in [(9, 5, 0), (9, 4, 3)] {
        let (ip, msg) = refusal(&with(AmIp::Gc, v));
        assert_eq!(ip, "SDMA0", "{msg}");
        assert!(
            msg.contains("SDMA 4") && msg.contains("GC 9.4") && msg.contains("kfd:N"),
            "{msg}"
        );
    }
    let (_, msg) = refusal(&with(AmIp::Gc, (13, 0, 0)));
    assert!(
        msg.contains("not a GPU generation wavescope knows"),
        "{msg}"
    );
}

#[test]
fn a_block_whose_registers_moved_is_refused() {
    // MMHUB 3.0.2 (navi33) has its own register JSON with other offsets; MP 14.0.2 is RDNA4's.
    let (ip, msg) = refusal(&with(AmIp::Mmhub, (3, 0, 2)));
    assert_eq!(ip, "MMHUB");
    assert!(
        msg.contains("MMHUB 3.0.2") && msg.contains("3.0.0"),
        "{msg}"
    );
    let (ip, _) = refusal(&with(AmIp::Mp0, (14, 0, 2)));
    assert_eq!(ip, "MP0");
    let (ip, msg) = refusal(&with(AmIp::Sdma0, (7, 0, 0)));
    assert_eq!(ip, "SDMA0");
    assert!(msg.contains("SDMA 6"), "{msg}");
}

#[test]
fn a_missing_firmware_file_is_named_with_the_package_that_has_it() {
    use runtime::pci::am::firmware::{Firmware, FirmwareNames};
    let dir = std::env::temp_dir().join(format!("wavescope-nofw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let names = FirmwareNames::new((11, 0, 0), (13, 0, 0), (13, 0, 0), (6, 0, 0));
    let e = match Firmware::load(&dir, &names) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("an empty directory has no firmware"),
    };
    let _ = std::fs::remove_dir(&dir);
    assert!(e.contains("psp_13_0_0_sos.bin"), "{e}");
    assert!(
        e.contains("firmware-amd-graphics") && e.contains("linux-firmware"),
        "{e}"
    );
}

/// The IP versions tinygrad's driverless bring-up discovered on a gfx1200 (its recording's
/// `device_info.am_ip_versions`), applied to the emulator's table.
fn rdna4_from_recording() -> Option<Discovery> {
    let path = testdata::require_shared("conformance/tinygrad/pci_gfx1200_add.jsonl")?;
    let text = std::fs::read_to_string(&path).unwrap();
    let info: serde_json::Value = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["ev"] == "device_info")
        .expect("the recording has device_info");
    let mut d = navi31();
    for (ip, key) in [
        (AmIp::Gc, "GC"),
        (AmIp::Sdma0, "SDMA0"),
        (AmIp::Mmhub, "MMHUB"),
        (AmIp::Nbio, "NBIF"),
        (AmIp::Mp0, "MP0"),
        (AmIp::Mp1, "MP1"),
        (AmIp::Hdp, "HDP"),
        (AmIp::Osssys, "OSSSYS"),
    ] {
        let v: Vec<u32> = info["am_ip_versions"][key]
            .as_array()
            .unwrap_or_else(|| panic!("{key} in am_ip_versions"))
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect();
        d.ips.get_mut(&(hw_id(ip), 0)).unwrap().version = (v[0], v[1], v[2]);
    }
    Some(d)
}

#[test]
fn rdna4_versions_select_the_gc12_tables_and_mixed_tables_are_refused() {
    use runtime::pci::am::{select_gen, AmGen};
    assert_eq!(select_gen(&navi31()).unwrap(), AmGen::Gc11);
    let Some(d) = rdna4_from_recording() else {
        return;
    };
    assert_eq!(select_gen(&d).unwrap(), AmGen::Gc12);
    // gfx1201 (navi48) reports GC 12.0.1 and is driven with the gc_12_0_0 table like amdgpu.
    let mut d1 = rdna4_from_recording().unwrap();
    d1.ips.get_mut(&(hw_id(AmIp::Gc), 0)).unwrap().version = (12, 0, 1);
    assert_eq!(select_gen(&d1).unwrap(), AmGen::Gc12);
    // A GC 12 with a GC 11 hub, or SDMA 6, is refused by block.
    let mut m = rdna4_from_recording().unwrap();
    m.ips.get_mut(&(hw_id(AmIp::Mmhub), 0)).unwrap().version = (3, 0, 0);
    match select_gen(&m) {
        Err(e @ PciError::UnsupportedIp { ip: "MMHUB", .. }) => {
            assert!(
                e.to_string().contains("GC 12") && e.to_string().contains("4.1.0"),
                "{e}"
            )
        }
        other => panic!("expected MMHUB refusal, got {other:?}"),
    }
    let mut s = rdna4_from_recording().unwrap();
    s.ips.get_mut(&(hw_id(AmIp::Sdma0), 0)).unwrap().version = (6, 0, 0);
    match select_gen(&s) {
        Err(e @ PciError::UnsupportedIp { ip: "SDMA0", .. }) => {
            assert!(e.to_string().contains("SDMA 7"), "{e}")
        }
        other => panic!("expected SDMA0 refusal, got {other:?}"),
    }
    // The GC 12 bring-up exists: the recorded navi44 table is accepted.
    assert_eq!(check_versions(&d).unwrap(), AmGen::Gc12);
}

/// A session that crashed (no teardown: SCRATCH_REG6 still says running) on a GPU whose SMU
/// then hangs: no mode-1 reset can stop what the crashed session left running, so the next
/// open is refused before any block is set up, naming how to reset the GPU.
#[test]
fn an_unrecoverable_crashed_session_is_refused_with_the_fix() {
    use emu::pci::{EmuPciConfig, EmuPciGpu};
    use emu::EmuArch;
    for arch in [EmuArch::Gfx1100, EmuArch::Gfx1201] {
        let gpu = EmuPciGpu::new(EmuPciConfig::new(arch)).unwrap();
        let opts = runtime::DeviceOptions {
            compute_ring_size: 1 << 16,
            sdma_ring_size: 1 << 16,
            ..Default::default()
        };
        let (d, _) = emu::open_pci_on(gpu.clone(), opts.clone()).expect("first session boots");
        std::mem::forget(d);
        gpu.hang_smu();
        let before = gpu.reg_writes().len();
        let boots = gpu.firmware_log().bootloader.len();
        let e = match emu::open_pci_on(gpu.clone(), opts) {
            Ok(_) => panic!("{arch:?}: a GPU that cannot be reset was opened"),
            Err(e) => e.to_string(),
        };
        for part in [
            "emu-pci:",
            "did not end cleanly",
            "SMU does not answer",
            "sudo tee /sys/bus/pci/devices/",
            "/reset",
            "bind amdgpu",
            "power-cycle",
        ] {
            assert!(e.contains(part), "{arch:?}: {part:?} not in: {e}");
        }
        let names: Vec<&str> = gpu.reg_writes()[before..]
            .iter()
            .filter_map(|w| gpu.reg_name(w.addr))
            .collect();
        for untouched in [
            "MMVM_CONTEXT0_CNTL",
            "IH_RB_CNTL",
            "SCRATCH_REG7",
            "SCRATCH_REG6",
        ] {
            assert!(
                !names.contains(&untouched),
                "{arch:?}: {untouched} written: {names:?}"
            );
        }
        assert_eq!(gpu.firmware_log().bootloader.len(), boots, "{arch:?}");
    }
}

/// The same behind the USB bridge, where the host has no PCI function to reset: the fix is to
/// power-cycle the eGPU.
#[test]
fn an_unrecoverable_crashed_session_behind_usb_names_a_power_cycle() {
    use emu::pci::{EmuPciConfig, EmuPciGpu};
    use emu::EmuArch;
    let gpu = EmuPciGpu::new(EmuPciConfig::new(EmuArch::Gfx1201)).unwrap();
    let opts = runtime::DeviceOptions {
        compute_ring_size: 1 << 16,
        sdma_ring_size: 1 << 16,
        ..Default::default()
    };
    let open = |o| {
        emu::open_usb_on(gpu.clone(), runtime::usb::Firmware::Custom, o, |t| {
            Box::new(t)
        })
    };
    let (d, _) = open(opts.clone()).expect("first session boots");
    std::mem::forget(d);
    gpu.hang_smu();
    let e = match open(opts) {
        Ok(_) => panic!("a GPU that cannot be reset was opened"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("did not end cleanly"), "{e}");
    assert!(e.contains("power-cycle the eGPU"), "{e}");
    assert!(!e.contains("/sys/bus/pci"), "{e}");
}
