//! The emulated GPU behind the [`Platform`] trait: a virtual `/dev/kfd` with sysfs topology and
//! IP discovery ([`kfd`]), memory ([`mem`]), a register file ([`regfile`]), the PM4 command
//! processor ([`cp`]) and the SDMA engine ([`sdma`]). Kernel execution is handed to a
//! [`ShaderEngines`] implementation: [`EmuShaderEngines`] ([`se`], interpreting gfx11 and gfx12 code with
//! [`exec`], timing it with [`cycles`] and writing SQTT with [`sqtt_enc`]), [`Gfx9ShaderEngines`]
//! ([`se_gfx9`], gfx950 code on [`exec_gfx9`], SQTT with [`sqtt_enc_gfx9`]); [`NullShaderEngines`]
//! runs no code.
//!
//! Queues execute synchronously when their doorbell is written, and again whenever the runtime
//! sleeps (KFD WAIT_EVENTS), which un-blocks queues waiting on values the CPU wrote. Timestamps
//! come from an emulated 100 MHz clock that advances per packet and per dispatch (the cycle
//! model) and, while the GPU is idle, with real time ([`EmuConfig::wall_clock`]), so a kernel
//! starts when the host submitted it.
#![forbid(unsafe_code)]

pub mod arch;
pub mod asm24;
pub mod code;
pub mod cp;
pub mod cycles;
pub mod exec;
pub mod exec_gfx9;
pub mod kfd;
pub mod lds_banks;
pub mod mem;
pub mod open;
pub mod pci;
pub mod pmc;
pub mod regfile;
pub mod sdma;
pub mod se;
pub mod se_gfx9;
pub mod shader;
pub mod sqtt_enc;
pub mod sqtt_enc_gfx9;

use std::sync::{Arc, Mutex, MutexGuard};

pub use arch::EmuArch;
pub use mem::{MemFault, Memory};
pub use open::{
    open_kfd, open_pci, open_pci_on, open_pci_with, open_usb, open_usb_arch, open_usb_on,
    open_usb_with, EmuUsb,
};
pub use regfile::RegFile;
pub use se::EmuShaderEngines;
pub use se_gfx9::Gfx9ShaderEngines;

/// Whether the emulated `arch` runs shader code: gfx11/gfx12 through [`EmuShaderEngines`],
/// gfx950 through [`Gfx9ShaderEngines`].
pub fn executes(arch: EmuArch) -> bool {
    arch == EmuArch::Gfx950 || EmuShaderEngines::new(arch).can_execute()
}
pub use shader::{
    DeviceFault, DispatchInfo, DispatchResult, FaultingShaderEngines, NullShaderEngines,
    ShaderEngines,
};

use runtime::error::MmuFault;
use runtime::platform::{check_range, Errno, Fd, Mmio, MmioError, Platform};

/// What to emulate, including injected failures for tests.
#[derive(Debug, Clone)]
pub struct EmuConfig {
    pub arch: EmuArch,
    /// `false`: `/dev/kfd` does not exist.
    pub kfd_present: bool,
    /// `false`: the topology lists only a CPU node.
    pub gpu_node: bool,
    /// Make this ioctl request fail with this errno (every time).
    pub fail_ioctl: Option<(u64, Errno)>,
    /// CPU-visible VRAM beyond this many bytes fails like a small (non-resizable) BAR (EINVAL).
    pub bar_size: u64,
    /// Total allocations beyond this fail with ENOMEM.
    pub memory_limit: u64,
    /// The GPU clock runs in real time while the GPU is idle (as a real timestamp counter
    /// does), so work starts no earlier than the host submitted it and GPU times line up with
    /// the host's own ranges; durations stay the cycle model's. `false`: a purely modelled,
    /// deterministic clock that advances only per packet and per dispatch.
    pub wall_clock: bool,
    /// Shader engines of this part when it has fewer than the arch's full die (a Navi44 has 2
    /// of the Navi48's 4); `None`: the arch's count.
    pub num_se: Option<u32>,
}

impl EmuConfig {
    pub fn new(arch: EmuArch) -> Self {
        EmuConfig {
            arch,
            kfd_present: true,
            gpu_node: true,
            fail_ioctl: None,
            bar_size: 64 << 30,
            memory_limit: 64 << 30,
            wall_clock: true,
            num_se: None,
        }
    }
}

/// Counters and logs a test (or `wavescope devices --emulated`) can inspect.
#[derive(Debug, Default, Clone)]
pub struct EmuStats {
    pub pm4_packets: u64,
    pub sdma_packets: u64,
    pub dispatches: u64,
    pub sdma_bytes_copied: u64,
    /// The last dispatches the CP handed to the shader engines (bounded).
    pub recent_dispatches: Vec<DispatchInfo>,
    /// Register writes that landed in the register file.
    pub reg_writes: u64,
}

