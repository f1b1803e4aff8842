//! GMC page tables: VRAM and system ranges of many sizes are mapped by the driver; every 4 KiB
//! page is then translated by walking the tables the emulated GMC reads (in emulated VRAM), and
//! must land on the physical page the driver chose and that the CPU view wrote.

mod common;

use common::boot_pci;
use emu::mem::PHYS_VRAM;
use emu::pci::{EmuPciConfig, EmuPciGpu};
use emu::EmuArch;
use runtime::pci::am::gmc::pte;
use runtime::pci::iface::PciIface;
use runtime::platform::{AllocKind, GpuBuffer, GpuIface};

fn boot() -> (PciIface, EmuPciGpu) {
    let (iface, gpu) = boot_pci(EmuPciConfig::new(EmuArch::Gfx1100));
    (iface.unwrap(), gpu)
}

const PAGE: u64 = 0x1000;

/// The physical key the driver's mapping gives for byte `off` of a buffer.
fn expected_key(iface: &PciIface, b: &GpuBuffer, off: u64) -> u64 {
    let m = iface.mapping(b.handle).expect("mapping recorded");
    let mut at = 0;
    for r in &m.runs {
        if off < at + r.len {
            let p = r.addr + (off - at);
            return if r.system { p } else { PHYS_VRAM + p };
        }
        at += r.len;
    }
    panic!("offset {off:#x} beyond the mapping");
}

#[test]
fn every_page_of_every_size_translates_to_its_backing() {
    let (mut iface, gpu) = boot();
    let sizes: [u64; 10] = [
        PAGE,
        2 * PAGE,
        3 * PAGE,
        17 * PAGE,
        (1 << 20) + PAGE,
        2 << 20,
        (2 << 20) + 5 * PAGE,
        4 << 20,
        (6 << 20) + 3 * PAGE,
        9 << 20,
    ];
    let mut bufs = Vec::new();
    for (i, &sz) in sizes.iter().enumerate() {
        for kind in [AllocKind::VRAM_CPU, AllocKind::HOST, AllocKind::UNCACHED] {
            if kind != AllocKind::VRAM_CPU && sz > (4 << 20) {
                continue;
            }
            let b = iface.alloc(sz, kind).unwrap();
            // A distinct tag at the start of every page, written through the CPU view.
            let cpu = b.cpu().unwrap().clone();
            for p in 0..sz / PAGE {
                cpu.write64(p * PAGE, ((i as u64) << 48) | (b.va + p * PAGE))
                    .unwrap();
            }
            bufs.push(b);
        }
    }
    let mut huge = 0;
    let mut pages = 0;
    for b in &bufs {
        for p in 0..b.size / PAGE {
            let va = b.va + p * PAGE;
            let t = gpu
                .translate(va)
                .unwrap_or_else(|| panic!("{:?}: VA {va:#x} not mapped", b.kind));
            assert_eq!(t.key, expected_key(&iface, b, p * PAGE), "VA {va:#x}");
            let mut tag = [0u8; 8];
            assert!(gpu.read_phys(t.key, &mut tag));
            assert_eq!(
                u64::from_le_bytes(tag) & 0xFFFF_FFFF_FFFF,
                va,
                "walk reaches the CPU-written page"
            );
            assert_ne!(t.flags & pte::VALID, 0);
            assert_ne!(t.flags & pte::WRITEABLE, 0);
            let sys = b.kind.host || b.kind.uncached;
            assert_eq!(t.flags & pte::SYSTEM != 0, sys, "{:?} SYSTEM bit", b.kind);
            assert_eq!(t.flags & pte::SNOOPED != 0, sys, "{:?} SNOOPED bit", b.kind);
            assert_eq!(
                t.flags & pte::MTYPE_UC != 0,
                b.kind.uncached,
                "{:?} MTYPE",
                b.kind
            );
            if t.page_size == 2 << 20 {
                huge += 1;
            } else {
                assert_eq!(t.page_size, PAGE);
                // The fragment covers only the aligned, contiguous extent.
                let frag = (t.flags >> pte::FRAG_SHIFT) & 0x1F;
                assert!(
                    PAGE << frag <= b.size,
                    "fragment {frag} beyond a {:#x} buffer",
                    b.size
                );
            }
            // The engines' path (TLB) reads the same bytes.
            let mut via = [0u8; 8];
            assert!(gpu.read_va(va, &mut via));
            assert_eq!(via, tag);
            pages += 1;
        }
        // The byte after the buffer is not this buffer's (guard: next VA is unmapped or another).
        let after = b.va + b.size;
        if let Some(t) = gpu.translate(after) {
            assert!(
                bufs.iter().any(|o| o.va <= after && after < o.va + o.size),
                "{t:?}"
            );
        }
    }
    assert!(huge > 0, "2 MiB-aligned VRAM ranges use PDB0 huge entries");
    assert!(pages > 3000, "{pages} pages checked");

    // Freed ranges stop translating (after the driver's invalidation).
    let victims: Vec<GpuBuffer> = bufs.drain(..).step_by(2).collect();
    for b in victims {
        let (va, size) = (b.va, b.size);
        iface.free(b).unwrap();
        for p in 0..size / PAGE {
            assert!(
                gpu.translate(va + p * PAGE).is_none(),
                "freed {va:#x}+{p:#x} still mapped"
            );
            let mut x = [0u8; 4];
            assert!(!gpu.read_va(va + p * PAGE, &mut x), "TLB kept a freed page");
        }
    }
    // The rest still translate.
    for b in &bufs {
        assert!(gpu.translate(b.va + b.size - PAGE).is_some());
    }
    // Outside the context's range nothing translates.
    assert!(gpu.translate(0x1000).is_none());
}

#[test]
fn vram_beyond_the_bar_has_no_cpu_view() {
    let mut cfg = EmuPciConfig::new(EmuArch::Gfx1100);
    cfg.bar0_size = 512 << 20;
    // The discovery table at VRAM end is beyond a 512 MiB BAR0: the driver says why.
    let e = boot_pci(cfg).0.err().unwrap();
    assert!(e.to_string().contains("Resizable BAR"), "{e}");
}
