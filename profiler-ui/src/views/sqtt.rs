//! A kernel's SQTT view: occupancy per SE, then SE -> CU/WGP -> SIMD/slot rows with wave bars
//! and, on itraced waves, instruction tokens coloured by category.

use std::cell::Cell;
use std::collections::{BTreeSet, HashMap};

use egui::{Align2, Color32, FontId, Pos2, Rect, Sense, Stroke, Ui, Vec2};
use egui_plot::{Legend, Line, Plot, PlotPoints};

use super::{mesh_rect, navigate, paint_measure, paint_ruler, RULER_H};
use crate::data::hidden::KernelSplits;
use crate::data::{InstStat, KernelSqtt, SeClock, SeTrace, WaveInst, XUnit};
use crate::layout::ruler::{format_cycles, format_us};
use crate::layout::sqtt::{layout_frame, Cat, Frame, RowKind, SeWaves, SqttRows};
use crate::layout::traced::TracedWaves;
use crate::layout::view::TimeView;
use traces::pipeline::TablePart;

pub const LABEL_W: f32 = 150.0;

/// "32 SEs (8 XCCs × 4)" on a multi-XCC device, "6 SEs" otherwise.
fn ses_phrase(layout: Option<traces::model::SeLayout>, n: usize) -> String {
    match layout {
        Some(l) => format!("{n} SEs ({} XCCs × {})", l.xccs, l.ses_per_xcc),
        None => format!("{n} SEs"),
    }
}

/// Row-label width: multi-XCC streams ("XCC 7 · SE 3, itrace") need more than "SE 5, itrace".
pub fn label_width(k: &KernelSqtt) -> f32 {
    if k.se_layout.is_some() {
        LABEL_W + 40.0
    } else {
        LABEL_W
    }
}
const OCC_H: f32 = 130.0;

/// A kernel opened in the SQTT view, with everything derived from it.
pub struct KernelView {
    /// The analysis: every SE's name, errors, warnings, and the disassembly of the mapped
    /// PCs. The SEs' wave records and tokens went as each SE was decoded: the waves are in
    /// `rows`, the traced waves' tokens in `rows.traced`.
    pub data: KernelSqtt,
    pub rows: SqttRows,
    pub stats: Vec<InstStat>,
    /// Waves of every SE.
    pub waves: usize,
    /// The x range covered by all waves.
    pub x_range: (f64, f64),
    /// Active waves over time, per SE: (x, count) steps, at most ~2000 points each.
    pub occupancy: Vec<(u32, Vec<[f64; 2]>)>,
    pub state: SqttState,
    /// Theoretical occupancy (set by the app, which has the profile) and achieved occupancy.
    pub theoretical: Option<crate::data::occupancy::Occupancy>,
    pub achieved: crate::data::occupancy::Achieved,
    /// Live registers per PC (set by the app, which has the code object).
    pub pressure: Option<crate::data::pressure::Pressure>,
    /// The code object's line table, or why there is none (set by the app).
    pub lines: Option<Result<crate::data::source::LineTable, String>>,
    /// The last wave looked up by (SE index, wave): its (row, position), so the wave list
    /// drawn every frame does not search the rows each time.
    found: Cell<Option<Found>>,
}

/// A wave looked up: (SE index, wave) and its (row, position) if the view has it.
type Found = ((usize, u32), Option<(usize, usize)>);

/// One wave of the view, as the tooltip and the wave list show it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WaveAt {
    pub cu: u16,
    pub simd: u8,
    pub slot: u8,
    /// Shader cycles.
    pub start: i64,
    pub end: i64,
    /// In view units.
    pub x: (f64, f64),
    /// Its instruction tokens.
    pub tokens: usize,
}

#[derive(Debug, Clone)]
pub struct SqttState {
    pub view: TimeView,
    pub scroll_y: f32,
    pub collapsed: BTreeSet<RowKind>,
    /// (SE index, wave index) of the selected wave.
    pub selected_wave: Option<(usize, u32)>,
    pub measure: Option<(f64, f64)>,
    pub visible: Vec<usize>,
}

/// What the view keeps of one SE, taken from its analysis (every wave, tokens mapped) as soon
/// as it is decoded, the analysis' records let go as they are read.
struct SePart {
    /// Its waves grouped into the view's rows.
    grouped: SeWaves,
    achieved: crate::data::occupancy::Achieved,
    /// Its part of the instruction table (`None`: no tokens, or the table is known).
    table: Option<(TablePart, KernelSplits)>,
    traced: TracedWaves,
    /// The disassembly of its mapped PCs.
    disasm: HashMap<u64, String>,
}

