//! Typed registry values: REG_SZ, REG_EXPAND_SZ, REG_DWORD and REG_MULTI_SZ.
//!
//! The four types perflib uses. Besides the typed form, a value converts to and from the byte
//! form `RegQueryValueExW` returns, so a Windows backend and this one agree on what a value is:
//!
//! ```text
//! REG_SZ / REG_EXPAND_SZ   UTF-16LE text, then one 0 u16
//! REG_DWORD                4 bytes, little-endian
//! REG_MULTI_SZ             "a\0b\0c\0\0" in UTF-16LE: every entry ends with 0, one extra 0 ends
//!                          the list (an empty list is a single 0)
//! ```

use std::fmt;

/// The type of a registry value, named as `reg.exe` and winnt.h name it.
///
/// # Examples
///
/// ```
/// use prfdata_registry::ValueType;
///
/// assert_eq!("REG_DWORD".parse::<ValueType>(), Ok(ValueType::Dword));
/// assert_eq!(ValueType::MultiSz.to_string(), "REG_MULTI_SZ");
/// assert_eq!(ValueType::Dword.code(), 4);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueType {
    /// `REG_SZ` (1): a string.
    Sz,
    /// `REG_EXPAND_SZ` (2): a string that may hold `%VARIABLE%` references.
    ExpandSz,
    /// `REG_DWORD` (4): a 32-bit number.
    Dword,
    /// `REG_MULTI_SZ` (7): a list of strings.
    MultiSz,
}

impl ValueType {
    /// Every supported type, in winnt.h order.
    pub const ALL: [ValueType; 4] = [Self::Sz, Self::ExpandSz, Self::Dword, Self::MultiSz];

    /// The name `reg.exe` prints, e.g. `REG_DWORD`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(prfdata_registry::ValueType::ExpandSz.name(), "REG_EXPAND_SZ");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::Sz => "REG_SZ",
            Self::ExpandSz => "REG_EXPAND_SZ",
            Self::Dword => "REG_DWORD",
            Self::MultiSz => "REG_MULTI_SZ",
        }
    }

    /// The winnt.h type code (`REG_SZ` is 1, `REG_EXPAND_SZ` 2, `REG_DWORD` 4, `REG_MULTI_SZ` 7).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(prfdata_registry::ValueType::MultiSz.code(), 7);
    /// ```
    pub fn code(self) -> u32 {
        match self {
            Self::Sz => 1,
            Self::ExpandSz => 2,
            Self::Dword => 4,
            Self::MultiSz => 7,
        }
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A type name that is not one of the supported registry types.
///
/// # Examples
///
/// ```
/// let err = "REG_BINARY".parse::<prfdata_registry::ValueType>().unwrap_err();
/// assert!(err.to_string().contains("REG_BINARY"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unsupported registry type `{0}` (expected REG_SZ, REG_EXPAND_SZ, REG_DWORD or REG_MULTI_SZ)"
)]
pub struct UnknownValueType(pub String);

impl std::str::FromStr for ValueType {
    type Err = UnknownValueType;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownValueType(s.to_owned()))
    }
}

/// A typed registry value.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{Value, ValueType};
///
/// let v = Value::MultiSz(vec!["1848".into(), "Device Name".into()]);
/// assert_eq!(v.value_type(), ValueType::MultiSz);
/// assert_eq!(v.display_data(), r"1848\0Device Name");
/// assert_eq!(Value::Dword(1848).display_data(), "0x738");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// `REG_SZ`.
    Sz(String),
    /// `REG_EXPAND_SZ` (stored unexpanded, as the registry does).
    ExpandSz(String),
    /// `REG_DWORD`.
    Dword(u32),
    /// `REG_MULTI_SZ`: the entries, without their terminators.
    MultiSz(Vec<String>),
}

/// Why bytes could not be read as a value of a given type.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{Value, ValueType};
///
/// let err = Value::from_reg_bytes(ValueType::Dword, &[1, 2]).unwrap_err();
/// assert!(err.to_string().contains("4 bytes"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueBytesError {
    /// A `REG_DWORD` that is not exactly 4 bytes long.
    #[error("REG_DWORD data must be 4 bytes, got {0}")]
    DwordLength(usize),
    /// String data with an odd number of bytes (UTF-16 needs pairs).
    #[error("{ty} data has an odd length ({len} bytes), not UTF-16")]
    OddLength {
        /// The value's type.
        ty: ValueType,
        /// Its length in bytes.
        len: usize,
    },
    /// String data that is not valid UTF-16.
    #[error("{ty} data is not valid UTF-16 at code unit {at}")]
    BadUtf16 {
        /// The value's type.
        ty: ValueType,
        /// Index of the first code unit that does not decode.
        at: usize,
    },
}

