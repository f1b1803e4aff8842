//! `wavescope disasm FILE.elf [--kernel NAME]`: kernel descriptors and disassembly of a code object.

use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::PathBuf;
use traces::isa::{self, CodeObject};

#[derive(Args)]
pub struct DisasmArgs {
    /// An AMDGPU code object (HSA ELF).
    pub file: PathBuf,
    /// Only this kernel.
    #[arg(long)]
    pub kernel: Option<String>,
    /// The GPU target (gfx1100, gfx950, ...) for code objects that name none, such as
    /// tinygrad's hand-assembled kernels.
    #[arg(long)]
    pub arch: Option<String>,
}

pub fn run(a: DisasmArgs) -> Result<()> {
    let bytes = std::fs::read(&a.file).with_context(|| format!("reading {}", a.file.display()))?;
    let target = match &a.arch {
        Some(s) => Some(s.parse()?),
        None => None,
    };
    let co = CodeObject::parse_with_target(&bytes, target)
        .with_context(|| format!("parsing {}", a.file.display()))?;
    for w in &co.warnings {
        eprintln!("{}: {w}", a.file.display());
    }
    println!(
        "{}: {}, .text at 0x{:x} ({} bytes)",
        a.file.display(),
        co.target,
        co.text_addr,
        co.text.len()
    );
    let kernels: Vec<_> = co
        .kernels
        .iter()
        .filter(|k| a.kernel.as_ref().is_none_or(|n| *n == k.name))
        .collect();
    if let Some(n) = &a.kernel {
        if kernels.is_empty() {
            let names: Vec<_> = co.kernels.iter().map(|k| k.name.as_str()).collect();
            bail!(
                "no kernel {n:?} in {} (kernels: {})",
                a.file.display(),
                names.join(", ")
            );
        }
    }
    if co.kernels.is_empty() {
        println!("(no kernel descriptors; disassembling all of .text)");
        print_code(&co.text, co.text_addr, &co);
    }
    for k in kernels {
        let d = &k.descriptor;
        println!();
        println!(
            "kernel {} entry 0x{:x} descriptor 0x{:x}",
            k.name, k.entry, k.descriptor_addr
        );
        println!(
            "  group_segment {} private_segment {} kernarg_size {} user_sgprs {} wave{}",
            d.group_segment_fixed_size,
            d.private_segment_fixed_size,
            d.kernarg_size,
            d.user_sgpr_count(),
            if d.wave32() { 32 } else { 64 }
        );
        println!(
            "  rsrc1 0x{:08x} rsrc2 0x{:08x} rsrc3 0x{:08x} code_properties 0x{:04x}",
            d.compute_pgm_rsrc1, d.compute_pgm_rsrc2, d.compute_pgm_rsrc3, d.kernel_code_properties
        );
        for arg in &k.args {
            println!(
                "  arg {:<12} offset {:>3} size {:>2} {}",
                arg.name.as_deref().unwrap_or("-"),
                arg.offset,
                arg.size,
                arg.value_kind
            );
        }
        print_code(co.kernel_code(k), k.entry, &co);
    }
    Ok(())
}

fn print_code(code: &[u8], base: u64, co: &CodeObject) {
    let mut text = String::new();
    for line in isa::disassemble(code, base, co.target) {
        text.clear();
        match &line.insn {
            Ok(i) => {
                i.write_text(&mut text);
                if let Some(t) = i.branch_target(line.addr) {
                    text.push_str(&format!("  // -> 0x{t:x}"));
                }
            }
            Err(_) => text.push_str(&line.text()),
        }
        println!("  {:012x}: {text}", line.addr);
    }
}
