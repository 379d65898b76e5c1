//! The one place an rzk-client error is classified: how the driver reacts to it, and
//! which [`Error`] variant it becomes.

use crate::Error;

pub(crate) type ZkError = rzk_client::Error;

/// How the driver treats a failed ZooKeeper operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// The node the request names does not exist.
    NoNode,
    /// The connection failed with the request in flight: the session may live on, and the
    /// outcome of a write is unknown.
    ConnectionLoss,
    /// The session is over (expired, closed, moved): nothing more happens on it.
    SessionEnd,
    /// Retrying cannot help: permissions, a bad ACL, an ephemeral parent, bad arguments,
    /// failed authentication. The recipe fails with the error.
    Fatal,
    /// Anything else: retry after a pause.
    Transient,
}

/// Classifies an error.
pub(crate) fn classify(e: &ZkError) -> Class {
    use rzk_client::Error as Z;
    match e {
        Z::NoNode => Class::NoNode,
        Z::ConnectionLoss | Z::Protocol(_) => Class::ConnectionLoss,
        Z::SessionExpired | Z::ClientClosed | Z::SessionMoved => Class::SessionEnd,
        Z::NoAuth
        | Z::InvalidAcl
        | Z::NoChildrenForEphemerals
        | Z::BadArguments(_)
        | Z::AuthFailed
        | Z::SaslAuthFailed { .. }
        | Z::SessionClosedRequireAuth => Class::Fatal,
        _ => Class::Transient,
    }
}

/// A reply the client could not decode (its connection was dropped), as the
/// `ConnectionLoss` it means; every other error unchanged.
pub(crate) fn normalize(e: ZkError) -> ZkError {
    match e {
        ZkError::Protocol(_) => ZkError::ConnectionLoss,
        e => e,
    }
}

impl Error {
    /// Maps an rzk-client error, attaching `path` where ZooKeeper's error names one.
    pub(crate) fn from_zk(err: ZkError, path: &str) -> Error {
        use rzk_client::Error as Z;
        let path = path.to_string();
        match err {
            Z::ConnectionLoss | Z::Protocol(_) => Error::ConnectionLoss,
            Z::SessionExpired => Error::SessionExpired,
            Z::SessionMoved => Error::SessionMoved,
            Z::Timeout => Error::OperationTimeout,
            Z::NoNode => Error::NoNode { path },
            Z::NodeExists => Error::NodeExists { path },
            Z::BadVersion => Error::BadVersion { path },
            Z::NotEmpty => Error::NotEmpty { path },
            Z::NoChildrenForEphemerals => Error::NoChildrenForEphemerals { path },
            Z::NoAuth => Error::NoAuth { path },
            Z::AuthFailed => {
                Error::AuthFailed { reason: "the server rejected the credentials".into() }
            }
            Z::SessionClosedRequireAuth => Error::AuthFailed {
                reason: "the server requires credentials it accepts (enforce.auth or \
                         sessionRequireClientSASLAuth) and closed the session"
                    .into(),
            },
            e @ Z::SaslAuthFailed { .. } => Error::AuthFailed { reason: e.to_string() },
            Z::InvalidAcl => Error::InvalidAcl,
            Z::NotReadOnly => Error::NotReadOnly,
            Z::Throttled => Error::Throttled,
            Z::QuotaExceeded => Error::QuotaExceeded,
            Z::Unimplemented => Error::Unimplemented,
            Z::MarshallingError => Error::MarshallingError,
            Z::RuntimeInconsistent => Error::RuntimeInconsistency,
            Z::BadArguments(msg) => Error::BadArguments((*msg).to_string()),
            other => Error::SystemError(other.to_string()),
        }
    }
}

impl From<ZkError> for Error {
    fn from(err: ZkError) -> Self {
        Error::from_zk(err, "")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert_eq!(classify(&ZkError::NoNode), Class::NoNode);
        assert_eq!(classify(&ZkError::SessionMoved), Class::SessionEnd);
        assert_eq!(classify(&ZkError::ClientClosed), Class::SessionEnd);
        assert_eq!(classify(&ZkError::NoAuth), Class::Fatal);
        assert_eq!(classify(&ZkError::NoChildrenForEphemerals), Class::Fatal);
        assert_eq!(classify(&ZkError::Throttled), Class::Transient);
    }
}
