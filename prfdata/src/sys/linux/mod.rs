//! The Linux backend: futexes on shared words, `/proc` process identity, tmpfs blocks and the
//! byte-range locks their processes hold on them, the folder they go to, and the `SIGBUS`
//! handler that lets readers survive a block truncated under them.

pub(crate) mod futex;
pub(crate) mod process;
pub(crate) mod range_lock;
pub(crate) mod shm;
pub(crate) mod shm_dir;
pub(crate) mod sigbus;
