//! The global timeline: one track per device/queue with nested ranges, point events and
//! counter graphs; zoom/pan, hover tooltips, click to select, drag to measure.

use egui::{Align2, Color32, FontId, Pos2, Rect, Sense, Stroke, Ui, Vec2};

use super::{mesh_rect, name_color, navigate, paint_measure_span, paint_ruler, text_on, RULER_H};
use crate::layout::lod::{layout_row, Item};
use crate::layout::ruler::format_us;
use crate::layout::timeline::{Span, Target, TimelineModel};
use crate::layout::view::{TimeAxis, TimeView};

pub const LEVEL_H: f32 = 20.0;
/// The axis at true scale (no breaks).
static TRUE_SCALE: TimeAxis = TimeAxis::IDENTITY;
const TRACK_GAP: f32 = 8.0;
const TRACK_TITLE_H: f32 = 18.0;
const POINTS_H: f32 = 12.0;
const COUNTER_H: f32 = 44.0;
const LABEL_W: f32 = 0.0;

#[derive(Debug, Clone)]
pub struct TimelineState {
    /// The visible window on the time axis (see [`TimelineState::axis`]), not in true time.
    pub view: TimeView,
    pub scroll_y: f32,
    /// Measured range, true times.
    pub measure: Option<(f64, f64)>,
    /// Long idle gaps between GPU work are drawn as narrow breaks (on by default).
    pub collapse_idle: bool,
    pub selected: Option<Target>,
    /// Kernels with SQTT data (clicking them opens the SQTT view).
    pub sqtt_kernels: Vec<usize>,
}

impl TimelineState {
    pub fn new(m: &TimelineModel, sqtt_kernels: Vec<usize>) -> TimelineState {
        // Open fitted to where the GPU worked: host-side setup can dwarf the kernels.
        // Idle gaps collapsed, so that the kernels fill the width rather than the host's time
        // between launches.
        let (a, b) = m
            .gpu_work
            .filter(|(a, b)| b > a)
            .unwrap_or((m.start, m.end));
        let ax = &m.idle_axis;
        TimelineState {
            view: TimeView::around(ax.to_axis(a), ax.to_axis(b), 0.05),
            scroll_y: 0.0,
            measure: None,
            collapse_idle: true,
            selected: None,
            sqtt_kernels,
        }
    }

    /// The time axis in use: idle gaps collapsed or true scale.
    pub fn axis<'a>(&self, m: &'a TimelineModel) -> &'a TimeAxis {
        if self.collapse_idle {
            &m.idle_axis
        } else {
            &TRUE_SCALE
        }
    }

    /// Switches between collapsed idle and true scale keeping the same true times in view.
    pub fn set_collapse_idle(&mut self, m: &TimelineModel, on: bool) {
        let old = self.axis(m);
        let (a, b) = (old.to_true(self.view.start), old.to_true(self.view.end));
        self.collapse_idle = on;
        let new = self.axis(m);
        self.view = TimeView::new(new.to_axis(a), new.to_axis(b));
    }

    /// Zooms to kernel `k` and selects it.
    pub fn jump_to_kernel(&mut self, m: &TimelineModel, k: u32) {
        if let Some(s) = m.kernel_span(k) {
            let ax = self.axis(m);
            self.view = TimeView::around(ax.to_axis(s.start), ax.to_axis(s.end), 1.0);
            self.selected = Some(Target::Kernel(k));
        }
    }
}

pub enum Action {
    OpenKernel(usize),
}

