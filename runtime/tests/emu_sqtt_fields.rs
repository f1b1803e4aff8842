//! Every field of every packet the emulator's SQTT encoder writes, checked against what the
//! hardware wrote for the same program and launch (shared/traces/{gfx1100,gfx1200}/{plus,gemm}_run_0):
//! per packet type, the set of values of each named field and of the bits no field covers.
//! Timing (deltas, the realtime clock) and what the hardware sees that the emulator does not
//! model (EVENT, SNAPSHOT, PERF, ...) are listed and left out, each with its reason below.

#[macro_use]
mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::{opts, shared_dir, Target};
use emu::EmuArch;
use runtime::platform::AllocKind;
use runtime::{Device, DeviceOptions};
use traces::sqtt::{self, DecodeOptions};

/// type -> field -> values.
type Sets = BTreeMap<&'static str, BTreeMap<String, BTreeSet<u64>>>;

fn sets(blobs: &[Vec<u8>]) -> Sets {
    let mut out = Sets::new();
    for blob in blobs {
        let mut dec = sqtt::decode(blob, DecodeOptions::default());
        dec.for_each_run(|p, _| {
            let t = out.entry(p.name()).or_default();
            let mut mask = 0u64;
            for f in p.ty.fields {
                t.entry(f.name.to_string())
                    .or_default()
                    .insert(f.get(p.raw));
                mask |= (u64::MAX >> (64 - f.width())) << f.lo;
            }
            let bits = u32::from(p.nibbles) * 4;
            let all = if bits >= 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            };
            t.entry("_undecoded".into())
                .or_default()
                .insert(p.raw & all & !mask);
        });
    }
    out
}

/// The emulated capture of the hardware launch of `run`'s program.
fn emulated(
    t: Target,
    run: &str,
    elf: &str,
    bytes: [usize; 3],
    grid: [u32; 3],
    local: [u32; 3],
) -> Option<(Sets, Sets)> {
    let open = || {
        t.device(DeviceOptions {
            sqtt: true,
            ..opts()
        })
    };
    emulated_on(t.arch(), open, run, elf, bytes, grid, local)
}

fn emulated_on(
    arch: EmuArch,
    open: impl FnOnce() -> Device,
    run: &str,
    elf: &str,
    bytes: [usize; 3],
    grid: [u32; 3],
    local: [u32; 3],
) -> Option<(Sets, Sets)> {
    let root = shared_dir(arch, run);
    let Ok(bin) = std::fs::read(root.join(elf)) else {
        testdata::missing(&root.display().to_string());
        return None;
    };
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("meta.json")).unwrap()).unwrap();
    let real: Vec<Vec<u8>> = meta["sqtt"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| std::fs::read(root.join(s["file"].as_str().unwrap())).unwrap())
        .collect();
    let mut d = open();
    let prg = d.load_program(&bin).unwrap();
    let bufs: Vec<_> = bytes
        .iter()
        .map(|&n| {
            let b = d.alloc(n as u64, AllocKind::VRAM).unwrap();
            d.copyin(&b, &vec![0x3fu8; n]).unwrap();
            b
        })
        .collect();
    let refs: Vec<_> = bufs.iter().collect();
    d.launch(&prg, &refs, &[], grid, local).unwrap();
    let prof = d.profile().unwrap();
    let emu: Vec<Vec<u8>> = prof
        .sqtt
        .iter()
        .map(|t| prof.blob(t.blob).to_vec())
        .collect();
    Some((sets(&emu), sets(&real)))
}

fn show(s: &BTreeSet<u64>) -> String {
    let v: Vec<String> = s.iter().take(12).map(|x| format!("{x:#x}")).collect();
    format!(
        "{{{}{}}}",
        v.join(","),
        if s.len() > 12 { ",..." } else { "" }
    )
}

fn compare(t: Target, run: &str, elf: &str, bytes: [usize; 3], grid: [u32; 3], local: [u32; 3]) {
    let Some((emu, real)) = emulated(t, run, elf, bytes, grid, local) else {
        return;
    };
    check(&format!("{t:?}"), run, &emu, &real);
}

fn check(t: &str, run: &str, emu: &Sets, real: &Sets) {
    let mut bad = Vec::new();
    for (ty, fields) in emu {
        let Some(rf) = real.get(ty) else {
            bad.push(format!(
                "{ty}: written by the emulator, never by the hardware"
            ));
            continue;
        };
        for (f, ev) in fields {
            let rv = &rf[f];
            let extra: BTreeSet<u64> = ev.difference(rv).copied().collect();
            println!("{t} {run} {ty}.{f}: emu {} hw {}", show(ev), show(rv));
            if !extra.is_empty() && !timing(ty, f) {
                bad.push(format!(
                    "{ty}.{f}: emulator {} hardware {}",
                    show(ev),
                    show(rv)
                ));
            }
        }
    }
    for ty in real.keys().filter(|k| !emu.contains_key(*k)) {
        println!("{t} {run} {ty}: hardware only");
    }
    assert!(bad.is_empty(), "{t} {run}:\n  {}", bad.join("\n  "));
}

/// Fields whose values are not the encoder's to match: times (deltas, the marker's clock value
/// differ with the emulator's timing model by design), REG's register and value (the registers
/// the command stream wrote: wavescope's PM4 is not tinygrad's, compared in `conformance`), and
/// the slot of the waves on the traced SIMD (which of the dispatch's waves land there is the
/// scheduler's choice; WAVESTART/WAVEEND slots over all SIMDs are compared).
fn timing(ty: &str, f: &str) -> bool {
    f == "delta"
        || (ty == "CDNA_TIMESTAMP" && f == "timestamp")
        || (ty.starts_with("TS_DELTA_OR_MARK") && f == "_undecoded")
        || (ty == "REG" && (f == "subop" || f == "val32"))
        || (f == "wave" && !ty.starts_with("WAVESTART") && !ty.starts_with("WAVEEND"))
}

fn plus_fields_like_hardware(t: Target) {
    compare(
        t,
        "plus_run_0",
        "program0_E_3.elf",
        [12; 3],
        [1, 1, 1],
        [3, 1, 1],
    );
}

fn gemm_fields_like_hardware(t: Target) {
    let g = "program0_r_32_32_16_2.elf";
    compare(t, "gemm_run_0", g, [4096; 3], [32, 32, 1], [16, 1, 1]);
}

per_target!(
    // pci_gfx950: as captured_plus_walks_like_hardware in emu_sqtt_captured.rs.
    plus_fields_like_hardware except [pci_gfx1100, usb_gfx1100, pci_gfx1201, usb_gfx1201, pci_gfx950],
    gemm_fields_like_hardware except [pci_gfx1100, usb_gfx1100, pci_gfx1201, usb_gfx1201],
);

/// gfx950: the gemm capture's launch on the emulated 8-XCC part, every SE's stream (the CDNA
/// packet types) against the hardware's 32 SE blobs.
#[test]
fn gfx950_gemm_fields_like_hardware() {
    let open = || {
        emu::open_kfd(
            EmuArch::Gfx950,
            DeviceOptions {
                sqtt: true,
                ..opts()
            },
        )
        .unwrap()
        .0
    };
    let g = "program0_r_32_32_16_2.elf";
    let run = "gemm_run_0";
    let grid = [32, 32, 1];
    let Some((emu, real)) = emulated_on(EmuArch::Gfx950, open, run, g, [4096; 3], grid, [16, 1, 1])
    else {
        return;
    };
    check("gfx950", run, &emu, &real);
}
