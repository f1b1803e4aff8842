//! The GC 9 driver (`runtime::pci::am::gc9`) on the emulated MI350 for the SDMA 4.4 and
//! partial-boot tests: a session opened as `AmDevice::boot` opens this family before its queues,
//! BAR5 writes recorded on demand, the test's own gfx9 page tables, and a copy round trip.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use emu::pci::{EmuPciConfig, EmuPciGpu};
use emu::EmuArch;
use runtime::pci::am::discovery::{Discovery, TABLE_FROM_END, TABLE_SIZE};
use runtime::pci::am::gc9::{self, Gc9};
use runtime::pci::am::gmc::pte;
use runtime::pci::am::sdma::v4;
use runtime::pci::am::{check_versions, RegIo, RCC_CONFIG_MEMSIZE};
use runtime::pci::{PciDevice, PciResult, SysMem, BAR_MMIO, BAR_VRAM};
use runtime::platform::{Mmio, MmioError};
use runtime::queue::CopyCmds;

/// BAR5 of the emulated GPU with every register write recorded while `on`.
pub struct Rec {
    pub inner: Arc<dyn Mmio>,
    pub on: Mutex<bool>,
    pub writes: Mutex<Vec<(u32, u32)>>,
}

impl Mmio for Rec {
    fn addr(&self) -> u64 {
        self.inner.addr()
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn read_bytes(&self, offset: u64, out: &mut [u8]) -> Result<(), MmioError> {
        self.inner.read_bytes(offset, out)
    }
    fn write_bytes(&self, offset: u64, data: &[u8]) -> Result<(), MmioError> {
        if *self.on.lock().unwrap() && data.len() == 4 {
            let v = u32::from_le_bytes(data.try_into().unwrap());
            self.writes.lock().unwrap().push(((offset / 4) as u32, v));
        }
        self.inner.write_bytes(offset, data)
    }
}

impl Rec {
    pub fn start(&self) {
        self.writes.lock().unwrap().clear();
        *self.on.lock().unwrap() = true;
    }
    pub fn take(&self) -> Vec<(u32, u32)> {
        *self.on.lock().unwrap() = false;
        std::mem::take(&mut *self.writes.lock().unwrap())
    }
}

/// A new emulated MI350 (bus master on, as the PCI opener leaves it) and its firmware files.
pub fn mi350() -> (EmuPciGpu, emu::pci::firmware::TempFirmwareDir) {
    let cfg = EmuPciConfig::new(EmuArch::Gfx950);
    let names = emu::pci::firmware::names_for(&cfg.ips);
    let fw = emu::pci::firmware::temp_firmware_dir_for(&names).unwrap();
    let gpu = EmuPciGpu::new(cfg).unwrap();
    gpu.config_write(0x04, 2, 0x6);
    (gpu, fw)
}

pub struct Session {
    pub rec: Arc<Rec>,
    pub g: Gc9,
}

/// One driver session on `gpu`: discovery, versions, firmware and `Gc9::boot` (full or
/// partial, as the GPU's state says).
pub fn open(gpu: &EmuPciGpu, fw: &std::path::Path) -> PciResult<Session> {
    let rec = Arc::new(Rec {
        inner: gpu.bar(BAR_MMIO)?,
        on: Mutex::new(false),
        writes: Mutex::new(Vec::new()),
    });
    let vram = gpu.bar(BAR_VRAM)?;
    let mut regs = RegIo::new(rec.clone());
    let vram_size = u64::from(regs.rreg(RCC_CONFIG_MEMSIZE)?) << 20;
    let at = vram_size - TABLE_FROM_END;
    let mut t = vec![0u8; TABLE_SIZE];
    vram.read_bytes(at, &mut t)?;
    let disc = Discovery::parse(&t, at)?;
    regs.gen = check_versions(&disc)?;
    let firmware = gc9::load_firmware(fw, &disc)?;
    let mut g = Gc9::new(regs, vram, disc, vram_size, 2000)?;
    g.boot(&firmware)?;
    Ok(Session { rec, g })
}

// The test's VA window and where it lives: 2 MiB of VRAM at DATA (one PDB0 leaf, gfx9 has no
// PDE_PTE bit at PDB0: an entry without AMDGPU_PTE_TF is a 2 MiB page), then system pages
// through a PTB (PDB0 entry with TF). Tables and data far above the driver's boot memory.
pub const TABLES: u64 = 256 << 20;
pub const DATA: u64 = 258 << 20;
pub const VA: u64 = gc9::VM_BASE;
pub const SYS_VA: u64 = VA + (2 << 20);
pub const RING: u64 = VA;
pub const RING_BYTES: u64 = 0x1000;
pub const RPTR: u64 = VA + 0x1000;
pub const WPTR: u64 = VA + 0x1010;

/// Writes the window's tables under the driver's root directory (the GC 9 driver has no mapper
/// of its own yet).
pub fn map(g: &Gc9, sys_pages: &[u64]) {
    let v = &g.vram;
    let (pdb1, pdb0, ptb) = (TABLES, TABLES + 0x1000, TABLES + 0x2000);
    for t in [pdb1, pdb0, ptb] {
        v.write_bytes(t, &[0u8; 0x1000]).unwrap();
    }
    let idx = |va: u64, s: u32| (va >> s) & 0x1FF;
    let rw = pte::VALID | pte::READABLE | pte::WRITEABLE;
    v.write64(g.root_pt + idx(VA, 39) * 8, pdb1 | pte::VALID)
        .unwrap();
    v.write64(
        pdb1 + idx(VA, 30) * 8,
        pdb0 | pte::VALID | pte::gfx9::PDB1_BFS9,
    )
    .unwrap();
    v.write64(pdb0 + idx(VA, 21) * 8, DATA | rw).unwrap();
    v.write64(pdb0 + idx(SYS_VA, 21) * 8, ptb | pte::VALID | pte::gfx9::TF)
        .unwrap();
    for (i, p) in sys_pages.iter().enumerate() {
        v.write64(ptb + i as u64 * 8, p | rw | pte::SYSTEM | pte::SNOOPED)
            .unwrap();
    }
}

/// VRAM offset of a VA in the window's VRAM part.
pub fn at(va: u64) -> u64 {
    DATA + (va - VA)
}

/// Host -> VRAM, VRAM -> VRAM, VRAM -> host through SDMA queue 0 of the driver, then a bare
/// FENCE; every byte and the read-pointer write-back checked.
pub fn copy_round_trip(gpu: &EmuPciGpu, g: &Gc9) {
    let sys: SysMem = gpu.alloc_sysmem(0x2000).unwrap();
    assert_eq!(sys.pages.len(), 2);
    map(g, &sys.pages);
    let q = v4::setup_ring(g, 0, RING, RING_BYTES, RPTR, WPTR).unwrap();

    let n = 0x1000usize;
    let data: Vec<u8> = (0..n as u32).map(|i| (i * 13 + 5) as u8).collect();
    sys.cpu.write_bytes(0, &data).unwrap();
    sys.cpu.write_bytes(0x1000, &vec![0u8; n]).unwrap();
    let (vram_a, vram_b, fence) = (VA + 0x10_0000, VA + 0x18_0000, VA + 0x2000);
    for x in [vram_a, vram_b] {
        g.vram.write_bytes(at(x), &vec![0u8; n]).unwrap();
    }
    g.vram.write32(at(fence), 0).unwrap();

    let mut c = CopyCmds::sdma4();
    c.copy(vram_a, SYS_VA, n as u64);
    c.copy(vram_b, vram_a, n as u64);
    c.copy(SYS_VA + 0x1000, vram_b, n as u64);
    c.signal(fence, 0xC0FFEE, None);
    let words: Vec<u8> = c.q.iter().flat_map(|w| w.to_le_bytes()).collect();
    g.vram.write_bytes(at(RING), &words).unwrap();
    let wp = words.len() as u64;
    g.vram.write64(at(WPTR), wp).unwrap();
    // 64-bit doorbells at 8-byte stride in BAR2, the write pointer in bytes.
    gpu.bar_write(2, u64::from(q.doorbell) * 8, &wp.to_le_bytes())
        .unwrap();
    gpu.wait_interrupt();
    assert!(gpu.refused().is_empty(), "{:?}", gpu.refused());

    let mut out = vec![0u8; n];
    g.vram.read_bytes(at(vram_a), &mut out).unwrap();
    assert_eq!(out, data, "host -> VRAM");
    g.vram.read_bytes(at(vram_b), &mut out).unwrap();
    assert_eq!(out, data, "VRAM -> VRAM");
    sys.cpu.read_bytes(0x1000, &mut out).unwrap();
    assert_eq!(out, data, "VRAM -> host");
    assert_eq!(g.vram.read32(at(fence)).unwrap(), 0xC0FFEE);
    // The engine wrote its read pointer back (bytes) where the driver pointed it.
    assert_eq!(g.vram.read64(at(RPTR)).unwrap(), wp);
    v4::fini_ring(g, 0).unwrap();
    gpu.free_sysmem(&sys);
}

/// Absolute register address -> name (without `reg`) for every discovered instance, from the
/// register JSON in ../shared/amd-registers read here (not the driver's or emulator's tables);
/// `None` when the shared data is missing (which fails under CI).
pub fn json_names(disc: &Discovery) -> Option<std::collections::HashMap<u32, String>> {
    use runtime::pci::am::AmIp;
    let dir = testdata::require_shared("amd-registers")?;
    let mut at = std::collections::HashMap::new();
    for (ip, file, prefix) in [
        (AmIp::Gc, "gc_9_4_3", ""),
        (AmIp::Sdma0, "sdma_4_4_2", ""),
        (AmIp::Mmhub, "mmhub_1_8_0", ""),
        (AmIp::Nbio, "nbio_7_9_0", ""),
        (AmIp::Mp0, "mp_13_0_0", "MP0_"),
        (AmIp::Mp1, "mp_13_0_0", "MP1_"),
        (AmIp::Hdp, "hdp_4_4_2", ""),
        (AmIp::Osssys, "osssys_4_4_2", ""),
    ] {
        let text = std::fs::read_to_string(dir.join(format!("{file}.json"))).unwrap();
        let j: serde_json::Value = serde_json::from_str(&text).unwrap();
        for (name, r) in j["registers"].as_object().unwrap() {
            let n = name.trim_start_matches("reg").trim_start_matches("mm");
            if !n.starts_with(prefix) {
                continue;
            }
            let off = r["offset"].as_u64().unwrap() as u32;
            let seg = r["base_index"].as_u64().unwrap() as usize;
            for inst in disc.instances(ip) {
                if let Some(b) = inst.bases.get(seg) {
                    at.entry(b + off).or_insert_with(|| n.to_string());
                }
            }
        }
    }
    Some(at)
}
