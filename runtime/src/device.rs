//! The device: queues, timeline signal, allocator with SDMA copies, programs and dispatch,
//! scratch, SQTT capture and profiling — the library API a user calls.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::kernargs::{self, KernArg, Layout};
use crate::kernel::{self, Code};
use crate::kfd::KfdIface;
use crate::platform::{
    host::HostPlatform, AllocKind, DeviceProps, GpuBuffer, GpuIface, Platform, QueueBuffers,
    QueueKind,
};
use crate::profile::{HostKind, ProfileEvent, Recorder};
use crate::queue::{ComputeCmds, CopyCmds, GfxContext, Launch, Ring, SqttMarker};
use crate::record::{self, SharedRecorder};
use crate::signal::{Signal, SignalPool, SIGNAL_PAGE};
use crate::sqtt::{self, SqttSetup};

/// Scratch reserved per wave: bytes per lane, for this many lanes (wave64 at most).
const SCRATCH_PER_LANE: u64 = 128;
const SCRATCH_LANES: u64 = 64;
/// One wave's scratch slice; TMPRING_SIZE counts it in 256-byte units.
const SCRATCH_WAVE_BYTES: u64 = SCRATCH_PER_LANE * SCRATCH_LANES;
// Whole 1 KiB units: gfx9 counts TMPRING_SIZE.WAVESIZE in them.
const _: () = assert!(SCRATCH_WAVE_BYTES.is_multiple_of(1024));

/// Knobs of a device; `Default` follows tinygrad's defaults (scaled where tests need it).
#[derive(Debug, Clone)]
pub struct DeviceOptions {
    /// Signal wait timeout before a hang is reported (tinygrad: 30 s).
    pub wait_timeout: Duration,
    /// Ring sizes in bytes (power of two).
    pub compute_ring_size: u64,
    pub sdma_ring_size: u64,
    pub kernargs_size: u64,
    /// Staging buffers for host<->device copies.
    pub staging_chunk: u64,
    pub staging_count: usize,
    /// Record kernel/copy ranges (timestamps around each submission).
    pub profile: bool,
    /// Capture SQTT around each kernel launch.
    pub sqtt: bool,
    /// Per-SE SQTT buffer size.
    pub sqtt_buffer_size: u64,
    /// SEs with instruction tracing (bit per SE).
    pub sqtt_itrace_se_mask: u32,
    /// Performance counters read around each kernel launch, by name ([`crate::pmc`];
    /// `pmc::default_counters` is tinygrad's set). Empty: none.
    pub pmc: Vec<String>,
}

impl Default for DeviceOptions {
    fn default() -> Self {
        DeviceOptions {
            wait_timeout: Duration::from_secs(30),
            compute_ring_size: 16 << 20,
            sdma_ring_size: 16 << 20,
            kernargs_size: 16 << 20,
            staging_chunk: 2 << 20,
            staging_count: 4,
            profile: true,
            sqtt: false,
            sqtt_buffer_size: sqtt::DEFAULT_BUFFER_SIZE,
            sqtt_itrace_se_mask: 0b11,
            pmc: Vec::new(),
        }
    }
}

/// A program loaded on the device.
#[derive(Debug, Clone)]
pub struct Program {
    pub name: String,
    pub code: Code,
    pub lib: GpuBuffer,
    pub prog_addr: u64,
    pub rsrc1: u32,
    pub rsrc2: u32,
    /// First 8 bytes of a hash of the ELF (RGP pipeline hash).
    pub hash: u64,
    pub kern: i64,
}

struct Pending {
    name: String,
    st: Signal,
    en: Signal,
    copy: bool,
    kern: i64,
    exec_tag: i64,
}

struct PmcState {
    plan: crate::pmc::PmcPlan,
    buf: GpuBuffer,
}

struct SqttState {
    setup: SqttSetup,
    bufs: Vec<GpuBuffer>,
    wptrs: GpuBuffer,
}

pub struct Device {
    iface: Box<dyn GpuIface>,
    pub props: DeviceProps,
    pub opts: DeviceOptions,
    ctx: Arc<GfxContext>,
    compute: Ring,
    sdma: Ring,
    keep: Vec<GpuBuffer>,
    timeline: Signal,
    /// The value the next submission signals.
    timeline_value: u64,
    pool: SignalPool,
    kernargs: GpuBuffer,
    kernargs_off: u64,
    /// Times the kernarg buffer wrapped (each waited for the queue to drain).
    pub kernarg_wraps: u64,
    scratch: GpuBuffer,
    tmpring_size: u32,
    staging: Vec<GpuBuffer>,
    cmds: ComputeCmds,
    copy_cmds: CopyCmds,
    pending: Vec<Pending>,
    pub recorder: Recorder,
    /// Sees every PM4 and SDMA submission ([`crate::record`]).
    commands: Option<SharedRecorder>,
    /// Submissions so far (the recordings' `submit` ids).
    submits: u64,
    sqtt: Option<SqttState>,
    pmc: Option<PmcState>,
    cmd_id: u32,
    exec_tag: i64,
    next_kern: i64,
    epoch: Instant,
}

fn round_up(v: u64, a: u64) -> u64 {
    v.div_ceil(a) * a
}

