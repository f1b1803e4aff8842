//! The emulated GPU runs real clang-22 kernels (tests/fixtures/kernels/emu: gfx1100 builds, and
//! gfx1201/ the same sources built for RDNA4) and the captured tinygrad kernels of both
//! generations through the runtime; results are compared with the same CPU references. Every
//! case runs on every emulated backend (KFD gfx1100/gfx1201, PCI and USB gfx1100).

#[macro_use]
mod common;

use common::{
    download, f32s, fixture, floats, from_f32, from_u32, opts, rng, shared, u32s, upload, Target,
};
use runtime::emu::EmuArch;
use runtime::{Device, DeviceOptions};

fn dev(t: Target) -> Device {
    t.device(DeviceOptions {
        wait_timeout: std::time::Duration::from_secs(2),
        ..opts()
    })
}

fn vadd_matches_cpu(t: Target) {
    common::check_vadd(&mut dev(t), t.arch(), 1000, 1);
}

fn saxpy_matches_cpu_fma(t: Target) {
    let arch = t.arch();
    let mut d = dev(t);
    let n = 777usize;
    let x = floats(n, 3, -10.0, 10.0);
    let y = floats(n, 4, -10.0, 10.0);
    let alpha = 1.7f32;
    let prg = d.load_program(&fixture(arch, "saxpy")).unwrap();
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

fn reduce_with_lds_barriers_and_atomics(t: Target) {
    let arch = t.arch();
    let mut d = dev(t);
    let groups = 5usize;
    let v = rng(256 * groups, 5);
    let prg = d.load_program(&fixture(arch, "reduce")).unwrap();
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

fn run_matmul(arch: EmuArch, d: &mut Device, n: usize) -> (Vec<f32>, Vec<f32>) {
    let a = floats(n * n, 6, -1.0, 1.0);
    let b = floats(n * n, 7, -1.0, 1.0);
    let prg = d.load_program(&fixture(arch, "matmul")).unwrap();
    let (ba, bb) = (upload(d, &from_f32(&a)), upload(d, &from_f32(&b)));
    let bc = upload(d, &vec![0u8; 4 * n * n]);
    let g = (n / 16) as u32;
    d.launch(&prg, &[&bc, &ba, &bb], &[n as u32], [g, g, 1], [16, 16, 1])
        .unwrap();
    (f32s(&download(d, &bc, 4 * n * n)), matmul_cpu(&a, &b, n))
}

fn tiled_matmul_is_bit_exact(t: Target) {
    let arch = t.arch();
    let mut d = dev(t);
    let (got, want) = run_matmul(arch, &mut d, 64);
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

fn branches_and_exec_masking(t: Target) {
    let arch = t.arch();
    let mut d = dev(t);
    let n = 256usize;
    // Small values make every path (and long and short loops) occur.
    let v: Vec<u32> = rng(n, 8)
        .into_iter()
        .enumerate()
        .map(|(i, x)| if i.is_multiple_of(2) { x % 1000 } else { x })
        .collect();
    let prg = d.load_program(&fixture(arch, "branches")).unwrap();
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

fn scratch_private_array(t: Target) {
    let arch = t.arch();
    let mut d = dev(t);
    let n = 96usize;
    let v = rng(n, 9);
    let prg = d.load_program(&fixture(arch, "scratch")).unwrap();
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

fn returning_global_atomics(t: Target) {
    let arch = t.arch();
    let mut d = dev(t);
    let prg = d.load_program(&fixture(arch, "atomic_rtn")).unwrap();
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

fn transcendentals_within_ulps_and_integer_division_exact(t: Target) {
    let arch = t.arch();
    let mut d = dev(t);
    let n = 128usize;
    let x = floats(n, 10, 0.01, 50.0);
    let iv = rng(2 * n, 11);
    let prg = d.load_program(&fixture(arch, "trans")).unwrap();
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

// Every case above, on every emulated backend.
per_target!(
    vadd_matches_cpu,
    saxpy_matches_cpu_fma,
    reduce_with_lds_barriers_and_atomics,
    tiled_matmul_is_bit_exact,
    branches_and_exec_masking,
    scratch_private_array,
    transcendentals_within_ulps_and_integer_division_exact,
    captured_plus_kernel_adds_three_floats,
    captured_gemm_kernel_multiplies_32x32,
    returning_global_atomics,
);
