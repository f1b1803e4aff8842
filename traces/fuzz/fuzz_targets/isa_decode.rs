#![no_main]
//! Any bytes, any supported target: decoding and printing must never panic.
use libfuzzer_sys::fuzz_target;
use traces::GfxTarget;

fuzz_target!(|data: &[u8]| {
    for t in [GfxTarget::GFX1100, GfxTarget::GFX1200, GfxTarget::GFX950] {
        for line in traces::isa::disassemble(data, 0, t) {
            let _ = line.text();
            if let Ok(i) = &line.insn {
                let _ = i.operands();
            }
        }
    }
});
