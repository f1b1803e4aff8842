//! The views: each draws into a `Ui` from the data in `crate::data` and the geometry of
//! `crate::layout`.

pub mod compare;
pub mod insts;
pub mod occupancy;
pub mod pmc;
pub mod source;
pub mod sqtt;
pub mod timeline;

use egui::{Color32, Painter, Pos2, Rect, Response, Stroke, Ui};

use crate::layout::ruler;
use crate::layout::view::TimeView;

/// Palette for ranges, picked by a hash of the name's first word (stable across runs).
pub fn name_color(name: &str) -> Color32 {
    const PALETTE: [Color32; 8] = [
        Color32::from_rgb(0x4e, 0x79, 0xa7),
        Color32::from_rgb(0xf2, 0x8e, 0x2b),
        Color32::from_rgb(0x59, 0xa1, 0x4f),
        Color32::from_rgb(0xb0, 0x7a, 0xa1),
        Color32::from_rgb(0x76, 0xb7, 0xb2),
        Color32::from_rgb(0xed, 0xc9, 0x48),
        Color32::from_rgb(0xe1, 0x57, 0x59),
        Color32::from_rgb(0x9c, 0x75, 0x5f),
    ];
    let word = name.split([' ', '_', ':']).next().unwrap_or(name);
    let h = word.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    PALETTE[(h % PALETTE.len() as u64) as usize]
}

/// Text colour readable on `bg`.
pub fn text_on(bg: Color32) -> Color32 {
    let l = 0.299 * bg.r() as f32 + 0.587 * bg.g() as f32 + 0.114 * bg.b() as f32;
    if l > 140.0 {
        Color32::BLACK
    } else {
        Color32::WHITE
    }
}

pub const RULER_H: f32 = 24.0;

/// Draws the time ruler along the top of `rect` and faint grid lines below it.
/// `cycles` formats labels as shader cycles instead of time.
pub fn paint_ruler(p: &Painter, rect: Rect, grid_bottom: f32, view: &TimeView, cycles: bool) {
    let visuals = p.ctx().global_style().visuals.clone();
    p.rect_filled(rect, 0.0, visuals.faint_bg_color);
    let step = ruler::tick_step(view.len(), rect.width(), 90.0);
    let font = egui::FontId::proportional(12.0);
    for t in ruler::ticks(view.start, view.end, step) {
        let x = view.to_px(t, rect.left(), rect.width());
        p.line_segment(
            [
                Pos2::new(x, rect.bottom() - 6.0),
                Pos2::new(x, rect.bottom()),
            ],
            Stroke::new(1.0, visuals.text_color()),
        );
        p.line_segment(
            [Pos2::new(x, rect.bottom()), Pos2::new(x, grid_bottom)],
            Stroke::new(
                1.0,
                visuals
                    .widgets
                    .noninteractive
                    .bg_stroke
                    .color
                    .gamma_multiply(0.5),
            ),
        );
        let label = if cycles {
            ruler::format_cycles(t)
        } else {
            ruler::format_us(t)
        };
        p.text(
            Pos2::new(x + 3.0, rect.top() + 3.0),
            egui::Align2::LEFT_TOP,
            label,
            font.clone(),
            visuals.text_color(),
        );
    }
}

