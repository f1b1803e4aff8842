//! The diff engine (`traces::diff`): kernel matching, instruction alignment on the fixture pair
//! that differs by one instruction, speed on large kernels, and diffs of the shared real
//! captures (a capture against itself: zero deltas; across architectures: by kernel only).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use traces::diff::{
    align_instructions, diff_profiles, match_kernels, DiffOptions, InstMatch, InstStatus,
    KernelCode, KernelKey, KernelMatch,
};
use traces::isa::CodeObject;

/// (A index, B index) of one aligned row.
type Pair = (Option<usize>, Option<usize>);

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/kernels/emu")
}

/// The shared captures; missing fails under CI (see `testdata`).
fn shared_traces() -> Option<PathBuf> {
    testdata::require_shared("traces")
}

fn code(name: &str) -> KernelCode {
    let bytes = std::fs::read(fixtures().join(name)).unwrap();
    let co = CodeObject::parse(&bytes).unwrap();
    KernelCode::from_code_object(&co, "edited").expect("kernel `edited`")
}

/// The instruction lines of an `llvm-objdump -d` listing (text before the `//` comment).
fn objdump_insts(name: &str) -> Vec<String> {
    std::fs::read_to_string(fixtures().join(name))
        .unwrap()
        .lines()
        .filter(|l| l.starts_with('\t') && l.contains("//"))
        .map(|l| l.split("//").next().unwrap().trim().to_string())
        .collect()
}

#[test]
fn fixture_pair_edited_by_one_instruction_aligns() {
    let a = code("diff_a.hsaco");
    let b = code("diff_b.hsaco");
    assert_ne!(a.hash, b.hash, "the two builds must differ");
    // What changed, independently of our decoder: lines of llvm-objdump's listing of A that are
    // not in B's and vice versa.
    let la = objdump_insts("diff_a.s");
    let lb = objdump_insts("diff_b.s");
    assert_eq!(la.len(), a.insts.len());
    let only_a: Vec<&String> = la.iter().filter(|l| !lb.contains(l)).collect();
    let only_b: Vec<&String> = lb.iter().filter(|l| !la.contains(l)).collect();
    assert_eq!(
        (only_a.len(), only_b.len()),
        (1, 1),
        "{only_a:?} {only_b:?}"
    );

    let ta: Vec<(&str, &str)> = a
        .insts
        .iter()
        .map(|(_, t, m)| (t.as_str(), m.as_str()))
        .collect();
    let tb: Vec<(&str, &str)> = b
        .insts
        .iter()
        .map(|(_, t, m)| (t.as_str(), m.as_str()))
        .collect();
    let rows = align_instructions(&ta, &tb);
    let mut by_status: HashMap<InstStatus, Vec<Pair>> = HashMap::new();
    for &(x, y, s) in &rows {
        by_status.entry(s).or_default().push((x, y));
    }
    let same = &by_status[&InstStatus::Same];
    assert_eq!(
        same.len(),
        a.insts.len() - 1,
        "every unchanged instruction matched"
    );
    for &(x, y) in same {
        let (x, y) = (x.unwrap(), y.unwrap());
        assert_eq!(a.insts[x].1, b.insts[y].1);
        // Same-length edit: unchanged instructions keep their offsets.
        assert_eq!(a.insts[x].0 - a.entry, b.insts[y].0 - b.entry);
    }
    let removed = &by_status[&InstStatus::Removed];
    let added = &by_status[&InstStatus::Added];
    assert_eq!(removed.len(), 1);
    assert_eq!(added.len(), 1);
    assert!(!by_status.contains_key(&InstStatus::Changed));
    assert_eq!(&a.insts[removed[0].0.unwrap()].1, only_a[0]);
    assert_eq!(&b.insts[added[0].1.unwrap()].1, only_b[0]);
}

