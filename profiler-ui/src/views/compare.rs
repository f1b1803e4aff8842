//! Compare mode: a second capture ("compare with", B) next to the open one (A). The timeline
//! gets an A/B kernel strip with both captures aligned at their first kernel; the instruction
//! table becomes the A / B / delta table of `traces::diff` for the open kernel, green where B is
//! faster and red where it is slower.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;

use egui::{Align2, Color32, FontId, Pos2, Rect, RichText, Sense, Stroke, Ui, Vec2};
use egui_extras::{Column, TableBuilder};
use traces::diff::{self, InstStatus, KernelData, KernelDiff, KernelMatch};
use traces::model::Profile;

use super::{name_color, text_on};
use crate::layout::timeline::TimelineModel;
use crate::layout::view::{TimeAxis, TimeView};

/// Faster in B.
pub const BETTER: Color32 = Color32::from_rgb(90, 190, 110);
/// Slower in B.
pub const WORSE: Color32 = Color32::from_rgb(235, 95, 80);

/// The compare capture, loaded.
pub struct Compare {
    pub path: PathBuf,
    pub profile: Arc<Profile>,
    pub timeline: TimelineModel,
    /// A kernel index -> (B kernel index, how they matched).
    pub pairs: HashMap<usize, (usize, KernelMatch)>,
    /// Added to B's timeline x so that B's first kernel starts where A's does.
    pub offset: f64,
    /// The diff of the open kernel, once computed.
    pub kernel_diff: Option<(usize, Result<KernelDiff, String>)>,
    job: Option<(usize, Receiver<Result<KernelDiff, String>>)>,
}

/// The compare state of a loaded trace: nothing, loading, loaded or failed.
#[derive(Default)]
pub struct CompareSlot {
    job: Option<(PathBuf, Receiver<Result<Compare, String>>)>,
    pub loaded: Option<Compare>,
    pub error: Option<String>,
}

/// x of the first kernel of a timeline.
fn first_kernel_x(m: &TimelineModel) -> Option<f64> {
    m.kernel_pos
        .keys()
        .filter_map(|&k| m.kernel_span(k))
        .map(|s| s.start)
        .min_by(f64::total_cmp)
}

