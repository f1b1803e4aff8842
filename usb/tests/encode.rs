//! The protocol encoder against the byte layouts usb-asm24.md documents (expected bytes written
//! by hand from the spec tables, not produced by the encoder), and the device-side parser
//! reading back what the encoder wrote.

use usb::proto::{tlp, Cdb, CommandIu, Completion, ControlSetup, Request, SenseIu, TlpMode};
use usb::CplStatus;

fn req(r: Request) -> (Vec<u8>, Vec<u8>) {
    let (s, d) = r.encode().unwrap();
    (s.to_bytes().to_vec(), d)
}

#[test]
fn stock_cdbs_are_byte_exact() {
    // §3: E4, len, A[23:16], A[15:8], A[7:0], 00 with A = (xdata & 0x1FFFF) | 0x500000.
    let c = Cdb::ReadXdata {
        addr: 0xB296,
        len: 1,
    }
    .encode()
    .unwrap();
    assert_eq!(c, [0xE4, 0x01, 0x50, 0xB2, 0x96, 0x00]);
    let c = Cdb::ReadXdata {
        addr: 0xF000,
        len: 0xFF,
    }
    .encode()
    .unwrap();
    assert_eq!(c, [0xE4, 0xFF, 0x50, 0xF0, 0x00, 0x00]);
    // E5, value, A[23:16], A[15:8], A[7:0], 00: the init write 0x054B <- 0x20.
    let c = Cdb::WriteXdata {
        addr: 0x054B,
        value: 0x20,
    }
    .encode()
    .unwrap();
    assert_eq!(c, [0xE5, 0x20, 0x50, 0x05, 0x4B, 0x00]);
    // 8A, 00, LBA u64 BE, sectors u32 BE, 00, 00: 64 KiB (128 sectors) at LBA 0.
    let c = Cdb::Write16 {
        lba: 0,
        sectors: 128,
    }
    .encode()
    .unwrap();
    assert_eq!(c, [0x8A, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0]);
    let c = Cdb::Write16 {
        lba: 0x0102_0304_0506_0708,
        sectors: 0x0A0B_0C0D,
    }
    .encode()
    .unwrap();
    assert_eq!(
        c,
        [0x8A, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0x0A, 0x0B, 0x0C, 0x0D, 0, 0]
    );
}

#[test]
fn command_iu_carries_tag_and_cdb_at_16() {
    // byte 0 = 0x01, byte 1 = 0, bytes 2-3 tag BE, 4-15 zero, 16-31 CDB.
    let iu = CommandIu {
        tag: 3,
        cdb: Cdb::WriteXdata {
            addr: 0xB254,
            value: 0x0F,
        },
    }
    .encode()
    .unwrap();
    let mut want = [0u8; 32];
    want[0] = 0x01;
    want[3] = 0x03;
    want[16..22].copy_from_slice(&[0xE5, 0x0F, 0x50, 0xB2, 0x54, 0x00]);
    assert_eq!(iu, want);
    assert_eq!(
        CommandIu::parse(&iu).unwrap(),
        CommandIu {
            tag: 3,
            cdb: Cdb::WriteXdata {
                addr: 0xB254,
                value: 0x0F
            }
        }
    );
}

