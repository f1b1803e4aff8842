//! The register model of the emulated MI350 (gfx950, GC 9.5.0, 8 XCCs): what tinygrad's AM
//! driver reads and waits for on this family (`tinygrad/runtime/support/am/ip.py`), per XCC
//! and per MMHUB instance. Addresses come from the generated tables of the register JSON
//! (`runtime::regs`: gc_9_4_3, mmhub_1_8_0, sdma_4_4_2, osssys_4_4_2, nbio_7_9_0) at the
//! segment bases the device reports in discovery ([`super::discovery::mi350_ips`]).
//!
//! Modelled: the PSP bootloader and ring (shared with the GC 11/12 model), the SMU 13.0.12
//! mailbox, GCVM invalidation acks per XCC, MMVM invalidation semaphore and acks per hub,
//! RLC safe mode per XCC, MEC halt/unhalt per XCC, one compute HQD per XCC (a PM4 queue of
//! that XCC), SDMA instance 0 queue 0 (SDMA_GFX), and the IH ring for GC VM faults.
//! Not modelled (said so where reached): AQL HQDs (`cp_hqd_aql_control`), more than one HQD
//! per XCC, SDMA instances 1.., XGMI hives, RAS/ACA, power and clock limits.

use std::collections::HashMap;

use runtime::pci::{PciError, PciResult};
use runtime::regs::{IpTable, RegDef, GC_9_4_3, MMHUB_1_8_0, NBIO_7_9_0, OSSSYS_4_4_2, SDMA_4_4_2};

use super::discovery::IpRecord;
use runtime::pci::am::{regs, AmGen, AmIp};

/// PSP firmware type of the gfx9 MEC image (psp_gfx_if.h GFX_FW_TYPE_CP_MEC).
pub const FW_CP_MEC: u32 = 4;

/// SMU 13.0.12 messages (tinygrad's `autogen/am/smu_13_0_12.py`, from smu_v13_0_12_ppsmc.h).
pub mod smu_msg {
    pub const GET_SMU_VERSION: u32 = 0x2;
    pub const GFX_DRIVER_RESET: u32 = 0x3;
    pub const ENABLE_ALL_SMU_FEATURES: u32 = 0x5;
    pub const GET_METRICS_TABLE: u32 = 0x9;
    pub const SET_DRIVER_DRAM_ADDR_HIGH: u32 = 0xD;
    pub const SET_DRIVER_DRAM_ADDR_LOW: u32 = 0xE;
    pub const SET_SOFT_MIN_BY_FREQ: u32 = 0x13;
    pub const SET_SOFT_MAX_BY_FREQ: u32 = 0x14;
    pub const GET_DPM_FREQ_BY_INDEX: u32 = 0x17;
}

/// A register's absolute address and definition.
#[derive(Debug, Clone, Copy)]
pub struct At {
    pub addr: u32,
    pub def: &'static RegDef,
}

impl At {
    /// Field `name` of `v` (0 when the register lacks it).
    pub fn get(&self, name: &str, v: u32) -> u32 {
        self.def.field(name).map_or(0, |f| f.get(v))
    }
    /// `value` placed in field `name` (0 when the register lacks it).
    pub fn put(&self, name: &str, value: u32) -> u32 {
        self.def.field(name).map_or(0, |f| {
            (value & f.value_mask()).wrapping_shl(u32::from(f.lo))
        })
    }
}

fn at(t: &'static IpTable, bases: &[u32], name: &str) -> PciResult<At> {
    let def = t.get(name).ok_or_else(|| PciError::NoDevice {
        detail: format!(
            "the emulated MI350 needs {name}, which the generated {} table lacks",
            t.ip
        ),
    })?;
    let base = bases
        .get(usize::from(def.base_index))
        .ok_or_else(|| PciError::NoDevice {
            detail: format!(
                "the emulated MI350 reports no segment {} for {} ({name})",
                def.base_index, t.ip
            ),
        })?;
    Ok(At {
        addr: base + def.offset,
        def,
    })
}

