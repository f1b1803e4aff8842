//! GFX (pci-am-interface.md §1.6 GFX): RLC autoload wait, RS64 MEC start, GC hub, per-VMID
//! shader memory config, and a compute queue written straight into the HQD registers from an
//! MQD image (no KIQ/MES).

use super::gmc::{Hub, PhysRun};
use super::{regs, AmDevice, AmReg};
use crate::pci::PciResult;

/// AMDGPU_NAVI10_DOORBELL_MEC_RING0.
pub const DOORBELL_MEC_RING0: u32 = 3;
pub const MQD_HEADER: u32 = 0xC031_0800;
pub const MQD_SIZE: u64 = 0x1000;
/// MQD dword index of the first HQD register image (CP_MQD_BASE_ADDR).
pub const MQD_REGS_AT: usize = 0x80;

/// GRBM_GFX_CNTL value selecting (me, pipe, queue, vmid).
pub fn grbm_select(me: u32, pipe: u32, queue: u32, vmid: u32) -> u32 {
    (pipe & 3) | (me & 3) << 2 | (vmid & 0xF) << 4 | (queue & 7) << 8
}

/// A compute queue as programmed (for fini).
#[derive(Debug, Clone, Copy)]
pub struct ComputeQueue {
    pub mqd_va: u64,
    pub mqd_paddr: u64,
    pub doorbell: u32,
}

pub fn init(dev: &mut AmDevice) -> PciResult<()> {
    use regs::*;
    let r = &dev.regs;
    let t = dev.timeout_ms;
    r.poll(
        RLC_RLCS_BOOTLOAD_STATUS,
        1 << 31,
        1 << 31,
        t,
        "RLC",
        "autoload of the CP/SDMA microcode (bootload_complete)",
    )?;
    // RS64 MEC: program counter from the firmware header, pulse the pipe reset.
    r.write(GRBM_GFX_CNTL, grbm_select(1, 0, 0, 0))?;
    let start = dev.fw.mec_start;
    r.write(CP_MEC_RS64_PRGRM_CNTR_START, (start >> 2) as u32)?;
    r.write(CP_MEC_RS64_PRGRM_CNTR_START_HI, (start >> 34) as u32)?;
    r.write(CP_MEC_RS64_CNTL, 1 << 16 | 1 << 30)?;
    r.write(CP_MEC_RS64_CNTL, 1 << 30)?;
    r.write(GRBM_GFX_CNTL, 0)?;

    dev.gmc.init_hub(r, Hub::Gc)?;
    r.update(TCP_CNTL, 0x2000_0000, 0x2000_0000)?;
    r.write(RLC_SRM_CNTL, 1 | 1 << 1)?;
    dev.doorbell_enable(0, 0x3, 0x3, 0, 0)?;
    dev.doorbell_enable(3, 0x6, 0x3, 0, 0)?;
    let r = &dev.regs;
    r.update(GRBM_CNTL, 0xFF, 0xFF)?;
    for vmid in 0..16 {
        r.write(GRBM_GFX_CNTL, grbm_select(0, 0, 0, vmid))?;
        // address_mode 0 (64-bit), alignment_mode 3 (unaligned), initial_inst_prefetch 3:
        // the kernel's DEFAULT_SH_MEM_CONFIG, 0xC00C.
        r.write(SH_MEM_CONFIG, 3 << 2 | 3 << 14)?;
        // shared_base 1, private_base 2: LDS at 0x1000…, scratch at 0x2000… apertures.
        r.write(SH_MEM_BASES, 1 << 16 | 2)?;
    }
    r.write(GRBM_GFX_CNTL, 0)?;
    r.write(CP_MEC_DOORBELL_RANGE_LOWER, 0)?;
    r.write(CP_MEC_DOORBELL_RANGE_UPPER, 0x450)?;
    // pipe0 active, not halted.
    r.write(CP_MEC_RS64_CNTL, 1 << 26)?;
    std::thread::sleep(std::time::Duration::from_millis(50));
    Ok(())
}

fn log2(v: u64) -> u32 {
    63 - v.max(1).leading_zeros()
}

