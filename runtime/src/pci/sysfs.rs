//! The real [`PciDevice`]: Linux sysfs (`/sys/bus/pci/devices/<bus>/{vendor,device,config,
//! resource,resourceN,resource0_resize,enable,driver}`), pinned anonymous memory with physical
//! addresses from `/proc/self/pagemap`, and a per-GPU lock file (pci-am-interface.md §1.1).
//!
//! Listing ([`list`]) only reads. [`SysfsPciDevice::open`] takes the lock, refuses a device bound
//! to a kernel driver unless `unbind` was asked for, resizes BAR0, enables the device and maps
//! BARs 0/2/5. The sysfs root is a parameter so tests can run the same code on a fake tree.
//!
//! Interrupts: with `PciOptions::vfio` the device is bound to vfio-pci and MSI arrives on an
//! eventfd ([`super::vfio`]); without it [`PciDevice::wait_interrupt`] sleeps and the IH ring is
//! polled (tinygrad's non-VFIO mode).
//! System pages are populated and `mlock`ed (tinygrad: MAP_LOCKED); as there, keeping locked
//! pages from being compacted needs `/proc/sys/vm/compact_unevictable_allowed = 0`.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use nix::fcntl::{Flock, FlockArg};

use super::{
    PciDevice, PciError, PciOptions, PciResult, SysMem, AMD_VENDOR, BAR_DOORBELL, BAR_MMIO,
    BAR_VRAM, SUPPORTED_DEVICES,
};
use crate::platform::{host::HostPlatform, Errno, Mmio, Platform};

/// One AMD GPU function found on the bus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PciInfo {
    pub bus: String,
    pub vendor: u16,
    pub device: u16,
    /// Name of the bound kernel driver, if any.
    pub driver: Option<String>,
    pub dir: PathBuf,
}

fn sys_err(path: &Path, e: &std::io::Error, hint: Option<&'static str>) -> PciError {
    PciError::Sys {
        path: path.display().to_string(),
        errno: Errno(e.raw_os_error().unwrap_or(5)),
        hint,
    }
}

fn read_hex(path: &Path) -> Option<u64> {
    let s = std::fs::read_to_string(path).ok()?;
    let t = s.trim();
    u64::from_str_radix(t.trim_start_matches("0x").trim_start_matches("0X"), 16).ok()
}

/// Lists supported AMD GPUs under `<root>/sys/bus/pci/devices`, sorted by bus id. Read-only.
pub fn list(root: &Path) -> PciResult<Vec<PciInfo>> {
    let devs = root.join("sys/bus/pci/devices");
    let rd = std::fs::read_dir(&devs).map_err(|e| PciError::NoDevice {
        detail: format!("cannot list {}: {e}", devs.display()),
    })?;
    let mut out = Vec::new();
    for ent in rd.flatten() {
        let dir = ent.path();
        let (Some(v), Some(d)) = (read_hex(&dir.join("vendor")), read_hex(&dir.join("device")))
        else {
            continue;
        };
        if v != u64::from(AMD_VENDOR) || !SUPPORTED_DEVICES.contains(&(d as u16)) {
            continue;
        }
        let driver = std::fs::read_link(dir.join("driver"))
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
        out.push(PciInfo {
            bus: ent.file_name().to_string_lossy().into_owned(),
            vendor: v as u16,
            device: d as u16,
            driver,
            dir,
        });
    }
    out.sort_by(|a, b| a.bus.cmp(&b.bus));
    Ok(out)
}

struct SysPages {
    mem: Arc<dyn Mmio>,
}

pub struct SysfsPciDevice {
    info: PciInfo,
    config: File,
    bars: [Option<Arc<dyn Mmio>>; 6],
    platform: HostPlatform,
    _lock: Flock<File>,
    pinned: Mutex<Vec<SysPages>>,
    irq: Option<super::vfio::VfioIrq>,
}

/// Where lock files go (`/tmp/am_<bus>.lock`, as tinygrad).
pub fn lock_path(lock_dir: &Path, bus: &str) -> PathBuf {
    lock_dir.join(format!("am_{bus}.lock"))
}

impl SysfsPciDevice {
    /// Opens GPU number `index` of [`list`] on the real system.
    pub fn open_index(index: usize, opts: &PciOptions) -> PciResult<Self> {
        let all = list(Path::new("/"))?;
        let n = all.len();
        let info = all.into_iter().nth(index).ok_or_else(|| PciError::NoDevice {
            detail: if n == 0 {
                format!(
                    "no vendor {AMD_VENDOR:#06x} device with a supported id under /sys/bus/pci/devices"
                )
            } else {
                format!("wanted GPU {index}, found {n}")
            },
        })?;
        Self::open(info, opts, Path::new("/tmp"))
    }

