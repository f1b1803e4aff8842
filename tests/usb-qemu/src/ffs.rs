//! The device side of a USB function written in user space through Linux FunctionFS
//! (`Documentation/usb/functionfs.rst`, `include/uapi/linux/usb/functionfs.h`).
//!
//! A FunctionFS mount holds `ep0` and, once descriptors and strings have been written to `ep0`,
//! one file per endpoint (`ep1`, `ep2`, … in descriptor order). Control requests addressed to the
//! function arrive as 12-byte events read from `ep0`; the program answers a device→host request
//! by writing the data to `ep0`, accepts a host→device request by reading its data (or zero
//! bytes) from `ep0`, and stalls either by doing the opposite. Bulk data is plain `read`/`write`
//! on the endpoint files. Everything here is byte encoding plus file I/O: no ioctl, no `unsafe`.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// `FUNCTIONFS_DESCRIPTORS_MAGIC_V2`.
const DESCRIPTORS_MAGIC_V2: u32 = 3;
/// `FUNCTIONFS_STRINGS_MAGIC`.
const STRINGS_MAGIC: u32 = 2;
const HAS_FS_DESC: u32 = 1;
const HAS_HS_DESC: u32 = 2;
const HAS_SS_DESC: u32 = 4;
/// `FUNCTIONFS_ALL_CTRL_RECIP`: also forward control requests whose recipient is the device
/// (the ASM2464 custom firmware's vendor requests are `bmRequestType` 0x40/0xC0).
const ALL_CTRL_RECIP: u32 = 64;

/// Size of `struct usb_functionfs_event`.
pub const EVENT_SIZE: usize = 12;

#[derive(Debug, thiserror::Error)]
pub enum FfsError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path}: short event read ({got} of {EVENT_SIZE} bytes)")]
    ShortEvent { path: PathBuf, got: usize },
    #[error("{path}: unknown FunctionFS event type {kind}")]
    UnknownEvent { path: PathBuf, kind: u8 },
    #[error("{path}: a stall was expected to fail the call but it returned {ret}")]
    StallNotReported { path: PathBuf, ret: usize },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> FfsError + '_ {
    move |source| FfsError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One bulk endpoint of the function's single interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkEndpoint {
    /// `bEndpointAddress` as requested (direction bit 0x80 = IN). The gadget controller assigns
    /// the number it really uses; dummy_hcd's fixed endpoint list gives the first bulk IN 0x81 and
    /// the first bulk OUT 0x02.
    pub address: u8,
}

/// The function's one interface (number 0, alternate setting 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceSpec {
    pub class: u8,
    pub subclass: u8,
    pub protocol: u8,
    /// String for `iInterface` (string index 1).
    pub name: String,
    /// In the order the endpoint files `ep1`, `ep2`, … will appear.
    pub endpoints: Vec<BulkEndpoint>,
}

fn interface_descriptor(spec: &InterfaceSpec) -> [u8; 9] {
    [
        9, // bLength
        4, // USB_DT_INTERFACE
        0, // bInterfaceNumber
        0, // bAlternateSetting
        spec.endpoints.len() as u8,
        spec.class,
        spec.subclass,
        spec.protocol,
        1, // iInterface
    ]
}

fn endpoint_descriptor(ep: BulkEndpoint, max_packet: u16) -> [u8; 7] {
    let mp = max_packet.to_le_bytes();
    [7, 5, ep.address, 2 /* bulk */, mp[0], mp[1], 0]
}

/// SuperSpeed endpoint companion: no bursts, no streams.
const SS_COMPANION: [u8; 6] = [6, 0x30, 0, 0, 0, 0];

