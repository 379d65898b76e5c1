//! Each connection's output queue and its flusher.
//!
//! A pump fills the queues under the core's lock, so each holds its frames in the core's order;
//! the writes happen after the lock is released (on loopback a `sendto` also runs the
//! receiver's TCP input, so writing under the lock would stop every other connection for the
//! whole of a watch fan-out). One
//! thread at a time flushes a connection's queue: whoever finds it idle writes, and a thread
//! that queues more while another is writing leaves it to that one, so the order on the wire is
//! the queue's.
//!
//! The flusher gathers a connection's frames of one pump into one buffer and writes it straight
//! to the socket with `try_write` when that connection's writer task has nothing queued: one
//! `sendto` per connection per pump, and no task wake-up (a watch fan-out to N connections
//! would otherwise cost N channel sends and N wake-ups). Only what the socket does not take at
//! once goes to the writer task, which waits for the socket to drain; while it holds anything,
//! every later frame for that connection queues behind it.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use rzk_core::ConnId;
use rzk_proto::split_frame;
use tokio::task::JoinHandle;

use crate::flow_control::ConnCtl;
use crate::transport::WriteSide;
use crate::writer_task::{Writer, WriterMsg};

/// One connection's share of a pump: its frames in the core's order.
pub(crate) struct Outgoing {
    pub(crate) conn: ConnId,
    pub(crate) bytes: Vec<u8>,
    /// How many of the frames answer a request.
    pub(crate) replies: usize,
    /// Close the connection after these bytes.
    pub(crate) close: bool,
    /// Length-prefixed frames (everything but a four-letter word's answer).
    pub(crate) framed: bool,
}

/// Everything that puts bytes on one connection.
pub(crate) struct ConnOut {
    writer: Writer,
    /// Shared with the writer task; written directly only while the writer holds nothing.
    wr: Arc<WriteSide>,
    ctl: Arc<ConnCtl>,
    /// Frames routed here and not yet written. Filled only under the core's lock, so in the
    /// core's order; bounded by what one pump emits plus what arrives during one flush.
    queue: parking_lot::Mutex<OutQueue>,
}

#[derive(Default)]
struct OutQueue {
    pending: Vec<Outgoing>,
    /// A thread is writing this connection's frames and will take `pending` before it stops.
    flushing: bool,
}

/// Connections with frames queued by one pump, to be written once the core's lock is gone.
#[must_use = "the frames are written only by `Flush::run`, after the core's lock is released"]
pub(crate) struct Flush {
    conns: Vec<Arc<ConnOut>>,
    max_queued_bytes: usize,
}

impl Flush {
    /// An empty flush for up to `conns` connections.
    pub(crate) fn with_capacity(conns: usize, max_queued_bytes: usize) -> Flush {
        Flush { conns: Vec::with_capacity(conns), max_queued_bytes }
    }

    /// Adds a connection whose queue has frames.
    pub(crate) fn add(&mut self, conn: Arc<ConnOut>) {
        self.conns.push(conn);
    }

    /// Writes what the pump queued. Call it after releasing the core's lock.
    pub(crate) fn run(self) {
        for c in self.conns {
            c.flush(self.max_queued_bytes);
        }
    }
}

impl ConnOut {
    /// A connection's output: `wr` shared with its writer task, started when first needed.
    ///
    /// # Panics
    /// Outside a tokio runtime, which the writer task is to run on.
    pub(crate) fn new(wr: Arc<WriteSide>, ctl: Arc<ConnCtl>) -> ConnOut {
        ConnOut { writer: Writer::new(), wr, ctl, queue: Default::default() }
    }

    /// Hands `msg` to the writer task, which starts on this connection's socket if needed.
    fn queue_for_writer(&self, msg: WriterMsg) {
        self.writer.send(msg, &self.wr, &self.ctl);
    }

    /// The writer task, if one runs, for the connection's reader to wait for as it ends.
    pub(crate) fn unwatch_writer(&self) -> Option<JoinHandle<()>> {
        self.writer.unwatch()
    }

    /// Queues `out` behind this connection's earlier frames. Called under the core's lock.
    pub(crate) fn push(&self, out: Outgoing) {
        self.ctl.transit_bytes.fetch_add(out.bytes.len(), Ordering::SeqCst);
        self.queue.lock().pending.push(out);
    }

