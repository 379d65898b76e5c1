//! The client's one error type, named after ZooKeeper's `KeeperException.Code`s.

use rzk_proto::ErrorCode;

use crate::types::SessionState;

/// Why a request or a connection attempt failed.
///
/// The variants a server sends carry ZooKeeper's names; the others say what the client saw.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The node does not exist.
    #[error("no node")]
    NoNode,
    /// The node already exists.
    #[error("node exists")]
    NodeExists,
    /// The version given is not the node's.
    #[error("bad version")]
    BadVersion,
    /// The node has children.
    #[error("node not empty")]
    NotEmpty,
    /// Ephemeral nodes may not have children.
    #[error("ephemeral nodes may not have children")]
    NoChildrenForEphemerals,
    /// The node's ACL denies the operation.
    #[error("not authorized")]
    NoAuth,
    /// The server rejected the credentials; the session is over.
    #[error("authentication failed")]
    AuthFailed,
    /// The server requires credentials it accepts before any request (ZooKeeper's
    /// `SESSIONCLOSEDREQUIRESASLAUTH`, -124: `enforce.auth.enabled`, or
    /// `sessionRequireClientSASLAuth`); it closed the connection, and the session is over.
    #[error("the server requires authentication and closed the session")]
    SessionClosedRequireAuth,
    /// SASL authentication failed: the server refused the credentials, or the exchange could
    /// not go on (a server with no SASL, a server that could not prove it knows the
    /// password). The session is over.
    #[error("SASL {mechanism} authentication failed: {reason}")]
    SaslAuthFailed {
        /// `DIGEST-MD5`, or `JAAS` for a login configuration that could not be used.
        mechanism: &'static str,
        /// What went wrong, for a person.
        reason: String,
    },
    /// The ACL is invalid.
    #[error("invalid ACL")]
    InvalidAcl,
    /// The session is over: expired on the server.
    #[error("session expired")]
    SessionExpired,
    /// The session moved to another server.
    #[error("session moved")]
    SessionMoved,
    /// The connection failed with the request in flight, or before it could be sent: a
    /// write's outcome is unknown; the session may live on.
    #[error("connection loss")]
    ConnectionLoss,
    /// The client was closed (by [`Client::close`](crate::Client::close) or by dropping
    /// every handle).
    #[error("client closed")]
    ClientClosed,
    /// No session could be established in time.
    #[error("timed out")]
    Timeout,
    /// A request the client refused to send, or the server rejected as malformed.
    #[error("bad arguments: {0}")]
    BadArguments(&'static str),
    /// A write sent to a read-only server.
    #[error("not read-only")]
    NotReadOnly,
    /// No watch matched a watch removal.
    #[error("no watcher")]
    NoWatcher,
    /// A quota was exceeded.
    #[error("quota exceeded")]
    QuotaExceeded,
    /// The server throttled the request.
    #[error("throttled")]
    Throttled,
    /// The server could not decode the request.
    #[error("marshalling error")]
    MarshallingError,
    /// The server does not implement the operation.
    #[error("unimplemented")]
    Unimplemented,
    /// The server found its state inconsistent.
    #[error("runtime inconsistency")]
    RuntimeInconsistent,
    /// Reconfiguration is disabled on the server.
    #[error("reconfig disabled")]
    ReconfigDisabled,
    /// A server error code this client does not name.
    #[error("server error code {0}")]
    Unexpected(i32),
    /// The server's reply could not be decoded; the connection was dropped.
    #[error("bad reply from the server: {0}")]
    Protocol(String),
}

impl Error {
    /// The error a server's reply code means; `None` for 0 (no error).
    pub fn from_code(code: i32) -> Option<Error> {
        use ErrorCode as C;
        let Some(known) = ErrorCode::from_i32(code) else { return Some(Error::Unexpected(code)) };
        Some(match known {
            C::Ok => return None,
            C::NoNode => Error::NoNode,
            C::NodeExists => Error::NodeExists,
            C::BadVersion => Error::BadVersion,
            C::NotEmpty => Error::NotEmpty,
            C::NoChildrenForEphemerals => Error::NoChildrenForEphemerals,
            C::NoAuth => Error::NoAuth,
            C::AuthFailed => Error::AuthFailed,
            C::InvalidAcl => Error::InvalidAcl,
            C::SessionExpired => Error::SessionExpired,
            C::SessionMoved => Error::SessionMoved,
            C::ConnectionLoss => Error::ConnectionLoss,
            C::BadArguments => Error::BadArguments("rejected by the server"),
            C::NotReadOnly => Error::NotReadOnly,
            C::NoWatcher => Error::NoWatcher,
            C::QuotaExceeded => Error::QuotaExceeded,
            C::Throttled => Error::Throttled,
            C::MarshallingError => Error::MarshallingError,
            C::Unimplemented => Error::Unimplemented,
            C::RuntimeInconsistency => Error::RuntimeInconsistent,
            C::ReconfigDisabled => Error::ReconfigDisabled,
            C::SessionClosedRequireSaslAuth => Error::SessionClosedRequireAuth,
            C::OperationTimeout | C::RequestTimeout => Error::Timeout,
            other => Error::Unexpected(other.as_i32()),
        })
    }

    /// What a request on a session that ended in `state` fails with; `None` while the
    /// session lives (a closed client, or one whose task is gone, reads as `ClientClosed`).
    pub(crate) fn ended_in(state: SessionState) -> Option<Error> {
        match state {
            SessionState::Expired => Some(Error::SessionExpired),
            SessionState::AuthFailed => Some(Error::AuthFailed),
            SessionState::Closed => Some(Error::ClientClosed),
            _ => None,
        }
    }

    /// Whether the session this error came from is over for good.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            Error::SessionExpired
                | Error::ClientClosed
                | Error::AuthFailed
                | Error::SaslAuthFailed { .. }
                | Error::SessionClosedRequireAuth
                | Error::SessionMoved
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_to_zookeeper_names() {
        assert_eq!(Error::from_code(0), None);
        assert_eq!(Error::from_code(-101), Some(Error::NoNode));
        assert_eq!(Error::from_code(-110), Some(Error::NodeExists));
        assert_eq!(Error::from_code(-112), Some(Error::SessionExpired));
        assert_eq!(Error::from_code(-4), Some(Error::ConnectionLoss));
        assert_eq!(Error::from_code(-124), Some(Error::SessionClosedRequireAuth));
        assert_eq!(Error::from_code(-9999), Some(Error::Unexpected(-9999)));
    }
}
