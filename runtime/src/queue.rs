//! Command builders (PM4 compute, SDMA copy) and ring submission. Builders are plain dword
//! vectors built from the packet layouts of [`crate::pm4`] / [`crate::sdma`]; [`Ring`] copies them
//! into a hardware ring and rings the doorbell.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::platform::{IpBases, IpVersions, QueueDesc};
use crate::pm4::{
    self, acq_gcr, data_sel, event, func, int_sel, rel_gcr, AcquireMem, CopyData, Packet,
    ReleaseMem, WaitRegMem,
};
use crate::regs::{self, IpRegs, Reg};
use crate::sdma::{self, SdmaPacket};
use traces::sqtt::marker;

/// Per-device constants the compute builder needs: resolved register addresses and the
/// generation-specific packet choices.
#[derive(Debug, Clone)]
pub struct GfxContext {
    pub gfx_major: u32,
    pub num_xcc: u32,
    pub gc: IpRegs,
    pub hdp_flush_req: u32,
    pub hdp_flush_done: u32,
    /// Their register names (NBIO/NBIF table), for recordings.
    pub hdp_flush_names: (&'static str, &'static str),
    pub pgm_lo: u32,
    pub rsrc1: u32,
    pub rsrc3: u32,
    pub tmpring: u32,
    pub scratch_base_lo: Option<u32>,
    pub restart_x: u32,
    pub static_se0: u32,
    pub static_se2: u32,
    pub static_se4: Option<u32>,
    pub user_data_0: u32,
    pub resource_limits: u32,
    pub start_x: u32,
    pub tg_chunk_size: Option<u32>,
    pub current_logic_xcc_id: Option<u32>,
    pub sqtt_userdata_2: u32,
    /// Two 16-byte signal slots used by the multi-XCC barrier.
    pub xcc_sync: Option<(u64, u64)>,
}

impl GfxContext {
    pub fn new(ip: IpVersions, bases: &IpBases, num_xcc: u32) -> Result<Self> {
        let table = regs::gc_table(ip.gc).ok_or_else(|| {
            Error::Unsupported(format!(
                "GC IP {}.{}.{} has no register table",
                ip.gc.0, ip.gc.1, ip.gc.2
            ))
        })?;
        let gc = IpRegs::new(table, bases.gc.clone());
        let nbio_t = regs::nbio_table(ip.nbio).ok_or_else(|| {
            Error::Unsupported(format!(
                "NBIO IP {}.{}.{} has no register table",
                ip.nbio.0, ip.nbio.1, ip.nbio.2
            ))
        })?;
        let nbio = IpRegs::new(nbio_t, bases.nbio.clone());
        let (req, done) = regs::hdp_flush_names(ip.nbio);
        let a = |n: &str| gc.get(n).map(|r| r.addr);
        Ok(GfxContext {
            gfx_major: ip.gc.0,
            num_xcc: num_xcc.max(1),
            hdp_flush_req: nbio.get(req)?.addr,
            hdp_flush_done: nbio.get(done)?.addr,
            hdp_flush_names: (req, done),
            pgm_lo: a("COMPUTE_PGM_LO")?,
            rsrc1: a("COMPUTE_PGM_RSRC1")?,
            rsrc3: a("COMPUTE_PGM_RSRC3")?,
            tmpring: a("COMPUTE_TMPRING_SIZE")?,
            scratch_base_lo: a("COMPUTE_DISPATCH_SCRATCH_BASE_LO").ok(),
            restart_x: a("COMPUTE_RESTART_X")?,
            static_se0: a("COMPUTE_STATIC_THREAD_MGMT_SE0")?,
            static_se2: a("COMPUTE_STATIC_THREAD_MGMT_SE2")?,
            static_se4: if ip.gc.0 >= 11 {
                a("COMPUTE_STATIC_THREAD_MGMT_SE4").ok()
            } else {
                None
            },
            user_data_0: a("COMPUTE_USER_DATA_0")?,
            resource_limits: a("COMPUTE_RESOURCE_LIMITS")?,
            start_x: a("COMPUTE_START_X")?,
            tg_chunk_size: a("COMPUTE_TG_CHUNK_SIZE").ok(),
            current_logic_xcc_id: a("COMPUTE_CURRENT_LOGIC_XCC_ID").ok(),
            sqtt_userdata_2: a("SQ_THREAD_TRACE_USERDATA_2")?,
            gc,
            xcc_sync: None,
        })
    }

