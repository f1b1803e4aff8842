//! The real transport: libusb through `rusb`. Finds ASM2464 bridges by USB id, claims interface 0
//! (detaching a kernel driver such as `uas`/`usb-storage` only when asked) and selects the
//! alternate setting of the firmware's protocol.
//!
//! Without usbfs (containers, this CI) `rusb::Context::new()` fails: [`list_bridges`] reports
//! that as [`UsbError::NoUsb`] and callers show "no bridges" instead of failing.

use std::time::Duration;

use rusb::{Context, DeviceHandle, UsbContext};

use crate::error::{Result, UsbError};
use crate::proto::ControlSetup;
use crate::stream::StreamReport;
use crate::transport::{BridgeInfo, Transfer, UsbTransport};

/// USB ids of ASM2464 bridges (usb-asm24.md §2).
pub const BRIDGE_IDS: &[(u16, u16, &str)] = &[
    (
        0x174C,
        0x2464,
        "ASM2464 (stock firmware, unpatched: flash it first)",
    ),
    (0xADD1, 0x0001, "ASM2464 (tinygrad firmware)"),
    (0x3801, 0x0001, "ASM2464 (custom firmware)"),
];

/// A bridge seen on the bus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundBridge {
    pub index: usize,
    pub bus: u8,
    pub address: u8,
    pub port: u8,
    pub vid: u16,
    pub pid: u16,
    pub what: &'static str,
}

fn map_err(what: &str, e: rusb::Error, timeout: Duration) -> UsbError {
    let what = what.to_string();
    match e {
        rusb::Error::Timeout => UsbError::Timeout {
            what,
            ms: timeout.as_millis() as u64,
        },
        rusb::Error::NoDevice => UsbError::Disconnected { what },
        rusb::Error::Pipe => UsbError::Stall { what },
        e => UsbError::Io {
            what,
            msg: e.to_string(),
        },
    }
}

fn context() -> Result<Context> {
    Context::new().map_err(|e| UsbError::NoUsb(format!("libusb_init failed: {e}")))
}

/// Lists ASM2464 bridges in bus order. `Err(NoUsb)` when libusb cannot start.
pub fn list_bridges() -> Result<Vec<FoundBridge>> {
    let ctx = context()?;
    let devices = ctx
        .devices()
        .map_err(|e| UsbError::NoUsb(format!("cannot list USB devices: {e}")))?;
    let mut out = Vec::new();
    for d in devices.iter() {
        let Ok(desc) = d.device_descriptor() else {
            continue;
        };
        let (vid, pid) = (desc.vendor_id(), desc.product_id());
        if let Some(&(_, _, what)) = BRIDGE_IDS.iter().find(|(v, p, _)| *v == vid && *p == pid) {
            out.push(FoundBridge {
                index: out.len(),
                bus: d.bus_number(),
                address: d.address(),
                port: d.port_number(),
                vid,
                pid,
                what,
            });
        }
    }
    Ok(out)
}

/// How to open a bridge.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenOptions {
    /// Detach a bound kernel driver (uas, usb-storage) from interface 0. Without it a bound
    /// driver is an error that says so.
    pub detach_kernel_driver: bool,
}

/// An opened, claimed bridge.
pub struct RusbTransport {
    handle: DeviceHandle<Context>,
    info: BridgeInfo,
}

impl RusbTransport {
    /// Opens bridge number `index` of [`list_bridges`].
    pub fn open(index: usize, opts: OpenOptions) -> Result<RusbTransport> {
        let ctx = context()?;
        let devices = ctx
            .devices()
            .map_err(|e| UsbError::NoUsb(format!("cannot list USB devices: {e}")))?;
        let bridges: Vec<_> = devices
            .iter()
            .filter(|d| {
                d.device_descriptor().is_ok_and(|desc| {
                    BRIDGE_IDS
                        .iter()
                        .any(|(v, p, _)| *v == desc.vendor_id() && *p == desc.product_id())
                })
            })
            .collect();
        let found = bridges.len();
        let dev = bridges
            .into_iter()
            .nth(index)
            .ok_or(UsbError::NotFound { index, found })?;
        let path = format!("bus {} port {}", dev.bus_number(), dev.port_number());
        let open_err = |msg: String| UsbError::Open {
            path: path.clone(),
            msg,
        };
        let desc = dev
            .device_descriptor()
            .map_err(|e| open_err(format!("device descriptor: {e}")))?;
        let handle = dev.open().map_err(|e| {
            open_err(match e {
                rusb::Error::Access => {
                    "permission denied (run as root or add a udev rule for the bridge)".into()
                }
                e => e.to_string(),
            })
        })?;
        let product = handle.read_product_string_ascii(&desc).unwrap_or_default();
        let has_uas_alt = dev.config_descriptor(0).is_ok_and(|c| {
            c.interfaces()
                .filter(|i| i.number() == 0)
                .flat_map(|i| i.descriptors().collect::<Vec<_>>())
                .any(|d| d.setting_number() == 1)
        });
        let info = BridgeInfo {
            vid: desc.vendor_id(),
            pid: desc.product_id(),
            product,
            location: path.clone(),
            has_uas_alt,
        };
        if handle.kernel_driver_active(0).unwrap_or(false) {
            if !opts.detach_kernel_driver {
                return Err(open_err(
                    "interface 0 is bound to a kernel driver (uas/usb-storage); \
                     allow detaching it (--detach-kernel-driver)"
                        .into(),
                ));
            }
            handle
                .detach_kernel_driver(0)
                .map_err(|e| open_err(format!("detaching the kernel driver: {e}")))?;
            handle
                .reset()
                .map_err(|e| open_err(format!("reset after detaching: {e}")))?;
        }
        if handle.active_configuration().ok() != Some(1) {
            handle
                .set_active_configuration(1)
                .map_err(|e| open_err(format!("set_configuration(1): {e}")))?;
        }
        handle
            .claim_interface(0)
            .map_err(|e| open_err(format!("claim_interface(0): {e}")))?;
        let alt = u8::from(
            crate::controller::Firmware::detect(&info) == crate::controller::Firmware::Stock,
        );
        handle
            .set_alternate_setting(0, alt)
            .map_err(|e| open_err(format!("set_interface_alt_setting(0, {alt}): {e}")))?;
        if alt == 1 {
            for ep in [0x04u8, 0x83, 0x81, 0x02] {
                let _ = handle.clear_halt(ep);
            }
        }
        Ok(RusbTransport { handle, info })
    }
}

