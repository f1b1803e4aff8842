//! Sequence alignment of two instruction streams: a longest common subsequence found with
//! Myers' O((N+M)·D) difference algorithm in its linear-space form (divide and conquer on the
//! "middle snake", E. Myers 1986, §4b). Memory is O(N+M); time is near-linear when the two
//! sequences are similar (an edited kernel), which is the case the diff is for, and O((N+M)²)
//! in the worst case of two unrelated sequences.
//!
//! Items are compared through `u32` ids (equal ids = equal items), so callers intern their
//! tokens (instruction text, mnemonic) once and the inner loops compare integers.

use std::collections::HashMap;

/// One step of an alignment, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `a[i]` and `b[j]` are the same item.
    Match(usize, usize),
    /// `a[i]` has no counterpart in `b`.
    Delete(usize),
    /// `b[j]` has no counterpart in `a`.
    Insert(usize),
}

/// Interns items to dense `u32` ids.
#[derive(Debug, Default)]
pub struct Interner<'s> {
    ids: HashMap<&'s str, u32>,
}

impl<'s> Interner<'s> {
    pub fn id(&mut self, s: &'s str) -> u32 {
        let n = self.ids.len() as u32;
        *self.ids.entry(s).or_insert(n)
    }
}

/// A maximal alignment of `a` and `b`: every item of both appears exactly once, `Match`es
/// form a longest common subsequence, and steps are in order of both sequences. Between two
/// matches, deletions come before insertions.
pub fn align(a: &[u32], b: &[u32]) -> Vec<Step> {
    let mut matches = Vec::new();
    let max = a.len() + b.len() + 2;
    let mut vf = vec![0usize; 2 * max + 1];
    let mut vb = vec![0usize; 2 * max + 1];
    conquer(a, 0, a.len(), b, 0, b.len(), &mut vf, &mut vb, &mut matches);
    let mut steps = Vec::with_capacity(a.len() + b.len() - matches.len());
    let (mut i, mut j) = (0, 0);
    for &(mi, mj) in &matches {
        steps.extend((i..mi).map(Step::Delete));
        steps.extend((j..mj).map(Step::Insert));
        steps.push(Step::Match(mi, mj));
        (i, j) = (mi + 1, mj + 1);
    }
    steps.extend((i..a.len()).map(Step::Delete));
    steps.extend((j..b.len()).map(Step::Insert));
    steps
}

/// Length of the common prefix of `a[a0..a1]` and `b[b0..b1]`.
fn prefix(a: &[u32], a0: usize, a1: usize, b: &[u32], b0: usize, b1: usize) -> usize {
    a[a0..a1]
        .iter()
        .zip(&b[b0..b1])
        .take_while(|(x, y)| x == y)
        .count()
}

