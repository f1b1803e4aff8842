//! Streamed submission: several transfers of one batch in flight at once, so a large copy keeps
//! the bridge busy (the host sends chunk k+1's request while chunk k's data is on the wire).
//!
//! The order rules live here, in safe code, over an [`Engine`] that can start a transfer and
//! wait for any started one to finish; [`crate::libusb_async`] is the libusb engine (the only
//! `unsafe` of this crate), tests use a recording engine. Which transfer may start before its
//! predecessor finished is the caller's call (`free[i]`, see [`free_marks`]): the caller knows
//! which requests are independent (tinygrad overlaps an F2 arm for the next SRAM window with the
//! bulk OUT of the previous one, `ops_amd.py` `_copyin`).
//!
//! Failure: the first failing transfer cancels every other one in flight, waits until all of
//! them have finished (each has its own libusb timeout, so the wait is bounded) and returns
//! [`UsbError::Stream`] naming it; nothing stays pending.

use std::time::Duration;

use crate::error::{Result, UsbError};
use crate::transport::Transfer;

/// What a streamed submission cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamReport {
    /// Times the host blocked until the device finished something (a synchronous transport:
    /// one per transfer).
    pub waits: u64,
    /// Most transfers in flight at once.
    pub max_in_flight: usize,
}

/// A started transfer that finished.
#[derive(Debug)]
pub struct Finished {
    pub id: usize,
    /// IN data, or empty for a complete OUT (a short OUT is an error).
    pub result: Result<Vec<u8>>,
    /// The host had to block for it (it had not finished already).
    pub blocked: bool,
}

/// Starts transfers and reports them finished, in any order.
pub trait Engine {
    /// Starts transfer `id` with its own timeout. An error here means it never started.
    fn start(&mut self, id: usize, t: &Transfer, timeout: Duration) -> Result<()>;
    /// Returns one finished transfer, blocking until there is one; `Ok(None)` when none is in
    /// flight. `Err` when the engine itself failed (then transfers may still be in flight:
    /// the engine must keep their memory alive, see [`crate::libusb_async`]).
    fn wait(&mut self) -> Result<Option<Finished>>;
    /// Asks every unfinished transfer to stop; they still finish through [`Engine::wait`].
    fn cancel_all(&mut self);
    fn in_flight(&self) -> usize;
}

/// Which transfers of `batch` may start before the one before them has finished, given the
/// indices where an independent chunk starts (a chunk's first request, whose effect does not
/// depend on the previous chunk's data having arrived):
/// - a control after a control: EP0 transfers are carried in submission order anyway;
/// - a bulk IN after a control: the device answers it only once the request armed it;
/// - a chunk start;
/// - never a bulk OUT (its arming request must be done: the firmware takes OUT data only once
///   armed) and never a control after bulk data outside a chunk start (a doorbell after a ring
///   write must not overtake the ring's bytes).
pub fn free_marks(batch: &[Transfer], chunk_starts: &[bool]) -> Vec<bool> {
    let ctrl = |t: &Transfer| matches!(t, Transfer::ControlOut { .. } | Transfer::ControlIn { .. });
    (0..batch.len())
        .map(|i| {
            if i == 0 || chunk_starts.get(i).copied().unwrap_or(false) {
                return true;
            }
            let (prev, t) = (&batch[i - 1], &batch[i]);
            match t {
                Transfer::BulkOut { .. } => false,
                Transfer::BulkIn { .. } => ctrl(prev),
                _ => ctrl(prev),
            }
        })
        .collect()
}

/// Runs `batch` with at most `depth` transfers in flight; `free[i]` says transfer i may start
/// before transfer i-1 finished. Transfer i's timeout is `timeout` times the number of
/// transfers queued ahead of it plus one (they share the bus).
pub fn run<E: Engine>(
    e: &mut E,
    batch: &[Transfer],
    free: &[bool],
    depth: usize,
    timeout: Duration,
) -> Result<(Vec<Vec<u8>>, StreamReport)> {
    let n = batch.len();
    let depth = depth.max(1);
    let mut results: Vec<Option<Vec<u8>>> = vec![None; n];
    let mut report = StreamReport::default();
    let mut next = 0;
    let mut finished = 0;
    while finished < n {
        while next < n
            && e.in_flight() < depth
            && (next == 0
                || free.get(next).copied().unwrap_or(false)
                || results[next - 1].is_some())
        {
            let ahead = e.in_flight() as u32;
            if let Err(err) = e.start(next, &batch[next], timeout.saturating_mul(ahead + 1)) {
                return Err(abort(e, batch, next, err, &mut report));
            }
            next += 1;
            report.max_in_flight = report.max_in_flight.max(e.in_flight());
        }
        let f = match e.wait() {
            Ok(Some(f)) => f,
            Ok(None) => {
                return Err(UsbError::Invalid(format!(
                    "streamed submission: nothing in flight with {} of {n} transfers finished \
                     (transfer {next} cannot start)",
                    finished
                )))
            }
            Err(err) => return Err(abort(e, batch, next.saturating_sub(1), err, &mut report)),
        };
        report.waits += u64::from(f.blocked);
        match f.result {
            Ok(v) => {
                results[f.id] = Some(v);
                finished += 1;
            }
            Err(err) => return Err(abort(e, batch, f.id, err, &mut report)),
        }
    }
    Ok((
        results.into_iter().map(Option::unwrap_or_default).collect(),
        report,
    ))
}

/// Cancels what is in flight, waits for all of it, and names the failed transfer.
fn abort<E: Engine>(
    e: &mut E,
    batch: &[Transfer],
    index: usize,
    source: UsbError,
    report: &mut StreamReport,
) -> UsbError {
    let mut cancelled = 0;
    if e.in_flight() > 0 {
        e.cancel_all();
        loop {
            match e.wait() {
                Ok(Some(f)) => {
                    report.waits += u64::from(f.blocked);
                    cancelled += usize::from(f.result.is_err());
                }
                Ok(None) => break,
                // The engine keeps what it could not reap alive; report the first failure.
                Err(_) => break,
            }
        }
    }
    UsbError::Stream {
        index,
        total: batch.len(),
        what: batch.get(index).map(Transfer::describe).unwrap_or_default(),
        context: None,
        cancelled,
        source: Box::new(source),
    }
}

/// The synchronous fallback: one transfer after another through the four primitive calls,
/// failures reported the way a streamed submission reports them.
pub fn run_sequential<T: crate::transport::UsbTransport + ?Sized>(
    t: &mut T,
    batch: &[Transfer],
    timeout: Duration,
) -> Result<(Vec<Vec<u8>>, StreamReport)> {
    let mut out = Vec::with_capacity(batch.len());
    for (i, tr) in batch.iter().enumerate() {
        match crate::transport::run_one(t, tr, timeout) {
            Ok(v) => out.push(v),
            Err(source) => {
                return Err(UsbError::Stream {
                    index: i,
                    total: batch.len(),
                    what: tr.describe(),
                    context: None,
                    cancelled: 0,
                    source: Box::new(source),
                })
            }
        }
    }
    let report = StreamReport {
        waits: batch.len() as u64,
        max_in_flight: usize::from(!batch.is_empty()),
    };
    Ok((out, report))
}
