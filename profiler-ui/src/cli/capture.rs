//! `wavescope capture`: run a kernel (or the built-in demo) on a device with SQTT and write the
//! trace; the engine is the `capture` crate. Plain `wavescope` runs [`demo_then_open`].

use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use capture::npy::Dtype;
use capture::workload::{Dump, WorkloadFile};
use capture::{Arg, CaptureOptions, CaptureResult, DeviceSpec, Dims, HostOptions, Workload};
use clap::builder::BoolishValueParser;
use clap::Args;

use super::{outln, CheckFailed, Out};

#[derive(Args, Debug)]
pub struct CaptureArgs {
    /// The code object to run (an AMDGPU HSA ELF; --kernel picks one of its kernels).
    #[arg(value_name = "CODE_OBJECT", required_unless_present_any = ["demo", "workload"])]
    pub code_object: Option<PathBuf>,
    /// Run the built-in demo workload (vadd, reduce, matmul) with CPU reference checks.
    #[arg(long, conflicts_with_all = ["code_object", "kernel", "args", "workload"])]
    pub demo: bool,
    /// Run a workload file: code objects, named buffers and an ordered list of launches, each
    /// optionally compared with an expected output (docs/workloads.md).
    #[arg(long, value_name = "FILE.toml", conflicts_with_all = ["code_object", "kernel", "args"])]
    pub workload: Option<PathBuf>,
    /// Write every buffer after the run into DIR (NAME.bin raw and NAME.npy; a subdirectory per
    /// device when there are several). DIR must not exist or be empty.
    #[arg(long, value_name = "DIR", conflicts_with = "demo")]
    pub dump: Option<PathBuf>,
    /// The kernel to launch by name (a code object may hold many; default: its first).
    #[arg(long, value_name = "NAME")]
    pub kernel: Option<String>,
    /// Where to run: emu (the emulated gfx1100), emu:gfx1100, emu:gfx1201, emu:gfx950, emu-pci[:gfx1201|:gfx950],
    /// emu-usb[:gfx1201], kfd[:N], pci:N or usb:N; comma-separated or repeated for several devices
    /// (default: a real GPU when the KFD lists one, else the emulated gfx1100). The code
    /// object's target must be the device's.
    #[arg(long, value_name = "DEVICE", value_delimiter = ',')]
    pub device: Vec<DeviceSpec>,
    /// Work-groups, X[,Y[,Z]].
    #[arg(long, default_value = "1", value_name = "X[,Y[,Z]]")]
    pub grid: Dims,
    /// Work-items per work-group, X[,Y[,Z]].
    #[arg(long, default_value = "64", value_name = "X[,Y[,Z]]")]
    pub block: Dims,
    /// Kernel arguments in the kernel's parameter order, checked against its metadata:
    /// buf:SIZE[:FILL] with FILL zero (default), iota, rand[=SEED], u32=V or f32=V (SIZE in
    /// bytes, K/M suffixes allowed); u32:V; i32:V; f32:V.
    #[arg(long = "arg", value_name = "ARG")]
    pub args: Vec<Arg>,
    /// Capture SQTT around every launch (on by default; --sqtt=false turns it off).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1,
          default_missing_value = "true")]
    pub sqtt: bool,
    /// Per-SE SQTT buffer in MiB (default 64 on the emulator, 256 on real GPUs).
    #[arg(long, value_name = "MIB", env = "WAVESCOPE_SQTT_BUFFER_MB",
          value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub sqtt_buffer_mib: Option<u64>,
    /// SEs with instruction tracing, a bit per SE (default: every SE).
    #[arg(long, value_name = "MASK", value_parser = parse_mask)]
    pub itrace_se_mask: Option<u32>,
    /// Performance counters read around every launch, comma-separated names (`default`:
    /// tinygrad's set, SQ_BUSY_CYCLES,SQ_INSTS_VALU,SQ_INSTS_SALU,SQC_LDS_IDX_ACTIVE,
    /// SQC_LDS_BANK_CONFLICT,GRBM_GUI_ACTIVE,GL2C_HIT,GL2C_MISS on RDNA; `none`: no counters).
    #[arg(
        long,
        value_name = "LIST",
        default_value = "default",
        value_delimiter = ','
    )]
    pub pmc: Vec<String>,
    /// Launches of each kernel.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// The trace to write (.wst).
    #[arg(
        short = 'o',
        long = "output",
        default_value = "trace.wst",
        value_name = "OUT.wst"
    )]
    pub output: PathBuf,
    /// Also write an .rgp for Radeon GPU Profiler.
    #[arg(long, value_name = "OUT.rgp")]
    pub rgp: Option<PathBuf>,
    /// Print the summary as JSON (devices, kernels with results, files written, warnings).
    #[arg(long)]
    pub json: bool,
    /// pci:N: take the GPU from the kernel driver bound to it (never implicit).
    #[arg(long, env = "WAVESCOPE_PCI_UNBIND", value_parser = BoolishValueParser::new())]
    pub pci_unbind: bool,
    /// pci:N: bind the GPU to vfio-pci (no-IOMMU mode) for MSI interrupts instead of polling.
    #[arg(long, env = "WAVESCOPE_PCI_VFIO", value_parser = BoolishValueParser::new())]
    pub pci_vfio: bool,
    /// usb:N: detach the kernel driver (uas/usb-storage) from the bridge.
    #[arg(long, env = "WAVESCOPE_USB_DETACH", value_parser = BoolishValueParser::new())]
    pub usb_detach: bool,
    /// pci:N, usb:N: the linux-firmware amdgpu/ directory (default /lib/firmware/amdgpu).
    #[arg(long, env = "WAVESCOPE_AMDGPU_FIRMWARE", value_name = "DIR")]
    pub firmware_dir: Option<PathBuf>,
    /// Record every KFD ioctl and PM4/SDMA packet sent (JSON lines, the schema of tinygrad's
    /// recordings; compare with `wavescope conform`).
    #[arg(long, value_name = "FILE.jsonl")]
    pub record_commands: Option<PathBuf>,
}

