//! The main job end to end on the emulated gfx1100: the demo capture (vadd, reduce, matmul)
//! with SQTT on every SE, its result checks, the .wst and .rgp it writes and two devices in one
//! trace. (The `wavescope capture` command: profiler-ui/tests/cli_capture.rs.)

use std::path::Path;

use capture::{run_capture, run_demo, Arg, CaptureOptions, DeviceSpec, Workload};
use emu::EmuArch;
use traces::rgp::ChunkType;
use traces::sqtt::{analyze_with, AnalyzeOptions};

/// The demo's launches as documented for users (independent of the code that launches them):
/// kernel, work-groups, work-items per group.
const DEMO: [(&str, u32, u32); 3] = [("vadd", 16, 64), ("reduce", 8, 256), ("matmul", 16, 256)];

fn fixture(name: &str) -> Vec<u8> {
    let p = format!(
        "{}/../tests/fixtures/kernels/emu/{name}.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// An error with its causes, as the CLI prints it.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

fn find(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

fn opts(dir: &Path, devices: Vec<DeviceSpec>) -> CaptureOptions {
    CaptureOptions {
        devices,
        wst: Some(dir.join("demo.wst")),
        rgp: Some(dir.join("demo.rgp")),
        ..Default::default()
    }
}

#[test]
fn demo_capture_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let mut calls = 0usize;
    let r = run_demo(&opts(dir.path(), vec![DeviceSpec::Emu]), &mut |_, _, _| {
        calls += 1
    })
    .unwrap();
    assert!(calls >= 3, "progress reported");

    // Results against the CPU references.
    assert_eq!(r.checks.len(), 3);
    for c in &r.checks {
        assert_eq!(c.result, Some(Ok(())), "{} on {}", c.kernel, c.device);
    }
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);

    let num_se = EmuArch::Gfx1100.num_se();
    assert!(num_se > 1);
    let p = &r.profile;
    let target = p.devices[0].target();
    for (name, groups, threads) in DEMO {
        let k = p
            .kernels
            .iter()
            .find(|k| k.name == name)
            .unwrap_or_else(|| panic!("{name} ran"));
        let (st, en) = (k.gpu_start.expect("GPU start"), k.gpu_end.expect("GPU end"));
        assert!(en > st, "{name}: GPU time {st}..{en}");
        let traces: Vec<_> = p
            .sqtt
            .iter()
            .filter(|s| Some(s.kern) == k.kern && s.exec_tag == k.exec_tag)
            .collect();
        let mut ses: Vec<u32> = traces.iter().map(|s| s.se).collect();
        ses.sort_unstable();
        assert_eq!(
            ses,
            (0..num_se).collect::<Vec<_>>(),
            "{name}: SQTT for every SE"
        );
        let mut waves = 0usize;
        let mut analyses = Vec::new();
        for s in &traces {
            assert!(
                s.itrace,
                "{name} SE{}: instruction tracing on by default",
                s.se
            );
            let a = analyze_with(p.blob(s.blob), target, AnalyzeOptions::default())
                .unwrap_or_else(|e| panic!("{name} SE{}: {e}", s.se));
            if !a.waves.is_empty() {
                assert!(
                    a.instruction_packets > 0,
                    "{name} SE{}: waves without instruction detail",
                    s.se
                );
            }
            waves += a.waves.len();
            analyses.push(a);
        }
        // Wave32: every work-group of `threads` items is ceil(threads / 32) waves.
        assert_eq!(
            waves,
            (groups * threads.div_ceil(32)) as usize,
            "{name}: every wave decoded"
        );
        // The waves lie inside the kernel's GPU timestamps.
        let refs: Vec<_> = analyses.iter().collect();
        let maps = traces::sqtt::dispatch_time_maps(&refs, Some(st as u64));
        for (a, m) in analyses.iter().zip(&maps) {
            let m = m.as_ref().expect("time map from the SQTT markers");
            for w in &a.waves {
                let (s, e) = (m.ticks(w.start).unwrap(), m.ticks(w.end).unwrap());
                assert!(
                    s >= st as f64 && e <= en as f64,
                    "{name}: wave outside the kernel"
                );
            }
        }
    }
    let sum = capture::summary_table(&r);
    for (name, _, _) in DEMO {
        assert!(
            sum.lines().any(|l| l.contains(name) && l.contains(" ok ")),
            "{sum}"
        );
    }

    // The .wst reads back with the same kernels and SQTT streams.
    let (_, back) = traces::open::open_path(&dir.path().join("demo.wst")).unwrap();
    assert_eq!(back.kernels.len(), 3);
    assert_eq!(back.sqtt.len(), 3 * num_se as usize);
    for (a, b) in back.sqtt.iter().zip(&p.sqtt) {
        assert_eq!(back.blob(a.blob), p.blob(b.blob));
    }

    // The .rgp: one SQTT_DATA per SE for each kernel run, and the three code objects verbatim.
    let rgp = std::fs::read(dir.path().join("demo.rgp")).unwrap();
    let chunks = traces::rgp::list_chunks(&rgp).unwrap();
    let data = chunks
        .iter()
        .filter(|c| c.chunk_type() == ChunkType::SqttData)
        .count();
    assert_eq!(data, 3 * num_se as usize, "SQTT_DATA chunks");
    assert!(chunks
        .iter()
        .any(|c| c.chunk_type() == ChunkType::CodeObjectDatabase));
    for (name, elf) in [
        ("vadd", capture::VADD_HSACO),
        ("reduce", capture::REDUCE_HSACO),
        ("matmul", capture::MATMUL_HSACO),
    ] {
        assert!(find(&rgp, elf), "{name}'s code object in the .rgp");
    }
    let (_, imported) = traces::open::open_path(&dir.path().join("demo.rgp")).unwrap();
    assert_eq!(imported.sqtt.len(), 3 * num_se as usize);
}

#[test]
fn a_wrong_result_is_reported() {
    // saxpy with a reference for the wrong alpha: the check must fail, and say so.
    let n = 256usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let y = vec![1.0f32; n];
    let want: Vec<u32> = x
        .iter()
        .map(|v| 3.0f32.mul_add(*v, 1.0).to_bits())
        .collect();
    let bytes = |v: &[f32]| v.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>();
    let w = Workload {
        elf: fixture("saxpy").into(),
        name: Some("saxpy".into()),
        grid: [2, 1, 1],
        block: [128, 1, 1],
        args: vec![
            Arg::Buffer(bytes(&y)),
            Arg::Buffer(bytes(&x)),
            Arg::Scalar(2.0f32.to_bits()),
            Arg::Scalar(n as u32),
        ],
        check: Some(Box::new(move |b| {
            let got: Vec<u32> = b[0]
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            if got == want {
                Ok(())
            } else {
                Err("differs".into())
            }
        })),
    };
    let o = CaptureOptions {
        sqtt: false,
        ..Default::default()
    };
    let r = run_capture(&[w], &o, &mut |_, _, _| {}).unwrap();
    assert!(matches!(r.checks[0].result, Some(Err(_))));
    assert!(!capture::all_correct(&r));
    assert!(capture::summary_table(&r).contains("WRONG"));
    assert!(r.profile.sqtt.is_empty());
}

#[test]
fn two_emulated_devices_share_one_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_demo(
        &opts(dir.path(), vec![DeviceSpec::Emu, DeviceSpec::Emu]),
        &mut |_, _, _| {},
    )
    .unwrap();
    assert!(capture::all_correct(&r));
    let p = &r.profile;
    let names: Vec<&str> = p.devices.iter().map(|d| d.name.as_str()).collect();
    // Both runtimes' host ranges share one CPU track (the devices ran one after the other).
    assert_eq!(names, ["AMD", "AMD:SDMA:0", "CPU", "AMD_1", "AMD_1:SDMA:0"]);
    assert_eq!(p.kernels.len(), 6);
    let on = |d: u32| p.kernels.iter().filter(move |k| k.device == d);
    // The second device ran after the first finished, and its kernels sit later on the
    // common host clock.
    let last0 = on(0).filter_map(|k| k.end).max().unwrap();
    let first1 = on(3).map(|k| k.start).min().unwrap();
    assert!(first1 > last0, "{first1:?} vs {last0:?}");
    assert_eq!(on(3).count(), 3);
    for s in &p.sqtt {
        assert!(s.device == 0 || s.device == 3);
    }
    assert_eq!(
        p.sqtt.iter().filter(|s| s.device == 3).count(),
        3 * EmuArch::Gfx1100.num_se() as usize
    );
    // The .rgp holds the first device; the warning says so.
    assert!(r.warnings.iter().any(|w| w.contains("AMD only")));
}

