//! Instruction tokens mapped to PCs, against tinygrad's `map_insts` on the shared captures:
//! per wave slot of the traced unit, the count, first and last PC and the first 24 entries.

use serde_json::Value;
use std::path::Path;
use traces::isa::CodeObject;
use traces::sqtt::{self, map::map_insts, DecodeOptions};

#[test]
fn pc_mapping_equals_reference() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces");
    assert!(
        root.is_dir(),
        "shared captures missing at {}",
        root.display()
    );
    let mut checked = 0;
    for arch in ["gfx1100", "gfx1200"] {
        for case in ["empty_run_0", "plus_run_0", "gemm_run_0"] {
            let dir = root.join(arch).join(case);
            let r: Value =
                serde_json::from_slice(&std::fs::read(dir.join("reference.json")).unwrap())
                    .unwrap();
            let elf = std::fs::read_dir(&dir)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|e| e == "elf"))
                .unwrap();
            let code = CodeObject::parse(&std::fs::read(&elf).unwrap()).unwrap();
            for ev in r["sqtt_events"].as_array().unwrap() {
                let want = &ev["decoder_2026_05"]["map_insts"];
                if want.is_null() || !ev["itrace"].as_bool().unwrap() {
                    continue;
                }
                let ctx = format!("{arch}/{case} se {}", ev["se"]);
                let blob =
                    std::fs::read(dir.join(format!("kern{}_se{}.sqtt", ev["kern"], ev["se"])))
                        .unwrap();
                let analysis = sqtt::analyze(&blob, None).unwrap();
                let m = map_insts(&blob, &code, Some(&analysis), DecodeOptions::default());
                assert_eq!(m.error, None, "{ctx}");
                assert_eq!(
                    m.insts.len() as u64,
                    want["mapped"].as_u64().unwrap(),
                    "{ctx}"
                );
                let by_slot = m.by_slot();
                let per = want["per_wave_id"].as_object().unwrap();
                assert_eq!(by_slot.len(), per.len(), "{ctx}");
                for (slot, w) in per {
                    let got = &by_slot[&slot.parse::<u8>().unwrap()];
                    assert_eq!(
                        got.len() as u64,
                        w["count"].as_u64().unwrap(),
                        "{ctx} slot {slot}"
                    );
                    let hex = |pc: u64| format!("{pc:#x}");
                    assert_eq!(hex(got[0].pc), w["first_pc"].as_str().unwrap(), "{ctx}");
                    assert_eq!(
                        hex(got[got.len() - 1].pc),
                        w["last_pc"].as_str().unwrap(),
                        "{ctx}"
                    );
                    for (g, h) in got.iter().zip(w["head"].as_array().unwrap()) {
                        assert_eq!(g.time, h[0].as_i64().unwrap(), "{ctx} slot {slot}");
                        assert_eq!(hex(g.pc), h[1].as_str().unwrap(), "{ctx} slot {slot}");
                        assert_eq!(g.token, h[2].as_str().unwrap(), "{ctx} slot {slot}");
                        // tinygrad prints its own instruction syntax; the mnemonic must agree.
                        let mnemonic = h[3].as_str().unwrap().split('(').next().unwrap();
                        let ours = g.inst.mnemonic().to_ascii_lowercase();
                        if mnemonic != "VOPD" {
                            assert!(
                                mnemonic.to_ascii_lowercase().starts_with(&ours)
                                    || ours.starts_with(&mnemonic.to_ascii_lowercase()),
                                "{ctx}: {ours} vs {mnemonic}"
                            );
                        }
                        checked += 1;
                    }
                    assert!(got.iter().all(|i| i.wave.is_some()), "{ctx}: unlinked wave");
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} entries checked");
}
