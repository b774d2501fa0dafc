//! UTF-16 strings from the caller: `LPWSTR` and REG_MULTI_SZ, read with a bound.
//!
//! perflib strings are UTF-16 (`WCHAR`, two bytes), not Linux's four-byte `wchar_t`.

/// The longest `lpValueName` read (longer input is cut there).
pub const MAX_VALUE_NAME: usize = 32 * 1024;
/// The longest `lpDeviceNames` multi-string read.
pub const MAX_MULTI_SZ: usize = 1 << 20;

/// Reads a NUL-terminated UTF-16 string of at most `max` units.
///
/// # Safety
///
/// `ptr` is null, or points to readable UTF-16 units up to and including a NUL or `max` units,
/// whichever comes first.
pub unsafe fn read_sz(ptr: *const u16, max: usize) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    let mut units = Vec::new();
    for i in 0..max {
        // SAFETY: the caller guarantees units up to the NUL (or `max`) are readable, and we stop
        // at the first NUL.
        let unit = unsafe { ptr.add(i).read_unaligned() };
        if unit == 0 {
            break;
        }
        units.push(unit);
    }
    Some(String::from_utf16_lossy(&units))
}

/// Reads a REG_MULTI_SZ: strings separated by NUL, ended by an empty string (two NULs).
///
/// # Safety
///
/// `ptr` is null, or points to readable UTF-16 units up to and including the terminating double
/// NUL or `max` units, whichever comes first.
pub unsafe fn read_multi_sz(ptr: *const u16, max: usize) -> Vec<String> {
    let mut out = Vec::new();
    if ptr.is_null() {
        return out;
    }
    let mut current = Vec::new();
    for i in 0..max {
        // SAFETY: as for `read_sz`: we stop at the double NUL the caller guarantees.
        let unit = unsafe { ptr.add(i).read_unaligned() };
        if unit != 0 {
            current.push(unit);
            continue;
        }
        if current.is_empty() {
            break;
        }
        out.push(String::from_utf16_lossy(&current));
        current.clear();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wide(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    #[test]
    fn multi_sz_stops_at_the_double_nul() {
        let mut buf = wide("A\0Bé\0\0C\0\0");
        buf.push(0);
        // SAFETY: `buf` ends in NULs.
        let names = unsafe { read_multi_sz(buf.as_ptr(), buf.len()) };
        assert_eq!(names, ["A", "Bé"]);
        // SAFETY: null is allowed.
        assert!(unsafe { read_multi_sz(std::ptr::null(), 10) }.is_empty());
    }

    #[test]
    fn sz_is_bounded() {
        let buf = wide("Global");
        // SAFETY: we read at most 3 units of a 6-unit buffer.
        assert_eq!(unsafe { read_sz(buf.as_ptr(), 3) }.as_deref(), Some("Glo"));
    }
}
