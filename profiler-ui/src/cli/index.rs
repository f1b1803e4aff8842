//! `wavescope index FILE.wst [-o OUT.wst] [--check]`: adds the analysis index
//! (`traces::wst::index`) to a `.wst` written without one (or refreshes it), so reopening it shows
//! its results without decoding the SQTT; `--check` only says whether the index is usable.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

#[derive(Args)]
pub struct IndexArgs {
    /// The .wst file.
    pub file: PathBuf,
    /// Write the indexed file here instead of replacing FILE (atomically).
    #[arg(short, long, value_name = "OUT.wst")]
    pub output: Option<PathBuf>,
    /// Only check the index FILE holds: exit status 0 when usable, 1 (with the reason, naming
    /// the offset) when missing or not.
    #[arg(long)]
    pub check: bool,
}

pub fn run(a: IndexArgs) -> Result<()> {
    if a.check {
        return match profiler_ui::data::load_index(&a.file) {
            Ok(Some(k)) => {
                eprintln!(
                    "{}: analysis index of {} kernels",
                    a.file.display(),
                    k.len()
                );
                Ok(())
            }
            Ok(None) => bail!("{}: no analysis index", a.file.display()),
            Err(e) => bail!("{e}"),
        };
    }
    let (format, profile) = traces::open::open_path(&a.file)?;
    if format != traces::open::Format::Wst {
        bail!(
            "{}: is {}, not .wst (use `wavescope convert`, which writes the index)",
            a.file.display(),
            format.name()
        );
    }
    let total = traces::wst::index::kernel_count(&profile);
    let bar = super::progress_bar(total as u64, "index");
    let out = a.output.as_ref().unwrap_or(&a.file);
    // The profile's blobs are slices of FILE's memory map: the new file goes to a temp file and
    // is renamed over the target, so the map stays valid while it is written. Each kernel's
    // index tables are written as soon as it is analysed (memory: one kernel's analysis).
    let indexed = traces::wst::write_file_index_streamed(&profile, out, &|done, _| {
        bar.set_position(done as u64)
    })
    .with_context(|| format!("writing {}", out.display()))?;
    bar.finish_and_clear();
    eprintln!(
        "{}: analysis index of {} kernels written",
        out.display(),
        indexed
    );
    Ok(())
}
