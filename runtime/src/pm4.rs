//! PM4 type-3 packets (gfx10+ "nv" encoding, gfx9 where it differs): the layouts are defined
//! once here; [`Packet::encode`] is used by the queue builders and [`Packet::decode`] by the
//! emulated command processor (the `emu` crate's `cp`). The packets on the dispatch hot path also have
//! fixed-size `payload`/`words` encoders, which `encode` itself uses (one layout, no fork).
//! Field positions: runtime-architecture.md §6.

/// Type-3 opcodes.
pub mod op {
    pub const NOP: u8 = 0x10;
    pub const DISPATCH_DIRECT: u8 = 0x15;
    pub const ATOMIC_MEM: u8 = 0x1E;
    pub const PRED_EXEC: u8 = 0x23;
    pub const WAIT_REG_MEM: u8 = 0x3C;
    pub const INDIRECT_BUFFER: u8 = 0x3F;
    pub const COPY_DATA: u8 = 0x40;
    pub const EVENT_WRITE: u8 = 0x46;
    pub const RELEASE_MEM: u8 = 0x49;
    pub const ACQUIRE_MEM: u8 = 0x58;
    pub const SET_SH_REG: u8 = 0x76;
    pub const SET_UCONFIG_REG: u8 = 0x79;
}

/// Register windows of SET_SH_REG / SET_UCONFIG_REG (dword addresses).
pub const SH_REG_BASE: u32 = 0x2C00;
pub const SH_REG_END: u32 = 0x3000;
pub const UCONFIG_REG_BASE: u32 = 0xC000;
pub const UCONFIG_REG_END: u32 = 0x10000;

/// ATOMIC_MEM `atomic` field values (the hardware's `enum TC_OP`; runtime-architecture.md §6).
pub mod tc_op {
    /// TC_OP_ATOMIC_ADD_RTN_32 = 0x0F: the only atomic the multi-XCC barrier uses.
    pub const ATOMIC_ADD_RTN_32: u32 = 0x0F;
}

/// WAIT_REG_MEM compare functions (also SDMA POLL_REGMEM).
pub mod func {
    pub const ALWAYS: u32 = 0;
    pub const LT: u32 = 1;
    pub const LE: u32 = 2;
    pub const EQ: u32 = 3;
    pub const NE: u32 = 4;
    pub const GE: u32 = 5;
    pub const GT: u32 = 6;
}

/// Evaluates a WAIT_REG_MEM / POLL_REGMEM compare: `(value & mask) <func> reference`.
pub fn compare(function: u32, value: u32, mask: u32, reference: u32) -> bool {
    let v = value & mask;
    match function {
        func::LT => v < reference,
        func::LE => v <= reference,
        func::EQ => v == reference,
        func::NE => v != reference,
        func::GE => v >= reference,
        func::GT => v > reference,
        _ => true,
    }
}

/// EVENT_WRITE / RELEASE_MEM event types used.
pub mod event {
    pub const CS_PARTIAL_FLUSH: u32 = 7;
    pub const CACHE_FLUSH_AND_INV_TS_EVENT: u32 = 0x14;
    pub const THREAD_TRACE_MARKER: u32 = 53;
    pub const THREAD_TRACE_FINISH: u32 = 55;
}

/// RELEASE_MEM GCR bits (event dword, bits 12..22) used by a signal release.
pub mod rel_gcr {
    pub const GLM_WB: u32 = 1 << 12;
    pub const GLM_INV: u32 = 1 << 13;
    pub const GLV_INV: u32 = 1 << 14;
    pub const GL1_INV: u32 = 1 << 15;
    pub const GL2_US: u32 = 1 << 16;
    pub const GL2_RANGE: u32 = 1 << 17;
    pub const GL2_DISCARD: u32 = 1 << 19;
    pub const GL2_INV: u32 = 1 << 20;
    pub const GL2_WB: u32 = 1 << 21;
    pub const SEQ: u32 = 1 << 22;
    pub const MASK: u32 = 0x007F_F000;
}

/// ACQUIRE_MEM GCR_CNTL values (gfx10+).
pub mod acq_gcr {
    /// GLI, GLM, GLK, GLV, GL1, GL2 invalidate + writeback.
    pub const ALL: u32 = 0xC3F1;
    /// Everything but the instruction cache and L2.
    pub const NO_GLI_GL2: u32 = 0x03F0;
}

