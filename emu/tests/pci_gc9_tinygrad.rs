//! The emulated MI350 (gfx950, GC 9.5.0, 8 XCCs) driven the way tinygrad's AM driver brings up
//! this family, independent of our driver (whose own boot of this device is the last test
//! here, up to the device handed out with its queues still to make). Each step
//! below names its source in tinygrad (`tinygrad/runtime/support/am/amdev.py` and `ip.py`):
//! discovery, PSP bootloader and ring, SMU 13.0.12 mailbox, MM/GC hub set-up and TLB
//! invalidation per hub and per XCC, RLC safe mode and MEC release per XCC, one compute HQD
//! per XCC, SDMA 4.4 (SDMA_GFX) queue 0. Register addresses are the discovered segment bases
//! plus the generated tables of the register JSON (`runtime::regs`), as tinygrad resolves
//! `reg.addr[inst]`; the test never asks the device model where a register is.
//!
//! Then a dispatch of the captured gfx950 add kernel (`shared/traces/gfx950/plus_run_0`)
//! through the XCC queues, with SQTT on: the sum is checked against the CPU and every XCC's
//! every SE must have written trace data; and an SDMA copy.

use std::collections::BTreeMap;
use std::sync::Arc;

use emu::pci::{gc9, EmuPciConfig, EmuPciGpu};
use emu::EmuArch;
use runtime::kernel::Code;
use runtime::pci::am::discovery::{hw_id, Discovery, TABLE_FROM_END};
use runtime::pci::am::firmware::{BL_KDB, BL_SOS, BL_SYS_DRV};
use runtime::pci::am::gmc::pte;
use runtime::pci::am::psp;
use runtime::pci::am::AmIp;
use runtime::platform::{IpBases, IpVersions};
use runtime::queue::{ComputeCmds, CopyCmds, GfxContext, Launch};
use runtime::regs::{IpTable, GC_9_4_3, MMHUB_1_8_0, NBIO_7_9_0, OSSSYS_4_4_2, SDMA_4_4_2};

/// tinygrad's fixed mmRCC_CONFIG_MEMSIZE (amdev.py `_run_discovery`).
const RCC_CONFIG_MEMSIZE: u32 = 0xde3;
/// The MP 13 mailbox placement (segment-0 offset), from the generated AM tables of
/// mp_13_0_0.json (their GC 11 column is MP 13).
fn mp_off(name: &str) -> u32 {
    let r = runtime::pci::am::regs::ALL
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("{name}"));
    let d = r.at[0].as_ref().unwrap();
    assert_eq!(d.base_index, 0);
    d.offset
}

// VRAM layout of the test (offsets; MC = FB base + offset).
const PDB2: u64 = 0x10_0000;
const PDB1: u64 = 0x10_1000;
const PDB0: u64 = 0x10_2000;
const MSG1: u64 = 0x20_0000;
const PSP_CMD: u64 = 0x30_0000;
const PSP_FENCE: u64 = 0x30_1000;
const PSP_RING: u64 = 0x31_0000;
const TMR: u64 = 0x40_0000;
/// VA window (tinygrad's AM VA base region) mapped linearly onto VRAM from MAP_PHYS.
const VA_BASE: u64 = 0x2000_0000_0000;
const VA_LEN: u64 = 64 << 20;
const MAP_PHYS: u64 = 256 << 20;

struct Am {
    gpu: EmuPciGpu,
    disc: Discovery,
    fb_base: u64,
    psp_wptr: u32,
    psp_n: u32,
}

impl Am {
    fn rreg(&self, r: u32) -> u32 {
        let mut b = [0u8; 4];
        self.gpu.bar_read(5, u64::from(r) * 4, &mut b).unwrap();
        u32::from_le_bytes(b)
    }
    fn wreg(&self, r: u32, v: u32) {
        self.gpu
            .bar_write(5, u64::from(r) * 4, &v.to_le_bytes())
            .unwrap();
    }
    fn vram_write(&self, at: u64, b: &[u8]) {
        self.gpu.bar_write(0, at, b).unwrap();
    }
    fn vram_read(&self, at: u64, n: usize) -> Vec<u8> {
        let mut b = vec![0u8; n];
        self.gpu.bar_read(0, at, &mut b).unwrap();
        b
    }
    fn va(&self, va: u64) -> u64 {
        assert!((VA_BASE..VA_BASE + VA_LEN).contains(&va), "{va:#x}");
        MAP_PHYS + (va - VA_BASE)
    }
    fn mc(&self, off: u64) -> u64 {
        self.fb_base + off
    }
    fn bases(&self, ip: AmIp, inst: u8) -> &[u32] {
        &self
            .disc
            .ips
            .get(&(hw_id(ip), inst))
            .unwrap_or_else(|| panic!("{ip:?} instance {inst} not discovered"))
            .bases
    }
    fn instances(&self, ip: AmIp) -> u8 {
        self.disc.ips.keys().filter(|k| k.0 == hw_id(ip)).count() as u8
    }
    /// `reg.addr[inst]`: discovered base of the register's segment + its offset.
    fn reg(&self, t: &IpTable, ip: AmIp, inst: u8, name: &str) -> u32 {
        let d = t
            .get(name)
            .unwrap_or_else(|| panic!("{name} not in {}", t.ip));
        self.bases(ip, inst)[usize::from(d.base_index)] + d.offset
    }
    fn field(t: &IpTable, name: &str, fields: &[(&str, u32)]) -> u32 {
        let d = t.get(name).unwrap();
        fields.iter().fold(0, |acc, (f, v)| {
            let fd = d.field(f).unwrap_or_else(|| panic!("{name}.{f}"));
            acc | (v & fd.value_mask()) << fd.lo
        })
    }
    fn gc(&self, xcc: u8, name: &str) -> u32 {
        self.reg(&GC_9_4_3, AmIp::Gc, xcc, name)
    }
    fn mp0(&self, n: u32) -> u32 {
        self.bases(AmIp::Mp0, 0)[0] + mp_off(&format!("MP0_SMN_C2PMSG_{n}"))
    }
    fn mp1(&self, n: u32) -> u32 {
        self.bases(AmIp::Mp1, 0)[0] + mp_off(&format!("MP1_SMN_C2PMSG_{n}"))
    }

