//! Our disassembly of every fixture kernel and every shared capture's program ELF must equal
//! llvm-objdump-22's (mnemonic and operands, whitespace-normalised). References are committed next
//! to the fixtures (`*.objdump.txt`, `refs/`), so this runs without LLVM installed; when
//! llvm-objdump-22 is present, `references_are_current` also checks the committed references.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use traces::isa::{self, CodeObject};
use traces::Family;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/kernels")
}

/// (binary, reference) pairs.
fn corpus() -> Vec<(PathBuf, PathBuf)> {
    let mut v = Vec::new();
    for cpu in ["gfx1100", "gfx1200", "gfx950"] {
        let Ok(rd) = std::fs::read_dir(root().join(cpu)) else {
            continue;
        };
        let mut files: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        files.sort();
        for p in files {
            let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
            if ext == "elf" || ext == "o" {
                v.push((p.clone(), p.with_extension("objdump.txt")));
            }
        }
    }
    for (elf, name) in shared_elfs() {
        v.push((elf, root().join("refs").join(format!("{name}.objdump.txt"))));
    }
    v
}

fn shared_elfs() -> Vec<(PathBuf, String)> {
    let mut v = Vec::new();
    let base = testdata::shared("traces");
    let base = base.as_path();
    let Ok(gpus) = std::fs::read_dir(base) else {
        return v;
    };
    for g in gpus.flatten() {
        let Ok(runs) = std::fs::read_dir(g.path()) else {
            continue;
        };
        for r in runs.flatten() {
            let Ok(files) = std::fs::read_dir(r.path()) else {
                continue;
            };
            for f in files.flatten() {
                let n = f.file_name().to_string_lossy().into_owned();
                if n.starts_with("program") && n.ends_with(".elf") {
                    let rel = f
                        .path()
                        .strip_prefix(base)
                        .unwrap()
                        .to_string_lossy()
                        .replace('/', "__");
                    v.push((f.path(), rel));
                }
            }
        }
    }
    v.sort();
    v
}

fn norm(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// addr -> text from `llvm-objdump -d` output.
fn parse_objdump(text: &str) -> BTreeMap<u64, String> {
    let mut m = BTreeMap::new();
    for l in text.lines() {
        let Some((insn, rest)) = l.split_once("// ") else {
            continue;
        };
        let Some((addr, _)) = rest.split_once(':') else {
            continue;
        };
        if addr.len() != 12 {
            continue;
        }
        if let Ok(a) = u64::from_str_radix(addr, 16) {
            m.insert(a, norm(insn));
        }
    }
    m
}

fn supported(f: Family) -> bool {
    matches!(f, Family::Rdna3 | Family::Rdna4 | Family::Cdna)
}

#[test]
fn disassembly_matches_llvm_objdump() {
    let mut total = 0usize;
    // target -> (compared, mismatched)
    let mut per_target: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut bad = Vec::new();
    let mut skipped = Vec::new();
    let corpus = corpus();
    assert!(
        corpus.len() >= 30,
        "fixture corpus missing ({} binaries)",
        corpus.len()
    );
    for (bin, refp) in &corpus {
        let bytes = std::fs::read(bin).unwrap();
        // tinygrad's hand-assembled ELFs name no target: the capture's directory does.
        let dir_target = bin
            .iter()
            .filter_map(|c| c.to_str())
            .find_map(|c| c.parse::<traces::GfxTarget>().ok());
        let co = CodeObject::parse_with_target(&bytes, dir_target)
            .unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
        let fam = co.target.family().unwrap();
        if !supported(fam) {
            skipped.push(format!("{} ({})", bin.display(), co.target));
            continue;
        }
        let Ok(reftext) = std::fs::read_to_string(refp) else {
            panic!(
                "missing reference {} (run tests/fixtures/kernels/build.sh)",
                refp.display()
            );
        };
        let want = parse_objdump(&reftext);
        let got: BTreeMap<u64, String> = isa::disassemble(&co.text, co.text_addr, co.target)
            .map(|l| (l.addr, norm(&l.text())))
            .collect();
        let tally = per_target.entry(co.target.to_string()).or_default();
        for (a, w) in &want {
            total += 1;
            tally.0 += 1;
            match got.get(a) {
                Some(g) if g == w => {}
                g => {
                    tally.1 += 1;
                    bad.push(format!(
                        "{} @{a:#x}: llvm `{w}` ours `{}`",
                        bin.display(),
                        g.map_or("<none>", |s| s)
                    ))
                }
            }
        }
    }
    for (t, (n, m)) in &per_target {
        eprintln!("{t}: compared {n} instructions, {m} mismatches");
    }
    if !skipped.is_empty() {
        eprintln!(
            "!!! SKIPPED {} binaries of targets the decoder does not support yet:",
            skipped.len()
        );
        for s in &skipped {
            eprintln!("!!!   {s}");
        }
    }
    eprintln!("compared {total} instructions, {} mismatches", bad.len());
    for b in bad.iter().take(80) {
        eprintln!("{b}");
    }
    assert!(
        bad.is_empty(),
        "{} of {total} instructions differ from llvm-objdump",
        bad.len()
    );
    assert!(total > 1000);
}

#[test]
fn references_are_current() {
    // Without the tool the committed references cannot be re-verified: fails under CI.
    if testdata::require_tool("llvm-objdump-22").is_none() {
        return;
    }
    for (bin, refp) in corpus() {
        let out = Command::new("llvm-objdump-22")
            .arg("-d")
            .arg(&bin)
            .output()
            .unwrap();
        let now = parse_objdump(&String::from_utf8_lossy(&out.stdout));
        let committed = parse_objdump(&std::fs::read_to_string(&refp).unwrap_or_default());
        assert_eq!(
            now,
            committed,
            "{} is stale: rerun build.sh",
            refp.display()
        );
    }
}
