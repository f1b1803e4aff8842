//! The inputs of `fuzz/regressions/codeobj` (offsets that overflowed the runtime's former ELF
//! reader, or that it accepted wrongly) through the one code-object reader: never a panic, and
//! the ones that describe an unloadable kernel are errors.

use std::path::PathBuf;

use traces::isa::codeobj::MAX_LOAD_IMAGE;
use traces::isa::{CodeObject, CodeObjectError};

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
