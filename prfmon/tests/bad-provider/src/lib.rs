//! Deliberately misbehaving perflib providers, for prfmon's collector tests.
//!
//! One library exports the standard trio (`OpenPerformanceData`, `CollectPerformanceData`,
//! `ClosePerformanceData`); what it does is chosen by the first string of the `Linkage\Export`
//! multi-sz passed to Open (the second, if present, is the object's name index, default 1848;
//! the third, if present, is a file to which Open and Close append a line, `open <mode>` and
//! `close <mode>`, so tests can count the calls). Open given NULL device names (no
//! `Linkage\Export`) means `good` at 1848, and the object then reports `DefaultCounter` -1
//! instead of 0 so tests can tell NULL from an empty list:
//!
//! | mode        | behaviour                                                                |
//! |-------------|--------------------------------------------------------------------------|
//! | `good`      | a valid object (2 counters, instances `alpha`, `beta`, `alpha`)          |
//! | `hang-open` | Open never returns                                                       |
//! | `hang`      | Collect never returns                                                    |
//! | `fail-collect` | Collect returns ERROR_ACCESS_DENIED (5), every time                   |
//! | `panic`     | Collect panics (across `extern "system"`: the process aborts)             |
//! | `abort`     | Collect calls `abort()`                                                  |
//! | `exit`      | Collect calls `exit(0)` (the MSJ article's provider calling ExitProcess) |
//! | `segfault`  | Collect writes through a pointer into the null page (SIGSEGV)            |
//! | `lie-bytes` | Collect reports 8 bytes more than it wrote                               |
//! | `odd-bytes` | Collect returns 4 bytes more than its object (a count not a multiple of 8) |
//! | `overrun`   | Collect writes past the end of the buffer it was given                   |
//! | `greedy`    | Collect answers ERROR_MORE_DATA at every size                            |
//! | `bad-chain` | Collect claims two objects but writes one                                |
//! | `fail-open` | Open returns ERROR_ACCESS_DENIED (5)                                     |
//! | `chatty`    | prints to stdout in Open and Collect, otherwise `good`                   |
//! | `replay`    | answers with objects the test wrote (below)                              |
//!
//! `replay` takes the third export string as a path prefix, not a call log: the n-th Collect
//! that asks for the object (from 0) answers with the bytes of the file `<prefix>.<n>`, or of
//! the last such file there is, each one PERF_OBJECT_TYPE: a test lays out what each
//! collection sees (a histogram's bucket counts growing, say) before the collector runs.
//!
//! Each test that needs separate state loads its own copy of the library (a different path
//! is a different host process and a different `dlopen` instance).

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

const ERROR_SUCCESS: u32 = 0;
const ERROR_ACCESS_DENIED: u32 = 5;
const ERROR_MORE_DATA: u32 = 234;

/// winperf.h `PERF_COUNTER_RAWCOUNT`.
const PERF_COUNTER_RAWCOUNT: u32 = 0x0001_0000;
/// winperf.h `PERF_COUNTER_BULK_COUNT`.
const PERF_COUNTER_BULK_COUNT: u32 = 0x1041_0500;

static MODE: Mutex<String> = Mutex::new(String::new());
static NAME_INDEX: AtomicU32 = AtomicU32::new(1848);
static CALLS: AtomicU64 = AtomicU64::new(0);
static CALL_LOG: Mutex<Option<String>> = Mutex::new(None);
static OPENED_WITH_NULL: AtomicBool = AtomicBool::new(false);
/// `replay`: the path prefix of the objects to answer with, and how many were answered.
static REPLAY: Mutex<Option<String>> = Mutex::new(None);
static REPLAYED: AtomicU64 = AtomicU64::new(0);

/// `replay`: the object of the next Collect that asks for it (see the module docs); empty if
/// there is no file.
fn replayed_object() -> Vec<u8> {
    let Some(prefix) = REPLAY.lock().ok().and_then(|p| p.clone()) else {
        return Vec::new();
    };
    let n = REPLAYED.load(Relaxed);
    (0..=n)
        .rev()
        .find_map(|k| std::fs::read(format!("{prefix}.{k}")).ok())
        .unwrap_or_default()
}

/// Appends `line` to the call log named by the third export string, if any.
fn log_call(line: &str) {
    use std::io::Write;
    let path = CALL_LOG.lock().ok().and_then(|p| p.clone());
    if let Some(path) = path {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{line}");
        }
    }
}

fn mode() -> String {
    MODE.lock().map(|m| m.clone()).unwrap_or_default()
}

/// Reads a REG_MULTI_SZ of UTF-16 strings.
///
/// # Safety
///
/// `p` is NULL or points to UTF-16 strings, each NUL-terminated, ended by one more NUL.
unsafe fn read_multi_sz(mut p: *const u16) -> Vec<String> {
    let mut out = Vec::new();
    if p.is_null() {
        return out;
    }
    loop {
        let mut units = Vec::new();
        // SAFETY: the caller guarantees the strings are NUL-terminated and the list ends with
        // an empty string, so every read stays inside it.
        unsafe {
            while *p != 0 {
                units.push(*p);
                p = p.add(1);
            }
            p = p.add(1);
        }
        if units.is_empty() {
            return out;
        }
        out.push(String::from_utf16_lossy(&units));
    }
}

