//! The committed register tables agree with the JSON they were generated from (when
//! ../shared/amd-registers is present, as in CI).

mod common;

use runtime::regs;

/// Every entry of every generated per-JSON array (the IpTables' registers and those only the
/// driverless bring-up uses) has its JSON's offset, segment and fields, and no array names a
/// register twice; each IpTable is a prefix of its array sorted by name (its lookups bisect).
#[test]
fn every_generated_register_array_matches_its_json() {
    let tables = [
        &regs::GC_11_0_0,
        &regs::GC_12_0_0,
        &regs::GC_9_4_3,
        &regs::NBIO_4_3_0,
        &regs::NBIF_6_3_1,
        &regs::NBIO_7_9_0,
        &regs::NBIO_7_11_0,
        &regs::MMHUB_1_8_0,
        &regs::SDMA_4_4_2,
        &regs::OSSSYS_4_4_2,
    ];
    let mut prefixes = 0;
    let Some(dir) = common::amd_registers_dir() else {
        return;
    };
    let mut checked = 0;
    for (regs, file) in [
        (regs::GC_11_0_0_REGS, "gc_11_0_0"),
        (regs::GC_12_0_0_REGS, "gc_12_0_0"),
        (regs::GC_9_4_3_REGS, "gc_9_4_3"),
        (regs::NBIO_4_3_0_REGS, "nbio_4_3_0"),
        (regs::NBIF_6_3_1_REGS, "nbif_6_3_1"),
        (regs::NBIO_7_9_0_REGS, "nbio_7_9_0"),
        (regs::NBIO_7_11_0_REGS, "nbio_7_11_0"),
        (regs::MMHUB_1_8_0_REGS, "mmhub_1_8_0"),
        (regs::MMHUB_3_0_0_REGS, "mmhub_3_0_0"),
        (regs::MMHUB_4_1_0_REGS, "mmhub_4_1_0"),
        (regs::SDMA_4_4_2_REGS, "sdma_4_4_2"),
        (regs::OSSSYS_4_4_2_REGS, "osssys_4_4_2"),
        (regs::OSSSYS_6_0_0_REGS, "osssys_6_0_0"),
        (regs::OSSSYS_7_0_0_REGS, "osssys_7_0_0"),
        (regs::MP_11_0_0_REGS, "mp_11_0_0"),
        (regs::MP_13_0_0_REGS, "mp_13_0_0"),
        (regs::MP_14_0_2_REGS, "mp_14_0_2"),
        (regs::HDP_4_4_2_REGS, "hdp_4_4_2"),
        (regs::HDP_6_0_0_REGS, "hdp_6_0_0"),
        (regs::HDP_7_0_0_REGS, "hdp_7_0_0"),
    ] {
        let text = std::fs::read_to_string(dir.join(format!("{file}.json"))).unwrap();
        let j: serde_json::Value = serde_json::from_str(&text).unwrap();
        if let Some(t) = tables.iter().find(|t| t.ip == file) {
            assert!(!t.regs.is_empty(), "{file}: empty IpTable");
            assert_eq!(
                t.regs,
                &regs[..t.regs.len()],
                "{file}: IpTable not a prefix"
            );
            assert!(
                t.regs.windows(2).all(|w| w[0].name < w[1].name),
                "{file}: IpTable not sorted by name"
            );
            assert!(t.regs.iter().all(|r| t.get(r.name) == Some(r)), "{file}");
            prefixes += 1;
        }
        let mut names = std::collections::HashSet::new();
        for r in regs {
            assert!(names.insert(r.name), "{file}: {} listed twice", r.name);
            // The JSON names a register `reg<NAME>` (older MP1 headers: `mm<NAME>`).
            let e = [format!("reg{}", r.name), format!("mm{}", r.name)]
                .iter()
                .map(|k| &j["registers"][k])
                .find(|e| !e.is_null())
                .unwrap_or_else(|| panic!("{file}: no register {}", r.name));
            common::assert_reg(e, r.offset, r.base_index, &format!("{file} {}", r.name));
            let fields = e["fields"].as_object().expect("fields");
            assert_eq!(
                fields.len(),
                r.fields.len(),
                "{file} {}: field count",
                r.name
            );
            for f in r.fields {
                let want = (
                    e["fields"][f.name]["lo"].as_u64(),
                    e["fields"][f.name]["hi"].as_u64(),
                );
                let have = (Some(u64::from(f.lo)), Some(u64::from(f.hi)));
                assert_eq!(want, have, "{file} {}.{}", r.name, f.name);
            }
            checked += 1;
        }
    }
    assert!(checked > 900, "only {checked} registers checked");
    assert_eq!(prefixes, tables.len(), "an IpTable without its array");
}
