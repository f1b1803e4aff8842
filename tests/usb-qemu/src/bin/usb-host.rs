//! Host side of the qemu USB test, run inside the guest by `run-guest.sh` after the gadget
//! enumerated: `usb-host MODE`. Exit status 0 = every check passed.
//!
//! * `echo`: harness self-test against `usb-gadget … echo`: finds the device by the ASM2464
//!   custom-firmware ids through rusb, checks interface 0 alt 0 has bulk OUT 0x02 and bulk IN 0x81,
//!   claims it, writes and reads back XDATA bytes with vendor requests 0xE5/0xE4 and sends a
//!   64 KiB bulk pattern that must come back unchanged.
//! * `asm24-scratch`: against `usb-gadget … asm24-scratch`, through the usb crate's
//!   `RusbTransport` and `Asm24` controller: bridge bring-up (LTSSM, PCIe power), XDATA writes and
//!   reads, PCIe enumeration behind the bridge (`setup_bars`), single and streamed TLP memory
//!   writes/reads, an SRAM write (F2 + bulk OUT) that the endpoint's copy engine moves into VRAM,
//!   and a copy from VRAM into the SRAM that comes back through an armed F2 read + bulk IN.
//! * `asm24-gpu`: against `usb-gadget … asm24-gpu` (the emulated gfx1100 behind the bridge), the
//!   runtime's USB path as on real hardware — `runtime::usb::open_rusb` (rusb transport,
//!   controller, enumeration), the AM driver over the USB PCI device (`UsbIface`), the runtime
//!   `Device` — then a host → VRAM → VRAM → host copy through SDMA and a `vadd` kernel dispatch
//!   checked against the CPU. The firmware files are the emulator's synthetic ones (the emulated
//!   PSP accepts only those).
//! * `bench [MiB]`: against `usb-gadget … asm24-scratch`, copies MiB (default 32) host → VRAM
//!   (streamed TLP writes: F0 + 1 MiB bulk OUT per chunk) and VRAM → host (F0 + bulk IN) once
//!   with the synchronous path (`stream_depth` 1: one transfer, wait, next) and once streamed
//!   (several transfers in flight through libusb's async API), checks the bytes, and prints MB/s,
//!   waits (transfers the host blocked on) per MiB, transfers per MiB, CPU time and the ratios.

use std::process::ExitCode;
use std::time::Duration;

use rusb::{Direction, TransferType, UsbContext};

const VID: u16 = 0xADD1;
const PID: u16 = 0x0001;
const TIMEOUT: Duration = Duration::from_secs(5);

fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let result = match mode.as_str() {
        "echo" => echo(),
        "asm24-scratch" => asm24_scratch(),
        "asm24-gpu" => asm24_gpu(),
        "bench" => bench(std::env::args().nth(2).as_deref()),
        other => Err(format!("unknown mode {other:?}")),
    };
    match result {
        Ok(()) => {
            println!("usb-host: all checks passed");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("usb-host: FAIL: {e}");
            ExitCode::FAILURE
        }
    }
}

