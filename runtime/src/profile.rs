//! Profile events recorded by the runtime, turned into the `traces` model and saved as `.wst`.

use std::collections::BTreeMap;
use std::path::Path;

use traces::model::Attr;
use traces::model::{
    Blob, Device as ModelDevice, KernelExec, PointEvent, PointKind, Process, Profile,
    Program as ModelProgram, RangeEvent, SourceInfo, SqttTrace, Time,
};

use crate::error::{Error, Result};
use crate::platform::DeviceProps;
use crate::signal::TIMESTAMP_DIVIDER;

/// What happened, in the runtime's own terms (GPU times in 100 MHz ticks).
#[derive(Debug, Clone)]
pub enum ProfileEvent {
    Kernel {
        name: String,
        kern: i64,
        exec_tag: i64,
        gpu_start: u64,
        gpu_end: u64,
    },
    Copy {
        name: String,
        gpu_start: u64,
        gpu_end: u64,
    },
    Alloc {
        kind: &'static str,
        size: u64,
        va: u64,
        host_us: f64,
    },
    Free {
        va: u64,
        host_us: f64,
    },
    Program {
        name: String,
        elf: Vec<u8>,
        base: u64,
        tag: i64,
    },
    Sqtt {
        kern: i64,
        exec_tag: i64,
        se: u32,
        itrace: bool,
        blob: Vec<u8>,
    },
    /// Host-side work of the runtime itself (µs on the same host clock as `Alloc`), drawn on
    /// the profile's [`HOST_TRACK`]: `kind` is one of [`HostKind`]'s labels.
    Host {
        kind: HostKind,
        name: String,
        start_us: f64,
        end_us: f64,
    },
    /// Counter values of one kernel run, laid out as `samples` say.
    Pmc {
        kern: i64,
        exec_tag: i64,
        samples: Vec<traces::model::PmcSample>,
        blob: Vec<u8>,
    },
}

/// The undeclared model device whose ranges are the runtime's host-side work (tinygrad, too,
/// puts host ranges on undeclared devices).
pub const HOST_TRACK: &str = "CPU";

/// What a host range did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostKind {
    /// Loading a code object (its allocation, copy and wait nest inside).
    Load,
    Alloc,
    /// A host<->device copy as the host sees it (staging writes, submits, waits).
    Copy,
    Submit,
    Wait,
    /// A kernel launch as the host sees it (building the commands, submitting them).
    Launch,
}

impl HostKind {
    /// The label kept as the range's `key` in the model.
    pub fn label(self) -> &'static str {
        match self {
            HostKind::Load => "load",
            HostKind::Alloc => "alloc",
            HostKind::Copy => "copy",
            HostKind::Submit => "submit",
            HostKind::Wait => "wait",
            HostKind::Launch => "launch",
        }
    }
}

/// Collects events and the GPU→host clock offsets.
#[derive(Debug, Default)]
pub struct Recorder {
    pub events: Vec<ProfileEvent>,
    /// Host µs minus GPU µs, for the compute and the copy queue.
    pub compute_offset_us: f64,
    pub copy_offset_us: f64,
    pub warnings: Vec<String>,
    /// Bytes of one wave's scratch slice (COMPUTE_TMPRING_SIZE.WAVESIZE as programmed), kept as
    /// the device property `scratch_wave_bytes` for the occupancy analysis.
    pub scratch_wave_bytes: u64,
}

fn props_map(p: &DeviceProps) -> BTreeMap<String, i64> {
    let mut m = BTreeMap::new();
    for (k, v) in [
        ("gfx_target_version", p.gfx_target_version),
        ("simd_count", p.simd_count),
        ("simd_per_cu", p.simd_per_cu),
        ("max_waves_per_simd", p.max_waves_per_simd),
        ("array_count", p.array_count),
        ("simd_arrays_per_engine", p.simd_arrays_per_engine),
        ("cu_per_simd_array", p.cu_per_simd_array),
        ("lds_size_in_kb", p.lds_size_in_kb),
        ("max_slots_scratch_cu", p.max_slots_scratch_cu),
        ("num_xcc", p.num_xcc),
    ] {
        m.insert(k.to_string(), i64::from(v));
    }
    m
}

fn host_time(ticks: u64, offset_us: f64) -> Time {
    Time::from_us_f64(ticks as f64 / TIMESTAMP_DIVIDER as f64 + offset_us)
}

