//! The emulated ASM2464 bridge with the emulated PCI GPU behind it: the USB path's fake device.
//!
//! # Core API (transport-independent; a FunctionFS gadget uses the same core)
//!
//! ```text
//! let gpu = EmuPciGpu::new(EmuPciConfig::new(EmuArch::Gfx1100))?;   // crate::pci
//! let mut core: FakeAsm2464 = fake_bridge(gpu.clone(), Firmware::Custom);
//! // raw bytes in, raw bytes out (usb::device::BridgeCore):
//! core.handle(&Packet::Control { setup: [u8; 8], data: Vec<u8> }) -> Result<Vec<u8>, DeviceError>
//! core.handle(&Packet::BulkOut { ep: 0x02, stream: 0, data })      -> Ok(vec![])
//! core.handle(&Packet::BulkIn  { ep: 0x81, stream: 0, len })       -> Ok(data)
//! // or typed: core.control(&ControlSetup, &data), core.bulk_out(ep, stream, &data),
//! //           core.bulk_in(ep, stream, len)
//! // Err(DeviceError::Stall/Refused) = STALL the endpoint; Err(NotReady) = NAK (no data yet).
//! ```
//! In-process, [`fake_transport`] wraps the core as a [`usb::UsbTransport`] (clones share the
//! device, so a test can keep one to inspect it).
//!
//! What is modelled: [`usb::device::BridgeCore`] decodes both firmwares' requests (vendor
//! control requests; UAS command IUs with E4/E5/8A CDBs), keeps the XDATA registers, the stock
//! TLP engine and the chip's internal PCIe bridges on buses 0..3. [`EmuGpuEndpoint`] puts the
//! GPU on bus 4 as a real PCIe function would appear: BAR registers that size and decode
//! (BAR0 VRAM 64-bit prefetchable behind a Resizable BAR capability at 0x100, BAR2 doorbells,
//! BAR5 registers), memory decoding gated by the COMMAND register, 64-bit doorbells written as
//! two dwords (firing on the low one). The DMA windows (bus 0x200000 SRAM 512 KiB, 0x820000
//! system buffer 4 KiB, 0x822000 completion page, 0x800000) are regions of the GPU's own
//! system memory ([`GpuWindows`]), so what the GPU DMAs there is what the host reads through
//! XDATA and the reverse. The GPU runs when its doorbell is written and whenever the host
//! polls (any read request).

use ::usb::device::{BridgeCore, CoreTransport, PcieEndpoint, WindowMemory, WINDOWS};
use ::usb::{CplStatus, Firmware};

use crate::pci::EmuPciGpu;
use runtime::pci::{BAR_DOORBELL, BAR_MMIO, BAR_VRAM};

/// The fake bridge device with the emulated GPU behind it.
pub type FakeAsm2464 = BridgeCore<EmuGpuEndpoint>;

/// Resizable-BAR sizes the emulated GPU offers for BAR0 (index i = 1 MiB << i).
const REBAR_MIN_IDX: u32 = 8; // 256 MiB

struct BarReg {
    index: u8,
    size: u64,
    is64: bool,
    pref: bool,
    base: u64,
}

/// The emulated GPU as the PCIe function on bus 4.
pub struct EmuGpuEndpoint {
    pub gpu: EmuPciGpu,
    bars: Vec<BarReg>,
    /// REBAR control size index of BAR0.
    rebar_idx: u32,
    rebar_max: u32,
    doorbells: Vec<u8>,
}

