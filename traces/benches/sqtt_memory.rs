//! Resident memory while decoding a 1.5 GiB SQTT file (goal: under 1.2 times the file size).
//!
//! `cargo bench -p traces --bench sqtt_memory` writes a 1.5 GiB stream made of the real
//! captures' packets to a temporary file, memory-maps it like `wavescope decode` does, and
//! prints the process's peak resident set (VmHWM) after each phase as a ratio of the file size:
//! decoding every packet, then the whole analysis (waves, markers, statistics) with the file's
//! pages released behind the decoder.

use std::io::Write;
use std::path::Path;
use traces::sqtt::{self, synth, AnalyzeOptions, DecodeOptions, Decoder};

fn vm_hwm_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces/gfx1100");
    let mut blobs = Vec::new();
    for case in ["empty_run_0", "plus_run_0", "gemm_run_0"] {
        for se in 0..6 {
            let p = root.join(case).join(format!("kern0_se{se}.sqtt"));
            blobs.push(std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())));
        }
    }
    let refs: Vec<&[u8]> = blobs.iter().map(|b| b.as_slice()).collect();
    let period = synth::period(&refs);
    let body = synth::body(&period);
    let target: u64 = 1536 << 20;
    let dir = std::env::temp_dir().join(format!("wavescope-mem-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("big.sqtt");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        f.write_all(&period[..8]).unwrap();
        let mut written = 8u64;
        while written < target {
            f.write_all(body).unwrap();
            written += body.len() as u64;
        }
        f.flush().unwrap();
    }
    drop(blobs);
    let size = std::fs::metadata(&path).unwrap().len();
    let base = vm_hwm_bytes();
    println!(
        "file: {:.2} GiB; peak RSS before decoding: {:.1} MiB",
        size as f64 / (1u64 << 30) as f64,
        base as f64 / 1048576.0
    );

    let file = sqtt::file::SqttFile::open(&path).unwrap();
    let mut packets = 0u64;
    let t = std::time::Instant::now();
    Decoder::new(file.bytes(), DecodeOptions::default()).for_each_run(|_, n| packets += n as u64);
    let decode_s = t.elapsed().as_secs_f64();
    let after_decode = vm_hwm_bytes();
    println!(
        "decode: {packets} packets in {decode_s:.2} s ({:.0} MB/s); peak RSS {:.2} x file size",
        size as f64 / decode_s / 1e6,
        after_decode as f64 / size as f64
    );
    drop(file);

    let file = sqtt::file::SqttFile::open(&path).unwrap();
    let t = std::time::Instant::now();
    let opts = AnalyzeOptions {
        keep_tokens: false,
        ..AnalyzeOptions::default()
    };
    let a = file.analyze(None, opts).unwrap();
    let analyze_s = t.elapsed().as_secs_f64();
    let after = vm_hwm_bytes();
    println!(
        "analyze: {} packets, {} waves in {analyze_s:.2} s ({:.0} MB/s); peak RSS {:.2} x file size",
        a.packet_total,
        a.waves.len(),
        size as f64 / analyze_s / 1e6,
        after as f64 / size as f64
    );
    drop(file);
    let _ = std::fs::remove_dir_all(&dir);
}
