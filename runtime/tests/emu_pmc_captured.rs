//! The hardware's performance counters as the oracle: every captured program of
//! `shared/traces` runs on the emulated GPU of its arch with the launch it had on the hardware,
//! with tinygrad's default counters programmed by `runtime::pmc` through the PM4 queue, and the
//! emulator's SQ_INSTS_VALU, SQ_INSTS_SALU and LDS activity / bank-conflict totals equal the
//! counts in the capture's `kern<K>_pmc.bin` (layout from its `meta.json`).
//!
//! gfx950 rows run on the gfx9 interpreter and are compared like the others (SQ counters banked
//! per XCC and SE, 8 × 4 instances).

use emu::EmuArch;
use runtime::platform::AllocKind;
use runtime::DeviceOptions;
use std::collections::BTreeMap;
use std::time::Duration;

/// One captured kernel and the launch it had on the hardware.
struct Case {
    arch: EmuArch,
    dir: &'static str,
    run: &'static str,
    elf: &'static str,
    kern: i64,
    /// Buffer sizes in bytes (kernel arguments, in order).
    bytes: &'static [usize],
    grid: [u32; 3],
    local: [u32; 3],
    /// Why the runtime cannot load this program yet (the row is printed, not compared).
    not_loadable: Option<&'static str>,
}

const CASES: &[Case] = &[
    // (The launches: tinygrad's examples. `sync`'s custom_lds_sync is one 128-thread group
    // (its 512-byte LDS holds one dword per thread), E_32_4 one 32-thread group.)
    Case {
        arch: EmuArch::Gfx1100,
        dir: "gfx1100",
        run: "empty_run_0",
        elf: "program0_E.elf",
        kern: 0,
        bytes: &[],
        grid: [1, 1, 1],
        local: [1, 1, 1],
        not_loadable: None,
    },
    Case {
        arch: EmuArch::Gfx1100,
        dir: "gfx1100",
        run: "plus_run_0",
        elf: "program0_E_3.elf",
        kern: 0,
        bytes: &[12; 3],
        grid: [1, 1, 1],
        local: [3, 1, 1],
        not_loadable: None,
    },
    Case {
        arch: EmuArch::Gfx1100,
        dir: "gfx1100",
        run: "gemm_run_0",
        elf: "program0_r_32_32_16_2.elf",
        kern: 0,
        bytes: &[4096; 3],
        grid: [32, 32, 1],
        local: [16, 1, 1],
        not_loadable: None,
    },
    Case {
        arch: EmuArch::Gfx1100,
        dir: "gfx1100",
        run: "sync_run_0",
        elf: "program0_custom_lds_sync.elf",
        kern: 0,
        bytes: &[512],
        grid: [1, 1, 1],
        local: [128, 1, 1],
        not_loadable: None,
    },
    Case {
        arch: EmuArch::Gfx1100,
        dir: "gfx1100",
        run: "sync_run_0",
        elf: "program1_E_32_4.elf",
        kern: 1,
        bytes: &[512],
        grid: [1, 1, 1],
        local: [32, 1, 1],
        not_loadable: None,
    },
    Case {
        arch: EmuArch::Gfx1201,
        dir: "gfx1200",
        run: "empty_run_0",
        elf: "program0_E.elf",
        kern: 0,
        bytes: &[],
        grid: [1, 1, 1],
        local: [1, 1, 1],
        not_loadable: None,
    },
    Case {
        arch: EmuArch::Gfx1201,
        dir: "gfx1200",
        run: "plus_run_0",
        elf: "program0_E_3.elf",
        kern: 0,
        bytes: &[12; 3],
        grid: [1, 1, 1],
        local: [3, 1, 1],
        not_loadable: None,
    },
    Case {
        arch: EmuArch::Gfx1201,
        dir: "gfx1200",
        run: "gemm_run_0",
        elf: "program0_r_32_32_16_2.elf",
        kern: 0,
        bytes: &[4096; 3],
        grid: [32, 32, 1],
        local: [16, 1, 1],
        not_loadable: None,
    },
    Case {
        arch: EmuArch::Gfx950,
        dir: "gfx950",
        run: "empty_run_0",
        elf: "program0_E.elf",
        kern: 0,
        bytes: &[],
        grid: [1, 1, 1],
        local: [1, 1, 1],
        not_loadable: None,
    },
    Case {
        arch: EmuArch::Gfx950,
        dir: "gfx950",
        run: "plus_run_0",
        elf: "program0_E_3.elf",
        kern: 0,
        bytes: &[12; 3],
        grid: [1, 1, 1],
        local: [3, 1, 1],
        not_loadable: None,
    },
    Case {
        arch: EmuArch::Gfx950,
        dir: "gfx950",
        run: "gemm_run_0",
        elf: "program0_r_32_32_16_2.elf",
        kern: 0,
        bytes: &[4096; 3],
        grid: [32, 32, 1],
        local: [16, 1, 1],
        not_loadable: None,
    },
];