/// FNV-1a 64: a stable pipeline hash for the RGP bind marker (tinygrad uses md5[:8]; any stable
/// 64-bit hash identifies the pipeline).
fn hash64(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

impl Device {
    /// Opens GPU `index` through the real KFD.
    pub fn open_kfd(index: usize, opts: DeviceOptions) -> Result<Self> {
        let p: Arc<dyn Platform> = Arc::new(HostPlatform::new());
        Device::new(Box::new(KfdIface::open(p, index)?), opts)
    }

    /// Opens real GPU `index` through the driverless PCI path (needs root). `popts.unbind`: take
    /// the GPU from its kernel driver if one is bound (otherwise that is an error).
    pub fn open_pci(
        index: usize,
        opts: DeviceOptions,
        popts: &crate::pci::PciOptions,
    ) -> Result<Self> {
        let iface = crate::pci::iface::PciIface::open_sysfs(index, popts)?;
        Device::new(Box::new(iface), opts)
    }

    /// Brings up the GPU behind any [`crate::pci::PciDevice`] (sysfs, emulated, USB-tunnelled)
    /// with the AM driver and opens it.
    pub fn open_on_pci(
        pci: Arc<dyn crate::pci::PciDevice>,
        opts: DeviceOptions,
        popts: &crate::pci::PciOptions,
    ) -> Result<Self> {
        let iface = crate::pci::iface::PciIface::new(pci, popts)?;
        Device::new(Box::new(iface), opts)
    }

    pub fn new(iface: Box<dyn GpuIface>, opts: DeviceOptions) -> Result<Self> {
        Self::new_recorded(iface, opts, None)
    }

    /// [`Device::new`] with `commands` seeing every PM4 and SDMA submission from the first
    /// (bring-up included).
    pub fn new_recorded(
        mut iface: Box<dyn GpuIface>,
        opts: DeviceOptions,
        commands: Option<SharedRecorder>,
    ) -> Result<Self> {
        let commands = commands.or_else(record::installed);
        let props = iface.props().clone();
        let target = props.target();
        if target.family().is_none() {
            return Err(Error::Unsupported(format!(
                "{target} (supported: gfx94x/gfx950, gfx11, gfx12)"
            )));
        }
        let num_xcc = props.num_xcc.max(1);
        let mut ctx = GfxContext::new(iface.ip_versions(), iface.ip_bases(), num_xcc)?;
        let mut keep = Vec::new();

        // Signals first: the timeline and (multi-XCC) the barrier counters live there.
        let mut pool = SignalPool::default();
        let page = iface.alloc(SIGNAL_PAGE, AllocKind::UNCACHED)?;
        pool.add_page(page.cpu()?.clone());
        keep.push(page);
        let timeline = pool
            .pop()
            .ok_or_else(|| Error::Invalid("empty signal page".into()))?;
        timeline.set(0)?;
        if num_xcc > 1 {
            let (a, b) = (pool.pop(), pool.pop());
            if let (Some(a), Some(b)) = (a, b) {
                a.set(0)?;
                b.set(0)?;
                ctx.xcc_sync = Some((a.value_addr(), b.value_addr()));
            }
        }
        let ctx = Arc::new(ctx);

        // Compute queue: one per XCC sharing the ring.
        let ring = iface.alloc(opts.compute_ring_size, AllocKind::GTT_CPU)?;
        let gart = iface.alloc(0x1000, AllocKind::GTT_CPU)?;
        let eop = iface.alloc(0x1000, AllocKind::VRAM)?;
        let cu = u64::from(props.num_cu() / num_xcc);
        let waves = u64::from(props.max_waves_per_simd * props.simd_per_cu);
        let vgpr = if matches!(props.gfx_target_version, 110000 | 110100 | 120000 | 120001) {
            0x60000
        } else {
            0x40000
        };
        let wg_data = cu * (vgpr + 0x4000 + 0x10000 + 0x1000);
        let ctl_stack = round_up(12 * cu * waves + 48, 0x1000);
        let debug_mem = round_up(cu * waves * 32, 64);
        let ctx_save = wg_data + ctl_stack;
        let cwsr = iface.alloc(
            round_up((ctx_save + debug_mem) * u64::from(num_xcc), 0x1000),
            AllocKind::VRAM,
        )?;
        let mut desc = None;
        for x in 0..num_xcc {
            let d = iface.create_queue(
                QueueKind::Compute,
                QueueBuffers {
                    ring: &ring,
                    gart: &gart,
                    eop: Some(&eop),
                    cwsr: Some(&cwsr),
                    ctl_stack_size: ctl_stack as u32,
                    ctx_save_restore_size: ctx_save as u32,
                },
                x,
            )?;
            match &mut desc {
                None => desc = Some(d),
                Some(all) => {
                    let all: &mut crate::platform::QueueDesc = all;
                    all.read_ptrs.extend(d.read_ptrs);
                    all.doorbells.extend(d.doorbells);
                }
            }
        }
        let mut compute = Ring::new(desc.ok_or_else(|| Error::Invalid("no XCC".into()))?, false);
        compute.stall_timeout = opts.wait_timeout;
        keep.extend([ring, gart, eop, cwsr]);

        let sring = iface.alloc(opts.sdma_ring_size, AllocKind::GTT_CPU)?;
        let sgart = iface.alloc(0x1000, AllocKind::GTT_CPU)?;
        let sdesc = iface.create_queue(
            QueueKind::Sdma,
            QueueBuffers {
                ring: &sring,
                gart: &sgart,
                eop: None,
                cwsr: None,
                ctl_stack_size: 0,
                ctx_save_restore_size: 0,
            },
            0,
        )?;
        let mut sdma = Ring::new(sdesc, true);
        sdma.stall_timeout = opts.wait_timeout;
        keep.extend([sring, sgart]);

        let kernargs = iface.alloc(opts.kernargs_size, AllocKind::VRAM_CPU)?;

        // Scratch: (max_cu_id+1) * slots * round_up(128 B/lane * 64 lanes, 256) per XCC. Sized
        // for 64 lanes even on wave32 parts: a wave64 kernel needs it, a wave32 one gets 256 B/lane.
        let wave_len = SCRATCH_WAVE_BYTES;
        let per_xcc = cu * u64::from(props.max_slots_scratch_cu) * wave_len;
        let scratch = iface.alloc(per_xcc * u64::from(num_xcc), AllocKind::VRAM)?;
        let num_se = u64::from(props.num_se().max(1));
        // COMPUTE_TMPRING_SIZE: gfx11+ count WAVESIZE in 256-byte units and WAVES per SE; gfx9
        // counts WAVESIZE in 1 KiB units and WAVES per XCC (Mesa ac_get_scratch_tmpring_size
        // shifts by 10 before GFX11; tinygrad's _ensure_has_local_memory: 1024-byte alignment
        // and no division by the SE count on gfx9).
        let gfx9 = props.gfx_target_version / 10000 == 9;
        let waves_field = if gfx9 {
            (per_xcc / wave_len).min(0xFFF) as u32
        } else {
            (per_xcc / (wave_len * num_se)).min(0xFFF) as u32
        };
        let unit = if gfx9 { 1024 } else { 256 };
        let tmpring_size = ((wave_len / unit) as u32) << 12 | waves_field;

        let mut staging = Vec::new();
        for _ in 0..opts.staging_count.max(1) {
            staging.push(iface.alloc(opts.staging_chunk, AllocKind::HOST)?);
        }

        let mut dev = Device {
            cmds: ComputeCmds::new(ctx.clone()),
            copy_cmds: if gfx9 {
                CopyCmds::sdma4()
            } else {
                CopyCmds::new()
            },
            iface,
            props,
            opts,
            ctx,
            compute,
            sdma,
            keep,
            timeline,
            timeline_value: 1,
            pool,
            kernargs,
            kernargs_off: 0,
            kernarg_wraps: 0,
            scratch,
            tmpring_size,
            staging,
            pending: Vec::new(),
            recorder: Recorder {
                scratch_wave_bytes: SCRATCH_WAVE_BYTES,
                ..Recorder::default()
            },
            commands,
            submits: 0,
            sqtt: None,
            pmc: None,
            cmd_id: 0,
            exec_tag: 0,
            next_kern: 0,
            epoch: Instant::now(),
        };
        if dev.ctx.num_xcc > 1 {
            dev.cmds.clear();
            dev.cmds.group("xcc_config");
            dev.cmds.xcc_config()?;
            dev.submit_compute()?;
        }
        dev.calibrate()?;
        if dev.opts.sqtt {
            dev.setup_sqtt()?;
        }
        if !dev.opts.pmc.is_empty() {
            dev.setup_pmc()?;
        }
        Ok(dev)
    }

    pub fn iface(&mut self) -> &mut dyn GpuIface {
        self.iface.as_mut()
    }

    pub fn context(&self) -> &Arc<GfxContext> {
        &self.ctx
    }

    pub fn tmpring_size(&self) -> u32 {
        self.tmpring_size
    }

    fn host_us(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64() * 1e6
    }

    /// Runs `f` as one host range of the profile's CPU track (recorded whether it fails or not,
    /// so a capture that stops early still shows where the host was).
    fn host_range<T>(
        &mut self,
        kind: HostKind,
        name: impl FnOnce() -> String,
        f: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        let start_us = self.host_us();
        let r = f(self);
        let end_us = self.host_us();
        self.recorder.events.push(ProfileEvent::Host {
            kind,
            name: name(),
            start_us,
            end_us,
        });
        r
    }

    fn new_signal(&mut self) -> Result<Signal> {
        if let Some(s) = self.pool.pop() {
            return Ok(s);
        }
        let page = self.iface.alloc(SIGNAL_PAGE, AllocKind::UNCACHED)?;
        self.pool.add_page(page.cpu()?.clone());
        self.keep.push(page);
        self.pool
            .pop()
            .ok_or_else(|| Error::Invalid("empty signal page".into()))
    }

    fn next_timeline(&mut self) -> u32 {
        let v = self.timeline_value;
        self.timeline_value += 1;
        v as u32
    }

    /// Sees every later submission (bring-up submissions are only seen with
    /// [`Device::new_recorded`]).
    pub fn set_command_recorder(&mut self, rec: Option<SharedRecorder>) {
        self.commands = rec;
    }

    fn submit_compute(&mut self) -> Result<()> {
        self.host_range(
            HostKind::Submit,
            || "submit".into(),
            Self::submit_compute_now,
        )
    }

    fn submit_compute_now(&mut self) -> Result<()> {
        self.submits += 1;
        if let Some(rec) = &self.commands {
            for ev in record::pm4_events(
                &self.cmds.q,
                &self.cmds.groups,
                &self.ctx,
                self.submits,
                "compute",
            ) {
                record::record(rec, ev);
            }
        }
        let Device {
            compute,
            cmds,
            iface,
            commands,
            ..
        } = self;
        let r = compute.submit_pm4(&cmds.q, &mut || iface.sleep(1));
        if let (Ok(()), Some(rec)) = (&r, &*commands) {
            record::record(rec, record::doorbell_event("compute", compute.put_value));
        }
        with_fault_report(r, iface.as_mut())
    }

    fn submit_copy(&mut self) -> Result<()> {
        self.host_range(
            HostKind::Submit,
            || "submit SDMA".into(),
            Self::submit_copy_now,
        )
    }

    fn submit_copy_now(&mut self) -> Result<()> {
        self.submits += 1;
        if let Some(rec) = &self.commands {
            let c = &self.copy_cmds;
            for ev in record::sdma_events(&c.q, &c.sizes, &c.groups, self.submits) {
                record::record(rec, ev);
            }
        }
        let Device {
            sdma,
            copy_cmds,
            iface,
            commands,
            ..
        } = self;
        let r = sdma.submit_sdma(copy_cmds, &mut || iface.sleep(1));
        if let (Ok(()), Some(rec)) = (&r, &*commands) {
            record::record(rec, record::doorbell_event("sdma0", sdma.put_value));
        }
        with_fault_report(r, iface.as_mut())
    }

    /// Waits for everything submitted so far, then files the profile ranges.
    pub fn synchronize(&mut self) -> Result<()> {
        self.host_range(HostKind::Wait, || "wait".into(), Self::synchronize_now)
    }

    fn synchronize_now(&mut self) -> Result<()> {
        let target = self.timeline_value - 1;
        self.timeline
            .wait(target, self.opts.wait_timeout, self.iface.as_mut())?;
        for p in std::mem::take(&mut self.pending) {
            let (s, e) = (p.st.timestamp()?, p.en.timestamp()?);
            self.recorder.events.push(if p.copy {
                ProfileEvent::Copy {
                    name: p.name,
                    gpu_start: s,
                    gpu_end: e,
                }
            } else {
                ProfileEvent::Kernel {
                    name: p.name,
                    kern: p.kern,
                    exec_tag: p.exec_tag,
                    gpu_start: s,
                    gpu_end: e,
                }
            });
            self.pool.push(p.st);
            self.pool.push(p.en);
        }
        Ok(())
    }

    /// GPU→host clock offsets: median of a few "timestamp + signal + CPU wait" rounds per queue.
    fn calibrate(&mut self) -> Result<()> {
        let sig = self.new_signal()?;
        let mut comp = Vec::new();
        let mut copy = Vec::new();
        for i in 0..6 {
            let is_copy = i % 2 == 1;
            let before = self.host_us();
            let v = self.next_timeline();
            if is_copy {
                self.copy_cmds.clear();
                self.copy_cmds.wait(self.timeline.value_addr(), v - 1);
                self.copy_cmds.timestamp(sig.timestamp_addr());
                self.copy_cmds
                    .signal(self.timeline.value_addr(), v, self.iface.event_mailbox());
                self.submit_copy()?;
            } else {
                self.cmds.clear();
                self.cmds.group("wait");
                self.cmds.wait(self.timeline.value_addr(), v - 1);
                self.cmds.group("timestamp");
                self.cmds.timestamp(sig.timestamp_addr());
                self.cmds.group("signal");
                self.cmds
                    .signal(self.timeline.value_addr(), v, self.iface.event_mailbox());
                self.submit_compute()?;
            }
            self.synchronize()?;
            let after = self.host_us();
            let gpu = sig.timestamp_us()?;
            if is_copy { &mut copy } else { &mut comp }.push((before + after) / 2.0 - gpu);
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(|a, b| a.total_cmp(b));
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        };
        self.recorder.compute_offset_us = med(&mut comp);
        self.recorder.copy_offset_us = med(&mut copy);
        self.pool.push(sig);
        Ok(())
    }

    // ---- memory ----

    pub fn alloc(&mut self, size: u64, kind: AllocKind) -> Result<GpuBuffer> {
        let b = self.host_range(
            HostKind::Alloc,
            || format!("alloc {size:#x} {}", kind.label()),
            |d| d.iface.alloc(size, kind),
        )?;
        let host_us = self.host_us();
        self.recorder.events.push(ProfileEvent::Alloc {
            kind: kind.label(),
            size: b.size,
            va: b.va,
            host_us,
        });
        Ok(b)
    }

    pub fn free(&mut self, buf: GpuBuffer) -> Result<()> {
        self.synchronize()?;
        let host_us = self.host_us();
        self.recorder.events.push(ProfileEvent::Free {
            va: buf.va,
            host_us,
        });
        self.iface.free(buf)
    }

    fn copy_submit(&mut self, dst: u64, src: u64, n: u64, name: &str) -> Result<()> {
        let v = self.next_timeline();
        let prof = if self.opts.profile {
            Some((self.new_signal()?, self.new_signal()?))
        } else {
            None
        };
        self.copy_cmds.clear();
        self.copy_cmds.wait(self.timeline.value_addr(), v - 1);
        if let Some((st, _)) = &prof {
            self.copy_cmds.timestamp(st.timestamp_addr());
        }
        self.copy_cmds.copy(dst, src, n);
        if let Some((_, en)) = &prof {
            self.copy_cmds.timestamp(en.timestamp_addr());
        }
        self.copy_cmds
            .signal(self.timeline.value_addr(), v, self.iface.event_mailbox());
        self.submit_copy()?;
        if let Some((st, en)) = prof {
            self.pending.push(Pending {
                name: name.into(),
                st,
                en,
                copy: true,
                kern: -1,
                exec_tag: -1,
            });
        }
        Ok(())
    }

    /// Host → device through the staging buffers and the SDMA queue.
    pub fn copyin(&mut self, dst: &GpuBuffer, data: &[u8]) -> Result<()> {
        self.host_range(
            HostKind::Copy,
            || format!("copy in {} B", data.len()),
            |d| d.copyin_now(dst, data),
        )
    }

    fn copyin_now(&mut self, dst: &GpuBuffer, data: &[u8]) -> Result<()> {
        if data.len() as u64 > dst.size {
            return Err(Error::Invalid(format!(
                "copyin of {} bytes into a {}-byte buffer",
                data.len(),
                dst.size
            )));
        }
        let chunk = self.opts.staging_chunk as usize;
        for (i, part) in data.chunks(chunk).enumerate() {
            let slot = i % self.staging.len();
            if i >= self.staging.len() {
                // The slot is reused: wait until its previous copy finished.
                self.synchronize()?;
            }
            let st = self
                .staging
                .get(slot)
                .cloned()
                .ok_or_else(|| Error::Invalid("no staging buffer".into()))?;
            st.cpu()?.write_bytes(0, part)?;
            let name = format!("CPU -> {:#x}", dst.va);
            self.copy_submit(dst.va + (i * chunk) as u64, st.va, part.len() as u64, &name)?;
        }
        Ok(())
    }

    /// Device → host.
    pub fn copyout(&mut self, src: &GpuBuffer, out: &mut [u8]) -> Result<()> {
        let n = out.len();
        self.host_range(
            HostKind::Copy,
            || format!("copy out {n} B"),
            |d| d.copyout_now(src, out),
        )
    }

    fn copyout_now(&mut self, src: &GpuBuffer, out: &mut [u8]) -> Result<()> {
        if out.len() as u64 > src.size {
            return Err(Error::Invalid(format!(
                "copyout of {} bytes from a {}-byte buffer",
                out.len(),
                src.size
            )));
        }
        self.synchronize()?;
        let chunk = self.opts.staging_chunk as usize;
        for (i, part) in out.chunks_mut(chunk).enumerate() {
            let st = self
                .staging
                .first()
                .cloned()
                .ok_or_else(|| Error::Invalid("no staging buffer".into()))?;
            let name = format!("{:#x} -> CPU", src.va);
            self.copy_submit(st.va, src.va + (i * chunk) as u64, part.len() as u64, &name)?;
            self.synchronize()?;
            st.cpu()?.read_bytes(0, part)?;
        }
        Ok(())
    }

    /// Device → device copy on the SDMA queue.
    pub fn copy(&mut self, dst: &GpuBuffer, src: &GpuBuffer, n: u64) -> Result<()> {
        if n > dst.size || n > src.size {
            return Err(Error::Invalid("copy larger than a buffer".into()));
        }
        self.copy_submit(dst.va, src.va, n, "copy")
    }

    // ---- programs ----

    pub fn load_program(&mut self, elf: &[u8]) -> Result<Program> {
        self.load_program_named(elf, None)
    }

    /// Loads the kernel `name` of a code object (None: its first kernel); a code object holds
    /// any number of kernels, each loaded as its own program.
    pub fn load_program_named(&mut self, elf: &[u8], name: Option<&str>) -> Result<Program> {
        self.host_range(
            HostKind::Load,
            || format!("load {}", name.unwrap_or("code object")),
            |d| d.load_program_now(elf, name),
        )
    }

    fn load_program_now(&mut self, elf: &[u8], name: Option<&str>) -> Result<Program> {
        let target = traces::target::GfxTarget::from_target_version(self.props.gfx_target_version);
        let code = Code::parse_for(elf, name, Some(target))?;
        let size = round_up(code.image.len() as u64, 0x1000);
        let lib = self.alloc(size, AllocKind::VRAM)?;
        self.copyin(&lib, &code.image)?;
        self.synchronize()?;
        let (rsrc1, rsrc2) = code.launch_rsrc(self.ctx.gfx_major, self.props.lds_size_in_kb)?;
        let kern = self.next_kern;
        self.next_kern += 1;
        self.recorder.events.push(ProfileEvent::Program {
            name: code.kernel.name.clone(),
            elf: elf.to_vec(),
            base: lib.va,
            tag: kern,
        });
        Ok(Program {
            name: code.kernel.name.clone(),
            prog_addr: lib.va + code.kernel.entry,
            rsrc1,
            rsrc2,
            hash: hash64(elf),
            kern,
            code,
            lib,
        })
    }

    fn alloc_kernargs(&mut self, size: u64) -> Result<u64> {
        let size = round_up(size.max(16), 16);
        if size > self.kernargs.size {
            return Err(Error::Invalid(format!(
                "{size} bytes of kernargs exceed the kernarg buffer"
            )));
        }
        if self.kernargs_off + size > self.kernargs.size {
            // Wrapping reuses slots of launches that may still be queued: wait for them. Every
            // slot ahead was last written before the previous wrap, which waited likewise.
            self.synchronize()?;
            self.kernargs_off = 0;
            self.kernarg_wraps += 1;
        }
        let off = self.kernargs_off;
        self.kernargs_off += size;
        Ok(off)
    }

    /// Builds the PM4 stream of one launch into the reusable command buffer (no submission).
    pub fn build_launch(
        &mut self,
        prg: &Program,
        buffers: &[&GpuBuffer],
        values: &[u32],
        global: [u32; 3],
        local: [u32; 3],
    ) -> Result<()> {
        let k = &prg.code;
        let d = &k.kernel.descriptor;
        let dp_extra = if k.enable_dispatch_ptr() { 64 } else { 0 };
        let args_len =
            u64::from(d.kernarg_size).max(buffers.len() as u64 * 8 + values.len() as u64 * 4);
        let off = self.alloc_kernargs(args_len + dp_extra)?;
        let mut args = [0u8; 256];
        let mut n = 0usize;
        for b in buffers {
            if let Some(d) = args.get_mut(n..n + 8) {
                d.copy_from_slice(&b.va.to_le_bytes());
            }
            n += 8;
        }
        for v in values {
            if let Some(d) = args.get_mut(n..n + 4) {
                d.copy_from_slice(&v.to_le_bytes());
            }
            n += 4;
        }
        if n > args.len() {
            let big = kernel::build_kernargs(
                n,
                &buffers.iter().map(|b| b.va).collect::<Vec<_>>(),
                values,
            );
            self.kernargs.cpu()?.write_bytes(off, &big)?;
        } else if n > 0 {
            self.kernargs
                .cpu()?
                .write_bytes(off, args.get(..n).unwrap_or(&[]))?;
        }
        self.build_launch_at(prg, off, args_len, global, local)
    }

    /// Builds one launch whose arguments are checked against, and laid out by, the kernel's
    /// metadata (explicit arguments in parameter order; hidden ones filled from the launch).
    /// A kernel without metadata gets the legacy packing: buffers, then 4-byte values.
    pub fn build_launch_args(
        &mut self,
        prg: &Program,
        args: &[KernArg],
        global: [u32; 3],
        local: [u32; 3],
    ) -> Result<()> {
        let bytes = match Layout::of(&prg.code.kernel) {
            Some(l) => l.build(args, global, local)?,
            None => {
                let mut bufs = Vec::new();
                let mut vals = Vec::new();
                for a in args {
                    match a {
                        KernArg::Buffer(va) if vals.is_empty() => bufs.push(*va),
                        KernArg::Value(b) if b.len() == 4 => {
                            vals.push(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                        }
                        _ => {
                            let why = "has no argument metadata: buffers first, then 4-byte values";
                            return Err(Error::Invalid(format!("{} {why}", prg.name)));
                        }
                    }
                }
                kernargs::legacy(0, &bufs, &vals)
            }
        };
        let d = &prg.code.kernel.descriptor;
        let dp_extra = if prg.code.enable_dispatch_ptr() {
            64
        } else {
            0
        };
        let args_len = u64::from(d.kernarg_size).max(bytes.len() as u64);
        let off = self.alloc_kernargs(args_len + dp_extra)?;
        if !bytes.is_empty() {
            self.kernargs.cpu()?.write_bytes(off, &bytes)?;
        }
        self.build_launch_at(prg, off, args_len, global, local)
    }

    /// The rest of a launch once its kernargs are at `off` in the kernarg buffer.
    fn build_launch_at(
        &mut self,
        prg: &Program,
        off: u64,
        args_len: u64,
        global: [u32; 3],
        local: [u32; 3],
    ) -> Result<()> {
        let k = &prg.code;
        let d = &k.kernel.descriptor;
        let kva = self.kernargs.va + off;
        let dispatch_ptr = if k.enable_dispatch_ptr() {
            Some(kva + args_len)
        } else {
            None
        };
        // The per-wave scratch slice is fixed at open; a kernel that needs more per lane would
        // overrun into its neighbour's slice.
        let lanes = if k.wave32() { 32 } else { 64 };
        let per_lane = SCRATCH_WAVE_BYTES / lanes;
        if u64::from(d.private_segment_fixed_size) > per_lane {
            return Err(Error::Invalid(format!(
                "{} needs {} bytes of scratch per work-item; the runtime reserves {per_lane} (wave{lanes})",
                prg.name, d.private_segment_fixed_size
            )));
        }
        let private_segment = if k.enable_private_segment_sgpr() {
            let s = self.scratch.va;
            Some([
                s as u32,
                ((s >> 32) as u32) | (1 << 31),
                0xFFFF_FFFF,
                0x20C1_4000,
            ])
        } else {
            None
        };
        let launch = Launch {
            prog_addr: prg.prog_addr,
            rsrc1: prg.rsrc1,
            rsrc2: prg.rsrc2,
            rsrc3: d.compute_pgm_rsrc3,
            kernarg_va: kva,
            dispatch_ptr,
            private_segment,
            wave32: k.wave32(),
            global,
            local,
            tmpring_size: self.tmpring_size,
            scratch_va: self.scratch.va,
            scratch_per_xcc: self.scratch.size / u64::from(self.ctx.num_xcc),
        };
        let marker = if self.sqtt.is_some() {
            let m = SqttMarker {
                pso_hash: prg.hash,
                cmd_id: self.cmd_id,
            };
            self.cmd_id += 1;
            Some(m)
        } else {
            None
        };
        let v = self.next_timeline();
        let tl = self.timeline.value_addr();
        let prof = if self.opts.profile {
            Some((self.new_signal()?, self.new_signal()?))
        } else {
            None
        };
        let mailbox = self.iface.event_mailbox();
        let c = &mut self.cmds;
        c.clear();
        c.group("wait");
        c.wait(tl, v - 1);
        c.group("memory_barrier");
        c.memory_barrier();
        if let Some((st, _)) = &prof {
            c.group("timestamp");
            c.timestamp(st.timestamp_addr());
        }
        c.group("exec");
        c.exec(&launch, marker)?;
        if let Some((_, en)) = &prof {
            c.group("timestamp");
            c.timestamp(en.timestamp_addr());
        }
        c.group("signal");
        c.signal(tl, v, mailbox);
        if let Some((st, en)) = prof {
            self.exec_tag += 1;
            self.pending.push(Pending {
                name: prg.name.clone(),
                st,
                en,
                copy: false,
                kern: prg.kern,
                exec_tag: self.exec_tag,
            });
        }
        Ok(())
    }

    /// The dwords of the last built command buffer.
    pub fn built_commands(&self) -> &[u32] {
        &self.cmds.q
    }

    /// Launches `prg` with buffer arguments then u32 values. With SQTT enabled the launch is
    /// wrapped in a capture whose per-SE blobs land in the profile.
    pub fn launch(
        &mut self,
        prg: &Program,
        buffers: &[&GpuBuffer],
        values: &[u32],
        global: [u32; 3],
        local: [u32; 3],
    ) -> Result<()> {
        self.run_launch(prg, |d| d.build_launch(prg, buffers, values, global, local))
    }

    /// One launch as the profile wants it: SQTT around it, counters read after it.
    fn run_launch(
        &mut self,
        prg: &Program,
        build: impl FnOnce(&mut Self) -> Result<()>,
    ) -> Result<()> {
        self.host_range(
            HostKind::Launch,
            || format!("launch {}", prg.name),
            |d| d.run_launch_now(prg, build),
        )
    }

    fn run_launch_now(
        &mut self,
        prg: &Program,
        build: impl FnOnce(&mut Self) -> Result<()>,
    ) -> Result<()> {
        if self.sqtt.is_some() {
            self.sqtt_begin()?;
        }
        build(self)?;
        self.submit_compute()?;
        if self.pmc.is_some() {
            self.pmc_read(prg.kern)?;
        }
        if self.sqtt.is_some() {
            self.sqtt_end(prg.kern)?;
        }
        Ok(())
    }

    /// [`Device::launch`] with arguments checked against the kernel's metadata
    /// ([`Device::build_launch_args`]); a mismatch is an error before anything is submitted.
    pub fn launch_args(
        &mut self,
        prg: &Program,
        args: &[KernArg],
        global: [u32; 3],
        local: [u32; 3],
    ) -> Result<()> {
        if let Some(l) = Layout::of(&prg.code.kernel) {
            l.check(args)?;
        }
        self.run_launch(prg, |d| d.build_launch_args(prg, args, global, local))
    }

    // ---- performance counters ----

    /// Allocates the readback buffer and selects and starts the counters (tinygrad does this
    /// once at device open; every read resets them).
    fn setup_pmc(&mut self) -> Result<()> {
        let g = self.ctx.gfx_major;
        if crate::pmc::known_counters(g).is_empty() && self.opts.pmc == ["default"] {
            // The default set is best effort: no counter table for this generation, no counters.
            self.recorder
                .warnings
                .push(format!("no performance counters for gfx{g}: none captured"));
            return Ok(());
        }
        let topo = crate::pmc::Topology::from_props(g, &self.props);
        let plan = crate::pmc::PmcPlan::new(topo, &self.opts.pmc)?;
        let buf = self
            .iface
            .alloc(round_up(plan.size.max(8), 0x1000), AllocKind::VRAM_CPU)?;
        // Counters without a _HI register leave the upper half of their slot as it was.
        buf.cpu()?.write_bytes(0, &vec![0u8; plan.size as usize])?;
        self.cmds.clear();
        self.cmds.group("pmc_start");
        crate::pmc::start(&mut self.cmds, &plan)?;
        self.submit_compute()?;
        self.pmc = Some(PmcState { plan, buf });
        Ok(())
    }

    fn pmc_read(&mut self, kern: i64) -> Result<()> {
        let Some(s) = &self.pmc else { return Ok(()) };
        let plan = s.plan.clone();
        let va = s.buf.va;
        let v = self.next_timeline();
        let tl = self.timeline.value_addr();
        let mailbox = self.iface.event_mailbox();
        self.cmds.clear();
        self.cmds.group("wait");
        self.cmds.wait(tl, v - 1);
        self.cmds.group("pmc_read");
        crate::pmc::read_begin(&mut self.cmds)?;
        // Counters go in submissions of at most half the ring (a USB queue's ring is small);
        // the queue runs them in order.
        let budget = (self.compute.ring_dw / 2) as usize;
        for i in 0..plan.counters.len() {
            let at = self.cmds.q.len();
            crate::pmc::read_counter(&mut self.cmds, &plan, i, va)?;
            if self.cmds.q.len() > budget && at > 0 {
                let tail = self.cmds.q.split_off(at);
                self.submit_compute()?;
                self.cmds.clear();
                self.cmds.group("pmc_read");
                self.cmds.q.extend(tail);
            }
        }
        crate::pmc::read_end(&mut self.cmds)?;
        self.cmds.group("signal");
        self.cmds.signal(tl, v, mailbox);
        self.submit_compute()?;
        self.synchronize()?;
        let Some(s) = &self.pmc else { return Ok(()) };
        let mut blob = vec![0u8; plan.size as usize];
        s.buf.cpu()?.read_bytes(0, &mut blob)?;
        self.recorder.events.push(ProfileEvent::Pmc {
            kern,
            exec_tag: self.exec_tag,
            samples: plan.samples,
            blob,
        });
        Ok(())
    }

    // ---- SQTT ----

    fn setup_sqtt(&mut self) -> Result<()> {
        sqtt::start(
            &mut ComputeCmds::new(self.ctx.clone()),
            &SqttSetup {
                gfx_major: self.ctx.gfx_major,
                buffers: vec![],
                itrace_se_mask: 0,
                wptrs_va: 0,
            },
        )?;
        let n = self.props.num_se().max(1);
        let size = round_up(self.opts.sqtt_buffer_size.max(0x1000), 0x1000);
        let mut bufs = Vec::new();
        for _ in 0..n {
            bufs.push(self.iface.alloc(size, AllocKind::VRAM_CPU)?);
        }
        let wptrs = self.iface.alloc(0x1000, AllocKind::UNCACHED)?;
        self.sqtt = Some(SqttState {
            setup: SqttSetup {
                gfx_major: self.ctx.gfx_major,
                buffers: bufs.iter().map(|b| (b.va, b.size)).collect(),
                itrace_se_mask: self.opts.sqtt_itrace_se_mask,
                wptrs_va: wptrs.va,
            },
            bufs,
            wptrs,
        });
        Ok(())
    }

    fn sqtt_begin(&mut self) -> Result<()> {
        let Some(s) = &self.sqtt else { return Ok(()) };
        let setup = s.setup.clone();
        let v = self.next_timeline();
        let tl = self.timeline.value_addr();
        let mailbox = self.iface.event_mailbox();
        self.cmds.clear();
        self.cmds.group("wait");
        self.cmds.wait(tl, v - 1);
        self.cmds.group("sqtt_start");
        sqtt::start(&mut self.cmds, &setup)?;
        self.cmds.group("signal");
        self.cmds.signal(tl, v, mailbox);
        self.submit_compute()
    }

    fn sqtt_end(&mut self, kern: i64) -> Result<()> {
        let Some(s) = &self.sqtt else { return Ok(()) };
        let setup = s.setup.clone();
        let v = self.next_timeline();
        let tl = self.timeline.value_addr();
        let mailbox = self.iface.event_mailbox();
        self.cmds.clear();
        self.cmds.group("wait");
        self.cmds.wait(tl, v - 1);
        self.cmds.group("sqtt_stop");
        sqtt::stop(&mut self.cmds, &setup)?;
        self.cmds.group("signal");
        self.cmds.signal(tl, v, mailbox);
        self.submit_compute()?;
        self.synchronize()?;
        let Some(s) = &self.sqtt else { return Ok(()) };
        let wmem = s.wptrs.cpu()?.clone();
        let mut blobs = Vec::new();
        for (se, buf) in s.bufs.iter().enumerate() {
            let w = wmem.read32(4 * se as u64)?;
            let n = sqtt::bytes_written(setup.gfx_major, w, buf.va).min(buf.size);
            if n + 32 >= buf.size {
                self.recorder
                    .warnings
                    .push(sqtt::full_warning(se as u32, buf.size));
            }
            let mut blob = vec![0u8; n as usize];
            buf.cpu()?.read_bytes(0, &mut blob)?;
            if let Some(h) = sqtt::blob_header(setup.gfx_major, se as u32).filter(|_| n > 0) {
                blob.splice(0..0, h);
            }
            blobs.push((se as u32, blob));
        }
        for (se, blob) in blobs {
            self.recorder.events.push(ProfileEvent::Sqtt {
                kern,
                exec_tag: self.exec_tag,
                se,
                itrace: (setup.itrace_se_mask >> se) & 1 == 1,
                blob,
            });
        }
        Ok(())
    }

    /// Warnings collected so far (e.g. a full SQTT buffer).
    pub fn warnings(&self) -> &[String] {
        &self.recorder.warnings
    }

    // ---- profile ----

    pub fn profile(&mut self) -> Result<traces::model::Profile> {
        self.synchronize()?;
        Ok(self.recorder.to_profile(&self.props))
    }

    pub fn save_trace(&mut self, path: &std::path::Path) -> Result<()> {
        self.synchronize()?;
        self.recorder.save(&self.props, path)
    }
}

/// A ring that stays full (the device stopped consuming it) is usually a faulted queue: attach
/// what the driver knows, as a signal wait timing out does.
fn with_fault_report(r: Result<()>, iface: &mut dyn GpuIface) -> Result<()> {
    match r {
        Err(Error::DeviceHang(ring)) => {
            let mut rep = iface.on_device_hang();
            rep.context = format!("{}: {}", rep.context, ring.context);
            Err(Error::DeviceHang(rep))
        }
        r => r,
    }
}
