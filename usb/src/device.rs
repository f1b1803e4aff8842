//! The bridge's *device side*: what an ASM2464 does with the requests [`crate::proto`] encodes.
//! A fake bridge (the runtime's emulated eGPU) and a FunctionFS gadget put a [`BridgeCore`]
//! behind their endpoints; it knows no GPU — the PCIe endpoint behind the chip is a
//! [`PcieEndpoint`].
//!
//! # Core API (transport-independent)
//!
//! ```text
//! let mut core = BridgeCore::new(Firmware::Custom, endpoint);   // endpoint: impl PcieEndpoint
//! core.control(&setup, &out_data) -> Result<Vec<u8>, DeviceError>  // EP0: SETUP + data stage;
//!                                                                // Ok = IN data (empty for OUT),
//!                                                                // Err = STALL the request
//! core.bulk_out(ep, stream, &data) -> Result<(), DeviceError>    // 0x02 data, 0x04 UAS commands
//! core.bulk_in(ep, stream, max_len) -> Result<Vec<u8>, DeviceError> // 0x81 data, 0x83 UAS status;
//!                                                                // Err(NotReady) = NAK forever
//! BridgeCore::with_memory(fw, endpoint, Box<dyn WindowMemory>)   // windows = the GPU's DMA memory
//! ```
//! [`BridgeCore::handle`] does the same from raw bytes: `Packet::Control{setup: [u8; 8], data}`,
//! `Packet::BulkOut{..}`, `Packet::BulkIn{..}` → response bytes.
//!
//! Model: 64 KiB XDATA (plain bytes, with the LTSSM register and the stock TLP engine at
//! 0xB2xx), DMA windows XDATA 0xF000 ↔ bus 0x200000 (512 KiB SRAM; XDATA shows its first
//! 4 KiB), 0xA000 ↔ 0x820000 (4 KiB), 0xB800 ↔ 0x822000 (4 KiB, a write at 0x82200C triggers
//! an armed SRAM→host read), 0xB000 ↔ 0x800000 (0x200); internal PCIe bridges on buses
//! 0..gpu_bus-1 that forward config requests only once their bus numbers are programmed and
//! memory requests only once memory decoding is on; the endpoint on bus `gpu_bus`, device 0.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::controller::{xdata, Firmware};
use crate::error::{CplStatus, ProtoError};
use crate::proto::{
    custom_ep, tlp, uas_ep, Cdb, CommandIu, Completion, ControlSetup, Request, SenseIu, TlpMode,
    SECTOR, SRAM_SLOT,
};

/// The PCIe function behind the bridge (a GPU in the runtime, a small model in tests).
pub trait PcieEndpoint: Send {
    /// Config dword at `reg` (dword aligned, < 4096).
    fn cfg_read(&mut self, reg: u16) -> u32;
    /// Config write of the bytes selected by `byte_enable` (value already shifted into place).
    fn cfg_write(&mut self, reg: u16, value: u32, byte_enable: u8);
    /// Memory read of `out.len()` bytes (whole dwords) at bus address `addr`.
    fn mem_read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), CplStatus>;
    /// Memory write of whole dwords at `addr`; `first_be` selects the bytes of the first dword.
    fn mem_write(&mut self, addr: u64, data: &[u8], first_be: u8) -> Result<(), CplStatus>;
    /// The host wrote the SRAM (a device may be polling a sentinel there).
    fn poll(&mut self) {}
}

/// Why the device refuses a transfer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    /// Malformed request: the device stalls it.
    #[error("stall: {0}")]
    Stall(#[from] ProtoError),
    /// Well-formed but not acceptable now (e.g. bulk data nobody armed).
    #[error("stall: {0}")]
    Refused(String),
    /// Nothing to send (the host would wait until its timeout).
    #[error("no data ready on {0}")]
    NotReady(String),
}

/// Memory behind the bridge's DMA windows, by PCIe bus address. The host reaches it through
/// XDATA and the F2/SCSI engines; the endpoint reaches it by DMA, so an emulated GPU supplies
/// its own system memory here and both sides see the same bytes.
pub trait WindowMemory: Send {
    /// `false` when no window backs the whole range.
    fn read(&mut self, bus: u64, out: &mut [u8]) -> bool;
    fn write(&mut self, bus: u64, data: &[u8]) -> bool;
}

