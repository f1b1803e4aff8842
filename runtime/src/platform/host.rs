//! The real platform: libc through `nix`. `unsafe` lives here (mmap, MMIO, ioctl).
//!
//! The [`Platform`] methods are safe functions, so they are written to stay sound whatever a
//! caller passes:
//! - `ioctl` is issued only on a descriptor this platform opened from `/dev/kfd`, only for the
//!   KFD requests in [`kfd_ioctl::user_pointers`], only with an argument exactly the request's
//!   size, and only when every user pointer the kernel follows names one of the `aux` buffers
//!   and fits in it.
//! - `reserve_va` hands out a [`VaReservation`] kept in a table; `mmap(fixed)` maps only inside
//!   a live reservation and never over another live mapping; a fixed mapping's drop puts the
//!   reservation's `PROT_NONE` back instead of leaving a hole; `release_va` only drops the
//!   table's reference, and the range is unmapped when the last mapping inside it is gone.
//!
//! Out of Rust's reach: what the GPU does with the addresses the driver is given (DMA).

use std::collections::{BTreeMap, HashMap};
use std::num::NonZeroUsize;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use nix::fcntl::{open, OFlag};
use nix::sys::mman::{mmap, mmap_anonymous, munmap, MapFlags, ProtFlags};
use nix::sys::stat::Mode;

use super::{check_range, Errno, Fd, Mmio, MmioError, Platform};
use crate::kfd::ioctl as kfd_ioctl;

fn errno(e: nix::errno::Errno) -> Errno {
    Errno(e as i32)
}

/// An owned host mapping accessed with volatile loads/stores (it may be device memory).
pub struct HostMmio {
    ptr: NonNull<u8>,
    len: usize,
    backing: Backing,
}

/// What dropping a [`HostMmio`] does to its range.
enum Backing {
    /// A mapping the kernel placed: unmap it.
    Own,
    /// A mapping placed inside a reservation: give the range back to the reservation.
    Reserved(Arc<VaReservation>),
}

/// A range of address space this process reserved (`PROT_NONE`, nothing behind it). It owns the
/// range: nothing else is ever placed there except [`HostMmio`]s created inside it, which hold
/// it alive; dropping the last owner unmaps the whole range.
pub struct VaReservation {
    ptr: NonNull<nix::libc::c_void>,
    len: usize,
    /// Live fixed mappings inside, as (offset, len).
    placed: Mutex<Vec<(usize, usize)>>,
}

// SAFETY: the reservation is only an address range; its state is behind a Mutex.
unsafe impl Send for VaReservation {}
// SAFETY: see `Send`.
unsafe impl Sync for VaReservation {}

impl VaReservation {
    fn new(len: NonZeroUsize) -> Result<Self, Errno> {
        // SAFETY: a fresh anonymous PROT_NONE mapping placed by the kernel aliases nothing.
        let ptr = unsafe {
            mmap_anonymous(
                None,
                len,
                ProtFlags::PROT_NONE,
                MapFlags::MAP_PRIVATE | MapFlags::MAP_NORESERVE,
            )
        }
        .map_err(errno)?;
        Ok(VaReservation {
            ptr,
            len: len.get(),
            placed: Mutex::new(Vec::new()),
        })
    }

    fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    /// Claims `[offset, offset + len)` for a fixed mapping: inside the range and overlapping
    /// no live mapping.
    fn claim(&self, offset: usize, len: usize) -> Result<(), Errno> {
        let end = offset.checked_add(len).ok_or(Errno::EINVAL)?;
        if end > self.len {
            return Err(Errno::EINVAL);
        }
        let mut placed = self.placed.lock().map_err(|_| Errno::EIO)?;
        if placed.iter().any(|&(o, l)| offset < o + l && o < end) {
            return Err(Errno::EBUSY);
        }
        placed.push((offset, len));
        Ok(())
    }

