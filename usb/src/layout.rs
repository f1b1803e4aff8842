//! One definition per wire format, used both to build a message (host side) and to parse one
//! (device side: the fake bridge, a FunctionFS gadget). A [`Layout`] is a fixed-size record with
//! constant bytes (what identifies the message) and named integer fields; a field is a bit range
//! of a big- or little-endian integer at a byte offset, so bit-packed `wValue`/`wIndex` words and
//! big-endian SCSI addresses are described the same way.

use crate::error::ProtoError;

/// Byte order of the integer a field lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Be,
    Le,
}

/// A named bit range `[shift, shift+bits)` of the `bytes`-byte integer at `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    pub name: &'static str,
    pub at: usize,
    pub bytes: usize,
    pub order: Order,
    pub shift: u32,
    pub bits: u32,
}

impl Field {
    /// A whole integer of `bytes` bytes.
    pub const fn int(name: &'static str, at: usize, bytes: usize, order: Order) -> Field {
        Field {
            name,
            at,
            bytes,
            order,
            shift: 0,
            bits: 8 * bytes as u32,
        }
    }
    /// Bits `[shift, shift+bits)` of the `bytes`-byte integer at `at`.
    pub const fn bits(
        name: &'static str,
        at: usize,
        bytes: usize,
        order: Order,
        shift: u32,
        bits: u32,
    ) -> Field {
        Field {
            name,
            at,
            bytes,
            order,
            shift,
            bits,
        }
    }

    fn mask(&self) -> u64 {
        if self.bits >= 64 {
            u64::MAX
        } else {
            (1u64 << self.bits) - 1
        }
    }

    fn load(&self, b: &[u8]) -> u64 {
        let s = &b[self.at..self.at + self.bytes];
        let mut v = 0u64;
        match self.order {
            Order::Be => s.iter().for_each(|&x| v = (v << 8) | u64::from(x)),
            Order::Le => s.iter().rev().for_each(|&x| v = (v << 8) | u64::from(x)),
        }
        v
    }

    fn store(&self, b: &mut [u8], v: u64) {
        let n = self.bytes;
        for i in 0..n {
            let byte = (v >> (8 * i)) as u8;
            let at = match self.order {
                Order::Be => self.at + n - 1 - i,
                Order::Le => self.at + i,
            };
            b[at] = byte;
        }
    }
}

/// A fixed-size record: constant bytes plus fields. Bytes covered by neither are zero on
/// encode and ignored on parse.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub name: &'static str,
    pub size: usize,
    /// (offset, value) of bytes that identify the message.
    pub fixed: &'static [(usize, u8)],
    pub fields: &'static [Field],
}

impl Layout {
    /// Builds the record; `values` are in field order. A value wider than its field is an error
    /// (never silently truncated).
    pub fn pack(&self, values: &[u64]) -> Result<Vec<u8>, ProtoError> {
        if values.len() != self.fields.len() {
            return Err(ProtoError::new(
                self.name,
                0,
                format!("{} values for {} fields", values.len(), self.fields.len()),
            ));
        }
        let mut b = vec![0u8; self.size];
        for &(at, v) in self.fixed {
            b[at] = v;
        }
        for (f, &v) in self.fields.iter().zip(values) {
            if v & !f.mask() != 0 {
                return Err(ProtoError::new(
                    self.name,
                    f.at,
                    format!("{} = {v:#x} does not fit in {} bits", f.name, f.bits),
                ));
            }
            let word = f.load(&b) & !(f.mask() << f.shift) | (v << f.shift);
            f.store(&mut b, word);
        }
        Ok(b)
    }

    /// Whether `b` carries this layout's constant bytes (and is long enough).
    pub fn matches(&self, b: &[u8]) -> bool {
        b.len() >= self.size && self.fixed.iter().all(|&(at, v)| b[at] == v)
    }

    /// Parses a record into its field values (in field order).
    pub fn unpack(&self, b: &[u8]) -> Result<Vec<u64>, ProtoError> {
        if b.len() < self.size {
            return Err(ProtoError::new(
                self.name,
                b.len(),
                format!("{} bytes, the record needs {}", b.len(), self.size),
            ));
        }
        for &(at, v) in self.fixed {
            if b[at] != v {
                return Err(ProtoError::new(
                    self.name,
                    at,
                    format!("byte is {:#04x}, expected {v:#04x}", b[at]),
                ));
            }
        }
        Ok(self
            .fields
            .iter()
            .map(|f| (f.load(b) >> f.shift) & f.mask())
            .collect())
    }

    /// The field named `name` (for messages that quote offsets).
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Layout = Layout {
        name: "test",
        size: 6,
        fixed: &[(0, 0xAA)],
        fields: &[
            Field::int("be24", 1, 3, Order::Be),
            Field::bits("lo", 4, 2, Order::Le, 0, 4),
            Field::bits("hi", 4, 2, Order::Le, 12, 4),
        ],
    };

    #[test]
    fn pack_then_unpack_roundtrips_and_places_bits() {
        let b = L.pack(&[0x123456, 0x5, 0xC]).unwrap();
        assert_eq!(b, [0xAA, 0x12, 0x34, 0x56, 0x05, 0xC0]);
        assert_eq!(L.unpack(&b).unwrap(), vec![0x123456, 0x5, 0xC]);
    }

    #[test]
    fn overflow_and_bad_constant_are_errors_naming_the_offset() {
        let e = L.pack(&[0x1_000000, 0, 0]).unwrap_err();
        assert!(e.to_string().contains("be24"), "{e}");
        let e = L.unpack(&[0xAB, 0, 0, 0, 0, 0]).unwrap_err();
        assert_eq!(e.offset, 0);
        let e = L.unpack(&[0xAA, 0]).unwrap_err();
        assert!(e.to_string().contains("needs 6"), "{e}");
    }
}
