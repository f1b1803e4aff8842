//! `conformance`: every tinygrad recording in `shared/conformance/tinygrad` (override with
//! `WAVESCOPE_CONFORMANCE_DIR`) replayed on our matching emulated device — the recording's own
//! code object, buffers (their contents before the launch) and launch dims — with the command
//! recorder on; the result must equal the recording's buffer after the launch, and our
//! commands are compared with tinygrad's per operation (`runtime::conform`). One line per
//! recording: `match`, `accepted (N differences, see docs/conformance.md)`, `DIFFERS`, or
//! `blocked (reason)` for a recording without a launch. The driverless recordings (`pci_`,
//! `usb_`) run on the emulated Navi44 through the PCI or USB path with the bring-up recorded, so
//! their MMIO per AM step, SMU messages and USB transfers are compared too
//! (`runtime::conform_io`). Under `CI` a missing or empty directory, and any DIFFERS, fails.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use emu::{EmuArch, EmuConfig, EmuPlatform};
use runtime::conform::{self, Verdict};
use runtime::kfd::KfdIface;
use runtime::platform::{AllocKind, Platform};
use runtime::record::{MemoryRecorder, RecordingPlatform, SharedRecorder};
use runtime::{Device, DeviceOptions};
use serde_json::Value;

fn dir() -> PathBuf {
    std::env::var_os("WAVESCOPE_CONFORMANCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/tinygrad")
        })
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

fn u32s(v: &Value) -> [u32; 3] {
    let a = v.as_array().expect("a 3-element array");
    [0, 1, 2].map(|i| a[i].as_u64().unwrap() as u32)
}

/// The operations a launch's replay covers: what our runtime does for one kernel launch, its
/// buffer copies and the device's KFD calls.
const OPS: &[&str] = &[
    "wait",
    "memory_barrier",
    "exec",
    "signal",
    "timestamp",
    "sqtt_start",
    "sqtt_stop",
    "pmc_start",
    "pmc_read",
    "copy",
    "ioctl",
    "doorbell",
    "sysfs",
    "mmap",
];

struct Outcome {
    report: conform::Report,
    /// The launch's output differs from the recording's (what differs).
    wrong_result: Option<String>,
}

/// How a recording's device is reached: tinygrad's KFD, or its driverless AM driver on a PCI
/// GPU or behind the ASM2464 USB bridge (file name prefix `kfd_`, `pci_`, `usb_`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Via {
    Kfd,
    Pci,
    Usb,
}

/// The installed recorder is process-wide (the PCI/USB bring-up records through it).
static ONE: Mutex<()> = Mutex::new(());

