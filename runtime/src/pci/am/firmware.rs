//! linux-firmware `amdgpu/` files (pci-am-interface.md §2): the common header and the per-kind
//! headers that locate the blobs PSP loads. Headers are little-endian structs from the kernel's
//! `amdgpu_ucode.h`; every bound is checked and errors name the file and offset.

use std::path::Path;

use crate::pci::{PciError, PciResult};

/// PSP bootloader commands (C2PMSG_35) for the SOS components, in load order.
pub const BL_KDB: u32 = 0x80000;
pub const BL_SPL: u32 = 0x1000_0000;
pub const BL_SYS_DRV: u32 = 0x10000;
pub const BL_SOC_DRV: u32 = 0xB0000;
pub const BL_INTF_DRV: u32 = 0xD0000;
pub const BL_DBG_DRV: u32 = 0xC0000;
pub const BL_RAS_DRV: u32 = 0xE0000;
pub const BL_SOS: u32 = 0x20000;

/// `enum psp_fw_type` of the v2 PSP header's descriptors.
pub mod psp_fw {
    pub const SOS: u32 = 1;
    pub const SYS_DRV: u32 = 2;
    pub const KDB: u32 = 3;
    pub const TOC: u32 = 4;
    pub const SPL: u32 = 5;
    pub const SOC_DRV: u32 = 7;
    pub const INTF_DRV: u32 = 8;
    pub const DBG_DRV: u32 = 9;
    pub const RAS_DRV: u32 = 10;
    /// The RLC register list GC 9 loads as GFX_FW_TYPE_REG_LIST (no RLC autoload there).
    pub const RL: u32 = 6;
}

/// `GFX_FW_TYPE_*` ids of LOAD_IP_FW.
pub mod fw_type {
    /// GC 9 (CP_MEC v1 image and its jump table, SDMA0..3 from one image, RLC lists).
    pub const CP_MEC: u32 = 4;
    pub const CP_MEC_ME1: u32 = 5;
    pub const SDMA0: u32 = 9;
    pub const SDMA1: u32 = 10;
    pub const RLC_RESTORE_LIST_GPM_MEM: u32 = 20;
    pub const RLC_RESTORE_LIST_SRM_MEM: u32 = 21;
    pub const RLC_RESTORE_LIST_SRM_CNTL: u32 = 22;
    pub const SDMA2: u32 = 52;
    pub const SDMA3: u32 = 53;
    pub const REG_LIST: u32 = 67;
    pub const P2S_TABLE: u32 = 129;
    pub const RLC_V: u32 = 7;
    pub const RLC_G: u32 = 8;
    pub const SMU: u32 = 18;
    pub const RLC_P: u32 = 25;
    pub const RLC_IRAM: u32 = 26;
    pub const RLC_DRAM_BOOT: u32 = 48;
    pub const IMU_I: u32 = 68;
    pub const IMU_D: u32 = 69;
    pub const SDMA_TH0: u32 = 71;
    pub const SDMA_TH1: u32 = 72;
    pub const RS64_PFP: u32 = 87;
    pub const RS64_ME: u32 = 88;
    pub const RS64_MEC: u32 = 89;
    pub const RS64_PFP_P0_STACK: u32 = 90;
    pub const RS64_PFP_P1_STACK: u32 = 91;
    pub const RS64_ME_P0_STACK: u32 = 92;
    pub const RS64_ME_P1_STACK: u32 = 93;
    pub const RS64_MEC_P0_STACK: u32 = 94;
}

/// A blob for the PSP bootloader (SOS components).
#[derive(Debug, Clone)]
pub struct SosComponent {
    pub name: &'static str,
    pub bl_cmd: u32,
    pub data: Vec<u8>,
}

/// A blob for LOAD_IP_FW.
#[derive(Debug, Clone)]
pub struct IpFw {
    pub name: String,
    pub fw_type: u32,
    pub data: Vec<u8>,
}