/// One XCC's registers.
#[derive(Debug, Clone)]
pub struct Xcc {
    pub inv_req: At,
    pub inv_ack: At,
    pub ctx_cntl: At,
    pub pt_base: [At; 2],
    pub pt_start: [At; 2],
    pub pt_end: [At; 2],
    pub fault: [At; 3],
    pub hqd_active: At,
    pub hqd_dequeue: At,
    pub grbm_gfx_cntl: At,
    pub pq_base: [At; 2],
    pub pq_control: At,
    pub rptr_report: [At; 2],
    pub wptr_poll: [At; 2],
    pub pq_doorbell: At,
    pub aql_control: At,
    pub rlc_safe_mode: At,
    pub mec_cntl: At,
    pub cp_stat: At,
    pub fb: [At; 2],
}

/// One MMHUB instance's registers.
#[derive(Debug, Clone)]
pub struct Hub {
    pub inv_req: At,
    pub inv_ack: At,
    pub inv_sem: At,
    pub fb: [At; 2],
}

#[derive(Debug, Clone)]
pub struct Sdma {
    pub rb_cntl: At,
    pub rb_base: [At; 2],
    pub rptr_addr: [At; 2],
    pub wptr_poll: [At; 2],
    pub doorbell_off: At,
}

#[derive(Debug, Clone)]
pub struct Ih {
    pub cntl: At,
    pub base: [At; 2],
    pub wptr_addr: [At; 2],
}

