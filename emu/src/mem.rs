//! The emulated GPU's memory: a sparse set of regions addressed by GPU virtual address (on the
//! KFD path GPU VA == CPU VA, so the same addresses serve both). The CPU reaches it only through
//! [`runtime::platform::Mmio`] views, so the emulator sees every store.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

/// An access to an address no region backs (the emulated device reports it as an MMU fault).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("emulated memory fault: {len} bytes at {va:#x} are not mapped")]
pub struct MemFault {
    pub va: u64,
    pub len: u64,
}

struct Region {
    data: Vec<u8>,
}

#[derive(Default)]
pub struct Memory {
    regions: BTreeMap<u64, Region>,
    /// Address-space bump pointer for reservations.
    next_va: u64,
    /// Bytes currently backed.
    pub backed: u64,
    /// The PCI path's GPU virtual memory: when set, engine addresses are GPU VAs translated
    /// through the GMC page tables in emulated VRAM; regions are then keyed by physical
    /// location (system pages by bus address, VRAM at [`PHYS_VRAM`] + offset). `None` on KFD,
    /// where VA == region address (the fast path).
    pub vm: Option<Box<Gpuvm>>,
}

/// Region key of VRAM offset 0 on the PCI path (above every 48-bit bus address).
pub const PHYS_VRAM: u64 = 1 << 56;

use runtime::pci::am::gmc::pte;

/// Where a GPU virtual page lives, as the page-table walk found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Translation {
    /// Region key of the byte (see [`Memory::vm`]).
    pub key: u64,
    /// Leaf entry flags (low 12 bits and the MTYPE/PDE_PTE bits).
    pub flags: u64,
    /// Page size of the leaf: 4 KiB (PTB), 2 MiB (PDB0 as PTE) or 1 GiB (PDB1 as PTE).
    pub page_size: u64,
}

/// VMID 0 of the GC/MM hub as the emulated GMC sees it: a 4-level table rooted in VRAM, the VA
/// range of the context, and a per-4-KiB-page TLB that only an invalidation request clears (as
/// on hardware, a driver that forgets to invalidate sees stale translations).
pub struct Gpuvm {
    /// VRAM offset of the root directory (PDB2).
    pub root: u64,
    /// Context VA range in bytes, inclusive end.
    pub start: u64,
    pub end: u64,
    /// The bit that makes a PDB1/PDB0 entry a huge-page PTE: `pte::PDE_PTE` (bit 54) up to
    /// GC 11, `pte::gfx12::PDE_PTE` (bit 63) on GC 12, where bit 54 is MTYPE.
    pub pde_pte: u64,
    /// GC 9 "translate further" (page_table_block_size 9): a PDB0 entry is a 2 MiB PTE unless
    /// it carries this bit (AMDGPU_PTE_TF, bit 56 in amdgpu_vm.h), then it points at a 4 KiB
    /// PTB. 0 on GC 10+ (PDB0 leaves are marked with `pde_pte` there).
    pub tf: u64,
    tlb: RefCell<HashMap<u64, (u64, u64)>>,
}

impl Gpuvm {
    pub fn new(root: u64, start: u64, end: u64) -> Self {
        Gpuvm {
            root,
            start,
            end,
            pde_pte: pte::PDE_PTE,
            tf: 0,
            tlb: RefCell::new(HashMap::new()),
        }
    }
    /// The context with the GC 12 (gfx12) page-table format.
    pub fn gfx12(mut self) -> Self {
        self.pde_pte = pte::gfx12::PDE_PTE;
        self
    }
    /// The context with the GC 9 page-table format (translate further at PDB0).
    pub fn gfx9(mut self) -> Self {
        self.tf = 1 << 56;
        self
    }
    pub fn invalidate(&self) {
        self.tlb.borrow_mut().clear();
    }
}

pub const VA_BASE: u64 = 0x2000_0000_0000;

impl Memory {
    pub fn new() -> Self {
        Memory {
            regions: BTreeMap::new(),
            next_va: VA_BASE,
            backed: 0,
            vm: None,
        }
    }