    /// Takes the lock, checks/unbinds the driver, resizes BAR0, enables and maps the device.
    pub fn open(info: PciInfo, opts: &PciOptions, lock_dir: &Path) -> PciResult<Self> {
        let lp = lock_path(lock_dir, &info.bus);
        let lf = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lp)
            .map_err(|e| sys_err(&lp, &e, None))?;
        let lock =
            Flock::lock(lf, FlockArg::LockExclusiveNonblock).map_err(|_| PciError::Locked {
                bus: info.bus.clone(),
                path: lp.display().to_string(),
            })?;
        let dir = info.dir.clone();
        if let Some(drv) = &info.driver {
            if !opts.unbind {
                return Err(PciError::BoundToDriver {
                    bus: info.bus.clone(),
                    driver: drv.clone(),
                });
            }
            let p = dir.join("driver/unbind");
            std::fs::write(&p, &info.bus)
                .map_err(|e| sys_err(&p, &e, Some("unbinding a driver needs root")))?;
        }
        // Resizable BAR: ask for the largest size the device supports.
        let rp = dir.join("resource0_resize");
        if let Some(mask) = read_hex(&rp) {
            if mask != 0 {
                let idx = 63 - mask.leading_zeros();
                let cur = bar_sizes(&dir).first().copied().unwrap_or(0);
                if cur < (1u64 << 20) << idx {
                    std::fs::write(&rp, idx.to_string()).map_err(|e| {
                        sys_err(
                            &rp,
                            &e,
                            Some("BAR resize failed: enable Resizable BAR (and Above 4G Decoding) in the firmware setup"),
                        )
                    })?;
                }
            }
        }
        let irq = if opts.vfio {
            // <root>/sys/bus/pci/devices/<bus> → <root>.
            let root = dir.ancestors().nth(5).unwrap_or(Path::new("/"));
            Some(super::vfio::VfioIrq::setup(root, &dir, &info.bus)?)
        } else {
            let ep = dir.join("enable");
            if ep.exists() {
                std::fs::write(&ep, "1").map_err(|e| sys_err(&ep, &e, Some("needs root")))?;
            }
            None
        };
        let cp = dir.join("config");
        let config = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&cp)
            .map_err(|e| {
                sys_err(
                    &cp,
                    &e,
                    Some("opening PCI config space read-write needs root"),
                )
            })?;
        let platform = HostPlatform::new();
        let sizes = bar_sizes(&dir);
        let mut bars: [Option<Arc<dyn Mmio>>; 6] = Default::default();
        for b in [BAR_VRAM, BAR_DOORBELL, BAR_MMIO] {
            let len = sizes.get(usize::from(b)).copied().unwrap_or(0);
            if len == 0 {
                return Err(PciError::NoDevice {
                    detail: format!("{}: BAR{b} is not present", info.bus),
                });
            }
            let path = dir.join(format!("resource{b}"));
            let ps = path.display().to_string();
            let fd = platform.open(&ps).map_err(|errno| PciError::Sys {
                path: ps.clone(),
                errno,
                hint: Some("mapping BARs needs root"),
            })?;
            let m = platform.mmap(fd, 0, len, None);
            platform.close(fd);
            bars[usize::from(b)] = Some(m.map_err(|errno| PciError::Sys {
                path: ps,
                errno,
                hint: None,
            })?);
        }
        Ok(SysfsPciDevice {
            info,
            config,
            bars,
            platform,
            _lock: lock,
            pinned: Mutex::new(Vec::new()),
            irq,
        })
    }
}

/// BAR sizes from the `resource` file (one "start end flags" line per resource).
fn bar_sizes(dir: &Path) -> Vec<u64> {
    let Ok(text) = std::fs::read_to_string(dir.join("resource")) else {
        return Vec::new();
    };
    text.lines()
        .map(|l| {
            let v: Vec<u64> = l
                .split_whitespace()
                .filter_map(|x| u64::from_str_radix(x.trim_start_matches("0x"), 16).ok())
                .collect();
            match v.as_slice() {
                [s, e, ..] if *e > *s => e - s + 1,
                _ => 0,
            }
        })
        .collect()
}

