//! Kernels of our own, compiled with clang-22 from examples/workloads/kernels/add_mul.c: a
//! code object with two kernels launched by name, and a two-kernel workload file (the second
//! launch reads the first one's output) on every emulated architecture, each checked against a
//! CPU reference computed here; and the launches that must be refused before anything runs.
//! (The `wavescope capture --workload` command: profiler-ui/tests/cli_workload.rs.)

use std::path::{Path, PathBuf};
use std::process::Command;

use capture::emulated::Arch;
use capture::npy::{self, Dtype};
use capture::workload::WorkloadFile;
use capture::{run_capture, run_plan, Arg, CaptureOptions, DeviceSpec, Workload};

const N: usize = 1000;

fn source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/workloads/kernels/add_mul.c")
}

/// `add_mul.c` compiled and linked for `arch` into `dir`; None (a loud skip, a failure under
/// CI) without clang-22 and ld.lld-22.
fn compile(dir: &Path, arch: &str) -> Option<PathBuf> {
    let clang = testdata::require_tool("clang-22")?;
    let lld = testdata::require_tool("ld.lld-22")?;
    let obj = dir.join(format!("add_mul.{arch}.o"));
    let so = dir.join(format!("add_mul.{arch}.hsaco"));
    let st = Command::new(clang)
        .args(["-target", "amdgcn-amd-amdhsa", "-nogpulib", "-O2", "-c"])
        .arg(format!("-mcpu={arch}"))
        .arg(source())
        .arg("-o")
        .arg(&obj)
        .status()
        .unwrap();
    assert!(st.success(), "clang-22 for {arch}");
    let st = Command::new(lld)
        .arg("-shared")
        .arg(&obj)
        .arg("-o")
        .arg(&so)
        .status()
        .unwrap();
    assert!(st.success(), "ld.lld-22 for {arch}");
    Some(so)
}

fn floats(seed: u32) -> Vec<f32> {
    capture::rng(N, seed)
        .into_iter()
        .map(|v| (v >> 8) as f32 / (1u32 << 16) as f32 - 128.0)
        .collect()
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn bits_equal(what: &str, got: &[f32], want: &[f32]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} values, want {}", got.len(), want.len()));
    }
    match (0..want.len()).find(|&i| got[i].to_bits() != want[i].to_bits()) {
        None => Ok(()),
        Some(i) => Err(format!("{what}[{i}] = {} want {}", got[i], want[i])),
    }
}

fn opts(dir: &Path, device: DeviceSpec) -> CaptureOptions {
    CaptureOptions {
        devices: vec![device],
        wst: Some(dir.join("t.wst")),
        ..Default::default()
    }
}

/// An error with its causes, as the CLI prints it.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

#[test]
fn both_kernels_of_one_code_object_run_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let Some(so) = compile(dir.path(), "gfx1100") else {
        return;
    };
    let elf = std::fs::read(&so).unwrap();
    let (a, b) = (floats(1), floats(2));
    let sum: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    let scaled: Vec<f32> = a.iter().map(|x| x * 3.0).collect();
    let work = vec![
        Workload {
            elf: elf.clone().into(),
            name: Some("k_add".into()),
            grid: [16, 1, 1],
            block: [64, 1, 1],
            args: vec![
                Arg::Buffer(vec![0; 4 * N]),
                Arg::Buffer(bytes(&a)),
                Arg::Buffer(bytes(&b)),
                Arg::Scalar(N as u32),
            ],
            check: Some(Box::new(move |o| bits_equal("c", &f32s(&o[0]), &sum))),
        },
        Workload {
            elf: elf.into(),
            name: Some("k_mul".into()),
            // Another work-group size: the kernel reads it from the hidden arguments.
            grid: [8, 1, 1],
            block: [128, 1, 1],
            args: vec![
                Arg::Buffer(vec![0; 4 * N]),
                Arg::Buffer(bytes(&a)),
                Arg::Scalar(3.0f32.to_bits()),
                Arg::Scalar(N as u32),
            ],
            check: Some(Box::new(move |o| bits_equal("d", &f32s(&o[0]), &scaled))),
        },
    ];
    let r = run_capture(&work, &opts(dir.path(), DeviceSpec::Emu), &mut |_, _, _| {}).unwrap();
    let ran: Vec<&str> = r.profile.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(ran, ["k_add", "k_mul"]);
    assert_eq!(r.checks.len(), 2);
    for c in &r.checks {
        assert_eq!(c.result, Some(Ok(())), "{}", c.kernel);
    }
}

