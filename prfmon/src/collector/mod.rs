//! The collector: what advapi32's perflib does for `RegQueryValueEx(HKEY_PERFORMANCE_DATA,
//! "Global" | "Costly" | "i1 i2 ...")`.
//!
//! [`Collector::open`] walks `Services\*\Performance`, skips services with `Disable
//! Performance Counters` = 1, gives each service its own copy of its `Library` (see
//! [Isolation](#isolation)), resolves the exports the `Open`, `Collect` and `Close` values name,
//! and calls Open once per service with its `Linkage\Export` strings; each collection follows
//! the registry after that (services installed, removed or changed: [`service`]).
//! [`Collector::collect`] calls every opened service's Collect, growing its buffer on
//! ERROR_MORE_DATA (doubling up to [`CollectorOptions::max_buffer`], [`MAX_BUFFER`] by default),
//! validates the output where Collect wrote it (a buffer kept per service; [`validate`], with
//! every check of the decoder's pass) and copies it once into the PERF_DATA_BLOCK
//! ([`crate::datablock`]); [`Collector::collect_checked`] returns that block with what the checks
//! found, so that its view needs no second pass.
//! [`Collector::close`] (or dropping it) calls Close, as `RegCloseKey(HKEY_PERFORMANCE_DATA)`
//! does.
//!
//! # Isolation
//!
//! perflib's V1 interface gives Collect no service handle: a provider keeps what Open was told
//! in its globals, so two services calling one loaded copy of a library each get the objects
//! of both (with `libprfdata_provider.so` installed for every app, the usual deployment, every
//! object came out once per service). So **every service gets its own copy of its library's
//! state**, whatever the mapping of services to files (one path shared, a symlink, a copy):
//!
//! - [`Isolation::HostProcess`] (the default): one provider host process **per service**.
//! - [`Isolation::InProcess`]: the first service of a library file (device and inode,
//!   symlinks resolved) gets the plain `dlopen` copy, every further service of the same file a
//!   private copy in a new link-map namespace (`dlmopen(LM_ID_NEWLM)`; [`copies`]). Copies
//!   stay loaded and are reused by later collectors of the process. glibc has room for about
//!   ten namespaces per process: a service beyond that is skipped (not disabled) with an error
//!   naming the library and the service and saying to use host isolation.
//!
//! Why hosts by default: a provider that hangs or crashes costs only its own service, and
//! there is no limit on the number of services. What a further service costs (the
//! `isolation` group of BENCHMARKS.md, 2 shared vCPUs, release build, each service serving an
//! app of 16 instances × 4 counters: `cargo build --release -p prfmon && cargo bench -p
//! prfdata-benches --bench isolation`):
//!
//! | per further service | host process | private namespace (in process) |
//! |---|---:|---:|
//! | memory, PSS | ≈ 0.95 MiB | ≈ 0.5 MiB |
//! | memory, RSS (mostly shared: `prfmon` and libc) | ≈ 4.4 MiB | ≈ 2.2 MiB |
//! | Collect time | ≈ 40 – 60 µs (a pipe round trip) | ≈ 4.3 µs (the provider's own work) |
//! | Open (start, load, first collection) | ≈ 4 – 5 ms | ≈ 1.5 – 2 ms |
//!
//! At one collection a second that is well under 0.1% of a core for 8 services either way.
//!
//! # Provider hosts
//!
//! By default ([`Isolation::HostProcess`]) providers run in provider host processes, one per
//! service, as Windows runs them in perfhost.exe: `prfmon __provider-host LIBRARY`
//! ([`perfhost`]), driven over a pipe ([`protocol`], [`host`]). A provider that hangs past its
//! `Open Timeout` / `Collect Timeout` (default 10 s), panics, aborts or crashes costs only its
//! host; one that lies about its output is caught by [`validate`]. Either way the provider is
//! disabled — `Disable Performance Counters` = 1 written to its Performance key through the
//! registry's atomic update, the reason logged (a warning, through the [`log`] facade) and kept in
//! [`Collector::disabled`] — and the collection goes on without it.
//!
//! A provider is disabled for misbehaviour only: never for a large valid answer (the buffer
//! grows up to [`MAX_BUFFER`], prfdata's largest answer) or for waiting within its documented
//! bounds (prfdata's provider waits for on-demand values at most half its `Collect Timeout`).
//!
//! Not the provider's fault, so logged and skipped but not disabled: a library that cannot
//! be loaded (or, in process, a private copy that cannot be made), a missing export, Open
//! returning an error ("How a performance DLL interfaces with a monitor": then Collect is not
//! called), a host executable that is not a prfmon host. A Collect that returns an error other than
//! ERROR_MORE_DATA has its output ignored for that collection. A host that dies costs only its own
//! service, which is disabled; except a host found dead, at the final Close, of the SIGINT,
//! SIGTERM or SIGHUP that stops this process too ([`host::note_stop_signal`]). Hosts run in a
//! process group of their own, so a terminal's Ctrl-C reaches only the collector.
//!
//! [`Isolation::InProcess`] calls providers directly (for benchmarks and trusted providers):
//! the output is still validated, but there are no timeouts and a crash is the collector's.
//!
//! # Trust
//!
//! Before a service's library is loaded, in a host or in process, the collector checks it as
//! OpenSSH's StrictModes checks `authorized_keys` ([`crate::trust`]): the file and every folder
//! above it, symbolic links resolved one by one, must be owned by root or the collector's user
//! and writable by no one else (sticky folders such as `/tmp` excepted). The file is then
//! opened, `fstat`ed (same inode, same rule) and loaded through its descriptor
//! (`/proc/self/fd/N`; a host inherits the descriptor), so the file checked is the file
//! loaded. A library that fails is **skipped, not disabled** (the registry's or the
//! installation's fault, not the provider's), logged once with the file, the component, its
//! owner and mode, and the rule. [`CollectorOptions::trusted_paths`] (`--trust-path`) admits
//! files at or under the paths the operator names. The registry itself is checked by the
//! caller before it is opened ([`TrustPolicy::check_registry`]; the `prfmon` subcommands do).
//!
//! With [`CollectorOptions::host_user`] (`--host-user`, root only), every provider host gives
//! itself that user's groups and uid before it loads anything ([`host_user`]).
//!
//! An object index returned by two services (two providers claiming one index, or one app
//! exported by two services) is kept twice, each attributed to its service
//! ([`Collection::services`]), and logged once: consumers that name objects by name (PDH
//! paths) see the first.
//!
//! # Examples
//!
//! ```
//! use prfmon::collector::{Collector, CollectorOptions};
//! use prfdata_registry::FileRegistry;
//!
//! let dir = tempfile::tempdir()?;
//! let registry = FileRegistry::open(dir.path())?;
//! let mut collector = Collector::open(registry, CollectorOptions::default())?;
//! let bytes = collector.collect("Global");
//! let snapshot = prfdata_wire::snapshot::decode(&bytes)?;
//! assert!(snapshot.objects.is_empty()); // no providers registered
//! collector.close();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod copies;
pub mod host;
pub mod host_user;
pub mod library;
pub mod perfhost;
pub mod protocol;
pub mod realign;
pub mod service;
pub mod validate;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use prfdata_registry::service::{DEFAULT_COLLECT_TIMEOUT_MS, DEFAULT_OPEN_TIMEOUT_MS, DISABLE};
use prfdata_registry::{paths, update, Hive, Registry, RegistryError, StoreStamp, Value};
use prfdata_wire::winperf::ERROR_SUCCESS;

