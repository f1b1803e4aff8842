//! The analysis hot paths, built for captures of real size (hundreds of MiB per SE): the SEs of
//! a kernel analysed in parallel (rayon), tokens matched to their mapped instruction by a merge
//! over nibble offsets, and the per-instruction table accumulated in flat, index-addressed
//! columns (a slot per PC of the program, a small id per token name) with no string built or
//! hashed per token. [`crate::analysis`]'s public entry points call into it, so the app, the CLI
//! and the diff engine share it; the results are the ones the per-token version computed.

use std::collections::HashMap;

use crate::analysis::{token_name, InstStat, KernelSqtt, SeTrace};
use crate::sqtt::map::MappedInst;
use crate::sqtt::{InstToken, TokenKind, TokenOp};

/// PCs of one program, as dense slots: `(pc - base) / 4` (instructions are dword aligned).
#[derive(Clone, Copy)]
struct PcSlots {
    base: u64,
    len: usize,
}

impl PcSlots {
    /// No slots: every PC goes to the map.
    const NONE: PcSlots = PcSlots { base: 0, len: 0 };

    /// Slots covering every PC in `pcs`, or `None` when they are too spread out (a table of
    /// that size would cost more than hashing).
    fn covering(pcs: impl Iterator<Item = u64>) -> Option<PcSlots> {
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        for pc in pcs {
            lo = lo.min(pc);
            hi = hi.max(pc);
        }
        if lo > hi {
            return Some(PcSlots::NONE);
        }
        let len = ((hi - lo) / 4 + 1) as usize;
        (len <= 1 << 24).then_some(PcSlots { base: lo, len })
    }

    #[inline]
    fn get(&self, pc: u64) -> Option<usize> {
        let d = pc.checked_sub(self.base)?;
        if d % 4 != 0 {
            return None;
        }
        let i = (d / 4) as usize;
        (i < self.len).then_some(i)
    }
}

/// For each token of `tokens`, the index in `insts` of the mapped instruction at the same nibble
/// offset (the last one when several share it, as IMMEDIATE_MASK bits do), by a merge: both are
/// in stream order, and a token out of order falls back to a binary search.
pub(crate) fn match_offsets(tokens: &[InstToken], insts: &[MappedInst]) -> Vec<Option<u32>> {
    let mut order: Vec<u32> = (0..insts.len() as u32).collect();
    if !insts.windows(2).all(|w| w[0].offset <= w[1].offset) {
        // Stable: equal offsets keep stream order, so the last of them is still the last.
        order.sort_by_key(|&i| insts[i as usize].offset);
    }
    let off = |j: usize| insts[order[j] as usize].offset;
    let mut j = 0usize;
    let mut prev = 0u64;
    tokens
        .iter()
        .map(|t| {
            if t.offset < prev {
                j = 0;
            }
            prev = t.offset;
            // A few steps forward (the usual case: the token's own instruction is next), then
            // a binary search for a long skip.
            let mut steps = 0;
            while j < order.len() && off(j) <= t.offset && steps < 8 {
                j += 1;
                steps += 1;
            }
            if j < order.len() && off(j) <= t.offset {
                j += order[j..].partition_point(|&i| insts[i as usize].offset <= t.offset);
            }
            (j > 0 && off(j - 1) == t.offset).then(|| order[j - 1])
        })
        .collect()
}

/// [`SeTrace::map_pcs`]'s work: `token_pc` for every token, and the disassembly of each PC seen
/// (text made once per PC, not per token).
pub(crate) fn map_tokens(
    se: &mut SeTrace,
    insts: Vec<MappedInst>,
    error: Option<String>,
    disasm: &mut HashMap<u64, String>,
) {
    let matched = match_offsets(&se.analysis.tokens, &insts);
    let slots = PcSlots::covering(insts.iter().map(|m| m.pc));
    let mut seen = vec![false; slots.as_ref().map_or(0, |s| s.len)];
    let mut any = false;
    se.token_pc = matched
        .iter()
        .map(|m| match m {
            Some(i) => {
                let mi = &insts[*i as usize];
                any = true;
                let fresh = match slots.as_ref().and_then(|s| s.get(mi.pc)) {
                    Some(s) => !std::mem::replace(&mut seen[s], true),
                    None => true,
                };
                if fresh {
                    disasm.entry(mi.pc).or_insert_with(|| mi.inst.text());
                }
                mi.pc
            }
            None => u64::MAX,
        })
        .collect();
    if !any {
        se.token_pc.clear();
    }
    // AMD's stall and duration summed per PC, kept even when the instruction list is not.
    let mut sums = PcSums::new(slots.unwrap_or(PcSlots::NONE));
    for m in &insts {
        sums.add(m.pc, m.stall, m.duration);
    }
    se.amd_pc = sums.finish();
    se.map_error = error;
    se.mapped = insts;
}

/// [`SeTrace::map_pcs`] in one streaming pass: the program is walked over the blob
/// ([`crate::sqtt::map::map_insts_each`]) and each mapped instruction, as it comes, gives its
/// PC to the tokens at its nibble offset (the last one wins, as in [`match_offsets`]), its
/// disassembly once per PC, and AMD's stall and duration to its PC's sums. The instruction
/// list itself is kept only with `keep_mapped`. Tokens out of offset order (not seen in
/// practice) take the list-and-merge path.
pub(crate) fn map_se(
    se: &mut SeTrace,
    blob: &[u8],
    code: &crate::isa::CodeObject,
    disasm: &mut HashMap<u64, String>,
    keep_mapped: bool,
) {
    use crate::sqtt::map::{map_insts, map_insts_each};
    let opts = Default::default();
    let tokens = &se.analysis.tokens;
    if !tokens.windows(2).all(|w| w[0].offset <= w[1].offset) {
        let m = map_insts(blob, code, Some(&se.analysis), opts);
        let error = m
            .error
            .map(|e| format!("nibble {}: {}", e.offset, e.message));
        map_tokens(se, m.insts, error, disasm);
        if !keep_mapped {
            se.mapped = Vec::new();
        }
        return;
    }
    let slots = PcSlots {
        base: code.text_addr,
        len: code.text.len() / 4 + 1,
    };
    let mut token_pc = vec![u64::MAX; tokens.len()];
    let mut seen = vec![false; slots.len];
    let mut sums = PcSums::new(slots);
    let mut mapped = Vec::new();
    let mut any = false;
    // tokens[..j] lie before the current instruction's offset.
    let mut j = 0usize;
    let mut prev = 0u64;
    let error = map_insts_each(blob, code, Some(&se.analysis), opts, &mut |m| {
        if m.offset < prev {
            j = 0;
        }
        prev = m.offset;
        let mut steps = 0;
        while j < tokens.len() && tokens[j].offset < m.offset && steps < 8 {
            j += 1;
            steps += 1;
        }
        if j < tokens.len() && tokens[j].offset < m.offset {
            j += tokens[j..].partition_point(|t| t.offset < m.offset);
        }
        let slot = slots.get(m.pc);
        let mut h = j;
        while h < tokens.len() && tokens[h].offset == m.offset {
            token_pc[h] = m.pc;
            h += 1;
        }
        if h > j {
            any = true;
            let fresh = match slot {
                Some(s) => !std::mem::replace(&mut seen[s], true),
                None => true,
            };
            if fresh {
                disasm.entry(m.pc).or_insert_with(|| m.inst.text());
            }
        }
        sums.add(m.pc, m.stall, m.duration);
        if keep_mapped {
            mapped.push(m);
        }
    });
    se.token_pc = if any { token_pc } else { Vec::new() };
    se.amd_pc = sums.finish();
    se.map_error = error.map(|e| format!("nibble {}: {}", e.offset, e.message));
    se.mapped = mapped;
}

/// One SE's PC mapping, folded in the same pass that analyses its blob ([`analyze_mapped`]):
/// what [`map_se`] would have computed from the finished analysis and a second decode.
pub struct SeMap {
    pub token_pc: Vec<u64>,
    pub amd_pc: Vec<(u64, i64, i64)>,
    pub error: Option<String>,
    pub mapped: Vec<MappedInst>,
    pub disasm: HashMap<u64, String>,
    /// The SE's table part and splits, when folded in its decode ([`analyze_folded`]).
    pub folded: Option<SeFolded>,
}

impl SeMap {
    /// Moves the mapping into `se` (its analysis must be the one this was folded with) and
    /// its disassembly into `disasm`.
    pub(crate) fn apply(self, se: &mut SeTrace, disasm: &mut HashMap<u64, String>) {
        se.token_pc = self.token_pc;
        se.amd_pc = self.amd_pc;
        se.map_error = self.error;
        se.mapped = self.mapped;
        se.folded = self.folded;
        for (pc, text) in self.disasm {
            disasm.entry(pc).or_insert(text);
        }
    }
}

/// An RDNA SE blob analysed ([`crate::sqtt::analyze_with`]) and its tokens mapped to the PCs
/// of `code` in one decode: each packet goes to the analyzer, then to the program walk
/// ([`crate::sqtt::map::RdnaWalk`]), whose instructions give their PC to the tokens the
/// analyzer just attributed for the same packet (the last one wins, as in [`map_se`]) and
/// AMD's stall and duration to their PC's sums. State beyond the results: the walk's live
/// slots. Tokens (and mapped instructions) of waves that never ended are dropped with them.
/// gfx9/CDNA blobs are walked by their issue packets instead ([`map_se`]).
pub fn analyze_mapped(
    blob: &[u8],
    target: Option<crate::target::GfxTarget>,
    opts: crate::sqtt::AnalyzeOptions,
    code: &crate::isa::CodeObject,
    keep_mapped: bool,
    progress: &mut dyn FnMut(usize),
) -> Result<(crate::sqtt::BlobAnalysis, SeMap), crate::sqtt::DecodeError> {
    analyze_walked(blob, target, opts, code, keep_mapped, progress, None).map(|(a, m, _)| (a, m))
}

/// [`analyze_mapped`] with the SE's instruction table part and latency splits folded in the
/// same pass ([`TokenFold`]): no token is kept (the analysis' token list is empty; each
/// wave's count is in its record) and the map carries the fold ([`SeMap::folded`], taken by
/// [`TablePart::take_se`]), what [`TablePart::of_se`] would make of the SE
/// [`analyze_mapped`] gives. `Ok(Err(why))` when the fold could not be exact ([`TokenFold`]):
/// the caller takes [`analyze_mapped`] instead.
#[allow(clippy::type_complexity)]
pub fn analyze_folded(
    blob: &[u8],
    target: Option<crate::target::GfxTarget>,
    opts: crate::sqtt::AnalyzeOptions,
    code: &crate::isa::CodeObject,
    keep_mapped: bool,
    progress: &mut dyn FnMut(usize),
) -> Result<Result<(crate::sqtt::BlobAnalysis, SeMap), Miss>, crate::sqtt::DecodeError> {
    let fold = TokenFold::new(code, opts.record_free);
    let (a, mut m, fold) =
        analyze_walked(blob, target, opts, code, keep_mapped, progress, Some(fold))?;
    let Some(fold) = fold else {
        return Ok(Err(Miss::Unended));
    };
    Ok(fold.finish(&a).map(|(folded, disasm)| {
        m.folded = folded;
        m.disasm = disasm;
        (a, m)
    }))
}