/// The resolved register map and the per-XCC state of the model.
#[derive(Debug)]
pub struct Gc9 {
    pub xcc: Vec<Xcc>,
    pub hubs: Vec<Hub>,
    pub sdma: Sdma,
    pub ih: Ih,
    pub rsmu: [At; 2],
    pub hdp_remap: At,
    /// MEC of each XCC released from halt (CP_MEC_CNTL with the ME1 halt bit clear).
    pub mec_running: Vec<bool>,
    /// What the device refused or does not model, in order (the driver sees only silence).
    pub refused: Vec<String>,
    /// Absolute address → (register name, XCC or hub instance).
    pub names: HashMap<u32, (&'static str, u32)>,
    /// SCRATCH_REG6/7 of every XCC (the driver's session marks, cleared by a reset).
    pub marks: Vec<u32>,
}

impl Gc9 {
    pub fn new(ips: &[IpRecord]) -> PciResult<Self> {
        let inst = |ip: AmIp| -> Vec<&Vec<u32>> {
            ips.iter().filter(|r| r.0 == ip).map(|r| &r.2).collect()
        };
        let one = |ip: AmIp| -> PciResult<Vec<u32>> {
            inst(ip)
                .first()
                .map(|b| (*b).clone())
                .ok_or_else(|| PciError::NoDevice {
                    detail: format!("the emulated MI350 has no {ip:?} record"),
                })
        };
        let mut names = HashMap::new();
        let mut marks = Vec::new();
        let mut xcc = Vec::new();
        for (i, b) in inst(AmIp::Gc).into_iter().enumerate() {
            // Named only: the driver's session marks, counted by the partial-boot tests (the
            // generated gc_9_4_3 table the model reads has them only in the driver's list).
            for r in [regs::SCRATCH_REG6, regs::SCRATCH_REG7] {
                if let Some(d) = r.on(AmGen::Gc9) {
                    if let Some(base) = b.get(usize::from(d.base_index)) {
                        names.insert(base + d.offset, (r.name, i as u32));
                        marks.push(base + d.offset);
                    }
                }
            }
            let mut g = |n: &str| -> PciResult<At> {
                let a = at(&GC_9_4_3, b, n)?;
                names.insert(a.addr, (a.def.name, i as u32));
                Ok(a)
            };
            xcc.push(Xcc {
                inv_req: g("GCVM_INVALIDATE_ENG17_REQ")?,
                inv_ack: g("GCVM_INVALIDATE_ENG17_ACK")?,
                ctx_cntl: g("GCVM_CONTEXT0_CNTL")?,
                pt_base: [
                    g("GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32")?,
                    g("GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32")?,
                ],
                pt_start: [
                    g("GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32")?,
                    g("GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32")?,
                ],
                pt_end: [
                    g("GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32")?,
                    g("GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32")?,
                ],
                fault: [
                    g("GCVM_L2_PROTECTION_FAULT_STATUS")?,
                    g("GCVM_L2_PROTECTION_FAULT_ADDR_LO32")?,
                    g("GCVM_L2_PROTECTION_FAULT_ADDR_HI32")?,
                ],
                hqd_active: g("CP_HQD_ACTIVE")?,
                hqd_dequeue: g("CP_HQD_DEQUEUE_REQUEST")?,
                grbm_gfx_cntl: g("GRBM_GFX_CNTL")?,
                pq_base: [g("CP_HQD_PQ_BASE")?, g("CP_HQD_PQ_BASE_HI")?],
                pq_control: g("CP_HQD_PQ_CONTROL")?,
                rptr_report: [
                    g("CP_HQD_PQ_RPTR_REPORT_ADDR")?,
                    g("CP_HQD_PQ_RPTR_REPORT_ADDR_HI")?,
                ],
                wptr_poll: [
                    g("CP_HQD_PQ_WPTR_POLL_ADDR")?,
                    g("CP_HQD_PQ_WPTR_POLL_ADDR_HI")?,
                ],
                pq_doorbell: g("CP_HQD_PQ_DOORBELL_CONTROL")?,
                aql_control: g("CP_HQD_AQL_CONTROL")?,
                rlc_safe_mode: g("RLC_SAFE_MODE")?,
                mec_cntl: g("CP_MEC_CNTL")?,
                cp_stat: g("CP_STAT")?,
                fb: [
                    g("GCMC_VM_FB_LOCATION_BASE")?,
                    g("GCMC_VM_FB_LOCATION_TOP")?,
                ],
            });
        }
        let mut hubs = Vec::new();
        for (i, b) in inst(AmIp::Mmhub).into_iter().enumerate() {
            let mut g = |n: &str| -> PciResult<At> {
                let a = at(&MMHUB_1_8_0, b, n)?;
                names.insert(a.addr, (a.def.name, i as u32));
                Ok(a)
            };
            hubs.push(Hub {
                inv_req: g("MMVM_INVALIDATE_ENG17_REQ")?,
                inv_ack: g("MMVM_INVALIDATE_ENG17_ACK")?,
                inv_sem: g("MMVM_INVALIDATE_ENG17_SEM")?,
                fb: [
                    g("MMMC_VM_FB_LOCATION_BASE")?,
                    g("MMMC_VM_FB_LOCATION_TOP")?,
                ],
            });
        }
        if xcc.is_empty() || hubs.is_empty() {
            return Err(PciError::NoDevice {
                detail: "the emulated MI350 needs at least one GC and one MMHUB record".into(),
            });
        }
        let sb = one(AmIp::Sdma0)?;
        let s = |n: &str| at(&SDMA_4_4_2, &sb, n);
        let sdma = Sdma {
            rb_cntl: s("SDMA_GFX_RB_CNTL")?,
            rb_base: [s("SDMA_GFX_RB_BASE")?, s("SDMA_GFX_RB_BASE_HI")?],
            rptr_addr: [
                s("SDMA_GFX_RB_RPTR_ADDR_LO")?,
                s("SDMA_GFX_RB_RPTR_ADDR_HI")?,
            ],
            wptr_poll: [
                s("SDMA_GFX_RB_WPTR_POLL_ADDR_LO")?,
                s("SDMA_GFX_RB_WPTR_POLL_ADDR_HI")?,
            ],
            doorbell_off: s("SDMA_GFX_DOORBELL_OFFSET")?,
        };
        let ob = one(AmIp::Osssys)?;
        let o = |n: &str| at(&OSSSYS_4_4_2, &ob, n);
        let ih = Ih {
            cntl: o("IH_RB_CNTL")?,
            base: [o("IH_RB_BASE")?, o("IH_RB_BASE_HI")?],
            wptr_addr: [o("IH_RB_WPTR_ADDR_LO")?, o("IH_RB_WPTR_ADDR_HI")?],
        };
        let nb = one(AmIp::Nbio)?;
        let n = |r: &str| at(&NBIO_7_9_0, &nb, r);
        let rsmu = [n("BIF_BX_PF0_RSMU_INDEX")?, n("BIF_BX_PF0_RSMU_DATA")?];
        let hdp_remap = n("BIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL")?;
        for a in [
            sdma.rb_cntl,
            sdma.rb_base[0],
            sdma.doorbell_off,
            ih.cntl,
            rsmu[0],
            rsmu[1],
            hdp_remap,
        ] {
            names.insert(a.addr, (a.def.name, 0));
        }
        let n_xcc = xcc.len();
        Ok(Gc9 {
            xcc,
            hubs,
            sdma,
            ih,
            rsmu,
            hdp_remap,
            mec_running: vec![false; n_xcc],
            refused: Vec::new(),
            names,
            marks,
        })
    }