use crate::datablock::{host_name, CollectionTimes};
use crate::trust::TrustPolicy;
use host::{HostError, HostProcess};
use host_user::HostUser;
use prfdata_wire::view::{DataView, ObjectRun};
use protocol::{Request, Response};
use service::{services_from, Backend, RegistryWatch, Service, State};
use validate::{append_checked, Appended, Call, ProviderFault};

/// The first Collect buffer a service gets (after that, see [`buffer_after`]). 64 KiB holds a
/// typical application object (a few dozen instances of a few dozen counters) in one call, and
/// costs nothing worth saving when it is too big.
pub const INITIAL_BUFFER: u32 = 64 * 1024;
/// The largest Collect buffer: a provider that still answers ERROR_MORE_DATA is disabled.
///
/// It is prfdata's one rule for the size of a Collect answer
/// ([`BlockReader::MAX_COLLECT_ANSWER`](prfdata::reader::BlockReader::MAX_COLLECT_ANSWER),
/// 2 GiB: the objects of a block never take more than the block, at most 1 GiB, and an app
/// has two blocks), so that whatever `activate` accepts, Collect can return, and only a provider
/// that answers ERROR_MORE_DATA whatever the size reaches it. The host protocol's data frame
/// ([`protocol::MAX_DATA`]) is the same number.
///
/// Memory: the buffer is grown by doubling only when a provider asks for more, as zeroed
/// memory the kernel supplies page by page as the provider writes (a provider that asks for
/// more without writing costs address space, not memory), and given back when answers shrink
/// ([`buffer_after`]).
pub const MAX_BUFFER: u32 = prfdata::reader::BlockReader::MAX_COLLECT_ANSWER;

