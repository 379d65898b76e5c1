//! `KeeperException.Code`: the error codes carried in `ReplyHeader.err`.

use std::fmt;

/// A ZooKeeper error code. The enum is the wire table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum ErrorCode {
    /// Success.
    Ok = 0,
    /// Range marker; also a generic server error.
    SystemError = -1,
    /// An op after the failing one in a multi.
    RuntimeInconsistency = -2,
    /// Data inconsistency.
    DataInconsistency = -3,
    /// Client-side: the connection was lost.
    ConnectionLoss = -4,
    /// The request body could not be decoded.
    MarshallingError = -5,
    /// The op is not implemented (or not enabled).
    Unimplemented = -6,
    /// Client-side timeout.
    OperationTimeout = -7,
    /// Bad arguments: invalid path, flags or TTL.
    BadArguments = -8,
    /// Unknown session (internal).
    UnknownSession = -12,
    /// Reconfig without a quorum.
    NewConfigNoQuorum = -13,
    /// Reconfig already running.
    ReconfigInProgress = -14,
    /// Range marker for API errors.
    ApiError = -100,
    /// The node does not exist.
    NoNode = -101,
    /// The ACL denies the operation.
    NoAuth = -102,
    /// Version mismatch.
    BadVersion = -103,
    /// Ephemeral nodes may not have children.
    NoChildrenForEphemerals = -108,
    /// The node already exists.
    NodeExists = -110,
    /// The node has children.
    NotEmpty = -111,
    /// The session has expired.
    SessionExpired = -112,
    /// Client-side: invalid callback.
    InvalidCallback = -113,
    /// Invalid ACL.
    InvalidAcl = -114,
    /// Authentication failed.
    AuthFailed = -115,
    /// Session moved to another server.
    SessionMoved = -118,
    /// Write to a read-only server.
    NotReadOnly = -119,
    /// Ephemeral on a local session.
    EphemeralOnLocalSession = -120,
    /// No such watcher.
    NoWatcher = -121,
    /// Client-side request timeout.
    RequestTimeout = -122,
    /// Reconfig is disabled.
    ReconfigDisabled = -123,
    /// The server requires SASL.
    SessionClosedRequireSaslAuth = -124,
    /// Quota exceeded.
    QuotaExceeded = -125,
    /// Throttled by the server.
    Throttled = -127,
}

impl ErrorCode {
    /// The error code for a wire value, if ZooKeeper defines it.
    pub fn from_i32(v: i32) -> Option<ErrorCode> {
        use ErrorCode::*;
        Some(match v {
            0 => Ok,
            -1 => SystemError,
            -2 => RuntimeInconsistency,
            -3 => DataInconsistency,
            -4 => ConnectionLoss,
            -5 => MarshallingError,
            -6 => Unimplemented,
            -7 => OperationTimeout,
            -8 => BadArguments,
            -12 => UnknownSession,
            -13 => NewConfigNoQuorum,
            -14 => ReconfigInProgress,
            -100 => ApiError,
            -101 => NoNode,
            -102 => NoAuth,
            -103 => BadVersion,
            -108 => NoChildrenForEphemerals,
            -110 => NodeExists,
            -111 => NotEmpty,
            -112 => SessionExpired,
            -113 => InvalidCallback,
            -114 => InvalidAcl,
            -115 => AuthFailed,
            -118 => SessionMoved,
            -119 => NotReadOnly,
            -120 => EphemeralOnLocalSession,
            -121 => NoWatcher,
            -122 => RequestTimeout,
            -123 => ReconfigDisabled,
            -124 => SessionClosedRequireSaslAuth,
            -125 => QuotaExceeded,
            -127 => Throttled,
            _ => return None,
        })
    }

    /// The wire value.
    pub fn as_i32(self) -> i32 {
        self as i32
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} ({})", self, self.as_i32())
    }
}