#[derive(Debug, Clone)]
pub struct Firmware {
    pub sos: Vec<SosComponent>,
    pub toc: Vec<u8>,
    /// Loaded before the TMR; `None` where the PSP starts the SMU itself (MP1 13.0.12) or the
    /// SMU image goes in as a P2S table among `ip` (GC 9).
    pub smu: Option<IpFw>,
    /// GC 9: the sOS's RL part, loaded as REG_LIST last instead of RLC autoload.
    pub reg_list: Option<Vec<u8>>,
    /// Everything after SMU, in load order (RLC_G last: it starts the autoload).
    pub ip: Vec<IpFw>,
    /// MEC RS64 program start (byte address) from the gfx v2 header.
    pub mec_start: u64,
    /// GC 12: PFP and ME RS64 program starts (their own gfx v2 headers); None on GC 11.
    pub pfp_start: Option<u64>,
    pub me_start: Option<u64>,
}

/// File names for an IP-version set.
pub struct FirmwareNames {
    pub sos: String,
    pub smu: String,
    pub sdma: String,
    pub mec: String,
    pub imu: String,
    pub rlc: String,
    /// GC 12 loads the RS64 PFP and ME through the PSP as well (GC 11's come with RLC autoload).
    pub pfp: Option<String>,
    pub me: Option<String>,
}

fn v(x: (u32, u32, u32)) -> String {
    format!("{}_{}_{}", x.0, x.1, x.2)
}

impl FirmwareNames {
    pub fn new(
        gc: (u32, u32, u32),
        mp0: (u32, u32, u32),
        mp1: (u32, u32, u32),
        sdma: (u32, u32, u32),
    ) -> Self {
        FirmwareNames {
            sos: format!("psp_{}_sos.bin", v(mp0)),
            smu: format!("smu_{}.bin", v(mp1)),
            sdma: format!("sdma_{}.bin", v(sdma)),
            mec: format!("gc_{}_mec.bin", v(gc)),
            imu: format!("gc_{}_imu.bin", v(gc)),
            rlc: format!("gc_{}_rlc.bin", v(gc)),
            pfp: (gc.0 >= 12).then(|| format!("gc_{}_pfp.bin", v(gc))),
            me: (gc.0 >= 12).then(|| format!("gc_{}_me.bin", v(gc))),
        }
    }
}

/// A firmware file with checked little-endian access.
pub struct FwFile<'a> {
    pub name: &'a str,
    pub b: &'a [u8],
}

impl FwFile<'_> {
    fn err(&self, msg: impl Into<String>) -> PciError {
        PciError::Firmware {
            file: self.name.to_string(),
            msg: msg.into(),
        }
    }
    pub fn u32(&self, at: usize) -> PciResult<u32> {
        le_reader::Reader::new(self.b)
            .u32_at(at, "u32")
            .map_err(|_| self.err(format!("truncated: no u32 at offset {at:#x}")))
    }
    pub fn u16(&self, at: usize) -> PciResult<u16> {
        le_reader::Reader::new(self.b)
            .u16_at(at, "u16")
            .map_err(|_| self.err(format!("truncated: no u16 at offset {at:#x}")))
    }
    pub fn slice(&self, off: u32, len: u32, what: &str) -> PciResult<Vec<u8>> {
        let (o, l) = (off as usize, len as usize);
        self.b
            .get(o..o.saturating_add(l))
            .map(<[u8]>::to_vec)
            .ok_or_else(|| {
                self.err(format!(
                    "{what}: {len:#x} bytes at offset {off:#x} run past the end ({:#x} bytes)",
                    self.b.len()
                ))
            })
    }
    /// Checks the common header; returns (header major, minor, ucode size, ucode array offset).
    pub fn common(&self) -> PciResult<(u16, u16, u32, u32)> {
        let size = self.u32(0)?;
        if size as usize != self.b.len() {
            return Err(self.err(format!(
                "header size_bytes {size:#x} at offset 0 does not match the file size {:#x}",
                self.b.len()
            )));
        }
        let hsize = self.u32(4)?;
        if hsize < 32 || hsize as usize > self.b.len() {
            return Err(self.err(format!(
                "header_size_bytes {hsize:#x} at offset 4 is invalid"
            )));
        }
        let (maj, min) = (self.u16(8)?, self.u16(10)?);
        let usize_ = self.u32(20)?;
        let uoff = self.u32(24)?;
        self.slice(uoff, usize_, "ucode array")?;
        Ok((maj, min, usize_, uoff))
    }
}