    pub fn reg(&self, name: &str) -> Result<Reg> {
        self.gc.get(name)
    }
}

/// The register addresses `exec` writes, copied out of the context.
#[derive(Clone, Copy)]
struct ExecRegs {
    gfx_major: u32,
    num_xcc: u32,
    pgm_lo: u32,
    rsrc1: u32,
    rsrc3: u32,
    tmpring: u32,
    scratch_base_lo: Option<u32>,
    restart_x: u32,
    static_se0: u32,
    static_se2: u32,
    static_se4: Option<u32>,
    user_data_0: u32,
    resource_limits: u32,
    start_x: u32,
}

impl From<&GfxContext> for ExecRegs {
    fn from(c: &GfxContext) -> Self {
        ExecRegs {
            gfx_major: c.gfx_major,
            num_xcc: c.num_xcc,
            pgm_lo: c.pgm_lo,
            rsrc1: c.rsrc1,
            rsrc3: c.rsrc3,
            tmpring: c.tmpring,
            scratch_base_lo: c.scratch_base_lo,
            restart_x: c.restart_x,
            static_se0: c.static_se0,
            static_se2: c.static_se2,
            static_se4: c.static_se4,
            user_data_0: c.user_data_0,
            resource_limits: c.resource_limits,
            start_x: c.start_x,
        }
    }
}

/// Everything `exec` needs about the kernel and launch.
#[derive(Debug, Clone, Copy)]
pub struct Launch {
    pub prog_addr: u64,
    pub rsrc1: u32,
    pub rsrc2: u32,
    pub rsrc3: u32,
    pub kernarg_va: u64,
    /// Dispatch-packet pointer (when the kernel asks for it).
    pub dispatch_ptr: Option<u64>,
    /// Scratch buffer resource words when the kernel uses private-segment SGPRs.
    pub private_segment: Option<[u32; 4]>,
    pub wave32: bool,
    pub global: [u32; 3],
    pub local: [u32; 3],
    pub tmpring_size: u32,
    /// Scratch base per XCC is `scratch_va + xcc * scratch_per_xcc`.
    pub scratch_va: u64,
    pub scratch_per_xcc: u64,
}

/// SQTT per-dispatch markers (RGP userdata): pipeline hash and command id.
#[derive(Debug, Clone, Copy)]
pub struct SqttMarker {
    pub pso_hash: u64,
    pub cmd_id: u32,
}

