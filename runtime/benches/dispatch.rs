//! Cost of building + submitting one dispatch vs. a memcpy of the same number of bytes, on a ring
//! in plain host memory (the runtime's own cost, no emulator behind the doorbell), and on the
//! emulated device (runtime + emulated CP).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use runtime::emu::EmuArch;
use runtime::platform::{host::host_memory, AllocKind, IpBases, IpVersions, QueueDesc, Slot};
use runtime::queue::{ComputeCmds, GfxContext, Launch, Ring};
use runtime::{Device, DeviceOptions};

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
    let n = 200_000u64;
    let mut dwords = 0;
    let t = Instant::now();
    for i in 0..n {
        c.clear();
        c.wait(0x2000_0030_0000, i as u32);
        c.memory_barrier();
        c.exec(&launch, None).unwrap();
        c.signal(0x2000_0030_0000, i as u32 + 1, None);
        dwords = c.q.len();
        // Pretend the CP consumed everything so the ring never fills.
        ptrs.write64(8, ring.put_value).unwrap();
        ring.submit_pm4(black_box(&c.q), &mut || Ok(())).unwrap();
    }
    let per_dispatch = t.elapsed().as_nanos() as f64 / n as f64;
    let bytes = dwords * 4;
    let src = vec![0xA5u8; bytes];
    let mut dst = vec![0u8; bytes];
    let m = 5_000_000u64;
    let t = Instant::now();
    for _ in 0..m {
        dst.copy_from_slice(black_box(&src));
        black_box(&mut dst);
    }
    let per_memcpy = t.elapsed().as_nanos() as f64 / m as f64;
    println!("dispatch build+submit (host ring): {per_dispatch:.1} ns for {dwords} dwords ({bytes} bytes)");
    println!("memcpy of {bytes} bytes:             {per_memcpy:.1} ns");
    println!("ratio: {:.1}x (budget 20x)", per_dispatch / per_memcpy);

    // On the emulated device, including the emulated CP executing each dispatch.
    let opts = DeviceOptions {
        profile: false,
        compute_ring_size: 64 << 10,
        ..DeviceOptions::default()
    };
    let (mut dev, emu) = Device::open_emulated(EmuArch::Gfx1100, opts).unwrap();
    let prg = dev
        .load_program(include_bytes!("../tests/data/gfx1100_E_3.elf"))
        .unwrap();
    let out = dev.alloc(64, AllocKind::VRAM).unwrap();
    let t = Instant::now();
    for _ in 0..10_000 {
        dev.launch(&prg, &[&out, &out], &[], [1, 1, 1], [3, 1, 1])
            .unwrap();
    }
    dev.synchronize().unwrap();
    println!(
        "10,000 back-to-back dispatches on the emulated device: {:.1} ms, {} executed by the emulated CP",
        t.elapsed().as_secs_f64() * 1e3,
        emu.stats().dispatches
    );
}