/// Why [`TokenFold`] could not fold an SE as [`TablePart::streamed`] would.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Miss {
    /// A token of a wave not added (not one that may take tokens, or not yet started).
    UnknownWave,
    /// A wave's start before an earlier one or before its SIMD's current cycle.
    StartOutOfOrder,
    /// An issue before its SIMD's current cycle.
    IssueOutOfOrder,
    /// A wave that never ended (the analysis drops it and renumbers the waves).
    Unended,
    /// Tokens met that are not the waves' counts, or left in the list.
    Count,
    /// The analysis without wave records gave up ([`crate::sqtt::AnalyzeOptions::record_free`]:
    /// a wave started while its slot is live, a place outside the direct table, wave times
    /// going back).
    RecordFree,
}

/// [`analyze_mapped`], and with `fold` [`analyze_folded`]'s pass (the fold handed back, or
/// `None` when some wave never ended).
#[allow(clippy::type_complexity)]
fn analyze_walked(
    blob: &[u8],
    target: Option<crate::target::GfxTarget>,
    opts: crate::sqtt::AnalyzeOptions,
    code: &crate::isa::CodeObject,
    keep_mapped: bool,
    progress: &mut dyn FnMut(usize),
    mut fold: Option<TokenFold>,
) -> Result<(crate::sqtt::BlobAnalysis, SeMap, Option<TokenFold>), crate::sqtt::DecodeError> {
    use crate::sqtt::map::RdnaWalk;
    // The mapping reads only each traced wave's running index: without records for a fold
    // that asks for it ([`TokenFold::free`]), which takes the token places' waves as they
    // start; with them otherwise.
    let free = fold.as_ref().is_some_and(|f| f.free);
    let opts = crate::sqtt::AnalyzeOptions {
        record_free: free,
        queue_token_waves: free,
        ..opts
    };
    let slots = PcSlots {
        base: code.text_addr,
        len: code.text.len() / 4 + 1,
    };
    let mut st = MapState {
        walk: RdnaWalk::new_for(code),
        token_pc: Vec::new(),
        sums: PcSums::new(slots),
        mapped: Vec::new(),
        keep_mapped,
        blob_bytes: blob.len(),
    };
    // Held here: the traced unit's test per packet reads no lazy static.
    let places = crate::sqtt::packets::places();
    // Set when some wave never ended: which raw tokens stay, and each raw wave's final index.
    let mut kept: Option<(Vec<bool>, Vec<Option<u32>>)> = None;
    let mut all_ended = true;
    // Tokens the analyzer attributed to a wave: what the fold's waves' counts must sum to.
    let mut attributed = 0u64;
    // By position in the stream, as [`crate::sqtt::waves::analyze_with_progress`]: one
    // compare per packet the hook sees, of a value it owns (not one it reaches through a
    // reference).
    let mut next = 0u64;
    let (st_mut, fold_mut) = (&mut st, &mut fold);
    let analysis = crate::sqtt::waves::analyze_hooked(
        blob,
        target,
        opts,
        move |an, p, _, before| {
            if p.offset >= next {
                next = p.offset + crate::sqtt::waves::PROGRESS_NIBBLES;
                progress((p.offset / 2) as usize);
            }
            // Tokens come only from packets the walk wants; a token the walk could not map
            // keeps no PC (the list is padded). The packets of other units (most WAVESTARTs
            // and WAVEENDs) are told apart here: no call for them.
            if RdnaWalk::wants(p.ty.kind) {
                let pl = &places[p.layout as usize][p.index as usize & 31];
                if pl.on_unit_zero(p.raw) {
                    // By value: a call given the packet's address would have the decoder
                    // store every packet to memory, in case.
                    wanted(st_mut, fold_mut, an, *p, pl, before);
                }
            }
        },
        |an| {
            attributed = an.attributed_tokens();
            if an.all_ended() {
                return;
            }
            all_ended = false;
            let ended = an.ended();
            let keep = an
                .raw_tokens()
                .iter()
                .map(|t| ended.get(t.wave as usize).copied().unwrap_or(false))
                .collect();
            let mut n = 0u32;
            let index = ended
                .iter()
                .map(|&e| {
                    n += e as u32;
                    e.then(|| n - 1)
                })
                .collect();
            kept = Some((keep, index));
        },
    )?;
    if let Some(f) = fold.as_mut() {
        f.attributed = attributed;
    }
    let MapState {
        walk,
        mut token_pc,
        sums,
        mut mapped,
        ..
    } = st;
    let error = walk.error();
    if let Some((keep, index)) = kept {
        let mut it = keep.iter();
        token_pc.retain(|_| it.next().copied().unwrap_or(false));
        for m in &mut mapped {
            m.wave = m
                .wave
                .and_then(|w| index.get(w as usize).copied().flatten());
        }
    }
    token_pc.resize(analysis.tokens.len(), u64::MAX);
    // Reserved from the blob's size (`MapState::packet`): as the analyzer's lists.
    crate::sqtt::waves::shrink_overshoot(&mut token_pc);
    // Disassembly once per PC a kept token maps to.
    let mut disasm = HashMap::new();
    let mut seen = vec![false; slots.len];
    let mut any = false;
    for &pc in &token_pc {
        if pc == u64::MAX {
            continue;
        }
        any = true;
        let fresh = match slots.get(pc) {
            Some(s) => !std::mem::replace(&mut seen[s], true),
            None => true,
        };
        if fresh {
            disasm
                .entry(pc)
                .or_insert_with(|| walk.inst_at(pc).map(|i| i.text()).unwrap_or_default());
        }
    }
    if !any {
        token_pc = Vec::new();
    }
    Ok((
        analysis,
        SeMap {
            token_pc,
            amd_pc: sums.finish(),
            error: error.map(|e| format!("nibble {}: {}", e.offset, e.message)),
            mapped,
            disasm,
            folded: None,
        },
        fold.filter(|_| all_ended),
    ))
}

/// An instruction-traced RDNA SE's instruction table part and latency splits, folded in the
/// pass that decoded and mapped it ([`analyze_folded`]): [`TablePart::of_se`]'s results but
/// for what the SE's records give (its AMD sums, its waves' places and token counts).
#[derive(Clone)]
pub struct SeFolded {
    /// The part without `amd`.
    part: TablePart,
    by_inst: HashMap<crate::analysis::hidden::InstKey, crate::analysis::hidden::LatencySplit>,
    /// The waves with tokens, in wave order: each one's index, place, token count and split.
    waves: Vec<(u32, WavePlace, u32, crate::analysis::hidden::LatencySplit)>,
}

/// A wave's (cu, simd, slot), as its record has them.
type WavePlace = (u16, u8, u8);

impl SeFolded {
    /// The part and splits of `st`, the SE this was folded from.
    fn finish(self, st: &SeTrace) -> (TablePart, crate::analysis::hidden::KernelSplits) {
        use crate::analysis::hidden::{KernelSplits, WaveSplit};
        let SeFolded {
            mut part,
            by_inst,
            waves,
        } = self;
        part.amd = st.amd_pc.clone();
        let mut out = KernelSplits {
            by_inst,
            ..Default::default()
        };
        out.waves.reserve_exact(waves.len());
        // (Each wave's place as its record has it, and its count: the records' `insts`, which
        // the fold checked. With records or without.)
        for (w, (cu, simd, slot), insts, split) in waves {
            out.total.add(&split);
            out.waves.push(WaveSplit {
                se: st.se,
                wave: w as usize,
                cu,
                simd,
                slot,
                instructions: insts as usize,
                split,
            });
        }
        (part, out)
    }
}

/// [`TablePart::streamed`] fed each token as the analyzer makes it and the walk maps it
/// ([`analyze_folded`]), so no token list and no token PC list is written: the waves that may
/// take tokens are added to their SIMD's sweep as they start (in wave order, so slots come in
/// wave order; those that end up with none have no row, no split and no effect on another
/// wave's), each token goes to its wave's slot, position and last issue, its name and row,
/// the row's accumulator and its SIMD's sweep. Anything the pass cannot fold as `streamed`
/// would (a token of a wave not added, an issue or a start out of time order in its SIMD, a
/// wave that never ended, a count that does not match) leaves it missed (`miss`), and the caller
/// decodes the SE again with its tokens.
/// Entries of [`TokenFold::recent`].
const RECENT: usize = 256;

struct TokenFold {
    rows: Rows<'static>,
    best: Vec<i64>,
    acc: Vec<Acc>,
    /// Where the wave-by-wave walk meets each row and each name first ([`TablePart::streamed`]).
    row_first: Vec<u64>,
    name_first: Vec<u64>,
    splits: crate::analysis::hidden::StreamSplits,
    simd_keys: Vec<(u16, u8)>,
    /// Per slot: its wave's raw index (ascending), and its SIMD, last issue (its start
    /// before the first) and tokens met; its wave's place.
    slot_wave: Vec<u32>,
    live: Vec<(u32, i64, u32)>,
    slot_place: Vec<WavePlace>,
    /// (raw wave, slot) of the waves added, by the wave's low bits (`u32::MAX`: none): a
    /// token's slot in one probe while no later wave took the entry (few waves are live at
    /// once), `slot_wave` searched otherwise ([`TokenFold::slot_of`]).
    recent: Box<[(u32, u32); RECENT]>,
    /// Waves of the analyzer looked at so far (with records).
    waves_seen: usize,
    /// Fed by an analysis without wave records ([`crate::sqtt::AnalyzeOptions::queue_token_waves`]):
    /// the waves that may take tokens come from its queue, their counts are checked by their
    /// sum, and the fold misses where that analysis gives up.
    free: bool,
    /// Whether the analyzer's token list is set for one packet's tokens
    /// ([`crate::sqtt::waves::Analyzer::stream_tokens`]).
    streaming: bool,
    /// Tokens the analyzer attributed to a wave, set at its end ([`analyze_walked`]).
    attributed: u64,
    tokens: usize,
    /// Set once the fold cannot be exact: nothing more is folded.
    miss: Option<Miss>,
}

impl TokenFold {
    fn new(code: &crate::isa::CodeObject, free: bool) -> TokenFold {
        let slots = PcSlots {
            base: code.text_addr,
            len: code.text.len() / 4 + 1,
        };
        TokenFold {
            rows: Rows::with_slots(Some(slots), Disasm::Own(HashMap::new())),
            best: Vec::new(),
            acc: Vec::new(),
            row_first: Vec::new(),
            name_first: Vec::new(),
            splits: crate::analysis::hidden::StreamSplits::new(Vec::new(), 0),
            simd_keys: Vec::new(),
            slot_wave: Vec::new(),
            live: Vec::new(),
            slot_place: Vec::new(),
            recent: Box::new([(u32::MAX, 0); RECENT]),
            waves_seen: 0,
            free,
            streaming: false,
            attributed: 0,
            tokens: 0,
            miss: None,
        }
    }

    /// After the analyzer took a packet the walk wants (of PC `pc` for its tokens,
    /// `an.raw_tokens()[before..]`): the tokens of packets before it (of no PC, which the
    /// walk did not see), the waves started since the last such packet, and its tokens; the
    /// tokens are then dropped. A wave that started or a token made in between that would
    /// change what came after it here leaves the fold not exact: a token of a wave not yet
    /// added, or a start before an issue of its SIMD ([`crate::analysis::hidden::StreamSplits::add_wave`]).
    #[inline(always)]
    fn packet(
        &mut self,
        an: &mut crate::sqtt::waves::Analyzer,
        before: usize,
        pc: u64,
        walk: &crate::sqtt::map::RdnaWalk,
    ) {
        // Inline in [`wanted`]: no call per packet but for what is rare (tokens of packets
        // before it, waves started).
        if before > 0 {
            self.tokens_before(&an.raw_tokens()[..before], walk);
        }
        if self.free {
            if !an.queued_waves().is_empty() {
                self.started_queued(an);
            }
        } else if an.raw_waves() != self.waves_seen {
            self.started(an);
        }
        if an.raw_tokens().len() > before {
            self.tokens_of(&an.raw_tokens()[before..], pc, walk);
            an.clear_tokens();
        } else if before > 0 {
            an.clear_tokens();
        }
    }

