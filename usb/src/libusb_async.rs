//! The libusb engine of [`crate::stream`]: asynchronous transfers (`libusb_submit_transfer`)
//! through `rusb::ffi` (libusb1-sys, the library rusb itself links), completed by the calling
//! thread's `libusb_handle_events_timeout_completed` (rusb's `Context::handle_events`).
//!
//! Why raw libusb and not a crate: rusb 0.9 has no asynchronous API, and the async USB crates
//! (nusb, rusb-async) are not in this build's offline registry; the surface needed is small
//! (alloc, fill, submit, cancel, free) and confined to this module.
//!
//! Memory rule: a transfer and its buffer live in a heap [`Slot`] that libusb's callback
//! reaches through `user_data`. A slot is freed only after its callback ran (`done`); if a
//! transfer cannot be reaped (the engine is dropped with one still owned by the kernel, which
//! the per-transfer timeouts make unlikely), its slot is leaked on purpose rather than freed
//! under the kernel's feet.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rusb::ffi;
use rusb::{Context, DeviceHandle, UsbContext};

use crate::error::{Result, UsbError};
use crate::stream::{Engine, Finished};
use crate::transport::Transfer;

const SETUP: usize = ffi::constants::LIBUSB_CONTROL_SETUP_SIZE;

/// One started transfer.
struct Slot {
    id: usize,
    xfer: *mut ffi::libusb_transfer,
    /// Control: 8-byte setup then data; bulk: the data.
    buf: Vec<u8>,
    /// Set by the completion callback.
    done: AtomicBool,
    what: String,
    /// Bytes the transfer must move for an OUT (short is an error); `None` for IN.
    out_len: Option<usize>,
    control: bool,
    timeout: Duration,
}

extern "system" fn on_done(xfer: *mut ffi::libusb_transfer) {
    // SAFETY: libusb calls this with the transfer we filled; its user_data is the address of
    // the boxed Slot that owns it, which stays allocated until `done` is seen (or is leaked).
    let slot = unsafe { (*xfer).user_data as *const Slot };
    // SAFETY: as above; only the atomic is touched, the engine reads it on this same thread.
    unsafe { (*slot).done.store(true, Ordering::Release) };
}

/// Transfers in flight on one claimed device handle.
pub struct LibusbEngine<'h> {
    handle: &'h DeviceHandle<Context>,
    /// Boxed so a slot's address (libusb's user_data) stays put while the Vec reallocates.
    #[allow(clippy::vec_box)]
    live: Vec<Box<Slot>>,
}

impl<'h> LibusbEngine<'h> {
    pub fn new(handle: &'h DeviceHandle<Context>) -> Self {
        LibusbEngine {
            handle,
            live: Vec::new(),
        }
    }

    fn reap(&mut self, pos: usize, blocked: bool) -> Finished {
        let mut slot = self.live.remove(pos);
        // SAFETY: the callback ran (`done`), so libusb no longer uses the transfer; we read
        // its status fields once and free it. The buffer is ours again.
        let (status, actual) = unsafe { ((*slot.xfer).status, (*slot.xfer).actual_length) };
        // SAFETY: allocated by libusb_alloc_transfer in `start`, finished, freed once.
        unsafe { ffi::libusb_free_transfer(slot.xfer) };
        let actual = usize::try_from(actual).unwrap_or(0);
        let result = status_result(&mut slot, status, actual);
        Finished {
            id: slot.id,
            result,
            blocked,
        }
    }
}

