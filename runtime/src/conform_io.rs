//! Comparing the driverless path's traffic of two recordings ([`crate::record_io`]'s events,
//! or tinygrad's `pci_*` / `usb_*` references): MMIO writes per bring-up step, USB transfers
//! per request kind. What is normalised, each with its reason (also in `docs/conformance.md`):
//!
//! * **Reads** are not compared: their values come from the device (or tinygrad's mock), and
//!   how often a driver polls is timing.
//! * **Steps**: a write belongs to the bring-up step in progress (the recordings' `ctx`:
//!   tinygrad's `AM_GMC.init_hw`, ...; ours names its steps the same). Steps that only run as
//!   the workload needs them (TLB and HDP flushes, ring setup, interrupts, teardown) are
//!   compared as one `run` group.
//! * **Values and multiplicity**: each register's values in a step are a set; fields are
//!   decoded with the register JSON of each side's own IP version (`shared/amd-registers`),
//!   so two generations compare field by field even where offsets moved.
//! * **Addresses and sizes of our own buffers** ([`ADDR_REGS`]): page-table, ring, MQD, EOP,
//!   firmware and fence addresses, FB/AGP/aperture locations (they follow the VRAM size) and
//!   the mailbox parameters that carry them.
//!   A field that only one side's JSON defines is compared only when that side sets it.
//! * **Order**: the order of steps, and within a step the order in which registers both sides
//!   write are first written, are compared (one difference at the first divergence).
//! * **SMU messages** by name per step (ids differ between SMU generations; parameters are
//!   addresses, clock levels and table ids of the driver's choosing).
//! * **USB**: control transfers by (direction, bRequest); XDATA writes (0xE5) by address with
//!   their values; bulk transfers by direction only (their sizes follow the copy sizes).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use crate::conform::{Difference, Kind};

/// A register's fields: name -> (lo, hi).
pub type Fields = BTreeMap<String, (u8, u8)>;

/// Register fields by name, from the register JSON files of one device's IP versions.
#[derive(Debug, Default, Clone)]
pub struct RegisterDb {
    regs: BTreeMap<String, Fields>,
    /// The JSON files that were loaded.
    pub files: Vec<String>,
}

/// The JSON file name prefixes of an IP block of the recordings' `am_ip_versions`.
fn json_prefixes(ip: &str) -> &'static [&'static str] {
    match ip {
        "GC" => &["gc"],
        "MMHUB" => &["mmhub"],
        "NBIO" | "NBIF" => &["nbio", "nbif"],
        "MP0" | "MP1" => &["mp"],
        "HDP" => &["hdp"],
        "OSSSYS" => &["osssys"],
        "SDMA0" => &["sdma"],
        _ => &[],
    }
}

impl RegisterDb {
    /// Loads, from `dir`, the register JSON of every IP version in `device_info.am_ip_versions`
    /// of `evs`. A version without a JSON file is skipped (its registers compare by value).
    pub fn for_recording(dir: &Path, evs: &[Value]) -> Result<RegisterDb, String> {
        let mut db = RegisterDb::default();
        let Some(vers) = evs
            .iter()
            .find(|e| e.get("ev").and_then(Value::as_str) == Some("device_info"))
            .and_then(|e| e.get("am_ip_versions"))
            .and_then(Value::as_object)
        else {
            return Ok(db);
        };
        let mut want = BTreeSet::new();
        for (ip, v) in vers {
            let v: Vec<u64> = v
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_u64).collect())
                .unwrap_or_default();
            if v.len() != 3 {
                continue;
            }
            for p in json_prefixes(ip) {
                want.insert(format!("{p}_{}_{}_{}.json", v[0], v[1], v[2]));
            }
        }
        for f in want {
            let path = dir.join(&f);
            if !path.exists() {
                continue;
            }
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let j: Value =
                serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            let Some(regs) = j.get("registers").and_then(Value::as_object) else {
                return Err(format!("{}: no \"registers\" object", path.display()));
            };
            for (name, r) in regs {
                let mut fields = Fields::new();
                if let Some(fs) = r.get("fields").and_then(Value::as_object) {
                    for (fname, fv) in fs {
                        let lo = fv.get("lo").and_then(Value::as_u64).unwrap_or(0) as u8;
                        let hi = fv.get("hi").and_then(Value::as_u64).unwrap_or(31) as u8;
                        fields.insert(fname.to_lowercase(), (lo, hi));
                    }
                }
                db.regs.entry(bare(name).to_string()).or_insert(fields);
            }
            db.files.push(f);
        }
        Ok(db)
    }

    pub fn fields(&self, reg: &str) -> Option<&Fields> {
        self.regs.get(reg.split('[').next().unwrap_or(reg))
    }

    /// `v` decoded into its fields (every field, zero ones too), or `(value)` when the register
    /// is unknown or has no fields.
    pub fn decode(&self, reg: &str, v: u32) -> BTreeMap<String, u32> {
        let mut out = BTreeMap::new();
        match self.fields(reg) {
            Some(fs) if !fs.is_empty() => {
                for (n, (lo, hi)) in fs {
                    let w = u32::from(hi.saturating_sub(*lo)) + 1;
                    let x = if w >= 32 {
                        v >> lo
                    } else {
                        (v >> lo) & ((1 << w) - 1)
                    };
                    out.insert(n.clone(), x);
                }
            }
            _ => {
                out.insert("(value)".into(), v);
            }
        }
        out
    }
}

