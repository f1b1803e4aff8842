//! SQTT capture on the emulated GPU: start/stop sequences, per-SE buffers, markers, WPTR readback
//! (on every emulated backend), and the gfx9 (gfx950, 8 XCCs) sequences decoded against the
//! GC 9.4.3 register JSON.

#[macro_use]
mod common;

use common::{opts, Emu, Target, E3_ELF};
use emu::{DeviceFault, DispatchInfo, DispatchResult, Memory, RegFile, ShaderEngines};
use runtime::platform::AllocKind;
use runtime::{Device, DeviceOptions};

/// Writes `len` bytes of `se`-tagged data per SE at THREAD_TRACE_FINISH.
struct FakeTrace {
    len: usize,
    started: u32,
}

impl ShaderEngines for FakeTrace {
    fn dispatch(
        &mut self,
        _r: &RegFile,
        _m: &mut Memory,
        d: &DispatchInfo,
    ) -> Result<DispatchResult, DeviceFault> {
        assert!(d.sqtt, "thread trace must be enabled when the kernel runs");
        Ok(DispatchResult { ticks: 500 })
    }
    fn sqtt_start(&mut self, _n: u32) {
        self.started += 1;
    }
    fn sqtt_finish(&mut self, se: u32) -> Vec<u8> {
        (0..self.len)
            .map(|i| (i as u8) ^ (se as u8).wrapping_mul(17))
            .collect()
    }
}

fn sqtt_opts(buf: u64) -> DeviceOptions {
    DeviceOptions {
        sqtt: true,
        sqtt_buffer_size: buf,
        sqtt_itrace_se_mask: 0b10,
        ..opts()
    }
}

fn run(t: Target, trace_len: usize, buf: u64) -> (Device, Emu) {
    let fake = Box::new(FakeTrace {
        len: trace_len,
        started: 0,
    });
    let (mut dev, emu) = t.open_with(sqtt_opts(buf), fake);
    // FakeTrace runs nothing, so the gfx1100 ELF serves every target.
    let prg = dev.load_program(E3_ELF).unwrap();
    let out = dev.alloc(64, AllocKind::VRAM).unwrap();
    dev.launch(&prg, &[&out, &out], &[], [2, 1, 1], [3, 1, 1])
        .unwrap();
    dev.synchronize().unwrap();
    (dev, emu)
}

/// The bytes a gfx9 blob starts with ahead of the SE's trace data: the first 8 bytes of the
/// real gfx950 capture's SE `se` file (a layout header naming its SE). Empty on gfx11/gfx12,
/// whose blobs are the trace data alone; `None` where the capture is missing (fails under CI).
fn header_of_hardware_blob(t: Target, se: usize) -> Option<Vec<u8>> {
    if t.arch() != emu::EmuArch::Gfx950 {
        return Some(Vec::new());
    }
    let b = common::shared(t.arch(), &format!("plus_run_0/kern0_se{se}.sqtt"))?;
    Some(b[..8].to_vec())
}

fn per_se_blobs_are_read_back(t: Target) {
    let (mut dev, _emu) = run(t, 4096, 1 << 20);
    let prof = dev.profile().unwrap();
    assert_eq!(prof.sqtt.len(), t.arch().num_se() as usize);
    for (i, tr) in prof.sqtt.iter().enumerate() {
        assert_eq!(tr.se, i as u32);
        assert_eq!(tr.itrace, i == 1, "itrace mask 0b10");
        let Some(head) = header_of_hardware_blob(t, i) else {
            return;
        };
        let b = prof.blob(tr.blob);
        assert!(
            b.starts_with(&head),
            "SE {i}: header {:02x?} as on hardware",
            &head
        );
        let b = &b[head.len()..];
        assert_eq!(b.len(), 4096, "SE {i}");
        assert!(
            b.iter()
                .enumerate()
                .all(|(j, &x)| x == (j as u8) ^ (i as u8 * 17)),
            "SE {i} bytes"
        );
    }
    assert!(dev.warnings().is_empty());
}

