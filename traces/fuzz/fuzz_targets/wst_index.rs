//! The .wst analysis index reader on arbitrary bytes: as a whole file (container, then index)
//! and as a bare index section (for metadata of zero bytes); every table read, no panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use traces::wst::index::{IndexError, IndexView};

fn read_all(idx: &IndexView<'_>) -> Result<usize, IndexError> {
    let mut n = 0;
    for e in idx.entries()? {
        n += e.rows()?.len();
        if let Some(w) = e.wave_splits() {
            n += w?.len();
        }
        let mut lives = Vec::new();
        for s in idx.ses(&e)? {
            let waves = s.waves()?;
            n += waves.len() + s.overview().len();
            lives.push(waves.iter().map(|w| (w.start, w.end)).collect::<Vec<_>>());
            // What `stats --json` and `diff` compute from the saved waves.
            let mut occ = traces::analysis::occupancy::Achieved::default();
            traces::analysis::occupancy::achieved_se(&mut occ, 0, waves.iter().map(|w| w.life()));
        }
        let _ = traces::diff::waves_in_flight_of(lives.iter().map(|l| l.iter().copied()));
    }
    Ok(n)
}

fuzz_target!(|data: &[u8]| {
    if let Ok(Some(idx)) = traces::wst::read_index(data) {
        let _ = read_all(&idx);
    }
    if let Ok(idx) = IndexView::parse(data, 0, &[]) {
        let _ = read_all(&idx);
    }
});
