//! Order inside an operation, and between the operations of one submission, where the
//! hardware cares ([`crate::conform`] compares values as sets; this adds the order).
//!
//! Each packet or register write becomes a *class* (`DISPATCH_DIRECT`, `ACQUIRE_MEM`,
//! `WAIT_REG_MEM/SQ_THREAD_TRACE_STATUS[se1]`, `COMPUTE_PGM_RSRC1`, SDMA `COPY`; per SE while
//! GRBM_GFX_INDEX selects one). A *unit* is one run of an operation inside one submission
//! (scope [`Scope::Op`]), or one whole submission with classes named `group:class`
//! ([`Scope::Submit`], pairs from different operations, and only work against its completion
//! or its barriers: [`across_ops`]). For every pair of classes the
//! hardware orders ([`ordered`]), two constraints are derived from the reference:
//!
//! * *guard* `a` before `b`: in every unit, the first `b` comes after an `a` (a cache
//!   invalidation or a wait before what it protects);
//! * *latch* `a` before `b`: in every unit, the last `a` comes before the last `b` (state written
//!   before the packet that consumes it; a fence after the copy it signals). Not for a barrier
//!   `a` (ACQUIRE_MEM, WAIT_REG_MEM, POLL_REGMEM): it holds what follows it, not what precedes.
//!
//! A constraint is derived when the reference satisfies it in every unit holding its premise
//! (`b` for guard, `a` for latch), and at least one unit does. Ours must satisfy it in every unit
//! holding the premise; a class that ours lacks altogether in that operation is the set
//! comparison's difference, not an order one. Violations are reported as
//! `order: X after Y`. What the hardware does not order stays unordered: two register writes
//! (the CP latches SET_SH_REG state at the dispatch, so their order before it does not matter),
//! except SQ_THREAD_TRACE_CTRL/MODE (which start and stop the trace) against the same SE's
//! other SQTT registers; and a register write against ACQUIRE_MEM (a cache operation, not
//! register state). The evidence for each rule is in `docs/conformance.md` ("Order").

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::conform::{grbm_suffix, num, pkt_kind, Difference, Kind};
use crate::regs::IpTable;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Op,
    Submit,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Item {
    class: String,
    reg: bool,
    group: String,
}

/// Packets the order check does not look at: PRED_EXEC only predicates the packets after it,
/// NOP and INDIRECT_BUFFER carry no work of their own.
const TRANSPARENT: &[&str] = &["PRED_EXEC", "NOP", "INDIRECT_BUFFER", "(undecodable)"];

/// The units of a recording: (key, items in order). Key is the operation (`exec`,
/// `sdma:copy`) for [`Scope::Op`], `submit`/`sdma:submit` for [`Scope::Submit`].
fn units(evs: &[Value], table: Option<&IpTable>, scope: Scope) -> Vec<(String, Vec<Item>)> {
    let mut out: Vec<(String, Vec<Item>)> = Vec::new();
    let mut cur: Option<(String, Value)> = None;
    let mut grbm = String::new();
    for e in evs {
        let ev = e.get("ev").and_then(Value::as_str).unwrap_or("");
        if ev != "pm4" && ev != "sdma" {
            continue;
        }
        let group = e.get("group").and_then(Value::as_str).unwrap_or("(none)");
        let group = if ev == "sdma" {
            format!("sdma:{group}")
        } else {
            group.to_string()
        };
        let submit = e.get("submit").cloned().unwrap_or(Value::Null);
        let key = match scope {
            Scope::Op => group.clone(),
            Scope::Submit if ev == "sdma" => "sdma:submit".to_string(),
            Scope::Submit => "submit".to_string(),
        };
        if cur.as_ref() != Some(&(key.clone(), submit.clone())) {
            if cur.as_ref().map(|(_, s)| s) != Some(&submit) {
                grbm.clear();
            }
            out.push((key.clone(), Vec::new()));
            cur = Some((key, submit));
        }
        let op = e.get("op").and_then(Value::as_str).unwrap_or("");
        let items = &mut out.last_mut().expect("pushed above").1;
        let mut add = |class: String, reg: bool| {
            let class = match scope {
                Scope::Op => class,
                Scope::Submit => format!("{group}:{class}"),
            };
            items.push(Item {
                class,
                reg,
                group: group.clone(),
            });
        };
        if ev == "sdma" {
            add(op.to_string(), false);
            continue;
        }
        if let Some(rs) = e.get("regs").and_then(Value::as_array) {
            for r in rs {
                let Some(name) = r.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let name = name.trim_start_matches("reg");
                if name == "GRBM_GFX_INDEX" {
                    // Its effect is the per-SE name of what follows.
                    let v = r.get("val").and_then(num).unwrap_or(0) as u32;
                    grbm = grbm_suffix(table, v);
                    continue;
                }
                add(format!("{name}{grbm}"), true);
            }
        } else if !TRANSPARENT.contains(&op) {
            let d = e.get("decoded").cloned().unwrap_or(Value::Null);
            add(format!("{}{grbm}", pkt_kind(op, &d)), false);
        }
    }
    out
}

