//! Failures of the PCI path end with errors that say what went wrong: missing or malformed
//! firmware, a PSP that never answers, and (real sysfs code on a fake tree) a device bound to
//! amdgpu, a GPU locked by another opener, and listing that writes nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use emu::pci::{firmware, EmuPciConfig, EmuPciGpu};
use emu::EmuArch;
use runtime::pci::iface::PciIface;
use runtime::pci::sysfs::{self, SysfsPciDevice};
use runtime::pci::{PciError, PciOptions};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wavescope-pci-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn boot_with(cfg: EmuPciConfig, fw: &Path, timeout_ms: u64) -> Result<PciIface, runtime::Error> {
    let gpu = EmuPciGpu::new(cfg).unwrap();
    let popts = PciOptions {
        firmware_dir: fw.to_path_buf(),
        handshake_timeout_ms: timeout_ms,
        ..Default::default()
    };
    PciIface::new(Arc::new(gpu), &popts)
}

#[test]
fn missing_firmware_file_names_the_file() {
    let fw = tmp("fw-missing");
    firmware::write_synthetic(&fw).unwrap();
    std::fs::remove_file(fw.join("gc_11_0_0_rlc.bin")).unwrap();
    let e = boot_with(EmuPciConfig::new(EmuArch::Gfx1100), &fw, 500)
        .err()
        .unwrap();
    let msg = e.to_string();
    assert!(
        matches!(e, runtime::Error::Pci(PciError::Firmware { .. })),
        "{msg}"
    );
    assert!(
        msg.contains("gc_11_0_0_rlc.bin") && msg.contains("linux-firmware"),
        "{msg}"
    );
    std::fs::remove_dir_all(&fw).ok();
}

#[test]
fn malformed_firmware_header_names_file_and_offset() {
    let fw = tmp("fw-bad");
    firmware::write_synthetic(&fw).unwrap();
    let p = fw.join("sdma_6_0_0.bin");
    let mut b = std::fs::read(&p).unwrap();
    b.truncate(b.len() - 16);
    std::fs::write(&p, &b).unwrap();
    let msg = boot_with(EmuPciConfig::new(EmuArch::Gfx1100), &fw, 500)
        .err()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("sdma_6_0_0.bin") && msg.contains("offset 0"),
        "{msg}"
    );
    std::fs::remove_dir_all(&fw).ok();
}

#[test]
fn a_psp_that_never_answers_times_out_clearly() {
    let fw = tmp("fw-psp");
    firmware::write_synthetic(&fw).unwrap();
    let mut cfg = EmuPciConfig::new(EmuArch::Gfx1100);
    cfg.psp_responds = false;
    let t0 = std::time::Instant::now();
    let e = boot_with(cfg, &fw, 150).err().unwrap();
    assert!(t0.elapsed() < std::time::Duration::from_secs(5));
    let msg = e.to_string();
    assert!(
        matches!(
            e,
            runtime::Error::Pci(PciError::Timeout {
                block: "PSP bootloader",
                ..
            })
        ),
        "{msg}"
    );
    assert!(
        msg.contains("MP0_SMN_C2PMSG_35") && msg.contains("KDB") && msg.contains("150 ms"),
        "{msg}"
    );
    std::fs::remove_dir_all(&fw).ok();
}

