//! The driverless path refuses, with a message that names the block, its version and the fix,
//! a GPU whose discovery table lists an IP version the driver was not generated for (the
//! versions come from the register JSON, `regs::COMPATIBLE`), before it writes a register.

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
fn rdna4_and_cdna_are_refused_by_name_with_the_kfd_path_as_the_fix() {
    for (v, fam) in [
        ((12, 0, 1), "RDNA4"),
        ((9, 5, 0), "CDNA4"),
        ((9, 4, 3), "CDNA3"),
    ] {
        let (ip, msg) = refusal(&with(AmIp::Gc, v));
        assert_eq!(ip, "GC");
        assert!(
            msg.contains(&format!("GC {}.{}.{}", v.0, v.1, v.2)),
            "{msg}"
        );
        assert!(msg.contains(fam) && msg.contains("kfd:N"), "{msg}");
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
