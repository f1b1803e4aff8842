//! The instruction tokens of one SE's traced waves as the SQTT view keeps them while a kernel
//! is open: per token its issue cycle and what it issued (12 bytes), in wave order, instead of
//! the analysis' token record, PC and per-wave index (36 bytes); made as the SE is decoded,
//! so the analysis' records go then.

use std::collections::HashMap;

use traces::analysis::{token_name, SeTrace, WaveInst};
use traces::sqtt::{InstToken, TokenKind, TokenOp};

use super::sqtt::{token_cat, Cat};
use crate::data::SeClock;

/// What a token issued: its kind, op and PC (a kernel has a few hundred distinct ones).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Issued {
    kind: TokenKind,
    op: TokenOp,
    pc: Option<u64>,
    cat: Cat,
}

impl Issued {
    /// The token record `token_name` and `token_cat` read (time, wave and offset unused).
    fn token(&self) -> InstToken {
        InstToken {
            time: 0,
            wave: 0,
            kind: self.kind,
            op: self.op,
            offset: 0,
        }
    }
}

/// What tells two [`Issued`] apart: kind, op and PC (`u64::MAX`: none).
type IssuedKey = (u8, TokenOp, u64);

/// One SE's waves with instruction tokens and their tokens.
#[derive(Debug, Clone, Default)]
pub struct TracedWaves {
    /// Indices (ascending) among all the SE's waves of those with tokens.
    waves: Vec<u32>,
    /// The tokens of `waves[i]` are `start[i]..start[i + 1]` (`waves.len() + 1` entries).
    start: Vec<u32>,
    /// Each kept wave's start cycle: its first token's gap is from it.
    wave_start: Vec<i64>,
    /// Each token's issue cycle, wave by wave, in time order.
    time: Vec<i64>,
    /// Each token's entry in `issued`.
    issued_id: Vec<u32>,
    issued: Vec<Issued>,
}

impl TracedWaves {
    /// The traced waves of `st`, whose `analysis.waves` holds every wave of the SE.
    pub fn of(st: &SeTrace) -> TracedWaves {
        let mut out = TracedWaves::default();
        if st.analysis.tokens.is_empty() {
            return out;
        }
        let tokens = &st.analysis.tokens;
        let n = st.analysis.waves.len();
        let kept = (0..n).filter(|&w| !st.wave_tokens(w).is_empty()).count();
        let count: usize = (0..n).map(|w| st.wave_tokens(w).len()).sum();
        out.waves.reserve_exact(kept);
        out.start.reserve_exact(kept + 1);
        out.wave_start.reserve_exact(kept);
        out.time.reserve_exact(count);
        out.issued_id.reserve_exact(count);
        out.start.push(0);
        let kind_id = |k: TokenKind| match k {
            TokenKind::Inst => 0u8,
            TokenKind::ValuInst => 1,
            TokenKind::Immediate => 2,
            TokenKind::ImmediateMask => 3,
        };
        let mut ids: HashMap<IssuedKey, u32> = HashMap::new();
        // A PC nearly always issues one kind and op: by PC first (a cheaper hash), checked.
        let mut by_pc: HashMap<u64, u32> = HashMap::new();
        for (w, wave) in st.analysis.waves.iter().enumerate() {
            let toks = st.wave_tokens(w);
            if toks.is_empty() {
                continue;
            }
            out.waves.push(w as u32);
            out.wave_start.push(wave.start);
            for &ti in toks {
                let Some(t) = tokens.get(ti as usize) else {
                    continue;
                };
                let pc = st.token_pc.get(ti as usize).copied().unwrap_or(u64::MAX);
                let same = |id: &u32| {
                    let s = &out.issued[*id as usize];
                    s.kind == t.kind && s.op == t.op
                };
                let id = match by_pc.get(&pc).filter(|id| same(id)) {
                    Some(&id) => id,
                    None => {
                        let issued = &mut out.issued;
                        let id = *ids.entry((kind_id(t.kind), t.op, pc)).or_insert_with(|| {
                            issued.push(Issued {
                                kind: t.kind,
                                op: t.op,
                                pc: (pc != u64::MAX).then_some(pc),
                                cat: token_cat(t),
                            });
                            (issued.len() - 1) as u32
                        });
                        by_pc.insert(pc, id);
                        id
                    }
                };
                out.time.push(t.time);
                out.issued_id.push(id);
            }
            out.start.push(out.time.len() as u32);
        }
        out
    }

    /// The position among the kept waves of wave `w` (its index among all the SE's waves),
    /// `None` when it has no tokens.
    pub fn index(&self, w: u32) -> Option<usize> {
        self.waves.binary_search(&w).ok()
    }

    /// Whether the SE has waves with tokens.
    pub fn is_empty(&self) -> bool {
        self.waves.is_empty()
    }

    /// Tokens of every kept wave.
    pub fn token_count(&self) -> usize {
        self.time.len()
    }

    /// Bytes of its columns (their capacity).
    pub fn bytes(&self) -> usize {
        fn b<T>(v: &Vec<T>) -> usize {
            v.capacity() * std::mem::size_of::<T>()
        }
        b(&self.waves)
            + b(&self.start)
            + b(&self.wave_start)
            + b(&self.time)
            + b(&self.issued_id)
            + b(&self.issued)
    }

    fn range(&self, i: usize) -> std::ops::Range<usize> {
        let a = self.start.get(i).copied().unwrap_or(0) as usize;
        let b = self.start.get(i + 1).copied().unwrap_or(0) as usize;
        a..b.max(a)
    }

    /// The issue cycles of kept wave `i`'s tokens, in time order.
    pub fn times(&self, i: usize) -> &[i64] {
        self.time.get(self.range(i)).unwrap_or(&[])
    }

    /// The colour class of token `j` of kept wave `i`.
    pub fn cat(&self, i: usize, j: usize) -> Option<Cat> {
        let t = self.range(i).start + j;
        let id = *self.issued_id.get(t)?;
        self.issued.get(id as usize).map(|s| s.cat)
    }

    /// The instructions of kept wave `i`, as `traces::analysis::wave_insts` lists them, x from
    /// the SE's `clock`, disassembly from `disasm`.
    pub fn insts(&self, i: usize, clock: &SeClock, disasm: &HashMap<u64, String>) -> Vec<WaveInst> {
        let r = self.range(i);
        let mut prev = self.wave_start.get(i).copied().unwrap_or(0);
        let mut h = [0usize; 2];
        let mut out = Vec::with_capacity(r.len());
        for (index, t) in r.enumerate() {
            let (Some(&time), Some(s)) = (
                self.time.get(t),
                self.issued_id
                    .get(t)
                    .and_then(|&id| self.issued.get(id as usize)),
            ) else {
                continue;
            };
            out.push(WaveInst {
                index,
                cycle: time,
                x: clock.x_hinted(time, &mut h),
                gap: time - prev,
                name: token_name(&s.token()),
                pc: s.pc,
                disasm: s.pc.and_then(|p| disasm.get(&p).cloned()),
            });
            prev = time;
        }
        out
    }
}