impl EmuGpuEndpoint {
    pub fn new(gpu: EmuPciGpu) -> Self {
        let vram = gpu.bar_len(BAR_VRAM).max(1 << 20);
        let rebar_max = vram.ilog2().saturating_sub(20);
        let bars = vec![
            BarReg {
                index: BAR_VRAM,
                // Boots at the smallest offered size; REBAR grows it.
                size: 1 << (20 + REBAR_MIN_IDX.min(rebar_max)),
                is64: true,
                pref: true,
                base: 0,
            },
            BarReg {
                index: BAR_DOORBELL,
                size: gpu.bar_len(BAR_DOORBELL),
                is64: false,
                pref: false,
                base: 0,
            },
            BarReg {
                index: BAR_MMIO,
                size: gpu.bar_len(BAR_MMIO),
                is64: false,
                pref: false,
                base: 0,
            },
        ];
        let doorbells = vec![0; gpu.bar_len(BAR_DOORBELL) as usize];
        EmuGpuEndpoint {
            gpu,
            bars,
            rebar_idx: REBAR_MIN_IDX.min(rebar_max),
            rebar_max,
            doorbells,
        }
    }

    fn flags(b: &BarReg) -> u32 {
        (if b.is64 { 4 } else { 0 }) | (if b.pref { 8 } else { 0 })
    }

    /// (bar, offset) of a bus address, when memory decoding is on.
    fn decode(&self, addr: u64, len: usize) -> Option<(u8, u64)> {
        if self.gpu.config_read(4, 2) & 2 == 0 {
            return None;
        }
        self.bars.iter().find_map(|b| {
            (b.base != 0 && addr >= b.base && addr + len as u64 <= b.base + b.size)
                .then(|| (b.index, addr - b.base))
        })
    }

    fn write_doorbells(&mut self, off: u64, data: &[u8]) -> Result<(), CplStatus> {
        for (i, w) in data.chunks(4).enumerate() {
            let o = off as usize + 4 * i;
            let end = (o + w.len()).min(self.doorbells.len());
            if o >= end {
                return Err(CplStatus::UnsupportedRequest);
            }
            self.doorbells[o..end].copy_from_slice(&w[..end - o]);
            if o.is_multiple_of(8) && o + 8 <= self.doorbells.len() {
                let v = self.doorbells[o..o + 8].to_vec();
                self.gpu
                    .bar_write(BAR_DOORBELL, o as u64, &v)
                    .map_err(|_| CplStatus::CompleterAbort)?;
            }
        }
        Ok(())
    }
}

impl PcieEndpoint for EmuGpuEndpoint {
    fn cfg_read(&mut self, reg: u16) -> u32 {
        match reg {
            0x10..=0x27 => {
                for b in &self.bars {
                    let lo = 0x10 + 4 * u16::from(b.index);
                    if reg == lo {
                        return (b.base as u32 & !0xF) | Self::flags(b);
                    }
                    if b.is64 && reg == lo + 4 {
                        return (b.base >> 32) as u32;
                    }
                }
                0
            }
            // Resizable BAR extended capability (id 0x15, version 1, last in the list).
            0x100 => 0x0001_0015,
            0x104 => ((1u32 << (self.rebar_max + 1)) - (1u32 << REBAR_MIN_IDX)) << 4,
            0x108 => (self.rebar_idx << 8) | u32::from(BAR_VRAM),
            r if r < 0x100 => self.gpu.config_read(r, 4),
            _ => 0,
        }
    }

