//! Where every client command connects: the `--connect` flags, and sessions opened with them.

use std::io::ErrorKind;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use rzk_client as zk;
use rzk_recipes::{session::Credential, tls::TlsConfig};

use crate::error::CliError;

/// Connection flags shared by every client command.
#[derive(Debug, Clone, Args)]
pub(crate) struct Connect {
    /// ZooKeeper or rzk servers, `host:port[,host:port...][/chroot]`.
    #[arg(long = "connect", global = true, env = "RZK_CONNECT", default_value = "127.0.0.1:2181")]
    pub hosts: String,
    /// Give up connecting after this long.
    #[arg(long, global = true, default_value_t = 5_000)]
    pub connect_timeout_ms: u64,
    /// Connect over TLS (to secureClientPort), trusting the CA certificates in this PEM file.
    #[arg(long, global = true, env = "RZK_TLS_CA", value_name = "PEM")]
    pub tls_ca: Option<PathBuf>,
    /// With --tls-ca: present this client certificate (PEM), for ssl.clientAuth.
    #[arg(long, global = true, env = "RZK_TLS_CERT", value_name = "PEM", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// With --tls-cert: its private key (PEM).
    #[arg(long, global = true, env = "RZK_TLS_KEY", value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Credentials sent before anything else on every connection, as zkCli's addauth takes
    /// them: `scheme:credentials` (`digest:user:password`). Repeatable. A command line is
    /// visible to other users: prefer --auth-file.
    #[arg(long = "auth", global = true, env = "RZK_AUTH", value_name = "SCHEME:CREDENTIALS",
          value_parser = parse_credential)]
    pub auth: Vec<Credential>,
    /// A file of credentials, one `scheme:credentials` per line (blank lines and lines
    /// starting with # are skipped), sent as --auth's are.
    #[arg(long, global = true, env = "RZK_AUTH_FILE", value_name = "FILE")]
    pub auth_file: Option<PathBuf>,
    /// Log every connection in with SASL DIGEST-MD5 first, as the JAAS section --jaas-section
    /// of this file says (the file a Java client reads through
    /// `java.security.auth.login.config`; by default the one CLIENT_JVMFLAGS or JVMFLAGS
    /// names that way, as for zkCli).
    #[arg(long, global = true, env = "RZK_JAAS", value_name = "FILE")]
    pub jaas: Option<PathBuf>,
    /// The JAAS section to log in with (ZooKeeper's `zookeeper.sasl.clientconfig`).
    #[arg(long, global = true, default_value = rzk_client::JAAS_CLIENT_SECTION, value_name = "NAME")]
    pub jaas_section: String,
    /// Let a read-only ZooKeeper member (cut off from its quorum, with
    /// readonlymode.enabled) serve the node commands, as zkCli's -r: reads work, writes fail.
    /// The recipe commands (elect, lock, ...) need writes and ignore it.
    #[arg(long, global = true, env = "RZK_READ_ONLY")]
    pub read_only: bool,
}

/// `scheme:credentials`, the scheme a non-empty word.
fn parse_credential(s: &str) -> Result<Credential, String> {
    match s.split_once(':') {
        Some((scheme, secret))
            if !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric()) =>
        {
            Ok(Credential { scheme: scheme.to_owned(), auth: secret.as_bytes().to_vec() })
        }
        _ => Err("expected scheme:credentials, e.g. digest:user:password".to_owned()),
    }
}

/// How long a connection may take before the hosts are probed for a refusal. A server that is
/// up answers well within it, so it sees no probe.
const PROBE_AFTER: Duration = Duration::from_millis(100);

