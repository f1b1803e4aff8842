//! The emulated PCI GPU: a Navi31 (gfx1100, GC 11) or a Navi48/Navi44 (gfx1201/gfx1200, GC 12)
//! seen as a PCI function, backed by the same emulated engines as the KFD emulator (CP, SDMA,
//! shader engines), so the real AM driver ([`runtime::pci::am`]) runs unchanged against it.
//! Register placements come from the runtime's per-generation tables ([`AmReg::on`]) for the GC
//! generation of the discovered IP versions; the bring-up handshakes (PSP 13/14 bootloader and
//! ring, SMU 13/14 mailbox, TLB invalidation, HQD/SDMA queue start) are the same on both.
//! The MI350 (gfx950, GC 9.5.0, 8 XCCs) has its own register model ([`gc9`]) over the same
//! PSP/HDP handling, with one GC instance per XCC in discovery.
//!
//! # Plain API (what a fake USB bridge or any other transport calls)
//!
//! [`EmuPciGpu`] is `Clone` (a handle) and `Send + Sync`:
//! - `config_read(offset, len) -> u32`, `config_write(offset, len, value)`: 256-byte config space
//!   (vendor 0x1002, device 0x744c, COMMAND at 0x04 — bus mastering must be set before queues run).
//! - `bar_read(bar, offset, &mut [u8])`, `bar_write(bar, offset, &[u8])`: BAR0 = VRAM (byte
//!   addressed, 1 GiB by default), BAR2 = doorbells (8 KiB; a 64-bit store to slot *i* at byte
//!   8·i sets that queue's write pointer and runs the queues), BAR5 = registers (2 MiB; dword
//!   accesses; register *r* at byte 4·r; the register model answers the bring-up handshakes).
//! - DMA memory: the GPU reaches system memory by bus address. `alloc_dma(size) -> bus address`
//!   backs fresh pages, `add_dma_region(bus, len)` backs a caller-chosen range (e.g. a bridge's
//!   SRAM window), `dma_read(bus, &mut [u8])` / `dma_write(bus, &[u8])` access it from the host
//!   side, `free_dma(bus)` releases it.
//! - `wait_interrupt()` runs pending work and reports whether an MSI was raised since last call.
//!
//! It also implements [`runtime::pci::PciDevice`] directly (BAR views, system pages), which is how
//! `emu::open_pci` and the tests use it. GPU virtual addresses of the engines go
//! through the GMC page tables the driver wrote into emulated VRAM ([`crate::mem::Gpuvm`]);
//! a miss becomes a latched protection fault, an IH ring entry and an MSI.

pub mod discovery;
pub mod firmware;
pub mod gc9;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::cp::{Queue, QueueKindEmu};
use super::mem::{Gpuvm, Translation, PHYS_VRAM};
use super::{EmuArch, EmuConfig, EmuPlatform, EmuState, EmuStats};
use runtime::pci::am::firmware::{fw_type, BL_SOS};
use runtime::pci::am::{ih, psp, regs, smu, AmGen, AmIp, AmReg, RCC_CONFIG_MEMSIZE};
use runtime::pci::{PciDevice, PciError, PciResult, SysMem};
use runtime::platform::{check_range, Mmio, MmioError};
use runtime::regs::RegDef;

/// FB base the emulated MM hub reports (MC address of VRAM offset 0).
pub const MC_BASE: u64 = 0x80_0000_0000;
/// Byte address REMAP_HDP_MEM_FLUSH_CNTL hands out (amdgpu's MMIO remap hole).
pub const HDP_FLUSH_BYTE: u32 = 0x7F000;
pub const BAR2_SIZE: u64 = 0x2000;
pub const BAR5_SIZE: u64 = 2 << 20;
/// First bus address handed out for system pages (as tinygrad's mock: from 4 GiB up).
pub const SYS_BASE: u64 = 0x1_0000_0000;
/// TMR size the emulated PSP asks for in its LOAD_TOC response.
pub const TMR_SIZE: u32 = 0x10_0000;
/// The XCC whose view of the register file MMIO (and the fault latch) uses. The register file
/// banks GRBM_GFX_INDEX and the SE registers per XCC for the command processors; the host reaches
/// XCC *i* > 0 at that XCC's own register window, so an address in BAR5 means XCC 0's register,
/// whichever CP ran last (before, a ring on XCC 7 left IH_RB_CNTL reading 0 at fault time).
const HOST_XCC: u32 = 0;

#[derive(Debug, Clone)]
pub struct EmuPciConfig {
    pub arch: EmuArch,
    pub vram_size: u64,
    /// BAR0 size (VRAM beyond it is not CPU-visible).
    pub bar0_size: u64,
    /// `false`: the PSP never answers (dead or unpowered security processor).
    pub psp_responds: bool,
    /// The GPU was left running by amdgpu (or a crashed run): SOS and SMU answer at power-on
    /// until a mode-1 reset.
    pub left_running: bool,
    pub device_id: u16,
    /// The IP discovery records (versions and segment bases); the GC version picks the
    /// generation of the register model.
    pub ips: Vec<discovery::IpRecord>,
    /// MC address of VRAM offset 0 the hubs report (FB_LOCATION_BASE).
    pub mc_base: u64,
    /// Shader engines (IP discovery's gc_num_se and the emulated engines).
    pub num_se: u32,
}

impl EmuPciConfig {
    /// gfx1100: a Navi31 (GC 11.0.0); gfx1201: a Navi48 (GC 12.0.1, RX 9070); gfx950: an
    /// MI350-class part (GC 9.5.0, 8 XCCs, [`discovery::mi350_ips`]).
    pub fn new(arch: EmuArch) -> Self {
        let (ips, device_id) = match arch {
            EmuArch::Gfx1201 => (discovery::navi48_ips(), 0x7550),
            EmuArch::Gfx950 => (discovery::mi350_ips(), 0x75a0),
            EmuArch::Gfx1100 => (discovery::navi31_ips(), 0x744c),
        };
        EmuPciConfig {
            arch,
            vram_size: 1 << 30,
            bar0_size: 1 << 30,
            psp_responds: true,
            left_running: false,
            device_id,
            ips,
            mc_base: MC_BASE,
            num_se: arch.num_se(),
        }
    }

    /// A Navi44 (gfx1200, GC 12.0.0, RX 9060): the GPU of tinygrad's recorded AM bring-up,
    /// half a Navi48: 2 shader engines of 2 arrays of 8 CUs (the recording's gc_info: gc_num_se
    /// 2, gc_num_sh_per_se 2, gc_num_cu_per_sh 8; se_cnt 2, cu_cnt 32).
    pub fn navi44() -> Self {
        EmuPciConfig {
            ips: discovery::navi44_ips(),
            device_id: 0x7590,
            num_se: 2,
            ..Self::new(EmuArch::Gfx1201)
        }
    }