fn status_result(slot: &mut Slot, status: i32, actual: usize) -> Result<Vec<u8>> {
    use ffi::constants::*;
    let what = slot.what.clone();
    match status {
        LIBUSB_TRANSFER_COMPLETED => {}
        LIBUSB_TRANSFER_TIMED_OUT => {
            return Err(UsbError::Timeout {
                what,
                ms: slot.timeout.as_millis() as u64,
            })
        }
        LIBUSB_TRANSFER_STALL => return Err(UsbError::Stall { what }),
        LIBUSB_TRANSFER_NO_DEVICE => return Err(UsbError::Disconnected { what }),
        LIBUSB_TRANSFER_CANCELLED => {
            return Err(UsbError::Io {
                what,
                msg: "cancelled (another transfer of the stream failed)".into(),
            })
        }
        s => {
            return Err(UsbError::Io {
                what,
                msg: format!("transfer status {s} (error/overflow)"),
            })
        }
    }
    match slot.out_len {
        Some(want) if actual < want => Err(UsbError::Short {
            what,
            expected: want,
            got: actual,
        }),
        Some(_) => Ok(Vec::new()),
        None => {
            // The buffer is the data (after the setup bytes of a control): hand it over
            // instead of copying a MiB.
            let mut data = std::mem::take(&mut slot.buf);
            if slot.control {
                data.drain(..SETUP.min(data.len()));
            }
            data.truncate(actual);
            Ok(data)
        }
    }
}

impl Engine for LibusbEngine<'_> {
    fn start(&mut self, id: usize, t: &Transfer, timeout: Duration) -> Result<()> {
        let what = t.describe();
        let (ep, ty, buf, out_len, control) = match t {
            Transfer::ControlOut { setup, data } => {
                let mut b = setup_bytes(setup.request_type, setup, data.len())?;
                b.extend_from_slice(data);
                (
                    0u8,
                    ffi::constants::LIBUSB_TRANSFER_TYPE_CONTROL,
                    b,
                    Some(data.len()),
                    true,
                )
            }
            Transfer::ControlIn { setup } => {
                let mut b = setup_bytes(setup.request_type, setup, usize::from(setup.length))?;
                b.resize(SETUP + usize::from(setup.length), 0);
                (
                    0u8,
                    ffi::constants::LIBUSB_TRANSFER_TYPE_CONTROL,
                    b,
                    None,
                    true,
                )
            }
            Transfer::BulkOut { ep, stream, data } => {
                no_stream(*stream, &what)?;
                (
                    *ep,
                    ffi::constants::LIBUSB_TRANSFER_TYPE_BULK,
                    data.clone(),
                    Some(data.len()),
                    false,
                )
            }
            Transfer::BulkIn { ep, stream, len } => {
                no_stream(*stream, &what)?;
                (
                    *ep,
                    ffi::constants::LIBUSB_TRANSFER_TYPE_BULK,
                    vec![0u8; *len],
                    None,
                    false,
                )
            }
        };
        let length = i32::try_from(buf.len()).map_err(|_| {
            UsbError::Invalid(format!(
                "{what}: {} bytes is too long for one libusb transfer",
                buf.len()
            ))
        })?;
        // SAFETY: plain allocation; null is checked below.
        let xfer = unsafe { ffi::libusb_alloc_transfer(0) };
        if xfer.is_null() {
            return Err(UsbError::Io {
                what,
                msg: "libusb_alloc_transfer failed (out of memory)".into(),
            });
        }
        let mut slot = Box::new(Slot {
            id,
            xfer,
            buf,
            done: AtomicBool::new(false),
            what,
            out_len,
            control,
            timeout,
        });
        let slot_ptr: *const Slot = &*slot;
        // SAFETY: `xfer` is a fresh transfer we own; the buffer and the slot are heap
        // allocations that do not move (the Box is kept in `live`, or leaked) until the
        // callback has run, so the pointers libusb keeps stay valid.
        unsafe {
            (*xfer).dev_handle = self.handle.as_raw();
            (*xfer).flags = 0;
            (*xfer).endpoint = ep;
            (*xfer).transfer_type = ty;
            (*xfer).timeout = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
            (*xfer).length = length;
            (*xfer).callback = on_done;
            (*xfer).user_data = slot_ptr as *mut std::ffi::c_void;
            (*xfer).buffer = slot.buf.as_mut_ptr();
        }
        // SAFETY: the transfer is completely filled in (above) and its memory outlives it.
        let rc = unsafe { ffi::libusb_submit_transfer(xfer) };
        if rc != 0 {
            // SAFETY: not submitted, so libusb holds no reference; freed once.
            unsafe { ffi::libusb_free_transfer(xfer) };
            let what = slot.what.clone();
            return Err(match rc {
                ffi::constants::LIBUSB_ERROR_NO_DEVICE => UsbError::Disconnected { what },
                rc => UsbError::Io {
                    what,
                    msg: format!("libusb_submit_transfer failed ({rc})"),
                },
            });
        }
        self.live.push(slot);
        Ok(())
    }

    fn wait(&mut self) -> Result<Option<Finished>> {
        let mut blocked = false;
        // Every transfer carries its own timeout; a wait longer than the longest of them plus
        // slack means the event loop is broken, not the device slow.
        let limit = self
            .live
            .iter()
            .map(|s| s.timeout)
            .max()
            .unwrap_or_default()
            + Duration::from_secs(5);
        let t0 = Instant::now();
        loop {
            if let Some(pos) = self
                .live
                .iter()
                .position(|s| s.done.load(Ordering::Acquire))
            {
                return Ok(Some(self.reap(pos, blocked)));
            }
            if self.live.is_empty() {
                return Ok(None);
            }
            if t0.elapsed() > limit {
                return Err(UsbError::Io {
                    what: self.live[0].what.clone(),
                    msg: format!(
                        "no USB transfer finished within {} ms (libusb event handling stuck)",
                        limit.as_millis()
                    ),
                });
            }
            blocked = true;
            self.handle
                .context()
                .handle_events(Some(Duration::from_millis(100)))
                .map_err(|e| UsbError::Io {
                    what: self.live[0].what.clone(),
                    msg: format!("libusb event handling: {e}"),
                })?;
        }
    }

    fn cancel_all(&mut self) {
        for s in &self.live {
            if !s.done.load(Ordering::Acquire) {
                // SAFETY: the transfer is submitted and not yet reaped; cancelling an already
                // finishing transfer only returns an error code, which we ignore.
                let _ = unsafe { ffi::libusb_cancel_transfer(s.xfer) };
            }
        }
    }

    fn in_flight(&self) -> usize {
        self.live.len()
    }
}

