//! The ASM2464 controller protocols, as wire formats (usb-asm24.md §3, §4). Every message has one
//! [`Layout`]; `encode` (host side) and `parse` (device side: the fake bridge, a FunctionFS
//! gadget) both go through it, so the two sides cannot disagree about a byte.
//!
//! * Stock (patched ASMedia) firmware: USB Attached SCSI. A 32-byte command IU carries a vendor
//!   CDB: `0xE4` read XDATA, `0xE5` write one XDATA byte, `0x8A` SCSI WRITE(16) into the SRAM
//!   window. The device answers with a sense IU on the status pipe.
//! * tinygrad's custom firmware: vendor control requests on EP0 — `0xE4`/`0xE5` XDATA,
//!   `0xF0` PCIe TLP engine (OUT: request, IN: completion), `0xF2` SRAM DMA, `0xF3` PCIe power.

use crate::error::{CplStatus, ProtoError};
use crate::layout::{Field, Layout, Order};

/// bmRequestType of a vendor request to the device (host → device) and from it.
pub const VENDOR_OUT: u8 = 0x40;
pub const VENDOR_IN: u8 = 0xC0;

/// XDATA address bits that the stock firmware's E4/E5 CDBs carry, and the tag it expects on top.
pub const XDATA_MASK: u32 = 0x1FFFF;
pub const XDATA_CDB_BASE: u32 = 0x50_0000;

/// The 8-byte SETUP packet of a control transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlSetup {
    pub request_type: u8,
    pub request: u8,
    pub value: u16,
    pub index: u16,
    pub length: u16,
}

pub const SETUP: Layout = Layout {
    name: "SETUP packet",
    size: 8,
    fixed: &[],
    fields: &[
        Field::int("bmRequestType", 0, 1, Order::Le),
        Field::int("bRequest", 1, 1, Order::Le),
        Field::int("wValue", 2, 2, Order::Le),
        Field::int("wIndex", 4, 2, Order::Le),
        Field::int("wLength", 6, 2, Order::Le),
    ],
};