pub(crate) struct GpuCore {
    pub regs: RegFile,
    pub gc: cp::GcRegs,
    pub clock: u64,
    pub shader: Box<dyn ShaderEngines>,
    pub stats: EmuStats,
    pub num_xcc: u32,
    pub sqtt_active: bool,
    /// The performance-counter registers and their counts.
    pub pmc: pmc::PerfCounters,
    /// Interrupt context ids raised (RELEASE_MEM int_sel / SDMA TRAP) since the last wait.
    pub interrupts: Vec<u32>,
    /// Pending memory fault for the KFD memory-exception event.
    pub fault: Option<MmuFault>,
    /// With [`EmuConfig::wall_clock`]: the host instant and GPU clock when the device appeared.
    pub wall_epoch: Option<(std::time::Instant, u64)>,
}

impl GpuCore {
    pub fn tick(&mut self, n: u64) -> u64 {
        self.clock += n;
        self.clock
    }
}

pub(crate) struct EmuState {
    pub cfg: EmuConfig,
    pub mem: Memory,
    pub core: GpuCore,
    pub queues: Vec<cp::Queue>,
    pub kfd: kfd::KfdState,
}

impl EmuState {
    /// Runs every queue until none makes progress.
    pub fn pump(&mut self) {
        if let Some((t0, c0)) = self.core.wall_epoch {
            // 100 MHz ticks of real time since the device appeared: an idle GPU's counter ran.
            let now = c0 + (t0.elapsed().as_nanos() / 10) as u64;
            self.core.clock = self.core.clock.max(now);
        }
        loop {
            let mut progress = false;
            for q in &mut self.queues {
                progress |= q.run(&mut self.core, &mut self.mem);
            }
            if !progress {
                break;
            }
        }
    }
}

pub struct EmuShared {
    state: Mutex<EmuState>,
}

impl EmuShared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, EmuState> {
        // A panic while holding the lock leaves plain data behind; keep going with it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The emulated platform: pass it to [`runtime::kfd::KfdIface::open`] like the real one.
#[derive(Clone)]
pub struct EmuPlatform {
    shared: Arc<EmuShared>,
}

impl EmuPlatform {
    /// The emulated GPU with the interpreting shader engines: [`EmuShaderEngines`] for gfx11
    /// and gfx12, [`Gfx9ShaderEngines`] for gfx950 (which writes no SQTT bytes yet).
    pub fn new(cfg: EmuConfig) -> Self {
        if cfg.arch == EmuArch::Gfx950 {
            let se = Gfx9ShaderEngines::new(cfg.arch);
            return Self::with_shader_engines(cfg, Box::new(se));
        }
        let mut se = EmuShaderEngines::new(cfg.arch);
        if let Some(n) = cfg.num_se {
            se.num_se = n.max(1);
        }
        if se.can_execute() {
            Self::with_shader_engines(cfg, Box::new(se))
        } else {
            Self::with_shader_engines(cfg, Box::new(NullShaderEngines))
        }
    }

    pub fn with_shader_engines(cfg: EmuConfig, shader: Box<dyn ShaderEngines>) -> Self {
        let arch = cfg.arch;
        let num_se = cfg.num_se.unwrap_or(arch.num_se()).max(1);
        let gc = cp::GcRegs::for_arch(arch);
        let core = GpuCore {
            regs: RegFile::with_xccs(gc.grbm_gfx_index, num_se, arch.num_xcc()),
            gc,
            clock: 1_000_000,
            shader,
            stats: EmuStats::default(),
            num_xcc: arch.num_xcc(),
            sqtt_active: false,
            pmc: pmc::PerfCounters::new(arch, num_se),
            interrupts: Vec::new(),
            fault: None,
            wall_epoch: cfg
                .wall_clock
                .then(|| (std::time::Instant::now(), 1_000_000)),
        };
        let state = EmuState {
            kfd: kfd::KfdState::new(&cfg),
            cfg,
            mem: Memory::new(),
            core,
            queues: Vec::new(),
        };
        EmuPlatform {
            shared: Arc::new(EmuShared {
                state: Mutex::new(state),
            }),
        }
    }

    pub fn arch(&self) -> EmuArch {
        self.shared.lock().cfg.arch
    }

    pub fn stats(&self) -> EmuStats {
        self.shared.lock().core.stats.clone()
    }

    /// Current value of the emulated GPU clock (100 MHz ticks).
    pub fn clock(&self) -> u64 {
        self.shared.lock().core.clock
    }

