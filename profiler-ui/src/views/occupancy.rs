//! The occupancy pane (above the instruction table): theoretical waves per SIMD with each
//! resource's limit, the limiting one and what changing it gives; achieved occupancy per SE.

use egui::{Color32, RichText, Ui};

use super::sqtt::KernelView;

pub fn show(ui: &mut Ui, kv: &KernelView) {
    let title = match &kv.theoretical {
        Some(o) => format!(
            "Occupancy: {} of {} waves per SIMD ({})",
            o.waves_per_simd,
            o.max_waves_per_simd,
            if o.limited_by.is_empty() {
                "no resource limits it".to_string()
            } else {
                format!("limited by {}", o.limited_by.join(", "))
            }
        ),
        None => "Occupancy: theoretical unknown (no code object or unknown architecture)".into(),
    };
    egui::CollapsingHeader::new(RichText::new(title).strong())
        .id_salt("occupancy_pane")
        .default_open(true)
        .show(ui, |ui| {
            if let Some(o) = &kv.theoretical {
                let r = &o.resources;
                ui.label(format!(
                    "{} · wave{} · {} VGPRs · {} SGPRs · {} B LDS · {} B scratch · work-group {}",
                    o.target,
                    r.wave_size,
                    r.vgprs,
                    r.sgprs.map_or("?".into(), |s| s.to_string()),
                    r.lds_bytes,
                    r.scratch_bytes,
                    r.workgroup_size.map_or("?".into(), |s| s.to_string()),
                ));
                egui::Grid::new("occupancy_limits")
                    .striped(true)
                    .show(ui, |ui| {
                        for h in ["resource", "waves/SIMD", "", "how", "to get more"] {
                            ui.strong(h);
                        }
                        ui.end_row();
                        for l in &o.limits {
                            let limiting = o.limited_by.contains(&l.resource);
                            let color = if limiting {
                                Color32::from_rgb(240, 120, 90)
                            } else {
                                ui.visuals().text_color()
                            };
                            ui.label(RichText::new(l.resource).color(color));
                            ui.monospace(l.waves_per_simd.to_string());
                            let (rect, _) = ui
                                .allocate_exact_size(egui::vec2(120.0, 10.0), egui::Sense::hover());
                            let w = l.waves_per_simd as f32 / o.max_waves_per_simd.max(1) as f32;
                            ui.painter().rect_filled(
                                egui::Rect::from_min_size(
                                    rect.min,
                                    egui::vec2(rect.width() * w.min(1.0), rect.height()),
                                ),
                                2.0,
                                if limiting {
                                    Color32::from_rgb(220, 110, 80)
                                } else {
                                    Color32::from_rgb(90, 160, 230)
                                },
                            );
                            ui.label(&l.detail);
                            ui.label(l.next_step.clone().unwrap_or_default());
                            ui.end_row();
                        }
                    });
                for n in &o.notes {
                    ui.weak(n);
                }
            }
            if kv.achieved.per_se.is_empty() {
                ui.label("Achieved: no waves.");
            } else {
                let parts: Vec<String> = kv
                    .achieved
                    .per_se
                    .iter()
                    .map(|s| {
                        format!(
                            "{} {:.2} (peak {}, {} SIMDs)",
                            match kv.data.se_layout {
                                Some(_) => kv.data.se_name(s.se),
                                None => format!("SE{}", s.se),
                            },
                            s.mean_waves_per_simd,
                            s.peak_waves_per_simd,
                            s.simds
                        )
                    })
                    .collect();
                ui.label(format!(
                    "Achieved waves per SIMD over each SE's wave span: {}",
                    parts.join(" · ")
                ));
            }
        });
}
