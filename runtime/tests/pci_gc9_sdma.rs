//! The SDMA 4.4 ring of the driverless driver on GC 9.4.3 / 9.5.0 (`runtime::pci::am::sdma::v4`),
//! on the emulated MI350 (`emu-pci:gfx950`) after the driver's own bring-up (`gc9::Gc9::boot`).
//!
//! The ring's register writes are checked in order and by field against tinygrad's
//! `AM_SDMA.setup_ring` / `fini_hw` for SDMA 4.4 (tinygrad/runtime/support/am/ip.py at a9069c1),
//! with names and fields decoded from ../shared/amd-registers/sdma_4_4_2.json read by this test
//! (not the driver's generated tables). Then copies through that ring (host -> VRAM,
//! VRAM -> VRAM, VRAM -> host) and a fence, checked byte for byte.
//!
//! The GC 9 driver has no page-table mapper yet (the v9 compute-queue work adds the AM mapping for
//! this family), so the test writes the gfx9 tables under the driver's root directory itself, as
//! the bring-up tests in emu/tests/pci_gc9_tinygrad.rs do.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use emu::pci::{EmuPciConfig, EmuPciGpu};
use emu::EmuArch;
use runtime::pci::am::discovery::{Discovery, TABLE_FROM_END, TABLE_SIZE};
use runtime::pci::am::gc9::{self, Gc9};
use runtime::pci::am::gmc::pte;
use runtime::pci::am::sdma::v4;
use runtime::pci::am::{check_versions, AmIp, RegIo, RCC_CONFIG_MEMSIZE};
use runtime::pci::{PciDevice, BAR_MMIO, BAR_VRAM};
use runtime::platform::{Mmio, MmioError};
use runtime::queue::CopyCmds;
use serde_json::Value;

/// BAR5 of the emulated GPU with every register write recorded while `on`.
struct Rec {
    inner: Arc<dyn Mmio>,
    on: Mutex<bool>,
    writes: Mutex<Vec<(u32, u32)>>,
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
    fn start(&self) {
        self.writes.lock().unwrap().clear();
        *self.on.lock().unwrap() = true;
    }
    fn take(&self) -> Vec<(u32, u32)> {
        *self.on.lock().unwrap() = false;
        std::mem::take(&mut *self.writes.lock().unwrap())
    }
}

/// sdma_4_4_2.json: register name (without `reg`) -> (offset, segment, fields (name, lo, hi)).
type Json = HashMap<String, (u32, usize, Vec<(String, u32, u32)>)>;

fn sdma_json() -> Option<Json> {
    let dir = testdata::require_shared("amd-registers")?;
    let text = std::fs::read_to_string(dir.join("sdma_4_4_2.json")).unwrap();
    let j: Value = serde_json::from_str(&text).unwrap();
    let mut out = HashMap::new();
    for (name, r) in j["registers"].as_object().unwrap() {
        let fields = r["fields"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(f, v)| {
                (
                    f.clone(),
                    v["lo"].as_u64().unwrap() as u32,
                    v["hi"].as_u64().unwrap() as u32,
                )
            })
            .collect();
        out.insert(
            name.trim_start_matches("reg").to_string(),
            (
                r["offset"].as_u64().unwrap() as u32,
                r["base_index"].as_u64().unwrap() as usize,
                fields,
            ),
        );
    }
    Some(out)
}

fn field(j: &Json, reg: &str, v: u32, name: &str) -> u32 {
    let (_, lo, hi) = j[reg]
        .2
        .iter()
        .find(|f| f.0 == name)
        .unwrap_or_else(|| panic!("{reg}.{name} not in the JSON"));
    let w = hi - lo + 1;
    if w == 32 {
        v
    } else {
        (v >> lo) & ((1 << w) - 1)
    }
}

fn encode(j: &Json, reg: &str, f: &[(&str, u32)]) -> u32 {
    f.iter().fold(0, |acc, (n, x)| {
        let (_, lo, hi) = j[reg]
            .2
            .iter()
            .find(|e| e.0 == *n)
            .unwrap_or_else(|| panic!("{reg}.{n}"));
        assert!(hi - lo == 31 || *x < 1 << (hi - lo + 1), "{reg}.{n}={x:#x}");
        acc | x << lo
    })
}

struct Booted {
    gpu: EmuPciGpu,
    rec: Arc<Rec>,
    g: Gc9,
    _fw: emu::pci::firmware::TempFirmwareDir,
}

