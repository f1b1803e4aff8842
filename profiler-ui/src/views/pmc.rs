//! PMC counters of a kernel run: derived metrics (formulas in their tooltips), a table of totals
//! (with B and Δ in compare mode), and the selected counter per instance as a heat map of the
//! chip (rows SE/SA, columns WGP; cache blocks as one row of instances).

use egui::{Color32, RichText, Sense, Ui};
use egui_extras::{Column, TableBuilder};

use crate::data::{PmcCounter, PmcRow};

/// A derived metric: (label, formula shown in the tooltip, value).
fn derived(rows: &[PmcRow]) -> Vec<(&'static str, &'static str, Option<f64>)> {
    let get = |names: &[&str]| {
        rows.iter()
            .find(|r| names.contains(&r.name.as_str()))
            .map(|r| r.sum as f64)
    };
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let valu = get(&["SQ_INSTS_VALU"]);
    let busy = get(&["SQ_BUSY_CYCLES"]);
    let conflict = get(&["SQC_LDS_BANK_CONFLICT", "SQ_LDS_BANK_CONFLICT"]);
    let lds = get(&["SQC_LDS_IDX_ACTIVE", "SQ_LDS_IDX_ACTIVE"]);
    let hit = get(&["GL2C_HIT", "TCC_HIT"]);
    let miss = get(&["GL2C_MISS", "TCC_MISS"]);
    vec![
        (
            "VALU utilisation",
            "SQ_INSTS_VALU / (4 × SQ_BUSY_CYCLES)\nVALU instructions issued per SIMD-cycle while \
             the WGPs were busy (4 SIMDs per WGP, one VALU issue each per cycle; busy cycles are \
             summed over the WGP instances)",
            ratio(valu, busy.map(|b| 4.0 * b)),
        ),
        (
            "LDS bank-conflict rate",
            "SQC_LDS_BANK_CONFLICT / SQC_LDS_IDX_ACTIVE\nshare of the LDS's busy cycles spent \
             on bank conflicts (gfx9: SQ_LDS_*)",
            ratio(conflict, lds),
        ),
        (
            "L2 hit rate",
            "GL2C_HIT / (GL2C_HIT + GL2C_MISS)\n(gfx9: TCC_HIT / (TCC_HIT + TCC_MISS)); the \
             emulator has no cache model and counts neither",
            ratio(hit, hit.zip(miss).map(|(h, m)| h + m)),
        ),
    ]
}

fn pct(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{:.1}%", v * 100.0))
}

/// Heat color: dark blue (0) to yellow (max).
fn heat(f: f32) -> Color32 {
    let f = f.clamp(0.0, 1.0);
    Color32::from_rgb(
        (30.0 + 225.0 * f) as u8,
        (40.0 + 190.0 * f) as u8,
        (90.0 - 60.0 * f) as u8,
    )
}

/// The selected counter's instances as a grid: one row per (XCC, SE, SA) or per cache
/// instance, one cell per WGP.
fn heat_map(ui: &mut Ui, c: &PmcCounter) {
    let max = c
        .instances
        .iter()
        .map(|i| i.value)
        .max()
        .unwrap_or(0)
        .max(1) as f32;
    let banked = c
        .instances
        .iter()
        .any(|i| i.se > 0 || i.sa > 0 || i.wgp > 0);
    let mut rows: Vec<(String, Vec<&crate::data::PmcInstance>)> = Vec::new();
    for i in &c.instances {
        let label = if banked {
            format!("XCC{} SE{} SA{}", i.xcc, i.se, i.sa)
        } else {
            format!("XCC{}", i.xcc)
        };
        match rows.last_mut() {
            Some((l, v)) if *l == label => v.push(i),
            _ => rows.push((label, vec![i])),
        }
    }
    let unit = if banked { "WGP" } else { "instance" };
    ui.label(
        RichText::new(format!(
            "{} per {unit} (hover a cell; color scale 0 .. {})",
            c.name, max as u64
        ))
        .strong(),
    );
    let cell = egui::vec2(if banked { 34.0 } else { 22.0 }, 18.0);
    egui::ScrollArea::both().id_salt("pmc_heat").show(ui, |ui| {
        for (label, cells) in &rows {
            ui.horizontal(|ui| {
                ui.add_sized(
                    [110.0, cell.y],
                    egui::Label::new(RichText::new(label).monospace()),
                );
                for i in cells {
                    let (r, resp) = ui.allocate_exact_size(cell, Sense::hover());
                    ui.painter()
                        .rect_filled(r.shrink(1.0), 2.0, heat(i.value as f32 / max));
                    resp.on_hover_text(format!(
                        "{}: {}\nXCC {} instance {} SE {} SA {} WGP {}",
                        c.name, i.value, i.xcc, i.inst, i.se, i.sa, i.wgp
                    ));
                }
            });
        }
    });
}

/// `b`: the compared capture's counters of the matching kernel (compare mode).
pub fn show(
    ui: &mut Ui,
    kernel: &str,
    rows: &[PmcRow],
    counters: &[PmcCounter],
    b: Option<&[PmcRow]>,
    selected: &mut usize,
) {
    if rows.is_empty() {
        ui.label(format!("No PMC counters were captured for {kernel}."));
        return;
    }
    ui.heading(format!("PMC counters · {kernel}"));
    ui.horizontal_wrapped(|ui| {
        let bd = b.map(derived);
        for (k, (name, formula, v)) in derived(rows).into_iter().enumerate() {
            let text = match &bd {
                Some(bd) => format!("{name}: A {} · B {}", pct(v), pct(bd[k].2)),
                None => format!("{name}: {}", pct(v)),
            };
            ui.label(RichText::new(text).strong())
                .on_hover_text(formula);
            ui.separator();
        }
    });
    ui.label("Click a counter to map its per-instance values over the chip.");
    let table_h = (rows.len() as f32 * 18.0 + 26.0).min(ui.available_height() * 0.4);
    let cols: &[&str] = if b.is_some() {
        &["Counter", "Block", "A", "B", "Δ", "Max", "Instances"]
    } else {
        &["Counter", "Block", "Sum", "Max", "Non-zero", "Instances"]
    };
    ui.allocate_ui(egui::vec2(ui.available_width(), table_h), |ui| {
        TableBuilder::new(ui)
            .id_salt("pmc")
            .striped(true)
            .sense(Sense::click())
            .column(Column::auto().at_least(200.0))
            .column(Column::auto().at_least(60.0))
            .columns(Column::auto().at_least(90.0), cols.len() - 2)
            .header(18.0, |mut h| {
                for t in cols {
                    h.col(|ui| {
                        ui.strong(*t);
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
                    let vals: Vec<String> = match b {
                        Some(b) => {
                            let bv = b.iter().find(|x| x.name == r.name).map(|x| x.sum);
                            vec![
                                r.sum.to_string(),
                                bv.map_or("–".into(), |v| v.to_string()),
                                bv.map_or("–".into(), |v| {
                                    format!("{:+}", v as i128 - r.sum as i128)
                                }),
                                r.max.to_string(),
                                r.values.len().to_string(),
                            ]
                        }
                        None => vec![
                            r.sum.to_string(),
                            r.max.to_string(),
                            r.nonzero.to_string(),
                            r.values.len().to_string(),
                        ],
                    };
                    for v in vals {
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
    match counters.iter().find(|c| c.name == r.name) {
        Some(c) if !c.instances.is_empty() => heat_map(ui, c),
        _ => {
            ui.label(format!("{}: no per-instance samples", r.name));
        }
    }
}
