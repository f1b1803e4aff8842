//! GMC (pci-am-interface.md §1.4, §1.5): the VRAM and VA allocators, the 4-level GFX11 page
//! tables (VMID 0) written into VRAM through BAR0, hub setup for the MM and GC hubs, HDP flush
//! and TLB invalidation.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{regs, AmGen, RegIo};
use crate::pci::{PciError, PciResult};
use crate::platform::Mmio;

pub const BOOT_SIZE: u64 = 32 << 20;
/// VRAM offset of the boot record ([`super::boot::BootRecord`]): the last page of boot memory,
/// which the boot allocator never hands out.
pub const BOOT_RECORD: u64 = BOOT_SIZE - PAGE;
pub const RESERVED_TOP: u64 = 64 << 20;
pub const VA_BASE: u64 = 0x2000_0000_0000;
pub const VA_SIZE: u64 = 512 << 30;
const PAGE: u64 = 0x1000;

/// PTE/PDE bits of the GFX11 page-table format (pci-am-interface.md §1.5; the names are
/// amdgpu_vm.h's: AMDGPU_PTE_VALID, _SYSTEM, _SNOOPED, _EXECUTABLE, _READABLE, _WRITEABLE,
/// AMDGPU_PTE_FRAG(x) at bit 7, AMDGPU_PTE_MTYPE_NV10(MTYPE_UC), AMDGPU_PDE_PTE).
pub mod pte {
    /// AMDGPU_PTE_VALID.
    pub const VALID: u64 = 1 << 0;
    /// AMDGPU_PTE_SYSTEM: the address is a bus address, not VRAM.
    pub const SYSTEM: u64 = 1 << 1;
    /// AMDGPU_PTE_SNOOPED.
    pub const SNOOPED: u64 = 1 << 2;
    /// AMDGPU_PTE_EXECUTABLE.
    pub const EXECUTABLE: u64 = 1 << 4;
    /// AMDGPU_PTE_READABLE.
    pub const READABLE: u64 = 1 << 5;
    /// AMDGPU_PTE_WRITEABLE.
    pub const WRITEABLE: u64 = 1 << 6;
    /// AMDGPU_PTE_FRAG(x): log2(fragment / 4 KiB) in bits 7..11.
    pub const FRAG_SHIFT: u32 = 7;
    /// AMDGPU_PTE_MTYPE_NV10(AMDGPU_MTYPE_UC = 3): MTYPE in bits 48..50.
    pub const MTYPE_UC: u64 = 3 << 48;
    /// AMDGPU_PDE_PTE: a PDB0/PDB1 entry that is itself a (huge-page) PTE.
    pub const PDE_PTE: u64 = 1 << 54;
    /// Address bits 12..47 of an entry.
    pub const ADDR_MASK: u64 = 0x0000_FFFF_FFFF_F000;

    /// The GFX12 format (amdgpu_vm.h, "gfx12"): the same low bits, MTYPE moved and a PTE flag
    /// in bit 63.
    pub mod gfx12 {
        /// AMDGPU_PTE_MTYPE_GFX12(AMDGPU_MTYPE_UC = 3): MTYPE in bits 54..55.
        pub const MTYPE_UC: u64 = 3 << 54;
        /// AMDGPU_PDE_PTE_GFX12: a PDB0/PDB1 entry that is itself a (huge-page) PTE.
        pub const PDE_PTE: u64 = 1 << 63;
        /// AMDGPU_PTE_IS_PTE: set in every 4 KiB leaf entry.
        pub const IS_PTE: u64 = 1 << 63;
    }
    /// GC 9 (AMDGPU_PTE_MTYPE_VG10 and the `trans_further` walk of gfx9 parts).
    pub mod gfx9 {
        /// AMDGPU_PTE_MTYPE_VG10(AMDGPU_MTYPE_UC = 3): MTYPE in bits 57..58.
        pub const MTYPE_UC: u64 = 3 << 57;
        /// AMDGPU_PTE_TF: a PDB0 entry that points at a further (PTB) level.
        pub const TF: u64 = 1 << 56;
        /// AMDGPU_PDE_BFS(9): PDB1 entries' block fragment size.
        pub const PDB1_BFS9: u64 = 9 << 59;
    }
}

/// AMDGPU_MTYPE_UC, the uncached memory type (the `mtype` field of the L1 TLB control).
pub const MTYPE_UC_VALUE: u32 = 3;

