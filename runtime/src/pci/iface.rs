//! [`PciIface`]: the [`GpuIface`] contract over the AM driver, so the runtime above (queues,
//! dispatch, SQTT) is the same as on KFD. Buffers get a GPU VA from the AM VA heap; VRAM buffers
//! are seen by the CPU through BAR0 at their physical offset, system buffers through their
//! pinned pages; every CPU view reports the GPU VA as its address.

use std::collections::HashMap;
use std::sync::Arc;

use super::am::gmc::{Hub, PhysRun};
use super::am::ih::IhEvent;
use super::am::{gfx, sdma, AmDevice, AmIp};
use super::{PciDevice, PciError, PciOptions, SubView, SysMem};
use crate::error::{Error, FaultReport, MmuFault, Result};
use crate::platform::{
    AllocKind, DeviceProps, GpuBuffer, GpuIface, IpBases, IpVersions, Mmio, QueueBuffers,
    QueueDesc, QueueKind, Slot,
};

enum Backing {
    Vram { paddr: u64 },
    Sys(SysMem),
}

struct Alloc {
    va: u64,
    size: u64,
    backing: Backing,
}

/// A mapping as the driver made it (tests compare it with the page-table walk).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappingInfo {
    pub va: u64,
    pub size: u64,
    pub runs: Vec<PhysRun>,
}

pub struct PciIface {
    pub dev: AmDevice,
    props: DeviceProps,
    bases: IpBases,
    ip: IpVersions,
    allocs: HashMap<u64, Alloc>,
    next_handle: u64,
}

const PAGE: u64 = 0x1000;

/// Coalesces 4 KiB pages into physically contiguous runs.
fn runs_of(pages: &[u64], size: u64) -> Vec<PhysRun> {
    let mut out: Vec<PhysRun> = Vec::new();
    for &p in pages.iter().take((size / PAGE) as usize) {
        match out.last_mut() {
            Some(r) if r.addr + r.len == p => r.len += PAGE,
            _ => out.push(PhysRun {
                addr: p,
                len: PAGE,
                system: true,
            }),
        }
    }
    out
}

impl PciIface {
    /// Brings the GPU behind `pci` up and wraps it.
    pub fn new(pci: Arc<dyn PciDevice>, opts: &PciOptions) -> Result<Self> {
        // An installed command recorder sees config space ([`crate::record_io`]).
        let pci = crate::record_io::wrap_pci(pci);
        let vendor = pci.config_read(super::config::VENDOR_ID, 2)?;
        let device = pci.config_read(super::config::DEVICE_ID, 2)?;
        if vendor != u32::from(super::AMD_VENDOR) {
            return Err(PciError::NoDevice {
                detail: format!("{} has vendor id {vendor:#06x}", pci.bus_id()),
            }
            .into());
        }
        // Memory decoding and bus mastering (§1.1 step 9): the GPU's DMA needs MASTER.
        let cmd = pci.config_read(super::config::COMMAND, 2)?;
        pci.config_write(
            super::config::COMMAND,
            2,
            cmd | super::config::COMMAND_MEMORY | super::config::COMMAND_MASTER,
        )?;
        let dev = AmDevice::boot(pci, opts)?;
        let mut props = dev.disc.props()?;
        props.vendor_id = vendor;
        props.device_id = device;
        props.local_mem_size = dev.vram_size;
        let ipv = |ip| dev.disc.ip(ip).map(|i| i.version);
        let ipb = |ip| dev.disc.ip(ip).map(|i| i.bases.clone());
        let ip = IpVersions {
            gc: ipv(AmIp::Gc)?,
            sdma: ipv(AmIp::Sdma0)?,
            nbio: ipv(AmIp::Nbio)?,
        };
        let bases = IpBases {
            gc: ipb(AmIp::Gc)?,
            sdma: ipb(AmIp::Sdma0)?,
            nbio: ipb(AmIp::Nbio)?,
        };
        Ok(PciIface {
            dev,
            props,
            bases,
            ip,
            allocs: HashMap::new(),
            next_handle: 1,
        })
    }

    /// Opens real GPU `index` through sysfs (see [`super::sysfs`]).
    pub fn open_sysfs(index: usize, opts: &PciOptions) -> Result<Self> {
        let pci = super::sysfs::SysfsPciDevice::open_index(index, opts)?;
        PciIface::new(Arc::new(pci), opts)
    }

