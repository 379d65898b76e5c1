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

impl Connect {
    /// A managed election session (rzk-election), or a clear error once the connect timeout
    /// has passed.
    pub(crate) async fn election_session(
        &self,
        session_timeout: Option<Duration>,
    ) -> Result<rzk_election::Session, CliError> {
        self.fail_if_all_refuse().await?;
        let limit = Duration::from_millis(self.connect_timeout_ms);
        let mut config = rzk_election::SessionConfig::new(&self.hosts).with_connect_timeout(limit);
        if let Some(t) = session_timeout {
            config = config.with_session_timeout(t);
        }
        match tokio::time::timeout(limit, rzk_election::Session::connect(config)).await {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(CliError::usage(format!("cannot connect to {}: {e}", self.hosts))),
            Err(_) => Err(self.unreachable()),
        }
    }

    fn unreachable(&self) -> CliError {
        CliError::usage(format!(
            "cannot connect to {} within {} ms (is the server running?)",
            self.hosts, self.connect_timeout_ms
        ))
    }

    /// A session, or a clear error once the connect timeout has passed.
    pub(crate) async fn client(&self) -> Result<zk::Client, CliError> {
        self.fail_if_all_refuse().await?;
        let limit = Duration::from_millis(self.connect_timeout_ms);
        let connecting = zk::Client::connector()
            .with_connection_timeout(limit)
            .with_session_timeout(Duration::from_secs(10))
            .connect(&self.hosts);
        match tokio::time::timeout(limit, connecting).await {
            Ok(Ok(c)) => Ok(c),
            Ok(Err(e)) => Err(CliError::usage(format!("cannot connect to {}: {e}", self.hosts))),
            Err(_) => Err(self.unreachable()),
        }
    }

    /// Fails at once when every host refuses a TCP connection, as zkCli does, instead of
    /// letting the client library retry them until the connect timeout. One plain TCP connect
    /// per host, closed straight away: a server sees a connection that ends before its
    /// handshake. A host that does not answer at all, or cannot be resolved, is left to the
    /// client library and the connect timeout.
    async fn fail_if_all_refuse(&self) -> Result<(), CliError> {
        let limit = Duration::from_millis(self.connect_timeout_ms);
        let mut probes = tokio::task::JoinSet::new();
        for host in hosts(&self.hosts) {
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
        if all_refused {
            return Err(CliError::usage(format!(
                "cannot connect to {}: connection refused (is the server running?)",
                self.hosts
            )));
        }
        Ok(())
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