fn read(dir: &Path, name: &str) -> PciResult<Vec<u8>> {
    let p = dir.join(name);
    std::fs::read(&p).map_err(|e| PciError::Firmware {
        file: p.display().to_string(),
        msg: format!(
            "{e} (install linux-firmware's amdgpu/ files, e.g. Debian's firmware-amd-graphics from the non-free-firmware component, or point WAVESCOPE_AMDGPU_FIRMWARE at a directory holding them)"
        ),
    })
}

impl Firmware {
    pub fn load(dir: &Path, names: &FirmwareNames) -> PciResult<Firmware> {
        Self::parse_with(names, &mut |name| read(dir, name))
    }

    /// Parses the firmware set, reading each file through `read` (file name -> contents), so
    /// tests and fuzzers can hand it bytes directly.
    pub fn parse_with(
        names: &FirmwareNames,
        read: &mut dyn FnMut(&str) -> PciResult<Vec<u8>>,
    ) -> PciResult<Firmware> {
        let mut ip = Vec::new();
        let (sos, toc, _) = parse_sos(&names.sos, read)?;

        // SMU: smc v1 header, ucode at the array offset.
        let smub = read(&names.smu)?;
        let f = FwFile {
            name: &names.smu,
            b: &smub,
        };
        let (_, _, usz, uoff) = f.common()?;
        let smu = Some(IpFw {
            name: names.smu.clone(),
            fw_type: fw_type::SMU,
            data: f.slice(uoff, usz, "SMU ucode")?,
        });

        // IMU: iram then dram after the array offset.
        let imub = read(&names.imu)?;
        let f = FwFile {
            name: &names.imu,
            b: &imub,
        };
        let (_, _, _, uoff) = f.common()?;
        let (isz, dsz) = (f.u32(32)?, f.u32(40)?);
        ip.push(IpFw {
            name: format!("{} IRAM", names.imu),
            fw_type: fw_type::IMU_I,
            data: f.slice(uoff, isz, "IMU IRAM")?,
        });
        ip.push(IpFw {
            name: format!("{} DRAM", names.imu),
            fw_type: fw_type::IMU_D,
            data: f.slice(uoff.saturating_add(isz), dsz, "IMU DRAM")?,
        });

        // SDMA v2 (SDMA 6): ctx (TH0) at the array offset, ctl (TH1) at ctl_ucode_offset.
        // SDMA v3 (SDMA 7, RS64 MCU): one image, loaded as TH0; its own ucode_size_bytes at 40
        // (amdgpu_ucode.h sdma_firmware_header_v3_0; the common size is the whole file).
        let sdmab = read(&names.sdma)?;
        let f = FwFile {
            name: &names.sdma,
            b: &sdmab,
        };
        let (maj, _, _, uoff) = f.common()?;
        match maj {
            2 => {
                let ctx_sz = f.u32(36)?;
                let (ctl_off, ctl_sz) = (f.u32(48)?, f.u32(52)?);
                ip.push(IpFw {
                    name: format!("{} TH1", names.sdma),
                    fw_type: fw_type::SDMA_TH1,
                    data: f.slice(ctl_off, ctl_sz, "SDMA ctl ucode")?,
                });
                ip.push(IpFw {
                    name: format!("{} TH0", names.sdma),
                    fw_type: fw_type::SDMA_TH0,
                    data: f.slice(uoff, ctx_sz, "SDMA ctx ucode")?,
                });
            }
            3 => ip.push(IpFw {
                name: format!("{} TH0", names.sdma),
                fw_type: fw_type::SDMA_TH0,
                data: f.slice(uoff, f.u32(40)?, "SDMA v3 ucode")?,
            }),
            _ => {
                return Err(f.err(format!(
                    "SDMA header version {maj} at offset 8 (expected 2 or 3)"
                )))
            }
        }

        // GC 12 PFP and ME: gfx v2 headers like the MEC's, code + the pipe-0 stack only
        // (gfx_v12_0_init_microcode loads RS64_PFP/ME and their P0_STACK, no P1 as on GC 11).
        let mut rs64 = |name: &Option<String>,
                        what: &str,
                        code: u32,
                        stacks: [u32; 1]|
         -> PciResult<Option<u64>> {
            let Some(name) = name else {
                return Ok(None);
            };
            let b = read(name)?;
            let f = FwFile { name, b: &b };
            let (maj, _, _, _) = f.common()?;
            if maj != 2 {
                return Err(f.err(format!("gfx header version {maj} (RS64 {what} needs v2)")));
            }
            let (usz, uoff, dsz, doff) = (f.u32(36)?, f.u32(40)?, f.u32(44)?, f.u32(48)?);
            ip.push(IpFw {
                name: format!("{name} code"),
                fw_type: code,
                data: f.slice(uoff, usz, &format!("{what} code"))?,
            });
            for (p, t) in stacks.into_iter().enumerate() {
                ip.push(IpFw {
                    name: format!("{name} stack P{p}"),
                    fw_type: t,
                    data: f.slice(doff, dsz, &format!("{what} stack"))?,
                });
            }
            Ok(Some(u64::from(f.u32(52)?) | u64::from(f.u32(56)?) << 32))
        };
        let pfp_start = rs64(
            &names.pfp,
            "PFP",
            fw_type::RS64_PFP,
            [fw_type::RS64_PFP_P0_STACK],
        )?;
        let me_start = rs64(
            &names.me,
            "ME",
            fw_type::RS64_ME,
            [fw_type::RS64_ME_P0_STACK],
        )?;

        // MEC: gfx v2 header, code + stack data, program start address.
        let mecb = read(&names.mec)?;
        let f = FwFile {
            name: &names.mec,
            b: &mecb,
        };
        let (maj, _, _, _) = f.common()?;
        if maj != 2 {
            return Err(f.err(format!("gfx header version {maj} (RS64 MEC needs v2)")));
        }
        let (usz, uoff, dsz, doff) = (f.u32(36)?, f.u32(40)?, f.u32(44)?, f.u32(48)?);
        let mec_start = u64::from(f.u32(52)?) | u64::from(f.u32(56)?) << 32;
        ip.push(IpFw {
            name: format!("{} code", names.mec),
            fw_type: fw_type::RS64_MEC,
            data: f.slice(uoff, usz, "MEC code")?,
        });
        ip.push(IpFw {
            name: format!("{} stack", names.mec),
            fw_type: fw_type::RS64_MEC_P0_STACK,
            data: f.slice(doff, dsz, "MEC stack")?,
        });

        rlc(&names.rlc, RlcSet::Gc11, read, &mut ip)?;
        Ok(Firmware {
            sos,
            toc,
            smu,
            reg_list: None,
            ip,
            mec_start,
            pfp_start,
            me_start,
        })
    }