impl ControlSetup {
    pub fn is_in(&self) -> bool {
        self.request_type & 0x80 != 0
    }
    pub fn to_bytes(&self) -> [u8; 8] {
        let v = SETUP
            .pack(&[
                self.request_type.into(),
                self.request.into(),
                self.value.into(),
                self.index.into(),
                self.length.into(),
            ])
            .unwrap_or_default();
        let mut out = [0u8; 8];
        out.copy_from_slice(&v);
        out
    }
    pub fn from_bytes(b: &[u8]) -> Result<ControlSetup, ProtoError> {
        let v = SETUP.unpack(b)?;
        Ok(ControlSetup {
            request_type: v[0] as u8,
            request: v[1] as u8,
            value: v[2] as u16,
            index: v[3] as u16,
            length: v[4] as u16,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Stock firmware: UAS IUs and vendor CDBs (§3)

pub const CDB_READ_XDATA: Layout = Layout {
    name: "CDB E4 (read XDATA)",
    size: 6,
    fixed: &[(0, 0xE4), (5, 0)],
    fields: &[
        Field::int("len", 1, 1, Order::Be),
        Field::int("addr", 2, 3, Order::Be),
    ],
};

pub const CDB_WRITE_XDATA: Layout = Layout {
    name: "CDB E5 (write XDATA byte)",
    size: 6,
    fixed: &[(0, 0xE5), (5, 0)],
    fields: &[
        Field::int("value", 1, 1, Order::Be),
        Field::int("addr", 2, 3, Order::Be),
    ],
};

pub const CDB_WRITE16: Layout = Layout {
    name: "CDB 8A (SCSI WRITE(16))",
    size: 16,
    fixed: &[(0, 0x8A), (1, 0), (14, 0), (15, 0)],
    fields: &[
        Field::int("lba", 2, 8, Order::Be),
        Field::int("sectors", 10, 4, Order::Be),
    ],
};

/// A vendor CDB of the stock firmware.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cdb {
    /// Read `len` (1..=255) XDATA bytes at `addr` (17-bit XDATA address).
    ReadXdata { addr: u32, len: u8 },
    /// Write one XDATA byte.
    WriteXdata { addr: u32, value: u8 },
    /// Write `sectors` 512-byte sectors into the SRAM window at `lba`·512.
    Write16 { lba: u64, sectors: u32 },
}

impl Cdb {
    pub fn encode(&self) -> Result<Vec<u8>, ProtoError> {
        match *self {
            Cdb::ReadXdata { addr, len } => {
                CDB_READ_XDATA.pack(&[len.into(), ((addr & XDATA_MASK) | XDATA_CDB_BASE).into()])
            }
            Cdb::WriteXdata { addr, value } => {
                CDB_WRITE_XDATA.pack(&[value.into(), ((addr & XDATA_MASK) | XDATA_CDB_BASE).into()])
            }
            Cdb::Write16 { lba, sectors } => CDB_WRITE16.pack(&[lba, sectors.into()]),
        }
    }

    /// Parses a CDB (as found at byte 16 of a command IU).
    pub fn parse(b: &[u8]) -> Result<Cdb, ProtoError> {
        match b.first() {
            Some(0xE4) => {
                let v = CDB_READ_XDATA.unpack(b)?;
                Ok(Cdb::ReadXdata {
                    len: v[0] as u8,
                    addr: v[1] as u32 & XDATA_MASK,
                })
            }
            Some(0xE5) => {
                let v = CDB_WRITE_XDATA.unpack(b)?;
                Ok(Cdb::WriteXdata {
                    value: v[0] as u8,
                    addr: v[1] as u32 & XDATA_MASK,
                })
            }
            Some(0x8A) => {
                let v = CDB_WRITE16.unpack(b)?;
                Ok(Cdb::Write16 {
                    lba: v[0],
                    sectors: v[1] as u32,
                })
            }
            Some(&op) => Err(ProtoError::new(
                "CDB",
                0,
                format!("unknown operation code {op:#04x}"),
            )),
            None => Err(ProtoError::new("CDB", 0, "empty")),
        }
    }
}

pub const COMMAND_IU: Layout = Layout {
    name: "UAS command IU",
    size: 16,
    fixed: &[(0, 0x01), (1, 0)],
    fields: &[Field::int("tag", 2, 2, Order::Be)],
};
pub const COMMAND_IU_SIZE: usize = 32;

/// A UAS command IU: header (IU id 1, tag) and a CDB at byte 16.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandIu {
    pub tag: u16,
    pub cdb: Cdb,
}

impl CommandIu {
    pub fn encode(&self) -> Result<[u8; COMMAND_IU_SIZE], ProtoError> {
        let mut out = [0u8; COMMAND_IU_SIZE];
        out[..16].copy_from_slice(&COMMAND_IU.pack(&[self.tag.into()])?);
        let cdb = self.cdb.encode()?;
        out[16..16 + cdb.len()].copy_from_slice(&cdb);
        Ok(out)
    }
    pub fn parse(b: &[u8]) -> Result<CommandIu, ProtoError> {
        if b.len() < COMMAND_IU_SIZE {
            return Err(ProtoError::new(
                COMMAND_IU.name,
                b.len(),
                format!("{} bytes, a command IU has {COMMAND_IU_SIZE}", b.len()),
            ));
        }
        let v = COMMAND_IU.unpack(b)?;
        let cdb = Cdb::parse(&b[16..]).map_err(|e| ProtoError {
            offset: e.offset + 16,
            ..e
        })?;
        Ok(CommandIu {
            tag: v[0] as u16,
            cdb,
        })
    }
}

pub const SENSE_IU: Layout = Layout {
    name: "UAS sense IU",
    size: 16,
    fixed: &[(0, 0x03)],
    fields: &[
        Field::int("tag", 2, 2, Order::Be),
        Field::int("status", 6, 1, Order::Be),
    ],
};

/// The status a command IU is answered with (SCSI status 0 = GOOD).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SenseIu {
    pub tag: u16,
    pub status: u8,
}

impl SenseIu {
    pub fn encode(&self) -> Vec<u8> {
        SENSE_IU
            .pack(&[self.tag.into(), self.status.into()])
            .unwrap_or_default()
    }
    pub fn parse(b: &[u8]) -> Result<SenseIu, ProtoError> {
        let v = SENSE_IU.unpack(b)?;
        Ok(SenseIu {
            tag: v[0] as u16,
            status: v[1] as u8,
        })
    }
}

/// UAS endpoints of the stock firmware (interface 0, alt 1).
pub mod uas_ep {
    pub const COMMAND_OUT: u8 = 0x04;
    pub const STATUS_IN: u8 = 0x83;
    pub const DATA_IN: u8 = 0x81;
    pub const DATA_OUT: u8 = 0x02;
}

// ---------------------------------------------------------------------------------------------
// Custom firmware: vendor control requests (§4)

pub const REQ_READ_XDATA: Layout = Layout {
    name: "request E4 (read XDATA)",
    size: 8,
    fixed: &[(0, VENDOR_IN), (1, 0xE4), (4, 0)],
    fields: &[
        Field::int("addr", 2, 2, Order::Le),
        Field::bits("bank", 4, 2, Order::Le, 8, 8),
        Field::int("len", 6, 2, Order::Le),
    ],
};

pub const REQ_WRITE_XDATA: Layout = Layout {
    name: "request E5 (write XDATA byte)",
    size: 8,
    fixed: &[(0, VENDOR_OUT), (1, 0xE5), (6, 0), (7, 0)],
    fields: &[
        Field::int("addr", 2, 2, Order::Le),
        Field::bits("value", 4, 2, Order::Le, 0, 8),
        Field::bits("bank", 4, 2, Order::Le, 8, 8),
    ],
};

pub const REQ_TLP: Layout = Layout {
    name: "request F0 OUT (TLP)",
    size: 8,
    fixed: &[(0, VENDOR_OUT), (1, 0xF0), (6, 12), (7, 0)],
    fields: &[
        Field::bits("fmt_type", 2, 2, Order::Le, 0, 8),
        Field::bits("byte_enable", 2, 2, Order::Le, 8, 8),
        Field::bits("mode", 4, 2, Order::Le, 0, 2),
        Field::bits("chunk_dwords", 4, 2, Order::Le, 2, 6),
    ],
};

/// The 12-byte data stage of an F0 OUT request.
pub const TLP_DATA: Layout = Layout {
    name: "F0 OUT data",
    size: 12,
    fixed: &[],
    fields: &[
        Field::int("addr_lo", 0, 4, Order::Le),
        Field::int("addr_hi", 4, 4, Order::Le),
        Field::int("value", 8, 4, Order::Le),
    ],
};

pub const REQ_TLP_COMPLETION: Layout = Layout {
    name: "request F0 IN (completion)",
    size: 8,
    fixed: &[
        (0, VENDOR_IN),
        (1, 0xF0),
        (2, 0),
        (3, 0),
        (4, 0),
        (5, 0),
        (6, 8),
        (7, 0),
    ],
    fields: &[],
};

/// The 8-byte data stage of an F0 IN request.
pub const COMPLETION: Layout = Layout {
    name: "F0 IN completion",
    size: 8,
    fixed: &[],
    fields: &[
        Field::int("data", 0, 4, Order::Le),
        Field::bits("byte_count", 4, 2, Order::Be, 0, 12),
        Field::bits("status", 4, 2, Order::Be, 13, 3),
        Field::int("flags", 6, 1, Order::Le),
        Field::int("ret", 7, 1, Order::Le),
    ],
};

pub const REQ_SRAM_DMA: Layout = Layout {
    name: "request F2 (SRAM DMA)",
    size: 8,
    fixed: &[(0, VENDOR_OUT), (1, 0xF2), (6, 0), (7, 0)],
    fields: &[
        Field::bits("sectors", 2, 2, Order::Le, 0, 15),
        Field::bits("to_host", 2, 2, Order::Le, 15, 1),
        Field::bits("first_slot", 4, 2, Order::Le, 0, 8),
        Field::bits("slots", 4, 2, Order::Le, 8, 8),
    ],
};

pub const REQ_PCIE_POWER: Layout = Layout {
    name: "request F3 (PCIe power)",
    size: 8,
    fixed: &[(0, VENDOR_OUT), (1, 0xF3), (4, 0), (5, 0), (6, 0), (7, 0)],
    fields: &[Field::int("on", 2, 2, Order::Le)],
};

/// Bytes of one SRAM slot (the F2 slot unit) and of one F2 sector.
pub const SRAM_SLOT: u64 = 0x4000;
pub const SECTOR: u64 = 512;

/// Mode of an F0 request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlpMode {
    /// One TLP of ≤ 4 bytes.
    Single,
    /// `value` dwords follow on bulk OUT, written as consecutive MemWr TLPs.
    StreamWrite,
    /// `value` dwords are read and returned on bulk IN.
    StreamRead,
}