    /// Reads a register as the CP would (current SE selection).
    pub fn read_reg(&self, addr: u32) -> u32 {
        self.shared.lock().core.regs.read(addr)
    }

    pub fn read_reg_se(&self, addr: u32, se: u32) -> u32 {
        self.shared.lock().core.regs.read_se(addr, se)
    }

    /// Reads emulated memory directly (tests).
    pub fn read_mem(&self, va: u64, out: &mut [u8]) -> Result<(), MemFault> {
        self.shared.lock().mem.read(va, out)
    }

    /// Backs `[va, va+len)` with memory (tests that feed the CP hand-made streams).
    pub fn map_memory(&self, va: u64, len: u64) -> Result<(), MemFault> {
        self.shared.lock().mem.map(va, len)
    }

    /// Writes emulated memory directly (tests).
    pub fn write_mem(&self, va: u64, data: &[u8]) -> Result<(), MemFault> {
        self.shared.lock().mem.write(va, data)
    }

    /// Runs the queues (what a doorbell write or a WAIT_EVENTS does).
    pub fn pump(&self) {
        self.shared.lock().pump();
    }

    /// Changes the injected ioctl failure after construction.
    pub fn set_fail_ioctl(&self, f: Option<(u64, Errno)>) {
        self.shared.lock().cfg.fail_ioctl = f;
    }

    /// Replaces the shader engines (e.g. with a faulting one) after construction.
    pub fn set_shader_engines(&self, s: Box<dyn ShaderEngines>) {
        self.shared.lock().core.shader = s;
    }

