//! The `.wst` analysis index (section `INDX`, schema 1, layout version 2): the per-kernel
//! analysis results saved beside the capture, so reopening a saved file shows its first frame,
//! its instruction table and the per-wave latency split of `stats --json` without decoding the
//! SQTT again. Version 1 (no wave-split table, 168-byte kernel entries) is still read.
//!
//! Little-endian, fixed-size records, every table at a multiple of 8 from the section's start,
//! read in place from the memory map (nothing is parsed until asked for). Offsets inside the
//! section are relative to its first byte; error messages name absolute file offsets.
//! ```text
//! header (64 bytes)
//!   0  [u8;8] "WSTINDX\0"     8  u32 version (2; 1 read)     12 u32 kernel count K
//!   16 u64 META section length (the index belongs to that metadata)
//!   24 u32 crc32 of the META section   28 u32 crc32 of the kernel directory
//!   32 u64 directory offset   40 u64 section length   48..64 zero
//! directory: K kernel entries of 184 bytes (168 in version 1)
//!   0 u32 kernel   4 u32 x unit (0 us, 1 cycles)   8 u32 flags (bit 0: kernel_len known)
//!   12 u32 SE count   16 f64 kernel_len   24 f64 x lo   32 f64 x hi   40 u64 waves
//!   48 9 x i64 latency split (latency, exposed, hidden valu salu vmem lds smem branch other)
//!   120 table ref SEs (48-byte records)   136 table ref rows (200-byte records)
//!   152 table ref strings (UTF-8 bytes)   168 table ref wave splits (96-byte records; v2)
//! table ref (16 bytes): u64 offset, u32 count, u32 crc32 of the table's bytes
//! SE record (48): u32 se, u32 flags (bit 0 itrace, bit 1 error, bit 2 note), u32 error offset,
//!   u32 error length (in the kernel's strings: the error when bit 1 is set, else the note when
//!   bit 2 is: what an SE that decoded does not cover, lines joined by "\n"; an earlier reader
//!   ignores bit 2), table ref waves (32-byte records), table ref overview
//!   (16-byte [f64 x, f64 active waves] steps)
//! wave record (32): i64 start, i64 end (cycles from the blob's start), u64 nibble offset of its
//!   WAVESTART in the SE blob, u16 cu, u8 simd, u8 slot, u32 instruction tokens
//! row record (200): u64 pc (u64::MAX: unmapped), u64 position, u64 count, i64 total, f64 mean,
//!   i64 min, i64 median, i64 max, f64 share, i64 stall, f64 stall share, i64 amd stall,
//!   i64 amd duration, i64 exposed, 7 x i64 hidden by class, f64 hidden share,
//!   u32 name offset, u32 name length, u32 key offset, u32 key length, u32 flags
//!   (bit 0 amd stall known, bit 1 amd duration known), u32 0
//! wave split record (96): u32 se, u16 cu, u8 simd, u8 slot, u64 wave (index in the SE's wave
//!   list), u64 instructions, 9 x i64 latency split (as the directory's)
//! ```
//! Every table carries a CRC, checked when it is first read: a corrupt or foreign index is
//! reported (with its offset) and ignored by the callers, which then recompute.

use crate::analysis::hidden::{HiddenBy, KernelSplits, LatencySplit, WaveSplit};
use crate::analysis::{InstStat, KernelSqtt, XUnit};
use crate::bytes::Reader;
use std::borrow::Cow;
use std::io::{Seek, SeekFrom, Write};

pub const MAGIC: [u8; 8] = *b"WSTINDX\0";
/// The index layout this build writes (and reads, with [`VERSION_1`]).
pub const VERSION: u32 = 2;
/// The first layout: no per-wave latency splits; still read (those splits are then recomputed).
pub const VERSION_1: u32 = 1;
const HEADER_LEN: usize = 64;
const KERNEL_LEN: usize = 184;
const KERNEL_LEN_V1: usize = 168;
const WSPLIT_LEN: usize = 96;
const SE_LEN: usize = 48;
const WAVE_LEN: usize = 32;
const ROW_LEN: usize = 200;
const STEP_LEN: usize = 16;
/// Points of each SE's active-wave overview (what the SQTT view's occupancy strip draws).
pub const OVERVIEW_POINTS: usize = 2000;

/// Why an index was not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("analysis index at offset {offset}: {why}")]
pub struct IndexError {
    /// Absolute offset in the file.
    pub offset: u64,
    pub why: String,
}

impl From<le_reader::Error> for IndexError {
    fn from(e: le_reader::Error) -> Self {
        IndexError {
            offset: e.offset,
            why: format!("{} truncated ({} bytes needed)", e.what, e.needed),
        }
    }
}

/// One wave of the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaveRec {
    pub start: i64,
    pub end: i64,
    /// Nibble offset of its WAVESTART packet in the SE blob (where detail decoding resumes).
    pub start_offset: u64,
    pub cu: u16,
    pub simd: u8,
    pub slot: u8,
    pub insts: u32,
}

impl WaveRec {
    /// What achieved occupancy needs of this saved wave.
    pub fn life(&self) -> crate::analysis::occupancy::WaveLife {
        crate::analysis::occupancy::WaveLife {
            start: self.start,
            end: self.end,
            cu: self.cu,
            simd: self.simd,
        }
    }
}

/// One SE of a kernel, owned (what the writer takes).
#[derive(Debug, Clone, PartialEq)]
pub struct SeRecord {
    pub se: u32,
    pub itrace: bool,
    pub error: Option<String>,
    /// [`crate::analysis::SeTrace::notes`], joined by newlines (`None` when it has none).
    pub note: Option<String>,
    pub waves: Vec<WaveRec>,
    pub overview: Vec<[f64; 2]>,
}

/// One kernel's analysis results, owned (what the writer takes).
#[derive(Debug, Clone)]
pub struct KernelRecord {
    pub kernel: u32,
    pub unit: XUnit,
    pub kernel_len: Option<f64>,
    pub x_range: (f64, f64),
    pub latency: LatencySplit,
    pub ses: Vec<SeRecord>,
    pub rows: Vec<InstStat>,
    /// The latency split of each instruction-traced wave (`KernelSplits::waves`).
    pub wave_splits: Vec<WaveSplit>,
}

