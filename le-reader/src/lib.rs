//! A bounded little-endian reader in the manner of gimli's `Reader`: a cursor over `&[u8]` that
//! never reads past its end and whose errors say where and what.
//!
//! Offsets in errors are absolute: a reader made with [`Reader::with_base`] over a slice that
//! starts at byte `base` of a file reports file offsets, and [`Reader::sub`] keeps them.
#![forbid(unsafe_code)]

use std::fmt;

/// A read past the end of the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{what} at offset {offset} needs {needed} bytes, {available} left")]
pub struct Error {
    /// Absolute offset of the read that failed.
    pub offset: u64,
    /// What was being read (a field or structure name).
    pub what: &'static str,
    pub needed: u64,
    pub available: u64,
}

pub type Result<T> = std::result::Result<T, Error>;

/// A cursor over little-endian bytes. Copying it is cheap and forks the position.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    base: u64,
}

impl fmt::Debug for Reader<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Reader {{ offset: {}, len: {}, remaining: {} }}",
            self.offset(),
            self.data.len(),
            self.remaining()
        )
    }
}

macro_rules! int {
    ($($name:ident $at:ident $ty:ty;)*) => {$(
        #[doc = concat!("Reads a little-endian `", stringify!($ty), "` and advances.")]
        #[inline]
        pub fn $name(&mut self, what: &'static str) -> Result<$ty> {
            Ok(<$ty>::from_le_bytes(self.array(what)?))
        }
        #[doc = concat!("Reads a little-endian `", stringify!($ty), "` at `pos` (relative to this reader's start) without moving.")]
        #[inline]
        pub fn $at(&self, pos: usize, what: &'static str) -> Result<$ty> {
            Ok(<$ty>::from_le_bytes(self.array_at(pos, what)?))
        }
    )*};
}

impl<'a> Reader<'a> {
    /// A reader over `data`, offsets counted from its first byte.
    pub fn new(data: &'a [u8]) -> Self {
        Self::with_base(data, 0)
    }

    /// A reader over `data`, which starts at absolute offset `base` (for error messages).
    pub fn with_base(data: &'a [u8], base: u64) -> Self {
        Reader { data, pos: 0, base }
    }

    /// Absolute offset of the next byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Position relative to this reader's start.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Absolute offset of this reader's first byte.
    pub fn base(&self) -> u64 {
        self.base
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// The whole underlying slice.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// The unread bytes.
    pub fn rest(&self) -> &'a [u8] {
        &self.data[self.pos..]
    }

    fn err(&self, pos: usize, what: &'static str, needed: usize) -> Error {
        Error {
            offset: self.base + pos as u64,
            what,
            needed: needed as u64,
            available: self.data.len().saturating_sub(pos) as u64,
        }
    }

    /// `len` bytes at `pos` (relative), checked.
    pub fn slice_at(&self, pos: usize, len: usize, what: &'static str) -> Result<&'a [u8]> {
        pos.checked_add(len)
            .and_then(|end| self.data.get(pos..end))
            .ok_or_else(|| self.err(pos.min(self.data.len()), what, len))
    }

    /// The next `len` bytes, advancing past them.
    pub fn slice(&mut self, len: usize, what: &'static str) -> Result<&'a [u8]> {
        let s = self.slice_at(self.pos, len, what)?;
        self.pos += len;
        Ok(s)
    }

    /// Skips `len` bytes (they must exist).
    pub fn skip(&mut self, len: usize, what: &'static str) -> Result<()> {
        self.slice(len, what).map(|_| ())
    }

    /// Moves to `pos` (relative; may equal the length).
    pub fn seek(&mut self, pos: usize, what: &'static str) -> Result<()> {
        if pos > self.data.len() {
            return Err(self.err(self.data.len(), what, pos - self.data.len()));
        }
        self.pos = pos;
        Ok(())
    }

    /// A reader over `len` bytes at `pos` (relative), keeping absolute offsets.
    pub fn sub(&self, pos: usize, len: usize, what: &'static str) -> Result<Reader<'a>> {
        let data = self.slice_at(pos, len, what)?;
        Ok(Reader::with_base(data, self.base + pos as u64))
    }

    /// Splits off the next `len` bytes as a reader of their own and advances past them.
    pub fn split(&mut self, len: usize, what: &'static str) -> Result<Reader<'a>> {
        let r = self.sub(self.pos, len, what)?;
        self.pos += len;
        Ok(r)
    }

    #[inline]
    pub fn array_at<const N: usize>(&self, pos: usize, what: &'static str) -> Result<[u8; N]> {
        let s = self.slice_at(pos, N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// The next `N` bytes as an array.
    #[inline]
    pub fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let a = self.array_at(self.pos, what)?;
        self.pos += N;
        Ok(a)
    }

    int! {
        u8 u8_at u8;
        u16 u16_at u16;
        u32 u32_at u32;
        u64 u64_at u64;
        i8 i8_at i8;
        i16 i16_at i16;
        i32 i32_at i32;
        i64 i64_at i64;
        f32 f32_at f32;
        f64 f64_at f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_little_endian_and_advances() {
        let d = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];
        let mut r = Reader::new(&d);
        assert_eq!(r.u8("a").unwrap(), 1);
        assert_eq!(r.u16("b").unwrap(), 0x0302);
        assert_eq!(r.u32("c").unwrap(), 0x0706_0504);
        assert_eq!(r.u64("d").unwrap(), 0x0f0e_0d0c_0b0a_0908);
        assert_eq!(r.remaining(), 0);
        assert_eq!(r.u32_at(0, "x").unwrap(), 0x0403_0201);
    }

    #[test]
    fn errors_name_offset_and_field() {
        let d = [0u8; 10];
        let mut r = Reader::with_base(&d, 100);
        r.skip(8, "pad").unwrap();
        let e = r.u32("count").unwrap_err();
        assert_eq!(
            e,
            Error {
                offset: 108,
                what: "count",
                needed: 4,
                available: 2
            }
        );
        assert_eq!(e.to_string(), "count at offset 108 needs 4 bytes, 2 left");
        // The failed read did not move the cursor.
        assert_eq!(r.offset(), 108);
        assert_eq!(r.u16("tail").unwrap(), 0);
    }

    #[test]
    fn huge_lengths_do_not_overflow() {
        let d = [0u8; 4];
        let r = Reader::with_base(&d, 7);
        let e = r.slice_at(2, usize::MAX, "blob").unwrap_err();
        assert_eq!((e.offset, e.available), (9, 2));
        assert!(r.slice_at(usize::MAX, 1, "x").is_err());
        let e = r.sub(5, 0, "past end").unwrap_err();
        assert_eq!(e.offset, 11);
    }

    #[test]
    fn sub_keeps_absolute_offsets() {
        let d = [0u8; 16];
        let r = Reader::with_base(&d, 1000);
        let mut s = r.sub(8, 4, "section").unwrap();
        assert_eq!(s.offset(), 1008);
        s.u32("field").unwrap();
        assert_eq!(s.u8("next").unwrap_err().offset, 1012);
    }
}
