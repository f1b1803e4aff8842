//! The userspace AMD GPU driver ("AM", pci-am-interface.md): IP discovery, then the bring-up
//! order of §1.3 — SOC → GMC (MM hub) → IH → PSP (firmware) → SMU → GFX → SDMA → clocks — and an
//! orderly teardown. Everything goes through a [`PciDevice`]: registers through BAR5, VRAM
//! through BAR0, doorbells through BAR2, system memory through its DMA pages.

pub mod boot;
pub mod discovery;
pub mod firmware;
pub mod gc9;
pub mod gfx;
pub mod gmc;
pub mod ih;
pub mod mqd9;
pub mod psp;
pub mod regs;
pub mod sdma;
pub mod smu;

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::pci::{PciDevice, PciError, PciOptions, PciResult, BAR_DOORBELL, BAR_MMIO, BAR_VRAM};
use crate::platform::Mmio;
use discovery::Discovery;
use firmware::{Firmware, FirmwareNames};

/// The IP blocks whose registers the driver touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AmIp {
    Gc,
    Sdma0,
    Mmhub,
    Nbio,
    Mp0,
    Mp1,
    Hdp,
    Osssys,
}

pub const ALL_IPS: [AmIp; 8] = [
    AmIp::Gc,
    AmIp::Sdma0,
    AmIp::Mmhub,
    AmIp::Nbio,
    AmIp::Mp0,
    AmIp::Mp1,
    AmIp::Hdp,
    AmIp::Osssys,
];

/// The GC generation whose register tables the driver uses (chosen from the discovered
/// versions by [`check_versions`], never assumed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AmGen {
    /// GC 11.0.x (RDNA3).
    #[default]
    Gc11 = 0,
    /// GC 12.0.x (RDNA4).
    Gc12 = 1,
    /// GC 9.4.3 / 9.5.0 (CDNA3/CDNA4, MI300/MI350: several XCCs, gfx9 hub); brought up by [`gc9`].
    Gc9 = 2,
}

impl AmGen {
    pub const ALL: [AmGen; 3] = [AmGen::Gc11, AmGen::Gc12, AmGen::Gc9];
    pub fn label(self) -> &'static str {
        match self {
            AmGen::Gc11 => "GC 11",
            AmGen::Gc12 => "GC 12",
            AmGen::Gc9 => "GC 9.4",
        }
    }
}

/// A register: its IP and, per generation, its placement, name and fields from that
/// generation's register JSON (`None` where the generation has no such register).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AmReg {
    pub ip: AmIp,
    pub name: &'static str,
    pub at: [Option<crate::regs::RegDef>; 3],
}

impl AmReg {
    /// The register's definition on generation `g`.
    pub fn on(&self, g: AmGen) -> Option<&crate::regs::RegDef> {
        self.at[g as usize].as_ref()
    }
    /// Dword offset within its segment on GC 11 (the emulated gfx1100 and GC 11 MQD layout).
    pub fn gc11_offset(&self) -> u32 {
        self.at[0].map_or(u32::MAX, |d| d.offset)
    }
}

/// `RCC_CONFIG_MEMSIZE`: VRAM size in MiB at a fixed dword address, readable before discovery.
pub const RCC_CONFIG_MEMSIZE: u32 = 0xDE3;
/// Written to SCRATCH_REG7 once the GPU is up: wavescope's own stamp ("WS", boot layout 1).
/// tinygrad stamps its AMDev.Version (0xA000_0008 at the recorded commit); its boot memory is
/// laid out differently (256 KiB IH rings, a maximum-size TMR), so a GPU it brought up must not
/// pass for ours. Change the low half when the boot memory layout changes.
pub const AM_VERSION: u32 = 0x5753_0001;

/// Register access through BAR5 (indirect through RSMU_INDEX/DATA beyond the BAR).
pub struct RegIo {
    pub mmio: Arc<dyn Mmio>,
    bases: Vec<(AmIp, Vec<u32>)>,
    /// Whose register tables [`RegIo::addr`] uses.
    pub gen: AmGen,
    /// Sees every access when a command recorder is installed ([`crate::record_io`]).
    pub tap: Option<crate::record_io::MmioTap>,
}

