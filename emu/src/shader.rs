//! The hand-off from the emulated command processor to the shader engines (the `emulator`
//! issue): a DISPATCH_DIRECT becomes a [`DispatchInfo`] read from the register file, and SQTT
//! start/finish events and register writes are forwarded so the engines can produce trace
//! data. The real engines are [`super::se::EmuShaderEngines`].

use super::mem::Memory;
use super::regfile::RegFile;

/// Everything a dispatch needs, as the CP read it from the COMPUTE_* registers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DispatchInfo {
    /// Byte address of the first instruction (`(PGM_HI:PGM_LO) << 8`).
    pub pgm_addr: u64,
    pub rsrc1: u32,
    pub rsrc2: u32,
    pub rsrc3: u32,
    /// COMPUTE_USER_DATA_0.. (count = RSRC2.USER_SGPR_COUNT).
    pub user_data: Vec<u32>,
    /// Work-groups per dimension.
    pub grid: [u32; 3],
    /// Threads per work-group (NUM_THREAD_X/Y/Z).
    pub local: [u32; 3],
    pub scratch_base: u64,
    pub tmpring_size: u32,
    /// LDS bytes (RSRC2.LDS_SIZE × 512).
    pub lds_bytes: u32,
    pub wave32: bool,
    pub initiator: u32,
    /// Which XCC executes this copy of the dispatch (multi-XCC parts run one per XCC).
    pub xcc_id: u32,
    pub num_xcc: u32,
    /// Thread trace was enabled (COMPUTE_THREAD_TRACE_ENABLE) when the dispatch started.
    pub sqtt: bool,
    /// The emulated 100 MHz GPU clock when the CP issued the dispatch.
    pub clock: u64,
}

impl DispatchInfo {
    pub fn user_sgpr_count(rsrc2: u32) -> u32 {
        (rsrc2 >> 1) & 0x1F
    }

    /// The work-group size, each dimension at least 1.
    pub fn local_dims(&self) -> [u32; 3] {
        self.local.map(|x| x.max(1))
    }

    /// Work-group `g`'s (x, y, z) in the grid (x fastest).
    pub fn group_xyz(&self, g: u64) -> [u32; 3] {
        let [gx, gy, _] = self.grid.map(u64::from);
        [
            (g % gx) as u32,
            ((g / gx) % gy) as u32,
            (g / (gx * gy)) as u32,
        ]
    }

    /// What wave `wv` of `nwaves` (of `lanes` lanes) of work-group `group` starts with, on
    /// every arch (COMPUTE_PGM_RSRC2 says which SGPRs are loaded): the user data, the enabled
    /// work-group ids, TG_SIZE and the scratch wave offset from `s[0]` on; each lane's
    /// work-item id packed into `v0` (x [9:0], y [19:10], z [29:20], as gfx90a+ and RDNA
    /// load it). Returns the EXEC mask (lanes past the group's threads are off).
    pub fn wave_init(
        &self,
        s: &mut [u32],
        mut v0: Option<&mut [u32]>,
        group: [u32; 3],
        wv: usize,
        nwaves: usize,
        lanes: u32,
    ) -> u64 {
        let rsrc2 = self.rsrc2;
        let user_n = Self::user_sgpr_count(rsrc2) as usize;
        for (i, v) in self.user_data.iter().enumerate().take(user_n) {
            s[i] = *v;
        }
        let mut si = user_n;
        for (dim, id) in group.iter().enumerate() {
            if (rsrc2 >> (7 + dim)) & 1 != 0 {
                s[si] = *id;
                si += 1;
            }
        }
        if (rsrc2 >> 10) & 1 != 0 {
            // TG_SIZE: wave index in the group [11:6], waves in the group [5:0]... as far as
            // documented; kernels here do not use it.
            s[si] = ((wv as u32) << 6) | nwaves as u32;
            si += 1;
        }
        if rsrc2 & 1 != 0 {
            s[si] = 0; // private segment wave offset: scratch is per wave here
        }
        let local = self.local_dims();
        let threads = local[0] * local[1] * local[2];
        let mut m = 0u64;
        for l in 0..lanes {
            let t = wv as u32 * lanes + l;
            if t >= threads {
                break;
            }
            let x = t % local[0];
            let y = (t / local[0]) % local[1];
            let z = t / (local[0] * local[1]);
            if let Some(v0) = v0.as_deref_mut() {
                v0[l as usize] = x | (y << 10) | (z << 20);
            }
            m |= 1 << l;
        }
        m
    }
}

/// How long a dispatch took, in ticks of the 100 MHz GPU clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DispatchResult {
    pub ticks: u64,
}

/// A fault raised while executing a kernel (bad address, illegal instruction...).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("shader fault at VA {va:#x}: {reason}")]
pub struct DeviceFault {
    pub va: u64,
    pub reason: String,
    /// The fault is a memory (MMU) fault at `va`; otherwise the queue just stops (a hang or an
    /// illegal instruction), which the driver reports without a memory exception.
    pub mmu: bool,
}

/// The shader engines behind the emulated CP.
pub trait ShaderEngines: Send {
    fn dispatch(
        &mut self,
        regs: &RegFile,
        mem: &mut Memory,
        d: &DispatchInfo,
    ) -> Result<DispatchResult, DeviceFault>;
    /// Thread trace started (the CP saw COMPUTE_THREAD_TRACE_ENABLE = 1).
    fn sqtt_start(&mut self, _num_se: u32) {}
    /// A register write the SQ sees while thread trace is on (SET_SH_REG / SET_UCONFIG_REG),
    /// at GPU clock `clock` (100 MHz ticks); the first one is the enable itself.
    fn sqtt_reg_write(&mut self, _addr: u32, _value: u32, _clock: u64) {}
    /// THREAD_TRACE_FINISH: the bytes SE `se` wrote into its buffer since the start.
    fn sqtt_finish(&mut self, _se: u32) -> Vec<u8> {
        Vec::new()
    }
    /// What the last dispatch counted for the performance counters ([`super::pmc`]); None:
    /// these engines count nothing (their counters read zero).
    fn take_counts(&mut self) -> Option<super::pmc::DispatchCounts> {
        None
    }
}

/// **No shader execution yet.** Records nothing beyond what the CP logs, runs no kernel code and
/// writes no memory: a dispatch "completes" after a fixed 1000-tick (10 µs) duration so that
/// queues, signals and timestamps can be exercised. Kernel results are never produced.
#[derive(Debug, Default)]
pub struct NullShaderEngines;

impl ShaderEngines for NullShaderEngines {
    fn dispatch(
        &mut self,
        _regs: &RegFile,
        _mem: &mut Memory,
        _d: &DispatchInfo,
    ) -> Result<DispatchResult, DeviceFault> {
        Ok(DispatchResult { ticks: 1000 })
    }
}

/// Test helper: every dispatch faults at the program address (drives the device-hang path).
#[derive(Debug, Default)]
pub struct FaultingShaderEngines;

impl ShaderEngines for FaultingShaderEngines {
    fn dispatch(
        &mut self,
        _regs: &RegFile,
        _mem: &mut Memory,
        d: &DispatchInfo,
    ) -> Result<DispatchResult, DeviceFault> {
        Err(DeviceFault {
            va: d.pgm_addr,
            reason: "injected fault (FaultingShaderEngines)".into(),
            mmu: true,
        })
    }
}
