//! The host side of a recording ([`crate::conform`]): doorbell rings, sysfs reads and
//! directory listings, and mappings. Normalised as follows (also in `docs/conformance.md`):
//!
//! * **doorbell** (op `doorbell`, per queue `compute` / `sdma0`): which queues ring, and whether
//!   every ring announces exactly the packets submitted since the queue's previous ring (its
//!   `put_value` = the previous one + the dwords (compute) or bytes (SDMA) of those submissions,
//!   so no packet is left unannounced or announced twice), and whether the value written is the
//!   write pointer. The pointer values themselves follow how many packets each driver sends.
//! * **sysfs** (op `sysfs`): the set of files read and directories listed, with the device's own
//!   numbers replaced by `*` (KFD topology node, render node minor, PCI bus id); not how often.
//! * **mmap** (op `mmap`): the set of (file, protection, flags) mapped, files normalised as for
//!   sysfs; the KFD doorbell page (`/dev/kfd`) also by size. Addresses, offsets and the sizes of
//!   buffers are each driver's own.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::conform::{num, Difference, Kind};

/// Replaces the numbers a device assigns (topology node, render minor, PCI bus id) by `*`.
pub fn normalise_path(p: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let parts: Vec<&str> = p.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        let prev = if i > 0 { parts[i - 1] } else { "" };
        let n = if prev == "nodes" && part.chars().all(|c| c.is_ascii_digit()) {
            "*".to_string()
        } else if let Some(rest) = part.strip_prefix("renderD") {
            if rest.chars().all(|c| c.is_ascii_digit()) {
                "renderD*".to_string()
            } else {
                part.to_string()
            }
        } else if prev == "devices" && parts.get(i.wrapping_sub(2)) == Some(&"pci") {
            "*".to_string()
        } else {
            part.to_string()
        };
        out.push(n);
    }
    out.join("/")
}

#[derive(Debug, Default)]
struct Host {
    /// queue -> (rings, rings whose value covers exactly the submissions since the last one,
    /// rings writing the write pointer itself).
    doorbells: BTreeMap<String, (usize, usize, usize)>,
    files: BTreeSet<String>,
    maps: BTreeSet<String>,
}

fn host(evs: &[Value]) -> Host {
    let mut h = Host::default();
    let mut pending: BTreeMap<String, u64> = BTreeMap::new();
    let mut last: BTreeMap<String, u64> = BTreeMap::new();
    let s = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    for e in evs {
        match e.get("ev").and_then(Value::as_str).unwrap_or("") {
            ev @ ("pm4_submit" | "sdma_submit") => {
                let unit = if ev == "sdma_submit" { 4 } else { 1 };
                let ndw = e.get("ndw").and_then(num).unwrap_or(0);
                *pending.entry(s(e, "queue")).or_default() += ndw * unit;
            }
            "doorbell" => {
                let q = s(e, "queue");
                let put = e.get("put_value").and_then(num).unwrap_or(0);
                let prev = last.insert(q.clone(), put).unwrap_or(0);
                let want = pending.insert(q.clone(), 0).unwrap_or(0);
                let d = h.doorbells.entry(q).or_default();
                d.0 += 1;
                d.1 += usize::from(put.wrapping_sub(prev) == want);
                d.2 += usize::from(e.get("doorbell_value").and_then(num) == Some(put));
            }
            "file_read" | "file_listdir" | "file_write" => {
                let kind = s(e, "ev");
                h.files
                    .insert(format!("{kind} {}", normalise_path(&s(e, "path"))));
            }
            "mmap" => {
                let path = normalise_path(&s(e, "path"));
                let prot = e.get("prot").and_then(num).unwrap_or(0);
                let flags = e.get("flags").and_then(num).unwrap_or(0);
                let size = if path == "/dev/kfd" {
                    format!(" size {:#x}", e.get("size").and_then(num).unwrap_or(0))
                } else {
                    String::new()
                };
                h.maps
                    .insert(format!("{path} prot {prot} flags {flags:#x}{size}"));
            }
            _ => {}
        }
    }
    h
}

/// Whether a recording has any of the host events.
pub fn has_host(evs: &[Value]) -> bool {
    evs.iter().any(|e| {
        matches!(
            e.get("ev").and_then(Value::as_str),
            Some("doorbell" | "file_read" | "file_listdir" | "file_write" | "mmap")
        )
    })
}

