//! The desktop app: menus, the file-loading state machine (background thread with progress),
//! the views as tabs, recent files, drag and drop, exports and one-frame screenshots.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use egui::{Color32, RichText, Ui};
use traces::model::Profile;

use crate::data::{kernels_with_sqtt, pmc_counters, pmc_rows, PmcCounter, PmcRow};
use crate::layout::ruler::format_us;
use crate::layout::timeline::{Target, TimelineModel};
use crate::views::insts::SortState;
use crate::views::sqtt::KernelView;
use crate::views::timeline::{Action, TimelineState};
use crate::views::{compare, insts, pmc, sqtt, timeline};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Timeline,
    Sqtt,
    Instructions,
    Pmc,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportKind {
    Rgp,
    Perfetto,
}

/// Progress shared with a background job: a stage and a fraction in [0, 1].
type Progress = Arc<Mutex<(String, f32)>>;

/// A trace that finished loading.
#[allow(clippy::type_complexity)]
pub struct Loaded {
    pub path: PathBuf,
    pub format: String,
    pub profile: Arc<Profile>,
    pub timeline: TimelineModel,
    pub tl: TimelineState,
    pub sqtt_kernels: Vec<usize>,
    /// The kernel shown in the SQTT/instruction/PMC tabs.
    pub kernel: Option<usize>,
    pub kernel_view: Option<KernelView>,
    kernel_job: Option<(usize, Receiver<Result<KernelView, String>>, Progress)>,
    pub kernel_error: Option<String>,
    pub search: String,
    pmc: Option<(usize, Vec<PmcRow>, Vec<PmcCounter>)>,
    pmc_selected: usize,
    pub inst_sort: SortState,
    /// Source directories, the files read and the source/instruction selection.
    pub source: crate::views::source::SourceState,
    export_job: Option<(
        ExportKind,
        PathBuf,
        Receiver<Result<String, String>>,
        Instant,
    )>,
    pub export_result: Option<Result<String, String>>,
    export_dialog: Option<(ExportKind, String)>,
    /// The capture opened with File > Compare with… (B; this one is A).
    pub compare: compare::CompareSlot,
    /// What the file's analysis index saved, by kernel (empty without one): shown while a
    /// kernel's detail is decoded, and its instruction table reused.
    pub index: std::collections::HashMap<usize, crate::data::IndexedKernel>,
    /// Why the file's analysis index was ignored, if it was.
    pub index_warning: Option<String>,
}

pub enum State {
    Welcome,
    Loading {
        path: PathBuf,
        rx: Receiver<Result<Box<Loaded>, String>>,
        progress: Progress,
        started: Instant,
    },
    Failed {
        path: PathBuf,
        error: String,
    },
    Loaded(Box<Loaded>),
}

/// What `--screenshot` asked for.
struct Screenshot {
    out: PathBuf,
    tab: Tab,
    ready_frames: u32,
    requested: bool,
    rx: Option<Receiver<Arc<egui::ColorImage>>>,
    pub done: Option<Result<(), String>>,
}

pub struct App {
    pub state: State,
    pub tab: Tab,
    pub recent: Vec<PathBuf>,
    config_dir: Option<PathBuf>,
    dialog: Option<FileDialog>,
    /// The open dialog picks a capture to compare with rather than one to open.
    dialog_compare: bool,
    screenshot: Option<Screenshot>,
    /// The view to switch to once loading finishes.
    pending_view: Option<Tab>,
    /// The capture to compare with once loading finishes (`open A --compare B`).
    pending_compare: Option<PathBuf>,
    /// Directories to look for source files in (`--source-dir`), before the capture's own.
    source_dirs: Vec<PathBuf>,
}

const MAX_RECENT: usize = 10;

impl App {
    /// A new window; opens `file` right away when given (the welcome screen otherwise). The
    /// recent-files list lives in `config_dir` (`None`: remember nothing); the CLI decides where.
    pub fn with_config_dir(file: Option<PathBuf>, config_dir: Option<PathBuf>) -> App {
        let recent = config_dir
            .as_ref()
            .and_then(|d| std::fs::read_to_string(d.join("recent.txt")).ok())
            .map(|s| {
                s.lines()
                    .filter(|l| !l.is_empty())
                    .map(PathBuf::from)
                    .collect()
            })
            .unwrap_or_default();
        let mut app = App {
            state: State::Welcome,
            tab: Tab::Timeline,
            recent,
            config_dir,
            dialog: None,
            dialog_compare: false,
            screenshot: None,
            pending_view: None,
            pending_compare: None,
            source_dirs: Vec::new(),
        };
        if let Some(f) = file {
            app.open(f);
        }
        app
    }

    /// Show `tab` once the file is loaded; for the SQTT and instruction views, on the last
    /// kernel that has SQTT data (the demo's most interesting one).
    pub fn with_view(mut self, tab: Tab) -> App {
        self.pending_view = Some(tab);
        self
    }