/// Bus ranges of the windows: (bus address, length, XDATA address).
pub const WINDOWS: &[(u64, u64, u16)] = &[
    (xdata::SRAM_BUS, xdata::SRAM_SIZE, xdata::SRAM),
    (xdata::SYS_BUS, xdata::SYS_SIZE, xdata::SYS),
    (xdata::CQ_BUS, 0x1000, xdata::CQ),
    (0x80_0000, 0x200, 0xB000),
];

/// XDATA address → bus address of the window byte it shows (XDATA 0xF000.. shows the first
/// 4 KiB of the SRAM).
pub fn xdata_to_bus(a: u16) -> Option<u64> {
    WINDOWS.iter().find_map(|&(bus, len, x)| {
        let vis = len.min(0x10000 - u64::from(x));
        (a >= x && u64::from(a - x) < vis).then(|| bus + u64::from(a - x))
    })
}

/// Plain host memory for the windows (tests, a gadget without a GPU model).
#[derive(Debug, Clone)]
pub struct Windows {
    pub sram: Vec<u8>,
    pub sys: Vec<u8>,
    pub cq: Vec<u8>,
    pub mock: Vec<u8>,
}

impl WindowMemory for Windows {
    fn read(&mut self, bus: u64, out: &mut [u8]) -> bool {
        self.bus_read(bus, out)
    }
    fn write(&mut self, bus: u64, data: &[u8]) -> bool {
        self.bus_write(bus, data)
    }
}

impl WindowMemory for Arc<Mutex<Windows>> {
    fn read(&mut self, bus: u64, out: &mut [u8]) -> bool {
        self.lock()
            .unwrap_or_else(|e| e.into_inner())
            .bus_read(bus, out)
    }
    fn write(&mut self, bus: u64, data: &[u8]) -> bool {
        self.lock()
            .unwrap_or_else(|e| e.into_inner())
            .bus_write(bus, data)
    }
}

impl Default for Windows {
    fn default() -> Self {
        Windows {
            sram: vec![0; xdata::SRAM_SIZE as usize],
            sys: vec![0; xdata::SYS_SIZE as usize],
            cq: vec![0; 0x1000],
            mock: vec![0; 0x200],
        }
    }
}

impl Windows {
    fn bus_slot(&mut self, addr: u64, len: usize) -> Option<&mut [u8]> {
        let (base, buf): (u64, &mut Vec<u8>) = match addr {
            0x20_0000..=0x27_FFFF => (xdata::SRAM_BUS, &mut self.sram),
            0x82_0000..=0x82_0FFF => (xdata::SYS_BUS, &mut self.sys),
            0x82_2000..=0x82_2FFF => (xdata::CQ_BUS, &mut self.cq),
            0x80_0000..=0x80_01FF => (0x80_0000, &mut self.mock),
            _ => return None,
        };
        let off = (addr - base) as usize;
        buf.get_mut(off..off.checked_add(len)?)
    }
    /// Whether `[addr, addr+len)` is one of the windows (bus addresses).
    pub fn contains(&mut self, addr: u64, len: usize) -> bool {
        self.bus_slot(addr, len).is_some()
    }
    /// Endpoint DMA read from a bus address; `false` when no window backs it.
    pub fn bus_read(&mut self, addr: u64, out: &mut [u8]) -> bool {
        match self.bus_slot(addr, out.len()) {
            Some(s) => {
                out.copy_from_slice(s);
                true
            }
            None => false,
        }
    }
    /// Endpoint DMA write to a bus address; `false` when no window backs it.
    pub fn bus_write(&mut self, addr: u64, data: &[u8]) -> bool {
        match self.bus_slot(addr, data.len()) {
            Some(s) => {
                s.copy_from_slice(data);
                true
            }
            None => false,
        }
    }
}

/// Raw transfers for [`BridgeCore::handle`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packet {
    Control { setup: [u8; 8], data: Vec<u8> },
    BulkOut { ep: u8, stream: u16, data: Vec<u8> },
    BulkIn { ep: u8, stream: u16, len: usize },
}

/// Counters a test or benchmark can read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceStats {
    pub control: u64,
    pub bulk: u64,
    pub tlps: u64,
    pub xdata_writes: u64,
}

#[derive(Debug)]
enum PendingOut {
    Sram { offset: usize, len: usize },
    Stream { addr: u64, dwords: usize },
}

/// A UAS command waiting for its data-out phase.
struct UasWrite {
    lba: u64,
    len: usize,
}

