//! What every client command shares: where to connect, and how errors end the process.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use zookeeper_client as zk;

/// An error that ends the command, with the exit status it maps to.
#[derive(Debug)]
pub(crate) struct CliError {
    pub code: u8,
    pub message: String,
}

impl CliError {
    /// Something the user can fix: a missing node, a bad path, an unreachable server (2).
    pub(crate) fn usage(message: impl Into<String>) -> CliError {
        CliError { code: 2, message: message.into() }
    }

    /// Anything else (1).
    pub(crate) fn runtime(message: impl Into<String>) -> CliError {
        CliError { code: 1, message: message.into() }
    }

    pub(crate) fn exit(self) -> ExitCode {
        eprintln!("rzk: {}", self.message);
        ExitCode::from(self.code)
    }
}

impl From<anyhow::Error> for CliError {
    fn from(e: anyhow::Error) -> Self {
        CliError::runtime(one_line(&e))
    }
}

/// An error and its causes on one line, each cause once. The libraries' errors name their
/// cause in their own message as well as returning it as their source, so `{:#}` printed it
/// again at every level ("cannot listen on A: Address already in use (os error 98): Address
/// already in use (os error 98)").
fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.ends_with(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that names its source in its message, as the libraries' errors do.
    #[derive(Debug)]
    struct Named(std::io::Error);

    impl std::fmt::Display for Named {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "cannot listen: {}", self.0)
        }
    }

    impl std::error::Error for Named {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn each_cause_is_printed_once() {
        let io = || std::io::Error::new(std::io::ErrorKind::AddrInUse, "in use");
        let named = anyhow::Error::new(Named(io())).context("starting the server");
        assert_eq!(one_line(&named), "starting the server: cannot listen: in use");
        // A cause the message above it does not name is kept.
        let bare = anyhow::Error::new(io()).context("starting the server");
        assert_eq!(one_line(&bare), "starting the server: in use");
    }
}

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