impl KernelRecord {
    /// The one adapter from the analysis types to the index's records: a kernel's analysis,
    /// its instruction table and its latency splits (`analysis::hidden::kernel_splits(k)`).
    pub fn from_analysis(k: &KernelSqtt, rows: &[InstStat], splits: &KernelSplits) -> Self {
        let ses = k
            .ses
            .iter()
            .map(|s| SeRecord {
                se: s.se,
                itrace: s.itrace,
                error: s.error.clone(),
                note: note_of(s),
                waves: s.analysis.waves.iter().map(wave_rec).collect(),
                overview: crate::analysis::occupancy::active_waves(&s.wave_x, OVERVIEW_POINTS),
            })
            .collect();
        KernelRecord {
            kernel: k.kernel as u32,
            unit: k.unit,
            kernel_len: k.kernel_len,
            x_range: k.x_range(),
            latency: splits.total,
            ses,
            rows: rows.to_vec(),
            wave_splits: splits.waves.clone(),
        }
    }
}

impl KernelRecord {
    /// [`KernelRecord::from_analysis`] of an analysis without `wave_x`
    /// ([`crate::analysis::analyze_kernel_index`]): each SE's x comes from its clock.
    fn from_clocked(
        k: &KernelSqtt,
        clocks: &[crate::analysis::SeClock],
        rows: &[InstStat],
        splits: &KernelSplits,
    ) -> Self {
        let src = KernelSrc::Analysis {
            k,
            clocks,
            spilled: &[],
            rows,
            splits,
        };
        let mut seen = (f64::INFINITY, f64::NEG_INFINITY);
        let ses = (0..k.ses.len())
            .map(|i| {
                let s = &k.ses[i];
                SeRecord {
                    se: s.se,
                    itrace: s.itrace,
                    error: s.error.clone(),
                    note: note_of(s),
                    waves: s.analysis.waves.iter().map(wave_rec).collect(),
                    // Without spills the overview reads no file.
                    overview: src
                        .overview(i, &mut seen)
                        .map(|o| o.into_owned())
                        .unwrap_or_default(),
                }
            })
            .collect();
        KernelRecord {
            kernel: k.kernel as u32,
            unit: k.unit,
            kernel_len: k.kernel_len,
            x_range: src.x_range(seen),
            latency: splits.total,
            ses,
            rows: rows.to_vec(),
            wave_splits: splits.waves.clone(),
        }
    }
}

/// An SE's notes as the index keeps them (one string, a line each).
fn note_of(s: &crate::analysis::SeTrace) -> Option<String> {
    let n = s.notes();
    (!n.is_empty()).then(|| n.join("\n"))
}

fn wave_rec(w: &crate::sqtt::waves::Wave) -> WaveRec {
    WaveRec {
        start: w.start,
        end: w.end,
        start_offset: w.start_offset,
        cu: w.cu,
        simd: w.simd,
        slot: w.wave,
        insts: w.insts,
    }
}

/// Where a kernel's index tables come from: owned records ([`KernelRecord`]) or, when the index
/// is written while analysing ([`build_into`]), the analysis itself, so the waves are encoded
/// straight from it and never copied into records first.
enum KernelSrc<'a> {
    Record(&'a KernelRecord),
    Analysis {
        k: &'a KernelSqtt,
        /// Each SE's clock: `k`'s SEs carry no `wave_x`, it is computed one SE at a time.
        clocks: &'a [crate::analysis::SeClock],
        /// SE `i`'s waves when the analysis handed them to a [`Spill`] (`k` then has none).
        spilled: &'a [Option<Spill>],
        rows: &'a [InstStat],
        splits: &'a KernelSplits,
    },
}