impl RegIo {
    pub fn new(mmio: Arc<dyn Mmio>) -> Self {
        RegIo {
            mmio,
            bases: Vec::new(),
            gen: AmGen::Gc11,
            tap: crate::record::installed().map(crate::record_io::MmioTap::new),
        }
    }
    pub fn set_bases(&mut self, ip: AmIp, bases: Vec<u32>) {
        self.bases.retain(|(i, _)| *i != ip);
        self.bases.push((ip, bases));
    }
    pub fn bases(&self, ip: AmIp) -> Option<&[u32]> {
        self.bases
            .iter()
            .find(|(i, _)| *i == ip)
            .map(|(_, b)| b.as_slice())
    }
    /// The register's definition on this device's generation; a register the generation
    /// does not have is an error naming both.
    pub fn def(&self, r: AmReg) -> PciResult<crate::regs::RegDef> {
        r.at[self.gen as usize].ok_or_else(|| PciError::Discovery {
            offset: 0,
            msg: format!(
                "{} has no register {} (shared/amd-registers)",
                self.gen.label(),
                r.name
            ),
        })
    }
    /// Field `name` of `def` on this generation: a name it lacks is an error.
    fn field(
        &self,
        def: &crate::regs::RegDef,
        name: &str,
    ) -> PciResult<&'static crate::regs::FieldDef> {
        def.field(name).ok_or_else(|| PciError::Discovery {
            offset: 0,
            msg: format!(
                "{}: register {} has no field {name}",
                self.gen.label(),
                def.name
            ),
        })
    }
    /// Encodes named field values of `r` with this generation's field layout (no shifts in the
    /// driver): an unknown field or a value wider than its field is an error.
    pub fn encode(&self, r: AmReg, fields: &[(&str, u32)]) -> PciResult<u32> {
        let def = self.def(r)?;
        let mut v = 0u32;
        for (name, val) in fields {
            let f = self.field(&def, name)?;
            if val & !f.value_mask() != 0 {
                return Err(PciError::Discovery {
                    offset: 0,
                    msg: format!(
                        "{val:#x} does not fit {}.{name} ({} bits)",
                        def.name,
                        f.width()
                    ),
                });
            }
            v |= val << f.lo;
        }
        Ok(v)
    }
    /// One field of a value read from `r`, with this generation's layout.
    pub fn decode(&self, r: AmReg, value: u32, field: &str) -> PciResult<u32> {
        Ok(self.field(&self.def(r)?, field)?.get(value))
    }
    /// The bits of the named fields of `r` on this generation.
    pub fn field_mask(&self, r: AmReg, fields: &[&str]) -> PciResult<u32> {
        let def = self.def(r)?;
        let mut m = 0u32;
        for name in fields {
            m |= self.field(&def, name)?.mask();
        }
        Ok(m)
    }
    /// Writes `r` with the named fields set (the others 0).
    pub fn write_fields(&self, r: AmReg, fields: &[(&str, u32)]) -> PciResult<()> {
        self.write(r, self.encode(r, fields)?)
    }
    /// Read-modify-write of the named fields of `r` (the others keep their value).
    pub fn update_fields(&self, r: AmReg, fields: &[(&str, u32)]) -> PciResult<()> {
        let names: Vec<&str> = fields.iter().map(|f| f.0).collect();
        let mask = self.field_mask(r, &names)?;
        let v = self.encode(r, fields)?;
        self.update(r, mask, v)
    }
    /// The first of `rs` this generation has (a register renamed or split between generations).
    pub fn first_of(&self, rs: &[AmReg]) -> PciResult<AmReg> {
        rs.iter()
            .copied()
            .find(|r| r.on(self.gen).is_some())
            .ok_or_else(|| PciError::Discovery {
                offset: 0,
                msg: format!(
                    "{} has none of {:?} (shared/amd-registers)",
                    self.gen.label(),
                    rs.iter().map(|r| r.name).collect::<Vec<_>>()
                ),
            })
    }
    pub fn addr(&self, r: AmReg) -> PciResult<u32> {
        let d = self.def(r)?;
        let b = self.bases(r.ip).ok_or_else(|| PciError::Discovery {
            offset: 0,
            msg: format!("{:?} has no base addresses (needed for {})", r.ip, r.name),
        })?;
        let base = b
            .get(usize::from(d.base_index))
            .ok_or_else(|| PciError::Discovery {
                offset: 0,
                msg: format!(
                    "{:?} has no segment {} (needed for {})",
                    r.ip, d.base_index, r.name
                ),
            })?;
        Ok(base + d.offset)
    }
    /// The known register at absolute dword address `addr` (for recordings); of two names for
    /// one register (CP_HQD_HQ_STATUS0 / _SCHEDULER0) the alphabetically first, as tinygrad's.
    pub fn name_of(&self, addr: u32) -> Option<(&'static str, AmIp)> {
        regs::ALL
            .iter()
            .filter(|r| r.on(self.gen).is_some() && self.addr(**r).ok() == Some(addr))
            .filter_map(|r| r.on(self.gen).map(|d| (d.name, r.ip)))
            .min_by_key(|(n, _)| *n)
    }
    fn tap(&self, write: bool, addr: u32, v: u32, indirect: bool) {
        if let Some(t) = &self.tap {
            t.access(write, addr, self.name_of(addr), v, indirect);
        }
    }
    pub fn rreg(&self, addr: u32) -> PciResult<u32> {
        let byte = u64::from(addr) * 4;
        if byte + 4 <= self.mmio.size() {
            let v = self.mmio.read32(byte)?;
            self.tap(false, addr, v, false);
            return Ok(v);
        }
        let (idx, data) = self.rsmu()?;
        self.mmio.write32(u64::from(idx) * 4, byte as u32)?;
        let v = self.mmio.read32(u64::from(data) * 4)?;
        self.tap(false, addr, v, true);
        Ok(v)
    }
    pub fn wreg(&self, addr: u32, v: u32) -> PciResult<()> {
        let byte = u64::from(addr) * 4;
        if byte + 4 <= self.mmio.size() {
            self.tap(true, addr, v, false);
            return Ok(self.mmio.write32(byte, v)?);
        }
        let (idx, data) = self.rsmu()?;
        self.tap(true, addr, v, true);
        self.mmio.write32(u64::from(idx) * 4, byte as u32)?;
        Ok(self.mmio.write32(u64::from(data) * 4, v)?)
    }
    /// Names the bring-up step in progress in the recording.
    pub fn phase(&self, p: &'static str) {
        if let Some(t) = &self.tap {
            t.set_phase(p);
        }
    }
    fn rsmu(&self) -> PciResult<(u32, u32)> {
        Ok((
            self.addr(regs::BIF_BX_PF0_RSMU_INDEX)?,
            self.addr(regs::BIF_BX_PF0_RSMU_DATA)?,
        ))
    }
    pub fn read(&self, r: AmReg) -> PciResult<u32> {
        self.rreg(self.addr(r)?)
    }
    pub fn write(&self, r: AmReg, v: u32) -> PciResult<()> {
        self.wreg(self.addr(r)?, v)
    }
    /// Read-modify-write of the bits in `mask`.
    pub fn update(&self, r: AmReg, mask: u32, v: u32) -> PciResult<()> {
        let old = self.read(r)?;
        self.write(r, (old & !mask) | (v & mask))
    }
    /// Polls until `(reg & mask) == value`; a timeout names the block and what it waited for.
    pub fn poll(
        &self,
        r: AmReg,
        mask: u32,
        value: u32,
        timeout_ms: u64,
        block: &'static str,
        what: &str,
    ) -> PciResult<u32> {
        let t0 = Instant::now();
        let mut spins = 0u32;
        loop {
            let v = self.read(r)?;
            if v & mask == value {
                return Ok(v);
            }
            if t0.elapsed() > Duration::from_millis(timeout_ms) {
                return Err(PciError::Timeout {
                    block,
                    what: what.to_string(),
                    reg: r.name,
                    value: v,
                    ms: timeout_ms,
                });
            }
            spins += 1;
            if spins > 100 {
                std::thread::sleep(Duration::from_micros(100));
            }
        }
    }
}