#[test]
fn device_specs() {
    use DeviceSpec::*;
    // The emulated PCI and USB paths run the whole demo through the real drivers.
    for d in ["emu-pci", "emu-usb"].map(|s| s.parse::<DeviceSpec>().unwrap()) {
        let o = CaptureOptions {
            devices: vec![d],
            ..Default::default()
        };
        let r = run_demo(&o, &mut |_, _, _| {}).unwrap_or_else(|e| panic!("{d:?}: {}", chain(&e)));
        assert!(capture::all_correct(&r), "{d:?}");
        assert_eq!(r.profile.kernels.len(), 3, "{d:?}");
        assert!(r.summary.iter().all(|k| k.waves > 0), "{d:?}");
    }
    // No AMD GPU and no bridge here: a clear error naming the device, no panic.
    for (d, what) in [(Pci(0), "pci:0"), (Usb(0), "usb:0")] {
        let o = CaptureOptions {
            devices: vec![d],
            ..Default::default()
        };
        let e = match run_demo(&o, &mut |_, _, _| {}) {
            Ok(_) => continue, // a machine that has one
            Err(e) => chain(&e),
        };
        assert!(e.contains(what), "{e}");
    }
}

#[test]
fn a_failed_capture_keeps_what_was_recorded() {
    // The second workload's kernel asks for more LDS than the device has, which only the
    // device's loader can tell: the capture stops there, but the first kernel's events and
    // SQTT are written and the error says where. (A corrupt code object is refused before
    // anything runs: the last lines.)
    let dir = tempfile::tempdir().unwrap();
    let mut work = capture::demo_workloads();
    work.truncate(1);
    let kept = work[0].name.clone().unwrap();
    let mut bad = fixture("vadd");
    let co = traces::isa::CodeObject::parse_loaded(&bad).unwrap();
    let image = traces::isa::CodeObject::load_image(&bad).unwrap();
    let at = co.kernels[0].descriptor_addr as usize;
    let desc = image[at..at + 64].to_vec();
    let off = bad.windows(64).position(|w| w == desc).unwrap();
    // group_segment_fixed_size, the descriptor's first field: 1 MiB of LDS.
    bad[off..off + 4].copy_from_slice(&(1u32 << 20).to_le_bytes());
    work.push(Workload {
        elf: bad.into(),
        name: None,
        grid: [1, 1, 1],
        block: [32, 1, 1],
        args: vec![
            Arg::Buffer(vec![0; 4]),
            Arg::Buffer(vec![0; 4]),
            Arg::Buffer(vec![0; 4]),
            Arg::Scalar(1),
        ],
        check: None,
    });
    let wst = dir.path().join("partial.wst");
    let o = CaptureOptions {
        wst: Some(wst.clone()),
        ..Default::default()
    };
    let e = match run_capture(&work, &o, &mut |_, _, _| {}) {
        Ok(_) => panic!("a corrupt code object must stop the capture"),
        Err(e) => chain(&e),
    };
    assert!(e.contains("saved in") && e.contains("partial.wst"), "{e}");
    assert!(e.contains("code object"), "{e}");
    let (_, p) = traces::open::open_path(&wst).unwrap();
    let names: Vec<&str> = p.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, [kept.as_str()]);
    assert_eq!(p.sqtt.len(), EmuArch::Gfx1100.num_se() as usize);

    let mut corrupt = fixture("vadd");
    corrupt.truncate(200);
    work[1].elf = corrupt.into();
    std::fs::remove_file(&wst).unwrap();
    let e = match run_capture(&work, &o, &mut |_, _, _| panic!("nothing may run")) {
        Ok(_) => panic!("a corrupt code object must be refused"),
        Err(e) => chain(&e),
    };
    assert!(e.contains("code object") && !e.contains("saved in"), "{e}");
    assert!(!wst.exists(), "nothing written");
}

