//! PSP, the security processor that loads all firmware (pci-am-interface.md §1.6 PSP): the
//! bootloader mailbox (SOS components), the KM ring, and ring commands (TOC, SMU firmware, TMR,
//! IP firmware, RLC autoload).

use super::firmware::{fw_type, Firmware, BL_SOS};
use super::gmc::Gmc;
use super::{regs, RegIo};
use crate::pci::{PciError, PciResult};

/// `tmr_flags` of GFX_CMD_ID_SETUP_TMR: both the MC (virtual) and physical address are given.
pub const TMR_FLAG_VIRT_PHY_ADDR: u32 = 1 << 1;

pub const RING_SIZE: u64 = 64 << 10;
pub const MSG1_SIZE: u64 = 1 << 20;
pub const CMD_SIZE: u64 = 1024;
pub const FRAME_SIZE: u64 = 64;
pub const MAX_TMR: u64 = 0x130_0000;

pub const CMD_SETUP_TMR: u32 = 5;
pub const CMD_LOAD_IP_FW: u32 = 6;
pub const CMD_LOAD_TOC: u32 = 32;
pub const CMD_AUTOLOAD_RLC: u32 = 33;
pub const CMD_SRIOV_SPATIAL_PART: u32 = 39;
pub const RING_TYPE_KM: u32 = 2;
pub const CMD_DESTROY_RINGS: u32 = 0x30000;
/// Offsets in `psp_gfx_cmd_resp`.
pub const RESP_STATUS: u64 = 864;
pub const RESP_TMR_SIZE: u64 = 880;

/// Whether the PSP of MP0 `v` sets up the TMR itself at boot (tinygrad's boot_time_tmr:
/// PSP 14.0.2/14.0.3, the RDNA4 parts, and 13.0.6/13.0.14, MI300).
pub fn boot_time_tmr(v: (u32, u32, u32)) -> bool {
    matches!(v, (13, 0, 6) | (13, 0, 14) | (14, 0, 2) | (14, 0, 3))
}

/// Whether a boot-time TMR needs no SETUP_TMR at all (tinygrad's autoload_tmr: every part but
/// MP0 13.0.6/13.0.14, which get an empty SETUP_TMR).
pub fn autoload_tmr(v: (u32, u32, u32)) -> bool {
    !matches!(v, (13, 0, 6) | (13, 0, 14))
}

/// The memory the PSP's buffers live in: boot VRAM of the GC 11/12 [`Gmc`] or of a GC 9 device.
pub trait PspMem {
    fn palloc(&mut self, size: u64, align: u64) -> PciResult<u64>;
    fn vram(&self) -> std::sync::Arc<dyn crate::platform::Mmio>;
    /// MC address of VRAM offset `paddr`.
    fn mc(&self, paddr: u64) -> u64;
    /// The physical address SETUP_TMR is given (XGMI address on GC 9; the offset elsewhere).
    fn phys(&self, paddr: u64) -> u64 {
        paddr
    }
    fn flush_hdp(&self, r: &RegIo) -> PciResult<()>;
}

impl PspMem for Gmc {
    fn palloc(&mut self, size: u64, align: u64) -> PciResult<u64> {
        Gmc::palloc(self, size, align)
    }
    fn vram(&self) -> std::sync::Arc<dyn crate::platform::Mmio> {
        Gmc::vram(self)
    }
    fn mc(&self, paddr: u64) -> u64 {
        Gmc::mc(self, paddr)
    }
    fn flush_hdp(&self, r: &RegIo) -> PciResult<()> {
        Gmc::flush_hdp(self, r)
    }
}

/// Whether SOS is running (C2PMSG_81 ≠ 0).
pub fn sos_alive(r: &RegIo) -> PciResult<bool> {
    Ok(r.read(regs::MP0_SMN_C2PMSG_81)? != 0)
}

#[derive(Default)]
pub struct Psp {
    /// VRAM offsets of the msg1 buffer, the ring, the command buffer and the fence dword.
    msg1: u64,
    ring: u64,
    cmd: u64,
    fence: u64,
    /// Ring write pointer in dwords.
    wptr: u32,
    pub tmr_size: u64,
    /// The PSP reserves the TMR at boot ([`boot_time_tmr`]): no SETUP_TMR of ours.
    pub boot_time_tmr: bool,
    /// With a boot-time TMR, still send an empty SETUP_TMR (`!`[`autoload_tmr`]).
    pub empty_setup_tmr: bool,
    /// Firmware types loaded, in order (for logs and tests).
    pub loaded: Vec<u32>,
}

fn name_of(cmd: u32) -> &'static str {
    match cmd {
        CMD_SETUP_TMR => "SETUP_TMR",
        CMD_LOAD_IP_FW => "LOAD_IP_FW",
        CMD_LOAD_TOC => "LOAD_TOC",
        CMD_AUTOLOAD_RLC => "AUTOLOAD_RLC",
        CMD_SRIOV_SPATIAL_PART => "SRIOV_SPATIAL_PART",
        _ => "command",
    }
}

