//! An update's writes (see the [module docs](super#the-journal)): one record appended to the
//! journal, or, when the journal has outgrown the store, the tree written as a new store and a
//! new journal started; and the tree a writer keeps from one update to its next.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::fault::{count_log_append, count_store_write, die, fault_point};
use super::format::{decode_store, encode_store, growth_bound};
use super::journal;
use super::replay;
use super::{FileRegistry, LOG_RULE, MAX_STORE_SIZE};
use crate::change::Change;
use crate::error::{ensure, RegistryError};
use crate::hive::Hive;
use crate::paths;
use crate::privacy::{Tightened, FILE_MODE};
use crate::stamp::FileStamp;
use prfdata_untrusted::create_new;

/// The journal is folded into the store when it would grow past the store's size, or past
/// this when the store is smaller: 128 KiB, some 180 run-time counters added one at a time
/// (a record of one is about 700 bytes), so that a small registry is not rewritten every few
/// updates, while a reader replays at most this much besides the store. Past the store's size
/// each fold is paid for by as many bytes of records as it writes: amortized, an update costs
/// its own record, whatever the size of the registry.
pub(super) const JOURNAL_FLOOR: u64 = 128 * 1024;

/// The tree as this process last committed it, and how to tell that the files still hold it.
#[derive(Debug)]
pub(super) struct Writer {
    /// The tree.
    pub(super) hive: Hive,
    /// The last record it includes.
    seq: u64,
    /// The store file as written or read (`None`: none).
    store: Option<FileStamp>,
    /// Its length.
    store_len: u64,
    /// The journal's end.
    log: LogTail,
    /// The most the tree takes in the store format (see [`growth_bound`]).
    bound: u64,
}

/// What a writer knows of the journal: enough to tell with a `stat` and two short reads that
/// no other writer changed it (its header names the store it follows, its last record the last
/// update; both change with every commit of another writer).
#[derive(Debug, Default)]
struct LogTail {
    /// The file as last written or read (`None`: there is none).
    stamp: Option<FileStamp>,
    /// The length of its header and records.
    len: u64,
    /// The header line (empty: none yet).
    header: Vec<u8>,
    /// The last record's line (empty: none).
    last: Vec<u8>,
}

impl LogTail {
    fn of(loaded: &replay::Loaded) -> LogTail {
        let j = &loaded.journal;
        LogTail {
            stamp: loaded.log,
            len: j.end as u64,
            header: loaded.log_bytes[..j.header_len].to_vec(),
            last: loaded.log_bytes[j.last_start..j.end].to_vec(),
        }
    }
}

fn io<'p>(
    path: &'p Path,
    action: &'static str,
) -> impl FnOnce(std::io::Error) -> RegistryError + 'p {
    move |source| RegistryError::Io {
        path: path.to_path_buf(),
        action,
        source,
    }
}

impl FileRegistry {
    /// The tree to edit, under the lock: the one kept from this process's last update if the
    /// files still hold it (a `stat` of each and two short reads), else the files read, and
    /// what a writer killed half-way left behind finished (a torn record cut off, a journal the
    /// store already includes started again).
    pub(super) fn writer(&self, kept: Option<Writer>) -> Result<Writer, RegistryError> {
        match kept {
            Some(w) if self.still_current(&w) => Ok(w),
            _ => self.load_writer(),
        }
    }

    fn still_current(&self, w: &Writer) -> bool {
        if FileStamp::of(&self.store_path()) != w.store {
            return false;
        }
        let log_path = self.log_path();
        let Some(stamp) = w.log.stamp else {
            return FileStamp::of(&log_path).is_none();
        };
        if FileStamp::of(&log_path) != Some(stamp) || stamp.size() != w.log.len {
            return false;
        }
        let Ok((file, _)) = LOG_RULE.open(&log_path) else {
            return false;
        };
        let holds = |at: u64, want: &[u8]| {
            let mut got = vec![0; want.len()];
            file.read_exact_at(&mut got, at).is_ok() && got == want
        };
        let last_at = w.log.len - w.log.last.len() as u64;
        holds(0, &w.log.header) && holds(last_at, &w.log.last)
    }

