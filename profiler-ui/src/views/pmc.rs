//! PMC counters of a kernel run: a table of sums and a bar chart of one counter's samples.

use egui::Ui;
use egui_extras::{Column, TableBuilder};
use egui_plot::{Bar, BarChart, Plot};

use crate::data::PmcRow;

pub fn show(ui: &mut Ui, kernel: &str, rows: &[PmcRow], selected: &mut usize) {
    if rows.is_empty() {
        ui.label(format!("No PMC counters were captured for {kernel}."));
        return;
    }
    ui.heading(format!("PMC counters · {kernel}"));
    ui.label("Click a counter to chart its per-sample values (one bar per SE/SA/WGP slot).");
    let table_h = (rows.len() as f32 * 18.0 + 26.0).min(ui.available_height() * 0.45);
    ui.allocate_ui(egui::vec2(ui.available_width(), table_h), |ui| {
        TableBuilder::new(ui)
            .id_salt("pmc")
            .striped(true)
            .sense(egui::Sense::click())
            .column(Column::auto().at_least(200.0))
            .column(Column::auto().at_least(60.0))
            .columns(Column::auto().at_least(90.0), 4)
            .header(18.0, |mut h| {
                for t in ["Counter", "Block", "Sum", "Max", "Non-zero", "Samples"] {
                    h.col(|ui| {
                        ui.strong(t);
                    });
                }
            })
            .body(|body| {
                body.rows(18.0, rows.len(), |mut row| {
                    let i = row.index();
                    let r = &rows[i];
                    row.set_selected(i == *selected);
                    row.col(|ui| {
                        ui.monospace(&r.name);
                    });
                    row.col(|ui| {
                        ui.label(&r.block);
                    });
                    for v in [
                        r.sum.to_string(),
                        r.max.to_string(),
                        r.nonzero.to_string(),
                        r.values.len().to_string(),
                    ] {
                        row.col(|ui| {
                            ui.monospace(v);
                        });
                    }
                    if row.response().clicked() {
                        *selected = i;
                    }
                });
            });
    });
    ui.separator();
    let Some(r) = rows.get(*selected) else { return };
    ui.strong(format!("{} per sample", r.name));
    let bars: Vec<Bar> = r
        .values
        .iter()
        .enumerate()
        .map(|(i, &v)| Bar::new(i as f64, v as f64).width(0.8))
        .collect();
    Plot::new("pmc_bars")
        .x_axis_label("sample slot")
        .y_axis_label(r.name.clone())
        .include_y(0.0)
        .show(ui, |pu| {
            pu.bar_chart(
                BarChart::new(r.name.clone(), bars).color(egui::Color32::from_rgb(90, 150, 220)),
            )
        });
}
