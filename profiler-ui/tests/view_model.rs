//! The SQTT view's compact model (`KernelView::analyze`: each SE reduced to its rows and its
//! traced waves' packed tokens as it is decoded, x computed from cycles with each SE's clock)
//! against the full analysis (`analyze_kernel_par`, pinned by the analysis tests)
//! on every shared real capture (gfx1100, gfx1200, gfx950): every wave in its row at the same
//! x and cycles, every token of a wave at the same x with the same PC, name and colour class,
//! the same instruction table, achieved occupancy, overview and x range.

use profiler_ui::data::{analyze_kernel_par, inst_stats, kernels_with_sqtt, occupancy, wave_insts};
use profiler_ui::layout::sqtt::{token_cat, RowKind};
use profiler_ui::views::sqtt::KernelView;

#[test]
fn the_compact_view_shows_what_the_full_analysis_holds() {
    let caps = testdata::shared_profiles();
    assert!(caps.len() >= 9, "shared captures missing: {caps:?}");
    let (mut kernels, mut waves_seen, mut tokens_seen) = (0, 0usize, 0usize);
    for path in caps {
        let (_, p) = traces::open::open_path(&path).unwrap();
        for k in kernels_with_sqtt(&p) {
            let at = format!("{} kernel {k}", path.display());
            let full = analyze_kernel_par(&p, k, &|_, _| {}).unwrap();
            let kv = KernelView::analyze(&p, k, &|_, _| {}, None).unwrap();
            assert_eq!(kv.waves, full.wave_count(), "{at}");
            assert_eq!(kv.x_range, full.x_range(), "{at}");
            assert_eq!(kv.data.unit, full.unit, "{at}");
            assert_eq!(kv.data.disasm, full.disasm, "{at}");
            assert_eq!(kv.stats.len(), inst_stats(&full).len(), "{at}");
            for (a, b) in kv.stats.iter().zip(inst_stats(&full)) {
                assert_eq!(a.pc, b.pc, "{at}");
                assert_eq!(
                    serde_json::to_string(a).unwrap(),
                    serde_json::to_string(&b).unwrap(),
                    "{at}"
                );
            }
            assert_eq!(kv.achieved, occupancy::achieved(&full), "{at}");
            let overview: Vec<_> = full
                .ses
                .iter()
                .map(|s| (s.se, profiler_ui::views::sqtt::occupancy(&s.wave_x, 2000)))
                .collect();
            assert_eq!(kv.occupancy, overview, "{at}");
            // Every wave once, in its slot's row, at the full analysis' x and cycles.
            let mut seen: Vec<Vec<bool>> = full
                .ses
                .iter()
                .map(|s| vec![false; s.analysis.waves.len()])
                .collect();
            for (ri, r) in kv.rows.rows.iter().enumerate() {
                let RowKind::Wave { se, cu, simd, slot } = r.kind else {
                    continue;
                };
                let fs = &full.ses[se];
                for (pos, &w) in r.waves.iter().enumerate() {
                    let fw = &fs.analysis.waves[w as usize];
                    assert_eq!((fw.cu, fw.simd, fw.wave), (cu, simd, slot), "{at}");
                    assert!(!std::mem::replace(&mut seen[se][w as usize], true));
                    let v = kv.wave_in_row(ri, pos).unwrap();
                    assert_eq!((v.start, v.end), (fw.start, fw.end), "{at}");
                    assert_eq!(v.x, fs.wave_x[w as usize], "{at}");
                    assert_eq!(v.tokens, fs.wave_tokens(w as usize).len(), "{at}");
                    assert_eq!(kv.wave(se, w), Some(v), "{at}");
                    // The wave list: the same instructions at the same x, cycles and PCs.
                    let want = wave_insts(&full, se, w as usize);
                    let got = kv.wave_insts(se, w);
                    assert_eq!(got.len(), want.len(), "{at}");
                    let clock = kv.rows.clock(se);
                    for (g, f) in got.iter().zip(&want) {
                        assert_eq!(
                            (g.index, g.cycle, g.gap, &g.name, g.pc, &g.disasm),
                            (f.index, f.cycle, f.gap, &f.name, f.pc, &f.disasm),
                            "{at}"
                        );
                        assert_eq!(clock.x(g.cycle), f.x, "{at}");
                        assert_eq!(g.x, f.x, "{at}");
                    }
                    // What a frame draws of it: its tokens' cycles and colour classes.
                    let toks = fs.wave_tokens(w as usize);
                    match kv.rows.wave_index(se, w) {
                        None => assert!(toks.is_empty(), "{at}"),
                        Some(i) => {
                            let traced = &kv.rows.traced[se];
                            let times: Vec<i64> = toks
                                .iter()
                                .map(|&t| fs.analysis.tokens[t as usize].time)
                                .collect();
                            assert_eq!(traced.times(i), &times[..], "{at}");
                            for (j, &t) in toks.iter().enumerate() {
                                let want = token_cat(&fs.analysis.tokens[t as usize]);
                                assert_eq!(traced.cat(i, j), Some(want), "{at}");
                            }
                        }
                    }
                    waves_seen += 1;
                    tokens_seen += want.len();
                }
            }
            assert!(seen.iter().flatten().all(|&s| s), "{at}: a wave in no row");
            kernels += 1;
        }
    }
    assert!(kernels >= 9, "{kernels} kernels with SQTT");
    // The comparison covered waves and instruction tokens.
    assert!(waves_seen > 0 && tokens_seen > 0);
}