impl SePart {
    /// The part of `st` (its table part when `table`), its wave records and tokens let go
    /// (the tokens before the waves are grouped: at most one SE's records and its part).
    fn take(st: &mut SeTrace, disasm: &HashMap<u64, String>, table: bool) -> SePart {
        let mut achieved = crate::data::occupancy::Achieved::default();
        crate::data::occupancy::achieved_of(&mut achieved, st.se, &st.analysis);
        // Only waves with tokens have rows and splits.
        let table = (table && !st.analysis.tokens.is_empty()).then(|| TablePart::of_se(st, disasm));
        let traced = TracedWaves::of(st);
        st.analysis.tokens = Vec::new();
        st.token_x = Vec::new();
        st.token_order = Vec::new();
        st.token_start = Vec::new();
        st.token_pc = Vec::new();
        st.mapped = Vec::new();
        let grouped = SeWaves::group(&st.analysis.waves);
        st.analysis.waves = Vec::new();
        st.wave_x = Vec::new();
        SePart {
            grouped,
            achieved,
            table,
            traced,
            disasm: disasm.clone(),
        }
    }
}

impl KernelView {
    /// The view of kernel `k` of `p`, analysed for it: the SEs decoded in parallel (`progress`
    /// gets (done, total) as each finishes), each SE reduced to what the view keeps of it as
    /// soon as it is decoded, the instruction table from `stats` when known (the .wst's
    /// analysis index) or computed. `None` when `k` is not a kernel of `p`.
    pub fn analyze(
        p: &traces::model::Profile,
        k: usize,
        progress: &(dyn Fn(usize, usize) + Sync),
        stats: Option<Vec<InstStat>>,
    ) -> Option<KernelView> {
        let table = stats.is_none();
        let fold =
            |st: &mut SeTrace, disasm: &HashMap<u64, String>| SePart::take(st, disasm, table);
        let (data, clocks, parts) = crate::data::analyze_kernel_view_fold(p, k, progress, &fold)?;
        Some(Self::build(data, clocks, parts, stats))
    }

    /// The view of an analysed kernel whose x is its cycles (no markers: `XUnit::Cycles`).
    pub fn new(data: KernelSqtt) -> KernelView {
        let clocks = vec![SeClock::cycles(); data.ses.len()];
        Self::build(data, clocks, Vec::new(), None)
    }

    /// The view of `data` with each SE's clock; `parts` (by SE, may be shorter) holds what
    /// the view keeps of the SEs whose records the analysis let go, the others' are made here
    /// (and their records let go).
    fn build(
        mut data: KernelSqtt,
        clocks: Vec<SeClock>,
        parts: Vec<Option<SePart>>,
        stats: Option<Vec<InstStat>>,
    ) -> KernelView {
        // Achieved occupancy, the table's parts, the rows' groups and the traced waves, in SE
        // order.
        let mut achieved = crate::data::occupancy::Achieved::default();
        let mut table = TablePart::default();
        let mut splits = KernelSplits::default();
        let mut grouped = Vec::with_capacity(data.ses.len());
        let mut traced = Vec::with_capacity(data.ses.len());
        let mut parts = parts.into_iter();
        for s in &mut data.ses {
            let part = match parts.next().flatten() {
                Some(part) => part,
                None => SePart::take(s, &data.disasm, stats.is_none()),
            };
            // The clocks are made: the markers (millions in a large capture) are not read
            // again.
            s.analysis.markers = Vec::new();
            s.analysis.userdata_writes = Vec::new();
            let SePart {
                grouped: g,
                achieved: mut a,
                table: t,
                traced: tr,
                disasm,
            } = part;
            achieved.per_se.append(&mut a.per_se);
            achieved.per_simd.append(&mut a.per_simd);
            if let Some((t, sp)) = t {
                table.merge(t);
                splits.merge(sp);
            }
            for (pc, text) in disasm {
                data.disasm.entry(pc).or_insert(text);
            }
            grouped.push(Some(g));
            traced.push(tr);
        }
        let stats = stats.unwrap_or_else(|| table.finish(&splits.by_inst));
        let rows = SqttRows::build(&data, clocks, grouped, traced);
        let mut waves = 0;
        let occupancy = data
            .ses
            .iter()
            .enumerate()
            .map(|(si, s)| {
                // One SE's x at a time (order does not matter to the overview).
                let clock = rows.clock(si);
                // At its length: a doubling list of a million waves' x is tens of MiB more.
                let n: usize = rows
                    .rows
                    .iter()
                    .filter(|r| matches!(r.kind, RowKind::Wave { se, .. } if se == si))
                    .map(|r| r.cycles.len())
                    .sum();
                let mut x = Vec::with_capacity(n);
                for r in &rows.rows {
                    match r.kind {
                        RowKind::Wave { se, .. } if se == si => x.extend(r.xs(&clock)),
                        RowKind::Se { se } if se == si => waves += r.wave_count,
                        _ => {}
                    }
                }
                (s.se, occupancy(&x, 2000))
            })
            .collect();
        let (a, b) = rows
            .x_range()
            .unwrap_or((0.0, data.kernel_len.unwrap_or(1.0).max(1e-3)));
        let collapsed = BTreeSet::new();
        let visible = rows.visible(&collapsed);
        KernelView {
            state: SqttState {
                view: TimeView::around(a, b, 0.02),
                scroll_y: 0.0,
                collapsed,
                selected_wave: None,
                measure: None,
                visible,
            },
            data,
            rows,
            stats,
            waves,
            x_range: (a, b),
            occupancy,
            theoretical: None,
            achieved,
            pressure: None,
            lines: None,
            found: Cell::new(None),
        }
    }

