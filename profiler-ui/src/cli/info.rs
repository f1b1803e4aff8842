//! `wavescope info FILE [--json]`: what a trace file (profile.pkl, .wst, .rgp) holds.

use anyhow::Result;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

use super::{outln, Out};

#[derive(Args)]
pub struct InfoArgs {
    /// A tinygrad profile.pkl, a .wst or an .rgp file.
    pub file: PathBuf,
    /// Print the full description as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: InfoArgs) -> Result<()> {
    let bar = super::progress_bar(0, "hashing SQTT");
    let info = traces::open::info_path_with(&a.file, &|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    if a.json {
        return super::print_json(&info);
    }
    let mut o = Out::new();
    outln!(o, "{} ({})", info.path, info.format);
    for d in &info.devices {
        let target = d.target.as_deref().unwrap_or("-");
        let kind = if d.declared { "device" } else { "track" };
        outln!(
            o,
            "  {kind} {:<14} target {target:<8} clock offset {} us",
            d.name,
            d.clock_offset_us
        );
    }
    for p in &info.programs {
        let base = p.base.map_or("-".to_string(), |b| format!("0x{b:x}"));
        outln!(
            o,
            "  program {:<20} tag {:?} base {base} {} bytes",
            p.name,
            p.tag,
            p.bytes
        );
    }
    for k in &info.kernels {
        outln!(
            o,
            "  kernel  {:<20} on {} kern {:?} exec {:?} start {} us end {} us",
            k.name,
            k.device,
            k.kern,
            k.exec_tag,
            k.start_us,
            k.end_us.as_deref().unwrap_or("-")
        );
    }
    let total: usize = info.sqtt.iter().map(|s| s.bytes).sum();
    outln!(o, "  sqtt    {} streams, {total} bytes", info.sqtt.len());
    for s in &info.sqtt {
        outln!(
            o,
            "    kern {} {} itrace {:<5} {:>10} bytes sha256 {}",
            s.kern,
            match (s.xcc, s.xcc_se) {
                (Some(x), Some(e)) => format!("se {:>2} XCC {x} · SE {e}", s.se),
                _ => format!("se {:>2}", s.se),
            },
            s.itrace,
            s.bytes,
            &s.sha256[..16]
        );
    }
    if let Some(c) = &info.source_event_counts {
        let list: Vec<String> = c.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        outln!(o, "  source events: {}", list.join(", "));
    }
    if let Some(chunks) = &info.chunks {
        outln!(o, "  chunks:");
        for c in chunks {
            outln!(
                o,
                "    @{:<10} {:<26} idx {:<3} v{}.{} {} bytes",
                c.offset,
                c.type_name,
                c.index,
                c.version_major,
                c.version_minor,
                c.size
            );
        }
    }
    for w in &info.warnings {
        outln!(o, "  warning: {w}");
    }
    o.flush()?;
    Ok(())
}
