//! The ASM2464 controller ("ASM24Controller"): XDATA access with the write cache, SRAM window
//! writes, and transfer batching over a [`UsbTransport`], for both firmwares (usb-asm24.md §3–4).
//! PCIe TLPs are in [`crate::pcie`], bus setup in [`crate::enumerate`].
//!
//! Cost model: every [`UsbTransport::submit`] is one *round trip* (the host waits once);
//! [`Stats`] counts them, plus transfers and bytes, so callers can print what an operation cost.
//!
//! Posted work (XDATA writes, memory-write TLPs, SRAM writes: nothing the host must look at) is
//! not sent on its own: it waits in order and goes out at the front of the next submission that
//! reads something, so a register write costs no round trip of its own and a ring write, its
//! doorbell and the first completion poll share one. [`Asm24::flush`] sends it explicitly;
//! errors of deferred transfers surface at that next submission, naming the failing transfer.

use std::time::Duration;

use crate::error::{Result, UsbError};
use crate::proto::{
    custom_ep, uas_ep, Cdb, CommandIu, Request, SenseIu, TlpMode, SECTOR, SRAM_SLOT,
};
use crate::transport::{BridgeInfo, Transfer, UsbTransport};

/// Which protocol the bridge speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Firmware {
    /// Patched ASMedia firmware: UAS with vendor CDBs.
    Stock,
    /// tinygrad's open firmware: vendor control requests.
    Custom,
}

impl Firmware {
    /// From what the device reports: the custom firmware's product string starts with
    /// `custom` or `AS2462`; otherwise a UAS alternate setting means the stock firmware.
    pub fn detect(info: &BridgeInfo) -> Firmware {
        if info.product.starts_with("custom") || info.product.starts_with("AS2462") {
            Firmware::Custom
        } else if info.has_uas_alt {
            Firmware::Stock
        } else {
            Firmware::Custom
        }
    }
}

/// XDATA registers and windows the host touches.
pub mod xdata {
    /// LTSSM state; 0x78 = L0 (link up).
    pub const LTSSM: u16 = 0xB450;
    pub const LTSSM_L0: u8 = 0x78;
    /// SRAM window seen by the GPU at PCIe 0x200000 (512 KiB).
    pub const SRAM: u16 = 0xF000;
    pub const SRAM_BUS: u64 = 0x20_0000;
    pub const SRAM_SIZE: u64 = 0x8_0000;
    /// Small "system" buffer seen by the GPU at PCIe 0x820000 (4 KiB).
    pub const SYS: u16 = 0xA000;
    pub const SYS_BUS: u64 = 0x82_0000;
    pub const SYS_SIZE: u64 = 0x1000;
    /// Completion-queue page (custom firmware): a GPU write at bus 0x82200C starts an armed
    /// SRAM→host transfer.
    pub const CQ: u16 = 0xB800;
    pub const CQ_BUS: u64 = 0x82_2000;
    pub const CQ_TRIGGER_BUS: u64 = 0x82_200C;
    /// TLP engine (stock firmware).
    pub const TLP_FMT: u16 = 0xB210;
    pub const TLP_BE: u16 = 0xB217;
    pub const TLP_ADDR: u16 = 0xB218;
    pub const TLP_ADDR_HI: u16 = 0xB21C;
    pub const TLP_DATA: u16 = 0xB220;
    pub const TLP_CPL_HDR: u16 = 0xB22A;
    pub const TLP_FIRE: u16 = 0xB254;
    pub const TLP_CPL_FLAGS: u16 = 0xB284;
    pub const TLP_STATUS: u16 = 0xB296;
    /// Stock-firmware controller init sequence (address, value), in order.
    pub const STOCK_INIT: &[(u16, u8)] = &[
        (0x054B, 0x20),
        (0x054E, 0x04),
        (0x05A8, 0x02),
        (0x05F8, 0x04),
        (0x07EC, 0x01),
        (0x07ED, 0x00),
        (0x07EE, 0x00),
        (0x07EF, 0x00),
        (0xC422, 0x02),
        (0x0000, 0x33),
    ];
}