impl Recorder {
    /// Builds a `traces` profile (device "AMD" and its copy engine "AMD:SDMA:0").
    pub fn to_profile(&self, props: &DeviceProps) -> Profile {
        let mut p = Profile::default();
        p.processes.push(Process {
            name: "wavescope runtime".into(),
            pid: Some(std::process::id()),
            source: "runtime".into(),
            clock_offset: Time(0),
        });
        let mut props = props_map(props);
        if self.scratch_wave_bytes > 0 {
            props.insert(
                "scratch_wave_bytes".into(),
                i64::try_from(self.scratch_wave_bytes).unwrap_or(i64::MAX),
            );
        }
        let dev = |name: &str| ModelDevice {
            process: 0,
            name: name.into(),
            declared: true,
            clock_offset: Time(0),
            props: props.clone(),
        };
        p.devices.push(dev("AMD"));
        p.devices.push(dev("AMD:SDMA:0"));
        let host_dev = if self
            .events
            .iter()
            .any(|e| matches!(e, ProfileEvent::Host { .. }))
        {
            p.devices.push(ModelDevice {
                process: 0,
                name: HOST_TRACK.into(),
                declared: false,
                clock_offset: Time(0),
                props: BTreeMap::new(),
            });
            (p.devices.len() - 1) as u32
        } else {
            0
        };
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for e in &self.events {
            let class = match e {
                ProfileEvent::Kernel {
                    name,
                    kern,
                    exec_tag,
                    gpu_start,
                    gpu_end,
                } => {
                    let (s, en) = (
                        host_time(*gpu_start, self.compute_offset_us),
                        host_time(*gpu_end, self.compute_offset_us),
                    );
                    p.ranges.push(RangeEvent {
                        device: 0,
                        name: name.clone(),
                        key: Some(Attr::Int(*kern)),
                        start: s,
                        end: Some(en),
                        depth: 0,
                        parent: None,
                        device_clock: false,
                    });
                    p.kernels.push(KernelExec {
                        device: 0,
                        name: name.clone(),
                        kern: Some(*kern),
                        exec_tag: Some(*exec_tag),
                        start: s,
                        end: Some(en),
                        gpu_start: Some(i128::from(*gpu_start)),
                        gpu_end: Some(i128::from(*gpu_end)),
                        range: Some((p.ranges.len() - 1) as u32),
                    });
                    "ProfileRangeEvent"
                }
                ProfileEvent::Copy {
                    name,
                    gpu_start,
                    gpu_end,
                } => {
                    p.ranges.push(RangeEvent {
                        device: 1,
                        name: name.clone(),
                        key: None,
                        start: host_time(*gpu_start, self.copy_offset_us),
                        end: Some(host_time(*gpu_end, self.copy_offset_us)),
                        depth: 0,
                        parent: None,
                        device_clock: false,
                    });
                    "ProfileRangeEvent"
                }
                ProfileEvent::Alloc {
                    kind,
                    size,
                    va,
                    host_us,
                } => {
                    p.points.push(PointEvent {
                        device: 0,
                        kind: PointKind::Alloc,
                        key: Attr::Int(*va as i64),
                        arg: Attr::Tuple(vec![Attr::Str((*kind).into()), Attr::Int(*size as i64)]),
                        ts: Time::from_us_f64(*host_us),
                    });
                    "ProfilePointEvent"
                }
                ProfileEvent::Free { va, host_us } => {
                    p.points.push(PointEvent {
                        device: 0,
                        kind: PointKind::Free,
                        key: Attr::Int(*va as i64),
                        arg: Attr::None,
                        ts: Time::from_us_f64(*host_us),
                    });
                    "ProfilePointEvent"
                }
                ProfileEvent::Program {
                    name,
                    elf,
                    base,
                    tag,
                } => {
                    let id = p.add_blob(Blob::from_vec(elf.clone()));
                    p.programs.push(ModelProgram {
                        device: 0,
                        name: name.clone(),
                        elf: Some(id),
                        base: Some(*base),
                        tag: Some(*tag),
                        profile_key: None,
                    });
                    "ProfileProgramEvent"
                }
                ProfileEvent::Sqtt {
                    kern,
                    exec_tag,
                    se,
                    itrace,
                    blob,
                } => {
                    let id = p.add_blob(Blob::from_vec(blob.clone()));
                    p.sqtt.push(SqttTrace {
                        device: 0,
                        kern: *kern,
                        exec_tag: Some(*exec_tag),
                        se: *se,
                        itrace: *itrace,
                        blob: id,
                    });
                    "ProfileSQTTEvent"
                }
                ProfileEvent::Host {
                    kind,
                    name,
                    start_us,
                    end_us,
                } => {
                    p.ranges.push(RangeEvent {
                        device: host_dev,
                        name: name.clone(),
                        key: Some(Attr::Str(kind.label().into())),
                        start: Time::from_us_f64(*start_us),
                        end: Some(Time::from_us_f64(*end_us)),
                        depth: 0,
                        parent: None,
                        device_clock: false,
                    });
                    "HostRange"
                }
                ProfileEvent::Pmc {
                    kern,
                    exec_tag,
                    samples,
                    blob,
                } => {
                    let id = p.add_blob(Blob::from_vec(blob.clone()));
                    p.pmc.push(traces::model::PmcEvent {
                        device: 0,
                        kern: *kern,
                        exec_tag: Some(*exec_tag),
                        samples: samples.clone(),
                        blob: id,
                    });
                    "ProfilePMCEvent"
                }
            };
            *counts.entry(class.to_string()).or_default() += 1;
        }
        *counts.entry("ProfileDeviceEvent".into()).or_default() += 2;
        p.source = SourceInfo {
            format: "wavescope-runtime".into(),
            event_counts: counts,
            warnings: self.warnings.clone(),
        };
        p.compute_nesting();
        p
    }

    pub fn save(&self, props: &DeviceProps, path: &Path) -> Result<()> {
        let p = self.to_profile(props);
        traces::wst::write_file(&p, path)
            .map_err(|e| Error::Profile(format!("writing {}: {e}", path.display())))
    }
}