/// The generation of the discovered GC and SDMA: the first [`AmGen`] whose register tables
/// ([`regs::COMPATIBLE`], from the register JSON) cover the discovered GC version.
fn gen_of(disc: &Discovery) -> PciResult<Option<AmGen>> {
    let gc = disc.ip(AmIp::Gc)?.version;
    Ok(AmGen::ALL.into_iter().find(|g| {
        regs::COMPATIBLE[*g as usize]
            .iter()
            .any(|(i, vs)| *i == AmIp::Gc && vs.contains(&gc))
    }))
}

/// Chooses the register tables from the discovered IP versions and checks every block against
/// them: GC picks the generation, then each block with registers must be one of the versions
/// whose register JSON places them where that generation's table does, and SDMA must speak
/// that generation's packet format. Does not say whether the bring-up is implemented.
pub fn select_gen(disc: &Discovery) -> PciResult<AmGen> {
    let gc = disc.ip(AmIp::Gc)?.version;
    let fix = "use the KFD path (kfd:N) for this GPU";
    let Some(g) = gen_of(disc)? else {
        let msg = match crate::list::gc_family(gc) {
            Some(f) => format!("{f}: the driverless path has register tables for GC 9.4.3/9.5.0, GC 11.0.0 and GC 12.0.0/12.0.1 only; {fix}"),
            None => format!("not a GPU generation wavescope knows; {fix}"),
        };
        return Err(PciError::UnsupportedIp {
            ip: "GC",
            version: gc,
            msg,
        });
    };
    // SDMA 6 on GC 11, SDMA 7 on GC 12 (queue registers in GC's table), SDMA 4.4 on GC 9.4.
    let sdma_major = match g {
        AmGen::Gc11 => 6,
        AmGen::Gc12 => 7,
        AmGen::Gc9 => 4,
    };
    let sdma = disc.ip(AmIp::Sdma0)?.version;
    if sdma.0 != sdma_major {
        return Err(PciError::UnsupportedIp {
            ip: "SDMA0",
            version: sdma,
            msg: format!(
                "the driver builds SDMA {sdma_major} packets ({}); {fix}",
                g.label()
            ),
        });
    }
    for (ip, vs) in regs::COMPATIBLE[g as usize] {
        let v = disc.ip(*ip)?.version;
        if !vs.contains(&v) {
            let known: Vec<String> = vs.iter().map(|(a, b, c)| format!("{a}.{b}.{c}")).collect();
            return Err(PciError::UnsupportedIp {
                ip: crate::record_io::ip_name(*ip),
                version: v,
                msg: format!(
                    "the driver's {} registers on {} are placed for version {} (shared/amd-registers); {fix}",
                    crate::record_io::ip_name(*ip),
                    g.label(),
                    known.join(" or ")
                ),
            });
        }
    }
    Ok(g)
}

