//! The seam under the protocol: [`UsbTransport`] moves control and bulk transfers to a device.
//! [`crate::rusb_transport::RusbTransport`] is the real one; a fake bridge (the runtime's emulated
//! ASM2464) implements it in memory, and [`Faulty`] wraps either to inject stalls, short reads
//! and unplugs.
//!
//! Batching: [`UsbTransport::submit`] takes several transfers that the host does not need to
//! look at in between (a run of XDATA writes, a TLP request and its completion read, an F2 arm
//! and its bulk data). A transport that pipelines (libusb async, a gadget) completes them in one
//! wait — one *round trip*. The controller counts round trips per `submit`.

use std::time::Duration;

use crate::error::{Result, UsbError};
use crate::proto::ControlSetup;

/// One transfer of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transfer {
    ControlOut {
        setup: ControlSetup,
        data: Vec<u8>,
    },
    /// Reads up to `setup.length` bytes.
    ControlIn {
        setup: ControlSetup,
    },
    /// `stream` 0 = no bulk stream (UAS uses stream = tag).
    BulkOut {
        ep: u8,
        stream: u16,
        data: Vec<u8>,
    },
    BulkIn {
        ep: u8,
        stream: u16,
        len: usize,
    },
}

impl Transfer {
    /// How errors name this transfer ("control OUT 0xF0", "bulk IN 0x81 (4096 bytes)").
    pub fn describe(&self) -> String {
        match self {
            Transfer::ControlOut { setup, .. } => format!("control OUT {:#04x}", setup.request),
            Transfer::ControlIn { setup } => {
                format!("control IN {:#04x} ({} bytes)", setup.request, setup.length)
            }
            Transfer::BulkOut { ep, data, .. } => {
                format!("bulk OUT {ep:#04x} ({} bytes)", data.len())
            }
            Transfer::BulkIn { ep, len, .. } => format!("bulk IN {ep:#04x} ({len} bytes)"),
        }
    }
    /// An IN transfer (reads only; sending it again has no effect on the device).
    pub fn is_in(&self) -> bool {
        matches!(self, Transfer::ControlIn { .. } | Transfer::BulkIn { .. })
    }
    pub fn out_len(&self) -> usize {
        match self {
            Transfer::ControlOut { data, .. } | Transfer::BulkOut { data, .. } => data.len(),
            _ => 0,
        }
    }
}

/// What the device says about itself (descriptor strings, ids, where it sits).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BridgeInfo {
    pub vid: u16,
    pub pid: u16,
    pub product: String,
    /// "bus 1 port 3" style location (or "emulated").
    pub location: String,
    /// Interface 0 has a UAS alternate setting (stock firmware).
    pub has_uas_alt: bool,
}

/// Control and bulk transfers with timeouts. Implementations return, for IN transfers, the bytes
/// received (possibly fewer than asked: the caller decides whether a short read is an error).
pub trait UsbTransport: Send {
    fn info(&self) -> BridgeInfo;
    fn control_out(
        &mut self,
        setup: &ControlSetup,
        data: &[u8],
        timeout: Duration,
    ) -> Result<usize>;
    fn control_in(&mut self, setup: &ControlSetup, timeout: Duration) -> Result<Vec<u8>>;
    fn bulk_out(&mut self, ep: u8, stream: u16, data: &[u8], timeout: Duration) -> Result<usize>;
    fn bulk_in(&mut self, ep: u8, stream: u16, len: usize, timeout: Duration) -> Result<Vec<u8>>;

    /// Runs `batch` in order as one submission and returns one entry per transfer (IN data, or
    /// empty for OUT). The default issues them one after another; a short OUT is an error.
    fn submit(&mut self, batch: &[Transfer], timeout: Duration) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::with_capacity(batch.len());
        for t in batch {
            out.push(run_one(self, t, timeout)?);
        }
        Ok(out)
    }

    /// Runs `batch` in order with up to `depth` transfers in flight (see [`crate::stream`]):
    /// `free[i]` says transfer i may start before transfer i-1 finished. A failure names the
    /// transfer ([`UsbError::Stream`]) and leaves none pending. The default is the synchronous
    /// fallback (one transfer after another), for transports that cannot overlap (the emulated
    /// bridge, replays).
    fn submit_streamed(
        &mut self,
        batch: &[Transfer],
        free: &[bool],
        depth: usize,
        timeout: Duration,
    ) -> Result<(Vec<Vec<u8>>, crate::stream::StreamReport)> {
        let _ = (free, depth);
        crate::stream::run_sequential(self, batch, timeout)
    }
}