/// RELEASE_MEM DATA_SEL values.
pub mod data_sel {
    pub const NONE: u32 = 0;
    pub const VALUE_32: u32 = 1;
    pub const VALUE_64: u32 = 2;
    pub const GPU_CLOCK: u32 = 3;
}

/// RELEASE_MEM INT_SEL values.
pub mod int_sel {
    pub const NONE: u32 = 0;
    pub const IRQ: u32 = 1;
    pub const IRQ_AFTER_WRITE_CONFIRM: u32 = 2;
}

/// DISPATCH_INITIATOR bits (GC 11 field positions).
pub mod initiator {
    pub const COMPUTE_SHADER_EN: u32 = 1 << 0;
    pub const FORCE_START_AT_000: u32 = 1 << 2;
    pub const CS_W32_EN: u32 = 1 << 15;
}

/// Errors decoding a PM4 stream (an emulated CP turns these into a device fault).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Pm4Error {
    #[error("PM4 header {0:#010x} is not a type-3 packet")]
    NotType3(u32),
    #[error("PM4 packet opcode {opcode:#x} has {got} payload dwords, layout needs {need}")]
    Length { opcode: u8, got: usize, need: usize },
    #[error("unknown PM4 opcode {0:#x}")]
    Unknown(u8),
}

/// A decoded type-3 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub opcode: u8,
    /// Payload dwords following the header.
    pub payload: usize,
}

pub const fn header(opcode: u8, payload: usize) -> u32 {
    (3 << 30) | ((((payload as u32).wrapping_sub(1)) & 0x3FFF) << 16) | ((opcode as u32) << 8)
}