    fn unclaim(&self, offset: usize) {
        if let Ok(mut placed) = self.placed.lock() {
            placed.retain(|&(o, _)| o != offset);
        }
    }
}

impl Drop for VaReservation {
    fn drop(&mut self) {
        // SAFETY: the range is this reservation's own; every mapping placed inside it held an
        // `Arc` to it, so none is alive now and no Rust object refers to the range.
        let _ = unsafe { munmap(self.ptr, self.len) };
    }
}

// SAFETY: the mapping is process-wide memory; accesses are volatile and carry no Rust references
// into it, so sharing the pointer between threads is as safe as sharing the device itself.
unsafe impl Send for HostMmio {}
// SAFETY: see `Send`; no interior state besides the mapping.
unsafe impl Sync for HostMmio {}

impl HostMmio {
    fn check(&self, offset: u64, len: u64) -> Result<usize, MmioError> {
        check_range(self.addr(), self.len as u64, offset, len)?;
        Ok(offset as usize)
    }
}

impl Drop for HostMmio {
    fn drop(&mut self) {
        match &self.backing {
            Backing::Own => {
                // SAFETY: `ptr/len` is exactly the mapping this object created and owns; nothing
                // borrows it (all accesses copy), so unmapping on drop cannot dangle a reference.
                let _ = unsafe { munmap(self.ptr.cast(), self.len) };
            }
            Backing::Reserved(res) => {
                let Some(len) = NonZeroUsize::new(self.len) else {
                    return;
                };
                // SAFETY: `ptr/len` is this object's own mapping inside `res` (claimed, so no
                // other mapping overlaps it); replacing it with PROT_NONE memory keeps the
                // range reserved, so nothing else can be placed there before `res` unmaps it.
                // Should the remap fail, the old mapping simply stays (still inside `res`).
                let restored = unsafe {
                    mmap_anonymous(
                        Some(NonZeroUsize::new(self.ptr.as_ptr() as usize).unwrap_or(len)),
                        len,
                        ProtFlags::PROT_NONE,
                        MapFlags::MAP_PRIVATE | MapFlags::MAP_NORESERVE | MapFlags::MAP_FIXED,
                    )
                };
                if restored.is_ok() {
                    res.unclaim(self.ptr.as_ptr() as usize - res.ptr.as_ptr() as usize);
                }
            }
        }
    }
}

