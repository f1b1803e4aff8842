//! The code-object reader on the hostile inputs kept in `fuzz/regressions/codeobj/` (and on
//! tinygrad's minimal ELF): a value or a clear error, never a panic.

use std::path::Path;
use traces::isa::{codeobj, CodeObject, CodeObjectError};
use traces::GfxTarget;

fn regressions() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions/codeobj");
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_none_or(|e| e != "md"))
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
