//! The provider's Collect over a block file: the provider library's own entry points (linked,
//! called as perflib calls them), its output judged by the collector's checks and decoded.
//!
//! The provider is opened once per process for the app `PrfDataFuzz`; each input is placed as
//! that app's block (a new file renamed over the last, as a restarting app does), and Collect is
//! called with `Global`, `Costly`, `Foreign`, a null query, each object's index alone, all of
//! them, and index lists with junk in them. For each query:
//!
//! 1. with the collector's buffers (64 KiB, doubled on ERROR_MORE_DATA up to the collector's
//!    cap): the call passes [`check_collect`](prfmon::collector::validate::check_collect) (a
//!    fault there is what disables a service; a block must never cause one) and returns data;
//! 2. with exactly that many bytes: the same byte count and object count (when there was data);
//! 3. with one byte less, and with a small buffer: ERROR_MORE_DATA, the guard bytes intact and
//!    nothing written (the block holds still).
//!
//!    Steps 2 and 3 for `Global`, `Costly` and all the objects by index: the other queries
//!    size the same objects the same way.
//! 4. the data, in a PERF_DATA_BLOCK, decodes ([`prfdata_wire::snapshot::decode`]) with the objects
//!    Collect counted; the `Global` and `Costly` collections merge as `typeperf` merges them,
//!    and the consumers of [`crate::consumers`] run over the result; every histogram served
//!    whole has its count (mod 2^32) in its base.
//!
//! The sequence word of the input is made even first: an odd one (a writer inside a section) is
//! "busy" until the 30 ms collect budget runs out, which would cost every such input 30 ms and
//! find nothing more; the reader targets cover odd sequences.

use std::ffi::c_void;
use std::sync::Once;

use prfdata::layout::SEQ_OFFSET;
use prfdata::reader::BlockReader;
use prfdata_provider::{CollectPerformanceData, OpenPerformanceData};
use prfdata_wire::snapshot::{decode, DataSnapshot};
use prfdata_wire::winperf::{ERROR_MORE_DATA, ERROR_SUCCESS};
use prfmon::collector::library::{RawCollect, CANARY_BYTE, CANARY_LEN};
use prfmon::collector::validate::{check_collect as judge, Verdict};
use prfmon::collector::{INITIAL_BUFFER, MAX_BUFFER};
use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};

/// What the buffer holds before Collect runs: anything Collect writes shows.
const FILL: u8 = 0x5A;

/// Places `bytes` as the provider app's block and collects it every way (see the module docs).
///
/// # Panics
///
/// When a property of the module docs does not hold.
///
/// # Examples
///
/// ```
/// prfdata_fuzz::provider::check_collect(&prfdata_fuzz::env::templates()[2].bytes);
/// prfdata_fuzz::provider::check_collect(b"PRFDATA\0 and then nothing");
/// ```
pub fn check_collect(bytes: &[u8]) {
    open_once();
    let mut block = bytes.to_vec();
    if let Some(low) = block.get_mut(SEQ_OFFSET) {
        *low &= !1;
    }
    crate::block_file::place_app_block(&block);

    let first = crate::env::get().fuzz.first_counter;
    let indexes: Vec<u32> = BlockReader::open(crate::maps::rich::MAP.app)
        .map(|r| {
            r.objects()
                .iter()
                .map(|o| first.wrapping_add(o.name_offset))
                .collect()
        })
        .unwrap_or_default();
    let all = join(&indexes);
    let global = collect_checked(Some("Global"), Sizes::All);
    let costly = collect_checked(Some("Costly"), Sizes::All);
    collect_checked(Some(&*all), Sizes::All);
    for q in [None, Some("Foreign"), Some("")] {
        collect_checked(q, Sizes::Large);
    }
    for index in indexes.iter().take(8) {
        collect_checked(Some(&index.to_string()), Sizes::Large);
    }
    let junk = format!("{first} junk 4294967295 -2 {all} {all}");
    collect_checked(Some(&junk), Sizes::Large);

    let mut merged = global;
    prfmon::merge::merge_missing(&mut merged, costly);
    served_histograms_agree(&merged);
    crate::consumers::check_snapshot(&merged);
}

/// Every histogram the provider served whole has its count in its base (mod 2^32), as the
/// readers' fix-up writes it: bucket words that no longer add up are "no data", never a
/// histogram whose mean and percentiles disagree.
fn served_histograms_agree(snapshot: &DataSnapshot) {
    use prfdata_wire::snapshot::RawValue;
    for object in &snapshot.objects {
        for values in crate::consumers::counter_blocks(object) {
            for (def, view) in prfmon::histogram::histograms(object, values) {
                let Ok(view) = view else { continue };
                let base = match values.get(def.base) {
                    Some(RawValue::Int(base)) => base,
                    other => panic!("a served histogram's base is {other:?}"),
                };
                assert_eq!(
                    base as u64,
                    view.count() & u64::from(u32::MAX),
                    "the base of a served histogram is its count mod 2^32"
                );
            }
        }
    }
}

