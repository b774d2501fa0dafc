//! The crate's error type.

/// Everything that can go wrong in prfdata (in progress).
#[derive(Debug, thiserror::Error)]
pub enum Error {}