    /// The XCC whose register `addr` is `pick`ed (e.g. its CP_HQD_ACTIVE).
    pub fn xcc_of(&self, addr: u32, pick: impl Fn(&Xcc) -> u32) -> Option<usize> {
        self.xcc.iter().position(|x| pick(x) == addr)
    }
}

use super::super::cp::{Queue, QueueKindEmu};
use super::super::mem::Gpuvm;
use super::super::EmuState;
use super::{u64_of, EmuPciGpu, Hqd, Model};
use runtime::pci::am::firmware::BL_SOS;

fn pair(st: &EmuState, r: [At; 2]) -> u64 {
    u64_of(st, [r[0].addr, r[1].addr])
}

impl EmuPciGpu {
    /// Reads the MI350 model answers itself (`None`: the stored value or the shared model).
    pub(super) fn gc9_read(m: &Model, addr: u32) -> Option<u32> {
        let g = m.gc9.as_ref()?;
        // The invalidation semaphore of every hub is free at once (one requester).
        g.hubs.iter().any(|h| h.inv_sem.addr == addr).then_some(1)
    }

    /// A register write on the MI350 model; `true` when handled (the shared PSP/HDP model
    /// sees the rest).
    pub(super) fn gc9_write(m: &mut Model, st: &mut EmuState, addr: u32, v: u32) -> bool {
        let Some(g) = m.gc9.as_mut() else {
            return false;
        };
        if addr == m.a.psp35 && v == BL_SOS && m.cfg.psp_responds {
            // MP1 13.0.12: the PSP starts the SMU with the sOS (tinygrad loads no SMU image).
            m.smu_loaded = true;
            return false;
        }
        if addr == m.a.smu66 {
            if m.smu_loaded {
                let arg = st.core.regs.read(m.a.smu82);
                m.log.smu_msgs.push((v, arg));
                let out = match v {
                    smu_msg::GET_SMU_VERSION => Some(0x0055_0C00),
                    smu_msg::GET_DPM_FREQ_BY_INDEX => {
                        let (clk, lvl) = (arg >> 16, arg & 0xFFFF);
                        Some(if lvl == 0xFF {
                            3
                        } else {
                            500 + 100 * clk + 1000 * lvl.min(2)
                        })
                    }
                    _ => None,
                };
                if let Some(o) = out {
                    st.core.regs.write(m.a.smu82, o);
                }
                st.core.regs.write(m.a.smu90, 1);
                if v == smu_msg::GFX_DRIVER_RESET {
                    // The reset returns PSP and SMU to power-on and drops every queue.
                    m.sos_alive = false;
                    m.smu_loaded = false;
                    m.psp_ring = None;
                    st.core.regs.write(m.a.psp81, 0);
                    st.core.regs.write(m.a.psp64, 0);
                    st.core.regs.write(m.a.psp71, 0);
                    st.queues.clear();
                    st.mem.vm = None;
                    g.mec_running.iter_mut().for_each(|r| *r = false);
                    // The whole ASIC is reset (as the GC 11/12 model's mode-1 reset): every
                    // XCC's latched GC fault, HQD and session marks, and the IH ring are back
                    // at their power-on values.
                    let per_xcc = g
                        .xcc
                        .iter()
                        .flat_map(|x| x.fault.iter().map(|f| f.addr).chain([x.hqd_active.addr]));
                    let cleared: Vec<u32> = per_xcc
                        .chain(g.marks.iter().copied())
                        .chain([g.ih.cntl.addr])
                        .collect();
                    for r in cleared {
                        st.core.regs.write(r, 0);
                    }
                }
            }
            return true;
        }
        if let Some(i) = g.hubs.iter().position(|h| h.inv_req.addr == addr) {
            m.log.tlb_invalidations += 1;
            if let Some(vm) = &st.mem.vm {
                vm.invalidate();
            }
            let h = &g.hubs[i];
            let ack = h.inv_ack.put(
                "per_vmid_invalidate_ack",
                h.inv_req.get("per_vmid_invalidate_req", v),
            );
            st.core.regs.write(h.inv_ack.addr, ack);
            return true;
        }
        for x in 0..g.xcc.len() {
            let r = g.xcc[x].clone();
            if addr == r.inv_req.addr {
                m.log.tlb_invalidations += 1;
                if let Some(vm) = &st.mem.vm {
                    vm.invalidate();
                }
                let ack = r.inv_ack.put(
                    "per_vmid_invalidate_ack",
                    r.inv_req.get("per_vmid_invalidate_req", v),
                );
                st.core.regs.write(r.inv_ack.addr, ack);
                return true;
            }
            if addr == r.rlc_safe_mode.addr {
                // The RLC takes the safe-mode message at once and acknowledges by clearing cmd.
                st.core.regs.write(addr, v & !r.rlc_safe_mode.put("cmd", 1));
                return true;
            }
            if addr == r.mec_cntl.addr {
                let loaded = m.log.loaded.iter().any(|l| l.0 == FW_CP_MEC);
                let halted = r.mec_cntl.get("mec_me1_halt", v) != 0;
                g.mec_running[x] = loaded && !halted;
                if !loaded && !halted {
                    g.refused.push(format!(
                        "XCC {x}: CP_MEC_CNTL released the MEC before the PSP loaded its \
                         image (GFX_FW_TYPE_CP_MEC); the MEC stays halted"
                    ));
                }
                return true;
            }
            if addr == r.ctx_cntl.addr {
                // Every XCC's hub gets the same context 0 tables from the driver; the engines
                // share one walker, set by the last XCC that enabled (or disabled) it.
                st.mem.vm = if r.ctx_cntl.get("enable_context", v) != 0 {
                    let root = pair(st, r.pt_base) & runtime::pci::am::gmc::pte::ADDR_MASK;
                    let start = pair(st, r.pt_start) << 12;
                    let end = (pair(st, r.pt_end) << 12) | 0xFFF;
                    Some(Box::new(Gpuvm::new(root, start, end).gfx9()))
                } else {
                    None
                };
                return true;
            }
            if addr == r.hqd_active.addr {
                let sel = st.core.regs.read(r.grbm_gfx_cntl.addr);
                if v & 1 == 0 || r.grbm_gfx_cntl.get("meid", sel) != 1 {
                    return true;
                }
                if !g.mec_running[x] {
                    g.refused.push(format!(
                        "XCC {x}: CP_HQD_ACTIVE set while the MEC is halted; the queue \
                         does not run"
                    ));
                    st.core.regs.write(addr, 0);
                    return true;
                }
                if st.core.regs.read(r.aql_control.addr) & 1 != 0 {
                    g.refused.push(format!(
                        "XCC {x}: AQL HQD (CP_HQD_AQL_CONTROL) is not modelled; only PM4 \
                         compute queues run"
                    ));
                    st.core.regs.write(addr, 0);
                    return true;
                }
                let hqd = Hqd {
                    pq_base: pair(st, r.pq_base),
                    queue_size: r
                        .pq_control
                        .get("queue_size", st.core.regs.read(r.pq_control.addr)),
                    rptr_report: pair(st, r.rptr_report),
                    wptr_poll: pair(st, r.wptr_poll),
                    doorbell_offset: r
                        .pq_doorbell
                        .get("doorbell_offset", st.core.regs.read(r.pq_doorbell.addr)),
                };
                let Some(queue) = hqd.pm4_queue(x as u32) else {
                    g.refused.push(format!(
                        "XCC {x}: CP_HQD_PQ_CONTROL.queue_size {} is no ring size",
                        hqd.queue_size
                    ));
                    return true;
                };
                // One HQD per XCC is modelled: a new one replaces that XCC's last.
                st.queues
                    .retain(|q| !(q.kind == QueueKindEmu::Pm4 && q.xcc_id == x as u32));
                st.queues.push(queue);
                return true;
            }
            if addr == r.hqd_dequeue.addr {
                if v != 0 {
                    st.queues
                        .retain(|q| !(q.kind == QueueKindEmu::Pm4 && q.xcc_id == x as u32));
                    st.core.regs.write(r.hqd_active.addr, 0);
                }
                return true;
            }
        }
        let s = g.sdma.clone();
        if addr == s.rb_cntl.addr {
            st.queues.retain(|q| q.kind != QueueKindEmu::Sdma);
            if s.rb_cntl.get("rb_enable", v) != 0 {
                let ring = pair(st, s.rb_base) << 8;
                let bytes = 4u64 << s.rb_cntl.get("rb_size", v);
                let rptr = pair(st, s.rptr_addr);
                let wptr = pair(st, s.wptr_poll);
                let db = s
                    .doorbell_off
                    .get("offset", st.core.regs.read(s.doorbell_off.addr));
                st.queues.push(Queue::new(
                    QueueKindEmu::Sdma,
                    ring,
                    bytes,
                    rptr,
                    wptr,
                    db / 2,
                    0,
                ));
            }
            return true;
        }
        false
    }

