//! `wavescope devices`: KFD nodes, driverless PCI candidates and ASM2464 USB bridges.

use std::sync::Arc;

use anyhow::{anyhow, Result};
use clap::Args;
use emu::{EmuArch, EmuConfig, EmuPlatform};
use runtime::platform::{host::HostPlatform, Platform};

#[derive(Args, Debug)]
pub struct DevicesArgs {
    /// List an emulated machine instead of this one (gfx1100, gfx1201, gfx950).
    #[arg(long, value_name = "ARCH")]
    pub emulated: Option<String>,
}

pub fn run(a: DevicesArgs) -> Result<()> {
    let p: Arc<dyn Platform> = match &a.emulated {
        Some(s) => {
            let arch = EmuArch::parse(s)
                .ok_or_else(|| anyhow!("unknown emulated arch {s:?} (gfx1100, gfx1201, gfx950)"))?;
            Arc::new(EmuPlatform::new(EmuConfig::new(arch)))
        }
        None => Arc::new(HostPlatform::new()),
    };
    print!("{}", runtime::list::list_devices(p.as_ref()).render());
    // The bridges as libusb sees them (what `--device usb:N` opens), read-only.
    println!("USB bridges (libusb, --device usb:N):");
    if a.emulated.is_some() {
        println!("  emulated ASM2464 with the emulated gfx1100 behind it: --device emu-usb");
        return Ok(());
    }
    match runtime::usb::list_bridges() {
        Ok(v) if v.is_empty() => println!("  none"),
        Ok(v) => v.iter().for_each(|l| println!("  {l}")),
        Err(e) => println!("  none ({e})"),
    }
    Ok(())
}
