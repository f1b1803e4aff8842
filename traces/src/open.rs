//! Opening any trace file by its magic: tinygrad pickle, `.wst` or `.rgp` -> [`Profile`].

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use crate::model::{BlobStore, Profile};
use crate::{rgp, tinygrad, wst};

/// The file formats wavescope reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    TinygradPickle,
    Wst,
    Rgp,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::TinygradPickle => "tinygrad-pickle",
            Format::Wst => "wst",
            Format::Rgp => "rgp",
        }
    }

    /// Recognises a format from the first bytes of a file.
    pub fn detect(head: &[u8]) -> Option<Format> {
        if head.starts_with(&wst::MAGIC) {
            return Some(Format::Wst);
        }
        if head.starts_with(&rgp::FILE_MAGIC.to_le_bytes()) {
            return Some(Format::Rgp);
        }
        // Protocol 2+ pickles start with PROTO; protocol 0/1 lists start with MARK or EMPTY_LIST.
        match head {
            [0x80, 2..=5, ..] | [b'(' | b']', ..] => Some(Format::TinygradPickle),
            _ => None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error(
        "{path}: not a tinygrad profile pickle, .wst or .rgp file (unrecognised magic at offset 0)"
    )]
    UnknownFormat { path: String },
    #[error("{path}: {error}")]
    Pickle {
        path: String,
        error: tinygrad::TinygradError,
    },
    #[error("{path}: {error}")]
    Wst { path: String, error: wst::WstError },
    #[error("{path}: {error}")]
    Rgp { path: String, error: rgp::RgpError },
}

/// Opens a file to read. A directory is refused here, with "is a directory": opening one
/// succeeds on Linux and only the later mmap fails, with the unhelpful "No such device".
pub fn open_file(path: &Path) -> std::io::Result<File> {
    let file = File::open(path)?;
    if file.metadata()?.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "is a directory",
        ));
    }
    Ok(file)
}

/// The temporary file an atomic write of `path` goes to (then renamed over `path`): in the same
/// directory, created with mode 0666 under the process umask like any new file, not tempfile's
/// private 0600, so what `capture`/`export`/`convert` write is readable as usual.
pub fn output_tempfile(path: &Path, prefix: &str) -> std::io::Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let mut b = tempfile::Builder::new();
    b.prefix(prefix).suffix(".tmp");
    #[cfg(unix)]
    b.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    b.tempfile_in(dir)
}

/// A file mapped into memory.
pub fn map_file(path: &Path) -> std::io::Result<Arc<BlobStore>> {
    let file = open_file(path)?;
    Ok(Arc::new(match crate::mapped::map(&file)? {
        Some(map) => BlobStore::Mapped(map),
        None => BlobStore::Owned(Vec::new()),
    }))
}

/// Reads a profile from bytes in memory (already detected or detectable by magic).
pub fn open_store(store: Arc<BlobStore>, name: &str) -> Result<(Format, Profile), OpenError> {
    let path = name.to_string();
    let format = Format::detect(store.bytes())
        .ok_or_else(|| OpenError::UnknownFormat { path: path.clone() })?;
    let profile = match format {
        Format::TinygradPickle => {
            tinygrad::import(store, name).map_err(|error| OpenError::Pickle { path, error })?
        }
        Format::Wst => wst::read_store(store).map_err(|error| OpenError::Wst { path, error })?,
        Format::Rgp => rgp::import(store, name).map_err(|error| OpenError::Rgp { path, error })?,
    };
    Ok((format, profile))
}

/// Opens any supported trace file.
pub fn open_path(path: &Path) -> Result<(Format, Profile), OpenError> {
    let name = path.display().to_string();
    let store = map_file(path).map_err(|error| OpenError::Io {
        path: name.clone(),
        error,
    })?;
    open_store(store, &name)
}

