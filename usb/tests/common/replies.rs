//! Drives the host side of the bridge (bring-up, XDATA, config and memory TLPs, SRAM DMA, bus
//! enumeration) against a device whose every reply comes from a byte script: whatever it
//! answers, each step ends in a value or an error, never a panic. Shared by
//! tests/random_replies.rs and the fuzz target `bridge_replies`.

use usb::transport::Scripted;
use usb::{Asm24, Bdf, BridgeInfo, BusLayout, Firmware};

/// Runs every step it can; returns the error messages seen.
pub fn drive(script: &[u8]) -> Vec<String> {
    let (fw, product) = match script.first() {
        Some(b) if b & 1 == 1 => (Firmware::Stock, "ASM2464PD"),
        _ => (Firmware::Custom, "custom v0.1"),
    };
    let info = BridgeInfo {
        vid: 0xADD1,
        pid: 0x0001,
        product: product.into(),
        location: "scripted".into(),
        has_uas_alt: fw == Firmware::Stock,
    };
    let t = Scripted::new(script.get(1..).unwrap_or_default().to_vec(), info);
    let mut errs = Vec::new();
    let mut c = match Asm24::with_firmware(Box::new(t), fw) {
        Ok(c) => c,
        Err(e) => {
            errs.push(e.to_string());
            return errs;
        }
    };
    let gpu = Bdf {
        bus: 4,
        dev: 0,
        func: 0,
    };
    let mut note = |r: Result<(), usb::UsbError>| {
        if let Err(e) = r {
            errs.push(e.to_string());
        }
    };
    note(c.read_xdata(0xB000, 16).map(drop));
    note(c.write_xdata(0xB000, &[1, 2, 3], false));
    note(c.cfg_read(gpu, 0, 4).map(drop));
    note(c.cfg_write(gpu, 4, 6, 2));
    note(c.mem_read32(0x1000_0000).map(drop));
    note(c.mem_write(0x1000_0000, &[7; 64]));
    note(c.mem_read(0x1000_0000, 96).map(drop));
    note(c.sram_write(0, &[5; 512]));
    note(c.arm_sram_read(0, 512));
    note(c.bulk_read(512).map(drop));
    note(usb::setup_bars(&mut c, BusLayout::default()).map(drop));
    note(c.flush());
    errs
}
