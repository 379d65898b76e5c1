//! A connection's writer task, started on the first bytes its socket does not take at once.
//!
//! The flusher writes a pump's frames straight to the socket (`output_queue`); only what the
//! socket leaves, a TLS record it holds sealed, or a close goes to the writer, which waits for
//! the socket to drain. Most connections never need one: an idle or a request-reply session
//! is written directly every time, and a task of its own (its future, its header, its place in
//! the scheduler) is memory every idle session would hold for nothing. So the task is spawned
//! by the first message, on the runtime the connection was admitted on, and the connection's
//! reader waits for it when the connection ends.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::flow_control::ConnCtl;
use crate::transport::WriteSide;

/// How long a connection the core has closed may take to accept the bytes queued before the
/// close: a client that reads nothing would otherwise keep it, and its slot, for ever.
const CLOSE_LINGER_MS: u64 = 2_000;

/// What the router hands a connection's writer task: bytes the socket did not take at once.
pub(crate) enum WriterMsg {
    /// One frame, or the unsent tail of one, and whether it answers a request (1) or not
    /// (0): the reader may read again once answers are on the wire.
    Bytes {
        bytes: Vec<u8>,
        replies: usize,
    },
    /// Bytes a direct write sealed (TLS) that the socket has not taken yet: finish them.
    SendSealed,
    Close,
}

/// The writer task's inbox: what the socket did not take at once, in order. It holds no
/// allocation until a message arrives, where a tokio channel allocates a block of 32 slots per
/// connection up front (a kilobyte for each of 19,000 idle connections). Unbounded, as that
/// channel was: the bytes it holds count in the connection's queued bytes, which the queue
/// limit bounds. Closed when the connection's `ConnOut` goes; what it holds is still received.
#[derive(Default)]
struct WriterInbox {
    msgs: parking_lot::Mutex<VecDeque<WriterMsg>>,
    ready: Notify,
    closed: AtomicBool,
}

impl WriterInbox {
    fn send(&self, msg: WriterMsg) {
        self.msgs.lock().push_back(msg);
        self.ready.notify_one();
    }

    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.ready.notify_one();
    }

    /// The next message; `None` once the inbox is closed and empty. Cancellation safe: a
    /// message is taken only when returned, and a wake-up it consumed is a permit `Notify`
    /// keeps for the next call.
    async fn recv(&self) -> Option<WriterMsg> {
        loop {
            if let Some(msg) = self.msgs.lock().pop_front() {
                return Some(msg);
            }
            if self.closed.load(Ordering::SeqCst) {
                return None;
            }
            self.ready.notified().await;
        }
    }
}

/// Whether a connection's writer task runs, and who waits for it.
enum Task {
    /// Not needed yet: the first message spawns it on this runtime.
    NotStarted(Handle),
    /// Running, and the reader waits for it as the connection ends.
    Watched(JoinHandle<()>),
    /// The reader has ended and waits for nothing: a task still to start (`Some`) then runs
    /// unheld until its inbox closes.
    Unwatched(Option<Handle>),
}

/// A connection's writer: its inbox, and its task once one is needed. The socket and the flow
/// control it writes with are its `ConnOut`'s, handed over when the task starts.
pub(crate) struct Writer {
    inbox: Arc<WriterInbox>,
    task: parking_lot::Mutex<Task>,
}

impl Writer {
    /// A connection's writer, whose task will run on the current runtime.
    ///
    /// # Panics
    /// Outside a tokio runtime (connections are admitted on one).
    pub(crate) fn new() -> Writer {
        let task = parking_lot::Mutex::new(Task::NotStarted(Handle::current()));
        Writer { inbox: Arc::default(), task }
    }

    /// Queues `msg` for the writer task, starting the task on `wr` and `ctl` if none runs.
    /// From any thread: the log thread flushes replies too.
    pub(crate) fn send(&self, msg: WriterMsg, wr: &Arc<WriteSide>, ctl: &Arc<ConnCtl>) {
        self.inbox.send(msg);
        let mut task = self.task.lock();
        let spawn = |on: &Handle| on.spawn(write_loop(wr.clone(), self.inbox.clone(), ctl.clone()));
        let next = match &*task {
            Task::NotStarted(h) => Task::Watched(spawn(h)),
            Task::Unwatched(Some(h)) => {
                drop(spawn(h));
                Task::Unwatched(None)
            }
            Task::Watched(_) | Task::Unwatched(None) => return,
        };
        *task = next;
    }

    /// The running task, if any, for the reader to wait for as the connection ends; a task
    /// started after this runs unwatched.
    pub(crate) fn unwatch(&self) -> Option<JoinHandle<()>> {
        let mut task = self.task.lock();
        match std::mem::replace(&mut *task, Task::Unwatched(None)) {
            Task::Watched(run) => Some(run),
            Task::NotStarted(h) => {
                *task = Task::Unwatched(Some(h));
                None
            }
            unwatched @ Task::Unwatched(_) => {
                *task = unwatched;
                None
            }
        }
    }

    /// No more messages: the task, if one runs, ends once it has written what it holds.
    pub(crate) fn close(&self) {
        self.inbox.close();
    }
}

/// Puts on the wire what the router could not write at once, in order. The router writes
/// directly again once `queued_bytes` is back to zero, which happens only after these bytes
/// are in the socket.
async fn write_loop(wr: Arc<WriteSide>, rx: Arc<WriterInbox>, ctl: Arc<ConnCtl>) {
    while let Some(msg) = rx.recv().await {
        let (bytes, replies) = match msg {
            WriterMsg::Bytes { bytes, replies } => (bytes, replies),
            WriterMsg::SendSealed => (Vec::new(), 0),
            WriterMsg::Close => {
                // The socket closes (FIN) when the reader drops its handle, which it does
                // as soon as it sees the stop.
                wr.try_close_notify();
                ctl.stop();
                return;
            }
        };
        if !put_on_wire(&wr, &ctl, &bytes).await {
            ctl.stop();
            return;
        }
        if bytes.is_empty() {
            continue;
        }
        ctl.queued_bytes.fetch_sub(bytes.len(), Ordering::SeqCst);
        ctl.replies_sent(replies);
        if replies == 0 {
            // The reader may be waiting for the queue to drain rather than for answers.
            ctl.resume_reading.notify_one();
        }
    }
}

/// Writes `bytes`, then what the transport still holds sealed, as the socket drains. False if
/// the write failed, or if the client took nothing for `CLOSE_LINGER_MS` after the core closed
/// the connection.
async fn put_on_wire(wr: &WriteSide, ctl: &ConnCtl, bytes: &[u8]) -> bool {
    let mut sent = 0;
    while sent < bytes.len() || wr.has_sealed() {
        let linger = async {
            if !ctl.closing.load(Ordering::SeqCst) {
                ctl.close_requested.notified().await;
            }
            tokio::time::sleep(Duration::from_millis(CLOSE_LINGER_MS)).await;
        };
        let writable = tokio::select! {
            w = wr.writable() => w,
            () = linger => {
                tracing::debug!("closing connection: the client took nothing for {CLOSE_LINGER_MS} ms after the close");
                return false;
            }
        };
        let written = match writable {
            Ok(()) if sent < bytes.len() => wr.try_write(&bytes[sent..]),
            Ok(()) => wr.try_send_sealed().map(|()| 0),
            Err(e) => Err(e),
        };
        match written {
            Ok(n) => sent += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => return false,
        }
    }
    true
}
