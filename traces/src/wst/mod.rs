//! wavescope's own trace file, `.wst`.
//!
//! Container version 2 (written since the on-disk structs became their own, [`disk`]):
//! ```text
//! 0   [u8; 8]  magic  89 'W' 'S' 'T' 0D 0A 1A 0A   (PNG-style: catches text-mode mangling)
//! 8   u32      container version (2)
//! 12  u32      flags (0)
//! 16  u32      section count N
//! 20  u32      section entry size (32; a reader skips bytes of longer entries it does not know)
//! 24  u64      0
//! 32  N section entries, in file order:
//!       [u8;4] tag   u32 schema   u32 flags (bit 0: required)   u32 0   u64 offset   u64 len
//! ..  the sections, each at a multiple of 64 (offsets are absolute, in increasing order)
//! ```
//! Sections of this release: `META` (schema 1: gzip(postcard([`disk::v1::Meta`])), the model
//! without blobs plus the blob table) and `BLOB` (the raw blobs, each at a multiple of 64 from the
//! section's start). A later release adds a section (an analysis index, ...) under a new tag:
//! readers skip sections they do not know unless marked required, and refuse a known section whose
//! schema is newer than theirs. A change of the model goes into a new metadata schema (`disk::v2`).
//!
//! Container version 1 (the first release; still read, never written):
//! ```text
//! 0   magic   8 u32 version (1)   12 u32 flags (0)   16 u64 meta_len   24 u64 blob_count
//! 32  gzip(postcard(disk::v1::Meta)), zero padding to 64, then the blobs (offsets relative to there)
//! ```
//! Blobs are stored raw so SQTT streams cost no compression time and can be located (and
//! memory-mapped) without inflating anything; the file is still readable front to back as a
//! stream. Writes go to a temp file in the target directory, are fsynced and renamed over the
//! target, so a crash mid-write never destroys an earlier capture.

pub mod disk;
pub mod index;

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;

use flate2::read::GzDecoder;
use flate2::write::GzEncoder;

use crate::bytes::Reader;
use crate::model::{Blob, BlobStore, Profile};
use disk::v1;

pub const MAGIC: [u8; 8] = *b"\x89WST\r\n\x1a\n";
/// The container version this build writes.
pub const VERSION: u32 = 2;
/// The oldest container version this build reads.
pub const OLDEST_VERSION: u32 = 1;
const HEADER_LEN: usize = 32;
const ENTRY_LEN: usize = 32;
const ALIGN: u64 = 64;
/// Largest inflated metadata accepted (guards against gzip bombs).
const MAX_META: u64 = 1 << 32;
/// More sections than any sane file has (bounds the table read from a stream).
const MAX_SECTIONS: u32 = 1 << 16;

/// A section tag.
pub type Tag = [u8; 4];
pub const TAG_META: Tag = *b"META";
pub const TAG_BLOB: Tag = *b"BLOB";
/// The analysis index ([`index`]): optional, after the blobs; readers that do not know it skip it.
pub const TAG_INDEX: Tag = *b"INDX";
/// Newest schema of each section this build reads.
const META_SCHEMA: u32 = 1;
const BLOB_SCHEMA: u32 = 1;
const INDEX_SCHEMA: u32 = 1;
/// Section flag: a reader that does not know the tag must refuse the file.
pub const SECTION_REQUIRED: u32 = 1;

fn tag_str(t: &Tag) -> String {
    t.iter()
        .map(|&b| {
            if b.is_ascii_graphic() {
                char::from(b)
            } else {
                '?'
            }
        })
        .collect()
}