#[test]
fn custom_control_requests_are_byte_exact() {
    // E4 IN: bmRequestType C0, wValue = XDATA address, wLength = count (LTSSM probe).
    let (s, d) = req(Request::ReadXdata {
        addr: 0xB450,
        bank: 0,
        len: 1,
    });
    assert_eq!(s, [0xC0, 0xE4, 0x50, 0xB4, 0x00, 0x00, 0x01, 0x00]);
    assert!(d.is_empty());
    // E5 OUT: wValue = address, wIndex low byte = value.
    let (s, _) = req(Request::WriteXdata {
        addr: 0xA800,
        bank: 0,
        value: 0x00,
    });
    assert_eq!(s, [0x40, 0xE5, 0x00, 0xA8, 0x00, 0x00, 0x00, 0x00]);
    let (s, _) = req(Request::WriteXdata {
        addr: 0x054B,
        bank: 1,
        value: 0x20,
    });
    assert_eq!(s, [0x40, 0xE5, 0x4B, 0x05, 0x20, 0x01, 0x00, 0x00]);
    // F0 OUT MemWr 0x60, byte enable 0xF: wValue = 0x0F60, data = addr lo, addr hi, value (LE).
    let (s, d) = req(Request::Tlp {
        fmt_type: tlp::MEM_WR,
        byte_enable: 0xF,
        mode: TlpMode::Single,
        chunk_dwords: 0,
        addr: 0x8_2345_6788,
        value: 0xDEAD_BEEF,
    });
    assert_eq!(s, [0x40, 0xF0, 0x60, 0x0F, 0x00, 0x00, 0x0C, 0x00]);
    assert_eq!(
        d,
        [0x88, 0x67, 0x45, 0x23, 0x08, 0, 0, 0, 0xEF, 0xBE, 0xAD, 0xDE]
    );
    // Config read type 1 of bus 4 dev 0 fn 0 reg 0: address 4<<24.
    let (s, d) = req(Request::Tlp {
        fmt_type: tlp::CFG_RD1,
        byte_enable: tlp::byte_enable(0, 4),
        mode: TlpMode::Single,
        chunk_dwords: 0,
        addr: tlp::cfg_addr(4, 0, 0, 0),
        value: 0,
    });
    assert_eq!(s, [0x40, 0xF0, 0x05, 0x0F, 0x00, 0x00, 0x0C, 0x00]);
    assert_eq!(d, [0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0]);
    // Streaming write of 0x100 dwords: mode 1 in wIndex, value = dword count.
    let (s, d) = req(Request::Tlp {
        fmt_type: tlp::MEM_WR,
        byte_enable: 0xF,
        mode: TlpMode::StreamWrite,
        chunk_dwords: 0,
        addr: 0x1000,
        value: 0x100,
    });
    assert_eq!(s, [0x40, 0xF0, 0x60, 0x0F, 0x01, 0x00, 0x0C, 0x00]);
    assert_eq!(d, [0x00, 0x10, 0, 0, 0, 0, 0, 0, 0x00, 0x01, 0, 0]);
    // F0 IN: 8 bytes.
    let (s, _) = req(Request::TlpCompletion);
    assert_eq!(s, [0xC0, 0xF0, 0, 0, 0, 0, 0x08, 0x00]);
    // F2: a 256 KiB copy-in window at slot 0: wValue = 512 sectors, wIndex = 16 slots << 8.
    let (s, _) = req(Request::SramDma {
        to_host: false,
        sectors: 512,
        first_slot: 0,
        slots: 16,
    });
    assert_eq!(s, [0x40, 0xF2, 0x00, 0x02, 0x00, 0x10, 0x00, 0x00]);
    // F2 read (bit 15) of 8 sectors from slot 16.
    let (s, _) = req(Request::SramDma {
        to_host: true,
        sectors: 8,
        first_slot: 16,
        slots: 1,
    });
    assert_eq!(s, [0x40, 0xF2, 0x08, 0x80, 0x10, 0x01, 0x00, 0x00]);
    // F3 power on.
    let (s, _) = req(Request::PciePower { on: true });
    assert_eq!(s, [0x40, 0xF3, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00]);
}

#[test]
fn byte_enables_and_config_addresses_follow_the_spec() {
    // ((1<<size)-1) << (addr & 3)
    assert_eq!(tlp::byte_enable(0x1002, 1), 0b0100);
    assert_eq!(tlp::byte_enable(0x1002, 2), 0b1100);
    assert_eq!(tlp::byte_enable(0x1000, 4), 0b1111);
    // bus<<24 | dev<<19 | fn<<16 | reg
    assert_eq!(tlp::cfg_addr(1, 2, 3, 0x18), 0x0113_0018);
    assert!(tlp::is_posted(tlp::MEM_WR));
    assert!(!tlp::is_posted(tlp::MEM_RD));
    assert!(!tlp::is_posted(tlp::CFG_WR1));
    assert!(tlp::is_posted(0x30)); // message
}

