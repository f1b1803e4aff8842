//! `wavescope convert IN -o OUT.wst`: any readable trace file to wavescope's own format.

use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct ConvertArgs {
    /// A tinygrad profile.pkl, a .wst or an .rgp file.
    pub input: PathBuf,
    /// The .wst file to write (replaced atomically).
    #[arg(short, long)]
    pub output: PathBuf,
}

pub fn run(a: ConvertArgs) -> Result<()> {
    if a.output.extension().and_then(|e| e.to_str()) != Some("wst") {
        bail!(
            "{}: the output of convert is a .wst file",
            a.output.display()
        );
    }
    let (format, profile) = traces::open::open_path(&a.input)?;
    traces::wst::write_file(&profile, &a.output)
        .with_context(|| format!("writing {}", a.output.display()))?;
    for w in &profile.source.warnings {
        eprintln!("warning: {w}");
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
