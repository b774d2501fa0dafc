//! The provider host's protocol: length-prefixed postcard frames over the host's stdin
//! (requests) and stdout (responses), and Collect's output as a raw data frame after its
//! response.
//!
//! ```text
//! frame:       u32 little-endian payload length | postcard(Request or Response)
//! data frame:  u32 little-endian length | the bytes Collect wrote
//!
//! host → parent   Hello{version}                 once, at start, before dlopen
//! host → parent   Ready | Failed{message}        once, after dlopen
//! parent → host   Open{slot, names, export}      → Opened{slot, status} | Failed{message}
//!                 Collect{slot, value, buffer_len} → Collected{slot, raw}, then a data frame
//!                 Close{slot}                    → Closed{slot, status}
//! parent closes the host's stdin                 → the host exits 0
//! ```
//!
//! One request is outstanding at a time; each gets exactly one response. A `Collected` comes
//! only after a Collect, and its data frame is at most that Collect's `buffer_len` (what
//! Collect can have written): the collector refuses anything else before reading it
//! ([`ProtocolError::Unrequested`], [`ProtocolError::DataOverBuffer`]). A slot is the
//! parent's number for one service of the host's library. `Hello` before the library is
//! loaded tells a host that works apart from a library that kills it while loading: only the
//! second is the provider's fault.
//!
//! Collect's output travels in its own frame (`Collected`'s `raw.data` is empty in the message)
//! so that the host writes it from Collect's buffer as it is and the collector reads it into
//! one buffer: no copy through the message encoding on either side, for answers up to
//! [`MAX_DATA`] (2 GiB). A message carries names and strings from the registry, so it is at
//! most [`MAX_MESSAGE`].
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

/// The protocol version a host announces in [`Response::Hello`] (2: Collect's output in a
/// data frame of its own).
pub const PROTOCOL_VERSION: u32 = 2;

/// The largest message frame either side accepts: a message carries a service's names and
/// `Linkage\Export` strings, or a message text, all read from the registry, whose store is at
/// most [`MAX_STORE_SIZE`](prfdata_registry::MAX_STORE_SIZE); 4 KiB more for the rest.
pub const MAX_MESSAGE: u32 = prfdata_registry::MAX_STORE_SIZE as u32 + 4096;

/// The largest data frame: Collect's output, at most the largest Collect buffer
/// ([`MAX_BUFFER`](super::MAX_BUFFER), from prfdata's rule: see
/// [`BlockReader::MAX_COLLECT_ANSWER`](prfdata::reader::BlockReader::MAX_COLLECT_ANSWER)).
pub const MAX_DATA: u32 = super::MAX_BUFFER;

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
    /// A frame's length is over its limit ([`MAX_MESSAGE`] or [`MAX_DATA`]).
    #[error("provider host frame of {len} bytes is over the {max}-byte limit")]
    TooLarge {
        /// The announced length.
        len: u64,
        /// The limit.
        max: u32,
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
    /// A data frame is longer than the buffer its Collect was given: Collect cannot have
    /// written it.
    #[error(
        "provider host announced {len} bytes of Collect output for a {buffer_len}-byte buffer"
    )]
    DataOverBuffer {
        /// The announced length.
        len: u32,
        /// The buffer the Collect was given.
        buffer_len: u32,
    },
    /// A `Collected` message came when no Collect was outstanding.
    #[error("provider host sent Collect output that no Collect asked for")]
    Unrequested,
    /// A `Collected` message carried data itself instead of in the data frame after it.
    #[error("provider host sent {len} bytes of Collect output inside a message")]
    DataInMessage {
        /// The bytes in the message.
        len: usize,
    },
}

/// Writes one message frame and flushes.
///
/// # Examples
///
/// See the module docs.
pub fn write_frame<W: Write, T: Serialize>(out: &mut W, message: &T) -> Result<(), ProtocolError> {
    let payload = postcard::to_stdvec(message).map_err(ProtocolError::Encode)?;
    write_bytes(out, &payload, MAX_MESSAGE)?;
    out.flush()?;
    Ok(())
}

