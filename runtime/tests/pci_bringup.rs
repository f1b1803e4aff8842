//! The AM bring-up against the emulated PCI GPU: the register traffic it produces (recorded by
//! the emulated device) follows the order of pci-am-interface.md §1.3/§1.6 block by block, and
//! the PSP/SMU saw the firmware and messages the spec lists.

mod common;

use common::boot_pci;
use emu::pci::{firmware, EmuPciConfig, EmuPciGpu};
use emu::EmuArch;
use runtime::pci::am::firmware::{
    fw_type, BL_DBG_DRV, BL_INTF_DRV, BL_KDB, BL_RAS_DRV, BL_SOC_DRV, BL_SOS, BL_SPL, BL_SYS_DRV,
};
use runtime::pci::am::{psp, smu};
use runtime::pci::iface::PciIface;

struct Trace {
    names: Vec<(&'static str, u32)>,
}

impl Trace {
    fn of(gpu: &EmuPciGpu) -> Trace {
        Trace {
            names: gpu
                .reg_writes()
                .iter()
                .map(|w| (gpu.reg_name(w.addr).unwrap_or("?"), w.value))
                .collect(),
        }
    }
    /// Index of the first write to `name` (after `from`) whose value satisfies `pred`.
    fn find(&self, from: usize, name: &str, pred: impl Fn(u32) -> bool) -> usize {
        self.names
            .iter()
            .enumerate()
            .skip(from)
            .find(|(_, (n, v))| *n == name && pred(*v))
            .map(|(i, _)| i)
            .unwrap_or_else(|| panic!("no write to {name} after #{from}"))
    }
    fn first(&self, name: &str) -> usize {
        self.find(0, name, |_| true)
    }
    fn last(&self, name: &str) -> usize {
        self.names
            .iter()
            .rposition(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("no write to {name}"))
    }
    /// Asserts the writes happen in this order (each after the previous one).
    fn in_order(&self, seq: &[&str]) -> usize {
        let mut at = 0;
        for n in seq {
            at = self.find(at, n, |_| true) + 1;
        }
        at
    }
}

fn boot() -> (PciIface, EmuPciGpu) {
    let (iface, gpu) = boot_pci(EmuPciConfig::new(EmuArch::Gfx1100));
    (iface.unwrap(), gpu)
}

#[test]
fn ip_blocks_initialise_in_the_documented_order() {
    let (_iface, gpu) = boot();
    let t = Trace::of(&gpu);
    // SOC → GMC (MM hub) → IH → PSP → SMU → GFX → SDMA → clocks → SCRATCH_REG7.
    let soc = t.first("RCC_DEV0_EPF0_RCC_DOORBELL_APER_EN");
    let gmc = t.first("MMMC_VM_AGP_BASE");
    let ih = t.first("IH_RB_BASE");
    let psp = t.first("MP0_SMN_C2PMSG_36");
    let smu = t.first("MP1_SMN_C2PMSG_66");
    let gfx = t.first("CP_MEC_RS64_PRGRM_CNTR_START");
    let sdma = t.first("SDMA0_UTCL1_CNTL");
    let done = t.first("SCRATCH_REG7");
    let order = [soc, gmc, ih, psp, smu, gfx, sdma, done];
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "block order SOC, GMC, IH, PSP, SMU, GFX, SDMA, done: {order:?}"
    );
    // Each block finishes before the next starts.
    assert!(t.last("RCC_DEV0_EPF2_STRAP2") < gmc, "SOC strap before GMC");
    assert!(
        t.first("MMVM_CONTEXT0_CNTL") < ih,
        "MM hub context before IH"
    );
    assert!(t.last("IH_RB_CNTL") < psp, "IH enabled before PSP");
    assert!(t.last("MP0_SMN_C2PMSG_67") < smu, "PSP done before SMU");
    assert!(t.first("MP1_SMN_C2PMSG_66") < gfx, "SMU init before GFX");
    // wavescope's own stamp ("WS", boot layout 1), never tinygrad's AMDev.Version (0xA000_0008
    // in its recordings): a partial boot must not take tinygrad's boot memory for ours.
    assert_eq!(t.names[done].1, 0x5753_0001, "boot marker");
}

