//! The KFD interface (`/dev/kfd` + sysfs topology + DRM render node), written only against
//! [`Platform`], so the emulated platform runs exactly this code. kfd-interface.md describes every
//! ioctl and file used here.

pub mod ioctl;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{Error, FaultReport, HwException, MmuFault, Result};
use crate::platform::{
    AllocKind, DeviceProps, Errno, Fd, GpuBuffer, GpuIface, IpBases, IpVersions, Mmio, Platform,
    QueueBuffers, QueueDesc, QueueKind, Slot,
};
use ioctl::*;

pub const KFD_PATH: &str = "/dev/kfd";
pub const TOPOLOGY_NODES: &str = "/sys/devices/virtual/kfd/kfd/topology/nodes";
pub const GC_HWID: u32 = 11;
pub const SDMA0_HWID: u32 = 42;
pub const NBIF_HWID: u32 = 108;
const PAGE: u64 = 0x1000;
const EVENT_PAGE_SIZE: u64 = 0x8000;

pub fn render_node_path(minor: u32) -> String {
    format!("/dev/dri/renderD{minor}")
}
pub fn ip_discovery_path(minor: u32) -> String {
    format!("/sys/class/drm/renderD{minor}/device/ip_discovery/die/0")
}

/// One GPU node of the KFD topology.
#[derive(Debug, Clone)]
pub struct TopologyNode {
    pub node: u32,
    pub gpu_id: u32,
    pub props: DeviceProps,
    /// All `key value` pairs, for listing.
    pub raw: BTreeMap<String, u64>,
}

/// Parses a topology `properties` file (`key value` lines, integers).
pub fn parse_properties(path: &str, text: &str) -> Result<(DeviceProps, BTreeMap<String, u64>)> {
    let mut raw = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let mut it = line.split_whitespace();
        let (Some(k), Some(v)) = (it.next(), it.next()) else {
            continue;
        };
        let v: u64 = v.parse().map_err(|_| Error::Topology {
            path: path.to_string(),
            msg: format!("line {}: value {v:?} of {k} is not an integer", n + 1),
        })?;
        raw.insert(k.to_string(), v);
    }
    let g = |k: &str| raw.get(k).copied().unwrap_or(0) as u32;
    let props = DeviceProps {
        gfx_target_version: g("gfx_target_version"),
        simd_count: g("simd_count"),
        simd_per_cu: g("simd_per_cu"),
        max_waves_per_simd: g("max_waves_per_simd"),
        array_count: g("array_count"),
        simd_arrays_per_engine: g("simd_arrays_per_engine"),
        cu_per_simd_array: g("cu_per_simd_array"),
        lds_size_in_kb: g("lds_size_in_kb"),
        max_slots_scratch_cu: g("max_slots_scratch_cu"),
        num_xcc: raw.get("num_xcc").map(|&v| v as u32).unwrap_or(1).max(1),
        drm_render_minor: g("drm_render_minor"),
        device_id: g("device_id"),
        vendor_id: g("vendor_id"),
        location_id: g("location_id"),
        domain: g("domain"),
        local_mem_size: raw.get("local_mem_size").copied().unwrap_or(0),
    };
    Ok((props, raw))
}

/// Lists the GPU nodes of the topology (CPU nodes, gpu_id 0, are skipped), sorted by node number.
pub fn list_nodes(p: &dyn Platform) -> Result<Vec<TopologyNode>> {
    let names = p.read_dir(TOPOLOGY_NODES).map_err(|e| Error::NoGpuNode {
        detail: format!("cannot list {TOPOLOGY_NODES}: {e}"),
    })?;
    let mut nums: Vec<u32> = names.iter().filter_map(|n| n.parse().ok()).collect();
    nums.sort_unstable();
    let mut out = Vec::new();
    for n in nums {
        let base = format!("{TOPOLOGY_NODES}/{n}");
        let Ok(id) = p.read_file(&format!("{base}/gpu_id")) else {
            continue;
        };
        let Ok(gpu_id) = id.trim().parse::<u32>() else {
            continue;
        };
        if gpu_id == 0 {
            continue;
        }
        let path = format!("{base}/properties");
        let text = p.read_file(&path).map_err(|e| Error::Topology {
            path: path.clone(),
            msg: e.to_string(),
        })?;
        let (props, raw) = parse_properties(&path, &text)?;
        out.push(TopologyNode {
            node: n,
            gpu_id,
            props,
            raw,
        });
    }
    Ok(out)
}

