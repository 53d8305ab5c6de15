//! Certificates and keys, read and checked once at start, and the rustls configurations
//! built from them.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::sign::CertifiedKey;
use rustls::{ClientConfig, RootCertStore, ServerConfig};

/// Why a certificate, key or CA file cannot serve. Each names its file.
#[derive(Debug, thiserror::Error)]
pub enum TlsConfigError {
    /// The file cannot be read, or is not PEM.
    #[error("{}: cannot read it as PEM: {why}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What the reader said.
        why: String,
    },
    /// No certificate in a certificate (or CA) file.
    #[error("{}: holds no certificate (a PEM `CERTIFICATE` block)", path.display())]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// The first certificate cannot be parsed as X.509.
    #[error("{}: the certificate is not valid X.509: {why}", path.display())]
    BadCertificate {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        why: String,
    },
    /// The certificate's validity has ended.
    #[error("{}: the certificate expired at {not_after} (renew it)", path.display())]
    Expired {
        /// The file.
        path: PathBuf,
        /// Its `notAfter`, as the certificate states it.
        not_after: String,
    },
    /// The certificate's validity has not begun.
    #[error("{}: the certificate is not valid before {not_before}", path.display())]
    NotYetValid {
        /// The file.
        path: PathBuf,
        /// Its `notBefore`.
        not_before: String,
    },
    /// The key does not belong to the certificate.
    #[error("{}: the key does not match the certificate in {}", key.display(), cert.display())]
    KeyMismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
    /// rustls refused the key or the configuration.
    #[error("{}: {why}", path.display())]
    Rejected {
        /// The file at fault.
        path: PathBuf,
        /// rustls's words.
        why: String,
    },
    /// No trust anchor could be loaded for a client (no CA file and an empty host store).
    #[error("no CA to verify the server with: the host's trust store is empty or unreadable ({why}); pass --ca FILE")]
    NoTrustAnchors {
        /// What the trust store said.
        why: String,
    },
}

/// Fills `buf` from the crypto provider's secure random source (the operating system's, by
/// way of ring): for secrets a server hands out, such as the browser view's session
/// tokens.
///
/// # Errors
///
/// If the source fails (the operating system refused).
pub fn random_bytes(buf: &mut [u8]) -> Result<(), rustls::Error> {
    ring::default_provider()
        .secure_random
        .fill(buf)
        .map_err(|_| rustls::Error::FailedToGetRandomBytes)
}

/// The one crypto provider: ring (it builds with the C compiler alone).
fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring::default_provider())
}

fn unreadable(path: &Path, why: impl fmt::Display) -> TlsConfigError {
    TlsConfigError::Unreadable {
        path: path.to_path_buf(),
        why: why.to_string(),
    }
}

/// Every certificate in `path`, in order; at least one.
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    let chain = CertificateDer::pem_file_iter(path)
        .map_err(|e| unreadable(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| unreadable(path, e))?;
    if chain.is_empty() {
        return Err(TlsConfigError::NoCertificate {
            path: path.to_path_buf(),
        });
    }
    Ok(chain)
}

/// Checks that `now` lies within the certificate's validity dates.
fn check_validity(path: &Path, der: &CertificateDer<'_>) -> Result<(), TlsConfigError> {
    let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref()).map_err(|e| {
        TlsConfigError::BadCertificate {
            path: path.to_path_buf(),
            why: e.to_string(),
        }
    })?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let validity = cert.validity();
    if now > validity.not_after.timestamp() {
        return Err(TlsConfigError::Expired {
            path: path.to_path_buf(),
            not_after: validity.not_after.to_string(),
        });
    }
    if now < validity.not_before.timestamp() {
        return Err(TlsConfigError::NotYetValid {
            path: path.to_path_buf(),
            not_before: validity.not_before.to_string(),
        });
    }
    Ok(())
}

/// A server configuration from the certificate chain in `cert` (the server's own first)
/// and the private key in `key`, both PEM: TLS 1.2 and 1.3, no client certificates.
///
/// # Errors
///
/// A [`TlsConfigError`] naming the file: unreadable, no certificate, no key, a key that
/// does not match, a certificate expired or not yet valid.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, TlsConfigError> {
    let chain = certificates(cert)?;
    check_validity(cert, &chain[0])?;
    let private = PrivateKeyDer::from_pem_file(key).map_err(|e| unreadable(key, e))?;
    let provider = provider();
    let signing = provider
        .key_provider
        .load_private_key(private.clone_key())
        .map_err(|e| TlsConfigError::Rejected {
            path: key.to_path_buf(),
            why: e.to_string(),
        })?;
    CertifiedKey::new(chain.clone(), signing)
        .keys_match()
        .map_err(|_| TlsConfigError::KeyMismatch {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
        })?;
    let config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| TlsConfigError::Rejected {
            path: cert.to_path_buf(),
            why: e.to_string(),
        })?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| TlsConfigError::Rejected {
            path: key.to_path_buf(),
            why: e.to_string(),
        })?;
    Ok(Arc::new(config))
}