fn parse_mask(s: &str) -> Result<u32, capture::ParseError> {
    capture::parse_u32(s)
}

/// The capture engine's progress as a bar on stderr (hidden when stderr is not a terminal).
fn progress() -> impl FnMut(usize, usize, &str) {
    let mut bar: Option<indicatif::ProgressBar> = None;
    move |done, total, what| {
        let b = bar.get_or_insert_with(|| super::progress_bar(total as u64, "capture"));
        b.set_length(total as u64);
        b.set_position(done as u64);
        b.set_message(what.to_string());
        if done >= total {
            b.finish_and_clear();
        }
    }
}

fn options(a: &CaptureArgs) -> CaptureOptions {
    let devices = if a.device.is_empty() {
        vec![DeviceSpec::default_device()]
    } else {
        a.device.clone()
    };
    CaptureOptions {
        devices,
        sqtt: a.sqtt,
        sqtt_buffer_mib: a.sqtt_buffer_mib,
        itrace_se_mask: a.itrace_se_mask,
        pmc: a
            .pmc
            .iter()
            .filter(|n| !n.is_empty() && n.as_str() != "none")
            .cloned()
            .collect(),
        repeat: a.repeat,
        wst: Some(a.output.clone()),
        rgp: a.rgp.clone(),
        host: HostOptions {
            pci_unbind: a.pci_unbind,
            pci_vfio: a.pci_vfio,
            firmware_dir: a.firmware_dir.clone(),
            usb_detach: a.usb_detach,
        },
    }
}

fn report(opts: &CaptureOptions, r: &CaptureResult, json: bool) -> Result<()> {
    if json {
        super::print_json(&r.report(opts))?;
    } else {
        let mut o = Out::new();
        let devs: Vec<String> = opts.devices.iter().map(DeviceSpec::label).collect();
        outln!(o, "captured on {}", devs.join(", "));
        write!(o, "{}", capture::summary_table(r))?;
        if let Some(p) = &r.wst {
            outln!(o, "wrote {}", shown(p));
        }
        if let Some(p) = &r.rgp {
            outln!(o, "wrote {} (open it in Radeon GPU Profiler)", shown(p));
        }
        o.flush()?;
    }
    if !capture::all_correct(r) {
        return Err(CheckFailed(
            "a kernel's results differ from its CPU reference or expected output".into(),
        )
        .into());
    }
    Ok(())
}