/// Writes `raw` (its `data` left out) as a [`Response::Collected`] for `slot`, then `data` as
/// a data frame, and flushes: what a host answers a Collect with.
///
/// # Examples
///
/// ```
/// use prfmon::collector::library::RawCollect;
/// use prfmon::collector::protocol::{read_response, write_collected, Response};
/// let mut wire = Vec::new();
/// let raw = RawCollect { bytes: 8, advance: 8, canary_intact: true, ..Default::default() };
/// write_collected(&mut wire, 3, &raw, &[1; 8])?;
/// let Some(Response::Collected { slot: 3, raw: back }) = read_response(&mut wire.as_slice(), || Some(64))? else {
///     panic!("a Collected response");
/// };
/// assert_eq!((back.bytes, back.data), (8, vec![1; 8]));
/// # Ok::<(), prfmon::collector::protocol::ProtocolError>(())
/// ```
pub fn write_collected<W: Write>(
    out: &mut W,
    slot: u32,
    raw: &RawCollect,
    data: &[u8],
) -> Result<(), ProtocolError> {
    let message = Response::Collected {
        slot,
        raw: RawCollect {
            status: raw.status,
            buffer_len: raw.buffer_len,
            bytes: raw.bytes,
            num_objects: raw.num_objects,
            advance: raw.advance,
            canary_intact: raw.canary_intact,
            data: Vec::new(),
        },
    };
    let payload = postcard::to_stdvec(&message).map_err(ProtocolError::Encode)?;
    write_bytes(out, &payload, MAX_MESSAGE)?;
    write_bytes(out, data, MAX_DATA)?;
    out.flush()?;
    Ok(())
}

/// Writes one frame of `bytes`, refusing more than `max`.
fn write_bytes<W: Write>(out: &mut W, bytes: &[u8], max: u32) -> Result<(), ProtocolError> {
    let len = u32::try_from(bytes.len())
        .ok()
        .filter(|&l| l <= max)
        .ok_or(ProtocolError::TooLarge {
            len: bytes.len() as u64,
            max,
        })?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(bytes)?;
    Ok(())
}

/// Reads one message frame; `Ok(None)` if the stream ended cleanly before it.
///
/// # Examples
///
/// ```
/// use prfmon::collector::protocol::{read_frame, Response};
/// assert_eq!(read_frame::<Response>(&mut [].as_slice())?, None);
/// # Ok::<(), prfmon::collector::protocol::ProtocolError>(())
/// ```
pub fn read_frame<T: DeserializeOwned>(input: &mut impl Read) -> Result<Option<T>, ProtocolError> {
    let Some(payload) = read_bytes(input, MAX_MESSAGE)? else {
        return Ok(None);
    };
    postcard::from_bytes(&payload)
        .map(Some)
        .map_err(|source| ProtocolError::Malformed {
            len: payload.len() as u32,
            source,
        })
}

/// Reads one response, with the data frame after a [`Response::Collected`] in its
/// `raw.data`; `Ok(None)` if the stream ended cleanly before it. What the collector reads.
///
/// `buffer_len` gives the size of the buffer the outstanding Collect was given (`None`: no
/// Collect is outstanding). Collect's output cannot be larger, so a longer data frame is
/// refused ([`ProtocolError::DataOverBuffer`]) before a byte of it is reserved or read: a host
/// that lies about it costs the collector nothing, and no wait.
pub fn read_response(
    input: &mut impl Read,
    buffer_len: impl FnOnce() -> Option<u32>,
) -> Result<Option<Response>, ProtocolError> {
    let response = read_frame::<Response>(input)?;
    let Some(Response::Collected { slot, mut raw }) = response else {
        return Ok(response);
    };
    if !raw.data.is_empty() {
        return Err(ProtocolError::DataInMessage {
            len: raw.data.len(),
        });
    }
    let buffer_len = buffer_len().ok_or(ProtocolError::Unrequested)?;
    let len = read_len(input)?.ok_or(ProtocolError::Truncated)?;
    if len > buffer_len.min(MAX_DATA) {
        return Err(ProtocolError::DataOverBuffer { len, buffer_len });
    }
    raw.data = read_payload(input, len)?;
    Ok(Some(Response::Collected { slot, raw }))
}