    /// The mapping behind a buffer handle.
    pub fn mapping(&self, handle: u64) -> Option<MappingInfo> {
        let a = self.allocs.get(&handle)?;
        Some(MappingInfo {
            va: a.va,
            size: a.size,
            runs: match &a.backing {
                Backing::Vram { paddr } => vec![PhysRun {
                    addr: *paddr,
                    len: a.size,
                    system: false,
                }],
                Backing::Sys(m) => runs_of(&m.pages, a.size),
            },
        })
    }

    /// GC 9: a PM4 compute queue on XCC `xcc` (its MQD slot, its read pointer, its doorbell in
    /// that XCC's MEC doorbell range; the ring and write pointer shared by all XCCs), or the
    /// SDMA 4.4 ring of engine 0.
    fn create_queue_gc9(
        &mut self,
        kind: QueueKind,
        bufs: QueueBuffers<'_>,
        xcc: u32,
    ) -> Result<QueueDesc> {
        use super::am::mqd9;
        let xccs = self.dev.gc9.as_ref().map_or(0, |g| g.xccs);
        if kind == QueueKind::Sdma {
            return self.create_sdma_queue_gc9(bufs);
        }
        let x = xcc as usize;
        if x >= xccs {
            return Err(Error::Invalid(format!(
                "compute queue on XCC {xcc}: the device has {xccs}"
            )));
        }
        if self.dev.gc9_queues.contains(&x) {
            return Err(Error::Unsupported(format!(
                "a second compute queue on XCC {xcc} on the PCI path"
            )));
        }
        let eop = bufs
            .eop
            .ok_or_else(|| Error::Invalid("compute queue without EOP buffer".into()))?;
        let ring_cpu = bufs.ring.cpu()?.clone();
        let gart_cpu = bufs.gart.cpu()?.clone();
        // Queue-pointer page: the write pointer at +0x10 (shared), XCC 0's read pointer at +0
        // as on GC 11/12, XCC x's at 0x100 + 8·x.
        let rptr_off = if x == 0 { 0 } else { 0x100 + 8 * xcc as u64 };
        let mqd = match self.dev.gc9_mqd {
            Some(p) => p,
            None => {
                let p = self
                    .dev
                    .gmc
                    .palloc(mqd9::MQD_STRIDE * xccs as u64, 0x1000)?;
                self.dev.gc9_mqd = Some(p);
                p
            }
        };
        let paddr = mqd + mqd9::MQD_STRIDE * xcc as u64;
        let spec = mqd9::QueueSpec {
            mqd_mc: self.dev.gmc.mc(paddr),
            ring_va: bufs.ring.va,
            ring_bytes: bufs.ring.size,
            rptr_va: bufs.gart.va + rptr_off,
            wptr_va: bufs.gart.va + 0x10,
            eop_va: eop.va,
            eop_bytes: eop.size,
            doorbell: mqd9::doorbell(x),
        };
        let g = self
            .dev
            .gc9
            .as_ref()
            .ok_or_else(|| Error::Invalid("no GC 9 device".into()))?;
        mqd9::setup(g, x, paddr, &spec)?;
        self.dev.gc9_queues.push(x);
        Ok(self.queue_desc(ring_cpu, bufs.ring.va, gart_cpu, rptr_off, spec.doorbell))
    }

    /// GC 9: SDMA queue 0 (engine 0's SDMA_GFX ring, [`sdma::v4::setup_ring`]).
    fn create_sdma_queue_gc9(&mut self, bufs: QueueBuffers<'_>) -> Result<QueueDesc> {
        if self.dev.sdma_queue.is_some() {
            return Err(Error::Unsupported(
                "a second SDMA queue on the PCI path".into(),
            ));
        }
        let g = self
            .dev
            .gc9
            .as_ref()
            .ok_or_else(|| Error::Invalid("no GC 9 device".into()))?;
        let ring_cpu = bufs.ring.cpu()?.clone();
        let gart_cpu = bufs.gart.cpu()?.clone();
        let (rptr, wptr) = (bufs.gart.va, bufs.gart.va + 0x10);
        let q = sdma::v4::setup_ring(g, 0, bufs.ring.va, bufs.ring.size, rptr, wptr)?;
        self.dev.sdma_queue = Some(q);
        Ok(self.queue_desc(ring_cpu, bufs.ring.va, gart_cpu, 0, q.doorbell))
    }

