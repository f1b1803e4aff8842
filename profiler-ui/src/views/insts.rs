//! Instruction views: the instructions of the selected wave, and the per-instruction timing
//! table of the whole kernel (every itraced SE), sortable, with the latency distribution.

use egui::{Color32, RichText, Ui};
use egui_extras::{Column, TableBuilder};

use super::sqtt::KernelView;
use crate::data::InstStat;

/// Sort column and direction of the instruction table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SortState {
    pub col: usize,
    pub desc: bool,
}

pub const COLUMNS: [&str; 13] = [
    "Instr",
    "Name",
    "Count",
    "Total clk",
    "Mean",
    "Min",
    "Median",
    "Max",
    "Share",
    "Stall",
    "Exposed",
    "Hidden",
    "Live V/S",
];

/// Colour of each hidden-latency class in the Hidden column's bar (`InstClass::ALL` order).
pub const CLASS_COLORS: [Color32; 7] = [
    Color32::from_rgb(90, 160, 230),
    Color32::from_rgb(120, 200, 120),
    Color32::from_rgb(230, 170, 60),
    Color32::from_rgb(190, 120, 220),
    Color32::from_rgb(80, 200, 200),
    Color32::from_rgb(220, 220, 90),
    Color32::from_rgb(150, 150, 150),
];

/// The kernel's latency and exposed cycles over the table's rows, as the header states them.
pub fn kernel_exposed(rows: &[InstStat]) -> (i64, i64) {
    (
        rows.iter().map(|r| r.total).sum(),
        rows.iter().map(|r| r.exposed).sum(),
    )
}

/// The header line above the instruction table.
pub fn latency_summary(rows: &[InstStat]) -> String {
    let (total, exposed) = kernel_exposed(rows);
    let hidden = total - exposed;
    let pct = if total > 0 {
        hidden as f64 * 100.0 / total as f64
    } else {
        0.0
    };
    format!("latency {total} clk · exposed {exposed} clk · hidden {hidden} clk ({pct:.1}%) by other waves on the same SIMD")
}

pub fn sort_rows(rows: &mut [InstStat], s: SortState) {
    let key_num = |r: &InstStat| {
        r.key
            .trim_start_matches('#')
            .trim_start_matches("0x")
            .to_string()
    };
    rows.sort_by(|a, b| {
        let o = match s.col {
            0 => {
                let (x, y) = (key_num(a), key_num(b));
                (x.len(), x).cmp(&(y.len(), y))
            }
            1 => a.name.cmp(&b.name),
            2 => a.count.cmp(&b.count),
            3 => a.total.cmp(&b.total),
            4 => a.mean.total_cmp(&b.mean),
            5 => a.min.cmp(&b.min),
            6 => a.median.cmp(&b.median),
            7 => a.max.cmp(&b.max),
            8 => a.share.total_cmp(&b.share),
            9 => a.stall_share.total_cmp(&b.stall_share),
            10 => a.exposed.cmp(&b.exposed),
            11 => a.hidden_share.total_cmp(&b.hidden_share),
            // Live registers: the app sorts by PC here (the rows carry no pressure).
            _ => a.pc.cmp(&b.pc),
        };
        if s.desc {
            o.reverse()
        } else {
            o
        }
    });
}

