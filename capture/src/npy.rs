//! NumPy `.npy` files (format versions 1-3, little-endian numeric arrays, C order): what a
//! workload's buffers are filled from, what `--dump` writes and what expected outputs are read
//! from. The format: numpy's `numpy/lib/format.py` ("NPY format" in NumPy's documentation).

use std::fmt;

/// An element type the buffers of a workload can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    F16,
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
}

impl Dtype {
    pub const VALID: &'static str = "f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64";
    const ALL: [(Dtype, &'static str, &'static str); 11] = [
        (Dtype::F16, "f16", "f2"),
        (Dtype::F32, "f32", "f4"),
        (Dtype::F64, "f64", "f8"),
        (Dtype::I8, "i8", "i1"),
        (Dtype::I16, "i16", "i2"),
        (Dtype::I32, "i32", "i4"),
        (Dtype::I64, "i64", "i8"),
        (Dtype::U8, "u8", "u1"),
        (Dtype::U16, "u16", "u2"),
        (Dtype::U32, "u32", "u4"),
        (Dtype::U64, "u64", "u8"),
    ];

    /// `f32`, `u8`, ... as a workload file names them.
    pub fn parse(s: &str) -> Option<Dtype> {
        Self::ALL
            .iter()
            .find(|(_, n, _)| *n == s)
            .map(|(d, _, _)| *d)
    }

    pub fn size(self) -> usize {
        match self {
            Dtype::I8 | Dtype::U8 => 1,
            Dtype::F16 | Dtype::I16 | Dtype::U16 => 2,
            Dtype::F32 | Dtype::I32 | Dtype::U32 => 4,
            Dtype::F64 | Dtype::I64 | Dtype::U64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, Dtype::F16 | Dtype::F32 | Dtype::F64)
    }

    fn code(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(d, _, _)| *d == self)
            .map_or("u1", |(_, _, c)| c)
    }

    /// NumPy's `descr` (`<f4`, `|u1`).
    pub fn descr(self) -> String {
        let order = if self.size() == 1 { '|' } else { '<' };
        format!("{order}{}", self.code())
    }

    fn from_descr(d: &str) -> Option<Dtype> {
        let (order, code) = d.split_at_checked(1)?;
        let dt = Self::ALL.iter().find(|(_, _, c)| *c == code)?.0;
        let ok = match order {
            "<" => true,
            "|" | "=" => dt.size() == 1 || order == "=",
            _ => false,
        };
        ok.then_some(dt)
    }

    /// Element `i` of `data` as f64 (integers exactly up to 2^53).
    pub fn value(self, data: &[u8], i: usize) -> Option<f64> {
        let n = self.size();
        let b = data.get(i * n..i * n + n)?;
        let mut w = [0u8; 8];
        w[..n].copy_from_slice(b);
        let u = u64::from_le_bytes(w);
        Some(match self {
            Dtype::F16 => f16_to_f64(u as u16),
            Dtype::F32 => f64::from(f32::from_bits(u as u32)),
            Dtype::F64 => f64::from_bits(u),
            Dtype::I8 => f64::from(u as u8 as i8),
            Dtype::I16 => f64::from(u as u16 as i16),
            Dtype::I32 => f64::from(u as u32 as i32),
            Dtype::I64 => u as i64 as f64,
            Dtype::U8 | Dtype::U16 | Dtype::U32 | Dtype::U64 => u as f64,
        })
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = Self::ALL
            .iter()
            .find(|(d, _, _)| d == self)
            .map_or("?", |(_, n, _)| n);
        f.write_str(n)
    }
}

fn f16_to_f64(h: u16) -> f64 {
    let sign = if h >> 15 == 1 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1F);
    let frac = f64::from(h & 0x3FF);
    sign * match exp {
        0 => frac * 2f64.powi(-24),
        31 if frac == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1.0 + frac / 1024.0) * 2f64.powi(e - 15),
    }
}

/// Why a `.npy` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a NumPy .npy this reads: {0}")]
pub struct NpyError(String);

/// A parsed `.npy`: its element type, shape and the data bytes (borrowed from the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Npy<'a> {
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    pub data: &'a [u8],
}

const MAGIC: &[u8] = b"\x93NUMPY";

