//! The partial boot (tinygrad's `AMDev.__init__`): a GPU that this driver brought up and tore
//! down cleanly keeps its firmware (PSP, SMU, RLC autoload), its MM hub and its boot memory, so
//! the next session re-initialises only GFX (GC hub, MEC reset) and SDMA, and the IH that our
//! teardown stops.
//!
//! tinygrad re-derives its boot memory by running every block's `init_sw` again: allocations
//! from the 32 MiB boot region are deterministic, with the TMR reserved at its maximum size.
//! We allocate the TMR at the size the PSP asked for (LOAD_TOC), which only the full boot
//! learns, so the full boot also leaves a [`BootRecord`] in the last page of boot memory: the
//! TMR size and every boot allocation in order. A partial boot repeats the allocations with that
//! TMR size and goes on only if it lands exactly where the record says; anything else (no
//! record, another generation or VRAM size, another layout) is a full boot.
//!
//! tinygrad stamps SCRATCH_REG7 with its own version; we stamp ours ([`super::AM_VERSION`]), so
//! neither driver takes the other's boot memory for its own.

use le_reader::Reader;

use super::gmc::BOOT_RECORD;
use super::{AmGen, PriorBoot, AM_VERSION};
use crate::pci::PciResult;
use crate::platform::Mmio;

/// "WSAMBOOT", little-endian.
pub const MAGIC: u64 = u64::from_le_bytes(*b"WSAMBOOT");
/// Header words: magic, stamp, generation, VRAM size, MC base, TMR size, allocation count.
const HEADER: usize = 7 * 8;
/// Allocations that fit the record's page.
pub const MAX_ALLOCS: usize = (0x1000 - HEADER) / 16;

/// What the full boot leaves for the next session's partial boot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootRecord {
    pub gen: AmGen,
    pub vram_size: u64,
    pub mc_base: u64,
    /// The TMR size LOAD_TOC reported (0: none).
    pub tmr_size: u64,
    /// Boot-memory allocations (VRAM offset, size), in order.
    pub allocs: Vec<(u64, u64)>,
}

impl BootRecord {
    pub fn encode(&self) -> Vec<u8> {
        let n = self.allocs.len().min(MAX_ALLOCS);
        let mut w = vec![
            MAGIC,
            u64::from(AM_VERSION),
            self.gen as u64,
            self.vram_size,
            self.mc_base,
            self.tmr_size,
            n as u64,
        ];
        for (a, s) in &self.allocs[..n] {
            w.extend([*a, *s]);
        }
        w.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// Parses a record page; the error names what and where (VRAM offset) is wrong.
    pub fn parse(page: &[u8]) -> Result<BootRecord, String> {
        let r = Reader::with_base(page, BOOT_RECORD);
        let at = |i: usize, what: &'static str| {
            r.u64_at(8 * i, what)
                .map_err(|e| format!("boot record: {e}"))
        };
        let bad = |i: usize, what: &str, v: u64| {
            format!(
                "boot record at VRAM {:#x}: {what} {v:#x}",
                BOOT_RECORD + 8 * i as u64
            )
        };
        let magic = at(0, "magic")?;
        if magic != MAGIC {
            return Err(bad(0, "no record (magic)", magic));
        }
        let stamp = at(1, "stamp")?;
        if stamp != u64::from(AM_VERSION) {
            return Err(bad(1, "written by another driver version", stamp));
        }
        let gen = match at(2, "generation")? {
            0 => AmGen::Gc11,
            1 => AmGen::Gc12,
            2 => AmGen::Gc9,
            g => return Err(bad(2, "unknown generation", g)),
        };
        let n = at(6, "allocation count")?;
        if n as usize > MAX_ALLOCS {
            return Err(bad(6, "allocation count", n));
        }
        let mut allocs = Vec::with_capacity(n as usize);
        for i in 0..n as usize {
            allocs.push((
                at(7 + 2 * i, "allocation")?,
                at(8 + 2 * i, "allocation size")?,
            ));
        }
        Ok(BootRecord {
            gen,
            vram_size: at(3, "VRAM size")?,
            mc_base: at(4, "MC base")?,
            tmr_size: at(5, "TMR size")?,
            allocs,
        })
    }

    pub fn write(&self, vram: &dyn Mmio) -> PciResult<()> {
        Ok(vram.write_bytes(BOOT_RECORD, &self.encode())?)
    }

