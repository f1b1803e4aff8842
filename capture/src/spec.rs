//! What a user names on the command line, parsed once: devices, launch dimensions, kernel
//! arguments and sizes. Each type is `FromStr` with an error that lists the valid forms, so the
//! CLI can hand them to clap and a typo is a usage error.

use std::fmt;
use std::str::FromStr;

use crate::emulated::Arch;
use crate::Arg;

/// Why a value was not understood (the message lists what would have been).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub(crate) String);

fn err<T>(msg: String) -> Result<T, ParseError> {
    Err(ParseError(msg))
}

/// Where kernels run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceSpec {
    /// The emulated gfx1100 behind the emulated KFD (`emu`, `emu:gfx1100`).
    Emu,
    /// Another emulated architecture behind the emulated KFD (`emu:gfx1201`, `emu:gfx950`).
    EmuArch(Arch),
    /// The emulated PCI GPU (gfx1100, gfx1201 or gfx950) behind the PCI (AM) path
    /// (`emu-pci[:ARCH]`).
    EmuPci(Arch),
    /// The emulated PCI GPU (gfx1100 or gfx1201) behind the emulated ASM2464 USB bridge
    /// (`emu-usb[:ARCH]`).
    EmuUsb(Arch),
    /// Real GPU number N through /dev/kfd.
    Kfd(usize),
    /// Real GPU number N through the driverless PCI path.
    Pci(usize),
    /// Real GPU number N behind a USB bridge.
    Usb(usize),
}

impl DeviceSpec {
    pub const VALID: &'static str =
        "emu, emu:gfx1100, emu:gfx1201, emu:gfx950, emu-pci[:gfx1201|:gfx950], emu-usb[:gfx1201], kfd[:N], pci:N, usb:N";

    pub fn is_emulated(&self) -> bool {
        self.emulated_arch().is_some()
    }

    /// The architecture of an emulated device (None for a real GPU).
    pub fn emulated_arch(&self) -> Option<Arch> {
        match self {
            DeviceSpec::Emu => Some(Arch::GFX1100),
            DeviceSpec::EmuArch(a) | DeviceSpec::EmuPci(a) | DeviceSpec::EmuUsb(a) => Some(*a),
            _ => None,
        }
    }

    /// The `emu:ARCH` form for an architecture (plain `emu` for the default gfx1100).
    pub fn emu(arch: Arch) -> DeviceSpec {
        if arch == Arch::GFX1100 {
            DeviceSpec::Emu
        } else {
            DeviceSpec::EmuArch(arch)
        }
    }
}

impl FromStr for DeviceSpec {
    type Err = ParseError;

    /// `emu[:ARCH]|emu-pci[:ARCH]|emu-usb[:ARCH]|kfd[:N]|pci:N|usb:N` (one device; a list is the caller's
    /// split). A new `KIND:ARCH` form is one more arm of the `split_once` match.
    fn from_str(s: &str) -> Result<Self, ParseError> {
        let part = s.trim();
        let idx = |rest: &str| -> Result<usize, ParseError> {
            rest.parse().map_err(|_| {
                ParseError(format!(
                    "device {part:?}: {rest:?} is not a device number (valid: {})",
                    DeviceSpec::VALID
                ))
            })
        };
        Ok(match part {
            "emu" => DeviceSpec::Emu,
            "emu-pci" => DeviceSpec::EmuPci(Arch::GFX1100),
            "emu-usb" => DeviceSpec::EmuUsb(Arch::GFX1100),
            "kfd" => DeviceSpec::Kfd(0),
            _ => match part.split_once(':') {
                Some(("kfd", n)) => DeviceSpec::Kfd(idx(n)?),
                Some(("pci", n)) => DeviceSpec::Pci(idx(n)?),
                Some(("usb", n)) => DeviceSpec::Usb(idx(n)?),
                Some(("emu", a)) => DeviceSpec::emu(
                    a.parse()
                        .map_err(|e: ParseError| ParseError(format!("device {part:?}: {e}")))?,
                ),
                Some((kind @ ("emu-pci" | "emu-usb"), a)) => {
                    let arch: Arch = a
                        .parse()
                        .map_err(|e: ParseError| ParseError(format!("device {part:?}: {e}")))?;
                    if !arch.has_pci_model() {
                        return err(format!(
                            "device {part:?}: the emulated PCI GPU models gfx1100, gfx1201 and \
                             gfx950 only (valid: {})",
                            Self::VALID
                        ));
                    }
                    if kind == "emu-usb" && !arch.has_usb_model() {
                        return err(format!(
                            "device {part:?}: the emulated USB eGPU models gfx1100 and gfx1201 \
                             only (valid: {})",
                            Self::VALID
                        ));
                    }
                    if kind == "emu-pci" {
                        DeviceSpec::EmuPci(arch)
                    } else {
                        DeviceSpec::EmuUsb(arch)
                    }
                }
                _ => return err(format!("unknown device {part:?} (valid: {})", Self::VALID)),
            },
        })
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpec::Emu => f.write_str("emu"),
            DeviceSpec::EmuArch(a) => write!(f, "emu:{a}"),
            DeviceSpec::EmuPci(a) if *a == Arch::GFX1100 => f.write_str("emu-pci"),
            DeviceSpec::EmuUsb(a) if *a == Arch::GFX1100 => f.write_str("emu-usb"),
            DeviceSpec::EmuPci(a) => write!(f, "emu-pci:{a}"),
            DeviceSpec::EmuUsb(a) => write!(f, "emu-usb:{a}"),
            DeviceSpec::Kfd(n) => write!(f, "kfd:{n}"),
            DeviceSpec::Pci(n) => write!(f, "pci:{n}"),
            DeviceSpec::Usb(n) => write!(f, "usb:{n}"),
        }
    }
}