    /// A queue fault on the MI350: latched in XCC 0's GC hub, an IH entry and an MSI.
    pub(super) fn gc9_fault(m: &mut Model, st: &mut EmuState, va: u64) {
        let Some(g) = m.gc9.as_ref() else {
            return;
        };
        let x = &g.xcc[0];
        // mapping_error; client id 0x1B (UTCL2), vmid 0.
        let f = x.fault[0];
        st.core
            .regs
            .write(f.addr, f.put("mapping_error", 1) | f.put("cid", 0x1B));
        st.core.regs.write(x.fault[1].addr, (va >> 12) as u32);
        st.core
            .regs
            .write(x.fault[2].addr, ((va >> 44) & 0xF) as u32);
        let ih = g.ih.clone();
        let cntl = st.core.regs.read(ih.cntl.addr);
        if ih.cntl.get("rb_enable", cntl) == 0 {
            return;
        }
        // rb_size is log2 of the ring's dwords (amdgpu order_base_2(ring_size / 4)).
        let bytes = 4u64 << ih.cntl.get("rb_size", cntl);
        let (Some(base), Some(wkey)) = (
            Self::mc_key(m, pair(st, ih.base) << 8),
            Self::mc_key(m, pair(st, ih.wptr_addr)),
        ) else {
            return;
        };
        let mut e = [0u32; 8];
        e[0] = runtime::pci::am::ih::CLIENT_UTCL2;
        e[1] = st.core.clock as u32;
        e[4] = (va >> 12) as u32;
        e[5] = ((va >> 44) & 0xF) as u32;
        let bytes_e: Vec<u8> = e.iter().flat_map(|w| w.to_le_bytes()).collect();
        let _ = st.mem.write_phys(base + m.ih_wptr, &bytes_e);
        let ent = runtime::pci::am::ih::ENTRY_SIZE;
        m.ih_wptr = (m.ih_wptr + ent) % bytes.max(ent);
        let _ = st.mem.write_phys(wkey, &(m.ih_wptr as u32).to_le_bytes());
        m.irq += 1;
    }
}
