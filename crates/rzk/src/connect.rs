//! Where every client command connects: the `--connect` flags, and sessions opened with them.

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
}
