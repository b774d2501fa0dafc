//! winperf.h (in progress).