    /// Executes a PM4 stream directly on a scratch queue whose ring holds exactly these words
    /// (tests of the CP outside the KFD path). Returns the number of packets executed.
    pub fn execute_pm4(&self, words: &[u32]) -> Result<u64, String> {
        let mut st = self.shared.lock();
        let st = &mut *st;
        let bytes = (words.len() as u64 * 4).max(4096).next_power_of_two();
        let ring = st.mem.reserve(bytes);
        st.mem.map(ring, bytes).map_err(|e| e.to_string())?;
        let ptrs = st.mem.reserve(4096);
        st.mem.map(ptrs, 4096).map_err(|e| e.to_string())?;
        let data: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        st.mem.write(ring, &data).map_err(|e| e.to_string())?;
        let mut q = cp::Queue::new(
            cp::QueueKindEmu::Pm4,
            ring,
            bytes,
            ptrs + 8,
            ptrs,
            u32::MAX,
            0,
        );
        q.wptr = words.len() as u64;
        let before = st.core.stats.pm4_packets;
        while q.run(&mut st.core, &mut st.mem) {}
        if let Some(f) = &q.fault {
            return Err(f.clone());
        }
        if q.rptr != q.wptr {
            return Err(format!("CP blocked at dword {} of {}", q.rptr, q.wptr));
        }
        Ok(st.core.stats.pm4_packets - before)
    }
}

/// A CPU view of emulated memory.
pub struct EmuMemView {
    shared: Arc<EmuShared>,
    va: u64,
    len: u64,
}

impl Mmio for EmuMemView {
    fn addr(&self) -> u64 {
        self.va
    }
    fn size(&self) -> u64 {
        self.len
    }
    fn read_bytes(&self, offset: u64, out: &mut [u8]) -> Result<(), MmioError> {
        check_range(self.va, self.len, offset, out.len() as u64)?;
        self.shared
            .lock()
            .mem
            .read(self.va + offset, out)
            .map_err(|_| MmioError {
                base: self.va,
                offset,
                len: out.len() as u64,
                size: self.len,
            })
    }
    fn write_bytes(&self, offset: u64, data: &[u8]) -> Result<(), MmioError> {
        check_range(self.va, self.len, offset, data.len() as u64)?;
        self.shared
            .lock()
            .mem
            .write(self.va + offset, data)
            .map_err(|_| MmioError {
                base: self.va,
                offset,
                len: data.len() as u64,
                size: self.len,
            })
    }
    fn write_dwords(&self, offset: u64, words: &[u32]) -> Result<(), MmioError> {
        // One lock and one region lookup for the whole run.
        let mut buf = [0u8; 1024];
        let mut st = self.shared.lock();
        check_range(self.va, self.len, offset, words.len() as u64 * 4)?;
        let mut off = offset;
        for chunk in words.chunks(256) {
            let n = chunk.len() * 4;
            for (d, w) in buf.chunks_exact_mut(4).zip(chunk) {
                d.copy_from_slice(&w.to_le_bytes());
            }
            st.mem
                .write(self.va + off, &buf[..n])
                .map_err(|_| MmioError {
                    base: self.va,
                    offset: off,
                    len: n as u64,
                    size: self.len,
                })?;
            off += n as u64;
        }
        Ok(())
    }
}

/// The doorbell page: a 64-bit store to a slot sets that queue's write pointer and runs the
/// queues (the CP/SDMA "see" the doorbell).
pub struct EmuDoorbells {
    shared: Arc<EmuShared>,
    base: u64,
}

pub const DOORBELL_PAGE: u64 = 0x2000;

impl Mmio for EmuDoorbells {
    fn addr(&self) -> u64 {
        self.base
    }
    fn size(&self) -> u64 {
        DOORBELL_PAGE
    }
    fn read_bytes(&self, offset: u64, out: &mut [u8]) -> Result<(), MmioError> {
        check_range(self.base, DOORBELL_PAGE, offset, out.len() as u64)?;
        let st = self.shared.lock();
        for (i, b) in out.iter_mut().enumerate() {
            let o = offset + i as u64;
            let slot = (o / 8) as u32;
            let v = st
                .queues
                .iter()
                .find(|q| q.doorbell == slot)
                .map(|q| q.wptr)
                .unwrap_or(0);
            *b = v.to_le_bytes().get((o % 8) as usize).copied().unwrap_or(0);
        }
        Ok(())
    }
    fn write_bytes(&self, offset: u64, data: &[u8]) -> Result<(), MmioError> {
        check_range(self.base, DOORBELL_PAGE, offset, data.len() as u64)?;
        if !offset.is_multiple_of(8) || data.len() != 8 {
            // Doorbells take 64-bit stores only; anything else is ignored like on hardware.
            return Ok(());
        }
        let mut b = [0u8; 8];
        b.copy_from_slice(data);
        let v = u64::from_le_bytes(b);
        let slot = (offset / 8) as u32;
        let mut st = self.shared.lock();
        for q in st.queues.iter_mut().filter(|q| q.doorbell == slot) {
            q.wptr = v;
        }
        st.pump();
        Ok(())
    }
}

impl Platform for EmuPlatform {
    fn open(&self, path: &str) -> Result<Fd, Errno> {
        self.shared.lock().kfd.open(path)
    }
    fn close(&self, fd: Fd) {
        self.shared.lock().kfd.close(fd)
    }
    fn ioctl(
        &self,
        fd: Fd,
        request: u64,
        arg: &mut [u8],
        aux: &mut [&mut [u8]],
    ) -> Result<(), Errno> {
        let mut st = self.shared.lock();
        kfd::ioctl(&mut st, fd, request, arg, aux)
    }
    fn read_file(&self, path: &str) -> Result<String, Errno> {
        self.shared.lock().kfd.fs.read_file(path)
    }
    fn read_dir(&self, path: &str) -> Result<Vec<String>, Errno> {
        self.shared.lock().kfd.fs.read_dir(path)
    }
    fn exists(&self, path: &str) -> bool {
        self.shared.lock().kfd.fs.exists(path)
    }
    fn reserve_va(&self, len: u64) -> Result<u64, Errno> {
        Ok(self.shared.lock().mem.reserve(len))
    }
    fn release_va(&self, _addr: u64, _len: u64) {
        // Reservations are address-space bookkeeping only; nothing is backed until ALLOC.
    }
    fn mmap(
        &self,
        fd: Fd,
        offset: u64,
        len: u64,
        fixed: Option<u64>,
    ) -> Result<Arc<dyn Mmio>, Errno> {
        let st = self.shared.lock();
        match st.kfd.mmap_target(fd, offset, len, fixed)? {
            kfd::MmapTarget::Doorbells { base } => {
                drop(st);
                Ok(Arc::new(EmuDoorbells {
                    shared: self.shared.clone(),
                    base,
                }))
            }
            kfd::MmapTarget::Memory { va } => {
                if !st.mem.is_mapped(va, len) {
                    return Err(Errno::EINVAL);
                }
                drop(st);
                Ok(Arc::new(EmuMemView {
                    shared: self.shared.clone(),
                    va,
                    len,
                }))
            }
        }
    }
    fn anon_mmap(&self, len: u64) -> Result<Arc<dyn Mmio>, Errno> {
        let mut st = self.shared.lock();
        let len = len.div_ceil(0x1000) * 0x1000;
        let va = st.mem.reserve(len);
        st.mem.map(va, len).map_err(|_| Errno::ENOMEM)?;
        drop(st);
        Ok(Arc::new(EmuMemView {
            shared: self.shared.clone(),
            va,
            len,
        }))
    }
}