impl Connect {
    /// The TLS files as one configuration, read and checked now; `None` without `--tls-ca`.
    pub(crate) fn tls(&self) -> Result<Option<TlsConfig>, CliError> {
        let Some(ca) = &self.tls_ca else {
            return match self.tls_cert {
                Some(_) => Err(CliError::usage("--tls-cert and --tls-key need --tls-ca")),
                None => Ok(None),
            };
        };
        let bad = |e: rzk_recipes::tls::TlsError| CliError::usage(format!("TLS: {e}"));
        let tls = TlsConfig::from_ca_file(ca).map_err(bad)?;
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => tls.with_identity_files(cert, key).map(Some).map_err(bad),
            _ => Ok(Some(tls)),
        }
    }

    /// Every credential of --auth and --auth-file, the file read now.
    pub(crate) fn credentials(&self) -> Result<Vec<Credential>, CliError> {
        let mut out = self.auth.clone();
        if let Some(path) = &self.auth_file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| CliError::usage(format!("--auth-file {}: {e}", path.display())))?;
            let lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim()));
            for (n, line) in lines.filter(|(_, l)| !l.is_empty() && !l.starts_with('#')) {
                let c = parse_credential(line).map_err(|e| {
                    CliError::usage(format!("--auth-file {} line {n}: {e}", path.display()))
                })?;
                out.push(c);
            }
        }
        Ok(out)
    }

    /// The SASL login of --jaas (or of the JVM flags' JAAS file), read now.
    pub(crate) fn sasl(&self) -> Result<Option<zk::SaslLogin>, CliError> {
        let Some(path) = crate::jaas::locate(self.jaas.as_deref(), crate::jaas::CLIENT_FLAG_VARS)
        else {
            return Ok(None);
        };
        let jaas = crate::jaas::read(&path).map_err(CliError::usage)?;
        zk::SaslLogin::from_jaas(&jaas, &self.jaas_section)
            .map(Some)
            .map_err(|e| CliError::usage(format!("JAAS file {}: {e}", path.display())))
    }

    /// A managed election session (rzk-recipes), or a clear error once the connect timeout
    /// has passed.
    pub(crate) async fn election_session(
        &self,
        session_timeout: Option<Duration>,
    ) -> Result<rzk_recipes::session::Session, CliError> {
        let limit = Duration::from_millis(self.connect_timeout_ms);
        let mut config =
            rzk_recipes::session::SessionConfig::new(&self.hosts).with_connect_timeout(limit);
        if let Some(t) = session_timeout {
            config = config.with_session_timeout(t);
        }
        for c in self.credentials()? {
            config = config.with_auth(c.scheme, c.auth);
        }
        if let Some(login) = self.sasl()? {
            config = config.with_sasl(login);
        }
        let tls = self.tls()?;
        if let Some(tls) = &tls {
            config = config.with_tls(tls.clone());
        }
        self.bounded(rzk_recipes::session::Session::connect(config), tls.as_ref()).await
    }

    /// A session, or a clear error once the connect timeout has passed.
    pub(crate) async fn client(&self) -> Result<zk::Client, CliError> {
        let limit = Duration::from_millis(self.connect_timeout_ms);
        let tls = self.tls()?;
        // Each attempt gets its share of the budget, so a black-holed first host leaves time
        // for the others (the client walks them from a shuffled start).
        let n = u32::try_from(hosts(&self.hosts).len().max(1)).unwrap_or(u32::MAX);
        let mut connector = zk::Client::connector()
            .with_connection_timeout(limit / n)
            .with_session_timeout(Duration::from_secs(10))
            .with_read_only(self.read_only);
        if let Some(tls) = &tls {
            connector = connector.with_transport(std::sync::Arc::new(tls.clone()));
        }
        for c in self.credentials()? {
            connector = connector.with_auth(c.scheme, c.auth);
        }
        if let Some(login) = self.sasl()? {
            connector = connector.with_sasl(login);
        }
        let connecting =
            async { connector.connect(&self.hosts).await.map_err(rzk_recipes::Error::from) };
        self.bounded(connecting, tls.as_ref()).await
    }

    /// Awaits `connecting` for at most the connect timeout. The client libraries retry refused
    /// hosts and failed TLS handshakes until then; so if it has not connected after
    /// `PROBE_AFTER`, each host gets one plain TCP connect (or, over TLS, one handshake), and
    /// when every one is refused the command fails at once with the reason, as zkCli does. A
    /// host that does not answer at all, or cannot be resolved, is left to the client library
    /// and the timeout.
    async fn bounded<T, E: std::fmt::Display>(
        &self,
        connecting: impl std::future::Future<Output = Result<T, E>>,
        tls: Option<&TlsConfig>,
    ) -> Result<T, CliError> {
        let limit = Duration::from_millis(self.connect_timeout_ms);
        let failed = |e: E| CliError::usage(format!("cannot connect to {}: {e}", self.hosts));
        tokio::pin!(connecting);
        if let Ok(done) = tokio::time::timeout(PROBE_AFTER.min(limit), &mut connecting).await {
            return done.map_err(failed);
        }
        let rest = limit.saturating_sub(PROBE_AFTER);
        tokio::select! {
            done = tokio::time::timeout(rest, &mut connecting) => match done {
                Ok(done) => done.map_err(failed),
                Err(_) => Err(CliError::usage(format!(
                    "cannot connect to {} within {} ms (is the server running?)",
                    self.hosts, self.connect_timeout_ms
                ))),
            },
            () = all_refuse(hosts(&self.hosts), limit) => Err(CliError::usage(format!(
                "cannot connect to {}: connection refused (is the server running?)",
                self.hosts
            ))),
            reason = all_refuse_tls(hosts(&self.hosts), tls, limit) => Err(CliError::usage(
                format!("cannot connect to {}: {reason}", self.hosts),
            )),
        }
    }
}

