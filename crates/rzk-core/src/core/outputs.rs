//! The output queue and its durability barrier: what the core emits waits in `pending` until
//! the transactions before it are durable, then in `ready` until the shell polls it.

use rzk_proto::{ErrorCode, Response};

use crate::watches::ConnId;

use super::frames::reply_frame;
use super::interface::{CloseReason, Output};
use super::records::ConnState;
use super::Core;

impl Core {
    /// Queues `out` behind the barrier `barrier`: it is released once that zxid is durable and
    /// everything emitted before it is released, so outputs keep their order.
    pub(super) fn emit(&mut self, barrier: i64, out: Output) {
        if let Output::Send { conn, frame } = &out {
            if let Some(c) = self.conns.get_mut(conn) {
                c.sent += 1;
                c.output_bytes += frame.len();
            }
            self.counters.sent += 1;
            self.output_bytes += frame.len();
        }
        if self.pending.is_empty() && barrier <= self.durable_zxid {
            self.ready.push_back(out);
        } else {
            self.pending.push_back((barrier, out));
        }
    }

    /// Queues a frame behind the last applied zxid: whatever it shows may not be lost.
    pub(super) fn send(&mut self, conn: ConnId, frame: Vec<u8>) {
        let barrier = self.state.last_zxid();
        self.emit(barrier, Output::Send { conn, frame });
    }

    /// Queues a reply (header, and body when `err` is Ok) behind the last applied zxid.
    pub(super) fn reply(
        &mut self,
        conn: ConnId,
        xid: i32,
        err: ErrorCode,
        body: Option<&Response>,
    ) {
        let zxid = self.state.last_zxid();
        self.send(conn, reply_frame(xid, zxid, err, body));
    }

    /// Closes the connection once everything queued for it before is released; only once.
    pub(super) fn close(&mut self, conn: ConnId, reason: CloseReason) {
        if let Some(c) = self.conns.get_mut(&conn) {
            if c.state == ConnState::Closing {
                return;
            }
            c.state = ConnState::Closing;
        }
        let barrier = self.state.last_zxid();
        self.emit(barrier, Output::Close { conn, reason });
    }

    /// The next output the shell should carry out, if it is durable.
    pub fn poll_output(&mut self) -> Option<Output> {
        let out = self.ready.pop_front();
        if let Some(Output::Send { conn, frame }) = &out {
            self.output_bytes -= frame.len();
            // Saturating: a caller may reuse a closed connection's id while frames emitted for
            // the old one are still queued.
            if let Some(c) = self.conns.get_mut(conn) {
                c.output_bytes = c.output_bytes.saturating_sub(frame.len());
            }
        }
        out
    }

    /// Bytes of one connection's frames emitted and not yet polled: with a data directory,
    /// replies wait here until the writes before them are durable.
    pub fn conn_output_bytes(&self, conn: ConnId) -> usize {
        self.conns.get(&conn).map_or(0, |c| c.output_bytes)
    }

    /// Bytes of the frames emitted and not yet polled, durable or not. The shell compares it
    /// before and after a connection's requests to bound what they make it build.
    pub fn output_bytes(&self) -> usize {
        self.output_bytes
    }

    /// Reports that every transaction up to `zxid` is durable, releasing the outputs that
    /// waited for it.
    pub fn mark_durable(&mut self, zxid: i64) {
        if zxid > self.durable_zxid {
            self.durable_zxid = zxid;
        }
        while let Some((barrier, _)) = self.pending.front() {
            if *barrier > self.durable_zxid {
                break;
            }
            let (_, out) = self.pending.pop_front().expect("front exists");
            self.ready.push_back(out);
        }
    }

    /// The highest zxid reported durable.
    pub fn durable_zxid(&self) -> i64 {
        self.durable_zxid
    }
}