#[test]
fn an_inserted_instruction_shifts_nothing_else() {
    let a = code("diff_a.hsaco");
    let ta: Vec<(&str, &str)> = a
        .insts
        .iter()
        .map(|(_, t, m)| (t.as_str(), m.as_str()))
        .collect();
    // B = A with one instruction inserted before the branch (which then jumps one further: its
    // text differs, but it is the same branch) and one operand edited later on.
    let mut tb = ta.clone();
    let br = ta
        .iter()
        .position(|(_, m)| m.starts_with("s_cbranch"))
        .unwrap();
    tb.insert(br, ("s_nop 0", "s_nop"));
    tb[br + 1] = ("s_cbranch_execz 44", ta[br].1);
    let last_load = ta
        .iter()
        .rposition(|(_, m)| *m == "global_load_b32")
        .unwrap();
    tb[last_load + 1] = ("global_load_b32 v9, v[4:5], off", "global_load_b32");
    let rows = align_instructions(&ta, &tb);
    let count = |s| rows.iter().filter(|r| r.2 == s).count();
    assert_eq!(count(InstStatus::Added), 1);
    assert_eq!(count(InstStatus::Removed), 0);
    assert_eq!(count(InstStatus::Changed), 1);
    assert_eq!(count(InstStatus::Same), ta.len() - 1);
    assert!(rows.contains(&(Some(br), Some(br + 1), InstStatus::Same)));
    assert!(rows.contains(&(Some(last_load), Some(last_load + 1), InstStatus::Changed)));
    assert!(rows.contains(&(None, Some(br), InstStatus::Added)));
}

#[test]
fn alignment_of_large_kernels_is_fast() {
    // 40k instructions from a small vocabulary (hard case: many equal items), 1% edits.
    let vocab: Vec<String> = (0..64)
        .map(|i| format!("v_op{i} v{i}, v{}", i + 1))
        .collect();
    let mut x = 12345u32;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    let a: Vec<usize> = (0..40_000).map(|_| rnd() as usize % vocab.len()).collect();
    let mut b = Vec::new();
    let mut edits = 0;
    for &i in &a {
        match rnd() % 200 {
            0 => edits += 1,
            1 => {
                b.push(rnd() as usize % vocab.len());
                b.push(i);
                edits += 1;
            }
            _ => b.push(i),
        }
    }
    let ta: Vec<(&str, &str)> = a.iter().map(|&i| (vocab[i].as_str(), "v_op")).collect();
    let tb: Vec<(&str, &str)> = b.iter().map(|&i| (vocab[i].as_str(), "v_op")).collect();
    let t = Instant::now();
    let rows = align_instructions(&ta, &tb);
    let dt = t.elapsed();
    let same = rows.iter().filter(|r| r.2 == InstStatus::Same).count();
    assert!(same >= a.len() - edits, "{same} < {} - {edits}", a.len());
    assert!(
        dt.as_secs_f64() < 2.0,
        "aligning 40k instructions took {dt:?}"
    );
    // Two unrelated 5k sequences still finish.
    let c: Vec<(&str, &str)> = (0..5000).map(|i| (vocab[i % 64].as_str(), "x")).collect();
    let d: Vec<(&str, &str)> = (0..5000)
        .map(|_| (vocab[rnd() as usize % 64].as_str(), "x"))
        .collect();
    let t = Instant::now();
    let rows = align_instructions(&c, &d);
    assert_eq!(
        rows.iter().filter(|r| r.0.is_some()).count(),
        c.len(),
        "every A instruction appears once"
    );
    assert!(t.elapsed().as_secs_f64() < 5.0, "{:?}", t.elapsed());
}