pub fn show(ui: &mut Ui, m: &TimelineModel, st: &mut TimelineState) -> Option<Action> {
    let mut action = None;
    if !m.idle_axis.breaks().is_empty() {
        let mut on = st.collapse_idle;
        let n = m.idle_axis.breaks().len();
        ui.checkbox(
            &mut on,
            format!(
                "Collapse idle time ({n} gap{} hiding {} between GPU work; off: true scale)",
                if n == 1 { "" } else { "s" },
                format_us(m.idle_axis.hidden())
            ),
        );
        if on != st.collapse_idle {
            st.set_collapse_idle(m, on);
        }
    }
    let axis = st.axis(m);
    let full = ui.available_rect_before_wrap();
    let resp = ui.allocate_rect(full, Sense::click_and_drag());
    let ruler_rect = Rect::from_min_size(
        full.min + Vec2::new(LABEL_W, 0.0),
        Vec2::new(full.width() - LABEL_W, RULER_H),
    );
    let canvas = Rect::from_min_max(
        Pos2::new(full.left() + LABEL_W, full.top() + RULER_H),
        full.max,
    );
    let dy = navigate(ui, &resp, canvas, &mut st.view);
    if ui.input(|i| i.key_pressed(egui::Key::F) || i.key_pressed(egui::Key::Home))
        && !ui.ctx().egui_wants_keyboard_input()
    {
        st.view = TimeView::around(axis.to_axis(m.start), axis.to_axis(m.end), 0.02);
    }
    st.scroll_y = (st.scroll_y + dy).max(0.0);
    let painter = ui.painter_at(full);
    let visuals = ui.visuals().clone();
    painter.rect_filled(canvas, 0.0, visuals.extreme_bg_color);
    paint_axis_ruler(&painter, ruler_rect, full.bottom(), &st.view, axis);
    let hover = resp.hover_pos().filter(|p| canvas.contains(*p));
    let mut hovered: Option<(String, Rect)> = None;
    let mut clicked_target: Option<Target> = None;
    let mut mesh = egui::Mesh::default();
    // Span, name, true duration, text colour.
    let mut labels: Vec<(Rect, String, f64, Color32)> = Vec::new();
    let mut items = Vec::new();
    let mut y = canvas.top() - st.scroll_y + 4.0;
    let (left, width) = (canvas.left(), canvas.width());
    let mut a11y_budget = 300usize;
    let font = FontId::proportional(12.0);
    for (ti, t) in m.tracks.iter().enumerate() {
        let title = Rect::from_min_size(
            Pos2::new(canvas.left(), y),
            Vec2::new(canvas.width(), TRACK_TITLE_H),
        );
        if title.bottom() > canvas.top() && title.top() < canvas.bottom() {
            painter.rect_filled(title, 0.0, visuals.faint_bg_color);
            painter.text(
                title.left_center() + Vec2::new(6.0, 0.0),
                Align2::LEFT_CENTER,
                &t.name,
                FontId::proportional(13.0),
                visuals.strong_text_color(),
            );
        }
        y += TRACK_TITLE_H + 2.0;
        for (li, level) in t.levels.iter().enumerate() {
            let row = Rect::from_min_size(Pos2::new(left, y), Vec2::new(width, LEVEL_H - 2.0));
            y += LEVEL_H;
            if row.bottom() < canvas.top() || row.top() > canvas.bottom() {
                continue;
            }
            items.clear();
            let spans = &level.spans;
            layout_row(
                spans.len(),
                |i| axis.to_axis(spans[i].start),
                |i| axis.to_axis(spans[i].end),
                level.max_len,
                None,
                &st.view,
                left,
                width,
                &mut items,
            );
            for it in &items {
                match *it {
                    Item::Span { index, x0, x1 } => {
                        let s = &spans[index];
                        let name = m.name(s.name);
                        let r = Rect::from_x_y_ranges(
                            x0.max(left - 2.0)..=x1.min(canvas.right() + 2.0),
                            row.y_range(),
                        );
                        let mut c = name_color(name);
                        if li > 0 {
                            c = c.gamma_multiply(0.85 + 0.05 * li.min(3) as f32).to_opaque();
                        }
                        let selected = st.selected == Some(s.target);
                        mesh_rect(&mut mesh, r, c);
                        if selected {
                            painter.rect_stroke(
                                r,
                                0.0,
                                Stroke::new(2.0, Color32::WHITE),
                                egui::StrokeKind::Inside,
                            );
                        }
                        if r.width() > 30.0 {
                            labels.push((r, name.to_string(), s.end - s.start, text_on(c)));
                        }
                        if let Some(p) = hover {
                            if r.contains(p) {
                                hovered = Some((span_tooltip(m, s), r));
                                if resp.clicked() {
                                    clicked_target = Some(s.target);
                                }
                            }
                        }
                        if r.width() >= 3.0 && a11y_budget > 0 {
                            a11y_budget -= 1;
                            let id = ui.scope_id().with(("span", ti, li, index));
                            let sr = ui.interact(r, id, Sense::click());
                            let label = match s.target {
                                Target::Kernel(_) => format!("kernel {name}"),
                                Target::Range(_) => format!("range {name}"),
                            };
                            sr.widget_info(|| {
                                egui::WidgetInfo::labeled(egui::Role::Button, true, &label)
                            });
                            if sr.clicked() {
                                clicked_target = Some(s.target);
                            }
                            if sr.hovered() {
                                hovered = Some((span_tooltip(m, s), r));
                            }
                        }
                    }
                    Item::Block { count, x0, x1, .. } => {
                        let r = Rect::from_x_y_ranges(x0..=x1, row.y_range());
                        mesh_rect(&mut mesh, r, Color32::from_gray(120));
                        if let Some(p) = hover {
                            if r.contains(p) {
                                hovered =
                                    Some((format!("{count} events (zoom in to see them)"), r));
                            }
                        }
                    }
                }
            }
        }
        if !t.points.is_empty() {
            let row_y = y + POINTS_H / 2.0;
            y += POINTS_H;
            let (t0, t1) = (axis.to_true(st.view.start), axis.to_true(st.view.end));
            let lo = t.points.partition_point(|p| p.0 < t0);
            let mut last_x = f32::NEG_INFINITY;
            for p in t.points[lo..].iter().take_while(|p| p.0 <= t1) {
                let x = st.view.to_px(axis.to_axis(p.0), left, width);
                if x - last_x < 2.0 {
                    continue;
                }
                last_x = x;
                let tri = vec![
                    Pos2::new(x, row_y + 5.0),
                    Pos2::new(x - 4.0, row_y - 4.0),
                    Pos2::new(x + 4.0, row_y - 4.0),
                ];
                painter.add(egui::Shape::convex_polygon(
                    tri,
                    Color32::from_rgb(230, 180, 60),
                    Stroke::NONE,
                ));
                if let Some(h) = hover {
                    if (h.x - x).abs() < 5.0 && (h.y - row_y).abs() < 6.0 {
                        hovered = Some((
                            format!("{}\nat {}", m.name(p.1), format_us(p.0)),
                            Rect::from_center_size(Pos2::new(x, row_y), Vec2::splat(8.0)),
                        ));
                    }
                }
            }
        }
        y += TRACK_GAP;
    }
    for c in &m.counters {
        let title = Rect::from_min_size(Pos2::new(left, y), Vec2::new(width, TRACK_TITLE_H));
        painter.rect_filled(title, 0.0, visuals.faint_bg_color);
        painter.text(
            title.left_center() + Vec2::new(6.0, 0.0),
            Align2::LEFT_CENTER,
            format!("{} ({})", c.name, c.unit),
            FontId::proportional(13.0),
            visuals.strong_text_color(),
        );
        y += TRACK_TITLE_H;
        let area = Rect::from_min_size(Pos2::new(left, y), Vec2::new(width, COUNTER_H));
        y += COUNTER_H + TRACK_GAP;
        let span = (c.max - c.min).max(1e-12);
        let yv = |v: f64| area.bottom() - ((v - c.min) / span) as f32 * (area.height() - 2.0);
        let t0 = axis.to_true(st.view.start);
        let t1 = axis.to_true(st.view.end);
        let lo = c.points.partition_point(|p| p.0 < t0).saturating_sub(1);
        let mut pts = Vec::new();
        let mut last_x = f32::NEG_INFINITY;
        for p in c.points[lo..].iter() {
            let x = st.view.to_px(axis.to_axis(p.0), left, width);
            // Step graph, at most one step per pixel.
            if x - last_x >= 1.0 || pts.is_empty() {
                if let Some(&Pos2 { y: py, .. }) = pts.last() {
                    pts.push(Pos2::new(x, py));
                }
                pts.push(Pos2::new(x, yv(p.1)));
                last_x = x;
            }
            if p.0 > t1 {
                break;
            }
        }
        painter.add(egui::Shape::line(
            pts,
            Stroke::new(1.5, Color32::from_rgb(120, 200, 120)),
        ));
    }
    painter.add(egui::Shape::mesh(mesh));
    let mut a11y_labels = 300usize;
    for (li, (r, name, dur, color)) in labels.into_iter().enumerate() {
        let vis = r.intersect(canvas);
        if vis.width() < 30.0 {
            continue;
        }
        // The duration too when it fits: reading it should not need a hover.
        let with_dur = format!("{name} · {}", format_us(dur));
        let galley = painter.layout_no_wrap(with_dur.clone(), font.clone(), color);
        let (galley, text) = if galley.size().x + 6.0 <= vis.width() {
            (galley, with_dur)
        } else {
            (
                painter.layout_no_wrap(name.clone(), font.clone(), color),
                name,
            )
        };
        let p = Pos2::new(vis.left() + 3.0, r.center().y - galley.size().y / 2.0);
        let fits = galley.size().x + 6.0 <= vis.width();
        let text_rect = Rect::from_min_size(p, galley.size()).intersect(vis);
        painter.with_clip_rect(vis).galley(p, galley, color);
        // What is legible, for screen readers and tests (only whole labels, bounded).
        if fits && a11y_labels > 0 {
            a11y_labels -= 1;
            let id = ui.scope_id().with(("span_label", li));
            ui.interact(text_rect, id, Sense::hover())
                .widget_info(|| egui::WidgetInfo::labeled(egui::Role::Label, true, &text));
        }
    }
    let break_tip = paint_breaks(ui, &painter, canvas, ruler_rect, &st.view, axis, hover);
    if hovered.is_none() {
        hovered = break_tip;
    }
    // Measuring: primary drag selects a span of time.
    if resp.drag_started_by(egui::PointerButton::Primary) {
        if let Some(p) = resp.interact_pointer_pos() {
            let t = axis.to_true(st.view.from_px(p.x, left, width));
            st.measure = Some((t, t));
        }
    }
    if resp.dragged_by(egui::PointerButton::Primary) {
        if let (Some(p), Some(m0)) = (resp.interact_pointer_pos(), st.measure.as_mut()) {
            m0.1 = axis.to_true(st.view.from_px(p.x, left, width));
        }
    }
    if let Some((a, b)) = st.measure {
        if a != b {
            // Drawn on the axis, labelled with the true duration (breaks included).
            let (x0, x1) = (
                st.view.to_px(axis.to_axis(a), left, width),
                st.view.to_px(axis.to_axis(b), left, width),
            );
            paint_measure_span(&painter, canvas, x0, x1, &format_us((b - a).abs()));
        }
    }
    if ui.input(|i| i.key_pressed(egui::Key::Escape)) {
        st.measure = None;
        st.selected = None;
    }
    if let Some(t) = clicked_target {
        st.selected = Some(t);
        st.measure = None;
        if let Target::Kernel(k) = t {
            if st.sqtt_kernels.contains(&(k as usize)) {
                action = Some(Action::OpenKernel(k as usize));
            }
        }
    } else if resp.clicked() {
        st.selected = None;
        st.measure = None;
    }
    if let (Some((text, _)), true) = (hovered, super::tooltips_enabled(ui)) {
        egui::Tooltip::always_open(
            ui.ctx().clone(),
            ui.layer_id(),
            ui.scope_id().with("tip"),
            egui::PopupAnchor::Pointer,
        )
        .show(|ui| ui.label(text));
    }
    action
}

