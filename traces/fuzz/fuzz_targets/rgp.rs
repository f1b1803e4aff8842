//! The .rgp chunk walker and importer; an imported model must also export again.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;

fuzz_target!(|data: &[u8]| {
    let _ = traces::rgp::list_chunks(data);
    if let Ok(p) = traces::rgp::import(
        Arc::new(traces::model::BlobStore::Owned(data.to_vec())),
        "fuzz.rgp",
    ) {
        let _ = traces::rgp::export(&p, &Default::default());
    }
});
