//! Recording the driverless path's traffic in the schema of tinygrad's reference recordings
//! (`shared/conformance/tinygrad/README.md`): every register access of the AM driver
//! (`mmio_r` / `mmio_w`, named from the generated AM register list, `indirect` when it went
//! through RSMU_INDEX/DATA), PCI config space accesses (`pci_cfg_r` / `pci_cfg_w`), the IP
//! versions found in the discovery table (`device_info`), and every USB transfer to the bridge
//! (`usb_ctrl_out` / `usb_ctrl_in` / `usb_bulk_out` / `usb_bulk_in`). Each works the same on a
//! real device and on the emulated one: the taps sit in the driver, above the [`PciDevice`] and
//! [`UsbTransport`] seams.
//!
//! The hooks pick up the recorder installed with [`crate::record::install`]
//! (`wavescope capture --record-commands`): [`crate::pci::am::AmDevice::boot`] taps its register
//! I/O, [`crate::pci::iface::PciIface::new`] wraps the PCI function, and
//! [`crate::usb::open_bridge`] wraps the transport.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::pci::am::AmIp;
use crate::pci::{PciDevice, PciResult, SysMem};
use crate::platform::Mmio;
use crate::record::{hex, record, SharedRecorder};
use ::usb::proto::ControlSetup;
use ::usb::transport::{BridgeInfo, Transfer, UsbTransport};

/// The recordings' name of an IP block (tinygrad's `am_ip_versions` keys).
pub fn ip_name(ip: AmIp) -> &'static str {
    match ip {
        AmIp::Gc => "GC",
        AmIp::Sdma0 => "SDMA0",
        AmIp::Mmhub => "MMHUB",
        AmIp::Nbio => "NBIO",
        AmIp::Mp0 => "MP0",
        AmIp::Mp1 => "MP1",
        AmIp::Hdp => "HDP",
        AmIp::Osssys => "OSSSYS",
    }
}

/// Sees the AM driver's register accesses; `phase` is the bring-up step in progress (the
/// recordings' `ctx`).
pub struct MmioTap {
    rec: SharedRecorder,
    phase: Mutex<&'static str>,
}