#[derive(Debug, thiserror::Error)]
pub enum WstError {
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
    #[error("not a .wst file (bad magic at offset 0)")]
    BadMagic,
    #[error(".wst version {0} at offset 8 is not supported (this build reads versions {OLDEST_VERSION} to {VERSION}; a newer wavescope wrote this file)")]
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
    #[error(".wst section table entry at offset {offset} is corrupt: {why}")]
    Section { offset: u64, why: String },
    #[error(".wst section '{tag}' (entry at offset {offset}) is required to read this file but unknown to this build (a newer wavescope wrote it)")]
    UnknownRequired { tag: String, offset: u64 },
    #[error(".wst section '{tag}' (entry at offset {offset}) has schema {schema}; this build reads up to {supported} (a newer wavescope wrote it)")]
    Schema {
        tag: String,
        offset: u64,
        schema: u32,
        supported: u32,
    },
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

impl From<le_reader::Error> for WstError {
    fn from(e: le_reader::Error) -> Self {
        WstError::Truncated {
            what: e.what,
            offset: e.offset,
            needed: e.needed,
            have: e.available,
        }
    }
}

fn align(x: u64) -> u64 {
    x.div_ceil(ALIGN) * ALIGN
}

/// One entry of the section table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section {
    pub tag: Tag,
    pub schema: u32,
    pub flags: u32,
    /// Absolute.
    pub offset: u64,
    pub len: u64,
    /// Where its table entry is (for error messages).
    pub entry_offset: u64,
}

/// Serializes `profile` into `w` (blobs included), container version 2.
pub fn write_to<W: Write>(profile: &Profile, w: W) -> Result<(), WstError> {
    write_to_indexed(profile, None, w)
}

/// [`write_to`] plus an analysis index section ([`index::build`]'s records) after the blobs.
pub fn write_to_indexed<W: Write>(
    profile: &Profile,
    idx: Option<&[index::KernelRecord]>,
    mut w: W,
) -> Result<(), WstError> {
    let (meta, gz) = encode_meta(profile)?;
    // The index names the metadata it was computed for (its CRC), so it is encoded after it.
    let idx_bytes = idx.map(|k| index::encode(k, &gz));
    let idx_len = idx_bytes.as_ref().map(|b| b.len() as u64);
    write_head_and_blobs(profile, &meta, &gz, idx_len, &mut w)?;
    if let Some(b) = &idx_bytes {
        w.write_all(b)?;
    }
    w.flush()?;
    Ok(())
}

/// The metadata and its gzipped postcard bytes (the META section).
fn encode_meta(profile: &Profile) -> Result<(v1::Meta, Vec<u8>), WstError> {
    let mut entries = Vec::with_capacity(profile.blobs.len());
    let mut off = 0u64;
    for b in &profile.blobs {
        off = align(off);
        entries.push(v1::BlobEntry {
            offset: off,
            len: b.len() as u64,
        });
        off += b.len() as u64;
    }
    let meta = v1::Meta {
        profile: v1::Profile::from(profile),
        blobs: entries,
    };
    let raw = postcard::to_stdvec(&meta).map_err(|e| WstError::Meta {
        offset: HEADER_LEN as u64,
        why: e.to_string(),
    })?;
    let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&raw)?;
    let gz = gz.finish()?;
    Ok((meta, gz))
}

/// Absolute offset of the index section's `len` field in the section table (the third entry).
const INDEX_ENTRY_LEN_AT: u64 = (HEADER_LEN + 2 * ENTRY_LEN + 24) as u64;