    /// [`TokenFold::packet`]'s tokens of packets before its packet (of no PC).
    #[inline(never)]
    fn tokens_before(&mut self, tokens: &[InstToken], walk: &crate::sqtt::map::RdnaWalk) {
        self.tokens_of(tokens, u64::MAX, walk);
    }

    /// The waves started since the last packet: those that may take tokens are added.
    #[inline(never)]
    fn started(&mut self, an: &mut crate::sqtt::waves::Analyzer) {
        self.stream(an);
        for i in self.waves_seen..an.raw_waves() {
            let Some(w) = an.raw_wave(i) else { break };
            if an.takes_tokens(w) {
                self.add_wave(i as u32, (w.cu, w.simd, w.wave), w.start);
            }
        }
        self.waves_seen = an.raw_waves();
    }

    /// [`TokenFold::started`] without records: the waves the analyzer queued (those that may
    /// take tokens, in start order), then dropped from its queue.
    #[inline(never)]
    fn started_queued(&mut self, an: &mut crate::sqtt::waves::Analyzer) {
        self.stream(an);
        // (Only waves that may take tokens are queued.)
        for q in an.queued_waves() {
            self.add_wave(q.index, (q.cu, q.simd, q.wave), q.start);
        }
        an.clear_queued();
    }

    /// Sets the analyzer's token list for one packet's tokens, once.
    fn stream(&mut self, an: &mut crate::sqtt::waves::Analyzer) {
        if !self.streaming {
            self.streaming = true;
            an.stream_tokens();
        }
    }

    /// Raw wave `i`, which may take tokens, started at `start`: its slot.
    fn add_wave(&mut self, i: u32, place: WavePlace, start: i64) {
        let key = (place.0, place.1);
        let m = match self.simd_keys.iter().position(|k| *k == key) {
            Some(m) => m as u32,
            None => {
                self.simd_keys.push(key);
                self.splits.add_simd()
            }
        };
        match self.splits.add_wave(m, start) {
            Some(s) => {
                self.recent[i as usize % RECENT] = (i, s);
                self.slot_wave.push(i);
                self.live.push((m, start, 0));
                self.slot_place.push(place);
            }
            None => self.miss = self.miss.or(Some(Miss::StartOutOfOrder)),
        }
    }

    /// [`TablePart::streamed`]'s step for each of `tokens`, of PC `pc`.
    #[inline(always)]
    fn tokens_of(&mut self, tokens: &[InstToken], pc: u64, walk: &crate::sqtt::map::RdnaWalk) {
        self.tokens += tokens.len();
        if self.miss.is_some() {
            return;
        }
        for t in tokens {
            let s = match self.recent[t.wave as usize % RECENT] {
                (w, s) if w == t.wave => s,
                _ => match self.slot_of(t.wave) {
                    Some(s) => s,
                    None => {
                        self.miss = Some(Miss::UnknownWave);
                        return;
                    }
                },
            };
            let (simd, prev, met) = &mut self.live[s as usize];
            let gap = t.time - *prev;
            *prev = t.time;
            let i = *met;
            *met += 1;
            let simd = *simd;
            let first = (t.wave as u64) << 32 | i as u64;
            let rows = &mut self.rows;
            let kind = rows.name_id(t);
            if self.best.len() <= kind as usize {
                self.best.resize(kind as usize + 1, i64::MAX);
                self.name_first.resize(kind as usize + 1, first);
            }
            let b = &mut self.best[kind as usize];
            *b = (*b).min(gap);
            let f = &mut self.name_first[kind as usize];
            *f = (*f).min(first);
            let g = rows.row(i as usize, kind, pc);
            if self.acc.len() <= g as usize {
                self.new_row(g, first, walk);
            }
            let f = &mut self.row_first[g as usize];
            *f = (*f).min(first);
            self.acc[g as usize].add(gap, kind);
            if !self.splits.issue(simd, t.time, s, g) {
                self.miss = Some(Miss::IssueOutOfOrder);
                return;
            }
        }
    }

    /// The slot of raw wave `w`, not in [`TokenFold::recent`]: among the waves added last
    /// (the live ones), else by a search.
    #[cold]
    #[inline(never)]
    fn slot_of(&mut self, w: u32) -> Option<u32> {
        let n = self.slot_wave.len();
        let s = match self.slot_wave[n.saturating_sub(32)..]
            .iter()
            .rposition(|&x| x == w)
        {
            Some(i) => n.saturating_sub(32) + i,
            None => self.slot_wave.binary_search(&w).ok()?,
        } as u32;
        self.recent[w as usize % RECENT] = (w, s);
        Some(s)
    }

    /// Row `g`, just made: its disassembly (a PC's: the walk's program text, as
    /// [`analyze_mapped`] gives it), its accumulator and its class for the splits.
    #[cold]
    #[inline(never)]
    fn new_row(&mut self, g: u32, first: u64, walk: &crate::sqtt::map::RdnaWalk) {
        if let Some(pc) = self.rows.rows[g as usize].pc {
            let text = walk.inst_at(pc).map(|i| i.text()).unwrap_or_default();
            self.rows.set_text(pc, text);
        }
        self.acc.push(Acc::new());
        self.row_first.push(first);
        self.splits
            .add_row(crate::analysis::hidden::row_class(&self.rows, g));
    }

    /// The folded part and splits of `analysis` (the analysis this was fed), and the
    /// disassembly of the PCs its tokens map to; why not when the fold is not exact. No
    /// token: nothing folded (the SE has no rows and no splits).
    fn finish(
        self,
        analysis: &crate::sqtt::BlobAnalysis,
    ) -> Result<(Option<SeFolded>, HashMap<u64, String>), Miss> {
        if let Some(miss) = self.miss {
            return Err(miss);
        }
        if self.free && analysis.waves_without_records.is_none() {
            let ends = analysis.wave_ends
                - analysis
                    .wave_anomalies
                    .get("end_without_start")
                    .copied()
                    .unwrap_or(0);
            return Err(match analysis.wave_starts == ends {
                true => Miss::RecordFree,
                false => Miss::Unended,
            });
        }
        // (A token left in the list came after the last packet the walk wanted.)
        if !analysis.tokens.is_empty() {
            return Err(Miss::Count);
        }
        // Every wave's tokens met, as the analyzer counted them (and no more waves with
        // tokens): each token met went to its wave's slot, so when as many were met as the
        // analyzer attributed, every wave met all of its own. With records, each wave's count
        // is checked too.
        let met: usize = self.live.iter().map(|l| l.2 as usize).sum();
        let counted = self.free
            || self
                .live
                .iter()
                .zip(&self.slot_wave)
                .all(|(l, &w)| analysis.waves.get(w as usize).map(|w| w.insts) == Some(l.2));
        if !counted || met != self.tokens || self.attributed != self.tokens as u64 {
            return Err(Miss::Count);
        }
        if self.tokens == 0 {
            return Ok((None, HashMap::new()));
        }
        let TokenFold {
            rows,
            best,
            acc,
            row_first,
            name_first,
            splits,
            slot_wave,
            live,
            slot_place,
            ..
        } = self;
        let (by_row, by_slot) = splits.finish();
        let (part, by_inst) =
            renumbered(&rows, acc, best, &row_first, &name_first, &by_row).ok_or(Miss::Count)?;
        let waves = slot_wave
            .iter()
            .zip(&live)
            .zip(&slot_place)
            .zip(by_slot)
            .filter(|(((_, l), _), _)| l.2 > 0)
            .map(|(((&w, l), &place), split)| (w, place, l.2, split))
            .collect();
        let disasm = match rows.disasm {
            Disasm::Own(d) => d,
            Disasm::Of(d) => d.clone(),
        };
        Ok((
            Some(SeFolded {
                part,
                by_inst,
                waves,
            }),
            disasm,
        ))
    }
}

thread_local! {
    /// A token PC list handed back by [`recycle_pcs`], for the next SE mapped on this thread.
    static SPARE_PCS: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Hands an SE's token PCs its caller has finished with (folded) back for the next SE
/// [`analyze_mapped`] maps on this thread, as [`crate::sqtt::waves::recycle`] does the tokens:
/// fresh pages for a list of 8 bytes per token cost more than its reuse.
pub(crate) fn recycle_pcs(mut pcs: Vec<u64>) {
    pcs.clear();
    SPARE_PCS.with(|s| {
        let mut s = s.borrow_mut();
        if pcs.capacity() > s.capacity() {
            *s = pcs;
        }
    });
}

/// Drops this thread's spare token PC list ([`recycle_pcs`]) once no more instruction-traced
/// blob will come to it.
pub(crate) fn drop_spare_pcs() {
    SPARE_PCS.with(|s| *s.borrow_mut() = Vec::new());
}

/// A packet the walk wants, of the traced unit, which the analyzer just took (its tokens are
/// `an.raw_tokens()[before..]`): mapped ([`MapState::packet`]), then its tokens folded when
/// there is a fold ([`TokenFold::packet`]). One call per such packet for both: the
/// per-packet loop stays small.
#[inline(never)]
fn wanted(
    st: &mut MapState,
    fold: &mut Option<TokenFold>,
    an: &mut crate::sqtt::waves::Analyzer,
    p: crate::sqtt::Packet,
    pl: &crate::sqtt::packets::Places,
    before: usize,
) {
    // Without a fold, each token's PC is kept.
    let pc = st.packet(an, p, pl, before, fold.is_none());
    // The fold looks at nothing else: the waves that may take tokens start in packets the
    // walk wants, and another packet's tokens (none seen) wait in the list for the next one.
    if let Some(f) = fold.as_mut() {
        f.packet(an, before, pc, &st.walk);
    }
}

/// What [`analyze_mapped`] folds from the packets the walk wants.
struct MapState {
    walk: crate::sqtt::map::RdnaWalk,
    /// The PC of each raw token so far (`u64::MAX`: none).
    token_pc: Vec<u64>,
    sums: PcSums,
    mapped: Vec<MappedInst>,
    keep_mapped: bool,
    blob_bytes: usize,
}

impl MapState {
    /// One packet of a kind the walk wants and of the traced unit, which the analyzer just
    /// took (its tokens are `an.raw_tokens()[before..]`), in [`wanted`]'s call.
    /// Returns the PC the packet's tokens take (`u64::MAX`: none); with `keep_pcs` false
    /// ([`TokenFold`]), `token_pc` is left alone.
    #[inline(always)]
    fn packet(
        &mut self,
        an: &crate::sqtt::waves::Analyzer,
        p: crate::sqtt::Packet,
        pl: &crate::sqtt::packets::Places,
        before: usize,
        keep_pcs: bool,
    ) -> u64 {
        let p = &p;
        let now = an.raw_tokens().len();
        let mut sink = MapSink {
            sums: &mut self.sums,
            mapped: &mut self.mapped,
            keep_mapped: self.keep_mapped,
            last: u64::MAX,
        };
        self.walk.packet_traced(
            p,
            pl,
            || an.raw_waves().checked_sub(1).map(|w| w as u32),
            &mut sink,
        );
        // The packet's tokens take the PC of the last instruction it mapped (none: u64::MAX),
        // written once each; tokens of packets not passed here are padded to none.
        let last = sink.last;
        if now == before || !keep_pcs {
            return last;
        }
        let token_pc = &mut self.token_pc;
        if token_pc.capacity() == 0 {
            // As the analyzer's token list: the last SE's list if one was handed back
            // ([`recycle_pcs`]), else reserved for the rest of the blob.
            *token_pc = SPARE_PCS.with(|s| std::mem::take(&mut *s.borrow_mut()));
            if token_pc.capacity() == 0 {
                token_pc.reserve(crate::sqtt::waves::tokens_left_estimate(
                    self.blob_bytes,
                    p.offset,
                ));
            }
        }
        // (Never longer than `before`: only tokens of earlier packets are in it.)
        token_pc.resize(before, u64::MAX);
        token_pc.resize(now, last);
        last
    }
}

/// [`MapState::packet`]'s sink: each mapped instruction's AMD times go to its PC's sums (and
/// the instruction to the list, when kept); the last PC is the packet's tokens'.
struct MapSink<'a> {
    sums: &'a mut PcSums,
    mapped: &'a mut Vec<MappedInst>,
    keep_mapped: bool,
    last: u64,
}

