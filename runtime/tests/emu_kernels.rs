//! The emulated GPU runs real clang-22 kernels (tests/fixtures/kernels/emu: gfx1100 builds, and
//! gfx1201/ the same sources built for RDNA4) and the captured tinygrad kernels of both
//! generations through the runtime; results are compared with the same CPU references. Every
//! case runs on every emulated backend (KFD gfx1100/gfx1201, PCI and USB gfx1100), and the
//! fixture cases again on the wave64 builds (module `wave64`).

#[macro_use]
mod common;

use common::{
    download, f32s, fixture_wave, floats, from_f32, from_u32, opts, rng, shared, u32s, upload,
    Target,
};
use runtime::{Device, DeviceOptions};

/// What a fixture case runs on: the backend, and whether the kernels are the wave64 builds.
#[derive(Debug, Clone, Copy)]
struct Run {
    t: Target,
    wave64: bool,
}

impl From<Target> for Run {
    fn from(t: Target) -> Run {
        Run { t, wave64: false }
    }
}

impl Run {
    fn fixture(self, name: &str) -> Vec<u8> {
        fixture_wave(self.t.arch(), name, self.wave64)
    }
}

fn dev(t: Target) -> Device {
    t.device(DeviceOptions {
        wait_timeout: std::time::Duration::from_secs(2),
        ..opts()
    })
}

fn vadd_matches_cpu(r: impl Into<Run>) {
    let r = r.into();
    let t = r.t;
    common::check_vadd_elf(&mut dev(t), &r.fixture("vadd"), 1000, 1);
}

fn saxpy_matches_cpu_fma(r: impl Into<Run>) {
    let r = r.into();
    let t = r.t;
    let mut d = dev(t);
    let n = 777usize;
    let x = floats(n, 3, -10.0, 10.0);
    let y = floats(n, 4, -10.0, 10.0);
    let alpha = 1.7f32;
    let prg = d.load_program(&r.fixture("saxpy")).unwrap();
    let (by, bx) = (upload(&mut d, &from_f32(&y)), upload(&mut d, &from_f32(&x)));
    d.launch(
        &prg,
        &[&by, &bx],
        &[alpha.to_bits(), n as u32],
        [n.div_ceil(128) as u32, 1, 1],
        [128, 1, 1],
    )
    .unwrap();
    let r = f32s(&download(&mut d, &by, 4 * n));
    for i in 0..n {
        assert_eq!(
            r[i].to_bits(),
            alpha.mul_add(x[i], y[i]).to_bits(),
            "y[{i}]"
        );
    }
}

fn reduce_with_lds_barriers_and_atomics(r: impl Into<Run>) {
    let r = r.into();
    let t = r.t;
    let mut d = dev(t);
    let groups = 5usize;
    let v = rng(256 * groups, 5);
    let prg = d.load_program(&r.fixture("reduce")).unwrap();
    let bin = upload(&mut d, &from_u32(&v));
    let bout = upload(&mut d, &vec![0u8; 8 * groups]);
    d.launch(
        &prg,
        &[&bout, &bin],
        &[],
        [groups as u32, 1, 1],
        [256, 1, 1],
    )
    .unwrap();
    let r = u32s(&download(&mut d, &bout, 8 * groups));
    for g in 0..groups {
        let s = &v[256 * g..256 * (g + 1)];
        let sum = s.iter().fold(0u32, |a, &x| a.wrapping_add(x));
        let bits: u32 = s.iter().map(|x| x.count_ones()).sum();
        assert_eq!(r[2 * g], sum, "sum of group {g}");
        assert_eq!(r[2 * g + 1], bits, "popcount of group {g}");
    }
}

fn matmul_cpu(a: &[f32], b: &[f32], n: usize) -> Vec<f32> {
    let mut c = vec![0f32; n * n];
    for r in 0..n {
        for col in 0..n {
            let mut acc = 0f32;
            for k in 0..n {
                acc = a[r * n + k].mul_add(b[k * n + col], acc);
            }
            c[r * n + col] = acc;
        }
    }
    c
}

