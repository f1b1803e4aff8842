//! wavescope's capture engine: the built-in demo workload (vadd, reduce, matmul, gfx1100 code
//! objects embedded from `assets/`), user kernels, several devices merged into one profile on one
//! host clock, `.wst`/`.rgp` output and the summary. The CLI (`wavescope capture`, plain
//! `wavescope`) and the app call it; it reads no environment and prints nothing.
//!
//! Every use of the emulated GPU is in [`emulated`]; the rest sees only `runtime`'s device API.
#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use runtime::kernel::Code;
use runtime::platform::{host::HostPlatform, AllocKind};
use runtime::profile::{ProfileEvent, HOST_TRACK};
use runtime::{Device, DeviceOptions};
use traces::model::{Attr, Blob, Profile, RangeEvent, Time};

pub mod emulated;
pub mod npy;
pub mod plan;
mod spec;
pub mod workload;

pub use plan::{DeviceBuffers, Plan, PlanArg, PlanBuffer, PlanCode, PlanLaunch};
pub use spec::{parse_u32, DeviceSpec, Dims, ParseError, Size};

/// The demo kernels (built by `assets/build.sh`).
pub const VADD_HSACO: &[u8] = include_bytes!("../assets/vadd.hsaco");
pub const REDUCE_HSACO: &[u8] = include_bytes!("../assets/reduce.hsaco");
pub const MATMUL_HSACO: &[u8] = include_bytes!("../assets/matmul.hsaco");

/// The demo kernels (vadd, reduce, matmul) built for each emulated architecture, by
/// `assets/build.sh` from the same sources.
pub const DEMO_KERNELS: [(&str, [&[u8]; 3]); 3] = [
    ("gfx1100", [VADD_HSACO, REDUCE_HSACO, MATMUL_HSACO]),
    (
        "gfx1201",
        [
            include_bytes!("../assets/gfx1201/vadd.hsaco"),
            include_bytes!("../assets/gfx1201/reduce.hsaco"),
            include_bytes!("../assets/gfx1201/matmul.hsaco"),
        ],
    ),
    (
        "gfx950",
        [
            include_bytes!("../assets/gfx950/vadd.hsaco"),
            include_bytes!("../assets/gfx950/reduce.hsaco"),
            include_bytes!("../assets/gfx950/matmul.hsaco"),
        ],
    ),
];

