//! Device side of the qemu USB test, run inside the guest by `run-guest.sh`:
//! `usb-gadget FFS_MOUNT READY_FILE MODE`.
//!
//! Writes the ASM2464 custom-firmware interface (interface 0 alt 0, vendor class, bulk OUT 0x02 and
//! bulk IN 0x81) to the FunctionFS mount, creates READY_FILE so the script binds the gadget to
//! `dummy_udc.0`, then serves requests until the host goes away. MODE:
//! * `echo`: harness self-test. Vendor 0xE5/0xE4 write/read bytes of a 64 KiB array (the XDATA
//!   request shapes), and every bulk OUT transfer is sent back on bulk IN.
//! * `asm24-scratch`: the custom firmware's protocol, answered by the usb crate's bridge model
//!   with the small [`usb_qemu::scratch::ScratchEndpoint`] behind it.
//! * `asm24-gpu`: the same bridge model with the runtime's emulated PCI GPU (gfx1100) behind it
//!   (`emu::asm24::fake_bridge`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use std::sync::{Arc, Mutex};

use usb::device::{BridgeCore, Windows};
use usb::Firmware;
use usb_qemu::bridge_gadget;
use usb_qemu::ffs::{BulkEndpoint, Event, FfsError, Function, InterfaceSpec, Setup};
use usb_qemu::scratch::ScratchEndpoint;

fn spec() -> InterfaceSpec {
    InterfaceSpec {
        class: 0xFF,
        subclass: 0,
        protocol: 0,
        name: "ASM2464 custom firmware (FunctionFS)".into(),
        endpoints: vec![
            BulkEndpoint { address: 0x02 },
            BulkEndpoint { address: 0x81 },
        ],
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: usb-gadget FFS_MOUNT READY_FILE echo|asm24-scratch|asm24-gpu");
        return ExitCode::from(2);
    }
    let (mount, ready) = (PathBuf::from(&args[1]), PathBuf::from(&args[2]));
    let result = match args[3].as_str() {
        "echo" => serve_echo(&mount, &ready),
        "asm24-scratch" => serve_scratch(&mount, &ready),
        "asm24-gpu" => serve_gpu(&mount, &ready),
        other => {
            eprintln!("usb-gadget: unknown mode {other}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("usb-gadget: {e}");
            ExitCode::FAILURE
        }
    }
}

fn open(mount: &Path, ready: &Path) -> Result<Function, String> {
    let func = Function::open(mount, &spec()).map_err(|e| e.to_string())?;
    std::fs::write(ready, b"").map_err(|e| format!("{}: {e}", ready.display()))?;
    eprintln!("usb-gadget: descriptors written, ready");
    Ok(func)
}

fn serve_scratch(mount: &Path, ready: &Path) -> Result<(), String> {
    let windows = Arc::new(Mutex::new(Windows::default()));
    let endpoint = ScratchEndpoint::new(windows.clone());
    let core = BridgeCore::with_memory(Firmware::Custom, endpoint, Box::new(windows));
    let func = open(mount, ready)?;
    let served = bridge_gadget::serve(func, core).map_err(|e| e.to_string())?;
    eprintln!("usb-gadget: unbound; served {served:?}");
    Ok(())
}

fn serve_gpu(mount: &Path, ready: &Path) -> Result<(), String> {
    use emu::pci::{EmuPciConfig, EmuPciGpu};
    let gpu = EmuPciGpu::new(EmuPciConfig::new(emu::EmuArch::Gfx1100))
        .map_err(|e| format!("emulated GPU: {e}"))?;
    let core = emu::asm24::fake_bridge(gpu.clone(), Firmware::Custom);
    let func = open(mount, ready)?;
    let served = bridge_gadget::serve(func, core).map_err(|e| e.to_string())?;
    eprintln!(
        "usb-gadget: unbound; served {served:?}; GPU ran {} dispatches, copied {} SDMA bytes",
        gpu.stats().dispatches,
        gpu.stats().sdma_bytes_copied
    );
    Ok(())
}

fn serve_echo(mount: &Path, ready: &Path) -> Result<(), String> {
    let mut func = open(mount, ready)?;
    let mut eps = std::mem::take(&mut func.endpoints);
    // Bulk echo on its own thread: EP0 must keep answering while a bulk transfer is pending.
    let (mut in_path, mut in_file) = eps.remove(bridge_gadget::EP_IN);
    let (out_path, mut out_file) = eps.remove(bridge_gadget::EP_OUT);
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        let mut buf = vec![0u8; usb_qemu::ffs::MAX_IO];
        loop {
            match out_file.read(&mut buf) {
                Ok(n) => {
                    if let Err(e) = in_file.write_all(&buf[..n]) {
                        eprintln!("usb-gadget: {}: {e}", in_path.display());
                        in_path.clear();
                    }
                }
                Err(e) => {
                    // ESHUTDOWN while the host reconfigures; keep serving.
                    eprintln!("usb-gadget: {}: {e}", out_path.display());
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
            }
        }
    });
    let mut xdata = vec![0u8; 0x10000];
    loop {
        match func.next_event().map_err(|e| e.to_string())? {
            Event::Setup(s) => echo_setup(&mut func, &mut xdata, s).map_err(|e| e.to_string())?,
            Event::Unbind => return Ok(()),
            other => eprintln!("usb-gadget: {other:?}"),
        }
    }
}

fn echo_setup(func: &mut Function, xdata: &mut [u8], s: Setup) -> Result<(), FfsError> {
    let addr = usize::from(s.value);
    match (s.request_type, s.request) {
        (0xC0, 0xE4) => {
            let end = (addr + usize::from(s.length)).min(xdata.len());
            func.reply(&xdata[addr..end])
        }
        (0x40, 0xE5) => {
            func.accept(0)?;
            xdata[addr] = s.index as u8;
            Ok(())
        }
        _ => {
            eprintln!("usb-gadget: stalling {s:?}");
            func.stall(&s)
        }
    }
}
