//! [`ReadError`]: what is wrong with a block, or why it could not be read now.

use std::path::PathBuf;
use std::time::Duration;

use crate::layout::LAYOUT_VERSION;

/// What is wrong with a block, or why it could not be read now.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The block could not be opened.
    #[error(transparent)]
    Open(#[from] crate::error::Error),
    /// I/O on the block failed.
    #[error("I/O error on the block {path}: {source}")]
    Io {
        /// The block's path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The block is shorter than its header or than its header says, or it was truncated
    /// while it was being read (then the reader is spent: open the block again).
    #[error("the block is {actual} bytes long, expected at least {expected}")]
    Truncated {
        /// Bytes present.
        actual: u64,
        /// Bytes needed.
        expected: u64,
    },
    /// The first bytes are not a prfdata block.
    #[error("not a prfdata block: bad magic at offset 0")]
    BadMagic,
    /// A layout version this build does not read.
    #[error("block layout version {found} at offset 8; this build reads version {LAYOUT_VERSION}")]
    Version {
        /// The version found.
        found: u32,
    },
    /// A field with a value that cannot be right.
    #[error("invalid block: {what} at offset {offset} is {value}")]
    Field {
        /// Offset of the field in the block.
        offset: u64,
        /// What the field is.
        what: &'static str,
        /// Its value.
        value: u64,
    },
    /// Every process of the block is gone (killed: the last could not remove it), so the
    /// values are frozen. The process that activated it alone gone is not this: the block
    /// stays live while any member lives.
    #[error("every process of the app that published this block has exited without removing it")]
    OwnerGone,
    /// The writer kept changing the instance tables (or held `lock_ctrs`) for the whole
    /// deadline.
    #[error("the block stayed busy for {0:?} (a writer holds it, or died holding it)")]
    Busy(Duration),
    /// The block was rewritten since it was opened (its generation changed under the read), or
    /// it says it ended (its last member closed it, or a newer layout of a run-time block was
    /// published over it): reopen it. (A file replaced at the path, or resized, is what
    /// [`BlockReader::is_replaced`](super::BlockReader::is_replaced) tells.)
    #[error("the block was replaced, rewritten or closed since it was opened")]
    Replaced,
    /// The instance tables changed inside one sequence window without the sequence moving (a
    /// writer outside the protocol, or a corrupt block): what was read once no longer holds.
    #[error("the instance tables of the block changed without its sequence counter moving")]
    Inconsistent,
    /// The objects declare more instances, names and counters than the block has room for:
    /// their regions overlap, so their Collect answer could be larger than the block (a block
    /// prfdata writes never is; see [`BlockReader::answer_bound`](super::BlockReader::answer_bound)).
    #[error(
        "invalid block: its objects declare {need} bytes of Collect answer, more than the \
         block's {size} bytes: their regions overlap"
    )]
    Overlapping {
        /// The objects' answer at most.
        need: u64,
        /// The block's size.
        size: u64,
    },
}

impl ReadError {
    /// A short name of the kind of error, the same for every occurrence (for logging each kind
    /// once).
    ///
    /// # Examples
    ///
    /// ```
    /// use prfdata::reader::ReadError;
    /// assert_eq!(ReadError::Busy(std::time::Duration::from_millis(3)).kind(), "busy");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            ReadError::Open(_) => "open",
            ReadError::Io { .. } => "io",
            ReadError::Truncated { .. } => "truncated",
            ReadError::BadMagic => "magic",
            ReadError::Version { .. } => "version",
            ReadError::Field { what, .. } => what,
            ReadError::OwnerGone => "owner gone",
            ReadError::Busy(_) => "busy",
            ReadError::Replaced => "replaced",
            ReadError::Inconsistent => "inconsistent",
            ReadError::Overlapping { .. } => "overlapping objects",
        }
    }
}

/// [`ReadError::Field`] for the field at `offset`.
#[cold]
pub(crate) fn field(offset: u64, what: &'static str, value: impl Into<u64>) -> ReadError {
    ReadError::Field {
        offset,
        what,
        value: value.into(),
    }
}
