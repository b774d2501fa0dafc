//! [`check_name`]: the rule for names that become a path component or a registry key.
//!
//! A service (driver) name becomes the key `HKLM\SYSTEM\CurrentControlSet\Services\<name>`; an
//! app name (a map's `app`, an entry of a prfdata service's `Linkage\Export`) becomes the block
//! file `<shm_dir>/<app>.blk` and the files `<app>.ini` / `<app>.h` that install writes. Such a
//! name comes from an .INI file, the registry or the command line, so it is checked before it is
//! joined into anything:
//!
//! | refused | why |
//! |---|---|
//! | empty | names nothing (`Services\` would be the Services key itself) |
//! | `/` | leaves the folder of a path |
//! | `\` | leaves the registry key (`Services\A\B` is another key) |
//! | `..` | the parent folder; refused anywhere in the name, so no joining can produce it |
//! | NUL | ends a C string early: the name the kernel or perflib sees is another one |
//! | control characters | invisible or rewriting in terminals and logs; Windows key names are printable |
//! | too long | see [`MAX_SERVICE_NAME`] and [`MAX_APP_NAME`] |

use std::fmt;

/// The longest service (driver) name, in UTF-16 code units: a Windows registry key name holds
/// at most 255 characters ("Registry Element Size Limits"), and a service name is a key name.
///
/// # Examples
///
/// ```
/// use prfdata_untrusted::{check_name, NameKind, MAX_SERVICE_NAME};
/// assert!(check_name(NameKind::Service, &"s".repeat(MAX_SERVICE_NAME)).is_ok());
/// ```
pub const MAX_SERVICE_NAME: usize = 255;

/// The longest app name, in bytes: prfdata's map rule ([`prfdata_rules::MAX_APP_NAME`]), as
/// many as a prfdata block's header keeps.
/// Well inside a file name's 255 bytes with the `.blk` suffix and the temporary names beside it.
///
/// # Examples
///
/// ```
/// use prfdata_untrusted::{check_name, NameKind, MAX_APP_NAME};
/// assert!(check_name(NameKind::App, &"a".repeat(MAX_APP_NAME)).is_ok());
/// assert!(check_name(NameKind::App, &"a".repeat(MAX_APP_NAME + 1)).is_err());
/// ```
pub const MAX_APP_NAME: usize = prfdata_rules::MAX_APP_NAME;

/// What a name names, which sets its length limit and how messages call it.
///
/// # Examples
///
/// ```
/// use prfdata_untrusted::NameKind;
/// assert_eq!(NameKind::Service.max_len(), 255);
/// assert_eq!(NameKind::App.to_string(), "app");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    /// A service (driver) name: a key under `Services`.
    Service,
    /// An app name: a block file, an .INI / .h file name.
    App,
}

impl NameKind {
    /// The length limit: [`MAX_SERVICE_NAME`] UTF-16 units, or [`MAX_APP_NAME`] bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(prfdata_untrusted::NameKind::App.max_len(), 64);
    /// ```
    pub fn max_len(self) -> usize {
        match self {
            Self::Service => MAX_SERVICE_NAME,
            Self::App => MAX_APP_NAME,
        }
    }

    /// The length of `value` as this kind counts it.
    fn len_of(self, value: &str) -> usize {
        match self {
            Self::Service => value.encode_utf16().count(),
            Self::App => value.len(),
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Self::Service => "characters",
            Self::App => "bytes",
        }
    }
}

impl fmt::Display for NameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Service => "service",
            Self::App => "app",
        })
    }
}

/// Which rule a name broke.
///
/// # Examples
///
/// ```
/// use prfdata_untrusted::NameRule;
/// assert!(NameRule::DotDot.to_string().contains(".."));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// The name is empty.
    Empty,
    /// The name is longer than its kind allows.
    TooLong {
        /// Its length (UTF-16 units for a service, bytes for an app).
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The name contains `/`.
    Slash,
    /// The name contains `\`.
    Backslash,
    /// The name contains `..`.
    DotDot,
    /// The name contains a NUL character.
    Nul,
    /// The name contains a control character.
    Control {
        /// The character.
        ch: char,
    },
}