/// The page-table entry bits that differ between generations: (MTYPE_UC, huge-page PDE flag,
/// 4 KiB leaf flag).
pub fn pte_format(g: AmGen) -> (u64, u64, u64) {
    match g {
        AmGen::Gc11 => (pte::MTYPE_UC, pte::PDE_PTE, 0),
        AmGen::Gc12 => (
            pte::gfx12::MTYPE_UC,
            pte::gfx12::PDE_PTE,
            pte::gfx12::IS_PTE,
        ),
        AmGen::Gc9 => (pte::gfx9::MTYPE_UC, pte::PDE_PTE, 0),
    }
}

/// First-fit range allocator with power-of-two alignment (free ranges merged on free).
#[derive(Debug, Clone)]
pub struct RangeAlloc {
    free: BTreeMap<u64, u64>,
    pub base: u64,
    pub size: u64,
}

impl RangeAlloc {
    pub fn new(base: u64, size: u64) -> Self {
        let mut free = BTreeMap::new();
        if size > 0 {
            free.insert(base, size);
        }
        RangeAlloc { free, base, size }
    }
    pub fn alloc(&mut self, size: u64, align: u64) -> Option<u64> {
        let align = align.max(1);
        // Checked: sizes can come from outside (a boot record's TMR size), and a wrapped end
        // would hand out a range that is not free.
        let (start, len, at) = self.free.iter().find_map(|(&s, &l)| {
            let at = s.div_ceil(align).checked_mul(align)?;
            (at.checked_add(size)? <= s + l).then_some((s, l, at))
        })?;
        self.free.remove(&start);
        if at > start {
            self.free.insert(start, at - start);
        }
        if at + size < start + len {
            self.free.insert(at + size, start + len - at - size);
        }
        Some(at)
    }
    pub fn free(&mut self, at: u64, size: u64) {
        let (mut s, mut e) = (at, at + size);
        if let Some((&ps, &pl)) = self.free.range(..at).next_back() {
            if ps + pl == at {
                self.free.remove(&ps);
                s = ps;
            }
        }
        if let Some(&nl) = self.free.get(&e) {
            self.free.remove(&e);
            e += nl;
        }
        self.free.insert(s, e - s);
    }
    /// The end of the highest allocation (the base when nothing is allocated).
    pub fn high_water(&self) -> u64 {
        let end = self.base + self.size;
        match self.free.iter().next_back() {
            Some((&s, &l)) if s + l == end => s,
            _ => end,
        }
    }
    pub fn free_bytes(&self) -> u64 {
        self.free.values().sum()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hub {
    Mm,
    Gc,
}

/// A physically contiguous piece of a mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhysRun {
    pub addr: u64,
    pub len: u64,
    pub system: bool,
}

pub struct Gmc {
    vram: Arc<dyn Mmio>,
    pub vram_size: u64,
    /// MC address of VRAM offset 0 (FB base).
    pub mc_base: u64,
    pub boot: RangeAlloc,
    pub main: RangeAlloc,
    pub va: RangeAlloc,
    booting: bool,
    /// Every boot-memory allocation (offset, size) in order: the layout a partial boot must
    /// re-derive exactly ([`super::boot`]).
    pub boot_log: Vec<(u64, u64)>,
    /// VRAM offset of the root directory (PDB2).
    pub root: u64,
    /// Page-table pages allocated (VRAM offsets), for the teardown and tests.
    pub tables: Vec<u64>,
    /// Byte address of the HDP flush register (from REMAP_HDP_MEM_FLUSH_CNTL).
    hdp_flush_addr: u32,
    scratch_page: u64,
    dummy_page: u64,
    /// Page-table entry format and hub register layout.
    gen: AmGen,
}

impl Gmc {
    pub fn new(regs: &RegIo, vram: Arc<dyn Mmio>, vram_size: u64) -> PciResult<Self> {
        let fb = regs.read(regs::MMMC_VM_FB_LOCATION_BASE)?;
        let mc_base = u64::from(fb & 0xFF_FFFF) << 24;
        let hdp = regs.read(regs::BIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL)?;
        let main_end = vram_size.saturating_sub(RESERVED_TOP);
        let mut g = Gmc {
            vram,
            vram_size,
            mc_base,
            boot: RangeAlloc::new(0, BOOT_RECORD),
            main: RangeAlloc::new(BOOT_SIZE, main_end.saturating_sub(BOOT_SIZE)),
            va: RangeAlloc::new(VA_BASE, VA_SIZE),
            booting: true,
            boot_log: Vec::new(),
            root: 0,
            tables: Vec::new(),
            hdp_flush_addr: hdp & 0x7_FFFC,
            scratch_page: 0,
            dummy_page: 0,
            gen: regs.gen,
        };
        g.root = g.alloc_table()?;
        g.scratch_page = g.palloc(PAGE, PAGE)?;
        g.dummy_page = g.palloc(PAGE, PAGE)?;
        Ok(g)
    }