/// The absolute path, so "where" is unambiguous.
fn shown(p: &Path) -> String {
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

pub fn run(a: CaptureArgs) -> Result<()> {
    let Some(path) = a.record_commands.clone() else {
        return run_workload(a);
    };
    use runtime::record::{self, JsonlRecorder};
    use std::sync::{Arc, Mutex};
    let jsonl =
        JsonlRecorder::create(&path).with_context(|| format!("creating {}", path.display()))?;
    let rec = Arc::new(Mutex::new(jsonl));
    record::install(Some(rec.clone()));
    let r = run_workload(a);
    record::install(None);
    let mut g = rec
        .lock()
        .map_err(|_| anyhow!("the command recorder's lock is poisoned"))?;
    g.finish()
        .with_context(|| format!("writing {}", path.display()))?;
    eprintln!("recorded the commands in {}", path.display());
    r
}

fn run_workload(a: CaptureArgs) -> Result<()> {
    let opts = options(&a);
    let mut bar = progress();
    // Made before anything runs: a directory that cannot be written fails first.
    let dump = a.dump.as_deref().map(Dump::prepare).transpose()?;
    let (r, names) = if let Some(path) = &a.workload {
        let w = WorkloadFile::load(path)?;
        let plan = w.plan(dump.is_some());
        let r = capture::run_plan(&plan, &opts, &mut bar)?;
        let names = w
            .buffers
            .iter()
            .map(|b| (b.name.clone(), b.dtype))
            .collect();
        (r, names)
    } else if let Some(file) = &a.code_object {
        let elf = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
        let w = Workload {
            elf: Cow::Owned(elf),
            name: a.kernel.clone(),
            grid: a.grid.0,
            block: a.block.0,
            args: a.args.clone(),
            check: None,
        };
        let mut plan = capture::plan_of(std::slice::from_ref(&w));
        plan.read_back = dump.is_some();
        for c in &mut plan.code {
            c.label = file.display().to_string();
        }
        for l in &mut plan.launches {
            l.label = file.display().to_string();
        }
        let names = plan
            .buffers
            .iter()
            .map(|b| (b.name.clone(), Dtype::U8))
            .collect();
        (capture::run_plan(&plan, &opts, &mut bar)?, names)
    } else {
        (capture::run_demo(&opts, &mut bar)?, Vec::new())
    };
    if let Some(d) = dump {
        let files = d.finish(&names, &r.buffers)?;
        if !a.json {
            eprintln!(
                "wavescope: dumped {} buffer(s) into {}",
                files.len() / 2,
                shown(a.dump.as_deref().unwrap_or(Path::new(".")))
            );
        }
    }
    report(&opts, &r, a.json)
}

/// Plain `wavescope`: capture the demo on the default device with SQTT into
/// wavescope-demo.wst / wavescope-demo.rgp in the current directory, then open the .wst.
pub fn demo_then_open(config: &super::open::ConfigDir) -> Result<()> {
    let wst = PathBuf::from("wavescope-demo.wst");
    let opts = CaptureOptions {
        devices: vec![DeviceSpec::default_device()],
        wst: Some(wst.clone()),
        rgp: Some(PathBuf::from("wavescope-demo.rgp")),
        ..Default::default()
    };
    eprintln!(
        "wavescope: capturing the demo (vadd, reduce, matmul) on {} with SQTT; \
         `wavescope FILE` opens an existing trace",
        opts.devices
            .iter()
            .map(DeviceSpec::label)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut bar = progress();
    let r = capture::run_demo(&opts, &mut bar)?;
    report(&opts, &r, false)?;
    eprintln!("wavescope: opening {}", shown(&wst));
    super::open::run(
        super::open::OpenArgs {
            file: Some(wst.clone()),
            compare: None,
            screenshot: None,
            // Straight to the waves of the last demo kernel (matmul).
            view: super::open::View::Sqtt,
            size: super::open::Size::default(),
            source_dirs: Vec::new(),
        },
        config,
    )
    .with_context(|| {
        format!(
            "the capture is saved, but the window did not open (no display?); \
             run `wavescope {}` where there is one, or open wavescope-demo.rgp in RGP",
            wst.display()
        )
    })
}
