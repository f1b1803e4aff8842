//! Recording what the runtime sends to a GPU, in the event schema of tinygrad's reference
//! recordings (`shared/conformance/tinygrad/README.md`): KFD ioctls with their argument
//! structs, every PM4 packet decoded (registers named from [`crate::regs`], the other opcodes
//! with the fields of [`crate::pm4`]) and grouped by the operation that emitted it, and every
//! SDMA packet. A [`CommandRecorder`] sees the events; [`JsonlRecorder`] writes them one JSON
//! object a line, [`MemoryRecorder`] keeps them (tests, `conform`).
//!
//! Hooks: [`RecordingPlatform`] wraps any [`Platform`] (the KFD path's ioctls);
//! [`crate::Device::set_command_recorder`] sees the PM4 and SDMA submissions; the driverless
//! path's register accesses, PCI config space and USB transfers are recorded by
//! [`crate::record_io`].

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};

use crate::kfd::ioctl::{self as kio, ioctl_name};
use crate::platform::{Errno, Fd, Mmio, Platform};
use crate::pm4::{self, Packet};
use crate::queue::GfxContext;
use crate::regs::{IpRegs, RegDef};
use crate::sdma::SdmaPacket;

/// Sees every event; `ev` is one object of the schema without `seq` (the recorder numbers).
pub trait CommandRecorder: Send {
    fn record(&mut self, ev: Value);
}

/// A recorder shared by the hooks of one device.
pub type SharedRecorder = Arc<Mutex<dyn CommandRecorder>>;

/// Keeps the events in memory.
#[derive(Debug, Default)]
pub struct MemoryRecorder {
    pub events: Vec<Value>,
}

impl CommandRecorder for MemoryRecorder {
    fn record(&mut self, mut ev: Value) {
        if let Some(o) = ev.as_object_mut() {
            o.insert("seq".into(), json!(self.events.len()));
        }
        self.events.push(ev);
    }
}

/// Writes each event as one JSON line (write errors are kept and reported by [`Self::finish`]).
pub struct JsonlRecorder {
    out: Box<dyn Write + Send>,
    seq: u64,
    err: Option<std::io::Error>,
}

impl JsonlRecorder {
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        JsonlRecorder {
            out,
            seq: 0,
            err: None,
        }
    }
    pub fn create(path: &std::path::Path) -> std::io::Result<Self> {
        let f = std::fs::File::create(path)?;
        Ok(Self::new(Box::new(std::io::BufWriter::new(f))))
    }
    /// Flushes; the first write error if there was one.
    pub fn finish(&mut self) -> std::io::Result<()> {
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        self.out.flush()
    }
}

impl CommandRecorder for JsonlRecorder {
    fn record(&mut self, mut ev: Value) {
        if let Some(o) = ev.as_object_mut() {
            o.insert("seq".into(), json!(self.seq));
        }
        self.seq += 1;
        if self.err.is_none() {
            if let Err(e) = writeln!(self.out, "{ev}") {
                self.err = Some(e);
            }
        }
    }
}

/// The recorder the driver paths pick up by themselves (KFD ioctls in
/// [`crate::kfd::KfdIface::open`], submissions in [`crate::Device::new`]): for a front end that
/// opens devices through code it does not own (`wavescope capture --record-commands`). Code
/// that opens the device itself passes its recorder explicitly instead.
static INSTALLED: Mutex<Option<SharedRecorder>> = Mutex::new(None);

/// Installs (or with `None` removes) the process-wide recorder for devices opened from now on.
pub fn install(rec: Option<SharedRecorder>) {
    *INSTALLED.lock().unwrap_or_else(|e| e.into_inner()) = rec;
}

