//! Every wire-format parser of both firmwares (the fake bridge and the gadget parse what the
//! host sends; the host parses completions and sense data).
#![no_main]
use libfuzzer_sys::fuzz_target;
use usb::proto::{Cdb, CommandIu, Completion, ControlSetup, Request, SenseIu};

fuzz_target!(|data: &[u8]| {
    let _ = Cdb::parse(data);
    let _ = CommandIu::parse(data);
    let _ = SenseIu::parse(data);
    let _ = Completion::parse(data);
    if let Ok(setup) = ControlSetup::from_bytes(data) {
        let _ = Request::parse(&setup, data.get(8..).unwrap_or_default());
    }
});
