//! The GC 9 compute queue: the `struct v9_mqd` memory queue descriptor (amdgpu's
//! v9_structs.h, as tinygrad's autogen/am/am.py `struct_v9_mqd`) and its hardware queue
//! descriptor (HQD) on one XCC, written as tinygrad's `AM_GFX.setup_ring` does for GC 9.4.3 /
//! 9.5.0: the MQD image in VRAM, then its register image (CP_MQD_BASE_ADDR ..
//! CP_HQD_PQ_WPTR_HI) straight into that XCC's HQD registers of ME1 pipe 0 queue 0, then
//! CP_HQD_ACTIVE. No KIQ, no MES.
//!
//! tinygrad programs an AQL queue on every XCC when there are several (`is_aql = xccs > 1`)
//! and a PM4 queue on XCC 0 otherwise; this driver programs a PM4 queue on each XCC the
//! runtime asks for (the runtime's multi-XCC PM4 stream, as on KFD), with the per-XCC MQD
//! slots of tinygrad's AQL layout and a doorbell inside each XCC's MEC doorbell range
//! (conformance row A74).

use super::gc9::Gc9;
use super::{gfx, regs, AmReg};
use crate::pci::{PciError, PciResult};

/// Dword indices in `struct v9_mqd` (2048 bytes; byte offsets / 4 of v9_structs.h).
pub mod v9 {
    /// `header`.
    pub const HEADER: usize = 0;
    /// `compute_static_thread_mgmt_se0..se3` (bytes 92, 96, 104, 108): CU masks per SE.
    pub const STATIC_THREAD_MGMT_SE: [usize; 4] = [23, 24, 26, 27];
    /// `cp_mqd_base_addr_lo` (byte 512): the register image starts here, in register order.
    pub const REGS_AT: usize = 128;
    /// `cp_hqd_aql_control` (byte 724).
    pub const AQL_CONTROL: usize = 181;
    /// `cp_hqd_pq_wptr_hi` (byte 732): the last register of the image.
    pub const PQ_WPTR_HI: usize = 183;
    /// sizeof(struct v9_mqd).
    pub const BYTES: usize = 2048;
}

/// One MQD slot per XCC, 4 KiB apart (tinygrad `mqd_paddr[queue] + 0x1000*xcc`).
pub const MQD_STRIDE: u64 = 0x1000;
/// AMDGPU_NAVI10_DOORBELL_MEC_RING0, the doorbell (in 64-bit slots) of XCC 0's queue.
pub const DOORBELL_MEC_RING0: u32 = gfx::DOORBELL_MEC_RING0;
/// Doorbell slots per XCC: `CP_MEC_DOORBELL_RANGE_LOWER` of XCC *x* is byte 0x100·x
/// ([`Gc9::gfx_init`], tinygrad's values), i.e. 32 slots of 8 bytes each.
pub const DOORBELLS_PER_XCC: u32 = 0x100 / 8;

/// The doorbell slot of XCC `xcc`'s compute queue: MEC_RING0 inside that XCC's range.
pub fn doorbell(xcc: usize) -> u32 {
    DOORBELL_MEC_RING0 + DOORBELLS_PER_XCC * xcc as u32
}

/// Where the queue lives and what it reads.
#[derive(Debug, Clone, Copy)]
pub struct QueueSpec {
    /// MC address of this XCC's MQD slot (what CP_MQD_BASE_ADDR holds).
    pub mqd_mc: u64,
    pub ring_va: u64,
    pub ring_bytes: u64,
    pub rptr_va: u64,
    pub wptr_va: u64,
    pub eop_va: u64,
    pub eop_bytes: u64,
    pub doorbell: u32,
}