    fn load_writer(&self) -> Result<Writer, RegistryError> {
        let loaded = replay::load(&self.store_path(), &self.log_path())?;
        let j = &loaded.journal;
        // A fold interrupted between the new store and the new journal: every record is in the
        // store already.
        let stale = j.base.is_some_and(|b| b < loaded.store_seq)
            && j.last_seq().is_some_and(|s| s <= loaded.store_seq);
        let log = if stale {
            self.start_journal(loaded.seq)?
        } else if loaded.log.is_some() && j.end < loaded.log_bytes.len() {
            self.cut_torn_record(j.end as u64)?;
            LogTail {
                stamp: FileStamp::of(&self.log_path()),
                ..LogTail::of(&loaded)
            }
        } else {
            LogTail::of(&loaded)
        };
        Ok(Writer {
            seq: loaded.seq,
            store: loaded.store,
            store_len: loaded.store.map_or(0, |s| s.size()),
            log,
            bound: loaded.bound,
            hive: loaded.hive,
        })
    }

    /// Cuts the journal at `end`: what follows is a record torn by a writer killed while it
    /// appended it (the caller holds the lock, so no live writer is appending).
    fn cut_torn_record(&self, end: u64) -> Result<(), RegistryError> {
        let path = self.log_path();
        let file = LOG_RULE.open_or_create(&path, FILE_MODE)?;
        log::debug!(
            "registry journal {}: cutting a torn record at byte {end}",
            path.display()
        );
        file.set_len(end)
            .and_then(|()| file.sync_data())
            .map_err(io(&path, "cut a torn record from"))
    }

    /// Writes the changes `edit` made to `w.hive` as the next record, or folds the journal into
    /// a new store when the record would take it past its limit ([`JOURNAL_FLOOR`]) or the tree
    /// could outgrow [`MAX_STORE_SIZE`]. Returns whether `w` still describes the files (a fold
    /// whose new journal could not be started leaves the old one for the next writer to
    /// restart).
    pub(super) fn commit(&self, w: &mut Writer, changes: &[Change]) -> Result<bool, RegistryError> {
        let seq = w.seq + 1;
        let record = journal::encode_record(seq, changes)?;
        // Never append what does not read back as the same changes.
        let read_back = journal::decode_record(&record);
        let same = read_back.as_ref().map(|(s, c)| (*s, c.as_slice())) == Some((seq, changes));
        ensure(same, || RegistryError::Encode {
            path: self.log_path(),
            message: "the journal record does not read back as the same changes".into(),
        })?;
        let growth: u64 = changes.iter().map(growth_bound).sum();
        let header = if w.log.len == 0 {
            journal::header(w.seq).into_bytes()
        } else {
            Vec::new()
        };
        let after = w.log.len + (header.len() + record.len()) as u64;
        let limit = w.store_len.clamp(JOURNAL_FLOOR, MAX_STORE_SIZE);
        if after > limit || w.bound.saturating_add(growth) > MAX_STORE_SIZE {
            return self.fold(w, seq);
        }
        self.append(w, &header, &record)?;
        w.seq = seq;
        w.bound += growth;
        Ok(true)
    }

    /// Appends `header` (when the journal is new) and `record` to the journal, with one fsync.
    fn append(&self, w: &mut Writer, header: &[u8], record: &[u8]) -> Result<(), RegistryError> {
        let path = self.log_path();
        let mut notes = Tightened::default();
        let file = LOG_RULE.open_or_create(&path, FILE_MODE)?;
        self.folder
            .file(&file, &path, "registry journal", &mut notes)?;
        notes.report(&self.root);
        let bytes = [header, record].concat();
        let at = w.log.len;
        if fault_point("mid-append") {
            let _ = file.write_all_at(&bytes[..bytes.len() / 2], at);
            let _ = file.sync_data();
            die();
        }
        if let Err(e) = file.write_all_at(&bytes, at) {
            // Whatever part was written is a torn record: cut it now, or the next writer will.
            let _ = file.set_len(at);
            return Err(io(&path, "append to")(e));
        }
        if fault_point("after-append") {
            die();
        }
        file.sync_data().map_err(io(&path, "write"))?;
        count_log_append();
        if w.log.stamp.is_none() {
            self.sync_folder()?;
        }
        if !header.is_empty() {
            w.log.header = header.to_vec();
        }
        w.log.len += bytes.len() as u64;
        w.log.last = record.to_vec();
        w.log.stamp = FileStamp::of_file(&file);
        Ok(())
    }

