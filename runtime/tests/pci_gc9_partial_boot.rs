//! The GC 9 partial boot (tinygrad's `AMDev.__init__` with `partial_boot`, the same test and
//! the same skipped blocks on every family) on the emulated MI350, which keeps its registers,
//! VRAM and firmware state between sessions: after a session of ours ended cleanly, the next
//! one skips SOC, MM hubs, PSP (firmware) and SMU set-up, counted from the register writes
//! and mailbox traffic the device saw, and SDMA still copies; a session that did not end
//! cleanly, a damaged record, or tinygrad's stamp get a full boot. As
//! runtime/tests/pci_partial_boot.rs for GC 11/12; here through `Gc9::boot` directly (the
//! register traffic of the boot alone), there through `runtime::Device` (`pci_gfx950_*`).

#[path = "common/gc9_am.rs"]
mod gc9_am;

use emu::pci::{EmuPciGpu, FirmwareLog};
use gc9_am::{copy_round_trip, mi350, open};
use runtime::pci::am::boot::BootKind;
use runtime::pci::am::gmc::BOOT_RECORD;
use runtime::pci::am::{regs, RegIo};
use runtime::pci::{PciDevice, BAR_MMIO};

/// What one session did to the device: register writes by name, and mailbox traffic.
struct Traffic {
    writes: Vec<String>,
    bootloader: usize,
    psp_cmds: usize,
    smu_msgs: Vec<u32>,
}

impl Traffic {
    fn since(gpu: &EmuPciGpu, names: &Names, writes: usize, log: &FirmwareLog) -> Traffic {
        let now = gpu.firmware_log();
        Traffic {
            writes: gpu.reg_writes()[writes..]
                .iter()
                .map(|w| names.get(&w.addr).cloned().unwrap_or_default())
                .collect(),
            bootloader: now.bootloader.len() - log.bootloader.len(),
            psp_cmds: now.psp_cmds.len() - log.psp_cmds.len(),
            smu_msgs: now.smu_msgs[log.smu_msgs.len()..]
                .iter()
                .map(|m| m.0)
                .collect(),
        }
    }
    fn count(&self, name: &str) -> usize {
        self.writes.iter().filter(|n| *n == name).count()
    }
}

type Names = std::collections::HashMap<u32, String>;

/// The register names of the emulated MI350's discovered blocks (from the JSON).
fn names(gpu: &EmuPciGpu, fw: &std::path::Path) -> Option<Names> {
    let s = open(gpu, fw).unwrap();
    s.g.end_session().unwrap();
    gc9_am::json_names(&s.g.disc)
}

fn mark(gpu: &EmuPciGpu) -> (usize, FirmwareLog) {
    (gpu.reg_writes().len(), gpu.firmware_log())
}

/// Blocks the partial boot skips, by a register each writes in the full boot: the NBIO doorbell
/// aperture (AM_SOC), an MM hub's VMID 0 context (AM_GMC), the PSP bootloader and ring (AM_PSP).
const SKIPPED: [&str; 4] = [
    "RCC_DEV0_EPF0_RCC_DOORBELL_APER_EN",
    "MMVM_CONTEXT0_CNTL",
    "MP0_SMN_C2PMSG_35",
    "MP0_SMN_C2PMSG_64",
];
/// What every boot programs: each XCC's GC hub, the MEC (halt, release), SDMA, the IH rings
/// (ours, A23/A82), the boot stamp.
const REDONE: [&str; 5] = [
    "GCVM_CONTEXT0_CNTL",
    "CP_MEC_CNTL",
    "SDMA_CNTL",
    "IH_RB_CNTL",
    "SCRATCH_REG7",
];
/// SMU 13.0.12 messages only a full boot sends (smu_v13_0_12_ppsmc.h via tinygrad's autogen):
/// GfxDriverReset, EnableAllSmuFeatures, SetDriverDramAddrHigh/Low.
const FULL_ONLY_MSGS: [u32; 4] = [0x3, 0x5, 0xD, 0xE];

#[test]
fn gfx950_partial_boot_after_a_clean_session() {
    // Names from another MI350 of the same configuration (same discovery table).
    let (g0, f0) = mi350();
    let Some(names) = names(&g0, f0.path()) else {
        return;
    };
    let (gpu, fw) = mi350();
    let s = open(&gpu, fw.path()).expect("first session boots");
    assert_eq!(s.g.boot_kind, BootKind::Full);
    // No boot allocation covers the record's page.
    assert!(!s.g.boot_log.is_empty());
    for (at, n) in &s.g.boot_log {
        assert!(
            at + n <= BOOT_RECORD || *at >= BOOT_RECORD + 0x1000,
            "{at:#x}+{n:#x} covers the boot record"
        );
    }
    let first = Traffic::since(&gpu, &names, 0, &FirmwareLog::default());
    copy_round_trip(&gpu, &s.g);
    s.g.end_session().unwrap();
    drop(s);

    let (w, log) = mark(&gpu);
    let s = open(&gpu, fw.path()).expect("second session boots");
    let second = Traffic::since(&gpu, &names, w, &log);
    assert_eq!(s.g.boot_kind, BootKind::Partial);
    // SDMA still copies on what the partial boot set up (engine, doorbell routing, GC hubs).
    copy_round_trip(&gpu, &s.g);
    println!(
        "gfx950 bring-up: full {} register writes, {} PSP commands, {} SMU messages; \
         partial {} register writes, {} PSP commands, {} SMU messages",
        first.writes.len(),
        first.psp_cmds,
        first.smu_msgs.len(),
        second.writes.len(),
        second.psp_cmds,
        second.smu_msgs.len()
    );
    for name in SKIPPED {
        assert!(first.count(name) > 0, "the full boot writes {name}");
        assert_eq!(second.count(name), 0, "the partial boot wrote {name}");
    }
    let xccs = s.g.xccs;
    for name in REDONE {
        assert!(
            second.count(name) > 0,
            "the partial boot never wrote {name}"
        );
    }
    assert_eq!(
        second.count("GCVM_CONTEXT0_CNTL"),
        xccs,
        "one GC hub per XCC"
    );
    // The root directory is zeroed again under MM hubs left programmed: every hub's TLB is
    // invalidated (each XCC's GC hub, each AID's MM hub).
    assert_eq!(second.count("GCVM_INVALIDATE_ENG17_REQ"), xccs);
    assert_eq!(second.count("MMVM_INVALIDATE_ENG17_REQ"), s.g.vmhubs);
    // reset_mec: CP/CPC soft reset set and cleared on every XCC.
    assert_eq!(second.count("GRBM_SOFT_RESET"), 2 * xccs);
    assert!(first.bootloader > 0 && first.psp_cmds > 0);
    assert_eq!((second.bootloader, second.psp_cmds), (0, 0), "no PSP work");
    for m in FULL_ONLY_MSGS.iter().skip(1) {
        assert!(first.smu_msgs.contains(m), "full boot sends SMU {m:#x}");
    }
    for m in FULL_ONLY_MSGS {
        assert!(
            !second.smu_msgs.contains(&m),
            "partial boot sent SMU {m:#x}"
        );
    }
    assert!(second.writes.len() < first.writes.len());
}

