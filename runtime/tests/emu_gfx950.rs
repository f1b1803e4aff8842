//! The emulated gfx950 (CDNA, wave64, 8 XCCs) executes code: the real gfx950 captures' tinygrad
//! programs (shared/traces/gfx950/{plus,gemm}_run_0) with their hardware launch, and MFMA gemms
//! compiled with clang-22 for gfx950 (tests/fixtures/kernels/emu/gfx950: f32 32x32x2, f16 and
//! bf16 16x16x32, and f32 with the accumulator in AGPRs), checked against CPU gemms; and the
//! demo kernels (capture/assets/src) built for gfx950: vadd, the LDS/barrier/atomic reduce, and
//! the tiled matmul (bit-exact against an fma CPU loop).

#[macro_use]
mod common;

use common::{download, f32s, floats, from_f32, from_u32, opts, rng, shared, u32s, upload};
use emu::EmuArch;
use runtime::{Device, DeviceOptions};

fn dev() -> Device {
    emu::open_kfd(
        EmuArch::Gfx950,
        DeviceOptions {
            wait_timeout: std::time::Duration::from_secs(5),
            ..opts()
        },
    )
    .unwrap()
    .0
}

fn fixture(name: &str) -> Vec<u8> {
    let p = format!(
        "{}/../tests/fixtures/kernels/emu/gfx950/{name}.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

#[test]
fn captured_plus_kernel_adds_three_floats() {
    let Some(elf) = shared(EmuArch::Gfx950, "plus_run_0/program0_E_3.elf") else {
        return;
    };
    let mut d = dev();
    let prg = d.load_program(&elf).unwrap();
    let a = [1.5f32, -2.25, 1e10];
    let b = [0.25f32, 8.0, -3.0];
    let (ba, bb) = (upload(&mut d, &from_f32(&a)), upload(&mut d, &from_f32(&b)));
    let out = upload(&mut d, &[0u8; 12]);
    // The capture's launch: one group of 3 threads (its NUM_THREAD_X), 12-byte buffers.
    d.launch(&prg, &[&out, &ba, &bb], &[], [1, 1, 1], [3, 1, 1])
        .unwrap();
    d.synchronize().unwrap();
    let r = f32s(&download(&mut d, &out, 12));
    for i in 0..3 {
        assert_eq!(r[i].to_bits(), (a[i] + b[i]).to_bits(), "out[{i}]");
    }
}

#[test]
fn captured_gemm_kernel_multiplies_32x32() {
    let Some(elf) = shared(EmuArch::Gfx950, "gemm_run_0/program0_r_32_32_16_2.elf") else {
        return;
    };
    // r_32_32_16_2 for gfx950 (its disassembly): thread t of group (x, y) computes
    // (0 + a[y][2t]·b[2t][x]) + a[y][2t+1]·b[2t+1][x] with v_pk_mul_f32 and two v_add_f32,
    // writes it to LDS, and thread 0 sums the 16 partials in order from 0.0. 32x32 groups of
    // 16 threads, spread over the 8 XCCs.
    let mut d = dev();
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
                let p0 = a[y * 32 + 2 * t] * b[(2 * t) * 32 + x];
                let p1 = a[y * 32 + 2 * t + 1] * b[(2 * t + 1) * 32 + x];
                acc += (0.0 + p0) + p1;
            }
            assert_eq!(r[y * 32 + x].to_bits(), acc.to_bits(), "out[{y}][{x}]");
        }
    }
}

/// Values k/8 in [-4, 4): exact in f32, f16 and bf16, so every input type sees the same matrix.
fn eighths(n: usize, seed: u32) -> Vec<f32> {
    common::rng(n, seed)
        .iter()
        .map(|r| ((r % 64) as i32 - 32) as f32 / 8.0)
        .collect()
}

