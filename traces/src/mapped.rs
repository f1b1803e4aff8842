//! The crate's only `unsafe`: read-only file mappings (the rest of `traces` denies
//! `unsafe_code`). Trace files are large and read at random, so they are mapped, not read.
#![allow(unsafe_code)]

use std::fs::File;

/// Maps `file` read-only; `None` for an empty file (mmap of length 0 fails).
pub(crate) fn map(file: &File) -> std::io::Result<Option<memmap2::Mmap>> {
    if file.metadata()?.len() == 0 {
        return Ok(None);
    }
    // SAFETY: a read-only private mapping that wavescope never writes through (its own writes
    // go to a temp file renamed over the target); the one hazard, another process truncating
    // or rewriting the file while it is mapped, is accepted as for every mmap-based reader.
    unsafe { memmap2::Mmap::map(file) }.map(Some)
}

/// Lets the kernel drop the pages of `map[..end]` (rounded down to a page); they are re-read
/// from the file if touched again.
pub(crate) fn release_before(map: &memmap2::Mmap, end: usize) {
    release_range(map, 0, end);
}

/// Lets the kernel drop the whole pages inside `map[start..end]` (a partial page at either
/// end stays: it may hold bytes of a neighbouring blob or table still in use): for bytes read
/// once (a decoded SQTT prefix, a CRC pass over an index table) that need not stay resident.
pub(crate) fn release_range(map: &memmap2::Mmap, start: usize, end: usize) {
    #[cfg(unix)]
    {
        let start = start.saturating_add(4095) & !4095;
        let end = end.min(map.len()) & !4095;
        if end > start {
            // SAFETY: DONTNEED on a private, never-written file mapping only drops clean pages;
            // later reads fault them back in from the file with the same contents.
            let _ = unsafe {
                map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
            };
        }
    }
    #[cfg(not(unix))]
    let _ = (map, start, end);
}
