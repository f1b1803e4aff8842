//! Instruction tokens mapped to program counters: which instruction of the traced kernel each
//! INST / VALUINST / IMMEDIATE token stands for, by walking the program from its entry the way
//! the wave executed it (`docs/sqtt-format.md` §7.3, the rule tinygrad's `map_insts` uses).
//!
//! Per wave slot on the traced unit (CU 0, SIMD 0), the PC starts at the program's first
//! instruction at WAVESTART. Each instruction token takes the instruction at the PC, after
//! skipping the instructions that never produce a token (`s_delay_alu`, `s_wait_alu`,
//! `s_barrier_wait`); a branch must be matched by a JUMP / JUMP_NO token and moves the PC by its
//! offset when taken. WAVEEND maps to the `s_endpgm` at the final PC.
//!
//! gfx9 / CDNA streams are walked by their CDNA_ISSUE packets instead (see [`map_cdna`]): every
//! instruction a wave issues on CU 0 shows there, on each of the four SIMDs.
//!
//! Each mapped instruction also carries AMD's reading of it (rocprof-trace-decoder's
//! `time` / `stall` / `duration`), derived from the same tokens; `docs/conformance.md` lists
//! where the two decoders still differ.

use super::decoder::{DecodeOptions, Decoder, Packet};
use super::inst_op::{op_info_in, op_name, OpInfo};
use super::packets::{Kind, Layout, Role};
use crate::isa::{self, CodeObject, Instruction};
use std::collections::{BTreeMap, HashMap};

/// One mapped instruction.
#[derive(Debug, Clone)]
pub struct MappedInst {
    /// Time of the token (shader cycles from the blob's start).
    pub time: i64,
    /// ELF virtual address of the instruction (add the program's load base for the GPU VA).
    pub pc: u64,
    /// The wave slot, and the index of the wave in [`super::BlobAnalysis::waves`] when known.
    pub slot: u8,
    pub wave: Option<u32>,
    /// The packet class of the token (`INST`, `VALUINST`, `IMMEDIATE`, `IMMEDIATE_MASK`,
    /// `WAVEEND` for the final `s_endpgm`).
    pub token: &'static str,
    /// INST tokens: the op (a name or number, no string kept per token).
    pub op: Option<super::OpName>,
    pub inst: Instruction,
    /// Nibble offset of the token.
    pub offset: u64,
    /// AMD's `time`: when the wave first tried to issue the instruction, on AMD's timeline of
    /// the blob (equal to ours on RDNA; on CDNA AMD also counts bit 4 of every non-MISC
    /// packet as 4 cycles, see [`cdna_amd_clock`]).
    pub issue_time: i64,
    /// AMD's `stall`: `issue_time + stall` is the successful issue.
    pub stall: i64,
    /// AMD's `duration`: stall + execution (gfx10+) or stall + issue (gfx9); for the final
    /// `s_endpgm` the drain until the wave's end.
    pub duration: i64,
}

/// One instruction as the RDNA walk ([`RdnaWalk::packet`]) hands it on: the token's packet and
/// the instruction by reference, so a caller that keeps only the PC and AMD's times builds no
/// [`MappedInst`] per token ([`WalkInst::to_mapped`] makes one).
pub(crate) struct WalkInst<'a> {
    pub p: &'a Packet,
    pub pc: u64,
    pub slot: u8,
    pub wave: Option<u32>,
    pub op: Option<super::OpName>,
    pub inst: &'a Instruction,
    pub issue_time: i64,
    pub stall: i64,
    pub duration: i64,
}

/// What [`RdnaWalk::packet`] hands each mapped instruction to. A type of the caller's with an
/// `#[inline(always)]` method is inlined into the walk's per-token code, where a closure
/// through the walk's layers was a call per token with the instruction record in memory.
pub(crate) trait WalkSink {
    fn inst(&mut self, m: &WalkInst);
}

/// A closure as a [`WalkSink`] (the paths that are not per-token hot).
pub(crate) struct FnSink<F>(pub F);

impl<F: FnMut(&WalkInst)> WalkSink for FnSink<F> {
    #[inline]
    fn inst(&mut self, m: &WalkInst) {
        (self.0)(m)
    }
}