/// Transient failures to inject (tests of the host's retry paths).
#[derive(Debug, Clone, Copy, Default)]
pub struct Inject {
    /// The next n non-posted TLPs report return status 1 (engine error).
    pub tlp_errors: u32,
    /// The next n config reads complete with Configuration Request Retry Status.
    pub config_retries: u32,
}

/// The ASM2464 device model.
pub struct BridgeCore<E> {
    fw: Firmware,
    pub endpoint: E,
    mem: Box<dyn WindowMemory>,
    regs: Vec<u8>,
    gpu_bus: u8,
    bridges: Vec<Vec<u8>>,
    last_cpl: Completion,
    pending_out: Option<PendingOut>,
    pending_stream_in: Option<(u64, usize)>,
    armed_read: Option<(usize, usize)>,
    uas_writes: HashMap<u16, UasWrite>,
    uas_data_in: HashMap<u16, Vec<u8>>,
    uas_status: HashMap<u16, VecDeque<Vec<u8>>>,
    pcie_on: bool,
    pub inject: Inject,
    pub stats: DeviceStats,
}

/// What the trigger dword holds while an SRAM→host read waits for the device.
const CQ_MARKER: u32 = 0xDEAD_5A5A;

/// ASMedia's PCI vendor id and the ASM2464's internal bridge device id (as the model reports).
pub const BRIDGE_VENDOR: u32 = 0x1B21;
pub const BRIDGE_DEVICE: u32 = 0x2464;

impl<E: PcieEndpoint> BridgeCore<E> {
    /// A bridge with 4 internal bridge levels (as tinygrad programs them) in front of
    /// `endpoint`, with plain memory behind its windows.
    pub fn new(fw: Firmware, endpoint: E) -> Self {
        Self::with_memory(fw, endpoint, Box::new(Windows::default()))
    }

    /// Same, with `mem` behind the windows (shared with the endpoint's DMA).
    pub fn with_memory(fw: Firmware, endpoint: E, mem: Box<dyn WindowMemory>) -> Self {
        let gpu_bus = 4u8;
        let bridges = (0..gpu_bus)
            .map(|_| {
                let mut c = vec![0u8; 4096];
                c[0..4].copy_from_slice(&(BRIDGE_VENDOR | BRIDGE_DEVICE << 16).to_le_bytes());
                c[0x0E] = 0x01; // header type 1 (PCI-to-PCI bridge)
                c
            })
            .collect();
        BridgeCore {
            fw,
            endpoint,
            mem,
            regs: vec![0; 0x10000],
            gpu_bus,
            bridges,
            last_cpl: Completion {
                data: 0,
                byte_count: 0,
                status: CplStatus::Success,
                flags: 0,
                ret: 0,
            },
            pending_out: None,
            pending_stream_in: None,
            armed_read: None,
            uas_writes: HashMap::new(),
            uas_data_in: HashMap::new(),
            uas_status: HashMap::new(),
            // The stock firmware trains the link at power-up; the custom one waits for F3.
            pcie_on: fw == Firmware::Stock,
            inject: Inject::default(),
            stats: DeviceStats::default(),
        }
    }

    pub fn firmware(&self) -> Firmware {
        self.fw
    }
    /// Reads window memory by bus address (tests, a gadget's debug output).
    pub fn mem_read(&mut self, bus: u64, out: &mut [u8]) -> bool {
        self.mem.read(bus, out)
    }
    /// Config space of internal bridge `bus` (for tests).
    pub fn bridge_config(&self, bus: u8) -> Option<&[u8]> {
        self.bridges.get(usize::from(bus)).map(Vec::as_slice)
    }

    /// Raw-bytes entry point: one transfer in, its response bytes out.
    pub fn handle(&mut self, p: &Packet) -> Result<Vec<u8>, DeviceError> {
        match p {
            Packet::Control { setup, data } => {
                let s = ControlSetup::from_bytes(setup)?;
                self.control(&s, data)
            }
            Packet::BulkOut { ep, stream, data } => {
                self.bulk_out(*ep, *stream, data).map(|_| vec![])
            }
            Packet::BulkIn { ep, stream, len } => self.bulk_in(*ep, *stream, *len),
        }
    }

