//! [`BenchError`]: why a benchmark stopped.

use crate::config::{Strategy, Workload};
use rzk_wirekit::raw::RawError;

/// Why a benchmark stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// The server could not be reached at all.
    #[error(transparent)]
    Connect(RawError),
    /// The server closed a new connection before answering its session request.
    #[error(
        "{source}; a connection limit such as maxClientCnxns (default 60 per address) refuses \
         this way: for many sessions start rzk server with --max-client-cnxns 0"
    )]
    Refused {
        /// The handshake's failure.
        source: RawError,
    },
    /// A raw session failed.
    #[error(transparent)]
    Raw(#[from] RawError),
    /// An election call failed.
    #[error(transparent)]
    Election(#[from] rzk_recipes::Error),
    /// A managed client's call failed.
    #[error(transparent)]
    Zookeeper(#[from] rzk_client::Error),
    /// A socket or thread of the tool's own failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A task of the tool's own panicked or was cancelled.
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
    /// handoff-event or handoff-read with fewer than two participants.
    #[error(
        "handoff-event and handoff-read need --participants 2 or more: a handoff needs a \
         successor"
    )]
    NoSuccessor,
    /// A watch strategy the workload does not run.
    #[error(
        "{} does not run --strategy {}: handoff runs predecessor and herd, handoff-event \
         predecessor and race, the others predecessor",
        .0.name(), .1.name()
    )]
    Strategy(Workload, Strategy),
    /// A workload that does not run over TLS was given TLS.
    #[error(
        "{} does not run over TLS: only create, set, get, mixed, churn and populate do",
        .0.name()
    )]
    Tls(Workload),
    /// failover needs one address to put its proxy in front of.
    #[error("failover needs --connect as one ip:port, got {0}")]
    FailoverTarget(String),
    /// The run could not go on: the server stopped answering, a request failed, or what it
    /// answered breaks the workload's assumption (the message says which).
    #[error("{0}")]
    Stopped(String),
}

impl BenchError {
    /// Whether the user can fix it (the address, a flag), rather than the run having failed.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            BenchError::Connect(_)
                | BenchError::NoSuccessor
                | BenchError::Strategy(..)
                | BenchError::FailoverTarget(_)
                | BenchError::Tls(_)
        )
    }

    pub(crate) fn stopped(message: impl Into<String>) -> BenchError {
        BenchError::Stopped(message.into())
    }
}
