//! The controller, TLP layer and enumeration against the device-side model with a small
//! endpoint (tests/common), for both firmwares; retries and transport faults.

mod common;

use common::{bridge, bridge_with, SmallEndpoint};
use usb::device::{BridgeCore, CoreTransport};
use usb::enumerate::BusLayout;
use usb::transport::{Fault, Faulty};
use usb::{setup_bars, Asm24, Bdf, CplStatus, Firmware, UsbError};

fn enumerate_and_check(fw: Firmware) {
    let (mut c, dev) = bridge(fw);
    let ep = setup_bars(&mut c, BusLayout::default()).unwrap();
    assert_eq!((ep.vendor, ep.device), (0x1002, 0x744c));
    assert_eq!(ep.bdf, Bdf::new(4, 0, 0));
    let b0 = ep.bars[&0];
    assert_eq!(b0.size, 512 << 20);
    assert!(b0.is64 && b0.prefetchable);
    assert_eq!(b0.addr, 32 << 30, "prefetchable pool starts at 32 GiB");
    let b2 = ep.bars[&2];
    let b5 = ep.bars[&5];
    assert_eq!((b2.size, b5.size), (8 << 10, 2 << 20));
    assert_eq!(b2.addr, 0x1000_0000);
    // BAR5 is 2 MiB aligned after BAR2 (pool advanced by the size rounded up to 2 MiB).
    assert_eq!(b5.addr, 0x1020_0000);
    assert_eq!(ep.bars.len(), 3, "{:?}", ep.bars);
    // REBAR: largest supported size bit (bit 13 = index 9 → 512 MiB).
    assert_eq!(ep.rebar, Some((0, 9)));

    let core = dev.core();
    // The device saw the assignments and the command register.
    assert_eq!(core.endpoint.bar_addr(0), 32 << 30);
    assert_eq!(core.endpoint.bar_addr(5), 0x1020_0000);
    assert_eq!(core.endpoint.cfg[4] & 7, 7);
    assert_eq!(
        core.endpoint.cfg[0x109] & 0x1F,
        9,
        "REBAR control bits 8..12"
    );
    for bus in 0..4u8 {
        let cfg = core.bridge_config(bus).unwrap();
        assert_eq!(
            &cfg[0x18..0x1B],
            &[0, bus + 1, 4],
            "bridge {bus} bus numbers"
        );
        assert_eq!(cfg[4] & 7, 7);
        assert_eq!(u16::from_le_bytes([cfg[0x20], cfg[0x21]]), 0x1000);
        assert_eq!(
            u32::from_le_bytes([cfg[0x28], cfg[0x29], cfg[0x2A], cfg[0x2B]]),
            8
        );
    }
}

#[test]
fn enumeration_finds_the_endpoint_and_assigns_bars_custom() {
    enumerate_and_check(Firmware::Custom);
}

#[test]
fn enumeration_finds_the_endpoint_and_assigns_bars_stock() {
    enumerate_and_check(Firmware::Stock);
}

#[test]
fn endpoint_is_unreachable_before_bridges_are_programmed() {
    let (mut c, _) = bridge(Firmware::Custom);
    let e = c.cfg_read(Bdf::new(4, 0, 0), 0, 4).unwrap_err();
    assert!(
        matches!(
            e,
            UsbError::Completion {
                status: CplStatus::UnsupportedRequest,
                ..
            }
        ),
        "{e}"
    );
}