impl TlpMode {
    fn bits(self) -> u64 {
        match self {
            TlpMode::Single => 0,
            TlpMode::StreamWrite => 1,
            TlpMode::StreamRead => 2,
        }
    }
}

/// A vendor control request of the custom firmware (SETUP packet plus OUT data).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    ReadXdata {
        addr: u16,
        bank: u8,
        len: u16,
    },
    WriteXdata {
        addr: u16,
        bank: u8,
        value: u8,
    },
    Tlp {
        fmt_type: u8,
        byte_enable: u8,
        mode: TlpMode,
        chunk_dwords: u8,
        addr: u64,
        /// Write data (single) or dword count (stream).
        value: u32,
    },
    TlpCompletion,
    SramDma {
        to_host: bool,
        sectors: u16,
        first_slot: u8,
        slots: u8,
    },
    PciePower {
        on: bool,
    },
}

fn setup_of(b: &[u8]) -> ControlSetup {
    // Only called on packed 8-byte records.
    ControlSetup::from_bytes(b).unwrap_or(ControlSetup {
        request_type: 0,
        request: 0,
        value: 0,
        index: 0,
        length: 0,
    })
}

impl Request {
    /// SETUP packet and OUT data stage.
    pub fn encode(&self) -> Result<(ControlSetup, Vec<u8>), ProtoError> {
        let (setup, data) = match *self {
            Request::ReadXdata { addr, bank, len } => (
                REQ_READ_XDATA.pack(&[addr.into(), bank.into(), len.into()])?,
                vec![],
            ),
            Request::WriteXdata { addr, bank, value } => (
                REQ_WRITE_XDATA.pack(&[addr.into(), value.into(), bank.into()])?,
                vec![],
            ),
            Request::Tlp {
                fmt_type,
                byte_enable,
                mode,
                chunk_dwords,
                addr,
                value,
            } => (
                REQ_TLP.pack(&[
                    fmt_type.into(),
                    byte_enable.into(),
                    mode.bits(),
                    chunk_dwords.into(),
                ])?,
                TLP_DATA.pack(&[addr & 0xFFFF_FFFF, addr >> 32, value.into()])?,
            ),
            Request::TlpCompletion => (REQ_TLP_COMPLETION.pack(&[])?, vec![]),
            Request::SramDma {
                to_host,
                sectors,
                first_slot,
                slots,
            } => (
                REQ_SRAM_DMA.pack(&[
                    sectors.into(),
                    u64::from(to_host),
                    first_slot.into(),
                    slots.into(),
                ])?,
                vec![],
            ),
            Request::PciePower { on } => (REQ_PCIE_POWER.pack(&[u64::from(on)])?, vec![]),
        };
        Ok((setup_of(&setup), data))
    }