impl Mmio for HostMmio {
    fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }
    fn size(&self) -> u64 {
        self.len as u64
    }
    fn read_bytes(&self, offset: u64, out: &mut [u8]) -> Result<(), MmioError> {
        let off = self.check(offset, out.len() as u64)?;
        for (i, b) in out.iter_mut().enumerate() {
            // SAFETY: `off + i < len` was checked above; the mapping is live while `self` is.
            *b = unsafe { self.ptr.as_ptr().add(off + i).read_volatile() };
        }
        Ok(())
    }
    fn write_bytes(&self, offset: u64, data: &[u8]) -> Result<(), MmioError> {
        let off = self.check(offset, data.len() as u64)?;
        for (i, b) in data.iter().enumerate() {
            // SAFETY: bounds checked above; the mapping is writable (PROT_WRITE) and live.
            unsafe { self.ptr.as_ptr().add(off + i).write_volatile(*b) };
        }
        Ok(())
    }
    fn read32(&self, offset: u64) -> Result<u32, MmioError> {
        let off = self.check(offset, 4)?;
        if off % 4 != 0 {
            let mut b = [0u8; 4];
            self.read_bytes(offset, &mut b)?;
            return Ok(u32::from_le_bytes(b));
        }
        // SAFETY: in bounds and 4-byte aligned (mapping is page aligned, offset checked).
        Ok(u32::from_le(unsafe {
            (self.ptr.as_ptr().add(off) as *const u32).read_volatile()
        }))
    }
    fn write32(&self, offset: u64, v: u32) -> Result<(), MmioError> {
        let off = self.check(offset, 4)?;
        if off % 4 != 0 {
            return self.write_bytes(offset, &v.to_le_bytes());
        }
        // SAFETY: in bounds, aligned, writable mapping.
        unsafe { (self.ptr.as_ptr().add(off) as *mut u32).write_volatile(v.to_le()) };
        Ok(())
    }
    fn read64(&self, offset: u64) -> Result<u64, MmioError> {
        let off = self.check(offset, 8)?;
        if off % 8 != 0 {
            let mut b = [0u8; 8];
            self.read_bytes(offset, &mut b)?;
            return Ok(u64::from_le_bytes(b));
        }
        // SAFETY: in bounds, 8-byte aligned, live mapping.
        Ok(u64::from_le(unsafe {
            (self.ptr.as_ptr().add(off) as *const u64).read_volatile()
        }))
    }
    fn write64(&self, offset: u64, v: u64) -> Result<(), MmioError> {
        let off = self.check(offset, 8)?;
        if off % 8 != 0 {
            return self.write_bytes(offset, &v.to_le_bytes());
        }
        // SAFETY: in bounds, aligned, writable mapping (doorbells are 64-bit stores).
        unsafe { (self.ptr.as_ptr().add(off) as *mut u64).write_volatile(v.to_le()) };
        Ok(())
    }
    fn write_dwords(&self, offset: u64, words: &[u32]) -> Result<(), MmioError> {
        let off = self.check(offset, words.len() as u64 * 4)?;
        if off % 4 != 0 {
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            return self.write_bytes(offset, &bytes);
        }
        // SAFETY: the destination range is in bounds and aligned; source and destination cannot
        // overlap (a Rust slice vs. a mapping we never hand out as a slice).
        unsafe {
            std::ptr::copy_nonoverlapping(
                words.as_ptr(),
                self.ptr.as_ptr().add(off) as *mut u32,
                words.len(),
            )
        };
        Ok(())
    }
}

/// The real OS.
#[derive(Default)]
pub struct HostPlatform {
    /// Descriptors this platform opened, with whether they are `/dev/kfd`.
    fds: Mutex<HashMap<i32, (Arc<OwnedFd>, bool)>>,
    /// Live reservations by start address.
    reservations: Mutex<BTreeMap<u64, Arc<VaReservation>>>,
}

const KFD_PATH: &str = "/dev/kfd";

/// Checks a KFD ioctl's argument before the kernel sees it (see the module docs).
fn check_kfd_ioctl(request: u64, arg: &[u8], aux: &[&mut [u8]]) -> Result<(), Errno> {
    let Some(ptrs) = kfd_ioctl::user_pointers(request) else {
        return Err(Errno::ENOTTY);
    };
    if arg.len() != kfd_ioctl::ioc_size(request) {
        return Err(Errno::EINVAL);
    }
    let rd = le_reader::Reader::new(arg);
    for p in ptrs {
        let addr = rd.u64_at(p.ptr_at, "pointer").map_err(|_| Errno::EINVAL)?;
        let count = rd.u32_at(p.count_at, "count").map_err(|_| Errno::EINVAL)?;
        let need = usize::try_from(count)
            .ok()
            .and_then(|n| n.checked_mul(p.elem_size))
            .ok_or(Errno::EINVAL)?;
        let fits = aux
            .iter()
            .any(|b| b.as_ptr() as u64 == addr && b.len() >= need);
        if !fits && need > 0 {
            return Err(Errno::EFAULT);
        }
    }
    Ok(())
}

impl HostPlatform {
    pub fn new() -> Self {
        Self::default()
    }
}

fn nz(len: u64) -> Result<NonZeroUsize, Errno> {
    usize::try_from(len)
        .ok()
        .and_then(NonZeroUsize::new)
        .ok_or(Errno::EINVAL)
}