impl KernelSrc<'_> {
    fn kernel(&self) -> u32 {
        match self {
            KernelSrc::Record(r) => r.kernel,
            KernelSrc::Analysis { k, .. } => k.kernel as u32,
        }
    }
    fn unit(&self) -> XUnit {
        match self {
            KernelSrc::Record(r) => r.unit,
            KernelSrc::Analysis { k, .. } => k.unit,
        }
    }
    fn kernel_len(&self) -> Option<f64> {
        match self {
            KernelSrc::Record(r) => r.kernel_len,
            KernelSrc::Analysis { k, .. } => k.kernel_len,
        }
    }
    /// `seen`: the (lowest, highest) x of the waves [`KernelSrc::overview`] went over, which
    /// is every wave once each SE's overview is written.
    fn x_range(&self, seen: (f64, f64)) -> (f64, f64) {
        match self {
            KernelSrc::Record(r) => r.x_range,
            // As `KernelSqtt::x_range` over every SE's `wave_x`.
            KernelSrc::Analysis { k, .. } => {
                if seen.0 > seen.1 {
                    (0.0, k.kernel_len.unwrap_or(1.0).max(1e-3))
                } else {
                    seen
                }
            }
        }
    }
    fn latency(&self) -> LatencySplit {
        match self {
            KernelSrc::Record(r) => r.latency,
            KernelSrc::Analysis { splits, .. } => splits.total,
        }
    }
    fn rows(&self) -> &[InstStat] {
        match self {
            KernelSrc::Record(r) => &r.rows,
            KernelSrc::Analysis { rows, .. } => rows,
        }
    }
    fn wave_splits(&self) -> &[WaveSplit] {
        match self {
            KernelSrc::Record(r) => &r.wave_splits,
            KernelSrc::Analysis { splits, .. } => &splits.waves,
        }
    }
    fn se_count(&self) -> usize {
        match self {
            KernelSrc::Record(r) => r.ses.len(),
            KernelSrc::Analysis { k, .. } => k.ses.len(),
        }
    }
    /// SE `i`: number, itrace, error, note, wave count.
    #[allow(clippy::type_complexity)]
    fn se(&self, i: usize) -> (u32, bool, Option<&str>, Option<Cow<'_, str>>, usize) {
        match self {
            KernelSrc::Record(r) => {
                let s = &r.ses[i];
                let note = s.note.as_deref().map(Cow::Borrowed);
                (s.se, s.itrace, s.error.as_deref(), note, s.waves.len())
            }
            KernelSrc::Analysis { k, spilled, .. } => {
                let s = &k.ses[i];
                let n = match spilled.get(i) {
                    Some(Some(sp)) => sp.count(),
                    _ => s.analysis.waves.len(),
                };
                (
                    s.se,
                    s.itrace,
                    s.error.as_deref(),
                    note_of(s).map(Cow::Owned),
                    n,
                )
            }
        }
    }
    /// Calls `f` with each wave of SE `i`, in order.
    fn each_wave(
        &self,
        i: usize,
        f: &mut dyn FnMut(WaveRec) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        match self {
            KernelSrc::Record(r) => r.ses[i].waves.iter().try_for_each(|w| f(*w)),
            KernelSrc::Analysis { k, spilled, .. } => match spilled.get(i) {
                Some(Some(sp)) => sp.each(f),
                _ => k.ses[i]
                    .analysis
                    .waves
                    .iter()
                    .try_for_each(|w| f(wave_rec(w))),
            },
        }
    }
    /// SE `i`'s active-wave overview (computed here from the analysis: one SE's x at a time),
    /// widening `seen` to its waves' x.
    fn overview(
        &self,
        i: usize,
        seen: &mut (f64, f64),
    ) -> std::io::Result<std::borrow::Cow<'_, [[f64; 2]]>> {
        Ok(match self {
            KernelSrc::Record(r) => std::borrow::Cow::Borrowed(&r.ses[i].overview),
            KernelSrc::Analysis {
                k, clocks, spilled, ..
            } => {
                let x = match (clocks.get(i), spilled.get(i)) {
                    (None, _) => Vec::new(),
                    (Some(c), Some(Some(sp))) => {
                        let mut spans = Vec::with_capacity(sp.count());
                        sp.each(&mut |w| {
                            spans.push((w.start, w.end));
                            Ok(())
                        })?;
                        c.x_of(spans.into_iter())
                    }
                    (Some(c), _) => c.wave_x(&k.ses[i].analysis.waves),
                };
                for &(a, b) in &x {
                    seen.0 = seen.0.min(a);
                    seen.1 = seen.1.max(b);
                }
                std::borrow::Cow::Owned(crate::analysis::occupancy::active_waves(
                    &x,
                    OVERVIEW_POINTS,
                ))
            }
        })
    }
}

/// An SE's waves the analysis handed off as soon as it was decoded, encoded as the index's
/// wave records in an unnamed temporary file: writing the index holds one SE's waves at a time
/// instead of every SE's (the SEs' tables go out in order, and each one's overview needs the
/// kernel-wide clock that only exists once every SE is decoded).
enum Spill {
    File {
        file: std::fs::File,
        count: usize,
    },
    /// Where no temporary file could be written: the records, in memory.
    Mem(Vec<WaveRec>),
}

impl Spill {
    /// Encodes `waves` to a temporary file, or keeps their records if that fails.
    fn new(waves: &[crate::sqtt::waves::Wave]) -> Spill {
        Self::to_file(waves).unwrap_or_else(|| Spill::Mem(waves.iter().map(wave_rec).collect()))
    }

    fn to_file(waves: &[crate::sqtt::waves::Wave]) -> Option<Spill> {
        let mut file = tempfile::tempfile().ok()?;
        {
            let mut out = std::io::BufWriter::with_capacity(1 << 16, &mut file);
            let mut rec = Vec::with_capacity(WAVE_LEN);
            for w in waves {
                rec.clear();
                encode_wave(&mut rec, &wave_rec(w));
                out.write_all(&rec).ok()?;
            }
            out.flush().ok()?;
        }
        Some(Spill::File {
            file,
            count: waves.len(),
        })
    }

    fn count(&self) -> usize {
        match self {
            Spill::File { count, .. } => *count,
            Spill::Mem(v) => v.len(),
        }
    }

    /// Calls `f` with each wave, in order.
    fn each(&self, f: &mut dyn FnMut(WaveRec) -> std::io::Result<()>) -> std::io::Result<()> {
        use std::io::Read;
        let (file, count) = match self {
            Spill::File { file, count } => (file, *count),
            Spill::Mem(v) => return v.iter().try_for_each(|w| f(*w)),
        };
        let mut file = file;
        file.seek(SeekFrom::Start(0))?;
        let mut r = std::io::BufReader::with_capacity(1 << 16, file);
        let mut b = [0u8; WAVE_LEN];
        for _ in 0..count {
            r.read_exact(&mut b)?;
            let le8 = |o: usize| {
                let mut v = [0u8; 8];
                v.copy_from_slice(&b[o..o + 8]);
                v
            };
            f(WaveRec {
                start: i64::from_le_bytes(le8(0)),
                end: i64::from_le_bytes(le8(8)),
                start_offset: u64::from_le_bytes(le8(16)),
                cu: u16::from_le_bytes([b[24], b[25]]),
                simd: b[26],
                slot: b[27],
                insts: u32::from_le_bytes([b[28], b[29], b[30], b[31]]),
            })?;
        }
        Ok(())
    }
}

/// One wave record of the index (`WAVE_LEN` bytes).
fn encode_wave(rec: &mut Vec<u8>, w: &WaveRec) {
    put_i64(rec, w.start);
    put_i64(rec, w.end);
    put_u64(rec, w.start_offset);
    rec.extend_from_slice(&w.cu.to_le_bytes());
    rec.push(w.simd);
    rec.push(w.slot);
    put_u32(rec, w.insts);
}

/// Analyses every kernel with SQTT data of `p` and returns its index records; `progress` gets
/// (kernels done, total). Holds every kernel's waves twice over: writing a file,
/// [`crate::wst::write_file_index_streamed`] encodes each kernel as it is analysed instead.
pub fn build(p: &crate::model::Profile, progress: &dyn Fn(usize, usize)) -> Vec<KernelRecord> {
    let mut out = Vec::new();
    each_kernel(p, progress, false, &mut |a, clocks, _, rows, splits| {
        out.push(KernelRecord::from_clocked(a, clocks, rows, splits));
        Ok(())
    })
    .unwrap_or_default();
    out
}

