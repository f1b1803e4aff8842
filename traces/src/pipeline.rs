//! The analysis hot paths, built for captures of real size (hundreds of MiB per SE): the SEs of
//! a kernel analysed in parallel (rayon), tokens matched to their mapped instruction by a merge
//! over nibble offsets, and the per-instruction table accumulated in flat, index-addressed
//! columns (a slot per PC of the program, a small id per token name) with no string built or
//! hashed per token. [`crate::analysis`]'s public entry points call into it, so the app, the CLI
//! and the diff engine share it; the results are the ones the per-token version computed.

use std::collections::HashMap;

use crate::analysis::{token_name, InstStat, KernelSqtt, SeTrace};
use crate::sqtt::map::MappedInst;
use crate::sqtt::{InstToken, OpName, TokenKind};

/// PCs of one program, as dense slots: `(pc - base) / 4` (instructions are dword aligned).
struct PcSlots {
    base: u64,
    len: usize,
}

impl PcSlots {
    /// Slots covering every PC in `pcs`, or `None` when they are too spread out (a table of
    /// that size would cost more than hashing).
    fn covering(pcs: impl Iterator<Item = u64>) -> Option<PcSlots> {
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        for pc in pcs {
            lo = lo.min(pc);
            hi = hi.max(pc);
        }
        if lo > hi {
            return Some(PcSlots { base: 0, len: 0 });
        }
        let len = ((hi - lo) / 4 + 1) as usize;
        (len <= 1 << 24).then_some(PcSlots { base: lo, len })
    }

    #[inline]
    fn get(&self, pc: u64) -> Option<usize> {
        let d = pc.checked_sub(self.base)?;
        if d % 4 != 0 {
            return None;
        }
        let i = (d / 4) as usize;
        (i < self.len).then_some(i)
    }
}

/// For each token of `tokens`, the index in `insts` of the mapped instruction at the same nibble
/// offset (the last one when several share it, as IMMEDIATE_MASK bits do), by a merge: both are
/// in stream order, and a token out of order falls back to a binary search.
pub(crate) fn match_offsets(tokens: &[InstToken], insts: &[MappedInst]) -> Vec<Option<u32>> {
    let mut order: Vec<u32> = (0..insts.len() as u32).collect();
    if !insts.windows(2).all(|w| w[0].offset <= w[1].offset) {
        // Stable: equal offsets keep stream order, so the last of them is still the last.
        order.sort_by_key(|&i| insts[i as usize].offset);
    }
    let off = |j: usize| insts[order[j] as usize].offset;
    let mut j = 0usize;
    let mut prev = 0u64;
    tokens
        .iter()
        .map(|t| {
            if t.offset < prev {
                j = 0;
            }
            prev = t.offset;
            // A few steps forward (the usual case: the token's own instruction is next), then
            // a binary search for a long skip.
            let mut steps = 0;
            while j < order.len() && off(j) <= t.offset && steps < 8 {
                j += 1;
                steps += 1;
            }
            if j < order.len() && off(j) <= t.offset {
                j += order[j..].partition_point(|&i| insts[i as usize].offset <= t.offset);
            }
            (j > 0 && off(j - 1) == t.offset).then(|| order[j - 1])
        })
        .collect()
}

/// [`SeTrace::map_pcs`]'s work: `token_pc` for every token, and the disassembly of each PC seen
/// (text made once per PC, not per token).
pub(crate) fn map_tokens(
    se: &mut SeTrace,
    insts: Vec<MappedInst>,
    error: Option<String>,
    disasm: &mut HashMap<u64, String>,
) {
    let matched = match_offsets(&se.analysis.tokens, &insts);
    let slots = PcSlots::covering(insts.iter().map(|m| m.pc));
    let mut seen = vec![false; slots.as_ref().map_or(0, |s| s.len)];
    let mut any = false;
    se.token_pc = matched
        .iter()
        .map(|m| match m {
            Some(i) => {
                let mi = &insts[*i as usize];
                any = true;
                let fresh = match slots.as_ref().and_then(|s| s.get(mi.pc)) {
                    Some(s) => !std::mem::replace(&mut seen[s], true),
                    None => true,
                };
                if fresh {
                    disasm.entry(mi.pc).or_insert_with(|| mi.inst.text());
                }
                mi.pc
            }
            None => u64::MAX,
        })
        .collect();
    if !any {
        se.token_pc.clear();
    }
    se.map_error = error;
    se.mapped = insts;
}

