//! What passes between the shell and the core: [`Now`] goes in; [`Output`] (with its
//! [`CloseReason`]) and [`ConnError`] come out; [`Counters`] are read for monitoring.

use rzk_proto::DecodeError;

use crate::watches::ConnId;

/// Wall-clock and monotonic time, passed in by the caller: the core never reads a clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// Monotonic milliseconds (any origin); drives session expiry and reaping.
    pub mono_ms: u64,
    /// Milliseconds since the Unix epoch; becomes ctime/mtime.
    pub wall_ms: i64,
}

/// Why the core asks the shell to close a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// The client sent closeSession.
    SessionClosed,
    /// The session expired.
    SessionExpired,
    /// The handshake named a session that is gone or used the wrong password.
    InvalidSession,
    /// The client has seen a zxid the server has not (ZooKeeper: "client must try another
    /// server"); answered by closing without a reply.
    ClientZxidAhead,
    /// Another connection resumed this connection's session.
    SessionMovedToNewConnection,
    /// An unknown or stand-alone op; ZooKeeper answers Unimplemented and closes.
    Unimplemented(i32),
    /// An auth packet for an unsupported scheme.
    AuthFailed,
    /// A request other than auth or sasl before the connection authenticated with one of
    /// `Config::enforced_auth_schemes`.
    AuthRequired,
    /// A SASL exchange failed: a wrong password, an unknown user, a token out of step or
    /// over its limits.
    SaslAuthFailed,
    /// An auth packet past `auth_ids_per_connection_max` or `auth_bytes_per_connection_max`.
    TooManyAuthIds,
    /// A watch past `watches_per_connection_max` or `watch_path_bytes_per_connection_max`.
    TooManyWatches,
    /// A `multiRead` reply larger than `reply_bytes_max`.
    ReplyTooLarge,
}

/// What the core asks the shell to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Write a whole frame (length prefix included) to a connection.
    Send {
        /// The connection.
        conn: ConnId,
        /// The frame.
        frame: Vec<u8>,
    },
    /// Close a connection after everything queued before this.
    Close {
        /// The connection.
        conn: ConnId,
        /// Why, for the log.
        reason: CloseReason,
    },
}

/// A frame the core refused; the shell logs it and closes the connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnError {
    /// The first frame is not a ConnectRequest.
    #[error("malformed ConnectRequest: {0}")]
    Handshake(DecodeError),
    /// A frame too short for a RequestHeader.
    #[error("malformed request header: {0}")]
    Header(DecodeError),
    /// A connection the core does not know (already closed).
    #[error("unknown connection {0}")]
    UnknownConnection(ConnId),
    /// A request with xid -1, which every client reserves for watch notifications: its
    /// reply would read as one, and would never count as an answer.
    #[error("request with the notification xid -1")]
    NotificationXid,
}

/// Counters for `srvr`, `stat` and `mntr`.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    /// Packets received.
    pub received: u64,
    /// Packets sent.
    pub sent: u64,
    /// Sessions expired by the server.
    pub sessions_expired: u64,
    /// Connections closed because of a protocol violation.
    pub protocol_errors: u64,
    /// SASL exchanges that failed (each closed its connection).
    pub sasl_failures: u64,
}
