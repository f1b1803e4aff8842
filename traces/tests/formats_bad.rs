//! Truncated, corrupt and hostile pickles: clear errors with offsets, never a panic.

mod formats_common;
use formats_common::*;

use std::sync::Arc;
use traces::model::BlobStore;
use traces::pickle::{self, PickleError};

fn import(b: &[u8]) -> Result<traces::model::Profile, traces::tinygrad::TinygradError> {
    traces::tinygrad::import(Arc::new(BlobStore::Owned(b.to_vec())), "t.pkl")
}

#[test]
fn every_truncation_of_a_real_pickle_fails_cleanly() {
    let data = std::fs::read(capture_dirs()[0].join("profile.pkl")).unwrap();
    // Every prefix up to 4 KiB, then a stride across the file.
    let cuts: Vec<usize> = (0..4096.min(data.len()))
        .chain((4096..data.len()).step_by(997))
        .collect();
    for cut in cuts {
        let e = import(&data[..cut]).unwrap_err();
        let traces::tinygrad::TinygradError::Pickle(pe) = &e else {
            panic!("cut {cut}: {e}")
        };
        assert!(pe.offset() <= cut, "cut {cut}: {e}");
        assert!(e.to_string().contains("offset"), "{e}");
    }
}

#[test]
fn corrupt_bytes_never_panic() {
    let data = std::fs::read(capture_dirs()[0].join("profile.pkl")).unwrap();
    // Deterministic pseudo-random single-byte corruptions.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..1000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut d = data.clone();
        let at = (x as usize) % d.len();
        d[at] = (x >> 32) as u8;
        let _ = import(&d);
    }
}