/// Launch dimensions `X[,Y[,Z]]` (or `XxYxZ`), each at least 1; missing ones are 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims(pub [u32; 3]);

impl FromStr for Dims {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        let bad = || {
            ParseError(format!(
                "{s:?} is not X[,Y[,Z]]: up to 3 positive numbers (e.g. 16, 4,4,1 or 16x16)"
            ))
        };
        let parts: Vec<&str> = s.split([',', 'x']).collect();
        if parts.len() > 3 {
            return Err(bad());
        }
        let mut d = [1u32; 3];
        for (i, p) in parts.iter().enumerate() {
            d[i] = p.trim().parse().ok().filter(|&v| v > 0).ok_or_else(bad)?;
        }
        Ok(Dims(d))
    }
}

/// A byte count: `N`, `NK` (KiB) or `NM` (MiB), positive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size(pub usize);

impl FromStr for Size {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        let (num, mul) = match s.chars().last() {
            Some('K' | 'k') => (&s[..s.len() - 1], 1 << 10),
            Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
            _ => (s, 1),
        };
        num.parse::<usize>()
            .ok()
            .and_then(|n| n.checked_mul(mul))
            .filter(|&n| n > 0)
            .map(Size)
            .ok_or_else(|| {
                ParseError(format!(
                    "size {s:?} is not a positive number of bytes (N, NK or NM)"
                ))
            })
    }
}

/// A u32 in decimal, `0x` hex or `0b` binary.
pub fn parse_u32(s: &str) -> Result<u32, ParseError> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => match s.strip_prefix("0b") {
            Some(b) => u32::from_str_radix(b, 2),
            None => s.parse(),
        },
    };
    r.map_err(|e| ParseError(format!("{s:?}: {e} (decimal, 0x hex or 0b binary)")))
}

const ARG_FORMS: &str = "buf:SIZE[:FILL], u32:V, i32:V or f32:V";
const FILLS: &str = "zero, iota, rand[=SEED], u32=V or f32=V";

impl FromStr for Arg {
    type Err = ParseError;

