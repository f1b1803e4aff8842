//! `wavescope`: the desktop profiler for AMD GPU traces, and its command line.

mod cli;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "wavescope", version, about = "Profiler and tracer for AMD GPUs built around SQTT")]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
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
    /// List KFD GPU nodes, driverless PCI GPUs and ASM2464 USB bridges.
    Devices(cli::devices::DevicesArgs),
}

fn main() -> ExitCode {
    let args = Args::parse();
    let result = match args.command {
        Some(Command::Decode(a)) => cli::decode::run(a),
        Some(Command::Info(a)) => cli::info::run(a),
        Some(Command::Convert(a)) => cli::convert::run(a),
        Some(Command::Export(a)) => cli::export::run(a),
        Some(Command::Disasm(a)) => cli::disasm::run(a),
        Some(Command::Devices(a)) => cli::devices::run(a),
        None => {
            eprintln!("wavescope: no command given; try `wavescope --help`");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wavescope: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
