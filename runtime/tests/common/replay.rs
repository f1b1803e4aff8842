//! A replay PCI device for the driverless path, built from one of tinygrad's AM recordings
//! (`../shared/conformance/tinygrad/pci_*.jsonl`) and independent of our emulator: BAR5 answers
//! each register read with the values tinygrad's mock returned for that register, in order (the
//! last one again once they run out, as a poll sees it), and records every write; BAR0 is plain
//! memory holding a discovery table made from the recording's `device_info`; BAR2 is plain
//! memory. The one piece of device behaviour it adds is the PSP's: a ring write pointer moved
//! through C2PMSG_67 gets its frame's fence value written back, as the mock's PSP does, since
//! the driver waits on that fence in VRAM and no recorded read can answer it.

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use runtime::pci::am::discovery::{checksum, hw_id, BINARY_SIGNATURE, IPDS_SIGNATURE};
use runtime::pci::am::{regs, AmIp};
use runtime::pci::{PciDevice, PciError, PciResult, SysMem, BAR_DOORBELL, BAR_MMIO, BAR_VRAM};
use runtime::platform::{Mmio, MmioError};
use serde_json::Value;

/// BAR5 size: registers beyond it go through RSMU_INDEX/DATA (tinygrad: `len(self.mmio)`).
pub const MMIO_BYTES: u64 = 512 << 10;
pub const DOORBELL_BYTES: u64 = 8 << 20;

pub fn hexnum(v: &Value) -> u64 {
    match v {
        Value::String(s) => u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or(0),
        Value::Number(n) => n.as_u64().unwrap_or(0),
        _ => 0,
    }
}

/// Plain memory as a BAR.
pub struct Mem {
    buf: Mutex<Vec<u8>>,
    addr: u64,
}

impl Mem {
    pub fn new(size: u64, addr: u64) -> Self {
        Mem {
            buf: Mutex::new(vec![0u8; size as usize]),
            addr,
        }
    }
}

impl Mmio for Mem {
    fn addr(&self) -> u64 {
        self.addr
    }
    fn size(&self) -> u64 {
        self.buf.lock().unwrap().len() as u64
    }
    fn read_bytes(&self, offset: u64, out: &mut [u8]) -> Result<(), MmioError> {
        let b = self.buf.lock().unwrap();
        let o = offset as usize;
        let s = b.get(o..o + out.len()).ok_or(MmioError {
            base: 0,
            offset,
            len: out.len() as u64,
            size: b.len() as u64,
        })?;
        out.copy_from_slice(s);
        Ok(())
    }
    fn write_bytes(&self, offset: u64, data: &[u8]) -> Result<(), MmioError> {
        let mut b = self.buf.lock().unwrap();
        let size = b.len() as u64;
        let o = offset as usize;
        let s = b.get_mut(o..o + data.len()).ok_or(MmioError {
            base: 0,
            offset,
            len: data.len() as u64,
            size,
        })?;
        s.copy_from_slice(data);
        Ok(())
    }
}

/// Recorded read values per absolute dword register address.
#[derive(Default)]
struct Reads {
    q: HashMap<u32, (VecDeque<u32>, u32)>,
}

impl Reads {
    fn next(&mut self, reg: u32) -> u32 {
        match self.q.get_mut(&reg) {
            Some((q, last)) => {
                if let Some(v) = q.pop_front() {
                    *last = v;
                }
                *last
            }
            None => 0,
        }
    }
}

/// The register BAR of the replay.
pub struct ReplayMmio {
    reads: Mutex<Reads>,
    /// Our writes, in order: (absolute dword address, value).
    pub writes: Mutex<Vec<(u32, u32)>>,
    rsmu: (u32, u32),
    rsmu_index: Mutex<u32>,
    /// PSP mailbox: C2PMSG_67 (ring write pointer), 69/70 (ring MC address).
    psp: (u32, u32, u32),
    vram: Arc<Mem>,
    /// MC address of VRAM offset 0.
    mc_base: u64,
}

impl ReplayMmio {
    fn read_reg(&self, reg: u32) -> u32 {
        self.reads.lock().unwrap().next(reg)
    }
    fn write_reg(&self, reg: u32, v: u32) {
        self.writes.lock().unwrap().push((reg, v));
        if reg == self.psp.0 {
            self.psp_fence(v);
        }
    }
    fn last_write(&self, reg: u32) -> u32 {
        let w = self.writes.lock().unwrap();
        w.iter().rev().find(|(r, _)| *r == reg).map_or(0, |x| x.1)
    }
    /// The frame just queued (16 dwords before the new write pointer): its fence value goes to
    /// its fence address (psp_gfx_rb_frame: fence_addr_lo/hi at dwords 3/4, value at 5).
    fn psp_fence(&self, wptr: u32) {
        let ring =
            u64::from(self.last_write(self.psp.1)) | u64::from(self.last_write(self.psp.2)) << 32;
        let ring = ring.wrapping_sub(self.mc_base);
        let frame = ring + u64::from(wptr.wrapping_sub(16)) * 4 % (64 << 10);
        let rd = |i: u64| self.vram.read32(frame + 4 * i).unwrap_or(0);
        let fence = (u64::from(rd(3)) | u64::from(rd(4)) << 32).wrapping_sub(self.mc_base);
        let _ = self.vram.write32(fence, rd(5));
    }
}

