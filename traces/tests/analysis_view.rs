//! `analyze_kernel_view` (what the app's SQTT view analyses) against `analyze_kernel_par` (the
//! full analysis) on every shared real capture (gfx1100, gfx1200, gfx950): the same waves, the
//! same tokens at the same x, the same PCs and disassembly; only the list of mapped
//! instructions is left out.

use traces::analysis::{analyze_kernel_par, analyze_kernel_view, kernels_with_sqtt};

#[test]
fn the_view_sees_what_the_full_analysis_sees_without_the_mapped_list() {
    let caps = testdata::shared_profiles();
    assert!(caps.len() >= 9, "shared captures missing: {caps:?}");
    let mut kernels = 0;
    let mut mapped_full = 0;
    for path in caps {
        let (_, p) = traces::open::open_path(&path).unwrap();
        for k in kernels_with_sqtt(&p) {
            let full = analyze_kernel_par(&p, k, &|_, _| {}).unwrap();
            let view = analyze_kernel_view(&p, k, &|_, _| {}).unwrap();
            let at = format!("{} kernel {k}", path.display());
            assert_eq!(full.unit, view.unit, "{at}");
            assert_eq!(full.kernel_len, view.kernel_len, "{at}");
            assert_eq!(full.disasm, view.disasm, "{at}");
            assert_eq!(full.ses.len(), view.ses.len(), "{at}");
            for (f, v) in full.ses.iter().zip(&view.ses) {
                let at = format!("{at} SE {}", f.se);
                assert_eq!(f.analysis.waves, v.analysis.waves, "{at}");
                assert_eq!(f.analysis.tokens, v.analysis.tokens, "{at}");
                assert_eq!(f.wave_x, v.wave_x, "{at}");
                assert_eq!(f.token_x, v.token_x, "{at}");
                assert_eq!(f.token_order, v.token_order, "{at}");
                assert_eq!(f.token_start, v.token_start, "{at}");
                assert_eq!(f.token_pc, v.token_pc, "{at}");
                assert_eq!(f.amd_pc, v.amd_pc, "{at}");
                assert_eq!(f.error, v.error, "{at}");
                assert!(v.mapped.is_empty(), "{at}: the view keeps no mapped list");
                mapped_full += f.mapped.len();
            }
            kernels += 1;
        }
    }
    assert!(kernels >= 9, "{kernels} kernels with SQTT");
    // The full analysis did map instructions, so the comparison covered PCs and x of tokens.
    assert!(mapped_full > 0);
}