fn read_u32(p: &dyn Platform, path: &str) -> Option<u32> {
    p.read_file(path).ok()?.trim().parse().ok()
}

/// Reads version and segment bases of hardware IP `hwid` from sysfs IP discovery.
pub fn read_ip(p: &dyn Platform, minor: u32, hwid: u32) -> Option<((u32, u32, u32), Vec<u32>)> {
    let dir = format!("{}/{hwid}/0", ip_discovery_path(minor));
    let ver = (
        read_u32(p, &format!("{dir}/major"))?,
        read_u32(p, &format!("{dir}/minor"))?,
        read_u32(p, &format!("{dir}/revision"))?,
    );
    let bases = p
        .read_file(&format!("{dir}/base_addr"))
        .ok()?
        .lines()
        .filter_map(|l| {
            let t = l.trim();
            let t = t
                .strip_prefix("0x")
                .or_else(|| t.strip_prefix("0X"))
                .unwrap_or(t);
            u32::from_str_radix(t, 16).ok()
        })
        .collect();
    Some((ver, bases))
}

#[derive(Debug, Clone, Copy)]
struct Event {
    id: u32,
    slot: u32,
}

/// The KFD interface for one GPU node.
pub struct KfdIface {
    platform: Arc<dyn Platform>,
    kfd_fd: Fd,
    render_fd: Fd,
    pub node: TopologyNode,
    ip: IpVersions,
    bases: IpBases,
    event_page: Option<GpuBuffer>,
    queue_event: Event,
    mem_fault_event: Event,
    hw_fault_event: Event,
    doorbell: Option<(u64, Arc<dyn Mmio>)>,
}

fn ioctl_err(request: u64, errno: Errno) -> Error {
    let hint = match errno {
        Errno::EACCES | Errno::EPERM => {
            Some("permission denied: add the user to the 'render' group")
        }
        Errno::ENOMEM => Some("the driver is out of memory"),
        Errno::EBUSY => Some("the device is busy (another process holds it exclusively?)"),
        Errno::EINVAL => {
            Some("the driver rejected the arguments (kernel/driver too old for this call?)")
        }
        Errno::EFAULT => Some("bad user pointer passed to the driver"),
        Errno::ENODEV => Some("the GPU disappeared (reset or unplug)"),
        Errno::ENOTTY => Some("not a KFD device node, or the ioctl is unknown to this kernel"),
        _ => None,
    };
    Error::Ioctl {
        name: ioctl_name(request),
        errno,
        hint,
    }
}

