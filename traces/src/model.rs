//! The profile model: what wavescope knows about one capture, independent of the file it came from.
//!
//! All times are [`Time`] values on one common host clock (picoseconds), so traces of several
//! devices and several processes can be merged. Large byte payloads (SQTT streams, ELF code
//! objects, PMC buffers) live in [`Profile::blobs`] and are referenced by [`BlobId`]; the blob
//! table is not part of the serde encoding, so formats can store blobs raw (see `wst`).

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A point in time on the profile's common clock, in picoseconds.
///
/// tinygrad writes microseconds as `Decimal` with up to 4 fractional digits; picoseconds hold
/// them exactly, and i128 keeps any realistic uptime in range.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub struct Time(pub i128);

impl Time {
    pub const PS_PER_US: i128 = 1_000_000;

    pub fn from_us_f64(us: f64) -> Time {
        Time((us * Self::PS_PER_US as f64).round() as i128)
    }

    /// Microseconds as a float (for display and JSON exports).
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / Self::PS_PER_US as f64
    }

    /// Parses a decimal number of microseconds (`"536178219523.546"`, `"-1.5"`, `"2E+3"`) exactly
    /// to picoseconds; digits below a picosecond are rounded half away from zero.
    pub fn parse_us(s: &str) -> Option<Time> {
        let s = s.trim();
        let (neg, body) = match s.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, s.strip_prefix('+').unwrap_or(s)),
        };
        let (mant, exp) = match body.find(['e', 'E']) {
            Some(i) => (&body[..i], body[i + 1..].parse::<i32>().ok()?),
            None => (body, 0),
        };
        let (int_part, frac_part) = match mant.find('.') {
            Some(i) => (&mant[..i], &mant[i + 1..]),
            None => (mant, ""),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return None;
        }
        if !int_part.bytes().all(|b| b.is_ascii_digit())
            || !frac_part.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        // value = digits * 10^(exp - frac_len) µs = digits * 10^(exp - frac_len + 6) ps
        let digits: String = format!("{int_part}{frac_part}");
        let digits = digits.trim_start_matches('0');
        let shift = exp
            .checked_sub(i32::try_from(frac_part.len()).ok()?)?
            .checked_add(6)?;
        if digits.len() > 36 {
            return None;
        }
        let mut v: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().ok()?
        };
        if shift >= 0 {
            for _ in 0..shift {
                v = v.checked_mul(10)?;
            }
        } else {
            let mut round = false;
            for _ in 0..(-shift).min(40) {
                round = v % 10 >= 5;
                v /= 10;
            }
            if round {
                v += 1;
            }
        }
        Some(Time(if neg { -v } else { v }))
    }
}

impl fmt::Display for Time {
    /// Microseconds with the exact fraction, trailing zeros removed (`536178219523.546`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let a = self.0.unsigned_abs();
        let int = a / 1_000_000;
        let frac = a % 1_000_000;
        if frac == 0 {
            write!(f, "{sign}{int}")
        } else {
            let s = format!("{frac:06}");
            write!(f, "{sign}{int}.{}", s.trim_end_matches('0'))
        }
    }
}

/// Index into [`Profile::blobs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BlobId(pub u32);

/// Where the bytes of a blob live: owned memory or a memory-mapped file.
#[derive(Debug)]
pub enum BlobStore {
    Owned(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl BlobStore {
    pub fn bytes(&self) -> &[u8] {
        match self {
            BlobStore::Owned(v) => v,
            BlobStore::Mapped(m) => m,
        }
    }

    /// Tells the kernel the mapped bytes in `range` (absolute offsets) are not needed soon: their
    /// pages leave the resident set and are re-read from the file if touched again. For tables
    /// scanned once (the analysis index's wave tables); nothing for owned bytes.
    pub fn release(&self, range: Range<u64>) {
        if let BlobStore::Mapped(m) = self {
            let (a, b) = (
                usize::try_from(range.start).unwrap_or(usize::MAX),
                usize::try_from(range.end).unwrap_or(usize::MAX),
            );
            crate::mapped::release_range(m, a, b);
        }
    }
}

/// A cheaply clonable byte payload: a range of a shared [`BlobStore`].
#[derive(Clone)]
pub struct Blob {
    store: Arc<BlobStore>,
    range: Range<usize>,
}

impl Blob {
    pub fn from_vec(v: Vec<u8>) -> Blob {
        let range = 0..v.len();
        Blob {
            store: Arc::new(BlobStore::Owned(v)),
            range,
        }
    }

    /// A sub-range of a shared store; `None` if the range is outside it.
    pub fn slice_of(store: &Arc<BlobStore>, range: Range<usize>) -> Option<Blob> {
        if range.start > range.end || range.end > store.bytes().len() {
            return None;
        }
        Some(Blob {
            store: store.clone(),
            range,
        })
    }

    pub fn as_bytes(&self) -> &[u8] {
        // The range was checked against the store when the blob was made.
        self.store.bytes().get(self.range.clone()).unwrap_or(&[])
    }

    pub fn len(&self) -> usize {
        self.range.len()
    }

    /// Lets the kernel drop the resident pages of `self[..end]` when the blob is a slice of a
    /// mapped file (a no-op for owned bytes): a reader that streams a large blob once keeps
    /// its memory flat. The bytes stay readable; touched again, they are read from the file.
    pub fn release_prefix(&self, end: usize) {
        self.release_part(0, end);
    }

    /// [`Blob::release_prefix`] for `self[start..end]` only (whole pages inside it).
    pub fn release_part(&self, start: usize, end: usize) {
        let end = self.range.start + end.min(self.range.len());
        let start = (self.range.start + start).min(end);
        self.store.release(start as u64..end as u64);
    }

    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }
}

impl PartialEq for Blob {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}
impl Eq for Blob {}

impl fmt::Debug for Blob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Blob({} bytes)", self.len())
    }
}