    /// The GC 9.4.3/9.5.0 set in tinygrad's AMFirmware order: the SMU's P2S table (unless `smu`
    /// is false: MP1 13.0.12 has none to load), SDMA v1 as SDMA0..3, MEC v1 code and jump table,
    /// the RLC v2.1 restore lists and RLC_G; the sOS's RL part as the REG_LIST.
    pub fn parse_gc9_with(
        names: &FirmwareNames,
        smu: bool,
        read: &mut dyn FnMut(&str) -> PciResult<Vec<u8>>,
    ) -> PciResult<Firmware> {
        let (sos, toc, mut parts) = parse_sos(&names.sos, read)?;
        let reg_list = parts
            .remove(&psp_fw::RL)
            .ok_or_else(|| PciError::Firmware {
                file: names.sos.clone(),
                msg: "no RL (register list) component among the descriptors (needed on GC 9)"
                    .into(),
            })?;
        let mut ip = Vec::new();
        if smu {
            let b = read(&names.smu)?;
            let f = FwFile {
                name: &names.smu,
                b: &b,
            };
            let (maj, min, _, _) = f.common()?;
            if (maj, min) != (2, 1) {
                return Err(f.err(format!(
                    "SMC header version {maj}.{min} (GC 9 reads the v2.1 P2S table list)"
                )));
            }
            if let Some(p2s) = p2s_table(&f)? {
                ip.push(p2s);
            }
        }
        // SDMA v1: one image for every engine.
        let b = read(&names.sdma)?;
        let f = FwFile {
            name: &names.sdma,
            b: &b,
        };
        let (maj, _, usz, uoff) = f.common()?;
        if maj != 1 {
            return Err(f.err(format!(
                "SDMA header version {maj} at offset 8 (GC 9 needs 1)"
            )));
        }
        let img = f.slice(uoff, usz, "SDMA ucode")?;
        for t in [
            fw_type::SDMA0,
            fw_type::SDMA1,
            fw_type::SDMA2,
            fw_type::SDMA3,
        ] {
            ip.push(IpFw {
                name: format!("{} (type {t})", names.sdma),
                fw_type: t,
                data: img.clone(),
            });
        }
        // MEC gfx v1: code without the jump table, then the table (offset/size in dwords).
        let b = read(&names.mec)?;
        let f = FwFile {
            name: &names.mec,
            b: &b,
        };
        let (maj, _, usz, uoff) = f.common()?;
        if maj != 1 {
            return Err(f.err(format!(
                "gfx header version {maj} at offset 8 (GC 9 MEC needs 1)"
            )));
        }
        let (jt_off, jt_size) = (f.u32(36)?.saturating_mul(4), f.u32(40)?.saturating_mul(4));
        let code = usz.checked_sub(jt_size).ok_or_else(|| {
            f.err(format!(
                "jump table ({jt_size:#x} bytes, at offset 40) larger than the ucode ({usz:#x})"
            ))
        })?;
        ip.push(IpFw {
            name: format!("{} code", names.mec),
            fw_type: fw_type::CP_MEC,
            data: f.slice(uoff, code, "MEC code")?,
        });
        ip.push(IpFw {
            name: format!("{} jump table", names.mec),
            fw_type: fw_type::CP_MEC_ME1,
            data: f.slice(uoff.saturating_add(jt_off), jt_size, "MEC jump table")?,
        });
        rlc(&names.rlc, RlcSet::Gc9, read, &mut ip)?;
        Ok(Firmware {
            sos,
            toc,
            smu: None,
            reg_list: Some(reg_list),
            ip,
            mec_start: 0,
            pfp_start: None,
            me_start: None,
        })
    }
}

