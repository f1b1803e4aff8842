//! Big captures for the scale benchmark and the memory-limit test: the real gfx1100 gemm of
//! `../shared/traces/gfx1100/gemm_run_0`, every SE stream tiled in time
//! ([`traces::sqtt::synth::tile`]) to about the requested total, memory-mapped back (never held
//! in memory) and written as a `.wst`.

use std::io::Write;
use std::path::{Path, PathBuf};

use traces::model::{Blob, Profile};
use traces::sqtt::synth;

/// The capture every big one is tiled from.
pub const SOURCE: &str = "traces/gfx1100/gemm_run_0/profile.pkl";

/// Builds a capture of about `bytes` of SQTT from `src` (a capture with SQTT, normally
/// [`SOURCE`]) in `dir`; returns its path and SQTT bytes.
pub fn build_capture(src: &Path, dir: &Path, bytes: u64) -> (PathBuf, u64) {
    let (_, p) = traces::open::open_path(src)
        .unwrap_or_else(|e| panic!("{}: {e} (the shared captures are needed)", src.display()));
    let mut out: Profile = p.clone();
    let n = out.sqtt.len().max(1) as u64;
    let mut total = 0;
    let mut reps_max = 1;
    for i in 0..out.sqtt.len() {
        let s = out.sqtt[i].clone();
        let path = dir.join(format!("se{}_{i}.sqtt", s.se));
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let (len, reps) = synth::tile(p.blob(s.blob), bytes / n, &mut f).unwrap();
        f.flush().unwrap();
        drop(f);
        total += len;
        reps_max = reps_max.max(reps);
        let store = traces::open::map_file(&path).unwrap();
        let blob = Blob::slice_of(&store, 0..store.bytes().len()).unwrap();
        out.sqtt[i].blob = out.add_blob(blob);
    }
    for k in &mut out.kernels {
        if let (Some(a), Some(b)) = (k.gpu_start, k.gpu_end) {
            k.gpu_end = Some(a + (b - a) * reps_max as i128);
        }
    }
    let wst = dir.join("big.wst");
    traces::wst::write_file(&out, &wst).unwrap();
    (wst, total)
}

/// The capture [`build_capture`] wrote in `dir` (`big.wst` and its streams) with every SQTT
/// stream cut at nine tenths of its length, at a 32-byte unit (no decoder warning of its own):
/// what trace buffers that filled leave, waves started and never ended in every SE. Written
/// beside it as `cut.wst`, its streams mapped from the same files; returns its path and SQTT
/// bytes.
#[allow(dead_code)] // The scale bench's; the memory test shares the module.
pub fn cut_capture(dir: &Path) -> (PathBuf, u64) {
    let (_, mut p) = traces::open::open_path(&dir.join("big.wst")).unwrap();
    let mut total = 0;
    for i in 0..p.sqtt.len() {
        let path = dir.join(format!("se{}_{i}.sqtt", p.sqtt[i].se));
        let store = traces::open::map_file(&path).unwrap();
        let cut = (store.bytes().len() / 10 * 9) & !31;
        total += cut as u64;
        // In place, so the written file holds only the cut streams.
        p.blobs[p.sqtt[i].blob.0 as usize] = Blob::slice_of(&store, 0..cut).unwrap();
    }
    let wst = dir.join("cut.wst");
    traces::wst::write_file(&p, &wst).unwrap();
    (wst, total)
}
