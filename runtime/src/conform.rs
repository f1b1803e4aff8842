//! Comparing two command recordings (ours from [`crate::record`], a reference such as
//! tinygrad's in `shared/conformance/tinygrad`) per operation, after normalising what
//! legitimately differs. Each normalisation is listed here and in `docs/conformance.md`:
//!
//! * **Addresses and handles**: GPU/host virtual addresses (packet `addr`/`src`/`dst`/`base`,
//!   COMPUTE_PGM_LO/HI, COMPUTE_USER_DATA_*, scratch and SQTT buffer bases, ioctl pointers and
//!   handles) differ with every allocation.
//! * **Our own values**: signal values and timeline counters (WAIT_REG_MEM/POLL_REGMEM
//!   reference on memory, RELEASE_MEM/FENCE data, interrupt context ids), and the SQTT marker
//!   payloads (SQ_THREAD_TRACE_USERDATA_2/3: a PSO hash and command ids of the driver's choice).
//! * **Sizes of our own buffers**: SQ_THREAD_TRACE_BUF0_SIZE.size / SQ_THREAD_TRACE_SIZE
//!   (the SQTT buffer per SE), COPY byte counts, allocation sizes.
//! * **Multiplicity inside an operation** is not compared: the values each register takes in
//!   an operation, and the distinct packets of each kind, are compared as sets (how often
//!   tinygrad's driver runs an operation depends on its workload). **Order** is compared where
//!   the hardware cares, by [`crate::conform_order`]; doorbells, sysfs reads and mappings by
//!   [`crate::conform_host`]. Registers written while GRBM_GFX_INDEX selects one SE are named per SE
//!   (`SQ_THREAD_TRACE_CTRL[se2]`), so per-SE programming is compared per SE.
//!
//! What remains is reported per operation (the recording's `group`): registers written by one
//! side only, register fields whose values differ (decoded with the register tables of
//! [`crate::regs`]), packets present on one side only, and packet fields that differ. A
//! difference can be accepted with a reason ([`ACCEPTED`]); the evidence is in
//! `docs/conformance.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value;

use crate::regs::{self, IpTable};

/// What kind of difference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Register written by us, not by the reference (in this operation).
    RegisterOursOnly,
    RegisterReferenceOnly,
    /// Register written by both; the field takes other values.
    FieldDiffers,
    PacketOursOnly,
    PacketReferenceOnly,
    /// Same packet kind; the field takes other values.
    PacketFieldDiffers,
    OperationOursOnly,
    OperationReferenceOnly,
    IoctlOursOnly,
    IoctlReferenceOnly,
    IoctlFieldDiffers,
    /// The order of steps or of first register writes differs ([`crate::conform_io`]).
    OrderDiffers,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The operation (`exec`, `sqtt_start`, ..., `ioctl`).
    pub op: String,
    pub kind: Kind,
    /// Register (`SQ_THREAD_TRACE_CTRL[se0]`), packet kind (`RELEASE_MEM/CACHE_FLUSH_AND_INV_TS_EVENT`)
    /// or ioctl name.
    pub what: String,
    pub field: Option<String>,
    pub ours: String,
    pub reference: String,
    /// Why this difference is accepted (see `docs/conformance.md`), if it is.
    pub accepted: Option<&'static str>,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {:?} {}", self.op, self.kind, self.what)?;
        if let Some(fl) = &self.field {
            write!(f, ".{fl}")?;
        }
        write!(f, ": ours {} reference {}", self.ours, self.reference)?;
        if let Some(a) = self.accepted {
            write!(f, " (accepted: {a})")?;
        }
        Ok(())
    }
}

/// The verdict of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Match,
    /// Every difference is accepted.
    Accepted(usize),
    Differs(usize),
}

#[derive(Debug, Clone, Default)]
pub struct Report {
    pub differences: Vec<Difference>,
    /// Operations compared, with how many registers/packet kinds each side had.
    pub compared: BTreeMap<String, (usize, usize)>,
}

impl Report {
    pub fn verdict(&self) -> Verdict {
        let bad = self
            .differences
            .iter()
            .filter(|d| d.accepted.is_none())
            .count();
        if self.differences.is_empty() {
            Verdict::Match
        } else if bad == 0 {
            Verdict::Accepted(self.differences.len())
        } else {
            Verdict::Differs(bad)
        }
    }
}