fn se_of(class: &str) -> &str {
    class.rfind('[').map_or("", |i| &class[i..])
}

fn base(class: &str) -> &str {
    let c = class.rsplit(':').next().unwrap_or(class);
    c.split('[').next().unwrap_or(c)
}

/// Whether the hardware orders `a` and `b` (see the module doc).
fn ordered(a: &Item, b: &Item) -> bool {
    if a.class == b.class {
        return false;
    }
    match (a.reg, b.reg) {
        (true, true) => {
            let (ba, bb) = (base(&a.class), base(&b.class));
            let trigger = |n: &str| n == "SQ_THREAD_TRACE_CTRL" || n == "SQ_THREAD_TRACE_MODE";
            se_of(&a.class) == se_of(&b.class)
                && ba.starts_with("SQ_THREAD_TRACE_")
                && bb.starts_with("SQ_THREAD_TRACE_")
                && (trigger(ba) || trigger(bb))
                && !ba.starts_with("SQ_THREAD_TRACE_USERDATA")
                && !bb.starts_with("SQ_THREAD_TRACE_USERDATA")
        }
        (true, false) => base(&b.class) != "ACQUIRE_MEM",
        (false, true) => base(&a.class) != "ACQUIRE_MEM",
        (false, false) => true,
    }
}

/// Work a submission does: a dispatch, an SDMA copy.
const WORK: &[&str] = &["DISPATCH_DIRECT", "DISPATCH_INDIRECT", "COPY"];
/// What tells the rest of the system that prior work finished.
const COMPLETION: &[&str] = &["RELEASE_MEM", "FENCE", "EVENT_WRITE"];
/// What holds later work until memory or caches are ready.
const BARRIER: &[&str] = &["WAIT_REG_MEM", "POLL_REGMEM", "ACQUIRE_MEM"];

fn is(set: &[&str], class: &str) -> bool {
    let c = base(class);
    set.iter()
        .any(|k| c == *k || c.strip_prefix(k).is_some_and(|r| r.starts_with('/')))
}

/// Across the operations of one submission only two orders are the hardware's business
/// (which operations a submission holds is each driver's workload): work is followed by its
/// completion signal (latch), and work waits for the barriers before it (guard).
fn across_ops(rule: Rule, a: &str, b: &str) -> bool {
    match rule {
        Rule::Latch => is(WORK, a) && is(COMPLETION, b),
        Rule::Guard => is(BARRIER, a) && is(WORK, b),
    }
}