    /// The memory manager of a GC 9 device after [`super::gc9::Gc9`]'s bring-up: its root
    /// directory, MC base (FB base + XGMI offset), scratch and dummy pages are the ones the
    /// hubs were programmed with; the heap is `[heap_start, heap_end)` (after the boot memory,
    /// below the reserved top), the VA window tinygrad's.
    #[allow(clippy::too_many_arguments)]
    pub fn for_gc9(
        regs: &RegIo,
        vram: Arc<dyn Mmio>,
        vram_size: u64,
        mc_base: u64,
        root: u64,
        pages: (u64, u64),
        heap: (u64, u64),
    ) -> PciResult<Self> {
        let hdp = regs.read(regs::BIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL)?;
        Ok(Gmc {
            vram,
            vram_size,
            mc_base,
            boot: RangeAlloc::new(0, 0),
            main: RangeAlloc::new(heap.0, heap.1.saturating_sub(heap.0)),
            va: RangeAlloc::new(VA_BASE, VA_SIZE),
            booting: false,
            boot_log: Vec::new(),
            root,
            tables: vec![root],
            hdp_flush_addr: hdp & 0x7_FFFC,
            scratch_page: pages.0,
            dummy_page: pages.1,
            gen: AmGen::Gc9,
        })
    }

    /// The BAR0 view (VRAM offset = BAR offset).
    pub fn vram(&self) -> std::sync::Arc<dyn Mmio> {
        self.vram.clone()
    }

    pub fn boot_done(&mut self) {
        self.booting = false;
    }

    /// Physical VRAM (offset); boot memory while booting (§1.4), the main heap afterwards.
    pub fn palloc(&mut self, size: u64, align: u64) -> PciResult<u64> {
        let size = size.div_ceil(PAGE) * PAGE;
        let a = if self.booting {
            &mut self.boot
        } else {
            &mut self.main
        };
        let at = a
            .alloc(size, align.max(PAGE))
            .ok_or(PciError::OutOfMemory {
                what: if self.booting { "boot VRAM" } else { "VRAM" },
                size,
            })?;
        if self.booting {
            self.boot_log.push((at, size));
        }
        Ok(at)
    }

    pub fn pfree(&mut self, at: u64, size: u64) {
        let size = size.div_ceil(PAGE) * PAGE;
        // The heap's own bounds (a GC 9 heap starts where its boot memory ended).
        if at < self.main.base {
            self.boot.free(at, size);
        } else {
            self.main.free(at, size);
        }
    }

    pub fn mc(&self, paddr: u64) -> u64 {
        self.mc_base + paddr
    }

    /// A VA range aligned to the largest power of two ≤ size (capped at 1 GiB).
    pub fn valloc(&mut self, size: u64) -> PciResult<u64> {
        let size = size.div_ceil(PAGE) * PAGE;
        let align = (1u64 << (63 - size.leading_zeros())).clamp(PAGE, 1 << 30);
        self.va.alloc(size, align).ok_or(PciError::OutOfMemory {
            what: "GPU virtual address space",
            size,
        })
    }

    pub fn vfree(&mut self, va: u64, size: u64) {
        self.va.free(va, size.div_ceil(PAGE) * PAGE);
    }

    fn alloc_table(&mut self) -> PciResult<u64> {
        let t = self.palloc(PAGE, PAGE)?;
        self.vram.write_bytes(t, &[0u8; PAGE as usize])?;
        self.tables.push(t);
        Ok(t)
    }

    fn entry(&self, table: u64, idx: u64) -> PciResult<u64> {
        Ok(self.vram.read64(table + idx * 8)?)
    }