/// The emulated MI350 brought up by the driver (discovery, versions, firmware, `Gc9::boot`), as
/// `AmDevice::boot` does for this family before its queues.
fn boot() -> Booted {
    let cfg = EmuPciConfig::new(EmuArch::Gfx950);
    let names = emu::pci::firmware::names_for(&cfg.ips);
    let fw = emu::pci::firmware::temp_firmware_dir_for(&names).unwrap();
    let gpu = EmuPciGpu::new(cfg).unwrap();
    // PCI_COMMAND memory + bus master, as the PCI opener leaves the function.
    gpu.config_write(0x04, 2, 0x6);
    let rec = Arc::new(Rec {
        inner: gpu.bar(BAR_MMIO).unwrap(),
        on: Mutex::new(false),
        writes: Mutex::new(Vec::new()),
    });
    let vram = gpu.bar(BAR_VRAM).unwrap();
    let mut regs = RegIo::new(rec.clone());
    let vram_size = u64::from(regs.rreg(RCC_CONFIG_MEMSIZE).unwrap()) << 20;
    let at = vram_size - TABLE_FROM_END;
    let mut t = vec![0u8; TABLE_SIZE];
    vram.read_bytes(at, &mut t).unwrap();
    let disc = Discovery::parse(&t, at).unwrap();
    regs.gen = check_versions(&disc).unwrap();
    let firmware = gc9::load_firmware(fw.path(), &disc).unwrap();
    let mut g = Gc9::new(regs, vram, disc, vram_size, 2000).unwrap();
    g.boot(&firmware).unwrap();
    Booted {
        gpu,
        rec,
        g,
        _fw: fw,
    }
}

// The test's VA window and where it lives: 2 MiB of VRAM at DATA (one PDB0 leaf, gfx9 has no
// PDE_PTE bit at PDB0: an entry without AMDGPU_PTE_TF is a 2 MiB page), then two system pages
// through a PTB (PDB0 entry with TF). Tables and data far above the driver's boot memory.
const TABLES: u64 = 256 << 20;
const DATA: u64 = 258 << 20;
const VA: u64 = gc9::VM_BASE;
const SYS_VA: u64 = VA + (2 << 20);

