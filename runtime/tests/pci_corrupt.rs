//! The AM driver's parsers (IP discovery table, firmware headers) against corrupted copies of
//! the emulator's well-formed inputs: never a panic, errors that say where.

use emu::pci::firmware::{names, synthetic_files, FILES};
use runtime::pci::am::discovery::{checksum, Discovery, TABLE_IP_DISCOVERY};
use runtime::pci::am::firmware::Firmware;
use runtime::pci::{PciError, PciResult};

/// Re-seals a mutated table: the IP table's checksum, then the binary checksum over it.
fn reseal(b: &mut [u8]) {
    let get16 = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    let e = 12 + TABLE_IP_DISCOVERY * 8;
    let ipo = usize::from(get16(b, e));
    if ipo + 8 <= b.len() {
        let n = usize::from(get16(b, ipo + 6));
        if let Some(s) = b.get(ipo..ipo + n).map(checksum) {
            b[e + 2..e + 4].copy_from_slice(&s.to_le_bytes());
        }
    }
    let size = usize::from(get16(b, 10)).clamp(10, b.len());
    let s = checksum(&b[10..size]);
    b[8..10].copy_from_slice(&s.to_le_bytes());
}

/// Random corruption of the emulator's table, re-sealed so the parser gets past the
/// checksums into the records: never a panic, errors carry the offset.
#[test]
fn corrupt_tables_are_errors_with_offsets() {
    let good = emu::pci::discovery::build((6, 4, 0, 2, 16, 32, 64));
    let d = Discovery::parse(&good, 0x1000).expect("the emulator's table parses");
    assert_eq!(d.gc.num_se, 6);
    let mut x = 0x9e37_79b9_u32;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x as usize
    };
    let (mut errs, mut oks) = (0, 0);
    for round in 0..3000 {
        let mut b = good.clone();
        // The headers, die and IP records sit in the first 1 KiB.
        for _ in 0..1 + next() % 3 {
            let at = 12 + next() % 1000;
            b[at] = next() as u8;
        }
        if round % 2 == 0 {
            reseal(&mut b);
        }
        if round % 5 == 0 {
            let n = next() % b.len();
            b.truncate(n);
        }
        match Discovery::parse(&b, 0x1000) {
            Ok(_) => oks += 1,
            Err(PciError::Discovery { offset, .. }) => {
                errs += 1;
                // Where the parser looked: inside the table, or where a corrupt 16-bit
                // offset pointed past its end.
                assert!((0x1000..0x1000 + 0x2_0000).contains(&offset), "{offset:#x}");
            }
            Err(e) => panic!("unexpected error kind: {e}"),
        }
    }
    assert!(errs > 1000 && oks > 0, "{errs} errors, {oks} parsed");
}

fn parse(files: &[(&'static str, Vec<u8>)]) -> PciResult<Firmware> {
    Firmware::parse_with(&names(), &mut |n| {
        Ok(files
            .iter()
            .find(|f| f.0 == n)
            .expect("known file")
            .1
            .clone())
    })
}

/// Corrupt and truncated files (random header bytes, random lengths): never a panic, and
/// every error names the file it is about.
#[test]
fn corrupt_firmware_is_an_error_naming_the_file() {
    let good = synthetic_files();
    parse(&good).expect("the synthetic set parses");
    let mut x = 0x2545_f491_u32;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    let mut errors = 0;
    for i in 0..good.len() {
        for round in 0..400 {
            let mut files = good.clone();
            let b = &mut files[i].1;
            if round % 4 == 0 {
                let n = next() as usize % b.len();
                b.truncate(n);
            } else {
                // Header fields live in the first 256 bytes.
                for _ in 0..1 + next() % 4 {
                    let at = next() as usize % b.len().min(256);
                    b[at] = next() as u8;
                }
            }
            if let Err(e) = parse(&files) {
                errors += 1;
                let msg = e.to_string();
                assert!(msg.contains(FILES[i]), "{msg}");
            }
        }
    }
    // Most corruptions are caught (some only touch payload bytes or unused fields).
    assert!(errors > good.len() * 100, "{errors}");
}
