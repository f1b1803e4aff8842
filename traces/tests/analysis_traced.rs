//! `analysis::traced::run_traced_waves_each` (each traced SE mapped alone by
//! `traced_se_waves_each`, compact records, what `stats --json` prints) against `traced_waves`
//! of the full detailed analysis (`analyze_kernel_par`, which keeps every SE's `MappedInst`
//! list) on every shared real capture (gfx1100, gfx1200, gfx950): the same waves with the same
//! instructions, field for field.

use traces::analysis::{
    analyze_kernel_par, kernels_with_sqtt, traced::run_traced_waves_each, traced_waves, TracedWave,
};

/// Kernel `ki`'s traced waves, one SE at a time, by the walk `stats --json` prints
/// (`traced::run_traced_waves_each`).
fn per_se(p: &traces::model::Profile, ki: usize) -> Vec<TracedWave> {
    let mut out = Vec::new();
    run_traced_waves_each(p, ki, &mut |w| {
        out.push(w);
        true
    });
    out
}

#[test]
fn per_se_traced_waves_equal_the_full_analysis_on_every_capture() {
    let caps = testdata::shared_profiles();
    assert!(caps.len() >= 9, "shared captures missing: {caps:?}");
    let (mut waves, mut insts, mut cdna) = (0, 0, 0);
    for path in caps {
        let (_, p) = traces::open::open_path(&path).unwrap();
        for k in kernels_with_sqtt(&p) {
            let full = traced_waves(&analyze_kernel_par(&p, k, &|_, _| {}).unwrap());
            let got = per_se(&p, k);
            let at = format!("{} kernel {k}", path.display());
            assert_eq!(got.len(), full.len(), "{at}");
            for (g, f) in got.iter().zip(&full) {
                assert_eq!(
                    serde_json::to_string(g).unwrap(),
                    serde_json::to_string(f).unwrap(),
                    "{at} SE {} wave at {}",
                    f.se,
                    f.start
                );
                insts += f.instructions.len();
            }
            waves += full.len();
            if path.to_string_lossy().contains("gfx950") {
                cdna += full.len();
            }
        }
    }
    eprintln!("compared {waves} waves, {insts} instructions, {cdna} CDNA waves");
    // The comparison must have had something to compare, on RDNA and CDNA.
    assert!(
        waves >= 3 && insts >= 100,
        "{waves} waves, {insts} instructions"
    );
    assert!(cdna >= 1, "no traced CDNA wave");
}
