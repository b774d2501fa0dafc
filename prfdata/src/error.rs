//! The crate's error type for publishing counters.

use std::io;
use std::path::PathBuf;

use crate::map::MapError;

/// What can go wrong when activating a block, attaching to one, or changing its instances.
///
/// Each message says what was wrong, where, and what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The folder for blocks cannot be used.
    #[error("cannot use the block folder {dir}: {source} (set PRFDATA_SHM_DIR to another folder)")]
    ShmDir {
        /// The folder.
        dir: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The block file could not be created, sized, mapped or published.
    #[error("cannot create the block {path}: {source}")]
    Create {
        /// The block's path.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A symbolic link sits where the block belongs.
    #[error("{path} is a symbolic link; prfdata never follows one there: remove it")]
    Symlink {
        /// The block's path.
        path: PathBuf,
    },
    /// Something other than a block file of ours sits where the block belongs.
    #[error("{path} is not a regular file owned by uid {uid} with mode 0600: remove it")]
    NotABlock {
        /// The block's path.
        path: PathBuf,
        /// Our uid.
        uid: u32,
    },
    /// Another live process has activated this app's block.
    #[error(
        "the block of app {app} ({path}) is in use by process {pid}; stop that process or \
         attach to its block instead"
    )]
    AlreadyActive {
        /// The app.
        app: String,
        /// The owner's pid, as its block header says.
        pid: u32,
        /// The block's path.
        path: PathBuf,
    },
    /// No block to attach to.
    #[error("no block for app {app} at {path}: is the app running and activated?")]
    NotActive {
        /// The app.
        app: String,
        /// The path looked at.
        path: PathBuf,
    },
    /// The block exists but was laid out from another map.
    #[error("the block {path} was not laid out from this map ({reason}); rebuild both sides")]
    MapMismatch {
        /// The block's path.
        path: PathBuf,
        /// What differs.
        reason: String,
    },
    /// I/O on an existing block failed.
    #[error("I/O error on the block {path}: {source}")]
    Io {
        /// The block's path.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The object has no free instance slot.
    #[error("object {object} is full: all {max} instances are live; raise its limit in the map")]
    ObjectFull {
        /// The object's symbol.
        object: &'static str,
        /// Its limit.
        max: u32,
    },
    /// An instance name longer than the map allows.
    #[error("instance name \"{name}\" is {len} UTF-16 units long; object {object} allows {max}")]
    NameTooLong {
        /// The object's symbol.
        object: &'static str,
        /// The name.
        name: String,
        /// Its length.
        len: usize,
        /// The limit.
        max: u32,
    },
    /// An instance name with a NUL character (perflib names are NUL-terminated).
    #[error("instance name {name:?} of object {object} contains a NUL character")]
    NameHasNul {
        /// The object's symbol.
        object: &'static str,
        /// The name.
        name: String,
    },
    /// The parent instance given is not live.
    #[error("the parent instance given for object {object} is not live")]
    UnknownParent {
        /// The child's object symbol.
        object: &'static str,
    },
    /// The instance to remove is still the parent of live instances.
    #[error(
        "instance {instance:?} of object {object} still has {children} live child instance(s), \
         among them {child:?} of object {child_object}: remove the children first, or remove \
         the whole tree with remove_instance_tree"
    )]
    HasChildren {
        /// The parent's object symbol.
        object: &'static str,
        /// The parent instance's name.
        instance: String,
        /// How many live children it has.
        children: u32,
        /// The object symbol of one of its children.
        child_object: &'static str,
        /// That child's name.
        child: String,
    },
    /// The instance is not live (already removed, or from an earlier activation).
    #[error("the instance of object {object} is not live: removed already?")]
    UnknownInstance {
        /// The object's symbol.
        object: &'static str,
    },
    /// A timed lock of the block did not succeed in time.
    #[error("the block's lock is held by another process and was not released within {0:?}")]
    LockTimeout(std::time::Duration),
    /// The map is invalid (maps built at run time only; `prfdata_map!` checks at compile time).
    #[error("invalid map: {0}")]
    Map(#[from] MapError),
    /// An app name that cannot name a block file (it came from the registry's
    /// `Linkage\Export`, or a map built by hand): see [`crate::untrusted::check_name`].
    #[error("{0}")]
    BadName(#[from] crate::untrusted::BadName),
}
