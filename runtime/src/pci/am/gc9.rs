//! GC 9.4.3 / 9.5.0 (MI300 / MI350, gfx942 / gfx950): the register bring-up of tinygrad's AM driver
//! for this family (tinygrad/runtime/support/am/ip.py, amdev.py, commit a9069c1), with several
//! XCCs (one GC instance each, own MEC and queues), one MM hub per AID, the gfx9 hub (VM_L2 with
//! `trans_further`: 3-level walk, block size 9), NBIO 7.9 doorbell routing through the PCIe
//! index/data pair per AID, SMU 13.0.6-class messages and SDMA 4.4 engines.
//!
//! Register placement and fields come from the register JSON (gc_9_4_3, mmhub_1_8_0, nbio_7_9_0,
//! osssys_4_4_2, sdma_4_4_2, mp_13_0_0/mp_11_0_0) through `regs.rs`; an instance's address is its
//! discovered base + the JSON offset. [`Gc9::boot`] adds the PSP step (shared `psp.rs`: sOS, TOC/TMR,
//! the GC 9 images of [`load_firmware`], REG_LIST, one spatial partition); [`super::AmDevice`] then
//! takes the device over with one PM4 compute queue per XCC (`mqd9.rs`) and the SDMA 4.4 ring.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::boot::{BootKind, BootRecord};
use super::discovery::Discovery;
use super::gmc::{RangeAlloc, BOOT_RECORD, BOOT_SIZE};
use super::{prior_boot, psp, regs, smu, AmGen, AmIp, AmReg, PriorBoot, RegIo, AM_VERSION};
use crate::pci::{PciError, PciResult};
use crate::platform::Mmio;

/// soc_9 enums (tinygrad autogen/am/soc_9.py, from vega10_enum.h).
pub const MTYPE_UC: u32 = 3;
pub const SH_MEM_ADDRESS_MODE_64: u32 = 0;
pub const SH_MEM_ALIGNMENT_MODE_UNALIGNED: u32 = 3;
/// VRAM kept free at the top on 9.4/9.5 (tinygrad `reserved_vram_size`).
pub const RESERVED_VRAM: u64 = 384 << 20;
/// tinygrad's AM VA window (TLSFAllocator base, 48 bits, capped at 0x7fff_ffff_ffff).
pub const VM_BASE: u64 = 0x2000_0000_0000;
pub const VM_END: u64 = 0x7fff_ffff_ffff;
/// AMDGPU_NAVI10_DOORBELL_sDMA_ENGINE0 (the doorbell map tinygrad uses on every family).
pub const DOORBELL_SDMA_ENGINE0: u32 = 256;
/// Golden GB_ADDR_CONFIG of MI300/MI350 (tinygrad AM_GFX.init_hw, from gfx_v9_4_3.c).
pub const GB_ADDR_CONFIG_GOLDEN: u32 = 0x2a11_4042;
/// The kernel's TCP_CNTL golden OR on gfx9 (no field named in the header for bit 29).
pub const TCP_CNTL_GOLDEN_OR: u32 = 0x2000_0000;
/// IH ring size (tinygrad AM_IH.ring_size).
pub const IH_RING_BYTES: u64 = 256 << 10;

/// SMU 13.0.6 message ids (tinygrad autogen/am/smu_13_0_6.py, from smu_v13_0_6_ppsmc.h).
pub mod msg {
    pub const GET_SMU_VERSION: u32 = 0x2;
    pub const GFX_DRIVER_RESET: u32 = 0x3;
    pub const ENABLE_ALL_SMU_FEATURES: u32 = 0x5;
    pub const SET_DRIVER_DRAM_ADDR_HIGH: u32 = 0xD;
    pub const SET_DRIVER_DRAM_ADDR_LOW: u32 = 0xE;
    pub const SET_SOFT_MIN_BY_FREQ: u32 = 0x13;
    pub const GET_DPM_FREQ_BY_INDEX: u32 = 0x17;
}
/// PPCLK_UCLK, PPCLK_FCLK, PPCLK_SOCCLK (SMU 13.0.6 has no GFXCLK soft limits).
pub const CLOCKS: [u32; 3] = [3, 4, 2];

/// (S2A port, awid, range offset, awaddr[31:28]) of SDMA doorbell entries 1..4 of each AID
/// (tinygrad AM_SDMA.init_hw on NBIO 7.9).
pub const SDMA_DOORBELL_PORTS: [(u32, u32, u32, u32); 4] = [
    (1, 0xe, 0xe, 0x1),
    (2, 0x8, 0x8, 0x2),
    (5, 0x9, 0x9, 0x8),
    (6, 0xa, 0xa, 0x9),
];

/// The linux-firmware `amdgpu/` files tinygrad's AMFirmware loads for this family.
pub fn firmware_files(disc: &Discovery) -> PciResult<Vec<String>> {
    let v = |ip| {
        disc.ip(ip)
            .map(|i| format!("{}_{}_{}", i.version.0, i.version.1, i.version.2))
    };
    let mut f = vec![format!("psp_{}_sos.bin", v(AmIp::Mp0)?)];
    // MP1 13.0.12 (MI350) has its SMU firmware in the PSP image.
    if disc.ip(AmIp::Mp1)?.version != (13, 0, 12) {
        f.push(format!("smu_{}.bin", v(AmIp::Mp1)?));
    }
    f.push(format!("sdma_{}.bin", v(AmIp::Sdma0)?));
    f.push(format!("gc_{}_mec.bin", v(AmIp::Gc)?));
    f.push(format!("gc_{}_rlc.bin", v(AmIp::Gc)?));
    Ok(f)
}

/// The firmware set of this family (tinygrad AMFirmware for GC 9), parsed from `dir`.
pub fn load_firmware(dir: &Path, disc: &Discovery) -> PciResult<super::firmware::Firmware> {
    let ver = |ip| disc.ip(ip).map(|i| i.version);
    let names = super::firmware::FirmwareNames::new(
        ver(AmIp::Gc)?,
        ver(AmIp::Mp0)?,
        ver(AmIp::Mp1)?,
        ver(AmIp::Sdma0)?,
    );
    let smu = ver(AmIp::Mp1)? != (13, 0, 12);
    super::firmware::Firmware::parse_gc9_with(&names, smu, &mut |n| {
        let p = dir.join(n);
        std::fs::read(&p).map_err(|e| PciError::Firmware {
            file: p.display().to_string(),
            msg: e.to_string(),
        })
    })
}

