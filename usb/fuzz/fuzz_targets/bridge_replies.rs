//! The host side of the bridge against a device that answers whatever the fuzzer scripts.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../../tests/common/replies.rs"]
mod replies;

fuzz_target!(|data: &[u8]| {
    let _ = replies::drive(data);
});