/// A fake sysfs tree with one Navi31 at 0000:03:00.0 (and an Intel device beside it).
fn fake_tree(name: &str, driver: Option<&str>) -> PathBuf {
    let root = tmp(name);
    let dev = root.join("sys/bus/pci/devices/0000:03:00.0");
    std::fs::create_dir_all(&dev).unwrap();
    std::fs::write(dev.join("vendor"), "0x1002\n").unwrap();
    std::fs::write(dev.join("device"), "0x744c\n").unwrap();
    let mut cfg = vec![0u8; 256];
    cfg[0..2].copy_from_slice(&0x1002u16.to_le_bytes());
    cfg[2..4].copy_from_slice(&0x744cu16.to_le_bytes());
    std::fs::write(dev.join("config"), &cfg).unwrap();
    let sizes: [u64; 6] = [16 << 20, 0, 8 << 10, 0, 0, 1 << 20];
    let mut res = String::new();
    let mut start = 0xF000_0000u64;
    for (i, s) in sizes.iter().enumerate() {
        if *s == 0 {
            res.push_str("0x0000000000000000 0x0000000000000000 0x0000000000000000\n");
            continue;
        }
        res.push_str(&format!(
            "{start:#018x} {:#018x} 0x0000000000040200\n",
            start + s - 1
        ));
        start += s;
        let f = std::fs::File::create(dev.join(format!("resource{i}"))).unwrap();
        f.set_len(*s).unwrap();
    }
    std::fs::write(dev.join("resource"), res).unwrap();
    std::fs::write(dev.join("enable"), "0\n").unwrap();
    if let Some(d) = driver {
        let drv = root.join(format!("sys/bus/pci/drivers/{d}"));
        std::fs::create_dir_all(&drv).unwrap();
        std::fs::write(drv.join("unbind"), "").unwrap();
        std::os::unix::fs::symlink(&drv, dev.join("driver")).unwrap();
    }
    let other = root.join("sys/bus/pci/devices/0000:00:02.0");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("vendor"), "0x8086\n").unwrap();
    std::fs::write(other.join("device"), "0x46a6\n").unwrap();
    root
}