    /// Wave `w` of SE index `se`, if the view has it.
    pub fn wave(&self, se: usize, w: u32) -> Option<WaveAt> {
        let at = match self.found.get() {
            Some((key, at)) if key == (se, w) => at,
            _ => {
                let at = self.rows.find(se, w);
                self.found.set(Some(((se, w), at)));
                at
            }
        };
        let (ri, pos) = at?;
        self.wave_in_row(ri, pos)
    }

    /// The wave at position `pos` of row `ri`.
    pub fn wave_in_row(&self, ri: usize, pos: usize) -> Option<WaveAt> {
        wave_in_row(&self.rows, ri, pos)
    }

    /// The instructions of wave `w` of SE index `se` (empty without tokens), as
    /// `traces::analysis::wave_insts` lists them from the full analysis.
    pub fn wave_insts(&self, se: usize, w: u32) -> Vec<WaveInst> {
        match (self.rows.traced.get(se), self.rows.wave_index(se, w)) {
            (Some(t), Some(i)) => t.insts(i, &self.rows.clock(se), &self.data.disasm),
            _ => Vec::new(),
        }
    }

    /// Instruction tokens of every traced wave.
    pub fn tokens(&self) -> usize {
        self.rows.traced.iter().map(|t| t.token_count()).sum()
    }
}

/// The wave at position `pos` of row `ri` of `rows`.
fn wave_in_row(rows: &SqttRows, ri: usize, pos: usize) -> Option<WaveAt> {
    let r = rows.rows.get(ri)?;
    let RowKind::Wave { se, cu, simd, slot } = r.kind else {
        return None;
    };
    let w = *r.waves.get(pos)?;
    let (start, end) = *r.cycles.get(pos)?;
    let clock = rows.clocks.get(se)?;
    Some(WaveAt {
        cu,
        simd,
        slot,
        start,
        end,
        x: (clock.x(start), clock.x(end)),
        tokens: match (rows.traced.get(se), rows.wave_index(se, w)) {
            (Some(t), Some(i)) => t.times(i).len(),
            _ => 0,
        },
    })
}

/// Active-wave count over time (kept in traces, where the .wst index saves it too).
pub fn occupancy(waves: &[(f64, f64)], max_points: usize) -> Vec<[f64; 2]> {
    traces::analysis::occupancy::active_waves(waves, max_points)
}