/// Builds a PM4 command stream for a compute queue.
pub struct ComputeCmds {
    pub ctx: Arc<GfxContext>,
    pub q: Vec<u32>,
    /// Where each operation's packets begin in `q` (dword offset, operation name as tinygrad's
    /// recordings name them); set by the caller with [`ComputeCmds::group`], read by
    /// [`crate::record`].
    pub groups: Vec<(usize, &'static str)>,
    /// The words of an unmarked `exec` per user-data shape ([`shape`]), replayed with the
    /// launch's fields patched in.
    templates: [Option<ExecTemplate>; 4],
}

/// Where `exec` put each launch-dependent word, relative to the start of its words.
#[derive(Debug, Clone, Default)]
struct ExecAt {
    pgm: usize,
    rsrc1: usize,
    rsrc3: usize,
    tmpring: usize,
    /// COMPUTE_DISPATCH_SCRATCH_BASE_LO of each XCC.
    scratch: Vec<usize>,
    user: usize,
    /// NUM_THREAD_X (three words).
    local: usize,
    /// DISPATCH_DIRECT dim (three words) then the initiator.
    dim: usize,
}

/// The dwords `exec` emits for one context and user-data shape: only the [`Launch`] fields
/// change between launches, at the [`ExecAt`] positions. Built by the encoder itself (the first
/// `exec` of a shape), so replaying it cannot drift from the packet layouts of [`crate::pm4`].
struct ExecTemplate {
    /// Held (not just compared by address) so the context cannot be freed and another one
    /// allocated at the same address.
    ctx: Arc<GfxContext>,
    words: Vec<u32>,
    at: ExecAt,
}

/// Which user SGPRs a launch passes besides the kernarg pointer (the layout of its words).
fn shape(l: &Launch) -> usize {
    usize::from(l.private_segment.is_some()) | (usize::from(l.dispatch_ptr.is_some()) << 1)
}

/// User SGPR words of a launch: private segment buffer, dispatch pointer, kernarg pointer.
fn user_data(l: &Launch) -> ([u32; 8], usize) {
    let mut user = [0u32; 8];
    let mut n = 0;
    if let Some(ps) = l.private_segment {
        user[..4].copy_from_slice(&ps);
        n = 4;
    }
    if let Some(dp) = l.dispatch_ptr {
        user[n] = lo(dp);
        user[n + 1] = hi(dp);
        n += 2;
    }
    user[n] = lo(l.kernarg_va);
    user[n + 1] = hi(l.kernarg_va);
    n += 2;
    (user, n)
}

fn initiator(gfx_major: u32, wave32: bool) -> u32 {
    let mut i = pm4::initiator::COMPUTE_SHADER_EN | pm4::initiator::FORCE_START_AT_000;
    if gfx_major >= 10 && wave32 {
        i |= pm4::initiator::CS_W32_EN;
    }
    i
}

impl ExecTemplate {
    /// Appends the template with `l`'s fields written at their positions.
    fn replay(&self, l: &Launch, q: &mut Vec<u32>) {
        // Every field is named: a new Launch field must be decided on here.
        let Launch {
            prog_addr,
            rsrc1,
            rsrc2,
            rsrc3,
            kernarg_va: _,
            dispatch_ptr: _,
            private_segment: _,
            wave32,
            global,
            local,
            tmpring_size,
            scratch_va,
            scratch_per_xcc,
        } = *l;
        let start = q.len();
        q.extend_from_slice(&self.words);
        let Some(w) = q.get_mut(start..) else {
            return;
        };
        let at = &self.at;
        let pgm = prog_addr >> 8;
        w[at.pgm] = lo(pgm);
        w[at.pgm + 1] = hi(pgm);
        w[at.rsrc1] = rsrc1;
        w[at.rsrc1 + 1] = rsrc2;
        w[at.rsrc3] = rsrc3;
        w[at.tmpring] = tmpring_size;
        let mut base = scratch_va;
        for &o in &at.scratch {
            w[o] = lo(base >> 8);
            w[o + 1] = hi(base >> 8);
            base = base.wrapping_add(scratch_per_xcc);
        }
        // user_data covers kernarg_va, dispatch_ptr and private_segment (their presence is the
        // template's shape).
        let (user, n) = user_data(l);
        w[at.user..at.user + n].copy_from_slice(&user[..n]);
        w[at.local..at.local + 3].copy_from_slice(&local);
        w[at.dim..at.dim + 3].copy_from_slice(&global);
        w[at.dim + 3] = initiator(self.ctx.gfx_major, wave32);
    }
}

fn lo(v: u64) -> u32 {
    v as u32
}
fn hi(v: u64) -> u32 {
    (v >> 32) as u32
}

impl ComputeCmds {
    pub fn new(ctx: Arc<GfxContext>) -> Self {
        ComputeCmds {
            ctx,
            q: Vec::with_capacity(256),
            groups: Vec::new(),
            templates: Default::default(),
        }
    }

    pub fn clear(&mut self) {
        self.q.clear();
        self.groups.clear();
    }

    /// The packets from here on belong to operation `name` (until the next call).
    pub fn group(&mut self, name: &'static str) {
        self.groups.push((self.q.len(), name));
    }

    fn pkt(&mut self, p: Packet<'_>) {
        p.encode(&mut self.q);
    }

    /// Appends one packet (for builders outside this module, e.g. [`crate::pmc`]).
    pub(crate) fn packet(&mut self, p: Packet<'_>) {
        self.pkt(p);
    }

    /// `wreg`, returning the position of the first value relative to `start`.
    fn wreg_at(&mut self, start: usize, addr: u32, values: &[u32]) -> Result<usize> {
        // Header and register offset, then the values.
        let at = self.q.len() + 2 - start;
        self.wreg(addr, values)?;
        Ok(at)
    }

    /// SET_SH_REG or SET_UCONFIG_REG, chosen by the register's window.
    pub fn wreg(&mut self, addr: u32, values: &[u32]) -> Result<()> {
        let (uconfig, base) = if (pm4::SH_REG_BASE..pm4::SH_REG_END).contains(&addr) {
            (false, pm4::SH_REG_BASE)
        } else if (pm4::UCONFIG_REG_BASE..pm4::UCONFIG_REG_END).contains(&addr) {
            (true, pm4::UCONFIG_REG_BASE)
        } else {
            return Err(Error::Unsupported(format!(
                "register {addr:#x} is outside the SH and UCONFIG windows"
            )));
        };
        self.pkt(Packet::SetReg {
            uconfig,
            offset: addr - base,
            values,
        });
        Ok(())
    }