fn markers_reach_the_userdata_registers(t: Target) {
    let (dev, emu) = run(t, 64, 1 << 20);
    let ud2 = dev.context().sqtt_userdata_2;
    // The last pair written is the event marker's thread dims (y, z) = (1, 1); the one before
    // ended with global x. USERDATA_2/3 hold the last two dwords.
    assert_eq!(emu.platform().read_reg(ud2), 1);
    assert_eq!(emu.platform().read_reg(ud2 + 1), 1);
}

fn full_buffer_is_a_warning_that_says_how_to_enlarge_it(t: Target) {
    let (dev, _emu) = run(t, 8192, 0x2000);
    let w = dev.warnings();
    assert_eq!(w.len(), t.arch().num_se() as usize, "{w:?}");
    assert!(
        w[0].contains("full") && w[0].contains("sqtt_buffer_size"),
        "{}",
        w[0]
    );
}

per_target!(
    per_se_blobs_are_read_back,
    markers_reach_the_userdata_registers,
    full_buffer_is_a_warning_that_says_how_to_enlarge_it,
);

// ---- gfx9 (gfx950) ----------------------------------------------------------------------------

mod gfx9 {
    use std::collections::HashMap;

    use super::common::{amd_registers_dir, opts, E3_ELF};
    use super::{sqtt_opts, FakeTrace};
    use emu::EmuArch;
    use runtime::platform::AllocKind;
    use runtime::queue::ComputeCmds;
    use runtime::sqtt::{self, SqttSetup};
    use runtime::Device;
    use serde_json::Value;

    /// GC 9.4.3 register names and field layouts, from the JSON (not the runtime's tables),
    /// placed with the Vega GC segment bases of ip_base_offsets.json.
    struct Regs {
        by_addr: HashMap<u32, String>,
        addr: HashMap<String, u32>,
        fields: HashMap<String, Vec<(String, u32, u32)>>,
    }

    impl Regs {
        fn load() -> Option<Regs> {
            let dir = amd_registers_dir()?;
            let read = |f: &str| -> Value {
                serde_json::from_slice(&std::fs::read(dir.join(f)).unwrap()).unwrap()
            };
            let gc = read("gc_9_4_3.json");
            let bases = read("ip_base_offsets.json");
            let seg = |i: u64| bases["vega"]["GC"]["0"][i.to_string()].as_u64().unwrap() as u32;
            let mut r = Regs {
                by_addr: HashMap::new(),
                addr: HashMap::new(),
                fields: HashMap::new(),
            };
            for (name, e) in gc["registers"].as_object().unwrap() {
                let name = name.trim_start_matches("reg").to_string();
                // The SQ_THREAD_TRACE_WORD_* entries describe packets, not registers.
                if name.contains("_WORD_") {
                    continue;
                }
                let a =
                    seg(e["base_index"].as_u64().unwrap()) + e["offset"].as_u64().unwrap() as u32;
                let f = e["fields"]
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| {
                                let lo = v["lo"].as_u64().unwrap() as u32;
                                let hi = v["hi"].as_u64().unwrap() as u32;
                                (k.clone(), lo, hi)
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                r.by_addr.insert(a, name.clone());
                r.addr.insert(name.clone(), a);
                r.fields.insert(name, f);
            }
            Some(r)
        }

        fn addr(&self, name: &str) -> u32 {
            self.addr[name]
        }

        fn mask(&self, reg: &str, field: &str) -> u32 {
            let &(_, lo, hi) = self.fields[reg].iter().find(|f| f.0 == field).unwrap();
            (((1u64 << (hi - lo + 1)) - 1) as u32) << lo
        }

        /// The value with these fields set (every other bit 0).
        fn encode(&self, reg: &str, fields: &[(&str, u32)]) -> u32 {
            let mut v = 0;
            for (f, x) in fields {
                let m = self.mask(reg, f);
                assert_eq!(
                    (x << m.trailing_zeros()) & !m,
                    0,
                    "{reg}.{f} = {x:#x} overflows"
                );
                v |= x << m.trailing_zeros();
            }
            v
        }
    }

