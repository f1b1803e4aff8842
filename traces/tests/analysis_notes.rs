//! What an SE's results do not cover is said (`SeTrace::notes`): where instruction mapping
//! stopped early and the decoder's warnings, whichever analysis made them (the full kernel
//! analysis, the folded one behind `wavescope stats`, the app's view), and the saved analysis
//! index keeps them.

use traces::analysis::{analyze_kernel_par, analyze_kernel_view, kernel_table};
use traces::model::Profile;

/// The real gfx1100 gemm capture with its first instruction-traced SE's stream re-framed
/// without the first WAVESTART of the traced unit (CU 0, SA 0, SIMD 0): that wave's instructions
/// and its WAVEEND come for a slot that is not live, where the mapping stops.
fn damaged() -> Option<Profile> {
    use traces::sqtt::{Kind, Role};
    let gemm = testdata::require_shared("traces/gfx1100/gemm_run_0/profile.pkl")?;
    let (_, mut p) = traces::open::open_path(&gemm).expect("gemm capture");
    let i = p.sqtt.iter().position(|s| s.itrace).expect("an itraced SE");
    let blob = traces::sqtt::synth::without_first(p.blob(p.sqtt[i].blob), |pk| {
        pk.ty.kind == Kind::WaveStart
            && pk.cu() == 0
            && pk.get(Role::Sa).unwrap_or(0) == 0
            && pk.get(Role::Simd).unwrap_or(0) == 0
    })
    .expect("a WAVESTART of the traced unit");
    p.sqtt[i].blob = p.add_blob(traces::model::Blob::from_vec(blob));
    Some(p)
}

fn mapping_notes(notes: &[(u32, String)]) -> Vec<&(u32, String)> {
    notes
        .iter()
        .filter(|(_, n)| n.contains("instruction mapping stopped at nibble"))
        .collect()
}

#[test]
fn a_mapping_that_stops_early_is_said_by_every_analysis() {
    let Some(p) = damaged() else {
        return;
    };
    let notes_of = |k: &traces::analysis::KernelSqtt| -> Vec<(u32, String)> {
        k.ses
            .iter()
            .flat_map(|s| s.notes().into_iter().map(move |n| (s.se, n)))
            .collect()
    };
    let full = notes_of(&analyze_kernel_par(&p, 0, &|_, _| {}).expect("kernel 0"));
    let stopped = mapping_notes(&full);
    assert!(
        !stopped.is_empty(),
        "the damaged stream's mapping stopped nowhere: {full:?}"
    );
    // Only instruction-traced SEs are mapped.
    for (se, _) in &stopped {
        assert!(*se <= 1, "SE {se} is not instruction-traced");
    }
    let folded = notes_of(&kernel_table(&p, 0).expect("kernel 0").kernel);
    assert_eq!(folded, full, "stats' folded analysis says otherwise");
    let view = notes_of(&analyze_kernel_view(&p, 0, &|_, _| {}).expect("kernel 0"));
    assert_eq!(view, full, "the app's view analysis says otherwise");
}

#[test]
fn the_real_captures_have_nothing_to_say() {
    for path in testdata::shared_profiles() {
        let (_, p) = traces::open::open_path(&path).expect("a shared capture");
        for ki in 0..p.kernels.len() {
            let Some(t) = kernel_table(&p, ki) else {
                continue;
            };
            for s in &t.kernel.ses {
                assert!(
                    s.notes().is_empty(),
                    "{} kernel {ki} SE {}: {:?}",
                    path.display(),
                    s.se,
                    s.notes()
                );
            }
        }
    }
}

/// The saved analysis index keeps each SE's notes (the streamed writer `wavescope index` uses,
/// whose SEs are folded as they are decoded), and an index without them reads as before.
#[test]
fn the_index_keeps_the_notes() {
    let Some(p) = damaged() else {
        return;
    };
    let k = analyze_kernel_par(&p, 0, &|_, _| {}).expect("kernel 0");
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("damaged.wst");
    traces::wst::write_file_index_streamed(&p, &path, &|_, _| {}).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let idx = traces::wst::read_index(&bytes).unwrap().expect("an index");
    let e = idx.kernel(0).expect("kernel 0 indexed").unwrap();
    let ses = idx.ses(&e).unwrap();
    assert_eq!(ses.len(), k.ses.len());
    let mut noted = 0;
    for (s, t) in ses.iter().zip(&k.ses) {
        let want = t.notes();
        let got: Vec<&str> = s.note.map(|n| n.lines().collect()).unwrap_or_default();
        assert_eq!(got, want, "SE {}", t.se);
        assert!(s.error.is_none(), "SE {}: a note is not an error", t.se);
        noted += usize::from(!want.is_empty());
    }
    assert!(noted > 0, "no SE with a note");
}