impl crate::sqtt::map::WalkSink for MapSink<'_> {
    #[inline(always)]
    fn inst(&mut self, m: &crate::sqtt::map::WalkInst) {
        self.last = m.pc;
        self.sums.add(m.pc, m.stall, m.duration);
        if self.keep_mapped {
            self.mapped.push(m.to_mapped());
        }
    }
}

/// AMD's stall and duration summed per PC: dense slots for the program's PCs, a map for
/// any PC outside them.
struct PcSums {
    slots: PcSlots,
    sums: Vec<Option<(i64, i64)>>,
    spread: HashMap<u64, (i64, i64)>,
}

impl PcSums {
    fn new(slots: PcSlots) -> PcSums {
        PcSums {
            slots,
            sums: vec![None; slots.len],
            spread: HashMap::new(),
        }
    }

    #[inline(always)]
    fn add(&mut self, pc: u64, stall: i64, duration: i64) {
        match self.slots.get(pc).and_then(|s| self.sums.get_mut(s)) {
            Some(e) => {
                let e = e.get_or_insert((0, 0));
                e.0 += stall;
                e.1 += duration;
            }
            None => self.add_spread(pc, stall, duration),
        }
    }

    /// [`PcSums::add`] of a PC outside the slots (rare: out of line).
    #[cold]
    #[inline(never)]
    fn add_spread(&mut self, pc: u64, stall: i64, duration: i64) {
        let e = self.spread.entry(pc).or_default();
        e.0 += stall;
        e.1 += duration;
    }

    /// `pc`'s sums, if any instruction at it was added.
    fn get(&self, pc: u64) -> Option<(i64, i64)> {
        match self.slots.get(pc) {
            Some(s) => self.sums[s],
            None => self.spread.get(&pc).copied(),
        }
    }

    /// The sums as a list sorted by PC.
    fn finish(self) -> Vec<(u64, i64, i64)> {
        let base = self.slots.base;
        let mut amd: Vec<(u64, i64, i64)> = self
            .sums
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.map(|(a, b)| (base + 4 * i as u64, a, b)))
            .chain(self.spread.into_iter().map(|(pc, (a, b))| (pc, a, b)))
            .collect();
        amd.sort_unstable_by_key(|e| e.0);
        amd
    }
}

/// Token-name ids: one per distinct name (tokens with the same name share a best case).
struct Names {
    names: Vec<String>,
    combos: Vec<((TokenKind, TokenOp), u32)>,
    /// (kind and op packed + 1, id) of the combos met, direct-mapped by a few bits of the key
    /// (0: empty): a token's id in one probe, where kinds alternating token by token missed a
    /// one-entry cache and searched the list.
    cache: [(u32, u32); 64],
}

impl Default for Names {
    fn default() -> Names {
        Names {
            names: Vec::new(),
            combos: Vec::new(),
            cache: [(0, 0); 64],
        }
    }
}

impl Names {
    #[inline(always)]
    fn id(&mut self, t: &InstToken) -> u32 {
        let k = ((t.kind as u32) << 16 | t.op.bits() as u32) + 1;
        let h = (k ^ (k >> 6) ^ (k >> 16)) as usize & 63;
        let e = self.cache[h];
        if e.0 == k {
            return e.1;
        }
        let id = self.id_of(t);
        self.cache[h] = (k, id);
        id
    }

    #[inline(never)]
    fn id_of(&mut self, t: &InstToken) -> u32 {
        let c = (t.kind, t.op);
        match self.combos.iter().find(|(k, _)| *k == c) {
            Some(&(_, id)) => id,
            None => {
                let name = token_name(t);
                let id = match self.names.iter().position(|n| *n == name) {
                    Some(i) => i as u32,
                    None => {
                        self.names.push(name);
                        (self.names.len() - 1) as u32
                    }
                };
                self.combos.push((c, id));
                id
            }
        }
    }
}

const NO_DISASM: u32 = u32::MAX - 1;

/// The key of one row of the instruction table: a PC with disassembly, or (unmapped) a position
/// in the wave's token stream with a token name id.
#[derive(Clone, Copy)]
pub(crate) struct RowKey {
    pub pc: Option<u64>,
    pub index: usize,
    pub name: u32,
}

/// The rows of a kernel's instruction table in the order they are first met (SEs, waves and
/// tokens in order), found per token by a slot per PC or a short list per wave position: no
/// string built or hashed per token. [`inst_stats`] and
/// [`crate::analysis::hidden::kernel_splits`] group executions the same way through it.
pub(crate) struct Rows<'k> {
    disasm: Disasm<'k>,
    names: Names,
    slots: Option<PcSlots>,
    by_slot: Vec<u32>,
    by_pc: HashMap<u64, u32>,
    /// Unmapped: per position in the wave, the (name id, row) pairs seen there.
    by_pos: Vec<Vec<(u32, u32)>>,
    pub rows: Vec<RowKey>,
}

/// Where [`Rows`] finds a PC's disassembly.
enum Disasm<'k> {
    /// A PC without any is keyed like an unmapped token.
    Of(&'k HashMap<u64, String>),
    /// Every PC has some (a walk's PCs: its program's text, or none), added as each PC's row
    /// is made ([`Rows::set_text`]).
    Own(HashMap<u64, String>),
}

