//! The performance data map (in progress).
