//! MSI interrupts through VFIO in no-IOMMU mode (pci-am-interface.md §1.1 step 6), opt-in
//! (`PciOptions::vfio`, `WAVESCOPE_PCI_VFIO=1`): the device is bound to vfio-pci, a container and
//! its group are opened, and an eventfd is attached to MSI vector 0. BARs stay mapped through
//! sysfs; only interrupts come from here. `unsafe` is limited to the VFIO ioctls, eventfd and
//! poll calls, each with its `SAFETY` reasoning.

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use super::{PciError, PciResult};
use crate::platform::Errno;

const VFIO_TYPE: u64 = b';' as u64;
const fn vfio_io(nr: u64) -> u64 {
    (VFIO_TYPE << 8) | nr
}
pub const VFIO_CHECK_EXTENSION: u64 = vfio_io(101);
pub const VFIO_SET_IOMMU: u64 = vfio_io(102);
pub const VFIO_GROUP_SET_CONTAINER: u64 = vfio_io(104);
pub const VFIO_GROUP_GET_DEVICE_FD: u64 = vfio_io(106);
pub const VFIO_DEVICE_SET_IRQS: u64 = vfio_io(110);
pub const VFIO_NOIOMMU_IOMMU: u64 = 8;
const IRQ_SET_DATA_EVENTFD: u32 = 1 << 2;
const IRQ_SET_ACTION_TRIGGER: u32 = 1 << 5;
const PCI_MSI_IRQ_INDEX: u32 = 1;

fn last_errno() -> Errno {
    Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(5))
}

fn sys(path: &str, errno: Errno, hint: Option<&'static str>) -> PciError {
    PciError::Sys {
        path: path.into(),
        errno,
        hint,
    }
}

fn write(p: &Path, v: &str, hint: &'static str) -> PciResult<()> {
    std::fs::write(p, v).map_err(|e| {
        sys(
            &p.display().to_string(),
            Errno(e.raw_os_error().unwrap_or(5)),
            Some(hint),
        )
    })
}

/// An ioctl whose argument is a plain integer or a pointer; returns the call's result.
///
/// # Safety
/// `req` must be a VFIO request that `fd` understands, and `arg` must be what that request takes:
/// an integer, or the address of a live buffer laid out as its struct and large enough for
/// everything the kernel reads or writes through it for the duration of the call.
unsafe fn ioctl(fd: &impl AsRawFd, req: u64, arg: u64, what: &str) -> PciResult<i32> {
    // SAFETY: the caller upholds this function's contract (request and argument agree).
    let r = unsafe { nix::libc::ioctl(fd.as_raw_fd(), req as _, arg) };
    if r < 0 {
        return Err(sys(
            what,
            last_errno(),
            Some("VFIO no-IOMMU mode needs root"),
        ));
    }
    Ok(r)
}

// Typed VFIO requests: each takes exactly its argument, so none can be misused from safe code.

fn check_extension(container: &File, ext: u64) -> PciResult<i32> {
    // SAFETY: VFIO_CHECK_EXTENSION on a container takes an integer (the extension id).
    unsafe { ioctl(container, VFIO_CHECK_EXTENSION, ext, "VFIO_CHECK_EXTENSION") }
}

fn set_iommu(container: &File, kind: u64) -> PciResult<()> {
    // SAFETY: VFIO_SET_IOMMU on a container takes an integer (the IOMMU model).
    unsafe { ioctl(container, VFIO_SET_IOMMU, kind, "VFIO_SET_IOMMU") }.map(|_| ())
}

fn group_set_container(group: &File, container: &File) -> PciResult<()> {
    let cfd: i32 = container.as_raw_fd();
    // SAFETY: VFIO_GROUP_SET_CONTAINER takes a pointer to an int holding the container fd;
    // `cfd` lives across the call and the kernel only reads it.
    unsafe {
        ioctl(
            group,
            VFIO_GROUP_SET_CONTAINER,
            &cfd as *const i32 as u64,
            "VFIO_GROUP_SET_CONTAINER",
        )
    }
    .map(|_| ())
}

fn group_get_device_fd(group: &File, bus: &std::ffi::CStr) -> PciResult<OwnedFd> {
    // SAFETY: VFIO_GROUP_GET_DEVICE_FD takes a NUL-terminated string, which `bus` is and which
    // outlives the call; the kernel only reads it.
    let dfd = unsafe {
        ioctl(
            group,
            VFIO_GROUP_GET_DEVICE_FD,
            bus.as_ptr() as u64,
            "VFIO_GROUP_GET_DEVICE_FD",
        )
    }?;
    // SAFETY: the kernel just returned `dfd` (non-negative, checked by `ioctl`) as a new
    // descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(dfd) })
}

