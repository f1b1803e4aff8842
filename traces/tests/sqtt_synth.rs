//! The big captures the scale bench and the memory tests are made of (`sqtt::synth::tile`: a
//! real SE stream tiled in time) are valid traces: whole 32-byte trace-buffer units, no decoder
//! warning, every repetition's waves found and ended.

#[test]
fn a_tiled_real_stream_reads_as_a_clean_trace() {
    let mut seen = 0;
    for arch in ["gfx1100", "gfx1200", "gfx950"] {
        let Some(dir) = testdata::require_shared(&format!("traces/{arch}/gemm_run_0")) else {
            return;
        };
        for se in 0..6 {
            let path = dir.join(format!("kern0_se{se}.sqtt"));
            let Ok(blob) = std::fs::read(&path) else {
                continue;
            };
            let one = traces::sqtt::analyze(&blob, None).unwrap();
            assert!(
                one.warnings.is_empty(),
                "{}: {:?}",
                path.display(),
                one.warnings
            );
            let mut out = Vec::new();
            // Not a multiple of the blob's size, so the last unit is padded.
            let (len, reps) = traces::sqtt::synth::tile(&blob, 100_003, &mut out).unwrap();
            let what = format!("{} tiled {reps} times", path.display());
            assert_eq!(len as usize, out.len(), "{what}");
            // gfx9 blobs carry an 8-byte header before their units.
            let header = if arch == "gfx950" { 8 } else { 0 };
            assert_eq!(
                (out.len() - header) % 32,
                0,
                "{what}: not whole 32-byte units"
            );
            assert!(reps > 1, "{what}");
            let a = traces::sqtt::analyze(&out, None).unwrap();
            assert!(a.warnings.is_empty(), "{what}: {:?}", a.warnings);
            assert_eq!(a.waves.len(), one.waves.len() * reps as usize, "{what}");
            assert!(
                a.waves.windows(2).all(|w| w[0].start <= w[1].start),
                "{what}: wave starts out of time order"
            );
            seen += 1;
        }
    }
    assert!(seen > 0, "no SE blobs");
}