    /// What the runtime sees of a queue: its ring, the read pointer at `rptr_off` and the
    /// write pointer at +0x10 of the queue-pointer page `gart`, and its doorbell (64-bit
    /// doorbells at an 8-byte stride).
    fn queue_desc(
        &self,
        ring: Arc<dyn Mmio>,
        ring_va: u64,
        gart: Arc<dyn Mmio>,
        rptr_off: u64,
        doorbell: u32,
    ) -> QueueDesc {
        QueueDesc {
            ring,
            ring_va,
            read_ptrs: vec![Slot {
                mem: gart.clone(),
                offset: rptr_off,
            }],
            write_ptrs: vec![Slot {
                mem: gart,
                offset: 0x10,
            }],
            doorbells: vec![Slot {
                mem: self.dev.doorbells.clone(),
                offset: u64::from(doorbell) * 8,
            }],
        }
    }

    fn fault_report(&self, context: String) -> FaultReport {
        let mut rep = FaultReport {
            context,
            ..Default::default()
        };
        for hub in [Hub::Gc, Hub::Mm] {
            match self.dev.gmc.fault_status(&self.dev.regs, hub) {
                Ok((st, va)) if st != 0 && rep.mmu_fault.is_none() => {
                    rep.mmu_fault = Some(MmuFault {
                        va,
                        not_present: st & (1 << 8) != 0,
                        read_only: st & (1 << 18) != 0 && (st >> 4) & 0xF != 0,
                        no_execute: false,
                        imprecise: false,
                    });
                    rep.context.push_str(&format!(
                        "; {hub:?} hub protection fault status {st:#x} (cid {:#x})",
                        (st >> 9) & 0x1FF
                    ));
                }
                Ok(_) => {}
                Err(e) => rep
                    .context
                    .push_str(&format!("; reading {hub:?} fault status failed: {e}")),
            }
        }
        rep
    }
}

impl GpuIface for PciIface {
    fn props(&self) -> &DeviceProps {
        &self.props
    }
    fn ip_versions(&self) -> IpVersions {
        self.ip
    }
    fn ip_bases(&self) -> &IpBases {
        &self.bases
    }
    fn describe(&self) -> String {
        format!("PCI {} ({})", self.dev.pci.bus_id(), self.props.target())
    }

    fn alloc(&mut self, size: u64, kind: AllocKind) -> Result<GpuBuffer> {
        let size = size.max(1).div_ceil(PAGE) * PAGE;
        let sys = kind.host || (kind.uncached && kind.cpu_access);
        let va = self.dev.gmc.valloc(size)?;
        let (backing, runs, cpu): (Backing, Vec<PhysRun>, Option<Arc<dyn Mmio>>) = if sys {
            let m = match self.dev.pci.alloc_sysmem(size) {
                Ok(m) => m,
                Err(e) => {
                    self.dev.gmc.vfree(va, size);
                    return Err(e.into());
                }
            };
            let runs = runs_of(&m.pages, size);
            let cpu: Arc<dyn Mmio> = Arc::new(SubView::new(m.cpu.clone(), 0, size, va));
            (Backing::Sys(m), runs, Some(cpu))
        } else {
            let align = if size >= 2 << 20 { 2 << 20 } else { PAGE };
            let paddr = match self.dev.gmc.palloc(size, align) {
                Ok(p) => p,
                Err(_) => {
                    self.dev.gmc.vfree(va, size);
                    return Err(Error::OutOfMemory {
                        kind: kind.label(),
                        size,
                    });
                }
            };
            let cpu: Option<Arc<dyn Mmio>> = if kind.cpu_access {
                if paddr + size > self.dev.vram.size() {
                    self.dev.gmc.pfree(paddr, size);
                    self.dev.gmc.vfree(va, size);
                    return Err(Error::NoResizableBar { size });
                }
                Some(Arc::new(SubView::new(
                    self.dev.vram.clone(),
                    paddr,
                    size,
                    va,
                )))
            } else {
                None
            };
            let runs = vec![PhysRun {
                addr: paddr,
                len: size,
                system: false,
            }];
            (Backing::Vram { paddr }, runs, cpu)
        };
        self.dev.gmc.map(va, &runs, kind.uncached)?;
        self.dev.flush_tlbs()?;
        let handle = self.next_handle;
        self.next_handle += 1;
        self.allocs.insert(handle, Alloc { va, size, backing });
        Ok(GpuBuffer {
            va,
            size,
            kind,
            handle,
            cpu,
        })
    }

