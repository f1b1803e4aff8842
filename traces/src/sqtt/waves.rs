//! Wave reconstruction and per-blob analysis: WAVESTART/WAVEEND pairing, instruction tokens
//! attributed to their wave, realtime markers, RGP userdata register writes, packet statistics.

use super::decoder::{DecodeOptions, Decoder, Packet};
use super::inst_op::{op_info_in, op_name, TokenOp};
use super::packets::{places, Bits, Kind, Layout, PacketType, Places, PlacesTable, TimeRule};
use crate::target::{Family, GfxTarget};
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasherDefault;

/// `SQ_THREAD_TRACE_USERDATA_2` / `_3`: where the runtime writes RGP marker dwords.
pub const USERDATA_2: u32 = 0xC342;
pub const USERDATA_3: u32 = 0xC343;

/// One wave, from WAVESTART to WAVEEND, on one SE. 48 bytes: a capture of real size holds
/// millions of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wave {
    /// RDNA: `wgp | sa << 3` (layout 3) or `wgp | sa << 4` (layout 4); CDNA: the CU number.
    pub cu: u16,
    pub simd: u8,
    /// Wave slot.
    pub wave: u8,
    /// CDNA shader array (`sh`); None on RDNA, where it is part of `cu`.
    pub sa: Option<u8>,
    /// The WAVESTART's `id7` (RDNA) or `count` (CDNA) field: [`Wave::id7`], [`Wave::count`].
    pub tag: WaveTag,
    /// Times of the WAVESTART and WAVEEND packets (shader cycles from the blob's start).
    pub start: i64,
    pub end: i64,
    /// Instruction tokens attributed to this wave (only waves on the traced SIMD have any).
    pub insts: u32,
    /// Nibble offset of the WAVESTART packet.
    pub start_offset: u64,
    /// Nibbles from the WAVESTART to the WAVEEND packet ([`Wave::end_offset`]); `u32::MAX`
    /// when more (beyond any one trace buffer of today's hardware). At least 1 once the wave
    /// has ended: the analyzer reads 0 as a wave still live.
    pub end_delta: u32,
}

/// The one per-layout WAVESTART field a [`Wave`] keeps: RDNA's `id7` and CDNA's `count` never
/// occur together, so they share a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WaveTag {
    #[default]
    None,
    /// RDNA: the WAVESTART `id7` field (dispatch-wide wave index as far as is known).
    Id7(u32),
    /// CDNA: the WAVESTART `count` field.
    Count(u32),
}

impl Wave {
    /// A wave as its WAVESTART makes it: live (ends where it starts until its WAVEEND).
    #[inline(always)]
    fn started(
        cu: u16,
        simd: u8,
        wave: u8,
        sa: Option<u8>,
        tag: WaveTag,
        time: i64,
        offset: u64,
    ) -> Wave {
        Wave {
            cu,
            simd,
            wave,
            sa,
            tag,
            start: time,
            end: time,
            insts: 0,
            start_offset: offset,
            end_delta: 0,
        }
    }

    /// RDNA: the WAVESTART `id7` field.
    pub fn id7(&self) -> Option<u32> {
        match self.tag {
            WaveTag::Id7(v) => Some(v),
            _ => None,
        }
    }

    /// Nibble offset of the WAVEEND packet, when its distance from the WAVESTART fits the
    /// record.
    pub fn end_offset(&self) -> Option<u64> {
        (self.end_delta != u32::MAX).then(|| self.start_offset + self.end_delta as u64)
    }

    /// CDNA: the WAVESTART `count` field.
    pub fn count(&self) -> Option<u32> {
        match self.tag {
            WaveTag::Count(v) => Some(v),
            _ => None,
        }
    }
}

/// The JSON form of a wave: `sa`, `id7` and `count` only when present (as when they were
/// separate optional fields); the offset stays out.
impl serde::Serialize for Wave {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Wave", 9)?;
        st.serialize_field("cu", &self.cu)?;
        st.serialize_field("simd", &self.simd)?;
        st.serialize_field("wave", &self.wave)?;
        match self.sa {
            Some(sa) => st.serialize_field("sa", &sa)?,
            None => st.skip_field("sa")?,
        }
        match self.tag {
            WaveTag::Id7(v) => st.serialize_field("id7", &v)?,
            _ => st.skip_field("id7")?,
        }
        match self.tag {
            WaveTag::Count(v) => st.serialize_field("count", &v)?,
            _ => st.skip_field("count")?,
        }
        st.serialize_field("start", &self.start)?;
        st.serialize_field("end", &self.end)?;
        st.serialize_field("insts", &self.insts)?;
        st.end()
    }
}

/// A realtime marker: the accumulated time of the packet and the 100 MHz GPU counter it carries
/// (low 36 bits on RDNA3, 52 bits on RDNA4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Marker {
    pub time: i64,
    pub realtime: u64,
}

/// A write to SQ_THREAD_TRACE_USERDATA_2/3 seen in the stream: one RGP marker dword.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct UserdataWrite {
    pub time: i64,
    pub reg: u32,
    pub value: u32,
}

impl UserdataWrite {
    pub fn reg_name(&self) -> &'static str {
        if self.reg == USERDATA_2 {
            "USERDATA_2"
        } else {
            "USERDATA_3"
        }
    }
}

/// What kind of instruction token a wave received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum TokenKind {
    /// INST / INST_RDNA4 / CDNA_INST with its op.
    Inst,
    ValuInst,
    Immediate,
    /// One set bit of an IMMEDIATE_MASK packet.
    ImmediateMask,
}

/// One instruction token attributed to a wave. 24 bytes: an itraced SE of real size holds
/// millions of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstToken {
    pub time: i64,
    /// Index into [`BlobAnalysis::waves`].
    pub wave: u32,
    pub kind: TokenKind,
    /// The op of INST tokens ([`TokenOp::name`]).
    pub op: TokenOp,
    /// Nibble offset of the packet.
    pub offset: u64,
}

/// Something odd in a blob, with the nibble offset where it was seen.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Warning {
    pub offset: u64,
    pub message: String,
}

/// The LAYOUT_HEADER fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct LayoutHeader {
    pub layout: u32,
    pub simd: u32,
    pub group: u32,
    pub sel_a: u32,
    pub sel_b: u32,
    pub flag4: u32,
}

/// Everything wavescope reads out of one SE blob.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct BlobAnalysis {
    pub layout: Option<Layout>,
    pub layout_header: Option<LayoutHeader>,
    pub packet_total: u64,
    pub packet_counts: BTreeMap<&'static str, u64>,
    pub decoded_nibbles: u64,
    pub blob_nibbles: u64,
    pub first_time: Option<i64>,
    pub last_time: Option<i64>,
    /// INST (not OTHER_) + VALUINST + IMMEDIATE + set bits of IMMEDIATE_MASK + CDNA_INST.
    pub instruction_packets: u64,
    pub instruction_breakdown: BTreeMap<&'static str, u64>,
    pub inst_ops: BTreeMap<String, u64>,
    pub wave_starts: u64,
    pub wave_ends: u64,
    /// Completed waves, in the order their WAVESTART was seen.
    pub waves: Vec<Wave>,
    pub wave_anomalies: BTreeMap<&'static str, u64>,
    pub markers: Vec<Marker>,
    pub userdata_writes: Vec<UserdataWrite>,
    /// CDNA absolute timestamps (count, first, last) when present.
    pub cdna_timestamps: Vec<u64>,
    /// Packets (other than padding) after the point where the reference framing stops reading.
    pub tail_packets: u32,
    /// The packet cut off by the end of the blob (offset, type), if any.
    pub cut_packet: Option<(u64, &'static str)>,
    #[serde(skip)]
    pub tokens: Vec<InstToken>,
    pub warnings: Vec<Warning>,
    /// Achieved occupancy's per-SIMD sums of `waves`, kept as they started and ended
    /// ([`super::residency`]): None when they do not hold (with records, a wave that never
    /// ended; wave events out of time order) or once `waves` is changed.
    #[serde(skip)]
    pub residency: Option<super::residency::Residency>,
    /// Analysed without wave records ([`AnalyzeOptions::record_free`]) and exact: this many
    /// waves ended (those that never did dropped, as with records), `waves` empty, `residency`
    /// their sums (when there are any). None otherwise (with records, or the analysis gave
    /// up).
    #[serde(skip)]
    pub waves_without_records: Option<usize>,
}

/// Analysis settings.
#[derive(Debug, Clone, Copy)]
pub struct AnalyzeOptions {
    pub decode: DecodeOptions,
    /// Keep every instruction token (for instruction views); counting needs none of them.
    pub keep_tokens: bool,
    /// The traced SIMD on the traced unit (`SQTT_SIMD_SEL`); the reference assumes 0.
    pub traced_simd: u8,
    /// At most this many warnings are kept (the rest are counted).
    pub max_warnings: usize,
    /// No wave records (`wavescope stats`): the live waves' start times are kept by slot and
    /// the waves counted and summed as they end ([`BlobAnalysis::waves_without_records`]),
    /// where that gives what the records would (waves that never ended, as a full trace buffer
    /// leaves them, dropped as the records drop them, but with
    /// [`AnalyzeOptions::queue_token_waves`]); a stream where it may not (a token for a live
    /// wave but with `queue_token_waves`, a wave started while its slot is live, one never
    /// ended with `queue_token_waves`, a place outside the direct table, wave times going back)
    /// gives up, and the caller analyses it again with records. For packets in stream order,
    /// as the decoder gives them.
    pub record_free: bool,
    /// With `record_free`: the waves of the places tokens go to (shader array and CU 0,
    /// [`Analyzer::token`]) keep their running index (their index in the records) in the live
    /// table, so their tokens are attributed as with records, and the starts of those that may
    /// take tokens (the traced SIMD's, [`Analyzer::takes_tokens`]) wait in a queue for a hook to
    /// take ([`Analyzer::queued_waves`]): an instruction-traced RDNA SE folded in its decode
    /// (`pipeline::analyze_folded`) without a record per wave.
    pub queue_token_waves: bool,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            decode: DecodeOptions::default(),
            keep_tokens: true,
            traced_simd: 0,
            max_warnings: 64,
            record_free: false,
            queue_token_waves: false,
        }
    }
}

/// A blob that cannot be decoded at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("SQTT blob is empty")]
    Empty,
    #[error(
        "not an SQTT stream: the first packet at nibble offset 0 is {found} (byte {byte:#04x}), \
         not a LAYOUT_HEADER"
    )]
    NoLayoutHeader { found: &'static str, byte: u8 },
    #[error("SQTT blob of {len} bytes is too short for a layout header (8 bytes)")]
    TooShort { len: usize },
}

fn expected_layout(target: GfxTarget) -> Option<Layout> {
    match target.family()? {
        Family::Rdna3 => Some(Layout::Rdna3),
        Family::Rdna4 => Some(Layout::Rdna4),
        Family::Cdna => Some(Layout::Cdna),
    }
}

/// Decode and analyse one SE blob.
///
/// `target`, when given, is checked against the blob's layout header; a mismatch is a warning
/// (the header decides how the stream is read).
pub fn analyze(blob: &[u8], target: Option<GfxTarget>) -> Result<BlobAnalysis, DecodeError> {
    analyze_with(blob, target, AnalyzeOptions::default())
}

/// Check that a blob starts like an SQTT stream.
pub fn check_header(blob: &[u8]) -> Result<(), DecodeError> {
    if blob.is_empty() {
        return Err(DecodeError::Empty);
    }
    if blob.len() < 8 {
        return Err(DecodeError::TooShort { len: blob.len() });
    }
    let ty = super::packets::RDNA3_TABLE.lookup(blob[0]);
    if ty.kind != Kind::LayoutHeader {
        return Err(DecodeError::NoLayoutHeader {
            found: ty.name,
            byte: blob[0],
        });
    }
    Ok(())
}

/// [`analyze`] with explicit options.
pub fn analyze_with(
    blob: &[u8],
    target: Option<GfxTarget>,
    opts: AnalyzeOptions,
) -> Result<BlobAnalysis, DecodeError> {
    analyze_with_progress(blob, target, opts, &mut |_| {})
}

/// How often [`analyze_with_progress`] reports: every 256 KiB of stream.
pub(crate) const PROGRESS_NIBBLES: u64 = 512 * 1024;

/// [`analyze_with`], calling `progress` with the number of bytes decoded so far about every
/// [`PROGRESS_NIBBLES`] of stream (to release memory-mapped pages, or drive a progress bar).
pub fn analyze_with_progress(
    blob: &[u8],
    target: Option<GfxTarget>,
    opts: AnalyzeOptions,
    progress: &mut dyn FnMut(usize),
) -> Result<BlobAnalysis, DecodeError> {
    // By position in the stream rather than by a count of packets: one compare per packet
    // the hook sees.
    let mut next = 0u64;
    analyze_hooked(
        blob,
        target,
        opts,
        // Owning `next`: one load per packet to reach it, not two.
        move |_, p, _, _| {
            if p.offset >= next {
                next = p.offset + PROGRESS_NIBBLES;
                progress((p.offset / 2) as usize);
            }
        },
        |_| {},
    )
}

