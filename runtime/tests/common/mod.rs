//! What the integration tests share: the emulated backends a test runs on ([`Target`], and
//! [`per_target!`] to make one `#[test]` per backend), fixtures, deterministic inputs, byte
//! conversions and buffer transfers. Each test binary uses a part of it (hence `dead_code`).
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use emu::pci::{firmware, EmuPciConfig, EmuPciGpu};
use emu::{EmuArch, EmuPlatform, EmuStats, ShaderEngines};
use runtime::pci::iface::PciIface;
use runtime::pci::PciOptions;
use runtime::platform::{AllocKind, GpuBuffer};
use runtime::{Device, DeviceOptions};

/// An emulated GPU and the driver path to it; the same tests run on each. The PCI and USB
/// devices emulate gfx1100 (Navi31) and gfx1201 (Navi48).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The KFD code path over the emulated platform (`emu::open_kfd`).
    KfdGfx1100,
    KfdGfx1201,
    /// The PCI (AM) driver over the emulated PCI device.
    PciGfx1100,
    PciGfx1201,
    /// The USB path (controller, TLPs, AM driver) over the emulated ASM2464 bridge.
    UsbGfx1100,
    UsbGfx1201,
    /// The PCI (AM) driver over the emulated MI350 (gfx950, 8 XCCs, GC 9.5.0).
    PciGfx950,
}

/// The names [`per_target!`] takes (they are the generated modules' names too).
#[allow(non_upper_case_globals)]
pub mod targets {
    use super::Target;
    pub const kfd_gfx1100: Target = Target::KfdGfx1100;
    pub const kfd_gfx1201: Target = Target::KfdGfx1201;
    pub const pci_gfx1100: Target = Target::PciGfx1100;
    pub const usb_gfx1100: Target = Target::UsbGfx1100;
    pub const pci_gfx1201: Target = Target::PciGfx1201;
    pub const usb_gfx1201: Target = Target::UsbGfx1201;
    pub const pci_gfx950: Target = Target::PciGfx950;
}

/// The emulator behind an opened [`Target`]: every backend's engines are an [`EmuPlatform`].
pub enum Emu {
    Kfd(EmuPlatform),
    Pci(EmuPciGpu),
    Usb(Box<emu::EmuUsb>),
}

impl Emu {
    pub fn platform(&self) -> &EmuPlatform {
        match self {
            Emu::Kfd(p) => p,
            Emu::Pci(g) => g.platform(),
            Emu::Usb(u) => u.gpu.platform(),
        }
    }
    pub fn stats(&self) -> EmuStats {
        self.platform().stats()
    }
}

impl Target {
    pub const ALL: [Target; 7] = [
        Target::KfdGfx1100,
        Target::KfdGfx1201,
        Target::PciGfx1100,
        Target::UsbGfx1100,
        Target::PciGfx1201,
        Target::UsbGfx1201,
        Target::PciGfx950,
    ];

    pub fn arch(self) -> EmuArch {
        match self {
            Target::KfdGfx1201 | Target::PciGfx1201 | Target::UsbGfx1201 => EmuArch::Gfx1201,
            Target::PciGfx950 => EmuArch::Gfx950,
            _ => EmuArch::Gfx1100,
        }
    }

    /// Opens the device (on USB, `runtime::usb::device_options` shrinks the rings and staging).
    pub fn open(self, opts: DeviceOptions) -> (Device, Emu) {
        match self {
            Target::KfdGfx1100 | Target::KfdGfx1201 => {
                let (d, p) = emu::open_kfd(self.arch(), opts).unwrap();
                (d, Emu::Kfd(p))
            }
            Target::PciGfx1100 | Target::PciGfx1201 | Target::PciGfx950 => {
                let (d, g) = emu::open_pci(self.arch(), opts).unwrap();
                (d, Emu::Pci(g))
            }
            Target::UsbGfx1100 | Target::UsbGfx1201 => {
                let (d, u) =
                    emu::open_usb_arch(self.arch(), runtime::usb::Firmware::Custom, opts, |t| {
                        Box::new(t)
                    })
                    .unwrap();
                (d, Emu::Usb(Box::new(u)))
            }
        }
    }

    /// Opens the device, then puts `engines` in place of the emulated shader engines (the USB
    /// opener builds its own GPU, so the swap comes after bring-up on every backend; bring-up
    /// dispatches nothing).
    pub fn open_with(self, opts: DeviceOptions, engines: Box<dyn ShaderEngines>) -> (Device, Emu) {
        let (d, e) = self.open(opts);
        e.platform().set_shader_engines(engines);
        (d, e)
    }

    pub fn device(self, opts: DeviceOptions) -> Device {
        self.open(opts).0
    }
}