    /// Render one frame of `tab` to a PNG once everything is loaded, then close the window.
    /// Compares the file being opened with `b` once it has loaded.
    /// Looks for source files in `dirs` (in order) before the capture's own directory.
    pub fn with_source_dirs(mut self, dirs: Vec<PathBuf>) -> App {
        self.source_dirs = dirs;
        self
    }

    pub fn with_compare(mut self, b: PathBuf) -> App {
        self.pending_compare = Some(b);
        self
    }

    pub fn with_screenshot(mut self, out: PathBuf, tab: Tab) -> App {
        self.tab = Tab::Timeline;
        self.screenshot = Some(Screenshot {
            out,
            tab,
            ready_frames: 0,
            requested: false,
            rx: None,
            done: None,
        });
        self
    }

    /// The screenshot's outcome once written (or failed).
    pub fn screenshot_result(&self) -> Option<&Result<(), String>> {
        self.screenshot.as_ref().and_then(|s| s.done.as_ref())
    }

    pub fn loaded(&self) -> Option<&Loaded> {
        match &self.state {
            State::Loaded(l) => Some(l),
            _ => None,
        }
    }

    pub fn loaded_mut(&mut self) -> Option<&mut Loaded> {
        match &mut self.state {
            State::Loaded(l) => Some(l),
            _ => None,
        }
    }

    /// True while a file, a kernel or an export is being processed in the background.
    pub fn busy(&self) -> bool {
        match &self.state {
            State::Loading { .. } => true,
            State::Loaded(l) => {
                l.kernel_job.is_some() || l.export_job.is_some() || l.compare.busy()
            }
            _ => false,
        }
    }