/// [`analyze_with_progress`] with a look at every packet as it is analysed: `hook(analyzer,
/// packet, repeat, tokens before)` runs after the analyzer took the packet (so the tokens it
/// attributed are `analyzer.raw_tokens()[tokens before..]`), but for most runs of NOP padding
/// the decoder's fast path reads (about half of a stream's packets: no token, no wave; one
/// reaches the hook per [`PROGRESS_NIBBLES`] of stream at most, for progress), and
/// `before_finish` sees the
/// analyzer once the stream is done, before waves that never ended are dropped. One decode
/// for whatever else a caller folds from the same packets (the PC mapping of
/// [`crate::pipeline`]).
pub(crate) fn analyze_hooked(
    blob: &[u8],
    target: Option<GfxTarget>,
    opts: AnalyzeOptions,
    mut hook: impl FnMut(&mut Analyzer, &Packet, u32, usize),
    before_finish: impl FnOnce(&Analyzer),
) -> Result<BlobAnalysis, DecodeError> {
    check_header(blob)?;
    let mut a = Analyzer::new(opts);
    a.reserve_for(blob.len());
    let mut dec = Decoder::new(blob, opts.decode);
    dec.for_each_run_into(&mut Hooked {
        a: &mut a,
        hook: &mut hook,
        nop_due: 0,
    });
    before_finish(&a);
    let mut out = a.finish();
    out.decoded_nibbles = dec.consumed_nibbles();
    out.blob_nibbles = dec.blob_nibbles();
    out.layout = Some(dec.layout());
    if let (Some(t), Some(layout)) = (target, out.layout) {
        if let Some(exp) = expected_layout(t) {
            if exp != layout {
                out.warn(
                    0,
                    format!(
                        "the blob's layout header says {} but the target is {t} ({}): decoded as {}",
                        layout.name(),
                        exp.name(),
                        layout.name()
                    ),
                    opts.max_warnings,
                );
            }
        }
    }
    let tail = dec.tail();
    if let Some(at) = dec.desync_at() {
        out.warn(
            at,
            "a packet longer than 16 nibbles starts on a byte boundary here: the reference \
             framing skips a byte after it (tinygrad's window quirk), so what follows is misread; \
             decode with hardware framing to read it correctly"
                .into(),
            opts.max_warnings,
        );
    }
    // A last packet cut at a unit boundary is normal; any other length means the blob itself
    // was cut short.
    let aligned =
        blob.len() >= unit_header(out.layout) && unit_padding(out.layout, blob.len()) == 0;
    if !aligned {
        let (offset, detail) = match tail.cut {
            Some(cut) => (
                cut.offset,
                format!(
                    "; its last packet ({}) needs {} nibbles, {} remain",
                    cut.name, cut.needed, cut.available
                ),
            ),
            None => (out.blob_nibbles, String::new()),
        };
        out.warn(
            offset,
            format!(
                "the blob length ({} bytes) is not a whole number of 32-byte trace-buffer \
                 units: the blob is truncated{detail}",
                blob.len()
            ),
            opts.max_warnings,
        );
    }
    out.cut_packet = tail.cut.map(|c| (c.offset, c.name));
    out.tail_packets = tail.packets;
    Ok(out)
}

/// [`analyze_hooked`]'s per-packet step: the analyzer, then the hook; built into the decode
/// loop whatever the hook's size ([`super::decoder::RunSink`]).
struct Hooked<'h, H> {
    a: &'h mut Analyzer,
    hook: &'h mut H,
    /// The offset from which a NOP run goes to the hook again ([`Hooked::nops`]).
    nop_due: u64,
}

impl<H: FnMut(&mut Analyzer, &Packet, u32, usize)> super::decoder::RunSink for Hooked<'_, H> {
    #[inline(always)]
    fn run(&mut self, p: &Packet, n: u32) {
        let before = self.a.out.tokens.len();
        self.a.packet_run(p, n);
        (self.hook)(&mut *self.a, p, n, before);
    }

    /// NOPs go to the hook once per [`PROGRESS_NIBBLES`] of stream at most
    /// ([`analyze_hooked`]): no test of the packet's kind and place per run, which the mapping
    /// hook made on every packet, while a progress hook still reports (and releases the
    /// mapped pages read) inside a long run of padding.
    #[inline(always)]
    fn nops(&mut self, p: &Packet, n: u32) {
        self.a.nop_run(p, n);
        if p.offset >= self.nop_due {
            self.nop_due = p.offset + PROGRESS_NIBBLES;
            let before = self.a.out.tokens.len();
            (self.hook)(&mut *self.a, p, n, before);
        }
    }
}

impl BlobAnalysis {
    /// The waves analysed: the records, or as many counted without them.
    pub fn wave_count(&self) -> usize {
        self.waves_without_records.unwrap_or(self.waves.len())
    }

    /// The first wave's start (of the records, or counted without them).
    pub fn first_wave_start(&self) -> Option<i64> {
        match self.waves_without_records {
            Some(_) => self.residency.as_ref().map(|r| r.first_start),
            None => self.waves.first().map(|w| w.start),
        }
    }

    fn warn(&mut self, offset: u64, message: String, max: usize) {
        if self.warnings.len() < max {
            self.warnings.push(Warning { offset, message });
        }
    }

    /// Shader clock estimate from the first and last marker (Hz), like tinygrad's viz.
    pub fn shader_clock_hz_estimate(&self) -> Option<f64> {
        let (a, b) = (self.markers.first()?, self.markers.last()?);
        let ticks = b.realtime.checked_sub(a.realtime)?;
        if ticks == 0 {
            return None;
        }
        Some((b.time - a.time) as f64 * 1e9 / (ticks as f64 * 10.0))
    }
}

/// A [`Packet`]'s `nibbles`, `index` and `layout` in one argument ([`Analyzer::detail_of`]).
#[inline(always)]
fn small_fields(p: &Packet) -> u32 {
    p.nibbles as u32 | (p.index as u32) << 8 | (p.layout as u32) << 16
}

/// The packet of [`Analyzer::detail_of`]'s arguments.
#[inline(always)]
fn packet_of(offset: u64, time: i64, raw: u64, ty: &'static PacketType, small: u32) -> Packet {
    Packet {
        offset,
        time,
        raw,
        ty,
        nibbles: small as u8,
        index: (small >> 8) as u8,
        layout: Layout::ALL[(small >> 16) as usize % 3],
    }
}

/// Incremental analysis, one packet at a time.
pub struct Analyzer {
    opts: AnalyzeOptions,
    out: BlobAnalysis,
    /// Live waves: key -> index in `out.waves` (waves are pushed at WAVESTART).
    live: LiveWaves,
    /// Where each packet type's fields sit ([`places`]), and its wave fields ([`wave_bits`]).
    places: &'static PlacesTable,
    wave_bits: &'static WaveBitsTable,
    /// [`wave_fast`] for the stream's layout (with the shader array on CDNA).
    wave_fast: &'static WaveFastTable,
    layout: Layout,
    first_packet: bool,
    /// What [`Analyzer::packet_run`] does with each kind, by `Kind as usize` (all are
    /// numbered below 32: `packets` tests it): [`Step::First`] until the first packet is in,
    /// then [`STEPS`].
    steps: [Step; 32],
    /// Waves in `out.waves` that have ended ([`Analyzer::has_ended`]).
    ended_waves: usize,
    unknown_op_warned: bool,
    /// Packets by layout and type index, and INST ops by layout and value (named at the end).
    counts: [[u64; 32]; 3],
    op_counts: [[u64; 256]; 3],
    /// `instruction_breakdown` and `wave_anomalies` by [`BREAKDOWN`] and [`ANOMALIES`] index
    /// (named at the end: no map lookup per packet).
    breakdown: [u64; BREAKDOWN.len()],
    anomalies: [u64; ANOMALIES.len()],
    last_time: i64,
    /// The blob's size when known ([`Analyzer::reserve_for`]), to reserve the token list.
    blob_bytes: usize,
    /// Achieved occupancy's sums as waves start and end.
    residency: super::residency::ResidencySweep,
    /// The live waves without records ([`AnalyzeOptions::record_free`]).
    free: LiveStarts,
    /// The waves that may take tokens ([`Analyzer::takes_tokens`]) started and not yet taken
    /// ([`AnalyzeOptions::queue_token_waves`]).
    queued: Vec<QueuedWave>,
    /// Tokens attributed to a live wave (each wave's `insts`, summed).
    attributed: u64,
}

/// A wave of a token place started without a record ([`AnalyzeOptions::queue_token_waves`]):
/// what the fold reads of its record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct QueuedWave {
    /// Its index in the records (its tokens' `wave`).
    pub index: u32,
    pub cu: u16,
    pub simd: u8,
    pub wave: u8,
    pub start: i64,
}

/// The direct [`LiveWaves`] slots below this are the token places (shader array and CU 0).
const TOKEN_SLOTS: usize = 1 << 7;

/// The packet kinds [`Analyzer::detail`] looks at, as a bit set by `Kind as u32` (a kind
/// added to its `match` must be added here).
const DETAIL: u32 = {
    let kinds = [
        Kind::LayoutHeader,
        Kind::WaveStart,
        Kind::WaveEnd,
        Kind::Inst,
        Kind::ValuInst,
        Kind::Immediate,
        Kind::ImmediateMask,
        Kind::DeltaOrMarker,
        Kind::Reg,
        Kind::CdnaTimestamp,
    ];
    let mut bits = 0u32;
    let mut i = 0;
    while i < kinds.len() {
        bits |= 1 << kinds[i] as u32;
        i += 1;
    }
    bits
};
// A kind numbered 32 or more cannot be listed (the shift above fails to compile, and [`STEPS`]
// has no place for it) and reads as not listed (`steps.get`), so adding kinds cannot wrap.

/// What [`Analyzer::packet_run`] does with a packet of a kind.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Step {
    /// Nothing beyond its count.
    Skip,
    /// The stream's first packet ([`Analyzer::first`]), whatever its kind.
    First,
    WaveStart,
    WaveEnd,
    /// [`Step::WaveStart`] and [`Step::WaveEnd`] without records
    /// ([`AnalyzeOptions::record_free`]).
    WaveStartFree,
    WaveEndFree,
    /// [`Analyzer::detail`] when it writes an RGP marker dword.
    Reg,
    /// [`Analyzer::detail`] when it carries a realtime marker.
    Marker,
    /// [`Analyzer::detail`].
    Detail,
}

/// The [`Step`] of each kind once the first packet is in: the kinds of [`DETAIL`].
const STEPS: [Step; 32] = {
    let mut steps = [Step::Skip; 32];
    let mut k = 0;
    while k < 32 {
        if DETAIL >> k & 1 == 1 {
            steps[k] = Step::Detail;
        }
        k += 1;
    }
    steps[Kind::WaveStart as usize] = Step::WaveStart;
    steps[Kind::WaveEnd as usize] = Step::WaveEnd;
    steps[Kind::Reg as usize] = Step::Reg;
    steps[Kind::DeltaOrMarker as usize] = Step::Marker;
    steps
};

/// [`STEPS`] without wave records ([`AnalyzeOptions::record_free`]).
const STEPS_FREE: [Step; 32] = {
    let mut steps = STEPS;
    steps[Kind::WaveStart as usize] = Step::WaveStartFree;
    steps[Kind::WaveEnd as usize] = Step::WaveEndFree;
    steps
};

/// The keys of [`BlobAnalysis::instruction_breakdown`], by [`Analyzer`] counter index.
const BREAKDOWN: [&str; 7] = [
    "cdna_inst",
    "inst_other_simd",
    "inst",
    "valuinst",
    "immediate",
    "immediate_mask_packets",
    "immediate_mask_bits",
];
const CDNA_INST: usize = 0;
const INST_OTHER_SIMD: usize = 1;
const INST: usize = 2;
const VALUINST: usize = 3;
const IMMEDIATE: usize = 4;
const MASK_PACKETS: usize = 5;
const MASK_BITS: usize = 6;

/// The keys of [`BlobAnalysis::wave_anomalies`] counted per packet, by [`Analyzer`] counter
/// index (`start_without_end` is counted at the end).
const ANOMALIES: [&str; 3] = [
    "start_while_live",
    "end_without_start",
    "token_without_live_wave",
];
const START_WHILE_LIVE: usize = 0;
const END_WITHOUT_START: usize = 1;
const TOKEN_WITHOUT_LIVE_WAVE: usize = 2;

/// The live-wave table's hash: keys are small packed integers, looked up per WAVESTART,
/// WAVEEND and token, so a multiply-and-fold (no SipHash) is enough. Only lookups use it.
#[derive(Default)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u32(b as u32 ^ (self.0 as u32).rotate_left(8));
        }
    }

    #[inline]
    fn write_u32(&mut self, v: u32) {
        let m = (v as u64 ^ self.0).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = m ^ (m >> 29);
    }
}

/// Live waves by packed key: a direct table for the places real layouts have (shader array
/// < 4, CU/WGP < 256, SIMD < 4, slot < 32: 512 KiB, touched only where used), a hash map for
/// any other key a damaged stream may carry. Same answers as one map.
#[derive(Default)]
struct LiveWaves {
    /// Wave index + 1 per direct key; 0: none. Allocated at the first insert.
    direct: Vec<u32>,
    other: HashMap<u32, usize, BuildHasherDefault<KeyHasher>>,
}

impl LiveWaves {
    const DIRECT: usize = 1 << 17;

    /// The direct slot of a packed [`key`], if it has one (and the index fits).
    #[inline]
    fn slot(k: u32) -> Option<usize> {
        let (sa, cu, simd, wave) = (k >> 28, (k >> 12) & 0xffff, (k >> 8) & 0xf, k & 0xff);
        (sa < 4 && cu < 256 && simd < 4 && wave < 32)
            .then_some((sa << 15 | cu << 7 | simd << 5 | wave) as usize)
    }

    #[inline]
    fn get(&self, k: u32) -> Option<usize> {
        match Self::slot(k) {
            Some(s) => match self.direct.get(s).copied().unwrap_or(0) {
                0 => None,
                v => Some(v as usize - 1),
            },
            None => self.other.get(&k).copied(),
        }
    }

    /// Sets `k` to wave `i`, returning the wave it replaced.
    #[inline(always)]
    fn insert(&mut self, k: u32, i: usize) -> Option<usize> {
        // The usual case: a direct key, the table allocated and nothing in the map.
        if let (Some(s), Ok(v), false, true) = (
            Self::slot(k),
            u32::try_from(i + 1),
            self.direct.is_empty(),
            self.other.is_empty(),
        ) {
            if let Some(d) = self.direct.get_mut(s) {
                let old = std::mem::replace(d, v);
                return (old != 0).then(|| old as usize - 1);
            }
        }
        self.insert_slow(k, i)
    }

    #[cold]
    #[inline(never)]
    fn insert_slow(&mut self, k: u32, i: usize) -> Option<usize> {
        match (Self::slot(k), u32::try_from(i + 1)) {
            (Some(s), Ok(v)) => {
                if self.direct.is_empty() {
                    self.direct = vec![0; Self::DIRECT];
                }
                let old = std::mem::replace(&mut self.direct[s], v);
                // A key may have moved here from the map when an index overflowed u32.
                let spilled = match self.other.is_empty() {
                    true => None,
                    false => self.other.remove(&k),
                };
                (old != 0).then(|| old as usize - 1).or(spilled)
            }
            (Some(s), Err(_)) => {
                let old = self.direct.get_mut(s).map_or(0, std::mem::take);
                let prev = self.other.insert(k, i);
                (old != 0).then(|| old as usize - 1).or(prev)
            }
            (None, _) => self.other.insert(k, i),
        }
    }

