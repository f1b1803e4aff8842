//! The GC 9.4.3 / 9.5.0 (MI300 / MI350) register bring-up of the driverless driver
//! (`runtime::pci::am::gc9`), checked write by write against the sequence of tinygrad's AM driver
//! for this family (tinygrad/runtime/support/am/ip.py and amdev.py at a9069c1; no recording of a
//! gfx942/gfx950 AM boot exists in ../shared/conformance, so the expectations below are written
//! from that source, each block citing the method it follows). Register names, instances and field
//! values are decoded with the register JSON in ../shared/amd-registers read by this test, not with
//! the driver's generated tables; a register device of the test's own answers the handshakes
//! (SMU response, RLC safe-mode acknowledge). The PSP step (firmware load, spatial partition)
//! is checked against the emulated MI350 in emu/tests/pci_gc9_tinygrad.rs, not here; SCRATCH_REG7
//! carries our own stamp (see docs/conformance.md A60–A66).

#[path = "common/replay.rs"]
mod replay;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use replay::Mem;
use runtime::pci::am::discovery::{checksum, hw_id, Discovery, BINARY_SIGNATURE, IPDS_SIGNATURE};
use runtime::pci::am::gc9::{self, Gc9};
use runtime::pci::am::{select_gen, AmGen, AmIp, PriorBoot, RegIo};
use runtime::pci::{
    PciDevice, PciError, PciOptions, PciResult, SysMem, BAR_DOORBELL, BAR_MMIO, BAR_VRAM,
};
use runtime::platform::{Mmio, MmioError};
use serde_json::Value;

const XCCS: usize = 6;
const AIDS: usize = 4;
const SDMAS: usize = 16;
const VRAM: u64 = 1 << 30;
/// MMMC_VM_FB_LOCATION_BASE / TOP answered by the device (fb_base field, 16 MiB units).
const FB_BASE: u32 = 0x8000;
const FB_TOP: u32 = 0x803f;

