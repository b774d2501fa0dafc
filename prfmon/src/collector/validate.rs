//! Judging a provider: the rules of "How a performance DLL interfaces with a monitor" checked
//! against what one Collect call did, and the reasons a provider is disabled.
//!
//! "How a performance DLL interfaces with a monitor", for Collect: "On successful exit, set
//! *lppData to the next byte in the buffer available for data [...] The data returned must be a
//! multiple of a DWORD in length. It must conform to the PERF_OBJECT_TYPE data definition [...] On
//! successful exit, set *lpcbBytes to the size, in bytes, of the data written to the lppData
//! buffer." and for ERROR_MORE_DATA "leave *lppData unchanged, and set *lpcbBytes and
//! *lpcObjectTypes to zero."
//!
//! So the byte count, and each object's `TotalByteLength`, must be a multiple of 4 (a DWORD),
//! not necessarily of 8: objects that end 4 bytes off an 8-byte boundary are padded to it by
//! [`super::realign`] before they go into the PERF_DATA_BLOCK, so that every object in it
//! starts 8-aligned as 64-bit perflib's do. A count that is not a multiple of 4, an object
//! whose length is not, or objects whose lengths do not add up to the count, disable the
//! provider.
//!
//! ```text
//! buffer given ─────────────────────────────────────┬──────── guard (CANARY_LEN) ─┐
//! │obj 0 (TotalByteLength)│obj 1│ … │  (unused)      │ A5 A5 A5 … must stay A5     │
//! └────────── advance == *lpcbBytes, ≡ 0 mod 4 ──┘
//!  Σ TotalByteLength over *lpNumObjectTypes objects == *lpcbBytes, each ≡ 0 mod 4
//! ```
//!
//! # Examples
//!
//! ```
//! use prfmon::collector::library::RawCollect;
//! use prfmon::collector::validate::{check_collect, ProviderFault};
//! let raw = RawCollect { buffer_len: 64, bytes: 64, advance: 60, canary_intact: true, ..Default::default() };
//! assert!(matches!(check_collect(&raw), Err(ProviderFault::ByteCountMismatch { advance: 60, bytes: 64 })));
//! ```

use prfdata_wire::winperf::{ERROR_MORE_DATA, ERROR_SUCCESS};

use super::library::RawCollect;
use super::realign;
use crate::datablock::ProviderOutput;
use prfdata_wire::error::DecodeError;
use prfdata_wire::view::ObjectRun;

/// One of the three provider calls.
///
/// # Examples
///
/// ```
/// assert_eq!(prfmon::collector::validate::Call::Collect.to_string(), "Collect");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// Loading the library and calling Open.
    Open,
    /// Collect.
    Collect,
    /// Close.
    Close,
}

impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Open => "Open",
            Self::Collect => "Collect",
            Self::Close => "Close",
        })
    }
}

/// Why a provider was disabled.
///
/// # Examples
///
/// ```
/// use prfmon::collector::validate::ProviderFault;
/// let f = ProviderFault::Misaligned { bytes: 62 };
/// assert_eq!(
///     f.to_string(),
///     "Collect returned 62 bytes, not a multiple of 4 (a DWORD, as perflib requires)"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderFault {
    /// A call did not return within the service's timeout (`Open Timeout`, `Collect Timeout`).
    #[error("{call} did not return within {timeout_ms} ms")]
    Timeout {
        /// The call.
        call: Call,
        /// The timeout.
        timeout_ms: u64,
    },
    /// The host process died during a call (the provider panicked, aborted or crashed).
    #[error("the provider host died during {call}: it {how}")]
    Crashed {
        /// The call.
        call: Call,
        /// How the host ended.
        how: String,
    },
    /// The host answered with something that is not a valid response.
    #[error("the provider host broke the protocol during {call}: {message}")]
    Protocol {
        /// The call.
        call: Call,
        /// What was wrong.
        message: String,
    },
    /// The guard bytes after the buffer changed.
    #[error("Collect wrote past the end of the {buffer_len}-byte buffer it was given")]
    Overrun {
        /// The buffer size given.
        buffer_len: u32,
    },
    /// ERROR_MORE_DATA with the pointer moved or counts set.
    #[error("Collect returned ERROR_MORE_DATA but moved the data pointer by {advance} bytes and reported {bytes} bytes and {num_objects} objects (all must be 0)")]
    MoreDataNotClean {
        /// Pointer advance.
        advance: i64,
        /// `*lpcbTotalBytes`.
        bytes: u32,
        /// `*lpNumObjectTypes`.
        num_objects: u32,
    },
    /// The pointer moved backwards or past the end of the buffer.
    #[error(
        "Collect moved the data pointer by {advance} bytes, outside the {buffer_len}-byte buffer"
    )]
    PointerOutOfBuffer {
        /// Pointer advance.
        advance: i64,
        /// The buffer size given.
        buffer_len: u32,
    },
    /// The pointer advance and the byte count disagree.
    #[error("Collect moved the data pointer by {advance} bytes but reported {bytes} bytes")]
    ByteCountMismatch {
        /// Pointer advance.
        advance: i64,
        /// `*lpcbTotalBytes`.
        bytes: u32,
    },
    /// The byte count is not a multiple of 4.
    #[error("Collect returned {bytes} bytes, not a multiple of 4 (a DWORD, as perflib requires)")]
    Misaligned {
        /// `*lpcbTotalBytes`.
        bytes: u32,
    },
    /// An object is malformed (offsets count from the start of the provider's output).
    #[error("Collect returned a malformed object: {0}")]
    BadObject(DecodeError),
    /// An object's length is not a multiple of 4.
    #[error("Collect returned an object at offset {offset} whose TotalByteLength {length} is not a multiple of 4")]
    ObjectMisaligned {
        /// The object's offset in the output.
        offset: usize,
        /// Its TotalByteLength.
        length: u32,
    },
    /// The objects do not exactly fill the byte count.
    #[error("Collect reported {num_objects} objects whose TotalByteLength add up to {sum} bytes, but returned {bytes} bytes")]
    ObjectChain {
        /// `*lpNumObjectTypes`.
        num_objects: u32,
        /// Bytes the objects cover.
        sum: usize,
        /// `*lpcbTotalBytes`.
        bytes: u32,
    },
    /// ERROR_MORE_DATA even at the largest buffer.
    #[error("Collect still returned ERROR_MORE_DATA with a {cap}-byte buffer")]
    BufferCap {
        /// The largest buffer.
        cap: u32,
    },
}

