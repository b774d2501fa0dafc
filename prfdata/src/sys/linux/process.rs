//! Linux process support (in progress).
