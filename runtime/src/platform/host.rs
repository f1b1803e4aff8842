//! The real platform: libc through `nix`. `unsafe` lives here (mmap, MMIO, ioctl) and in `kfd`.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use nix::fcntl::{open, OFlag};
use nix::sys::mman::{mmap, mmap_anonymous, munmap, MapFlags, ProtFlags};
use nix::sys::stat::Mode;

use super::{check_range, Errno, Fd, Mmio, MmioError, Platform};

fn errno(e: nix::errno::Errno) -> Errno {
    Errno(e as i32)
}

/// An owned host mapping accessed with volatile loads/stores (it may be device memory).
pub struct HostMmio {
    ptr: NonNull<u8>,
    len: usize,
    owned: bool,
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
        if self.owned {
            // SAFETY: `ptr/len` is exactly the mapping this object created and owns; nothing
            // borrows it (all accesses copy), so unmapping on drop cannot dangle a reference.
            let _ = unsafe { munmap(self.ptr.cast(), self.len) };
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
    fds: Mutex<HashMap<i32, OwnedFd>>,
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
        self.fds.lock().map_err(|_| Errno::EIO)?.insert(raw, fd);
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
        _aux: &mut [&mut [u8]],
    ) -> Result<(), Errno> {
        // SAFETY: `arg` is a live, exclusively borrowed buffer laid out as the C struct of
        // `request` (kfd::ioctl checks the size); pointer fields inside it point into `aux`,
        // which the caller keeps borrowed for the duration of the call.
        let ret =
            unsafe { nix::libc::ioctl(fd.0, request as nix::libc::c_ulong, arg.as_mut_ptr()) };
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
        // SAFETY: a fresh anonymous PROT_NONE mapping chosen by the kernel aliases nothing.
        let p = unsafe {
            mmap_anonymous(
                None,
                nz(len)?,
                ProtFlags::PROT_NONE,
                MapFlags::MAP_PRIVATE | MapFlags::MAP_NORESERVE,
            )
        }
        .map_err(errno)?;
        Ok(p.as_ptr() as u64)
    }
    fn release_va(&self, addr: u64, len: u64) {
        if let (Some(p), Ok(len)) = (
            NonNull::new(addr as *mut nix::libc::c_void),
            usize::try_from(len),
        ) {
            // SAFETY: only called on a reservation from `reserve_va` that was never mapped over
            // and that no Rust object refers to.
            let _ = unsafe { munmap(p, len) };
        }
    }
    fn mmap(
        &self,
        fd: Fd,
        offset: u64,
        len: u64,
        fixed: Option<u64>,
    ) -> Result<Arc<dyn Mmio>, Errno> {
        let mut flags = MapFlags::MAP_SHARED;
        let addr = match fixed {
            Some(a) => {
                flags |= MapFlags::MAP_FIXED;
                Some(nz(a)?)
            }
            None => None,
        };
        let off = i64::try_from(offset).map_err(|_| Errno::EINVAL)?;
        // SAFETY: the fd stays open for the call; with MAP_FIXED the target range is a
        // reservation this process made for exactly this buffer (kfd::KfdIface::alloc).
        let fd_b = unsafe { BorrowedFd::borrow_raw(fd.0) };
        // SAFETY: see above; the result is owned by the returned HostMmio.
        let p = unsafe {
            mmap(
                addr,
                nz(len)?,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                flags,
                fd_b,
                off,
            )
        }
        .map_err(errno)?;
        Ok(Arc::new(HostMmio {
            ptr: p.cast(),
            len: len as usize,
            owned: true,
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
            owned: true,
        }))
    }
}

/// Plain host memory as an [`Mmio`] (benchmarks, unit tests of ring logic).
pub fn host_memory(len: u64) -> Result<Arc<dyn Mmio>, Errno> {
    HostPlatform::new().anon_mmap(len)
}
