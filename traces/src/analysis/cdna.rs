//! gfx9 / CDNA instruction streams. A CDNA blob dates each issue with a CDNA_ISSUE entry
//! (value 2: an instruction, 3: an internal one such as `s_waitcnt` or `s_nop`) and names only
//! the non-internal ones with a CDNA_INST packet, which carries no time of its own: the packets
//! of a burst share one timestamp. Built from those tokens, the instruction table lacked every
//! `s_waitcnt`/`s_nop` (no token) and its best case per kind was 0 cycles (two tokens of a burst),
//! so every row read 100% stall. The mapper's walk ([`crate::sqtt::map`]) has the real issue
//! time of every instruction, internal ones included: this makes it the SE's token stream.

use std::collections::HashMap;

use super::{group_tokens, SeTrace};
use crate::sqtt::{InstToken, TokenKind, TokenOp};

/// Whether the SE's instructions were mapped by the CDNA walk.
pub(crate) fn mapped_by_issue(se: &SeTrace) -> bool {
    se.mapped.iter().any(|m| m.token.starts_with("CDNA"))
}

/// Replaces the SE's tokens by one per mapped instruction at its issue time (CDNA_INST tokens
/// keep their op), with `token_pc`, `token_x` and the per-wave index to match, and the
/// disassembly of every mapped PC in `disasm`.
pub(crate) fn use_issue_stream(
    se: &mut SeTrace,
    disasm: &mut HashMap<u64, String>,
    to_x: &dyn Fn(i64) -> f64,
) {
    let op_at: HashMap<u64, _> = se
        .analysis
        .tokens
        .iter()
        .map(|t| (t.offset, t.op))
        .collect();
    // Our CDNA clock (tinygrad's rule) gives the issues of one burst the same cycle, so gaps
    // inside a burst read 0 and every kind's best case was 0 (the Stall column read ~100%).
    // AMD's clock ticks 4 cycles more per flagged packet and the walk already has each
    // instruction's time on it (`issue_time`: AMD's `time`, when the wave first tried to issue
    // it; never two in one cycle, gfx9 issues a wave at most every 4 cycles). Tokens take
    // AMD's gaps, each wave anchored at its first instruction's time on our clock so it stays
    // inside the wave's bar and beside the other waves.
    // Per wave: (AMD time, AMD minus ours) of its first instruction.
    let mut first: HashMap<u32, (i64, i64)> = HashMap::new();
    for m in &se.mapped {
        if let Some(w) = m.wave {
            let e = first.entry(w).or_insert((i64::MAX, 0));
            if m.issue_time < e.0 {
                *e = (m.issue_time, m.issue_time - m.time);
            }
        }
    }
    let time_of = |i: usize| {
        let m = &se.mapped[i];
        m.wave
            .and_then(|w| first.get(&w))
            .map_or(m.time, |&(_, shift)| m.issue_time - shift)
    };
    let mut order: Vec<usize> = (0..se.mapped.len())
        .filter(|&i| se.mapped[i].wave.is_some())
        .collect();
    // Stable: a wave's instructions stay in walk order at equal times.
    order.sort_by_key(|&i| time_of(i));
    let mut tokens = Vec::with_capacity(order.len());
    let mut pcs = Vec::with_capacity(order.len());
    for i in order {
        let m = &se.mapped[i];
        let Some(wave) = m.wave else { continue };
        let op = if m.token == "CDNA_INST" {
            op_at.get(&m.offset).copied().unwrap_or_default()
        } else {
            TokenOp::NONE
        };
        tokens.push(InstToken {
            time: time_of(i),
            wave,
            kind: TokenKind::Inst,
            op,
            offset: m.offset,
        });
        pcs.push(m.pc);
        disasm.entry(m.pc).or_insert_with(|| m.inst.text());
    }
    let (token_order, token_start) = group_tokens(&tokens, se.analysis.waves.len());
    se.token_x = tokens.iter().map(|t| to_x(t.time)).collect();
    se.token_order = token_order;
    se.token_start = token_start;
    se.token_pc = pcs;
    se.analysis.tokens = tokens;
}
