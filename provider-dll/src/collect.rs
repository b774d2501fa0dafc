//! Collect: the selected objects of every served app, serialised into the caller's buffer.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use prfdata::block::reader::{BlockReader, Snapshot};
use prfdata::clock;

use crate::apps;
use crate::query::Query;
use crate::serialize::{object_size, write_object};

/// How long one Collect may spend waiting for consistent snapshots of all its apps together: a
/// stopped or lock-holding app costs at most this, and Collect stays well under 50 ms.
pub const COLLECT_BUDGET: Duration = Duration::from_millis(30);

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
    /// The buffer is too small: nothing was written.
    MoreData,
}

thread_local! {
    /// Per thread, per app: snapshots reused across calls so Collect does not allocate.
    static SNAPSHOTS: RefCell<Vec<Snapshot>> = const { RefCell::new(Vec::new()) };
}

/// Collects `query` into `buf`.
pub fn collect(query: &Query, buf: &mut [u8]) -> Collected {
    if *query == Query::Foreign {
        return Collected::Data {
            bytes: 0,
            objects: 0,
        };
    }
    let apps = apps::apps();
    SNAPSHOTS.with(|cell| {
        let mut snaps = cell.borrow_mut();
        if snaps.len() < apps.len() {
            snaps.resize_with(apps.len(), Snapshot::default);
        }
        let start = Instant::now();
        // (app, reader, selected object indexes) for apps that gave a snapshot.
        let mut chosen: Vec<(usize, std::sync::Arc<BlockReader>, Vec<usize>)> = Vec::new();
        let mut total = 0usize;
        for (i, app) in apps.iter().enumerate() {
            let left = COLLECT_BUDGET
                .saturating_sub(start.elapsed())
                .max(Duration::from_millis(1));
            let select = |reader: &BlockReader| -> Vec<usize> {
                let name = |k: usize| app.titles.name(reader.objects()[k].name_offset);
                (0..reader.objects().len())
                    .filter(|&k| query.wants(name(k), reader.objects()[k].costly))
                    .collect()
            };
            let wanted = |reader: &BlockReader| !select(reader).is_empty();
            let Some(reader) = app.snapshot(&mut snaps[i], left, wanted) else {
                continue;
            };
            let selected = select(&reader);
            total += selected
                .iter()
                .map(|&k| object_size(&reader, &snaps[i], k))
                .sum::<usize>();
            chosen.push((i, reader, selected));
        }
        if total > buf.len() {
            return Collected::MoreData;
        }
        let perf_time = clock::perf_counter();
        let mut at = 0;
        let mut objects = 0;
        for (i, reader, selected) in &chosen {
            for &k in selected {
                at += write_object(
                    reader,
                    &snaps[*i],
                    k,
                    apps[*i].titles,
                    perf_time,
                    &mut buf[at..],
                );
                objects += 1;
            }
        }
        Collected::Data { bytes: at, objects }
    })
}