/// Reads one frame of at most `max` bytes; `Ok(None)` if the stream ended cleanly before it.
fn read_bytes(input: &mut impl Read, max: u32) -> Result<Option<Vec<u8>>, ProtocolError> {
    let Some(len) = read_len(input)? else {
        return Ok(None);
    };
    if len > max {
        return Err(ProtocolError::TooLarge {
            len: len.into(),
            max,
        });
    }
    read_payload(input, len).map(Some)
}

/// Reads a frame's length; `Ok(None)` if the stream ended cleanly before it.
fn read_len(input: &mut impl Read) -> Result<Option<u32>, ProtocolError> {
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
    Ok(Some(u32::from_le_bytes(len)))
}

/// Reads a frame's `len` bytes, its length checked against its limit by the caller.
fn read_payload(input: &mut impl Read, len: u32) -> Result<Vec<u8>, ProtocolError> {
    let mut payload = vec![0u8; len as usize];
    input.read_exact(&mut payload).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            ProtocolError::Truncated
        } else {
            e.into()
        }
    })?;
    Ok(payload)
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
    fn collect_output_travels_in_a_data_frame_after_its_response() {
        let raw = RawCollect {
            status: 0,
            buffer_len: 64,
            bytes: 16,
            num_objects: 1,
            advance: 16,
            canary_intact: true,
            data: Vec::new(),
        };
        let mut wire = Vec::new();
        write_collected(&mut wire, 7, &raw, &[9; 16]).unwrap();
        write_frame(&mut wire, &Response::Ready).unwrap();
        let mut input = wire.as_slice();
        let want = RawCollect {
            data: vec![9; 16],
            ..raw
        };
        assert_eq!(
            read_response(&mut input, || Some(64)).unwrap(),
            Some(Response::Collected { slot: 7, raw: want })
        );
        assert_eq!(
            read_response(&mut input, || Some(64)).unwrap(),
            Some(Response::Ready)
        );
        assert_eq!(read_response(&mut input, || Some(64)).unwrap(), None);
    }

    #[test]
    fn frames_past_their_limits_and_data_inside_a_message_are_refused() {
        let mut wire = Vec::new();
        write_frame(
            &mut wire,
            &Response::Collected {
                slot: 0,
                raw: RawCollect::default(),
            },
        )
        .unwrap();
        let mut past = wire.clone();
        past.extend_from_slice(&(MAX_DATA + 1).to_le_bytes());
        assert!(matches!(
            read_response(&mut past.as_slice(), || Some(MAX_DATA)),
            Err(ProtocolError::DataOverBuffer {
                buffer_len: MAX_DATA,
                ..
            })
        ));
        let mut past = wire.clone();
        past.extend_from_slice(&65u32.to_le_bytes());
        assert!(matches!(
            read_response(&mut past.as_slice(), || Some(64)),
            Err(ProtocolError::DataOverBuffer {
                len: 65,
                buffer_len: 64
            })
        ));
        assert!(matches!(
            read_response(&mut wire.as_slice(), || None),
            Err(ProtocolError::Unrequested)
        ));
        let smuggled = Response::Collected {
            slot: 0,
            raw: RawCollect {
                data: vec![1],
                ..RawCollect::default()
            },
        };
        let mut wire = Vec::new();
        write_frame(&mut wire, &smuggled).unwrap();
        assert!(matches!(
            read_response(&mut wire.as_slice(), || Some(64)),
            Err(ProtocolError::DataInMessage { len: 1 })
        ));
        let wire = (MAX_MESSAGE + 1).to_le_bytes();
        assert!(matches!(
            read_frame::<Request>(&mut wire.as_slice()),
            Err(ProtocolError::TooLarge {
                max: MAX_MESSAGE,
                ..
            })
        ));
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