/// The v9 MQD image of a PM4 compute queue, every register value encoded by field with the
/// gc_9_4_3 layout (tinygrad's setup_ring with `aql=False`).
pub fn image(g: &Gc9, q: &QueueSpec) -> PciResult<Vec<u32>> {
    use regs::*;
    let r = &g.regs;
    let first = r.def(CP_MQD_BASE_ADDR)?.offset;
    let last = r.def(CP_HQD_PQ_WPTR_HI)?.offset;
    // The MQD's register image must cover exactly the HQD registers (header vs register JSON).
    if (last - first) as usize != v9::PQ_WPTR_HI - v9::REGS_AT {
        return Err(PciError::Discovery {
            offset: 0,
            msg: format!(
                "GC 9 register JSON: CP_MQD_BASE_ADDR..CP_HQD_PQ_WPTR_HI spans {} registers, struct v9_mqd {}",
                last - first + 1,
                v9::PQ_WPTR_HI - v9::REGS_AT + 1
            ),
        });
    }
    let size_log = |bytes: u64| (63 - (bytes / 4).max(2).leading_zeros()) - 1;
    let mut img = vec![0u32; v9::BYTES / 4];
    img[v9::HEADER] = gfx::MQD_HEADER;
    for at in v9::STATIC_THREAD_MGMT_SE {
        img[at] = u32::MAX;
    }
    let mut set = |reg: AmReg, v: u32| -> PciResult<()> {
        let off = r.def(reg)?.offset;
        img[v9::REGS_AT + (off - first) as usize] = v;
        Ok(())
    };
    set(CP_MQD_BASE_ADDR, q.mqd_mc as u32 & !3)?;
    set(CP_MQD_BASE_ADDR_HI, (q.mqd_mc >> 32) as u32)?;
    set(
        CP_HQD_PERSISTENT_STATE,
        r.encode(
            CP_HQD_PERSISTENT_STATE,
            &[("preload_size", 0x55), ("preload_req", 1)],
        )?,
    )?;
    set(
        CP_HQD_PIPE_PRIORITY,
        r.encode(CP_HQD_PIPE_PRIORITY, &[("pipe_priority", 2)])?,
    )?;
    set(
        CP_HQD_QUEUE_PRIORITY,
        r.encode(CP_HQD_QUEUE_PRIORITY, &[("priority_level", 0xF)])?,
    )?;
    set(
        CP_HQD_QUANTUM,
        r.encode(
            CP_HQD_QUANTUM,
            &[
                ("quantum_en", 1),
                ("quantum_scale", 1),
                ("quantum_duration", 1),
            ],
        )?,
    )?;
    set(CP_HQD_PQ_BASE, (q.ring_va >> 8) as u32)?;
    set(CP_HQD_PQ_BASE_HI, (q.ring_va >> 40) as u32)?;
    set(CP_HQD_PQ_RPTR_REPORT_ADDR, q.rptr_va as u32 & !3)?;
    set(CP_HQD_PQ_RPTR_REPORT_ADDR_HI, (q.rptr_va >> 32) as u32)?;
    set(CP_HQD_PQ_WPTR_POLL_ADDR, q.wptr_va as u32 & !7)?;
    set(CP_HQD_PQ_WPTR_POLL_ADDR_HI, (q.wptr_va >> 32) as u32)?;
    set(
        CP_HQD_PQ_DOORBELL_CONTROL,
        r.encode(
            CP_HQD_PQ_DOORBELL_CONTROL,
            &[("doorbell_offset", q.doorbell * 2), ("doorbell_en", 1)],
        )?,
    )?;
    set(
        CP_HQD_PQ_CONTROL,
        r.encode(
            CP_HQD_PQ_CONTROL,
            &[
                ("rptr_block_size", 5),
                ("unord_dispatch", 0),
                ("queue_size", size_log(q.ring_bytes)),
            ],
        )?,
    )?;
    set(
        CP_HQD_IB_CONTROL,
        r.encode(CP_HQD_IB_CONTROL, &[("min_ib_avail_size", 3)])?,
    )?;
    set(CP_HQD_HQ_STATUS0, gfx::HQ_STATUS0_INIT)?;
    set(
        CP_MQD_CONTROL,
        r.encode(CP_MQD_CONTROL, &[("priv_state", 1)])?,
    )?;
    set(CP_HQD_VMID, 0)?;
    // PM4: no AQL control (the emulated MI350 runs PM4 HQDs only, A72).
    set(CP_HQD_AQL_CONTROL, 0)?;
    set(CP_HQD_EOP_BASE_ADDR, (q.eop_va >> 8) as u32)?;
    set(CP_HQD_EOP_BASE_ADDR_HI, (q.eop_va >> 40) as u32)?;
    set(
        CP_HQD_EOP_CONTROL,
        r.encode(CP_HQD_EOP_CONTROL, &[("eop_size", size_log(q.eop_bytes))])?,
    )?;
    Ok(img)
}

fn select(g: &Gc9, xcc: usize, me: u32, queue: u32) -> PciResult<()> {
    g.write_fields(
        regs::GRBM_GFX_CNTL,
        xcc,
        &[("meid", me), ("pipeid", 0), ("vmid", 0), ("queueid", queue)],
    )
}

/// Writes the MQD image to VRAM at `mqd_paddr` and into XCC `xcc`'s HQD (ME1 pipe 0
/// queue 0), then activates it (tinygrad's setup_ring order).
pub fn setup(g: &Gc9, xcc: usize, mqd_paddr: u64, q: &QueueSpec) -> PciResult<()> {
    use regs::*;
    let img = image(g, q)?;
    let bytes: Vec<u8> = img.iter().flat_map(|w| w.to_le_bytes()).collect();
    select(g, xcc, 1, 0)?;
    g.vram.write_bytes(mqd_paddr, &bytes)?;
    let base = g.addr(CP_MQD_BASE_ADDR, xcc)?;
    for (i, v) in img[v9::REGS_AT..=v9::PQ_WPTR_HI].iter().enumerate() {
        g.regs.wreg(base + i as u32, *v)?;
    }
    g.write_fields(CP_HQD_ACTIVE, xcc, &[("active", 1)])?;
    super::psp::PspMem::flush_hdp(g, &g.regs)?;
    select(g, xcc, 0, 0)
}

/// tinygrad's `_dequeue_hqds` on one XCC: an active HQD is dequeued with its waves reset.
pub fn dequeue(g: &Gc9, xcc: usize) -> PciResult<()> {
    use regs::*;
    select(g, xcc, 1, 0)?;
    if g.read(CP_HQD_ACTIVE, xcc)? & 1 != 0 {
        // dequeue_req 2: reset waves (1 would drain the pipe).
        g.write_fields(CP_HQD_DEQUEUE_REQUEST, xcc, &[("dequeue_req", 2)])?;
        g.write_fields(SPI_COMPUTE_QUEUE_RESET, xcc, &[("reset", 1)])?;
        let t0 = std::time::Instant::now();
        while g.read(CP_HQD_ACTIVE, xcc)? & 1 != 0 {
            if t0.elapsed().as_millis() as u64 > g.timeout_ms {
                return Err(PciError::Timeout {
                    block: "CP",
                    what: format!("HQD dequeue on XCC {xcc}"),
                    reg: CP_HQD_ACTIVE.name,
                    value: g.read(CP_HQD_ACTIVE, xcc)?,
                    ms: g.timeout_ms,
                });
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
    }
    select(g, xcc, 0, 0)
}