/// An accepted difference: (arch prefix or "", operation, what prefix, field or "" (`f*`: any
/// field starting with `f`), reason). An arch of `am:<prefix>` holds for driverless recordings.
pub type Acceptance = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);

/// The differences accepted with evidence (docs/conformance.md, "tinygrad's command streams").
/// `what` matches as a substring of the difference's register/packet/ioctl name.
pub const ACCEPTED: &[Acceptance] = &[
    (
        "",
        "exec",
        "COMPUTE_DESTINATION_EN_SE",
        "",
        "A1: COMPUTE_STATIC_THREAD_MGMT_SE* = all CUs, the KFD MQD's own value",
    ),
    (
        "",
        "exec",
        "COMPUTE_STATIC_THREAD_MGMT_SE",
        "",
        "A1: COMPUTE_STATIC_THREAD_MGMT_SE* = all CUs, the KFD MQD's own value",
    ),
    (
        "",
        "timestamp",
        "RELEASE_MEM/CACHE_FLUSH_AND_INV_TS_EVENT",
        "",
        "A2: one end-of-pipe RELEASE_MEM per timestamp",
    ),
    (
        "",
        "timestamp",
        "ACQUIRE_MEM",
        "",
        "A2: one end-of-pipe RELEASE_MEM per timestamp",
    ),
    (
        "",
        "timestamp",
        "timestamp",
        "",
        "A3: clock calibration at device open",
    ),
    (
        "",
        "sdma:timestamp",
        "sdma:timestamp",
        "",
        "A3: clock calibration at device open",
    ),
    (
        "",
        "sqtt_stop",
        "WAIT_REG_MEM/SQ_THREAD_TRACE_STATUS",
        "",
        "A4: also waits for FINISH_DONE, as Mesa",
    ),
    (
        "",
        "sqtt_stop",
        "EVENT_WRITE/CS_PARTIAL_FLUSH",
        "",
        "A5: no CS_PARTIAL_FLUSH before reading WPTR, as Mesa",
    ),
    (
        "gfx12",
        "",
        "[se4]",
        "",
        "A6: the mock's 6 SEs; gfx1200 has 4",
    ),
    (
        "gfx12",
        "",
        "[se5]",
        "",
        "A6: the mock's 6 SEs; gfx1200 has 4",
    ),
    (
        "gfx12",
        "",
        "GRBM_GFX_INDEX",
        "se_index",
        "A6: the mock's 6 SEs; gfx1200 has 4",
    ),
    (
        "",
        "ioctl",
        "AMDKFD_IOC_CREATE_QUEUE",
        "queue_priority",
        "A7: queue priority 15 (KFD_MAX_QUEUE_PRIORITY)",
    ),
    (
        "",
        "ioctl",
        "AMDKFD_IOC_GET_VERSION",
        "",
        "A8: ioctls the runtime does not need",
    ),
    (
        "",
        "ioctl",
        "AMDKFD_IOC_RUNTIME_ENABLE",
        "",
        "A8: ioctls the runtime does not need",
    ),
    (
        "",
        "ioctl",
        "AMDKFD_IOC_FREE_MEMORY_OF_GPU",
        "",
        "A9: allocations are released with the process",
    ),
    (
        "",
        "ioctl",
        "AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU",
        "",
        "A9: allocations are released with the process",
    ),
    (
        "",
        "ioctl",
        "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU",
        "flags",
        "A10: every flag set we use is one tinygrad uses",
    ),
    (
        "gfx12",
        "",
        "CP_PERFMON_CNTL",
        "",
        "A11: CP_PERFMON_CNTL_1 and GRBMH_CP_PERFMON_CNTL are one register (same address and fields)",
    ),
    (
        "",
        "pmc_read",
        "GRBM_GFX_INDEX",
        "se_index",
        "A12: tinygrad skips WGPs its mock's cu_bitmap marks inactive; we read every WGP",
    ),
    (
        "",
        "ioctl",
        "DRM_IOCTL_AMDGPU_INFO",
        "",
        "A12: tinygrad asks DRM for the cu_bitmap to skip inactive WGPs; we read every WGP",
    ),
    (
        "gfx9",
        "",
        "PRED_EXEC",
        "",
        "A13: multi-XCC (8 XCCs; the gfx950 mock has 1)",
    ),
    (
        "gfx9",
        "",
        "ATOMIC_MEM",
        "",
        "A13: multi-XCC (8 XCCs; the gfx950 mock has 1)",
    ),
    (
        "gfx9",
        "exec",
        "RELEASE_MEM/CACHE_FLUSH_AND_INV_TS_EVENT",
        "",
        "A13: multi-XCC (8 XCCs; the gfx950 mock has 1)",
    ),
    (
        "gfx9",
        "exec",
        "WAIT_REG_MEM/memory",
        "",
        "A13: multi-XCC (8 XCCs; the gfx950 mock has 1)",
    ),
    (
        "gfx9",
        "wait",
        "WAIT_REG_MEM/memory",
        "function",
        "A13: multi-XCC (8 XCCs; the gfx950 mock has 1)",
    ),
    (
        "gfx9",
        "wait",
        "WAIT_REG_MEM/memory",
        "mask",
        "A13: multi-XCC (8 XCCs; the gfx950 mock has 1)",
    ),
    (
        "gfx9",
        "wait",
        "WAIT_REG_MEM/memory",
        "poll_interval",
        "A13: multi-XCC (8 XCCs; the gfx950 mock has 1)",
    ),
    (
        "gfx9",
        "ioctl",
        "AMDKFD_IOC_CREATE_QUEUE",
        "queue_percentage",
        "A13: multi-XCC (8 XCCs; the gfx950 mock has 1)",
    ),
    (
        "gfx9",
        "sqtt_start",
        "SQ_THREAD_TRACE_TOKEN_MASK[se",
        "token_mask",
        "A13: multi-XCC (8 XCCs; the gfx950 mock has 1)",
    ),
    (
        "gfx9",
        "exec",
        "COMPUTE_TMPRING_SIZE",
        "waves",
        "A14: TMPRING_SIZE.waves = CUs per XCC x scratch slots",
    ),
    (
        "gfx9",
        "sqtt_start",
        "COMPUTE_THREAD_TRACE_ENABLE",
        "",
        "A15: gfx9 SQTT registers as Mesa's radv_emit_sqtt_start/stop",
    ),
    (
        "gfx9",
        "sqtt_stop",
        "COMPUTE_THREAD_TRACE_ENABLE",
        "",
        "A15: gfx9 SQTT registers as Mesa's radv_emit_sqtt_start/stop",
    ),
    (
        "gfx9",
        "sqtt_start",
        "SQ_THREAD_TRACE_HIWATER",
        "",
        "A15: gfx9 SQTT registers as Mesa's radv_emit_sqtt_start/stop",
    ),
    (
        "gfx9",
        "sqtt_start",
        "SQ_THREAD_TRACE_STATUS",
        "",
        "A15: gfx9 SQTT registers as Mesa's radv_emit_sqtt_start/stop",
    ),
    (
        "gfx9",
        "sqtt_stop",
        "SQ_THREAD_TRACE_MODE",
        "",
        "A15: gfx9 SQTT registers as Mesa's radv_emit_sqtt_start/stop",
    ),
    (
        "gfx9",
        "sqtt_stop",
        "WAIT_REG_MEM",
        "",
        "A16: STATUS wait at the register's absolute offset",
    ),
    // The GC 12 driverless bring-up against pci_gfx1200_add (tests/pci_gc12_replay.rs).
    (
        "gfx12",
        "mmio:AM_GMC.init_hw",
        "MMVM_CONTEXT0_CNTL",
        "secure_protection_fault_enable_interrupt",
        "A20: tinygrad's raw 0x1800000 (GC 11's bits 23-24) lands on MMHUB 4.1's secure-fault bit",
    ),
    (
        "gfx12",
        "mmio:AM_IH.init_hw",
        "IH_RB_CNTL",
        "rb_size",
        "A21: IH rings of 512 KiB (ours) vs 256 KiB",
    ),
    (
        "gfx12",
        "mmio:AM_SOC.init_hw",
        "BIF_BX_PF0_RSMU_",
        "",
        "A22: an indirect access is recorded as its target register only",
    ),
    (
        "gfx12",
        "mmio:run",
        "IH_RB_CNTL",
        "",
        "A23: our teardown stops the IH rings",
    ),
    (
        "gfx12",
        "mmio:run",
        "GRBM_GFX_CNTL",
        "queueid",
        "A24: one compute queue; tinygrad's teardown selects both of its MQD slots",
    ),
    (
        "gfx12",
        "mmio:run",
        "SCRATCH_REG7",
        "",
        "A25: wavescope's own boot stamp, not tinygrad's",
    ),
    // tinygrad's driverless recordings (pci_/usb_gfx1200_*) on the emulated Navi44
    // (tests/conformance.rs); `am:` = AM recordings only.
    (
        "am:gfx12",
        "signal",
        "RELEASE_MEM",
        "int_sel",
        "A50: the AM signal raises the EOP interrupt that wakes a VFIO waiter; tinygrad's AM polls",
    ),
    (
        "am:gfx12",
        "mmio:AM_PSP.init_hw",
        "MPASP_SMN_C2PMSG_35",
        "content",
        "A51: the emulator's synthetic SOS lists a RAS driver (bootloader 0xE0000); the real one has none",
    ),
    (
        "am:gfx12",
        "mmio:AM_PSP.init_hw",
        "MPASP_SMN_C2PMSG_67",
        "content",
        "A52: 16 LOAD_IP_FW (five RLC images in the synthetic set) vs tinygrad's 13: PSP ring wptr",
    ),
    (
        "am:gfx12",
        "mmio:run",
        "registers",
        "",
        "A53: after bring-up, our teardown order (GRBM reset, SMU) vs tinygrad's (IH drain, TLB flush)",
    ),
    (
        "am:gfx12",
        "mmio:run",
        "SDMA0_QUEUE0_RB_CNTL",
        "rb_size",
        "A55: USB: our 4 KiB SDMA ring (usb::device_options) vs tinygrad's 1 MiB",
    ),
    (
        "am:gfx12",
        "usb",
        "usb_ctrl_out 0xe5",
        "xdata[0xa00*",
        "A56: USB: our first system page is the bridge's 0xA000 buffer; tinygrad's is at 0xA800",
    ),
    (
        "am:gfx12",
        "usb",
        "usb_ctrl_out 0xe5",
        "xdata[0xa80*",
        "A56: USB: our first system page is the bridge's 0xA000 buffer; tinygrad's is at 0xA800",
    ),
    (
        "am:gfx12",
        "usb",
        "usb_ctrl_out 0xf2",
        "",
        "A57: USB: we write firmware and copies to VRAM by TLPs (0xF0); tinygrad stages them by F2 DMA",
    ),
    (
        "",
        "sysfs",
        "/base_addr",
        "",
        "A40: the KFD path reads each IP's segment bases from ip_discovery (absolute register addresses)",
    ),
    (
        "",
        "sysfs",
        "file_listdir /sys/class/drm/renderD*/device/ip_discovery/die/0",
        "",
        "A41: we read the three hardware ids we use (GC 11, SDMA0 42, NBIF 108) without listing the die",
    ),
    (
        "",
        "sysfs",
        "power_dpm_force_performance_level",
        "",
        "A42: tinygrad checks the power profile before profiling; we do not (no command depends on it)",
    ),
];