fn f16_bits(x: f32) -> u16 {
    if x == 0.0 {
        return 0;
    }
    // Exact for the normal values `eighths` makes.
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xFF) as i32 - 127 + 15;
    sign | ((exp as u16) << 10) | ((b >> 13) & 0x3FF) as u16
}

fn cpu_gemm(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut c = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k)
                .map(|kk| f64::from(a[i * k + kk]) * f64::from(b[kk * n + j]))
                .sum();
        }
    }
    c
}

/// Runs one gemm fixture (one wave64 work-group) and compares with the CPU.
fn mfma_case(name: &str, m: usize, kd: usize, elem: fn(f32) -> Vec<u8>) {
    let mut d = dev();
    let prg = d.load_program(&fixture(name)).unwrap();
    let a = eighths(m * kd, 7);
    let b = eighths(kd * m, 8);
    let enc = |v: &[f32]| v.iter().flat_map(|x| elem(*x)).collect::<Vec<u8>>();
    let (ba, bb) = (upload(&mut d, &enc(&a)), upload(&mut d, &enc(&b)));
    let out = upload(&mut d, &vec![0xFFu8; m * m * 4]);
    d.launch(&prg, &[&ba, &bb, &out], &[kd as u32], [1, 1, 1], [64, 1, 1])
        .unwrap();
    let r = f32s(&download(&mut d, &out, m * m * 4));
    let want = cpu_gemm(&a, &b, m, m, kd);
    for i in 0..m * m {
        // Products of eighths and their sums up to 64 terms are exact in f32.
        assert_eq!(f64::from(r[i]), want[i], "{name}: c[{}][{}]", i / m, i % m);
    }
}

#[test]
fn mfma_f32_32x32x2_gemm_matches_cpu() {
    mfma_case("gemm_f32", 32, 16, |x| x.to_le_bytes().to_vec());
}

#[test]
fn mfma_f32_gemm_with_agpr_accumulator_matches_cpu() {
    mfma_case("gemm_f32_agpr", 32, 16, |x| x.to_le_bytes().to_vec());
}

#[test]
fn mfma_f16_16x16x32_gemm_matches_cpu() {
    mfma_case("gemm_f16", 16, 64, |x| f16_bits(x).to_le_bytes().to_vec());
}

#[test]
fn mfma_bf16_16x16x32_gemm_matches_cpu() {
    mfma_case("gemm_bf16", 16, 64, |x| {
        ((x.to_bits() >> 16) as u16).to_le_bytes().to_vec()
    });
}

#[test]
fn demo_vadd_matches_cpu() {
    common::check_vadd_elf(&mut dev(), &fixture("vadd"), 1000, 1);
}

#[test]
fn demo_reduce_with_lds_barriers_and_atomics() {
    let mut d = dev();
    let groups = 5usize;
    let v = rng(256 * groups, 5);
    let prg = d.load_program(&fixture("reduce")).unwrap();
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

#[test]
fn demo_tiled_matmul_is_bit_exact() {
    let n = 64usize;
    let mut d = dev();
    let a = floats(n * n, 6, -1.0, 1.0);
    let b = floats(n * n, 7, -1.0, 1.0);
    let prg = d.load_program(&fixture("matmul")).unwrap();
    let (ba, bb) = (upload(&mut d, &from_f32(&a)), upload(&mut d, &from_f32(&b)));
    let bc = upload(&mut d, &vec![0u8; 4 * n * n]);
    let g = (n / 16) as u32;
    d.launch(&prg, &[&bc, &ba, &bb], &[n as u32], [g, g, 1], [16, 16, 1])
        .unwrap();
    let got = f32s(&download(&mut d, &bc, 4 * n * n));
    for r in 0..n {
        for c in 0..n {
            let mut acc = 0f32;
            for k in 0..n {
                acc = a[r * n + k].mul_add(b[k * n + c], acc);
            }
            assert_eq!(got[r * n + c].to_bits(), acc.to_bits(), "c[{r}][{c}]");
        }
    }
}