#[test]
fn gmc_sets_the_context_before_enabling_it_and_invalidates() {
    let (_iface, gpu) = boot();
    let t = Trace::of(&gpu);
    for hub in ["MMVM", "GCVM"] {
        let base = t.first(&format!("{hub}_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32"));
        let start = t.first(&format!("{hub}_CONTEXT0_PAGE_TABLE_START_ADDR_LO32"));
        let end = t.first(&format!("{hub}_CONTEXT0_PAGE_TABLE_END_ADDR_LO32"));
        let cntl = t.find(0, &format!("{hub}_CONTEXT0_CNTL"), |v| v & 1 == 1);
        let inv = t.find(cntl, &format!("{hub}_INVALIDATE_ENG17_REQ"), |v| v & 1 == 1);
        assert!(
            base < cntl && start < cntl && end < cntl,
            "{hub}: table before enable"
        );
        assert!(cntl < inv, "{hub}: invalidation after enable");
        // depth 3 (4 levels), block size 0.
        assert_eq!((t.names[cntl].1 >> 1) & 3, 3, "{hub} depth");
        assert_eq!(t.names[base].1 & 1, 1, "{hub} base valid bit");
    }
    // The MM hub semaphore brackets its invalidation.
    let sem_release = t.find(
        t.first("MMVM_INVALIDATE_ENG17_REQ"),
        "MMVM_INVALIDATE_ENG17_SEM",
        |v| v == 0,
    );
    assert!(sem_release > t.first("MMVM_INVALIDATE_ENG17_REQ"));
}

#[test]
fn ih_ring_is_programmed_then_enabled() {
    let (_iface, gpu) = boot();
    let t = Trace::of(&gpu);
    let end = t.in_order(&[
        "IH_RB_BASE",
        "IH_RB_BASE_HI",
        "IH_RB_CNTL",
        "IH_RB_WPTR_ADDR_LO",
        "IH_RB_RPTR",
        "IH_RB_WPTR",
        "IH_DOORBELL_RPTR",
        "IH_RB_CNTL",
    ]);
    let (_, enable) = t.names[end - 1];
    assert_eq!(enable & 1, 1, "ring 0 enabled last");
    assert_eq!(enable & (1 << 17), 1 << 17, "interrupts enabled on ring 0");
    let first_cntl = t.first("IH_RB_CNTL");
    assert_eq!(t.names[first_cntl].1 & 1, 0, "configured while disabled");
    // rb_size = order_base_2(512 KiB / 4) = 17 (amdgpu ih_v6_0.c; tinygrad since 3f25eb3).
    assert_eq!((enable >> 1) & 0x1F, 17);
    let (_, db) = t.names[t.first("IH_DOORBELL_RPTR")];
    assert_eq!(db, (376 * 2) | (1 << 28));
}

