//! The ASM2464 custom firmware served over FunctionFS: EP0 vendor requests and the bulk
//! endpoints go to the usb crate's device model ([`usb::device::BridgeCore`]); the usb crate's
//! device-side parser ([`usb::proto::Request::parse`]) tells which bulk transfer a request arms.
//!
//! Ordering: a host→device bulk transfer (F2 SRAM write, F0 streamed write) is received on this
//! thread before the next EP0 request is looked at, because the request after it may depend on
//! the data (a doorbell for a copy out of the SRAM). Device→host data (F0 streamed read, F2
//! SRAM read once the endpoint wrote the trigger) is handed to a writer thread, so EP0 keeps
//! being served while the host has not yet asked for it.

use std::sync::mpsc;

use usb::device::{BridgeCore, DeviceError, PcieEndpoint};
use usb::proto::{custom_ep, Request, TlpMode, SECTOR};

use crate::ffs::{Event, FfsError, Function};

/// Endpoint file indices (descriptor order: bulk OUT 0x02, bulk IN 0x81).
pub const EP_OUT: usize = 0;
pub const EP_IN: usize = 1;

#[derive(Debug, thiserror::Error)]
pub enum GadgetError {
    #[error(transparent)]
    Ffs(#[from] FfsError),
    #[error("the bulk IN writer thread is gone")]
    WriterGone,
}

/// What the gadget did, printed when the host goes away.
#[derive(Debug, Default, Clone, Copy)]
pub struct Served {
    pub control: u64,
    pub stalled: u64,
    pub bulk_out_bytes: u64,
    pub bulk_in_bytes: u64,
    /// OUT requests the model refused after their data stage had been accepted (USB cannot
    /// stall those any more; the host will see wrong data instead).
    pub refused_after_ack: u64,
}

/// Serves `core` on `func` until the gadget is unbound.
pub fn serve<E: PcieEndpoint>(
    mut func: Function,
    mut core: BridgeCore<E>,
) -> Result<Served, GadgetError> {
    let (in_path, mut in_file) = func.endpoints.remove(EP_IN);
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        use std::io::Write;
        for data in rx {
            for piece in data.chunks(crate::ffs::MAX_IO) {
                if let Err(e) = in_file.write_all(piece) {
                    eprintln!("usb-gadget: {}: {e}", in_path.display());
                    break;
                }
            }
        }
    });
    let mut served = Served::default();
    // A device→host transfer the host armed that the model has not produced yet.
    let mut in_armed = false;
    loop {
        let s = match func.next_event()? {
            Event::Setup(s) => s,
            Event::Unbind => return Ok(served),
            other => {
                eprintln!("usb-gadget: {other:?}");
                continue;
            }
        };
        served.control += 1;
        let setup = s;
        if s.is_in() {
            match core.control(&setup, &[]) {
                Ok(mut d) => {
                    d.truncate(usize::from(s.length));
                    func.reply(&d)?;
                }
                Err(e) => {
                    eprintln!("usb-gadget: stalling {setup:x?}: {e}");
                    served.stalled += 1;
                    func.stall(&s)?;
                }
            }
        } else {
            let data = if s.length == 0 {
                // Nothing to receive: the model may still refuse, and then the request stalls.
                if let Err(e) = core.control(&setup, &[]) {
                    eprintln!("usb-gadget: stalling {setup:x?}: {e}");
                    served.stalled += 1;
                    func.stall(&s)?;
                    continue;
                }
                func.accept(0)?;
                Vec::new()
            } else {
                let data = func.accept(usize::from(s.length))?;
                if let Err(e) = core.control(&setup, &data) {
                    eprintln!("usb-gadget: {setup:x?} refused after its data stage: {e}");
                    served.refused_after_ack += 1;
                    continue;
                }
                data
            };
            match Request::parse(&setup, &data) {
                Ok(Request::SramDma {
                    to_host: false,
                    sectors,
                    ..
                }) => {
                    let len = usize::from(sectors) * SECTOR as usize;
                    receive(&mut func, &mut core, len, &mut served)?;
                }
                Ok(Request::Tlp {
                    mode: TlpMode::StreamWrite,
                    value,
                    ..
                }) => receive(&mut func, &mut core, value as usize * 4, &mut served)?,
                Ok(Request::SramDma { to_host: true, .. })
                | Ok(Request::Tlp {
                    mode: TlpMode::StreamRead,
                    ..
                }) => in_armed = true,
                _ => {}
            }
        }
        if in_armed {
            match core.bulk_in(custom_ep::BULK_IN, 0, usize::MAX) {
                Ok(d) => {
                    in_armed = false;
                    served.bulk_in_bytes += d.len() as u64;
                    tx.send(d).map_err(|_| GadgetError::WriterGone)?;
                }
                Err(DeviceError::NotReady(_)) => {}
                Err(e) => {
                    in_armed = false;
                    eprintln!("usb-gadget: bulk IN: {e}");
                }
            }
        }
    }
}

/// Receives the `len`-byte bulk OUT transfer a request armed and hands it to the model.
fn receive<E: PcieEndpoint>(
    func: &mut Function,
    core: &mut BridgeCore<E>,
    len: usize,
    served: &mut Served,
) -> Result<(), GadgetError> {
    let data = func.bulk_read(EP_OUT, len)?;
    served.bulk_out_bytes += data.len() as u64;
    if let Err(e) = core.bulk_out(custom_ep::BULK_OUT, 0, &data) {
        eprintln!("usb-gadget: bulk OUT of {len} bytes refused: {e}");
    }
    Ok(())
}
