//! Decoding speed on given blobs, for side-by-side comparisons (see `bench/sqtt_vs_tinygrad.py`).
//!
//! `cargo run --release -p traces --example sqtt_speed -- [--repeat N] [--synthetic MIB]
//! [--per-packet|--analyze|--fingerprint] BLOB...` (`--per-packet`: the one-packet-at-a-time
//! iterator instead of runs; `--analyze`: the whole per-blob analysis: waves, tokens, markers,
//! statistics; `--fingerprint`: a hash of everything the decoder outputs on the inputs and on
//! variations of them, to compare before and after a change)
//! prints one JSON line: bytes decoded, packets, wall seconds and CPU seconds of this thread
//! (CPU time is what to compare on a busy machine).
//!
//! Instructions per packet: `valgrind --tool=callgrind` on `--per-packet --synthetic 16`, then
//! the inclusive cost of `per_packet_loop` divided by the packets printed.

use std::time::Instant;
use traces::sqtt::{synth, DecodeOptions, Decoder, Framing};

/// CPU time of this thread in seconds (user + system), from /proc (Linux).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the full line: 11 and 12 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

/// The loop of the `decode` benchmark (`benches/sqtt_decode.rs`): every packet, its time summed.
/// Not inlined, so that callgrind reports its cost on its own (instructions per packet =
/// this function's inclusive cost / packets).
#[inline(never)]
fn per_packet_loop(d: Decoder) -> (u64, i64) {
    let (mut n, mut t) = (0u64, 0i64);
    for p in d {
        n += 1;
        t = t.wrapping_add(p.time);
    }
    (n, t)
}

/// FNV-1a over 64-bit words.
struct Hash(u64);

impl Hash {
    fn add(&mut self, v: u64) {
        for b in v.to_le_bytes() {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
}

/// Everything the decoder reports about `inputs` and about pseudo-random variations of them
/// (random bytes, truncations, bytes flipped, each behind every layout header), under both
/// framings, two TS_DELTA_SHORT offsets, the per-packet iterator and the runs: every field of
/// every packet, the tail, the desynchronisation point and the nibbles consumed. For checking
/// that a change to the decoder leaves its output as it was (`--fingerprint`).
fn fingerprint_of(inputs: &[Vec<u8>]) -> u64 {
    let mut h = Hash(0xcbf2_9ce4_8422_2325);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut cases: Vec<Vec<u8>> = inputs.to_vec();
    for i in 0..3000 {
        let layout = [3u64, 4, 0][i % 3];
        let mut v = (0x11 | layout << 7).to_le_bytes().to_vec();
        let len = (rand() % 600) as usize;
        match inputs.get(i % inputs.len().max(1)) {
            Some(src) if i % 2 == 0 && !src.is_empty() => {
                let start = (rand() as usize) % src.len();
                let end = (start + len).min(src.len());
                v.extend_from_slice(&src[start..end]);
                for _ in 0..rand() % 4 {
                    let at = (rand() as usize) % v.len();
                    v[at] ^= rand() as u8;
                }
            }
            _ => v.extend((0..len).map(|_| rand() as u8)),
        }
        cases.push(v);
    }
    for data in &cases {
        for framing in [Framing::Reference, Framing::Hardware] {
            for short_delta_offset in [4, 8] {
                let opts = DecodeOptions {
                    framing,
                    short_delta_offset,
                };
                let mut d = Decoder::new(data, opts);
                for p in d.by_ref() {
                    h.add(p.offset);
                    h.add(p.time as u64);
                    h.add(p.raw);
                    h.add(p.ty.id as u64 | (p.nibbles as u64) << 8 | (p.index as u64) << 16);
                    h.add(p.layout as u64);
                    h.add(p.name().len() as u64);
                }
                h.add(d.consumed_nibbles());
                h.add(d.desync_at().unwrap_or(u64::MAX));
                let tail = d.tail();
                h.add(tail.packets as u64);
                if let Some(c) = tail.cut {
                    h.add(c.offset ^ (c.needed as u64) << 48 ^ c.available << 8);
                }
                let mut r = Decoder::new(data, opts);
                r.for_each_run(|p, n| {
                    h.add(p.offset ^ (n as u64) << 40);
                    h.add(p.time as u64 ^ p.raw);
                });
                h.add(r.consumed_nibbles());
            }
        }
    }
    h.0
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut repeat = 1usize;
    let mut synthetic_mib = 0usize;
    let mut files = Vec::new();
    let mut per_packet = false;
    let mut analyze = false;
    let mut fingerprint = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--repeat" => repeat = args.next().and_then(|v| v.parse().ok()).unwrap_or(1),
            "--per-packet" => per_packet = true,
            "--analyze" => analyze = true,
            "--fingerprint" => fingerprint = true,
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
    if fingerprint {
        println!("{{\"fingerprint\": \"{:016x}\"}}", fingerprint_of(&inputs));
        return;
    }
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
                let (n, t) = per_packet_loop(d);
                packets += n;
                checksum = checksum.wrapping_add(t);
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
