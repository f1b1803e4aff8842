//! `wavescope conform OURS.jsonl REFERENCE.jsonl`: compares two command recordings (ours from
//! `wavescope capture --record-commands`, a reference such as tinygrad's) per operation with
//! `runtime::conform`, and prints every difference with its acceptance, if any.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use runtime::conform::{self, Verdict};

use super::{outln, Out};

#[derive(Args, Debug)]
pub struct ConformArgs {
    /// Our recording (JSON lines).
    pub ours: PathBuf,
    /// The reference recording (JSON lines, the same schema).
    pub reference: PathBuf,
    /// The GPU architecture for decoding register fields (default: the reference's
    /// device_info, else ours).
    #[arg(long)]
    pub arch: Option<String>,
    /// Compare only these operations (comma-separated: exec, sqtt_start, ..., ioctl).
    #[arg(long, value_delimiter = ',')]
    pub ops: Vec<String>,
    /// The register JSON directory (shared/amd-registers) that decodes the fields of MMIO
    /// writes (driverless PCI/USB recordings); without it whole values are compared.
    #[arg(long, value_name = "DIR")]
    pub registers: Option<PathBuf>,
}

fn load(p: &PathBuf) -> Result<Vec<serde_json::Value>> {
    let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    conform::parse_jsonl(&text).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))
}

pub fn run(a: ConformArgs) -> Result<()> {
    let (ours, reference) = (load(&a.ours)?, load(&a.reference)?);
    let arch = a
        .arch
        .clone()
        .or_else(|| conform::arch_of(&reference))
        .or_else(|| conform::arch_of(&ours))
        .unwrap_or_default();
    if conform::table_for(&arch).is_none() {
        eprintln!("note: no register table for arch {arch:?}; register fields are not decoded");
    }
    let ops: Vec<&str> = a.ops.iter().map(String::as_str).collect();
    let r = conform::compare_with(&ours, &reference, &arch, &ops, a.registers.as_deref());
    let mut o = Out::new();
    for (op, (n_ours, n_ref)) in &r.compared {
        outln!(
            o,
            "{op}: {n_ours} registers/packet kinds ours, {n_ref} reference"
        );
    }
    for d in &r.differences {
        outln!(o, "  {d}");
    }
    match r.verdict() {
        Verdict::Match => outln!(o, "match"),
        Verdict::Accepted(n) => outln!(o, "accepted ({n} differences, see docs/conformance.md)"),
        Verdict::Differs(n) => {
            return Err(
                super::CheckFailed(format!("DIFFERS ({n} differences not accepted)")).into(),
            )
        }
    }
    Ok(())
}
