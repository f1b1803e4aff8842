//! Source beside ISA, driven headless: the workload example's `k_add` compiled by clang-22 with
//! `-g` and captured on the emulated gfx1100. The oracle for which instructions belong to which
//! line is `llvm-objdump-22 -d -l` (LLVM's own reading of the same line table), and the line's
//! text is read from the source file. A click on a source line selects exactly its instructions
//! in the table; a click on an instruction selects its line; a source file moved away from the
//! recorded path is said to be missing until its directory is added in the Source pane (or
//! with `--source-dir`, the same `SourceState::add_dir`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use common::wait;
use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use profiler_ui::app::{App, Tab};

/// PC -> (file, line) as llvm-objdump prints them (`; FILE:LINE` before the instructions).
fn objdump_lines(objdump: &Path, elf: &Path) -> BTreeMap<u64, (String, u32)> {
    let out = Command::new(objdump)
        .args(["-d", "-l", "--no-show-raw-insn"])
        .arg(elf)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut cur: Option<(String, u32)> = None;
    let mut map = BTreeMap::new();
    for l in text.lines() {
        if let Some(loc) = l.strip_prefix("; ") {
            if let Some((f, n)) = loc.rsplit_once(':') {
                if let Ok(n) = n.parse() {
                    cur = Some((f.to_string(), n));
                }
            }
            continue;
        }
        // "\ts_clause 0x1   // 000000001D00: BF850001"
        let Some((_, addr)) = l.split_once("// ") else {
            continue;
        };
        let Some((addr, _)) = addr.split_once(':') else {
            continue;
        };
        if let (Ok(pc), Some(c)) = (u64::from_str_radix(addr.trim(), 16), &cur) {
            map.insert(pc, c.clone());
        }
    }
    map
}

