//! Frame cost on a synthetic trace of 10 million waves and 10 million instruction tokens:
//! CPU time to lay out (our views + egui) and tessellate one frame of the SQTT view, fully
//! zoomed out and zoomed in, and resident memory against the trace's in-memory size.
//! `cargo bench -p profiler-ui --bench frame`; exits non-zero when a budget is exceeded.
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

fn main() {
    let rss0 = rss_bytes();
    let t = Instant::now();
    let (k, trace_bytes) = synth();
    let mut kv = KernelView::new(k);
    let rss1 = rss_bytes();
    let tokens: usize = kv.data.ses.iter().map(|s| s.analysis.tokens.len()).sum();
    println!(
        "synthetic trace: {} waves, {tokens} tokens, {} rows; built in {:.1} s",
        kv.data.wave_count(),
        kv.rows.rows.len(),
        t.elapsed().as_secs_f64()
    );
    // The budget is for this size; a smaller trace would not prove it.
    assert!(
        kv.data.wave_count() >= WAVES && tokens >= TOKENS,
        "the synthetic trace is smaller than {WAVES} waves and {TOKENS} tokens"
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
            "frame {name}: CPU median {med:.2} ms, max {max:.2} ms (budget {BUDGET_MS} ms) {}; first frame {first:.2} ms; wall median {:.2} ms",
            if ok { "ok" } else { "OVER" },
            wall[wall.len() / 2]
        );
    }
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
