//! A map's object rules as `const fn`s over plain values, each returning the [`Violation`] it
//! finds. The map macro calls them with the values it parsed and reports the violation at the
//! token; prfdata's map validation calls them again on the map definition. Each rule has one
//! message, [`Violation::message`].
//!
//! # Examples
//!
//! ```
//! use prfdata_rules::map::{self, Violation};
//!
//! assert_eq!(map::offset(3), Err(Violation::OddOffset));
//! assert_eq!(map::language_id("00C"), Ok(()));
//! assert!(map::instance_max(0).unwrap_err().message().contains("1 to 1048576"));
//! ```

use crate::limits::{MAX_INSTANCES, MAX_INSTANCE_NAME};

/// A broken rule of a map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Violation {
    /// The app name breaks [`valid_app_name`](crate::valid_app_name).
    AppName,
    /// A symbolic offset is odd.
    OddOffset,
    /// A language id is not three hexadecimal digits.
    LanguageId,
    /// An object's most instances (`max`) is 0 or above [`MAX_INSTANCES`].
    InstanceMax,
    /// An object's longest instance name (`name_len`) is 0 or above [`MAX_INSTANCE_NAME`].
    InstanceNameLen,
}

impl Violation {
    /// What the rule asks, for a message that names the token first ("bad app name "x": ...").
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_rules::map::Violation;
    /// assert!(Violation::OddOffset.message().starts_with("offsets are even"));
    /// ```
    pub const fn message(self) -> &'static str {
        match self {
            Violation::AppName => {
                "it names the block file and the Services key, so it is 1 to 64 characters of \
                 A-Z a-z 0-9 _ . -, not starting with `.` and without `..`"
            }
            Violation::OddOffset => {
                "offsets are even (the name gets First Counter + offset, its help the odd index \
                 after it)"
            }
            Violation::LanguageId => {
                "a perflib language id is three hexadecimal digits, such as \"009\" (English), \
                 \"00C\" (French), \"007\" (German)"
            }
            Violation::InstanceMax => "`max` must be 1 to 1048576",
            Violation::InstanceNameLen => "`name_len` must be 1 to 1024",
        }
    }
}

/// The app-name rule ([`valid_app_name`](crate::valid_app_name)).
///
/// # Errors
///
/// [`Violation::AppName`].
pub const fn app_name(app: &str) -> Result<(), Violation> {
    if crate::valid_app_name(app) {
        Ok(())
    } else {
        Err(Violation::AppName)
    }
}

/// A symbolic offset is even: the name's index is First Counter + offset, the help's the odd
/// index after it (the lodctr design specification).
///
/// # Errors
///
/// [`Violation::OddOffset`].
pub const fn offset(offset: u32) -> Result<(), Violation> {
    if offset.is_multiple_of(2) {
        Ok(())
    } else {
        Err(Violation::OddOffset)
    }
}

/// A language id is three hexadecimal digits, as the registry's `Perflib\009`.
///
/// # Errors
///
/// [`Violation::LanguageId`].
pub const fn language_id(id: &str) -> Result<(), Violation> {
    let b = id.as_bytes();
    if b.len() != 3 {
        return Err(Violation::LanguageId);
    }
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_hexdigit() {
            return Err(Violation::LanguageId);
        }
        i += 1;
    }
    Ok(())
}

/// An object's most instances: 1 to [`MAX_INSTANCES`].
///
/// # Errors
///
/// [`Violation::InstanceMax`].
pub const fn instance_max(max: u64) -> Result<(), Violation> {
    if max >= 1 && max <= MAX_INSTANCES as u64 {
        Ok(())
    } else {
        Err(Violation::InstanceMax)
    }
}

/// An object's longest instance name: 1 to [`MAX_INSTANCE_NAME`] UTF-16 units.
///
/// # Errors
///
/// [`Violation::InstanceNameLen`].
pub const fn instance_name_len(name_len: u64) -> Result<(), Violation> {
    if name_len >= 1 && name_len <= MAX_INSTANCE_NAME as u64 {
        Ok(())
    } else {
        Err(Violation::InstanceNameLen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MAX_APP_NAME;

    /// The messages spell the limits out as text (a `const` message cannot format a number):
    /// they name the limits' values.
    #[test]
    fn the_messages_name_the_limits() {
        let app = format!("1 to {MAX_APP_NAME} characters");
        assert!(Violation::AppName.message().contains(&app));
        let max = format!("1 to {MAX_INSTANCES}");
        assert!(Violation::InstanceMax.message().ends_with(&max));
        let name = format!("1 to {MAX_INSTANCE_NAME}");
        assert!(Violation::InstanceNameLen.message().ends_with(&name));
    }

    #[test]
    fn each_rule_accepts_its_bounds_and_refuses_past_them() {
        assert_eq!(app_name("A"), Ok(()));
        assert_eq!(app_name("a..b"), Err(Violation::AppName));
        assert_eq!(offset(0), Ok(()));
        assert_eq!(offset(u32::MAX), Err(Violation::OddOffset));
        for good in ["009", "00C", "00c", "7fF"] {
            assert_eq!(language_id(good), Ok(()), "{good}");
        }
        for bad in ["", "7", "0009", "fr ", "00G"] {
            assert_eq!(language_id(bad), Err(Violation::LanguageId), "{bad}");
        }
        let top = u64::from(MAX_INSTANCES);
        assert_eq!(instance_max(1), Ok(()));
        assert_eq!(instance_max(top), Ok(()));
        assert_eq!(instance_max(0), Err(Violation::InstanceMax));
        assert_eq!(instance_max(top + 1), Err(Violation::InstanceMax));
        let top = u64::from(MAX_INSTANCE_NAME);
        assert_eq!(instance_name_len(top), Ok(()));
        assert_eq!(instance_name_len(0), Err(Violation::InstanceNameLen));
        assert_eq!(instance_name_len(top + 1), Err(Violation::InstanceNameLen));
    }
}