/// What the controller has cost so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Submissions (the host waited for the device once per submission).
    pub round_trips: u64,
    pub transfers: u64,
    pub control: u64,
    pub bulk: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// PCIe TLPs issued (a stream of n dwords counts n).
    pub tlps: u64,
    /// XDATA byte writes and PCIe dword writes the caches dropped.
    pub cache_hits: u64,
    /// Batches re-sent after a short read or a transient TLP failure.
    pub retries: u64,
    /// Times the host blocked until the device finished a transfer: one per transfer on the
    /// synchronous path, fewer when a streamed submission overlaps them.
    pub waits: u64,
    /// Submissions that went through the streamed path ([`Asm24::stream_depth`]).
    pub streamed: u64,
    /// Most transfers in flight at once so far (not a counter: `a - b` keeps `a`'s).
    pub max_in_flight: u64,
}

impl std::ops::Sub for Stats {
    type Output = Stats;
    fn sub(self, o: Stats) -> Stats {
        Stats {
            round_trips: self.round_trips - o.round_trips,
            transfers: self.transfers - o.transfers,
            control: self.control - o.control,
            bulk: self.bulk - o.bulk,
            bytes_out: self.bytes_out - o.bytes_out,
            bytes_in: self.bytes_in - o.bytes_in,
            tlps: self.tlps - o.tlps,
            cache_hits: self.cache_hits - o.cache_hits,
            retries: self.retries - o.retries,
            waits: self.waits - o.waits,
            streamed: self.streamed - o.streamed,
            max_in_flight: self.max_in_flight,
        }
    }
}

/// How a batch entry's result is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Check {
    /// Nothing to look at (OUT).
    None,
    /// A UAS sense IU for `tag`.
    Sense(u16),
    /// IN data the caller wants; fewer than `expected` bytes is a short read.
    Data { expected: usize },
}

/// Transfers built for one submission, with how to check each result.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    pub transfers: Vec<Transfer>,
    pub checks: Vec<Check>,
    /// Where an independent chunk of a streamed copy starts (see [`crate::stream::free_marks`]).
    pub chunk_starts: Vec<bool>,
    /// What part of a copy a transfer carries, for errors ("memory write ... bytes a..b of n").
    pub notes: Vec<Option<String>>,
}

impl Batch {
    pub fn push(&mut self, t: Transfer, c: Check) {
        self.transfers.push(t);
        self.checks.push(c);
        self.chunk_starts.push(false);
        self.notes.push(None);
    }
    /// Notes what part of a copy the transfers from `from` on carry, and marks transfer
    /// `from` as the start of a chunk that does not depend on the transfers before it (a later
    /// chunk of the same copy: other addresses). A copy's first chunk is not independent: it
    /// may read what earlier posted writes are still sending.
    pub fn chunk(&mut self, from: usize, note: String, independent: bool) {
        if let Some(s) = self.chunk_starts.get_mut(from) {
            *s = independent;
        }
        for n in self.notes.iter_mut().skip(from) {
            *n = Some(note.clone());
        }
    }
    fn append(&mut self, o: &mut Batch) {
        self.transfers.append(&mut o.transfers);
        self.checks.append(&mut o.checks);
        self.chunk_starts.append(&mut o.chunk_starts);
        self.notes.append(&mut o.notes);
    }
    pub fn is_empty(&self) -> bool {
        self.transfers.is_empty()
    }
}

const UNKNOWN: u16 = 0x100;
/// UAS streams the stock firmware allocates (tags 1..=31).
const UAS_SLOTS: u16 = 31;