    /// The GC generation of the discovered GC version (`None`: no register model for it).
    pub fn gen(&self) -> Option<AmGen> {
        let gc = self.ips.iter().find(|r| r.0 == AmIp::Gc)?.1;
        match gc.0 {
            11 => Some(AmGen::Gc11),
            12 => Some(AmGen::Gc12),
            _ => None,
        }
    }
}

/// One register write seen on BAR5.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegWrite {
    pub addr: u32,
    pub value: u32,
}

/// What the emulated PSP and SMU were told.
#[derive(Debug, Clone, Default)]
pub struct FirmwareLog {
    /// Bootloader commands (C2PMSG_35), in order, with the first 8 bytes of the blob at the
    /// address given in C2PMSG_36.
    pub bootloader: Vec<(u32, [u8; 8])>,
    /// Ring command ids, in order.
    pub psp_cmds: Vec<u32>,
    /// LOAD_IP_FW: (fw type, bytes, first 8 bytes of the blob read from VRAM).
    pub loaded: Vec<(u32, u32, [u8; 8])>,
    /// SMU (message, argument).
    pub smu_msgs: Vec<(u32, u32)>,
    pub hdp_flushes: u64,
    pub tlb_invalidations: u64,
}

struct Model {
    cfg: EmuPciConfig,
    config: [u8; 256],
    names: HashMap<u32, &'static str>,
    a: Addrs,
    writes: Vec<RegWrite>,
    log: FirmwareLog,
    sos_alive: bool,
    psp_ring: Option<(u64, u32)>,
    psp_rptr: u32,
    smu_loaded: bool,
    next_sys: u64,
    irq: u32,
    ih_wptr: u64,
    rsmu_index: u32,
    /// The MI350 (GC 9) register model; `None` on the GC 11/12 parts.
    gc9: Option<gc9::Gc9>,
    /// Second addresses of registers (-> the generation's address): on MP 14 the SMU mailbox
    /// also answers at its MP 13 placement (segment 0 + 0x282...), where tinygrad's AM driver
    /// talks to the SMU of an RDNA4 (its recording: mmMP1_SMN_C2PMSG_66 at 0x16282).
    alias: HashMap<u32, u32>,
}

/// A compute HQD as the driver programmed it through the CP_HQD_* registers (what the MEC
/// loads from the MQD); both register models (GC 11/12 and GC 9) turn it into a queue here.
pub(crate) struct Hqd {
    /// CP_HQD_PQ_BASE (LO/HI): the ring address in 256-byte units.
    pub pq_base: u64,
    /// CP_HQD_PQ_CONTROL.queue_size: the ring holds 2^(n+1) dwords.
    pub queue_size: u32,
    pub rptr_report: u64,
    pub wptr_poll: u64,
    /// CP_HQD_PQ_DOORBELL_CONTROL.doorbell_offset, in dwords.
    pub doorbell_offset: u32,
}

impl Hqd {
    /// The PM4 queue on XCC `xcc`, or `None` for a queue_size no real ring has (a
    /// driver-written field must not overflow the shift).
    pub(crate) fn pm4_queue(&self, xcc: u32) -> Option<Queue> {
        let bytes = (self.queue_size < 32).then(|| 4u64 << (self.queue_size + 1))?;
        Some(Queue::new(
            QueueKindEmu::Pm4,
            self.pq_base << 8,
            bytes,
            self.rptr_report,
            self.wptr_poll,
            // Doorbells are indexed in qwords.
            self.doorbell_offset / 2,
            xcc,
        ))
    }
}

/// Field `name` of `v` per the register's definition (0 when the generation lacks it).
fn fld(def: Option<&RegDef>, name: &str, v: u32) -> u32 {
    def.and_then(|d| d.field(name)).map_or(0, |f| f.get(v))
}

/// `value` placed in field `name` (0 when the generation lacks it).
fn put(def: Option<&RegDef>, name: &str, value: u32) -> u32 {
    def.and_then(|d| d.field(name))
        .map_or(0, |f| value.wrapping_shl(u32::from(f.lo)))
}

