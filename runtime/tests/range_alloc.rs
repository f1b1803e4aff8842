//! The boot-memory allocator with sizes that come from outside: a partial boot passes the TMR
//! size read back from the boot record in VRAM (`pci::am::boot::BootRecord`) straight to
//! `RangeAlloc::alloc`, so a damaged record must get a refusal, not a wrapped address range.

use runtime::pci::am::gmc::RangeAlloc;

#[test]
fn a_size_past_the_address_space_is_refused() {
    let mut a = RangeAlloc::new(0x1000, 0x1000);
    // 0x1000 + size wraps to 0, which is "inside" the free range if added unchecked.
    assert_eq!(a.alloc(u64::MAX - 0xfff, 1), None);
    assert_eq!(a.alloc(u64::MAX, 0x1000), None);
    assert_eq!(a.free_bytes(), 0x1000, "a refusal takes nothing");
    assert_eq!(a.alloc(0x1000, 0x1000), Some(0x1000));
}

#[test]
fn an_alignment_past_the_address_space_is_refused() {
    // Rounding 0x1000 up to 2^63 fits; rounding 2^63 + 0x1000 up to it wraps to 0.
    let mut a = RangeAlloc::new((1 << 63) + 0x1000, 0x1000);
    assert_eq!(a.alloc(0x10, 1 << 63), None);
    assert_eq!(a.free_bytes(), 0x1000);
}
