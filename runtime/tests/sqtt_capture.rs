//! SQTT capture on the emulated GPU: start/stop sequences, per-SE buffers, markers, WPTR readback
//! (on every emulated backend).

#[macro_use]
mod common;

use common::{opts, Emu, Target, E3_ELF};
use runtime::emu::{
    DeviceFault, DispatchInfo, DispatchResult, EmuArch, Memory, RegFile, ShaderEngines,
};
use runtime::error::Error;
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
        (0..self.len).map(|i| (i as u8) ^ (se as u8 * 17)).collect()
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

fn per_se_blobs_are_read_back(t: Target) {
    let (mut dev, _emu) = run(t, 4096, 1 << 20);
    let prof = dev.profile().unwrap();
    assert_eq!(prof.sqtt.len(), t.arch().num_se() as usize);
    for (i, tr) in prof.sqtt.iter().enumerate() {
        assert_eq!(tr.se, i as u32);
        assert_eq!(tr.itrace, i == 1, "itrace mask 0b10");
        let b = prof.blob(tr.blob);
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

#[test]
fn gfx9_sqtt_is_refused_clearly() {
    let e = Device::open_emulated(EmuArch::Gfx950, sqtt_opts(1 << 20))
        .err()
        .unwrap();
    assert!(matches!(e, Error::Unsupported(_)), "{e}");
    assert!(e.to_string().contains("SQTT"), "{e}");
}