/// Absolute dword addresses of the registers the model interprets.
struct Addrs {
    psp35: u32,
    psp36: u32,
    psp64: u32,
    psp67: u32,
    psp69: u32,
    psp70: u32,
    psp71: u32,
    psp81: u32,
    smu66: u32,
    smu82: u32,
    smu90: u32,
    gc_inv_req: u32,
    gc_inv_ack: u32,
    mm_inv_req: u32,
    mm_inv_ack: u32,
    mm_inv_sem: u32,
    gc_ctx_cntl: u32,
    gc_pt_base: [u32; 2],
    gc_pt_start: [u32; 2],
    gc_pt_end: [u32; 2],
    gc_fault: [u32; 3],
    hqd_active: u32,
    hqd_dequeue: u32,
    grbm_gfx_cntl: u32,
    pq_base: [u32; 2],
    pq_control: u32,
    rptr_report: [u32; 2],
    wptr_poll: [u32; 2],
    pq_doorbell: u32,
    sdma_rb_cntl: u32,
    sdma_rb_base: [u32; 2],
    sdma_rptr_addr: [u32; 2],
    sdma_wptr_poll: [u32; 2],
    sdma_doorbell_off: u32,
    rlc_bootload: u32,
    ih_base: [u32; 2],
    ih_cntl: u32,
    ih_wptr_addr: [u32; 2],
    /// IH_RB_WPTR of ring 0: the driver zeroes it when it (re)programs the ring.
    ih_wptr_reg: u32,
    /// SCRATCH_REG6 and SCRATCH_REG7: the driver's session marks, cleared by a mode-1 reset.
    scratch: [u32; 2],
    rsmu_index: u32,
    rsmu_data: u32,
    fb_base_mm: u32,
    fb_top_mm: u32,
    fb_base_gc: u32,
    fb_top_gc: u32,
    hdp_remap: u32,
    /// RLC_SAFE_MODE, when the runtime's tables carry it (looked up by name).
    rlc_safe_mode: (u32, Option<&'static RegDef>),
    /// The generation's definitions of the registers whose fields the model decodes.
    gen: AmGen,
}

fn bases(ips: &[discovery::IpRecord]) -> HashMap<AmIp, Vec<u32>> {
    ips.iter().map(|(ip, _, b)| (*ip, b.clone())).collect()
}

fn resolve(b: &HashMap<AmIp, Vec<u32>>, r: AmReg, gen: AmGen) -> u32 {
    r.on(gen)
        .and_then(|d| Some(b.get(&r.ip)?.get(usize::from(d.base_index))? + d.offset))
        .unwrap_or(u32::MAX)
}

impl Addrs {
    fn new(b: &HashMap<AmIp, Vec<u32>>, gen: AmGen) -> Self {
        use regs::*;
        let a = |r| resolve(b, r, gen);
        // GC 12 splits the fault status into LO32/HI32 (the low half keeps GC 11's fields).
        let fault_status = match gen {
            AmGen::Gc11 | AmGen::Gc9 => GCVM_L2_PROTECTION_FAULT_STATUS,
            AmGen::Gc12 => GCVM_L2_PROTECTION_FAULT_STATUS_LO32,
        };
        Addrs {
            psp35: a(MP0_SMN_C2PMSG_35),
            psp36: a(MP0_SMN_C2PMSG_36),
            psp64: a(MP0_SMN_C2PMSG_64),
            psp67: a(MP0_SMN_C2PMSG_67),
            psp69: a(MP0_SMN_C2PMSG_69),
            psp70: a(MP0_SMN_C2PMSG_70),
            psp71: a(MP0_SMN_C2PMSG_71),
            psp81: a(MP0_SMN_C2PMSG_81),
            smu66: a(MP1_SMN_C2PMSG_66),
            smu82: a(MP1_SMN_C2PMSG_82),
            smu90: a(MP1_SMN_C2PMSG_90),
            gc_inv_req: a(GCVM_INVALIDATE_ENG17_REQ),
            gc_inv_ack: a(GCVM_INVALIDATE_ENG17_ACK),
            mm_inv_req: a(MMVM_INVALIDATE_ENG17_REQ),
            mm_inv_ack: a(MMVM_INVALIDATE_ENG17_ACK),
            mm_inv_sem: a(MMVM_INVALIDATE_ENG17_SEM),
            gc_ctx_cntl: a(GCVM_CONTEXT0_CNTL),
            gc_pt_base: [
                a(GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32),
                a(GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32),
            ],
            gc_pt_start: [
                a(GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32),
                a(GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32),
            ],
            gc_pt_end: [
                a(GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32),
                a(GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32),
            ],
            gc_fault: [
                a(fault_status),
                a(GCVM_L2_PROTECTION_FAULT_ADDR_LO32),
                a(GCVM_L2_PROTECTION_FAULT_ADDR_HI32),
            ],
            hqd_active: a(CP_HQD_ACTIVE),
            hqd_dequeue: a(CP_HQD_DEQUEUE_REQUEST),
            grbm_gfx_cntl: a(GRBM_GFX_CNTL),
            pq_base: [a(CP_HQD_PQ_BASE), a(CP_HQD_PQ_BASE_HI)],
            pq_control: a(CP_HQD_PQ_CONTROL),
            rptr_report: [
                a(CP_HQD_PQ_RPTR_REPORT_ADDR),
                a(CP_HQD_PQ_RPTR_REPORT_ADDR_HI),
            ],
            wptr_poll: [a(CP_HQD_PQ_WPTR_POLL_ADDR), a(CP_HQD_PQ_WPTR_POLL_ADDR_HI)],
            pq_doorbell: a(CP_HQD_PQ_DOORBELL_CONTROL),
            sdma_rb_cntl: a(SDMA0_QUEUE0_RB_CNTL),
            sdma_rb_base: [a(SDMA0_QUEUE0_RB_BASE), a(SDMA0_QUEUE0_RB_BASE_HI)],
            sdma_rptr_addr: [
                a(SDMA0_QUEUE0_RB_RPTR_ADDR_LO),
                a(SDMA0_QUEUE0_RB_RPTR_ADDR_HI),
            ],
            sdma_wptr_poll: [
                a(SDMA0_QUEUE0_RB_WPTR_POLL_ADDR_LO),
                a(SDMA0_QUEUE0_RB_WPTR_POLL_ADDR_HI),
            ],
            sdma_doorbell_off: a(SDMA0_QUEUE0_DOORBELL_OFFSET),
            rlc_bootload: a(RLC_RLCS_BOOTLOAD_STATUS),
            ih_base: [a(IH_RB_BASE), a(IH_RB_BASE_HI)],
            ih_cntl: a(IH_RB_CNTL),
            ih_wptr_addr: [a(IH_RB_WPTR_ADDR_LO), a(IH_RB_WPTR_ADDR_HI)],
            ih_wptr_reg: a(IH_RB_WPTR),
            scratch: [a(SCRATCH_REG6), a(SCRATCH_REG7)],
            rsmu_index: a(BIF_BX_PF0_RSMU_INDEX),
            rsmu_data: a(BIF_BX_PF0_RSMU_DATA),
            fb_base_mm: a(MMMC_VM_FB_LOCATION_BASE),
            fb_top_mm: a(MMMC_VM_FB_LOCATION_TOP),
            fb_base_gc: a(GCMC_VM_FB_LOCATION_BASE),
            fb_top_gc: a(GCMC_VM_FB_LOCATION_TOP),
            hdp_remap: a(BIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL),
            rlc_safe_mode: regs::ALL
                .iter()
                .find(|r| r.name == "RLC_SAFE_MODE")
                .map_or((u32::MAX, None), |r| (a(*r), regs_def(*r, gen as usize))),
            gen,
        }
    }
    fn def(&self, r: AmReg) -> Option<&'static RegDef> {
        match self.gen {
            AmGen::Gc11 => regs_def(r, 0),
            AmGen::Gc12 => regs_def(r, 1),
            AmGen::Gc9 => regs_def(r, 2),
        }
    }
}

/// The `'static` definition of `r` on generation index `g` (the tables are consts).
fn regs_def(r: AmReg, g: usize) -> Option<&'static RegDef> {
    regs::ALL
        .iter()
        .find(|x| x.name == r.name)
        .and_then(|x| x.at[g].as_ref())
}

struct Inner {
    emu: EmuPlatform,
    model: Mutex<Model>,
}

/// The emulated PCI GPU (a cheap handle; clones share the device).
#[derive(Clone)]
pub struct EmuPciGpu {
    inner: Arc<Inner>,
}

fn u64_of(st: &EmuState, r: [u32; 2]) -> u64 {
    u64::from(st.core.regs.read(r[0])) | u64::from(st.core.regs.read(r[1])) << 32
}

impl EmuPciGpu {
    pub fn new(cfg: EmuPciConfig) -> PciResult<Self> {
        let gpu = Self::build(cfg)?;
        Ok(gpu)
    }

