//! What the views show, computed from a [`Profile`]: per-kernel SQTT analyses aligned to the GPU
//! clock, per-wave instruction lists, the per-instruction latency table and PMC sums.
//! Pure and headless: the GUI, `wavescope stats` and the tests share it. The SQTT analysis lives
//! in [`traces::analysis`] (shared with the diff engine) and is re-exported here.

use serde::Serialize;
pub use traces::analysis::*;
use traces::model::Profile;

/// One PMC counter of a kernel run, summed over its sample slots.
#[derive(Debug, Clone, Serialize)]
pub struct PmcRow {
    pub name: String,
    pub block: String,
    pub sum: u64,
    pub max: u64,
    pub nonzero: usize,
    /// Every 64-bit sample value, in buffer order.
    pub values: Vec<u64>,
}

/// PMC counters of kernel `ki` (every PMC event of that run).
pub fn pmc_rows(p: &Profile, ki: usize) -> Vec<PmcRow> {
    let Some(k) = p.kernels.get(ki) else {
        return Vec::new();
    };
    let mut rows: Vec<PmcRow> = Vec::new();
    for ev in &p.pmc {
        let dev_ok = ev.device == k.device
            || p.devices.get(ev.device as usize).map(|d| d.base_name())
                == p.devices.get(k.device as usize).map(|d| d.base_name());
        if !dev_ok || Some(ev.kern) != k.kern {
            continue;
        }
        if ev.exec_tag.is_some() && k.exec_tag.is_some() && ev.exec_tag != k.exec_tag {
            continue;
        }
        let blob = p.blob(ev.blob);
        for s in &ev.samples {
            let (Ok(off), Ok(size)) = (usize::try_from(s.off), usize::try_from(s.size)) else {
                continue;
            };
            let bytes = off
                .checked_add(size)
                .and_then(|end| blob.get(off..end))
                .unwrap_or(&[]);
            let vals: Vec<u64> = bytes
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .collect();
            match rows.iter_mut().find(|r| r.name == s.name) {
                Some(r) => r.values.extend(vals),
                None => rows.push(PmcRow {
                    name: s.name.clone(),
                    block: s.block.clone(),
                    sum: 0,
                    max: 0,
                    nonzero: 0,
                    values: vals,
                }),
            }
        }
    }
    for r in &mut rows {
        r.sum = r.values.iter().fold(0u64, |a, &v| a.saturating_add(v));
        r.max = r.values.iter().copied().max().unwrap_or(0);
        r.nonzero = r.values.iter().filter(|&&v| v != 0).count();
    }
    rows
}

/// One counter sample slot: which instance it is (tinygrad's layout: XCC, instance, SE, SA,
/// WGP, row-major) and its value.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PmcInstance {
    pub xcc: u32,
    pub inst: u32,
    pub se: u32,
    pub sa: u32,
    pub wgp: u32,
    pub value: u64,
}

/// One counter of a kernel run: its total and every instance's sample.
#[derive(Debug, Clone, Serialize)]
pub struct PmcCounter {
    pub name: String,
    pub block: String,
    pub total: u64,
    pub instances: Vec<PmcInstance>,
}

