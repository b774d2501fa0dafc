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
    // SAFETY (both reads): the caller guarantees units up to the NUL (or `max`) are readable;
    // the first pass stops at the first NUL, the second reads the `len` units before it.
    let unit = |i: usize| unsafe { ptr.add(i).read_unaligned() };
    let len = (0..max).position(|i| unit(i) == 0).unwrap_or(max);
    // One allocation, sized for the usual all-ASCII name (a Collect reads one per call).
    let mut out = String::with_capacity(len);
    out.extend(
        char::decode_utf16((0..len).map(unit)).map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER)),
    );
    Some(out)
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
    fn sz_decodes_as_from_utf16_lossy_does() {
        // "Bé", a pair for U+1F600, a lone high surrogate, "x", then the NUL.
        let units = [0x42, 0xE9, 0xD83D, 0xDE00, 0xD800, 0x78, 0, 0x41];
        // SAFETY: the NUL is inside the buffer.
        let read = unsafe { read_sz(units.as_ptr(), units.len()) };
        assert_eq!(
            read.as_deref(),
            Some(String::from_utf16_lossy(&units[..6]).as_str())
        );
        assert_eq!(read.as_deref(), Some("Bé\u{1F600}\u{FFFD}x"));
        // SAFETY: null is allowed.
        assert_eq!(unsafe { read_sz(std::ptr::null(), 4) }, None);
    }

    #[test]
    fn sz_is_bounded() {
        let buf = wide("Global");
        // SAFETY: we read at most 3 units of a 6-unit buffer.
        assert_eq!(unsafe { read_sz(buf.as_ptr(), 3) }.as_deref(), Some("Glo"));
    }
}