/// Opens B and matches its kernels to A's (the loader thread's work).
fn load(a: &Profile, a_first: Option<f64>, path: &Path) -> Result<Compare, String> {
    let (_, b) = traces::open::open_path(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let timeline = TimelineModel::build(&b);
    let ia: Vec<usize> = (0..a.kernels.len()).collect();
    let ib: Vec<usize> = (0..b.kernels.len()).collect();
    let pairs = diff::match_kernels(&diff::kernel_keys(a, &ia), &diff::kernel_keys(&b, &ib))
        .into_iter()
        .filter_map(|(x, y, how)| Some((x?, (y?, how))))
        .collect();
    let offset = match (a_first, first_kernel_x(&timeline)) {
        (Some(x), Some(y)) => x - y,
        _ => 0.0,
    };
    Ok(Compare {
        path: path.to_path_buf(),
        profile: Arc::new(b),
        timeline,
        pairs,
        offset,
        kernel_diff: None,
        job: None,
    })
}

impl CompareSlot {
    /// Starts loading `path` as the compare capture for `a`.
    pub fn start(&mut self, a: Arc<Profile>, a_timeline: &TimelineModel, path: PathBuf) {
        let a_first = first_kernel_x(a_timeline);
        let (tx, rx) = channel();
        let p2 = path.clone();
        std::thread::spawn(move || {
            let r =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| load(&a, a_first, &p2)))
                    .unwrap_or_else(|_| {
                        Err("internal error while loading the compare capture".into())
                    });
            let _ = tx.send(r);
        });
        self.loaded = None;
        self.error = None;
        self.job = Some((path, rx));
    }

    pub fn busy(&self) -> bool {
        self.job.is_some() || self.loaded.as_ref().is_some_and(|c| c.job.is_some())
    }

    /// Moves background results in; starts the diff of `kernel` of `a` when it is missing.
    pub fn poll(&mut self, a: &Arc<Profile>, kernel: Option<usize>) {
        if let Some((path, rx)) = &self.job {
            match rx.try_recv() {
                Ok(Ok(c)) => {
                    self.loaded = Some(c);
                    self.job = None;
                }
                Ok(Err(e)) => {
                    self.error = Some(e);
                    self.job = None;
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => {}
                Err(_) => {
                    self.error = Some(format!("loading {} stopped unexpectedly", path.display()));
                    self.job = None;
                }
            }
        }
        let Some(c) = &mut self.loaded else {
            return;
        };
        if let Some((k, rx)) = &c.job {
            match rx.try_recv() {
                Ok(r) => {
                    c.kernel_diff = Some((*k, r));
                    c.job = None;
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => {}
                Err(_) => {
                    c.kernel_diff = Some((*k, Err("the diff stopped unexpectedly".into())));
                    c.job = None;
                }
            }
        }
        let Some(k) = kernel else {
            return;
        };
        let have = c.kernel_diff.as_ref().map(|d| d.0) == Some(k)
            || c.job.as_ref().map(|j| j.0) == Some(k);
        let Some(&(kb, how)) = c.pairs.get(&k) else {
            return;
        };
        if have {
            return;
        }
        let (pa, pb) = (a.clone(), c.profile.clone());
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let da = KernelData::from_profile(&pa, k);
                let db = KernelData::from_profile(&pb, kb);
                diff::diff_kernel(da.as_ref(), db.as_ref(), how)
            }))
            .map_err(|_| "internal error while comparing (a bug: please report it)".to_string());
            let _ = tx.send(r);
        });
        c.job = Some((k, rx));
    }
}

pub const STRIP_H: f32 = 64.0;