    /// One decoded operation of a compute stream, with the XCC mask of the PRED_EXEC around it
    /// (`None` outside one). Memory barriers (HDP write-then-wait, ACQUIRE_MEM) are left out.
    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Op {
        Write(Option<u32>, String, u32),
        WaitReg(Option<u32>, String, u32, u32, u32),
        CopyReg(Option<u32>, String, u64),
        Event(Option<u32>, u32),
    }

    /// A PM4 type-3 walker written from the packet layouts (runtime-architecture.md §6).
    fn decode(regs: &Regs, words: &[u32]) -> Vec<Op> {
        let name = |a: u32| {
            regs.by_addr
                .get(&a)
                .cloned()
                .unwrap_or_else(|| format!("{a:#x}"))
        };
        let mut ops = Vec::new();
        let mut i = 0;
        let mut pred: Option<(u32, usize)> = None;
        while i < words.len() {
            let h = words[i];
            assert_eq!(h >> 30, 3, "dword {i}: not a type-3 header: {h:#x}");
            let n = (((h >> 16) & 0x3FFF) + 1) as usize;
            let op = (h >> 8) & 0xFF;
            let p = &words[i + 1..i + 1 + n];
            if let Some((_, end)) = pred {
                if i >= end {
                    pred = None;
                }
            }
            let scope = pred.map(|(m, _)| m);
            match op {
                0x23 => {
                    assert!(pred.is_none(), "nested PRED_EXEC");
                    pred = Some((p[0] >> 24, i + 1 + n + (p[0] & 0xFF_FFFF) as usize));
                }
                0x79 | 0x76 => {
                    let base = if op == 0x79 { 0xC000 } else { 0x2C00 };
                    for (k, v) in p[1..].iter().enumerate() {
                        ops.push(Op::Write(scope, name(base + p[0] + k as u32), *v));
                    }
                }
                0x3C => {
                    let (info, a, r, m) = (p[0], p[1], p[3], p[4]);
                    let mem_space = (info >> 4) & 1;
                    let operation = (info >> 6) & 3;
                    if mem_space == 0 && operation == 0 {
                        ops.push(Op::WaitReg(scope, name(a), info & 7, r, m));
                    }
                }
                0x40 => {
                    let ctl = p[0];
                    assert_eq!(ctl & 0xF, 4, "COPY_DATA source: perf register");
                    assert_eq!((ctl >> 8) & 0xF, 2, "COPY_DATA destination: memory");
                    assert_ne!(ctl & (1 << 20), 0, "COPY_DATA write confirm");
                    let dst = u64::from(p[3]) | (u64::from(p[4]) << 32);
                    ops.push(Op::CopyReg(scope, name(p[1]), dst));
                }
                0x46 => ops.push(Op::Event(scope, p[0] & 0x3F)),
                _ => {}
            }
            i += 1 + n;
        }
        if let Some((_, end)) = pred {
            assert!(end <= words.len(), "PRED_EXEC block runs past the stream");
        }
        ops
    }

    const SE_PER_XCC: usize = 4;
    const XCCS: usize = 8;

    fn setup() -> SqttSetup {
        SqttSetup {
            gfx_major: 9,
            // High VAs (bits 44..47 set) so BASE2 carries something.
            buffers: (0..(SE_PER_XCC * XCCS) as u64)
                .map(|i| (0x7F12_3400_0000 + i * 0x20_0000, 0x10_0000 + i * 0x1000))
                .collect(),
            itrace_se_mask: 0b1010_0000_0000_0101,
            wptrs_va: 0x7F00_0000_1000,
        }
    }

    fn grbm_se(r: &Regs, se: u32) -> u32 {
        r.encode(
            "GRBM_GFX_INDEX",
            &[
                ("se_index", se),
                ("sh_index", 0),
                ("instance_broadcast_writes", 1),
            ],
        )
    }

