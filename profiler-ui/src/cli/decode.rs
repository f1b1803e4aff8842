//! `wavescope decode BLOB --arch A --format canonical|summary|text`.

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use serde_json::{json, Value};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use traces::sqtt::{
    self, canonical, marker, AnalyzeOptions, BlobAnalysis, DecodeOptions, Decoder, Framing, Kind,
    Role,
};
use traces::GfxTarget;

#[derive(Copy, Clone, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// One line per packet: `<nibble_offset> <time> <Class> <field>=<int> ...`.
    Canonical,
    /// JSON: packet counts, waves, markers, userdata writes, warnings.
    Summary,
    /// Aligned and readable, for people.
    Text,
    /// The instruction trace of each itraced wave: time, PC, token and disassembly
    /// (needs `--program`).
    Insts,
}

#[derive(Copy, Clone, PartialEq, Eq, ValueEnum)]
pub enum FramingArg {
    /// As tinygrad's reference decoder (May 2026) frames the stream (default).
    Reference,
    /// As the hardware evidence says (64-bit TS_DELTA_S8_W3 on gfx11, decode the tail).
    Hardware,
}

#[derive(Args)]
pub struct DecodeArgs {
    /// A raw per-SE SQTT blob (e.g. kern0_se1.sqtt).
    pub blob: PathBuf,
    /// The GPU target the blob was captured on (gfx1100, gfx1200, gfx950, ...). The blob's own
    /// layout header decides how it is read; a mismatch is reported.
    #[arg(long, value_name = "gfxNNNN")]
    pub arch: Option<GfxTarget>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// The SE number for the summary (default: from a `_se<N>` in the file name).
    #[arg(long)]
    pub se: Option<u32>,
    #[arg(long, value_enum, default_value = "reference")]
    pub framing: FramingArg,
    /// Cycles TS_DELTA_SHORT adds to its field (4 as AMD's decoder; tinygrad before May 2026: 8).
    #[arg(long, default_value_t = 4)]
    pub short_delta_offset: u8,
    /// Text format: also print NOP packets.
    #[arg(long)]
    pub all: bool,
    /// The traced kernel's code object, to map instruction tokens to PCs (`--format insts`).
    #[arg(long)]
    pub program: Option<PathBuf>,
}

