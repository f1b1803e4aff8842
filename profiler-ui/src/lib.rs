//! wavescope's desktop profiler as a library: the app, its views, the headless layout code
//! and the data the views show. The `wavescope` binary and the tests/benchmarks use it.

#![forbid(unsafe_code)]

pub mod app;
pub mod data;
pub mod layout;
pub mod views;

pub use app::App;

/// Opens the desktop window (glow backend) on `file`, or on the welcome screen.
pub fn run_gui(app: App, title: &str, size: [f32; 2]) -> Result<(), String> {
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title(title)
            .with_inner_size(size)
            .with_drag_and_drop(true),
        renderer: eframe::Renderer::Glow,
        ..Default::default()
    };
    eframe::run_native(title, options, Box::new(|_cc| Ok(Box::new(app)))).map_err(|e| e.to_string())
}
