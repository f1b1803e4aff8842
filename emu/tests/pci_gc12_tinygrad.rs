//! tinygrad's recorded AM bring-up of a gfx1200 (`../shared/conformance/tinygrad/
//! pci_gfx1200_add.jsonl`) replayed into the emulated GC 12 PCI GPU, independent of our driver:
//! every recorded register write in order, every recorded read checked against what the device
//! answers, the PM4/SDMA submissions, doorbells and program upload as the recording shows them,
//! and the add kernel's result.
//!
//! The recording holds no memory contents the CPU wrote (PSP ring frames and command buffers,
//! firmware blobs, page tables), so the replay supplies them: PSP frames for each recorded ring
//! submit (the kind from the event's `ctx`), synthetic blobs, and 2 MiB page tables under the
//! root the recorded GCVM_CONTEXT0_PAGE_TABLE_BASE names, mapping tinygrad's VA window linearly.

use std::collections::HashMap;

use emu::pci::{EmuPciConfig, EmuPciGpu};
use runtime::pci::am::firmware::fw_type;
use runtime::pci::am::gmc::pte;
use runtime::pci::am::psp;
use serde_json::Value;
use sha2::{Digest, Sha256};

const REC: &str = "conformance/tinygrad/pci_gfx1200_add.jsonl";
const REC_SQTT: &str = "conformance/tinygrad/pci_gfx1200_add_sqtt.jsonl";
/// tinygrad's GPU VA window (context 0 starts there: PAGE_TABLE_START_ADDR_HI32 = 2).
const VA_BASE: u64 = 0x2000_0000_0000;
const VA_LEN: u64 = 256 << 20;
/// VRAM behind the VA window, and the two lower directory levels the replay adds.
const MAP_PHYS: u64 = 256 << 20;
const PDB1: u64 = 240 << 20;
const PDB0: u64 = PDB1 + 0x1000;
/// PSP command buffers, fences and blobs the replay places (MC = VRAM offset: FB base 0).
const PSP_CMD: u64 = 248 << 20;
const PSP_FENCE: u64 = 249 << 20;
const PSP_BLOB: u64 = 250 << 20;

/// Register reads where the device answers the hardware's value and tinygrad's mock another.
const ACCEPTED: &[(&str, &str)] = &[
    (
        "regMMMC_VM_FB_LOCATION_TOP",
        "the mock reports size >> 24; the hub reports the last 16 MiB unit",
    ),
    (
        "mmMP1_SMN_C2PMSG_82",
        "the mock SMU echoes the DPM request (README workaround 2); the device answers levels",
    ),
    (
        "regRLC_SAFE_MODE",
        "not modelled: no RLC_SAFE_MODE in the runtime's register tables; reads back the write",
    ),
];

/// The LOAD_IP_FW payload types, in ring order. The recording shows 13 LOAD_IP_FW submits but
/// not their frames; these are the GC 12 images the runtime parses (SMU first, as PSP loads it),
/// and RLC autoload needs RLC_G and RS64_MEC among them.
const LOADS: [u32; 13] = [
    fw_type::SMU,
    fw_type::SDMA_TH1,
    fw_type::SDMA_TH0,
    fw_type::RS64_PFP,
    fw_type::RS64_PFP_P0_STACK,
    fw_type::RS64_ME,
    fw_type::RS64_ME_P0_STACK,
    fw_type::RS64_MEC,
    fw_type::RS64_MEC_P0_STACK,
    fw_type::IMU_I,
    fw_type::IMU_D,
    fw_type::RLC_IRAM,
    fw_type::RLC_G,
];

fn recording(rec: &str) -> Option<Vec<Value>> {
    let path = testdata::require_shared(rec)?;
    let text = std::fs::read_to_string(path).unwrap();
    Some(
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    )
}

fn hex(v: &Value) -> u64 {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("not a hex string: {v}"));
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

fn bytes_of_hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

struct Replay {
    gpu: EmuPciGpu,
    /// Register reads that differ from the recording (not accepted): "seq name: ours vs theirs".
    diffs: Vec<String>,
    accepted: HashMap<&'static str, u32>,
    hdp_remap: u32,
    psp_ring: [u32; 2],
    psp_wptr: u32,
    loads: usize,
}

