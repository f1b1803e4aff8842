//! Register pressure on the demo's vadd (capture/assets), checked at hand-worked points of
//! its code (disassembly in the comments), and within the allocation on every shared capture.

use traces::analysis::pressure::kernel_code_pressure;
use traces::isa::CodeObject;

#[test]
fn vadd_live_registers_by_hand() {
    let p = format!(
        "{}/../capture/assets/vadd.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    let c = CodeObject::parse(&std::fs::read(p).unwrap()).unwrap();
    let pr = kernel_code_pressure(&c, &c.kernels[0]);
    let at = |pc: u64| {
        let r = pr.rows.iter().find(|r| r.pc == pc).unwrap();
        (r.vgprs, r.sgprs)
    };
    // 0x1600 s_load_b32 s2, s[0:1], 0x18: live in s0, s1 (kernarg pointer, used again), s15
    // (work-group id, used at 0x1608) and v0 (work-item id); writes s2. VGPRs {v0}, SGPRs
    // {s0, s1, s2, s15}.
    assert_eq!(at(0x1600), (1, 4));
    // 0x1670 global_load_b32 v2, v[2:3], off: live v[2:3] (its address), v[4:5] (the next
    // load's), v[0:1] (the store's address, computed at 0x1680 from v0/v1), s4, s5 (used at
    // 0x1680, 0x168c): 6 VGPRs, 2 SGPRs.
    assert_eq!(at(0x1670), (6, 2));
    // 0x1698 v_add_f32_e32 v2, v2, v3: live v2, v3 and the store address v[0:1]: 4.
    assert_eq!(at(0x1698), (4, 0));
    // 0x169c global_store_b32 v[0:1], v2, off: uses v0, v1, v2; defines nothing.
    assert_eq!(at(0x169c), (3, 0));
    // 0x16a4 s_endpgm: nothing live.
    assert_eq!(at(0x16a4), (0, 0));
    // The allocation (8 VGPRs, 18 SGPRs in the metadata) is the ceiling.
    assert_eq!(pr.vgpr_ceiling, Some(8));
    assert_eq!(pr.sgpr_ceiling, Some(18));
    assert_eq!(pr.max_vgprs, 6);
    assert!(pr.max_sgprs <= 18);
}

#[test]
fn shared_kernels_stay_within_their_allocation() {
    let Some(dir) = testdata::require_shared("traces") else {
        return;
    };
    for rel in [
        "gfx1100/gemm_run_0/program0_r_32_32_16_2.elf",
        "gfx1200/gemm_run_0/program0_r_32_32_16_2.elf",
        "gfx950/gemm_run_0/program0_r_32_32_16_2.elf",
    ] {
        let c = CodeObject::parse(&std::fs::read(dir.join(rel)).unwrap()).unwrap();
        let pr = kernel_code_pressure(&c, &c.kernels[0]);
        assert!(pr.max_vgprs > 0, "{rel}");
        // The compiler's own count (metadata .vgpr_count) bounds what is live at once.
        let used = c.kernels[0].vgpr_count.unwrap() as u32;
        assert!(pr.max_vgprs <= used, "{rel}: {} > {used}", pr.max_vgprs);
        assert!(pr.max_vgprs <= pr.vgpr_ceiling.unwrap());
        assert!(pr.max_sgprs <= pr.sgpr_ceiling.unwrap(), "{rel}");
    }
}

#[test]
fn special_registers_by_hand() {
    let Some(clang) = testdata::require_tool("clang-22") else {
        return;
    };
    let src = format!(
        "{}/tests/fixtures/kernels/select.c",
        env!("CARGO_MANIFEST_DIR")
    );
    // (mcpu, .sgpr_count): s0..s3 + VCC's pair = 6 on gfx1100; gfx950 adds FLAT_SCRATCH and
    // XNACK_MASK: 10.
    for (mcpu, sgpr_count) in [("gfx1100", 6), ("gfx950", 10)] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("select.hsaco");
        let st = std::process::Command::new(&clang)
            .args(["-target", "amdgcn-amd-amdhsa", "-nogpulib", "-O2"])
            .arg(format!("-mcpu={mcpu}"))
            .arg(&src)
            .arg("-o")
            .arg(&out)
            .status()
            .unwrap();
        assert!(st.success());
        let c = CodeObject::parse(&std::fs::read(&out).unwrap()).unwrap();
        let pr = kernel_code_pressure(&c, &c.kernels[0]);
        let row = |prefix: &str| {
            let r = pr
                .rows
                .iter()
                .find(|r| r.text.starts_with(prefix))
                .unwrap_or_else(|| panic!("{mcpu}: no {prefix}"));
            (r.vgprs, r.sgprs, r.specials())
        };
        // The code (both targets, gfx950 names in brackets):
        //   s_load_b128 [dwordx4] s[0:3], s[0:1]   v_lshlrev_b32 v0, 2, v0
        //   global_load_b32 [dword] v1, v0, s[2:3]  v_mul_f32 v2, K, v1   v_add_f32 v3, 2.0, v1
        //   v_cmp_lt_f32_e32 vcc_lo [vcc], 1.0, v1  v_cndmask_b32_e32 v1, v3, v2, vcc_lo [vcc]
        //   global_store_b32 [dword] v0, v1, s[0:1]  s_endpgm
        // The load: writes s0..s3, v0 and EXEC (read by the shift) live: 1 VGPR, 4 SGPRs.
        assert_eq!(row("s_load"), (1, 4, "EXEC".into()), "{mcpu}");
        // The multiply: v0, v1 live, writes v2; s0, s1 wait for the store: 3, 2.
        assert_eq!(row("v_mul_f32"), (3, 2, "EXEC".into()), "{mcpu}");
        // The compare writes VCC (its pair counts 2) with v0..v3, s0, s1 live: 4, 2 + 2.
        assert_eq!(row("v_cmp_lt_f32"), (4, 4, "VCC EXEC".into()), "{mcpu}");
        // The select reads VCC, v2, v3 and writes v1; v0, s0, s1 live: 4, 4.
        assert_eq!(row("v_cndmask_b32"), (4, 4, "VCC EXEC".into()), "{mcpu}");
        // The store: VCC dead, EXEC still read: 2, 2.
        assert_eq!(row("global_store"), (2, 2, "EXEC".into()), "{mcpu}");
        assert_eq!(row("s_endpgm"), (0, 0, String::new()), "{mcpu}");
        // The ceiling is the metadata's count, VCC included: the peak reaches 4 of it.
        assert_eq!(pr.sgpr_ceiling, Some(sgpr_count), "{mcpu}");
        assert_eq!(pr.max_sgprs, 4, "{mcpu}");
    }
}
