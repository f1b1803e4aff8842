//! The SQTT encoder: turns the events one SE saw during a capture (wave starts/ends,
//! instruction issues of the traced SIMD, register writes) into the packet stream the hardware
//! writes, using the packet layouts of `traces::sqtt::packets`.
//!
//! Stream rules (so the stream decodes the same with `Framing::Reference` and `Hardware`):
//! LAYOUT_HEADER first; time advances through each packet's delta field, TS_DELTA_SHORT
//! (field + 4), TS_WAVE_STATE (9 bits) and TS_DELTA_OR_MARK long deltas; a realtime marker
//! (TS_DELTA_OR_MARK rt=1, pl=0, carrying the 100 MHz GPU clock) at the start, every
//! [`MARKER_INTERVAL`] cycles, and at the end; never TS_DELTA_S8_W3; 16 zero nibbles after the
//! last packet and zero padding to a 32-byte multiple.

use traces::sqtt::encode::{assemble, NibbleWriter};
use traces::sqtt::packets::{PacketType, Table, RDNA3_TABLE, RDNA4_TABLE};

use super::cycles::CYCLES_PER_TICK;

/// gfx11 `rt_freq = 2` (the runtime's setting): a marker every 4096 shader clocks.
pub const MARKER_INTERVAL: u64 = 4096;

