//! Test-only helpers that find what tests compare against: the shared data next to the
//! repository (`../shared`: captures, specs, `amd-registers`), external tools (`llvm-objdump-22`)
//! and Python modules (tinygrad).
//!
//! A test whose oracle is missing must not pass silently: under CI (environment variable `CI`
//! set) the `require_*` functions panic, so the test fails and says what is missing; elsewhere
//! they print a loud `SKIPPED` line and return `None`, and the test returns early.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether this run is CI (`CI` set to anything but empty, `0` or `false`).
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// The missing oracle `what`: a test failure under CI, a loud skip elsewhere.
pub fn missing(what: &str) {
    if in_ci() {
        panic!("{what} is missing, and CI is set: this test cannot run, so it fails");
    }
    eprintln!("\n!!!!!!!! SKIPPED: {what} is missing (this would fail under CI) !!!!!!!!\n");
}

/// Where the shared data is: `$WAVESCOPE_SHARED`, else `shared/` next to the repository.
pub fn shared_dir() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("WAVESCOPE_SHARED") {
        let p = PathBuf::from(p);
        return p.is_dir().then_some(p);
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    let p = repo.parent()?.join("shared");
    p.join("traces").is_dir().then_some(p)
}

/// `shared/<rel>` if it exists; otherwise [`missing`] and `None`.
pub fn require_shared(rel: &str) -> Option<PathBuf> {
    match shared_dir().map(|d| d.join(rel)) {
        Some(p) if p.exists() => Some(p),
        Some(p) => {
            missing(&format!("shared data {}", p.display()));
            None
        }
        None => {
            missing(&format!(
                "the shared data directory (../shared next to the repository, or $WAVESCOPE_SHARED) for {rel}"
            ));
            None
        }
    }
}

/// `shared/<rel>`, which the test cannot do without: panics when it is missing (outside CI
/// too), for tests whose whole point is that data.
pub fn shared(rel: &str) -> PathBuf {
    require_shared(rel).unwrap_or_else(|| panic!("shared data {rel} is missing"))
}

/// Every shared capture's `profile.pkl` (`shared/traces/<arch>/<case>/profile.pkl`, sorted),
/// for tests that hold an analysis to the same result on all of them; panics when the shared
/// captures are missing (outside CI too).
pub fn shared_profiles() -> Vec<PathBuf> {
    let root = shared("traces");
    let mut out = Vec::new();
    let dirs = |d: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(d)
            .unwrap_or_else(|e| panic!("{}: {e} (the shared captures are needed)", d.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect()
    };
    for arch in dirs(&root) {
        for case in dirs(&arch) {
            let p = case.join("profile.pkl");
            if p.exists() {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The path of executable `name` on `PATH`; otherwise [`missing`] and `None`.
pub fn require_tool(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        missing(&format!("the tool {name} (not on PATH)"));
    }
    found
}

/// `python3` if it can `import <module>` (optionally checking `<module>.__version__`);
/// otherwise [`missing`] and `None`.
pub fn require_python_module(module: &str, version: Option<&str>) -> Option<PathBuf> {
    let python = require_tool("python3")?;
    let script = match version {
        Some(v) => format!(
            "import importlib.metadata as m, {module}; assert m.version('{module}') == '{v}', m.version('{module}')"
        ),
        None => format!("import {module}"),
    };
    let ok = Command::new(&python)
        .args(["-c", &script])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        let want = version.map(|v| format!("=={v}")).unwrap_or_default();
        missing(&format!("the Python module {module}{want}"));
        return None;
    }
    Some(python)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_tool_that_exists_and_not_one_that_does_not() {
        // `sh` is on every machine these tests run on.
        assert!(require_tool("sh").is_some());
        if !in_ci() {
            assert!(require_tool("no-such-tool-wavescope").is_none());
        }
    }

    #[test]
    fn a_missing_oracle_fails_under_ci() {
        // Run this crate's test binary again with CI set: the helper must panic there.
        let exe = std::env::current_exe().unwrap();
        let out = Command::new(exe)
            .args(["--exact", "tests::probe_missing_tool", "--include-ignored"])
            .env("CI", "true")
            .output()
            .unwrap();
        assert!(!out.status.success(), "a missing tool passed under CI");
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "tests::probe_missing_tool", "--include-ignored"])
            .env_remove("CI")
            .output()
            .unwrap();
        assert!(out.status.success(), "a missing tool failed outside CI");
    }

    #[test]
    #[ignore = "run by a_missing_oracle_fails_under_ci"]
    fn probe_missing_tool() {
        assert!(require_tool("no-such-tool-wavescope").is_none());
    }
}
