//! Linux futex support (in progress).