/// A missing firmware file is named with the package that ships it.
pub fn check_firmware(dir: &Path, disc: &Discovery) -> PciResult<()> {
    for n in firmware_files(disc)? {
        if !dir.join(&n).is_file() {
            return Err(PciError::Firmware {
                file: dir.join(&n).display().to_string(),
                msg: "missing (linux-firmware's amdgpu/ files, Debian package firmware-amd-graphics; MI300/MI350 files need linux-firmware 20240610 or later, or set WAVESCOPE_AMDGPU_FIRMWARE)".into(),
            });
        }
    }
    Ok(())
}

/// The MM or GC hub's registers (same fields on both; per instance: an AID's MM hub, an XCC's GC hub).
struct HubRegs {
    agp: [AmReg; 3],
    aperture: [AmReg; 2],
    default_addr: [AmReg; 2],
    fault_default: [AmReg; 2],
    fault_cntl2: AmReg,
    tlb: AmReg,
    l2: [AmReg; 4],
    pt_start: [AmReg; 2],
    pt_end: [AmReg; 2],
    pt_base: [AmReg; 2],
    ctx0: AmReg,
    identity: [AmReg; 6],
    engines: [(AmReg, AmReg); 18],
}

fn hub(mm: bool) -> HubRegs {
    use regs::*;
    if mm {
        HubRegs {
            agp: [MMMC_VM_AGP_BASE, MMMC_VM_AGP_BOT, MMMC_VM_AGP_TOP],
            aperture: [
                MMMC_VM_SYSTEM_APERTURE_LOW_ADDR,
                MMMC_VM_SYSTEM_APERTURE_HIGH_ADDR,
            ],
            default_addr: [
                MMMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_LSB,
                MMMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_MSB,
            ],
            fault_default: [
                MMVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_LO32,
                MMVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_HI32,
            ],
            fault_cntl2: MMVM_L2_PROTECTION_FAULT_CNTL2,
            tlb: MMMC_VM_MX_L1_TLB_CNTL,
            l2: [MMVM_L2_CNTL, MMVM_L2_CNTL2, MMVM_L2_CNTL3, MMVM_L2_CNTL4],
            pt_start: [
                MMVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32,
                MMVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32,
            ],
            pt_end: [
                MMVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32,
                MMVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32,
            ],
            pt_base: [
                MMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32,
                MMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32,
            ],
            ctx0: MMVM_CONTEXT0_CNTL,
            identity: [
                MMVM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_LO32,
                MMVM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_HI32,
                MMVM_L2_CONTEXT1_IDENTITY_APERTURE_HIGH_ADDR_LO32,
                MMVM_L2_CONTEXT1_IDENTITY_APERTURE_HIGH_ADDR_HI32,
                MMVM_L2_CONTEXT_IDENTITY_PHYSICAL_OFFSET_LO32,
                MMVM_L2_CONTEXT_IDENTITY_PHYSICAL_OFFSET_HI32,
            ],
            engines: MMVM_INVALIDATE_ENG_ADDR_RANGE,
        }
    } else {
        HubRegs {
            agp: [GCMC_VM_AGP_BASE, GCMC_VM_AGP_BOT, GCMC_VM_AGP_TOP],
            aperture: [
                GCMC_VM_SYSTEM_APERTURE_LOW_ADDR,
                GCMC_VM_SYSTEM_APERTURE_HIGH_ADDR,
            ],
            default_addr: [
                GCMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_LSB,
                GCMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_MSB,
            ],
            fault_default: [
                GCVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_LO32,
                GCVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_HI32,
            ],
            fault_cntl2: GCVM_L2_PROTECTION_FAULT_CNTL2,
            tlb: GCMC_VM_MX_L1_TLB_CNTL,
            l2: [GCVM_L2_CNTL, GCVM_L2_CNTL2, GCVM_L2_CNTL3, GCVM_L2_CNTL4],
            pt_start: [
                GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32,
                GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32,
            ],
            pt_end: [
                GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32,
                GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32,
            ],
            pt_base: [
                GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32,
                GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32,
            ],
            ctx0: GCVM_CONTEXT0_CNTL,
            identity: [
                GCVM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_LO32,
                GCVM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_HI32,
                GCVM_L2_CONTEXT1_IDENTITY_APERTURE_HIGH_ADDR_LO32,
                GCVM_L2_CONTEXT1_IDENTITY_APERTURE_HIGH_ADDR_HI32,
                GCVM_L2_CONTEXT_IDENTITY_PHYSICAL_OFFSET_LO32,
                GCVM_L2_CONTEXT_IDENTITY_PHYSICAL_OFFSET_HI32,
            ],
            engines: GCVM_INVALIDATE_ENG_ADDR_RANGE,
        }
    }
}

/// A GC 9.4.3 / 9.5.0 GPU during bring-up.
pub struct Gc9 {
    pub regs: RegIo,
    pub vram: Arc<dyn Mmio>,
    pub disc: Discovery,
    pub vram_size: u64,
    /// Register segment bases per block and instance (instance order).
    inst: Vec<(AmIp, Vec<Vec<u32>>)>,
    /// XCCs (GC instances), MM hubs (one per AID), SDMA engines.
    pub xccs: usize,
    pub vmhubs: usize,
    pub sdmas: usize,
    pub fb_base: u64,
    pub fb_end: u64,
    /// XGMI physical base of this device (0 on a single device).
    pub paddr_base: u64,
    alloc: RangeAlloc,
    pub root_pt: u64,
    pub memscratch: u64,
    pub dummy_page: u64,
    pub driver_table: u64,
    /// (ring, write-pointer page) of IH rings 0 and 1.
    pub ih_rings: [(u64, u64); 2],
    pub timeout_ms: u64,
    pub prior_boot: PriorBoot,
    /// How this session brought the GPU up ([`Gc9::boot`]).
    pub boot_kind: BootKind,
    /// Every boot-memory allocation (VRAM offset, size) in order: what a partial boot must
    /// re-derive exactly ([`super::boot`]).
    pub boot_log: Vec<(u64, u64)>,
    /// The PSP ring and what it loaded ([`Gc9::boot`]).
    pub psp: psp::Psp,
}

/// The whole VRAM below the reserved top, except the boot record's page ([`BOOT_RECORD`], the
/// last page of the 32 MiB boot memory, as on GC 11/12), which is never handed out.
fn boot_alloc(usable: u64) -> RangeAlloc {
    let mut a = RangeAlloc::new(0, BOOT_RECORD);
    a.free(BOOT_RECORD + 0x1000, usable - BOOT_RECORD - 0x1000);
    // The range it manages is all of it (what lies above the last allocation is free).
    a.size = usable;
    a
}