impl Platform for HostPlatform {
    fn open(&self, path: &str) -> Result<Fd, Errno> {
        let fd = open(path, OFlag::O_RDWR | OFlag::O_CLOEXEC, Mode::empty()).map_err(errno)?;
        let raw = fd.as_raw_fd();
        self.fds
            .lock()
            .map_err(|_| Errno::EIO)?
            .insert(raw, (Arc::new(fd), path == KFD_PATH));
        Ok(Fd(raw))
    }
    fn close(&self, fd: Fd) {
        if let Ok(mut fds) = self.fds.lock() {
            fds.remove(&fd.0);
        }
    }
    fn ioctl(
        &self,
        fd: Fd,
        request: u64,
        arg: &mut [u8],
        aux: &mut [&mut [u8]],
    ) -> Result<(), Errno> {
        // The Arc keeps the descriptor open across the call without holding the lock (a
        // WAIT_EVENTS may block for its whole timeout).
        let kfd = match self.fds.lock().map_err(|_| Errno::EIO)?.get(&fd.0) {
            Some((f, true)) => f.clone(),
            Some((_, false)) => return Err(Errno::ENOTTY),
            None => return Err(Errno::EBADF),
        };
        check_kfd_ioctl(request, arg, aux)?;
        // SAFETY: `kfd` is a /dev/kfd descriptor this platform opened and keeps open;
        // `request` is a KFD request whose struct is exactly `arg` (a live, exclusively borrowed
        // buffer), so the kernel copies in and out of `arg` only; every user pointer in it was
        // checked to name an exclusively borrowed `aux` buffer large enough for its count.
        let ret = unsafe {
            nix::libc::ioctl(
                kfd.as_raw_fd(),
                request as nix::libc::c_ulong,
                arg.as_mut_ptr(),
            )
        };
        if ret < 0 {
            Err(Errno(nix::errno::Errno::last_raw()))
        } else {
            Ok(())
        }
    }
    fn read_file(&self, path: &str) -> Result<String, Errno> {
        std::fs::read_to_string(path).map_err(|e| Errno(e.raw_os_error().unwrap_or(5)))
    }
    fn read_dir(&self, path: &str) -> Result<Vec<String>, Errno> {
        let rd = std::fs::read_dir(path).map_err(|e| Errno(e.raw_os_error().unwrap_or(5)))?;
        Ok(rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect())
    }
    fn exists(&self, path: &str) -> bool {
        std::path::Path::new(path).exists()
    }
    fn reserve_va(&self, len: u64) -> Result<u64, Errno> {
        let res = VaReservation::new(nz(len)?)?;
        let addr = res.addr();
        self.reservations
            .lock()
            .map_err(|_| Errno::EIO)?
            .insert(addr, Arc::new(res));
        Ok(addr)
    }
    fn release_va(&self, addr: u64, len: u64) {
        if let Ok(mut table) = self.reservations.lock() {
            if table.get(&addr).is_some_and(|r| r.len as u64 == len) {
                // Unmapped now, or when the last mapping placed inside it is dropped.
                table.remove(&addr);
            }
        }
    }
    fn mmap(
        &self,
        fd: Fd,
        offset: u64,
        len: u64,
        fixed: Option<u64>,
    ) -> Result<Arc<dyn Mmio>, Errno> {
        let len_nz = nz(len)?;
        let off = i64::try_from(offset).map_err(|_| Errno::EINVAL)?;
        let owned = match self.fds.lock().map_err(|_| Errno::EIO)?.get(&fd.0) {
            Some((f, _)) => f.clone(),
            None => return Err(Errno::EBADF),
        };
        let fd_b = owned.as_fd();
        let prot = ProtFlags::PROT_READ | ProtFlags::PROT_WRITE;
        let Some(at) = fixed else {
            // SAFETY: the kernel picks the address, so the new mapping aliases nothing; it is
            // owned by the returned HostMmio.
            let p = unsafe { mmap(None, len_nz, prot, MapFlags::MAP_SHARED, fd_b, off) }
                .map_err(errno)?;
            return Ok(Arc::new(HostMmio {
                ptr: p.cast(),
                len: len_nz.get(),
                backing: Backing::Own,
            }));
        };
        let res = self
            .reservations
            .lock()
            .map_err(|_| Errno::EIO)?
            .range(..=at)
            .next_back()
            .map(|(_, r)| r.clone())
            .ok_or(Errno::EINVAL)?;
        let rel = usize::try_from(at - res.addr()).map_err(|_| Errno::EINVAL)?;
        res.claim(rel, len_nz.get())?;
        // SAFETY: `[at, at + len)` lies inside a reservation this platform owns and overlaps
        // no live mapping (claimed above), so MAP_FIXED replaces only PROT_NONE pages nothing
        // refers to. The HostMmio holds the reservation alive while it exists.
        let p = unsafe {
            mmap(
                Some(nz(at)?),
                len_nz,
                prot,
                MapFlags::MAP_SHARED | MapFlags::MAP_FIXED,
                fd_b,
                off,
            )
        };
        let p = match p {
            Ok(p) => p,
            Err(e) => {
                res.unclaim(rel);
                return Err(errno(e));
            }
        };
        Ok(Arc::new(HostMmio {
            ptr: p.cast(),
            len: len_nz.get(),
            backing: Backing::Reserved(res),
        }))
    }
    fn anon_mmap(&self, len: u64) -> Result<Arc<dyn Mmio>, Errno> {
        // SAFETY: fresh anonymous shared mapping chosen by the kernel; owned by the HostMmio.
        let p = unsafe {
            mmap_anonymous(
                None,
                nz(len)?,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
            )
        }
        .map_err(errno)?;
        Ok(Arc::new(HostMmio {
            ptr: p.cast(),
            len: len as usize,
            backing: Backing::Own,
        }))
    }
}

