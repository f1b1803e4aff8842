//! The driverless PCI path ("AM", pci-am-interface.md): a [`PciDevice`] (config space, BARs,
//! DMA-able system pages, interrupts) and the userspace driver in [`am`] that brings the GPU up
//! through it and implements [`crate::platform::GpuIface`] ([`iface::PciIface`]).
//!
//! [`PciDevice`] is deliberately small: every method is a config read/write, a BAR read/write
//! (through the returned [`Mmio`] views) or DMA to system pages, so the same driver runs over the
//! real sysfs/VFIO device ([`sysfs`]), the emulated PCI GPU (the `emu` crate's `pci`) and a
//! USB-tunnelled device.

pub mod am;
pub mod iface;
pub mod sysfs;
pub mod vfio;

use std::sync::Arc;

use crate::platform::{check_range, Errno, Mmio, MmioError};

/// AMD's PCI vendor id.
pub const AMD_VENDOR: u16 = 0x1002;
/// Device ids the driver accepts (pci-am-interface.md §1.1): Navi31, Navi33, Navi48 (v0.11.0)
/// and the HEAD additions.
pub const SUPPORTED_DEVICES: &[u16] = &[
    0x744c, 0x7480, 0x7550, 0x74a1, 0x7551, 0x7590, 0x75a0, 0x75a8,
];

/// BAR numbers of an AMD GPU.
pub const BAR_VRAM: u8 = 0;
pub const BAR_DOORBELL: u8 = 2;
pub const BAR_MMIO: u8 = 5;

/// PCI config space offsets used by the driver.
pub mod config {
    pub const VENDOR_ID: u16 = 0x00;
    pub const DEVICE_ID: u16 = 0x02;
    pub const COMMAND: u16 = 0x04;
    pub const COMMAND_MEMORY: u32 = 0x2;
    pub const COMMAND_MASTER: u32 = 0x4;
}

