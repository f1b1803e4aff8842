//! Per-kernel SQTT analysis of a [`Profile`]: every SE blob of a kernel run decoded and aligned
//! to the GPU clock, instruction tokens mapped to PCs, per-wave instruction lists and the
//! per-instruction latency table. Pure and headless: the app's views, `wavescope stats` and
//! [`crate::diff`] share it (it moved here from the app so the diff engine can use it).

use std::collections::HashMap;

mod cdna;
pub mod hidden;
pub mod occupancy;
pub mod pressure;
pub mod source;
pub mod traced;

use crate::model::{KernelExec, Profile};
use crate::sqtt::{self, AnalyzeOptions, BlobAnalysis, InstToken, TokenKind};
use serde::Serialize;

/// The x unit of a kernel's SQTT view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum XUnit {
    /// Microseconds since the kernel's start on the GPU clock (every SE aligned by its markers).
    Micros,
    /// Shader cycles since each blob's start (no markers to align the SEs).
    Cycles,
}

/// One SE of a kernel run.
#[derive(Clone)]
pub struct SeTrace {
    pub se: u32,
    pub itrace: bool,
    pub analysis: BlobAnalysis,
    /// Why the blob could not be decoded, if it could not.
    pub error: Option<String>,
    /// x of each wave's start and end (same order as `analysis.waves`).
    pub wave_x: Vec<(f64, f64)>,
    /// x of each token (same order as `analysis.tokens`).
    pub token_x: Vec<f64>,
    /// Tokens grouped by wave (CSR): `token_order[token_start[w]..token_start[w+1]]` are the
    /// token indices of wave `w` in time order.
    pub token_order: Vec<u32>,
    pub token_start: Vec<u32>,
    /// PC of each token when the program was available to map them (`u64::MAX`: unmapped);
    /// empty when nothing was mapped.
    pub token_pc: Vec<u64>,
    /// Where instruction mapping lost track of a wave or met a token without one, if it did
    /// (the walk goes on with the other waves).
    pub map_error: Option<String>,
    /// Every mapped instruction, with AMD's issue time, stall and duration beside our token
    /// time (on CDNA this includes the internal instructions no CDNA_INST token stands for).
    /// Empty when the kernel was analysed without detail ([`KernelOptions::detail`]).
    pub mapped: Vec<sqtt::map::MappedInst>,
    /// AMD's stall and duration summed per PC over `mapped` (sorted by PC), kept with or
    /// without the detail.
    pub amd_pc: Vec<(u64, i64, i64)>,
    /// The instruction table part and latency splits of an instruction-traced RDNA SE, when
    /// they were folded in its decode and its tokens were not kept
    /// ([`crate::pipeline::analyze_folded`]; [`crate::pipeline::TablePart::take_se`]).
    pub(crate) folded: Option<crate::pipeline::SeFolded>,
}

/// Which token index [`SeTrace::build`] makes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TokenIndex {
    Always,
    /// Only for an SE with tokens (`token_start` would be a zero per wave: millions at real
    /// sizes, for a fold that reads none).
    IfTokens,
    /// None ([`SeTrace::has_token_index`]): an SE folded straight from the decode that mapped
    /// it, whose instruction table needs only each wave's token count (the index is a scatter
    /// of every token and a list per wave, about 4% of `stats`).
    Later,
}

/// A small xorshift generator for the analysis' randomized unit tests (no dependency): each
/// call gives a number below its argument.
#[cfg(test)]
pub(crate) fn test_rng(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut x = seed;
    move |m| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    }
}

/// How many of an SE's decoder warnings [`SeTrace::notes`] lists before it counts the rest.
const NOTE_WARNINGS: usize = 3;

/// How much of a mapped SE blob is decoded between two releases of its pages (analysis of a
/// kernel): resident at most this much more per SE being decoded.
const RELEASE_STEP: usize = 4 << 20;

impl SeTrace {
    /// What the user must be told of this SE's results when its blob did decode: the decoder's
    /// warnings (a truncated or damaged stream; the first few, then how many more) and where
    /// instruction mapping lost track (the instructions of the waves it lost, from there on,
    /// are then not in its statistics). Empty for a clean SE.
    pub fn notes(&self) -> Vec<String> {
        let w = &self.analysis.warnings;
        let mut n: Vec<String> = w
            .iter()
            .take(NOTE_WARNINGS)
            .map(|w| format!("nibble {}: {}", w.offset, w.message))
            .collect();
        if w.len() > NOTE_WARNINGS {
            n.push(format!("{} more decoder warnings", w.len() - NOTE_WARNINGS));
        }
        if let Some(e) = &self.map_error {
            n.push(format!(
                "instruction mapping lost track at {e}: a lost wave's instructions from there \
                 on and tokens without a live wave are not counted"
            ));
        }
        n
    }

    /// Whether the token index is built ([`SeTrace::wave_tokens`] reads it): always, but in an
    /// SE handed to a fold straight from the decode that mapped it ([`SeFold`]), which the
    /// instruction table folds from each wave's token count alone.
    pub fn has_token_index(&self) -> bool {
        !self.token_start.is_empty() || self.analysis.tokens.is_empty()
    }

    /// How many tokens wave `w` has: from the index, or without one from the wave's record
    /// (`Wave::insts` counts each token the analyzer attributes to it: the same number).
    pub fn wave_token_count(&self, w: usize) -> usize {
        match self.has_token_index() {
            true => self.wave_tokens(w).len(),
            false => self.analysis.waves.get(w).map_or(0, |x| x.insts as usize),
        }
    }

    /// A copy of this SE with its token index, for what reads tokens wave by wave when it was
    /// handed on without one ([`SeTrace::has_token_index`]).
    pub(crate) fn with_token_index(&self) -> SeTrace {
        let mut copy = self.clone();
        (copy.token_order, copy.token_start) =
            group_tokens(&self.analysis.tokens, self.analysis.waves.len());
        copy
    }

    /// Token indices of wave `w`, in time order (none while the index is not built,
    /// [`SeTrace::has_token_index`]).
    pub fn wave_tokens(&self, w: usize) -> &[u32] {
        let a = self.token_start.get(w).copied().unwrap_or(0) as usize;
        let b = self.token_start.get(w + 1).copied().unwrap_or(0) as usize;
        self.token_order.get(a..b).unwrap_or(&[])
    }

    /// Builds the x coordinates and the token index from an analysis.
    pub fn new(
        se: u32,
        itrace: bool,
        analysis: BlobAnalysis,
        to_x: &dyn Fn(i64) -> f64,
    ) -> SeTrace {
        SeTrace::with_detail(se, itrace, analysis, to_x, true)
    }

