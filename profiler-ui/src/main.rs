//! `wavescope`: the desktop profiler for AMD GPU traces, and its command line.

mod cli;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "wavescope",
    version,
    about = "Profiler and tracer for AMD GPUs built around SQTT"
)]
#[command(args_conflicts_with_subcommands = true)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// With no subcommand: open this file in the desktop window (no file: capture the demo
    /// into wavescope-demo.wst/.rgp and open it).
    file: Option<std::path::PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Run kernels (or --demo) on a GPU or the emulated gfx1100 and record a trace with SQTT.
    Capture(cli::capture::CaptureArgs),
    /// Decode one raw per-SE SQTT blob.
    Decode(cli::decode::DecodeArgs),
    /// Describe a trace file (profile.pkl, .wst, .rgp).
    Info(cli::info::InfoArgs),
    /// Convert a trace file to wavescope's .wst.
    Convert(cli::convert::ConvertArgs),
    /// Export a trace file as .rgp or Perfetto JSON.
    Export(cli::export::ExportArgs),
    /// Print the kernels (descriptors, arguments) and disassembly of an AMDGPU code object.
    Disasm(cli::disasm::DisasmArgs),
    /// Open a trace in the desktop window, or render one view to a PNG (--screenshot).
    Open(cli::open::OpenArgs),
    /// Per-instruction timing table of each kernel with SQTT data (--json for scripts).
    Stats(cli::stats::StatsArgs),
    /// Compare two captures per kernel and per instruction (--json for scripts).
    Diff(cli::diff::DiffArgs),
    /// List KFD GPU nodes, driverless PCI GPUs and ASM2464 USB bridges.
    Devices(cli::devices::DevicesArgs),
    /// Compare two command recordings (--record-commands) per operation.
    Conform(cli::conform::ConformArgs),
}

/// `wavescope info x | head` closes stdout early; `println!` then panics with a broken pipe.
/// A reader that stopped reading is not an error: end quietly instead of printing a panic.
fn quiet_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.contains("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    quiet_broken_pipe();
    let args = Args::parse();
    let result = match args.command {
        Some(Command::Capture(a)) => cli::capture::run(a),
        Some(Command::Decode(a)) => cli::decode::run(a),
        Some(Command::Info(a)) => cli::info::run(a),
        Some(Command::Convert(a)) => cli::convert::run(a),
        Some(Command::Export(a)) => cli::export::run(a),
        Some(Command::Disasm(a)) => cli::disasm::run(a),
        Some(Command::Devices(a)) => cli::devices::run(a),
        Some(Command::Open(a)) => cli::open::run(a),
        Some(Command::Stats(a)) => cli::stats::run(a),
        Some(Command::Diff(a)) => cli::diff::run(a),
        Some(Command::Conform(a)) => cli::conform::run(a),
        // No FILE: capture the built-in demo and open it.
        None if args.file.is_none() => cli::capture::demo_then_open(),
        None => cli::open::run(cli::open::OpenArgs {
            file: args.file,
            compare: None,
            screenshot: None,
            view: cli::open::View::Timeline,
            size: "1600x1000".into(),
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wavescope: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
