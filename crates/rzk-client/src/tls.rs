//! TLS to a secure client port (the `tls` feature): the PEM files a session trusts and
//! presents, the connections the client opens through them (`TlsConfig` is a
//! [`Transport`](crate::Transport)), on rustls's `ring` provider, and a handshake probe that
//! names why a server refused.
//!
//! The client retries a failed handshake like any failed connect, until its timeout, and logs
//! the reason only; [`TlsConfig::probe`] makes one handshake itself so that a caller can report
//! it ("unknown issuer", "certificate required", ...) instead of a bare timeout.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

/// How long [`TlsConfig::probe`] waits, after its handshake, for the server to reject the
/// client's certificate. Under TLS 1.3 that rejection arrives as an alert after the client has
/// finished its side, so a completed handshake alone does not mean acceptance; a server that
/// accepted waits for the ZooKeeper connect request and sends nothing.
pub const PROBE_ALERT_WAIT: Duration = Duration::from_secs(1);

/// What can go wrong with the TLS files or a handshake.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A PEM file could not be read or held nothing usable.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// What was wrong with it.
        reason: String,
    },
    /// The certificates and key do not make a client configuration (e.g. a key that does not
    /// match its certificate).
    #[error("invalid TLS client configuration: {0}")]
    Config(String),
    /// The host could not be reached at all (no TLS was attempted).
    #[error("cannot reach {host}: {source}")]
    Connect {
        /// The `host:port` probed.
        host: String,
        /// The socket error.
        source: std::io::Error,
    },
    /// The host answered, and the TLS handshake failed or the server refused the client.
    #[error("TLS handshake with {host} failed: {reason}")]
    Handshake {
        /// The `host:port` probed.
        host: String,
        /// rustls's account of the failure.
        reason: String,
    },
}

/// The CA certificates a client trusts and, for client-certificate authentication, the
/// certificate and key it presents. Holds the PEM text, read once.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use rzk_client::tls::TlsConfig;
/// use rzk_client::Client;
///
/// let tls = TlsConfig::from_ca_file("ca.pem")?.with_identity_files("client.pem", "client.key")?;
/// // Names why a server refuses ("unknown issuer", ...) rather than timing out.
/// tls.probe("zk1.example:2281").await?;
/// let client = Client::connector().with_transport(Arc::new(tls)).connect("zk1.example:2281").await?;
/// # let _ = client;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct TlsConfig {
    ca: String,
    identity: Option<(String, String)>,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("TlsConfig").field("identity", &self.identity.is_some()).finish()
    }
}

impl TlsConfig {
    /// Trusts the CA certificates in the PEM file `ca`; presents no client certificate.
    ///
    /// # Errors
    /// [`TlsError::File`] if the file cannot be read or holds no certificate.
    pub fn from_ca_file(ca: impl AsRef<Path>) -> Result<TlsConfig, TlsError> {
        let (path, ca) = read(ca.as_ref())?;
        certificates(&path, &ca)?;
        Ok(TlsConfig { ca, identity: None })
    }

    /// Also presents the certificate chain in the PEM file `cert`, with the private key in
    /// `key` (PKCS#8, PKCS#1 or SEC1), for the server's client-certificate authentication.
    ///
    /// # Errors
    /// [`TlsError::File`] if a file cannot be read or holds no certificate or no key;
    /// [`TlsError::Config`] if the key does not fit a client configuration.
    pub fn with_identity_files(
        mut self,
        cert: impl AsRef<Path>,
        key: impl AsRef<Path>,
    ) -> Result<TlsConfig, TlsError> {
        let (cert_path, cert) = read(cert.as_ref())?;
        let (key_path, key) = read(key.as_ref())?;
        certificates(&cert_path, &cert)?;
        private_key(&key_path, &key)?;
        self.identity = Some((cert, key));
        self.client_config()?;
        Ok(self)
    }

    /// Whether a client certificate is presented.
    pub fn has_identity(&self) -> bool {
        self.identity.is_some()
    }