    fn cfg_write(&mut self, reg: u16, value: u32, be: u8) {
        let merge = |old: u32| {
            (0..4).fold(old, |v, i| {
                if be & (1 << i) != 0 {
                    (v & !(0xFF << (8 * i))) | (value & (0xFF << (8 * i)))
                } else {
                    v
                }
            })
        };
        match reg {
            0x10..=0x27 => {
                let v = merge(self.cfg_read(reg));
                for b in &mut self.bars {
                    let lo = 0x10 + 4 * u16::from(b.index);
                    if reg == lo {
                        let keep = b.base & !0xFFFF_FFFF;
                        b.base = keep | u64::from(v & !0xF & !((b.size as u32).wrapping_sub(1)));
                    } else if b.is64 && reg == lo + 4 {
                        let hi = u64::from(v) & !((b.size - 1) >> 32);
                        b.base = (b.base & 0xFFFF_FFFF) | hi << 32;
                    }
                }
            }
            0x108 => {
                let v = merge(self.cfg_read(reg));
                let idx = (v >> 8) & 0x1F;
                if (REBAR_MIN_IDX..=self.rebar_max).contains(&idx) {
                    self.rebar_idx = idx;
                    if let Some(b) = self.bars.iter_mut().find(|b| b.index == BAR_VRAM) {
                        b.size = 1 << (20 + idx);
                        b.base &= !(b.size - 1);
                    }
                }
            }
            r if r < 0x100 => {
                // The plain API takes (offset, len): write each enabled byte run.
                for i in 0..4u16 {
                    if be & (1 << i) != 0 {
                        self.gpu.config_write(r + i, 1, (value >> (8 * i)) & 0xFF);
                    }
                }
            }
            _ => {}
        }
    }

    fn mem_read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), CplStatus> {
        let (bar, off) = self
            .decode(addr, out.len())
            .ok_or(CplStatus::UnsupportedRequest)?;
        if bar == BAR_DOORBELL {
            let o = off as usize;
            out.copy_from_slice(&self.doorbells[o..o + out.len()]);
            return Ok(());
        }
        self.gpu
            .bar_read(bar, off, out)
            .map_err(|_| CplStatus::CompleterAbort)
    }

    fn mem_write(&mut self, addr: u64, data: &[u8], first_be: u8) -> Result<(), CplStatus> {
        let (bar, off) = self
            .decode(addr, data.len())
            .ok_or(CplStatus::UnsupportedRequest)?;
        if first_be != 0xF && data.len() == 4 {
            // A partial dword: merge with what is there.
            let mut cur = [0u8; 4];
            self.mem_read(addr, &mut cur)?;
            for i in 0..4 {
                if first_be & (1 << i) != 0 {
                    cur[i] = data[i];
                }
            }
            return if bar == BAR_DOORBELL {
                self.write_doorbells(off, &cur)
            } else {
                self.gpu
                    .bar_write(bar, off, &cur)
                    .map_err(|_| CplStatus::CompleterAbort)
            };
        }
        if bar == BAR_DOORBELL {
            return self.write_doorbells(off, data);
        }
        self.gpu
            .bar_write(bar, off, data)
            .map_err(|_| CplStatus::CompleterAbort)
    }

    fn poll(&mut self) {
        // Pending queue work runs while the host waits; there is no MSI over USB.
        self.gpu.wait_interrupt();
    }
}

/// The bridge's windows as regions of the GPU's system memory (GPU DMA and host XDATA/F2
/// access meet there).
pub struct GpuWindows {
    gpu: EmuPciGpu,
}

impl WindowMemory for GpuWindows {
    fn read(&mut self, bus: u64, out: &mut [u8]) -> bool {
        self.gpu.dma_read(bus, out)
    }
    fn write(&mut self, bus: u64, data: &[u8]) -> bool {
        self.gpu.dma_write(bus, data)
    }
}

/// A fake bridge speaking `fw`'s protocol with `gpu` on bus 4.
pub fn fake_bridge(gpu: EmuPciGpu, fw: Firmware) -> FakeAsm2464 {
    for &(bus, len, _) in WINDOWS {
        // Page-granular regions; the 0x200-byte window gets a page.
        gpu.add_dma_region(bus, len.div_ceil(0x1000) * 0x1000);
    }
    let mem = Box::new(GpuWindows { gpu: gpu.clone() });
    BridgeCore::with_memory(fw, EmuGpuEndpoint::new(gpu), mem)
}

/// The fake bridge as an in-process [`usb::UsbTransport`].
pub fn fake_transport(gpu: EmuPciGpu, fw: Firmware) -> CoreTransport<EmuGpuEndpoint> {
    CoreTransport::new(fake_bridge(gpu, fw))
}