#[test]
fn source_and_instructions_select_each_other_and_missing_sources_are_said() {
    let (Some(clang), Some(lld), Some(objdump)) = (
        testdata::require_tool("clang-22"),
        testdata::require_tool("ld.lld-22"),
        testdata::require_tool("llvm-objdump-22"),
    ) else {
        return;
    };
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/workloads");
    let tmp = tempfile::tempdir().unwrap();
    let build = tmp.path().join("build");
    let moved = tmp.path().join("moved");
    let cap = tmp.path().join("cap");
    for d in [&build, &moved, &cap] {
        std::fs::create_dir(d).unwrap();
    }
    let src = build.join("add_mul.c");
    std::fs::copy(examples.join("kernels/add_mul.c"), &src).unwrap();
    let obj = build.join("add_mul.o");
    let hsaco = tmp.path().join("add_mul.hsaco");
    let st = Command::new(clang)
        .args([
            "-target",
            "amdgcn-amd-amdhsa",
            "-mcpu=gfx1100",
            "-nogpulib",
            "-O2",
            "-g",
            "-c",
        ])
        .arg(&src)
        .arg("-o")
        .arg(&obj)
        .status()
        .unwrap();
    assert!(st.success());
    assert!(Command::new(lld)
        .arg("-shared")
        .arg(&obj)
        .arg("-o")
        .arg(&hsaco)
        .status()
        .unwrap()
        .success());
    let truth = objdump_lines(&objdump, &hsaco);
    assert!(!truth.is_empty(), "llvm-objdump printed no line info");
    let source_lines: Vec<String> = std::fs::read_to_string(&src)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    // The sources move away: the recorded path no longer has them.
    std::fs::rename(&src, moved.join("add_mul.c")).unwrap();

    let workload = tmp.path().join("w.toml");
    std::fs::write(
        &workload,
        format!(
            r#"[code]
add_mul = "{hsaco}"
[buffers]
a = {{ file = "{ex}/data/a.npy" }}
b = {{ file = "{ex}/data/b.npy" }}
c = {{ size = 4000, dtype = "f32" }}
[[launch]]
kernel = "k_add"
grid = 16
block = 64
args = ["c", "a", "b", {{ u32 = 1000 }}]
expect = [{{ buffer = "c", file = "{ex}/data/c.npy" }}]
"#,
            hsaco = hsaco.display(),
            ex = examples.display()
        ),
    )
    .unwrap();
    let wst: PathBuf = cap.join("t.wst");
    let out = Command::new(env!("CARGO_BIN_EXE_wavescope"))
        .arg("capture")
        .arg("--workload")
        .arg(&workload)
        .args(["--device", "emu", "-o"])
        .arg(&wst)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let app = App::with_config_dir(Some(wst.clone()), None);
    let mut h = Harness::builder()
        .with_size(egui::vec2(1500.0, 1100.0))
        .build_ui_state(|ui, app: &mut App| app.show(ui), app);
    wait(&mut h);
    let k = *h.state().loaded().unwrap().sqtt_kernels.last().unwrap();
    h.state_mut().open_kernel(k);
    wait(&mut h);
    h.state_mut().tab = Tab::Instructions;
    h.run_steps(3);

    // The file is neither at its recorded path nor beside the capture: said, no text shown.
    assert!(
        h.query_all_by_label_contains("add_mul.c not found")
            .next()
            .is_some(),
        "the missing source is not said"
    );
    let stats = h
        .state()
        .loaded()
        .unwrap()
        .kernel_view
        .as_ref()
        .unwrap()
        .stats
        .clone();
    let table_pcs: BTreeSet<u64> = stats.iter().filter_map(|s| s.pc).collect();
    assert!(!table_pcs.is_empty());
    assert!(
        table_pcs.iter().all(|pc| truth.contains_key(pc)),
        "a table PC llvm-objdump does not list"
    );

    // Click the line with the most instructions in the table: exactly its instructions light up.
    let mut by_line: BTreeMap<u32, BTreeSet<u64>> = BTreeMap::new();
    for pc in &table_pcs {
        by_line.entry(truth[pc].1).or_default().insert(*pc);
    }
    let (&line, want) = by_line.iter().max_by_key(|(_, p)| p.len()).unwrap();
    h.get_by_label(&format!("add_mul.c:{line}")).click();
    h.run_steps(3);
    let s = &h.state().loaded().unwrap().source;
    assert_eq!(s.selected.as_ref().map(|(_, l)| *l), Some(line));
    assert_eq!(&s.selected_pcs, want, "line {line}'s instructions");

    // Click an instruction of another line: its line is selected.
    let (&other_line, pcs) = by_line.iter().find(|(l, _)| **l != line).unwrap();
    let pc = *pcs.iter().next().unwrap();
    let key = stats.iter().find(|s| s.pc == Some(pc)).unwrap().key.clone();
    h.get_by_label(&key).click();
    h.run_steps(3);
    let s = &h.state().loaded().unwrap().source;
    assert_eq!(
        s.selected
            .as_ref()
            .map(|(f, l)| (Path::new(f).file_name().unwrap().to_owned(), *l)),
        Some(("add_mul.c".into(), other_line)),
        "{key}'s line"
    );
    assert_eq!(s.selected_pcs, BTreeSet::from([pc]));

    // The directory it moved to, added in the pane: the line's text is shown.
    h.get_by_role(egui::accesskit::Role::TextInput).click();
    h.run_steps(2);
    h.get_by_role(egui::accesskit::Role::TextInput)
        .type_text(&moved.display().to_string());
    h.run_steps(2);
    h.get_by_label("Add directory").click();
    h.run_steps(3);
    assert!(h
        .query_all_by_label_contains("add_mul.c not found")
        .next()
        .is_none());
    let text = source_lines[line as usize - 1].trim_end();
    assert!(
        h.query_all_by_label(text).next().is_some(),
        "line {line}'s text {text:?} is not shown"
    );

    // The same directory given up front (`open --source-dir DIR`): found from the start.
    let app = App::with_config_dir(Some(wst), None).with_source_dirs(vec![moved.clone()]);
    let mut h = Harness::builder()
        .with_size(egui::vec2(1500.0, 1100.0))
        .build_ui_state(|ui, app: &mut App| app.show(ui), app);
    wait(&mut h);
    h.state_mut().open_kernel(k);
    wait(&mut h);
    h.state_mut().tab = Tab::Instructions;
    h.run_steps(3);
    assert!(h.query_all_by_label(text).next().is_some());
    assert_eq!(h.state().loaded().unwrap().source.dirs[0], moved);
}