/// What a valid Collect call returned.
///
/// # Examples
///
/// ```
/// use prfmon::collector::library::RawCollect;
/// use prfmon::collector::validate::{check_collect, Verdict};
/// let raw = RawCollect { status: 234, buffer_len: 8, canary_intact: true, ..Default::default() };
/// assert_eq!(check_collect(&raw), Ok(Verdict::MoreData));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// ERROR_MORE_DATA: call again with a bigger buffer.
    MoreData,
    /// ERROR_SUCCESS with this data (possibly none).
    Data(ProviderOutput),
    /// Another status: "How a performance DLL interfaces with a monitor" asks providers to return
    /// ERROR_SUCCESS "even if [...] an error occurs", so this is a provider that says it failed;
    /// its output is ignored.
    Failed(u32),
}

/// Checks one Collect call against perflib's rules and the object layout; the data of a valid call
/// comes back with its objects 8-aligned ([`super::realign`]).
///
/// # Examples
///
/// ```
/// use prfmon::collector::library::RawCollect;
/// use prfmon::collector::validate::{check_collect, Verdict};
/// let object = prfdata_testkit::sample::sample_object(1848);
/// let n = object.len() as u32;
/// let raw = RawCollect {
///     status: 0, buffer_len: 4096, bytes: n, num_objects: 1, advance: n.into(),
///     canary_intact: true, data: object,
/// };
/// assert!(matches!(check_collect(&raw), Ok(Verdict::Data(_))));
/// ```
pub fn check_collect(raw: &RawCollect) -> Result<Verdict, ProviderFault> {
    check_collect_owned(raw.clone())
}

/// [`check_collect`], taking the call's record: valid data that needs no realigning becomes the
/// [`ProviderOutput`] as it is, without a copy (what the collector does with every Collect).
///
/// # Examples
///
/// ```
/// use prfmon::collector::library::RawCollect;
/// use prfmon::collector::validate::{check_collect_owned, Verdict};
/// let object = prfdata_testkit::sample::sample_object(1848);
/// let n = object.len() as u32;
/// let raw = RawCollect {
///     status: 0, buffer_len: 4096, bytes: n, num_objects: 1, advance: n.into(),
///     canary_intact: true, data: object.clone(),
/// };
/// let Ok(Verdict::Data(out)) = check_collect_owned(raw) else { panic!("valid") };
/// assert_eq!(out.bytes, object);
/// ```
pub fn check_collect_owned(raw: RawCollect) -> Result<Verdict, ProviderFault> {
    let lengths = match judge(&raw, &raw.data, &mut ObjectRun::default())? {
        Judged::MoreData => return Ok(Verdict::MoreData),
        Judged::Failed(status) => return Ok(Verdict::Failed(status)),
        Judged::Data(lengths) => lengths,
    };
    let num_objects = raw.num_objects;
    let bytes = match realign::needed(&lengths) {
        true => realign::to_qword(&raw.data, &lengths),
        false => raw.data,
    };
    Ok(Verdict::Data(ProviderOutput { bytes, num_objects }))
}