/// The kernels [`build`] and [`build_into`] index (every kernel with SQTT data).
pub fn kernel_count(p: &crate::model::Profile) -> usize {
    crate::analysis::kernels_with_sqtt(p).len()
}

/// What [`each_kernel`] hands each analysed kernel to: its analysis, table and splits.
type KernelSink<'a> = dyn FnMut(
        &KernelSqtt,
        &[crate::analysis::SeClock],
        &[Option<Spill>],
        &[InstStat],
        &KernelSplits,
    ) -> std::io::Result<()>
    + 'a;

/// Analyses each kernel with SQTT data and hands its analysis, table and splits to `f`, one
/// kernel alive at a time. `spill`: each SE is folded as it is decoded ([`fold_se`]: the
/// analysis handed to `f` then holds no waves or tokens, the spills hold the waves); without
/// it every SE's waves stay in the analysis.
fn each_kernel(
    p: &crate::model::Profile,
    progress: &dyn Fn(usize, usize),
    spill: bool,
    f: &mut KernelSink<'_>,
) -> std::io::Result<()> {
    let ks = crate::analysis::kernels_with_sqtt(p);
    for (i, &k) in ks.iter().enumerate() {
        // The index keeps waves, their x and the table: none of the per-token detail.
        if spill {
            if let Some((a, clocks, parts)) =
                crate::analysis::analyze_kernel_index_fold(p, k, &fold_se)
            {
                let mut table = crate::pipeline::TablePart::default();
                let mut splits = KernelSplits::default();
                let mut spilled = Vec::with_capacity(parts.len());
                // In SE order, as the whole kernel's table and splits meet them.
                for part in parts {
                    spilled.push(part.map(|pt| {
                        table.merge(pt.table);
                        splits.merge(pt.splits);
                        pt.waves
                    }));
                }
                let rows = table.finish(&splits.by_inst);
                f(&a, &clocks, &spilled, &rows, &splits)?;
            }
        } else if let Some((a, clocks, spilled)) =
            crate::analysis::analyze_kernel_index::<Spill>(p, k, None)
        {
            let splits = crate::analysis::hidden::kernel_splits(&a);
            let rows = crate::analysis::inst_stats_with(&a, &splits);
            f(&a, &clocks, &spilled, &rows, &splits)?;
        }
        progress(i + 1, ks.len());
    }
    Ok(())
}

/// What [`fold_se`] keeps of an SE: its waves (spilled) and its part of the kernel's table and
/// splits.
struct SePart {
    waves: Spill,
    table: crate::pipeline::TablePart,
    splits: KernelSplits,
}

/// Each SE as soon as it is decoded and mapped (in its decoding thread; the analysis drops it
/// after): its waves to a spill, its tokens folded into its table and splits, so the index
/// holds no SE's tokens and no waves beyond the SEs being decoded.
fn fold_se(
    st: &mut crate::analysis::SeTrace,
    disasm: &std::collections::HashMap<u64, String>,
) -> SePart {
    let (table, splits) = crate::pipeline::TablePart::take_se(st, disasm);
    SePart {
        waves: Spill::new(&st.analysis.waves),
        table,
        splits,
    }
}

/// Analyses every kernel with SQTT data of `p` and writes each one's tables to `w` as soon as
/// it is analysed (the analysis is dropped before the next kernel's starts).
pub fn build_into<W: Write + Seek>(
    w: &mut IndexWriter<W>,
    p: &crate::model::Profile,
    progress: &dyn Fn(usize, usize),
) -> std::io::Result<()> {
    each_kernel(
        p,
        progress,
        true,
        &mut |k, clocks, spilled, rows, splits| {
            w.add_src(&KernelSrc::Analysis {
                k,
                clocks,
                spilled,
                rows,
                splits,
            })
        },
    )
}

fn put_u32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut Vec<u8>, v: u64) {
    b.extend_from_slice(&v.to_le_bytes());
}
fn put_i64(b: &mut Vec<u8>, v: i64) {
    b.extend_from_slice(&v.to_le_bytes());
}
fn put_f64(b: &mut Vec<u8>, v: f64) {
    b.extend_from_slice(&v.to_bits().to_le_bytes());
}

fn hidden_fields(h: &HiddenBy) -> [i64; 7] {
    [h.valu, h.salu, h.vmem, h.lds, h.smem, h.branch, h.other]
}

fn put_split(b: &mut Vec<u8>, s: &LatencySplit) {
    put_i64(b, s.latency);
    put_i64(b, s.exposed);
    for v in hidden_fields(&s.hidden) {
        put_i64(b, v);
    }
}

fn split_from(l: [i64; 9]) -> LatencySplit {
    LatencySplit {
        latency: l[0],
        exposed: l[1],
        hidden: hidden_from([l[2], l[3], l[4], l[5], l[6], l[7], l[8]]),
    }
}

fn hidden_from(v: [i64; 7]) -> HiddenBy {
    HiddenBy {
        valu: v[0],
        salu: v[1],
        vmem: v[2],
        lds: v[3],
        smem: v[4],
        branch: v[5],
        other: v[6],
    }
}

/// Strings of one kernel, concatenated.
#[derive(Default)]
struct Strings(Vec<u8>);

impl Strings {
    fn add(&mut self, s: &str) -> (u32, u32) {
        let off = self.0.len() as u32;
        self.0.extend_from_slice(s.as_bytes());
        (off, s.len() as u32)
    }
}

/// Writes an index section to a seekable sink kernel by kernel: each kernel's tables go out as
/// they are encoded (the wave tables record by record), and only the directory (184 bytes a
/// kernel) is kept until [`IndexWriter::finish`] writes it, with the header, into the space
/// reserved at the section's start. Memory stays at one kernel's small tables whatever the
/// capture's size.
pub struct IndexWriter<W: Write + Seek> {
    w: W,
    /// Absolute position of the section's first byte in `w`.
    start: u64,
    /// Bytes written from `start`.
    pos: u64,
    /// Directory entries reserved after the header.
    reserved: usize,
    dir: Vec<u8>,
    kernels: usize,
    meta_len: u64,
    meta_crc: u32,
}