impl<'k> Rows<'k> {
    /// The rows of `ses`, whose mapped PCs' disassembly is in `disasm`.
    pub fn new(ses: &[SeTrace], disasm: &'k HashMap<u64, String>) -> Rows<'k> {
        let pcs = ses
            .iter()
            .flat_map(|s| s.token_pc.iter().copied().filter(|&p| p != u64::MAX));
        Rows::with_slots(PcSlots::covering(pcs), Disasm::Of(disasm))
    }

    fn with_slots(slots: Option<PcSlots>, disasm: Disasm<'k>) -> Rows<'k> {
        let by_slot = vec![u32::MAX; slots.as_ref().map_or(0, |s| s.len)];
        Rows {
            disasm,
            names: Names::default(),
            slots,
            by_slot,
            by_pc: HashMap::new(),
            by_pos: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// The name id of token `t` (tokens with the same name share one).
    #[inline]
    pub fn name_id(&mut self, t: &InstToken) -> u32 {
        self.names.id(t)
    }

    pub fn name(&self, id: u32) -> &str {
        &self.names.names[id as usize]
    }

    /// The row of a token at position `i` of its wave, with name id `kind` and PC `pc`
    /// (`u64::MAX`: unmapped).
    #[inline(always)]
    pub fn row(&mut self, i: usize, kind: u32, pc: u64) -> u32 {
        // The usual case inline: a PC whose row its slot already holds.
        if pc != u64::MAX {
            if let Some(&g) = self
                .slots
                .as_ref()
                .and_then(|s| s.get(pc))
                .and_then(|s| self.by_slot.get(s))
            {
                if g < NO_DISASM {
                    return g;
                }
            }
        }
        self.row_of(i, kind, pc)
    }

    /// [`Rows::row`] in full.
    #[inline(never)]
    fn row_of(&mut self, i: usize, kind: u32, pc: u64) -> u32 {
        // A PC's row, looked up by its slot; NO_DISASM: a PC without disassembly is keyed like
        // an unmapped token (checked once per PC, not per token).
        let by_pc_row = (pc != u64::MAX)
            .then(|| {
                let cell = match self.slots.as_ref().and_then(|s| s.get(pc)) {
                    Some(s) => &mut self.by_slot[s],
                    None => self.by_pc.entry(pc).or_insert(u32::MAX),
                };
                if *cell == u32::MAX {
                    let has = match &self.disasm {
                        Disasm::Of(d) => d.contains_key(&pc),
                        Disasm::Own(_) => true,
                    };
                    *cell = if has {
                        self.rows.push(RowKey {
                            pc: Some(pc),
                            index: 0,
                            name: 0,
                        });
                        (self.rows.len() - 1) as u32
                    } else {
                        NO_DISASM
                    };
                }
                (*cell != NO_DISASM).then_some(*cell)
            })
            .flatten();
        if let Some(g) = by_pc_row {
            return g;
        }
        if self.by_pos.len() <= i {
            self.by_pos.resize_with(i + 1, Vec::new);
        }
        match self.by_pos[i].iter().find(|(n, _)| *n == kind) {
            Some(&(_, g)) => g,
            None => {
                let g = self.rows.len() as u32;
                self.rows.push(RowKey {
                    pc: None,
                    index: i,
                    name: kind,
                });
                self.by_pos[i].push((kind, g));
                g
            }
        }
    }

    /// A row's name: its disassembly, or the token name.
    pub fn row_name(&self, g: u32) -> String {
        let r = &self.rows[g as usize];
        let disasm = match &self.disasm {
            Disasm::Of(d) => d,
            Disasm::Own(d) => d,
        };
        match r.pc {
            Some(pc) => disasm.get(&pc).cloned().unwrap_or_default(),
            None => self.name(r.name).to_string(),
        }
    }

    /// The disassembly of `pc`, whose row was just made, with [`Disasm::Own`].
    fn set_text(&mut self, pc: u64, text: String) {
        if let Disasm::Own(d) = &mut self.disasm {
            d.entry(pc).or_insert(text);
        }
    }

    /// A row's key in [`crate::analysis::hidden::KernelSplits::by_inst`].
    pub fn inst_key(&self, g: u32) -> crate::analysis::hidden::InstKey {
        let r = &self.rows[g as usize];
        match r.pc {
            Some(pc) => (pc, 0, self.row_name(g)),
            None => (u64::MAX, r.index, self.row_name(g)),
        }
    }
}

/// A row's latencies, kept for the median: 2 bytes each while they fit a u16, then 4 while
/// they fit a u32. One per execution of the itraced waves (millions at real sizes, and most
/// latencies are a few cycles to a few thousand): the narrower list is half the fresh pages.
#[derive(Clone)]
enum Gaps {
    Short(Vec<u16>),
    Narrow(Vec<u32>),
    Wide(Vec<i64>),
}

impl Gaps {
    #[inline]
    fn push(&mut self, gap: i64) {
        match self {
            Gaps::Short(v) => match u16::try_from(gap) {
                Ok(g) => v.push(g),
                Err(_) => self.widen_for(gap),
            },
            Gaps::Narrow(v) => match u32::try_from(gap) {
                Ok(g) => v.push(g),
                Err(_) => self.widen_for(gap),
            },
            Gaps::Wide(v) => v.push(gap),
        }
    }

    /// How wide the list is: 0 (u16), 1 (u32), 2 (i64).
    fn width(&self) -> u8 {
        match self {
            Gaps::Short(_) => 0,
            Gaps::Narrow(_) => 1,
            Gaps::Wide(_) => 2,
        }
    }

    /// The width that holds `gap`.
    fn width_of(gap: i64) -> u8 {
        if u16::try_from(gap).is_ok() {
            0
        } else if u32::try_from(gap).is_ok() {
            1
        } else {
            2
        }
    }

    /// Widens the list to hold `gap`, then adds it.
    #[cold]
    #[inline(never)]
    fn widen_for(&mut self, gap: i64) {
        self.widen_to(Self::width_of(gap));
        self.push(gap);
    }

    /// The same latencies in a list at least `width` wide.
    fn widen_to(&mut self, width: u8) {
        if width <= self.width() {
            return;
        }
        *self = match (std::mem::replace(self, Gaps::Wide(Vec::new())), width) {
            (Gaps::Short(v), 1) => Gaps::Narrow(v.iter().map(|&g| g as u32).collect()),
            (Gaps::Short(v), _) => Gaps::Wide(v.iter().map(|&g| g as i64).collect()),
            (Gaps::Narrow(v), _) => Gaps::Wide(v.iter().map(|&g| g as i64).collect()),
            (wide, _) => wide,
        };
    }

    /// Adds another row's latencies (the median is of the values, not their order).
    fn append(&mut self, mut o: Gaps) {
        let width = self.width().max(o.width());
        self.widen_to(width);
        o.widen_to(width);
        match (&mut *self, o) {
            (Gaps::Short(a), Gaps::Short(mut b)) => a.append(&mut b),
            (Gaps::Narrow(a), Gaps::Narrow(mut b)) => a.append(&mut b),
            (Gaps::Wide(a), Gaps::Wide(mut b)) => a.append(&mut b),
            // Both are `width` wide by now; one by one otherwise.
            (_, Gaps::Short(b)) => b.iter().for_each(|&g| self.push(g as i64)),
            (_, Gaps::Narrow(b)) => b.iter().for_each(|&g| self.push(g as i64)),
            (_, Gaps::Wide(b)) => b.iter().for_each(|&g| self.push(g)),
        }
    }

    /// The element at `len / 2` in sorted order (what the sorted list's middle was).
    fn median(&mut self) -> i64 {
        match self {
            Gaps::Short(v) if !v.is_empty() => {
                let m = v.len() / 2;
                *v.select_nth_unstable(m).1 as i64
            }
            Gaps::Narrow(v) if !v.is_empty() => {
                let m = v.len() / 2;
                *v.select_nth_unstable(m).1 as i64
            }
            Gaps::Wide(v) if !v.is_empty() => {
                let m = v.len() / 2;
                *v.select_nth_unstable(m).1
            }
            _ => 0,
        }
    }
}

/// One row being accumulated; `kinds`: how many of its executions had each token name (by
/// name id), for the stall beyond each name's best case.
#[derive(Clone)]
struct Acc {
    count: u64,
    total: i64,
    min: i64,
    max: i64,
    gaps: Gaps,
    kinds: Vec<(u32, u64)>,
}

impl Acc {
    fn new() -> Acc {
        Acc {
            count: 0,
            total: 0,
            min: i64::MAX,
            max: i64::MIN,
            gaps: Gaps::Short(Vec::new()),
            kinds: Vec::new(),
        }
    }

    /// One execution: its latency and token name id.
    #[inline(always)]
    fn add(&mut self, gap: i64, kind: u32) {
        self.count += 1;
        self.total += gap;
        self.min = self.min.min(gap);
        self.max = self.max.max(gap);
        self.gaps.push(gap);
        self.add_kind(kind, 1);
    }

    #[inline]
    fn add_kind(&mut self, kind: u32, n: u64) {
        match self.kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, c)) => *c += n,
            None => self.kinds.push((kind, n)),
        }
    }
}

/// [`crate::analysis::inst_stats`]: every execution of every instruction of the kernel's
/// itraced waves, grouped by PC (or, unmapped, by position in the wave and name).
pub fn inst_stats(k: &KernelSqtt) -> Vec<InstStat> {
    inst_stats_with(k, &crate::analysis::hidden::kernel_splits(k).by_inst)
}

/// Calls `f(position in the wave, latency, token)` for every token of every wave of `se`, in
/// wave order.
#[inline]
fn each_token(se: &SeTrace, mut f: impl FnMut(usize, i64, &InstToken, usize)) {
    let tokens = &se.analysis.tokens;
    for (w, wave) in se.analysis.waves.iter().enumerate() {
        // Most waves of an itraced SE have no tokens (only the traced unit's do): their
        // records (48 bytes each, millions) are not read.
        let wt = se.wave_tokens(w);
        if wt.is_empty() {
            continue;
        }
        let mut prev = wave.start;
        for (i, &ti) in wt.iter().enumerate() {
            let Some(t) = tokens.get(ti as usize) else {
                continue;
            };
            let gap = t.time - prev;
            prev = t.time;
            f(i, gap, t, ti as usize);
        }
    }
}

/// [`inst_stats`] with the kernel's exposed/hidden split already computed
/// ([`crate::analysis::hidden::kernel_splits`]), for callers that also report it.
pub fn inst_stats_with(
    k: &KernelSqtt,
    splits: &HashMap<crate::analysis::hidden::InstKey, crate::analysis::hidden::LatencySplit>,
) -> Vec<InstStat> {
    TablePart::of(&k.ses, &k.disasm).finish(splits)
}

/// The instruction table of some SEs before its stall and median are taken: the rows (keyed
/// as the latency splits are, in the order first met), each one's executions, and each token
/// name's best case. One SE's part can be made as soon as it is decoded and the SE dropped;
/// parts merged in SE order are the part of those SEs together.
///
/// One streaming pass over the tokens; per execution only its latency is kept (for the
/// median), as a u32 when it fits. The stall of an execution is its latency beyond its token
/// name's best case over the kernel, which is never more than the latency, so a row's stall
/// is its total minus, per name, its executions of that name times the name's best case: no
/// second pass once the best cases are known.
#[derive(Default, Clone)]
pub struct TablePart {
    keys: Vec<crate::analysis::hidden::InstKey>,
    acc: Vec<Acc>,
    names: Vec<String>,
    best: Vec<i64>,
    /// AMD's stall and duration per PC, summed per SE.
    amd: Vec<(u64, i64, i64)>,
}

/// [`TablePart::streamed`]'s rows and token names, met in stream order, in the order the
/// wave-by-wave walk meets them: by where it meets each first (`row_first`, `name_first`:
/// (wave, position) packed in a u64). The part (without AMD's sums) and each row's split
/// (`by_row`) by its key.
#[allow(clippy::type_complexity)]
fn renumbered(
    rows: &Rows<'_>,
    acc: Vec<Acc>,
    best: Vec<i64>,
    row_first: &[u64],
    name_first: &[u64],
    by_row: &[crate::analysis::hidden::LatencySplit],
) -> Option<(
    TablePart,
    HashMap<crate::analysis::hidden::InstKey, crate::analysis::hidden::LatencySplit>,
)> {
    let mut row_order: Vec<u32> = (0..acc.len() as u32).collect();
    row_order.sort_unstable_by_key(|&g| row_first[g as usize]);
    let mut name_order: Vec<u32> = (0..best.len() as u32).collect();
    name_order.sort_unstable_by_key(|&k| name_first[k as usize]);
    let mut name_new = vec![0u32; name_order.len()];
    for (new, &old) in name_order.iter().enumerate() {
        name_new[old as usize] = new as u32;
    }
    let mut acc: Vec<Option<Acc>> = acc.into_iter().map(Some).collect();
    let mut out_acc = Vec::with_capacity(acc.len());
    let mut keys = Vec::with_capacity(acc.len());
    let mut by_inst = HashMap::new();
    for &g in &row_order {
        let mut a = acc[g as usize].take()?;
        for k in &mut a.kinds {
            k.0 = name_new[k.0 as usize];
        }
        out_acc.push(a);
        let key = rows.inst_key(g);
        by_inst.insert(key.clone(), *by_row.get(g as usize)?);
        keys.push(key);
    }
    let part = TablePart {
        keys,
        acc: out_acc,
        names: name_order
            .iter()
            .map(|&k| rows.name(k).to_string())
            .collect(),
        best: name_order.iter().map(|&k| best[k as usize]).collect(),
        amd: Vec::new(),
    };
    Some((part, by_inst))
}

impl TablePart {
    /// The part of `ses`, whose mapped PCs' disassembly is in `disasm`.
    pub fn of(ses: &[SeTrace], disasm: &HashMap<u64, String>) -> TablePart {
        Self::walk(ses, disasm, false).0
    }

    /// One SE's part and its latency splits ([`TablePart::with_splits`]), what every per-SE
    /// fold (stats, the index, the app's view) keeps; nothing for an SE without tokens (only
    /// waves with tokens have rows and splits).
    pub fn of_se(
        st: &SeTrace,
        disasm: &HashMap<u64, String>,
    ) -> (TablePart, crate::analysis::hidden::KernelSplits) {
        if let Some(f) = &st.folded {
            return f.clone().finish(st);
        }
        if st.analysis.tokens.is_empty() {
            return Default::default();
        }
        Self::streamed(st, disasm).unwrap_or_else(|| match st.has_token_index() {
            true => Self::with_splits(std::slice::from_ref(st), disasm),
            // Handed on without its index (an RDNA SE, whose issues come in time order, so not
            // met in practice): the walk reads tokens wave by wave, from a copy with one.
            false => Self::with_splits(std::slice::from_ref(&st.with_token_index()), disasm),
        })
    }

    /// [`TablePart::of_se`] of an SE the caller is done with: what was folded in its decode
    /// ([`analyze_folded`]) taken out of it, not copied.
    pub fn take_se(
        st: &mut SeTrace,
        disasm: &HashMap<u64, String>,
    ) -> (TablePart, crate::analysis::hidden::KernelSplits) {
        match st.folded.take() {
            Some(f) => f.finish(st),
            None => Self::of_se(st, disasm),
        }
    }