/// Length of the common suffix of `a[a0..a1]` and `b[b0..b1]`.
fn suffix(a: &[u32], a0: usize, a1: usize, b: &[u32], b0: usize, b1: usize) -> usize {
    a[a0..a1]
        .iter()
        .rev()
        .zip(b[b0..b1].iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

/// Appends the matched pairs of an optimal alignment of `a[a0..a1]` and `b[b0..b1]`, in order.
#[allow(clippy::too_many_arguments)]
fn conquer(
    a: &[u32],
    mut a0: usize,
    mut a1: usize,
    b: &[u32],
    mut b0: usize,
    mut b1: usize,
    vf: &mut [usize],
    vb: &mut [usize],
    out: &mut Vec<(usize, usize)>,
) {
    let p = prefix(a, a0, a1, b, b0, b1);
    out.extend((0..p).map(|i| (a0 + i, b0 + i)));
    a0 += p;
    b0 += p;
    let s = suffix(a, a0, a1, b, b0, b1);
    a1 -= s;
    b1 -= s;
    if a0 < a1 && b0 < b1 {
        // Both non-empty and first/last items differ, so the edit distance is >= 2 and the
        // middle snake splits the problem into two strictly smaller ones.
        let (x, y) = middle_snake(a, a0, a1, b, b0, b1, vf, vb);
        let inside = (a0..=a1).contains(&x) && (b0..=b1).contains(&y);
        if inside && (x, y) != (a0, b0) && (x, y) != (a1, b1) {
            conquer(a, a0, x, b, b0, y, vf, vb, out);
            conquer(a, x, a1, b, y, b1, vf, vb, out);
        }
        // Otherwise (never seen; the property test checks optimality) the rest stays unmatched
        // rather than recursing forever.
    }
    out.extend((0..s).map(|i| (a1 + i, b1 + i)));
}

/// The start of a middle snake of an optimal path through `a[a0..a1]` × `b[b0..b1]`, as absolute
/// indices. Forward paths run from (0,0), backward ones from (n,m); diagonal k = x - y.
#[allow(clippy::too_many_arguments)]
fn middle_snake(
    a: &[u32],
    a0: usize,
    a1: usize,
    b: &[u32],
    b0: usize,
    b1: usize,
    vf: &mut [usize],
    vb: &mut [usize],
) -> (usize, usize) {
    let n = (a1 - a0) as isize;
    let m = (b1 - b0) as isize;
    let delta = n - m;
    let odd = delta & 1 == 1;
    // Diagonals -dmax..=dmax live at index k + off.
    let dmax = (n + m + 1) / 2 + 1;
    let off = dmax;
    let ix = |k: isize| (k + off) as usize;
    vf[ix(1)] = 0;
    vb[ix(1)] = 0;
    for d in 0..=dmax {
        // Forward: furthest reaching d-path on each diagonal.
        let mut k = -d;
        while k <= d {
            let mut x = if k == -d || (k != d && vf[ix(k - 1)] < vf[ix(k + 1)]) {
                vf[ix(k + 1)] as isize
            } else {
                vf[ix(k - 1)] as isize + 1
            };
            let y = x - k;
            let (x0, y0) = (x, y);
            if x < n && y < m && y >= 0 {
                x += prefix(a, a0 + x as usize, a1, b, b0 + y as usize, b1) as isize;
            }
            vf[ix(k)] = x.max(0) as usize;
            if odd {
                let kb = delta - k;
                if kb >= -(d - 1) && kb < d && x + vb[ix(kb)] as isize >= n {
                    return (a0 + x0 as usize, b0 + y0 as usize);
                }
            }
            k += 2;
        }
        // Backward: the same from the end, x counting items consumed from the back.
        let mut k = -d;
        while k <= d {
            let mut x = if k == -d || (k != d && vb[ix(k - 1)] < vb[ix(k + 1)]) {
                vb[ix(k + 1)] as isize
            } else {
                vb[ix(k - 1)] as isize + 1
            };
            let mut y = x - k;
            if x < n && y < m && y >= 0 {
                let adv = suffix(a, a0, a1 - x as usize, b, b0, b1 - y as usize) as isize;
                x += adv;
                y += adv;
            }
            vb[ix(k)] = x.max(0) as usize;
            if !odd {
                let kf = delta - k;
                if kf >= -d && kf <= d && x + vf[ix(kf)] as isize >= n {
                    return (a0 + (n - x) as usize, b0 + (m - y) as usize);
                }
            }
            k += 2;
        }
    }
    // Unreachable for valid input (a path of length n+m always exists); split in the middle
    // rather than panic.
    ((a0 + a1) / 2, (b0 + b1) / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcs_len(a: &[u32], b: &[u32]) -> usize {
        let mut dp = vec![vec![0usize; b.len() + 1]; a.len() + 1];
        for i in 0..a.len() {
            for j in 0..b.len() {
                dp[i + 1][j + 1] = if a[i] == b[j] {
                    dp[i][j] + 1
                } else {
                    dp[i][j + 1].max(dp[i + 1][j])
                };
            }
        }
        dp[a.len()][b.len()]
    }

    fn check(a: &[u32], b: &[u32]) {
        let steps = align(a, b);
        let (mut i, mut j, mut matched) = (0, 0, 0);
        for s in &steps {
            match *s {
                Step::Match(x, y) => {
                    assert_eq!((x, y), (i, j), "{a:?} {b:?} {steps:?}");
                    assert_eq!(a[x], b[y]);
                    i += 1;
                    j += 1;
                    matched += 1;
                }
                Step::Delete(x) => {
                    assert_eq!(x, i);
                    i += 1;
                }
                Step::Insert(y) => {
                    assert_eq!(y, j);
                    j += 1;
                }
            }
        }
        assert_eq!((i, j), (a.len(), b.len()));
        assert_eq!(matched, lcs_len(a, b), "{a:?} {b:?} {steps:?}");
    }

    #[test]
    fn small_cases() {
        check(&[], &[]);
        check(&[1], &[]);
        check(&[], &[1]);
        check(&[1, 2, 3], &[1, 2, 3]);
        check(&[1, 2, 3], &[1, 9, 3]);
        check(&[1, 2, 3, 4], &[4, 3, 2, 1]);
        check(&[1, 1, 1], &[1, 1]);
        check(&[0, 1, 0, 1, 0], &[1, 0, 1, 0, 1, 1]);
    }

    proptest::proptest! {
        #[test]
        fn alignment_is_a_longest_common_subsequence(
            a in proptest::collection::vec(0u32..4, 0..40),
            b in proptest::collection::vec(0u32..4, 0..40),
        ) {
            check(&a, &b);
        }
    }
}