    /// Walks the page tables for `va` without using or filling the TLB (what the GMC model and
    /// the page-table tests read). `None`: not mapped (or no context set up).
    pub fn walk(&self, va: u64) -> Option<Translation> {
        let vm = self.vm.as_ref()?;
        if va < vm.start || va > vm.end {
            return None;
        }
        let mut table = PHYS_VRAM + vm.root;
        for shift in [39u32, 30, 21, 12] {
            let idx = (va >> shift) & 0x1FF;
            let mut b = [0u8; 8];
            self.raw_read(table + idx * 8, &mut b).ok()?;
            let e = u64::from_le_bytes(b);
            if e & pte::VALID == 0 {
                return None;
            }
            let addr = e & pte::ADDR_MASK;
            let base = if e & pte::SYSTEM != 0 {
                addr
            } else {
                PHYS_VRAM + addr
            };
            let leaf = shift == 12
                || (shift == 30 && e & vm.pde_pte != 0)
                || (shift == 21
                    && if vm.tf != 0 {
                        e & vm.tf == 0
                    } else {
                        e & vm.pde_pte != 0
                    });
            if leaf {
                let size = 1u64 << shift;
                return Some(Translation {
                    key: base + (va & (size - 1)),
                    flags: e & !pte::ADDR_MASK,
                    page_size: size,
                });
            }
            table = base;
        }
        None
    }

    /// Translates through the TLB (filling it). The result is the key of `va` itself.
    fn translate(&self, va: u64, write: bool) -> Option<u64> {
        let vm = self.vm.as_ref()?;
        let page = va >> 12;
        let hit = vm.tlb.borrow().get(&page).copied();
        let (key, flags) = match hit {
            Some(x) => x,
            None => {
                let t = self.walk(va & !0xFFF)?;
                vm.tlb.borrow_mut().insert(page, (t.key, t.flags));
                (t.key, t.flags)
            }
        };
        let need = if write { pte::WRITEABLE } else { pte::READABLE };
        if flags & need == 0 {
            return None;
        }
        Some(key + (va & 0xFFF))
    }

    /// Splits a VA access into per-page physical pieces: (key, offset into the buffer, len).
    fn pieces(
        &self,
        va: u64,
        len: usize,
        write: bool,
    ) -> Result<Vec<(u64, usize, usize)>, MemFault> {
        let fault = MemFault {
            va,
            len: len as u64,
        };
        let mut out = Vec::new();
        let mut done = 0usize;
        while done < len {
            let cur = va.checked_add(done as u64).ok_or(fault)?;
            let n = ((0x1000 - (cur & 0xFFF)) as usize).min(len - done);
            let key = self.translate(cur, write).ok_or(MemFault {
                va: cur,
                len: n as u64,
            })?;
            // Merge physically contiguous pages into one piece.
            match out.last_mut() {
                Some((k, _, l)) if *k + *l as u64 == key => *l += n,
                _ => out.push((key, done, n)),
            }
            done += n;
        }
        Ok(out)
    }

    /// Reads by physical key (VRAM: [`PHYS_VRAM`] + offset; system: bus address).
    pub fn read_phys(&self, key: u64, out: &mut [u8]) -> Result<(), MemFault> {
        self.raw_read(key, out)
    }
    pub fn write_phys(&mut self, key: u64, data: &[u8]) -> Result<(), MemFault> {
        self.raw_write(key, data)
    }

    /// Hands out `len` bytes of fresh address space (2 MiB aligned for large ranges, like the
    /// kernel's THP-friendly placement; 4 KiB otherwise), with a guard page after it.
    pub fn reserve(&mut self, len: u64) -> u64 {
        let align = if len >= 0x20_0000 { 0x20_0000 } else { 0x1000 };
        let va = self.next_va.div_ceil(align) * align;
        self.next_va = va + len.div_ceil(0x1000) * 0x1000 + 0x1000;
        va
    }

    /// Backs `[va, va+len)` with zeroed memory (idempotent for an identical existing region).
    pub fn map(&mut self, va: u64, len: u64) -> Result<(), MemFault> {
        if let Some(r) = self.regions.get(&va) {
            if r.data.len() as u64 == len {
                return Ok(());
            }
        }
        if self.overlaps(va, len) {
            return Err(MemFault { va, len });
        }
        let n = usize::try_from(len).map_err(|_| MemFault { va, len })?;
        self.regions.insert(va, Region { data: vec![0; n] });
        self.backed += len;
        Ok(())
    }

    pub fn unmap(&mut self, va: u64) -> bool {
        match self.regions.remove(&va) {
            Some(r) => {
                self.backed -= r.data.len() as u64;
                true
            }
            None => false,
        }
    }

    fn overlaps(&self, va: u64, len: u64) -> bool {
        let end = va.saturating_add(len);
        if let Some((s, r)) = self.regions.range(..end).next_back() {
            if s + r.data.len() as u64 > va {
                return true;
            }
        }
        false
    }

    pub fn is_mapped(&self, va: u64, len: u64) -> bool {
        self.locate(va, len).is_ok()
    }