/// Parses a `.npy` (numeric, little-endian, C order or one-dimensional).
pub fn parse(b: &[u8]) -> Result<Npy<'_>, NpyError> {
    let bad = |m: String| NpyError(m);
    if b.get(..6) != Some(MAGIC) {
        return Err(bad("no \\x93NUMPY magic at offset 0".into()));
    }
    let major = *b.get(6).ok_or_else(|| bad("truncated header".into()))?;
    let (len, start): (usize, usize) = match major {
        1 => (
            usize::from(u16::from_le_bytes([
                *b.get(8).unwrap_or(&0),
                *b.get(9).unwrap_or(&0),
            ])),
            10,
        ),
        2 | 3 => {
            let l = b.get(8..12).ok_or_else(|| bad("truncated header".into()))?;
            (u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize, 12)
        }
        v => return Err(bad(format!("format version {v} (offset 6)"))),
    };
    let header = b.get(start..start.saturating_add(len)).ok_or_else(|| {
        bad(format!(
            "header of {len} bytes at offset {start} is truncated"
        ))
    })?;
    let header =
        std::str::from_utf8(header).map_err(|_| bad("header is not text (offset 8)".into()))?;
    let field = |key: &str| -> Option<&str> {
        let at = header.find(&format!("'{key}'"))? + key.len() + 2;
        Some(header[at..].trim_start().strip_prefix(':')?.trim_start())
    };
    let descr = field("descr")
        .and_then(|v| v.strip_prefix('\''))
        .and_then(|v| v.split('\'').next())
        .ok_or_else(|| bad("header has no 'descr'".into()))?;
    let dtype = Dtype::from_descr(descr).ok_or_else(|| {
        bad(format!(
            "dtype {descr:?} (little-endian {} only)",
            Dtype::VALID
        ))
    })?;
    let shape_s = field("shape")
        .and_then(|v| v.strip_prefix('('))
        .and_then(|v| v.split(')').next())
        .ok_or_else(|| bad("header has no 'shape'".into()))?;
    let shape = shape_s
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| bad(format!("shape ({shape_s}) is not a tuple of sizes")))?;
    let fortran = field("fortran_order").is_some_and(|v| v.starts_with("True"));
    if fortran && shape.iter().filter(|&&d| d > 1).count() > 1 {
        return Err(bad(
            "Fortran-order arrays are not read (save C order)".into()
        ));
    }
    let count = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| bad("shape overflows".into()))?;
    let bytes = count
        .checked_mul(dtype.size())
        .ok_or_else(|| bad("shape overflows".into()))?;
    let data_at = start + len;
    let data = b
        .get(data_at..data_at.saturating_add(bytes))
        .ok_or_else(|| {
            bad(format!(
                "{bytes} data bytes expected at offset {data_at}, the file has {}",
                b.len().saturating_sub(data_at)
            ))
        })?;
    Ok(Npy { dtype, shape, data })
}

/// A version 1.0 `.npy` of `data` as a one-dimensional array of `dtype` (trailing bytes that
/// do not fill an element are left out; `--dump` writes the raw file beside it).
pub fn write(dtype: Dtype, data: &[u8]) -> Vec<u8> {
    let n = data.len() / dtype.size();
    let mut header = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': ({n},), }}",
        dtype.descr()
    );
    // Magic, version, length and header padded with spaces to a multiple of 64, then '\n'.
    let used = MAGIC.len() + 4 + header.len() + 1;
    header.push_str(&" ".repeat(used.next_multiple_of(64) - used));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + data.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&data[..n * dtype.size()]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_it_writes_and_refuses_the_rest() {
        let data: Vec<u8> = [1.5f32, -2.0, 3.25]
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        let f = write(Dtype::F32, &data);
        assert_eq!(f.len() % 64, 12, "header padded to 64 bytes");
        let n = parse(&f).unwrap();
        assert_eq!(
            (n.dtype, n.shape.as_slice(), n.data),
            (Dtype::F32, &[3][..], &data[..])
        );
        assert_eq!(n.dtype.value(n.data, 2), Some(3.25));
        assert!(parse(b"nope").unwrap_err().to_string().contains("magic"));
        let big = String::from_utf8_lossy(&f).replace("<f4", ">f4");
        assert!(parse(big.as_bytes()).is_err());
        assert!(parse(&f[..f.len() - 1])
            .unwrap_err()
            .to_string()
            .contains("12 data bytes"));
        assert_eq!(f16_to_f64(0x3C00), 1.0);
        assert_eq!(f16_to_f64(0xC000), -2.0);
    }
}