    /// ip.py AM_PSP._ring_submit: command buffer, frame at the write pointer, wait for fence.
    fn psp_submit(&mut self, cmd_id: u32, args: &[u32]) -> Vec<u8> {
        let mut c = vec![0u8; psp::CMD_SIZE as usize];
        // psp_gfx_cmd_resp (psp_gfx_if.h): cmd_id at 8, the command union from 28.
        c[8..12].copy_from_slice(&cmd_id.to_le_bytes());
        for (i, a) in args.iter().enumerate() {
            c[28 + 4 * i..32 + 4 * i].copy_from_slice(&a.to_le_bytes());
        }
        self.vram_write(PSP_CMD, &c);
        self.psp_n += 1;
        // psp_gfx_rb_frame: cmd_buf_addr lo/hi 0/4, fence_addr lo/hi 12/16, fence_value 20.
        let mut f = [0u8; 64];
        f[0..8].copy_from_slice(&self.mc(PSP_CMD).to_le_bytes());
        f[12..20].copy_from_slice(&self.mc(PSP_FENCE).to_le_bytes());
        f[20..24].copy_from_slice(&self.psp_n.to_le_bytes());
        self.vram_write(PSP_RING + u64::from(self.psp_wptr) * 4, &f);
        self.psp_wptr += 16;
        self.wreg(self.mp0(67), self.psp_wptr);
        let fence = self.vram_read(PSP_FENCE, 4);
        assert_eq!(
            u32::from_le_bytes(fence.try_into().unwrap()),
            self.psp_n,
            "PSP fence of command {cmd_id}"
        );
        let resp = self.vram_read(PSP_CMD, psp::CMD_SIZE as usize);
        let st = u32::from_le_bytes(resp[864..868].try_into().unwrap());
        assert_eq!(st, 0, "PSP command {cmd_id} status");
        resp
    }

    /// ip.py AM_SMU._send_msg: resp 0, argument, message, wait resp == 1.
    fn smu(&self, msg: u32, arg: u32) -> u32 {
        self.wreg(self.mp1(90), 0);
        self.wreg(self.mp1(82), arg);
        self.wreg(self.mp1(66), msg);
        assert_eq!(self.rreg(self.mp1(90)), 1, "SMU message {msg:#x}");
        self.rreg(self.mp1(82))
    }
}

fn mi350() -> Am {
    let gpu = EmuPciGpu::new(EmuPciConfig::new(EmuArch::Gfx950)).unwrap();
    // PCI_COMMAND bus master (amdev.py __init__: write_config_flush PCI_COMMAND_MASTER).
    gpu.config_write(0x04, 2, 0x6);
    // amdev.py _run_discovery: memsize, then the table at VRAM end - 64 KiB.
    let mut b = [0u8; 4];
    gpu.bar_read(5, u64::from(RCC_CONFIG_MEMSIZE) * 4, &mut b)
        .unwrap();
    let vram = u64::from(u32::from_le_bytes(b)) << 20;
    assert_eq!(vram, 1 << 30);
    let at = vram - TABLE_FROM_END;
    let mut t = vec![0u8; 10 << 10];
    gpu.bar_read(0, at, &mut t).unwrap();
    let disc = Discovery::parse(&t, at).unwrap();
    Am {
        gpu,
        disc,
        fb_base: 0,
        psp_wptr: 0,
        psp_n: 0,
    }
}

#[test]
fn discovery_reports_an_mi350_with_8_xccs() {
    let am = mi350();
    let v = |ip, inst| am.disc.ips[&(hw_id(ip), inst)].version;
    assert_eq!(am.instances(AmIp::Gc), 8, "one GC instance per XCC");
    for x in 0..8 {
        assert_eq!(v(AmIp::Gc, x), (9, 5, 0));
    }
    assert_eq!(v(AmIp::Sdma0, 0), (4, 4, 5));
    assert_eq!(v(AmIp::Mp0, 0), (13, 0, 12));
    assert_eq!(v(AmIp::Mp1, 0), (13, 0, 12));
    assert_eq!(v(AmIp::Nbio, 0).0, 7);
    assert_eq!(v(AmIp::Nbio, 0).1, 9);
    assert_eq!(v(AmIp::Mmhub, 0).0, 1);
    assert_eq!(v(AmIp::Mmhub, 0).1, 8);
    // XCC instances have disjoint register windows inside BAR5 (or the driver cannot tell
    // them apart).
    let mut seen = BTreeMap::new();
    for x in 0..8u8 {
        let a = am.gc(x, "CP_HQD_ACTIVE");
        assert!(u64::from(a) * 4 < am.gpu.bar_len(5), "XCC {x} outside BAR5");
        assert!(seen.insert(a, x).is_none(), "XCC {x} aliases another");
    }
    // GC info describes one XCC: the SEs of gfx950 over its 8 XCCs.
    assert_eq!(am.disc.gc.num_se * 8, EmuArch::Gfx950.num_se());
    // tinygrad's PCI device id check is the vendor; MI350's id from the KFD model.
    assert_eq!(am.gpu.config_read(0, 2), 0x1002);
}

