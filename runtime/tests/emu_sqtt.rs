//! SQTT from the emulated shader engines: what the encoder wrote equals what our decoder (both
//! framings) and tinygrad's decoder read back, waves land inside the kernel's timestamp range,
//! and a too-small buffer gives the buffer-full warning. Each check runs on the emulated gfx1100
//! (SQTT layout 3) and gfx1201 (layout 4) with the same fixture sources built for each, and the
//! device-path checks on the emulated PCI and USB gfx1100 too.

#[macro_use]
mod common;

use std::sync::{Arc, Mutex};

use common::{fixture, opts, Target};
use emu::{
    DeviceFault, DispatchInfo, DispatchResult, EmuArch, EmuShaderEngines, Gfx9ShaderEngines,
    Memory, RegFile, ShaderEngines,
};
use runtime::platform::AllocKind;
use runtime::{Device, DeviceOptions};
use traces::sqtt::{analyze_with, AnalyzeOptions, DecodeOptions, Framing};

/// What one SE stream contained, as the encoder counted it. `markers` is `None` on gfx9,
/// whose encoder writes no marker packets (the emulated gfx950 does not model them).
#[derive(Debug, Clone, Copy, Default)]
struct Written {
    waves: u64,
    inst_tokens: u64,
    markers: Option<u64>,
}

/// The arch's real engines: the RDNA interpreter, or the gfx9 one on gfx950 (the RDNA engines
/// cannot execute gfx950 code and fault every dispatch).
enum Engines {
    Rdna(EmuShaderEngines),
    Gfx9(Gfx9ShaderEngines),
}

/// The real engines, recording what each SE stream contained.
struct Rec {
    inner: Engines,
    out: Arc<Mutex<Vec<Written>>>,
}

impl Rec {
    fn engines(&mut self) -> &mut dyn ShaderEngines {
        match &mut self.inner {
            Engines::Rdna(e) => e,
            Engines::Gfx9(e) => e,
        }
    }
}

impl ShaderEngines for Rec {
    fn dispatch(
        &mut self,
        r: &RegFile,
        m: &mut Memory,
        d: &DispatchInfo,
    ) -> Result<DispatchResult, DeviceFault> {
        self.engines().dispatch(r, m, d)
    }
    fn sqtt_start(&mut self, n: u32) {
        self.engines().sqtt_start(n);
        // gfx950: each of the 8 XCCs' queues starts the capture; one capture per device here.
        let mut out = self.out.lock().unwrap();
        if out.len() < n as usize {
            out.resize(n as usize, Written::default());
        }
    }
    fn sqtt_reg_write(&mut self, a: u32, v: u32, c: u64) {
        self.engines().sqtt_reg_write(a, v, c)
    }
    fn sqtt_finish(&mut self, se: u32) -> Vec<u8> {
        let b = self.engines().sqtt_finish(se);
        let w = match &self.inner {
            Engines::Rdna(e) => e.last_written.get(se as usize).map(|w| Written {
                waves: w.waves,
                inst_tokens: w.inst_tokens,
                markers: Some(w.markers),
            }),
            Engines::Gfx9(e) => e.last_written.get(se as usize).map(|w| Written {
                waves: w.waves,
                inst_tokens: w.inst_tokens,
                markers: None,
            }),
        };
        if let Some(w) = w {
            self.out.lock().unwrap()[se as usize] = w;
        }
        b
    }
}

fn device(t: Target, buf: u64) -> (Device, Arc<Mutex<Vec<Written>>>) {
    let out = Arc::new(Mutex::new(Vec::new()));
    let inner = if t.arch() == EmuArch::Gfx950 {
        Engines::Gfx9(Gfx9ShaderEngines::new(t.arch()))
    } else {
        Engines::Rdna(EmuShaderEngines::new(t.arch()))
    };
    let rec = Box::new(Rec {
        inner,
        out: out.clone(),
    });
    let opts = DeviceOptions {
        staging_chunk: 1 << 20,
        sqtt: true,
        sqtt_buffer_size: buf,
        ..opts()
    };
    (t.open_with(opts, rec).0, out)
}

/// Bytes in front of an SE's trace data: gfx9 blobs start with an 8-byte layout header
/// (runtime::sqtt::blob_header; the real gfx950 captures start the same way).
fn header_len(t: Target, blob: &[u8]) -> usize {
    if t.arch() == EmuArch::Gfx950 && !blob.is_empty() {
        8
    } else {
        0
    }
}

struct Case {
    name: &'static str,
    bufs: usize,
    bytes: usize,
    values: Vec<u32>,
    global: [u32; 3],
    local: [u32; 3],
}