fn echo() -> Result<(), String> {
    let ctx = rusb::Context::new().map_err(|e| format!("libusb init: {e}"))?;
    let devices = ctx.devices().map_err(|e| format!("device list: {e}"))?;
    let dev = devices
        .iter()
        .find(|d| {
            d.device_descriptor()
                .map(|dd| (dd.vendor_id(), dd.product_id()) == (VID, PID))
                .unwrap_or(false)
        })
        .ok_or(format!("no device {VID:04x}:{PID:04x}"))?;
    let dd = dev.device_descriptor().map_err(|e| e.to_string())?;
    println!(
        "usb-host: found {VID:04x}:{PID:04x} bus {} addr {} speed {:?} usb {}",
        dev.bus_number(),
        dev.address(),
        dev.speed(),
        dd.usb_version()
    );
    let cfg = dev.active_config_descriptor().map_err(|e| e.to_string())?;
    let alt = cfg
        .interfaces()
        .find(|i| i.number() == 0)
        .and_then(|i| i.descriptors().find(|d| d.setting_number() == 0))
        .ok_or("no interface 0 alt 0")?;
    let eps: Vec<(u8, Direction, TransferType)> = alt
        .endpoint_descriptors()
        .map(|e| (e.address(), e.direction(), e.transfer_type()))
        .collect();
    println!(
        "usb-host: interface 0 class {:#04x} endpoints {eps:02x?}",
        alt.class_code()
    );
    for want in [(0x02, Direction::Out), (0x81, Direction::In)] {
        if !eps.contains(&(want.0, want.1, TransferType::Bulk)) {
            return Err(format!("bulk endpoint {:#04x} missing: {eps:02x?}", want.0));
        }
    }
    let h = dev.open().map_err(|e| format!("open: {e}"))?;
    let product = h
        .read_product_string_ascii(&dd)
        .map_err(|e| format!("product string: {e}"))?;
    println!("usb-host: product {product:?}");
    h.claim_interface(0).map_err(|e| format!("claim: {e}"))?;
    h.set_alternate_setting(0, 0)
        .map_err(|e| format!("alt setting: {e}"))?;

    // XDATA byte writes/reads through EP0 vendor requests.
    let bytes: Vec<u8> = (0..32u8).map(|i| i.wrapping_mul(37) ^ 0x5A).collect();
    for (i, &b) in bytes.iter().enumerate() {
        h.write_control(0x40, 0xE5, 0x1000 + i as u16, u16::from(b), &[], TIMEOUT)
            .map_err(|e| format!("0xE5: {e}"))?;
    }
    let mut back = vec![0u8; bytes.len()];
    let n = h
        .read_control(0xC0, 0xE4, 0x1000, 0, &mut back, TIMEOUT)
        .map_err(|e| format!("0xE4: {e}"))?;
    if back[..n] != bytes[..] {
        return Err(format!(
            "XDATA read back {:02x?}, wrote {bytes:02x?}",
            &back[..n]
        ));
    }
    // An unknown request must stall.
    match h.write_control(0x40, 0x77, 0, 0, &[], TIMEOUT) {
        Err(rusb::Error::Pipe) => {}
        other => {
            return Err(format!(
                "unknown request 0x77: expected a stall, got {other:?}"
            ))
        }
    }
    // Bulk round trips, one 16 KiB transfer at a time (the gadget echoes each transfer before
    // it reads the next, so a longer write would wait for a read that comes after it).
    let pattern: Vec<u8> = (0..65536u32).map(|i| (i * 7 + i / 251) as u8).collect();
    for (k, piece) in pattern.chunks(16384).enumerate() {
        let sent = h
            .write_bulk(0x02, piece, TIMEOUT)
            .map_err(|e| format!("bulk OUT {k}: {e}"))?;
        let mut got = vec![0u8; piece.len()];
        let mut done = 0;
        while done < got.len() {
            let n = h
                .read_bulk(0x81, &mut got[done..], TIMEOUT)
                .map_err(|e| format!("bulk IN {k} after {done} bytes: {e}"))?;
            done += n;
        }
        if sent != piece.len() || got != piece {
            let first = got.iter().zip(piece).position(|(a, b)| a != b);
            return Err(format!(
                "bulk echo {k} differs (sent {sent}, first difference at {first:?})"
            ));
        }
    }
    println!(
        "usb-host: control and {} byte bulk round trip ok",
        pattern.len()
    );
    Ok(())
}

