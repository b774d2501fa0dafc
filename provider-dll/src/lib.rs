//! The perflib provider library for prfdata blocks: `libprfdata_provider.so`.
//!
//! It exports, `extern "system"` with UTF-16 strings, the three functions perflib calls
//! ("How a performance DLL interfaces with a monitor"), and serves every app named in the
//! `Linkage\Export` of the services whose `Library` it is. One generic library serves every app,
//! because each block describes itself: CPrfData compiled each app's map into that app's own DLL
//! instead.
//!
//! - [`OpenPerformanceData`]: read each app's First Counter / First Help from the registry
//!   (`PRFDATA_REGISTRY` honoured); an app that is not running yet is picked up by a later Collect.
//! - [`CollectPerformanceData`]: `Global`, `Costly`, an index list, or `Foreign` (no data),
//!   case-sensitive; anything else is a malformed index list (no data, logged once: [`query`]);
//!   with ERROR_MORE_DATA and the pointer and byte-count rules exactly as "How a performance DLL
//!   interfaces with a monitor" gives them.
//! - [`ClosePerformanceData`]: after the last Close, every mapping is released.
//!
//! No panic crosses the boundary; Collect is safe from several threads at once and never waits
//! long: blocks are read lock-free through their sequence counter, within [`COLLECT_BUDGET`];
//! on-demand values are waited for at most their apps' `OnDemand Timeout`, all apps together
//! and never past half the `Collect Timeout` ([`collect`]), so a provider waiting within its
//! bounds is never taken for a hung one. Its answer is at most
//! [`BlockReader::MAX_COLLECT_ANSWER`](prfdata::reader::BlockReader::MAX_COLLECT_ANSWER), the
//! size the collector's largest buffer comes from too.
//!
//! Module map: [`wide`] (UTF-16 arguments), [`query`] (the query string), [`apps`] (the apps
//! served and their blocks), [`select`] (the objects asked for and their instances' parents),
//! [`collect`] (sizing, ERROR_MORE_DATA, one sequence window per app), [`serialize`] (winperf.h
//! structures, written straight from the mapped block), [`logging`] (what it logs through
//! `log`, and how a host that `dlopen`s it sees it: `PRFDATA_PROVIDER_LOG`). Blocks are read
//! through [`prfdata::reader`]; names come from the registry through [`prfdata_registry`].

pub mod apps;
pub mod collect;
pub mod logging;
pub mod query;
pub mod select;
pub mod serialize;
pub mod wide;

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

use collect::Collected;
pub use collect::COLLECT_BUDGET;
use prfdata_wire::winperf::{ERROR_MORE_DATA, ERROR_SUCCESS};

/// The file this library was loaded from (`dladdr` of one of its functions): the provider
/// library's path when it is `dlopen`ed, the program's when it is linked in. `None` if the
/// loader cannot say.
///
/// # Examples
///
/// ```
/// // Linked into this doctest, the "library" is the doctest's own executable.
/// assert!(prfdata_provider::library_path().is_some_and(|p| p.is_absolute() || p.exists()));
/// ```
pub fn library_path() -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    let here = library_path as *const c_void;
    // SAFETY: `here` is the address of a function of this object; dladdr only writes `info`
    // (zeroed, so every pointer in it is null until dladdr sets it) and returns 0 on failure.
    let found = unsafe { libc::dladdr(here, info.as_mut_ptr()) };
    // SAFETY: `info` was zero-initialised and dladdr wrote it in full where it succeeded.
    let info = unsafe { info.assume_init() };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr's `dli_fname` is a NUL-terminated string owned by the loader, valid while
    // this object stays loaded (this call runs inside it); it is copied before returning.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(name.to_bytes()));
    Some(path.to_path_buf())
}

/// Returned by Open if it panicked (Win32 `ERROR_INTERNAL_ERROR`).
const ERROR_INTERNAL_ERROR: u32 = 1359;

