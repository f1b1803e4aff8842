//! The GC 9 compute queue of the driverless driver (`runtime::pci::am::mqd9`) on the emulated
//! MI350 (`emu-pci:gfx950`, 8 XCCs): the whole device opened through `runtime::pci` (bring-up,
//! gfx9 page tables, one PM4 HQD per XCC, the SDMA 4.4 ring) runs the captured gfx950 add kernel
//! and the demo vadd built for gfx950, checked against the CPU.

#[macro_use]
mod common;

use common::{check_vadd_elf, download, f32s, from_f32, opts, shared, upload};
use emu::EmuArch;
use runtime::{Device, DeviceOptions};

fn open() -> (Device, emu::pci::EmuPciGpu) {
    emu::open_pci(
        EmuArch::Gfx950,
        DeviceOptions {
            wait_timeout: std::time::Duration::from_secs(5),
            ..opts()
        },
    )
    .unwrap()
}

fn gfx950_fixture(name: &str) -> Vec<u8> {
    let p = format!(
        "{}/../tests/fixtures/kernels/emu/gfx950/{name}.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

#[test]
fn captured_plus_kernel_adds_on_every_xcc_queue() {
    let Some(elf) = shared(EmuArch::Gfx950, "plus_run_0/program0_E_3.elf") else {
        return;
    };
    let (mut d, gpu) = open();
    assert_eq!(d.props.num_xcc, 8, "the emulated MI350's XCCs");
    let prg = d.load_program(&elf).unwrap();
    let a = [1.5f32, -2.25, 1e10];
    let b = [0.25f32, 8.0, -3.0];
    let (ba, bb) = (upload(&mut d, &from_f32(&a)), upload(&mut d, &from_f32(&b)));
    let out = upload(&mut d, &[0u8; 12]);
    d.launch(&prg, &[&out, &ba, &bb], &[], [1, 1, 1], [3, 1, 1])
        .unwrap();
    d.synchronize().unwrap();
    let r = f32s(&download(&mut d, &out, 12));
    for i in 0..3 {
        assert_eq!(r[i].to_bits(), (a[i] + b[i]).to_bits(), "out[{i}]");
    }
    assert!(gpu.refused().is_empty(), "{:?}", gpu.refused());
}

#[test]
fn demo_vadd_built_for_gfx950_matches_cpu() {
    let (mut d, gpu) = open();
    check_vadd_elf(&mut d, &gfx950_fixture("vadd"), 1000, 7);
    assert!(gpu.refused().is_empty(), "{:?}", gpu.refused());
}

// ---- The queue's register writes, against the register JSON and tinygrad's setup_ring ----

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use emu::pci::{EmuPciConfig, EmuPciGpu};
use runtime::pci::am::discovery::{Discovery, TABLE_FROM_END, TABLE_SIZE};
use runtime::pci::am::gc9::{self, Gc9};
use runtime::pci::am::gmc::pte;
use runtime::pci::am::{check_versions, mqd9, AmIp, RegIo, RCC_CONFIG_MEMSIZE};
use runtime::pci::{PciDevice, BAR_MMIO, BAR_VRAM};
use runtime::platform::{AllocKind, GpuIface, Mmio, MmioError};
use serde_json::Value;

/// BAR5 with every 32-bit register write recorded while on.
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

/// gc_9_4_3.json: register name (without `reg`) -> (offset, segment, fields (name, lo, hi)).
type Json = HashMap<String, (u32, usize, Vec<(String, u32, u32)>)>;

fn gc_json() -> Option<Json> {
    let dir = testdata::require_shared("amd-registers")?;
    let text = std::fs::read_to_string(dir.join("gc_9_4_3.json")).unwrap();
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

struct Booted {
    gpu: EmuPciGpu,
    rec: Arc<Rec>,
    g: Gc9,
    _fw: emu::pci::firmware::TempFirmwareDir,
}

/// The emulated MI350 brought up by the driver's own GC 9 bring-up (`Gc9::boot`).
fn boot() -> Booted {
    let cfg = EmuPciConfig::new(EmuArch::Gfx950);
    let names = emu::pci::firmware::names_for(&cfg.ips);
    let fw = emu::pci::firmware::temp_firmware_dir_for(&names).unwrap();
    let gpu = EmuPciGpu::new(cfg).unwrap();
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

/// Byte offsets in `struct v9_mqd` (amdgpu v9_structs.h, as tinygrad's autogen/am/am.py
/// `struct_v9_mqd` lists them) of the HQD registers the queue sets.
const V9_MQD: [(&str, usize); 24] = [
    ("CP_MQD_BASE_ADDR", 512),
    ("CP_MQD_BASE_ADDR_HI", 516),
    ("CP_HQD_ACTIVE", 520),
    ("CP_HQD_VMID", 524),
    ("CP_HQD_PERSISTENT_STATE", 528),
    ("CP_HQD_PIPE_PRIORITY", 532),
    ("CP_HQD_QUEUE_PRIORITY", 536),
    ("CP_HQD_QUANTUM", 540),
    ("CP_HQD_PQ_BASE", 544),
    ("CP_HQD_PQ_BASE_HI", 548),
    ("CP_HQD_PQ_RPTR_REPORT_ADDR", 556),
    ("CP_HQD_PQ_RPTR_REPORT_ADDR_HI", 560),
    ("CP_HQD_PQ_WPTR_POLL_ADDR", 564),
    ("CP_HQD_PQ_WPTR_POLL_ADDR_HI", 568),
    ("CP_HQD_PQ_DOORBELL_CONTROL", 572),
    ("CP_HQD_PQ_CONTROL", 580),
    ("CP_HQD_IB_CONTROL", 596),
    ("CP_HQD_HQ_STATUS0", 640),
    ("CP_MQD_CONTROL", 648),
    ("CP_HQD_EOP_BASE_ADDR", 660),
    ("CP_HQD_EOP_BASE_ADDR_HI", 664),
    ("CP_HQD_EOP_CONTROL", 668),
    ("CP_HQD_AQL_CONTROL", 724),
    ("CP_HQD_PQ_WPTR_HI", 732),
];

#[test]
fn compute_queue_writes_follow_tinygrad_setup_ring_and_v9_mqd() {
    let Some(j) = gc_json() else {
        return;
    };
    let b = boot();
    let g = &b.g;
    let x = 3usize;
    let bases = g.disc.instances(AmIp::Gc)[x].bases.clone();
    let addr = |n: &str| -> u32 {
        let (off, seg, _) = j[n];
        bases[seg] + off
    };
    let name_of: HashMap<u32, String> = j
        .iter()
        .filter(|(_, r)| r.1 < bases.len())
        .map(|(n, r)| (bases[r.1] + r.0, n.clone()))
        .collect();
    // An MQD slot far above the boot memory; queue addresses in the VA window.
    let mqd_paddr = 300u64 << 20;
    let (ring, ring_bytes) = (gc9::VM_BASE + 0x10_0000, 0x4_0000u64);
    let (rptr, wptr) = (gc9::VM_BASE + 0x1000, gc9::VM_BASE + 0x1010);
    let (eop, eop_bytes) = (gc9::VM_BASE + 0x2000, 0x1000u64);
    let spec = mqd9::QueueSpec {
        mqd_mc: g.mc(mqd_paddr),
        ring_va: ring,
        ring_bytes,
        rptr_va: rptr,
        wptr_va: wptr,
        eop_va: eop,
        eop_bytes,
        doorbell: mqd9::doorbell(x),
    };
    b.rec.start();
    mqd9::setup(g, x, mqd_paddr, &spec).unwrap();
    let w = b.rec.take();

    // tinygrad setup_ring: _grbm_select(me=1, pipe, queue, inst=xcc), the MQD's register image
    // CP_MQD_BASE_ADDR .. CP_HQD_PQ_WPTR_HI in address order, CP_HQD_ACTIVE = 1, flush_hdp,
    // _grbm_select(inst=xcc).
    let first = addr("CP_MQD_BASE_ADDR");
    let last = addr("CP_HQD_PQ_WPTR_HI");
    let n = (last - first + 1) as usize;
    assert_eq!(n, (732 - 512) / 4 + 1, "register image vs struct v9_mqd");
    assert_eq!(w.len(), 1 + n + 1 + 1 + 1, "{w:x?}");
    assert_eq!(w[0].0, addr("GRBM_GFX_CNTL"));
    assert_eq!(field(&j, "GRBM_GFX_CNTL", w[0].1, "meid"), 1);
    for f in ["pipeid", "queueid", "vmid"] {
        assert_eq!(field(&j, "GRBM_GFX_CNTL", w[0].1, f), 0, "{f}");
    }
    for (i, (a, _)) in w[1..=n].iter().enumerate() {
        assert_eq!(*a, first + i as u32, "image write {i} out of order");
    }
    assert_eq!(w[n + 1], (addr("CP_HQD_ACTIVE"), 1));
    // flush_hdp: 0 to the register REMAP_HDP_MEM_FLUSH_CNTL names (not a GC register).
    assert_eq!(w[n + 2].1, 0);
    assert!(
        !name_of.contains_key(&w[n + 2].0),
        "{:?}",
        name_of.get(&w[n + 2].0)
    );
    assert_eq!(w[n + 3], (addr("GRBM_GFX_CNTL"), 0));

    let val = |r: &str| -> u32 {
        let a = addr(r);
        w[1..=n].iter().find(|x| x.0 == a).unwrap().1
    };
    let lo = |v: u64| v as u32;
    let hi = |v: u64| (v >> 32) as u32;
    let bit_length = |v: u64| 64 - v.leading_zeros();
    assert_eq!(val("CP_MQD_BASE_ADDR"), lo(spec.mqd_mc));
    assert_eq!(val("CP_MQD_BASE_ADDR_HI"), hi(spec.mqd_mc));
    let ps = val("CP_HQD_PERSISTENT_STATE");
    assert_eq!(
        field(&j, "CP_HQD_PERSISTENT_STATE", ps, "preload_size"),
        0x55
    );
    assert_eq!(field(&j, "CP_HQD_PERSISTENT_STATE", ps, "preload_req"), 1);
    // tinygrad's literals.
    assert_eq!(val("CP_HQD_PIPE_PRIORITY"), 2);
    assert_eq!(val("CP_HQD_QUEUE_PRIORITY"), 0xf);
    assert_eq!(val("CP_HQD_QUANTUM"), 0x111);
    assert_eq!(val("CP_HQD_HQ_STATUS0"), 0x2000_4000);
    assert_eq!(val("CP_HQD_VMID"), 0);
    assert_eq!(val("CP_HQD_AQL_CONTROL"), 0, "a PM4 queue");
    assert_eq!(val("CP_HQD_PQ_BASE"), lo(ring >> 8));
    assert_eq!(val("CP_HQD_PQ_BASE_HI"), hi(ring >> 8));
    assert_eq!(val("CP_HQD_PQ_RPTR_REPORT_ADDR"), lo(rptr));
    assert_eq!(val("CP_HQD_PQ_RPTR_REPORT_ADDR_HI"), hi(rptr));
    assert_eq!(val("CP_HQD_PQ_WPTR_POLL_ADDR"), lo(wptr));
    assert_eq!(val("CP_HQD_PQ_WPTR_POLL_ADDR_HI"), hi(wptr));
    assert_eq!(val("CP_HQD_EOP_BASE_ADDR"), lo(eop >> 8));
    assert_eq!(val("CP_HQD_EOP_BASE_ADDR_HI"), hi(eop >> 8));
    let db = val("CP_HQD_PQ_DOORBELL_CONTROL");
    let off = field(&j, "CP_HQD_PQ_DOORBELL_CONTROL", db, "doorbell_offset");
    assert_eq!(
        field(&j, "CP_HQD_PQ_DOORBELL_CONTROL", db, "doorbell_en"),
        1
    );
    assert_eq!(off, spec.doorbell * 2);
    // The doorbell's byte address lies in this XCC's MEC doorbell range as the bring-up set it.
    let rd = |r: &str| g.regs.rreg(addr(r)).unwrap();
    let (lower, upper) = (
        rd("CP_MEC_DOORBELL_RANGE_LOWER"),
        rd("CP_MEC_DOORBELL_RANGE_UPPER"),
    );
    assert_eq!(lower, 0x100 * x as u32);
    assert!(
        (lower..=upper).contains(&(spec.doorbell * 8)),
        "doorbell byte {:#x} outside XCC {x}'s {lower:#x}..={upper:#x}",
        spec.doorbell * 8
    );
    let pq = val("CP_HQD_PQ_CONTROL");
    assert_eq!(
        field(&j, "CP_HQD_PQ_CONTROL", pq, "queue_size"),
        bit_length(ring_bytes / 4) - 2
    );
    assert_eq!(field(&j, "CP_HQD_PQ_CONTROL", pq, "rptr_block_size"), 5);
    assert_eq!(field(&j, "CP_HQD_PQ_CONTROL", pq, "unord_dispatch"), 0);
    let ib = val("CP_HQD_IB_CONTROL");
    assert_eq!(field(&j, "CP_HQD_IB_CONTROL", ib, "min_ib_avail_size"), 3);
    assert_eq!(val("CP_MQD_CONTROL"), 1 << 8, "priv_state only");
    assert_eq!(
        field(&j, "CP_MQD_CONTROL", val("CP_MQD_CONTROL"), "priv_state"),
        1
    );
    let ec = val("CP_HQD_EOP_CONTROL");
    assert_eq!(
        field(&j, "CP_HQD_EOP_CONTROL", ec, "eop_size"),
        bit_length(eop_bytes / 4) - 2
    );
    // Registers tinygrad's MQD leaves zero are written zero.
    let set: Vec<u32> = V9_MQD.iter().map(|(r, _)| addr(r)).collect();
    for (a, v) in &w[1..=n] {
        if !set.contains(a) {
            assert_eq!(*v, 0, "{:?}", name_of.get(a));
        }
    }

    // The MQD in VRAM: header, CU masks of SE0..3, the register image at v9_mqd's offsets.
    let mut m = vec![0u8; 2048];
    g.vram.read_bytes(mqd_paddr, &mut m).unwrap();
    let dw = |byte: usize| u32::from_le_bytes(m[byte..byte + 4].try_into().unwrap());
    assert_eq!(dw(0), 0xC031_0800);
    for se in [92, 96, 104, 108] {
        assert_eq!(dw(se), u32::MAX, "compute_static_thread_mgmt at byte {se}");
    }
    for (r, byte) in V9_MQD {
        assert_eq!(
            addr(r) - first,
            ((byte - 512) / 4) as u32,
            "{r}: register JSON vs struct v9_mqd"
        );
        assert_eq!(dw(byte), w[1 + (byte - 512) / 4].1, "{r} in the MQD");
    }

    // The emulated XCC took it as a PM4 HQD, then tinygrad's _dequeue_hqds drops it.
    assert_eq!(rd("CP_HQD_ACTIVE") & 1, 1);
    assert!(b.gpu.refused().is_empty(), "{:?}", b.gpu.refused());
    b.rec.start();
    mqd9::dequeue(g, x).unwrap();
    let w = b.rec.take();
    let dq = addr("CP_HQD_DEQUEUE_REQUEST");
    let i = w.iter().position(|x| x.0 == dq).expect("dequeue request");
    assert_eq!(
        field(&j, "CP_HQD_DEQUEUE_REQUEST", w[i].1, "dequeue_req"),
        2
    );
    assert_eq!(w[i + 1], (addr("SPI_COMPUTE_QUEUE_RESET"), 1));
    assert_eq!(w.last(), Some(&(addr("GRBM_GFX_CNTL"), 0)));
    assert_eq!(rd("CP_HQD_ACTIVE") & 1, 0);
}

/// The driver's gfx9 page tables (tinygrad's get_pte_flags for GC < 10): PDB1 entries carry
/// BFS(9), PDB0 entries that point at a PTB carry TF, a 2 MiB page at PDB0 carries neither TF
/// nor PDE_PTE; the emulated MI350's walker finds the same physical pages.
#[test]
fn buffers_map_through_gfx9_translate_further_tables() {
    let cfg = EmuPciConfig::new(EmuArch::Gfx950);
    let names = emu::pci::firmware::names_for(&cfg.ips);
    let fw = emu::pci::firmware::temp_firmware_dir_for(&names).unwrap();
    let gpu = EmuPciGpu::new(cfg).unwrap();
    let popts = runtime::pci::PciOptions {
        firmware_dir: fw.path().to_path_buf(),
        ..Default::default()
    };
    let mut iface = runtime::pci::iface::PciIface::new(Arc::new(gpu.clone()), &popts).unwrap();
    let small = iface.alloc(0x3000, AllocKind::VRAM).unwrap();
    let big = iface.alloc(4 << 20, AllocKind::VRAM).unwrap();
    let vram = gpu.bar(BAR_VRAM).unwrap();
    let e = |t: u64, va: u64, s: u32| vram.read64(t + ((va >> s) & 0x1FF) * 8).unwrap();
    let root = iface.dev.gmc.root;
    let walk = |va: u64| {
        let e2 = e(root, va, 39);
        let pdb1 = e2 & pte::ADDR_MASK;
        let e1 = e(pdb1, va, 30);
        let pdb0 = e1 & pte::ADDR_MASK;
        (e2, e1, e(pdb0, va, 21), pdb0)
    };
    let (e2, e1, e0, _) = walk(small.va);
    assert_eq!(e2 & !pte::ADDR_MASK, pte::VALID, "PDB2 entry");
    assert_eq!(
        e1 & !pte::ADDR_MASK,
        pte::VALID | pte::gfx9::PDB1_BFS9,
        "PDB1 entry"
    );
    assert_eq!(
        e0 & !pte::ADDR_MASK,
        pte::VALID | pte::gfx9::TF,
        "PDB0 entry -> PTB"
    );
    let runs = iface.mapping(small.handle).unwrap().runs;
    for p in 0..3u64 {
        let va = small.va + p * 0x1000;
        let leaf = e(e0 & pte::ADDR_MASK, va, 12);
        assert_eq!(leaf & pte::ADDR_MASK, runs[0].addr + p * 0x1000);
        assert_eq!(leaf & pte::PDE_PTE, 0);
        assert_eq!(gpu.translate(va).map(|t| t.page_size), Some(0x1000));
    }
    let (_, _, e0, _) = walk(big.va);
    assert_eq!(e0 & (pte::gfx9::TF | pte::PDE_PTE), 0, "2 MiB page at PDB0");
    assert_eq!(e0 & pte::VALID, pte::VALID);
    assert_eq!(gpu.translate(big.va).map(|t| t.page_size), Some(2 << 20));
}