/// Which optional RLC images a firmware set loads beside IRAM/DRAM (v2.2+) and G.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RlcSet {
    /// GC 11/12: the P and V images of a v2.3 header (amdgpu_gfx_rlc_init_microcode: v2.4
    /// carries tap delays instead).
    Gc11,
    /// GC 9.4.3/9.5.0: the three save/restore lists of a v2.1 header.
    Gc9,
}

/// The RLC v2.x images in load order: restore lists or P/V as `set` says, IRAM/DRAM on v2.2+
/// (rlc_firmware_header_v2_2: size/offset pairs at 156 and 164), G (the main ucode) last.
fn rlc(
    name: &str,
    set: RlcSet,
    read: &mut dyn FnMut(&str) -> PciResult<Vec<u8>>,
    ip: &mut Vec<IpFw>,
) -> PciResult<()> {
    let b = read(name)?;
    let f = FwFile { name, b: &b };
    let (maj, min, usz, uoff) = f.common()?;
    if maj != 2 {
        return Err(f.err(format!("RLC header version {maj} (expected 2)")));
    }
    // (type, offset of its size; its offset follows, what) per optional image.
    let mut parts = Vec::new();
    if set == RlcSet::Gc9 && min == 1 {
        parts.extend([
            (fw_type::RLC_RESTORE_LIST_SRM_CNTL, 116, "SRM list control"),
            (fw_type::RLC_RESTORE_LIST_GPM_MEM, 132, "GPM list"),
            (fw_type::RLC_RESTORE_LIST_SRM_MEM, 148, "SRM list"),
        ]);
    }
    if min >= 2 {
        parts.extend([
            (fw_type::RLC_IRAM, 156, "IRAM"),
            (fw_type::RLC_DRAM_BOOT, 164, "DRAM"),
        ]);
    }
    if set == RlcSet::Gc11 && min == 3 {
        parts.extend([(fw_type::RLC_P, 180, "P"), (fw_type::RLC_V, 196, "V")]);
    }
    for (t, size_at, what) in parts {
        ip.push(IpFw {
            name: format!("{name} {what}"),
            fw_type: t,
            data: f.slice(f.u32(size_at + 4)?, f.u32(size_at)?, &format!("RLC {what}"))?,
        });
    }
    ip.push(IpFw {
        name: format!("{name} G"),
        fw_type: fw_type::RLC_G,
        data: f.slice(uoff, usz, "RLC G ucode")?,
    });
    Ok(())
}

