//! The emulated command processor: one [`Queue`] per hardware queue (PM4 rings count dwords,
//! SDMA rings bytes). PM4 packets are decoded with the same layouts the builder uses
//! ([`runtime::pm4::Packet`]); register writes land in the [`RegFile`]; DISPATCH_DIRECT is handed to
//! the [`ShaderEngines`](super::ShaderEngines).

use super::arch::EmuArch;
use super::mem::Memory;
use super::shader::DispatchInfo;
use super::GpuCore;
use runtime::error::MmuFault;
use runtime::pm4::{self, event, parse_header, CopyData, Packet, SH_REG_BASE, UCONFIG_REG_BASE};
use runtime::regs::{self, IpRegs};

/// Register addresses the CP itself interprets.
#[derive(Debug, Clone)]
pub struct GcRegs {
    pub grbm_gfx_index: u32,
    pub pgm_lo: u32,
    pub rsrc1: u32,
    pub rsrc2: u32,
    pub rsrc3: u32,
    pub tmpring: u32,
    pub scratch_lo: u32,
    pub user_data_0: u32,
    pub num_thread_x: u32,
    pub thread_trace_enable: u32,
    pub tt_status: u32,
    pub tt_wptr: u32,
    /// The WPTR field (offset or write pointer in 32-byte units): 29 bits on gfx11/12, 30 on
    /// gfx9 (GC 9.4.3 `wptr` [29:0], above it `read_offset`).
    pub tt_wptr_mask: u32,
    /// gfx11: BUF0_BASE (base_lo) + BUF0_SIZE (base_hi, size); gfx12: BUF0_BASE_LO/HI + SIZE;
    /// gfx9: BASE (addr) + BASE2 (addr_hi) + SIZE (size).
    pub tt_base_lo: u32,
    pub tt_base_hi: Option<u32>,
    pub tt_size: u32,
    /// The `size` field of `tt_size` (in 4 KiB units).
    pub tt_size_mask: u32,
    /// Mask of the high base bits in `tt_base_hi` (gfx9 `addr_hi`, gfx12 `base_hi`).
    pub tt_base_hi_mask: u32,
    pub tt_finish_done_lo: u32,
    /// gfx9: SQ_THREAD_TRACE_CTRL and its `reset_buffer` bit (resets WPTR), SQ_THREAD_TRACE_CNTR
    /// (32-byte units the SE produced, including any that did not fit).
    pub tt_ctrl_reset: Option<(u32, u32)>,
    pub tt_cntr: Option<u32>,
    /// gfx9: SQ_THREAD_TRACE_MODE and its `mode` field; writing mode 0 to an SE that was
    /// tracing drains it (the gfx9 stop has no THREAD_TRACE_FINISH).
    pub tt_mode: Option<(u32, u32)>,
    pub wptr_absolute: bool,
    pub gfx_major: u32,
}

