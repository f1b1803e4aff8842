//! Disassembly throughput (text included) over the gfx1100 fixture corpus; target >= 50 MB/s.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::path::Path;
use traces::isa::{self, CodeObject};

fn corpus() -> Vec<(Vec<u8>, u64, traces::GfxTarget)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/kernels/gfx1100");
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().extension().is_some_and(|x| x == "elf") {
            let b = std::fs::read(e.path()).unwrap();
            let co = CodeObject::parse(&b).unwrap();
            v.push((co.text.clone(), co.text_addr, co.target));
        }
    }
    v
}

fn bench(c: &mut Criterion) {
    let corpus = corpus();
    let bytes: usize = corpus.iter().map(|c| c.0.len()).sum();
    let mut g = c.benchmark_group("isa");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("disasm_text_gfx1100", |b| {
        let mut s = String::with_capacity(1 << 16);
        b.iter(|| {
            s.clear();
            for (code, base, t) in &corpus {
                for l in isa::disassemble(code, *base, *t) {
                    if let Ok(i) = &l.insn {
                        i.write_text(&mut s);
                    }
                    s.push('\n');
                }
            }
            s.len()
        })
    });
    g.bench_function("decode_only_gfx1100", |b| {
        b.iter(|| {
            corpus
                .iter()
                .map(|(c, base, t)| isa::disassemble(c, *base, *t).count())
                .sum::<usize>()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
