//! Writing SQTT streams: a nibble writer and packet assembly from the layouts in
//! [`super::packets`]. The emulated GPU's SQTT encoder and the benchmarks build on it.

use super::packets::{Field, PacketType};

/// Appends packets to a nibble stream (low nibble of each byte first).
#[derive(Debug, Default, Clone)]
pub struct NibbleWriter {
    bytes: Vec<u8>,
    /// Whether the last byte has only its low nibble written.
    half: bool,
}

impl NibbleWriter {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_capacity(bytes: usize) -> Self {
        NibbleWriter {
            bytes: Vec::with_capacity(bytes),
            half: false,
        }
    }

    /// Nibbles written so far.
    pub fn nibbles(&self) -> u64 {
        self.bytes.len() as u64 * 2 - self.half as u64
    }

    /// Append the low `nibbles` nibbles of `value` (more than 16 nibbles pads with zeros).
    #[inline]
    pub fn push(&mut self, value: u64, nibbles: u8) {
        let mut v = value;
        for i in 0..nibbles {
            let nib = if i < 16 { (v & 0xf) as u8 } else { 0 };
            v >>= 4;
            if self.half {
                if let Some(last) = self.bytes.last_mut() {
                    *last |= nib << 4;
                }
                self.half = false;
            } else {
                self.bytes.push(nib);
                self.half = true;
            }
        }
    }

    /// Pad with zero nibbles (NOPs) up to a multiple of `bytes` bytes.
    pub fn pad_to(&mut self, bytes: usize) {
        self.half = false;
        let rem = self.bytes.len() % bytes.max(1);
        if rem != 0 {
            self.bytes.resize(self.bytes.len() + bytes - rem, 0);
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// Why a packet could not be assembled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    #[error("{packet} has no field {field}")]
    NoField { packet: &'static str, field: String },
    #[error("{packet}.{field} = {value} does not fit in {bits} bits")]
    TooWide {
        packet: &'static str,
        field: &'static str,
        value: u64,
        bits: u32,
    },
}

/// Assemble a packet's first 64 bits from field values (by canonical name); the pattern bits
/// are set from the type.
pub fn assemble(ty: &PacketType, fields: &[(&str, u64)]) -> Result<u64, EncodeError> {
    let mut raw = ty.value as u64;
    for &(name, value) in fields {
        let f: &Field = ty.field_named(name).ok_or_else(|| EncodeError::NoField {
            packet: ty.name,
            field: name.to_string(),
        })?;
        let bits = f.width();
        if bits < 64 && value >> bits != 0 {
            return Err(EncodeError::TooWide {
                packet: ty.name,
                field: f.name,
                value,
                bits,
            });
        }
        raw |= value << f.lo;
    }
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqtt::packets::RDNA3_TABLE;
    use crate::sqtt::{DecodeOptions, Decoder, Framing};

    #[test]
    fn round_trips_through_the_decoder() {
        let t = &RDNA3_TABLE;
        let mut w = NibbleWriter::new();
        let header = assemble(t.by_name("LAYOUT_HEADER").unwrap(), &[("layout", 3)]).unwrap();
        w.push(header, 16);
        let ws = t.by_name("WAVESTART").unwrap();
        w.push(
            assemble(ws, &[("delta", 2), ("wgp", 1), ("wave", 5)]).unwrap(),
            ws.nibbles,
        );
        let inst = t.by_name("INST").unwrap();
        w.push(
            assemble(inst, &[("delta", 3), ("wave", 5), ("op", 0x21)]).unwrap(),
            inst.nibbles,
        );
        let we = t.by_name("WAVEEND").unwrap();
        w.push(
            assemble(we, &[("delta", 7), ("wgp", 1), ("wave", 5)]).unwrap(),
            we.nibbles,
        );
        w.pad_to(32);
        let opts = DecodeOptions {
            framing: Framing::Hardware,
            ..Default::default()
        };
        let p: Vec<_> = Decoder::new(w.as_bytes(), opts)
            .filter(|p| p.ty.name != "NOP")
            .collect();
        let names: Vec<_> = p.iter().map(|p| p.ty.name).collect();
        assert_eq!(names, ["LAYOUT_HEADER", "WAVESTART", "INST", "WAVEEND"]);
        assert_eq!(p[3].time, 12);
        assert_eq!(p[2].fields().find(|f| f.0 == "op"), Some(("op", 0x21)));
        assert!(matches!(
            assemble(inst, &[("op", 0x100)]),
            Err(EncodeError::TooWide { .. })
        ));
    }
}
