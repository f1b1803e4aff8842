//! The timeline opens fitted to where the GPU worked (kernels and copies), not to the whole
//! capture: on the shared gemm profile, the host-side ranges span far more than the kernel.

mod common;

use profiler_ui::layout::timeline::{Target, TimelineModel};
use profiler_ui::views::timeline::TimelineState;

#[test]
fn opens_fitted_to_the_gpu_work() {
    let Some(dir) = testdata::require_shared("traces/gfx1100/gemm_run_0") else {
        return;
    };
    let (_, p) = traces::open::open_path(&dir.join("profile.pkl")).unwrap();
    let m = TimelineModel::build(&p);
    // Every kernel and GPU-side range, from the model's spans.
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for t in &m.tracks {
        for l in &t.levels {
            for s in &l.spans {
                let gpu = match s.target {
                    Target::Kernel(_) => true,
                    Target::Range(r) => p.props_device(p.ranges[r as usize].device).is_some(),
                };
                if gpu {
                    lo = lo.min(s.start);
                    hi = hi.max(s.end);
                }
            }
        }
    }
    assert!(hi > lo);
    let st = TimelineState::new(&m, Vec::new());
    // The view is on the time axis (long idle gaps collapsed): compare there.
    let ax = st.axis(&m);
    let (true_lo, true_hi) = (lo, hi);
    let (lo, hi) = (ax.to_axis(lo), ax.to_axis(hi));
    assert!(
        st.view.start <= lo && st.view.end >= hi,
        "{:?} vs {lo}..{hi}",
        st.view
    );
    // The GPU work fills most of the width (5% margins each side).
    let fill = (hi - lo) / (st.view.end - st.view.start);
    assert!(fill > 0.85, "GPU work fills {fill:.2} of the view");
    // And the whole capture is wider than that (the point of fitting).
    assert!(
        m.end - m.start > (true_hi - true_lo) * 1.5,
        "capture {}..{}",
        m.start,
        m.end
    );
}

/// The demo on the emulated GPU: its kernels run a few µs each, milliseconds of host time apart
/// (the interpreter runs in real time and the emulated clock follows it while idle). The app
/// opens with those idle gaps collapsed: at the default window size every kernel is wide enough
/// to carry its name and duration, and each break is labelled with the true gap, computed here
/// from the profile's own times (not from the axis).
#[test]
fn demo_opens_with_its_kernels_filling_the_width() {
    use egui_kittest::kittest::Queryable;
    use egui_kittest::Harness;
    use profiler_ui::app::App;
    use profiler_ui::layout::ruler::format_us;
    use traces::model::Time;

    let dir = tempfile::tempdir().unwrap();
    let wst = dir.path().join("demo.wst");
    let opts = capture::CaptureOptions {
        devices: vec![capture::DeviceSpec::Emu],
        wst: Some(wst.clone()),
        ..Default::default()
    };
    let r = capture::run_demo(&opts, &mut |_, _, _| {}).unwrap();
    let p = &r.profile;
    assert!(p.kernels.len() >= 3, "{} kernels", p.kernels.len());

    // GPU work from the profile: kernels and ranges on GPU devices (copies), in µs.
    let us = |t: Time| t.0 as f64 / Time::PS_PER_US as f64;
    let mut work: Vec<(f64, f64)> = p
        .kernels
        .iter()
        .map(|k| (us(k.start), us(k.end.unwrap_or(k.start))))
        .chain(
            p.ranges
                .iter()
                .filter(|x| p.props_device(x.device).is_some())
                .map(|x| (us(x.start), us(x.end.unwrap_or(x.start)))),
        )
        .collect();
    work.sort_by(|a, b| a.0.total_cmp(&b.0));
    let longest = work.iter().map(|w| w.1 - w.0).fold(0.0, f64::max);
    // The premise: some gap between GPU work is far longer than any of the work.
    let mut true_gaps: Vec<f64> = Vec::new();
    let mut end = work[0].1;
    for w in &work[1..] {
        if w.0 - end > 100.0 * longest {
            true_gaps.push(w.0 - end);
        }
        end = end.max(w.1);
    }
    assert!(!true_gaps.is_empty(), "no long idle gap in {work:?}");

    let app = App::with_config_dir(Some(wst), None);
    let size = egui::vec2(1600.0, 1000.0); // `wavescope open`'s default window
    let mut h = Harness::builder()
        .with_size(size)
        .build_ui_state(|ui, app: &mut App| app.show(ui), app);
    common::wait(&mut h);

    // Every kernel is wide and labelled with its name and true duration.
    let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
    for k in &p.kernels {
        let name = format!("kernel {}", k.name);
        let rect = h.get_by_label(&name).rect();
        let w = rect.width();
        // The demo's host gaps vary run to run (real time): 49 to 120 px seen for vadd.
        assert!(w >= 40.0, "kernel {} is {w:.1} px wide", k.name);
        lo = lo.min(rect.left());
        hi = hi.max(rect.right());
        let dur = us(k.end.unwrap()) - us(k.start);
        // Its name is drawn whole, with the duration where that fits too.
        let label = format!("{} · {}", k.name, format_us(dur));
        assert!(
            h.query_by_label(&label).is_some() || h.query_by_label(&k.name).is_some(),
            "neither {label:?} nor its name drawn"
        );
    }
    // From the first kernel to the last they span most of the window.
    assert!(
        hi - lo > 0.5 * size.x,
        "kernels span {lo:.0}..{hi:.0} px of {}",
        size.x
    );
    // Each long gap between kernels and copies is a break carrying its true length (a break
    // too narrow for text still names it to the accessibility tree and its tooltip), and the
    // longest one, the widest break, has it drawn. How wide each break is depends on the run's
    // host timing (23 gaps share the collapsed width), so only the longest is pinned to text.
    let drawn = |d: &str| {
        h.query_by_label(&format!("… {d} idle …")).is_some() || h.query_by_label(d).is_some()
    };
    for g in &true_gaps {
        let d = format_us(*g);
        assert!(
            drawn(&d) || h.query_by_label(&format!("idle break {d}")).is_some(),
            "no break for the {d} gap (gaps {true_gaps:?})"
        );
    }
    let longest_gap = true_gaps.iter().copied().fold(0.0, f64::max);
    assert!(
        drawn(&format_us(longest_gap)),
        "the longest gap's break ({}) has no drawn label",
        format_us(longest_gap)
    );

    // Unticking "Collapse idle time" shows the true scale: the kernels shrink to slivers.
    h.get_by_label_contains("Collapse idle time").click();
    h.run_steps(3);
    let name = format!("kernel {}", p.kernels[0].name);
    let w = h.query_by_label(&name).map_or(0.0, |n| n.rect().width());
    assert!(w < 60.0, "at true scale kernel 0 is still {w:.1} px wide");
}
