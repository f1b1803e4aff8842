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
//! the bring-up tests in emu/tests/pci_gc9_tinygrad.rs do (common/gc9_am.rs).

#[path = "common/gc9_am.rs"]
mod gc9_am;

use std::collections::HashMap;

use gc9_am::{copy_round_trip, mi350, open, Session, RING, RING_BYTES, RPTR, WPTR};
use runtime::pci::am::sdma::v4;
use runtime::pci::am::AmIp;
use runtime::queue::CopyCmds;
use serde_json::Value;

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

fn boot() -> Session {
    let (gpu, fw) = mi350();
    // The session's BAR views keep the device; the firmware is read at boot only.
    open(&gpu, fw.path()).unwrap()
}

/// (name, instance) of a recorded write, by the JSON offsets at the discovered SDMA bases.
fn names_of(b: &Session, j: &Json, w: &[(u32, u32)]) -> Vec<(String, usize, u32)> {
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
    let (gpu, fw) = mi350();
    let s = open(&gpu, fw.path()).unwrap();
    copy_round_trip(&gpu, &s.g);
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