/// The instructions of the selected wave.
pub fn show_wave(ui: &mut Ui, kv: &KernelView) {
    let Some((se, w)) = kv.state.selected_wave else {
        ui.label("Click a wave to list its instructions.");
        return;
    };
    let (Some(s), Some(wave)) = (kv.data.ses.get(se), kv.wave(se, w)) else {
        return;
    };
    ui.strong(format!(
        "Wave #{w} · {} · WGP {} · SIMD {} · slot {}",
        kv.data.se_name(s.se),
        wave.cu,
        wave.simd,
        wave.slot
    ));
    ui.label(format!(
        "cycles {}..{} ({} cycles)",
        wave.start,
        wave.end,
        wave.end - wave.start
    ));
    let insts = kv.wave_insts(se, w);
    if insts.is_empty() {
        ui.label(if s.itrace {
            "No instruction tokens: only the traced SIMD's waves carry them."
        } else {
            "This SE was not instruction-traced (occupancy only)."
        });
        return;
    }
    ui.label(format!("{} instructions", insts.len()));
    TableBuilder::new(ui)
        .id_salt(("wave_insts", se, w))
        .striped(true)
        .column(Column::auto().at_least(28.0))
        .column(Column::auto().at_least(60.0))
        .column(Column::remainder().at_least(120.0))
        .column(Column::auto().at_least(70.0))
        .column(Column::auto().at_least(50.0))
        .header(18.0, |mut h| {
            for t in ["#", "PC", "Instruction", "Issue clk", "Gap"] {
                h.col(|ui| {
                    ui.strong(t);
                });
            }
        })
        .body(|body| {
            body.rows(16.0, insts.len(), |mut row| {
                let i = &insts[row.index()];
                row.col(|ui| {
                    ui.label(i.index.to_string());
                });
                row.col(|ui| {
                    ui.monospace(i.pc.map_or("-".into(), |p| format!("0x{p:x}")));
                });
                row.col(|ui| {
                    let text = i.disasm.clone().unwrap_or_else(|| i.name.clone());
                    ui.add(egui::Label::new(RichText::new(text).monospace()).truncate());
                });
                row.col(|ui| {
                    ui.monospace(i.cycle.to_string());
                });
                row.col(|ui| {
                    let c = if i.gap > 100 {
                        Color32::from_rgb(240, 120, 90)
                    } else {
                        ui.visuals().text_color()
                    };
                    ui.label(RichText::new(i.gap.to_string()).monospace().color(c));
                });
            });
        });
}

/// The aggregated instruction table; clicking a header sorts by it.
/// A click on a row selects it and its source line in the Source pane (`src`); rows of the
/// line selected there are highlighted and scrolled to.
/// The instruction table the analysis index saved, while the kernel's detail is decoded (most
/// expensive instructions first; the full, sortable table replaces it when the detail is in).
pub fn show_saved(ui: &mut Ui, k: &crate::data::IndexedKernel) {
    ui.label(format!(
        "{} instructions (saved analysis; decoding the detail) · {}",
        k.rows.len(),
        latency_summary(&k.rows)
    ));
    let mut order: Vec<&InstStat> = k.rows.iter().collect();
    order.sort_by_key(|r| std::cmp::Reverse(r.total));
    egui::ScrollArea::vertical().show(ui, |ui| {
        egui::Grid::new("saved_insts").striped(true).show(ui, |ui| {
            for h in ["Instr", "Name", "Count", "Total clk", "Share", "Exposed"] {
                ui.label(RichText::new(h).strong());
            }
            ui.end_row();
            // A bounded number of rows keeps this frame within budget on any program size.
            for r in order.iter().take(400) {
                ui.label(RichText::new(&r.key).monospace());
                ui.label(RichText::new(&r.name).monospace());
                ui.label(r.count.to_string());
                ui.label(r.total.to_string());
                ui.label(format!("{:.1}%", r.share * 100.0));
                ui.label(r.exposed.to_string());
                ui.end_row();
            }
        });
    });
}

