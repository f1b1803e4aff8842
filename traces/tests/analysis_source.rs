//! DWARF line tables: the demo's vadd compiled by clang-22 with `-g` maps its PCs to the
//! source lines the compiler says (the loads, add and store to line 6 of vadd.c), and the
//! instruction table rolls up per line; a code object without `-g` says it has no table.

use std::process::Command;

use traces::analysis::source::{line_costs, LineTable, SourceError};
use traces::analysis::InstStat;
use traces::isa::CodeObject;

#[test]
fn vadd_with_debug_info_maps_pcs_to_lines() {
    let Some(clang) = testdata::require_tool("clang-22") else {
        return;
    };
    let src = format!("{}/../capture/assets/src", env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("vadd.hsaco");
    let st = Command::new(clang)
        .args([
            "-target",
            "amdgcn-amd-amdhsa",
            "-mcpu=gfx1100",
            "-nogpulib",
            "-O2",
            "-g",
        ])
        .arg(format!("-I{src}"))
        .arg(format!("{src}/vadd.c"))
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    let elf = std::fs::read(&out).unwrap();
    let table = LineTable::parse(&elf).unwrap();
    assert!(!table.rows.is_empty());
    let code = CodeObject::parse(&elf).unwrap();
    let k = &code.kernels[0];
    let insts: Vec<(u64, String)> =
        traces::isa::disassemble(code.kernel_code(k), k.entry, code.target)
            .filter_map(|l| l.insn.ok().map(|i| (l.addr, i.text())))
            .collect();
    // Every memory access and the add of `c[i] = a[i] + b[i]` is line 6 of vadd.c.
    for (pc, text) in &insts {
        if text.starts_with("global_load")
            || text.starts_with("global_store")
            || text.starts_with("v_add_f32")
        {
            let row = table
                .lookup(*pc)
                .unwrap_or_else(|| panic!("{pc:#x} {text}: no line"));
            assert!(row.file.ends_with("vadd.c"), "{text}: {row:?}");
            assert_eq!(row.line, 6, "{text}");
        }
    }
    // The index computation `gid() * 64 + lid()` is line 5, or inlined from common.h.
    let (pc, _) = insts
        .iter()
        .find(|(_, t)| t.starts_with("v_lshl_add_u32"))
        .unwrap();
    let row = table.lookup(*pc).unwrap();
    assert!(
        (row.file.ends_with("vadd.c") && row.line == 5) || row.file.ends_with("common.h"),
        "{row:?}"
    );
    // Per-line roll-up: two rows on line 6 add up.
    let stat = |pc: u64, total: i64| InstStat {
        key: format!("{pc:#x}"),
        pc: Some(pc),
        name: String::new(),
        count: 1,
        total,
        mean: total as f64,
        min: total,
        median: total,
        max: total,
        share: 0.0,
        stall: 0,
        stall_share: 0.0,
        amd_stall: None,
        amd_duration: None,
        exposed: total / 2,
        hidden: Default::default(),
        hidden_share: 0.5,
    };
    let on6: Vec<u64> = insts
        .iter()
        .filter(|(_, t)| t.starts_with("global_load"))
        .map(|(pc, _)| *pc)
        .collect();
    let costs = line_costs(&table, &[stat(on6[0], 100), stat(on6[1], 40)]);
    assert_eq!(costs.len(), 1);
    assert_eq!(
        (costs[0].line, costs[0].total, costs[0].exposed),
        (6, 140, 70)
    );
}

#[test]
fn without_debug_info_the_absence_is_said() {
    let p = format!(
        "{}/../capture/assets/vadd.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    let e = LineTable::parse(&std::fs::read(p).unwrap()).unwrap_err();
    assert!(matches!(e, SourceError::NoLineTable), "{e}");
}
