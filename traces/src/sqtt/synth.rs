//! Long synthetic streams made of real packets, for benchmarks and stress tests: the packets of
//! real blobs re-framed one after another behind a single layout header.

use super::decoder::{DecodeOptions, Decoder, Framing};
use super::encode::NibbleWriter;
use super::packets::{Kind, Role};

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

/// A real stream tiled in time, re-encoded so it stays valid: one layout header, then the blob's
/// packets repeated until `target` bytes are written to `out`, each repetition's realtime
/// markers shifted by the repetition's span on the blob's own clock (so GPU time keeps
/// increasing); the deltas keep the shader-cycle time monotonic and the waves reuse their
/// slots; the end is padded to a whole 32-byte unit. Returns the bytes written and the
/// repetitions.
pub fn tile<W: std::io::Write>(
    blob: &[u8],
    target: u64,
    out: &mut W,
) -> std::io::Result<(u64, u64)> {
    let opts = DecodeOptions {
        framing: Framing::Hardware,
        ..DecodeOptions::default()
    };
    let packets: Vec<_> = Decoder::new(blob, opts).collect();
    let markers: Vec<(i64, u64)> = packets
        .iter()
        .filter(|p| p.is_marker())
        .filter_map(|p| Some((p.time, p.get(Role::Delta)?)))
        .collect();
    let (t0, t1) = (
        packets.first().map_or(0, |p| p.time),
        packets.last().map_or(0, |p| p.time),
    );
    let span = (t1 - t0).max(1);
    let rt_shift = match (markers.first(), markers.last()) {
        (Some(a), Some(b)) if b.0 > a.0 && b.1 >= a.1 => {
            ((b.1 - a.1) as f64 / (b.0 - a.0) as f64 * span as f64).round() as u64
        }
        _ => 0,
    };
    let (mut written, mut reps, mut header) = (0u64, 0u64, false);
    while written < target && !packets.is_empty() {
        let mut w = NibbleWriter::with_capacity(blob.len() + 16);
        for p in &packets {
            if p.ty.kind == Kind::LayoutHeader {
                if !header {
                    w.push(p.raw, p.nibbles);
                    header = true;
                }
                continue;
            }
            let mut raw = p.raw;
            // A field moved on by `by` (wrapping in its width).
            let shift = |raw: u64, role: Role, by: u64| match p.ty.field(role) {
                Some(f) => f.set(raw, f.get(raw).wrapping_add(by)),
                None => raw,
            };
            if p.is_marker() {
                raw = shift(raw, Role::Delta, rt_shift.wrapping_mul(reps));
            }
            // gfx9's timestamps re-anchor the shader clock (`Decoder`): each repetition's
            // are moved on by the span, or its time would go back to the first one's.
            if p.ty.kind == Kind::CdnaTimestamp && (raw >> 4) & 0xfff == 0 {
                raw = shift(raw, Role::Timestamp, (span as u64).wrapping_mul(reps));
            }
            w.push(raw, p.nibbles);
        }
        if w.nibbles() % 2 == 1 {
            w.push(0, 1);
        }
        out.write_all(w.as_bytes())?;
        written += w.as_bytes().len() as u64;
        reps += 1;
    }
    // Zero nibbles, NOPs, fill the last trace-buffer unit (the decoder says a blob that is not
    // whole units is truncated).
    let pad = super::waves::unit_padding(packets.first().map(|p| p.layout), written as usize);
    out.write_all(&[0u8; 32][..pad])?;
    Ok((written + pad as u64, reps))
}

/// A damaged copy of a real stream for robustness tests: its packets re-framed (hardware
/// framing) without the first one `drop` picks, then padded to whole trace-buffer units.
/// `None` when `drop` picks none.
pub fn without_first(blob: &[u8], drop: impl Fn(&super::Packet) -> bool) -> Option<Vec<u8>> {
    reframed(blob, drop, 0)
}

/// [`without_first`] with the first packet `pick` picks twice instead (a WAVESTART twice: a
/// wave started while its slot is live).
pub fn with_first_twice(blob: &[u8], pick: impl Fn(&super::Packet) -> bool) -> Option<Vec<u8>> {
    reframed(blob, pick, 2)
}

/// `blob`'s packets re-framed with `copies` of the first one `pick` picks.
fn reframed(blob: &[u8], pick: impl Fn(&super::Packet) -> bool, copies: usize) -> Option<Vec<u8>> {
    let opts = DecodeOptions {
        framing: Framing::Hardware,
        ..DecodeOptions::default()
    };
    let mut w = NibbleWriter::with_capacity(blob.len() + 32);
    let mut picked = false;
    let mut layout = None;
    for p in Decoder::new(blob, opts) {
        layout.get_or_insert(p.layout);
        let n = match !picked && pick(&p) {
            true => {
                picked = true;
                copies
            }
            false => 1,
        };
        for _ in 0..n {
            w.push(p.raw, p.nibbles);
        }
    }
    if w.nibbles() % 2 == 1 {
        w.push(0, 1);
    }
    let mut out = w.into_bytes();
    out.resize(out.len() + super::waves::unit_padding(layout, out.len()), 0);
    picked.then_some(out)
}