/// The counters of kernel `ki`, per instance.
pub fn pmc_counters(p: &Profile, ki: usize) -> Vec<PmcCounter> {
    let Some(k) = p.kernels.get(ki) else {
        return Vec::new();
    };
    let mut out: Vec<PmcCounter> = Vec::new();
    for ev in p.pmc.iter().filter(|e| {
        Some(e.kern) == k.kern
            && (e.exec_tag.is_none() || k.exec_tag.is_none() || e.exec_tag == k.exec_tag)
    }) {
        let blob = p.blob(ev.blob);
        for s in &ev.samples {
            let (off, size) = (s.off as usize, s.size as usize);
            let bytes = off
                .checked_add(size)
                .and_then(|end| blob.get(off..end))
                .unwrap_or(&[]);
            let mut vals = bytes
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])));
            let mut inst = Vec::new();
            for xcc in 0..s.xcc {
                for i in 0..s.inst {
                    for se in 0..s.se {
                        for sa in 0..s.sa {
                            for wgp in 0..s.wgp {
                                let Some(value) = vals.next() else { break };
                                inst.push(PmcInstance {
                                    xcc,
                                    inst: i,
                                    se,
                                    sa,
                                    wgp,
                                    value,
                                });
                            }
                        }
                    }
                }
            }
            let total = inst.iter().fold(0u64, |a, x| a.saturating_add(x.value));
            out.push(PmcCounter {
                name: s.name.clone(),
                block: s.block.clone(),
                total,
                instances: inst,
            });
        }
    }
    out
}

/// What the `.wst` analysis index (`traces::wst::index`) saved for one kernel: enough for the
/// first frame and the instruction table, without decoding the SQTT.
#[derive(Debug, Clone)]
pub struct IndexedKernel {
    pub unit: XUnit,
    pub x_range: (f64, f64),
    pub waves: u64,
    pub latency: hidden::LatencySplit,
    pub rows: Vec<InstStat>,
    /// Per SE: its number, whether it was instruction-traced, why it failed to decode, and
    /// its active-wave overview ([x, waves] steps).
    pub ses: Vec<IndexedSe>,
}

#[derive(Debug, Clone)]
pub struct IndexedSe {
    pub se: u32,
    pub itrace: bool,
    pub error: Option<String>,
    pub overview: Vec<[f64; 2]>,
}

/// The analysis index in a file's bytes: `Ok(None)` when it has none (not a .wst, or written
/// without one); `Err` when it has one that cannot be used (show [`index_warning`] and
/// recompute).
pub fn open_index(
    data: &[u8],
) -> Result<Option<traces::wst::index::IndexView<'_>>, traces::wst::index::IndexError> {
    if !data.starts_with(&traces::wst::MAGIC) {
        return Ok(None);
    }
    traces::wst::read_index(data)
}

/// The warning for a file whose analysis index (or a part of it) cannot be used, naming the
/// file and the offset.
pub fn index_warning(path: &std::path::Path, e: &traces::wst::index::IndexError) -> String {
    format!(
        "{}: ignoring its analysis index ({e}); recomputing",
        path.display()
    )
}

/// The analysis index of `path`, by profile kernel: `Ok(None)` when the file has none (not a
/// .wst, or written without one); `Err` (the warning to show, naming the file and the offset)
/// when it has one that cannot be used: the caller recomputes.
pub fn load_index(
    path: &std::path::Path,
) -> Result<Option<std::collections::HashMap<usize, IndexedKernel>>, String> {
    let warn = |e: traces::wst::index::IndexError| index_warning(path, &e);
    let store = traces::open::map_file(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let Some(idx) = open_index(store.bytes()).map_err(warn)? else {
        return Ok(None);
    };
    let mut out = std::collections::HashMap::new();
    for e in idx.entries().map_err(warn)? {
        // Not read here either, but checked with the wave tables below.
        e.verify_wave_splits().map_err(warn)?;
        let mut ses = Vec::new();
        for s in idx.ses(&e).map_err(warn)? {
            // The wave tables are not read here, but a damaged one means a damaged file:
            // checked now (one CRC pass), not when a wave is first looked at.
            s.verify().map_err(warn)?;
            ses.push(IndexedSe {
                se: s.se,
                itrace: s.itrace,
                error: s.error.map(str::to_string),
                overview: s.overview(),
            });
        }
        out.insert(
            e.kernel,
            IndexedKernel {
                unit: e.unit,
                x_range: e.x_range,
                waves: e.waves,
                latency: e.latency,
                rows: e.rows().map_err(warn)?,
                ses,
            },
        );
    }
    Ok(Some(out))
}