/// First and last index of each class in a unit.
fn spans(items: &[Item]) -> BTreeMap<&str, (usize, usize)> {
    let mut m: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (i, it) in items.iter().enumerate() {
        m.entry(&it.class).and_modify(|s| s.1 = i).or_insert((i, i));
    }
    m
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Rule {
    Guard,
    Latch,
}

/// Whether `rule` (a before b) holds in a unit; `None` when the unit lacks its premise.
fn holds(s: &BTreeMap<&str, (usize, usize)>, rule: Rule, a: &str, b: &str) -> Option<bool> {
    match rule {
        Rule::Guard => {
            let fb = s.get(b)?.0;
            Some(s.get(a).is_some_and(|x| x.0 < fb))
        }
        Rule::Latch => {
            let la = s.get(a)?.1;
            Some(s.get(b).is_some_and(|x| la < x.1))
        }
    }
}

/// Order differences of `ours` against the constraints `reference` satisfies, for both scopes.
pub fn compare_order(
    ours: &[Value],
    reference: &[Value],
    table: Option<&IpTable>,
) -> Vec<Difference> {
    let mut out = Vec::new();
    for scope in [Scope::Op, Scope::Submit] {
        let (ua, ub) = (units(ours, table, scope), units(reference, table, scope));
        let by_key = |u: &[(String, Vec<Item>)]| {
            let mut m: BTreeMap<String, Vec<usize>> = BTreeMap::new();
            for (i, (k, _)) in u.iter().enumerate() {
                m.entry(k.clone()).or_default().push(i);
            }
            m
        };
        let (ka, kb) = (by_key(&ua), by_key(&ub));
        for (key, ref_units) in &kb {
            let Some(our_units) = ka.get(key) else {
                continue;
            };
            // The reference's classes of this key, with one representative item each.
            let mut classes: BTreeMap<&str, &Item> = BTreeMap::new();
            for &i in ref_units {
                for it in &ub[i].1 {
                    classes.entry(&it.class).or_insert(it);
                }
            }
            let ours_has: BTreeSet<&str> = our_units
                .iter()
                .flat_map(|&i| ua[i].1.iter().map(|it| it.class.as_str()))
                .collect();
            let ref_spans: Vec<_> = ref_units.iter().map(|&i| spans(&ub[i].1)).collect();
            let our_spans: Vec<_> = our_units.iter().map(|&i| spans(&ua[i].1)).collect();
            for (a, ia) in &classes {
                for (b, ib) in &classes {
                    if !ordered(ia, ib) || (scope == Scope::Submit && ia.group == ib.group) {
                        continue;
                    }
                    if !ours_has.contains(a) || !ours_has.contains(b) {
                        continue;
                    }
                    for rule in [Rule::Guard, Rule::Latch] {
                        if scope == Scope::Submit && !across_ops(rule, a, b) {
                            continue;
                        }
                        // A barrier holds what follows it (guard); what precedes it is not
                        // its business.
                        if rule == Rule::Latch && !ia.reg && is(BARRIER, a) {
                            continue;
                        }
                        let r: Vec<bool> = ref_spans
                            .iter()
                            .filter_map(|s| holds(s, rule, a, b))
                            .collect();
                        if r.is_empty() || r.contains(&false) {
                            continue;
                        }
                        let bad = our_spans
                            .iter()
                            .position(|s| holds(s, rule, a, b) == Some(false));
                        let Some(n) = bad else {
                            continue;
                        };
                        let (what, ours_s) = match (rule, our_spans[n].get(*a)) {
                            (Rule::Guard, None) => (
                                format!("order: {b} without {a} before it"),
                                "missing".into(),
                            ),
                            (Rule::Guard, Some(_)) => {
                                (format!("order: {a} after {b}"), "after".to_string())
                            }
                            (Rule::Latch, _) if !our_spans[n].contains_key(*b) => {
                                (format!("order: {a} without {b} after it"), "missing".into())
                            }
                            (Rule::Latch, _) => {
                                (format!("order: {a} after {b}"), "after".to_string())
                            }
                        };
                        let op = match scope {
                            Scope::Op => key.clone(),
                            Scope::Submit => ib.group.clone(),
                        };
                        out.push(Difference {
                            op,
                            kind: Kind::OrderDiffers,
                            what,
                            field: None,
                            ours: format!("{ours_s} in unit {} of {}", n + 1, our_spans.len()),
                            reference: format!(
                                "{a} before {b} in all {} units that have {}",
                                r.len(),
                                if rule == Rule::Guard { b } else { a }
                            ),
                            accepted: None,
                        });
                    }
                }
            }
        }
    }
    out
}