/// The ruler on a time axis with breaks: each stretch between breaks is at true scale, shifted,
/// so it gets the plain ruler with true-time labels, clipped to its pixels.
fn paint_axis_ruler(
    p: &egui::Painter,
    rect: Rect,
    grid_bottom: f32,
    view: &TimeView,
    ax: &TimeAxis,
) {
    let (left, width) = (rect.left(), rect.width());
    let mut seg_start = view.start;
    let mut segs: Vec<(f64, f64)> = Vec::new();
    for (x, b) in ax.breaks_in(view.start, view.end) {
        if x > seg_start {
            segs.push((seg_start, x));
        }
        seg_start = seg_start.max(x + b.shown);
    }
    if view.end > seg_start {
        segs.push((seg_start, view.end));
    }
    for (a, b) in segs {
        let (x0, x1) = (view.to_px(a, left, width), view.to_px(b, left, width));
        if x1 - x0 < 2.0 {
            continue;
        }
        // Inside a stretch the axis is true time minus a constant.
        let shift = ax.to_true(a) - a;
        let seg_view = TimeView::new(a + shift, b + shift);
        let seg_rect = Rect::from_x_y_ranges(x0..=x1, rect.y_range());
        let clip = Rect::from_x_y_ranges(x0..=x1, rect.top()..=grid_bottom);
        paint_ruler(
            &p.with_clip_rect(clip),
            seg_rect,
            grid_bottom,
            &seg_view,
            false,
        );
    }
}

