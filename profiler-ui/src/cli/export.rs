//! `wavescope export rgp|perfetto IN -o OUT`.

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Args)]
pub struct ExportArgs {
    #[command(subcommand)]
    pub what: ExportKind,
}

#[derive(Subcommand)]
pub enum ExportKind {
    /// Radeon GPU Profiler capture (.rgp).
    Rgp {
        /// A tinygrad profile.pkl, a .wst or an .rgp file.
        input: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
        /// The base device to export when several have SQTT traces (e.g. AMD).
        #[arg(short, long)]
        device: Option<String>,
    },
    /// Perfetto / Chrome trace-event JSON.
    Perfetto {
        input: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
        /// Leave out the per-wave slices (no SQTT decoding).
        #[arg(long)]
        no_waves: bool,
    },
}

pub fn run(a: ExportArgs) -> Result<()> {
    match a.what {
        ExportKind::Rgp {
            input,
            output,
            device,
        } => {
            let (_, profile) = traces::open::open_path(&input)?;
            let opts = traces::rgp::ExportOptions { device };
            traces::rgp::export_file(&profile, &opts, &output)
                .with_context(|| format!("writing {}", output.display()))?;
            eprintln!("{} -> {}", input.display(), output.display());
        }
        ExportKind::Perfetto {
            input,
            output,
            no_waves,
        } => {
            let (_, profile) = traces::open::open_path(&input)?;
            let opts = traces::perfetto::PerfettoOptions { waves: !no_waves };
            let s = traces::perfetto::export_file(&profile, &opts, &output)
                .with_context(|| format!("writing {}", output.display()))?;
            for (i, e) in &s.decode_errors {
                eprintln!("warning: SQTT stream {i} not decoded: {e}");
            }
            eprintln!(
                "{} -> {}: {} ranges, {} kernels, {} waves{}",
                input.display(),
                output.display(),
                s.range_slices,
                s.kernel_slices,
                s.wave_slices,
                if s.approximate_placement > 0 {
                    format!(
                        " ({} streams placed by nominal clock, no realtime markers)",
                        s.approximate_placement
                    )
                } else {
                    String::new()
                }
            );
        }
    }
    Ok(())
}
