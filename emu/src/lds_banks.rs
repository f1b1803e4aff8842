//! LDS bank timing of one DS instruction, from the real per-lane LDS addresses: how many cycles
//! the LDS is busy with it (SQC_LDS_IDX_ACTIVE) and how many of those are bank-conflict stalls
//! (SQC_LDS_BANK_CONFLICT).
//!
//! The rules (RDNA ISA guides, "Local Data Share": 32 banks of one dword per LDS half, a wave32
//! instruction served 32 lanes per cycle; lanes reading the same dword are served together):
//! * bank of a byte address = (address / 4) % 32;
//! * an instruction moving `n` dwords per lane (b64: 2, b96/b128: 4, the two addresses of
//!   ds_*2addr together) is served in `n` passes per 32 lanes; pass `p` serves lanes
//!   `p·32/n .. (p+1)·32/n` of each 32-lane half, all their dwords at once. So it is busy `n`
//!   cycles per 32 lanes whatever the EXEC mask (the gfx1100/gfx1200 gemm captures: one
//!   ds_store_b32 of 16 lanes plus four ds_load_b128 of one lane count 17 per wave);
//! * within a pass, a bank that must deliver `k` different dwords costs `k - 1` more cycles;
//!   the pass takes the maximum over banks. Those extra cycles are the conflict count.
//!
//! ds_bpermute / ds_swizzle use the LDS crossbar and no bank: one pass, no conflict.

/// Banks per LDS half.
pub const BANKS: usize = 32;
/// Lanes served per pass of one-dword accesses.
const LANES_PER_PASS: usize = 32;

/// Cycles of one DS instruction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LdsCycles {
    /// Cycles the LDS works on the instruction (passes, including conflict cycles).
    pub active: u64,
    /// Extra cycles from bank conflicts.
    pub conflict: u64,
}

/// `addr(lane, k)` is the byte address of dword `k` (< `n`) of `lane`; `exec` the active lanes
/// of a `lanes`-lane wave.
pub fn cycles(lanes: usize, exec: u64, n: usize, addr: impl Fn(usize, usize) -> u32) -> LdsCycles {
    let n = n.clamp(1, 4);
    // b96 is served like b128.
    let n = if n == 3 { 4 } else { n };
    let per_pass = LANES_PER_PASS / n;
    let mut out = LdsCycles::default();
    let mut bank: Vec<Vec<u32>> = vec![Vec::new(); BANKS];
    let mut base = 0;
    while base < lanes.max(1) {
        for p in 0..n {
            let first = base + p * per_pass;
            out.pass(
                &mut bank,
                first..(first + per_pass).min(lanes),
                exec,
                n,
                &addr,
            );
        }
        base += LANES_PER_PASS;
    }
    out
}

impl LdsCycles {
    /// Adds one pass serving the active lanes of `lanes`, all `n` dwords each, from
    /// `bank.len()` banks: one cycle, plus `k - 1` for a bank delivering `k` different dwords.
    fn pass(
        &mut self,
        bank: &mut [Vec<u32>],
        lanes: std::ops::Range<usize>,
        exec: u64,
        n: usize,
        addr: &impl Fn(usize, usize) -> u32,
    ) {
        let width = bank.len();
        bank.iter_mut().for_each(|b| b.clear());
        for lane in lanes.filter(|l| exec >> l & 1 != 0) {
            for k in 0..n {
                let a = addr(lane, k) / 4;
                let b = &mut bank[a as usize % width];
                if !b.contains(&a) {
                    b.push(a);
                }
            }
        }
        let worst = bank.iter().map(|b| b.len() as u64).max().unwrap_or(0);
        let extra = worst.saturating_sub(1);
        self.active += 1 + extra;
        self.conflict += extra;
    }
}