/// A table being streamed: its offset in the section, record count and running CRC.
struct TableOut {
    off: u64,
    count: usize,
    crc: crc32fast::Hasher,
}

impl TableOut {
    fn reference(self) -> [u8; 16] {
        let mut r = [0u8; 16];
        r[..8].copy_from_slice(&self.off.to_le_bytes());
        r[8..12].copy_from_slice(&(self.count as u32).to_le_bytes());
        r[12..].copy_from_slice(&self.crc.finalize().to_le_bytes());
        r
    }
}

impl<W: Write + Seek> IndexWriter<W> {
    /// Starts a section at `w`'s current position for a file whose META section is `meta`,
    /// reserving directory room for `kernels` entries (more are refused by `add`; fewer leave
    /// zero bytes between the directory and the first table, which readers skip).
    pub fn new(mut w: W, meta: &[u8], kernels: usize) -> std::io::Result<Self> {
        let start = w.stream_position()?;
        let reserve = HEADER_LEN + kernels * KERNEL_LEN;
        w.write_all(&vec![0u8; reserve])?;
        Ok(IndexWriter {
            w,
            start,
            pos: reserve as u64,
            reserved: kernels,
            dir: Vec::with_capacity(kernels * KERNEL_LEN),
            kernels: 0,
            meta_len: meta.len() as u64,
            meta_crc: crc32fast::hash(meta),
        })
    }

    fn write(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.w.write_all(b)?;
        self.pos += b.len() as u64;
        Ok(())
    }

    fn pad8(&mut self) -> std::io::Result<()> {
        let pad = (self.pos.div_ceil(8) * 8 - self.pos) as usize;
        self.write(&[0u8; 8][..pad])
    }

    fn begin(&mut self) -> std::io::Result<TableOut> {
        self.pad8()?;
        Ok(TableOut {
            off: self.pos,
            count: 0,
            crc: crc32fast::Hasher::new(),
        })
    }

    /// Appends one record (or, for the strings table, one byte run) to table `t`.
    fn record(&mut self, t: &mut TableOut, b: &[u8], count: usize) -> std::io::Result<()> {
        t.crc.update(b);
        t.count += count;
        self.write(b)
    }

    /// A whole table at once (the small ones).
    fn table(&mut self, b: &[u8], count: usize) -> std::io::Result<[u8; 16]> {
        let mut t = self.begin()?;
        self.record(&mut t, b, count)?;
        Ok(t.reference())
    }

    /// Appends one kernel's tables and its directory entry.
    pub fn add(&mut self, k: &KernelRecord) -> std::io::Result<()> {
        self.add_src(&KernelSrc::Record(k))
    }

    fn add_src(&mut self, k: &KernelSrc<'_>) -> std::io::Result<()> {
        if self.kernels == self.reserved {
            return Err(std::io::Error::other(format!(
                "index writer: more kernels than the {} reserved",
                self.reserved
            )));
        }
        let mut strings = Strings::default();
        let mut ses = Vec::with_capacity(k.se_count() * SE_LEN);
        let mut waves_total = 0usize;
        let mut rec = Vec::with_capacity(WAVE_LEN);
        let mut seen = (f64::INFINITY, f64::NEG_INFINITY);
        for i in 0..k.se_count() {
            let (se, itrace, error, note, count) = k.se(i);
            let mut wt = self.begin()?;
            k.each_wave(i, &mut |w| {
                rec.clear();
                encode_wave(&mut rec, &w);
                self.record(&mut wt, &rec, 1)
            })?;
            debug_assert_eq!(wt.count, count);
            waves_total += wt.count;
            let wref = wt.reference();
            let overview = k.overview(i, &mut seen)?;
            let mut steps = Vec::with_capacity(overview.len() * STEP_LEN);
            for p in overview.iter() {
                put_f64(&mut steps, p[0]);
                put_f64(&mut steps, p[1]);
            }
            let oref = self.table(&steps, overview.len())?;
            // One string: the error when the SE did not decode, else its note.
            let note = if error.is_some() { None } else { note };
            let (eo, el) = error.or(note.as_deref()).map_or((0, 0), |e| strings.add(e));
            put_u32(&mut ses, se);
            put_u32(
                &mut ses,
                u32::from(itrace)
                    | (u32::from(error.is_some()) << 1)
                    | (u32::from(note.is_some()) << 2),
            );
            put_u32(&mut ses, eo);
            put_u32(&mut ses, el);
            ses.extend_from_slice(&wref);
            ses.extend_from_slice(&oref);
        }
        let rows_in = k.rows();
        let mut rows = Vec::with_capacity(rows_in.len() * ROW_LEN);
        for r in rows_in {
            let (no, nl) = strings.add(&r.name);
            let (ko, kl) = strings.add(&r.key);
            let pos = r
                .key
                .strip_prefix('#')
                .and_then(|n| n.parse().ok())
                .unwrap_or(0u64);
            put_u64(&mut rows, r.pc.unwrap_or(u64::MAX));
            put_u64(&mut rows, pos);
            put_u64(&mut rows, r.count);
            put_i64(&mut rows, r.total);
            put_f64(&mut rows, r.mean);
            put_i64(&mut rows, r.min);
            put_i64(&mut rows, r.median);
            put_i64(&mut rows, r.max);
            put_f64(&mut rows, r.share);
            put_i64(&mut rows, r.stall);
            put_f64(&mut rows, r.stall_share);
            put_i64(&mut rows, r.amd_stall.unwrap_or(0));
            put_i64(&mut rows, r.amd_duration.unwrap_or(0));
            put_i64(&mut rows, r.exposed);
            for v in hidden_fields(&r.hidden) {
                put_i64(&mut rows, v);
            }
            put_f64(&mut rows, r.hidden_share);
            put_u32(&mut rows, no);
            put_u32(&mut rows, nl);
            put_u32(&mut rows, ko);
            put_u32(&mut rows, kl);
            put_u32(
                &mut rows,
                u32::from(r.amd_stall.is_some()) | (u32::from(r.amd_duration.is_some()) << 1),
            );
            put_u32(&mut rows, 0);
        }
        let sref = self.table(&ses, k.se_count())?;
        let rref = self.table(&rows, rows_in.len())?;
        let tref = self.table(&strings.0, strings.0.len())?;
        let mut wst = self.begin()?;
        for w in k.wave_splits() {
            rec.clear();
            put_u32(&mut rec, w.se);
            rec.extend_from_slice(&w.cu.to_le_bytes());
            rec.push(w.simd);
            rec.push(w.slot);
            put_u64(&mut rec, w.wave as u64);
            put_u64(&mut rec, w.instructions as u64);
            put_split(&mut rec, &w.split);
            self.record(&mut wst, &rec, 1)?;
        }
        let wsref = wst.reference();
        let d = &mut self.dir;
        put_u32(d, k.kernel());
        put_u32(d, u32::from(k.unit() == XUnit::Cycles));
        put_u32(d, u32::from(k.kernel_len().is_some()));
        put_u32(d, k.se_count() as u32);
        put_f64(d, k.kernel_len().unwrap_or(0.0));
        let (lo, hi) = k.x_range(seen);
        put_f64(d, lo);
        put_f64(d, hi);
        put_u64(d, waves_total as u64);
        put_split(d, &k.latency());
        d.extend_from_slice(&sref);
        d.extend_from_slice(&rref);
        d.extend_from_slice(&tref);
        d.extend_from_slice(&wsref);
        self.kernels += 1;
        Ok(())
    }

