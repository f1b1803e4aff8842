//! `runtime`: wavescope's GPU runtime. Knows devices, knows no screen.
//!
//! Layering (lowest first), after `runtime-architecture.md` and `mockgpu.md` §4:
//! - [`platform`]: the OS seam ([`platform::Platform`]: open/ioctl/mmap/sysfs) and the
//!   [`platform::Mmio`] view every ring, doorbell, register window and CPU view of GPU memory
//!   goes through, plus the [`platform::GpuIface`] contract that KFD (and later PCI/USB) implement.
//! - [`kfd`]: the KFD interface (`/dev/kfd` ioctls, sysfs topology and IP discovery).
//! - [`regs`], [`pm4`], [`sdma`]: register tables and packet layouts (shared by builders and the
//!   emulated engines).
//! - [`signal`], [`queue`], [`device`], [`kernel`], [`kernargs`], [`sqtt`], [`pmc`], [`profile`]: the device runtime.
//!
//! The emulated GPU is the separate `emu` crate: it implements these traits from outside, and
//! `runtime` never depends on it (only its tests do).

pub mod conform;
pub mod conform_host;
pub mod conform_io;
pub mod conform_order;
pub mod device;
pub mod error;
pub mod kernargs;
pub mod kernel;
pub mod kfd;
pub mod list;
pub mod pci;
pub mod platform;
pub mod pm4;
pub mod pmc;
pub mod profile;
pub mod queue;
pub mod record;
pub mod record_io;
pub mod regs;
pub mod sdma;
pub mod signal;
pub mod sqtt;
pub mod usb;

pub use device::{Device, DeviceOptions};
pub use error::Error;