    fn read_x(&mut self, a: u16) -> u8 {
        if a == xdata::LTSSM {
            return if self.pcie_on { xdata::LTSSM_L0 } else { 0x11 };
        }
        if let Some(bus) = xdata_to_bus(a) {
            let mut b = [0u8];
            self.mem.read(bus, &mut b);
            return b[0];
        }
        self.regs[usize::from(a)]
    }

    fn write_x(&mut self, a: u16, v: u8) {
        self.stats.xdata_writes += 1;
        if let Some(bus) = xdata_to_bus(a) {
            self.mem.write(bus, &[v]);
            return;
        }
        if a == xdata::TLP_STATUS {
            // Bits 0/1 are write-1-to-clear; bit 2 starts the armed TLP.
            let st = self.regs[usize::from(a)] & !(v & 3);
            self.regs[usize::from(a)] = st;
            if v & 4 != 0 && self.regs[usize::from(xdata::TLP_FIRE)] == 0x0F {
                self.regs[usize::from(xdata::TLP_FIRE)] = 0;
                self.fire_stock_tlp();
            }
            return;
        }
        self.regs[usize::from(a)] = v;
    }

    fn be32(&self, a: u16) -> u32 {
        let i = usize::from(a);
        u32::from_be_bytes([
            self.regs[i],
            self.regs[i + 1],
            self.regs[i + 2],
            self.regs[i + 3],
        ])
    }

    fn fire_stock_tlp(&mut self) {
        let fmt = self.regs[usize::from(xdata::TLP_FMT)];
        let be = self.regs[usize::from(xdata::TLP_BE)];
        let addr =
            u64::from(self.be32(xdata::TLP_ADDR)) | u64::from(self.be32(xdata::TLP_ADDR_HI)) << 32;
        let value = self.be32(xdata::TLP_DATA);
        let c = self.tlp(fmt, be, addr, value);
        if tlp::is_posted(fmt) {
            return;
        }
        let st = usize::from(xdata::TLP_STATUS);
        if c.ret != 0 {
            self.regs[st] |= 0x01;
            return;
        }
        let d = usize::from(xdata::TLP_DATA);
        if !tlp::is_write(fmt) {
            self.regs[d..d + 4].copy_from_slice(&c.data.to_be_bytes());
        }
        let hdr = (u16::from(c.status.bits()) << 13) | (c.byte_count & 0xFFF);
        let h = usize::from(xdata::TLP_CPL_HDR);
        self.regs[h..h + 2].copy_from_slice(&hdr.to_be_bytes());
        self.regs[usize::from(xdata::TLP_CPL_FLAGS)] = u8::from(!tlp::is_write(fmt));
        self.regs[st] |= 0x02;
    }

    /// Executes one TLP of ≤ 4 bytes and returns its completion.
    fn tlp(&mut self, fmt: u8, be: u8, addr: u64, value: u32) -> Completion {
        self.stats.tlps += 1;
        let mut c = Completion {
            data: 0,
            byte_count: 4,
            status: CplStatus::Success,
            flags: 0,
            ret: 0,
        };
        if !tlp::is_posted(fmt) && self.inject.tlp_errors > 0 {
            self.inject.tlp_errors -= 1;
            c.ret = 1;
            return c;
        }
        if !self.pcie_on {
            c.ret = 0xFF;
            return c;
        }
        if tlp::is_config(fmt) {
            if !tlp::is_write(fmt) && self.inject.config_retries > 0 {
                self.inject.config_retries -= 1;
                c.status = CplStatus::ConfigRetry;
                return c;
            }
            let bus = (addr >> 24) as u8;
            let dev = ((addr >> 19) & 0x1F) as u8;
            let reg = (addr & 0xFFC) as u16;
            match self.route_cfg(bus, dev, fmt & 1 == 1) {
                Some(Target::Bridge(b)) => {
                    let cfg = &mut self.bridges[usize::from(b)];
                    let r = usize::from(reg);
                    if tlp::is_write(fmt) {
                        for i in 0..4 {
                            if be & (1 << i) != 0 {
                                cfg[r + i] = (value >> (8 * i)) as u8;
                            }
                        }
                    } else {
                        c.data = u32::from_le_bytes([cfg[r], cfg[r + 1], cfg[r + 2], cfg[r + 3]]);
                    }
                }
                Some(Target::Endpoint) => {
                    if tlp::is_write(fmt) {
                        self.endpoint.cfg_write(reg, value, be);
                    } else {
                        c.data = self.endpoint.cfg_read(reg);
                    }
                }
                None => c.status = CplStatus::UnsupportedRequest,
            }
            return c;
        }
        // Memory.
        if !self.memory_forwarded() {
            c.status = CplStatus::UnsupportedRequest;
            return c;
        }
        if tlp::is_write(fmt) {
            let r = self.endpoint.mem_write(addr, &value.to_le_bytes(), be);
            if let Err(s) = r {
                c.status = s;
            }
        } else {
            self.endpoint.poll();
            let mut b = [0u8; 4];
            match self.endpoint.mem_read(addr, &mut b) {
                Ok(()) => c.data = u32::from_le_bytes(b),
                Err(s) => c.status = s,
            }
        }
        c
    }

