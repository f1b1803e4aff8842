//! `wavescope decode` end to end on the shared captures: the canonical output hashes to the
//! reference decode's `stream_sha256`, and the summary JSON carries the reference's counts and
//! waves; bad input gives an error naming the file, never a panic.

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

fn wavescope() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wavescope"))
}

fn shared() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces");
    assert!(p.is_dir(), "shared captures missing at {}", p.display());
    p
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn canonical_and_summary_match_the_reference() {
    let mut n = 0;
    for arch in ["gfx1100", "gfx1200", "gfx950"] {
        let mut cases: Vec<_> = std::fs::read_dir(shared().join(arch))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        cases.sort();
        for dir in cases {
            let r: Value =
                serde_json::from_slice(&std::fs::read(dir.join("reference.json")).unwrap())
                    .unwrap();
            for ev in r["sqtt_events"].as_array().unwrap() {
                let blob = dir.join(format!("kern{}_se{}.sqtt", ev["kern"], ev["se"]));
                let want = &ev["decoder_2026_05"];
                let out = wavescope()
                    .args([
                        "decode",
                        blob.to_str().unwrap(),
                        "--arch",
                        arch,
                        "--format",
                        "canonical",
                    ])
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                assert_eq!(
                    hex(&Sha256::digest(&out.stdout)),
                    want["stream_sha256"].as_str().unwrap()
                );
                assert!(
                    out.stderr.is_empty(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );

                let out = wavescope()
                    .args([
                        "decode",
                        blob.to_str().unwrap(),
                        "--arch",
                        arch,
                        "--format",
                        "summary",
                    ])
                    .output()
                    .unwrap();
                assert!(out.status.success());
                let s: Value = serde_json::from_slice(&out.stdout).unwrap();
                for key in [
                    "packet_total",
                    "packet_counts",
                    "wave_count",
                    "instruction_packets",
                    "first_time",
                    "last_time",
                ] {
                    assert_eq!(s[key], want[key], "{} {key}", blob.display());
                }
                let waves = s["waves"].as_array().unwrap();
                let ref_waves = want["waves"].as_array().unwrap();
                assert_eq!(waves.len(), ref_waves.len());
                for (w, rw) in waves.iter().zip(ref_waves) {
                    for key in ["se", "cu", "simd", "wave", "start", "end", "insts"] {
                        assert_eq!(w[key], rw[key], "{} wave {key}", blob.display());
                    }
                }
                n += 1;
            }
        }
    }
    assert!(n >= 90);
}

#[test]
fn text_format_is_readable() {
    let blob = shared().join("gfx1100/plus_run_0/kern0_se1.sqtt");
    let out = wavescope()
        .args(["decode", blob.to_str().unwrap(), "--arch", "gfx1100"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("1 waves"), "{text}");
    assert!(
        text.contains("WAVESTART") && text.contains("W0 cu 0 simd 0 slot 0"),
        "{text}"
    );
    assert!(text.contains("realtime"), "{text}");
}

#[test]
fn bad_input_is_an_error_naming_the_file() {
    let dir = std::env::temp_dir().join(format!("wavescope-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty.sqtt");
    std::fs::write(&empty, b"").unwrap();
    let junk = dir.join("junk.sqtt");
    std::fs::write(&junk, [0x02u8; 100]).unwrap();
    for (file, needle) in [(&empty, "empty"), (&junk, "LAYOUT_HEADER")] {
        let out = wavescope()
            .args(["decode", file.to_str().unwrap(), "--format", "summary"])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(file.to_str().unwrap()) && err.contains(needle),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    // A truncated real blob decodes partially, with a warning naming the offset.
    let blob = std::fs::read(shared().join("gfx1100/gemm_run_0/kern0_se0.sqtt")).unwrap();
    let cut = dir.join("cut.sqtt");
    std::fs::write(&cut, &blob[..3001]).unwrap();
    let out = wavescope()
        .args(["decode", cut.to_str().unwrap(), "--format", "summary"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nibble offset") && err.contains("truncated"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A reader that stops early (`| head`) ends the command quietly, never with a panic.
#[test]
fn closed_stdout_is_not_a_panic() {
    use std::io::Read;
    use std::process::Stdio;
    let pkl = shared().join("gfx1100/gemm_run_0/profile.pkl");
    let blob = shared().join("gfx1100/gemm_run_0/kern0_se0.sqtt");
    for args in [
        vec!["info", pkl.to_str().unwrap()],
        vec!["stats", pkl.to_str().unwrap(), "--json"],
        vec!["decode", blob.to_str().unwrap(), "--format", "canonical"],
    ] {
        let mut child = wavescope()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 16];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        // stdout is now closed.
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}