    /// `wreg` of a named register with named fields.
    pub fn wreg_fields(&mut self, name: &str, fields: &[(&str, u32)]) -> Result<()> {
        let r = self.ctx.reg(name)?;
        let v = r.encode(fields)?;
        self.wreg(r.addr, &[v])
    }

    /// Opens a PRED_EXEC block for the XCCs of `xcc_mask` on multi-XCC parts (`None` on one
    /// XCC); [`Self::pred_exec_end`] fills in its length.
    pub(crate) fn pred_exec_begin(&mut self, xcc_mask: u32) -> Option<usize> {
        if self.ctx.num_xcc > 1 {
            self.pkt(Packet::PredExec {
                xcc_mask,
                dwords: 0,
            });
            Some(self.q.len())
        } else {
            None
        }
    }
    pub(crate) fn pred_exec_end(&mut self, start: Option<usize>) {
        if let Some(s) = start {
            let n = (self.q.len() - s) as u32;
            if let Some(w) = self.q.get_mut(s - 1) {
                *w |= n & 0xFF_FFFF;
            }
        }
    }

    pub fn wait_reg_mem_mem(
        &mut self,
        addr: u64,
        function: u32,
        reference: u32,
        mask: u32,
        interval: u32,
    ) {
        self.q.extend_from_slice(
            &WaitRegMem {
                function,
                mem_space: true,
                operation: 0,
                engine: 0,
                addr,
                reference,
                mask,
                poll_interval: interval,
            }
            .words(),
        );
    }

    /// Register-space wait: `(reg & mask) <function> reference`.
    pub fn wait_reg(&mut self, reg: u32, function: u32, reference: u32, mask: u32) {
        self.q.extend_from_slice(
            &WaitRegMem {
                function,
                mem_space: false,
                operation: 0,
                engine: 0,
                addr: u64::from(reg),
                reference,
                mask,
                poll_interval: 4,
            }
            .words(),
        );
    }

    /// Waits until the 32-bit value at `signal_va` is >= `value`.
    pub fn wait(&mut self, signal_va: u64, value: u32) {
        self.wait_reg_mem_mem(signal_va, func::GE, value, 0xFFFF_FFFF, 4);
        self.xcc_barrier();
    }

    pub fn acquire_mem(&mut self, gcr: u32) {
        if self.ctx.gfx_major >= 10 {
            AcquireMem {
                coher_cntl: 0,
                coher_size: u64::MAX,
                coher_base: 0,
                poll_interval: 0,
                gcr_cntl: Some(gcr),
            }
            .encode(&mut self.q);
        } else {
            // gfx9: CP_COHER_CNTL bits (SH_ICACHE 29, SH_KCACHE 27, TC 23, TCL1 22, TC_WB 18).
            let cntl = if gcr == acq_gcr::ALL {
                0x28C4_0000
            } else {
                0x0840_0000
            };
            AcquireMem {
                coher_cntl: cntl,
                coher_size: u64::MAX,
                coher_base: 0,
                poll_interval: 0xA,
                gcr_cntl: None,
            }
            .encode(&mut self.q);
        }
    }

    /// HDP flush (write-then-wait on the NBIO flush registers) + full cache acquire.
    pub fn memory_barrier(&mut self) {
        self.q.extend_from_slice(
            &WaitRegMem {
                function: func::GE,
                mem_space: false,
                operation: 1,
                engine: 0,
                addr: u64::from(self.ctx.hdp_flush_req)
                    | (u64::from(self.ctx.hdp_flush_done) << 32),
                reference: 0xFFFF_FFFF,
                mask: 0xFFFF_FFFF,
                poll_interval: 4,
            }
            .words(),
        );
        self.acquire_mem(acq_gcr::ALL);
    }

