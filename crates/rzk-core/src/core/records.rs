//! The core's record of each connection and of each live session.

use std::net::SocketAddr;

use rzk_proto::Id;
use rzk_sasl::DigestMd5Server;

use crate::sasl_mechanism::SharedExchange;

/// A connection's SASL exchange: the core's own DIGEST-MD5, or the shell's mechanism.
#[derive(Debug, Clone)]
pub(super) enum ConnSasl {
    Digest(DigestMd5Server),
    External(SharedExchange),
}

use crate::watches::ConnId;

/// Where a connection is in its life: waiting for its ConnectRequest, serving, or closed by
/// the core and waiting for the shell to carry the close out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ConnState {
    Handshake,
    Open,
    Closing,
}

/// One connection, from its first byte to its close.
#[derive(Debug, Clone)]
pub(super) struct Conn {
    pub(super) peer: SocketAddr,
    pub(super) state: ConnState,
    pub(super) session_id: Option<i64>,
    pub(super) auth: Vec<Id>,
    pub(super) received: u64,
    pub(super) sent: u64,
    pub(super) last_op: &'static str,
    /// Bytes of this connection's frames emitted and not yet polled.
    pub(super) output_bytes: usize,
    /// The SASL exchange in progress or done, once the connection has sent a sasl packet.
    pub(super) sasl: Option<ConnSasl>,
}

/// A session that has not ended, attached to a connection or waiting for one.
#[derive(Debug, Clone)]
pub(super) struct LiveSession {
    pub(super) timeout_ms: i32,
    pub(super) deadline_ms: u64,
    pub(super) conn: Option<ConnId>,
}