    /// Writes the queue in order unless another thread is already at it, in which case that
    /// thread picks up what was queued before it lets go.
    pub(crate) fn flush(&self, max_queued_bytes: usize) {
        let mut batch = {
            let mut q = self.queue.lock();
            if q.flushing || q.pending.is_empty() {
                return;
            }
            q.flushing = true;
            std::mem::take(&mut q.pending)
        };
        loop {
            for out in batch.drain(..) {
                let len = out.bytes.len();
                self.send(out, max_queued_bytes);
                // After `send`, which has written these bytes or counted them as queued.
                self.ctl.transit_bytes.fetch_sub(len, Ordering::SeqCst);
            }
            // The reader may be waiting on these bytes, and nothing else may wake it: once per
            // batch, not per frame, since it only looks again when woken.
            self.ctl.resume_reading.notify_one();
            let mut q = self.queue.lock();
            // Swapping keeps both vectors' allocations in use.
            std::mem::swap(&mut q.pending, &mut batch);
            if batch.is_empty() {
                q.flushing = false;
                return;
            }
        }
    }

    /// Sends `out` in order after everything sent before it: straight to the socket when
    /// nothing is queued, otherwise (or for what the socket does not take) via the writer.
    /// Only the connection's one flusher calls it.
    fn send(&self, out: Outgoing, max_queued_bytes: usize) {
        let conn = out.conn;
        if self.ctl.stopped.load(Ordering::SeqCst) {
            return;
        }
        let mut written = 0;
        // `queued_bytes` is only raised by the flusher (here), so zero means the writer has
        // put everything it was given on the wire and nothing can overtake it.
        if !out.bytes.is_empty() && self.ctl.queued_bytes.load(Ordering::SeqCst) == 0 {
            match self.wr.try_write(&out.bytes) {
                Ok(n) => written = n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => {
                    tracing::debug!(conn, "closing connection: write failed: {e}");
                    self.ctl.stop();
                    return;
                }
            }
        }
        if written == out.bytes.len() {
            if written > 0 && self.wr.has_sealed() {
                self.queue_for_writer(WriterMsg::SendSealed);
            }
            self.ctl.replies_sent(out.replies);
        } else if !self.queue_rest(&out, written, max_queued_bytes) {
            return;
        }
        if out.close {
            self.ctl.closing.store(true, Ordering::SeqCst);
            self.ctl.close_requested.notify_one();
            self.queue_for_writer(WriterMsg::Close);
        }
    }

    /// Hands the writer what the socket did not take, one frame (or the unsent tail of one)
    /// per message, so that each reply counts as sent, and the queue limit is checked, frame
    /// by frame, as the client drains them. False if the connection was dropped.
    fn queue_rest(&self, out: &Outgoing, written: usize, max_queued: usize) -> bool {
        let (conn, bytes) = (out.conn, &out.bytes);
        let mut done = 0;
        let mut pieces: Vec<(std::ops::Range<usize>, usize)> = Vec::new();
        if out.framed {
            let mut pos = 0;
            while pos < bytes.len() {
                // The core's own frames: whole and well formed; anything else goes as one piece.
                let end = match split_frame(&bytes[pos..], usize::MAX) {
                    Ok(Some(len)) => pos + 4 + len,
                    _ => bytes.len(),
                };
                let replies = usize::from(is_reply(&bytes[pos..end]));
                if end <= written {
                    done += replies;
                } else {
                    pieces.push((pos.max(written)..end, replies));
                }
                pos = end;
            }
        } else {
            pieces.push((written..bytes.len(), 0));
        }
        self.ctl.replies_sent(done);
        for (range, replies) in pieces {
            let len = range.len();
            let queued = self.ctl.queued_bytes.fetch_add(len, Ordering::SeqCst) + len;
            if queued > max_queued {
                tracing::warn!(
                    conn,
                    queued,
                    limit = max_queued,
                    "closing connection: client is not reading its replies"
                );
                self.ctl.stop();
                self.queue_for_writer(WriterMsg::Close);
                return false;
            }
            self.queue_for_writer(WriterMsg::Bytes { bytes: bytes[range].to_vec(), replies });
        }
        true
    }
}

/// Every frame but a notification (xid -1) answers one request.
pub(crate) fn is_reply(frame: &[u8]) -> bool {
    frame.get(4..8) != Some(&[0xff; 4])
}

impl Drop for ConnOut {
    /// The writer ends once it has written what it holds.
    fn drop(&mut self) {
        self.writer.close();
    }
}