    /// `buf:SIZE[:FILL]` (FILL: zero, iota, rand[=SEED], u32=V, f32=V), `u32:V`, `i32:V`, `f32:V`.
    fn from_str(s: &str) -> Result<Self, ParseError> {
        let mut it = s.splitn(3, ':');
        let kind = it.next().unwrap_or_default();
        let Some(val) = it.next() else {
            return err(format!("{s:?}: want {ARG_FORMS}"));
        };
        let ctx = |e: ParseError| ParseError(format!("{s:?}: {e}"));
        let f32_bits = |v: &str| {
            v.parse::<f32>()
                .map(f32::to_bits)
                .map_err(|e| ParseError(format!("{s:?}: {v:?}: {e}")))
        };
        match kind {
            "u32" => Ok(Arg::Scalar(parse_u32(val).map_err(ctx)?)),
            "i32" => val
                .parse::<i32>()
                .map(|v| Arg::Scalar(v as u32))
                .map_err(|e| ParseError(format!("{s:?}: {e}"))),
            "f32" => Ok(Arg::Scalar(f32_bits(val)?)),
            "buf" => {
                let Size(n) = val.parse().map_err(ctx)?;
                let words = n.div_ceil(4);
                let fill = it.next().unwrap_or("zero");
                let v: Vec<u32> = match fill.split_once('=') {
                    None if fill == "zero" => vec![0; words],
                    None if fill == "iota" => (0..words as u32).collect(),
                    None if fill == "rand" => crate::rng(words, 1),
                    Some(("rand", seed)) => crate::rng(words, parse_u32(seed).map_err(ctx)?),
                    Some(("u32", v)) => vec![parse_u32(v).map_err(ctx)?; words],
                    Some(("f32", v)) => vec![f32_bits(v)?; words],
                    _ => return err(format!("{s:?}: fill {fill:?} is not one of {FILLS}")),
                };
                let mut b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                b.truncate(n);
                Ok(Arg::Buffer(b))
            }
            _ => err(format!("{s:?}: want {ARG_FORMS}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices() {
        assert_eq!("emu".parse(), Ok(DeviceSpec::Emu));
        assert_eq!("emu-usb".parse(), Ok(DeviceSpec::EmuUsb(Arch::GFX1100)));
        assert_eq!(
            "emu-pci:gfx1100".parse(),
            Ok(DeviceSpec::EmuPci(Arch::GFX1100))
        );
        let e = "emu-pci:gfx1201".parse::<DeviceSpec>().unwrap();
        assert_eq!(
            e.emulated_arch().map(|a| a.to_string()).as_deref(),
            Some("gfx1201")
        );
        let e = "emu-usb:gfx950"
            .parse::<DeviceSpec>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("gfx1201") && e.contains("emu-usb:gfx950"), "{e}");
        assert_eq!("kfd".parse(), Ok(DeviceSpec::Kfd(0)));
        assert_eq!("pci:3".parse(), Ok(DeviceSpec::Pci(3)));
        let e = "nope".parse::<DeviceSpec>().unwrap_err().to_string();
        assert!(e.contains("emu-pci") && e.contains("usb:N"), "{e}");
        assert!("usb:x".parse::<DeviceSpec>().is_err());
        assert_eq!("emu:gfx1100".parse(), Ok(DeviceSpec::Emu));
        let e = "emu:gfx1201".parse::<DeviceSpec>().unwrap();
        assert_eq!(
            e.emulated_arch().map(|a| a.to_string()).as_deref(),
            Some("gfx1201")
        );
        let e = "emu:gfx90a".parse::<DeviceSpec>().unwrap_err().to_string();
        assert!(e.contains("gfx90a") && e.contains("gfx950"), "{e}");
        for d in [
            "emu",
            "emu:gfx1201",
            "emu:gfx950",
            "emu-pci",
            "emu-usb",
            "emu-pci:gfx1201",
            "emu-pci:gfx950",
            "emu-usb:gfx1201",
            "kfd:2",
            "pci:0",
            "usb:1",
        ] {
            assert_eq!(d.parse::<DeviceSpec>().unwrap().to_string(), d);
        }
    }

    #[test]
    fn dims_and_sizes() {
        assert_eq!("4".parse(), Ok(Dims([4, 1, 1])));
        assert_eq!("4,2".parse(), Ok(Dims([4, 2, 1])));
        assert_eq!("16x16x1".parse(), Ok(Dims([16, 16, 1])));
        for bad in ["x", "0", "1,2,3,4", "", "-1"] {
            assert!(bad.parse::<Dims>().is_err(), "{bad}");
        }
        assert_eq!("4K".parse(), Ok(Size(4096)));
        assert_eq!("2m".parse(), Ok(Size(2 << 20)));
        assert!("zz".parse::<Size>().is_err());
        assert!("0".parse::<Size>().is_err());
    }

    #[test]
    fn args() {
        let buf = |s: &str| match s.parse::<Arg>().unwrap() {
            Arg::Buffer(b) => b,
            a => panic!("{a:?}"),
        };
        assert_eq!(buf("buf:6"), vec![0; 6]);
        assert_eq!(buf("buf:8:iota"), [0u8, 0, 0, 0, 1, 0, 0, 0]);
        assert_eq!(buf("buf:4:u32=0x01020304"), [4, 3, 2, 1]);
        assert_eq!(buf("buf:4:f32=1.5"), 1.5f32.to_le_bytes());
        assert_eq!(buf("buf:1K:rand").len(), 1024);
        assert_ne!(buf("buf:16:rand=1"), buf("buf:16:rand=2"));
        assert!(matches!("u32:1000".parse(), Ok(Arg::Scalar(1000))));
        assert!(matches!("i32:-1".parse(), Ok(Arg::Scalar(u32::MAX))));
        for bad in ["buf:zz", "buf:4:nope", "u32:x", "vec:3", "buf"] {
            let e = bad.parse::<Arg>().unwrap_err().to_string();
            assert!(e.contains(bad), "{bad}: {e}");
        }
    }
}