    fn release_mem(
        &mut self,
        addr: u64,
        data: u64,
        dsel: u32,
        isel: u32,
        ctxid: u32,
        cache_flush: bool,
    ) {
        let gcr = match (cache_flush, self.ctx.gfx_major >= 10) {
            (false, _) => 0,
            (true, true) => {
                rel_gcr::GLV_INV
                    | rel_gcr::GL1_INV
                    | rel_gcr::GL2_INV
                    | rel_gcr::GLM_WB
                    | rel_gcr::GLM_INV
                    | rel_gcr::GL2_WB
                    | rel_gcr::SEQ
            }
            // gfx9: EOP_TC_WB_ACTION_EN (15) | EOP_TC_NC_ACTION_EN (19).
            (true, false) => (1 << 15) | (1 << 19),
        };
        self.q.extend_from_slice(
            &ReleaseMem {
                event_type: event::CACHE_FLUSH_AND_INV_TS_EVENT,
                event_index: 5,
                gcr,
                cache_policy: 0,
                execute: false,
                dst_sel: 0,
                int_sel: isel,
                data_sel: dsel,
                addr,
                data,
                int_ctxid: if self.ctx.gfx_major >= 10 { ctxid } else { 0 },
            }
            .words(),
        );
    }

    /// Writes the GPU clock (100 MHz ticks) to `ts_va` (a signal's timestamp slot).
    pub fn timestamp(&mut self, ts_va: u64) {
        let p = self.pred_exec_begin(1);
        self.release_mem(ts_va, 0, data_sel::GPU_CLOCK, int_sel::NONE, 0, false);
        self.pred_exec_end(p);
    }

    /// Writes `value` to `signal_va` at end of pipe; with `mailbox` (KFD event page slot, event
    /// id) a second release wakes a CPU sleeping in WAIT_EVENTS.
    pub fn signal(&mut self, signal_va: u64, value: u32, mailbox: Option<(u64, u32)>) {
        let p = self.pred_exec_begin(1);
        // With a mailbox the second release raises the interrupt: one on the value write too
        // would carry context id 0, which sends the KFD to scan every event (kfd_events.c
        // kfd_signal_event_interrupt's slow path). tinygrad's signal does the same.
        let irq = if mailbox.is_some() {
            int_sel::NONE
        } else {
            int_sel::IRQ_AFTER_WRITE_CONFIRM
        };
        self.release_mem(
            signal_va,
            u64::from(value),
            data_sel::VALUE_32,
            irq,
            0,
            true,
        );
        if let Some((va, id)) = mailbox {
            self.release_mem(
                va,
                u64::from(id),
                data_sel::VALUE_32,
                int_sel::IRQ_AFTER_WRITE_CONFIRM,
                id,
                false,
            );
        }
        self.pred_exec_end(p);
    }

    /// Multi-XCC rendezvous: each XCC adds 1 to two counters and waits until each is 0 mod 8.
    pub fn xcc_barrier(&mut self) {
        let (Some((a, b)), true) = (self.ctx.xcc_sync, self.ctx.num_xcc > 1) else {
            return;
        };
        let mask = self.ctx.num_xcc.next_power_of_two() - 1;
        for va in [a, b] {
            self.pkt(Packet::AtomicMem {
                atomic: crate::pm4::tc_op::ATOMIC_ADD_RTN_32,
                addr: va,
                src: 1,
                cmp: 0,
                loop_interval: 0x10,
            });
            self.wait_reg_mem_mem(va, func::EQ, 0, mask, 0x80);
        }
    }

    /// Per-XCC setup for multi-XCC parts (work-group chunking and logical XCC ids).
    pub fn xcc_config(&mut self) -> Result<()> {
        if self.ctx.num_xcc <= 1 {
            return Ok(());
        }
        if let Some(r) = self.ctx.tg_chunk_size {
            self.wreg(r, &[1])?;
        }
        if let Some(r) = self.ctx.current_logic_xcc_id {
            for x in 0..self.ctx.num_xcc {
                let p = self.pred_exec_begin(1 << x);
                self.wreg(r, &[x])?;
                self.pred_exec_end(p);
            }
        }
        Ok(())
    }

    /// RGP userdata markers before a dispatch (pipeline bind, then event with thread dims).
    pub fn sqtt_markers(&mut self, m: SqttMarker, global: [u32; 3]) -> Result<()> {
        let reg = self.ctx.sqtt_userdata_2;
        let bind = marker::pipeline_bind_compute(m.pso_hash);
        let ev = marker::dispatch_event(m.cmd_id, global);
        for chunk in bind.chunks(2).chain(ev.chunks(2)) {
            self.wreg(reg, chunk)?;
        }
        Ok(())
    }