/// A client configuration that verifies servers against the CAs in `ca` (PEM), or against
/// the host's trust store when `ca` is `None`.
///
/// # Errors
///
/// A CA file that cannot be read or holds no usable certificate; no `ca` and a host
/// store that yields no certificate.
pub fn client_config(ca: Option<&Path>) -> Result<Arc<ClientConfig>, TlsConfigError> {
    let mut roots = RootCertStore::empty();
    match ca {
        Some(path) => {
            for der in certificates(path)? {
                roots.add(der).map_err(|e| TlsConfigError::Rejected {
                    path: path.to_path_buf(),
                    why: e.to_string(),
                })?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                let why = found
                    .errors
                    .first()
                    .map_or_else(|| "no certificate found".to_string(), ToString::to_string);
                return Err(TlsConfigError::NoTrustAnchors { why });
            }
        }
    }
    let config = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| TlsConfigError::NoTrustAnchors { why: e.to_string() })?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The name a client verifies the server's certificate against: an IP address or a DNS
/// name, as given.
///
/// # Errors
///
/// A `name` that is neither.
pub fn server_name(name: &str) -> Result<ServerName<'static>, String> {
    ServerName::try_from(name.to_string())
        .map_err(|_| format!("`{name}` is neither an IP address nor a DNS name"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, KeyPair};
    use std::fs;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        fs::write(&path, text).expect("write");
        path
    }

    fn self_signed(params: CertificateParams) -> (String, String) {
        let key = KeyPair::generate().expect("key");
        let cert = params.self_signed(&key).expect("certificate");
        (cert.pem(), key.serialize_pem())
    }

    fn localhost() -> CertificateParams {
        CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).expect("names")
    }

    #[test]
    fn a_matching_certificate_and_key_make_a_server_config() {
        let dir = tempfile::tempdir().expect("dir");
        let (cert, key) = self_signed(localhost());
        let config = server_config(
            &write(dir.path(), "c.pem", &cert),
            &write(dir.path(), "k.pem", &key),
        );
        assert!(config.is_ok(), "{config:?}");
        let client = client_config(Some(&dir.path().join("c.pem")));
        assert!(client.is_ok(), "{client:?}");
    }

    #[test]
    fn each_unusable_file_is_named_with_what_is_wrong() {
        let dir = tempfile::tempdir().expect("dir");
        let (cert, key) = self_signed(localhost());
        let (_, other_key) = self_signed(localhost());
        let cert_path = write(dir.path(), "c.pem", &cert);
        let key_path = write(dir.path(), "k.pem", &key);
        let other = write(dir.path(), "other.pem", &other_key);
        let text = |e: TlsConfigError| e.to_string();

        let missing = dir.path().join("missing.pem");
        let e = text(server_config(&missing, &key_path).expect_err("missing"));
        assert!(
            e.starts_with(&format!("{}: cannot read", missing.display())),
            "{e}"
        );

        let e = server_config(&key_path, &key_path).expect_err("a key is no certificate");
        assert!(matches!(e, TlsConfigError::NoCertificate { .. }), "{e}");

        let e = server_config(&cert_path, &cert_path).expect_err("a certificate is no key");
        assert!(text(e).starts_with(&cert_path.display().to_string()));

        let e = server_config(&cert_path, &other).expect_err("someone else's key");
        assert!(matches!(e, TlsConfigError::KeyMismatch { .. }), "{e}");
        assert!(text(e).contains("does not match"));

        let mut expired = localhost();
        expired.not_before = rcgen::date_time_ymd(2020, 1, 1);
        expired.not_after = rcgen::date_time_ymd(2021, 1, 1);
        let (old, old_key) = self_signed(expired);
        let e = server_config(
            &write(dir.path(), "old.pem", &old),
            &write(dir.path(), "old-key.pem", &old_key),
        )
        .expect_err("expired");
        assert!(matches!(e, TlsConfigError::Expired { .. }), "{e}");
        assert!(text(e).contains("expired at"));

        let mut later = localhost();
        later.not_before = rcgen::date_time_ymd(2200, 1, 1);
        later.not_after = rcgen::date_time_ymd(2201, 1, 1);
        let (new, new_key) = self_signed(later);
        let e = server_config(
            &write(dir.path(), "new.pem", &new),
            &write(dir.path(), "new-key.pem", &new_key),
        )
        .expect_err("not yet valid");
        assert!(matches!(e, TlsConfigError::NotYetValid { .. }), "{e}");
    }

    #[test]
    fn server_names_are_addresses_or_dns_names() {
        assert!(server_name("127.0.0.1").is_ok());
        assert!(server_name("feed.example").is_ok());
        assert!(server_name("not a name").is_err());
    }
}