/// Writes the header, section table, META and BLOB sections and, when an index of `idx_len`
/// bytes follows, the padding up to it; the index section is the caller's to write next.
fn write_head_and_blobs<W: Write>(
    profile: &Profile,
    meta: &v1::Meta,
    gz: &[u8],
    idx_len: Option<u64>,
    w: &mut W,
) -> Result<(), WstError> {
    let blob_len = meta.blobs.last().map_or(0, |e| e.offset + e.len);
    let sections = 2 + usize::from(idx_len.is_some());
    let sections_start = align((HEADER_LEN + sections * ENTRY_LEN) as u64);
    let meta_off = sections_start;
    let blob_off = align(meta_off + gz.len() as u64);
    let idx_off = align(blob_off + blob_len);
    let mut table = vec![
        (
            TAG_META,
            META_SCHEMA,
            SECTION_REQUIRED,
            meta_off,
            gz.len() as u64,
        ),
        (TAG_BLOB, BLOB_SCHEMA, SECTION_REQUIRED, blob_off, blob_len),
    ];
    if let Some(len) = idx_len {
        // Not required: a reader without index support opens the file and recomputes.
        table.push((TAG_INDEX, INDEX_SCHEMA, 0, idx_off, len));
    }
    let mut head = Vec::with_capacity(sections_start as usize);
    head.extend_from_slice(&MAGIC);
    head.extend_from_slice(&VERSION.to_le_bytes());
    head.extend_from_slice(&0u32.to_le_bytes());
    head.extend_from_slice(&(table.len() as u32).to_le_bytes());
    head.extend_from_slice(&(ENTRY_LEN as u32).to_le_bytes());
    head.extend_from_slice(&0u64.to_le_bytes());
    for (tag, schema, flags, offset, len) in table {
        head.extend_from_slice(&tag);
        head.extend_from_slice(&schema.to_le_bytes());
        head.extend_from_slice(&flags.to_le_bytes());
        head.extend_from_slice(&0u32.to_le_bytes());
        head.extend_from_slice(&offset.to_le_bytes());
        head.extend_from_slice(&len.to_le_bytes());
    }
    head.resize(sections_start as usize, 0);
    w.write_all(&head)?;
    w.write_all(gz)?;
    let zeros = [0u8; ALIGN as usize];
    let meta_end = meta_off + gz.len() as u64;
    w.write_all(&zeros[..(blob_off - meta_end) as usize])?;
    let mut pos = 0u64;
    for (b, e) in profile.blobs.iter().zip(&meta.blobs) {
        w.write_all(&zeros[..(e.offset - pos) as usize])?;
        w.write_all(b.as_bytes())?;
        // Copied once: the pages of a blob mapped from the source file need not stay
        // resident (at 256 MiB of SQTT they were most of `wavescope index`'s peak).
        b.release_prefix(b.len());
        pos = e.offset + e.len;
    }
    if idx_len.is_some() {
        w.write_all(&zeros[..(idx_off - blob_off - pos) as usize])?;
    }
    Ok(())
}

/// Writes `profile` to `path` atomically with an analysis index computed while writing: each
/// kernel is analysed, its index tables streamed to the file and its analysis dropped before
/// the next ([`index::build_into`]), so memory holds one kernel's analysis and never the
/// encoded index. The file is the one [`write_file_indexed`] with [`index::build`] writes.
/// Returns the number of kernels indexed.
pub fn write_file_index_streamed(
    profile: &Profile,
    path: &Path,
    progress: &dyn Fn(usize, usize),
) -> Result<usize, WstError> {
    let mut kernels = 0;
    atomic_write(path, |file| {
        let (meta, gz) = encode_meta(profile)?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        // The index length goes into the section table once known.
        write_head_and_blobs(profile, &meta, &gz, Some(0), &mut w)?;
        let mut iw = index::IndexWriter::new(w, &gz, index::kernel_count(profile))?;
        index::build_into(&mut iw, profile, progress)?;
        kernels = iw.kernels();
        let (mut w, len) = iw.finish()?;
        w.seek(SeekFrom::Start(INDEX_ENTRY_LEN_AT))?;
        w.write_all(&len.to_le_bytes())?;
        w.flush()?;
        Ok(())
    })?;
    Ok(kernels)
}

/// Writes `profile` to `path` atomically: temp file in the same directory, fsync, rename,
/// fsync of the directory.
pub fn write_file(profile: &Profile, path: &Path) -> Result<(), WstError> {
    write_file_indexed(profile, None, path)
}

/// [`write_file`] with an analysis index ([`index::build`]).
pub fn write_file_indexed(
    profile: &Profile,
    idx: Option<&[index::KernelRecord]>,
    path: &Path,
) -> Result<(), WstError> {
    atomic_write(path, |file| {
        let mut w = BufWriter::with_capacity(1 << 20, file);
        write_to_indexed(profile, idx, &mut w)?;
        w.flush()?;
        Ok(())
    })
}

/// Runs `write` on a temp file in `path`'s directory, then fsyncs it and renames it over
/// `path` (and fsyncs the directory), so a failed or interrupted write never destroys an
/// earlier file.
fn atomic_write(
    path: &Path,
    write: impl FnOnce(&File) -> Result<(), WstError>,
) -> Result<(), WstError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let tmp = crate::open::output_tempfile(path, ".wst-")?;
    write(tmp.as_file())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| WstError::Io(e.error))?;
    #[cfg(unix)]
    if let Ok(d) = File::open(&dir) {
        // Make the rename itself durable.
        let _ = d.sync_all();
    }
    Ok(())
}

