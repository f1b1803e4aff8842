//! `wavescope capture`: run kernels (or the built-in demo) on a device with SQTT and write the
//! trace. Plain `wavescope` runs [`demo_then_open`].

use std::borrow::Cow;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use profiler_ui::capture::{self, Arg, CaptureOptions, CaptureResult, DeviceSpec, Workload};

#[derive(Args, Debug, Default)]
pub struct CaptureArgs {
    /// emu, emu-pci, emu-usb, kfd:N, pci:N or usb:N; comma-separated for several devices
    /// (default: a real GPU when the KFD lists one, else the emulated gfx1100).
    #[arg(long)]
    pub device: Option<String>,
    /// Run the built-in demo workload (vadd, reduce, matmul) with CPU reference checks.
    #[arg(long, conflicts_with = "kernel")]
    pub demo: bool,
    /// The kernel to run: FILE.hsaco:NAME (NAME must be the code object's kernel).
    #[arg(long, value_name = "FILE.hsaco:NAME")]
    pub kernel: Option<String>,
    /// Work-groups, X[,Y[,Z]].
    #[arg(long, default_value = "1")]
    pub grid: String,
    /// Work-items per work-group, X[,Y[,Z]].
    #[arg(long, default_value = "64")]
    pub block: String,
    /// Kernel arguments in order, buffers first: buf:SIZE[:FILL] with FILL zero (default),
    /// iota, rand[=SEED], u32=V or f32=V (SIZE in bytes, K/M suffixes allowed); u32:V; f32:V.
    #[arg(long = "arg", value_name = "ARG")]
    pub args: Vec<String>,
    /// Capture SQTT around every launch (on by default; --sqtt=false turns it off).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1,
          default_missing_value = "true")]
    pub sqtt: bool,
    /// Per-SE SQTT buffer in MiB (default 64 on the emulator, 256 on real GPUs).
    #[arg(long, value_name = "MIB")]
    pub sqtt_buffer_mib: Option<u64>,
    /// SEs with instruction tracing, a bit per SE (default: every SE).
    #[arg(long, value_name = "MASK", value_parser = parse_mask)]
    pub itrace_se_mask: Option<u32>,
    /// Launches of each kernel.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// The trace to write (.wst).
    #[arg(short = 'o', long = "output", default_value = "trace.wst")]
    pub output: PathBuf,
    /// Also write an .rgp for Radeon GPU Profiler.
    #[arg(long, value_name = "OUT.rgp")]
    pub rgp: Option<PathBuf>,
    /// Record every KFD ioctl and PM4/SDMA packet sent (JSON lines, the schema of tinygrad's
    /// recordings; compare with `wavescope conform`).
    #[arg(long, value_name = "FILE.jsonl")]
    pub record_commands: Option<PathBuf>,
}

fn parse_mask(s: &str) -> Result<u32, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => match s.strip_prefix("0b") {
            Some(b) => u32::from_str_radix(b, 2),
            None => s.parse(),
        },
    };
    r.map_err(|e| format!("{s:?}: {e}"))
}

fn dims(s: &str, what: &str) -> Result<[u32; 3]> {
    let mut d = [1u32; 3];
    let parts: Vec<&str> = s.split([',', 'x']).collect();
    if parts.is_empty() || parts.len() > 3 {
        bail!("--{what} wants X[,Y[,Z]], got {s:?}");
    }
    for (i, p) in parts.iter().enumerate() {
        d[i] = p
            .trim()
            .parse()
            .ok()
            .filter(|&v| v > 0)
            .ok_or_else(|| anyhow!("--{what}: {p:?} is not a positive number"))?;
    }
    Ok(d)
}

fn size(s: &str) -> Result<usize> {
    let (num, mul) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1 << 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
        _ => (s, 1),
    };
    num.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .filter(|&n| n > 0)
        .ok_or_else(|| anyhow!("buffer size {s:?} is not a positive number of bytes"))
}

/// One `--arg`.
fn parse_arg(s: &str) -> Result<Arg> {
    let mut it = s.splitn(3, ':');
    let kind = it.next().unwrap_or_default();
    let val = it
        .next()
        .ok_or_else(|| anyhow!("--arg {s:?}: want buf:SIZE[:FILL], u32:V or f32:V"))?;
    match kind {
        "u32" => Ok(Arg::Scalar(parse_u32(val)?)),
        "i32" => Ok(Arg::Scalar(
            val.parse::<i32>()
                .map_err(|e| anyhow!("--arg {s:?}: {e}"))? as u32,
        )),
        "f32" => Ok(Arg::Scalar(
            val.parse::<f32>()
                .map_err(|e| anyhow!("--arg {s:?}: {e}"))?
                .to_bits(),
        )),
        "buf" => {
            let n = size(val)?;
            let words = n.div_ceil(4);
            let fill = it.next().unwrap_or("zero");
            let v: Vec<u32> = match fill.split_once('=') {
                None if fill == "zero" => vec![0; words],
                None if fill == "iota" => (0..words as u32).collect(),
                None if fill == "rand" => capture::rng(words, 1),
                Some(("rand", seed)) => capture::rng(words, parse_u32(seed)?),
                Some(("u32", v)) => vec![parse_u32(v)?; words],
                Some(("f32", v)) => vec![
                    v.parse::<f32>()
                        .map_err(|e| anyhow!("--arg {s:?}: {e}"))?
                        .to_bits();
                    words
                ],
                _ => bail!(
                    "--arg {s:?}: fill {fill:?} is not zero, iota, rand[=SEED], u32=V or f32=V"
                ),
            };
            let mut b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            b.truncate(n);
            Ok(Arg::Buffer(b))
        }
        _ => bail!("--arg {s:?}: want buf:SIZE[:FILL], u32:V, i32:V or f32:V"),
    }
}

