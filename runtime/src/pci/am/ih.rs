//! IH, the interrupt handler ring (pci-am-interface.md §1.6 IH): two 512 KiB rings in boot VRAM
//! with a write-pointer page each. Unlike tinygrad v0.11.0 the handler decodes entries: a GPU
//! page fault (UTCL2 client) becomes an [`IhEvent::VmFault`] that ends a wait with a clear error.

use std::sync::Arc;

use super::gmc::Gmc;
use super::{regs, AmGen, RegIo};
use crate::pci::PciResult;
use crate::platform::Mmio;

pub const RING_SIZE: u64 = 512 << 10;
pub const ENTRY_SIZE: u64 = 32;
/// IH client ids (soc15_ih_clientid.h).
pub const CLIENT_UTCL2: u32 = 0x1B;
pub const CLIENT_VMC: u32 = 0x12;
/// IH doorbell index of ring 0 (AMDGPU_NAVI10_DOORBELL_IH).
pub const DOORBELL_IH: u32 = 376;

/// A decoded IH entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IhEvent {
    /// GPU page fault: client (UTCL2 = GC hub, VMC = MM hub), VMID and faulting VA.
    VmFault { client: u32, vmid: u32, va: u64 },
    /// Anything else (end-of-pipe, SDMA trap, ...): client and source id.
    Other { client: u32, src_id: u32 },
}

#[derive(Default)]
pub struct Ih {
    /// (ring VRAM offset, wptr page VRAM offset) per ring.
    rings: Vec<(u64, u64)>,
    rptr: u64,
    /// Ring bytes when not [`RING_SIZE`] (a GC 9 ring programmed by `gc9.rs`).
    size: Option<u64>,
}

impl Ih {
    /// The rings another bring-up allocated and programmed (GC 9: [`super::gc9::Gc9`]'s
    /// `ih_rings` of `ring_bytes` each), read from pointer 0.
    pub fn adopt(rings: &[(u64, u64)], ring_bytes: u64) -> Self {
        Ih {
            rings: rings.to_vec(),
            rptr: 0,
            size: Some(ring_bytes),
        }
    }

    /// The two rings and their write-pointer pages in boot VRAM (ring 0, its page, ring 1, its
    /// page): the software half of the bring-up, which a partial boot repeats.
    pub fn alloc(&mut self, gmc: &mut Gmc) -> PciResult<()> {
        self.rings.clear();
        for _ in 0..2 {
            let base = gmc.palloc(RING_SIZE, 0x1000)?;
            let wptr = gmc.palloc(0x1000, 0x1000)?;
            self.rings.push((base, wptr));
        }
        Ok(())
    }

    /// Allocates the rings and programs them.
    pub fn init(&mut self, r: &RegIo, gmc: &mut Gmc) -> PciResult<()> {
        self.alloc(gmc)?;
        self.program(r, gmc)
    }

    /// Programs the allocated rings (both pointers back to 0) and enables them.
    pub fn program(&mut self, r: &RegIo, gmc: &Gmc) -> PciResult<()> {
        if self.rings.len() != 2 {
            return Err(crate::pci::PciError::Rejected {
                block: "IH",
                what: "programming rings that were never allocated".into(),
                status: 0,
            });
        }
        self.rptr = 0;
        if r.gen == AmGen::Gc12 {
            return self.init_fields(r, gmc);
        }
        use regs::*;
        for ring in 0..2u32 {
            let (base, wptr) = self.rings[ring as usize];
            let mc = gmc.mc(base);
            let [rb_base, rb_base_hi, cntl, rptr_r, wptr_r, dbr] = ring_regs(ring);
            r.write(rb_base, (mc >> 8) as u32)?;
            r.write(rb_base_hi, (mc >> 40) as u32)?;
            let c = r.encode(cntl, &rb_cntl_fields(ring, RING_SIZE))?;
            r.write(cntl, c)?;
            if ring == 0 {
                let wmc = gmc.mc(wptr);
                r.write(IH_RB_WPTR_ADDR_LO, wmc as u32)?;
                r.write(IH_RB_WPTR_ADDR_HI, (wmc >> 32) as u32)?;
            }
            r.write(rptr_r, 0)?;
            r.write(wptr_r, 0)?;
            r.write(dbr, ((DOORBELL_IH + ring) * 2) | 1 << 28)?;
            let on: &[(&str, u32)] = if ring == 0 {
                &[("rb_enable", 1), ("enable_intr", 1)]
            } else {
                &[("rb_enable", 1)]
            };
            r.write(cntl, c | r.encode(cntl, on)?)?;
        }
        Ok(())
    }

    /// OSSSYS 7 (GC 12): the same rings, every value encoded by field, no IH doorbell (the
    /// driver reads the write-pointer page), the storm/flood controls on, then both rings on.
    fn init_fields(&mut self, r: &RegIo, gmc: &Gmc) -> PciResult<()> {
        use regs::*;
        for ring in 0..2u32 {
            let (base, wptr) = self.rings[ring as usize];
            let mc = gmc.mc(base);
            let [rb_base, rb_base_hi, cntl, rptr_r, wptr_r, dbr] = ring_regs(ring);
            r.write(rb_base, (mc >> 8) as u32)?;
            r.write(rb_base_hi, (mc >> 40) as u32)?;
            r.write_fields(cntl, &rb_cntl_fields(ring, RING_SIZE))?;
            if ring == 0 {
                let wmc = gmc.mc(wptr);
                r.write(IH_RB_WPTR_ADDR_LO, wmc as u32)?;
                r.write(IH_RB_WPTR_ADDR_HI, (wmc >> 32) as u32)?;
            }
            r.write(wptr_r, 0)?;
            r.write(rptr_r, 0)?;
            r.write_fields(dbr, &[("enable", 0)])?;
        }
        // Client 18 (the VMC, GMC page faults) may storm: let the IH rate-limit it.
        r.update_fields(
            IH_STORM_CLIENT_LIST_CNTL,
            &[("client18_is_storm_client", 1)],
        )?;
        r.update_fields(IH_INT_FLOOD_CNTL, &[("flood_cntl_enable", 1)])?;
        r.update_fields(IH_MSI_STORM_CTRL, &[("delay", 3)])?;
        r.update_fields(IH_RB_CNTL, &[("rb_enable", 1), ("enable_intr", 1)])?;
        r.update_fields(IH_RB_CNTL_RING1, &[("rb_enable", 1)])?;
        Ok(())
    }

