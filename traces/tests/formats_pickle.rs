//! tinygrad profile.pkl import, checked against the independently extracted meta.json and the
//! raw .sqtt / .elf / pmc files next to each capture.

mod formats_common;
use formats_common::*;

use traces::open::{info_path, open_path, Format};

#[test]
fn info_matches_meta_for_every_capture() {
    for dir in capture_dirs() {
        let meta = meta(&dir);
        let info = info_path(&dir.join("profile.pkl")).unwrap();
        let info_json = serde_json::to_value(&info).unwrap();
        let name = dir.display();
        assert_eq!(info.format, "tinygrad-pickle");
        // Event counts per class, exactly (no extra classes either).
        let counts = info_json["source_event_counts"].as_object().unwrap();
        let expected = meta["event_counts"].as_object().unwrap();
        for (k, v) in expected {
            assert_eq!(counts.get(k), Some(v), "{name}: count of {k}");
        }
        for (k, v) in counts {
            assert!(
                expected.contains_key(k) || v == 0,
                "{name}: unexpected class {k}"
            );
        }
        // SQTT: same order, fields, and bytes identical to the .sqtt files.
        let sq = info_json["sqtt"].as_array().unwrap();
        let msq = meta["sqtt"].as_array().unwrap();
        assert_eq!(sq.len(), msq.len(), "{name}: sqtt count");
        for (got, want) in sq.iter().zip(msq) {
            for f in ["kern", "se", "itrace", "bytes", "exec_tag"] {
                assert_eq!(got[f], want[f], "{name}: sqtt {f}");
            }
            let raw = std::fs::read(dir.join(want["file"].as_str().unwrap())).unwrap();
            assert_eq!(
                got["sha256"].as_str().unwrap(),
                traces::open::sha256_hex(&raw),
                "{name}: {}",
                want["file"]
            );
        }
        // Programs: name, base, tag, size; bytes equal to the extracted ELF.
        let progs = info_json["programs"].as_array().unwrap();
        let mprogs = meta["programs"].as_array().unwrap();
        assert_eq!(progs.len(), mprogs.len(), "{name}: programs");
        for (got, want) in progs.iter().zip(mprogs) {
            for f in ["name", "base", "tag", "bytes"] {
                assert_eq!(got[f], want[f], "{name}: program {f}");
            }
            let raw = std::fs::read(dir.join(want["file"].as_str().unwrap())).unwrap();
            assert_eq!(
                got["sha256"].as_str().unwrap(),
                traces::open::sha256_hex(&raw)
            );
        }
        // Devices: tdiff (exact decimal text) and props.
        for want in meta["devices"].as_array().unwrap() {
            let got = info
                .devices
                .iter()
                .find(|d| d.name == want["device"].as_str().unwrap())
                .unwrap();
            assert_eq!(
                got.clock_offset_us,
                want["tdiff"].as_str().unwrap(),
                "{name}: tdiff"
            );
            assert!(got.declared);
            let props = serde_json::to_value(&got.props).unwrap();
            if want["props"].is_null() {
                assert_eq!(props, serde_json::json!({}));
            } else {
                assert_eq!(props, want["props"], "{name}: props");
            }
        }
        assert!(info.warnings.is_empty(), "{name}: {:?}", info.warnings);
    }
}

#[test]
fn pmc_and_kernels() {
    for dir in capture_dirs() {
        let meta = meta(&dir);
        let (format, p) = open_path(&dir.join("profile.pkl")).unwrap();
        assert_eq!(format, Format::TinygradPickle);
        let mpmc = meta["pmc"].as_array().unwrap();
        assert_eq!(p.pmc.len(), mpmc.len());
        for (got, want) in p.pmc.iter().zip(mpmc) {
            let raw = std::fs::read(dir.join(want["file"].as_str().unwrap())).unwrap();
            assert_eq!(p.blob(got.blob), &raw[..]);
            let names: Vec<&str> = want["sched"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["name"].as_str().unwrap())
                .collect();
            assert_eq!(
                got.samples
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>(),
                names
            );
            assert_eq!(
                got.samples.last().unwrap().off,
                want["sched"].as_array().unwrap().last().unwrap()["off"]
                    .as_u64()
                    .unwrap()
            );
        }
        // One kernel run per program (the examples run each kernel once), inside its range.
        assert_eq!(p.kernels.len(), p.programs.len(), "{}", dir.display());
        for k in &p.kernels {
            let prog = p.programs.iter().find(|pr| pr.tag == k.kern).unwrap();
            assert_eq!(prog.name, k.name);
            // GPU ticks * 10 ns + tdiff = start on the host clock.
            let dev = &p.devices[k.device as usize];
            assert_eq!(
                k.gpu_start.unwrap() * 10_000 + dev.clock_offset.0,
                k.start.0
            );
            assert!(k.end.unwrap() > k.start);
        }
        // Nesting was computed: some host ranges sit inside others.
        assert!(p.ranges.iter().any(|r| r.depth > 0), "{}", dir.display());
    }
}
