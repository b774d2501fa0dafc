//! Reading the registry: the store, then the journal's records after the store's sequence
//! number, applied in order (see the [module docs](super#the-journal)).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::format::{decode_store, growth_bound};
use super::journal::{self, Journal};
use super::{LOG_RULE, STORE_RULE};
use crate::error::RegistryError;
use crate::hive::Hive;
use crate::perflib;
use crate::stamp::FileStamp;

/// How many times this process read a registry's store (the number in [`load`]'s trace).
static READS: AtomicU64 = AtomicU64::new(0);

/// The registry as read from its two files.
#[derive(Debug)]
pub(super) struct Loaded {
    /// The tree: the store with the journal's later records applied.
    pub(super) hive: Hive,
    /// The last record it includes.
    pub(super) seq: u64,
    /// The last record the store file includes.
    pub(super) store_seq: u64,
    /// The store file as read (`None`: there is none, the tree is a new registry's).
    pub(super) store: Option<FileStamp>,
    /// The journal as read (`None`: there is none).
    pub(super) log: Option<FileStamp>,
    /// The journal's bytes (empty without one).
    pub(super) log_bytes: Vec<u8>,
    /// The journal as parsed.
    pub(super) journal: Journal,
    /// The most the tree can take in the store format: the store's length plus what the
    /// applied records may have added ([`growth_bound`]).
    pub(super) bound: u64,
}

/// Reads the file at `path` under `rule`, with its stamp; `None` if it does not exist.
fn read(
    rule: &prfdata_untrusted::UntrustedFile,
    path: &Path,
) -> Result<Option<(Vec<u8>, FileStamp)>, RegistryError> {
    let (file, size) = match rule.open(path) {
        Ok(opened) => opened,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let stamp = FileStamp::of_file(&file).ok_or_else(|| RegistryError::Io {
        path: path.to_path_buf(),
        action: "examine",
        source: std::io::Error::last_os_error(),
    })?;
    Ok(Some((rule.read_opened(path, &file, size)?, stamp)))
}

/// Reads the store at `store_path` and the journal at `log_path` into one tree.
///
/// # Errors
///
/// [`RegistryError::Corrupt`] naming the file and line of a store or journal that does not
/// read, of a damaged record (not the torn last one: that is left out) and of a journal that
/// follows a later store than the one read (see [`super::FileRegistry::snapshot`], which reads
/// again when a writer changed the files meanwhile).
pub(super) fn load(store_path: &Path, log_path: &Path) -> Result<Loaded, RegistryError> {
    // Numbered so that a logger that says each message once still shows every read.
    let n = READS.fetch_add(1, Ordering::Relaxed) + 1;
    log::trace!(
        "registry store read {n} in process {}: {}",
        std::process::id(),
        store_path.display()
    );
    let (mut hive, seq, store, bound) = match read(&STORE_RULE, store_path)? {
        Some((bytes, stamp)) => {
            let text = String::from_utf8(bytes).map_err(|e| RegistryError::Corrupt {
                path: store_path.to_path_buf(),
                line: None,
                message: format!("not UTF-8 (at byte {})", e.utf8_error().valid_up_to()),
            })?;
            let (hive, seq) = decode_store(&text, store_path)?;
            (hive, seq, Some(stamp), text.len() as u64)
        }
        None => (perflib::new_hive(), 0, None, 0),
    };
    let (log_bytes, log) = match read(&LOG_RULE, log_path)? {
        Some((bytes, stamp)) => (bytes, Some(stamp)),
        None => (Vec::new(), None),
    };
    let journal = journal::parse(&log_bytes, log_path)?;
    let store_seq = seq;
    let (seq, bound) = apply_journal(&mut hive, (seq, bound), &journal, log_path)?;
    Ok(Loaded {
        hive,
        seq,
        store_seq,
        store,
        log,
        log_bytes,
        journal,
        bound,
    })
}

/// Applies the journal's records after the store's sequence number `seq` to `hive`: none is
/// applied twice (a writer killed after it wrote a new store and before it started a new journal
/// leaves records the store includes already) and none is missing (a journal that starts after
/// the store's sequence number is an error). Returns the last record applied (or `seq`) and
/// `bound` grown by what they may add.
fn apply_journal(
    hive: &mut Hive,
    (mut seq, mut bound): (u64, u64),
    journal: &Journal,
    log_path: &Path,
) -> Result<(u64, u64), RegistryError> {
    let corrupt = |line: usize, message: String| RegistryError::Corrupt {
        path: PathBuf::from(log_path),
        line: Some(line),
        message,
    };
    if let Some(base) = journal.base.filter(|&b| b > seq) {
        return Err(corrupt(
            1,
            format!(
                "the journal follows record {base} but the store includes records up to {seq} \
                 only: the store was replaced by an older copy (or by another writer while it \
                 was read)"
            ),
        ));
    }
    let from = seq;
    for record in journal.records.iter().filter(|r| r.seq > from) {
        for change in &record.changes {
            hive.apply(change)
                .map_err(|e| corrupt(record.line, format!("record {}: {e}", record.seq)))?;
            bound = bound.saturating_add(growth_bound(change));
        }
        seq = record.seq;
    }
    Ok((seq, bound))
}
