//! [`RawError`]: what can go wrong on a raw connection.

use rzk_proto::DecodeError;

/// An error of a raw client. After any of them but [`RawError::Decode`] and
/// [`RawError::UnexpectedReply`] the connection is unusable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RawError {
    /// The TCP connection could not be made.
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        /// The address as given.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The TLS connection could not be made (the handshake failed, or the files were wrong).
    #[error(transparent)]
    Tls(#[from] rzk_client::tls::TlsError),
    /// The connection ended, or failed, before the server answered the session request. A
    /// server at its connection limit (ZooKeeper's and rzk's `maxClientCnxns`) refuses this
    /// way.
    #[error("{addr} closed the connection before answering the session request ({source})")]
    Handshake {
        /// The server's address.
        addr: String,
        /// What reading the answer ran into.
        source: Box<RawError>,
    },
    /// Reading or writing failed; a server that closed the connection shows as
    /// [`std::io::ErrorKind::UnexpectedEof`] (see [`RawError::is_closed`]).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A frame length below zero or above [`MAX_FRAME_BYTES`](super::MAX_FRAME_BYTES).
    #[error("bad frame length {0}")]
    FrameLength(i32),
    /// A frame that does not decode as what it should be.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// A reply to some other request while waiting for `waiting`.
    #[error("waiting for {waiting}, got the reply to xid {xid} (error {err})")]
    UnexpectedReply {
        /// What the caller waited for.
        waiting: &'static str,
        /// The reply's xid.
        xid: i32,
        /// Its error code.
        err: i32,
    },
}

impl RawError {
    /// Whether the server closed (or reset) the connection.
    pub fn is_closed(&self) -> bool {
        use std::io::ErrorKind;
        match self {
            RawError::Io(e) => matches!(
                e.kind(),
                ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset | ErrorKind::BrokenPipe
            ),
            RawError::Handshake { source, .. } => source.is_closed(),
            _ => false,
        }
    }
}