/// Failures of the PCI path; each says what to do where there is something to do.
#[derive(Debug, thiserror::Error)]
pub enum PciError {
    #[error("no AMD GPU found on the PCI bus ({detail})")]
    NoDevice { detail: String },
    #[error("PCI device {bus} is bound to the kernel driver {driver:?}; wavescope unbinds it only when asked (set WAVESCOPE_PCI_UNBIND=1 / pass unbind), which takes the GPU away from the desktop and ROCm")]
    BoundToDriver { bus: String, driver: String },
    #[error("PCI device {bus} is in use by another process (lock file {path} is held)")]
    Locked { bus: String, path: String },
    #[error("{path}: {errno}{}", hint.map(|h| format!(" ({h})")).unwrap_or_default())]
    Sys {
        path: String,
        errno: Errno,
        hint: Option<&'static str>,
    },
    #[error("firmware {file}: {msg}")]
    Firmware { file: String, msg: String },
    #[error("unsupported IP version: {ip} {} ({msg})", fmt_ver(*version))]
    UnsupportedIp {
        ip: &'static str,
        version: (u32, u32, u32),
        msg: String,
    },
    #[error("IP discovery table at VRAM offset {offset:#x}: {msg}")]
    Discovery { offset: u64, msg: String },
    #[error("{block} did not answer: {what} (register {reg} stayed {value:#x} for {ms} ms)")]
    Timeout {
        block: &'static str,
        what: String,
        reg: &'static str,
        value: u32,
        ms: u64,
    },
    #[error("{block} rejected {what}: status {status:#x}")]
    Rejected {
        block: &'static str,
        what: String,
        status: u32,
    },
    #[error("out of {what}: {size:#x} bytes requested")]
    OutOfMemory { what: &'static str, size: u64 },
    #[error("address {va:#x} is not mapped in the GPU page tables")]
    NotMapped { va: u64 },
    /// A GPU a previous session left in a state this driver cannot reset.
    /// `why` holds the state and the fix ("...; reset the GPU ..."): two strings, not three,
    /// keep every `Result` carrying this error small.
    #[error("{bus}: {why}")]
    Unrecoverable { bus: String, why: String },
    #[error(transparent)]
    Mmio(#[from] MmioError),
}

pub type PciResult<T> = std::result::Result<T, PciError>;

fn fmt_ver(v: (u32, u32, u32)) -> String {
    format!("{}.{}.{}", v.0, v.1, v.2)
}

/// System memory the GPU can reach by DMA: a CPU view and the bus address of each 4 KiB page.
#[derive(Clone)]
pub struct SysMem {
    pub cpu: Arc<dyn Mmio>,
    pub pages: Vec<u64>,
}

/// A PCI function as the driver needs it.
pub trait PciDevice: Send + Sync {
    /// `domain:bus:dev.fn` (or a name for emulated/tunnelled devices).
    fn bus_id(&self) -> String;
    /// Reads `len` (1, 2 or 4) bytes of config space.
    fn config_read(&self, offset: u16, len: u8) -> PciResult<u32>;
    fn config_write(&self, offset: u16, len: u8, value: u32) -> PciResult<()>;
    /// Size of a BAR in bytes (0: not present).
    fn bar_len(&self, bar: u8) -> u64;
    /// A read/write view of a whole BAR (VRAM, doorbells, registers).
    fn bar(&self, bar: u8) -> PciResult<Arc<dyn Mmio>>;
    /// Pinned system memory with bus addresses (page granular).
    fn alloc_sysmem(&self, size: u64) -> PciResult<SysMem>;
    fn free_sysmem(&self, mem: &SysMem);
    /// Waits up to `timeout_ms` for an MSI; `Ok(false)` on timeout or without interrupts.
    fn wait_interrupt(&self, timeout_ms: u32) -> PciResult<bool>;
}

/// A window `[offset, offset+len)` of another view whose `addr()` is a chosen address (the GPU
/// VA of a buffer: signals and rings compute GPU addresses from `addr()`).
pub struct SubView {
    inner: Arc<dyn Mmio>,
    offset: u64,
    len: u64,
    addr: u64,
}

impl SubView {
    pub fn new(inner: Arc<dyn Mmio>, offset: u64, len: u64, addr: u64) -> Self {
        SubView {
            inner,
            offset,
            len,
            addr,
        }
    }
}

impl Mmio for SubView {
    fn addr(&self) -> u64 {
        self.addr
    }
    fn size(&self) -> u64 {
        self.len
    }
    fn read_bytes(&self, offset: u64, out: &mut [u8]) -> Result<(), MmioError> {
        check_range(self.addr, self.len, offset, out.len() as u64)?;
        self.inner.read_bytes(self.offset + offset, out)
    }
    fn write_bytes(&self, offset: u64, data: &[u8]) -> Result<(), MmioError> {
        check_range(self.addr, self.len, offset, data.len() as u64)?;
        self.inner.write_bytes(self.offset + offset, data)
    }
    fn read32(&self, offset: u64) -> Result<u32, MmioError> {
        check_range(self.addr, self.len, offset, 4)?;
        self.inner.read32(self.offset + offset)
    }
    fn write32(&self, offset: u64, v: u32) -> Result<(), MmioError> {
        check_range(self.addr, self.len, offset, 4)?;
        self.inner.write32(self.offset + offset, v)
    }
    fn read64(&self, offset: u64) -> Result<u64, MmioError> {
        check_range(self.addr, self.len, offset, 8)?;
        self.inner.read64(self.offset + offset)
    }
    fn write64(&self, offset: u64, v: u64) -> Result<(), MmioError> {
        check_range(self.addr, self.len, offset, 8)?;
        self.inner.write64(self.offset + offset, v)
    }
    fn write_dwords(&self, offset: u64, words: &[u32]) -> Result<(), MmioError> {
        check_range(self.addr, self.len, offset, words.len() as u64 * 4)?;
        self.inner.write_dwords(self.offset + offset, words)
    }
}

/// Options of the PCI path.
#[derive(Debug, Clone)]
pub struct PciOptions {
    /// Unbind amdgpu (or whatever driver holds the GPU) first. Without it a bound device is an
    /// error and nothing is written.
    pub unbind: bool,
    /// Directory of the linux-firmware `amdgpu/` files.
    pub firmware_dir: std::path::PathBuf,
    /// How long a PSP/SMU handshake may take.
    pub handshake_timeout_ms: u64,
    /// Bind the GPU to vfio-pci (no-IOMMU mode) for MSI interrupts instead of polling.
    pub vfio: bool,
}

impl Default for PciOptions {
    fn default() -> Self {
        PciOptions {
            unbind: false,
            firmware_dir: "/lib/firmware/amdgpu".into(),
            handshake_timeout_ms: 2000,
            vfio: false,
        }
    }
}
