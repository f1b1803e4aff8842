//! Bad input gives errors, never panics.

use traces::isa::{self, CodeObject, CodeObjectError, IsaError};
use traces::GfxTarget;

fn fixture() -> Vec<u8> {
    std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/kernels/gfx1100/vadd.elf"
    ))
    .unwrap()
}

#[test]
fn truncated_elf_is_an_error_at_every_length() {
    let b = fixture();
    assert!(CodeObject::parse(&b).is_ok());
    for n in (0..b.len()).step_by(7) {
        let _ = CodeObject::parse(&b[..n]); // must not panic
    }
    assert_eq!(
        CodeObject::parse(&b[..3]).unwrap_err(),
        CodeObjectError::NotElf
    );
}

#[test]
fn non_amdgpu_elf_is_rejected() {
    let mut b = fixture();
    b[0x12] = 62; // EM_X86_64
    assert_eq!(
        CodeObject::parse(&b).unwrap_err(),
        CodeObjectError::NotAmdgpu(62)
    );
}

#[test]
fn descriptor_entry_outside_text_is_an_error() {
    let b = fixture();
    let co = CodeObject::parse(&b).unwrap();
    let kd = co.kernels[0].descriptor_addr as usize; // .rodata vaddr == file offset in these objects
    let mut bad = b.clone();
    bad[kd + 16..kd + 24].copy_from_slice(&0x7fff_ffffu64.to_le_bytes());
    let e = CodeObject::parse(&bad).unwrap_err();
    assert!(matches!(e, CodeObjectError::EntryOutside { .. }), "{e}");
}

#[test]
fn unknown_opcode_prints_like_llvm() {
    // SOP1 opcode 0xff does not exist on gfx11; llvm-objdump prints `.long 0xbe80ff00`.
    let code = 0xBE80_FF00u32.to_le_bytes();
    let lines: Vec<_> = isa::disassemble(&code, 0, GfxTarget::GFX1100).collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].text(), ".long 0xbe80ff00");
    assert!(matches!(
        isa::decode(&code, GfxTarget::GFX1100),
        Err(IsaError::UnknownOpcode { .. })
    ));
}

#[test]
fn truncated_instruction_is_an_error() {
    // s_load_b128 needs 8 bytes.
    let code = 0xF408_0100u32.to_le_bytes();
    assert!(matches!(
        isa::decode(&code, GfxTarget::GFX1100),
        Err(IsaError::Truncated { need: 8, .. })
    ));
}

#[test]
fn branch_helpers() {
    // s_cbranch_execz 28 at 0x100 -> 0x100 + 4 + 28*4
    let i = isa::decode(&0xBFA5_001Cu32.to_le_bytes(), GfxTarget::GFX1100).unwrap();
    assert!(i.is_branch() && i.is_sopp());
    assert_eq!(i.simm16(), Some(28));
    assert_eq!(i.branch_target(0x100), Some(0x100 + 4 + 28 * 4));
    assert_eq!(i.mnemonic(), "s_cbranch_execz");
}

/// Arbitrary words (deterministic xorshift) decode and print without panicking on every
/// supported target, and every decoded length stays within the input.
#[test]
fn random_words_never_panic() {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as u32
    };
    let targets = [
        GfxTarget::GFX1100,
        GfxTarget::GFX1200,
        GfxTarget::new(9, 5, 0),
    ];
    let mut s = String::new();
    for t in targets {
        for _ in 0..60_000 {
            let n = (next() % 6) as usize;
            let code: Vec<u8> = (0..n).flat_map(|_| next().to_le_bytes()).collect();
            if let Ok(i) = isa::decode(&code, t) {
                assert!(i.len() <= code.len() && i.len() >= 4);
                s.clear();
                i.write_text(&mut s);
                assert!(!s.is_empty());
                let _ = i.operands();
            }
        }
    }
}

/// An input the fuzzer found (a symbol name offset that overflowed when added to the string
/// table's offset): an error or a parse, never a panic.
#[test]
fn fuzzer_findings_do_not_panic() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/codeobj-fuzz-add-overflow.elf");
    let bytes = std::fs::read(path).unwrap();
    let _ = traces::isa::CodeObject::parse(&bytes);
}
