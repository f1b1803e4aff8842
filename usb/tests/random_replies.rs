//! A bridge that answers garbage (random, short, overlong replies, short writes, a disconnect
//! when its script ends) never makes the host side panic, and every failure says what it was.

mod common;

#[test]
fn random_replies_never_panic() {
    let mut x = 0x1234_5678_u32;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    let (mut failures, mut past_bring_up) = (0, 0);
    for round in 0..3000u32 {
        let len = (next() % 4096) as usize;
        let mut script: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if let Some(b) = script.first_mut() {
            *b = (round & 1) as u8; // both firmwares
        }
        let errs = common::replies::drive(&script);
        // One error is a failed bring-up; more mean the later steps ran too.
        if errs.len() != 1 {
            past_bring_up += 1;
        }
        for e in errs {
            failures += 1;
            assert!(e.len() > 10, "an error that says nothing: {e:?}");
        }
    }
    assert!(failures > 0);
    assert!(
        past_bring_up > 300,
        "{past_bring_up} of 3000 scripts got past bring-up"
    );
}