    /// [`TablePart::of_se`] in one pass over the SE's tokens in stream order, when every
    /// SIMD's issues come in time order (always, in the captures seen; `None` otherwise, and
    /// [`TablePart::with_splits`] is taken): each token's row and latency as the wave-by-wave
    /// walk finds them (its position and last issue kept per wave), its split from a sweep of
    /// its SIMD fed as the tokens come ([`crate::analysis::hidden::StreamSplits`]). No token
    /// index walk (tokens read in order, not wave by wave), no per-token row or event list.
    ///
    /// Rows and token names are then met in stream order: each remembers where the walk would
    /// have met it first (the least (wave, position) of its tokens) and they are renumbered in
    /// that order, which is the walk's. The rest (counts, sums, extremes, the latencies kept
    /// for the median, the splits) does not depend on the order executions are added in.
    fn streamed(
        st: &SeTrace,
        disasm: &HashMap<u64, String>,
    ) -> Option<(TablePart, crate::analysis::hidden::KernelSplits)> {
        use crate::analysis::hidden::{row_class, KernelSplits, StreamSplits, WaveSplit};
        let tokens = &st.analysis.tokens;
        let waves = &st.analysis.waves;
        // The waves with tokens (slots, in wave order), their SIMDs (by CU and SIMD, as the
        // splits group them) and where each wave's walk starts.
        let mut slot_of = crate::spare::filled(waves.len(), u32::MAX);
        let mut slot_wave: Vec<u32> = Vec::new();
        let mut simd_keys: Vec<(u16, u8)> = Vec::new();
        let mut starts: Vec<Vec<(i64, u32)>> = Vec::new();
        // Per slot: its SIMD, its last issue (its start before the first), the tokens met.
        let mut live: Vec<(u32, i64, u32)> = Vec::new();
        for (w, wave) in waves.iter().enumerate() {
            if st.wave_token_count(w) == 0 {
                continue;
            }
            let s = slot_wave.len() as u32;
            slot_of[w] = s;
            slot_wave.push(w as u32);
            let key = (wave.cu, wave.simd);
            let m = match simd_keys.iter().position(|k| *k == key) {
                Some(m) => m,
                None => {
                    simd_keys.push(key);
                    starts.push(Vec::new());
                    simd_keys.len() - 1
                }
            };
            starts[m].push((wave.start, s));
            live.push((m as u32, wave.start, 0));
        }
        let mut splits = StreamSplits::new(starts, slot_wave.len());
        let mut rows = Rows::new(std::slice::from_ref(st), disasm);
        let mut best: Vec<i64> = Vec::new();
        let mut acc: Vec<Acc> = Vec::new();
        // Where the wave-by-wave walk meets each row and each name first: (wave, position),
        // packed in a u64 (wave high) to take the least in one compare.
        let mut row_first: Vec<u64> = Vec::new();
        let mut name_first: Vec<u64> = Vec::new();
        for (ti, t) in tokens.iter().enumerate() {
            // A token of no wave in the list is in no wave's tokens either.
            let Some(&s) = slot_of.get(t.wave as usize) else {
                continue;
            };
            // A token of a wave without any: the index does not match the tokens.
            let (simd, prev, met) = live.get_mut(s as usize)?;
            let gap = t.time - *prev;
            *prev = t.time;
            let i = *met;
            *met += 1;
            let first = (t.wave as u64) << 32 | i as u64;
            let kind = rows.name_id(t);
            if best.len() <= kind as usize {
                best.resize(kind as usize + 1, i64::MAX);
                name_first.resize(kind as usize + 1, first);
            }
            best[kind as usize] = best[kind as usize].min(gap);
            let f = &mut name_first[kind as usize];
            *f = (*f).min(first);
            let pc = st.token_pc.get(ti).copied().unwrap_or(u64::MAX);
            let g = rows.row(i as usize, kind, pc);
            if acc.len() <= g as usize {
                acc.push(Acc::new());
                row_first.push(first);
                splits.add_row(row_class(&rows, g));
            }
            let f = &mut row_first[g as usize];
            *f = (*f).min(first);
            acc[g as usize].add(gap, kind);
            if !splits.issue(*simd, t.time, s, g) {
                return None;
            }
        }
        // Every wave's tokens met, as the index lists them.
        if live
            .iter()
            .zip(&slot_wave)
            .any(|(l, &w)| l.2 as usize != st.wave_token_count(w as usize))
        {
            return None;
        }
        let (by_row, by_slot) = splits.finish();
        let (mut part, by_inst) = renumbered(&rows, acc, best, &row_first, &name_first, &by_row)?;
        part.amd = st.amd_pc.clone();
        let mut out = KernelSplits {
            by_inst,
            ..Default::default()
        };
        // Only waves with tokens have a split, in wave order.
        out.waves.reserve_exact(slot_wave.len());
        for (&w, split) in slot_wave.iter().zip(&by_slot) {
            let wave = &waves[w as usize];
            out.total.add(split);
            out.waves.push(WaveSplit {
                se: st.se,
                wave: w as usize,
                cu: wave.cu,
                simd: wave.simd,
                slot: wave.wave,
                instructions: st.wave_token_count(w as usize),
                split: *split,
            });
        }
        crate::spare::give(slot_of);
        Some((part, out))
    }

    /// [`TablePart::of`] and [`crate::analysis::hidden::splits_of`] of `ses` from one walk
    /// over their tokens: the splits group executions by the same rows, met in the same order,
    /// so the table's pass finds them once for both.
    pub fn with_splits(
        ses: &[SeTrace],
        disasm: &HashMap<u64, String>,
    ) -> (TablePart, crate::analysis::hidden::KernelSplits) {
        let (part, rows, token_rows) = Self::walk(ses, disasm, true);
        let splits = crate::analysis::hidden::splits_with_rows(ses, &rows, &token_rows);
        (part, splits)
    }

    /// The part, its rows, and with `keep_rows` each SE's token rows (`u32::MAX`: in no wave).
    fn walk<'k>(
        ses: &[SeTrace],
        disasm: &'k HashMap<u64, String>,
        keep_rows: bool,
    ) -> (TablePart, Rows<'k>, Vec<Vec<u32>>) {
        let mut rows = Rows::new(ses, disasm);
        let mut best: Vec<i64> = Vec::new();
        let mut acc: Vec<Acc> = Vec::new();
        let mut token_rows: Vec<Vec<u32>> = Vec::new();
        let pc_of = |se: &SeTrace, ti: usize| se.token_pc.get(ti).copied().unwrap_or(u64::MAX);
        for se in ses {
            let mut tr = match keep_rows {
                true => vec![u32::MAX; se.analysis.tokens.len()],
                false => Vec::new(),
            };
            each_token(se, |i, gap, t, ti| {
                let kind = rows.name_id(t);
                if best.len() <= kind as usize {
                    best.resize(kind as usize + 1, i64::MAX);
                }
                best[kind as usize] = best[kind as usize].min(gap);
                let g = rows.row(i, kind, pc_of(se, ti)) as usize;
                if let Some(r) = tr.get_mut(ti) {
                    *r = g as u32;
                }
                if acc.len() <= g {
                    acc.push(Acc::new());
                }
                acc[g].add(gap, kind);
            });
            if keep_rows {
                token_rows.push(tr);
            }
        }
        let part = TablePart {
            keys: (0..rows.rows.len() as u32)
                .map(|g| rows.inst_key(g))
                .collect(),
            acc,
            names: rows.names.names.clone(),
            best,
            amd: ses.iter().flat_map(|s| s.amd_pc.iter().copied()).collect(),
        };
        (part, rows, token_rows)
    }