    /// Kernels added so far.
    pub fn kernels(&self) -> usize {
        self.kernels
    }

    /// Pads the section, writes its header and directory into the reserved space and leaves
    /// `w` at the section's end; returns the sink and the section's length.
    pub fn finish(mut self) -> std::io::Result<(W, u64)> {
        self.pad8()?;
        let total = self.pos;
        let mut head = Vec::with_capacity(HEADER_LEN + self.dir.len());
        head.extend_from_slice(&MAGIC);
        put_u32(&mut head, VERSION);
        put_u32(&mut head, self.kernels as u32);
        put_u64(&mut head, self.meta_len);
        put_u32(&mut head, self.meta_crc);
        put_u32(&mut head, crc32fast::hash(&self.dir));
        put_u64(&mut head, HEADER_LEN as u64);
        put_u64(&mut head, total);
        head.resize(HEADER_LEN, 0);
        head.extend_from_slice(&self.dir);
        self.w.seek(SeekFrom::Start(self.start))?;
        self.w.write_all(&head)?;
        self.w.seek(SeekFrom::Start(self.start + total))?;
        Ok((self.w, total))
    }
}

/// Serializes `kernels` as an index section for a file whose META section is `meta`.
pub fn encode(kernels: &[KernelRecord], meta: &[u8]) -> Vec<u8> {
    let write = || -> std::io::Result<Vec<u8>> {
        let mut w = IndexWriter::new(std::io::Cursor::new(Vec::new()), meta, kernels.len())?;
        for k in kernels {
            w.add(k)?;
        }
        Ok(w.finish()?.0.into_inner())
    };
    // A Vec sink does not fail (and `add` is given no more kernels than reserved).
    write().unwrap_or_default()
}

/// A table of fixed-size records, CRC-checked.
#[derive(Clone, Copy)]
struct Table<'a> {
    bytes: &'a [u8],
    count: usize,
    /// Absolute offset (for errors).
    at: u64,
    crc: u32,
}

/// An index section read in place (from a memory map).
#[derive(Clone, Copy)]
pub struct IndexView<'a> {
    section: Reader<'a>,
    kernels: usize,
    dir: Reader<'a>,
    /// The layout version ([`VERSION`] or [`VERSION_1`]).
    version: u32,
    /// Bytes per directory entry in that version.
    entry_len: usize,
}

/// One kernel's entry, its tables checked.
#[derive(Clone)]
pub struct KernelEntry<'a> {
    pub kernel: usize,
    pub unit: XUnit,
    pub kernel_len: Option<f64>,
    pub x_range: (f64, f64),
    pub waves: u64,
    pub latency: LatencySplit,
    ses: Table<'a>,
    rows: Table<'a>,
    /// `None` in a version-1 index.
    wave_splits: Option<Table<'a>>,
    strings: &'a str,
    strings_at: u64,
}

/// One SE of a kernel (its waves and overview are checked when read).
#[derive(Clone)]
pub struct SeEntry<'a> {
    pub se: u32,
    pub itrace: bool,
    pub error: Option<&'a str>,
    /// What the SE's results do not cover (`SeTrace::notes`, a line each); `None` in an index
    /// an earlier build wrote.
    pub note: Option<&'a str>,
    waves: Table<'a>,
    overview: Table<'a>,
}

fn bad(offset: u64, why: impl Into<String>) -> IndexError {
    IndexError {
        offset,
        why: why.into(),
    }
}

impl<'a> IndexView<'a> {
    /// Reads the header and directory of `section` (starting at absolute offset `base`) and
    /// checks that the index belongs to the file's metadata `meta`.
    pub fn parse(section: &'a [u8], base: u64, meta: &[u8]) -> Result<Self, IndexError> {
        let r = Reader::with_base(section, base);
        let magic = r.array_at::<8>(0, "index magic")?;
        if magic != MAGIC {
            return Err(bad(base, "bad magic"));
        }
        let version = r.u32_at(8, "index version")?;
        let entry_len = match version {
            VERSION => KERNEL_LEN,
            VERSION_1 => KERNEL_LEN_V1,
            _ => {
                return Err(bad(
                    base + 8,
                    format!("version {version}, this build reads {VERSION_1} and {VERSION}"),
                ))
            }
        };
        let kernels = r.u32_at(12, "index kernel count")? as usize;
        let meta_len = r.u64_at(16, "index metadata length")?;
        let meta_crc = r.u32_at(24, "index metadata crc")?;
        if meta_len != meta.len() as u64 || meta_crc != crc32fast::hash(meta) {
            return Err(bad(
                base + 16,
                "written for other metadata than this file's (stale index)",
            ));
        }
        let dir_crc = r.u32_at(28, "index directory crc")?;
        let dir_off = r.u64_at(32, "index directory offset")?;
        let len = r.u64_at(40, "index length")?;
        if len != section.len() as u64 {
            return Err(bad(
                base + 40,
                format!("length {len}, section has {}", section.len()),
            ));
        }
        let dir_len = kernels
            .checked_mul(entry_len)
            .ok_or_else(|| bad(base + 12, "kernel count overflows"))?;
        let dir = r.sub(
            usize::try_from(dir_off).map_err(|_| bad(base + 32, "directory offset"))?,
            dir_len,
            "index directory",
        )?;
        if crc32fast::hash(dir.data()) != dir_crc {
            return Err(bad(dir.base(), "directory checksum mismatch"));
        }
        Ok(IndexView {
            section: r,
            kernels,
            dir,
            version,
            entry_len,
        })
    }

