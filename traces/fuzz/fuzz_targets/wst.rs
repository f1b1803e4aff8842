//! The .wst readers (mapped and streaming) on arbitrary bytes; both must agree.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;

fuzz_target!(|data: &[u8]| {
    let mapped = traces::wst::read_store(Arc::new(traces::model::BlobStore::Owned(data.to_vec())));
    let streamed = traces::wst::read_from(data);
    if let (Ok(a), Ok(b)) = (&mapped, &streamed) {
        // (Whole models may hold NaN floats; the blobs must match.)
        assert_eq!(a.blobs, b.blobs);
    }
});