/// Where the metadata and the blob area are, whatever the container version.
#[derive(Debug)]
struct Layout {
    meta_offset: u64,
    meta_len: u64,
    /// Blob table entries are relative to this.
    blob_offset: u64,
    /// Bytes of the blob area, when the container says (version 1 does not).
    blob_len: Option<u64>,
    /// Version 1 states the blob count in the header.
    blob_count: Option<u64>,
    sections: Vec<Section>,
}

/// Checks magic and version; returns the version.
fn parse_magic_version(h: &[u8]) -> Result<u32, WstError> {
    if h.len() < 8 || h[..8] != MAGIC {
        if h.len() < 8 && MAGIC.starts_with(h) {
            return Err(WstError::Truncated {
                what: "header",
                offset: 0,
                needed: HEADER_LEN as u64,
                have: h.len() as u64,
            });
        }
        return Err(WstError::BadMagic);
    }
    let version = Reader::new(h).u32_at(8, "container version")?;
    if !(OLDEST_VERSION..=VERSION).contains(&version) {
        return Err(WstError::Version(version));
    }
    Ok(version)
}

/// Parses the header (and, for version 2, the section table) from the file's first bytes.
/// `head` holds at least the header and table when the file has them.
fn parse_layout(head: &[u8]) -> Result<Layout, WstError> {
    let version = parse_magic_version(head)?;
    let r = Reader::new(head);
    r.slice_at(0, HEADER_LEN, "header")?;
    if version == 1 {
        let meta_len = r.u64_at(16, "metadata length")?;
        let blob_count = r.u64_at(24, "blob count")?;
        let meta_end = (HEADER_LEN as u64)
            .checked_add(meta_len)
            .ok_or(WstError::Meta {
                offset: 16,
                why: format!("metadata length {meta_len} overflows"),
            })?;
        return Ok(Layout {
            meta_offset: HEADER_LEN as u64,
            meta_len,
            blob_offset: align(meta_end),
            blob_len: None,
            blob_count: Some(blob_count),
            sections: Vec::new(),
        });
    }
    let count = r.u32_at(16, "section count")?;
    let entry_len = r.u32_at(20, "section entry size")? as usize;
    if count > MAX_SECTIONS || entry_len < ENTRY_LEN {
        return Err(WstError::Section {
            offset: 16,
            why: format!("{count} sections of {entry_len} bytes"),
        });
    }
    let mut table = r.sub(HEADER_LEN, count as usize * entry_len, "section table")?;
    let mut sections = Vec::with_capacity(count as usize);
    let mut prev_end = (HEADER_LEN + count as usize * entry_len) as u64;
    for _ in 0..count {
        let mut e = table.split(entry_len, "section entry")?;
        let entry_offset = e.offset();
        let tag = e.array::<4>("section tag")?;
        let schema = e.u32("section schema")?;
        let flags = e.u32("section flags")?;
        e.skip(4, "section reserved")?;
        let offset = e.u64("section offset")?;
        let len = e.u64("section length")?;
        let end = offset.checked_add(len);
        if offset < prev_end || end.is_none() {
            return Err(WstError::Section {
                offset: entry_offset,
                why: format!(
                    "section '{}' at {offset} (+{len}) overlaps what precedes it (ends at {prev_end})",
                    tag_str(&tag)
                ),
            });
        }
        prev_end = end.unwrap_or(offset);
        sections.push(Section {
            tag,
            schema,
            flags,
            offset,
            len,
            entry_offset,
        });
    }
    let mut meta = None;
    let mut blob = None;
    for s in &sections {
        let (slot, supported) = match s.tag {
            TAG_META => (&mut meta, META_SCHEMA),
            TAG_BLOB => (&mut blob, BLOB_SCHEMA),
            _ if s.flags & SECTION_REQUIRED != 0 => {
                return Err(WstError::UnknownRequired {
                    tag: tag_str(&s.tag),
                    offset: s.entry_offset,
                })
            }
            _ => continue,
        };
        if s.schema == 0 || s.schema > supported {
            return Err(WstError::Schema {
                tag: tag_str(&s.tag),
                offset: s.entry_offset,
                schema: s.schema,
                supported,
            });
        }
        if slot.replace(*s).is_some() {
            return Err(WstError::Section {
                offset: s.entry_offset,
                why: format!("second '{}' section", tag_str(&s.tag)),
            });
        }
    }
    let missing = |what: &str| WstError::Section {
        offset: HEADER_LEN as u64,
        why: format!("no {what} section"),
    };
    let meta = meta.ok_or_else(|| missing("META"))?;
    let blob = blob.ok_or_else(|| missing("BLOB"))?;
    Ok(Layout {
        meta_offset: meta.offset,
        meta_len: meta.len,
        blob_offset: blob.offset,
        blob_len: Some(blob.len),
        blob_count: None,
        sections,
    })
}

