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
    /// The default block folder (`/dev/shm/prfdata-<uid>`, see [`shm_dir`](crate::shm_dir))
    /// belongs to another user, who made it first: this user cannot use it, nor remove it.
    #[error(
        "the block folder {dir} belongs to uid {owner}, not to this user (uid {uid}), so no \
         block of this user can be made there; set PRFDATA_SHM_DIR to a folder of your own, or \
         run with XDG_RUNTIME_DIR set to your runtime folder (as a login session has it), or ask \
         uid {owner} or root to remove {dir}"
    )]
    ShmDirTaken {
        /// The folder.
        dir: PathBuf,
        /// Its owner.
        owner: u32,
        /// This process's effective uid.
        uid: u32,
    },
    /// The block file could not be created, sized, mapped or published.
    #[error(
        "cannot create the block {path}: {source}; check that its folder exists and is writable \
         by this user, or set PRFDATA_SHM_DIR to one that is"
    )]
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
    /// A file that is not ours sits where the block belongs: another owner, or access for
    /// others.
    #[error("{path} is not a file owned by uid {uid} with mode 0600: remove it")]
    NotABlock {
        /// The block's path.
        path: PathBuf,
        /// Our uid.
        uid: u32,
    },
    /// Something other than a regular file (a FIFO, socket, device or directory) sits where the
    /// block belongs. It is refused without waiting: a FIFO is opened non-blocking and never
    /// read.
    #[error(
        "{path} is a {kind}, not a block file; prfdata only uses regular files there: remove it"
    )]
    NotRegular {
        /// The block's path.
        path: PathBuf,
        /// What is there.
        kind: &'static str,
    },
    /// The run-time statistics (`crate::dynamic`, feature `install`) cannot be laid out in one
    /// block: too many counters, or a block too large. Nothing was changed.
    #[error(
        "app {app}: the run-time statistics cannot be laid out: {reason}; nothing was changed \
         (remove some run-time counters first)"
    )]
    RuntimeLayout {
        /// The app.
        app: String,
        /// What the map check found.
        reason: String,
    },
    /// The file at the block's path is larger than any block
    /// ([`MAX_BLOCK_SIZE`](crate::reader::BlockReader::MAX_BLOCK_SIZE)).
    #[error(
        "{path} is {size} bytes long, more than the {max} bytes a block may have: it is not a \
         block, remove it"
    )]
    TooLarge {
        /// The block's path.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The cap.
        max: u64,
    },
    /// The block's pages could not be reserved when it was created: its folder (a tmpfs such
    /// as `/dev/shm`) is full or over quota (`ENOSPC`, `EDQUOT`), or the file is over the
    /// process's file size limit (`EFBIG`, `RLIMIT_FSIZE`). Reserving them at activation is
    /// what keeps a full folder from killing the app with `SIGBUS` later.
    #[error(
        "cannot reserve the {size} bytes of the block {path}: {errno} ({source}); free space in \
         its folder (the tmpfs size or quota), or set PRFDATA_SHM_DIR to another folder"
    )]
    NoSpace {
        /// The block's path.
        path: PathBuf,
        /// The block's size.
        size: u64,
        /// The error's name: `ENOSPC`, `EDQUOT` or `EFBIG`.
        errno: &'static str,
        /// The error.
        source: io::Error,
    },
    /// Live processes of the app use its block, laid out from another map (other counters or
    /// limits, or another layout version): it is neither joined nor replaced.
    #[error(
        "the block of app {app} ({path}) is in use by process {pid} with another map or layout \
         version; stop the app's running processes (or run this build with the same map) and \
         activate again"
    )]
    AlreadyActive {
        /// The app.
        app: String,
        /// A live process of the block (a member of its table, or for another layout version the
        /// publisher its header names).
        pid: u32,
        /// The block's path.
        path: PathBuf,
    },
    /// The block's members table is full: its 256 entries (`layout::MAX_MEMBERS`) name live
    /// processes attached to it already.
    #[error(
        "the block of app {app} ({path}) has {max} live processes attached, its most; \
         let some exit (or drop their handles) before starting more"
    )]
    TooManyProcesses {
        /// The app.
        app: String,
        /// The block's path.
        path: PathBuf,
        /// The members table's length.
        max: u32,
    },
    /// A live process holds the block's lock and did not let go within one second (the bound
    /// of `activate` and `attach`: twenty times [`CHECK_INTERVAL`](crate::Optex::CHECK_INTERVAL),
    /// in which a holder that died is always recovered), while this process activated or
    /// attached: the holder is alive but stopped (`SIGSTOP`, a debugger) or stuck inside
    /// `lock_ctrs`.
    #[error(
        "process {pid} holds the lock of the block {path} and did not release it in {waited:?}: \
         it is alive but not progressing (stopped with SIGSTOP or by a debugger, or stuck inside \
         lock_ctrs); resume it (kill -CONT {pid}) or end it, then activate or attach again"
    )]
    LockStalled {
        /// The block's path.
        path: PathBuf,
        /// The holder's pid, as its own pid namespace numbers it (a process in another
        /// namespace, such as another container, has another pid here).
        pid: u32,
        /// How long this process waited.
        waited: std::time::Duration,
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
    /// The app is installed with the names of another map: its map needs names past the
    /// installed range (objects or counters added), or install recorded another map's
    /// fingerprint (offsets or names changed). Checked by `activate` with the feature `install`;
    /// the message names the range, the map's need and the fix (reinstall).
    #[error("{reason}")]
    InstalledNames {
        /// The app.
        app: String,
        /// Its installed `First Counter`.
        first_counter: u32,
        /// Its installed `Last Counter`.
        last_counter: u32,
        /// The last name index the map needs: First Counter + its highest symbolic offset.
        needed_last_counter: u32,
        /// The whole explanation, with both fingerprints and the fix.
        reason: String,
    },
    /// No run-time object or counter has this symbolic offset (it was removed, or never
    /// added): `prfdata::dynamic`.
    #[error("app {app} has no run-time object or counter at offset {offset} (removed?)")]
    NoSuchStatistic {
        /// The app.
        app: String,
        /// The symbolic offset.
        offset: u32,
    },
    /// Only the process that activated the block defines run-time objects and counters; an
    /// attached process reaches them with `Dynamic::dyn_counter`.
    #[error(
        "this process attached to app {app}: only the process that activated it adds and removes \
         run-time objects and counters"
    )]
    NotOwner {
        /// The app.
        app: String,
    },
    /// The names of run-time objects and counters could not be registered.
    #[error(
        "cannot register the run-time names of app {app}: {reason}; nothing was changed \
         (check that the registry in PRFDATA_REGISTRY is writable)"
    )]
    RuntimeNames {
        /// The app.
        app: String,
        /// Why.
        reason: String,
    },
    /// I/O on an existing block failed.
    #[error(
        "I/O error on the block {path}: {source}; if the file was removed or replaced, activate \
         the app again"
    )]
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
    #[error(
        "instance name \"{name}\" is {len} UTF-16 units long; object {object} allows {max}: \
         shorten the name, or raise the object's name_len in the map"
    )]
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
    #[error(
        "instance name {name:?} of object {object} contains a NUL character, which ends a name \
         in perflib: remove it"
    )]
    NameHasNul {
        /// The object's symbol.
        object: &'static str,
        /// The name.
        name: String,
    },
    /// A unique id below 0 ([`InstanceSpec::unique_id`](crate::InstanceSpec::unique_id)):
    /// perflib reserves -1 (`PERF_NO_UNIQUE_ID`) for "no id" and monitors show no negative id.
    #[error(
        "unique id {id} of a new instance of object {object} is negative: use 0 or more, or no \
         unique id (InstanceSpec::named alone)"
    )]
    BadUniqueId {
        /// The object's symbol.
        object: &'static str,
        /// The id given.
        id: i32,
    },
    /// The parent instance given is not live.
    #[error(
        "the parent instance given for a new instance of object {object} is not live (removed \
         already?): add the parent again and pass its new id"
    )]
    UnknownParent {
        /// The child's object symbol.
        object: &'static str,
    },
    /// The instance to remove is still the parent of live instances.
    #[error(
        "instance {instance:?} of object {object} still has {children} live child instance(s), \
         among them {child:?} of object {child_object}: remove the children first, or remove \
         the whole tree with instances().remove_tree"
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
    #[error(
        "the instance of object {object} is not live: it was removed already (by \
         remove_instance, or with its parent by instances().remove_tree); its id is stale, drop it"
    )]
    UnknownInstance {
        /// The object's symbol.
        object: &'static str,
    },
    /// An index in the block's instance tables (a count, a free-list link, a live position, a
    /// parent link) contradicts the object's limits or the other indexes: some process wrote
    /// the block outside prfdata's protocol. Nothing was changed by the call that found it.
    #[error(
        "the block {path} is corrupt: object {object}'s {field} is {value} ({reason}); a process \
         wrote it outside prfdata. Stop the app's processes and activate it again to get a new \
         block"
    )]
    Corrupt {
        /// The block's path.
        path: PathBuf,
        /// The object's symbol.
        object: &'static str,
        /// The field, as the block layout names it (`live_count`, `free_head`, `next_free`,
        /// `high_water`, `live list entry`, `live_pos`, `parent_object`, `parent_slot`,
        /// `children`).
        field: &'static str,
        /// The value found there.
        value: u32,
        /// Why it cannot be right.
        reason: &'static str,
    },
    /// A timed lock of the block did not succeed in time.
    #[error(
        "the block's lock is held by another thread or process and was not released within \
         {0:?}: retry later, or wait longer"
    )]
    LockTimeout(std::time::Duration),
    /// The map is invalid (maps built at run time only; `prfdata_map!` checks at compile time).
    #[error(
        "invalid map: {0}; declare the map with prfdata_map!, which checks it at compile time"
    )]
    Map(#[from] MapError),
    /// [`OnDemand::serve`](crate::OnDemand::serve) for a counter the map does not declare
    /// `on_demand: true`.
    #[error(
        "counter {counter} is not an on-demand counter: declare it with `on_demand: true` in the \
         map to compute it on request"
    )]
    NotOnDemand {
        /// The counter's symbol.
        counter: &'static str,
    },
    /// The on-demand servicing thread could not be started.
    #[error("cannot start the on-demand servicing thread: {0}")]
    OnDemandThread(#[source] std::io::Error),
    /// An app name that cannot name a block file (it came from the registry's
    /// `Linkage\Export`, or a map built by hand): see [`prfdata_untrusted::check_name`].
    #[error("{0}")]
    BadName(#[from] prfdata_untrusted::BadName),
}