    /// [`SeTrace::new`]; without `detail`, `token_x` stays empty (8 bytes per token the
    /// table and the CLI do not need).
    pub fn with_detail(
        se: u32,
        itrace: bool,
        analysis: BlobAnalysis,
        to_x: &dyn Fn(i64) -> f64,
        detail: bool,
    ) -> SeTrace {
        SeTrace::build(se, itrace, analysis, to_x, detail, true, TokenIndex::Always)
    }

    /// [`SeTrace::with_detail`]; without `wave_x`, `wave_x` stays empty too (16 bytes and two
    /// clock conversions per wave that the instruction table does not need), and the token
    /// index as `index` says.
    fn build(
        se: u32,
        itrace: bool,
        analysis: BlobAnalysis,
        to_x: &dyn Fn(i64) -> f64,
        detail: bool,
        wave_x: bool,
        index: TokenIndex,
    ) -> SeTrace {
        let wave_x = if wave_x {
            analysis
                .waves
                .iter()
                .map(|w| (to_x(w.start), to_x(w.end)))
                .collect()
        } else {
            Vec::new()
        };
        let token_x = if detail {
            analysis.tokens.iter().map(|t| to_x(t.time)).collect()
        } else {
            Vec::new()
        };
        let (token_order, token_start) = match index {
            // Nothing to index: a wave's tokens read as none either way.
            TokenIndex::IfTokens if analysis.tokens.is_empty() => (Vec::new(), Vec::new()),
            TokenIndex::Later => (Vec::new(), Vec::new()),
            _ => group_tokens(&analysis.tokens, analysis.waves.len()),
        };
        SeTrace {
            se,
            itrace,
            analysis,
            error: None,
            wave_x,
            token_x,
            token_order,
            token_start,
            token_pc: Vec::new(),
            map_error: None,
            mapped: Vec::new(),
            amd_pc: Vec::new(),
            folded: None,
        }
    }

    /// Maps this SE's tokens to PCs of `code` (traces::sqtt::map), filling `token_pc` and
    /// adding disassembly to `disasm`.
    pub fn map_pcs(
        &mut self,
        blob: &[u8],
        code: &crate::isa::CodeObject,
        disasm: &mut HashMap<u64, String>,
    ) {
        crate::pipeline::map_se(self, blob, code, disasm, true);
    }
}

/// Counting sort of tokens by wave (stable, so each wave keeps time order).
fn group_tokens(tokens: &[InstToken], waves: usize) -> (Vec<u32>, Vec<u32>) {
    group_by_wave(tokens, waves, |t| t.wave)
}

/// Counting sort of `items` by their wave (stable): the item indices in wave order, and per
/// wave its start in that order (`waves + 1` entries). Items of a wave past `waves` are left
/// out.
pub(crate) fn group_by_wave<T>(
    items: &[T],
    waves: usize,
    wave: impl Fn(&T) -> u32,
) -> (Vec<u32>, Vec<u32>) {
    // Counted one place further on than the starts, so that after the prefix sum
    // `start[w + 1]` is where wave `w`'s items begin: filling moves it to where they end, which
    // is wave `w + 1`'s start. No second array of cursors (a copy of `start`, fresh pages).
    let mut start = crate::spare::filled(waves + 2, 0);
    for t in items {
        if let Some(c) = start.get_mut(wave(t) as usize + 2) {
            *c += 1;
        }
    }
    for i in 1..start.len() {
        start[i] += start[i - 1];
    }
    let mut order = crate::spare::filled(start.last().copied().unwrap_or(0) as usize, 0);
    for (i, t) in items.iter().enumerate() {
        let w = wave(t) as usize;
        if w < waves {
            let f = &mut start[w + 1];
            if let Some(slot) = order.get_mut(*f as usize) {
                *slot = i as u32;
            }
            *f += 1;
        }
    }
    start.truncate(waves + 1);
    (order, start)
}

/// The SQTT data of one kernel run.
pub struct KernelSqtt {
    pub kernel: usize,
    pub name: String,
    pub unit: XUnit,
    pub ses: Vec<SeTrace>,
    /// Duration of the kernel in x units (from its GPU timestamps), if known.
    pub kernel_len: Option<f64>,
    /// Disassembly by PC, for mapped tokens.
    pub disasm: HashMap<u64, String>,
    /// How the streams split into XCC and SE (`None`: one XCC, streams are SEs).
    pub se_layout: Option<crate::model::SeLayout>,
}

impl KernelSqtt {
    /// Display name of stream `se`: "XCC x · SE y" on a multi-XCC device, else "SE n".
    pub fn se_name(&self, se: u32) -> String {
        crate::model::se_label(self.se_layout, se)
    }

    pub fn wave_count(&self) -> usize {
        self.ses.iter().map(|s| s.analysis.waves.len()).sum()
    }

    /// x range covered by all waves.
    pub fn x_range(&self) -> (f64, f64) {
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for s in &self.ses {
            for &(a, b) in &s.wave_x {
                lo = lo.min(a);
                hi = hi.max(b);
            }
        }
        if lo > hi {
            (0.0, self.kernel_len.unwrap_or(1.0).max(1e-3))
        } else {
            (lo, hi)
        }
    }
}

/// Whether an SQTT stream belongs to a kernel run.
pub fn sqtt_matches(p: &Profile, k: &KernelExec, s: &crate::model::SqttTrace) -> bool {
    let same_dev = s.device == k.device
        || match (
            p.devices.get(s.device as usize),
            p.devices.get(k.device as usize),
        ) {
            (Some(a), Some(b)) => a.process == b.process && a.base_name() == b.base_name(),
            _ => false,
        };
    same_dev
        && Some(s.kern) == k.kern
        && (s.exec_tag.is_none() || k.exec_tag.is_none() || s.exec_tag == k.exec_tag)
}

/// Kernels that have SQTT data.
pub fn kernels_with_sqtt(p: &Profile) -> Vec<usize> {
    (0..p.kernels.len())
        .filter(|&i| p.sqtt.iter().any(|s| sqtt_matches(p, &p.kernels[i], s)))
        .collect()
}

/// Decodes every SE blob of kernel `ki` and aligns them on the GPU clock.
/// `progress` is called with (done, total) for each SE once all are done; [`analyze_kernel_par`]
/// reports while the SEs are decoded.
pub fn analyze_kernel(
    p: &Profile,
    ki: usize,
    progress: &mut dyn FnMut(usize, usize),
) -> Option<KernelSqtt> {
    let k = analyze_kernel_par(p, ki, &|_, _| {});
    let n = k.as_ref().map_or(0, |k| k.ses.len());
    for i in 0..n {
        progress(i + 1, n);
    }
    k
}