pub fn parse_header(w: u32) -> Result<Header, Pm4Error> {
    if w >> 30 != 3 {
        return Err(Pm4Error::NotType3(w));
    }
    Ok(Header {
        opcode: ((w >> 8) & 0xFF) as u8,
        payload: (((w >> 16) & 0x3FFF) + 1) as usize,
    })
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
fn need(opcode: u8, p: &[u32], n: usize) -> Result<(), Pm4Error> {
    if p.len() < n {
        Err(Pm4Error::Length {
            opcode,
            got: p.len(),
            need: n,
        })
    } else {
        Ok(())
    }
}
fn w(p: &[u32], i: usize) -> u32 {
    p.get(i).copied().unwrap_or(0)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitRegMem {
    pub function: u32,
    /// true: poll memory at `addr`; false: registers (`addr` low = reg A, high = reg B).
    pub mem_space: bool,
    /// 0 wait, 1 write register A then wait on register B, 3 preemptable.
    pub operation: u32,
    pub engine: u32,
    pub addr: u64,
    pub reference: u32,
    pub mask: u32,
    pub poll_interval: u32,
}

impl WaitRegMem {
    pub fn info(&self) -> u32 {
        (self.function & 7)
            | (u32::from(self.mem_space) << 4)
            | ((self.operation & 3) << 6)
            | ((self.engine & 1) << 8)
    }
    /// Register A (write / poll register), register space only.
    pub fn reg_a(&self) -> u32 {
        lo(self.addr)
    }
    /// Register B (polled register of the write-then-wait form).
    pub fn reg_b(&self) -> u32 {
        hi(self.addr)
    }
    /// The payload layout.
    #[inline]
    pub fn payload(&self) -> [u32; 6] {
        [
            self.info(),
            lo(self.addr),
            hi(self.addr),
            self.reference,
            self.mask,
            self.poll_interval,
        ]
    }
    /// The whole packet (what [`Packet::encode`] appends), for builders that know the packet.
    #[inline]
    pub fn words(&self) -> [u32; 7] {
        let p = self.payload();
        [
            header(op::WAIT_REG_MEM, 6),
            p[0],
            p[1],
            p[2],
            p[3],
            p[4],
            p[5],
        ]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcquireMem {
    /// gfx10+: dword 1 is zero; gfx9: CP_COHER_CNTL.
    pub coher_cntl: u32,
    pub coher_size: u64,
    pub coher_base: u64,
    pub poll_interval: u32,
    /// gfx10+ GCR_CNTL (absent in the 6-payload gfx9 form).
    pub gcr_cntl: Option<u32>,
}

impl AcquireMem {
    /// The payload layout: 7 dwords, or the first 6 for the gfx9 form without GCR_CNTL.
    #[inline]
    pub fn payload(&self) -> ([u32; 7], usize) {
        let p = [
            self.coher_cntl,
            lo(self.coher_size),
            hi(self.coher_size),
            lo(self.coher_base),
            hi(self.coher_base),
            self.poll_interval,
            self.gcr_cntl.unwrap_or(0),
        ];
        (p, if self.gcr_cntl.is_some() { 7 } else { 6 })
    }
    /// Appends the whole packet (what [`Packet::encode`] appends).
    #[inline]
    pub fn encode(&self, out: &mut Vec<u32>) {
        let (p, n) = self.payload();
        out.push(header(op::ACQUIRE_MEM, n));
        out.extend_from_slice(p.get(..n).unwrap_or(&[]));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReleaseMem {
    pub event_type: u32,
    pub event_index: u32,
    /// GCR bits already in place (bits 12..22 of the event dword), see [`rel_gcr`].
    pub gcr: u32,
    pub cache_policy: u32,
    pub execute: bool,
    pub dst_sel: u32,
    pub int_sel: u32,
    pub data_sel: u32,
    pub addr: u64,
    pub data: u64,
    pub int_ctxid: u32,
}

impl ReleaseMem {
    /// The payload layout.
    #[inline]
    pub fn payload(&self) -> [u32; 7] {
        [
            (self.event_type & 0x3F)
                | ((self.event_index & 0xF) << 8)
                | (self.gcr & rel_gcr::MASK)
                | ((self.cache_policy & 3) << 25)
                | (u32::from(self.execute) << 28),
            ((self.dst_sel & 3) << 16) | ((self.int_sel & 7) << 24) | ((self.data_sel & 7) << 29),
            lo(self.addr),
            hi(self.addr),
            lo(self.data),
            hi(self.data),
            self.int_ctxid,
        ]
    }
    /// The whole packet (what [`Packet::encode`] appends), for builders that know the packet.
    #[inline]
    pub fn words(&self) -> [u32; 8] {
        let p = self.payload();
        [
            header(op::RELEASE_MEM, 7),
            p[0],
            p[1],
            p[2],
            p[3],
            p[4],
            p[5],
            p[6],
        ]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyData {
    pub src_sel: u32,
    pub dst_sel: u32,
    pub count_sel: bool,
    pub wr_confirm: bool,
    pub src: u64,
    pub dst: u64,
}

impl CopyData {
    pub const SRC_REG_PERF: u32 = 4;
    pub const SRC_REG: u32 = 0;
    pub const SRC_MEM: u32 = 1;
    pub const SRC_IMM: u32 = 5;
    pub const DST_REG: u32 = 0;
    pub const DST_MEM: u32 = 2;
    pub const DST_MEM_5: u32 = 5;
    pub fn control(&self) -> u32 {
        (self.src_sel & 0xF)
            | ((self.dst_sel & 0xF) << 8)
            | (u32::from(self.count_sel) << 16)
            | (u32::from(self.wr_confirm) << 20)
    }
}

/// One PM4 packet. Register writes borrow their values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packet<'a> {
    Nop {
        dwords: usize,
    },
    DispatchDirect {
        dim: [u32; 3],
        initiator: u32,
    },
    /// ATOMIC_MEM as used by the multi-XCC barrier (atomic op, addr, src, cmp, loop interval).
    AtomicMem {
        atomic: u32,
        addr: u64,
        src: u64,
        cmp: u64,
        loop_interval: u32,
    },
    /// Executes the next `dwords` dwords only on the XCCs in `xcc_mask`.
    PredExec {
        xcc_mask: u32,
        dwords: u32,
    },
    WaitRegMem(WaitRegMem),
    IndirectBuffer {
        addr: u64,
        size_dw: u32,
        valid: bool,
    },
    CopyData(CopyData),
    EventWrite {
        event_type: u32,
        event_index: u32,
    },
    ReleaseMem(ReleaseMem),
    AcquireMem(AcquireMem),
    /// SET_SH_REG (`uconfig` false) or SET_UCONFIG_REG (`uconfig` true) at window offset.
    SetReg {
        uconfig: bool,
        offset: u32,
        values: &'a [u32],
    },
}

impl Packet<'_> {
    pub fn opcode(&self) -> u8 {
        match self {
            Packet::Nop { .. } => op::NOP,
            Packet::DispatchDirect { .. } => op::DISPATCH_DIRECT,
            Packet::AtomicMem { .. } => op::ATOMIC_MEM,
            Packet::PredExec { .. } => op::PRED_EXEC,
            Packet::WaitRegMem(_) => op::WAIT_REG_MEM,
            Packet::IndirectBuffer { .. } => op::INDIRECT_BUFFER,
            Packet::CopyData(_) => op::COPY_DATA,
            Packet::EventWrite { .. } => op::EVENT_WRITE,
            Packet::ReleaseMem(_) => op::RELEASE_MEM,
            Packet::AcquireMem(_) => op::ACQUIRE_MEM,
            Packet::SetReg { uconfig: false, .. } => op::SET_SH_REG,
            Packet::SetReg { uconfig: true, .. } => op::SET_UCONFIG_REG,
        }
    }

    /// Appends header + payload to `out`.
    pub fn encode(&self, out: &mut Vec<u32>) {
        let start = out.len();
        out.push(0);
        match self {
            Packet::Nop { dwords } => out.extend(std::iter::repeat_n(0, *dwords)),
            Packet::DispatchDirect { dim, initiator } => {
                out.extend_from_slice(&[dim[0], dim[1], dim[2], *initiator])
            }
            Packet::AtomicMem {
                atomic,
                addr,
                src,
                cmp,
                loop_interval,
            } => out.extend_from_slice(&[
                *atomic,
                lo(*addr),
                hi(*addr),
                lo(*src),
                hi(*src),
                lo(*cmp),
                hi(*cmp),
                *loop_interval,
            ]),
            Packet::PredExec { xcc_mask, dwords } => {
                out.push((xcc_mask << 24) | (dwords & 0xFF_FFFF))
            }
            Packet::WaitRegMem(p) => out.extend_from_slice(&p.payload()),
            Packet::IndirectBuffer {
                addr,
                size_dw,
                valid,
            } => out.extend_from_slice(&[
                lo(*addr),
                hi(*addr),
                (size_dw & 0xF_FFFF) | (u32::from(*valid) << 23),
            ]),
            Packet::CopyData(c) => {
                out.extend_from_slice(&[c.control(), lo(c.src), hi(c.src), lo(c.dst), hi(c.dst)])
            }
            Packet::EventWrite {
                event_type,
                event_index,
            } => out.push((event_type & 0x3F) | ((event_index & 0xF) << 8)),
            Packet::ReleaseMem(r) => out.extend_from_slice(&r.payload()),
            Packet::AcquireMem(a) => {
                let (p, n) = a.payload();
                out.extend_from_slice(p.get(..n).unwrap_or(&[]));
            }
            Packet::SetReg { offset, values, .. } => {
                out.push(*offset);
                out.extend_from_slice(values);
            }
        }
        let payload = out.len() - start - 1;
        if let Some(h) = out.get_mut(start) {
            *h = header(self.opcode(), payload);
        }
    }

    /// Decodes one packet from its header fields and payload.
    pub fn decode(h: Header, p: &[u32]) -> Result<Packet<'_>, Pm4Error> {
        let o = h.opcode;
        Ok(match o {
            op::NOP => Packet::Nop { dwords: p.len() },
            op::DISPATCH_DIRECT => {
                need(o, p, 4)?;
                Packet::DispatchDirect {
                    dim: [w(p, 0), w(p, 1), w(p, 2)],
                    initiator: w(p, 3),
                }
            }
            op::ATOMIC_MEM => {
                need(o, p, 8)?;
                Packet::AtomicMem {
                    atomic: w(p, 0),
                    addr: join(w(p, 1), w(p, 2)),
                    src: join(w(p, 3), w(p, 4)),
                    cmp: join(w(p, 5), w(p, 6)),
                    loop_interval: w(p, 7),
                }
            }
            op::PRED_EXEC => {
                need(o, p, 1)?;
                Packet::PredExec {
                    xcc_mask: w(p, 0) >> 24,
                    dwords: w(p, 0) & 0xFF_FFFF,
                }
            }
            op::WAIT_REG_MEM => {
                need(o, p, 6)?;
                let info = w(p, 0);
                Packet::WaitRegMem(WaitRegMem {
                    function: info & 7,
                    mem_space: (info >> 4) & 1 == 1,
                    operation: (info >> 6) & 3,
                    engine: (info >> 8) & 1,
                    addr: join(w(p, 1), w(p, 2)),
                    reference: w(p, 3),
                    mask: w(p, 4),
                    poll_interval: w(p, 5),
                })
            }
            op::INDIRECT_BUFFER => {
                need(o, p, 3)?;
                Packet::IndirectBuffer {
                    addr: join(w(p, 0), w(p, 1)),
                    size_dw: w(p, 2) & 0xF_FFFF,
                    valid: (w(p, 2) >> 23) & 1 == 1,
                }
            }
            op::COPY_DATA => {
                need(o, p, 5)?;
                let c = w(p, 0);
                Packet::CopyData(CopyData {
                    src_sel: c & 0xF,
                    dst_sel: (c >> 8) & 0xF,
                    count_sel: (c >> 16) & 1 == 1,
                    wr_confirm: (c >> 20) & 1 == 1,
                    src: join(w(p, 1), w(p, 2)),
                    dst: join(w(p, 3), w(p, 4)),
                })
            }
            op::EVENT_WRITE => {
                need(o, p, 1)?;
                Packet::EventWrite {
                    event_type: w(p, 0) & 0x3F,
                    event_index: (w(p, 0) >> 8) & 0xF,
                }
            }
            op::RELEASE_MEM => {
                need(o, p, 7)?;
                let e = w(p, 0);
                let s = w(p, 1);
                Packet::ReleaseMem(ReleaseMem {
                    event_type: e & 0x3F,
                    event_index: (e >> 8) & 0xF,
                    gcr: e & rel_gcr::MASK,
                    cache_policy: (e >> 25) & 3,
                    execute: (e >> 28) & 1 == 1,
                    dst_sel: (s >> 16) & 3,
                    int_sel: (s >> 24) & 7,
                    data_sel: (s >> 29) & 7,
                    addr: join(w(p, 2), w(p, 3)),
                    data: join(w(p, 4), w(p, 5)),
                    int_ctxid: w(p, 6),
                })
            }
            op::ACQUIRE_MEM => {
                need(o, p, 6)?;
                Packet::AcquireMem(AcquireMem {
                    coher_cntl: w(p, 0),
                    coher_size: join(w(p, 1), w(p, 2)),
                    coher_base: join(w(p, 3), w(p, 4)),
                    poll_interval: w(p, 5),
                    gcr_cntl: p.get(6).copied(),
                })
            }
            op::SET_SH_REG | op::SET_UCONFIG_REG => {
                need(o, p, 2)?;
                Packet::SetReg {
                    uconfig: o == op::SET_UCONFIG_REG,
                    offset: w(p, 0),
                    values: p.get(1..).unwrap_or(&[]),
                }
            }
            other => return Err(Pm4Error::Unknown(other)),
        })
    }
}

/// Iterates over the packets of a PM4 dword stream (no ring wrap; for IBs and tests).
pub fn packets(words: &[u32]) -> impl Iterator<Item = Result<(usize, Packet<'_>), Pm4Error>> {
    let mut pos = 0usize;
    std::iter::from_fn(move || {
        let hw = *words.get(pos)?;
        let h = match parse_header(hw) {
            Ok(h) => h,
            Err(e) => {
                pos = words.len();
                return Some(Err(e));
            }
        };
        let start = pos;
        let end = (pos + 1 + h.payload).min(words.len());
        let payload = words.get(pos + 1..end).unwrap_or(&[]);
        pos = pos + 1 + h.payload;
        Some(Packet::decode(h, payload).map(|p| (start, p)))
    })
}