/// What [`append_checked`] did with a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Appended {
    /// ERROR_MORE_DATA: call again with a bigger buffer; nothing appended.
    MoreData,
    /// Another status than success: nothing appended (see [`Verdict::Failed`]).
    Failed(u32),
    /// Success: this many objects appended.
    Objects(u32),
    /// A valid output of this many bytes that would take the collection past the largest
    /// PERF_DATA_BLOCK ([`crate::datablock::MAX_PERF_DATA_BLOCK`]): nothing appended.
    NoRoom(usize),
}

/// [`check_collect_owned`] for a call whose output `data` is still in Collect's buffer: a valid
/// output is appended to `out` (a PERF_DATA_BLOCK being built; realigned if it must be) and its
/// objects to `run`, moved to where the output now lies in `out`, so that the
/// [`DataView`](prfdata_wire::view::DataView) built from them needs no second pass. On a
/// fault nothing is appended.
pub(crate) fn append_checked(
    raw: &RawCollect,
    data: &[u8],
    out: &mut Vec<u8>,
    run: &mut ObjectRun,
) -> Result<Appended, ProviderFault> {
    let (at, first) = (out.len(), run.count());
    let judged = judge(raw, data, run);
    if !matches!(judged, Ok(Judged::Data(_))) {
        run.truncate(first);
    }
    let lengths = match judged? {
        Judged::MoreData => return Ok(Appended::MoreData),
        Judged::Failed(status) => return Ok(Appended::Failed(status)),
        Judged::Data(lengths) => lengths,
    };
    // Realigning adds at most 4 bytes per object.
    let most = data.len() + 4 * lengths.len();
    if (at + most) as u64 > crate::datablock::MAX_PERF_DATA_BLOCK {
        run.truncate(first);
        return Ok(Appended::NoRoom(most));
    }
    if realign::needed(&lengths) {
        // Rare: DWORD-aligned objects padded to 8, then checked again where they now lie.
        run.truncate(first);
        let aligned = realign::to_qword(data, &lengths);
        let end = aligned.len();
        let walked = (0..raw.num_objects).try_fold(0, |offset, _| run.check(&aligned, offset, end));
        if let Err(e) = walked {
            run.truncate(first);
            return Err(ProviderFault::BadObject(e));
        }
        out.extend_from_slice(&aligned);
    } else {
        out.extend_from_slice(data);
    }
    run.shift(first, at);
    Ok(Appended::Objects(raw.num_objects))
}

/// What [`check_collect`] found: the verdict, with the objects' lengths for data.
enum Judged {
    MoreData,
    Failed(u32),
    Data(Vec<usize>),
}

/// The checks of [`check_collect`] on the call's record and its output `data` (the record's
/// own `data` is not read), each object checked into `run`.
fn judge(raw: &RawCollect, data: &[u8], run: &mut ObjectRun) -> Result<Judged, ProviderFault> {
    let (advance, bytes, buffer_len, num_objects) =
        (raw.advance, raw.bytes, raw.buffer_len, raw.num_objects);
    ensure(raw.canary_intact, || ProviderFault::Overrun { buffer_len })?;
    if raw.status == ERROR_MORE_DATA {
        let clean = advance == 0 && bytes == 0 && num_objects == 0;
        ensure(clean, || ProviderFault::MoreDataNotClean {
            advance,
            bytes,
            num_objects,
        })?;
        return Ok(Judged::MoreData);
    }
    if raw.status != ERROR_SUCCESS {
        return Ok(Judged::Failed(raw.status));
    }
    let inside = (0..=i64::from(buffer_len)).contains(&advance);
    ensure(inside, || ProviderFault::PointerOutOfBuffer {
        advance,
        buffer_len,
    })?;
    let matches = advance == i64::from(bytes);
    ensure(matches, || ProviderFault::ByteCountMismatch {
        advance,
        bytes,
    })?;
    ensure(bytes.is_multiple_of(4), || ProviderFault::Misaligned {
        bytes,
    })?;
    ensure(data.len() == bytes as usize, || ProviderFault::Protocol {
        call: Call::Collect,
        message: format!("{} bytes of data for a reported {bytes} bytes", data.len()),
    })?;
    let (mut offset, mut lengths) = (0, Vec::new());
    while lengths.len() < num_objects as usize && offset < data.len() {
        let next = run
            .check(data, offset, data.len())
            .map_err(ProviderFault::BadObject)?;
        let length = (next - offset) as u32;
        ensure(length.is_multiple_of(4), || {
            ProviderFault::ObjectMisaligned { offset, length }
        })?;
        lengths.push(length as usize);
        offset = next;
    }
    let whole = lengths.len() == num_objects as usize && offset == data.len();
    ensure(whole, || ProviderFault::ObjectChain {
        num_objects,
        sum: offset,
        bytes,
    })?;
    Ok(Judged::Data(lengths))
}