/// The installed recorder, if any.
pub fn installed() -> Option<SharedRecorder> {
    INSTALLED.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

fn emit(rec: &SharedRecorder, ev: Value) {
    // A poisoned lock only means another recording thread panicked; keep recording.
    let mut g = rec.lock().unwrap_or_else(|e| e.into_inner());
    g.record(ev);
}

/// Sends `ev` to the shared recorder.
pub fn record(rec: &SharedRecorder, ev: Value) {
    emit(rec, ev);
}

/// A doorbell write: `queue` (`compute`, `sdma0`) and the write pointer it announces
/// (`put_value`: compute dwords, SDMA bytes), the value written to the doorbell.
pub fn doorbell_event(queue: &str, put_value: u64) -> Value {
    json!({"ev": "doorbell", "queue": queue, "put_value": put_value, "doorbell_value": put_value})
}

pub fn hex(v: u64) -> Value {
    Value::String(format!("{v:#x}"))
}

// ---- KFD ioctls ----

/// A [`Platform`] that records every ioctl (name, request, the argument struct before the call
/// as `in`, the fields the call changed as `out_changed`, `rc`) and forwards everything.
/// Also records sysfs reads (`file_read`), directory listings (`file_listdir`, with the
/// entries) and mappings (`mmap`: the opened file's path, size, offset, protection; `flags`
/// MAP_SHARED, plus MAP_FIXED when placed at a reserved address).
pub struct RecordingPlatform {
    inner: Arc<dyn Platform>,
    rec: SharedRecorder,
    /// Path of each open fd (an `mmap` event names the file, as tinygrad's do).
    paths: Mutex<std::collections::HashMap<i32, String>>,
}

impl RecordingPlatform {
    pub fn new(inner: Arc<dyn Platform>, rec: SharedRecorder) -> Self {
        RecordingPlatform {
            inner,
            rec,
            paths: Mutex::default(),
        }
    }
}

/// `mmap` protection the platform layer maps with (PROT_READ | PROT_WRITE).
const PROT_RW: u64 = 3;
const MAP_SHARED: u64 = 0x1;
const MAP_FIXED: u64 = 0x10;

/// The argument struct's fields by their kernel names (`kfd_ioctl.h`), for the structs the
/// runtime uses; other requests give `None` (then `in_hex` carries the bytes).
pub fn ioctl_fields(request: u64, b: &[u8]) -> Option<Map<String, Value>> {
    let mut m = Map::new();
    let mut put = |k: &str, v: u64| {
        m.insert(k.into(), json!(v));
    };
    match request {
        kio::AMDKFD_IOC_GET_VERSION => {
            let a = kio::GetVersionArgs::from_bytes(b)?;
            put("major_version", a.major.into());
            put("minor_version", a.minor.into());
        }
        kio::AMDKFD_IOC_ACQUIRE_VM => {
            let a = kio::AcquireVmArgs::from_bytes(b)?;
            put("drm_fd", a.drm_fd.into());
            put("gpu_id", a.gpu_id.into());
        }
        kio::AMDKFD_IOC_RUNTIME_ENABLE => {
            let a = kio::RuntimeEnableArgs::from_bytes(b)?;
            put("r_debug", a.r_debug);
            put("mode_mask", a.mode_mask.into());
            put("capabilities_mask", a.capabilities_mask.into());
        }
        kio::AMDKFD_IOC_ALLOC_MEMORY_OF_GPU => {
            let a = kio::AllocMemoryArgs::from_bytes(b)?;
            put("va_addr", a.va_addr);
            put("size", a.size);
            put("handle", a.handle);
            put("mmap_offset", a.mmap_offset);
            put("gpu_id", a.gpu_id.into());
            put("flags", a.flags.into());
        }
        kio::AMDKFD_IOC_FREE_MEMORY_OF_GPU => {
            put("handle", kio::FreeMemoryArgs::from_bytes(b)?.handle);
        }
        kio::AMDKFD_IOC_MAP_MEMORY_TO_GPU | kio::AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU => {
            let a = kio::MapMemoryArgs::from_bytes(b)?;
            put("handle", a.handle);
            put("device_ids_array_ptr", a.device_ids_array_ptr);
            put("n_devices", a.n_devices.into());
            put("n_success", a.n_success.into());
        }
        kio::AMDKFD_IOC_CREATE_QUEUE => {
            let a = kio::CreateQueueArgs::from_bytes(b)?;
            put("ring_base_address", a.ring_base_address);
            put("write_pointer_address", a.write_pointer_address);
            put("read_pointer_address", a.read_pointer_address);
            put("doorbell_offset", a.doorbell_offset);
            put("ring_size", a.ring_size.into());
            put("gpu_id", a.gpu_id.into());
            put("queue_type", a.queue_type.into());
            put("queue_percentage", a.queue_percentage.into());
            put("queue_priority", a.queue_priority.into());
            put("queue_id", a.queue_id.into());
            put("eop_buffer_address", a.eop_buffer_address);
            put("eop_buffer_size", a.eop_buffer_size);
            put("ctx_save_restore_address", a.ctx_save_restore_address);
            put("ctx_save_restore_size", a.ctx_save_restore_size.into());
            put("ctl_stack_size", a.ctl_stack_size.into());
            put("sdma_engine_id", a.sdma_engine_id.into());
        }
        kio::AMDKFD_IOC_CREATE_EVENT => {
            let a = kio::CreateEventArgs::from_bytes(b)?;
            put("event_page_offset", a.event_page_offset);
            put("event_trigger_data", a.event_trigger_data.into());
            put("event_type", a.event_type.into());
            put("auto_reset", a.auto_reset.into());
            put("node_id", a.node_id.into());
            put("event_id", a.event_id.into());
            put("event_slot_index", a.event_slot_index.into());
        }
        kio::AMDKFD_IOC_WAIT_EVENTS => {
            let a = kio::WaitEventsArgs::from_bytes(b)?;
            put("events_ptr", a.events_ptr);
            put("num_events", a.num_events.into());
            put("wait_for_all", a.wait_for_all.into());
            put("timeout", a.timeout.into());
            put("wait_result", a.wait_result.into());
        }
        _ => return None,
    }
    Some(m)
}

fn hex_bytes(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl Platform for RecordingPlatform {
    fn open(&self, path: &str) -> Result<Fd, Errno> {
        let fd = self.inner.open(path)?;
        self.paths
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(fd.0, path.to_string());
        Ok(fd)
    }
    fn close(&self, fd: Fd) {
        self.paths
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&fd.0);
        self.inner.close(fd)
    }
    fn ioctl(
        &self,
        fd: Fd,
        request: u64,
        arg: &mut [u8],
        aux: &mut [&mut [u8]],
    ) -> Result<(), Errno> {
        let before = arg.to_vec();
        let r = self.inner.ioctl(fd, request, arg, aux);
        let mut ev = json!({
            "ev": "ioctl",
            "path": "/dev/kfd",
            "request": hex(request),
            "nr": hex(request & 0xFF),
            "size": kio::ioc_size(request),
            "name": ioctl_name(request),
            "rc": match r { Ok(()) => 0, Err(e) => -e.0 },
        });
        let o = ev.as_object_mut().expect("object literal");
        match (ioctl_fields(request, &before), ioctl_fields(request, arg)) {
            (Some(i), Some(out)) => {
                let changed: Map<String, Value> = out
                    .into_iter()
                    .filter(|(k, v)| i.get(k) != Some(v))
                    .collect();
                o.insert("in".into(), Value::Object(i));
                o.insert("out_changed".into(), Value::Object(changed));
            }
            _ => {
                o.insert("in_hex".into(), json!(hex_bytes(&before)));
                o.insert("out_hex".into(), json!(hex_bytes(arg)));
            }
        }
        emit(&self.rec, ev);
        r
    }
    fn read_file(&self, path: &str) -> Result<String, Errno> {
        let r = self.inner.read_file(path);
        let data: String = r.as_deref().unwrap_or("").chars().take(400).collect();
        emit(
            &self.rec,
            json!({"ev": "file_read", "path": path, "offset": null, "size": null,
                   "data": data, "rc": match &r { Ok(_) => 0, Err(e) => -e.0 }}),
        );
        r
    }
    fn read_dir(&self, path: &str) -> Result<Vec<String>, Errno> {
        let r = self.inner.read_dir(path);
        let mut entries = r.clone().unwrap_or_default();
        entries.sort();
        emit(
            &self.rec,
            json!({"ev": "file_listdir", "path": path, "entries": entries,
                   "rc": match &r { Ok(_) => 0, Err(e) => -e.0 }}),
        );
        r
    }
    fn exists(&self, path: &str) -> bool {
        self.inner.exists(path)
    }
    fn reserve_va(&self, len: u64) -> Result<u64, Errno> {
        self.inner.reserve_va(len)
    }
    fn release_va(&self, addr: u64, len: u64) {
        self.inner.release_va(addr, len)
    }
    fn mmap(
        &self,
        fd: Fd,
        offset: u64,
        len: u64,
        fixed: Option<u64>,
    ) -> Result<Arc<dyn Mmio>, Errno> {
        let r = self.inner.mmap(fd, offset, len, fixed);
        let path = self
            .paths
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&fd.0)
            .cloned()
            .unwrap_or_else(|| format!("fd:{}", fd.0));
        let flags = MAP_SHARED | if fixed.is_some() { MAP_FIXED } else { 0 };
        emit(
            &self.rec,
            json!({"ev": "mmap", "path": path, "start": hex(fixed.unwrap_or(0)), "size": hex(len),
                   "prot": PROT_RW, "flags": hex(flags), "offset": hex(offset),
                   "rc": match &r { Ok(_) => 0, Err(e) => -e.0 }}),
        );
        r
    }
    fn anon_mmap(&self, len: u64) -> Result<Arc<dyn Mmio>, Errno> {
        self.inner.anon_mmap(len)
    }
}

