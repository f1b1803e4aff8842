//! The PM4 words of one dispatch equal the worked example of runtime-architecture.md §3, and the
//! emulated command processor executes them. `ComputeCmds::exec` replays a template after the
//! first launch of a shape: the replayed words must equal the packet-by-packet encoding for every
//! launch field, shape, context (gfx11, gfx12, multi-XCC gfx9) and position in the stream.

use std::sync::Arc;

use emu::{EmuArch, EmuConfig, EmuPlatform, NullShaderEngines};
use runtime::platform::{IpBases, IpVersions};
use runtime::queue::{ComputeCmds, GfxContext, Launch, SqttMarker};
use runtime::regs;

/// runtime-architecture.md §3, table rows 1..19 (everything but the final timestamp row), in order.
const WORKED_EXAMPLE: &[&str] = &[
    "c0053c00 00000015 00300000 00002000 00000006 ffffffff 00000004",
    "c0053c00 00000045 00000e26 00000e27 ffffffff ffffffff 00000004",
    "c0065800 00000000 ffffffff ffffffff 00000000 00000000 00000000 0000c3f1",
    "c0065800 00000000 ffffffff ffffffff 00000000 00000000 00000000 000003f0",
    "c0027600 0000020c 00000016 00000020",
    "c0027600 00000212 60bf0080 0000009e",
    "c0017600 00000228 00000000",
    "c0017600 00000218 00010200",
    "c0027600 00000210 00100000 00000020",
    "c0037600 0000021b 00000000 00000000 00000000",
    "c0027600 00000216 ffffffff ffffffff",
    "c0027600 00000219 ffffffff ffffffff",
    "c0047600 0000022b ffffffff ffffffff ffffffff ffffffff",
    "c0027600 00000240 00200000 00002000",
    "c0017600 00000215 00000000",
    "c0087600 00000204 00000000 00000000 00000000 00000040 00000001 00000001 00000000 00000000",
    "c0031500 00000004 00000001 00000001 00008005",
    "c0004600 00000407",
    "c0064900 0070f514 22000000 00300000 00002000 00000007 00000000 00000000",
];
const TIMESTAMP_ROW: &str =
    "c0064900 00000514 60000000 00300008 00002000 00000000 00000000 00000000";

fn words(rows: &[&str]) -> Vec<u32> {
    rows.iter()
        .flat_map(|r| r.split_whitespace())
        .map(|w| u32::from_str_radix(w, 16).unwrap())
        .collect()
}

const SIGNAL: u64 = 0x2000_0030_0000;
const PROG: u64 = 0x2000_0000_1600;
const KERNARGS: u64 = 0x2000_0020_0000;
const SCRATCH: u64 = 0x2000_1000_0000;

fn gfx1100_ctx() -> Arc<GfxContext> {
    // IP versions and bases as a 7900 XTX reports them through sysfs IP discovery (kfd-interface.md §1).
    let ip = IpVersions {
        gc: (11, 0, 0),
        sdma: (6, 0, 0),
        nbio: (4, 3, 0),
    };
    let bases = IpBases {
        gc: vec![0x1260, 0xA000, 0x1C000, 0x2402C00],
        sdma: vec![0x1260, 0xA000, 0x1C000, 0x2402C00],
        nbio: vec![0x0, 0x14, 0xD20, 0x10400, 0x241B000, 0x4040000],
    };
    Arc::new(GfxContext::new(ip, &bases, 1).unwrap())
}

fn launch() -> Launch {
    Launch {
        prog_addr: PROG,
        // clang-16 vector add (mockgpu.md §4.4) with the gfx11 PRIV bit added by the runtime.
        rsrc1: 0x60AF_0080 | (1 << 20),
        rsrc2: 0x0000_009E,
        rsrc3: 0,
        kernarg_va: KERNARGS,
        dispatch_ptr: None,
        private_segment: None,
        wave32: true,
        global: [4, 1, 1],
        local: [64, 1, 1],
        tmpring_size: 0x0001_0200,
        scratch_va: SCRATCH,
        scratch_per_xcc: 12 << 20,
    }
}

fn build() -> Vec<u32> {
    let mut c = ComputeCmds::new(gfx1100_ctx());
    c.wait(SIGNAL, 6);
    c.memory_barrier();
    c.exec(&launch(), None).unwrap();
    c.signal(SIGNAL, 7, None);
    c.q
}

#[test]
fn dispatch_matches_worked_example_word_for_word() {
    let got = build();
    let want = words(WORKED_EXAMPLE);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "dword {i}: got {g:08x}, want {w:08x}");
    }
    assert_eq!(got.len(), want.len());
    let mut c = ComputeCmds::new(gfx1100_ctx());
    c.timestamp(SIGNAL + 8);
    assert_eq!(c.q, words(&[TIMESTAMP_ROW]));
}

#[test]
fn replayed_dispatch_matches_worked_example_word_for_word() {
    // A builder that already dispatched something else replays its template for the example.
    let mut c = ComputeCmds::new(gfx1100_ctx());
    let mut other = launch();
    other.prog_addr = 0x7000_0000_0000;
    other.global = [9, 8, 7];
    other.wave32 = false;
    c.exec(&other, None).unwrap();
    for _ in 0..2 {
        c.clear();
        c.wait(SIGNAL, 6);
        c.memory_barrier();
        c.exec(&launch(), None).unwrap();
        c.signal(SIGNAL, 7, None);
        assert_eq!(c.q, words(WORKED_EXAMPLE));
    }
}

/// A small deterministic generator (no dev-dependency needed).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 ^ (self.0 >> 29)
    }
    fn u32(&mut self) -> u32 {
        self.next() as u32
    }
}