/// Physical address of the page holding `va` (needs root: otherwise the PFN reads as 0).
fn phys_of(pagemap: &File, va: u64) -> PciResult<u64> {
    let mut b = [0u8; 8];
    pagemap
        .read_exact_at(&mut b, (va / 0x1000) * 8)
        .map_err(|e| sys_err(Path::new("/proc/self/pagemap"), &e, None))?;
    let e = u64::from_le_bytes(b);
    let pfn = e & ((1 << 55) - 1);
    if e >> 63 == 0 || pfn == 0 {
        return Err(PciError::Sys {
            path: "/proc/self/pagemap".into(),
            errno: Errno::EPERM,
            hint: Some("physical addresses of pinned pages need root (CAP_SYS_ADMIN)"),
        });
    }
    Ok(pfn * 0x1000)
}

impl PciDevice for SysfsPciDevice {
    fn bus_id(&self) -> String {
        self.info.bus.clone()
    }
    fn config_read(&self, offset: u16, len: u8) -> PciResult<u32> {
        let mut b = [0u8; 4];
        let n = usize::from(len.clamp(1, 4));
        self.config
            .read_exact_at(&mut b[..n], u64::from(offset))
            .map_err(|e| sys_err(&self.info.dir.join("config"), &e, None))?;
        Ok(u32::from_le_bytes(b))
    }
    fn config_write(&self, offset: u16, len: u8, value: u32) -> PciResult<()> {
        let n = usize::from(len.clamp(1, 4));
        self.config
            .write_all_at(&value.to_le_bytes()[..n], u64::from(offset))
            .map_err(|e| sys_err(&self.info.dir.join("config"), &e, None))
    }
    fn bar_len(&self, bar: u8) -> u64 {
        self.bars
            .get(usize::from(bar))
            .and_then(|b| b.as_ref())
            .map(|b| b.size())
            .unwrap_or(0)
    }
    fn bar(&self, bar: u8) -> PciResult<Arc<dyn Mmio>> {
        self.bars
            .get(usize::from(bar))
            .and_then(|b| b.clone())
            .ok_or_else(|| PciError::NoDevice {
                detail: format!("{}: BAR{bar} is not mapped", self.info.bus),
            })
    }
    fn alloc_sysmem(&self, size: u64) -> PciResult<SysMem> {
        let size = size.div_ceil(0x1000) * 0x1000;
        let mem = self
            .platform
            .anon_mmap(size)
            .map_err(|errno| PciError::Sys {
                path: "anonymous memory".into(),
                errno,
                hint: None,
            })?;
        // Populate every page (a write faults it in) so it has a physical address, then lock
        // it so the kernel neither swaps nor migrates it while the GPU DMAs to it.
        for off in (0..size).step_by(0x1000) {
            mem.write32(off, 0)?;
        }
        let ptr = std::ptr::NonNull::new(mem.addr() as *mut std::ffi::c_void).ok_or(
            PciError::OutOfMemory {
                what: "pinned system memory",
                size,
            },
        )?;
        // SAFETY: `ptr`/`size` is exactly the live anonymous mapping `mem` owns (page aligned,
        // `size` bytes); mlock only changes its residency, no Rust reference is created.
        unsafe { nix::sys::mman::mlock(ptr, size as usize) }.map_err(|e| PciError::Sys {
            path: "mlock of DMA pages".into(),
            errno: Errno(e as i32),
            hint: Some("raise RLIMIT_MEMLOCK (ulimit -l) or run as root"),
        })?;
        let pm = File::open("/proc/self/pagemap")
            .map_err(|e| sys_err(Path::new("/proc/self/pagemap"), &e, None))?;
        let pages = (0..size)
            .step_by(0x1000)
            .map(|off| phys_of(&pm, mem.addr() + off))
            .collect::<PciResult<Vec<u64>>>()?;
        if let Ok(mut p) = self.pinned.lock() {
            p.push(SysPages { mem: mem.clone() });
        }
        Ok(SysMem { cpu: mem, pages })
    }
    fn free_sysmem(&self, mem: &SysMem) {
        if let Ok(mut p) = self.pinned.lock() {
            p.retain(|s| s.mem.addr() != mem.cpu.addr());
        }
    }
    fn wait_interrupt(&self, timeout_ms: u32) -> PciResult<bool> {
        if let Some(irq) = &self.irq {
            return irq.wait(timeout_ms);
        }
        std::thread::sleep(std::time::Duration::from_millis(u64::from(
            timeout_ms.min(1),
        )));
        Ok(false)
    }
}