/// One `#[test]` per [`Target`] for each `fn name(t: Target)` listed, in the modules
/// `kfd_gfx1100`, `kfd_gfx1201`, `pci_gfx1100`, `usb_gfx1100`, `pci_gfx1201`, `usb_gfx1201` and
/// `pci_gfx950`. `name except [targets]`
/// leaves out the targets where a test does not apply.
#[allow(unused_macros)]
macro_rules! per_target {
    ($($name:ident $(except [$($skip:ident),* $(,)?])?),* $(,)?) => {
        // A misspelt target in an `except` list fails to compile here.
        $($($(const _: $crate::common::Target = $crate::common::targets::$skip;)*)?)*
        mod kfd_gfx1100 { $(per_target!(@test kfd_gfx1100 $name [$($($skip)*)?]);)* }
        mod kfd_gfx1201 { $(per_target!(@test kfd_gfx1201 $name [$($($skip)*)?]);)* }
        mod pci_gfx1100 { $(per_target!(@test pci_gfx1100 $name [$($($skip)*)?]);)* }
        mod usb_gfx1100 { $(per_target!(@test usb_gfx1100 $name [$($($skip)*)?]);)* }
        mod pci_gfx1201 { $(per_target!(@test pci_gfx1201 $name [$($($skip)*)?]);)* }
        mod usb_gfx1201 { $(per_target!(@test usb_gfx1201 $name [$($($skip)*)?]);)* }
        mod pci_gfx950 { $(per_target!(@test pci_gfx950 $name [$($($skip)*)?]);)* }
    };
    // No exception names this target: the test.
    (@test $t:ident $name:ident []) => {
        #[test]
        fn $name() {
            super::$name($crate::common::targets::$t)
        }
    };
    (@test kfd_gfx1100 $name:ident [kfd_gfx1100 $($s:ident)*]) => {};
    (@test kfd_gfx1201 $name:ident [kfd_gfx1201 $($s:ident)*]) => {};
    (@test pci_gfx1100 $name:ident [pci_gfx1100 $($s:ident)*]) => {};
    (@test usb_gfx1100 $name:ident [usb_gfx1100 $($s:ident)*]) => {};
    (@test pci_gfx1201 $name:ident [pci_gfx1201 $($s:ident)*]) => {};
    (@test usb_gfx1201 $name:ident [usb_gfx1201 $($s:ident)*]) => {};
    (@test pci_gfx950 $name:ident [pci_gfx950 $($s:ident)*]) => {};
    (@test $t:ident $name:ident [$other:ident $($s:ident)*]) => {
        per_target!(@test $t $name [$($s)*]);
    };
}

/// Options for the small emulated devices (rings and staging far below the defaults; staging
/// chunks small enough that large copies reuse the slots).
pub fn opts() -> DeviceOptions {
    DeviceOptions {
        wait_timeout: Duration::from_secs(5),
        compute_ring_size: 1 << 20,
        sdma_ring_size: 1 << 16,
        kernargs_size: 1 << 20,
        staging_chunk: 64 << 10,
        staging_count: 2,
        profile: true,
        sqtt: false,
        sqtt_buffer_size: 1 << 20,
        sqtt_itrace_se_mask: 0b11,
        pmc: Vec::new(),
    }
}

/// tinygrad's `E_3` (c = a + b over 3 floats) for gfx1100.
pub const E3_ELF: &[u8] = include_bytes!("../data/gfx1100_E_3.elf");

/// The clang-22 fixture `name` built for `arch` (tests/fixtures/kernels/emu: gfx1100 at the
/// top, RDNA4 in gfx1201/).
pub fn fixture(arch: EmuArch, name: &str) -> Vec<u8> {
    fixture_wave(arch, name, false)
}

/// [`fixture`], or its wave64 build (`-mwavefrontsize64`, in wave64/ under the arch's
/// directory) when `wave64`.
pub fn fixture_wave(arch: EmuArch, name: &str, wave64: bool) -> Vec<u8> {
    let sub = match arch {
        EmuArch::Gfx1201 => "gfx1201/",
        EmuArch::Gfx950 => "gfx950/",
        _ => "",
    };
    // gfx950 runs wave64 only: its fixtures are wave64 builds already.
    let w = if wave64 && arch != EmuArch::Gfx950 {
        "wave64/"
    } else {
        ""
    };
    let p = format!(
        "{}/../tests/fixtures/kernels/emu/{sub}{w}{name}.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// The directory of `arch`'s hardware captures in /work/shared/traces (the RDNA4 ones were
/// captured on gfx1200 hardware reporting target 120001, which the emulated gfx1201 is).
pub fn shared_dir(arch: EmuArch, run: &str) -> PathBuf {
    let dir = match arch {
        EmuArch::Gfx1201 => "gfx1200",
        EmuArch::Gfx950 => "gfx950",
        _ => "gfx1100",
    };
    testdata::shared_dir()
        .unwrap_or_else(|| PathBuf::from("../shared"))
        .join(format!("traces/{dir}/{run}"))
}

/// A file of `arch`'s capture `path` (`run/file`), or `None` (said on stderr) where the captures
/// are not available.
pub fn shared(arch: EmuArch, path: &str) -> Option<Vec<u8>> {
    let p = shared_dir(arch, path);
    match std::fs::read(&p) {
        Ok(b) => Some(b),
        Err(_) => {
            // Fails under CI (see `testdata`).
            testdata::missing(&format!("shared capture {}", p.display()));
            None
        }
    }
}

/// Deterministic pseudo-random u32s (xorshift).
pub fn rng(n: usize, seed: u32) -> Vec<u32> {
    let mut x = seed.wrapping_mul(2654435761) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        })
        .collect()
}