/// Bytes of the header and section table, read from the first `HEADER_LEN` bytes.
fn head_len(h: &[u8]) -> Result<usize, WstError> {
    if parse_magic_version(h)? == 1 {
        return Ok(HEADER_LEN);
    }
    let r = Reader::new(h);
    let count = r.u32_at(16, "section count")?;
    let entry_len = r.u32_at(20, "section entry size")?;
    if count > MAX_SECTIONS || (entry_len as usize) < ENTRY_LEN || entry_len > 4096 {
        return Err(WstError::Section {
            offset: 16,
            why: format!("{count} sections of {entry_len} bytes"),
        });
    }
    Ok(HEADER_LEN + count as usize * entry_len as usize)
}

fn decode_meta(gz: &[u8], layout: &Layout) -> Result<v1::Meta, WstError> {
    let offset = layout.meta_offset;
    let mut raw = Vec::new();
    GzDecoder::new(gz)
        .take(MAX_META)
        .read_to_end(&mut raw)
        .map_err(|e| WstError::Meta {
            offset,
            why: format!("gzip: {e}"),
        })?;
    let meta: v1::Meta = postcard::from_bytes(&raw).map_err(|e| WstError::Meta {
        offset,
        why: format!("decode: {e}"),
    })?;
    if let Some(n) = layout.blob_count.filter(|&n| n != meta.blobs.len() as u64) {
        return Err(WstError::Meta {
            offset,
            why: format!(
                "blob table has {} entries, header says {n}",
                meta.blobs.len()
            ),
        });
    }
    if let Some(area) = layout.blob_len {
        for (index, e) in meta.blobs.iter().enumerate() {
            if e.offset.checked_add(e.len).is_none_or(|end| end > area) {
                return Err(WstError::BlobRange {
                    index,
                    offset: layout.blob_offset.saturating_add(e.offset),
                    len: e.len,
                    file_len: layout.blob_offset.saturating_add(area),
                });
            }
        }
    }
    Ok(meta)
}

/// The sections of a `.wst` held in memory (empty for container version 1), for tools and for
/// readers of sections this module does not interpret.
pub fn sections(data: &[u8]) -> Result<Vec<Section>, WstError> {
    Ok(parse_layout(data)?.sections)
}

/// Reads a `.wst` held in `store` (usually a memory map); blobs stay slices of it. Only the
/// metadata is inflated, so this is fast regardless of the blob volume.
pub fn read_store(store: Arc<BlobStore>) -> Result<Profile, WstError> {
    let data = store.bytes();
    let file_len = data.len() as u64;
    let layout = parse_layout(data)?;
    let file = Reader::new(data);
    let meta_bytes = usize::try_from(layout.meta_offset)
        .ok()
        .zip(usize::try_from(layout.meta_len).ok())
        .and_then(|(o, l)| file.slice_at(o, l, "metadata").ok())
        .ok_or(WstError::Truncated {
            what: "metadata",
            offset: layout.meta_offset,
            needed: layout.meta_len,
            have: file_len.saturating_sub(layout.meta_offset),
        })?;
    let meta = decode_meta(meta_bytes, &layout)?;
    let data_start = layout.blob_offset;
    let mut profile = Profile::from(meta.profile);
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
    check_blob_refs(&profile, &layout)?;
    Ok(profile)
}