/// The first frame of a kernel with a saved analysis index, while its detail is decoded: per
/// SE, the active-wave overview the index holds.
pub fn show_overview(
    ui: &mut Ui,
    k: &crate::data::IndexedKernel,
    layout: Option<traces::model::SeLayout>,
) {
    ui.label(format!(
        "{} waves on {} (saved analysis; decoding the detail)",
        k.waves,
        ses_phrase(layout, k.ses.len())
    ));
    let (lo, hi) = k.x_range;
    let span = (hi - lo).max(1e-9);
    let peak = k
        .ses
        .iter()
        .flat_map(|s| s.overview.iter().map(|p| p[1]))
        .fold(1.0f64, f64::max);
    for s in &k.ses {
        ui.label(format!(
            "{}{}",
            traces::model::se_label(layout, s.se),
            if s.itrace { " (itrace)" } else { "" }
        ));
        let (rect, _) =
            ui.allocate_exact_size(egui::vec2(ui.available_width(), 28.0), egui::Sense::hover());
        let p = ui.painter_at(rect);
        p.rect_filled(rect, 0.0, Color32::from_gray(24));
        let pts: Vec<egui::Pos2> = s
            .overview
            .iter()
            .map(|q| {
                egui::pos2(
                    rect.left() + ((q[0] - lo) / span) as f32 * rect.width(),
                    rect.bottom() - (q[1] / peak) as f32 * rect.height(),
                )
            })
            .collect();
        p.add(egui::Shape::line(
            pts,
            egui::Stroke::new(1.0, Color32::from_rgb(0x7a, 0xb0, 0xf0)),
        ));
    }
}

/// Rasterizes, a little per frame, the glyphs the SQTT view will draw: egui rasterizes a
/// glyph (per size and sub-pixel position) the first time a text uses it, and the first frame
/// of the detail draws hundreds of new ones (row labels at two sizes, the heading, the plot's
/// axes): about 2 ms of that frame. Called on the frames drawn while the detail is computed,
/// which have time to spare; half a pass per frame, a few passes per font size over shifted text so most
/// sub-pixel positions of each character come up.
pub fn warm_glyphs(ui: &Ui) {
    const PASSES: usize = 6;
    let id = egui::Id::unique("wavescope.sqtt.warm_glyphs");
    let step = ui.ctx().data(|d| d.get_temp::<usize>(id)).unwrap_or(0);
    let style = ui.style();
    let fonts = [
        FontId::proportional(11.0),
        FontId::proportional(12.0),
        egui::TextStyle::Heading.resolve(style),
        egui::TextStyle::Body.resolve(style),
        egui::TextStyle::Small.resolve(style),
    ];
    // Half a pass per frame: each costs well under a millisecond.
    let Some(font) = fonts.get(step / (2 * PASSES)).cloned() else {
        return;
    };
    let chars: Vec<char> = (' '..='~').chain("·µ…−".chars()).collect();
    let (pass, half) = ((step / 2) % PASSES, step % 2);
    let mut text = String::with_capacity(chars.len() * 4);
    for (i, &c) in chars.iter().enumerate().skip(half).step_by(2) {
        // A different character before each one on each pass shifts where it falls.
        text.push(chars[(i * (2 * pass + 1) + 7 * pass) % chars.len()]);
        text.push(c);
    }
    ui.ctx()
        .fonts_mut(|f| f.layout_no_wrap(text, font, Color32::WHITE));
    ui.ctx().data_mut(|d| d.insert_temp(id, step + 1));
}

pub fn cat_color(c: Option<Cat>) -> Color32 {
    match c {
        Some(Cat::Valu) => Color32::from_rgb(0xf5, 0xe0, 0x7a),
        Some(Cat::Salu) => Color32::from_rgb(0x5c, 0xc0, 0x6a),
        Some(Cat::Smem) => Color32::from_rgb(0xf0, 0x8c, 0xc8),
        Some(Cat::Store) => Color32::from_rgb(0x4a, 0x8c, 0xf0),
        Some(Cat::Vmem) => Color32::from_rgb(0x8a, 0x9c, 0xc0),
        Some(Cat::Lds) => Color32::from_rgb(0x8c, 0xb8, 0x96),
        Some(Cat::Immediate) => Color32::from_rgb(0xf0, 0x9a, 0x3c),
        Some(Cat::Barrier) => Color32::from_rgb(0xe0, 0x40, 0x40),
        Some(Cat::Jump) => Color32::from_rgb(0xd8, 0xb0, 0x30),
        Some(Cat::JumpNo) => Color32::from_rgb(0xe8, 0x80, 0x30),
        Some(Cat::Message) => Color32::from_rgb(0x50, 0xd0, 0xe0),
        Some(Cat::Other) => Color32::from_rgb(0xb0, 0xb0, 0xb0),
        None => Color32::from_rgb(0xc8, 0xc8, 0xa0),
    }
}