impl KfdIface {
    /// Opens GPU number `index` (into the sorted list of GPU nodes) through `platform`.
    pub fn open(platform: Arc<dyn Platform>, index: usize) -> Result<Self> {
        // An installed command recorder sees every ioctl (crate::record).
        let platform: Arc<dyn Platform> = match crate::record::installed() {
            Some(r) => Arc::new(crate::record::RecordingPlatform::new(platform, r)),
            None => platform,
        };
        let p = platform.as_ref();
        if !p.exists(KFD_PATH) {
            return Err(Error::NoKfd {
                path: KFD_PATH.into(),
            });
        }
        let kfd_fd = match p.open(KFD_PATH) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => {
                return Err(Error::NoKfd {
                    path: KFD_PATH.into(),
                })
            }
            Err(errno) => {
                return Err(Error::Open {
                    path: KFD_PATH.into(),
                    errno,
                })
            }
        };
        let all = list_nodes(p)?;
        let (usable, unusable): (Vec<_>, Vec<_>) = all
            .into_iter()
            .partition(|n| n.props.target().family().is_some() && n.props.simd_count > 0);
        let node = match usable.into_iter().nth(index) {
            Some(n) => n,
            None => {
                let mut detail = format!("wanted GPU {index}");
                if unusable.is_empty() {
                    detail.push_str(
                        "; the topology lists no GPU node (CPU-only nodes have gpu_id 0)",
                    );
                } else {
                    let t: Vec<String> = unusable
                        .iter()
                        .map(|n| n.props.target().to_string())
                        .collect();
                    detail.push_str(&format!(
                        "; unsupported targets present: {} (supported: gfx94x/gfx950, gfx11, gfx12)",
                        t.join(", ")
                    ));
                }
                p.close(kfd_fd);
                return Err(Error::NoGpuNode { detail });
            }
        };
        let minor = node.props.drm_render_minor;
        let major = node.props.target().major;
        let static_or = |ip: &str| {
            crate::regs::static_bases(major, ip)
                .map(|s| s.to_vec())
                .unwrap_or_default()
        };
        let (gc_v, gc_b) = read_ip(p, minor, GC_HWID).unwrap_or_else(|| {
            let t = node.props.target();
            ((t.major, t.minor, t.stepping), static_or("GC"))
        });
        let (sdma_v, sdma_b) =
            read_ip(p, minor, SDMA0_HWID).unwrap_or(((0, 0, 0), static_or("SDMA0")));
        let (nbio_v, nbio_b) =
            read_ip(p, minor, NBIF_HWID).unwrap_or(((0, 0, 0), static_or("NBIO")));
        let render_path = render_node_path(minor);
        let render_fd = p.open(&render_path).map_err(|errno| Error::Open {
            path: render_path.clone(),
            errno,
        })?;
        let mut me = KfdIface {
            platform: platform.clone(),
            kfd_fd,
            render_fd,
            node,
            ip: IpVersions {
                gc: gc_v,
                sdma: sdma_v,
                nbio: nbio_v,
            },
            bases: IpBases {
                gc: gc_b,
                sdma: sdma_b,
                nbio: nbio_b,
            },
            event_page: None,
            queue_event: Event { id: 0, slot: 0 },
            mem_fault_event: Event { id: 0, slot: 0 },
            hw_fault_event: Event { id: 0, slot: 0 },
            doorbell: None,
        };
        let vm = AcquireVmArgs {
            drm_fd: render_fd.0 as u32,
            gpu_id: me.node.gpu_id,
        };
        me.ioctl(AMDKFD_IOC_ACQUIRE_VM, &mut vm.to_bytes(), &mut [])?;
        // Event page: registered by the first CREATE_EVENT through its allocation handle.
        let page = me.alloc(EVENT_PAGE_SIZE, AllocKind::GTT_CPU)?;
        let handle = page.handle;
        me.event_page = Some(page);
        me.queue_event = me.create_event(event_type::SIGNAL, true, handle)?;
        me.mem_fault_event = me.create_event(event_type::MEMORY, false, 0)?;
        me.hw_fault_event = me.create_event(event_type::HW_EXCEPTION, false, 0)?;
        Ok(me)
    }

    fn ioctl(&self, request: u64, arg: &mut [u8], aux: &mut [&mut [u8]]) -> Result<()> {
        debug_assert_eq!(arg.len(), ioc_size(request));
        self.platform
            .ioctl(self.kfd_fd, request, arg, aux)
            .map_err(|e| ioctl_err(request, e))
    }

    fn create_event(&self, etype: u32, auto_reset: bool, page_handle: u64) -> Result<Event> {
        let a = CreateEventArgs {
            event_page_offset: page_handle,
            event_type: etype,
            auto_reset: auto_reset as u32,
            ..Default::default()
        };
        let mut b = a.to_bytes();
        self.ioctl(AMDKFD_IOC_CREATE_EVENT, &mut b, &mut [])?;
        let r = CreateEventArgs::from_bytes(&b).unwrap_or(a);
        Ok(Event {
            id: r.event_id,
            slot: r.event_slot_index,
        })
    }

    /// WAIT_EVENTS on `events`; returns the per-event data the driver filled in.
    fn wait_events(
        &self,
        events: &[Event],
        all: bool,
        timeout_ms: u32,
    ) -> Result<(u32, Vec<EventData>)> {
        let mut data: Vec<u8> = Vec::with_capacity(events.len() * EventData::SIZE);
        for e in events {
            data.extend_from_slice(
                &EventData {
                    event_id: e.id,
                    ..Default::default()
                }
                .to_bytes(),
            );
        }
        let a = WaitEventsArgs {
            events_ptr: data.as_ptr() as u64,
            num_events: events.len() as u32,
            wait_for_all: all as u32,
            timeout: timeout_ms,
            wait_result: 0,
        };
        let mut b = a.to_bytes();
        self.ioctl(AMDKFD_IOC_WAIT_EVENTS, &mut b, &mut [&mut data])?;
        let r = WaitEventsArgs::from_bytes(&b).unwrap_or(a);
        let out = data
            .chunks(EventData::SIZE)
            .filter_map(EventData::from_bytes)
            .collect();
        Ok((r.wait_result, out))
    }

    pub fn gpu_id(&self) -> u32 {
        self.node.gpu_id
    }
}

impl Drop for KfdIface {
    fn drop(&mut self) {
        if let Some(page) = self.event_page.take() {
            let _ = self.free(page);
        }
        self.platform.close(self.render_fd);
        self.platform.close(self.kfd_fd);
    }
}

