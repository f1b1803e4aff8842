//! The emulated KFD driver: virtual sysfs (topology, IP discovery, amdgpu parameters), the
//! `/dev/kfd` ioctl handlers and the render node's mmap. It speaks the same ioctl structs as the
//! real driver (`runtime::kfd::ioctl`).

use std::collections::{BTreeMap, HashMap};

use super::cp::{Queue, QueueKindEmu};
use super::{EmuConfig, EmuState};
use runtime::error::MmuFault;
use runtime::kfd::ioctl::*;
use runtime::kfd::{
    ip_discovery_path, render_node_path, GC_HWID, KFD_PATH, NBIF_HWID, SDMA0_HWID, TOPOLOGY_NODES,
};
use runtime::platform::{Errno, Fd};

pub const GPU_ID: u32 = 0x1002;
pub const RENDER_MINOR: u32 = 128;
const FD_BASE: i32 = 1 << 30;
/// Doorbell offsets handed out by CREATE_QUEUE carry KFD's mmap type 3 (bits 63..62).
const DOORBELL_MMAP_BASE: u64 = 3 << 62;
/// Render-node mmap offsets of allocations.
const RENDER_MMAP_BASE: u64 = 1 << 40;

/// A tiny read-only virtual filesystem.
#[derive(Default)]
pub struct VirtualFs {
    files: BTreeMap<String, String>,
    nodes: BTreeMap<String, ()>,
}

