//! The interpreter's instruction families beyond the base set, on clang-22 kernels
//! (tests/fixtures/kernels/emu-isa, built by its build.sh for gfx1100 and gfx1201): WMMA gemms
//! (f16, bf16, iu8) against a CPU gemm, MUBUF/MTBUF buffer loads and stores (raw and struct
//! descriptors, range checks, a typed load) against the byte layout the descriptors describe,
//! DPP16/DPP8 lane permutes against a CPU model of the ISA's lane selection, and f64 division
//! (the div_scale/rcp/fma/div_fmas/div_fixup sequence) against IEEE division on the CPU.
//! Every case runs on every emulated backend.

#[macro_use]
mod common;

use common::{download, from_u32, opts, rng, u32s, upload, Target};
use emu::EmuArch;
use runtime::{Device, DeviceOptions};

fn fixture(t: Target, name: &str) -> Vec<u8> {
    let arch = match t.arch() {
        EmuArch::Gfx1201 => "gfx1201",
        _ => "gfx1100",
    };
    let p = format!(
        "{}/../tests/fixtures/kernels/emu-isa/{arch}/{name}.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p)
        .unwrap_or_else(|e| panic!("{p}: {e} (run tests/fixtures/kernels/emu-isa/build.sh)"))
}

fn dev(t: Target) -> Device {
    t.device(DeviceOptions {
        wait_timeout: std::time::Duration::from_secs(5),
        ..opts()
    })
}

/// f16 bits of `x`, which must be 0 or a normal f16 with at most 10 mantissa bits.
fn f16_bits(x: f32) -> u16 {
    if x == 0.0 {
        return 0;
    }
    let b = x.to_bits();
    let e = ((b >> 23) & 0xFF) as i32 - 127 + 15;
    assert!(
        (1..31).contains(&e) && b & 0x1FFF == 0,
        "{x} is not an exact f16"
    );
    ((b >> 16) & 0x8000) as u16 | (e as u16) << 10 | ((b >> 13) & 0x3FF) as u16
}

const M: usize = 32;
const N: usize = 48;
const K: usize = 64;

/// Inputs m/8, m in -24..24: every product and sum of the gemm is exact in f32, so the
/// result does not depend on the order the hardware accumulates in.
fn small(n: usize, seed: u32) -> Vec<f32> {
    rng(n, seed)
        .into_iter()
        .map(|v| ((v % 49) as i32 - 24) as f32 / 8.0)
        .collect()
}

fn cpu_gemm(a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut c = vec![0.0; M * N];
    for r in 0..M {
        for col in 0..N {
            c[r * N + col] = (0..K).map(|k| a[r * K + k] * b[k * N + col]).sum();
        }
    }
    c
}

fn run_gemm(t: Target, name: &str, a: &[u8], b: &[u8]) -> Vec<u32> {
    let mut d = dev(t);
    let prg = d.load_program(&fixture(t, name)).unwrap();
    let (ba, bb) = (upload(&mut d, a), upload(&mut d, b));
    let bc = upload(&mut d, &vec![0u8; 4 * M * N]);
    d.launch(
        &prg,
        &[&bc, &ba, &bb],
        &[K as u32, N as u32],
        [(N / 16) as u32, (M / 16) as u32, 1],
        [32, 1, 1],
    )
    .unwrap();
    u32s(&download(&mut d, &bc, 4 * M * N))
}

fn wmma_f16_gemm_matches_cpu(t: Target) {
    let (a, b) = (small(M * K, 1), small(K * N, 2));
    let h = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|&x| f16_bits(x).to_le_bytes()).collect() };
    let c = run_gemm(t, "wmma_f16", &h(&a), &h(&b));
    let f = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
    let want = cpu_gemm(&f(&a), &f(&b));
    for (i, (&g, &w)) in c.iter().zip(&want).enumerate() {
        assert_eq!(f32::from_bits(g), w as f32, "{t:?} C[{}][{}]", i / N, i % N);
    }
}

fn wmma_bf16_gemm_matches_cpu(t: Target) {
    let (a, b) = (small(M * K, 3), small(K * N, 4));
    let h = |v: &[f32]| -> Vec<u8> {
        v.iter()
            .flat_map(|&x| ((x.to_bits() >> 16) as u16).to_le_bytes())
            .collect()
    };
    let c = run_gemm(t, "wmma_bf16", &h(&a), &h(&b));
    let f = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
    let want = cpu_gemm(&f(&a), &f(&b));
    for (i, (&g, &w)) in c.iter().zip(&want).enumerate() {
        assert_eq!(f32::from_bits(g), w as f32, "{t:?} C[{}][{}]", i / N, i % N);
    }
}

