//! Linux shm support (in progress).