const WAVE_COLOR: Color32 = Color32::from_rgb(0x2e, 0x4a, 0x7a);
const WAVE_TRACED: Color32 = Color32::from_rgb(0x3a, 0x5f, 0xa0);

pub fn row_label(k: &KernelSqtt, kind: RowKind) -> String {
    match kind {
        RowKind::Se { se } => {
            let s = &k.ses[se];
            let it = if s.itrace { ", itrace" } else { "" };
            format!("{}{it}", k.se_name(s.se))
        }
        RowKind::Cu { cu, .. } => format!("WGP {} SA {}", cu & 7, cu >> 3),
        RowKind::Wave { simd, slot, .. } => format!("SIMD {simd} · W{slot}"),
    }
}

/// Draws the occupancy plot and the wave rows. Returns true when a wave was clicked.
pub fn show(ui: &mut Ui, kv: &mut KernelView) -> bool {
    let cycles = kv.data.unit == XUnit::Cycles;
    let fmt = move |v: f64| {
        if cycles {
            format_cycles(v)
        } else {
            format_us(v)
        }
    };
    ui.horizontal(|ui| {
        ui.heading(&kv.data.name);
        ui.label(format!(
            "{} waves on {} · {} · time in {}",
            kv.waves,
            ses_phrase(kv.data.se_layout, kv.data.ses.len()),
            kv.data
                .kernel_len
                .map_or("duration unknown".into(), |l| format!(
                    "kernel {}",
                    format_us(l)
                )),
            if cycles {
                "shader cycles per SE (no markers)"
            } else {
                "µs from kernel start (GPU clock)"
            }
        ));
    });
    for s in &kv.data.ses {
        if let Some(e) = &s.error {
            ui.colored_label(
                Color32::LIGHT_RED,
                format!("{}: {e}", kv.data.se_name(s.se)),
            );
        }
        // The decoder's warnings and where instruction mapping stopped early.
        for n in s.notes() {
            ui.colored_label(Color32::YELLOW, format!("{}: {n}", kv.data.se_name(s.se)));
        }
    }
    let label_w = label_width(&kv.data);
    // Occupancy over time per SE, linked to the wave view's window.
    let st = &mut kv.state;
    let occ = &kv.occupancy;
    let layout = kv.data.se_layout;
    ui.allocate_ui(Vec2::new(ui.available_width(), OCC_H), |ui| {
        ui.horizontal(|ui| {
            ui.add_space(label_w - 60.0);
            Plot::new("occupancy")
                .height(OCC_H)
                .legend(Legend::default().position(egui_plot::Corner::RightTop))
                .allow_zoom(false)
                .allow_drag(false)
                .allow_scroll(false)
                .show_x(true)
                .y_axis_label("waves")
                .x_axis_formatter(move |m, _| fmt(m.value))
                .include_y(0.0)
                .default_x_bounds(st.view.start, st.view.end)
                .auto_bounds([false, true])
                .show(ui, |pu| {
                    pu.set_plot_bounds_x(st.view.start..=st.view.end);
                    for (se, pts) in occ {
                        pu.line(
                            Line::new(
                                traces::model::se_label(layout, *se),
                                PlotPoints::from(pts.clone()),
                            )
                            .width(1.5),
                        );
                    }
                });
        });
    });
    ui.add_space(4.0);
    let full = ui.available_rect_before_wrap();
    let resp = ui.allocate_rect(full, Sense::click_and_drag());
    let labels_rect = Rect::from_min_max(
        Pos2::new(full.left(), full.top() + RULER_H),
        Pos2::new(full.left() + label_w, full.bottom()),
    );
    let canvas = Rect::from_min_max(
        Pos2::new(full.left() + label_w, full.top() + RULER_H),
        full.max,
    );
    let ruler_rect = Rect::from_min_max(
        Pos2::new(canvas.left(), full.top()),
        Pos2::new(full.right(), full.top() + RULER_H),
    );
    let dy = navigate(ui, &resp, canvas, &mut st.view);
    if ui.input(|i| i.key_pressed(egui::Key::F) || i.key_pressed(egui::Key::Home))
        && !ui.ctx().egui_wants_keyboard_input()
    {
        let (a, b) = kv.x_range;
        st.view = TimeView::around(a, b, 0.02);
    }
    let total_h: f32 = st.visible.iter().map(|&r| kv.rows.rows[r].height()).sum();
    st.scroll_y = (st.scroll_y + dy).clamp(0.0, (total_h - canvas.height() + 20.0).max(0.0));
    let painter = ui.painter_at(full);
    let visuals = ui.visuals().clone();
    painter.rect_filled(canvas, 0.0, visuals.extreme_bg_color);
    paint_ruler(&painter, ruler_rect, full.bottom(), &st.view, cycles);
    let mut frame = Frame::default();
    layout_frame(
        &kv.rows,
        &st.visible,
        st.scroll_y,
        canvas.top(),
        canvas.bottom(),
        &st.view,
        canvas.left(),
        canvas.width(),
        &mut frame,
    );
    let hover = resp.hover_pos().filter(|p| canvas.contains(*p));
    let mut tooltip: Option<String> = None;
    let mut clicked_wave = None;
    let mut toggle = None;
    // Row labels and header bands.
    let lp = ui.painter_at(labels_rect);
    for &(ri, y) in &frame.rows {
        let row = &kv.rows.rows[ri];
        let h = row.height();
        let r = Rect::from_min_size(Pos2::new(full.left(), y), Vec2::new(full.width(), h));
        let (indent, strong) = match row.kind {
            RowKind::Se { .. } => (4.0, true),
            RowKind::Cu { .. } => (14.0, true),
            RowKind::Wave { .. } => (28.0, false),
        };
        if strong {
            let band = Rect::from_min_max(
                Pos2::new(canvas.left(), y),
                Pos2::new(canvas.right(), y + h - 1.0),
            );
            painter.rect_filled(band, 0.0, visuals.faint_bg_color);
            let open = !st.collapsed.contains(&row.kind);
            let text = format!(
                "{} {}  ({} waves)",
                if open { "[-]" } else { "[+]" },
                row_label(&kv.data, row.kind),
                row.wave_count
            );
            let lr = Rect::from_min_max(
                Pos2::new(full.left(), y),
                Pos2::new(full.left() + label_w, y + h),
            )
            .intersect(labels_rect);
            if lr.height() > 0.0 {
                let id = ui.scope_id().with(("hdr", ri));
                let hr = ui.interact(lr, id, Sense::click());
                let label = row_label(&kv.data, row.kind);
                hr.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Button, true, &label));
                if hr.clicked() {
                    toggle = Some(row.kind);
                }
            }
            lp.text(
                Pos2::new(r.left() + indent, r.center().y),
                Align2::LEFT_CENTER,
                text,
                FontId::proportional(12.0),
                visuals.strong_text_color(),
            );
        } else {
            lp.text(
                Pos2::new(r.left() + indent, r.center().y),
                Align2::LEFT_CENTER,
                row_label(&kv.data, row.kind),
                FontId::proportional(11.0),
                visuals.text_color(),
            );
        }
    }
    let mut mesh = egui::Mesh::default();
    let rects = frame.waves.len() + frame.tokens.len();
    mesh.reserve_vertices(rects * 4);
    mesh.reserve_triangles(rects * 2);
    let mut a11y = 400usize;
    // The bars come row by row in `frame.rows`' order: a cursor finds each one's y.
    let mut row_at = 0usize;
    for &(ri, se, w, x0, x1, count) in &frame.waves {
        while frame.rows.get(row_at).is_some_and(|r| r.0 != ri) {
            row_at += 1;
        }
        let y = frame.rows.get(row_at).map_or(0.0, |r| r.1);
        let r = Rect::from_x_y_ranges(
            x0.max(canvas.left() - 1.0)..=x1.min(canvas.right() + 1.0),
            (y + 1.0)..=(y + super::super::layout::sqtt::WAVE_H - 1.0),
        );
        let row = &kv.rows.rows[ri];
        mesh_rect(
            &mut mesh,
            r,
            if row.itraced { WAVE_TRACED } else { WAVE_COLOR },
        );
        if let (Some(w), true) = (w, st.selected_wave.is_some()) {
            if st.selected_wave == Some((se, w)) {
                painter.rect_stroke(
                    r,
                    0.0,
                    Stroke::new(2.0, Color32::WHITE),
                    egui::StrokeKind::Outside,
                );
            }
        }
        if let Some(p) = hover {
            if r.contains(p) {
                tooltip = Some(match w {
                    Some(w) => wave_tooltip(&kv.data, &kv.rows, se, ri, w, &fmt),
                    None => format!("{count} waves (zoom in to see them)"),
                });
                if resp.clicked() {
                    clicked_wave = w.map(|w| (se, w, ri));
                }
            }
        }
        if let Some(w) = w {
            if r.width() >= 4.0 && a11y > 0 {
                a11y -= 1;
                let (cu, simd, slot) = match row.kind {
                    RowKind::Wave { cu, simd, slot, .. } => (cu, simd, slot),
                    _ => (0, 0, 0),
                };
                let n = kv.data.ses[se].se;
                let unit = match kv.data.se_layout.map(|l| l.split(n)) {
                    Some((x, e)) => format!("XCC{x} SE{e}"),
                    None => format!("SE{n}"),
                };
                let label = format!("wave {unit} CU{cu} SIMD{simd} W{slot} #{w}");
                let wr = ui.interact(r, ui.scope_id().with(("wave", se, w)), Sense::click());
                wr.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Button, true, &label));
                if wr.clicked() {
                    clicked_wave = Some((se, w, ri));
                }
                if wr.hovered() {
                    tooltip = Some(wave_tooltip(&kv.data, &kv.rows, se, ri, w, &fmt));
                }
            }
        }
    }
    for &(y, x0, x1, cat) in &frame.tokens {
        let x1 = if x1 - x0 > 2.0 { x1 - 1.0 } else { x1 };
        let r = Rect::from_x_y_ranges(
            x0.max(canvas.left() - 1.0)..=x1.min(canvas.right() + 1.0),
            (y + 3.0)..=(y + super::super::layout::sqtt::WAVE_H - 3.0),
        );
        mesh_rect(&mut mesh, r, cat_color(cat));
    }
    painter.add(egui::Shape::mesh(mesh));
    if let Some(k) = toggle {
        if !st.collapsed.remove(&k) {
            st.collapsed.insert(k);
        }
        st.visible = kv.rows.visible(&st.collapsed);
    }
    if resp.drag_started_by(egui::PointerButton::Primary) {
        if let Some(p) = resp.interact_pointer_pos() {
            let t = st.view.from_px(p.x, canvas.left(), canvas.width());
            st.measure = Some((t, t));
        }
    }
    if resp.dragged_by(egui::PointerButton::Primary) {
        if let (Some(p), Some(m0)) = (resp.interact_pointer_pos(), st.measure.as_mut()) {
            m0.1 = st.view.from_px(p.x, canvas.left(), canvas.width());
        }
    }
    if let Some((a, b)) = st.measure {
        if a != b {
            paint_measure(&painter, canvas, &st.view, a, b, cycles);
        }
    }
    if ui.input(|i| i.key_pressed(egui::Key::Escape)) {
        st.measure = None;
    }
    let mut changed = false;
    if let Some((se, w, ri)) = clicked_wave {
        // The wave list looks it up every frame: its row is known here.
        let pos = kv
            .rows
            .rows
            .get(ri)
            .and_then(|r| r.waves.iter().position(|&x| x == w));
        kv.found.set(Some(((se, w), pos.map(|p| (ri, p)))));
        let cw = (se, w);
        st.selected_wave = Some(cw);
        st.measure = None;
        changed = true;
    }
    if let (Some(t), true) = (tooltip, super::tooltips_enabled(ui)) {
        egui::Tooltip::always_open(
            ui.ctx().clone(),
            ui.layer_id(),
            ui.scope_id().with("tip"),
            egui::PopupAnchor::Pointer,
        )
        .show(|ui| ui.label(t));
    }
    changed
}

fn wave_tooltip(
    data: &KernelSqtt,
    rows: &SqttRows,
    se: usize,
    ri: usize,
    w: u32,
    fmt: &dyn Fn(f64) -> String,
) -> String {
    // The hovered wave is in row `ri`.
    let pos = rows
        .rows
        .get(ri)
        .and_then(|r| r.waves.iter().position(|&x| x == w));
    let (Some(wave), Some(s)) = (pos.and_then(|p| wave_in_row(rows, ri, p)), data.ses.get(se))
    else {
        return String::new();
    };
    let (a, b) = wave.x;
    format!(
        "wave #{w} · {} WGP {} SIMD {} slot {}\nstart {} · length {} ({} cycles)\n{} instruction tokens",
        data.se_name(s.se),
        wave.cu,
        wave.simd,
        wave.slot,
        fmt(a),
        fmt(b - a),
        wave.end - wave.start,
        wave.tokens
    )
}