fn run_matmul(elf: &[u8], d: &mut Device, n: usize) -> (Vec<f32>, Vec<f32>) {
    let a = floats(n * n, 6, -1.0, 1.0);
    let b = floats(n * n, 7, -1.0, 1.0);
    let prg = d.load_program(elf).unwrap();
    let (ba, bb) = (upload(d, &from_f32(&a)), upload(d, &from_f32(&b)));
    let bc = upload(d, &vec![0u8; 4 * n * n]);
    let g = (n / 16) as u32;
    d.launch(&prg, &[&bc, &ba, &bb], &[n as u32], [g, g, 1], [16, 16, 1])
        .unwrap();
    (f32s(&download(d, &bc, 4 * n * n)), matmul_cpu(&a, &b, n))
}

fn tiled_matmul_is_bit_exact(r: impl Into<Run>) {
    let r = r.into();
    let t = r.t;
    let mut d = dev(t);
    let (got, want) = run_matmul(&r.fixture("matmul"), &mut d, 64);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "c[{i}] = {g} want {w}");
    }
}

fn branches_cpu(x: u32) -> (u32, u32) {
    let r = if x.is_multiple_of(3) {
        x.wrapping_mul(7).wrapping_add(1)
    } else if x & 4 != 0 {
        x ^ 0xdeadbeef
    } else {
        let mut r = 0u32;
        for k in 0..(x & 15) {
            r = r.wrapping_add(k.wrapping_mul(x).wrapping_add(r >> 3));
        }
        r
    };
    let (mut y, mut steps) = (x | 1, 0u32);
    while y != 1 && steps < 200 {
        y = if y & 1 != 0 {
            y.wrapping_mul(3).wrapping_add(1)
        } else {
            y >> 1
        };
        steps += 1;
    }
    (r, steps)
}

fn branches_and_exec_masking(r: impl Into<Run>) {
    let r = r.into();
    let t = r.t;
    let mut d = dev(t);
    let n = 256usize;
    // Small values make every path (and long and short loops) occur.
    let v: Vec<u32> = rng(n, 8)
        .into_iter()
        .enumerate()
        .map(|(i, x)| if i.is_multiple_of(2) { x % 1000 } else { x })
        .collect();
    let prg = d.load_program(&r.fixture("branches")).unwrap();
    let bin = upload(&mut d, &from_u32(&v));
    let bout = upload(&mut d, &vec![0u8; 8 * n]);
    d.launch(
        &prg,
        &[&bout, &bin],
        &[],
        [(n / 64) as u32, 1, 1],
        [64, 1, 1],
    )
    .unwrap();
    let r = u32s(&download(&mut d, &bout, 8 * n));
    for i in 0..n {
        let (a, b) = branches_cpu(v[i]);
        assert_eq!(
            (r[2 * i], r[2 * i + 1]),
            (a, b),
            "element {i} (x = {})",
            v[i]
        );
    }
}

fn scratch_private_array(r: impl Into<Run>) {
    let r = r.into();
    let t = r.t;
    let mut d = dev(t);
    let n = 96usize;
    let v = rng(n, 9);
    let prg = d.load_program(&r.fixture("scratch")).unwrap();
    let bin = upload(&mut d, &from_u32(&v));
    let bout = upload(&mut d, &vec![0u8; 4 * n]);
    d.launch(
        &prg,
        &[&bout, &bin],
        &[],
        [(n / 32) as u32, 1, 1],
        [32, 1, 1],
    )
    .unwrap();
    let r = u32s(&download(&mut d, &bout, 4 * n));
    for i in 0..n {
        let x = v[i];
        let tmp: Vec<u32> = (0..24u32).map(|k| x.wrapping_mul(k + 1)).collect();
        let s = (0..24u32).fold(0u32, |s, k| {
            s.wrapping_add(tmp[(x.wrapping_add(k * 5) % 24) as usize])
        });
        assert_eq!(r[i], s, "element {i}");
    }
}

