//! Device discovery for `wavescope devices`: KFD nodes, driverless PCI candidates (for the AM
//! path) and ASM2464 USB bridges. Everything goes through [`Platform`] so it is testable on the
//! emulated platform.

use crate::kfd::{self, TopologyNode};
use crate::platform::Platform;

/// PCI device IDs the AM path accepts (pci-am-interface.md §1).
pub const AM_DEVICE_IDS: &[u32] = &[
    0x744c, 0x7480, 0x7550, 0x74a1, 0x7551, 0x7590, 0x75a0, 0x75a8,
];
/// USB VID:PID of ASM2464 bridges: stock, tinygrad-patched / custom firmware.
pub const USB_BRIDGES: &[(u32, u32, &str)] = &[
    (0x174C, 0x2464, "ASM2464 (stock firmware)"),
    (0xADD1, 0x0001, "ASM2464 (tinygrad firmware)"),
    (0x3801, 0x0001, "ASM2464 (custom firmware)"),
];

#[derive(Debug, Clone)]
pub struct PciCandidate {
    pub bus: String,
    pub device_id: u32,
    /// Bound kernel driver, if any (the AM path needs none).
    pub driver: Option<String>,
    /// IP versions from amdgpu's sysfs copy of the discovery table (`ip_discovery/die/0`;
    /// present while amdgpu is bound), in [`crate::pci::am::ALL_IPS`] order.
    pub ips: Vec<(&'static str, (u32, u32, u32))>,
}

/// The architecture family of a GC version (the three we trace).
pub fn gc_family(gc: (u32, u32, u32)) -> Option<&'static str> {
    match gc {
        (11, _, _) => Some("RDNA3"),
        (12, _, _) => Some("RDNA4"),
        (9, 4, 3) => Some("CDNA3"),
        (9, 5, 0) => Some("CDNA4"),
        _ => None,
    }
}

impl PciCandidate {
    pub fn gc(&self) -> Option<(u32, u32, u32)> {
        self.ips.iter().find(|(n, _)| *n == "GC").map(|(_, v)| *v)
    }
    pub fn family(&self) -> Option<&'static str> {
        self.gc().and_then(gc_family)
    }
    /// Whether `pci:N` can bring this GPU up: by GC version when it is known (the families
    /// `pci::am` has a bring-up and queues for; the exact IP versions are checked at open).
    pub fn driverless(&self) -> &'static str {
        match self.gc() {
            Some((11, _, _)) => "supported (GC 11)",
            Some((12, 0, 0 | 1)) => "supported (GC 12)",
            Some((9, 4, 3) | (9, 5, 0)) => {
                "supported (GC 9.4.3/9.5.0: one PM4 compute queue per XCC, SDMA 4.4)"
            }
            Some(_) => "not supported (GC 9.4.3/9.5.0, 11.x and 12.0.x only; use kfd:N)",
            None => "GC version unknown until the discovery table is read",
        }
    }
}

/// Reads the IP versions amdgpu exposes for a PCI function (read-only; none when unbound).
fn sysfs_ips(p: &dyn Platform, base: &str) -> Vec<(&'static str, (u32, u32, u32))> {
    let num = |path: String| -> Option<u32> { p.read_file(&path).ok()?.trim().parse().ok() };
    crate::pci::am::ALL_IPS
        .iter()
        .filter_map(|ip| {
            let dir = format!(
                "{base}/ip_discovery/die/0/{}/0",
                crate::pci::am::discovery::hw_id(*ip)
            );
            let v = (
                num(format!("{dir}/major"))?,
                num(format!("{dir}/minor"))?,
                num(format!("{dir}/revision"))?,
            );
            Some((crate::record_io::ip_name(*ip), v))
        })
        .collect()
}

#[derive(Debug, Clone)]
pub struct UsbBridge {
    pub path: String,
    pub vid: u32,
    pub pid: u32,
    pub what: &'static str,
}

#[derive(Debug, Default)]
pub struct DeviceList {
    pub kfd: Vec<TopologyNode>,
    /// Why KFD nodes could not be listed (no /dev/kfd, ...).
    pub kfd_error: Option<String>,
    pub pci: Vec<PciCandidate>,
    pub usb: Vec<UsbBridge>,
}

fn hex(p: &dyn Platform, path: &str) -> Option<u32> {
    let s = p.read_file(path).ok()?;
    let t = s.trim();
    u32::from_str_radix(t.strip_prefix("0x").unwrap_or(t), 16).ok()
}

