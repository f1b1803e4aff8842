//! The pickle VM and the tinygrad mapping on arbitrary bytes: errors, never panics or hangs.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;

fuzz_target!(|data: &[u8]| {
    let _ = traces::pickle::parse(data);
    let _ = traces::tinygrad::import(
        Arc::new(traces::model::BlobStore::Owned(data.to_vec())),
        "fuzz.pkl",
    );
});