    fn bridge_buses(&self, b: u8) -> (u8, u8) {
        let c = &self.bridges[usize::from(b)];
        (c[0x19], c[0x1A])
    }

    /// Where a config request goes: a bridge on buses 0..gpu_bus-1 (device 0 only), or the
    /// endpoint when every bridge on the way forwards to its bus.
    fn route_cfg(&self, bus: u8, dev: u8, type1: bool) -> Option<Target> {
        if dev != 0 || (bus == 0 && type1) || (bus > 0 && !type1) {
            return None;
        }
        for b in 0..bus.min(self.gpu_bus) {
            let (sec, sub) = self.bridge_buses(b);
            if sec != b + 1 || sub < bus {
                return None;
            }
        }
        if bus < self.gpu_bus {
            Some(Target::Bridge(bus))
        } else if bus == self.gpu_bus {
            Some(Target::Endpoint)
        } else {
            None
        }
    }

    fn memory_forwarded(&self) -> bool {
        (0..self.gpu_bus).all(|b| self.bridges[usize::from(b)][4] & 2 != 0)
    }

    /// EP0: a vendor request (custom firmware). Returns the IN data stage.
    pub fn control(&mut self, s: &ControlSetup, data: &[u8]) -> Result<Vec<u8>, DeviceError> {
        self.stats.control += 1;
        if self.fw != Firmware::Custom {
            return Err(DeviceError::Refused(format!(
                "vendor request {:#04x}: the stock firmware speaks UAS",
                s.request
            )));
        }
        match Request::parse(s, data)? {
            Request::ReadXdata { addr, len, .. } => Ok((0..len)
                .map(|i| self.read_x(addr.wrapping_add(i)))
                .collect()),
            Request::WriteXdata { addr, value, .. } => {
                self.write_x(addr, value);
                Ok(vec![])
            }
            Request::Tlp {
                fmt_type,
                byte_enable,
                mode,
                addr,
                value,
                ..
            } => {
                match mode {
                    TlpMode::Single => {
                        let c = self.tlp(fmt_type, byte_enable, addr, value);
                        if !tlp::is_posted(fmt_type) {
                            self.last_cpl = c;
                        }
                    }
                    TlpMode::StreamWrite => {
                        self.pending_out = Some(PendingOut::Stream {
                            addr,
                            dwords: value as usize,
                        })
                    }
                    TlpMode::StreamRead => self.pending_stream_in = Some((addr, value as usize)),
                }
                Ok(vec![])
            }
            Request::TlpCompletion => Ok(self.last_cpl.encode()),
            Request::SramDma {
                to_host,
                sectors,
                first_slot,
                ..
            } => {
                let offset = usize::from(first_slot) * SRAM_SLOT as usize;
                let len = usize::from(sectors) * SECTOR as usize;
                if offset + len > xdata::SRAM_SIZE as usize {
                    return Err(DeviceError::Refused(format!(
                        "F2: {len} bytes at SRAM {offset:#x} exceed the window"
                    )));
                }
                if to_host {
                    self.armed_read = Some((offset, len));
                    // Any device write to the trigger dword replaces this marker.
                    self.mem
                        .write(xdata::CQ_TRIGGER_BUS, &CQ_MARKER.to_le_bytes());
                } else {
                    self.pending_out = Some(PendingOut::Sram { offset, len });
                }
                Ok(vec![])
            }
            Request::PciePower { on } => {
                self.pcie_on = on;
                Ok(vec![])
            }
        }
    }