/// Reads the NUL-terminated UTF-16 string at `p`.
///
/// # Safety
///
/// `p` points to a NUL-terminated UTF-16 string.
unsafe fn read_sz(mut p: *const u16) -> String {
    let mut units = Vec::new();
    // SAFETY: the caller guarantees a terminating NUL.
    unsafe {
        while *p != 0 {
            units.push(*p);
            p = p.add(1);
        }
    }
    String::from_utf16_lossy(&units)
}

fn le32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// The `good` object: PERF_OBJECT_TYPE, 2 definitions, 3 instances with counter blocks.
fn good_object(index: u32, calls: u64) -> Vec<u8> {
    let names = ["alpha", "beta", "alpha"];
    let mut body = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let units: Vec<u16> = name.encode_utf16().chain([0]).collect();
        let len = (24 + units.len() * 2).next_multiple_of(8) as u32;
        le32(&mut body, len); // ByteLength
        le32(&mut body, 0); // ParentObjectTitleIndex
        le32(&mut body, 0); // ParentObjectInstance
        le32(&mut body, u32::MAX); // UniqueID = PERF_NO_UNIQUE_ID
        le32(&mut body, 24); // NameOffset
        le32(&mut body, (units.len() * 2) as u32); // NameLength
        body.extend(units.iter().flat_map(|u| u.to_le_bytes()));
        body.resize(body.len().next_multiple_of(8), 0);
        le32(&mut body, 16); // PERF_COUNTER_BLOCK.ByteLength
        le32(&mut body, 10 * (i as u32 + 1)); // RAWCOUNT at 4
        body.extend_from_slice(&calls.to_le_bytes()); // BULK_COUNT at 8
    }
    let def_len = 64 + 2 * 40;
    let mut out = Vec::new();
    le32(&mut out, (def_len + body.len()) as u32); // TotalByteLength
    le32(&mut out, def_len as u32); // DefinitionLength
    le32(&mut out, 64); // HeaderLength
    le32(&mut out, index); // ObjectNameTitleIndex
    le32(&mut out, 0);
    le32(&mut out, index + 1); // ObjectHelpTitleIndex
    le32(&mut out, 0);
    le32(&mut out, 100); // DetailLevel = PERF_DETAIL_NOVICE
    le32(&mut out, 2); // NumCounters
    le32(
        &mut out,
        if OPENED_WITH_NULL.load(Relaxed) {
            u32::MAX
        } else {
            0
        },
    ); // DefaultCounter
    le32(&mut out, names.len() as u32); // NumInstances
    le32(&mut out, 0); // CodePage
    out.extend_from_slice(&0i64.to_le_bytes()); // PerfTime
    out.extend_from_slice(&1_000_000_000i64.to_le_bytes()); // PerfFreq
    for (k, (ty, size, offset, detail)) in [
        (PERF_COUNTER_RAWCOUNT, 4u32, 4u32, 100u32),
        (PERF_COUNTER_BULK_COUNT, 8, 8, 200),
    ]
    .into_iter()
    .enumerate()
    {
        let k = k as u32;
        le32(&mut out, 40); // ByteLength
        le32(&mut out, index + 2 + 2 * k); // CounterNameTitleIndex
        le32(&mut out, 0);
        le32(&mut out, index + 3 + 2 * k); // CounterHelpTitleIndex
        le32(&mut out, 0);
        le32(&mut out, 0); // DefaultScale
        le32(&mut out, detail); // DetailLevel
        le32(&mut out, ty); // CounterType
        le32(&mut out, size); // CounterSize
        le32(&mut out, offset); // CounterOffset
    }
    out.extend_from_slice(&body);
    out
}

/// Whether the query asks for object `index` (perflib's Global / Costly / index list).
fn wanted(query: &str, index: u32) -> bool {
    match query.trim() {
        "Global" => true,
        "Costly" => false,
        list => list.split_whitespace().any(|w| w.parse() == Ok(index)),
    }
}