/// What can stop a capture.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no device given")]
    NoDevice,
    #[error("opening {device}")]
    Open {
        device: String,
        #[source]
        source: runtime::Error,
    },
    /// A device call failed while running `what` (loading the code object, launching vadd, ...).
    #[error("{device}: {what}")]
    Device {
        device: String,
        what: String,
        #[source]
        source: runtime::Error,
    },
    /// A launch that cannot run as given (unknown kernel, arguments that do not fit the
    /// kernel's metadata), found before anything runs.
    #[error("{what}")]
    Launch {
        what: String,
        #[source]
        source: runtime::Error,
    },
    #[error("{code} is for {target}, but {device} runs {runs}: {hint}")]
    Target {
        code: String,
        target: traces::GfxTarget,
        device: String,
        runs: traces::GfxTarget,
        hint: String,
    },
    #[error("{what}: the kernel has no argument metadata, so buffers must come first, then 4-byte values")]
    ArgOrder { what: String },
    #[error("{device}: the runtime recorded no allocation to align clocks with")]
    NoClock { device: String },
    #[error("an .rgp needs SQTT (capture with SQTT on)")]
    RgpNeedsSqtt,
    #[error("writing {}", path.display())]
    WriteWst {
        path: PathBuf,
        #[source]
        source: traces::wst::WstError,
    },
    #[error("writing {}", path.display())]
    WriteRgp {
        path: PathBuf,
        #[source]
        source: traces::rgp::RgpError,
    },
    #[error("the capture stopped early; what was recorded before is saved in {saved}")]
    StoppedEarly {
        saved: String,
        #[source]
        source: Box<Error>,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How real devices are taken: what the user allowed the driver to do to the machine.
#[derive(Debug, Clone, Default)]
pub struct HostOptions {
    /// `pci:N`: unbind the kernel driver holding the GPU (never implicit).
    pub pci_unbind: bool,
    /// `pci:N`: bind the GPU to vfio-pci for MSI interrupts instead of polling.
    pub pci_vfio: bool,
    /// `pci:N`, `usb:N`: the linux-firmware `amdgpu/` directory (None: /lib/firmware/amdgpu).
    pub firmware_dir: Option<PathBuf>,
    /// `usb:N`: detach uas/usb-storage from the bridge.
    pub usb_detach: bool,
}

impl HostOptions {
    fn pci(&self) -> runtime::pci::PciOptions {
        let mut p = runtime::pci::PciOptions {
            unbind: self.pci_unbind,
            vfio: self.pci_vfio,
            ..Default::default()
        };
        if let Some(d) = &self.firmware_dir {
            p.firmware_dir = d.clone();
        }
        p
    }
}

impl DeviceSpec {
    /// A real GPU when the KFD lists one, else the emulated gfx1100.
    pub fn default_device() -> DeviceSpec {
        let list = runtime::list::list_devices(&HostPlatform::new());
        if list.kfd.is_empty() {
            DeviceSpec::Emu
        } else {
            DeviceSpec::Kfd(0)
        }
    }

    pub fn label(&self) -> String {
        match self {
            DeviceSpec::Emu => "emu (gfx1100)".into(),
            DeviceSpec::EmuArch(a) => format!("emu:{a} (emulated)"),
            other => other.to_string(),
        }
    }

    fn open(&self, opts: DeviceOptions, host: &HostOptions) -> Result<Device, runtime::Error> {
        match self {
            DeviceSpec::Emu
            | DeviceSpec::EmuArch(_)
            | DeviceSpec::EmuPci(_)
            | DeviceSpec::EmuUsb(_) => emulated::open(*self, opts),
            DeviceSpec::Kfd(n) => Device::open_kfd(*n, opts),
            DeviceSpec::Pci(n) => Device::open_pci(*n, opts, &host.pci()),
            DeviceSpec::Usb(n) => runtime::usb::open_device(*n, opts, host.usb_detach, &host.pci()),
        }
    }
}

/// One kernel argument: a buffer (its initial contents) or a 32-bit scalar, in the kernel's
/// parameter order (buffers first for a kernel without argument metadata).
#[derive(Debug, Clone)]
pub enum Arg {
    Buffer(Vec<u8>),
    Scalar(u32),
}

/// Verifies a kernel's buffers after the run (bytes of each buffer argument, in order).
pub type Checker = Box<dyn Fn(&[Vec<u8>]) -> std::result::Result<(), String>>;

/// One kernel to run.
pub struct Workload {
    pub elf: Cow<'static, [u8]>,
    /// The kernel to launch (None: the code object's first).
    pub name: Option<String>,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub args: Vec<Arg>,
    pub check: Option<Checker>,
}

/// Progress of a capture: (launches done, launches in total, what runs now).
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize, &str);

/// How to capture.
#[derive(Debug, Clone)]
pub struct CaptureOptions {
    pub devices: Vec<DeviceSpec>,
    pub sqtt: bool,
    /// Per-SE SQTT buffer in MiB (None: 64 MiB on the emulator, the runtime default elsewhere).
    pub sqtt_buffer_mib: Option<u64>,
    /// SEs with instruction tracing (None: every SE).
    pub itrace_se_mask: Option<u32>,
    /// Performance counters read around every launch, by name (`default`: tinygrad's set for
    /// the device's generation; empty: none).
    pub pmc: Vec<String>,
    /// Launches of each kernel.
    pub repeat: u32,
    pub wst: Option<PathBuf>,
    pub rgp: Option<PathBuf>,
    /// How real devices are taken (ignored by the emulated ones).
    pub host: HostOptions,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        CaptureOptions {
            devices: vec![DeviceSpec::Emu],
            sqtt: true,
            sqtt_buffer_mib: None,
            itrace_se_mask: None,
            pmc: vec!["default".into()],
            repeat: 1,
            wst: None,
            rgp: None,
            host: HostOptions::default(),
        }
    }
}

/// The result check of one kernel on one device.
#[derive(Debug, Clone)]
pub struct Check {
    pub device: String,
    pub kernel: String,
    /// None when the workload has no CPU reference.
    pub result: Option<std::result::Result<(), String>>,
}