/// A generic value kept from the source file (event arguments, tracing keys, unknown records).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Attr {
    None,
    Bool(bool),
    Int(i64),
    /// Integers outside i64, as decimal text.
    BigInt(String),
    Float(f64),
    Str(String),
    /// Bytes are kept inline only when small; larger ones keep their length.
    Bytes(Vec<u8>),
    BytesLen(u64),
    List(Vec<Attr>),
    Tuple(Vec<Attr>),
    Dict(Vec<(Attr, Attr)>),
    Set(Vec<Attr>),
    /// An instance of a class: `module.name`, constructor arguments, state fields.
    Object {
        class: String,
        args: Vec<Attr>,
        fields: Vec<(Attr, Attr)>,
    },
    /// A class or function reference.
    Global(String),
    /// Conversion stopped here (nesting or size budget).
    Truncated,
}

impl Attr {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Attr::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Attr::Int(i) => Some(*i),
            _ => None,
        }
    }
}

/// One process whose events are in the profile (a profile can merge several).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Process {
    pub name: String,
    pub pid: Option<u32>,
    /// Where this process' events were read from (file name and format).
    pub source: String,
    /// Added to this process' host times to place them on the common clock.
    pub clock_offset: Time,
}

/// A device or track owner (`AMD`, `AMD:SDMA:0`, `CPU`, and host-side tracks like `TINY`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Device {
    pub process: u32,
    pub name: String,
    /// True when the source declared the device (tinygrad `ProfileDeviceEvent`); host-side tracks
    /// that only appear as event owners are undeclared.
    pub declared: bool,
    /// Device time + `clock_offset` = common clock (tinygrad `tdiff`).
    pub clock_offset: Time,
    /// KFD topology properties (`gfx_target_version`, `simd_count`, ...).
    pub props: BTreeMap<String, i64>,
}

impl Device {
    /// The base device of a queue device (`AMD:SDMA:0` -> `AMD`).
    pub fn base_name(&self) -> &str {
        self.name.split(':').next().unwrap_or(&self.name)
    }

    pub fn target(&self) -> Option<crate::GfxTarget> {
        let v = *self.props.get("gfx_target_version")?;
        Some(crate::GfxTarget::from_target_version(
            u32::try_from(v).ok()?,
        ))
    }
}

/// How a device's SQTT stream numbers split into XCC and SE. Multi-XCC parts (gfx942/gfx950)
/// record one stream per SE of every XCC, numbered `xcc * ses_per_xcc + se` (tinygrad's
/// `kern{k}_se{i}`, with `se_cnt = array_count / simd_arrays_per_engine / num_xcc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeLayout {
    pub xccs: u32,
    pub ses_per_xcc: u32,
}

impl SeLayout {
    /// From the KFD properties: `num_xcc`, and `array_count / simd_arrays_per_engine` SEs over
    /// all XCCs. `None` for single-XCC devices and when the properties are missing or do not
    /// divide evenly (the stream number alone is then the honest name).
    pub fn of(dev: &Device) -> Option<SeLayout> {
        let p = |k: &str| dev.props.get(k).and_then(|&v| u32::try_from(v).ok());
        let xccs = p("num_xcc")?;
        let arrays = p("array_count")?;
        let per_se = p("simd_arrays_per_engine")?;
        if xccs <= 1 || per_se == 0 || arrays % per_se != 0 {
            return None;
        }
        let ses = arrays / per_se;
        if ses == 0 || ses % xccs != 0 {
            return None;
        }
        Some(SeLayout {
            xccs,
            ses_per_xcc: ses / xccs,
        })
    }