/// A register name without its header prefix: `reg` (newer headers) or `mm` (mp_11_0_0, whose
/// MP1 mailbox names tinygrad records as `mmMP1_SMN_C2PMSG_*`).
fn bare(name: &str) -> &str {
    name.strip_prefix("reg")
        .or_else(|| name.strip_prefix("mm"))
        .unwrap_or(name)
}

/// Registers whose values are addresses or sizes of the driver's own buffers, or mailbox
/// parameters carrying them (matched as substrings of the name).
pub const ADDR_REGS: &[&str] = &[
    "_BASE_ADDR",
    "_ADDR_LO",
    "_ADDR_HI",
    "_LO32",
    "_HI32",
    "FB_LOCATION",
    "AGP_",
    "APERTURE",
    "_RB_BASE",
    "_PQ_BASE",
    "MQD_BASE",
    "EOP_BASE",
    "PRGRM_CNTR_START",
    "C2PMSG_36",
    "C2PMSG_69",
    "C2PMSG_70",
    "C2PMSG_71",
    "C2PMSG_82",
    "_RPTR",
    "_WPTR",
    "SCRATCH_REG6",
    "RSMU_INDEX",
    "RSMU_DATA",
];

fn addr_reg(name: &str) -> bool {
    ADDR_REGS.iter().any(|p| name.contains(p))
}

/// The bring-up step of an event's `ctx`: the first `AM_*.method` in it (tinygrad's), or our
/// last path element; steps that run with the workload become `run`.
fn step(ctx: &str) -> String {
    let m = ctx
        .split('/')
        .find(|p| p.starts_with("AM_"))
        .unwrap_or_else(|| ctx.rsplit('/').next().unwrap_or(""));
    match m {
        "AM_SOC.init_hw" | "AM_GMC.init_hw" | "AM_IH.init_hw" | "AM_PSP.init_hw"
        | "AM_SMU.init_hw" | "AM_GFX.init_hw" | "AM_SDMA.init_hw" => m.to_string(),
        _ => "run".into(),
    }
}

fn hexnum(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(t) => t
            .strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .or_else(|| t.parse().ok()),
        _ => None,
    }
}

/// One side: step order; per step, register -> values and the order of first writes.
#[derive(Debug, Default)]
struct IoSide {
    steps: Vec<String>,
    regs: BTreeMap<String, BTreeMap<String, BTreeSet<u32>>>,
    order: BTreeMap<String, Vec<String>>,
    usb: BTreeMap<String, BTreeSet<String>>,
    /// Step -> SMU message names.
    smu: BTreeMap<String, BTreeSet<String>>,
}

