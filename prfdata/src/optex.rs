//! The cross-process optex (in progress).