/// Issues one transfer through the four primitive calls.
pub fn run_one<T: UsbTransport + ?Sized>(
    t: &mut T,
    tr: &Transfer,
    timeout: Duration,
) -> Result<Vec<u8>> {
    match tr {
        Transfer::ControlOut { setup, data } => {
            let n = t.control_out(setup, data, timeout)?;
            short_out(tr, n)?;
            Ok(vec![])
        }
        Transfer::ControlIn { setup } => t.control_in(setup, timeout),
        Transfer::BulkOut { ep, stream, data } => {
            let n = t.bulk_out(*ep, *stream, data, timeout)?;
            short_out(tr, n)?;
            Ok(vec![])
        }
        Transfer::BulkIn { ep, stream, len } => t.bulk_in(*ep, *stream, *len, timeout),
    }
}

fn short_out(tr: &Transfer, n: usize) -> Result<()> {
    if n < tr.out_len() {
        return Err(UsbError::Short {
            what: tr.describe(),
            expected: tr.out_len(),
            got: n,
        });
    }
    Ok(())
}

/// A failure [`Faulty`] injects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The transfer never completes: it returns a timeout after the caller's timeout elapses
    /// (the wrapper does not sleep: it reports the time the caller allowed).
    Stall,
    /// An IN transfer returns this many bytes fewer than asked (once).
    ShortIn(usize),
    /// The device disappears: this and every later transfer fail with "no such device".
    Unplug,
}

/// Wraps a transport and injects one [`Fault`] at the `at`-th transfer (0-based, counted over
/// all transfers), optionally only on transfers whose description contains `filter`.
pub struct Faulty<T> {
    pub inner: T,
    /// Set from anywhere to make the fault hit the next (matching) transfer, whatever `at` is.
    pub trigger: std::sync::Arc<std::sync::atomic::AtomicBool>,
    fault: Fault,
    at: u64,
    filter: Option<String>,
    seen: u64,
    unplugged: bool,
    fired: bool,
}

impl<T: UsbTransport> Faulty<T> {
    pub fn new(inner: T, fault: Fault, at: u64) -> Self {
        Faulty {
            inner,
            trigger: Default::default(),
            fault,
            at,
            filter: None,
            seen: 0,
            unplugged: false,
            fired: false,
        }
    }
    /// Counts only transfers whose [`Transfer::describe`] contains `s`.
    pub fn only(mut self, s: &str) -> Self {
        self.filter = Some(s.to_string());
        self
    }
    /// Whether the fault has happened.
    pub fn fired(&self) -> bool {
        self.fired
    }

    fn check(&mut self, what: String, timeout: Duration) -> Result<Option<Fault>> {
        if self.unplugged {
            return Err(UsbError::Disconnected { what });
        }
        if let Some(f) = &self.filter {
            if !what.contains(f.as_str()) {
                return Ok(None);
            }
        }
        let n = self.seen;
        self.seen += 1;
        let now = n == self.at || self.trigger.load(std::sync::atomic::Ordering::SeqCst);
        if !now || self.fired {
            return Ok(None);
        }
        self.fired = true;
        match self.fault {
            Fault::Stall => Err(UsbError::Timeout {
                what,
                ms: timeout.as_millis() as u64,
            }),
            Fault::Unplug => {
                self.unplugged = true;
                Err(UsbError::Disconnected { what })
            }
            f @ Fault::ShortIn(_) => Ok(Some(f)),
        }
    }