/// The A/B kernel strip above the timeline: A's kernels and B's, B shifted so that both start
/// at their first kernel, on A's time axis.
pub fn show_strip(
    ui: &mut Ui,
    slot: &CompareSlot,
    a: &TimelineModel,
    view: &TimeView,
    axis: &TimeAxis,
) {
    if let Some((path, _)) = &slot.job {
        ui.horizontal(|ui| {
            ui.spinner();
            ui.label(format!("loading {} to compare…", path.display()));
        });
        return;
    }
    if let Some(e) = &slot.error {
        ui.colored_label(WORSE, format!("compare: {e}"));
        return;
    }
    let Some(c) = &slot.loaded else {
        return;
    };
    ui.label(
        RichText::new(format!(
            "A: this capture · B: {} (aligned at the first kernel)",
            c.path.display()
        ))
        .weak(),
    );
    let (rect, resp) =
        ui.allocate_exact_size(Vec2::new(ui.available_width(), STRIP_H), Sense::hover());
    let painter = ui.painter_at(rect);
    painter.rect_filled(rect, 0.0, ui.visuals().extreme_bg_color);
    let lane_h = (STRIP_H - 6.0) / 2.0;
    let hover = resp.hover_pos();
    let mut tip = None;
    for (lane, (m, dx, tag)) in [(a, 0.0, "A"), (&c.timeline, c.offset, "B")]
        .into_iter()
        .enumerate()
    {
        let top = rect.top() + 2.0 + lane as f32 * (lane_h + 2.0);
        let mut ks: Vec<u32> = m.kernel_pos.keys().copied().collect();
        ks.sort_unstable();
        let mut labelled = 0;
        for k in ks {
            let Some(s) = m.kernel_span(k) else {
                continue;
            };
            // The same x mapping as the timeline below, so A's lane lines up with its track.
            let (x0, x1) = (
                view.to_px(axis.to_axis(s.start + dx), rect.left(), rect.width()),
                view.to_px(axis.to_axis(s.end + dx), rect.left(), rect.width()),
            );
            if x1 < rect.left() || x0 > rect.right() {
                continue;
            }
            let r = Rect::from_min_max(
                Pos2::new(x0, top),
                Pos2::new(x1.max(x0 + 2.0), top + lane_h),
            );
            let name = m.name(s.name);
            let col = name_color(name);
            painter.rect_filled(r, 2.0, col);
            if r.width() > 40.0 {
                painter.text(
                    r.left_center() + Vec2::new(3.0, 0.0),
                    Align2::LEFT_CENTER,
                    name,
                    FontId::proportional(11.0),
                    text_on(col),
                );
            }
            let label = format!("{tag} kernel {name}");
            if labelled < 50 {
                // Accessible names for tests and screen readers (bounded per lane).
                let id = ui.scope_id().with(("compare_strip", lane, k));
                let resp = ui.interact(r, id, Sense::hover());
                resp.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Label, true, &label));
                labelled += 1;
            }
            if hover.is_some_and(|p| r.contains(p)) {
                tip = Some(format!(
                    "{label} · {}",
                    crate::layout::ruler::format_us(s.end - s.start)
                ));
            }
        }
    }
    painter.line_segment(
        [
            Pos2::new(rect.left(), rect.center().y),
            Pos2::new(rect.right(), rect.center().y),
        ],
        Stroke::new(1.0, ui.visuals().widgets.noninteractive.bg_stroke.color),
    );
    // Lane tags last, on a backing, so kernels at the left edge do not hide them.
    for (lane, tag) in ["A", "B"].into_iter().enumerate() {
        let top = rect.top() + 2.0 + lane as f32 * (lane_h + 2.0);
        let at = Pos2::new(rect.left() + 4.0, top + lane_h / 2.0);
        let galley = painter.layout_no_wrap(
            tag.to_string(),
            FontId::proportional(12.0),
            ui.visuals().strong_text_color(),
        );
        let r = Align2::LEFT_CENTER
            .anchor_size(at, galley.size())
            .expand(2.0);
        painter.rect_filled(r, 2.0, ui.visuals().extreme_bg_color);
        painter.galley(r.min + Vec2::splat(2.0), galley, Color32::WHITE);
    }
    if let Some(t) = tip {
        resp.on_hover_text(t);
    }
}

/// B − A coloured: green when B spends fewer cycles, red when more.
fn delta_text(d: f64, fmt: String) -> RichText {
    let t = RichText::new(fmt).monospace();
    if d < 0.0 {
        t.color(BETTER)
    } else if d > 0.0 {
        t.color(WORSE)
    } else {
        t
    }
}

fn status_mark(s: InstStatus) -> (&'static str, Option<Color32>) {
    match s {
        InstStatus::Same => ("", None),
        InstStatus::Changed => ("~", Some(Color32::from_rgb(230, 200, 80))),
        InstStatus::Removed => ("-", Some(WORSE)),
        InstStatus::Added => ("+", Some(BETTER)),
    }
}

