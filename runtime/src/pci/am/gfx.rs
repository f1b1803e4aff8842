//! GFX (pci-am-interface.md §1.6 GFX): RLC autoload wait, RS64 MEC start, GC hub, per-VMID
//! shader memory config, and a compute queue written straight into the HQD registers from an
//! MQD image (no KIQ/MES).

use super::gmc::{Hub, PhysRun};
use super::{regs, AmDevice, AmGen, AmReg, RegIo};
use crate::pci::PciResult;

/// AMDGPU_NAVI10_DOORBELL_MEC_RING0.
pub const DOORBELL_MEC_RING0: u32 = 3;
pub const MQD_HEADER: u32 = 0xC031_0800;
pub const MQD_SIZE: u64 = 0x1000;
/// MQD dword index of the first HQD register image (CP_MQD_BASE_ADDR).
pub const MQD_REGS_AT: usize = 0x80;

/// The compute MQD (`struct v11_compute_mqd` / `v12_compute_mqd` of the kernel's
/// v11_structs.h / v12_structs.h; the same places on both): dword indices of the fields the
/// driver sets outside the HQD register image.
pub mod mqd {
    /// `header`.
    pub const HEADER: usize = 0;
    /// `compute_static_thread_mgmt_se0..se7`: the CU masks of each shader engine.
    pub const STATIC_THREAD_MGMT_SE: [usize; 8] = [23, 24, 26, 27, 44, 45, 46, 47];
    /// `cp_mqd_base_addr_lo`: from here on the MQD mirrors the HQD registers from
    /// CP_MQD_BASE_ADDR to CP_HQD_PQ_WPTR_HI in register order.
    pub const REGS_AT: usize = 128;
}

/// `cp_hqd_hq_status0` / GC 12's `cp_hqd_hq_scheduler0` of the kernel's compute MQD init
/// (bit 14 c_queue_debug_en and bit 29, which the register JSON does not name).
pub const HQ_STATUS0_INIT: u32 = 0x2000_4000;
/// gfx_v11/v12 golden setting: TCP_CNTL |= bit 29 (no field in the register JSON).
pub const TCP_CNTL_GOLDEN: u32 = 1 << 29;

/// GRBM_GFX_CNTL selecting (me, pipe, queue, vmid), encoded by field.
pub fn select(r: &RegIo, me: u32, pipe: u32, queue: u32, vmid: u32) -> PciResult<()> {
    r.write_fields(
        regs::GRBM_GFX_CNTL,
        &[
            ("meid", me),
            ("pipeid", pipe),
            ("queueid", queue),
            ("vmid", vmid),
        ],
    )
}

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

/// GC 12: the RS64 PFP, ME and MEC started at their firmware program counters (each engine
/// selected, program counter, pipe reset pulsed), as gfx_v12_0's cp_resume for RS64.
fn config_rs64(dev: &AmDevice) -> PciResult<()> {
    use regs::*;
    let r = &dev.regs;
    let missing = |what: &str| crate::pci::PciError::Firmware {
        file: format!("gc_12 {what}"),
        msg: "no RS64 program start (gfx v2 header)".into(),
    };
    let pfp = dev.fw.pfp_start.ok_or_else(|| missing("pfp"))?;
    let me = dev.fw.me_start.ok_or_else(|| missing("me"))?;
    for (meid, start, lo, hi, cntl, reset) in [
        (
            0,
            pfp,
            CP_PFP_PRGRM_CNTR_START,
            CP_PFP_PRGRM_CNTR_START_HI,
            CP_ME_CNTL,
            "pfp_pipe0_reset",
        ),
        (
            0,
            me,
            CP_ME_PRGRM_CNTR_START,
            CP_ME_PRGRM_CNTR_START_HI,
            CP_ME_CNTL,
            "me_pipe0_reset",
        ),
        (
            1,
            dev.fw.mec_start,
            CP_MEC_RS64_PRGRM_CNTR_START,
            CP_MEC_RS64_PRGRM_CNTR_START_HI,
            CP_MEC_RS64_CNTL,
            "mec_pipe0_reset",
        ),
    ] {
        select(r, meid, 0, 0, 0)?;
        // The program counter registers take the start in dwords.
        let pc = start >> 2;
        r.write(lo, pc as u32)?;
        r.write(hi, (pc >> 32) as u32)?;
        select(r, 0, 0, 0, 0)?;
        r.update_fields(cntl, &[(reset, 1)])?;
        r.update_fields(cntl, &[(reset, 0)])?;
    }
    Ok(())
}