/// Replays recording `evs` on `arch` over `path`; returns our recording's report.
fn replay(root: &std::path::Path, name: &str, evs: &[Value], arch: EmuArch, path: Via) -> Outcome {
    // tinygrad's SQTT=1 / PMC=1 recordings, by file name; both profile.
    let sqtt = name.contains("_sqtt");
    let pmc = name.contains("_pmc");
    let profile = sqtt || pmc;
    let rec: Arc<Mutex<MemoryRecorder>> = Arc::new(Mutex::new(MemoryRecorder::default()));
    let shared: SharedRecorder = rec.clone();
    let opts = DeviceOptions {
        wait_timeout: Duration::from_secs(10),
        profile,
        sqtt,
        sqtt_buffer_size: 1 << 20,
        // tinygrad's PMC=1 programs its default counters.
        pmc: if pmc {
            runtime::pmc::default_counters(arch.gc_version().0)
        } else {
            Vec::new()
        },
        ..DeviceOptions::default()
    };
    let wrong_result = match path {
        Via::Kfd => {
            let emu = EmuPlatform::new(EmuConfig::new(arch));
            let p: Arc<dyn Platform> = Arc::new(RecordingPlatform::new(
                Arc::new(emu.clone()),
                shared.clone(),
            ));
            let d =
                Device::new_recorded(Box::new(KfdIface::open(p, 0).unwrap()), opts, Some(shared))
                    .unwrap();
            run_launches(root, evs, d)
        }
        Via::Pci | Via::Usb => {
            // The driverless path records its MMIO, USB transfers and submissions through the
            // installed recorder, bring-up included.
            let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
            runtime::record::install(Some(shared));
            // The emulated gfx1201 configured as tinygrad's GPU, a Navi44 (GC 12.0.0, MP
            // 14.0.2): the same IP versions, so both sides decode with the same register JSON.
            assert_eq!(arch, EmuArch::Gfx1201, "no emulated PCI GPU for {arch:?}");
            let cfg = emu::pci::EmuPciConfig::navi44();
            let d = if path == Via::Pci {
                emu::open::open_pci_with(cfg, opts).map(|(d, _gpu)| d)
            } else {
                emu::open::open_usb_with(cfg, runtime::usb::Firmware::Custom, opts, |t| Box::new(t))
                    .map(|(d, _u)| d)
            };
            let r = d.map(|d| run_launches(root, evs, d));
            runtime::record::install(None);
            r.unwrap()
        }
    };
    let ours = std::mem::take(&mut rec.lock().unwrap().events);
    // WAVESCOPE_CONFORMANCE_OUT=dir keeps our recording (`<dir>/<name>`) for a closer look.
    if let Some(out) = std::env::var_os("WAVESCOPE_CONFORMANCE_OUT") {
        let lines: Vec<String> = ours.iter().map(Value::to_string).collect();
        let f = PathBuf::from(out).join(name);
        std::fs::write(&f, lines.join("\n")).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    }
    let arch_name = conform::arch_of(evs).unwrap_or_default();
    let report = if path == Via::Kfd {
        conform::compare(&ours, evs, &arch_name, OPS)
    } else {
        // Plus the bring-up's MMIO per AM step, the SMU messages and the USB transfer kinds,
        // register fields decoded with the register JSON.
        let regs = testdata::require_shared("amd-registers");
        let ops: Vec<&str> = OPS.iter().copied().chain(["mmio", "smu", "usb"]).collect();
        conform::compare_with(&ours, evs, &arch_name, &ops, regs.as_deref())
    };
    Outcome {
        report,
        wrong_result,
    }
}

/// Runs the recording's launches on `d` (its code objects, buffers before, dims) and tears the
/// device down; returns what differs from the recorded results.
fn run_launches(root: &std::path::Path, evs: &[Value], mut d: Device) -> Option<String> {
    let mut wrong_result = None;
    for l in evs.iter().filter(|e| e["ev"] == "launch") {
        let elf = std::fs::read(root.join(l["elf_file"].as_str().unwrap())).unwrap();
        let prg = d.load_program(&elf).unwrap();
        let mut bufs = Vec::new();
        for b in l["buffer_args"].as_array().unwrap() {
            let size = b["size"].as_u64().unwrap();
            let buf = d.alloc(size, AllocKind::VRAM).unwrap();
            if let Some(h) = b["before_hex"].as_str() {
                d.copyin(&buf, &unhex(h)).unwrap();
            }
            bufs.push((buf, b.clone()));
        }
        let refs: Vec<_> = bufs.iter().map(|(b, _)| b).collect();
        d.launch(
            &prg,
            &refs,
            &[],
            u32s(&l["global_size"]),
            u32s(&l["local_size"]),
        )
        .unwrap();
        d.synchronize().unwrap();
        for (buf, b) in &bufs {
            let (Some(after), true) = (b["after_hex"].as_str(), b["changed"] == true) else {
                continue;
            };
            let n = b["param_nbytes"].as_u64().unwrap() as usize;
            let mut out = vec![0u8; n];
            d.copyout(buf, &mut out).unwrap();
            let want = &unhex(after)[..n];
            if out != want {
                wrong_result = Some(format!(
                    "buffer {}: {out:02x?}, the recording has {want:02x?}",
                    b["index"]
                ));
            }
        }
    }
    // Dropping the device records its teardown (the reference has tinygrad's).
    drop(d);
    wrong_result
}

