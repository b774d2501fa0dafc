//! The bearer token `prfmon serve --token-file FILE` requires of every request
//! (`Authorization: Bearer <token>`, RFC 6750), read from a file kept like a secret.
//!
//! The file must be a regular file (symbolic links are followed: secret mounts use them),
//! owned by root or by the server's user, readable and writable by neither its group nor
//! others (`chmod 600`, as OpenSSH asks of a private key), and at most [`MAX_TOKEN_FILE`]
//! bytes. Its content, with surrounding whitespace (a final newline) trimmed, is the token: at
//! least [`MIN_TOKEN_LEN`] visible ASCII characters, no spaces. A request whose header does
//! not carry it is answered 401 with `WWW-Authenticate: Bearer realm="prfmon"`.
//!
//! **The comparison.** The server keeps the SHA-256 digest of the token (ring), and compares
//! the digest of what a request carries with it in constant time (`subtle`): 32 bytes against
//! 32 bytes whatever the lengths, so neither where the first difference is nor the token's
//! length shows in the time taken (a plain comparison of the texts stops at the first
//! difference, or at once when the lengths differ). Hashing the request's credentials takes
//! time that depends on their length only, which the client knows.
//!
//! The token travels in clear over plain HTTP: beyond a trusted network, serve over TLS
//! (`--tls-cert FILE --tls-key FILE`). The collecting subcommands read their `--token-file`
//! with the same rules to send it to a remote `prfmon serve`.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use subtle::ConstantTimeEq;

/// The largest token file read: a token is a line; 4 KiB is far above any real one and keeps
/// a wrong path (a log, a device) from being read whole.
pub const MAX_TOKEN_FILE: u64 = 4096;

/// The shortest token accepted: 16 characters, so that a placeholder (`changeme`) is not
/// taken for a secret.
pub const MIN_TOKEN_LEN: usize = 16;

/// The permission bits a token file may not have: any access for group or others.
const GROUP_OTHERS: u32 = 0o077;

/// A token file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The file cannot be opened or read.
    #[error("--token-file {}: cannot read it: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not a regular file, or too large.
    #[error("--token-file {}: {reason}", path.display())]
    NotAToken {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Owned by another user, or open to group or others.
    #[error(
        "--token-file {}: owner uid {owner}, mode {mode:04o}: a token file must be owned by root \
         or this server's user (uid {uid}) and be readable by no one else; chmod 600 it",
        path.display()
    )]
    Exposed {
        /// The file.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// Its permission bits.
        mode: u32,
        /// The server's effective uid.
        uid: u32,
    },
}

/// The token every request must carry: the token, and its SHA-256 digest for the comparison.
#[derive(Clone)]
pub struct BearerToken {
    token: Vec<u8>,
    digest: [u8; 32],
}

/// The SHA-256 digest of `bytes`.
fn digest(bytes: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(ring::digest::digest(&ring::digest::SHA256, bytes).as_ref());
    out
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(..)")
    }
}