/// Token-name ids: one per distinct name (tokens with the same name share a best case).
#[derive(Default)]
struct Names {
    names: Vec<String>,
    combos: Vec<((TokenKind, Option<OpName>), u32)>,
    last: Option<((TokenKind, Option<OpName>), u32)>,
}

impl Names {
    #[inline]
    fn id(&mut self, t: &InstToken) -> u32 {
        let c = (t.kind, t.op);
        if let Some((k, id)) = self.last {
            if k == c {
                return id;
            }
        }
        let id = match self.combos.iter().find(|(k, _)| *k == c) {
            Some(&(_, id)) => id,
            None => {
                let name = token_name(t);
                let id = match self.names.iter().position(|n| *n == name) {
                    Some(i) => i as u32,
                    None => {
                        self.names.push(name);
                        (self.names.len() - 1) as u32
                    }
                };
                self.combos.push((c, id));
                id
            }
        };
        self.last = Some((c, id));
        id
    }
}

const NO_DISASM: u32 = u32::MAX - 1;

/// One row being accumulated: its key and every execution's (latency, name id).
struct Group {
    pc: Option<u64>,
    index: usize,
    name: u32,
    execs: Vec<(i64, u32)>,
}

/// [`crate::analysis::inst_stats`]: every execution of every instruction of the kernel's
/// itraced waves, grouped by PC (or, unmapped, by position in the wave and name).
pub fn inst_stats(k: &KernelSqtt) -> Vec<InstStat> {
    inst_stats_with(k, &crate::analysis::hidden::kernel_splits(k).by_inst)
}