    fn trim(f: Option<Fault>, mut v: Vec<u8>) -> Vec<u8> {
        if let Some(Fault::ShortIn(k)) = f {
            let n = v.len().saturating_sub(k);
            v.truncate(n);
        }
        v
    }
}

impl<T: UsbTransport> UsbTransport for Faulty<T> {
    fn info(&self) -> BridgeInfo {
        self.inner.info()
    }
    fn control_out(
        &mut self,
        setup: &ControlSetup,
        data: &[u8],
        timeout: Duration,
    ) -> Result<usize> {
        self.check(format!("control OUT {:#04x}", setup.request), timeout)?;
        self.inner.control_out(setup, data, timeout)
    }
    fn control_in(&mut self, setup: &ControlSetup, timeout: Duration) -> Result<Vec<u8>> {
        let f = self.check(Transfer::ControlIn { setup: *setup }.describe(), timeout)?;
        Ok(Self::trim(f, self.inner.control_in(setup, timeout)?))
    }
    fn bulk_out(&mut self, ep: u8, stream: u16, data: &[u8], timeout: Duration) -> Result<usize> {
        self.check(
            format!("bulk OUT {ep:#04x} ({} bytes)", data.len()),
            timeout,
        )?;
        self.inner.bulk_out(ep, stream, data, timeout)
    }
    fn bulk_in(&mut self, ep: u8, stream: u16, len: usize, timeout: Duration) -> Result<Vec<u8>> {
        let f = self.check(Transfer::BulkIn { ep, stream, len }.describe(), timeout)?;
        Ok(Self::trim(f, self.inner.bulk_in(ep, stream, len, timeout)?))
    }
}

/// A device that answers from a byte script: each IN transfer returns the next bytes (how many
/// is decided by a script byte, so replies can be short, long, or garbage), each OUT transfer
/// is accepted whole or short by a script byte, and the device is gone when the script ends.
/// The fuzz target and the random-reply tests drive the host side through it.
pub struct Scripted {
    script: Vec<u8>,
    pos: usize,
    info: BridgeInfo,
}

impl Scripted {
    pub fn new(script: Vec<u8>, info: BridgeInfo) -> Self {
        Scripted {
            script,
            pos: 0,
            info,
        }
    }

    fn byte(&mut self, what: impl Fn() -> String) -> Result<u8> {
        let b = *self
            .script
            .get(self.pos)
            .ok_or_else(|| UsbError::Disconnected { what: what() })?;
        self.pos += 1;
        Ok(b)
    }

    fn reply(&mut self, want: usize, what: impl Fn() -> String) -> Result<Vec<u8>> {
        // Mostly the asked length; sometimes shorter or longer.
        let n = match self.byte(&what)? {
            0..=191 => want,
            k => (want * usize::from(k - 191)) / 32,
        };
        let end = (self.pos + n).min(self.script.len());
        let v = self.script[self.pos..end].to_vec();
        self.pos = end;
        Ok(v)
    }

    fn accept(&mut self, len: usize, what: impl Fn() -> String) -> Result<usize> {
        Ok(match self.byte(what)? {
            0..=7 => len / 2,
            _ => len,
        })
    }
}

impl UsbTransport for Scripted {
    fn info(&self) -> BridgeInfo {
        self.info.clone()
    }
    fn control_out(&mut self, setup: &ControlSetup, data: &[u8], _: Duration) -> Result<usize> {
        self.accept(data.len(), || format!("control OUT {:#04x}", setup.request))
    }
    fn control_in(&mut self, setup: &ControlSetup, _: Duration) -> Result<Vec<u8>> {
        self.reply(usize::from(setup.length), || {
            format!("control IN {:#04x}", setup.request)
        })
    }
    fn bulk_out(&mut self, ep: u8, _: u16, data: &[u8], _: Duration) -> Result<usize> {
        self.accept(data.len(), || format!("bulk OUT {ep:#04x}"))
    }
    fn bulk_in(&mut self, ep: u8, _: u16, len: usize, _: Duration) -> Result<Vec<u8>> {
        self.reply(len, || format!("bulk IN {ep:#04x}"))
    }
}
