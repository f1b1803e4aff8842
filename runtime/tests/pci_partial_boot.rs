//! The partial boot (tinygrad's `AMDev.__init__` with `partial_boot`) end to end on the emulated
//! PCI GPU, which keeps its registers, VRAM and firmware state across a driver teardown: a
//! second session after a clean teardown skips SOC, MM hub, PSP (firmware) and SMU setup, which
//! is counted from the register writes and mailbox messages the device saw, and still computes
//! the right result; a session that did not end cleanly gets a mode-1 reset and a full boot, or
//! a refusal naming the fix when the SMU cannot reset the GPU. PCI and USB share the driver.

mod common;

use common::{check_vadd, opts};
use emu::pci::{EmuPciConfig, EmuPciGpu, FirmwareLog};
use emu::EmuArch;
use runtime::pci::am::gmc::BOOT_RECORD;
use runtime::pci::am::smu;
use runtime::Device;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Path {
    Pci,
    Usb,
}

fn open(gpu: &EmuPciGpu, path: Path) -> runtime::error::Result<Device> {
    match path {
        Path::Pci => emu::open_pci_on(gpu.clone(), opts()).map(|(d, _)| d),
        Path::Usb => emu::open_usb_on(gpu.clone(), runtime::usb::Firmware::Custom, opts(), |t| {
            Box::new(t)
        })
        .map(|(d, _)| d),
    }
}

/// What one session did to the device: register writes by name, and mailbox traffic.
struct Session {
    writes: Vec<&'static str>,
    bootloader: usize,
    psp_cmds: usize,
    smu_msgs: Vec<u32>,
}