/// The workload file the tests run: inputs a and b from .npy files, c = a + b, d = c * 0.5.
fn workload_file(dir: &Path, code: &Path) -> PathBuf {
    std::fs::write(
        dir.join("a.npy"),
        npy::write(Dtype::F32, &bytes(&floats(3))),
    )
    .unwrap();
    std::fs::write(dir.join("b.raw"), bytes(&floats(4))).unwrap();
    let text = format!(
        r#"
[code]
k = "{}"

[buffers.a]
file = "a.npy"
[buffers.b]
file = "b.raw"
dtype = "f32"
[buffers.c]
size = "{n4}"
[buffers.d]
size = {n4}
fill = "f32=7"

[[launch]]
kernel = "k_add"
grid = 16
block = 64
args = ["c", "a", "b", {{ u32 = {N} }}]

[[launch]]
kernel = "k_mul"
grid = [4]
block = [256]
args = ["d", "c", {{ f32 = 0.5 }}, {{ u32 = {N} }}]
"#,
        code.display(),
        n4 = 4 * N,
    );
    let p = dir.join("w.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// Runs the two-kernel workload on `emu:ARCH` and compares every buffer with the CPU.
fn two_kernel_workload(arch: &str) {
    let dir = tempfile::tempdir().unwrap();
    let Some(so) = compile(dir.path(), arch) else {
        return;
    };
    let w = WorkloadFile::load(&workload_file(dir.path(), &so)).unwrap();
    let a: Arch = arch.parse().unwrap();
    let device = DeviceSpec::emu(a);
    let r = run_plan(&w.plan(true), &opts(dir.path(), device), &mut |_, _, _| {});
    if !a.executes() {
        // Until the emulator runs this architecture, the capture must be refused, not run.
        let e = chain(&r.err().expect("refused"));
        assert!(e.contains(&format!("does not execute {arch}")), "{e}");
        assert!(!dir.path().join("t.wst").exists(), "nothing written");
        eprintln!("\n!!!!!!!! {arch}: the emulator does not execute it yet; refused: {e}\n");
        return;
    }
    let r = r.unwrap();
    let (x, y) = (floats(3), floats(4));
    let c: Vec<f32> = x.iter().zip(&y).map(|(p, q)| p + q).collect();
    let d: Vec<f32> = c.iter().map(|v| v * 0.5).collect();
    assert_eq!(r.buffers.len(), 1);
    let got = &r.buffers[0].buffers;
    let names: Vec<&str> = w.buffers.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c", "d"], "file order");
    bits_equal("a", &f32s(&got[0]), &x).unwrap();
    bits_equal("c", &f32s(&got[2]), &c).unwrap();
    bits_equal("d", &f32s(&got[3]), &d).unwrap();
    let ran: Vec<&str> = r.profile.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(ran, ["k_add", "k_mul"]);
    // Real SQTT: every launch's waves decode from the device's traces.
    for k in &r.summary {
        assert!(k.waves > 0 && k.decode_errors.is_empty(), "{k:?}");
    }
}

#[test]
fn two_kernel_workload_on_gfx1100() {
    two_kernel_workload("gfx1100");
}

#[test]
fn two_kernel_workload_on_gfx1201() {
    two_kernel_workload("gfx1201");
}

/// Depends on the gfx9 interpreter: until the emulator executes gfx950 it checks that the
/// capture is refused; from then on it checks the outputs like the others.
#[test]
fn two_kernel_workload_on_gfx950() {
    two_kernel_workload("gfx950");
}

#[test]
fn bad_launches_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let Some(so) = compile(dir.path(), "gfx1100") else {
        return;
    };
    let elf = std::fs::read(&so).unwrap();
    let run = |name: &str, args: Vec<Arg>, device: DeviceSpec| {
        let w = Workload {
            elf: elf.clone().into(),
            name: Some(name.into()),
            grid: [1, 1, 1],
            block: [64, 1, 1],
            args,
            check: None,
        };
        let r = run_capture(&[w], &opts(dir.path(), device), &mut |_, _, _| {
            panic!("nothing may run")
        });
        assert!(!dir.path().join("t.wst").exists(), "no trace written");
        chain(&r.err().expect("refused"))
    };
    let buf = || Arg::Buffer(vec![0; 64]);
    // One buffer where k_add takes three buffers and a u32.
    let e = run("k_add", vec![buf()], DeviceSpec::Emu);
    assert!(
        e.contains("kernel k_add takes 4 argument(s)") && e.contains("gives 1"),
        "{e}"
    );
    // A value where a buffer goes.
    let e = run(
        "k_mul",
        vec![buf(), Arg::Scalar(1), buf(), Arg::Scalar(1)],
        DeviceSpec::Emu,
    );
    assert!(
        e.contains("kernel k_mul, argument 1") && e.contains("expected a buffer"),
        "{e}"
    );
    // A buffer where the f32 goes.
    let e = run(
        "k_mul",
        vec![buf(), buf(), buf(), Arg::Scalar(1)],
        DeviceSpec::Emu,
    );
    assert!(
        e.contains("argument 2") && e.contains("4-byte value (by_value)"),
        "{e}"
    );
    let e = run("k_div", vec![], DeviceSpec::Emu);
    assert!(
        e.contains("no kernel \"k_div\"") && e.contains("k_add, k_mul"),
        "{e}"
    );
    // The code object's target is not the device's.
    let e = run(
        "k_add",
        vec![buf(), buf(), buf(), Arg::Scalar(1)],
        DeviceSpec::emu("gfx1201".parse().unwrap()),
    );
    assert!(
        e.contains("is for gfx1100, but emu:gfx1201 runs gfx1201: use --device emu"),
        "{e}"
    );
}
