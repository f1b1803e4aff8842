//! Our per-wave instruction lists against AMD's decoder (rocprof-trace-decoder 0.1.6, its
//! output for every shared capture in `../shared/conformance/rocprof/`): for every blob with
//! instruction records, the same traced waves (simd, slot, begin, end) and, instruction by
//! instruction, the same PC, issue time, stall and duration.
//!
//! The differences that remain are counted per field and must stay within what
//! `docs/conformance.md` ("AMD's decoder (rocprof-trace-decoder 0.1.6)") lists and explains.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use traces::isa::CodeObject;
use traces::sqtt::{self, map::map_insts, DecodeOptions, Layout};
use traces::GfxTarget;

fn oracle_dir() -> Option<PathBuf> {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/rocprof");
    if d.is_dir() {
        return Some(d);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "AMD's decoder's reference output is missing at {} (required under CI)",
        d.display()
    );
    eprintln!("skipping: {} missing", d.display());
    None
}

/// One instruction: (pc vaddr, time, stall, duration).
type Inst = (u64, i64, i64, i64);

/// A traced wave: (simd, slot, begin, end) and its instructions.
type Wave = ((u64, u64, i64, i64), Vec<Inst>);

fn amd_waves(j: &Value) -> Vec<Wave> {
    let mut v: Vec<Wave> = j["waves"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["instructions_size"].as_u64().unwrap() > 0)
        .map(|w| {
            let key = (
                w["simd"].as_u64().unwrap(),
                w["wave_id"].as_u64().unwrap(),
                w["begin_time"].as_i64().unwrap(),
                w["end_time"].as_i64().unwrap(),
            );
            let insts = w["instructions_array"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| {
                    (
                        i["pc_vaddr"].as_u64().unwrap(),
                        i["time"].as_i64().unwrap(),
                        i["stall"].as_i64().unwrap(),
                        i["duration"].as_i64().unwrap(),
                    )
                })
                .collect();
            (key, insts)
        })
        .collect();
    v.sort_by_key(|w| (w.0 .2, w.0 .0, w.0 .1));
    v
}

/// The program AMD's records point into.
fn program_of(j: &Value) -> usize {
    let mut n: BTreeMap<u64, usize> = BTreeMap::new();
    for w in j["waves"].as_array().unwrap() {
        for i in w["instructions_array"].as_array().unwrap() {
            if let Some(p) = i["pc_program"].as_u64() {
                *n.entry(p).or_default() += 1;
            }
        }
    }
    n.into_iter().max_by_key(|&(_, c)| c).map_or(0, |(p, _)| p) as usize
}

fn our_waves(blob: &[u8], code: &CodeObject, ctx: &str, diffs: &mut Diffs) -> Vec<Wave> {
    let opts = DecodeOptions::default();
    let analysis = sqtt::analyze(blob, None).unwrap();
    let m = map_insts(blob, code, Some(&analysis), opts);
    assert_eq!(m.error, None, "{ctx}: mapping stopped");
    let cdna = sqtt::Decoder::new(blob, opts)
        .take(2)
        .any(|p| p.layout == Layout::Cdna);
    let amd_clock: BTreeMap<u64, i64> = if cdna {
        sqtt::map::cdna_amd_clock(blob, opts).into_iter().collect()
    } else {
        BTreeMap::new()
    };
    let mut by_wave: BTreeMap<u32, Vec<&sqtt::map::MappedInst>> = BTreeMap::new();
    for i in &m.insts {
        let endpgm = i.token.contains("WAVEEND");
        if !cdna && !endpgm && i.time != i.issue_time + i.stall {
            diffs.token_vs_issue += 1;
        }
        by_wave
            .entry(i.wave.expect("every mapped instruction has its wave"))
            .or_default()
            .push(i);
    }
    let mut v: Vec<Wave> = by_wave
        .into_iter()
        .map(|(w, insts)| {
            let wave = &analysis.waves[w as usize];
            let begin = if cdna {
                amd_clock[&wave.start_offset]
            } else {
                wave.start
            };
            let last = insts.last().unwrap();
            let end = last.issue_time + last.duration;
            let key = (u64::from(wave.simd), u64::from(wave.wave), begin, end);
            let list = insts
                .iter()
                .map(|i| (i.pc, i.issue_time, i.stall, i.duration))
                .collect();
            (key, list)
        })
        .collect();
    v.sort_by_key(|w| (w.0 .2, w.0 .0, w.0 .1));
    v
}

#[derive(Default, Debug)]
struct Diffs {
    blobs: usize,
    waves: usize,
    insts: usize,
    pc: usize,
    time: usize,
    stall: usize,
    duration: usize,
    end: usize,
    /// RDNA: instructions whose token time is not AMD's time + stall.
    token_vs_issue: usize,
    examples: Vec<String>,
}

