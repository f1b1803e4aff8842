//! The one place the capture engine (and through it the CLI) touches the emulated GPU: opening
//! `emu`, `emu-pci` and `emu-usb`, and the emulated machine `wavescope devices --emulated`
//! lists. Everything else sees only `runtime`'s device API.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use emu::{EmuArch, EmuConfig, EmuPlatform};
use runtime::platform::Platform;
use runtime::{Device, DeviceOptions};
use traces::GfxTarget;

use crate::{DeviceSpec, ParseError};

/// Opens an emulated device spec (`emu[:ARCH]`, `emu-pci[:ARCH]`, `emu-usb[:ARCH]`).
pub(crate) fn open(spec: DeviceSpec, opts: DeviceOptions) -> Result<Device, runtime::Error> {
    match spec {
        DeviceSpec::Emu => Ok(emu::open_kfd(EmuArch::Gfx1100, opts)?.0),
        DeviceSpec::EmuArch(a) => {
            a.check_executes()?;
            Ok(emu::open_kfd(a.0, opts)?.0)
        }
        DeviceSpec::EmuPci(a) => Ok(emu::open_pci(a.0, opts)?.0),
        DeviceSpec::EmuUsb(a) => {
            Ok(emu::open_usb_arch(a.0, runtime::usb::Firmware::Custom, opts, |t| Box::new(t))?.0)
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
    pub const GFX1100: Arch = Arch(EmuArch::Gfx1100);
    /// Every emulated architecture, in `wavescope devices` order.
    pub const ALL: [Arch; 3] = [
        Arch(EmuArch::Gfx1100),
        Arch(EmuArch::Gfx1201),
        Arch(EmuArch::Gfx950),
    ];

    /// The GPU target code objects for this architecture must name (the emulated KFD's
    /// `gfx_target_version`).
    pub fn target(&self) -> GfxTarget {
        let v = self
            .0
            .properties(0)
            .into_iter()
            .find(|(k, _)| *k == "gfx_target_version")
            .map_or(0, |(_, v)| v as u32);
        GfxTarget::from_target_version(v)
    }

    /// Whether the emulator runs this architecture's shader code (its interpreter says so).
    pub fn executes(&self) -> bool {
        emu::executes(self.0)
    }

    /// An error when the emulator cannot run this architecture's shaders: its command
    /// processor would accept a launch and no wave would run, so a capture would be empty and
    /// its buffers untouched. Refused rather than reported as a run.
    pub fn check_executes(&self) -> Result<(), runtime::Error> {
        if self.executes() {
            return Ok(());
        }
        Err(runtime::Error::Unsupported(format!(
            "the emulator does not execute {self} shader code yet (its command processor, \
             queues and SQTT control run, but no wave would): a capture on emu:{self} would \
             be empty"
        )))
    }

    /// The emulated architecture that runs code objects for `target`, if any.
    pub fn for_target(target: GfxTarget) -> Option<Arch> {
        Self::ALL.into_iter().find(|a| a.target() == target)
    }

    /// Whether the emulated PCI GPU (`emu-pci`, `emu-usb`) models this architecture.
    pub fn has_pci_model(&self) -> bool {
        matches!(
            self.0,
            EmuArch::Gfx1100 | EmuArch::Gfx1201 | EmuArch::Gfx950
        )
    }

    /// Whether the emulated USB eGPU (`emu-usb`: the PCI GPU behind the ASM2464) models this
    /// architecture (the consumer parts only; no MI350 sits behind a USB bridge).
    pub fn has_usb_model(&self) -> bool {
        matches!(self.0, EmuArch::Gfx1100 | EmuArch::Gfx1201)
    }

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
