//! Reading an answer's body from a remote that may lie about it: at most a cap, into one
//! buffer, every byte counted so that a body cut short says how much was announced and how
//! much came.
//!
//! A `Content-Length` above the cap is refused before a byte of the body is read. Without one
//! (a chunked answer), the body is read up to the cap plus one byte, which tells a body at
//! the cap from one above it. `Content-Length` is a claim, not memory: the buffer starts at
//! most [`FIRST_RESERVE`] and grows with the bytes that come, doubling but never past the
//! announced length (so a body that comes whole needs no more than its size, and one cut
//! short never more than twice what came), and is shrunk to the body once read. Every
//! reservation is fallible: a machine that cannot hold the body gets [`BodyError::NoMemory`],
//! never an abort.

use std::io::Read;

/// Why a body could not be read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BodyError {
    /// Larger than the cap: `size` is the announced length, or `None` when the server
    /// announced none and sent more than `limit` bytes.
    TooLarge {
        /// `Content-Length`, if given.
        size: Option<u64>,
        /// The cap.
        limit: u64,
    },
    /// The connection ended (or failed) before the body did.
    CutShort {
        /// `Content-Length`, if given.
        expected: Option<u64>,
        /// The bytes that came.
        received: u64,
        /// What the reader said, if it failed.
        reason: Option<String>,
    },
    /// No more bytes within the timeout.
    TimedOut,
    /// This machine could not give the buffer room for more of the body.
    NoMemory {
        /// `Content-Length`, if given.
        expected: Option<u64>,
        /// The bytes read before.
        received: u64,
    },
}

/// The bytes read per call; reading stops at the cap, not after a full chunk past it.
const CHUNK: usize = 64 * 1024;

/// The most reserved before a byte of the body came: what a small machine holds at once
/// without thinking twice, and enough that an ordinary answer is read into one reservation.
pub(crate) const FIRST_RESERVE: u64 = 64 << 20;

/// Reads `reader`'s body, announced as `declared` bytes (`Content-Length`), at most `limit`
/// bytes.
pub(crate) fn read_capped(
    mut reader: impl Read,
    declared: Option<u64>,
    limit: u64,
) -> Result<Vec<u8>, BodyError> {
    if let Some(size) = declared.filter(|&size| size > limit) {
        return Err(BodyError::TooLarge {
            size: Some(size),
            limit,
        });
    }
    // The whole body, or up to the cap and one byte more (which tells "above the cap").
    let want = declared.unwrap_or_else(|| limit.saturating_add(1));
    let mut body = Vec::new();
    let first = usize::try_from(declared.unwrap_or(0).min(FIRST_RESERVE)).unwrap_or(0);
    // Only a head start: failing it leaves the growth below to try for less.
    let _ = body.try_reserve_exact(first);
    let mut chunk = [0u8; CHUNK];
    while (body.len() as u64) < want {
        let room = usize::try_from(want - body.len() as u64).map_or(CHUNK, |r| r.min(CHUNK));
        match reader.read(&mut chunk[..room]) {
            Ok(0) => break,
            Ok(n) => {
                grow(&mut body, n, want).map_err(|_| BodyError::NoMemory {
                    expected: declared,
                    received: body.len() as u64,
                })?;
                body.extend_from_slice(&chunk[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return Err(BodyError::TimedOut),
            Err(e) => {
                return Err(BodyError::CutShort {
                    expected: declared,
                    received: body.len() as u64,
                    reason: Some(e.to_string()),
                })
            }
        }
    }
    let received = body.len() as u64;
    match declared {
        Some(expected) if received < expected => Err(BodyError::CutShort {
            expected: declared,
            received,
            reason: None,
        }),
        None if received > limit => Err(BodyError::TooLarge { size: None, limit }),
        _ => {
            body.shrink_to_fit();
            Ok(body)
        }
    }
}

/// Makes room in `body` for `n` more bytes of a body of at most `want`: twice the bytes so
/// far (amortised growth), never past `want`.
fn grow(body: &mut Vec<u8>, n: usize, want: u64) -> Result<(), std::collections::TryReserveError> {
    if body.capacity() - body.len() >= n {
        return Ok(());
    }
    let rest = usize::try_from(want.saturating_sub(body.len() as u64)).unwrap_or(usize::MAX);
    body.try_reserve_exact(body.len().max(CHUNK).min(rest).max(n))
}

/// At most `limit` bytes of `reader`, the rest left unread: an error message's body, which
/// needs no more than its first lines.
pub(crate) fn read_prefix(reader: impl Read, limit: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = reader.take(limit).read_to_end(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that gives `data`, then fails as a reset connection does.
    struct Broken<'a>(&'a [u8]);

    impl Read for Broken<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() {
                return Err(std::io::ErrorKind::ConnectionReset.into());
            }
            let n = self.0.len().min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_body_at_the_cap_is_read_and_one_above_is_refused() {
        let data = vec![7u8; 200_000];
        assert_eq!(
            read_capped(&data[..], Some(200_000), 200_000),
            Ok(data.clone())
        );
        assert_eq!(read_capped(&data[..], None, 200_000), Ok(data.clone()));
        assert_eq!(
            read_capped(&data[..], Some(200_000), 199_999),
            Err(BodyError::TooLarge {
                size: Some(200_000),
                limit: 199_999
            })
        );
        assert_eq!(
            read_capped(&data[..], None, 199_999),
            Err(BodyError::TooLarge {
                size: None,
                limit: 199_999
            })
        );
    }

    #[test]
    fn a_body_cut_short_counts_what_came() {
        let data = [1u8; 10];
        assert_eq!(
            read_capped(&data[..], Some(30), 100),
            Err(BodyError::CutShort {
                expected: Some(30),
                received: 10,
                reason: None
            })
        );
        let err = read_capped(Broken(&data), Some(30), 100).unwrap_err();
        assert!(
            matches!(
                err,
                BodyError::CutShort {
                    expected: Some(30),
                    received: 10,
                    reason: Some(_)
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn a_buffer_grows_with_the_bytes_that_came_not_the_announced_length() {
        let data = vec![3u8; 3 * CHUNK + 5];
        let announced = FIRST_RESERVE * 8;
        let err = read_capped(&data[..], Some(announced), announced).unwrap_err();
        assert_eq!(
            err,
            BodyError::CutShort {
                expected: Some(announced),
                received: data.len() as u64,
                reason: None
            }
        );
        let mut body = Vec::with_capacity(10);
        body.extend_from_slice(&[0; 10]);
        grow(&mut body, 5, 12).unwrap();
        assert!(body.capacity() >= 15, "room for what came");
        let mut body = vec![0u8; CHUNK];
        grow(&mut body, 1, u64::MAX).unwrap();
        assert!(body.capacity() >= 2 * CHUNK, "doubled");
    }

    #[test]
    fn an_error_body_is_read_up_to_its_limit() {
        assert_eq!(read_prefix(&b"abcdef"[..], 3), b"abc");
    }
}