/// One kernel execution as the summary table shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct KernelSummary {
    pub device: String,
    pub kernel: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub gpu_us: Option<f64>,
    /// Waves decoded from the SQTT of all SEs.
    pub waves: usize,
    /// SQTT bytes per SE, in SE order.
    pub sqtt_bytes: Vec<u64>,
    /// SEs whose blobs failed to decode.
    pub decode_errors: Vec<String>,
}

/// What a capture produced.
pub struct CaptureResult {
    pub profile: Profile,
    pub wst: Option<PathBuf>,
    pub rgp: Option<PathBuf>,
    pub checks: Vec<Check>,
    pub summary: Vec<KernelSummary>,
    /// Device warnings (SQTT buffer full, ...) and export notes.
    pub warnings: Vec<String>,
    /// Every device's buffers after its run, when the plan asked ([`Plan::read_back`]).
    pub buffers: Vec<DeviceBuffers>,
}

pub type DemoResult = CaptureResult;

/// A capture's outcome for scripts (`wavescope capture --json`).
#[derive(Debug, serde::Serialize)]
pub struct Report {
    pub devices: Vec<String>,
    pub kernels: Vec<KernelReport>,
    pub wst: Option<PathBuf>,
    pub rgp: Option<PathBuf>,
    pub warnings: Vec<String>,
    /// Every checked kernel matched its CPU reference.
    pub all_correct: bool,
}

/// One row of [`Report`]: the summary and the result check.
#[derive(Debug, serde::Serialize)]
pub struct KernelReport {
    #[serde(flatten)]
    pub summary: KernelSummary,
    /// `ok`, `wrong` or `unchecked` (no CPU reference).
    pub result: &'static str,
    /// What differed, for `wrong`.
    pub error: Option<String>,
}

impl CaptureResult {
    pub fn report(&self, opts: &CaptureOptions) -> Report {
        let kernels = self
            .summary
            .iter()
            .map(|k| {
                let check = self
                    .checks
                    .iter()
                    .find(|c| c.kernel == k.kernel && c.device == k.device)
                    .and_then(|c| c.result.as_ref());
                KernelReport {
                    summary: k.clone(),
                    result: match check {
                        None => "unchecked",
                        Some(Ok(())) => "ok",
                        Some(Err(_)) => "wrong",
                    },
                    error: check.and_then(|r| r.as_ref().err().cloned()),
                }
            })
            .collect();
        Report {
            devices: opts.devices.iter().map(DeviceSpec::to_string).collect(),
            kernels,
            wst: self.wst.clone(),
            rgp: self.rgp.clone(),
            warnings: self.warnings.clone(),
            all_correct: all_correct(self),
        }
    }
}

// ---- the demo workload ----

/// Deterministic pseudo-random u32s (xorshift): the demo's inputs and `--arg buf:N:rand`.
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

fn floats(n: usize, seed: u32, lo: f32, hi: f32) -> Vec<f32> {
    rng(n, seed)
        .into_iter()
        .map(|v| lo + (hi - lo) * (v >> 8) as f32 / (1u32 << 24) as f32)
        .collect()
}