impl WalkInst<'_> {
    pub(crate) fn to_mapped(&self) -> MappedInst {
        MappedInst {
            time: self.p.time,
            pc: self.pc,
            slot: self.slot,
            wave: self.wave,
            token: self.p.ty.name,
            op: self.op,
            inst: *self.inst,
            offset: self.p.offset,
            issue_time: self.issue_time,
            stall: self.stall,
            duration: self.duration,
        }
    }
}

/// Where mapping lost track: the first inconsistency (a wave the program walk could not
/// follow, a token without a live wave) and, on RDNA, how many there were in all. The walk
/// drops what it cannot follow and goes on with the other waves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("nibble offset {offset}: {message}")]
pub struct MapError {
    pub offset: u64,
    pub message: String,
}

/// The result of mapping one blob: every instruction of the waves the walk could follow (a
/// wave it lost track of, up to there).
#[derive(Debug, Clone, Default)]
pub struct InstMap {
    pub insts: Vec<MappedInst>,
    pub error: Option<MapError>,
}

impl InstMap {
    /// Mapped instructions grouped by wave slot, in stream order.
    pub fn by_slot(&self) -> BTreeMap<u8, Vec<&MappedInst>> {
        let mut m: BTreeMap<u8, Vec<&MappedInst>> = BTreeMap::new();
        for i in &self.insts {
            m.entry(i.slot).or_default().push(i);
        }
        m
    }
}

/// The program's instructions by address: a dense slot per dword of the text (instructions are
/// dword aligned), so the walk looks one up per token without hashing.
struct Program {
    base: u64,
    insts: Vec<Option<Instruction>>,
    /// Per slot: what the walk asks of its instruction ([`SKIPPED`], [`BRANCH`],
    /// [`AMD_IMMEDIATE`]), worked out once rather than from its mnemonic per token.
    flags: Vec<u8>,
    entry: u64,
}

/// An instruction that never produces a token (`s_delay_alu`, `s_wait_alu`, `s_barrier_wait`).
const SKIPPED: u8 = 1;
/// s_branch / s_cbranch_*.
const BRANCH: u8 = 2;
/// An internal instruction AMD's decoder files as IMMED ([`amd_immediate`]).
const AMD_IMMEDIATE: u8 = 4;

fn flags_of(i: &Instruction) -> u8 {
    (skipped(i) as u8 * SKIPPED)
        | (i.is_branch() as u8 * BRANCH)
        | (amd_immediate(i) as u8 * AMD_IMMEDIATE)
}

impl Program {
    fn new(code: &CodeObject) -> Self {
        let base = code.text_addr;
        let mut insts = vec![None; code.text.len() / 4 + 1];
        for line in isa::disassemble(&code.text, code.text_addr, code.target) {
            if let Ok(i) = line.insn {
                if let Some(slot) = line
                    .addr
                    .checked_sub(base)
                    .filter(|d| d % 4 == 0)
                    .and_then(|d| insts.get_mut((d / 4) as usize))
                {
                    *slot = Some(i);
                }
            }
        }
        let flags = insts
            .iter()
            .map(|i| i.as_ref().map_or(0, flags_of))
            .collect();
        Program {
            base,
            insts,
            flags,
            entry: code.text_addr,
        }
    }

    /// The instruction at `pc` and its [`flags_of`].
    #[inline(always)]
    fn get_flagged(&self, pc: u64) -> Option<(&Instruction, u8)> {
        let d = pc.checked_sub(self.base)?;
        if d % 4 != 0 {
            return None;
        }
        let i = (d / 4) as usize;
        Some((self.insts.get(i)?.as_ref()?, *self.flags.get(i)?))
    }

    #[inline]
    fn get(&self, pc: u64) -> Option<Instruction> {
        let d = pc.checked_sub(self.base)?;
        if d % 4 != 0 {
            return None;
        }
        *self.insts.get((d / 4) as usize)?
    }
}

/// The index in `analysis.waves` of the wave whose WAVESTART is at nibble `offset` (waves are
/// in WAVESTART order, so by binary search).
fn wave_at(analysis: Option<&super::BlobAnalysis>, offset: u64) -> Option<u32> {
    let waves = &analysis?.waves;
    let i = waves.partition_point(|w| w.start_offset < offset);
    (waves.get(i)?.start_offset == offset).then_some(i as u32)
}