fn join(indexes: &[u32]) -> String {
    indexes
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

fn open_once() {
    static OPEN: Once = Once::new();
    OPEN.call_once(|| {
        crate::env::get();
        let names: Vec<u16> = crate::maps::rich::MAP
            .app
            .encode_utf16()
            .chain([0, 0])
            .collect();
        // SAFETY: `names` is a double-NUL-terminated UTF-16 multi-string alive for the call.
        let status = unsafe { OpenPerformanceData(names.as_ptr()) };
        assert_eq!(status, ERROR_SUCCESS, "Open of the installed fuzz app");
    });
}

/// One Collect with a `size`-byte buffer, as the collector makes it, and the whole buffer after.
fn call(query: Option<&str>, size: u32) -> (RawCollect, Vec<u8>) {
    let len = size as usize;
    let wide: Option<Vec<u16>> = query.map(|q| q.encode_utf16().chain([0]).collect());
    // u64 words: the buffer is 8-aligned as perflib's is.
    let mut words = vec![u64::from_ne_bytes([FILL; 8]); (len + CANARY_LEN).div_ceil(8)];
    let start: *mut u8 = words.as_mut_ptr().cast();
    // SAFETY: `words` holds at least `len + CANARY_LEN` bytes; the guard is set through the
    // same pointer Collect gets, before the call.
    unsafe { std::ptr::write_bytes(start.add(len), CANARY_BYTE, CANARY_LEN) };
    let mut data: *mut c_void = start.cast();
    let mut bytes = size;
    let mut num_objects = 0u32;
    let value = wide.as_ref().map_or(std::ptr::null(), |w| w.as_ptr());
    // SAFETY: Collect's contract:
    // - `value` is null or a NUL-terminated UTF-16 string alive for the call;
    // - `data`, `bytes` and `num_objects` are valid, writable locals;
    // - `*data` points at `size` writable bytes (and the guard after them) that nothing else
    //   touches during the call.
    let status = unsafe { CollectPerformanceData(value, &mut data, &mut bytes, &mut num_objects) };
    let advance = (data as isize).wrapping_sub(start as isize) as i64;
    // SAFETY: `words` is alive and no longer borrowed by the call; its bytes are initialised.
    let buf = unsafe { std::slice::from_raw_parts(start, len + CANARY_LEN) }.to_vec();
    let canary_intact = buf[len..].iter().all(|&b| b == CANARY_BYTE);
    let keep = advance.clamp(0, i64::from(size)) as usize;
    let raw = RawCollect {
        status,
        buffer_len: size,
        bytes,
        num_objects,
        advance,
        canary_intact,
        data: buf[..keep].to_vec(),
    };
    (raw, buf)
}

/// Which buffer sizes a query is collected with.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sizes {
    /// The collector's, then exactly the size needed, then short ones.
    All,
    /// The collector's only (the queries whose sizing the `All` ones already cover).
    Large,
}

/// The checks of the module docs for one query; returns the decoded collection.
fn collect_checked(query: Option<&str>, sizes: Sizes) -> DataSnapshot {
    let q = query.unwrap_or("(null)");
    let mut size = INITIAL_BUFFER;
    let (raw, out) = loop {
        let (raw, _) = call(query, size);
        match judge(&raw) {
            Ok(Verdict::Data(out)) => break (raw, out),
            Ok(Verdict::MoreData) if size < MAX_BUFFER => size = size.saturating_mul(2),
            verdict => panic!("Collect({q}) with {size} bytes: {verdict:?}: {raw:?}"),
        }
    };
    let n = raw.bytes;
    if sizes == Sizes::Large {
        return decoded(q, out);
    }

    // Exactly the bytes it needs: the same answer. (With no data, a provider may still size a
    // block it then finds it cannot serve, and answer ERROR_MORE_DATA to an empty buffer: the
    // caller's next, larger, buffer gets the empty answer.)
    let (exact, _) = call(query, n);
    if n == 0 {
        assert!(
            judge(&exact).is_ok(),
            "Collect({q}) with no buffer: {exact:?}"
        );
        return decoded(q, out);
    }
    assert_eq!(
        (exact.status, exact.bytes, exact.num_objects),
        (ERROR_SUCCESS, n, raw.num_objects),
        "Collect({q}) with exactly the {n} bytes it returned"
    );
    assert!(judge(&exact).is_ok(), "Collect({q}) with {n} bytes");

    // Short: ERROR_MORE_DATA, nothing written.
    for short in [n.saturating_sub(1), n.min(40)] {
        if short >= n {
            continue;
        }
        let (more, buf) = call(query, short);
        assert_eq!(
            more.status, ERROR_MORE_DATA,
            "Collect({q}) with {short} of the {n} bytes it needs"
        );
        assert!(judge(&more).is_ok(), "Collect({q}) with {short} bytes");
        assert!(
            buf[..short as usize].iter().all(|&b| b == FILL),
            "Collect({q}) wrote into a {short}-byte buffer and returned ERROR_MORE_DATA"
        );
    }

    decoded(q, out)
}

/// The output in a PERF_DATA_BLOCK, decoded: it must decode, with the objects Collect counted.
fn decoded(q: &str, out: ProviderOutput) -> DataSnapshot {
    let objects = out.num_objects;
    let block = build_data_block("fuzz", &CollectionTimes::now(), &[out]);
    match decode(&block) {
        Ok(snapshot) => {
            assert_eq!(snapshot.objects.len(), objects as usize, "Collect({q})");
            snapshot
        }
        Err(e) => panic!("Collect({q}) passed the collector's checks but does not decode: {e}"),
    }
}
