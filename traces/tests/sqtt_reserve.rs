//! The per-SE analysis reserves its wave and token lists from the blob's size (an estimate for
//! streams dense in waves and tokens). A blob that is mostly NOPs (a trace buffer padded or
//! stopped early) or an instruction-traced SE (few waves, many bytes of tokens) must not keep
//! that estimate: what it returns holds at most what growth by doubling would (the analysis
//! before the estimate), never a list sized by the blob.

use traces::sqtt::{analyze, BlobAnalysis};

fn shared() -> std::path::PathBuf {
    testdata::shared("")
}

/// Capacity within what doubling from empty could leave (twice the length, at least a few).
fn within_doubling<T>(what: &str, v: &[T], cap: usize) {
    assert!(
        cap <= (2 * v.len()).max(64),
        "{what}: capacity {cap} for {} elements",
        v.len()
    );
}

fn check(what: &str, a: &BlobAnalysis) {
    within_doubling(&format!("{what} waves"), &a.waves, a.waves.capacity());
    within_doubling(&format!("{what} tokens"), &a.tokens, a.tokens.capacity());
}

/// An instruction-traced RDNA3 SE (tokens from its first packets on) with 8 MiB of NOPs after
/// its data, and the same NOPs alone after the header: the lists stay near their lengths.
#[test]
fn blob_size_reservations_do_not_outlive_the_decode() {
    let dir = shared().join("traces/gfx1100/gemm_run_0");
    let elf = dir.join("program0_r_32_32_16_2.elf");
    let code = traces::isa::CodeObject::parse(&std::fs::read(&elf).unwrap()).unwrap();
    let mut found_tokens = false;
    for se in 0..6 {
        let path = dir.join(format!("kern0_se{se}.sqtt"));
        let blob = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let plain = analyze(&blob, None).unwrap();
        found_tokens |= !plain.tokens.is_empty();
        check(&format!("{} as captured", path.display()), &plain);
        let mut padded = blob.clone();
        padded.resize(blob.len() + (8 << 20), 0);
        let a = analyze(&padded, None).unwrap();
        // The NOPs change nothing decoded.
        assert_eq!(a.waves, plain.waves, "{}", path.display());
        assert_eq!(a.tokens.len(), plain.tokens.len(), "{}", path.display());
        check(&format!("{} + 8 MiB of NOPs", path.display()), &a);
        // The same through the pass that maps tokens to PCs as it analyses (`stats`, the app).
        let (m, map) = traces::pipeline::analyze_mapped(
            &padded,
            None,
            Default::default(),
            &code,
            false,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(m.waves, plain.waves, "{}", path.display());
        check(&format!("{} + 8 MiB of NOPs, mapped", path.display()), &m);
        within_doubling(
            &format!("{} + 8 MiB of NOPs, token PCs", path.display()),
            &map.token_pc,
            map.token_pc.capacity(),
        );
    }
    assert!(
        found_tokens,
        "no instruction-traced SE in {}",
        dir.display()
    );
}