fn blocked(evs: &[Value]) -> Option<String> {
    if !evs.iter().any(|e| e["ev"] == "launch") {
        return Some("no launch in the recording".into());
    }
    None
}

#[test]
fn conformance() {
    let root = dir();
    let ci = std::env::var_os("CI").is_some();
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .map(|r| {
            r.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    if files.is_empty() {
        testdata::missing(&format!("the recordings in {}", root.display()));
        return;
    }
    let mut differs = Vec::new();
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let evs = conform::parse_jsonl(&std::fs::read_to_string(f).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Some(why) = blocked(&evs) {
            println!("{name}: blocked ({why})");
            continue;
        }
        let arch = match name.split('_').nth(1) {
            Some("gfx1100") => EmuArch::Gfx1100,
            // No emulated gfx1200: gfx1201 is the same GC 12.0 register set (its KFD target
            // differs only in the stepping).
            Some("gfx1200") => EmuArch::Gfx1201,
            Some("gfx950") => EmuArch::Gfx950,
            a => panic!("{name}: no emulated device for {a:?}"),
        };
        let path = match name.split('_').next() {
            Some("pci") => Via::Pci,
            Some("usb") => Via::Usb,
            _ => Via::Kfd,
        };
        let Outcome {
            report: rep,
            wrong_result,
        } = replay(&root, &name, &evs, arch, path);
        let line = match rep.verdict() {
            _ if wrong_result.is_some() => {
                differs.push(name.clone());
                format!(
                    "DIFFERS (wrong result: {})",
                    wrong_result.unwrap_or_default()
                )
            }
            Verdict::Match => "match".to_string(),
            Verdict::Accepted(n) => format!("accepted ({n} differences, see docs/conformance.md)"),
            Verdict::Differs(n) => {
                differs.push(name.clone());
                format!("DIFFERS ({n} not accepted)")
            }
        };
        println!("{name}: {line}");
        for d in &rep.differences {
            println!("    {d}");
        }
    }
    if ci {
        assert!(differs.is_empty(), "recordings that differ: {differs:?}");
    }
}

/// The comparison can fail: a recording compared with itself matches, and the same recording
/// with one SQTT register value changed (SE0's SQ_THREAD_TRACE_CTRL.rt_freq) is reported as
/// exactly that register and field, not accepted.
#[test]
fn conformance_detects_a_changed_sqtt_register() {
    let f = dir().join("kfd_gfx1100_add_sqtt.jsonl");
    let Ok(text) = std::fs::read_to_string(&f) else {
        testdata::missing(&f.display().to_string());
        return;
    };
    let reference = conform::parse_jsonl(&text).unwrap();
    let same = conform::compare(&reference, &reference, "gfx1100", &[]);
    assert_eq!(same.verdict(), Verdict::Match, "{:?}", same.differences);

    let mut changed = reference.clone();
    let mut done = false;
    for e in changed
        .iter_mut()
        .filter(|e| e["ev"] == "pm4" && e["group"] == "sqtt_start")
    {
        for r in e["regs"].as_array_mut().into_iter().flatten() {
            if r["name"] == "regSQ_THREAD_TRACE_CTRL" && !done {
                // rt_freq is bits [17:16] on GC 11: 2 (4096 clocks) becomes 1.
                let v =
                    u32::from_str_radix(r["val"].as_str().unwrap().trim_start_matches("0x"), 16)
                        .unwrap();
                assert_eq!((v >> 16) & 3, 2);
                r["val"] = Value::String(format!("{:#x}", (v & !(3 << 16)) | (1 << 16)));
                done = true;
            }
        }
    }
    assert!(
        done,
        "the recording has an SQ_THREAD_TRACE_CTRL write in sqtt_start"
    );
    let rep = conform::compare(&changed, &reference, "gfx1100", &[]);
    let got: Vec<String> = rep.differences.iter().map(|d| d.to_string()).collect();
    assert_eq!(
        got,
        ["[sqtt_start] FieldDiffers SQ_THREAD_TRACE_CTRL[se0].rt_freq: ours {0x1} reference {0x2}"],
        "{got:#?}"
    );
    assert_eq!(rep.verdict(), Verdict::Differs(1));
}

/// The order check can fail: a recording with its dispatch moved before the SET_SH_REG that
/// programs the work-group size (a register the CP latches at the dispatch) is reported as
/// those registers written after the DISPATCH_DIRECT, in `exec`, and nothing else.
#[test]
fn conformance_detects_a_register_written_after_the_dispatch() {
    let f = dir().join("kfd_gfx1100_add.jsonl");
    let Ok(text) = std::fs::read_to_string(&f) else {
        testdata::missing(&f.display().to_string());
        return;
    };
    let reference = conform::parse_jsonl(&text).unwrap();
    let mut swapped = reference.clone();
    let exec = |e: &Value| e["ev"] == "pm4" && e["group"] == "exec";
    let dispatch = swapped
        .iter()
        .position(|e| exec(e) && e["op"] == "DISPATCH_DIRECT")
        .expect("an exec DISPATCH_DIRECT");
    let regs = swapped[..dispatch]
        .iter()
        .rposition(|e| {
            exec(e)
                && e["regs"]
                    .as_array()
                    .is_some_and(|r| r.iter().any(|r| r["name"] == "regCOMPUTE_NUM_THREAD_X"))
        })
        .expect("the SET_SH_REG of COMPUTE_NUM_THREAD_X before it");
    swapped.swap(regs, dispatch);
    let rep = conform::compare(&swapped, &reference, "gfx1100", &[]);
    let got: Vec<String> = rep.differences.iter().map(|d| d.to_string()).collect();
    assert!(
        got.iter().any(|d| d
            .starts_with("[exec] OrderDiffers order: COMPUTE_NUM_THREAD_X after DISPATCH_DIRECT")),
        "{got:#?}"
    );
    assert!(
        rep.differences.iter().all(|d| d.op == "exec"
            && d.what.starts_with("order: COMPUTE_")
            && d.what.ends_with(" after DISPATCH_DIRECT")
            && d.accepted.is_none()),
        "{got:#?}"
    );
    assert!(matches!(rep.verdict(), Verdict::Differs(_)));
}

/// An `am:` acceptance holds for driverless recordings only: the signal's int_sel changed in a
/// KFD recording (A50's difference on the AM path) is reported and not accepted, while the same
/// change in the PCI recording is accepted as A50.
#[test]
fn am_acceptances_do_not_cover_kfd_recordings() {
    let load = |n: &str| {
        let f = dir().join(n);
        let text = std::fs::read_to_string(&f).ok()?;
        Some(conform::parse_jsonl(&text).unwrap())
    };
    let (Some(kfd), Some(pci)) = (load("kfd_gfx1200_add.jsonl"), load("pci_gfx1200_add.jsonl"))
    else {
        testdata::missing("kfd_gfx1200_add.jsonl and pci_gfx1200_add.jsonl");
        return;
    };
    let with_int_sel_2 = |evs: &[Value]| {
        let mut v = evs.to_vec();
        let e = v
            .iter_mut()
            .find(|e| e["ev"] == "pm4" && e["group"] == "signal" && e["op"] == "RELEASE_MEM")
            .expect("a signal RELEASE_MEM");
        e["decoded"]["int_sel"] = serde_json::json!(2);
        v
    };
    for (evs, accepted) in [(&kfd, false), (&pci, true)] {
        let rep = conform::compare(&with_int_sel_2(evs), evs, "gfx1200", &["signal"]);
        let d = rep
            .differences
            .iter()
            .find(|d| d.field.as_deref() == Some("int_sel"))
            .unwrap_or_else(|| panic!("int_sel not reported: {:#?}", rep.differences));
        assert_eq!(d.accepted.is_some(), accepted, "{d}");
    }
}