/// Refuses a discovery table the driver cannot bring up: an IP version without register tables
/// ([`select_gen`]), naming the version and the fix.
pub fn check_versions(disc: &Discovery) -> PciResult<AmGen> {
    select_gen(disc)
}

/// What the GPU says about the session before ours (tinygrad's partial-boot test in
/// `AMDev.__init__`): SCRATCH_REG7 holds the boot stamp of the driver that brought it up,
/// SCRATCH_REG6 is 1 while that driver runs and 0 after its orderly teardown, and a latched GC
/// hub protection fault means the last workload crashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PriorBoot {
    /// Not brought up by this driver (power-on, amdgpu, tinygrad).
    #[default]
    Foreign,
    /// Brought up by this driver and torn down cleanly: a partial boot ([`boot`]) when the
    /// boot record matches, as tinygrad re-initialises only GFX and SDMA here.
    Clean,
    /// Brought up by this driver but not torn down, or with a GC fault pending.
    Dirty,
}

/// Reads the previous session's marks ([`PriorBoot`]) on GC 11 and GC 12.
pub fn prior_boot(r: &RegIo) -> PciResult<PriorBoot> {
    if r.read(regs::SCRATCH_REG7)? != AM_VERSION {
        return Ok(PriorBoot::Foreign);
    }
    // GC 12 splits the status into LO32/HI32; the LO32 half carries GC 11's fields.
    let fault = r.first_of(&[
        regs::GCVM_L2_PROTECTION_FAULT_STATUS,
        regs::GCVM_L2_PROTECTION_FAULT_STATUS_LO32,
    ])?;
    if r.read(regs::SCRATCH_REG6)? != 0 || r.read(fault)? != 0 {
        return Ok(PriorBoot::Dirty);
    }
    Ok(PriorBoot::Clean)
}

/// The brought-up GPU: BAR views, discovered IPs and the per-IP state.
pub struct AmDevice {
    pub pci: Arc<dyn PciDevice>,
    pub regs: RegIo,
    pub vram: Arc<dyn Mmio>,
    pub doorbells: Arc<dyn Mmio>,
    pub disc: Discovery,
    pub vram_size: u64,
    pub gmc: gmc::Gmc,
    pub ih: ih::Ih,
    pub psp: psp::Psp,
    pub smu: smu::Smu,
    pub fw: Firmware,
    pub timeout_ms: u64,
    pub gfx_queue: Option<gfx::ComputeQueue>,
    pub sdma_queue: Option<sdma::SdmaQueue>,
    /// What the previous session left ([`prior_boot`], read before the bring-up).
    pub prior_boot: PriorBoot,
    /// How this session brought the GPU up.
    pub boot_kind: boot::BootKind,
    finished: bool,
    /// GC 9 (several XCCs): the device as [`gc9::Gc9`] brought it up, which the per-XCC
    /// queue set-up, TLB flushes and teardown go through.
    pub gc9: Option<Box<gc9::Gc9>>,
    /// GC 9: VRAM offset of the compute MQD slots (one per XCC) and the XCCs whose HQD is on.
    pub gc9_mqd: Option<u64>,
    pub gc9_queues: Vec<usize>,
}