    /// (XCC, SE within that XCC) of stream `se`.
    pub fn split(&self, se: u32) -> (u32, u32) {
        (se / self.ses_per_xcc, se % self.ses_per_xcc)
    }
}

/// A stream's display name: "XCC x · SE y" on a multi-XCC device, else "SE n".
pub fn se_label(layout: Option<SeLayout>, se: u32) -> String {
    match layout {
        Some(l) => {
            let (x, s) = l.split(se);
            format!("XCC {x} · SE {s}")
        }
        None => format!("SE {se}"),
    }
}

/// A timed range (CPU work, a copy, a kernel as seen by the host).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RangeEvent {
    pub device: u32,
    pub name: String,
    /// Extra identity of the range (tinygrad `TracingKey`: keys, ret, traceback).
    pub key: Option<Attr>,
    pub start: Time,
    pub end: Option<Time>,
    /// Nesting level on its device track (0 = outermost), computed at import.
    pub depth: u32,
    /// Enclosing range on the same track.
    pub parent: Option<u32>,
    /// True when `start`/`end` came from a device clock (converted with the device's offset).
    pub device_clock: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum PointKind {
    Exec,
    Alloc,
    Free,
    Marker,
    Other(String),
}

/// An instant event (kernel launch, buffer alloc/free, user marker).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointEvent {
    pub device: u32,
    pub kind: PointKind,
    pub key: Attr,
    pub arg: Attr,
    pub ts: Time,
}

/// A loaded program (code object).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Program {
    pub device: u32,
    pub name: String,
    /// The code object as loaded (normally an AMDGPU ELF).
    pub elf: Option<BlobId>,
    /// GPU virtual address the image is mapped at.
    pub base: Option<u64>,
    /// Per-device program id (tinygrad `tag`), referenced by `KernelExec::kern` and SQTT.
    pub tag: Option<i64>,
    pub profile_key: Option<Vec<u8>>,
}

/// One kernel execution on a device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelExec {
    pub device: u32,
    pub name: String,
    /// Program tag (`Program::tag`), if known.
    pub kern: Option<i64>,
    /// Device launch counter; `(kern, exec_tag)` identifies one run.
    pub exec_tag: Option<i64>,
    /// Start/end on the common clock.
    pub start: Time,
    pub end: Option<Time>,
    /// Start/end in device timestamp ticks (100 MHz on AMD), when known.
    pub gpu_start: Option<i128>,
    pub gpu_end: Option<i128>,
    /// The range event this execution was derived from.
    pub range: Option<u32>,
}

/// One SQTT stream: one shader engine during one kernel run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SqttTrace {
    pub device: u32,
    pub kern: i64,
    pub exec_tag: Option<i64>,
    pub se: u32,
    pub itrace: bool,
    pub blob: BlobId,
}

/// Layout of one counter inside a PMC buffer (tinygrad `PMCSample`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// Performance-counter samples of one kernel run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PmcEvent {
    pub device: u32,
    pub kern: i64,
    pub exec_tag: Option<i64>,
    pub samples: Vec<PmcSample>,
    pub blob: BlobId,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphEntry {
    pub device: u32,
    pub name: String,
    pub st_id: u32,
    pub en_id: u32,
}

/// A replayed command graph (tinygrad `ProfileGraphEvent`): entries timed by signal values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphEvent {
    pub entries: Vec<GraphEntry>,
    pub deps: Vec<Vec<u32>>,
    /// Signal times on the device clock of each entry's device (not offset).
    pub sigs: Vec<Time>,
}

/// A named numeric series (memory in use, bandwidth, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterSeries {
    pub device: u32,
    pub name: String,
    pub unit: String,
    pub points: Vec<(Time, f64)>,
}

/// An event of a class the importer does not know, kept generically.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenericRecord {
    pub class: String,
    pub value: Attr,
}

/// Where the profile came from.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SourceInfo {
    /// `tinygrad-pickle`, `wst`, `rgp`, ...
    pub format: String,
    /// Count of top-level events per source class name (tinygrad: `ProfileRangeEvent`, ...).
    pub event_counts: BTreeMap<String, u64>,
    pub warnings: Vec<String>,
}

/// A whole capture.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
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
    /// Payloads referenced by [`BlobId`]; stored outside the serde encoding.
    #[serde(skip)]
    pub blobs: Vec<Blob>,
}

impl Profile {
    /// The XCC/SE split of device `device`'s SQTT streams (`None`: single XCC or unknown).
    pub fn se_layout(&self, device: u32) -> Option<SeLayout> {
        SeLayout::of(self.props_device(device)?)
    }

