//! Recording the driverless path (runtime::record_io) on the emulated PCI GPU and behind the
//! emulated USB bridge, checked against independent references: the register JSON of
//! `shared/amd-registers` (each recorded register address = its JSON offset + the discovered
//! base of its segment), and tinygrad's `pci_gfx1200_*` / `usb_gfx1200_*` recordings (the order
//! of the bring-up steps, the USB control requests). And the comparison can fail: one MMIO
//! field changed is reported as that register and field.

mod common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use runtime::conform::{self, Kind};
use runtime::conform_io::RegisterDb;
use runtime::record::{self, MemoryRecorder, SharedRecorder};
use serde_json::Value;

/// The installed recorder is process-wide: one recording at a time.
static ONE: Mutex<()> = Mutex::new(());

fn recorded(open: impl FnOnce()) -> Vec<Value> {
    let _g = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let mem = Arc::new(Mutex::new(MemoryRecorder::default()));
    let shared: SharedRecorder = mem.clone();
    record::install(Some(shared));
    open();
    record::install(None);
    let evs = std::mem::take(&mut mem.lock().unwrap().events);
    evs
}

fn pci_recording() -> Vec<Value> {
    recorded(|| {
        let (dev, _gpu) = emu::open_pci(emu::EmuArch::Gfx1100, common::opts()).unwrap();
        drop(dev);
    })
}

fn usb_recording() -> Vec<Value> {
    recorded(|| {
        let (dev, _u) = emu::open_usb(runtime::usb::Firmware::Custom, common::opts(), |t| {
            Box::new(t)
        })
        .unwrap();
        drop(dev);
    })
}

fn reference(name: &str) -> Option<Vec<Value>> {
    let p = testdata::require_shared(&format!("conformance/tinygrad/{name}"))?;
    Some(conform::parse_jsonl(&std::fs::read_to_string(p).unwrap()).unwrap())
}

fn registers_dir() -> Option<PathBuf> {
    testdata::require_shared("amd-registers")
}

fn ev<'a>(evs: &'a [Value], kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    evs.iter()
        .filter(move |e| e.get("ev").and_then(Value::as_str) == Some(kind))
}

fn hexnum(v: Option<&Value>) -> u64 {
    let t = v.and_then(Value::as_str).unwrap_or("");
    u64::from_str_radix(t.trim_start_matches("0x"), 16).unwrap()
}

/// The register JSON file of an IP block at version `v`.
fn json_file(ip: &str, v: &[u64]) -> String {
    let p = match ip {
        "GC" => "gc",
        "MMHUB" => "mmhub",
        "NBIO" => "nbio",
        "MP0" | "MP1" => "mp",
        "HDP" => "hdp",
        "OSSSYS" => "osssys",
        o => panic!("unexpected IP {o}"),
    };
    format!("{p}_{}_{}_{}.json", v[0], v[1], v[2])
}

#[test]
fn pci_bringup_mmio_addresses_match_the_register_json() {
    let Some(dir) = registers_dir() else { return };
    let evs = pci_recording();
    let info = ev(&evs, "device_info").next().expect("a device_info event");
    assert_eq!(info["arch"], "gfx1100");
    let vers = info["am_ip_versions"].as_object().unwrap();
    let bases = info["am_regs_offset"].as_object().unwrap();
    assert!(
        ev(&evs, "pci_cfg_r").count() >= 3,
        "vendor, device, command"
    );
    assert!(ev(&evs, "pci_cfg_w").count() >= 1, "bus mastering on");
    let writes: Vec<&Value> = ev(&evs, "mmio_w").collect();
    assert!(writes.len() > 300, "{} writes", writes.len());
    // The JSON of every IP, by the discovered version (SDMA's registers are GC's on GC 11).
    let mut checked = 0;
    let mut json: std::collections::HashMap<String, Value> = Default::default();
    for w in writes
        .iter()
        .chain(ev(&evs, "mmio_r").collect::<Vec<_>>().iter())
    {
        let Some(name) = w["name"].as_str() else {
            continue;
        };
        let ip = w["ip"].as_str().unwrap();
        let v: Vec<u64> = vers[ip]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        // MP1's mailbox registers are in mp_11_0_0 (the kernel's header for SMU 13's MP1).
        let files: Vec<String> = match ip {
            "MP1" => vec!["mp_11_0_0.json".into(), json_file(ip, &v)],
            _ => vec![json_file(ip, &v)],
        };
        let found = files.iter().find_map(|f| {
            let j = json.entry(f.clone()).or_insert_with(|| {
                let p = dir.join(f);
                serde_json::from_str(
                    &std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
                )
                .unwrap()
            });
            let r = &j["registers"][name];
            (!r.is_null()).then(|| {
                (
                    r["offset"].as_u64().unwrap(),
                    r["base_index"].as_u64().unwrap(),
                )
            })
        });
        let (off, seg) = found.unwrap_or_else(|| panic!("{name} ({ip}) not in {files:?}"));
        let base = hexnum(bases[ip].as_array().unwrap().get(seg as usize));
        assert_eq!(
            hexnum(w.get("reg")),
            base + off,
            "{name}: recorded address vs JSON offset {off:#x} + {ip} base[{seg}] {base:#x}"
        );
        checked += 1;
    }
    assert!(checked > 300, "{checked} named accesses checked");
    println!("{checked} named register accesses match the register JSON");
}

