//! The one place the capture engine (and through it the CLI) touches the emulated GPU: opening
//! `emu`, `emu-pci` and `emu-usb`, and the emulated machine `wavescope devices --emulated`
//! lists. Everything else sees only `runtime`'s device API.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use emu::{EmuArch, EmuConfig, EmuPlatform};
use runtime::platform::Platform;
use runtime::{Device, DeviceOptions};

use crate::{DeviceSpec, ParseError};

/// Opens an emulated device spec (`emu`, `emu-pci`, `emu-usb`); the gfx1100 in each case.
pub(crate) fn open(spec: DeviceSpec, opts: DeviceOptions) -> Result<Device, runtime::Error> {
    match spec {
        DeviceSpec::Emu => Ok(emu::open_kfd(EmuArch::Gfx1100, opts)?.0),
        DeviceSpec::EmuPci => Ok(emu::open_pci(EmuArch::Gfx1100, opts)?.0),
        DeviceSpec::EmuUsb => {
            Ok(emu::open_usb(runtime::usb::Firmware::Custom, opts, |t| Box::new(t))?.0)
        }
        real => Err(runtime::Error::Invalid(format!(
            "{real} is not an emulated device"
        ))),
    }
}

/// An architecture the emulator models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arch(EmuArch);

impl Arch {
    pub const VALID: &'static str = "gfx1100, gfx1201 (or gfx1200), gfx950";

    /// Shader engines of the emulated chip.
    pub fn num_se(&self) -> u32 {
        self.0.num_se()
    }
}

impl FromStr for Arch {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        EmuArch::parse(s).map(Arch).ok_or_else(|| {
            ParseError(format!(
                "{s:?} is not an emulated architecture (valid: {})",
                Self::VALID
            ))
        })
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            EmuArch::Gfx1100 => "gfx1100",
            EmuArch::Gfx1201 => "gfx1201",
            EmuArch::Gfx950 => "gfx950",
        })
    }
}

/// The emulated machine (its sysfs, KFD and PCI bus) with one GPU of `arch`.
pub fn platform(arch: Arch) -> Arc<dyn Platform> {
    Arc::new(EmuPlatform::new(EmuConfig::new(arch.0)))
}