fn returning_global_atomics(r: impl Into<Run>) {
    let r = r.into();
    let t = r.t;
    let mut d = dev(t);
    let prg = d.load_program(&r.fixture("atomic_rtn")).unwrap();
    let out = upload(&mut d, &[0u8; 256]);
    let ctr = upload(&mut d, &from_u32(&[0, 100, 101, 102, 103]));
    d.launch(&prg, &[&out, &ctr], &[], [1, 1, 1], [32, 1, 1])
        .unwrap();
    let o = u32s(&download(&mut d, &out, 256));
    let c = u32s(&download(&mut d, &ctr, 20));
    // Lanes take their turns in lane order (as the hardware's atomic unit and clang's
    // wave-level scan of the add do).
    let mut slots = [100u32, 101, 102, 103];
    for i in 0..32u32 {
        let prefix: u32 = (0..i).map(|j| j + 1).sum();
        assert_eq!(o[i as usize], prefix, "old counter seen by lane {i}");
        let k = (i & 3) as usize;
        assert_eq!(
            o[32 + i as usize],
            slots[k],
            "old slot value seen by lane {i}"
        );
        slots[k] = i;
    }
    assert_eq!(
        c,
        vec![
            (1..=32).sum::<u32>(),
            slots[0],
            slots[1],
            slots[2],
            slots[3]
        ]
    );
}

/// Distance in units in the last place.
fn ulps(a: f32, b: f32) -> u32 {
    if a.is_nan() && b.is_nan() {
        return 0;
    }
    let o = |x: f32| {
        let i = x.to_bits() as i32;
        if i < 0 {
            i32::MIN - i
        } else {
            i
        }
    };
    (o(a) as i64 - o(b) as i64).unsigned_abs() as u32
}

fn transcendentals_within_ulps_and_integer_division_exact(r: impl Into<Run>) {
    let r = r.into();
    let t = r.t;
    let mut d = dev(t);
    let n = 128usize;
    let x = floats(n, 10, 0.01, 50.0);
    let iv = rng(2 * n, 11);
    let prg = d.load_program(&r.fixture("trans")).unwrap();
    let bx = upload(&mut d, &from_f32(&x));
    let bi = upload(&mut d, &from_u32(&iv));
    let bo = upload(&mut d, &vec![0u8; 24 * n]);
    let bio = upload(&mut d, &vec![0u8; 8 * n]);
    d.launch(
        &prg,
        &[&bo, &bio, &bx, &bi],
        &[],
        [(n / 64) as u32, 1, 1],
        [64, 1, 1],
    )
    .unwrap();
    let o = f32s(&download(&mut d, &bo, 24 * n));
    let io = u32s(&download(&mut d, &bio, 8 * n));
    // Hardware transcendentals are accurate to ~1 ulp; the emulator uses the correctly rounded
    // libm value, so allow 2 ulps against the f64 reference rounded to f32.
    for i in 0..n {
        let v = f64::from(x[i]);
        let want = [v.exp2(), v.log2(), 1.0 / v, v.sqrt(), 1.0 / v.sqrt()];
        for (k, w) in want.iter().enumerate() {
            let got = o[6 * i + k];
            assert!(
                ulps(got, *w as f32) <= 2,
                "fn {k} of x[{i}]={}: {got} vs {w}",
                x[i]
            );
        }
        // Precise division (the div_scale/fmas/fixup sequence) is correctly rounded.
        assert_eq!(
            o[6 * i + 5].to_bits(),
            (x[i] / (x[i] + 1.0)).to_bits(),
            "div of x[{i}]"
        );
        let (a, b) = (iv[2 * i], iv[2 * i + 1] | 1);
        assert_eq!((io[2 * i], io[2 * i + 1]), (a / b, a % b), "udiv {a} / {b}");
    }
}

fn captured_plus_kernel_adds_three_floats(t: Target) {
    let Some(elf) = shared(t.arch(), "plus_run_0/program0_E_3.elf") else {
        return;
    };
    let mut d = dev(t);
    let prg = d.load_program(&elf).unwrap();
    let a = [1.5f32, -2.25, 1e10];
    let b = [0.25f32, 8.0, -3.0];
    let (ba, bb) = (upload(&mut d, &from_f32(&a)), upload(&mut d, &from_f32(&b)));
    let out = upload(&mut d, &[0u8; 12]);
    // The captures launched it as one group of 3 threads (NUM_THREAD_X = 3 in their REG
    // packets) on 12-byte buffers.
    d.launch(&prg, &[&out, &ba, &bb], &[], [1, 1, 1], [3, 1, 1])
        .unwrap();
    let r = f32s(&download(&mut d, &out, 12));
    for i in 0..3 {
        assert_eq!(r[i].to_bits(), (a[i] + b[i]).to_bits());
    }
}

