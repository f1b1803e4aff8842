//! Bus setup behind the bridge (usb-asm24.md §5, tinygrad `setup_pci_bars`): program the chip's
//! internal bridges on buses 0..gpu_bus-1, enlarge the endpoint's resizable BAR, size every
//! memory BAR by writing all-ones, and assign addresses from a prefetchable and a
//! non-prefetchable pool.

use std::collections::BTreeMap;

use crate::controller::Asm24;
use crate::error::{Result, UsbError};
use crate::pcie::Bdf;

pub mod cfg {
    pub const VENDOR_ID: u16 = 0x00;
    pub const DEVICE_ID: u16 = 0x02;
    pub const COMMAND: u16 = 0x04;
    pub const HEADER_TYPE: u16 = 0x0E;
    pub const BAR0: u16 = 0x10;
    pub const PRIMARY_BUS: u16 = 0x18;
    pub const MEMORY_BASE: u16 = 0x20;
    pub const MEMORY_LIMIT: u16 = 0x22;
    pub const PREF_MEMORY_BASE: u16 = 0x24;
    pub const PREF_MEMORY_LIMIT: u16 = 0x26;
    pub const PREF_BASE_UPPER32: u16 = 0x28;
    pub const PREF_LIMIT_UPPER32: u16 = 0x2C;
    pub const EXT_CAP: u16 = 0x100;
    pub const EXT_CAP_ID_REBAR: u32 = 0x15;
    /// I/O | memory | bus master.
    pub const COMMAND_ENABLE: u32 = 0x07;
}

/// Where the pools start and which bus the endpoint is on.
#[derive(Debug, Clone, Copy)]
pub struct BusLayout {
    pub gpu_bus: u8,
    pub mem_base: u64,
    pub pref_mem_base: u64,
}

impl Default for BusLayout {
    fn default() -> Self {
        BusLayout {
            gpu_bus: 4,
            mem_base: 0x1000_0000,
            pref_mem_base: 32 << 30,
        }
    }
}

/// One assigned memory BAR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bar {
    pub addr: u64,
    pub size: u64,
    pub prefetchable: bool,
    pub is64: bool,
}

/// The endpoint after enumeration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub bdf: Bdf,
    pub vendor: u16,
    pub device: u16,
    /// BAR index → assignment.
    pub bars: BTreeMap<u8, Bar>,
    /// Resizable BAR: (bar index, size index chosen) when the capability was found.
    pub rebar: Option<(u8, u32)>,
}

const BAR_ALIGN: u64 = 2 << 20;