    /// The directory below `table[idx]`, created if missing. `level` is the level of `table`
    /// (0 = PDB2, 1 = PDB1, 2 = PDB0): GC 9 marks table entries per level (tinygrad's
    /// get_pte_flags for gfx9: PDB1 entries carry BFS(9), PDB0 entries TF).
    fn dir(&mut self, table: u64, idx: u64, level: u8) -> PciResult<u64> {
        let e = self.entry(table, idx)?;
        if e & pte::VALID != 0 && !self.is_leaf(level, e) {
            return Ok(e & pte::ADDR_MASK);
        }
        let t = self.alloc_table()?;
        let extra = match (self.gen, level) {
            (AmGen::Gc9, 1) => pte::gfx9::PDB1_BFS9,
            (AmGen::Gc9, 2) => pte::gfx9::TF,
            _ => 0,
        };
        self.vram.write64(table + idx * 8, t | pte::VALID | extra)?;
        Ok(t)
    }

    /// Whether entry `e` of a table at `level` (1 = PDB1, 2 = PDB0) maps memory itself: the
    /// huge-page flag, except at a GC 9 PDB0, where an entry without TF is a 2 MiB page.
    fn is_leaf(&self, level: u8, e: u64) -> bool {
        let (_, pde_pte, _) = pte_format(self.gen);
        match (self.gen, level) {
            (AmGen::Gc9, 2) => e & pte::gfx9::TF == 0,
            _ => e & pde_pte != 0,
        }
    }

    /// The huge-page flag of a leaf at `level` (GC 9 sets none at PDB0: no TF is the mark).
    fn leaf_flag(&self, level: u8) -> u64 {
        let (_, pde_pte, _) = pte_format(self.gen);
        if self.gen == AmGen::Gc9 && level == 2 {
            0
        } else {
            pde_pte
        }
    }

    /// Maps `va` onto the runs (in order). Huge entries are used where VA and physical address
    /// are both aligned (1 GiB at PDB1, 2 MiB at PDB0); the rest are 4 KiB PTEs whose fragment
    /// field gives the contiguous, aligned extent.
    pub fn map(&mut self, va: u64, runs: &[PhysRun], uncached: bool) -> PciResult<()> {
        let mut cur = va;
        let (mtype_uc, _, is_pte) = pte_format(self.gen);
        let (huge1, huge0) = (self.leaf_flag(1), self.leaf_flag(2));
        for run in runs {
            let mut flags = pte::VALID | pte::READABLE | pte::WRITEABLE | pte::EXECUTABLE;
            if run.system {
                flags |= pte::SYSTEM | pte::SNOOPED;
            }
            if uncached {
                flags |= mtype_uc;
            }
            let mut off = 0u64;
            while off < run.len {
                let (v, p, left) = (cur + off, run.addr + off, run.len - off);
                let pdb1 = self.dir(self.root, (v >> 39) & 0x1FF, 0)?;
                let ok = |sz: u64| v % sz == 0 && p % sz == 0 && left >= sz;
                if ok(1 << 30) {
                    self.vram
                        .write64(pdb1 + ((v >> 30) & 0x1FF) * 8, p | flags | huge1)?;
                    off += 1 << 30;
                    continue;
                }
                let pdb0 = self.dir(pdb1, (v >> 30) & 0x1FF, 1)?;
                if ok(2 << 20) {
                    self.vram
                        .write64(pdb0 + ((v >> 21) & 0x1FF) * 8, p | flags | huge0)?;
                    off += 2 << 20;
                    continue;
                }
                let ptb = self.dir(pdb0, (v >> 21) & 0x1FF, 2)?;
                // Consecutive 4 KiB entries up to the end of this PTB or of the run.
                let first = (v >> 12) & 0x1FF;
                let n = (512 - first).min(left / PAGE);
                let align = v.trailing_zeros().min(p.trailing_zeros());
                let extent = 63 - left.leading_zeros();
                let frag = u64::from(align.min(extent).saturating_sub(12).min(31));
                let mut bytes = Vec::with_capacity(n as usize * 8);
                for i in 0..n {
                    let e = (p + i * PAGE) | flags | is_pte | frag << pte::FRAG_SHIFT;
                    bytes.extend_from_slice(&e.to_le_bytes());
                }
                self.vram.write_bytes(ptb + first * 8, &bytes)?;
                off += n * PAGE;
            }
            cur += run.len;
        }
        Ok(())
    }