/// GFX on GC 12 (tinygrad's AM_GFX.init_hw order): RLC autoload done, GC hub, RS64 engines,
/// golden TCP bit, RLC and SRM on, SPM VMID, doorbell routing to the CP, per-VMID shader memory
/// apertures, the MEC doorbell range, MEC pipe 0 running.
pub fn init_gc12(dev: &mut AmDevice) -> PciResult<()> {
    use regs::*;
    wait_autoload_gc12(dev)?;
    dev.gmc.init_hub(&dev.regs, Hub::Gc)?;
    config_rs64(dev)?;
    let r = &dev.regs;
    r.write(TCP_CNTL, r.read(TCP_CNTL)? | TCP_CNTL_GOLDEN)?;
    r.write_fields(RLC_CNTL, &[("rlc_enable_f32", 1)])?;
    r.update_fields(RLC_SRM_CNTL, &[("srm_enable", 1), ("auto_incr_addr", 1)])?;
    r.write_fields(RLC_SPM_MC_CNTL, &[("rlc_spm_vmid", 0xF)])?;
    dev.doorbell_enable(0, 0x3, 0x3, 0, 0)?;
    dev.doorbell_enable(3, 0x6, 0x3, 0, 0)?;
    let r = &dev.regs;
    r.update_fields(GRBM_CNTL, &[("read_timeout", 0xFF)])?;
    for vmid in 0..16 {
        select(r, 0, 0, 0, vmid)?;
        // 64-bit addressing, unaligned access, instruction prefetch 3 (the kernel's default).
        r.write_fields(
            SH_MEM_CONFIG,
            &[
                ("address_mode", 0),
                ("alignment_mode", 3),
                ("initial_inst_prefetch", 3),
            ],
        )?;
        // LDS at 0x1000_0000_0000_0000, scratch at 0x2000_... (the shared/private apertures).
        r.write_fields(SH_MEM_BASES, &[("shared_base", 1), ("private_base", 2)])?;
    }
    select(r, 0, 0, 0, 0)?;
    r.write(CP_MEC_DOORBELL_RANGE_LOWER, 0)?;
    r.write(CP_MEC_DOORBELL_RANGE_UPPER, 0xF8)?;
    r.update_fields(
        CP_MEC_RS64_CNTL,
        &[
            ("mec_pipe0_reset", 0),
            ("mec_pipe0_active", 1),
            ("mec_halt", 0),
        ],
    )?;
    std::thread::sleep(std::time::Duration::from_millis(50));
    Ok(())
}

