//! What a capture runs on each device: code objects, named buffers shared by the launches, and
//! an ordered list of launches (kernel by name, grid, block, arguments referring to buffers and
//! values). The demo and `--kernel` are one launch per code object with its own buffers; a
//! workload file ([`crate::workload`]) shares buffers between launches.
//!
//! Everything that can be checked without a device is checked by [`Plan::validate`] before any
//! device opens: every kernel exists, every launch fits its kernel's metadata, and every code
//! object's target is the emulated device's.

use std::collections::HashMap;

use runtime::kernargs::{KernArg, Layout};
use runtime::kernel::Code;
use runtime::platform::{AllocKind, GpuBuffer};
use runtime::Device;
use traces::GfxTarget;

use crate::emulated::Arch;
use crate::{Check, Checker, DeviceSpec, Error, Result};

/// A code object of a plan.
pub struct PlanCode<'a> {
    /// How messages name it (its file name).
    pub label: String,
    pub elf: &'a [u8],
}

/// A buffer of a plan: allocated on a device when a launch first uses it.
pub struct PlanBuffer<'a> {
    pub name: String,
    pub init: &'a [u8],
}

/// One argument of a launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanArg {
    /// A plan buffer, by index.
    Buffer(usize),
    /// A by-value argument's little-endian bytes.
    Value(Vec<u8>),
}

/// One launch of a plan.
pub struct PlanLaunch<'a> {
    /// How messages name it (`launch 2 (k_mul)`, or the code object's file for `--kernel`).
    pub label: String,
    /// Index into [`Plan::code`].
    pub code: usize,
    /// The kernel (None: the code object's first).
    pub kernel: Option<&'a str>,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub args: Vec<PlanArg>,
    /// Verifies the launch's buffer arguments (their bytes, in argument order) after it ran.
    pub check: Option<&'a Checker>,
}

/// Code objects, buffers and launches, run in order on every device of a capture.
#[derive(Default)]
pub struct Plan<'a> {
    pub code: Vec<PlanCode<'a>>,
    pub buffers: Vec<PlanBuffer<'a>>,
    pub launches: Vec<PlanLaunch<'a>>,
    /// Read every buffer back after the last launch ([`crate::CaptureResult::buffers`]).
    pub read_back: bool,
}

/// The buffers of one device after its run, in plan order.
#[derive(Debug, Clone)]
pub struct DeviceBuffers {
    pub device: String,
    pub buffers: Vec<Vec<u8>>,
}

/// `gfxN` for a target, and the emulated device that runs it.
fn device_hint(t: GfxTarget) -> String {
    match Arch::for_target(t) {
        Some(a) => format!("use --device {}", DeviceSpec::emu(a)),
        None => format!(
            "no emulated device runs {t} (emulated: {})",
            Arch::ALL.map(|a| a.to_string()).join(", ")
        ),
    }
}

impl Plan<'_> {
    /// Checks every launch against its code object before anything runs: the kernel exists,
    /// the arguments fit its metadata, buffer indices are in range, and each emulated device
    /// runs the code object's target.
    pub fn validate(&self, devices: &[DeviceSpec]) -> Result<()> {
        for spec in devices {
            if let Some(arch) = spec.emulated_arch() {
                arch.check_executes().map_err(|source| Error::Open {
                    device: spec.to_string(),
                    source,
                })?;
            }
        }
        let mut parsed: HashMap<(usize, Option<&str>), Code> = HashMap::new();
        for l in &self.launches {
            let code = self.code.get(l.code).ok_or_else(|| Error::Launch {
                what: l.label.clone(),
                source: runtime::Error::Invalid(format!("code object {} does not exist", l.code)),
            })?;
            let c = match parsed.entry((l.code, l.kernel)) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    let c =
                        Code::parse_named(code.elf, l.kernel).map_err(|source| Error::Launch {
                            what: format!("{} ({})", l.label, code.label),
                            source,
                        })?;
                    e.insert(c)
                }
            };
            for spec in devices {
                let Some(arch) = spec.emulated_arch() else {
                    continue;
                };
                if arch.target() != c.object.target {
                    return Err(Error::Target {
                        code: code.label.clone(),
                        target: c.object.target,
                        device: spec.to_string(),
                        runs: arch.target(),
                        hint: device_hint(c.object.target),
                    });
                }
            }
            for a in &l.args {
                if let PlanArg::Buffer(i) = a {
                    if *i >= self.buffers.len() {
                        return Err(Error::Launch {
                            what: l.label.clone(),
                            source: runtime::Error::Invalid(format!("no buffer {i}")),
                        });
                    }
                }
            }
            // Placeholder addresses: only the kinds and sizes are checked here.
            let given: Vec<KernArg> = l
                .args
                .iter()
                .map(|a| match a {
                    PlanArg::Buffer(_) => KernArg::Buffer(0),
                    PlanArg::Value(v) => KernArg::Value(v),
                })
                .collect();
            match Layout::of(&c.kernel) {
                Some(layout) => layout.check(&given).map_err(|e| Error::Launch {
                    what: l.label.clone(),
                    source: e.into(),
                })?,
                None => {
                    // No metadata: the legacy packing, buffers then 4-byte values.
                    let first_value = given.iter().position(|a| matches!(a, KernArg::Value(_)));
                    let bad = given.iter().enumerate().any(|(i, a)| match a {
                        KernArg::Buffer(_) => first_value.is_some_and(|f| i > f),
                        KernArg::Value(v) => v.len() != 4,
                    });
                    if bad {
                        return Err(Error::ArgOrder {
                            what: l.label.clone(),
                        });
                    }
                }
            }
        }
        Ok(())
    }
}

