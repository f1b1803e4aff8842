//! The ISA corpus (tests/fixtures/kernels/{gfx1100,gfx1200}/*.elf, clang-22 builds of src/*.cl)
//! through the interpreter's pre-decoder: every instruction either becomes an operation or is
//! an error naming the PC, the instruction and its encoding — never skipped. The kernels whose
//! every instruction is emulated are listed; a change that drops one fails here. Then most of
//! those kernels run through the runtime on every emulated backend against CPU
//! references written from their OpenCL source (bit-exact: integer results, and float results
//! of single correctly rounded operations in the source's order). Not run: scratch.cl (its
//! 256 B/lane private array exceeds the 128 B/lane scratch the runtime sets up, so it ends in a
//! memory fault), convert.cl (reads elements other lanes store in the same launch), multi.cl,
//! vadd/saxpy/matmul.cl (covered by the tests/fixtures/kernels/emu versions in emu_kernels.rs).

// Lane loops index inputs and outputs together.
#![allow(clippy::needless_range_loop)]

#[macro_use]
mod common;

use emu::code::Program;
use emu::exec::ops::{Br, K};
use traces::target::GfxTarget;

/// (kernel, first unsupported instruction's error) for every corpus ELF of `dir`.
fn survey(dir: &str, target: GfxTarget) -> Vec<(String, Option<String>)> {
    let d = format!(
        "{}/../tests/fixtures/kernels/{dir}",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut names: Vec<_> = std::fs::read_dir(&d)
        .unwrap_or_else(|e| panic!("{d}: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "elf"))
        .collect();
    names.sort();
    let mut out = Vec::new();
    for p in names {
        let elf = std::fs::read(&p).unwrap();
        let co = runtime::kernel::Code::parse(&elf).unwrap();
        let entry = co.kernel.entry as usize;
        let code = &co.image[entry..];
        let prog = Program::new(code, 0x1_0000_0000, target);
        // Walk the code reachable from the entry (OpenCL builds place the kernel's callable
        // twin, which returns with s_setpc_b64, after it): fall through, follow branches, stop
        // at s_endpgm.
        let mut first: Option<String> = None;
        let mut todo = vec![0u32];
        let mut seen = std::collections::HashSet::new();
        while let Some(mut off) = todo.pop() {
            while seen.insert(off) {
                match prog.at(off) {
                    Ok(op) => {
                        let next = off + u32::from(op.len);
                        match op.k {
                            K::Endpgm => break,
                            K::Branch(b) => {
                                let t = (i64::from(off) + 4 + i64::from(op.imm) * 4) as u32;
                                todo.push(t);
                                if b == Br::Always {
                                    break;
                                }
                            }
                            _ => {}
                        }
                        off = next;
                    }
                    Err(u) => {
                        assert!(
                            u.what.contains("encoding"),
                            "{}: unsupported report without the encoding: {}",
                            p.display(),
                            u.what
                        );
                        let e = format!("PC {:#x}: {}", u.pc, u.what);
                        if first.as_ref().is_none_or(|f| *f > e) {
                            first = Some(e);
                        }
                        break;
                    }
                }
            }
        }
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        out.push((name, first));
    }
    out
}

fn check(dir: &str, target: GfxTarget, want: &[&str]) {
    let s = survey(dir, target);
    for (n, e) in &s {
        match e {
            None => eprintln!("{dir}/{n}: every instruction emulated"),
            Some(e) => eprintln!("{dir}/{n}: {e}"),
        }
    }
    for w in want {
        let got = s.iter().find(|(n, _)| n == w);
        assert!(
            matches!(got, Some((_, None))),
            "{dir}/{w} should be fully emulated: {got:?}"
        );
    }
}

#[test]
fn gfx1100_corpus_predecodes() {
    check(
        "gfx1100",
        GfxTarget::from_target_version(110000),
        GFX1100_FULL,
    );
}

#[test]
fn gfx1200_corpus_predecodes() {
    check(
        "gfx1200",
        GfxTarget::from_target_version(120001),
        GFX1200_FULL,
    );
}

/// Kernels whose reachable code is fully emulated (the same sources on both generations; the
/// rest stop at DPP, buffer (MUBUF/VBUFFER), d16 loads, 16-bit/packed VALU, f64
/// division, frexp or WMMA — named with PC and encoding by the survey).
const FULL: &[&str] = &[
    "ballot",
    "bperm",
    "bits",
    "branches",
    "convert",
    "i64",
    "intdiv",
    "lds2",
    "matmul",
    "minmax",
    "multi",
    "reduce",
    "saxpy",
    "scratch",
    "select",
    "smem",
    "transpose",
    "vadd",
];
const GFX1100_FULL: &[&str] = FULL;
const GFX1200_FULL: &[&str] = FULL;

// ---- Corpus kernels run through the runtime against CPU references (every backend) ----

use common::{
    download, f32s, floats, from_f32, from_u32, from_u64, opts, rng, u32s, upload, Target,
};
use emu::EmuArch;
use runtime::platform::GpuBuffer;
use runtime::{Device, DeviceOptions};

fn corpus_elf(arch: EmuArch, name: &str) -> Vec<u8> {
    let dir = match arch {
        EmuArch::Gfx1201 => "gfx1200",
        EmuArch::Gfx950 => "gfx950",
        _ => "gfx1100",
    };
    let p = format!(
        "{}/../tests/fixtures/kernels/{dir}/{name}.elf",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn dev(t: Target) -> Device {
    t.device(DeviceOptions {
        wait_timeout: std::time::Duration::from_secs(2),
        profile: false,
        ..opts()
    })
}

/// Lanes of the one work-group every case launches.
const N: usize = 32;

/// Runs `name` as one group of N threads on `bufs` (inputs uploaded, output zeroed) and returns
/// the first buffer's N dwords.
fn run1(t: Target, name: &str, inputs: &[Vec<u8>], out_bytes: usize, values: &[u32]) -> Vec<u32> {
    let mut d = dev(t);
    let prg = d.load_program(&corpus_elf(t.arch(), name)).unwrap();
    let out = upload(&mut d, &vec![0u8; out_bytes]);
    let ins: Vec<GpuBuffer> = inputs.iter().map(|b| upload(&mut d, b)).collect();
    let mut refs = vec![&out];
    refs.extend(ins.iter());
    d.launch(&prg, &refs, values, [1, 1, 1], [N as u32, 1, 1])
        .unwrap();
    u32s(&download(&mut d, &out, out_bytes))
}

fn select(t: Target) {
    let x: Vec<f32> = rng(N, 1)
        .iter()
        .map(|v| (*v >> 8) as f32 / 1e4 - 800.0)
        .collect();
    let c: Vec<u32> = rng(N, 2).iter().map(|v| v & 1).collect();
    let xb = from_u32(&x.iter().map(|f| f.to_bits()).collect::<Vec<_>>());
    let r = run1(t, "select", &[xb, from_u32(&c)], 4 * N, &[]);
    for i in 0..N {
        let want = if c[i] != 0 { x[i] } else { -x[i] * 0.25 };
        assert_eq!(r[i], want.to_bits(), "{t:?} o[{i}]");
    }
}

fn i64_ops(t: Target) {
    let x: Vec<u64> = rng(2 * (N + 2), 3)
        .chunks(2)
        .map(|c| u64::from(c[0]) | (u64::from(c[1]) << 32))
        .collect();
    let y: Vec<u64> = rng(2 * (N + 1), 4)
        .chunks(2)
        .map(|c| u64::from(c[0]) | (u64::from(c[1]) << 32))
        .collect();
    let r = run1(t, "i64", &[from_u64(&x), from_u64(&y)], 8 * N, &[]);
    for i in 0..N {
        let (xi, x1, x2) = (x[i] as i64, x[i + 1] as i64, x[i + 2] as i64);
        let want = xi
            .wrapping_mul(x1)
            .wrapping_add(xi >> 3)
            .wrapping_add((y[i] << 7) as i64)
            .wrapping_add(xi ^ x2)
            .wrapping_add(y[i].max(y[i + 1]) as i64) as u64;
        let got = u64::from(r[2 * i]) | (u64::from(r[2 * i + 1]) << 32);
        assert_eq!(got, want, "{t:?} o[{i}]");
    }
}

fn intdiv(t: Target) {
    let x: Vec<u32> = rng(N + 1, 5)
        .iter()
        .map(|v| (*v as i32 >> (v & 15)) as u32 | 1)
        .collect();
    let y: Vec<u32> = rng(N + 3, 6).iter().map(|v| (v >> (v & 7)) | 1).collect();
    let r = run1(t, "intdiv", &[from_u32(&x), from_u32(&y)], 4 * N, &[]);
    for i in 0..N {
        let (a, b) = (x[i] as i32, x[i + 1] as i32);
        let want = a
            .wrapping_div(b)
            .wrapping_add(a % 7)
            .wrapping_add((y[i] / y[i + 2]) as i32)
            .wrapping_add((y[i] % y[i + 3]) as i32);
        assert_eq!(r[i] as i32, want, "{t:?} o[{i}]");
    }
}

fn smem(t: Target) {
    let x = rng(32, 7);
    let v: Vec<u32> = rng(8, 8);
    let r = run1(t, "smem", &[from_u32(&x)], 4 * N, &v);
    let a: Vec<i32> = v.iter().map(|x| *x as i32).collect();
    let xs: Vec<i32> = x.iter().map(|x| *x as i32).collect();
    let want = xs[0]
        .wrapping_add(xs[1])
        .wrapping_add(xs[5])
        .wrapping_add(xs[17])
        .wrapping_add(a[0].wrapping_mul(a[1]))
        .wrapping_add(a[2])
        .wrapping_sub(a[3])
        .wrapping_add(a[4] ^ a[5])
        .wrapping_add(a[6] | a[7]);
    for (i, g) in r.iter().enumerate().take(N) {
        assert_eq!(*g as i32, want, "{t:?} o[{i}]");
    }
}

fn ballot(t: Target) {
    let x: Vec<u32> = rng(N, 9).iter().map(|v| v % 12).collect();
    let r = run1(t, "ballot", &[from_u32(&x)], 4 * N, &[]);
    let mask = (0..N).fold(0u32, |m, i| m | (u32::from(x[i] > 5) << i));
    for i in 0..N {
        let want = x[0]
            .wrapping_add(x[3])
            .wrapping_add(mask)
            .wrapping_add(i as u32);
        assert_eq!(r[i], want, "{t:?} o[{i}]");
    }
}

fn bits(t: Target) {
    let x = rng(N + 2, 10);
    let r = run1(t, "bits", &[from_u32(&x)], 4 * N, &[]);
    for i in 0..N {
        let v = x[i];
        let sbfe = (((v >> 2) << 23) as i32 >> 23) as u32;
        let align = ((((u64::from(v)) << 32) | u64::from(x[i + 1])) >> 5) as u32;
        let perm = (x[i + 2] & 0xFFFF) | (v << 16);
        let want = v
            .count_ones()
            .wrapping_add((v | 1).leading_zeros())
            .wrapping_add((v | 1).trailing_zeros())
            .wrapping_add((v >> 5) & 0x3f)
            .wrapping_add(v.reverse_bits())
            .wrapping_add((v >> 3) & 0x7F)
            .wrapping_add(sbfe)
            .wrapping_add(align)
            .wrapping_add(perm);
        assert_eq!(r[i], want, "{t:?} o[{i}] (v = {v:#x})");
    }
}

/// Runs `name` on buffers initialised with `bufs` and returns every buffer's contents after.
fn run(
    t: Target,
    name: &str,
    bufs: &[Vec<u8>],
    values: &[u32],
    grid: [u32; 3],
    local: [u32; 3],
) -> Vec<Vec<u8>> {
    let mut d = dev(t);
    let prg = d.load_program(&corpus_elf(t.arch(), name)).unwrap();
    let bs: Vec<GpuBuffer> = bufs.iter().map(|b| upload(&mut d, b)).collect();
    let refs: Vec<&GpuBuffer> = bs.iter().collect();
    d.launch(&prg, &refs, values, grid, local).unwrap();
    bs.iter()
        .zip(bufs)
        .map(|(b, init)| download(&mut d, b, init.len()))
        .collect()
}

fn minmax(t: Target) {
    let x = floats(N + 1, 11, -0.5, 1.5);
    let xi: Vec<u32> = rng(N + 1, 12)
        .iter()
        .map(|v| ((*v as i32) >> 22) as u32)
        .collect();
    let r = run(
        t,
        "minmax",
        &[vec![0; 4 * N], from_f32(&x), vec![0; 4 * N], from_u32(&xi)],
        &[],
        [1, 1, 1],
        [N as u32, 1, 1],
    );
    let (o, oi) = (f32s(&r[0]), f32s(&r[2]));
    for i in 0..N {
        // fminf(fmaxf(x, 0), 1); the inputs hold no NaN.
        let want = x[i].clamp(0.0, 1.0) * x[i + 1];
        assert_eq!(o[i].to_bits(), want.to_bits(), "{t:?} o[{i}]");
        let (a, b) = (xi[i] as i32, xi[i + 1] as i32);
        let wi = a.min(100).wrapping_add(b.wrapping_abs());
        assert_eq!(oi[i].to_bits() as i32, wi, "{t:?} oi[{i}]");
    }
}

fn lds2(t: Target) {
    let x = floats(4 * 128, 13, -10.0, 10.0);
    let r = run(
        t,
        "lds2",
        &[vec![0; 16 * 64], from_f32(&x)],
        &[],
        [1, 1, 1],
        [64, 1, 1],
    );
    let o = f32s(&r[0]);
    for t in 0..64 {
        for c in 0..4 {
            let want = x[4 * (127 - t) + c] + x[4 * (t ^ 5) + c];
            assert_eq!(o[4 * t + c].to_bits(), want.to_bits(), "{t:?} o[{t}].{c}");
        }
    }
}

fn transpose(t: Target) {
    let n = 32usize;
    let x = floats(n * n, 14, -1.0, 1.0);
    let r = run(
        t,
        "transpose",
        &[vec![0; 4 * n * n], from_f32(&x)],
        &[n as u32],
        [2, 2, 1],
        [16, 16, 1],
    );
    let o = f32s(&r[0]);
    for row in 0..n {
        for col in 0..n {
            assert_eq!(o[col * n + row], x[row * n + col], "{t:?} ({row},{col})");
        }
    }
}

fn reduce_tree(t: Target) {
    let g = 3usize;
    let x = floats(256 * g, 15, -4.0, 4.0);
    let r = run(
        t,
        "reduce",
        &[vec![0; 4 * g], from_f32(&x)],
        &[],
        [g as u32, 1, 1],
        [256, 1, 1],
    );
    let o = f32s(&r[0]);
    for (k, chunk) in x.chunks(256).enumerate() {
        let mut s = chunk.to_vec();
        let mut h = 128;
        while h > 0 {
            for t in 0..h {
                s[t] += s[t + h];
            }
            h >>= 1;
        }
        assert_eq!(o[k].to_bits(), s[0].to_bits(), "{t:?} o[{k}]");
    }
}

fn branches(t: Target) {
    let n = 40usize;
    let x: Vec<u32> = rng(n, 16)
        .iter()
        .map(|v| ((*v as i32) % 20) as u32)
        .collect();
    let r = run(
        t,
        "branches",
        &[vec![0; 4 * N], from_u32(&x)],
        &[n as u32],
        [1, 1, 1],
        [N as u32, 1, 1],
    );
    let mut s = 0i32;
    for (k, v) in x.iter().enumerate() {
        let v = *v as i32;
        if v > 0 {
            s = s.wrapping_add(v);
        } else if v < -5 {
            s = s.wrapping_sub(2 * v);
        } else {
            s ^= k as i32;
        }
    }
    for (i, c) in r[0].chunks_exact(4).enumerate() {
        assert_eq!(
            i32::from_le_bytes([c[0], c[1], c[2], c[3]]),
            s,
            "{t:?} o[{i}]"
        );
    }
}

fn bperm(t: Target) {
    let x = rng(N, 18);
    let r = run1(t, "bperm", &[from_u32(&x)], 4 * N, &[]);
    for i in 0..N {
        // ds_bpermute from lane i^1, plus ds_swizzle with and-mask 0x1f (the identity).
        let want = x[i ^ 1].wrapping_add(x[i]);
        assert_eq!(r[i], want, "{t:?} o[{i}]");
    }
}

// Every run above, on every emulated backend (PCI and USB run the gfx1100 builds).
// pci_gfx950: `ballot` has no gfx950 build in tests/fixtures/kernels/gfx950.
per_target!(
    bperm,
    select,
    i64_ops,
    intdiv,
    smem,
    ballot except [pci_gfx950],
    bits,
    minmax,
    lds2,
    transpose,
    reduce_tree,
    branches,
);
