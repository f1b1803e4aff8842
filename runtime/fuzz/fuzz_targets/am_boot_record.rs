//! The partial boot's record read from VRAM (a previous session's page: trusted for nothing).
#![no_main]
use libfuzzer_sys::fuzz_target;
use runtime::pci::am::boot::BootRecord;

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = BootRecord::parse(data) {
        // What parses encodes back to the same record.
        let mut page = r.encode();
        page.resize(0x1000, 0);
        assert_eq!(BootRecord::parse(&page).as_ref(), Ok(&r));
    }
});
