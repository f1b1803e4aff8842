//! One module per subcommand.

pub mod convert;
pub mod decode;
pub mod disasm;
pub mod export;
pub mod info;
pub mod devices;