    /// The packed [`key`] of a direct slot (the inverse of [`LiveWaves::slot`]).
    #[inline]
    fn key_of_slot(s: usize) -> u32 {
        let (sa, cu, simd, wave) = slot_place(s);
        key(sa, cu, simd, wave)
    }

    /// [`LiveWaves::insert`] for a key given by its direct slot ([`SlotBits`]).
    #[inline(always)]
    fn insert_direct(&mut self, s: usize, i: usize) -> Option<usize> {
        if let (Ok(v), true) = (u32::try_from(i + 1), self.other.is_empty()) {
            if let Some(d) = self.direct.get_mut(s) {
                let old = std::mem::replace(d, v);
                return (old != 0).then(|| old as usize - 1);
            }
        }
        self.insert_slow(Self::key_of_slot(s), i)
    }

    /// [`LiveWaves::remove`] for a key given by its direct slot ([`SlotBits`]).
    #[inline(always)]
    fn remove_direct(&mut self, s: usize) -> Option<usize> {
        match self.direct.get_mut(s).map_or(0, std::mem::take) {
            0 if self.other.is_empty() => None,
            0 => self.other.remove(&Self::key_of_slot(s)),
            v => Some(v as usize - 1),
        }
    }

    #[inline]
    fn remove(&mut self, k: u32) -> Option<usize> {
        match Self::slot(k) {
            Some(s) => match self.direct.get_mut(s).map_or(0, std::mem::take) {
                0 if self.other.is_empty() => None,
                0 => self.other.remove(&k),
                v => Some(v as usize - 1),
            },
            None => self.other.remove(&k),
        }
    }
}

/// The live waves of an analysis without wave records ([`AnalyzeOptions::record_free`]): each
/// direct slot's live wave by its start time and offset (its place is the slot's), and the
/// counts the records would give.
#[derive(Default)]
struct LiveStarts {
    /// Per direct slot ([`LiveWaves::slot`]): the live wave's start with its sign bit flipped
    /// ([`LiveStarts::code`]), 0 for none, and its WAVESTART's offset (the warning for waves
    /// that never ended names the first's; in the same cache line). Allocated (zeroed pages,
    /// touched only where used) at the first start.
    starts: Vec<[u64; 2]>,
    // (The waves started and ended are the analysis' WAVESTARTs, unless it gave up, and
    // WAVEENDs but those without a start; the first start is the sums': [`Analyzer::finish_free`].)
    /// Set once the stream holds something only records give exactly.
    gave_up: bool,
}

impl LiveStarts {
    /// A start time as the table holds it: never 0 but for `i64::MIN` (which gives up).
    #[inline(always)]
    fn code(time: i64) -> u64 {
        time as u64 ^ 1 << 63
    }

    #[inline(always)]
    fn time(code: u64) -> i64 {
        (code ^ 1 << 63) as i64
    }

    /// Whether a wave is live in direct slot `s`.
    fn is_live(&self, s: usize) -> bool {
        self.starts.get(s).is_some_and(|c| c[0] != 0)
    }

    /// A direct table with every slot free: the one the last exact analysis on this thread
    /// handed back ([`LiveStarts::hand_back`]), else a fresh one. A fresh zeroed 2 MiB, once
    /// the heap reuses the memory of the last SE's, is cleared and faulted in page by page
    /// for every SE (a fifth of the page faults of `stats` at 10 MiB).
    fn free_table() -> Vec<[u64; 2]> {
        let spare = SPARE_STARTS.with(|s| std::mem::take(&mut *s.borrow_mut()));
        match spare.len() == LiveWaves::DIRECT {
            true => spare,
            false => vec![[0; 2]; LiveWaves::DIRECT],
        }
    }

    /// Keeps the table for the next analysis on this thread. Only for a table with every slot
    /// free (no start code; offsets may stay, they are read only beside a code).
    fn hand_back(&mut self) {
        let table = std::mem::take(&mut self.starts);
        if table.len() == LiveWaves::DIRECT {
            SPARE_STARTS.with(|s| *s.borrow_mut() = table);
        }
    }
}

thread_local! {
    /// [`LiveStarts::free_table`]'s table, between the SEs a thread analyses.
    static SPARE_STARTS: std::cell::RefCell<Vec<[u64; 2]>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The (sa, cu, simd, wave) of a direct [`LiveWaves`] slot ([`LiveWaves::slot`]'s layout).
#[inline(always)]
fn slot_place(s: usize) -> (u8, u16, u8, u8) {
    let s = s as u32;
    (
        (s >> 15) as u8,
        (s >> 7) as u16 & 0xff,
        (s >> 5) as u8 & 3,
        s as u8 & 31,
    )
}

fn key(sa: u8, cu: u16, simd: u8, wave: u8) -> u32 {
    (sa as u32) << 28 | (cu as u32) << 12 | (simd as u32) << 8 | wave as u32
}

/// The fields a WAVESTART or WAVEEND is read by, per layout and type index, from the
/// [`Places`] table: the analyzer reads them on millions of wave packets per SE, so each is
/// one shift and mask with no choice of layout or field left to make per packet.
#[derive(Clone, Copy, Default)]
struct WaveBits {
    simd: Bits,
    wave: Bits,
    /// The shader array field (CDNA `sh`, RDNA `sa`), a wave's `sa` on CDNA streams only.
    sa: Bits,
    /// `cu` is `unit | unit_hi << hi_shift`: CDNA `cu` (and no `unit_hi`), RDNA `wgp` and the
    /// SA bit just above it ([`Places::cu`]).
    unit: Bits,
    unit_hi: Bits,
    hi_shift: u8,
    /// WAVESTART: RDNA `id7` or CDNA `count` ([`WaveTag`]), which `tag_kind` says (0: none).
    tag: Bits,
    tag_kind: u8,
}

/// What WAVESTART and WAVEEND read of a type on their usual path, for streams read without or
/// with the shader array (CDNA streams, as [`Analyzer::wave_id`]): the live table's slot and
/// the tag, together in one small entry.
#[derive(Clone, Copy, Default)]
struct WaveFast {
    slot: SlotBits,
    tag: Bits,
    tag_kind: u8,
    /// Whether the slot holds the shader array (the record keeps it then).
    with_sa: bool,
}

impl WaveFast {
    fn of(wb: &WaveBits, with_sa: bool) -> WaveFast {
        WaveFast {
            slot: SlotBits::of(wb, with_sa),
            tag: wb.tag,
            tag_kind: wb.tag_kind,
            with_sa,
        }
    }

    /// [`WaveBits::tag`].
    #[inline(always)]
    fn tag(&self, raw: u64) -> WaveTag {
        wave_tag(self.tag, self.tag_kind, raw)
    }
}

type WaveFastTable = [[WaveFast; 32]; 3];

/// The [`WaveFast`] entries of every packet type, built once, for streams read without or
/// with the shader array.
fn wave_fast(with_sa: bool) -> &'static WaveFastTable {
    static T: std::sync::LazyLock<[WaveFastTable; 2]> = std::sync::LazyLock::new(|| {
        let mut t = [[[WaveFast::default(); 32]; 3]; 2];
        for (sa, t) in t.iter_mut().enumerate() {
            for layout in Layout::ALL {
                for (i, wb) in wave_bits()[layout as usize].iter().enumerate() {
                    t[layout as usize][i] = WaveFast::of(wb, sa == 1);
                }
            }
        }
        t
    });
    &T[with_sa as usize]
}

/// A wave packet's direct [`LiveWaves`] slot read straight from its first 64 bits: each of
/// the place's fields rotated to where the slot wants it and masked, fields that move by the
/// same amount in one step. Derived from the type's [`WaveBits`] (so from the packet tables),
/// for types whose every field value has a direct slot; the others take the general path
/// (`direct` false).
#[derive(Clone, Copy, Default)]
struct SlotBits {
    rot: [u8; 4],
    mask: [u32; 4],
    direct: bool,
}

impl SlotBits {
    /// The slot layout of [`LiveWaves::slot`]: `sa << 15 | cu << 7 | simd << 5 | wave`, with
    /// `cu = unit | unit_hi << hi_shift` ([`WaveBits::cu`]).
    fn of(wb: &WaveBits, with_sa: bool) -> SlotBits {
        // (field, its place in the slot, the widest it may be for the slot to be direct)
        let mut parts = vec![
            (wb.wave, 0u32, 5u32),
            (wb.simd, 5, 2),
            (wb.unit, 7, 8),
            (
                wb.unit_hi,
                7 + wb.hi_shift as u32,
                8u32.saturating_sub(wb.hi_shift as u32),
            ),
        ];
        if with_sa {
            parts.push((wb.sa, 15, 2));
        }
        let mut out = SlotBits {
            direct: true,
            ..Default::default()
        };
        let mut used = 0;
        for (bits, at, widest) in parts {
            if !bits.present() {
                continue;
            }
            let width = 64 - bits.mask.leading_zeros();
            // A field's mask is its low `width` bits, within the packet's 64.
            let contiguous = bits.mask == u64::MAX >> (64 - width);
            if !contiguous || width > widest || bits.lo as u32 + width > 64 {
                out.direct = false;
                continue;
            }
            let rot = ((bits.lo as u32).wrapping_sub(at) & 63) as u8;
            let mask = (bits.mask as u32) << at;
            match out.rot[..used].iter().position(|&r| r == rot) {
                Some(j) => out.mask[j] |= mask,
                None if used < 4 => {
                    (out.rot[used], out.mask[used]) = (rot, mask);
                    used += 1;
                }
                None => out.direct = false,
            }
        }
        out
    }

    /// The direct slot of a packet whose type is `direct`.
    #[inline(always)]
    fn get(&self, raw: u64) -> usize {
        let mut s = 0u64;
        for j in 0..4 {
            s |= raw.rotate_right(self.rot[j] as u32) & self.mask[j] as u64;
        }
        s as usize
    }
}

impl WaveBits {
    fn of(layout: Layout, pl: &Places) -> WaveBits {
        let (unit, unit_hi, hi_shift) = match layout {
            Layout::Cdna => (pl.cu, Default::default(), 0),
            _ => (pl.wgp, pl.sa, pl.sa_shift),
        };
        let (tag, tag_kind) = if pl.index.present() {
            (pl.index, 1)
        } else if pl.count.present() {
            (pl.count, 2)
        } else {
            (Default::default(), 0)
        };
        WaveBits {
            simd: pl.simd,
            wave: pl.wave,
            sa: pl.sa,
            unit,
            unit_hi,
            hi_shift,
            tag,
            tag_kind,
        }
    }

    /// The compute unit, as [`Places::cu`] reads it.
    #[inline(always)]
    fn cu(&self, raw: u64) -> u16 {
        self.unit.get(raw) as u16 | (self.unit_hi.get(raw) as u16) << self.hi_shift
    }

    #[inline(always)]
    fn tag(&self, raw: u64) -> WaveTag {
        wave_tag(self.tag, self.tag_kind, raw)
    }
}

/// A WAVESTART's [`WaveTag`]: the `tag` field read as `kind` says (1: `id7`, 2: `count`,
/// else none).
#[inline(always)]
fn wave_tag(tag: Bits, kind: u8, raw: u64) -> WaveTag {
    let v = tag.get(raw) as u32;
    match kind {
        1 => WaveTag::Id7(v),
        2 => WaveTag::Count(v),
        _ => WaveTag::None,
    }
}

type WaveBitsTable = [[WaveBits; 32]; 3];

/// The [`WaveBits`] of every packet type, built once.
fn wave_bits() -> &'static WaveBitsTable {
    static T: std::sync::LazyLock<WaveBitsTable> = std::sync::LazyLock::new(|| {
        let mut t = [[WaveBits::default(); 32]; 3];
        for layout in Layout::ALL {
            for (i, pl) in places()[layout as usize].iter().enumerate() {
                t[layout as usize][i] = WaveBits::of(layout, pl);
            }
        }
        t
    });
    &T
}

