//! One module per subcommand.

pub mod capture;
pub mod conform;
pub mod convert;
pub mod decode;
pub mod devices;
pub mod diff;
pub mod disasm;
pub mod export;
pub mod info;
pub mod open;
pub mod stats;