    fn grbm_all(r: &Regs) -> u32 {
        r.encode(
            "GRBM_GFX_INDEX",
            &[
                ("se_broadcast_writes", 1),
                ("sh_broadcast_writes", 1),
                ("instance_broadcast_writes", 1),
            ],
        )
    }

    fn write(scope: Option<u32>, reg: &str, v: u32) -> Op {
        Op::Write(scope, reg.to_string(), v)
    }

    fn commands(f: fn(&mut ComputeCmds, &SqttSetup) -> runtime::error::Result<()>) -> Vec<u32> {
        let (dev, _emu) = emu::open_kfd(EmuArch::Gfx950, opts()).unwrap();
        assert_eq!(dev.context().num_xcc, XCCS as u32);
        let mut c = ComputeCmds::new(dev.context().clone());
        f(&mut c, &setup()).unwrap();
        c.q
    }

    /// The start: broadcast MASK and HIWATER, then per XCC (one PRED_EXEC each) and local SE:
    /// TOKEN_MASK, TOKEN_MASK2, STATUS, BASE, BASE2, SIZE, CTRL, MODE; then the enable.
    #[test]
    fn start_words_decode_to_the_documented_gfx9_sequence() {
        let Some(r) = Regs::load() else { return };
        let ops = decode(&r, &commands(sqtt::start));
        let s = setup();
        let mut want = vec![
            write(None, "GRBM_GFX_INDEX", grbm_all(&r)),
            write(
                None,
                "SQ_THREAD_TRACE_MASK",
                r.encode(
                    "SQ_THREAD_TRACE_MASK",
                    &[
                        ("cu_sel", 0),
                        ("sh_sel", 0),
                        ("simd_en", 0xF),
                        ("vm_id_mask", 0),
                        ("reg_stall_en", 1),
                        ("spi_stall_en", 1),
                        ("sq_stall_en", 1),
                    ],
                ),
            ),
            write(None, "SQ_THREAD_TRACE_HIWATER", 6),
        ];
        for xcc in 0..XCCS {
            let scope = Some(1u32 << xcc);
            for local in 0..SE_PER_XCC {
                let se = xcc * SE_PER_XCC + local;
                let (va, size) = s.buffers[se];
                // MISC TIME REG WAVE_START REG_CS WAVE_END USERDATA REG_CS_PRIV (+ INST INST_PC ISSUE).
                let mut tokens = 0b1001_0000_0110_1111;
                if (s.itrace_se_mask >> se) & 1 == 1 {
                    tokens |= 0b0010_1100_0000_0000;
                }
                want.extend([
                    write(scope, "GRBM_GFX_INDEX", grbm_se(&r, local as u32)),
                    write(
                        scope,
                        "SQ_THREAD_TRACE_TOKEN_MASK",
                        r.encode(
                            "SQ_THREAD_TRACE_TOKEN_MASK",
                            &[
                                ("token_mask", tokens),
                                ("reg_mask", 0xF),
                                ("reg_drop_on_stall", 0),
                            ],
                        ),
                    ),
                    write(scope, "SQ_THREAD_TRACE_TOKEN_MASK2", u32::MAX),
                    write(scope, "SQ_THREAD_TRACE_STATUS", 0),
                    write(
                        scope,
                        "SQ_THREAD_TRACE_BASE",
                        r.encode("SQ_THREAD_TRACE_BASE", &[("addr", (va >> 12) as u32)]),
                    ),
                    write(
                        scope,
                        "SQ_THREAD_TRACE_BASE2",
                        r.encode("SQ_THREAD_TRACE_BASE2", &[("addr_hi", (va >> 44) as u32)]),
                    ),
                    write(
                        scope,
                        "SQ_THREAD_TRACE_SIZE",
                        r.encode("SQ_THREAD_TRACE_SIZE", &[("size", (size >> 12) as u32)]),
                    ),
                    write(
                        scope,
                        "SQ_THREAD_TRACE_CTRL",
                        r.encode("SQ_THREAD_TRACE_CTRL", &[("reset_buffer", 1)]),
                    ),
                    write(
                        scope,
                        "SQ_THREAD_TRACE_MODE",
                        r.encode(
                            "SQ_THREAD_TRACE_MODE",
                            &[("mask_cs", 1), ("autoflush_en", 1), ("mode", 1)],
                        ),
                    ),
                ]);
            }
        }
        want.extend([
            write(None, "GRBM_GFX_INDEX", grbm_all(&r)),
            write(None, "COMPUTE_THREAD_TRACE_ENABLE", 1),
        ]);
        assert_eq!(ops.len(), want.len(), "{ops:#?}");
        for (i, (got, want)) in ops.iter().zip(&want).enumerate() {
            assert_eq!(got, want, "operation {i}");
        }
        // The high base bits really are in use (the test would not see a dropped BASE2).
        assert_eq!(s.buffers[0].0 >> 44, 7);
    }