fn cases() -> Vec<Case> {
    let c = |name, bufs, bytes, values: Vec<u32>, global, local| Case {
        name,
        bufs,
        bytes,
        values,
        global,
        local,
    };
    vec![
        c("vadd", 3, 4096, vec![1000], [16, 1, 1], [64, 1, 1]),
        c(
            "saxpy",
            2,
            4096,
            vec![1.5f32.to_bits(), 1000],
            [8, 1, 1],
            [128, 1, 1],
        ),
        c("reduce", 2, 8192, vec![], [4, 1, 1], [256, 1, 1]),
        c("matmul", 3, 16384, vec![64], [4, 4, 1], [16, 16, 1]),
        c("branches", 2, 4096, vec![], [8, 1, 1], [64, 1, 1]),
        c("scratch", 2, 4096, vec![], [8, 1, 1], [32, 1, 1]),
        c("trans", 4, 16384, vec![], [2, 1, 1], [64, 1, 1]),
    ]
}

/// Blobs, what was written, the kernel's GPU tick range, the device's warnings.
type Capture = (Vec<Vec<u8>>, Vec<Written>, (i128, i128), Vec<String>);

/// Runs one case with SQTT on; returns the per-SE blobs, what the encoder wrote, and the
/// kernel's [start, end] in GPU ticks.
fn capture(t: Target, c: &Case, buf: u64) -> Capture {
    let (mut dev, rec) = device(t, buf);
    let prg = dev.load_program(&fixture(t.arch(), c.name)).unwrap();
    let mut bufs = Vec::new();
    for i in 0..c.bufs {
        let b = dev.alloc(c.bytes as u64, AllocKind::VRAM).unwrap();
        // Inputs of 1.0f / small integers keep every kernel on its common path.
        let data: Vec<u8> = (0..c.bytes / 4)
            .flat_map(|k| ((k as u32 % 97) + i as u32).to_le_bytes())
            .collect();
        dev.copyin(&b, &data).unwrap();
        bufs.push(b);
    }
    let refs: Vec<_> = bufs.iter().collect();
    dev.launch(&prg, &refs, &c.values, c.global, c.local)
        .unwrap();
    let prof = dev.profile().unwrap();
    let blobs: Vec<Vec<u8>> = prof
        .sqtt
        .iter()
        .map(|t| prof.blob(t.blob).to_vec())
        .collect();
    let k = prof
        .kernels
        .iter()
        .find(|k| k.name == prg.name)
        .expect("kernel range");
    let range = (k.gpu_start.unwrap(), k.gpu_end.unwrap());
    let w = rec.lock().unwrap().clone();
    (blobs, w, range, dev.warnings().to_vec())
}

/// The cases with a build for `t`'s arch: gfx950 has vadd, reduce and matmul only
/// (tests/fixtures/kernels/emu/gfx950).
fn cases_for(t: Target) -> Vec<Case> {
    let mut v = cases();
    if t.arch() == EmuArch::Gfx950 {
        v.retain(|c| matches!(c.name, "vadd" | "reduce" | "matmul"));
    }
    v
}