/// The Collect buffer to ask for after an answer of `answer` bytes: twice the answer, at least
/// `initial` and at most `max` (a multiple of 8). An answer that grows less than twofold
/// between two collections fits at once; one that shrinks has its buffer shrink with it, so a
/// service that answered 1 GiB once does not keep 2 GiB for good (the memory behind the buffer
/// is given back when it is more than twice the size asked: `library::EntryPoints::collect_in`).
///
/// # Examples
///
/// ```
/// use prfmon::collector::{buffer_after, INITIAL_BUFFER, MAX_BUFFER};
/// assert_eq!(buffer_after(0, INITIAL_BUFFER, MAX_BUFFER), INITIAL_BUFFER);
/// assert_eq!(buffer_after(1 << 20, INITIAL_BUFFER, MAX_BUFFER), 2 << 20);
/// assert_eq!(buffer_after(1500 << 20, INITIAL_BUFFER, MAX_BUFFER), MAX_BUFFER);
/// ```
pub fn buffer_after(answer: usize, initial: u32, max: u32) -> u32 {
    let twice = u32::try_from(answer.saturating_mul(2)).unwrap_or(u32::MAX);
    twice
        .max(initial)
        .min(max)
        .next_multiple_of(8)
        .min(max & !7)
}

/// Where providers run.
///
/// # Examples
///
/// ```
/// assert_eq!(prfmon::collector::Isolation::default(), prfmon::collector::Isolation::HostProcess);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Isolation {
    /// One provider host process per service (perfhost.exe's role); timeouts enforced.
    #[default]
    HostProcess,
    /// Providers loaded into this process, one copy of the library per service (`dlopen` for
    /// the first service of a file, `dlmopen` namespaces for the others: see [`copies`]);
    /// output validated, no timeouts, no crash safety. Two in-process collectors in one
    /// process share each service's copy, so they call its Open twice (and Close twice): a
    /// provider must allow that, as perflib's DLL interface says it must allow several monitoring
    /// processes.
    InProcess,
}

/// How a [`Collector`] runs.
///
/// # Examples
///
/// ```
/// use prfmon::collector::{CollectorOptions, Isolation};
/// let options = CollectorOptions { isolation: Isolation::InProcess, ..Default::default() };
/// assert_eq!(options.max_buffer, 2 << 30);
/// ```
#[derive(Debug, Clone)]
pub struct CollectorOptions {
    /// Where providers run.
    pub isolation: Isolation,
    /// The `prfmon` executable that runs provider hosts; `None` for [`default_host_exe`].
    pub host_exe: Option<PathBuf>,
    /// The first Collect buffer size.
    pub initial_buffer: u32,
    /// The largest Collect buffer size.
    pub max_buffer: u32,
    /// `SystemName` in the PERF_DATA_BLOCK; `None` for [`host_name`].
    pub system_name: Option<String>,
    /// Files and folders trusted whoever owns them (`--trust-path`): a provider library whose
    /// resolved path is at or under one is loaded even if a user other than root or the
    /// collector's could change it. Empty by default: see [Trust](self#trust).
    pub trusted_paths: Vec<PathBuf>,
    /// The user provider hosts run as (`--host-user`); `None` runs them as the collector's
    /// user. Only for [`Isolation::HostProcess`]; [`HostUser::lookup`] refuses unless root.
    pub host_user: Option<HostUser>,
}

impl Default for CollectorOptions {
    fn default() -> Self {
        Self {
            isolation: Isolation::HostProcess,
            host_exe: None,
            initial_buffer: INITIAL_BUFFER,
            max_buffer: MAX_BUFFER,
            system_name: None,
            trusted_paths: Vec::new(),
            host_user: None,
        }
    }
}

/// The `prfmon` executable used to run provider hosts when
/// [`CollectorOptions::host_exe`] is `None`: the current executable if it is `prfmon`; else
/// `prfmon` beside it, or one folder up (a test binary in `target/<profile>/deps` finds
/// `target/<profile>/prfmon`); else plain `prfmon`, looked up in `PATH`.
///
/// # Examples
///
/// ```
/// let exe = prfmon::collector::default_host_exe();
/// assert!(exe.ends_with("prfmon"));
/// ```
pub fn default_host_exe() -> PathBuf {
    const NAME: &str = "prfmon";
    if let Ok(exe) = std::env::current_exe() {
        if exe.file_stem().is_some_and(|s| s == NAME) {
            return exe;
        }
        let mut dir = exe.parent();
        for _ in 0..2 {
            let Some(d) = dir else { break };
            let candidate = d.join(NAME);
            if candidate.is_file() {
                return candidate;
            }
            dir = d.parent();
        }
    }
    PathBuf::from(NAME)
}