    /// Starts loading `path` in the background.
    pub fn open(&mut self, path: PathBuf) {
        let progress: Progress = Arc::new(Mutex::new(("reading".into(), 0.05)));
        let (tx, rx) = channel();
        let p2 = progress.clone();
        let path2 = path.clone();
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| load(&path2, &p2)))
                .unwrap_or_else(|_| {
                    Err("internal error while loading (a bug: please report it)".into())
                });
            let _ = tx.send(r);
        });
        self.remember(&path);
        let old = std::mem::replace(
            &mut self.state,
            State::Loading {
                path,
                rx,
                progress,
                started: Instant::now(),
            },
        );
        drop_in_background(old);
    }

    fn remember(&mut self, path: &Path) {
        let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        self.recent.retain(|p| p != &abs);
        self.recent.insert(0, abs);
        self.recent.truncate(MAX_RECENT);
        if let Some(d) = &self.config_dir {
            let _ = std::fs::create_dir_all(d);
            let text: String = self
                .recent
                .iter()
                .map(|p| format!("{}\n", p.display()))
                .collect();
            let _ = std::fs::write(d.join("recent.txt"), text);
        }
    }

    /// Opens kernel `k` in the SQTT view (decoded in the background).
    pub fn open_kernel(&mut self, k: usize) {
        self.tab = Tab::Sqtt;
        if let Some(l) = self.loaded_mut() {
            l.open_kernel(k);
        }
    }

    /// Opens `path` as the capture to compare the loaded one with (compare mode).
    pub fn compare_with(&mut self, path: PathBuf) {
        if let Some(l) = self.loaded_mut() {
            l.compare.start(l.profile.clone(), &l.timeline, path);
        }
    }

    /// Starts an export of the loaded trace to `path`.
    pub fn export(&mut self, kind: ExportKind, path: PathBuf) {
        if let Some(l) = self.loaded_mut() {
            l.start_export(kind, path);
        }
    }

    /// Moves background results into the state; called every frame.
    pub fn poll(&mut self) {
        if let State::Loading { rx, path, .. } = &self.state {
            match rx.try_recv() {
                Ok(Ok(mut l)) => {
                    for d in self.source_dirs.iter().rev() {
                        l.source.add_dir(d.clone());
                    }
                    if let Some(tab) = self.pending_view.take() {
                        if matches!(tab, Tab::Sqtt | Tab::Instructions) {
                            if let Some(k) = l.sqtt_kernels.last().copied() {
                                l.open_kernel(k);
                            }
                        }
                        self.tab = tab;
                    }
                    self.state = State::Loaded(l);
                    if let Some(b) = self.pending_compare.take() {
                        self.compare_with(b);
                    }
                }
                Ok(Err(error)) => {
                    self.state = State::Failed {
                        path: path.clone(),
                        error,
                    }
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => {}
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    self.state = State::Failed {
                        path: path.clone(),
                        error: "the loader stopped unexpectedly".into(),
                    }
                }
            }
        }
        if let Some(l) = self.loaded_mut() {
            l.poll();
        }
    }

    #[allow(deprecated)] // Id::new for a fixed key
    /// Draws the whole window into `ui` (the eframe entry point and the tests call this).
    pub fn show(&mut self, ui: &mut Ui) {
        self.poll();
        let dropped: Option<PathBuf> = ui.input(|i| {
            i.raw.dropped_files.iter().find_map(|f| {
                let p = f.path();
                (!p.as_os_str().is_empty()).then(|| p.to_path_buf())
            })
        });
        if let Some(p) = dropped {
            self.open(p);
        }
        if self.busy() || self.screenshot.is_some() {
            ui.ctx().request_repaint();
        }
        if self.screenshot.is_some() {
            ui.ctx()
                .data_mut(|d| d.insert_temp(egui::Id::new("wavescope_no_tooltips"), true));
        }
        egui::Panel::top("menu").show(ui, |ui| self.menu_bar(ui));
        egui::Panel::bottom("status").show(ui, |ui| self.status_bar(ui));
        if let State::Loaded(l) = &mut self.state {
            if matches!(self.tab, Tab::Timeline | Tab::Sqtt) {
                egui::Panel::right("details")
                    .default_size(if self.tab == Tab::Sqtt { 420.0 } else { 300.0 })
                    .resizable(true)
                    .show(ui, |ui| l.details(ui, self.tab));
            }
        }
        let mut open_kernel = None;
        let mut open_file = None;
        egui::CentralPanel::default().show(ui, |ui| match &mut self.state {
            State::Welcome => open_file = welcome(ui, &self.recent),
            State::Loading {
                path,
                progress,
                started,
                ..
            } => {
                let (stage, frac) = progress.lock().map(|g| g.clone()).unwrap_or_default();
                ui.add_space(ui.available_height() * 0.3);
                ui.vertical_centered(|ui| {
                    ui.heading(format!("Opening {}", path.display()));
                    ui.add(
                        egui::ProgressBar::new(frac)
                            .desired_width(400.0)
                            .show_percentage()
                            .animate(true),
                    );
                    ui.label(format!(
                        "{stage} · {:.1} s",
                        started.elapsed().as_secs_f32()
                    ));
                });
            }
            State::Failed { path, error } => {
                ui.add_space(40.0);
                ui.vertical_centered(|ui| {
                    ui.heading(RichText::new("Could not open the file").color(Color32::LIGHT_RED));
                    ui.label(path.display().to_string());
                    ui.add_space(8.0);
                    ui.label(
                        RichText::new(error.as_str())
                            .monospace()
                            .color(Color32::LIGHT_RED),
                    );
                    ui.add_space(16.0);
                });
                open_file = welcome(ui, &self.recent);
            }
            State::Loaded(l) => open_kernel = l.central(ui, &mut self.tab),
        });
        if let Some(k) = open_kernel {
            self.open_kernel(k);
        }
        if let Some(dialog) = &mut self.dialog {
            match dialog.show(ui.ctx()) {
                DialogResult::Open(p) => {
                    self.dialog = None;
                    if std::mem::take(&mut self.dialog_compare) {
                        self.compare_with(p);
                    } else {
                        open_file = Some(p);
                    }
                }
                DialogResult::Cancel => self.dialog = None,
                DialogResult::None => {}
            }
        }
        if let Some(p) = open_file {
            self.open(p);
        }
        self.screenshot_step(ui.ctx());
    }

    fn menu_bar(&mut self, ui: &mut Ui) {
        let mut open = None;
        let mut export = None;
        egui::MenuBar::new().ui(ui, |ui| {
            ui.menu_button("File", |ui| {
                if ui.button("Open…").clicked() {
                    self.dialog_compare = false;
                    self.dialog = Some(FileDialog::new(
                        self.recent
                            .first()
                            .and_then(|p| p.parent())
                            .map(Path::to_path_buf),
                    ));
                    ui.close();
                }
                ui.menu_button("Open recent", |ui| {
                    if self.recent.is_empty() {
                        ui.label("(none yet)");
                    }
                    for p in &self.recent {
                        if ui.button(p.display().to_string()).clicked() {
                            open = Some(p.clone());
                            ui.close();
                        }
                    }
                });
                let loaded = self.loaded().is_some();
                if ui
                    .add_enabled(loaded, egui::Button::new("Compare with…"))
                    .clicked()
                {
                    self.dialog = Some(FileDialog::new(
                        self.loaded()
                            .and_then(|l| l.path.parent())
                            .map(Path::to_path_buf),
                    ));
                    self.dialog_compare = true;
                    ui.close();
                }
                ui.separator();
                if ui
                    .add_enabled(loaded, egui::Button::new("Export to .rgp…"))
                    .clicked()
                {
                    export = Some(ExportKind::Rgp);
                    ui.close();
                }
                if ui
                    .add_enabled(loaded, egui::Button::new("Export to Perfetto…"))
                    .clicked()
                {
                    export = Some(ExportKind::Perfetto);
                    ui.close();
                }
                ui.separator();
                if ui.add_enabled(loaded, egui::Button::new("Close")).clicked() {
                    self.state = State::Welcome;
                    ui.close();
                }
                if ui.button("Quit").clicked() {
                    ui.ctx().send_viewport_cmd(egui::ViewportCommand::Close);
                }
            });
            if self.loaded().is_some() {
                ui.separator();
                for (t, name) in [
                    (Tab::Timeline, "Timeline"),
                    (Tab::Sqtt, "SQTT"),
                    (Tab::Instructions, "Instructions"),
                    (Tab::Pmc, "PMC"),
                ] {
                    ui.selectable_value(&mut self.tab, t, name);
                }
            }
            if let Some(l) = self.loaded() {
                ui.separator();
                ui.label(RichText::new(format!("{} ({})", l.path.display(), l.format)).weak());
            }
        });
        if let Some(p) = open {
            self.open(p);
        }
        if let (Some(kind), Some(l)) = (export, self.loaded_mut()) {
            let ext = match kind {
                ExportKind::Rgp => "rgp",
                ExportKind::Perfetto => "perfetto.json",
            };
            let stem = l
                .path
                .file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or("trace".into());
            let default = l.path.with_file_name(format!("{stem}.{ext}"));
            l.export_dialog = Some((kind, default.display().to_string()));
        }
    }

    fn status_bar(&self, ui: &mut Ui) {
        ui.horizontal(|ui| {
            let hint = match self.tab {
                Tab::Timeline | Tab::Sqtt => "wheel / W S: zoom · A D, Shift+wheel, right-drag: pan · drag: measure · click: select · F: fit · Esc: clear",
                Tab::Instructions => "click a column header to sort",
                Tab::Pmc => "click a counter to chart it",
            };
            ui.label(RichText::new(hint).weak());
            if let Some(l) = self.loaded() {
                if let Some(w) = &l.index_warning {
                    ui.separator();
                    ui.colored_label(Color32::YELLOW, w);
                }
                if let Some((kind, path, _, started)) = &l.export_job {
                    ui.separator();
                    ui.spinner();
                    ui.label(format!("exporting {kind:?} to {} · {:.1} s", path.display(), started.elapsed().as_secs_f32()));
                } else if let Some(r) = &l.export_result {
                    ui.separator();
                    match r {
                        Ok(m) => ui.colored_label(Color32::LIGHT_GREEN, m),
                        Err(e) => ui.colored_label(Color32::LIGHT_RED, e),
                    };
                }
            }
        });
    }

    fn screenshot_step(&mut self, ctx: &egui::Context) {
        let ready = match &self.state {
            State::Loaded(l) => {
                l.kernel_job.is_none() && (l.kernel_view.is_some() || l.sqtt_kernels.is_empty())
            }
            State::Failed { .. } => true,
            _ => false,
        };
        let tab_wanted = self.screenshot.as_ref().map(|s| s.tab);
        if let (Some(tab), true) = (tab_wanted, ready) {
            if tab != Tab::Timeline && self.tab != tab {
                self.tab = tab;
            }
        }
        // The SQTT screenshot needs a kernel: open the first one with SQTT data.
        if tab_wanted.is_some() {
            let mut want = None;
            if let State::Loaded(l) = &self.state {
                if l.kernel.is_none() && l.kernel_job.is_none() {
                    want = l.sqtt_kernels.first().copied();
                }
            }
            if let Some(k) = want {
                if let Some(l) = self.loaded_mut() {
                    l.open_kernel(k);
                    if let Some(kv) = &mut l.kernel_view {
                        kv.state.selected_wave = None;
                    }
                }
            }
        }
        let Some(s) = &mut self.screenshot else {
            return;
        };
        if s.done.is_some() {
            return;
        }
        if !ready {
            return;
        }
        s.ready_frames += 1;
        if s.ready_frames == 4 && !s.requested {
            let (tx, rx) = channel();
            ctx.request_screenshot(move |img| {
                let _ = tx.send(img);
            });
            s.rx = Some(rx);
            s.requested = true;
        }
        if let Some(rx) = &s.rx {
            if let Ok(img) = rx.try_recv() {
                s.done = Some(save_png(&img, &s.out));
                ctx.send_viewport_cmd(egui::ViewportCommand::Close);
            }
        }
    }

    /// Selects a wave in the open kernel and shows its instructions (for scripts and tests).
    pub fn select_wave(&mut self, se: usize, wave: u32) {
        if let Some(kv) = self.loaded_mut().and_then(|l| l.kernel_view.as_mut()) {
            kv.state.selected_wave = Some((se, wave));
        }
    }
}