impl psp::PspMem for Gc9 {
    fn palloc(&mut self, size: u64, align: u64) -> PciResult<u64> {
        self.alloc
            .alloc(size, align.max(0x1000))
            .inspect(|at| self.boot_log.push((*at, size)))
            .ok_or_else(|| PciError::Discovery {
                offset: 0,
                msg: format!("no {size:#x} bytes of boot VRAM left (PSP)"),
            })
    }
    fn vram(&self) -> Arc<dyn Mmio> {
        self.vram.clone()
    }
    fn mc(&self, paddr: u64) -> u64 {
        Gc9::mc(self, paddr)
    }
    fn phys(&self, paddr: u64) -> u64 {
        self.xgmi(paddr)
    }
    /// tinygrad's flush_hdp: a write of 0 to the register REMAP_HDP_MEM_FLUSH_CNTL points at.
    fn flush_hdp(&self, r: &RegIo) -> PciResult<()> {
        let a = r.read(regs::BIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL)?;
        r.wreg((a & 0x7_FFFC) / 4, 0)
    }
}

impl Gc9 {
    /// Reads the memory layout (FB location, XGMI segment) and reserves the boot memory;
    /// a hive (XGMI regions) is refused: only single-device bring-up is done.
    pub fn new(
        mut regs: RegIo,
        vram: Arc<dyn Mmio>,
        disc: Discovery,
        vram_size: u64,
        timeout_ms: u64,
    ) -> PciResult<Gc9> {
        regs.gen = AmGen::Gc9;
        let mut inst = Vec::new();
        for ip in super::ALL_IPS {
            let v: Vec<Vec<u32>> = disc.instances(ip).iter().map(|i| i.bases.clone()).collect();
            if v.is_empty() {
                return Err(PciError::Discovery {
                    offset: 0,
                    msg: format!("no {ip:?} block in the table"),
                });
            }
            regs.set_bases(ip, v[0].clone());
            inst.push((ip, v));
        }
        let count = |ip: AmIp| inst.iter().find(|x| x.0 == ip).map_or(0, |x| x.1.len());
        let (xccs, vmhubs, sdmas) = (
            count(AmIp::Gc).min(8),
            count(AmIp::Mmhub),
            count(AmIp::Sdma0).min(16),
        );
        let lfb = regs.read(regs::MMMC_VM_XGMI_LFB_CNTL)?;
        let phys_id = regs.decode(regs::MMMC_VM_XGMI_LFB_CNTL, lfb, "pf_lfb_region")?;
        let max_region = regs.decode(regs::MMMC_VM_XGMI_LFB_CNTL, lfb, "pf_max_region")?;
        let size = regs.read(regs::MMMC_VM_XGMI_LFB_SIZE)?;
        let seg = u64::from(regs.decode(regs::MMMC_VM_XGMI_LFB_SIZE, size, "pf_lfb_size")?) << 24;
        if seg > 0 && max_region > 0 {
            return Err(PciError::UnsupportedIp {
                ip: "MMHUB",
                version: disc.ip(AmIp::Mmhub)?.version,
                msg: format!("part of an XGMI hive (region {phys_id} of {max_region}): only single-device bring-up is done; reset the hive with amdgpu or use kfd:N"),
            });
        }
        let fb = |r: AmReg| -> PciResult<u64> {
            let v = regs.read(r)?;
            Ok(u64::from(
                regs.decode(r, v, "fb_base")
                    .or_else(|_| regs.decode(r, v, "fb_top"))?,
            ) << 24)
        };
        let fb_base = fb(regs::MMMC_VM_FB_LOCATION_BASE)?;
        let fb_end = fb(regs::MMMC_VM_FB_LOCATION_TOP)?;
        let usable = vram_size
            .checked_sub(RESERVED_VRAM)
            .filter(|u| *u > BOOT_SIZE)
            .ok_or_else(|| PciError::Discovery {
                offset: 0,
                msg: format!(
                    "{} MiB of VRAM leaves no 32 MiB of boot memory below the {} MiB kept reserved on GC 9.4",
                    vram_size >> 20,
                    RESERVED_VRAM >> 20
                ),
            })?;
        let mut g = Gc9 {
            regs,
            vram,
            disc,
            vram_size,
            inst,
            xccs,
            vmhubs,
            sdmas,
            fb_base,
            fb_end,
            paddr_base: u64::from(phys_id) * seg,
            alloc: boot_alloc(usable),
            root_pt: 0,
            memscratch: 0,
            dummy_page: 0,
            driver_table: 0,
            ih_rings: [(0, 0); 2],
            timeout_ms,
            prior_boot: PriorBoot::Foreign,
            boot_kind: BootKind::Full,
            boot_log: Vec::new(),
            psp: psp::Psp::default(),
        };
        g.root_pt = g.palloc(0x1000, true)?;
        g.memscratch = g.palloc(0x1000, false)?;
        g.dummy_page = g.palloc(0x1000, false)?;
        g.driver_table = g.palloc(0x4000, false)?;
        for i in 0..2 {
            g.ih_rings[i] = (g.palloc(IH_RING_BYTES, false)?, g.palloc(0x1000, false)?);
        }
        Ok(g)
    }

    fn palloc(&mut self, size: u64, zero: bool) -> PciResult<u64> {
        let at = self
            .alloc
            .alloc(size, 0x1000)
            .ok_or_else(|| PciError::Discovery {
                offset: 0,
                msg: format!("no {size:#x} bytes of boot VRAM left"),
            })?;
        self.boot_log.push((at, size));
        if zero {
            self.vram.write_bytes(at, &vec![0u8; size as usize])?;
        }
        Ok(at)
    }

    /// MC address of VRAM offset `paddr`; XGMI address (page tables, apertures) of it.
    pub fn mc(&self, paddr: u64) -> u64 {
        self.fb_base + self.paddr_base + paddr
    }
    pub fn xgmi(&self, paddr: u64) -> u64 {
        self.paddr_base + paddr
    }