impl GcRegs {
    pub fn for_arch(arch: EmuArch) -> Self {
        let gc = IpRegs::new(
            regs::gc_table(arch.gc_version()).unwrap_or(&regs::GC_11_0_0),
            arch.bases("GC"),
        );
        let a = |n: &str| gc.get(n).map(|r| r.addr).unwrap_or(0);
        let mask = |n: &str, f: &str, default: u32| {
            gc.get(n)
                .ok()
                .and_then(|r| r.field_mask(f))
                .unwrap_or(default)
        };
        let major = arch.gc_version().0;
        let (base_lo, base_hi, size) = match major {
            12 => (
                a("SQ_THREAD_TRACE_BUF0_BASE_LO"),
                Some(a("SQ_THREAD_TRACE_BUF0_BASE_HI")),
                a("SQ_THREAD_TRACE_BUF0_SIZE"),
            ),
            11 => (
                a("SQ_THREAD_TRACE_BUF0_BASE"),
                None,
                a("SQ_THREAD_TRACE_BUF0_SIZE"),
            ),
            _ => (
                a("SQ_THREAD_TRACE_BASE"),
                Some(a("SQ_THREAD_TRACE_BASE2")),
                a("SQ_THREAD_TRACE_SIZE"),
            ),
        };
        let (size_mask, base_hi_mask, wptr_mask) = match major {
            12 => (
                mask("SQ_THREAD_TRACE_BUF0_SIZE", "size", 0x3F_FFFF),
                mask("SQ_THREAD_TRACE_BUF0_BASE_HI", "base_hi", 0xFFFF),
                mask("SQ_THREAD_TRACE_WPTR", "offset", 0x1FFF_FFFF),
            ),
            11 => (
                mask("SQ_THREAD_TRACE_BUF0_SIZE", "size", 0x3F_FFFF << 8),
                mask("SQ_THREAD_TRACE_BUF0_SIZE", "base_hi", 0xF),
                mask("SQ_THREAD_TRACE_WPTR", "offset", 0x1FFF_FFFF),
            ),
            _ => (
                mask("SQ_THREAD_TRACE_SIZE", "size", 0x3F_FFFF),
                mask("SQ_THREAD_TRACE_BASE2", "addr_hi", 0xF),
                mask("SQ_THREAD_TRACE_WPTR", "wptr", 0x3FFF_FFFF),
            ),
        };
        let finish_done_lo = gc
            .get("SQ_THREAD_TRACE_STATUS")
            .ok()
            .and_then(|r| r.def.field("finish_done"))
            .map(|f| u32::from(f.lo))
            .unwrap_or(12);
        let gfx9 = major == 9;
        let tt_ctrl_reset = gc
            .get("SQ_THREAD_TRACE_CTRL")
            .ok()
            .filter(|_| gfx9)
            .and_then(|r| Some((r.addr, r.field_mask("reset_buffer")?)));
        GcRegs {
            grbm_gfx_index: a("GRBM_GFX_INDEX"),
            pgm_lo: a("COMPUTE_PGM_LO"),
            rsrc1: a("COMPUTE_PGM_RSRC1"),
            rsrc2: a("COMPUTE_PGM_RSRC2"),
            rsrc3: a("COMPUTE_PGM_RSRC3"),
            tmpring: a("COMPUTE_TMPRING_SIZE"),
            scratch_lo: a("COMPUTE_DISPATCH_SCRATCH_BASE_LO"),
            user_data_0: a("COMPUTE_USER_DATA_0"),
            num_thread_x: a("COMPUTE_NUM_THREAD_X"),
            thread_trace_enable: a("COMPUTE_THREAD_TRACE_ENABLE"),
            tt_status: a("SQ_THREAD_TRACE_STATUS"),
            tt_wptr: a("SQ_THREAD_TRACE_WPTR"),
            tt_wptr_mask: wptr_mask,
            tt_base_lo: base_lo,
            tt_base_hi: base_hi,
            tt_size: size,
            tt_size_mask: size_mask,
            tt_base_hi_mask: base_hi_mask,
            tt_finish_done_lo: finish_done_lo,
            tt_ctrl_reset,
            tt_cntr: if gfx9 {
                gc.get("SQ_THREAD_TRACE_CNTR").ok().map(|r| r.addr)
            } else {
                None
            },
            tt_mode: gc
                .get("SQ_THREAD_TRACE_MODE")
                .ok()
                .filter(|_| gfx9)
                .and_then(|r| Some((r.addr, r.field_mask("mode")?))),
            wptr_absolute: major == 11,
            gfx_major: major,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueKindEmu {
    Pm4,
    Sdma,
}

#[derive(Debug, Clone, Copy)]
struct Ib {
    va: u64,
    size_dw: u64,
    pos: u64,
}

/// One emulated hardware queue.
#[derive(Debug)]
pub struct Queue {
    pub kind: QueueKindEmu,
    pub ring_va: u64,
    pub ring_bytes: u64,
    pub rptr_va: u64,
    pub wptr_va: u64,
    pub doorbell: u32,
    pub xcc_id: u32,
    /// Write pointer from the last doorbell (PM4: dwords, SDMA: bytes).
    pub wptr: u64,
    pub rptr: u64,
    ib: Option<Ib>,
    /// Dwords still to skip (PRED_EXEC for another XCC).
    skip: u64,
    /// Set after a fault: the queue executes nothing more (like a hung HQD).
    pub fault: Option<String>,
    scratch: Vec<u32>,
}

enum Step {
    Next,
    Blocked,
    Skip(u64),
    Ib(u64, u64),
    Fault(String, Option<MmuFault>),
}

fn mem_fault(va: u64) -> Option<MmuFault> {
    Some(MmuFault {
        va,
        not_present: true,
        ..Default::default()
    })
}

impl Queue {
    pub fn new(
        kind: QueueKindEmu,
        ring_va: u64,
        ring_bytes: u64,
        rptr_va: u64,
        wptr_va: u64,
        doorbell: u32,
        xcc_id: u32,
    ) -> Self {
        Queue {
            kind,
            ring_va,
            ring_bytes,
            rptr_va,
            wptr_va,
            doorbell,
            xcc_id,
            wptr: 0,
            rptr: 0,
            ib: None,
            skip: 0,
            fault: None,
            scratch: Vec::with_capacity(64),
        }
    }

    /// Executes until the queue is empty, blocked or faulted. Returns whether anything ran.
    pub(crate) fn run(&mut self, core: &mut GpuCore, mem: &mut Memory) -> bool {
        if self.fault.is_some() {
            return false;
        }
        match self.kind {
            QueueKindEmu::Pm4 => self.run_pm4(core, mem),
            QueueKindEmu::Sdma => super::sdma::run(self, core, mem),
        }
    }

    pub(crate) fn set_fault(&mut self, core: &mut GpuCore, msg: String, f: Option<MmuFault>) {
        if let Some(f) = f {
            core.fault = Some(f);
        }
        self.fault = Some(msg);
    }

    fn run_pm4(&mut self, core: &mut GpuCore, mem: &mut Memory) -> bool {
        // GRBM_GFX_INDEX and the SE-banked registers are per XCC.
        core.regs.set_xcc(self.xcc_id);
        let mut progress = false;
        let ring_dw = self.ring_bytes / 4;
        loop {
            // An indirect buffer runs to completion before the ring continues.
            if let Some(mut ib) = self.ib {
                if ib.pos >= ib.size_dw {
                    self.ib = None;
                    continue;
                }
                let va = ib.va + ib.pos * 4;
                let Ok(h) = mem.read32(va) else {
                    self.set_fault(core, format!("IB fetch fault at {va:#x}"), mem_fault(va));
                    return progress;
                };
                let hdr = match parse_header(h) {
                    Ok(x) => x,
                    Err(e) => {
                        self.set_fault(core, format!("IB at {:#x}+{}: {e}", ib.va, ib.pos), None);
                        return progress;
                    }
                };
                let n = 1 + hdr.payload as u64;
                if self.skip > 0 {
                    let s = self.skip.min(n);
                    self.skip -= s;
                    ib.pos += s;
                    self.ib = Some(ib);
                    progress = true;
                    continue;
                }
                if mem
                    .read_dwords(va + 4, hdr.payload, &mut self.scratch)
                    .is_err()
                {
                    self.set_fault(core, format!("IB fetch fault at {va:#x}"), mem_fault(va));
                    return progress;
                }
                let payload = std::mem::take(&mut self.scratch);
                let step = self.exec(core, mem, hdr, &payload);
                self.scratch = payload;
                match step {
                    Step::Next => ib.pos += n,
                    Step::Skip(d) => {
                        ib.pos += n;
                        self.skip = d;
                    }
                    Step::Blocked => {
                        self.ib = Some(ib);
                        return progress;
                    }
                    Step::Ib(..) => {
                        self.set_fault(
                            core,
                            "nested INDIRECT_BUFFER is not supported".into(),
                            None,
                        );
                        return progress;
                    }
                    Step::Fault(m, f) => {
                        self.set_fault(core, m, f);
                        return progress;
                    }
                }
                self.ib = Some(ib);
                progress = true;
                continue;
            }
            if self.rptr >= self.wptr {
                return progress;
            }
            let pos = self.rptr % ring_dw;
            let Ok(h) = mem.read32(self.ring_va + pos * 4) else {
                self.set_fault(
                    core,
                    "ring fetch fault".into(),
                    mem_fault(self.ring_va + pos * 4),
                );
                return progress;
            };
            if self.skip > 0 {
                // Skipping covers whole packets; count the header + payload.
                let n = parse_header(h).map(|x| 1 + x.payload as u64).unwrap_or(1);
                let s = self.skip.min(n);
                self.skip -= s;
                self.advance(mem, s);
                progress = true;
                continue;
            }
            let hdr = match parse_header(h) {
                Ok(x) => x,
                Err(e) => {
                    self.set_fault(core, format!("ring dword {}: {e}", self.rptr), None);
                    return progress;
                }
            };
            let n = 1 + hdr.payload as u64;
            if self.rptr + n > self.wptr {
                // The packet is not fully submitted yet.
                return progress;
            }
            self.scratch.clear();
            let first = (pos + 1) % ring_dw;
            let till_end = (ring_dw - first).min(hdr.payload as u64) as usize;
            let mut tmp = Vec::new();
            if mem
                .read_dwords(self.ring_va + first * 4, till_end, &mut self.scratch)
                .is_err()
                || mem
                    .read_dwords(self.ring_va, hdr.payload - till_end, &mut tmp)
                    .is_err()
            {
                self.set_fault(core, "ring fetch fault".into(), mem_fault(self.ring_va));
                return progress;
            }
            self.scratch.extend_from_slice(&tmp);
            let payload = std::mem::take(&mut self.scratch);
            let step = self.exec(core, mem, hdr, &payload);
            self.scratch = payload;
            match step {
                Step::Next => self.advance(mem, n),
                Step::Skip(d) => {
                    self.advance(mem, n);
                    self.skip = d;
                }
                Step::Ib(va, size) => {
                    self.advance(mem, n);
                    self.ib = Some(Ib {
                        va,
                        size_dw: size,
                        pos: 0,
                    });
                }
                Step::Blocked => return progress,
                Step::Fault(m, f) => {
                    self.set_fault(core, m, f);
                    return progress;
                }
            }
            progress = true;
        }
    }

    fn advance(&mut self, mem: &mut Memory, n: u64) {
        self.rptr += n;
        // The read pointer is reported back to the runtime's queue-pointer page.
        let _ = mem.write64(self.rptr_va, self.rptr);
    }

    fn exec(
        &mut self,
        core: &mut GpuCore,
        mem: &mut Memory,
        hdr: pm4::Header,
        payload: &[u32],
    ) -> Step {
        let pkt = match Packet::decode(hdr, payload) {
            Ok(p) => p,
            Err(e) => return Step::Fault(e.to_string(), None),
        };
        core.stats.pm4_packets += 1;
        core.tick(4);
        match pkt {
            Packet::Nop { .. } | Packet::AcquireMem(_) => Step::Next,
            Packet::SetReg {
                uconfig,
                offset,
                values,
            } => {
                let base = if uconfig {
                    UCONFIG_REG_BASE
                } else {
                    SH_REG_BASE
                };
                for (i, v) in values.iter().enumerate() {
                    let addr = base + offset + i as u32;
                    // gfx9 MODE.mode 1 -> 0 drains the SEs the write reaches.
                    let drained: Vec<u32> = match core.gc.tt_mode {
                        Some((mode, on)) if addr == mode && v & on == 0 => core
                            .regs
                            .selected_ses()
                            .filter(|&se| core.regs.read_se(mode, se) & on != 0)
                            .collect(),
                        _ => Vec::new(),
                    };
                    core.regs.write(addr, *v);
                    core.pmc.reg_write(addr, *v, core.regs.xcc(), core.clock);
                    for se in drained {
                        if let Err(f) = sqtt_finish_se(core, mem, se) {
                            return Step::Fault(
                                format!("SQTT drain wrote outside its buffer at {f:#x}"),
                                mem_fault(f),
                            );
                        }
                    }
                    core.stats.reg_writes += 1;
                    // gfx9 CTRL.reset_buffer rewinds the selected SEs' write pointer.
                    if let Some((ctrl, reset)) = core.gc.tt_ctrl_reset {
                        if addr == ctrl && v & reset != 0 {
                            core.regs.write(core.gc.tt_wptr, 0);
                        }
                    }
                    if addr == core.gc.thread_trace_enable {
                        let on = v & 1 == 1;
                        if on && !core.sqtt_active {
                            let n = core.regs.num_se();
                            core.shader.sqtt_start(n);
                        }
                        core.sqtt_active = on;
                    }
                    if core.sqtt_active {
                        core.shader.sqtt_reg_write(addr, *v, core.clock);
                    }
                }
                Step::Next
            }
            Packet::WaitRegMem(w) => {
                let value = if w.mem_space {
                    match mem.read32(w.addr) {
                        Ok(v) => v,
                        Err(_) => {
                            return Step::Fault(
                                format!("WAIT_REG_MEM on unmapped {:#x}", w.addr),
                                mem_fault(w.addr),
                            )
                        }
                    }
                } else if w.operation == 1 {
                    // Write-then-wait (the HDP flush): the emulated flush completes at once.
                    core.regs.write(w.reg_a(), w.reference);
                    return Step::Next;
                } else {
                    core.regs.read(w.reg_a())
                };
                if pm4::compare(w.function, value, w.mask, w.reference) {
                    Step::Next
                } else {
                    Step::Blocked
                }
            }
            Packet::ReleaseMem(r) => {
                let t = core.tick(1);
                let res = match r.data_sel {
                    pm4::data_sel::VALUE_32 => mem.write32(r.addr, r.data as u32),
                    pm4::data_sel::VALUE_64 => mem.write64(r.addr, r.data),
                    pm4::data_sel::GPU_CLOCK => mem.write64(r.addr, t),
                    _ => Ok(()),
                };
                if res.is_err() {
                    return Step::Fault(
                        format!("RELEASE_MEM to unmapped {:#x}", r.addr),
                        mem_fault(r.addr),
                    );
                }
                if r.int_sel != pm4::int_sel::NONE {
                    core.interrupts.push(r.int_ctxid);
                }
                Step::Next
            }
            Packet::EventWrite { event_type, .. } => {
                // gfx9 drains on MODE.mode = 0 instead (see `tt_mode`).
                if event_type == event::THREAD_TRACE_FINISH && core.gc.tt_mode.is_none() {
                    if let Err(f) = sqtt_finish(core, mem) {
                        return Step::Fault(
                            format!("SQTT finish wrote outside its buffer at {:#x}", f),
                            mem_fault(f),
                        );
                    }
                }
                Step::Next
            }
            Packet::CopyData(c) => {
                let v = match c.src_sel {
                    CopyData::SRC_REG_PERF if core.pmc.select_of(c.src as u32).is_some() => {
                        let a = c.src as u32;
                        let sel = core.pmc.select_of(a).map_or(0, |s| core.regs.read(s));
                        let idx = core.regs.read(core.pmc.grbm_gfx_index());
                        let xcc = core.regs.xcc();
                        core.pmc
                            .read(a, idx, xcc, sel, core.clock)
                            .unwrap_or_default()
                    }
                    CopyData::SRC_REG | CopyData::SRC_REG_PERF => core.regs.read(c.src as u32),
                    CopyData::SRC_MEM => match mem.read32(c.src) {
                        Ok(v) => v,
                        Err(_) => {
                            return Step::Fault(
                                format!("COPY_DATA from unmapped {:#x}", c.src),
                                mem_fault(c.src),
                            )
                        }
                    },
                    CopyData::SRC_IMM => c.src as u32,
                    s => return Step::Fault(format!("COPY_DATA src_sel {s} not emulated"), None),
                };
                match c.dst_sel {
                    CopyData::DST_REG => {
                        core.regs.write(c.dst as u32, v);
                        Step::Next
                    }
                    CopyData::DST_MEM | CopyData::DST_MEM_5 => match mem.write32(c.dst, v) {
                        Ok(()) => Step::Next,
                        Err(_) => Step::Fault(
                            format!("COPY_DATA to unmapped {:#x}", c.dst),
                            mem_fault(c.dst),
                        ),
                    },
                    s => Step::Fault(format!("COPY_DATA dst_sel {s} not emulated"), None),
                }
            }
            Packet::IndirectBuffer {
                addr,
                size_dw,
                valid,
            } => {
                if !valid {
                    return Step::Fault("INDIRECT_BUFFER without VALID".into(), None);
                }
                Step::Ib(addr, u64::from(size_dw))
            }
            Packet::PredExec { xcc_mask, dwords } => {
                if xcc_mask & (1 << self.xcc_id) != 0 {
                    Step::Next
                } else {
                    Step::Skip(u64::from(dwords))
                }
            }
            Packet::AtomicMem {
                atomic, addr, src, ..
            } => {
                if atomic != pm4::tc_op::ATOMIC_ADD_RTN_32 {
                    return Step::Fault(format!("ATOMIC_MEM op {atomic:#x} not emulated"), None);
                }
                match mem
                    .read32(addr)
                    .and_then(|v| mem.write32(addr, v.wrapping_add(src as u32)))
                {
                    Ok(()) => Step::Next,
                    Err(_) => {
                        Step::Fault(format!("ATOMIC_MEM on unmapped {addr:#x}"), mem_fault(addr))
                    }
                }
            }
            Packet::DispatchDirect { dim, initiator } => {
                let d = dispatch_info(core, dim, initiator, self.xcc_id);
                let r = {
                    let GpuCore { regs, shader, .. } = &mut *core;
                    shader.dispatch(regs, mem, &d)
                };
                match r {
                    Ok(res) => {
                        core.tick(res.ticks);
                        let counts = core.shader.take_counts();
                        core.pmc.dispatch(counts, self.xcc_id, res.ticks);
                        core.stats.dispatches += 1;
                        if core.stats.recent_dispatches.len() >= 64 {
                            core.stats.recent_dispatches.remove(0);
                        }
                        core.stats.recent_dispatches.push(d);
                        Step::Next
                    }
                    Err(f) => {
                        let mmu = if f.mmu { mem_fault(f.va) } else { None };
                        Step::Fault(f.to_string(), mmu)
                    }
                }
            }
        }
    }
}

fn dispatch_info(core: &GpuCore, dim: [u32; 3], initiator: u32, xcc_id: u32) -> DispatchInfo {
    let g = &core.gc;
    let r = |a: u32| core.regs.read(a);
    let rsrc2 = r(g.rsrc2);
    let n_user = DispatchInfo::user_sgpr_count(rsrc2);
    DispatchInfo {
        pgm_addr: ((u64::from(r(g.pgm_lo + 1)) << 32) | u64::from(r(g.pgm_lo))) << 8,
        rsrc1: r(g.rsrc1),
        rsrc2,
        rsrc3: r(g.rsrc3),
        user_data: (0..n_user).map(|i| r(g.user_data_0 + i)).collect(),
        grid: dim,
        local: [
            r(g.num_thread_x),
            r(g.num_thread_x + 1),
            r(g.num_thread_x + 2),
        ],
        scratch_base: ((u64::from(r(g.scratch_lo + 1)) << 32) | u64::from(r(g.scratch_lo))) << 8,
        tmpring_size: r(g.tmpring),
        lds_bytes: ((rsrc2 >> 15) & 0x1FF) * 512,
        wave32: initiator & pm4::initiator::CS_W32_EN != 0,
        initiator,
        xcc_id,
        num_xcc: core.num_xcc,
        sqtt: core.sqtt_active,
        clock: core.clock,
    }
}

/// THREAD_TRACE_FINISH on the executing XCC (gfx11/gfx12; the register file's current XCC,
/// set by `run_pm4`): every SE of that XCC is drained with [`sqtt_finish_se`]. Every XCC
/// executes the event itself, so each one finishes only its own SEs. Returns the faulting
/// address if a buffer is unmapped.
fn sqtt_finish(core: &mut GpuCore, mem: &mut Memory) -> Result<(), u64> {
    let per = core.regs.se_per_xcc();
    let first = core.regs.xcc() * per;
    for se in first..(first + per).min(core.regs.num_se()) {
        sqtt_finish_se(core, mem, se)?;
    }
    core.sqtt_active = false;
    Ok(())
}

/// Drains global SE `se`: its trace bytes go into its buffer; STATUS and WPTR are set the way
/// the runtime's stop sequence polls and reads them (gfx11 WPTR is absolute, gfx12/gfx9
/// relative, in 32-byte units; STATUS gets `finish_done` with `busy`/`finish_pending` clear).
/// On gfx9 CNTR counts every 32-byte unit produced, so a trace that did not fit shows
/// CNTR > WPTR as on hardware. Returns the faulting address if the buffer is unmapped.
fn sqtt_finish_se(core: &mut GpuCore, mem: &mut Memory, se: u32) -> Result<(), u64> {
    let g = &core.gc;
    let lo = core.regs.read_se(g.tt_base_lo, se);
    let size_reg = core.regs.read_se(g.tt_size, se);
    // gfx11's BUF0_SIZE carries base_hi next to the size.
    let hi = match g.tt_base_hi {
        Some(a) => core.regs.read_se(a, se),
        None => size_reg,
    };
    let size_units = (size_reg & g.tt_size_mask) >> g.tt_size_mask.trailing_zeros();
    let base = ((u64::from(hi & g.tt_base_hi_mask) << 32) | u64::from(lo)) << 12;
    let size = u64::from(size_units) << 12;
    let (wptr_reg, wptr_mask, status, done_lo, cntr, absolute) = (
        g.tt_wptr,
        g.tt_wptr_mask,
        g.tt_status,
        g.tt_finish_done_lo,
        g.tt_cntr,
        g.wptr_absolute,
    );
    let data = core.shader.sqtt_finish(se);
    let n = (data.len() as u64).min(size) as usize;
    if n > 0 {
        mem.write(base, data.get(..n).unwrap_or(&[]))
            .map_err(|_| base)?;
    }
    let units = (n as u64).div_ceil(32);
    let wptr = if absolute {
        ((base / 32) & u64::from(wptr_mask)) + units
    } else {
        units
    };
    core.regs.write_se(wptr_reg, se, (wptr as u32) & wptr_mask);
    if let Some(cntr) = cntr {
        let produced = (data.len() as u64).div_ceil(32);
        core.regs.write_se(cntr, se, produced as u32);
    }
    core.regs.write_se(status, se, 1 << done_lo);
    Ok(())
}