fn compare(root: &Path, arch: &str, diffs: &mut Diffs) {
    let shared = root.join("../../traces");
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(arch))
        .unwrap()
        .flatten()
        .flat_map(|case| std::fs::read_dir(case.path()).unwrap().flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    for f in files {
        let j: Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
        if j["summary"]["instructions"].as_u64().unwrap() == 0 {
            continue;
        }
        let ctx = j["capture"]["id"].as_str().unwrap().to_string();
        let case = j["capture"]["case"].as_str().unwrap();
        let dir = shared.join(arch).join(case);
        let blob = std::fs::read(dir.join(j["blobs"][0]["file"].as_str().unwrap())).unwrap();
        let prog = &j["programs"][program_of(&j)];
        let elf = std::fs::read(dir.join(prog["file"].as_str().unwrap())).unwrap();
        let target: GfxTarget = arch.parse().unwrap();
        let code = CodeObject::parse_with_target(&elf, Some(target)).unwrap();
        let want = amd_waves(&j);
        let got = our_waves(&blob, &code, &ctx, diffs);
        diffs.blobs += 1;
        let keys = |v: &[Wave]| v.iter().map(|w| w.0).collect::<Vec<_>>();
        let ids = |v: &[Wave]| {
            v.iter()
                .map(|w| (w.0 .0, w.0 .1, w.0 .2))
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&got), ids(&want), "{ctx}: traced waves");
        for (g, w) in keys(&got).into_iter().zip(keys(&want)) {
            if g.3 != w.3 {
                diffs.end += 1;
                if diffs.examples.len() < 40 {
                    diffs
                        .examples
                        .push(format!("{ctx} wave {g:?}: end ours {}, AMD {}", g.3, w.3));
                }
            }
        }
        for ((k, g), (_, w)) in got.iter().zip(&want) {
            diffs.waves += 1;
            let pcs = |v: &[Inst]| v.iter().map(|i| i.0).collect::<Vec<_>>();
            assert_eq!(pcs(g), pcs(w), "{ctx} wave {k:?}: PCs");
            for (n, (a, b)) in g.iter().zip(w).enumerate() {
                diffs.insts += 1;
                let mut note = |what: &str, c: &mut usize, x: i64, y: i64| {
                    if x != y {
                        *c += 1;
                        if diffs.examples.len() < 40 {
                            diffs.examples.push(format!(
                                "{ctx} simd {} slot {} #{n} pc {:#x} {what}: ours {x}, AMD {y}",
                                k.0, k.1, a.0
                            ));
                        }
                    }
                };
                let (mut t, mut s, mut d) = (0, 0, 0);
                note("time", &mut t, a.1, b.1);
                note("stall", &mut s, a.2, b.2);
                note("duration", &mut d, a.3, b.3);
                diffs.time += t;
                diffs.stall += s;
                diffs.duration += d;
            }
        }
    }
}

/// gfx11: waves, PCs and wave ends equal; AMD sees a few cycles of stall before some VALUs
/// that we do not (docs/conformance.md). Our token time always equals AMD's time + stall.
#[test]
fn gfx11_instructions_equal_amds() {
    let Some(root) = oracle_dir() else { return };
    let mut d = Diffs::default();
    compare(&root, "gfx1100", &mut d);
    eprintln!("{d:#?}");
    // gemm SE0/SE1, plus SE1 and the hand-assembled sync kernel's SE1.
    assert_eq!((d.blobs, d.waves, d.insts), (4, 13, 632), "{d:#?}");
    assert_eq!((d.pc, d.end), (0, 0), "{d:#?}");
    assert!(d.time <= 12 && d.stall <= 12 && d.duration <= 12, "{d:#?}");
    assert_eq!(d.token_vs_issue, 0, "{d:#?}");
}

/// gfx12: waves, PCs and wave ends equal; as on gfx11, AMD sees a few cycles of stall before
/// some instructions that we do not (docs/conformance.md).
#[test]
fn gfx12_instructions_equal_amds() {
    let Some(root) = oracle_dir() else { return };
    let mut d = Diffs::default();
    compare(&root, "gfx1200", &mut d);
    eprintln!("{d:#?}");
    assert_eq!((d.blobs, d.waves, d.insts), (3, 17, 990), "{d:#?}");
    assert_eq!((d.pc, d.end), (0, 0), "{d:#?}");
    assert!(d.time <= 44 && d.stall <= 44 && d.duration <= 44, "{d:#?}");
    assert_eq!(d.token_vs_issue, 0, "{d:#?}");
}

/// gfx950: waves, PCs, issue times and stalls equal; durations within the documented
/// difference (AMD's gfx9 issue cost of some instructions is more than one 4-cycle slot, by a
/// rule we have not derived; see docs/conformance.md).
#[test]
fn cdna_instructions_equal_amds() {
    let Some(root) = oracle_dir() else { return };
    let mut d = Diffs::default();
    compare(&root, "gfx950", &mut d);
    eprintln!("{d:#?}");
    assert_eq!((d.blobs, d.waves, d.insts), (1, 4, 232), "{d:#?}");
    assert_eq!((d.pc, d.end), (0, 0), "{d:#?}");
    assert!(d.time <= 6 && d.stall <= 5 && d.duration <= 16, "{d:#?}");
}
