//! The captured tinygrad kernels (shared/traces/{gfx1100,gfx1200}/{plus,gemm}_run_0) run on the
//! emulated gfx1100 / gfx1201 with SQTT on (on every emulated backend): mapping the emulated
//! instruction tokens onto the program (`traces::sqtt::map::map_insts`) walks every wave through
//! the same PCs, with the same token classes, as mapping the hardware capture does.

#[macro_use]
mod common;

use std::collections::BTreeSet;

use common::{opts, shared_dir, Target};
use runtime::platform::AllocKind;
use runtime::DeviceOptions;
use traces::isa::CodeObject;
use traces::sqtt::{self, map::map_insts, DecodeOptions};

/// One wave's walk: (PC, token class, INST op name).
type Walk = Vec<(u64, &'static str, Option<String>)>;

/// The distinct per-wave walks of the itraced blobs.
fn walks(blobs: &[Vec<u8>], code: &CodeObject, ctx: &str) -> BTreeSet<Walk> {
    let mut out = BTreeSet::new();
    for (se, blob) in blobs.iter().enumerate() {
        let a = sqtt::analyze(blob, None).unwrap();
        let m = map_insts(blob, code, Some(&a), DecodeOptions::default());
        assert_eq!(m.error, None, "{ctx} SE{se}");
        for (_, insts) in m.by_slot() {
            // A slot can hold several waves in turn; split at each s_endpgm (the WAVEEND).
            let mut w = Walk::new();
            for i in insts {
                // Layout 4 names carry an _RDNA4 suffix; IMMEDIATE_MASK folds several waves'.
                let token = match i.token.trim_end_matches("_RDNA4") {
                    t if t.starts_with("IMMEDIATE") => "IMMEDIATE",
                    "INST" => "INST",
                    "VALUINST" => "VALUINST",
                    "WAVEEND" => "WAVEEND",
                    _ => i.token,
                };
                w.push((i.pc, token, i.op.clone()));
                if token == "WAVEEND" {
                    out.insert(std::mem::take(&mut w));
                }
            }
        }
    }
    out
}

fn case(t: Target, run: &str, elf: &str, bytes: [usize; 3], grid: [u32; 3], local: [u32; 3]) {
    let root = shared_dir(t.arch(), run);
    let root = root.display();
    let Ok(bin) = std::fs::read(format!("{root}/{elf}")) else {
        testdata::missing(&format!("shared capture {root}/{elf}"));
        return;
    };
    let code = CodeObject::parse(&bin).unwrap();
    // The hardware capture's itraced SEs.
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(format!("{root}/meta.json")).unwrap()).unwrap();
    let mut real = Vec::new();
    for s in meta["sqtt"].as_array().unwrap() {
        if s["itrace"].as_bool() == Some(true) {
            real.push(std::fs::read(format!("{root}/{}", s["file"].as_str().unwrap())).unwrap());
        }
    }
    // The same launch on the emulated device.
    let mut d = t.device(DeviceOptions {
        sqtt: true,
        ..opts()
    });
    let prg = d.load_program(&bin).unwrap();
    let bufs: Vec<_> = bytes
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
    d.launch(&prg, &refs, &[], grid, local).unwrap();
    let prof = d.profile().unwrap();
    let emu: Vec<Vec<u8>> = prof
        .sqtt
        .iter()
        .filter(|t| t.itrace)
        .map(|t| prof.blob(t.blob).to_vec())
        .collect();
    let ctx = format!("{t:?} {run}");
    let (w_real, w_emu) = (walks(&real, &code, &ctx), walks(&emu, &code, &ctx));
    assert!(
        !w_emu.is_empty(),
        "{ctx}: the emulated trace has mapped waves"
    );
    if w_emu != w_real {
        let show = |w: &BTreeSet<Walk>| {
            w.iter()
                .map(|x| {
                    x.iter()
                        .map(|(pc, t, o)| format!("{pc:x}:{t}:{}", o.as_deref().unwrap_or("")))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect::<Vec<_>>()
                .join("\n  ")
        };
        panic!(
            "{ctx}: emulated vs hardware per-wave walks differ\nemulated:\n  {}\nhardware:\n  {}",
            show(&w_emu),
            show(&w_real)
        );
    }
}

fn captured_plus_walks_like_hardware(t: Target) {
    let e = "program0_E_3.elf";
    case(t, "plus_run_0", e, [12; 3], [1, 1, 1], [3, 1, 1]);
}

fn captured_gemm_walks_like_hardware(t: Target) {
    let g = "program0_r_32_32_16_2.elf";
    case(t, "gemm_run_0", g, [4096; 3], [32, 32, 1], [16, 1, 1]);
}

per_target!(
    captured_plus_walks_like_hardware,
    captured_gemm_walks_like_hardware,
);