impl Mmio for ReplayMmio {
    fn addr(&self) -> u64 {
        0
    }
    fn size(&self) -> u64 {
        MMIO_BYTES
    }
    fn read_bytes(&self, offset: u64, out: &mut [u8]) -> Result<(), MmioError> {
        if out.len() != 4 || !offset.is_multiple_of(4) || offset + 4 > MMIO_BYTES {
            return Err(MmioError {
                base: 0,
                offset,
                len: out.len() as u64,
                size: MMIO_BYTES,
            });
        }
        let reg = (offset / 4) as u32;
        let v = if reg == self.rsmu.1 {
            let target = *self.rsmu_index.lock().unwrap() / 4;
            self.read_reg(target)
        } else {
            self.read_reg(reg)
        };
        out.copy_from_slice(&v.to_le_bytes());
        Ok(())
    }
    fn write_bytes(&self, offset: u64, data: &[u8]) -> Result<(), MmioError> {
        if data.len() != 4 || !offset.is_multiple_of(4) || offset + 4 > MMIO_BYTES {
            return Err(MmioError {
                base: 0,
                offset,
                len: data.len() as u64,
                size: MMIO_BYTES,
            });
        }
        let reg = (offset / 4) as u32;
        let v = u32::from_le_bytes(data.try_into().unwrap());
        if reg == self.rsmu.0 {
            *self.rsmu_index.lock().unwrap() = v;
        } else if reg == self.rsmu.1 {
            let target = *self.rsmu_index.lock().unwrap() / 4;
            self.write_reg(target, v);
        } else {
            self.write_reg(reg, v);
        }
        Ok(())
    }
}

/// tinygrad's HWIP numbers of the blocks (its `am_regs_offset` / `am_hwip_numbers` keys) and
/// the `am_ip_versions` names.
pub fn hwip(ip: AmIp) -> (&'static str, &'static str) {
    match ip {
        AmIp::Gc => ("1", "GC"),
        AmIp::Hdp => ("2", "HDP"),
        AmIp::Sdma0 => ("3", "SDMA0"),
        AmIp::Mmhub => ("12", "MMHUB"),
        AmIp::Nbio => ("14", "NBIF"),
        AmIp::Mp0 => ("15", "MP0"),
        AmIp::Mp1 => ("16", "MP1"),
        AmIp::Osssys => ("23", "OSSSYS"),
    }
}

/// (version, bases) of each block in the recording's `device_info`.
/// A block as the recording describes it: (block, version, register segment bases).
pub type IpDesc = (AmIp, (u32, u32, u32), Vec<u32>);

pub fn ips(info: &Value) -> Vec<IpDesc> {
    runtime::pci::am::ALL_IPS
        .iter()
        .map(|&ip| {
            let (num, name) = hwip(ip);
            let v: Vec<u32> = info["am_ip_versions"][name]
                .as_array()
                .unwrap_or_else(|| panic!("{name} in am_ip_versions"))
                .iter()
                .map(|x| x.as_u64().unwrap() as u32)
                .collect();
            let bases: Vec<u32> = info["am_regs_offset"][num]["0"]
                .as_array()
                .unwrap_or_else(|| panic!("HWIP {num} in am_regs_offset"))
                .iter()
                .map(|b| hexnum(b) as u32)
                .collect();
            (ip, (v[0], v[1], v[2]), bases)
        })
        .collect()
}

