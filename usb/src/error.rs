//! Errors of the USB bridge layer, as values. Each says which transfer or request failed.

/// A malformed message: which layout, at which byte offset, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{layout}: at byte {offset}: {msg}")]
pub struct ProtoError {
    pub layout: &'static str,
    pub offset: usize,
    pub msg: String,
}

impl ProtoError {
    pub fn new(layout: &'static str, offset: usize, msg: impl Into<String>) -> Self {
        ProtoError {
            layout,
            offset,
            msg: msg.into(),
        }
    }
}

/// PCIe completion status of a non-posted TLP (bits 13..15 of the completion header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CplStatus {
    Success,
    UnsupportedRequest,
    ConfigRetry,
    CompleterAbort,
    Reserved(u8),
}

impl CplStatus {
    pub fn from_bits(b: u8) -> CplStatus {
        match b & 7 {
            0 => CplStatus::Success,
            1 => CplStatus::UnsupportedRequest,
            2 => CplStatus::ConfigRetry,
            4 => CplStatus::CompleterAbort,
            x => CplStatus::Reserved(x),
        }
    }
    pub fn bits(self) -> u8 {
        match self {
            CplStatus::Success => 0,
            CplStatus::UnsupportedRequest => 1,
            CplStatus::ConfigRetry => 2,
            CplStatus::CompleterAbort => 4,
            CplStatus::Reserved(x) => x & 7,
        }
    }
}

impl std::fmt::Display for CplStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CplStatus::Success => write!(f, "Successful Completion"),
            CplStatus::UnsupportedRequest => write!(f, "Unsupported Request"),
            CplStatus::ConfigRetry => write!(f, "Configuration Request Retry Status"),
            CplStatus::CompleterAbort => write!(f, "Completer Abort"),
            CplStatus::Reserved(x) => write!(f, "reserved status {x:#05b}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsbError {
    /// libusb could not start (no usbfs, no permissions to the bus).
    #[error("USB is not available on this machine: {0}")]
    NoUsb(String),
    #[error("no ASM2464 bridge number {index} ({found} found)")]
    NotFound { index: usize, found: usize },
    #[error("cannot open the bridge at {path}: {msg}")]
    Open { path: String, msg: String },
    #[error("USB {what} timed out after {ms} ms: the bridge did not answer (firmware stalled or PCIe link down)")]
    Timeout { what: String, ms: u64 },
    #[error("USB {what}: the endpoint stalled (the bridge rejected the request)")]
    Stall { what: String },
    #[error("USB {what}: the bridge is gone (unplugged or reset)")]
    Disconnected { what: String },
    #[error("USB {what}: short transfer, {got} of {expected} bytes")]
    Short {
        what: String,
        expected: usize,
        got: usize,
    },
    #[error("USB {what}: {msg}")]
    Io { what: String, msg: String },
    #[error("bridge protocol: {0}")]
    Proto(#[from] ProtoError),
    #[error("PCIe {what} at {addr:#x}: completion status {status}")]
    Completion {
        what: &'static str,
        addr: u64,
        status: CplStatus,
    },
    #[error("PCIe {what} at {addr:#x}: the TLP engine failed {tries} times (last return status {code:#04x})")]
    TlpFailed {
        what: &'static str,
        addr: u64,
        tries: u32,
        code: u8,
    },
    #[error("PCIe enumeration: {0}")]
    Enumerate(String),
    /// A transfer of a streamed submission failed: which one (`index` of `total`, what it
    /// carried, where in the copy), what happened, and how many transfers still in flight were
    /// cancelled because of it (none is left pending).
    #[error("USB streamed submission: transfer {index} of {total} ({what}{}) failed: {source}; {cancelled} in-flight transfer(s) cancelled", context.as_deref().map(|c| format!(", {c}")).unwrap_or_default())]
    Stream {
        index: usize,
        total: usize,
        what: String,
        context: Option<String>,
        cancelled: usize,
        source: Box<UsbError>,
    },
    #[error("{0}")]
    Invalid(String),
    #[error("not supported: {0}")]
    Unsupported(String),
}

impl UsbError {
    /// The device went away: callers stop cleanly and keep what they have.
    pub fn is_disconnect(&self) -> bool {
        match self {
            UsbError::Disconnected { .. } => true,
            UsbError::Stream { source, .. } => source.is_disconnect(),
            _ => false,
        }
    }
}

pub type Result<T, E = UsbError> = std::result::Result<T, E>;