    fn free(&mut self, buf: GpuBuffer) -> Result<()> {
        let a = self.allocs.remove(&buf.handle).ok_or_else(|| {
            Error::Invalid(format!("buffer at {:#x} was not allocated here", buf.va))
        })?;
        self.dev.gmc.unmap(a.va, a.size)?;
        self.dev.flush_tlbs()?;
        self.dev.gmc.vfree(a.va, a.size);
        match a.backing {
            Backing::Vram { paddr } => self.dev.gmc.pfree(paddr, a.size),
            Backing::Sys(m) => self.dev.pci.free_sysmem(&m),
        }
        Ok(())
    }

    fn map(&mut self, buf: &GpuBuffer) -> Result<()> {
        if self.allocs.get(&buf.handle).is_some_and(|a| a.va == buf.va) {
            return Ok(());
        }
        Err(Error::Unsupported(format!(
            "mapping a buffer of another device (VA {:#x}) on the PCI path",
            buf.va
        )))
    }

    fn create_queue(
        &mut self,
        kind: QueueKind,
        bufs: QueueBuffers<'_>,
        xcc_id: u32,
    ) -> Result<QueueDesc> {
        if self.dev.gc9.is_some() {
            return self.create_queue_gc9(kind, bufs, xcc_id);
        }
        if xcc_id != 0 {
            return Err(Error::Unsupported(
                "multi-XCC queues on the PCI path".into(),
            ));
        }
        let ring_cpu = bufs.ring.cpu()?.clone();
        let gart_cpu = bufs.gart.cpu()?.clone();
        // AM queue-pointer page: read pointer at +0, write pointer at +0x10.
        let (rptr, wptr) = (bufs.gart.va, bufs.gart.va + 0x10);
        let doorbell = match kind {
            QueueKind::Compute => {
                if self.dev.gfx_queue.is_some() {
                    return Err(Error::Unsupported(
                        "a second compute queue on the PCI path".into(),
                    ));
                }
                let eop = bufs
                    .eop
                    .ok_or_else(|| Error::Invalid("compute queue without EOP buffer".into()))?;
                let q = gfx::setup_compute_queue(
                    &mut self.dev,
                    bufs.ring.va,
                    bufs.ring.size,
                    rptr,
                    wptr,
                    eop.va,
                    eop.size,
                )?;
                self.dev.gfx_queue = Some(q);
                q.doorbell
            }
            QueueKind::Sdma => {
                if self.dev.sdma_queue.is_some() {
                    return Err(Error::Unsupported(
                        "a second SDMA queue on the PCI path".into(),
                    ));
                }
                let q = sdma::setup_queue(&mut self.dev, bufs.ring.va, bufs.ring.size, rptr, wptr)?;
                self.dev.sdma_queue = Some(q);
                q.doorbell
            }
        };
        Ok(self.queue_desc(ring_cpu, bufs.ring.va, gart_cpu, 0, doorbell))
    }

    /// Waits for an MSI (VFIO) or `ms`, then runs the IH handler; a GPU page fault ends the
    /// wait with the fault report.
    fn sleep(&mut self, ms: u32) -> Result<()> {
        self.dev.pci.wait_interrupt(ms)?;
        let events = self.dev.ih.drain(&self.dev.regs, &self.dev.vram)?;
        if let Some(IhEvent::VmFault { client, vmid, va }) = events
            .iter()
            .find(|e| matches!(e, IhEvent::VmFault { .. }))
            .copied()
        {
            let mut rep = self.fault_report(format!(
                "{}: GPU page fault interrupt (IH client {client:#x}, vmid {vmid}) at VA {va:#x}",
                self.describe()
            ));
            if rep.mmu_fault.is_none() {
                rep.mmu_fault = Some(MmuFault {
                    va,
                    not_present: true,
                    ..Default::default()
                });
            }
            return Err(Error::DeviceHang(rep));
        }
        Ok(())
    }

    fn on_device_hang(&mut self) -> FaultReport {
        self.fault_report(self.describe())
    }
}