/// Expands `%NAME%` references to environment variables, as Windows'
/// `ExpandEnvironmentStrings` does for a REG_EXPAND_SZ: unset names, and a `%` without a
/// partner, are left as they are.
///
/// # Examples
///
/// ```
/// std::env::set_var("PRFMON_DOC_DIR", "/opt/app");
/// let path = prfmon::collector::expand_environment("%PRFMON_DOC_DIR%/libperf.so");
/// assert_eq!(path, "/opt/app/libperf.so");
/// assert_eq!(prfmon::collector::expand_environment("%NO_SUCH_VAR_X%/a%"), "%NO_SUCH_VAR_X%/a%");
/// ```
pub fn expand_environment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('%') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        match after.find('%') {
            Some(end) => {
                let name = &after[..end];
                match std::env::var(name) {
                    Ok(value) if !name.is_empty() => {
                        out.push_str(&value);
                        rest = &after[end + 1..];
                    }
                    _ => {
                        // Keep the first `%` and look again from the second one.
                        out.push('%');
                        out.push_str(name);
                        rest = &after[end..];
                    }
                }
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The command that re-enables a disabled service's provider (lodctr `/E:`), quoted for a
/// POSIX shell when the name needs it.
///
/// # Examples
///
/// ```
/// use prfmon::collector::reenable_command;
/// assert_eq!(reenable_command("App"), "prfmon lodctr /E:App");
/// assert_eq!(reenable_command("My App"), "prfmon lodctr '/E:My App'");
/// assert_eq!(reenable_command("It's"), r"prfmon lodctr '/E:It'\''s'");
/// ```
pub fn reenable_command(service: &str) -> String {
    format!("prfmon lodctr {}", shell_word(&format!("/E:{service}")))
}

/// `word` as one word for a POSIX shell: as it is when every character is plain, else in
/// single quotes (a `'` in it as `'\''`), for commands quoted in messages.
///
/// # Examples
///
/// ```
/// use prfmon::collector::shell_word;
/// assert_eq!(shell_word("/E:App"), "/E:App");
/// assert_eq!(shell_word(r"\A B\C"), r"'\A B\C'");
/// assert_eq!(shell_word("It's"), r"'It'\''s'");
/// ```
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/:._-+,@%=".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// A provider the collector disabled, and why.
///
/// # Examples
///
/// ```
/// use prfmon::collector::validate::ProviderFault;
/// let d = prfmon::collector::Disabled { service: "App".into(), fault: ProviderFault::Misaligned { bytes: 4 } };
/// assert!(d.to_string().starts_with("App: "));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disabled {
    /// The service name.
    pub service: String,
    /// Why.
    pub fault: ProviderFault,
}

impl std::fmt::Display for Disabled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.service, self.fault)
    }
}

/// One collection with the name of the service that produced each of its objects.
///
/// # Examples
///
/// ```
/// let c = prfmon::collector::Collection { bytes: Vec::new(), services: vec!["App".into()] };
/// assert_eq!(c.services[0], "App");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Collection {
    /// The PERF_DATA_BLOCK bytes, as [`Collector::collect`] returns them.
    pub bytes: Vec<u8>,
    /// The service (the `Services\<name>` key) that produced each object, in the order the
    /// objects appear in `bytes`: `services[i]` goes with the decoded `objects[i]`.
    pub services: Vec<String>,
}

/// What opening a service came to.
enum OpenOutcome {
    /// Open returned this status.
    Status(u32),
    /// The library cannot be loaded or hosted, or an export is missing: skip the service.
    Skip(String),
    /// The provider misbehaved: disable it.
    Fault(ProviderFault),
}

/// An open connection to the providers: one `HKEY_PERFORMANCE_DATA` handle.
pub struct Collector<R: Registry> {
    registry: R,
    options: CollectorOptions,
    system_name: String,
    host_exe: PathBuf,
    trust: TrustPolicy,
    services: Vec<Service>,
    /// The slot the next service read from the registry gets.
    next_slot: u32,
    /// When the registry was last asked whether it changed ([`service::REGISTRY_CHECK`]).
    watch: RegistryWatch,
    disabled: Vec<Disabled>,
    /// Object indexes already logged as returned by more than one service.
    logged_duplicates: BTreeSet<u32>,
    closed: bool,
}