/// Attaches `event` to MSI vector 0 of `device`.
fn set_msi_eventfd(device: &OwnedFd, event: &OwnedFd) -> PciResult<()> {
    // struct vfio_irq_set {argsz, flags, index, start, count, data[4]}.
    let set: [u32; 6] = [
        24,
        IRQ_SET_DATA_EVENTFD | IRQ_SET_ACTION_TRIGGER,
        PCI_MSI_IRQ_INDEX,
        0,
        1,
        event.as_raw_fd() as u32,
    ];
    // SAFETY: VFIO_DEVICE_SET_IRQS takes a pointer to a vfio_irq_set whose argsz (24) is the
    // size of `set`, which lives across the call; the kernel only reads it.
    unsafe {
        ioctl(
            device,
            VFIO_DEVICE_SET_IRQS,
            set.as_ptr() as u64,
            "VFIO_DEVICE_SET_IRQS",
        )
    }
    .map(|_| ())
}

/// A device's MSI eventfd with its VFIO container, group and device descriptors kept open.
pub struct VfioIrq {
    _container: File,
    _group: File,
    _device: OwnedFd,
    event: OwnedFd,
}

impl VfioIrq {
    /// `root`: the filesystem root the sysfs tree hangs off ("/" on a real system).
    pub fn setup(root: &Path, dir: &Path, bus: &str) -> PciResult<VfioIrq> {
        let vfio_mod = root.join("sys/module/vfio_pci");
        if !vfio_mod.exists() {
            if root != Path::new("/") {
                return Err(PciError::NoDevice {
                    detail: format!("{} missing (vfio-pci not loaded)", vfio_mod.display()),
                });
            }
            let ok = std::process::Command::new("modprobe")
                .args(["vfio-pci", "disable_idle_d3=1"])
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if !ok {
                return Err(PciError::NoDevice {
                    detail: "modprobe vfio-pci failed (is the module available? are we root?)"
                        .into(),
                });
            }
        }
        write(
            &root.join("sys/module/vfio/parameters/enable_unsafe_noiommu_mode"),
            "1",
            "enabling VFIO no-IOMMU mode needs root",
        )?;
        let cpath = root.join("dev/vfio/vfio");
        let container = File::options()
            .read(true)
            .write(true)
            .open(&cpath)
            .map_err(|e| {
                sys(
                    &cpath.display().to_string(),
                    Errno(e.raw_os_error().unwrap_or(2)),
                    Some("no VFIO: load vfio-pci"),
                )
            })?;
        if check_extension(&container, VFIO_NOIOMMU_IOMMU)? == 0 {
            return Err(PciError::NoDevice {
                detail: "VFIO has no no-IOMMU support (CONFIG_VFIO_NOIOMMU)".into(),
            });
        }
        write(
            &dir.join("driver_override"),
            "vfio-pci",
            "binding to vfio-pci needs root",
        )?;
        write(
            &root.join("sys/bus/pci/drivers_probe"),
            bus,
            "binding to vfio-pci needs root",
        )?;
        let group: PathBuf = std::fs::read_link(dir.join("iommu_group")).map_err(|e| {
            sys(
                &dir.join("iommu_group").display().to_string(),
                Errno(e.raw_os_error().unwrap_or(2)),
                None,
            )
        })?;
        let gname = group
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let gpath = root.join(format!("dev/vfio/noiommu-{gname}"));
        let group = File::options()
            .read(true)
            .write(true)
            .open(&gpath)
            .map_err(|e| {
                sys(
                    &gpath.display().to_string(),
                    Errno(e.raw_os_error().unwrap_or(2)),
                    None,
                )
            })?;
        group_set_container(&group, &container)?;
        set_iommu(&container, VFIO_NOIOMMU_IOMMU)?;
        let name = std::ffi::CString::new(bus).map_err(|_| PciError::NoDevice {
            detail: format!("bad bus id {bus:?}"),
        })?;
        let device = group_get_device_fd(&group, &name)?;
        // SAFETY: eventfd(2) has no memory arguments; a negative result is checked below.
        let efd = unsafe { nix::libc::eventfd(0, nix::libc::EFD_CLOEXEC) };
        if efd < 0 {
            return Err(sys("eventfd", last_errno(), None));
        }
        // SAFETY: `efd` is a fresh descriptor owned by nothing else.
        let event = unsafe { OwnedFd::from_raw_fd(efd) };
        set_msi_eventfd(&device, &event)?;
        Ok(VfioIrq {
            _container: container,
            _group: group,
            _device: device,
            event,
        })
    }

    /// Waits for the MSI eventfd; `Ok(true)` when it fired (and consumes the count).
    pub fn wait(&self, timeout_ms: u32) -> PciResult<bool> {
        let mut pfd = nix::libc::pollfd {
            fd: self.event.as_raw_fd(),
            events: nix::libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `pfd` is a live, correctly laid out pollfd and the count is 1.
        let r = unsafe { nix::libc::poll(&mut pfd, 1, timeout_ms.min(i32::MAX as u32) as i32) };
        if r < 0 {
            return Err(sys("poll(eventfd)", last_errno(), None));
        }
        if r == 0 {
            return Ok(false);
        }
        let mut b = [0u8; 8];
        // SAFETY: reading 8 bytes into a live 8-byte buffer from our eventfd.
        let n = unsafe {
            nix::libc::read(
                self.event.as_raw_fd(),
                b.as_mut_ptr() as *mut nix::libc::c_void,
                8,
            )
        };
        Ok(n == 8)
    }
}