pub fn show_table(
    ui: &mut Ui,
    kv: &mut KernelView,
    sort: &mut SortState,
    src: &mut super::source::SourceState,
) {
    let itraced: Vec<String> = kv
        .data
        .ses
        .iter()
        .filter(|s| s.itrace)
        .map(|s| s.se.to_string())
        .collect();
    ui.label(format!(
        "{} instructions from the itraced SEs {} · latency = cycles from the previous instruction's issue · stall = latency above the best case of the same token kind · instructions keyed by position in the wave (PCs when mapped)",
        kv.stats.len(),
        itraced.join(", ")
    ));
    super::occupancy::show(ui, kv);
    super::source::show(ui, kv.lines.as_ref(), &kv.stats, src);
    ui.label(latency_summary(&kv.stats));
    let live: std::collections::HashMap<u64, (u32, u32, String)> = kv
        .pressure
        .as_ref()
        .map(|p| {
            p.rows
                .iter()
                .map(|r| (r.pc, (r.vgprs, r.sgprs, r.specials())))
                .collect()
        })
        .unwrap_or_default();
    let ceiling = kv
        .pressure
        .as_ref()
        .map(|p| (p.vgpr_ceiling.unwrap_or(p.max_vgprs), p.sgpr_ceiling));
    let rows = &mut kv.stats;
    let mut clicked = None;
    let mut picked: Option<Option<u64>> = None;
    let max_share = rows.iter().map(|r| r.share).fold(0.0, f64::max).max(1e-9);
    let mut builder = TableBuilder::new(ui)
        .id_salt("inst_table")
        .striped(true)
        .sense(egui::Sense::click());
    if src.scroll_table {
        src.scroll_table = false;
        if let Some(i) = rows
            .iter()
            .position(|r| r.pc.is_some_and(|pc| src.selected_pcs.contains(&pc)))
        {
            builder = builder.scroll_to_row(i, Some(egui::Align::Center));
        }
    }
    builder
        .column(Column::auto().at_least(50.0))
        .column(Column::auto().at_least(340.0))
        .columns(Column::auto().at_least(60.0), 6)
        .column(Column::auto().at_least(110.0))
        .column(Column::auto().at_least(50.0))
        .column(Column::auto().at_least(70.0))
        .column(Column::auto().at_least(110.0))
        .column(Column::remainder().at_least(110.0))
        .header(20.0, |mut h| {
            for (ci, t) in COLUMNS.iter().enumerate() {
                h.col(|ui| {
                    let arrow = if sort.col == ci {
                        if sort.desc {
                            " v"
                        } else {
                            " ^"
                        }
                    } else {
                        ""
                    };
                    if ui
                        .button(RichText::new(format!("{t}{arrow}")).strong())
                        .clicked()
                    {
                        clicked = Some(ci);
                    }
                });
            }
        })
        .body(|body| {
            body.rows(17.0, rows.len(), |mut row| {
                let r = &rows[row.index()];
                let sel = r.pc.is_some_and(|pc| src.selected_pcs.contains(&pc));
                row.set_selected(sel);
                row.col(|ui| {
                    if ui
                        .selectable_label(sel, RichText::new(&r.key).monospace())
                        .on_hover_text("click: select this instruction's source line")
                        .clicked()
                    {
                        picked = Some(r.pc);
                    }
                });
                row.col(|ui| {
                    ui.add(egui::Label::new(RichText::new(&r.name).monospace()).truncate());
                });
                for v in [
                    r.count.to_string(),
                    r.total.to_string(),
                    format!("{:.1}", r.mean),
                    r.min.to_string(),
                    r.median.to_string(),
                    r.max.to_string(),
                ] {
                    row.col(|ui| {
                        ui.monospace(v);
                    });
                }
                row.col(|ui| {
                    ui.horizontal(|ui| {
                        let (rect, _) =
                            ui.allocate_exact_size(egui::vec2(60.0, 10.0), egui::Sense::hover());
                        let w = (r.share / max_share) as f32 * rect.width();
                        ui.painter().rect_filled(
                            egui::Rect::from_min_size(rect.min, egui::vec2(w, rect.height())),
                            2.0,
                            Color32::from_rgb(220, 110, 80),
                        );
                        ui.monospace(format!("{:.1}%", r.share * 100.0));
                    });
                });
                row.col(|ui| {
                    ui.monospace(format!("{:.0}%", r.stall_share * 100.0))
                        .on_hover_text(format!(
                            "{} of {} cycles waited before issue (above the best case of its token kind)",
                            r.stall, r.total
                        ));
                });
                row.col(|ui| {
                    ui.monospace(r.exposed.to_string());
                });
                row.col(|ui| {
                    hidden_bar(ui, r);
                });
                row.col(|ui| {
                    live_bar(ui, r.pc.and_then(|pc| live.get(&pc)), ceiling);
                });
                if row.response().clicked() {
                    picked = Some(r.pc);
                }
            });
        });
    if let Some(pc) = picked {
        src.select_pc(kv.lines.as_ref().and_then(|l| l.as_ref().ok()), pc);
    }
    if let Some(c) = clicked {
        if sort.col == c {
            sort.desc = !sort.desc;
        } else {
            *sort = SortState {
                col: c,
                desc: c >= 2,
            };
        }
        sort_rows(rows, *sort);
    }
}

