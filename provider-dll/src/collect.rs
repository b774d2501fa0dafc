//! Collect: the selected objects of every served app, serialised into the caller's buffer.
//!
//! Single pass: each app's objects are written straight from its mapped block into the caller's
//! buffer inside one sequence window of the block ([`BlockReader::read_with`]), after sizing
//! them in that same window, so that a buffer too small is answered with ERROR_MORE_DATA before a
//! byte is written. Sizing is cheap: an upper bound from the live counts alone (every name as
//! long as allowed) settles it when the buffer is large, as perflib's usually is; only otherwise
//! are the name lengths read for the exact size. A window the writer disturbed is
//! retried; the bytes it left in the buffer are overwritten by the retry, and only a kept window
//! advances the output.
//!
//! With several blocks to write (each app has two: its installed map's and its run-time
//! objects', which often does not exist), a first pass sizes every block (each in its own window)
//! so that ERROR_MORE_DATA is decided before any block is written: with the upper bounds from the
//! live counts when they all fit, exactly otherwise; the writing pass then reuses an app's exact
//! size when its sequence has not moved since, and sizes it again otherwise. With one block to
//! write, there is no first pass: its window checks the room before it writes.
//!
//! What a Collect checks with system calls (whether a block was replaced, whether the names
//! changed, whether the app still runs) it checks once per app and at most once per
//! [`apps::FRESHNESS`] ([`apps::next_collect`]); what it serialises again and again
//! (object and counter definitions, instance definitions and names) it copies from what the
//! last Collect of the block left ([`Prepared`]).
//!
//! ERROR_MORE_DATA writes nothing when the block holds still between sizing and writing. The one
//! case that writes inside the buffer (never past it) and still answers ERROR_MORE_DATA is a
//! race: an app adds instances (or starts, its block appearing) between a window whose copy was
//! written and rejected (or an earlier app's write) and the retry, so that the data no longer
//! fits. perflib ignores the buffer's contents on ERROR_MORE_DATA ("How a performance DLL
//! interfaces with a monitor" only asks that the pointer stay put and both counts be 0, which
//! they are).

use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use prfdata::reader::{BlockReader, ReadError};

use crate::apps;
use crate::query::Query;
use crate::select::Selection;
use crate::serialize::{objects_size, objects_size_bound, write_prepared, Prepared};

/// How long one Collect may spend waiting for consistent windows of all its apps together: a
/// stopped or lock-holding app costs at most this, and Collect stays well under 50 ms.
pub const COLLECT_BUDGET: Duration = Duration::from_millis(30);

/// Asks every app for the on-demand values (the Windows 95 stat servers' `PSTF_FUNCPTR`) of the
/// objects `query` asks for, then waits for them together: app by app until `asked_at` plus its
/// bound (`OnDemand Timeout`), none past `asked_at` plus the smallest share of a `Collect Timeout`
/// among the apps' services and the services that export them, the one that calls this
/// provider among them (half of it: [`prfdata_registry::stats::collect_share`]). Their waits
/// overlap, so the Collect waits at most the largest of their bounds, never their sum, and
/// always returns before the collector gives up on the provider. An app that let a request pass
/// its deadline is not waited for until it has served it (its last values are served). Returns
/// whether it may have waited.
fn refresh_on_demand(
    query: &Query,
    apps: &[Arc<apps::App>],
    collect: u64,
    asked_at: Instant,
) -> bool {
    let Some(cap) = apps.iter().map(|app| app.on_demand_bounds().1).min() else {
        return false;
    };
    let blocks: Vec<(&apps::App, Arc<BlockReader>, Instant)> = apps
        .iter()
        .filter_map(|app| {
            let reader = app.block(collect)?;
            let bound = app.on_demand_bounds().0.min(cap);
            Some((&**app, reader, asked_at + bound))
        })
        .collect();
    let deadlines: Vec<(&BlockReader, Instant)> =
        blocks.iter().map(|(_, r, at)| (&**r, *at)).collect();
    let refreshed = BlockReader::refresh_on_demand_all(&deadlines, |b, o| {
        let (app, reader, _) = &blocks[b];
        reader
            .objects()
            .get(o)
            .is_some_and(|info| query.wants(app.titles().name(info.name_offset), info.costly))
    });
    let mut waited = false;
    for ((app, _, _), refreshed) in blocks.iter().zip(refreshed) {
        waited |= app.on_demand_refreshed(refreshed);
    }
    waited
}

/// Whether any object of `reader` is one `query` asks for. (`selected`, in the passes, then
/// holds the objects of one app's block that the query asks for, with the objects of their
/// instances' parents, chosen again in each window: the links are the window's.)
fn wanted<'a>(query: &'a Query, app: &'a apps::App) -> impl Fn(&BlockReader) -> bool + 'a {
    move |reader| {
        reader
            .objects()
            .iter()
            .any(|info| query.wants(app.titles().name(info.name_offset), info.costly))
    }
}

