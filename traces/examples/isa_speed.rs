//! Disassembly speed (text included) over the gfx1100 fixture corpus, for profiling and for
//! CPU-time measurements on a busy machine.
//!
//! `cargo run --release -p traces --example isa_speed -- [REPEAT]` prints one JSON line: bytes
//! of machine code, instructions, text bytes, wall seconds and CPU seconds of this process. Under
//! `valgrind --tool=callgrind` use a small REPEAT (e.g. 5) and divide `Ir` by `insns`.

use std::path::Path;
use std::time::Instant;
use traces::isa::{self, CodeObject};

/// CPU time of this process in seconds (user + system), from /proc (Linux).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// FNV-1a over the text of pseudo-random words (biased towards valid encodings) and the
/// corpus, for every target: a fingerprint to check that printing changes stay byte-identical.
fn fingerprint(corpus: &[(Vec<u8>, u64, traces::GfxTarget)]) {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut eat = |s: &str| {
        for b in s.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    };
    let mut s = String::new();
    for (code, base, t) in corpus {
        for l in isa::disassemble(code, *base, *t) {
            s.clear();
            s.push_str(&l.text());
            eat(&s);
        }
    }
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut code = Vec::new();
    for k in 0..(1 << 21) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Mostly small register numbers and common top bits, like real code.
        let mut w = (x >> 32) as u32;
        if k % 3 == 0 {
            w &= 0xFF83_80FF;
        }
        code.extend_from_slice(&w.to_le_bytes());
    }
    for t in [
        traces::GfxTarget::GFX1100,
        traces::GfxTarget::GFX1200,
        traces::GfxTarget::GFX950,
    ] {
        for l in isa::disassemble(&code, 0x1000, t) {
            if let Ok(i) = &l.insn {
                s.clear();
                i.write_text(&mut s);
                eat(&s);
                eat(&format!("{:?}", i.operands()));
            }
            eat(&l.text());
        }
    }
    println!("{{\"fingerprint\":\"{h:016x}\"}}");
}

fn main() {
    let hash = std::env::args().nth(1).is_some_and(|a| a == "hash");
    let repeat: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/kernels/gfx1100");
    let mut corpus = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().extension().is_some_and(|x| x == "elf") {
            let b = std::fs::read(e.path()).unwrap_or_default();
            if let Ok(co) = CodeObject::parse(&b) {
                corpus.push((co.text.clone(), co.text_addr, co.target));
            }
        }
    }
    if hash {
        fingerprint(&corpus);
        return;
    }
    let bytes: usize = corpus.iter().map(|c| c.0.len()).sum();
    let mut s = String::with_capacity(1 << 16);
    let (mut insns, mut text) = (0usize, 0usize);
    let c0 = cpu_seconds();
    let t0 = Instant::now();
    for _ in 0..repeat {
        s.clear();
        for (code, base, t) in &corpus {
            for l in isa::disassemble(code, *base, *t) {
                if let Ok(i) = &l.insn {
                    i.write_text(&mut s);
                }
                s.push('\n');
                insns += 1;
            }
        }
        text += s.len();
    }
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - c0;
    let total = (bytes * repeat) as f64;
    println!(
        "{{\"bytes\":{},\"insns\":{insns},\"text\":{text},\"wall_s\":{wall:.3},\"cpu_s\":{cpu:.2},\
         \"mb_s_wall\":{:.1},\"mb_s_cpu\":{:.1}}}",
        bytes * repeat,
        total / wall / 1e6,
        total / cpu.max(1e-9) / 1e6
    );
}
