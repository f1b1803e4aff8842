//! Instruction views: the instructions of the selected wave, and the per-instruction timing
//! table of the whole kernel (every itraced SE), sortable, with the latency distribution.

use egui::{Color32, RichText, Ui};
use egui_extras::{Column, TableBuilder};

use super::sqtt::KernelView;
use crate::data::{wave_insts, InstStat};

/// Sort column and direction of the instruction table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SortState {
    pub col: usize,
    pub desc: bool,
}

pub const COLUMNS: [&str; 10] = [
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
];

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
            _ => a.stall_share.total_cmp(&b.stall_share),
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
    let s = &kv.data.ses[se];
    let Some(wave) = s.analysis.waves.get(w as usize) else {
        return;
    };
    ui.strong(format!(
        "Wave #{w} · SE {} · WGP {} · SIMD {} · slot {}",
        s.se, wave.cu, wave.simd, wave.wave
    ));
    ui.label(format!(
        "cycles {}..{} ({} cycles)",
        wave.start,
        wave.end,
        wave.end - wave.start
    ));
    let insts = wave_insts(&kv.data, se, w as usize);
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
pub fn show_table(ui: &mut Ui, kv: &mut KernelView, sort: &mut SortState) {
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
    let rows = &mut kv.stats;
    let mut clicked = None;
    let max_share = rows.iter().map(|r| r.share).fold(0.0, f64::max).max(1e-9);
    TableBuilder::new(ui)
        .id_salt("inst_table")
        .striped(true)
        .column(Column::auto().at_least(50.0))
        .column(Column::auto().at_least(340.0))
        .columns(Column::auto().at_least(60.0), 6)
        .column(Column::auto().at_least(110.0))
        .column(Column::remainder().at_least(60.0))
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
                row.col(|ui| {
                    ui.monospace(&r.key);
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
            });
        });
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
