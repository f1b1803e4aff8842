//! Signals: 16-byte slots (`+0` u64 value, `+8` u64 timestamp) in CPU-visible uncached memory
//! that the GPU writes with RELEASE_MEM / SDMA FENCE and the CPU polls.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::platform::{GpuIface, Mmio};

/// GPU timestamps tick at 100 MHz: divide by this to get microseconds.
pub const TIMESTAMP_DIVIDER: u64 = 100;

#[derive(Clone)]
pub struct Signal {
    pub mem: Arc<dyn Mmio>,
    pub offset: u64,
}

impl std::fmt::Debug for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signal@{:#x}", self.value_addr())
    }
}

impl Signal {
    pub fn value_addr(&self) -> u64 {
        self.mem.addr() + self.offset
    }
    pub fn timestamp_addr(&self) -> u64 {
        self.value_addr() + 8
    }
    pub fn value(&self) -> Result<u64> {
        Ok(self.mem.read64(self.offset)?)
    }
    pub fn set(&self, v: u64) -> Result<()> {
        Ok(self.mem.write64(self.offset, v)?)
    }
    /// Raw GPU timestamp (100 MHz ticks).
    pub fn timestamp(&self) -> Result<u64> {
        Ok(self.mem.read64(self.offset + 8)?)
    }
    pub fn timestamp_us(&self) -> Result<f64> {
        Ok(self.timestamp()? as f64 / TIMESTAMP_DIVIDER as f64)
    }

    /// Waits until the value is >= `value`. The timeout restarts whenever the value moves.
    /// After a short spin the CPU sleeps in the interface (KFD WAIT_EVENTS) between polls.
    /// On timeout the interface's fault report becomes [`Error::DeviceHang`].
    pub fn wait(&self, value: u64, timeout: Duration, iface: &mut dyn GpuIface) -> Result<()> {
        let mut last = self.value()?;
        let mut since = Instant::now();
        let mut spins = 0u32;
        while last < value {
            if since.elapsed() > timeout {
                let mut rep = iface.on_device_hang();
                rep.context = format!(
                    "{}: timeout after {} ms waiting for signal at {:#x} to reach {value} (it is {last})",
                    rep.context,
                    timeout.as_millis(),
                    self.value_addr()
                );
                return Err(Error::DeviceHang(rep));
            }
            spins += 1;
            if spins > 64 {
                iface.sleep(10)?;
            } else {
                std::hint::spin_loop();
            }
            let v = self.value()?;
            if v != last {
                last = v;
                since = Instant::now();
            }
        }
        Ok(())
    }
}

/// Hands out 16-byte signal slots from pages allocated by the caller.
#[derive(Default)]
pub struct SignalPool {
    free: Vec<Signal>,
}

pub const SIGNAL_PAGE: u64 = 0x1000;

impl SignalPool {
    pub fn add_page(&mut self, page: Arc<dyn Mmio>) {
        let n = page.size() / 16;
        for i in (0..n).rev() {
            self.free.push(Signal {
                mem: page.clone(),
                offset: i * 16,
            });
        }
    }
    pub fn pop(&mut self) -> Option<Signal> {
        self.free.pop()
    }
    pub fn push(&mut self, s: Signal) {
        self.free.push(s);
    }
}
