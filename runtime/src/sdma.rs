//! SDMA packets (SDMA 6.0 "open" headers; SDMA 4.4 shares the used subset): layouts defined once,
//! [`SdmaPacket::encode`] for the copy-queue builder, [`SdmaPacket::decode`] for `emu::sdma`.
//! Field positions: runtime-architecture.md §7.

pub mod op {
    pub const NOP: u8 = 0;
    pub const COPY: u8 = 1;
    pub const WRITE: u8 = 2;
    pub const INDIRECT: u8 = 4;
    pub const FENCE: u8 = 5;
    pub const TRAP: u8 = 6;
    pub const POLL_REGMEM: u8 = 8;
    pub const TIMESTAMP: u8 = 13;
    pub const GCR_REQ: u8 = 17;
    pub const DUMMY_TRAP: u8 = 32;
}

/// TIMESTAMP sub-op that writes the 64-bit global timestamp.
pub const TIMESTAMP_GET_GLOBAL: u32 = 2;
/// Largest COPY_LINEAR byte count (SDMA ≥ 5: 30-bit count field, bytes − 1).
pub const MAX_COPY_SIZE: u64 = 1 << 30;
/// Largest COPY_LINEAR byte count on SDMA 4 (gfx9: a 22-bit count field, bytes − 1; tinygrad's
/// `max_copy_size` is 0x400000 below SDMA 5, as amdgpu's sdma_v4 `copy_max_bytes`).
pub const MAX_COPY_SIZE_SDMA4: u64 = 1 << 22;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SdmaError {
    #[error("SDMA packet op {op} needs {need} dwords, {got} available")]
    Truncated { op: u8, need: usize, got: usize },
    #[error("unknown SDMA op {op} (header {header:#010x})")]
    Unknown { op: u8, header: u32 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SdmaPacket {
    /// One all-zero dword (padding).
    Nop,
    CopyLinear {
        bytes: u32,
        src: u64,
        dst: u64,
    },
    /// WRITE linear: `count` data dwords follow the 4-dword head (the data is not borrowed; the
    /// engine reads it from the stream after the head).
    Write {
        dst: u64,
        count: u32,
    },
    Indirect {
        vmid: u32,
        addr: u64,
        size_dw: u32,
        csa: u64,
    },
    Fence {
        mtype: u32,
        addr: u64,
        data: u32,
    },
    Trap {
        int_context: u32,
    },
    PollRegmem {
        hdp_flush: bool,
        function: u32,
        mem_poll: bool,
        addr: u64,
        reference: u32,
        mask: u32,
        interval: u32,
        retry: u32,
    },
    Timestamp {
        addr: u64,
    },
    GcrReq,
    DummyTrap,
}

fn lo(v: u64) -> u32 {
    v as u32
}
fn hi(v: u64) -> u32 {
    (v >> 32) as u32
}
fn join(lo: u32, hi: u32) -> u64 {
    u64::from(lo) | (u64::from(hi) << 32)
}

impl SdmaPacket {
    /// Number of dwords the packet occupies (for WRITE: the head only).
    pub fn dwords(&self) -> usize {
        match self {
            SdmaPacket::Nop | SdmaPacket::DummyTrap => 1,
            SdmaPacket::CopyLinear { .. } => 7,
            SdmaPacket::Write { .. } => 4,
            SdmaPacket::Indirect { .. } => 6,
            SdmaPacket::Fence { .. } => 4,
            SdmaPacket::Trap { .. } => 2,
            SdmaPacket::PollRegmem { .. } => 6,
            SdmaPacket::Timestamp { .. } => 3,
            SdmaPacket::GcrReq => 5,
        }
    }

    pub fn encode(&self, out: &mut Vec<u32>) {
        match *self {
            SdmaPacket::Nop => out.push(0),
            SdmaPacket::CopyLinear { bytes, src, dst } => out.extend_from_slice(&[
                u32::from(op::COPY),
                bytes.wrapping_sub(1) & 0x3FFF_FFFF,
                0,
                lo(src),
                hi(src),
                lo(dst),
                hi(dst),
            ]),
            SdmaPacket::Write { dst, count } => out.extend_from_slice(&[
                u32::from(op::WRITE),
                lo(dst),
                hi(dst),
                count.wrapping_sub(1) & 0xF_FFFF,
            ]),
            SdmaPacket::Indirect {
                vmid,
                addr,
                size_dw,
                csa,
            } => out.extend_from_slice(&[
                u32::from(op::INDIRECT) | ((vmid & 0xF) << 16),
                lo(addr),
                hi(addr),
                size_dw,
                lo(csa),
                hi(csa),
            ]),
            SdmaPacket::Fence { mtype, addr, data } => out.extend_from_slice(&[
                u32::from(op::FENCE) | ((mtype & 7) << 16),
                lo(addr),
                hi(addr),
                data,
            ]),
            SdmaPacket::Trap { int_context } => {
                out.extend_from_slice(&[u32::from(op::TRAP), int_context & 0x0FFF_FFFF])
            }
            SdmaPacket::PollRegmem {
                hdp_flush,
                function,
                mem_poll,
                addr,
                reference,
                mask,
                interval,
                retry,
            } => out.extend_from_slice(&[
                u32::from(op::POLL_REGMEM)
                    | (u32::from(hdp_flush) << 26)
                    | ((function & 7) << 28)
                    | (u32::from(mem_poll) << 31),
                lo(addr),
                hi(addr),
                reference,
                mask,
                (interval & 0xFFFF) | ((retry & 0xFFF) << 16),
            ]),
            SdmaPacket::Timestamp { addr } => out.extend_from_slice(&[
                u32::from(op::TIMESTAMP) | (TIMESTAMP_GET_GLOBAL << 8),
                lo(addr),
                hi(addr),
            ]),
            SdmaPacket::GcrReq => out.extend_from_slice(&[u32::from(op::GCR_REQ), 0, 0, 0, 0]),
            SdmaPacket::DummyTrap => out.push(u32::from(op::DUMMY_TRAP)),
        }
    }

    /// Decodes the packet at the start of `words` (which may extend past it).
    pub fn decode(words: &[u32]) -> Result<SdmaPacket, SdmaError> {
        let h = words.first().copied().ok_or(SdmaError::Truncated {
            op: 0,
            need: 1,
            got: 0,
        })?;
        let opc = (h & 0xFF) as u8;
        let w = |i: usize| words.get(i).copied().unwrap_or(0);
        let p = match opc {
            op::NOP => SdmaPacket::Nop,
            op::COPY => SdmaPacket::CopyLinear {
                bytes: (w(1) & 0x3FFF_FFFF) + 1,
                src: join(w(3), w(4)),
                dst: join(w(5), w(6)),
            },
            op::WRITE => SdmaPacket::Write {
                dst: join(w(1), w(2)),
                count: (w(3) & 0xF_FFFF) + 1,
            },
            op::INDIRECT => SdmaPacket::Indirect {
                vmid: (h >> 16) & 0xF,
                addr: join(w(1), w(2)),
                size_dw: w(3),
                csa: join(w(4), w(5)),
            },
            op::FENCE => SdmaPacket::Fence {
                mtype: (h >> 16) & 7,
                addr: join(w(1), w(2)),
                data: w(3),
            },
            op::TRAP => SdmaPacket::Trap {
                int_context: w(1) & 0x0FFF_FFFF,
            },
            op::POLL_REGMEM => SdmaPacket::PollRegmem {
                hdp_flush: (h >> 26) & 1 == 1,
                function: (h >> 28) & 7,
                mem_poll: h >> 31 == 1,
                addr: join(w(1), w(2)),
                reference: w(3),
                mask: w(4),
                interval: w(5) & 0xFFFF,
                retry: (w(5) >> 16) & 0xFFF,
            },
            op::TIMESTAMP => SdmaPacket::Timestamp {
                addr: join(w(1), w(2)),
            },
            op::GCR_REQ => SdmaPacket::GcrReq,
            op::DUMMY_TRAP => SdmaPacket::DummyTrap,
            other => {
                return Err(SdmaError::Unknown {
                    op: other,
                    header: h,
                })
            }
        };
        let n = p.dwords();
        if words.len() < n {
            return Err(SdmaError::Truncated {
                op: opc,
                need: n,
                got: words.len(),
            });
        }
        Ok(p)
    }
}