impl BearerToken {
    /// Reads and checks the token file at `path` (see the [module docs](self)).
    ///
    /// # Errors
    ///
    /// [`TokenError::Io`], [`TokenError::NotAToken`] (not a regular file, too large, empty,
    /// too short, not visible ASCII), [`TokenError::Exposed`].
    pub fn read(path: &Path) -> Result<Self, TokenError> {
        let io = |source| TokenError::Io {
            path: path.to_path_buf(),
            source,
        };
        let not_a_token = |reason: String| TokenError::NotAToken {
            path: path.to_path_buf(),
            reason,
        };
        // O_NONBLOCK: a FIFO does not block the open (and is refused below).
        let fd = rustix::fs::open(
            path,
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC | rustix::fs::OFlags::NONBLOCK,
            rustix::fs::Mode::empty(),
        )
        .map_err(|e| io(e.into()))?;
        let file = std::fs::File::from(fd);
        let metadata = file.metadata().map_err(io)?;
        if !metadata.is_file() {
            return Err(not_a_token("not a regular file".into()));
        }
        let uid = rustix::process::geteuid().as_raw();
        let (owner, mode) = (metadata.uid(), metadata.mode() & 0o7777);
        if (owner != 0 && owner != uid) || mode & GROUP_OTHERS != 0 {
            return Err(TokenError::Exposed {
                path: path.to_path_buf(),
                owner,
                mode,
                uid,
            });
        }
        let mut text = Vec::new();
        file.take(MAX_TOKEN_FILE + 1)
            .read_to_end(&mut text)
            .map_err(io)?;
        if text.len() as u64 > MAX_TOKEN_FILE {
            return Err(not_a_token(format!(
                "larger than {MAX_TOKEN_FILE} bytes: not a token"
            )));
        }
        let token = text.trim_ascii();
        if token.len() < MIN_TOKEN_LEN {
            return Err(not_a_token(format!(
                "the token is {} characters long; use at least {MIN_TOKEN_LEN} (e.g. `openssl rand \
                 -hex 32`)",
                token.len()
            )));
        }
        if !token.iter().all(u8::is_ascii_graphic) {
            return Err(not_a_token(
                "the token must be visible ASCII characters without spaces".into(),
            ));
        }
        Ok(Self {
            token: token.to_vec(),
            digest: digest(token),
        })
    }

    /// The token, for a client to send (`prfmon query --computer HOST --token-file FILE`): the
    /// file is read with the same rules on both sides.
    pub fn secret(&self) -> String {
        // `read` accepted visible ASCII only.
        String::from_utf8_lossy(&self.token).into_owned()
    }

    /// Whether an `Authorization` header value carries the token: `Bearer <token>` (the scheme
    /// in any case, RFC 7235), the digests compared in constant time (see the
    /// [module docs](self)).
    pub fn accepts(&self, authorization: &str) -> bool {
        let Some((scheme, credentials)) = authorization.trim().split_once(' ') else {
            return false;
        };
        scheme.eq_ignore_ascii_case("bearer")
            && bool::from(digest(credentials.trim().as_bytes()).ct_eq(&self.digest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // What were the doc examples of this module when it was in the library.

    #[test]
    fn example_module() -> Result<(), Box<dyn std::error::Error>> {
        use std::os::unix::fs::PermissionsExt;

        let dir = tempfile::tempdir()?;
        let file = dir.path().join("token");
        std::fs::write(&file, "s3cret-token-for-prometheus\n")?;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))?;
        let token = BearerToken::read(&file)?;
        assert!(token.accepts("Bearer s3cret-token-for-prometheus"));
        assert!(!token.accepts("Bearer wrong"));
        assert!(!format!("{token:?}").contains("s3cret")); // never printed

        // Readable by others: refused.
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644))?;
        assert!(BearerToken::read(&file).is_err());
        Ok(())
    }

    #[test]
    fn prefixes_extensions_and_other_lengths_are_refused() -> Result<(), Box<dyn std::error::Error>>
    {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("token");
        let secret = "0123456789abcdef0123";
        std::fs::write(&file, secret)?;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))?;
        let token = BearerToken::read(&file)?;
        assert!(token.accepts(&format!("bearer {secret}")));
        assert!(token.accepts(&format!("Bearer  {secret} ")));
        for wrong in [
            &secret[..secret.len() - 1],
            &secret[..1],
            "",
            &format!("{secret}0"),
            &format!("{secret}{secret}"),
            "0123456789abcdef0124",
        ] {
            assert!(!token.accepts(&format!("Bearer {wrong}")), "{wrong:?}");
        }
        assert!(!token.accepts(secret), "no scheme");
        assert!(!token.accepts(&format!("Basic {secret}")));
        Ok(())
    }

    #[test]
    fn example_token_error() -> Result<(), Box<dyn std::error::Error>> {
        let err = BearerToken::read("/nonexistent/token".as_ref()).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/token"));
        Ok(())
    }
}
