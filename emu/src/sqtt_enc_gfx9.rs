//! The gfx9 (CDNA) SQTT encoder: one SE's events become the packet stream the gfx950 writes
//! after the 8-byte layout header the runtime puts in front (`runtime::sqtt::blob_header`),
//! with the CDNA packet layouts of `traces::sqtt::packets` (the decoder's one table).
//!
//! What the hardware captures in shared/traces/gfx950 show and this writes the same way:
//! CDNA_WAVESTART (sh, cu, wave slot, simd, thread count) and CDNA_WAVEEND for every wave of
//! the SE; on an instruction-traced SE, for the waves of the traced CU (CU 0 of SH 0, all
//! SIMDs: the runtime's SQ_THREAD_TRACE_MASK), one CDNA_ISSUE per instruction (the slot's
//! 2-bit value: 2 issued, 3 an internal instruction such as `s_waitcnt`/`s_nop`) and a
//! CDNA_INST for every issued one (`op` by class: SMEM_RD, SALU_32, VALU_32 for 32-bit VALU
//! words and VALU_64 for 64-bit ones, VALU_MAI, LDS, FLAT_RD/FLAT_WR for FLAT and GLOBAL,
//! VMEM_RD/VMEM_WR for MUBUF, JUMP/NEXT for branches, OTHER_MSG for `s_endpgm` and messages).
//! Time advances through CDNA_MISC deltas (units of 4 cycles, at most 255 per packet) and a
//! CDNA_TIMESTAMP (absolute, the first one anchors) at the start and across long gaps.
//!
//! Not written (the hardware has them): CDNA_REG/REG_CS/REG_CS_PRIV register tokens,
//! CDNA_MISC types other than 0, issue-attempt (value 1) entries for stalled instructions.

use traces::sqtt::encode::{assemble, NibbleWriter};
use traces::sqtt::packets::{PacketType, CDNA_TABLE};

use super::exec_gfx9::Class9;

/// One SE's event, at an absolute shader cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ev9Kind {
    WaveStart {
        cu: u8,
        simd: u8,
        slot: u8,
        count: u8,
    },
    WaveEnd {
        cu: u8,
        simd: u8,
        slot: u8,
    },
    /// One instruction of a traced wave: its ISSUE entry value and, when issued, INST op.
    Inst {
        simd: u8,
        slot: u8,
        issue: u8,
        op: Option<u8>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ev9 {
    pub t: u64,
    pub seq: u64,
    pub kind: Ev9Kind,
}

/// CDNA_INST op values (traces::sqtt::inst_op's CDNA names).
mod op {
    pub const SMEM_RD: u8 = 0;
    pub const SALU_32: u8 = 1;
    pub const VMEM_RD: u8 = 2;
    pub const VMEM_WR: u8 = 3;
    pub const FLAT_WR: u8 = 4;
    pub const VALU_32: u8 = 5;
    pub const LDS: u8 = 6;
    pub const JUMP: u8 = 12;
    pub const NEXT: u8 = 13;
    pub const FLAT_RD: u8 = 14;
    pub const OTHER_MSG: u8 = 15;
    pub const VALU_64: u8 = 18;
    pub const VALU_MAI: u8 = 28;
}

/// The ISSUE value and INST op of an instruction of `class`, `len` bytes long.
pub fn token(class: Class9, len: u32, taken: bool) -> (u8, Option<u8>) {
    let op = match class {
        Class9::Immediate | Class9::Barrier => return (3, None),
        Class9::Salu => op::SALU_32,
        Class9::Smem => op::SMEM_RD,
        Class9::Valu if len > 4 => op::VALU_64,
        Class9::Valu => op::VALU_32,
        Class9::Mfma => op::VALU_MAI,
        Class9::Lds => op::LDS,
        Class9::FlatLoad => op::FLAT_RD,
        Class9::FlatStore => op::FLAT_WR,
        Class9::BufferLoad => op::VMEM_RD,
        Class9::BufferStore => op::VMEM_WR,
        Class9::Branch if taken => op::JUMP,
        Class9::Branch => op::NEXT,
        Class9::Message | Class9::End => op::OTHER_MSG,
    };
    (2, Some(op))
}

struct Types {
    misc: &'static PacketType,
    ts: &'static PacketType,
    start: &'static PacketType,
    end: &'static PacketType,
    inst: &'static PacketType,
    issue: &'static PacketType,
}

fn ty(name: &str) -> Result<&'static PacketType, String> {
    CDNA_TABLE
        .by_name(name)
        .ok_or_else(|| format!("packet type {name} missing from the CDNA table"))
}

