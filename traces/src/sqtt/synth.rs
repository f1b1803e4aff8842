//! Long synthetic streams made of real packets, for benchmarks and stress tests: the packets of
//! real blobs re-framed one after another behind a single layout header.

use super::decoder::{DecodeOptions, Decoder, Framing};
use super::encode::NibbleWriter;
use super::packets::Kind;

/// One period: the layout header of the first blob, then every other packet of all `blobs`
/// (hardware framing, so nothing is dropped), padded to a whole byte.
pub fn period(blobs: &[&[u8]]) -> Vec<u8> {
    let opts = DecodeOptions {
        framing: Framing::Hardware,
        ..DecodeOptions::default()
    };
    let mut w = NibbleWriter::new();
    let mut header = false;
    for blob in blobs {
        for p in Decoder::new(blob, opts) {
            if p.ty.kind == Kind::LayoutHeader {
                if !header {
                    w.push(p.raw, p.nibbles);
                    header = true;
                }
                continue;
            }
            w.push(p.raw, p.nibbles);
        }
    }
    if w.nibbles() % 2 == 1 {
        w.push(0, 1);
    }
    w.into_bytes()
}

/// The body of a period (everything after its 8-byte layout header), which can be repeated.
pub fn body(period: &[u8]) -> &[u8] {
    period.get(8..).unwrap_or(&[])
}

/// A stream of at least `min_bytes`: the period's header, then its body repeated.
pub fn stream(period: &[u8], min_bytes: usize) -> Vec<u8> {
    let body = body(period);
    let mut out = Vec::with_capacity(min_bytes + period.len());
    out.extend_from_slice(&period[..period.len().min(8)]);
    while out.len() < min_bytes && !body.is_empty() {
        out.extend_from_slice(body);
    }
    out
}