impl Psp {
    /// The msg1 buffer, ring, command buffer and fence in boot VRAM (the software half of the
    /// bring-up, which a partial boot repeats so later boot allocations land where they did).
    pub fn alloc<M: PspMem>(&mut self, gmc: &mut M) -> PciResult<()> {
        self.msg1 = gmc.palloc(MSG1_SIZE, MSG1_SIZE)?;
        self.ring = gmc.palloc(RING_SIZE, 0x1000)?;
        self.cmd = gmc.palloc(0x1000, 0x1000)?;
        self.fence = gmc.palloc(0x1000, 0x1000)?;
        Ok(())
    }

    /// Whether the bring-up gives the PSP a TMR of `tmr_size` bytes from boot VRAM.
    pub fn needs_tmr(&self, tmr_size: u64) -> bool {
        tmr_size > 0 && !self.boot_time_tmr
    }

    /// The TMR's boot VRAM (1 MiB aligned).
    pub fn alloc_tmr<M: PspMem>(&mut self, gmc: &mut M, tmr_size: u64) -> PciResult<u64> {
        gmc.palloc(tmr_size, 1 << 20)
    }

    pub fn init<M: PspMem>(
        &mut self,
        r: &RegIo,
        gmc: &mut M,
        fw: &Firmware,
        t: u64,
    ) -> PciResult<()> {
        use regs::*;
        self.alloc(gmc)?;
        let vram = gmc.vram();

        // 1. SOS components through the bootloader.
        if !sos_alive(r)? {
            for c in &fw.sos {
                r.poll(
                    MP0_SMN_C2PMSG_35,
                    1 << 31,
                    1 << 31,
                    t,
                    "PSP bootloader",
                    &format!("ready for {}", c.name),
                )?;
                if c.data.len() as u64 > MSG1_SIZE {
                    return Err(PciError::Firmware {
                        file: c.name.into(),
                        msg: format!("{} bytes do not fit the 1 MiB PSP buffer", c.data.len()),
                    });
                }
                vram.write_bytes(self.msg1, &c.data)?;
                gmc.flush_hdp(r)?;
                r.write(MP0_SMN_C2PMSG_36, (gmc.mc(self.msg1) >> 20) as u32)?;
                r.write(MP0_SMN_C2PMSG_35, c.bl_cmd)?;
                if c.bl_cmd == BL_SOS {
                    let t0 = std::time::Instant::now();
                    while !sos_alive(r)? {
                        if t0.elapsed().as_millis() as u64 > t {
                            return Err(PciError::Timeout {
                                block: "PSP",
                                what: "SOS to start after loading".into(),
                                reg: MP0_SMN_C2PMSG_81.name,
                                value: 0,
                                ms: t,
                            });
                        }
                        std::thread::sleep(std::time::Duration::from_micros(200));
                    }
                }
            }
        }

        // 2. The KM ring.
        if r.read(MP0_SMN_C2PMSG_71)? != 0 {
            r.write(MP0_SMN_C2PMSG_64, CMD_DESTROY_RINGS)?;
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        r.poll(
            MP0_SMN_C2PMSG_64,
            1 << 31,
            1 << 31,
            t,
            "PSP",
            "ready for ring creation",
        )?;
        let mc = gmc.mc(self.ring);
        r.write(MP0_SMN_C2PMSG_69, mc as u32)?;
        r.write(MP0_SMN_C2PMSG_70, (mc >> 32) as u32)?;
        r.write(MP0_SMN_C2PMSG_71, RING_SIZE as u32)?;
        r.write(MP0_SMN_C2PMSG_64, RING_TYPE_KM << 16)?;
        std::thread::sleep(std::time::Duration::from_micros(100));
        r.poll(
            MP0_SMN_C2PMSG_64,
            0x8000_FFFF,
            0x8000_0000,
            t,
            "PSP",
            "KM ring creation",
        )?;
        self.wptr = 0;

        // 4. TOC → TMR size.
        vram.write_bytes(self.msg1, &fw.toc)?;
        let toc_mc = gmc.mc(self.msg1);
        let resp = self.submit(
            r,
            gmc,
            CMD_LOAD_TOC,
            &[toc_mc as u32, (toc_mc >> 32) as u32, fw.toc.len() as u32],
            t,
        )?;
        self.tmr_size = u64::from(resp.1);
        if self.tmr_size > MAX_TMR {
            return Err(PciError::Rejected {
                block: "PSP",
                what: format!("LOAD_TOC: TMR size {:#x} above {MAX_TMR:#x}", self.tmr_size),
                status: 0,
            });
        }
        // 5. SMU firmware first (where the driver loads one).
        if let Some(smu) = &fw.smu {
            self.load_fw(r, gmc, fw_type::SMU, &smu.data, t)?;
        }
        // 6. TMR (1 MiB aligned, in boot VRAM; virt_phy_addr set), unless PSP made it at boot.
        if self.needs_tmr(self.tmr_size) {
            let tmr = self.alloc_tmr(gmc, self.tmr_size)?;
            let tmc = gmc.mc(tmr);
            self.submit(
                r,
                gmc,
                CMD_SETUP_TMR,
                // buf_phy_addr lo/hi (MC), buf_size, tmr_flags, system_phy_addr lo/hi (the VRAM
                // physical offset). tmr_flags bit 0 is sriov_enabled, bit 1 virt_phy_addr.
                &[
                    tmc as u32,
                    (tmc >> 32) as u32,
                    self.tmr_size as u32,
                    TMR_FLAG_VIRT_PHY_ADDR,
                    gmc.phys(tmr) as u32,
                    (gmc.phys(tmr) >> 32) as u32,
                ],
                t,
            )?;
        } else if self.boot_time_tmr && self.empty_setup_tmr {
            // The PSP's own TMR: addresses and size 0, virt_phy_addr still set (tinygrad).
            self.submit(
                r,
                gmc,
                CMD_SETUP_TMR,
                &[0, 0, 0, TMR_FLAG_VIRT_PHY_ADDR, 0, 0],
                t,
            )?;
        }
        // 7. The rest, then RLC autoload (GC 11+) or the register list (GC 9).
        for f in &fw.ip {
            self.load_fw(r, gmc, f.fw_type, &f.data, t)?;
        }
        match &fw.reg_list {
            Some(rl) => self.load_fw(r, gmc, fw_type::REG_LIST, rl, t)?,
            None => {
                self.submit(r, gmc, CMD_AUTOLOAD_RLC, &[], t)?;
            }
        }
        Ok(())
    }

    /// GFX_CMD_ID_SRIOV_SPATIAL_PART: the XCCs as `mode` partitions (GC 9 with several XCCs
    /// asks for 1 after the MECs start, as tinygrad's AM_GFX.init_hw).
    pub fn spatial_partition<M: PspMem>(
        &mut self,
        r: &RegIo,
        mem: &mut M,
        mode: u32,
        t: u64,
    ) -> PciResult<()> {
        self.submit(r, mem, CMD_SRIOV_SPATIAL_PART, &[mode], t)?;
        Ok(())
    }

    fn load_fw<M: PspMem>(
        &mut self,
        r: &RegIo,
        gmc: &mut M,
        ty: u32,
        data: &[u8],
        t: u64,
    ) -> PciResult<()> {
        if data.len() as u64 > MSG1_SIZE {
            return Err(PciError::Firmware {
                file: format!("firmware type {ty}"),
                msg: format!("{} bytes do not fit the 1 MiB PSP buffer", data.len()),
            });
        }
        gmc.vram().write_bytes(self.msg1, data)?;
        let mc = gmc.mc(self.msg1);
        self.submit(
            r,
            gmc,
            CMD_LOAD_IP_FW,
            &[mc as u32, (mc >> 32) as u32, data.len() as u32, ty],
            t,
        )?;
        self.loaded.push(ty);
        Ok(())
    }

    /// Writes a command, queues a ring frame, waits for its fence; returns (status, tmr_size).
    fn submit<M: PspMem>(
        &mut self,
        r: &RegIo,
        gmc: &mut M,
        cmd_id: u32,
        args: &[u32],
        t: u64,
    ) -> PciResult<(u32, u32)> {
        let vram = gmc.vram();
        let mut cmd = vec![0u8; CMD_SIZE as usize];
        let put = |b: &mut [u8], at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        put(&mut cmd, 0, CMD_SIZE as u32);
        put(&mut cmd, 8, cmd_id);
        for (i, a) in args.iter().enumerate() {
            put(&mut cmd, 28 + 4 * i, *a);
        }
        vram.write_bytes(self.cmd, &cmd)?;
        let prev = self.wptr;
        let fence_value = prev + 1;
        let (cmc, fmc) = (gmc.mc(self.cmd), gmc.mc(self.fence));
        let mut frame = vec![0u8; FRAME_SIZE as usize];
        put(&mut frame, 0, cmc as u32);
        put(&mut frame, 4, (cmc >> 32) as u32);
        put(&mut frame, 8, CMD_SIZE as u32);
        put(&mut frame, 12, fmc as u32);
        put(&mut frame, 16, (fmc >> 32) as u32);
        put(&mut frame, 20, fence_value);
        let slot = (u64::from(prev) * 4) % RING_SIZE;
        vram.write_bytes(self.ring + slot, &frame)?;
        gmc.flush_hdp(r)?;
        self.wptr = prev + (FRAME_SIZE / 4) as u32;
        r.write(regs::MP0_SMN_C2PMSG_67, self.wptr % (RING_SIZE / 4) as u32)?;
        let t0 = std::time::Instant::now();
        loop {
            if vram.read32(self.fence)? == fence_value {
                break;
            }
            if t0.elapsed().as_millis() as u64 > t {
                return Err(PciError::Timeout {
                    block: "PSP",
                    what: format!("{} (fence {fence_value} never written)", name_of(cmd_id)),
                    reg: regs::MP0_SMN_C2PMSG_67.name,
                    value: self.wptr,
                    ms: t,
                });
            }
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
        let status = vram.read32(self.cmd + RESP_STATUS)?;
        if status != 0 {
            return Err(PciError::Rejected {
                block: "PSP",
                what: name_of(cmd_id).into(),
                status,
            });
        }
        Ok((status, vram.read32(self.cmd + RESP_TMR_SIZE)?))
    }
}