/// What a file holds (`wavescope info --json`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct FileInfo {
    pub path: String,
    pub format: String,
    pub devices: Vec<DeviceInfo>,
    pub kernels: Vec<KernelInfo>,
    pub programs: Vec<ProgramInfo>,
    pub sqtt: Vec<SqttInfo>,
    pub pmc: Vec<PmcInfo>,
    /// Number of items of each model collection.
    pub counts: std::collections::BTreeMap<String, usize>,
    /// Pickles: top-level events per class name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_event_counts: Option<std::collections::BTreeMap<String, u64>>,
    /// `.rgp`: the chunk list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunks: Option<Vec<rgp::ChunkInfo>>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct DeviceInfo {
    pub name: String,
    pub process: u32,
    pub declared: bool,
    pub target: Option<String>,
    /// Device clock + offset = common clock, in µs (exact decimal).
    pub clock_offset_us: String,
    pub props: std::collections::BTreeMap<String, i64>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct KernelInfo {
    pub name: String,
    pub device: String,
    pub kern: Option<i64>,
    pub exec_tag: Option<i64>,
    pub start_us: String,
    pub end_us: Option<String>,
    pub gpu_start: Option<i128>,
    pub gpu_end: Option<i128>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ProgramInfo {
    pub name: String,
    pub device: String,
    pub tag: Option<i64>,
    pub base: Option<u64>,
    pub bytes: usize,
    pub sha256: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct SqttInfo {
    pub device: String,
    pub kern: i64,
    pub exec_tag: Option<i64>,
    pub se: u32,
    /// Multi-XCC devices only: the XCC of stream `se` and the SE within it
    /// ([`crate::model::SeLayout`]); absent on single-XCC devices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub xcc: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub xcc_se: Option<u32>,
    pub itrace: bool,
    pub bytes: usize,
    pub sha256: String,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct PmcInfo {
    pub device: String,
    pub kern: i64,
    pub exec_tag: Option<i64>,
    pub counters: Vec<String>,
    /// Each counter's total over its instances (same order as `counters`).
    pub totals: Vec<u64>,
    pub bytes: usize,
}

pub fn sha256_hex(b: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// Describes a profile read from `data` (the file's bytes, for format-specific details).
pub fn describe(path: &str, format: Format, profile: &Profile, data: &[u8]) -> FileInfo {
    describe_with(path, format, profile, data, &|_, _| {})
}

/// [`describe`], calling `progress` with (SQTT streams hashed, total): hashing every stream is
/// the long part at real sizes.
pub fn describe_with(
    path: &str,
    format: Format,
    profile: &Profile,
    data: &[u8],
    progress: &dyn Fn(usize, usize),
) -> FileInfo {
    let dev_name = |d: u32| {
        profile
            .devices
            .get(d as usize)
            .map(|x| x.name.clone())
            .unwrap_or_default()
    };
    let mut counts = std::collections::BTreeMap::new();
    counts.insert("devices".into(), profile.devices.len());
    counts.insert("ranges".into(), profile.ranges.len());
    counts.insert("points".into(), profile.points.len());
    counts.insert("programs".into(), profile.programs.len());
    counts.insert("kernels".into(), profile.kernels.len());
    counts.insert("sqtt".into(), profile.sqtt.len());
    counts.insert("pmc".into(), profile.pmc.len());
    counts.insert("graphs".into(), profile.graphs.len());
    counts.insert("counters".into(), profile.counters.len());
    counts.insert("generic".into(), profile.generic.len());
    FileInfo {
        path: path.to_string(),
        format: format.name().to_string(),
        devices: profile
            .devices
            .iter()
            .map(|d| DeviceInfo {
                name: d.name.clone(),
                process: d.process,
                declared: d.declared,
                target: d.target().map(|t| t.to_string()),
                clock_offset_us: d.clock_offset.to_string(),
                props: d.props.clone(),
            })
            .collect(),
        kernels: profile
            .kernels
            .iter()
            .map(|k| KernelInfo {
                name: k.name.clone(),
                device: dev_name(k.device),
                kern: k.kern,
                exec_tag: k.exec_tag,
                start_us: k.start.to_string(),
                end_us: k.end.map(|e| e.to_string()),
                gpu_start: k.gpu_start,
                gpu_end: k.gpu_end,
            })
            .collect(),
        programs: profile
            .programs
            .iter()
            .map(|p| ProgramInfo {
                name: p.name.clone(),
                device: dev_name(p.device),
                tag: p.tag,
                base: p.base,
                bytes: p.elf.map_or(0, |e| profile.blob(e).len()),
                sha256: p.elf.map(|e| sha256_hex(profile.blob(e))),
            })
            .collect(),
        sqtt: profile
            .sqtt
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let split = profile.se_layout(s.device).map(|l| l.split(s.se));
                SqttInfo {
                    device: dev_name(s.device),
                    kern: s.kern,
                    exec_tag: s.exec_tag,
                    se: s.se,
                    xcc: split.map(|p| p.0),
                    xcc_se: split.map(|p| p.1),
                    itrace: s.itrace,
                    bytes: profile.blob(s.blob).len(),
                    sha256: {
                        let h = sha256_hex(profile.blob(s.blob));
                        progress(i + 1, profile.sqtt.len());
                        h
                    },
                }
            })
            .collect(),
        pmc: profile
            .pmc
            .iter()
            .map(|m| PmcInfo {
                device: dev_name(m.device),
                kern: m.kern,
                exec_tag: m.exec_tag,
                counters: m.samples.iter().map(|s| s.name.clone()).collect(),
                totals: m
                    .samples
                    .iter()
                    .map(|s| {
                        let b = profile.blob(m.blob);
                        let (o, n) = (s.off as usize, s.size as usize);
                        o.checked_add(n)
                            .and_then(|e| b.get(o..e))
                            .unwrap_or(&[])
                            .chunks_exact(8)
                            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                            .fold(0u64, u64::saturating_add)
                    })
                    .collect(),
                bytes: profile.blob(m.blob).len(),
            })
            .collect(),
        counts,
        source_event_counts: (format == Format::TinygradPickle)
            .then(|| profile.source.event_counts.clone()),
        chunks: if format == Format::Rgp {
            rgp::list_chunks(data).ok()
        } else {
            None
        },
        warnings: profile.source.warnings.clone(),
    }
}

/// Opens a file and describes it.
pub fn info_path(path: &Path) -> Result<FileInfo, OpenError> {
    info_path_with(path, &|_, _| {})
}

/// [`info_path`] with [`describe_with`]'s progress.
pub fn info_path_with(path: &Path, progress: &dyn Fn(usize, usize)) -> Result<FileInfo, OpenError> {
    let name = path.display().to_string();
    let store = map_file(path).map_err(|error| OpenError::Io {
        path: name.clone(),
        error,
    })?;
    let (format, profile) = open_store(store.clone(), &name)?;
    Ok(describe_with(
        &name,
        format,
        &profile,
        store.bytes(),
        progress,
    ))
}