/// Blocks, their JSON, hardware id index and instance count on the test GPU.
/// (block, register JSON, version, instances).
type Block = (AmIp, &'static str, (u32, u32, u32), usize);

fn blocks(gc: (u32, u32, u32)) -> Vec<Block> {
    vec![
        (AmIp::Gc, "gc_9_4_3", gc, XCCS),
        (AmIp::Sdma0, "sdma_4_4_2", (4, 4, 2), SDMAS),
        (AmIp::Mmhub, "mmhub_1_8_0", (1, 8, 0), AIDS),
        (AmIp::Nbio, "nbio_7_9_0", (7, 9, 0), 1),
        (AmIp::Mp0, "mp_13_0_0", (13, 0, 6), 1),
        (AmIp::Mp1, "mp_11_0_0", (13, 0, 6), 1),
        (AmIp::Hdp, "hdp_4_4_2", (4, 4, 2), 1),
        (AmIp::Osssys, "osssys_4_4_2", (4, 4, 2), 1),
    ]
}

/// The test's own segment bases: unique per block, instance and segment (dwords).
fn base(ip_idx: usize, inst: usize, seg: usize) -> u32 {
    (((ip_idx * 20 + inst) * 10 + seg) * 0x10000) as u32
}

/// A discovery binary listing every instance (XCCs, MM hubs, SDMA engines), spread over `dies`
/// dies (MI300/MI350 list each AID's blocks on its own die) in turn.
fn discovery_table(gc: (u32, u32, u32), sdma: (u32, u32, u32)) -> Vec<u8> {
    discovery_table_dies(gc, sdma, 1)
}

fn discovery_table_dies(gc: (u32, u32, u32), sdma: (u32, u32, u32), dies: usize) -> Vec<u8> {
    let mut b = vec![0u8; runtime::pci::am::discovery::TABLE_SIZE];
    let p16 = |b: &mut Vec<u8>, at: usize, v: u16| b[at..at + 2].copy_from_slice(&v.to_le_bytes());
    let p32 = |b: &mut Vec<u8>, at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
    let (ipo, gco, size) = (0x40usize, 0x1c00usize, 0x1d00usize);
    p32(&mut b, 0, BINARY_SIGNATURE);
    p16(&mut b, 10, size as u16);
    p16(&mut b, 12, ipo as u16);
    p16(&mut b, 20, gco as u16);
    p32(&mut b, ipo, IPDS_SIGNATURE);
    p16(&mut b, ipo + 12, dies as u16);
    let mut all = Vec::new();
    for (k, (ip, _, v, count)) in blocks(gc).into_iter().enumerate() {
        let v = if ip == AmIp::Sdma0 { sdma } else { v };
        for i in 0..count {
            all.push((k, ip, v, i));
        }
    }
    let mut end = 0;
    for d in 0..dies {
        let die = 0x100 + d * 0x700;
        p16(&mut b, ipo + 14 + d * 4 + 2, die as u16);
        let mine: Vec<_> = all
            .iter()
            .enumerate()
            .filter(|(j, _)| j % dies == d)
            .map(|x| *x.1)
            .collect();
        p16(&mut b, die + 2, mine.len() as u16);
        let mut at = die + 4;
        for (k, ip, v, i) in mine {
            p16(&mut b, at, hw_id(ip));
            b[at + 2] = i as u8;
            b[at + 3] = 10;
            b[at + 4] = v.0 as u8;
            b[at + 5] = v.1 as u8;
            b[at + 6] = v.2 as u8;
            at += 8;
            for s in 0..10 {
                p32(&mut b, at, base(k, i, s));
                at += 4;
            }
        }
        end = at;
    }
    p16(&mut b, ipo + 6, (end - ipo) as u16);
    for (i, v) in [
        (0, 4u32),
        (1, 5),
        (11, 64),
        (12, 8),
        (13, 32),
        (14, 64),
        (16, 2),
    ] {
        p32(&mut b, gco + 12 + 4 * i, v);
    }
    let s = checksum(&b[ipo..end]);
    p16(&mut b, 14, s);
    let s = checksum(&b[10..size]);
    p16(&mut b, 8, s);
    b
}

/// Register name, block and instance of every absolute address, from the JSON (test-side map).
struct Names {
    at: HashMap<u32, (String, AmIp, usize)>,
    /// Fields (name, lo, hi) per register name.
    fields: HashMap<String, Vec<(String, u32, u32)>>,
}

fn names(dir: &std::path::Path, gc: (u32, u32, u32)) -> Names {
    let mut at = HashMap::new();
    let mut fields = HashMap::new();
    for (k, (ip, file, _, count)) in blocks(gc).into_iter().enumerate() {
        let text = std::fs::read_to_string(dir.join(format!("{file}.json"))).unwrap();
        let j: Value = serde_json::from_str(&text).unwrap();
        for (name, r) in j["registers"].as_object().unwrap() {
            let n = name
                .trim_start_matches("reg")
                .trim_start_matches("mm")
                .to_string();
            // The MP JSONs list both mailboxes; each block keeps its own.
            if (ip == AmIp::Mp0 && !n.starts_with("MP0_"))
                || (ip == AmIp::Mp1 && !n.starts_with("MP1_"))
            {
                continue;
            }
            let off = r["offset"].as_u64().unwrap() as u32;
            let seg = r["base_index"].as_u64().unwrap() as usize;
            for i in 0..count {
                at.entry(base(k, i, seg) + off)
                    .or_insert((n.clone(), ip, i));
            }
            let mut fs: Vec<(String, u32, u32)> = r["fields"]
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
            fs.sort_by_key(|f| f.1);
            fields.insert(n, fs);
        }
    }
    Names { at, fields }
}

impl Names {
    fn addr(&self, name: &str, inst: usize) -> u32 {
        *self
            .at
            .iter()
            .find(|(_, v)| v.0 == name && v.2 == inst)
            .unwrap_or_else(|| panic!("{name}[{inst}] not in the JSON"))
            .0
    }
    /// Encodes named fields with the JSON layout.
    fn enc(&self, reg: &str, f: &[(&str, u32)]) -> u32 {
        let fs = &self.fields[reg];
        f.iter().fold(0, |v, (n, x)| {
            let (_, lo, hi) = fs
                .iter()
                .find(|e| e.0 == *n)
                .unwrap_or_else(|| panic!("{reg}.{n}"));
            let w = hi - lo + 1;
            assert!(w == 32 || *x < (1 << w), "{reg}.{n}={x:#x} too wide");
            v | (x << lo)
        })
    }
    fn field(&self, reg: &str, v: u32, n: &str) -> u32 {
        let (_, lo, hi) = self.fields[reg]
            .iter()
            .find(|e| e.0 == n)
            .unwrap_or_else(|| panic!("{reg}.{n}"));
        let w = hi - lo + 1;
        if w == 32 {
            v
        } else {
            (v >> lo) & ((1 << w) - 1)
        }
    }
    fn decode(&self, reg: &str, v: u32) -> String {
        self.fields
            .get(reg)
            .map(|fs| {
                fs.iter()
                    .filter(|f| self.field(reg, v, &f.0) != 0)
                    .map(|f| format!("{}={:#x}", f.0, self.field(reg, v, &f.0)))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default()
    }
}

/// The test GPU's registers: a store answering reads with the last write, plus the SMU's answer
/// to a message and the RLC's acknowledge of a safe-mode request.
struct Regs {
    store: Mutex<HashMap<u32, u32>>,
    writes: Mutex<Vec<(u32, u32)>>,
    smu: (u32, u32, u32),
    safe_mode: Vec<u32>,
}

impl Mmio for Regs {
    fn addr(&self) -> u64 {
        0
    }
    fn size(&self) -> u64 {
        1 << 30
    }
    fn read_bytes(&self, offset: u64, out: &mut [u8]) -> Result<(), MmioError> {
        let v = *self
            .store
            .lock()
            .unwrap()
            .get(&((offset / 4) as u32))
            .unwrap_or(&0);
        out.copy_from_slice(&v.to_le_bytes()[..out.len()]);
        Ok(())
    }
    fn write_bytes(&self, offset: u64, data: &[u8]) -> Result<(), MmioError> {
        let reg = (offset / 4) as u32;
        let v = u32::from_le_bytes(data.try_into().unwrap());
        self.writes.lock().unwrap().push((reg, v));
        let mut s = self.store.lock().unwrap();
        s.insert(reg, v);
        let (m66, m82, m90) = self.smu;
        if reg == m66 {
            // GetDpmFreqByIndex: two levels (100, 200 MHz); every message answered "OK" (1).
            if v == gc9::msg::GET_DPM_FREQ_BY_INDEX {
                let p = *s.get(&m82).unwrap_or(&0);
                s.insert(
                    m82,
                    if p & 0xff == 0xff {
                        2
                    } else {
                        100 * ((p & 0xff) + 1)
                    },
                );
            }
            s.insert(m90, 1);
        }
        if self.safe_mode.contains(&reg) {
            s.insert(reg, v & !1);
        }
        Ok(())
    }
}

struct Gpu {
    regs: Arc<Regs>,
    names: Names,
    gc: (u32, u32, u32),
}

fn disc(gc: (u32, u32, u32), sdma: (u32, u32, u32)) -> Discovery {
    Discovery::parse(&discovery_table(gc, sdma), 0).unwrap()
}

fn gpu(gc: (u32, u32, u32)) -> Option<(Gpu, Gc9)> {
    let dir = testdata::require_shared("amd-registers")?;
    let names = names(&dir, gc);
    let regs = Arc::new(Regs {
        store: Mutex::new(HashMap::new()),
        writes: Mutex::new(Vec::new()),
        smu: (
            names.addr("MP1_SMN_C2PMSG_66", 0),
            names.addr("MP1_SMN_C2PMSG_82", 0),
            names.addr("MP1_SMN_C2PMSG_90", 0),
        ),
        safe_mode: (0..XCCS).map(|x| names.addr("RLC_SAFE_MODE", x)).collect(),
    });
    {
        let mut s = regs.store.lock().unwrap();
        s.insert(names.addr("MMMC_VM_FB_LOCATION_BASE", 0), FB_BASE);
        s.insert(names.addr("MMMC_VM_FB_LOCATION_TOP", 0), FB_TOP);
    }
    let d = disc(gc, (4, 4, 2));
    let io = RegIo::new(regs.clone());
    let vram: Arc<dyn Mmio> = Arc::new(Mem::new(VRAM, 0));
    let g = Gc9::new(io, vram, d, VRAM, 2000).unwrap();
    Some((Gpu { regs, names, gc }, g))
}

/// One expected write: register, instance, and what its value must be.
#[derive(Clone, Debug)]
enum Want {
    /// `.write(value)` or `.write(**fields)`: the whole value.
    Raw(u32),
    /// `.update(**fields)`: only these fields (the rest keep what the device had).
    Fields(Vec<(&'static str, u32)>),
    /// Bits of the value (a read-modify-write with a constant OR).
    Bits(u32, u32),
    /// An address of the driver's own allocation.
    Any,
}

#[derive(Clone, Debug)]
struct Exp {
    reg: String,
    inst: usize,
    /// Through BIF_BX0_PCIE_INDEX2/DATA2 to this AID (tinygrad indirect_wreg_pcie).
    aid: Option<u32>,
    want: Want,
}

/// A write as the device saw it, PCIe index/data pairs folded into one.
#[derive(Clone, Debug)]
struct Got {
    reg: String,
    inst: usize,
    aid: Option<u32>,
    v: u32,
}

fn got(g: &Gpu) -> Vec<Got> {
    let w = g.regs.writes.lock().unwrap().clone();
    let mut out = Vec::new();
    let (mut index, mut hi) = (0u64, 0u64);
    for (a, v) in w {
        let (n, _, i) = g
            .names
            .at
            .get(&a)
            .cloned()
            .unwrap_or((format!("{a:#x}"), AmIp::Gc, 0));
        match n.as_str() {
            "BIF_BX0_PCIE_INDEX2" => index = u64::from(v),
            "BIF_BX0_PCIE_INDEX2_HI" => hi = u64::from(v),
            "BIF_BX0_PCIE_DATA2" => {
                let byte = hi << 32 | index;
                let aid = if byte >> 34 & 1 == 1 {
                    (byte >> 32 & 3) as u32
                } else {
                    0
                };
                let reg = ((byte & 0xffff_ffff) / 4) as u32;
                let (rn, _, ri) =
                    g.names
                        .at
                        .get(&reg)
                        .cloned()
                        .unwrap_or((format!("{reg:#x}"), AmIp::Nbio, 0));
                out.push(Got {
                    reg: rn,
                    inst: ri,
                    aid: Some(aid),
                    v,
                });
            }
            _ => out.push(Got {
                reg: n,
                inst: i,
                aid: None,
                v,
            }),
        }
    }
    out
}

/// The differences between tinygrad's sequence and ours (empty: the same writes in the same order).
fn compare(g: &Gpu, exp: &[Exp], got: &[Got]) -> Vec<String> {
    let mut d = Vec::new();
    for (k, (e, w)) in exp.iter().zip(got).enumerate() {
        if e.reg != w.reg || e.inst != w.inst || e.aid != w.aid {
            d.push(format!(
                "write {k}: expected {}[{}]{:?}, got {}[{}]{:?}={:#x}",
                e.reg, e.inst, e.aid, w.reg, w.inst, w.aid, w.v
            ));
            break;
        }
        let bad = match &e.want {
            Want::Raw(v) => {
                (*v != w.v).then(|| format!("{:#x} ({})", v, g.names.decode(&e.reg, *v)))
            }
            Want::Fields(f) => {
                let wrong: Vec<String> = f
                    .iter()
                    .filter(|(n, x)| g.names.field(&e.reg, w.v, n) != *x)
                    .map(|(n, x)| format!("{n}={x:#x}"))
                    .collect();
                (!wrong.is_empty()).then(|| wrong.join(" "))
            }
            Want::Bits(m, v) => (w.v & m != *v).then(|| format!("bits {m:#x} = {v:#x}")),
            Want::Any => None,
        };
        if let Some(b) = bad {
            d.push(format!(
                "write {k} {}[{}]: expected {b}, got {:#x} ({})",
                e.reg,
                e.inst,
                w.v,
                g.names.decode(&e.reg, w.v)
            ));
        }
    }
    if exp.len() != got.len() && d.is_empty() {
        d.push(format!("{} writes expected, {} made", exp.len(), got.len()));
    }
    d
}

/// tinygrad's AM sequence for GC 9.4.3 / 9.5.0 with this GPU's XCCs, AIDs and SDMA engines.
fn expected(g: &Gpu, fb_base: u64, fb_end: u64) -> Vec<Exp> {
    let mut e = Vec::new();
    let mut w = |reg: &str, inst: usize, want: Want| {
        e.push(Exp {
            reg: reg.into(),
            inst,
            aid: None,
            want,
        })
    };
    let n = &g.names;
    // AM_SOC.init_hw, NBIO 7.9: doorbell fence of the absent XCCs (0xff & ~live), the slave mode of
    // the other AIDs through indirect_wreg_pcie, GFX interrupt monitor, doorbell access, aperture.
    let live: u32 = (0..XCCS).map(|i| 1 << i).sum();
    w("XCC_DOORBELL_FENCE", 0, Want::Raw(0xff & !live));
    let mut e2 = std::mem::take(&mut e);
    for aid in 1..AIDS as u32 {
        e2.push(Exp {
            reg: "XCC_DOORBELL_FENCE".into(),
            inst: 0,
            aid: Some(aid),
            want: Want::Raw(n.enc("XCC_DOORBELL_FENCE", &[("shub_slv_mode", 1)])),
        });
    }
    let mut e = e2;
    let w = |e: &mut Vec<Exp>, reg: &str, inst: usize, want: Want| {
        e.push(Exp {
            reg: reg.into(),
            inst,
            aid: None,
            want,
        })
    };
    w(&mut e, "BIFC_GFX_INT_MONITOR_MASK", 0, Want::Raw(0x7ff));
    w(&mut e, "BIFC_DOORBELL_ACCESS_EN_PF", 0, Want::Raw(0xfffff));
    w(
        &mut e,
        "RCC_DEV0_EPF0_RCC_DOORBELL_APER_EN",
        0,
        Want::Raw(1),
    );
    // AM_GMC.init_hub: every instance; trans_further (GC < 10): fragment processing on,
    // bank_select 12, bigk fragment 9, no VM_L2_CNTL5, context depth 2 - PDB2 = 2, block size 9.
    let hub = |e: &mut Vec<Exp>, p: &str, i: usize| {
        let (mc, vm) = (format!("{p}MC_VM_"), format!("{p}VM_"));
        let mut w = |r: String, want: Want| {
            e.push(Exp {
                reg: r,
                inst: i,
                aid: None,
                want,
            })
        };
        w(format!("{mc}AGP_BASE"), Want::Raw(0));
        w(format!("{mc}AGP_BOT"), Want::Raw(0xffffff));
        w(format!("{mc}AGP_TOP"), Want::Raw(0));
        w(
            format!("{mc}SYSTEM_APERTURE_LOW_ADDR"),
            Want::Raw((fb_base >> 18) as u32),
        );
        w(
            format!("{mc}SYSTEM_APERTURE_HIGH_ADDR"),
            Want::Raw((fb_end >> 18) as u32),
        );
        w(format!("{mc}SYSTEM_APERTURE_DEFAULT_ADDR_LSB"), Want::Any);
        w(format!("{mc}SYSTEM_APERTURE_DEFAULT_ADDR_MSB"), Want::Any);
        w(
            format!("{vm}L2_PROTECTION_FAULT_DEFAULT_ADDR_LO32"),
            Want::Any,
        );
        w(
            format!("{vm}L2_PROTECTION_FAULT_DEFAULT_ADDR_HI32"),
            Want::Any,
        );
        w(
            format!("{vm}L2_PROTECTION_FAULT_CNTL2"),
            Want::Fields(vec![("active_page_migration_pte_read_retry", 1)]),
        );
        w(
            format!("{mc}MX_L1_TLB_CNTL"),
            Want::Fields(vec![
                ("enable_l1_tlb", 1),
                ("system_access_mode", 3),
                ("enable_advanced_driver_model", 1),
                ("system_aperture_unmapped_access", 0),
                ("mtype", 3), // soc_9 MTYPE_UC
            ]),
        );
        w(
            format!("{vm}L2_CNTL"),
            Want::Fields(vec![
                ("enable_l2_cache", 1),
                ("enable_default_page_out_to_system_memory", 1),
                ("l2_pde0_cache_tag_generation_mode", 0),
                ("pde_fault_classification", 0),
                ("context1_identity_access_mode", 1),
                ("identity_mode_fragment_size", 0),
                ("enable_l2_fragment_processing", 1),
            ]),
        );
        w(
            format!("{vm}L2_CNTL2"),
            Want::Fields(vec![
                ("invalidate_all_l1_tlbs", 1),
                ("invalidate_l2_cache", 1),
            ]),
        );
        let l2c3 = format!("{vm}L2_CNTL3");
        let v = n.enc(
            &l2c3,
            &[
                ("l2_cache_4k_associativity", 1),
                ("l2_cache_bigk_associativity", 1),
                ("bank_select", 12),
                ("l2_cache_bigk_fragment_size", 9),
            ],
        );
        w(l2c3, Want::Raw(v));
        let l2c4 = format!("{vm}L2_CNTL4");
        let v = n.enc(&l2c4, &[("l2_cache_4k_partition_count", 1)]);
        w(l2c4, Want::Raw(v));
        // enable_vm_addressing: VA window 0x2000_0000_0000..0x7fff_ffff_ffff in pages, root | valid.
        let (s, en) = (0x2000_0000_0000u64 >> 12, 0x7fff_ffff_ffffu64 >> 12);
        w(
            format!("{vm}CONTEXT0_PAGE_TABLE_START_ADDR_LO32"),
            Want::Raw(s as u32),
        );
        w(
            format!("{vm}CONTEXT0_PAGE_TABLE_START_ADDR_HI32"),
            Want::Raw((s >> 32) as u32),
        );
        w(
            format!("{vm}CONTEXT0_PAGE_TABLE_END_ADDR_LO32"),
            Want::Raw(en as u32),
        );
        w(
            format!("{vm}CONTEXT0_PAGE_TABLE_END_ADDR_HI32"),
            Want::Raw((en >> 32) as u32),
        );
        w(
            format!("{vm}CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32"),
            Want::Bits(0xfff, 1),
        );
        w(format!("{vm}CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32"), Want::Any);
        let ctx = format!("{vm}CONTEXT0_CNTL");
        let mut f: Vec<(String, u32)> = [
            "pde0",
            "dummy_page",
            "range",
            "valid",
            "read",
            "write",
            "execute",
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
            ("enable_context".into(), 1),
            ("page_table_depth".into(), 2),
            ("page_table_block_size".into(), 9),
        ]);
        let f: Vec<(&str, u32)> = f.iter().map(|(a, b)| (a.as_str(), *b)).collect();
        // tinygrad: write(0x1800000, **fields); the raw bits are secure_* on gc_9_4_3.
        let v = 0x180_0000 | n.enc(&ctx, &f);
        w(ctx, Want::Raw(v));
        for (r, v) in [
            ("L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR", 0xf_ffff_ffffu64),
            ("L2_CONTEXT1_IDENTITY_APERTURE_HIGH_ADDR", 0),
            ("L2_CONTEXT_IDENTITY_PHYSICAL_OFFSET", 0),
        ] {
            w(format!("{vm}{r}_LO32"), Want::Raw(v as u32));
            w(format!("{vm}{r}_HI32"), Want::Raw((v >> 32) as u32));
        }
        for eng in 0..18 {
            w(
                format!("{vm}INVALIDATE_ENG{eng}_ADDR_RANGE_LO32"),
                Want::Raw(0xffff_ffff),
            );
            w(
                format!("{vm}INVALIDATE_ENG{eng}_ADDR_RANGE_HI32"),
                Want::Raw(0x1f),
            );
        }
    };
    // AM_GMC.init_hw: init_hub("MM", inst_cnt=vmhubs), one MM hub per AID.
    for i in 0..AIDS {
        hub(&mut e, "MM", i);
    }
    // AM_IH.init_hw: rings 0 and 1 (OSSSYS 4.4.2: no storm control), then enable.
    for (suf, ring0) in [("", true), ("_RING1", false)] {
        w(&mut e, &format!("IH_RB_BASE{suf}"), 0, Want::Any);
        w(&mut e, &format!("IH_RB_BASE_HI{suf}"), 0, Want::Any);
        let cntl = format!("IH_RB_CNTL{suf}");
        let mut f = vec![
            ("mc_space", 4),
            ("wptr_overflow_clear", 1),
            ("rb_size", 16),
            ("mc_snoop", 1),
        ];
        if ring0 {
            f.extend([("wptr_overflow_enable", 1), ("rptr_rearm", 1)]);
        } else {
            f.push(("rb_full_drain_enable", 1));
        }
        let v = n.enc(&cntl, &f);
        w(&mut e, &cntl, 0, Want::Raw(v));
        if ring0 {
            w(&mut e, "IH_RB_WPTR_ADDR_LO", 0, Want::Any);
            w(&mut e, "IH_RB_WPTR_ADDR_HI", 0, Want::Any);
        }
        w(&mut e, &format!("IH_RB_WPTR{suf}"), 0, Want::Raw(0));
        w(&mut e, &format!("IH_RB_RPTR{suf}"), 0, Want::Raw(0));
        w(&mut e, &format!("IH_DOORBELL_RPTR{suf}"), 0, Want::Raw(0));
    }
    w(
        &mut e,
        "IH_RB_CNTL",
        0,
        Want::Fields(vec![("rb_enable", 1), ("enable_intr", 1)]),
    );
    w(
        &mut e,
        "IH_RB_CNTL_RING1",
        0,
        Want::Fields(vec![("rb_enable", 1)]),
    );
    // AM_PSP.init_hw: not done yet (A60). AM_SMU.init_hw: smu_13_0_6 SetDriverDramAddrHigh (0xD),
    // SetDriverDramAddrLow (0xE), EnableAllSmuFeatures (0x5); each message is _smu_cmn_send_msg:
    // C2PMSG_90 = 0, C2PMSG_82 = param, C2PMSG_66 = message.
    let smu = |e: &mut Vec<Exp>, m: u32, p: Want| {
        e.push(Exp {
            reg: "MP1_SMN_C2PMSG_90".into(),
            inst: 0,
            aid: None,
            want: Want::Raw(0),
        });
        e.push(Exp {
            reg: "MP1_SMN_C2PMSG_82".into(),
            inst: 0,
            aid: None,
            want: p,
        });
        e.push(Exp {
            reg: "MP1_SMN_C2PMSG_66".into(),
            inst: 0,
            aid: None,
            want: Want::Raw(m),
        });
    };
    smu(&mut e, 0xD, Want::Raw((fb_base >> 32) as u32));
    smu(&mut e, 0xE, Want::Any);
    smu(&mut e, 0x5, Want::Raw(0));
    // AM_GFX.init_hw: GC hub per XCC, _config_mec (GC < 10: CP_MEC_CNTL), golden TCP_CNTL,
    // RLC_CNTL, RLC_SRM_CNTL, RLC_SPM_MC_CNTL, then per XCC the 9.4.3/9.5.0 golden GB_ADDR_CONFIG,
    // TCP_UTCL1_CNTL2.spare, GRBM read timeout, SH_MEM per VMID, MEC doorbell range; _enable_mec.
    for x in 0..XCCS {
        hub(&mut e, "GC", x);
    }
    for x in 0..XCCS {
        w(
            &mut e,
            "CP_MEC_CNTL",
            x,
            Want::Fields(vec![
                ("mec_invalidate_icache", 1),
                ("mec_me1_pipe0_reset", 1),
                ("mec_me2_pipe0_reset", 1),
                ("mec_me1_halt", 1),
                ("mec_me2_halt", 1),
            ]),
        );
    }
    for x in 0..XCCS {
        w(&mut e, "TCP_CNTL", x, Want::Bits(0x2000_0000, 0x2000_0000));
    }
    for x in 0..XCCS {
        w(&mut e, "RLC_CNTL", x, Want::Raw(1));
    }
    for x in 0..XCCS {
        w(
            &mut e,
            "RLC_SRM_CNTL",
            x,
            Want::Fields(vec![("srm_enable", 1), ("auto_incr_addr", 1)]),
        );
    }
    for x in 0..XCCS {
        w(&mut e, "RLC_SPM_MC_CNTL", x, Want::Raw(0xf));
    }
    let f8 = g.gc.1 == 4;
    for x in 0..XCCS {
        w(&mut e, "GB_ADDR_CONFIG", x, Want::Raw(0x2a11_4042));
        w(
            &mut e,
            "TCP_UTCL1_CNTL2",
            x,
            Want::Fields(vec![("spare", 1)]),
        );
        w(
            &mut e,
            "GRBM_CNTL",
            x,
            Want::Fields(vec![("read_timeout", 0xff)]),
        );
        for vmid in 0..16 {
            w(
                &mut e,
                "GRBM_GFX_CNTL",
                x,
                Want::Raw(n.enc("GRBM_GFX_CNTL", &[("vmid", vmid)])),
            );
            let mut f = vec![
                ("retry_disable", 1),
                ("address_mode", 0),
                ("alignment_mode", 3),
            ];
            if f8 {
                f.push(("f8_mode", 1));
            }
            w(
                &mut e,
                "SH_MEM_CONFIG",
                x,
                Want::Raw(n.enc("SH_MEM_CONFIG", &f)),
            );
            w(
                &mut e,
                "SH_MEM_BASES",
                x,
                Want::Raw(n.enc("SH_MEM_BASES", &[("shared_base", 1), ("private_base", 2)])),
            );
        }
        w(&mut e, "GRBM_GFX_CNTL", x, Want::Raw(0));
        w(
            &mut e,
            "CP_MEC_DOORBELL_RANGE_LOWER",
            x,
            Want::Raw(0x100 * x as u32),
        );
        w(
            &mut e,
            "CP_MEC_DOORBELL_RANGE_UPPER",
            x,
            Want::Raw(0x100 * x as u32 + 0xf8),
        );
    }
    for x in 0..XCCS {
        w(&mut e, "CP_MEC_CNTL", x, Want::Raw(0));
    }
    // (xccs > 1: tinygrad's PSP spatial-partition command; not done yet, A60.)
    // AM_SDMA.init_hw, SDMA 4.4 (< 5): SDMA_CNTL of the 16 engines, then NBIO 7.9 doorbells: per
    // AID four DOORBELL0_CTRL_ENTRY (range 20 at (sDMA_ENGINE0 + (entry-1) * 10) * 2) and S2A ports.
    for s in 0..SDMAS {
        w(
            &mut e,
            "SDMA_CNTL",
            s,
            Want::Fields(vec![("trap_enable", 1), ("utc_l1_enable", 1)]),
        );
    }
    for aid in 0..AIDS {
        for (dev, (port, awid, off, hi)) in [
            (1u32, 0xeu32, 0xeu32, 1u32),
            (2, 8, 8, 2),
            (5, 9, 9, 8),
            (6, 0xa, 0xa, 9),
        ]
        .into_iter()
        .enumerate()
        {
            let entry = dev + 1 + 4 * aid;
            let r = format!("DOORBELL0_CTRL_ENTRY_{entry}");
            let v = n.enc(
                &r,
                &[
                    (&format!("bif_doorbell{entry}_range_size_entry"), 20),
                    (
                        &format!("bif_doorbell{entry}_range_offset_entry"),
                        (256 + (entry as u32 - 1) * 0xa) * 2,
                    ),
                ],
            );
            w(&mut e, &r, 0, Want::Raw(v));
            let s2a = format!("S2A_DOORBELL_ENTRY_{port}_CTRL");
            let p = |x: &str| format!("s2a_doorbell_port{port}_{x}");
            let v = n.enc(
                &s2a,
                &[
                    (&p("enable"), 1),
                    (&p("awid"), awid),
                    (&p("range_size"), 4),
                    (&p("awaddr_31_28_value"), hi),
                    (&p("range_offset"), off),
                ],
            );
            e.push(Exp {
                reg: s2a,
                inst: 0,
                aid: Some(aid as u32),
                want: Want::Raw(v),
            });
        }
    }
    // AM_SMU.set_clocks(level=-1): read_clocks of UCLK, FCLK, SOCCLK (no GFXCLK on 13.0.6):
    // GetDpmFreqByIndex (0x17) count then each level, then SetSoftMinByFreq (0x13) at the top level;
    // no SetSoftMax on GC < 10. The device reports levels 100 and 200 MHz.
    for clk in [3u32, 4, 2] {
        smu(&mut e, 0x17, Want::Raw(clk << 16 | 0xff));
        for i in 0..2 {
            smu(&mut e, 0x17, Want::Raw(clk << 16 | i));
        }
    }
    for clk in [3u32, 4, 2] {
        smu(&mut e, 0x13, Want::Raw(clk << 16 | 200));
    }
    // AM_SOC.set_clockgating_state: HDP 4.4.2 < 5.2.1, nothing. AM_GFX.set_clockgating_state
    // per XCC (gfx9: no SDMA RLC CGCG, gfxip_mgls/rep_fgcg overrides cleared; no MM_ATC_L2_MISC_CG).
    for x in 0..XCCS {
        w(
            &mut e,
            "RLC_SAFE_MODE",
            x,
            Want::Raw(n.enc("RLC_SAFE_MODE", &[("message", 1), ("cmd", 1)])),
        );
        w(
            &mut e,
            "RLC_CGCG_CGLS_CTRL",
            x,
            Want::Fields(vec![
                ("cgcg_gfx_idle_threshold", 0x36),
                ("cgcg_en", 1),
                ("cgls_rep_compansat_delay", 0xf),
                ("cgls_en", 1),
            ]),
        );
        w(
            &mut e,
            "CP_RB_WPTR_POLL_CNTL",
            x,
            Want::Fields(vec![("poll_frequency", 0x100), ("idle_poll_count", 0x90)]),
        );
        w(
            &mut e,
            "CP_INT_CNTL",
            x,
            Want::Fields(vec![
                ("cntx_busy_int_enable", 1),
                ("cntx_empty_int_enable", 1),
                ("cmp_busy_int_enable", 1),
            ]),
        );
        w(
            &mut e,
            "RLC_CGTT_MGCG_OVERRIDE",
            x,
            Want::Fields(vec![
                ("gfxip_mgls_override", 0),
                ("gfxip_rep_fgcg_override", 0),
                ("gfxip_fgcg_override", 0),
                ("grbm_cgtt_sclk_override", 0),
                ("rlc_cgtt_sclk_override", 0),
                ("gfxip_mgcg_override", 0),
                ("gfxip_cgls_override", 0),
                ("gfxip_cgcg_override", 0),
            ]),
        );
        w(
            &mut e,
            "RLC_SAFE_MODE",
            x,
            Want::Raw(n.enc("RLC_SAFE_MODE", &[("cmd", 1)])),
        );
    }
    // AMDev.__init__: boot stamp (ours differs from tinygrad's 0xA0000008, A61), then "running".
    w(&mut e, "SCRATCH_REG7", 0, Want::Any);
    w(&mut e, "SCRATCH_REG6", 0, Want::Raw(1));
    e
}

fn boot(gc: (u32, u32, u32)) -> Option<(Gpu, Gc9, Vec<Got>)> {
    let (g, mut dev) = gpu(gc)?;
    dev.init_blocks().unwrap();
    let w = got(&g);
    Some((g, dev, w))
}

#[test]
fn gc943_bring_up_writes_tinygrads_sequence() {
    let Some((g, dev, got)) = boot((9, 4, 3)) else {
        return;
    };
    assert_eq!((dev.xccs, dev.vmhubs, dev.sdmas), (XCCS, AIDS, SDMAS));
    assert_eq!(dev.fb_base, u64::from(FB_BASE) << 24);
    let exp = expected(&g, u64::from(FB_BASE) << 24, u64::from(FB_TOP) << 24);
    let d = compare(&g, &exp, &got);
    assert!(
        d.is_empty(),
        "{} differences from tinygrad's GC 9.4.3 sequence:\n{}",
        d.len(),
        d.join("\n")
    );
    assert!(exp.len() > 1000, "{} writes", exp.len());
}

#[test]
fn gc950_bring_up_has_no_f8_mode() {
    let Some((g, _dev, got)) = boot((9, 5, 0)) else {
        return;
    };
    let exp = expected(&g, u64::from(FB_BASE) << 24, u64::from(FB_TOP) << 24);
    let d = compare(&g, &exp, &got);
    assert!(d.is_empty(), "{}", d.join("\n"));
    let sh = got.iter().find(|w| w.reg == "SH_MEM_CONFIG").unwrap();
    assert_eq!(g.names.field("SH_MEM_CONFIG", sh.v, "f8_mode"), 0);
}

#[test]
fn one_wrong_field_is_reported() {
    let Some((g, _dev, mut got)) = boot((9, 4, 3)) else {
        return;
    };
    let exp = expected(&g, u64::from(FB_BASE) << 24, u64::from(FB_TOP) << 24);
    // XCC 3's GC hub L2 bank_select written as GC 10+'s 9 instead of gfx9's 12.
    let k = got
        .iter()
        .position(|w| w.reg == "GCVM_L2_CNTL3" && w.inst == 3)
        .unwrap();
    let lo = g.names.fields["GCVM_L2_CNTL3"]
        .iter()
        .find(|f| f.0 == "bank_select")
        .unwrap()
        .1;
    got[k].v = (got[k].v & !(0x3f << lo)) | (9 << lo);
    let d = compare(&g, &exp, &got);
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(
        d[0].contains("GCVM_L2_CNTL3[3]") && d[0].contains("bank_select=0x9"),
        "{}",
        d[0]
    );
    // A field of an update: CP_INT_CNTL.cmp_busy_int_enable cleared on XCC 5.
    let Some((_, _, mut got)) = boot((9, 4, 3)) else {
        return;
    };
    let k = got
        .iter()
        .position(|w| w.reg == "CP_INT_CNTL" && w.inst == 5)
        .unwrap();
    let m = 1
        << g.names.fields["CP_INT_CNTL"]
            .iter()
            .find(|f| f.0 == "cmp_busy_int_enable")
            .unwrap()
            .1;
    got[k].v &= !m;
    let d = compare(&g, &exp, &got);
    assert!(
        d.len() == 1 && d[0].contains("cmp_busy_int_enable=0x1"),
        "{d:?}"
    );
    // A write missing: the order check names the first register that moved.
    let Some((_, _, mut got)) = boot((9, 4, 3)) else {
        return;
    };
    let k = got
        .iter()
        .position(|w| w.reg == "SDMA_CNTL" && w.inst == 7)
        .unwrap();
    got.remove(k);
    let d = compare(&g, &exp, &got);
    assert!(d[0].contains("expected SDMA_CNTL[7]"), "{d:?}");
}

#[test]
fn gc9_versions_select_the_gc9_tables_and_others_are_refused() {
    assert_eq!(select_gen(&disc((9, 4, 3), (4, 4, 2))).unwrap(), AmGen::Gc9);
    assert_eq!(select_gen(&disc((9, 5, 0), (4, 4, 2))).unwrap(), AmGen::Gc9);
    // Every XCC, MM hub and SDMA engine of the table is kept.
    let d = disc((9, 4, 3), (4, 4, 2));
    assert_eq!(d.instances(AmIp::Gc).len(), XCCS);
    assert_eq!(d.instances(AmIp::Mmhub).len(), AIDS);
    assert_eq!(d.instances(AmIp::Sdma0).len(), SDMAS);
    // The same blocks spread over 4 dies (one per AID): every instance is found, with its bases.
    let d4 = Discovery::parse(&discovery_table_dies((9, 4, 3), (4, 4, 2), 4), 0).unwrap();
    assert_eq!(d4.ips, d.ips);
    // An MI350's set (as the emulated gfx950 reports it): versions tinygrad drives with the
    // nearest lower table of the same major version.
    let mut d = disc((9, 5, 0), (4, 4, 5));
    for (ip, v) in [
        (AmIp::Mmhub, (1, 8, 1)),
        (AmIp::Mp0, (13, 0, 12)),
        (AmIp::Mp1, (13, 0, 12)),
        (AmIp::Hdp, (4, 4, 5)),
        (AmIp::Osssys, (4, 4, 5)),
    ] {
        for i in d.ips.values_mut().filter(|i| i.hw_id == hw_id(ip)) {
            i.version = v;
        }
    }
    assert_eq!(select_gen(&d).unwrap(), AmGen::Gc9);
    assert!(!gc9::firmware_files(&d)
        .unwrap()
        .iter()
        .any(|f| f.starts_with("smu_")));
    // GC 9.4.2 (MI250) and an SDMA of another major version: refused, naming the version.
    let e = select_gen(&disc((9, 4, 2), (4, 4, 2)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("GC 9.4.2"), "{e}");
    let e = select_gen(&disc((9, 4, 3), (5, 0, 0)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("SDMA0 5.0.0"), "{e}");
}

#[test]
fn missing_firmware_is_named_with_its_package() {
    let d = disc((9, 4, 3), (4, 4, 2));
    let files = gc9::firmware_files(&d).unwrap();
    assert_eq!(
        files,
        [
            "psp_13_0_6_sos.bin",
            "smu_13_0_6.bin",
            "sdma_4_4_2.bin",
            "gc_9_4_3_mec.bin",
            "gc_9_4_3_rlc.bin"
        ]
    );
    let dir = std::env::temp_dir().join(format!("wavescope-gc9fw-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for f in &files[..3] {
        std::fs::write(dir.join(f), b"x").unwrap();
    }
    let e = gc9::check_firmware(&dir, &d).unwrap_err();
    assert!(
        matches!(&e, PciError::Firmware { file, .. } if file.ends_with("gc_9_4_3_mec.bin")),
        "{e}"
    );
    assert!(e.to_string().contains("firmware-amd-graphics"), "{e}");
    for f in &files[3..] {
        std::fs::write(dir.join(f), b"x").unwrap();
    }
    gc9::check_firmware(&dir, &d).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn prior_boot_and_hive_are_read_for_this_family() {
    let Some((g, mut dev)) = gpu((9, 4, 3)) else {
        return;
    };
    let set = |n: &str, v: u32| {
        g.regs.store.lock().unwrap().insert(g.names.addr(n, 0), v);
    };
    // Our stamp with the "running" flag still set: a session that did not tear down.
    set("SCRATCH_REG7", runtime::pci::am::AM_VERSION);
    set("SCRATCH_REG6", 1);
    dev.init_blocks().unwrap();
    assert_eq!(dev.prior_boot, PriorBoot::Dirty);
    set("SCRATCH_REG6", 0);
    set("GCVM_L2_PROTECTION_FAULT_STATUS", 0);
    dev.init_blocks().unwrap();
    assert_eq!(dev.prior_boot, PriorBoot::Clean);
    set("GCVM_L2_PROTECTION_FAULT_STATUS", 1);
    set("SCRATCH_REG6", 0);
    dev.init_blocks().unwrap();
    assert_eq!(dev.prior_boot, PriorBoot::Dirty);

    // An XGMI hive (LFB size and regions set) is refused before any write.
    let Some((g, _)) = gpu((9, 4, 3)) else { return };
    let io = RegIo::new(g.regs.clone());
    let cntl = g.names.enc(
        "MMMC_VM_XGMI_LFB_CNTL",
        &[("pf_lfb_region", 1), ("pf_max_region", 3)],
    );
    g.regs
        .store
        .lock()
        .unwrap()
        .insert(g.names.addr("MMMC_VM_XGMI_LFB_CNTL", 0), cntl);
    g.regs
        .store
        .lock()
        .unwrap()
        .insert(g.names.addr("MMMC_VM_XGMI_LFB_SIZE", 0), 0x40);
    g.regs.writes.lock().unwrap().clear();
    let vram: Arc<dyn Mmio> = Arc::new(Mem::new(VRAM, 0));
    let e = Gc9::new(io, vram, disc((9, 4, 3), (4, 4, 2)), VRAM, 100)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("XGMI hive"), "{e}");
    assert!(g.regs.writes.lock().unwrap().is_empty());
}

/// The test GPU as a PCI device for `AmDevice::boot` (BAR5 registers, BAR0 VRAM with the table).
struct Pci {
    regs: Arc<Regs>,
    vram: Arc<Mem>,
    doorbells: Arc<Mem>,
}

impl PciDevice for Pci {
    fn bus_id(&self) -> String {
        "test:gc9".into()
    }
    fn config_read(&self, _offset: u16, _len: u8) -> PciResult<u32> {
        Ok(0)
    }
    fn config_write(&self, _offset: u16, _len: u8, _value: u32) -> PciResult<()> {
        Ok(())
    }
    fn bar_len(&self, bar: u8) -> u64 {
        match bar {
            BAR_VRAM => VRAM,
            BAR_DOORBELL => 1 << 20,
            BAR_MMIO => 1 << 30,
            _ => 0,
        }
    }
    fn bar(&self, bar: u8) -> PciResult<Arc<dyn Mmio>> {
        match bar {
            BAR_VRAM => Ok(self.vram.clone()),
            BAR_DOORBELL => Ok(self.doorbells.clone()),
            BAR_MMIO => Ok(self.regs.clone()),
            _ => Err(PciError::NoDevice {
                detail: format!("no BAR {bar}"),
            }),
        }
    }
    fn alloc_sysmem(&self, size: u64) -> PciResult<SysMem> {
        Err(PciError::NoDevice {
            detail: format!("no system memory ({size} bytes) in this test"),
        })
    }
    fn free_sysmem(&self, _mem: &SysMem) {}
    fn wait_interrupt(&self, _timeout_ms: u32) -> PciResult<bool> {
        Ok(false)
    }
}

#[test]
fn the_generic_boot_names_missing_then_unparsable_firmware_without_writing() {
    let Some((g, _)) = gpu((9, 4, 3)) else { return };
    // RCC_CONFIG_MEMSIZE (dword 0xDE3, before discovery): VRAM in MiB; the table at VRAM - 64 KiB.
    g.regs
        .store
        .lock()
        .unwrap()
        .insert(0xDE3, (VRAM >> 20) as u32);
    let vram = Arc::new(Mem::new(VRAM, 0));
    vram.write_bytes(VRAM - (64 << 10), &discovery_table((9, 4, 3), (4, 4, 2)))
        .unwrap();
    g.regs.writes.lock().unwrap().clear();
    let pci: Arc<dyn PciDevice> = Arc::new(Pci {
        regs: g.regs.clone(),
        vram,
        doorbells: Arc::new(Mem::new(1 << 20, 0)),
    });
    let dir = std::env::temp_dir().join(format!("wavescope-gc9boot-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let opts = PciOptions {
        firmware_dir: dir.clone(),
        ..Default::default()
    };
    let e = runtime::pci::am::AmDevice::boot(pci.clone(), &opts)
        .err()
        .unwrap();
    assert!(
        matches!(&e, PciError::Firmware { file, .. } if file.ends_with("psp_13_0_6_sos.bin")),
        "{e}"
    );
    let d = disc((9, 4, 3), (4, 4, 2));
    for f in gc9::firmware_files(&d).unwrap() {
        std::fs::write(dir.join(f), b"x").unwrap();
    }
    // Files that are there but no firmware: the parse names the first, before any write.
    let e = runtime::pci::am::AmDevice::boot(pci, &opts).err().unwrap();
    assert!(
        matches!(&e, PciError::Firmware { file, msg } if file.ends_with("psp_13_0_6_sos.bin") && msg.contains("offset")),
        "{e}"
    );
    assert!(
        g.regs.writes.lock().unwrap().is_empty(),
        "the refusal wrote registers"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