/// [`analyze_kernel`] with the SEs decoded and mapped in parallel (rayon); `progress` is called
/// with (done, total) from the worker threads as each SE's decode finishes.
pub fn analyze_kernel_par(
    p: &Profile,
    ki: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Option<KernelSqtt> {
    analyze_kernel_with(p, ki, progress, KernelOptions::FULL)
}

/// What the kernel analysis keeps of each SE beyond its waves, tokens and the instruction
/// table's inputs: one set of flags for every entry point.
#[derive(Debug, Clone, Copy)]
pub struct KernelOptions {
    /// Every mapped instruction with its disassembly (`SeTrace::mapped`, for
    /// [`traced_waves`]): most of the memory, and only the full analysis keeps it.
    pub detail: bool,
    /// Every token's x (`SeTrace::token_x`; 8 bytes per token): the app's view draws them.
    pub token_x: bool,
    /// Every wave's x (`SeTrace::wave_x` and so [`KernelSqtt::x_range`]; 16 bytes and two
    /// clock conversions per wave): a view needs them, the table does not.
    pub wave_x: bool,
    /// Each SE's waves and tokens shrunk to their length as soon as it is decoded (growth
    /// capacity is most of a large capture's memory otherwise).
    pub compact: bool,
    /// The SEs without instruction tracing analysed without wave records where that is exact
    /// ([`AnalyzeOptions::record_free`]; again with records where it gives up): for a fold
    /// that reads only their wave count, first start and achieved occupancy ([`kernel_table`]).
    /// The instruction-traced RDNA SEs folded in their decode too
    /// ([`crate::pipeline::analyze_folded`]; where it misses, decoded again with records).
    pub record_free: bool,
}

impl KernelOptions {
    /// Everything ([`analyze_kernel_par`]).
    pub const FULL: KernelOptions = KernelOptions {
        detail: true,
        token_x: true,
        wave_x: true,
        compact: false,
        record_free: false,
    };
    /// The app's SQTT view ([`analyze_kernel_view`]).
    pub const VIEW: KernelOptions = KernelOptions {
        detail: false,
        token_x: true,
        wave_x: true,
        compact: false,
        record_free: false,
    };
    /// Waves with their x and the table's inputs, no per-token detail (the diff engine).
    pub const WAVES: KernelOptions = KernelOptions {
        detail: false,
        token_x: false,
        wave_x: true,
        compact: false,
        record_free: false,
    };
    /// The instruction table's inputs alone ([`analyze_kernel_table`]).
    pub const TABLE: KernelOptions = KernelOptions {
        detail: false,
        token_x: false,
        wave_x: false,
        compact: false,
        record_free: false,
    };
    /// [`KernelOptions::TABLE`], compact ([`analyze_kernel_index`], [`kernel_table`]).
    pub const INDEX: KernelOptions = KernelOptions {
        detail: false,
        token_x: false,
        wave_x: false,
        compact: true,
        record_free: false,
    };
    /// [`KernelOptions::INDEX`] without wave records ([`kernel_table`]).
    pub const STATS: KernelOptions = KernelOptions {
        record_free: true,
        ..KernelOptions::INDEX
    };
}

/// [`analyze_kernel_par`] with options.
pub fn analyze_kernel_with(
    p: &Profile,
    ki: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
    opts: KernelOptions,
) -> Option<KernelSqtt> {
    analyze_kernel_clocked::<()>(p, ki, progress, opts, PerSe::Keep).map(|(k, _, _)| k)
}

/// What the app's SQTT view needs: every token's x (it draws them) but not the list of mapped
/// instructions (`SeTrace::mapped`, most of the memory; the view lists a wave's instructions
/// from its tokens, `token_pc` and the disassembly, which are kept).
pub fn analyze_kernel_view(
    p: &Profile,
    ki: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Option<KernelSqtt> {
    analyze_kernel_with(p, ki, progress, KernelOptions::VIEW)
}

/// What the app's SQTT view analyses of kernel `ki`, for a view that keeps its own compact
/// columns: [`analyze_kernel_index_fold`] in the view's order, the instruction-traced SEs
/// first, one at a time (a traced SE's decode is most of the memory; only what the view keeps
/// of the others sits beside it), then the others in parallel. Each SE goes to `fold` in its
/// decoding thread (mapped, no x: the view computes x from cycles with each SE's clock,
/// returned in `ses` order), which takes what it keeps and may let the SE's records go as it
/// goes; what is left of its waves and tokens is dropped once it returns.
#[allow(clippy::type_complexity)]
pub fn analyze_kernel_view_fold<T: Send>(
    p: &Profile,
    ki: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
    fold: &SeTake<'_, T>,
) -> Option<(KernelSqtt, Vec<SeClock>, Vec<Option<T>>)> {
    analyze_kernel_clocked(p, ki, progress, KernelOptions::INDEX, PerSe::View(fold))
}

/// What the instruction table, the latency splits and achieved occupancy need of kernel `ki`:
/// [`analyze_kernel_with`] without detail and without the waves' x.
pub fn analyze_kernel_table(p: &Profile, ki: usize) -> Option<KernelSqtt> {
    analyze_kernel_with(p, ki, &|_, _| {}, KernelOptions::TABLE)
}

/// Where [`analyze_kernel_index`] hands the waves of an SE without instruction tokens as soon
/// as it is decoded (the index writes them out; nothing else of the analysis reads them):
/// `Some` takes them, and the SE's `analysis.waves` is left empty; `None` keeps them.
pub type WaveSpill<'a, T> = dyn Fn(&[sqtt::waves::Wave]) -> Option<T> + Sync + 'a;

/// Where [`kernel_table`]'s analysis hands each decoded SE, with its tokens mapped to PCs
/// (`token_pc`, `amd_pc`) and the disassembly of those PCs, in the SE's decoding thread; its
/// waves, tokens and mapping are dropped once this returns. The SE has no x.
/// An instruction-traced RDNA SE comes with its table part and latency splits folded in the
/// pass that decoded and mapped it and no tokens ([`crate::pipeline::analyze_folded`]; the
/// fold takes them with [`crate::pipeline::TablePart::take_se`]), or, where that fold could
/// not be exact, decoded again with its tokens but without its token index
/// ([`SeTrace::has_token_index`]; [`crate::pipeline::TablePart::of_se`] does without).
pub type SeFold<'a, T> = dyn Fn(&mut SeTrace, &HashMap<u64, String>) -> T + Sync + 'a;

/// [`SeFold`] that may take the SE's records ([`analyze_kernel_view_fold`]).
pub type SeTake<'a, T> = dyn Fn(&mut SeTrace, &HashMap<u64, String>) -> T + Sync + 'a;

/// What becomes of each SE as soon as it is decoded.
#[derive(Clone, Copy)]
enum PerSe<'a, T> {
    /// Kept in the result.
    Keep,
    /// The waves of an SE without tokens go to the spill ([`analyze_kernel_index`]).
    Spill(&'a WaveSpill<'a, T>),
    /// Every decoded SE goes to the fold and only its counters stay ([`kernel_table`]).
    Fold(&'a SeFold<'a, T>),
    /// [`PerSe::Fold`] in the view's order, the fold taking what it keeps; each SE dropped
    /// (not kept for the next decode: the app goes on without decoding)
    /// ([`analyze_kernel_view_fold`]).
    View(&'a SeTake<'a, T>),
}

/// How one SE's cycles become x: what `SeTrace::wave_x` holds, for a caller that computes it
/// one SE at a time instead of keeping every SE's ([`analyze_kernel_index`]).
#[derive(Clone)]
pub struct SeClock {
    map: Option<sqtt::TimeMap>,
    micros: bool,
    origin_us: f64,
}

impl SeClock {
    /// The clock of a kernel without markers: x is the cycle count.
    pub fn cycles() -> SeClock {
        SeClock {
            map: None,
            micros: false,
            origin_us: 0.0,
        }
    }

    /// The x of cycle `c`, exactly as [`SeTrace::wave_x`] and [`SeTrace::token_x`] hold it.
    pub fn x(&self, c: i64) -> f64 {
        self.x_hinted(c, &mut [0; 2])
    }

    /// [`SeClock::x`] for times that mostly move forward: `hint` keeps the last two marker
    /// intervals used (the same result, without a search per call).
    #[inline]
    pub fn x_hinted(&self, c: i64, hint: &mut [usize; 2]) -> f64 {
        match (&self.map, self.micros) {
            (Some(m), true) => m.us_hinted2(c, hint).map_or(0.0, |us| us - self.origin_us),
            _ => c as f64,
        }
    }

    /// Each wave's (start, end) x, exactly as [`SeTrace::wave_x`] would hold them.
    pub fn wave_x(&self, waves: &[sqtt::waves::Wave]) -> Vec<(f64, f64)> {
        self.x_of(waves.iter().map(|w| (w.start, w.end)))
    }

    /// [`SeClock::wave_x`] of (start, end) cycles, in wave order.
    pub fn x_of(&self, spans: impl Iterator<Item = (i64, i64)>) -> Vec<(f64, f64)> {
        // The same hinted conversion, in the same order, as `SeTrace::build`.
        let mut h = [0usize; 2];
        spans
            .map(|(a, b)| (self.x_hinted(a, &mut h), self.x_hinted(b, &mut h)))
            .collect()
    }
}

/// What the analysis index needs of kernel `ki` (`wavescope index`): [`KernelOptions::INDEX`]
/// and, instead of every SE's `wave_x` at once, each SE's clock, so the index writer computes
/// one SE's x at a time.
/// `spill`, when given, takes the waves of each SE without tokens as it is decoded (returned
/// in `ses` order, `None` where kept), so only the SEs being decoded hold their waves.
#[allow(clippy::type_complexity)]
pub fn analyze_kernel_index<T: Send>(
    p: &Profile,
    ki: usize,
    spill: Option<&WaveSpill<'_, T>>,
) -> Option<(KernelSqtt, Vec<SeClock>, Vec<Option<T>>)> {
    let per_se = match spill {
        Some(f) => PerSe::Spill(f),
        None => PerSe::Keep,
    };
    analyze_kernel_clocked(p, ki, &|_, _| {}, KernelOptions::INDEX, per_se)
}

/// Kernel `ki` with each SE handed to `fold` as soon as it is decoded and mapped, and then
/// dropped: what a report that only sums over the SEs needs ([`kernel_table`] runs it with
/// the SEs without instruction tracing analysed without wave records). Returns the kernel with
/// its SEs' names, errors and unit but no waves or tokens, and each SE's fold (in `ses`
/// order; `None` for an SE that could not be decoded).
pub fn analyze_kernel_fold<T: Send>(
    p: &Profile,
    ki: usize,
    fold: &SeFold<'_, T>,
) -> Option<(KernelSqtt, Vec<Option<T>>)> {
    analyze_kernel_clocked(p, ki, &|_, _| {}, KernelOptions::INDEX, PerSe::Fold(fold))
        .map(|(k, _, f)| (k, f))
}

/// [`analyze_kernel_fold`] that also returns each SE's clock (`wavescope index`: every SE's
/// waves go to the index's spill and its table and splits are folded as it is decoded, so the
/// writer computes each SE's x from its clock afterwards).
#[allow(clippy::type_complexity)]
pub fn analyze_kernel_index_fold<T: Send>(
    p: &Profile,
    ki: usize,
    fold: &SeFold<'_, T>,
) -> Option<(KernelSqtt, Vec<SeClock>, Vec<Option<T>>)> {
    analyze_kernel_clocked(p, ki, &|_, _| {}, KernelOptions::INDEX, PerSe::Fold(fold))
}

/// A kernel's instruction table, latency splits, wave count and achieved occupancy, with each
/// SE folded into them as soon as it is decoded and then dropped (`wavescope stats`): the
/// results of [`inst_stats_with`], [`hidden::kernel_splits`], [`KernelSqtt::wave_count`] and
/// [`occupancy::achieved`] on [`analyze_kernel_table`]'s analysis, holding only the SEs being
/// decoded instead of every SE's waves and tokens, and no wave record of an SE where its
/// analysis without them is exact ([`KernelOptions::STATS`]).
pub struct KernelTable {
    /// The kernel with its SEs' names, itrace flags, errors and unit, but no waves or tokens.
    pub kernel: KernelSqtt,
    pub waves: usize,
    pub instructions: Vec<InstStat>,
    pub splits: hidden::KernelSplits,
    pub achieved: occupancy::Achieved,
}

/// [`KernelTable`] of kernel `ki`.
pub fn kernel_table(p: &Profile, ki: usize) -> Option<KernelTable> {
    use crate::pipeline::TablePart;
    struct Part {
        waves: usize,
        achieved: occupancy::Achieved,
        table: TablePart,
        splits: hidden::KernelSplits,
    }
    let fold = |st: &mut SeTrace, disasm: &HashMap<u64, String>| {
        let mut achieved = occupancy::Achieved::default();
        occupancy::achieved_of(&mut achieved, st.se, &st.analysis);
        let (table, splits) = TablePart::take_se(st, disasm);
        Part {
            waves: st.analysis.wave_count(),
            achieved,
            table,
            splits,
        }
    };
    // No SE keeps wave records where its fold can be exact without them (`record_free`):
    // the fold reads none.
    let (kernel, _, parts) =
        analyze_kernel_clocked(p, ki, &|_, _| {}, KernelOptions::STATS, PerSe::Fold(&fold))?;
    let mut waves = 0;
    let mut achieved = occupancy::Achieved::default();
    let mut table = TablePart::default();
    let mut splits = hidden::KernelSplits::default();
    // In SE order, as the whole kernel's analysis meets them.
    for mut part in parts.into_iter().flatten() {
        waves += part.waves;
        achieved.per_se.append(&mut part.achieved.per_se);
        achieved.per_simd.append(&mut part.achieved.per_simd);
        table.merge(part.table);
        splits.merge(part.splits);
    }
    Some(KernelTable {
        kernel,
        waves,
        instructions: table.finish(&splits.by_inst),
        splits,
        achieved,
    })
}

/// The kernel analysis: each SE decoded (and mapped) in parallel, then aligned on the GPU
/// clock; each SE's clock in `ses` order; what `per_se` made of each SE.
#[allow(clippy::type_complexity)]
fn analyze_kernel_clocked<T: Send>(
    p: &Profile,
    ki: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
    opts: KernelOptions,
    per_se: PerSe<'_, T>,
) -> Option<(KernelSqtt, Vec<SeClock>, Vec<Option<T>>)> {
    use rayon::prelude::*;
    let k = p.kernels.get(ki)?;
    let target = p.props_device(k.device).and_then(|d| d.target());
    let streams: Vec<_> = p.sqtt.iter().filter(|s| sqtt_matches(p, k, s)).collect();
    // The program, to map itraced SEs' tokens to PCs when its code object is in the profile.
    let code = p.run_code_object(ki).map(|(c, _)| c);
    let done = std::sync::atomic::AtomicUsize::new(0);
    // Set once an SE's one-pass fold (no tokens, no wave records) could not be exact and the
    // SE was decoded again. Its usual cause for an itraced SE, waves left live by a trace
    // buffer that filled, cuts every SE of the capture alike: the itraced SEs not started yet
    // are decoded once, with their tokens and wave records, rather than twice each. An SE
    // without tokens is exact without records through such waves (`record_free`): each kind's
    // misses (`missed` for the itraced SEs, `missed_free` for the others) send only the next
    // SEs of that kind to the records.
    let missed = std::sync::atomic::AtomicBool::new(false);
    let missed_free = std::sync::atomic::AtomicBool::new(false);
    let relaxed = std::sync::atomic::Ordering::Relaxed;
    // One decode per SE: an itraced RDNA SE is mapped in the same pass that analyses it.
    #[allow(clippy::type_complexity)]
    type Decoded<T> = (
        Result<BlobAnalysis, String>,
        Option<crate::pipeline::SeMap>,
        Option<i64>,
        Option<T>,
        Option<String>,
    );
    let one = |s: &&crate::model::SqttTrace| -> Decoded<T> {
        let blob = p.blob(s.blob);
        let ao = AnalyzeOptions::default();
        // A blob is read once, front to back: its decoded pages of a mapped file need not
        // stay resident (they are most of the memory of a large capture otherwise).
        let handle = p.blobs.get(s.blob.0 as usize);
        // In steps of a few MiB, each from where the last ended (a page back: a partial page
        // at the boundary is kept by one step and dropped by the next): an madvise per step,
        // not one over the whole prefix every few thousand packets.
        let mut released = 0usize;
        let mut release = |done: usize| {
            // A second pass over the blob (a record-free analysis that gave up, a fold decoded
            // again with its tokens) starts over.
            if done < released {
                released = 0;
            }
            if done < released.saturating_add(RELEASE_STEP) && done < blob.len() {
                return;
            }
            if let Some(b) = handle {
                b.release_part(released.saturating_sub(4096), done);
            }
            released = done;
        };
        let r = match &code {
            // A fold takes the SE's table and splits folded in its decode, with no token
            // kept, unless they could not be exact there: then decoded again with its tokens.
            Some(c)
                if s.itrace
                    && matches!(per_se, PerSe::Fold(_))
                    && !missed.load(relaxed)
                    && !sqtt::map::walks_cdna(blob, c, ao.decode) =>
            {
                use crate::pipeline::{analyze_folded, analyze_mapped};
                // Without wave records where the options say (`stats`): the fold reads only
                // the traced waves' places and counts, which it keeps itself.
                let fo = AnalyzeOptions {
                    record_free: opts.record_free,
                    ..ao
                };
                match analyze_folded(blob, target, fo, c, opts.detail, &mut release) {
                    Ok(Ok(r)) => Ok(r),
                    Ok(Err(_)) => {
                        missed.store(true, relaxed);
                        analyze_mapped(blob, target, ao, c, opts.detail, &mut release)
                    }
                    Err(e) => Err(e),
                }
                .map(|(a, m)| (a, Some(m)))
            }
            Some(c) if s.itrace && !sqtt::map::walks_cdna(blob, c, ao.decode) => {
                crate::pipeline::analyze_mapped(blob, target, ao, c, opts.detail, &mut release)
                    .map(|(a, m)| (a, Some(m)))
            }
            _ if opts.record_free && !s.itrace && !missed_free.load(relaxed) => {
                let free = AnalyzeOptions {
                    record_free: true,
                    ..ao
                };
                match sqtt::analyze_with_progress(blob, target, free, &mut release) {
                    // Given up (see `record_free`): analysed again with records.
                    Ok(a) if a.waves_without_records.is_none() => {
                        missed_free.store(true, relaxed);
                        sqtt::analyze_with_progress(blob, target, ao, &mut release)
                    }
                    r => r,
                }
                .map(|a| (a, None))
            }
            _ => sqtt::analyze_with_progress(blob, target, ao, &mut release).map(|a| (a, None)),
        };
        release(blob.len());
        let r = r.map(|(mut a, m)| {
            // Not for a fold: its lists are handed back for the next SE right away, and a copy
            // of each to its exact size would cost a copy and fresh pages for nothing.
            if opts.compact && !matches!(per_se, PerSe::Fold(_)) {
                a.waves.shrink_to_fit();
                a.tokens.shrink_to_fit();
            }
            (a, m)
        });
        // The origin needs each SE's first wave, spilled or not.
        let first = r.as_ref().ok().and_then(|(a, _)| a.first_wave_start());
        let mut spilled = None;
        // Where a folded SE's mapping lost track (the fold drops the SE, not this).
        let mut map_error = None;
        // What a fold reads: the SE mapped, without x, and its token index as `index` says.
        let mapped = |a: BlobAnalysis, m: Option<crate::pipeline::SeMap>, index| {
            let mut st = SeTrace::build(s.se, s.itrace, a, &|c| c as f64, false, false, index);
            let mut d = HashMap::new();
            if let Some(code) = &code {
                map_se_trace(&mut st, m, blob, code, opts, &|c| c as f64, &mut d);
            }
            (st, d)
        };
        let r = r.map(|(mut a, m)| match per_se {
            PerSe::Keep => (a, m),
            PerSe::Spill(f) => {
                if a.tokens.is_empty() {
                    spilled = f(&a.waves);
                    if spilled.is_some() {
                        a.waves = Vec::new();
                    }
                }
                (a, m)
            }
            // Mapped here, without x (a fold has none), then folded and dropped: only the
            // counters and markers (for the clocks) stay.
            PerSe::Fold(f) => {
                // An SE mapped in its decode (RDNA): the table reads only each wave's token
                // count; the CDNA walk and the later mapping rebuild or read the index.
                let index = match m.is_some() {
                    true => TokenIndex::Later,
                    false => TokenIndex::IfTokens,
                };
                let (mut st, d) = mapped(a, m, index);
                spilled = Some(f(&mut st, &d));
                map_error = st.map_error.take();
                crate::pipeline::recycle_pcs(std::mem::take(&mut st.token_pc));
                crate::spare::give(std::mem::take(&mut st.token_order));
                crate::spare::give(std::mem::take(&mut st.token_start));
                let mut a = st.analysis;
                sqtt::waves::recycle(std::mem::take(&mut a.waves), std::mem::take(&mut a.tokens));
                (a, None)
            }
            PerSe::View(f) => {
                let (mut st, d) = mapped(a, m, TokenIndex::IfTokens);
                spilled = Some(f(&mut st, &d));
                map_error = st.map_error.take();
                let mut a = st.analysis;
                a.waves = Vec::new();
                a.tokens = Vec::new();
                (a, None)
            }
        });
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        progress(n, streams.len());
        match r {
            Ok((a, m)) => (Ok(a), m, first, spilled, map_error),
            Err(e) => (Err(e.to_string()), None, None, None, None),
        }
    };
    // An instruction-traced SE holds its tokens (most of the memory) from its decode on.
    let (traced, rest): (Vec<usize>, Vec<usize>) =
        (0..streams.len()).partition(|&i| streams[i].itrace);
    let mut all: Vec<(usize, Decoded<T>)> = match per_se {
        // Folded at once: the traced SEs go one at a time, the other SEs beside them in
        // parallel.
        PerSe::Fold(_) => {
            let (a, b) = rayon::join(
                || {
                    crate::spare::keep(true);
                    let done = traced
                        .iter()
                        .map(|&i| (i, one(&streams[i])))
                        .collect::<Vec<_>>();
                    sqtt::waves::drop_spare_tokens();
                    crate::pipeline::drop_spare_pcs();
                    crate::spare::keep(false);
                    done
                },
                || {
                    rest.par_iter()
                        .map(|&i| (i, one(&streams[i])))
                        .collect::<Vec<_>>()
                },
            );
            a.into_iter().chain(b).collect()
        }
        // The view: the traced SEs one at a time, beside nothing but what the view keeps of
        // those before, then the others (each only its rows kept) in parallel.
        PerSe::View(_) => {
            let mut done: Vec<_> = traced.iter().map(|&i| (i, one(&streams[i]))).collect();
            done.extend(
                rest.par_iter()
                    .map(|&i| (i, one(&streams[i])))
                    .collect::<Vec<_>>(),
            );
            done
        }
        _ => streams.par_iter().map(one).enumerate().collect(),
    };
    all.sort_by_key(|(i, _)| *i);
    let results: Vec<Decoded<T>> = all.into_iter().map(|(_, r)| r).collect();
    let mut analyses = Vec::with_capacity(results.len());
    let mut se_maps = Vec::with_capacity(results.len());
    let mut firsts = Vec::with_capacity(results.len());
    let mut spills = Vec::with_capacity(results.len());
    let mut map_errors = Vec::with_capacity(results.len());
    for (a, m, f, sp, me) in results {
        analyses.push(a);
        se_maps.push(m);
        firsts.push(f);
        spills.push(sp);
        map_errors.push(me);
    }
    let start_ticks = k.gpu_start.and_then(|t| u64::try_from(t).ok());
    // Compact: the markers are not read again (below), so each SE's map is written over its
    // markers instead of into fresh pages.
    let own_maps: Option<Vec<Option<sqtt::TimeMap>>> = opts.compact.then(|| {
        analyses
            .iter_mut()
            .map(|a| {
                let a = a.as_mut().ok()?;
                let markers = std::mem::take(&mut a.markers);
                sqtt::TimeMap::from_marker_list(markers, a.layout?, start_ticks)
            })
            .collect()
    });
    let empty = BlobAnalysis::default();
    let refs: Vec<&BlobAnalysis> = analyses
        .iter()
        .map(|a| a.as_ref().unwrap_or(&empty))
        .collect();
    let maps = match own_maps {
        Some(own) => sqtt::link_time_maps(&refs, own),
        None => sqtt::dispatch_time_maps(&refs, start_ticks),
    };
    let all_mapped = !maps.is_empty()
        && maps
            .iter()
            .zip(&analyses)
            .all(|(m, a)| m.is_some() || a.is_err());
    let unit = if all_mapped {
        XUnit::Micros
    } else {
        XUnit::Cycles
    };
    // Origin: the kernel's GPU start when known, else the earliest mapped wave.
    let origin_us = match k.gpu_start {
        Some(t) => t as f64 / 100.0,
        None => {
            let mut lo = f64::INFINITY;
            for (m, first) in maps.iter().zip(&firsts) {
                if let (Some(m), Some(start)) = (m, first) {
                    lo = lo.min(m.us(*start).unwrap_or(f64::INFINITY));
                }
            }
            if lo.is_finite() {
                lo
            } else {
                0.0
            }
        }
    };
    let kernel_len = match (k.gpu_start, k.gpu_end) {
        (Some(a), Some(b)) if unit == XUnit::Micros => Some((b - a) as f64 / 100.0),
        _ => None,
    };
    if opts.compact {
        // The maps are made: a large capture's markers (millions) are not read again.
        for a in analyses.iter_mut().flatten() {
            a.markers = Vec::new();
            a.userdata_writes = Vec::new();
        }
    }
    // Each SE's clock, how its cycles become x (the maps moved: a large capture's are tens of
    // MiB).
    let clocks: Vec<SeClock> = maps
        .into_iter()
        .map(|map| SeClock {
            map,
            micros: unit == XUnit::Micros,
            origin_us,
        })
        .collect();
    let mut ses = Vec::new();
    for (((s, a), clock), map_error) in streams.iter().zip(analyses).zip(&clocks).zip(map_errors) {
        match a {
            Ok(a) => {
                // Tokens come in time order, wave starts and ends each nearly so: remember the
                // last two marker intervals.
                let hint = std::cell::Cell::new([0usize; 2]);
                let to_x = |c| {
                    let mut h = hint.get();
                    let x = clock.x_hinted(c, &mut h);
                    hint.set(h);
                    x
                };
                let mut st = SeTrace::build(
                    s.se,
                    s.itrace,
                    a,
                    &to_x,
                    opts.token_x,
                    opts.wave_x,
                    TokenIndex::Always,
                );
                st.map_error = map_error;
                ses.push(st);
            }
            Err(e) => {
                let mut st = SeTrace::new(s.se, s.itrace, BlobAnalysis::default(), &|c| c as f64);
                st.error = Some(e);
                ses.push(st);
            }
        }
    }
    // Map itraced SEs' tokens to PCs when the program's code object is in the profile.
    let mut disasm = HashMap::new();
    if let Some(code) = &code {
        let parts: Vec<HashMap<u64, String>> = ses
            .par_iter_mut()
            .zip(&streams)
            .zip(&clocks)
            .zip(se_maps)
            .map(|(((st, s), clock), se_map)| {
                let mut d = HashMap::new();
                let to_x = |c: i64| clock.x(c);
                map_se_trace(st, se_map, p.blob(s.blob), code, opts, &to_x, &mut d);
                d
            })
            .collect();
        for d in parts {
            for (pc, text) in d {
                disasm.entry(pc).or_insert(text);
            }
        }
    }
    // Stable, as before; the clocks follow their SEs.
    let mut all: Vec<(SeTrace, SeClock, Option<T>)> = ses
        .into_iter()
        .zip(clocks)
        .zip(spills)
        .map(|((s, c), sp)| (s, c, sp))
        .collect();
    all.sort_by_key(|(s, _, _)| s.se);
    let mut ses = Vec::with_capacity(all.len());
    let mut clocks = Vec::with_capacity(all.len());
    let mut spills = Vec::with_capacity(all.len());
    for (s, c, sp) in all {
        ses.push(s);
        clocks.push(c);
        spills.push(sp);
    }
    Some((
        KernelSqtt {
            kernel: ki,
            name: k.name.clone(),
            unit,
            ses,
            kernel_len,
            disasm,
            se_layout: p.se_layout(k.device),
        },
        clocks,
        spills,
    ))
}

/// Maps an itraced SE's tokens to PCs of `code`: with the mapping folded into its decode
/// (`se_map`) or by a walk over `blob`; on CDNA the walk's issue list becomes its tokens, with
/// `to_x` for their x. The disassembly of the mapped PCs goes to `disasm`.
fn map_se_trace(
    st: &mut SeTrace,
    se_map: Option<crate::pipeline::SeMap>,
    blob: &[u8],
    code: &crate::isa::CodeObject,
    opts: KernelOptions,
    to_x: &dyn Fn(i64) -> f64,
    disasm: &mut HashMap<u64, String>,
) {
    // (An SE folded in its decode kept no token: its fold says it had some.)
    let folded = se_map.as_ref().is_some_and(|m| m.folded.is_some());
    if !(st.itrace && st.error.is_none() && (folded || !st.analysis.tokens.is_empty())) {
        return;
    }
    // The CDNA walk's issue list becomes the SE's token stream, so CDNA keeps it.
    let cdna = code.target.major == 9;
    match se_map {
        Some(sm) => sm.apply(st, disasm),
        None => crate::pipeline::map_se(st, blob, code, disasm, opts.detail || cdna),
    }
    if cdna::mapped_by_issue(st) {
        cdna::use_issue_stream(st, disasm, to_x);
    }
    if !opts.detail {
        st.mapped = Vec::new();
    }
}

/// Short display name of a token.
pub fn token_name(t: &InstToken) -> String {
    match (t.kind, t.op.name()) {
        (TokenKind::Inst, Some(op)) => op.to_string(),
        (TokenKind::Inst, None) => "INST".into(),
        (TokenKind::ValuInst, _) => "VALUINST".into(),
        (TokenKind::Immediate, _) => "IMMEDIATE".into(),
        (TokenKind::ImmediateMask, _) => "IMMEDIATE".into(),
    }
}

/// One instruction of a wave, as listed when the wave is clicked.
#[derive(Debug, Clone, Serialize)]
pub struct WaveInst {
    pub index: usize,
    /// Issue time in shader cycles (blob time).
    pub cycle: i64,
    /// Issue time in view units.
    pub x: f64,
    /// Cycles since the previous instruction of the wave (or the wave's start).
    pub gap: i64,
    pub name: String,
    pub pc: Option<u64>,
    pub disasm: Option<String>,
}

/// The instructions of wave `w` of SE `se_idx`.
pub fn wave_insts(k: &KernelSqtt, se_idx: usize, w: usize) -> Vec<WaveInst> {
    let Some(se) = k.ses.get(se_idx) else {
        return Vec::new();
    };
    let Some(wave) = se.analysis.waves.get(w) else {
        return Vec::new();
    };
    let mut prev = wave.start;
    let mut out = Vec::new();
    for (i, &ti) in se.wave_tokens(w).iter().enumerate() {
        let Some(t) = se.analysis.tokens.get(ti as usize) else {
            continue;
        };
        let pc = se
            .token_pc
            .get(ti as usize)
            .copied()
            .filter(|&p| p != u64::MAX);
        out.push(WaveInst {
            index: i,
            cycle: t.time,
            x: se.token_x.get(ti as usize).copied().unwrap_or(0.0),
            gap: t.time - prev,
            name: token_name(t),
            pc,
            disasm: pc.and_then(|p| k.disasm.get(&p).cloned()),
        });
        prev = t.time;
    }
    out
}

/// One executed instruction of a traced wave, in both conventions.
#[derive(Debug, Clone, Serialize)]
pub struct TracedInst {
    /// Our token time (shader cycles from the blob's start): when the instruction issued.
    pub time: i64,
    /// AMD's (rocprof-trace-decoder) `time`: when the wave first tried to issue it.
    pub issue_time: i64,
    /// AMD's `stall`: `issue_time + stall` is the successful issue.
    pub stall: i64,
    /// AMD's `duration`: stall + execution (gfx10+) / stall + issue (gfx9); the drain for the
    /// final `s_endpgm`.
    pub duration: i64,
    pub pc: u64,
    pub token: String,
    pub disasm: String,
}

/// A traced wave and every instruction it executed.
#[derive(Debug, Clone, Serialize)]
pub struct TracedWave {
    pub se: u32,
    pub cu: u16,
    pub simd: u8,
    pub slot: u8,
    pub start: i64,
    pub end: i64,
    pub instructions: Vec<TracedInst>,
}

/// The mapped waves of a kernel (itraced SEs whose tokens were mapped to the program).
pub fn traced_waves(k: &KernelSqtt) -> Vec<TracedWave> {
    let mut out = Vec::new();
    traced_waves_each(k, &mut |w| {
        out.push(w);
        true
    });
    out
}

/// [`traced_waves`] one wave at a time, in the same order (SE, then wave), so a report can be
/// written while iterating instead of holding every instruction's record and strings; `f`
/// returns false to stop.
pub fn traced_waves_each(k: &KernelSqtt, f: &mut dyn FnMut(TracedWave) -> bool) {
    for se in &k.ses {
        // Each wave's mapped instructions, in mapping order (a counting sort: 4 bytes each).
        let (order, start) = {
            let waves = se.analysis.waves.len();
            let mut start = vec![0u32; waves + 1];
            for m in &se.mapped {
                if let Some(c) = m.wave.and_then(|w| start.get_mut(w as usize + 1)) {
                    *c += 1;
                }
            }
            for i in 1..start.len() {
                start[i] += start[i - 1];
            }
            let mut fill = start.clone();
            let mut order = vec![0u32; start.last().copied().unwrap_or(0) as usize];
            for (i, m) in se.mapped.iter().enumerate() {
                if let Some(f) = m.wave.and_then(|w| fill.get_mut(w as usize)) {
                    if let Some(slot) = order.get_mut(*f as usize) {
                        *slot = i as u32;
                    }
                    *f += 1;
                }
            }
            (order, start)
        };
        for (w, wave) in se.analysis.waves.iter().enumerate() {
            let (a, b) = (start[w] as usize, start[w + 1] as usize);
            if a == b {
                continue;
            }
            let instructions = order[a..b]
                .iter()
                .map(|&i| {
                    let m = &se.mapped[i as usize];
                    TracedInst {
                        time: m.time,
                        issue_time: m.issue_time,
                        stall: m.stall,
                        duration: m.duration,
                        pc: m.pc,
                        token: match &m.op {
                            Some(op) => format!("{}:{op}", m.token),
                            None => m.token.to_string(),
                        },
                        disasm: m.inst.text(),
                    }
                })
                .collect();
            let go = f(TracedWave {
                se: se.se,
                cu: wave.cu,
                simd: wave.simd,
                slot: wave.wave,
                start: wave.start,
                end: wave.end,
                instructions,
            });
            if !go {
                return;
            }
        }
    }
}

/// One row of the instruction timing table: all executions of one instruction.
#[derive(Debug, Clone, Serialize)]
pub struct InstStat {
    /// `0x1700` when PCs are known, else `#12` (position in the wave's instruction stream).
    pub key: String,
    /// The PC (ELF virtual address) when tokens were mapped to the program.
    #[serde(skip)]
    pub pc: Option<u64>,
    pub name: String,
    pub count: u64,
    /// Latency = cycles from the previous instruction's issue (or the wave's start) to this one.
    pub total: i64,
    pub mean: f64,
    pub min: i64,
    pub median: i64,
    pub max: i64,
    /// Share of all latency cycles of the kernel spent before this instruction.
    pub share: f64,
    /// Pre-issue stall: cycles beyond the best case of this instruction's kind (the smallest
    /// latency any instruction with the same SQTT token shows in the kernel), summed over its
    /// executions. What is left, `total - stall`, is the issue cost itself.
    pub stall: i64,
    /// `stall / total`: how much of this instruction's latency was waiting.
    pub stall_share: f64,
    /// AMD's reading (rocprof-trace-decoder), summed over the executions when the PC is
    /// known: stall cycles, and duration (stall + execution, or + issue on gfx9).
    pub amd_stall: Option<i64>,
    pub amd_duration: Option<i64>,
    /// Cycles of `total` in which no other wave of the SIMD issued (`analysis::hidden`).
    pub exposed: i64,
    /// Cycles of `total` other waves of the SIMD filled, by their instruction class;
    /// `exposed + hidden == total`.
    pub hidden: hidden::HiddenBy,
    /// `hidden / total`.
    pub hidden_share: f64,
}

/// The instruction table of a kernel over every itraced SE.
///
/// Without PC mapping, instructions are identified by their position in each wave's token
/// stream plus the op name, which is exact for straight-line kernels and an approximation
/// for kernels with divergent control flow.
pub fn inst_stats(k: &KernelSqtt) -> Vec<InstStat> {
    crate::pipeline::inst_stats(k)
}

/// [`inst_stats`] made one SE at a time and merged in SE order (the same table, as
/// [`kernel_table`] makes it): only one SE's per-token scratch (its tokens' rows) at a time
/// beside the kernel's tokens, instead of every SE's.
pub fn inst_stats_by_se(k: &KernelSqtt) -> Vec<InstStat> {
    use crate::pipeline::TablePart;
    let mut table = TablePart::default();
    let mut splits = hidden::KernelSplits::default();
    for s in &k.ses {
        let (t, sp) = TablePart::of_se(s, &k.disasm);
        table.merge(t);
        splits.merge(sp);
    }
    table.finish(&splits.by_inst)
}

/// [`inst_stats`] with the exposed/hidden split the caller already has from
/// [`hidden::kernel_splits`] (computed once, not again per call).
pub fn inst_stats_with(k: &KernelSqtt, splits: &hidden::KernelSplits) -> Vec<InstStat> {
    crate::pipeline::inst_stats_with(k, &splits.by_inst)
}

#[cfg(test)]
mod tests {
    /// The counting sort by wave gives each wave's items in their order, waves in order, and
    /// leaves out items of a wave past the list.
    #[test]
    fn group_by_wave_is_a_stable_sort() {
        let mut next = super::test_rng(0x51_7cc1_b727_220a);
        for case in 0..2000 {
            let waves = next(9) as usize;
            let items: Vec<u32> = (0..next(40))
                .map(|_| next(waves as u64 + 2) as u32)
                .collect();
            let (order, start) = super::group_by_wave(&items, waves, |&w| w);
            assert_eq!(start.len(), waves + 1, "case {case}");
            assert_eq!(start[0], 0, "case {case}");
            for w in 0..waves {
                let want: Vec<u32> = (0..items.len() as u32)
                    .filter(|&i| items[i as usize] == w as u32)
                    .collect();
                let got = &order[start[w] as usize..start[w + 1] as usize];
                assert_eq!(got, want, "case {case} wave {w}");
            }
            assert_eq!(start[waves] as usize, order.len(), "case {case}");
        }
    }
}