impl<R: Registry> std::fmt::Debug for Collector<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collector")
            .field("system_name", &self.system_name)
            .field(
                "services",
                &self
                    .services
                    .iter()
                    .map(|s| (&s.config.name, &s.state))
                    .collect::<Vec<_>>(),
            )
            .field("disabled", &self.disabled)
            .finish_non_exhaustive()
    }
}

fn ms(value: Option<u32>, default: u32) -> Duration {
    Duration::from_millis(value.unwrap_or(default).into())
}

impl<R: Registry> Collector<R> {
    /// Reads the services from `registry`, loads their libraries and calls each Open.
    ///
    /// Providers that fail are logged (and disabled if they misbehaved); only a registry that
    /// cannot be read is an error.
    pub fn open(registry: R, options: CollectorOptions) -> Result<Self, RegistryError> {
        // The stamp first: a change between it and the read is read again at the next check.
        let stamp = registry.stamp();
        let hive = registry.snapshot()?;
        Self::from_hive(registry, &hive, stamp, options)
    }

    /// [`Collector::open`] with the services of `hive`, `registry` as read at `stamp` (taken
    /// before the read): for a caller that reads the registry once for other things too
    /// ([`crate::session::Session::local`]).
    ///
    /// # Errors
    ///
    /// The services in `hive` cannot be read.
    pub fn from_hive(
        registry: R,
        hive: &Hive,
        stamp: Option<StoreStamp>,
        options: CollectorOptions,
    ) -> Result<Self, RegistryError> {
        let mut next_slot = 0;
        let services = services_from(hive, &options, &mut next_slot)?;
        let mut collector = Self {
            system_name: options.system_name.clone().unwrap_or_else(host_name),
            host_exe: options.host_exe.clone().unwrap_or_else(default_host_exe),
            trust: TrustPolicy::new(&options.trusted_paths),
            registry,
            options,
            services,
            next_slot,
            watch: RegistryWatch::new(stamp),
            disabled: Vec::new(),
            logged_duplicates: BTreeSet::new(),
            closed: false,
        };
        for i in 0..collector.services.len() {
            collector.open_service(i);
        }
        Ok(collector)
    }

    /// Follows the registry (see [`service`]'s docs): at most every
    /// [`REGISTRY_CHECK`](service::REGISTRY_CHECK), one `stat`; the services read again only
    /// when it moved. A registry that cannot be read now keeps the services as they are (the
    /// error logged once) and is read again at the next check.
    fn follow_registry(&mut self) {
        if !self.watch.due() {
            return;
        }
        let stamp = self.registry.stamp();
        if !self.watch.moved(stamp) {
            return;
        }
        let fresh = self
            .registry
            .snapshot()
            .and_then(|hive| services_from(&hive, &self.options, &mut self.next_slot));
        match fresh {
            Ok(fresh) => {
                self.watch.read_at(stamp);
                let current = std::mem::take(&mut self.services);
                self.services = service::follow(current, fresh);
            }
            Err(e) => log::warn!("cannot read the registry again to follow its changes: {e}"),
        }
    }