    /// The device with other shader engines (e.g. a recording or faulting one).
    pub fn with_shader_engines(
        cfg: EmuPciConfig,
        shader: Box<dyn super::ShaderEngines>,
    ) -> PciResult<Self> {
        let gpu = Self::build(cfg)?;
        gpu.inner.emu.set_shader_engines(shader);
        Ok(gpu)
    }

    fn build(cfg: EmuPciConfig) -> PciResult<Self> {
        let gc_ver = cfg.ips.iter().find(|r| r.0 == AmIp::Gc).map(|r| r.1);
        let gc9 = match (cfg.arch, gc_ver) {
            (EmuArch::Gfx950, Some((9, 5, _))) => Some(gc9::Gc9::new(&cfg.ips)?),
            _ => None,
        };
        // The GC 9 model keeps its own map; the shared PSP/SMU mailbox sits at the MP 13
        // placement, which the GC 11 tables carry.
        let gen = if gc9.is_some() {
            Some(AmGen::Gc11)
        } else {
            cfg.gen()
        };
        let ok = matches!(
            (cfg.arch, gen),
            (EmuArch::Gfx1100, Some(AmGen::Gc11))
                | (EmuArch::Gfx1201, Some(AmGen::Gc12))
                | (EmuArch::Gfx950, Some(AmGen::Gc11))
        ) && (cfg.arch != EmuArch::Gfx950 || gc9.is_some());
        let Some(gen) = gen.filter(|_| ok) else {
            return Err(PciError::NoDevice {
                detail: format!(
                    "the emulated PCI GPU models gfx1100 (GC 11), gfx1200/gfx1201 (GC 12) and \
                     gfx950 (GC 9.5) only (asked for {:?} with GC {gc_ver:?})",
                    cfg.arch,
                ),
            });
        };
        let mut ecfg = EmuConfig::new(cfg.arch);
        ecfg.kfd_present = false;
        ecfg.gpu_node = false;
        ecfg.num_se = Some(cfg.num_se);
        let emu = EmuPlatform::new(ecfg);
        let mut b = bases(&cfg.ips);
        if gc9.is_some() {
            b.retain(|ip, _| matches!(ip, AmIp::Mp0 | AmIp::Mp1));
        }
        let mut a = Addrs::new(&b, gen);
        let mut names: HashMap<u32, &'static str> = regs::ALL
            .iter()
            .map(|r| (resolve(&b, *r, gen), r.name))
            .filter(|(addr, _)| *addr != u32::MAX)
            .collect();
        if let Some(g) = &gc9 {
            a.rsmu_index = g.rsmu[0].addr;
            a.rsmu_data = g.rsmu[1].addr;
            a.hdp_remap = g.hdp_remap.addr;
            names.extend(g.names.iter().map(|(k, v)| (*k, v.0)));
        }
        let alias = match gen {
            AmGen::Gc11 | AmGen::Gc9 => HashMap::new(),
            AmGen::Gc12 => [
                regs::MP1_SMN_C2PMSG_66,
                regs::MP1_SMN_C2PMSG_82,
                regs::MP1_SMN_C2PMSG_90,
            ]
            .into_iter()
            .map(|r| (resolve(&b, r, AmGen::Gc11), resolve(&b, r, gen)))
            .filter(|(from, to)| from != to && *from != u32::MAX)
            .collect(),
        };
        {
            let mut st = emu.shared.lock();
            st.mem
                .map(PHYS_VRAM, cfg.vram_size)
                .map_err(|_| PciError::OutOfMemory {
                    what: "host memory for the emulated VRAM",
                    size: cfg.vram_size,
                })?;
            // The discovery table at VRAM end − 64 KiB.
            // (num_se, wgp0/sa, wgp1/sa, sa/se, waves, slots, lds KiB): the SEs the shader
            // engines model for this arch.
            // Per XCC on multi-XCC parts (the table describes one XCC, as on MI300).
            let gc = (cfg.num_se / cfg.arch.num_xcc(), 4, 0, 2, 16, 32, 64);
            let tbl = discovery::build_with(&cfg.ips, gc);
            let at = PHYS_VRAM + cfg.vram_size - runtime::pci::am::discovery::TABLE_FROM_END;
            st.mem
                .write_phys(at, &tbl)
                .map_err(|_| PciError::Discovery {
                    offset: at - PHYS_VRAM,
                    msg: "cannot place the emulated table".into(),
                })?;
            let fb = ((cfg.mc_base >> 24) & 0xFF_FFFF) as u32;
            let top = (((cfg.mc_base + cfg.vram_size - 1) >> 24) & 0xFF_FFFF) as u32;
            for (r, v) in [
                (a.fb_base_mm, fb),
                (a.fb_top_mm, top),
                (a.fb_base_gc, fb),
                (a.fb_top_gc, top),
                (a.hdp_remap, HDP_FLUSH_BYTE),
            ] {
                st.core.regs.write(r, v);
            }
            if let Some(g) = &gc9 {
                let hub_fb = g.hubs.iter().map(|h| h.fb);
                for [base, end] in hub_fb.chain(g.xcc.iter().map(|x| x.fb)) {
                    st.core.regs.write(base.addr, fb);
                    st.core.regs.write(end.addr, top);
                }
            }
        }
        let left = cfg.left_running;
        if left {
            let mut st = emu.shared.lock();
            st.core.regs.write(a.psp81, 1);
            st.core.regs.write(a.psp64, 1 << 31);
        }
        let mut config = [0u8; 256];
        config[0..2].copy_from_slice(&runtime::pci::AMD_VENDOR.to_le_bytes());
        config[2..4].copy_from_slice(&cfg.device_id.to_le_bytes());
        config[0x0B] = 0x03; // display controller
        Ok(EmuPciGpu {
            inner: Arc::new(Inner {
                emu,
                model: Mutex::new(Model {
                    cfg,
                    config,
                    names,
                    a,
                    writes: Vec::new(),
                    log: FirmwareLog::default(),
                    sos_alive: left,
                    psp_ring: None,
                    psp_rptr: 0,
                    smu_loaded: left,
                    next_sys: SYS_BASE,
                    irq: 0,
                    ih_wptr: 0,
                    rsmu_index: 0,
                    gc9,
                    alias,
                }),
            }),
        })
    }

    fn model(&self) -> MutexGuard<'_, Model> {
        self.inner.model.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The engines behind the device (stats, clock, shader-engine replacement).
    pub fn platform(&self) -> &EmuPlatform {
        &self.inner.emu
    }
    pub fn stats(&self) -> EmuStats {
        self.inner.emu.stats()
    }

    /// Every BAR5 write so far, in order.
    pub fn reg_writes(&self) -> Vec<RegWrite> {
        self.model().writes.clone()
    }
    /// The configuration the device was built with.
    pub fn config(&self) -> EmuPciConfig {
        self.model().cfg.clone()
    }