    /// The dispatch itself (runtime-architecture.md §3 step 2.4).
    ///
    /// Without a marker the words only differ between launches in the [`Launch`] fields, so the
    /// first launch of a shape (which user SGPRs it passes) is encoded packet by packet and kept
    /// as a template; later launches copy it and patch those fields.
    pub fn exec(&mut self, l: &Launch, marker: Option<SqttMarker>) -> Result<()> {
        if marker.is_some() {
            return self.encode_exec(l, marker).map(|_| ());
        }
        let ComputeCmds {
            ctx, q, templates, ..
        } = self;
        let slot = &mut templates[shape(l)];
        if let Some(t) = slot.as_ref().filter(|t| Arc::ptr_eq(&t.ctx, ctx)) {
            t.replay(l, q);
            return Ok(());
        }
        let old = slot.take();
        let start = self.q.len();
        let at = self.encode_exec(l, None)?;
        let mut words = old.map(|t| t.words).unwrap_or_default();
        words.clear();
        words.extend_from_slice(self.q.get(start..).unwrap_or(&[]));
        self.templates[shape(l)] = Some(ExecTemplate {
            ctx: self.ctx.clone(),
            words,
            at,
        });
        Ok(())
    }

    /// Encodes `exec` packet by packet; returns where the launch-dependent words went.
    fn encode_exec(&mut self, l: &Launch, marker: Option<SqttMarker>) -> Result<ExecAt> {
        // Copy the register addresses out (no Arc refcount traffic in the hot path).
        let c = ExecRegs::from(&*self.ctx);
        let s = self.q.len();
        let mut at = ExecAt::default();
        self.acquire_mem(acq_gcr::NO_GLI_GL2);
        let (user, n) = user_data(l);
        if let Some(m) = marker {
            self.sqtt_markers(m, l.global)?;
        }
        let pgm = l.prog_addr >> 8;
        at.pgm = self.wreg_at(s, c.pgm_lo, &[lo(pgm), hi(pgm)])?;
        at.rsrc1 = self.wreg_at(s, c.rsrc1, &[l.rsrc1, l.rsrc2])?;
        at.rsrc3 = self.wreg_at(s, c.rsrc3, &[l.rsrc3])?;
        at.tmpring = self.wreg_at(s, c.tmpring, &[l.tmpring_size])?;
        if let Some(sb) = c.scratch_base_lo {
            for x in 0..c.num_xcc {
                let p = self.pred_exec_begin(1 << x);
                let base = (l.scratch_va + l.scratch_per_xcc * u64::from(x)) >> 8;
                at.scratch.push(self.wreg_at(s, sb, &[lo(base), hi(base)])?);
                self.pred_exec_end(p);
            }
        }
        self.wreg(c.restart_x, &[0, 0, 0])?;
        self.wreg(c.static_se0, &[u32::MAX, u32::MAX])?;
        self.wreg(c.static_se2, &[u32::MAX, u32::MAX])?;
        if let Some(se4) = c.static_se4 {
            self.wreg(se4, &[u32::MAX; 4])?;
        }
        at.user = self.wreg_at(s, c.user_data_0, user.get(..n).unwrap_or(&[]))?;
        self.wreg(c.resource_limits, &[0])?;
        at.local = 3 + self.wreg_at(
            s,
            c.start_x,
            &[0, 0, 0, l.local[0], l.local[1], l.local[2], 0, 0],
        )?;
        at.dim = self.q.len() + 1 - s;
        self.pkt(Packet::DispatchDirect {
            dim: l.global,
            initiator: initiator(c.gfx_major, l.wave32),
        });
        if marker.is_some() {
            self.pkt(Packet::EventWrite {
                event_type: event::THREAD_TRACE_MARKER,
                event_index: 0,
            });
        }
        self.pkt(Packet::EventWrite {
            event_type: event::CS_PARTIAL_FLUSH,
            event_index: 4,
        });
        if c.num_xcc > 1 {
            self.release_mem(0, 0, data_sel::NONE, int_sel::NONE, 0, true);
            self.acquire_mem(acq_gcr::ALL & !1);
            self.xcc_barrier();
        }
        Ok(at)
    }

