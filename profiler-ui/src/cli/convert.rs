//! `wavescope convert IN -o OUT.wst [--no-index] [--json]`: any readable trace file to wavescope's
//! own format, with the analysis index (`traces::wst::index`) unless `--no-index`.

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::json;
use std::path::PathBuf;

#[derive(Args)]
pub struct ConvertArgs {
    /// A tinygrad profile.pkl, a .wst or an .rgp file.
    pub input: PathBuf,
    /// The .wst file to write (replaced atomically).
    #[arg(short, long, value_name = "OUT.wst")]
    pub output: PathBuf,
    /// Leave out the analysis index (reopening then decodes the SQTT again).
    #[arg(long)]
    pub no_index: bool,
    /// Print what was written as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: ConvertArgs) -> Result<()> {
    if a.output.extension().and_then(|e| e.to_str()) != Some("wst") {
        bail!(
            "{}: the output of convert is a .wst file",
            a.output.display()
        );
    }
    let bar = super::spinner(&format!("reading {}", a.input.display()));
    let (format, profile) = traces::open::open_path(&a.input)?;
    // With the index, each kernel's tables are written as it is analysed (memory: one
    // kernel's analysis, never the whole index).
    let indexed = if a.no_index {
        bar.set_message(format!("writing {}", a.output.display()));
        traces::wst::write_file(&profile, &a.output).map(|()| None)
    } else {
        bar.set_message(format!("analysing and writing {}", a.output.display()));
        traces::wst::write_file_index_streamed(&profile, &a.output, &|_, _| {}).map(Some)
    }
    .with_context(|| format!("writing {}", a.output.display()))?;
    bar.finish_and_clear();
    for w in &profile.source.warnings {
        eprintln!("warning: {w}");
    }
    let bytes = std::fs::metadata(&a.output).map(|m| m.len()).ok();
    if a.json {
        return super::print_json(&json!({
            "input": a.input,
            "input_format": format.name(),
            "output": a.output,
            "output_format": "wst",
            "bytes": bytes,
            "devices": profile.devices.len(),
            "kernels": profile.kernels.len(),
            "sqtt": profile.sqtt.len(),
            "warnings": profile.source.warnings,
            "indexed_kernels": indexed,
        }));
    }
    eprintln!(
        "{} ({}) -> {}: {} devices, {} kernels, {} SQTT streams",
        a.input.display(),
        format.name(),
        a.output.display(),
        profile.devices.len(),
        profile.kernels.len(),
        profile.sqtt.len()
    );
    Ok(())
}