impl Replay {
    fn vram_write(&self, at: u64, b: &[u8]) {
        self.gpu.bar_write(0, at, b).unwrap();
    }
    fn vram_read(&self, at: u64, n: usize) -> Vec<u8> {
        let mut b = vec![0u8; n];
        self.gpu.bar_read(0, at, &mut b).unwrap();
        b
    }
    fn va_write(&self, va: u64, b: &[u8]) {
        assert!(
            va >= VA_BASE && va + b.len() as u64 <= VA_BASE + VA_LEN,
            "{va:#x}"
        );
        self.vram_write(MAP_PHYS + (va - VA_BASE), b);
    }
    fn va_read(&self, va: u64, n: usize) -> Vec<u8> {
        let mut b = vec![0u8; n];
        assert!(
            self.gpu.read_va(va, &mut b),
            "{va:#x} unmapped on the device"
        );
        b
    }
    fn reg_read(&self, reg: u32) -> u32 {
        let mut b = [0u8; 4];
        self.gpu.bar_read(5, u64::from(reg) * 4, &mut b).unwrap();
        u32::from_le_bytes(b)
    }
    fn reg_write(&self, reg: u32, v: u32) {
        self.gpu
            .bar_write(5, u64::from(reg) * 4, &v.to_le_bytes())
            .unwrap();
    }

    /// 4-level tables (root at VRAM 0 as recorded): VA_BASE.. -> MAP_PHYS.. in 2 MiB leaves.
    fn page_tables(&self) {
        let idx = |va: u64, s: u32| (va >> s) & 0x1FF;
        let e = |a: u64, f: u64| (a | f).to_le_bytes();
        self.vram_write(idx(VA_BASE, 39) * 8, &e(PDB1, pte::VALID));
        self.vram_write(PDB1 + idx(VA_BASE, 30) * 8, &e(PDB0, pte::VALID));
        // GC 12 page-table format: the huge-page flag is bit 63.
        let leaf =
            pte::VALID | pte::READABLE | pte::WRITEABLE | pte::EXECUTABLE | pte::gfx12::PDE_PTE;
        for i in 0..VA_LEN >> 21 {
            let at = PDB0 + (idx(VA_BASE, 21) + i) * 8;
            self.vram_write(at, &e(MAP_PHYS + (i << 21), leaf));
        }
    }

    /// The frame and command buffer of one PSP ring submit (what tinygrad's CPU wrote).
    fn psp_frame(&mut self, ctx: &str, new_wptr: u32) {
        let ring = u64::from(self.psp_ring[0]) | u64::from(self.psp_ring[1]) << 32;
        let n = u64::from(self.psp_wptr / 16);
        let cmd = PSP_CMD + n * 0x1000;
        let fence = PSP_FENCE + n * 8;
        let mut c = vec![0u8; psp::CMD_SIZE as usize];
        let mut put = |at: usize, v: u32| c[at..at + 4].copy_from_slice(&v.to_le_bytes());
        // psp_gfx_cmd_resp: cmd_id at 8, the command's arguments from 28.
        if ctx.contains("_load_toc_cmd") {
            put(8, psp::CMD_LOAD_TOC);
        } else if ctx.contains("_rlc_autoload_cmd") {
            put(8, psp::CMD_AUTOLOAD_RLC);
        } else if ctx.contains("_load_ip_fw_cmd") {
            let ty = LOADS[self.loads];
            let blob = PSP_BLOB + self.loads as u64 * 0x1000;
            self.loads += 1;
            self.vram_write(blob, &emu::pci::firmware::payload(ty, 64));
            put(8, psp::CMD_LOAD_IP_FW);
            put(28, blob as u32);
            put(32, (blob >> 32) as u32);
            put(36, 64);
            put(40, ty);
        } else {
            panic!("PSP ring submit from an unexpected step: {ctx}");
        }
        self.vram_write(cmd, &c);
        // psp_gfx_rb_frame: cmd_buf_addr lo/hi at 0/4, fence_addr lo/hi at 12/16, fence_value 20.
        let mut f = [0u8; 64];
        f[0..8].copy_from_slice(&cmd.to_le_bytes());
        f[12..20].copy_from_slice(&fence.to_le_bytes());
        f[20..24].copy_from_slice(&(n as u32 + 1).to_le_bytes());
        self.vram_write(ring + u64::from(self.psp_wptr) * 4, &f);
        self.psp_wptr = new_wptr;
    }

