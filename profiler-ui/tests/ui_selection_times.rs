//! The timeline's selection panel gives times from the capture's start (its earliest event),
//! not absolute microseconds; the absolute times and the GPU ticks are on hover. On the shared
//! gemm capture, for a kernel and a host range, the expected offsets are computed here from
//! the profile's own events.

mod common;

use common::wait;
use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use profiler_ui::app::App;
use profiler_ui::layout::ruler::format_us;
use profiler_ui::layout::timeline::Target;
use traces::model::Time;

#[test]
fn selection_times_are_relative_with_absolute_ticks_on_hover() {
    let Some(dir) = testdata::require_shared("traces/gfx1100/gemm_run_0") else {
        return;
    };
    let path = dir.join("profile.pkl");
    let (_, p) = traces::open::open_path(&path).unwrap();
    // The capture's start: its earliest range, kernel or point event.
    let t0 = p
        .ranges
        .iter()
        .map(|r| r.start)
        .chain(p.kernels.iter().map(|k| k.start))
        .chain(p.points.iter().map(|e| e.ts))
        .min()
        .unwrap();
    let rel = |t: Time| format_us((t.0 - t0.0) as f64 / 1e6);

    let app = App::with_config_dir(Some(path.clone()), None);
    let mut h = Harness::builder()
        .with_size(egui::vec2(1500.0, 950.0))
        .build_ui_state(|ui, app: &mut App| app.show(ui), app);
    wait(&mut h);
    // Tooltips right away (egui waits half a second of a still pointer by default).
    h.ctx.global_style_mut(|s| {
        s.interaction.tooltip_delay = 0.0;
        s.interaction.show_tooltips_only_when_still = false;
    });

    // A kernel with GPU ticks.
    let (ki, k) = p
        .kernels
        .iter()
        .enumerate()
        .find(|(_, k)| k.gpu_start.is_some() && k.gpu_end.is_some() && k.end.is_some())
        .expect("a kernel with GPU ticks");
    h.state_mut().loaded_mut().unwrap().tl.selected = Some(Target::Kernel(ki as u32));
    h.run_steps(3);
    let want = format!(
        "at {} … {} from the capture's start",
        rel(k.start),
        rel(k.end.unwrap())
    );
    // Well under the absolute value's magnitude (tens of millions of µs on this capture).
    assert!(k.start.0 - t0.0 < k.start.0 / 1000, "{want}");
    h.get_by_label(&want).hover();
    h.run_steps(3);
    let ticks = format!("GPU ticks {}..{}", k.gpu_start.unwrap(), k.gpu_end.unwrap());
    assert!(
        h.query_by_label_contains(&ticks).is_some(),
        "no {ticks:?} on hover"
    );
    assert!(h
        .query_by_label_contains(&format!("absolute: start {} µs", k.start))
        .is_some());
    // The absolute start is no longer the panel's text.
    assert!(h.query_by_label(&format!("start {} µs", k.start)).is_none());

    // A range: the same, with its absolute start on hover.
    let (ri, r) = p
        .ranges
        .iter()
        .enumerate()
        .find(|(_, r)| r.end.is_some())
        .expect("a closed range");
    h.state_mut().loaded_mut().unwrap().tl.selected = Some(Target::Range(ri as u32));
    h.run_steps(3);
    let want = format!(
        "at {} … {} from the capture's start",
        rel(r.start),
        rel(r.end.unwrap())
    );
    h.get_by_label(&want).hover();
    h.run_steps(3);
    assert!(h
        .query_by_label_contains(&format!("absolute: start {} µs", r.start))
        .is_some());
}