impl AmDevice {
    /// Discovery, firmware and the full bring-up.
    pub fn boot(pci: Arc<dyn PciDevice>, opts: &PciOptions) -> PciResult<AmDevice> {
        let mmio = pci.bar(BAR_MMIO)?;
        let vram = pci.bar(BAR_VRAM)?;
        let doorbells = pci.bar(BAR_DOORBELL)?;
        let mut regs = RegIo::new(mmio);

        // §1.2: VRAM size, then the discovery binary at VRAM end − 64 KiB through BAR0.
        let vram_size = u64::from(regs.rreg(RCC_CONFIG_MEMSIZE)?) << 20;
        if vram_size < (128 << 20) {
            return Err(PciError::Discovery {
                offset: 0,
                msg: format!(
                    "RCC_CONFIG_MEMSIZE reports {} MiB of VRAM (is the GPU powered and out of reset?)",
                    vram_size >> 20
                ),
            });
        }
        let doff = vram_size - discovery::TABLE_FROM_END;
        if doff + discovery::TABLE_SIZE as u64 > vram.size() {
            return Err(PciError::Discovery {
                offset: doff,
                msg: format!(
                    "the table lies beyond BAR0 ({:#x} bytes): enable Resizable BAR so BAR0 covers all VRAM",
                    vram.size()
                ),
            });
        }
        let mut tbl = vec![0u8; discovery::TABLE_SIZE];
        vram.read_bytes(doff, &mut tbl)?;
        let disc = Discovery::parse(&tbl, doff)?;
        // Every block's version is checked against the register JSON the driver was generated
        // from: the same writes on another layout would hit the wrong registers.
        regs.gen = check_versions(&disc)?;
        if regs.gen == AmGen::Gc9 {
            // Several XCCs, per-AID hubs and another firmware set: its own bring-up (gc9.rs).
            gc9::check_firmware(&opts.firmware_dir, &disc)?;
            let fw = gc9::load_firmware(&opts.firmware_dir, &disc)?;
            let mut g = gc9::Gc9::new(
                regs,
                vram,
                disc.clone(),
                vram_size,
                opts.handshake_timeout_ms,
            )?;
            g.boot(&fw)?;
            return AmDevice::after_gc9_boot(pci, g, doorbells, fw);
        }
        for ip in ALL_IPS {
            // SDMA registers live in GC's register space on GC 11 (SDMA0 reports the same bases).
            let b = disc.ip(ip)?.bases.clone();
            regs.set_bases(ip, b);
        }
        if let Some(t) = &regs.tap {
            t.event(crate::record_io::device_info(&disc, vram_size));
        }

        let ver = |ip| disc.ip(ip).map(|i| i.version);
        let names = FirmwareNames::new(
            ver(AmIp::Gc)?,
            ver(AmIp::Mp0)?,
            ver(AmIp::Mp1)?,
            ver(AmIp::Sdma0)?,
        );
        let fw = Firmware::load(&opts.firmware_dir, &names)?;
        if let Some(t) = &regs.tap {
            for n in [
                &names.sos,
                &names.smu,
                &names.sdma,
                &names.mec,
                &names.imu,
                &names.rlc,
            ] {
                t.event(crate::record_io::firmware_event(&opts.firmware_dir, n));
            }
            for n in names.pfp.iter().chain(&names.me) {
                t.event(crate::record_io::firmware_event(&opts.firmware_dir, n));
            }
        }

        let gmc = gmc::Gmc::new(&regs, vram.clone(), vram_size)?;
        let mut dev = AmDevice {
            pci,
            regs,
            vram,
            doorbells,
            disc,
            vram_size,
            gmc,
            ih: ih::Ih::default(),
            psp: psp::Psp::default(),
            smu: smu::Smu::default(),
            fw,
            timeout_ms: opts.handshake_timeout_ms,
            gfx_queue: None,
            sdma_queue: None,
            prior_boot: PriorBoot::Foreign,
            boot_kind: boot::BootKind::Full,
            finished: false,
            gc9: None,
            gc9_mqd: None,
            gc9_queues: Vec::new(),
        };
        if let Err(e) = dev.bring_up() {
            // A failed bring-up has no queues or clocks to undo (and the handshakes that failed
            // would only time out again): just stop interrupts.
            dev.finished = true;
            let _ = dev.ih.fini(&dev.regs);
            return Err(e);
        }
        Ok(dev)
    }