/// A discovery binary (the layout `Discovery::parse` reads: binary header, IP discovery table
/// with one die, GC info) for the recording's IP versions, bases and GC info.
pub fn discovery_table(info: &Value) -> Vec<u8> {
    let mut b = vec![0u8; runtime::pci::am::discovery::TABLE_SIZE];
    let put16 =
        |b: &mut Vec<u8>, at: usize, v: u16| b[at..at + 2].copy_from_slice(&v.to_le_bytes());
    let put32 =
        |b: &mut Vec<u8>, at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
    let (ipo, die, gco, size) = (0x40usize, 0x100usize, 0x800usize, 0x900usize);
    put32(&mut b, 0, BINARY_SIGNATURE);
    put16(&mut b, 10, size as u16);
    // Table list: IP discovery, GC info.
    put16(&mut b, 12, ipo as u16);
    put16(&mut b, 20, gco as u16);
    put32(&mut b, ipo, IPDS_SIGNATURE);
    put16(&mut b, ipo + 12, 1); // one die
    put16(&mut b, ipo + 14 + 2, die as u16);
    let list = ips(info);
    put16(&mut b, die + 2, list.len() as u16);
    let mut at = die + 4;
    for (ip, v, bases) in &list {
        put16(&mut b, at, hw_id(*ip));
        b[at + 2] = 0;
        b[at + 3] = bases.len() as u8;
        b[at + 4] = v.0 as u8;
        b[at + 5] = v.1 as u8;
        b[at + 6] = v.2 as u8;
        at += 8;
        for base in bases {
            put32(&mut b, at, *base);
            at += 4;
        }
    }
    let ipsize = at - ipo;
    put16(&mut b, ipo + 6, ipsize as u16);
    let g = &info["gc_info"];
    let n = |k: &str| g[k].as_u64().unwrap_or(0) as u32;
    // num_se, WGPs per array (2 CUs each), wave size, waves/SIMD, scratch slots, LDS, arrays/SE.
    for (i, v) in [
        (0, n("gc_num_se")),
        (1, n("gc_num_cu_per_sh") / 2),
        (11, n("gc_wave_size")),
        (12, n("gc_max_waves_per_simd")),
        (13, n("gc_max_scratch_slots_per_cu")),
        (14, n("gc_lds_size")),
        (16, n("gc_num_sh_per_se")),
    ] {
        put32(&mut b, gco + 12 + 4 * i, v);
    }
    let ipsum = checksum(&b[ipo..ipo + ipsize]);
    put16(&mut b, 14, ipsum);
    let sum = checksum(&b[10..size]);
    put16(&mut b, 8, sum);
    b
}

/// The replay GPU.
pub struct ReplayPci {
    pub mmio: Arc<ReplayMmio>,
    pub vram: Arc<Mem>,
    pub doorbells: Arc<Mem>,
    sysmem_next: Mutex<u64>,
}

impl ReplayPci {
    /// From a recording's events: its register reads, its VRAM size and discovery data.
    pub fn new(evs: &[Value]) -> Self {
        let info = evs
            .iter()
            .find(|e| e["ev"] == "device_info")
            .expect("the recording has device_info");
        let vram_size = hexnum(&info["vram_size"]);
        let vram = Arc::new(Mem::new(vram_size, 0));
        let table = discovery_table(info);
        vram.write_bytes(
            vram_size - runtime::pci::am::discovery::TABLE_FROM_END,
            &table,
        )
        .unwrap();
        let base = |ip: AmIp| -> Vec<u32> {
            ips(info)
                .into_iter()
                .find(|x| x.0 == ip)
                .map(|x| x.2)
                .unwrap()
        };
        // Absolute addresses of the registers the replay itself needs (GC 12 / NBIF tables).
        let at = |r: runtime::pci::am::AmReg| -> u32 {
            let d = r.at[1].expect("GC 12 placement");
            base(r.ip)[usize::from(d.base_index)] + d.offset
        };
        let mut reads = Reads::default();
        for e in evs.iter().filter(|e| e["ev"] == "mmio_r") {
            let reg = hexnum(&e["reg"]) as u32;
            let v = hexnum(&e["val"]) as u32;
            let ent = reads.q.entry(reg).or_insert_with(|| (VecDeque::new(), 0));
            ent.0.push_back(v);
        }
        let fb = evs
            .iter()
            .find(|e| e["ev"] == "mmio_r" && e["name"] == "regMMMC_VM_FB_LOCATION_BASE")
            .map_or(0, |e| hexnum(&e["val"]));
        let mmio = Arc::new(ReplayMmio {
            reads: Mutex::new(reads),
            writes: Mutex::new(Vec::new()),
            rsmu: (
                at(regs::BIF_BX_PF0_RSMU_INDEX),
                at(regs::BIF_BX_PF0_RSMU_DATA),
            ),
            rsmu_index: Mutex::new(0),
            psp: (
                at(regs::MP0_SMN_C2PMSG_67),
                at(regs::MP0_SMN_C2PMSG_69),
                at(regs::MP0_SMN_C2PMSG_70),
            ),
            vram: vram.clone(),
            mc_base: (fb & 0xFF_FFFF) << 24,
        });
        ReplayPci {
            mmio,
            vram,
            doorbells: Arc::new(Mem::new(DOORBELL_BYTES, 0)),
            sysmem_next: Mutex::new(1 << 40),
        }
    }
}