    /// Copies a register's value to memory (SQTT write-pointer readout).
    pub fn copy_reg_to_mem(&mut self, reg: u32, dst: u64) {
        self.pkt(Packet::CopyData(CopyData {
            src_sel: CopyData::SRC_REG_PERF,
            dst_sel: CopyData::DST_MEM,
            count_sel: false,
            wr_confirm: true,
            src: u64::from(reg),
            dst,
        }));
    }

    pub fn event_write(&mut self, event_type: u32, event_index: u32) {
        self.pkt(Packet::EventWrite {
            event_type,
            event_index,
        });
    }

    pub fn indirect_buffer(&mut self, va: u64, size_dw: u32) {
        self.pkt(Packet::IndirectBuffer {
            addr: va,
            size_dw,
            valid: true,
        });
    }
}

/// Builds an SDMA command stream, remembering packet sizes so submission never splits one.
pub struct CopyCmds {
    pub q: Vec<u32>,
    /// Dword length of each packet, in order.
    pub sizes: Vec<usize>,
    /// The operation (copy/signal/wait/timestamp) of each packet, in order.
    pub groups: Vec<&'static str>,
    cur: &'static str,
    /// FENCE header MTYPE: 3 (uncached) on SDMA 5+; SDMA 4 (gfx9) fences carry none (amdgpu
    /// `sdma_v4_0_ring_emit_fence` writes a bare FENCE header; tinygrad writes 0 on gfx9).
    pub fence_mtype: u32,
    /// Largest COPY_LINEAR packet: bigger copies are split ([`sdma::MAX_COPY_SIZE`] on SDMA 5+,
    /// [`sdma::MAX_COPY_SIZE_SDMA4`] on gfx9).
    pub max_copy: u64,
}

impl Default for CopyCmds {
    fn default() -> Self {
        Self::new()
    }
}

impl CopyCmds {
    pub fn new() -> Self {
        CopyCmds {
            q: Vec::with_capacity(64),
            sizes: Vec::with_capacity(16),
            groups: Vec::with_capacity(16),
            cur: "",
            fence_mtype: 3,
            max_copy: sdma::MAX_COPY_SIZE,
        }
    }
    /// The SDMA 4 (gfx9) stream: bare FENCE headers and 4 MiB copy packets.
    pub fn sdma4() -> Self {
        CopyCmds {
            fence_mtype: 0,
            max_copy: sdma::MAX_COPY_SIZE_SDMA4,
            ..Self::new()
        }
    }
    pub fn clear(&mut self) {
        self.q.clear();
        self.sizes.clear();
        self.groups.clear();
    }
    fn pkt(&mut self, p: SdmaPacket) {
        let s = self.q.len();
        p.encode(&mut self.q);
        self.sizes.push(self.q.len() - s);
        self.groups.push(self.cur);
    }
    pub fn copy(&mut self, dst: u64, src: u64, size: u64) {
        self.cur = "copy";
        let mut done = 0;
        while done < size {
            let n = (size - done).min(self.max_copy);
            self.pkt(SdmaPacket::CopyLinear {
                bytes: n as u32,
                src: src + done,
                dst: dst + done,
            });
            done += n;
        }
    }
    pub fn signal(&mut self, signal_va: u64, value: u32, mailbox: Option<(u64, u32)>) {
        self.cur = "signal";
        self.pkt(SdmaPacket::Fence {
            mtype: self.fence_mtype,
            addr: signal_va,
            data: value,
        });
        if let Some((va, id)) = mailbox {
            self.pkt(SdmaPacket::Fence {
                mtype: self.fence_mtype,
                addr: va,
                data: id,
            });
            self.pkt(SdmaPacket::Trap { int_context: id });
        }
    }
    pub fn wait(&mut self, signal_va: u64, value: u32) {
        self.cur = "wait";
        self.pkt(SdmaPacket::PollRegmem {
            hdp_flush: false,
            function: func::GE,
            mem_poll: true,
            addr: signal_va,
            reference: value,
            mask: 0xFFFF_FFFF,
            interval: 4,
            retry: 0xFFF,
        });
    }
    pub fn timestamp(&mut self, ts_va: u64) {
        self.cur = "timestamp";
        self.pkt(SdmaPacket::Timestamp { addr: ts_va });
    }
}

/// A hardware ring as the runtime drives it.
pub struct Ring {
    pub desc: QueueDesc,
    /// Ring size in dwords.
    pub ring_dw: u64,
    /// PM4: dwords; SDMA: bytes. Never reset (64-bit).
    pub put_value: u64,
    pub sdma: bool,
    /// How long a full ring may go without the device consuming anything before the submission
    /// fails as a hang.
    pub stall_timeout: std::time::Duration,
}

impl Ring {
    pub fn new(desc: QueueDesc, sdma: bool) -> Self {
        let ring_dw = desc.ring.size() / 4;
        Ring {
            desc,
            ring_dw,
            put_value: 0,
            sdma,
            stall_timeout: std::time::Duration::from_secs(30),
        }
    }