/// Lists everything visible through `p`.
pub fn list_devices(p: &dyn Platform) -> DeviceList {
    let mut out = DeviceList::default();
    if !p.exists(kfd::KFD_PATH) {
        out.kfd_error = Some(format!(
            "{} does not exist (amdgpu/KFD not loaded)",
            kfd::KFD_PATH
        ));
    }
    match kfd::list_nodes(p) {
        Ok(n) => out.kfd = n,
        Err(e) => {
            out.kfd_error.get_or_insert_with(|| e.to_string());
        }
    }
    let pci = "/sys/bus/pci/devices";
    let mut buses = p.read_dir(pci).unwrap_or_default();
    buses.sort();
    for bus in buses {
        let base = format!("{pci}/{bus}");
        if hex(p, &format!("{base}/vendor")) != Some(0x1002) {
            continue;
        }
        let Some(dev) = hex(p, &format!("{base}/device")) else {
            continue;
        };
        // Display controllers (0x03) and processing accelerators (0x12: MI300X/MI350X).
        let class = hex(p, &format!("{base}/class")).map(|c| c >> 16);
        if !AM_DEVICE_IDS.contains(&dev) && !matches!(class, Some(0x03 | 0x12)) {
            continue;
        }
        let driver = p
            .read_file(&format!("{base}/driver/module/drivername"))
            .ok()
            .map(|s| s.trim().to_string())
            .or_else(|| {
                p.exists(&format!("{base}/driver"))
                    .then(|| "bound".to_string())
            });
        let ips = sysfs_ips(p, &base);
        out.pci.push(PciCandidate {
            bus,
            device_id: dev,
            driver,
            ips,
        });
    }
    let usb = "/sys/bus/usb/devices";
    let mut devs = p.read_dir(usb).unwrap_or_default();
    devs.sort();
    for d in devs {
        let base = format!("{usb}/{d}");
        let (Some(vid), Some(pid)) = (
            hex(p, &format!("{base}/idVendor")),
            hex(p, &format!("{base}/idProduct")),
        ) else {
            continue;
        };
        if let Some((_, _, what)) = USB_BRIDGES
            .iter()
            .find(|(v, pp, _)| *v == vid && *pp == pid)
        {
            out.usb.push(UsbBridge {
                path: base,
                vid,
                pid,
                what,
            });
        }
    }
    out
}