struct Enc {
    w: NibbleWriter,
    ty: Types,
    /// Stream time (cycles since the anchor), a multiple of 4.
    cur: u64,
    t0: u64,
}

/// Gaps longer than this are crossed with a CDNA_TIMESTAMP rather than CDNA_MISC deltas.
const LONG_GAP: u64 = 16 * 1020;

impl Enc {
    fn put(&mut self, t: &'static PacketType, f: &[(&str, u64)]) -> Result<(), String> {
        let raw = assemble(t, f).map_err(|e| e.to_string())?;
        self.w.push(raw, t.nibbles);
        Ok(())
    }

    /// An absolute CDNA_TIMESTAMP: the decoder's first one fixes its offset (stream time 0),
    /// later ones set the time to `(abs - offset) & !3 - 4`.
    fn timestamp(&mut self, at: u64) -> Result<(), String> {
        let abs = if self.cur == 0 && at == 0 {
            self.t0
        } else {
            self.t0 + at + 4
        };
        self.put(self.ty.ts, &[("timestamp", abs & 0xFFFF_FFFF_FFFF)])?;
        self.cur = at;
        Ok(())
    }

    fn advance(&mut self, t: u64) -> Result<(), String> {
        let t = t & !3;
        if t <= self.cur {
            return Ok(());
        }
        if t - self.cur > LONG_GAP {
            return self.timestamp(t);
        }
        while self.cur < t {
            let units = ((t - self.cur) / 4).min(255);
            self.put(self.ty.misc, &[("delta", units), ("misc_type", 0)])?;
            self.cur += 4 * units;
        }
        Ok(())
    }
}

/// Counts of what one stream holds (the tests compare them with the decoder's reading).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written9 {
    pub waves: u64,
    pub inst_tokens: u64,
    pub issue_tokens: u64,
}

/// Encodes one SE's `events` (any order); `t0` is the absolute cycle the capture started.
pub fn encode(events: &mut [Ev9], t0: u64) -> Result<(Vec<u8>, Written9), String> {
    events.sort_by_key(|e| (e.t, e.seq));
    let mut e = Enc {
        w: NibbleWriter::with_capacity(64 + events.len() * 8),
        ty: Types {
            misc: ty("CDNA_MISC")?,
            ts: ty("CDNA_TIMESTAMP")?,
            start: ty("CDNA_WAVESTART")?,
            end: ty("CDNA_WAVEEND")?,
            inst: ty("CDNA_INST")?,
            issue: ty("CDNA_ISSUE")?,
        },
        cur: 0,
        t0,
    };
    let mut n = Written9::default();
    e.timestamp(0)?;
    for ev in events.iter() {
        e.advance(ev.t.saturating_sub(t0))?;
        match ev.kind {
            Ev9Kind::WaveStart {
                cu,
                simd,
                slot,
                count,
            } => {
                e.put(
                    e.ty.start,
                    &[
                        ("sh", 0),
                        ("cu", u64::from(cu)),
                        ("wave", u64::from(slot)),
                        ("simd", u64::from(simd)),
                        ("count", u64::from(count)),
                    ],
                )?;
                n.waves += 1;
            }
            Ev9Kind::WaveEnd { cu, simd, slot } => e.put(
                e.ty.end,
                &[
                    ("sh", 0),
                    ("cu", u64::from(cu)),
                    ("wave", u64::from(slot)),
                    ("simd", u64::from(simd)),
                ],
            )?,
            Ev9Kind::Inst {
                simd,
                slot,
                issue,
                op,
            } => {
                let inst = format!("inst{slot}");
                e.put(
                    e.ty.issue,
                    &[("simd", u64::from(simd)), (inst.as_str(), u64::from(issue))],
                )?;
                n.issue_tokens += 1;
                if let Some(op) = op {
                    e.put(
                        e.ty.inst,
                        &[
                            ("wave", u64::from(slot)),
                            ("simd", u64::from(simd)),
                            ("op", u64::from(op)),
                        ],
                    )?;
                    n.inst_tokens += 1;
                }
            }
        }
    }
    e.w.pad_to(32);
    Ok((e.w.into_bytes(), n))
}