fn wmma_iu8_gemm_matches_cpu(t: Target) {
    // A signed, B unsigned (the kernel's sign flags).
    let a: Vec<u8> = rng(M * K, 5).into_iter().map(|v| v as u8).collect();
    let b: Vec<u8> = rng(K * N, 6).into_iter().map(|v| (v >> 8) as u8).collect();
    let c = run_gemm(t, "wmma_iu8", &a, &b);
    for r in 0..M {
        for col in 0..N {
            let want: i32 = (0..K)
                .map(|k| i32::from(a[r * K + k] as i8) * i32::from(b[k * N + col]))
                .sum();
            assert_eq!(c[r * N + col] as i32, want, "{t:?} C[{r}][{col}]");
        }
    }
}

fn mubuf_loads_and_stores_through_descriptors(t: Target) {
    let mut d = dev(t);
    let prg = d.load_program(&fixture(t, "mubuf")).unwrap();
    let input = rng(256, 7);
    let inb: Vec<u8> = from_u32(&input);
    let fill = 0x5A5A_5A5Au32;
    let bin = upload(&mut d, &inb);
    let bout = upload(&mut d, &from_u32(&vec![fill; 1024 + 64]));
    let limit = 100u32;
    d.launch(&prg, &[&bout, &bin], &[limit], [1, 1, 1], [64, 1, 1])
        .unwrap();
    let out = u32s(&download(&mut d, &bout, 4 * (1024 + 64)));
    let byte = |o: usize| u32::from(inb[o]);
    let half = |o: usize| byte(o) | byte(o + 1) << 8;
    for i in 0..64 {
        let a = input[i];
        let g = input[4 * i + 2];
        let mut want = vec![
            a,
            input[2 * i],
            input[2 * i + 1],
            input[4 * i],
            input[4 * i + 1],
            input[4 * i + 2],
            input[4 * i + 3],
            byte(3 * i + 1) | half(2 * i + 2) << 16,
            // Beyond num_records (`limit` bytes): 0.
            if 4 * i as u32 + 4 <= limit { a } else { 0 },
            g,
            // store_b8 at byte 40, store_b16 at 42; byte 41 keeps the fill.
            (a & 0xFF) | (fill & 0xFF00) | ((a >> 8) & 0xFFFF) << 16,
            a ^ g,
            // tbuffer_load_format_x (BUF_FMT_32_UINT), idxen + offen: record i, byte 8 + 4.
            input[4 * i + 3],
        ];
        want.resize(16, fill);
        assert_eq!(&out[16 * i..16 * i + 16], &want[..], "{t:?} lane {i}");
    }
    // Stores beyond num_records are dropped.
    assert!(
        out[1024..].iter().all(|&x| x == fill),
        "{t:?}: out-of-range store written"
    );
}

/// The lane DPP16 control `ctrl` reads for `lane` (None: outside its row), per the ISA's
/// table of DPP_CTRL values.
fn dpp16(ctrl: u32, lane: usize) -> Option<usize> {
    let row = lane / 16 * 16;
    let i = lane % 16;
    let n = (ctrl & 15) as usize;
    Some(match ctrl {
        0..=0xFF => lane / 4 * 4 + ((ctrl >> (2 * (lane % 4))) & 3) as usize,
        0x101..=0x10F if i + n < 16 => lane + n,
        0x111..=0x11F if i >= n => lane - n,
        0x121..=0x12F => row + (i + 16 - n) % 16,
        0x140 => row + 15 - i,
        0x141 => lane / 8 * 8 + 7 - lane % 8,
        0x150..=0x15F => row + n,
        0x160..=0x16F => row + (i ^ n),
        _ => return None,
    })
}

