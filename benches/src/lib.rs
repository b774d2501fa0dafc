//! Shared helpers for the prfdata benchmarks (the benchmarks themselves are in `benches/`).