/// The A / B / delta instruction table of kernel `k`; false when there is nothing to compare
/// (the caller then shows the plain table).
pub fn show_table(ui: &mut Ui, slot: &CompareSlot, k: usize) -> bool {
    let Some(c) = &slot.loaded else {
        return false;
    };
    let Some(&(kb, how)) = c.pairs.get(&k) else {
        ui.label(
            RichText::new(format!(
                "This kernel is not in {} (no kernel with its name).",
                c.path.display()
            ))
            .weak(),
        );
        return false;
    };
    let d = match &c.kernel_diff {
        Some((dk, Ok(d))) if *dk == k => d,
        Some((dk, Err(e))) if *dk == k => {
            ui.colored_label(WORSE, e);
            return false;
        }
        _ => {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label(format!("comparing with B kernel {kb}…"));
            });
            return true;
        }
    };
    let t = |s: &Option<traces::diff::KernelSide>| {
        s.as_ref()
            .and_then(|s| s.gpu_time_us)
            .map_or("-".into(), |v| format!("{v:.3} µs"))
    };
    ui.horizontal(|ui| {
        ui.label(format!(
            "Compared with {} (kernel {kb}, matched by {}): GPU time {} -> {}",
            c.path.display(),
            match how {
                KernelMatch::Code => "code",
                _ => "name",
            },
            t(&d.a),
            t(&d.b)
        ));
        if let Some(r) = d.time_ratio {
            ui.label(delta_text(r - 1.0, format!("ratio {r:.3}")));
        }
    });
    let s = &d.summary;
    ui.label(format!(
        "instructions matched by {:?}: {} same, {} changed, {} removed, {} added · sorted by |Δ total| until a header is clicked",
        d.instruction_match, s.same, s.changed, s.removed, s.added
    ));
    if d.instructions.is_empty() {
        ui.label(
            "No instruction-level comparison (different architectures or no instruction trace).",
        );
        return true;
    }
    // Sort state lives in egui's memory: (column, descending); None keeps the engine's order
    // (|Δ total|, largest first). Clicking a header sorts by it, again reverses.
    let sort_id = ui.scope_id().with("compare_sort");
    let mut sort: Option<(usize, bool)> = ui.data(|m| m.get_temp(sort_id)).flatten();
    let rows = &d.instructions;
    // The order is kept until the sort or the compared rows change, not rebuilt every frame.
    type OrderKey = (usize, Option<(usize, bool)>, usize, usize);
    let order_id = sort_id.with("order");
    let key: OrderKey = (k, sort, rows.as_ptr() as usize, rows.len());
    let order = match ui.data(|m| m.get_temp::<(OrderKey, Arc<Vec<usize>>)>(order_id)) {
        Some((kk, o)) if kk == key => o,
        _ => {
            let o = Arc::new(sorted_order(rows, sort));
            ui.data_mut(|m| m.insert_temp(order_id, (key, o.clone())));
            o
        }
    };
    let mut clicked = None;
    TableBuilder::new(ui)
        .id_salt("compare_table")
        .striped(true)
        .column(Column::auto().at_least(16.0))
        .columns(Column::auto().at_least(56.0), 2)
        .column(Column::auto().at_least(300.0))
        .columns(Column::auto().at_least(58.0), 8)
        .header(20.0, |mut h| {
            for (ci, t) in COLUMNS.iter().enumerate() {
                h.col(|ui| {
                    let arrow = match sort {
                        Some((c, true)) if c == ci => " v",
                        Some((c, false)) if c == ci => " ^",
                        _ => "",
                    };
                    if ci == 0 {
                        ui.strong(*t);
                    } else if ui
                        .add(
                            egui::Button::new(RichText::new(format!("{t}{arrow}")).strong())
                                .frame(false),
                        )
                        .clicked()
                    {
                        clicked = Some(ci);
                    }
                });
            }
        })
        .body(|body| {
            body.rows(17.0, rows.len(), |mut row| {
                let r = &rows[order[row.index()]];
                let (mark, col) = status_mark(r.status);
                row.col(|ui| {
                    let t = RichText::new(mark).strong();
                    ui.label(col.map_or(t.clone(), |c| t.color(c)));
                });
                for s in [&r.a, &r.b] {
                    row.col(|ui| {
                        ui.monospace(s.as_ref().map_or("", |s| s.key.as_str()));
                    });
                }
                row.col(|ui| {
                    let text = match (&r.a, &r.b) {
                        (Some(a), Some(b)) if a.text != b.text => {
                            format!("{} => {}", a.text, b.text)
                        }
                        (Some(a), _) => a.text.clone(),
                        (None, Some(b)) => b.text.clone(),
                        (None, None) => String::new(),
                    };
                    let t = RichText::new(text).monospace();
                    ui.add(egui::Label::new(col.map_or(t.clone(), |c| t.color(c))).truncate());
                });
                let num =
                    |s: &Option<traces::diff::InstSide>,
                     f: &dyn Fn(&traces::diff::InstSide) -> String| {
                        s.as_ref().map_or("-".into(), f)
                    };
                for v in [
                    num(&r.a, &|s| s.count.to_string()),
                    num(&r.b, &|s| s.count.to_string()),
                    num(&r.a, &|s| s.total.to_string()),
                    num(&r.b, &|s| s.total.to_string()),
                ] {
                    row.col(|ui| {
                        ui.monospace(v);
                    });
                }
                row.col(|ui| {
                    ui.label(delta_text(
                        r.delta.total as f64,
                        format!("{:+}", r.delta.total),
                    ));
                });
                for v in [
                    num(&r.a, &|s| format!("{:.1}", s.mean)),
                    num(&r.b, &|s| format!("{:.1}", s.mean)),
                ] {
                    row.col(|ui| {
                        ui.monospace(v);
                    });
                }
                row.col(|ui| {
                    ui.label(delta_text(r.delta.mean, format!("{:+.1}", r.delta.mean)));
                });
            });
        });
    if let Some(c) = clicked {
        sort = match sort {
            Some((sc, desc)) if sc == c => Some((c, !desc)),
            // Numbers start largest first, names and addresses in order.
            _ => Some((c, c >= 4)),
        };
        ui.data_mut(|m| m.insert_temp(sort_id, sort));
    }
    true
}