fn captured_gemm_kernel_multiplies_32x32(t: Target) {
    let Some(elf) = shared(t.arch(), "gemm_run_0/program0_r_32_32_16_2.elf") else {
        return;
    };
    // r_32_32_16_2 (from its disassembly): out[y*32+x] = sum_k a[y*32+k] * b[k*32+x] over
    // k < 32; grid (32, 32) groups of 16 threads, each thread two k's (fma then fmac), thread 0
    // sums the 16 partials from LDS in order starting from 0.0.
    let mut d = dev(t);
    let prg = d.load_program(&elf).unwrap();
    let a = floats(1024, 12, -2.0, 2.0);
    let b = floats(1024, 13, -2.0, 2.0);
    let (ba, bb) = (upload(&mut d, &from_f32(&a)), upload(&mut d, &from_f32(&b)));
    let out = upload(&mut d, &[0u8; 4096]);
    d.launch(&prg, &[&out, &ba, &bb], &[], [32, 32, 1], [16, 1, 1])
        .unwrap();
    let r = f32s(&download(&mut d, &out, 4096));
    for y in 0..32 {
        for x in 0..32 {
            let mut acc = 0f32;
            for t in 0..16 {
                let p = a[y * 32 + 2 * t].mul_add(b[(2 * t) * 32 + x], 0.0);
                let p = a[y * 32 + 2 * t + 1].mul_add(b[(2 * t + 1) * 32 + x], p);
                acc += p;
            }
            assert_eq!(r[y * 32 + x].to_bits(), acc.to_bits(), "out[{y}][{x}]");
        }
    }
}

/// f16 bits as f64 (exact).
fn f16_val(h: u16) -> f64 {
    let s = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let (e, m) = (i32::from((h >> 10) & 0x1F), f64::from(h & 0x3FF));
    match e {
        0 => s * m * 2f64.powi(-24),
        31 if m == 0.0 => s * f64::INFINITY,
        31 => f64::NAN,
        _ => s * (1.0 + m / 1024.0) * 2f64.powi(e - 15),
    }
}

/// `x` rounded to the nearest f16, ties to even (NaN as the canonical quiet NaN). The
/// reference computes every result exactly in f64 first (the inputs' 11-bit significands and
/// moderate exponents keep products and sums of two or three terms exact), so this is the
/// single IEEE rounding of the f16 operation.
fn to_f16(x: f64) -> u16 {
    if x.is_nan() {
        return 0x7E00;
    }
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    let a = x.abs();
    // The largest f16 is 65504; from 65520 (half an ulp above) on, the tie goes to infinity.
    if a >= 65520.0 {
        return sign | 0x7C00;
    }
    // The binade (exponent) of `a`, subnormals in the lowest one; the f16 spacing there.
    let e = if a < 2f64.powi(-14) {
        -14
    } else {
        ((a.to_bits() >> 52) as i32) - 1023
    };
    let m = (a / 2f64.powi(e - 10)).round_ties_even();
    sign | if m < 1024.0 {
        m as u16
    } else if m >= 2048.0 {
        ((e + 16) as u16) << 10
    } else {
        ((e + 15) as u16) << 10 | (m as u16 - 1024)
    }
}

/// IEEE maxNum / minNum (a NaN operand yields the other).
fn max_num(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a >= b {
        a
    } else {
        b
    }
}

fn min_num(a: f64, b: f64) -> f64 {
    -max_num(-a, -b)
}