#[test]
fn pci_bringup_steps_come_in_tinygrads_order() {
    let Some(theirs) = reference("pci_gfx1200_add.jsonl") else {
        return;
    };
    let ours = pci_recording();
    let steps = |evs: &[Value]| {
        let mut v: Vec<String> = Vec::new();
        for w in ev(evs, "mmio_w") {
            let ctx = w["ctx"].as_str().unwrap_or("");
            if let Some(s) = ctx
                .split('/')
                .find(|p| p.ends_with(".init_hw") && p.starts_with("AM_"))
            {
                if !v.iter().any(|x| x == s) {
                    v.push(s.to_string());
                }
            }
        }
        v
    };
    let (a, b) = (steps(&ours), steps(&theirs));
    println!("ours   {a:?}\ntheirs {b:?}");
    assert_eq!(a, b, "bring-up steps in order");
    // SMU messages by name per step (SMU 13 here, 14 in the reference: names, not ids).
    let smu = |evs: &[Value]| {
        ev(evs, "smu_msg")
            .map(|e| {
                let st = e["ctx"]
                    .as_str()
                    .unwrap_or("")
                    .rsplit('/')
                    .next()
                    .unwrap_or("");
                (
                    st.to_string(),
                    e["msg_name"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect::<std::collections::BTreeSet<_>>()
    };
    let (sa, sb) = (smu(&ours), smu(&theirs));
    println!("SMU ours {sa:?}\nSMU tinygrad {sb:?}");
    assert!(sa.contains(&(
        "AM_SMU.init_hw".into(),
        "PPSMC_MSG_SetDriverDramAddrHigh".into()
    )));
    // Each step writes registers of the IP blocks tinygrad's step writes (by IP of the name).
    for st in &a {
        let ips = |evs: &[Value], named: bool| {
            ev(evs, "mmio_w")
                .filter(|w| w["ctx"].as_str().unwrap_or("").contains(st.as_str()))
                .filter_map(|w| {
                    if named {
                        w["ip"].as_str().map(str::to_string)
                    } else {
                        w["name"].as_str().map(str::to_string)
                    }
                })
                .collect::<std::collections::BTreeSet<_>>()
        };
        assert!(
            !ips(&ours, true).is_empty(),
            "{st}: no named writes of ours"
        );
        assert!(
            !ips(&theirs, false).is_empty(),
            "{st}: no named writes of tinygrad's"
        );
    }
}

#[test]
fn usb_transfers_are_recorded_with_tinygrads_request_kinds() {
    let Some(theirs) = reference("usb_gfx1200_add.jsonl") else {
        return;
    };
    let ours = usb_recording();
    let kinds = |evs: &[Value]| {
        evs.iter()
            .filter_map(|e| {
                let k = e["ev"].as_str()?;
                k.starts_with("usb_ctrl")
                    .then(|| format!("{k} {}", e["bRequest"].as_str().unwrap_or("?")))
            })
            .collect::<std::collections::BTreeSet<_>>()
    };
    let (a, b) = (kinds(&ours), kinds(&theirs));
    println!("ours {a:?}\ntheirs {b:?}");
    for (who, evs) in [("ours", &ours), ("tinygrad", &theirs)] {
        let n = |k: &str| ev(evs, k).count();
        let bulk_out: u64 = ev(evs, "usb_bulk_out")
            .map(|e| e["len"].as_u64().unwrap_or(0))
            .sum();
        println!(
            "{who}: {} control OUT, {} control IN, {} bulk OUT ({bulk_out} bytes), {} bulk IN",
            n("usb_ctrl_out"),
            n("usb_ctrl_in"),
            n("usb_bulk_out"),
            n("usb_bulk_in")
        );
    }
    assert!(!a.is_empty());
    assert!(
        a.is_subset(&b),
        "requests tinygrad's custom firmware path never sends: {:?}",
        a.difference(&b)
    );
    assert!(ev(&ours, "usb_bulk_out").count() > 0 && ev(&ours, "usb_bulk_in").count() > 0);
    // The AM driver's register traffic rides on the same transfers.
    assert!(ev(&ours, "mmio_w").count() > 300);
    let r = conform::compare_with(&ours, &ours, "gfx1100", &[], registers_dir().as_deref());
    assert!(r.differences.is_empty(), "{:?}", r.differences);
}

#[test]
fn a_changed_mmio_field_is_reported_as_that_register_and_field() {
    let Some(dir) = registers_dir() else { return };
    let ours = pci_recording();
    let r = conform::compare_with(&ours, &ours, "gfx1100", &[], Some(&dir));
    assert!(r.differences.is_empty(), "{:?}", r.differences);
    // IH_RB_CNTL.rb_size (bits 1..5 in osssys_6_0_0) changed in the "reference".
    let mut theirs = ours.clone();
    let w = theirs
        .iter_mut()
        .find(|e| e["ev"] == "mmio_w" && e["name"] == "regIH_RB_CNTL")
        .expect("IH_RB_CNTL written");
    let v = hexnum(w.get("val")) as u32;
    w["val"] = Value::String(format!("{:#x}", v ^ (1 << 1)));
    let r = conform::compare_with(&ours, &theirs, "gfx1100", &[], Some(&dir));
    let d: Vec<_> = r.differences.iter().collect();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].op, "mmio:AM_IH.init_hw");
    assert_eq!(d[0].kind, Kind::FieldDiffers);
    assert_eq!(d[0].what, "IH_RB_CNTL");
    assert_eq!(d[0].field.as_deref(), Some("rb_size"));
    let db = RegisterDb::for_recording(&dir, &ours).unwrap();
    assert!(
        db.files.contains(&"osssys_6_0_0.json".to_string()),
        "{:?}",
        db.files
    );
}
