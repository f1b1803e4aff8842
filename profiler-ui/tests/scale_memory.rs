//! A big capture opens under a memory limit: `wavescope stats` (decode, analysis, the
//! instruction table) on a tiled real capture runs in a child limited (`prlimit --as`) to the
//! address space a tiny capture needs plus 1.5x the SQTT bytes plus 64 MiB, the memory goal of
//! issue #23, at 10 MiB, 256 MiB and 1.5 GiB of SQTT (an address-space limit also counts the
//! whole mapping and untouched growth room, which the goal's resident memory would not);
//! the peak RSS of `stats` at 256 MiB against the goal; and the reopen of an indexed capture (its
//! table from the `.wst` analysis index) under the same limit. `decode --format summary` of one
//! big SE blob is held to the goal by its peak RSS (an address-space limit would count the growth
//! room of its wave list, which is never touched).

#[path = "scale/capture.rs"]
mod capture;

use std::path::{Path, PathBuf};
use std::process::Command;

const MIB: u64 = 1 << 20;

/// `wavescope stats FILE` with the address space limited to `limit` bytes; whether it succeeded.
fn stats_within(file: &Path, limit: u64) -> bool {
    Command::new("prlimit")
        .arg(format!("--as={limit}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_wavescope"))
        .arg("stats")
        .arg(file)
        // glibc reserves 64 MiB of address space per malloc arena and makes a second one only
        // when threads contend, which varies run to run (the limit found for the bare binary
        // then passed or failed by chance): one arena keeps the count fixed.
        .env("MALLOC_ARENA_MAX", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("prlimit")
        .success()
}

/// The smallest address-space limit (to 4 MiB) under which `stats FILE` runs.
fn least_limit(file: &Path) -> u64 {
    let (mut lo, mut hi) = (0u64, 64 * 1024 * MIB);
    assert!(
        stats_within(file, hi),
        "stats of {} fails even at 64 GiB",
        file.display()
    );
    while hi - lo > 4 * MIB {
        let mid = (lo + hi) / 2;
        if stats_within(file, mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// A tiled capture of `bytes` of SQTT in a temp dir, its SQTT size, the address space the binary
/// needs on a tiny capture, and the goal's limit (that + 1.5x the SQTT + 64 MiB); `None` when an
/// oracle is missing (a failure under `CI`).
struct Case {
    dir: tempfile::TempDir,
    wst: PathBuf,
    sqtt: u64,
    base: u64,
    limit: u64,
}

fn case(bytes: u64) -> Option<Case> {
    let src = testdata::require_shared(capture::SOURCE)?;
    testdata::require_tool("prlimit")?;
    // The binary, its threads and allocator, with no data to speak of.
    let base = least_limit(&src);
    let dir = tempfile::tempdir().unwrap();
    let (wst, sqtt) = capture::build_capture(&src, dir.path(), bytes);
    let limit = base + sqtt * 3 / 2 + 64 * MIB;
    Some(Case {
        dir,
        wst,
        sqtt,
        base,
        limit,
    })
}

fn opens_within_goal(bytes: u64) {
    // `_dir` keeps the temp dir (and the capture in it) alive to the end.
    let Some(Case {
        dir: _dir,
        wst,
        sqtt,
        base,
        limit,
    }) = case(bytes)
    else {
        return;
    };
    if !stats_within(&wst, limit) {
        panic!(
            "stats of {:.0} MiB of SQTT fails within {:.0} MiB of address space ({:.0} MiB for \
             the binary + 1.5x the SQTT + 64 MiB); it needs {:.0} MiB",
            sqtt as f64 / MIB as f64,
            limit as f64 / MIB as f64,
            base as f64 / MIB as f64,
            least_limit(&wst) as f64 / MIB as f64
        );
    }
}

// Passes since the compact pipeline (no per-token strings, hashes or mapped-instruction list
// on the stats path): 104 MiB where the goal allows 107 (main needed 172).
#[test]
fn stats_of_10_mib_within_the_memory_goal() {
    opens_within_goal(10 * MIB);
}

// Passes since stats keeps no wave records for untraced SEs and no token list for traced ones
// (session 15): 464 MiB of address space where the goal allows 480 (32 for the binary with
// MALLOC_ARENA_MAX=1, 256 mapped, 176 of heap); it needed 652 before. 256 MiB of SQTT: a few s.
#[test]
fn stats_of_256_mib_within_the_memory_goal() {
    opens_within_goal(256 * MIB);
}

// Passes since session 15, as the 256 MiB case: 2304 MiB of address space where the goal allows
// 2400 (4064 in session 9). 1.5 GiB of SQTT: about 20 s, 1.5 GiB of temp files.
#[test]
fn stats_of_1_5_gib_within_the_memory_goal() {
    opens_within_goal(1536 * MIB);
}

/// Reopening an indexed capture: `wavescope stats FILE` (its table from the index, the SQTT
/// never decoded) within the address space of the binary + 1.5x the SQTT + 64 MiB; the index is
/// written first, without a limit. The indexed file is mapped whole (the SQTT and an index of
/// 32 bytes a wave: about 1.9x the SQTT), and a mapping is address space, not memory (its pages
/// are the file's, read on demand and reclaimable), so where the file is larger than 1.5x the
/// SQTT the limit is the binary + the file + 64 MiB: all the heap the reopen may use beyond the
/// map is the goal's 64 MiB.
fn reopens_within_goal(bytes: u64) {
    let Some(Case {
        dir,
        wst,
        sqtt,
        limit,
        base,
    }) = case(bytes)
    else {
        return;
    };
    let indexed = dir.path().join("indexed.wst");
    let st = Command::new(env!("CARGO_BIN_EXE_wavescope"))
        .arg("index")
        .arg(&wst)
        .arg("-o")
        .arg(&indexed)
        .status()
        .expect("wavescope index");
    assert!(st.success(), "wavescope index failed: {st}");
    let file = std::fs::metadata(&indexed).expect("the indexed file").len();
    let limit = limit.max(base + file + 64 * MIB);
    if !stats_within(&indexed, limit) {
        panic!(
            "reopening {:.0} MiB of SQTT ({:.0} MiB indexed file; stats from the index) fails \
             within {:.0} MiB of address space; it needs {:.0} MiB",
            sqtt as f64 / MIB as f64,
            file as f64 / MIB as f64,
            limit as f64 / MIB as f64,
            least_limit(&indexed) as f64 / MIB as f64
        );
    }
}

#[test]
fn reopen_of_10_mib_within_the_memory_goal() {
    reopens_within_goal(10 * MIB);
}

#[test]
// A capture bigger than RAM minus its SQTT opens: the 1.5 GiB reopen is held to the binary +
// the indexed file + 64 MiB of address space, in every run. 86 s wall, 58 CPU s on a loaded
// 2-core machine (2026-12-06), most of it building the capture and its index (about 2 GiB RSS,
// 4.5 GiB of temp files); the reopen itself takes 0.13 CPU s.
fn reopen_of_1_5_gib_within_the_memory_goal() {
    reopens_within_goal(1536 * MIB);
}

/// The environment variable that makes a test of this file the probe: run `wavescope` with the
/// arguments it holds (separated by `\u{1f}`) and print its peak RSS. In a process of its own,
/// the probe's only child is that command, so `RUSAGE_CHILDREN`'s peak is its alone (the test
/// process runs other tests' children at the same time).
const RSS_PROBE: &str = "WAVESCOPE_TEST_RSS_PROBE";

/// When this process is a probe: runs the command and prints its peak RSS, and
/// returns true (the test must then return).
fn rss_probe() -> bool {
    use nix::sys::resource::{getrusage, UsageWho};
    let Some(args) = std::env::var_os(RSS_PROBE) else {
        return false;
    };
    let args = args.to_str().expect("probe arguments").to_string();
    let args: Vec<&str> = args.split('\u{1f}').collect();
    let st = Command::new(env!("CARGO_BIN_EXE_wavescope"))
        .args(&args)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("wavescope");
    assert!(st.success(), "wavescope {args:?} failed: {st}");
    let rss = getrusage(UsageWho::RUSAGE_CHILDREN)
        .expect("getrusage")
        .max_rss() as u64
        * 1024;
    println!("PEAK_RSS {rss}");
    true
}

/// The peak RSS of `wavescope ARGS`, measured by test `name` of this file re-run alone as the
/// probe ([`rss_probe`]).
fn peak_rss(name: &str, args: &[&std::ffi::OsStr]) -> u64 {
    let joined = args
        .iter()
        .map(|a| a.to_str().expect("a UTF-8 argument"))
        .collect::<Vec<_>>()
        .join("\u{1f}");
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(RSS_PROBE, joined)
        .output()
        .expect("the probe");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the probe failed: {text}");
    // The harness prints the test's name on the same line, before the probe's output.
    text.split("PEAK_RSS ")
        .nth(1)
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS from the probe: {text}"))
}

/// `wavescope stats` of 256 MiB of SQTT (7.3 M waves over six SEs; decode, analysis, the
/// instruction table) peaks within the goal, 1.5x the SQTT + 64 MiB, in resident memory (the
/// address-space test above also counts untouched growth room and the whole mapping). About
/// 390 MiB against 448 (2026-12-06).
#[test]
fn stats_of_256_mib_peak_rss_within_the_memory_goal() {
    if rss_probe() {
        return;
    }
    let Some(src) = testdata::require_shared(capture::SOURCE) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (wst, sqtt) = capture::build_capture(&src, dir.path(), 256 * MIB);
    let rss = peak_rss(
        "stats_of_256_mib_peak_rss_within_the_memory_goal",
        &["stats".as_ref(), wst.as_os_str()],
    );
    let goal = sqtt * 3 / 2 + 64 * MIB;
    assert!(
        rss <= goal,
        "stats of {:.1} MiB of SQTT peaked at {:.1} MiB, over the goal of {:.1} MiB (1.5x the \
         SQTT + 64 MiB)",
        sqtt as f64 / MIB as f64,
        rss as f64 / MIB as f64,
        goal as f64 / MIB as f64
    );
}

/// One SE blob of the 256 MiB capture (256 MiB over six SEs), from the same real SE stream
/// tiled in time: `decode --format summary` (a million waves, 200 MB of JSON) peaks within
/// 1.5x the blob + 64 MiB. Before the streamed summary it took 251 MiB against the goal's
/// 128; now about 65.
#[test]
fn decode_summary_of_a_43_mib_blob_within_the_memory_goal() {
    if rss_probe() {
        return;
    }
    let Some(src) = testdata::require_shared(capture::SOURCE) else {
        return;
    };
    let (_, p) = traces::open::open_path(&src).expect("the source capture");
    let s = p.sqtt.first().expect("a capture with SQTT");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("se{}_0.sqtt", s.se));
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let (len, _) = traces::sqtt::synth::tile(p.blob(s.blob), 256 * MIB / 6, &mut f).unwrap();
    std::io::Write::flush(&mut f).unwrap();
    drop(f);
    let rss = peak_rss(
        "decode_summary_of_a_43_mib_blob_within_the_memory_goal",
        &[
            "decode".as_ref(),
            "--format".as_ref(),
            "summary".as_ref(),
            path.as_os_str(),
        ],
    );
    let goal = len * 3 / 2 + 64 * MIB;
    assert!(
        rss <= goal,
        "decode --format summary of a {:.1} MiB blob peaked at {:.1} MiB, over the goal of \
         {:.1} MiB (1.5x the blob + 64 MiB)",
        len as f64 / MIB as f64,
        rss as f64 / MIB as f64,
        goal as f64 / MIB as f64
    );
}
