//! Fixed-work disassembly loop for profiling (`cargo test --release -p traces --test isa_speed
//! -- --ignored --nocapture`, e.g. under `perf stat`); the criterion bench is the reference.

use std::path::Path;
use std::time::Instant;
use traces::isa::{self, CodeObject};

#[test]
#[ignore]
fn disasm_text_fixed_work() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/kernels/gfx1100");
    let mut corpus = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "elf") {
            let b = std::fs::read(e.path()).unwrap();
            let co = CodeObject::parse(&b).unwrap();
            corpus.push((co.text.clone(), co.text_addr, co.target));
        }
    }
    let bytes: usize = corpus.iter().map(|c| c.0.len()).sum();
    let iters = 2000;
    let mut s = String::with_capacity(1 << 16);
    let t = Instant::now();
    let mut total = 0usize;
    for _ in 0..iters {
        s.clear();
        for (code, base, tgt) in &corpus {
            for l in isa::disassemble(code, *base, *tgt) {
                if let Ok(i) = &l.insn {
                    i.write_text(&mut s);
                }
                s.push('\n');
            }
        }
        total += s.len();
    }
    let dt = t.elapsed().as_secs_f64();
    eprintln!(
        "{} MB in {dt:.3}s: {:.1} MB/s (text {total} bytes)",
        bytes * iters / 1_000_000,
        (bytes * iters) as f64 / dt / 1e6
    );
}

/// Per-instruction floor: a buffer of `s_code_end` words only.
#[test]
#[ignore]
fn disasm_text_sopp_only() {
    let code: Vec<u8> = std::iter::repeat_n(0xBF9F_0000u32.to_le_bytes(), 6000)
        .flatten()
        .collect();
    let t0 = Instant::now();
    let mut s = String::with_capacity(1 << 17);
    for _ in 0..2000 {
        s.clear();
        for l in isa::disassemble(&code, 0, traces::GfxTarget::GFX1100) {
            if let Ok(i) = &l.insn {
                i.write_text(&mut s);
            }
            s.push('\n');
        }
    }
    let dt = t0.elapsed().as_secs_f64();
    eprintln!("{:.1} ns/insn", dt * 1e9 / (2000.0 * 6000.0));
}