    /// The device after [`gc9::Gc9::boot`]: its memory (root directory, heap past the boot
    /// memory) and IH ring 0 taken over, registers through instance 0 of every block.
    fn after_gc9_boot(
        pci: Arc<dyn PciDevice>,
        g: gc9::Gc9,
        doorbells: Arc<dyn Mmio>,
        fw: Firmware,
    ) -> PciResult<AmDevice> {
        let mut regs = RegIo::new(g.regs.mmio.clone());
        regs.gen = AmGen::Gc9;
        for ip in ALL_IPS {
            regs.set_bases(ip, g.disc.ip(ip)?.bases.clone());
        }
        let gmc = gmc::Gmc::for_gc9(
            &regs,
            g.vram.clone(),
            g.vram_size,
            g.mc(0),
            g.root_pt,
            (g.memscratch, g.dummy_page),
            g.heap(),
        )?;
        Ok(AmDevice {
            pci,
            regs,
            vram: g.vram.clone(),
            doorbells,
            disc: g.disc.clone(),
            vram_size: g.vram_size,
            gmc,
            ih: ih::Ih::adopt(&g.ih_rings[..1], gc9::IH_RING_BYTES),
            psp: psp::Psp::default(),
            smu: smu::Smu::default(),
            fw,
            timeout_ms: g.timeout_ms,
            gfx_queue: None,
            sdma_queue: None,
            prior_boot: g.prior_boot,
            boot_kind: boot::BootKind::Full,
            finished: false,
            gc9: Some(Box::new(g)),
            gc9_mqd: None,
            gc9_queues: Vec::new(),
        })
    }

    /// HDP flush and TLB invalidation on every hub after a mapping change (on GC 9 every XCC's
    /// GC hub and every AID's MM hub).
    pub fn flush_tlbs(&self) -> PciResult<()> {
        match &self.gc9 {
            Some(g) => g.flush_tlbs(),
            None => self.gmc.flush_tlbs(&self.regs, true),
        }
    }

    /// The generation whose register tables and sequence this device uses.
    pub fn gen(&self) -> AmGen {
        self.regs.gen
    }

    /// Reads the previous session's marks, then boots partially ([`boot::plan`]) or fully.
    fn bring_up(&mut self) -> PciResult<()> {
        self.regs.phase("reset");
        self.prior_boot = prior_boot(&self.regs)?;
        // The record is read only for a clean session of ours: nothing else wrote it.
        let record = if self.prior_boot == PriorBoot::Clean {
            Some(boot::BootRecord::read(&*self.vram))
        } else {
            None
        };
        let plan = boot::plan(
            self.gen(),
            self.prior_boot,
            record,
            self.vram_size,
            self.gmc.mc_base,
        );
        if let Some(rec) = plan {
            if self.rederive_boot_memory(&rec)? {
                return self.partial_boot();
            }
            // Another layout than the record's: start over on fresh boot memory.
            self.gmc = gmc::Gmc::new(&self.regs, self.vram.clone(), self.vram_size)?;
            self.ih = ih::Ih::default();
            self.psp = psp::Psp::default();
            self.smu = smu::Smu::default();
        }
        self.full_boot()
    }

    /// Repeats the full boot's boot-memory allocations (IH, PSP, TMR at the recorded size, SMU;
    /// the GMC's were made by [`gmc::Gmc::new`]) without touching the hardware; whether they
    /// landed exactly where the record says.
    fn rederive_boot_memory(&mut self, rec: &boot::BootRecord) -> PciResult<bool> {
        self.ih.alloc(&mut self.gmc)?;
        self.psp.boot_time_tmr = psp::boot_time_tmr(self.disc.ip(AmIp::Mp0)?.version);
        self.psp.alloc(&mut self.gmc)?;
        if self.psp.needs_tmr(rec.tmr_size) {
            self.psp.alloc_tmr(&mut self.gmc, rec.tmr_size)?;
        }
        self.psp.tmr_size = rec.tmr_size;
        self.smu.alloc(&mut self.gmc)?;
        Ok(self.gmc.boot_log == rec.allocs)
    }

    /// The partial boot of this generation (a family plugs its own in here).
    fn partial_boot(&mut self) -> PciResult<()> {
        match self.gen() {
            AmGen::Gc11 | AmGen::Gc12 => self.partial_boot_gc11_12(),
            // `boot::partial_supported` says no for GC 9: a full boot is planned instead.
            AmGen::Gc9 => Err(gc9::not_yet(&self.disc)),
        }
    }