fn parse_u32(s: &str) -> Result<u32> {
    parse_mask(s).map_err(|e| anyhow!("{e}"))
}

/// A one-line progress bar on stderr when it is a terminal.
fn progress_bar() -> impl FnMut(usize, usize, &str) {
    let tty = std::io::stderr().is_terminal();
    move |done, total, what| {
        if !tty || total == 0 {
            return;
        }
        let w = 30;
        let fill = done * w / total;
        let mut e = std::io::stderr();
        let _ = write!(
            e,
            "\r[{}{}] {done}/{total} {what:<40}",
            "#".repeat(fill),
            " ".repeat(w - fill)
        );
        if done == total {
            let _ = writeln!(e);
        }
        let _ = e.flush();
    }
}

fn options(a: &CaptureArgs) -> Result<CaptureOptions> {
    let devices = match &a.device {
        Some(d) => DeviceSpec::parse_list(d)?,
        None => vec![DeviceSpec::default_device()],
    };
    Ok(CaptureOptions {
        devices,
        sqtt: a.sqtt,
        sqtt_buffer_mib: a.sqtt_buffer_mib,
        itrace_se_mask: a.itrace_se_mask,
        repeat: a.repeat,
        wst: Some(a.output.clone()),
        rgp: a.rgp.clone(),
    })
}

fn report(opts: &CaptureOptions, r: &CaptureResult) -> Result<()> {
    let devs: Vec<String> = opts.devices.iter().map(DeviceSpec::label).collect();
    println!("captured on {}", devs.join(", "));
    print!("{}", capture::summary_table(r));
    if let Some(p) = &r.wst {
        println!("wrote {}", shown(p));
    }
    if let Some(p) = &r.rgp {
        println!("wrote {} (open it in Radeon GPU Profiler)", shown(p));
    }
    if !capture::all_correct(r) {
        bail!("a kernel's results differ from the CPU reference");
    }
    Ok(())
}

/// The absolute path, so "where" is unambiguous.
fn shown(p: &std::path::Path) -> String {
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
    let opts = options(&a)?;
    let mut bar = progress_bar();
    let r = if a.demo {
        capture::run_demo(&opts, &mut bar)?
    } else {
        let Some(k) = &a.kernel else {
            bail!("give --kernel FILE.hsaco:NAME or --demo");
        };
        let (file, name) = match k.rsplit_once(':') {
            Some((f, n)) if !n.is_empty() && !n.contains('/') => (f, Some(n.to_string())),
            _ => (k.as_str(), None),
        };
        let elf = std::fs::read(file).with_context(|| format!("reading {file}"))?;
        let args = a.args.iter().map(|s| parse_arg(s)).collect::<Result<_>>()?;
        let w = Workload {
            elf: Cow::Owned(elf),
            name,
            grid: dims(&a.grid, "grid")?,
            block: dims(&a.block, "block")?,
            args,
            check: None,
        };
        capture::run_capture(&[w], &opts, &mut bar)?
    };
    report(&opts, &r)
}

/// Plain `wavescope`: capture the demo on the default device with SQTT into
/// wavescope-demo.wst / wavescope-demo.rgp in the current directory, then open the .wst.
pub fn demo_then_open() -> Result<()> {
    let wst = PathBuf::from("wavescope-demo.wst");
    let a = CaptureArgs {
        demo: true,
        sqtt: true,
        repeat: 1,
        output: wst.clone(),
        rgp: Some(PathBuf::from("wavescope-demo.rgp")),
        grid: "1".into(),
        block: "64".into(),
        ..Default::default()
    };
    let opts = options(&a)?;
    eprintln!(
        "wavescope: capturing the demo (vadd, reduce, matmul) on {} with SQTT; \
         `wavescope FILE` opens an existing trace",
        opts.devices
            .iter()
            .map(DeviceSpec::label)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut bar = progress_bar();
    let r = capture::run_demo(&opts, &mut bar)?;
    report(&opts, &r)?;
    println!("opening {}", shown(&wst));
    super::open::run(super::open::OpenArgs {
        file: Some(wst.clone()),
        compare: None,
        screenshot: None,
        // Straight to the waves of the last demo kernel (matmul).
        view: super::open::View::Sqtt,
        size: "1600x1000".into(),
    })
    .with_context(|| {
        format!(
            "the capture is saved, but the window did not open (no display?); \
             run `wavescope {}` where there is one, or open wavescope-demo.rgp in RGP",
            wst.display()
        )
    })
}