    fn psp_done(&self, n: u64) {
        let status = self.vram_read(PSP_CMD + n * 0x1000 + psp::RESP_STATUS, 4);
        assert_eq!(status, [0; 4], "PSP command {n} failed");
        let fence = self.vram_read(PSP_FENCE + n * 8, 4);
        assert_eq!(
            u32::from_le_bytes(fence.try_into().unwrap()),
            n as u32 + 1,
            "PSP fence {n}"
        );
    }

    fn mmio_w(&mut self, e: &Value) {
        let reg = hex(&e["reg"]) as u32;
        let v = hex(&e["val"]) as u32;
        let name = e["name"].as_str().unwrap_or("");
        let ctx = e["ctx"].as_str().unwrap_or("");
        if reg == 0 && name.is_empty() && ctx.ends_with("flush_hdp") {
            // README workaround 5: the flush goes to the address the remap register reported.
            self.reg_write(self.hdp_remap / 4, v);
            return;
        }
        match name {
            "regMPASP_SMN_C2PMSG_69" => self.psp_ring[0] = v,
            "regMPASP_SMN_C2PMSG_70" => self.psp_ring[1] = v,
            "regMPASP_SMN_C2PMSG_67" => self.psp_frame(ctx, v),
            _ => {}
        }
        self.reg_write(reg, v);
        if name == "regMPASP_SMN_C2PMSG_67" {
            self.psp_done(u64::from(v / 16) - 1);
        }
    }

    fn mmio_r(&mut self, e: &Value) {
        let reg = hex(&e["reg"]) as u32;
        let theirs = hex(&e["val"]) as u32;
        let name = e["name"].as_str().unwrap_or("?");
        let ours = self.reg_read(reg);
        if name == "regBIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL" {
            self.hdp_remap = ours;
            return; // The mock answers 0 (workaround 5); the device names its flush register.
        }
        if ours == theirs {
            return;
        }
        if let Some((n, _)) = ACCEPTED.iter().find(|(n, _)| *n == name) {
            *self.accepted.entry(n).or_default() += 1;
            return;
        }
        self.diffs.push(format!(
            "seq {} {name} ({reg:#x}): device {ours:#x}, tinygrad's mock {theirs:#x} [{}]",
            e["seq"],
            e["ctx"].as_str().unwrap_or("")
        ));
    }

    /// Writes one queue submission's packets into its ring (as tinygrad's CPU did).
    fn ring(&self, evs: &[Value], submit: &Value) {
        let id = &submit["submit"];
        let compute = submit["queue"] == "compute";
        let (base, start) = if compute {
            // CP_HQD_PQ_BASE: 0x20_0000_0000 << 8; the put offset is in dwords.
            (VA_BASE, submit["ring_put_dw_before"].as_u64().unwrap() * 4)
        } else {
            // SDMA0_QUEUE0_RB_BASE 0x20_0002_0000 << 8; the put offset is in bytes.
            (
                VA_BASE + 0x200_0000,
                submit["ring_put_bytes_before"].as_u64().unwrap(),
            )
        };
        let mut dw: Vec<u32> = Vec::new();
        for p in evs
            .iter()
            .filter(|p| &p["submit"] == id && (p["ev"] == "pm4" || p["ev"] == "sdma"))
        {
            if compute {
                dw.push(hex(&p["hdr"]) as u32);
                dw.extend(
                    p["payload"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| hex(x) as u32),
                );
            } else {
                dw.extend(
                    p["dwords"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| hex(x) as u32),
                );
            }
        }
        let ndw = submit["ndw"].as_u64().unwrap() as usize;
        assert_eq!(dw.len(), ndw, "submit {id}: packets vs ndw");
        let bytes: Vec<u8> = dw.iter().flat_map(|d| d.to_le_bytes()).collect();
        self.va_write(base + start, &bytes);
    }

    fn doorbell(&self, e: &Value) {
        let v = e["doorbell_value"].as_u64().unwrap();
        // Doorbell slots as programmed: CP_HQD_PQ_DOORBELL_CONTROL offset 6 dwords (8-byte slot
        // 3), SDMA0_QUEUE0_DOORBELL_OFFSET 0x200 dwords (slot 0x100); wptr poll copies as well.
        let (slot, poll) = if e["queue"] == "compute" {
            (3u64, VA_BASE + 0x100_0038)
        } else {
            (0x100, VA_BASE + 0x100_2038)
        };
        self.va_write(poll, &v.to_le_bytes());
        self.gpu.bar_write(2, slot * 8, &v.to_le_bytes()).unwrap();
    }
}