fn pattern(len: usize, seed: u32) -> Vec<u8> {
    // xorshift: every byte differs from a shifted copy, so an offset error cannot pass.
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

fn same(what: &str, got: &[u8], want: &[u8]) -> Result<(), String> {
    if got == want {
        return Ok(());
    }
    let first = got.iter().zip(want).position(|(a, b)| a != b);
    Err(format!(
        "{what}: {} bytes back, {} expected, first difference at {first:?}",
        got.len(),
        want.len()
    ))
}

fn asm24_scratch() -> Result<(), String> {
    use usb::rusb_transport::{list_bridges, OpenOptions, RusbTransport};
    use usb::{setup_bars, Asm24, BusLayout, Firmware};
    use usb_qemu::scratch::{self, regs};

    let e = |what: &'static str| move |err: usb::UsbError| format!("{what}: {err}");
    let bridges = list_bridges().map_err(e("list_bridges"))?;
    println!("usb-host: bridges {bridges:?}");
    if bridges.len() != 1 {
        return Err(format!("expected one bridge, found {}", bridges.len()));
    }
    let t = RusbTransport::open(0, OpenOptions::default()).map_err(e("open"))?;
    let mut c = Asm24::new(Box::new(t)).map_err(e("bridge bring-up"))?;
    println!(
        "usb-host: {:?} firmware, product {:?}",
        c.firmware(),
        c.info().product
    );
    if c.firmware() != Firmware::Custom {
        return Err(format!("firmware detected as {:?}", c.firmware()));
    }

    // XDATA through EP0 vendor requests (a scratch area of plain registers).
    let x = pattern(300, 1);
    c.write_xdata(0x3000, &x, true).map_err(e("XDATA write"))?;
    c.invalidate_xdata_cache();
    let back = c.read_xdata(0x3000, x.len()).map_err(e("XDATA read"))?;
    same("XDATA", &back, &x)?;

    // PCIe enumeration behind the bridge.
    let ep = setup_bars(&mut c, BusLayout::default()).map_err(e("setup_bars"))?;
    println!("usb-host: endpoint {ep:x?}");
    if (ep.vendor, ep.device) != (scratch::VENDOR, scratch::DEVICE) {
        return Err(format!("endpoint ids {:04x}:{:04x}", ep.vendor, ep.device));
    }
    let vram = ep.bars.get(&0).ok_or("no BAR0")?;
    let regs_bar = ep.bars.get(&5).ok_or("no BAR5")?;
    if vram.size != scratch::VRAM_SIZE || regs_bar.size != scratch::REGS_SIZE {
        return Err(format!("BAR sizes {:#x} / {:#x}", vram.size, regs_bar.size));
    }

    // Single TLPs and streamed TLP writes/reads into VRAM.
    c.mem_write32(vram.addr + 0x100, 0xC0FF_EE11)
        .map_err(e("MemWr"))?;
    let v = c.mem_read32(vram.addr + 0x100).map_err(e("MemRd"))?;
    if v != 0xC0FF_EE11 {
        return Err(format!("MemRd after MemWr: {v:#x}"));
    }
    let p = pattern(8192, 2);
    c.mem_write(vram.addr + 0x1000, &p)
        .map_err(e("streamed write"))?;
    let back = c
        .mem_read(vram.addr + 0x1000, p.len())
        .map_err(e("streamed read"))?;
    same("streamed TLP write/read", &back, &p)?;

    let reg = |o: u64| regs_bar.addr + o;
    let copy = |c: &mut Asm24, src: u64, dst: u64, len: u32, go: u32| -> Result<(), String> {
        for (o, v) in [
            (regs::SRC_LO, src as u32),
            (regs::SRC_HI, (src >> 32) as u32),
            (regs::DST_LO, dst as u32),
            (regs::DST_HI, (dst >> 32) as u32),
            (regs::LEN, len),
            (regs::GO, go),
        ] {
            c.mem_write32(reg(o), v)
                .map_err(e("copy engine register"))?;
        }
        let fault = c
            .mem_read32(reg(regs::FAULT))
            .map_err(e("copy engine status"))?;
        if fault != 0 {
            return Err(format!("copy {src:#x} -> {dst:#x} ({len} bytes) faulted"));
        }
        Ok(())
    };

    // Copy in: host -> SRAM (F2 + bulk OUT) -> VRAM (endpoint DMA) -> read back by TLPs.
    let before = c.stats;
    let data = pattern(64 << 10, 3);
    c.sram_write(0, &data).map_err(e("SRAM write"))?;
    let head = c
        .read_xdata(0xF000, 64)
        .map_err(e("XDATA view of the SRAM"))?;
    same("SRAM seen through XDATA 0xF000", &head, &data[..64])?;
    let dst = vram.addr + 0x10_0000;
    copy(&mut c, 0x20_0000, dst, data.len() as u32, regs::GO_START)?;
    let back = c.mem_read(dst, data.len()).map_err(e("VRAM read"))?;
    same("copy in (SRAM -> VRAM)", &back, &data)?;

    // Copy out: VRAM -> SRAM slot 16 (endpoint DMA, then the trigger) -> armed F2 read.
    let out_len = 32 << 10;
    c.arm_sram_read(0x4_0000, out_len as u64)
        .map_err(e("arm SRAM read"))?;
    copy(
        &mut c,
        dst + 0x2000,
        0x20_0000 + 0x4_0000,
        out_len as u32,
        regs::GO_START | regs::GO_TRIGGER,
    )?;
    let back = c.bulk_read(out_len).map_err(e("bulk IN of the SRAM"))?;
    same(
        "copy out (VRAM -> SRAM -> host)",
        &back,
        &data[0x2000..0x2000 + out_len],
    )?;
    let done = c.mem_read32(reg(regs::DONE)).map_err(e("copy count"))?;
    if done != 2 {
        return Err(format!("copy engine ran {done} copies, expected 2"));
    }
    println!("usb-host: copies cost {:?}", c.stats - before);
    println!("usb-host: total {:?}", c.stats);
    Ok(())
}

/// gfx1100 `vadd(c, a, b, n)`: c[i] = a[i] + b[i] for i < n (tests/fixtures/kernels/emu/vadd.s).
const VADD: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../fixtures/kernels/emu/vadd.hsaco"
));

