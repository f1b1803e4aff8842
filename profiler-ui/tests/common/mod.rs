//! Helpers shared by the headless UI tests.

use egui_kittest::Harness;
use profiler_ui::app::App;

/// Steps the app until its background work (loading, decoding, exports, compare) is done.
pub fn wait(h: &mut Harness<'static, App>) {
    for _ in 0..2000 {
        h.step();
        if !h.state().busy() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    h.run_steps(3);
}