/// Zoom and pan shared by the timelines: wheel zooms at the cursor (Tracy), Shift+wheel or a
/// horizontal wheel pans, secondary/middle drag pans (time and rows), W/S zoom and A/D pan
/// (Tracy, Perfetto). Returns the vertical scroll delta asked for.
pub fn navigate(ui: &Ui, resp: &Response, canvas: Rect, view: &mut TimeView) -> f32 {
    let mut dy = 0.0;
    if resp.contains_pointer() {
        let (scroll, shift, hover) = ui.input(|i| {
            (
                i.smooth_scroll_delta,
                i.modifiers.shift,
                i.pointer.hover_pos(),
            )
        });
        if let Some(pos) = hover {
            let at = view.from_px(pos.x, canvas.left(), canvas.width());
            if shift {
                dy -= scroll.y + scroll.x;
            } else {
                if scroll.y != 0.0 {
                    view.zoom((-scroll.y as f64 * 0.002).exp(), at);
                }
                if scroll.x != 0.0 {
                    view.pan(-scroll.x as f64 / canvas.width().max(1.0) as f64);
                }
            }
        }
    }
    if resp.dragged_by(egui::PointerButton::Secondary)
        || resp.dragged_by(egui::PointerButton::Middle)
    {
        let d = resp.drag_delta();
        view.pan(-d.x as f64 / canvas.width().max(1.0) as f64);
        dy -= d.y;
    }
    if resp.contains_pointer() || resp.has_focus() {
        let no_text_focus = !ui.ctx().egui_wants_keyboard_input();
        if no_text_focus {
            let center = (view.start + view.end) / 2.0;
            let hover_t = ui
                .input(|i| i.pointer.hover_pos())
                .map(|p| view.from_px(p.x, canvas.left(), canvas.width()))
                .unwrap_or(center);
            ui.input(|i| {
                if i.key_down(egui::Key::W) {
                    view.zoom(0.92, hover_t);
                }
                if i.key_down(egui::Key::S) {
                    view.zoom(1.0 / 0.92, hover_t);
                }
                if i.key_down(egui::Key::A) {
                    view.pan(-0.03);
                }
                if i.key_down(egui::Key::D) {
                    view.pan(0.03);
                }
                if i.key_down(egui::Key::ArrowDown) {
                    dy += 20.0;
                }
                if i.key_down(egui::Key::ArrowUp) {
                    dy -= 20.0;
                }
                if i.key_pressed(egui::Key::PageDown) {
                    dy += canvas.height() * 0.8;
                }
                if i.key_pressed(egui::Key::PageUp) {
                    dy -= canvas.height() * 0.8;
                }
            });
            if ui.input(|i| {
                i.keys_down
                    .iter()
                    .any(|k| matches!(k, egui::Key::W | egui::Key::S | egui::Key::A | egui::Key::D))
            }) {
                ui.ctx().request_repaint();
            }
        }
    }
    dy
}

/// Paints the measured span (primary drag) and its length.
pub fn paint_measure(p: &Painter, canvas: Rect, view: &TimeView, a: f64, b: f64, cycles: bool) {
    let (a, b) = if a <= b { (a, b) } else { (b, a) };
    let x0 = view.to_px(a, canvas.left(), canvas.width());
    let x1 = view.to_px(b, canvas.left(), canvas.width());
    let label = if cycles {
        ruler::format_cycles(b - a)
    } else {
        ruler::format_us(b - a)
    };
    paint_measure_span(p, canvas, x0, x1, &label);
}

/// The measure band between screen x `x0` and `x1`, labelled `label`.
pub fn paint_measure_span(p: &Painter, canvas: Rect, x0: f32, x1: f32, label: &str) {
    let (x0, x1) = if x0 <= x1 { (x0, x1) } else { (x1, x0) };
    let r = Rect::from_x_y_ranges(x0..=x1.max(x0 + 1.0), canvas.y_range());
    p.rect_filled(r, 0.0, Color32::from_rgba_unmultiplied(120, 170, 255, 40));
    p.line_segment(
        [r.left_top(), r.left_bottom()],
        Stroke::new(1.0, Color32::LIGHT_BLUE),
    );
    p.line_segment(
        [r.right_top(), r.right_bottom()],
        Stroke::new(1.0, Color32::LIGHT_BLUE),
    );
    let pos = Pos2::new((x0 + x1) / 2.0, canvas.top() + 4.0);
    let galley = p.layout_no_wrap(
        label.to_string(),
        egui::FontId::proportional(13.0),
        Color32::WHITE,
    );
    let bg = Rect::from_center_size(
        pos + egui::vec2(0.0, galley.size().y / 2.0),
        galley.size() + egui::vec2(8.0, 4.0),
    );
    p.rect_filled(bg, 3.0, Color32::from_rgb(40, 80, 160));
    p.galley(bg.min + egui::vec2(4.0, 2.0), galley, Color32::WHITE);
}

/// Adds an axis-aligned rectangle to a mesh (cheaper than one shape per rectangle).
pub fn mesh_rect(mesh: &mut egui::Mesh, r: Rect, c: Color32) {
    mesh.add_colored_rect(r, c);
}

/// Tooltips are off while rendering a `--screenshot` (the pointer of a headless X server sits
/// in the middle of the window).
#[allow(deprecated)] // Id::new for a fixed key
pub fn tooltips_enabled(ui: &Ui) -> bool {
    !ui.ctx().data(|d| {
        d.get_temp::<bool>(egui::Id::new("wavescope_no_tooltips"))
            .unwrap_or(false)
    })
}