/// Parses JSON lines (blank lines skipped); errors name the line.
pub fn parse_jsonl(text: &str) -> Result<Vec<Value>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect()
}

fn s(v: &Value) -> Option<&str> {
    v.as_str()
}

pub(crate) fn num(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(t) => t
            .strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .or_else(|| t.parse().ok()),
        Value::Bool(b) => Some(u64::from(*b)),
        _ => None,
    }
}

/// The GC register table of a recording (from its `device_info.arch` or the `arch` given).
pub fn table_for(arch: &str) -> Option<&'static IpTable> {
    let v = match arch {
        a if a.starts_with("gfx11") => (11, 0, 0),
        a if a.starts_with("gfx12") => (12, 0, 0),
        "gfx950" => (9, 5, 0),
        a if a.starts_with("gfx94") => (9, 4, 3),
        _ => return None,
    };
    regs::gc_table(v)
}

/// Registers whose whole value is an address or a value of the driver's own choosing.
const REG_IGNORED: &[&str] = &[
    "COMPUTE_PGM_LO",
    "COMPUTE_PGM_HI",
    "COMPUTE_DISPATCH_SCRATCH_BASE_LO",
    "COMPUTE_DISPATCH_SCRATCH_BASE_HI",
    "SQ_THREAD_TRACE_BUF0_BASE",
    "SQ_THREAD_TRACE_BUF0_BASE_LO",
    "SQ_THREAD_TRACE_BUF0_BASE_HI",
    "SQ_THREAD_TRACE_BASE",
    "SQ_THREAD_TRACE_BASE2",
    "SQ_THREAD_TRACE_USERDATA_2",
    "SQ_THREAD_TRACE_USERDATA_3",
];

