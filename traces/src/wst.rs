//! wavescope's own trace file, `.wst`.
//!
//! ```text
//! 0   [u8; 8]  magic  89 'W' 'S' 'T' 0D 0A 1A 0A   (PNG-style: catches text-mode mangling)
//! 8   u32      version (1)
//! 12  u32      flags (0)
//! 16  u64      meta_len: bytes of the gzip member that follows
//! 24  u64      blob_count
//! 32  gzip(postcard(Meta))                          the model without blobs + the blob table
//! ..  zero padding to a multiple of 64
//! D   blob 0, zero padding to 64, blob 1, ...       raw bytes; offsets in Meta are relative to D
//! ```
//! Blobs are stored raw so SQTT streams cost no compression time and can be located (and
//! memory-mapped) without inflating anything; the file is still readable front to back as a
//! stream. Writes go to a temp file in the target directory, are fsynced and renamed over the
//! target, so a crash mid-write never destroys an earlier capture.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;
use std::sync::Arc;

use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use serde::{Deserialize, Serialize};

use crate::model::{Blob, BlobStore, Profile};

pub const MAGIC: [u8; 8] = *b"\x89WST\r\n\x1a\n";
pub const VERSION: u32 = 1;
const HEADER_LEN: usize = 32;
const ALIGN: u64 = 64;
/// Largest inflated metadata accepted (guards against gzip bombs).
const MAX_META: u64 = 1 << 32;

#[derive(Debug, thiserror::Error)]
pub enum WstError {
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
    #[error("not a .wst file (bad magic at offset 0)")]
    BadMagic,
    #[error(".wst version {0} at offset 8 is not supported (this build reads version {VERSION})")]
    Version(u32),
    #[error(".wst truncated: {what} at offset {offset} needs {needed} bytes, file has {have}")]
    Truncated {
        what: &'static str,
        offset: u64,
        needed: u64,
        have: u64,
    },
    #[error(".wst metadata at offset {offset} is corrupt: {why}")]
    Meta { offset: u64, why: String },
    #[error(
        ".wst blob {index} (offset {offset}, {len} bytes) lies outside the file ({file_len} bytes)"
    )]
    BlobRange {
        index: usize,
        offset: u64,
        len: u64,
        file_len: u64,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct BlobEntry {
    /// Relative to the start of the data section.
    offset: u64,
    len: u64,
}

#[derive(Serialize, Deserialize)]
struct Meta {
    profile: Profile,
    blobs: Vec<BlobEntry>,
}

fn align(x: u64) -> u64 {
    x.div_ceil(ALIGN) * ALIGN
}

/// Serializes `profile` into `w` (blobs included).
pub fn write_to<W: Write>(profile: &Profile, mut w: W) -> Result<(), WstError> {
    let mut entries = Vec::with_capacity(profile.blobs.len());
    let mut off = 0u64;
    for b in &profile.blobs {
        off = align(off);
        entries.push(BlobEntry {
            offset: off,
            len: b.len() as u64,
        });
        off += b.len() as u64;
    }
    // Serialize a Meta that borrows the profile: clone only the small metadata (blobs are skipped by serde).
    let meta = MetaRef {
        profile,
        blobs: &entries,
    };
    let raw = postcard::to_stdvec(&meta).map_err(|e| WstError::Meta {
        offset: HEADER_LEN as u64,
        why: e.to_string(),
    })?;
    let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&raw)?;
    let gz = gz.finish()?;

    let mut header = [0u8; HEADER_LEN];
    header[..8].copy_from_slice(&MAGIC);
    header[8..12].copy_from_slice(&VERSION.to_le_bytes());
    header[16..24].copy_from_slice(&(gz.len() as u64).to_le_bytes());
    header[24..32].copy_from_slice(&(entries.len() as u64).to_le_bytes());
    w.write_all(&header)?;
    w.write_all(&gz)?;
    let meta_end = (HEADER_LEN + gz.len()) as u64;
    let zeros = [0u8; ALIGN as usize];
    w.write_all(&zeros[..(align(meta_end) - meta_end) as usize])?;
    let mut pos = 0u64;
    for (b, e) in profile.blobs.iter().zip(&entries) {
        w.write_all(&zeros[..(e.offset - pos) as usize])?;
        w.write_all(b.as_bytes())?;
        pos = e.offset + e.len;
    }
    w.flush()?;
    Ok(())
}