/// The 20 dwords half16.c writes for one lane (see its comments). Where clang fused
/// operations (contraction is on in C), the reference follows the instruction it emitted:
/// `u * v + w` on half2 and `x * 0.5 + 2` are one fma (one rounding), `(half)(f * 3.0f)` is
/// v_fma_mixlo_f16 (the f32 product rounded once, straight to f16), and `(i16)x` saturates
/// (NaN to 0) as v_cvt_i16_f16 does.
fn half16_cpu(x: u16, y: u16, sa: i16, sb: i16, g: f32, araw: u16) -> [u32; 20] {
    let (xf, yf, af) = (f16_val(x), f16_val(y), f16_val(araw));
    let h = |v: f64| u32::from(to_f16(v));
    let pair = |lo: f64, hi: f64| h(lo) | h(hi) << 16;
    let f = (xf * yf + 1.0) as f32;
    let p = f16_val(to_f16(xf * yf));
    let u16p = |lo: i16, hi: i16| u32::from(lo as u16) | u32::from(hi as u16) << 16;
    let az = araw as i16;
    let (ua, ub) = (sa as u16, sb as u16);
    [
        h(af * xf + yf),
        pair(p + af, xf - yf),
        pair(max_num(xf, yf), min_num(xf, yf)),
        (xf as f32).to_bits(),
        h(f64::from(g)),
        f.to_bits(),
        h(f64::from(f) * 3.0),
        u32::from(xf < yf)
            | u32::from(xf == yf) << 1
            | u32::from(xf >= af) << 2
            | u32::from((xf * af).is_nan()) << 3,
        pair(xf * yf + af, yf * af + xf),
        pair(max_num(xf, yf), max_num(yf, af)),
        pair(xf - yf, yf - af),
        u16p(sa.wrapping_mul(sb), sa.wrapping_add(sb)),
        u16p(sa.min(sb), ua.max(ub) as i16),
        u16p(sa >> 3, (ub >> 5) as i16),
        u32::from((sa << 2) as u16) | u32::from(sa < sb) << 16 | u32::from(ua >= ub) << 17,
        u16p(
            sa.wrapping_mul(sb).wrapping_add(sa),
            sb.wrapping_mul(az).wrapping_add(sb),
        ),
        u16p(sa.max(sb), sb.max(az)),
        u16p((ua >> 3) as i16, (ub >> 7) as i16),
        h(f64::from(sa)) | u32::from(xf as i16 as u16) << 16,
        h(xf * 0.5 + 2.0) | u32::from(y | 0x8000) << 16,
    ]
}

fn is_nan16(h: u32) -> bool {
    h & 0x7C00 == 0x7C00 && h & 0x3FF != 0
}

fn sixteen_bit_float_and_integer_math(r: impl Into<Run>) {
    let r = r.into();
    let mut d = dev(r.t);
    let n = 256usize;
    // f16 inputs: random signs and significands, exponents 2^-5..2^5; then the special cases.
    let f16s = |seed: u32| -> Vec<u16> {
        rng(n, seed)
            .into_iter()
            .map(|v| (v & 0x83FF) as u16 | (((v >> 16) % 11 + 10) as u16) << 10)
            .collect()
    };
    let (mut x, mut y) = (f16s(20), f16s(21));
    let specials: [(u16, u16); 8] = [
        (0x7E00, 0x3C00), // NaN, 1
        (0x7C00, 0x4000), // +inf, 2
        (0x4200, 0xFC00), // 3, -inf
        (0x0001, 0x8003), // subnormals
        (0x7BFF, 0x4400), // 65504 * 4 overflows
        (0x3C00, 0x3C00), // equal
        (0xBA00, 0x3800), // x == a
        (0x3C01, 0x3C01), // (1 + 2^-10)^2 rounds
    ];
    for (i, (a, b)) in specials.into_iter().enumerate() {
        (x[i], y[i]) = (a, b);
    }
    let s: Vec<i16> = rng(2 * n, 22).into_iter().map(|v| v as i16).collect();
    // f32 -> f16 rounding: ties both ways, overflow, underflow to 0 and to the smallest
    // subnormal, NaN; then random values from 2^-30 to 2^17.
    let mut g: Vec<f32> = rng(n, 23)
        .into_iter()
        .map(|v| f32::from_bits((v & 0x807F_FFFF) | ((v >> 23) % 48 + 97) << 23))
        .collect();
    let gs = [
        1.0 + 2f32.powi(-11),
        1.0 + 3.0 * 2f32.powi(-11),
        65520.0,
        65519.99,
        2f32.powi(-25),
        3.0 * 2f32.powi(-26),
        f32::NAN,
        -1e-8,
    ];
    g[..gs.len()].copy_from_slice(&gs);
    let araw = 0xBA00u16; // -0.75
    let prg = d.load_program(&r.fixture("half16")).unwrap();
    let to_bytes = |v: &[u16]| -> Vec<u8> { v.iter().flat_map(|h| h.to_le_bytes()).collect() };
    let bx = upload(&mut d, &to_bytes(&x));
    let by = upload(&mut d, &to_bytes(&y));
    let bs = upload(
        &mut d,
        &to_bytes(&s.iter().map(|&v| v as u16).collect::<Vec<_>>()),
    );
    let bg = upload(&mut d, &from_f32(&g));
    let bo = upload(&mut d, &vec![0u8; 80 * n]);
    d.launch(
        &prg,
        &[&bo, &bx, &by, &bs, &bg],
        &[u32::from(araw)],
        [(n / 64) as u32, 1, 1],
        [64, 1, 1],
    )
    .unwrap();
    let o = u32s(&download(&mut d, &bo, 80 * n));
    // Dwords holding f16 values (low, high half) and f32 values: NaN compares as any NaN.
    let f16_words = [0, 1, 2, 4, 6, 8, 9, 10];
    for i in 0..n {
        let want = half16_cpu(x[i], y[i], s[2 * i], s[2 * i + 1], g[i], araw);
        for (k, &w) in want.iter().enumerate() {
            let got = o[20 * i + k];
            let ctx = || {
                format!(
                    "lane {i} word {k}: got {got:#010x}, want {w:#010x} (x {:#06x} y {:#06x} g {})",
                    x[i], y[i], g[i]
                )
            };
            let halves = |v: u32| [v & 0xFFFF, v >> 16];
            if f16_words.contains(&k) {
                for (gh, wh) in halves(got).into_iter().zip(halves(w)) {
                    assert!(gh == wh || (is_nan16(gh) && is_nan16(wh)), "{}", ctx());
                }
            } else if matches!(k, 3 | 5) {
                let (gf, wf) = (f32::from_bits(got), f32::from_bits(w));
                assert!(got == w || (gf.is_nan() && wf.is_nan()), "{}", ctx());
            } else if k == 18 || k == 19 {
                // Low half f16; high half an integer (18) or the sign-set bits of y (19).
                let (gh, wh) = (got & 0xFFFF, w & 0xFFFF);
                assert!(gh == wh || (is_nan16(gh) && is_nan16(wh)), "{}", ctx());
                assert_eq!(got >> 16, w >> 16, "{}", ctx());
            } else {
                assert_eq!(got, w, "{}", ctx());
            }
        }
    }
}