/// Register fields that hold our buffer sizes or address bits (the rest of the register is
/// compared).
const FIELD_IGNORED: &[(&str, &str)] = &[
    ("SQ_THREAD_TRACE_BUF0_SIZE", "size"),
    ("SQ_THREAD_TRACE_BUF0_SIZE", "base_hi"),
    ("SQ_THREAD_TRACE_SIZE", "size"),
];

fn reg_ignored(name: &str) -> bool {
    REG_IGNORED.contains(&name) || name.starts_with("COMPUTE_USER_DATA_")
}

/// Packet fields that carry addresses, our signal values or ids.
const PKT_FIELD_IGNORED: &[&str] = &[
    "addr",
    "src",
    "dst",
    "base",
    "data",
    "ctxid",
    "int_context",
    "value",
    "bytes",
    "count_field",
    "dwords",
    "reg_done",
    "reg",
];

/// One side's normalised view: op -> (register -> values, packet kind -> field -> values).
#[derive(Debug, Default)]
struct Side {
    regs: BTreeMap<String, BTreeMap<String, BTreeSet<u32>>>,
    pkts: BTreeMap<String, BTreeMap<String, BTreeMap<String, BTreeSet<String>>>>,
    ioctls: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
}

/// Named per SE while GRBM_GFX_INDEX selects one (se_broadcast_writes clear).
pub(crate) fn grbm_suffix(table: Option<&IpTable>, v: u32) -> String {
    let field = |n: &str| {
        table
            .and_then(|t| t.get("GRBM_GFX_INDEX"))
            .and_then(|d| d.field(n))
            .map(|f| f.get(v))
    };
    if field("se_broadcast_writes") == Some(0) {
        format!("[se{}]", field("se_index").unwrap_or(0))
    } else {
        String::new()
    }
}

