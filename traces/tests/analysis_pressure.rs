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
