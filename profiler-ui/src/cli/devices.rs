//! `wavescope devices [--emulated ARCH] [--json]`: KFD nodes, driverless PCI candidates and
//! ASM2464 USB bridges, and the emulated devices `capture --device` offers.

use std::io::Write;
use std::sync::Arc;

use anyhow::Result;
use capture::emulated::Arch;
use capture::DeviceSpec;
use clap::Args;
use runtime::platform::{host::HostPlatform, Platform};
use serde_json::json;

use super::{outln, Out};

#[derive(Args, Debug)]
pub struct DevicesArgs {
    /// List an emulated machine instead of this one (gfx1100, gfx1201, gfx950).
    #[arg(long, value_name = "ARCH")]
    pub emulated: Option<Arch>,
    /// Print the lists as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The emulated devices `capture --device` opens, one per architecture and code path.
fn emulated() -> Vec<serde_json::Value> {
    let mut v = Vec::new();
    for arch in Arch::ALL {
        v.push(json!({
            "device": DeviceSpec::emu(arch).to_string(),
            "target": arch.target().to_string(),
            "ses": arch.num_se(),
            "path": "emulated KFD",
        }));
    }
    for (d, path) in [
        ("emu-pci", "emulated PCI (AM) driver"),
        ("emu-usb", "emulated USB bridge"),
    ] {
        v.push(json!({
            "device": d,
            "target": Arch::GFX1100.target().to_string(),
            "ses": Arch::GFX1100.num_se(),
            "path": path,
        }));
    }
    // The other architectures behind the PCI and USB paths (the MI350 has no USB model).
    for arch in Arch::ALL.into_iter().filter(|a| *a != Arch::GFX1100) {
        for (on, spec, path) in [
            (
                arch.has_pci_model(),
                DeviceSpec::EmuPci(arch),
                "emulated PCI (AM) driver",
            ),
            (
                arch.has_usb_model(),
                DeviceSpec::EmuUsb(arch),
                "emulated USB bridge",
            ),
        ] {
            if on {
                v.push(json!({
                    "device": spec.to_string(),
                    "target": arch.target().to_string(),
                    "ses": arch.num_se(),
                    "path": path,
                }));
            }
        }
    }
    v
}

pub fn run(a: DevicesArgs) -> Result<()> {
    let p: Arc<dyn Platform> = match a.emulated {
        Some(arch) => capture::emulated::platform(arch),
        None => Arc::new(HostPlatform::new()),
    };
    let list = runtime::list::list_devices(p.as_ref());
    // The bridges as libusb sees them (what `--device usb:N` opens), read-only.
    let bridges = match a.emulated {
        Some(_) => Ok(vec![
            "emulated ASM2464 with the emulated gfx1100 behind it: --device emu-usb".to_string(),
        ]),
        None => runtime::usb::list_bridges(),
    };
    if a.json {
        let kfd: Vec<_> = list
            .kfd
            .iter()
            .map(|n| {
                let p = &n.props;
                json!({
                    "device": format!("kfd:{}", n.node),
                    "node": n.node,
                    "gpu_id": n.gpu_id,
                    "target": p.target().to_string(),
                    "device_id": p.device_id,
                    "cus": p.num_cu(),
                    "ses": p.num_se(),
                    "xccs": p.num_xcc,
                    "lds_kib": p.lds_size_in_kb,
                    "render_minor": p.drm_render_minor,
                })
            })
            .collect();
        let pci: Vec<_> = list
            .pci
            .iter()
            .map(|c| {
                let ips: serde_json::Map<String, serde_json::Value> = c
                    .ips
                    .iter()
                    .map(|(n, (a, b, r))| (n.to_string(), json!([a, b, r])))
                    .collect();
                json!({"bus": c.bus, "device_id": c.device_id, "driver": c.driver,
                       "family": c.family(), "ip_versions": ips, "driverless": c.driverless()})
            })
            .collect();
        let usb_sysfs: Vec<_> = list
            .usb
            .iter()
            .map(|b| json!({"path": b.path, "vid": b.vid, "pid": b.pid, "what": b.what}))
            .collect();
        let (bridges, bridge_error) = match bridges {
            Ok(v) => (v, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        return super::print_json(&json!({
            "emulated": emulated(),
            "kfd": kfd,
            "kfd_error": list.kfd_error,
            "pci": pci,
            "usb": usb_sysfs,
            "usb_bridges": bridges,
            "usb_bridges_error": bridge_error,
        }));
    }
    let mut o = Out::new();
    write!(o, "{}", list.render())?;
    outln!(o, "USB bridges (libusb, --device usb:N):");
    match bridges {
        Ok(v) if v.is_empty() => outln!(o, "  none"),
        Ok(v) => {
            for l in v {
                outln!(o, "  {l}");
            }
        }
        Err(e) => outln!(o, "  none ({e})"),
    }
    outln!(o, "Emulated devices (--device; no GPU needed):");
    for e in emulated() {
        outln!(
            o,
            "  {:<12} {} ({} SEs), {}",
            e["device"].as_str().unwrap_or_default(),
            e["target"].as_str().unwrap_or_default(),
            e["ses"],
            e["path"].as_str().unwrap_or_default()
        );
    }
    o.flush()?;
    Ok(())
}