/// `per_target!` for the cases listed, and for the fixture cases among them (`wave64 [...]`)
/// again in module `wave64` on the wave64 builds.
macro_rules! wave32_and_64 {
    ($($name:ident $(except [$($skip:ident),*])?),* $(,)? ;
     wave64 [$($w64:ident $(except [$($skip64:ident),*])?),* $(,)?]) => {
        per_target!($($name $(except [$($skip),*])?),*);
        mod wave64 {
            use super::{Run, Target};
            $(fn $w64(t: Target) {
                super::$w64(Run { t, wave64: true })
            })*
            per_target!($($w64 $(except [$($skip64),*])?),*);
        }
    };
}

// Every case above, on every emulated backend; the fixture cases on both wave sizes.
// pci_gfx950 runs the gfx950 builds (tests/fixtures/kernels/emu/gfx950, wave64 only); the
// captured gfx950 gemm sums in another order than this test's reference (it is checked in
// emu_gfx950.rs). `half16` is left out until the gfx9 interpreter models v_fma_mix_f32 (VOP3P
// mixed precision), where it stops, and SDWA (its gfx950 build has v_cmp_lt_i16_sdwa,
// v_min_f16_sdwa, ...; exec_gfx9 refuses SDWA); the interpreter's fault does not reach the
// driver either, so it ends as a wait timeout.
wave32_and_64!(
    vadd_matches_cpu,
    saxpy_matches_cpu_fma,
    reduce_with_lds_barriers_and_atomics,
    tiled_matmul_is_bit_exact,
    branches_and_exec_masking,
    scratch_private_array,
    transcendentals_within_ulps_and_integer_division_exact,
    captured_plus_kernel_adds_three_floats,
    captured_gemm_kernel_multiplies_32x32 except [pci_gfx950],
    returning_global_atomics,
    sixteen_bit_float_and_integer_math except [pci_gfx950];
    wave64 [
        vadd_matches_cpu,
        saxpy_matches_cpu_fma,
        reduce_with_lds_barriers_and_atomics,
        tiled_matmul_is_bit_exact,
        branches_and_exec_masking,
        scratch_private_array,
        transcendentals_within_ulps_and_integer_division_exact,
        returning_global_atomics,
        sixteen_bit_float_and_integer_math except [pci_gfx950],
    ]
);