// ---- PM4 ----

/// The register at absolute dword address `addr` in `gc`'s table, if any.
pub fn reg_at(gc: &IpRegs, addr: u32) -> Option<&'static RegDef> {
    gc.table.regs.iter().find(|d| {
        gc.bases
            .get(usize::from(d.base_index))
            .is_some_and(|b| b + d.offset == addr)
    })
}

/// The non-zero fields of `v` in register `d` (name -> value), as tinygrad's `fields`.
pub fn reg_fields(d: &RegDef, v: u32) -> Map<String, Value> {
    let mut m = Map::new();
    for f in d.fields {
        let x = f.get(v);
        if x != 0 {
            m.insert(f.name.to_lowercase(), json!(x));
        }
    }
    m
}

fn reg_name(ctx: &GfxContext, addr: u32) -> Value {
    // The HDP flush pair lives in NBIO, not GC.
    if addr == ctx.hdp_flush_req {
        return json!(format!("reg{}", ctx.hdp_flush_names.0));
    }
    if addr == ctx.hdp_flush_done {
        return json!(format!("reg{}", ctx.hdp_flush_names.1));
    }
    match reg_at(&ctx.gc, addr) {
        Some(d) => json!(format!("reg{}", d.name)),
        None => Value::Null,
    }
}

fn event_name(t: u32) -> Value {
    match t {
        pm4::event::CS_PARTIAL_FLUSH => json!("CS_PARTIAL_FLUSH"),
        pm4::event::CACHE_FLUSH_AND_INV_TS_EVENT => json!("CACHE_FLUSH_AND_INV_TS_EVENT"),
        pm4::event::THREAD_TRACE_MARKER => json!("THREAD_TRACE_MARKER"),
        pm4::event::THREAD_TRACE_FINISH => json!("THREAD_TRACE_FINISH"),
        _ => Value::Null,
    }
}

