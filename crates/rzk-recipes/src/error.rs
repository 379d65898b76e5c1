//! The crate's error type, named after ZooKeeper's `KeeperException.Code`.

use crate::loss::LossReason;

/// Everything that can go wrong in this crate.
///
/// Variants that mirror a ZooKeeper error keep ZooKeeper's name (`NoNode`, `ConnectionLoss`,
/// ...); the others describe an election outcome ([`Error::NotLeader`],
/// [`Error::ForeignNodes`]) or a misuse ([`Error::Closed`], [`Error::AlreadyStarted`]).
#[non_exhaustive]
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The connection was lost before the reply came. For a write the outcome is unknown.
    #[error("connection loss (the outcome of a write is unknown)")]
    ConnectionLoss,
    /// The ZooKeeper session expired (or was closed by someone else).
    #[error("session expired")]
    SessionExpired,
    /// The session moved to another server.
    #[error("session moved")]
    SessionMoved,
    /// No session could be established in time.
    #[error("operation timeout: no session established in time")]
    OperationTimeout,
    /// A node does not exist.
    #[error("no node: {path}")]
    NoNode {
        /// The path concerned, if known.
        path: String,
    },
    /// A node already exists.
    #[error("node exists: {path}")]
    NodeExists {
        /// The path concerned, if known.
        path: String,
    },
    /// A version check failed.
    #[error("bad version: {path}")]
    BadVersion {
        /// The path concerned, if known.
        path: String,
    },
    /// A node still has children.
    #[error("not empty: {path}")]
    NotEmpty {
        /// The path concerned, if known.
        path: String,
    },
    /// The election path lies under an ephemeral node.
    #[error("no children for ephemerals: {path}")]
    NoChildrenForEphemerals {
        /// The path concerned, if known.
        path: String,
    },
    /// The ACL of a node forbids the operation.
    #[error("not authorized: {path}")]
    NoAuth {
        /// The path concerned, if known.
        path: String,
    },
    /// Authentication failed; the session is unusable.
    #[error("authentication failed: {reason}")]
    AuthFailed {
        /// What the server refused, for a person (the SASL mechanism, or that the server
        /// requires credentials it accepts).
        reason: String,
    },
    /// An invalid ACL was given.
    #[error("invalid ACL")]
    InvalidAcl,
    /// A write was sent to a read-only server.
    #[error("not read-only")]
    NotReadOnly,
    /// The server throttled the request.
    #[error("throttled")]
    Throttled,
    /// A quota was exceeded.
    #[error("quota exceeded")]
    QuotaExceeded,
    /// The server does not implement the operation.
    #[error("unimplemented")]
    Unimplemented,
    /// The server could not decode the request.
    #[error("marshalling error")]
    MarshallingError,
    /// A condition of a multi did not hold.
    #[error("runtime inconsistency")]
    RuntimeInconsistency,
    /// Bad arguments, from the client library or from this crate's validation.
    #[error("bad arguments: {0}")]
    BadArguments(String),
    /// Anything else the client library reported.
    #[error("system error: {0}")]
    SystemError(String),
    /// A guarded write was refused, locally or by the server: this participant does not lead
    /// (any more). The write was not applied.
    #[error("not leader (node {node}): {reason}")]
    NotLeader {
        /// The leader node the write was guarded by.
        node: String,
        /// Why leadership is gone.
        reason: LossReason,
    },
    /// An operation of a guarded write failed after the leadership check passed. Nothing was
    /// applied (a multi is atomic).
    #[error("operation {index} of the guarded write failed: {source}")]
    OperationFailed {
        /// The index among the caller's operations (the leadership check is not counted).
        index: usize,
        /// What failed.
        source: Box<Error>,
    },
    /// The election path holds children this recipe cannot order; it refuses to lead.
    #[error(
        "election path {path} holds children this recipe cannot order: {names:?}; refusing to \
         lead (mixing recipes or clients in one path gives two leaders)"
    )]
    ForeignNodes {
        /// The election path.
        path: String,
        /// The foreign children.
        names: Vec<String>,
    },
    /// A race election's node exists and is not ephemeral: no session's end can free it, so
    /// waiting for it would never end.
    #[error(
        "node {path} exists and is not ephemeral: no candidate can ever win it; delete it or \
         race at another path"
    )]
    NotEphemeral {
        /// The race node.
        path: String,
    },
    /// A node's data is not in the layout the recipe reads (a counter that is not 8 or 4
    /// big-endian bytes, an id path of another batch size).
    #[error("bad data in {path}: {reason}")]
    BadData {
        /// The node concerned.
        path: String,
        /// What was expected and found.
        reason: String,
    },
    /// An optimistic update lost the race to other writers on every attempt its retry policy
    /// allows. Nothing was applied.
    #[error("{path}: no attempt of {attempts} succeeded against concurrent writers")]
    RetriesExhausted {
        /// The node concerned.
        path: String,
        /// The attempts made.
        attempts: u32,
    },
    /// A parent's sequence counter passed ZooKeeper's limit (2^31 - 1): it hands out no more
    /// increasing numbers.
    #[error("sequence numbers of {path} exhausted")]
    SequenceOverflow {
        /// The parent whose counter overflowed.
        path: String,
    },
    /// The recipe or the session is closed (Curator's `EOFException` / `IllegalStateException`).
    #[error("closed")]
    Closed,
    /// `start` was called twice.
    #[error("already started")]
    AlreadyStarted,

    // The caches.
    /// A cache's subtree grew beyond its node limit; the cache stopped.
    #[error("cache of {path} stopped: more than {max_nodes} nodes")]
    CacheFull {
        /// The cache path.
        path: String,
        /// The limit, in nodes.
        max_nodes: usize,
    },
    /// A cache subscriber fell behind by more than the event queue holds; these events were
    /// skipped (a new stream starts again from the current state).
    #[error("cache subscriber fell behind: {missed} events skipped")]
    CacheLagged {
        /// The events skipped.
        missed: u64,
    },
}

impl Error {
    /// True for [`Error::NotLeader`]: a guarded write was refused because leadership is gone.
    pub fn is_not_leader(&self) -> bool {
        matches!(self, Error::NotLeader { .. })
    }

    /// True when a write may or may not have been applied ([`Error::ConnectionLoss`]).
    pub fn is_indeterminate(&self) -> bool {
        matches!(self, Error::ConnectionLoss)
    }

    /// True for errors that a retry on a (possibly new) session can cure.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::ConnectionLoss
                | Error::SessionExpired
                | Error::SessionMoved
                | Error::OperationTimeout
                | Error::Throttled
        )
    }
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<Error>();
};
