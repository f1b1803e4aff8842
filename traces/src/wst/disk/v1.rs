//! Metadata schema 1: `postcard` of [`Meta`], gzip-compressed, in the `META` section (container
//! version 2) or right after the header (container version 1, the first release).
//!
//! FROZEN: field order, field types and enum variant order are the encoding (postcard is not
//! self-describing). Do not edit; add a `v2` module instead. `tests/fixtures/wst/*-v1.wst` were
//! written by the first release and must keep decoding to the same model.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model as m;

/// Picoseconds on the profile's common clock.
pub type Ps = i128;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    pub profile: Profile,
    pub blobs: Vec<BlobEntry>,
}

/// One payload in the blob area.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct BlobEntry {
    /// Relative to the start of the blob area.
    pub offset: u64,
    pub len: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Attr {
    None,
    Bool(bool),
    Int(i64),
    BigInt(String),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    BytesLen(u64),
    List(Vec<Attr>),
    Tuple(Vec<Attr>),
    Dict(Vec<(Attr, Attr)>),
    Set(Vec<Attr>),
    Object {
        class: String,
        args: Vec<Attr>,
        fields: Vec<(Attr, Attr)>,
    },
    Global(String),
    Truncated,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Process {
    pub name: String,
    pub pid: Option<u32>,
    pub source: String,
    pub clock_offset: Ps,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Device {
    pub process: u32,
    pub name: String,
    pub declared: bool,
    pub clock_offset: Ps,
    pub props: BTreeMap<String, i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RangeEvent {
    pub device: u32,
    pub name: String,
    pub key: Option<Attr>,
    pub start: Ps,
    pub end: Option<Ps>,
    pub depth: u32,
    pub parent: Option<u32>,
    pub device_clock: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum PointKind {
    Exec,
    Alloc,
    Free,
    Marker,
    Other(String),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PointEvent {
    pub device: u32,
    pub kind: PointKind,
    pub key: Attr,
    pub arg: Attr,
    pub ts: Ps,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Program {
    pub device: u32,
    pub name: String,
    /// Index into the blob table.
    pub elf: Option<u32>,
    pub base: Option<u64>,
    pub tag: Option<i64>,
    pub profile_key: Option<Vec<u8>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KernelExec {
    pub device: u32,
    pub name: String,
    pub kern: Option<i64>,
    pub exec_tag: Option<i64>,
    pub start: Ps,
    pub end: Option<Ps>,
    pub gpu_start: Option<i128>,
    pub gpu_end: Option<i128>,
    pub range: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SqttTrace {
    pub device: u32,
    pub kern: i64,
    pub exec_tag: Option<i64>,
    pub se: u32,
    pub itrace: bool,
    pub blob: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PmcSample {
    pub name: String,
    pub block: String,
    pub xcc: u32,
    pub inst: u32,
    pub se: u32,
    pub sa: u32,
    pub wgp: u32,
    pub off: u64,
    pub size: u64,
    pub regsample: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PmcEvent {
    pub device: u32,
    pub kern: i64,
    pub exec_tag: Option<i64>,
    pub samples: Vec<PmcSample>,
    pub blob: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GraphEntry {
    pub device: u32,
    pub name: String,
    pub st_id: u32,
    pub en_id: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GraphEvent {
    pub entries: Vec<GraphEntry>,
    pub deps: Vec<Vec<u32>>,
    pub sigs: Vec<Ps>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CounterSeries {
    pub device: u32,
    pub name: String,
    pub unit: String,
    pub points: Vec<(Ps, f64)>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GenericRecord {
    pub class: String,
    pub value: Attr,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SourceInfo {
    pub format: String,
    pub event_counts: BTreeMap<String, u64>,
    pub warnings: Vec<String>,
}

/// The model without its blobs (they are in the blob area, indexed by [`Meta::blobs`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Profile {
    pub processes: Vec<Process>,
    pub devices: Vec<Device>,
    pub ranges: Vec<RangeEvent>,
    pub points: Vec<PointEvent>,
    pub programs: Vec<Program>,
    pub kernels: Vec<KernelExec>,
    pub sqtt: Vec<SqttTrace>,
    pub pmc: Vec<PmcEvent>,
    pub graphs: Vec<GraphEvent>,
    pub counters: Vec<CounterSeries>,
    pub generic: Vec<GenericRecord>,
    pub source: SourceInfo,
}

// Model -> disk (writing) and disk -> model (reading). Written out field by field so a model
// change is a compile error here, where its on-disk meaning has to be decided.

fn vec<A, B: for<'a> From<&'a A>>(v: &[A]) -> Vec<B> {
    v.iter().map(B::from).collect()
}
fn back<A, B: From<A>>(v: Vec<A>) -> Vec<B> {
    v.into_iter().map(B::from).collect()
}

impl From<&m::Attr> for Attr {
    fn from(a: &m::Attr) -> Self {
        let pairs = |v: &[(m::Attr, m::Attr)]| {
            v.iter()
                .map(|(k, x)| (Attr::from(k), Attr::from(x)))
                .collect()
        };
        match a {
            m::Attr::None => Attr::None,
            m::Attr::Bool(b) => Attr::Bool(*b),
            m::Attr::Int(i) => Attr::Int(*i),
            m::Attr::BigInt(s) => Attr::BigInt(s.clone()),
            m::Attr::Float(f) => Attr::Float(*f),
            m::Attr::Str(s) => Attr::Str(s.clone()),
            m::Attr::Bytes(b) => Attr::Bytes(b.clone()),
            m::Attr::BytesLen(n) => Attr::BytesLen(*n),
            m::Attr::List(v) => Attr::List(vec(v)),
            m::Attr::Tuple(v) => Attr::Tuple(vec(v)),
            m::Attr::Dict(v) => Attr::Dict(pairs(v)),
            m::Attr::Set(v) => Attr::Set(vec(v)),
            m::Attr::Object {
                class,
                args,
                fields,
            } => Attr::Object {
                class: class.clone(),
                args: vec(args),
                fields: pairs(fields),
            },
            m::Attr::Global(s) => Attr::Global(s.clone()),
            m::Attr::Truncated => Attr::Truncated,
        }
    }
}

impl From<Attr> for m::Attr {
    fn from(a: Attr) -> Self {
        let pairs = |v: Vec<(Attr, Attr)>| {
            v.into_iter()
                .map(|(k, x)| (m::Attr::from(k), m::Attr::from(x)))
                .collect()
        };
        match a {
            Attr::None => m::Attr::None,
            Attr::Bool(b) => m::Attr::Bool(b),
            Attr::Int(i) => m::Attr::Int(i),
            Attr::BigInt(s) => m::Attr::BigInt(s),
            Attr::Float(f) => m::Attr::Float(f),
            Attr::Str(s) => m::Attr::Str(s),
            Attr::Bytes(b) => m::Attr::Bytes(b),
            Attr::BytesLen(n) => m::Attr::BytesLen(n),
            Attr::List(v) => m::Attr::List(back(v)),
            Attr::Tuple(v) => m::Attr::Tuple(back(v)),
            Attr::Dict(v) => m::Attr::Dict(pairs(v)),
            Attr::Set(v) => m::Attr::Set(back(v)),
            Attr::Object {
                class,
                args,
                fields,
            } => m::Attr::Object {
                class,
                args: back(args),
                fields: pairs(fields),
            },
            Attr::Global(s) => m::Attr::Global(s),
            Attr::Truncated => m::Attr::Truncated,
        }
    }
}

impl From<&m::PointKind> for PointKind {
    fn from(k: &m::PointKind) -> Self {
        match k {
            m::PointKind::Exec => PointKind::Exec,
            m::PointKind::Alloc => PointKind::Alloc,
            m::PointKind::Free => PointKind::Free,
            m::PointKind::Marker => PointKind::Marker,
            m::PointKind::Other(s) => PointKind::Other(s.clone()),
        }
    }
}

impl From<PointKind> for m::PointKind {
    fn from(k: PointKind) -> Self {
        match k {
            PointKind::Exec => m::PointKind::Exec,
            PointKind::Alloc => m::PointKind::Alloc,
            PointKind::Free => m::PointKind::Free,
            PointKind::Marker => m::PointKind::Marker,
            PointKind::Other(s) => m::PointKind::Other(s),
        }
    }
}

/// Generates both conversions of a record whose fields map one to one; `time` fields are
/// [`m::Time`] in the model and [`Ps`] on disk, `blob` fields [`m::BlobId`] and `u32`, `attr`
/// fields [`m::Attr`] and [`Attr`], `list` fields vectors of converted records.
macro_rules! record {
    ($name:ident { $($f:ident : $kind:ident),* $(,)? }) => {
        impl From<&m::$name> for $name {
            fn from(x: &m::$name) -> Self {
                $name { $($f: record!(@out $kind, &x.$f)),* }
            }
        }
        impl From<$name> for m::$name {
            fn from(x: $name) -> Self {
                m::$name { $($f: record!(@in $kind, x.$f)),* }
            }
        }
    };
    (@out same, $e:expr) => { $e.clone() };
    (@in same, $e:expr) => { $e };
    (@out time, $e:expr) => { $e.0 };
    (@in time, $e:expr) => { m::Time($e) };
    (@out opt_time, $e:expr) => { $e.map(|t| t.0) };
    (@in opt_time, $e:expr) => { $e.map(m::Time) };
    (@out blob, $e:expr) => { $e.0 };
    (@in blob, $e:expr) => { m::BlobId($e) };
    (@out opt_blob, $e:expr) => { $e.map(|b| b.0) };
    (@in opt_blob, $e:expr) => { $e.map(m::BlobId) };
    (@out attr, $e:expr) => { Attr::from($e) };
    (@in attr, $e:expr) => { m::Attr::from($e) };
    (@out opt_attr, $e:expr) => { $e.as_ref().map(Attr::from) };
    (@in opt_attr, $e:expr) => { $e.map(m::Attr::from) };
    (@out kind, $e:expr) => { PointKind::from($e) };
    (@in kind, $e:expr) => { m::PointKind::from($e) };
    (@out list, $e:expr) => { vec($e) };
    (@in list, $e:expr) => { back($e) };
}

record!(Process {
    name: same,
    pid: same,
    source: same,
    clock_offset: time
});
record!(Device {
    process: same,
    name: same,
    declared: same,
    clock_offset: time,
    props: same
});
record!(RangeEvent {
    device: same,
    name: same,
    key: opt_attr,
    start: time,
    end: opt_time,
    depth: same,
    parent: same,
    device_clock: same,
});
record!(PointEvent {
    device: same,
    kind: kind,
    key: attr,
    arg: attr,
    ts: time
});
record!(Program {
    device: same,
    name: same,
    elf: opt_blob,
    base: same,
    tag: same,
    profile_key: same,
});
record!(KernelExec {
    device: same,
    name: same,
    kern: same,
    exec_tag: same,
    start: time,
    end: opt_time,
    gpu_start: same,
    gpu_end: same,
    range: same,
});
record!(SqttTrace {
    device: same,
    kern: same,
    exec_tag: same,
    se: same,
    itrace: same,
    blob: blob
});
record!(PmcSample {
    name: same,
    block: same,
    xcc: same,
    inst: same,
    se: same,
    sa: same,
    wgp: same,
    off: same,
    size: same,
    regsample: same,
});
record!(PmcEvent {
    device: same,
    kern: same,
    exec_tag: same,
    samples: list,
    blob: blob
});
record!(GraphEntry {
    device: same,
    name: same,
    st_id: same,
    en_id: same
});
record!(GenericRecord {
    class: same,
    value: attr
});
record!(SourceInfo {
    format: same,
    event_counts: same,
    warnings: same
});

impl From<&m::GraphEvent> for GraphEvent {
    fn from(g: &m::GraphEvent) -> Self {
        GraphEvent {
            entries: vec(&g.entries),
            deps: g.deps.clone(),
            sigs: g.sigs.iter().map(|t| t.0).collect(),
        }
    }
}
impl From<GraphEvent> for m::GraphEvent {
    fn from(g: GraphEvent) -> Self {
        m::GraphEvent {
            entries: back(g.entries),
            deps: g.deps,
            sigs: g.sigs.into_iter().map(m::Time).collect(),
        }
    }
}

impl From<&m::CounterSeries> for CounterSeries {
    fn from(c: &m::CounterSeries) -> Self {
        CounterSeries {
            device: c.device,
            name: c.name.clone(),
            unit: c.unit.clone(),
            points: c.points.iter().map(|(t, v)| (t.0, *v)).collect(),
        }
    }
}
impl From<CounterSeries> for m::CounterSeries {
    fn from(c: CounterSeries) -> Self {
        m::CounterSeries {
            device: c.device,
            name: c.name,
            unit: c.unit,
            points: c.points.into_iter().map(|(t, v)| (m::Time(t), v)).collect(),
        }
    }
}

impl From<&m::Profile> for Profile {
    fn from(p: &m::Profile) -> Self {
        Profile {
            processes: vec(&p.processes),
            devices: vec(&p.devices),
            ranges: vec(&p.ranges),
            points: vec(&p.points),
            programs: vec(&p.programs),
            kernels: vec(&p.kernels),
            sqtt: vec(&p.sqtt),
            pmc: vec(&p.pmc),
            graphs: vec(&p.graphs),
            counters: vec(&p.counters),
            generic: vec(&p.generic),
            source: SourceInfo::from(&p.source),
        }
    }
}

/// The model without blobs; the reader attaches them from the blob table.
impl From<Profile> for m::Profile {
    fn from(p: Profile) -> Self {
        m::Profile {
            processes: back(p.processes),
            devices: back(p.devices),
            ranges: back(p.ranges),
            points: back(p.points),
            programs: back(p.programs),
            kernels: back(p.kernels),
            sqtt: back(p.sqtt),
            pmc: back(p.pmc),
            graphs: back(p.graphs),
            counters: back(p.counters),
            generic: back(p.generic),
            source: p.source.into(),
            blobs: Vec::new(),
        }
    }
}
