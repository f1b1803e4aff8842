//! Boots the qemu guest of `run-guest.sh`, in which `dummy_hcd` and the `usb-gadget` FunctionFS
//! program play the ASM2464 bridge and `usb-host` drives it through rusb, and checks the guest's
//! result line. Skipped (with a message) when qemu-system-x86_64 or another prerequisite is
//! missing, unless the environment variable CI is set: then that is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use usb_qemu::RESULT_MARKER;

/// Exit status of run-guest.sh when qemu, busybox or the kernel package is unavailable.
const PREREQUISITE_MISSING: i32 = 77;

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
        .unwrap_or(false)
}

fn skip_or_fail(why: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("CI is set, so this test must run, but: {why}");
    }
    println!("skipped: {why}");
}

/// Runs the guest with both programs in `mode`; `None` = skipped.
fn run_guest(mode: &str) -> Option<String> {
    run_guest_with(mode, &[mode])
}

/// Boots the guest with gadget mode `mode` and the host program's arguments `host_args`.
fn run_guest_with(mode: &str, host_args: &[&str]) -> Option<String> {
    if !on_path("qemu-system-x86_64") {
        skip_or_fail("qemu-system-x86_64 not found (Debian: qemu-system-x86)");
        return None;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("run-guest.sh");
    let gadget = PathBuf::from(env!("CARGO_BIN_EXE_usb-gadget"));
    let host = PathBuf::from(env!("CARGO_BIN_EXE_usb-host"));
    let start = Instant::now();
    let out = Command::new("bash")
        .arg(&script)
        .arg("--gadget")
        .arg(&gadget)
        .arg("--host")
        .arg(&host)
        .args(["--gadget-arg", mode, "--"])
        .args(host_args)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", script.display()));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!(
        "--- guest ({mode}, {:.1} s)\n{text}",
        start.elapsed().as_secs_f64()
    );
    if out.status.code() == Some(PREREQUISITE_MISSING) {
        skip_or_fail(&format!("run-guest.sh: a prerequisite is missing:\n{text}"));
        return None;
    }
    let result = text
        .lines()
        .rfind(|l| l.contains(RESULT_MARKER))
        .unwrap_or_else(|| panic!("no {RESULT_MARKER} line from the guest:\n{text}"))
        .trim()
        .to_string();
    assert_eq!(
        result,
        format!("{RESULT_MARKER} PASS"),
        "guest output:\n{text}"
    );
    assert!(out.status.success(), "run-guest.sh: {}\n{text}", out.status);
    Some(text)
}

#[test]
fn harness_echo_over_dummy_hcd() {
    let Some(text) = run_guest("echo") else {
        return;
    };
    // The host program saw the device the gadget declared, at SuperSpeed, with the ASM2464's
    // custom-firmware endpoints.
    assert!(text.contains("usb-host: found add1:0001"), "{text}");
    assert!(text.contains("speed Super"), "{text}");
    assert!(
        text.contains("endpoints [(02, Out, Bulk), (81, In, Bulk)]"),
        "{text}"
    );
    assert!(text.contains("usb-host: all checks passed"), "{text}");
}

#[test]
fn asm24_protocol_over_rusb_and_functionfs() {
    let Some(text) = run_guest("asm24-scratch") else {
        return;
    };
    assert!(text.contains("usb-host: Custom firmware"), "{text}");
    assert!(text.contains("usb-host: all checks passed"), "{text}");
}

#[test]
fn asm24_gpu_copy_and_dispatch_over_rusb() {
    let Some(text) = run_guest("asm24-gpu") else {
        return;
    };
    // The host side brought the GPU up and checked the copy and the kernel's results.
    assert!(text.contains("usb-host: GPU 744c up"), "{text}");
    assert!(text.contains("usb-host: copy of 300001 bytes ok"), "{text}");
    assert!(
        text.contains("usb-host: vadd dispatch of 1000 floats ok"),
        "{text}"
    );
    assert!(text.contains("usb-host: all checks passed"), "{text}");
    // The device side: the emulated GPU behind the gadget ran that dispatch and moved the copy's
    // bytes with SDMA (in, device to device, out: at least three times 300001).
    let summary = text
        .lines()
        .find(|l| l.contains("usb-gadget: unbound;"))
        .unwrap_or_else(|| panic!("no gadget summary:\n{text}"));
    let num_before = |key: &str| -> u64 {
        let head = summary
            .split(key)
            .next()
            .unwrap_or_else(|| panic!("{key:?} not in {summary:?}"));
        head.rsplit(' ')
            .find(|w| !w.is_empty())
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("no number before {key:?} in {summary:?}"))
    };
    assert_eq!(num_before(" dispatches"), 1, "{summary}");
    assert!(num_before(" SDMA bytes") >= 3 * 300_001, "{summary}");
}

#[test]
fn streamed_copies_over_rusb_overlap_transfers() {
    // The copy bench, small: the host program fails unless both directions arrive unchanged
    // through libusb's asynchronous transfers, with two or more in flight and fewer waits per
    // MiB than the synchronous path (counts, not times).
    let Some(text) = run_guest_with("asm24-scratch", &["bench", "8"]) else {
        return;
    };
    for want in [
        "usb-host: bench synchronous host->device",
        "usb-host: bench streamed device->host",
        "usb-host: bench ratio host->device",
        "usb-host: all checks passed",
    ] {
        assert!(text.contains(want), "{want:?} missing:\n{text}");
    }
}