    /// Clears the leaf entries of `[va, va+size)`.
    pub fn unmap(&mut self, va: u64, size: u64) -> PciResult<()> {
        let end = va + size;
        let mut v = va;
        while v < end {
            let e2 = self.entry(self.root, (v >> 39) & 0x1FF)?;
            if e2 & pte::VALID == 0 {
                return Err(PciError::NotMapped { va: v });
            }
            let pdb1 = e2 & pte::ADDR_MASK;
            let i1 = (v >> 30) & 0x1FF;
            let e1 = self.entry(pdb1, i1)?;
            if self.is_leaf(1, e1) {
                self.vram.write64(pdb1 + i1 * 8, 0)?;
                v += 1 << 30;
                continue;
            }
            let pdb0 = e1 & pte::ADDR_MASK;
            let i0 = (v >> 21) & 0x1FF;
            let e0 = self.entry(pdb0, i0)?;
            if self.is_leaf(2, e0) {
                self.vram.write64(pdb0 + i0 * 8, 0)?;
                v += 2 << 20;
                continue;
            }
            let ptb = e0 & pte::ADDR_MASK;
            let first = (v >> 12) & 0x1FF;
            let n = (512 - first).min((end - v) / PAGE);
            self.vram
                .write_bytes(ptb + first * 8, &vec![0u8; n as usize * 8])?;
            v += n * PAGE;
        }
        Ok(())
    }

    /// Hub init (§1.6 GMC) for the MM hub (at boot) or the GC hub (in GFX init).
    pub fn init_hub(&self, r: &RegIo, hub: Hub) -> PciResult<()> {
        if self.gen == AmGen::Gc12 {
            return self.init_hub_fields(r, hub);
        }
        use regs::*;
        let mm = hub == Hub::Mm;
        let pick = |m, g| if mm { m } else { g };
        // Both hubs get the same setup (pci-am-interface.md: init_hub('MM') at boot, 'GC' in GFX).
        self.apertures(r, mm)?;
        // active_page_migration_pte_read_retry.
        r.update(
            pick(
                MMVM_L2_PROTECTION_FAULT_CNTL2,
                GCVM_L2_PROTECTION_FAULT_CNTL2,
            ),
            1 << 18,
            1 << 18,
        )?;
        // enable_l1_tlb, system_access_mode 3, advanced driver model, mtype UC (3).
        r.write(
            pick(MMMC_VM_MX_L1_TLB_CNTL, GCMC_VM_MX_L1_TLB_CNTL),
            1 | 3 << 3 | 1 << 6 | 3 << 11,
        )?;
        // enable_l2_cache, default page out to system memory, context1 identity mode 1.
        r.write(pick(MMVM_L2_CNTL, GCVM_L2_CNTL), 1 | 1 << 11 | 1 << 19)?;
        r.write(pick(MMVM_L2_CNTL2, GCVM_L2_CNTL2), 0x3)?;
        // bank_select 9, bigk fragment size 6, 4k/bigk associativity.
        r.write(
            pick(MMVM_L2_CNTL3, GCVM_L2_CNTL3),
            9 | 6 << 15 | 1 << 20 | 1 << 31,
        )?;
        r.write(pick(MMVM_L2_CNTL4, GCVM_L2_CNTL4), 1)?;
        // walker_priority_client_id (bits 5..13) = 0x1FF.
        r.write(pick(MMVM_L2_CNTL5, GCVM_L2_CNTL5), 0x1FF << 5)?;
        Self::identity_off_and_engines(r, mm)?;
        let vm_end = (VA_BASE + (1u64 << 48) - 1).min(0x7FFF_FFFF_FFFF);
        let ctx = [
            (
                pick(
                    MMVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32,
                    GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32,
                ),
                (VA_BASE >> 12) as u32,
            ),
            (
                pick(
                    MMVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32,
                    GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32,
                ),
                (VA_BASE >> 44) as u32,
            ),
            (
                pick(
                    MMVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32,
                    GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32,
                ),
                (vm_end >> 12) as u32,
            ),
            (
                pick(
                    MMVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32,
                    GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32,
                ),
                (vm_end >> 44) as u32,
            ),
            (
                pick(
                    MMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32,
                    GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32,
                ),
                (self.root | 1) as u32,
            ),
            (
                pick(
                    MMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32,
                    GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32,
                ),
                (self.root >> 32) as u32,
            ),
        ];
        for (reg, v) in ctx {
            r.write(reg, v)?;
        }
        // enable_context, depth 3, every protection-fault interrupt/default bit (9..=22).
        r.write(
            pick(MMVM_CONTEXT0_CNTL, GCVM_CONTEXT0_CNTL),
            1 | 3 << 1 | 0x7F_FE00 | 0x180_0000,
        )?;
        self.invalidate(r, hub)
    }

