//! The Linux backend: futexes on shared words, `/proc` process identity, tmpfs blocks.

pub(crate) mod futex;
pub(crate) mod process;
pub(crate) mod shm;