    /// Makes the SMU stop answering its mailbox (a hung SMU after a crash): no mode-1 reset is
    /// possible until the device is rebuilt.
    pub fn hang_smu(&self) {
        self.model().smu_loaded = false;
    }

    /// The register name of an absolute dword address (registers the driver uses).
    pub fn reg_name(&self, addr: u32) -> Option<&'static str> {
        self.model().names.get(&addr).copied()
    }
    pub fn firmware_log(&self) -> FirmwareLog {
        self.model().log.clone()
    }
    /// What the MI350 model refused or does not model, in order (empty on GC 11/12).
    pub fn refused(&self) -> Vec<String> {
        self.model()
            .gc9
            .as_ref()
            .map_or_else(Vec::new, |g| g.refused.clone())
    }

    /// Walks the GC hub's page tables for `va` (no TLB): what the engines would reach.
    pub fn translate(&self, va: u64) -> Option<Translation> {
        self.inner.emu.shared.lock().mem.walk(va)
    }
    /// Reads memory by GPU virtual address, as the engines would (through the TLB and tables).
    pub fn read_va(&self, va: u64, out: &mut [u8]) -> bool {
        self.inner.emu.shared.lock().mem.read(va, out).is_ok()
    }
    /// Reads emulated physical memory by region key (VRAM: [`PHYS_VRAM`] + offset).
    pub fn read_phys(&self, key: u64, out: &mut [u8]) -> bool {
        self.inner.emu.shared.lock().mem.read_phys(key, out).is_ok()
    }

    // ---- plain API ----

    pub fn config_read(&self, offset: u16, len: u8) -> u32 {
        let m = self.model();
        let mut b = [0u8; 4];
        for (i, x) in b.iter_mut().enumerate().take(usize::from(len.min(4))) {
            *x = m
                .config
                .get(usize::from(offset) + i)
                .copied()
                .unwrap_or(0xFF);
        }
        u32::from_le_bytes(b)
    }

    pub fn config_write(&self, offset: u16, len: u8, value: u32) {
        let mut m = self.model();
        // Vendor/device/class are read-only.
        if offset < 0x04 || (0x08..0x0C).contains(&offset) {
            return;
        }
        for (i, v) in value
            .to_le_bytes()
            .iter()
            .enumerate()
            .take(usize::from(len.min(4)))
        {
            if let Some(x) = m.config.get_mut(usize::from(offset) + i) {
                *x = *v;
            }
        }
    }

    fn bus_master(m: &Model) -> bool {
        m.config[4] & 0x4 != 0
    }

    pub fn bar_len(&self, bar: u8) -> u64 {
        match bar {
            0 => self.model().cfg.bar0_size,
            2 => BAR2_SIZE,
            5 => BAR5_SIZE,
            _ => 0,
        }
    }

    pub fn bar_read(&self, bar: u8, offset: u64, out: &mut [u8]) -> Result<(), MmioError> {
        let len = self.bar_len(bar);
        check_range(0, len, offset, out.len() as u64)?;
        match bar {
            0 => {
                let st = self.inner.emu.shared.lock();
                st.mem
                    .read_phys(PHYS_VRAM + offset, out)
                    .map_err(|_| MmioError {
                        base: 0,
                        offset,
                        len: out.len() as u64,
                        size: len,
                    })
            }
            2 => {
                let st = self.inner.emu.shared.lock();
                for (i, b) in out.iter_mut().enumerate() {
                    let o = offset + i as u64;
                    let v = st
                        .queues
                        .iter()
                        .find(|q| u64::from(q.doorbell) == o / 8)
                        .map(|q| q.wptr)
                        .unwrap_or(0);
                    *b = v.to_le_bytes()[(o % 8) as usize];
                }
                Ok(())
            }
            _ => {
                let mut m = self.model();
                for (i, chunk) in out.chunks_mut(4).enumerate() {
                    let addr = ((offset + 4 * i as u64) / 4) as u32;
                    let v = self.reg_read(&mut m, addr);
                    let n = chunk.len();
                    chunk.copy_from_slice(&v.to_le_bytes()[..n]);
                }
                Ok(())
            }
        }
    }

    pub fn bar_write(&self, bar: u8, offset: u64, data: &[u8]) -> Result<(), MmioError> {
        let len = self.bar_len(bar);
        check_range(0, len, offset, data.len() as u64)?;
        match bar {
            0 => {
                let mut st = self.inner.emu.shared.lock();
                st.mem
                    .write_phys(PHYS_VRAM + offset, data)
                    .map_err(|_| MmioError {
                        base: 0,
                        offset,
                        len: data.len() as u64,
                        size: len,
                    })
            }
            2 => {
                if !offset.is_multiple_of(8) || data.len() != 8 {
                    return Ok(());
                }
                let mut b = [0u8; 8];
                b.copy_from_slice(data);
                let v = u64::from_le_bytes(b);
                let mut m = self.model();
                let mut st = self.inner.emu.shared.lock();
                for q in st
                    .queues
                    .iter_mut()
                    .filter(|q| u64::from(q.doorbell) == offset / 8)
                {
                    q.wptr = v;
                }
                if Self::bus_master(&m) {
                    st.pump();
                    Self::check_fault(&mut m, &mut st);
                }
                Ok(())
            }
            _ => {
                let mut m = self.model();
                for (i, chunk) in data.chunks(4).enumerate() {
                    let mut b = [0u8; 4];
                    b[..chunk.len()].copy_from_slice(chunk);
                    let addr = ((offset + 4 * i as u64) / 4) as u32;
                    self.reg_write(&mut m, addr, u32::from_le_bytes(b));
                }
                Ok(())
            }
        }
    }

    /// Backs fresh system pages; returns their bus address.
    pub fn alloc_dma(&self, size: u64) -> Option<u64> {
        let size = size.div_ceil(0x1000) * 0x1000;
        let mut m = self.model();
        let bus = m.next_sys;
        self.inner.emu.shared.lock().mem.map(bus, size).ok()?;
        // A guard page between allocations keeps separate buffers non-contiguous.
        m.next_sys = bus + size + 0x1000;
        Some(bus)
    }
    pub fn add_dma_region(&self, bus: u64, len: u64) -> bool {
        self.inner.emu.shared.lock().mem.map(bus, len).is_ok()
    }
    pub fn free_dma(&self, bus: u64) -> bool {
        self.inner.emu.shared.lock().mem.unmap(bus)
    }
    pub fn dma_read(&self, bus: u64, out: &mut [u8]) -> bool {
        self.inner.emu.shared.lock().mem.read_phys(bus, out).is_ok()
    }
    pub fn dma_write(&self, bus: u64, data: &[u8]) -> bool {
        self.inner
            .emu
            .shared
            .lock()
            .mem
            .write_phys(bus, data)
            .is_ok()
    }

    /// Runs pending queue work; returns whether an MSI was raised since the last call.
    pub fn wait_interrupt(&self) -> bool {
        let mut m = self.model();
        let mut st = self.inner.emu.shared.lock();
        if Self::bus_master(&m) {
            st.pump();
            Self::check_fault(&mut m, &mut st);
        }
        let raised = m.irq > 0;
        m.irq = 0;
        raised
    }

    // ---- register model ----

    fn reg_read(&self, m: &mut Model, addr: u32) -> u32 {
        let addr = m.alias.get(&addr).copied().unwrap_or(addr);
        let mut st = self.inner.emu.shared.lock();
        st.core.regs.set_xcc(HOST_XCC);
        let a = &m.a;
        if addr == RCC_CONFIG_MEMSIZE {
            return (m.cfg.vram_size >> 20) as u32;
        }
        if addr == a.rsmu_data {
            let target = m.rsmu_index / 4;
            drop(st);
            return if target == a.rsmu_data {
                0
            } else {
                self.reg_read(m, target)
            };
        }
        if addr == a.psp35 {
            return if m.cfg.psp_responds { 1 << 31 } else { 0 };
        }
        if addr == a.mm_inv_sem {
            return 1;
        }
        if let Some(v) = Self::gc9_read(m, addr) {
            return v;
        }
        if (addr == a.psp64 || addr == a.psp81) && !m.cfg.psp_responds {
            return 0;
        }
        st.core.regs.read(addr)
    }

    fn reg_write(&self, m: &mut Model, addr: u32, v: u32) {
        m.writes.push(RegWrite { addr, value: v });
        let addr = m.alias.get(&addr).copied().unwrap_or(addr);
        let mut st = self.inner.emu.shared.lock();
        // The host reaches every XCC's registers at that XCC's own addresses: its accesses
        // must not land in the SE banks of whichever XCC's CP ran last (the CP selects its
        // own before it runs), or SCRATCH_REG6/7 would read back 0 after a dispatch.
        st.core.regs.set_xcc(HOST_XCC);
        if addr == m.a.rsmu_index {
            m.rsmu_index = v;
            return;
        }
        if addr == m.a.rsmu_data {
            let target = m.rsmu_index / 4;
            drop(st);
            if target != m.a.rsmu_data {
                self.reg_write(m, target, v);
            }
            return;
        }
        st.core.regs.write(addr, v);
        if Self::gc9_write(m, &mut st, addr, v) {
            return;
        }
        let a = &m.a;
        if addr == HDP_FLUSH_BYTE / 4 {
            m.log.hdp_flushes += 1;
        } else if addr == a.rlc_safe_mode.0 {
            // The RLC takes the safe-mode message at once and acknowledges by clearing `cmd`.
            let def = a.rlc_safe_mode.1;
            st.core.regs.write(addr, v & !put(def, "cmd", 1));
        } else if addr == a.psp35 {
            if m.cfg.psp_responds {
                let mc = u64::from(st.core.regs.read(a.psp36)) << 20;
                let mut head = [0u8; 8];
                if let Some(k) = Self::mc_key(m, mc) {
                    let _ = st.mem.read_phys(k, &mut head);
                }
                m.log.bootloader.push((v, head));
                if v == BL_SOS {
                    m.sos_alive = true;
                    st.core.regs.write(a.psp81, 1);
                    st.core.regs.write(a.psp64, 1 << 31);
                }
            }
        } else if addr == a.psp64 {
            if m.cfg.psp_responds && m.sos_alive {
                if v == psp::RING_TYPE_KM << 16 {
                    let mc = u64_of(&st, [a.psp69, a.psp70]);
                    m.psp_ring = Some((mc, st.core.regs.read(a.psp71)));
                    m.psp_rptr = 0;
                } else if v == psp::CMD_DESTROY_RINGS {
                    m.psp_ring = None;
                    st.core.regs.write(a.psp71, 0);
                }
                st.core.regs.write(a.psp64, 1 << 31);
            }
        } else if addr == a.psp67 {
            if m.cfg.psp_responds {
                Self::psp_ring(m, &mut st, v);
            }
        } else if addr == a.smu66 {
            if m.smu_loaded {
                let arg = st.core.regs.read(a.smu82);
                m.log.smu_msgs.push((v, arg));
                let out = match v {
                    smu::MSG_GET_SMU_VERSION => Some(0x0050_4000),
                    smu::MSG_GET_DPM_FREQ_BY_INDEX => {
                        let (clk, lvl) = (arg >> 16, arg & 0xFFFF);
                        if lvl == 0xFF {
                            Some(3)
                        } else {
                            Some(500 + 100 * clk + 1000 * lvl.min(2))
                        }
                    }
                    _ => None,
                };
                if let Some(o) = out {
                    st.core.regs.write(a.smu82, o);
                }
                st.core.regs.write(a.smu90, 1);
                if v == smu::MSG_MODE1_RESET {
                    // Mode-1 reset: PSP and SMU back to their power-on state, queues gone.
                    m.sos_alive = false;
                    m.smu_loaded = false;
                    m.psp_ring = None;
                    st.core.regs.write(a.psp81, 0);
                    st.core.regs.write(a.psp64, 0);
                    st.core.regs.write(a.psp71, 0);
                    st.queues.clear();
                    st.mem.vm = None;
                    // The whole ASIC is reset: the GC hub's latched fault, the RLC autoload,
                    // the IH rings and the session marks are back at their power-on values.
                    let cleared = a.gc_fault.iter().chain(&a.scratch).copied();
                    for r in cleared.chain([a.rlc_bootload, a.ih_cntl, a.hqd_active]) {
                        st.core.regs.write(r, 0);
                    }
                    m.ih_wptr = 0;
                }
            }
        } else if addr == a.ih_wptr_reg {
            // The driver resets the ring's write pointer when it (re)programs the ring.
            m.ih_wptr = u64::from(v) & !(ih::ENTRY_SIZE - 1);
        } else if addr == a.gc_inv_req || addr == a.mm_inv_req {
            m.log.tlb_invalidations += 1;
            if let Some(vm) = &st.mem.vm {
                vm.invalidate();
            }
            let ack = if addr == a.gc_inv_req {
                a.gc_inv_ack
            } else {
                a.mm_inv_ack
            };
            st.core.regs.write(ack, v & 0xFFFF);
        } else if addr == a.gc_ctx_cntl {
            st.mem.vm = if v & 1 != 0 {
                let root = u64_of(&st, a.gc_pt_base) & runtime::pci::am::gmc::pte::ADDR_MASK;
                let start = u64_of(&st, a.gc_pt_start) << 12;
                let end = (u64_of(&st, a.gc_pt_end) << 12) | 0xFFF;
                let vm = Gpuvm::new(root, start, end);
                Some(Box::new(match a.gen {
                    // This model is built for GC 11/12 devices only (never with GC 9 tables).
                    AmGen::Gc11 | AmGen::Gc9 => vm,
                    AmGen::Gc12 => vm.gfx12(),
                }))
            } else {
                None
            };
        } else if addr == a.hqd_active {
            let sel = st.core.regs.read(a.grbm_gfx_cntl);
            // A compute HQD (MEC 1 = ME 1) going active: the queue the driver programmed
            // through the selected HQD registers (what the RS64 MEC loads from the MQD).
            if v & 1 != 0 && fld(a.def(regs::GRBM_GFX_CNTL), "meid", sel) == 1 {
                let hqd = Hqd {
                    pq_base: u64_of(&st, a.pq_base),
                    queue_size: fld(
                        a.def(regs::CP_HQD_PQ_CONTROL),
                        "queue_size",
                        st.core.regs.read(a.pq_control),
                    ),
                    rptr_report: u64_of(&st, a.rptr_report),
                    wptr_poll: u64_of(&st, a.wptr_poll),
                    doorbell_offset: fld(
                        a.def(regs::CP_HQD_PQ_DOORBELL_CONTROL),
                        "doorbell_offset",
                        st.core.regs.read(a.pq_doorbell),
                    ),
                };
                st.queues.retain(|q| q.kind != QueueKindEmu::Pm4);
                // An impossible size leaves the queue out: the driver's wait then names it.
                st.queues.extend(hqd.pm4_queue(0));
            }
        } else if addr == a.hqd_dequeue {
            if v != 0 {
                st.queues.retain(|q| q.kind != QueueKindEmu::Pm4);
                st.core.regs.write(a.hqd_active, 0);
            }
        } else if addr == a.sdma_rb_cntl {
            st.queues.retain(|q| q.kind != QueueKindEmu::Sdma);
            let cntl = a.def(regs::SDMA0_QUEUE0_RB_CNTL);
            if fld(cntl, "rb_enable", v) != 0 {
                let ring = u64_of(&st, a.sdma_rb_base) << 8;
                let bytes = 4u64 << fld(cntl, "rb_size", v);
                let rptr = u64_of(&st, a.sdma_rptr_addr);
                let wptr = u64_of(&st, a.sdma_wptr_poll);
                let db = fld(
                    a.def(regs::SDMA0_QUEUE0_DOORBELL_OFFSET),
                    "offset",
                    st.core.regs.read(a.sdma_doorbell_off),
                );
                st.queues.push(Queue::new(
                    QueueKindEmu::Sdma,
                    ring,
                    bytes,
                    rptr,
                    wptr,
                    db / 2,
                    0,
                ));
            }
        }
    }

    /// VRAM region key of an MC address.
    fn mc_key(m: &Model, mc: u64) -> Option<u64> {
        let base = m.cfg.mc_base;
        (mc >= base && mc < base + m.cfg.vram_size).then(|| PHYS_VRAM + (mc - base))
    }

    /// The PSP executes the ring frames up to the new write pointer (dwords).
    fn psp_ring(m: &mut Model, st: &mut EmuState, wptr: u32) {
        let Some((ring_mc, size)) = m.psp_ring else {
            return;
        };
        let Some(ring) = Self::mc_key(m, ring_mc) else {
            return;
        };
        let size_dw = (size / 4).max(16);
        let rd = |st: &EmuState, key: u64| -> u32 {
            let mut b = [0u8; 4];
            let _ = st.mem.read_phys(key, &mut b);
            u32::from_le_bytes(b)
        };
        while m.psp_rptr % size_dw != wptr % size_dw {
            let f = ring + u64::from(m.psp_rptr % size_dw) * 4;
            let cmd_mc = u64::from(rd(st, f)) | u64::from(rd(st, f + 4)) << 32;
            let fence_mc = u64::from(rd(st, f + 12)) | u64::from(rd(st, f + 16)) << 32;
            let fence_val = rd(st, f + 20);
            m.psp_rptr = (m.psp_rptr + 16) % size_dw;
            let (Some(cmd), Some(fence)) = (Self::mc_key(m, cmd_mc), Self::mc_key(m, fence_mc))
            else {
                continue;
            };
            let id = rd(st, cmd + 8);
            m.log.psp_cmds.push(id);
            let arg = |i: u64| rd(st, cmd + 28 + 4 * i);
            let mut status = 0u32;
            let mut tmr = 0u32;
            match id {
                psp::CMD_LOAD_TOC => tmr = TMR_SIZE,
                psp::CMD_LOAD_IP_FW => {
                    let mc = u64::from(arg(0)) | u64::from(arg(1)) << 32;
                    let (len, ty) = (arg(2), arg(3));
                    let mut head = [0u8; 8];
                    match Self::mc_key(m, mc) {
                        Some(k) if len > 0 && st.mem.read_phys(k, &mut head).is_ok() => {
                            m.log.loaded.push((ty, len, head));
                            if ty == fw_type::SMU {
                                m.smu_loaded = true;
                            }
                        }
                        _ => status = 0xFFFF_0007,
                    }
                }
                // GFX_CMD_ID_SETUP_TMR, checked against the PSP interface header rather than
                // the driver's constants: tmr_flags (dword 3) has sriov_enabled in bit 0 and
                // virt_phy_addr in bit 1; the TMR is the size LOAD_TOC reported, 1 MiB aligned.
                5 => {
                    let phys = u64::from(arg(4)) | u64::from(arg(5)) << 32;
                    if arg(3) != 0b10 || arg(2) != TMR_SIZE || phys % (1 << 20) != 0 {
                        status = 0xFFFF_0009;
                    }
                }
                psp::CMD_AUTOLOAD_RLC => {
                    // RLC autoload needs the RLC_G image and the MEC code to have been loaded.
                    let has = |t| m.log.loaded.iter().any(|l| l.0 == t);
                    if has(fw_type::RLC_G) && has(fw_type::RS64_MEC) {
                        let done = put(
                            m.a.def(regs::RLC_RLCS_BOOTLOAD_STATUS),
                            "bootload_complete",
                            1,
                        );
                        st.core.regs.write(m.a.rlc_bootload, done);
                    } else {
                        status = 0xFFFF_0008;
                    }
                }
                _ => {}
            }
            let _ = st
                .mem
                .write_phys(cmd + psp::RESP_STATUS, &status.to_le_bytes());
            let _ = st
                .mem
                .write_phys(cmd + psp::RESP_TMR_SIZE, &tmr.to_le_bytes());
            let _ = st.mem.write_phys(fence, &fence_val.to_le_bytes());
        }
    }

    /// A queue fault becomes the GC hub's latched fault, an IH entry and an MSI.
    fn check_fault(m: &mut Model, st: &mut EmuState) {
        let Some(f) = st.core.fault.take() else {
            return;
        };
        // The hub and IH registers the fault sets are read by the host, not by the CP that
        // ran last.
        st.core.regs.set_xcc(HOST_XCC);
        if m.gc9.is_some() {
            return Self::gc9_fault(m, st, f.va);
        }
        let a = &m.a;
        // mapping_error; client id 0x1B (UTCL2), vmid 0 (GC 12: in STATUS_LO32, same fields).
        let sdef = match a.gen {
            AmGen::Gc11 | AmGen::Gc9 => a.def(regs::GCVM_L2_PROTECTION_FAULT_STATUS),
            AmGen::Gc12 => a.def(regs::GCVM_L2_PROTECTION_FAULT_STATUS_LO32),
        };
        st.core.regs.write(
            a.gc_fault[0],
            put(sdef, "mapping_error", 1) | put(sdef, "cid", 0x1B),
        );
        st.core.regs.write(a.gc_fault[1], (f.va >> 12) as u32);
        st.core
            .regs
            .write(a.gc_fault[2], ((f.va >> 44) & 0xF) as u32);
        let cntl = st.core.regs.read(a.ih_cntl);
        let idef = a.def(regs::IH_RB_CNTL);
        if fld(idef, "rb_enable", cntl) == 0 {
            return;
        }
        let rb_size = fld(idef, "rb_size", cntl);
        // rb_size is log2 of the ring's dwords (amdgpu order_base_2(ring_size / 4)).
        let bytes = 4u64 << rb_size;
        let (Some(base), Some(wkey)) = (
            Self::mc_key(m, u64_of(st, a.ih_base) << 8),
            Self::mc_key(m, u64_of(st, a.ih_wptr_addr)),
        ) else {
            return;
        };
        let mut e = [0u32; 8];
        e[0] = ih::CLIENT_UTCL2;
        e[1] = st.core.clock as u32;
        e[4] = (f.va >> 12) as u32;
        e[5] = ((f.va >> 44) & 0xF) as u32;
        let bytes_e: Vec<u8> = e.iter().flat_map(|w| w.to_le_bytes()).collect();
        let _ = st.mem.write_phys(base + m.ih_wptr, &bytes_e);
        m.ih_wptr = (m.ih_wptr + ih::ENTRY_SIZE) % bytes.max(ih::ENTRY_SIZE);
        let _ = st.mem.write_phys(wkey, &(m.ih_wptr as u32).to_le_bytes());
        m.irq += 1;
    }
}

