//! Workload files (`wavescope capture --workload FILE.toml`, format in `docs/workloads.md`):
//! code objects, named buffers and an ordered list of launches sharing them, each launch
//! optionally compared with an expected output; and `--dump DIR`, the buffers written after the
//! run (raw and `.npy`) into a directory that appears whole or not at all.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::npy::{self, Dtype};
use crate::plan::{DeviceBuffers, Plan, PlanArg, PlanBuffer, PlanCode, PlanLaunch};
use crate::{Arg, Checker};

/// A workload file that could not be used; every message names the file (and line:column
/// where the problem has one).
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("reading {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}:{col}: {msg}", path.display())]
    At {
        path: PathBuf,
        line: usize,
        col: usize,
        msg: String,
    },
    #[error("{}: {msg}", path.display())]
    File { path: PathBuf, msg: String },
}

/// `--dump DIR` that cannot be written.
#[derive(Debug, thiserror::Error)]
#[error("dump directory {}: {msg}", path.display())]
pub struct DumpError {
    pub path: PathBuf,
    pub msg: String,
}

// ---- the file's schema ----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    /// Code objects by name: `name = "path"` (relative to the workload file).
    code: HashMap<String, String>,
    #[serde(default)]
    buffers: HashMap<String, Spanned<BufferSpec>>,
    #[serde(default)]
    launch: Vec<Spanned<LaunchSpec>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BufferSpec {
    size: Option<SizeSpec>,
    fill: Option<String>,
    file: Option<String>,
    dtype: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum SizeSpec {
    Bytes(u64),
    Text(String),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum DimsSpec {
    One(u32),
    Many(Vec<u32>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LaunchSpec {
    code: Option<String>,
    kernel: String,
    grid: DimsSpec,
    block: DimsSpec,
    #[serde(default)]
    args: Vec<ArgSpec>,
    #[serde(default)]
    expect: Vec<ExpectSpec>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ArgSpec {
    Buffer(String),
    Value(ValueSpec),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ValueSpec {
    u32: Option<u32>,
    i32: Option<i32>,
    f32: Option<f32>,
    u64: Option<u64>,
    i64: Option<i64>,
    f64: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectSpec {
    buffer: String,
    file: String,
    /// Absolute tolerance (floats; integers compare exactly unless given).
    tolerance: Option<f64>,
    /// Relative tolerance, added to the absolute one times |expected|.
    rtol: Option<f64>,
    /// The element type of a raw expected file (default: the buffer's).
    dtype: Option<String>,
}

// ---- loaded ----

/// A buffer of a loaded workload.
pub struct Buffer {
    pub name: String,
    pub init: Vec<u8>,
    /// How `--dump` writes it as `.npy` and how expected files compare with it.
    pub dtype: Dtype,
}

struct Launch {
    label: String,
    code: usize,
    kernel: String,
    grid: [u32; 3],
    block: [u32; 3],
    args: Vec<PlanArg>,
    check: Option<Checker>,
}

/// A workload file read and checked, its files loaded.
pub struct WorkloadFile {
    pub path: PathBuf,
    code: Vec<(String, Vec<u8>)>,
    pub buffers: Vec<Buffer>,
    launches: Vec<Launch>,
}

/// 1-based line and column of byte `at` in `text`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

impl WorkloadFile {
    /// Reads `path` and every file it names (relative to it).
    pub fn load(path: &Path) -> Result<WorkloadFile, WorkloadError> {
        let text = fs::read_to_string(path).map_err(|source| WorkloadError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        WorkloadFile::parse(path, &text)
    }

    /// Parses a workload's text; `path` names it in messages and anchors its relative paths.
    pub fn parse(path: &Path, text: &str) -> Result<WorkloadFile, WorkloadError> {
        let at = |span: std::ops::Range<usize>, msg: String| {
            let (line, col) = line_col(text, span.start);
            WorkloadError::At {
                path: path.to_path_buf(),
                line,
                col,
                msg,
            }
        };
        let spec: FileSpec = toml::from_str(text).map_err(|e| {
            let msg = friendly(e.message().trim());
            match e.span() {
                Some(s) => at(s, msg),
                None => WorkloadError::File {
                    path: path.to_path_buf(),
                    msg,
                },
            }
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let read = |rel: &str| {
            let p = dir.join(rel);
            fs::read(&p).map_err(|source| WorkloadError::Read { path: p, source })
        };

        let mut code_names: Vec<&String> = spec.code.keys().collect();
        code_names.sort();
        let mut code = Vec::new();
        for n in &code_names {
            code.push(((*n).clone(), read(&spec.code[*n])?));
        }
        if code.is_empty() {
            return Err(WorkloadError::File {
                path: path.to_path_buf(),
                msg: "[code] names no code object".into(),
            });
        }

        // Buffers in file order (by their position), so indices and dumps are stable.
        let mut bufs: Vec<(&String, &Spanned<BufferSpec>)> = spec.buffers.iter().collect();
        bufs.sort_by_key(|(_, b)| b.span().start);
        let mut buffers = Vec::new();
        for (name, b) in bufs {
            let span = b.span();
            let bad = |msg: String| at(span.clone(), format!("buffer {name}: {msg}"));
            let b = b.get_ref();
            let dtype_named =
                match &b.dtype {
                    Some(d) => Some(Dtype::parse(d).ok_or_else(|| {
                        bad(format!("dtype {d:?} is not one of {}", Dtype::VALID))
                    })?),
                    None => None,
                };
            let size = match &b.size {
                None => None,
                Some(SizeSpec::Bytes(n)) => Some(*n as usize),
                Some(SizeSpec::Text(s)) => {
                    Some(s.parse::<crate::Size>().map_err(|e| bad(e.to_string()))?.0)
                }
            };
            let (mut init, file_dtype) = match (&b.file, &b.fill) {
                (Some(_), Some(_)) => return Err(bad("give file or fill, not both".into())),
                (Some(f), None) => {
                    let bytes = read(f)?;
                    if f.ends_with(".npy") {
                        let n = npy::parse(&bytes).map_err(|e| bad(format!("{f}: {e}")))?;
                        (n.data.to_vec(), Some(n.dtype))
                    } else {
                        (bytes, None)
                    }
                }
                (None, fill) => {
                    let size = size.ok_or_else(|| bad("needs a size (or a file)".into()))?;
                    let fill = fill.as_deref().unwrap_or("zero");
                    match format!("buf:{size}:{fill}").parse::<Arg>() {
                        Ok(Arg::Buffer(v)) => (v, None),
                        Ok(Arg::Scalar(_)) => unreachable!("buf: parses to a buffer"),
                        Err(_) => {
                            return Err(bad(format!(
                                "fill {fill:?} is not one of zero, iota, rand[=SEED], u32=V, f32=V"
                            )))
                        }
                    }
                }
            };
            if let Some(size) = size {
                if size < init.len() {
                    return Err(bad(format!(
                        "size {size} is smaller than its file's {} bytes",
                        init.len()
                    )));
                }
                init.resize(size, 0);
            }
            if init.is_empty() {
                return Err(bad("is empty".into()));
            }
            let dtype = match (dtype_named, file_dtype) {
                (Some(d), Some(f)) if d != f => {
                    return Err(bad(format!("dtype {d}, but its .npy holds {f}")))
                }
                (Some(d), _) | (None, Some(d)) => d,
                (None, None) => Dtype::U8,
            };
            buffers.push(Buffer {
                name: name.clone(),
                init,
                dtype,
            });
        }

        let mut launches = Vec::new();
        for (li, l) in spec.launch.iter().enumerate() {
            let span = l.span();
            let l = l.get_ref();
            let label = format!("{} launch {} ({})", path.display(), li + 1, l.kernel);
            let bad = |msg: String| {
                at(
                    span.clone(),
                    format!("launch {} ({}): {msg}", li + 1, l.kernel),
                )
            };
            let code_ix = match &l.code {
                Some(c) => code_names.iter().position(|n| *n == c).ok_or_else(|| {
                    bad(format!(
                        "code {c:?} is not in [code] ({})",
                        code_names
                            .iter()
                            .map(|s| s.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?,
                None if code.len() == 1 => 0,
                None => {
                    return Err(bad(
                        "name its code object (code = \"...\"): [code] has several".into(),
                    ))
                }
            };
            let dims = |d: &DimsSpec, what: &str| -> Result<[u32; 3], WorkloadError> {
                let v = match d {
                    DimsSpec::One(x) => vec![*x],
                    DimsSpec::Many(v) => v.clone(),
                };
                if v.is_empty() || v.len() > 3 || v.contains(&0) {
                    return Err(bad(format!("{what} wants 1 to 3 positive numbers")));
                }
                let mut out = [1; 3];
                out[..v.len()].copy_from_slice(&v);
                Ok(out)
            };
            let grid = dims(&l.grid, "grid")?;
            let block = dims(&l.block, "block")?;
            let buffer_ix = |n: &str| buffers.iter().position(|b| b.name == n);
            let mut args = Vec::new();
            for (ai, a) in l.args.iter().enumerate() {
                args.push(match a {
                    ArgSpec::Buffer(n) => PlanArg::Buffer(buffer_ix(n).ok_or_else(|| {
                        bad(format!("argument {ai}: no buffer named {n:?} in [buffers]"))
                    })?),
                    ArgSpec::Value(v) => PlanArg::Value(value_bytes(v).ok_or_else(|| {
                        bad(format!(
                            "argument {ai}: a value is one of {{ u32 = V }}, i32, f32, u64, i64, f64"
                        ))
                    })?),
                });
            }
            let mut expects = Vec::new();
            for e in &l.expect {
                let Some(bi) = buffer_ix(&e.buffer) else {
                    return Err(bad(format!("expect: no buffer named {:?}", e.buffer)));
                };
                // The check sees the launch's buffer arguments in order.
                let Some(pos) = args
                    .iter()
                    .filter(|a| matches!(a, PlanArg::Buffer(_)))
                    .position(|a| *a == PlanArg::Buffer(bi))
                else {
                    return Err(bad(format!(
                        "expect: buffer {} is not an argument of this launch",
                        e.buffer
                    )));
                };
                let bytes = read(&e.file)?;
                let (want, dtype) = if e.file.ends_with(".npy") {
                    let n = npy::parse(&bytes).map_err(|er| bad(format!("{}: {er}", e.file)))?;
                    (n.data.to_vec(), n.dtype)
                } else {
                    let d = match &e.dtype {
                        Some(d) => Dtype::parse(d).ok_or_else(|| {
                            bad(format!("dtype {d:?} is not one of {}", Dtype::VALID))
                        })?,
                        None => buffers[bi].dtype,
                    };
                    (bytes, d)
                };
                if want.len() != buffers[bi].init.len() {
                    return Err(bad(format!(
                        "expect: {} holds {} bytes, buffer {} has {}",
                        e.file,
                        want.len(),
                        e.buffer,
                        buffers[bi].init.len()
                    )));
                }
                expects.push(Expect {
                    buffer: e.buffer.clone(),
                    file: e.file.clone(),
                    pos,
                    want,
                    dtype,
                    atol: e.tolerance.unwrap_or(0.0),
                    rtol: e.rtol.unwrap_or(0.0),
                });
            }
            let check: Option<Checker> = (!expects.is_empty()).then(|| {
                Box::new(move |outs: &[Vec<u8>]| expects.iter().try_for_each(|e| e.compare(outs)))
                    as Checker
            });
            launches.push(Launch {
                label,
                code: code_ix,
                kernel: l.kernel.clone(),
                grid,
                block,
                args,
                check,
            });
        }
        if launches.is_empty() {
            return Err(WorkloadError::File {
                path: path.to_path_buf(),
                msg: "no [[launch]]".into(),
            });
        }
        Ok(WorkloadFile {
            path: path.to_path_buf(),
            code,
            buffers,
            launches,
        })
    }

    /// The plan the capture engine runs; `read_back` for `--dump`.
    pub fn plan(&self, read_back: bool) -> Plan<'_> {
        Plan {
            code: self
                .code
                .iter()
                .map(|(n, elf)| PlanCode {
                    label: format!("{} [code] {n}", self.path.display()),
                    elf,
                })
                .collect(),
            buffers: self
                .buffers
                .iter()
                .map(|b| PlanBuffer {
                    name: b.name.clone(),
                    init: &b.init,
                })
                .collect(),
            launches: self
                .launches
                .iter()
                .map(|l| PlanLaunch {
                    label: l.label.clone(),
                    code: l.code,
                    kernel: Some(&l.kernel),
                    grid: l.grid,
                    block: l.block,
                    args: l.args.clone(),
                    check: l.check.as_ref(),
                })
                .collect(),
            read_back,
        }
    }
}

/// serde's message for an untagged enum names a Rust type; say what the field accepts.
fn friendly(msg: &str) -> String {
    const FORMS: [(&str, &str); 3] = [
        (
            "DimsSpec",
            "grid and block are a positive number or a list of up to 3 (X, [X, Y] or [X, Y, Z])",
        ),
        ("SizeSpec", "size is a number of bytes, or \"NK\" / \"NM\""),
        (
            "ArgSpec",
            "an argument is a buffer's name (\"a\") or one value ({ u32 = V }, i32, f32, u64, i64, f64)",
        ),
    ];
    match FORMS
        .iter()
        .find(|(t, _)| msg.contains("untagged enum") && msg.contains(t))
    {
        Some((_, say)) => format!("invalid value: {say}"),
        None => msg.to_string(),
    }
}

fn value_bytes(v: &ValueSpec) -> Option<Vec<u8>> {
    let all: [Option<Vec<u8>>; 6] = [
        v.u32.map(|x| x.to_le_bytes().to_vec()),
        v.i32.map(|x| x.to_le_bytes().to_vec()),
        v.f32.map(|x| x.to_le_bytes().to_vec()),
        v.u64.map(|x| x.to_le_bytes().to_vec()),
        v.i64.map(|x| x.to_le_bytes().to_vec()),
        v.f64.map(|x| x.to_le_bytes().to_vec()),
    ];
    let mut given = all.into_iter().flatten();
    let one = given.next()?;
    given.next().is_none().then_some(one)
}

/// One expected output of a launch.
struct Expect {
    buffer: String,
    file: String,
    pos: usize,
    want: Vec<u8>,
    dtype: Dtype,
    atol: f64,
    rtol: f64,
}

impl Expect {
    fn compare(&self, outs: &[Vec<u8>]) -> Result<(), String> {
        let got = outs.get(self.pos).map_or(&[][..], |v| v);
        let n = self.want.len() / self.dtype.size();
        let mut bad = 0usize;
        let mut first = None;
        for i in 0..n {
            let (Some(g), Some(w)) = (self.dtype.value(got, i), self.dtype.value(&self.want, i))
            else {
                bad += 1;
                first.get_or_insert((i, f64::NAN, f64::NAN));
                continue;
            };
            let same =
                (g.is_nan() && w.is_nan()) || (g - w).abs() <= self.atol + self.rtol * w.abs();
            if !same {
                bad += 1;
                first.get_or_insert((i, g, w));
            }
        }
        match first {
            None => Ok(()),
            Some((i, g, w)) => Err(format!(
                "buffer {} differs from {} in {bad} of {n} {} values (tolerance {} + {} x |expected|), first [{i}] = {g} want {w}",
                self.buffer, self.file, self.dtype, self.atol, self.rtol
            )),
        }
    }
}

// ---- --dump ----

/// A dump directory being written: files go to a hidden sibling that is renamed onto the
/// requested path only when complete, so a failed run leaves nothing half-written. Made before
/// the capture, so a directory that cannot be written fails before anything runs.
pub struct Dump {
    target: PathBuf,
    tmp: PathBuf,
    done: bool,
}

impl Dump {
    /// Checks `dir` can be written: it must not exist, or be an empty directory.
    pub fn prepare(dir: &Path) -> Result<Dump, DumpError> {
        let bad = |msg: String| DumpError {
            path: dir.to_path_buf(),
            msg,
        };
        match fs::metadata(dir) {
            Ok(m) if !m.is_dir() => return Err(bad("exists and is not a directory".into())),
            Ok(_) => {
                let mut entries = fs::read_dir(dir).map_err(|e| bad(e.to_string()))?;
                if entries.next().is_some() {
                    return Err(bad("exists and is not empty".into()));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(bad(format!("cannot be used: {e}"))),
        }
        let name = dir
            .file_name()
            .ok_or_else(|| bad("names no directory".into()))?;
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let tmp = parent.join(format!(
            ".{}.partial-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        fs::create_dir(&tmp)
            .map_err(|e| bad(format!("cannot create it in {}: {e}", parent.display())))?;
        Ok(Dump {
            target: dir.to_path_buf(),
            tmp,
            done: false,
        })
    }

    /// Writes every device's buffers (`NAME.bin` raw, `NAME.npy`; one subdirectory per device
    /// when there are several) and moves the directory into place.
    pub fn finish(
        mut self,
        buffers: &[(String, Dtype)],
        devices: &[DeviceBuffers],
    ) -> Result<Vec<PathBuf>, DumpError> {
        let bad = |msg: String| DumpError {
            path: self.target.clone(),
            msg,
        };
        let mut written = Vec::new();
        for d in devices {
            let sub = if devices.len() > 1 {
                PathBuf::from(&d.device)
            } else {
                PathBuf::new()
            };
            let dir = self.tmp.join(&sub);
            fs::create_dir_all(&dir).map_err(|e| bad(e.to_string()))?;
            for ((name, dtype), bytes) in buffers.iter().zip(&d.buffers) {
                for (file, data) in [
                    (format!("{name}.bin"), bytes.clone()),
                    (format!("{name}.npy"), npy::write(*dtype, bytes)),
                ] {
                    fs::write(dir.join(&file), data)
                        .map_err(|e| bad(format!("writing {file}: {e}")))?;
                    written.push(self.target.join(&sub).join(file));
                }
            }
        }
        // rename(2) replaces an empty directory, or creates the path.
        fs::rename(&self.tmp, &self.target).map_err(|e| bad(e.to_string()))?;
        self.done = true;
        Ok(written)
    }
}

impl Drop for Dump {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_dir_all(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<WorkloadFile, WorkloadError> {
        WorkloadFile::parse(Path::new("/nonexistent/w.toml"), text)
    }

    #[test]
    fn malformed_files_name_the_file_line_and_column() {
        let e = parse("[code]\nk = \"x.hsaco\"\n[[launch]]\nkernel = 3\n")
            .err()
            .unwrap()
            .to_string();
        assert!(e.starts_with("/nonexistent/w.toml:4:"), "{e}");
        let e = parse("[code\n").err().unwrap().to_string();
        assert!(e.starts_with("/nonexistent/w.toml:1:"), "{e}");
        let e = parse("[code]\n[bufers.a]\nsize = 4\n")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains(":2:") && e.contains("bufers"), "{e}");
    }

    #[test]
    fn tolerances() {
        let f = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let e = Expect {
            buffer: "c".into(),
            file: "c.npy".into(),
            pos: 0,
            want: f(&[1.0, 2.0, f32::NAN]),
            dtype: Dtype::F32,
            atol: 1e-3,
            rtol: 0.0,
        };
        assert_eq!(e.compare(&[f(&[1.0005, 2.0, f32::NAN])]), Ok(()));
        let m = e.compare(&[f(&[1.0, 2.01, f32::NAN])]).unwrap_err();
        assert!(m.contains("1 of 3") && m.contains("[1]"), "{m}");
    }
}
