//! The ISA corpus (tests/fixtures/kernels/{gfx1100,gfx1200}/*.elf, clang-22 builds of src/*.cl)
//! through the interpreter's pre-decoder: every instruction either becomes an operation or is
//! an error naming the PC, the instruction and its encoding — never skipped. The kernels whose
//! every instruction is emulated are listed; a change that drops one fails here. Then most of
//! those kernels run through the runtime on the emulated gfx1100 and gfx1201 against CPU
//! references written from their OpenCL source (bit-exact: integer results, and float results
//! of single correctly rounded operations in the source's order). Not run: scratch.cl (its
//! 256 B/lane private array exceeds the 128 B/lane scratch the runtime sets up, so it ends in a
//! memory fault), convert.cl (reads elements other lanes store in the same launch), multi.cl,
//! vadd/saxpy/matmul.cl (covered by the tests/fixtures/kernels/emu versions in emu_kernels.rs).

// Lane loops index inputs and outputs together.
#![allow(clippy::needless_range_loop)]

use runtime::emu::code::Program;
use runtime::emu::exec::ops::{Br, K};
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
        let co = runtime::program::parse_code_object(&elf).unwrap();
        let entry = co.kernel.entry_offset as usize;
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

// ---- Corpus kernels run through the runtime against CPU references (both generations) ----

use runtime::emu::EmuArch;
use runtime::platform::{AllocKind, GpuBuffer};
use runtime::{Device, DeviceOptions};

fn corpus_elf(arch: EmuArch, name: &str) -> Vec<u8> {
    let dir = if arch == EmuArch::Gfx1201 {
        "gfx1200"
    } else {
        "gfx1100"
    };
    let p = format!(
        "{}/../tests/fixtures/kernels/{dir}/{name}.elf",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn dev(arch: EmuArch) -> Device {
    let opts = DeviceOptions {
        wait_timeout: std::time::Duration::from_secs(2),
        compute_ring_size: 1 << 20,
        sdma_ring_size: 1 << 16,
        kernargs_size: 1 << 20,
        staging_chunk: 1 << 20,
        staging_count: 2,
        profile: false,
        sqtt: false,
        sqtt_buffer_size: 1 << 20,
        sqtt_itrace_se_mask: 0b11,
    };
    Device::open_emulated(arch, opts).unwrap().0
}

fn rng(n: usize, seed: u32) -> Vec<u32> {
    let mut x = seed.wrapping_mul(2654435761) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        })
        .collect()
}

