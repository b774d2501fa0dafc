//! The counter-name registry (in progress).