fn se_from_name(path: &Path) -> Option<u32> {
    let name = path.file_stem()?.to_str()?;
    let i = name.rfind("se")?;
    let digits: String = name[i + 2..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// Run a writer to stdout (a closed pipe ends the process quietly, see [`super::Out`]).
pub fn with_stdout(f: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    let mut out = super::Out::new();
    f(&mut out)
        .and_then(|_| out.flush())
        .context("writing output")
}

pub fn run(a: DecodeArgs) -> Result<()> {
    let target = a.arch;
    let file = sqtt::file::SqttFile::open(&a.blob)?;
    let blob = file.bytes();
    let opts = DecodeOptions {
        framing: match a.framing {
            FramingArg::Reference => Framing::Reference,
            FramingArg::Hardware => Framing::Hardware,
        },
        short_delta_offset: a.short_delta_offset,
    };
    let name = a.blob.display().to_string();
    sqtt::waves::check_header(blob).with_context(|| format!("{name}: cannot decode"))?;
    match a.format {
        Format::Canonical => {
            // Warnings (wrong target, truncation) still go to stderr.
            let analysis = analyze(&file, target, opts, false)?;
            report_warnings(&name, &analysis);
            with_stdout(|out| canonical::write_blob(out, blob, opts).map(|_| ()))
        }
        Format::Summary => {
            let analysis = analyze(&file, target, opts, false)?;
            report_warnings(&name, &analysis);
            let se = a.se.or_else(|| se_from_name(&a.blob));
            // The canonical stream's hash decodes the blob a second time: its pages are handed
            // back behind that pass too, so only the waves stay in memory.
            let sha = canonical::stream_sha256_with_progress(blob, opts, &mut |done| {
                file.release_before(done)
            });
            file.release_before(blob.len());
            let v = summary_json(&analysis, se, sha);
            with_stdout(|out| {
                serde_json::to_writer_pretty(&mut *out, &v)?;
                writeln!(out)
            })
        }
        Format::Insts => {
            let path = a
                .program
                .as_ref()
                .context("--format insts needs --program FILE.elf")?;
            let elf =
                std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
            let code = traces::isa::CodeObject::parse_with_target(&elf, target)
                .with_context(|| format!("{}: not a usable code object", path.display()))?;
            for w in &code.warnings {
                eprintln!("{}: {w}", path.display());
            }
            let analysis = analyze(&file, target, opts, false)?;
            report_warnings(&name, &analysis);
            let map = sqtt::map::map_insts(blob, &code, Some(&analysis), opts);
            with_stdout(|out| write_insts(out, &analysis, &map))?;
            if let Some(e) = map.error {
                anyhow::bail!("{name}: instruction mapping lost track at {e}");
            }
            Ok(())
        }
        Format::Text => {
            let analysis = analyze(&file, target, opts, true)?;
            report_warnings(&name, &analysis);
            with_stdout(|out| write_text(out, &name, blob, opts, &analysis, a.all))
        }
    }
}

/// The blob's analysis, with a bar over its bytes; the pages behind the decoder are handed
/// back to the kernel as it goes (a 256 MiB blob need not stay resident).
fn analyze(
    file: &sqtt::file::SqttFile,
    target: Option<GfxTarget>,
    decode: DecodeOptions,
    keep_tokens: bool,
) -> Result<BlobAnalysis> {
    let opts = AnalyzeOptions {
        decode,
        keep_tokens,
        ..AnalyzeOptions::default()
    };
    let bar = super::progress_bar(file.bytes().len() as u64, "decode");
    let r = file.analyze_with_progress(target, opts, &mut |consumed| {
        bar.set_position(consumed as u64);
        // Every few thousand packets (not only every 64 MiB): a single blob is a few MiB to
        // a few hundred, and none of it need stay resident once decoded.
        file.release_before(consumed);
    });
    bar.finish_and_clear();
    file.release_before(file.bytes().len());
    Ok(r?)
}

fn report_warnings(name: &str, a: &BlobAnalysis) {
    for w in &a.warnings {
        eprintln!(
            "wavescope: warning: {name}: nibble offset {}: {}",
            w.offset, w.message
        );
    }
}

/// The summary JSON: the reference's per-blob fields, plus what wavescope adds;
/// `stream_sha256` is [`canonical::stream_sha256`] of the blob. Its `waves` (a million at real
/// sizes), markers and userdata writes (hundreds of thousands) are written one at a time from
/// the analysis, never held as JSON values together.
pub fn summary_json(a: &BlobAnalysis, se: Option<u32>, stream_sha256: String) -> Summary<'_> {
    let top = summary_fields(a, se, stream_sha256);
    Summary { top, a, se }
}

/// [`summary_json`]'s result: the fields in the order a JSON object of them has, the long
/// lists streamed in their places.
pub struct Summary<'a> {
    top: serde_json::Map<String, Value>,
    a: &'a BlobAnalysis,
    se: Option<u32>,
}

impl serde::Serialize for Summary<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        struct Waves<'w>(&'w [sqtt::Wave], Option<u32>);
        impl serde::Serialize for Waves<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(Some(self.0.len()))?;
                for w in self.0 {
                    seq.serialize_element(&WaveJson(w, self.1))?;
                }
                seq.end()
            }
        }
        /// `markers`: its fields in sorted order, as a `serde_json` map has them.
        struct Markers<'w>(&'w BlobAnalysis);
        impl serde::Serialize for Markers<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let a = self.0;
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("all", &MarkerList(&a.markers))?;
                m.serialize_entry("count", &a.markers.len())?;
                m.serialize_entry("shader_clock_hz_estimate", &a.shader_clock_hz_estimate())?;
                m.end()
            }
        }
        /// Each marker as the array `[time, realtime]`.
        struct MarkerList<'w>(&'w [sqtt::Marker]);
        impl serde::Serialize for MarkerList<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(self.0.iter().map(|m| (m.time, m.realtime)))
            }
        }
        /// Each write as `{"reg", "time", "value"}` (sorted keys).
        struct Userdata<'w>(&'w [sqtt::UserdataWrite]);
        impl serde::Serialize for Userdata<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                struct One<'u>(&'u sqtt::UserdataWrite);
                impl serde::Serialize for One<'_> {
                    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                        let mut m = s.serialize_map(Some(3))?;
                        m.serialize_entry("reg", self.0.reg_name())?;
                        m.serialize_entry("time", &self.0.time)?;
                        m.serialize_entry("value", &self.0.value)?;
                        m.end()
                    }
                }
                s.collect_seq(self.0.iter().map(One))
            }
        }
        let mut m = s.serialize_map(Some(self.top.len()))?;
        for (k, v) in &self.top {
            match k.as_str() {
                "waves" => m.serialize_entry(k, &Waves(&self.a.waves, self.se))?,
                "markers" => m.serialize_entry(k, &Markers(self.a))?,
                "userdata_writes" => m.serialize_entry(k, &Userdata(&self.a.userdata_writes))?,
                _ => m.serialize_entry(k, v)?,
            }
        }
        m.end()
    }
}

