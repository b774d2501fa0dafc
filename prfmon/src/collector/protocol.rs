//! The provider host's protocol: length-prefixed postcard frames over the host's stdin
//! (requests) and stdout (responses).
//!
//! ```text
//! frame:  u32 little-endian payload length | postcard(Request or Response)
//!
//! host → parent   Hello{version}                 once, at start, before dlopen
//! host → parent   Ready | Failed{message}        once, after dlopen
//! parent → host   Open{slot, names, export}      → Opened{slot, status} | Failed{message}
//!                 Collect{slot, value, buffer_len} → Collected{slot, raw}
//!                 Close{slot}                    → Closed{slot, status}
//! parent closes the host's stdin                 → the host exits 0
//! ```
//!
//! One request is outstanding at a time; each gets exactly one response. A slot is the
//! parent's number for one service of the host's library. `Hello` before the library is
//! loaded tells a host that works apart from a library that kills it while loading: only the
//! second is the provider's fault.
//!
//! # Examples
//!
//! ```
//! use prfmon::collector::protocol::{read_frame, write_frame, Response};
//! let mut wire = Vec::new();
//! write_frame(&mut wire, &Response::Ready)?;
//! let back: Option<Response> = read_frame(&mut wire.as_slice())?;
//! assert_eq!(back, Some(Response::Ready));
//! # Ok::<(), prfmon::collector::protocol::ProtocolError>(())
//! ```

use std::io::{Read, Write};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::library::{EntryNames, RawCollect};

/// The protocol version a host announces in [`Response::Hello`].
pub const PROTOCOL_VERSION: u32 = 1;

/// The largest frame either side accepts: the largest Collect buffer (64 MiB) plus room for
/// the rest of the response.
pub const MAX_FRAME: u32 = 64 * 1024 * 1024 + 4096;

/// A request from the collector to its host.
///
/// # Examples
///
/// ```
/// use prfmon::collector::protocol::Request;
/// let r = Request::Close { slot: 0 };
/// assert_eq!(r, Request::Close { slot: 0 });
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// Resolve a service's exports and call its Open with `export` (`Linkage\Export`).
    Open {
        /// The service's slot.
        slot: u32,
        /// Its `Open`, `Collect` and `Close` values.
        names: EntryNames,
        /// Its `Linkage\Export` strings.
        export: Vec<String>,
    },
    /// Call the service's Collect with a `buffer_len`-byte buffer.
    Collect {
        /// The service's slot.
        slot: u32,
        /// `Global`, `Costly` or an index list.
        value: String,
        /// The buffer size.
        buffer_len: u32,
    },
    /// Call the service's Close.
    Close {
        /// The service's slot.
        slot: u32,
    },
}

/// A response from the host.
///
/// # Examples
///
/// ```
/// use prfmon::collector::protocol::Response;
/// assert_ne!(Response::Ready, Response::Failed { message: "x".into() });
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Response {
    /// The host is running and speaks this protocol version; it loads the library next.
    Hello {
        /// [`PROTOCOL_VERSION`].
        version: u32,
    },
    /// The library is loaded.
    Ready,
    /// The library or an export could not be loaded, or a request named an unknown slot.
    Failed {
        /// What went wrong.
        message: String,
    },
    /// Open returned.
    Opened {
        /// The service's slot.
        slot: u32,
        /// Open's return value.
        status: u32,
    },
    /// Collect returned.
    Collected {
        /// The service's slot.
        slot: u32,
        /// What it did.
        raw: RawCollect,
    },
    /// Close returned.
    Closed {
        /// The service's slot.
        slot: u32,
        /// Close's return value.
        status: u32,
    },
}

/// A frame could not be written or read.
///
/// # Examples
///
/// ```
/// use prfmon::collector::protocol::{read_frame, ProtocolError, Response};
/// let wire = u32::MAX.to_le_bytes();
/// let err = read_frame::<Response>(&mut wire.as_slice()).unwrap_err();
/// assert!(matches!(err, ProtocolError::TooLarge { .. }));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// The pipe failed.
    #[error("provider host pipe: {0}")]
    Io(#[from] std::io::Error),
    /// A frame's length is over [`MAX_FRAME`].
    #[error("provider host frame of {len} bytes is over the {MAX_FRAME}-byte limit")]
    TooLarge {
        /// The announced length.
        len: u32,
    },
    /// The stream ended inside a frame.
    #[error("provider host pipe closed inside a frame")]
    Truncated,
    /// A payload is not a valid message.
    #[error("provider host sent a malformed {len}-byte frame: {source}")]
    Malformed {
        /// The payload length.
        len: u32,
        /// What postcard said.
        source: postcard::Error,
    },
    /// A message could not be encoded.
    #[error("cannot encode a provider host message: {0}")]
    Encode(postcard::Error),
}

/// Writes one frame and flushes.
///
/// # Examples
///
/// See the module docs.
pub fn write_frame<W: Write, T: Serialize>(out: &mut W, message: &T) -> Result<(), ProtocolError> {
    let payload = postcard::to_stdvec(message).map_err(ProtocolError::Encode)?;
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|&l| l <= MAX_FRAME)
        .ok_or(ProtocolError::TooLarge {
            len: u32::try_from(payload.len()).unwrap_or(u32::MAX),
        })?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(&payload)?;
    out.flush()?;
    Ok(())
}

/// Reads one frame; `Ok(None)` if the stream ended cleanly before it.
///
/// # Examples
///
/// ```
/// use prfmon::collector::protocol::{read_frame, Response};
/// assert_eq!(read_frame::<Response>(&mut [].as_slice())?, None);
/// # Ok::<(), prfmon::collector::protocol::ProtocolError>(())
/// ```
pub fn read_frame<T: DeserializeOwned>(input: &mut impl Read) -> Result<Option<T>, ProtocolError> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match input.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(ProtocolError::Truncated),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    let len = u32::from_le_bytes(len);
    if len > MAX_FRAME {
        return Err(ProtocolError::TooLarge { len });
    }
    let mut payload = vec![0u8; len as usize];
    input.read_exact(&mut payload).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            ProtocolError::Truncated
        } else {
            e.into()
        }
    })?;
    postcard::from_bytes(&payload)
        .map(Some)
        .map_err(|source| ProtocolError::Malformed { len, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_responses_round_trip() {
        let messages = [
            Request::Open {
                slot: 3,
                names: EntryNames::new(Some("O"), "C", None),
                export: vec!["good".into(), "1848".into()],
            },
            Request::Collect {
                slot: 3,
                value: "Global".into(),
                buffer_len: 65536,
            },
            Request::Close { slot: 3 },
        ];
        let mut wire = Vec::new();
        for m in &messages {
            write_frame(&mut wire, m).unwrap();
        }
        let mut input = wire.as_slice();
        for m in &messages {
            assert_eq!(read_frame::<Request>(&mut input).unwrap().as_ref(), Some(m));
        }
        assert_eq!(read_frame::<Request>(&mut input).unwrap(), None);
    }

    #[test]
    fn a_cut_frame_is_an_error_not_a_hang() {
        let mut wire = Vec::new();
        write_frame(&mut wire, &Response::Ready).unwrap();
        wire.extend_from_slice(&10u32.to_le_bytes());
        wire.push(1);
        let mut input = wire.as_slice();
        assert_eq!(
            read_frame::<Response>(&mut input).unwrap(),
            Some(Response::Ready)
        );
        assert!(matches!(
            read_frame::<Response>(&mut input),
            Err(ProtocolError::Truncated)
        ));
    }
}