/// Column titles of the compare table; [`sorted_order`] sorts by their index.
pub const COLUMNS: [&str; 12] = [
    "",
    "A",
    "B",
    "Instruction",
    "Hits A",
    "Hits B",
    "Total A",
    "Total B",
    "Δ total",
    "Mean A",
    "Mean B",
    "Δ mean",
];

/// Row indices of `rows` sorted by column `sort.0` (descending when `sort.1`); a side that is
/// missing sorts as the smallest value. `None`: the engine's order.
pub fn sorted_order(rows: &[traces::diff::InstDiff], sort: Option<(usize, bool)>) -> Vec<usize> {
    use std::cmp::Ordering;
    let mut order: Vec<usize> = (0..rows.len()).collect();
    let Some((col, desc)) = sort else {
        return order;
    };
    fn side(r: &traces::diff::InstDiff, b: bool) -> Option<&traces::diff::InstSide> {
        if b {
            r.b.as_ref()
        } else {
            r.a.as_ref()
        }
    }
    let addr = |s: Option<&traces::diff::InstSide>| s.and_then(|s| s.offset);
    let num = |r: &traces::diff::InstDiff| -> f64 {
        let f = |s: Option<&traces::diff::InstSide>, g: fn(&traces::diff::InstSide) -> f64| {
            s.map_or(f64::NEG_INFINITY, g)
        };
        match col {
            4 => f(side(r, false), |s| s.count as f64),
            5 => f(side(r, true), |s| s.count as f64),
            6 => f(side(r, false), |s| s.total as f64),
            7 => f(side(r, true), |s| s.total as f64),
            8 => r.delta.total as f64,
            9 => f(side(r, false), |s| s.mean),
            10 => f(side(r, true), |s| s.mean),
            _ => r.delta.mean,
        }
    };
    order.sort_by(|&x, &y| {
        let (a, b) = (&rows[x], &rows[y]);
        let o = match col {
            1 => addr(side(a, false)).cmp(&addr(side(b, false))),
            2 => addr(side(a, true)).cmp(&addr(side(b, true))),
            3 => {
                fn t(r: &traces::diff::InstDiff) -> Option<&str> {
                    r.a.as_ref().or(r.b.as_ref()).map(|s| s.text.as_str())
                }
                t(a).cmp(&t(b))
            }
            _ => num(a).total_cmp(&num(b)),
        };
        let o = if desc { o.reverse() } else { o };
        // Ties keep the aligned code order.
        o.then(a.position.cmp(&b.position)).then(Ordering::Equal)
    });
    order
}