fn io_side(evs: &[Value]) -> IoSide {
    let mut s = IoSide::default();
    for e in evs {
        let ev = e.get("ev").and_then(Value::as_str).unwrap_or("");
        match ev {
            "mmio_w" => {
                let Some(name) = e.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let name = bare(name).to_string();
                let st = step(e.get("ctx").and_then(Value::as_str).unwrap_or(""));
                if st != "run" && !s.steps.contains(&st) {
                    s.steps.push(st.clone());
                }
                let o = s.order.entry(st.clone()).or_default();
                if !o.contains(&name) {
                    o.push(name.clone());
                }
                if addr_reg(&name) {
                    continue;
                }
                let v = e.get("val").and_then(hexnum).unwrap_or(0) as u32;
                s.regs
                    .entry(st)
                    .or_default()
                    .entry(name)
                    .or_default()
                    .insert(v);
            }
            "usb_ctrl_out" | "usb_ctrl_in" => {
                let req = e.get("bRequest").and_then(hexnum).unwrap_or(0);
                let kind = format!("{ev} {req:#04x}");
                let set = s.usb.entry(kind).or_default();
                if ev == "usb_ctrl_out" && req == 0xE5 {
                    let a = e.get("wValue").and_then(hexnum).unwrap_or(0);
                    let v = e.get("wIndex").and_then(hexnum).unwrap_or(0);
                    set.insert(format!("xdata[{a:#06x}]={v:#04x}"));
                }
            }
            "smu_msg" => {
                let st = step(e.get("ctx").and_then(Value::as_str).unwrap_or(""));
                let n = e.get("msg_name").and_then(Value::as_str).unwrap_or("?");
                s.smu.entry(st).or_default().insert(n.to_string());
            }
            "usb_bulk_out" | "usb_bulk_in" => {
                s.usb.entry(ev.to_string()).or_default();
            }
            _ => {}
        }
    }
    s
}

fn show(v: &BTreeSet<u32>) -> String {
    let x: Vec<String> = v.iter().map(|x| format!("{x:#x}")).collect();
    format!("{{{}}}", x.join(","))
}

fn diff(op: &str, kind: Kind, what: &str, field: Option<&str>, o: String, r: String) -> Difference {
    Difference {
        op: op.into(),
        kind,
        what: what.into(),
        field: field.map(str::to_string),
        ours: o,
        reference: r,
        accepted: None,
    }
}

/// The first place where two sequences order their common elements differently.
fn first_misorder(a: &[String], b: &[String]) -> Option<(String, String)> {
    let ca: Vec<&String> = a.iter().filter(|x| b.contains(x)).collect();
    let cb: Vec<&String> = b.iter().filter(|x| a.contains(x)).collect();
    ca.iter()
        .zip(&cb)
        .find(|(x, y)| x != y)
        .map(|(x, y)| ((*x).clone(), (*y).clone()))
}