fn op_name(opcode: u8) -> String {
    match opcode {
        pm4::op::NOP => "NOP",
        pm4::op::DISPATCH_DIRECT => "DISPATCH_DIRECT",
        pm4::op::ATOMIC_MEM => "ATOMIC_MEM",
        pm4::op::PRED_EXEC => "PRED_EXEC",
        pm4::op::WAIT_REG_MEM => "WAIT_REG_MEM",
        pm4::op::INDIRECT_BUFFER => "INDIRECT_BUFFER",
        pm4::op::COPY_DATA => "COPY_DATA",
        pm4::op::EVENT_WRITE => "EVENT_WRITE",
        pm4::op::RELEASE_MEM => "RELEASE_MEM",
        pm4::op::ACQUIRE_MEM => "ACQUIRE_MEM",
        pm4::op::SET_SH_REG => "SET_SH_REG",
        pm4::op::SET_UCONFIG_REG => "SET_UCONFIG_REG",
        o => return format!("OP_{o:#x}"),
    }
    .to_string()
}

/// The `decoded` object of a non-register packet, with tinygrad's field names.
fn decoded(p: &Packet<'_>, payload: &[u32], gc: &GfxContext) -> Value {
    match p {
        Packet::WaitRegMem(w) => {
            let mut v = json!({
                "function": w.function, "mem_space": u32::from(w.mem_space),
                "operation": w.operation, "engine": w.engine, "ref": hex(w.reference.into()),
                "mask": hex(w.mask.into()), "poll_interval": w.poll_interval,
            });
            let o = v.as_object_mut().expect("object literal");
            if w.mem_space {
                o.insert("addr".into(), hex(w.addr));
            } else {
                let (a, b) = (w.reg_a(), w.reg_b());
                o.insert("reg".into(), hex(a.into()));
                o.insert("reg_name".into(), reg_name(gc, a));
                o.insert("reg_done".into(), hex(b.into()));
                o.insert("reg_done_name".into(), reg_name(gc, b));
            }
            v
        }
        Packet::AcquireMem(a) => {
            let mut v = json!({
                "coher_cntl": hex(a.coher_cntl.into()), "size": hex(a.coher_size),
                "base": hex(a.coher_base), "poll_interval": hex(a.poll_interval.into()),
            });
            // gfx9's ACQUIRE_MEM has no GCR_CNTL dword.
            if let Some(g) = a.gcr_cntl {
                v.as_object_mut()
                    .expect("object literal")
                    .insert("gcr_cntl".into(), hex(g.into()));
            }
            v
        }
        Packet::ReleaseMem(r) => json!({
            "event_type": hex(r.event_type.into()), "event_index": r.event_index,
            "gcr_or_cache_bits": hex(r.gcr.into()), "data_sel": r.data_sel,
            "int_sel": r.int_sel, "dst_sel": r.dst_sel, "addr": hex(r.addr),
            "data": hex(r.data), "ctxid": hex(r.int_ctxid.into()),
            "event_name": event_name(r.event_type),
        }),
        Packet::EventWrite {
            event_type,
            event_index,
        } => json!({
            "event_type": hex((*event_type).into()), "event_name": event_name(*event_type),
            "event_index": event_index,
        }),
        Packet::DispatchDirect { dim, initiator } => json!({
            "dim_x": dim[0], "dim_y": dim[1], "dim_z": dim[2], "initiator": hex((*initiator).into()),
        }),
        Packet::CopyData(c) => {
            let mut v = json!({
                "control": hex(payload.first().copied().unwrap_or(0).into()),
                "src_sel": c.src_sel, "dst_sel": c.dst_sel,
                "wr_confirm": u32::from(c.wr_confirm), "src": hex(c.src), "dst": hex(c.dst),
            });
            if c.src_sel == pm4::CopyData::SRC_REG_PERF || c.src_sel == pm4::CopyData::SRC_REG {
                v.as_object_mut()
                    .expect("object literal")
                    .insert("src_name".into(), reg_name(gc, c.src as u32));
            }
            v
        }
        Packet::IndirectBuffer {
            addr,
            size_dw,
            valid,
        } => json!({"addr": hex(*addr), "size_dw": size_dw, "valid": valid}),
        Packet::AtomicMem {
            atomic,
            addr,
            src,
            cmp,
            loop_interval,
        } => {
            json!({"atomic": atomic, "addr": hex(*addr), "src": hex(*src), "cmp": hex(*cmp), "loop_interval": loop_interval})
        }
        Packet::PredExec { xcc_mask, dwords } => {
            json!({"xcc_mask": hex((*xcc_mask).into()), "dwords": dwords})
        }
        Packet::Nop { dwords } => json!({ "dwords": dwords }),
        Packet::SetReg { .. } => Value::Null,
    }
}

