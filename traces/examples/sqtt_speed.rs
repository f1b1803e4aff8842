//! Decoding speed on given blobs, for side-by-side comparisons (see `bench/sqtt_vs_tinygrad.py`).
//!
//! `cargo run --release -p traces --example sqtt_speed -- [--repeat N] [--synthetic MIB]
//! [--per-packet|--analyze] BLOB...` (`--per-packet`: the one-packet-at-a-time iterator instead
//! of runs; `--analyze`: the whole per-blob analysis: waves, tokens, markers, statistics)
//! prints one JSON line: bytes decoded, packets, wall seconds and CPU seconds of this thread
//! (CPU time is what to compare on a busy machine).

use std::time::Instant;
use traces::sqtt::{synth, DecodeOptions, Decoder};

/// CPU time of this process in seconds (user + system), from /proc (Linux).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the full line: 11 and 12 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut repeat = 1usize;
    let mut synthetic_mib = 0usize;
    let mut files = Vec::new();
    let mut per_packet = false;
    let mut analyze = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--repeat" => repeat = args.next().and_then(|v| v.parse().ok()).unwrap_or(1),
            "--per-packet" => per_packet = true,
            "--analyze" => analyze = true,
            "--synthetic" => synthetic_mib = args.next().and_then(|v| v.parse().ok()).unwrap_or(0),
            _ => files.push(a),
        }
    }
    let blobs: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(f).unwrap_or_else(|e| panic!("{f}: {e}")))
        .collect();
    let inputs: Vec<Vec<u8>> = if synthetic_mib > 0 {
        let refs: Vec<&[u8]> = blobs.iter().map(|b| b.as_slice()).collect();
        vec![synth::stream(&synth::period(&refs), synthetic_mib << 20)]
    } else {
        blobs
    };
    let opts = DecodeOptions::default();
    let (mut bytes, mut packets, mut checksum) = (0u64, 0u64, 0i64);
    let (t0, c0) = (Instant::now(), cpu_seconds());
    for _ in 0..repeat {
        for b in &inputs {
            let mut d = Decoder::new(std::hint::black_box(b), opts);
            if analyze {
                let a = traces::sqtt::analyze_with(
                    b,
                    None,
                    traces::sqtt::AnalyzeOptions {
                        keep_tokens: false,
                        ..Default::default()
                    },
                )
                .expect("not an SQTT blob");
                packets += a.packet_total;
                checksum = checksum.wrapping_add(a.waves.len() as i64);
            } else if per_packet {
                for p in d {
                    packets += 1;
                    checksum = checksum.wrapping_add(p.time);
                }
            } else {
                d.for_each_run(|p, n| {
                    packets += n as u64;
                    checksum = checksum.wrapping_add(p.time);
                });
            }
            bytes += b.len() as u64;
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - c0;
    println!(
        "{{\"bytes\": {bytes}, \"packets\": {packets}, \"wall_s\": {wall:.6}, \"cpu_s\": {cpu:.3}, \
         \"mb_per_s_wall\": {:.1}, \"mb_per_s_cpu\": {:.1}, \"checksum\": {checksum}}}",
        bytes as f64 / wall / 1e6,
        bytes as f64 / cpu.max(1e-9) / 1e6
    );
}