/// [`inst_stats`] with the kernel's exposed/hidden split already computed
/// ([`crate::analysis::hidden::kernel_splits`]), for callers that also report it.
pub fn inst_stats_with(
    k: &KernelSqtt,
    splits: &HashMap<crate::analysis::hidden::InstKey, crate::analysis::hidden::LatencySplit>,
) -> Vec<InstStat> {
    let mut names = Names::default();
    let mut best: Vec<i64> = Vec::new();
    let mut groups: Vec<Group> = Vec::new();
    let pcs = k
        .ses
        .iter()
        .flat_map(|s| s.token_pc.iter().copied().filter(|&p| p != u64::MAX));
    let slots = PcSlots::covering(pcs);
    let mut by_slot: Vec<u32> = vec![u32::MAX; slots.as_ref().map_or(0, |s| s.len)];
    let mut by_pc: HashMap<u64, u32> = HashMap::new();
    // Unmapped: per position in the wave, the (name id, group) pairs seen there.
    let mut by_pos: Vec<Vec<(u32, u32)>> = Vec::new();
    for se in &k.ses {
        let tokens = &se.analysis.tokens;
        for (w, wave) in se.analysis.waves.iter().enumerate() {
            let mut prev = wave.start;
            for (i, &ti) in se.wave_tokens(w).iter().enumerate() {
                let Some(t) = tokens.get(ti as usize) else {
                    continue;
                };
                let gap = t.time - prev;
                prev = t.time;
                let kind = names.id(t);
                if best.len() <= kind as usize {
                    best.resize(kind as usize + 1, i64::MAX);
                }
                best[kind as usize] = best[kind as usize].min(gap);
                let pc = se
                    .token_pc
                    .get(ti as usize)
                    .copied()
                    .filter(|&p| p != u64::MAX);
                // A PC's group, looked up by its slot; NO_DISASM: a PC without disassembly is
                // keyed like an unmapped token (checked once per PC, not per token).
                let by_pc_group = pc.and_then(|pc| {
                    let cell = match slots.as_ref().and_then(|s| s.get(pc)) {
                        Some(s) => &mut by_slot[s],
                        None => by_pc.entry(pc).or_insert(u32::MAX),
                    };
                    if *cell == u32::MAX {
                        *cell = if k.disasm.contains_key(&pc) {
                            groups.push(Group {
                                pc: Some(pc),
                                index: 0,
                                name: 0,
                                execs: Vec::new(),
                            });
                            (groups.len() - 1) as u32
                        } else {
                            NO_DISASM
                        };
                    }
                    (*cell != NO_DISASM).then_some(*cell)
                });
                let g = match by_pc_group {
                    Some(g) => g,
                    None => {
                        if by_pos.len() <= i {
                            by_pos.resize_with(i + 1, Vec::new);
                        }
                        match by_pos[i].iter().find(|(n, _)| *n == kind) {
                            Some(&(_, g)) => g,
                            None => {
                                let g = groups.len() as u32;
                                groups.push(Group {
                                    pc: None,
                                    index: i,
                                    name: kind,
                                    execs: Vec::new(),
                                });
                                by_pos[i].push((kind, g));
                                g
                            }
                        }
                    }
                };
                groups[g as usize].execs.push((gap, kind));
            }
        }
    }
    let grand: i64 = groups
        .iter()
        .flat_map(|g| g.execs.iter().map(|e| e.0))
        .sum();
    // AMD's stall and duration summed per PC of a row.
    let mut amd_slot: Vec<Option<(i64, i64)>> = vec![None; by_slot.len()];
    let mut amd_pc: HashMap<u64, (i64, i64)> = HashMap::new();
    for se in &k.ses {
        for m in &se.mapped {
            let cell = match slots.as_ref().and_then(|s| s.get(m.pc)) {
                Some(s) => &mut amd_slot[s],
                None => {
                    let e = amd_pc.entry(m.pc).or_default();
                    e.0 += m.stall;
                    e.1 += m.duration;
                    continue;
                }
            };
            let e = cell.get_or_insert((0, 0));
            e.0 += m.stall;
            e.1 += m.duration;
        }
    }
    let amd = |pc: u64| match slots.as_ref().and_then(|s| s.get(pc)) {
        Some(s) => amd_slot[s],
        None => amd_pc.get(&pc).copied(),
    };
    let mut rows: Vec<InstStat> = groups
        .into_iter()
        .map(|g| {
            let name = match g.pc {
                Some(pc) => k.disasm.get(&pc).cloned().unwrap_or_default(),
                None => names.names[g.name as usize].clone(),
            };
            let split = splits
                .get(&match g.pc {
                    Some(pc) => (pc, 0, name.clone()),
                    None => (u64::MAX, g.index, name.clone()),
                })
                .copied()
                .unwrap_or_default();
            let stall: i64 = g
                .execs
                .iter()
                .map(|&(gap, kind)| (gap - best[kind as usize]).max(0))
                .sum();
            let mut v: Vec<i64> = g.execs.into_iter().map(|(gap, _)| gap).collect();
            v.sort_unstable();
            let total: i64 = v.iter().sum();
            let n = v.len().max(1);
            let a = g.pc.and_then(amd);
            InstStat {
                key: match g.pc {
                    Some(pc) => format!("0x{pc:x}"),
                    None => format!("#{}", g.index),
                },
                pc: g.pc,
                name,
                count: v.len() as u64,
                total,
                mean: total as f64 / n as f64,
                min: v.first().copied().unwrap_or(0),
                median: v.get(v.len() / 2).copied().unwrap_or(0),
                max: v.last().copied().unwrap_or(0),
                share: if grand > 0 {
                    total as f64 / grand as f64
                } else {
                    0.0
                },
                stall,
                stall_share: if total > 0 {
                    stall as f64 / total as f64
                } else {
                    0.0
                },
                amd_stall: a.map(|a| a.0),
                amd_duration: a.map(|a| a.1),
                exposed: split.exposed,
                hidden: split.hidden,
                hidden_share: split.hidden_share(),
            }
        })
        .collect();
    // PCs in address order, then unmapped positions (first-seen order among equal positions).
    rows.sort_by_key(|r| match r.pc {
        Some(pc) => (false, pc),
        None => (true, r.key[1..].parse().unwrap_or(0)),
    });
    rows
}
