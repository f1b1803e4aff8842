//! The SQTT decoder on arbitrary bytes, both framings: analysis, canonical output, the
//! per-packet iterator and the run API must never panic, and the two APIs must agree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use traces::sqtt::{self, canonical, AnalyzeOptions, DecodeOptions, Decoder, Framing};

fuzz_target!(|data: &[u8]| {
    for framing in [Framing::Reference, Framing::Hardware] {
        let decode = DecodeOptions {
            framing,
            ..Default::default()
        };
        let _ = sqtt::analyze_with(
            data,
            None,
            AnalyzeOptions {
                decode,
                ..Default::default()
            },
        );
        let mut sink = Vec::new();
        let _ = canonical::write_blob(&mut sink, data, decode);
        let per_packet = Decoder::new(data, decode).count() as u64;
        let mut runs = 0u64;
        Decoder::new(data, decode).for_each_run(|_, n| runs += n as u64);
        assert_eq!(per_packet, runs);
        let mut d = Decoder::new(data, decode);
        d.by_ref().for_each(drop);
        let _ = d.tail();
    }
});
