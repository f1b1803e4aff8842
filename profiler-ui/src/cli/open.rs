//! `wavescope open FILE [--compare B] [--screenshot OUT.png] [--view timeline|sqtt|instructions|pmc]`:
//! the desktop window, or one rendered frame written as a PNG.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use profiler_ui::app::Tab;
use profiler_ui::App;

#[derive(Args)]
pub struct OpenArgs {
    /// A tinygrad profile.pkl, a .wst or an .rgp file.
    pub file: Option<PathBuf>,
    /// Compare FILE (A) with this capture (B): both timelines aligned at their first kernel, the
    /// instruction table with A, B and delta columns (like File > Compare with...).
    #[arg(long, value_name = "B")]
    pub compare: Option<PathBuf>,
    /// Render one frame to this PNG once the file is loaded, then exit.
    #[arg(long)]
    pub screenshot: Option<PathBuf>,
    /// The view to show (and to render for --screenshot).
    #[arg(long, value_enum, default_value_t = View::Timeline)]
    pub view: View,
    /// Window size in logical pixels, WIDTHxHEIGHT.
    #[arg(long, default_value = "1600x1000")]
    pub size: String,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum View {
    Timeline,
    Sqtt,
    Instructions,
    Pmc,
}

pub fn run(a: OpenArgs) -> Result<()> {
    let (w, h) = a
        .size
        .split_once('x')
        .and_then(|(w, h)| Some((w.parse::<f32>().ok()?, h.parse::<f32>().ok()?)))
        .ok_or_else(|| anyhow::anyhow!("--size wants WIDTHxHEIGHT, got {}", a.size))?;
    let mut app = App::new(a.file.clone());
    if let Some(b) = &a.compare {
        if a.file.is_none() {
            bail!("--compare needs a FILE to compare with it");
        }
        app = app.with_compare(b.clone());
    }
    let title = match &a.file {
        Some(f) => format!("wavescope · {}", f.display()),
        None => "wavescope".to_string(),
    };
    if let Some(out) = &a.screenshot {
        if a.file.is_none() {
            bail!("--screenshot needs a FILE");
        }
        let tab = match a.view {
            View::Timeline => Tab::Timeline,
            View::Sqtt => Tab::Sqtt,
            View::Instructions => Tab::Instructions,
            View::Pmc => Tab::Pmc,
        };
        app = app.with_screenshot(out.clone(), tab);
        // The app writes the PNG and closes the window; check the file appeared.
        let _ = std::fs::remove_file(out);
        profiler_ui::run_gui(app, &title, [w, h]).map_err(anyhow::Error::msg)?;
        if !out.exists() {
            bail!("no screenshot was written to {}", out.display());
        }
        eprintln!("wrote {}", out.display());
        return Ok(());
    }
    if a.view != View::Timeline {
        app = app.with_view(match a.view {
            View::Timeline => Tab::Timeline,
            View::Sqtt => Tab::Sqtt,
            View::Instructions => Tab::Instructions,
            View::Pmc => Tab::Pmc,
        });
    }
    profiler_ui::run_gui(app, &title, [w, h]).map_err(anyhow::Error::msg)
}