    /// GC 11 and GC 12, in tinygrad's order: SOC, MM hub, PSP and SMU stay as the full boot
    /// left them (the firmware is read from disk for the MEC's program counter but not loaded);
    /// then GFX ([`gfx::reinit`]), SDMA, clocks and clock gating as in every boot. Where we
    /// differ: the root page directory, zeroed again by [`gmc::Gmc::new`], gets an MM hub TLB
    /// invalidation (tinygrad's next mapping flushes it), and the IH rings are programmed
    /// again because our teardown stops them (A23).
    fn partial_boot_gc11_12(&mut self) -> PciResult<()> {
        let gc12 = self.gen() == AmGen::Gc12;
        self.boot_kind = boot::BootKind::Partial;
        self.regs.phase("AM_GMC.partial");
        self.gmc.invalidate(&self.regs, gmc::Hub::Mm)?;
        self.regs.phase("AM_IH.init_hw");
        self.ih.program(&self.regs, &self.gmc)?;
        self.regs.phase("AM_GFX.init_hw");
        gfx::reinit(self)?;
        self.regs.phase("AM_SDMA.init_hw");
        sdma::init(self)?;
        self.finish_boot(gc12)
    }

    /// A previous session that did not end cleanly, and no way to reset the GPU from here.
    fn unrecoverable(&self, why: &str) -> PciError {
        let bus = self.pci.bus_id();
        // Behind a USB bridge the host has no PCI function to reset: only power helps.
        let fix = if bus.starts_with("usb:") {
            "power-cycle the eGPU before opening it again (unplug its power, then replug it)"
                .to_string()
        } else {
            format!(
                "reset the GPU before opening it again: `echo 1 | sudo tee /sys/bus/pci/devices/{bus}/reset`, or bind amdgpu once (it resets the GPU), or power-cycle the machine"
            )
        };
        PciError::Unrecoverable {
            why: format!(
                "the previous wavescope session on this GPU did not end cleanly (SCRATCH_REG6 still 1 or a GC page fault pending) and {why}; {fix}"
            ),
            bus,
        }
    }

    fn full_boot(&mut self) -> PciResult<()> {
        let gc12 = self.gen() == AmGen::Gc12;
        // §1.3: a GPU left running by amdgpu or a crashed run answers on both mailboxes: reset
        // it. A crashed session of ours may still run queues and DMA into the memory this boot
        // reuses: without a working reset it is refused (tinygrad boots on without one).
        let dirty = self.prior_boot == PriorBoot::Dirty;
        if psp::sos_alive(&self.regs)? {
            if smu::alive(&self.regs, 100)? {
                smu::send(&self.regs, smu::MSG_MODE1_RESET, 0, self.timeout_ms)?;
                std::thread::sleep(Duration::from_millis(500));
                self.boot_kind = boot::BootKind::FullAfterReset;
                if dirty && !self.sos_stopped()? {
                    return Err(self.unrecoverable(
                        "the mode-1 reset did not take (the PSP's SOS still runs)",
                    ));
                }
            } else if dirty {
                return Err(self
                    .unrecoverable("the SMU does not answer, so no mode-1 reset can recover it"));
            }
        }
        // The phase names are tinygrad's bring-up methods, so recordings compare by step.
        self.regs.phase("AM_SOC.init_hw");
        self.soc_init()?;
        self.regs.phase("AM_GMC.init_hw");
        self.gmc.init_hub(&self.regs, gmc::Hub::Mm)?;
        self.regs.phase("AM_IH.init_hw");
        self.ih.init(&self.regs, &mut self.gmc)?;
        if !gc12 {
            self.doorbell_enable(1, 0, 0, ih::DOORBELL_IH * 2, 2)?;
        }
        self.regs.phase("AM_PSP.init_hw");
        self.psp.boot_time_tmr = psp::boot_time_tmr(self.disc.ip(AmIp::Mp0)?.version);
        self.psp
            .init(&self.regs, &mut self.gmc, &self.fw, self.timeout_ms)?;
        self.regs.phase("AM_SMU.init_hw");
        self.smu.init(&self.regs, &mut self.gmc, self.timeout_ms)?;
        self.regs.phase("AM_GFX.init_hw");
        if gc12 {
            gfx::init_gc12(self)?;
        } else {
            gfx::init(self)?;
        }
        self.regs.phase("AM_SDMA.init_hw");
        sdma::init(self)?;
        // What the next session's partial boot re-derives.
        boot::BootRecord {
            gen: self.gen(),
            vram_size: self.vram_size,
            mc_base: self.gmc.mc_base,
            tmr_size: self.psp.tmr_size,
            allocs: self.gmc.boot_log.clone(),
        }
        .write(&*self.vram)?;
        self.finish_boot(gc12)
    }

