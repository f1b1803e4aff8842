//! SQTT decoding speed on a 256 MiB stream per family, built from the packets of the real
//! captures in `../shared/traces`.
//!
//! `cargo bench -p traces --bench sqtt_decode` prints MB/s (criterion's throughput) for:
//! - `decode`: every packet framed, typed and timed (the iterator the whole product uses);
//! - `analyze`: the same plus waves, instruction tokens, markers and statistics.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use std::path::Path;
use traces::sqtt::{self, synth, AnalyzeOptions, DecodeOptions, Decoder};

const STREAM_BYTES: usize = 256 << 20;

fn blobs(arch: &str) -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/traces")
        .join(arch);
    let mut out = Vec::new();
    let mut cases: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e} (the shared captures are needed)", root.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    cases.sort();
    for c in cases {
        let mut files: Vec<_> = std::fs::read_dir(&c)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        for f in files {
            if f.extension().is_some_and(|e| e == "sqtt") {
                out.push(std::fs::read(&f).unwrap());
            }
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    for arch in ["gfx1100", "gfx1200", "gfx950"] {
        let blobs = blobs(arch);
        let refs: Vec<&[u8]> = blobs.iter().map(|b| b.as_slice()).collect();
        let stream = synth::stream(&synth::period(&refs), STREAM_BYTES);
        let mut g = c.benchmark_group(format!("sqtt_{arch}"));
        g.throughput(Throughput::Bytes(stream.len() as u64));
        g.sample_size(10);
        g.bench_function("decode", |b| {
            b.iter(|| {
                let mut n = 0u64;
                let mut t = 0i64;
                for p in Decoder::new(black_box(&stream), DecodeOptions::default()) {
                    n += 1;
                    t = t.wrapping_add(p.time);
                }
                black_box((n, t))
            })
        });
        g.bench_function("analyze", |b| {
            let opts = AnalyzeOptions {
                keep_tokens: false,
                ..AnalyzeOptions::default()
            };
            b.iter(|| {
                black_box(sqtt::analyze_with(black_box(&stream), None, opts).unwrap()).packet_total
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