#[test]
fn psp_loads_sos_components_then_firmware_smu_first_and_autoloads_rlc() {
    let (_iface, gpu) = boot();
    let log = gpu.firmware_log();
    let cmds: Vec<u32> = log.bootloader.iter().map(|b| b.0).collect();
    assert_eq!(
        cmds,
        vec![
            BL_KDB,
            BL_SPL,
            BL_SYS_DRV,
            BL_SOC_DRV,
            BL_INTF_DRV,
            BL_DBG_DRV,
            BL_RAS_DRV,
            BL_SOS
        ]
    );
    // Each component was in the msg1 buffer when its command was written.
    let tags = [3u32, 5, 2, 7, 8, 9, 10, 1];
    for ((_, head), tag) in log.bootloader.iter().zip(tags) {
        assert_eq!(
            &head[..],
            &firmware::payload(0x100 + tag, 8)[..],
            "SOS component {tag}"
        );
    }
    assert_eq!(log.psp_cmds.first(), Some(&psp::CMD_LOAD_TOC));
    assert_eq!(log.psp_cmds.get(1), Some(&psp::CMD_LOAD_IP_FW));
    assert_eq!(
        log.psp_cmds.get(2),
        Some(&psp::CMD_SETUP_TMR),
        "TMR after SMU firmware"
    );
    assert_eq!(log.psp_cmds.last(), Some(&psp::CMD_AUTOLOAD_RLC));
    let types: Vec<u32> = log.loaded.iter().map(|l| l.0).collect();
    assert_eq!(types[0], fw_type::SMU, "SMU firmware first");
    assert_eq!(*types.last().unwrap(), fw_type::RLC_G, "RLC_G last");
    for t in [
        fw_type::IMU_I,
        fw_type::IMU_D,
        fw_type::SDMA_TH0,
        fw_type::SDMA_TH1,
        fw_type::RS64_MEC,
        fw_type::RS64_MEC_P0_STACK,
        fw_type::RLC_IRAM,
        fw_type::RLC_DRAM_BOOT,
        fw_type::RLC_P,
        fw_type::RLC_V,
    ] {
        let l = log
            .loaded
            .iter()
            .find(|l| l.0 == t)
            .unwrap_or_else(|| panic!("type {t} not loaded"));
        assert_eq!(
            &l.2[..],
            &firmware::payload(t, 8)[..],
            "blob of type {t} is the file's payload"
        );
    }
    let t = Trace::of(&gpu);
    // Ring creation: address and size before the create command.
    let create = t.find(0, "MP0_SMN_C2PMSG_64", |v| v == psp::RING_TYPE_KM << 16);
    assert!(t.first("MP0_SMN_C2PMSG_69") < create && t.first("MP0_SMN_C2PMSG_71") < create);
    // Every bootloader command follows the address of its blob.
    let mut at = 0;
    for _ in 0..8 {
        let a36 = t.find(at, "MP0_SMN_C2PMSG_36", |_| true);
        let a35 = t.find(at, "MP0_SMN_C2PMSG_35", |_| true);
        assert!(a36 < a35);
        at = a35 + 1;
    }
}

#[test]
fn smu_gets_its_table_features_and_clocks() {
    let (_iface, gpu) = boot();
    let msgs: Vec<u32> = gpu.firmware_log().smu_msgs.iter().map(|m| m.0).collect();
    assert_eq!(
        &msgs[..3],
        &[
            smu::MSG_SET_DRIVER_DRAM_ADDR_HIGH,
            smu::MSG_SET_DRIVER_DRAM_ADDR_LOW,
            smu::MSG_ENABLE_ALL_FEATURES
        ]
    );
    // Then, per clock: level count, top level's frequency, soft max, soft min.
    let log = gpu.firmware_log();
    for (i, clk) in smu::CLOCKS.iter().enumerate() {
        let m = &log.smu_msgs[3 + 4 * i..7 + 4 * i];
        assert_eq!(m[0], (smu::MSG_GET_DPM_FREQ_BY_INDEX, clk << 16 | 0xFF));
        assert_eq!(m[1], (smu::MSG_GET_DPM_FREQ_BY_INDEX, clk << 16 | 2));
        assert_eq!(m[2].0, smu::MSG_SET_SOFT_MAX_BY_FREQ);
        assert_eq!(m[3].0, smu::MSG_SET_SOFT_MIN_BY_FREQ);
        // The emulated SMU's top level is 500 + 100·clk + 2000 MHz.
        assert_eq!(m[2].1, clk << 16 | (2500 + 100 * clk));
    }
}

