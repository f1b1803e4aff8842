//! The runtime's error type: every failure a user can meet, worded so it says what to do.

use crate::platform::{Errno, MmioError};

/// A fault report gathered after a device hang (signal timeout) or a fault event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultReport {
    /// Memory fault: faulting virtual address and the KFD failure bits.
    pub mmu_fault: Option<MmuFault>,
    /// Hardware exception (reset) reported by the driver.
    pub hw_exception: Option<HwException>,
    /// Free text from the interface (e.g. what the signal was waiting for).
    pub context: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MmuFault {
    pub va: u64,
    pub not_present: bool,
    pub read_only: bool,
    pub no_execute: bool,
    pub imprecise: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HwException {
    pub reset_type: u32,
    pub reset_cause: u32,
    pub memory_lost: bool,
}

impl std::fmt::Display for FaultReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.context)?;
        if let Some(m) = &self.mmu_fault {
            write!(
                f,
                "; MMU fault at VA {:#x} (not_present={} read_only={} no_execute={} imprecise={})",
                m.va, m.not_present as u8, m.read_only as u8, m.no_execute as u8, m.imprecise as u8
            )?;
        }
        if let Some(h) = &self.hw_exception {
            write!(
                f,
                "; hardware exception: reset_type={} reset_cause={} memory_lost={}",
                h.reset_type, h.reset_cause, h.memory_lost
            )?;
        }
        if self.mmu_fault.is_none() && self.hw_exception.is_none() {
            write!(f, "; the driver reported no memory or hardware fault")?;
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path} does not exist: is the amdgpu driver loaded (modprobe amdgpu) and is this a ROCm-capable kernel?")]
    NoKfd { path: String },
    #[error("cannot open {path}: {errno} (add your user to the 'render' and 'video' groups)")]
    Open { path: String, errno: Errno },
    #[error("no usable GPU node in the KFD topology ({detail})")]
    NoGpuNode { detail: String },
    #[error("KFD topology: {path}: {msg}")]
    Topology { path: String, msg: String },
    #[error("ioctl {name} failed: {errno}{}", hint.map(|h| format!(" ({h})")).unwrap_or_default())]
    Ioctl {
        name: &'static str,
        errno: Errno,
        hint: Option<&'static str>,
    },
    #[error("cannot allocate {size} bytes of CPU-visible VRAM: the GPU's BAR is too small; enable Resizable BAR (and Above 4G Decoding) in the firmware setup")]
    NoResizableBar { size: u64 },
    #[error("out of {kind} memory allocating {size} bytes")]
    OutOfMemory { kind: &'static str, size: u64 },
    #[error("mmap failed: {errno}")]
    Mmap { errno: Errno },
    #[error("device hang: {0}")]
    DeviceHang(FaultReport),
    #[error(transparent)]
    Mmio(#[from] MmioError),
    #[error(transparent)]
    Pci(#[from] crate::pci::PciError),
    #[error("code object: {0}")]
    Program(String),
    /// Boxed: the error stays small for every `Result` of the runtime.
    #[error(transparent)]
    Args(Box<crate::kernargs::ArgError>),
    #[error("unsupported: {0}")]
    Unsupported(String),
    #[error("invalid argument: {0}")]
    Invalid(String),
    #[error("profile: {0}")]
    Profile(String),
}

impl From<crate::kernargs::ArgError> for Error {
    fn from(e: crate::kernargs::ArgError) -> Self {
        Error::Args(Box::new(e))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
