//! `wavescope open FILE [--compare B] [--screenshot OUT.png] [--view timeline|sqtt|instructions|pmc]
//! [--source-dir DIR]...`:
//! the desktop window, or one rendered frame written as a PNG.

use std::path::PathBuf;
use std::str::FromStr;

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
    #[arg(long, value_name = "OUT.png")]
    pub screenshot: Option<PathBuf>,
    /// The view to show (and to render for --screenshot).
    #[arg(long, value_enum, default_value_t = View::Timeline)]
    pub view: View,
    /// Window size in logical pixels, WIDTHxHEIGHT.
    #[arg(long, default_value = "1600x1000")]
    pub size: Size,
    /// Look for the kernels' source files (named by their DWARF line tables) in DIR, after
    /// the path the compiler recorded and before the capture's own directory; repeatable.
    #[arg(long = "source-dir", value_name = "DIR")]
    pub source_dirs: Vec<PathBuf>,
}

/// Where the app remembers recent files (read from the environment here, nowhere else).
#[derive(Args, Clone, Default)]
pub struct ConfigDir {
    /// Where recent files are remembered (default: $XDG_CONFIG_HOME/wavescope, else
    /// ~/.config/wavescope).
    #[arg(long, global = true, env = "WAVESCOPE_CONFIG_DIR", value_name = "DIR")]
    pub config_dir: Option<PathBuf>,
    #[arg(long, global = true, env = "XDG_CONFIG_HOME", hide = true)]
    pub xdg_config_home: Option<PathBuf>,
    #[arg(long, global = true, env = "HOME", hide = true)]
    pub home: Option<PathBuf>,
}

impl ConfigDir {
    pub fn dir(&self) -> Option<PathBuf> {
        self.config_dir
            .clone()
            .or_else(|| self.xdg_config_home.as_ref().map(|d| d.join("wavescope")))
            .or_else(|| self.home.as_ref().map(|h| h.join(".config/wavescope")))
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum View {
    Timeline,
    Sqtt,
    Instructions,
    Pmc,
}

impl View {
    fn tab(self) -> Tab {
        match self {
            View::Timeline => Tab::Timeline,
            View::Sqtt => Tab::Sqtt,
            View::Instructions => Tab::Instructions,
            View::Pmc => Tab::Pmc,
        }
    }
}

/// `WIDTHxHEIGHT` in logical pixels.
#[derive(Clone, Copy, Debug)]
pub struct Size(pub [f32; 2]);

impl Default for Size {
    fn default() -> Self {
        Size([1600.0, 1000.0])
    }
}

impl FromStr for Size {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        s.split_once('x')
            .and_then(|(w, h)| Some([w.parse::<f32>().ok()?, h.parse::<f32>().ok()?]))
            .filter(|d| d.iter().all(|v| v.is_finite() && *v > 0.0))
            .map(Size)
            .ok_or_else(|| format!("{s:?} is not WIDTHxHEIGHT (e.g. 1600x1000)"))
    }
}

pub fn run(a: OpenArgs, config: &ConfigDir) -> Result<()> {
    let mut app =
        App::with_config_dir(a.file.clone(), config.dir()).with_source_dirs(a.source_dirs.clone());
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
        app = app.with_screenshot(out.clone(), a.view.tab());
        // The app writes the PNG and closes the window; check the file appeared.
        let _ = std::fs::remove_file(out);
        profiler_ui::run_gui(app, &title, a.size.0).map_err(anyhow::Error::msg)?;
        if !out.exists() {
            bail!("no screenshot was written to {}", out.display());
        }
        eprintln!("wrote {}", out.display());
        return Ok(());
    }
    if a.view != View::Timeline {
        app = app.with_view(a.view.tab());
    }
    profiler_ui::run_gui(app, &title, a.size.0).map_err(anyhow::Error::msg)
}
