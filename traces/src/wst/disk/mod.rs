//! The `.wst` metadata as it is stored, one module per schema version.
//!
//! These structs are the file format: they are never the in-memory [`crate::model`], so the model
//! can gain, rename or reorder fields without changing what a saved file means. A schema version
//! is frozen once released: a model change that the current schema cannot carry gets a new
//! `vN` module (and its conversions) beside the old ones, which stay to read old files.

pub mod v1;