/// Replays `rec` and checks the bring-up handshakes, the firmware and SMU traffic, and the
/// add kernel's result; returns the device and the events for further checks.
fn replay(rec: &str) -> Option<(Replay, Vec<Value>)> {
    let evs = recording(rec)?;
    let info = evs.iter().find(|e| e["ev"] == "device_info").unwrap();
    let mut cfg = EmuPciConfig::navi44();
    cfg.vram_size = hex(&info["vram_size"]);
    cfg.bar0_size = cfg.vram_size;
    // tinygrad's mock GPU has its FB at MC 0 (FB_LOCATION_BASE read 0): PSP addresses are MC.
    cfg.mc_base = 0;
    let gpu = EmuPciGpu::new(cfg).expect("navi44 device");
    let mut r = Replay {
        gpu,
        diffs: Vec::new(),
        accepted: HashMap::new(),
        hdp_remap: 0,
        psp_ring: [0; 2],
        psp_wptr: 0,
        loads: 0,
    };
    r.page_tables();
    let program = evs.iter().find(|e| e["ev"] == "program").unwrap();
    let launch = evs.iter().find(|e| e["ev"] == "launch").unwrap();
    let elf = std::fs::read(
        testdata::shared(rec)
            .parent()
            .unwrap()
            .join(program["elf_file"].as_str().unwrap()),
    )
    .unwrap();
    assert_eq!(
        format!("{:x}", Sha256::digest(&elf)),
        program["elf_sha256"].as_str().unwrap(),
        "the code object is the one tinygrad compiled"
    );
    // tinygrad's loader lays the image out its own way (576 bytes: code at the entry, the
    // descriptor at +0x200; its bytes are not recorded, only their hash). The replay uploads an
    // image of that size with the kernel's code at the recorded entry offset; the dispatch reads
    // no descriptor (the PM4 stream programs COMPUTE_PGM_* itself).
    let co = traces::isa::codeobj::CodeObject::parse_loaded(&elf).unwrap();
    let k = co
        .kernels
        .iter()
        .find(|k| k.name == program["name"].as_str().unwrap())
        .unwrap();
    let code = co.kernel_code(k);
    let mut image = vec![0u8; program["image_size"].as_u64().unwrap() as usize];
    let entry = (hex(&program["entry_va"]) - hex(&program["load_va"])) as usize;
    assert!(
        entry + code.len()
            <= hex(&program["kernel_descriptor_va"]) as usize - hex(&program["load_va"]) as usize
    );
    image[entry..entry + code.len()].copy_from_slice(code);
    let mut sdma_copies = 0;
    for e in &evs {
        match e["ev"].as_str().unwrap() {
            "pci_cfg_w" => {
                let a = e["args"].as_array().unwrap();
                r.gpu.config_write(
                    hex(&e["offset"]) as u16,
                    hex(&a[1]) as u8,
                    hex(&a[0]) as u32,
                );
            }
            // Indirect accesses are recorded twice: as RSMU_INDEX/DATA traffic (replayed) and
            // as the logical register (skipped).
            "mmio_w" if e["indirect"] != true => r.mmio_w(e),
            "mmio_r" if e["indirect"] != true => r.mmio_r(e),
            "pm4_submit" | "sdma_submit" => r.ring(&evs, e),
            "sdma" if e["op"] == "COPY" => {
                // The staging data tinygrad's CPU wrote before each copy-in.
                let src = hex(&e["decoded"]["src"]);
                let n = e["decoded"]["bytes"].as_u64().unwrap() as usize;
                match sdma_copies {
                    0 => {
                        let input = launch["buffer_args"][1]["before_hex"].as_str().unwrap();
                        r.va_write(src, &bytes_of_hex(input)[..n]);
                    }
                    1 => {
                        assert_eq!(image.len(), n);
                        r.va_write(src, &image);
                    }
                    _ => {}
                }
                sdma_copies += 1;
            }
            "launch" => {
                let ka = bytes_of_hex(e["kernargs_hex"].as_str().unwrap());
                r.va_write(hex(&e["kernarg_va"]), &ka);
            }
            "doorbell" => r.doorbell(e),
            _ => {}
        }
    }
    assert!(
        r.diffs.is_empty(),
        "{} register reads differ from tinygrad's recording:\n{}",
        r.diffs.len(),
        r.diffs.join("\n")
    );
    eprintln!("accepted read differences: {:?}", r.accepted);
    let log = r.gpu.firmware_log();
    assert_eq!(log.bootloader.len(), 7, "{:x?}", log.bootloader);
    let mut cmds = vec![psp::CMD_LOAD_TOC];
    cmds.extend([psp::CMD_LOAD_IP_FW; 13]);
    cmds.push(psp::CMD_AUTOLOAD_RLC);
    assert_eq!(log.psp_cmds, cmds);
    let loaded: Vec<u32> = log.loaded.iter().map(|l| l.0).collect();
    assert_eq!(loaded, LOADS);
    let smu: Vec<u32> = log.smu_msgs.iter().map(|m| m.0).collect();
    let recorded: Vec<u32> = evs
        .iter()
        .filter(|e| e["ev"] == "smu_msg")
        .map(|e| hex(&e["msg"]) as u32)
        .collect();
    assert_eq!(smu, recorded, "the SMU saw tinygrad's messages");
    assert!(log.tlb_invalidations > 0 && log.hdp_flushes > 0);

    // The kernel ran on the device: the copy-out staging holds tinygrad's result.
    let result = evs.iter().find(|e| e["ev"] == "result").unwrap();
    let want: Vec<u8> = result["result"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|x| (x.as_i64().unwrap() as i32).to_le_bytes())
        .collect();
    let out = &launch["buffer_args"][0];
    let nbytes = out["param_nbytes"].as_u64().unwrap() as usize;
    assert_eq!(r.va_read(hex(&out["va"]), nbytes), want, "output buffer");
    let copyout = evs
        .iter()
        .filter(|e| e["ev"] == "sdma" && e["op"] == "COPY")
        .nth(2)
        .unwrap();
    assert_eq!(
        r.va_read(hex(&copyout["decoded"]["dst"]), nbytes),
        want,
        "copy-out staging"
    );
    // The whole output allocation equals tinygrad's after-image.
    let after = bytes_of_hex(out["after_hex"].as_str().unwrap());
    assert_eq!(r.va_read(hex(&out["va"]), after.len()), after);
    // The signal tinygrad waited on last holds the value of the last recorded SDMA fence.
    let last = evs
        .iter()
        .rfind(|e| e["ev"] == "sdma" && e["op"] == "FENCE")
        .unwrap();
    let sig = r.va_read(hex(&last["decoded"]["addr"]), 4);
    assert_eq!(
        u64::from(u32::from_le_bytes(sig.try_into().unwrap())),
        hex(&last["decoded"]["data"])
    );
    let pm4 = evs.iter().filter(|e| e["ev"] == "pm4").count() as u64;
    assert!(r.gpu.stats().pm4_packets >= pm4);
    Some((r, evs))
}