/// The counters compared (gfx9 names its LDS counters SQ_*).
fn compared(gfx9: bool) -> [&'static str; 4] {
    if gfx9 {
        [
            "SQ_INSTS_VALU",
            "SQ_INSTS_SALU",
            "SQ_LDS_IDX_ACTIVE",
            "SQ_LDS_BANK_CONFLICT",
        ]
    } else {
        [
            "SQ_INSTS_VALU",
            "SQ_INSTS_SALU",
            "SQC_LDS_IDX_ACTIVE",
            "SQC_LDS_BANK_CONFLICT",
        ]
    }
}

/// Per-counter instance values of a PMC buffer laid out by `samples` (a tinygrad `PMCSample`
/// list), in the buffer's order (XCC, SE, ... as the sampler walked them).
fn instances(samples: &[traces::model::PmcSample], blob: &[u8]) -> BTreeMap<String, Vec<u64>> {
    let mut out = BTreeMap::new();
    for s in samples {
        let b = &blob[s.off as usize..(s.off + s.size) as usize];
        let v = b
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        out.insert(s.name.clone(), v);
    }
    out
}

fn totals(inst: &BTreeMap<String, Vec<u64>>) -> BTreeMap<String, u64> {
    inst.iter()
        .map(|(k, v)| (k.clone(), v.iter().sum()))
        .collect()
}

/// The hardware's instance values for kernel `kern` of a capture directory.
fn hardware(dir: &std::path::Path, kern: i64) -> Option<BTreeMap<String, Vec<u64>>> {
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("meta.json")).ok()?).ok()?;
    let ev = meta["pmc"]
        .as_array()?
        .iter()
        .find(|e| e["kern"].as_i64() == Some(kern))?;
    let blob = std::fs::read(dir.join(ev["file"].as_str()?)).ok()?;
    let samples: Vec<traces::model::PmcSample> = ev["sched"]
        .as_array()?
        .iter()
        .map(|s| traces::model::PmcSample {
            name: s["name"].as_str().unwrap_or("").into(),
            block: s["block"].as_str().unwrap_or("").into(),
            xcc: s["xcc"].as_u64().unwrap_or(0) as u32,
            inst: s["inst"].as_u64().unwrap_or(0) as u32,
            se: s["se"].as_u64().unwrap_or(0) as u32,
            sa: s["sa"].as_u64().unwrap_or(0) as u32,
            wgp: s["wgp"].as_u64().unwrap_or(0) as u32,
            off: s["off"].as_u64().unwrap_or(0),
            size: s["size"].as_u64().unwrap_or(0),
            regsample: s["regsample"].as_str().unwrap_or("").into(),
        })
        .collect();
    Some(instances(&samples, &blob))
}

/// Runs a case on the emulator: the instance values of its PMC event.
fn emulated(c: &Case, elf: &[u8]) -> BTreeMap<String, Vec<u64>> {
    assert!(
        emu::executes(c.arch),
        "the emulated {:?} engines cannot execute code",
        c.arch
    );
    let gfx = c.arch.gc_version().0;
    let opts = DeviceOptions {
        wait_timeout: Duration::from_secs(30),
        compute_ring_size: 1 << 20,
        sdma_ring_size: 1 << 16,
        kernargs_size: 1 << 20,
        staging_chunk: 64 << 10,
        staging_count: 2,
        pmc: runtime::pmc::default_counters(gfx),
        ..DeviceOptions::default()
    };
    let (mut d, _emu) = emu::open_kfd(c.arch, opts).unwrap();
    let prg = d.load_program(elf).unwrap();
    let bufs: Vec<_> = c
        .bytes
        .iter()
        .enumerate()
        .map(|(k, &n)| {
            let b = d.alloc(n as u64, AllocKind::VRAM).unwrap();
            let data: Vec<u8> = (0..n / 4)
                .flat_map(|i| (1.0f32 + (i + k) as f32 / 64.0).to_le_bytes())
                .collect();
            d.copyin(&b, &data).unwrap();
            b
        })
        .collect();
    let refs: Vec<_> = bufs.iter().collect();
    d.launch(&prg, &refs, &[], c.grid, c.local).unwrap();
    let prof = d.profile().unwrap();
    assert_eq!(prof.pmc.len(), 1, "one PMC event per launch");
    let ev = &prof.pmc[0];
    instances(&ev.samples, prof.blob(ev.blob))
}