    /// The stop: disable, then per XCC and SE: MODE.mode = 0, wait STATUS.busy == 0, copy WPTR
    /// to the SE's slot. No THREAD_TRACE_FINISH on gfx9.
    #[test]
    fn stop_words_decode_to_the_documented_gfx9_sequence() {
        let Some(r) = Regs::load() else { return };
        let ops = decode(&r, &commands(sqtt::stop));
        let s = setup();
        let busy = r.mask("SQ_THREAD_TRACE_STATUS", "busy");
        assert_eq!(busy, 1 << 30);
        let mut want = vec![
            write(None, "GRBM_GFX_INDEX", grbm_all(&r)),
            write(None, "COMPUTE_THREAD_TRACE_ENABLE", 0),
        ];
        for xcc in 0..XCCS {
            let scope = Some(1u32 << xcc);
            for local in 0..SE_PER_XCC {
                let se = (xcc * SE_PER_XCC + local) as u64;
                want.extend([
                    write(scope, "GRBM_GFX_INDEX", grbm_se(&r, local as u32)),
                    write(
                        scope,
                        "SQ_THREAD_TRACE_MODE",
                        r.encode(
                            "SQ_THREAD_TRACE_MODE",
                            &[("mask_cs", 1), ("autoflush_en", 1), ("mode", 0)],
                        ),
                    ),
                    // WAIT_REG_MEM function 3 = equal.
                    Op::WaitReg(scope, "SQ_THREAD_TRACE_STATUS".into(), 3, 0, busy),
                    Op::CopyReg(scope, "SQ_THREAD_TRACE_WPTR".into(), s.wptrs_va + 4 * se),
                ]);
            }
        }
        want.push(write(None, "GRBM_GFX_INDEX", grbm_all(&r)));
        assert_eq!(ops.len(), want.len(), "{ops:#?}");
        for (i, (got, want)) in ops.iter().zip(&want).enumerate() {
            assert_eq!(got, want, "operation {i}");
        }
        assert_eq!(r.addr("SQ_THREAD_TRACE_STATUS"), 0xC33A);
    }

    #[test]
    fn wptr_counts_32_byte_units_from_the_buffer_start() {
        assert_eq!(sqtt::bytes_written(9, 3, 0x7F12_3400_0000), 96);
        // read_offset (bits 31:30) is not part of the count.
        assert_eq!(sqtt::bytes_written(9, 0xC000_0002, 0x1000), 64);
    }

    /// The synthetic header is byte for byte the one in front of tinygrad's gfx950 captures.
    #[test]
    fn blob_header_matches_the_gfx950_captures() {
        assert_eq!(sqtt::blob_header(11, 0), None);
        let Some(dir) = testdata::require_shared("traces/gfx950/empty_run_0") else {
            return;
        };
        for se in 0..32u32 {
            let b = std::fs::read(dir.join(format!("kern0_se{se}.sqtt"))).unwrap();
            assert_eq!(sqtt::blob_header(9, se).unwrap(), b[..8], "SE {se}");
        }
    }