fn no_streams(stream: u16, what: &str) -> Result<()> {
    if stream != 0 {
        return Err(UsbError::Unsupported(format!(
            "{what}: USB3 bulk streams (UAS, stock firmware) are not available through rusb 0.9; \
             flash tinygrad's custom firmware"
        )));
    }
    Ok(())
}

impl UsbTransport for RusbTransport {
    fn info(&self) -> BridgeInfo {
        self.info.clone()
    }
    fn control_out(
        &mut self,
        setup: &ControlSetup,
        data: &[u8],
        timeout: Duration,
    ) -> Result<usize> {
        self.handle
            .write_control(
                setup.request_type,
                setup.request,
                setup.value,
                setup.index,
                data,
                timeout,
            )
            .map_err(|e| map_err(&format!("control OUT {:#04x}", setup.request), e, timeout))
    }
    fn control_in(&mut self, setup: &ControlSetup, timeout: Duration) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; usize::from(setup.length)];
        let n = self
            .handle
            .read_control(
                setup.request_type,
                setup.request,
                setup.value,
                setup.index,
                &mut buf,
                timeout,
            )
            .map_err(|e| map_err(&format!("control IN {:#04x}", setup.request), e, timeout))?;
        buf.truncate(n);
        Ok(buf)
    }
    fn bulk_out(&mut self, ep: u8, stream: u16, data: &[u8], timeout: Duration) -> Result<usize> {
        let what = format!("bulk OUT {ep:#04x}");
        no_streams(stream, &what)?;
        self.handle
            .write_bulk(ep, data, timeout)
            .map_err(|e| map_err(&what, e, timeout))
    }
    fn bulk_in(&mut self, ep: u8, stream: u16, len: usize, timeout: Duration) -> Result<Vec<u8>> {
        let what = format!("bulk IN {ep:#04x}");
        no_streams(stream, &what)?;
        let mut buf = vec![0u8; len];
        let n = self
            .handle
            .read_bulk(ep, &mut buf, timeout)
            .map_err(|e| map_err(&what, e, timeout))?;
        buf.truncate(n);
        Ok(buf)
    }
    /// Several transfers in flight through libusb's asynchronous API ([`crate::libusb_async`]).
    fn submit_streamed(
        &mut self,
        batch: &[Transfer],
        free: &[bool],
        depth: usize,
        timeout: Duration,
    ) -> Result<(Vec<Vec<u8>>, StreamReport)> {
        if depth <= 1 {
            return crate::stream::run_sequential(self, batch, timeout);
        }
        let mut engine = crate::libusb_async::LibusbEngine::new(&self.handle);
        crate::stream::run(&mut engine, batch, free, depth, timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_without_usbfs_is_an_error_value_not_a_panic() {
        // On a machine with USB this lists bridges (likely none); without usbfs it must say so.
        match list_bridges() {
            Ok(v) => assert!(v.iter().all(|b| BRIDGE_IDS
                .iter()
                .any(|(vv, p, _)| *vv == b.vid && *p == b.pid))),
            Err(e) => assert!(matches!(e, UsbError::NoUsb(_)), "{e}"),
        }
        match RusbTransport::open(0, OpenOptions::default()) {
            Ok(_) => {}
            Err(e) => assert!(
                matches!(
                    e,
                    UsbError::NoUsb(_) | UsbError::NotFound { .. } | UsbError::Open { .. }
                ),
                "{e}"
            ),
        }
    }
}
