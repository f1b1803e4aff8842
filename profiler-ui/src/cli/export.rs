//! `wavescope export rgp|perfetto IN -o OUT [--json]`.

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use serde_json::json;
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
        /// The .rgp file to write.
        #[arg(short, long, value_name = "OUT.rgp")]
        output: PathBuf,
        /// The trace's device to export when several have SQTT traces (a device name in the
        /// trace, e.g. AMD; `wavescope info` lists them).
        #[arg(long, value_name = "NAME")]
        device_name: Option<String>,
        /// Print what was written as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Perfetto / Chrome trace-event JSON.
    Perfetto {
        /// A tinygrad profile.pkl, a .wst or an .rgp file.
        input: PathBuf,
        /// The trace-event JSON file to write.
        #[arg(short, long, value_name = "OUT.json")]
        output: PathBuf,
        /// Leave out the per-wave slices (no SQTT decoding).
        #[arg(long)]
        no_waves: bool,
        /// Print what was written as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
}

fn bytes(p: &std::path::Path) -> Option<u64> {
    std::fs::metadata(p).map(|m| m.len()).ok()
}

pub fn run(a: ExportArgs) -> Result<()> {
    match a.what {
        ExportKind::Rgp {
            input,
            output,
            device_name,
            json,
        } => {
            let bar = super::spinner(&format!("reading {}", input.display()));
            let (_, profile) = traces::open::open_path(&input)?;
            bar.set_message(format!("writing {}", output.display()));
            let opts = traces::rgp::ExportOptions {
                device: device_name.clone(),
            };
            traces::rgp::export_file(&profile, &opts, &output)
                .with_context(|| format!("writing {}", output.display()))?;
            bar.finish_and_clear();
            if json {
                return super::print_json(&json!({
                    "input": input,
                    "output": output,
                    "format": "rgp",
                    "bytes": bytes(&output),
                    "device": device_name,
                }));
            }
            eprintln!("{} -> {}", input.display(), output.display());
        }
        ExportKind::Perfetto {
            input,
            output,
            no_waves,
            json,
        } => {
            let bar = super::spinner(&format!("reading {}", input.display()));
            let (_, profile) = traces::open::open_path(&input)?;
            bar.finish_and_clear();
            let bar = super::progress_bar(profile.sqtt.len() as u64, "waves");
            bar.set_message(format!("writing {}", output.display()));
            let opts = traces::perfetto::PerfettoOptions { waves: !no_waves };
            let s = traces::perfetto::export_file_with(&profile, &opts, &output, &|done, _| {
                bar.set_position(done as u64)
            })
            .with_context(|| format!("writing {}", output.display()))?;
            bar.finish_and_clear();
            for (i, e) in &s.decode_errors {
                eprintln!("warning: SQTT stream {i} not decoded: {e}");
            }
            if json {
                let errors: Vec<_> = s
                    .decode_errors
                    .iter()
                    .map(|(i, e)| json!({"sqtt": i, "error": e.to_string()}))
                    .collect();
                return super::print_json(&json!({
                    "input": input,
                    "output": output,
                    "format": "perfetto",
                    "bytes": bytes(&output),
                    "range_slices": s.range_slices,
                    "kernel_slices": s.kernel_slices,
                    "wave_slices": s.wave_slices,
                    "approximate_placement": s.approximate_placement,
                    "decode_errors": errors,
                }));
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