/// The whole bring-up as tinygrad runs it for GC 9.5 / MP 13.0.12, then the checks.
fn bring_up() -> Am {
    let mut am = mi350();
    let g = &am;
    // ip.py AM_GMC.init_sw: fb_base from MMMC_VM_FB_LOCATION_BASE (16 MiB units).
    let fb = g.rreg(g.reg(&MMHUB_1_8_0, AmIp::Mmhub, 0, "MMMC_VM_FB_LOCATION_BASE"));
    let top = g.rreg(g.reg(&MMHUB_1_8_0, AmIp::Mmhub, 0, "MMMC_VM_FB_LOCATION_TOP"));
    am.fb_base = u64::from(fb & 0xFF_FFFF) << 24;
    assert!((u64::from(top & 0xFF_FFFF) << 24) - am.fb_base >= (1 << 30) - (16 << 20));

    // AM_PSP.init_hw: sOS components through the bootloader (wait C2PMSG_35 bit 31, blob in
    // msg1, C2PMSG_36 = msg1 MC >> 20, C2PMSG_35 = component), SOS last.
    for comp in [BL_KDB, BL_SYS_DRV, BL_SOS] {
        assert_ne!(am.rreg(am.mp0(35)) & 0x8000_0000, 0, "bootloader ready");
        am.vram_write(MSG1, &comp.to_le_bytes());
        am.wreg(am.mp0(36), (am.mc(MSG1) >> 20) as u32);
        am.wreg(am.mp0(35), comp);
    }
    assert_ne!(am.rreg(am.mp0(81)), 0, "sOS alive (C2PMSG_81)");
    // _ring_create: C2PMSG_71 reads 0 (no ring), wait 64 bit 31, ring MC in 69/70, size in
    // 71, KM ring type << 16 in 64, wait 64 & 0x8000FFFF == 0x80000000.
    assert_eq!(am.rreg(am.mp0(71)), 0);
    assert_ne!(am.rreg(am.mp0(64)) & 0x8000_0000, 0);
    let ring = am.mc(PSP_RING);
    am.wreg(am.mp0(69), ring as u32);
    am.wreg(am.mp0(70), (ring >> 32) as u32);
    am.wreg(am.mp0(71), 0x10000);
    am.wreg(am.mp0(64), psp::RING_TYPE_KM << 16);
    assert_eq!(am.rreg(am.mp0(64)) & 0x8000_FFFF, 0x8000_0000, "sOS ring");
    // _tmr_init: LOAD_TOC (msg1 address, size) answers the TMR size.
    let msg1 = am.mc(MSG1);
    let r = am.psp_submit(psp::CMD_LOAD_TOC, &[msg1 as u32, (msg1 >> 32) as u32, 64]);
    let tmr_size = u32::from_le_bytes(r[880..884].try_into().unwrap());
    assert!(tmr_size > 0 && u64::from(tmr_size) <= psp::MAX_TMR);
    // MP0 13.0.12 is not a boot-time-TMR part: _tmr_load_cmd with the driver's TMR
    // (buf_phy lo/hi, bitfield virt_phy_addr, buf_size, system_phy lo/hi).
    let tmr = am.mc(TMR);
    am.psp_submit(
        psp::CMD_SETUP_TMR,
        &[
            tmr as u32,
            (tmr >> 32) as u32,
            tmr_size,
            psp::TMR_FLAG_VIRT_PHY_ADDR,
            TMR as u32,
            (TMR >> 32) as u32,
        ],
    );
    // The fw descs of AMFirmware for GC 9 (MP1 13.0.12 loads no SMU image): SDMA, MEC and its
    // jump table (GFX_FW_TYPE_CP_MEC 4, CP_MEC_ME1 5), RLC_G (8), then the RL (REG_LIST 67)
    // in place of RLC autoload on GC < 11.
    for ty in [9u32, gc9::FW_CP_MEC, 5, 8, 67] {
        am.vram_write(MSG1, &[0xA5; 64]);
        am.psp_submit(
            psp::CMD_LOAD_IP_FW,
            &[msg1 as u32, (msg1 >> 32) as u32, 64, ty],
        );
    }

    // AM_SMU.init_hw with smu_13_0_12 message ids; read_clocks' count query.
    am.smu(gc9::smu_msg::SET_DRIVER_DRAM_ADDR_HIGH, 0);
    am.smu(gc9::smu_msg::SET_DRIVER_DRAM_ADDR_LOW, 0x1000);
    am.smu(gc9::smu_msg::ENABLE_ALL_SMU_FEATURES, 0);
    assert!(am.smu(gc9::smu_msg::GET_DPM_FREQ_BY_INDEX, (3 << 16) | 0xFF) & 0x7FFF_FFFF > 0);

    // Page tables (AMPageTableEntry with the GC 9 flags of get_pte_flags): PDB2 -> PDB1 ->
    // PDB0 whose entries are 2 MiB PTEs (no PTE_TF: not translated further).
    let idx = |va: u64, s: u32| (va >> s) & 0x1FF;
    let e = |a: u64, f: u64| (a | f).to_le_bytes();
    am.vram_write(PDB2 + idx(VA_BASE, 39) * 8, &e(PDB1, pte::VALID));
    am.vram_write(PDB1 + idx(VA_BASE, 30) * 8, &e(PDB0, pte::VALID));
    let leaf = pte::VALID | pte::READABLE | pte::WRITEABLE | pte::EXECUTABLE;
    for i in 0..VA_LEN >> 21 {
        let at = PDB0 + (idx(VA_BASE, 21) + i) * 8;
        am.vram_write(at, &e(MAP_PHYS + (i << 21), leaf));
    }

    // AM_GMC.flush_tlb("MM") on every hub: semaphore, request, ack for vmid 0, release.
    let hubs = am.instances(AmIp::Mmhub);
    assert!(hubs >= 1);
    let inv = Am::field(
        &GC_9_4_3,
        "GCVM_INVALIDATE_ENG17_REQ",
        &[
            ("per_vmid_invalidate_req", 1),
            ("invalidate_l2_ptes", 1),
            ("invalidate_l2_pde0", 1),
            ("invalidate_l2_pde1", 1),
            ("invalidate_l2_pde2", 1),
            ("invalidate_l1_ptes", 1),
        ],
    );
    for h in 0..hubs {
        let m = |n| am.reg(&MMHUB_1_8_0, AmIp::Mmhub, h, n);
        assert_eq!(
            am.rreg(m("MMVM_INVALIDATE_ENG17_SEM")) & 1,
            1,
            "hub {h} semaphore"
        );
        am.wreg(m("MMVM_INVALIDATE_ENG17_REQ"), inv);
        assert_eq!(
            am.rreg(m("MMVM_INVALIDATE_ENG17_ACK")) & 1,
            1,
            "hub {h} ack"
        );
        am.wreg(m("MMVM_INVALIDATE_ENG17_SEM"), 0);
    }

    // AM_GFX.init_hw: CP_STAT idle stands for RLC autoload on GC 9; init_hub("GC") per XCC
    // (enable_vm_addressing: start/end/base, CONTEXT0_CNTL), then flush_tlb("GC") per XCC.
    let xccs = am.instances(AmIp::Gc);
    for x in 0..xccs {
        assert_eq!(am.rreg(am.gc(x, "CP_STAT")), 0, "XCC {x} CP idle");
        let s = VA_BASE >> 12;
        let end = (VA_BASE + VA_LEN - 1) >> 12;
        let pt = PDB2 | 1;
        for (n, v) in [
            ("GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32", s as u32),
            ("GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32", (s >> 32) as u32),
            ("GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32", end as u32),
            ("GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32", (end >> 32) as u32),
            ("GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32", pt as u32),
            ("GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32", (pt >> 32) as u32),
        ] {
            am.wreg(am.gc(x, n), v);
        }
        let cntl = Am::field(
            &GC_9_4_3,
            "GCVM_CONTEXT0_CNTL",
            &[
                ("enable_context", 1),
                ("page_table_depth", 2),
                ("page_table_block_size", 9),
            ],
        );
        am.wreg(am.gc(x, "GCVM_CONTEXT0_CNTL"), cntl);
        am.wreg(am.gc(x, "GCVM_INVALIDATE_ENG17_REQ"), inv);
        assert_eq!(
            am.rreg(am.gc(x, "GCVM_INVALIDATE_ENG17_ACK")) & 1,
            1,
            "XCC {x} GC hub ack"
        );
    }
    assert!(
        am.gpu.translate(VA_BASE + 0x1234).is_some(),
        "VA window mapped"
    );

    // set_clockgating_state: RLC safe mode enter per XCC, wait for cmd to clear.
    for x in 0..xccs {
        let sm = am.gc(x, "RLC_SAFE_MODE");
        am.wreg(
            sm,
            Am::field(&GC_9_4_3, "RLC_SAFE_MODE", &[("cmd", 1), ("message", 1)]),
        );
        assert_eq!(am.rreg(sm) & 1, 0, "XCC {x} RLC safe mode ack");
    }

    // _config_mec (halt), _enable_mec (CP_MEC_CNTL = 0) per XCC.
    for x in 0..xccs {
        let halt = Am::field(
            &GC_9_4_3,
            "CP_MEC_CNTL",
            &[("mec_me1_halt", 1), ("mec_me2_halt", 1)],
        );
        am.wreg(am.gc(x, "CP_MEC_CNTL"), halt);
        am.wreg(am.gc(x, "CP_MEC_CNTL"), 0);
    }

    // The NBIO 7.9 remap hole for HDP flushes (AM_GMC.flush_hdp).
    let remap = am.reg(
        &NBIO_7_9_0,
        AmIp::Nbio,
        0,
        "BIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL",
    );
    let hole = am.rreg(remap);
    assert!(hole != 0 && u64::from(hole) < am.gpu.bar_len(5));
    am.wreg(hole / 4, 0);
    assert_eq!(am.gpu.firmware_log().hdp_flushes, 1);
    am
}