    /// A bulk OUT transfer.
    pub fn bulk_out(&mut self, ep: u8, stream: u16, data: &[u8]) -> Result<(), DeviceError> {
        self.stats.bulk += 1;
        match (self.fw, ep) {
            (Firmware::Custom, custom_ep::BULK_OUT) => match self.pending_out.take() {
                Some(PendingOut::Sram { offset, len }) => {
                    let n = data.len().min(len);
                    self.mem.write(xdata::SRAM_BUS + offset as u64, &data[..n]);
                    self.endpoint.poll();
                    Ok(())
                }
                Some(PendingOut::Stream { addr, dwords }) => {
                    if data.len() != dwords * 4 {
                        return Err(DeviceError::Refused(format!(
                            "stream write armed for {dwords} dwords got {} bytes",
                            data.len()
                        )));
                    }
                    self.stats.tlps += dwords as u64;
                    if self.pcie_on && self.memory_forwarded() {
                        // A failed posted write is dropped, as on PCIe.
                        let _ = self.endpoint.mem_write(addr, data, 0xF);
                    }
                    Ok(())
                }
                None => Err(DeviceError::Refused(
                    "bulk OUT without an armed F0 stream or F2 transfer".into(),
                )),
            },
            (Firmware::Stock, uas_ep::COMMAND_OUT) => self.uas_command(data),
            (Firmware::Stock, uas_ep::DATA_OUT) => {
                let w = self.uas_writes.remove(&stream).ok_or_else(|| {
                    DeviceError::Refused(format!("data-out on stream {stream} with no WRITE(16)"))
                })?;
                // The LBA is the host's: a huge one must be refused, not overflow.
                let n = data.len().min(w.len);
                let off = w.lba.saturating_mul(SECTOR);
                if off.saturating_add(n as u64) > xdata::SRAM_SIZE {
                    self.queue_sense(stream, 0x02);
                    return Ok(());
                }
                self.mem.write(xdata::SRAM_BUS + off, &data[..n]);
                self.queue_sense(stream, 0);
                self.endpoint.poll();
                Ok(())
            }
            (_, ep) => Err(DeviceError::Refused(format!(
                "bulk OUT on endpoint {ep:#04x}"
            ))),
        }
    }

    fn queue_sense(&mut self, tag: u16, status: u8) {
        self.uas_status
            .entry(tag)
            .or_default()
            .push_back(SenseIu { tag, status }.encode());
    }

    fn uas_command(&mut self, data: &[u8]) -> Result<(), DeviceError> {
        let iu = CommandIu::parse(data)?;
        match iu.cdb {
            Cdb::ReadXdata { addr, len } => {
                self.endpoint.poll();
                let d = (0..u32::from(len))
                    .map(|i| self.read_x((addr + i) as u16))
                    .collect();
                self.uas_data_in.insert(iu.tag, d);
                self.queue_sense(iu.tag, 0);
            }
            Cdb::WriteXdata { addr, value } => {
                self.write_x(addr as u16, value);
                self.queue_sense(iu.tag, 0);
            }
            Cdb::Write16 { lba, sectors } => {
                self.uas_writes.insert(
                    iu.tag,
                    UasWrite {
                        lba,
                        len: sectors as usize * SECTOR as usize,
                    },
                );
            }
        }
        Ok(())
    }

    /// A bulk IN transfer of at most `len` bytes.
    pub fn bulk_in(&mut self, ep: u8, stream: u16, len: usize) -> Result<Vec<u8>, DeviceError> {
        self.stats.bulk += 1;
        match (self.fw, ep) {
            (Firmware::Custom, custom_ep::BULK_IN) => {
                if let Some((addr, dwords)) = self.pending_stream_in.take() {
                    self.endpoint.poll();
                    let mut out = vec![0u8; dwords * 4];
                    self.stats.tlps += dwords as u64;
                    if !self.pcie_on
                        || !self.memory_forwarded()
                        || self.endpoint.mem_read(addr, &mut out).is_err()
                    {
                        // Unsupported Request on a read returns all-ones, as on PCIe.
                        out.iter_mut().for_each(|b| *b = 0xFF);
                    }
                    out.truncate(len);
                    return Ok(out);
                }
                if let Some((off, n)) = self.armed_read {
                    self.endpoint.poll();
                    let mut t = [0u8; 4];
                    self.mem.read(xdata::CQ_TRIGGER_BUS, &mut t);
                    if u32::from_le_bytes(t) == CQ_MARKER {
                        return Err(DeviceError::NotReady(
                            "bulk IN 0x81: SRAM read armed, the GPU has not written the trigger"
                                .into(),
                        ));
                    }
                    self.armed_read = None;
                    let mut out = vec![0u8; n.min(len)];
                    self.mem.read(xdata::SRAM_BUS + off as u64, &mut out);
                    return Ok(out);
                }
                Err(DeviceError::NotReady("bulk IN 0x81: nothing armed".into()))
            }
            (Firmware::Stock, uas_ep::DATA_IN) => self
                .uas_data_in
                .remove(&stream)
                .map(|mut d| {
                    d.truncate(len);
                    d
                })
                .ok_or_else(|| DeviceError::NotReady(format!("data-in on stream {stream}"))),
            (Firmware::Stock, uas_ep::STATUS_IN) => self
                .uas_status
                .get_mut(&stream)
                .and_then(VecDeque::pop_front)
                .ok_or_else(|| DeviceError::NotReady(format!("status on stream {stream}"))),
            (_, ep) => Err(DeviceError::Refused(format!(
                "bulk IN on endpoint {ep:#04x}"
            ))),
        }
    }
}