fn skipped(i: &Instruction) -> bool {
    matches!(
        i.mnemonic(),
        "s_delay_alu" | "s_wait_alu" | "s_barrier_wait"
    )
}

/// Map the instruction tokens of one SE blob onto the program.
///
/// `analysis`, when given, links each mapped instruction to its wave (by the WAVESTART's
/// nibble offset).
pub fn map_insts(
    blob: &[u8],
    code: &CodeObject,
    analysis: Option<&super::BlobAnalysis>,
    opts: DecodeOptions,
) -> InstMap {
    let mut out = InstMap::default();
    out.error = map_insts_each(blob, code, analysis, opts, &mut |m| out.insts.push(m));
    out
}

/// [`map_insts`] streamed: `emit` gets every mapped instruction (AMD's times filled in) in
/// stream order, with no list built; returns where mapping lost track, if it did. gfx9/CDNA
/// instructions are assembled per wave ([`map_cdna`]) and passed on once mapped.
pub fn map_insts_each(
    blob: &[u8],
    code: &CodeObject,
    analysis: Option<&super::BlobAnalysis>,
    opts: DecodeOptions,
    emit: &mut dyn FnMut(MappedInst),
) -> Option<MapError> {
    if walks_cdna(blob, code, opts) {
        let program = Program::new(code);
        let m = map_cdna(blob, &program, analysis, opts);
        m.insts.into_iter().for_each(&mut *emit);
        return m.error;
    }
    let program = Program::new(code);
    let mut walk = RdnaWalk::new(program);
    for p in Decoder::new(blob, opts) {
        walk.packet(
            &p,
            || wave_at(analysis, p.offset),
            &mut FnSink(|m: &WalkInst| emit(m.to_mapped())),
        );
    }
    walk.error()
}

/// Whether [`map_insts_each`] walks `blob` as gfx9/CDNA (by its issue packets) rather than
/// packet by packet ([`RdnaWalk`]).
pub(crate) fn walks_cdna(blob: &[u8], code: &CodeObject, opts: DecodeOptions) -> bool {
    code.target.major == 9
        || Decoder::new(blob, opts)
            .take(2)
            .any(|p| p.layout == Layout::Cdna)
}

/// Per wave slot of the traced unit: the wave's current PC and its index, while it is live.
type LiveSlots = [Option<(u64, Option<u32>)>; 256];

/// The RDNA program walk of [`map_insts_each`], one packet at a time, so a pass that decodes
/// the blob for something else (the per-blob analysis) can map it in the same pass.
pub(crate) struct RdnaWalk {
    program: Program,
    /// Per slot: current PC and the wave index.
    live: Box<LiveSlots>,
    amd: AmdRdna,
    /// The first inconsistency, the waves lost (the walk could not follow them: their
    /// instructions from there on are not mapped) and the tokens that came for no live wave.
    first: Option<MapError>,
    lost: u64,
    strays: u64,
}

impl RdnaWalk {
    pub(crate) fn new_for(code: &CodeObject) -> Self {
        RdnaWalk::new(Program::new(code))
    }

    fn new(program: Program) -> Self {
        RdnaWalk {
            program,
            live: Box::new([None; 256]),
            amd: AmdRdna::default(),
            first: None,
            lost: 0,
            strays: 0,
        }
    }

    /// What the walk could not follow, if anything ([`MapError`]).
    pub(crate) fn error(&self) -> Option<MapError> {
        let first = self.first.as_ref()?;
        let n = |k: u64, what: &str| format!("{k} {what}{}", if k == 1 { "" } else { "s" });
        Some(MapError {
            offset: first.offset,
            message: format!(
                "{} (in all: {} lost, {} without a live wave)",
                first.message,
                n(self.lost, "wave"),
                n(self.strays, "token")
            ),
        })
    }

    /// The instruction at `pc` of the program, if one was disassembled there.
    pub(crate) fn inst_at(&self, pc: u64) -> Option<Instruction> {
        self.program.get(pc)
    }

    /// Whether the walk looks at packets of this kind at all (the others pass unchanged).
    #[inline]
    pub(crate) fn wants(kind: Kind) -> bool {
        matches!(
            kind,
            Kind::WaveStart
                | Kind::WaveEnd
                | Kind::ImmediateMask
                | Kind::Inst
                | Kind::ValuInst
                | Kind::Immediate
        )
    }