    /// Absolute dword address of `r` on instance `inst` of its block.
    pub fn addr(&self, r: AmReg, inst: usize) -> PciResult<u32> {
        let d = self.regs.def(r)?;
        let bases = self
            .inst
            .iter()
            .find(|x| x.0 == r.ip)
            .and_then(|x| x.1.get(inst))
            .ok_or_else(|| PciError::Discovery {
                offset: 0,
                msg: format!("{:?} has no instance {inst} (needed for {})", r.ip, r.name),
            })?;
        let base = bases
            .get(usize::from(d.base_index))
            .ok_or_else(|| PciError::Discovery {
                offset: 0,
                msg: format!(
                    "{:?} instance {inst} has no segment {} (needed for {})",
                    r.ip, d.base_index, r.name
                ),
            })?;
        Ok(base + d.offset)
    }
    pub fn read(&self, r: AmReg, inst: usize) -> PciResult<u32> {
        self.regs.rreg(self.addr(r, inst)?)
    }
    pub fn write(&self, r: AmReg, inst: usize, v: u32) -> PciResult<()> {
        self.regs.wreg(self.addr(r, inst)?, v)
    }
    /// Writes the named fields (others 0).
    pub fn write_fields(&self, r: AmReg, inst: usize, f: &[(&str, u32)]) -> PciResult<()> {
        self.write(r, inst, self.regs.encode(r, f)?)
    }
    /// Read-modify-write of the named fields.
    pub fn update(&self, r: AmReg, inst: usize, f: &[(&str, u32)]) -> PciResult<()> {
        let names: Vec<&str> = f.iter().map(|x| x.0).collect();
        let mask = self.regs.field_mask(r, &names)?;
        let old = self.read(r, inst)?;
        self.write(r, inst, (old & !mask) | self.regs.encode(r, f)?)
    }
    fn pair(&self, r: [AmReg; 2], inst: usize, v: u64) -> PciResult<()> {
        self.write(r[0], inst, v as u32)?;
        self.write(r[1], inst, (v >> 32) as u32)
    }

    /// tinygrad's `indirect_wreg_pcie`: a register of AID `aid` through BIF_BX0_PCIE_INDEX2/DATA2
    /// (byte address, AID in bits 32..33 and bit 34 set for AIDs other than 0).
    pub fn wreg_pcie(&self, reg: u32, v: u32, aid: u32) -> PciResult<()> {
        let a = u64::from(reg) * 4
            + if aid > 0 {
                (u64::from(aid & 3) << 32) | (1 << 34)
            } else {
                0
            };
        self.write(regs::BIF_BX0_PCIE_INDEX2, 0, a as u32)?;
        let hi = (a >> 32) as u32;
        if hi > 0 {
            self.write(regs::BIF_BX0_PCIE_INDEX2_HI, 0, hi & 0xff)?;
        }
        self.write(regs::BIF_BX0_PCIE_DATA2, 0, v)?;
        if hi > 0 {
            self.write(regs::BIF_BX0_PCIE_INDEX2_HI, 0, 0)?;
        }
        Ok(())
    }

    /// Runs `f` on the PSP with this device as its memory: the PSP allocates from the device
    /// while it writes registers, so the RegIo is lent out for the call.
    fn with_psp<T>(
        &mut self,
        f: impl FnOnce(&mut psp::Psp, &RegIo, &mut Gc9) -> PciResult<T>,
    ) -> PciResult<T> {
        let mut p = std::mem::take(&mut self.psp);
        let mut placeholder = RegIo::new(self.regs.mmio.clone());
        placeholder.tap = None;
        let regs = std::mem::replace(&mut self.regs, placeholder);
        let res = f(&mut p, &regs, self);
        self.regs = regs;
        self.psp = p;
        res
    }

    /// The register bring-up without the PSP step (for register-level tests whose device has
    /// no PSP): see [`Gc9::boot`].
    pub fn init_blocks(&mut self) -> PciResult<()> {
        self.bring_up(None)
    }

    /// The bring-up in tinygrad's order (AMDev.__init__): reset of a running GPU, SOC, MM hubs,
    /// IH, PSP (sOS, ring, TOC/TMR, firmware of `fw`, REG_LIST), SMU, GFX on every XCC, SDMA,
    /// clocks, clock gating, stamps.
    pub fn boot(&mut self, fw: &super::firmware::Firmware) -> PciResult<()> {
        self.bring_up(Some(fw))
    }

    fn bring_up(&mut self, fw: Option<&super::firmware::Firmware>) -> PciResult<()> {
        self.regs.phase("reset");
        self.prior_boot = prior_boot(&self.regs)?;
        // A partial boot needs the firmware a full boot of ours loaded (register-only bring-ups
        // without a PSP never plan one, nor leave a record).
        if fw.is_some() && self.rederive_boot_memory()? {
            return self.partial_boot();
        }
        self.boot_kind = BootKind::Full;
        if psp::sos_alive(&self.regs)? && smu::alive(&self.regs, 100)? {
            // SMU 13.0.6/13.0.12/13.0.14: GfxDriverReset(1) (tinygrad AM_SMU.mode1_reset).
            smu::send(&self.regs, msg::GFX_DRIVER_RESET, 1, self.timeout_ms)?;
            std::thread::sleep(Duration::from_millis(500));
            self.boot_kind = BootKind::FullAfterReset;
        }
        self.regs.phase("AM_SOC.init_hw");
        self.soc_init()?;
        self.regs.phase("AM_GMC.init_hw");
        for i in 0..self.vmhubs {
            self.init_hub(true, i)?;
        }
        self.regs.phase("AM_IH.init_hw");
        self.ih_init()?;
        if let Some(fw) = fw {
            self.regs.phase("AM_PSP.init_hw");
            let mp0 = self.disc.ip(AmIp::Mp0)?.version;
            self.psp.boot_time_tmr = psp::boot_time_tmr(mp0);
            self.psp.empty_setup_tmr = !psp::autoload_tmr(mp0);
            let t = self.timeout_ms;
            self.with_psp(|p, r, g| p.init(r, g, fw, t))?;
        }
        self.regs.phase("AM_SMU.init_hw");
        self.smu_init()?;
        self.regs.phase("AM_GFX.init_hw");
        self.gfx_init()?;
        if fw.is_some() && self.xccs > 1 {
            // One spatial partition over all XCCs (tinygrad, end of AM_GFX.init_hw).
            let t = self.timeout_ms;
            self.with_psp(|p, r, g| p.spatial_partition(r, g, 1, t))?;
        }
        self.regs.phase("AM_SDMA.init_hw");
        self.sdma_init()?;
        if fw.is_some() {
            // What the next session's partial boot re-derives.
            BootRecord {
                gen: AmGen::Gc9,
                vram_size: self.vram_size,
                mc_base: self.mc(0),
                tmr_size: self.psp.tmr_size,
                allocs: self.boot_log.clone(),
            }
            .write(&*self.vram)?;
        }
        self.finish_boot()
    }

