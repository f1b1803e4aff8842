//! GC 12 (RDNA4) on the driverless path, checked against tinygrad's gfx1200 recording
//! (`../shared/conformance/tinygrad/pci_gfx1200_add.jsonl`): the firmware files it loaded.

use runtime::pci::am::firmware::{fw_type, Firmware, FirmwareNames};

fn recording() -> Option<Vec<serde_json::Value>> {
    let path = testdata::require_shared("conformance/tinygrad/pci_gfx1200_add.jsonl")?;
    let text = std::fs::read_to_string(path).unwrap();
    Some(
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    )
}

fn ver(info: &serde_json::Value, key: &str) -> (u32, u32, u32) {
    let v: Vec<u32> = info["am_ip_versions"][key]
        .as_array()
        .unwrap_or_else(|| panic!("{key}"))
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect();
    (v[0], v[1], v[2])
}

#[test]
fn gc12_firmware_names_are_the_files_tinygrad_loaded() {
    let Some(evs) = recording() else {
        return;
    };
    let info = evs.iter().find(|e| e["ev"] == "device_info").unwrap();
    let n = FirmwareNames::new(
        ver(info, "GC"),
        ver(info, "MP0"),
        ver(info, "MP1"),
        ver(info, "SDMA0"),
    );
    let mut ours = vec![
        n.sos.clone(),
        n.smu.clone(),
        n.sdma.clone(),
        n.mec.clone(),
        n.imu.clone(),
        n.rlc.clone(),
    ];
    ours.extend(n.pfp.clone());
    ours.extend(n.me.clone());
    ours.sort();
    let mut theirs: Vec<String> = evs
        .iter()
        .filter(|e| e["ev"] == "firmware")
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect();
    theirs.sort();
    assert_eq!(ours, theirs);
}

#[test]
fn gc12_rs64_pfp_and_me_are_parsed_from_their_own_headers() {
    // The synthetic gfx1100 set plus PFP/ME images built like its MEC image (gfx v2 header).
    let mut files: std::collections::HashMap<String, Vec<u8>> =
        emu::pci::firmware::synthetic_files()
            .into_iter()
            .map(|(n, b)| (n.to_string(), b))
            .collect();
    let mec = files["gc_11_0_0_mec.bin"].clone();
    let with_start = |lo: u32| {
        let mut b = mec.clone();
        b[52..56].copy_from_slice(&lo.to_le_bytes());
        b[56..60].copy_from_slice(&0u32.to_le_bytes());
        b
    };
    files.insert("pfp.bin".into(), with_start(0x100));
    files.insert("me.bin".into(), with_start(0x200));
    let mut names = emu::pci::firmware::names();
    names.pfp = Some("pfp.bin".into());
    names.me = Some("me.bin".into());
    let fw = Firmware::parse_with(&names, &mut |n| Ok(files[n].clone())).unwrap();
    assert_eq!((fw.pfp_start, fw.me_start), (Some(0x100), Some(0x200)));
    let types: Vec<u32> = fw.ip.iter().map(|f| f.fw_type).collect();
    for t in [
        fw_type::RS64_PFP,
        fw_type::RS64_PFP_P0_STACK,
        fw_type::RS64_ME,
        fw_type::RS64_ME_P0_STACK,
    ] {
        assert!(types.contains(&t), "fw type {t} missing from {types:?}");
    }
    // gfx_v12_0_init_microcode loads the pipe-0 stacks only.
    for t in [fw_type::RS64_PFP_P1_STACK, fw_type::RS64_ME_P1_STACK] {
        assert!(!types.contains(&t), "fw type {t} loaded: {types:?}");
    }
    // A v1 header is refused by file name.
    let mut bad = files["pfp.bin"].clone();
    bad[8..10].copy_from_slice(&1u16.to_le_bytes());
    files.insert("pfp.bin".into(), bad);
    let e = Firmware::parse_with(&names, &mut |n| Ok(files[n].clone()))
        .expect_err("v1 refused")
        .to_string();
    assert!(e.contains("pfp.bin") && e.contains("RS64 PFP"), "{e}");
}

