//! The runtime on the emulated GPU behind the emulated ASM2464 bridge, through the real USB code
//! path: `usb` controller and TLP layer, bus enumeration, the USB PCI device, the AM driver and
//! the USB iface. Only the bridge device and the GPU are emulated.

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{check_vadd, fixture, opts, pattern};
use emu::EmuArch;
use emu::{open_usb, EmuUsb};
use runtime::platform::AllocKind;
use runtime::{Device, DeviceOptions};
use usb::{Fault, Faulty, Firmware};

// The tests every backend runs (kernels, SQTT, copies, faults) run on this path too, as the
// `usb_gfx1100` cases of emu_kernels.rs, emu_sqtt.rs, emulated_kfd.rs and the others; these are
// the USB path's own.

fn open(fw: Firmware, o: DeviceOptions) -> (Device, EmuUsb) {
    open_usb(fw, o, |t| Box::new(t)).unwrap()
}

#[test]
fn enumeration_finds_the_gpu_sizes_its_bars_and_the_gpu_comes_up() {
    for fw in [Firmware::Custom, Firmware::Stock] {
        let (dev, emu) = open(fw, opts());
        let ep = &emu.endpoint;
        assert_eq!((ep.vendor, ep.device), (0x1002, 0x744c), "{fw:?}");
        assert_eq!(ep.bdf, usb::Bdf::new(4, 0, 0));
        // BAR0 boots at 256 MiB; the resizable-BAR step grew it to the whole 1 GiB VRAM.
        let b0 = ep.bars[&0];
        assert_eq!((b0.size, b0.is64, b0.prefetchable), (1 << 30, true, true));
        assert_eq!(ep.bars[&2].size, 0x2000);
        assert_eq!(ep.bars[&5].size, 2 << 20);
        assert_eq!(ep.rebar, Some((0, 10)));
        // The AM driver ran over the bridge: PSP loaded firmware, SMU answered.
        let log = emu.gpu.firmware_log();
        assert!(
            !log.loaded.is_empty(),
            "{fw:?}: no firmware loaded over USB"
        );
        assert!(!log.smu_msgs.is_empty());
        assert_eq!(dev.props.device_id, 0x744c);
        let st = emu.link.stats();
        assert!(
            st.tlps > 1000,
            "{fw:?}: bring-up took only {} TLPs",
            st.tlps
        );
        assert!(emu.link.fault().is_none());
    }
}

#[test]
fn vadd_dispatch_matches_cpu_on_both_firmwares() {
    for fw in [Firmware::Custom, Firmware::Stock] {
        let (mut dev, emu) = open(fw, opts());
        check_vadd(&mut dev, EmuArch::Gfx1100, 1000, 3);
        assert_eq!(emu.gpu.stats().dispatches, 1, "{fw:?}");
    }
}

#[test]
fn unplug_mid_capture_ends_cleanly_and_keeps_the_recorded_kernels() {
    let mut trigger = None;
    let (mut dev, emu) = open_usb(Firmware::Custom, opts(), |t| {
        let f = Faulty::new(t, Fault::Unplug, u64::MAX);
        trigger = Some(f.trigger.clone());
        Box::new(f)
    })
    .unwrap();
    check_vadd(&mut dev, EmuArch::Gfx1100, 128, 1);
    let before = dev.recorder.to_profile(&dev.props).kernels.len();
    assert!(before >= 1);
    trigger.unwrap().store(true, Ordering::SeqCst);
    let t0 = std::time::Instant::now();
    let prg = dev.load_program(&fixture(EmuArch::Gfx1100, "vadd"));
    let r = prg.and_then(|p| {
        let b = dev.alloc(4096, AllocKind::VRAM)?;
        dev.launch(&p, &[&b, &b, &b], &[16], [1, 1, 1], [64, 1, 1])?;
        dev.synchronize()
    });
    let e = r.expect_err("work after the unplug must fail");
    let cause = emu.link.fault().expect("the link recorded why");
    assert!(cause.is_disconnect(), "{cause}");
    assert!(cause.to_string().contains("unplugged"), "{cause}");
    // It failed at once (no wait for the 5 s signal timeout), and the error says why.
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    let msg = runtime::usb::iface::with_cause(e, &emu.link).to_string();
    assert!(msg.contains("unplugged"), "{msg}");
    let prof = dev.recorder.to_profile(&dev.props);
    assert_eq!(
        prof.kernels.len(),
        before,
        "what was recorded before the unplug is kept"
    );
    assert!(prof.kernels.iter().any(|k| k.name == "vadd"));
}