/// One wave of the summary with its SE: the wave's JSON fields and `se`, keys in sorted
/// order like every other object of the summary (a `serde_json` map), written directly
/// instead of through a map per wave (a million of them at real sizes).
struct WaveJson<'w>(&'w sqtt::Wave, Option<u32>);

impl serde::Serialize for WaveJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (w, se) = (self.0, self.1);
        let mut m = s.serialize_map(None)?;
        if let Some(c) = w.count() {
            m.serialize_entry("count", &c)?;
        }
        m.serialize_entry("cu", &w.cu)?;
        m.serialize_entry("end", &w.end)?;
        if let Some(v) = w.id7() {
            m.serialize_entry("id7", &v)?;
        }
        m.serialize_entry("insts", &w.insts)?;
        if let Some(sa) = w.sa {
            m.serialize_entry("sa", &sa)?;
        }
        m.serialize_entry("se", &se)?;
        m.serialize_entry("simd", &w.simd)?;
        m.serialize_entry("start", &w.start)?;
        m.serialize_entry("wave", &w.wave)?;
        m.end()
    }
}

/// Every summary field; `waves`, `markers` and `userdata_writes` are placeholders holding
/// their keys' places ([`Summary`] writes them from the analysis).
fn summary_fields(
    a: &BlobAnalysis,
    se: Option<u32>,
    stream_sha256: String,
) -> serde_json::Map<String, Value> {
    let v = json!({
        "se": se,
        "layout": a.layout.map(|l| l.name()),
        "layout_header": a.layout_header,
        "packet_total": a.packet_total,
        "packet_counts": a.packet_counts,
        "decoded_nibbles": a.decoded_nibbles,
        "blob_nibbles": a.blob_nibbles,
        "first_time": a.first_time,
        "last_time": a.last_time,
        "instruction_packets": a.instruction_packets,
        "instruction_breakdown": a.instruction_breakdown,
        "inst_ops": a.inst_ops,
        "wave_starts": a.wave_starts,
        "wave_ends": a.wave_ends,
        "wave_count": a.waves.len(),
        "wave_anomalies": a.wave_anomalies,
        "waves": Value::Null,
        "markers": Value::Null,
        "userdata_writes": Value::Null,
        "stream_sha256": stream_sha256,
        "warnings": a.warnings,
    });
    match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

fn write_text(
    out: &mut dyn Write,
    name: &str,
    blob: &[u8],
    opts: DecodeOptions,
    a: &BlobAnalysis,
    all: bool,
) -> io::Result<()> {
    writeln!(
        out,
        "{name}: {} bytes, layout {}, {} packets, {} waves, {} instruction tokens, {} markers",
        blob.len(),
        a.layout.map_or("?", |l| l.name()),
        a.packet_total,
        a.waves.len(),
        a.instruction_packets,
        a.markers.len()
    )?;
    if let Some(clock) = a.shader_clock_hz_estimate() {
        writeln!(
            out,
            "shader clock ≈ {:.3} GHz (first to last marker)",
            clock / 1e9
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "{:>9} {:>12} {:>6}  {:<24} details",
        "nibble", "time", "Δt", "packet"
    )?;
    // Wave numbers by the nibble offset of their start/end packet.
    let mut wave_at = std::collections::HashMap::new();
    for (i, w) in a.waves.iter().enumerate() {
        wave_at.insert(w.start_offset, i);
        if let Some(end) = w.end_offset() {
            wave_at.insert(end, i);
        }
    }
    let mut token_at = std::collections::HashMap::new();
    for t in &a.tokens {
        token_at.entry(t.offset).or_insert(t.wave);
    }
    let mut prev = 0i64;
    for p in Decoder::new(blob, opts) {
        let dt = p.time - prev;
        prev = p.time;
        if p.ty.kind == Kind::Nop && !all {
            continue;
        }
        let mut details = String::new();
        match p.ty.kind {
            Kind::LayoutHeader => {
                let l = p.get(Role::Layout).unwrap_or(0);
                details = format!("layout {l}");
            }
            Kind::WaveStart | Kind::WaveEnd => {
                let id = wave_at
                    .get(&p.offset)
                    .map_or("W?".to_string(), |i| format!("W{i}"));
                let w = wave_at.get(&p.offset).and_then(|i| a.waves.get(*i));
                match w {
                    Some(w) => {
                        details = format!("{id} cu {} simd {} slot {}", w.cu, w.simd, w.wave);
                        if p.ty.kind == Kind::WaveEnd {
                            details +=
                                &format!("  ran {} cycles, {} insts", w.end - w.start, w.insts);
                        }
                    }
                    None => details = format!("{id} (unpaired)"),
                }
            }
            Kind::Inst | Kind::ValuInst | Kind::Immediate | Kind::ImmediateMask => {
                let slot = p.get(Role::Wave);
                if let Some(op) = p.get(Role::Op) {
                    details = format!("{:<18}", sqtt::op_name(p.layout, op as u32).to_string());
                }
                if let Some(mask) = p.get(Role::Mask) {
                    details = format!("mask {mask:#06x}");
                } else if let Some(s) = slot {
                    details += &format!(" slot {s}");
                }
                if let Some(w) = token_at.get(&p.offset) {
                    details += &format!("  W{w}");
                }
            }
            Kind::DeltaOrMarker if p.is_marker() => {
                let rt = p.get(Role::Delta).unwrap_or(0);
                details = format!("realtime {rt} ({:.2} µs)", rt as f64 / 100.0);
            }
            Kind::Reg => {
                let addr = p.get(Role::RegAddr).unwrap_or(0);
                let data = p.get(Role::RegData).unwrap_or(0);
                let sh = p.get(Role::RegHi).is_some_and(|h| h & 0x80 != 0);
                details = if sh {
                    format!("SH reg 0x2e00+{addr:#x} = {data:#010x}")
                } else {
                    format!("reg {addr:#06x} = {data:#010x}")
                };
                if [marker::USERDATA_2, marker::USERDATA_3]
                    .map(u64::from)
                    .contains(&addr)
                {
                    details += " (RGP marker)";
                }
            }
            _ => {
                for (k, v) in p.fields() {
                    if k != "delta" {
                        details += &format!("{k}={v} ");
                    }
                }
            }
        }
        writeln!(
            out,
            "{:>9} {:>12} {:>+6}  {:<24} {}",
            p.offset, p.time, dt, p.ty.name, details
        )?;
    }
    if !a.waves.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "{:>5} {:>4} {:>4} {:>4} {:>12} {:>12} {:>9} {:>6}",
            "wave", "cu", "simd", "slot", "start", "end", "cycles", "insts"
        )?;
        for (i, w) in a.waves.iter().enumerate() {
            writeln!(
                out,
                "{:>5} {:>4} {:>4} {:>4} {:>12} {:>12} {:>9} {:>6}",
                format!("W{i}"),
                w.cu,
                w.simd,
                w.wave,
                w.start,
                w.end,
                w.end - w.start,
                w.insts
            )?;
        }
    }
    Ok(())
}