#[test]
fn tinygrads_gfx1200_bringup_and_add_run_on_the_emulated_gc12_device() {
    replay(REC);
}

#[test]
fn tinygrads_gfx1200_sqtt_capture_runs_and_traces_each_programmed_se() {
    let Some((r, evs)) = replay(REC_SQTT) else {
        return;
    };
    // Each SE tinygrad programmed (GRBM_GFX_INDEX se_index, then BUF0_BASE) got trace data.
    let mut bases = Vec::new();
    let mut lo = 0u64;
    for e in evs
        .iter()
        .filter(|e| e["ev"] == "pm4" && e["group"] == "sqtt_start")
    {
        for reg in e["regs"].as_array().into_iter().flatten() {
            match reg["name"].as_str().unwrap() {
                "regSQ_THREAD_TRACE_BUF0_BASE_LO" => lo = hex(&reg["val"]),
                "regSQ_THREAD_TRACE_BUF0_BASE_HI" => {
                    bases.push((hex(&reg["val"]) << 32 | lo) << 12)
                }
                _ => {}
            }
        }
    }
    assert_eq!(bases.len(), 2, "tinygrad traced 2 SEs");
    for (se, b) in bases.iter().enumerate() {
        let head = r.va_read(*b, 256);
        assert!(
            head.iter().any(|&x| x != 0),
            "SE {se}: no SQTT data at {b:#x}"
        );
    }
}