#[test]
fn a_stalled_transfer_is_a_timeout_error_naming_the_transfer() {
    let mut trigger = None;
    let (mut dev, emu) = open_usb(Firmware::Custom, opts(), |t| {
        let f = Faulty::new(t, Fault::Stall, u64::MAX).only("control IN");
        trigger = Some(f.trigger.clone());
        Box::new(f)
    })
    .unwrap();
    let b = dev.alloc(4096, AllocKind::VRAM).unwrap();
    trigger.unwrap().store(true, Ordering::SeqCst);
    let mut out = vec![0u8; 4096];
    let r = dev.copyout(&b, &mut out);
    assert!(r.is_err(), "a stalled completion read must fail the copy");
    let cause = emu.link.fault().expect("recorded");
    let msg = cause.to_string();
    assert!(
        msg.contains("timed out after 1000 ms") && msg.contains("control IN"),
        "{msg}"
    );
}

#[test]
fn dma_windows_are_shared_between_host_xdata_and_gpu_bus_addresses() {
    let (_dev, emu) = open(Firmware::Custom, opts());
    // Host writes the system buffer through XDATA 0xA000; the GPU sees it at bus 0x820000.
    emu.link
        .with(|c| {
            c.write_xdata(0xA100, &[1, 2, 3, 4], true)?;
            c.flush()
        })
        .unwrap();
    let mut g = [0u8; 4];
    assert!(emu.gpu.dma_read(0x82_0100, &mut g));
    assert_eq!(g, [1, 2, 3, 4]);
    // The GPU writes at bus 0x820200; one E4 read shows it.
    assert!(emu.gpu.dma_write(0x82_0200, &[9, 8, 7]));
    let h = emu.link.with(|c| c.read_xdata(0xA200, 3)).unwrap();
    assert_eq!(h, [9, 8, 7]);
    // F2 + bulk OUT into the SRAM window lands at bus 0x200000 + offset.
    let data = pattern(40_000, 3);
    emu.link
        .with(|c| {
            c.sram_write(0x8000, &data)?;
            c.flush()
        })
        .unwrap();
    let mut back = vec![0u8; data.len()];
    assert!(emu.gpu.dma_read(0x20_8000, &mut back));
    assert!(back == data, "SRAM window bytes differ");
}

#[test]
fn fake_bridge_core_answers_raw_setup_packets() {
    use emu::asm24::fake_bridge;
    use emu::pci::{EmuPciConfig, EmuPciGpu};
    use usb::device::Packet;
    let gpu = EmuPciGpu::new(EmuPciConfig::new(EmuArch::Gfx1100)).unwrap();
    let mut core = fake_bridge(gpu, Firmware::Custom);
    // LTSSM before and after F3 power-on, as raw SETUP bytes.
    let ltssm = Packet::Control {
        setup: [0xC0, 0xE4, 0x50, 0xB4, 0, 0, 1, 0],
        data: vec![],
    };
    assert_ne!(core.handle(&ltssm).unwrap(), [0x78]);
    core.handle(&Packet::Control {
        setup: [0x40, 0xF3, 1, 0, 0, 0, 0, 0],
        data: vec![],
    })
    .unwrap();
    assert_eq!(core.handle(&ltssm).unwrap(), [0x78]);
    // A config read of 4:0.0 before the bridges are programmed: Unsupported Request (status 1).
    let cfg = Packet::Control {
        setup: [0x40, 0xF0, 0x05, 0x0F, 0, 0, 12, 0],
        data: vec![0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0],
    };
    core.handle(&cfg).unwrap();
    let cpl = core
        .handle(&Packet::Control {
            setup: [0xC0, 0xF0, 0, 0, 0, 0, 8, 0],
            data: vec![],
        })
        .unwrap();
    assert_eq!((cpl[4] >> 5) & 7, 1, "completion {cpl:02x?}");
}