/// Draws the collapsed idle gaps in view as hatched bands with their true length, and gives
/// them accessible names; returns the hovered one's tooltip.
fn paint_breaks(
    ui: &Ui,
    p: &egui::Painter,
    canvas: Rect,
    ruler: Rect,
    view: &TimeView,
    ax: &TimeAxis,
    hover: Option<Pos2>,
) -> Option<(String, Rect)> {
    let (left, width) = (canvas.left(), canvas.width());
    let mut tip = None;
    let band_fill = Color32::from_rgba_unmultiplied(90, 90, 110, 70);
    let edge = Stroke::new(1.0, Color32::from_rgb(150, 150, 175));
    for (i, (x, b)) in ax.breaks_in(view.start, view.end).enumerate().take(2000) {
        let x0 = view.to_px(x, left, width);
        let x1 = view.to_px(x + b.shown, left, width).max(x0 + 1.0);
        let band = Rect::from_x_y_ranges(x0..=x1, ruler.top()..=canvas.bottom());
        p.rect_filled(band, 0.0, band_fill);
        // Zigzag edges, the usual mark of a broken axis, where there is room for them; a
        // sliver gets one faint line.
        let edges: &[f32] = if x1 - x0 >= 8.0 { &[x0, x1] } else { &[] };
        if edges.is_empty() {
            p.line_segment(
                [
                    Pos2::new((x0 + x1) / 2.0, ruler.top()),
                    Pos2::new((x0 + x1) / 2.0, canvas.bottom()),
                ],
                Stroke::new(1.0, Color32::from_rgba_unmultiplied(150, 150, 175, 90)),
            );
        }
        for &ex in edges {
            let mut pts = Vec::new();
            let mut y = ruler.top();
            let mut k = 0;
            while y < canvas.bottom() {
                pts.push(Pos2::new(ex + if k % 2 == 0 { -2.0 } else { 2.0 }, y));
                y += 5.0;
                k += 1;
            }
            p.add(egui::Shape::line(pts, edge));
        }
        // The true length, in full where it fits, else just the duration, else on hover.
        let dur = format_us(b.len());
        let font = FontId::proportional(12.0);
        let drawn = [format!("… {dur} idle …"), dur.clone()]
            .into_iter()
            .map(|t| (p.layout_no_wrap(t.clone(), font.clone(), Color32::WHITE), t))
            .find(|(g, _)| g.size().x + 6.0 <= band.width());
        if let Some((galley, label)) = drawn {
            let tr = Rect::from_center_size(
                Pos2::new((x0 + x1) / 2.0, ruler.center().y),
                galley.size() + Vec2::new(6.0, 2.0),
            );
            p.rect_filled(tr, 3.0, Color32::from_rgb(60, 60, 80));
            p.galley(tr.min + Vec2::new(3.0, 1.0), galley, Color32::WHITE);
            let id = ui.scope_id().with(("idle_break_label", i));
            ui.interact(tr, id, Sense::hover())
                .widget_info(|| egui::WidgetInfo::labeled(egui::Role::Label, true, &label));
        }
        let text = format!(
            "idle {} collapsed: {} … {}\n(untick \"Collapse idle time\" for true scale)",
            format_us(b.len()),
            format_us(b.start),
            format_us(b.end)
        );
        if let Some(h) = hover {
            if band.contains(h) {
                tip = Some((text, band));
            }
        }
        let id = ui.scope_id().with(("idle_break", i));
        let name = format!("idle break {dur}");
        ui.interact(band.intersect(canvas.union(ruler)), id, Sense::hover())
            .widget_info(|| egui::WidgetInfo::labeled(egui::Role::Label, true, &name));
    }
    tip
}

fn span_tooltip(m: &TimelineModel, s: &Span) -> String {
    let kind = match s.target {
        Target::Kernel(_) => "kernel",
        Target::Range(_) => "range",
    };
    format!(
        "{}\n{kind}, {}\nstart {}",
        m.name(s.name),
        format_us(s.end - s.start),
        format_us(s.start)
    )
}

/// The selection panel's time line: start (and end) from the capture's start, the timeline's
/// x = 0 (the earliest event), rather than tens of millions of absolute microseconds.
pub fn since_capture(
    ui: &mut Ui,
    m: &TimelineModel,
    start: traces::model::Time,
    end: Option<traces::model::Time>,
) -> egui::Response {
    let rel = |t: traces::model::Time| {
        format_us((t.0 - m.origin.0) as f64 / traces::model::Time::PS_PER_US as f64)
    };
    let text = match end {
        Some(e) => format!("at {} … {} from the capture's start", rel(start), rel(e)),
        None => format!("at {} from the capture's start", rel(start)),
    };
    ui.label(text)
}