/// The demo on the emulated RDNA4 and CDNA parts runs its own builds of the demo kernels
/// (`assets/gfx1201`, `assets/gfx950`), gets the CPU references' results and an SQTT blob per
/// SE (per XCC and SE on gfx950) in which our decoder finds the kernels' waves.
#[test]
fn demo_runs_on_emulated_gfx1201_and_gfx950() {
    for arch in ["gfx1201", "gfx950"] {
        let dir = tempfile::tempdir().unwrap();
        let dev: DeviceSpec = format!("emu:{arch}").parse().unwrap();
        let r = run_demo(&opts(dir.path(), vec![dev]), &mut |_, _, _| {})
            .unwrap_or_else(|e| panic!("demo on emu:{arch}: {e}"));
        assert_eq!(r.checks.len(), 3, "{arch}");
        for c in &r.checks {
            assert_eq!(c.result, Some(Ok(())), "{} on {}", c.kernel, c.device);
        }
        let p = &r.profile;
        let target = p.devices[0].target();
        assert!(
            target.is_some_and(|t| t.to_string() == arch),
            "the device's target: {target:?}"
        );
        let ea = EmuArch::parse(arch).unwrap();
        for (name, _, _) in DEMO {
            let k = p.kernels.iter().find(|k| k.name == name).unwrap();
            let traces: Vec<_> = p
                .sqtt
                .iter()
                .filter(|s| Some(s.kern) == k.kern && s.exec_tag == k.exec_tag)
                .collect();
            assert_eq!(
                traces.len() as u32,
                ea.num_se(),
                "{arch} {name}: one SQTT blob per SE (of every XCC)"
            );
            let waves: usize = traces
                .iter()
                .map(|s| {
                    analyze_with(p.blob(s.blob), target, AnalyzeOptions::default())
                        .unwrap_or_else(|e| panic!("{arch} {name} SE{}: {e}", s.se))
                        .waves
                        .len()
                })
                .sum();
            assert!(waves > 0, "{arch} {name}: waves in the SQTT");
        }
    }
}