/// Cycles of one DS instruction on gfx950 (wave64), the rule its gemm capture pins down: the
/// LDS serves `width` dwords a cycle from `width` banks, in passes of `width / n` lanes over
/// the whole wave whatever the EXEC mask. One `ds_write_b32` (16 lanes active) counts 2 and
/// each `ds_read_b128` (one lane) 4: writes and one-dword accesses are served 32 dwords a
/// cycle (two passes of 32 lanes), multi-dword reads 64 (CDNA4's wider LDS read path), so
/// `18 = 2 + 4 × 4` per wave as SQ_LDS_IDX_ACTIVE reads. Conflicts as in [`cycles`]: a bank
/// delivering `k` different dwords in a pass costs `k - 1` more cycles.
pub fn cycles_gfx950(
    exec: u64,
    n: usize,
    read: bool,
    addr: impl Fn(usize, usize) -> u32,
) -> LdsCycles {
    let n = n.clamp(1, 4);
    let n = if n == 3 { 4 } else { n };
    let width = if read && n > 1 { 64 } else { 32 };
    let per_pass = width / n;
    let mut out = LdsCycles::default();
    let mut bank: Vec<Vec<u32>> = vec![Vec::new(); width];
    for first in (0..64).step_by(per_pass) {
        out.pass(&mut bank, first..first + per_pass, exec, n, &addr);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_dwords_do_not_conflict() {
        let c = cycles(32, u64::from(u32::MAX), 1, |l, _| 4 * l as u32);
        assert_eq!(
            c,
            LdsCycles {
                active: 1,
                conflict: 0
            }
        );
    }

    #[test]
    fn same_dword_is_a_broadcast() {
        let c = cycles(32, u64::from(u32::MAX), 1, |_, _| 64);
        assert_eq!(c.conflict, 0);
    }

    #[test]
    fn stride_of_32_dwords_is_a_32_way_conflict() {
        let c = cycles(32, u64::from(u32::MAX), 1, |l, _| 128 * l as u32);
        assert_eq!(
            c,
            LdsCycles {
                active: 32,
                conflict: 31
            }
        );
    }

    #[test]
    fn stride_two_dwords_is_two_way() {
        let c = cycles(32, u64::from(u32::MAX), 1, |l, _| 8 * l as u32);
        assert_eq!(c.conflict, 1);
    }

    #[test]
    fn b128_of_one_lane_is_four_passes() {
        let c = cycles(32, 1, 4, |l, k| 16 * l as u32 + 4 * k as u32);
        assert_eq!(
            c,
            LdsCycles {
                active: 4,
                conflict: 0
            }
        );
        // Full wave, consecutive 16-byte vectors: 8 lanes × 4 dwords fill the 32 banks.
        let c = cycles(32, u64::from(u32::MAX), 4, |l, k| {
            16 * l as u32 + 4 * k as u32
        });
        assert_eq!(
            c,
            LdsCycles {
                active: 4,
                conflict: 0
            }
        );
    }

    #[test]
    fn wave64_is_two_halves() {
        let c = cycles(64, u64::MAX, 1, |l, _| 4 * l as u32);
        assert_eq!(
            c,
            LdsCycles {
                active: 2,
                conflict: 0
            }
        );
    }

    #[test]
    fn gfx950_b32_write_is_two_passes_b128_read_four() {
        // The gfx950 gemm capture: 16 lanes write a dword, lane 0 reads 16 bytes.
        let w = cycles_gfx950(0xFFFF, 1, false, |l, _| 4 * l as u32);
        assert_eq!((w.active, w.conflict), (2, 0));
        let r = cycles_gfx950(1, 4, true, |_, k| 16 + 4 * k as u32);
        assert_eq!((r.active, r.conflict), (4, 0));
        // A full-wave b128 read of consecutive vectors fills the 64 banks every pass.
        let f = cycles_gfx950(u64::MAX, 4, true, |l, k| 16 * l as u32 + 4 * k as u32);
        assert_eq!((f.active, f.conflict), (4, 0));
        // 32 lanes hitting one bank at different dwords: 31 extra cycles in the first pass.
        let c = cycles_gfx950(u64::from(u32::MAX), 1, false, |l, _| 128 * l as u32);
        assert_eq!((c.active, c.conflict), (33, 31));
    }
}