impl MmioTap {
    pub fn new(rec: SharedRecorder) -> Self {
        MmioTap {
            rec,
            phase: Mutex::new("discovery"),
        }
    }
    pub fn set_phase(&self, p: &'static str) {
        *self.phase.lock().unwrap_or_else(|e| e.into_inner()) = p;
    }
    fn ctx(&self) -> String {
        let p = *self.phase.lock().unwrap_or_else(|e| e.into_inner());
        format!("phase:device_open/AmDevice.boot/{p}")
    }
    /// One access: `name` is the register and its IP when the address is a known one.
    pub fn access(
        &self,
        write: bool,
        addr: u32,
        name: Option<(&'static str, AmIp)>,
        val: u32,
        indirect: bool,
    ) {
        record(
            &self.rec,
            json!({
                "ev": if write { "mmio_w" } else { "mmio_r" },
                "reg": hex(addr.into()),
                "name": name.map(|(n, _)| format!("reg{n}")),
                "ip": name.map(|(_, ip)| ip_name(ip)),
                "val": hex(val.into()),
                "indirect": indirect,
                "ctx": self.ctx(),
            }),
        );
    }
    /// Any other event of the bring-up (`device_info`, `firmware`), with this tap's `ctx`.
    pub fn event(&self, mut ev: Value) {
        if let Some(o) = ev.as_object_mut() {
            o.insert("ctx".into(), json!(self.ctx()));
        }
        record(&self.rec, ev);
    }
}

/// A [`PciDevice`] that records config space accesses and forwards everything.
pub struct RecordingPci {
    inner: Arc<dyn PciDevice>,
    rec: SharedRecorder,
}

impl RecordingPci {
    pub fn new(inner: Arc<dyn PciDevice>, rec: SharedRecorder) -> Self {
        RecordingPci { inner, rec }
    }
}

impl PciDevice for RecordingPci {
    fn bus_id(&self) -> String {
        self.inner.bus_id()
    }
    fn config_read(&self, offset: u16, len: u8) -> PciResult<u32> {
        let r = self.inner.config_read(offset, len);
        record(
            &self.rec,
            json!({"ev": "pci_cfg_r", "offset": hex(offset.into()), "args": [hex(len.into())],
                   "ret": r.as_ref().ok().map(|v| hex((*v).into()))}),
        );
        r
    }
    fn config_write(&self, offset: u16, len: u8, value: u32) -> PciResult<()> {
        record(
            &self.rec,
            json!({"ev": "pci_cfg_w", "offset": hex(offset.into()),
                   "args": [hex(value.into()), hex(len.into())], "ret": null}),
        );
        self.inner.config_write(offset, len, value)
    }
    fn bar_len(&self, bar: u8) -> u64 {
        self.inner.bar_len(bar)
    }
    fn bar(&self, bar: u8) -> PciResult<Arc<dyn Mmio>> {
        let r = self.inner.bar(bar);
        // A BAR is mapped read/write and shared (PROT_READ|PROT_WRITE, MAP_SHARED), as
        // tinygrad maps sysfs `resourceN`.
        record(
            &self.rec,
            json!({"ev": "mmap", "path": format!("/sys/bus/pci/devices/{}/resource{bar}", self.inner.bus_id()),
                   "size": hex(self.inner.bar_len(bar)), "prot": 3, "flags": hex(1), "offset": hex(0),
                   "ok": r.is_ok()}),
        );
        r
    }
    fn alloc_sysmem(&self, size: u64) -> PciResult<SysMem> {
        self.inner.alloc_sysmem(size)
    }
    fn free_sysmem(&self, mem: &SysMem) {
        self.inner.free_sysmem(mem)
    }
    fn wait_interrupt(&self, timeout_ms: u32) -> PciResult<bool> {
        self.inner.wait_interrupt(timeout_ms)
    }
}

/// Wraps `pci` when a recorder is installed.
pub fn wrap_pci(pci: Arc<dyn PciDevice>) -> Arc<dyn PciDevice> {
    match crate::record::installed() {
        Some(r) => Arc::new(RecordingPci::new(pci, r)),
        None => pci,
    }
}

fn hexs(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The schema's payload fields: `data` up to 64 bytes, else `head` and `sha256_16`.
fn payload(o: &mut serde_json::Map<String, Value>, b: &[u8]) {
    o.insert("len".into(), json!(b.len()));
    if b.len() <= 64 {
        o.insert("data".into(), json!(hexs(b)));
    } else {
        o.insert("data".into(), Value::Null);
        o.insert("sha256_16".into(), json!(sha256_16(b)));
    }
    o.insert("head".into(), json!(hexs(&b[..b.len().min(16)])));
}

fn ctrl_event(dir_in: bool, s: &ControlSetup, data: &[u8]) -> Value {
    json!({
        "ev": if dir_in { "usb_ctrl_in" } else { "usb_ctrl_out" },
        "bmRequestType": hex(s.request_type.into()), "bRequest": hex(s.request.into()),
        "wValue": hex(s.value.into()), "wIndex": hex(s.index.into()), "wLength": s.length,
        "data": hexs(&data[..data.len().min(64)]),
    })
}

fn bulk_event(dir_in: bool, ep: u8, stream: u16, data: &[u8]) -> Value {
    let mut ev = json!({
        "ev": if dir_in { "usb_bulk_in" } else { "usb_bulk_out" }, "ep": hex(ep.into()),
        "stream": stream,
    });
    payload(ev.as_object_mut().expect("object literal"), data);
    ev
}

/// A [`UsbTransport`] that records every transfer (IN transfers with the data received) and
/// forwards it; a batch ([`UsbTransport::submit`]) stays one submission to the inner transport.
pub struct RecordingTransport {
    inner: Box<dyn UsbTransport>,
    rec: SharedRecorder,
}

impl RecordingTransport {
    pub fn new(inner: Box<dyn UsbTransport>, rec: SharedRecorder) -> Self {
        RecordingTransport { inner, rec }
    }
}

impl UsbTransport for RecordingTransport {
    fn info(&self) -> BridgeInfo {
        self.inner.info()
    }
    fn control_out(
        &mut self,
        setup: &ControlSetup,
        data: &[u8],
        timeout: Duration,
    ) -> ::usb::Result<usize> {
        record(&self.rec, ctrl_event(false, setup, data));
        self.inner.control_out(setup, data, timeout)
    }
    fn control_in(&mut self, setup: &ControlSetup, timeout: Duration) -> ::usb::Result<Vec<u8>> {
        let r = self.inner.control_in(setup, timeout)?;
        record(&self.rec, ctrl_event(true, setup, &r));
        Ok(r)
    }
    fn bulk_out(
        &mut self,
        ep: u8,
        stream: u16,
        data: &[u8],
        timeout: Duration,
    ) -> ::usb::Result<usize> {
        record(&self.rec, bulk_event(false, ep, stream, data));
        self.inner.bulk_out(ep, stream, data, timeout)
    }
    fn bulk_in(
        &mut self,
        ep: u8,
        stream: u16,
        len: usize,
        timeout: Duration,
    ) -> ::usb::Result<Vec<u8>> {
        let r = self.inner.bulk_in(ep, stream, len, timeout)?;
        record(&self.rec, bulk_event(true, ep, stream, &r));
        Ok(r)
    }
    fn submit(&mut self, batch: &[Transfer], timeout: Duration) -> ::usb::Result<Vec<Vec<u8>>> {
        let out = self.inner.submit(batch, timeout)?;
        self.record_batch(batch, &out);
        Ok(out)
    }
    fn submit_streamed(
        &mut self,
        batch: &[Transfer],
        free: &[bool],
        depth: usize,
        timeout: Duration,
    ) -> ::usb::Result<(Vec<Vec<u8>>, ::usb::StreamReport)> {
        let (out, report) = self.inner.submit_streamed(batch, free, depth, timeout)?;
        self.record_batch(batch, &out);
        Ok((out, report))
    }
}

impl RecordingTransport {
    /// Records a finished batch in submission order (IN transfers with their data).
    fn record_batch(&self, batch: &[Transfer], out: &[Vec<u8>]) {
        for (t, got) in batch.iter().zip(out) {
            let ev = match t {
                Transfer::ControlOut { setup, data } => ctrl_event(false, setup, data),
                Transfer::ControlIn { setup } => ctrl_event(true, setup, got),
                Transfer::BulkOut { ep, stream, data } => bulk_event(false, *ep, *stream, data),
                Transfer::BulkIn { ep, stream, .. } => bulk_event(true, *ep, *stream, got),
            };
            record(&self.rec, ev);
        }
    }
}

/// Wraps `t` when a recorder is installed.
pub fn wrap_transport(t: Box<dyn UsbTransport>) -> Box<dyn UsbTransport> {
    match crate::record::installed() {
        Some(r) => Box::new(RecordingTransport::new(t, r)),
        None => t,
    }
}

/// The schema's `sha256_16`: the first 16 hex digits of SHA-256.
fn sha256_16(b: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(b)[..8]
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// The `device_info` event of the driverless path: the target and the IP versions and bases
/// found in the discovery table (the recordings' `am_ip_versions`, `am_regs_offset`).
pub fn device_info(disc: &crate::pci::am::discovery::Discovery, vram_size: u64) -> Value {
    let mut vers = serde_json::Map::new();
    let mut bases = serde_json::Map::new();
    for ip in crate::pci::am::ALL_IPS {
        if let Ok(i) = disc.ip(ip) {
            let (a, b, c) = i.version;
            vers.insert(ip_name(ip).into(), json!([a, b, c]));
            bases.insert(
                ip_name(ip).into(),
                json!(i.bases.iter().map(|x| hex((*x).into())).collect::<Vec<_>>()),
            );
        }
    }
    let target = disc.props().ok().map(|p| p.target());
    json!({
        "ev": "device_info",
        "arch": target.map(|t| t.to_string()),
        "iface": "PciIface",
        "am_ip_versions": vers,
        "am_regs_offset": bases,
        "vram_size": hex(vram_size),
    })
}

/// The `firmware` event of one loaded file: name, size and SHA-256 of its contents.
pub fn firmware_event(dir: &std::path::Path, name: &str) -> Value {
    use sha2::{Digest, Sha256};
    let b = std::fs::read(dir.join(name)).unwrap_or_default();
    let d: String = Sha256::digest(&b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect();
    json!({"ev": "firmware", "name": name, "size": b.len(), "sha256": d})
}