#[test]
fn gfx_starts_the_mec_and_sdma_queue_is_enabled_last() {
    let (mut iface, gpu) = boot();
    let t = Trace::of(&gpu);
    let pc = t.first("CP_MEC_RS64_PRGRM_CNTR_START");
    assert_eq!(
        u64::from(t.names[pc].1),
        (firmware::MEC_START >> 2) & 0xFFFF_FFFF
    );
    let reset = t.find(pc, "CP_MEC_RS64_CNTL", |v| v & (1 << 16) != 0);
    let unreset = t.find(reset, "CP_MEC_RS64_CNTL", |v| v & (1 << 16) == 0);
    let vmids = t
        .names
        .iter()
        .filter(|(n, _)| *n == "SH_MEM_CONFIG")
        .count();
    assert_eq!(vmids, 16, "SH_MEM_CONFIG for every VMID");
    let range = t.first("CP_MEC_DOORBELL_RANGE_UPPER");
    let active = t.find(range, "CP_MEC_RS64_CNTL", |v| {
        v & (1 << 26) != 0 && v & (1 << 30) == 0
    });
    assert!(reset < unreset && unreset < range && range < active);
    assert!(
        t.first("GCVM_CONTEXT0_CNTL") > pc,
        "GC hub set up in GFX init"
    );

    // Queues are created by the runtime: open a device on this iface.
    let opts = runtime::DeviceOptions {
        compute_ring_size: 1 << 16,
        sdma_ring_size: 1 << 16,
        kernargs_size: 1 << 16,
        staging_chunk: 1 << 16,
        staging_count: 1,
        ..Default::default()
    };
    let _ = &mut iface;
    let dev = runtime::Device::new(Box::new(iface), opts).unwrap();
    let t = Trace::of(&gpu);
    let end = t.in_order(&[
        "SDMA0_QUEUE0_MINOR_PTR_UPDATE",
        "SDMA0_QUEUE0_RB_BASE",
        "SDMA0_QUEUE0_RB_RPTR_ADDR_LO",
        "SDMA0_QUEUE0_RB_WPTR_POLL_ADDR_LO",
        "SDMA0_QUEUE0_DOORBELL_OFFSET",
        "SDMA0_QUEUE0_DOORBELL",
        "SDMA0_QUEUE0_MINOR_PTR_UPDATE",
        "SDMA0_QUEUE0_RB_CNTL",
        "SDMA0_QUEUE0_IB_CNTL",
    ]);
    assert!(end > 0);
    let active = t.find(0, "CP_HQD_ACTIVE", |v| v == 1);
    let base = t.last("CP_HQD_PQ_BASE");
    assert!(base < active, "HQD image written before activation");
    drop(dev);
    // Teardown: the compute queue is dequeued, the SDMA ring disabled, the GC context off.
    let t = Trace::of(&gpu);
    let deq = t.find(0, "CP_HQD_DEQUEUE_REQUEST", |v| v == 2);
    let rb_off = t.find(deq, "SDMA0_QUEUE0_RB_CNTL", |v| v & 1 == 0);
    assert!(t.find(deq, "GCVM_CONTEXT0_CNTL", |v| v == 0) < rb_off);
    let last_smu = t.last("MP1_SMN_C2PMSG_66");
    assert!(last_smu > rb_off, "clocks lowered after the queues stop");
    assert_eq!(
        t.names[t.last("IH_RB_CNTL")].1 & 1,
        0,
        "IH disabled at the end"
    );
}

#[test]
fn a_gpu_left_running_gets_a_mode1_reset_first() {
    let mut cfg = EmuPciConfig::new(EmuArch::Gfx1100);
    cfg.left_running = true;
    let (iface, gpu) = boot_pci(cfg);
    iface.unwrap();
    let log = gpu.firmware_log();
    let msgs: Vec<u32> = log.smu_msgs.iter().map(|m| m.0).collect();
    assert_eq!(
        &msgs[..2],
        &[smu::MSG_GET_SMU_VERSION, smu::MSG_MODE1_RESET]
    );
    // After the reset the full boot runs: all SOS components are loaded again.
    assert_eq!(log.bootloader.len(), 8);
    assert_eq!(log.bootloader.last().map(|b| b.0), Some(BL_SOS));
}

