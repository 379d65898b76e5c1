//! TLS on the secure client port: its settings (ZooKeeper's `ssl.*` keys), the rustls server
//! configuration built from PEM files, and the `x509` identity a verified client certificate
//! gives its connection.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{self, RootCertStore, ServerConfig as RustlsConfig, ServerConnection};
use tokio_rustls::TlsAcceptor;
use x509_cert::der::Decode;

/// Whether the secure port asks clients for a certificate (ZooKeeper's `ssl.clientAuth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// No certificate is asked for.
    None,
    /// A certificate is asked for; a client without one is served, one with an untrusted one
    /// is refused.
    Want,
    /// A certificate signed by the trust store is required (ZooKeeper's default).
    Need,
}

impl std::str::FromStr for ClientAuth {
    type Err = String;

    fn from_str(s: &str) -> Result<ClientAuth, String> {
        match s.to_ascii_lowercase().as_str() {
            "none" => Ok(ClientAuth::None),
            "want" => Ok(ClientAuth::Want),
            "need" => Ok(ClientAuth::Need),
            _ => Err(format!("`{s}` is not a client authentication mode (none, want or need)")),
        }
    }
}

/// The secure client port (`secureClientPort`) and its certificates, all PEM.
#[derive(Debug, Clone)]
pub struct TlsConfig {
    /// Address of the TLS listener; port 0 picks a free port.
    pub bind: SocketAddr,
    /// The server's certificate chain, leaf first (`ssl.keyStore.location`). It may be the same
    /// file as `key`, as ZooKeeper's PEM key store is.
    pub cert_chain: PathBuf,
    /// The server's private key (PKCS#8, PKCS#1 or SEC1), unencrypted.
    pub key: PathBuf,
    /// Certificates that sign acceptable client certificates (`ssl.trustStore.location`).
    pub ca: Option<PathBuf>,
    /// Whether clients must present a certificate.
    pub client_auth: ClientAuth,
    /// How long a client has to complete the handshake before it is disconnected
    /// (`ssl.handshakeDetectionTimeoutMillis`), milliseconds.
    pub handshake_timeout_ms: u64,
    /// Handshakes in progress at once; connections past it are closed at accept, so clients
    /// that never finish one cannot hold more than this many sockets.
    pub handshakes_max: usize,
}

impl TlsConfig {
    /// A secure port with ZooKeeper's defaults: client certificates required when `ca` is
    /// given, not asked for otherwise, and a 5 s handshake timeout.
    pub fn new(
        bind: SocketAddr,
        cert_chain: PathBuf,
        key: PathBuf,
        ca: Option<PathBuf>,
    ) -> TlsConfig {
        let client_auth = if ca.is_some() { ClientAuth::Need } else { ClientAuth::None };
        TlsConfig {
            bind,
            cert_chain,
            key,
            ca,
            client_auth,
            handshake_timeout_ms: 5_000,
            handshakes_max: 256,
        }
    }
}

/// Why the TLS settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file holds no usable PEM item of the kind needed.
    #[error("{}: {what}", path.display())]
    Pem {
        /// The file.
        path: PathBuf,
        /// What is missing or wrong.
        what: String,
    },
    /// Client certificates are asked for, but no trust store says which to accept.
    #[error(
        "client authentication `{0:?}` needs a trust store (ssl.trustStore.location or --tls-ca)"
    )]
    NoTrustStore(ClientAuth),
    /// rustls refused the certificates or key.
    #[error("TLS configuration: {0}")]
    Rustls(String),
}

/// The rustls acceptor for `cfg`, with the `ring` provider.
pub(crate) fn acceptor(cfg: &TlsConfig) -> Result<TlsAcceptor, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = certificates(&cfg.cert_chain)?;
    let key = private_key(&cfg.key)?;
    let builder = RustlsConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Rustls(e.to_string()))?;
    let builder = match (cfg.client_auth, &cfg.ca) {
        (ClientAuth::None, _) => builder.with_no_client_auth(),
        (mode, None) => return Err(TlsError::NoTrustStore(mode)),
        (mode, Some(ca)) => {
            let mut roots = RootCertStore::empty();
            for cert in certificates(ca)? {
                roots.add(cert).map_err(|e| TlsError::Pem {
                    path: ca.clone(),
                    what: format!("not a usable CA certificate: {e}"),
                })?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = match mode {
                ClientAuth::Want => verifier.allow_unauthenticated(),
                _ => verifier,
            };
            let verifier = verifier.build().map_err(|e| TlsError::Rustls(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(|e| TlsError::Rustls(format!("{}: {e}", cfg.key.display())))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read { path: path.to_path_buf(), source })
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem { path: path.to_path_buf(), what: e.to_string() })?;
    if certs.is_empty() {
        return Err(TlsError::Pem {
            path: path.to_path_buf(),
            what: "no PEM CERTIFICATE in the file (only PEM is read, not PKCS12 or JKS)".into(),
        });
    }
    Ok(certs)
}

fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem = read(path)?;
    if pem.windows(b"ENCRYPTED".len()).any(|w| w == b"ENCRYPTED") {
        return Err(TlsError::Pem {
            path: path.to_path_buf(),
            what: "the private key is encrypted; rzk reads unencrypted PEM keys only \
                   (ssl.keyStore.password is not supported)"
                .into(),
        });
    }
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| TlsError::Pem {
        path: path.to_path_buf(),
        what: format!("no PEM private key (PKCS#8, PKCS#1 or SEC1): {e}"),
    })
}

/// The `x509` id of a connection whose client presented a verified certificate: the subject's
/// distinguished name in RFC 2253 form, as ZooKeeper's `X509AuthenticationProvider` takes it
/// from `getSubjectX500Principal().getName()`.
pub(crate) fn x509_id(session: &ServerConnection) -> Option<String> {
    let leaf = session.peer_certificates()?.first()?;
    let cert = x509_cert::Certificate::from_der(leaf.as_ref()).ok()?;
    Some(cert.tbs_certificate.subject.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_auth_modes_parse_case_blind() {
        assert_eq!("NEED".parse::<ClientAuth>(), Ok(ClientAuth::Need));
        assert_eq!("want".parse::<ClientAuth>(), Ok(ClientAuth::Want));
        assert!("optional".parse::<ClientAuth>().unwrap_err().contains("none, want or need"));
    }
}
