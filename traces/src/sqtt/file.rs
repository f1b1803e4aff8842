//! SQTT blobs on disk: memory-mapped, decoded in place, with the pages already decoded handed
//! back to the kernel so that a multi-GiB capture does not stay resident.

use super::waves::{analyze_with_progress, AnalyzeOptions, BlobAnalysis, DecodeError};
use crate::target::GfxTarget;
use std::path::{Path, PathBuf};

/// Why a blob file could not be read or decoded.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Decode { path: PathBuf, source: DecodeError },
}

/// A memory-mapped SQTT blob.
pub struct SqttFile {
    path: PathBuf,
    map: Option<memmap2::Mmap>,
}

/// Release decoded pages every this many bytes.
const RELEASE_EVERY: usize = 64 << 20;

impl SqttFile {
    pub fn open(path: &Path) -> Result<Self, FileError> {
        let io = |source| FileError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = crate::open::open_file(path).map_err(io)?;
        let map = crate::mapped::map(&file).map_err(io)?;
        #[cfg(unix)]
        if let Some(map) = &map {
            let _ = map.advise(memmap2::Advice::Sequential);
        }
        Ok(SqttFile {
            path: path.to_path_buf(),
            map,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }

    /// Let the kernel drop the pages of `bytes[..end]` (they are re-read from the file if
    /// touched again).
    pub fn release_before(&self, end: usize) {
        if let Some(map) = &self.map {
            crate::mapped::release_before(map, end);
        }
    }

    /// Analyse the blob, releasing its pages behind the decoder.
    pub fn analyze(
        &self,
        target: Option<GfxTarget>,
        opts: AnalyzeOptions,
    ) -> Result<BlobAnalysis, FileError> {
        self.analyze_with_progress(target, opts, &mut |_| {})
    }

    /// [`SqttFile::analyze`], also calling `progress` with the bytes decoded so far (for a
    /// progress bar).
    pub fn analyze_with_progress(
        &self,
        target: Option<GfxTarget>,
        opts: AnalyzeOptions,
        progress: &mut dyn FnMut(usize),
    ) -> Result<BlobAnalysis, FileError> {
        let mut next = RELEASE_EVERY;
        analyze_with_progress(self.bytes(), target, opts, &mut |consumed| {
            progress(consumed);
            if consumed >= next {
                self.release_before(consumed);
                next = consumed + RELEASE_EVERY;
            }
        })
        .map_err(|source| FileError::Decode {
            path: self.path.clone(),
            source,
        })
    }
}