/// The first pass of a Collect of several blocks: each app's size (an upper bound from the live
/// counts; exact sizes only if the bounds do not all fit), so that ERROR_MORE_DATA is decided
/// before a byte is written. `None`: more than `room` bytes (ERROR_MORE_DATA).
///
/// The answer is at most [`BlockReader::MAX_COLLECT_ANSWER`], the one limit the collector's
/// Collect buffer comes from too: one app's blocks never answer more (prfdata's rule, in
/// `prfdata::reader`), but the apps of a service's `Linkage\Export` together could. Then the
/// apps whose answer would take the total past it are left out of this Collect (logged once
/// each): a provider never asks for a buffer the collector cannot give.
fn size_apps(
    query: &Query,
    apps: &[Arc<apps::App>],
    collect: u64,
    left: &impl Fn() -> Duration,
    selected: &mut Selection,
    room: usize,
) -> Option<Vec<Option<Sized>>> {
    let cap = BlockReader::MAX_COLLECT_ANSWER as usize;
    for exact in [false, true] {
        let mut sized: Vec<Option<Sized>> = Vec::with_capacity(apps.len());
        for app in apps {
            let read = app.read(collect, left, wanted(query, app), |view| {
                selected.select(view, query, app.titles())?;
                let bytes = if exact {
                    objects_size(view, selected.objects())?
                } else {
                    objects_size_bound(view, selected.objects())?
                };
                Ok((view.seq(), bytes))
            });
            sized.push(read.map(|(reader, (seq, bytes))| Sized {
                reader,
                seq,
                bytes,
                exact,
            }));
        }
        let mut total = sized
            .iter()
            .flatten()
            .fold(0usize, |sum, s| sum.saturating_add(s.bytes));
        if exact && total > cap {
            total = leave_out_past(cap, apps, &mut sized);
        }
        if total <= room.min(cap) {
            return Some(sized);
        }
        if exact {
            return None;
        }
    }
    None
}

/// Leaves out of this Collect (their sizes taken out of `sized`) the apps that would take the
/// answer past `cap`, in order; returns the size of the rest.
fn leave_out_past(cap: usize, apps: &[Arc<apps::App>], sized: &mut [Option<Sized>]) -> usize {
    let mut total = 0usize;
    for (app, size) in apps.iter().zip(sized.iter_mut()) {
        let Some(bytes) = size.as_ref().map(|s| s.bytes) else {
            continue;
        };
        if total.saturating_add(bytes) > cap {
            app.log_left_out(bytes, cap);
            *size = None;
        } else {
            total += bytes;
        }
    }
    total
}

/// What the writing pass of one Collect shares among its apps.
struct Pass<'a, L> {
    query: &'a Query,
    collect: u64,
    /// The read budget left.
    left: &'a L,
    /// The object timer of this Collect.
    perf_time: i64,
}

/// The writing pass for one app, in one window: its size (or the first pass's `presized`, if
/// it still holds), checked against `room` (what `out` may take, the later apps' room kept),
/// then its objects written at the start of `out`. `None`: no data from the app; `Some(None)`:
/// no room (ERROR_MORE_DATA); else the bytes and objects written.
fn write_app<L: Fn() -> Duration>(
    pass: &Pass<'_, L>,
    app: &apps::App,
    selected: &mut Selection,
    presized: Option<&Sized>,
    out: &mut [u8],
    room: usize,
) -> Option<Option<(usize, u32)>> {
    let titles = app.titles();
    // What the last Collect of this block left, if it is still this block's.
    let mut prepared = app
        .prepared
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    let read = app.read(pass.collect, pass.left, wanted(pass.query, app), |view| {
        selected.select(view, pass.query, titles)?;
        // The exact size is only needed when the buffer might be too small: the bound
        // (from the live counts alone) usually settles it without reading every slot.
        let exact = match presized {
            Some(s)
                if s.exact && std::ptr::eq(&*s.reader, view.reader()) && s.seq == view.seq() =>
            {
                Some(s.bytes)
            }
            _ if objects_size_bound(view, selected.objects())? <= room => None,
            _ => Some(objects_size(view, selected.objects())?),
        };
        if exact.is_some_and(|bytes| bytes > room) {
            return Ok(None);
        }
        let end = exact.unwrap_or(room);
        if !prepared
            .as_ref()
            .is_some_and(|p| p.is_for(view.reader(), titles))
        {
            // A new block (or new names): its parts once, kept for the next Collects.
            prepared = app
                .block(pass.collect)
                .filter(|r| std::ptr::eq(&**r, view.reader()))
                .map(|r| Prepared::new(r, titles));
        }
        let (bytes, n) = match prepared.as_mut() {
            Some(p) => write_prepared(view, selected, p, pass.perf_time, &mut out[..end])?,
            // The block was replaced during this Collect: nothing to keep.
            None => crate::serialize::write_objects(
                view,
                selected,
                titles,
                pass.perf_time,
                &mut out[..end],
            )?,
        };
        // A size from an earlier window of the same sequence can differ by the instances
        // whose owner process died in between (hidden without a layout change): the size
        // of this window must match.
        if exact.is_some_and(|e| e != bytes) && objects_size(view, selected.objects())? != bytes {
            return Err(ReadError::Inconsistent);
        }
        Ok(Some((bytes, n)))
    });
    if matches!(read, Some((_, Some(_)))) {
        // The window that wrote was kept: what it recorded may be reused.
        if let Some(p) = prepared.as_mut() {
            p.keep();
        }
    }
    *app.prepared.lock().unwrap_or_else(PoisonError::into_inner) = prepared;
    read.map(|(_, written)| written)
}

