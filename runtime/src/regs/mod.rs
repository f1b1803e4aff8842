//! Register tables per IP version, generated from the Linux amdgpu headers' data
//! (`tools/gen_regs.py` → `tables.rs`, the same run that writes `pci::am::regs`), and their
//! resolution to absolute dword addresses.

// Generated: kept byte for byte as the generator writes it (tests/regs_generated.rs).
#[rustfmt::skip]
mod tables;

pub use tables::*;

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldDef {
    pub name: &'static str,
    pub lo: u8,
    pub hi: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegDef {
    /// Name without the `reg` prefix, e.g. `COMPUTE_PGM_LO`.
    pub name: &'static str,
    /// Dwords from the start of segment `base_index`.
    pub offset: u32,
    pub base_index: u8,
    pub fields: &'static [FieldDef],
}

/// All kept registers of one IP version, sorted by name.
#[derive(Debug)]
pub struct IpTable {
    pub ip: &'static str,
    pub regs: &'static [RegDef],
}

/// Segment base addresses (dwords) of one IP instance, from the static navi/vega tables.
#[derive(Debug, Clone, Copy)]
pub struct IpBase {
    pub ip: &'static str,
    pub instance: u32,
    pub segments: &'static [u32],
}

impl IpTable {
    pub fn get(&self, name: &str) -> Option<&'static RegDef> {
        self.regs
            .binary_search_by(|r| r.name.cmp(name))
            .ok()
            .and_then(|i| self.regs.get(i))
    }
}

impl FieldDef {
    /// Bits in the field.
    pub fn width(&self) -> u32 {
        u32::from(self.hi - self.lo) + 1
    }
    /// The largest value the field holds (all ones for a 32-bit field).
    pub fn value_mask(&self) -> u32 {
        if self.width() >= 32 {
            u32::MAX
        } else {
            (1 << self.width()) - 1
        }
    }
    /// The field's bits in place in the register.
    pub fn mask(&self) -> u32 {
        self.value_mask() << self.lo
    }
    /// The field's value in the register value `v`.
    pub fn get(&self, v: u32) -> u32 {
        (v >> self.lo) & self.value_mask()
    }
}

impl RegDef {
    pub fn field(&self, name: &str) -> Option<&'static FieldDef> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// A register resolved against an IP's segment bases: absolute dword address plus its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reg {
    pub addr: u32,
    pub def: &'static RegDef,
}

impl Reg {
    /// ORs `value << lo` for each named field; unknown field names and values wider than their
    /// field are errors (a typo in the runtime, a field that this GC generation does not have,
    /// or a bit that belongs to the next field on this generation).
    pub fn encode(&self, fields: &[(&str, u32)]) -> Result<u32> {
        let mut v = 0u32;
        for (name, val) in fields {
            let f = self.def.field(name).ok_or_else(|| {
                Error::Unsupported(format!("register {} has no field {name}", self.def.name))
            })?;
            if val & !f.value_mask() != 0 {
                return Err(Error::Unsupported(format!(
                    "{val:#x} does not fit {}.{name} ({} bits)",
                    self.def.name,
                    f.width()
                )));
            }
            v |= val << f.lo;
        }
        Ok(v)
    }
    /// Extracts one field of a value read from this register.
    pub fn decode(&self, value: u32, field: &str) -> Option<u32> {
        Some(self.def.field(field)?.get(value))
    }
    pub fn field_mask(&self, field: &str) -> Option<u32> {
        Some(self.def.field(field)?.mask())
    }
}

/// An IP table together with the segment bases of one instance.
#[derive(Debug, Clone)]
pub struct IpRegs {
    pub table: &'static IpTable,
    pub bases: Vec<u32>,
}

impl IpRegs {
    pub fn new(table: &'static IpTable, bases: Vec<u32>) -> Self {
        IpRegs { table, bases }
    }
    pub fn get(&self, name: &str) -> Result<Reg> {
        let def = self.table.get(name).ok_or_else(|| {
            Error::Unsupported(format!(
                "register {name} does not exist in {}",
                self.table.ip
            ))
        })?;
        let base = self.bases.get(usize::from(def.base_index)).ok_or_else(|| {
            Error::Unsupported(format!(
                "{}: segment {} of {name} has no base address (IP discovery gave {} segments)",
                self.table.ip,
                def.base_index,
                self.bases.len()
            ))
        })?;
        Ok(Reg {
            addr: base + def.offset,
            def,
        })
    }
    pub fn opt(&self, name: &str) -> Option<Reg> {
        self.get(name).ok()
    }
}

/// The GC table for a GC IP version (GC 11.x → 11.0.0, 12.x → 12.0.0, 9.4/9.5 → 9.4.3).
pub fn gc_table(ver: (u32, u32, u32)) -> Option<&'static IpTable> {
    match ver {
        (11, _, _) => Some(&GC_11_0_0),
        (12, _, _) => Some(&GC_12_0_0),
        (9, 4, _) | (9, 5, _) => Some(&GC_9_4_3),
        _ => None,
    }
}

/// The NBIO/NBIF table for an NBIO version (the HDP flush registers).
pub fn nbio_table(ver: (u32, u32, u32)) -> Option<&'static IpTable> {
    match ver {
        (4, 3, _) => Some(&NBIO_4_3_0),
        (6, 3, _) => Some(&NBIF_6_3_1),
        (7, 9, _) => Some(&NBIO_7_9_0),
        (7, 11, _) => Some(&NBIO_7_11_0),
        _ => None,
    }
}

/// Static segment bases (navi = gfx10+, vega = gfx9) for an IP, instance 0.
pub fn static_bases(gfx_major: u32, ip: &str) -> Option<&'static [u32]> {
    let t = if gfx_major >= 10 {
        BASES_NAVI
    } else {
        BASES_VEGA
    };
    t.iter()
        .find(|b| b.ip == ip && b.instance == 0)
        .map(|b| b.segments)
}

/// The name of the HDP flush request/done pair for an NBIO version (PF1 on NBIO 7.11).
pub fn hdp_flush_names(nbio: (u32, u32, u32)) -> (&'static str, &'static str) {
    if nbio.0 == 7 && nbio.1 == 11 {
        (
            "BIF_BX_PF1_GPU_HDP_FLUSH_REQ",
            "BIF_BX_PF1_GPU_HDP_FLUSH_DONE",
        )
    } else {
        (
            "BIF_BX_PF0_GPU_HDP_FLUSH_REQ",
            "BIF_BX_PF0_GPU_HDP_FLUSH_DONE",
        )
    }
}
