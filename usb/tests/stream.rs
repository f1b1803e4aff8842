//! Streamed submission (usb::stream) over the in-memory bridge: a transport whose engine keeps
//! started transfers queued and lets the "device" finish them one at a time in order, and
//! records every start and finish. It shows that a chunked copy has more than one transfer in
//! flight, that the copy's bytes arrive unchanged, and that a failure mid-stream names the
//! transfer and its offset in the copy, cancels the rest and leaves nothing pending.

mod common;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Fake, SmallEndpoint};
use usb::device::{BridgeCore, CoreTransport};
use usb::proto::ControlSetup;
use usb::stream::{self, Engine, Finished, StreamReport};
use usb::transport::{run_one, BridgeInfo, Transfer, UsbTransport};
use usb::{setup_bars, Asm24, BusLayout, Firmware, UsbError};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Ev {
    Start(usize, String),
    Done(usize),
    Cancelled(usize),
}

#[derive(Default)]
struct Log {
    events: Vec<Ev>,
    /// In flight when the last submission returned.
    left_pending: usize,
    max_in_flight: usize,
}

/// The device finishes started transfers in start order, one per wait; transfer number
/// `fail_at` (counted over every streamed transfer) fails with a timeout.
struct QueueEngine<'a> {
    inner: &'a mut Fake,
    queue: VecDeque<(usize, Transfer)>,
    cancelling: bool,
    log: Arc<Mutex<Log>>,
    seen: &'a mut usize,
    fail_at: Option<usize>,
}

impl Engine for QueueEngine<'_> {
    fn start(&mut self, id: usize, t: &Transfer, _: Duration) -> usb::Result<()> {
        self.queue.push_back((id, t.clone()));
        let mut l = self.log.lock().unwrap();
        l.events.push(Ev::Start(id, t.describe()));
        l.max_in_flight = l.max_in_flight.max(self.queue.len());
        Ok(())
    }
    fn wait(&mut self) -> usb::Result<Option<Finished>> {
        let Some((id, t)) = self.queue.pop_front() else {
            return Ok(None);
        };
        let n = *self.seen;
        *self.seen += 1;
        let result = if self.cancelling {
            self.log.lock().unwrap().events.push(Ev::Cancelled(id));
            Err(UsbError::Io {
                what: t.describe(),
                msg: "cancelled".into(),
            })
        } else if self.fail_at == Some(n) {
            Err(UsbError::Timeout {
                what: t.describe(),
                ms: 1000,
            })
        } else {
            let r = run_one(self.inner, &t, Duration::from_secs(1));
            self.log.lock().unwrap().events.push(Ev::Done(id));
            r
        };
        Ok(Some(Finished {
            id,
            result,
            blocked: true,
        }))
    }
    fn cancel_all(&mut self) {
        self.cancelling = true;
    }
    fn in_flight(&self) -> usize {
        self.queue.len()
    }
}

/// The in-memory bridge behind the queue engine.
struct Streaming {
    inner: Fake,
    log: Arc<Mutex<Log>>,
    seen: usize,
    fail_at: Option<usize>,
}

impl UsbTransport for Streaming {
    fn info(&self) -> BridgeInfo {
        self.inner.info()
    }
    fn control_out(&mut self, s: &ControlSetup, d: &[u8], t: Duration) -> usb::Result<usize> {
        self.inner.control_out(s, d, t)
    }
    fn control_in(&mut self, s: &ControlSetup, t: Duration) -> usb::Result<Vec<u8>> {
        self.inner.control_in(s, t)
    }
    fn bulk_out(&mut self, ep: u8, st: u16, d: &[u8], t: Duration) -> usb::Result<usize> {
        self.inner.bulk_out(ep, st, d, t)
    }
    fn bulk_in(&mut self, ep: u8, st: u16, n: usize, t: Duration) -> usb::Result<Vec<u8>> {
        self.inner.bulk_in(ep, st, n, t)
    }
    fn submit_streamed(
        &mut self,
        batch: &[Transfer],
        free: &[bool],
        depth: usize,
        timeout: Duration,
    ) -> usb::Result<(Vec<Vec<u8>>, StreamReport)> {
        let mut e = QueueEngine {
            inner: &mut self.inner,
            queue: VecDeque::new(),
            cancelling: false,
            log: self.log.clone(),
            seen: &mut self.seen,
            fail_at: self.fail_at,
        };
        let r = stream::run(&mut e, batch, free, depth, timeout);
        self.log.lock().unwrap().left_pending = e.in_flight();
        r
    }
}

const MIB: usize = 1 << 20;

fn setup(fail_at: Option<usize>) -> (Asm24, Arc<Mutex<Log>>, u64) {
    let mut ep = SmallEndpoint::new();
    ep.mem[0].resize(8 * MIB, 0);
    let inner = CoreTransport::new(BridgeCore::new(Firmware::Custom, ep));
    let log = Arc::new(Mutex::new(Log::default()));
    let t = Streaming {
        inner,
        log: log.clone(),
        seen: 0,
        fail_at,
    };
    let mut c = Asm24::new(Box::new(t)).unwrap();
    let ep = setup_bars(&mut c, BusLayout::default()).unwrap();
    (c, log, ep.bars[&0].addr)
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}

fn position(ev: &[Ev], want: &Ev) -> usize {
    ev.iter()
        .position(|e| e == want)
        .unwrap_or_else(|| panic!("{want:?} not in {ev:?}"))
}