fn map(b: &Booted, sys_pages: &[u64]) {
    let v = &b.g.vram;
    let (pdb1, pdb0, ptb) = (TABLES, TABLES + 0x1000, TABLES + 0x2000);
    for t in [pdb1, pdb0, ptb] {
        v.write_bytes(t, &[0u8; 0x1000]).unwrap();
    }
    let idx = |va: u64, s: u32| (va >> s) & 0x1FF;
    let rw = pte::VALID | pte::READABLE | pte::WRITEABLE;
    let root = b.g.root_pt;
    v.write64(root + idx(VA, 39) * 8, pdb1 | pte::VALID)
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

const RING: u64 = VA;
const RING_BYTES: u64 = 0x1000;
const RPTR: u64 = VA + 0x1000;
const WPTR: u64 = VA + 0x1010;

/// (name, instance) of a recorded write, by the JSON offsets at the discovered SDMA bases.
fn names_of(b: &Booted, j: &Json, w: &[(u32, u32)]) -> Vec<(String, usize, u32)> {
    let insts = b.g.disc.instances(AmIp::Sdma0);
    w.iter()
        .map(|(a, v)| {
            for (i, ins) in insts.iter().enumerate() {
                for (n, (off, seg, _)) in j {
                    if ins.bases.get(*seg).map(|s| s + off) == Some(*a) {
                        return (n.clone(), i, *v);
                    }
                }
            }
            (format!("{a:#x}"), usize::MAX, *v)
        })
        .collect()
}

#[test]
fn sdma44_ring_writes_tinygrads_sequence() {
    let Some(j) = sdma_json() else { return };
    let b = boot();
    b.rec.start();
    let q = v4::setup_ring(&b.g, 0, RING, RING_BYTES, RPTR, WPTR).unwrap();
    let got = names_of(&b, &j, &b.rec.take());
    // ip.py AM_SDMA.setup_ring on SDMA 4.4, queue 0: regSDMA_GFX instance 0, doorbell
    // AMDGPU_NAVI10_DOORBELL_sDMA_ENGINE0 (256, amdgpu_doorbell.h).
    assert_eq!(q.doorbell, 256);
    let lo = |x: u64| x as u32;
    let hi = |x: u64| (x >> 32) as u32;
    // (register, exact value) for `.write`/wreg_pair, (register, fields) for `.update`.
    enum W {
        Raw(u32),
        Fields(Vec<(&'static str, u32)>),
    }
    let exp: Vec<(&str, W)> = vec![
        ("SDMA_GFX_MINOR_PTR_UPDATE", W::Raw(1)),
        ("SDMA_GFX_RB_RPTR", W::Raw(0)),
        ("SDMA_GFX_RB_RPTR_HI", W::Raw(0)),
        ("SDMA_GFX_RB_WPTR", W::Raw(0)),
        ("SDMA_GFX_RB_WPTR_HI", W::Raw(0)),
        ("SDMA_GFX_RB_BASE", W::Raw(lo(RING >> 8))),
        ("SDMA_GFX_RB_BASE_HI", W::Raw(hi(RING >> 8))),
        ("SDMA_GFX_RB_RPTR_ADDR_LO", W::Raw(lo(RPTR))),
        ("SDMA_GFX_RB_RPTR_ADDR_HI", W::Raw(hi(RPTR))),
        ("SDMA_GFX_RB_WPTR_POLL_ADDR_LO", W::Raw(lo(WPTR))),
        ("SDMA_GFX_RB_WPTR_POLL_ADDR_HI", W::Raw(hi(WPTR))),
        ("SDMA_GFX_DOORBELL_OFFSET", W::Fields(vec![("offset", 512)])),
        ("SDMA_GFX_DOORBELL", W::Fields(vec![("enable", 1)])),
        ("SDMA_GFX_MINOR_PTR_UPDATE", W::Raw(0)),
        // No f32_wptr_poll_enable on 4.4; rb_size = (ring_size//4).bit_length()-1 = 10.
        (
            "SDMA_GFX_RB_CNTL",
            W::Raw(encode(
                &j,
                "SDMA_GFX_RB_CNTL",
                &[
                    ("rb_vmid", 0),
                    ("rptr_writeback_enable", 1),
                    ("rptr_writeback_timer", 4),
                    ("rb_enable", 1),
                    ("rb_priv", 1),
                    ("rb_size", 10),
                ],
            )),
        ),
        ("SDMA_GFX_IB_CNTL", W::Fields(vec![("ib_enable", 1)])),
    ];
    let mut diffs = Vec::new();
    for (k, ((name, want), (gn, gi, v))) in exp.iter().zip(&got).enumerate() {
        if name != gn || *gi != 0 {
            diffs.push(format!(
                "write {k}: expected {name}[0], got {gn}[{gi}]={v:#x}"
            ));
            break;
        }
        match want {
            W::Raw(x) if x != v => diffs.push(format!("write {k} {name}: {v:#x}, want {x:#x}")),
            W::Fields(f) => {
                for (fname, x) in f {
                    let g = field(&j, name, *v, fname);
                    if g != *x {
                        diffs.push(format!("write {k} {name}.{fname}: {g:#x}, want {x:#x}"));
                    }
                }
            }
            _ => {}
        }
    }
    if diffs.is_empty() && exp.len() != got.len() {
        diffs.push(format!("{} writes expected, {} made", exp.len(), got.len()));
    }
    assert!(diffs.is_empty(), "{diffs:#?}\n{got:#x?}");

    // fini_hw: rb_enable, ib_enable, doorbell enable and offset cleared, in that order.
    b.rec.start();
    v4::fini_ring(&b.g, 0).unwrap();
    let got = names_of(&b, &j, &b.rec.take());
    let order: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(
        order,
        [
            "SDMA_GFX_RB_CNTL",
            "SDMA_GFX_IB_CNTL",
            "SDMA_GFX_DOORBELL",
            "SDMA_GFX_DOORBELL_OFFSET"
        ]
    );
    assert_eq!(field(&j, "SDMA_GFX_RB_CNTL", got[0].2, "rb_enable"), 0);
    assert_eq!(field(&j, "SDMA_GFX_RB_CNTL", got[0].2, "rb_size"), 10);
    assert_eq!(field(&j, "SDMA_GFX_IB_CNTL", got[1].2, "ib_enable"), 0);
    assert_eq!(field(&j, "SDMA_GFX_DOORBELL", got[2].2, "enable"), 0);
    assert_eq!(field(&j, "SDMA_GFX_DOORBELL_OFFSET", got[3].2, "offset"), 0);
}

#[test]
fn sdma44_queue_beyond_the_discovered_engines_is_refused_by_name() {
    let b = boot();
    // Queue 1 is instance 4 (tinygrad: pipe 0, queue 1, inst pipe + queue*4); the emulated MI350
    // lists one SDMA instance.
    assert_eq!(v4::engine(1), (4, 256 + 4 * 0xA));
    let e = v4::setup_ring(&b.g, 1, RING, RING_BYTES, RPTR, WPTR)
        .unwrap_err()
        .to_string();
    assert!(e.contains("instance 4") && e.contains("lists 1"), "{e}");
    let e = v4::setup_ring(&b.g, 0, RING + 0x80, RING_BYTES, RPTR, WPTR)
        .unwrap_err()
        .to_string();
    assert!(e.contains("256-byte"), "{e}");
}

#[test]
fn sdma44_copies_host_vram_host_through_the_drivers_ring() {
    let b = boot();
    let sys = b.gpu.alloc_sysmem(0x2000).unwrap();
    assert_eq!(sys.pages.len(), 2);
    map(&b, &sys.pages);
    let q = v4::setup_ring(&b.g, 0, RING, RING_BYTES, RPTR, WPTR).unwrap();

    let n = 0x1000usize;
    let data: Vec<u8> = (0..n as u32).map(|i| (i * 13 + 5) as u8).collect();
    sys.cpu.write_bytes(0, &data).unwrap();
    sys.cpu.write_bytes(0x1000, &vec![0u8; n]).unwrap();
    let (vram_a, vram_b, fence) = (VA + 0x10_0000, VA + 0x18_0000, VA + 0x2000);
    let at = |va: u64| DATA + (va - VA);
    b.g.vram.write_bytes(at(vram_a), &vec![0u8; n]).unwrap();
    b.g.vram.write_bytes(at(vram_b), &vec![0u8; n]).unwrap();

    // Host -> VRAM, VRAM -> VRAM, VRAM -> host, then a bare FENCE (SDMA 4 packets).
    let mut c = CopyCmds::sdma4();
    c.copy(vram_a, SYS_VA, n as u64);
    c.copy(vram_b, vram_a, n as u64);
    c.copy(SYS_VA + 0x1000, vram_b, n as u64);
    c.signal(fence, 0xC0FFEE, None);
    let words: Vec<u8> = c.q.iter().flat_map(|w| w.to_le_bytes()).collect();
    b.g.vram.write_bytes(at(RING), &words).unwrap();
    let wp = words.len() as u64;
    b.g.vram.write64(at(WPTR), wp).unwrap();
    // 64-bit doorbells at 8-byte stride in BAR2, the write pointer in bytes.
    b.gpu
        .bar_write(2, u64::from(q.doorbell) * 8, &wp.to_le_bytes())
        .unwrap();
    b.gpu.wait_interrupt();
    assert!(b.gpu.refused().is_empty(), "{:?}", b.gpu.refused());

    let mut out = vec![0u8; n];
    b.g.vram.read_bytes(at(vram_a), &mut out).unwrap();
    assert_eq!(out, data, "host -> VRAM");
    b.g.vram.read_bytes(at(vram_b), &mut out).unwrap();
    assert_eq!(out, data, "VRAM -> VRAM");
    sys.cpu.read_bytes(0x1000, &mut out).unwrap();
    assert_eq!(out, data, "VRAM -> host");
    assert_eq!(b.g.vram.read32(at(fence)).unwrap(), 0xC0FFEE);
    // The engine wrote its read pointer back (bytes) where the driver pointed it.
    assert_eq!(b.g.vram.read64(at(RPTR)).unwrap(), wp);
}

#[test]
fn sdma4_copies_split_at_4_mib() {
    // tinygrad ops_amd: max_copy_size 0x400000 below SDMA 5 (a 22-bit COPY_LINEAR count).
    let mut c = CopyCmds::sdma4();
    c.copy(0x1000_0000, 0x2000_0000, (8 << 20) + 16);
    assert_eq!(c.sizes.len(), 3);
    let mut c = CopyCmds::new();
    c.copy(0x1000_0000, 0x2000_0000, (8 << 20) + 16);
    assert_eq!(c.sizes.len(), 1);
}
