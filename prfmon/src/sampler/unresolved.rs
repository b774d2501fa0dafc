//! What a [`Sampler`](super::Sampler) knows of its requests that match nothing: a path
//! waiting for an app not installed yet is not matched, nor are its near matches looked for,
//! again at every sample while the collection offers the same objects under the same names.

use super::offered::Offered;
use crate::pdh::{CounterPath, PathError};

/// What is known of one request at the current key.
#[derive(Debug, Clone, Default)]
struct Known {
    /// It names no counter on offer ([`Offered::names_a_counter`] false): nothing but a new
    /// key can make it match, so it is not matched until then. `None`: not asked yet.
    absent: Option<bool>,
    /// Its [`PathError::NoMatch`], near matches included, once it matched nothing.
    error: Option<PathError>,
}

/// The requests that matched nothing, as of one [`Offered::key`] (the objects and counters on
/// offer and their names): forgotten when the key changes (an app installed, uninstalled or
/// renamed, or the names read again), kept otherwise. A request whose object is on offer but
/// not the instance it names is still matched at every sample (instances come and go under
/// one key), only its near matches are kept.
#[derive(Debug, Clone, Default)]
pub(super) struct Unresolved {
    key: Option<u64>,
    known: Vec<Known>,
}

impl Unresolved {
    /// Starts a sample of `requests` requests over `offered`: what was known is forgotten if
    /// the offer changed.
    pub(super) fn begin(&mut self, offered: &Offered<'_>, requests: usize) {
        let key = offered.key();
        if self.key != Some(key) || self.known.len() != requests {
            self.key = Some(key);
            self.known = vec![Known::default(); requests];
        }
    }

    /// Whether `request` is known to name no counter on offer: it need not be matched.
    pub(super) fn is_absent(&self, request: usize) -> bool {
        self.known
            .get(request)
            .is_some_and(|k| k.absent == Some(true))
    }

    /// `request` (`path`) matched nothing in `offered`: remembers whether it names a counter on
    /// offer at all (asked once per key).
    pub(super) fn unmatched(&mut self, request: usize, path: &CounterPath, offered: &Offered<'_>) {
        if let Some(known) = self.known.get_mut(request) {
            if known.absent.is_none() {
                known.absent = Some(!offered.names_a_counter(path));
            }
        }
    }

    /// The error of `request` (`path`), which matched nothing in `offered`: found once per
    /// key, near matches included.
    pub(super) fn error(
        &mut self,
        request: usize,
        path: &CounterPath,
        offered: &Offered<'_>,
    ) -> PathError {
        self.unmatched(request, path, offered);
        match self.known.get_mut(request) {
            Some(known) => known
                .error
                .get_or_insert_with(|| offered.no_match(path))
                .clone(),
            None => offered.no_match(path),
        }
    }
}
