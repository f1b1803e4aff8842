//! The cycle model: every instruction belongs to a [`Class`] that fixes its issue cost (shader
//! clock cycles the wave is busy) and, for memory, its latency until the matching counter
//! (`vmcnt` / `vscnt` / `lgkmcnt`) decrements. It is deliberately simple and deterministic:
//!
//! | class | issue | latency |
//! |---|---|---|
//! | SALU, branch, s_*_saveexec, message | 1 | – |
//! | immediate SOPP (s_nop N: N+1, s_waitcnt: until the counters allow) | 1 | – |
//! | VALU (wave64: ×2) | 1 | – |
//! | VALU transcendental | 4 | – |
//! | VALU 64-bit shift / mad64 / f64 | 2 / 4 / 16 | – |
//! | SMEM | 1 | 40 (lgkm) |
//! | LDS | 1 (+1 per extra dword) | 40 (lgkm) |
//! | global/flat load | 1 (+1 per extra dword) | 300 (vm) |
//! | global/flat store | 1 (+1 per extra dword) | 300 (vs) |
//! | s_barrier (gfx12 s_barrier_wait) | 1, then waits for the last wave of the work-group | – |
//! | gfx12 s_barrier_signal | 1 | – |
//!
//! Waves do not contend for their SIMD (each wave has its own clock); the SPI launches one
//! wave per [`WAVE_LAUNCH`] cycles per SE. The shader clock is [`SHADER_CLOCK_HZ`]; the 100 MHz
//! GPU timestamp advances one tick every [`CYCLES_PER_TICK`] shader cycles.

/// Shader clock of the emulated GPU (2.5 GHz: 25 cycles per 100 MHz tick).
pub const SHADER_CLOCK_HZ: u64 = 2_500_000_000;
pub const CYCLES_PER_TICK: u64 = SHADER_CLOCK_HZ / 100_000_000;
/// Cycles between two wave launches on one SE.
pub const WAVE_LAUNCH: u64 = 2;
/// Cycles from the DISPATCH_DIRECT to the first wave.
pub const DISPATCH_LATENCY: u64 = 200;
/// Cycles from the last wave's end to the end-of-kernel.
pub const DRAIN_LATENCY: u64 = 100;

pub const SMEM_LATENCY: u64 = 40;
pub const LDS_LATENCY: u64 = 40;
pub const VMEM_LATENCY: u64 = 300;

/// What an instruction is for timing and for the SQTT token it produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// No token, no time (s_delay_alu, s_endpgm's own token is the WAVEEND).
    Silent,
    Salu,
    SaluSaveexec,
    Branch,
    Message,
    /// s_nop, s_waitcnt*, s_clause...: an IMMEDIATE token.
    Immediate,
    Barrier,
    /// gfx12 s_barrier_signal (INST BARRIER_SIGNAL).
    BarrierSignal,
    /// gfx12 s_barrier_wait: blocks like s_barrier; no token (`exclude_barrier_wait`).
    BarrierWait,
    Smem,
    Valu,
    ValuTrans,
    Valu64Shift,
    ValuMad64,
    Valu64,
    ValuCmpx,
    /// dwords moved, store?, saddr form?, flat?
    Vmem {
        dwords: u8,
        store: bool,
        saddr: bool,
        flat: bool,
    },
    Lds {
        dwords: u8,
        store: bool,
    },
}

impl Class {
    /// Issue cost in cycles for a wave of `lanes` lanes.
    pub fn issue(self, lanes: u32) -> u64 {
        let w64 = u64::from(lanes > 32) + 1;
        match self {
            Class::Silent => 0,
            Class::Valu | Class::ValuCmpx => w64,
            Class::ValuTrans => 4 * w64,
            Class::Valu64Shift => 2 * w64,
            Class::ValuMad64 => 4 * w64,
            Class::Valu64 => 16 * w64,
            Class::Vmem { dwords, .. } | Class::Lds { dwords, .. } => u64::from(dwords.max(1)),
            _ => 1,
        }
    }

    /// The RDNA3 INST `op` of this class (None: VALUINST / IMMEDIATE / no token).
    pub fn inst_op_rdna3(self) -> Option<u32> {
        Some(match self {
            Class::Salu => 0x00,
            Class::Smem => 0x01,
            Class::Message => 0x09,
            Class::ValuTrans => 0x0b,
            Class::Valu64Shift => 0x0d,
            Class::ValuMad64 => 0x0e,
            Class::Valu64 => 0x0f,
            Class::Barrier => 0x13,
            Class::SaluSaveexec => 0x72,
            Class::ValuCmpx => 0x73,
            Class::Vmem {
                dwords,
                store,
                saddr,
                flat,
            } => {
                let size = u32::from(dwords.clamp(1, 4)) - 1;
                match (flat, store) {
                    (true, false) => 0x1c,
                    (true, true) => 0x1d + size,
                    (false, false) => {
                        if saddr {
                            0x21
                        } else {
                            0x22
                        }
                    }
                    (false, true) => 0x24 + size + u32::from(!saddr),
                }
            }
            Class::Lds { dwords, store } => {
                if store {
                    0x2b + u32::from(dwords.clamp(1, 4)) - 1
                } else {
                    0x29
                }
            }
            _ => return None,
        })
    }

    /// The RDNA4 INST_RDNA4 `op` (names of docs/sqtt-format.md §8, HEAD column).
    pub fn inst_op_rdna4(self) -> Option<u32> {
        Some(match self {
            Class::Vmem {
                dwords,
                store,
                saddr,
                flat,
            } => {
                let size = u32::from(dwords.clamp(1, 4)) - 1;
                match (flat, store) {
                    (true, false) => 0x1c,
                    (true, true) => 0x1d + size,
                    (false, false) => {
                        if saddr {
                            0x21
                        } else {
                            0x22
                        }
                    }
                    (false, true) => 0x24 + size + u32::from(!saddr),
                }
            }
            Class::Barrier => 0x13,
            Class::BarrierSignal => 0x7a,
            Class::BarrierWait => return None,
            c => return c.inst_op_rdna3(),
        })
    }
}