pub(crate) fn pkt_kind(op: &str, d: &Value) -> String {
    let mut k = op.to_string();
    for key in ["event_name", "reg_name", "src_name"] {
        if let Some(n) = d.get(key).and_then(s) {
            k.push('/');
            k.push_str(n.trim_start_matches("reg"));
        }
    }
    if op == "WAIT_REG_MEM" && d.get("mem_space").and_then(num) == Some(1) {
        k.push_str("/memory");
    }
    k
}

fn side(evs: &[Value], table: Option<&IpTable>) -> Side {
    let mut out = Side::default();
    let mut grbm = String::new();
    let mut submit = None;
    for e in evs {
        let ev = e.get("ev").and_then(s).unwrap_or("");
        let group = e.get("group").and_then(s).unwrap_or("(none)").to_string();
        match ev {
            "pm4" => {
                if e.get("submit") != submit.as_ref() {
                    submit = e.get("submit").cloned();
                    grbm.clear();
                }
                let op = e.get("op").and_then(s).unwrap_or("");
                if let Some(rs) = e.get("regs").and_then(Value::as_array) {
                    for r in rs {
                        let Some(name) = r.get("name").and_then(s) else {
                            continue;
                        };
                        let name = name.trim_start_matches("reg");
                        let val = r.get("val").and_then(num).unwrap_or(0) as u32;
                        if name == "GRBM_GFX_INDEX" {
                            grbm = grbm_suffix(table, val);
                        }
                        if reg_ignored(name) {
                            continue;
                        }
                        let mut v = val;
                        if let Some(d) = table.and_then(|t| t.get(name)) {
                            for (rn, f) in FIELD_IGNORED {
                                if *rn == name {
                                    if let Some(fd) = d.field(f) {
                                        let w = u32::from(fd.hi - fd.lo) + 1;
                                        let m = if w >= 32 {
                                            u32::MAX
                                        } else {
                                            ((1 << w) - 1) << fd.lo
                                        };
                                        v &= !m;
                                    }
                                }
                            }
                        }
                        let key = if name == "GRBM_GFX_INDEX" {
                            name.to_string()
                        } else {
                            format!("{name}{grbm}")
                        };
                        out.regs
                            .entry(group.clone())
                            .or_default()
                            .entry(key)
                            .or_default()
                            .insert(v);
                    }
                } else {
                    let d = e.get("decoded").cloned().unwrap_or(Value::Null);
                    let kind = pkt_kind(op, &d);
                    let fields = out
                        .pkts
                        .entry(group.clone())
                        .or_default()
                        .entry(kind)
                        .or_default();
                    if let Some(o) = d.as_object() {
                        for (k, v) in o {
                            if PKT_FIELD_IGNORED.contains(&k.as_str())
                                || k.ends_with("_name")
                                || k.ends_with("_fields")
                                || (op == "WAIT_REG_MEM"
                                    && k == "ref"
                                    && d.get("mem_space").and_then(num) == Some(1))
                            {
                                continue;
                            }
                            let v = num(v).map_or_else(|| v.to_string(), |n| format!("{n:#x}"));
                            // tinygrad names gfx9's ACQUIRE_MEM dword 1 cp_coher_cntl.
                            let k = if k == "cp_coher_cntl" {
                                "coher_cntl"
                            } else {
                                k
                            };
                            fields.entry(k.to_string()).or_default().insert(v);
                        }
                    }
                }
            }
            "sdma" => {
                let op = e.get("op").and_then(s).unwrap_or("").to_string();
                let fields = out
                    .pkts
                    .entry(format!("sdma:{group}"))
                    .or_default()
                    .entry(op)
                    .or_default();
                if let Some(o) = e.get("decoded").and_then(Value::as_object) {
                    for (k, v) in o {
                        if PKT_FIELD_IGNORED.contains(&k.as_str()) {
                            continue;
                        }
                        let v = num(v).map_or_else(|| v.to_string(), |n| format!("{n:#x}"));
                        fields.entry(k.clone()).or_default().insert(v);
                    }
                }
            }
            "ioctl" => {
                let name = e.get("name").and_then(s).unwrap_or("?").to_string();
                let fields = out.ioctls.entry(name).or_default();
                if let Some(o) = e.get("in").and_then(Value::as_object) {
                    for k in [
                        "flags",
                        "queue_type",
                        "queue_percentage",
                        "queue_priority",
                        "event_type",
                        "auto_reset",
                        "n_devices",
                    ] {
                        if let Some(v) = o.get(k).and_then(num) {
                            fields
                                .entry(k.into())
                                .or_default()
                                .insert(format!("{v:#x}"));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn show<T: fmt::LowerHex>(v: &BTreeSet<T>) -> String {
    let x: Vec<String> = v.iter().map(|x| format!("{x:#x}")).collect();
    format!("{{{}}}", x.join(","))
}

fn show_s(v: &BTreeSet<String>) -> String {
    format!("{{{}}}", v.iter().cloned().collect::<Vec<_>>().join(","))
}

fn field_sets(
    table: Option<&IpTable>,
    reg: &str,
    vals: &BTreeSet<u32>,
) -> BTreeMap<String, BTreeSet<u32>> {
    let base = reg.split('[').next().unwrap_or(reg);
    let mut out: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    match table.and_then(|t| t.get(base)) {
        Some(d) if !d.fields.is_empty() => {
            for f in d.fields {
                for v in vals {
                    out.entry(f.name.to_string()).or_default().insert(f.get(*v));
                }
            }
        }
        _ => {
            out.insert("(value)".into(), vals.clone());
        }
    }
    out
}

/// Whose differences `d` is: `arch`, with `am` the reference is a driverless (AM) recording.
/// An acceptance whose arch starts with `am:` holds for AM recordings only (the same command
/// can be right on one path and a regression on the other).
fn accept(arch: &str, am: bool, d: &Difference) -> Option<&'static str> {
    ACCEPTED.iter().find_map(|(a, op, what, field, why)| {
        let arch_ok = match a.strip_prefix("am:") {
            Some(a) => am && arch.starts_with(a),
            None => arch.starts_with(a),
        };
        let ok = arch_ok
            && (op.is_empty() || *op == d.op)
            && d.what.contains(what)
            && (field.is_empty()
                || d.field.as_deref() == Some(*field)
                // `name*`: any field starting with `name`.
                || field.strip_suffix('*').is_some_and(|f| {
                    d.field.as_deref().is_some_and(|x| x.starts_with(f))
                }));
        ok.then_some(*why)
    })
}

/// The reference's arch (`device_info.arch`), if it has one.
pub fn arch_of(evs: &[Value]) -> Option<String> {
    evs.iter()
        .find(|e| e.get("ev").and_then(s) == Some("device_info"))
        .and_then(|e| e.get("arch").and_then(s))
        .map(str::to_string)
}

/// Compares `ours` with `reference` (both in the recording schema) for `arch`; `ops` limits
/// the comparison to those operations (empty: every operation either side has).
pub fn compare(ours: &[Value], reference: &[Value], arch: &str, ops: &[&str]) -> Report {
    compare_with(ours, reference, arch, ops, None)
}

/// [`compare`], plus the driverless path's MMIO writes and USB transfers
/// ([`crate::conform_io`]) when either side has them; `registers` is the register JSON
/// directory (`shared/amd-registers`) that decodes their fields (`None`: whole values).
pub fn compare_with(
    ours: &[Value],
    reference: &[Value],
    arch: &str,
    ops: &[&str],
    registers: Option<&std::path::Path>,
) -> Report {
    let mut r = compare_cmds(ours, reference, arch, ops);
    if crate::conform_io::has_io(ours) || crate::conform_io::has_io(reference) {
        let db = |evs: &[Value]| {
            registers
                .and_then(|d| crate::conform_io::RegisterDb::for_recording(d, evs).ok())
                .unwrap_or_default()
        };
        let want = |op: &str| {
            ops.is_empty()
                || ops
                    .iter()
                    .any(|o| op == *o || op.starts_with(&format!("{o}:")))
        };
        for mut d in crate::conform_io::compare_io(ours, reference, &db(ours), &db(reference)) {
            if want(&d.op) {
                d.accepted = accept(arch, true, &d);
                r.differences.push(d);
            }
        }
    }
    r
}

fn compare_cmds(ours: &[Value], reference: &[Value], arch: &str, ops: &[&str]) -> Report {
    let table = table_for(arch);
    let (a, b) = (side(ours, table), side(reference, table));
    let am = crate::conform_io::has_io(reference);
    let mut r = Report::default();
    let mut push = |op: &str, kind, what: String, field: Option<String>, o: String, rf: String| {
        let mut d = Difference {
            op: op.into(),
            kind,
            what,
            field,
            ours: o,
            reference: rf,
            accepted: None,
        };
        d.accepted = accept(arch, am, &d);
        r.differences.push(d);
    };
    let want = |g: &str| ops.is_empty() || ops.contains(&g.trim_start_matches("sdma:"));
    let empty_r = BTreeMap::new();
    let empty_p = BTreeMap::new();
    let groups: BTreeSet<&String> = a
        .regs
        .keys()
        .chain(b.regs.keys())
        .chain(a.pkts.keys())
        .chain(b.pkts.keys())
        .collect();
    let mut compared = BTreeMap::new();
    for g in groups.into_iter().filter(|g| want(g)) {
        let (ra, rb) = (
            a.regs.get(g).unwrap_or(&empty_r),
            b.regs.get(g).unwrap_or(&empty_r),
        );
        let (pa, pb) = (
            a.pkts.get(g).unwrap_or(&empty_p),
            b.pkts.get(g).unwrap_or(&empty_p),
        );
        compared.insert(g.clone(), (ra.len() + pa.len(), rb.len() + pb.len()));
        let in_a = a.regs.contains_key(g) || a.pkts.contains_key(g);
        let in_b = b.regs.contains_key(g) || b.pkts.contains_key(g);
        if !in_a || !in_b {
            let k = if in_a {
                Kind::OperationOursOnly
            } else {
                Kind::OperationReferenceOnly
            };
            push(g, k, g.clone(), None, in_a.to_string(), in_b.to_string());
            continue;
        }
        for (reg, va) in ra {
            match rb.get(reg) {
                None => push(
                    g,
                    Kind::RegisterOursOnly,
                    reg.clone(),
                    None,
                    show(va),
                    "-".into(),
                ),
                Some(vb) if va != vb => {
                    let (fa, fb) = (field_sets(table, reg, va), field_sets(table, reg, vb));
                    for (f, xa) in &fa {
                        let xb = fb.get(f).cloned().unwrap_or_default();
                        if *xa != xb {
                            push(
                                g,
                                Kind::FieldDiffers,
                                reg.clone(),
                                Some(f.clone()),
                                show(xa),
                                show(&xb),
                            );
                        }
                    }
                }
                Some(_) => {}
            }
        }
        for (reg, vb) in rb.iter().filter(|(k, _)| !ra.contains_key(*k)) {
            push(
                g,
                Kind::RegisterReferenceOnly,
                reg.clone(),
                None,
                "-".into(),
                show(vb),
            );
        }
        for (kind, fa) in pa {
            match pb.get(kind) {
                None => push(
                    g,
                    Kind::PacketOursOnly,
                    kind.clone(),
                    None,
                    "present".into(),
                    "-".into(),
                ),
                Some(fb) => {
                    let keys: BTreeSet<&String> = fa.keys().chain(fb.keys()).collect();
                    for k in keys {
                        let (xa, xb) = (
                            fa.get(k).cloned().unwrap_or_default(),
                            fb.get(k).cloned().unwrap_or_default(),
                        );
                        if xa != xb {
                            push(
                                g,
                                Kind::PacketFieldDiffers,
                                kind.clone(),
                                Some(k.clone()),
                                show_s(&xa),
                                show_s(&xb),
                            );
                        }
                    }
                }
            }
        }
        for kind in pb.keys().filter(|k| !pa.contains_key(*k)) {
            push(
                g,
                Kind::PacketReferenceOnly,
                kind.clone(),
                None,
                "-".into(),
                "present".into(),
            );
        }
    }
    if want("ioctl") && !(a.ioctls.is_empty() && b.ioctls.is_empty()) {
        let names: BTreeSet<&String> = a.ioctls.keys().chain(b.ioctls.keys()).collect();
        for n in names {
            match (a.ioctls.get(n), b.ioctls.get(n)) {
                (Some(_), None) => push(
                    "ioctl",
                    Kind::IoctlOursOnly,
                    n.clone(),
                    None,
                    "present".into(),
                    "-".into(),
                ),
                (None, Some(_)) => push(
                    "ioctl",
                    Kind::IoctlReferenceOnly,
                    n.clone(),
                    None,
                    "-".into(),
                    "present".into(),
                ),
                (Some(fa), Some(fb)) => {
                    let keys: BTreeSet<&String> = fa.keys().chain(fb.keys()).collect();
                    for k in keys {
                        let (xa, xb) = (
                            fa.get(k).cloned().unwrap_or_default(),
                            fb.get(k).cloned().unwrap_or_default(),
                        );
                        if xa != xb {
                            push(
                                "ioctl",
                                Kind::IoctlFieldDiffers,
                                n.clone(),
                                Some(k.clone()),
                                show_s(&xa),
                                show_s(&xb),
                            );
                        }
                    }
                }
                (None, None) => {}
            }
        }
        compared.insert("ioctl".into(), (a.ioctls.len(), b.ioctls.len()));
    }
    let host = crate::conform_host::compare_host(ours, reference);
    for d in crate::conform_order::compare_order(ours, reference, table)
        .into_iter()
        .chain(host)
    {
        if want(&d.op) {
            let op = d.op.clone();
            push(&op, d.kind, d.what, d.field, d.ours, d.reference);
        }
    }
    r.compared = compared;
    r
}
