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
        if !AM_DEVICE_IDS.contains(&dev) {
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
        out.pci.push(PciCandidate {
            bus,
            device_id: dev,
            driver,
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