/// What happened, at an absolute time in shader cycles (GPU clock ticks × CYCLES_PER_TICK).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvKind {
    WaveStart {
        sa: u8,
        wgp: u8,
        simd: u8,
        slot: u8,
        /// Active lanes when the wave was launched (1..=64).
        lanes: u8,
    },
    WaveEnd {
        sa: u8,
        wgp: u8,
        simd: u8,
        slot: u8,
    },
    /// INST with this op.
    Inst {
        slot: u8,
        op: u8,
    },
    Valu {
        slot: u8,
    },
    Immediate {
        slot: u8,
    },
    /// A register write seen by the SQ: `config` = COMPUTE_* (subop relative to 0x2E00).
    Reg {
        subop: u16,
        value: u32,
        config: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ev {
    pub t: u64,
    pub seq: u64,
    pub kind: EvKind,
}

struct Types {
    gfx12: bool,
    header: &'static PacketType,
    mark: &'static PacketType,
    short: &'static PacketType,
    state: &'static PacketType,
    start: &'static PacketType,
    end: &'static PacketType,
    inst: &'static PacketType,
    valu: &'static PacketType,
    imm: &'static PacketType,
    reg: &'static PacketType,
}

fn ty(t: &'static Table, name: &str) -> Result<&'static PacketType, String> {
    t.by_name(name)
        .ok_or_else(|| format!("packet type {name} missing from the table"))
}

impl Types {
    fn new(gfx12: bool) -> Result<Types, String> {
        let t: &'static Table = if gfx12 { &RDNA4_TABLE } else { &RDNA3_TABLE };
        let sfx = |n: &str| {
            if gfx12 {
                format!("{n}_RDNA4")
            } else {
                n.to_string()
            }
        };
        Ok(Types {
            gfx12,
            header: ty(t, "LAYOUT_HEADER")?,
            mark: ty(t, &sfx("TS_DELTA_OR_MARK"))?,
            short: ty(t, "TS_DELTA_SHORT")?,
            state: ty(t, "TS_WAVE_STATE")?,
            start: ty(t, &sfx("WAVESTART"))?,
            end: ty(t, &sfx("WAVEEND"))?,
            inst: ty(t, &sfx("INST"))?,
            valu: ty(t, "VALUINST")?,
            imm: ty(t, "IMMEDIATE")?,
            reg: ty(t, "REG")?,
        })
    }
}

fn max_delta(p: &PacketType) -> u64 {
    p.delta.map(|f| (1u64 << f.width()) - 1).unwrap_or(0)
}

struct Enc {
    w: NibbleWriter,
    ty: Types,
    /// Current stream time (cycles since t0).
    cur: u64,
}

impl Enc {
    fn put(&mut self, p: &'static PacketType, f: &[(&str, u64)]) -> Result<(), String> {
        let raw = assemble(p, f).map_err(|e| e.to_string())?;
        self.w.push(raw, p.nibbles);
        Ok(())
    }

    /// Emits filler packets so that the next packet (whose delta field holds up to `m`) lands
    /// exactly at `t`; returns the delta that packet must carry.
    fn advance(&mut self, t: u64, m: u64) -> Result<u64, String> {
        let g = t.saturating_sub(self.cur);
        if g <= m {
            self.cur += g;
            return Ok(g);
        }
        let fill = g - m;
        let mut left = fill;
        while left > 0 {
            if (4..=19).contains(&left) {
                self.put(self.ty.short, &[("delta", left - 4)])?;
                left = 0;
            } else if left <= 511 {
                self.put(self.ty.state, &[("delta", left), ("coarse", 0)])?;
                left = 0;
            } else {
                let max = if self.ty.gfx12 {
                    (1u64 << 52) - 1
                } else {
                    (1u64 << 36) - 1
                };
                let chunk = if left > max { max - 32 } else { left };
                self.put(self.ty.mark, &[("delta", chunk), ("rt", 0), ("pl", 0)])?;
                left -= chunk;
            }
        }
        self.cur += g;
        Ok(g - fill)
    }

    fn marker(&mut self, t: u64, abs: u64) -> Result<(), String> {
        self.advance(t, 0)?;
        let bits = if self.ty.gfx12 { 52 } else { 36 };
        let rt = (abs / CYCLES_PER_TICK) & ((1u64 << bits) - 1);
        self.put(self.ty.mark, &[("delta", rt), ("rt", 1), ("pl", 0)])
    }
}

/// WAVESTART's `id7` field as the hardware writes it. It is no wave index: every wave of a
/// dispatch carries the same value in the captures (shared/traces gfx1100 empty/plus/gemm/sync,
/// gfx1200 empty/plus/gemm: 1, 1, 1024, 5, 1, 1, 1024 waves). What varies between the kernels is
/// id7[11:7] (gfx11) / id7[9:5] (gfx12), packet bits 25..29, and it equals the wave's active
/// lanes minus one in every capture (1, 3, 16, 32 lanes -> 0, 2, 15, 31). The other set bits are
/// the same in all of them: packet bits 30, 31 and 23 (gfx11) / 22 (gfx12). AMD's decoder (0.1.6)
/// reads these bits to attribute the wave to its dispatch; with a running index in them it
/// stitched no instruction of an emulated capture. Lane counts above 32 (wave64) are not in any
/// capture; they saturate at 31.
fn wavestart_id(lanes: u8, gfx12: bool) -> u64 {
    let n = u64::from(lanes.clamp(1, 32) - 1);
    if gfx12 {
        // id7 is packet bits [31:20].
        (0b11 << 10) | (n << 5) | (1 << 2)
    } else {
        // id7 is packet bits [31:18].
        (0b11 << 12) | (n << 7) | (1 << 5)
    }
}

/// LAYOUT_HEADER bits no named field covers, as every hardware capture has them (the whole
/// first 64 bits are the same in all captures of an arch: gfx1100 0x68900191, gfx1200
/// 0x0913100868700211 on SE0/SE1 and bit 37 more on SE2/SE3). Their meaning is not documented;
/// bit 37 separates the instruction-traced SEs (0, 1) from the others in every gfx1200
/// capture, so it follows `itrace` here (the captures cannot tell it from "SE index >= 2").
fn header_extra(gfx12: bool, itrace: bool) -> u64 {
    if gfx12 {
        let base = (1 << 20) | (1 << 21) | (1 << 22) | (1 << 27) | (1 << 44) | (1 << 48);
        let base = base | (1 << 49) | (1 << 52) | (1 << 56);
        if itrace {
            base
        } else {
            base | (1 << 37)
        }
    } else {
        (1 << 20) | (1 << 23) | (1 << 27)
    }
}

/// Per-stream counts of what was written (compared with the decoder's reading in the tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written {
    pub waves: u64,
    pub inst_tokens: u64,
    pub markers: u64,
}

/// Encodes `events` (any order) of one SE; `t0` is the absolute cycle the capture started,
/// `itrace` whether the SE traced instructions.
pub fn encode(
    events: &mut [Ev],
    t0: u64,
    gfx12: bool,
    itrace: bool,
) -> Result<(Vec<u8>, Written), String> {
    events.sort_by_key(|e| (e.t, e.seq));
    let ty = Types::new(gfx12)?;
    let mut e = Enc {
        w: NibbleWriter::with_capacity(64 + events.len() * 4),
        ty,
        cur: 0,
    };
    let mut written = Written::default();
    let header: &[(&str, u64)] = if gfx12 {
        &[("layout", 4), ("sel_a", 6), ("sel_b", 4), ("flag4", 1)]
    } else {
        &[
            ("layout", 3),
            ("simd", 0),
            ("group", 0),
            ("sel_a", 6),
            ("sel_b", 0),
            ("flag4", 0),
        ]
    };
    let raw = assemble(e.ty.header, header).map_err(|x| x.to_string())?;
    e.w.push(raw | header_extra(gfx12, itrace), e.ty.header.nibbles);
    e.marker(0, t0)?;
    written.markers += 1;
    let mut next_mark = MARKER_INTERVAL;
    for ev in events.iter() {
        let t = ev.t.saturating_sub(t0);
        while next_mark <= t {
            e.marker(next_mark, t0 + next_mark)?;
            written.markers += 1;
            next_mark += MARKER_INTERVAL;
        }
        match ev.kind {
            EvKind::WaveStart {
                sa,
                wgp,
                simd,
                slot,
                lanes,
            } => {
                let d = e.advance(t, max_delta(e.ty.start))?;
                e.put(
                    e.ty.start,
                    &[
                        ("delta", d),
                        ("sa", u64::from(sa)),
                        ("simd", u64::from(simd)),
                        ("wgp", u64::from(wgp)),
                        ("wave", u64::from(slot)),
                        ("id7", wavestart_id(lanes, gfx12)),
                    ],
                )?;
                written.waves += 1;
            }
            EvKind::WaveEnd {
                sa,
                wgp,
                simd,
                slot,
            } => {
                let d = e.advance(t, max_delta(e.ty.end))?;
                e.put(
                    e.ty.end,
                    &[
                        ("delta", d),
                        ("sa", u64::from(sa)),
                        ("simd", u64::from(simd)),
                        ("wgp", u64::from(wgp)),
                        ("wave", u64::from(slot)),
                    ],
                )?;
            }
            EvKind::Inst { slot, op } => {
                let d = e.advance(t, max_delta(e.ty.inst))?;
                e.put(
                    e.ty.inst,
                    &[
                        ("delta", d),
                        ("wave", u64::from(slot)),
                        ("op", u64::from(op)),
                    ],
                )?;
                written.inst_tokens += 1;
            }
            EvKind::Valu { slot } => {
                let d = e.advance(t, max_delta(e.ty.valu))?;
                e.put(e.ty.valu, &[("delta", d), ("wave", u64::from(slot))])?;
                written.inst_tokens += 1;
            }
            EvKind::Immediate { slot } => {
                let d = e.advance(t, max_delta(e.ty.imm))?;
                e.put(e.ty.imm, &[("delta", d), ("wave", u64::from(slot))])?;
                written.inst_tokens += 1;
            }
            EvKind::Reg {
                subop,
                value,
                config,
            } => {
                let d = e.advance(t, max_delta(e.ty.reg))?;
                // hi_byte as the captures show it: 0x82 for COMPUTE_* config writes, 0x02 else.
                let hi = if config { 0x82 } else { 0x02 };
                e.put(
                    e.ty.reg,
                    &[
                        ("delta", d),
                        ("hi_byte", hi),
                        ("subop", u64::from(subop)),
                        ("val32", u64::from(value)),
                    ],
                )?;
            }
        }
    }
    // A closing marker on a 100 MHz tick boundary, so every stream has at least two.
    let end = (t0 + e.cur).div_ceil(CYCLES_PER_TICK) * CYCLES_PER_TICK;
    e.marker(end - t0, end)?;
    written.markers += 1;
    e.w.push(0, 16);
    e.w.pad_to(32);
    Ok((e.w.into_bytes(), written))
}
