//! The .wst analysis index reader on arbitrary bytes: as a whole file (container, then index)
//! and as a bare index section (for metadata of zero bytes); every table read, no panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use traces::wst::index::{IndexError, IndexView};

fn read_all(idx: &IndexView<'_>) -> Result<usize, IndexError> {
    let mut n = 0;
    for e in idx.entries()? {
        n += e.rows()?.len();
        for s in idx.ses(&e)? {
            n += s.waves()?.len() + s.overview().len();
        }
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