fn asm24_gpu() -> Result<(), String> {
    use runtime::platform::AllocKind;
    use runtime::usb::{device_options, iface::UsbIface, open_rusb};
    use runtime::{Device, DeviceOptions};

    let t0 = std::time::Instant::now();
    let dev = open_rusb(0, false).map_err(|e| format!("open_rusb: {e}"))?;
    let link = dev.link.clone();
    println!("usb-host: endpoint {:x?}", dev.endpoint);
    let fw = emu::pci::firmware::temp_firmware_dir().map_err(|e| format!("firmware dir: {e}"))?;
    let popts = runtime::pci::PciOptions {
        firmware_dir: fw.path().to_path_buf(),
        ..Default::default()
    };
    let iface = UsbIface::new(dev, &popts).map_err(|e| format!("AM bring-up over USB: {e}"))?;
    let opts = device_options(DeviceOptions {
        wait_timeout: Duration::from_secs(30),
        ..Default::default()
    });
    let mut d = Device::new(Box::new(iface), opts).map_err(|e| format!("device: {e}"))?;
    println!(
        "usb-host: GPU {:04x} up after {:.1} s, {:?}",
        d.props.device_id,
        t0.elapsed().as_secs_f64(),
        link.stats()
    );
    let e = |what: &'static str| move |err: runtime::Error| format!("{what}: {err}");

    // Copy: host -> VRAM (copyin through the SRAM window) -> VRAM (SDMA) -> host (copyout).
    let t1 = std::time::Instant::now();
    let before = link.stats();
    let data = pattern(300_001, 11);
    let a = d
        .alloc(data.len() as u64, AllocKind::VRAM)
        .map_err(e("alloc"))?;
    let b = d
        .alloc(data.len() as u64, AllocKind::VRAM)
        .map_err(e("alloc"))?;
    d.copyin(&a, &data).map_err(e("copyin"))?;
    d.copy(&b, &a, data.len() as u64).map_err(e("copy"))?;
    let mut back = vec![0u8; data.len()];
    d.copyout(&b, &mut back).map_err(e("copyout"))?;
    same("copy host -> VRAM -> VRAM -> host", &back, &data)?;
    println!(
        "usb-host: copy of {} bytes ok in {:.1} s, {:?}",
        data.len(),
        t1.elapsed().as_secs_f64(),
        link.stats() - before
    );

    // Dispatch: vadd on 1000 floats.
    let t2 = std::time::Instant::now();
    let n = 1000usize;
    let fa: Vec<f32> = pattern(4 * n, 12)
        .chunks(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f32 / 65536.0)
        .collect();
    let fb: Vec<f32> = pattern(4 * n, 13)
        .chunks(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f32 / 65536.0)
        .collect();
    let bytes = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let prg = d.load_program(VADD).map_err(e("load vadd"))?;
    let ba = d.alloc(4 * n as u64, AllocKind::VRAM).map_err(e("alloc"))?;
    let bb = d.alloc(4 * n as u64, AllocKind::VRAM).map_err(e("alloc"))?;
    let bc = d.alloc(4 * n as u64, AllocKind::VRAM).map_err(e("alloc"))?;
    d.copyin(&ba, &bytes(&fa)).map_err(e("copyin a"))?;
    d.copyin(&bb, &bytes(&fb)).map_err(e("copyin b"))?;
    d.launch(
        &prg,
        &[&bc, &ba, &bb],
        &[n as u32],
        [n.div_ceil(64) as u32, 1, 1],
        [64, 1, 1],
    )
    .map_err(e("launch vadd"))?;
    let mut out = vec![0u8; 4 * n];
    d.copyout(&bc, &mut out).map_err(e("copyout c"))?;
    let want: Vec<f32> = fa.iter().zip(&fb).map(|(x, y)| x + y).collect();
    same("vadd result", &out, &bytes(&want))?;
    println!(
        "usb-host: vadd dispatch of {n} floats ok in {:.1} s; total {:?}",
        t2.elapsed().as_secs_f64(),
        link.stats()
    );
    Ok(())
}

/// User + system CPU seconds of this process (/proc/self/stat, clock ticks of 1/100 s).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 (1-based), i.e. 11 and 12 after the state field.
    (tick(11) + tick(12)) / 100.0
}

struct Measured {
    mbps: f64,
    waits_per_mib: f64,
    transfers_per_mib: f64,
    max_in_flight: u64,
    cpu: f64,
}