/// GC 12: autoload is over when the CP is idle or the RLC reports bootload_complete.
fn wait_autoload_gc12(dev: &AmDevice) -> PciResult<()> {
    use regs::*;
    let (r, t) = (&dev.regs, dev.timeout_ms);
    let t0 = std::time::Instant::now();
    loop {
        if r.read(CP_STAT)? == 0 {
            return Ok(());
        }
        let st = r.read(RLC_RLCS_BOOTLOAD_STATUS)?;
        if r.decode(RLC_RLCS_BOOTLOAD_STATUS, st, "bootload_complete")? == 1 {
            return Ok(());
        }
        if t0.elapsed().as_millis() as u64 > t {
            return Err(crate::pci::PciError::Timeout {
                block: "RLC",
                what: "autoload of the CP/SDMA microcode (CP_STAT idle or bootload_complete)"
                    .into(),
                reg: RLC_RLCS_BOOTLOAD_STATUS.name,
                value: st,
                ms: t,
            });
        }
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
}

/// GFX in a partial boot (tinygrad's AM_GFX.init_hw with `partial_boot`, i.e. `reset_mec`):
/// the microcode the RLC autoloaded, the per-VMID shader memory setup, the doorbell routing and
/// the MEC doorbell range survive an orderly teardown, so only the GC hub is programmed again
/// (our teardown turns its context off on GC 11, tinygrad's does not) and the MEC is dequeued,
/// reset and restarted at its firmware program counter.
pub fn reinit(dev: &mut AmDevice) -> PciResult<()> {
    use regs::*;
    let gc12 = dev.regs.gen == AmGen::Gc12;
    if gc12 {
        wait_autoload_gc12(dev)?;
    } else {
        dev.regs.poll(
            RLC_RLCS_BOOTLOAD_STATUS,
            1 << 31,
            1 << 31,
            dev.timeout_ms,
            "RLC",
            "autoload of the CP/SDMA microcode (bootload_complete)",
        )?;
    }
    dev.gmc.init_hub(&dev.regs, Hub::Gc)?;
    let r = &dev.regs;
    // tinygrad's _dequeue_hqds: both MQD slots of ME1 pipe 0, waves reset.
    for q in 0..2 {
        select(r, 1, 0, q, 0)?;
        if r.read(CP_HQD_ACTIVE)? & 1 != 0 {
            r.write(CP_HQD_DEQUEUE_REQUEST, 2)?;
            r.write(SPI_COMPUTE_QUEUE_RESET, 1)?;
            r.poll(CP_HQD_ACTIVE, 1, 0, dev.timeout_ms, "CP", "HQD dequeue")?;
        }
    }
    select(r, 0, 0, 0, 0)?;
    if gc12 {
        // GC 12 resets the MEC through mec_pipe0_reset in config_rs64.
        config_rs64(dev)?;
        dev.regs.update_fields(
            CP_MEC_RS64_CNTL,
            &[
                ("mec_pipe0_reset", 0),
                ("mec_pipe0_active", 1),
                ("mec_halt", 0),
            ],
        )?;
    } else {
        r.write_fields(
            GRBM_SOFT_RESET,
            &[("soft_reset_cp", 1), ("soft_reset_cpc", 1)],
        )?;
        std::thread::sleep(std::time::Duration::from_millis(50));
        r.write(GRBM_SOFT_RESET, 0)?;
        // As in [`init`]: program counter from the firmware header, pipe reset pulsed, then
        // pipe 0 active and not halted.
        r.write(GRBM_GFX_CNTL, grbm_select(1, 0, 0, 0))?;
        let start = dev.fw.mec_start;
        r.write(CP_MEC_RS64_PRGRM_CNTR_START, (start >> 2) as u32)?;
        r.write(CP_MEC_RS64_PRGRM_CNTR_START_HI, (start >> 34) as u32)?;
        r.write(CP_MEC_RS64_CNTL, 1 << 16 | 1 << 30)?;
        r.write(CP_MEC_RS64_CNTL, 1 << 30)?;
        r.write(GRBM_GFX_CNTL, 0)?;
        r.write(CP_MEC_RS64_CNTL, 1 << 26)?;
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    Ok(())
}

/// GC 12 clock gating (coarse/medium grain, light sleep) under RLC safe mode, as the kernel
/// and tinygrad enable it; perfmon clocks stay on for the counters.
pub fn clockgating_gc12(dev: &mut AmDevice) -> PciResult<()> {
    use regs::*;
    let r = &dev.regs;
    r.write_fields(RLC_SAFE_MODE, &[("message", 1), ("cmd", 1)])?;
    r.poll(
        RLC_SAFE_MODE,
        1,
        0,
        dev.timeout_ms,
        "RLC",
        "safe mode entry",
    )?;
    r.update_fields(
        RLC_CGCG_CGLS_CTRL,
        &[
            ("cgcg_gfx_idle_threshold", 0x36),
            ("cgcg_en", 1),
            ("cgls_rep_compansat_delay", 0xF),
            ("cgls_en", 1),
        ],
    )?;
    r.update_fields(
        CP_RB_WPTR_POLL_CNTL,
        &[("poll_frequency", 0x100), ("idle_poll_count", 0x90)],
    )?;
    r.update_fields(
        CP_INT_CNTL,
        &[
            ("cntx_busy_int_enable", 1),
            ("cntx_empty_int_enable", 1),
            ("cmp_busy_int_enable", 1),
        ],
    )?;
    r.update_fields(SDMA0_RLC_CGCG_CTRL, &[("cgcg_int_enable", 1)])?;
    r.update_fields(SDMA1_RLC_CGCG_CTRL, &[("cgcg_int_enable", 1)])?;
    r.update_fields(
        RLC_CGTT_MGCG_OVERRIDE,
        &[
            ("perfmon_clock_state", 1),
            ("gfxip_repeater_fgcg_override", 0),
            ("gfxip_fgcg_override", 0),
            ("grbm_cgtt_sclk_override", 0),
            ("rlc_cgtt_sclk_override", 0),
            ("gfxip_mgcg_override", 0),
            ("gfxip_cgls_override", 0),
            ("gfxip_cgcg_override", 0),
        ],
    )?;
    r.write_fields(RLC_SAFE_MODE, &[("message", 0), ("cmd", 1)])?;
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
    if dev.regs.gen == AmGen::Gc12 {
        return setup_compute_queue_fields(
            dev, mqd_va, mqd_paddr, ring_va, ring_bytes, rptr_va, wptr_va, eop_va, eop_bytes,
        );
    }
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

/// The GC 12 compute MQD (v12_compute_mqd), every register value encoded by field with this
/// generation's layout; written to VRAM and into the HQD registers of ME1 pipe 0 queue 0.
#[allow(clippy::too_many_arguments)]
fn setup_compute_queue_fields(
    dev: &mut AmDevice,
    mqd_va: u64,
    mqd_paddr: u64,
    ring_va: u64,
    ring_bytes: u64,
    rptr_va: u64,
    wptr_va: u64,
    eop_va: u64,
    eop_bytes: u64,
) -> PciResult<ComputeQueue> {
    use regs::*;
    let r = &dev.regs;
    let first = r.def(CP_MQD_BASE_ADDR)?.offset;
    let last = r.def(CP_HQD_PQ_WPTR_HI)?.offset;
    let mut img = vec![0u32; (MQD_SIZE / 4) as usize];
    img[mqd::HEADER] = MQD_HEADER;
    for at in mqd::STATIC_THREAD_MGMT_SE {
        img[at] = 0xFFFF_FFFF;
    }
    let mut set = |reg: AmReg, v: u32| -> PciResult<()> {
        let off = r.def(reg)?.offset;
        img[mqd::REGS_AT + (off - first) as usize] = v;
        Ok(())
    };
    set(CP_MQD_BASE_ADDR, (mqd_va & 0xFFFF_FFFC) as u32)?;
    set(CP_MQD_BASE_ADDR_HI, (mqd_va >> 32) as u32)?;
    set(
        CP_HQD_PERSISTENT_STATE,
        r.encode(
            CP_HQD_PERSISTENT_STATE,
            &[("preload_size", 0x55), ("preload_req", 1)],
        )?,
    )?;
    set(CP_HQD_PIPE_PRIORITY, 2)?;
    set(CP_HQD_QUEUE_PRIORITY, 0xF)?;
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
    set(CP_HQD_PQ_BASE, (ring_va >> 8) as u32)?;
    set(CP_HQD_PQ_BASE_HI, (ring_va >> 40) as u32)?;
    set(CP_HQD_PQ_RPTR_REPORT_ADDR, (rptr_va & 0xFFFF_FFFC) as u32)?;
    set(CP_HQD_PQ_RPTR_REPORT_ADDR_HI, (rptr_va >> 32) as u32)?;
    set(CP_HQD_PQ_WPTR_POLL_ADDR, (wptr_va & 0xFFFF_FFF8) as u32)?;
    set(CP_HQD_PQ_WPTR_POLL_ADDR_HI, (wptr_va >> 32) as u32)?;
    set(
        CP_HQD_PQ_DOORBELL_CONTROL,
        r.encode(
            CP_HQD_PQ_DOORBELL_CONTROL,
            &[
                ("doorbell_offset", DOORBELL_MEC_RING0 * 2),
                ("doorbell_en", 1),
            ],
        )?,
    )?;
    set(
        CP_HQD_PQ_CONTROL,
        r.encode(
            CP_HQD_PQ_CONTROL,
            &[
                ("rptr_block_size", 5),
                ("unord_dispatch", 0),
                ("queue_size", log2(ring_bytes / 4).saturating_sub(1) & 0x3F),
            ],
        )?,
    )?;
    set(
        CP_HQD_IB_CONTROL,
        r.encode(CP_HQD_IB_CONTROL, &[("min_ib_avail_size", 3)])?,
    )?;
    set(
        r.first_of(&[CP_HQD_HQ_SCHEDULER0, CP_HQD_HQ_STATUS0])?,
        HQ_STATUS0_INIT,
    )?;
    set(
        CP_MQD_CONTROL,
        r.encode(CP_MQD_CONTROL, &[("priv_state", 1)])?,
    )?;
    set(CP_HQD_VMID, 0)?;
    set(CP_HQD_EOP_BASE_ADDR, (eop_va >> 8) as u32)?;
    set(CP_HQD_EOP_BASE_ADDR_HI, (eop_va >> 40) as u32)?;
    set(
        CP_HQD_EOP_CONTROL,
        r.encode(
            CP_HQD_EOP_CONTROL,
            &[("eop_size", log2(eop_bytes / 4).saturating_sub(1) & 0x3F)],
        )?,
    )?;
    let bytes: Vec<u8> = img.iter().flat_map(|w| w.to_le_bytes()).collect();
    dev.vram.write_bytes(mqd_paddr, &bytes)?;
    let r = &dev.regs;
    select(r, 1, 0, 0, 0)?;
    let base = r.addr(CP_MQD_BASE_ADDR)?;
    for i in 0..=(last - first) {
        r.wreg(base + i, img[mqd::REGS_AT + i as usize])?;
    }
    r.write(CP_HQD_ACTIVE, 1)?;
    dev.flush_hdp()?;
    select(&dev.regs, 0, 0, 0, 0)?;
    Ok(ComputeQueue {
        mqd_va,
        mqd_paddr,
        doorbell: DOORBELL_MEC_RING0,
    })
}

pub fn fini(dev: &mut AmDevice) -> PciResult<()> {
    use regs::*;
    let r = &dev.regs;
    if r.gen == AmGen::Gc12 {
        // Dequeue with waves reset, as tinygrad's _dequeue_hqds; the hub stays programmed.
        if dev.gfx_queue.take().is_some() {
            select(r, 1, 0, 0, 0)?;
            if r.read(CP_HQD_ACTIVE)? & 1 != 0 {
                r.write(CP_HQD_DEQUEUE_REQUEST, 2)?;
                r.write(SPI_COMPUTE_QUEUE_RESET, 1)?;
                r.poll(CP_HQD_ACTIVE, 1, 0, dev.timeout_ms, "CP", "HQD dequeue")?;
            }
            select(r, 0, 0, 0, 0)?;
        }
        return Ok(());
    }
    if dev.gfx_queue.take().is_some() {
        r.write(GRBM_GFX_CNTL, grbm_select(1, 0, 0, 0))?;
        r.write(CP_HQD_DEQUEUE_REQUEST, 2)?;
        r.write(SPI_COMPUTE_QUEUE_RESET, 1)?;
        r.write(GRBM_GFX_CNTL, 0)?;
    }
    r.write(GCVM_CONTEXT0_CNTL, 0)?;
    Ok(())
}