/// The v2 descriptor blob written first to `ep0`: full-, high- and SuperSpeed descriptor sets
/// (bulk max packet 64 / 512 / 1024), with [`ALL_CTRL_RECIP`].
pub fn descriptors_blob(spec: &InterfaceSpec) -> Vec<u8> {
    let mut fs = interface_descriptor(spec).to_vec();
    let mut hs = fs.clone();
    let mut ss = fs.clone();
    for &ep in &spec.endpoints {
        fs.extend(endpoint_descriptor(ep, 64));
        hs.extend(endpoint_descriptor(ep, 512));
        ss.extend(endpoint_descriptor(ep, 1024));
        ss.extend(SS_COMPANION);
    }
    let count = 1 + spec.endpoints.len() as u32;
    let mut out = Vec::new();
    out.extend(DESCRIPTORS_MAGIC_V2.to_le_bytes());
    out.extend(0u32.to_le_bytes()); // length, patched below
    out.extend((HAS_FS_DESC | HAS_HS_DESC | HAS_SS_DESC | ALL_CTRL_RECIP).to_le_bytes());
    out.extend(count.to_le_bytes()); // fs_count
    out.extend(count.to_le_bytes()); // hs_count
    out.extend((count + spec.endpoints.len() as u32).to_le_bytes()); // ss_count (+ companions)
    out.extend(fs);
    out.extend(hs);
    out.extend(ss);
    let len = out.len() as u32;
    out[4..8].copy_from_slice(&len.to_le_bytes());
    out
}

/// The strings blob written second to `ep0`: one language (0x0409), one string.
pub fn strings_blob(spec: &InterfaceSpec) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend(STRINGS_MAGIC.to_le_bytes());
    out.extend(0u32.to_le_bytes()); // length, patched below
    out.extend(1u32.to_le_bytes()); // str_count
    out.extend(1u32.to_le_bytes()); // lang_count
    out.extend(0x0409u16.to_le_bytes());
    out.extend(spec.name.as_bytes());
    out.push(0);
    let len = out.len() as u32;
    out[4..8].copy_from_slice(&len.to_le_bytes());
    out
}

/// `struct usb_ctrlrequest`, the setup packet of a control transfer: the usb crate's layout.
pub use usb::proto::ControlSetup as Setup;

/// One FunctionFS event read from `ep0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Bind,
    Unbind,
    Enable,
    Disable,
    Setup(Setup),
    Suspend,
    Resume,
}

impl Event {
    /// Decodes `struct usb_functionfs_event` (8 bytes of setup packet, type, 3 bytes padding).
    pub fn from_bytes(b: [u8; EVENT_SIZE], path: &Path) -> Result<Event, FfsError> {
        Ok(match b[8] {
            0 => Event::Bind,
            1 => Event::Unbind,
            2 => Event::Enable,
            3 => Event::Disable,
            4 => {
                // The first 8 bytes always unpack; a failure would be a short event.
                let s = Setup::from_bytes(&b[..8]).map_err(|_| FfsError::ShortEvent {
                    path: path.to_path_buf(),
                    got: 8,
                })?;
                Event::Setup(s)
            }
            5 => Event::Suspend,
            6 => Event::Resume,
            kind => {
                return Err(FfsError::UnknownEvent {
                    path: path.to_path_buf(),
                    kind,
                })
            }
        })
    }
}

/// A FunctionFS function after its descriptors were written: `ep0` plus the endpoint files.
pub struct Function {
    ep0_path: PathBuf,
    ep0: File,
    /// `(path, file)` per endpoint, in [`InterfaceSpec::endpoints`] order.
    pub endpoints: Vec<(PathBuf, File)>,
}

/// Largest single read/write on an endpoint file: the kernel allocates a buffer per call.
pub const MAX_IO: usize = 16384;

