//! `wavescope stats FILE --json` against the independent reference decode of the gemm capture.

use std::path::PathBuf;

#[test]
fn stats_json_matches_the_reference_instruction_count() {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces/gfx1100/gemm_run_0");
    let dir = if dir.is_dir() {
        dir
    } else {
        PathBuf::from("/work/shared/traces/gfx1100/gemm_run_0")
    };
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wavescope"))
        .args(["stats", "--json", "--kernel", "r_32"])
        .arg(dir.join("profile.pkl"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("reference.json")).unwrap()).unwrap();
    let k = &v[0];
    let waves: u64 = r["sqtt_events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["decoder_2026_08"]["wave_count"].as_u64().unwrap())
        .sum();
    assert_eq!(k["waves"].as_u64().unwrap(), waves);
    // The reference maps the first wave of SE 0 to PCs 0x1700..0x1868; our table's PCs lie there.
    let insts = k["instructions"].as_array().unwrap();
    let first = &r["sqtt_events"][0]["decoder_2026_08"]["map_insts"]["per_wave_id"]["0"];
    assert_eq!(insts[0]["key"], first["first_pc"]);
    let last = first["last_pc"].as_str().unwrap();
    let last = u64::from_str_radix(last.trim_start_matches("0x"), 16).unwrap();
    for i in insts {
        let pc =
            u64::from_str_radix(i["key"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
        assert!((0x1700..=last).contains(&pc), "{i}");
        assert!(
            i["min"].as_i64() <= i["median"].as_i64() && i["median"].as_i64() <= i["max"].as_i64()
        );
    }
    // 5 traced waves on each of the 2 itraced SEs run the first instruction once each.
    assert_eq!(insts[0]["count"].as_u64(), Some(10));
    let share: f64 = insts.iter().map(|i| i["share"].as_f64().unwrap()).sum();
    assert!((share - 1.0).abs() < 1e-6);
    // Stall: cycles above the best case of the token kind, so never more than the latency and
    // never less than what lies above the instruction's own best case.
    for i in insts {
        let (total, count, min) = (
            i["total"].as_i64().unwrap(),
            i["count"].as_i64().unwrap(),
            i["min"].as_i64().unwrap(),
        );
        let stall = i["stall"].as_i64().unwrap();
        assert!(total - count * min <= stall && stall <= total, "{i}");
    }
    // The kernel's costliest instruction is the wait for its global loads: nearly all stall.
    let top = insts
        .iter()
        .max_by_key(|i| i["total"].as_i64().unwrap())
        .unwrap();
    assert!(
        top["name"].as_str().unwrap().starts_with("s_waitcnt"),
        "{top}"
    );
    assert!(top["stall_share"].as_f64().unwrap() > 0.9, "{top}");
}