    /// The same trust and identity as a rustls configuration on the `ring` provider.
    fn client_config(&self) -> Result<ClientConfig, TlsError> {
        let mut roots = RootCertStore::empty();
        for cert in certificates(Path::new("CA"), &self.ca)? {
            roots.add(cert).map_err(|e| TlsError::Config(e.to_string()))?;
        }
        let builder = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?
            .with_root_certificates(roots);
        match &self.identity {
            None => Ok(builder.with_no_client_auth()),
            Some((cert, key)) => {
                let chain = certificates(Path::new("certificate"), cert)?;
                let key = private_key(Path::new("key"), key)?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| TlsError::Config(e.to_string()))
            }
        }
    }

    /// A TLS connection to `host` (`host:port`), the server verified against the host name,
    /// with Nagle's algorithm off: a session's connections, and the load generator's raw
    /// client's.
    ///
    /// # Errors
    /// [`TlsError::Connect`] when the TCP connect fails; [`TlsError::Handshake`] when the
    /// handshake fails; [`TlsError::Config`] for a host name that cannot be verified.
    ///
    /// # Cancellation safety
    /// Safe: dropping the future closes the half-made connection.
    pub async fn connect(&self, host: &str) -> Result<TlsStream<TcpStream>, TlsError> {
        let name = host.rsplit_once(':').map_or(host, |(name, _port)| name);
        let name = name.trim_start_matches('[').trim_end_matches(']');
        let server = ServerName::try_from(name.to_string())
            .map_err(|e| TlsError::Config(format!("server name {name:?}: {e}")))?;
        let connector = TlsConnector::from(Arc::new(self.client_config()?));
        let tcp = TcpStream::connect(host)
            .await
            .map_err(|source| TlsError::Connect { host: host.to_string(), source })?;
        tcp.set_nodelay(true)
            .map_err(|source| TlsError::Connect { host: host.to_string(), source })?;
        connector.connect(server, tcp).await.map_err(|e| handshake_failed(host, &e))
    }

    /// Makes one TLS handshake with `host` (see [`connect`](Self::connect)) and waits up to
    /// [`PROBE_ALERT_WAIT`] for a refusal of the client certificate. No ZooKeeper request is
    /// sent.
    ///
    /// # Errors
    /// As [`connect`](Self::connect); [`TlsError::Handshake`] also when the server refuses the
    /// client after the handshake.
    ///
    /// # Cancellation safety
    /// Safe: dropping the future closes the probe's connection; nothing else is touched.
    pub async fn probe(&self, host: &str) -> Result<(), TlsError> {
        let mut tls = self.connect(host).await?;
        let mut byte = [0u8; 1];
        match tokio::time::timeout(PROBE_ALERT_WAIT, tls.read(&mut byte)).await {
            Ok(Err(e)) => Err(handshake_failed(host, &e)),
            Ok(Ok(0)) => Err(TlsError::Handshake {
                host: host.to_string(),
                reason: "the server closed the connection after the handshake".to_string(),
            }),
            Ok(Ok(_)) | Err(_) => Ok(()),
        }
    }
}

impl crate::Transport for TlsConfig {
    fn open<'a>(&'a self, addr: &'a str) -> crate::OpenFuture<'a> {
        Box::pin(async move {
            let stream = self.connect(addr).await.map_err(std::io::Error::other)?;
            Ok(Box::new(stream) as Box<dyn crate::Stream>)
        })
    }
}

/// rustls's reason, which the I/O error wraps.
fn handshake_failed(host: &str, e: &std::io::Error) -> TlsError {
    let reason = e.get_ref().map_or_else(|| e.to_string(), ToString::to_string);
    TlsError::Handshake { host: host.to_string(), reason }
}

fn read(path: &Path) -> Result<(PathBuf, String), TlsError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| TlsError::File { path: path.to_path_buf(), reason: e.to_string() })?;
    Ok((path.to_path_buf(), text))
}

fn certificates(path: &Path, pem: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bad = |reason: String| TlsError::File { path: path.to_path_buf(), reason };
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("no PEM certificate in it".to_string()));
    }
    Ok(certs)
}

fn private_key(path: &Path, pem: &str) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|e| TlsError::File {
        path: path.to_path_buf(),
        reason: format!("no usable PEM private key: {e}"),
    })
}