/// The launches of a capture on one device.
pub(crate) struct DeviceRun<'a> {
    pub dev: &'a mut Device,
    pub name: &'a str,
    pub repeat: usize,
    pub total: usize,
    pub done: &'a mut usize,
    pub checks: &'a mut Vec<Check>,
    pub progress: &'a mut dyn FnMut(usize, usize, &str),
}

impl DeviceRun<'_> {
    fn fail(&self, what: String) -> impl FnOnce(runtime::Error) -> Error {
        let device = self.name.to_string();
        move |source| Error::Device {
            device,
            what,
            source,
        }
    }

    /// Runs every launch of `plan` in order; returns the buffers read back when the plan asks.
    pub fn all(&mut self, plan: &Plan) -> Result<Option<Vec<Vec<u8>>>> {
        // A real GPU's target is known only now; emulated ones were checked before opening.
        let target = self.dev.props.target();
        let mut programs: HashMap<(usize, Option<&str>), runtime::device::Program> = HashMap::new();
        let mut bufs: Vec<Option<GpuBuffer>> = plan.buffers.iter().map(|_| None).collect();
        for l in &plan.launches {
            let code = &plan.code[l.code];
            let key = (l.code, l.kernel);
            if let std::collections::hash_map::Entry::Vacant(slot) = programs.entry(key) {
                let prg = self
                    .dev
                    .load_program_named(code.elf, l.kernel)
                    .map_err(self.fail(format!("loading {}", code.label)))?;
                if prg.code.object.target != target {
                    return Err(Error::Target {
                        code: code.label.clone(),
                        target: prg.code.object.target,
                        device: self.name.to_string(),
                        runs: target,
                        hint: device_hint(prg.code.object.target),
                    });
                }
                slot.insert(prg);
            }
            let prg = &programs[&key];
            for a in &l.args {
                let PlanArg::Buffer(i) = a else { continue };
                if bufs[*i].is_some() {
                    continue;
                }
                let init = plan.buffers[*i].init;
                let b = self
                    .dev
                    .alloc(init.len().max(4) as u64, AllocKind::VRAM)
                    .map_err(self.fail(format!("allocating buffer {}", plan.buffers[*i].name)))?;
                self.dev
                    .copyin(&b, init)
                    .map_err(self.fail(format!("copying buffer {} in", plan.buffers[*i].name)))?;
                bufs[*i] = Some(b);
            }
            let args: Vec<KernArg> = l
                .args
                .iter()
                .map(|a| match a {
                    PlanArg::Buffer(i) => KernArg::Buffer(bufs[*i].as_ref().map_or(0, |b| b.va)),
                    PlanArg::Value(v) => KernArg::Value(v),
                })
                .collect();
            for _ in 0..self.repeat {
                (self.progress)(
                    *self.done,
                    self.total,
                    &format!("{} on {}", prg.name, self.name),
                );
                self.dev
                    .launch_args(prg, &args, l.grid, l.block)
                    .map_err(self.fail(format!("launching {}", prg.name)))?;
                self.dev
                    .synchronize()
                    .map_err(self.fail(format!("running {}", prg.name)))?;
                *self.done += 1;
            }
            let result = match l.check {
                None => None,
                Some(check) => {
                    let mut outs = Vec::new();
                    for a in &l.args {
                        let PlanArg::Buffer(i) = a else { continue };
                        outs.push(self.read(plan, &bufs, *i)?);
                    }
                    Some(check(&outs))
                }
            };
            self.checks.push(Check {
                device: self.name.to_string(),
                kernel: prg.name.clone(),
                result,
            });
        }
        if !plan.read_back {
            return Ok(None);
        }
        (0..plan.buffers.len())
            .map(|i| self.read(plan, &bufs, i))
            .collect::<Result<Vec<_>>>()
            .map(Some)
        // Buffers stay allocated until the device closes: a free synchronizes and adds a
        // host-time point per buffer, which only stretches the timeline.
    }

    /// A buffer's bytes now (its initial contents when no launch used it).
    fn read(&mut self, plan: &Plan, bufs: &[Option<GpuBuffer>], i: usize) -> Result<Vec<u8>> {
        let init = plan.buffers[i].init;
        let Some(b) = &bufs[i] else {
            return Ok(init.to_vec());
        };
        let mut out = vec![0u8; init.len()];
        self.dev
            .copyout(b, &mut out)
            .map_err(self.fail(format!("reading buffer {}", plan.buffers[i].name)))?;
        Ok(out)
    }
}
