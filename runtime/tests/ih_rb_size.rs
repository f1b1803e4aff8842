//! IH_RB_CNTL.rb_size, one rule for GC 9, 11 and 12 (`pci::am::ih::rb_size`), checked against
//! tinygrad's recorded AM bring-up in ../shared/conformance (pci_gfx1200_add, tinygrad a9069c1,
//! whose AM_IH uses 256 KiB rings: `self.ring_size = 256 << 10` in ip.py): the value it wrote
//! to IH_RB_CNTL and IH_RB_CNTL_RING1, decoded with osssys_7_0_0.json, and the ring size
//! written in the same record must give back the recorded field.

use runtime::pci::am::ih;
use serde_json::Value;

/// (lo, hi) of IH_RB_CNTL(_RING1).rb_size in the register JSON.
fn rb_size_field(json: &Value, reg: &str) -> (u32, u32) {
    let f = &json["registers"][reg]["fields"]["rb_size"];
    (
        f["lo"].as_u64().unwrap() as u32,
        f["hi"].as_u64().unwrap() as u32,
    )
}

#[test]
fn rb_size_matches_tinygrads_recorded_ih_rings() {
    let Some(rec) = testdata::require_shared("conformance/tinygrad/pci_gfx1200_add.jsonl") else {
        return;
    };
    let Some(regs) = testdata::require_shared("amd-registers/osssys_7_0_0.json") else {
        return;
    };
    let json: Value = serde_json::from_str(&std::fs::read_to_string(regs).unwrap()).unwrap();
    let text = std::fs::read_to_string(rec).unwrap();
    let mut seen = 0;
    for line in text.lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        let name = e["name"].as_str().unwrap_or("");
        let ctx = e["ctx"].as_str().unwrap_or("");
        if e["ev"] != "mmio_w"
            || !(name == "regIH_RB_CNTL" || name == "regIH_RB_CNTL_RING1")
            || !ctx.ends_with("AM_IH.init_hw")
        {
            continue;
        }
        let v =
            u32::from_str_radix(e["val"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
        let (lo, hi) = rb_size_field(&json, name);
        let got = (v >> lo) & ((1 << (hi - lo + 1)) - 1);
        assert_eq!(ih::rb_size(256 << 10), got, "{name} = {v:#x}");
        seen += 1;
    }
    assert!(seen >= 2, "both IH rings' control words recorded ({seen})");
}