/// What a Collect produced.
#[derive(Debug, PartialEq, Eq)]
pub enum Collected {
    /// `bytes` were written at the start of the buffer, holding `objects` objects.
    Data {
        /// Bytes written.
        bytes: usize,
        /// Objects written.
        objects: u32,
    },
    /// The buffer is too small: nothing was written (but see the module docs for a race).
    MoreData,
}

/// An app's size from the first pass, valid while its block and sequence are the same.
struct Sized {
    reader: Arc<BlockReader>,
    seq: u64,
    bytes: usize,
    /// Whether `bytes` is the exact size, or an upper bound.
    exact: bool,
}

std::thread_local! {
    /// The selection the last Collect on this thread used, its vectors kept for the next one
    /// (a Collect allocates nothing for it once warm).
    static SELECTION: std::cell::Cell<Option<Selection>> = const { std::cell::Cell::new(None) };
}

/// Collects `query` into `buf`.
pub fn collect(query: &Query, buf: &mut [u8]) -> Collected {
    let mut selected = SELECTION.take().unwrap_or_default();
    let collected = collect_with(query, buf, &mut selected);
    SELECTION.set(Some(selected));
    collected
}

/// [`collect`], choosing each app's objects into `selected`.
fn collect_with(query: &Query, buf: &mut [u8], selected: &mut Selection) -> Collected {
    if query.is_none() {
        return Collected::Data {
            bytes: 0,
            objects: 0,
        };
    }
    let apps = apps::apps();
    let (collect, asked_at) = apps::next_collect();
    // On-demand values first, outside the read budget below.
    let waited = refresh_on_demand(query, &apps, collect, asked_at);
    // The read budget starts now; the clock is read again only if the on-demand step may
    // have waited, and not for the first read (which has the whole budget: only this
    // function's own steps, microseconds, come before it).
    let start = if waited { Instant::now() } else { asked_at };
    let first = std::cell::Cell::new(true);
    let left = || {
        if first.replace(false) {
            return COLLECT_BUDGET;
        }
        COLLECT_BUDGET
            .saturating_sub(start.elapsed())
            .max(Duration::from_millis(1))
    };
    // Pass 1 (several blocks to write only): size each app, so ERROR_MORE_DATA comes before
    // any write. The blocks were checked once for this Collect by the on-demand step.
    let blocks = apps
        .iter()
        .filter(|app| app.block(collect).is_some_and(|r| wanted(query, app)(&r)))
        .count();
    let sized = if blocks > 1 {
        match size_apps(query, &apps, collect, &left, selected, buf.len()) {
            Some(sized) => sized,
            None => return Collected::MoreData,
        }
    } else {
        Vec::new()
    };

    // Pass 2: per app, in one window: size (or reuse the first pass's size), check the room,
    // write. The object timer: the wall clock as a FILETIME, as NT's objects have it.
    let pass = Pass {
        query,
        collect,
        left: &left,
        perf_time: prfdata_wire::filetime::now(),
    };
    let mut at = 0usize;
    let mut objects = 0;
    for (i, app) in apps.iter().enumerate() {
        let presized = sized.get(i);
        if presized.is_some_and(|s| s.is_none()) {
            // No data in the first pass: not counted in the size, so not written either.
            continue;
        }
        let presized = presized.and_then(Option::as_ref);
        // Room the later apps need (their first-pass sizes).
        let later = sized
            .iter()
            .skip(i + 1)
            .flatten()
            .fold(0usize, |sum, s| sum.saturating_add(s.bytes));
        let room = buf.len().saturating_sub(at.saturating_add(later));
        match write_app(&pass, app, selected, presized, &mut buf[at..], room) {
            Some(Some((bytes, n))) => {
                at += bytes;
                objects += n;
            }
            Some(None) => return Collected::MoreData,
            None => {}
        }
    }
    Collected::Data { bytes: at, objects }
}
