//! Moving a provider's objects onto 8-byte boundaries: perflib allows DWORD-aligned output,
//! the PERF_DATA_BLOCK wants each object QWORD-aligned.
//!
//! "How a performance DLL interfaces with a monitor": "The data returned must be a multiple of a
//! DWORD in length [...] This must be a multiple of sizeof(DWORD) (a multiple of 4)." A provider
//! may therefore return objects whose `TotalByteLength` is 4 more than a multiple of 8. Laid end to
//! end in the PERF_DATA_BLOCK, the objects after such an object would start 4 bytes off an 8-byte
//! boundary, and their LARGE_INTEGER fields (`PerfTime`, `PerfFreq` in the header, 64-bit counters
//! that the provider placed 8-aligned within its object) with them. So each such object gets 4 zero
//! bytes after it, and its `TotalByteLength` grows by the same 4, which is how 64-bit perflib
//! pads objects:
//!
//! ```text
//! provider output (204 + 204 = 408 bytes, a multiple of 4):
//!   0            204          408
//!   │ object A    │ object B    │
//! in the PERF_DATA_BLOCK, each object 8-aligned:
//!   H            H+208        H+416
//!   │ object A    ░░│ object B    ░░│      ░ = 4 zero bytes, TotalByteLength 204 → 208
//! ```
//!
//! Nothing inside an object moves. Every offset in a PERF_OBJECT_TYPE counts from the object's
//! start (`DefinitionLength`, `HeaderLength`, each definition's `ByteLength`, the instances'
//! and counter blocks' `ByteLength`s, `CounterOffset` within its block), so they all stay as
//! the provider wrote them and stay right; a reader walks the definitions and instances by
//! those lengths and never looks at the padding after the last counter block. Only the
//! object's start (in the block) and its padded length change. What the provider aligned
//! within its object stays aligned once the object starts on an 8-byte boundary; a 64-bit
//! value the provider itself put 4 bytes off (at an object offset ≡ 4 mod 8) stays 4 bytes
//! off, as it would in perflib's buffer; the decoder reads values bytewise, so it is still
//! read right.
//!
//! # Examples
//!
//! ```
//! use prfmon::collector::realign::to_qword;
//! // Two 12-byte "objects" (only TotalByteLength matters here).
//! let mut data = Vec::new();
//! for tag in [0xAAu8, 0xBB] {
//!     data.extend_from_slice(&12u32.to_le_bytes());
//!     data.extend_from_slice(&[tag; 8]);
//! }
//! let out = to_qword(&data, &[12, 12]);
//! assert_eq!(out.len(), 32);
//! assert_eq!(&out[0..4], &16u32.to_le_bytes()); // TotalByteLength, padded
//! assert_eq!(&out[12..16], &[0; 4]); // the padding
//! assert_eq!(&out[16..20], &16u32.to_le_bytes()); // object B starts 8-aligned
//! ```

/// The alignment each object gets in the PERF_DATA_BLOCK (a LARGE_INTEGER's).
pub const OBJECT_ALIGN: usize = 8;

/// Whether objects of these lengths need realigning (some length is not a multiple of
/// [`OBJECT_ALIGN`]).
///
/// # Examples
///
/// ```
/// assert!(!prfmon::collector::realign::needed(&[208, 160]));
/// assert!(prfmon::collector::realign::needed(&[208, 204]));
/// ```
pub fn needed(lengths: &[usize]) -> bool {
    lengths.iter().any(|len| !len.is_multiple_of(OBJECT_ALIGN))
}

/// The objects of `data`, whose lengths are `lengths` in order (validated: each a multiple of
/// 4, together exactly `data`), each followed by the zero bytes that bring it to a multiple
/// of [`OBJECT_ALIGN`], with its `TotalByteLength` (its first 4 bytes) increased by as many.
/// Anything past the lengths given is dropped.
///
/// # Examples
///
/// See the [module docs](self).
pub fn to_qword(data: &[u8], lengths: &[usize]) -> Vec<u8> {
    let padded: usize = lengths
        .iter()
        .map(|len| len.next_multiple_of(OBJECT_ALIGN))
        .sum();
    let mut out = Vec::with_capacity(padded);
    let mut at = 0usize;
    for &len in lengths {
        let Some(object) = at.checked_add(len).and_then(|end| data.get(at..end)) else {
            break;
        };
        let start = out.len();
        out.extend_from_slice(object);
        let total = len.next_multiple_of(OBJECT_ALIGN);
        out.resize(start + total, 0);
        if let (Some(field), Ok(total)) = (out.get_mut(start..start + 4), u32::try_from(total)) {
            field.copy_from_slice(&total.to_le_bytes());
        }
        at += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datablock::{build_data_block, CollectionTimes, ProviderOutput};
    use prfdata_testkit::sample::sample_object;

    /// The sample object with the 4 bytes of padding at the end of its last counter block
    /// (24 bytes: a DWORD, a LARGE_INTEGER, a DWORD, padding) cut: a DWORD-aligned object.
    fn dword_object(index: u32) -> Vec<u8> {
        let mut object = sample_object(index);
        let last_block = object.len() - 24;
        object[last_block..last_block + 4].copy_from_slice(&20u32.to_le_bytes());
        let trimmed = object.len() - 4;
        object.truncate(trimmed);
        object[..4].copy_from_slice(&(trimmed as u32).to_le_bytes());
        object
    }

    #[test]
    fn realigned_objects_decode_as_the_originals_with_padded_lengths() {
        let original = sample_object(1848);
        let a = dword_object(1848);
        let b = dword_object(1860);
        assert_eq!(a.len() % 8, 4);
        let data = [a.clone(), b.clone()].concat();
        let out = to_qword(&data, &[a.len(), b.len()]);
        assert_eq!(out.len(), a.len() + b.len() + 8);
        let block = build_data_block(
            "h",
            &CollectionTimes::now(),
            &[ProviderOutput {
                bytes: out,
                num_objects: 2,
            }],
        );
        let snap = prfdata_wire::snapshot::decode(&block).unwrap();
        let reference = prfdata_wire::snapshot::decode(&build_data_block(
            "h",
            &CollectionTimes::now(),
            &[ProviderOutput {
                bytes: original,
                num_objects: 1,
            }],
        ))
        .unwrap();
        for (obj, index) in snap.objects.iter().zip([1848, 1860]) {
            assert_eq!(obj.offset % 8, 0);
            assert_eq!(obj.name_index, index);
            assert_eq!(obj.instance_data(), reference.objects[0].instance_data());
        }
    }

    #[test]
    fn aligned_objects_are_left_alone() {
        let a = sample_object(1848);
        assert!(!needed(&[a.len()]));
        assert_eq!(to_qword(&a, &[a.len()]), a);
    }
}