    /// Waits up to the handshake timeout for SOS to stop after a mode-1 reset.
    fn sos_stopped(&self) -> PciResult<bool> {
        let t0 = Instant::now();
        while psp::sos_alive(&self.regs)? {
            if t0.elapsed() > Duration::from_millis(self.timeout_ms) {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(true)
    }

    /// Clocks, clock gating and the boot marks: the end of every boot.
    fn finish_boot(&mut self, gc12: bool) -> PciResult<()> {
        self.regs.phase("AM_SMU.set_clocks");
        self.smu.set_clocks(&self.regs, true, self.timeout_ms)?;
        if gc12 {
            self.regs.phase("AM_SOC.set_clockgating_state");
            // HDP 5.2.1 and later: light sleep / deep sleep of the atomic memory.
            self.regs.update_fields(
                regs::HDP_MEM_POWER_CTRL,
                &[
                    ("atomic_mem_power_ctrl_en", 1),
                    ("atomic_mem_power_ds_en", 1),
                ],
            )?;
            self.regs.phase("AM_GFX.set_clockgating_state");
            gfx::clockgating_gc12(self)?;
        }
        self.gmc.boot_done();
        self.regs.phase("AMDev.init_hw");
        self.regs.write(regs::SCRATCH_REG7, AM_VERSION)?;
        // "Running" (fini clears it): a stamp with REG6 still set means a session that crashed.
        self.regs.write(regs::SCRATCH_REG6, 1)?;
        self.regs.phase("run");
        Ok(())
    }

    /// SOC: no soft reset of function 2 (the audio function), doorbell aperture on.
    fn soc_init(&mut self) -> PciResult<()> {
        self.regs.update_fields(
            regs::RCC_DEV0_EPF2_STRAP2,
            &[("strap_no_soft_reset_dev0_f2", 0)],
        )?;
        self.regs
            .write(regs::RCC_DEV0_EPF0_RCC_DOORBELL_APER_EN, 1)?;
        Ok(())
    }

    /// Programs an S2A doorbell port (routes a doorbell range to an engine).
    pub fn doorbell_enable(
        &self,
        port: u32,
        awid: u32,
        awaddr_31_28: u32,
        offset: u32,
        size: u32,
    ) -> PciResult<()> {
        let r = match port {
            0 => regs::S2A_DOORBELL_ENTRY_0_CTRL,
            1 => regs::S2A_DOORBELL_ENTRY_1_CTRL,
            2 => regs::S2A_DOORBELL_ENTRY_2_CTRL,
            _ => regs::S2A_DOORBELL_ENTRY_3_CTRL,
        };
        // Field names carry the port number; layouts come from this generation's JSON.
        let p = port.min(3);
        let f = |n: &str| format!("s2a_doorbell_port{p}_{n}");
        let (en, id, off, sz, hi) = (
            f("enable"),
            f("awid"),
            f("range_offset"),
            f("range_size"),
            f("awaddr_31_28_value"),
        );
        let v = self.regs.encode(
            r,
            &[
                (&en, 1),
                (&id, awid),
                (&off, offset),
                (&sz, size),
                (&hi, awaddr_31_28),
            ],
        )?;
        self.regs.write(r, v)
    }

    /// Makes CPU writes through BAR0 visible to the GPU.
    pub fn flush_hdp(&self) -> PciResult<()> {
        self.gmc.flush_hdp(&self.regs)
    }

    /// Orderly teardown: queues off, clocks low, interrupts drained, GPU marked clean.
    pub fn fini(&mut self) -> PciResult<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        self.regs.phase("fini");
        if let Some(g) = &self.gc9 {
            // tinygrad's AMDev.fini order: SDMA, then the HQDs of every XCC, interrupts
            // drained, the session mark. The clocks stay at their boot soft minimum (A78).
            if self.sdma_queue.take().is_some() {
                sdma::v4::fini_ring(g, 0)?;
            }
            for x in std::mem::take(&mut self.gc9_queues) {
                mqd9::dequeue(g, x)?;
            }
            self.ih.drain(&self.regs, &self.vram)?;
            return g.end_session();
        }
        if self.gen() == AmGen::Gc12 {
            // SDMA first (its soft reset does not touch the CP), then the compute queue.
            sdma::fini(self)?;
            gfx::fini(self)?;
        } else {
            gfx::fini(self)?;
            sdma::fini(self)?;
        }
        self.smu.set_clocks(&self.regs, false, self.timeout_ms)?;
        self.ih.drain(&self.regs, &self.vram)?;
        self.ih.fini(&self.regs)?;
        self.regs.write(regs::SCRATCH_REG6, 0)?;
        Ok(())
    }
}

impl Drop for AmDevice {
    fn drop(&mut self) {
        let _ = self.fini();
    }
}