fn bytes32(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn bytes64(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn up(d: &mut Device, data: &[u8]) -> GpuBuffer {
    let b = d.alloc(data.len().max(4) as u64, AllocKind::VRAM).unwrap();
    d.copyin(&b, data).unwrap();
    b
}

fn down32(d: &mut Device, b: &GpuBuffer, n: usize) -> Vec<u32> {
    let mut out = vec![0u8; 4 * n];
    d.copyout(b, &mut out).unwrap();
    out.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Lanes of the one work-group every case launches.
const N: usize = 32;

/// Runs `name` as one group of N threads on `bufs` (inputs uploaded, output zeroed) and returns
/// the first buffer's N dwords.
fn run1(
    arch: EmuArch,
    name: &str,
    inputs: &[Vec<u8>],
    out_bytes: usize,
    values: &[u32],
) -> Vec<u32> {
    let mut d = dev(arch);
    let prg = d.load_program(&corpus_elf(arch, name)).unwrap();
    let out = up(&mut d, &vec![0u8; out_bytes]);
    let ins: Vec<GpuBuffer> = inputs.iter().map(|b| up(&mut d, b)).collect();
    let mut refs = vec![&out];
    refs.extend(ins.iter());
    d.launch(&prg, &refs, values, [1, 1, 1], [N as u32, 1, 1])
        .unwrap();
    down32(&mut d, &out, out_bytes / 4)
}

fn select(arch: EmuArch) {
    let x: Vec<f32> = rng(N, 1)
        .iter()
        .map(|v| (*v >> 8) as f32 / 1e4 - 800.0)
        .collect();
    let c: Vec<u32> = rng(N, 2).iter().map(|v| v & 1).collect();
    let xb = bytes32(&x.iter().map(|f| f.to_bits()).collect::<Vec<_>>());
    let r = run1(arch, "select", &[xb, bytes32(&c)], 4 * N, &[]);
    for i in 0..N {
        let want = if c[i] != 0 { x[i] } else { -x[i] * 0.25 };
        assert_eq!(r[i], want.to_bits(), "{arch:?} o[{i}]");
    }
}

fn i64_ops(arch: EmuArch) {
    let x: Vec<u64> = rng(2 * (N + 2), 3)
        .chunks(2)
        .map(|c| u64::from(c[0]) | (u64::from(c[1]) << 32))
        .collect();
    let y: Vec<u64> = rng(2 * (N + 1), 4)
        .chunks(2)
        .map(|c| u64::from(c[0]) | (u64::from(c[1]) << 32))
        .collect();
    let r = run1(arch, "i64", &[bytes64(&x), bytes64(&y)], 8 * N, &[]);
    for i in 0..N {
        let (xi, x1, x2) = (x[i] as i64, x[i + 1] as i64, x[i + 2] as i64);
        let want = xi
            .wrapping_mul(x1)
            .wrapping_add(xi >> 3)
            .wrapping_add((y[i] << 7) as i64)
            .wrapping_add(xi ^ x2)
            .wrapping_add(y[i].max(y[i + 1]) as i64) as u64;
        let got = u64::from(r[2 * i]) | (u64::from(r[2 * i + 1]) << 32);
        assert_eq!(got, want, "{arch:?} o[{i}]");
    }
}

fn intdiv(arch: EmuArch) {
    let x: Vec<u32> = rng(N + 1, 5)
        .iter()
        .map(|v| (*v as i32 >> (v & 15)) as u32 | 1)
        .collect();
    let y: Vec<u32> = rng(N + 3, 6).iter().map(|v| (v >> (v & 7)) | 1).collect();
    let r = run1(arch, "intdiv", &[bytes32(&x), bytes32(&y)], 4 * N, &[]);
    for i in 0..N {
        let (a, b) = (x[i] as i32, x[i + 1] as i32);
        let want = a
            .wrapping_div(b)
            .wrapping_add(a % 7)
            .wrapping_add((y[i] / y[i + 2]) as i32)
            .wrapping_add((y[i] % y[i + 3]) as i32);
        assert_eq!(r[i] as i32, want, "{arch:?} o[{i}]");
    }
}

fn smem(arch: EmuArch) {
    let x = rng(32, 7);
    let v: Vec<u32> = rng(8, 8);
    let r = run1(arch, "smem", &[bytes32(&x)], 4 * N, &v);
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
        assert_eq!(*g as i32, want, "{arch:?} o[{i}]");
    }
}

fn ballot(arch: EmuArch) {
    let x: Vec<u32> = rng(N, 9).iter().map(|v| v % 12).collect();
    let r = run1(arch, "ballot", &[bytes32(&x)], 4 * N, &[]);
    let mask = (0..N).fold(0u32, |m, i| m | (u32::from(x[i] > 5) << i));
    for i in 0..N {
        let want = x[0]
            .wrapping_add(x[3])
            .wrapping_add(mask)
            .wrapping_add(i as u32);
        assert_eq!(r[i], want, "{arch:?} o[{i}]");
    }
}

fn bits(arch: EmuArch) {
    let x = rng(N + 2, 10);
    let r = run1(arch, "bits", &[bytes32(&x)], 4 * N, &[]);
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
        assert_eq!(r[i], want, "{arch:?} o[{i}] (v = {v:#x})");
    }
}

/// Every run above, once per emulated generation.
macro_rules! per_arch {
    ($($name:ident),* $(,)?) => {
        mod gfx1100 {
            use runtime::emu::EmuArch;
            $(#[test] fn $name() { super::$name(EmuArch::Gfx1100) })*
        }
        mod gfx1201 {
            use runtime::emu::EmuArch;
            $(#[test] fn $name() { super::$name(EmuArch::Gfx1201) })*
        }
    };
}

/// Runs `name` on buffers initialised with `bufs` and returns every buffer's contents after.
fn run(
    arch: EmuArch,
    name: &str,
    bufs: &[Vec<u8>],
    values: &[u32],
    grid: [u32; 3],
    local: [u32; 3],
) -> Vec<Vec<u8>> {
    let mut d = dev(arch);
    let prg = d.load_program(&corpus_elf(arch, name)).unwrap();
    let bs: Vec<GpuBuffer> = bufs.iter().map(|b| up(&mut d, b)).collect();
    let refs: Vec<&GpuBuffer> = bs.iter().collect();
    d.launch(&prg, &refs, values, grid, local).unwrap();
    bs.iter()
        .zip(bufs)
        .map(|(b, init)| {
            let mut out = vec![0u8; init.len()];
            d.copyout(b, &mut out).unwrap();
            out
        })
        .collect()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn fbytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn floats(n: usize, seed: u32, lo: f32, hi: f32) -> Vec<f32> {
    rng(n, seed)
        .into_iter()
        .map(|v| lo + (hi - lo) * (v >> 8) as f32 / (1u32 << 24) as f32)
        .collect()
}

fn minmax(arch: EmuArch) {
    let x = floats(N + 1, 11, -0.5, 1.5);
    let xi: Vec<u32> = rng(N + 1, 12)
        .iter()
        .map(|v| ((*v as i32) >> 22) as u32)
        .collect();
    let r = run(
        arch,
        "minmax",
        &[vec![0; 4 * N], fbytes(&x), vec![0; 4 * N], bytes32(&xi)],
        &[],
        [1, 1, 1],
        [N as u32, 1, 1],
    );
    let (o, oi) = (f32s(&r[0]), f32s(&r[2]));
    for i in 0..N {
        // fminf(fmaxf(x, 0), 1); the inputs hold no NaN.
        let want = x[i].clamp(0.0, 1.0) * x[i + 1];
        assert_eq!(o[i].to_bits(), want.to_bits(), "{arch:?} o[{i}]");
        let (a, b) = (xi[i] as i32, xi[i + 1] as i32);
        let wi = a.min(100).wrapping_add(b.wrapping_abs());
        assert_eq!(oi[i].to_bits() as i32, wi, "{arch:?} oi[{i}]");
    }
}

fn lds2(arch: EmuArch) {
    let x = floats(4 * 128, 13, -10.0, 10.0);
    let r = run(
        arch,
        "lds2",
        &[vec![0; 16 * 64], fbytes(&x)],
        &[],
        [1, 1, 1],
        [64, 1, 1],
    );
    let o = f32s(&r[0]);
    for t in 0..64 {
        for c in 0..4 {
            let want = x[4 * (127 - t) + c] + x[4 * (t ^ 5) + c];
            assert_eq!(
                o[4 * t + c].to_bits(),
                want.to_bits(),
                "{arch:?} o[{t}].{c}"
            );
        }
    }
}

fn transpose(arch: EmuArch) {
    let n = 32usize;
    let x = floats(n * n, 14, -1.0, 1.0);
    let r = run(
        arch,
        "transpose",
        &[vec![0; 4 * n * n], fbytes(&x)],
        &[n as u32],
        [2, 2, 1],
        [16, 16, 1],
    );
    let o = f32s(&r[0]);
    for row in 0..n {
        for col in 0..n {
            assert_eq!(o[col * n + row], x[row * n + col], "{arch:?} ({row},{col})");
        }
    }
}

fn reduce_tree(arch: EmuArch) {
    let g = 3usize;
    let x = floats(256 * g, 15, -4.0, 4.0);
    let r = run(
        arch,
        "reduce",
        &[vec![0; 4 * g], fbytes(&x)],
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
        assert_eq!(o[k].to_bits(), s[0].to_bits(), "{arch:?} o[{k}]");
    }
}

fn branches(arch: EmuArch) {
    let n = 40usize;
    let x: Vec<u32> = rng(n, 16)
        .iter()
        .map(|v| ((*v as i32) % 20) as u32)
        .collect();
    let r = run(
        arch,
        "branches",
        &[vec![0; 4 * N], bytes32(&x)],
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
            "{arch:?} o[{i}]"
        );
    }
}

fn bperm(arch: EmuArch) {
    let x = rng(N, 18);
    let r = run1(arch, "bperm", &[bytes32(&x)], 4 * N, &[]);
    for i in 0..N {
        // ds_bpermute from lane i^1, plus ds_swizzle with and-mask 0x1f (the identity).
        let want = x[i ^ 1].wrapping_add(x[i]);
        assert_eq!(r[i], want, "{arch:?} o[{i}]");
    }
}

per_arch!(
    bperm,
    select,
    i64_ops,
    intdiv,
    smem,
    ballot,
    bits,
    minmax,
    lds2,
    transpose,
    reduce_tree,
    branches,
);