    pub fn kernel_count(&self) -> usize {
        self.kernels
    }

    /// The layout version of this index.
    pub fn version(&self) -> u32 {
        self.version
    }

    fn table(&self, r: &Reader<'a>, pos: usize, rec: usize) -> Result<Table<'a>, IndexError> {
        let at = r.base() + pos as u64;
        let off = r.u64_at(pos, "table offset")?;
        let count = r.u32_at(pos + 8, "table count")? as usize;
        let crc = r.u32_at(pos + 12, "table crc")?;
        let len = count
            .checked_mul(rec)
            .ok_or_else(|| bad(at, "table size overflows"))?;
        let off = usize::try_from(off).map_err(|_| bad(at, "table offset"))?;
        let bytes = self.section.slice_at(off, len, "index table")?;
        let t = Table {
            bytes,
            count,
            at: self.section.base() + off as u64,
            crc,
        };
        // Large tables (waves, wave splits) are checked when read; the small ones here.
        if rec != WAVE_LEN && rec != WSPLIT_LEN {
            t.check("table")?;
        }
        Ok(t)
    }

    /// The `i`th kernel entry of the directory.
    pub fn entry(&self, i: usize) -> Result<KernelEntry<'a>, IndexError> {
        let r = self
            .dir
            .sub(i * self.entry_len, self.entry_len, "kernel entry")?;
        let unit = match r.u32_at(4, "x unit")? {
            0 => XUnit::Micros,
            1 => XUnit::Cycles,
            u => return Err(bad(r.base() + 4, format!("unknown x unit {u}"))),
        };
        let flags = r.u32_at(8, "kernel flags")?;
        let mut l = [0i64; 9];
        for (j, v) in l.iter_mut().enumerate() {
            *v = r.i64_at(48 + 8 * j, "latency split")?;
        }
        let ses = self.table(&r, 120, SE_LEN)?;
        if ses.count != r.u32_at(12, "SE count")? as usize {
            return Err(bad(r.base() + 12, "SE count disagrees with its table"));
        }
        let rows = self.table(&r, 136, ROW_LEN)?;
        let st = self.table(&r, 152, 1)?;
        let wave_splits = if self.version >= VERSION {
            Some(self.table(&r, 168, WSPLIT_LEN)?)
        } else {
            None
        };
        let strings = std::str::from_utf8(st.bytes)
            .map_err(|e| bad(st.at + e.valid_up_to() as u64, "strings are not UTF-8"))?;
        Ok(KernelEntry {
            kernel: r.u32_at(0, "kernel")? as usize,
            unit,
            kernel_len: (flags & 1 != 0).then_some(r.f64_at(16, "kernel length")?),
            x_range: (r.f64_at(24, "x lo")?, r.f64_at(32, "x hi")?),
            waves: r.u64_at(40, "wave count")?,
            latency: split_from(l),
            ses,
            rows,
            wave_splits,
            strings,
            strings_at: st.at,
        })
    }

    /// The entry of profile kernel `k`, if indexed.
    pub fn kernel(&self, k: usize) -> Option<Result<KernelEntry<'a>, IndexError>> {
        (0..self.kernels)
            .find(|&i| {
                self.dir
                    .u32_at(i * self.entry_len, "kernel")
                    .is_ok_and(|v| v as usize == k)
            })
            .map(|i| self.entry(i))
    }

    /// Every entry (stops at the first bad one).
    pub fn entries(&self) -> Result<Vec<KernelEntry<'a>>, IndexError> {
        (0..self.kernels).map(|i| self.entry(i)).collect()
    }

    fn se(&self, k: &KernelEntry<'a>, i: usize) -> Result<SeEntry<'a>, IndexError> {
        let r = Reader::with_base(k.ses.bytes, k.ses.at).sub(i * SE_LEN, SE_LEN, "SE record")?;
        let flags = r.u32_at(4, "SE flags")?;
        let text = if flags & 6 != 0 {
            Some(k.string(
                r.u32_at(8, "error offset")?,
                r.u32_at(12, "error length")?,
                r.base(),
            )?)
        } else {
            None
        };
        let (error, note) = if flags & 2 != 0 {
            (text, None)
        } else {
            (None, text)
        };
        Ok(SeEntry {
            se: r.u32_at(0, "SE")?,
            itrace: flags & 1 != 0,
            error,
            note,
            waves: self.table(&r, 16, WAVE_LEN)?,
            overview: self.table(&r, 32, STEP_LEN)?,
        })
    }

    /// The SEs of kernel entry `k`.
    pub fn ses(&self, k: &KernelEntry<'a>) -> Result<Vec<SeEntry<'a>>, IndexError> {
        (0..k.ses.count).map(|i| self.se(k, i)).collect()
    }
}

impl Table<'_> {
    /// Checks the table's bytes against its CRC (`what` names it in the error).
    fn check(&self, what: &str) -> Result<(), IndexError> {
        if crc32fast::hash(self.bytes) != self.crc {
            return Err(bad(self.at, format!("{what} checksum mismatch")));
        }
        Ok(())
    }
}