    /// Writes `w.hive` as the store including record `seq`, then starts a new journal.
    fn fold(&self, w: &mut Writer, seq: u64) -> Result<bool, RegistryError> {
        let (store, len) = self.write_store(&w.hive, seq)?;
        w.seq = seq;
        w.store = Some(store);
        w.store_len = len;
        w.bound = len;
        match self.start_journal(seq) {
            Ok(log) => {
                w.log = log;
                Ok(true)
            }
            Err(e) => {
                // The update is in the store; the old journal holds only records it includes,
                // which the next writer sees and starts again.
                log::warn!("registry {}: {e}", self.root.display());
                Ok(false)
            }
        }
    }

    /// Writes the new store for record `seq` atomically (see the [module docs](super)); returns
    /// its stamp and length. The caller holds the lock.
    fn write_store(&self, hive: &Hive, seq: u64) -> Result<(FileStamp, u64), RegistryError> {
        let store = self.store_path();
        let text = encode_store(hive, seq)?;
        if text.len() as u64 > MAX_STORE_SIZE {
            return Err(RegistryError::Encode {
                path: store,
                message: format!(
                    "the new store would be {} bytes, over the {MAX_STORE_SIZE} bytes it may \
                     hold (MAX_STORE_SIZE); nothing was written",
                    text.len()
                ),
            });
        }
        // Never replace the store with something that does not read back as the same tree.
        let same = decode_store(&text, &store).is_ok_and(|(read, s)| read == *hive && s == seq);
        ensure(same, || RegistryError::Encode {
            path: store,
            message: "the new contents do not read back as the same keys and values".into(),
        })?;
        let stamp = self.replace(paths::STORE_FILE, text.as_bytes())?;
        Ok((stamp, text.len() as u64))
    }

    /// Writes a new registry's store (`hive`, record 0) and its empty journal. The caller holds
    /// the lock.
    pub(super) fn create(&self, hive: &Hive) -> Result<(), RegistryError> {
        self.write_store(hive, 0)?;
        self.start_journal(0).map(drop)
    }

    /// Starts a new, empty journal following record `seq` of the store, atomically.
    fn start_journal(&self, seq: u64) -> Result<LogTail, RegistryError> {
        let header = journal::header(seq).into_bytes();
        let stamp = self.replace(paths::LOG_FILE, &header)?;
        Ok(LogTail {
            stamp: Some(stamp),
            len: header.len() as u64,
            header,
            last: Vec::new(),
        })
    }

    /// Replaces the file `name` of the folder with `bytes`: a temporary file written and
    /// fsynced, renamed over it, the folder fsynced. Returns the new file's stamp.
    fn replace(&self, name: &str, bytes: &[u8]) -> Result<FileStamp, RegistryError> {
        let is_store = name == paths::STORE_FILE;
        let fault = |point| is_store && fault_point(point);
        let target = self.root.join(name);
        let temp = self.root.join(format!("{name}.tmp.{}", std::process::id()));
        // No stale temporary file can be at this name: the caller holds the lock and every
        // updater removed them under it; a file planted here is refused, never followed.
        let mut file = create_new(&temp, FILE_MODE).map_err(io(&temp, "create"))?;
        self.folder.adopt(&file, &temp)?;
        if fault("mid-temp-write") {
            let _ = file
                .write_all(&bytes[..bytes.len() / 2])
                .and_then(|()| file.sync_all());
            die();
        }
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(io(&temp, "write"))?;
        drop(file);
        if fault("after-temp-write") {
            die();
        }
        std::fs::rename(&temp, &target).map_err(io(&target, "replace"))?;
        if is_store {
            count_store_write();
        }
        if fault("after-rename") {
            die();
        }
        self.sync_folder()?;
        FileStamp::of(&target).ok_or_else(|| RegistryError::Io {
            path: target.clone(),
            action: "examine",
            source: std::io::Error::last_os_error(),
        })
    }

    /// Makes the folder's entries durable (a file created or renamed).
    fn sync_folder(&self) -> Result<(), RegistryError> {
        File::open(&self.root)
            .and_then(|dir| dir.sync_all())
            .map_err(io(&self.root, "sync the folder"))
    }
}