    fn capture(engines: Option<Box<FakeTrace>>) -> (Device, emu::EmuPlatform) {
        let (mut dev, emu) = emu::open_kfd(EmuArch::Gfx950, sqtt_opts(1 << 20)).unwrap();
        // These tests exercise the start/stop/readback machinery: shader engines that run no
        // code (the gfx950 interpreter and its SQTT are tested in emu_gfx950/emu_sqtt_*), so any
        // code object serves for the dispatch.
        match engines {
            Some(e) => emu.set_shader_engines(e),
            None => emu.set_shader_engines(Box::new(emu::NullShaderEngines)),
        }
        let prg = dev.load_program(E3_ELF).unwrap();
        let out = dev.alloc(64, AllocKind::VRAM).unwrap();
        dev.launch(&prg, &[&out, &out], &[], [2, 1, 1], [3, 1, 1])
            .unwrap();
        dev.synchronize().unwrap();
        (dev, emu)
    }

    /// With the null shader engines (which run no code) the capture runs start, dispatch,
    /// stop and readback on all 32 SEs; no trace data exists, so every blob is empty.
    #[test]
    fn capture_on_emulated_gfx950_records_every_se() {
        let (mut dev, emu) = capture(None);
        let ctx = dev.context().clone();
        let reg = |n: &str| ctx.reg(n).unwrap();
        let (status, mode, base) = (
            reg("SQ_THREAD_TRACE_STATUS"),
            reg("SQ_THREAD_TRACE_MODE"),
            reg("SQ_THREAD_TRACE_BASE"),
        );
        let p = &emu;
        let mut bases = Vec::new();
        for se in 0..32 {
            // Every XCC's stop drained its own SEs and left tracing off.
            let st = p.read_reg_se(status.addr, se);
            assert_ne!(st & (0x3FF << 16), 0, "SE {se} STATUS {st:#x}: finish_done");
            assert_eq!(st & (1 << 30), 0, "SE {se}: busy");
            assert_eq!(p.read_reg_se(mode.addr, se) & (3 << 21), 0, "SE {se}: mode");
            assert_eq!(p.read_reg_se(reg("SQ_THREAD_TRACE_WPTR").addr, se), 0);
            bases.push(p.read_reg_se(base.addr, se));
        }
        bases.sort();
        bases.dedup();
        assert_eq!(bases.len(), 32, "each SE has its own buffer: {bases:x?}");
        let prof = dev.profile().unwrap();
        assert_eq!(prof.sqtt.len(), 32);
        for (i, tr) in prof.sqtt.iter().enumerate() {
            assert_eq!(tr.se, i as u32);
            assert_eq!(tr.itrace, i == 1, "itrace mask 0b10");
            assert!(prof.blob(tr.blob).is_empty(), "SE {i}: nothing was traced");
        }
        assert!(dev.warnings().is_empty(), "{:?}", dev.warnings());
    }

    /// Trace bytes the shader engines hand over land in the right SE's buffer (global SE =
    /// XCC * 4 + local SE), WPTR brings them back, and each blob gets the gfx9 header.
    #[test]
    fn trace_bytes_come_back_per_se_with_the_gfx9_header() {
        let fake = Box::new(FakeTrace {
            len: 4000,
            started: 0,
        });
        let (mut dev, _emu) = capture(Some(fake));
        let prof = dev.profile().unwrap();
        assert_eq!(prof.sqtt.len(), 32);
        for (i, tr) in prof.sqtt.iter().enumerate() {
            let b = prof.blob(tr.blob);
            // WPTR counts whole 32-byte units: 4000 bytes -> 125 units.
            assert_eq!(b.len(), 8 + 4000, "SE {i}");
            assert_eq!(b[..8], sqtt::blob_header(9, i as u32).unwrap());
            assert!(
                b[8..]
                    .iter()
                    .enumerate()
                    .all(|(j, &x)| x == (j as u8) ^ (i as u8).wrapping_mul(17)),
                "SE {i} bytes"
            );
        }
    }
}
