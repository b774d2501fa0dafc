//! What is wrong in PERF_DATA_BLOCK bytes, and where.

/// Something wrong in PERF_DATA_BLOCK bytes, with the offset where it is.
///
/// # Examples
///
/// ```
/// let err = prfdata_wire::snapshot::decode(&[0u8; 100]).unwrap_err();
/// assert_eq!(err.offset(), 0);
/// assert!(err.to_string().contains("offset 0"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// A structure does not fit in the bytes that remain for it.
    #[error("truncated {what} at offset {offset}: needs {need} bytes, {available} available")]
    Truncated {
        /// Where the structure starts.
        offset: usize,
        /// Which structure.
        what: &'static str,
        /// Bytes it needs.
        need: u64,
        /// Bytes there are (up to the end of its container).
        available: u64,
    },
    /// The block does not start with `"PERF"` in UTF-16.
    #[error("no PERF_DATA_BLOCK at offset {offset}: the signature is not \"PERF\" in UTF-16")]
    Signature {
        /// Where the signature is.
        offset: usize,
    },
    /// A field has a value the format does not allow.
    #[error("{what} at offset {offset} is {value}: {expected}")]
    Field {
        /// Where the field is.
        offset: usize,
        /// The structure and field, e.g. `PERF_OBJECT_TYPE.HeaderLength`.
        what: &'static str,
        /// The value found.
        value: i64,
        /// What the format requires.
        expected: &'static str,
    },
    /// A name is not valid UTF-16.
    #[error("{what} at offset {offset} is not valid UTF-16")]
    Utf16 {
        /// Where the name starts.
        offset: usize,
        /// Which name.
        what: &'static str,
    },
}

impl DecodeError {
    /// The offset, from the start of the input, where the problem is.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = prfdata_wire::error::DecodeError::Signature { offset: 0 };
    /// assert_eq!(err.offset(), 0);
    /// ```
    pub fn offset(&self) -> usize {
        match *self {
            Self::Truncated { offset, .. }
            | Self::Signature { offset }
            | Self::Field { offset, .. }
            | Self::Utf16 { offset, .. } => offset,
        }
    }
}