    /// (region start, offset) of a range that lies within one region.
    fn locate(&self, va: u64, len: u64) -> Result<(u64, usize), MemFault> {
        let fault = MemFault { va, len };
        let (start, r) = self.regions.range(..=va).next_back().ok_or(fault)?;
        let off = va - start;
        if off
            .checked_add(len)
            .is_some_and(|e| e <= r.data.len() as u64)
        {
            Ok((*start, off as usize))
        } else {
            Err(fault)
        }
    }

    pub fn read(&self, va: u64, out: &mut [u8]) -> Result<(), MemFault> {
        if self.vm.is_none() {
            return self.raw_read(va, out);
        }
        for (key, at, n) in self.pieces(va, out.len(), false)? {
            self.raw_read(key, &mut out[at..at + n])
                .map_err(|_| MemFault { va, len: n as u64 })?;
        }
        Ok(())
    }

    pub fn write(&mut self, va: u64, data: &[u8]) -> Result<(), MemFault> {
        if self.vm.is_none() {
            return self.raw_write(va, data);
        }
        for (key, at, n) in self.pieces(va, data.len(), true)? {
            self.raw_write(key, &data[at..at + n])
                .map_err(|_| MemFault { va, len: n as u64 })?;
        }
        Ok(())
    }

    fn raw_read(&self, va: u64, out: &mut [u8]) -> Result<(), MemFault> {
        let (s, off) = self.locate(va, out.len() as u64)?;
        let r = self.regions.get(&s).ok_or(MemFault {
            va,
            len: out.len() as u64,
        })?;
        let src = r.data.get(off..off + out.len()).ok_or(MemFault {
            va,
            len: out.len() as u64,
        })?;
        out.copy_from_slice(src);
        Ok(())
    }

    fn raw_write(&mut self, va: u64, data: &[u8]) -> Result<(), MemFault> {
        let (s, off) = self.locate(va, data.len() as u64)?;
        let fault = MemFault {
            va,
            len: data.len() as u64,
        };
        let r = self.regions.get_mut(&s).ok_or(fault)?;
        let dst = r.data.get_mut(off..off + data.len()).ok_or(fault)?;
        dst.copy_from_slice(data);
        Ok(())
    }

    pub fn read32(&self, va: u64) -> Result<u32, MemFault> {
        let mut b = [0u8; 4];
        self.read(va, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    pub fn read64(&self, va: u64) -> Result<u64, MemFault> {
        let mut b = [0u8; 8];
        self.read(va, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    pub fn write32(&mut self, va: u64, v: u32) -> Result<(), MemFault> {
        self.write(va, &v.to_le_bytes())
    }
    pub fn write64(&mut self, va: u64, v: u64) -> Result<(), MemFault> {
        self.write(va, &v.to_le_bytes())
    }

    /// Reads `n` dwords into `out` (cleared first).
    pub fn read_dwords(&self, va: u64, n: usize, out: &mut Vec<u32>) -> Result<(), MemFault> {
        out.clear();
        if self.vm.is_some() {
            let mut b = vec![0u8; n * 4];
            self.read(va, &mut b)?;
            out.extend(
                b.chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            );
            return Ok(());
        }
        let (s, off) = self.locate(va, n as u64 * 4)?;
        let r = self.regions.get(&s).ok_or(MemFault {
            va,
            len: n as u64 * 4,
        })?;
        let src = r.data.get(off..off + n * 4).ok_or(MemFault {
            va,
            len: n as u64 * 4,
        })?;
        out.extend(
            src.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        );
        Ok(())
    }

    /// memmove between (possibly different) regions.
    pub fn copy(&mut self, dst: u64, src: u64, len: u64) -> Result<(), MemFault> {
        let n = usize::try_from(len).map_err(|_| MemFault { va: src, len })?;
        let mut tmp = vec![0u8; n];
        self.read(src, &mut tmp)?;
        self.write(dst, &tmp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_outside_regions_and_across_ends() {
        let mut m = Memory::new();
        let va = m.reserve(0x2000);
        m.map(va, 0x2000).unwrap();
        m.write32(va + 0x1FFC, 0xAABBCCDD).unwrap();
        assert_eq!(m.read32(va + 0x1FFC).unwrap(), 0xAABBCCDD);
        assert_eq!(
            m.read32(va + 0x1FFE),
            Err(MemFault {
                va: va + 0x1FFE,
                len: 4
            })
        );
        assert!(m.read32(va - 4).is_err());
        assert!(
            m.map(va + 0x1000, 0x1000).is_err(),
            "overlapping map must fail"
        );
    }
}