fn round_up(v: u64, a: u64) -> u64 {
    v.div_ceil(a) * a
}

impl GpuIface for KfdIface {
    fn props(&self) -> &DeviceProps {
        &self.node.props
    }
    fn ip_versions(&self) -> IpVersions {
        self.ip
    }
    fn ip_bases(&self) -> &IpBases {
        &self.bases
    }
    fn describe(&self) -> String {
        format!(
            "KFD node {} (gpu_id {}, {})",
            self.node.node,
            self.node.gpu_id,
            self.node.props.target()
        )
    }

    fn alloc(&mut self, size: u64, kind: AllocKind) -> Result<GpuBuffer> {
        let size = round_up(size.max(1), PAGE);
        let mut flags = mem_flags::WRITABLE | mem_flags::EXECUTABLE | mem_flags::NO_SUBSTITUTE;
        let userptr = kind.host && !kind.uncached;
        if kind.uncached {
            flags |= mem_flags::COHERENT | mem_flags::UNCACHED | mem_flags::GTT;
        } else if kind.host {
            flags |= mem_flags::USERPTR;
        } else {
            flags |= mem_flags::VRAM;
        }
        if kind.cpu_access || kind.host {
            flags |= mem_flags::PUBLIC;
        }
        let p = self.platform.clone();
        let (va, host_view) = if userptr {
            let m = p.anon_mmap(size).map_err(|errno| Error::Mmap { errno })?;
            (m.addr(), Some(m))
        } else {
            (
                p.reserve_va(size).map_err(|errno| Error::Mmap { errno })?,
                None,
            )
        };
        let a = AllocMemoryArgs {
            va_addr: va,
            size,
            handle: 0,
            mmap_offset: if userptr { va } else { 0 },
            gpu_id: self.node.gpu_id,
            flags,
        };
        let mut b = a.to_bytes();
        if let Err(e) =
            self.platform
                .ioctl(self.kfd_fd, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut b, &mut [])
        {
            if !userptr {
                p.release_va(va, size);
            }
            let vram_public = flags & mem_flags::VRAM != 0 && flags & mem_flags::PUBLIC != 0;
            return Err(match e {
                Errno::EINVAL if vram_public => Error::NoResizableBar { size },
                Errno::ENOMEM => Error::OutOfMemory {
                    kind: kind.label(),
                    size,
                },
                e => ioctl_err(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, e),
            });
        }
        let r = AllocMemoryArgs::from_bytes(&b).unwrap_or(a);
        let cpu = if userptr {
            host_view
        } else if kind.cpu_access || kind.uncached {
            match p.mmap(self.render_fd, r.mmap_offset, size, Some(va)) {
                Ok(m) => Some(m),
                Err(errno) => {
                    let _ = self.ioctl(
                        AMDKFD_IOC_FREE_MEMORY_OF_GPU,
                        &mut FreeMemoryArgs { handle: r.handle }.to_bytes(),
                        &mut [],
                    );
                    p.release_va(va, size);
                    return Err(Error::Mmap { errno });
                }
            }
        } else {
            None
        };
        let buf = GpuBuffer {
            va,
            size,
            kind,
            handle: r.handle,
            cpu,
        };
        self.map(&buf)?;
        Ok(buf)
    }

    fn free(&mut self, buf: GpuBuffer) -> Result<()> {
        let mut ids = self.node.gpu_id.to_le_bytes();
        let a = MapMemoryArgs {
            handle: buf.handle,
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices: 1,
            n_success: 0,
        };
        self.ioctl(
            AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU,
            &mut a.to_bytes(),
            &mut [&mut ids],
        )?;
        let userptr = buf.kind.host && !buf.kind.uncached;
        let (va, size, handle) = (buf.va, buf.size, buf.handle);
        drop(buf);
        self.ioctl(
            AMDKFD_IOC_FREE_MEMORY_OF_GPU,
            &mut FreeMemoryArgs { handle }.to_bytes(),
            &mut [],
        )?;
        if !userptr {
            // The CPU view, if any, may still be held elsewhere: the reservation then lives on
            // until that mapping is dropped (host platform), so releasing it here is safe.
            self.platform.release_va(va, size);
        }
        Ok(())
    }