/// tinygrad's decoder (its code has read real CDNA traces) reads the emulated gfx950 demo's
/// SQTT as ours does: per SE blob, the same number of wave starts and of instruction packets.
#[test]
fn tinygrad_reads_the_emulated_gfx950_sqtt() {
    let Some(python) = testdata::require_python_module("tinygrad.renderer.amd.sqtt", None) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dev: DeviceSpec = "emu:gfx950".parse().unwrap();
    let r = run_demo(&opts(dir.path(), vec![dev]), &mut |_, _, _| {}).unwrap();
    let p = &r.profile;
    let target = p.devices[0].target();
    let script = "import sys\nfrom tinygrad.renderer.amd.sqtt import decode\n\
                  w=i=0\n\
                  for p in decode(open(sys.argv[1],'rb').read()):\n  n=type(p).__name__\n  \
                  w+=n=='CDNA_WAVESTART'\n  i+=n=='CDNA_INST'\n\
                  print(w,i)";
    let mut checked = 0;
    for (n, s) in p.sqtt.iter().enumerate() {
        let blob = p.blob(s.blob);
        let ours = analyze_with(blob, target, AnalyzeOptions::default()).unwrap();
        if ours.waves.is_empty() {
            continue;
        }
        let f = dir.path().join(format!("blob{n}.sqtt"));
        std::fs::write(&f, blob).unwrap();
        let o = std::process::Command::new(&python)
            .args(["-c", script, f.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: Vec<usize> = String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        assert_eq!(
            v,
            vec![ours.waves.len(), ours.instruction_packets as usize],
            "blob {n} (SE {}): tinygrad's wave starts and instruction packets vs ours",
            s.se
        );
        checked += 1;
    }
    assert!(checked > 0, "no emulated gfx950 blob with waves");
}

/// The emulated gfx1201 behind the real PCI (AM) driver and behind the emulated USB bridge:
/// the demo runs correctly, every kernel has one SQTT blob per SE with waves in it, and the
/// .wst (what the app opens) reads back with the same kernels and streams.
#[test]
fn demo_runs_on_emulated_gfx1201_behind_pci_and_usb() {
    demo_behind_the_driver("gfx1201", &["emu-pci:gfx1201", "emu-usb:gfx1201"]);
}

/// The emulated MI350 (gfx950, 8 XCCs) behind the real PCI (AM) driver: the demo runs
/// correctly on the per-XCC PM4 queues and every kernel has an SQTT blob for each SE of every
/// XCC (32) with waves in it; the .wst reads back.
#[test]
fn demo_runs_on_emulated_mi350_behind_pci() {
    demo_behind_the_driver("gfx950", &["emu-pci:gfx950"]);
}

fn demo_behind_the_driver(arch: &str, specs: &[&str]) {
    let ea = EmuArch::parse(arch).unwrap();
    for &spec in specs {
        let dir = tempfile::tempdir().unwrap();
        let dev: DeviceSpec = spec.parse().unwrap();
        let r = run_demo(&opts(dir.path(), vec![dev]), &mut |_, _, _| {})
            .unwrap_or_else(|e| panic!("demo on {spec}: {}", chain(&e)));
        assert_eq!(r.checks.len(), 3, "{spec}");
        for c in &r.checks {
            assert_eq!(c.result, Some(Ok(())), "{} on {spec}", c.kernel);
        }
        let p = &r.profile;
        let target = p.devices[0].target();
        assert!(
            target.is_some_and(|t| t.to_string() == arch),
            "{spec}: the device's target: {target:?}"
        );
        for (name, _, _) in DEMO {
            let k = p.kernels.iter().find(|k| k.name == name).unwrap();
            let traces: Vec<_> = p
                .sqtt
                .iter()
                .filter(|s| Some(s.kern) == k.kern && s.exec_tag == k.exec_tag)
                .collect();
            assert_eq!(
                traces.len() as u32,
                ea.num_se(),
                "{spec} {name}: one SQTT blob per SE"
            );
            let mut ses: Vec<u32> = traces.iter().map(|s| s.se).collect();
            ses.sort_unstable();
            ses.dedup();
            assert_eq!(ses.len() as u32, ea.num_se(), "{spec} {name}: distinct SEs");
            let waves: usize = traces
                .iter()
                .map(|s| {
                    analyze_with(p.blob(s.blob), target, AnalyzeOptions::default())
                        .unwrap_or_else(|e| panic!("{spec} {name} SE{}: {e}", s.se))
                        .waves
                        .len()
                })
                .sum();
            assert!(waves > 0, "{spec} {name}: waves in the SQTT");
        }
        let (_, back) = traces::open::open_path(&dir.path().join("demo.wst")).unwrap();
        assert_eq!(back.kernels.len(), 3, "{spec}");
        assert_eq!(back.sqtt.len(), p.sqtt.len(), "{spec}");
        for (a, b) in back.sqtt.iter().zip(&p.sqtt) {
            assert_eq!(back.blob(a.blob), p.blob(b.blob), "{spec}");
        }
    }
}
