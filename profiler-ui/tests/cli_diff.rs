//! `wavescope diff` end to end: emulator captures of the fixture kernel pair that differs by one
//! instruction (tests/fixtures/kernels/emu/diff_{a,b}.c), two captures of one kernel with
//! different buffer sizes, a real gfx1100 capture against an emulator capture of the same
//! program, and every `--json` output checked against the schema table in docs/diff-json.md.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The shared captures; missing fails under CI (see `testdata`).
fn shared_traces() -> Option<PathBuf> {
    testdata::require_shared("traces")
}

fn wavescope(args: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_wavescope"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "wavescope {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Captures `kernel` of `hsaco` on the emulator into `out`: `n` work-items, buffers sized to fit.
fn capture(dir: &Path, hsaco: &str, kernel: &str, groups: u32, out: &str) -> PathBuf {
    let n = groups * 64;
    let buf = format!("buf:{}:rand", n * 4);
    let path = dir.join(out);
    let k = root()
        .join("tests/fixtures/kernels/emu")
        .join(hsaco)
        .display()
        .to_string();
    let grid = groups.to_string();
    let nn = format!("u32:{n}");
    wavescope(&[
        "capture",
        &k,
        "--kernel",
        kernel,
        "--device",
        "emu",
        "--grid",
        &grid,
        "--block",
        "64",
        "--arg",
        &format!("buf:{}", n * 4),
        "--arg",
        &buf,
        "--arg",
        &buf,
        "--arg",
        &nn,
        "-o",
        path.to_str().unwrap(),
    ]);
    path
}

fn diff_json(a: &Path, b: &Path) -> Value {
    let out = wavescope(&["diff", "--json", a.to_str().unwrap(), b.to_str().unwrap()]);
    serde_json::from_slice(&out).unwrap()
}

fn kernel<'v>(d: &'v Value, name: &str) -> &'v Value {
    d["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == name)
        .unwrap_or_else(|| panic!("kernel {name} not in {d}"))
}

fn rows(k: &Value) -> &Vec<Value> {
    k["instructions"].as_array().unwrap()
}

// ---- the schema in docs/diff-json.md ----

/// `path -> allowed JSON types` from the doc's field table.
fn documented_schema() -> BTreeMap<String, BTreeSet<String>> {
    let doc = std::fs::read_to_string(root().join("docs/diff-json.md")).unwrap();
    let mut m = BTreeMap::new();
    for line in doc.lines() {
        // `\|` inside a cell is an escaped bar (type alternatives), not a column separator.
        let line = line.replace("\\|", "\u{1}");
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 || !cells[1].starts_with('`') {
            continue;
        }
        let path = cells[1].trim_matches('`').to_string();
        let types = cells[2]
            .split('\u{1}')
            .map(|t| t.trim().to_string())
            .collect();
        m.insert(path, types);
    }
    assert!(m.len() > 50, "schema table not found in docs/diff-json.md");
    m
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Walks `v`, checking each field against the schema, and records the paths seen.
fn check_schema(
    v: &Value,
    path: &str,
    schema: &BTreeMap<String, BTreeSet<String>>,
    seen: &mut BTreeSet<String>,
) {
    // Array elements are described by their fields (`kernels[].name`); the root by its own.
    if !path.is_empty() && !path.ends_with("[]") {
        let allowed = schema
            .get(path)
            .unwrap_or_else(|| panic!("field {path} is not documented in docs/diff-json.md"));
        let t = json_type(v);
        let ok = allowed.contains(t) || (t == "integer" && allowed.contains("number"));
        assert!(ok, "{path}: {t} but documented as {allowed:?}");
        seen.insert(path.to_string());
    }
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                check_schema(x, &p, schema, seen);
            }
        }
        Value::Array(a) => {
            for x in a {
                check_schema(x, &format!("{path}[]"), schema, seen);
            }
        }
        _ => {}
    }
}