enum Target {
    Bridge(u8),
    Endpoint,
}

/// Plugs a [`BridgeCore`] in as a [`crate::UsbTransport`] (in-process fake bridge). Clones
/// share the core, so a test keeps one to look at the device while the controller owns another.
pub struct CoreTransport<E> {
    core: Arc<Mutex<BridgeCore<E>>>,
    pub info: crate::BridgeInfo,
}

impl<E> Clone for CoreTransport<E> {
    fn clone(&self) -> Self {
        CoreTransport {
            core: self.core.clone(),
            info: self.info.clone(),
        }
    }
}

impl<E: PcieEndpoint> CoreTransport<E> {
    pub fn new(core: BridgeCore<E>) -> Self {
        let info = crate::BridgeInfo {
            vid: 0xADD1,
            pid: 0x0001,
            product: match core.firmware() {
                Firmware::Custom => "custom v0.1 (emulated)".into(),
                Firmware::Stock => "tiny (emulated)".into(),
            },
            location: "emulated".into(),
            has_uas_alt: core.firmware() == Firmware::Stock,
        };
        CoreTransport {
            core: Arc::new(Mutex::new(core)),
            info,
        }
    }
    /// The device model (locked).
    pub fn core(&self) -> MutexGuard<'_, BridgeCore<E>> {
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn dev_err(what: String, e: DeviceError, timeout: std::time::Duration) -> crate::UsbError {
    match e {
        DeviceError::NotReady(_) => crate::UsbError::Timeout {
            what,
            ms: timeout.as_millis() as u64,
        },
        e => crate::UsbError::Stall {
            what: format!("{what}: {e}"),
        },
    }
}

impl<E: PcieEndpoint> crate::UsbTransport for CoreTransport<E> {
    fn info(&self) -> crate::BridgeInfo {
        self.info.clone()
    }
    fn control_out(
        &mut self,
        setup: &ControlSetup,
        data: &[u8],
        timeout: std::time::Duration,
    ) -> crate::Result<usize> {
        self.core()
            .control(setup, data)
            .map(|_| data.len())
            .map_err(|e| dev_err(format!("control OUT {:#04x}", setup.request), e, timeout))
    }
    fn control_in(
        &mut self,
        setup: &ControlSetup,
        timeout: std::time::Duration,
    ) -> crate::Result<Vec<u8>> {
        self.core()
            .control(setup, &[])
            .map(|mut d| {
                d.truncate(usize::from(setup.length));
                d
            })
            .map_err(|e| dev_err(format!("control IN {:#04x}", setup.request), e, timeout))
    }
    fn bulk_out(
        &mut self,
        ep: u8,
        stream: u16,
        data: &[u8],
        timeout: std::time::Duration,
    ) -> crate::Result<usize> {
        self.core()
            .bulk_out(ep, stream, data)
            .map(|_| data.len())
            .map_err(|e| dev_err(format!("bulk OUT {ep:#04x}"), e, timeout))
    }
    fn bulk_in(
        &mut self,
        ep: u8,
        stream: u16,
        len: usize,
        timeout: std::time::Duration,
    ) -> crate::Result<Vec<u8>> {
        self.core()
            .bulk_in(ep, stream, len)
            .map_err(|e| dev_err(format!("bulk IN {ep:#04x}"), e, timeout))
    }
}