impl Drop for LibusbEngine<'_> {
    fn drop(&mut self) {
        if self.live.is_empty() {
            return;
        }
        // Only after an engine failure: try to finish what is left, then leak the rest.
        self.cancel_all();
        let t0 = Instant::now();
        while !self.live.is_empty() && t0.elapsed() < Duration::from_secs(2) {
            while let Some(pos) = self
                .live
                .iter()
                .position(|s| s.done.load(Ordering::Acquire))
            {
                let _ = self.reap(pos, false);
            }
            let _ = self
                .handle
                .context()
                .handle_events(Some(Duration::from_millis(50)));
        }
        for s in self.live.drain(..) {
            // The kernel may still own this transfer: keep its memory forever.
            Box::leak(s);
        }
    }
}

fn setup_bytes(
    request_type: u8,
    setup: &crate::proto::ControlSetup,
    len: usize,
) -> Result<Vec<u8>> {
    let len = u16::try_from(len).map_err(|_| {
        UsbError::Invalid(format!(
            "control {:#04x}: {len} bytes is too long for a control transfer",
            setup.request
        ))
    })?;
    let mut b = Vec::with_capacity(SETUP + usize::from(len));
    b.push(request_type);
    b.push(setup.request);
    b.extend_from_slice(&setup.value.to_le_bytes());
    b.extend_from_slice(&setup.index.to_le_bytes());
    b.extend_from_slice(&len.to_le_bytes());
    Ok(b)
}

fn no_stream(stream: u16, what: &str) -> Result<()> {
    if stream != 0 {
        return Err(UsbError::Unsupported(format!(
            "{what}: USB3 bulk streams (UAS, stock firmware) are not available through rusb"
        )));
    }
    Ok(())
}