#[derive(Serialize)]
struct MetaRef<'a> {
    profile: &'a Profile,
    blobs: &'a [BlobEntry],
}

/// Writes `profile` to `path` atomically: temp file in the same directory, fsync, rename,
/// fsync of the directory.
pub fn write_file(profile: &Profile, path: &Path) -> Result<(), WstError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let tmp = crate::open::output_tempfile(path, ".wst-")?;
    {
        let mut w = BufWriter::with_capacity(1 << 20, tmp.as_file());
        write_to(profile, &mut w)?;
        w.flush()?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| WstError::Io(e.error))?;
    #[cfg(unix)]
    if let Ok(d) = File::open(&dir) {
        // Make the rename itself durable.
        let _ = d.sync_all();
    }
    Ok(())
}

struct Header {
    meta_len: u64,
    blob_count: u64,
}

fn parse_header(h: &[u8], file_len: u64) -> Result<Header, WstError> {
    if h.len() < 8 || h[..8] != MAGIC {
        if h.len() < 8 && MAGIC.starts_with(h) {
            return Err(WstError::Truncated {
                what: "header",
                offset: 0,
                needed: HEADER_LEN as u64,
                have: file_len,
            });
        }
        return Err(WstError::BadMagic);
    }
    let Some(h) = h.get(..HEADER_LEN) else {
        return Err(WstError::Truncated {
            what: "header",
            offset: 0,
            needed: HEADER_LEN as u64,
            have: file_len,
        });
    };
    let u32at = |o: usize| u32::from_le_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]]);
    let u64at = |o: usize| {
        let mut a = [0u8; 8];
        a.copy_from_slice(&h[o..o + 8]);
        u64::from_le_bytes(a)
    };
    let version = u32at(8);
    if version != VERSION {
        return Err(WstError::Version(version));
    }
    Ok(Header {
        meta_len: u64at(16),
        blob_count: u64at(24),
    })
}

fn decode_meta(gz: &[u8], blob_count: u64) -> Result<Meta, WstError> {
    let offset = HEADER_LEN as u64;
    let mut raw = Vec::new();
    GzDecoder::new(gz)
        .take(MAX_META)
        .read_to_end(&mut raw)
        .map_err(|e| WstError::Meta {
            offset,
            why: format!("gzip: {e}"),
        })?;
    let meta: Meta = postcard::from_bytes(&raw).map_err(|e| WstError::Meta {
        offset,
        why: format!("decode: {e}"),
    })?;
    if meta.blobs.len() as u64 != blob_count {
        return Err(WstError::Meta {
            offset,
            why: format!(
                "blob table has {} entries, header says {blob_count}",
                meta.blobs.len()
            ),
        });
    }
    Ok(meta)
}

/// Reads a `.wst` held in `store` (usually a memory map); blobs stay slices of it. Only the
/// metadata is inflated, so this is fast regardless of the blob volume.
pub fn read_store(store: Arc<BlobStore>) -> Result<Profile, WstError> {
    let data = store.bytes();
    let file_len = data.len() as u64;
    let hdr = parse_header(data, file_len)?;
    let meta_end = (HEADER_LEN as u64)
        .checked_add(hdr.meta_len)
        .filter(|&e| e <= file_len)
        .ok_or(WstError::Truncated {
            what: "metadata",
            offset: HEADER_LEN as u64,
            needed: hdr.meta_len,
            have: file_len.saturating_sub(HEADER_LEN as u64),
        })?;
    let meta = decode_meta(&data[HEADER_LEN..meta_end as usize], hdr.blob_count)?;
    let data_start = align(meta_end);
    let mut profile = meta.profile;
    for (index, e) in meta.blobs.iter().enumerate() {
        let start = data_start.checked_add(e.offset);
        let end = start.and_then(|s| s.checked_add(e.len));
        let blob = match (start, end) {
            (Some(s), Some(en)) if en <= file_len => {
                Blob::slice_of(&store, s as usize..en as usize)
            }
            _ => None,
        };
        let blob = blob.ok_or(WstError::BlobRange {
            index,
            offset: data_start.saturating_add(e.offset),
            len: e.len,
            file_len,
        })?;
        profile.blobs.push(blob);
    }
    check_blob_refs(&profile)?;
    Ok(profile)
}