impl Function {
    /// Writes descriptors and strings to `mount/ep0` and opens `mount/ep1…`.
    pub fn open(mount: &Path, spec: &InterfaceSpec) -> Result<Function, FfsError> {
        let ep0_path = mount.join("ep0");
        let mut ep0 = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&ep0_path)
            .map_err(io_err(&ep0_path))?;
        ep0.write_all(&descriptors_blob(spec))
            .map_err(io_err(&ep0_path))?;
        ep0.write_all(&strings_blob(spec))
            .map_err(io_err(&ep0_path))?;
        let mut endpoints = Vec::new();
        for (i, ep) in spec.endpoints.iter().enumerate() {
            let path = mount.join(format!("ep{}", i + 1));
            let file = OpenOptions::new()
                .read(ep.address & 0x80 == 0)
                .write(ep.address & 0x80 != 0)
                .open(&path)
                .map_err(io_err(&path))?;
            endpoints.push((path, file));
        }
        Ok(Function {
            ep0_path,
            ep0,
            endpoints,
        })
    }

    /// Blocks until the next event.
    pub fn next_event(&mut self) -> Result<Event, FfsError> {
        let mut b = [0u8; EVENT_SIZE];
        let got = self.ep0.read(&mut b).map_err(io_err(&self.ep0_path))?;
        if got != EVENT_SIZE {
            return Err(FfsError::ShortEvent {
                path: self.ep0_path.clone(),
                got,
            });
        }
        Event::from_bytes(b, &self.ep0_path)
    }

    /// Data stage of a device→host request (at most `wLength` bytes; the kernel truncates).
    pub fn reply(&mut self, data: &[u8]) -> Result<(), FfsError> {
        self.ep0.write_all(data).map_err(io_err(&self.ep0_path))
    }

    /// Data stage (and status) of a host→device request: reads `len` bytes (0 = just accept).
    pub fn accept(&mut self, len: usize) -> Result<Vec<u8>, FfsError> {
        let mut buf = vec![0u8; len];
        let got = self.ep0.read(&mut buf).map_err(io_err(&self.ep0_path))?;
        buf.truncate(got);
        Ok(buf)
    }

    /// Stalls the pending request: FunctionFS stalls when the data stage goes the wrong way and
    /// reports that as an error (EL2HLT) from the call.
    pub fn stall(&mut self, setup: &Setup) -> Result<(), FfsError> {
        let ret = if setup.is_in() {
            self.ep0.read(&mut [])
        } else {
            self.ep0.write(&[])
        };
        match ret {
            Err(_) => Ok(()),
            Ok(ret) => Err(FfsError::StallNotReported {
                path: self.ep0_path.clone(),
                ret,
            }),
        }
    }

    /// Receives exactly `len` bytes on OUT endpoint `idx` (in pieces of at most [`MAX_IO`]).
    pub fn bulk_read(&mut self, idx: usize, len: usize) -> Result<Vec<u8>, FfsError> {
        let (path, file) = &mut self.endpoints[idx];
        let mut out = vec![0u8; len];
        let mut done = 0;
        while done < len {
            let end = (done + MAX_IO).min(len);
            let got = file.read(&mut out[done..end]).map_err(io_err(path))?;
            if got == 0 {
                return Err(FfsError::Io {
                    path: path.clone(),
                    source: io::Error::new(io::ErrorKind::UnexpectedEof, "zero-length read"),
                });
            }
            done += got;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> InterfaceSpec {
        InterfaceSpec {
            class: 0xFF,
            subclass: 0,
            protocol: 0,
            name: "x".into(),
            endpoints: vec![
                BulkEndpoint { address: 0x02 },
                BulkEndpoint { address: 0x81 },
            ],
        }
    }

    #[test]
    fn descriptor_blob_layout() {
        let b = descriptors_blob(&spec());
        // header 12 + 3 counts + fs (9+14) + hs (9+14) + ss (9+2*13)
        assert_eq!(b.len(), 12 + 12 + 23 + 23 + 35);
        assert_eq!(
            u32::from_le_bytes(b[4..8].try_into().unwrap()) as usize,
            b.len()
        );
        assert_eq!(&b[12..24], &[3, 0, 0, 0, 3, 0, 0, 0, 5, 0, 0, 0]);
        // the high-speed OUT endpoint: max packet 512
        let hs_ep = 24 + 23 + 9;
        assert_eq!(&b[hs_ep..hs_ep + 7], &[7, 5, 0x02, 2, 0x00, 0x02, 0]);
    }

    #[test]
    fn strings_blob_layout() {
        let b = strings_blob(&spec());
        assert_eq!(
            b,
            [2, 0, 0, 0, 20, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 9, 4, b'x', 0]
        );
    }

    #[test]
    fn events_decode() {
        let s = Setup {
            request_type: 0xC0,
            request: 0xE4,
            value: 0xB450,
            index: 0x0100,
            length: 1,
        };
        let mut b = [0u8; EVENT_SIZE];
        b[..8].copy_from_slice(&s.to_bytes());
        b[8] = 4;
        assert_eq!(
            Event::from_bytes(b, Path::new("ep0")).unwrap(),
            Event::Setup(s)
        );
        b[8] = 9;
        assert!(Event::from_bytes(b, Path::new("ep0")).is_err());
    }
}
