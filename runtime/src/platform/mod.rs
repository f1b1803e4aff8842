//! The lowest seams: [`Platform`] (what the OS gives us) and [`Mmio`] (a window of device-visible
//! memory or registers), and the interface contract [`GpuIface`] that KFD, PCI and USB implement.
//!
//! Real and emulated devices share every line above these traits: the emulated GPU is a
//! [`Platform`] whose `/dev/kfd` and sysfs are virtual and whose memory views are [`Mmio`]s that
//! the emulator sees being written (a doorbell write runs the emulated command processor).

pub mod host;

use std::sync::Arc;

use crate::error::{FaultReport, Result};

/// A file descriptor handed out by a [`Platform`] (real or virtual).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fd(pub i32);

/// An OS error number (`errno`), as returned by a failing system call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

impl Errno {
    pub const EPERM: Errno = Errno(1);
    pub const ENOENT: Errno = Errno(2);
    pub const EIO: Errno = Errno(5);
    pub const EBADF: Errno = Errno(9);
    pub const EAGAIN: Errno = Errno(11);
    pub const ENOMEM: Errno = Errno(12);
    pub const EACCES: Errno = Errno(13);
    pub const EFAULT: Errno = Errno(14);
    pub const EBUSY: Errno = Errno(16);
    pub const ENODEV: Errno = Errno(19);
    pub const EINVAL: Errno = Errno(22);
    pub const ENOSPC: Errno = Errno(28);
    pub const ENOTTY: Errno = Errno(25);
    pub const ETIME: Errno = Errno(62);

    pub fn name(self) -> &'static str {
        match self.0 {
            1 => "EPERM",
            2 => "ENOENT",
            5 => "EIO",
            9 => "EBADF",
            11 => "EAGAIN",
            12 => "ENOMEM",
            13 => "EACCES",
            14 => "EFAULT",
            16 => "EBUSY",
            19 => "ENODEV",
            22 => "EINVAL",
            25 => "ENOTTY",
            28 => "ENOSPC",
            62 => "ETIME",
            _ => "errno",
        }
    }
}

impl std::fmt::Display for Errno {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let desc = nix::errno::Errno::from_raw(self.0).desc();
        write!(f, "{} ({}): {}", self.name(), self.0, desc)
    }
}

impl std::error::Error for Errno {}

/// An access outside an [`Mmio`] window, or to memory the device cannot reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("MMIO access of {len} bytes at offset {offset:#x} outside a window of {size:#x} bytes at {base:#x}")]
pub struct MmioError {
    pub base: u64,
    pub offset: u64,
    pub len: u64,
    pub size: u64,
}

/// A window of device-visible memory or registers (a ring, a doorbell page, a register BAR, the
/// CPU view of a GPU buffer). All accesses are little-endian; offsets are bytes from the start.
pub trait Mmio: Send + Sync {
    /// CPU address of the start of the window (on KFD this is also the GPU virtual address).
    fn addr(&self) -> u64;
    /// Size in bytes.
    fn size(&self) -> u64;
    fn read_bytes(&self, offset: u64, out: &mut [u8]) -> Result<(), MmioError>;
    fn write_bytes(&self, offset: u64, data: &[u8]) -> Result<(), MmioError>;

