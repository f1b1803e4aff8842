//! sqtt_capture.rs on the emulated PCI GPU through the real PCI (AM) driver (generated from it;
//! the opener differs and only gfx1100 is emulated on PCI): start/stop sequences, per-SE buffers,
//! markers, WPTR readback.

use std::time::Duration;

use runtime::emu::{
    DeviceFault, DispatchInfo, DispatchResult, EmuArch, Memory, RegFile, ShaderEngines,
};
use runtime::platform::AllocKind;
use runtime::{Device, DeviceOptions};

const ELF: &[u8] = include_bytes!("data/gfx1100_E_3.elf");

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

fn opts(buf: u64) -> DeviceOptions {
    DeviceOptions {
        wait_timeout: Duration::from_secs(5),
        compute_ring_size: 1 << 20,
        sdma_ring_size: 1 << 16,
        kernargs_size: 1 << 20,
        staging_chunk: 64 << 10,
        staging_count: 2,
        profile: true,
        sqtt: true,
        sqtt_buffer_size: buf,
        sqtt_itrace_se_mask: 0b10,
    }
}

fn run(arch: EmuArch, trace_len: usize, buf: u64) -> (Device, runtime::emu::EmuPlatform) {
    let gpu = runtime::emu::pci::EmuPciGpu::with_shader_engines(
        runtime::emu::pci::EmuPciConfig::new(arch),
        Box::new(FakeTrace {
            len: trace_len,
            started: 0,
        }),
    )
    .unwrap();
    let fw = runtime::emu::pci::firmware::temp_firmware_dir().unwrap();
    let popts = runtime::pci::PciOptions {
        firmware_dir: fw.clone(),
        ..Default::default()
    };
    let mut dev = Device::open_on_pci(std::sync::Arc::new(gpu.clone()), opts(buf), &popts).unwrap();
    std::fs::remove_dir_all(&fw).ok();
    let prg = dev.load_program(ELF).unwrap();
    let out = dev.alloc(64, AllocKind::VRAM).unwrap();
    dev.launch(&prg, &[&out, &out], &[], [2, 1, 1], [3, 1, 1])
        .unwrap();
    dev.synchronize().unwrap();
    (dev, gpu.platform().clone())
}

#[test]
fn per_se_blobs_are_read_back_on_gfx11() {
    for (arch, ses) in [(EmuArch::Gfx1100, 6u32)] {
        let (mut dev, _emu) = run(arch, 4096, 1 << 20);
        let prof = dev.profile().unwrap();
        assert_eq!(prof.sqtt.len(), ses as usize, "{arch:?}");
        for (i, t) in prof.sqtt.iter().enumerate() {
            assert_eq!(t.se, i as u32);
            assert_eq!(t.itrace, i == 1, "itrace mask 0b10");
            let b = prof.blob(t.blob);
            assert_eq!(b.len(), 4096, "{arch:?} SE {i}");
            assert!(
                b.iter()
                    .enumerate()
                    .all(|(j, &x)| x == (j as u8) ^ (i as u8 * 17)),
                "{arch:?} SE {i} bytes"
            );
        }
        assert!(dev.warnings().is_empty());
    }
}

#[test]
fn markers_reach_the_userdata_registers() {
    let (dev, emu) = run(EmuArch::Gfx1100, 64, 1 << 20);
    let ud2 = dev.context().sqtt_userdata_2;
    // The last pair written is the event marker's thread dims (y, z) = (1, 1); the one before
    // ended with global x. USERDATA_2/3 hold the last two dwords.
    assert_eq!(emu.read_reg(ud2), 1);
    assert_eq!(emu.read_reg(ud2 + 1), 1);
}

#[test]
fn full_buffer_is_a_warning_that_says_how_to_enlarge_it() {
    let (dev, _emu) = run(EmuArch::Gfx1100, 8192, 0x2000);
    let w = dev.warnings();
    assert_eq!(w.len(), 6, "{w:?}");
    assert!(
        w[0].contains("full") && w[0].contains("sqtt_buffer_size"),
        "{}",
        w[0]
    );
}