/// Plain host memory as an [`Mmio`] (benchmarks, unit tests of ring logic).
pub fn host_memory(len: u64) -> Result<Arc<dyn Mmio>, Errno> {
    HostPlatform::new().anon_mmap(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: u64 = 4096;

    /// The tests look at the process' address space: one at a time, so a range one test freed
    /// is not taken by another's mapping before it checks.
    static ADDRESS_SPACE: Mutex<()> = Mutex::new(());

    /// Whether `addr` is mapped at all in this process (from /proc/self/maps).
    fn mapped(addr: u64) -> bool {
        std::fs::read_to_string("/proc/self/maps")
            .unwrap()
            .lines()
            .filter_map(|l| l.split_whitespace().next()?.split_once('-'))
            .filter_map(|(a, b)| {
                Some((
                    u64::from_str_radix(a, 16).ok()?,
                    u64::from_str_radix(b, 16).ok()?,
                ))
            })
            .any(|(a, b)| (a..b).contains(&addr))
    }

    #[test]
    fn fixed_mappings_only_inside_a_live_reservation() {
        let _one = ADDRESS_SPACE.lock();
        let p = HostPlatform::new();
        let fd = p.open("/dev/zero").unwrap();
        let va = p.reserve_va(4 * PAGE).unwrap();
        // Outside any reservation, or straddling its end: refused, nothing mapped.
        assert_eq!(
            p.mmap(fd, 0, PAGE, Some(va + 4 * PAGE)).err(),
            Some(Errno::EINVAL)
        );
        assert_eq!(
            p.mmap(fd, 0, 2 * PAGE, Some(va + 3 * PAGE)).err(),
            Some(Errno::EINVAL)
        );
        let m = p.mmap(fd, 0, 2 * PAGE, Some(va + PAGE)).unwrap();
        assert_eq!(m.addr(), va + PAGE);
        m.write32(8, 0xDEAD_BEEF).unwrap();
        assert_eq!(m.read32(8).unwrap(), 0xDEAD_BEEF);
        // Over a live mapping: refused.
        assert_eq!(
            p.mmap(fd, 0, PAGE, Some(va + 2 * PAGE)).err(),
            Some(Errno::EBUSY)
        );
        // A release with the wrong length is ignored; the right one drops the table's
        // reference, but the live mapping keeps the range reserved and usable.
        p.release_va(va, PAGE);
        p.release_va(va, 4 * PAGE);
        assert_eq!(m.read32(8).unwrap(), 0xDEAD_BEEF);
        assert!(mapped(va) && mapped(va + PAGE));
        // A released reservation takes no new mappings.
        assert!(p.mmap(fd, 0, PAGE, Some(va)).is_err());
        // The last owner gone, the whole range is unmapped.
        drop(m);
        assert!(!mapped(va) && !mapped(va + PAGE) && !mapped(va + 3 * PAGE));
        p.close(fd);
    }

    #[test]
    fn a_dropped_fixed_mapping_gives_its_range_back_to_the_reservation() {
        let _one = ADDRESS_SPACE.lock();
        let p = HostPlatform::new();
        let fd = p.open("/dev/zero").unwrap();
        let va = p.reserve_va(2 * PAGE).unwrap();
        let m = p.mmap(fd, 0, PAGE, Some(va)).unwrap();
        drop(m);
        // Still reserved (PROT_NONE), so nothing else can land there, and mappable again.
        assert!(mapped(va));
        let m = p.mmap(fd, 0, PAGE, Some(va)).unwrap();
        m.write32(0, 7).unwrap();
        drop(m);
        p.release_va(va, 2 * PAGE);
        assert!(!mapped(va));
    }

    #[test]
    fn ioctls_only_on_kfd_with_checked_pointers() {
        let p = HostPlatform::new();
        let fd = p.open("/dev/zero").unwrap();
        let mut arg = [0u8; 8];
        assert_eq!(
            p.ioctl(fd, kfd_ioctl::AMDKFD_IOC_GET_VERSION, &mut arg, &mut [])
                .err(),
            Some(Errno::ENOTTY),
            "not /dev/kfd"
        );
        assert_eq!(
            p.ioctl(
                Fd(12345),
                kfd_ioctl::AMDKFD_IOC_GET_VERSION,
                &mut arg,
                &mut []
            )
            .err(),
            Some(Errno::EBADF)
        );
        // The argument checks, as the ioctl would apply them on /dev/kfd.
        use kfd_ioctl::*;
        assert_eq!(
            check_kfd_ioctl(0xC008_4B99, &[0; 8], &[]),
            Err(Errno::ENOTTY)
        );
        assert_eq!(
            check_kfd_ioctl(AMDKFD_IOC_GET_VERSION, &[0; 4], &[]),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            check_kfd_ioctl(AMDKFD_IOC_GET_VERSION, &[0; 8], &[]),
            Ok(())
        );
        let mut ids = [0u8; 4];
        let good = MapMemoryArgs {
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices: 1,
            ..Default::default()
        };
        assert_eq!(
            check_kfd_ioctl(AMDKFD_IOC_MAP_MEMORY_TO_GPU, &good.to_bytes(), &[&mut ids]),
            Ok(())
        );
        // More devices than the buffer holds, or a pointer to memory not lent: refused.
        let mut too_many = good;
        too_many.n_devices = 2;
        assert_eq!(
            check_kfd_ioctl(
                AMDKFD_IOC_MAP_MEMORY_TO_GPU,
                &too_many.to_bytes(),
                &[&mut ids]
            ),
            Err(Errno::EFAULT)
        );
        let mut stray = good;
        stray.device_ids_array_ptr = 0x1000;
        assert_eq!(
            check_kfd_ioctl(AMDKFD_IOC_MAP_MEMORY_TO_GPU, &stray.to_bytes(), &[&mut ids]),
            Err(Errno::EFAULT)
        );
        p.close(fd);
    }
}