#[test]
fn completion_layout_matches_the_firmware() {
    // data u32 LE, header (status = byte4 >> 5, byte count low 12 bits), flags, return status.
    let b = [0x78, 0x56, 0x34, 0x12, 0x20, 0x04, 0x01, 0x00];
    let c = Completion::parse(&b).unwrap();
    assert_eq!(c.data, 0x1234_5678);
    assert_eq!(c.status, CplStatus::UnsupportedRequest);
    assert_eq!(c.byte_count, 4);
    assert_eq!(c.flags, 1);
    assert_eq!(c.ret, 0);
    assert_eq!(c.encode(), b);
    let b = [0, 0, 0, 0, 0x40, 0x04, 0, 0xFF];
    let c = Completion::parse(&b).unwrap();
    assert_eq!(c.status, CplStatus::ConfigRetry);
    assert_eq!(c.ret, 0xFF);
}

#[test]
fn device_side_parses_every_request_the_host_encodes() {
    let all = [
        Request::ReadXdata {
            addr: 0xF123,
            bank: 1,
            len: 255,
        },
        Request::WriteXdata {
            addr: 0x0171,
            bank: 0,
            value: 0xFF,
        },
        Request::Tlp {
            fmt_type: tlp::CFG_WR0,
            byte_enable: 0x3,
            mode: TlpMode::Single,
            chunk_dwords: 5,
            addr: 0x18,
            value: 0x0004_0100,
        },
        Request::Tlp {
            fmt_type: tlp::MEM_RD,
            byte_enable: 0xF,
            mode: TlpMode::StreamRead,
            chunk_dwords: 0,
            addr: 0xFFFF_FFFF_0000_0000,
            value: 1 << 18,
        },
        Request::TlpCompletion,
        Request::SramDma {
            to_host: true,
            sectors: 0x7FFF,
            first_slot: 31,
            slots: 32,
        },
        Request::PciePower { on: false },
    ];
    for r in all {
        let (s, d) = r.encode().unwrap();
        let s2 = ControlSetup::from_bytes(&s.to_bytes()).unwrap();
        assert_eq!(Request::parse(&s2, &d).unwrap(), r, "{r:?}");
    }
    for c in [
        Cdb::ReadXdata {
            addr: 0x1FFFF,
            len: 7,
        },
        Cdb::WriteXdata { addr: 0, value: 1 },
        Cdb::Write16 {
            lba: 1024,
            sectors: 1,
        },
    ] {
        assert_eq!(Cdb::parse(&c.encode().unwrap()).unwrap(), c);
    }
    let s = SenseIu { tag: 31, status: 2 };
    assert_eq!(SenseIu::parse(&s.encode()).unwrap(), s);
}

#[test]
fn malformed_requests_are_errors_with_offsets() {
    let bad = ControlSetup {
        request_type: 0x40,
        request: 0xF0,
        value: 0x0F60,
        index: 3,
        length: 12,
    };
    let e = Request::parse(&bad, &[0u8; 12]).unwrap_err();
    assert_eq!(e.offset, 4, "{e}");
    let short = ControlSetup {
        request_type: 0x40,
        request: 0xF0,
        value: 0x0F60,
        index: 0,
        length: 12,
    };
    let e = Request::parse(&short, &[0u8; 8]).unwrap_err();
    assert!(e.to_string().contains("F0 OUT data"), "{e}");
    let e = Cdb::parse(&[0x12, 0, 0, 0, 0, 0]).unwrap_err();
    assert!(e.to_string().contains("0x12"), "{e}");
    let mut iu = [0u8; 32];
    iu[0] = 1;
    iu[16] = 0xE4;
    iu[21] = 9;
    let e = CommandIu::parse(&iu).unwrap_err();
    assert_eq!(e.offset, 21, "{e}");
    // A value wider than its field is refused, not truncated.
    let e = Request::SramDma {
        to_host: false,
        sectors: 0x8000,
        first_slot: 0,
        slots: 1,
    }
    .encode()
    .unwrap_err();
    assert!(e.to_string().contains("sectors"), "{e}");
}