    /// Hub init with every value encoded by field (GC 12: GC hub 12, MM hub 4.1, whose fields
    /// sit elsewhere than GC 11's), in tinygrad's order: apertures, fault defaults, L1 TLB and
    /// L2, the VMID 0 context, identity aperture off, invalidation ranges.
    fn init_hub_fields(&self, r: &RegIo, hub: Hub) -> PciResult<()> {
        use regs::*;
        let mm = hub == Hub::Mm;
        let pick = |m, g| if mm { m } else { g };
        self.apertures(r, mm)?;
        r.update_fields(
            pick(
                MMVM_L2_PROTECTION_FAULT_CNTL2,
                GCVM_L2_PROTECTION_FAULT_CNTL2,
            ),
            &[("active_page_migration_pte_read_retry", 1)],
        )?;
        r.update_fields(
            pick(MMMC_VM_MX_L1_TLB_CNTL, GCMC_VM_MX_L1_TLB_CNTL),
            &[
                ("enable_l1_tlb", 1),
                ("system_access_mode", 3),
                ("enable_advanced_driver_model", 1),
                ("system_aperture_unmapped_access", 0),
                ("mtype", MTYPE_UC_VALUE),
            ],
        )?;
        r.update_fields(
            pick(MMVM_L2_CNTL, GCVM_L2_CNTL),
            &[
                ("enable_l2_cache", 1),
                ("enable_l2_fragment_processing", 0),
                ("enable_default_page_out_to_system_memory", 1),
                ("l2_pde0_cache_tag_generation_mode", 0),
                ("pde_fault_classification", 0),
                ("context1_identity_access_mode", 1),
                ("identity_mode_fragment_size", 0),
            ],
        )?;
        r.update_fields(
            pick(MMVM_L2_CNTL2, GCVM_L2_CNTL2),
            &[("invalidate_all_l1_tlbs", 1), ("invalidate_l2_cache", 1)],
        )?;
        r.write_fields(
            pick(MMVM_L2_CNTL3, GCVM_L2_CNTL3),
            &[
                ("l2_cache_4k_associativity", 1),
                ("l2_cache_bigk_associativity", 1),
                ("bank_select", 9),
                ("l2_cache_bigk_fragment_size", 6),
            ],
        )?;
        r.write_fields(
            pick(MMVM_L2_CNTL4, GCVM_L2_CNTL4),
            &[("l2_cache_4k_partition_count", 1)],
        )?;
        r.write_fields(
            pick(MMVM_L2_CNTL5, GCVM_L2_CNTL5),
            &[("walker_priority_client_id", 0x1FF)],
        )?;
        let vm_end = (VA_BASE + (1u64 << 48) - 1).min(0x7FFF_FFFF_FFFF);
        for (reg, v) in [
            (
                pick(
                    MMVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32,
                    GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32,
                ),
                (VA_BASE >> 12) as u32,
            ),
            (
                pick(
                    MMVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32,
                    GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32,
                ),
                (VA_BASE >> 44) as u32,
            ),
            (
                pick(
                    MMVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32,
                    GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32,
                ),
                (vm_end >> 12) as u32,
            ),
            (
                pick(
                    MMVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32,
                    GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32,
                ),
                (vm_end >> 44) as u32,
            ),
            (
                pick(
                    MMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32,
                    GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32,
                ),
                (self.root | 1) as u32,
            ),
            (
                pick(
                    MMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32,
                    GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32,
                ),
                (self.root >> 32) as u32,
            ),
        ] {
            r.write(reg, v)?;
        }
        // Context 0 on, a 4-level walk from PDB2 (depth 3), every protection fault both
        // interrupting and redirected to the default page.
        let mut cntl = vec![("enable_context", 1), ("page_table_depth", 3)];
        let faults = [
            "range_protection_fault_enable_interrupt",
            "range_protection_fault_enable_default",
            "dummy_page_protection_fault_enable_interrupt",
            "dummy_page_protection_fault_enable_default",
            "pde0_protection_fault_enable_interrupt",
            "pde0_protection_fault_enable_default",
            "valid_protection_fault_enable_interrupt",
            "valid_protection_fault_enable_default",
            "read_protection_fault_enable_interrupt",
            "read_protection_fault_enable_default",
            "write_protection_fault_enable_interrupt",
            "write_protection_fault_enable_default",
            "execute_protection_fault_enable_interrupt",
            "execute_protection_fault_enable_default",
        ];
        cntl.extend(faults.iter().map(|f| (*f, 1)));
        r.write_fields(pick(MMVM_CONTEXT0_CNTL, GCVM_CONTEXT0_CNTL), &cntl)?;
        Self::identity_off_and_engines(r, mm)
    }