#[test]
fn the_emulated_navi48_table_selects_gc12_at_the_bases_tinygrad_discovered() {
    use runtime::pci::am::discovery::{hw_id, Discovery};
    use runtime::pci::am::{select_gen, AmGen, AmIp};
    let t = emu::pci::discovery::build_with(
        &emu::pci::discovery::navi48_ips(),
        (4, 4, 4, 2, 16, 32, 64),
    );
    let d = Discovery::parse(&t, 0x1000).expect("the navi48 table parses");
    assert_eq!(select_gen(&d).unwrap(), AmGen::Gc12);
    let Some(evs) = recording() else {
        return;
    };
    let info = evs.iter().find(|e| e["ev"] == "device_info").unwrap();
    // tinygrad's HWIP numbers for the blocks.
    for (ip, hwip) in [
        (AmIp::Gc, "1"),
        (AmIp::Hdp, "2"),
        (AmIp::Mmhub, "12"),
        (AmIp::Nbio, "14"),
        (AmIp::Mp0, "15"),
        (AmIp::Mp1, "16"),
        (AmIp::Osssys, "23"),
    ] {
        let theirs: Vec<u32> = info["am_regs_offset"][hwip]["0"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| u32::from_str_radix(s.as_str().unwrap().trim_start_matches("0x"), 16).unwrap())
            .filter(|&v| v != 0)
            .collect();
        let ours: Vec<u32> = d.ips[&(hw_id(ip), 0)]
            .bases
            .iter()
            .copied()
            .filter(|&v| v != 0)
            .collect();
        assert_eq!(ours, theirs, "{ip:?} bases");
    }
}

/// Every value tinygrad's GC 12 bring-up wrote to a register of our GC 12 table decodes into
/// that register's JSON fields with nothing left over (our `RegIo::encode` can produce it),
/// except two writes that set bits gc_12_0_0 defines no field for (docs/conformance.md,
/// "GC 12 (RDNA4), partial"); the doorbell routing it programmed is printed field by field.
#[test]
fn tinygrads_gc12_writes_decode_into_our_gc12_fields() {
    use runtime::pci::am::{regs, AmGen};
    let Some(evs) = recording() else {
        return;
    };
    let mut decoded = 0;
    let mut undefined = std::collections::BTreeSet::new();
    for e in evs.iter().filter(|e| e["ev"] == "mmio_w") {
        let Some(name) = e["name"].as_str() else {
            continue;
        };
        let name = name.trim_start_matches("reg");
        let Some(d) = regs::ALL
            .iter()
            .filter_map(|r| r.on(AmGen::Gc12))
            .find(|d| d.name == name)
        else {
            continue;
        };
        let v =
            u32::from_str_radix(e["val"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
        let mut covered = 0u32;
        let mut parts = Vec::new();
        for f in d.fields {
            let width = u32::from(f.hi - f.lo) + 1;
            let mask = if width >= 32 {
                u32::MAX
            } else {
                (1 << width) - 1
            } << f.lo;
            covered |= mask;
            if v & mask != 0 {
                parts.push(format!("{}={:#x}", f.name, (v & mask) >> f.lo));
            }
        }
        if v & !covered != 0 {
            undefined.insert((name.to_string(), v & !covered));
        }
        if name.contains("DOORBELL_ENTRY") {
            println!("{name}: {}", parts.join(" "));
        }
        decoded += 1;
    }
    assert!(decoded > 100, "only {decoded} writes decoded");
    let known: std::collections::BTreeSet<(String, u32)> = [
        ("GCVM_CONTEXT0_CNTL", 1 << 24),
        ("TCP_CNTL", 1 << 29),
        ("CP_HQD_HQ_SCHEDULER0", 1 << 29),
    ]
    .into_iter()
    .map(|(n, b)| (n.to_string(), b))
    .collect();
    assert_eq!(
        undefined, known,
        "writes with bits outside the GC 12 fields"
    );
    println!("{decoded} GC 12 writes decoded into their fields");
}