fn bytes_u32(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn bytes_f32(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect()
}

fn u32s(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    u32s(b).into_iter().map(f32::from_bits).collect()
}

/// Compares floats bit for bit (the demo kernels' CPU references use the same operation order).
fn same_bits(what: &str, got: &[f32], want: &[f32]) -> std::result::Result<(), String> {
    if got.len() < want.len() {
        return Err(format!("{what}: {} values, want {}", got.len(), want.len()));
    }
    let bad: Vec<usize> = (0..want.len())
        .filter(|&i| got[i].to_bits() != want[i].to_bits())
        .collect();
    match bad.first() {
        None => Ok(()),
        Some(&i) => Err(format!(
            "{what}: {} of {} values differ, first [{i}] = {} want {}",
            bad.len(),
            want.len(),
            got[i],
            want[i]
        )),
    }
}

/// vadd (1000 floats), reduce (8 work-groups of 256 u32), matmul (64x64 floats), each with a
/// CPU reference, built for gfx1100.
pub fn demo_workloads() -> Vec<Workload> {
    demo_workloads_for(DEMO_KERNELS[0].1)
}

/// The demo for the devices of a capture: their architecture's build when every device is the
/// same emulated architecture (`emu:gfx1201`, `emu-pci:gfx1201`, `emu:gfx950`), else the gfx1100 build (a real
/// GPU of another target gets the plan's clear target error).
pub fn demo_workloads_on(devices: &[DeviceSpec]) -> Vec<Workload> {
    let arch = |d: &DeviceSpec| {
        d.emulated_arch()
            .map_or_else(|| "gfx1100".to_string(), |a| a.to_string())
    };
    let first = devices
        .first()
        .map(arch)
        .unwrap_or_else(|| "gfx1100".into());
    let same = devices.iter().all(|d| arch(d) == first);
    let elfs = DEMO_KERNELS
        .iter()
        .find(|(t, _)| same && *t == first)
        .map_or(DEMO_KERNELS[0].1, |(_, e)| *e);
    demo_workloads_for(elfs)
}

fn demo_workloads_for([vadd_elf, reduce_elf, matmul_elf]: [&'static [u8]; 3]) -> Vec<Workload> {
    let n = 1000usize;
    let a = floats(n, 1, -100.0, 100.0);
    let b = floats(n, 2, -100.0, 100.0);
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    let vadd = Workload {
        elf: Cow::Borrowed(vadd_elf),
        name: Some("vadd".into()),
        grid: [n.div_ceil(64) as u32, 1, 1],
        block: [64, 1, 1],
        args: vec![
            Arg::Buffer(vec![0; 4 * n]),
            Arg::Buffer(bytes_f32(&a)),
            Arg::Buffer(bytes_f32(&b)),
            Arg::Scalar(n as u32),
        ],
        check: Some(Box::new(move |bufs| {
            same_bits("c", &f32s(bufs.first().map_or(&[][..], |v| v)), &want)
        })),
    };

    let groups = 8usize;
    let v = rng(256 * groups, 5);
    let want: Vec<u32> = v
        .chunks(256)
        .flat_map(|s| {
            [
                s.iter().fold(0u32, |a, &x| a.wrapping_add(x)),
                s.iter().map(|x| x.count_ones()).sum(),
            ]
        })
        .collect();
    let reduce = Workload {
        elf: Cow::Borrowed(reduce_elf),
        name: Some("reduce".into()),
        grid: [groups as u32, 1, 1],
        block: [256, 1, 1],
        args: vec![Arg::Buffer(vec![0; 8 * groups]), Arg::Buffer(bytes_u32(&v))],
        check: Some(Box::new(move |bufs| {
            let got = u32s(bufs.first().map_or(&[][..], |v| v));
            match (0..want.len()).find(|&i| got.get(i) != want.get(i)) {
                None => Ok(()),
                Some(i) => Err(format!(
                    "out[{i}] = {:?} want {} (group {} {})",
                    got.get(i),
                    want[i],
                    i / 2,
                    if i % 2 == 0 { "sum" } else { "popcount" }
                )),
            }
        })),
    };

    let m = 64usize;
    let a = floats(m * m, 6, -1.0, 1.0);
    let b = floats(m * m, 7, -1.0, 1.0);
    let mut want = vec![0f32; m * m];
    for r in 0..m {
        for c in 0..m {
            // k ascending with fused multiply-add, as the kernel accumulates.
            want[r * m + c] = (0..m).fold(0f32, |acc, k| a[r * m + k].mul_add(b[k * m + c], acc));
        }
    }
    let g = (m / 16) as u32;
    let matmul = Workload {
        elf: Cow::Borrowed(matmul_elf),
        name: Some("matmul".into()),
        grid: [g, g, 1],
        block: [16, 16, 1],
        args: vec![
            Arg::Buffer(vec![0; 4 * m * m]),
            Arg::Buffer(bytes_f32(&a)),
            Arg::Buffer(bytes_f32(&b)),
            Arg::Scalar(m as u32),
        ],
        check: Some(Box::new(move |bufs| {
            same_bits("C", &f32s(bufs.first().map_or(&[][..], |v| v)), &want)
        })),
    };
    vec![vadd, reduce, matmul]
}

/// Captures the demo workload.
pub fn run_demo(opts: &CaptureOptions, progress: Progress) -> Result<DemoResult> {
    run_capture(&demo_workloads_on(&opts.devices), opts, progress)
}

// ---- capture ----

fn device_options(spec: &DeviceSpec, o: &CaptureOptions) -> DeviceOptions {
    let mut d = DeviceOptions {
        sqtt: o.sqtt,
        pmc: o.pmc.clone(),
        ..Default::default()
    };
    if let Some(m) = o.sqtt_buffer_mib {
        d.sqtt_buffer_size = m << 20;
    } else if spec.is_emulated() {
        // The emulated VRAM is host memory: the runtime's 256 MiB per SE is far more than the
        // demo needs. The emulated MI350 behind the PCI driver has 32 SEs (8 XCCs) in 1 GiB
        // of VRAM, of which the driver keeps 384 MiB: 8 MiB each.
        d.sqtt_buffer_size = match spec {
            DeviceSpec::EmuPci(a) if a.target().to_string() == "gfx950" => 8 << 20,
            _ => 64 << 20,
        };
    }
    // Every SE by default, so no kernel comes back without instruction detail.
    d.sqtt_itrace_se_mask = o.itrace_se_mask.unwrap_or(u32::MAX);
    if spec.is_emulated() {
        // The emulator runs shaders on the CPU (slowly in debug builds).
        d.wait_timeout = Duration::from_secs(300);
    }
    d
}

/// The plan of independent workloads: one code object, its own buffers and one launch each.
pub fn plan_of(work: &[Workload]) -> Plan<'_> {
    let mut plan = Plan::default();
    for (wi, w) in work.iter().enumerate() {
        let label = match &w.name {
            Some(n) => format!("kernel {n}"),
            None => format!("workload {wi}"),
        };
        plan.code.push(PlanCode {
            label: label.clone(),
            elf: &w.elf,
        });
        let mut args = Vec::new();
        for (ai, a) in w.args.iter().enumerate() {
            match a {
                Arg::Buffer(init) => {
                    args.push(PlanArg::Buffer(plan.buffers.len()));
                    plan.buffers.push(PlanBuffer {
                        name: format!("arg{ai}"),
                        init,
                    });
                }
                Arg::Scalar(v) => args.push(PlanArg::Value(v.to_le_bytes().to_vec())),
            }
        }
        plan.launches.push(PlanLaunch {
            label,
            code: wi,
            kernel: w.name.as_deref(),
            grid: w.grid,
            block: w.block,
            args,
            check: w.check.as_ref(),
        });
    }
    plan
}

/// Runs `work` on every device of `opts`, checks the results, merges the profiles on one clock
/// and writes the requested files.
pub fn run_capture(
    work: &[Workload],
    opts: &CaptureOptions,
    progress: Progress,
) -> Result<CaptureResult> {
    run_plan(&plan_of(work), opts, progress)
}

/// Runs `plan`'s launches in order on every device of `opts` (after [`Plan::validate`]), checks
/// the results, merges the profiles on one clock and writes the requested files.
pub fn run_plan(plan: &Plan, opts: &CaptureOptions, progress: Progress) -> Result<CaptureResult> {
    if opts.devices.is_empty() {
        return Err(Error::NoDevice);
    }
    plan.validate(&opts.devices)?;
    let repeat = opts.repeat.max(1) as usize;
    let total = opts.devices.len() * plan.launches.len() * repeat;
    let mut buffers = Vec::new();
    let mut done = 0usize;
    let epoch = Instant::now();
    let mut profiles = Vec::new();
    let mut checks = Vec::new();
    let mut warnings = Vec::new();
    let names = device_names(opts.devices.len());
    // The first failure stops the capture; what every device recorded up to then is still
    // merged and written, so an unplugged bridge or a hung kernel does not lose the run.
    let mut failure: Option<Error> = None;
    for (di, spec) in opts.devices.iter().enumerate() {
        let mut dev = match spec.open(device_options(spec, opts), &opts.host) {
            Ok(d) => d,
            Err(source) => {
                failure = Some(Error::Open {
                    device: spec.label(),
                    source,
                });
                break;
            }
        };
        // Before any work: places this device's timeline on the host clock.
        let offset_us = host_offset(&mut dev, epoch, &names[di]);
        let known_offset = offset_us.as_ref().ok().copied();
        let ran = offset_us.and_then(|off| {
            plan::DeviceRun {
                dev: &mut dev,
                name: &names[di],
                repeat,
                total,
                done: &mut done,
                checks: &mut checks,
                progress: &mut *progress,
            }
            .all(plan)
            .map(|bufs| {
                if let Some(b) = bufs {
                    buffers.push(DeviceBuffers {
                        device: names[di].clone(),
                        buffers: b,
                    });
                }
                off
            })
        });
        progress(done, total, "");
        warnings.extend(dev.warnings().iter().map(|w| format!("{}: {w}", names[di])));
        let profiled = ran.and_then(|off| {
            let p = dev.profile().map_err(|source| Error::Device {
                device: names[di].clone(),
                what: "reading the recorded profile".into(),
                source,
            })?;
            Ok((p, off))
        });
        match profiled {
            Ok(p) => profiles.push(p),
            Err(e) => {
                // No synchronize: the device may be gone. The recorder holds every event and
                // SQTT blob that completed before the failure.
                let kept = dev.recorder.to_profile(&dev.props);
                if let (false, Some(offset_us)) = (kept.kernels.is_empty(), known_offset) {
                    warnings.push(format!(
                        "{}: capture stopped early; keeping the {} kernel(s) recorded before",
                        names[di],
                        kept.kernels.len()
                    ));
                    profiles.push((kept, offset_us));
                }
                failure = Some(e);
                break;
            }
        }
    }
    // The whole run as the outer host range: the runtimes' ranges nest inside it.
    let end_us = epoch.elapsed().as_secs_f64() * 1e6;
    let mut profile = merge(profiles, &names);
    let cpu = profile.device_index(0, HOST_TRACK);
    profile.ranges.push(RangeEvent {
        device: cpu,
        name: "capture".into(),
        key: Some(Attr::Str("capture".into())),
        start: Time(0),
        end: Some(Time::from_us_f64(end_us)),
        depth: 0,
        parent: None,
        device_clock: false,
    });
    profile.compute_nesting();
    let summary = summarize_dims(&profile, |name| {
        let l = plan.launches.iter().find(|l| {
            l.kernel == Some(name)
                || (l.kernel.is_none()
                    && Code::parse_named(plan.code[l.code].elf, None)
                        .is_ok_and(|c| c.kernel.name == name))
        });
        l.map_or(([0; 3], [0; 3]), |l| (l.grid, l.block))
    });

    if let Some(path) = &opts.wst {
        // With the analysis index, so opening the capture shows its results at once.
        let idx = traces::wst::index::build(&profile, &|_, _| {});
        traces::wst::write_file_indexed(&profile, Some(&idx), path).map_err(|source| {
            Error::WriteWst {
                path: path.clone(),
                source,
            }
        })?;
    }
    if let Some(path) = &opts.rgp {
        if !opts.sqtt {
            return Err(Error::RgpNeedsSqtt);
        }
        let device = (names.len() > 1).then(|| names[0].clone());
        if names.len() > 1 {
            warnings.push(format!(
                "the .rgp holds {} only (one device per RGP file)",
                names[0]
            ));
        }
        traces::rgp::export_file(&profile, &traces::rgp::ExportOptions { device }, path).map_err(
            |source| Error::WriteRgp {
                path: path.clone(),
                source,
            },
        )?;
    }
    if let Some(e) = failure {
        let saved: Vec<String> = [&opts.wst, &opts.rgp]
            .into_iter()
            .flatten()
            .map(|p| p.display().to_string())
            .collect();
        if saved.is_empty() || profile.kernels.is_empty() {
            return Err(e);
        }
        return Err(Error::StoppedEarly {
            saved: saved.join(" and "),
            source: Box::new(e),
        });
    }
    Ok(CaptureResult {
        profile,
        wst: opts.wst.clone(),
        rgp: opts.rgp.clone(),
        checks,
        summary,
        warnings,
        buffers,
    })
}

/// `AMD`, `AMD_1`, ...: distinct base names, since `AMD:1` would read as a queue of `AMD`.
fn device_names(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            if i == 0 {
                "AMD".to_string()
            } else {
                format!("AMD_{i}")
            }
        })
        .collect()
}