    /// The AGP aperture off (bottom above top), the system aperture over VRAM with the scratch
    /// page as its default, and the dummy page for protection faults: alike on GC 11 and 12.
    fn apertures(&self, r: &RegIo, mm: bool) -> PciResult<()> {
        use regs::*;
        let pick = |m, g| if mm { m } else { g };
        let mc_end = self.mc_base + self.vram_size - 1;
        r.write(pick(MMMC_VM_AGP_BASE, GCMC_VM_AGP_BASE), 0)?;
        // AGP off: bottom above top.
        r.write(
            pick(MMMC_VM_AGP_BOT, GCMC_VM_AGP_BOT),
            (0xFFFF_FFFF_FFFFu64 >> 24) as u32,
        )?;
        r.write(pick(MMMC_VM_AGP_TOP, GCMC_VM_AGP_TOP), 0)?;
        r.write(
            pick(
                MMMC_VM_SYSTEM_APERTURE_LOW_ADDR,
                GCMC_VM_SYSTEM_APERTURE_LOW_ADDR,
            ),
            (self.mc_base >> 18) as u32,
        )?;
        r.write(
            pick(
                MMMC_VM_SYSTEM_APERTURE_HIGH_ADDR,
                GCMC_VM_SYSTEM_APERTURE_HIGH_ADDR,
            ),
            (mc_end >> 18) as u32,
        )?;
        let sp = self.mc(self.scratch_page) >> 12;
        r.write(
            pick(
                MMMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_LSB,
                GCMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_LSB,
            ),
            sp as u32,
        )?;
        r.write(
            pick(
                MMMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_MSB,
                GCMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_MSB,
            ),
            (sp >> 32) as u32,
        )?;
        let dp = self.mc(self.dummy_page) >> 12;
        r.write(
            pick(
                MMVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_LO32,
                GCVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_LO32,
            ),
            dp as u32,
        )?;
        r.write(
            pick(
                MMVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_HI32,
                GCVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_HI32,
            ),
            (dp >> 32) as u32,
        )
    }

    /// Identity aperture off (low above high), no physical offset, and every invalidation
    /// engine covering the whole address space (0x1F_FFFF_FFFF pages): alike on GC 11 and 12.
    fn identity_off_and_engines(r: &RegIo, mm: bool) -> PciResult<()> {
        use regs::*;
        let pick = |m, g| if mm { m } else { g };
        for (reg, v) in [
            (
                pick(
                    MMVM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_LO32,
                    GCVM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_LO32,
                ),
                0xFFFF_FFFF,
            ),
            (
                pick(
                    MMVM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_HI32,
                    GCVM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_HI32,
                ),
                0xF,
            ),
            (
                pick(
                    MMVM_L2_CONTEXT1_IDENTITY_APERTURE_HIGH_ADDR_LO32,
                    GCVM_L2_CONTEXT1_IDENTITY_APERTURE_HIGH_ADDR_LO32,
                ),
                0,
            ),
            (
                pick(
                    MMVM_L2_CONTEXT1_IDENTITY_APERTURE_HIGH_ADDR_HI32,
                    GCVM_L2_CONTEXT1_IDENTITY_APERTURE_HIGH_ADDR_HI32,
                ),
                0,
            ),
            (
                pick(
                    MMVM_L2_CONTEXT_IDENTITY_PHYSICAL_OFFSET_LO32,
                    GCVM_L2_CONTEXT_IDENTITY_PHYSICAL_OFFSET_LO32,
                ),
                0,
            ),
            (
                pick(
                    MMVM_L2_CONTEXT_IDENTITY_PHYSICAL_OFFSET_HI32,
                    GCVM_L2_CONTEXT_IDENTITY_PHYSICAL_OFFSET_HI32,
                ),
                0,
            ),
        ] {
            r.write(reg, v)?;
        }
        // Every invalidation engine covers the whole address space (0x1F_FFFF_FFFF pages).
        let engines = if mm {
            MMVM_INVALIDATE_ENG_ADDR_RANGE
        } else {
            GCVM_INVALIDATE_ENG_ADDR_RANGE
        };
        for (lo, hi) in engines {
            r.write(lo, 0xFFFF_FFFF)?;
            r.write(hi, 0x1F)?;
        }
        Ok(())
    }

