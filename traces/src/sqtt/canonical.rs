//! The canonical one-line-per-packet form shared with the reference decode
//! (`<nibble_offset> <time> <Class> <field>=<int> ...`, see `docs/sqtt-format.md` §10).

use super::decoder::{DecodeOptions, Decoder, Packet};
use sha2::{Digest, Sha256};
use std::io::{self, Write};

/// Write one packet's canonical line (with its newline).
pub fn write_line<W: Write + ?Sized>(out: &mut W, p: &Packet) -> io::Result<()> {
    write!(out, "{} {} {} ", p.offset, p.time, p.ty.name)?;
    let mut first = true;
    for (name, value) in p.fields() {
        if !first {
            out.write_all(b" ")?;
        }
        first = false;
        write!(out, "{name}={value}")?;
    }
    out.write_all(b"\n")
}

/// Write every packet of a blob in canonical form.
pub fn write_blob<W: Write + ?Sized>(
    out: &mut W,
    blob: &[u8],
    opts: DecodeOptions,
) -> io::Result<u64> {
    let mut n = 0;
    for p in Decoder::new(blob, opts) {
        write_line(out, &p)?;
        n += 1;
    }
    Ok(n)
}

/// sha256 (hex) of a blob's canonical lines, each followed by a newline: the reference's
/// `stream_sha256`.
pub fn stream_sha256(blob: &[u8], opts: DecodeOptions) -> String {
    stream_sha256_with_progress(blob, opts, &mut |_| {})
}

/// [`stream_sha256`], calling `progress` with the bytes decoded so far every few thousand
/// packets (to release the pages of a memory-mapped blob behind the decoder).
pub fn stream_sha256_with_progress(
    blob: &[u8],
    opts: DecodeOptions,
    progress: &mut dyn FnMut(usize),
) -> String {
    struct HashWriter(Sha256);
    impl Write for HashWriter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.update(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut w = io::BufWriter::with_capacity(1 << 16, HashWriter(Sha256::new()));
    let mut countdown = 0u32;
    for p in Decoder::new(blob, opts) {
        // Writing to a hasher cannot fail.
        let _ = write_line(&mut w, &p);
        countdown = countdown.wrapping_sub(1);
        if countdown & 0xffff == 0 {
            progress((p.offset / 2) as usize);
        }
    }
    let hasher = match w.into_inner() {
        Ok(h) => h.0,
        Err(_) => return String::new(),
    };
    hex(&hasher.finalize())
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}