/// `PM_OPEN_PROC`.
///
/// # Safety
///
/// `device_names` is NULL or a double-NUL-terminated UTF-16 multi-sz (winperf.h).
#[no_mangle]
pub unsafe extern "system" fn OpenPerformanceData(device_names: *mut u16) -> u32 {
    OPENED_WITH_NULL.store(device_names.is_null(), Relaxed);
    // SAFETY: the caller passes NULL or a valid multi-sz.
    let export = unsafe { read_multi_sz(device_names) };
    let mode = export.first().cloned().unwrap_or_else(|| "good".into());
    if let Some(index) = export.get(1).and_then(|s| s.parse().ok()) {
        NAME_INDEX.store(index, Relaxed);
    }
    if let Ok(mut m) = MODE.lock() {
        m.clone_from(&mode);
    }
    let third = if mode == "replay" { &REPLAY } else { &CALL_LOG };
    if let (Some(path), Ok(mut slot)) = (export.get(2), third.lock()) {
        *slot = Some(path.clone());
    }
    log_call(&format!("open {mode}"));
    match mode.as_str() {
        "hang-open" => loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        },
        "fail-open" => ERROR_ACCESS_DENIED,
        "chatty" => {
            println!("chatty provider: Open was called");
            ERROR_SUCCESS
        }
        _ => ERROR_SUCCESS,
    }
}

/// `PM_COLLECT_PROC`.
///
/// # Safety
///
/// The perflib contract ("How a performance DLL interfaces with a monitor"): `value` is a
/// NUL-terminated UTF-16 string, `*data` points to `*bytes` writable bytes, and `bytes` and
/// `num_objects` are valid.
#[no_mangle]
pub unsafe extern "system" fn CollectPerformanceData(
    value: *mut u16,
    data: *mut *mut c_void,
    bytes: *mut u32,
    num_objects: *mut u32,
) -> u32 {
    let mode = mode();
    let calls = CALLS.fetch_add(1, Relaxed) + 1;
    let index = NAME_INDEX.load(Relaxed);
    // SAFETY: `value` is a NUL-terminated UTF-16 string (the caller's contract).
    let query = unsafe { read_sz(value) };
    match mode.as_str() {
        "hang" => loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        },
        "panic" => panic!("bad provider: deliberate panic in Collect"),
        "abort" => std::process::abort(),
        "exit" => std::process::exit(0),
        "segfault" => {
            // A write into the null page. Not through address 0 itself: debug builds check
            // for null (and misaligned) pointers first and would abort with a panic instead
            // of faulting; 16 bytes past null is just as unmapped and passes those checks.
            let null_page = std::ptr::null_mut::<u8>().wrapping_add(16).cast::<u32>();
            // SAFETY: none — this is the deliberate bug: a write through a null-page pointer,
            // to show that the collector survives a provider that segfaults. It only ever
            // runs in the tests' `segfault` mode, inside a provider host process.
            unsafe { std::ptr::write_volatile(null_page, 1) };
            return ERROR_SUCCESS;
        }
        "chatty" => println!("chatty provider: Collect({query}) was called"),
        _ => {}
    }
    // SAFETY: `bytes` and `num_objects` are valid (the caller's contract).
    let (available, out_bytes, out_num) = unsafe { (*bytes, &mut *bytes, &mut *num_objects) };
    if mode == "fail-collect" {
        *out_bytes = 0;
        *out_num = 0;
        return ERROR_ACCESS_DENIED;
    }
    if mode == "greedy" {
        *out_bytes = 0;
        *out_num = 0;
        return ERROR_MORE_DATA;
    }
    if !wanted(&query, index) {
        *out_bytes = 0;
        *out_num = 0;
        return ERROR_SUCCESS;
    }
    let object = match mode.as_str() {
        "replay" => replayed_object(),
        _ => good_object(index, calls),
    };
    if object.is_empty() {
        *out_bytes = 0;
        *out_num = 0;
        return ERROR_SUCCESS;
    }
    let mut written = object.len();
    if object.len() > available as usize {
        *out_bytes = 0;
        *out_num = 0;
        return ERROR_MORE_DATA;
    }
    // SAFETY: `*data` points to `available` writable bytes and `object.len() <= available`.
    let start = unsafe { *data }.cast::<u8>();
    // SAFETY: as above; the source is a separate Vec.
    unsafe { std::ptr::copy_nonoverlapping(object.as_ptr(), start, object.len()) };
    if mode == "replay" {
        REPLAYED.fetch_add(1, Relaxed);
    }
    let mut reported = written;
    let mut count = 1;
    match mode.as_str() {
        "lie-bytes" => reported += 8,
        "odd-bytes" if written + 4 <= available as usize => {
            written += 4;
            reported = written;
        }
        "overrun" => {
            // SAFETY: none — the deliberate bug: 8 bytes written just past the end of the
            // buffer the collector gave (into the guard bytes the collector put there).
            unsafe { std::ptr::write_bytes(start.add(available as usize), 0x5A, 8) };
        }
        "bad-chain" => count = 2,
        _ => {}
    }
    // SAFETY: `start + written` is within (or one past) the buffer, written <= available.
    unsafe { *data = start.add(written).cast() };
    *out_bytes = reported as u32;
    *out_num = count;
    ERROR_SUCCESS
}

/// `PM_CLOSE_PROC`.
#[no_mangle]
pub extern "system" fn ClosePerformanceData() -> u32 {
    log_call(&format!("close {}", mode()));
    ERROR_SUCCESS
}
