//! `wavescope disasm FILE.elf [--kernel NAME] [--json]`: kernel descriptors and disassembly of a
//! code object.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::json;
use traces::isa::{self, CodeObject};

use super::{outln, Out};

#[derive(Args)]
pub struct DisasmArgs {
    /// An AMDGPU code object (HSA ELF).
    pub file: PathBuf,
    /// Only kernels whose name contains this.
    #[arg(long, value_name = "NAME")]
    pub kernel: Option<String>,
    /// Print the kernels and their instructions as JSON.
    #[arg(long)]
    pub json: bool,
    /// The GPU target (gfx1100, gfx950, ...) for code objects that name none, such as
    /// tinygrad's hand-assembled kernels.
    #[arg(long, value_name = "ARCH", value_parser = parse_target)]
    pub arch: Option<traces::GfxTarget>,
}

fn parse_target(s: &str) -> std::result::Result<traces::GfxTarget, String> {
    s.parse::<traces::GfxTarget>().map_err(|e| e.to_string())
}

/// One instruction: address, text, branch target.
fn code(code: &[u8], base: u64, co: &CodeObject) -> Vec<(u64, String, Option<u64>)> {
    let mut out = Vec::new();
    for line in isa::disassemble(code, base, co.target) {
        let mut text = String::new();
        let mut target = None;
        match &line.insn {
            Ok(i) => {
                i.write_text(&mut text);
                target = i.branch_target(line.addr);
            }
            Err(_) => text.push_str(&line.text()),
        }
        out.push((line.addr, text, target));
    }
    out
}

fn code_json(lines: &[(u64, String, Option<u64>)]) -> serde_json::Value {
    lines
        .iter()
        .map(|(addr, text, target)| json!({"addr": addr, "text": text, "branch_target": target}))
        .collect()
}

fn print_code(o: &mut Out, lines: &[(u64, String, Option<u64>)]) -> Result<()> {
    for (addr, text, target) in lines {
        match target {
            Some(t) => outln!(o, "  {addr:012x}: {text}  // -> 0x{t:x}"),
            None => outln!(o, "  {addr:012x}: {text}"),
        }
    }
    Ok(())
}

pub fn run(a: DisasmArgs) -> Result<()> {
    let bytes = std::fs::read(&a.file).with_context(|| format!("reading {}", a.file.display()))?;
    let co = CodeObject::parse_with_target(&bytes, a.arch)
        .with_context(|| format!("parsing {}", a.file.display()))?;
    // What the reader had to assume (tinygrad's minimal ELFs): said, not hidden.
    for w in &co.warnings {
        eprintln!("{}: {w}", a.file.display());
    }
    let kernels: Vec<_> = co
        .kernels
        .iter()
        .filter(|k| {
            a.kernel
                .as_ref()
                .is_none_or(|n| k.name.contains(n.as_str()))
        })
        .collect();
    if let Some(n) = &a.kernel {
        if kernels.is_empty() {
            let names: Vec<_> = co.kernels.iter().map(|k| k.name.as_str()).collect();
            bail!(
                "no kernel matching {n:?} in {} (kernels: {})",
                a.file.display(),
                names.join(", ")
            );
        }
    }
    if a.json {
        let ks: Vec<_> = kernels
            .iter()
            .map(|k| {
                let d = &k.descriptor;
                let args: Vec<_> = k
                    .args
                    .iter()
                    .map(|arg| {
                        json!({"name": arg.name, "offset": arg.offset, "size": arg.size,
                               "value_kind": arg.value_kind.to_string()})
                    })
                    .collect();
                json!({
                    "name": k.name,
                    "entry": k.entry,
                    "descriptor_addr": k.descriptor_addr,
                    "group_segment_fixed_size": d.group_segment_fixed_size,
                    "private_segment_fixed_size": d.private_segment_fixed_size,
                    "kernarg_size": d.kernarg_size,
                    "user_sgprs": d.user_sgpr_count(),
                    "wave_size": if d.wave32() { 32 } else { 64 },
                    "compute_pgm_rsrc1": d.compute_pgm_rsrc1,
                    "compute_pgm_rsrc2": d.compute_pgm_rsrc2,
                    "compute_pgm_rsrc3": d.compute_pgm_rsrc3,
                    "kernel_code_properties": d.kernel_code_properties,
                    "args": args,
                    "instructions": code_json(&code(co.kernel_code(k), k.entry, &co)),
                })
            })
            .collect();
        let text = co
            .kernels
            .is_empty()
            .then(|| code_json(&code(&co.text, co.text_addr, &co)));
        return super::print_json(&json!({
            "file": a.file,
            "target": co.target.to_string(),
            "text_addr": co.text_addr,
            "text_bytes": co.text.len(),
            "warnings": co.warnings,
            "kernels": ks,
            // Only for a code object without kernel descriptors: all of .text.
            "text": text,
        }));
    }
    let mut o = Out::new();
    outln!(
        o,
        "{}: {}, .text at 0x{:x} ({} bytes)",
        a.file.display(),
        co.target,
        co.text_addr,
        co.text.len()
    );
    if co.kernels.is_empty() {
        outln!(o, "(no kernel descriptors; disassembling all of .text)");
        print_code(&mut o, &code(&co.text, co.text_addr, &co))?;
    }
    for k in kernels {
        let d = &k.descriptor;
        outln!(o);
        outln!(
            o,
            "kernel {} entry 0x{:x} descriptor 0x{:x}",
            k.name,
            k.entry,
            k.descriptor_addr
        );
        outln!(
            o,
            "  group_segment {} private_segment {} kernarg_size {} user_sgprs {} wave{}",
            d.group_segment_fixed_size,
            d.private_segment_fixed_size,
            d.kernarg_size,
            d.user_sgpr_count(),
            if d.wave32() { 32 } else { 64 }
        );
        outln!(
            o,
            "  rsrc1 0x{:08x} rsrc2 0x{:08x} rsrc3 0x{:08x} code_properties 0x{:04x}",
            d.compute_pgm_rsrc1,
            d.compute_pgm_rsrc2,
            d.compute_pgm_rsrc3,
            d.kernel_code_properties
        );
        for arg in &k.args {
            outln!(
                o,
                "  arg {:<12} offset {:>3} size {:>2} {}",
                arg.name.as_deref().unwrap_or("-"),
                arg.offset,
                arg.size,
                arg.value_kind
            );
        }
        print_code(&mut o, &code(co.kernel_code(k), k.entry, &co))?;
    }
    o.flush()?;
    Ok(())
}
