//! Cost of building + submitting one dispatch vs. a memcpy of the same number of bytes, on a ring
//! in plain host memory (the runtime's own cost, no emulator behind the doorbell), and 10,000
//! back-to-back dispatches on the emulated device (runtime + emulated CP) through a ring small
//! enough to wrap many times.
//!
//! Times are thread CPU time (CLOCK_THREAD_CPUTIME_ID): the machine running this may be loaded,
//! and wall time would charge other processes' time slices to the dispatch. Each figure is the
//! median of several rounds.

use std::hint::black_box;
use std::sync::Arc;

use emu::EmuArch;
use nix::time::{clock_gettime, ClockId};
use runtime::platform::{host::host_memory, AllocKind, IpBases, IpVersions, QueueDesc, Slot};
use runtime::queue::{ComputeCmds, GfxContext, Launch, Ring};
use runtime::DeviceOptions;

/// Budget of issue #5: one dispatch costs at most this many memcpys of its bytes.
const BUDGET: f64 = 20.0;
const ROUNDS: usize = 9;

fn cpu_ns() -> u64 {
    let t = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).expect("thread CPU clock");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

/// Median over `ROUNDS` rounds of the CPU time per iteration of `f(iters)`.
fn per_iter(iters: u64, mut f: impl FnMut(u64)) -> f64 {
    f(iters / 10); // warm-up
    let mut v: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let t = cpu_ns();
            f(iters);
            (cpu_ns() - t) as f64 / iters as f64
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[ROUNDS / 2]
}

fn main() {
    let ip = IpVersions {
        gc: (11, 0, 0),
        sdma: (6, 0, 0),
        nbio: (4, 3, 0),
    };
    let bases = IpBases {
        gc: vec![0x1260, 0xA000, 0x1C000, 0x2402C00],
        sdma: vec![],
        nbio: vec![0x0, 0x14, 0xD20, 0x10400, 0x241B000, 0x4040000],
    };
    let ctx = Arc::new(GfxContext::new(ip, &bases, 1).unwrap());
    let ring_mem = host_memory(1 << 20).unwrap();
    let ptrs = host_memory(4096).unwrap();
    let desc = QueueDesc {
        ring: ring_mem.clone(),
        ring_va: ring_mem.addr(),
        read_ptrs: vec![Slot {
            mem: ptrs.clone(),
            offset: 8,
        }],
        write_ptrs: vec![Slot {
            mem: ptrs.clone(),
            offset: 0,
        }],
        doorbells: vec![Slot {
            mem: ptrs.clone(),
            offset: 64,
        }],
    };
    let mut ring = Ring::new(desc, false);
    let launch = Launch {
        prog_addr: 0x2000_0000_1600,
        rsrc1: 0x60BF_0080,
        rsrc2: 0x9E,
        rsrc3: 0,
        kernarg_va: 0x2000_0020_0000,
        dispatch_ptr: None,
        private_segment: None,
        wave32: true,
        global: [4, 1, 1],
        local: [64, 1, 1],
        tmpring_size: 0x10200,
        scratch_va: 0x2000_1000_0000,
        scratch_per_xcc: 12 << 20,
    };
    let mut c = ComputeCmds::new(ctx);
    let mut seq = 0u32;
    // What Device::build_launch + submit_compute do per launch (without profiling): wait for
    // the previous launch, barrier, dispatch, signal; then copy to the ring and ring the doorbell.
    let per_dispatch = per_iter(200_000, |n| {
        for _ in 0..n {
            seq = seq.wrapping_add(1);
            let mut l = *black_box(&launch);
            // A new kernarg slot per launch, as Device::alloc_kernargs hands out.
            l.kernarg_va += u64::from(seq & 0xFFF) * 64;
            c.clear();
            c.wait(black_box(0x2000_0030_0000), seq);
            c.memory_barrier();
            c.exec(&l, None).unwrap();
            c.signal(black_box(0x2000_0030_0000), seq.wrapping_add(1), None);
            // Pretend the CP consumed everything so the ring never fills.
            ptrs.write64(8, ring.put_value).unwrap();
            ring.submit_pm4(black_box(&c.q), &mut || Ok(())).unwrap();
        }
    });
    let dwords = c.q.len();
    let bytes = dwords * 4;
    let src = vec![0xA5u8; bytes];
    let mut dst = vec![0u8; bytes];
    let per_memcpy = per_iter(5_000_000, |m| {
        for _ in 0..m {
            black_box(&mut dst).copy_from_slice(black_box(&src));
        }
    });
    black_box(&dst);
    let ratio = per_dispatch / per_memcpy;
    println!(
        "dispatch build+submit (host ring): {per_dispatch:.1} ns CPU for {dwords} dwords ({bytes} bytes)"
    );
    println!("memcpy of {bytes} bytes:             {per_memcpy:.1} ns CPU");
    println!(
        "ratio: {ratio:.1}x (budget {BUDGET}x) {}",
        if ratio <= BUDGET { "ok" } else { "OVER BUDGET" }
    );

    // On the emulated device, including the emulated CP executing each dispatch. The 64 KiB ring
    // holds ~150 launches, so 10,000 wrap it ~65 times; an overrun would hand the CP garbage.
    let opts = DeviceOptions {
        profile: false,
        compute_ring_size: 64 << 10,
        ..DeviceOptions::default()
    };
    let (mut dev, emu) = emu::open_kfd(EmuArch::Gfx1100, opts).unwrap();
    let prg = dev
        .load_program(include_bytes!("../tests/data/gfx1100_E_3.elf"))
        .unwrap();
    // E_3: out[i] = a[i] + b[i] for 3 floats (three buffer arguments).
    let out = dev.alloc(64, AllocKind::VRAM).unwrap();
    let a = dev.alloc(64, AllocKind::VRAM).unwrap();
    let b = dev.alloc(64, AllocKind::VRAM).unwrap();
    let f = |v: [f32; 3]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    dev.copyin(&a, &f([1.5, -2.0, 8.0])).unwrap();
    dev.copyin(&b, &f([0.25, 4.0, -3.0])).unwrap();
    dev.synchronize().unwrap();
    let before = emu.stats().dispatches;
    let t = cpu_ns();
    for _ in 0..10_000 {
        dev.launch(&prg, &[&out, &a, &b], &[], [1, 1, 1], [3, 1, 1])
            .unwrap();
    }
    dev.synchronize().unwrap();
    let ms = (cpu_ns() - t) as f64 / 1e6;
    let ran = emu.stats().dispatches - before;
    let mut got = [0u8; 12];
    dev.copyout(&out, &mut got).unwrap();
    println!(
        "10,000 back-to-back dispatches on the emulated device: {ms:.1} ms CPU, {ran} executed by the emulated CP"
    );
    assert_eq!(ran, 10_000, "every dispatch must reach the emulated CP");
    assert_eq!(got.to_vec(), f([1.75, 2.0, 5.0]), "E_3 computed a + b");
}