/// Microseconds from `epoch` to the device's own host-clock origin. The device stamps each
/// allocation with its host clock right after allocating; bracketing one allocation with our
/// clock bounds the offset by the allocation's duration.
fn host_offset(dev: &mut Device, epoch: Instant, name: &str) -> Result<f64> {
    let before = epoch.elapsed().as_secs_f64() * 1e6;
    let b = dev
        .alloc(0x1000, AllocKind::HOST)
        .map_err(|source| Error::Device {
            device: name.to_string(),
            what: "allocating the clock-alignment buffer".into(),
            source,
        })?;
    let after = epoch.elapsed().as_secs_f64() * 1e6;
    let stamp = match dev.recorder.events.last() {
        Some(ProfileEvent::Alloc { host_us, .. }) => *host_us,
        _ => {
            return Err(Error::NoClock {
                device: name.to_string(),
            })
        }
    };
    drop(b);
    Ok((before + after) / 2.0 - stamp)
}

fn shift(t: Time, us: f64) -> Time {
    Time::from_us_f64(t.as_us_f64() + us)
}

/// One profile from the per-device ones: devices renamed, times moved onto the common clock,
/// indices (devices, ranges, blobs) renumbered.
fn merge(parts: Vec<(Profile, f64)>, names: &[String]) -> Profile {
    let mut out = Profile::default();
    let several = parts.len() > 1;
    for (i, (p, off)) in parts.into_iter().enumerate() {
        if i == 0 {
            out.processes = p.processes.clone();
            out.source = p.source.clone();
        } else {
            for (k, v) in &p.source.event_counts {
                *out.source.event_counts.entry(k.clone()).or_default() += v;
            }
            out.source
                .warnings
                .extend(p.source.warnings.iter().cloned());
        }
        let range0 = out.ranges.len() as u32;
        let name = names.get(i).cloned().unwrap_or_else(|| format!("AMD_{i}"));
        let blobs: Vec<_> = (0..p.blobs.len())
            .map(|b| {
                out.add_blob(Blob::from_vec(
                    p.blob(traces::model::BlobId(b as u32)).to_vec(),
                ))
            })
            .collect();
        let blob = |id: traces::model::BlobId| blobs.get(id.0 as usize).copied().unwrap_or(id);
        // The runtimes' host tracks become one CPU track (the devices ran one after another on
        // this thread); every other device is renamed after its capture device.
        let mut dev_map = Vec::with_capacity(p.devices.len());
        let mut host_dev = None;
        for (di, mut d) in p.devices.into_iter().enumerate() {
            if !d.declared && d.name == HOST_TRACK {
                host_dev = Some(di as u32);
                dev_map.push(out.device_index(0, HOST_TRACK));
                continue;
            }
            d.name = match d.name.split_once(':') {
                Some((_, rest)) => format!("{name}:{rest}"),
                None => name.clone(),
            };
            d.process = 0;
            out.devices.push(d);
            dev_map.push((out.devices.len() - 1) as u32);
        }
        let dev = |i: u32| dev_map.get(i as usize).copied().unwrap_or(i);
        for mut r in p.ranges {
            if several && Some(r.device) == host_dev {
                r.name = format!("{name}: {}", r.name);
            }
            r.device = dev(r.device);
            r.start = shift(r.start, off);
            r.end = r.end.map(|e| shift(e, off));
            r.parent = r.parent.map(|x| x + range0);
            out.ranges.push(r);
        }
        for mut e in p.points {
            e.device = dev(e.device);
            e.ts = shift(e.ts, off);
            out.points.push(e);
        }
        for mut e in p.programs {
            e.device = dev(e.device);
            e.elf = e.elf.map(blob);
            out.programs.push(e);
        }
        for mut k in p.kernels {
            k.device = dev(k.device);
            k.start = shift(k.start, off);
            k.end = k.end.map(|e| shift(e, off));
            k.range = k.range.map(|x| x + range0);
            out.kernels.push(k);
        }
        for mut s in p.sqtt {
            s.device = dev(s.device);
            s.blob = blob(s.blob);
            out.sqtt.push(s);
        }
        for mut e in p.pmc {
            e.device = dev(e.device);
            e.blob = blob(e.blob);
            out.pmc.push(e);
        }
        for mut c in p.counters {
            c.device = dev(c.device);
            for pt in &mut c.points {
                pt.0 = shift(pt.0, off);
            }
            out.counters.push(c);
        }
        out.generic.extend(p.generic);
    }
    out.compute_nesting();
    out
}

