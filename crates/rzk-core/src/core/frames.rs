//! The reply and notification frames the core builds most often.

use rzk_proto::jute::Writer;
use rzk_proto::{xid, ErrorCode, EventType, ReplyHeader, Response, Stat, STATE_SYNC_CONNECTED};

/// A reply: its header and, when `err` is Ok, its body.
pub(super) fn reply_frame(xid: i32, zxid: i64, err: ErrorCode, body: Option<&Response>) -> Vec<u8> {
    // Room for a Stat and a short path, so the common replies never grow the buffer.
    let mut w = Writer::frame_with_capacity(ReplyHeader::LEN + Stat::LEN + 64);
    ReplyHeader { xid, zxid, err: err.as_i32() }.write(&mut w);
    if let (ErrorCode::Ok, Some(body)) = (err, body) {
        body.write(&mut w);
    }
    w.finish_frame()
}

/// A watch event, with the notification xid.
pub(super) fn notification_frame(zxid: i64, event_type: EventType, path: &str) -> Vec<u8> {
    let mut w = Writer::frame_with_capacity(28 + path.len());
    ReplyHeader { xid: xid::NOTIFICATION, zxid, err: 0 }.write(&mut w);
    w.i32(event_type as i32).i32(STATE_SYNC_CONNECTED).string(path);
    w.finish_frame()
}