impl Value {
    /// The value's type.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_registry::{Value, ValueType};
    /// assert_eq!(Value::Sz("x".into()).value_type(), ValueType::Sz);
    /// ```
    pub fn value_type(&self) -> ValueType {
        match self {
            Self::Sz(_) => ValueType::Sz,
            Self::ExpandSz(_) => ValueType::ExpandSz,
            Self::Dword(_) => ValueType::Dword,
            Self::MultiSz(_) => ValueType::MultiSz,
        }
    }

    /// The number, if this is a `REG_DWORD`.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_registry::Value;
    /// assert_eq!(Value::Dword(7).as_dword(), Some(7));
    /// assert_eq!(Value::Sz("7".into()).as_dword(), None);
    /// ```
    pub fn as_dword(&self) -> Option<u32> {
        match self {
            Self::Dword(n) => Some(*n),
            _ => None,
        }
    }

    /// The text, if this is a `REG_SZ` or `REG_EXPAND_SZ`.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_registry::Value;
    /// assert_eq!(Value::ExpandSz("%HOME%/x.so".into()).as_str(), Some("%HOME%/x.so"));
    /// ```
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Sz(s) | Self::ExpandSz(s) => Some(s),
            _ => None,
        }
    }

    /// The entries, if this is a `REG_MULTI_SZ`.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_registry::Value;
    /// let v = Value::MultiSz(vec!["a".into()]);
    /// assert_eq!(v.as_multi_sz(), Some(&["a".to_string()][..]));
    /// ```
    pub fn as_multi_sz(&self) -> Option<&[String]> {
        match self {
            Self::MultiSz(v) => Some(v),
            _ => None,
        }
    }

    /// The data as `reg query` prints it: a `REG_DWORD` in hex (`0x738`), a `REG_MULTI_SZ`'s
    /// entries joined with the two characters `\0`, strings as they are.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_registry::Value;
    /// assert_eq!(Value::Dword(0).display_data(), "0x0");
    /// assert_eq!(Value::MultiSz(vec!["a".into(), "b".into()]).display_data(), r"a\0b");
    /// ```
    pub fn display_data(&self) -> String {
        match self {
            Self::Sz(s) | Self::ExpandSz(s) => s.clone(),
            Self::Dword(n) => format!("{n:#x}"),
            Self::MultiSz(v) => v.join("\\0"),
        }
    }

    /// The value in Windows' byte form, as `RegQueryValueExW` returns it (see the module docs).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_registry::Value;
    ///
    /// let v = Value::MultiSz(vec!["1848".into(), "Obj".into()]);
    /// let bytes = v.to_reg_bytes();
    /// // "1848\0Obj\0\0" in UTF-16LE: 4 + 1 + 3 + 1 + 1 code units.
    /// assert_eq!(bytes.len(), 10 * 2);
    /// assert_eq!(&bytes[bytes.len() - 4..], &[0, 0, 0, 0]);
    /// assert_eq!(Value::Dword(0x738).to_reg_bytes(), vec![0x38, 0x07, 0, 0]);
    /// ```
    pub fn to_reg_bytes(&self) -> Vec<u8> {
        fn push_str(out: &mut Vec<u8>, s: &str) {
            for unit in s.encode_utf16().chain(std::iter::once(0)) {
                out.extend_from_slice(&unit.to_le_bytes());
            }
        }
        let mut out = Vec::new();
        match self {
            Self::Sz(s) | Self::ExpandSz(s) => push_str(&mut out, s),
            Self::Dword(n) => out.extend_from_slice(&n.to_le_bytes()),
            Self::MultiSz(entries) => {
                for e in entries {
                    push_str(&mut out, e);
                }
                out.extend_from_slice(&0u16.to_le_bytes());
            }
        }
        out
    }

    /// Reads a value of type `ty` from Windows' byte form. Lenient where Windows is: a missing
    /// terminator is accepted, and an empty entry ends a `REG_MULTI_SZ` list.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_registry::{Value, ValueType};
    ///
    /// let v = Value::MultiSz(vec!["1848".into(), "Device Name".into()]);
    /// assert_eq!(Value::from_reg_bytes(ValueType::MultiSz, &v.to_reg_bytes()), Ok(v));
    /// ```
    pub fn from_reg_bytes(ty: ValueType, bytes: &[u8]) -> Result<Self, ValueBytesError> {
        if ty == ValueType::Dword {
            let arr: [u8; 4] = bytes
                .try_into()
                .map_err(|_| ValueBytesError::DwordLength(bytes.len()))?;
            return Ok(Self::Dword(u32::from_le_bytes(arr)));
        }
        if !bytes.len().is_multiple_of(2) {
            return Err(ValueBytesError::OddLength {
                ty,
                len: bytes.len(),
            });
        }
        let units: Vec<u16> = bytes
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        let decode = |start: usize, part: &[u16]| {
            String::from_utf16(part).map_err(|_| {
                let bad = char::decode_utf16(part.iter().copied())
                    .position(|r| r.is_err())
                    .unwrap_or(0);
                ValueBytesError::BadUtf16 {
                    ty,
                    at: start + bad,
                }
            })
        };
        match ty {
            ValueType::Sz | ValueType::ExpandSz => {
                let end = units.iter().position(|&u| u == 0).unwrap_or(units.len());
                let s = decode(0, &units[..end])?;
                Ok(if ty == ValueType::Sz {
                    Self::Sz(s)
                } else {
                    Self::ExpandSz(s)
                })
            }
            ValueType::MultiSz => {
                let mut entries = Vec::new();
                let mut start = 0;
                while start < units.len() {
                    let end = units[start..]
                        .iter()
                        .position(|&u| u == 0)
                        .map_or(units.len(), |p| start + p);
                    if end == start {
                        break;
                    }
                    entries.push(decode(start, &units[start..end])?);
                    start = end + 1;
                }
                Ok(Self::MultiSz(entries))
            }
            ValueType::Dword => unreachable!("handled above"),
        }
    }

    /// Parses data given on a `reg add` command line: `REG_DWORD` in decimal or `0x` hex,
    /// `REG_MULTI_SZ` entries split on `separator` (reg.exe's default is the two characters
    /// `\0`), strings as they are.
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata_registry::{Value, ValueType};
    ///
    /// assert_eq!(Value::parse_reg_data(ValueType::Dword, "0x738", r"\0"), Ok(Value::Dword(1848)));
    /// assert_eq!(Value::parse_reg_data(ValueType::Dword, "1848", r"\0"), Ok(Value::Dword(1848)));
    /// assert_eq!(
    ///     Value::parse_reg_data(ValueType::MultiSz, r"a\0b", r"\0"),
    ///     Ok(Value::MultiSz(vec!["a".into(), "b".into()]))
    /// );
    /// assert!(Value::parse_reg_data(ValueType::Dword, "lots", r"\0").is_err());
    /// ```
    pub fn parse_reg_data(ty: ValueType, data: &str, separator: &str) -> Result<Self, BadRegData> {
        match ty {
            ValueType::Sz => Ok(Self::Sz(data.to_owned())),
            ValueType::ExpandSz => Ok(Self::ExpandSz(data.to_owned())),
            ValueType::Dword => {
                let t = data.trim();
                let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                    Some(hex) => u32::from_str_radix(hex, 16),
                    None => t.parse::<u32>(),
                };
                parsed.map(Self::Dword).map_err(|_| BadRegData {
                    ty,
                    data: data.to_owned(),
                })
            }
            ValueType::MultiSz => {
                if data.is_empty() {
                    return Ok(Self::MultiSz(Vec::new()));
                }
                let sep = if separator.is_empty() {
                    "\\0"
                } else {
                    separator
                };
                Ok(Self::MultiSz(
                    data.split(sep)
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect(),
                ))
            }
        }
    }
}

