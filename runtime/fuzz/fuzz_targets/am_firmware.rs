//! linux-firmware files: the first byte picks which of the six files of the (otherwise valid)
//! synthetic set the rest of the input replaces.
#![no_main]
use libfuzzer_sys::fuzz_target;
use runtime::emu::pci::firmware::{synthetic_files, FILES};
use runtime::pci::am::firmware::{Firmware, FirmwareNames};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let mut files = synthetic_files();
    let n = files.len();
    files[usize::from(pick) % n].1 = rest.to_vec();
    let names = FirmwareNames {
        sos: FILES[0].into(),
        smu: FILES[1].into(),
        sdma: FILES[2].into(),
        mec: FILES[3].into(),
        imu: FILES[4].into(),
        rlc: FILES[5].into(),
    };
    let _ = Firmware::parse_with(&names, &mut |n| {
        Ok(files
            .iter()
            .find(|f| f.0 == n)
            .map(|f| f.1.clone())
            .unwrap_or_default())
    });
});