/// Deterministic floats in [lo, hi).
pub fn floats(n: usize, seed: u32, lo: f32, hi: f32) -> Vec<f32> {
    rng(n, seed)
        .into_iter()
        .map(|v| lo + (hi - lo) * (v >> 8) as f32 / (1u32 << 24) as f32)
        .collect()
}

/// Deterministic bytes (an LCG's top bytes).
pub fn pattern(n: usize, seed: u32) -> Vec<u8> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (x >> 24) as u8
        })
        .collect()
}

pub fn u32s(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

pub fn f32s(b: &[u8]) -> Vec<f32> {
    u32s(b).into_iter().map(f32::from_bits).collect()
}

pub fn from_u32(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn from_u64(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn from_f32(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect()
}

/// A VRAM buffer holding `data` (at least 4 bytes).
pub fn upload(d: &mut Device, data: &[u8]) -> GpuBuffer {
    let b = d.alloc(data.len().max(4) as u64, AllocKind::VRAM).unwrap();
    d.copyin(&b, data).unwrap();
    b
}

pub fn download(d: &mut Device, b: &GpuBuffer, n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n];
    d.copyout(b, &mut out).unwrap();
    out
}

/// Runs the vadd fixture on `n` floats from `seed` and checks c = a + b bit for bit, and that
/// the guard `i < n` left the buffer's tail untouched.
pub fn check_vadd(d: &mut Device, arch: EmuArch, n: usize, seed: u32) {
    check_vadd_elf(d, &fixture(arch, "vadd"), n, seed)
}

/// [`check_vadd`] with the vadd code object `elf` (a wave64 build, say).
pub fn check_vadd_elf(d: &mut Device, elf: &[u8], n: usize, seed: u32) {
    let a = floats(n, seed, -100.0, 100.0);
    let b = floats(n, seed + 1, -100.0, 100.0);
    let prg = d.load_program(elf).unwrap();
    let (ba, bb) = (upload(d, &from_f32(&a)), upload(d, &from_f32(&b)));
    let bc = upload(d, &vec![0u8; 4 * n + 256]);
    d.launch(
        &prg,
        &[&bc, &ba, &bb],
        &[n as u32],
        [n.div_ceil(64) as u32, 1, 1],
        [64, 1, 1],
    )
    .unwrap();
    let c = f32s(&download(d, &bc, 4 * n + 256));
    for i in 0..n {
        assert_eq!(c[i].to_bits(), (a[i] + b[i]).to_bits(), "c[{i}]");
    }
    assert!(c[n..].iter().all(|x| x.to_bits() == 0));
}

/// The AM driver's bring-up of an emulated PCI GPU configured as `cfg`, with synthetic firmware
/// (the bring-up's result, and the device to inspect either way).
pub fn boot_pci(cfg: EmuPciConfig) -> (runtime::error::Result<PciIface>, EmuPciGpu) {
    let gpu = EmuPciGpu::new(cfg).unwrap();
    let fw = firmware::temp_firmware_dir().unwrap();
    let popts = PciOptions {
        firmware_dir: fw.path().to_path_buf(),
        ..Default::default()
    };
    let iface = PciIface::new(Arc::new(gpu.clone()), &popts);
    (iface, gpu)
}

/// ../shared/amd-registers (register JSON), or `None` (said on stderr) where it is absent.
pub fn amd_registers_dir() -> Option<PathBuf> {
    // Fails under CI when absent (see `testdata`).
    testdata::require_shared("amd-registers")
}

/// Asserts a register entry of the JSON has this offset and base index.
pub fn assert_reg(
    e: &serde_json::Value,
    offset: impl Into<u64>,
    base_index: impl Into<u64>,
    what: &str,
) {
    assert_eq!(e["offset"].as_u64(), Some(offset.into()), "{what}");
    assert_eq!(e["base_index"].as_u64(), Some(base_index.into()), "{what}");
}