    /// Whether `p` is of the traced unit, CU 0 and SIMD 0 (a packet without those fields is):
    /// the only packets [`RdnaWalk::packet_traced`] looks at.
    #[inline(always)]
    pub(crate) fn traced(p: &Packet) -> bool {
        Self::traced_in(super::packets::places(), p)
    }

    /// [`RdnaWalk::traced`] with the places table at hand (a per-packet caller holds it).
    #[inline(always)]
    pub(crate) fn traced_in(places: &super::packets::PlacesTable, p: &Packet) -> bool {
        places[p.layout as usize][p.index as usize & 31].on_unit_zero(p.raw)
    }

    /// One packet of the stream, in order: `wave` gives the index of the wave a WAVESTART
    /// opens; every instruction the packet maps goes to `sink` (AMD's times filled in). What
    /// the walk cannot follow is recorded ([`RdnaWalk::error`]) and the walk goes on: a wave
    /// whose instructions leave the program (or a WAVESTART in its slot while it is live) is
    /// dropped, a token for no live wave is skipped.
    #[inline]
    pub(crate) fn packet(
        &mut self,
        p: &Packet,
        wave: impl FnOnce() -> Option<u32>,
        sink: &mut impl WalkSink,
    ) {
        if Self::wants(p.ty.kind) && Self::traced(p) {
            self.packet_traced(p, p.places(), wave, sink);
        }
    }

    /// [`RdnaWalk::packet`] of a packet its caller found wanted ([`RdnaWalk::wants`]) and of
    /// the traced unit ([`RdnaWalk::traced`]), whose fields sit at `pl` (its places, which
    /// the caller looked up for that test: no second look-up through the lazy table).
    #[inline]
    pub(crate) fn packet_traced(
        &mut self,
        p: &Packet,
        pl: &super::packets::Places,
        wave: impl FnOnce() -> Option<u32>,
        sink: &mut impl WalkSink,
    ) {
        let layout = p.layout;
        // (slot, why, whether its wave is lost): rare, so a list only when there is one.
        let mut troubles: Vec<(u8, String, bool)> = Vec::new();
        let amd = &mut self.amd;
        let program = &self.program;
        let live = &mut *self.live;
        let slot = pl.wave.get(p.raw) as u8;
        match p.ty.kind {
            Kind::WaveStart => {
                if live[slot as usize].is_some() {
                    troubles.push((slot, already_live(slot), true));
                }
                live[slot as usize] = Some((program.entry, wave()));
            }
            Kind::WaveEnd if layout != Layout::Cdna => match live[slot as usize].take() {
                None => {
                    troubles.push((slot, not_live(slot), false));
                }
                Some((pc, wave)) => match program.get_flagged(pc) {
                    None => troubles.push((slot, ends_outside(slot, pc), true)),
                    Some((inst, _)) => emit(
                        amd,
                        sink,
                        WalkInst {
                            p,
                            pc,
                            slot,
                            wave,
                            op: None,
                            inst,
                            issue_time: p.time,
                            stall: 0,
                            duration: 0,
                        },
                        AmdHow::End,
                    ),
                },
            },
            Kind::ImmediateMask => {
                let mask = pl.mask.get(p.raw);
                for s in 0..16u8 {
                    if mask & (1 << s) == 0 {
                        continue;
                    }
                    if let Err(e) = step(program, live, amd, sink, p, s, None) {
                        troubles.push((s, e.message, e.lost));
                    }
                }
            }
            Kind::Inst | Kind::ValuInst | Kind::Immediate if layout != Layout::Cdna => {
                let mut spare = None;
                let op = pl
                    .op
                    .opt(p.raw)
                    .map(|v| op_info_in(layout, v as u32, &mut spare));
                if op.is_some_and(|o| o.other_simd) {
                    return;
                }
                if let Err(e) = step(program, live, amd, sink, p, slot, op) {
                    troubles.push((slot, e.message, e.lost));
                }
            }
            _ => {}
        }
        if !troubles.is_empty() {
            self.troubles(p, troubles);
        }
    }