    fn read32(&self, offset: u64) -> Result<u32, MmioError> {
        let mut b = [0u8; 4];
        self.read_bytes(offset, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    fn write32(&self, offset: u64, v: u32) -> Result<(), MmioError> {
        self.write_bytes(offset, &v.to_le_bytes())
    }
    fn read64(&self, offset: u64) -> Result<u64, MmioError> {
        let mut b = [0u8; 8];
        self.read_bytes(offset, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    fn write64(&self, offset: u64, v: u64) -> Result<(), MmioError> {
        self.write_bytes(offset, &v.to_le_bytes())
    }
    /// Writes a run of dwords (one bulk access: ring submissions use this).
    fn write_dwords(&self, offset: u64, words: &[u32]) -> Result<(), MmioError> {
        let mut bytes = Vec::with_capacity(words.len() * 4);
        for w in words {
            bytes.extend_from_slice(&w.to_le_bytes());
        }
        self.write_bytes(offset, &bytes)
    }
}

/// Bounds check shared by all [`Mmio`] implementations.
pub fn check_range(base: u64, size: u64, offset: u64, len: u64) -> Result<(), MmioError> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        _ => Err(MmioError {
            base,
            offset,
            len,
            size,
        }),
    }
}

/// What the OS gives the runtime: files, ioctls, mappings, sysfs. [`host::HostPlatform`] is the
/// real one; `emu::EmuPlatform` (the `emu` crate) is a virtual `/dev/kfd` with an emulated GPU
/// behind it.
pub trait Platform: Send + Sync {
    /// Opens a device node read-write.
    fn open(&self, path: &str) -> Result<Fd, Errno>;
    fn close(&self, fd: Fd);
    /// Issues `request` with `arg` as the argument struct (laid out exactly as the C struct).
    /// `aux` are the buffers whose addresses the struct's pointer fields hold (the kernel follows
    /// the pointers; an emulated driver finds them here by address, so it needs no `unsafe`).
    fn ioctl(
        &self,
        fd: Fd,
        request: u64,
        arg: &mut [u8],
        aux: &mut [&mut [u8]],
    ) -> Result<(), Errno>;
    /// Reads a (sysfs) text file.
    fn read_file(&self, path: &str) -> Result<String, Errno>;
    /// Lists a directory (names only, unsorted).
    fn read_dir(&self, path: &str) -> Result<Vec<String>, Errno>;
    fn exists(&self, path: &str) -> bool;
    /// Reserves `len` bytes of address space (no access) and returns its address.
    fn reserve_va(&self, len: u64) -> Result<u64, Errno>;
    /// Releases a reservation made by `reserve_va` (exactly its address and length; anything
    /// else is ignored). Mappings placed inside it keep the range reserved until they drop.
    fn release_va(&self, addr: u64, len: u64);
    /// Shared read-write mapping of `fd` at `offset`; at `fixed` if given, which must lie inside
    /// a live reservation and overlap no other mapping placed there.
    fn mmap(
        &self,
        fd: Fd,
        offset: u64,
        len: u64,
        fixed: Option<u64>,
    ) -> Result<Arc<dyn Mmio>, Errno>;
    /// Anonymous shared read-write host memory (for user-pointer allocations and staging).
    fn anon_mmap(&self, len: u64) -> Result<Arc<dyn Mmio>, Errno>;
}

/// Placement and CPU visibility of an allocation (tinygrad's BufferSpec subset the iface sees).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocKind {
    /// System memory owned by the CPU (user pointer on KFD).
    pub host: bool,
    /// Uncached system memory (GTT): rings, signals, queue pointers.
    pub uncached: bool,
    /// The CPU needs a view of this buffer (VRAM through the BAR when not `host`).
    pub cpu_access: bool,
}

impl AllocKind {
    pub const VRAM: AllocKind = AllocKind {
        host: false,
        uncached: false,
        cpu_access: false,
    };
    pub const VRAM_CPU: AllocKind = AllocKind {
        host: false,
        uncached: false,
        cpu_access: true,
    };
    pub const HOST: AllocKind = AllocKind {
        host: true,
        uncached: false,
        cpu_access: true,
    };
    pub const UNCACHED: AllocKind = AllocKind {
        host: true,
        uncached: true,
        cpu_access: true,
    };
    pub const GTT_CPU: AllocKind = AllocKind {
        host: false,
        uncached: true,
        cpu_access: true,
    };

    pub fn label(&self) -> &'static str {
        match (self.host, self.uncached) {
            (_, true) => "GTT",
            (true, false) => "host",
            (false, false) => "VRAM",
        }
    }
}

/// A GPU allocation: its GPU virtual address and, when CPU-visible, the CPU view.
#[derive(Clone)]
pub struct GpuBuffer {
    pub va: u64,
    pub size: u64,
    pub kind: AllocKind,
    /// Driver handle (KFD memory handle).
    pub handle: u64,
    pub cpu: Option<Arc<dyn Mmio>>,
}

impl std::fmt::Debug for GpuBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuBuffer")
            .field("va", &format_args!("{:#x}", self.va))
            .field("size", &self.size)
            .field("kind", &self.kind)
            .field("cpu", &self.cpu.is_some())
            .finish()
    }
}

impl GpuBuffer {
    /// The CPU view, or an error naming the buffer when it has none.
    pub fn cpu(&self) -> Result<&Arc<dyn Mmio>> {
        self.cpu.as_ref().ok_or_else(|| {
            crate::Error::Invalid(format!("buffer at {:#x} has no CPU view", self.va))
        })
    }
}