    /// Parses a request as the device sees it: SETUP packet and (for OUT) the data stage.
    pub fn parse(setup: &ControlSetup, data: &[u8]) -> Result<Request, ProtoError> {
        let b = setup.to_bytes();
        match (setup.request_type, setup.request) {
            (VENDOR_IN, 0xE4) => {
                let v = REQ_READ_XDATA.unpack(&b)?;
                Ok(Request::ReadXdata {
                    addr: v[0] as u16,
                    bank: v[1] as u8,
                    len: v[2] as u16,
                })
            }
            (VENDOR_OUT, 0xE5) => {
                let v = REQ_WRITE_XDATA.unpack(&b)?;
                Ok(Request::WriteXdata {
                    addr: v[0] as u16,
                    value: v[1] as u8,
                    bank: v[2] as u8,
                })
            }
            (VENDOR_OUT, 0xF0) => {
                let v = REQ_TLP.unpack(&b)?;
                let d = TLP_DATA.unpack(data)?;
                let mode = match v[2] {
                    0 => TlpMode::Single,
                    1 => TlpMode::StreamWrite,
                    2 => TlpMode::StreamRead,
                    m => {
                        return Err(ProtoError::new(
                            REQ_TLP.name,
                            4,
                            format!("mode {m} is not 0, 1 or 2"),
                        ))
                    }
                };
                Ok(Request::Tlp {
                    fmt_type: v[0] as u8,
                    byte_enable: v[1] as u8,
                    mode,
                    chunk_dwords: v[3] as u8,
                    addr: d[0] | d[1] << 32,
                    value: d[2] as u32,
                })
            }
            (VENDOR_IN, 0xF0) => {
                REQ_TLP_COMPLETION.unpack(&b)?;
                Ok(Request::TlpCompletion)
            }
            (VENDOR_OUT, 0xF2) => {
                let v = REQ_SRAM_DMA.unpack(&b)?;
                Ok(Request::SramDma {
                    sectors: v[0] as u16,
                    to_host: v[1] != 0,
                    first_slot: v[2] as u8,
                    slots: v[3] as u8,
                })
            }
            (VENDOR_OUT, 0xF3) => {
                let v = REQ_PCIE_POWER.unpack(&b)?;
                Ok(Request::PciePower { on: v[0] & 1 != 0 })
            }
            (t, r) => Err(ProtoError::new(
                "vendor request",
                1,
                format!("unknown request {r:#04x} (bmRequestType {t:#04x})"),
            )),
        }
    }
}