    /// The names of the services whose Open succeeded and that are still enabled.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let reg = prfdata_registry::FileRegistry::open(dir.path())?;
    /// let c = prfmon::collector::Collector::open(reg, Default::default())?;
    /// assert!(c.open_services().is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_services(&self) -> Vec<&str> {
        self.services
            .iter()
            .filter(|s| s.state == State::Open)
            .map(|s| s.config.name.as_str())
            .collect()
    }

    /// The providers this collector disabled, in order, with the reasons.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let reg = prfdata_registry::FileRegistry::open(dir.path())?;
    /// let c = prfmon::collector::Collector::open(reg, Default::default())?;
    /// assert!(c.disabled().is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn disabled(&self) -> &[Disabled] {
        &self.disabled
    }

    /// The registry the collector reads.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let reg = prfdata_registry::FileRegistry::open(dir.path())?;
    /// let c = prfmon::collector::Collector::open(reg, Default::default())?;
    /// assert_eq!(c.registry().root(), dir.path());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn registry(&self) -> &R {
        &self.registry
    }

    /// Makes one collection for `query` (`Global`, `Costly` or space-separated object name
    /// indexes) and returns the PERF_DATA_BLOCK bytes. The clocks are read before any
    /// provider is called.
    pub fn collect(&mut self, query: &str) -> Vec<u8> {
        self.collect_with_services(query).bytes
    }

    /// Makes one collection, as [`collect`](Self::collect) does, and also says which service
    /// produced each object: what a consumer that labels data by its source (an `app` label)
    /// needs and a PERF_DATA_BLOCK does not carry.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let reg = prfdata_registry::FileRegistry::open(dir.path())?;
    /// let mut c = prfmon::collector::Collector::open(reg, Default::default())?;
    /// let collection = c.collect_with_services("Global");
    /// let snapshot = prfdata_wire::snapshot::decode(&collection.bytes)?;
    /// assert_eq!(collection.services.len(), snapshot.objects.len());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn collect_with_services(&mut self, query: &str) -> Collection {
        let (block, services) = self.collect_block(query);
        Collection {
            bytes: block.into_bytes(),
            services,
        }
    }

    /// Makes one collection, as [`collect`](Self::collect) does, and returns it checked: each
    /// provider's output was checked once, as it came out of Collect, with every check of
    /// [`DataView::parse`], so reading it needs no second pass.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let reg = prfdata_registry::FileRegistry::open(dir.path())?;
    /// let mut c = prfmon::collector::Collector::open(reg, Default::default())?;
    /// let block = c.collect_checked("Global");
    /// assert_eq!(block.object_count(), 0); // no providers registered
    /// assert!(prfdata_wire::view::DataView::parse(block.bytes()).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn collect_checked(&mut self, query: &str) -> DataView<'static> {
        self.collect_block(query).0
    }

    /// One collection: the checked PERF_DATA_BLOCK and the service of each object. Each
    /// output is checked in Collect's buffer and copied once, into the block.
    fn collect_block(&mut self, query: &str) -> (DataView<'static>, Vec<String>) {
        self.follow_registry();
        let times = CollectionTimes::now();
        let room = self.services.iter().map(|s| s.last_len).sum();
        let mut block = times.writer(&self.system_name, room);
        let out = block.buffer();
        let mut run = ObjectRun::default();
        let mut services: Vec<String> = Vec::new();
        for i in 0..self.services.len() {
            if self.services[i].state == State::Pending {
                self.open_service(i);
            }
            if self.services[i].state != State::Open {
                continue;
            }
            let at = out.len();
            match self.collect_service(i, query, out, &mut run) {
                Ok(n) => {
                    // `append_checked` made sure the output holds exactly `n` objects.
                    let name = &self.services[i].config.name;
                    services.extend((0..n).map(|_| name.clone()));
                    self.services[i].last_len = out.len() - at;
                }
                Err(fault) => self.disable(i, fault),
            }
        }
        let indexes: Vec<u32> = run
            .objects(out)
            .map(|o| o.header().object_name_title_index.get())
            .collect();
        self.log_duplicates(&indexes, &services);
        let default_object = indexes.first().map_or(-1, |&i| i as i32);
        let num_objects = u32::try_from(run.count()).unwrap_or(u32::MAX);
        let name = block.system_name();
        let out = block.counts(num_objects, default_object).finish();
        let block = DataView::from_checked(out, name, run);
        (block, services)
    }

    /// Logs, once per index, an object index that more than one object of a collection has
    /// (`indexes[i]` came from `services[i]`).
    fn log_duplicates(&mut self, indexes: &[u32], services: &[String]) {
        let mut by_index: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
        for (index, service) in indexes.iter().zip(services) {
            by_index.entry(*index).or_default().push(service);
        }
        for (index, from) in by_index {
            if from.len() > 1 && self.logged_duplicates.insert(index) {
                log::warn!(
                    "object {index} was returned {} times, by services {}: each is kept and \
                     attributed to its service; a counter path names the first",
                    from.len(),
                    from.join(", ")
                );
            }
        }
    }

    /// Calls every opened service's Close and stops the provider hosts, as
    /// `RegCloseKey(HKEY_PERFORMANCE_DATA)` does. Dropping the collector does the same.
    pub fn close(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if std::mem::replace(&mut self.closed, true) {
            return;
        }
        for i in 0..self.services.len() {
            match self.services[i].close() {
                Ok(ERROR_SUCCESS) => {}
                Ok(code) => log::warn!(
                    "service {}: Close returned {code}",
                    self.services[i].config.name
                ),
                // The signal that stops this process reached the host too (a service manager
                // signals every process of a service): not the provider's fault.
                Err(fault) if stopped_with_collector(&self.services[i]) => log::info!(
                    "service {}: {fault}, as this process was stopping for a signal",
                    self.services[i].config.name
                ),
                Err(fault) => self.disable(i, fault),
            }
        }
        for service in &mut self.services {
            service.release();
        }
    }

    /// Disables service `i`: `Disable Performance Counters` = 1, logged and recorded; its host
    /// is stopped (or its copy of the library released).
    fn disable(&mut self, i: usize, fault: ProviderFault) {
        let name = self.services[i].config.name.clone();
        self.services[i].state = State::Disabled;
        self.services[i].release();
        log::warn!(
            "disabled the performance counters of service {name}: {fault}; re-enable them with: \
             {}",
            reenable_command(&name)
        );
        let written = update(&self.registry, |hive| {
            hive.set_value(&paths::performance(&name), DISABLE, Value::Dword(1))
        });
        if let Err(e) = written {
            log::warn!("cannot write {DISABLE} for service {name}: {e}");
        }
        self.disabled.push(Disabled {
            service: name,
            fault,
        });
    }

    /// Opens service `i`: starts its host or loads its copy of the library, then calls Open.
    /// Afterwards the service is Open, Failed (skipped) or Disabled.
    fn open_service(&mut self, i: usize) {
        let outcome = match self.services[i].backend {
            Backend::Host(_) => self.open_in_host(i),
            Backend::InProcess(_) => self.open_in_process(i),
        };
        let name = self.services[i].config.name.clone();
        match outcome {
            OpenOutcome::Status(ERROR_SUCCESS) => self.services[i].state = State::Open,
            OpenOutcome::Status(status) => {
                log::warn!("service {name}: Open returned {status}; skipped");
                self.services[i].state = State::Failed;
                self.services[i].release();
            }
            OpenOutcome::Skip(message) => {
                log::warn!("service {name}: {message}; skipped");
                self.services[i].state = State::Failed;
                self.services[i].release();
            }
            OpenOutcome::Fault(fault) => self.disable(i, fault),
        }
    }

    fn open_in_host(&mut self, i: usize) -> OpenOutcome {
        let service = &self.services[i];
        let timeout = ms(service.config.open_timeout_ms, DEFAULT_OPEN_TIMEOUT_MS);
        let request = Request::Open {
            slot: service.slot,
            names: service.names.clone(),
            export: service.config.export.clone(),
        };
        let service = &mut self.services[i];
        let Backend::Host(host) = &mut service.backend else {
            return OpenOutcome::Skip("not a host-process service".into());
        };
        if host.is_none() {
            // Checked and opened here; the host loads this very file (its descriptor).
            // An untrusted library is the installation's fault: skipped, not disabled.
            let library = match self.trust.open_library(&service.library) {
                Ok(library) => library,
                Err(e) => return OpenOutcome::Skip(e.to_string()),
            };
            let user = self.options.host_user.as_ref();
            match HostProcess::spawn(&self.host_exe, &library, user, timeout) {
                Ok(h) => *host = Some(h),
                // The installation's fault, not the provider's: skip, do not disable.
                Err(HostError::LoadFailed { message }) => return OpenOutcome::Skip(message),
                Err(e @ (HostError::Spawn { .. } | HostError::NotAHost { .. })) => {
                    return OpenOutcome::Skip(e.to_string())
                }
                // The library's initialisers hung or crashed the host.
                Err(e) => return OpenOutcome::Fault(host_fault(Call::Open, timeout, e)),
            }
        }
        let Some(h) = host.as_mut() else {
            return OpenOutcome::Skip("no provider host".into());
        };
        match h.call(&request, timeout) {
            Ok(Response::Opened { status, .. }) => OpenOutcome::Status(status),
            Ok(Response::Failed { message }) => OpenOutcome::Skip(message),
            Ok(other) => OpenOutcome::Fault(protocol_fault(Call::Open, &other)),
            Err(e) => OpenOutcome::Fault(host_fault(Call::Open, timeout, e)),
        }
    }

    fn open_in_process(&mut self, i: usize) -> OpenOutcome {
        let service = &mut self.services[i];
        // An untrusted library is the installation's fault: skipped, not disabled.
        let library = match self.trust.open_library(&service.library) {
            Ok(library) => library,
            Err(e) => return OpenOutcome::Skip(e.to_string()),
        };
        // SAFETY: the registry names this library as a service's perflib provider, and the
        // file passed the trust checks (or is under a path the operator trusts); choosing
        // in-process isolation is choosing to trust it in this process (see
        // `Isolation::InProcess`), in as many copies as services use it.
        let lease = match unsafe { copies::load_for_service(&library, &service.config.name) } {
            Ok(lease) => lease,
            Err(e) => return OpenOutcome::Skip(e.to_string()),
        };
        // SAFETY: as above, the service's Open / Collect / Close values name its perflib
        // entry points.
        match unsafe { lease.library().entry_points(&service.names) } {
            Ok(entry) => {
                let status = entry.open(&service.config.export);
                service.backend = Backend::InProcess(Some((entry, lease)));
                OpenOutcome::Status(status)
            }
            Err(e) => OpenOutcome::Skip(e.to_string()),
        }
    }

    /// One service's Collect, with the buffer grown on ERROR_MORE_DATA; its checked output is
    /// appended to `out` ([`append_checked`]). Returns the number of objects appended.
    fn collect_service(
        &mut self,
        i: usize,
        query: &str,
        out: &mut Vec<u8>,
        run: &mut ObjectRun,
    ) -> Result<u32, ProviderFault> {
        let max = self.options.max_buffer.max(8);
        let mut size = self.services[i].buffer.min(max);
        let at = out.len();
        loop {
            let appended = self.call_collect(i, query, size, out, run)?;
            match appended {
                Appended::MoreData if size >= max => {
                    return Err(ProviderFault::BufferCap { cap: max })
                }
                Appended::MoreData => size = size.saturating_mul(2).min(max),
                Appended::Objects(n) => {
                    let initial = self.options.initial_buffer.max(8);
                    self.services[i].buffer = buffer_after(out.len() - at, initial, max);
                    return Ok(n);
                }
                Appended::Failed(status) => {
                    log::warn!(
                        "service {}: Collect returned {status}; its data is ignored",
                        self.services[i].config.name
                    );
                    return Ok(0);
                }
                Appended::NoRoom(bytes) => {
                    log::warn!(
                        "service {}: its {bytes} bytes would take the collection past {} bytes, \
                         the largest PERF_DATA_BLOCK; left out of the collection",
                        self.services[i].config.name,
                        crate::datablock::MAX_PERF_DATA_BLOCK
                    );
                    return Ok(0);
                }
            }
        }
    }

    /// One Collect call with a `size`-byte buffer, judged, its output appended if valid.
    fn call_collect(
        &mut self,
        i: usize,
        query: &str,
        size: u32,
        out: &mut Vec<u8>,
        run: &mut ObjectRun,
    ) -> Result<Appended, ProviderFault> {
        let service = &mut self.services[i];
        let host = match &mut service.backend {
            Backend::InProcess(Some((entry, _))) => {
                let (raw, data) = entry.collect_in(query, size, &mut service.scratch);
                return append_checked(&raw, data, out, run);
            }
            Backend::Host(Some(host)) => host,
            Backend::InProcess(None) | Backend::Host(None) => {
                return Err(ProviderFault::Protocol {
                    call: Call::Collect,
                    message: "the service has no provider loaded".into(),
                })
            }
        };
        let timeout = ms(
            service.config.collect_timeout_ms,
            DEFAULT_COLLECT_TIMEOUT_MS,
        );
        let request = Request::Collect {
            slot: service.slot,
            value: query.to_owned(),
            buffer_len: size,
        };
        match host.call(&request, timeout) {
            Ok(Response::Collected { raw, .. }) => append_checked(&raw, &raw.data, out, run),
            Ok(other) => Err(protocol_fault(Call::Collect, &other)),
            Err(e) => Err(host_fault(Call::Collect, timeout, e)),
        }
    }
}

impl<R: Registry> Drop for Collector<R> {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn protocol_fault(call: Call, response: &Response) -> ProviderFault {
    let message = match response {
        Response::Failed { message } => message.clone(),
        other => format!("unexpected response {other:?}"),
    };
    ProviderFault::Protocol { call, message }
}

/// Whether `service`'s host died of the signal that stops this process (see
/// [`host::HostProcess::stopped_with_collector`]).
fn stopped_with_collector(service: &Service) -> bool {
    matches!(&service.backend, Backend::Host(Some(h)) if h.stopped_with_collector())
}

fn host_fault(call: Call, timeout: Duration, error: HostError) -> ProviderFault {
    match error {
        HostError::Timeout { .. } => ProviderFault::Timeout {
            call,
            timeout_ms: timeout.as_millis() as u64,
        },
        HostError::Died { how } => ProviderFault::Crashed { call, how },
        other => ProviderFault::Protocol {
            call,
            message: other.to_string(),
        },
    }
}
