/// An error of `len` bytes, with a truncation's `available` written `LEN` when it is all of
/// them and `LEN-OFFSET` when it is all from the structure's offset on.
pub(super) fn describe(err: &DecodeError, len: usize) -> String {
    match *err {
        DecodeError::Truncated {
            offset,
            what,
            need,
            available,
        } => {
            let available = match available {
                a if a == len as u64 => "LEN".to_owned(),
                a if a == (len - offset) as u64 => "LEN-OFFSET".to_owned(),
                a => a.to_string(),
            };
            format!("truncated {what} at offset {offset}: needs {need} bytes, {available} available")
        }
        ref other => other.to_string(),
    }
}

/// The truncation lines of `bytes`: how each shorter prefix fails (`prefix`), and how it fails
/// with its `TotalByteLength` set to its length (`resized`: the objects are then cut short),
/// as `decode` says.
pub(super) fn truncations(bytes: &[u8], decode: impl Fn(&[u8]) -> Result<(), DecodeError>) -> String {
    let mut runs: Vec<(usize, usize, String)> = Vec::new();
    let mut push = |len: usize, text: String| match runs.last_mut() {
        Some((_, last, t)) if *t == text => *last = len,
        _ => runs.push((len, len, text)),
    };
    for len in 0..bytes.len() {
        let err = decode(&bytes[..len]).expect_err("a shorter prefix fails");
        push(len, format!("prefix {}", describe(&err, len)));
    }
    for len in 88..bytes.len() {
        let mut cut = bytes[..len].to_vec();
        cut[20..24].copy_from_slice(&(len as u32).to_le_bytes());
        let text = match decode(&cut) {
            Ok(()) => "decodes".to_owned(),
            Err(err) => describe(&err, len),
        };
        push(len, format!("resized {text}"));
    }
    runs.iter()
        .map(|(first, last, text)| format!("{first}..={last} {text}\n"))
        .collect()
}