fn memory_paths(fw: Firmware) {
    let (mut c, dev) = bridge(fw);
    let ep = setup_bars(&mut c, BusLayout::default()).unwrap();
    let mmio = ep.bars[&5].addr;
    let vram = ep.bars[&0].addr;
    c.mem_write32(mmio + 0x10, 0xCAFE_F00D).unwrap();
    assert_eq!(c.mem_read32(mmio + 0x10).unwrap(), 0xCAFE_F00D);
    // Sub-dword config read (byte at offset 2 = device id low byte).
    assert_eq!(c.cfg_read(ep.bdf, 2, 1).unwrap(), 0x4c);
    assert_eq!(c.cfg_read(ep.bdf, 2, 2).unwrap(), 0x744c);
    // Block write + read back.
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
    c.mem_write(vram + 0x1000, &data).unwrap();
    assert_eq!(c.mem_read(vram + 0x1000, data.len()).unwrap(), data);
    assert_eq!(&dev.core().endpoint.mem[0][0x1000..0x2000], &data[..]);
    // 64-bit write: both halves land.
    c.mem_write64(mmio + 0x20, 0x1122_3344_5566_7788).unwrap();
    assert_eq!(c.mem_read32(mmio + 0x24).unwrap(), 0x1122_3344);
    // Outside every BAR: Unsupported Request on reads.
    let e = c.mem_read32(0x4000_0000).unwrap_err();
    assert!(
        matches!(
            e,
            UsbError::Completion {
                status: CplStatus::UnsupportedRequest,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn memory_tlps_reach_the_bars_custom() {
    memory_paths(Firmware::Custom);
}

#[test]
fn memory_tlps_reach_the_bars_stock() {
    memory_paths(Firmware::Stock);
}

#[test]
fn custom_posted_write_is_one_round_trip_and_stream_is_one() {
    let (mut c, _) = bridge(Firmware::Custom);
    let ep = setup_bars(&mut c, BusLayout::default()).unwrap();
    let s0 = c.stats;
    c.mem_write32(ep.bars[&5].addr, 1).unwrap();
    // Posted: waits for the next submission.
    assert_eq!((c.stats - s0).round_trips, 0);
    c.flush().unwrap();
    let d = c.stats - s0;
    assert_eq!((d.round_trips, d.transfers), (1, 1));
    let s0 = c.stats;
    c.mem_write(ep.bars[&0].addr, &vec![0x5A; 3 << 20]).unwrap();
    c.flush().unwrap();
    let d = c.stats - s0;
    // 3 MiB = 3 streamed chunks of 1 MiB: 3 × (F0 + bulk OUT), one submission.
    assert_eq!((d.round_trips, d.transfers), (1, 6));
    // A write and the read after it share one submission.
    let s0 = c.stats;
    c.mem_write32(ep.bars[&5].addr + 4, 0xABCD).unwrap();
    assert_eq!(c.mem_read32(ep.bars[&5].addr + 4).unwrap(), 0xABCD);
    let d = c.stats - s0;
    assert_eq!((d.round_trips, d.transfers), (1, 3));
    let s0 = c.stats;
    c.mem_read32(ep.bars[&5].addr).unwrap();
    let d = c.stats - s0;
    assert_eq!(
        (d.round_trips, d.transfers),
        (1, 2),
        "F0 OUT + F0 IN in one submission"
    );
}

#[test]
fn write_caches_drop_unchanged_writes() {
    let (mut c, dev) = bridge(Firmware::Custom);
    c.set_defer_writes(false).unwrap();
    c.write_xdata(0xA000, &[1, 2, 3, 4], false).unwrap();
    let before = dev.core().stats.xdata_writes;
    c.write_xdata(0xA000, &[1, 2, 9, 4], false).unwrap();
    assert_eq!(
        dev.core().stats.xdata_writes - before,
        1,
        "only the changed byte is sent"
    );
    // A read invalidates the shadow: the next identical write goes out.
    assert_eq!(c.read_xdata(0xA000, 4).unwrap(), [1, 2, 9, 4]);
    c.write_xdata(0xA000, &[1, 2, 9, 4], false).unwrap();
    assert_eq!(dev.core().stats.xdata_writes - before, 5);

    let ep = setup_bars(&mut c, BusLayout::default()).unwrap();
    let db = ep.bars[&2].addr;
    c.add_pci_cacheable(db, 0x2000);
    let t0 = dev.core().stats.tlps;
    c.mem_write32(db + 8, 7).unwrap();
    c.mem_write32(db + 8, 7).unwrap();
    c.mem_write32(db + 8, 8).unwrap();
    assert_eq!(dev.core().stats.tlps - t0, 2);
    // Outside the cacheable range nothing is dropped.
    let t0 = dev.core().stats.tlps;
    c.mem_write32(ep.bars[&5].addr, 7).unwrap();
    c.mem_write32(ep.bars[&5].addr, 7).unwrap();
    assert_eq!(dev.core().stats.tlps - t0, 2);
}

#[test]
fn stock_tlp_registers_go_through_the_xdata_cache() {
    let (mut c, dev) = bridge(Firmware::Stock);
    c.set_defer_writes(false).unwrap();
    let ep = setup_bars(&mut c, BusLayout::default()).unwrap();
    let mmio = ep.bars[&5].addr;
    c.mem_write32(mmio, 1).unwrap();
    let before = dev.core().stats.xdata_writes;
    c.mem_write32(mmio, 2).unwrap();
    // Only the changed data byte, plus the fire and start writes.
    assert_eq!(dev.core().stats.xdata_writes - before, 3);
}

#[test]
fn sram_writes_land_in_the_window_both_firmwares() {
    for fw in [Firmware::Custom, Firmware::Stock] {
        let (mut c, dev) = bridge(fw);
        let data: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
        c.sram_write(0x4000, &data).unwrap();
        c.flush().unwrap();
        let mut got = vec![0u8; data.len()];
        assert!(dev.core().mem_read(0x20_4000, &mut got));
        assert_eq!(got, data, "{fw:?}");
        // XDATA 0xF000 shows the start of the SRAM.
        c.sram_write(0, &[9, 8, 7]).unwrap();
        assert_eq!(c.read_xdata(0xF000, 3).unwrap(), [9, 8, 7]);
    }
}

#[test]
fn transient_tlp_failures_are_retried() {
    let (mut c, dev) = bridge(Firmware::Custom);
    setup_bars(&mut c, BusLayout::default()).unwrap();
    dev.core().inject.tlp_errors = 3;
    dev.core().inject.config_retries = 2;
    assert_eq!(c.cfg_read(Bdf::new(4, 0, 0), 0, 2).unwrap(), 0x1002);
    assert_eq!(c.stats.retries, 5);
    // More failures than the retry budget: a clear error.
    dev.core().inject.tlp_errors = 50;
    let e = c.cfg_read(Bdf::new(4, 0, 0), 0, 2).unwrap_err();
    assert!(matches!(e, UsbError::TlpFailed { tries: 11, .. }), "{e}");
    assert!(e.to_string().contains("config read"), "{e}");

    let (mut c, dev) = bridge(Firmware::Stock);
    setup_bars(&mut c, BusLayout::default()).unwrap();
    dev.core().inject.tlp_errors = 2;
    assert_eq!(c.cfg_read(Bdf::new(4, 0, 0), 2, 2).unwrap(), 0x744c);
}

#[test]
fn custom_firmware_powers_pcie_on_at_open() {
    let core = BridgeCore::new(Firmware::Custom, SmallEndpoint::new());
    let t = CoreTransport::new(core);
    let mut c = Asm24::new(Box::new(t.clone())).unwrap();
    assert_eq!(c.read_xdata(0xB450, 1).unwrap(), [0x78]);
}

fn faulty(f: Fault, at: u64, only: &str) -> Asm24 {
    let core = BridgeCore::new(Firmware::Custom, SmallEndpoint::new());
    let t = Faulty::new(CoreTransport::new(core), f, at).only(only);
    Asm24::new(Box::new(t)).unwrap()
}

#[test]
fn a_stalled_transfer_times_out_with_a_clear_error() {
    // The 3rd control IN after open (open reads LTSSM twice) never completes.
    let mut c = faulty(Fault::Stall, 2, "control IN");
    let e = c.read_xdata(0xA000, 4).unwrap_err();
    assert!(matches!(e, UsbError::Timeout { ms: 1000, .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("control IN 0xe4") && msg.contains("1000 ms"),
        "{msg}"
    );
    // The device is still there: the next transfer works.
    assert_eq!(c.read_xdata(0xA000, 1).unwrap().len(), 1);
}

#[test]
fn a_short_read_is_retried_once_then_reported() {
    let mut c = faulty(Fault::ShortIn(2), 2, "control IN");
    assert_eq!(c.read_xdata(0xA000, 4).unwrap().len(), 4);
    assert_eq!(c.stats.retries, 1);

    // Persistently short: the device returns fewer bytes every time.
    struct AlwaysShort(CoreTransport<SmallEndpoint>);
    impl usb::UsbTransport for AlwaysShort {
        fn info(&self) -> usb::BridgeInfo {
            self.0.info()
        }
        fn control_out(
            &mut self,
            s: &usb::proto::ControlSetup,
            d: &[u8],
            t: std::time::Duration,
        ) -> usb::Result<usize> {
            self.0.control_out(s, d, t)
        }
        fn control_in(
            &mut self,
            s: &usb::proto::ControlSetup,
            t: std::time::Duration,
        ) -> usb::Result<Vec<u8>> {
            let mut v = self.0.control_in(s, t)?;
            if s.length > 1 {
                v.pop();
            }
            Ok(v)
        }
        fn bulk_out(
            &mut self,
            e: u8,
            s: u16,
            d: &[u8],
            t: std::time::Duration,
        ) -> usb::Result<usize> {
            self.0.bulk_out(e, s, d, t)
        }
        fn bulk_in(
            &mut self,
            e: u8,
            s: u16,
            l: usize,
            t: std::time::Duration,
        ) -> usb::Result<Vec<u8>> {
            self.0.bulk_in(e, s, l, t)
        }
    }
    let core = BridgeCore::new(Firmware::Custom, SmallEndpoint::new());
    let mut c = Asm24::new(Box::new(AlwaysShort(CoreTransport::new(core)))).unwrap();
    let e = c.read_xdata(0xA000, 16).unwrap_err();
    assert!(
        matches!(
            e,
            UsbError::Short {
                expected: 16,
                got: 15,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn an_unplugged_bridge_reports_disconnect_on_every_later_call() {
    // Open sends one control OUT (F3 power on); the unplug hits the next one.
    let mut c = faulty(Fault::Unplug, 1, "control OUT");
    // The write is posted: its failure surfaces when it is sent.
    c.write_xdata(0xA000, &[1], false).unwrap();
    let e = c.flush().unwrap_err();
    assert!(e.is_disconnect(), "{e}");
    let e = c.read_xdata(0xA000, 1).unwrap_err();
    assert!(e.is_disconnect(), "{e}");
    assert!(e.to_string().contains("unplugged"), "{e}");
}

#[test]
fn raw_handle_api_serves_setup_bytes() {
    use usb::device::Packet;
    let mut core = BridgeCore::new(Firmware::Custom, SmallEndpoint::new());
    // F3 power on, then E4 read of the LTSSM register, as raw SETUP bytes.
    core.handle(&Packet::Control {
        setup: [0x40, 0xF3, 1, 0, 0, 0, 0, 0],
        data: vec![],
    })
    .unwrap();
    let r = core
        .handle(&Packet::Control {
            setup: [0xC0, 0xE4, 0x50, 0xB4, 0, 0, 1, 0],
            data: vec![],
        })
        .unwrap();
    assert_eq!(r, [0x78]);
    // Unknown request: stall with the offending byte.
    let e = core
        .handle(&Packet::Control {
            setup: [0x40, 0x99, 0, 0, 0, 0, 0, 0],
            data: vec![],
        })
        .unwrap_err();
    assert!(e.to_string().contains("0x99"), "{e}");
}

#[test]
fn a_bar_of_4_gib_or_more_is_sized_from_its_high_dword() {
    // Resizable BAR over all of a 24 GiB card's VRAM: BAR0 is 32 GiB, so its low dword has no
    // writable address bits at all.
    let mut ep = SmallEndpoint::new();
    ep.bars[0].1.size = 32 << 30;
    let (mut c, dev) = bridge_with(Firmware::Custom, ep);
    let ep = setup_bars(&mut c, BusLayout::default()).unwrap();
    let b0 = ep.bars[&0];
    assert_eq!(b0.size, 32 << 30);
    assert_eq!(b0.addr % (32 << 30), 0, "naturally aligned: {:#x}", b0.addr);
    assert_eq!(dev.core().endpoint.bar_addr(0), b0.addr);
}

#[test]
fn a_short_read_in_a_batch_with_writes_is_reported_not_resent() {
    // A TLP read is a request (control OUT 0xF0) and its completion (control IN) in one
    // batch; sending the request twice could repeat a side effect, so a short completion is an
    // error rather than a retry. (Open reads LTSSM twice: the 3rd control IN is the completion.)
    let mut c = faulty(Fault::ShortIn(2), 2, "control IN");
    let e = c.mem_read32(0x1000_0000).unwrap_err();
    assert!(matches!(e, UsbError::Short { .. }), "{e}");
    assert!(e.to_string().contains("control IN 0xf0"), "{e}");
    assert_eq!(c.stats.retries, 0);
}