/// Sets up the bus and the endpoint's BARs; returns what was found and assigned.
pub fn setup_bars(c: &mut Asm24, layout: BusLayout) -> Result<Endpoint> {
    let gpu = Bdf::new(layout.gpu_bus, 0, 0);
    for bus in 0..layout.gpu_bus {
        let b = Bdf::new(bus, 0, 0);
        let id = c.cfg_read(b, cfg::VENDOR_ID, 2)?;
        if id == 0xFFFF {
            return Err(UsbError::Enumerate(format!(
                "no bridge at {b} (vendor id reads 0xffff)"
            )));
        }
        // Primary, secondary, subordinate in one write (the chip latches them together).
        let buses = (u32::from(bus + 1) << 8) | (u32::from(layout.gpu_bus) << 16);
        c.cfg_write(b, cfg::PRIMARY_BUS, buses, 4)?;
        c.cfg_write(
            b,
            cfg::MEMORY_BASE,
            (layout.mem_base >> 16) as u32 & 0xFFFF,
            2,
        )?;
        c.cfg_write(b, cfg::MEMORY_LIMIT, 0xFFFF, 2)?;
        c.cfg_write(
            b,
            cfg::PREF_MEMORY_BASE,
            (layout.pref_mem_base >> 16) as u32 & 0xFFFF,
            2,
        )?;
        c.cfg_write(b, cfg::PREF_MEMORY_LIMIT, 0xFFFF, 2)?;
        c.cfg_write(
            b,
            cfg::PREF_BASE_UPPER32,
            (layout.pref_mem_base >> 32) as u32,
            4,
        )?;
        c.cfg_write(b, cfg::PREF_LIMIT_UPPER32, 0xFFFF_FFFF, 4)?;
        c.cfg_write(b, cfg::COMMAND, cfg::COMMAND_ENABLE, 1)?;
    }

    let ids = c.cfg_read(gpu, cfg::VENDOR_ID, 4)?;
    let (vendor, device) = (ids as u16, (ids >> 16) as u16);
    if vendor == 0xFFFF {
        return Err(UsbError::Enumerate(format!(
            "no device at {gpu} behind the bridge (vendor id reads 0xffff)"
        )));
    }

    // Resizable BAR: pick the largest supported size.
    let mut rebar = None;
    let mut off = cfg::EXT_CAP;
    let mut seen = 0;
    while off != 0 && seen < 64 {
        seen += 1;
        let hdr = c.cfg_read(gpu, off, 4)?;
        if hdr == 0 || hdr == 0xFFFF_FFFF {
            break;
        }
        if hdr & 0xFFFF == cfg::EXT_CAP_ID_REBAR {
            let cap = c.cfg_read(gpu, off + 4, 4)?;
            let sizes = cap >> 4;
            if sizes != 0 {
                let idx = 31 - sizes.leading_zeros();
                let ctrl = c.cfg_read(gpu, off + 8, 4)?;
                let bar = (ctrl & 7) as u8;
                c.cfg_write(gpu, off + 8, (ctrl & !(0x1F << 8)) | (idx << 8), 4)?;
                rebar = Some((bar, idx));
            }
            break;
        }
        off = (hdr >> 20) as u16;
    }

    let mut bars = BTreeMap::new();
    let (mut mem, mut pref) = (layout.mem_base, layout.pref_mem_base);
    let mut i = 0u8;
    while i < 6 {
        let reg = cfg::BAR0 + 4 * u16::from(i);
        let orig = c.cfg_read(gpu, reg, 4)?;
        if orig & 1 != 0 {
            // I/O BAR: not used by the GPU path.
            i += 1;
            continue;
        }
        let is64 = (orig >> 1) & 3 == 2;
        let prefetchable = orig & 8 != 0;
        c.cfg_write(gpu, reg, 0xFFFF_FFFF, 4)?;
        let lo = c.cfg_read(gpu, reg, 4)? & !0xF;
        let mut mask = u64::from(lo);
        if is64 {
            if i == 5 {
                return Err(UsbError::Enumerate(format!(
                    "{gpu}: BAR5 claims to be 64-bit"
                )));
            }
            c.cfg_write(gpu, reg + 4, 0xFFFF_FFFF, 4)?;
            mask |= u64::from(c.cfg_read(gpu, reg + 4, 4)?) << 32;
        } else {
            mask |= 0xFFFF_FFFF_0000_0000;
        }
        // Not implemented: no writable address bits at all. A 64-bit BAR of 4 GiB or more
        // (resizable BAR over all VRAM) has none in its low dword, so look at both.
        if lo == 0 && (!is64 || mask >> 32 == 0) {
            c.cfg_write(gpu, reg, orig, 4)?;
            i += if is64 { 2 } else { 1 };
            continue;
        }
        let size = (!mask).wrapping_add(1);
        // A BAR reads back its size as the low set bit of the mask; a mask of all zeros above
        // the flags (a broken device or a failed read) would mean a 2^64-byte BAR.
        if size == 0 || !size.is_power_of_two() || size > 1 << 40 {
            return Err(UsbError::Enumerate(format!(
                "{gpu}: BAR{i} sizes to {size:#x} bytes (mask {mask:#x}): not a BAR a GPU has"
            )));
        }
        let pool = if prefetchable { &mut pref } else { &mut mem };
        let addr = pool.div_ceil(size) * size;
        *pool = (addr + size).div_ceil(BAR_ALIGN) * BAR_ALIGN;
        c.cfg_write(gpu, reg, (addr as u32 & !0xF) | (orig & 0xF), 4)?;
        if is64 {
            c.cfg_write(gpu, reg + 4, (addr >> 32) as u32, 4)?;
        } else if addr >> 32 != 0 {
            return Err(UsbError::Enumerate(format!(
                "{gpu}: 32-bit BAR{i} of {size:#x} bytes does not fit below 4 GiB"
            )));
        }
        bars.insert(
            i,
            Bar {
                addr,
                size,
                prefetchable,
                is64,
            },
        );
        i += if is64 { 2 } else { 1 };
    }
    c.cfg_write(gpu, cfg::COMMAND, cfg::COMMAND_ENABLE, 1)?;
    Ok(Endpoint {
        bdf: gpu,
        vendor,
        device,
        bars,
        rebar,
    })
}