/// Queue kinds of KFD's CREATE_QUEUE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueKind {
    Compute,
    Sdma,
}

/// A 64-bit location in a CPU-visible window (queue read/write pointers, doorbells).
#[derive(Clone)]
pub struct Slot {
    pub mem: Arc<dyn Mmio>,
    pub offset: u64,
}

impl Slot {
    pub fn read(&self) -> Result<u64, MmioError> {
        self.mem.read64(self.offset)
    }
    pub fn write(&self, v: u64) -> Result<(), MmioError> {
        self.mem.write64(self.offset, v)
    }
}

/// A hardware queue as the iface created it: ring, pointer locations and doorbells (lists:
/// a multi-XCC compute queue shares one ring between the XCCs).
#[derive(Clone)]
pub struct QueueDesc {
    pub ring: Arc<dyn Mmio>,
    pub ring_va: u64,
    pub read_ptrs: Vec<Slot>,
    pub write_ptrs: Vec<Slot>,
    pub doorbells: Vec<Slot>,
}

/// What the queue-creation call needs besides the ring.
pub struct QueueBuffers<'a> {
    pub ring: &'a GpuBuffer,
    /// Page holding the read/write pointers (KFD: wptr at +0, rptr at +8*(xcc+1)).
    pub gart: &'a GpuBuffer,
    pub eop: Option<&'a GpuBuffer>,
    pub cwsr: Option<&'a GpuBuffer>,
    pub ctl_stack_size: u32,
    pub ctx_save_restore_size: u32,
}

/// IP block versions the runtime needs (from IP discovery).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IpVersions {
    pub gc: (u32, u32, u32),
    pub sdma: (u32, u32, u32),
    pub nbio: (u32, u32, u32),
}

/// Segment base addresses (dwords) per IP, instance 0.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IpBases {
    pub gc: Vec<u32>,
    pub sdma: Vec<u32>,
    pub nbio: Vec<u32>,
}

/// Topology properties the runtime consumes (KFD `properties` keys, same names).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceProps {
    pub gfx_target_version: u32,
    pub simd_count: u32,
    pub simd_per_cu: u32,
    pub max_waves_per_simd: u32,
    pub array_count: u32,
    pub simd_arrays_per_engine: u32,
    pub cu_per_simd_array: u32,
    pub lds_size_in_kb: u32,
    pub max_slots_scratch_cu: u32,
    pub num_xcc: u32,
    pub drm_render_minor: u32,
    pub device_id: u32,
    pub vendor_id: u32,
    pub location_id: u32,
    pub domain: u32,
    pub local_mem_size: u64,
}

impl DeviceProps {
    pub fn target(&self) -> traces::GfxTarget {
        traces::GfxTarget::from_target_version(self.gfx_target_version)
    }
    /// Shader engines (SQTT has one buffer per SE).
    pub fn num_se(&self) -> u32 {
        self.array_count / self.simd_arrays_per_engine.max(1)
    }
    pub fn num_cu(&self) -> u32 {
        self.simd_count / self.simd_per_cu.max(1)
    }
}

/// The interface contract each device access path implements (KFD now; PCI/AM and USB later).
pub trait GpuIface: Send {
    fn props(&self) -> &DeviceProps;
    fn ip_versions(&self) -> IpVersions;
    fn ip_bases(&self) -> &IpBases;
    /// Human name of the path ("KFD", "PCI", "USB") and of the node, for messages.
    fn describe(&self) -> String;
    fn alloc(&mut self, size: u64, kind: AllocKind) -> Result<GpuBuffer>;
    fn free(&mut self, buf: GpuBuffer) -> Result<()>;
    /// Makes a buffer owned by another device (or the CPU) visible to this GPU.
    fn map(&mut self, buf: &GpuBuffer) -> Result<()>;
    fn create_queue(
        &mut self,
        kind: QueueKind,
        bufs: QueueBuffers<'_>,
        xcc_id: u32,
    ) -> Result<QueueDesc>;
    /// Sleeps until the device interrupts (or `ms` pass).
    fn sleep(&mut self, ms: u32) -> Result<()>;
    /// Collects what the driver knows after a hang.
    fn on_device_hang(&mut self) -> FaultReport;
    /// KFD's interrupt mailbox: (address, event id) that a signal release writes to wake `sleep`.
    fn event_mailbox(&self) -> Option<(u64, u32)> {
        None
    }
}