/// The Hidden cell: a bar of the latency split by class (exposed left blank), the hidden
/// share, and the cycles per class on hover.
fn hidden_bar(ui: &mut Ui, r: &InstStat) {
    use crate::data::hidden::InstClass;
    ui.horizontal(|ui| {
        let (rect, resp) = ui.allocate_exact_size(egui::vec2(60.0, 10.0), egui::Sense::hover());
        ui.painter().rect_stroke(
            rect,
            2.0,
            (1.0, Color32::from_gray(90)),
            egui::StrokeKind::Inside,
        );
        let mut x = rect.min.x;
        if r.total > 0 {
            for (c, color) in InstClass::ALL.iter().zip(CLASS_COLORS) {
                let w = r.hidden.get(*c) as f32 / r.total as f32 * rect.width();
                ui.painter().rect_filled(
                    egui::Rect::from_min_size(
                        egui::pos2(x, rect.min.y),
                        egui::vec2(w, rect.height()),
                    ),
                    0.0,
                    color,
                );
                x += w;
            }
        }
        let mut tip = format!(
            "{} of {} cycles hidden by other waves' issues on the same SIMD; {} exposed",
            r.total - r.exposed,
            r.total,
            r.exposed
        );
        for c in InstClass::ALL {
            tip.push_str(&format!("\n{}: {}", c.name(), r.hidden.get(c)));
        }
        resp.on_hover_text(tip.clone());
        ui.monospace(format!("{:.0}%", r.hidden_share * 100.0))
            .on_hover_text(tip);
    });
}

/// The Live V/S cell: live VGPRs as a bar against the kernel's allocation, and the counts.
fn live_bar(ui: &mut Ui, live: Option<&(u32, u32, String)>, ceiling: Option<(u32, Option<u32>)>) {
    let Some((v, s, special)) = live else {
        ui.weak("-");
        return;
    };
    let (v, s) = (*v, *s);
    let (vc, sc) = ceiling.unwrap_or((v, None));
    ui.horizontal(|ui| {
        let (rect, resp) = ui.allocate_exact_size(egui::vec2(40.0, 10.0), egui::Sense::hover());
        ui.painter().rect_stroke(
            rect,
            2.0,
            (1.0, Color32::from_gray(90)),
            egui::StrokeKind::Inside,
        );
        let f = v as f32 / vc.max(1) as f32;
        ui.painter().rect_filled(
            egui::Rect::from_min_size(
                rect.min,
                egui::vec2(rect.width() * f.min(1.0), rect.height()),
            ),
            2.0,
            Color32::from_rgb(150, 120, 220),
        );
        let tip = format!(
            "{v} VGPRs live of {vc} allocated; {s} SGPRs live{} (VCC's pair included when live)\nspecial registers live: {}",
            sc.map_or(String::new(), |c| format!(" of {c}")),
            if special.is_empty() { "none" } else { special }
        );
        resp.on_hover_text(tip.clone());
        // EXEC is live wherever vector code follows: the tooltip has it, the cell the others.
        let shown: Vec<&str> = special.split(' ').filter(|r| !r.is_empty() && *r != "EXEC").collect();
        let text = if shown.is_empty() {
            format!("{v}/{s}")
        } else {
            format!("{v}/{s} {}", shown.join(" "))
        };
        ui.monospace(text).on_hover_text(tip);
    });
}
