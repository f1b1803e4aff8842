//! The runtime's host-side ranges are drawn as the CPU track of the timeline: first (host tracks
//! before devices), with spans the accessibility tree names, and at the default zoom (fitted to
//! the GPU work) the host ranges around the kernels are wide enough to carry their names.

mod common;

use common::wait;
use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use profiler_ui::app::App;
use profiler_ui::layout::timeline::{Target, TimelineModel};
use profiler_ui::views::timeline::TimelineState;

#[test]
fn cpu_track_is_drawn_with_legible_names() {
    let dir = tempfile::tempdir().unwrap();
    let wst = dir.path().join("demo.wst");
    let opts = capture::CaptureOptions {
        devices: vec![capture::DeviceSpec::Emu],
        wst: Some(wst.clone()),
        ..Default::default()
    };
    let r = capture::run_demo(&opts, &mut |_, _, _| {}).unwrap();

    // The model: the CPU track comes first and holds every host range.
    let m = TimelineModel::build(&r.profile);
    assert_eq!(m.tracks[0].name, "CPU");
    let cpu = r.profile.find_device(0, "CPU").unwrap();
    let host: usize = r.profile.ranges.iter().filter(|x| x.device == cpu).count();
    let spans: usize = m.tracks[0].levels.iter().map(|l| l.spans.len()).sum();
    assert_eq!(spans, host);

    // At the default zoom, the view the GPU work fills: the host ranges there that are wide
    // enough for a label (the timeline writes a name on spans wider than 30 px; the view is
    // over 1000 px wide here, so 3% of it is safe).
    let st = TimelineState::new(&m, Vec::new());
    let view = st.view.end - st.view.start;
    let legible: Vec<String> = m.tracks[0]
        .levels
        .iter()
        .flat_map(|l| &l.spans)
        .filter(|s| {
            // On the view's axis (idle gaps collapsed), as the timeline draws them.
            let ax = st.axis(&m);
            let (a, b) = (
                ax.to_axis(s.start).max(st.view.start),
                ax.to_axis(s.end).min(st.view.end),
            );
            b - a > 0.03 * view && matches!(s.target, Target::Range(_))
        })
        .map(|s| m.name(s.name).to_string())
        .filter(|n| n != "capture")
        .collect();
    assert!(
        !legible.is_empty(),
        "no legible host range at the default zoom: {legible:?}"
    );

    // The app draws them: every legible one is a labelled span in the accessibility tree.
    let app = App::with_config_dir(Some(wst), None);
    let mut h = Harness::builder()
        .with_size(egui::vec2(1500.0, 950.0))
        .build_ui_state(|ui, app: &mut App| app.show(ui), app);
    wait(&mut h);
    assert!(h.query_by_label("range capture").is_some());
    for n in &legible {
        assert!(
            h.query_all_by_label(&format!("range {n}")).next().is_some(),
            "host range {n:?} not drawn"
        );
    }
}