    /// TLB invalidation of VMID 0 on one hub (engine 17), waiting for the ACK.
    pub fn invalidate(&self, r: &RegIo, hub: Hub) -> PciResult<()> {
        use regs::*;
        let req = 1 | 0x1F << 19; // vmid 0, invalidate L2 PTEs, PDE0/1/2, L1 PTEs.
        if hub == Hub::Mm {
            r.poll(
                MMVM_INVALIDATE_ENG17_SEM,
                1,
                1,
                100,
                "MM hub",
                "invalidation semaphore",
            )?;
            r.write(MMVM_INVALIDATE_ENG17_REQ, req)?;
            r.poll(
                MMVM_INVALIDATE_ENG17_ACK,
                1,
                1,
                100,
                "MM hub",
                "TLB invalidation ack",
            )?;
            r.write(MMVM_INVALIDATE_ENG17_SEM, 0)?;
            if self.gen == AmGen::Gc12 {
                // Also drop the MM hub's reserved (private) cache lines, and read back so the
                // invalidation has landed before the caller goes on (tinygrad's flush_tlb).
                r.update_fields(
                    MMVM_L2_BANK_SELECT_RESERVED_CID2,
                    &[("reserved_cache_private_invalidation", 1)],
                )?;
                r.read(MMVM_L2_BANK_SELECT_RESERVED_CID2)?;
            }
        } else {
            r.write(GCVM_INVALIDATE_ENG17_REQ, req)?;
            r.poll(
                GCVM_INVALIDATE_ENG17_ACK,
                1,
                1,
                100,
                "GC hub",
                "TLB invalidation ack",
            )?;
        }
        Ok(())
    }

    /// HDP flush then TLB invalidation on both hubs (after every mapping change).
    pub fn flush_tlbs(&self, r: &RegIo, gc_up: bool) -> PciResult<()> {
        self.flush_hdp(r)?;
        if self.gen == AmGen::Gc12 {
            // GC hub first, then MM (tinygrad's order after a mapping).
            if gc_up {
                self.invalidate(r, Hub::Gc)?;
            }
            return self.invalidate(r, Hub::Mm);
        }
        self.invalidate(r, Hub::Mm)?;
        if gc_up {
            self.invalidate(r, Hub::Gc)?;
        }
        Ok(())
    }

    pub fn flush_hdp(&self, r: &RegIo) -> PciResult<()> {
        r.wreg(self.hdp_flush_addr / 4, 0)
    }

    /// Reads the latched protection fault of a hub: (status, faulting VA).
    pub fn fault_status(&self, r: &RegIo, hub: Hub) -> PciResult<(u32, u64)> {
        use regs::*;
        // GC 12 splits the status into LO32/HI32; the LO32 half carries GC 11's status fields.
        let (s, lo, hi) = match hub {
            Hub::Gc => (
                r.first_of(&[
                    GCVM_L2_PROTECTION_FAULT_STATUS,
                    GCVM_L2_PROTECTION_FAULT_STATUS_LO32,
                ])?,
                GCVM_L2_PROTECTION_FAULT_ADDR_LO32,
                GCVM_L2_PROTECTION_FAULT_ADDR_HI32,
            ),
            Hub::Mm => (
                r.first_of(&[
                    MMVM_L2_PROTECTION_FAULT_STATUS,
                    MMVM_L2_PROTECTION_FAULT_STATUS_LO32,
                ])?,
                MMVM_L2_PROTECTION_FAULT_ADDR_LO32,
                MMVM_L2_PROTECTION_FAULT_ADDR_HI32,
            ),
        };
        let st = r.read(s)?;
        let hi4 = r.decode(hi, r.read(hi)?, "logical_page_addr_hi4")?;
        let va = (u64::from(r.read(lo)?) | u64::from(hi4) << 32) << 12;
        Ok((st, va))
    }
}