fn encoder_output_round_trips_through_our_decoder(t: Target) {
    for c in cases_for(t) {
        let (blobs, written, (st, en), warnings) = capture(t, &c, 1 << 20);
        assert!(warnings.is_empty(), "{}: {warnings:?}", c.name);
        assert_eq!(blobs.len(), t.arch().num_se() as usize, "one blob per SE");
        let mut waves = 0u64;
        let mut analyses = Vec::new();
        for (se, blob) in blobs.iter().enumerate() {
            assert_eq!((blob.len() - header_len(t, blob)) % 32, 0, "32-byte units");
            let mut per = Vec::new();
            for framing in [Framing::Reference, Framing::Hardware] {
                let opts = AnalyzeOptions {
                    decode: DecodeOptions {
                        framing,
                        ..Default::default()
                    },
                    ..Default::default()
                };
                let a = analyze_with(blob, None, opts).unwrap();
                assert_eq!(
                    a.waves.len() as u64,
                    written[se].waves,
                    "{} SE{se} waves ({framing:?})",
                    c.name
                );
                assert_eq!(
                    a.instruction_packets, written[se].inst_tokens,
                    "{} SE{se} tokens ({framing:?})",
                    c.name
                );
                if let Some(m) = written[se].markers {
                    assert_eq!(a.markers.len() as u64, m, "{} SE{se} markers", c.name);
                }
                assert!(
                    a.wave_anomalies.is_empty(),
                    "{} SE{se}: {:?}",
                    c.name,
                    a.wave_anomalies
                );
                assert!(!a.packet_counts.contains_key("TS_DELTA_S8_W3"));
                per.push(a);
            }
            // Same packets both ways, but for the zero padding to 32 bytes: a NOP on RDNA, a
            // CDNA_MISC on CDNA (a zero low nibble), which Hardware framing also reads in the
            // last 16 nibbles.
            let pad = |k: &&str| *k == "NOP" || *k == "CDNA_MISC";
            let misc = |a: &traces::sqtt::BlobAnalysis| a.packet_counts.get("CDNA_MISC").copied();
            assert!(misc(&per[0]) <= misc(&per[1]), "{} SE{se}", c.name);
            assert_eq!(
                per[0]
                    .packet_counts
                    .iter()
                    .filter(|(k, _)| !pad(k))
                    .collect::<Vec<_>>(),
                per[1]
                    .packet_counts
                    .iter()
                    .filter(|(k, _)| !pad(k))
                    .collect::<Vec<_>>(),
                "{} SE{se}",
                c.name
            );
            if se < 2 {
                assert!(
                    written[se].inst_tokens > 0 || written[se].waves == 0,
                    "{} SE{se} is itraced",
                    c.name
                );
            } else {
                assert_eq!(
                    written[se].inst_tokens, 0,
                    "{} SE{se} is not itraced",
                    c.name
                );
            }
            waves += per[0].waves.len() as u64;
            analyses.push(per.swap_remove(0));
        }
        let threads = c.local.iter().product::<u32>();
        // gfx950 runs wave64 only; the RDNA fixtures are wave32 builds.
        let lanes = if t.arch() == EmuArch::Gfx950 { 64 } else { 32 };
        let expect = c.global.iter().product::<u32>() as u64 * threads.div_ceil(lanes) as u64;
        assert_eq!(
            waves, expect,
            "{}: every wave of the dispatch has a WAVESTART/WAVEEND",
            c.name
        );
        // Absolute time: every wave lies inside the kernel's RELEASE_MEM timestamps. The time
        // map comes from the markers, which the emulated gfx950 does not encode: not checked
        // there.
        if written.iter().any(|w| w.markers.is_none()) {
            continue;
        }
        let refs: Vec<_> = analyses.iter().collect();
        let maps = traces::sqtt::dispatch_time_maps(&refs, Some(st as u64));
        for (a, m) in analyses.iter().zip(&maps) {
            let m = m.as_ref().expect("time map from the markers");
            for w in &a.waves {
                let (s, e) = (m.ticks(w.start).unwrap(), m.ticks(w.end).unwrap());
                assert!(
                    s >= st as f64 && e <= en as f64 && s <= e,
                    "{}: wave [{s}, {e}] outside [{st}, {en}]",
                    c.name
                );
            }
        }
    }
}

fn tinygrad_decoder_reads_the_same_counts(t: Target) {
    // tinygrad's decoder is the oracle: fails under CI when it is missing.
    if testdata::require_python_module("tinygrad.renderer.amd.sqtt", None).is_none() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("wavescope-emu-sqtt-{t:?}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for c in cases() {
        let (blobs, written, _, _) = capture(t, &c, 1 << 20);
        for (se, blob) in blobs.iter().enumerate() {
            let p = dir.join(format!("{}_{se}.sqtt", c.name));
            std::fs::write(&p, blob).unwrap();
            let script = "import sys\nfrom tinygrad.renderer.amd.sqtt import decode\n\
                          w=i=0\n\
                          for p in decode(open(sys.argv[1],'rb').read()):\n  n=type(p).__name__\n  \
                          w+=n.startswith('WAVESTART')\n  i+=n in ('VALUINST','IMMEDIATE') or n.startswith('INST')\n\
                          print(w,i)";
            let o = std::process::Command::new("python3")
                .args(["-c", script, p.to_str().unwrap()])
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let s = String::from_utf8_lossy(&o.stdout);
            let v: Vec<u64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();
            assert_eq!(
                v,
                vec![written[se].waves, written[se].inst_tokens],
                "{} SE{se}",
                c.name
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn small_buffer_fills_and_warns(t: Target) {
    // A 256x256 matmul: thousands of instruction tokens on the traced SEs.
    let c = Case {
        name: "matmul",
        bufs: 3,
        bytes: 256 * 256 * 4,
        values: vec![256],
        global: [16, 16, 1],
        local: [16, 16, 1],
    };
    let (blobs, written, _, warnings) = capture(t, &c, 4096);
    assert!(
        blobs.iter().any(|b| b.len() - header_len(t, b) == 4096),
        "a full SE buffer holds exactly its size"
    );
    assert!(
        warnings.iter().any(|w| w.contains("is full")),
        "{warnings:?}"
    );
    // The truncated stream still decodes (fewer tokens than were produced).
    let a = traces::sqtt::analyze(&blobs[0], None).unwrap();
    assert!(a.instruction_packets < written[0].inst_tokens);
}

// Every check above, on every emulated backend; the tinygrad comparison (about 15 s a run)
// checks the decoder, not the device path, so it runs on the KFD targets only (one per layout).
// pci_gfx950 runs the cases with a gfx950 build (vadd, reduce, matmul) on the gfx9 engines.
per_target!(
    encoder_output_round_trips_through_our_decoder,
    tinygrad_decoder_reads_the_same_counts except [pci_gfx1100, usb_gfx1100, pci_gfx1201, usb_gfx1201, pci_gfx950],
    small_buffer_fills_and_warns,
);
