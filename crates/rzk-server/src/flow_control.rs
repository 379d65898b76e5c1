//! [`ConnCtl`]: one connection's flow control, shared by its reader, its writer task and the
//! flusher: bytes waiting for the socket, requests in flight, and the stop and close signals.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

use crate::request_clock::{LatencyShard, RequestClock};

/// Per-connection flow control, shared by the reader, the writer and the router.
pub(crate) struct ConnCtl {
    pub(crate) queued_bytes: AtomicUsize,
    /// Bytes a pump has taken out of the core for this connection that its flusher has not
    /// yet written or queued. Counted against the reader's budget with `queued_bytes`: between
    /// the core's lock and the flush (the log thread's, for replies that waited on a sync)
    /// they are in neither, and a reader that looked then decoded batch after batch past the
    /// queue limit, and the client was dropped as not reading.
    pub(crate) transit_bytes: AtomicUsize,
    pub(crate) in_flight: AtomicUsize,
    pub(crate) resume_reading: Notify,
    pub(crate) stop: Notify,
    pub(crate) stopped: AtomicBool,
    /// The core has closed the connection: what is queued before the close gets
    /// `CLOSE_LINGER_MS` without progress to reach the socket.
    pub(crate) closing: AtomicBool,
    pub(crate) close_requested: Notify,
    /// The latency of each request, from its read to its reply's write.
    pub(crate) clock: RequestClock,
}

impl ConnCtl {
    /// A new connection's, its request latencies going to `latencies`.
    pub(crate) fn new(latencies: Arc<LatencyShard>) -> ConnCtl {
        ConnCtl {
            queued_bytes: AtomicUsize::new(0),
            transit_bytes: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            resume_reading: Notify::new(),
            stop: Notify::new(),
            stopped: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            close_requested: Notify::new(),
            clock: RequestClock::new(latencies),
        }
    }

    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.stop.notify_one();
    }

    /// Bytes taken from the core for this connection and not yet in its socket.
    pub(crate) fn queued_bytes(&self) -> usize {
        self.queued_bytes.load(Ordering::Relaxed) + self.transit_bytes.load(Ordering::Relaxed)
    }

    /// `replies` answers are on the wire: their requests no longer count as in flight.
    pub(crate) fn replies_sent(&self, replies: usize) {
        if replies > 0 {
            self.clock.answered(replies);
            let _ = self.in_flight.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                Some(n.saturating_sub(replies))
            });
            self.resume_reading.notify_one();
        }
    }
}
