//! The timeline opens fitted to where the GPU worked (kernels and copies), not to the whole
//! capture: on the shared gemm profile, the host-side ranges span far more than the kernel.

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
        m.end - m.start > (hi - lo) * 1.5,
        "capture {}..{}",
        m.start,
        m.end
    );
}