    /// Clocks, clock gating and the boot marks: the end of every boot.
    fn finish_boot(&mut self) -> PciResult<()> {
        self.regs.phase("AM_SMU.set_clocks");
        self.set_clocks()?;
        self.regs.phase("AM_GFX.set_clockgating_state");
        self.clockgating()?;
        self.regs.phase("AMDev.init_hw");
        self.regs.write(regs::SCRATCH_REG7, AM_VERSION)?;
        self.regs.write(regs::SCRATCH_REG6, 1)?;
        self.regs.phase("run");
        Ok(())
    }

    /// Whether this session boots partially ([`super::boot::plan`]): a clean previous session of
    /// ours left a record for this GPU, and repeating the boot-memory allocations (those of
    /// [`Gc9::new`], then the PSP's with the recorded TMR size) lands exactly where it says.
    /// Otherwise the PSP's allocations are undone and the boot is a full one.
    fn rederive_boot_memory(&mut self) -> PciResult<bool> {
        let record = (self.prior_boot == PriorBoot::Clean).then(|| BootRecord::read(&*self.vram));
        let Some(rec) = super::boot::plan(
            AmGen::Gc9,
            self.prior_boot,
            record,
            self.vram_size,
            self.mc(0),
        ) else {
            return Ok(false);
        };
        let (alloc, log) = (self.alloc.clone(), self.boot_log.clone());
        let mp0 = self.disc.ip(AmIp::Mp0)?.version;
        let mut p = psp::Psp::default();
        p.boot_time_tmr = psp::boot_time_tmr(mp0);
        p.empty_setup_tmr = !psp::autoload_tmr(mp0);
        // An allocation the boot memory cannot give (a damaged record) is another layout.
        let placed = p.alloc(self).and_then(|()| {
            if p.needs_tmr(rec.tmr_size) {
                p.alloc_tmr(self, rec.tmr_size)?;
            }
            Ok(())
        });
        p.tmr_size = rec.tmr_size;
        if placed.is_ok() && self.boot_log == rec.allocs {
            self.psp = p;
            return Ok(true);
        }
        self.alloc = alloc;
        self.boot_log = log;
        Ok(false)
    }

    /// tinygrad's partial boot for every family (`AMDev.__init__` with `partial_boot`): SOC, MM
    /// hubs, IH, PSP and SMU stay as the full boot left them; GFX re-initialises its hubs and
    /// resets the MEC (`AM_GFX.init_hw` returning through `reset_mec`: no golden registers,
    /// apertures or spatial partition), then SDMA, clocks and clock gating as in every boot.
    /// Where we differ, as on GC 11/12 (A23): the IH rings are programmed again, so both of
    /// their pointers start at 0 for this session's handler, which reads from 0.
    fn partial_boot(&mut self) -> PciResult<()> {
        use regs::*;
        self.boot_kind = BootKind::Partial;
        self.regs.phase("AM_IH.init_hw");
        self.ih_init()?;
        self.regs.phase("AM_GFX.init_hw");
        self.wait_rlc_autoload()?;
        for x in 0..self.xccs {
            self.init_hub(false, x)?;
        }
        // The root directory was zeroed again (Gc9::new) under MM hubs this boot leaves
        // programmed: what their TLBs hold from the last session is invalidated (A82).
        self.flush_tlbs()?;
        // reset_mec: CP and CPC soft reset on GC < 12 (no HQDs of ours to dequeue yet), then
        // _config_mec and _enable_mec.
        for x in 0..self.xccs {
            self.write_fields(
                GRBM_SOFT_RESET,
                x,
                &[("soft_reset_cp", 1), ("soft_reset_cpc", 1)],
            )?;
        }
        std::thread::sleep(Duration::from_millis(50));
        for x in 0..self.xccs {
            self.write(GRBM_SOFT_RESET, x, 0)?;
        }
        self.config_mec()?;
        self.enable_mec()?;
        self.regs.phase("AM_SDMA.init_hw");
        self.sdma_init()?;
        self.finish_boot()
    }

    /// RLC autoload done: gc_9_4_3 has no RLC_RLCS_BOOTLOAD_STATUS, CP_STAT idle is the condition.
    fn wait_rlc_autoload(&self) -> PciResult<()> {
        self.regs.poll(
            regs::CP_STAT,
            u32::MAX,
            0,
            self.timeout_ms,
            "GFX",
            "CP idle after RLC load",
        )?;
        Ok(())
    }

    /// tinygrad `_config_mec`: both MEs halted and pipe 0 reset, instruction cache invalidated.
    fn config_mec(&self) -> PciResult<()> {
        for x in 0..self.xccs {
            self.update(
                regs::CP_MEC_CNTL,
                x,
                &[
                    ("mec_invalidate_icache", 1),
                    ("mec_me1_pipe0_reset", 1),
                    ("mec_me2_pipe0_reset", 1),
                    ("mec_me1_halt", 1),
                    ("mec_me2_halt", 1),
                ],
            )?;
        }
        Ok(())
    }

    /// tinygrad `_enable_mec`: both MEs out of halt and reset.
    fn enable_mec(&self) -> PciResult<()> {
        for x in 0..self.xccs {
            self.write(regs::CP_MEC_CNTL, x, 0)?;
        }
        std::thread::sleep(Duration::from_millis(50));
        Ok(())
    }

    /// Marks the session as ended (SCRATCH_REG6 = 0, tinygrad's `AMDev.fini` mark).
    pub fn end_session(&self) -> PciResult<()> {
        self.regs.write(regs::SCRATCH_REG6, 0)
    }

    /// NBIO 7.9: doorbell fences of absent XCCs (all AIDs), interrupt monitor and doorbell access.
    pub fn soc_init(&self) -> PciResult<()> {
        let live: u32 = (0..self.xccs).map(|i| 1u32 << i).sum();
        let fences: Vec<(String, u32)> = (0..8)
            .map(|i| {
                (
                    format!("xcc_{i}_doorbell_fence"),
                    u32::from(live & (1 << i) == 0),
                )
            })
            .collect();
        let f: Vec<(&str, u32)> = fences.iter().map(|(n, v)| (n.as_str(), *v)).collect();
        self.write_fields(regs::XCC_DOORBELL_FENCE, 0, &f)?;
        let slave = self
            .regs
            .encode(regs::XCC_DOORBELL_FENCE, &[("shub_slv_mode", 1)])?;
        for aid in 1..self.vmhubs as u32 {
            self.wreg_pcie(self.addr(regs::XCC_DOORBELL_FENCE, 0)?, slave, aid)?;
        }
        // All 11 interrupt sources monitored; all 20 doorbell clients enabled (tinygrad values).
        self.write(regs::BIFC_GFX_INT_MONITOR_MASK, 0, 0x7ff)?;
        self.write_fields(
            regs::BIFC_DOORBELL_ACCESS_EN_PF,
            0,
            &[("bifc_doorbell_access_en_pf", 0xfffff)],
        )?;
        self.write_fields(
            regs::RCC_DEV0_EPF0_RCC_DOORBELL_APER_EN,
            0,
            &[("bif_doorbell_aper_en", 1)],
        )
    }

