//! Pure geometry and level-of-detail code: no egui `Ui`, so it can be tested and benchmarked
//! headless. The views in `crate::views` turn its output into shapes.

pub mod lod;
pub mod ruler;
pub mod sqtt;
pub mod timeline;
pub mod traced;
pub mod view;
