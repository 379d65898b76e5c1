//! What both raw clients put on the wire and take off it: handshakes, frame lengths, replies.

use std::time::Duration;

use rzk_proto::jute::{Reader, Writer};
use rzk_proto::{
    xid, ConnectRequest, ConnectResponse, OpCode, ReplyHeader, Response, WatcherEvent,
};

use super::error::RawError;

/// The largest frame body either client accepts from a server, bytes. Far above any reply
/// ZooKeeper sends with its default `jute.maxbuffer` (just under 1 MiB); a length past it
/// means the stream is out of step.
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

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
pub(super) fn handshake_frame(req: &ConnectRequest) -> Vec<u8> {
    let mut w = Writer::frame();
    req.write(&mut w);
    w.finish_frame()
}

/// A frame's announced body length, checked against [`MAX_FRAME_BYTES`].
pub(super) fn frame_len(prefix: [u8; 4]) -> Result<usize, RawError> {
    let len = i32::from_be_bytes(prefix);
    match usize::try_from(len) {
        Ok(n) if n <= MAX_FRAME_BYTES => Ok(n),
        _ => Err(RawError::FrameLength(len)),
    }
}

/// Decodes the answer to a handshake.
pub(super) fn connect_response(frame: &[u8]) -> Result<ConnectResponse, RawError> {
    Ok(ConnectResponse::read(&mut Reader::new(frame))?)
}

/// Whether `reply` answers a request; notifications and pings' replies do not, and a caller
/// waiting for its answer skips them.
pub(super) fn answers_request(reply: &Reply) -> bool {
    reply.header.xid != xid::NOTIFICATION && reply.header.xid != xid::PING
}

/// Checks that a frame read while waiting for an event is one, or a ping's reply (`None`).
pub(super) fn as_notification(reply: &Reply) -> Result<Option<WatcherEvent>, RawError> {
    match reply.header.xid {
        xid::NOTIFICATION => reply.event().map(Some),
        xid::PING => Ok(None),
        _ => Err(unexpected(reply, "a notification")),
    }
}

/// Checks that a frame read while waiting for a ping's reply is one (`true`) or a
/// notification (`false`, skipped).
pub(super) fn is_ping_reply(reply: &Reply) -> Result<bool, RawError> {
    match reply.header.xid {
        xid::PING => Ok(true),
        xid::NOTIFICATION => Ok(false),
        _ => Err(unexpected(reply, "the ping's reply")),
    }
}

fn unexpected(reply: &Reply, waiting: &'static str) -> RawError {
    RawError::UnexpectedReply { waiting, xid: reply.header.xid, err: reply.header.err }
}
