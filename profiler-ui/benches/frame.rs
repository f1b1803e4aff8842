//! Frame cost of the SQTT view at 10 million waves: CPU time to lay out (our views + egui) and
//! tessellate one frame, fully zoomed out and zoomed in.
//!
//! By default on a real capture opened through the real pipeline: the gfx1100 gemm of
//! `../shared` tiled in time to `WAVESCOPE_FRAME_SQTT` bytes of SQTT (default 2G; the tests'
//! `scale/capture.rs`), written as a .wst, opened with `traces::open`, analysed
//! (`analyze_kernel_par`) and shown; it must hold at least 10 M waves. `WAVESCOPE_FRAME=synthetic`
//! measures the former in-memory model of 10 M waves and 10 M tokens instead, with resident
//! memory against its size. `cargo bench -p profiler-ui --bench frame`; exits non-zero when a
//! budget is exceeded.
//!
//! Frame times are this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so other processes on a
//! busy machine do not count; wall time is printed beside it.

use std::time::Instant;

use nix::time::{clock_gettime, ClockId};

use profiler_ui::data::{KernelSqtt, SeTrace, XUnit};
use profiler_ui::layout::view::TimeView;
use profiler_ui::views::sqtt::KernelView;
use traces::sqtt::{BlobAnalysis, InstToken, OpName, TokenKind, Wave};

const WAVES: usize = 10_000_000;
const TOKENS: usize = 10_000_000;
const BUDGET_MS: f64 = 8.0;

fn rss_bytes() -> usize {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn synth() -> (KernelSqtt, usize) {
    let ses = 6;
    let per_se = WAVES.div_ceil(ses);
    let rows_per_se = 16 * 4 * 16; // WGP x SIMD x slot
    let mut out = Vec::new();
    let mut trace_bytes = 0;
    let ops = [
        OpName::Named("SALU"),
        OpName::Named("SMEM_RD"),
        OpName::Named("LDS_RD"),
        OpName::Named("JUMP_NO"),
    ];
    for se in 0..ses {
        let mut a = BlobAnalysis::default();
        a.waves.reserve_exact(per_se);
        for i in 0..per_se {
            let row = i % rows_per_se;
            let n = (i / rows_per_se) as i64;
            let start = n * 1_000 + (row as i64 % 7) * 13;
            a.waves.push(Wave {
                cu: (row / 64) as u16,
                simd: ((row / 16) % 4) as u8,
                wave: (row % 16) as u8,
                sa: None,
                id7: None,
                count: None,
                start,
                end: start + 900,
                insts: 0,
                start_offset: 0,
                end_offset: 0,
            });
        }
        // Tokens on the traced SIMD 0 of the first two SEs (a quarter of the waves), 13 per
        // wave until each of the two holds half of TOKENS.
        if se < 2 {
            let want = TOKENS / 2;
            a.tokens.reserve_exact(want);
            let mut w = 0usize;
            while a.tokens.len() < want && w < a.waves.len() {
                if a.waves[w].simd == 0 {
                    let s = a.waves[w].start;
                    for k in 0..13 {
                        a.tokens.push(InstToken {
                            time: s + 20 + k * 65,
                            wave: w as u32,
                            kind: if k % 3 == 0 {
                                TokenKind::ValuInst
                            } else {
                                TokenKind::Inst
                            },
                            op: Some(ops[k as usize % ops.len()]),
                            offset: 0,
                        });
                    }
                    a.waves[w].insts = 13;
                }
                w += 1;
            }
        }
        trace_bytes += a.waves.capacity() * std::mem::size_of::<Wave>()
            + a.tokens.capacity() * std::mem::size_of::<InstToken>();
        out.push(SeTrace::new(se as u32, se < 2, a, &|c| c as f64));
    }
    (
        KernelSqtt {
            kernel: 0,
            name: "synthetic".into(),
            unit: XUnit::Cycles,
            ses: out,
            kernel_len: None,
            disasm: Default::default(),
        },
        trace_bytes,
    )
}

fn thread_cpu_s() -> f64 {
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as f64 + t.tv_nsec() as f64 * 1e-9)
        .unwrap_or(f64::NAN)
}

/// (CPU ms, wall ms) of one frame.
fn frame_ms(ctx: &egui::Context, kv: &mut KernelView) -> (f64, f64) {
    let input = egui::RawInput {
        screen_rect: Some(egui::Rect::from_min_size(
            egui::Pos2::ZERO,
            egui::vec2(1600.0, 1000.0),
        )),
        ..Default::default()
    };
    let t = Instant::now();
    let c = thread_cpu_s();
    let out = ctx.run_ui(input, |ui| {
        egui::CentralPanel::default().show(ui, |ui| {
            profiler_ui::views::sqtt::show(ui, kv);
        });
    });
    let prims = ctx.tessellate(out.shapes, out.pixels_per_point);
    std::hint::black_box(prims);
    ((thread_cpu_s() - c) * 1e3, t.elapsed().as_secs_f64() * 1e3)
}

