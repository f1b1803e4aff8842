//! The GC 12 (RDNA4) bring-up of the driverless driver, checked against tinygrad's recording of
//! its AM driver bringing up a gfx1200 (`../shared/conformance/tinygrad/pci_gfx1200_add.jsonl`)
//! on a replay device (tests/common/replay.rs; no emulator): the device answers our reads with
//! the values tinygrad's mock returned, our writes are recorded and compared with tinygrad's per
//! bring-up step (order of steps, registers written by one side only, field values decoded with
//! the register JSON). Every difference is fixed or accepted in docs/conformance.md (A20..A29).

#[path = "common/replay.rs"]
mod replay;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use runtime::conform::{self, Difference, Kind};
use runtime::pci::am::{gfx, sdma, AmDevice, AmGen, PriorBoot, AM_VERSION};
use runtime::pci::{PciDevice, PciOptions};
use runtime::record::{self, MemoryRecorder, SharedRecorder};
use serde_json::Value;

use replay::ReplayPci;

/// The installed recorder is process-wide: one replay at a time.
static ONE: Mutex<()> = Mutex::new(());

const REC: &str = "conformance/tinygrad/pci_gfx1200_add.jsonl";

fn recording() -> Option<Vec<Value>> {
    let path = testdata::require_shared(REC)?;
    let text = std::fs::read_to_string(&path).unwrap();
    Some(conform::parse_jsonl(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

fn registers() -> Option<PathBuf> {
    testdata::require_shared("amd-registers")
}

/// A directory holding the synthetic GC 12 firmware set (`with` false: an empty one).
fn firmware_dir(tag: &str, with: bool) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wavescope-gc12-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    if with {
        for (n, b) in replay::gc12_firmware() {
            std::fs::write(d.join(n), b).unwrap();
        }
    }
    d
}

struct Run {
    events: Vec<Value>,
    loaded: Vec<u32>,
    gen: AmGen,
    prior: PriorBoot,
}

/// Boots our driver on the replay of `evs`, creates the compute and SDMA queues with the ring
/// sizes tinygrad used (16 MiB rings, 4 KiB EOP), tears down; returns what we recorded.
fn run(evs: &[Value]) -> Result<Run, String> {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let mem = Arc::new(Mutex::new(MemoryRecorder::default()));
    let shared: SharedRecorder = mem.clone();
    record::install(Some(shared));
    let pci: Arc<dyn PciDevice> = Arc::new(ReplayPci::new(evs));
    let opts = PciOptions {
        firmware_dir: firmware_dir("fw", true),
        handshake_timeout_ms: 2000,
        ..Default::default()
    };
    let out = (|| -> Result<(Vec<u32>, AmGen, PriorBoot), String> {
        let mut dev = AmDevice::boot(pci, &opts).map_err(|e| e.to_string())?;
        let gen = dev.gen();
        let prior = dev.prior_boot;
        let va = |dev: &mut AmDevice, n: u64| dev.gmc.valloc(n).map_err(|e| e.to_string());
        let (ring, rptr, wptr, eop) = (
            va(&mut dev, 16 << 20)?,
            va(&mut dev, 0x1000)?,
            va(&mut dev, 0x1000)?,
            va(&mut dev, 0x1000)?,
        );
        dev.regs.phase("AM_GFX.setup_ring");
        let q = gfx::setup_compute_queue(&mut dev, ring, 16 << 20, rptr, wptr, eop, 0x1000)
            .map_err(|e| e.to_string())?;
        dev.gfx_queue = Some(q);
        let (sring, srptr, swptr) = (
            va(&mut dev, 16 << 20)?,
            va(&mut dev, 0x1000)?,
            va(&mut dev, 0x1000)?,
        );
        dev.regs.phase("AM_SDMA.setup_ring");
        let s = sdma::setup_queue(&mut dev, sring, 16 << 20, srptr, swptr)
            .map_err(|e| e.to_string())?;
        dev.sdma_queue = Some(s);
        // The add synchronizes before teardown, which drains the interrupt ring.
        dev.regs.phase("AM_IH.drain");
        let vram = dev.vram.clone();
        dev.ih.drain(&dev.regs, &vram).map_err(|e| e.to_string())?;
        let loaded = dev.psp.loaded.clone();
        dev.fini().map_err(|e| e.to_string())?;
        Ok((loaded, gen, prior))
    })();
    record::install(None);
    let events = std::mem::take(&mut mem.lock().unwrap().events);
    let (loaded, gen, prior) = out.map_err(|e| {
        let tail: Vec<String> = events
            .iter()
            .rev()
            .take(12)
            .map(|e| format!("{} {} {} {}", e["ev"], e["name"], e["reg"], e["val"]))
            .collect();
        format!("{e}; last accesses (newest first):\n{}", tail.join("\n"))
    })?;
    Ok(Run {
        events,
        loaded,
        gen,
        prior,
    })
}

fn compare(ours: &[Value], reference: &[Value], regs: &std::path::Path) -> Vec<Difference> {
    // The bring-up's register writes and SMU messages (the add's PM4/SDMA are the emulator
    // conformance test's).
    conform::compare_with(ours, reference, "gfx1200", &["mmio", "smu"], Some(regs)).differences
}

#[test]
fn gc12_bring_up_matches_tinygrads_recording() {
    let (Some(evs), Some(regs)) = (recording(), registers()) else {
        return;
    };
    let r = run(&evs).expect("the GC 12 bring-up runs on the replay");
    assert_eq!(r.gen, AmGen::Gc12);
    // tinygrad's mock reads SCRATCH_REG7 = 0: a GPU no driver of ours brought up.
    assert_eq!(r.prior, PriorBoot::Foreign);
    // tinygrad's LOAD_IP_FW submissions (SMU, SDMA, PFP/ME/MEC + P0 stacks, IMU, RLC).
    let theirs = evs
        .iter()
        .filter(|e| {
            e["ev"] == "mmio_w"
                && e["ctx"]
                    .as_str()
                    .is_some_and(|c| c.contains("_load_ip_fw_cmd/AM_PSP._ring_submit"))
        })
        .count();
    assert_eq!(
        r.loaded.len(),
        theirs,
        "LOAD_IP_FW commands: ours {:?}",
        r.loaded
    );
    // Every bring-up step of tinygrad's runs, in its order, and writes.
    let ours_w = r.events.iter().filter(|e| e["ev"] == "mmio_w").count();
    assert!(ours_w > 300, "only {ours_w} register writes recorded");
    let diffs = compare(&r.events, &evs, &regs);
    let mut bad = Vec::new();
    for d in &diffs {
        println!("{d}");
        if d.accepted.is_none() {
            bad.push(d.to_string());
        }
    }
    println!(
        "pci_gfx1200_add (GC 12 bring-up, replay): {} differences, {} unaccepted",
        diffs.len(),
        bad.len()
    );
    assert!(
        bad.is_empty(),
        "unaccepted differences from tinygrad's GC 12 bring-up:\n{}",
        bad.join("\n")
    );
}

#[test]
fn a_changed_field_in_the_reference_is_reported_by_register_and_field() {
    let (Some(mut evs), Some(regs)) = (recording(), registers()) else {
        return;
    };
    let r = run(&evs).expect("the GC 12 bring-up runs on the replay");
    // SDMA0_UTCL1_CNTL in AM_SDMA.init_hw: 0x609 (resp_mode 3, redo_delay 9) -> redo_delay 10.
    let e = evs
        .iter_mut()
        .find(|e| e["ev"] == "mmio_w" && e["name"] == "regSDMA0_UTCL1_CNTL")
        .expect("the recording writes SDMA0_UTCL1_CNTL");
    assert_eq!(e["val"], "0x609");
    e["val"] = Value::String("0x60a".into());
    let diffs = compare(&r.events, &evs, &regs);
    let hit = diffs.iter().find(|d| {
        d.kind == Kind::FieldDiffers
            && d.what == "SDMA0_UTCL1_CNTL"
            && d.field.as_deref() == Some("redo_delay")
    });
    let hit = hit.unwrap_or_else(|| panic!("not reported: {diffs:#?}"));
    assert!(hit.accepted.is_none(), "{hit}");
    assert_eq!(hit.op, "mmio:AM_SDMA.init_hw");
}

#[test]
fn missing_gc12_firmware_names_the_file_and_the_package() {
    let Some(evs) = recording() else {
        return;
    };
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let opts = PciOptions {
        firmware_dir: firmware_dir("nofw", false),
        handshake_timeout_ms: 200,
        ..Default::default()
    };
    let e = AmDevice::boot(Arc::new(ReplayPci::new(&evs)), &opts)
        .err()
        .expect("no firmware, no bring-up")
        .to_string();
    assert!(
        e.contains("psp_14_0_2_sos.bin") && e.contains("firmware-amd-graphics"),
        "{e}"
    );
}

#[test]
fn an_unknown_gc_version_is_refused_by_name() {
    let Some(mut evs) = recording() else {
        return;
    };
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let info = evs
        .iter_mut()
        .find(|e| e["ev"] == "device_info")
        .expect("device_info");
    info["am_ip_versions"]["GC"] = serde_json::json!([12, 5, 0]);
    let opts = PciOptions {
        firmware_dir: firmware_dir("unknown", true),
        handshake_timeout_ms: 200,
        ..Default::default()
    };
    let e = AmDevice::boot(Arc::new(ReplayPci::new(&evs)), &opts)
        .err()
        .expect("GC 12.5.0 refused")
        .to_string();
    assert!(e.contains("12.5.0") && e.contains("kfd:N"), "{e}");
}

/// The recording with the previous session's marks as tinygrad's partial-boot test reads them:
/// SCRATCH_REG7 = our stamp, SCRATCH_REG6 = `running`.
fn with_marks(evs: &[Value], running: u32) -> Vec<Value> {
    let mut evs = evs.to_vec();
    let reg6 = evs
        .iter()
        .find(|e| e["ev"] == "mmio_w" && e["name"] == "regSCRATCH_REG6")
        .map(|e| e["reg"].clone())
        .expect("the recording writes SCRATCH_REG6");
    let r7 = evs
        .iter_mut()
        .find(|e| e["ev"] == "mmio_r" && e["name"] == "regSCRATCH_REG7")
        .expect("the recording reads SCRATCH_REG7");
    r7["val"] = Value::String(format!("{AM_VERSION:#x}"));
    evs.push(serde_json::json!({
        "ev": "mmio_r", "name": "regSCRATCH_REG6", "reg": reg6,
        "val": format!("{running:#x}"), "ctx": "AMDev.__init__",
    }));
    evs
}

#[test]
fn a_previous_session_is_told_apart_by_its_scratch_marks() {
    let Some(evs) = recording() else {
        return;
    };
    let clean = run(&with_marks(&evs, 0)).expect("boots");
    assert_eq!(clean.prior, PriorBoot::Clean);
    let crashed = run(&with_marks(&evs, 1)).expect("boots");
    assert_eq!(crashed.prior, PriorBoot::Dirty);
    // Our own boot leaves the marks for the next session: stamp, then `running`, cleared at
    // teardown.
    let w = |name: &str| -> Vec<String> {
        clean
            .events
            .iter()
            .filter(|e| e["ev"] == "mmio_w" && e["name"] == name)
            .map(|e| e["val"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(w("regSCRATCH_REG7"), vec![format!("{AM_VERSION:#x}")]);
    assert_eq!(
        w("regSCRATCH_REG6"),
        vec!["0x1".to_string(), "0x0".to_string()]
    );
}