impl<'a> KernelEntry<'a> {
    fn string(&self, off: u32, len: u32, at: u64) -> Result<&'a str, IndexError> {
        let (o, l) = (off as usize, len as usize);
        let s = o
            .checked_add(l)
            .and_then(|e| self.strings.get(o..e))
            .ok_or_else(|| {
                bad(
                    at,
                    format!(
                        "string {off}+{len} outside the strings table ({})",
                        self.strings_at
                    ),
                )
            })?;
        Ok(s)
    }

    /// Absolute file range of the wave-split table (empty in a version-1 index): what a reader
    /// that has scanned it may release ([`crate::model::BlobStore::release`]).
    pub fn wave_split_range(&self) -> std::ops::Range<u64> {
        self.wave_splits
            .map_or(0..0, |t| t.at..t.at + t.bytes.len() as u64)
    }

    /// Checks the wave-split table's CRC (a pass over it: done by
    /// [`KernelEntry::wave_splits`]; none in a version-1 index).
    pub fn verify_wave_splits(&self) -> Result<(), IndexError> {
        match &self.wave_splits {
            Some(t) => t.check("wave split table"),
            None => Ok(()),
        }
    }

    /// The latency split of each instruction-traced wave, as the analysis computed it, checked;
    /// `None` from a version-1 index, which did not save them.
    pub fn wave_splits(&self) -> Option<Result<Vec<WaveSplit>, IndexError>> {
        let t = self.wave_splits?;
        if let Err(e) = t.check("wave split table") {
            return Some(Err(e));
        }
        Some(
            (0..t.count)
                .map(|i| {
                    let r = Reader::with_base(t.bytes, t.at).sub(
                        i * WSPLIT_LEN,
                        WSPLIT_LEN,
                        "wave split",
                    )?;
                    let mut l = [0i64; 9];
                    for (j, v) in l.iter_mut().enumerate() {
                        *v = r.i64_at(24 + 8 * j, "wave split")?;
                    }
                    let count = |pos, what| {
                        let v = r.u64_at(pos, what)?;
                        usize::try_from(v)
                            .map_err(|_| bad(r.base() + pos as u64, format!("{what} {v}")))
                    };
                    Ok(WaveSplit {
                        se: r.u32_at(0, "wave split SE")?,
                        cu: r.u16_at(4, "wave split cu")?,
                        simd: r.u8_at(6, "wave split simd")?,
                        slot: r.u8_at(7, "wave split slot")?,
                        wave: count(8, "wave split wave")?,
                        instructions: count(16, "wave split instructions")?,
                        split: split_from(l),
                    })
                })
                .collect(),
        )
    }

    /// The instruction table, as the analysis computed it.
    pub fn rows(&self) -> Result<Vec<InstStat>, IndexError> {
        let mut out = Vec::with_capacity(self.rows.count);
        for i in 0..self.rows.count {
            let r = Reader::with_base(self.rows.bytes, self.rows.at).sub(
                i * ROW_LEN,
                ROW_LEN,
                "row",
            )?;
            let f = |j: usize| r.i64_at(8 * j, "row field");
            let g = |j: usize| r.f64_at(8 * j, "row field");
            let flags = r.u32_at(192, "row flags")?;
            let pc = r.u64_at(0, "row pc")?;
            let mut hidden = [0i64; 7];
            for (j, v) in hidden.iter_mut().enumerate() {
                *v = f(14 + j)?;
            }
            out.push(InstStat {
                key: self
                    .string(r.u32_at(184, "key")?, r.u32_at(188, "key")?, r.base())?
                    .to_string(),
                pc: (pc != u64::MAX).then_some(pc),
                name: self
                    .string(r.u32_at(176, "name")?, r.u32_at(180, "name")?, r.base())?
                    .to_string(),
                count: r.u64_at(16, "row count")?,
                total: f(3)?,
                mean: g(4)?,
                min: f(5)?,
                median: f(6)?,
                max: f(7)?,
                share: g(8)?,
                stall: f(9)?,
                stall_share: g(10)?,
                amd_stall: (flags & 1 != 0).then_some(f(11)?),
                amd_duration: (flags & 2 != 0).then_some(f(12)?),
                exposed: f(13)?,
                hidden: hidden_from(hidden),
                hidden_share: g(21)?,
            });
        }
        Ok(out)
    }
}

impl SeEntry<'_> {
    pub fn wave_count(&self) -> usize {
        self.waves.count
    }

    /// Absolute file range of the wave table: what a reader that has scanned it may release
    /// ([`crate::model::BlobStore::release`]).
    pub fn wave_range(&self) -> std::ops::Range<u64> {
        self.waves.at..self.waves.at + self.waves.bytes.len() as u64
    }

    /// Checks the wave table's CRC (a pass over it: done by [`SeEntry::waves`], or once before
    /// reading single waves with [`SeEntry::wave`]).
    pub fn verify(&self) -> Result<(), IndexError> {
        self.waves.check("wave table")
    }

    /// Every wave, checked.
    pub fn waves(&self) -> Result<Vec<WaveRec>, IndexError> {
        self.verify()?;
        (0..self.waves.count).map(|i| self.wave(i)).collect()
    }

    /// Wave `i` (not checked against the CRC: call [`SeEntry::verify`] first).
    pub fn wave(&self, i: usize) -> Result<WaveRec, IndexError> {
        let r = Reader::with_base(self.waves.bytes, self.waves.at).sub(
            i * WAVE_LEN,
            WAVE_LEN,
            "wave",
        )?;
        Ok(WaveRec {
            start: r.i64_at(0, "wave start")?,
            end: r.i64_at(8, "wave end")?,
            start_offset: r.u64_at(16, "wave offset")?,
            cu: r.u16_at(24, "wave cu")?,
            simd: r.u8_at(26, "wave simd")?,
            slot: r.u8_at(27, "wave slot")?,
            insts: r.u32_at(28, "wave insts")?,
        })
    }

    /// The active-wave overview steps ([x, waves]).
    pub fn overview(&self) -> Vec<[f64; 2]> {
        self.overview
            .bytes
            .chunks_exact(STEP_LEN)
            .map(|c| {
                let x = f64::from_le_bytes(c[..8].try_into().unwrap_or_default());
                let y = f64::from_le_bytes(c[8..].try_into().unwrap_or_default());
                [x, y]
            })
            .collect()
    }
}
