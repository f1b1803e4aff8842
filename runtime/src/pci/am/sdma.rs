//! SDMA (pci-am-interface.md §1.6 SDMA, F32 engines of SDMA 6): engine setup and queue 0 of
//! engine 0 programmed through its ring registers.

use super::{regs, AmDevice, AmGen};
use crate::pci::PciResult;

/// AMDGPU_NAVI10_DOORBELL_sDMA_ENGINE0.
pub const DOORBELL_SDMA0: u32 = 256;

#[derive(Debug, Clone, Copy)]
pub struct SdmaQueue {
    pub doorbell: u32,
}

pub fn init(dev: &mut AmDevice) -> PciResult<()> {
    use regs::*;
    let r = &dev.regs;
    if r.gen == AmGen::Gc12 {
        // SDMA 7 (RS64 MCU): hang watchdog 10 s (100 ms units), UTCL1 retry, reads no-alloc and
        // writes bypass in L2, the MCU out of halt/reset, traps on.
        r.update_fields(SDMA0_WATCHDOG_CNTL, &[("queue_hang_count", 100)])?;
        r.update_fields(SDMA0_UTCL1_CNTL, &[("resp_mode", 3), ("redo_delay", 9)])?;
        r.update_fields(
            SDMA0_UTCL1_PAGE,
            &[("rd_l2_policy", 2), ("wr_l2_policy", 3)],
        )?;
        r.update_fields(SDMA0_MCU_CNTL, &[("halt", 0), ("reset", 0)])?;
        r.update_fields(SDMA0_CNTL, &[("trap_enable", 1)])?;
        return dev.doorbell_enable(2, 0xE, 0x3, DOORBELL_SDMA0 * 2, 4);
    }
    r.update(SDMA0_WATCHDOG_CNTL, 0xFF, 100)?;
    // resp_mode 3, redo_delay 9.
    r.write(SDMA0_UTCL1_CNTL, 3 << 9 | 9)?;
    // rd_l2_policy 2, wr_l2_policy 3, llc_noalloc.
    r.write(SDMA0_UTCL1_PAGE, 2 << 12 | 3 << 14 | 1 << 24)?;
    // Un-halt the F32.
    r.update(SDMA0_F32_CNTL, 1, 0)?;
    // ctxempty_int_enable, trap_enable.
    r.update(SDMA0_CNTL, 1 << 28 | 1, 1 << 28 | 1)?;
    dev.doorbell_enable(2, 0xE, 0x3, DOORBELL_SDMA0 * 2, 4)?;
    Ok(())
}

pub fn setup_queue(
    dev: &mut AmDevice,
    ring_va: u64,
    ring_bytes: u64,
    rptr_va: u64,
    wptr_va: u64,
) -> PciResult<SdmaQueue> {
    use regs::*;
    let r = &dev.regs;
    if r.gen == AmGen::Gc12 {
        return setup_queue_fields(dev, ring_va, ring_bytes, rptr_va, wptr_va);
    }
    ring_addresses(r, ring_va, rptr_va, wptr_va)?;
    r.write(SDMA0_QUEUE0_DOORBELL_OFFSET, (DOORBELL_SDMA0 * 2) << 2)?;
    r.write(SDMA0_QUEUE0_DOORBELL, 1 << 28)?;
    r.write(SDMA0_QUEUE0_MINOR_PTR_UPDATE, 0)?;
    let rb_size = 63 - (ring_bytes / 4).max(1).leading_zeros();
    // rptr writeback (timer 4), f32 wptr poll, size, enable, privileged, vmid 0.
    r.write(
        SDMA0_QUEUE0_RB_CNTL,
        1 << 12 | 4 << 16 | 1 << 11 | rb_size << 1 | 1 | 1 << 23,
    )?;
    r.write(SDMA0_QUEUE0_IB_CNTL, 1)?;
    Ok(SdmaQueue {
        doorbell: DOORBELL_SDMA0,
    })
}