fn snapshot(root: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let md = std::fs::symlink_metadata(&p).unwrap();
            if md.is_dir() {
                stack.push(p);
            } else if md.is_file() {
                out.push((
                    p.clone(),
                    std::fs::read(&p).unwrap(),
                    md.modified().unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn listing_finds_the_gpu_and_writes_nothing() {
    let root = fake_tree("list", Some("amdgpu"));
    let before = snapshot(&root);
    let l = sysfs::list(&root).unwrap();
    assert_eq!(l.len(), 1, "only the supported AMD device: {l:?}");
    assert_eq!(l[0].bus, "0000:03:00.0");
    assert_eq!(l[0].device, 0x744c);
    assert_eq!(l[0].driver.as_deref(), Some("amdgpu"));
    assert_eq!(snapshot(&root), before, "listing must not write");
    std::fs::remove_dir_all(&root).ok();
}

#[test]
fn a_device_bound_to_amdgpu_is_left_alone_unless_unbind_is_asked() {
    let root = fake_tree("bound", Some("amdgpu"));
    let locks = tmp("bound-locks");
    let info = sysfs::list(&root).unwrap().remove(0);
    let unbind = root.join("sys/bus/pci/drivers/amdgpu/unbind");
    let e = SysfsPciDevice::open(info.clone(), &PciOptions::default(), &locks)
        .err()
        .unwrap();
    let msg = e.to_string();
    assert!(matches!(e, PciError::BoundToDriver { .. }), "{msg}");
    assert!(
        msg.contains("amdgpu")
            && msg.contains("0000:03:00.0")
            && msg.contains("WAVESCOPE_PCI_UNBIND"),
        "{msg}"
    );
    assert_eq!(
        std::fs::read_to_string(&unbind).unwrap(),
        "",
        "nothing written without the flag"
    );
    let enable = root.join("sys/bus/pci/devices/0000:03:00.0/enable");
    assert_eq!(std::fs::read_to_string(&enable).unwrap(), "0\n");

    let opts = PciOptions {
        unbind: true,
        ..Default::default()
    };
    let dev = SysfsPciDevice::open(info, &opts, &locks).unwrap();
    assert_eq!(std::fs::read_to_string(&unbind).unwrap(), "0000:03:00.0");
    assert_eq!(std::fs::read_to_string(&enable).unwrap(), "1");
    use runtime::pci::PciDevice;
    assert_eq!(dev.config_read(0, 2).unwrap(), 0x1002);
    assert_eq!(dev.bar_len(5), 1 << 20);
    // Config writes reach the config file (bus mastering).
    dev.config_write(4, 2, 0x6).unwrap();
    assert_eq!(dev.config_read(4, 2).unwrap(), 0x6);
    // Pinned system pages: physical addresses from pagemap need root; otherwise a clear error.
    match dev.alloc_sysmem(3 * 4096) {
        Ok(m) => {
            assert_eq!(m.pages.len(), 3);
            assert!(
                m.pages.iter().all(|p| *p != 0 && p % 4096 == 0),
                "{:x?}",
                m.pages
            );
            m.cpu.write32(8192, 0xABCD).unwrap();
            assert_eq!(m.cpu.read32(8192).unwrap(), 0xABCD);
            dev.free_sysmem(&m);
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.contains("root") || msg.contains("RLIMIT_MEMLOCK"),
                "{msg}"
            );
        }
    }
    drop(dev);
    std::fs::remove_dir_all(&root).ok();
    std::fs::remove_dir_all(&locks).ok();
}

#[test]
fn the_lock_keeps_a_second_opener_off_the_gpu() {
    let root = fake_tree("lock", None);
    let locks = tmp("lock-locks");
    let info = sysfs::list(&root).unwrap().remove(0);
    let first = SysfsPciDevice::open(info.clone(), &PciOptions::default(), &locks).unwrap();
    let e = SysfsPciDevice::open(info.clone(), &PciOptions::default(), &locks)
        .err()
        .unwrap();
    assert!(matches!(e, PciError::Locked { .. }), "{e}");
    assert!(e.to_string().contains("another process"), "{e}");
    // flock is per open file description: this second open is refused exactly like one from
    // another process would be.
    drop(first);
    let again = SysfsPciDevice::open(info, &PciOptions::default(), &locks);
    assert!(again.is_ok(), "the lock is released with the device");
    std::fs::remove_dir_all(&root).ok();
    std::fs::remove_dir_all(&locks).ok();
}

#[test]
fn no_gpu_on_this_machine_is_a_clean_error() {
    let root = tmp("empty");
    std::fs::create_dir_all(root.join("sys/bus/pci/devices")).unwrap();
    assert!(sysfs::list(&root).unwrap().is_empty());
    // The real bus: either no AMD GPU (the clean error) or one we refuse to take silently.
    if sysfs::list(Path::new("/"))
        .map(|l| l.is_empty())
        .unwrap_or(true)
    {
        let e =
            runtime::Device::open_pci(0, runtime::DeviceOptions::default(), &PciOptions::default())
                .err()
                .unwrap();
        assert!(
            e.to_string().contains("no AMD GPU found on the PCI bus"),
            "{e}"
        );
    }
    std::fs::remove_dir_all(&root).ok();
}

/// Run by `the_lock_keeps_another_process_off_the_gpu` in a child process.
#[test]
fn lock_child() {
    let Ok(spec) = std::env::var("WAVESCOPE_PCI_LOCK_CHILD") else {
        return;
    };
    let (root, locks) = spec.split_once(';').unwrap();
    let info = sysfs::list(Path::new(root)).unwrap().remove(0);
    let e = SysfsPciDevice::open(info, &PciOptions::default(), Path::new(locks))
        .err()
        .expect("the child must not get the GPU");
    assert!(matches!(e, PciError::Locked { .. }), "{e}");
}

#[test]
fn the_lock_keeps_another_process_off_the_gpu() {
    let root = fake_tree("lock2", None);
    let locks = tmp("lock2-locks");
    let info = sysfs::list(&root).unwrap().remove(0);
    let held = SysfsPciDevice::open(info, &PciOptions::default(), &locks).unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "lock_child", "--nocapture"])
        .env(
            "WAVESCOPE_PCI_LOCK_CHILD",
            format!("{};{}", root.display(), locks.display()),
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "child: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"));
    drop(held);
    std::fs::remove_dir_all(&root).ok();
    std::fs::remove_dir_all(&locks).ok();
}

#[test]
fn vfio_interrupts_without_vfio_are_a_clear_error() {
    let root = fake_tree("vfio", None);
    let locks = tmp("vfio-locks");
    let info = sysfs::list(&root).unwrap().remove(0);
    let opts = PciOptions {
        vfio: true,
        ..Default::default()
    };
    let e = SysfsPciDevice::open(info.clone(), &opts, &locks)
        .err()
        .unwrap();
    assert!(e.to_string().contains("vfio-pci not loaded"), "{e}");
    // With the module present but no /dev/vfio, the error names the device node.
    std::fs::create_dir_all(root.join("sys/module/vfio_pci")).unwrap();
    std::fs::create_dir_all(root.join("sys/module/vfio/parameters")).unwrap();
    let e = SysfsPciDevice::open(info, &opts, &locks).err().unwrap();
    assert!(e.to_string().contains("dev/vfio/vfio"), "{e}");
    std::fs::remove_dir_all(&root).ok();
    std::fs::remove_dir_all(&locks).ok();
}
