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

/// SDMA 4.4 (GC 9.4.3 / 9.5.0, MI300 / MI350): every engine is an instance of the SDMA block
/// with one SDMA_GFX ring, programmed as tinygrad's `AM_SDMA.setup_ring` does for SDMA 4.4
/// (tinygrad/runtime/support/am/ip.py at a9069c1). Registers and fields are sdma_4_4_2's
/// through the generated [`regs`] tables; the engines' doorbell ranges are routed by
/// [`super::gc9::Gc9::sdma_init`].
pub mod v4 {
    use super::super::gc9::{Gc9, DOORBELL_SDMA_ENGINE0};
    use super::{regs, SdmaQueue};
    use crate::pci::{PciError, PciResult};

    /// Doorbell slots between two engines' rings (tinygrad `(pipe+queue*4) * 0xA`, the stride
    /// of the DOORBELL0_CTRL_ENTRY ranges `sdma_init` programs).
    pub const DOORBELL_STRIDE: u32 = 0xA;

    /// The SDMA instance and doorbell of queue `idx` (tinygrad: pipe `idx / 4`, queue
    /// `idx % 4`, instance `pipe + queue * 4`).
    pub fn engine(idx: u32) -> (usize, u32) {
        let inst = idx / 4 + (idx % 4) * 4;
        (
            inst as usize,
            // Saturating: the caller refuses an instance discovery does not list, but a
            // queue number from anywhere must not overflow on the way there.
            DOORBELL_SDMA_ENGINE0.saturating_add(inst.saturating_mul(DOORBELL_STRIDE)),
        )
    }

    fn bad(msg: String) -> PciError {
        PciError::Discovery { offset: 0, msg }
    }

    /// Starts SDMA queue `idx`: pointers zeroed under MINOR_PTR_UPDATE, ring base, read-pointer
    /// write-back and write-pointer poll addresses, doorbell, then the ring and IBs enabled.
    /// The ring runs on doorbells: SDMA_GFX_RB_WPTR_POLL_CNTL is left as reset (tinygrad sets
    /// no poll-enable on 4.4; amdgpu's sdma_v4_4_2 enables F32 polling only under SR-IOV).
    pub fn setup_ring(
        g: &Gc9,
        idx: u32,
        ring_va: u64,
        ring_bytes: u64,
        rptr_va: u64,
        wptr_va: u64,
    ) -> PciResult<SdmaQueue> {
        use regs::*;
        let (inst, doorbell) = engine(idx);
        if inst >= g.sdmas {
            return Err(bad(format!(
                "SDMA queue {idx} needs SDMA instance {inst}; discovery lists {}",
                g.sdmas
            )));
        }
        // RB_BASE holds address bits 8.., the write-back/poll address fields bits 2...
        if !ring_va.is_multiple_of(256) || !ring_bytes.is_power_of_two() || ring_bytes < 256 {
            return Err(bad(format!(
                "SDMA ring at {ring_va:#x} of {ring_bytes:#x} bytes: needs 256-byte alignment and a power-of-two size of at least 256 bytes"
            )));
        }
        if !rptr_va.is_multiple_of(4) || !wptr_va.is_multiple_of(4) {
            return Err(bad(format!(
                "SDMA read/write pointers at {rptr_va:#x}/{wptr_va:#x} are not dword aligned"
            )));
        }
        g.write_fields(SDMA_GFX_MINOR_PTR_UPDATE, inst, &[("enable", 1)])?;
        for r in [
            SDMA_GFX_RB_RPTR,
            SDMA_GFX_RB_RPTR_HI,
            SDMA_GFX_RB_WPTR,
            SDMA_GFX_RB_WPTR_HI,
        ] {
            g.write(r, inst, 0)?;
        }
        g.write(SDMA_GFX_RB_BASE, inst, (ring_va >> 8) as u32)?;
        g.write(SDMA_GFX_RB_BASE_HI, inst, (ring_va >> 40) as u32)?;
        g.write_fields(
            SDMA_GFX_RB_RPTR_ADDR_LO,
            inst,
            &[("addr", (rptr_va as u32) >> 2)],
        )?;
        g.write(SDMA_GFX_RB_RPTR_ADDR_HI, inst, (rptr_va >> 32) as u32)?;
        g.write_fields(
            SDMA_GFX_RB_WPTR_POLL_ADDR_LO,
            inst,
            &[("addr", (wptr_va as u32) >> 2)],
        )?;
        g.write(SDMA_GFX_RB_WPTR_POLL_ADDR_HI, inst, (wptr_va >> 32) as u32)?;
        g.update(SDMA_GFX_DOORBELL_OFFSET, inst, &[("offset", doorbell * 2)])?;
        g.update(SDMA_GFX_DOORBELL, inst, &[("enable", 1)])?;
        g.write_fields(SDMA_GFX_MINOR_PTR_UPDATE, inst, &[("enable", 0)])?;
        // rb_size: log2 of the ring in dwords (tinygrad `(ring_size//4).bit_length()-1`).
        g.write_fields(
            SDMA_GFX_RB_CNTL,
            inst,
            &[
                ("rb_vmid", 0),
                ("rptr_writeback_enable", 1),
                ("rptr_writeback_timer", 4),
                ("rb_enable", 1),
                ("rb_priv", 1),
                ("rb_size", (ring_bytes / 4).ilog2()),
            ],
        )?;
        g.update(SDMA_GFX_IB_CNTL, inst, &[("ib_enable", 1)])?;
        Ok(SdmaQueue { doorbell })
    }

    /// Stops queue `idx` (tinygrad `AM_SDMA.fini_hw`: ring, IBs and doorbell off, doorbell
    /// offset cleared; SDMA 4 gets no GRBM soft reset there).
    pub fn fini_ring(g: &Gc9, idx: u32) -> PciResult<()> {
        use regs::*;
        let (inst, _) = engine(idx);
        g.update(SDMA_GFX_RB_CNTL, inst, &[("rb_enable", 0)])?;
        g.update(SDMA_GFX_IB_CNTL, inst, &[("ib_enable", 0)])?;
        g.update(SDMA_GFX_DOORBELL, inst, &[("enable", 0)])?;
        g.update(SDMA_GFX_DOORBELL_OFFSET, inst, &[("offset", 0)])
    }
}