/// Queue 0 of SDMA 7 with every value encoded by field (MCU write-pointer polling).
fn setup_queue_fields(
    dev: &mut AmDevice,
    ring_va: u64,
    ring_bytes: u64,
    rptr_va: u64,
    wptr_va: u64,
) -> PciResult<SdmaQueue> {
    use regs::*;
    let r = &dev.regs;
    ring_addresses(r, ring_va, rptr_va, wptr_va)?;
    r.update_fields(
        SDMA0_QUEUE0_DOORBELL_OFFSET,
        &[("offset", DOORBELL_SDMA0 * 2)],
    )?;
    r.update_fields(SDMA0_QUEUE0_DOORBELL, &[("enable", 1)])?;
    r.write(SDMA0_QUEUE0_MINOR_PTR_UPDATE, 0)?;
    let rb_size = 63 - (ring_bytes / 4).max(1).leading_zeros();
    r.write_fields(
        SDMA0_QUEUE0_RB_CNTL,
        &[
            ("mcu_wptr_poll_enable", 1),
            ("rb_vmid", 0),
            ("rptr_writeback_enable", 1),
            ("rptr_writeback_timer", 4),
            ("rb_enable", 1),
            ("rb_priv", 1),
            ("rb_size", rb_size),
        ],
    )?;
    r.update_fields(SDMA0_QUEUE0_IB_CNTL, &[("ib_enable", 1)])?;
    Ok(SdmaQueue {
        doorbell: DOORBELL_SDMA0,
    })
}

pub fn fini(dev: &mut AmDevice) -> PciResult<()> {
    use regs::*;
    let r = &dev.regs;
    if r.gen == AmGen::Gc12 {
        if dev.sdma_queue.take().is_some() {
            r.update_fields(SDMA0_QUEUE0_RB_CNTL, &[("rb_enable", 0)])?;
            r.update_fields(SDMA0_QUEUE0_IB_CNTL, &[("ib_enable", 0)])?;
            r.update_fields(SDMA0_QUEUE0_DOORBELL, &[("enable", 0)])?;
            r.update_fields(SDMA0_QUEUE0_DOORBELL_OFFSET, &[("offset", 0)])?;
        }
        r.write_fields(GRBM_SOFT_RESET, &[("soft_reset_sdma0", 1)])?;
        std::thread::sleep(std::time::Duration::from_millis(10));
        return r.write(GRBM_SOFT_RESET, 0);
    }
    if dev.sdma_queue.take().is_some() {
        r.update(SDMA0_QUEUE0_RB_CNTL, 1, 0)?;
        r.update(SDMA0_QUEUE0_IB_CNTL, 1, 0)?;
    }
    r.update(GRBM_SOFT_RESET, 1 << 23, 1 << 23)?;
    r.update(GRBM_SOFT_RESET, 1 << 23, 0)?;
    Ok(())
}

/// Queue 0's pointers zeroed (under MINOR_PTR_UPDATE, left set for the caller to clear) and its
/// ring, read-pointer write-back and write-pointer poll addresses: alike on SDMA 6 and 7.
fn ring_addresses(r: &super::RegIo, ring_va: u64, rptr_va: u64, wptr_va: u64) -> PciResult<()> {
    use regs::*;
    r.write(SDMA0_QUEUE0_MINOR_PTR_UPDATE, 1)?;
    for reg in [
        SDMA0_QUEUE0_RB_RPTR,
        SDMA0_QUEUE0_RB_RPTR_HI,
        SDMA0_QUEUE0_RB_WPTR,
        SDMA0_QUEUE0_RB_WPTR_HI,
    ] {
        r.write(reg, 0)?;
    }
    r.write(SDMA0_QUEUE0_RB_BASE, (ring_va >> 8) as u32)?;
    r.write(SDMA0_QUEUE0_RB_BASE_HI, (ring_va >> 40) as u32)?;
    r.write(SDMA0_QUEUE0_RB_RPTR_ADDR_LO, rptr_va as u32)?;
    r.write(SDMA0_QUEUE0_RB_RPTR_ADDR_HI, (rptr_va >> 32) as u32)?;
    r.write(SDMA0_QUEUE0_RB_WPTR_POLL_ADDR_LO, wptr_va as u32)?;
    r.write(SDMA0_QUEUE0_RB_WPTR_POLL_ADDR_HI, (wptr_va >> 32) as u32)
}