/// The `pm4_submit` event and one `pm4` event per packet of `words`; `groups` are the dword
/// offsets where each operation's packets begin (the operation of a packet is the last mark at
/// or before it). Undecodable words end the walk with an `error` event.
pub fn pm4_events(
    words: &[u32],
    groups: &[(usize, &'static str)],
    ctx: &GfxContext,
    submit: u64,
    queue: &str,
) -> Vec<Value> {
    let mut out = vec![json!({
        "ev": "pm4_submit", "submit": submit, "queue": queue, "bound": false, "ndw": words.len(),
    })];
    let mut off = 0usize;
    let mut pkt = 0usize;
    while off < words.len() {
        let hdr = words[off];
        let h = match pm4::parse_header(hdr) {
            Ok(h) => h,
            Err(e) => {
                out.push(
                    json!({"ev": "error", "submit": submit, "dw_off": off, "error": e.to_string()}),
                );
                break;
            }
        };
        let end = (off + 1 + h.payload).min(words.len());
        let payload = &words[off + 1..end];
        let group = groups
            .iter()
            .rev()
            .find(|(at, _)| *at <= off)
            .map_or("(none)", |(_, g)| *g);
        let mut ev = json!({
            "ev": "pm4", "submit": submit, "pkt": pkt, "dw_off": off, "hdr": hex(hdr.into()),
            "opcode": h.opcode, "op": op_name(h.opcode), "count": h.payload - 1,
            "payload": payload.iter().map(|w| hex((*w).into())).collect::<Vec<_>>(),
            "group": group, "path": group,
        });
        let o = ev.as_object_mut().expect("object literal");
        match Packet::decode(h, payload) {
            Ok(Packet::SetReg {
                uconfig,
                offset,
                values,
            }) => {
                let base = if uconfig {
                    pm4::UCONFIG_REG_BASE
                } else {
                    pm4::SH_REG_BASE
                };
                o.insert("reg_off".into(), hex(offset.into()));
                let regs: Vec<Value> = values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        let addr = base + offset + i as u32;
                        let d = reg_at(&ctx.gc, addr);
                        json!({
                            "addr": hex(addr.into()),
                            "name": d.map(|d| format!("reg{}", d.name)),
                            "val": hex((*v).into()),
                            "fields": d.map(|d| Value::Object(reg_fields(d, *v))).unwrap_or(Value::Null),
                        })
                    })
                    .collect();
                o.insert("regs".into(), Value::Array(regs));
            }
            Ok(p) => {
                o.insert("decoded".into(), decoded(&p, payload, ctx));
            }
            Err(e) => {
                o.insert("decode_error".into(), json!(e.to_string()));
            }
        }
        out.push(ev);
        off = end;
        pkt += 1;
    }
    out
}