/// `Ok` if `ok`, else the fault `fault` makes: the one form of [`judge`]'s checks.
fn ensure(ok: bool, fault: impl FnOnce() -> ProviderFault) -> Result<(), ProviderFault> {
    if ok {
        Ok(())
    } else {
        Err(fault())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prfdata_testkit::sample::sample_object;

    fn good(objects: usize) -> RawCollect {
        let data: Vec<u8> = (0..objects)
            .flat_map(|i| sample_object(1848 + 10 * i as u32))
            .collect();
        let n = data.len() as u32;
        RawCollect {
            status: 0,
            buffer_len: 1 << 16,
            bytes: n,
            num_objects: objects as u32,
            advance: n.into(),
            canary_intact: true,
            data,
        }
    }

    #[test]
    fn two_good_objects_pass() {
        let Ok(Verdict::Data(out)) = check_collect(&good(2)) else {
            panic!("refused");
        };
        assert_eq!(out.num_objects, 2);
    }

    #[test]
    fn nothing_requested_is_fine() {
        let raw = RawCollect {
            buffer_len: 100,
            canary_intact: true,
            ..Default::default()
        };
        assert_eq!(
            check_collect(&raw),
            Ok(Verdict::Data(ProviderOutput::default()))
        );
    }

    #[test]
    fn an_object_count_that_does_not_match_the_bytes_is_refused() {
        let mut raw = good(2);
        raw.num_objects = 1;
        assert!(matches!(
            check_collect(&raw),
            Err(ProviderFault::ObjectChain { .. })
        ));
        raw.num_objects = 3;
        assert!(matches!(
            check_collect(&raw),
            Err(ProviderFault::ObjectChain { .. })
        ));
    }

    /// `good(1)` with its single object cut to a length of `8k + 4` (the sample object's last
    /// counter block ends in 4 bytes of padding).
    fn dword_aligned() -> RawCollect {
        let mut raw = good(1);
        let last_block = raw.data.len() - 24;
        raw.data[last_block..last_block + 4].copy_from_slice(&20u32.to_le_bytes());
        raw.data.truncate(raw.data.len() - 4);
        let n = raw.data.len() as u32;
        raw.data[..4].copy_from_slice(&n.to_le_bytes());
        raw.bytes = n;
        raw.advance = n.into();
        raw
    }

    #[test]
    fn a_dword_aligned_output_is_kept_and_padded_to_8() {
        let raw = dword_aligned();
        assert_eq!(raw.bytes % 8, 4);
        let Ok(Verdict::Data(out)) = check_collect(&raw) else {
            panic!("refused");
        };
        assert_eq!(out.bytes.len() as u32, raw.bytes + 4);
        assert_eq!(&out.bytes[..4], &(raw.bytes + 4).to_le_bytes());
        assert_eq!(&out.bytes[4..raw.bytes as usize], &raw.data[4..]);
        assert_eq!(&out.bytes[raw.bytes as usize..], &[0; 4]);
    }

    #[test]
    fn a_count_or_object_length_off_the_dword_is_refused() {
        let mut raw = good(1);
        raw.data.extend_from_slice(&[0; 2]);
        raw.bytes += 2;
        raw.advance += 2;
        assert_eq!(
            check_collect(&raw),
            Err(ProviderFault::Misaligned { bytes: raw.bytes })
        );
        // An object 2 bytes longer, followed by one 2 bytes shorter: a count of 8k.
        let mut raw = good(2);
        let first = sample_object(1848).len();
        raw.data[..4].copy_from_slice(&(first as u32 + 2).to_le_bytes());
        assert!(matches!(
            check_collect(&raw),
            Err(ProviderFault::ObjectMisaligned { offset: 0, .. })
        ));
    }

    #[test]
    fn a_dword_count_that_the_objects_do_not_fill_is_refused() {
        let mut raw = good(1);
        raw.data.extend_from_slice(&[0; 4]);
        raw.bytes += 4;
        raw.advance += 4;
        assert!(matches!(
            check_collect(&raw),
            Err(ProviderFault::ObjectChain { .. })
        ));
    }

    #[test]
    fn a_clobbered_guard_is_an_overrun() {
        let mut raw = good(1);
        raw.canary_intact = false;
        assert!(matches!(
            check_collect(&raw),
            Err(ProviderFault::Overrun { .. })
        ));
    }

    #[test]
    fn a_corrupt_object_names_its_offset() {
        let mut raw = good(2);
        let second = sample_object(1848).len();
        // HeaderLength of the second object := 8.
        raw.data[second + 8..second + 12].copy_from_slice(&8u32.to_le_bytes());
        let Err(ProviderFault::BadObject(e)) = check_collect(&raw) else {
            panic!("accepted");
        };
        assert_eq!(e.offset(), second + 8);
    }
}
