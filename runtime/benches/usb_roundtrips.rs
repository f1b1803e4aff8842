//! USB round trips per kernel dispatch and per MiB copied, over the emulated ASM2464 bridge
//! with the emulated GPU, through the real USB code path. A round trip is one submission the
//! host waits for (`usb::Stats::round_trips`); transfers are the control/bulk transfers in them.
//! Printed next to the minimum the protocol allows:
//! - dispatch: the ring packets and the doorbell can travel in one submission (F0 stream + bulk
//!   OUT + F0 doorbell write), and completion needs at least one read (E4 of the signal in the
//!   system buffer): 2 round trips, 4 transfers.
//! - copy host→device: one F0 stream header + one 1 MiB bulk OUT per MiB: 1 round trip,
//!   2 transfers per MiB (plus the fixed cost of one SDMA submission per copy).
//! - copy device→host: one F0 stream-read header + one bulk IN per MiB: 1 round trip, 2 transfers.
//!
//! Run: `cargo bench -p runtime --bench usb_roundtrips`.

use std::time::Duration;

use emu::open_usb;
use runtime::platform::AllocKind;
use runtime::DeviceOptions;
use usb::{Firmware, Stats};

fn vadd_elf() -> Vec<u8> {
    std::fs::read(format!(
        "{}/../tests/fixtures/kernels/emu/vadd.hsaco",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("vadd fixture")
}

fn per(s: Stats, n: f64) -> String {
    format!(
        "{:8.1} round trips {:8.1} transfers {:8.1} TLPs {:10.0} B out {:10.0} B in",
        s.round_trips as f64 / n,
        s.transfers as f64 / n,
        s.tlps as f64 / n,
        s.bytes_out as f64 / n,
        s.bytes_in as f64 / n
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `cargo bench` passes --bench; `cargo test --benches` runs us too: keep it quick there.
    let quick = std::env::args().all(|a| a != "--bench");
    let dispatches = if quick { 3 } else { 20 };
    let mib = if quick { 1 } else { 8 };
    for fw in [Firmware::Custom, Firmware::Stock] {
        let opts = DeviceOptions {
            wait_timeout: Duration::from_secs(30),
            sqtt: false,
            ..Default::default()
        };
        let (mut dev, emu) = open_usb(fw, opts, |t| Box::new(t))?;
        println!("{fw:?} firmware ({}):", emu.link.describe());
        let boot = emu.link.stats();
        println!(
            "  bring-up (enumeration + AM boot + queues): {}",
            per(boot, 1.0)
        );

        let prg = dev.load_program(&vadd_elf())?;
        let n = 64u32;
        let buf = dev.alloc(4 * u64::from(n), AllocKind::VRAM)?;
        dev.launch(&prg, &[&buf, &buf, &buf], &[n], [1, 1, 1], [64, 1, 1])?;
        dev.synchronize()?;
        let s0 = emu.link.stats();
        for _ in 0..dispatches {
            dev.launch(&prg, &[&buf, &buf, &buf], &[n], [1, 1, 1], [64, 1, 1])?;
            dev.synchronize()?;
        }
        let d = emu.link.stats() - s0;
        println!(
            "  per dispatch (launch + wait):  {}",
            per(d, f64::from(dispatches))
        );
        if std::env::var_os("WAVESCOPE_USB_TRACE").is_some() {
            emu.link.set_trace(true);
            dev.launch(&prg, &[&buf, &buf, &buf], &[n], [1, 1, 1], [64, 1, 1])?;
            dev.synchronize()?;
            for (i, l) in emu.link.take_trace().iter().enumerate() {
                println!("    submission {i}: {}", &l[..l.len().min(300)]);
            }
            emu.link.set_trace(false);
        }
        println!("    protocol minimum:                 2.0 round trips      4.0 transfers");

        let len = mib << 20;
        let data: Vec<u8> = (0..len).map(|i| (i * 31 + 7) as u8).collect();
        let vram = dev.alloc(len as u64, AllocKind::VRAM)?;
        let s0 = emu.link.stats();
        dev.copyin(&vram, &data)?;
        let d = emu.link.stats() - s0;
        println!("  per MiB copied host->device:   {}", per(d, mib as f64));
        match fw {
            Firmware::Custom => println!(
                "    protocol minimum:                 1.0 round trips      2.0 transfers"
            ),
            Firmware::Stock => println!(
                "    protocol minimum (MemWr TLPs: >= 4 UAS ops per dword, 31 in flight): \
                 33825 round trips; SCSI WRITE(16) into SRAM would need 1 (not used by this copy path)"
            ),
        }
        let mut back = vec![0u8; len];
        let s0 = emu.link.stats();
        dev.copyout(&vram, &mut back)?;
        let d = emu.link.stats() - s0;
        println!("  per MiB copied device->host:   {}", per(d, mib as f64));
        match fw {
            Firmware::Custom => {
                println!("    protocol minimum:                 1.0 round trips      2.0 transfers")
            }
            Firmware::Stock => println!(
                "    protocol minimum (MemRd TLP: fire + poll, then read the result, per dword): \
                 524288 round trips"
            ),
        }
        if back != data {
            return Err("copy round trip returned different bytes".into());
        }
    }
    Ok(())
}