// ---- SDMA ----

/// The `sdma_submit` event and one `sdma` event per packet (`sizes` and `groups` per packet, as
/// [`crate::queue::CopyCmds`] keeps them).
pub fn sdma_events(
    words: &[u32],
    sizes: &[usize],
    groups: &[&'static str],
    submit: u64,
) -> Vec<Value> {
    let mut out =
        vec![json!({"ev": "sdma_submit", "submit": submit, "queue": "sdma0", "ndw": words.len()})];
    let mut off = 0usize;
    for (i, &n) in sizes.iter().enumerate() {
        let w = words.get(off..off + n).unwrap_or(&[]);
        let group = groups.get(i).copied().unwrap_or("(none)");
        let (op, d) = match SdmaPacket::decode(w) {
            Ok(SdmaPacket::CopyLinear { bytes, src, dst }) => (
                "COPY",
                json!({"bytes": bytes, "param": hex(w.get(2).copied().unwrap_or(0).into()),
                       "src": hex(src), "dst": hex(dst)}),
            ),
            Ok(SdmaPacket::Fence { mtype, addr, data }) => (
                "FENCE",
                json!({"mtype": mtype, "addr": hex(addr), "data": hex(data.into())}),
            ),
            Ok(SdmaPacket::Trap { int_context }) => ("TRAP", json!({ "int_context": int_context })),
            Ok(SdmaPacket::PollRegmem {
                hdp_flush,
                function,
                mem_poll,
                addr,
                reference,
                mask,
                interval,
                retry,
            }) => (
                "POLL_REGMEM",
                json!({"func": function, "mem_poll": u32::from(mem_poll), "hdp_flush": u32::from(hdp_flush),
                       "addr": hex(addr), "value": hex(reference.into()), "mask": hex(mask.into()),
                       "interval": interval, "retry_count": retry}),
            ),
            Ok(SdmaPacket::Timestamp { addr }) => ("TIMESTAMP", json!({"addr": hex(addr)})),
            Ok(SdmaPacket::Write { dst, count }) => {
                ("WRITE", json!({"dst": hex(dst), "count": count}))
            }
            Ok(SdmaPacket::GcrReq) => ("GCR_REQ", json!({})),
            Ok(SdmaPacket::Nop) => ("NOP", json!({})),
            Ok(SdmaPacket::DummyTrap) => ("DUMMY_TRAP", json!({})),
            Ok(SdmaPacket::Indirect {
                vmid,
                addr,
                size_dw,
                csa,
            }) => (
                "INDIRECT",
                json!({"vmid": vmid, "addr": hex(addr), "size_dw": size_dw, "csa": hex(csa)}),
            ),
            Err(e) => ("(undecodable)", json!({ "error": e.to_string() })),
        };
        out.push(json!({
            "ev": "sdma", "submit": submit, "pkt": i, "dw_off": off, "group": group, "path": group,
            "op": op, "ndw": n, "dwords": w.iter().map(|x| hex((*x).into())).collect::<Vec<_>>(),
            "decoded": d,
        }));
        off += n;
    }
    out
}