    /// [`RdnaWalk::packet_traced`]'s troubles at `p` (rare: out of line, so the per-packet
    /// code neither walks nor drops the list).
    #[cold]
    #[inline(never)]
    fn troubles(&mut self, p: &Packet, troubles: Vec<(u8, String, bool)>) {
        for (slot, message, lost) in troubles {
            if lost {
                // A wave dropped at WAVESTART is replaced by the new one, not freed.
                if p.ty.kind != Kind::WaveStart {
                    self.live[slot as usize] = None;
                }
                self.amd.forget(slot);
                self.lost += 1;
            } else {
                self.strays += 1;
            }
            self.first.get_or_insert(MapError {
                offset: p.offset,
                message,
            });
        }
    }
}

/// Internal instructions AMD's decoder files as IMMED (0.1.6 decides by the text: s_waitcnt,
/// s_nop, s_clause, s_barrier, ... every SOPP that is not a branch, message or s_endpgm); the
/// IMMEDIATE and IMMEDIATE_MASK tokens are IMMED whatever their instruction.
fn amd_immediate(i: &Instruction) -> bool {
    let m = i.mnemonic();
    i.is_sopp()
        && !i.is_branch()
        && !m.starts_with("s_endpgm")
        && !m.starts_with("s_sendmsg")
        && !m.starts_with("s_call")
        && !m.starts_with("s_trap")
}

/// How AMD reads a mapped instruction ([`AmdRdna::apply`]).
#[derive(Clone, Copy)]
enum AmdHow {
    /// The final `s_endpgm`, at WAVEEND.
    End,
    /// An internal instruction (IMMED).
    Immediate,
    /// Any other, busy for this many cycles: the cycle count at the end of the op's name
    /// (`VALUB_2`, `SGMEM_RD_2`, `LDS_WR_2`), else 1 ([`super::inst_op::OpInfo::cycles`]).
    Exec(i64),
}

/// AMD's time / stall / duration of RDNA instructions, per wave (a wave's list ends at its
/// WAVEEND):
/// - internal instructions (s_waitcnt, s_barrier, ...) are dated when the wave's previous
///   instruction finished; the wait until our token is their stall;
/// - the final `s_endpgm` likewise starts there and lasts until the wave's end;
/// - any other instruction issues at its token (AMD sometimes counts a few cycles before a
///   VALU's token as stall, by a rule not derived yet: `docs/conformance.md`).
#[derive(Default)]
struct AmdRdna {
    /// Per slot: (issue time, duration) of the wave's previous instruction.
    prev: Vec<Option<(i64, i64)>>,
}

impl AmdRdna {
    /// Forgets `slot`'s previous instruction (its wave was given up).
    fn forget(&mut self, slot: u8) {
        if let Some(p) = self.prev.get_mut(slot as usize) {
            *p = None;
        }
    }

    /// AMD's reading (issue time, stall, duration) of the next mapped instruction of `slot`
    /// in stream order, whose token came at `time`.
    #[inline(always)]
    fn times(&mut self, slot: u8, time: i64, how: AmdHow) -> (i64, i64, i64) {
        if self.prev.is_empty() {
            self.prev = vec![None; 256];
        }
        let prev = &mut self.prev[slot as usize];
        let ready = prev.map(|(t, d)| t + d);
        let end = matches!(how, AmdHow::End);
        let start = match (ready, how) {
            (Some(r), AmdHow::End | AmdHow::Immediate) => r.min(time),
            _ => time,
        };
        let stall = if end { 0 } else { time - start };
        let duration = match how {
            AmdHow::End => time - start,
            AmdHow::Immediate => stall + 1,
            AmdHow::Exec(cycles) => stall + cycles,
        };
        *prev = if end { None } else { Some((start, duration)) };
        (start, stall, duration)
    }
}

/// Why [`step`] could not map a token: `lost` when the wave's walk left the program (the
/// wave is given up), else the token came for no live wave.
struct StepError {
    message: String,
    lost: bool,
}

impl StepError {
    fn lost(message: String) -> StepError {
        StepError {
            message,
            lost: true,
        }
    }
}

// The walk's troubles, worded out of line: the per-packet code keeps no formatting.

#[cold]
#[inline(never)]
fn already_live(slot: u8) -> String {
    format!("WAVESTART for slot {slot}, which is already live")
}

