//! The shared counter block (in progress).
