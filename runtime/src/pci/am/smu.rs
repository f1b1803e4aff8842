//! SMU, the power-management firmware (pci-am-interface.md §1.6 SMU, SMU 13.0.0 message ids):
//! mailbox = message C2PMSG_66, argument C2PMSG_82, response C2PMSG_90.

use std::time::{Duration, Instant};

use super::gmc::Gmc;
use super::{regs, RegIo};
use crate::pci::{PciError, PciResult};

pub const MSG_GET_SMU_VERSION: u32 = 0x02;
pub const MSG_ENABLE_ALL_FEATURES: u32 = 0x06;
pub const MSG_SET_DRIVER_DRAM_ADDR_HIGH: u32 = 0x0E;
pub const MSG_SET_DRIVER_DRAM_ADDR_LOW: u32 = 0x0F;
pub const MSG_SET_SOFT_MIN_BY_FREQ: u32 = 0x19;
pub const MSG_SET_SOFT_MAX_BY_FREQ: u32 = 0x1A;
pub const MSG_GET_DPM_FREQ_BY_INDEX: u32 = 0x1F;
pub const MSG_MODE1_RESET: u32 = 0x2F;
pub const DRIVER_TABLE_SIZE: u64 = 16 << 10;

/// Clock domains: GFXCLK, SOCCLK, UCLK, FCLK.
pub const CLOCKS: [u32; 4] = [0, 1, 2, 3];

fn name_of(msg: u32) -> String {
    match msg {
        MSG_GET_SMU_VERSION => "GetSmuVersion".into(),
        MSG_ENABLE_ALL_FEATURES => "EnableAllSmuFeatures".into(),
        MSG_SET_DRIVER_DRAM_ADDR_HIGH => "SetDriverDramAddrHigh".into(),
        MSG_SET_DRIVER_DRAM_ADDR_LOW => "SetDriverDramAddrLow".into(),
        MSG_SET_SOFT_MIN_BY_FREQ => "SetSoftMinByFreq".into(),
        MSG_SET_SOFT_MAX_BY_FREQ => "SetSoftMaxByFreq".into(),
        MSG_GET_DPM_FREQ_BY_INDEX => "GetDpmFreqByIndex".into(),
        MSG_MODE1_RESET => "Mode1Reset".into(),
        m => format!("message {m:#x}"),
    }
}

/// Sends one message and returns the argument register read back.
pub fn send(r: &RegIo, msg: u32, arg: u32, timeout_ms: u64) -> PciResult<u32> {
    r.write(regs::MP1_SMN_C2PMSG_90, 0)?;
    r.write(regs::MP1_SMN_C2PMSG_82, arg)?;
    r.write(regs::MP1_SMN_C2PMSG_66, msg)?;
    let t0 = Instant::now();
    loop {
        let resp = r.read(regs::MP1_SMN_C2PMSG_90)?;
        if resp == 1 {
            let back = r.read(regs::MP1_SMN_C2PMSG_82)?;
            if let Some(t) = &r.tap {
                t.event(serde_json::json!({
                    "ev": "smu_msg", "msg": format!("{msg:#x}"),
                    "msg_name": format!("PPSMC_MSG_{}", name_of(msg)),
                    "param": format!("{arg:#x}"), "read_back": format!("{back:#x}"),
                }));
            }
            return Ok(back);
        }
        if resp != 0 {
            return Err(PciError::Rejected {
                block: "SMU",
                what: name_of(msg),
                status: resp,
            });
        }
        if t0.elapsed() > Duration::from_millis(timeout_ms) {
            return Err(PciError::Timeout {
                block: "SMU",
                what: format!("a response to {}", name_of(msg)),
                reg: regs::MP1_SMN_C2PMSG_90.name,
                value: resp,
                ms: timeout_ms,
            });
        }
        std::thread::sleep(Duration::from_micros(50));
    }
}

/// GetSmuVersion with a short timeout: does the SMU answer at all?
pub fn alive(r: &RegIo, timeout_ms: u64) -> PciResult<bool> {
    match send(r, MSG_GET_SMU_VERSION, 0, timeout_ms) {
        Ok(_) => Ok(r.read(regs::MP1_SMN_C2PMSG_90)? != 0),
        Err(PciError::Timeout { .. }) | Err(PciError::Rejected { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

#[derive(Default)]
pub struct Smu {
    pub table: u64,
    /// (clock, max MHz) found at init.
    pub max_freq: Vec<(u32, u32)>,
    pub min_freq: Vec<(u32, u32)>,
}

impl Smu {
    /// The driver table in boot VRAM (repeated by a partial boot).
    pub fn alloc(&mut self, gmc: &mut Gmc) -> PciResult<()> {
        self.table = gmc.palloc(DRIVER_TABLE_SIZE, 0x1000)?;
        Ok(())
    }

    pub fn init(&mut self, r: &RegIo, gmc: &mut Gmc, t: u64) -> PciResult<()> {
        self.alloc(gmc)?;
        let mc = gmc.mc(self.table);
        send(r, MSG_SET_DRIVER_DRAM_ADDR_HIGH, (mc >> 32) as u32, t)?;
        send(r, MSG_SET_DRIVER_DRAM_ADDR_LOW, mc as u32, t)?;
        send(r, MSG_ENABLE_ALL_FEATURES, 0, t)?;
        Ok(())
    }

    /// Soft min/max of every clock to its highest (`max`) or lowest DPM level.
    pub fn set_clocks(&mut self, r: &RegIo, max: bool, t: u64) -> PciResult<()> {
        for clk in CLOCKS {
            let levels = send(r, MSG_GET_DPM_FREQ_BY_INDEX, clk << 16 | 0xFF, t)?;
            let level = if max { levels.saturating_sub(1) } else { 0 };
            let mhz = send(r, MSG_GET_DPM_FREQ_BY_INDEX, clk << 16 | level, t)?;
            send(r, MSG_SET_SOFT_MAX_BY_FREQ, clk << 16 | (mhz & 0xFFFF), t)?;
            send(r, MSG_SET_SOFT_MIN_BY_FREQ, clk << 16 | (mhz & 0xFFFF), t)?;
            if max {
                self.max_freq.push((clk, mhz));
            } else {
                self.min_freq.push((clk, mhz));
            }
        }
        Ok(())
    }
}
