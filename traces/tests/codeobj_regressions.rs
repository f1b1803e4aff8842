//! The code-object reader on the hostile inputs kept in `fuzz/regressions/codeobj/`: the
//! offsets that overflowed the runtime's former ELF reader or that it accepted wrongly (`*.elf`),
//! the fuzzing's own hostile cases, and tinygrad's minimal ELF. A value or a clear error, never a
//! panic; the ones that describe an unloadable kernel are errors.

use std::path::{Path, PathBuf};

use traces::isa::codeobj::{self, MAX_LOAD_IMAGE};
use traces::isa::{CodeObject, CodeObjectError};
use traces::GfxTarget;

fn inputs() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions/codeobj");
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "elf"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn regression_inputs_never_panic() {
    let all = inputs();
    assert_eq!(all.len(), 8, "the README lists eight inputs");
    for (name, b) in &all {
        // Every prefix too: the fuzz target's view of a truncated download.
        for n in (0..=b.len()).step_by(61).chain([b.len()]) {
            let r = std::panic::catch_unwind(|| {
                let _ = CodeObject::parse(&b[..n]);
                let _ = CodeObject::load_image(&b[..n]);
            });
            assert!(r.is_ok(), "{name}[..{n}] panicked");
        }
    }
}

#[test]
fn entry_outside_text_is_an_error() {
    let b = std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz/regressions/codeobj/entry_outside_image.elf"),
    )
    .unwrap();
    let e = CodeObject::parse(&b).unwrap_err();
    assert!(
        matches!(
            e,
            CodeObjectError::EntryOutside {
                entry: 0x10_1600,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn a_gib_image_from_a_small_file_is_an_error() {
    let b = std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions/codeobj/image_1gib.elf"),
    )
    .unwrap();
    let e = CodeObject::load_image(&b).unwrap_err();
    assert!(
        matches!(&e, CodeObjectError::ImageTooLarge { section, max, .. } if section == ".text" && *max == MAX_LOAD_IMAGE),
        "{e}"
    );
}

/// The unmodified object the inputs were made from loads as before: `.rodata` at 0x5c0 and
/// `.text` at 0x1600 (llvm-readelf), copied from file offsets 0x5c0 and 0x600.
#[test]
fn the_base_object_loads() {
    let b = std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../runtime/tests/data/gfx1100_E_3.elf"),
    )
    .unwrap();
    let img = CodeObject::load_image(&b).unwrap();
    assert_eq!(img.len(), 0x1800);
    assert_eq!(&img[0x5C0..0x600], &b[0x5C0..0x600]);
    assert_eq!(&img[0x1600..0x1800], &b[0x600..0x800]);
    assert!(img[0x600..0x1600].iter().all(|&x| x == 0));
}

fn regressions() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions/codeobj");
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_none_or(|e| e != "md" && e != "py"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn hostile_inputs_give_clear_errors() {
    let cases = regressions();
    assert!(cases.len() >= 12, "regression inputs missing");
    for (name, bytes) in &cases {
        let _ = codeobj::image_len(bytes);
        // The loader's view links relocatable objects first (`rel_*` inputs).
        let _ = CodeObject::parse_loaded(bytes);
        let _ = CodeObject::load_image(bytes);
        for t in [None, Some(GfxTarget::new(11, 0, 0))] {
            match CodeObject::parse_with_target(bytes, t) {
                Ok(c) => {
                    for k in &c.kernels {
                        let _ = c.kernel_code(k);
                    }
                }
                Err(e) => assert!(!e.to_string().is_empty(), "{name}"),
            }
        }
    }
    let get = |n: &str| &cases.iter().find(|(c, _)| c == n).unwrap().1;
    let err = |n: &str| CodeObject::parse_with_target(get(n), Some(GfxTarget::new(11, 0, 0)));
    assert!(matches!(
        err("truncated_header"),
        Err(CodeObjectError::Truncated { .. })
    ));
    assert!(matches!(
        err("shnum_65535"),
        Err(CodeObjectError::Truncated { .. })
    ));
    assert!(matches!(
        err("shentsize0_huge_shnum"),
        Err(CodeObjectError::Truncated { .. })
    ));
    assert!(matches!(
        err("shoff_near_u64_max"),
        Err(CodeObjectError::Truncated { .. })
    ));
    assert!(matches!(
        err("sh_size_overflow"),
        Err(CodeObjectError::Truncated { .. })
    ));
    assert!(matches!(err("big_endian"), Err(CodeObjectError::BigEndian)));
    assert!(matches!(err("elf32"), Err(CodeObjectError::NotElf64)));
}

#[test]
fn tinygrads_minimal_elf_needs_and_names_its_assumptions() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/traces/gfx1100/sync_run_0/program0_custom_lds_sync.elf");
    if !path.is_file() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{} missing",
            path.display()
        );
        return;
    }
    let bytes = std::fs::read(&path).unwrap();
    // No target in the file: the caller must give one.
    assert!(matches!(
        CodeObject::parse(&bytes),
        Err(CodeObjectError::NoTarget)
    ));
    let c = CodeObject::parse_with_target(&bytes, Some(GfxTarget::new(11, 0, 0))).unwrap();
    assert_eq!(c.target, GfxTarget::new(11, 0, 0));
    assert_eq!(c.text_addr, 0x100);
    assert_eq!(c.text.len(), 784);
    assert_eq!(c.kernels.len(), 1);
    assert_eq!(c.kernels[0].entry, 0x100);
    assert_eq!(c.kernels[0].descriptor_addr, 0x440);
    for w in [
        "no EI_DATA: assumed little-endian",
        "no e_machine: assumed AMDGPU",
        "target taken from the capture: gfx1100",
        "e_shentsize 0: assumed 64-byte section headers",
    ] {
        assert!(c.warnings.iter().any(|x| x == w), "{w}: {:?}", c.warnings);
    }
    // An ordinary code object needs no assumption.
    let gemm = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/traces/gfx1100/gemm_run_0/program0_r_32_32_16_2.elf");
    if let Ok(b) = std::fs::read(gemm) {
        assert_eq!(
            CodeObject::parse(&b).unwrap().warnings,
            Vec::<String>::new()
        );
    }
}