    /// Adds the part of the SEs after this one's.
    pub fn merge(&mut self, o: TablePart) {
        let name_ids: Vec<u32> = o
            .names
            .into_iter()
            .zip(o.best)
            .map(|(n, b)| {
                let id = match self.names.iter().position(|x| *x == n) {
                    Some(i) => i,
                    None => {
                        self.names.push(n);
                        self.best.push(i64::MAX);
                        self.names.len() - 1
                    }
                };
                self.best[id] = self.best[id].min(b);
                id as u32
            })
            .collect();
        let mut index: HashMap<crate::analysis::hidden::InstKey, usize> = self
            .keys
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, k)| (k, i))
            .collect();
        for (key, mut a) in o.keys.into_iter().zip(o.acc) {
            for k in &mut a.kinds {
                k.0 = name_ids[k.0 as usize];
            }
            match index.get(&key) {
                Some(&g) => {
                    let m = &mut self.acc[g];
                    m.count += a.count;
                    m.total += a.total;
                    m.min = m.min.min(a.min);
                    m.max = m.max.max(a.max);
                    m.gaps.append(a.gaps);
                    for (k, n) in a.kinds {
                        m.add_kind(k, n);
                    }
                }
                None => {
                    index.insert(key.clone(), self.keys.len());
                    self.keys.push(key);
                    self.acc.push(a);
                }
            }
        }
        self.amd.extend(o.amd);
    }

    /// The table, with each row's exposed/hidden split from `splits`.
    pub fn finish(
        self,
        splits: &HashMap<crate::analysis::hidden::InstKey, crate::analysis::hidden::LatencySplit>,
    ) -> Vec<InstStat> {
        let grand: i64 = self.acc.iter().map(|a| a.total).sum();
        // AMD's stall and duration summed per PC of a row.
        let slots = PcSlots::covering(self.keys.iter().map(|k| k.0).filter(|&p| p != u64::MAX));
        let mut amd_sums = PcSums::new(slots.unwrap_or(PcSlots::NONE));
        for &(pc, stall, duration) in &self.amd {
            amd_sums.add(pc, stall, duration);
        }
        let best = &self.best;
        let mut out: Vec<InstStat> = self
            .keys
            .into_iter()
            .zip(self.acc)
            .map(|(key, mut a)| {
                let pc = (key.0 != u64::MAX).then_some(key.0);
                let split = splits.get(&key).copied().unwrap_or_default();
                let total = a.total;
                let n = a.count.max(1);
                // Wrapping, as the per-execution sum it replaces: the exact result whenever
                // that sum fits, even when a product on the way does not (extreme CDNA times).
                let stall = total.wrapping_sub(a.kinds.iter().fold(0i64, |s, &(k, c)| {
                    s.wrapping_add((c as i64).wrapping_mul(best[k as usize]))
                }));
                let am = pc.and_then(|pc| amd_sums.get(pc));
                InstStat {
                    key: match pc {
                        Some(pc) => format!("0x{pc:x}"),
                        None => format!("#{}", key.1),
                    },
                    pc,
                    name: key.2,
                    count: a.count,
                    total,
                    mean: total as f64 / n as f64,
                    min: a.min,
                    median: a.gaps.median(),
                    max: a.max,
                    share: if grand > 0 {
                        total as f64 / grand as f64
                    } else {
                        0.0
                    },
                    stall,
                    stall_share: if total > 0 {
                        stall as f64 / total as f64
                    } else {
                        0.0
                    },
                    amd_stall: am.map(|a| a.0),
                    amd_duration: am.map(|a| a.1),
                    exposed: split.exposed,
                    hidden: split.hidden,
                    hidden_share: split.hidden_share(),
                }
            })
            .collect();
        // PCs in address order, then unmapped positions (first-seen order among equal positions).
        out.sort_by_key(|r| match r.pc {
            Some(pc) => (false, pc),
            None => (true, r.key[1..].parse().unwrap_or(0)),
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqtt::{BlobAnalysis, Layout, Wave, WaveTag};

    /// A row's latencies give the median of a plain sorted list of the same values, pushed
    /// and appended in pieces, at every width: small ones (u16), some past u16 or u32,
    /// negative ones; and a list stays as narrow as its values allow.
    #[test]
    fn gaps_median_is_the_sorted_middle() {
        fn value(next: &mut impl FnMut(u64) -> u64) -> i64 {
            match next(20) {
                0 => 65_536 + next(1 << 20) as i64,
                1 => (1 << 32) + next(1000) as i64,
                2 => -(next(1000) as i64) - 1,
                3 => 65_535 - next(3) as i64,
                _ => next(5000) as i64,
            }
        }
        let mut next = crate::analysis::test_rng(0x6a09_e667_f3bc_c908);
        for case in 0..3000 {
            let pieces = 1 + case % 4;
            let mut all = Vec::new();
            let mut gaps = Gaps::Short(Vec::new());
            for piece in 0..pieces {
                let n = next(40) as usize;
                let vals: Vec<i64> = (0..n).map(|_| value(&mut next)).collect();
                all.extend(&vals);
                if piece == 0 {
                    vals.iter().for_each(|&g| gaps.push(g));
                } else {
                    let mut o = Gaps::Short(Vec::new());
                    vals.iter().for_each(|&g| o.push(g));
                    gaps.append(o);
                }
            }
            let want_width = all.iter().map(|&g| Gaps::width_of(g)).max().unwrap_or(0);
            assert_eq!(gaps.width(), want_width, "case {case}");
            all.sort_unstable();
            let want = all.get(all.len() / 2).copied().unwrap_or(0);
            assert_eq!(gaps.median(), want, "case {case}: {all:?}");
        }
    }

    /// A random itraced SE: waves on a few SIMDs (most without tokens), tokens in stream
    /// order (in time order per SIMD, or now and then not), PCs mapped with and without
    /// disassembly or not at all, token names that share rows and names.
    fn random_se(next: &mut impl FnMut(u64) -> u64) -> (SeTrace, HashMap<u64, String>) {
        let n_waves = 1 + next(12) as usize;
        let waves: Vec<Wave> = (0..n_waves)
            .map(|_| {
                let start = next(30) as i64;
                Wave {
                    cu: next(2) as u16,
                    simd: if next(3) == 0 { 1 } else { 0 },
                    wave: next(16) as u8,
                    sa: None,
                    tag: WaveTag::None,
                    start,
                    end: start + 100,
                    insts: 0,
                    start_offset: 0,
                    end_delta: 0,
                }
            })
            .collect();
        let shuffled = next(6) == 0;
        let mut tokens = Vec::new();
        let mut pcs = Vec::new();
        let mut t = 0i64;
        for _ in 0..next(80) {
            t += next(3) as i64;
            let wave = next(n_waves as u64 + 1) as u32;
            let time = if shuffled { t - next(8) as i64 } else { t };
            let (kind, op) = match next(5) {
                0 => (TokenKind::ValuInst, crate::sqtt::TokenOp::NONE),
                1 => (TokenKind::Immediate, crate::sqtt::TokenOp::NONE),
                2 => (TokenKind::ImmediateMask, crate::sqtt::TokenOp::NONE),
                _ => (
                    TokenKind::Inst,
                    crate::sqtt::TokenOp::new(Layout::Rdna3, next(8) as u32),
                ),
            };
            tokens.push(InstToken {
                time,
                wave,
                kind,
                op,
                offset: 0,
            });
            pcs.push(match next(4) {
                0 => u64::MAX,
                _ => 0x1000 + 4 * next(10),
            });
        }
        let analysis = BlobAnalysis {
            waves,
            tokens,
            ..Default::default()
        };
        let mut st = SeTrace::new(3, true, analysis, &|c| c as f64);
        if next(5) != 0 {
            st.token_pc = pcs;
        }
        st.amd_pc = vec![(0x1000, 1, 2), (0x1008, 3, 4)];
        // PCs 0x1000..0x1010 have disassembly (of several classes), the others none.
        let texts = [
            "v_add_f32 v0, v1, v2",
            "s_waitcnt 0",
            "global_load b32",
            "s_mov b0",
        ];
        let disasm = (0..4u64)
            .map(|i| (0x1000 + 4 * i, texts[i as usize].to_string()))
            .collect();
        (st, disasm)
    }

    /// The streamed fold gives what the walk over the token index and the latency splits give
    /// (the table, its rows' order, names, splits per row and wave), or nothing when a SIMD's
    /// issues are out of time order.
    #[test]
    fn streamed_fold_matches_the_walk() {
        let mut next = crate::analysis::test_rng(0x2545_f491_4f6c_dd1d);
        let mut streamed = 0;
        for case in 0..3000 {
            let (st, disasm) = random_se(&mut next);
            if st.analysis.tokens.is_empty() {
                continue;
            }
            let (want, want_splits) = TablePart::with_splits(std::slice::from_ref(&st), &disasm);
            let Some((got, got_splits)) = TablePart::streamed(&st, &disasm) else {
                // Only a SIMD out of time order (or an index that does not match) falls back.
                let waves = &st.analysis.waves;
                let mut last: HashMap<(u16, u8), i64> = HashMap::new();
                let sorted = st.analysis.tokens.iter().all(|t| {
                    let Some(w) = waves.get(t.wave as usize) else {
                        return true;
                    };
                    let l = last.entry((w.cu, w.simd)).or_insert(i64::MIN);
                    let ok = t.time >= *l;
                    *l = t.time;
                    ok
                });
                assert!(!sorted, "case {case}: in time order, yet not streamed");
                continue;
            };
            streamed += 1;
            assert_eq!(got.keys, want.keys, "case {case}: rows");
            assert_eq!(got.names, want.names, "case {case}: names");
            assert_eq!(got.best, want.best, "case {case}: best cases");
            assert_eq!(got.amd, want.amd, "case {case}");
            let json = |s: &crate::analysis::hidden::KernelSplits| {
                let mut by_inst: Vec<_> = s.by_inst.iter().collect();
                by_inst.sort_by(|a, b| a.0.cmp(b.0));
                format!("{by_inst:?} {:?} {:?}", s.waves, s.total)
            };
            assert_eq!(json(&got_splits), json(&want_splits), "case {case}: splits");
            let table = |p: TablePart, s: &crate::analysis::hidden::KernelSplits| {
                serde_json::to_string(&p.finish(&s.by_inst)).unwrap()
            };
            assert_eq!(
                table(got, &got_splits),
                table(want, &want_splits),
                "case {case}: table"
            );
        }
        assert!(streamed > 1000, "{streamed} cases streamed");
    }

    /// An SE handed on without its token index (an RDNA SE folded straight from its decode)
    /// folds to the same table and splits as with it: streamed from each wave's token count
    /// when the counts are the tokens' (as the analyzer keeps them), else (counts that do not
    /// match, a SIMD out of time order) from a copy with the index.
    #[test]
    fn fold_without_the_token_index_is_the_same() {
        let mut next = crate::analysis::test_rng(0x3c6e_f372_fe94_f82b);
        let (mut streamed, mut copied) = (0, 0);
        let json = part_json;
        for case in 0..1500 {
            let (mut st, disasm) = random_se(&mut next);
            if st.analysis.tokens.is_empty() {
                continue;
            }
            // The counts the analyzer keeps, but now and then wrong.
            let wrong = next(8) == 0;
            for t in &st.analysis.tokens {
                if let Some(w) = st.analysis.waves.get_mut(t.wave as usize) {
                    w.insts += 1 + wrong as u32;
                }
            }
            let want = json(TablePart::of_se(&st, &disasm));
            st.token_order = Vec::new();
            st.token_start = Vec::new();
            assert!(!st.has_token_index());
            match TablePart::streamed(&st, &disasm) {
                Some(_) => {
                    assert!(!wrong, "case {case}: streamed from wrong counts");
                    streamed += 1;
                }
                None => copied += 1,
            }
            assert_eq!(json(TablePart::of_se(&st, &disasm)), want, "case {case}");
        }
        assert!(streamed > 500 && copied > 100, "{streamed} {copied}");
    }

    /// (blob, code object) of the instruction-traced SEs of the RDNA3 and RDNA4 gemm captures.
    fn traced_sources() -> Vec<(Vec<u8>, crate::isa::CodeObject)> {
        let mut out = Vec::new();
        for arch in ["gfx1100", "gfx1200"] {
            let dir = testdata::shared("")
                .join("traces")
                .join(arch)
                .join("gemm_run_0");
            let elf = std::fs::read(dir.join("program0_r_32_32_16_2.elf")).unwrap();
            for se in 0..2 {
                let blob = std::fs::read(dir.join(format!("kern0_se{se}.sqtt"))).unwrap();
                out.push((blob, crate::isa::CodeObject::parse(&elf).unwrap()));
            }
        }
        out
    }

    /// `blob` damaged a few times at random (bytes flipped, chunks repeated or cut, the end
    /// cut off), its layout header kept.
    fn damaged(blob: &[u8], next: &mut impl FnMut(u64) -> u64) -> Vec<u8> {
        let mut b = blob.to_vec();
        for _ in 0..next(4) {
            let n = b.len().max(17) - 16;
            let i = (16 + next(n as u64) as usize).min(b.len());
            let j = (i + 1 + next(300) as usize).min(b.len());
            match next(4) {
                0 if i < b.len() => b[i] ^= 1 << next(8),
                1 => {
                    let chunk = b[i..j].to_vec();
                    b.splice(j..j, chunk);
                }
                2 => {
                    b.drain(i..j);
                }
                _ => b.truncate(i),
            }
        }
        b
    }

    /// A table part and its splits as text, to compare two folds.
    fn part_json((p, s): (TablePart, crate::analysis::hidden::KernelSplits)) -> String {
        let mut by_inst: Vec<_> = s.by_inst.iter().collect();
        by_inst.sort_by(|a, b| a.0.cmp(b.0));
        let splits = format!("{by_inst:?} {:?} {:?}", s.waves, s.total);
        serde_json::to_string(&p.finish(&s.by_inst)).unwrap() + &splits
    }

    /// The fold made in the decode ([`analyze_folded`], no token kept) is the fold of the
    /// tokens [`analyze_mapped`] keeps ([`TablePart::of_se`]), table and splits, and the rest
    /// of the analysis and mapping is the same, on real instruction-traced blobs damaged at
    /// random (waves that never end, tokens without a live wave, a WAVESTART while live,
    /// truncation); where it cannot be exact it says so ([`Miss`]), and `stats` takes
    /// [`analyze_mapped`] (today's path) instead.
    #[test]
    fn fold_in_the_decode_is_the_fold_of_the_tokens() {
        let sources = traced_sources();
        let mut next = crate::analysis::test_rng(0xa076_1d64_78bd_642f);
        let json = part_json;
        let se_of = |a: crate::sqtt::BlobAnalysis, m: SeMap| {
            let mut st = SeTrace::with_detail(3, true, a, &|c| c as f64, false);
            let mut disasm = HashMap::new();
            m.apply(&mut st, &mut disasm);
            (st, disasm)
        };
        let (mut folded, mut missed) = (0, Vec::new());
        for case in 0..300 {
            let (blob, code) = &sources[case % sources.len()];
            let b = match case < sources.len() {
                true => blob.clone(),
                false => damaged(blob, &mut next),
            };
            let opts = crate::sqtt::AnalyzeOptions::default();
            let Ok((a, m)) = analyze_mapped(&b, None, opts, code, false, &mut |_| {}) else {
                continue;
            };
            let r = analyze_folded(&b, None, opts, code, false, &mut |_| {}).unwrap();
            let (fa, fm) = match r {
                Ok(r) => r,
                Err(miss) => {
                    missed.push(miss);
                    continue;
                }
            };
            assert!(fa.tokens.is_empty(), "case {case}");
            assert!(fm.token_pc.is_empty(), "case {case}");
            assert_eq!(fm.folded.is_some(), !a.tokens.is_empty(), "case {case}");
            assert_eq!(fm.amd_pc, m.amd_pc, "case {case}");
            assert_eq!(fm.error, m.error, "case {case}");
            assert_eq!(fm.disasm, m.disasm, "case {case}");
            let mut plain = serde_json::to_value(&a).unwrap();
            plain["tokens"] = serde_json::Value::Null;
            let mut fv = serde_json::to_value(&fa).unwrap();
            fv["tokens"] = serde_json::Value::Null;
            assert_eq!(fv, plain, "case {case}");
            let (st, disasm) = se_of(a, m);
            let want = json(TablePart::of_se(&st, &disasm));
            let (mut fst, fdisasm) = se_of(fa, fm);
            assert_eq!(json(TablePart::of_se(&fst, &fdisasm)), want, "case {case}");
            assert_eq!(
                json(TablePart::take_se(&mut fst, &fdisasm)),
                want,
                "case {case}"
            );
            assert!(fst.folded.is_none());
            folded += 1;
        }
        // Most damage leaves the fold exact; waves cut off by a truncation never end.
        assert!(folded > 100, "{folded} folded, missed {missed:?}");
        assert!(missed.contains(&Miss::Unended), "{missed:?}");
    }

    /// (what, blob, code object) of every instruction-traced RDNA SE of the shared captures
    /// (`traces/*/*`, each kernel's SEs with its program), those `stats` folds in the decode.
    fn every_traced_rdna_se() -> Vec<(String, Vec<u8>, crate::isa::CodeObject)> {
        let mut out = Vec::new();
        let root = testdata::shared("").join("traces");
        let mut runs: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .flat_map(|arch| std::fs::read_dir(arch.unwrap().path()).unwrap())
            .map(|run| run.unwrap().path())
            .collect();
        runs.sort();
        for run in runs {
            let meta: serde_json::Value =
                serde_json::from_slice(&std::fs::read(run.join("meta.json")).unwrap()).unwrap();
            for s in meta["sqtt"].as_array().unwrap() {
                if s["itrace"] != serde_json::Value::Bool(true) {
                    continue;
                }
                let kern = s["kern"].as_u64().unwrap();
                let prefix = format!("program{kern}_");
                let elf = std::fs::read_dir(&run)
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .find(|p| {
                        let name = p.file_name().unwrap().to_string_lossy();
                        name.starts_with(&prefix) && name.ends_with(".elf")
                    })
                    .unwrap();
                // The device's target, as the profile gives it (an ELF may name none).
                let arch = run.parent().unwrap().file_name().unwrap().to_string_lossy();
                let v = &arch["gfx".len()..];
                let (major, minor, stepping) = (
                    v[..v.len() - 2].parse().unwrap(),
                    u32::from_str_radix(&v[v.len() - 2..v.len() - 1], 16).unwrap(),
                    u32::from_str_radix(&v[v.len() - 1..], 16).unwrap(),
                );
                let target = crate::target::GfxTarget::new(major, minor, stepping);
                let code = crate::isa::CodeObject::parse_with_target(
                    &std::fs::read(&elf).unwrap(),
                    Some(target),
                )
                .unwrap();
                let file = run.join(s["file"].as_str().unwrap());
                let blob = std::fs::read(&file).unwrap();
                let decode = crate::sqtt::AnalyzeOptions::default().decode;
                if !crate::sqtt::map::walks_cdna(&blob, &code, decode) {
                    out.push((file.display().to_string(), blob, code));
                }
            }
        }
        out
    }

    /// The fold without wave records ([`crate::sqtt::AnalyzeOptions::record_free`], what
    /// `stats` takes) is the fold with them: the same table, splits (each wave's index, place
    /// and count), mapping and the rest of the analysis, with the wave count, first start and
    /// occupancy sums the records give; on every instruction-traced RDNA SE of the shared
    /// captures, as they are and damaged at random (waves never ended, replaced live slots,
    /// tokens without a live wave). Where the records' fold misses, it misses too; where only
    /// it misses, its analysis gave up on what the records show (sums that do not hold).
    #[test]
    fn record_free_fold_is_the_records_fold() {
        let sources = every_traced_rdna_se();
        assert!(sources.len() >= 10, "{} traced RDNA SEs", sources.len());
        let mut next = crate::analysis::test_rng(0x5851_f42d_4c95_7f2d);
        let json = part_json;
        let se_of = |a: crate::sqtt::BlobAnalysis, m: SeMap| {
            let mut st = SeTrace::with_detail(3, true, a, &|c| c as f64, false);
            let mut disasm = HashMap::new();
            m.apply(&mut st, &mut disasm);
            let part = json(TablePart::take_se(&mut st, &disasm));
            (st, part)
        };
        let rest = |a: &crate::sqtt::BlobAnalysis| {
            serde_json::to_string(&crate::sqtt::BlobAnalysis {
                waves: Vec::new(),
                ..a.clone()
            })
            .unwrap()
        };
        // Folded both ways (with tokens); missed both ways; missed without records only.
        let mut seen = [0u32; 3];
        // Damage seen in the cases: waves never ended, replaced live slots, tokens without a
        // live wave.
        let mut damage = [0u32; 3];
        let cases = 400.max(sources.len());
        for case in 0..cases {
            let (what, blob, code) = &sources[case % sources.len()];
            let b = match case < sources.len() {
                true => blob.clone(),
                false => damaged(blob, &mut next),
            };
            let what = format!("{what} case {case}");
            let opts = crate::sqtt::AnalyzeOptions::default();
            let free_opts = crate::sqtt::AnalyzeOptions {
                record_free: true,
                ..opts
            };
            // Without the tokens kept, both miss alike (the waves' counts are not the fold's).
            if case < sources.len() {
                let bare = |record_free| crate::sqtt::AnalyzeOptions {
                    keep_tokens: false,
                    record_free,
                    ..opts
                };
                let run = |o| {
                    analyze_folded(&b, None, o, code, false, &mut |_| {})
                        .unwrap()
                        .map(|(_, m)| m.folded.is_some())
                };
                assert_eq!(run(bare(true)), run(bare(false)), "{what} without tokens");
            }
            // Every other case keeps the mapped instructions (their wave: its running index).
            let keep = case % 2 == 0;
            let Ok(rec) = analyze_folded(&b, None, opts, code, keep, &mut |_| {}) else {
                continue;
            };
            let free = analyze_folded(&b, None, free_opts, code, keep, &mut |_| {}).unwrap();
            if let Ok((a, _)) = analyze_mapped(&b, None, opts, code, false, &mut |_| {}) {
                let count = |k: &str| a.wave_anomalies.get(k).copied().unwrap_or(0);
                damage[0] += (count("start_without_end") > 0) as u32;
                damage[1] += (count("start_while_live") > 0) as u32;
                damage[2] += (count("token_without_live_wave") > 0) as u32;
            }
            let ((ra, rm), (fa, fm)) = match (rec, free) {
                (Ok(r), Ok(f)) => (r, f),
                (Err(_), Err(_)) => {
                    seen[1] += 1;
                    continue;
                }
                (Err(miss), Ok(_)) => panic!("{what}: folded without records, missed {miss:?}"),
                (Ok((ra, _)), Err(miss)) => {
                    assert_eq!(miss, Miss::RecordFree, "{what}");
                    assert!(ra.residency.is_none(), "{what}: gave up on sums that hold");
                    seen[2] += 1;
                    continue;
                }
            };
            assert!(fa.waves.is_empty() && fa.tokens.is_empty(), "{what}");
            assert_eq!(fa.wave_count(), ra.waves.len(), "{what}");
            assert_eq!(fa.first_wave_start(), ra.first_wave_start(), "{what}");
            assert_eq!(fa.residency, ra.residency, "{what}");
            assert_eq!(rest(&fa), rest(&ra), "{what}");
            let (mut got, mut want) = (
                crate::analysis::occupancy::Achieved::default(),
                crate::analysis::occupancy::Achieved::default(),
            );
            crate::analysis::occupancy::achieved_of(&mut got, 3, &fa);
            crate::analysis::occupancy::achieved_of(&mut want, 3, &ra);
            assert_eq!(got, want, "{what}");
            assert_eq!(fm.token_pc, rm.token_pc, "{what}");
            assert_eq!(fm.amd_pc, rm.amd_pc, "{what}");
            assert_eq!(fm.error, rm.error, "{what}");
            assert_eq!(fm.disasm, rm.disasm, "{what}");
            assert_eq!(fm.mapped.len(), rm.mapped.len(), "{what}");
            assert_eq!(
                format!("{:?}", fm.mapped),
                format!("{:?}", rm.mapped),
                "{what}"
            );
            assert_eq!(fm.folded.is_some(), rm.folded.is_some(), "{what}");
            let with_tokens = rm.folded.is_some();
            let ((_, fpart), (_, rpart)) = (se_of(fa, fm), se_of(ra, rm));
            assert_eq!(fpart, rpart, "{what}");
            seen[0] += with_tokens as u32;
        }
        eprintln!("{} SEs: {seen:?} damage {damage:?}", sources.len());
        assert!(seen[0] > 100 && seen[1] > 10, "{seen:?}");
        assert!(damage.iter().all(|&n| n > 0), "{damage:?}");
    }

    /// Token name ids through the direct-mapped cache are the ids of a plain search: names
    /// numbered in the order first met, tokens of one name sharing an id, over many kinds and
    /// ops of every layout (slots of the cache shared and replaced).
    #[test]
    fn name_ids_are_the_first_met_order() {
        let mut next = crate::analysis::test_rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..200 {
            let mut names = Names::default();
            let mut want: Vec<String> = Vec::new();
            let ops = 1 + next(300);
            for _ in 0..next(2000) {
                let kind = match next(4) {
                    0 => TokenKind::ValuInst,
                    1 => TokenKind::Immediate,
                    2 => TokenKind::ImmediateMask,
                    _ => TokenKind::Inst,
                };
                let op = match kind {
                    TokenKind::Inst => {
                        let layout = Layout::ALL[next(3) as usize];
                        crate::sqtt::TokenOp::new(layout, next(ops) as u32)
                    }
                    _ => crate::sqtt::TokenOp::NONE,
                };
                let t = InstToken {
                    time: 0,
                    wave: 0,
                    kind,
                    op,
                    offset: 0,
                };
                let name = token_name(&t);
                let id = match want.iter().position(|n| *n == name) {
                    Some(i) => i,
                    None => {
                        want.push(name);
                        want.len() - 1
                    }
                };
                assert_eq!(names.id(&t), id as u32, "case {case}");
            }
            assert_eq!(names.names, want, "case {case}");
        }
    }

    /// A token's row through the slot fast path is the one the full lookup gives: rows in
    /// the order first met, keyed by PC when it has disassembly, else by position and name.
    #[test]
    fn rows_are_the_first_met_keys() {
        let mut next = crate::analysis::test_rng(0x1234_5678_9abc_def1);
        for case in 0..300 {
            let (st, disasm) = random_se(&mut next);
            let mut rows = Rows::new(std::slice::from_ref(&st), &disasm);
            let mut want: Vec<(Option<u64>, usize, u32)> = Vec::new();
            for _ in 0..next(500) {
                let i = next(20) as usize;
                let kind = next(6) as u32;
                let pc = match next(5) {
                    0 => u64::MAX,
                    1 => 0x8000 + 4 * next(4),
                    _ => 0x1000 + 4 * next(10),
                };
                let key = match (pc != u64::MAX && disasm.contains_key(&pc)).then_some(pc) {
                    Some(pc) => (Some(pc), 0, 0),
                    None => (None, i, kind),
                };
                let g = match want.iter().position(|k| *k == key) {
                    Some(g) => g,
                    None => {
                        want.push(key);
                        want.len() - 1
                    }
                };
                assert_eq!(rows.row(i, kind, pc), g as u32, "case {case}");
            }
            let got: Vec<_> = rows.rows.iter().map(|r| (r.pc, r.index, r.name)).collect();
            assert_eq!(got, want, "case {case}");
        }
    }
}
