//! The decoder on hostile and random input: no panic, ever; and on random streams it frames
//! exactly like a plain transcription of the reference decoder's loop (one packet at a time,
//! with its 64-bit window), including after the window quirk of long packets.

use proptest::prelude::*;
use traces::sqtt::packets::{Layout, CDNA_TABLE, RDNA3_TABLE, RDNA4_TABLE};
use traces::sqtt::{
    self, canonical, AnalyzeOptions, DecodeOptions, Decoder, Framing, Packet, RunSink,
};

/// The reference decoder's loop, transcribed directly (independent of the fast decoder):
/// returns (offset, time, type name, raw) per packet.
fn reference_decode(data: &[u8]) -> Vec<(u64, i64, &'static str, u64)> {
    let n = data.len();
    let (mut reg, mut pos, mut nib_off, mut nib_count) = (0u64, 0usize, 0usize, 16usize);
    let (mut time, mut ts_offset): (i64, Option<i64>) = (0, None);
    let mut table = &RDNA3_TABLE;
    let mut offset = 0u64;
    let mut out = Vec::new();
    while pos + ((nib_count + nib_off + 1) >> 1) <= n {
        let need = nib_count - nib_off;
        if nib_off != 0 {
            reg = (reg >> 4) | (((data[pos] >> 4) as u64) << 60);
            pos += 1;
        }
        let byte_count = need >> 1;
        if byte_count != 0 {
            let read = byte_count.min(8);
            let mut chunk = 0u64;
            for i in 0..read {
                chunk |= (*data.get(pos + i).unwrap_or(&0) as u64) << (8 * i);
            }
            reg = if read == 8 {
                chunk
            } else {
                (reg >> (read * 8)) | (chunk << (64 - read * 8))
            };
            pos += byte_count;
        }
        nib_off = need & 1;
        if nib_off != 0 {
            reg = (reg >> 4) | (((data[pos] & 0xf) as u64) << 60);
        }
        let mut ty = table.lookup(reg as u8);
        let mut delta = ty.delta.map_or(0, |f| f.get(reg)) as i64;
        match ty.name {
            "TS_DELTA_OR_MARK" | "TS_DELTA_OR_MARK_RDNA4" => {
                let rt = ty.field_named("rt").unwrap().get(reg);
                let pl = ty.field_named("pl").unwrap().get(reg);
                if rt == 1 && pl == 0 {
                    delta = 0;
                }
            }
            "TS_DELTA_SHORT" => delta += 4,
            "CDNA_MISC" => delta *= 4,
            "CDNA_TIMESTAMP" => {
                if (reg >> 4) & 0xfff == 0 {
                    let abs = (reg >> 16) as i64;
                    match ts_offset {
                        None => ts_offset = Some(abs - time),
                        Some(off) => time = ((abs - off) & !3) - 4,
                    }
                }
                delta = 0;
            }
            _ => {}
        }
        time += delta;
        if ty.name == "LAYOUT_HEADER" {
            let layout = (reg >> 7) & 0x3f;
            if layout == 4 {
                table = &RDNA4_TABLE;
            } else if layout != 3 {
                table = &CDNA_TABLE;
                ty = table.lookup(reg as u8);
                if ty.name == "CDNA_TIMESTAMP" && (reg >> 4) & 0xfff == 0 {
                    ts_offset = Some((reg >> 16) as i64 - time);
                }
            }
        }
        nib_count = ty.nibbles as usize;
        out.push((offset, time, ty.name, reg));
        offset += ty.nibbles as u64;
    }
    let _ = Layout::Rdna3;
    out
}

fn ours(data: &[u8]) -> Vec<(u64, i64, &'static str, u64)> {
    Decoder::new(data, DecodeOptions::default())
        .map(|p| (p.offset, p.time, p.ty.name, p.raw))
        .collect()
}

/// Compare, ignoring `raw` for NOPs (the fast path reports only the NOP's own nibble).
fn same(a: &[(u64, i64, &str, u64)], b: &[(u64, i64, &str, u64)]) -> Result<(), String> {
    if a.len() != b.len() {
        return Err(format!("{} packets vs {}", a.len(), b.len()));
    }
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let raw_ok = x.2 == "NOP" || x.3 == y.3;
        if x.0 != y.0 || x.1 != y.1 || x.2 != y.2 || !raw_ok {
            return Err(format!("packet {i}: {x:?} vs {y:?}"));
        }
    }
    Ok(())
}

/// A stream: a layout header for `layout` (3, 4 or anything for CDNA) then `body`.
fn stream(layout: u8, body: &[u8]) -> Vec<u8> {
    let header: u64 = 0x11 | ((layout as u64) << 7);
    let mut v = header.to_le_bytes().to_vec();
    v.extend_from_slice(body);
    v
}

