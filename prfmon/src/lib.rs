//! The library behind the `prfmon` command.
//!
//! # Index
//!
//! **Values and paths as PDH sees them**
//! - [`pdh`]: formatted values from raw samples ([`pdh::formula`]) and counter paths in PDH
//!   syntax ([`pdh::path`]).
pub mod pdh;