    /// The record in VRAM, or why there is none usable (an unreadable page is one).
    pub fn read(vram: &dyn Mmio) -> Result<BootRecord, String> {
        let mut page = vec![0u8; 0x1000];
        vram.read_bytes(BOOT_RECORD, &mut page)
            .map_err(|e| format!("boot record unreadable: {e}"))?;
        BootRecord::parse(&page)
    }
}

/// How this session brings the GPU up.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum BootKind {
    /// Every block, as on a GPU no driver of ours left running.
    #[default]
    Full,
    /// Every block after a mode-1 reset: the GPU was running (amdgpu, a crashed session, ...).
    FullAfterReset,
    /// GFX, SDMA and IH only, on the boot memory the previous clean session left.
    Partial,
}

/// Whether generation `g` has a partial boot (a family without one always boots fully).
pub fn partial_supported(g: AmGen) -> bool {
    // tinygrad's test (SCRATCH_REG7 is its version, REG6 clear, no GC fault) and its partial
    // boot (GFX and SDMA only) are the same for every family; GC 9's is `gc9::Gc9::boot`.
    match g {
        AmGen::Gc11 | AmGen::Gc12 | AmGen::Gc9 => true,
    }
}

/// The plan for this session: `Some(record)` for a partial boot, `None` for a full one. Only a
/// clean previous session of this driver with a record for this very GPU qualifies.
pub fn plan(
    g: AmGen,
    prior: PriorBoot,
    record: Option<Result<BootRecord, String>>,
    vram_size: u64,
    mc_base: u64,
) -> Option<BootRecord> {
    if prior != PriorBoot::Clean || !partial_supported(g) {
        return None;
    }
    let rec = record?.ok()?;
    // The TMR size is re-allocated as read: bounded as LOAD_TOC's answer is (psp::MAX_TMR).
    (rec.gen == g
        && rec.vram_size == vram_size
        && rec.mc_base == mc_base
        && rec.tmr_size <= super::psp::MAX_TMR)
        .then_some(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec() -> BootRecord {
        BootRecord {
            gen: AmGen::Gc12,
            vram_size: 1 << 30,
            mc_base: 0x80_0000_0000,
            tmr_size: 0x10_0000,
            allocs: vec![(0, 0x1000), (0x1000, 0x1000), (0x10_0000, 0x8_0000)],
        }
    }

    #[test]
    fn a_record_reads_back() {
        let mut page = rec().encode();
        page.resize(0x1000, 0);
        assert_eq!(BootRecord::parse(&page), Ok(rec()));
    }

    #[test]
    fn a_damaged_record_is_refused_by_offset() {
        let mut page = rec().encode();
        page.resize(0x1000, 0);
        page[0] ^= 1;
        let e = BootRecord::parse(&page).unwrap_err();
        assert!(
            e.contains("magic") && e.contains(&format!("{BOOT_RECORD:#x}")),
            "{e}"
        );
        let mut page = rec().encode();
        page.resize(0x1000, 0);
        page[48..56].copy_from_slice(&10_000u64.to_le_bytes());
        let e = BootRecord::parse(&page).unwrap_err();
        assert!(e.contains("allocation count"), "{e}");
        assert!(BootRecord::parse(&page[..20]).is_err());
    }

    #[test]
    fn only_a_clean_session_with_a_matching_record_boots_partially() {
        let ok = || Some(Ok(rec()));
        let (v, mc) = (1 << 30, 0x80_0000_0000);
        assert_eq!(
            plan(AmGen::Gc12, PriorBoot::Clean, ok(), v, mc),
            Some(rec())
        );
        assert_eq!(plan(AmGen::Gc12, PriorBoot::Dirty, ok(), v, mc), None);
        assert_eq!(plan(AmGen::Gc12, PriorBoot::Foreign, ok(), v, mc), None);
        assert_eq!(plan(AmGen::Gc11, PriorBoot::Clean, ok(), v, mc), None);
        assert_eq!(plan(AmGen::Gc9, PriorBoot::Clean, ok(), v, mc), None);
        let gc9 = BootRecord {
            gen: AmGen::Gc9,
            ..rec()
        };
        assert_eq!(
            plan(AmGen::Gc9, PriorBoot::Clean, Some(Ok(gc9.clone())), v, mc),
            Some(gc9)
        );
        assert_eq!(plan(AmGen::Gc12, PriorBoot::Clean, ok(), v / 2, mc), None);
        assert_eq!(plan(AmGen::Gc12, PriorBoot::Clean, None, v, mc), None);
        let gone = Some(Err("no record".to_string()));
        assert_eq!(plan(AmGen::Gc12, PriorBoot::Clean, gone, v, mc), None);
    }
}
