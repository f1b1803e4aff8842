//! Per-thread spare `u32` lists: the per-wave and per-token lists an instruction-traced SE's
//! fold builds (its token index, the table's wave slots) are megabytes each, and fresh ones are
//! fresh pages the kernel must fault in and zero again for every SE. While a thread folds
//! traced SEs one after another ([`keep`]), the lists of one are handed back ([`give`]) and
//! taken again ([`filled`]) by the next.

use std::cell::RefCell;

/// At most this many lists are kept: an SE's token index is two, the table's slots one.
const KEPT: usize = 4;

thread_local! {
    /// `None`: nothing is kept (lists given back are dropped).
    static SPARE: RefCell<Option<Vec<Vec<u32>>>> = const { RefCell::new(None) };
}

/// From now on (`true`), this thread keeps the lists given back, until `keep(false)` drops
/// them: a fold over traced SEs, whose lists are the same sizes, between the two.
pub(crate) fn keep(on: bool) {
    SPARE.with(|s| *s.borrow_mut() = on.then(Vec::new));
}

/// `n` copies of `fill`: in the smallest spare list that holds them, else a new list (with an
/// eighth to spare while lists are kept: the next SE's is often a little longer).
pub(crate) fn filled(n: usize, fill: u32) -> Vec<u32> {
    let (spare, kept) = SPARE.with(|s| {
        let mut s = s.borrow_mut();
        let Some(lists) = s.as_mut() else {
            return (None, false);
        };
        let i = (0..lists.len())
            .filter(|&i| lists[i].capacity() >= n)
            .min_by_key(|&i| lists[i].capacity());
        (i.map(|i| lists.swap_remove(i)), true)
    });
    match spare {
        Some(mut v) => {
            v.clear();
            v.resize(n, fill);
            v
        }
        None if kept => {
            let mut v = Vec::with_capacity(n + n / 8);
            v.resize(n, fill);
            v
        }
        None => vec![fill; n],
    }
}

/// Hands `v` back for [`filled`] while this thread keeps lists (the largest [`KEPT`]); else
/// drops it.
pub(crate) fn give(v: Vec<u32>) {
    if v.capacity() == 0 {
        return;
    }
    SPARE.with(|s| {
        if let Some(lists) = s.borrow_mut().as_mut() {
            lists.push(v);
            if lists.len() > KEPT {
                let smallest = (0..lists.len()).min_by_key(|&i| lists[i].capacity());
                if let Some(i) = smallest {
                    lists.swap_remove(i);
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept() -> Option<usize> {
        SPARE.with(|s| s.borrow().as_ref().map(|l| l.len()))
    }

    /// A list given back is the one taken next (its allocation, refilled), only while the
    /// thread keeps lists; the smallest that fits is taken; at most [`KEPT`] stay.
    #[test]
    fn lists_are_reused_while_kept() {
        let v = filled(100, 7);
        assert_eq!(v, vec![7; 100]);
        give(v);
        assert_eq!(kept(), None);
        keep(true);
        give(vec![0; 1000]);
        give(vec![0; 10]);
        let big = vec![5u32; 200];
        let big_ptr = big.as_ptr();
        give(big);
        assert_eq!(kept(), Some(3));
        let x = filled(150, 3);
        assert_eq!(x, vec![3; 150]);
        assert_eq!(x.as_ptr(), big_ptr, "the smallest list that holds 150");
        assert_eq!(filled(2000, 4), vec![4; 2000]);
        assert_eq!(kept(), Some(2));
        for n in 1..=6 {
            give(vec![0; n * 10]);
        }
        assert_eq!(kept(), Some(KEPT));
        assert_eq!(filled(1000, 1).capacity(), 1000, "the largest stays");
        assert_eq!(filled(8000, 1).capacity(), 9000, "an eighth to spare");
        keep(false);
        give(x);
        assert_eq!(kept(), None);
        assert_eq!(filled(10, 9), vec![9; 10]);
    }
}