impl fmt::Display for NameRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("it is empty"),
            Self::TooLong { len, max } => write!(f, "it is {len} long, over the limit of {max}"),
            Self::Slash => f.write_str("it contains `/`"),
            Self::Backslash => f.write_str(r"it contains `\`"),
            Self::DotDot => f.write_str("it contains `..`"),
            Self::Nul => f.write_str("it contains a NUL character"),
            Self::Control { ch } => write!(f, "it contains the control character {ch:?}"),
        }
    }
}

/// A name refused by [`check_name`]: the value, the rule it broke, and the whole rule.
///
/// # Examples
///
/// ```
/// use prfdata_untrusted::{check_name, NameKind};
/// let err = check_name(NameKind::Service, r"Evil\Performance").unwrap_err();
/// assert!(err.to_string().contains(r#""Evil\\Performance""#), "{err}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{kind} name {value:?} is refused: {rule}. A {kind} name becomes one registry key and one file \
     name, so it must be 1 to {} {} long, without `/`, `\\`, `..`, NUL or control characters",
    kind.max_len(),
    kind.unit()
)]
pub struct BadName {
    /// What the name was for.
    pub kind: NameKind,
    /// The name as given.
    pub value: String,
    /// The rule it broke.
    pub rule: NameRule,
}

/// Checks a name that becomes a path component or a registry key (see the
/// [module docs](self)).
///
/// # Errors
///
/// [`BadName`] naming the value and the first rule it breaks.
///
/// # Examples
///
/// ```
/// use prfdata_untrusted::{check_name, NameKind, NameRule};
///
/// assert!(check_name(NameKind::Service, "PrfDataDemo").is_ok());
/// assert!(check_name(NameKind::Service, "My Service (x86)").is_ok());
/// assert_eq!(check_name(NameKind::App, "../../etc/x").unwrap_err().rule, NameRule::Slash);
/// assert_eq!(check_name(NameKind::App, "a..b").unwrap_err().rule, NameRule::DotDot);
/// assert_eq!(check_name(NameKind::App, &"x".repeat(65)).unwrap_err().rule,
///            NameRule::TooLong { len: 65, max: 64 });
/// ```
pub fn check_name(kind: NameKind, value: &str) -> Result<(), BadName> {
    let refuse = |rule| {
        Err(BadName {
            kind,
            value: value.to_owned(),
            rule,
        })
    };
    if value.is_empty() {
        return refuse(NameRule::Empty);
    }
    let len = kind.len_of(value);
    if len > kind.max_len() {
        return refuse(NameRule::TooLong {
            len,
            max: kind.max_len(),
        });
    }
    for ch in value.chars() {
        let rule = match ch {
            '/' => NameRule::Slash,
            '\\' => NameRule::Backslash,
            '\0' => NameRule::Nul,
            c if c.is_control() => NameRule::Control { ch: c },
            _ => continue,
        };
        return refuse(rule);
    }
    if value.contains("..") {
        return refuse(NameRule::DotDot);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_is_enforced() {
        let cases: [(&str, NameRule); 7] = [
            ("", NameRule::Empty),
            ("a/b", NameRule::Slash),
            (r"a\b", NameRule::Backslash),
            ("..", NameRule::DotDot),
            ("a\0b", NameRule::Nul),
            ("a\nb", NameRule::Control { ch: '\n' }),
            ("a\u{1b}[2J", NameRule::Control { ch: '\u{1b}' }),
        ];
        for (value, rule) in cases {
            for kind in [NameKind::Service, NameKind::App] {
                assert_eq!(check_name(kind, value).unwrap_err().rule, rule, "{value:?}");
            }
        }
    }

    #[test]
    fn lengths_are_counted_in_each_kinds_unit() {
        // 255 two-byte characters: 255 UTF-16 units (a fine service name), 510 bytes (no app).
        let name = "é".repeat(255);
        assert!(check_name(NameKind::Service, &name).is_ok());
        assert!(check_name(NameKind::Service, &format!("{name}x")).is_err());
        assert!(check_name(NameKind::App, &"é".repeat(32)).is_ok());
        assert!(check_name(NameKind::App, &"é".repeat(33)).is_err());
    }

    #[test]
    fn the_message_escapes_the_value() {
        let err = check_name(NameKind::App, "x\u{1b}]0;pwned\u{7}").unwrap_err();
        assert!(!err.to_string().contains('\u{1b}'), "{err}");
    }
}