/// Per traced wave: its instructions with our token time, the gap to the previous one, AMD's
/// reading (issue time = first attempt, stall, duration; rocprof-trace-decoder's convention),
/// PC, token and disassembly.
fn write_insts(out: &mut dyn Write, a: &BlobAnalysis, map: &sqtt::map::InstMap) -> io::Result<()> {
    let mut by_wave: std::collections::BTreeMap<Option<u32>, Vec<&sqtt::map::MappedInst>> =
        std::collections::BTreeMap::new();
    for i in &map.insts {
        by_wave.entry(i.wave).or_default().push(i);
    }
    for (wave, insts) in by_wave {
        match wave.and_then(|w| a.waves.get(w as usize).map(|x| (w, x))) {
            Some((w, x)) => writeln!(
                out,
                "wave W{w}: cu {} simd {} slot {}, cycles {}..{} ({} instructions)",
                x.cu,
                x.simd,
                x.wave,
                x.start,
                x.end,
                insts.len()
            )?,
            None => writeln!(out, "wave (unknown):")?,
        }
        writeln!(
            out,
            "{:>12} {:>6}  {:>12} {:>6} {:>6}  {:>8}  {:<15} instruction",
            "time", "gap", "amd_issue", "stall", "dur", "pc", "token"
        )?;
        let mut prev: Option<i64> = None;
        for i in insts {
            let gap = prev.map_or(String::new(), |p| format!("{:+}", i.time - p));
            prev = Some(i.time);
            let token = match &i.op {
                Some(op) => format!("{}:{op}", i.token),
                None => i.token.to_string(),
            };
            writeln!(
                out,
                "{:>12} {:>6}  {:>12} {:>6} {:>6}  {:>#8x}  {:<15} {}",
                i.time,
                gap,
                i.issue_time,
                i.stall,
                i.duration,
                i.pc,
                token,
                i.inst.text()
            )?;
        }
        writeln!(out)?;
    }
    Ok(())
}
