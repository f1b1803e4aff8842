//! The emulated GPU's memory: a sparse set of regions addressed by GPU virtual address (on the
//! KFD path GPU VA == CPU VA, so the same addresses serve both). The CPU reaches it only through
//! [`crate::platform::Mmio`] views, so the emulator sees every store.

use std::collections::BTreeMap;

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
}

pub const VA_BASE: u64 = 0x2000_0000_0000;

impl Memory {
    pub fn new() -> Self {
        Memory {
            regions: BTreeMap::new(),
            next_va: VA_BASE,
            backed: 0,
        }
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

    pub fn write(&mut self, va: u64, data: &[u8]) -> Result<(), MemFault> {
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