    pub fn add_blob(&mut self, blob: Blob) -> BlobId {
        self.blobs.push(blob);
        BlobId((self.blobs.len() - 1) as u32)
    }

    /// The bytes of a blob (empty if the id is dangling).
    pub fn blob(&self, id: BlobId) -> &[u8] {
        self.blobs
            .get(id.0 as usize)
            .map(Blob::as_bytes)
            .unwrap_or(&[])
    }

    /// Index of the device `name` of `process`, creating an undeclared one if missing.
    pub fn device_index(&mut self, process: u32, name: &str) -> u32 {
        if let Some(i) = self
            .devices
            .iter()
            .position(|d| d.process == process && d.name == name)
        {
            return i as u32;
        }
        self.devices.push(Device {
            process,
            name: name.to_string(),
            declared: false,
            clock_offset: Time(0),
            props: BTreeMap::new(),
        });
        (self.devices.len() - 1) as u32
    }

    pub fn find_device(&self, process: u32, name: &str) -> Option<u32> {
        self.devices
            .iter()
            .position(|d| d.process == process && d.name == name)
            .map(|i| i as u32)
    }

    /// The declared device carrying props for `device` (its base device if it has none).
    pub fn props_device(&self, device: u32) -> Option<&Device> {
        let d = self.devices.get(device as usize)?;
        if !d.props.is_empty() {
            return Some(d);
        }
        let base = d.base_name();
        self.devices
            .iter()
            .find(|o| o.process == d.process && o.name == base && !o.props.is_empty())
    }

    /// The program a kernel tag refers to on a device (or its base device).
    pub fn program_for(&self, device: u32, kern: i64) -> Option<&Program> {
        let dev = self.devices.get(device as usize)?;
        self.programs.iter().find(|p| {
            p.tag == Some(kern)
                && self.devices.get(p.device as usize).is_some_and(|pd| {
                    pd.process == dev.process && pd.base_name() == dev.base_name()
                })
        })
    }

    /// Kernel run `ki`'s program and its code object, parsed for the device it ran on
    /// (hand-assembled code objects name no target); `None` when the program, its code object
    /// or the parse is missing.
    pub fn run_code_object(&self, ki: usize) -> Option<(crate::isa::CodeObject, &Program)> {
        let k = self.kernels.get(ki)?;
        let prog = self.program_for(k.device, k.kern?)?;
        let target = self.props_device(k.device).and_then(|d| d.target());
        let code = crate::isa::CodeObject::parse_with_target(self.blob(prog.elf?), target).ok()?;
        Some((code, prog))
    }

    /// Recomputes `depth` and `parent` of all ranges from their times, per device track.
    pub fn compute_nesting(&mut self) {
        let mut order: Vec<usize> = (0..self.ranges.len()).collect();
        order.sort_by(|&a, &b| {
            let (ra, rb) = (&self.ranges[a], &self.ranges[b]);
            (ra.device, ra.start, std::cmp::Reverse(ra.end)).cmp(&(
                rb.device,
                rb.start,
                std::cmp::Reverse(rb.end),
            ))
        });
        let mut stack: Vec<usize> = Vec::new();
        let mut cur_dev = None;
        for i in order {
            let (dev, start) = (self.ranges[i].device, self.ranges[i].start);
            if cur_dev != Some(dev) {
                stack.clear();
                cur_dev = Some(dev);
            }
            while let Some(&top) = stack.last() {
                let top_end = self.ranges[top].end.unwrap_or(self.ranges[top].start);
                let end = self.ranges[i].end.unwrap_or(start);
                if start >= self.ranges[top].start && end <= top_end && start < top_end {
                    break;
                }
                stack.pop();
            }
            self.ranges[i].parent = stack.last().map(|&p| p as u32);
            self.ranges[i].depth = stack.len() as u32;
            stack.push(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_us_to_ps() {
        assert_eq!(
            Time::parse_us("536178219523.546"),
            Some(Time(536_178_219_523_546_000))
        );
        assert_eq!(
            Time::parse_us("35707965.5945"),
            Some(Time(35_707_965_594_500))
        );
        assert_eq!(Time::parse_us("0"), Some(Time(0)));
        assert_eq!(Time::parse_us("-1.5"), Some(Time(-1_500_000)));
        assert_eq!(Time::parse_us("2E+3"), Some(Time(2_000_000_000)));
        assert_eq!(Time::parse_us("0.0000005"), Some(Time(1)));
        assert_eq!(Time::parse_us("abc"), None);
        assert_eq!(Time::parse_us("1e999999"), None);
        assert_eq!(Time(35_707_965_594_500).to_string(), "35707965.5945");
    }
}