/// The completion of a non-posted TLP (F0 IN data).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    pub data: u32,
    pub byte_count: u16,
    pub status: CplStatus,
    pub flags: u8,
    /// Firmware return status: 0 ok, 1 engine error, 0xFF timeout.
    pub ret: u8,
}

impl Completion {
    pub fn encode(&self) -> Vec<u8> {
        COMPLETION
            .pack(&[
                self.data.into(),
                u64::from(self.byte_count & 0xFFF),
                self.status.bits().into(),
                self.flags.into(),
                self.ret.into(),
            ])
            .unwrap_or_default()
    }
    pub fn parse(b: &[u8]) -> Result<Completion, ProtoError> {
        let v = COMPLETION.unpack(b)?;
        Ok(Completion {
            data: v[0] as u32,
            byte_count: v[1] as u16,
            status: CplStatus::from_bits(v[2] as u8),
            flags: v[3] as u8,
            ret: v[4] as u8,
        })
    }
}

/// Custom-firmware bulk endpoints.
pub mod custom_ep {
    pub const BULK_OUT: u8 = 0x02;
    pub const BULK_IN: u8 = 0x81;
}

// ---------------------------------------------------------------------------------------------
// TLP header values (the engine's fmt/type byte)

pub mod tlp {
    pub const MEM_RD: u8 = 0x20;
    pub const MEM_WR: u8 = 0x60;
    pub const CFG_RD0: u8 = 0x04;
    pub const CFG_RD1: u8 = 0x05;
    pub const CFG_WR0: u8 = 0x44;
    pub const CFG_WR1: u8 = 0x45;

    /// Posted requests (memory writes, messages) get no completion.
    pub fn is_posted(fmt_type: u8) -> bool {
        (fmt_type & 0xDF) == 0x40 || (fmt_type & 0xB8) == 0x30
    }
    pub fn is_config(fmt_type: u8) -> bool {
        (fmt_type & 0x1E) == 0x04
    }
    pub fn is_write(fmt_type: u8) -> bool {
        fmt_type & 0x40 != 0
    }
    /// Config address: bus<<24 | dev<<19 | fn<<16 | reg.
    pub fn cfg_addr(bus: u8, dev: u8, func: u8, reg: u16) -> u64 {
        (u64::from(bus) << 24)
            | (u64::from(dev & 0x1F) << 19)
            | (u64::from(func & 7) << 16)
            | u64::from(reg & 0xFFF)
    }
    /// Byte enables of a `size`-byte access at `addr`.
    pub fn byte_enable(addr: u64, size: u8) -> u8 {
        (((1u16 << size) - 1) << (addr & 3)) as u8
    }
}
