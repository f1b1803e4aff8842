//! What an SE's results do not cover is said (`SeTrace::notes`): where instruction mapping
//! lost track and the decoder's warnings, whichever analysis made them (the full kernel
//! analysis, the folded one behind `wavescope stats`, the app's view), and the saved analysis
//! index keeps them. The mapping goes on past what it cannot follow: only the lost wave's
//! instructions are missing.

use traces::analysis::{analyze_kernel_par, analyze_kernel_view, kernel_table};
use traces::model::Profile;

/// The real gfx1100 gemm capture, and the same with its first instruction-traced SE's stream
/// re-framed without the first WAVESTART of the traced unit (CU 0, SA 0, SIMD 0): that wave's
/// instructions and its WAVEEND come for a slot that is not live. Also the SE and the nibble
/// offset of the dropped WAVESTART.
fn damaged_with_source() -> Option<(Profile, Profile, u32, u64)> {
    use traces::sqtt::{Kind, Packet, Role};
    let gemm = testdata::require_shared("traces/gfx1100/gemm_run_0/profile.pkl")?;
    let (_, orig) = traces::open::open_path(&gemm).expect("gemm capture");
    let mut p = orig.clone();
    let i = p.sqtt.iter().position(|s| s.itrace).expect("an itraced SE");
    let traced_start = |pk: &Packet| {
        pk.ty.kind == Kind::WaveStart
            && pk.cu() == 0
            && pk.get(Role::Sa).unwrap_or(0) == 0
            && pk.get(Role::Simd).unwrap_or(0) == 0
    };
    let src = p.blob(p.sqtt[i].blob);
    let offset = traces::sqtt::Decoder::new(src, Default::default())
        .find(|pk| traced_start(pk))
        .expect("a WAVESTART of the traced unit")
        .offset;
    let blob = traces::sqtt::synth::without_first(src, traced_start).unwrap();
    p.sqtt[i].blob = p.add_blob(traces::model::Blob::from_vec(blob));
    let se = p.sqtt[i].se;
    Some((orig, p, se, offset))
}

fn damaged() -> Option<Profile> {
    damaged_with_source().map(|(_, p, _, _)| p)
}

fn mapping_notes(notes: &[(u32, String)]) -> Vec<&(u32, String)> {
    notes
        .iter()
        .filter(|(_, n)| n.contains("instruction mapping lost track at nibble"))
        .collect()
}

#[test]
fn a_mapping_that_loses_track_is_said_by_every_analysis() {
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
    let lost = mapping_notes(&full);
    assert!(
        !lost.is_empty(),
        "the damaged stream's mapping lost track nowhere: {full:?}"
    );
    // Only instruction-traced SEs are mapped.
    for (se, _) in &lost {
        assert!(*se <= 1, "SE {se} is not instruction-traced");
    }
    let folded = notes_of(&kernel_table(&p, 0).expect("kernel 0").kernel);
    assert_eq!(folded, full, "stats' folded analysis says otherwise");
    let view = notes_of(&analyze_kernel_view(&p, 0, &|_, _| {}).expect("kernel 0"));
    assert_eq!(view, full, "the view analysis says otherwise");
    // The app's: each SE folded into the view's columns as it is decoded, then dropped.
    let (app, _, _) = traces::analysis::analyze_kernel_view_fold(&p, 0, &|_, _| {}, &|_, _| ())
        .expect("kernel 0");
    assert_eq!(
        notes_of(&app),
        full,
        "the app's folded view analysis says otherwise"
    );
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

/// The walk drops the wave it cannot follow and maps the others: the damaged capture's table
/// counts every token of the original but the dropped wave's.
#[test]
fn the_mapping_goes_on_past_a_wave_it_cannot_follow() {
    let Some((orig, p, se, offset)) = damaged_with_source() else {
        return;
    };
    let total = |p: &Profile| -> u64 {
        let t = kernel_table(p, 0).expect("kernel 0");
        t.instructions
            .iter()
            .filter(|r| r.pc.is_some())
            .map(|r| r.count)
            .sum()
    };
    let full = analyze_kernel_par(&orig, 0, &|_, _| {}).expect("kernel 0");
    let st = full
        .ses
        .iter()
        .find(|s| s.se == se)
        .expect("the damaged SE");
    let w = st
        .analysis
        .waves
        .iter()
        .position(|w| w.start_offset == offset)
        .expect("the dropped wave");
    let dropped = st
        .wave_tokens(w)
        .iter()
        .filter(|&&t| {
            st.token_pc
                .get(t as usize)
                .is_some_and(|&pc| pc != u64::MAX)
        })
        .count() as u64;
    assert!(dropped > 0, "the dropped wave had no mapped tokens");
    let (before, after) = (total(&orig), total(&p));
    assert_eq!(
        after,
        before - dropped,
        "mapped tokens: {before} in the capture, {after} with wave {w} of SE {se} dropped \
         ({dropped} tokens)"
    );
}