    /// Reads new entries of ring 0 (write pointer from its page), advances RPTR.
    pub fn drain(&mut self, r: &RegIo, vram: &Arc<dyn Mmio>) -> PciResult<Vec<IhEvent>> {
        let Some(&(base, wpage)) = self.rings.first() else {
            return Ok(Vec::new());
        };
        let size = self.size.unwrap_or(RING_SIZE);
        let wptr = u64::from(vram.read32(wpage)?) & (size - 1) & !(ENTRY_SIZE - 1);
        let mut out = Vec::new();
        while self.rptr != wptr {
            let mut e = [0u8; ENTRY_SIZE as usize];
            vram.read_bytes(base + self.rptr, &mut e)?;
            let entry = le_reader::Reader::new(&e);
            // Every dword index below is inside the fixed-size entry.
            let dw = |i: usize| entry.u32_at(4 * i, "IH entry dword").unwrap_or(0);
            let client = dw(0) & 0xFF;
            let src_id = (dw(0) >> 8) & 0xFF;
            let vmid = (dw(0) >> 24) & 0xF;
            out.push(if client == CLIENT_UTCL2 || client == CLIENT_VMC {
                IhEvent::VmFault {
                    client,
                    vmid,
                    va: u64::from(dw(4)) << 12 | u64::from(dw(5) & 0xF) << 44,
                }
            } else {
                IhEvent::Other { client, src_id }
            });
            self.rptr = (self.rptr + ENTRY_SIZE) & (size - 1);
        }
        r.write(regs::IH_RB_RPTR, self.rptr as u32)?;
        Ok(out)
    }

    pub fn fini(&mut self, r: &RegIo) -> PciResult<()> {
        if self.rings.is_empty() {
            return Ok(());
        }
        r.update(regs::IH_RB_CNTL, 1 | 1 << 17, 0)?;
        r.update(regs::IH_RB_CNTL_RING1, 1, 0)?;
        Ok(())
    }
}

/// IH_RB_CNTL.rb_size of a ring of `ring_bytes`: log2 of its size in dwords, rounded up
/// (amdgpu's `order_base_2(ih->ring_size / 4)` in vega20_ih.c / ih_v6_0.c / ih_v7_0.c; tinygrad's
/// `((ring_size//4)-1).bit_length()` since its "am: ih" fix 3f25eb3, as recorded in
/// ../shared/conformance). The same on every family: OSSSYS 4.4.2, 6 and 7.
pub fn rb_size(ring_bytes: u64) -> u32 {
    (ring_bytes / 4).max(1).next_power_of_two().trailing_zeros()
}

/// IH_RB_CNTL(_RING1) fields for ring `ring` of `ring_bytes` (same names on OSSSYS 4.4.2, 6
/// and 7): system-memory ring with snooping, [`rb_size`]; ring 0 also takes write-pointer
/// overflow and rptr rearm, ring 1 drains when full. Enables come later.
pub fn rb_cntl_fields(ring: u32, ring_bytes: u64) -> Vec<(&'static str, u32)> {
    let mut f = vec![
        ("mc_space", 4),
        ("wptr_overflow_clear", 1),
        ("rb_size", rb_size(ring_bytes)),
        ("mc_snoop", 1),
        ("mc_ro", 0),
        ("mc_vmid", 0),
    ];
    if ring == 0 {
        f.extend([("wptr_overflow_enable", 1), ("rptr_rearm", 1)]);
    } else {
        f.push(("rb_full_drain_enable", 1));
    }
    f
}

/// IH ring 0's or ring 1's base, base high, control, read and write pointer and doorbell
/// registers (the same names on OSSSYS 6 and 7).
fn ring_regs(ring: u32) -> [super::AmReg; 6] {
    use regs::*;
    if ring == 0 {
        [
            IH_RB_BASE,
            IH_RB_BASE_HI,
            IH_RB_CNTL,
            IH_RB_RPTR,
            IH_RB_WPTR,
            IH_DOORBELL_RPTR,
        ]
    } else {
        [
            IH_RB_BASE_RING1,
            IH_RB_BASE_HI_RING1,
            IH_RB_CNTL_RING1,
            IH_RB_RPTR_RING1,
            IH_RB_WPTR_RING1,
            IH_DOORBELL_RPTR_RING1,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rb_size_is_log2_of_the_dwords_rounded_up() {
        // amdgpu order_base_2: 512 KiB = 2^17 dwords, 256 KiB = 2^16; a non-power rounds up.
        assert_eq!(rb_size(512 << 10), 17);
        assert_eq!(rb_size(256 << 10), 16);
        assert_eq!(rb_size((256 << 10) + 4), 17);
        assert_eq!(rb_size(4), 0);
    }
}