/// Most P2S table entries an SMC v2.1 file may list (one per table id). amdgpu sets no bound;
/// a larger count is taken for a corrupt header and refused rather than cut short.
const P2S_MAX_ENTRIES: u32 = 64;

/// The dGPU P2S table of an SMC v2.1 file (smc_firmware_header_v2_1: pptable_count at 36,
/// pptable_entry_offset at 40; 12-byte smc_soft_pptable_entry {id, offset, size}). Like
/// amdgpu's smu_v13_0_6_init_microcode, the first entry with __P2S_TABLE_ID_X wins; `None`
/// when no entry has it.
fn p2s_table(f: &FwFile) -> PciResult<Option<IpFw>> {
    let (count, off) = (f.u32(36)?, f.u32(40)?);
    if count > P2S_MAX_ENTRIES {
        return Err(f.err(format!(
            "pptable_count {count} at offset 36 is more than {P2S_MAX_ENTRIES} P2S table entries"
        )));
    }
    for i in 0..count as usize {
        let at = off as usize + 12 * i;
        // __P2S_TABLE_ID_X ("XS2P").
        if f.u32(at)? == 0x5032_5358 {
            return Ok(Some(IpFw {
                name: format!("{} P2S", f.name),
                fw_type: fw_type::P2S_TABLE,
                data: f.slice(f.u32(at + 4)?, f.u32(at + 8)?, "P2S table")?,
            }));
        }
    }
    Ok(None)
}

/// The sOS file: its bootloader components in load order, the TOC, and the other parts by PSP
/// firmware type. Header v2.0 has the descriptors at 36, v2.1 at 40 (psp_aux_fw_bin_index first).
#[allow(clippy::type_complexity)]
fn parse_sos(
    name: &str,
    read: &mut dyn FnMut(&str) -> PciResult<Vec<u8>>,
) -> PciResult<(
    Vec<SosComponent>,
    Vec<u8>,
    std::collections::HashMap<u32, Vec<u8>>,
)> {
    // Descriptors {fw_type, fw_version, offset, size}.
    let sosb = read(name)?;
    let f = FwFile { name, b: &sosb };
    let (maj, min, _, uoff) = f.common()?;
    let first = if min >= 1 { 40 } else { 36 };
    if maj != 2 {
        return Err(f.err(format!(
            "PSP header version {maj} (only v2 descriptors are supported)"
        )));
    }
    let count = f.u32(32)?;
    if count > 32 {
        return Err(f.err(format!("{count} descriptors at offset 0x20")));
    }
    let mut parts = std::collections::HashMap::new();
    for i in 0..count as usize {
        let at = first + 16 * i;
        let t = f.u32(at)?;
        let off = f.u32(at + 8)?;
        let sz = f.u32(at + 12)?;
        let data = f.slice(uoff.saturating_add(off), sz, &format!("descriptor {i}"))?;
        parts.insert(t, data);
    }
    let order: [(&'static str, u32, u32); 8] = [
        ("KDB", psp_fw::KDB, BL_KDB),
        ("SPL", psp_fw::SPL, BL_SPL),
        ("SYS_DRV", psp_fw::SYS_DRV, BL_SYS_DRV),
        ("SOC_DRV", psp_fw::SOC_DRV, BL_SOC_DRV),
        ("INTF_DRV", psp_fw::INTF_DRV, BL_INTF_DRV),
        ("DBG_DRV", psp_fw::DBG_DRV, BL_DBG_DRV),
        ("RAS_DRV", psp_fw::RAS_DRV, BL_RAS_DRV),
        ("SOS", psp_fw::SOS, BL_SOS),
    ];
    let mut sos = Vec::new();
    for (name, t, cmd) in order {
        if let Some(d) = parts.remove(&t) {
            sos.push(SosComponent {
                name,
                bl_cmd: cmd,
                data: d,
            });
        }
    }
    if !sos.iter().any(|c| c.bl_cmd == BL_SOS) {
        return Err(f.err("no SOS component among the descriptors"));
    }
    let toc = parts
        .remove(&psp_fw::TOC)
        .ok_or_else(|| f.err("no TOC component among the descriptors"))?;

    Ok((sos, toc, parts))
}