/// Per kernel execution: GPU time, waves decoded from every SE, SQTT bytes per SE.
pub fn summarize(p: &Profile, work: &[Workload]) -> Vec<KernelSummary> {
    summarize_dims(p, |name| {
        work.iter()
            .find(|w| w.name.as_deref() == Some(name))
            .map_or(([0; 3], [0; 3]), |w| (w.grid, w.block))
    })
}

/// [`summarize`] with each kernel's grid and block from `dims`.
fn summarize_dims(p: &Profile, dims: impl Fn(&str) -> ([u32; 3], [u32; 3])) -> Vec<KernelSummary> {
    let mut out = Vec::new();
    for k in &p.kernels {
        let dev = p.devices.get(k.device as usize);
        let target = dev.and_then(|d| d.target());
        let mut traces: Vec<_> = p
            .sqtt
            .iter()
            .filter(|s| s.device == k.device && Some(s.kern) == k.kern && s.exec_tag == k.exec_tag)
            .collect();
        traces.sort_by_key(|s| s.se);
        let mut waves = 0;
        let mut errors = Vec::new();
        for s in &traces {
            match traces::sqtt::analyze_with(p.blob(s.blob), target, Default::default()) {
                Ok(a) => waves += a.waves.len(),
                Err(e) => errors.push(format!("SE{}: {e}", s.se)),
            }
        }
        let gpu_us = match (k.gpu_start, k.gpu_end) {
            (Some(_), Some(_)) => k.end.map(|e| e.as_us_f64() - k.start.as_us_f64()),
            _ => None,
        };
        let (grid, block) = dims(&k.name);
        out.push(KernelSummary {
            device: dev.map_or_else(|| "?".into(), |d| d.name.clone()),
            kernel: k.name.clone(),
            grid,
            block,
            gpu_us,
            waves,
            sqtt_bytes: traces.iter().map(|s| p.blob(s.blob).len() as u64).collect(),
            decode_errors: errors,
        });
    }
    out
}