    /// One hub instance (tinygrad AM_GMC.init_hub with trans_further: gfx9 L2 settings).
    pub fn init_hub(&self, mm: bool, i: usize) -> PciResult<()> {
        let h = hub(mm);
        self.write(h.agp[0], i, 0)?;
        self.write_fields(
            h.agp[1],
            i,
            &[("agp_bot", (0xffff_ffff_ffffu64 >> 24) as u32)],
        )?;
        self.write(h.agp[2], i, 0)?;
        self.write_fields(
            h.aperture[0],
            i,
            &[("logical_addr", (self.fb_base >> 18) as u32)],
        )?;
        self.write_fields(
            h.aperture[1],
            i,
            &[("logical_addr", (self.fb_end >> 18) as u32)],
        )?;
        self.pair(h.default_addr, i, self.xgmi(self.memscratch) >> 12)?;
        self.pair(h.fault_default, i, self.xgmi(self.dummy_page) >> 12)?;
        self.update(
            h.fault_cntl2,
            i,
            &[("active_page_migration_pte_read_retry", 1)],
        )?;
        self.update(
            h.tlb,
            i,
            &[
                ("enable_l1_tlb", 1),
                ("system_access_mode", 3),
                ("enable_advanced_driver_model", 1),
                ("system_aperture_unmapped_access", 0),
                ("mtype", MTYPE_UC),
            ],
        )?;
        self.update(
            h.l2[0],
            i,
            &[
                ("enable_l2_cache", 1),
                ("enable_default_page_out_to_system_memory", 1),
                ("l2_pde0_cache_tag_generation_mode", 0),
                ("pde_fault_classification", 0),
                ("context1_identity_access_mode", 1),
                ("identity_mode_fragment_size", 0),
                // gfx9 (GC < 10) keeps fragment processing on.
                ("enable_l2_fragment_processing", 1),
            ],
        )?;
        self.update(
            h.l2[1],
            i,
            &[("invalidate_all_l1_tlbs", 1), ("invalidate_l2_cache", 1)],
        )?;
        self.write_fields(
            h.l2[2],
            i,
            &[
                ("l2_cache_4k_associativity", 1),
                ("l2_cache_bigk_associativity", 1),
                ("bank_select", 12),
                ("l2_cache_bigk_fragment_size", 9),
            ],
        )?;
        self.write_fields(h.l2[3], i, &[("l2_cache_4k_partition_count", 1)])?;
        // VM context 0 over the AM VA window, root at PDB2: depth 2 and block size 9 on gfx9.
        self.pair(h.pt_start, i, VM_BASE >> 12)?;
        self.pair(h.pt_end, i, VM_END >> 12)?;
        self.pair(h.pt_base, i, self.xgmi(self.root_pt) | 1)?;
        let mut f: Vec<(String, u32)> = [
            "pde0",
            "dummy_page",
            "range",
            "valid",
            "read",
            "write",
            "execute",
            "secure",
        ]
        .iter()
        .flat_map(|x| {
            [
                (format!("{x}_protection_fault_enable_interrupt"), 1),
                (format!("{x}_protection_fault_enable_default"), 1),
            ]
        })
        .collect();
        f.extend([
            ("enable_context".to_string(), 1),
            ("page_table_depth".to_string(), 2),
            ("page_table_block_size".to_string(), 9),
        ]);
        let f: Vec<(&str, u32)> = f.iter().map(|(n, v)| (n.as_str(), *v)).collect();
        self.write_fields(h.ctx0, i, &f)?;
        // Identity aperture off; every invalidation engine over the whole range.
        let id = h.identity;
        self.pair([id[0], id[1]], i, 0xf_ffff_ffff)?;
        self.pair([id[2], id[3]], i, 0)?;
        self.pair([id[4], id[5]], i, 0)?;
        for (lo, hi) in h.engines {
            self.pair([lo, hi], i, 0x1f_ffff_ffff)?;
        }
        Ok(())
    }

    /// IH rings 0 and 1 (OSSSYS 4.4.2: no storm control).
    pub fn ih_init(&self) -> PciResult<()> {
        use regs::*;
        for (ring, (buf, wp)) in self.ih_rings.iter().enumerate() {
            let (base, base_hi, cntl, wptr, rptr, db) = if ring == 0 {
                (
                    IH_RB_BASE,
                    IH_RB_BASE_HI,
                    IH_RB_CNTL,
                    IH_RB_WPTR,
                    IH_RB_RPTR,
                    IH_DOORBELL_RPTR,
                )
            } else {
                (
                    IH_RB_BASE_RING1,
                    IH_RB_BASE_HI_RING1,
                    IH_RB_CNTL_RING1,
                    IH_RB_WPTR_RING1,
                    IH_RB_RPTR_RING1,
                    IH_DOORBELL_RPTR_RING1,
                )
            };
            self.pair([base, base_hi], 0, self.mc(*buf) >> 8)?;
            self.write_fields(
                cntl,
                0,
                &super::ih::rb_cntl_fields(ring as u32, IH_RING_BYTES),
            )?;
            if ring == 0 {
                self.pair([IH_RB_WPTR_ADDR_LO, IH_RB_WPTR_ADDR_HI], 0, self.mc(*wp))?;
            }
            self.write(wptr, 0, 0)?;
            self.write(rptr, 0, 0)?;
            self.write_fields(db, 0, &[("enable", 0)])?;
        }
        self.update(IH_RB_CNTL, 0, &[("rb_enable", 1), ("enable_intr", 1)])?;
        self.update(IH_RB_CNTL_RING1, 0, &[("rb_enable", 1)])
    }

    /// Driver table address and all features on (SMU 13.0.6 message ids).
    pub fn smu_init(&self) -> PciResult<()> {
        let mc = self.mc(self.driver_table);
        smu::send(
            &self.regs,
            msg::SET_DRIVER_DRAM_ADDR_HIGH,
            (mc >> 32) as u32,
            self.timeout_ms,
        )?;
        smu::send(
            &self.regs,
            msg::SET_DRIVER_DRAM_ADDR_LOW,
            mc as u32,
            self.timeout_ms,
        )?;
        smu::send(&self.regs, msg::ENABLE_ALL_SMU_FEATURES, 0, self.timeout_ms)?;
        Ok(())
    }