impl DeviceList {
    /// Human-readable listing.
    pub fn render(&self) -> String {
        let mut s = String::new();
        s.push_str("KFD nodes:\n");
        if self.kfd.is_empty() {
            s.push_str(&format!(
                "  none{}\n",
                self.kfd_error
                    .as_ref()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default()
            ));
        }
        for n in &self.kfd {
            let p = &n.props;
            s.push_str(&format!(
                "  node {} gpu_id {:#x}: {} device {:#06x}, {} CUs, {} SEs, {} XCC(s), LDS {} KiB, renderD{}\n",
                n.node,
                n.gpu_id,
                p.target(),
                p.device_id,
                p.num_cu(),
                p.num_se(),
                p.num_xcc,
                p.lds_size_in_kb,
                p.drm_render_minor
            ));
        }
        s.push_str("PCI candidates (AM, driverless):\n");
        if self.pci.is_empty() {
            s.push_str("  none\n");
        }
        for c in &self.pci {
            s.push_str(&format!(
                "  {} device {:#06x}: {}\n",
                c.bus,
                c.device_id,
                match &c.driver {
                    Some(d) => format!("bound to {d} (unbind for the AM path)"),
                    None => "no driver bound (usable by the AM path)".into(),
                }
            ));
            if !c.ips.is_empty() {
                let v: Vec<String> = c
                    .ips
                    .iter()
                    .map(|(n, (a, b, r))| format!("{n} {a}.{b}.{r}"))
                    .collect();
                s.push_str(&format!(
                    "    {}: {}\n",
                    c.family().unwrap_or("unknown family"),
                    v.join(", ")
                ));
            }
            s.push_str(&format!("    driverless path: {}\n", c.driverless()));
        }
        s.push_str("USB bridges (ASM2464):\n");
        if self.usb.is_empty() {
            s.push_str("  none\n");
        }
        for u in &self.usb {
            s.push_str(&format!(
                "  {} {:04x}:{:04x} {}\n",
                u.path, u.vid, u.pid, u.what
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::{Errno, Fd, Mmio};
    use std::collections::BTreeMap;
    use std::sync::Arc;

    /// sysfs as files in memory: what amdgpu exposes for three bound GPUs.
    struct Files(BTreeMap<String, String>);

    impl Platform for Files {
        fn open(&self, _: &str) -> Result<Fd, Errno> {
            Err(Errno::ENOENT)
        }
        fn close(&self, _: Fd) {}
        fn ioctl(&self, _: Fd, _: u64, _: &mut [u8], _: &mut [&mut [u8]]) -> Result<(), Errno> {
            Err(Errno::ENOTTY)
        }
        fn read_file(&self, path: &str) -> Result<String, Errno> {
            self.0.get(path).cloned().ok_or(Errno::ENOENT)
        }
        fn read_dir(&self, path: &str) -> Result<Vec<String>, Errno> {
            let pre = format!("{path}/");
            let mut v: Vec<String> = self
                .0
                .keys()
                .filter_map(|k| k.strip_prefix(&pre))
                .map(|r| r.split('/').next().unwrap_or(r).to_string())
                .collect();
            v.dedup();
            Ok(v)
        }
        fn exists(&self, path: &str) -> bool {
            self.0
                .keys()
                .any(|k| k == path || k.starts_with(&format!("{path}/")))
        }
        fn reserve_va(&self, _: u64) -> Result<u64, Errno> {
            Err(Errno::ENOMEM)
        }
        fn release_va(&self, _: u64, _: u64) {}
        fn mmap(&self, _: Fd, _: u64, _: u64, _: Option<u64>) -> Result<Arc<dyn Mmio>, Errno> {
            Err(Errno::ENODEV)
        }
        fn anon_mmap(&self, _: u64) -> Result<Arc<dyn Mmio>, Errno> {
            Err(Errno::ENOMEM)
        }
    }

    fn gpu(
        f: &mut BTreeMap<String, String>,
        bus: &str,
        dev: u32,
        class: u32,
        ips: &[(u16, [u32; 3])],
    ) {
        let base = format!("/sys/bus/pci/devices/{bus}");
        f.insert(format!("{base}/vendor"), "0x1002\n".into());
        f.insert(format!("{base}/device"), format!("{dev:#06x}\n"));
        f.insert(format!("{base}/class"), format!("{class:#08x}\n"));
        f.insert(
            format!("{base}/driver/module/drivername"),
            "amdgpu\n".into(),
        );
        for (hw, v) in ips {
            for (k, x) in ["major", "minor", "revision"].iter().zip(v) {
                f.insert(
                    format!("{base}/ip_discovery/die/0/{hw}/0/{k}"),
                    format!("{x}\n"),
                );
            }
        }
    }

    #[test]
    fn pci_gpus_of_the_three_families_are_listed_with_their_ip_versions() {
        let mut f = BTreeMap::new();
        // Hardware ids as amdgpu names its sysfs directories (GC 11, SDMA0 42, MP0 255, ...).
        gpu(
            &mut f,
            "0000:03:00.0",
            0x744c,
            0x030000,
            &[(11, [11, 0, 0]), (42, [6, 0, 0]), (255, [13, 0, 0])],
        );
        gpu(
            &mut f,
            "0000:04:00.0",
            0x7550,
            0x030000,
            &[
                (11, [12, 0, 1]),
                (42, [7, 0, 1]),
                (34, [4, 1, 0]),
                (108, [6, 3, 1]),
            ],
        );
        gpu(
            &mut f,
            "0000:05:00.0",
            0x75a0,
            0x120000,
            &[(11, [9, 5, 0]), (42, [4, 4, 5]), (255, [13, 0, 14])],
        );
        // Not a GPU: an AMD USB controller.
        f.insert(
            "/sys/bus/pci/devices/0000:06:00.0/vendor".into(),
            "0x1002\n".into(),
        );
        f.insert(
            "/sys/bus/pci/devices/0000:06:00.0/device".into(),
            "0x43f7\n".into(),
        );
        f.insert(
            "/sys/bus/pci/devices/0000:06:00.0/class".into(),
            "0x0c0330\n".into(),
        );
        let l = list_devices(&Files(f));
        let fam: Vec<_> = l
            .pci
            .iter()
            .map(|c| (c.bus.as_str(), c.family(), c.gc()))
            .collect();
        assert_eq!(
            fam,
            [
                ("0000:03:00.0", Some("RDNA3"), Some((11, 0, 0))),
                ("0000:04:00.0", Some("RDNA4"), Some((12, 0, 1))),
                ("0000:05:00.0", Some("CDNA4"), Some((9, 5, 0))),
            ]
        );
        assert_eq!(l.pci[1].ips[1], ("SDMA0", (7, 0, 1)));
        assert!(l.pci[1].ips.contains(&("NBIO", (6, 3, 1))));
        let r = l.render();
        assert!(
            r.contains("RDNA4: GC 12.0.1, SDMA0 7.0.1, MMHUB 4.1.0, NBIO 6.3.1"),
            "{r}"
        );
        assert!(
            r.contains("CDNA4: GC 9.5.0, SDMA0 4.4.5, MP0 13.0.14"),
            "{r}"
        );
        assert_eq!(l.pci[0].driverless(), "supported (GC 11)");
        assert_eq!(l.pci[1].driverless(), "supported (GC 12)");
        assert!(l.pci[2]
            .driverless()
            .starts_with("supported (GC 9.4.3/9.5.0"));
    }
}
