//! A hand-written ZooKeeper client that speaks raw frames, for load generation and for tests.
//!
//! The managed clients (zookeeper-client, rzk-election) hide what a load generator and a
//! protocol test need to control: which xid a request carries, how many requests are
//! outstanding, when bytes are written and read, and what a malformed frame does to the
//! server. This client does none of a session's bookkeeping (no reconnects, no watch
//! registry, no automatic pings unless asked): it writes the frames it is given and hands
//! back the frames it reads, decoded only as far as their [`ReplyHeader`]. Encoding and
//! decoding are rzk-proto's; this module only moves bytes.
//!
//! Two clients share one API:
//! - [`AsyncClient`], on tokio: the pipelined sessions of `rzk bench`, many per thread.
//! - [`BlockingClient`], on `std::net`: one session per thread, woken by its socket directly
//!   (the election workloads' participants, whose latency must be the server's and not a
//!   reactor's), and the protocol tests, which run without a runtime.
//!
//! Both offer: [`connect`](BlockingClient::connect) (a new session with a timeout) or
//! [`connect_with`](BlockingClient::connect_with) any [`ConnectRequest`] (to resume a session
//! with its id and password, see [`resume`]); [`call`](BlockingClient::call) (one request and
//! its reply); [`send`](BlockingClient::send) and [`send_all`](BlockingClient::send_all)
//! then [`read_reply`](BlockingClient::read_reply) to pipeline;
//! [`read_notification`](BlockingClient::read_notification); [`ping`](BlockingClient::ping);
//! [`close`](BlockingClient::close); and [`write_raw`](BlockingClient::write_raw) /
//! [`read_frame`](BlockingClient::read_frame) for bytes that need not be a valid request.
//!
//! ```no_run
//! use rzk_bench::raw::BlockingClient;
//! use rzk_proto::{PathWatch, Request};
//! use std::time::Duration;
//!
//! let (mut c, session) = BlockingClient::connect("127.0.0.1:2181", Duration::from_secs(10))?;
//! let reply = c.call(&Request::Exists(PathWatch { path: "/".into(), watch: false }), 1)?;
//! assert_eq!(reply.header.err, 0);
//! println!("session {:#x}", session.session_id);
//! c.close()?;
//! # Ok::<(), rzk_bench::raw::RawError>(())
//! ```

mod async_client;
mod blocking_client;

use std::time::Duration;

use rzk_proto::jute::{Reader, Writer};
use rzk_proto::{
    xid, ConnectRequest, ConnectResponse, DecodeError, OpCode, ReplyHeader, Response, WatcherEvent,
};

pub use async_client::AsyncClient;
pub use blocking_client::BlockingClient;

/// The largest frame body either client accepts from a server, bytes. Far above any reply
/// ZooKeeper sends with its default `jute.maxbuffer` (just under 1 MiB); a length past it
/// means the stream is out of step.
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

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
    /// A frame length below zero or above [`MAX_FRAME_BYTES`].
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

/// One frame from the server, its header decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The reply header: xid ([`xid::NOTIFICATION`] for a watch event), zxid and error code.
    pub header: ReplyHeader,
    /// The whole frame body, header included (kept whole: no copy per reply).
    frame: Vec<u8>,
}

impl Reply {
    /// Decodes the header of a frame body (without its length prefix).
    pub fn parse(frame: Vec<u8>) -> Result<Reply, RawError> {
        let header = ReplyHeader::read(&mut Reader::new(&frame))?;
        Ok(Reply { header, frame })
    }

    /// Everything after the header: the response record (only when `header.err` is 0), or
    /// the event of a notification.
    pub fn body(&self) -> &[u8] {
        &self.frame[ReplyHeader::LEN..]
    }

    /// The whole frame body, header included.
    pub fn frame(&self) -> &[u8] {
        &self.frame
    }

    /// Whether this is a watch notification rather than a reply.
    pub fn is_notification(&self) -> bool {
        self.header.xid == xid::NOTIFICATION
    }

    /// The response to a request of `op`; [`Response::Empty`] when the server answered with
    /// an error (a ZooKeeper reply then has no body).
    pub fn response(&self, op: OpCode) -> Result<Response, RawError> {
        if self.header.err != 0 {
            return Ok(Response::Empty);
        }
        Ok(Response::read(op, &mut Reader::new(self.body()))?)
    }

    /// The event of a notification.
    pub fn event(&self) -> Result<WatcherEvent, RawError> {
        Ok(WatcherEvent::read(&mut Reader::new(self.body()))?)
    }
}

/// Whether a frame body (without its length prefix) is a watch notification.
pub fn is_notification(frame: &[u8]) -> bool {
    frame.get(..4) == Some(&xid::NOTIFICATION.to_be_bytes())
}

/// The handshake that resumes session `session_id` (after a lost connection, or from another
/// connection), as a Java client sends it.
pub fn resume(session_id: i64, passwd: Vec<u8>, timeout: Duration) -> ConnectRequest {
    ConnectRequest { session_id, passwd, ..new_session(timeout) }
}

/// The handshake of a new session asking for `timeout` (whole milliseconds, at most
/// `i32::MAX`).
pub fn new_session(timeout: Duration) -> ConnectRequest {
    ConnectRequest::new_session(i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX))
}

/// `req` as a frame, length prefix included.
fn handshake_frame(req: &ConnectRequest) -> Vec<u8> {
    let mut w = Writer::frame();
    req.write(&mut w);
    w.finish_frame()
}

/// A frame's announced body length, checked against [`MAX_FRAME_BYTES`].
fn frame_len(prefix: [u8; 4]) -> Result<usize, RawError> {
    let len = i32::from_be_bytes(prefix);
    match usize::try_from(len) {
        Ok(n) if n <= MAX_FRAME_BYTES => Ok(n),
        _ => Err(RawError::FrameLength(len)),
    }
}

/// Decodes the answer to a handshake.
fn connect_response(frame: &[u8]) -> Result<ConnectResponse, RawError> {
    Ok(ConnectResponse::read(&mut Reader::new(frame))?)
}

/// Whether `reply` answers a request; notifications and pings' replies do not, and a caller
/// waiting for its answer skips them.
fn answers_request(reply: &Reply) -> bool {
    reply.header.xid != xid::NOTIFICATION && reply.header.xid != xid::PING
}

/// Checks that a frame read while waiting for an event is one, or a ping's reply (`None`).
fn as_notification(reply: &Reply) -> Result<Option<WatcherEvent>, RawError> {
    match reply.header.xid {
        xid::NOTIFICATION => reply.event().map(Some),
        xid::PING => Ok(None),
        _ => Err(unexpected(reply, "a notification")),
    }
}

/// Checks that a frame read while waiting for a ping's reply is one (`true`) or a
/// notification (`false`, skipped).
fn is_ping_reply(reply: &Reply) -> Result<bool, RawError> {
    match reply.header.xid {
        xid::PING => Ok(true),
        xid::NOTIFICATION => Ok(false),
        _ => Err(unexpected(reply, "the ping's reply")),
    }
}

fn unexpected(reply: &Reply, waiting: &'static str) -> RawError {
    RawError::UnexpectedReply { waiting, xid: reply.header.xid, err: reply.header.err }
}

#[cfg(test)]
mod tests;
