//! The app-name rule: 1 to [`MAX_APP_NAME`] characters of `A-Z a-z 0-9 _ . -`, not starting
//! with `.`, without `..`. The name becomes the block file `<app>.blk`, the `.ini` / `.h` files
//! install writes and the `Services\<app>` key, and prfdata-untrusted's `check_name`, which
//! activation applies, refuses `..` anywhere.

use crate::limits::MAX_APP_NAME;

/// Whether `app` follows the app-name rule (see the [module docs](self)). A `const fn`, so a
/// map's validation can run at compile time.
///
/// # Examples
///
/// ```
/// use prfdata_rules::valid_app_name;
///
/// assert!(valid_app_name("Web-Server_2.1"));
/// assert!(!valid_app_name(".hidden"));
/// assert!(!valid_app_name("a..b"));
/// assert!(!valid_app_name("a b"));
/// ```
pub const fn valid_app_name(app: &str) -> bool {
    let b = app.as_bytes();
    if b.is_empty() || b.len() > MAX_APP_NAME || b[0] == b'.' {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if !(c.is_ascii_alphanumeric() || c == b'_' || c == b'-' || c == b'.') {
            return false;
        }
        if c == b'.' && i > 0 && b[i - 1] == b'.' {
            return false;
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_app_name_rule_accepts_file_safe_names_up_to_the_limit() {
        let longest = "a".repeat(MAX_APP_NAME);
        for good in ["A", "my.app", "x-1_y", "a.b.c", "a.", longest.as_str()] {
            assert!(valid_app_name(good), "{good:?}");
        }
        let too_long = "a".repeat(MAX_APP_NAME + 1);
        for bad in [
            "",
            ".a",
            "a..b",
            "a/b",
            r"a\b",
            "a b",
            "a\0",
            "é",
            too_long.as_str(),
        ] {
            assert!(!valid_app_name(bad), "{bad:?}");
        }
    }
}