/// The bridge controller over a transport.
pub struct Asm24 {
    t: Box<dyn UsbTransport>,
    fw: Firmware,
    info: BridgeInfo,
    /// Per-transfer timeout (tinygrad: 1000 ms; 5000 ms for TLPs).
    pub timeout: Duration,
    /// Last value written to each XDATA byte (UNKNOWN after a read or before any write).
    shadow: Vec<u16>,
    next_tag: u16,
    pub stats: Stats,
    pub(crate) pci_cacheable: Vec<std::ops::Range<u64>>,
    pub(crate) pci_cache: std::collections::HashMap<u64, u32>,
    /// Write-only transfers not yet sent (see [`Asm24::flush`]).
    pending: Batch,
    pending_bytes: usize,
    defer_writes: bool,
    /// When on, one line per submission (what it carried): see [`Asm24::take_trace`].
    trace: Option<Vec<String>>,
    /// Transfers in flight at once for submissions that carry a chunked copy (custom
    /// firmware's streamed TLP reads/writes): the next chunk's request goes out while the
    /// previous chunk's data is on the wire. 1 = the synchronous path (one transfer, wait,
    /// next). Transports that cannot overlap fall back to synchronous.
    pub stream_depth: usize,
}

/// Default [`Asm24::stream_depth`]: a chunk's bulk data, the next chunk's request and its
/// bulk IN (reads) can be in flight together; tinygrad keeps two bulk OUTs in flight.
pub const STREAM_DEPTH: usize = 4;

/// Bounds on deferred writes: a submission never carries more than this much posted work.
const MAX_PENDING_TRANSFERS: usize = 64;
const MAX_PENDING_BYTES: usize = 8 << 20;

impl Drop for Asm24 {
    fn drop(&mut self) {
        // Best effort: posted writes the caller already considers done.
        let _ = self.flush();
    }
}

impl std::fmt::Debug for Asm24 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Asm24")
            .field("fw", &self.fw)
            .field("info", &self.info)
            .field("stats", &self.stats)
            .finish()
    }
}

impl Asm24 {
    /// Takes the bridge over: picks the protocol from what the device reports, then brings the
    /// controller up (custom: PCIe power on until LTSSM shows L0; stock: the init writes).
    pub fn new(t: Box<dyn UsbTransport>) -> Result<Asm24> {
        let info = t.info();
        let fw = Firmware::detect(&info);
        Asm24::with_firmware(t, fw)
    }

    pub fn with_firmware(t: Box<dyn UsbTransport>, fw: Firmware) -> Result<Asm24> {
        let info = t.info();
        let mut c = Asm24 {
            t,
            fw,
            info,
            timeout: Duration::from_millis(1000),
            shadow: vec![UNKNOWN; 0x10000],
            next_tag: 0,
            stats: Stats::default(),
            pci_cacheable: Vec::new(),
            pci_cache: Default::default(),
            pending: Batch::default(),
            pending_bytes: 0,
            defer_writes: true,
            trace: None,
            stream_depth: STREAM_DEPTH,
        };
        c.init()?;
        Ok(c)
    }

    pub fn firmware(&self) -> Firmware {
        self.fw
    }
    pub fn info(&self) -> &BridgeInfo {
        &self.info
    }

    fn init(&mut self) -> Result<()> {
        match self.fw {
            Firmware::Custom => {
                if self.read_xdata(xdata::LTSSM, 1)?[0] != xdata::LTSSM_L0 {
                    self.set_pcie_power(true)?;
                }
                let l = self.read_xdata(xdata::LTSSM, 1)?[0];
                if l != xdata::LTSSM_L0 {
                    return Err(UsbError::Invalid(format!(
                        "PCIe link not up behind the bridge (LTSSM {l:#04x}, want {:#04x}): \
                         is the GPU powered?",
                        xdata::LTSSM_L0
                    )));
                }
                Ok(())
            }
            Firmware::Stock => {
                let mut b = Batch::default();
                for &(a, v) in xdata::STOCK_INIT {
                    self.push_xdata_write(&mut b, a, v, true)?;
                }
                self.run(b).map(|_| ())
            }
        }
    }

