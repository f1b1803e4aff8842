//! One instruction-traced SE's waves and every instruction each executed ([`super::TracedWave`]),
//! mapped and written one SE at a time for `stats --json`: what [`super::traced_waves_each`]
//! prints from a detailed [`super::KernelSqtt`], without holding the SE's full
//! [`MappedInst`](crate::sqtt::map::MappedInst) list (about 170 bytes an instruction, with its
//! decoded instruction and op name) or its 40-byte tokens while the program is walked.

use std::collections::HashMap;

use super::{TracedInst, TracedWave};
use crate::sqtt::map::{map_insts_each, MappedInst};
use crate::sqtt::{BlobAnalysis, OpName};

/// One mapped instruction, kept until its wave is written: the strings are interned (the
/// token name per (token, op), the disassembly per PC), 48 bytes an instruction.
struct Rec {
    time: i64,
    issue_time: i64,
    stall: i64,
    duration: i64,
    pc: u64,
    /// Index of the wave in the analysis (`u32::MAX`: none).
    wave: u32,
    name: u32,
}

/// Kernel `ki`'s traced waves (what `stats --json` prints per instruction),
/// in SE then wave order: its instruction-traced SEs each decoded and mapped alone (a mapping
/// depends on its own blob and the code object alone), so only one SE's instructions are held
/// at a time. `f` returns false to stop. Nothing without the code object.
pub fn run_traced_waves_each(
    p: &crate::model::Profile,
    ki: usize,
    f: &mut dyn FnMut(TracedWave) -> bool,
) {
    use super::sqtt_matches;
    let Some(k) = p.kernels.get(ki) else {
        return;
    };
    let target = p.props_device(k.device).and_then(|d| d.target());
    let Some((code, _)) = p.run_code_object(ki) else {
        return;
    };
    let mut streams: Vec<_> = p
        .sqtt
        .iter()
        .filter(|s| s.itrace && sqtt_matches(p, k, s))
        .collect();
    // Stable, as the kernel analysis sorts its SEs.
    streams.sort_by_key(|s| s.se);
    for s in streams {
        let blob = p.blob(s.blob);
        let Ok(mut a) = crate::sqtt::analyze_with(blob, target, Default::default()) else {
            continue;
        };
        if a.tokens.is_empty() {
            continue;
        }
        // The mapping reads the waves alone: the tokens need not stay while it walks.
        a.tokens = Vec::new();
        if !traced_se_waves_each(s.se, blob, &code, &a, f) {
            return;
        }
    }
}

/// Maps SE `se`'s blob onto `code` (the same walk and order as [`super::SeTrace::map_pcs`])
/// and calls `f` with each of its waves that executed a mapped instruction, in wave order.
/// `analysis` is the blob's: only its waves are read (its tokens may be dropped beforehand).
/// Returns false when `f` did (to stop).
pub fn traced_se_waves_each(
    se: u32,
    blob: &[u8],
    code: &crate::isa::CodeObject,
    analysis: &BlobAnalysis,
    f: &mut dyn FnMut(TracedWave) -> bool,
) -> bool {
    let mut names: Vec<String> = Vec::new();
    let mut name_ids: HashMap<(&'static str, Option<OpName>), u32> = HashMap::new();
    let mut disasm: HashMap<u64, String> = HashMap::new();
    let mut recs: Vec<Rec> = Vec::new();
    // Why mapping stopped early is not part of the traced waves: what was mapped is listed.
    let _ = map_insts_each(blob, code, Some(analysis), Default::default(), &mut |m| {
        let MappedInst {
            time,
            issue_time,
            stall,
            duration,
            pc,
            wave,
            token,
            op,
            ref inst,
            ..
        } = m;
        let Some(wave) = wave else {
            // Listed under no wave: never printed.
            return;
        };
        let name = *name_ids.entry((token, op)).or_insert_with(|| {
            names.push(match &op {
                Some(op) => format!("{token}:{op}"),
                None => token.to_string(),
            });
            names.len() as u32 - 1
        });
        disasm.entry(pc).or_insert_with(|| inst.text());
        recs.push(Rec {
            time,
            issue_time,
            stall,
            duration,
            pc,
            wave,
            name,
        });
    });
    // Each wave's instructions, in mapping order (a counting sort: 4 bytes each).
    let waves = analysis.waves.len();
    let (order, start) = super::group_by_wave(&recs, waves, |r| r.wave);
    for (w, wave) in analysis.waves.iter().enumerate() {
        let (a, b) = (start[w] as usize, start[w + 1] as usize);
        if a == b {
            continue;
        }
        let instructions = order[a..b]
            .iter()
            .map(|&i| {
                let r = &recs[i as usize];
                TracedInst {
                    time: r.time,
                    issue_time: r.issue_time,
                    stall: r.stall,
                    duration: r.duration,
                    pc: r.pc,
                    token: names[r.name as usize].clone(),
                    disasm: disasm.get(&r.pc).cloned().unwrap_or_default(),
                }
            })
            .collect();
        let go = f(TracedWave {
            se,
            cu: wave.cu,
            simd: wave.simd,
            slot: wave.wave,
            start: wave.start,
            end: wave.end,
            instructions,
        });
        if !go {
            return false;
        }
    }
    true
}