/// The tiled real capture, opened and analysed through the pipeline the app uses.
fn real() -> KernelView {
    let bytes = std::env::var("WAVESCOPE_FRAME_SQTT")
        .ok()
        .and_then(|s| {
            let s = s.trim().to_ascii_uppercase();
            let (n, m) = match s.strip_suffix('G') {
                Some(n) => (n.to_string(), 1u64 << 30),
                None => (s.trim_end_matches('M').to_string(), 1 << 20),
            };
            n.parse::<f64>().ok().map(|n| (n * m as f64) as u64)
        })
        .unwrap_or(2 << 30);
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared")
        .join(capture::SOURCE);
    let tmp = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let (wst, sqtt) = capture::build_capture(&src, tmp.path(), bytes);
    let built = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let (_, p) = traces::open::open_path(&wst).unwrap();
    let ks = profiler_ui::data::kernels_with_sqtt(&p);
    let k = *ks.last().expect("a kernel with SQTT");
    let a = profiler_ui::data::analyze_kernel_par(&p, k, &|_, _| {}).unwrap();
    let kv = KernelView::new(a);
    let tokens: usize = kv.data.ses.iter().map(|s| s.analysis.tokens.len()).sum();
    println!(
        "real capture: {:.0} MiB of SQTT (tiled gfx1100 gemm, built in {built:.1} s), opened and analysed in {:.1} s: {} waves, {tokens} tokens, {} rows",
        sqtt as f64 / (1u64 << 20) as f64,
        t.elapsed().as_secs_f64(),
        kv.data.wave_count(),
        kv.rows.rows.len()
    );
    kv
}

#[path = "../tests/scale/capture.rs"]
mod capture;

fn main() {
    let rss0 = rss_bytes();
    let t = Instant::now();
    let synthetic = std::env::var("WAVESCOPE_FRAME").is_ok_and(|v| v == "synthetic");
    let (mut kv, trace_bytes) = if synthetic {
        let (k, trace_bytes) = synth();
        (KernelView::new(k), Some(trace_bytes))
    } else {
        (real(), None)
    };
    let rss1 = rss_bytes();
    let tokens: usize = kv.data.ses.iter().map(|s| s.analysis.tokens.len()).sum();
    if synthetic {
        println!(
            "synthetic trace: {} waves, {tokens} tokens, {} rows; built in {:.1} s",
            kv.data.wave_count(),
            kv.rows.rows.len(),
            t.elapsed().as_secs_f64()
        );
    }
    // The budget is for this size; a smaller trace would not prove it.
    assert!(
        kv.data.wave_count() >= WAVES && (!synthetic || tokens >= TOKENS),
        "the trace is smaller than {WAVES} waves (and, synthetic, {TOKENS} tokens): {} waves, {tokens} tokens; raise WAVESCOPE_FRAME_SQTT",
        kv.data.wave_count()
    );
    let ctx = egui::Context::default();
    let (a, b) = kv.data.x_range();
    let mut failed = false;
    for (name, view) in [
        ("zoomed out", TimeView::new(a, b)),
        (
            "zoomed in",
            TimeView::new((a + b) / 2.0, (a + b) / 2.0 + 3_000.0),
        ),
    ] {
        kv.state.view = view;
        // The first frame after a zoom change rebuilds what depends on the view; shown apart.
        let (first, _) = frame_ms(&ctx, &mut kv);
        for _ in 0..2 {
            frame_ms(&ctx, &mut kv);
        }
        let (mut cpu, mut wall): (Vec<f64>, Vec<f64>) =
            (0..30).map(|_| frame_ms(&ctx, &mut kv)).unzip();
        cpu.sort_by(f64::total_cmp);
        wall.sort_by(f64::total_cmp);
        let (med, max) = (cpu[cpu.len() / 2], cpu[cpu.len() - 1]);
        let ok = med <= BUDGET_MS;
        failed |= !ok;
        println!(
            "frame {name}: CPU median {med:.2} ms, max {max:.2} ms = {:.2}x the {BUDGET_MS} ms budget {}; first frame {first:.2} ms; wall median {:.2} ms",
            med / BUDGET_MS,
            if ok { "ok" } else { "OVER" },
            wall[wall.len() / 2]
        );
    }
    // The memory ratio is the synthetic model's (the real pipeline's memory is the scale
    // bench's business: RSS against the SQTT bytes).
    let Some(trace_bytes) = trace_bytes else {
        if failed {
            std::process::exit(1);
        }
        return;
    };
    let rss = rss1.saturating_sub(rss0);
    let ratio = rss as f64 / trace_bytes as f64;
    println!(
        "memory: trace {} MiB in memory, process grew {} MiB = {ratio:.2}x (budget 2x) {}",
        trace_bytes >> 20,
        rss >> 20,
        if ratio <= 2.0 { "ok" } else { "OVER" }
    );
    failed |= ratio > 2.0;
    if failed {
        std::process::exit(1);
    }
}