    /// PCIe power (custom firmware; it boots with PCIe off).
    pub fn set_pcie_power(&mut self, on: bool) -> Result<()> {
        if self.fw != Firmware::Custom {
            return Err(UsbError::Unsupported(
                "PCIe power control (F3) needs the custom firmware".into(),
            ));
        }
        let mut b = Batch::default();
        self.push_request(&mut b, Request::PciePower { on })?;
        self.run(b).map(|_| ())
    }

    /// Submits a batch as one round trip, checks sense IUs and short reads, and returns the
    /// data of the `Check::Data` entries in order. A short read re-sends the whole batch once
    /// (batches are built from idempotent requests), then is reported.
    pub(crate) fn run(&mut self, mut b: Batch) -> Result<Vec<Vec<u8>>> {
        if b.is_empty() {
            return Ok(vec![]);
        }
        let reads = b.checks.iter().any(|c| matches!(c, Check::Data { .. }));
        if self.defer_writes && !reads {
            // Posted work: ride along with the next submission that has to wait anyway.
            self.pending_bytes += b.transfers.iter().map(Transfer::out_len).sum::<usize>();
            self.pending.append(&mut b);
            let max = match self.fw {
                Firmware::Custom => MAX_PENDING_TRANSFERS,
                // 31 UAS operations in flight (command, data, status each).
                Firmware::Stock => 3 * usize::from(UAS_SLOTS),
            };
            if self.pending.transfers.len() >= max || self.pending_bytes >= MAX_PENDING_BYTES {
                self.flush()?;
            }
            return Ok(vec![]);
        }
        let mut all = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        all.append(&mut b);
        self.submit(all)
    }

    /// Sends the writes waiting for the next submission (one round trip; none when idle).
    pub fn flush(&mut self) -> Result<()> {
        let p = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        if p.is_empty() {
            return Ok(());
        }
        self.submit(p).map(|_| ())
    }

    /// Whether write-only submissions wait for the next read (default) or go out at once.
    pub fn set_defer_writes(&mut self, on: bool) -> Result<()> {
        self.defer_writes = on;
        if !on {
            self.flush()?;
        }
        Ok(())
    }

    /// Starts (or stops) recording one line per submission.
    pub fn set_trace(&mut self, on: bool) {
        self.trace = on.then(Vec::new);
    }