thread_local! {
    /// Wave and token lists handed back by [`recycle`], for the next blob analysed on this
    /// thread.
    static SPARE: std::cell::RefCell<(Vec<Wave>, Vec<InstToken>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Hands the wave and token lists of an analysis its caller has finished with (folded into
/// counters, written out) back for the next blob this thread analyses: a big blob's lists are
/// tens of MiB, and new ones are fresh pages the kernel must fault in and zero again, most of
/// the system time of a large capture's `stats` otherwise.
pub fn recycle(mut waves: Vec<Wave>, mut tokens: Vec<InstToken>) {
    waves.clear();
    tokens.clear();
    SPARE.with(|s| {
        let mut s = s.borrow_mut();
        if waves.capacity() > s.0.capacity() {
            s.0 = waves;
        }
        if tokens.capacity() > s.1.capacity() {
            s.1 = tokens;
        }
    });
}

/// The bytes before a blob's first trace-buffer unit: gfx9 blobs carry an extra 8-byte
/// header.
fn unit_header(layout: Option<Layout>) -> usize {
    match layout {
        Some(Layout::Cdna) => 8,
        _ => 0,
    }
}

/// The bytes that fill a blob of `len` bytes up to a whole number of the 32-byte units the
/// hardware writes its trace buffer in (after [`unit_header`]): 0 for a whole blob.
pub(crate) fn unit_padding(layout: Option<Layout>, len: usize) -> usize {
    (32 - len.saturating_sub(unit_header(layout)) % 32) % 32
}

/// An estimate of the instruction tokens left in a blob of `blob_bytes` from nibble `offset`
/// on, a little above what itraced streams hold (a token per ~24 bytes: one below that grows
/// the list by copying it, faulting its pages twice), what the token list and the
/// lists that follow it ([`crate::pipeline`]'s PCs) reserve at their first token.
pub(crate) fn tokens_left_estimate(blob_bytes: usize, offset: u64) -> usize {
    blob_bytes.saturating_sub((offset / 2) as usize) / 20
}

/// Drops this thread's spare token list ([`recycle`]) once no more instruction-traced blob
/// will come to it.
pub fn drop_spare_tokens() {
    SPARE.with(|s| s.borrow_mut().1 = Vec::new());
}

impl Analyzer {
    pub fn new(opts: AnalyzeOptions) -> Self {
        // The tokens' list is taken at the first token: most SEs have none. Without records,
        // the spare list stays for the next SE that keeps them.
        let waves = match opts.record_free {
            true => Vec::new(),
            false => SPARE.with(|s| std::mem::take(&mut s.borrow_mut().0)),
        };
        let mut residency = super::residency::ResidencySweep::default();
        // Without records, waves that never ended are dropped from the sums at the end.
        if opts.record_free {
            residency.keep_raises();
        }
        Analyzer {
            opts,
            out: BlobAnalysis {
                waves,
                ..Default::default()
            },
            live: LiveWaves::default(),
            places: places(),
            wave_bits: wave_bits(),
            wave_fast: wave_fast(false),
            layout: Layout::Rdna3,
            first_packet: true,
            steps: [Step::First; 32],
            ended_waves: 0,
            unknown_op_warned: false,
            counts: [[0; 32]; 3],
            op_counts: [[0; 256]; 3],
            breakdown: [0; BREAKDOWN.len()],
            anomalies: [0; ANOMALIES.len()],
            last_time: 0,
            blob_bytes: 0,
            residency,
            free: LiveStarts::default(),
            queued: Vec::new(),
            attributed: 0,
        }
    }

    fn warn(&mut self, offset: u64, message: String) {
        let max = self.opts.max_warnings;
        self.out.warn(offset, message, max);
    }

    /// Reserve the wave records for a blob of `bytes` (an estimate a little above what real
    /// streams hold: a wave per 35-40 bytes). Growing a vector by doubling copies it while it is small enough
    /// for the heap, faulting its pages twice; the estimate skips most of that. It is low
    /// only for streams dense in waves: one of NOPs, or an itraced SE (a few waves, many bytes
    /// of tokens), reserves address space it never touches while decoding, which
    /// [`Analyzer::finish`] gives back.
    pub fn reserve_for(&mut self, bytes: usize) {
        self.blob_bytes = bytes;
        if !self.opts.record_free {
            self.out.waves.reserve(bytes / 32);
        }
    }

    /// The token list is full: on the first token, reserve for the rest of the blob
    /// ([`tokens_left_estimate`]), then double.
    #[cold]
    #[inline(never)]
    fn grow_tokens(&mut self, offset: u64) {
        let t = &mut self.out.tokens;
        if t.capacity() == 0 {
            *t = SPARE.with(|s| std::mem::take(&mut s.borrow_mut().1));
            if t.capacity() > 0 {
                return;
            }
        }
        let want = if t.is_empty() {
            tokens_left_estimate(self.blob_bytes, offset)
        } else {
            0
        };
        t.reserve(want.max(t.len()).max(16));
    }

    /// A warning made only when it happens: the formatting stays out of the per-packet code.
    #[cold]
    #[inline(never)]
    fn warn_with(&mut self, offset: u64, message: impl FnOnce() -> String) {
        self.warn(offset, message());
    }

    /// Where `p`'s fields sit.
    #[inline(always)]
    fn places_of(&self, p: &Packet) -> &'static Places {
        let t: &'static PlacesTable = self.places;
        &t[p.layout as usize][p.index as usize & 31]
    }

    /// The (sa, cu, simd, wave) of a wave packet.
    #[inline(always)]
    fn wave_id(&self, raw: u64, wb: &WaveBits) -> (u8, u16, u8, u8) {
        let simd = wb.simd.get(raw) as u8;
        let wave = wb.wave.get(raw) as u8;
        // On RDNA the SA bit is part of `cu`.
        let sh = if self.layout == Layout::Cdna {
            wb.sa.get(raw) as u8
        } else {
            0
        };
        (sh, wb.cu(raw), simd, wave)
    }

    /// Attribute an instruction token of the packet at `offset`, at `time`, to the live wave
    /// in `slot` on the traced unit.
    #[inline(always)]
    fn token(&mut self, offset: u64, time: i64, simd: u8, slot: u8, kind: TokenKind, op: TokenOp) {
        let k = key(0, 0, simd, slot);
        match self.live.get(k) {
            Some(i) => {
                if let Some(w) = self.out.waves.get_mut(i) {
                    w.insts += 1;
                }
                self.attributed += 1;
                if self.opts.keep_tokens {
                    if self.out.tokens.len() == self.out.tokens.capacity() {
                        self.grow_tokens(offset);
                    }
                    self.out.tokens.push(InstToken {
                        time,
                        wave: i as u32,
                        kind,
                        op,
                        offset,
                    });
                }
            }
            None => self.token_without_live_wave(simd, slot),
        }
    }

    /// An INST, VALUINST or IMMEDIATE packet (of `kind`, its fields at `pl`): counted, and
    /// its token attributed ([`Analyzer::token`]).
    #[inline(always)]
    fn token_packet(&mut self, offset: u64, time: i64, raw: u64, kind: Kind, pl: &Places) {
        match kind {
            Kind::Inst => {
                let op = pl.op.get(raw) as u32;
                let mut spare = None;
                let info = op_info_in(self.layout, op, &mut spare);
                if let Some(c) = self.op_counts[self.layout as usize].get_mut(op as usize) {
                    *c += 1;
                }
                if !info.known && !self.unknown_op_warned {
                    self.unknown_op_warned = true;
                    self.warn_with(offset, || {
                        format!("instruction token with unknown op {op:#x}")
                    });
                }
                // CDNA tokens name their SIMD; RDNA's are the traced SIMD's, but for the
                // INSTs of another SIMD (counted, no token).
                let simd = if self.layout == Layout::Cdna {
                    self.breakdown[CDNA_INST] += 1;
                    Some(pl.simd.get(raw) as u8)
                } else if info.other_simd {
                    self.breakdown[INST_OTHER_SIMD] += 1;
                    None
                } else {
                    self.breakdown[INST] += 1;
                    Some(self.opts.traced_simd)
                };
                if let Some(simd) = simd {
                    self.out.instruction_packets += 1;
                    let slot = pl.wave.get(raw) as u8;
                    let op = TokenOp::new(self.layout, op);
                    self.token(offset, time, simd, slot, TokenKind::Inst, op);
                }
            }
            Kind::ValuInst | Kind::Immediate => {
                let (counter, kind) = if kind == Kind::ValuInst {
                    (VALUINST, TokenKind::ValuInst)
                } else {
                    (IMMEDIATE, TokenKind::Immediate)
                };
                self.breakdown[counter] += 1;
                self.out.instruction_packets += 1;
                let slot = pl.wave.get(raw) as u8;
                let simd = self.opts.traced_simd;
                self.token(offset, time, simd, slot, kind, TokenOp::NONE);
            }
            _ => {}
        }
    }

    /// A token with no live wave record: counted, unless a wave without a record is live in
    /// its slot ([`AnalyzeOptions::record_free`], which gives up then).
    #[cold]
    #[inline(never)]
    fn token_without_live_wave(&mut self, simd: u8, slot: u8) {
        if self.opts.record_free {
            // A key without a direct slot has no live wave: its start gave up.
            if LiveWaves::slot(key(0, 0, simd, slot)).is_some_and(|s| self.free.is_live(s)) {
                self.free.gave_up = true;
                return;
            }
        }
        self.anomalies[TOKEN_WITHOUT_LIVE_WAVE] += 1;
    }

    /// Tokens attributed so far, before [`Analyzer::finish`] drops those of waves that never
    /// ended.
    pub(crate) fn raw_tokens(&self) -> &[InstToken] {
        &self.out.tokens
    }

    /// Waves started so far (indices of tokens and WAVESTARTs before [`Analyzer::finish`]):
    /// records, or without them every WAVESTART (each pushes a record with them).
    pub(crate) fn raw_waves(&self) -> usize {
        match self.opts.record_free {
            true => self.out.wave_starts as usize,
            false => self.out.waves.len(),
        }
    }

    /// The waves that may take tokens ([`Analyzer::takes_tokens`]) started since
    /// [`Analyzer::clear_queued`], in start order ([`AnalyzeOptions::queue_token_waves`]).
    pub(crate) fn queued_waves(&self) -> &[QueuedWave] {
        &self.queued
    }

    pub(crate) fn clear_queued(&mut self) {
        self.queued.clear();
    }

    /// Tokens attributed to a live wave so far (the sum of the records' `insts`, with or
    /// without records).
    pub(crate) fn attributed_tokens(&self) -> u64 {
        self.attributed
    }

    /// The record of raw wave `i` (its index in tokens before [`Analyzer::finish`]).
    pub(crate) fn raw_wave(&self, i: usize) -> Option<&Wave> {
        self.out.waves.get(i)
    }

    /// Whether a wave can be given tokens: [`Analyzer::token`] attributes them to the live
    /// wave of the traced SIMD at its slot, on shader array and CU 0 only.
    pub(crate) fn takes_tokens(&self, w: &Wave) -> bool {
        w.cu == 0 && w.sa.unwrap_or(0) == 0 && w.simd == self.opts.traced_simd
    }

    /// For a hook that folds each packet's tokens as they come and drops them
    /// ([`Analyzer::clear_tokens`]): room for one packet's tokens, so the list never takes
    /// the spare list ([`recycle`]) nor reserves for the whole blob.
    pub(crate) fn stream_tokens(&mut self) {
        if self.out.tokens.capacity() < 64 {
            self.out.tokens.reserve_exact(64);
        }
    }

    /// Drops the tokens attributed so far (their waves keep their counts, `Wave::insts`).
    #[inline(always)]
    pub(crate) fn clear_tokens(&mut self) {
        self.out.tokens.clear();
    }

    /// Whether every wave started so far has ended (the usual case: no record is read).
    pub(crate) fn all_ended(&self) -> bool {
        self.ended_waves == self.out.waves.len()
    }

    /// Whether each started wave has ended.
    pub(crate) fn ended(&self) -> Vec<bool> {
        self.out.waves.iter().map(Self::has_ended).collect()
    }

    /// Whether a wave in `out.waves` has seen its WAVEEND: a live wave's `end_delta` is 0, an
    /// ended one's at least 1 (its WAVEEND comes after its WAVESTART in the stream), so the
    /// record says it and no second list is written per wave.
    #[inline]
    fn has_ended(w: &Wave) -> bool {
        w.end_delta != 0
    }

    /// Account for one packet.
    pub fn packet(&mut self, p: &Packet) {
        self.packet_run(p, 1)
    }

    /// Account for a packet repeated `n` times (NOP runs from [`Decoder::for_each_run`]).
    #[inline(always)]
    pub fn packet_run(&mut self, p: &Packet, n: u32) {
        // A table holds at most 32 types (`packets` tests it).
        self.counts[p.layout as usize][p.index as usize & 31] += n as u64;
        self.last_time = p.time;
        // Only the kinds `detail` reads (and the first packet, whatever it is) go on: one
        // look-up of the kind's step.
        let step = self.steps.get(p.ty.kind as usize).copied();
        // Register writes other than the RGP marker dwords (most of them) and time deltas
        // that carry no realtime marker (most TS_DELTA_OR_MARK) stop here: `detail` would do
        // nothing with them, and a call per packet would cost more than the test.
        let keep = match step.unwrap_or(Step::Skip) {
            Step::Skip => false,
            // The most frequent kinds `detail` takes, handled here: no call per wave. Calls
            // take the packet's fields, not the packet (see `detail_of`).
            Step::WaveStart => {
                return self.wave_start_at(p.raw, p.time, p.offset, p.layout, p.index)
            }
            Step::WaveEnd => return self.wave_end_at(p.raw, p.time, p.offset, p.layout, p.index),
            Step::WaveStartFree => {
                return self.wave_start_free(p.raw, p.time, p.offset, p.layout, p.index)
            }
            Step::WaveEndFree => return self.wave_end_free(p.raw, p.time, p.layout, p.index),
            Step::Reg => {
                let addr = self.places_of(p).reg_addr.get(p.raw) as u32;
                addr == USERDATA_2 || addr == USERDATA_3
            }
            Step::Marker => {
                p.ty.time == TimeRule::DeltaOrMarker && self.places_of(p).is_marker(p.raw)
            }
            Step::Detail => true,
            Step::First => return self.first(p.offset, p.time, p.raw, p.ty, small_fields(p)),
        };
        if keep {
            self.detail_of(p.offset, p.time, p.raw, p.ty, small_fields(p));
        }
    }

    /// [`Analyzer::packet_run`] of a run of NOPs ([`super::decoder::RunSink::nops`]): once the
    /// first packet is in, a NOP is only counted, so its kind's step is not looked up (a
    /// load through the packet's type and an indirect jump on about half of the packets).
    #[inline(always)]
    pub(crate) fn nop_run(&mut self, p: &Packet, n: u32) {
        if self.steps[Kind::Nop as usize] != Step::Skip {
            return self.packet_run(p, n);
        }
        self.counts[p.layout as usize][p.index as usize & 31] += n as u64;
        self.last_time = p.time;
    }

    /// The stream's first packet (whatever its kind): the stream's first time, then the
    /// packets `detail` reads.
    #[cold]
    #[inline(never)]
    fn first(&mut self, offset: u64, time: i64, raw: u64, ty: &'static PacketType, small: u32) {
        let p = packet_of(offset, time, raw, ty, small);
        self.out.first_time = Some(p.time);
        self.steps = match self.opts.record_free {
            true => STEPS_FREE,
            false => STEPS,
        };
        self.detail(&p);
    }

    /// A LAYOUT_HEADER (once per blob).
    #[cold]
    #[inline(never)]
    fn layout_header(&mut self, p: &Packet, first: bool) {
        let g = |n: &str| p.ty.field_named(n).map_or(0, |f| f.get(p.raw) as u32);
        let h = LayoutHeader {
            layout: g("layout"),
            simd: g("simd"),
            group: g("group"),
            sel_a: g("sel_a"),
            sel_b: g("sel_b"),
            flag4: g("flag4"),
        };
        self.layout = match h.layout {
            3 => self.layout,
            4 => Layout::Rdna4,
            _ => Layout::Cdna,
        };
        self.wave_fast = wave_fast(self.layout == Layout::Cdna);
        if first {
            self.out.layout_header = Some(h);
        } else {
            self.warn(p.offset, "a second LAYOUT_HEADER in the stream".into());
        }
    }

    /// A WAVESTART: the wave's record, live in its slot until its WAVEEND (or without one,
    /// [`AnalyzeOptions::record_free`]).
    #[inline(always)]
    fn wave_start(&mut self, p: &Packet) {
        match self.opts.record_free {
            true => self.wave_start_free(p.raw, p.time, p.offset, p.layout, p.index),
            false => self.wave_start_at(p.raw, p.time, p.offset, p.layout, p.index),
        }
    }

    /// [`Analyzer::wave_start_at`] without a record: the start time in the slot.
    #[inline(always)]
    fn wave_start_free(&mut self, raw: u64, time: i64, offset: u64, layout: Layout, index: u8) {
        let wf: &'static WaveFast = &self.wave_fast[layout as usize][index as usize & 31];
        // The usual case: a direct slot, free, in the table allocated (so not the first).
        if wf.slot.direct {
            let s = wf.slot.get(raw);
            let code = LiveStarts::code(time);
            if let (Some(d @ [0, _]), true) = (self.free.starts.get_mut(s), code != 0) {
                *d = [code, offset];
                self.out.wave_starts += 1;
                let (_, cu, simd, _) = slot_place(s);
                self.residency.start(cu, simd, time);
                if s < TOKEN_SLOTS && self.opts.queue_token_waves {
                    self.token_wave_started(s, time);
                }
                return;
            }
        }
        self.wave_start_free_general(raw, time, offset, layout, index)
    }

    /// [`Analyzer::wave_start_free`] in every case.
    #[cold]
    #[inline(never)]
    fn wave_start_free_general(
        &mut self,
        raw: u64,
        time: i64,
        offset: u64,
        layout: Layout,
        index: u8,
    ) {
        let (layout, index) = (layout as usize, index as usize & 31);
        let wf: &'static WaveFast = &self.wave_fast[layout][index];
        self.out.wave_starts += 1;
        let slot = match wf.slot.direct {
            true => Some(wf.slot.get(raw)),
            false => {
                let (sa, cu, simd, wave) = self.wave_id(raw, &self.wave_bits[layout][index]);
                LiveWaves::slot(key(sa, cu, simd, wave))
            }
        };
        let f = &mut self.free;
        // A place outside the direct table.
        let Some(s) = slot else {
            f.gave_up = true;
            return;
        };
        if f.starts.is_empty() {
            f.starts = LiveStarts::free_table();
        }
        let code = LiveStarts::code(time);
        match f.starts.get_mut(s) {
            Some(d @ [0, _]) if code != 0 => *d = [code, offset],
            // A wave started while its slot is live (the records keep the one replaced, which
            // never ends), or at `i64::MIN`.
            _ => {
                f.gave_up = true;
                return;
            }
        }
        let (_, cu, simd, _) = slot_place(s);
        self.residency.start(cu, simd, time);
        if s < TOKEN_SLOTS && self.opts.queue_token_waves {
            self.token_wave_started(s, time);
        }
    }

    /// A wave without a record started in token place `s` (its start in [`LiveStarts`]): live
    /// by its running index, as a record's, for its tokens, and queued when it may take them
    /// (the traced SIMD's, as [`Analyzer::takes_tokens`]; only those are read, and the queue
    /// is taken at the traced unit's packets) ([`AnalyzeOptions::queue_token_waves`]).
    #[inline(never)]
    fn token_wave_started(&mut self, s: usize, time: i64) {
        let i = self.out.wave_starts as usize - 1;
        self.live.insert_direct(s, i);
        let (_, cu, simd, wave) = slot_place(s);
        if simd != self.opts.traced_simd {
            return;
        }
        self.queued.push(QueuedWave {
            index: i as u32,
            cu,
            simd,
            wave,
            start: time,
        });
    }

    /// [`Analyzer::wave_start`] given the packet's fields: they stay in registers (a packet
    /// given by value or address is stored to memory for the call).
    #[inline(never)]
    fn wave_start_at(&mut self, raw: u64, time: i64, offset: u64, layout: Layout, index: u8) {
        let wf: &'static WaveFast = &self.wave_fast[layout as usize][index as usize & 31];
        let s = wf.slot.get(raw);
        let i = self.out.waves.len();
        // The usual case, with no call out (so nothing saved and restored around one): a
        // direct slot, free, in the table allocated with nothing in the map, an index that
        // fits, room for the record. Anything else takes the general path from the start.
        if wf.slot.direct && i < u32::MAX as usize && self.live.other.is_empty() {
            let waves = &mut self.out.waves;
            if let (Some(d @ 0), true) = (self.live.direct.get_mut(s), i < waves.capacity()) {
                // The record first: nothing stored between the test of room and the push.
                let (sa, cu, simd, wave) = slot_place(s);
                let sa = wf.with_sa.then_some(sa);
                waves.push(Wave::started(cu, simd, wave, sa, wf.tag(raw), time, offset));
                *d = i as u32 + 1;
                self.out.wave_starts += 1;
                self.residency.start(cu, simd, time);
                return;
            }
        }
        self.wave_start_general(raw, time, offset, layout, index)
    }

    /// [`Analyzer::wave_start_at`] in every case.
    #[cold]
    #[inline(never)]
    fn wave_start_general(&mut self, raw: u64, time: i64, offset: u64, layout: Layout, index: u8) {
        let (layout, index) = (layout as usize, index as usize & 31);
        let wf: &'static WaveFast = &self.wave_fast[layout][index];
        if !wf.slot.direct {
            return self.wave_start_keyed(raw, time, offset, &self.wave_bits[layout][index]);
        }
        self.out.wave_starts += 1;
        // The place from the slot: one read of the packet.
        let s = wf.slot.get(raw);
        let (sa, cu, simd, wave) = slot_place(s);
        // The slot first, then the record, as below.
        if self.live.insert_direct(s, self.out.waves.len()).is_some() {
            self.start_while_live(offset, cu, simd, wave);
        }
        let sa = wf.with_sa.then_some(sa);
        self.push_wave(Wave::started(cu, simd, wave, sa, wf.tag(raw), time, offset));
        self.residency.start(cu, simd, time);
    }

    /// [`Analyzer::wave_start_general`] for a type whose place may have no direct slot.
    #[cold]
    #[inline(never)]
    fn wave_start_keyed(&mut self, raw: u64, time: i64, offset: u64, wb: &WaveBits) {
        self.out.wave_starts += 1;
        let (sa, cu, simd, wave) = self.wave_id(raw, wb);
        let k = key(sa, cu, simd, wave);
        // The slot first, then the record: nothing but the record is needed once the list
        // may have to grow (values kept across that call would be saved and reloaded on
        // every wave).
        if self.live.insert(k, self.out.waves.len()).is_some() {
            self.start_while_live(offset, cu, simd, wave);
        }
        let sa = (self.layout == Layout::Cdna).then_some(sa);
        self.push_wave(Wave::started(cu, simd, wave, sa, wb.tag(raw), time, offset));
        self.residency.start(cu, simd, time);
    }

    #[inline(always)]
    fn push_wave(&mut self, w: Wave) {
        let waves = &mut self.out.waves;
        if waves.len() == waves.capacity() {
            grow_one(waves);
        }
        waves.push(w);
    }

    #[cold]
    #[inline(never)]
    fn start_while_live(&mut self, offset: u64, cu: u16, simd: u8, wave: u8) {
        self.anomalies[START_WHILE_LIVE] += 1;
        self.warn(
            offset,
            format!("WAVESTART for cu {cu} simd {simd} wave {wave} while it is live"),
        );
    }

    /// A WAVEEND: the live wave in its slot ends.
    #[inline(always)]
    fn wave_end(&mut self, p: &Packet) {
        match self.opts.record_free {
            true => self.wave_end_free(p.raw, p.time, p.layout, p.index),
            false => self.wave_end_at(p.raw, p.time, p.offset, p.layout, p.index),
        }
    }

    /// [`Analyzer::wave_end_at`] without records ([`Analyzer::wave_start_free`]).
    #[inline(always)]
    fn wave_end_free(&mut self, raw: u64, time: i64, layout: Layout, index: u8) {
        let sb = &self.wave_fast[layout as usize][index as usize & 31].slot;
        let slot = match sb.direct {
            true => Some(sb.get(raw)),
            false => self.wave_end_slot(raw, layout, index),
        };
        self.out.wave_ends += 1;
        let live = slot.and_then(|s| Some((s, self.free.starts.get_mut(s)?)));
        match live {
            Some((s, d)) if d[0] != 0 => {
                let start = LiveStarts::time(std::mem::take(&mut d[0]));
                let (_, cu, simd, _) = slot_place(s);
                self.residency.end(cu, simd, start, time);
                // Its tokens end with it, as with a record.
                if s < TOKEN_SLOTS && self.opts.queue_token_waves {
                    self.live.remove_direct(s);
                }
            }
            // As with records: a key without a direct slot has no live wave (its start gave
            // up).
            _ => self.anomalies[END_WITHOUT_START] += 1,
        }
    }

    /// The direct slot of a WAVEEND of a type whose place may have none.
    #[cold]
    #[inline(never)]
    fn wave_end_slot(&self, raw: u64, layout: Layout, index: u8) -> Option<usize> {
        let wb = &self.wave_bits[layout as usize][index as usize & 31];
        let (sa, cu, simd, wave) = self.wave_id(raw, wb);
        LiveWaves::slot(key(sa, cu, simd, wave))
    }

    /// [`Analyzer::wave_end`] given the packet's fields ([`Analyzer::wave_start_at`]).
    #[inline(never)]
    fn wave_end_at(&mut self, raw: u64, time: i64, offset: u64, layout: Layout, index: u8) {
        let sb = &self.wave_fast[layout as usize][index as usize & 31].slot;
        // The usual case, with no call out ([`Analyzer::wave_start_at`]): a live wave in a
        // direct slot.
        if sb.direct {
            if let Some(d) = self.live.direct.get_mut(sb.get(raw)) {
                if *d != 0 {
                    let i = std::mem::take(d) as usize - 1;
                    self.out.wave_ends += 1;
                    return self.end_wave(i, time, offset);
                }
            }
        }
        self.wave_end_general(raw, time, offset, layout, index)
    }

    /// [`Analyzer::wave_end_at`] in every case.
    #[cold]
    #[inline(never)]
    fn wave_end_general(&mut self, raw: u64, time: i64, offset: u64, layout: Layout, index: u8) {
        let (layout, index) = (layout as usize, index as usize & 31);
        let sb = &self.wave_fast[layout][index].slot;
        self.out.wave_ends += 1;
        let live = if sb.direct {
            self.live.remove_direct(sb.get(raw))
        } else {
            let (sa, cu, simd, wave) = self.wave_id(raw, &self.wave_bits[layout][index]);
            self.live.remove(key(sa, cu, simd, wave))
        };
        match live {
            Some(i) => self.end_wave(i, time, offset),
            None => self.anomalies[END_WITHOUT_START] += 1,
        }
    }

    /// Wave `i` (live until now) ends at a WAVEEND.
    #[inline(always)]
    fn end_wave(&mut self, i: usize, time: i64, offset: u64) {
        if let Some(w) = self.out.waves.get_mut(i) {
            w.end = time;
            // Never 0 ([`Analyzer::has_ended`]) from the decoder: packets come in stream
            // order. `u32::MAX`: before its start, or too far.
            w.end_delta = match offset.checked_sub(w.start_offset) {
                Some(d) if d < u32::MAX as u64 => d as u32,
                _ => u32::MAX,
            };
            // Each wave is live, so ends, at most once. (Packets given out of order, a
            // WAVEEND at its WAVESTART's offset, would leave it unended throughout.)
            self.ended_waves += Self::has_ended(w) as usize;
            self.residency.end(w.cu, w.simd, w.start, time);
        }
    }

    /// [`Analyzer::detail`] of a packet given by its fields: they stay in registers (a packet
    /// given by value or by address is stored to memory for the call, which the decode loop
    /// then did for every packet, only in case).
    #[inline(never)]
    fn detail_of(&mut self, offset: u64, time: i64, raw: u64, ty: &'static PacketType, small: u32) {
        // The token packets (most of what an instruction-traced stream brings here) go
        // straight to their token: no packet built, no second dispatch through `detail`.
        if matches!(ty.kind, Kind::Inst | Kind::ValuInst | Kind::Immediate) {
            // (The layout of `small` is always one of the table's: no `% 3` as `packet_of`.)
            if let Some(t) = self.places.get((small >> 16) as usize) {
                // (As `detail`, which the stream's first packet went through.)
                self.first_packet = false;
                let pl = &t[(small >> 8) as usize & 31];
                return self.token_packet(offset, time, raw, ty.kind, pl);
            }
        }
        self.detail(&packet_of(offset, time, raw, ty, small))
    }

    fn detail(&mut self, p: &Packet) {
        let first = std::mem::replace(&mut self.first_packet, false);
        let pl = self.places_of(p);
        let raw = p.raw;
        match p.ty.kind {
            Kind::LayoutHeader => self.layout_header(p, first),
            Kind::WaveStart => self.wave_start(p),
            Kind::WaveEnd => self.wave_end(p),
            Kind::Inst | Kind::ValuInst | Kind::Immediate => {
                self.token_packet(p.offset, p.time, raw, p.ty.kind, pl)
            }
            Kind::ImmediateMask => {
                let mask = pl.mask.get(raw);
                self.breakdown[MASK_PACKETS] += 1;
                self.breakdown[MASK_BITS] += mask.count_ones() as u64;
                self.out.instruction_packets += mask.count_ones() as u64;
                let simd = self.opts.traced_simd;
                // Set bits below 16, lowest first.
                let mut bits = mask & 0xffff;
                while bits != 0 {
                    let slot = bits.trailing_zeros() as u8;
                    bits &= bits - 1;
                    let kind = TokenKind::ImmediateMask;
                    self.token(p.offset, p.time, simd, slot, kind, TokenOp::NONE);
                }
            }
            Kind::DeltaOrMarker if p.ty.time == TimeRule::DeltaOrMarker && pl.is_marker(raw) => {
                let m = Marker {
                    time: p.time,
                    realtime: pl.delta.get(raw),
                };
                push_at_rate(&mut self.out.markers, m, p.offset, self.blob_bytes);
            }
            Kind::Reg => {
                let addr = pl.reg_addr.get(raw) as u32;
                // RDNA: hi_byte bit 7 marks an SH-register offset, not an absolute address.
                let absolute = !pl.reg_hi.present() || pl.reg_hi.get(raw) & 0x80 == 0;
                if absolute && (addr == USERDATA_2 || addr == USERDATA_3) {
                    let u = UserdataWrite {
                        time: p.time,
                        reg: addr,
                        value: pl.reg_data.get(raw) as u32,
                    };
                    push_at_rate(&mut self.out.userdata_writes, u, p.offset, self.blob_bytes);
                }
            }
            Kind::CdnaTimestamp if (raw >> 4) & 0xfff == 0 => {
                self.out.cdna_timestamps.push(raw >> 16);
            }
            _ => {}
        }
    }

    /// The waves counted without records: their number and sums when exact (the sums hold,
    /// nothing gave up), else none (the caller analyses the stream again with records). Waves
    /// that never ended (the ones live at the end) are dropped as the records drop them:
    /// counted as anomalies, with the same warning.
    fn finish_free(&mut self) -> Option<super::residency::Residency> {
        // Each WAVESTART started a wave unless the analysis gave up (and then the counts
        // are not used); each WAVEEND ended one but those without a start (counted as such
        // only by `wave_end_free` here).
        let started = self.out.wave_starts as usize;
        let ended = (self.out.wave_ends - self.anomalies[END_WITHOUT_START]) as usize;
        // With the token places' waves queued, a wave never ended gives up: the fold took
        // its tokens, which the records drop.
        let unended_given_up = self.opts.queue_token_waves && started > ended;
        if self.free.gave_up || ended > started || unended_given_up {
            return None;
        }
        // The waves never ended, and the first one's WAVESTART (the least offset: stream
        // order).
        let mut unended = Vec::new();
        let mut first_offset = u64::MAX;
        if started > ended {
            // (Each slot freed as it is read: the table goes back for the next SE.)
            for (s, [code, offset]) in self.free.starts.iter_mut().enumerate() {
                if *code != 0 {
                    let (_, cu, simd, _) = slot_place(s);
                    unended.push((cu, simd, LiveStarts::time(std::mem::take(code))));
                    first_offset = first_offset.min(*offset);
                }
            }
        }
        // Every start took a slot (else it gave up), every end with a start freed one.
        if unended.len() != started - ended {
            return None;
        }
        // So no slot is live any more (the waves live at the end were freed above).
        self.free.hand_back();
        let sums = self.residency.finish_cut(ended, &mut unended);
        // No ended wave at all has no sums, and is exact.
        if sums.is_none() && ended > 0 {
            return None;
        }
        self.out.waves_without_records = Some(ended);
        if !unended.is_empty() {
            self.unended(unended.len() as u64, Some(first_offset));
        }
        sums
    }

    /// `unended` waves started but never ended, the first at `offset`: counted and warned of.
    #[cold]
    #[inline(never)]
    fn unended(&mut self, unended: u64, offset: Option<u64>) {
        *self
            .out
            .wave_anomalies
            .entry("start_without_end")
            .or_default() += unended;
        if let Some(offset) = offset {
            self.warn(
                offset,
                format!("{unended} waves started but never ended (trace stopped or buffer full?)"),
            );
        }
    }

    /// Close the analysis: drop waves that never ended (counted as anomalies).
    pub fn finish(mut self) -> BlobAnalysis {
        // Every packet was counted by its type (a table holds at most 32 types).
        let packets = self.counts.iter().flatten().sum::<u64>();
        self.out.packet_total = packets;
        // Named as before: a key only for what was seen (the mask bits with their packets).
        for (i, (name, &c)) in BREAKDOWN.iter().zip(&self.breakdown).enumerate() {
            let seen = if i == MASK_BITS {
                self.breakdown[MASK_PACKETS] > 0
            } else {
                c > 0
            };
            if seen {
                self.out.instruction_breakdown.insert(name, c);
            }
        }
        for (name, &c) in ANOMALIES.iter().zip(&self.anomalies) {
            if c > 0 {
                self.out.wave_anomalies.insert(name, c);
            }
        }
        if packets > 0 {
            self.out.last_time = Some(self.last_time);
        }
        for (layout, counts) in Layout::ALL.iter().zip(&self.counts) {
            let types = super::packets::Table::for_layout(*layout).types;
            for (i, &c) in counts.iter().enumerate() {
                if c > 0 {
                    if let Some(t) = types.get(i) {
                        *self.out.packet_counts.entry(t.name).or_default() += c;
                    }
                }
            }
        }
        for (layout, ops) in Layout::ALL.iter().zip(&self.op_counts) {
            for (op, &c) in ops.iter().enumerate() {
                if c > 0 {
                    *self
                        .out
                        .inst_ops
                        .entry(op_name(*layout, op as u32).to_string())
                        .or_default() += c;
                }
            }
        }
        // (Counted as they end: a pass over every record here would read them all again.)
        // None without records.
        let unended = (self.out.waves.len() - self.ended_waves) as u64;
        self.out.residency = match self.opts.record_free {
            true => self.finish_free(),
            false => self.residency.finish(
                self.out.waves.len(),
                self.out.waves.first().map(|w| w.start),
                unended == 0,
            ),
        };
        if unended > 0 {
            let first = self.out.waves.iter().find(|w| !Self::has_ended(w));
            self.unended(unended, first.map(|w| w.start_offset));
            // Renumber tokens onto the kept waves.
            let mut new_index = Vec::with_capacity(self.out.waves.len());
            let mut n = 0u32;
            for w in &self.out.waves {
                let e = Self::has_ended(w);
                new_index.push(if e { Some(n) } else { None });
                if e {
                    n += 1;
                }
            }
            self.out.tokens.retain_mut(|t| {
                match new_index.get(t.wave as usize).copied().flatten() {
                    Some(i) => {
                        t.wave = i;
                        true
                    }
                    None => false,
                }
            });
            self.out.waves.retain(Self::has_ended);
        }
        // The reservations from the blob's size ([`Analyzer::reserve_for`], `grow_tokens`)
        // are estimates for streams dense in waves and tokens: one of NOPs, or an itraced SE
        // (few waves, many bytes of tokens), leaves them mostly empty; keep no more than
        // doubling would have.
        shrink_overshoot(&mut self.out.waves);
        shrink_overshoot(&mut self.out.tokens);
        shrink_overshoot(&mut self.out.markers);
        shrink_overshoot(&mut self.out.userdata_writes);
        self.out
    }
}

/// Adds `x`, met at nibble `offset` of a blob of `blob_bytes`, to a list grown at the
/// stream's rate ([`grow_at_rate`]).
#[inline(always)]
fn push_at_rate<T>(v: &mut Vec<T>, x: T, offset: u64, blob_bytes: usize) {
    if v.len() == v.capacity() {
        grow_at_rate(v, (offset / 2) as usize, blob_bytes);
    }
    v.push(x);
}

/// Room for more in a full list of things met along a blob of `blob_bytes` (0: unknown), its
/// first `done_bytes` read: once past a few thousand entries and a sixty-fourth of the blob,
/// what the rate so far gives for the whole blob, an eighth over; doubling before that. A list
/// grown by doubling past the heap's mmap threshold is copied at each step, its new pages
/// faulted on top of the old (half the pages a large capture's markers and RGP userdata
/// writes touched). A rate that falls later is just grown again; one that was high early
/// leaves room that [`shrink_overshoot`] gives back.
#[cold]
#[inline(never)]
fn grow_at_rate<T>(v: &mut Vec<T>, done_bytes: usize, blob_bytes: usize) {
    let len = v.len();
    let want = if len >= 1024 && done_bytes > 0 && done_bytes.saturating_mul(64) >= blob_bytes {
        let whole = len as u128 * blob_bytes as u128 / done_bytes as u128;
        usize::try_from(whole + whole / 8).unwrap_or(0)
    } else {
        0
    };
    v.reserve(want.max(2 * len).max(16) - len);
}

/// Room for one more in a full vector (as `push` would make), out of the caller's code.
#[cold]
#[inline(never)]
fn grow_one<T>(v: &mut Vec<T>) {
    v.reserve(1);
}

/// Gives back a vector's capacity beyond twice its length (what growth by doubling leaves).
pub(crate) fn shrink_overshoot<T>(v: &mut Vec<T>) {
    if v.capacity() > (2 * v.len()).max(64) {
        v.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A full list grows to the blob's whole at the rate so far (an eighth over) once past a
    /// sixty-fourth of the blob and a thousand entries, by doubling otherwise (and at least),
    /// keeping what it holds.
    #[test]
    fn lists_grow_at_the_stream_rate() {
        let full = |n: u32| {
            let mut v: Vec<u32> = (0..n).collect();
            v.shrink_to_fit();
            v
        };
        let mut v = full(2000);
        grow_at_rate(&mut v, 100_000, 1_000_000);
        assert_eq!(v.capacity(), 22_500);
        assert_eq!(v, (0..2000).collect::<Vec<_>>());
        // Before a sixty-fourth of the blob, short, or the blob's size unknown: doubled.
        for (n, done, blob) in [(2000, 10_000, 1_000_000), (500, 500_000, 1_000_000)] {
            let mut v = full(n);
            grow_at_rate(&mut v, done, blob);
            assert_eq!(v.capacity(), 2 * n as usize, "{n} {done} {blob}");
        }
        let mut v = full(2000);
        grow_at_rate(&mut v, 100_000, 0);
        assert_eq!(v.capacity(), 4000);
        // Late in the blob: never less than doubling.
        let mut v = full(2000);
        grow_at_rate(&mut v, 900_000, 1_000_000);
        assert_eq!(v.capacity(), 4000);
        let mut v: Vec<u32> = Vec::new();
        grow_at_rate(&mut v, 0, 0);
        assert!(v.capacity() >= 16);
    }

    /// The live-wave table answers as one hash map would, for keys inside and outside its
    /// direct range (a damaged stream can carry any field value).
    #[test]
    fn live_waves_match_a_map() {
        let mut live = LiveWaves::default();
        let mut want: HashMap<u32, usize> = HashMap::new();
        let mut x = 0x1234_5678u64;
        for i in 0..20_000usize {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = (x >> 33) as u32;
            let (sa, cu, simd, wave) = if r & 7 == 0 {
                (
                    (r >> 3) as u8,
                    (r >> 8) as u16,
                    (r >> 11) as u8,
                    (r >> 19) as u8,
                )
            } else {
                (
                    0,
                    (r >> 3) as u16 & 7,
                    (r >> 6) as u8 & 3,
                    (r >> 8) as u8 & 15,
                )
            };
            let k = key(sa, cu, simd, wave);
            match r >> 29 {
                0..=3 => assert_eq!(live.insert(k, i), want.insert(k, i), "insert {k:#x}"),
                4..=5 => assert_eq!(live.remove(k), want.remove(&k), "remove {k:#x}"),
                _ => assert_eq!(live.get(k), want.get(&k).copied(), "get {k:#x}"),
            }
        }
    }

    /// The per-type wave fields read what the places table reads, as the analyzer read them
    /// from it: place, shader array (CDNA) and tag, on every type of every layout.
    #[test]
    fn wave_bits_read_what_places_read() {
        let mut x = 0x0123_4567_89ab_cdefu64;
        for layout in Layout::ALL {
            for i in 0..32 {
                let (pl, wb) = (
                    &places()[layout as usize][i],
                    &wave_bits()[layout as usize][i],
                );
                for _ in 0..64 {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    for raw in [x, !x, x.rotate_left(17), u64::MAX, 0] {
                        assert_eq!(wb.cu(raw), pl.cu(layout, raw), "{layout:?} {i} {raw:#x}");
                        assert_eq!(wb.simd.get(raw) as u8, pl.simd.get(raw) as u8);
                        assert_eq!(wb.wave.get(raw) as u8, pl.wave.get(raw) as u8);
                        assert_eq!(wb.sa.get(raw) as u8, pl.sa.get(raw) as u8);
                        let tag = match (pl.index.opt(raw), pl.count.opt(raw)) {
                            (Some(v), _) => WaveTag::Id7(v as u32),
                            (None, Some(c)) => WaveTag::Count(c as u32),
                            (None, None) => WaveTag::None,
                        };
                        assert_eq!(wb.tag(raw), tag, "{layout:?} {i} {raw:#x}");
                    }
                }
            }
        }
    }

    /// The direct slot read straight from a wave packet is the one its place's key has, on
    /// every wave type of every layout, with and without the shader array; and the types of
    /// today's tables all have one (no wave takes the general path).
    #[test]
    fn slot_bits_read_the_keys_slot() {
        let mut next = crate::analysis::test_rng(0x5107_b175);
        let mut direct = 0;
        for layout in Layout::ALL {
            let types = super::super::packets::Table::for_layout(layout).types;
            for (i, ty) in types.iter().enumerate() {
                let wb = &wave_bits()[layout as usize][i];
                let wavy = matches!(ty.kind, Kind::WaveStart | Kind::WaveEnd);
                for cdna in [false, true] {
                    let wf = &wave_fast(cdna)[layout as usize][i];
                    assert_eq!(wf.with_sa, cdna);
                    let sb = &wf.slot;
                    if wavy {
                        assert!(sb.direct, "{layout:?} {}", ty.name);
                        direct += 1;
                    }
                    if !sb.direct {
                        continue;
                    }
                    for _ in 0..256 {
                        let x = next(u64::MAX);
                        for raw in [x, !x, u64::MAX, 0] {
                            let sa = if cdna { wb.sa.get(raw) as u8 } else { 0 };
                            let k = key(
                                sa,
                                wb.cu(raw),
                                wb.simd.get(raw) as u8,
                                wb.wave.get(raw) as u8,
                            );
                            let want = LiveWaves::slot(k);
                            assert_eq!(Some(sb.get(raw)), want, "{layout:?} {} {raw:#x}", ty.name);
                            assert_eq!(LiveWaves::key_of_slot(sb.get(raw)), k);
                            assert_eq!(wf.tag(raw), wb.tag(raw));
                        }
                    }
                }
            }
        }
        assert!(direct >= 12, "{direct}");
    }

    /// The analysis of random streams of every layout against a plain model of its wave
    /// rules (one map of live waves, a flag per wave): a WAVESTART in a live slot replaces its
    /// wave, which never ends; WAVEENDs without a live wave; waves that never end (dropped,
    /// with their tokens, and counted); tokens of the traced SIMD's live waves.
    #[test]
    fn waves_follow_the_plain_model() {
        use super::super::packets::{Table, CDNA_TABLE, RDNA3_TABLE, RDNA4_TABLE};
        // (layout header value, table, WAVESTART, WAVEEND, a token type)
        let layouts: [(u64, &Table, &str, &str, &str); 3] = [
            (3, &RDNA3_TABLE, "WAVESTART", "WAVEEND", "VALUINST"),
            (
                4,
                &RDNA4_TABLE,
                "WAVESTART_RDNA4",
                "WAVEEND_RDNA4",
                "VALUINST",
            ),
            (
                2,
                &CDNA_TABLE,
                "CDNA_WAVESTART",
                "CDNA_WAVEEND",
                "CDNA_INST",
            ),
        ];
        for (i, (header, t, ws, we, tok)) in layouts.into_iter().enumerate() {
            let seed = 0x05ee_d0f2_a7e5_u64 + i as u64;
            follow_the_plain_model(seed, header, t, ws, we, tok);
        }
    }

    fn follow_the_plain_model(
        seed: u64,
        header: u64,
        t: &super::super::packets::Table,
        ws: &str,
        we: &str,
        tok: &str,
    ) {
        use super::super::encode::{assemble, NibbleWriter};
        use super::super::packets::RDNA3_TABLE;
        let (ws, we, vi) = (
            t.by_name(ws).unwrap(),
            t.by_name(we).unwrap(),
            t.by_name(tok).unwrap(),
        );
        let cdna = t.layout == Layout::Cdna;
        let width = |ty: &PacketType, n: &str| ty.field_named(n).map_or(0, |f| f.hi - f.lo + 1);
        let mut next = crate::analysis::test_rng(seed);
        // Each rule met somewhere: replaced, unended, orphan ends, kept tokens.
        let mut seen = [0u64; 4];
        for case in 0..300 {
            let mut w = NibbleWriter::new();
            w.push(
                assemble(
                    RDNA3_TABLE.by_name("LAYOUT_HEADER").unwrap(),
                    &[("layout", header)],
                )
                .unwrap(),
                16,
            );
            for _ in 0..next(200) {
                let ty = match next(7) {
                    0..=2 => ws,
                    3..=5 => we,
                    _ => vi,
                };
                // Mostly a few places (so that slots meet), now and then any the fields hold.
                let mut any = |ty: &PacketType, n: &str| match next(8) {
                    0 => next(1 << width(ty, n)),
                    _ => next(2),
                };
                let place = if cdna {
                    ["sh", "cu", "simd", "wave"]
                } else {
                    ["sa", "wgp", "simd", "wave"]
                };
                let mut f: Vec<(&str, u64)> = Vec::new();
                for n in place {
                    // RDNA tokens name only their slot (the traced SIMD's, on the traced unit).
                    if ty.field_named(n).is_some() {
                        f.push((n, any(ty, n)));
                    }
                }
                if ty.field_named("delta").is_some() {
                    f.push(("delta", next(4)));
                }
                w.push(assemble(ty, &f).unwrap(), ty.nibbles);
            }
            w.pad_to(32);
            let blob = w.as_bytes();
            let a = analyze(blob, None).unwrap();
            assert_eq!(a.layout, Some(t.layout), "case {case}");

            // The model, over the same packets.
            struct M {
                cu: u16,
                simd: u8,
                wave: u8,
                sa: Option<u8>,
                start: i64,
                end: i64,
                insts: u32,
                offset: u64,
                end_delta: u32,
                ended: bool,
            }
            let mut waves: Vec<M> = Vec::new();
            let mut live: HashMap<(u16, u8, u8, u8), usize> = HashMap::new();
            let mut tokens: Vec<(usize, i64, u64)> = Vec::new();
            let (mut replaced, mut orphan_ends, mut orphan_tokens) = (0u64, 0u64, 0u64);
            for p in Decoder::new(blob, DecodeOptions::default()) {
                let g = |n: &str| p.ty.field_named(n).map_or(0, |f| f.get(p.raw));
                let (cu, sa) = if cdna {
                    (g("cu"), g("sh"))
                } else {
                    (g("wgp") | g("sa") << width(p.ty, "wgp"), 0)
                };
                let k = (cu as u16, g("simd") as u8, g("wave") as u8, sa as u8);
                match p.ty.kind {
                    Kind::WaveStart => {
                        waves.push(M {
                            cu: k.0,
                            simd: k.1,
                            wave: k.2,
                            sa: cdna.then_some(k.3),
                            start: p.time,
                            end: p.time,
                            insts: 0,
                            offset: p.offset,
                            end_delta: 0,
                            ended: false,
                        });
                        replaced += live.insert(k, waves.len() - 1).is_some() as u64;
                    }
                    Kind::WaveEnd => match live.remove(&k) {
                        Some(i) => {
                            let m = &mut waves[i];
                            (m.end, m.ended) = (p.time, true);
                            m.end_delta = (p.offset - m.offset) as u32;
                        }
                        None => orphan_ends += 1,
                    },
                    Kind::ValuInst | Kind::Inst => {
                        // CDNA: the token's SIMD on the traced unit; RDNA: the traced SIMD.
                        let simd = if cdna { k.1 } else { 0 };
                        match live.get(&(0, simd, k.2, 0)) {
                            Some(&i) => {
                                waves[i].insts += 1;
                                tokens.push((i, p.time, p.offset));
                            }
                            None => orphan_tokens += 1,
                        }
                    }
                    _ => {}
                }
            }
            let unended = waves.iter().filter(|m| !m.ended).count() as u64;
            let mut index = Vec::new();
            let mut kept = 0u32;
            for m in &waves {
                index.push(m.ended.then_some(kept));
                kept += m.ended as u32;
            }
            let want_tokens: Vec<(u32, i64, u64)> = tokens
                .iter()
                .filter_map(|&(i, time, off)| index[i].map(|j| (j, time, off)))
                .collect();
            let want_waves: Vec<_> = waves
                .iter()
                .filter(|m| m.ended)
                .map(|m| {
                    (
                        (m.cu, m.simd, m.wave, m.sa),
                        m.start,
                        m.end,
                        m.insts,
                        m.offset,
                        m.end_delta,
                    )
                })
                .collect();
            let got_waves: Vec<_> = a
                .waves
                .iter()
                .map(|w| {
                    let o = w.start_offset;
                    (
                        (w.cu, w.simd, w.wave, w.sa),
                        w.start,
                        w.end,
                        w.insts,
                        o,
                        w.end_delta,
                    )
                })
                .collect();
            assert_eq!(got_waves, want_waves, "{} case {case}", ws.name);
            let got_tokens: Vec<_> = a
                .tokens
                .iter()
                .map(|t| (t.wave, t.time, t.offset))
                .collect();
            assert_eq!(got_tokens, want_tokens, "{} case {case}", ws.name);
            let count = |k: &str| a.wave_anomalies.get(k).copied().unwrap_or(0);
            assert_eq!(count("start_while_live"), replaced, "case {case}");
            assert_eq!(count("end_without_start"), orphan_ends, "case {case}");
            assert_eq!(
                count("token_without_live_wave"),
                orphan_tokens,
                "case {case}"
            );
            assert_eq!(count("start_without_end"), unended, "case {case}");
            assert_eq!(a.wave_starts, waves.len() as u64, "case {case}");
            let first_unended = waves.iter().find(|m| !m.ended).map(|m| m.offset);
            let warned = a
                .warnings
                .iter()
                .find(|w| w.message.contains("never ended"));
            assert_eq!(warned.map(|w| w.offset), first_unended, "case {case}");
            let live_warnings = a
                .warnings
                .iter()
                .filter(|w| w.message.contains("while it is live"))
                .count() as u64;
            // (Warnings are capped; the first replacement's is always in.)
            assert!(live_warnings <= replaced, "case {case}");
            assert_eq!(live_warnings > 0, replaced > 0, "case {case}");
            for (s, n) in
                seen.iter_mut()
                    .zip([replaced, unended, orphan_ends, want_tokens.len() as u64])
            {
                *s += n;
            }
        }
        assert!(seen.iter().all(|&n| n > 0), "{} {seen:?}", ws.name);
    }

    /// The analysis without wave records ([`AnalyzeOptions::record_free`]) against the one
    /// with them, over random streams of every layout with equal-time starts and ends, ends and
    /// tokens without a live wave, waves that never end (a few or all of those live at the
    /// end, long-lived ones started early), on a few SIMDs or one: where it is exact, the same
    /// wave count, first start, anomalies, warnings and everything else of the analysis, and
    /// achieved occupancy equal to the sweep over the records (which drop the waves never
    /// ended); it gives up exactly where the records show a reason (a wave started in a live
    /// slot, a token of a live wave, wave times going back), found in the same stream with
    /// every wave ended. With the token places' waves queued
    /// ([`AnalyzeOptions::queue_token_waves`]), a token of a live wave is no reason but a wave
    /// never ended is: the tokens are the records' (same wave indices), the queue holds the
    /// records' waves that may take tokens (index, place, start) and the attributed count is
    /// their `insts` summed.
    #[test]
    fn record_free_equals_the_records() {
        use super::super::encode::{assemble, NibbleWriter};
        use super::super::packets::{Table, CDNA_TABLE, RDNA3_TABLE, RDNA4_TABLE};
        use crate::analysis::occupancy::{self, Achieved, WaveLife};
        // (layout header value, table, WAVESTART, WAVEEND, a token type)
        let layouts: [(u64, &Table, &str, &str, &str); 3] = [
            (3, &RDNA3_TABLE, "WAVESTART", "WAVEEND", "VALUINST"),
            (
                4,
                &RDNA4_TABLE,
                "WAVESTART_RDNA4",
                "WAVEEND_RDNA4",
                "IMMEDIATE",
            ),
            (
                2,
                &CDNA_TABLE,
                "CDNA_WAVESTART",
                "CDNA_WAVEEND",
                "CDNA_INST",
            ),
        ];
        for (li, (header, t, ws, we, tok)) in layouts.into_iter().enumerate() {
            let (ws, we, tok) = (
                t.by_name(ws).unwrap(),
                t.by_name(we).unwrap(),
                t.by_name(tok).unwrap(),
            );
            let cdna = t.layout == Layout::Cdna;
            let names = match cdna {
                true => ["sh", "cu", "simd", "wave"],
                false => ["sa", "wgp", "simd", "wave"],
            };
            let width = |n: &str| {
                let w = |ty: &PacketType| ty.field_named(n).map_or(0, |f| f.hi - f.lo + 1);
                w(ws).min(w(we))
            };
            let widths = names.map(width);
            let mut next = crate::analysis::test_rng(0x4ec0_4df4_ee00 + li as u64);
            // Exact (with orphan ends or tokens among them), and given up for: a replaced
            // wave, a token of a live wave, times going back (alone); exact with waves never
            // ended, with a SIMD's peak lowered by them.
            let mut seen = [0u64; 7];
            // Queued and exact: in all, with tokens of live waves, with tokens of none.
            let mut queue_seen = [0u64; 3];
            for case in 0..1000 {
                let replace = next(5) == 0;
                let unend = next(3) == 0;
                let live_tokens = next(5) == 0;
                let back = next(6) == 0;
                let orphans = next(2) == 0;
                // Every wave on one SIMD (slots meet less, peaks are higher).
                let one_simd = next(4) == 0;
                let mut w = NibbleWriter::new();
                let lh = RDNA3_TABLE.by_name("LAYOUT_HEADER").unwrap();
                w.push(assemble(lh, &[("layout", header)]).unwrap(), 16);
                let mut live: Vec<[u64; 4]> = Vec::new();
                // Waves meant to outlive the stream (an orphan WAVEEND of their place may
                // still end one; the records say what happened).
                let mut forever: Vec<[u64; 4]> = Vec::new();
                let emit = |w: &mut NibbleWriter, ty: &PacketType, pl: [u64; 4], d: u64| {
                    let mut f: Vec<(&str, u64)> = Vec::new();
                    for (n, v) in names.iter().zip(pl) {
                        if ty.field_named(n).is_some() {
                            f.push((n, v));
                        }
                    }
                    if ty.field_named("delta").is_some() {
                        f.push(("delta", d));
                    } else if cdna && d > 0 {
                        // CDNA wave packets carry no time: a CDNA_MISC's delta moves it.
                        let misc = t.by_name("CDNA_MISC").unwrap();
                        w.push(assemble(misc, &[("delta", d)]).unwrap(), misc.nibbles);
                    }
                    w.push(assemble(ty, &f).unwrap(), ty.nibbles);
                };
                for _ in 0..next(300) {
                    // Mostly a few places (so that slots meet), now and then any.
                    let mut place = [0u64; 4];
                    for (v, &bits) in place.iter_mut().zip(&widths) {
                        *v = match next(8) {
                            0 => next(1 << bits),
                            _ => next(2).min((1 << bits) - 1),
                        };
                    }
                    if one_simd {
                        place = [0, 0, 0, next(1 << widths[3].min(5))];
                    }
                    // Equal times often (delta 0).
                    let d = if next(2) == 0 { 0 } else { next(4) };
                    match next(8) {
                        0..=2 => {
                            let is_live = live.contains(&place) || forever.contains(&place);
                            if is_live && !replace {
                                continue;
                            }
                            emit(&mut w, ws, place, d);
                            if !is_live {
                                match unend && next(6) == 0 {
                                    true => forever.push(place),
                                    false => live.push(place),
                                }
                            }
                        }
                        3..=5 => {
                            if !live.is_empty() && (!orphans || next(4) != 0) {
                                let i = next(live.len() as u64) as usize;
                                emit(&mut w, we, live.swap_remove(i), d);
                            } else if orphans && !live.contains(&place) {
                                emit(&mut w, we, place, d);
                            }
                        }
                        _ => {
                            // A token's wave: the traced unit's (RDNA: the traced SIMD's).
                            let simd = if cdna { place[2] } else { 0 };
                            let at = [0, 0, simd, place[3]];
                            let to_live = live.contains(&at) || forever.contains(&at);
                            if (to_live && !live_tokens) || (!to_live && !orphans) {
                                continue;
                            }
                            emit(&mut w, tok, at, d);
                        }
                    }
                }
                // The same stream with every wave ended: the reasons to give up are its.
                let mut closed = w.clone();
                for &pl in live.iter().chain(&forever) {
                    emit(&mut closed, we, pl, next(3));
                }
                // Every wave ended, or some left live (a few, or all).
                let keep = match (unend, next(3)) {
                    (false, _) => 0,
                    (true, 0) => live.len(),
                    (true, _) => next(live.len() as u64 + 1) as usize,
                };
                while live.len() > keep {
                    let pl = live.pop().unwrap();
                    emit(&mut w, we, pl, next(3));
                }
                let decode = |mut w: NibbleWriter| -> Vec<Packet> {
                    w.pad_to(32);
                    Decoder::new(w.as_bytes(), DecodeOptions::default()).collect()
                };
                let (mut packets, mut closed) = (decode(w), decode(closed));
                // A wave packet's time before the last one's.
                let waves_at: Vec<usize> = (0..packets.len())
                    .filter(|&i| matches!(packets[i].ty.kind, Kind::WaveStart | Kind::WaveEnd))
                    .collect();
                if back && waves_at.len() >= 2 {
                    let j = 1 + next(waves_at.len() as u64 - 1) as usize;
                    let before = packets[waves_at[j - 1]].time;
                    let time = before - 1 - next(3) as i64;
                    // (The closed stream's first packets are the same.)
                    packets[waves_at[j]].time = time;
                    closed[waves_at[j]].time = time;
                }
                // The analysis, and whether a token went to a live wave (before those never
                // ended are dropped with theirs); with the token places' waves queued, the
                // queue and the tokens attributed.
                let run_queued = |packets: &[Packet],
                                  record_free: bool,
                                  queue_token_waves: bool| {
                    let mut a = Analyzer::new(AnalyzeOptions {
                        record_free,
                        queue_token_waves,
                        ..Default::default()
                    });
                    for p in packets {
                        a.packet(p);
                    }
                    let tokens = !a.raw_tokens().is_empty();
                    let (queued, attributed) = (a.queued_waves().to_vec(), a.attributed_tokens());
                    ((a.finish(), tokens), queued, attributed)
                };
                let run = |packets: &[Packet], record_free: bool| {
                    run_queued(packets, record_free, false).0
                };
                let ((rec, live_token), (free, _)) = (run(&packets, false), run(&packets, true));
                let whole = run(&closed, false).0;
                let ((queue, _), queued, attributed) = run_queued(&packets, true, true);
                let what = format!("{} case {case}", ws.name);
                // Everything of an analysis but its wave records.
                let rest = |a: &BlobAnalysis| {
                    serde_json::to_string(&BlobAnalysis {
                        waves: Vec::new(),
                        ..a.clone()
                    })
                    .unwrap()
                };
                let count = |k: &str| rec.wave_anomalies.get(k).copied().unwrap_or(0);
                // Wave times going back: a WAVESTART's, or a WAVEEND's of a live place, before
                // the last such.
                let back = {
                    let mut live = std::collections::HashSet::new();
                    let mut last = i64::MIN;
                    let mut back = false;
                    for p in &packets {
                        let place = names.map(|n| p.ty.field_named(n).map_or(0, |f| f.get(p.raw)));
                        let event = match p.ty.kind {
                            Kind::WaveStart => {
                                live.insert(place);
                                true
                            }
                            Kind::WaveEnd => live.remove(&place),
                            _ => false,
                        };
                        if event {
                            back |= p.time < last;
                            last = p.time;
                        }
                    }
                    back
                };
                // (Times going back give up the sums of the waves that ended: with none, there
                // are none to give up.)
                let reasons = [
                    count("start_while_live") > 0,
                    live_token,
                    back && !rec.waves.is_empty(),
                ];
                let exact = !reasons.iter().any(|&r| r);
                assert_eq!(free.waves_without_records.is_some(), exact, "{what}");
                // Queued: a token of a live wave is attributed as with records, a wave never
                // ended gives up (the fold took its tokens).
                let queue_exact = !(reasons[0] || back || count("start_without_end") > 0);
                assert_eq!(
                    queue.waves_without_records.is_some(),
                    queue_exact,
                    "{what} queued"
                );
                if queue_exact {
                    let want: Vec<QueuedWave> = (rec.waves.iter().enumerate())
                        .filter(|(_, w)| {
                            w.cu == 0
                                && w.sa.unwrap_or(0) == 0
                                && w.simd == AnalyzeOptions::default().traced_simd
                        })
                        .map(|(i, w)| QueuedWave {
                            index: i as u32,
                            cu: w.cu,
                            simd: w.simd,
                            wave: w.wave,
                            start: w.start,
                        })
                        .collect();
                    assert_eq!(queued, want, "{what} queued");
                    let insts: u64 = rec.waves.iter().map(|w| w.insts as u64).sum();
                    assert_eq!(attributed, insts, "{what} attributed");
                    assert_eq!(queue.tokens, rec.tokens, "{what} tokens");
                    assert_eq!(queue.wave_count(), rec.waves.len(), "{what}");
                    assert_eq!(queue.first_wave_start(), rec.first_wave_start(), "{what}");
                    assert_eq!(queue.residency, rec.residency, "{what}");
                    assert_eq!(rest(&queue), rest(&rec), "{what} queued");
                    queue_seen[0] += 1;
                    queue_seen[1] += live_token as u64;
                    queue_seen[2] += (count("token_without_live_wave") > 0) as u64;
                }
                if !exact {
                    for (s, r) in seen[2..].iter_mut().zip(reasons) {
                        *s += r as u64;
                    }
                    seen[4] -= (reasons[2] && reasons[..2].iter().any(|&r| r)) as u64;
                    continue;
                }
                assert_eq!(free.wave_count(), rec.waves.len(), "{what}");
                assert_eq!(free.first_wave_start(), rec.first_wave_start(), "{what}");
                let unended = count("start_without_end");
                match unended {
                    0 => assert_eq!(free.residency, rec.residency, "{what}"),
                    _ => {
                        assert!(rec.residency.is_none(), "{what}");
                        // Waves never ended that were live with others at a SIMD's peak.
                        let peaks = |a: &BlobAnalysis| {
                            a.residency
                                .as_ref()
                                .map(|r| r.simds.iter().map(|s| s.3).sum())
                        };
                        let lowered = peaks(&whole)
                            .zip(peaks(&free))
                            .is_some_and(|(w, f): (usize, usize)| w > f);
                        seen[5] += 1;
                        seen[6] += lowered as u64;
                    }
                }
                let (mut got, mut want) = (Achieved::default(), Achieved::default());
                occupancy::achieved_of(&mut got, 7, &free);
                occupancy::achieved_se(&mut want, 7, rec.waves.iter().map(WaveLife::of));
                assert_eq!(got, want, "{what}");
                assert_eq!(rest(&free), rest(&rec), "{what}");
                assert!(free.waves.is_empty() && free.tokens.is_empty(), "{what}");
                seen[0] += 1;
                seen[1] +=
                    (count("end_without_start") + count("token_without_live_wave") > 0) as u64;
            }
            eprintln!("{} {seen:?} queued {queue_seen:?}", ws.name);
            assert!(seen.iter().all(|&n| n >= 5), "{} {seen:?}", ws.name);
            assert!(
                queue_seen.iter().all(|&n| n >= 5),
                "{} {queue_seen:?}",
                ws.name
            );
        }
    }

    /// The decode loop's analysis ([`analyze_with`]: runs of NOPs through
    /// [`Analyzer::nop_run`]) against the plain one, a packet at a time with each NOP on its
    /// own, with and without records, on every shared capture's SE blobs as captured and with
    /// NOPs appended: the same analysis.
    #[test]
    fn runs_of_nops_are_counted_as_single_nops() {
        let mut blobs = Vec::new();
        let mut dirs = vec![testdata::shared("traces")];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let path = e.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|x| x == "sqtt") {
                    blobs.push(path);
                }
            }
        }
        blobs.sort();
        assert!(blobs.len() >= 50, "{}", blobs.len());
        let mut blobs: Vec<(String, Vec<u8>)> = blobs
            .iter()
            .map(|p| (p.display().to_string(), std::fs::read(p).unwrap()))
            .collect();
        // One stream whose LAYOUT_HEADERs switch it RDNA3 -> RDNA4 -> CDNA mid-stream (the
        // gemm's first SE of each card, NOP padding between): the decoder's loop for one
        // layout must hand over to the next's.
        let mut joined = Vec::new();
        for arch in ["gfx1100", "gfx1200", "gfx950"] {
            let gemm = testdata::shared("traces").join(arch).join("gemm_run_0");
            joined.extend(std::fs::read(gemm.join("kern0_se0.sqtt")).unwrap());
            joined.extend([0u8; 32]);
        }
        let headers = |a: &BlobAnalysis| a.packet_counts.get("LAYOUT_HEADER").copied();
        let whole = analyze_with(&joined, None, AnalyzeOptions::default()).unwrap();
        assert_eq!(
            (headers(&whole), whole.layout),
            (Some(3), Some(Layout::Cdna))
        );
        assert!(whole.packet_counts.get("WAVESTART").copied().unwrap_or(0) > 0);
        blobs.push(("gfx1100+gfx1200+gfx950 gemm se0".into(), joined));
        let mut nops = 0u64;
        for (path, blob) in &blobs {
            let mut padded = blob.clone();
            padded.resize(blob.len() + 4096, 0);
            for (blob, record_free) in [(blob, false), (blob, true), (&padded, true)] {
                let opts = AnalyzeOptions {
                    record_free,
                    ..Default::default()
                };
                let Ok(got) = analyze_with(blob, None, opts) else {
                    continue;
                };
                let mut a = Analyzer::new(opts);
                for p in Decoder::new(blob, opts.decode) {
                    a.packet(&p);
                }
                let mut want = a.finish();
                // What `analyze_hooked` adds from the decoder.
                (want.decoded_nibbles, want.blob_nibbles, want.layout) =
                    (got.decoded_nibbles, got.blob_nibbles, got.layout);
                (want.warnings, want.tail_packets, want.cut_packet) =
                    (got.warnings.clone(), got.tail_packets, got.cut_packet);
                let what = format!("{path} record_free {record_free}");
                let json = |a: &BlobAnalysis| serde_json::to_string(a).unwrap();
                assert_eq!(json(&got), json(&want), "{what}");
                assert_eq!(got.tokens, want.tokens, "{what}");
                assert_eq!(got.residency, want.residency, "{what}");
                assert_eq!(
                    got.waves_without_records, want.waves_without_records,
                    "{what}"
                );
                nops += got.packet_counts.get("NOP").copied().unwrap_or(0);
            }
        }
        assert!(nops > 10_000, "{nops}");
    }

    /// Without records, a wave at a place outside the direct table gives up (no type of
    /// today's tables has one: here WAVESTART and WAVEEND are read through their fields, with
    /// a CU number of 12 bits); an end there is one without a live wave, as with records; and
    /// waves at direct places read through such a type are exact.
    #[test]
    fn record_free_gives_up_outside_the_direct_table() {
        use super::super::packets::{Bits, RDNA3_TABLE};
        let (ws, we) = (
            RDNA3_TABLE.by_name("WAVESTART").unwrap(),
            RDNA3_TABLE.by_name("WAVEEND").unwrap(),
        );
        let index = |ty: &PacketType| RDNA3_TABLE.types.iter().position(|t| t.name == ty.name);
        let (si, ei) = (index(ws).unwrap(), index(we).unwrap());
        // A place in the low 20 bits of both types: wave, SIMD, then a CU of 12 bits.
        let bits = WaveBits {
            wave: Bits { lo: 0, mask: 31 },
            simd: Bits { lo: 5, mask: 3 },
            unit: Bits { lo: 8, mask: 0xfff },
            ..Default::default()
        };
        let mut wb = *wave_bits();
        let mut wf = *wave_fast(false);
        for i in [si, ei] {
            wb[Layout::Rdna3 as usize][i] = bits;
            wf[Layout::Rdna3 as usize][i] = WaveFast::default();
        }
        let (wb, wf): (&'static WaveBitsTable, &'static WaveFastTable) =
            (Box::leak(Box::new(wb)), Box::leak(Box::new(wf)));
        let mut w = super::super::encode::NibbleWriter::new();
        let lh = RDNA3_TABLE.by_name("LAYOUT_HEADER").unwrap();
        w.push(
            super::super::encode::assemble(lh, &[("layout", 3)]).unwrap(),
            16,
        );
        let header = Decoder::new(w.as_bytes(), DecodeOptions::default())
            .next()
            .unwrap();
        let mut next = crate::analysis::test_rng(0x0ff7_ab1e);
        let (mut exact, mut given_up) = (0, 0);
        for case in 0..300 {
            let far = next(3) == 0;
            let mut packets = Vec::new();
            let mut live: Vec<u64> = Vec::new();
            let mut time = 0i64;
            let mut push = |ty: &'static PacketType, i: usize, raw: u64, time: i64| {
                packets.push(Packet {
                    offset: 16 + 5 * packets.len() as u64,
                    time,
                    raw,
                    ty,
                    nibbles: 5,
                    index: i as u8,
                    layout: Layout::Rdna3,
                })
            };
            for _ in 0..next(200) {
                time += next(3) as i64;
                let cu = match next(10) {
                    0 => 256 + next(3000),
                    _ => next(4),
                };
                let place = next(32) | next(4) << 5 | cu << 8;
                if next(2) == 0 {
                    if live.contains(&place) || (cu >= 256 && !far) {
                        continue;
                    }
                    push(ws, si, place, time);
                    live.push(place);
                } else if !live.is_empty() && next(4) != 0 {
                    let i = next(live.len() as u64) as usize;
                    push(we, ei, live.swap_remove(i), time);
                } else if !live.contains(&place) {
                    push(we, ei, place, time);
                }
            }
            while let Some(place) = live.pop() {
                push(we, ei, place, time + 1);
            }
            let run = |record_free: bool| {
                let mut a = Analyzer::new(AnalyzeOptions {
                    record_free,
                    ..Default::default()
                });
                a.packet(&header);
                (a.wave_bits, a.wave_fast) = (wb, wf);
                for p in &packets {
                    a.packet(p);
                }
                a.finish()
            };
            let (rec, free) = (run(false), run(true));
            assert_eq!(rec.layout_header.map(|h| h.layout), Some(3));
            let started_far = rec.waves.iter().any(|w| w.cu >= 256);
            assert_eq!(
                free.waves_without_records.is_none(),
                started_far,
                "case {case}"
            );
            if started_far {
                given_up += 1;
                continue;
            }
            exact += 1;
            assert_eq!(free.wave_count(), rec.waves.len(), "case {case}");
            assert_eq!(free.residency, rec.residency, "case {case}");
            assert_eq!(free.wave_anomalies, rec.wave_anomalies, "case {case}");
            assert_eq!(free.wave_ends, rec.wave_ends, "case {case}");
        }
        assert!(exact > 100 && given_up > 50, "{exact} {given_up}");
    }

    /// Millions of waves per SE at real sizes: a wave record stays within 48 bytes.
    #[test]
    fn wave_record_is_compact() {
        assert!(
            std::mem::size_of::<Wave>() <= 48,
            "{}",
            std::mem::size_of::<Wave>()
        );
        assert!(
            std::mem::size_of::<InstToken>() <= 24,
            "{}",
            std::mem::size_of::<InstToken>()
        );
    }
}