/// MMIO and USB differences between `ours` and `reference`; `db_ours` / `db_ref` decode each
/// side's register fields (empty databases compare whole values).
pub fn compare_io(
    ours: &[Value],
    reference: &[Value],
    db_ours: &RegisterDb,
    db_ref: &RegisterDb,
) -> Vec<Difference> {
    let (a, b) = (io_side(ours), io_side(reference));
    let mut out = Vec::new();
    let has_mmio = |s: &IoSide| !s.order.is_empty();
    if has_mmio(&a) || has_mmio(&b) {
        if let Some((x, y)) = first_misorder(&a.steps, &b.steps) {
            out.push(diff("mmio", Kind::OrderDiffers, "steps", None, x, y));
        }
        let steps: BTreeSet<&String> = a.order.keys().chain(b.order.keys()).collect();
        for st in steps {
            let op = format!("mmio:{st}");
            let (oa, ob) = (a.order.get(st), b.order.get(st));
            let (Some(oa), Some(ob)) = (oa, ob) else {
                let k = if oa.is_some() {
                    Kind::OperationOursOnly
                } else {
                    Kind::OperationReferenceOnly
                };
                out.push(diff(
                    &op,
                    k,
                    st,
                    None,
                    oa.is_some().to_string(),
                    ob.is_some().to_string(),
                ));
                continue;
            };
            for r in oa.iter().filter(|r| !ob.contains(r)) {
                out.push(diff(
                    &op,
                    Kind::RegisterOursOnly,
                    r,
                    None,
                    "written".into(),
                    "-".into(),
                ));
            }
            for r in ob.iter().filter(|r| !oa.contains(r)) {
                out.push(diff(
                    &op,
                    Kind::RegisterReferenceOnly,
                    r,
                    None,
                    "-".into(),
                    "written".into(),
                ));
            }
            if let Some((x, y)) = first_misorder(oa, ob) {
                out.push(diff(&op, Kind::OrderDiffers, "registers", None, x, y));
            }
            let empty = BTreeMap::new();
            let (ra, rb) = (
                a.regs.get(st).unwrap_or(&empty),
                b.regs.get(st).unwrap_or(&empty),
            );
            for (reg, va) in ra {
                let Some(vb) = rb.get(reg) else { continue };
                let fa = field_sets(db_ours, reg, va);
                let fb = field_sets(db_ref, reg, vb);
                let names: BTreeSet<&String> = fa.keys().chain(fb.keys()).collect();
                for f in names {
                    // A field only one generation defines differs only when that side sets it.
                    let zero = BTreeSet::from([0]);
                    let (xa, xb) = match (fa.get(f), fb.get(f)) {
                        (Some(x), Some(y)) => (x.clone(), y.clone()),
                        (Some(x), None) if *x == zero => continue,
                        (None, Some(y)) if *y == zero => continue,
                        (x, y) => (
                            x.cloned().unwrap_or_default(),
                            y.cloned().unwrap_or_default(),
                        ),
                    };
                    if xa != xb {
                        out.push(diff(
                            &op,
                            Kind::FieldDiffers,
                            reg,
                            Some(f),
                            show(&xa),
                            show(&xb),
                        ));
                    }
                }
            }
        }
    }
    if !a.smu.is_empty() || !b.smu.is_empty() {
        let steps: BTreeSet<&String> = a.smu.keys().chain(b.smu.keys()).collect();
        let none = BTreeSet::new();
        for st in steps {
            let (x, y) = (
                a.smu.get(st).unwrap_or(&none),
                b.smu.get(st).unwrap_or(&none),
            );
            let op = format!("smu:{st}");
            for m in x.difference(y) {
                out.push(diff(
                    &op,
                    Kind::PacketOursOnly,
                    m,
                    None,
                    "sent".into(),
                    "-".into(),
                ));
            }
            for m in y.difference(x) {
                out.push(diff(
                    &op,
                    Kind::PacketReferenceOnly,
                    m,
                    None,
                    "-".into(),
                    "sent".into(),
                ));
            }
        }
    }
    if !a.usb.is_empty() || !b.usb.is_empty() {
        let kinds: BTreeSet<&String> = a.usb.keys().chain(b.usb.keys()).collect();
        for k in kinds {
            match (a.usb.get(k), b.usb.get(k)) {
                (Some(_), None) => out.push(diff(
                    "usb",
                    Kind::PacketOursOnly,
                    k,
                    None,
                    "present".into(),
                    "-".into(),
                )),
                (None, Some(_)) => out.push(diff(
                    "usb",
                    Kind::PacketReferenceOnly,
                    k,
                    None,
                    "-".into(),
                    "present".into(),
                )),
                (Some(x), Some(y)) if x != y => {
                    for w in x.difference(y) {
                        out.push(diff(
                            "usb",
                            Kind::PacketFieldDiffers,
                            k,
                            Some(w),
                            "sent".into(),
                            "-".into(),
                        ));
                    }
                    for w in y.difference(x) {
                        out.push(diff(
                            "usb",
                            Kind::PacketFieldDiffers,
                            k,
                            Some(w),
                            "-".into(),
                            "sent".into(),
                        ));
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// A register's values decoded into per-field value sets.
fn field_sets(db: &RegisterDb, reg: &str, vals: &BTreeSet<u32>) -> BTreeMap<String, BTreeSet<u32>> {
    let mut out: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    for v in vals {
        for (f, x) in db.decode(reg, *v) {
            out.entry(f).or_default().insert(x);
        }
    }
    out
}

/// Whether a recording has driverless-path traffic (MMIO or USB events).
pub fn has_io(evs: &[Value]) -> bool {
    evs.iter().any(|e| {
        e.get("ev")
            .and_then(Value::as_str)
            .is_some_and(|k| k.starts_with("mmio_") || k.starts_with("usb_"))
    })
}
