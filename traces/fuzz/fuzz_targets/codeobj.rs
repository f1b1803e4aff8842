//! The one code-object reader on arbitrary bytes: it must return a value or an error, never
//! panic, hang or allocate without bound; with and without a target from the caller, and
//! whatever it returns must disassemble and slice without panicking either; the loader's view
//! (`parse_loaded`, `load_image`: relocatable objects linked) likewise.
#![no_main]

use libfuzzer_sys::fuzz_target;
use traces::isa::{self, codeobj, CodeObject};
use traces::GfxTarget;

fuzz_target!(|data: &[u8]| {
    let _ = codeobj::image_len(data);
    // The loader's view: relocatable objects linked, the image bounded.
    if let Ok(c) = CodeObject::parse_loaded(data) {
        for k in &c.kernels {
            let _ = c.kernel_code(k);
        }
    }
    let _ = CodeObject::load_image(data);
    for t in [None, Some(GfxTarget::new(11, 0, 0)), Some(GfxTarget::new(9, 5, 0))] {
        if let Ok(c) = CodeObject::parse_with_target(data, t) {
            for k in &c.kernels {
                for line in isa::disassemble(c.kernel_code(k), k.entry, c.target).take(4096) {
                    let _ = line.text();
                }
            }
            for line in isa::disassemble(&c.text, c.text_addr, c.target).take(4096) {
                let _ = line.insn.map(|i| i.text());
            }
        }
    }
});