/// A [`RunSink`] that keeps the default [`RunSink::BY_LAYOUT`] (the per-layout loops a
/// closure does not get), each packet of a run listed.
struct PerLayoutRuns(Vec<(u64, i64, &'static str, Layout, u8)>);

impl RunSink for PerLayoutRuns {
    fn run(&mut self, p: &Packet, n: u32) {
        for i in 0..n as u64 {
            self.0
                .push((p.offset + i, p.time, p.ty.name, p.layout, p.index));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
        for framing in [Framing::Reference, Framing::Hardware] {
            let decode = DecodeOptions { framing, ..Default::default() };
            let _ = sqtt::analyze_with(&data, None, AnalyzeOptions { decode, ..Default::default() });
            let mut sink = Vec::new();
            let _ = canonical::write_blob(&mut sink, &data, decode);
            let mut d = Decoder::new(&data, decode);
            d.by_ref().for_each(drop);
            let _ = d.tail();
        }
    }

    #[test]
    fn framing_equals_the_reference_loop(layout in prop_oneof![Just(3u8), Just(4u8), Just(0u8)],
                                         body in proptest::collection::vec(any::<u8>(), 0..1024)) {
        let data = stream(layout, &body);
        same(&ours(&data), &reference_decode(&data)).map_err(TestCaseError::fail)?;
    }

    /// Streams whose LAYOUT_HEADERs switch the layout mid-stream (after NOP padding, so they
    /// start a packet) through the decoder's per-layout loops ([`RunSink::BY_LAYOUT`], the
    /// analyzer's path): the same packets as the per-packet iterator, in both framings.
    #[test]
    fn layout_switching_runs_equal_the_per_packet_iterator(
        layouts in proptest::collection::vec(prop_oneof![Just(3u8), Just(4u8), Just(0u8)], 1..4),
        bodies in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..400), 3)) {
        let mut data = stream(layouts[0], &bodies[0]);
        for (l, body) in layouts[1..].iter().zip(&bodies[1..]) {
            data.extend([0u8; 32]);
            data.extend(stream(*l, body));
        }
        for framing in [Framing::Reference, Framing::Hardware] {
            let decode = DecodeOptions { framing, ..Default::default() };
            let mut runs = PerLayoutRuns(Vec::new());
            Decoder::new(&data, decode).for_each_run_into(&mut runs);
            let packets: Vec<_> = Decoder::new(&data, decode)
                .map(|p| (p.offset, p.time, p.ty.name, p.layout, p.index))
                .collect();
            prop_assert_eq!(&runs.0, &packets, "{:?}", framing);
        }
    }

    /// Streams dense in the 18-nibble TS_DELTA_S8_W3 (byte pattern 0x21 / 0xA1), at even and
    /// odd nibble offsets: the reference window quirk must be reproduced exactly.
    #[test]
    fn long_packets_equal_the_reference_loop(layout in prop_oneof![Just(3u8), Just(4u8)],
                                            body in proptest::collection::vec(
                                                prop_oneof![Just(0x21u8), Just(0xa1), Just(0x12), Just(0x00), any::<u8>()], 0..600)) {
        let data = stream(layout, &body);
        same(&ours(&data), &reference_decode(&data)).map_err(TestCaseError::fail)?;
    }
}

#[test]
fn truncated_real_blobs_decode_partially_with_a_warning() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/traces/gfx1100/gemm_run_0/kern0_se0.sqtt");
    let blob = std::fs::read(&path).unwrap();
    let full = sqtt::analyze(&blob, None).unwrap();
    for len in [4001usize, 3333, 1000, 17] {
        let a = sqtt::analyze(&blob[..len], None).unwrap();
        assert!(a.packet_total < full.packet_total);
        assert!(
            a.warnings.iter().any(|w| w.message.contains("truncated")),
            "len {len}: {:?}",
            a.warnings
        );
    }
    assert!(matches!(
        sqtt::analyze(&blob[..5], None),
        Err(sqtt::DecodeError::TooShort { .. })
    ));
    assert!(matches!(
        sqtt::analyze(&[], None),
        Err(sqtt::DecodeError::Empty)
    ));
    // Random bytes that do not start with a layout header are refused.
    assert!(matches!(
        sqtt::analyze(&[0x02; 64], None),
        Err(sqtt::DecodeError::NoLayoutHeader { .. })
    ));
}

#[test]
fn wrong_architecture_is_reported() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/traces/gfx1200/plus_run_0/kern0_se1.sqtt");
    let blob = std::fs::read(&path).unwrap();
    let a = sqtt::analyze(&blob, Some("gfx1100".parse().unwrap())).unwrap();
    assert!(
        a.warnings
            .iter()
            .any(|w| w.offset == 0 && w.message.contains("rdna4")),
        "{:?}",
        a.warnings
    );
}

/// The run API (NOP padding as one packet with a count) hands out exactly the per-packet
/// iterator's stream.
#[test]
fn runs_equal_the_per_packet_iterator() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces");
    for arch in ["gfx1100", "gfx1200", "gfx950"] {
        let mut blobs = Vec::new();
        for case in ["empty_run_0", "plus_run_0"] {
            for se in 0..4 {
                let p = root
                    .join(arch)
                    .join(case)
                    .join(format!("kern0_se{se}.sqtt"));
                blobs.push(std::fs::read(p).unwrap());
            }
        }
        let refs: Vec<&[u8]> = blobs.iter().map(|b| b.as_slice()).collect();
        let stream = sqtt::synth::stream(&sqtt::synth::period(&refs), 1 << 18);
        let mut runs = Vec::new();
        Decoder::new(&stream, DecodeOptions::default()).for_each_run(|p, n| {
            for i in 0..n as u64 {
                runs.push((p.offset + i, p.time, p.ty.name));
            }
        });
        let packets: Vec<_> = Decoder::new(&stream, DecodeOptions::default())
            .map(|p| (p.offset, p.time, p.ty.name))
            .collect();
        assert_eq!(runs.len(), packets.len(), "{arch}");
        assert!(runs == packets, "{arch}");
    }
}