fn measure(
    c: &mut usb::Asm24,
    what: &str,
    mib: usize,
    op: impl FnOnce(&mut usb::Asm24) -> Result<(), String>,
) -> Result<Measured, String> {
    // The most in flight of this copy alone (the stats keep a running maximum).
    c.stats.max_in_flight = 0;
    let s0 = c.stats;
    let (t0, cpu0) = (std::time::Instant::now(), cpu_seconds());
    op(c)?;
    let (dt, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
    let d = c.stats - s0;
    let m = Measured {
        mbps: (mib << 20) as f64 / 1e6 / dt,
        waits_per_mib: d.waits as f64 / mib as f64,
        transfers_per_mib: d.transfers as f64 / mib as f64,
        max_in_flight: d.max_in_flight,
        cpu,
    };
    println!(
        "usb-host: bench {what:<28} {:8.1} MB/s {:6.2} waits/MiB {:6.2} transfers/MiB \
         max {} in flight, {dt:.2} s wall, {cpu:.2} s CPU",
        m.mbps, m.waits_per_mib, m.transfers_per_mib, m.max_in_flight
    );
    Ok(m)
}

fn bench(arg: Option<&str>) -> Result<(), String> {
    use usb::rusb_transport::{OpenOptions, RusbTransport};
    use usb::{setup_bars, Asm24, BusLayout};

    let mib: usize = arg
        .map_or(Ok(32), str::parse)
        .map_err(|e| format!("MiB: {e}"))?;
    let backing = usb_qemu::scratch::VRAM_BACKING;
    if mib << 20 > backing {
        return Err(format!(
            "at most {} MiB (the endpoint's VRAM backing)",
            backing >> 20
        ));
    }
    let e = |what: &'static str| move |err: usb::UsbError| format!("{what}: {err}");
    let t = RusbTransport::open(0, OpenOptions::default()).map_err(e("open"))?;
    let mut c = Asm24::new(Box::new(t)).map_err(e("bridge bring-up"))?;
    let ep = setup_bars(&mut c, BusLayout::default()).map_err(e("setup_bars"))?;
    let vram = ep.bars.get(&0).ok_or("no BAR0")?.addr;
    let depth = c.stream_depth;
    // Two rounds, alternating the paths, so a machine getting busier or quieter during the
    // run does not favour whichever path goes second.
    let rounds = 2;
    println!("usb-host: bench {mib} MiB each way, streamed depth {depth}, {rounds} rounds");
    // [path][direction] -> measurements
    let mut all: [[Vec<Measured>; 2]; 2] = Default::default();
    for round in 0..rounds {
        for (p, (name, d)) in [("synchronous", 1), ("streamed", depth)]
            .into_iter()
            .enumerate()
        {
            c.stream_depth = d;
            let data = pattern(mib << 20, 20 + (round * 2 + p) as u32);
            let w = measure(&mut c, &format!("{name} host->device"), mib, |c| {
                c.mem_write(vram, &data).map_err(e("write"))?;
                c.flush().map_err(e("write"))
            })?;
            let mut back = Vec::new();
            let r = measure(&mut c, &format!("{name} device->host"), mib, |c| {
                back = c.mem_read(vram, data.len()).map_err(e("read"))?;
                Ok(())
            })?;
            same(&format!("{name} copy"), &back, &data)?;
            all[p][0].push(w);
            all[p][1].push(r);
        }
    }
    let mean = |v: &[Measured], f: fn(&Measured) -> f64| -> f64 {
        v.iter().map(f).sum::<f64>() / v.len() as f64
    };
    for (k, dir) in ["host->device", "device->host"].into_iter().enumerate() {
        let (s, a) = (&all[0][k], &all[1][k]);
        let (smb, amb) = (mean(s, |m| m.mbps), mean(a, |m| m.mbps));
        let (sw, aw) = (mean(s, |m| m.waits_per_mib), mean(a, |m| m.waits_per_mib));
        let (sc, ac) = (mean(s, |m| m.cpu), mean(a, |m| m.cpu));
        let smax = s.iter().map(|m| m.max_in_flight).max().unwrap_or(0);
        let amax = a.iter().map(|m| m.max_in_flight).max().unwrap_or(0);
        println!(
            "usb-host: bench ratio {dir}: synchronous {smb:.1} MB/s, streamed {amb:.1} MB/s \
             ({:.2}x); waits/MiB {sw:.2} -> {aw:.2}; in flight {smax} -> {amax}; \
             CPU s per copy {sc:.2} -> {ac:.2}",
            amb / smb
        );
        // Counts that do not depend on timing: the streamed path overlapped transfers, the
        // synchronous one never did. (Waits per MiB depend on when the device finishes what:
        // printed, not checked.)
        if amax < 2 || smax != 1 {
            return Err(format!(
                "{dir}: in flight at once: streamed {amax}, synchronous {smax} (want >= 2 and 1)"
            ));
        }
    }
    Ok(())
}