fn save_png(img: &egui::ColorImage, out: &Path) -> Result<(), String> {
    let [w, h] = img.size;
    let mut buf = Vec::with_capacity(w * h * 4);
    for c in &img.pixels {
        buf.extend_from_slice(&c.to_srgba_unmultiplied());
    }
    image::save_buffer(
        out,
        &buf,
        w as u32,
        h as u32,
        image::ExtendedColorType::Rgba8,
    )
    .map_err(|e| format!("{}: {e}", out.display()))
}

impl eframe::App for App {
    fn ui(&mut self, ui: &mut Ui, _frame: &mut eframe::Frame) {
        self.show(ui);
    }
}

/// Frees `v` on a thread of its own: giving back a big capture's model (GiBs at 10 M waves)
/// takes longer than a frame.
fn drop_in_background<T: Send + 'static>(v: T) {
    // If no thread can be started, the closure and `v` are freed here instead.
    let _ = std::thread::Builder::new()
        .name("free".into())
        .spawn(move || drop(v));
}

/// The loader thread's work.
fn load(path: &Path, progress: &Progress) -> Result<Box<Loaded>, String> {
    let set = |s: &str, f: f32| {
        if let Ok(mut g) = progress.lock() {
            *g = (s.to_string(), f);
        }
    };
    set("reading and parsing", 0.1);
    let (format, profile) = traces::open::open_path(path).map_err(|e| e.to_string())?;
    set("reading the analysis index", 0.5);
    let (index, index_warning) = match crate::data::load_index(path) {
        Ok(i) => (i.unwrap_or_default(), None),
        Err(w) => (Default::default(), Some(w)),
    };
    set("building the timeline", 0.7);
    let timeline = TimelineModel::build(&profile);
    let sqtt_kernels = kernels_with_sqtt(&profile);
    let tl = TimelineState::new(&timeline, sqtt_kernels.clone());
    set("done", 1.0);
    Ok(Box::new(Loaded {
        path: path.to_path_buf(),
        format: format.name().to_string(),
        profile: Arc::new(profile),
        timeline,
        tl,
        sqtt_kernels,
        kernel: None,
        kernel_view: None,
        kernel_job: None,
        kernel_error: None,
        search: String::new(),
        pmc: None,
        pmc_selected: 0,
        inst_sort: SortState::default(),
        // Beside the capture: where a code object's sources usually travel with it.
        source: crate::views::source::SourceState::new(
            path.parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map(Path::to_path_buf)
                .into_iter()
                .collect(),
        ),
        export_job: None,
        export_result: None,
        export_dialog: None,
        compare: Default::default(),
        index,
        index_warning,
    }))
}

