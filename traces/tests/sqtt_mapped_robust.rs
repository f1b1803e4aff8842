//! The per-SE pass that maps tokens to PCs while it analyses (`pipeline::analyze_mapped`: the
//! places table, op table and walk flags of the fast per-SE pass) on damaged real
//! instruction-traced blobs (bytes flipped, chunks repeated or cut: a WAVESTART while live,
//! waves that never end, tokens without a live wave, truncation), with the program's code
//! object: it never panics, and its analysis is the plain analyzer's (`sqtt::analyze`), with
//! one PC slot per token.

use proptest::prelude::*;
use traces::isa::CodeObject;
use traces::sqtt::{analyze, AnalyzeOptions};

/// (blob, code object) of the instruction-traced SEs of the RDNA3 and RDNA4 gemm captures.
fn sources() -> &'static [(Vec<u8>, CodeObject)] {
    static S: std::sync::OnceLock<Vec<(Vec<u8>, CodeObject)>> = std::sync::OnceLock::new();
    S.get_or_init(|| {
        let mut out = Vec::new();
        for arch in ["gfx1100", "gfx1200"] {
            let dir = testdata::shared("")
                .join("traces")
                .join(arch)
                .join("gemm_run_0");
            let elf = dir.join("program0_r_32_32_16_2.elf");
            let elf = std::fs::read(&elf).unwrap_or_else(|e| panic!("{}: {e}", elf.display()));
            for se in 0..2 {
                let path = dir.join(format!("kern0_se{se}.sqtt"));
                let blob =
                    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let a = analyze(&blob, None).unwrap();
                assert!(!a.tokens.is_empty(), "{}: no tokens", path.display());
                out.push((blob, CodeObject::parse(&elf).unwrap()));
            }
        }
        out
    })
}

#[derive(Debug, Clone)]
enum Damage {
    Flip(usize, u8),
    Repeat(usize, usize),
    Cut(usize, usize),
    Truncate(usize),
}

fn apply(blob: &[u8], damage: &[Damage]) -> Vec<u8> {
    let mut b = blob.to_vec();
    for d in damage {
        // Keep the layout header: a stream without one is refused before any analysis.
        let n = b.len().max(17) - 16;
        let at = |i: usize| 16 + i % n;
        match *d {
            Damage::Flip(i, bit) => {
                let i = at(i).min(b.len() - 1);
                b[i] ^= 1 << (bit % 8);
            }
            Damage::Repeat(i, len) => {
                let i = at(i).min(b.len());
                let j = (i + len).min(b.len());
                let chunk = b[i..j].to_vec();
                b.splice(j..j, chunk);
            }
            Damage::Cut(i, len) => {
                let i = at(i).min(b.len());
                let j = (i + len).min(b.len());
                b.drain(i..j);
            }
            Damage::Truncate(i) => b.truncate(at(i)),
        }
    }
    b
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Damage::Flip(i, b)),
        (any::<usize>(), 1..300usize).prop_map(|(i, l)| Damage::Repeat(i, l)),
        (any::<usize>(), 1..300usize).prop_map(|(i, l)| Damage::Cut(i, l)),
        any::<usize>().prop_map(Damage::Truncate),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn damaged_itraced_blobs_map_without_panic_and_analyse_as_the_analyzer(
        which in 0..4usize,
        damage in proptest::collection::vec(damage(), 1..6),
    ) {
        let (blob, code) = &sources()[which];
        let b = apply(blob, &damage);
        let plain = analyze(&b, None);
        let mapped = traces::pipeline::analyze_mapped(
            &b, None, AnalyzeOptions::default(), code, true, &mut |_| {});
        match (plain, mapped) {
            (Ok(a), Ok((m, map))) => {
                prop_assert_eq!(
                    serde_json::to_value(&a).unwrap(),
                    serde_json::to_value(&m).unwrap()
                );
                prop_assert_eq!(map.token_pc.len().max(m.tokens.len()), m.tokens.len());
            }
            (Err(a), Err(m)) => prop_assert_eq!(a.to_string(), m.to_string()),
            (a, m) => prop_assert!(false, "analyze {:?} vs analyze_mapped {:?}",
                a.map(|_| ()), m.map(|_| ())),
        }
    }
}