#[test]
fn tinygrad_bring_up_sequence_is_answered() {
    let am = bring_up();
    let log = am.gpu.firmware_log();
    assert_eq!(log.bootloader.len(), 3);
    assert_eq!(
        log.psp_cmds,
        [
            psp::CMD_LOAD_TOC,
            psp::CMD_SETUP_TMR,
            psp::CMD_LOAD_IP_FW,
            psp::CMD_LOAD_IP_FW,
            psp::CMD_LOAD_IP_FW,
            psp::CMD_LOAD_IP_FW,
            psp::CMD_LOAD_IP_FW
        ]
    );
    assert_eq!(log.smu_msgs.len(), 4);
    // 2 hubs + 8 XCCs invalidated.
    assert_eq!(
        log.tlb_invalidations,
        u64::from(am.instances(AmIp::Mmhub)) + 8
    );
}

#[test]
fn hqd_refused_while_mec_halted_says_so() {
    let am = mi350();
    // No PSP MEC image, no MEC release: activating an HQD must not start a queue.
    am.wreg(
        am.gc(3, "GRBM_GFX_CNTL"),
        Am::field(&GC_9_4_3, "GRBM_GFX_CNTL", &[("meid", 1)]),
    );
    am.wreg(am.gc(3, "CP_HQD_ACTIVE"), 1);
    assert_eq!(am.rreg(am.gc(3, "CP_HQD_ACTIVE")), 0);
    let r = am.gpu.refused();
    assert!(
        r.iter()
            .any(|m| m.contains("XCC 3") && m.contains("halted")),
        "{r:?}"
    );
}

/// ip.py AM_GFX.setup_ring for XCC `x` (PM4, no AQL): select me 1 pipe 0 queue 0, the HQD
/// registers of the MQD, HQD_ACTIVE. Own rptr write-back per XCC, shared ring and doorbell.
fn setup_hqd(am: &Am, x: u8, ring_va: u64, ring_bytes: u64, rptr_va: u64, wptr_va: u64) {
    am.wreg(
        am.gc(x, "GRBM_GFX_CNTL"),
        Am::field(&GC_9_4_3, "GRBM_GFX_CNTL", &[("meid", 1)]),
    );
    let doorbell = 3u32; // AMDGPU_NAVI10_DOORBELL_MEC_RING0
    let ctl = Am::field(
        &GC_9_4_3,
        "CP_HQD_PQ_CONTROL",
        &[
            ("rptr_block_size", 5),
            ("queue_size", (ring_bytes / 4).ilog2() - 1),
        ],
    );
    let db = Am::field(
        &GC_9_4_3,
        "CP_HQD_PQ_DOORBELL_CONTROL",
        &[("doorbell_offset", doorbell * 2), ("doorbell_en", 1)],
    );
    for (n, v) in [
        ("CP_HQD_PQ_BASE", (ring_va >> 8) as u32),
        ("CP_HQD_PQ_BASE_HI", (ring_va >> 40) as u32),
        ("CP_HQD_PQ_RPTR_REPORT_ADDR", rptr_va as u32),
        ("CP_HQD_PQ_RPTR_REPORT_ADDR_HI", (rptr_va >> 32) as u32),
        ("CP_HQD_PQ_WPTR_POLL_ADDR", wptr_va as u32),
        ("CP_HQD_PQ_WPTR_POLL_ADDR_HI", (wptr_va >> 32) as u32),
        ("CP_HQD_PQ_DOORBELL_CONTROL", db),
        ("CP_HQD_PQ_CONTROL", ctl),
        ("CP_HQD_AQL_CONTROL", 0),
    ] {
        am.wreg(am.gc(x, n), v);
    }
    am.wreg(am.gc(x, "CP_HQD_ACTIVE"), 1);
    am.wreg(am.gc(x, "GRBM_GFX_CNTL"), 0);
    assert_eq!(am.rreg(am.gc(x, "CP_HQD_ACTIVE")) & 1, 1, "XCC {x} HQD");
}