#[test]
fn huge_length_fields() {
    // BINBYTES8 claiming 2^62 bytes, BINUNICODE claiming 4 GiB, LONG4 claiming 2 GiB.
    for (bytes, what) in [
        (
            &b"\x80\x04\x8e\x00\x00\x00\x00\x00\x00\x00\x40."[..],
            "bytes",
        ),
        (&b"\x80\x04X\xff\xff\xff\xff"[..], "string"),
        (
            &b"\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\xff"[..],
            "string",
        ),
        (
            &b"\x80\x04\x95\xff\xff\xff\xff\xff\xff\xff\x7f]."[..],
            "frame",
        ),
    ] {
        match pickle::parse(bytes) {
            Err(PickleError::Truncated {
                offset: 2, what: w, ..
            }) => assert_eq!(w, what),
            other => panic!("{other:?}"),
        }
    }
    match pickle::parse(b"\x80\x04\x8b\xff\xff\xff\x7f") {
        Err(PickleError::Limit { offset: 2, .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn deep_nesting_is_bounded() {
    // 100k nested MARKs: refused at the MARK limit, no stack overflow.
    let mut d = b"\x80\x04".to_vec();
    d.extend(std::iter::repeat_n(b'(', 100_000));
    match pickle::parse(&d) {
        Err(PickleError::Limit { what, .. }) => assert_eq!(what, "MARK nesting"),
        other => panic!("{other:?}"),
    }
    // 200k nested lists built with APPEND are fine to parse (flat arena) and their conversion
    // to the model is depth-limited.
    let mut d = b"\x80\x04]".to_vec();
    d.extend(std::iter::repeat_n(b']', 200_000));
    d.extend(std::iter::repeat_n(b'a', 200_000));
    d.push(b'.');
    let p = import(&d).unwrap();
    assert_eq!(p.source.event_counts.get("list"), Some(&1));
    // A memo "billion laughs": each list holds the previous one 10 times.
    let mut d = b"\x80\x04]\x94".to_vec();
    for i in 0..40u32 {
        d.push(b']');
        d.push(b'(');
        for _ in 0..10 {
            d.push(b'j');
            d.extend_from_slice(&i.to_le_bytes());
        }
        d.extend_from_slice(b"e\x940");
    }
    d.extend_from_slice(b"0]j");
    d.extend_from_slice(&40u32.to_le_bytes());
    d.extend_from_slice(b"a.");
    let p = import(&d).unwrap();
    assert_eq!(p.generic.len(), 1);
}

#[test]
fn unknown_opcodes_and_bad_stacks() {
    match pickle::parse(b"\x80\x04\xff") {
        Err(PickleError::UnknownOpcode {
            offset: 2,
            opcode: 0xff,
        }) => {}
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        pickle::parse(b"\x80\x04a."),
        Err(PickleError::StackUnderflow { offset: 2, .. })
    ));
    assert!(matches!(
        pickle::parse(b"\x80\x04e"),
        Err(PickleError::NoMark { offset: 2, .. })
    ));
    assert!(matches!(
        pickle::parse(b"\x80\x04h\x05"),
        Err(PickleError::MissingMemo { offset: 2, key: 5 })
    ));
    assert!(matches!(
        pickle::parse(b"\x80\x04NN."),
        Err(PickleError::BadStop {
            offset: 4,
            depth: 2
        })
    ));
    assert!(matches!(
        pickle::parse(b"\x80\x04N"),
        Err(PickleError::NoStop { offset: 3 })
    ));
    assert!(matches!(
        pickle::parse(b"\x80\x09N."),
        Err(PickleError::BadOperand { offset: 0, .. })
    ));
    assert!(matches!(
        pickle::parse(b"\x80\x04NQ."),
        Err(PickleError::Unsupported { offset: 3, .. })
    ));
}

#[test]
fn globals_outside_the_allow_list_are_refused() {
    for (m, n) in [
        ("os", "system"),
        ("builtins", "eval"),
        ("subprocess", "Popen"),
        ("posix", "system"),
        ("builtins", "getattr"),
        ("tinygradx", "X"),
    ] {
        // protocol 4 STACK_GLOBAL
        let mut d = b"\x80\x04".to_vec();
        for s in [m, n] {
            d.push(0x8c);
            d.push(s.len() as u8);
            d.extend_from_slice(s.as_bytes());
        }
        d.extend_from_slice(b"\x93).");
        match pickle::parse(&d) {
            Err(PickleError::ForbiddenGlobal {
                module,
                name,
                offset,
            }) => {
                assert_eq!((module.as_str(), name.as_str()), (m, n));
                assert_eq!(offset, d.len() - 3);
            }
            other => panic!("{m}.{n}: {other:?}"),
        }
        // protocol 0 GLOBAL
        let d = format!("c{m}\n{n}\n.");
        assert!(
            matches!(
                pickle::parse(d.as_bytes()),
                Err(PickleError::ForbiddenGlobal { offset: 0, .. })
            ),
            "{m}.{n}"
        );
    }
}

#[test]
fn unknown_tinygrad_classes_become_generic_records() {
    // [tinygrad.helpers.ProfileFutureEvent(x=1)] built like a dataclass: NEWOBJ + BUILD.
    let mut d = b"\x80\x04]".to_vec();
    for s in ["tinygrad.helpers", "ProfileFutureEvent"] {
        d.push(0x8c);
        d.push(s.len() as u8);
        d.extend_from_slice(s.as_bytes());
    }
    d.extend_from_slice(b"\x93)\x81}\x8c\x01xK\x01sba.");
    let p = import(&d).unwrap();
    assert_eq!(p.generic.len(), 1);
    assert_eq!(p.generic[0].class, "tinygrad.helpers.ProfileFutureEvent");
    assert_eq!(p.source.event_counts.get("ProfileFutureEvent"), Some(&1));
    assert!(p
        .source
        .warnings
        .iter()
        .any(|w| w.contains("ProfileFutureEvent")));
}

#[test]
fn not_a_list_root() {
    assert!(import(b"\x80\x04N.")
        .unwrap_err()
        .to_string()
        .contains("not a list"));
}