/// Completes only if every host refuses the TLS handshake (or the client after it), with the
/// first host's reason; otherwise, and without TLS, never.
async fn all_refuse_tls(hosts: Vec<String>, tls: Option<&TlsConfig>, limit: Duration) -> String {
    use rzk_recipes::tls::TlsError;
    let Some(tls) = tls else { return std::future::pending().await };
    let mut first = None;
    for host in hosts {
        match tokio::time::timeout(limit, tls.probe(&host)).await {
            Ok(Err(e @ TlsError::Handshake { .. })) => {
                first.get_or_insert_with(|| e.to_string());
            }
            _ => return std::future::pending().await,
        }
    }
    match first {
        Some(reason) => reason,
        None => std::future::pending().await,
    }
}

/// Completes only if every host refuses a TCP connection (each closed straight away);
/// otherwise never.
async fn all_refuse(hosts: Vec<String>, limit: Duration) {
    let mut probes = tokio::task::JoinSet::new();
    for host in hosts {
        probes.spawn(async move {
            let connect = tokio::net::TcpStream::connect(host);
            matches!(
                tokio::time::timeout(limit, connect).await,
                Ok(Err(e)) if e.kind() == ErrorKind::ConnectionRefused
            )
        });
    }
    let mut all_refused = !probes.is_empty();
    while let Some(refused) = probes.join_next().await {
        all_refused &= refused.unwrap_or(false);
    }
    if !all_refused {
        std::future::pending::<()>().await;
    }
}

/// The `host:port` addresses of a connect string (`host[:port][,...][/chroot]`); the port
/// defaults to ZooKeeper's 2181.
fn hosts(connect: &str) -> Vec<String> {
    let list = connect.split_once('/').map_or(connect, |(hosts, _chroot)| hosts);
    list.split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(|h| {
            let bare_ipv6 = h.matches(':').count() > 1 && !h.starts_with('[');
            let has_port = h.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok());
            if has_port && !bare_ipv6 {
                h.to_string()
            } else if h.starts_with('[') || !bare_ipv6 {
                format!("{h}:2181")
            } else {
                format!("[{h}]:2181")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_strings_split_into_addresses() {
        assert_eq!(hosts("127.0.0.1:2181"), ["127.0.0.1:2181"]);
        assert_eq!(hosts("zk1:2181,zk2,zk3:2182/app"), ["zk1:2181", "zk2:2181", "zk3:2182"]);
        assert_eq!(hosts("[::1]:2181,[::1]"), ["[::1]:2181", "[::1]:2181"]);
    }
}