#[test]
fn diff_of_emulator_captures_and_the_json_schema() {
    let dir = tempfile::tempdir().unwrap();
    let schema = documented_schema();
    let mut seen = BTreeSet::new();

    // 1. The fixture pair: one instruction edited (v_sub_nc_u32 -> v_add_nc_u32).
    let a = capture(dir.path(), "diff_a.hsaco", "edited", 1, "a.wst");
    let b = capture(dir.path(), "diff_b.hsaco", "edited", 1, "b.wst");
    let d = diff_json(&a, &b);
    check_schema(&d, "", &schema, &mut seen);
    assert_eq!(d["schema"], "wavescope-diff/1");
    let k = kernel(&d, "edited");
    assert_eq!(k["match"], "name", "different code, same name");
    assert_eq!(k["instruction_match"], "alignment");
    let stat = k["a"]["static_instructions"].as_u64().unwrap();
    assert_eq!(k["b"]["static_instructions"].as_u64(), Some(stat));
    assert_eq!(k["summary"]["same"].as_u64(), Some(stat - 1));
    assert_eq!(k["summary"]["removed"].as_u64(), Some(1));
    assert_eq!(k["summary"]["added"].as_u64(), Some(1));
    assert_eq!(k["summary"]["changed"].as_u64(), Some(0));
    let removed: Vec<&Value> = rows(k)
        .iter()
        .filter(|r| r["status"] == "removed")
        .collect();
    let added: Vec<&Value> = rows(k).iter().filter(|r| r["status"] == "added").collect();
    assert!(removed[0]["a"]["text"]
        .as_str()
        .unwrap()
        .starts_with("v_sub_nc_u32"));
    assert!(added[0]["b"]["text"]
        .as_str()
        .unwrap()
        .starts_with("v_add_nc_u32"));
    assert!(removed[0]["b"].is_null() && added[0]["a"].is_null());
    // Both ran on the emulator (one wave each), and the edited instruction was traced.
    assert!(
        removed[0]["a"]["count"].as_u64().unwrap() > 0,
        "{}",
        removed[0]
    );
    assert!(added[0]["b"]["count"].as_u64().unwrap() > 0, "{}", added[0]);
    assert_eq!(
        removed[0]["delta"]["total"].as_i64(),
        removed[0]["a"]["total"].as_i64().map(|t| -t)
    );
    for r in rows(k).iter().filter(|r| r["status"] == "same") {
        assert_eq!(r["a"]["offset"], r["b"]["offset"], "{r}");
        assert_eq!(r["a"]["text"], r["b"]["text"], "{r}");
    }
    // Sorted by |delta.total|, largest first.
    let d_abs: Vec<u64> = rows(k)
        .iter()
        .map(|r| r["delta"]["total"].as_i64().unwrap().unsigned_abs())
        .collect();
    assert!(d_abs.windows(2).all(|w| w[0] >= w[1]), "{d_abs:?}");

    // 2. One kernel, two buffer sizes: same code, matched by PC, more waves -> more hits.
    let big = capture(dir.path(), "diff_a.hsaco", "edited", 4, "a4.wst");
    let d = diff_json(&a, &big);
    check_schema(&d, "", &schema, &mut seen);
    let k = kernel(&d, "edited");
    assert_eq!(k["match"], "code");
    assert_eq!(k["instruction_match"], "pc");
    let (wa, wb) = (
        k["a"]["waves"].as_u64().unwrap(),
        k["b"]["waves"].as_u64().unwrap(),
    );
    assert!(wb > wa, "4 work-groups, {wb} waves vs {wa}");
    assert!(rows(k).iter().all(|r| r["status"] == "same"));
    assert!(
        rows(k)
            .iter()
            .any(|r| r["delta"]["count"].as_i64().unwrap() > 0),
        "no instruction ran more often with 4x the work"
    );
    assert!(k["time_ratio"].as_f64().is_some());

    // 3. A capture against itself: zero deltas everywhere.
    let d = diff_json(&big, &big);
    check_schema(&d, "", &schema, &mut seen);
    let k = kernel(&d, "edited");
    assert_eq!(k["time_ratio"].as_f64(), Some(1.0));
    for r in rows(k) {
        assert_eq!(r["status"], "same");
        for f in ["count", "total", "median", "max"] {
            assert_eq!(r["delta"][f].as_i64(), Some(0), "{r}");
        }
        assert_eq!(r["delta"]["mean"].as_f64(), Some(0.0));
    }

    // 4. A kernel only in one capture (the demo's kernels against the fixture), across files.
    if let Some(t) = shared_traces() {
        let real = t.join("gfx1100/plus_run_0/profile.pkl");
        let d = diff_json(&real, &a);
        check_schema(&d, "", &schema, &mut seen);
        assert!(d["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["match"] == "removed" && k["b"].is_null()));
        assert!(d["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["match"] == "added" && k["a"].is_null()));
    }

    // Every documented field appeared in some output.
    let missing: Vec<&String> = schema.keys().filter(|p| !seen.contains(*p)).collect();
    assert!(
        missing.is_empty(),
        "documented but never printed: {missing:?}"
    );

    // The text form names the edit.
    let txt = String::from_utf8(wavescope(&[
        "diff",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--kernel",
        "edited",
    ]))
    .unwrap();
    assert!(txt.contains("1 removed, 1 added"), "{txt}");
    assert!(
        txt.lines()
            .any(|l| l.starts_with("  - ") && l.contains("v_sub_nc_u32")),
        "{txt}"
    );
    assert!(
        txt.lines()
            .any(|l| l.starts_with("  + ") && l.contains("v_add_nc_u32")),
        "{txt}"
    );
}

#[test]
fn a_real_gfx1100_run_against_the_emulator_running_the_same_program() {
    let Some(t) = shared_traces() else {
        return;
    };
    let case = t.join("gfx1100/plus_run_0");
    let dir = tempfile::tempdir().unwrap();
    let emu = dir.path().join("emu.wst");
    // tinygrad's E_3: out[i] = a[i] + b[i] for 3 floats, one work-group of 3.
    let k = case.join("program0_E_3.elf").display().to_string();
    wavescope(&[
        "capture",
        &k,
        "--kernel",
        "E_3",
        "--device",
        "emu",
        "--grid",
        "1",
        "--block",
        "3",
        "--arg",
        "buf:12",
        "--arg",
        "buf:12:rand",
        "--arg",
        "buf:12:rand",
        "-o",
        emu.to_str().unwrap(),
    ]);
    let d = diff_json(&case.join("profile.pkl"), &emu);
    assert_eq!(d["cross_arch"], false);
    let k = kernel(&d, "E_3");
    assert_eq!(k["match"], "code", "the same code object ran on both");
    assert_eq!(k["instruction_match"], "pc");
    assert_eq!(k["a"]["code_hash"], k["b"]["code_hash"]);
    let executed = |s: &str| -> Vec<String> {
        rows(k)
            .iter()
            .filter(|r| r[s]["count"].as_u64().unwrap_or(0) > 0)
            .map(|r| r["position"].to_string())
            .collect()
    };
    // Both ran the same straight-line code: the same instructions were hit on both sides.
    let (ea, eb) = (executed("a"), executed("b"));
    assert!(!ea.is_empty());
    assert_eq!(ea.len(), eb.len(), "{ea:?} vs {eb:?}");
    // The emulator's timing is its own model, not the silicon's: some latency differs.
    assert!(rows(k)
        .iter()
        .any(|r| r["delta"]["total"].as_i64() != Some(0)));
}
