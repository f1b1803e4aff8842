//! Library API walk-through on the emulated 7900 XTX: open, load a code object, allocate, copy,
//! launch with SQTT, save a `.wst`. Usage: `cargo run -p runtime --example emulated_trace -- out.wst`

use emu::EmuArch;
use runtime::platform::AllocKind;
use runtime::DeviceOptions;

fn main() -> Result<(), runtime::Error> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "emulated.wst".into());
    let opts = DeviceOptions {
        sqtt: true,
        sqtt_buffer_size: 1 << 20,
        ..DeviceOptions::default()
    };
    let (mut dev, _emu) = emu::open_kfd(EmuArch::Gfx1100, opts)?;
    let prg = dev.load_program(include_bytes!("../tests/data/gfx1100_E_3.elf"))?;
    let a = dev.alloc(4096, AllocKind::VRAM)?;
    dev.copyin(&a, &[7u8; 4096])?;
    dev.launch(&prg, &[&a, &a], &[], [1, 1, 1], [3, 1, 1])?;
    dev.save_trace(std::path::Path::new(&path))?;
    println!("wrote {path} (emulated device: no shader execution, SQTT blobs are empty)");
    Ok(())
}