#[test]
fn add_kernel_runs_on_every_xcc_queue_with_sqtt_per_xcc_and_se() {
    let Some(elf) = testdata::require_shared("traces/gfx950/plus_run_0/program0_E_3.elf") else {
        return;
    };
    let elf = std::fs::read(elf).unwrap();
    let am = bring_up();
    let xccs = u32::from(am.instances(AmIp::Gc));
    let n_se = EmuArch::Gfx950.num_se() as usize;

    // VA layout inside the window.
    let ring = VA_BASE;
    let ring_bytes = 64 << 10;
    let rptrs = VA_BASE + 0x10_0000; // 8 bytes per XCC
    let wptr = VA_BASE + 0x10_1000;
    let code = VA_BASE + 0x20_0000;
    let bufs = VA_BASE + 0x30_0000; // out, a, b
    let kargs = VA_BASE + 0x31_0000;
    let sync = VA_BASE + 0x32_0000;
    let wptrs = VA_BASE + 0x33_0000;
    let sqtt = VA_BASE + 0x40_0000;
    let sqtt_se = 0x10_0000u64;
    assert!(sqtt + sqtt_se * n_se as u64 <= VA_BASE + VA_LEN);

    for x in 0..xccs as u8 {
        setup_hqd(&am, x, ring, ring_bytes, rptrs + 8 * u64::from(x), wptr);
    }

    // The program image and kernel descriptor.
    let c = Code::parse(&elf).unwrap();
    am.vram_write(am.va(code), &c.image);
    let (rsrc1, rsrc2) = c.launch_rsrc(9, 160).unwrap();
    let a = [1.5f32, -2.25, 1e10];
    let b = [0.25f32, 8.0, -3.0];
    let f = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    am.vram_write(am.va(bufs), &[0u8; 12]);
    am.vram_write(am.va(bufs + 0x100), &f(&a));
    am.vram_write(am.va(bufs + 0x200), &f(&b));
    let ka = runtime::kernel::build_kernargs(
        c.kernel.descriptor.kernarg_size as usize,
        &[bufs, bufs + 0x100, bufs + 0x200],
        &[],
    );
    am.vram_write(am.va(kargs), &ka);

    // PM4 from the runtime's command builder for GC 9.5 with 8 XCCs (the packet encoder is
    // spec-derived and shared with the KFD path; the device under test is the emulator).
    let ip = IpVersions {
        gc: (9, 5, 0),
        sdma: (4, 4, 5),
        nbio: (7, 9, 0),
    };
    let bases = IpBases {
        gc: am.bases(AmIp::Gc, 0).to_vec(),
        sdma: am.bases(AmIp::Sdma0, 0).to_vec(),
        nbio: am.bases(AmIp::Nbio, 0).to_vec(),
    };
    let mut ctx = GfxContext::new(ip, &bases, xccs).unwrap();
    ctx.xcc_sync = Some((sync, sync + 16));
    let mut cmds = ComputeCmds::new(Arc::new(ctx));
    let setup = runtime::sqtt::SqttSetup {
        gfx_major: 9,
        buffers: (0..n_se as u64)
            .map(|s| (sqtt + s * sqtt_se, sqtt_se))
            .collect(),
        itrace_se_mask: 0x1,
        wptrs_va: wptrs,
    };
    cmds.xcc_config().unwrap();
    runtime::sqtt::start(&mut cmds, &setup).unwrap();
    cmds.exec(
        &Launch {
            prog_addr: code + c.kernel.entry,
            rsrc1,
            rsrc2,
            rsrc3: c.kernel.descriptor.compute_pgm_rsrc3,
            kernarg_va: kargs,
            dispatch_ptr: None,
            private_segment: None,
            wave32: c.wave32(),
            global: [1, 1, 1],
            local: [3, 1, 1],
            tmpring_size: 0,
            scratch_va: 0,
            scratch_per_xcc: 0,
        },
        None,
    )
    .unwrap();
    runtime::sqtt::stop(&mut cmds, &setup).unwrap();
    let words: Vec<u8> = cmds.q.iter().flat_map(|w| w.to_le_bytes()).collect();
    assert!(words.len() as u64 <= ring_bytes);
    am.vram_write(am.va(ring), &words);
    let wp = cmds.q.len() as u64;
    am.vram_write(am.va(wptr), &wp.to_le_bytes());
    // An IH control value the host writes before the rings run (tinygrad's AM_IH fields,
    // ring not enabled), read back after: it must not depend on which XCC's CP ran last.
    let ih_cntl = am.reg(&OSSSYS_4_4_2, AmIp::Osssys, 0, "IH_RB_CNTL");
    let ih_val = Am::field(
        &OSSSYS_4_4_2,
        "IH_RB_CNTL",
        &[("mc_space", 4), ("rb_size", 16), ("mc_snoop", 1)],
    );
    am.wreg(ih_cntl, ih_val);
    // Doorbell slot 3 (64-bit doorbells at 8-byte stride in BAR2).
    am.gpu.bar_write(2, 3 * 8, &wp.to_le_bytes()).unwrap();
    am.gpu.wait_interrupt();
    assert_eq!(
        am.rreg(ih_cntl),
        ih_val,
        "IH_RB_CNTL after rings ran on every XCC"
    );

    assert!(am.gpu.refused().is_empty(), "{:?}", am.gpu.refused());
    let out = am.vram_read(am.va(bufs), 12);
    for i in 0..3 {
        let r = f32::from_le_bytes(out[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!(r.to_bits(), (a[i] + b[i]).to_bits(), "out[{i}]");
    }
    // Every XCC consumed the whole ring (rptr write-back per XCC, in dwords).
    for x in 0..u64::from(xccs) {
        let r = u64::from_le_bytes(am.vram_read(am.va(rptrs + 8 * x), 8).try_into().unwrap());
        assert_eq!(r, wp, "XCC {x} rptr");
    }
    // SQTT: each XCC's SEs wrote their buffers (SQ_THREAD_TRACE_WPTR copied at stop).
    let wp_se = am.vram_read(am.va(wptrs), 4 * n_se);
    let per = n_se / xccs as usize;
    for se in 0..n_se {
        let w = u32::from_le_bytes(wp_se[4 * se..4 * se + 4].try_into().unwrap());
        let bytes = runtime::sqtt::bytes_written(9, w, sqtt + se as u64 * sqtt_se);
        assert!(bytes > 0, "XCC {} SE {} wrote no SQTT", se / per, se % per);
    }
}

#[test]
fn sdma_4_4_copy_runs_on_queue_0() {
    let am = bring_up();
    let s = |n| am.reg(&SDMA_4_4_2, AmIp::Sdma0, 0, n);
    // ip.py AM_SDMA.setup_ring for SDMA 4.4 (regSDMA_GFX, instance 0, doorbell sDMA_ENGINE0).
    let ring = VA_BASE + 0x50_0000;
    let (rptr, wptr) = (VA_BASE + 0x51_0000, VA_BASE + 0x51_0100);
    let doorbell = 256u32; // AMDGPU_NAVI10_DOORBELL_sDMA_ENGINE0
    let ring_bytes = 0x1000u64;
    for (n, v) in [
        ("SDMA_GFX_RB_BASE", (ring >> 8) as u32),
        ("SDMA_GFX_RB_BASE_HI", (ring >> 40) as u32),
        ("SDMA_GFX_RB_RPTR_ADDR_LO", rptr as u32),
        ("SDMA_GFX_RB_RPTR_ADDR_HI", (rptr >> 32) as u32),
        ("SDMA_GFX_RB_WPTR_POLL_ADDR_LO", wptr as u32),
        ("SDMA_GFX_RB_WPTR_POLL_ADDR_HI", (wptr >> 32) as u32),
        (
            "SDMA_GFX_DOORBELL_OFFSET",
            Am::field(
                &SDMA_4_4_2,
                "SDMA_GFX_DOORBELL_OFFSET",
                &[("offset", doorbell * 2)],
            ),
        ),
        (
            "SDMA_GFX_DOORBELL",
            Am::field(&SDMA_4_4_2, "SDMA_GFX_DOORBELL", &[("enable", 1)]),
        ),
    ] {
        am.wreg(s(n), v);
    }
    let cntl = Am::field(
        &SDMA_4_4_2,
        "SDMA_GFX_RB_CNTL",
        &[
            ("rb_enable", 1),
            ("rb_size", (ring_bytes / 4).ilog2()),
            ("rptr_writeback_enable", 1),
            ("rptr_writeback_timer", 4),
        ],
    );
    am.wreg(s("SDMA_GFX_RB_CNTL"), cntl);
    let (src, dst, sig) = (
        VA_BASE + 0x52_0000,
        VA_BASE + 0x53_0000,
        VA_BASE + 0x54_0000,
    );
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
    am.vram_write(am.va(src), &data);
    // SDMA 4: fences carry no MTYPE (amdgpu sdma_v4_0_ring_emit_fence), copies split at 4 MiB.
    let mut c = CopyCmds::sdma4();
    c.copy(dst, src, data.len() as u64);
    c.signal(sig, 0x5EED, None);
    let words: Vec<u8> = c.q.iter().flat_map(|w| w.to_le_bytes()).collect();
    am.vram_write(am.va(ring), &words);
    let wp = words.len() as u64;
    am.vram_write(am.va(wptr), &wp.to_le_bytes());
    am.gpu
        .bar_write(2, u64::from(doorbell) * 8, &wp.to_le_bytes())
        .unwrap();
    am.gpu.wait_interrupt();
    assert_eq!(am.vram_read(am.va(dst), data.len()), data);
    assert_eq!(am.vram_read(am.va(sig), 4), 0x5EEDu32.to_le_bytes());
}

/// The real driver (`runtime::pci::am`) on the emulated MI350 with a synthetic GC 9 firmware
/// set: past SOC, hubs, IH, the PSP (sOS, ring, TOC/TMR, every image in tinygrad's AMFirmware
/// order for GC 9, the RL register list), the SMU, GFX, SDMA, clocks, up to the refusal that
/// names the missing v9 queues.
#[test]
fn the_driver_boots_the_mi350_past_psp_and_smu() {
    use runtime::pci::am::firmware::fw_type as t;
    let cfg = EmuPciConfig::new(EmuArch::Gfx950);
    let names = emu::pci::firmware::names_for(&cfg.ips);
    let fw = emu::pci::firmware::temp_firmware_dir_for(&names).unwrap();
    let gpu = EmuPciGpu::new(cfg).unwrap();
    let opts = runtime::pci::PciOptions {
        firmware_dir: fw.path().to_path_buf(),
        ..Default::default()
    };
    // The whole bring-up, then the device is handed out (its queues are made on demand).
    let dev = runtime::pci::am::AmDevice::boot(Arc::new(gpu.clone()), &opts).unwrap();
    assert_eq!(dev.gc9.as_ref().map(|g| g.xccs), Some(8));
    drop(dev);
    let log = gpu.firmware_log();
    // ip.py AM_PSP.init_hw: bootloader components with sOS last (KDB sent for both the key
    // database and, on MP0 < 14, the SPL table is tinygrad's; the driver sends each part once).
    assert_eq!(log.bootloader.last().map(|b| b.0), Some(BL_SOS));
    assert_eq!(log.bootloader.first().map(|b| b.0), Some(BL_KDB));
    // LOAD_TOC, SETUP_TMR (MP0 13.0.12 has no boot-time TMR), the images, no AUTOLOAD_RLC.
    assert_eq!(log.psp_cmds[0], psp::CMD_LOAD_TOC);
    assert_eq!(log.psp_cmds[1], psp::CMD_SETUP_TMR);
    assert!(!log.psp_cmds.contains(&psp::CMD_AUTOLOAD_RLC));
    // 8 XCCs: one spatial partition (GFX_CMD_ID_SRIOV_SPATIAL_PART = 39, psp_gfx_if.h) after
    // the images, as the last ring command.
    assert_eq!(log.psp_cmds.last(), Some(&39), "{:?}", log.psp_cmds);
    assert_eq!(log.psp_cmds.len(), 2 + 11 + 1, "{:?}", log.psp_cmds);
    // amdev.py AMFirmware for GC 9 with MP1 13.0.12 (no SMU/P2S): SDMA0..3 from one image,
    // CP_MEC then its jump table (CP_MEC_ME1), RLC v2.1 lists SRM_CNTL, GPM_MEM, SRM_MEM,
    // RLC_G; then REG_LIST from the sOS's RL part (GFX_FW_TYPE numbers of psp_gfx_if.h).
    let types: Vec<u32> = log.loaded.iter().map(|l| l.0).collect();
    assert_eq!(
        types,
        vec![9, 10, 52, 53, 4, 5, 22, 20, 21, 8, 67],
        "LOAD_IP_FW order"
    );
    assert_eq!(types, {
        vec![
            t::SDMA0,
            t::SDMA1,
            t::SDMA2,
            t::SDMA3,
            t::CP_MEC,
            t::CP_MEC_ME1,
            t::RLC_RESTORE_LIST_SRM_CNTL,
            t::RLC_RESTORE_LIST_GPM_MEM,
            t::RLC_RESTORE_LIST_SRM_MEM,
            t::RLC_G,
            t::REG_LIST,
        ]
    });
    // The MEC jump table is the last jt_size dwords of the ucode: 0x80 bytes.
    assert_eq!(log.loaded[5].1, 0x80);
    assert_eq!(log.loaded[4].1, 0x600);
    // AM_SMU.init_hw after the PSP: driver table address and all features, then the clocks.
    let msgs: Vec<u32> = log.smu_msgs.iter().map(|m| m.0).collect();
    assert_eq!(
        &msgs[..3],
        &[
            gc9::smu_msg::SET_DRIVER_DRAM_ADDR_HIGH,
            gc9::smu_msg::SET_DRIVER_DRAM_ADDR_LOW,
            gc9::smu_msg::ENABLE_ALL_SMU_FEATURES
        ]
    );
    assert!(
        msgs.contains(&gc9::smu_msg::SET_SOFT_MIN_BY_FREQ),
        "{msgs:?}"
    );
    // The MECs were released after their image was loaded: nothing refused.
    assert!(gpu.refused().is_empty(), "{:?}", gpu.refused());
}

/// The GC 9 firmware parser against the synthetic set's header layouts, and bad files: a jump
/// table larger than the MEC ucode, an sOS without the RL part, an SDMA v2 header, each an
/// error naming the file.
#[test]
fn gc9_firmware_set_parses_and_bad_files_name_themselves() {
    use runtime::pci::am::firmware::{fw_type as t, Firmware};
    use runtime::pci::PciError;
    let cfg = EmuPciConfig::new(EmuArch::Gfx950);
    let names = emu::pci::firmware::names_for(&cfg.ips);
    let files = emu::pci::firmware::synthetic_files_for(&names);
    let parse = |files: &[(String, Vec<u8>)]| {
        Firmware::parse_gc9_with(&names, false, &mut |n| {
            files
                .iter()
                .find(|f| f.0 == n)
                .map(|f| f.1.clone())
                .ok_or_else(|| PciError::Firmware {
                    file: n.into(),
                    msg: "absent".into(),
                })
        })
    };
    let fw = parse(&files).unwrap();
    assert!(fw.smu.is_none());
    assert_eq!(fw.sos.last().map(|c| c.bl_cmd), Some(BL_SOS));
    assert_eq!(fw.reg_list.as_ref().map(Vec::len), Some(0x300));
    assert_eq!(fw.ip[4].fw_type, t::CP_MEC);
    // The jump table is the MEC ucode's tail (payload tag 5 in the synthetic file).
    assert_eq!(fw.ip[5].data, emu::pci::firmware::payload(5, 0x80));

    let with = |name: &str, f: &dyn Fn(&mut Vec<u8>)| {
        let mut v = files.clone();
        let e = v.iter_mut().find(|x| x.0 == name).unwrap();
        f(&mut e.1);
        parse(&v).err().unwrap()
    };
    let e = with(&names.mec, &|b| {
        b[40..44].copy_from_slice(&0x1000u32.to_le_bytes())
    });
    assert!(
        matches!(&e, PciError::Firmware { file, msg } if *file == names.mec && msg.contains("jump table")),
        "{e}"
    );
    // The RL descriptor (the 9th, at 40 + 16 * 8) retyped as an unknown part.
    let e = with(&names.sos, &|b| {
        b[168..172].copy_from_slice(&99u32.to_le_bytes())
    });
    assert!(
        matches!(&e, PciError::Firmware { file, msg } if *file == names.sos && msg.contains("RL")),
        "{e}"
    );
    let e = with(&names.sdma, &|b| {
        b[8..10].copy_from_slice(&2u16.to_le_bytes())
    });
    assert!(
        matches!(&e, PciError::Firmware { file, msg } if *file == names.sdma && msg.contains("version 2")),
        "{e}"
    );
}

/// An SMC v2.1 file (amdgpu_ucode.h smc_firmware_header_v2_1: pptable_count at 36,
/// pptable_entry_offset at 40; 12-byte smc_soft_pptable_entry {id, ppt_offset_bytes,
/// ppt_size_bytes}) listing `entries`, each payload filled with its index.
fn smc_v2_1(count: u32, entries: &[(u32, u32)]) -> Vec<u8> {
    let table = 0x40usize;
    // Payloads after the entry table, 0x40 bytes each.
    let data = (table + 12 * entries.len()).next_multiple_of(0x40);
    let mut b = vec![0u8; data + 0x40 * entries.len().max(1)];
    let n = b.len() as u32;
    let mut put = |at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
    put(0, n);
    put(4, 44);
    put(8, 2 | 1 << 16);
    put(20, n - data as u32);
    put(24, data as u32);
    put(36, count);
    put(40, table as u32);
    for (i, (id, size)) in entries.iter().enumerate() {
        put(table + 12 * i, *id);
        put(table + 12 * i + 4, (data + 0x40 * i) as u32);
        put(table + 12 * i + 8, *size);
    }
    for i in 0..entries.len() {
        b[data + 0x40 * i..data + 0x40 * (i + 1)].fill(i as u8);
    }
    b
}

/// The P2S table as amdgpu's smu_v13_0_6_init_microcode takes it: the first entry with the
/// dGPU id (__P2S_TABLE_ID_X), one table only; a pptable_count past the bound is an error
/// naming the file and the count's offset, not a silently shortened list.
#[test]
fn gc9_p2s_table_is_the_first_dgpu_entry_and_a_wild_count_is_refused() {
    use runtime::pci::am::firmware::{fw_type as t, Firmware};
    use runtime::pci::PciError;
    const ID_A: u32 = 0x5032_5341;
    const ID_X: u32 = 0x5032_5358;
    let cfg = EmuPciConfig::new(EmuArch::Gfx950);
    let names = emu::pci::firmware::names_for(&cfg.ips);
    let parse = |smc: Vec<u8>| {
        let mut files = emu::pci::firmware::synthetic_files_for(&names);
        files.push((names.smu.clone(), smc));
        Firmware::parse_gc9_with(&names, true, &mut |n| {
            files
                .iter()
                .find(|f| f.0 == n)
                .map(|f| f.1.clone())
                .ok_or_else(|| PciError::Firmware {
                    file: n.into(),
                    msg: "absent".into(),
                })
        })
    };
    let p2s = |fw: &Firmware| -> Vec<Vec<u8>> {
        fw.ip
            .iter()
            .filter(|f| f.fw_type == t::P2S_TABLE)
            .map(|f| f.data.clone())
            .collect()
    };
    // The APU table first, then two dGPU tables: the first dGPU one (entry 1) only.
    let fw = parse(smc_v2_1(3, &[(ID_A, 0x10), (ID_X, 0x20), (ID_X, 0x30)])).unwrap();
    assert_eq!(p2s(&fw), vec![vec![1u8; 0x20]]);
    assert_eq!(fw.ip[0].fw_type, t::P2S_TABLE, "P2S before SDMA");
    // No dGPU entry: nothing to load.
    let fw = parse(smc_v2_1(1, &[(ID_A, 0x10)])).unwrap();
    assert!(p2s(&fw).is_empty());
    // 64 entries are read (the 64th is the match), 65 are refused.
    let mut many = vec![(ID_A, 0x4); 63];
    many.push((ID_X, 0x8));
    let fw = parse(smc_v2_1(64, &many)).unwrap();
    assert_eq!(p2s(&fw), vec![vec![63u8; 0x8]]);
    let e = parse(smc_v2_1(65, &many)).err().unwrap();
    assert!(
        matches!(&e, PciError::Firmware { file, msg } if *file == names.smu && msg.contains("offset 36") && msg.contains("65")),
        "{e}"
    );
}

#[test]
fn pdb0_entries_translate_further_only_with_pte_tf() {
    // get_pte_flags on GC < 10: a PDB0 entry pointing at a PTB carries AMDGPU_PTE_TF (bit 56,
    // amdgpu_vm.h); a PDB0 entry without it is a 2 MiB PTE (is_pte_huge_page).
    const PTE_TF: u64 = 1 << 56;
    const PTB: u64 = 0x10_3000;
    let am = bring_up();
    let idx = |va: u64, s: u32| (va >> s) & 0x1FF;
    let va = VA_BASE + VA_LEN - (2 << 20);
    let target = 0x1234_5000u64;
    let page = 5u64;
    let leaf = pte::VALID | pte::READABLE | pte::WRITEABLE;
    am.vram_write(PTB + page * 8, &(target | leaf).to_le_bytes());
    let pdb0_at = PDB0 + idx(va, 21) * 8;
    // Before: the 2 MiB leaf bring_up wrote.
    let t = am.gpu.translate(va + page * 0x1000 + 0x10).unwrap();
    assert_eq!(t.page_size, 2 << 20);
    assert_eq!(
        t.key,
        emu::mem::PHYS_VRAM + MAP_PHYS + (VA_LEN - (2 << 20)) + page * 0x1000 + 0x10
    );
    // The same slot as a directory with TF: 4 KiB pages from the PTB.
    am.vram_write(pdb0_at, &(PTB | pte::VALID | PTE_TF).to_le_bytes());
    let t = am.gpu.translate(va + page * 0x1000 + 0x10).unwrap();
    assert_eq!(t.page_size, 0x1000);
    assert_eq!(t.key, emu::mem::PHYS_VRAM + target + 0x10);
    // Without TF the entry is a 2 MiB PTE again (a GC 10-style directory entry would be
    // misread on GC 9).
    am.vram_write(pdb0_at, &(PTB | pte::VALID).to_le_bytes());
    let t = am.gpu.translate(va).unwrap();
    assert_eq!(t.page_size, 2 << 20);
}
