//! The TLS keys of `zoo.cfg`: `secureClientPort` and the `ssl.*` settings of its key and trust
//! stores, read as ZooKeeper's `X509Util` reads them, and the `x509` authentication provider.

use std::path::{Path, PathBuf};

use anyhow::bail;
use rzk_server::ClientAuth;

use super::keys::Ignored;

/// ZooKeeper's provider of the `x509` scheme, which rzk has built in.
pub(crate) const X509_PROVIDER: &str =
    "org.apache.zookeeper.server.auth.X509AuthenticationProvider";
/// ZooKeeper's default `ssl.handshakeDetectionTimeoutMillis`.
const HANDSHAKE_TIMEOUT_DEFAULT_MS: u64 = 5_000;

/// The TLS keys as written; `finish` checks them together.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct TlsKeys {
    pub secure_client_port: Option<u16>,
    pub secure_client_port_address: Option<std::net::IpAddr>,
    key_store_location: Option<String>,
    key_store_type: Option<String>,
    trust_store_location: Option<String>,
    trust_store_type: Option<String>,
    client_auth: Option<String>,
    handshake_timeout_ms: Option<u64>,
}

/// The secure port's settings once checked: files and modes, ready for the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TlsSettings {
    pub port: u16,
    pub address: Option<std::net::IpAddr>,
    /// ZooKeeper's PEM key store: the private key and the certificate chain in one file.
    pub key_store: PathBuf,
    pub trust_store: Option<PathBuf>,
    /// `ssl.clientAuth` when given; otherwise `need` with a trust store, `none` without.
    pub client_auth: Option<ClientAuth>,
    pub handshake_timeout_ms: u64,
}

fn parse<T: std::str::FromStr>(v: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    v.parse().map_err(|e: T::Err| e.to_string())
}

/// Applies a TLS key (`key` without `zookeeper.`); false if it is not one rzk applies.
///
/// # Errors
/// Why the value is bad, for the caller to place in the file.
pub(crate) fn apply(t: &mut TlsKeys, key: &str, v: &str) -> Result<bool, String> {
    match key {
        "secureClientPort" => t.secure_client_port = Some(parse(v)?),
        "secureClientPortAddress" => t.secure_client_port_address = Some(parse(v)?),
        "ssl.keyStore.location" => t.key_store_location = Some(v.to_string()),
        "ssl.keyStore.type" => t.key_store_type = Some(v.to_string()),
        "ssl.trustStore.location" => t.trust_store_location = Some(v.to_string()),
        "ssl.trustStore.type" => t.trust_store_type = Some(v.to_string()),
        "ssl.clientAuth" => {
            parse::<ClientAuth>(v)?;
            t.client_auth = Some(v.to_string());
        }
        "ssl.handshakeDetectionTimeoutMillis" => t.handshake_timeout_ms = Some(parse(v)?),
        // rzk's x509 scheme is built in; naming ZooKeeper's provider for it is what turns it
        // on there, and changes nothing here.
        "authProvider.x509" if v == X509_PROVIDER => {}
        _ => return Ok(false),
    }
    Ok(true)
}

/// What rzk does with the other `ssl.` keys of the client port, or `None` for a key it does
/// not take here. Passwords only open encrypted stores, which are refused when read.
pub(crate) fn ignored(key: &str) -> Option<Ignored> {
    let why = match key.strip_prefix("ssl.")? {
        "keyStore.password"
        | "keyStore.passwordPath"
        | "trustStore.password"
        | "trustStore.passwordPath" => {
            "rzk reads unencrypted PEM only; an encrypted key is refused"
        }
        "protocol" | "enabledProtocols" => "rzk speaks TLS 1.2 and 1.3 (rustls's safe defaults)",
        "ciphersuites" => "rzk uses rustls's safe default cipher suites",
        "hostnameVerification" | "clientHostnameVerification" => {
            "rzk does not check a client certificate's host name against the client's address"
        }
        "context.supplier.class" | "sslProvider" | "authProvider" => {
            "a setting of ZooKeeper's Java TLS stack"
        }
        _ => return None,
    };
    Some(Ignored::NotSupported(why))
}

/// Why rzk refuses an `ssl.` key's value, if it does.
pub(crate) fn refusal(key: &str, value: &str) -> Option<&'static str> {
    let on = value.eq_ignore_ascii_case("true") || value.eq_ignore_ascii_case("yes");
    match key {
        "ssl.crl" | "ssl.ocsp" if on => Some(
            "rzk does not check certificate revocation: a revoked client certificate would be \
             accepted; remove the key, or run Apache ZooKeeper",
        ),
        _ => None,
    }
}

impl TlsKeys {
    /// The secure port's settings, or `None` without `secureClientPort`.
    ///
    /// # Errors
    /// A missing key store, a key or trust store type other than PEM, a client
    /// authentication mode without a trust store.
    pub(crate) fn finish(&self, file: &str) -> anyhow::Result<Option<TlsSettings>> {
        let Some(port) = self.secure_client_port else {
            if self.key_store_location.is_some() {
                tracing::info!("{file}: ssl.keyStore.location without secureClientPort: no TLS");
            }
            return Ok(None);
        };
        let Some(key_store) = &self.key_store_location else {
            bail!("{file}: secureClientPort needs ssl.keyStore.location (a PEM file)");
        };
        pem_only(file, "ssl.keyStore", key_store, self.key_store_type.as_deref())?;
        let trust_store = self.trust_store_location.as_ref().map(PathBuf::from);
        if let Some(t) = &self.trust_store_location {
            pem_only(file, "ssl.trustStore", t, self.trust_store_type.as_deref())?;
        }
        // ZooKeeper's default is `need`, with the JVM's trust store if none is named; rzk has
        // no default trust store, so without one no client certificate is asked for.
        let client_auth = match &self.client_auth {
            Some(mode) => Some(mode.parse().map_err(anyhow::Error::msg)?),
            None => None,
        };
        if let (Some(mode @ (ClientAuth::Want | ClientAuth::Need)), None) =
            (client_auth, &trust_store)
        {
            bail!("{file}: ssl.clientAuth={mode:?} needs ssl.trustStore.location");
        }
        Ok(Some(TlsSettings {
            port,
            address: self.secure_client_port_address,
            key_store: PathBuf::from(key_store),
            trust_store,
            client_auth,
            handshake_timeout_ms: self.handshake_timeout_ms.unwrap_or(HANDSHAKE_TIMEOUT_DEFAULT_MS),
        }))
    }
}

/// Refuses a store that is not PEM, by its `type` key or, as ZooKeeper infers it without one,
/// by its file extension.
fn pem_only(file: &str, prefix: &str, location: &str, kind: Option<&str>) -> anyhow::Result<()> {
    let ext = Path::new(location).extension().and_then(|e| e.to_str()).unwrap_or("");
    let kind = kind.map(str::to_ascii_uppercase).unwrap_or_else(|| {
        match ext.to_ascii_lowercase().as_str() {
            "jks" => "JKS",
            "p12" | "pfx" => "PKCS12",
            "bcfks" => "BCFKS",
            _ => "PEM",
        }
        .to_string()
    });
    if kind != "PEM" {
        bail!(
            "{file}: {prefix}.type {kind} ({location}) is not supported: rzk reads PEM key and \
             trust stores only (convert with `openssl pkcs12 -in store.p12 -nodes -out store.pem`)"
        );
    }
    Ok(())
}
