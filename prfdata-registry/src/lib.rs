//! The counter-name registry: Perflib's names and help texts, the services' Performance keys,
//! and lodctr / unlodctr.
//!
//! Perflib finds everything through the registry (the lodctr design specification; the MSJ article, Figures 4 and 7), so it is
//! modelled faithfully: a hierarchical store of keys with typed values behind the [`Registry`]
//! trait, and a file-backed implementation, [`FileRegistry`], used on Linux.
//!
//! # Index
//!
//! **The store**
//! - [`Value`], [`ValueType`]: REG_SZ, REG_EXPAND_SZ, REG_DWORD, REG_MULTI_SZ (`value.rs`).
//! - [`Hive`]: the key tree read and edited in memory (`hive.rs`).
//! - [`Registry`], [`update`]: snapshot reads and atomic locked updates (`store.rs`);
//!   [`StoreStamp`]: whether the store changed, for one `stat` (`stamp.rs`).
//! - [`FileRegistry`]: the TOML-file backend and its on-disk layout (`file.rs`); its folder
//!   and files private to their owner (`privacy.rs`).
//! - [`paths`]: the well-known keys and the root folder.
//!
//! **Perflib and services**
//! - [`perflib`]: Base Index, Last Counter / Last Help, the `Counter` / `Help` tables.
//! - [`service`]: a service's Performance and Linkage values; [`register_service`],
//!   [`first_counter_help`], [`performance_services`], [`set_service_enabled`] (lodctr `/E:`
//!   and `/D:`). Service names are checked ([`prfdata_untrusted::check_name`]) before they
//!   become keys.
//!
//! **Install / Uninstall**
//! - [`install`]: a [`CounterSet`](install::CounterSet) (an app's objects and counters, names
//!   and help per language, symbolic offsets) written as .INI and .h, loaded, and its provider
//!   registered, in one update; prfdata's `install` feature builds one from a map.
//!
//! **lodctr / unlodctr**
//! - [`ini`]: the counter .INI file and its symbol .h file.
//! - [`lodctr()`], [`unlodctr()`], [`load_perf_counter_text_strings`],
//!   [`unload_perf_counter_text_strings`] (`lodctr.rs`).
//! - [`save_settings`], [`restore_settings`]: lodctr `/S:` and `/R:` (`settings.rs`).
//! - [`reg_cli`]: `reg query` output and `reg add` data, as Windows' reg.exe has them.
//!
//! Messages (lodctr's outcome when not quiet) go through the [`log`](https://docs.rs/log)
//! facade; the program decides where they go.
//!
//! # Cargo features
//!
//! - `fault-injection` (tests only): `FAULT_ENV` makes an update kill itself at a named point
//!   (see [`FileRegistry`]), and `store_writes` counts this process's store writes. No release
//!   build enables it.
//!
//! # Examples
//!
//! ```
//! use prfdata_registry::{paths, perflib, update, FileRegistry, Registry, Value};
//!
//! let dir = tempfile::tempdir()?;
//! let reg = FileRegistry::open(dir.path().join("registry"))?;
//! update(&reg, |hive| {
//!     hive.set_value(r"HKLM\SOFTWARE\Example", "Answer", Value::Dword(42))
//! })?;
//! let hive = reg.snapshot()?;
//! assert_eq!(hive.value(r"HKLM\SOFTWARE\Example", "Answer")?, Some(&Value::Dword(42)));
//! # let _ = (paths::PERFLIB, perflib::BASE_INDEX);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

mod change;
mod error;
mod file;
pub mod fit;
mod hive;
pub mod ini;
pub mod install;
mod lodctr;
pub mod paths;
pub mod perflib;
mod privacy;
pub mod reg_cli;
pub mod runtime;
pub mod service;
mod settings;
mod stamp;
pub mod stats;
mod store;
mod value;

pub use error::{LodctrError, RegistryError};
pub use file::{decode_hive, encode_hive, FileRegistry, LOCK_WAIT, MAX_STORE_SIZE};
#[cfg(feature = "fault-injection")]
pub use file::{log_appends, store_writes, FAULT_ENV};
pub use fit::{check_names_fit, NamesMismatch};
pub use hive::{display_key, normalize_key, Hive, MAX_KEY_NAME};
pub use lodctr::{
    apply_lodctr, apply_unlodctr, enabled_message, load_perf_counter_text_strings, lodctr,
    unload_perf_counter_text_strings, unlodctr, CounterRange, LodctrOptions,
};
pub use perflib::CounterText;
pub use runtime::{apply_runtime_names, register_runtime_names};
pub use service::{
    first_counter_help, performance_services, register_service, set_service_enabled,
    unregister_service, PerformanceService, ServiceConfig,
};
pub use settings::{restore_settings, save_settings};
pub use stamp::StoreStamp;
pub use store::{update, Commit, Registry};
pub use value::{BadRegData, UnknownValueType, Value, ValueBytesError, ValueType};