#[test]
fn gfx950_a_session_that_did_not_end_gets_a_reset_and_a_full_boot() {
    let (gpu, fw) = mi350();
    let s = open(&gpu, fw.path()).unwrap();
    // No end_session: SCRATCH_REG6 stays 1, as after a crash.
    drop(s);
    let (w, log) = mark(&gpu);
    let s = open(&gpu, fw.path()).expect("boots again");
    let t = Traffic::since(&gpu, &Names::new(), w, &log);
    assert_eq!(s.g.boot_kind, BootKind::FullAfterReset);
    // GetSmuVersion (is the SMU alive), then GfxDriverReset before anything else.
    let reset = t.smu_msgs.iter().position(|m| *m == 0x3);
    assert!(
        reset.is_some() && t.smu_msgs[..reset.unwrap()].iter().all(|m| *m == 0x2),
        "{:x?}",
        t.smu_msgs
    );
    assert!(t.bootloader > 0, "the PSP is loaded again");
    copy_round_trip(&gpu, &s.g);
}

#[test]
fn gfx950_a_damaged_record_or_a_foreign_stamp_means_a_full_boot() {
    let (gpu, fw) = mi350();
    let s = open(&gpu, fw.path()).unwrap();
    s.g.end_session().unwrap();
    // One bit of the record's magic.
    let mut b = [0u8; 1];
    gpu.bar_read(0, BOOT_RECORD, &mut b).unwrap();
    gpu.bar_write(0, BOOT_RECORD, &[b[0] ^ 1]).unwrap();
    drop(s);
    let s = open(&gpu, fw.path()).unwrap();
    assert_ne!(s.g.boot_kind, BootKind::Partial);
    s.g.end_session().unwrap();
    drop(s);
    // That full boot wrote a good record again: partial now.
    let s = open(&gpu, fw.path()).unwrap();
    assert_eq!(s.g.boot_kind, BootKind::Partial);
    s.g.end_session().unwrap();
    drop(s);
    // tinygrad's stamp (AMDev.Version 0xA0000008 at a9069c1): its boot memory is not ours.
    let mut r = RegIo::new(gpu.bar(BAR_MMIO).unwrap());
    let disc = {
        let s = open(&gpu, fw.path()).unwrap();
        s.g.end_session().unwrap();
        s.g.disc.clone()
    };
    r.gen = runtime::pci::am::check_versions(&disc).unwrap();
    let bases = disc
        .instances(runtime::pci::am::AmIp::Gc)
        .first()
        .unwrap()
        .bases
        .clone();
    r.set_bases(runtime::pci::am::AmIp::Gc, bases);
    r.write(regs::SCRATCH_REG7, 0xA000_0008).unwrap();
    let s = open(&gpu, fw.path()).unwrap();
    assert_ne!(s.g.boot_kind, BootKind::Partial);
}

/// SMU 13.0.12's GfxDriverReset on a running MI350 (a session that never ended) brings the part
/// back to what a real mode-1 reset leaves: the sOS no longer running (C2PMSG_81 = 0, so the
/// next boot loads it through the bootloader) and the session marks and GC fault cleared, so
/// the next driver takes the GPU for a foreign one.
#[test]
fn gfx950_gfx_driver_reset_leaves_no_sos_and_no_session_marks() {
    use runtime::pci::am::{gc9, prior_boot, psp, smu, PriorBoot};
    let (gpu, fw) = mi350();
    let s = open(&gpu, fw.path()).expect("boots");
    let r = &s.g.regs;
    assert!(psp::sos_alive(r).unwrap(), "the full boot starts the sOS");
    assert_eq!(
        prior_boot(r).unwrap(),
        PriorBoot::Dirty,
        "a running session"
    );
    smu::send(r, gc9::msg::GFX_DRIVER_RESET, 1, 2000).unwrap();
    assert!(!psp::sos_alive(r).unwrap(), "no sOS after the reset");
    assert_eq!(r.read(regs::SCRATCH_REG7).unwrap(), 0);
    assert_eq!(r.read(regs::SCRATCH_REG6).unwrap(), 0);
    assert_eq!(prior_boot(r).unwrap(), PriorBoot::Foreign);
}