/// `reg add` data that does not fit the requested type.
///
/// # Examples
///
/// ```
/// use prfdata_registry::{Value, ValueType};
/// let err = Value::parse_reg_data(ValueType::Dword, "-1", r"\0").unwrap_err();
/// assert!(err.to_string().contains("REG_DWORD"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{data}` is not valid {ty} data")]
pub struct BadRegData {
    /// The requested type.
    pub ty: ValueType,
    /// The data as given.
    pub data: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_type_through_bytes() {
        let values = [
            Value::Sz("héllo".into()),
            Value::ExpandSz("%HOME%".into()),
            Value::Dword(u32::MAX),
            Value::MultiSz(vec![]),
            Value::MultiSz(vec!["1".into(), "One".into()]),
        ];
        for v in values {
            assert_eq!(
                Value::from_reg_bytes(v.value_type(), &v.to_reg_bytes()),
                Ok(v)
            );
        }
    }

    #[test]
    fn empty_multi_sz_is_one_terminator() {
        assert_eq!(Value::MultiSz(vec![]).to_reg_bytes(), vec![0, 0]);
    }

    #[test]
    fn hostile_bytes_are_errors() {
        assert!(Value::from_reg_bytes(ValueType::Sz, &[0x41]).is_err());
        // A lone low surrogate.
        assert!(Value::from_reg_bytes(ValueType::MultiSz, &[0x00, 0xDC, 0, 0]).is_err());
        assert!(Value::from_reg_bytes(ValueType::Dword, &[]).is_err());
    }

    #[test]
    fn type_names_parse_case_insensitively() {
        assert_eq!("reg_multi_sz".parse(), Ok(ValueType::MultiSz));
        assert!("REG_QWORD".parse::<ValueType>().is_err());
    }
}