#[test]
fn emulated_counters_equal_the_hardware_counts() {
    let mut rows = Vec::new();
    let mut bad = Vec::new();
    let mut ran = 0;
    for c in CASES {
        let dir = testdata::shared_dir()
            .unwrap_or_else(|| "../shared".into())
            .join(format!("traces/{}/{}", c.dir, c.run));
        let (Ok(elf), Some(hw)) = (std::fs::read(dir.join(c.elf)), hardware(&dir, c.kern)) else {
            testdata::missing(&format!("shared capture {}", dir.display()));
            continue;
        };
        if let Some(why) = c.not_loadable {
            rows.push(format!(
                "{:<8} {:<12} {:<28} not run: {why}",
                c.dir, c.run, c.elf
            ));
            continue;
        }
        let names = compared(c.arch == EmuArch::Gfx950);
        let (hw_inst, emu_inst) = (hw, emulated(c, &elf));
        // Where the hardware spread a counter evenly over its instances (which unit ran a wave
        // then does not matter), the emulator's banking (per XCC/SE/SA/WGP) must match it too.
        for n in names {
            if let (Some(h), Some(e)) = (hw_inst.get(n), emu_inst.get(n)) {
                if h.iter().all(|&x| x == h[0] && x > 0) && e != h {
                    bad.push(format!(
                        "{} {} {n} per instance: emulator {e:?}, hardware {h:?}",
                        c.dir, c.run
                    ));
                }
            }
        }
        let (hw, emu) = (totals(&hw_inst), totals(&emu_inst));
        let mut line = format!("{:<8} {:<12} {:<28}", c.dir, c.run, c.elf);
        for n in names {
            let h = hw.get(n).copied();
            let v = emu.get(n).copied();
            line += &format!(" {n}={}/{}", fmt(v), fmt(h));
            if v != h {
                bad.push(format!(
                    "{} {} {n}: emulator {:?}, hardware {:?}",
                    c.dir, c.run, v, h
                ));
            }
        }
        ran += 1;
        rows.push(line);
    }
    eprintln!("emulator/hardware totals:\n{}", rows.join("\n"));
    assert!(bad.is_empty(), "counter totals differ:\n{}", bad.join("\n"));
    if ran == 0 {
        testdata::missing("any runnable captured program");
    }
}

fn fmt(v: Option<u64>) -> String {
    v.map_or("?".into(), |v| v.to_string())
}

/// Unknown names and too many counters of one block are clear errors.
#[test]
fn bad_counter_lists_are_errors() {
    let bad = |names: &[&str]| {
        let opts = DeviceOptions {
            pmc: names.iter().map(|s| s.to_string()).collect(),
            compute_ring_size: 1 << 20,
            kernargs_size: 1 << 20,
            ..DeviceOptions::default()
        };
        match emu::open_kfd(EmuArch::Gfx1100, opts) {
            Ok(_) => panic!("{names:?} was accepted"),
            Err(e) => e.to_string(),
        }
    };
    let e = bad(&["SQ_INSTS_VALU", "SQ_NOT_A_COUNTER"]);
    assert!(
        e.contains("unknown performance counter \"SQ_NOT_A_COUNTER\""),
        "{e}"
    );
    let e = bad(&["GRBM_COUNT", "GRBM_GUI_ACTIVE", "GRBM_COUNT"]);
    assert!(e.contains("twice"), "{e}");
    let e = bad(&[
        "SQ_WAVES",
        "SQ_BUSY_CYCLES",
        "SQ_WAVE_CYCLES",
        "SQ_INSTS_VALU",
        "SQ_INSTS_SALU",
        "SQ_INSTS_SMEM",
        "SQ_INSTS_LDS",
        "SQ_INSTS_FLAT",
        "SQC_LDS_IDX_ACTIVE",
    ]);
    assert!(e.contains("too many SQ counters"), "{e}");
}
