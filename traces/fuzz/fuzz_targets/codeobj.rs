#![no_main]
//! Any bytes as a code object: parse errors are fine, panics are not.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(co) = traces::isa::CodeObject::parse(data) {
        for k in &co.kernels {
            for line in traces::isa::disassemble(co.kernel_code(k), k.entry, co.target) {
                let _ = line.text();
            }
        }
    }
});