/// perflib's Open: `DWORD APIENTRY OpenPerformanceData(LPWSTR lpDeviceNames)`.
///
/// `lpDeviceNames` is the REG_MULTI_SZ of `Linkage\Export` (the apps to serve), or null.
///
/// # Safety
///
/// `device_names` is null or points to a UTF-16 multi-string ending in two NULs.
#[no_mangle]
pub unsafe extern "system" fn OpenPerformanceData(device_names: *const u16) -> u32 {
    let result = catch_unwind(|| {
        logging::init_from_env();
        // SAFETY: the caller passes null or a double-NUL-terminated multi-string.
        let names = unsafe { wide::read_multi_sz(device_names, wide::MAX_MULTI_SZ) };
        apps::open(names)
    });
    result.unwrap_or(ERROR_INTERNAL_ERROR)
}

/// perflib's Collect: `DWORD APIENTRY CollectPerformanceData(LPWSTR lpValueName,
/// LPVOID *lppData, LPDWORD lpcbTotalBytes, LPDWORD lpNumObjectTypes)`.
///
/// On success `*lppData` advances by exactly `*lpcbTotalBytes` (a multiple of 8) and
/// `*lpNumObjectTypes` is set; when nothing is asked of this library both counts are 0 and the
/// pointer is unchanged; when the buffer is too small both counts are 0, the pointer is
/// unchanged, nothing is written past `*total_bytes` (and nothing at all unless an app changed its
/// instances during the call: see [`collect`]), and the result is ERROR_MORE_DATA (234).
///
/// # Safety
///
/// - `value_name` is null or a NUL-terminated UTF-16 string;
/// - `data`, `total_bytes` and `num_object_types` are valid for reads and writes;
/// - `*data` points to `*total_bytes` writable bytes (or `*total_bytes` is 0).
#[no_mangle]
pub unsafe extern "system" fn CollectPerformanceData(
    value_name: *const u16,
    data: *mut *mut c_void,
    total_bytes: *mut u32,
    num_object_types: *mut u32,
) -> u32 {
    if data.is_null() || total_bytes.is_null() || num_object_types.is_null() {
        return ERROR_SUCCESS;
    }
    let result = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the caller passes null or a NUL-terminated UTF-16 string.
        let text = unsafe { wide::read_sz(value_name, wide::MAX_VALUE_NAME) };
        let text = text.as_deref().unwrap_or("Global");
        let query = query::Query::parse(text);
        if query == query::Query::Malformed {
            query::log_malformed_once(text);
        }
        // SAFETY: the pointers were checked non-null; the caller guarantees they are valid and
        // that `*data` has `*total_bytes` writable bytes, which no one else touches during the
        // call (perflib's buffer belongs to this call).
        let (start, size) = unsafe { (*data, *total_bytes as usize) };
        let buf: &mut [u8] = if start.is_null() || size == 0 {
            &mut []
        } else {
            // SAFETY: see above: `size` writable bytes at `start`, exclusively ours for now.
            unsafe { std::slice::from_raw_parts_mut(start.cast::<u8>(), size) }
        };
        collect::collect(&query, buf)
    }));
    // SAFETY: the three pointers are non-null and valid for writes (the caller's contract).
    unsafe {
        match result {
            Ok(Collected::Data { bytes, objects }) if bytes > 0 => {
                *data = (*data).cast::<u8>().add(bytes).cast();
                *total_bytes = bytes as u32;
                *num_object_types = objects;
                ERROR_SUCCESS
            }
            Ok(Collected::MoreData) => {
                *total_bytes = 0;
                *num_object_types = 0;
                ERROR_MORE_DATA
            }
            // No data, or a panic: pointer unchanged, counts zero, success ("How a performance DLL
            // interfaces with a monitor": "Return this value in all other cases, even if no data is
            // returned or an error occurs").
            _ => {
                *total_bytes = 0;
                *num_object_types = 0;
                ERROR_SUCCESS
            }
        }
    }
}

/// perflib's Close: `DWORD APIENTRY ClosePerformanceData()`.
///
/// # Safety
///
/// None beyond perflib's protocol: call it once per successful Open.
#[no_mangle]
pub extern "system" fn ClosePerformanceData() -> u32 {
    catch_unwind(apps::close).unwrap_or(ERROR_INTERNAL_ERROR)
}
