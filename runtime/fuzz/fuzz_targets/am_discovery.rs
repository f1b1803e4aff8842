//! The IP discovery table read from the GPU's VRAM (the PCI path trusts nothing it reads).
#![no_main]
use libfuzzer_sys::fuzz_target;
use runtime::pci::am::discovery::Discovery;

fuzz_target!(|data: &[u8]| {
    if let Ok(d) = Discovery::parse(data, 0) {
        let _ = d.props();
    }
});
