//! `--tls-cert FILE --tls-key FILE`: the PEM files checked and read into a rustls server
//! configuration (rustls 0.23 with the ring provider, the same rustls the remote client uses),
//! served through tokio-rustls.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use super::{ServeError, TlsFiles};

/// Reads and checks the files, and makes the acceptor.
pub fn acceptor(files: &TlsFiles) -> Result<TlsAcceptor, ServeError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| ServeError::TlsFile {
            path: path.to_path_buf(),
            source,
        })
    };
    let (cert, key) = (read(&files.cert)?, read(&files.key)?);
    check_pem(&files.cert, &cert, &files.key, &key)?;
    let bad_pem = |path: &Path, reason: &'static str| ServeError::TlsPem {
        path: path.to_path_buf(),
        reason,
    };
    let chain = CertificateDer::pem_slice_iter(&cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| bad_pem(&files.cert, "a CERTIFICATE block does not decode"))?;
    let key = PrivateKeyDer::from_pem_slice(&key)
        .map_err(|_| bad_pem(&files.key, "the private key block does not decode"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(chain, key))
        .map_err(|e| ServeError::Tls {
            message: format!("{} and {}: {e}", files.cert.display(), files.key.display()),
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Checks that the certificate file holds a certificate and the key file an unencrypted
/// private key (PKCS#8, PKCS#1 RSA or SEC1 EC), with an error that names the file.
fn check_pem(cert_path: &Path, cert: &[u8], key_path: &Path, key: &[u8]) -> Result<(), ServeError> {
    if CertificateDer::pem_slice_iter(cert).next().is_none() {
        return Err(ServeError::TlsPem {
            path: cert_path.to_path_buf(),
            reason: "no CERTIFICATE block: give the server's certificate chain in PEM",
        });
    }
    if PrivateKeyDer::from_pem_slice(key).is_err() {
        return Err(ServeError::TlsPem {
            path: key_path.to_path_buf(),
            reason: "no PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY block (unencrypted); \
                     decrypt it with `openssl pkey -in KEY -out KEY.plain`",
        });
    }
    Ok(())
}