/// The analysis index of a `.wst` held in memory (usually a memory map): `Ok(None)` when the
/// file has none (written before indexes, or without one); `Err` when it has one this build
/// cannot use (corrupt, another index version or schema, written for other metadata): the
/// caller warns and recomputes.
pub fn read_index(data: &[u8]) -> Result<Option<index::IndexView<'_>>, index::IndexError> {
    let layout = parse_layout(data).map_err(|e| index::IndexError {
        offset: 0,
        why: format!("the container: {e}"),
    })?;
    let Some(s) = layout.sections.iter().find(|s| s.tag == TAG_INDEX) else {
        return Ok(None);
    };
    if s.schema != INDEX_SCHEMA {
        return Err(index::IndexError {
            offset: s.entry_offset,
            why: format!("schema {}, this build reads {INDEX_SCHEMA}", s.schema),
        });
    }
    let r = Reader::new(data);
    let slice = |o: u64, l: u64, what| {
        usize::try_from(o)
            .ok()
            .zip(usize::try_from(l).ok())
            .and_then(|(o, l)| r.slice_at(o, l, what).ok())
            .ok_or(index::IndexError {
                offset: o,
                why: format!("{what} ({l} bytes) lies outside the file"),
            })
    };
    let meta = slice(layout.meta_offset, layout.meta_len, "metadata")?;
    let sec = slice(s.offset, s.len, "index section")?;
    index::IndexView::parse(sec, s.offset, meta).map(Some)
}

/// Memory-maps and reads a `.wst` file.
pub fn open(path: &Path) -> Result<Profile, WstError> {
    read_store(crate::open::map_file(path)?)
}

/// Reads a `.wst` front to back from a stream (pipes, network), copying blobs into memory.
pub fn read_from<R: Read>(mut r: R) -> Result<Profile, WstError> {
    let mut head = vec![0u8; HEADER_LEN];
    let got = read_full(&mut r, &mut head)?;
    head.truncate(got);
    let want = head_len(&head)?;
    if want > head.len() {
        let mut rest = vec![0u8; want - head.len()];
        let got = read_full(&mut r, &mut rest)?;
        head.extend_from_slice(&rest[..got]);
    }
    let layout = parse_layout(&head)?;
    let mut pos = head.len() as u64;
    let skip_to = |r: &mut R, pos: &mut u64, to: u64, what: &'static str| {
        if to < *pos {
            return Err(WstError::Meta {
                offset: to,
                why: format!("{what} overlaps what precedes it"),
            });
        }
        let skipped = io::copy(&mut r.take(to - *pos), &mut io::sink())?;
        *pos += skipped;
        if *pos < to {
            return Err(WstError::Truncated {
                what,
                offset: to,
                needed: 0,
                have: *pos,
            });
        }
        Ok(())
    };
    skip_to(&mut r, &mut pos, layout.meta_offset, "metadata")?;
    let mut gz = Vec::new();
    let got = (&mut r).take(layout.meta_len).read_to_end(&mut gz)? as u64;
    pos += got;
    if got < layout.meta_len {
        return Err(WstError::Truncated {
            what: "metadata",
            offset: layout.meta_offset,
            needed: layout.meta_len,
            have: got,
        });
    }
    let meta = decode_meta(&gz, &layout)?;
    let data_start = layout.blob_offset;
    let mut profile = Profile::from(meta.profile);
    for (index, e) in meta.blobs.iter().enumerate() {
        let start = data_start
            .checked_add(e.offset)
            .filter(|&s| s >= pos)
            .ok_or(WstError::Meta {
                offset: layout.meta_offset,
                why: format!("blob {index} overlaps the previous one"),
            })?;
        skip_to(&mut r, &mut pos, start, "blob")?;
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
    }
    check_blob_refs(&profile, &layout)?;
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
fn check_blob_refs(p: &Profile, layout: &Layout) -> Result<(), WstError> {
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
                offset: layout.meta_offset,
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
                offset: layout.meta_offset,
                why: format!("device index {d} out of range ({nd} devices)"),
            });
        }
    }
    Ok(())
}