    fn map(&mut self, buf: &GpuBuffer) -> Result<()> {
        let mut ids = self.node.gpu_id.to_le_bytes();
        let a = MapMemoryArgs {
            handle: buf.handle,
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices: 1,
            n_success: 0,
        };
        let mut b = a.to_bytes();
        self.ioctl(AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut b, &mut [&mut ids])?;
        let r = MapMemoryArgs::from_bytes(&b).unwrap_or(a);
        if r.n_success != 1 {
            return Err(Error::Ioctl {
                name: ioctl_name(AMDKFD_IOC_MAP_MEMORY_TO_GPU),
                errno: Errno::EIO,
                hint: Some("mapped on fewer devices than requested"),
            });
        }
        Ok(())
    }

    fn create_queue(
        &mut self,
        kind: QueueKind,
        bufs: QueueBuffers<'_>,
        xcc_id: u32,
    ) -> Result<QueueDesc> {
        let ring_cpu = bufs.ring.cpu()?.clone();
        let gart_cpu = bufs.gart.cpu()?.clone();
        let a = CreateQueueArgs {
            ring_base_address: bufs.ring.va,
            write_pointer_address: bufs.gart.va,
            read_pointer_address: bufs.gart.va + 8 * (u64::from(xcc_id) + 1),
            ring_size: bufs.ring.size as u32,
            gpu_id: self.node.gpu_id,
            queue_type: match kind {
                QueueKind::Compute => queue_type::COMPUTE,
                QueueKind::Sdma => queue_type::SDMA,
            },
            queue_percentage: 100 | (xcc_id << 8),
            queue_priority: 15,
            eop_buffer_address: bufs.eop.map(|b| b.va).unwrap_or(0),
            eop_buffer_size: bufs.eop.map(|b| b.size).unwrap_or(0),
            ctx_save_restore_address: bufs.cwsr.map(|b| b.va).unwrap_or(0),
            ctx_save_restore_size: bufs.ctx_save_restore_size,
            ctl_stack_size: bufs.ctl_stack_size,
            ..Default::default()
        };
        let mut b = a.to_bytes();
        self.ioctl(AMDKFD_IOC_CREATE_QUEUE, &mut b, &mut [])?;
        let r = CreateQueueArgs::from_bytes(&b).unwrap_or(a);
        // Doorbells of a process share one 8 KiB page, mapped once.
        let base = r.doorbell_offset & !0x1FFF;
        let page = match &self.doorbell {
            Some((b0, m)) if *b0 == base => m.clone(),
            _ => {
                let m = self
                    .platform
                    .mmap(self.kfd_fd, base, 0x2000, None)
                    .map_err(|errno| Error::Mmap { errno })?;
                self.doorbell = Some((base, m.clone()));
                m
            }
        };
        Ok(QueueDesc {
            ring: ring_cpu,
            ring_va: bufs.ring.va,
            read_ptrs: vec![Slot {
                mem: gart_cpu.clone(),
                offset: 8 * (u64::from(xcc_id) + 1),
            }],
            write_ptrs: vec![Slot {
                mem: gart_cpu,
                offset: 0,
            }],
            doorbells: vec![Slot {
                mem: page,
                offset: r.doorbell_offset - base,
            }],
        })
    }

    fn sleep(&mut self, ms: u32) -> Result<()> {
        self.wait_events(&[self.queue_event], true, ms).map(|_| ())
    }

    fn on_device_hang(&mut self) -> FaultReport {
        let mut rep = FaultReport {
            context: self.describe(),
            ..Default::default()
        };
        match self.wait_events(&[self.mem_fault_event, self.hw_fault_event], false, 1) {
            Ok((_, data)) => {
                if let Some(m) = data.first().filter(|m| m.gpu_id != 0) {
                    rep.mmu_fault = Some(MmuFault {
                        va: m.va,
                        not_present: m.not_present != 0,
                        read_only: m.read_only != 0,
                        no_execute: m.no_execute != 0,
                        imprecise: m.imprecise != 0,
                    });
                }
                if let Some(h) = data.get(1).map(|d| d.hw()).filter(|h| h.gpu_id != 0) {
                    rep.hw_exception = Some(HwException {
                        reset_type: h.reset_type,
                        reset_cause: h.reset_cause,
                        memory_lost: h.memory_lost != 0,
                    });
                }
            }
            Err(e) => rep
                .context
                .push_str(&format!("; collecting fault events failed: {e}")),
        }
        rep
    }

    fn event_mailbox(&self) -> Option<(u64, u32)> {
        let page = self.event_page.as_ref()?;
        Some((
            page.va + u64::from(self.queue_event.slot) * 8,
            self.queue_event.id,
        ))
    }
}