#[cold]
#[inline(never)]
fn not_live(slot: u8) -> String {
    format!("WAVEEND for slot {slot}, which is not live")
}

#[cold]
#[inline(never)]
fn ends_outside(slot: u8, pc: u64) -> String {
    format!("slot {slot} ends at {pc:#x}, outside the program")
}

#[cold]
#[inline(never)]
fn no_live_wave(token: &str, slot: u8) -> StepError {
    StepError {
        message: format!("{token} token for slot {slot}, which has no live wave"),
        lost: false,
    }
}

#[cold]
#[inline(never)]
fn outside(slot: u8, pc: u64) -> StepError {
    StepError::lost(format!("slot {slot} reached {pc:#x}, outside the program"))
}

#[cold]
#[inline(never)]
fn unmatched_branch(inst: &Instruction, pc: u64, token: &str) -> StepError {
    StepError::lost(format!(
        "{} at {pc:#x} must be matched by a JUMP token, got {token}",
        inst.mnemonic()
    ))
}

/// Hands `m` to `sink` with AMD's times ([`AmdRdna::times`]) filled in.
#[inline(always)]
fn emit(amd: &mut AmdRdna, sink: &mut impl WalkSink, mut m: WalkInst, how: AmdHow) {
    (m.issue_time, m.stall, m.duration) = amd.times(m.slot, m.p.time, how);
    sink.inst(&m);
}

/// Take the instruction at `slot`'s PC for a token, and advance the PC. Inlined with AMD's
/// times and the caller's sink into the packet's walk: as calls, each token's instruction
/// record went through memory twice (a few percent of an itraced SE's mapped pass).
#[inline(always)]
fn step(
    program: &Program,
    live: &mut LiveSlots,
    amd: &mut AmdRdna,
    sink: &mut impl WalkSink,
    p: &Packet,
    slot: u8,
    op: Option<&OpInfo>,
) -> Result<(), StepError> {
    let Some((pc, wave)) = live[slot as usize].as_mut() else {
        return Err(no_live_wave(p.ty.name, slot));
    };
    let (mut inst, mut flags) = program.get_flagged(*pc).ok_or_else(|| outside(slot, *pc))?;
    while flags & SKIPPED != 0 {
        *pc += inst.len() as u64;
        (inst, flags) = program.get_flagged(*pc).ok_or_else(|| outside(slot, *pc))?;
    }
    let jump = op.filter(|o| o.jump);
    if flags & BRANCH != 0 && jump.is_none() {
        return Err(unmatched_branch(inst, *pc, p.ty.name));
    }
    let at = *pc;
    let taken = jump.is_some_and(|o| o.jump_taken);
    let offset = if taken {
        inst.simm16().unwrap_or(0) as i64 * 4
    } else {
        0
    };
    *pc = (at as i64 + inst.len() as i64 + offset) as u64;
    let how = if matches!(p.ty.kind, Kind::Immediate | Kind::ImmediateMask)
        || flags & AMD_IMMEDIATE != 0
    {
        AmdHow::Immediate
    } else {
        AmdHow::Exec(op.map_or(1, |o| o.cycles))
    };
    emit(
        amd,
        sink,
        WalkInst {
            p,
            pc: at,
            slot,
            wave: *wave,
            op: op.map(|o| o.name),
            inst,
            issue_time: p.time,
            stall: 0,
            duration: 0,
        },
        how,
    );
    Ok(())
}

/// AMD's timeline of a CDNA blob, packet by packet: ours (tinygrad's rule: CDNA_MISC deltas,
/// CDNA_TIMESTAMP re-anchoring) plus 4 cycles for every other packet with bit 4 set. AMD's
/// decoder reads that bit as one more 4-cycle tick; with it, its wave start and end times on
/// the gfx950 captures are ours to the cycle. Re-anchoring keeps the difference the first
/// timestamp saw.
struct CdnaAmdClock {
    base: i64,
    since: i64,
    anchored: bool,
}

impl CdnaAmdClock {
    fn new() -> Self {
        CdnaAmdClock {
            base: 0,
            since: 0,
            anchored: false,
        }
    }