    /// The submissions recorded since the last call.
    pub fn take_trace(&mut self) -> Vec<String> {
        self.trace.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn submit(&mut self, b: Batch) -> Result<Vec<Vec<u8>>> {
        if let Some(t) = &mut self.trace {
            let parts: Vec<String> = b.transfers.iter().map(Transfer::describe).collect();
            t.push(parts.join(", "));
        }
        match self.run_once(&b) {
            // Only a batch of reads is safe to send again: OUT transfers carry register writes,
            // doorbells, TLP requests and DMA arms that must not happen twice.
            Err(UsbError::Short { .. }) if b.transfers.iter().all(Transfer::is_in) => {
                self.stats.retries += 1;
                self.run_once(&b)
            }
            r => r,
        }
    }

    fn run_once(&mut self, b: &Batch) -> Result<Vec<Vec<u8>>> {
        self.stats.round_trips += 1;
        let streamed = self.fw == Firmware::Custom
            && self.stream_depth > 1
            && b.chunk_starts.iter().any(|&s| s);
        for t in &b.transfers {
            self.stats.transfers += 1;
            match t {
                Transfer::ControlOut { .. } | Transfer::ControlIn { .. } => self.stats.control += 1,
                _ => self.stats.bulk += 1,
            }
            self.stats.bytes_out += t.out_len() as u64;
        }
        let res = if streamed {
            let free = crate::stream::free_marks(&b.transfers, &b.chunk_starts);
            let r = self
                .t
                .submit_streamed(&b.transfers, &free, self.stream_depth, self.timeout);
            let (res, report) = r.map_err(|e| match e {
                UsbError::Stream {
                    index,
                    total,
                    what,
                    context: None,
                    cancelled,
                    source,
                } => UsbError::Stream {
                    context: b.notes.get(index).cloned().flatten(),
                    index,
                    total,
                    what,
                    cancelled,
                    source,
                },
                e => e,
            })?;
            self.stats.streamed += 1;
            self.stats.waits += report.waits;
            self.stats.max_in_flight = self.stats.max_in_flight.max(report.max_in_flight as u64);
            res
        } else {
            self.stats.waits += b.transfers.len() as u64;
            self.stats.max_in_flight = self.stats.max_in_flight.max(1);
            self.t.submit(&b.transfers, self.timeout)?
        };
        if res.len() != b.transfers.len() {
            return Err(UsbError::Invalid(format!(
                "transport returned {} results for {} transfers",
                res.len(),
                b.transfers.len()
            )));
        }
        let mut out = Vec::new();
        for ((t, c), r) in b.transfers.iter().zip(&b.checks).zip(res) {
            self.stats.bytes_in += r.len() as u64;
            match c {
                Check::None => {}
                Check::Sense(tag) => {
                    let s = SenseIu::parse(&r)?;
                    if s.tag != *tag || s.status != 0 {
                        return Err(UsbError::Io {
                            what: t.describe(),
                            msg: format!(
                                "UAS status for tag {} is {:#04x} (tag {} expected, status 0)",
                                s.tag, s.status, tag
                            ),
                        });
                    }
                }
                Check::Data { expected } => {
                    if r.len() < *expected {
                        return Err(UsbError::Short {
                            what: t.describe(),
                            expected: *expected,
                            got: r.len(),
                        });
                    }
                    out.push(r);
                }
            }
        }
        Ok(out)
    }

    fn tag(&mut self) -> u16 {
        self.next_tag = self.next_tag % UAS_SLOTS + 1;
        self.next_tag
    }

    /// Appends a custom-firmware control request.
    pub(crate) fn push_request(&mut self, b: &mut Batch, r: Request) -> Result<()> {
        let (setup, data) = r.encode()?;
        if setup.is_in() {
            let expected = usize::from(setup.length);
            b.push(Transfer::ControlIn { setup }, Check::Data { expected });
        } else {
            b.push(Transfer::ControlOut { setup, data }, Check::None);
        }
        Ok(())
    }

    /// Appends a stock-firmware UAS operation: command IU, optional data phase, status IU.
    fn push_uas(
        &mut self,
        b: &mut Batch,
        cdb: Cdb,
        out: Option<Vec<u8>>,
        in_len: usize,
    ) -> Result<()> {
        let tag = self.tag();
        let iu = CommandIu { tag, cdb }.encode()?;
        b.push(
            Transfer::BulkOut {
                ep: uas_ep::COMMAND_OUT,
                stream: tag,
                data: iu.to_vec(),
            },
            Check::None,
        );
        if let Some(data) = out {
            b.push(
                Transfer::BulkOut {
                    ep: uas_ep::DATA_OUT,
                    stream: tag,
                    data,
                },
                Check::None,
            );
        }
        if in_len > 0 {
            b.push(
                Transfer::BulkIn {
                    ep: uas_ep::DATA_IN,
                    stream: tag,
                    len: in_len,
                },
                Check::Data { expected: in_len },
            );
        }
        b.push(
            Transfer::BulkIn {
                ep: uas_ep::STATUS_IN,
                stream: tag,
                len: 16,
            },
            Check::Sense(tag),
        );
        Ok(())
    }

    /// Appends reads of `len` XDATA bytes (≤ 255 per request) and invalidates their shadow.
    pub(crate) fn push_xdata_read(&mut self, b: &mut Batch, addr: u16, len: usize) -> Result<()> {
        let end = usize::from(addr) + len;
        if end > 0x10000 {
            return Err(UsbError::Invalid(format!(
                "XDATA read of {len} bytes at {addr:#06x} runs past 0xFFFF"
            )));
        }
        let mut off = 0;
        while off < len {
            let n = (len - off).min(0xFF);
            let a = addr + off as u16;
            match self.fw {
                Firmware::Custom => self.push_request(
                    b,
                    Request::ReadXdata {
                        addr: a,
                        bank: 0,
                        len: n as u16,
                    },
                )?,
                Firmware::Stock => self.push_uas(
                    b,
                    Cdb::ReadXdata {
                        addr: a.into(),
                        len: n as u8,
                    },
                    None,
                    n,
                )?,
            }
            off += n;
        }
        for s in &mut self.shadow[usize::from(addr)..end] {
            *s = UNKNOWN;
        }
        Ok(())
    }

    /// Appends one XDATA byte write unless the cache shows that value already (and
    /// `ignore_cache` is false). Returns whether a request was added.
    pub(crate) fn push_xdata_write(
        &mut self,
        b: &mut Batch,
        addr: u16,
        value: u8,
        ignore_cache: bool,
    ) -> Result<bool> {
        let s = &mut self.shadow[usize::from(addr)];
        if !ignore_cache && *s == u16::from(value) {
            self.stats.cache_hits += 1;
            return Ok(false);
        }
        *s = u16::from(value);
        match self.fw {
            Firmware::Custom => self.push_request(
                b,
                Request::WriteXdata {
                    addr,
                    bank: 0,
                    value,
                },
            )?,
            Firmware::Stock => self.push_uas(
                b,
                Cdb::WriteXdata {
                    addr: addr.into(),
                    value,
                },
                None,
                0,
            )?,
        }
        Ok(true)
    }

    /// Reads XDATA bytes (one round trip for any length).
    pub fn read_xdata(&mut self, addr: u16, len: usize) -> Result<Vec<u8>> {
        let mut b = Batch::default();
        self.push_xdata_read(&mut b, addr, len)?;
        Ok(self.run(b)?.concat())
    }

    /// Writes XDATA bytes through the write cache (one round trip, none when all cached).
    pub fn write_xdata(&mut self, addr: u16, data: &[u8], ignore_cache: bool) -> Result<()> {
        if usize::from(addr) + data.len() > 0x10000 {
            return Err(UsbError::Invalid(format!(
                "XDATA write of {} bytes at {addr:#06x} runs past 0xFFFF",
                data.len()
            )));
        }
        let mut b = Batch::default();
        for (i, &v) in data.iter().enumerate() {
            self.push_xdata_write(&mut b, addr + i as u16, v, ignore_cache)?;
        }
        self.run(b).map(|_| ())
    }

    /// Forgets the XDATA shadow (after a device-side change the host did not make).
    pub fn invalidate_xdata_cache(&mut self) {
        self.shadow.iter_mut().for_each(|s| *s = UNKNOWN);
    }

    /// Writes `data` into the SRAM window at byte `offset` (GPU sees it at 0x200000+offset).
    /// Custom firmware: F2 arm + one bulk OUT (offset must be 16 KiB aligned). Stock: SCSI
    /// WRITE(16) in 64 KiB pieces, then the controller's DMA-completion register pokes.
    pub fn sram_write(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        let padded_len = (data.len() as u64).div_ceil(SECTOR) * SECTOR;
        if offset + padded_len > xdata::SRAM_SIZE {
            return Err(UsbError::Invalid(format!(
                "SRAM write of {} bytes at {offset:#x} exceeds the {:#x}-byte window",
                data.len(),
                xdata::SRAM_SIZE
            )));
        }
        let mut buf = data.to_vec();
        buf.resize(padded_len as usize, 0);
        let mut b = Batch::default();
        match self.fw {
            Firmware::Custom => {
                if !offset.is_multiple_of(SRAM_SLOT) {
                    return Err(UsbError::Invalid(format!(
                        "SRAM write at {offset:#x}: the F2 engine starts at 16 KiB slots"
                    )));
                }
                self.push_sram_dma(&mut b, false, offset, padded_len)?;
                self.push_bulk_out(&mut b, buf);
            }
            Firmware::Stock => {
                if !offset.is_multiple_of(SECTOR) {
                    return Err(UsbError::Invalid(format!(
                        "SRAM write at {offset:#x}: SCSI writes start at 512-byte sectors"
                    )));
                }
                let big = buf.len() > 0x4000;
                if big {
                    let l = buf.len().div_ceil(0x10000) * 0x10000;
                    buf.resize(l, 0);
                }
                for (i, piece) in buf.chunks(0x10000).enumerate() {
                    let lba = offset / SECTOR + (i as u64) * (0x10000 / SECTOR);
                    self.push_uas(
                        &mut b,
                        Cdb::Write16 {
                            lba,
                            sectors: (piece.len() as u64 / SECTOR) as u32,
                        },
                        Some(piece.to_vec()),
                        0,
                    )?;
                    for a in 0x171..=0x173u16 {
                        self.push_xdata_write(&mut b, a, 0xFF, true)?;
                    }
                    for a in 0xCE6E..=0xCE6Fu16 {
                        self.push_xdata_write(&mut b, a, 0, true)?;
                    }
                }
                if big {
                    for a in 0xCE40..=0xCE43u16 {
                        self.push_xdata_write(&mut b, a, 0, true)?;
                    }
                }
            }
        }
        self.run(b).map(|_| ())
    }

    /// Arms the custom firmware's SRAM→host engine for `len` bytes from `offset`: the data
    /// arrives on bulk IN after the GPU writes bus address 0x82200C. Use with [`Self::bulk_read`].
    pub fn arm_sram_read(&mut self, offset: u64, len: u64) -> Result<()> {
        if self.fw != Firmware::Custom {
            return Err(UsbError::Unsupported(
                "SRAM→host DMA (F2 read) needs the custom firmware".into(),
            ));
        }
        let padded = len.div_ceil(SECTOR) * SECTOR;
        if !offset.is_multiple_of(SRAM_SLOT) || offset + padded > xdata::SRAM_SIZE {
            return Err(UsbError::Invalid(format!(
                "SRAM read of {len} bytes at {offset:#x}: must start at a 16 KiB slot inside the window"
            )));
        }
        let mut b = Batch::default();
        self.push_sram_dma(&mut b, true, offset, padded)?;
        self.run(b).map(|_| ())
    }

    /// Receives `len` bytes on the custom firmware's bulk IN endpoint.
    pub fn bulk_read(&mut self, len: usize) -> Result<Vec<u8>> {
        let mut b = Batch::default();
        self.push_bulk_in(&mut b, len);
        Ok(self.run(b)?.concat())
    }

    /// Appends an F0 request (custom firmware).
    pub(crate) fn push_tlp_request(
        &mut self,
        b: &mut Batch,
        fmt_type: u8,
        byte_enable: u8,
        mode: TlpMode,
        addr: u64,
        value: u32,
    ) -> Result<()> {
        self.push_request(
            b,
            Request::Tlp {
                fmt_type,
                byte_enable,
                mode,
                chunk_dwords: 0,
                addr,
                value,
            },
        )
    }

    /// Arms the F2 engine for `padded` bytes (whole sectors) of the SRAM window from the 16 KiB
    /// slot at `offset`, towards the host or from it.
    fn push_sram_dma(
        &mut self,
        b: &mut Batch,
        to_host: bool,
        offset: u64,
        padded: u64,
    ) -> Result<()> {
        self.push_request(
            b,
            Request::SramDma {
                to_host,
                sectors: (padded / SECTOR) as u16,
                first_slot: (offset / SRAM_SLOT) as u8,
                slots: padded.div_ceil(SRAM_SLOT) as u8,
            },
        )
    }

    pub(crate) fn push_bulk_out(&mut self, b: &mut Batch, data: Vec<u8>) {
        b.push(
            Transfer::BulkOut {
                ep: custom_ep::BULK_OUT,
                stream: 0,
                data,
            },
            Check::None,
        );
    }

    pub(crate) fn push_bulk_in(&mut self, b: &mut Batch, len: usize) {
        b.push(
            Transfer::BulkIn {
                ep: custom_ep::BULK_IN,
                stream: 0,
                len,
            },
            Check::Data { expected: len },
        );
    }
}
