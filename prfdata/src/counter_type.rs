//! Counter types (in progress).
