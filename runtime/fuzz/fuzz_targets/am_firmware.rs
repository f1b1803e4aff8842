//! linux-firmware files: the first byte picks which of the six files of the (otherwise valid)
//! synthetic set the rest of the input replaces.
#![no_main]
use libfuzzer_sys::fuzz_target;
use emu::pci::firmware::{names, synthetic_files};
use runtime::pci::am::firmware::Firmware;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let mut files = synthetic_files();
    let n = files.len();
    files[usize::from(pick) % n].1 = rest.to_vec();
    let _ = Firmware::parse_with(&names(), &mut |n| {
        Ok(files
            .iter()
            .find(|f| f.0 == n)
            .map(|f| f.1.clone())
            .unwrap_or_default())
    });
});