impl Session {
    /// The device's traffic since `(writes, log)` were taken.
    fn since(gpu: &EmuPciGpu, writes: usize, log: &FirmwareLog) -> Session {
        let now = gpu.firmware_log();
        Session {
            writes: gpu.reg_writes()[writes..]
                .iter()
                .map(|w| gpu.reg_name(w.addr).unwrap_or("?"))
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
        self.writes.iter().filter(|n| **n == name).count()
    }
}

/// The blocks a partial boot skips, by a register each writes in the full boot: the SOC's
/// doorbell aperture, the MM hub's VMID 0 context, the PSP bootloader and ring, and the SMU's
/// driver table and feature enable.
const SKIPPED: [&str; 4] = [
    "RCC_DEV0_EPF0_RCC_DOORBELL_APER_EN",
    "MMVM_CONTEXT0_CNTL",
    "MP0_SMN_C2PMSG_35",
    "MP0_SMN_C2PMSG_67",
];
/// What every boot programs: the GC hub, the MEC's program counter, SDMA, the IH rings, the
/// boot stamp.
const REDONE: [&str; 5] = [
    "GCVM_CONTEXT0_CNTL",
    "CP_MEC_RS64_PRGRM_CNTR_START",
    "SDMA0_UTCL1_CNTL",
    "IH_RB_CNTL",
    "SCRATCH_REG7",
];

fn mark(gpu: &EmuPciGpu) -> (usize, FirmwareLog) {
    (gpu.reg_writes().len(), gpu.firmware_log())
}

fn clean_reopen_boots_partially(arch: EmuArch, path: Path) {
    let gpu = EmuPciGpu::new(EmuPciConfig::new(arch)).unwrap();
    let mut d = open(&gpu, path).expect("first session boots");
    // The bring-up's traffic only (as `second` below).
    let first = Session::since(&gpu, 0, &FirmwareLog::default());
    check_vadd(&mut d, arch, 1000, 1);
    drop(d);
    let (w, log) = mark(&gpu);
    let mut d = open(&gpu, path).expect("second session boots");
    let second = Session::since(&gpu, w, &log);
    // The dispatch still computes the right result on what the partial boot set up.
    check_vadd(&mut d, arch, 1000, 2);
    drop(d);
    println!(
        "{arch:?} {path:?} bring-up: full {} register writes, {} PSP commands, {} SMU messages; \
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
    for name in REDONE {
        assert!(
            second.count(name) > 0,
            "the partial boot never wrote {name}"
        );
    }
    assert_eq!(
        first.bootloader, 8,
        "the full boot loads every SOS component"
    );
    assert_eq!(second.bootloader, 0, "no SOS component loaded again");
    assert!(first.psp_cmds > 10);
    assert_eq!(second.psp_cmds, 0, "no firmware loaded again");
    for m in [
        smu::MSG_MODE1_RESET,
        smu::MSG_ENABLE_ALL_FEATURES,
        smu::MSG_SET_DRIVER_DRAM_ADDR_LOW,
    ] {
        assert!(
            !second.smu_msgs.contains(&m),
            "SMU message {m:#x} sent again"
        );
    }
    assert!(
        first.smu_msgs.contains(&smu::MSG_ENABLE_ALL_FEATURES),
        "the full boot enables the SMU's features"
    );
    // A third session after the partial one's teardown is partial again.
    let (w, log) = mark(&gpu);
    let mut d = open(&gpu, path).expect("third session boots");
    check_vadd(&mut d, arch, 333, 3);
    assert_eq!(Session::since(&gpu, w, &log).bootloader, 0);
}

#[test]
fn pci_gfx1100_partial_boot_after_a_clean_teardown() {
    clean_reopen_boots_partially(EmuArch::Gfx1100, Path::Pci);
}

#[test]
fn pci_gfx1201_partial_boot_after_a_clean_teardown() {
    clean_reopen_boots_partially(EmuArch::Gfx1201, Path::Pci);
}

#[test]
fn usb_gfx1201_partial_boot_after_a_clean_teardown() {
    clean_reopen_boots_partially(EmuArch::Gfx1201, Path::Usb);
}

/// A session that never tore down (a crash: the device is left as the session had it).
fn crashed_session(gpu: &EmuPciGpu, arch: EmuArch, path: Path) {
    let mut d = open(gpu, path).expect("first session boots");
    check_vadd(&mut d, arch, 100, 1);
    std::mem::forget(d);
}

fn dirty_reopen_resets_and_boots_fully(arch: EmuArch, path: Path) {
    let gpu = EmuPciGpu::new(EmuPciConfig::new(arch)).unwrap();
    crashed_session(&gpu, arch, path);
    let (w, log) = mark(&gpu);
    let mut d = open(&gpu, path).expect("a crashed session is recovered");
    let second = Session::since(&gpu, w, &log);
    assert_eq!(
        &second.smu_msgs[..2],
        &[smu::MSG_GET_SMU_VERSION, smu::MSG_MODE1_RESET],
        "mode-1 reset first"
    );
    assert_eq!(second.bootloader, 8, "then the full boot");
    for name in SKIPPED {
        assert!(
            second.count(name) > 0,
            "the full boot after a reset writes {name}"
        );
    }
    check_vadd(&mut d, arch, 1000, 4);
}

#[test]
fn pci_gfx1100_a_crashed_session_gets_a_reset_and_a_full_boot() {
    dirty_reopen_resets_and_boots_fully(EmuArch::Gfx1100, Path::Pci);
}

#[test]
fn pci_gfx1201_a_crashed_session_gets_a_reset_and_a_full_boot() {
    dirty_reopen_resets_and_boots_fully(EmuArch::Gfx1201, Path::Pci);
}

#[test]
fn usb_gfx1100_a_crashed_session_gets_a_reset_and_a_full_boot() {
    dirty_reopen_resets_and_boots_fully(EmuArch::Gfx1100, Path::Usb);
}

#[test]
fn a_damaged_boot_record_means_a_full_boot() {
    let arch = EmuArch::Gfx1201;
    let gpu = EmuPciGpu::new(EmuPciConfig::new(arch)).unwrap();
    drop(open(&gpu, Path::Pci).expect("first session boots"));
    // Another layout than the record's (one allocation moved): not taken for ours.
    let mut word = [0u8; 8];
    gpu.bar_read(0, BOOT_RECORD + 7 * 8, &mut word).unwrap();
    let moved = u64::from_le_bytes(word) + 0x1000;
    gpu.bar_write(0, BOOT_RECORD + 7 * 8, &moved.to_le_bytes())
        .unwrap();
    let (w, log) = mark(&gpu);
    let mut d = open(&gpu, Path::Pci).expect("boots fully");
    let s = Session::since(&gpu, w, &log);
    assert!(
        s.smu_msgs.contains(&smu::MSG_MODE1_RESET),
        "{:?}",
        s.smu_msgs
    );
    assert_eq!(s.bootloader, 8);
    check_vadd(&mut d, arch, 1000, 5);
}

fn read_u64(gpu: &EmuPciGpu, vram: u64) -> u64 {
    let mut word = [0u8; 8];
    gpu.bar_read(0, vram, &mut word).unwrap();
    u64::from_le_bytes(word)
}

#[test]
fn a_boot_record_with_another_tmr_size_means_a_full_boot() {
    let arch = EmuArch::Gfx1100;
    let gpu = EmuPciGpu::new(EmuPciConfig::new(arch)).unwrap();
    drop(open(&gpu, Path::Pci).expect("first session boots"));
    // The record's TMR size (header word 5), as the emulated PSP's LOAD_TOC reported it.
    let tmr_at = BOOT_RECORD + 5 * 8;
    let tmr = read_u64(&gpu, tmr_at);
    assert!(tmr > 0, "MP0 13.0.0 asks for a TMR");
    // Magic, stamp, generation, VRAM size and MC base intact, so the record parses and is
    // planned for; re-deriving the allocations with this TMR size cannot land where it says.
    gpu.bar_write(0, tmr_at, &(tmr + (1 << 20)).to_le_bytes())
        .unwrap();
    let (w, log) = mark(&gpu);
    let mut d = open(&gpu, Path::Pci).expect("boots fully");
    let s = Session::since(&gpu, w, &log);
    assert_eq!(s.bootloader, 8, "every SOS component loaded again");
    for name in SKIPPED {
        assert!(s.count(name) > 0, "the full boot writes {name}");
    }
    check_vadd(&mut d, arch, 1000, 9);
    drop(d);
    // The full boot started over on fresh PSP state: its record has LOAD_TOC's size again, and
    // the next clean reopen takes it.
    assert_eq!(
        read_u64(&gpu, tmr_at),
        tmr,
        "the rewritten record's TMR size"
    );
    let (w, log) = mark(&gpu);
    let mut d = open(&gpu, Path::Pci).expect("third session boots");
    assert_eq!(Session::since(&gpu, w, &log).bootloader, 0, "partial again");
    check_vadd(&mut d, arch, 100, 10);
}

#[test]
fn a_boot_record_with_an_impossible_tmr_size_means_a_full_boot() {
    // A TMR size no boot memory holds (64 MiB: twice the boot region, above the PSP's
    // largest) in an otherwise intact record: the re-derivation cannot allocate it, which is
    // "another layout" (a full boot), not a failed open.
    let arch = EmuArch::Gfx1100;
    let gpu = EmuPciGpu::new(EmuPciConfig::new(arch)).unwrap();
    drop(open(&gpu, Path::Pci).expect("first session boots"));
    let tmr_at = BOOT_RECORD + 5 * 8;
    gpu.bar_write(0, tmr_at, &(64u64 << 20).to_le_bytes())
        .unwrap();
    let (w, log) = mark(&gpu);
    let mut d = open(&gpu, Path::Pci).expect("boots fully");
    assert_eq!(Session::since(&gpu, w, &log).bootloader, 8, "a full boot");
    check_vadd(&mut d, arch, 100, 11);
}

#[test]
fn a_gpu_stamped_by_tinygrad_is_not_taken_for_ours() {
    let arch = EmuArch::Gfx1100;
    let gpu = EmuPciGpu::new(EmuPciConfig::new(arch)).unwrap();
    drop(open(&gpu, Path::Pci).expect("first session boots"));
    // tinygrad's AMDev.Version at the recorded commit (its boot memory differs from ours).
    let reg7 = gpu
        .reg_writes()
        .iter()
        .rev()
        .find(|w| gpu.reg_name(w.addr) == Some("SCRATCH_REG7"))
        .map(|w| w.addr)
        .expect("SCRATCH_REG7 written");
    gpu.bar_write(5, u64::from(reg7) * 4, &0xA000_0008u32.to_le_bytes())
        .unwrap();
    let (w, log) = mark(&gpu);
    let mut d = open(&gpu, Path::Pci).expect("boots fully");
    assert_eq!(Session::since(&gpu, w, &log).bootloader, 8);
    check_vadd(&mut d, arch, 100, 6);
}

#[test]
fn a_pending_gc_fault_means_a_reset_and_the_reset_clears_it() {
    use runtime::pci::am::{regs, AmGen, AmIp};
    let arch = EmuArch::Gfx1100;
    let cfg = EmuPciConfig::new(arch);
    let gc = &cfg.ips.iter().find(|r| r.0 == AmIp::Gc).expect("GC").2;
    let def = regs::GCVM_L2_PROTECTION_FAULT_STATUS
        .on(AmGen::Gc11)
        .expect("GC 11 fault status");
    let status = gc[usize::from(def.base_index)] + def.offset;
    let gpu = EmuPciGpu::new(cfg).unwrap();
    drop(open(&gpu, Path::Pci).expect("first session boots"));
    // A fault latched after the last workload (the teardown itself was orderly).
    gpu.bar_write(5, u64::from(status) * 4, &1u32.to_le_bytes())
        .unwrap();
    let (w, log) = mark(&gpu);
    let mut d = open(&gpu, Path::Pci).expect("recovered");
    let s = Session::since(&gpu, w, &log);
    assert!(
        s.smu_msgs.contains(&smu::MSG_MODE1_RESET),
        "{:?}",
        s.smu_msgs
    );
    assert_eq!(s.bootloader, 8);
    check_vadd(&mut d, arch, 500, 7);
    drop(d);
    // The reset cleared the fault: the next clean reopen is partial again.
    let (w, log) = mark(&gpu);
    let mut d = open(&gpu, Path::Pci).expect("third session boots");
    assert_eq!(Session::since(&gpu, w, &log).bootloader, 0);
    check_vadd(&mut d, arch, 500, 8);
}

/// GC 9 (the emulated MI350, 8 XCCs) end to end through `runtime::Device`: the second session
/// after a clean teardown skips the PSP and SMU setup (tinygrad's family-independent test), still
/// gets its queues on every XCC and computes the right result; so does a third.
#[test]
fn pci_gfx950_partial_boot_after_a_clean_teardown() {
    let arch = EmuArch::Gfx950;
    let gpu = EmuPciGpu::new(EmuPciConfig::new(arch)).unwrap();
    let mut d = open(&gpu, Path::Pci).expect("first session boots");
    let first = Session::since(&gpu, 0, &FirmwareLog::default());
    check_vadd(&mut d, arch, 1000, 1);
    drop(d);
    for (round, n) in [(2u32, 1000usize), (3, 333)] {
        let (w, log) = mark(&gpu);
        let mut d = open(&gpu, Path::Pci).expect("a later session boots");
        let again = Session::since(&gpu, w, &log);
        check_vadd(&mut d, arch, n, round);
        drop(d);
        assert!(
            first.bootloader > 0 && first.psp_cmds > 10,
            "the full boot loads firmware"
        );
        assert_eq!(
            again.bootloader, 0,
            "session {round}: no SOS component loaded again"
        );
        assert_eq!(
            again.psp_cmds, 0,
            "session {round}: no firmware loaded again"
        );
        assert!(
            again.writes.len() < first.writes.len(),
            "session {round}: {} writes, the full boot {}",
            again.writes.len(),
            first.writes.len()
        );
        for name in ["SCRATCH_REG7", "IH_RB_CNTL"] {
            assert!(again.count(name) > 0, "session {round} never wrote {name}");
        }
    }
}

/// GC 9 through `runtime::Device`: a session that never tore down (SCRATCH_REG6 still 1) gets
/// SMU 13.0.12's GfxDriverReset and then the whole full boot (every bootloader step and PSP
/// command of the first session), computes the right result, and its clean teardown lets the
/// next session boot partially.
#[test]
fn pci_gfx950_a_crashed_session_gets_a_reset_and_a_full_boot() {
    use emu::pci::gc9::smu_msg;
    let arch = EmuArch::Gfx950;
    let gpu = EmuPciGpu::new(EmuPciConfig::new(arch)).unwrap();
    let mut d = open(&gpu, Path::Pci).expect("first session boots");
    let first = Session::since(&gpu, 0, &FirmwareLog::default());
    check_vadd(&mut d, arch, 100, 1);
    std::mem::forget(d);
    let (w, log) = mark(&gpu);
    let mut d = open(&gpu, Path::Pci).expect("a crashed session is recovered");
    let second = Session::since(&gpu, w, &log);
    assert_eq!(
        &second.smu_msgs[..2],
        &[smu_msg::GET_SMU_VERSION, smu_msg::GFX_DRIVER_RESET],
        "the SMU is asked for a reset first"
    );
    assert!(first.bootloader > 0 && first.psp_cmds > 10);
    assert_eq!(
        second.bootloader, first.bootloader,
        "every sOS component again"
    );
    assert_eq!(second.psp_cmds, first.psp_cmds, "every firmware again");
    check_vadd(&mut d, arch, 1000, 2);
    drop(d);
    let (w, log) = mark(&gpu);
    let mut d = open(&gpu, Path::Pci).expect("a clean reopen boots");
    let third = Session::since(&gpu, w, &log);
    assert_eq!(
        third.psp_cmds, 0,
        "after the recovered session's teardown: partial"
    );
    check_vadd(&mut d, arch, 333, 3);
}