/// Programs ME1 pipe 0 queue 0 with a ring at `ring_va`.
pub fn setup_compute_queue(
    dev: &mut AmDevice,
    ring_va: u64,
    ring_bytes: u64,
    rptr_va: u64,
    wptr_va: u64,
    eop_va: u64,
    eop_bytes: u64,
) -> PciResult<ComputeQueue> {
    use regs::*;
    let mqd_paddr = dev.gmc.palloc(MQD_SIZE, 0x1000)?;
    let mqd_va = dev.gmc.valloc(MQD_SIZE)?;
    dev.gmc.map(
        mqd_va,
        &[PhysRun {
            addr: mqd_paddr,
            len: MQD_SIZE,
            system: false,
        }],
        true,
    )?;
    dev.gmc.flush_tlbs(&dev.regs, true)?;
    let first = CP_MQD_BASE_ADDR.gc11_offset();
    let last = CP_HQD_PQ_WPTR_HI.gc11_offset();
    let mut mqd = vec![0u32; (MQD_SIZE / 4) as usize];
    mqd[0] = MQD_HEADER;
    let mut set = |reg: AmReg, v: u32| {
        mqd[MQD_REGS_AT + (reg.gc11_offset() - first) as usize] = v;
    };
    set(CP_MQD_BASE_ADDR, (mqd_va & 0xFFFF_FFFC) as u32);
    set(CP_MQD_BASE_ADDR_HI, (mqd_va >> 32) as u32);
    set(CP_HQD_PERSISTENT_STATE, 0x55 << 8 | 1);
    set(CP_HQD_PIPE_PRIORITY, 2);
    set(CP_HQD_QUEUE_PRIORITY, 0xF);
    set(CP_HQD_QUANTUM, 0x111);
    set(CP_HQD_PQ_BASE, (ring_va >> 8) as u32);
    set(CP_HQD_PQ_BASE_HI, (ring_va >> 40) as u32);
    set(CP_HQD_PQ_RPTR_REPORT_ADDR, (rptr_va & 0xFFFF_FFFC) as u32);
    set(CP_HQD_PQ_RPTR_REPORT_ADDR_HI, (rptr_va >> 32) as u32);
    set(CP_HQD_PQ_WPTR_POLL_ADDR, (wptr_va & 0xFFFF_FFF8) as u32);
    set(CP_HQD_PQ_WPTR_POLL_ADDR_HI, (wptr_va >> 32) as u32);
    set(
        CP_HQD_PQ_DOORBELL_CONTROL,
        (DOORBELL_MEC_RING0 * 2) << 2 | 1 << 30,
    );
    set(
        CP_HQD_PQ_CONTROL,
        5 << 8 | (log2(ring_bytes / 4).saturating_sub(1) & 0x3F),
    );
    set(CP_HQD_IB_CONTROL, 3 << 20);
    set(CP_HQD_HQ_STATUS0, 0x2000_4000);
    set(CP_MQD_CONTROL, 1 << 8);
    set(CP_HQD_VMID, 0);
    set(CP_HQD_EOP_BASE_ADDR, (eop_va >> 8) as u32);
    set(CP_HQD_EOP_BASE_ADDR_HI, (eop_va >> 40) as u32);
    set(
        CP_HQD_EOP_CONTROL,
        log2(eop_bytes / 4).saturating_sub(1) & 0x3F,
    );
    let bytes: Vec<u8> = mqd.iter().flat_map(|w| w.to_le_bytes()).collect();
    dev.vram.write_bytes(mqd_paddr, &bytes)?;
    dev.flush_hdp()?;
    let r = &dev.regs;
    r.write(GRBM_GFX_CNTL, grbm_select(1, 0, 0, 0))?;
    let base = r.addr(CP_MQD_BASE_ADDR)?;
    for i in 0..=(last - first) {
        r.wreg(base + i, mqd[MQD_REGS_AT + i as usize])?;
    }
    r.write(CP_HQD_ACTIVE, 1)?;
    r.write(GRBM_GFX_CNTL, 0)?;
    Ok(ComputeQueue {
        mqd_va,
        mqd_paddr,
        doorbell: DOORBELL_MEC_RING0,
    })
}

pub fn fini(dev: &mut AmDevice) -> PciResult<()> {
    use regs::*;
    let r = &dev.regs;
    if dev.gfx_queue.take().is_some() {
        r.write(GRBM_GFX_CNTL, grbm_select(1, 0, 0, 0))?;
        r.write(CP_HQD_DEQUEUE_REQUEST, 2)?;
        r.write(SPI_COMPUTE_QUEUE_RESET, 1)?;
        r.write(GRBM_GFX_CNTL, 0)?;
    }
    r.write(GCVM_CONTEXT0_CNTL, 0)?;
    Ok(())
}