fn diff(
    op: &str,
    kind: Kind,
    what: String,
    field: Option<String>,
    o: String,
    r: String,
) -> Difference {
    Difference {
        op: op.into(),
        kind,
        what,
        field,
        ours: o,
        reference: r,
        accepted: None,
    }
}

/// The host-side differences (unaccepted; the caller applies the acceptances).
pub fn compare_host(ours: &[Value], reference: &[Value]) -> Vec<Difference> {
    let (a, b) = (host(ours), host(reference));
    let mut out = Vec::new();
    let qs: BTreeSet<&String> = a.doorbells.keys().chain(b.doorbells.keys()).collect();
    for q in qs {
        match (a.doorbells.get(q), b.doorbells.get(q)) {
            (Some(_), None) => out.push(diff(
                "doorbell",
                Kind::PacketOursOnly,
                format!("doorbell/{q}"),
                None,
                "present".into(),
                "-".into(),
            )),
            (None, Some(_)) => out.push(diff(
                "doorbell",
                Kind::PacketReferenceOnly,
                format!("doorbell/{q}"),
                None,
                "-".into(),
                "present".into(),
            )),
            (Some(x), Some(y)) => {
                for (field, xa, ya) in [
                    ("covers_submitted", x.1 == x.0, y.1 == y.0),
                    ("value_is_write_pointer", x.2 == x.0, y.2 == y.0),
                ] {
                    if xa != ya {
                        out.push(diff(
                            "doorbell",
                            Kind::PacketFieldDiffers,
                            format!("doorbell/{q}"),
                            Some(field.into()),
                            format!(
                                "{} of {} rings",
                                if field == "covers_submitted" {
                                    x.1
                                } else {
                                    x.2
                                },
                                x.0
                            ),
                            format!(
                                "{} of {} rings",
                                if field == "covers_submitted" {
                                    y.1
                                } else {
                                    y.2
                                },
                                y.0
                            ),
                        ));
                    }
                }
            }
            (None, None) => {}
        }
    }
    for (op, sa, sb) in [("sysfs", &a.files, &b.files), ("mmap", &a.maps, &b.maps)] {
        if sa.is_empty() || sb.is_empty() {
            // One side did not record this kind of event at all (older recordings).
            continue;
        }
        for x in sa.difference(sb) {
            out.push(diff(
                op,
                Kind::PacketOursOnly,
                x.clone(),
                None,
                "present".into(),
                "-".into(),
            ));
        }
        for x in sb.difference(sa) {
            out.push(diff(
                op,
                Kind::PacketReferenceOnly,
                x.clone(),
                None,
                "-".into(),
                "present".into(),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_numbers_are_normalised() {
        assert_eq!(
            normalise_path("/sys/devices/virtual/kfd/kfd/topology/nodes/3/gpu_id"),
            "/sys/devices/virtual/kfd/kfd/topology/nodes/*/gpu_id"
        );
        assert_eq!(
            normalise_path("/sys/class/drm/renderD128/device/ip_discovery/die/0/11/0/major"),
            "/sys/class/drm/renderD*/device/ip_discovery/die/0/11/0/major"
        );
        assert_eq!(
            normalise_path("/sys/bus/pci/devices/0000:03:00.0/resource0"),
            "/sys/bus/pci/devices/*/resource0"
        );
    }

    #[test]
    fn a_doorbell_that_skips_a_submission_is_reported() {
        let evs = |put: u64| {
            vec![
                serde_json::json!({"ev": "pm4_submit", "queue": "compute", "ndw": 10}),
                serde_json::json!({"ev": "doorbell", "queue": "compute", "put_value": 10, "doorbell_value": 10}),
                serde_json::json!({"ev": "pm4_submit", "queue": "compute", "ndw": 6}),
                serde_json::json!({"ev": "doorbell", "queue": "compute", "put_value": put, "doorbell_value": put}),
            ]
        };
        assert!(compare_host(&evs(16), &evs(16)).is_empty());
        let d = compare_host(&evs(12), &evs(16));
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].field.as_deref(), Some("covers_submitted"));
        assert_eq!(d[0].ours, "1 of 2 rings");
    }
}