/// A BAR as an [`Mmio`] view over the plain API.
pub struct EmuBar {
    gpu: EmuPciGpu,
    bar: u8,
    len: u64,
}

impl Mmio for EmuBar {
    fn addr(&self) -> u64 {
        0
    }
    fn size(&self) -> u64 {
        self.len
    }
    fn read_bytes(&self, offset: u64, out: &mut [u8]) -> Result<(), MmioError> {
        self.gpu.bar_read(self.bar, offset, out)
    }
    fn write_bytes(&self, offset: u64, data: &[u8]) -> Result<(), MmioError> {
        self.gpu.bar_write(self.bar, offset, data)
    }
}

/// The CPU view of system pages (bus address = region key).
pub struct EmuDmaView {
    gpu: EmuPciGpu,
    bus: u64,
    len: u64,
}

impl Mmio for EmuDmaView {
    fn addr(&self) -> u64 {
        self.bus
    }
    fn size(&self) -> u64 {
        self.len
    }
    fn read_bytes(&self, offset: u64, out: &mut [u8]) -> Result<(), MmioError> {
        check_range(self.bus, self.len, offset, out.len() as u64)?;
        if self.gpu.dma_read(self.bus + offset, out) {
            Ok(())
        } else {
            Err(MmioError {
                base: self.bus,
                offset,
                len: out.len() as u64,
                size: self.len,
            })
        }
    }
    fn write_bytes(&self, offset: u64, data: &[u8]) -> Result<(), MmioError> {
        check_range(self.bus, self.len, offset, data.len() as u64)?;
        if self.gpu.dma_write(self.bus + offset, data) {
            Ok(())
        } else {
            Err(MmioError {
                base: self.bus,
                offset,
                len: data.len() as u64,
                size: self.len,
            })
        }
    }
}

