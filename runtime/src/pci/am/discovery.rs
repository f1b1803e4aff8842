//! IP discovery (pci-am-interface.md §1.2): the binary at VRAM end − 64 KiB that names every IP
//! block, its version and its register segment bases, plus the GC info table that gives the
//! shader-array shape.

use std::collections::BTreeMap;

use super::AmIp;
use crate::pci::{PciError, PciResult};
use crate::platform::DeviceProps;

pub const BINARY_SIGNATURE: u32 = 0x2821_1407;
pub const IPDS_SIGNATURE: u32 = 0x5344_5049;
/// Where the table sits (from VRAM end) and how much of it the driver reads.
pub const TABLE_FROM_END: u64 = 64 << 10;
pub const TABLE_SIZE: usize = 10 << 10;
/// Table indices of the binary header's table list.
pub const TABLE_IP_DISCOVERY: usize = 0;
pub const TABLE_GC: usize = 1;

/// One IP instance: version and register segment bases (dwords).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpInfo {
    pub hw_id: u16,
    pub instance: u8,
    pub version: (u32, u32, u32),
    pub bases: Vec<u32>,
}

/// The GC info table fields the runtime uses (v1.x layout).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcInfo {
    pub num_se: u32,
    pub num_wgp0_per_sa: u32,
    pub num_wgp1_per_sa: u32,
    pub wave_size: u32,
    pub max_waves_per_simd: u32,
    pub max_scratch_slots_per_cu: u32,
    pub lds_size: u32,
    pub num_sa_per_se: u32,
}

#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// Keyed by (hw_id, instance).
    pub ips: BTreeMap<(u16, u8), IpInfo>,
    pub gc: GcInfo,
}

/// The kernel's hardware ids of the blocks the driver uses.
pub fn hw_id(ip: AmIp) -> u16 {
    match ip {
        AmIp::Gc => 11,
        AmIp::Sdma0 => 42,
        AmIp::Mmhub => 34,
        AmIp::Nbio => 108,
        AmIp::Mp0 => 255,
        AmIp::Mp1 => 1,
        AmIp::Hdp => 41,
        AmIp::Osssys => 40,
    }
}

/// Byte sum used by the discovery checksums.
pub fn checksum(b: &[u8]) -> u16 {
    b.iter().fold(0u16, |s, &x| s.wrapping_add(u16::from(x)))
}

/// The bounded reader with discovery errors (offsets in VRAM).
struct Reader<'a>(le_reader::Reader<'a>);

impl Reader<'_> {
    fn err(&self, at: usize, msg: impl Into<String>) -> PciError {
        PciError::Discovery {
            offset: self.0.base() + at as u64,
            msg: msg.into(),
        }
    }
    fn short(&self, e: le_reader::Error) -> PciError {
        PciError::Discovery {
            offset: e.offset,
            msg: format!("truncated ({} past the table)", e.what),
        }
    }
    fn u8(&self, at: usize) -> PciResult<u8> {
        self.0.u8_at(at, "u8").map_err(|e| self.short(e))
    }
    fn u16(&self, at: usize) -> PciResult<u16> {
        self.0.u16_at(at, "u16").map_err(|e| self.short(e))
    }
    fn u32(&self, at: usize) -> PciResult<u32> {
        self.0.u32_at(at, "u32").map_err(|e| self.short(e))
    }
}