impl Loaded {
    /// The background kernel job's stage and fraction (what its progress bar shows), while
    /// one runs.
    pub fn kernel_progress(&self) -> Option<(String, f32)> {
        let (_, _, p) = self.kernel_job.as_ref()?;
        p.lock().ok().map(|g| g.clone())
    }

    pub fn open_kernel(&mut self, k: usize) {
        if self.kernel == Some(k) && (self.kernel_view.is_some() || self.kernel_job.is_some()) {
            return;
        }
        self.kernel = Some(k);
        self.source.clear_selection();
        if let Some(old) = self.kernel_view.take() {
            drop_in_background(old);
        }
        self.kernel_error = None;
        self.tl.selected = Some(Target::Kernel(k as u32));
        let progress: Progress = Arc::new(Mutex::new(("decoding SQTT".into(), 0.0)));
        let (tx, rx) = channel();
        let profile = self.profile.clone();
        let p2 = progress.clone();
        // The saved instruction table spares the job its most expensive pass.
        let rows = self.index.get(&k).map(|i| i.rows.clone());
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let cb = |done: usize, total: usize| {
                    if let Ok(mut g) = p2.lock() {
                        *g = (
                            format!("decoding SE {done}/{total}"),
                            done as f32 / total.max(1) as f32,
                        );
                    }
                };
                KernelView::analyze(&profile, k, &cb, rows)
                    .map(|mut kv| {
                        kv.theoretical = crate::data::occupancy::kernel_occupancy(&profile, k);
                        kv.pressure = crate::data::pressure::kernel_pressure(&profile, k);
                        kv.lines = Some(crate::data::source::kernel_lines(&profile, k));
                        kv
                    })
                    .ok_or_else(|| format!("kernel {k} is not in the profile"))
            }))
            .unwrap_or_else(|_| {
                Err("internal error while decoding SQTT (a bug: please report it)".into())
            });
            let _ = tx.send(r);
        });
        self.kernel_job = Some((k, rx, progress));
    }

    pub fn start_export(&mut self, kind: ExportKind, path: PathBuf) {
        let (tx, rx) = channel();
        let profile = self.profile.clone();
        let p2 = path.clone();
        std::thread::spawn(move || {
            let r = match kind {
                ExportKind::Rgp => traces::rgp::export_file(&profile, &Default::default(), &p2)
                    .map(|()| format!("wrote {}", p2.display()))
                    .map_err(|e| format!("export to {} failed: {e}", p2.display())),
                ExportKind::Perfetto => {
                    traces::perfetto::export_file(&profile, &Default::default(), &p2)
                        .map(|s| {
                            format!(
                                "wrote {} ({} kernel, {} wave slices)",
                                p2.display(),
                                s.kernel_slices,
                                s.wave_slices
                            )
                        })
                        .map_err(|e| format!("export to {} failed: {e}", p2.display()))
                }
            };
            let _ = tx.send(r);
        });
        self.export_result = None;
        self.export_job = Some((kind, path, rx, Instant::now()));
    }

    fn poll(&mut self) {
        if let Some((k, rx, _)) = &self.kernel_job {
            let k = *k;
            match rx.try_recv() {
                Ok(Ok(mut kv)) => {
                    crate::views::insts::sort_rows(&mut kv.stats, self.inst_sort);
                    self.kernel_view = Some(kv);
                    self.kernel_job = None;
                }
                Ok(Err(e)) => {
                    self.kernel_error = Some(e);
                    self.kernel_job = None;
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => {}
                Err(_) => {
                    self.kernel_error = Some(format!("decoding kernel {k} stopped unexpectedly"));
                    self.kernel_job = None;
                }
            }
        }
        let kernel = self.kernel;
        self.compare.poll(&self.profile, kernel);
        if let Some((_, _, rx, _)) = &self.export_job {
            match rx.try_recv() {
                Ok(r) => {
                    self.export_result = Some(r);
                    self.export_job = None;
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => {}
                Err(_) => {
                    self.export_result = Some(Err("the export stopped unexpectedly".into()));
                    self.export_job = None;
                }
            }
        }
    }

    fn kernel_name(&self, k: usize) -> String {
        self.profile
            .kernels
            .get(k)
            .map_or("?".into(), |k| k.name.clone())
    }

    /// The central area for the current tab; returns a kernel to open.
    fn central(&mut self, ui: &mut Ui, tab: &mut Tab) -> Option<usize> {
        let mut open = None;
        if let Some((kind, path)) = &mut self.export_dialog {
            let mut go = false;
            let mut cancel = false;
            egui::Window::new(format!(
                "Export to {}",
                if *kind == ExportKind::Rgp {
                    ".rgp"
                } else {
                    "Perfetto JSON"
                }
            ))
            .collapsible(false)
            .show(ui.ctx(), |ui| {
                ui.label("Write to:");
                ui.add(egui::TextEdit::singleline(path).desired_width(420.0));
                ui.horizontal(|ui| {
                    go = ui.button("Export").clicked();
                    cancel = ui.button("Cancel").clicked();
                });
            });
            if go {
                let (k, p) = (*kind, PathBuf::from(path.as_str()));
                self.export_dialog = None;
                self.start_export(k, p);
            } else if cancel {
                self.export_dialog = None;
            }
        }
        match tab {
            Tab::Timeline => {
                ui.horizontal(|ui| {
                    ui.label("Find kernel:");
                    let r = ui.add(
                        egui::TextEdit::singleline(&mut self.search)
                            .hint_text("kernel name")
                            .desired_width(220.0),
                    );
                    let hits = if self.search.is_empty() {
                        Vec::new()
                    } else {
                        self.timeline.search_kernels(&self.search)
                    };
                    if !self.search.is_empty() {
                        ui.label(format!("{} found", hits.len()));
                    }
                    let enter = r.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
                    if enter {
                        if let Some(h) = hits.first() {
                            self.tl.jump_to_kernel(&self.timeline, h.0);
                        }
                    }
                    for (k, start, name) in hits.iter().take(8) {
                        if ui
                            .button(format!("{name} @ {}", format_us(*start)))
                            .clicked()
                        {
                            self.tl.jump_to_kernel(&self.timeline, *k);
                        }
                    }
                });
                ui.separator();
                compare::show_strip(
                    ui,
                    &self.compare,
                    &self.timeline,
                    &self.tl.view,
                    self.tl.axis(&self.timeline),
                );
                if let Some(Action::OpenKernel(k)) =
                    timeline::show(ui, &self.timeline, &mut self.tl)
                {
                    open = Some(k);
                }
            }
            Tab::Sqtt | Tab::Instructions => {
                if self.kernel.is_none() && !self.sqtt_kernels.is_empty() {
                    ui.label("Pick a kernel (or click one on the timeline):");
                }
                if self.sqtt_kernels.is_empty() {
                    ui.label("This trace has no SQTT data.");
                }
                if self.kernel.is_none() || self.sqtt_kernels.len() > 1 {
                    ui.horizontal_wrapped(|ui| {
                        for &k in &self.sqtt_kernels {
                            if ui
                                .selectable_label(self.kernel == Some(k), self.kernel_name(k))
                                .clicked()
                            {
                                open = Some(k);
                            }
                        }
                    });
                }
                if let Some((_, _, p)) = &self.kernel_job {
                    let (stage, frac) = p.lock().map(|g| g.clone()).unwrap_or_default();
                    ui.add(egui::ProgressBar::new(frac).text(stage).animate(true));
                    sqtt::warm_glyphs(ui);
                    // Until the detail is there: what the index saved.
                    if let Some(ik) = self.kernel.and_then(|k| self.index.get(&k)) {
                        if *tab == Tab::Sqtt {
                            let layout = self
                                .kernel
                                .and_then(|k| self.profile.kernels.get(k))
                                .and_then(|ke| self.profile.se_layout(ke.device));
                            sqtt::show_overview(ui, ik, layout);
                        } else {
                            insts::show_saved(ui, ik);
                        }
                    }
                }
                if let Some(e) = &self.kernel_error {
                    ui.colored_label(Color32::LIGHT_RED, e);
                }
                if let Some(kv) = &mut self.kernel_view {
                    if *tab == Tab::Sqtt {
                        sqtt::show(ui, kv);
                    } else {
                        let compared = self
                            .kernel
                            .is_some_and(|k| compare::show_table(ui, &self.compare, k));
                        if !compared {
                            insts::show_table(ui, kv, &mut self.inst_sort, &mut self.source);
                        }
                    }
                }
            }
            Tab::Pmc => {
                let k = self
                    .kernel
                    .or_else(|| (!self.profile.kernels.is_empty()).then_some(0));
                match k {
                    None => {
                        ui.label("No kernels in this trace.");
                    }
                    Some(k) => {
                        if self.pmc.as_ref().map(|p| p.0) != Some(k) {
                            self.pmc = Some((
                                k,
                                pmc_rows(&self.profile, k),
                                pmc_counters(&self.profile, k),
                            ));
                            self.pmc_selected = 0;
                        }
                        let name = self.kernel_name(k);
                        // Compare mode: B's counters of the matching kernel.
                        let b = self.compare.loaded.as_ref().and_then(|c| {
                            let (kb, _) = c.pairs.get(&k)?;
                            Some(pmc_rows(&c.profile, *kb))
                        });
                        if let Some((_, rows, counters)) = &self.pmc {
                            pmc::show(
                                ui,
                                &name,
                                rows,
                                counters,
                                b.as_deref(),
                                &mut self.pmc_selected,
                            );
                        }
                    }
                }
            }
        }
        open
    }

    /// The right-hand panel: the selection on the timeline, the wave's instructions in SQTT.
    fn details(&mut self, ui: &mut Ui, tab: Tab) {
        match tab {
            Tab::Sqtt => match &self.kernel_view {
                Some(kv) => insts::show_wave(ui, kv),
                None => {
                    ui.label("No kernel open.");
                }
            },
            _ => {
                ui.heading("Selection");
                match self.tl.selected {
                    None => {
                        ui.label("Click a range or kernel.");
                    }
                    Some(Target::Kernel(k)) => {
                        if let Some(ke) = self.profile.kernels.get(k as usize) {
                            ui.strong(&ke.name);
                            let dur = ke.end.map(|e| (e.0 - ke.start.0) as f64 / 1e6);
                            ui.label(format!(
                                "kernel · {}",
                                dur.map_or("running".into(), format_us)
                            ));
                            let mut abs = format!("absolute: start {} µs", ke.start);
                            if let Some(e) = ke.end {
                                abs.push_str(&format!(", end {e} µs"));
                            }
                            abs.push_str(" on the common clock");
                            match (ke.gpu_start, ke.gpu_end) {
                                (Some(a), Some(b)) => {
                                    abs.push_str(&format!("\nGPU ticks {a}..{b} ({} ticks)", b - a))
                                }
                                (Some(a), None) => abs.push_str(&format!("\nGPU ticks from {a}")),
                                _ => abs.push_str("\nno GPU ticks recorded"),
                            }
                            timeline::since_capture(ui, &self.timeline, ke.start, ke.end)
                                .on_hover_text(abs);
                            ui.label(format!(
                                "program tag {} · run {}",
                                ke.kern.map_or("-".into(), |v| v.to_string()),
                                ke.exec_tag.map_or("-".into(), |v| v.to_string())
                            ));
                            let n = self
                                .profile
                                .sqtt
                                .iter()
                                .filter(|s| crate::data::sqtt_matches(&self.profile, ke, s))
                                .count();
                            ui.label(format!("{n} SQTT streams"));
                        }
                    }
                    Some(Target::Range(r)) => {
                        if let Some(re) = self.profile.ranges.get(r as usize) {
                            ui.strong(&re.name);
                            let dur = re.end.map(|e| (e.0 - re.start.0) as f64 / 1e6);
                            ui.label(format!("range · {}", dur.map_or("open".into(), format_us)));
                            let mut abs = format!("absolute: start {} µs", re.start);
                            if let Some(e) = re.end {
                                abs.push_str(&format!(", end {e} µs"));
                            }
                            abs.push_str(if re.device_clock {
                                " (from the device clock)"
                            } else {
                                " on the common clock"
                            });
                            timeline::since_capture(ui, &self.timeline, re.start, re.end)
                                .on_hover_text(abs);
                            ui.label(format!("depth {}", re.depth));
                            if let Some(d) = self.profile.devices.get(re.device as usize) {
                                ui.label(format!("track {}", d.name));
                            }
                        }
                    }
                }
                if let Some((a, b)) = self.tl.measure {
                    ui.separator();
                    ui.label(format!("measured {}", format_us((b - a).abs())));
                }
            }
        }
    }
}

/// The welcome screen; returns a file to open.
fn welcome(ui: &mut Ui, recent: &[PathBuf]) -> Option<PathBuf> {
    let mut open = None;
    ui.vertical_centered(|ui| {
        ui.add_space(30.0);
        ui.heading(RichText::new("wavescope").size(28.0));
        ui.label("Profiler for AMD GPUs built around SQTT");
        ui.add_space(12.0);
        ui.label("Open a tinygrad profile.pkl, a .wst or an .rgp file: File > Open…, drop a file on this window, or run `wavescope FILE`.");
        ui.add_space(20.0);
        ui.strong("Recent files");
        if recent.is_empty() {
            ui.label(RichText::new("none yet").weak());
        }
        for p in recent {
            if ui.link(p.display().to_string()).clicked() {
                open = Some(p.clone());
            }
        }
    });
    open
}

enum DialogResult {
    None,
    Open(PathBuf),
    Cancel,
}

/// A small file dialog drawn with egui (no native toolkit needed).
struct FileDialog {
    dir: PathBuf,
    path: String,
    entries: Vec<(String, bool)>,
    error: Option<String>,
}

impl FileDialog {
    fn new(dir: Option<PathBuf>) -> FileDialog {
        let dir = dir
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("/"));
        let mut d = FileDialog {
            dir: PathBuf::new(),
            path: String::new(),
            entries: Vec::new(),
            error: None,
        };
        d.cd(dir);
        d
    }

    fn cd(&mut self, dir: PathBuf) {
        self.entries.clear();
        self.error = None;
        match std::fs::read_dir(&dir) {
            Ok(rd) => {
                for e in rd.flatten() {
                    let name = e.file_name().to_string_lossy().to_string();
                    if name.starts_with('.') {
                        continue;
                    }
                    let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
                    self.entries.push((name, is_dir));
                }
                self.entries.sort_by(|a, b| (!a.1, &a.0).cmp(&(!b.1, &b.0)));
                self.path = dir.display().to_string();
                self.dir = dir;
            }
            Err(e) => self.error = Some(format!("{}: {e}", dir.display())),
        }
    }

    fn show(&mut self, ctx: &egui::Context) -> DialogResult {
        let mut result = DialogResult::None;
        let mut go = None;
        egui::Window::new("Open trace")
            .collapsible(false)
            .default_size([520.0, 420.0])
            .show(ctx, |ui| {
                ui.horizontal(|ui| {
                    if ui.button("Up").on_hover_text("parent folder").clicked() {
                        if let Some(p) = self.dir.parent() {
                            go = Some(p.to_path_buf());
                        }
                    }
                    let r = ui.add(egui::TextEdit::singleline(&mut self.path).desired_width(420.0));
                    if r.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
                        let p = PathBuf::from(&self.path);
                        if p.is_dir() {
                            go = Some(p);
                        } else {
                            result = DialogResult::Open(p);
                        }
                    }
                });
                if let Some(e) = &self.error {
                    ui.colored_label(Color32::LIGHT_RED, e);
                }
                egui::ScrollArea::vertical()
                    .max_height(300.0)
                    .show(ui, |ui| {
                        for (name, is_dir) in &self.entries {
                            let label = if *is_dir {
                                format!("[dir] {name}")
                            } else {
                                name.clone()
                            };
                            let traceish = name.ends_with(".pkl")
                                || name.ends_with(".wst")
                                || name.ends_with(".rgp");
                            let text = if *is_dir || traceish {
                                RichText::new(label)
                            } else {
                                RichText::new(label).weak()
                            };
                            if ui.selectable_label(false, text).clicked() {
                                let p = self.dir.join(name);
                                if *is_dir {
                                    go = Some(p);
                                } else {
                                    result = DialogResult::Open(p);
                                }
                            }
                        }
                    });
                ui.horizontal(|ui| {
                    if ui.button("Open").clicked() {
                        result = DialogResult::Open(PathBuf::from(&self.path));
                    }
                    if ui.button("Cancel").clicked() {
                        result = DialogResult::Cancel;
                    }
                });
            });
        if let Some(d) = go {
            self.cd(d);
        }
        result
    }
}