impl PciDevice for EmuPciGpu {
    fn bus_id(&self) -> String {
        "emu-pci:0000:03:00.0".into()
    }
    fn config_read(&self, offset: u16, len: u8) -> PciResult<u32> {
        Ok(EmuPciGpu::config_read(self, offset, len))
    }
    fn config_write(&self, offset: u16, len: u8, value: u32) -> PciResult<()> {
        EmuPciGpu::config_write(self, offset, len, value);
        Ok(())
    }
    fn bar_len(&self, bar: u8) -> u64 {
        EmuPciGpu::bar_len(self, bar)
    }
    fn bar(&self, bar: u8) -> PciResult<Arc<dyn Mmio>> {
        let len = EmuPciGpu::bar_len(self, bar);
        if len == 0 {
            return Err(PciError::NoDevice {
                detail: format!("emulated GPU has no BAR{bar}"),
            });
        }
        Ok(Arc::new(EmuBar {
            gpu: self.clone(),
            bar,
            len,
        }))
    }
    fn alloc_sysmem(&self, size: u64) -> PciResult<SysMem> {
        let size = size.div_ceil(0x1000) * 0x1000;
        let bus = self.alloc_dma(size).ok_or(PciError::OutOfMemory {
            what: "emulated system memory",
            size,
        })?;
        Ok(SysMem {
            cpu: Arc::new(EmuDmaView {
                gpu: self.clone(),
                bus,
                len: size,
            }),
            pages: (0..size / 0x1000).map(|i| bus + i * 0x1000).collect(),
        })
    }
    fn free_sysmem(&self, mem: &SysMem) {
        if let Some(p) = mem.pages.first() {
            self.free_dma(*p);
        }
    }
    fn wait_interrupt(&self, _timeout_ms: u32) -> PciResult<bool> {
        Ok(EmuPciGpu::wait_interrupt(self))
    }
}
