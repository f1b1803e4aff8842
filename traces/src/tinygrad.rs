//! tinygrad `profile.pkl` import: maps the generic pickle values onto the [`Profile`] model.
//!
//! Works by class *name* and BUILD-dict field names, tolerating missing and extra fields, so
//! pickles of tinygrad 0.11 .. 0.14 and development trees in between open. Classes it does not
//! know are kept as [`GenericRecord`]s with a warning.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::model::*;
use crate::pickle::{self, Id, Pickle, PickleError, Value};

#[derive(Debug, thiserror::Error)]
pub enum TinygradError {
    #[error(transparent)]
    Pickle(#[from] PickleError),
    #[error("profile pickle root is not a list of events (it is {0})")]
    NotAList(&'static str),
}

/// Most nodes one converted generic value may have (guards against memo "billion laughs").
const ATTR_BUDGET: usize = 20_000;
/// Deepest nesting converted into an [`Attr`].
const ATTR_DEPTH: usize = 64;
/// Bytes values up to this size are kept inline in an [`Attr`].
const INLINE_BYTES: usize = 256;

/// Reads a tinygrad profile pickle held in `store` (an mmap or a buffer). Blobs (SQTT, ELF, PMC)
/// stay slices of `store`; nothing is copied.
pub fn import(store: Arc<BlobStore>, source_name: &str) -> Result<Profile, TinygradError> {
    let data = store.bytes();
    let pk = pickle::parse(data)?;
    let events = match pk.root() {
        Value::List(v) | Value::Tuple(v) => v.clone(),
        other => return Err(TinygradError::NotAList(kind_name(other))),
    };
    let mut cx = Cx {
        pk: &pk,
        store: &store,
        base: data.as_ptr() as usize,
        prof: Profile::default(),
    };
    cx.prof.source.format = "tinygrad-pickle".into();
    cx.prof.source.warnings.extend(pk.warnings.iter().cloned());
    cx.prof.processes.push(Process {
        name: "tinygrad".into(),
        pid: None,
        source: source_name.into(),
        clock_offset: Time(0),
    });

    // Devices first: their tdiff converts device-clock ranges, and they come last in the list.
    for &ev in &events {
        let class = pk
            .class_of(ev)
            .map(|(_, n)| n.to_string())
            .unwrap_or_else(|| kind_name(pk.get(ev)).to_string());
        *cx.prof
            .source
            .event_counts
            .entry(class.clone())
            .or_default() += 1;
        if class == "ProfileDeviceEvent" {
            cx.device_event(ev);
        }
    }
    for (i, &ev) in events.iter().enumerate() {
        let Some((module, class)) = pk.class_of(ev) else {
            let value = cx.attr(ev);
            cx.prof.source.warnings.push(format!(
                "event {i}: not an object ({}); kept as a generic record",
                kind_name(pk.get(ev))
            ));
            cx.prof.generic.push(GenericRecord {
                class: kind_name(pk.get(ev)).into(),
                value,
            });
            continue;
        };
        match class {
            "ProfileDeviceEvent" => {}
            "ProfileRangeEvent" => cx.range_event(ev),
            "ProfilePointEvent" => cx.point_event(ev),
            "ProfileProgramEvent" => cx.program_event(ev),
            "ProfileSQTTEvent" => cx.sqtt_event(ev),
            "ProfilePMCEvent" => cx.pmc_event(ev),
            "ProfileGraphEvent" => cx.graph_event(ev),
            _ => {
                let full = format!("{module}.{class}");
                cx.prof.source.warnings.push(format!(
                    "event {i}: unknown class {full}; kept as a generic record"
                ));
                let value = cx.attr(ev);
                cx.prof.generic.push(GenericRecord { class: full, value });
            }
        }
    }
    cx.derive_kernels();
    cx.prof.compute_nesting();
    Ok(cx.prof)
}

fn kind_name(v: &Value<'_>) -> &'static str {
    match v {
        Value::None => "None",
        Value::Bool(_) => "bool",
        Value::Int(_) | Value::BigInt(_) => "int",
        Value::Float(_) => "float",
        Value::Str(_) => "str",
        Value::Bytes(_) | Value::OwnedBytes(_) => "bytes",
        Value::List(_) => "list",
        Value::Tuple(_) => "tuple",
        Value::Dict(_) => "dict",
        Value::Set(_) => "set",
        Value::FrozenSet(_) => "frozenset",
        Value::Global { .. } => "global",
        Value::Object { .. } => "object",
    }
}

/// Removes ANSI colour escapes (`\x1b[90m`) from kernel display names.
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\x1b' && it.peek() == Some(&'[') {
            for d in it.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

struct Cx<'p, 'a> {
    pk: &'p Pickle<'a>,
    store: &'p Arc<BlobStore>,
    base: usize,
    prof: Profile,
}

impl Cx<'_, '_> {
    fn field(&self, obj: Id, name: &str) -> Option<Id> {
        self.pk.object_field(obj, name)
    }
    fn str_field(&self, obj: Id, name: &str) -> Option<String> {
        self.field(obj, name)
            .and_then(|f| self.pk.as_str(f))
            .map(str::to_string)
    }
    fn int_field(&self, obj: Id, name: &str) -> Option<i64> {
        self.field(obj, name).and_then(|f| self.pk.as_int(f))
    }

    fn warn(&mut self, msg: String) {
        // Cap repeated warnings so a hostile file cannot grow them without bound.
        if self.prof.source.warnings.len() < 1000 {
            self.prof.source.warnings.push(msg);
        }
    }

    /// A `Decimal('…')`, int or float of microseconds.
    fn time(&self, id: Id) -> Option<Time> {
        match self.pk.get(id) {
            Value::Int(i) => Some(Time(*i as i128 * Time::PS_PER_US)),
            Value::Float(f) => Some(Time::from_us_f64(*f)),
            Value::Object { args, .. } => {
                let (_, cls) = self.pk.class_of(id)?;
                if cls != "Decimal" {
                    return None;
                }
                let a = *args.first()?;
                match self.pk.get(a) {
                    Value::Str(s) => Time::parse_us(s),
                    Value::Int(i) => Some(Time(*i as i128 * Time::PS_PER_US)),
                    Value::Float(f) => Some(Time::from_us_f64(*f)),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    fn time_field(&self, obj: Id, name: &str) -> Option<Time> {
        self.field(obj, name).and_then(|f| self.time(f))
    }

    /// A blob for a bytes value: a slice of the input when borrowed, else a copy.
    fn blob(&mut self, id: Id) -> Option<BlobId> {
        let blob = match self.pk.get(id) {
            Value::Bytes(b) => {
                let start = (b.as_ptr() as usize).checked_sub(self.base)?;
                Blob::slice_of(self.store, start..start + b.len())?
            }
            Value::OwnedBytes(b) => Blob::from_vec(b.clone()),
            _ => return None,
        };
        Some(self.prof.add_blob(blob))
    }

    fn attr(&self, id: Id) -> Attr {
        let mut budget = ATTR_BUDGET;
        self.attr_in(id, 0, &mut budget)
    }

    fn attr_in(&self, id: Id, depth: usize, budget: &mut usize) -> Attr {
        if depth >= ATTR_DEPTH || *budget == 0 {
            return Attr::Truncated;
        }
        *budget -= 1;
        let seq = |v: &[Id], budget: &mut usize| {
            v.iter()
                .map(|&x| self.attr_in(x, depth + 1, budget))
                .collect::<Vec<_>>()
        };
        let pairs = |v: &[(Id, Id)], budget: &mut usize| {
            v.iter()
                .map(|&(k, x)| {
                    (
                        self.attr_in(k, depth + 1, budget),
                        self.attr_in(x, depth + 1, budget),
                    )
                })
                .collect::<Vec<_>>()
        };
        match self.pk.get(id) {
            Value::None => Attr::None,
            Value::Bool(b) => Attr::Bool(*b),
            Value::Int(i) => Attr::Int(*i),
            Value::BigInt(b) => Attr::BigInt(pickle::bigint_to_string(b)),
            Value::Float(f) => Attr::Float(*f),
            Value::Str(s) => Attr::Str(s.to_string()),
            Value::Bytes(b) if b.len() <= INLINE_BYTES => Attr::Bytes(b.to_vec()),
            Value::OwnedBytes(b) if b.len() <= INLINE_BYTES => Attr::Bytes(b.clone()),
            Value::Bytes(b) => Attr::BytesLen(b.len() as u64),
            Value::OwnedBytes(b) => Attr::BytesLen(b.len() as u64),
            Value::List(v) => Attr::List(seq(v, budget)),
            Value::Tuple(v) => Attr::Tuple(seq(v, budget)),
            Value::Set(v) | Value::FrozenSet(v) => Attr::Set(seq(v, budget)),
            Value::Dict(v) => Attr::Dict(pairs(v, budget)),
            Value::Global { module, name } => Attr::Global(format!("{module}.{name}")),
            Value::Object {
                callable,
                args,
                state,
                entries,
                items,
                ..
            } => {
                let class = match self.pk.global_name(*callable) {
                    Some((m, n)) => format!("{m}.{n}"),
                    None => "<computed>".into(),
                };
                // Decimals become their text; everything else keeps args and state.
                if class == "decimal.Decimal" {
                    if let Some(s) = args.first().and_then(|a| self.pk.as_str(*a)) {
                        return Attr::Object {
                            class,
                            args: vec![Attr::Str(s.into())],
                            fields: vec![],
                        };
                    }
                }
                let mut fields = Vec::new();
                if let Some(st) = state {
                    match self.pk.get(*st) {
                        Value::Dict(d) => fields = pairs(d, budget),
                        _ => fields.push((
                            Attr::Str("__state__".into()),
                            self.attr_in(*st, depth + 1, budget),
                        )),
                    }
                }
                fields.extend(pairs(entries, budget));
                let mut a = seq(args, budget);
                a.extend(seq(items, budget));
                Attr::Object {
                    class,
                    args: a,
                    fields,
                }
            }
        }
    }

    fn device_event(&mut self, ev: Id) {
        let Some(name) = self.str_field(ev, "device") else {
            self.warn("ProfileDeviceEvent without a device name; skipped".into());
            return;
        };
        let tdiff = self.time_field(ev, "tdiff").unwrap_or_default();
        let mut props = BTreeMap::new();
        if let Some(d) = self.field(ev, "props").and_then(|p| self.pk.as_dict(p)) {
            for &(k, v) in d {
                if let (Some(k), Some(v)) = (self.pk.as_str(k), self.pk.as_int(v)) {
                    props.insert(k.to_string(), v);
                }
            }
        }
        let idx = self.prof.device_index(0, &name) as usize;
        let dev = &mut self.prof.devices[idx];
        dev.declared = true;
        dev.clock_offset = tdiff;
        dev.props = props;
    }

    fn range_event(&mut self, ev: Id) {
        let device_name = self.str_field(ev, "device").unwrap_or_default();
        let device = self.prof.device_index(0, &device_name);
        let (name, key) = match self.field(ev, "name") {
            Some(n) => match self.pk.get(n) {
                Value::Str(s) => (s.to_string(), None),
                _ => {
                    let display = self
                        .pk
                        .object_field(n, "display_name")
                        .and_then(|d| self.pk.as_str(d))
                        .unwrap_or("?")
                        .to_string();
                    (display, Some(self.attr(n)))
                }
            },
            None => (String::new(), None),
        };
        let dev = &self.prof.devices[device as usize];
        // Ranges of declared non-host devices are on that device's clock (GPU ticks / 100).
        let device_clock = dev.declared && dev.name != "CPU";
        let off = if device_clock {
            dev.clock_offset
        } else {
            Time(0)
        };
        let Some(st) = self.time_field(ev, "st") else {
            self.warn(format!(
                "ProfileRangeEvent {name:?} without a start time; skipped"
            ));
            return;
        };
        let en = self.time_field(ev, "en");
        self.prof.ranges.push(RangeEvent {
            device,
            name,
            key,
            start: Time(st.0 + off.0),
            end: en.map(|e| Time(e.0 + off.0)),
            depth: 0,
            parent: None,
            device_clock,
        });
    }

    fn point_event(&mut self, ev: Id) {
        let device_name = self.str_field(ev, "device").unwrap_or_default();
        let device = self.prof.device_index(0, &device_name);
        let kind = match self.str_field(ev, "name").as_deref() {
            Some("exec") => PointKind::Exec,
            Some("alloc") => PointKind::Alloc,
            Some("free") => PointKind::Free,
            Some("marker") => PointKind::Marker,
            Some(o) => PointKind::Other(o.to_string()),
            None => PointKind::Other(String::new()),
        };
        let key = self
            .field(ev, "key")
            .map(|k| self.attr(k))
            .unwrap_or(Attr::None);
        let arg = self
            .field(ev, "arg")
            .map(|k| self.attr(k))
            .unwrap_or(Attr::None);
        let ts = self.time_field(ev, "ts").unwrap_or_default();
        self.prof.points.push(PointEvent {
            device,
            kind,
            key,
            arg,
            ts,
        });
    }

    fn program_event(&mut self, ev: Id) {
        let device_name = self.str_field(ev, "device").unwrap_or_default();
        let device = self.prof.device_index(0, &device_name);
        let name = self.str_field(ev, "name").unwrap_or_default();
        let elf = self.field(ev, "lib").and_then(|l| self.blob(l));
        let base = self
            .field(ev, "base")
            .and_then(|b| self.pk.as_i128(b))
            .and_then(|b| u64::try_from(b).ok());
        let tag = self.int_field(ev, "tag");
        let profile_key = self
            .field(ev, "profile_key")
            .and_then(|k| self.pk.as_bytes(k))
            .map(<[u8]>::to_vec);
        self.prof.programs.push(Program {
            device,
            name,
            elf,
            base,
            tag,
            profile_key,
        });
    }

    fn sqtt_event(&mut self, ev: Id) {
        let device_name = self.str_field(ev, "device").unwrap_or_default();
        let device = self.prof.device_index(0, &device_name);
        let (Some(kern), Some(se), Some(blob)) = (
            self.int_field(ev, "kern"),
            self.int_field(ev, "se"),
            self.field(ev, "blob"),
        ) else {
            self.warn("ProfileSQTTEvent without kern/se/blob; skipped".into());
            return;
        };
        let Some(blob) = self.blob(blob) else {
            self.warn("ProfileSQTTEvent blob is not bytes; skipped".into());
            return;
        };
        let itrace = self
            .field(ev, "itrace")
            .and_then(|i| self.pk.as_int(i))
            .is_some_and(|i| i != 0);
        let exec_tag = self.int_field(ev, "exec_tag");
        let se = u32::try_from(se).unwrap_or(u32::MAX);
        self.prof.sqtt.push(SqttTrace {
            device,
            kern,
            exec_tag,
            se,
            itrace,
            blob,
        });
    }

    fn pmc_event(&mut self, ev: Id) {
        let device_name = self.str_field(ev, "device").unwrap_or_default();
        let device = self.prof.device_index(0, &device_name);
        let kern = self.int_field(ev, "kern").unwrap_or(-1);
        let exec_tag = self.int_field(ev, "exec_tag");
        let Some(blob) = self.field(ev, "blob").and_then(|b| self.blob(b)) else {
            self.warn("ProfilePMCEvent without a bytes blob; skipped".into());
            return;
        };
        let mut samples = Vec::new();
        if let Some(sched) = self.field(ev, "sched").and_then(|s| self.pk.as_seq(s)) {
            for &s in sched {
                let u = |f: &str| {
                    self.int_field(s, f)
                        .and_then(|v| u32::try_from(v).ok())
                        .unwrap_or(0)
                };
                let u64f = |f: &str| {
                    self.int_field(s, f)
                        .and_then(|v| u64::try_from(v).ok())
                        .unwrap_or(0)
                };
                samples.push(PmcSample {
                    name: self.str_field(s, "name").unwrap_or_default(),
                    block: self.str_field(s, "block").unwrap_or_default(),
                    xcc: u("xcc"),
                    inst: u("inst"),
                    se: u("se"),
                    sa: u("sa"),
                    wgp: u("wgp"),
                    off: u64f("off"),
                    size: u64f("size"),
                    regsample: self.str_field(s, "regsample").unwrap_or_default(),
                });
            }
        }
        self.prof.pmc.push(PmcEvent {
            device,
            kern,
            exec_tag,
            samples,
            blob,
        });
    }

    fn graph_event(&mut self, ev: Id) {
        let mut entries = Vec::new();
        if let Some(ents) = self
            .field(ev, "ents")
            .and_then(|e| self.pk.as_seq(e))
            .map(<[Id]>::to_vec)
        {
            for e in ents {
                let device_name = self.str_field(e, "device").unwrap_or_default();
                let device = self.prof.device_index(0, &device_name);
                let name = match self.field(e, "name") {
                    Some(n) => match self.pk.as_str(n) {
                        Some(s) => s.to_string(),
                        None => self
                            .pk
                            .object_field(n, "display_name")
                            .and_then(|d| self.pk.as_str(d))
                            .unwrap_or("?")
                            .to_string(),
                    },
                    None => String::new(),
                };
                let st_id = self
                    .int_field(e, "st_id")
                    .and_then(|v| u32::try_from(v).ok())
                    .unwrap_or(0);
                let en_id = self
                    .int_field(e, "en_id")
                    .and_then(|v| u32::try_from(v).ok())
                    .unwrap_or(0);
                entries.push(GraphEntry {
                    device,
                    name,
                    st_id,
                    en_id,
                });
            }
        }
        let deps = self
            .field(ev, "deps")
            .and_then(|d| self.pk.as_seq(d))
            .map(|d| {
                d.iter()
                    .map(|&l| {
                        self.pk
                            .as_seq(l)
                            .unwrap_or(&[])
                            .iter()
                            .filter_map(|&x| self.pk.as_int(x).and_then(|v| u32::try_from(v).ok()))
                            .collect()
                    })
                    .collect()
            })
            .unwrap_or_default();
        let sigs = self
            .field(ev, "sigs")
            .and_then(|s| self.pk.as_seq(s))
            .map(|s| s.iter().filter_map(|&x| self.time(x)).collect())
            .unwrap_or_default();
        self.prof.graphs.push(GraphEvent {
            entries,
            deps,
            sigs,
        });
    }

    /// Kernel executions: device-clock ranges named like a program of the same base device.
    /// The i-th run of a program gets the i-th distinct `exec_tag` of its SQTT/PMC events when
    /// the counts agree (tinygrad does not store the tag on the range itself).
    fn derive_kernels(&mut self) {
        let p = &self.prof;
        let mut kernels = Vec::new();
        for (ri, r) in p.ranges.iter().enumerate() {
            if !r.device_clock {
                continue;
            }
            let name = strip_ansi(&r.name);
            let dev = &p.devices[r.device as usize];
            let prog = p.programs.iter().find(|pr| {
                pr.name == name
                    && p.devices
                        .get(pr.device as usize)
                        .is_some_and(|pd| pd.base_name() == dev.base_name())
            });
            let Some(prog) = prog else { continue };
            let off = dev.clock_offset.0;
            let ticks = |t: Time| {
                let dev_ps = t.0 - off;
                (dev_ps % 10_000 == 0).then_some(dev_ps / 10_000)
            };
            kernels.push(KernelExec {
                device: r.device,
                name,
                kern: prog.tag,
                exec_tag: None,
                start: r.start,
                end: r.end,
                gpu_start: ticks(r.start),
                gpu_end: r.end.and_then(ticks),
                range: Some(ri as u32),
            });
        }
        kernels.sort_by_key(|k| (k.device, k.start));
        let mut by_kern: BTreeMap<(u32, i64), Vec<usize>> = BTreeMap::new();
        for (i, k) in kernels.iter().enumerate() {
            if let Some(tag) = k.kern {
                by_kern.entry((k.device, tag)).or_default().push(i);
            }
        }
        for ((device, tag), runs) in by_kern {
            let base = p.devices[device as usize].base_name().to_string();
            let mut tags: Vec<i64> = p
                .sqtt
                .iter()
                .filter(|s| s.kern == tag && p.devices[s.device as usize].base_name() == base)
                .filter_map(|s| s.exec_tag)
                .chain(
                    p.pmc
                        .iter()
                        .filter(|s| {
                            s.kern == tag && p.devices[s.device as usize].base_name() == base
                        })
                        .filter_map(|s| s.exec_tag),
                )
                .collect();
            tags.sort_unstable();
            tags.dedup();
            if tags.len() == runs.len() {
                for (run, t) in runs.into_iter().zip(tags) {
                    kernels[run].exec_tag = Some(t);
                }
            }
        }
        self.prof.kernels = kernels;
    }
}