impl VirtualFs {
    pub fn add(&mut self, path: &str, content: String) {
        self.files.insert(path.to_string(), content);
    }
    /// Device nodes (exist, can be opened, are not readable as text).
    pub fn add_node(&mut self, path: &str) {
        self.nodes.insert(path.to_string(), ());
    }
    pub fn read_file(&self, path: &str) -> Result<String, Errno> {
        self.files.get(path).cloned().ok_or(Errno::ENOENT)
    }
    pub fn exists(&self, path: &str) -> bool {
        self.files.contains_key(path)
            || self.nodes.contains_key(path)
            || self.read_dir(path).is_ok()
    }
    pub fn read_dir(&self, path: &str) -> Result<Vec<String>, Errno> {
        let prefix = format!("{}/", path.trim_end_matches('/'));
        let mut out: Vec<String> = Vec::new();
        for k in self.files.keys().chain(self.nodes.keys()) {
            if let Some(rest) = k.strip_prefix(&prefix) {
                let name = rest.split('/').next().unwrap_or(rest).to_string();
                if out.last() != Some(&name) && !out.contains(&name) {
                    out.push(name);
                }
            }
        }
        if out.is_empty() {
            Err(Errno::ENOENT)
        } else {
            Ok(out)
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum FdKind {
    Kfd,
    Render,
}

#[derive(Debug, Clone, Copy)]
struct Alloc {
    va: u64,
    size: u64,
    flags: u32,
    mmap_offset: u64,
    mapped: bool,
}

#[derive(Debug, Clone, Copy)]
struct Event {
    etype: u32,
}

pub struct KfdState {
    pub fs: VirtualFs,
    fds: HashMap<i32, FdKind>,
    next_fd: i32,
    allocs: HashMap<u64, Alloc>,
    next_handle: u64,
    events: Vec<Event>,
    event_page: Option<u64>,
    vm_acquired: bool,
    next_doorbell: u32,
    allocated: u64,
    cpu_visible_vram: u64,
}

pub enum MmapTarget {
    Doorbells { base: u64 },
    Memory { va: u64 },
}

impl KfdState {
    pub fn new(cfg: &EmuConfig) -> Self {
        let mut fs = VirtualFs::default();
        if cfg.kfd_present {
            fs.add_node(KFD_PATH);
        }
        // Node 0 is the CPU (gpu_id 0); node 1 the emulated GPU.
        fs.add(&format!("{TOPOLOGY_NODES}/0/gpu_id"), "0\n".into());
        fs.add(
            &format!("{TOPOLOGY_NODES}/0/properties"),
            "cpu_cores_count 16\nsimd_count 0\n".into(),
        );
        if cfg.gpu_node {
            let props: String = cfg
                .arch
                .properties(RENDER_MINOR)
                .iter()
                .map(|(k, v)| format!("{k} {v}\n"))
                .collect();
            fs.add(&format!("{TOPOLOGY_NODES}/1/gpu_id"), format!("{GPU_ID}\n"));
            fs.add(&format!("{TOPOLOGY_NODES}/1/properties"), props);
            fs.add_node(&render_node_path(RENDER_MINOR));
            let disc = ip_discovery_path(RENDER_MINOR);
            for (hwid, ver, ip) in [
                (GC_HWID, cfg.arch.gc_version(), "GC"),
                (SDMA0_HWID, cfg.arch.sdma_version(), "SDMA0"),
                (NBIF_HWID, cfg.arch.nbio_version(), "NBIO"),
            ] {
                let d = format!("{disc}/{hwid}/0");
                fs.add(&format!("{d}/major"), format!("{}\n", ver.0));
                fs.add(&format!("{d}/minor"), format!("{}\n", ver.1));
                fs.add(&format!("{d}/revision"), format!("{}\n", ver.2));
                let bases: String = cfg
                    .arch
                    .bases(ip)
                    .iter()
                    .map(|b| format!("0x{b:08X}\n"))
                    .collect();
                fs.add(&format!("{d}/base_addr"), bases);
            }
            fs.add(
                &format!(
                    "/sys/class/drm/renderD{RENDER_MINOR}/device/power_dpm_force_performance_level"
                ),
                "profile_standard\n".into(),
            );
        }
        fs.add(
            "/sys/module/amdgpu/parameters/ppfeaturemask",
            "0xffff3fff\n".into(),
        );
        KfdState {
            fs,
            fds: HashMap::new(),
            next_fd: FD_BASE,
            allocs: HashMap::new(),
            next_handle: 1,
            events: Vec::new(),
            event_page: None,
            vm_acquired: false,
            next_doorbell: 0,
            allocated: 0,
            cpu_visible_vram: 0,
        }
    }

    pub fn open(&mut self, path: &str) -> Result<Fd, Errno> {
        let kind = if path == KFD_PATH && self.fs.exists(KFD_PATH) {
            FdKind::Kfd
        } else if path == render_node_path(RENDER_MINOR) && self.fs.exists(path) {
            FdKind::Render
        } else {
            return Err(Errno::ENOENT);
        };
        let fd = self.next_fd;
        self.next_fd += 1;
        self.fds.insert(fd, kind);
        Ok(Fd(fd))
    }

    pub fn close(&mut self, fd: Fd) {
        self.fds.remove(&fd.0);
    }

    pub fn mmap_target(
        &self,
        fd: Fd,
        offset: u64,
        len: u64,
        fixed: Option<u64>,
    ) -> Result<MmapTarget, Errno> {
        match self.fds.get(&fd.0) {
            Some(FdKind::Kfd) if offset >> 62 == 3 && len <= super::DOORBELL_PAGE => {
                Ok(MmapTarget::Doorbells { base: offset })
            }
            Some(FdKind::Render) => {
                let a = self
                    .allocs
                    .values()
                    .find(|a| a.mmap_offset == offset)
                    .ok_or(Errno::EINVAL)?;
                if len > a.size || fixed.is_some_and(|f| f != a.va) {
                    return Err(Errno::EINVAL);
                }
                Ok(MmapTarget::Memory { va: a.va })
            }
            Some(_) => Err(Errno::EINVAL),
            None => Err(Errno::EBADF),
        }
    }
}

fn args<T>(arg: &[u8], parse: fn(&[u8]) -> Option<T>) -> Result<T, Errno> {
    parse(arg).ok_or(Errno::EFAULT)
}

fn put(arg: &mut [u8], bytes: &[u8]) {
    if let Some(d) = arg.get_mut(..bytes.len()) {
        d.copy_from_slice(bytes);
    }
}

/// Finds the aux buffer whose address a pointer field holds.
fn aux_at<'a>(aux: &'a mut [&mut [u8]], ptr: u64) -> Result<&'a mut [u8], Errno> {
    aux.iter_mut()
        .find(|b| b.as_ptr() as u64 == ptr)
        .map(|b| &mut **b)
        .ok_or(Errno::EFAULT)
}

pub(crate) fn ioctl(
    st: &mut EmuState,
    fd: Fd,
    request: u64,
    arg: &mut [u8],
    aux: &mut [&mut [u8]],
) -> Result<(), Errno> {
    match st.kfd.fds.get(&fd.0) {
        Some(FdKind::Kfd) => {}
        Some(FdKind::Render) => return Err(Errno::ENOTTY),
        None => return Err(Errno::EBADF),
    }
    if arg.len() != ioc_size(request) {
        return Err(Errno::EINVAL);
    }
    if let Some((r, e)) = st.cfg.fail_ioctl {
        if r == request {
            return Err(e);
        }
    }
    match request {
        AMDKFD_IOC_GET_VERSION => {
            put(
                arg,
                &GetVersionArgs {
                    major: 1,
                    minor: 14,
                }
                .to_bytes(),
            );
            Ok(())
        }
        AMDKFD_IOC_RUNTIME_ENABLE => Ok(()),
        AMDKFD_IOC_ACQUIRE_VM => {
            let a = args(arg, AcquireVmArgs::from_bytes)?;
            if a.gpu_id != GPU_ID {
                return Err(Errno::EINVAL);
            }
            match st.kfd.fds.get(&(a.drm_fd as i32)) {
                Some(FdKind::Render) => {
                    st.kfd.vm_acquired = true;
                    Ok(())
                }
                _ => Err(Errno::EBADF),
            }
        }
        AMDKFD_IOC_ALLOC_MEMORY_OF_GPU => alloc(st, arg),
        AMDKFD_IOC_FREE_MEMORY_OF_GPU => {
            let a = args(arg, FreeMemoryArgs::from_bytes)?;
            let al = st.kfd.allocs.remove(&a.handle).ok_or(Errno::EINVAL)?;
            st.kfd.allocated -= al.size;
            if al.flags & mem_flags::VRAM != 0 && al.flags & mem_flags::PUBLIC != 0 {
                st.kfd.cpu_visible_vram -= al.size;
            }
            if al.flags & mem_flags::USERPTR == 0 {
                st.mem.unmap(al.va);
            }
            Ok(())
        }
        AMDKFD_IOC_MAP_MEMORY_TO_GPU | AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU => {
            let mut a = args(arg, MapMemoryArgs::from_bytes)?;
            let ids = aux_at(aux, a.device_ids_array_ptr)?;
            let n = a.n_devices as usize;
            let all_ours = (0..n).all(|i| u32::get(ids, i * 4) == Some(GPU_ID));
            if n == 0 || !all_ours {
                return Err(Errno::EINVAL);
            }
            let al = st.kfd.allocs.get_mut(&a.handle).ok_or(Errno::EINVAL)?;
            al.mapped = request == AMDKFD_IOC_MAP_MEMORY_TO_GPU;
            a.n_success = a.n_devices;
            put(arg, &a.to_bytes());
            Ok(())
        }
        AMDKFD_IOC_CREATE_EVENT => {
            let mut a = args(arg, CreateEventArgs::from_bytes)?;
            if st.kfd.event_page.is_none() {
                // The first event registers the event page through its allocation handle.
                let h = a.event_page_offset;
                let al = st.kfd.allocs.get(&h).ok_or(Errno::EINVAL)?;
                st.kfd.event_page = Some(al.va);
            }
            if st.kfd.events.len() as u32 >= KFD_SIGNAL_EVENT_LIMIT {
                return Err(Errno::ENOSPC);
            }
            let id = st.kfd.events.len() as u32 + 1;
            st.kfd.events.push(Event {
                etype: a.event_type,
            });
            a.event_id = id;
            a.event_slot_index = id;
            a.event_trigger_data = id;
            put(arg, &a.to_bytes());
            Ok(())
        }
        AMDKFD_IOC_WAIT_EVENTS => wait_events(st, arg, aux),
        AMDKFD_IOC_CREATE_QUEUE => create_queue(st, arg),
        _ => Err(Errno::EINVAL),
    }
}

fn alloc(st: &mut EmuState, arg: &mut [u8]) -> Result<(), Errno> {
    let mut a = args(arg, AllocMemoryArgs::from_bytes)?;
    if a.gpu_id != GPU_ID || !st.kfd.vm_acquired || a.size == 0 || a.size % 0x1000 != 0 {
        return Err(Errno::EINVAL);
    }
    let f = a.flags;
    if st.kfd.allocated + a.size > st.cfg.memory_limit {
        return Err(Errno::ENOMEM);
    }
    let vram_public = f & mem_flags::VRAM != 0 && f & mem_flags::PUBLIC != 0;
    if vram_public && st.kfd.cpu_visible_vram + a.size > st.cfg.bar_size {
        // Like amdgpu without a resizable BAR: CPU-visible VRAM beyond the BAR is refused.
        return Err(Errno::EINVAL);
    }
    if f & mem_flags::USERPTR != 0 {
        // The CPU memory must already exist (the user pointer) and equal the VA.
        if a.mmap_offset != a.va_addr || !st.mem.is_mapped(a.va_addr, a.size) {
            return Err(Errno::EFAULT);
        }
    } else {
        st.mem.map(a.va_addr, a.size).map_err(|_| Errno::EINVAL)?;
    }
    let handle = st.kfd.next_handle;
    st.kfd.next_handle += 1;
    a.handle = handle;
    if f & mem_flags::USERPTR == 0 {
        a.mmap_offset = RENDER_MMAP_BASE + handle * 0x1000;
    }
    st.kfd.allocated += a.size;
    if vram_public {
        st.kfd.cpu_visible_vram += a.size;
    }
    st.kfd.allocs.insert(
        handle,
        Alloc {
            va: a.va_addr,
            size: a.size,
            flags: f,
            mmap_offset: a.mmap_offset,
            mapped: false,
        },
    );
    put(arg, &a.to_bytes());
    Ok(())
}

fn create_queue(st: &mut EmuState, arg: &mut [u8]) -> Result<(), Errno> {
    let mut a = args(arg, CreateQueueArgs::from_bytes)?;
    if a.gpu_id != GPU_ID || !a.ring_size.is_power_of_two() {
        return Err(Errno::EINVAL);
    }
    let kind = match a.queue_type {
        queue_type::COMPUTE => QueueKindEmu::Pm4,
        queue_type::SDMA => QueueKindEmu::Sdma,
        _ => return Err(Errno::EINVAL),
    };
    // Ring and pointers must be GPU-mapped memory of this process.
    let mapped = |va: u64, len: u64| {
        st.kfd
            .allocs
            .values()
            .any(|al| al.mapped && va >= al.va && va + len <= al.va + al.size)
    };
    if !mapped(a.ring_base_address, u64::from(a.ring_size))
        || !mapped(a.read_pointer_address, 8)
        || !mapped(a.write_pointer_address, 8)
    {
        return Err(Errno::EFAULT);
    }
    let xcc = (a.queue_percentage >> 8) & 0xFF;
    let slot = st.kfd.next_doorbell;
    if slot >= (super::DOORBELL_PAGE / 8) as u32 {
        return Err(Errno::ENOSPC);
    }
    st.kfd.next_doorbell += 1;
    st.queues.push(Queue::new(
        kind,
        a.ring_base_address,
        u64::from(a.ring_size),
        a.read_pointer_address,
        a.write_pointer_address,
        slot,
        xcc,
    ));
    a.queue_id = st.queues.len() as u32 - 1;
    a.doorbell_offset = DOORBELL_MMAP_BASE + u64::from(slot) * 8;
    put(arg, &a.to_bytes());
    Ok(())
}

fn wait_events(st: &mut EmuState, arg: &mut [u8], aux: &mut [&mut [u8]]) -> Result<(), Errno> {
    let mut a = args(arg, WaitEventsArgs::from_bytes)?;
    let n = a.num_events as usize;
    // Sleeping is when blocked queues get another chance (the CPU may have written a value).
    st.pump();
    let raised = !st.core.interrupts.is_empty();
    st.core.interrupts.clear();
    let fault = st.core.fault;
    let events = aux_at(aux, a.events_ptr)?;
    if events.len() < n * EventData::SIZE {
        return Err(Errno::EFAULT);
    }
    let mut any_fault = false;
    for i in 0..n {
        let chunk = events
            .get_mut(i * EventData::SIZE..(i + 1) * EventData::SIZE)
            .ok_or(Errno::EFAULT)?;
        let mut d = EventData::from_bytes(chunk).ok_or(Errno::EFAULT)?;
        let ev = st
            .kfd
            .events
            .get((d.event_id as usize).wrapping_sub(1))
            .ok_or(Errno::EINVAL)?;
        if ev.etype == event_type::MEMORY {
            if let Some(MmuFault {
                va,
                not_present,
                read_only,
                no_execute,
                imprecise,
            }) = fault
            {
                d = EventData {
                    not_present: not_present as u32,
                    read_only: read_only as u32,
                    no_execute: no_execute as u32,
                    imprecise: imprecise as u32,
                    va,
                    gpu_id: GPU_ID,
                    error_type: 0,
                    ext: 0,
                    event_id: d.event_id,
                };
                any_fault = true;
            }
        }
        chunk.copy_from_slice(&d.to_bytes());
    }
    a.wait_result = if raised || any_fault {
        wait_result::COMPLETE
    } else {
        wait_result::TIMEOUT
    };
    put(arg, &a.to_bytes());
    Ok(())
}
