//! Trace file throughput on a synthetic 1.5 GiB capture (6 SEs x 256 MiB of SQTT):
//! pkl -> wst, wst -> rgp, and opening the .wst (before any SQTT is decoded).

use std::io::{BufWriter, Write};
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use traces::model::BlobStore;

const SE_BYTES: usize = 256 << 20;
const SES: usize = 6;

fn put_str(d: &mut Vec<u8>, s: &str) {
    d.push(0x8c);
    d.push(s.len() as u8);
    d.extend_from_slice(s.as_bytes());
}

/// Writes one pickled value into the buffer.
type Emit<'a> = &'a dyn Fn(&mut Vec<u8>);

fn obj(d: &mut Vec<u8>, module: &str, class: &str, fields: &[(&str, Emit)]) {
    put_str(d, module);
    put_str(d, class);
    d.extend_from_slice(b"\x93)\x81}(");
    for (k, v) in fields {
        put_str(d, k);
        v(d);
    }
    d.extend_from_slice(b"ub");
}

fn int(d: &mut Vec<u8>, v: u32) {
    d.push(b'J');
    d.extend_from_slice(&v.to_le_bytes());
}

/// A protocol-4 pickle shaped like tinygrad's: devices, one program, 6 big SQTT events.
fn synthetic_pickle() -> Vec<u8> {
    let mut d = Vec::with_capacity(SES * SE_BYTES + (1 << 20));
    d.extend_from_slice(b"\x80\x04](");
    obj(
        &mut d,
        "tinygrad.device",
        "ProfileDeviceEvent",
        &[
            ("device", &|d| put_str(d, "AMD")),
            ("tdiff", &|d| {
                put_str(d, "decimal");
                put_str(d, "Decimal");
                d.push(0x93);
                put_str(d, "123.5");
                d.extend_from_slice(b"\x85R");
            }),
            ("props", &|d| {
                d.extend_from_slice(b"}(");
                for (k, v) in [
                    ("gfx_target_version", 110000),
                    ("array_count", 12),
                    ("simd_arrays_per_engine", 2),
                    ("simd_count", 192),
                    ("simd_per_cu", 2),
                    ("max_waves_per_simd", 16),
                    ("lds_size_in_kb", 64),
                    ("cu_per_simd_array", 8),
                ] {
                    put_str(d, k);
                    int(d, v);
                }
                d.push(b'u');
            }),
        ],
    );
    obj(
        &mut d,
        "tinygrad.device",
        "ProfileProgramEvent",
        &[
            ("device", &|d| put_str(d, "AMD")),
            ("name", &|d| put_str(d, "E")),
            ("lib", &|d| {
                d.push(b'B');
                d.extend_from_slice(&4096u32.to_le_bytes());
                d.extend(std::iter::repeat_n(0x7fu8, 4096));
            }),
            ("base", &|d| int(d, 0x1000)),
            ("tag", &|d| int(d, 0)),
        ],
    );
    for se in 0..SES as u32 {
        obj(
            &mut d,
            "tinygrad.runtime.ops_amd",
            "ProfileSQTTEvent",
            &[
                ("device", &|d| put_str(d, "AMD")),
                ("kern", &|d| int(d, 0)),
                ("se", &move |d| int(d, se)),
                ("blob", &move |d| {
                    d.push(b'B');
                    d.extend_from_slice(&(SE_BYTES as u32).to_le_bytes());
                    let start = d.len();
                    d.resize(start + SE_BYTES, 0);
                    // Non-constant content so nothing downstream can shortcut.
                    for (i, b) in d[start..].iter_mut().enumerate().step_by(4096) {
                        *b = (i >> 12) as u8 ^ se as u8;
                    }
                }),
                ("itrace", &|d| d.push(0x88)),
                ("exec_tag", &|d| int(d, 1)),
            ],
        );
    }
    d.extend_from_slice(b"e.");
    d
}

fn bench(c: &mut Criterion) {
    let pkl = Arc::new(BlobStore::Owned(synthetic_pickle()));
    let total = (SES * SE_BYTES) as u64;
    let dir = tempfile::tempdir().unwrap();
    let wst_path = dir.path().join("big.wst");
    let rgp_path = dir.path().join("big.rgp");
    {
        let p = traces::tinygrad::import(pkl.clone(), "synthetic.pkl").unwrap();
        assert_eq!(p.sqtt.len(), SES);
        traces::wst::write_file(&p, &wst_path).unwrap();
    }

    let mut g = c.benchmark_group("formats_1.5GiB");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(total));
    g.bench_function("pkl_to_wst", |b| {
        b.iter(|| {
            let p = traces::tinygrad::import(pkl.clone(), "synthetic.pkl").unwrap();
            let f = std::fs::File::create(dir.path().join("out.wst")).unwrap();
            let mut w = BufWriter::with_capacity(1 << 20, f);
            traces::wst::write_to(&p, &mut w).unwrap();
            w.flush().unwrap();
        })
    });
    g.bench_function("wst_to_rgp", |b| {
        b.iter(|| {
            let p = traces::wst::open(&wst_path).unwrap();
            let f = std::fs::File::create(&rgp_path).unwrap();
            traces::rgp::write_to(
                &p,
                &Default::default(),
                BufWriter::with_capacity(1 << 20, f),
            )
            .unwrap();
        })
    });
    g.throughput(Throughput::Elements(1));
    g.bench_function("wst_open", |b| {
        b.iter(|| {
            let p = traces::wst::open(&wst_path).unwrap();
            assert_eq!(p.sqtt.len(), SES);
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