    /// Soft minimum of UCLK, FCLK and SOCCLK at their highest level (no soft max on gfx9;
    /// a soft-min timeout is ignored, as tinygrad's `contextlib.suppress(TimeoutError)`).
    pub fn set_clocks(&self) -> PciResult<()> {
        let t = self.timeout_ms;
        // tinygrad's read_clocks queries every clock's levels first, then sets the soft minimums.
        let mut top = Vec::new();
        for clk in CLOCKS {
            let n = smu::send(&self.regs, msg::GET_DPM_FREQ_BY_INDEX, clk << 16 | 0xff, t)?
                & 0x7fff_ffff;
            let mut last = None;
            for i in 0..n.min(0xff) {
                let f = smu::send(&self.regs, msg::GET_DPM_FREQ_BY_INDEX, clk << 16 | i, t)?;
                last = Some(f & 0x7fff_ffff);
            }
            if let Some(f) = last {
                top.push((clk, f));
            }
        }
        for (clk, f) in top {
            let arg = clk << 16 | (f & 0xffff);
            match smu::send(&self.regs, msg::SET_SOFT_MIN_BY_FREQ, arg, t.min(20)) {
                Ok(_) | Err(PciError::Timeout { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn grbm_select(&self, xcc: usize, me: u32, pipe: u32, queue: u32, vmid: u32) -> PciResult<()> {
        self.write_fields(
            regs::GRBM_GFX_CNTL,
            xcc,
            &[
                ("meid", me),
                ("pipeid", pipe),
                ("vmid", vmid),
                ("queueid", queue),
            ],
        )
    }

    /// GFX on every XCC (tinygrad AM_GFX.init_hw for GC 9.4.3/9.5.0).
    pub fn gfx_init(&self) -> PciResult<()> {
        use regs::*;
        self.wait_rlc_autoload()?;
        for x in 0..self.xccs {
            self.init_hub(false, x)?;
        }
        self.config_mec()?;
        for x in 0..self.xccs {
            let v = self.read(TCP_CNTL, x)?;
            self.write(TCP_CNTL, x, v | TCP_CNTL_GOLDEN_OR)?;
        }
        for x in 0..self.xccs {
            self.write_fields(RLC_CNTL, x, &[("rlc_enable_f32", 1)])?;
        }
        for x in 0..self.xccs {
            self.update(RLC_SRM_CNTL, x, &[("srm_enable", 1), ("auto_incr_addr", 1)])?;
        }
        for x in 0..self.xccs {
            self.write(RLC_SPM_MC_CNTL, x, 0xf)?;
        }
        let f8 = u32::from(self.disc.ip(AmIp::Gc)?.version.1 == 4);
        for x in 0..self.xccs {
            self.write(GB_ADDR_CONFIG, x, GB_ADDR_CONFIG_GOLDEN)?;
            self.update(TCP_UTCL1_CNTL2, x, &[("spare", 1)])?;
            self.update(GRBM_CNTL, x, &[("read_timeout", 0xff)])?;
            for vmid in 0..16 {
                self.grbm_select(x, 0, 0, 0, vmid)?;
                let mut f = vec![
                    ("retry_disable", 1),
                    ("address_mode", SH_MEM_ADDRESS_MODE_64),
                    ("alignment_mode", SH_MEM_ALIGNMENT_MODE_UNALIGNED),
                ];
                // f8_mode on GC 9.4 only (tinygrad: ip_ver[:2] == (9,4)).
                if f8 == 1 {
                    f.push(("f8_mode", 1));
                }
                self.write_fields(SH_MEM_CONFIG, x, &f)?;
                // LDS at 0x1000_0000_0000_0000, scratch at 0x2000_0000_0000_0000 (4 GiB each).
                self.write_fields(SH_MEM_BASES, x, &[("shared_base", 1), ("private_base", 2)])?;
            }
            self.grbm_select(x, 0, 0, 0, 0)?;
            // tinygrad writes byte offsets as the raw value (the fields hold dwords from bit 2).
            let lower = 0x100 * x as u32;
            self.write(CP_MEC_DOORBELL_RANGE_LOWER, x, lower)?;
            self.write(CP_MEC_DOORBELL_RANGE_UPPER, x, lower + 0xf8)?;
        }
        self.enable_mec()?;
        // More than one XCC: tinygrad asks the PSP for one spatial partition here (not sent yet).
        Ok(())
    }

    /// SDMA 4.4: traps on every engine; per AID four doorbell entries and S2A ports.
    pub fn sdma_init(&self) -> PciResult<()> {
        for e in 0..self.sdmas {
            self.update(
                regs::SDMA_CNTL,
                e,
                &[("trap_enable", 1), ("utc_l1_enable", 1)],
            )?;
        }
        let entries = [
            regs::DOORBELL0_CTRL_ENTRY_1,
            regs::DOORBELL0_CTRL_ENTRY_2,
            regs::DOORBELL0_CTRL_ENTRY_3,
            regs::DOORBELL0_CTRL_ENTRY_4,
            regs::DOORBELL0_CTRL_ENTRY_5,
            regs::DOORBELL0_CTRL_ENTRY_6,
            regs::DOORBELL0_CTRL_ENTRY_7,
            regs::DOORBELL0_CTRL_ENTRY_8,
            regs::DOORBELL0_CTRL_ENTRY_9,
            regs::DOORBELL0_CTRL_ENTRY_10,
            regs::DOORBELL0_CTRL_ENTRY_11,
            regs::DOORBELL0_CTRL_ENTRY_12,
            regs::DOORBELL0_CTRL_ENTRY_13,
            regs::DOORBELL0_CTRL_ENTRY_14,
            regs::DOORBELL0_CTRL_ENTRY_15,
            regs::DOORBELL0_CTRL_ENTRY_16,
        ];
        for aid in 0..self.vmhubs.min(4) {
            for (dev, (port, awid, offset, awaddr)) in SDMA_DOORBELL_PORTS.iter().enumerate() {
                let entry = dev + 1 + 4 * aid;
                let r = entries[entry - 1];
                let (sz, off) = (
                    format!("bif_doorbell{entry}_range_size_entry"),
                    format!("bif_doorbell{entry}_range_offset_entry"),
                );
                let range = (DOORBELL_SDMA_ENGINE0 + (entry as u32 - 1) * 0xa) * 2;
                self.write_fields(r, 0, &[(&sz, 20), (&off, range)])?;
                self.s2a_doorbell(*port, *awid, *awaddr, *offset, 4, aid as u32)?;
            }
        }
        Ok(())
    }

    /// An S2A doorbell port of AID `aid`, written through the PCIe index/data pair.
    pub fn s2a_doorbell(
        &self,
        port: u32,
        awid: u32,
        awaddr: u32,
        offset: u32,
        size: u32,
        aid: u32,
    ) -> PciResult<()> {
        let r = match port {
            0 => regs::S2A_DOORBELL_ENTRY_0_CTRL,
            1 => regs::S2A_DOORBELL_ENTRY_1_CTRL,
            2 => regs::S2A_DOORBELL_ENTRY_2_CTRL,
            3 => regs::S2A_DOORBELL_ENTRY_3_CTRL,
            5 => regs::S2A_DOORBELL_ENTRY_5_CTRL,
            6 => regs::S2A_DOORBELL_ENTRY_6_CTRL,
            _ => {
                return Err(PciError::Discovery {
                    offset: 0,
                    msg: format!("no S2A doorbell port {port} in the driver's NBIO 7.9 table"),
                })
            }
        };
        let f = |n: &str| format!("s2a_doorbell_port{port}_{n}");
        let (en, id, sz, hi, off) = (
            f("enable"),
            f("awid"),
            f("range_size"),
            f("awaddr_31_28_value"),
            f("range_offset"),
        );
        let v = self.regs.encode(
            r,
            &[
                (&en, 1),
                (&id, awid),
                (&sz, size),
                (&hi, awaddr),
                (&off, offset),
            ],
        )?;
        self.wreg_pcie(self.addr(r, 0)?, v, aid)
    }

    /// RLC safe mode around coarse/medium grain clock gating on every XCC (GC 9 fields).
    pub fn clockgating(&self) -> PciResult<()> {
        use regs::*;
        for x in 0..self.xccs {
            self.write_fields(RLC_SAFE_MODE, x, &[("message", 1), ("cmd", 1)])?;
            let cmd = self.regs.field_mask(RLC_SAFE_MODE, &["cmd"])?;
            let t0 = std::time::Instant::now();
            while self.read(RLC_SAFE_MODE, x)? & cmd != 0 {
                if t0.elapsed() > Duration::from_millis(self.timeout_ms) {
                    return Err(PciError::Timeout {
                        block: "GFX",
                        what: format!("RLC safe mode on XCC {x}"),
                        reg: RLC_SAFE_MODE.name,
                        value: self.read(RLC_SAFE_MODE, x)?,
                        ms: self.timeout_ms,
                    });
                }
                std::thread::sleep(Duration::from_micros(100));
            }
            self.update(
                RLC_CGCG_CGLS_CTRL,
                x,
                &[
                    ("cgcg_gfx_idle_threshold", 0x36),
                    ("cgcg_en", 1),
                    ("cgls_rep_compansat_delay", 0xf),
                    ("cgls_en", 1),
                ],
            )?;
            self.update(
                CP_RB_WPTR_POLL_CNTL,
                x,
                &[("poll_frequency", 0x100), ("idle_poll_count", 0x90)],
            )?;
            self.update(
                CP_INT_CNTL,
                x,
                &[
                    ("cntx_busy_int_enable", 1),
                    ("cntx_empty_int_enable", 1),
                    ("cmp_busy_int_enable", 1),
                ],
            )?;
            self.update(
                RLC_CGTT_MGCG_OVERRIDE,
                x,
                &[
                    ("gfxip_mgls_override", 0),
                    ("gfxip_rep_fgcg_override", 0),
                    ("gfxip_fgcg_override", 0),
                    ("grbm_cgtt_sclk_override", 0),
                    ("rlc_cgtt_sclk_override", 0),
                    ("gfxip_mgcg_override", 0),
                    ("gfxip_cgls_override", 0),
                    ("gfxip_cgcg_override", 0),
                ],
            )?;
            self.write_fields(RLC_SAFE_MODE, x, &[("message", 0), ("cmd", 1)])?;
        }
        Ok(())
    }
}

/// After the bring-up: what the runtime's memory manager and queues take over from [`Gc9`].
impl Gc9 {
    /// VRAM past the boot memory, 2 MiB aligned, up to the reserved top: the runtime's heap.
    pub fn heap(&self) -> (u64, u64) {
        let start = self.alloc.high_water().div_ceil(2 << 20) * (2 << 20);
        (start, self.vram_size - RESERVED_VRAM)
    }

    /// tinygrad's `flush_tlb` after a mapping change: HDP flush, then VMID 0 invalidated on
    /// every XCC's GC hub, then (HDP flush again) on every AID's MM hub under its semaphore.
    pub fn flush_tlbs(&self) -> PciResult<()> {
        use regs::*;
        let req = [
            ("flush_type", 0),
            ("per_vmid_invalidate_req", 1),
            ("invalidate_l2_ptes", 1),
            ("invalidate_l2_pde0", 1),
            ("invalidate_l2_pde1", 1),
            ("invalidate_l2_pde2", 1),
            ("invalidate_l1_ptes", 1),
            ("clear_protection_fault_status_addr", 0),
        ];
        let t = self.timeout_ms;
        let wait = |r: AmReg, i: usize, what: &str| -> PciResult<()> {
            let t0 = std::time::Instant::now();
            loop {
                let v = self.read(r, i)?;
                if v & 1 == 1 {
                    return Ok(());
                }
                if t0.elapsed() > Duration::from_millis(t) {
                    return Err(PciError::Timeout {
                        block: "GMC",
                        what: format!("{what} (instance {i})"),
                        reg: r.name,
                        value: v,
                        ms: t,
                    });
                }
                std::thread::sleep(Duration::from_micros(10));
            }
        };
        psp::PspMem::flush_hdp(self, &self.regs)?;
        for x in 0..self.xccs {
            self.write_fields(GCVM_INVALIDATE_ENG17_REQ, x, &req)?;
            wait(GCVM_INVALIDATE_ENG17_ACK, x, "GC hub TLB invalidation ack")?;
        }
        psp::PspMem::flush_hdp(self, &self.regs)?;
        for h in 0..self.vmhubs {
            wait(
                MMVM_INVALIDATE_ENG17_SEM,
                h,
                "MM hub invalidation semaphore",
            )?;
            self.write_fields(MMVM_INVALIDATE_ENG17_REQ, h, &req)?;
            wait(MMVM_INVALIDATE_ENG17_ACK, h, "MM hub TLB invalidation ack")?;
            self.write(MMVM_INVALIDATE_ENG17_SEM, h, 0)?;
        }
        Ok(())
    }
}