    /// AMD's time of packet `p` (call once per packet, in stream order).
    fn time(&mut self, p: &Packet) -> i64 {
        match p.ty.kind {
            Kind::CdnaMisc | Kind::LayoutHeader => {}
            Kind::CdnaTimestamp if (p.raw >> 4) & 0xfff == 0 => {
                if !self.anchored {
                    self.anchored = true;
                    self.base = self.since;
                }
                self.since = 0;
            }
            _ => {
                if p.raw & 0x10 != 0 {
                    self.since += 4;
                }
            }
        }
        p.time + self.base + self.since
    }
}

/// See [`CdnaAmdClock`]; exposed for tests and tools that line our CDNA times up with AMD's.
pub fn cdna_amd_clock(blob: &[u8], opts: DecodeOptions) -> Vec<(u64, i64)> {
    let mut c = CdnaAmdClock::new();
    Decoder::new(blob, opts)
        .map(|p| (p.offset, c.time(&p)))
        .collect()
}

/// What one traced CDNA wave did, in stream order.
#[derive(Default)]
struct CdnaWave {
    wave: Option<u32>,
    slot: u8,
    /// CDNA_ISSUE entries for the wave: (our time, AMD time, value, offset). Value 1: the wave
    /// tried and stalled; 2: it issued an instruction; 3: it issued an internal one (s_waitcnt,
    /// s_nop: AMD's IMMED).
    issues: Vec<(i64, i64, u8, u64)>,
    /// CDNA_INST tokens: (op, offset), one per issued non-internal instruction, in order; the
    /// branch ones say taken (JUMP) or not (NEXT).
    insts: Vec<(u32, u64)>,
    /// WAVEEND: (our time, AMD time, offset).
    end: Option<(i64, i64, u64)>,
}

/// Cycles one issue slot takes on gfx9 (AMD's `duration` of an instruction that did not stall).
const CDNA_ISSUE_CYCLES: i64 = 4;

/// gfx9 / CDNA: the traced unit is CU 0 with all four SIMDs; each wave is walked by its
/// CDNA_ISSUE entries (the instruction at the PC issues at each entry of value 2 or 3), and the
/// CDNA_INST tokens, one per non-internal instruction in order, say where branches went.
fn map_cdna(
    blob: &[u8],
    program: &Program,
    analysis: Option<&super::BlobAnalysis>,
    opts: DecodeOptions,
) -> InstMap {
    let wave_by_start: HashMap<u64, u32> = analysis
        .map(|a| {
            a.waves
                .iter()
                .enumerate()
                .map(|(i, w)| (w.start_offset, i as u32))
                .collect()
        })
        .unwrap_or_default();
    let mut out = InstMap::default();
    let mut clock = CdnaAmdClock::new();
    let mut waves: Vec<CdnaWave> = Vec::new();
    // (simd, slot) -> index into `waves` of the live wave.
    let mut live: HashMap<(u8, u8), usize> = HashMap::new();
    for p in Decoder::new(blob, opts) {
        let amd = clock.time(&p);
        let simd = p.get(Role::Simd).unwrap_or(0) as u8;
        match p.ty.kind {
            // The traced unit: CU 0 of shader array 0.
            Kind::WaveStart | Kind::WaveEnd if p.cu() != 0 || p.get(Role::Sa).unwrap_or(0) != 0 => {
            }
            Kind::WaveStart => {
                let slot = p.get(Role::Wave).unwrap_or(0) as u8;
                // The wave live in that slot is given up: it keeps what it issued so far.
                if live.contains_key(&(simd, slot)) && out.error.is_none() {
                    out.error = Some(MapError {
                        offset: p.offset,
                        message: format!(
                            "WAVESTART for simd {simd} slot {slot}, which is already live"
                        ),
                    });
                }
                live.insert((simd, slot), waves.len());
                waves.push(CdnaWave {
                    wave: wave_by_start.get(&p.offset).copied(),
                    slot,
                    ..Default::default()
                });
            }
            Kind::WaveEnd => {
                let slot = p.get(Role::Wave).unwrap_or(0) as u8;
                if let Some(w) = live.remove(&(simd, slot)) {
                    waves[w].end = Some((p.time, amd, p.offset));
                }
            }
            Kind::CdnaIssue => {
                for slot in 0..10u8 {
                    let v = ((p.raw >> (8 + 2 * slot)) & 3) as u8;
                    if v == 0 {
                        continue;
                    }
                    if let Some(&w) = live.get(&(simd, slot)) {
                        waves[w].issues.push((p.time, amd, v, p.offset));
                    }
                }
            }
            Kind::Inst => {
                let slot = p.get(Role::Wave).unwrap_or(0) as u8;
                if let Some(&w) = live.get(&(simd, slot)) {
                    let op = p.get(Role::Op).unwrap_or(0) as u32;
                    waves[w].insts.push((op, p.offset));
                }
            }
            _ => {}
        }
    }
    for w in &waves {
        if let Err(e) = walk_cdna(program, w, w.slot, &mut out.insts) {
            if out.error.is_none() {
                out.error = Some(e);
            }
        }
    }
    out.insts.sort_by_key(|i| (i.time, i.offset));
    out
}