impl Discovery {
    /// Parses the table read from VRAM offset `base` (for error messages).
    pub fn parse(b: &[u8], base: u64) -> PciResult<Discovery> {
        let r = Reader(le_reader::Reader::with_base(b, base));
        let sig = r.u32(0)?;
        if sig != BINARY_SIGNATURE {
            return Err(r.err(
                0,
                format!("binary signature {sig:#x}, expected {BINARY_SIGNATURE:#x} (is this an AMD GPU with a discovery table, and is BAR0 mapped?)"),
            ));
        }
        let sum = r.u16(8)?;
        let size = usize::from(r.u16(10)?);
        let body = b
            .get(10..size.max(10))
            .ok_or_else(|| r.err(10, format!("binary size {size} beyond the table")))?;
        if checksum(body) != sum {
            return Err(r.err(
                8,
                format!(
                    "binary checksum {sum:#x} does not match {:#x}",
                    checksum(body)
                ),
            ));
        }
        let table = |i: usize| -> PciResult<(usize, u16, usize)> {
            let at = 12 + i * 8;
            Ok((
                usize::from(r.u16(at)?),
                r.u16(at + 2)?,
                usize::from(r.u16(at + 4)?),
            ))
        };
        let (ipo, ipsum, _) = table(TABLE_IP_DISCOVERY)?;
        let isig = r.u32(ipo)?;
        if isig != IPDS_SIGNATURE {
            return Err(r.err(
                ipo,
                format!("IP discovery signature {isig:#x}, expected {IPDS_SIGNATURE:#x}"),
            ));
        }
        let ipsize = usize::from(r.u16(ipo + 6)?);
        let ipbytes = b
            .get(ipo..ipo + ipsize)
            .ok_or_else(|| r.err(ipo + 6, format!("IP table size {ipsize} beyond the table")))?;
        if checksum(ipbytes) != ipsum {
            return Err(r.err(ipo, "IP discovery table checksum mismatch"));
        }
        let num_dies = r.u16(ipo + 12)?;
        if num_dies == 0 || num_dies > 16 {
            return Err(r.err(ipo + 12, format!("{num_dies} dies")));
        }
        let base64 = r.u8(ipo + 78)? & 1 != 0;
        let mut ips = BTreeMap::new();
        for d in 0..usize::from(num_dies) {
            let die_off = usize::from(r.u16(ipo + 14 + d * 4 + 2)?);
            let num_ips = r.u16(die_off + 2)?;
            let mut at = die_off + 4;
            for _ in 0..num_ips {
                let hw = r.u16(at)?;
                let inst = r.u8(at + 2)?;
                let nb = r.u8(at + 3)?;
                let ver = (
                    u32::from(r.u8(at + 4)?),
                    u32::from(r.u8(at + 5)?),
                    u32::from(r.u8(at + 6)?),
                );
                at += 8;
                let mut bases = Vec::new();
                for _ in 0..nb {
                    // 64-bit bases keep the low dword (the register space is below 4 G dwords).
                    bases.push(r.u32(at)?);
                    at += if base64 { 8 } else { 4 };
                }
                // Every die: MI300/MI350 list their XCCs, hubs and SDMA engines on the AIDs
                // (instance numbers are unique across dies); the first listing of one wins.
                ips.entry((hw, inst)).or_insert(IpInfo {
                    hw_id: hw,
                    instance: inst,
                    version: ver,
                    bases,
                });
            }
        }
        let (gco, _, _) = table(TABLE_GC)?;
        let f = |i: usize| r.u32(gco + 12 + 4 * i);
        let gc = GcInfo {
            num_se: f(0)?,
            num_wgp0_per_sa: f(1)?,
            num_wgp1_per_sa: f(2)?,
            wave_size: f(11)?,
            max_waves_per_simd: f(12)?,
            max_scratch_slots_per_cu: f(13)?,
            lds_size: f(14)?,
            num_sa_per_se: f(16)?,
        };
        if gc.num_se == 0 || gc.num_sa_per_se == 0 {
            return Err(r.err(gco, "GC info reports no shader engines"));
        }
        Ok(Discovery { ips, gc })
    }

    /// Every discovered instance of `ip`, by instance number (XCCs of GC, MM hubs per AID).
    pub fn instances(&self, ip: AmIp) -> Vec<&IpInfo> {
        let hw = hw_id(ip);
        self.ips
            .range((hw, 0)..=(hw, u8::MAX))
            .map(|(_, i)| i)
            .collect()
    }

    pub fn ip(&self, ip: AmIp) -> PciResult<&IpInfo> {
        self.ips
            .get(&(hw_id(ip), 0))
            .ok_or_else(|| PciError::Discovery {
                offset: 0,
                msg: format!("no {ip:?} block (hw id {}) in the table", hw_id(ip)),
            })
    }

    /// Topology-style properties (runtime-architecture.md §1.6: PCI props come from GC info).
    pub fn props(&self) -> PciResult<DeviceProps> {
        let (maj, min, rev) = self.ip(AmIp::Gc)?.version;
        let g = &self.gc;
        // Counts from the table; absurd ones are an error, not an overflow.
        let bad = |what: &str, v: u32| PciError::Discovery {
            offset: 0,
            msg: format!("GC info reports {v} {what}"),
        };
        if g.num_se > 64 || g.num_sa_per_se > 64 {
            return Err(bad(
                "shader engines or arrays",
                g.num_se.max(g.num_sa_per_se),
            ));
        }
        let array_count = g.num_sa_per_se * g.num_se;
        let wgp = g.num_wgp0_per_sa.saturating_add(g.num_wgp1_per_sa);
        if wgp > 64 {
            return Err(bad("WGPs per array", wgp));
        }
        // GC 9.4/9.5 (MI300/MI350): the GC info describes one XCC (amdgpu reads it per XCC);
        // the device is every XCC discovered, with 4 SIMDs per CU (CDNA), as KFD's topology.
        let (xccs, simd_per_cu) = if maj == 9 {
            (self.instances(AmIp::Gc).len().clamp(1, 8) as u32, 4)
        } else {
            (1, 2)
        };
        let array_count = array_count * xccs;
        Ok(DeviceProps {
            gfx_target_version: maj * 10000 + min * 100 + rev,
            simd_count: simd_per_cu * 2 * array_count * wgp,
            simd_per_cu,
            max_waves_per_simd: g.max_waves_per_simd,
            array_count,
            simd_arrays_per_engine: g.num_sa_per_se,
            cu_per_simd_array: 2 * wgp,
            lds_size_in_kb: g.lds_size,
            max_slots_scratch_cu: g.max_scratch_slots_per_cu,
            num_xcc: xccs,
            ..Default::default()
        })
    }
}