impl PciDevice for ReplayPci {
    fn bus_id(&self) -> String {
        "replay:tinygrad".into()
    }
    fn config_read(&self, offset: u16, _len: u8) -> PciResult<u32> {
        Ok(match offset {
            0 => 0x1002,
            2 => 0x7551,
            _ => 0,
        })
    }
    fn config_write(&self, _offset: u16, _len: u8, _value: u32) -> PciResult<()> {
        Ok(())
    }
    fn bar_len(&self, bar: u8) -> u64 {
        match bar {
            BAR_VRAM => self.vram.size(),
            BAR_DOORBELL => DOORBELL_BYTES,
            BAR_MMIO => MMIO_BYTES,
            _ => 0,
        }
    }
    fn bar(&self, bar: u8) -> PciResult<Arc<dyn Mmio>> {
        match bar {
            BAR_VRAM => Ok(self.vram.clone()),
            BAR_DOORBELL => Ok(self.doorbells.clone()),
            BAR_MMIO => Ok(self.mmio.clone()),
            _ => Err(PciError::NoDevice {
                detail: format!("replay has no BAR {bar}"),
            }),
        }
    }
    fn alloc_sysmem(&self, size: u64) -> PciResult<SysMem> {
        let pages = size.div_ceil(0x1000);
        let mut next = self.sysmem_next.lock().unwrap();
        let first = *next;
        *next += pages * 0x1000;
        Ok(SysMem {
            cpu: Arc::new(Mem::new(pages * 0x1000, first)),
            pages: (0..pages).map(|i| first + i * 0x1000).collect(),
        })
    }
    fn free_sysmem(&self, _mem: &SysMem) {}
    fn wait_interrupt(&self, _timeout_ms: u32) -> PciResult<bool> {
        Ok(false)
    }
}

/// A GC 12 firmware set with valid headers and small payloads (the real files are not needed
/// to replay the register traffic): the PSP SOS components and TOC, SMU, SDMA v3, the RS64
/// PFP/ME/MEC with gfx v2 headers (program start 0x7_0000_0000_3000, as in the recording),
/// IMU, and RLC v2.2.
pub fn gc12_firmware() -> HashMap<String, Vec<u8>> {
    fn common(major: u16, minor: u16, hdr: usize, payload: usize) -> Vec<u8> {
        let mut b = vec![0u8; hdr + payload];
        let n = b.len() as u32;
        b[0..4].copy_from_slice(&n.to_le_bytes());
        b[4..8].copy_from_slice(&(hdr as u32).to_le_bytes());
        b[8..10].copy_from_slice(&major.to_le_bytes());
        b[10..12].copy_from_slice(&minor.to_le_bytes());
        b[20..24].copy_from_slice(&(payload as u32).to_le_bytes());
        b[24..28].copy_from_slice(&(hdr as u32).to_le_bytes());
        for (i, x) in b[hdr..].iter_mut().enumerate() {
            *x = (i % 251) as u8;
        }
        b
    }
    let put = |b: &mut Vec<u8>, at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
    let mut m = HashMap::new();
    // SOS: 8 descriptors of 0x100 bytes: KDB, SPL, SYS_DRV, SOC_DRV, INTF_DRV, DBG_DRV, SOS, TOC.
    let types = [3u32, 5, 2, 7, 8, 9, 1, 4];
    let mut sos = common(2, 0, 0x100, 0x100 * types.len());
    put(&mut sos, 32, types.len() as u32);
    for (i, t) in types.iter().enumerate() {
        let at = 36 + 16 * i;
        put(&mut sos, at, *t);
        put(&mut sos, at + 8, 0x100 * i as u32);
        put(&mut sos, at + 12, 0x100);
    }
    m.insert("psp_14_0_2_sos.bin".into(), sos);
    m.insert("smu_14_0_2.bin".into(), common(1, 0, 0x100, 0x400));
    let mut sdma = common(3, 0, 0x100, 0x400);
    put(&mut sdma, 40, 0x400);
    m.insert("sdma_7_0_0.bin".into(), sdma);
    for n in ["pfp", "me", "mec"] {
        let mut g = common(2, 0, 0x100, 0x800);
        put(&mut g, 36, 0x400);
        put(&mut g, 40, 0x100);
        put(&mut g, 44, 0x400);
        put(&mut g, 48, 0x500);
        put(&mut g, 52, 0x3000);
        put(&mut g, 56, 0x7);
        m.insert(format!("gc_12_0_0_{n}.bin"), g);
    }
    let mut imu = common(1, 0, 0x100, 0x800);
    put(&mut imu, 32, 0x400);
    put(&mut imu, 40, 0x400);
    m.insert("gc_12_0_0_imu.bin".into(), imu);
    let mut rlc = common(2, 2, 0x100, 0xC00);
    put(&mut rlc, 20, 0x400);
    put(&mut rlc, 156, 0x400);
    put(&mut rlc, 160, 0x500);
    put(&mut rlc, 164, 0x400);
    put(&mut rlc, 168, 0x900);
    m.insert("gc_12_0_0_rlc.bin".into(), rlc);
    m
}