fn is_endpgm(i: &Instruction) -> bool {
    i.mnemonic().starts_with("s_endpgm")
}

/// One CDNA wave's instructions, in AMD's reading as well as ours.
fn walk_cdna(
    program: &Program,
    w: &CdnaWave,
    slot: u8,
    out: &mut Vec<MappedInst>,
) -> Result<(), MapError> {
    let mut pc = program.entry;
    let mut next_inst = 0usize;
    let mut attempt: Option<i64> = None;
    // AMD's (time, duration) of the previous instruction.
    let mut prev: Option<(i64, i64)> = None;
    let at = |pc: u64, offset: u64| {
        program.get(pc).ok_or_else(|| MapError {
            offset,
            message: format!("slot {slot} reached {pc:#x}, outside the program"),
        })
    };
    for (n, &(time, amd, v, offset)) in w.issues.iter().enumerate() {
        if v == 1 {
            attempt.get_or_insert(amd);
            continue;
        }
        let inst = at(pc, offset)?;
        if is_endpgm(&inst) {
            // Its issue entry; the instruction is dated by the wave's end below.
            break;
        }
        let (issue_time, stall, duration, token_offset, op) = if v == 3 {
            // AMD: an internal instruction (s_waitcnt, s_nop) starts when the previous one
            // finished and waits until the wave issues again (its own entry may come early).
            let start = prev.map_or(amd, |(t, d)| (t + d).min(amd));
            let until = w.issues.get(n + 1).map_or(amd + CDNA_ISSUE_CYCLES, |e| e.1);
            let stall = until - start;
            (start, stall, stall, offset, None)
        } else {
            let start = attempt.unwrap_or(amd);
            let stall = amd - start;
            let tok = w.insts.get(next_inst).copied();
            next_inst += 1;
            let op = tok.map(|(op, _)| op_name(Layout::Cdna, op));
            (
                start,
                stall,
                stall + CDNA_ISSUE_CYCLES,
                tok.map_or(offset, |(_, o)| o),
                op,
            )
        };
        attempt = None;
        let mut next = pc + inst.len() as u64;
        if inst.is_branch() {
            match op {
                Some(o) if o.to_string() == "JUMP" => {
                    next = (next as i64 + i64::from(inst.simm16().unwrap_or(0)) * 4) as u64;
                }
                Some(o) if o.to_string() == "NEXT" => {}
                _ => {
                    return Err(MapError {
                        offset,
                        message: format!(
                            "{} at {pc:#x} must be matched by a JUMP or NEXT token",
                            inst.mnemonic()
                        ),
                    })
                }
            }
        }
        out.push(MappedInst {
            time,
            pc,
            slot,
            wave: w.wave,
            token: if v == 3 { "CDNA_ISSUE" } else { "CDNA_INST" },
            op,
            inst,
            offset: token_offset,
            issue_time,
            stall,
            duration,
        });
        prev = Some((issue_time, duration));
        pc = next;
    }
    if let Some((time, amd, offset)) = w.end {
        let inst = at(pc, offset)?;
        let start = prev.map_or(amd, |(t, d)| (t + d).min(amd));
        out.push(MappedInst {
            time,
            pc,
            slot,
            wave: w.wave,
            token: "CDNA_WAVEEND",
            op: None,
            inst,
            // The OTHER_MSG token s_endpgm leaves, so token-based views show it too.
            offset: w.insts.get(next_inst).map_or(offset, |t| t.1),
            issue_time: start,
            stall: 0,
            duration: amd - start,
        });
    }
    Ok(())
}
