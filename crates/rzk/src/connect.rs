//! Where every client command connects: the `--connect` flags, and sessions opened with them.

use std::io::ErrorKind;
use std::time::Duration;

use clap::Args;
use zookeeper_client as zk;

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
}

/// How long a connection may take before the hosts are probed for a refusal. A server that is
/// up answers well within it, so it sees no probe.
const PROBE_AFTER: Duration = Duration::from_millis(100);

impl Connect {
    /// A managed election session (rzk-recipes), or a clear error once the connect timeout
    /// has passed.
    pub(crate) async fn election_session(
        &self,
        session_timeout: Option<Duration>,
    ) -> Result<rzk_recipes::Session, CliError> {
        let limit = Duration::from_millis(self.connect_timeout_ms);
        let mut config = rzk_recipes::SessionConfig::new(&self.hosts).with_connect_timeout(limit);
        if let Some(t) = session_timeout {
            config = config.with_session_timeout(t);
        }
        self.bounded(rzk_recipes::Session::connect(config)).await
    }

    /// A session, or a clear error once the connect timeout has passed.
    pub(crate) async fn client(&self) -> Result<zk::Client, CliError> {
        let limit = Duration::from_millis(self.connect_timeout_ms);
        let connecting = zk::Client::connector()
            .with_connection_timeout(limit)
            .with_session_timeout(Duration::from_secs(10))
            .connect(&self.hosts);
        self.bounded(connecting).await
    }

    /// Awaits `connecting` for at most the connect timeout. The client libraries retry refused
    /// hosts until then; so if it has not connected after `PROBE_AFTER`, each host gets one
    /// plain TCP connect, and when every one is refused the command fails at once, as zkCli
    /// does. A host that does not answer at all, or cannot be resolved, is left to the client
    /// library and the timeout.
    async fn bounded<T, E: std::fmt::Display>(
        &self,
        connecting: impl std::future::Future<Output = Result<T, E>>,
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
        }
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