    /// Smallest read pointer over the XCCs, in the ring's unit.
    pub fn read_ptr(&self) -> Result<u64> {
        let mut m = u64::MAX;
        for r in &self.desc.read_ptrs {
            m = m.min(r.read()?);
        }
        Ok(if m == u64::MAX { 0 } else { m })
    }

    fn ring_doorbell(&self) -> Result<()> {
        for w in &self.desc.write_ptrs {
            w.write(self.put_value)?;
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        for d in &self.desc.doorbells {
            d.write(self.put_value)?;
        }
        Ok(())
    }

    /// Free space in dwords, given the device's read pointer.
    fn free_dw(&self, rptr_dw: u64) -> u64 {
        self.ring_dw
            .saturating_sub(self.put_value_dw().saturating_sub(rptr_dw))
    }

    fn put_value_dw(&self) -> u64 {
        if self.sdma {
            self.put_value / 4
        } else {
            self.put_value
        }
    }

    fn rptr_dw(&self) -> Result<u64> {
        let r = self.read_ptr()?;
        Ok(if self.sdma { r / 4 } else { r })
    }

    /// Waits (polling the read pointer, calling `idle` between polls) until `n` dwords fit.
    fn reserve(&self, n: u64, idle: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        if n > self.ring_dw {
            return Err(Error::Invalid(format!(
                "submission of {n} dwords exceeds the ring ({} dwords)",
                self.ring_dw
            )));
        }
        if self.free_dw(self.rptr_dw()?) >= n {
            return Ok(());
        }
        // The clock restarts whenever the device makes progress: a long but moving queue is
        // not a hang.
        let mut start = std::time::Instant::now();
        let mut last = self.rptr_dw()?;
        while self.free_dw(last) < n {
            if start.elapsed() > self.stall_timeout {
                return Err(Error::DeviceHang(crate::error::FaultReport {
                    context: format!(
                        "ring full: the device consumed nothing from the queue for {:.1} s",
                        self.stall_timeout.as_secs_f64()
                    ),
                    ..Default::default()
                }));
            }
            idle()?;
            let now = self.rptr_dw()?;
            if now != last {
                last = now;
                start = std::time::Instant::now();
            }
        }
        Ok(())
    }

    /// Submits a PM4 stream (wrapping at the ring end).
    pub fn submit_pm4(
        &mut self,
        words: &[u32],
        idle: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        self.reserve(words.len() as u64, idle)?;
        let pos = self.put_value % self.ring_dw;
        let first = (self.ring_dw - pos).min(words.len() as u64) as usize;
        let ring = &self.desc.ring;
        ring.write_dwords(pos * 4, words.get(..first).unwrap_or(&[]))?;
        if first < words.len() {
            ring.write_dwords(0, words.get(first..).unwrap_or(&[]))?;
        }
        self.put_value += words.len() as u64;
        self.ring_doorbell()
    }

    /// Submits SDMA packets; a packet that would straddle the ring end is preceded by NOP
    /// padding up to the end (SDMA counters are bytes).
    pub fn submit_sdma(
        &mut self,
        cmds: &CopyCmds,
        idle: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        let mut off = 0usize;
        for &sz in &cmds.sizes {
            let pos = (self.put_value / 4) % self.ring_dw;
            let mut need = sz as u64;
            let tail = self.ring_dw - pos;
            if sz as u64 > tail {
                need += tail;
            }
            self.reserve(need, idle)?;
            if sz as u64 > tail {
                let zeros = vec![0u32; tail as usize];
                self.desc.ring.write_dwords(pos * 4, &zeros)?;
                self.put_value += tail * 4;
            }
            let pos = (self.put_value / 4) % self.ring_dw;
            self.desc
                .ring
                .write_dwords(pos * 4, cmds.q.get(off..off + sz).unwrap_or(&[]))?;
            self.put_value += sz as u64 * 4;
            off += sz;
        }
        self.ring_doorbell()
    }
}