fn dpp_lane_permutes_match_cpu(t: Target) {
    let mut d = dev(t);
    let prg = d.load_program(&fixture(t, "dpp")).unwrap();
    // x: normal f32 bit patterns (o[14] multiplies them); old: anything.
    let mut input: Vec<u32> = rng(32, 8)
        .into_iter()
        .map(|v| 0x3000_0000 | (v & 0x0FFF_FFFF))
        .collect();
    input.extend(rng(32, 9));
    let bin = upload(&mut d, &from_u32(&input));
    let bout = upload(&mut d, &vec![0u8; 4 * 18 * 32]);
    let k = 0x0102_0304u32;
    d.launch(&prg, &[&bout, &bin], &[k], [1, 1, 1], [32, 1, 1])
        .unwrap();
    let out = u32s(&download(&mut d, &bout, 4 * 18 * 32));
    let (x, old) = (&input[..32], &input[32..]);
    // update_dpp(old, x, ctrl, row_mask, bank_mask, bound_ctrl)
    let upd = |i: usize, ctrl: u32, rows: u32, banks: u32, bc: bool| -> u32 {
        if rows >> (i / 16) & 1 == 0 || banks >> (i % 16 / 4) & 1 == 0 {
            return old[i];
        }
        match dpp16(ctrl, i) {
            Some(s) => x[s],
            None if bc => 0,
            None => old[i],
        }
    };
    let dpp8 = |i: usize, sel: [usize; 8]| x[i / 8 * 8 + sel[i % 8]];
    for i in 0..32 {
        let fx = f32::from_bits(x[i] & 0x3FFF_FFFF);
        let fs = f32::from_bits(match dpp16(0x1B, i) {
            Some(s) => x[s] & 0x3FFF_FFFF,
            None => 0,
        });
        let want = [
            upd(i, 0xB1, 15, 15, false),
            upd(i, 0x4F, 15, 15, false),
            upd(i, 0x101, 15, 15, false),
            upd(i, 0x113, 15, 15, false),
            upd(i, 0x112, 15, 15, true),
            upd(i, 0x125, 15, 15, false),
            upd(i, 0x140, 15, 15, false),
            upd(i, 0x141, 15, 15, false),
            upd(i, 0xB1, 0x5, 0x3, false),
            upd(i, 0x157, 15, 15, false),
            upd(i, 0x165, 15, 15, false),
            dpp8(i, [7, 6, 5, 4, 3, 2, 1, 0]),
            dpp8(i, [1, 1, 2, 3, 0, 0, 7, 6]),
            x[i].wrapping_add(dpp16(0x111, i).map_or(0, |s| x[s])),
            (fx * fs).to_bits(),
            upd(i, 0x121, 15, 15, false).wrapping_sub(i as u32),
            // VOP3 DPP: only src0 goes through the permute.
            dpp16(0x111, i)
                .map_or(0, |s| x[s])
                .wrapping_add(old[i])
                .wrapping_add(k),
            dpp8(i, [1, 0, 3, 2, 5, 4, 7, 6])
                .wrapping_add(old[i])
                .wrapping_add(x[i]),
        ];
        assert_eq!(&out[18 * i..18 * i + 18], &want[..], "{t:?} lane {i}");
    }
}

fn f64_division_matches_cpu(t: Target) {
    let mut d = dev(t);
    let prg = d.load_program(&fixture(t, "fdiv64")).unwrap();
    let n = 100usize;
    let r = rng(4 * n, 10);
    let val = |k: usize| {
        let m = f64::from(r[2 * k]) / f64::from(u32::MAX) - 0.5;
        let e = (r[2 * k + 1] % 40) as i32 - 20;
        m * 2f64.powi(e)
    };
    let x: Vec<f64> = (0..n).map(val).collect();
    let y: Vec<f64> = (n..2 * n).map(val).collect();
    let b = |v: &[f64]| -> Vec<u8> { v.iter().flat_map(|f| f.to_le_bytes()).collect() };
    let (bx, by) = (upload(&mut d, &b(&x)), upload(&mut d, &b(&y)));
    let bout = upload(&mut d, &vec![0u8; 8 * 6 * n]);
    d.launch(
        &prg,
        &[&bout, &bx, &by],
        &[n as u32],
        [n.div_ceil(64) as u32, 1, 1],
        [64, 1, 1],
    )
    .unwrap();
    let raw = download(&mut d, &bout, 8 * 6 * n);
    let out: Vec<f64> = raw
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    for i in 0..n {
        let (a, bb) = (x[i], y[i]);
        let want = [
            a / bb,
            1.0 / bb,
            a.abs().sqrt(),
            f64::from((a * 1000.0) as i32),
            f64::from((a / 3.0) as f32),
            a.mul_add(bb, -a / (bb + 0.5)),
        ];
        for (k, w) in want.iter().enumerate() {
            assert_eq!(
                out[6 * i + k].to_bits(),
                w.to_bits(),
                "{t:?} lane {i} result {k}: {} vs {w}",
                out[6 * i + k]
            );
        }
    }
}

// pci_gfx950: the ISA cases are RDNA builds (WMMA has no gfx9 form; no gfx950 builds).
per_target!(
    wmma_f16_gemm_matches_cpu except [pci_gfx950],
    wmma_bf16_gemm_matches_cpu except [pci_gfx950],
    wmma_iu8_gemm_matches_cpu except [pci_gfx950],
    mubuf_loads_and_stores_through_descriptors except [pci_gfx950],
    dpp_lane_permutes_match_cpu except [pci_gfx950],
    f64_division_matches_cpu except [pci_gfx950],
);