#[test]
fn kernels_match_by_code_then_name_then_order() {
    let k = |n: &str, h: Option<&str>| KernelKey {
        name: n.into(),
        hash: h.map(Into::into),
    };
    let a = [
        k("x", Some("1")),
        k("y", Some("2")),
        k("x", Some("1")),
        k("w", None),
    ];
    let b = [
        k("x", Some("9")),
        k("x", Some("1")),
        k("z", Some("3")),
        k("w", None),
    ];
    let m = match_kernels(&a, &b);
    assert_eq!(
        m,
        vec![
            (Some(0), Some(1), KernelMatch::Code),
            (Some(1), None, KernelMatch::Removed),
            (Some(2), Some(0), KernelMatch::Name),
            (Some(3), Some(3), KernelMatch::Name),
            (None, Some(2), KernelMatch::Added),
        ]
    );
}

#[test]
fn a_real_capture_against_itself_has_zero_deltas() {
    let Some(base) = shared_traces() else {
        return;
    };
    let mut checked = 0;
    for case in [
        "gfx1100/gemm_run_0",
        "gfx1200/plus_run_0",
        "gfx950/plus_run_0",
    ] {
        let path = base.join(case).join("profile.pkl");
        let (_, p) = traces::open::open_path(&path).unwrap();
        let d = diff_profiles(&p, "a", &p, "b", &DiffOptions::default());
        assert!(!d.cross_arch);
        assert_eq!(d.kernels.len(), p.kernels.len());
        let mut executed = 0;
        for k in &d.kernels {
            assert_eq!(k.matched_by, KernelMatch::Code, "{case} {}", k.name);
            if let Some(r) = k.time_ratio {
                assert_eq!(r, 1.0);
            }
            let (a, b) = (k.a.as_ref().unwrap(), k.b.as_ref().unwrap());
            assert_eq!(a.waves, b.waves);
            assert_eq!(a.executed_instructions, b.executed_instructions);
            if a.sqtt && a.executed_instructions > 0 {
                assert_eq!(k.instruction_match, InstMatch::Pc, "{case} {}", k.name);
            }
            for r in &k.instructions {
                assert_eq!(r.status, InstStatus::Same, "{case} {r:?}");
                assert_eq!(r.a, r.b);
                assert_eq!(r.delta, Default::default(), "{case} {r:?}");
                executed += r.a.as_ref().unwrap().count;
            }
            assert_eq!(k.summary.same, k.instructions.len());
        }
        let rows: usize = d.kernels.iter().map(|k| k.instructions.len()).sum();
        assert!(rows > 0, "{case}: no instruction compared");
        // gfx950's instruction tokens are not mapped to PCs yet; the RDNA captures' are.
        if !case.starts_with("gfx950") {
            assert!(executed > 0, "{case}: no executed instruction compared");
        }
        checked += 1;
    }
    assert_eq!(checked, 3);
}

#[test]
fn across_architectures_kernels_compare_by_time_only() {
    let Some(base) = shared_traces() else {
        return;
    };
    let (_, a) = traces::open::open_path(&base.join("gfx1100/plus_run_0/profile.pkl")).unwrap();
    let (_, b) = traces::open::open_path(&base.join("gfx1200/plus_run_0/profile.pkl")).unwrap();
    let d = diff_profiles(&a, "a", &b, "b", &DiffOptions::default());
    assert!(d.cross_arch);
    assert_eq!(d.a.target.as_deref(), Some("gfx1100"));
    assert_eq!(d.b.target.as_deref(), Some("gfx1201"));
    let e3 = d
        .kernels
        .iter()
        .find(|k| k.a.is_some() && k.b.is_some() && k.name.starts_with('E'))
        .expect("the plus kernel is in both");
    assert_eq!(
        e3.matched_by,
        KernelMatch::Name,
        "different ISA, different code"
    );
    assert_eq!(e3.instruction_match, InstMatch::None);
    assert!(e3.instructions.is_empty());
    let (ta, tb) = (
        e3.a.as_ref().unwrap().gpu_time_us.unwrap(),
        e3.b.as_ref().unwrap().gpu_time_us.unwrap(),
    );
    assert!((e3.time_ratio.unwrap() - tb / ta).abs() < 1e-12);
}
