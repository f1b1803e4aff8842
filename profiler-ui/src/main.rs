//! `wavescope`: the desktop profiler for AMD GPU traces, and its command line.

#![forbid(unsafe_code)]

mod cli;

use clap::error::{ContextKind, ContextValue};
use clap::{CommandFactory, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

const AFTER_HELP: &str = "\
Exit status:
  0  success
  1  error (a file that cannot be read or written, a device that cannot be opened, ...)
  2  usage error (an unknown flag, a value that does not parse; the message lists valid values)
  3  a check failed: `capture` found a kernel whose results differ from the CPU reference,
     `diff --fail-if-slower` found a kernel slower than allowed

Environment (each is also a flag; the flag wins):
  WAVESCOPE_PCI_UNBIND=1       capture --pci-unbind
  WAVESCOPE_PCI_VFIO=1         capture --pci-vfio
  WAVESCOPE_USB_DETACH=1       capture --usb-detach
  WAVESCOPE_AMDGPU_FIRMWARE    capture --firmware-dir
  WAVESCOPE_SQTT_BUFFER_MB     capture --sqtt-buffer-mib
  WAVESCOPE_CONFIG_DIR         --config-dir (else $XDG_CONFIG_HOME/wavescope, ~/.config/wavescope)";

#[derive(Parser)]
#[command(
    name = "wavescope",
    version,
    about = "Profiler and tracer for AMD GPUs built around SQTT",
    after_help = AFTER_HELP
)]
#[command(args_conflicts_with_subcommands = true)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// With no subcommand: open this file in the desktop window (no file: capture the demo
    /// into wavescope-demo.wst/.rgp and open it).
    file: Option<PathBuf>,
    #[command(flatten)]
    config: cli::open::ConfigDir,
}

#[derive(Subcommand)]
enum Command {
    /// Run a kernel (or --demo) on a GPU or the emulated gfx1100 and record a trace with SQTT.
    #[command(after_help = AFTER_HELP)]
    Capture(Box<cli::capture::CaptureArgs>),
    /// Decode one raw per-SE SQTT blob.
    Decode(cli::decode::DecodeArgs),
    /// Describe a trace file (profile.pkl, .wst, .rgp).
    Info(cli::info::InfoArgs),
    /// Convert a trace file to wavescope's .wst.
    Convert(cli::convert::ConvertArgs),
    /// Add (or refresh) the analysis index of a .wst, so it reopens without decoding the SQTT.
    Index(cli::index::IndexArgs),
    /// Export a trace file as .rgp or Perfetto JSON.
    Export(cli::export::ExportArgs),
    /// Print the kernels (descriptors, arguments) and disassembly of an AMDGPU code object.
    Disasm(cli::disasm::DisasmArgs),
    /// Open a trace in the desktop window, or render one view to a PNG (--screenshot).
    Open(cli::open::OpenArgs),
    /// Per-instruction timing table of each kernel with SQTT data (--json for scripts).
    Stats(cli::stats::StatsArgs),
    /// Compare two captures per kernel and per instruction (--json for scripts).
    #[command(after_help = AFTER_HELP)]
    Diff(cli::diff::DiffArgs),
    /// List KFD GPU nodes, driverless PCI GPUs and ASM2464 USB bridges.
    Devices(cli::devices::DevicesArgs),
    /// Compare two command recordings (--record-commands) per operation.
    Conform(cli::conform::ConformArgs),
}

/// The error and its causes on one line, each cause once: a cause whose text the message
/// before it already contains (`{path}: {io error}` wrapping that io error) is not repeated.
fn error_text(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if s.is_empty() || out.contains(&s) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&s);
    }
    out
}

/// Parses the command line; a usage error exits with status 2 and the usage of the command it
/// concerns (clap leaves the usage out of "invalid value" errors; it is added here).
fn parse() -> Args {
    match Args::try_parse() {
        Ok(a) => a,
        Err(mut e) => {
            if e.use_stderr() && e.get(ContextKind::Usage).is_none() {
                let mut cmd = Args::command();
                cmd.build();
                let sub = std::env::args()
                    .skip(1)
                    .find_map(|a| cmd.find_subcommand(&a).map(|s| s.get_name().to_string()));
                let usage = match sub.and_then(|n| cmd.find_subcommand_mut(&n)) {
                    Some(s) => s.render_usage(),
                    None => cmd.render_usage(),
                };
                e.insert(ContextKind::Usage, ContextValue::StyledStr(usage));
            }
            e.exit()
        }
    }
}

fn main() -> ExitCode {
    let args = parse();
    let result = match args.command {
        Some(Command::Capture(a)) => cli::capture::run(*a),
        Some(Command::Decode(a)) => cli::decode::run(a),
        Some(Command::Info(a)) => cli::info::run(a),
        Some(Command::Convert(a)) => cli::convert::run(a),
        Some(Command::Index(a)) => cli::index::run(a),
        Some(Command::Export(a)) => cli::export::run(a),
        Some(Command::Disasm(a)) => cli::disasm::run(a),
        Some(Command::Devices(a)) => cli::devices::run(a),
        Some(Command::Open(a)) => cli::open::run(a, &args.config),
        Some(Command::Stats(a)) => cli::stats::run(a),
        Some(Command::Diff(a)) => cli::diff::run(a),
        Some(Command::Conform(a)) => cli::conform::run(a),
        // No FILE: capture the built-in demo and open it.
        None if args.file.is_none() => cli::capture::demo_then_open(&args.config),
        None => cli::open::run(
            cli::open::OpenArgs {
                file: args.file,
                compare: None,
                screenshot: None,
                view: cli::open::View::Timeline,
                size: cli::open::Size::default(),
                source_dirs: Vec::new(),
            },
            &args.config,
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wavescope: error: {}", error_text(&e));
            if e.downcast_ref::<cli::CheckFailed>().is_some() {
                ExitCode::from(3)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
