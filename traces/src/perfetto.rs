//! Perfetto / Chrome trace-event JSON export.
//!
//! One process per device (queue devices such as `AMD:SDMA:0` become threads of their base
//! device's process), a thread per queue for ranges, a `kernels` thread per GPU device, and
//! one thread per (SE, CU, SIMD) with a slice per wave reconstructed by the SQTT decoder.
//! Times are microseconds relative to the earliest event (`otherData.time_base_us`), so
//! doubles keep sub-nanosecond resolution.

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use serde_json::{json, Value};

use crate::model::{PointKind, Profile, Time};
use crate::sqtt::{self, TimeMap};

#[derive(Debug, Clone)]
pub struct PerfettoOptions {
    /// Decode SQTT and emit per-wave slices.
    pub waves: bool,
}

impl Default for PerfettoOptions {
    fn default() -> Self {
        PerfettoOptions { waves: true }
    }
}

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PerfettoStats {
    pub range_slices: usize,
    pub kernel_slices: usize,
    pub wave_slices: usize,
    pub instants: usize,
    /// SQTT blobs that could not be decoded (index into `Profile::sqtt`, message).
    pub decode_errors: Vec<(usize, String)>,
    /// Blobs whose waves were placed by an assumed shader clock (no realtime markers).
    pub approximate_placement: usize,
    /// Kernels with a performance-counter track.
    pub pmc_tracks: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum PerfettoError {
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
    #[error("JSON error: {0}")]
    Json(#[from] serde_json::Error),
}

const TID_KERNELS: u64 = 1_000_000;
const TID_WAVES: u64 = 2_000_000;

struct Writer<W: Write> {
    w: W,
    first: bool,
    /// Scratch for one event's text.
    line: Vec<u8>,
}

impl<W: Write> Writer<W> {
    fn event(&mut self, v: &Value) -> Result<(), PerfettoError> {
        if !self.first {
            self.w.write_all(b",\n")?;
        }
        self.first = false;
        serde_json::to_writer(&mut self.w, v)?;
        Ok(())
    }

    /// One wave's slice: the bytes `event` writes for its `json!` object (keys in serde_json's
    /// sorted order, its number formatting), without building a `Value` map per wave, which
    /// was most of the export's time at scale.
    fn wave(&mut self, e: &WaveSlice<'_>) -> Result<(), PerfettoError> {
        // One line built in a reused buffer, then one write: many tiny writes into the
        // BufWriter cost more than the text itself.
        let w = &mut self.line;
        w.clear();
        if !self.first {
            w.extend_from_slice(b",\n");
        }
        self.first = false;
        let wv = e.wave;
        let mut n = itoa::Buffer::new();
        w.extend_from_slice(b"{\"args\":{\"cu\":");
        w.extend_from_slice(n.format(wv.cu).as_bytes());
        w.extend_from_slice(b",\"end_cycle\":");
        w.extend_from_slice(n.format(wv.end).as_bytes());
        w.extend_from_slice(b",\"insts\":");
        w.extend_from_slice(n.format(wv.insts).as_bytes());
        w.extend_from_slice(b",\"kern\":");
        w.extend_from_slice(n.format(e.kern).as_bytes());
        w.extend_from_slice(b",\"se\":");
        w.extend_from_slice(n.format(e.se).as_bytes());
        w.extend_from_slice(b",\"simd\":");
        w.extend_from_slice(n.format(wv.simd).as_bytes());
        w.extend_from_slice(b",\"slot\":");
        w.extend_from_slice(n.format(wv.wave).as_bytes());
        w.extend_from_slice(b",\"start_cycle\":");
        w.extend_from_slice(n.format(wv.start).as_bytes());
        w.extend_from_slice(b"},\"cat\":\"wave\",\"dur\":");
        // serde_json's own f64 writer (`null` when not finite, as `json!` gives).
        serde_json::to_writer(&mut *w, &e.dur)?;
        w.extend_from_slice(b",\"name\":\"wave ");
        w.extend_from_slice(n.format(wv.wave).as_bytes());
        w.extend_from_slice(b"\",\"ph\":\"X\",\"pid\":");
        w.extend_from_slice(n.format(e.pid).as_bytes());
        w.extend_from_slice(b",\"tid\":");
        w.extend_from_slice(n.format(e.tid).as_bytes());
        w.extend_from_slice(b",\"ts\":");
        serde_json::to_writer(&mut *w, &e.ts)?;
        w.extend_from_slice(b"}");
        self.w.write_all(&self.line)?;
        Ok(())
    }
}

/// What a wave's slice shows.
struct WaveSlice<'a> {
    se: u32,
    kern: i64,
    pid: u64,
    tid: u64,
    wave: &'a sqtt::waves::Wave,
    ts: f64,
    dur: f64,
}

/// Writes the trace-event JSON of `p` into `w`.
pub fn write_json<W: Write>(
    p: &Profile,
    opts: &PerfettoOptions,
    w: W,
) -> Result<PerfettoStats, PerfettoError> {
    write_json_with(p, opts, w, &|_, _| {})
}

/// [`write_json`], calling `progress` with (SQTT streams done, total) as the wave slices of each
/// stream are written.
pub fn write_json_with<W: Write>(
    p: &Profile,
    opts: &PerfettoOptions,
    w: W,
    progress: &dyn Fn(usize, usize),
) -> Result<PerfettoStats, PerfettoError> {
    let mut stats = PerfettoStats::default();
    let base = earliest(p);
    let rel = |t: Time| (t.0 - base.0) as f64 / Time::PS_PER_US as f64;

    // pid: index of the base device + 1; tid: index of the (queue) device + 1.
    let pid_of = |d: u32| -> u64 {
        let dev = &p.devices[d as usize];
        p.find_device(dev.process, dev.base_name()).unwrap_or(d) as u64 + 1
    };
    let mut out = Writer {
        w,
        first: true,
        line: Vec::with_capacity(512),
    };
    out.w.write_all(b"{\"traceEvents\":[\n")?;
    for (i, d) in p.devices.iter().enumerate() {
        let pid = pid_of(i as u32);
        if pid == i as u64 + 1 {
            let label = match d.target() {
                Some(t) => format!("{} ({t})", d.name),
                None => d.name.clone(),
            };
            out.event(&json!({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": label}}))?;
        }
        out.event(&json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": i + 1, "args": {"name": d.name}}))?;
    }

    for r in &p.ranges {
        let Some(dev) = p.devices.get(r.device as usize) else {
            continue;
        };
        let _ = dev;
        let dur = r.end.map_or(0.0, |e| {
            ((e.0 - r.start.0).max(0)) as f64 / Time::PS_PER_US as f64
        });
        out.event(&json!({"ph": "X", "cat": "range", "name": r.name, "pid": pid_of(r.device), "tid": r.device as u64 + 1, "ts": rel(r.start), "dur": dur}))?;
        stats.range_slices += 1;
    }
    for pt in &p.points {
        let name = match &pt.kind {
            PointKind::Exec => "exec",
            PointKind::Alloc => "alloc",
            PointKind::Free => "free",
            PointKind::Marker => "marker",
            PointKind::Other(s) => s.as_str(),
        };
        out.event(&json!({"ph": "i", "s": "t", "cat": "point", "name": name, "pid": pid_of(pt.device), "tid": pt.device as u64 + 1, "ts": rel(pt.ts)}))?;
        stats.instants += 1;
    }

    let mut named_kernel_threads: Vec<u64> = Vec::new();
    for k in &p.kernels {
        let pid = pid_of(k.device);
        if !named_kernel_threads.contains(&pid) {
            named_kernel_threads.push(pid);
            out.event(&json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": TID_KERNELS, "args": {"name": "kernels"}}))?;
        }
        let dur = k.end.map_or(0.0, |e| {
            ((e.0 - k.start.0).max(0)) as f64 / Time::PS_PER_US as f64
        });
        out.event(&json!({"ph": "X", "cat": "kernel", "name": k.name, "pid": pid, "tid": TID_KERNELS, "ts": rel(k.start), "dur": dur,
            "args": {"kern": k.kern, "exec_tag": k.exec_tag, "gpu_start": k.gpu_start.map(|v| v.to_string()), "gpu_end": k.gpu_end.map(|v| v.to_string())}}))?;
        stats.kernel_slices += 1;
        // A counter track per kernel run: every counter's total (one series each) from its
        // start to its end.
        let totals: Vec<(String, u64)> = p
            .pmc
            .iter()
            .filter(|e| {
                Some(e.kern) == k.kern
                    && (e.exec_tag.is_none() || k.exec_tag.is_none() || e.exec_tag == k.exec_tag)
                    && pid_of(e.device) == pid
            })
            .flat_map(|e| {
                let b = p.blob(e.blob);
                e.samples.iter().map(move |s| {
                    let (o, n) = (s.off as usize, s.size as usize);
                    let v = o
                        .checked_add(n)
                        .and_then(|end| b.get(o..end))
                        .unwrap_or(&[])
                        .chunks_exact(8)
                        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                        .fold(0u64, u64::saturating_add);
                    (s.name.clone(), v)
                })
            })
            .collect();
        if !totals.is_empty() {
            let name = format!("PMC {}", k.name);
            let on: serde_json::Map<String, Value> =
                totals.iter().map(|(n, v)| (n.clone(), json!(v))).collect();
            let off: serde_json::Map<String, Value> =
                totals.iter().map(|(n, _)| (n.clone(), json!(0))).collect();
            out.event(&json!({"ph": "C", "cat": "pmc", "name": name, "pid": pid, "ts": rel(k.start), "args": on}))?;
            out.event(&json!({"ph": "C", "cat": "pmc", "name": name, "pid": pid, "ts": rel(k.start) + dur, "args": off}))?;
            stats.pmc_tracks += 1;
        }
    }

    if opts.waves {
        let mut wave_tids: BTreeMap<(u64, u32, u16, u8), u64> = BTreeMap::new();
        for (si, s) in p.sqtt.iter().enumerate() {
            let target = p.props_device(s.device).and_then(|d| d.target());
            // Waves and markers only: the per-token list is most of an analysis's memory.
            let aopts = sqtt::AnalyzeOptions {
                keep_tokens: false,
                ..Default::default()
            };
            progress(si, p.sqtt.len());
            let analysis = match sqtt::analyze_with(p.blob(s.blob), target, aopts) {
                Ok(a) => a,
                Err(e) => {
                    stats.decode_errors.push((si, e.to_string()));
                    continue;
                }
            };
            let dev = &p.devices[s.device as usize];
            let pid = pid_of(s.device);
            let kernel = p.kernels.iter().find(|k| {
                k.kern == Some(s.kern) && k.exec_tag == s.exec_tag && pid_of(k.device) == pid
            });
            let reference = kernel
                .and_then(|k| k.gpu_start)
                .and_then(|t| u64::try_from(t).ok());
            let shader_hz = target
                .and_then(|t| crate::rgp::asic_facts_for_version(t.target_version()))
                .map_or(2.0e9, |f| f.shader_clock_hz as f64);
            let map = analysis
                .layout
                .and_then(|l| TimeMap::from_markers(&analysis.markers, l, reference))
                .map(|m| m.with_fallback_clock(shader_hz));
            // Common-clock µs of a cycle time: via the markers (GPU ticks + the device's
            // clock offset), else relative to the kernel's start at the nominal clock.
            let offset = p
                .props_device(s.device)
                .map_or(dev.clock_offset, |d| d.clock_offset);
            let first = analysis.first_time.unwrap_or(0);
            let anchor = kernel.map_or(base, |k| k.start);
            let mut approx = false;
            // Wave starts and ends each mostly move forward: a hint per sequence skips the
            // binary search (`us_hinted` gives `us`'s result).
            let (mut start_hint, mut end_hint) = (0usize, 0usize);
            let place = |cycles: i64, hint: &mut usize, approx: &mut bool| -> f64 {
                if let Some(us) = map.as_ref().and_then(|m| m.us_hinted(cycles, hint)) {
                    return us + offset.0 as f64 / Time::PS_PER_US as f64
                        - base.0 as f64 / Time::PS_PER_US as f64;
                }
                *approx = true;
                rel(anchor) + (cycles - first) as f64 / shader_hz * 1e6
            };
            for wv in &analysis.waves {
                let key = (pid, s.se, wv.cu, wv.simd);
                let next = TID_WAVES + wave_tids.len() as u64;
                let tid = match wave_tids.get(&key) {
                    Some(&t) => t,
                    None => {
                        wave_tids.insert(key, next);
                        out.event(&json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": next, "args": {"name": format!("SE{} CU{} SIMD{}", s.se, wv.cu, wv.simd)}}))?;
                        out.event(&json!({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": next, "args": {"sort_index": next}}))?;
                        next
                    }
                };
                let ts = place(wv.start, &mut start_hint, &mut approx);
                let te = place(wv.end.max(wv.start), &mut end_hint, &mut approx);
                out.wave(&WaveSlice {
                    se: s.se,
                    kern: s.kern,
                    pid,
                    tid,
                    wave: wv,
                    ts,
                    dur: (te - ts).max(0.0),
                })?;
                stats.wave_slices += 1;
            }
            if approx {
                stats.approximate_placement += 1;
            }
        }
    }

    write!(out.w, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{{\"generator\":\"wavescope\",\"time_base_us\":\"{base}\"}}}}\n")?;
    out.w.flush()?;
    Ok(stats)
}

/// The earliest time in the profile (the JSON's time zero).
fn earliest(p: &Profile) -> Time {
    p.ranges
        .iter()
        .map(|r| r.start)
        .chain(p.points.iter().map(|x| x.ts))
        .chain(p.kernels.iter().map(|k| k.start))
        .min()
        .unwrap_or_default()
}

/// Writes the JSON to `path` atomically.
pub fn export_file(
    p: &Profile,
    opts: &PerfettoOptions,
    path: &Path,
) -> Result<PerfettoStats, PerfettoError> {
    export_file_with(p, opts, path, &|_, _| {})
}

/// [`export_file`] with [`write_json_with`]'s progress.
pub fn export_file_with(
    p: &Profile,
    opts: &PerfettoOptions,
    path: &Path,
    progress: &dyn Fn(usize, usize),
) -> Result<PerfettoStats, PerfettoError> {
    let tmp = crate::open::output_tempfile(path, ".perfetto-")?;
    let stats = write_json_with(
        p,
        opts,
        BufWriter::with_capacity(1 << 20, tmp.as_file()),
        progress,
    )?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| PerfettoError::Io(e.error))?;
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The object each wave slice was written as before the hand-written line: serde_json's
    /// rendering of it is the reference the fast path must match byte for byte.
    fn reference(e: &WaveSlice<'_>) -> String {
        let wv = e.wave;
        serde_json::to_string(&json!({"ph": "X", "cat": "wave", "name": format!("wave {}", wv.wave), "pid": e.pid, "tid": e.tid, "ts": e.ts, "dur": e.dur,
            "args": {"se": e.se, "cu": wv.cu, "simd": wv.simd, "slot": wv.wave, "insts": wv.insts, "kern": e.kern, "start_cycle": wv.start, "end_cycle": wv.end}}))
        .unwrap()
    }

    #[test]
    fn wave_line_matches_the_json_object() {
        let wave = |cu, simd, slot, start, end, insts| sqtt::waves::Wave {
            cu,
            simd,
            wave: slot,
            sa: None,
            tag: sqtt::waves::WaveTag::None,
            start,
            end,
            insts,
            start_offset: 0,
            end_delta: 0,
        };
        let waves = [
            wave(0, 0, 0, 0, 0, 0),
            wave(37, 3, 15, 1_397_844, 1_401_856, 58),
            wave(u16::MAX, u8::MAX, u8::MAX, i64::MIN, i64::MAX, u32::MAX),
            wave(5, 1, 7, -12, 4_926_005_362, 1),
        ];
        let times = [
            0.0,
            -0.0,
            1.3115234375,
            2761021.7239990234,
            1e-7,
            -5.5e21,
            1e300,
            f64::MIN_POSITIVE,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        let mut out = Writer {
            w: Vec::new(),
            first: true,
            line: Vec::new(),
        };
        let mut want = String::new();
        for (i, wv) in waves.iter().enumerate() {
            for (j, &ts) in times.iter().enumerate() {
                let e = WaveSlice {
                    se: [0, 5, u32::MAX, 3][i],
                    kern: [0, -1, i64::MAX, i64::MIN][i],
                    pid: [1, 2, u64::MAX, 7][i],
                    tid: TID_WAVES + j as u64,
                    wave: wv,
                    ts,
                    dur: times[(j + 3) % times.len()],
                };
                if !want.is_empty() {
                    want.push_str(",\n");
                }
                want.push_str(&reference(&e));
                out.wave(&e).unwrap();
            }
        }
        assert_eq!(String::from_utf8(out.w).unwrap(), want);
    }
}