fn random_launch(r: &mut Lcg) -> Launch {
    let shape = r.u32();
    Launch {
        prog_addr: r.next() & !0xFF,
        rsrc1: r.u32(),
        rsrc2: r.u32(),
        rsrc3: r.u32(),
        kernarg_va: r.next(),
        dispatch_ptr: (shape & 1 == 1).then(|| r.next()),
        private_segment: (shape & 2 == 2).then(|| [r.u32(), r.u32(), r.u32(), r.u32()]),
        wave32: shape & 4 == 4,
        global: [r.u32(), r.u32(), r.u32()],
        local: [r.u32(), r.u32(), r.u32()],
        tmpring_size: r.u32(),
        scratch_va: r.next() >> 8,
        scratch_per_xcc: r.next() >> 24,
    }
}

fn contexts() -> Vec<(&'static str, Arc<GfxContext>)> {
    let bases = |gfx: u32| IpBases {
        gc: regs::static_bases(gfx, "GC").unwrap().to_vec(),
        sdma: vec![],
        nbio: regs::static_bases(gfx, "NBIO").unwrap().to_vec(),
    };
    let gfx12 = GfxContext::new(
        IpVersions {
            gc: (12, 0, 1),
            sdma: (7, 0, 1),
            nbio: (6, 3, 1),
        },
        &bases(12),
        1,
    )
    .unwrap();
    let mut gfx9 = GfxContext::new(
        IpVersions {
            gc: (9, 5, 0),
            sdma: (4, 4, 5),
            nbio: (7, 9, 0),
        },
        &bases(9),
        8,
    )
    .unwrap();
    gfx9.xcc_sync = Some((0x1000, 0x1010));
    vec![
        ("gfx1100", gfx1100_ctx()),
        ("gfx12", Arc::new(gfx12)),
        ("gfx9 8 XCC", Arc::new(gfx9)),
    ]
}

/// Packet-by-packet reference: a fresh builder has no template.
fn reference(ctx: &Arc<GfxContext>, l: &Launch, marker: Option<SqttMarker>) -> Vec<u32> {
    let mut c = ComputeCmds::new(ctx.clone());
    c.wait(SIGNAL, 1);
    c.exec(l, marker).unwrap();
    c.q
}

#[test]
fn replayed_exec_equals_encoded_exec_for_every_field_and_shape() {
    let mut r = Lcg(0x5EED);
    for (name, ctx) in contexts() {
        let mut c = ComputeCmds::new(ctx.clone());
        for i in 0..400 {
            let l = random_launch(&mut r);
            let marker = (i % 37 == 5).then(|| SqttMarker {
                pso_hash: r.next(),
                cmd_id: r.u32(),
            });
            c.clear();
            c.wait(SIGNAL, 1);
            c.exec(&l, marker).unwrap();
            assert_eq!(
                c.q,
                reference(&ctx, &l, marker),
                "{name}, launch {i}: {l:x?}"
            );
        }
    }
}

#[test]
fn template_follows_a_context_change() {
    let ctxs = contexts();
    let mut c = ComputeCmds::new(ctxs[0].1.clone());
    let l = launch();
    for (name, ctx) in ctxs.iter().chain(ctxs.iter()) {
        c.ctx = ctx.clone();
        c.clear();
        c.wait(SIGNAL, 1);
        c.exec(&l, None).unwrap();
        assert_eq!(c.q, reference(ctx, &l, None), "{name}");
    }
}

#[test]
fn emulated_cp_executes_the_dispatch() {
    // The dispatch points at no code: check the command processor alone.
    let emu = EmuPlatform::with_shader_engines(
        EmuConfig::new(EmuArch::Gfx1100),
        Box::new(NullShaderEngines),
    );
    emu.map_memory(SIGNAL, 0x1000).unwrap();
    let mut stream = words(&[
        // Not yet satisfied: the signal is 0 < 6, the CP must block here.
        WORKED_EXAMPLE[0],
    ]);
    assert!(emu.execute_pm4(&stream).unwrap_err().contains("blocked"));
    emu.write_mem(SIGNAL, &6u64.to_le_bytes()).unwrap();
    stream = build();
    stream.extend(words(&[TIMESTAMP_ROW]));
    let before = emu.clock();
    let n = emu.execute_pm4(&stream).unwrap();
    assert_eq!(n, (WORKED_EXAMPLE.len() + 1) as u64);
    let mut sig = [0u8; 16];
    emu.read_mem(SIGNAL, &mut sig).unwrap();
    assert_eq!(
        u64::from_le_bytes(sig[..8].try_into().unwrap()),
        7,
        "RELEASE_MEM wrote the signal value"
    );
    let ts = u64::from_le_bytes(sig[8..].try_into().unwrap());
    assert!(
        ts > before,
        "timestamp {ts} from the emulated clock must be after {before}"
    );
    // Register writes landed: COMPUTE_PGM_LO = 0x2c00 + 0x20c.
    assert_eq!(emu.read_reg(0x2C00 + 0x20C), 0x16);
    assert_eq!(emu.read_reg(0x2C00 + 0x218), 0x0001_0200);
    let st = emu.stats();
    assert_eq!(st.dispatches, 1);
    let d = &st.recent_dispatches[0];
    assert_eq!(d.pgm_addr, PROG);
    assert_eq!(d.grid, [4, 1, 1]);
    assert_eq!(d.local, [64, 1, 1]);
    assert_eq!(d.user_data.len(), 15, "USER_SGPR_COUNT of rsrc2 0x9e");
    assert_eq!(&d.user_data[..2], &[0x0020_0000, 0x2000]);
    assert_eq!(d.scratch_base, SCRATCH);
    assert!(d.wave32);
}