/// A field of `reg` in the shared register JSON, as (lo, hi) bits.
fn field(j: &serde_json::Value, reg: &str, f: &str) -> (u32, u32) {
    let e = &j["registers"][format!("reg{reg}")]["fields"][f];
    let bit = |k: &str| e[k].as_u64().unwrap_or_else(|| panic!("{reg}.{f}: no {k}")) as u32;
    (bit("lo"), bit("hi"))
}

fn get(v: u32, (lo, hi): (u32, u32)) -> u32 {
    (v >> lo) & (u32::MAX >> (31 - (hi - lo)))
}

/// Field values the bring-up writes, decoded with the field layout of the register JSON (not
/// the driver's own shifts): every VMID's SH_MEM_CONFIG is the kernel's default (64-bit
/// addressing, unaligned, prefetch 3), and the MM hub's walker priority is the whole client id.
#[test]
fn written_fields_decode_to_the_documented_values() {
    let Some(dir) = common::amd_registers_dir() else {
        return;
    };
    let load = |f: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{f}.json"))).unwrap())
            .unwrap()
    };
    let (gc, mm) = (load("gc_11_0_0"), load("mmhub_3_0_0"));
    let (_iface, gpu) = boot();
    let t = Trace::of(&gpu);
    let writes = |name: &str| -> Vec<u32> {
        t.names
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, v)| *v)
            .collect()
    };
    let sh = writes("SH_MEM_CONFIG");
    assert_eq!(sh.len(), 16, "one SH_MEM_CONFIG per VMID");
    for v in sh {
        assert_eq!(
            get(v, field(&gc, "SH_MEM_CONFIG", "address_mode")),
            0,
            "{v:#x}"
        );
        assert_eq!(
            get(v, field(&gc, "SH_MEM_CONFIG", "alignment_mode")),
            3,
            "{v:#x}"
        );
        let prefetch = field(&gc, "SH_MEM_CONFIG", "initial_inst_prefetch");
        assert_eq!(get(v, prefetch), 3, "{v:#x}");
    }
    // Both hubs: the walker priority, the identity aperture off, every invalidation engine
    // over the whole range (pci-am-interface.md, GMC init_hub).
    for hub in ["MM", "GC"] {
        let last = |n: &str| {
            *writes(&format!("{hub}{n}"))
                .last()
                .unwrap_or_else(|| panic!("no write to {hub}{n}"))
        };
        let low = u64::from(last("VM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_LO32"))
            | u64::from(last("VM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_HI32")) << 32;
        let high = u64::from(last("VM_L2_CONTEXT1_IDENTITY_APERTURE_HIGH_ADDR_LO32"))
            | u64::from(last("VM_L2_CONTEXT1_IDENTITY_APERTURE_HIGH_ADDR_HI32")) << 32;
        assert_eq!((low, high), (0xF_FFFF_FFFF, 0), "{hub} identity aperture");
        for i in 0..18 {
            let r = u64::from(last(&format!("VM_INVALIDATE_ENG{i}_ADDR_RANGE_LO32")))
                | u64::from(last(&format!("VM_INVALIDATE_ENG{i}_ADDR_RANGE_HI32"))) << 32;
            assert_eq!(r, 0x1F_FFFF_FFFF, "{hub} engine {i}");
        }
    }
    let mut c5 = writes("MMVM_L2_CNTL5");
    c5.extend(writes("GCVM_L2_CNTL5"));
    assert!(c5.len() >= 2, "both hubs");
    for v in c5 {
        let prio = field(&mm, "MMVM_L2_CNTL5", "walker_priority_client_id");
        assert_eq!(get(v, prio), 0x1FF, "{v:#x}");
        let frag = field(&mm, "MMVM_L2_CNTL5", "l2_cache_smallk_fragment_size");
        assert_eq!(get(v, frag), 0, "{v:#x}");
    }
}
