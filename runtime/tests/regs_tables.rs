//! The committed register tables agree with the JSON they were generated from (when
//! ../shared/amd-registers is present, as in CI).

mod common;

use runtime::regs;

#[test]
fn generated_tables_match_shared_json() {
    let Some(dir) = common::amd_registers_dir() else {
        return;
    };
    let mut checked = 0;
    for (t, file) in [
        (&regs::GC_11_0_0, "gc_11_0_0"),
        (&regs::GC_12_0_0, "gc_12_0_0"),
        (&regs::GC_9_4_3, "gc_9_4_3"),
        (&regs::NBIO_4_3_0, "nbio_4_3_0"),
    ] {
        let text = std::fs::read_to_string(dir.join(format!("{file}.json"))).unwrap();
        let j: serde_json::Value = serde_json::from_str(&text).unwrap();
        for r in t.regs {
            let e = &j["registers"][format!("reg{}", r.name)];
            common::assert_reg(e, r.offset, r.base_index, &format!("{file} {}", r.name));
            for f in r.fields {
                assert_eq!(
                    e["fields"][f.name]["lo"].as_u64(),
                    Some(u64::from(f.lo)),
                    "{file} {}.{}",
                    r.name,
                    f.name
                );
                assert_eq!(
                    e["fields"][f.name]["hi"].as_u64(),
                    Some(u64::from(f.hi)),
                    "{file} {}.{}",
                    r.name,
                    f.name
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 200, "only {checked} registers checked");
}