fn human(n: u64) -> String {
    match n {
        0..=9_999 => format!("{n}"),
        10_000..=9_999_999 => format!("{}K", n / 1024),
        _ => format!("{}M", n >> 20),
    }
}

/// The summary table (kernel, grid, GPU time, waves, SQTT bytes per SE, result, warnings).
pub fn summary_table(r: &CaptureResult) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<8} {:<10} {:<10} {:<10} {:>10} {:>6}  {:<8} SQTT bytes per SE",
        "device", "kernel", "grid", "block", "GPU us", "waves", "result"
    );
    for k in &r.summary {
        let check = r
            .checks
            .iter()
            .find(|c| c.kernel == k.kernel && c.device == k.device)
            .map_or("-", |c| match &c.result {
                None => "-",
                Some(Ok(())) => "ok",
                Some(Err(_)) => "WRONG",
            });
        let d = |v: [u32; 3]| format!("{}x{}x{}", v[0], v[1], v[2]);
        let per_se = if k.sqtt_bytes.is_empty() {
            "-".to_string()
        } else {
            k.sqtt_bytes
                .iter()
                .map(|b| human(*b))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let _ = writeln!(
            s,
            "{:<8} {:<10} {:<10} {:<10} {:>10} {:>6}  {:<8} {per_se}",
            k.device,
            k.kernel,
            d(k.grid),
            d(k.block),
            k.gpu_us.map_or("-".into(), |u| format!("{u:.2}")),
            k.waves,
            check,
        );
        for e in &k.decode_errors {
            let _ = writeln!(s, "  decode error: {e}");
        }
    }
    for c in &r.checks {
        if let Some(Err(e)) = &c.result {
            let _ = writeln!(s, "WRONG RESULT {} on {}: {e}", c.kernel, c.device);
        }
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

/// True when every checked kernel matched its CPU reference.
pub fn all_correct(r: &CaptureResult) -> bool {
    r.checks.iter().all(|c| !matches!(c.result, Some(Err(_))))
}