#[test]
fn a_chunked_copy_keeps_transfers_in_flight_and_arrives_unchanged() {
    let (mut c, log, vram) = setup(None);
    let data = pattern(4 * MIB);
    let s0 = c.stats;
    c.mem_write(vram, &data).unwrap();
    c.flush().unwrap();
    let back = c.mem_read(vram, data.len()).unwrap();
    assert!(back == data, "copy through the stream changed bytes");
    let d = c.stats - s0;
    assert_eq!(d.streamed, 2, "the write and the read streamed: {d:?}");
    assert!(d.max_in_flight > 1, "{d:?}");
    // Fewer waits than transfers: some finished while the host was not waiting for them.
    let l = log.lock().unwrap();
    assert!(l.max_in_flight >= 2, "max in flight {}", l.max_in_flight);
    assert_eq!(l.left_pending, 0);
    // Write: chunk 1's request (F0) started before chunk 0's bulk OUT finished, but chunk 1's
    // bulk OUT only after its request finished (the firmware takes data once armed).
    let ev = &l.events;
    let write_ev: Vec<Ev> = ev
        .iter()
        .take_while(|e| **e != Ev::Done(7))
        .cloned()
        .collect();
    let f0_1 = position(ev, &Ev::Start(2, "control OUT 0xf0".into()));
    let bulk0_done = position(ev, &Ev::Done(1));
    assert!(f0_1 < bulk0_done, "no overlap: {write_ev:?}");
    let f0_1_done = position(ev, &Ev::Done(2));
    let bulk1 = position(ev, &Ev::Start(3, format!("bulk OUT 0x02 ({MIB} bytes)")));
    assert!(
        bulk1 > f0_1_done,
        "bulk OUT before its arm finished: {write_ev:?}"
    );
}

#[test]
fn a_failure_mid_stream_names_the_transfer_and_offset_and_leaves_nothing_pending() {
    // Open + enumeration use the synchronous path; the streamed transfers are counted from the
    // copy's first: F0, bulk, F0, bulk, F0, bulk(#5) fails (the third MiB).
    let (mut c, log, vram) = setup(Some(5));
    let data = pattern(4 * MIB);
    c.mem_write(vram, &data).unwrap();
    let e = c.flush().unwrap_err();
    let UsbError::Stream {
        index,
        total,
        ref what,
        ref context,
        cancelled,
        ref source,
    } = e
    else {
        panic!("not a stream error: {e}");
    };
    assert_eq!((index, total), (5, 8), "{e}");
    assert_eq!(what, &format!("bulk OUT 0x02 ({MIB} bytes)"));
    assert_eq!(
        context.as_deref(),
        Some(
            format!(
                "memory write to bus {:#x}: bytes {}..{} of {}",
                vram + 2 * MIB as u64,
                2 * MIB,
                3 * MIB,
                4 * MIB
            )
            .as_str()
        ),
        "{e}"
    );
    assert!(matches!(**source, UsbError::Timeout { .. }), "{e}");
    assert!(
        cancelled >= 1,
        "the next chunk's request was in flight: {e}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("transfer 5 of 8") && msg.contains("bytes 2097152..3145728"),
        "{msg}"
    );
    let l = log.lock().unwrap();
    assert_eq!(l.left_pending, 0, "transfers left in flight");
    // Every started transfer finished or was cancelled, and none started after the failure.
    let started: Vec<usize> = l
        .events
        .iter()
        .filter_map(|e| {
            if let Ev::Start(i, _) = e {
                Some(*i)
            } else {
                None
            }
        })
        .collect();
    for i in &started {
        if *i == index {
            continue;
        }
        assert!(
            l.events.contains(&Ev::Done(*i)) || l.events.contains(&Ev::Cancelled(*i)),
            "transfer {i} neither finished nor cancelled: {:?}",
            l.events
        );
    }
    assert!(
        !started.contains(&7),
        "the last bulk started after the failure"
    );
}

#[test]
fn the_synchronous_fallback_reports_failures_the_same_way() {
    // A transport without its own streamed path (the emulated bridge) runs the batch one
    // transfer after another: same results, one wait per transfer.
    let mut ep = SmallEndpoint::new();
    ep.mem[0].resize(4 * MIB, 0);
    let t = CoreTransport::new(BridgeCore::new(Firmware::Custom, ep));
    let mut c = Asm24::new(Box::new(t)).unwrap();
    let vram = setup_bars(&mut c, BusLayout::default()).unwrap().bars[&0].addr;
    let data = pattern(3 * MIB);
    let s0 = c.stats;
    c.mem_write(vram, &data).unwrap();
    c.flush().unwrap();
    assert_eq!(c.mem_read(vram, data.len()).unwrap(), data);
    let d = c.stats - s0;
    assert_eq!((d.streamed, d.waits, d.transfers), (2, 12, 12), "{d:?}");
}

#[test]
fn depth_one_is_the_synchronous_path() {
    let (mut c, log, vram) = setup(None);
    c.stream_depth = 1;
    let data = pattern(2 * MIB);
    let s0 = c.stats;
    c.mem_write(vram, &data).unwrap();
    assert_eq!(c.mem_read(vram, data.len()).unwrap(), data);
    let d = c.stats - s0;
    assert_eq!((d.streamed, d.waits), (0, d.transfers), "{d:?}");
    assert!(log.lock().unwrap().events.is_empty());
}