/// Memory-maps and reads a `.wst` file.
pub fn open(path: &Path) -> Result<Profile, WstError> {
    let file = crate::open::open_file(path)?;
    // SAFETY: the map is read-only; wavescope never modifies trace files in place (writes go
    // to a temp file that is renamed), so the mapped bytes do not change under us.
    let map = unsafe { memmap2::Mmap::map(&file)? };
    read_store(Arc::new(BlobStore::Mapped(map)))
}

/// Reads a `.wst` front to back from a stream (pipes, network), copying blobs into memory.
pub fn read_from<R: Read>(mut r: R) -> Result<Profile, WstError> {
    let mut head = [0u8; HEADER_LEN];
    let got = read_full(&mut r, &mut head)?;
    let hdr = parse_header(&head[..got], got as u64)?;
    let meta_len = usize::try_from(hdr.meta_len).map_err(|_| WstError::Meta {
        offset: 16,
        why: "metadata length too large".into(),
    })?;
    let mut gz = Vec::new();
    let got = (&mut r).take(hdr.meta_len).read_to_end(&mut gz)?;
    if got < meta_len {
        return Err(WstError::Truncated {
            what: "metadata",
            offset: HEADER_LEN as u64,
            needed: hdr.meta_len,
            have: got as u64,
        });
    }
    let meta = decode_meta(&gz, hdr.blob_count)?;
    let meta_end = HEADER_LEN as u64 + hdr.meta_len;
    let mut pos = meta_end;
    let data_start = align(meta_end);
    let mut profile = meta.profile;
    for (index, e) in meta.blobs.iter().enumerate() {
        let start = data_start
            .checked_add(e.offset)
            .filter(|&s| s >= pos)
            .ok_or(WstError::Meta {
                offset: HEADER_LEN as u64,
                why: format!("blob {index} overlaps the previous one"),
            })?;
        io::copy(&mut (&mut r).take(start - pos), &mut io::sink())?;
        let mut buf = Vec::new();
        let got = (&mut r).take(e.len).read_to_end(&mut buf)?;
        if (got as u64) < e.len {
            return Err(WstError::Truncated {
                what: "blob",
                offset: start,
                needed: e.len,
                have: got as u64,
            });
        }
        pos = start + e.len;
        profile.blobs.push(Blob::from_vec(buf));
        let _ = index;
    }
    check_blob_refs(&profile)?;
    Ok(profile)
}

fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Every `BlobId` in the model must name a stored blob.
fn check_blob_refs(p: &Profile) -> Result<(), WstError> {
    let n = p.blobs.len() as u32;
    let ids = p
        .programs
        .iter()
        .filter_map(|x| x.elf)
        .chain(p.sqtt.iter().map(|s| s.blob))
        .chain(p.pmc.iter().map(|s| s.blob));
    for id in ids {
        if id.0 >= n {
            return Err(WstError::Meta {
                offset: HEADER_LEN as u64,
                why: format!("blob id {} out of range ({n} blobs)", id.0),
            });
        }
    }
    let nd = p.devices.len() as u32;
    let devs = p
        .ranges
        .iter()
        .map(|r| r.device)
        .chain(p.points.iter().map(|r| r.device))
        .chain(p.programs.iter().map(|r| r.device))
        .chain(p.kernels.iter().map(|r| r.device))
        .chain(p.sqtt.iter().map(|r| r.device))
        .chain(p.pmc.iter().map(|r| r.device));
    for d in devs {
        if d >= nd {
            return Err(WstError::Meta {
                offset: HEADER_LEN as u64,
                why: format!("device index {d} out of range ({nd} devices)"),
            });
        }
    }
    Ok(())
}
