//! The tokio shell: one accept loop, a reader and a writer task per connection, one timer.
//!
//! The core sits behind a mutex that is never held across an `.await`. A reader decodes every
//! whole frame it has, feeds them to the core under one lock, and routes what the core emits
//! into each connection's queue before releasing it, so every queue holds its frames in the
//! core's order.
//!
//! The writes happen after the core's lock is released (a `sendto` on loopback also runs the
//! receiver's TCP input, several microseconds: under the lock, a watch fan-out's hundred
//! events stopped every other connection for the whole burst). One thread at a time flushes a
//! connection's queue: whoever finds it idle writes, and a thread that queues more while
//! another is writing leaves it to that one, so the order on the wire is the queue's.
//!
//! The flusher gathers a connection's frames of one pump into one buffer and writes it straight
//! to the socket with `try_write` when that connection's writer task has nothing queued: one
//! `sendto` per connection per pump, and no task wake-up (a watch fan-out to N connections
//! used to cost N channel sends and N wake-ups). Only what the socket does not take at once
//! goes to the writer task, which waits for the socket to drain; while it holds anything, every
//! later frame for that connection queues behind it.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use parking_lot::MutexGuard;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rzk_core::{ConnId, Core, Now, Output, State, Txn};
use rzk_proto::{four_letter_word, split_frame};
use tokio::io::AsyncReadExt;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Notify};
use tokio::task::JoinSet;

use crate::config::{Durability, ServerConfig};
use crate::durable::{self, LogHost};

/// Errors starting a server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The data directory could not be recovered.
    #[error("cannot recover the data directory: {0}")]
    Recover(#[from] rzk_storage::StorageError),
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: io::Error,
    },
}

/// How long the timer may sleep at most; bounds the damage of a missed wake-up.
const TIMER_SLEEP_MS_MAX: u64 = 1_000;
/// How often a reader throttled by output still held in the core (replies waiting for a sync)
/// looks again.
const HELD_OUTPUT_POLL_MS: u64 = 5;
/// How long a connection the core has closed may take to accept the bytes queued before the
/// close: a client that reads nothing would otherwise keep it, and its slot, for ever.
const CLOSE_LINGER_MS: u64 = 2_000;
/// Bytes read from a socket per call.
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// What the router hands a connection's writer task: bytes the socket did not take at once.
enum WriterMsg {
    /// One frame, or the unsent tail of one, and whether it answers a request (1) or not
    /// (0): the reader may read again once answers are on the wire.
    Bytes {
        bytes: Vec<u8>,
        replies: usize,
    },
    Close,
}

/// One connection's share of a pump: its frames in the core's order.
struct Outgoing {
    conn: ConnId,
    bytes: Vec<u8>,
    /// How many of the frames answer a request.
    replies: usize,
    /// Close the connection after these bytes.
    close: bool,
    /// Length-prefixed frames (everything but a four-letter word's answer).
    framed: bool,
}

/// Per-connection flow control, shared by the reader, the writer and the router.
#[derive(Default)]
struct ConnCtl {
    queued_bytes: AtomicUsize,
    /// Bytes a pump has taken out of the core for this connection that its flusher has not
    /// yet written or queued. Counted against the reader's budget with `queued_bytes`: between
    /// the core's lock and the flush (the log thread's, for replies that waited on a sync)
    /// they are in neither, and a reader that looked then decoded batch after batch past the
    /// queue limit, and the client was dropped as not reading.
    transit_bytes: AtomicUsize,
    in_flight: AtomicUsize,
    resume_reading: Notify,
    stop: Notify,
    stopped: AtomicBool,
    /// The core has closed the connection: what is queued before the close gets
    /// `CLOSE_LINGER_MS` without progress to reach the socket.
    closing: AtomicBool,
    close_requested: Notify,
}

impl ConnCtl {
    fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.stop.notify_one();
    }

    /// `replies` answers are on the wire: their requests no longer count as in flight.
    fn replies_sent(&self, replies: usize) {
        if replies > 0 {
            let _ = self.in_flight.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                Some(n.saturating_sub(replies))
            });
            self.resume_reading.notify_one();
        }
    }
}

struct ConnHandle {
    out: Arc<ConnOut>,
    ip: IpAddr,
}

/// Everything that puts bytes on one connection.
struct ConnOut {
    tx: mpsc::UnboundedSender<WriterMsg>,
    /// Shared with the writer task; written directly only while the writer holds nothing.
    wr: Arc<OwnedWriteHalf>,
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
    /// Writes what the pump queued. Call it after releasing the core's lock.
    pub(crate) fn run(self) {
        for c in self.conns {
            c.flush(self.max_queued_bytes);
        }
    }
}

impl ConnOut {
    /// Queues `out` behind this connection's earlier frames. Called under the core's lock.
    fn push(&self, out: Outgoing) {
        self.ctl.transit_bytes.fetch_add(out.bytes.len(), Ordering::SeqCst);
        self.queue.lock().pending.push(out);
    }

    /// Writes the queue in order unless another thread is already at it, in which case that
    /// thread picks up what was queued before it lets go.
    fn flush(&self, max_queued_bytes: usize) {
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
            self.ctl.replies_sent(out.replies);
        } else if !self.queue_rest(&out, written, max_queued_bytes) {
            return;
        }
        if out.close {
            self.ctl.closing.store(true, Ordering::SeqCst);
            self.ctl.close_requested.notify_one();
            let _ = self.tx.send(WriterMsg::Close);
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
                let _ = self.tx.send(WriterMsg::Close);
                return false;
            }
            let _ = self.tx.send(WriterMsg::Bytes { bytes: bytes[range].to_vec(), replies });
        }
        true
    }
}

/// Orders one pump's connections so that those getting only notifications are written before
/// those getting replies, as ZooKeeper sends a change's watch events before the reply to the
/// request that made it. Each `sendto` to a client asleep on an idle CPU costs the sender its
/// wake-up: in an idle election handoff, writing the old leader's delete reply first held the
/// successor's event back by ~45 us in half the rounds. Each connection's own frames keep
/// the core's order; only connections are reordered.
fn notifications_first(outgoing: &mut [Outgoing]) {
    outgoing.sort_unstable_by_key(|o| o.replies > 0);
}

/// Every frame but a notification (xid -1) answers one request.
fn is_reply(frame: &[u8]) -> bool {
    frame.get(4..8) != Some(&[0xff; 4])
}

pub(crate) struct Shared {
    pub(crate) core: Core,
    /// Where transactions go to be made durable; `None` in memory.
    log_tx: Option<std::sync::mpsc::Sender<Vec<Txn>>>,
    conns: HashMap<ConnId, ConnHandle>,
    per_ip: HashMap<IpAddr, usize>,
    next_conn: ConnId,
    /// Scratch for `pump`: each connection's frames of one pump, and where each connection
    /// sits in it. Kept to reuse their allocations.
    outgoing: Vec<Outgoing>,
    outgoing_at: HashMap<ConnId, usize>,
}

pub(crate) struct Inner {
    /// The core and the connections. parking_lot's mutex, for its eventual fairness: with
    /// std's, the connection tasks re-took the lock so fast under load that the log thread,
    /// woken to mark a batch durable, lost the race again and again (over a thousand waits of
    /// 5 ms or more while populating 1M znodes), and every write's reply waited with it.
    /// It does not poison: after a panic mid-update the state is still the best we have.
    shared: parking_lot::Mutex<Shared>,
    /// Set when the server can no longer keep its promises (a failed fsync).
    fatal: Mutex<Option<String>>,
    failed: Notify,
    origin: Instant,
    config: ServerConfig,
    timer_wake: Notify,
    timer_target_ms: AtomicU64,
    shutdown: Notify,
}

impl Inner {
    pub(crate) fn now(&self) -> Now {
        let wall_ms =
            SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
        Now { mono_ms: self.origin.elapsed().as_millis() as u64, wall_ms }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock()
    }

    /// Carries out everything the core has emitted: transactions to the log thread, frames
    /// to their connections' queues. Called with the lock held after every core call; the
    /// caller runs the returned [`Flush`] once it has released the lock.
    pub(crate) fn pump(&self, sh: &mut Shared) -> Flush {
        if sh.core.has_txns() {
            match &sh.log_tx {
                // Outputs stay queued in the core until the log thread reports them durable.
                Some(tx) => {
                    let txns: Vec<Txn> = sh.core.drain_txns().collect();
                    let _ = tx.send(txns);
                }
                // In memory a transaction is durable once applied.
                None => {
                    let last = sh.core.state().last_zxid();
                    sh.core.drain_txns().for_each(drop);
                    sh.core.mark_durable(last);
                }
            }
        }
        let mut outgoing = std::mem::take(&mut sh.outgoing);
        let mut at = std::mem::take(&mut sh.outgoing_at);
        while let Some(out) = sh.core.poll_output() {
            let (conn, frame, close) = match out {
                Output::Send { conn, frame } => (conn, frame, false),
                Output::Close { conn, reason } => {
                    tracing::debug!(conn, ?reason, "closing connection");
                    (conn, Vec::new(), true)
                }
            };
            let replies = usize::from(!close && is_reply(&frame));
            match at.get(&conn) {
                Some(&i) => {
                    let o = &mut outgoing[i];
                    if !o.close {
                        o.bytes.extend_from_slice(&frame);
                        o.replies += replies;
                        o.close = close;
                    }
                }
                None => {
                    at.insert(conn, outgoing.len());
                    outgoing.push(Outgoing { conn, bytes: frame, replies, close, framed: true });
                }
            }
        }
        notifications_first(&mut outgoing);
        let mut flush = Flush {
            conns: Vec::with_capacity(outgoing.len()),
            max_queued_bytes: self.config.max_queued_bytes_per_connection,
        };
        for out in outgoing.drain(..) {
            if let Some(h) = sh.conns.get(&out.conn) {
                h.out.push(out);
                flush.conns.push(h.out.clone());
            }
        }
        at.clear();
        sh.outgoing = outgoing;
        sh.outgoing_at = at;
        if sh.core.next_deadline() < self.timer_target_ms.load(Ordering::SeqCst) {
            self.timer_wake.notify_one();
        }
        flush
    }
}

/// A running rzk server.
pub struct Server {
    inner: Arc<Inner>,
    local_addr: SocketAddr,
    tasks: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Binds the listen address and starts serving on the current tokio runtime.
    ///
    /// # Errors
    /// [`ServerError::Bind`] if the address cannot be bound.
    ///
    /// # Cancellation safety
    /// Binding is the only await; dropping the future before it completes leaves nothing
    /// running.
    pub async fn start(config: ServerConfig) -> Result<Server, ServerError> {
        let recovered = match &config.durability {
            Durability::InMemory => None,
            Durability::Disk(disk) => {
                let disk = disk.clone();
                let r = tokio::task::spawn_blocking(move || durable::recover(&disk))
                    .await
                    .expect("recovery task")?;
                Some(r)
            }
        };
        let listener = TcpListener::bind(config.bind)
            .await
            .map_err(|source| ServerError::Bind { addr: config.bind, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| ServerError::Bind { addr: config.bind, source })?;
        let origin = Instant::now();
        let mut core_config = config.core.clone();
        core_config.client_port = local_addr.port();
        core_config.max_packet_bytes = config.max_packet_bytes;
        // A client with the same `jute.maxbuffer` as the server could not read a larger reply.
        core_config.reply_bytes_max = core_config.reply_bytes_max.max(config.max_packet_bytes);
        let inner = Arc::new(Inner {
            fatal: Mutex::new(None),
            failed: Notify::new(),
            shared: parking_lot::Mutex::new(Shared {
                core: Core::new(core_config, Now { mono_ms: 0, wall_ms: 0 }),
                log_tx: None,
                conns: HashMap::new(),
                per_ip: HashMap::new(),
                next_conn: 1,
                outgoing: Vec::new(),
                outgoing_at: HashMap::new(),
            }),
            origin,
            config,
            timer_wake: Notify::new(),
            timer_target_ms: AtomicU64::new(u64::MAX),
            shutdown: Notify::new(),
        });
        // Session ids are seeded from the wall clock, which the placeholder above lacked;
        // recovered sessions get a full timeout from now to come back.
        {
            let mut sh = inner.lock();
            let cfg = sh.core.config().clone();
            let now = inner.now();
            sh.core = match recovered {
                None => Core::new(cfg, now),
                Some((state, log)) => {
                    let Durability::Disk(disk) = &inner.config.durability else { unreachable!() };
                    sh.log_tx = Some(durable::start(&inner, disk.clone(), log));
                    Core::with_state(cfg, state, now)
                }
            };
        }
        let tasks = tokio::spawn(run(inner.clone(), listener));
        tracing::info!(%local_addr, "rzk server listening");
        Ok(Server { inner, local_addr, tasks })
    }

    /// The bound address (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Resolves if the server fails and stops serving (for example when the log cannot be
    /// synced), with the reason.
    ///
    /// # Cancellation safety
    /// Safe: it only waits.
    pub async fn failed(&self) -> String {
        loop {
            let notified = self.inner.failed.notified();
            if let Some(why) = self.inner.fatal.lock().unwrap_or_else(|e| e.into_inner()).clone() {
                return why;
            }
            notified.await;
        }
    }

    /// `host:port`, as ZooKeeper clients take it.
    pub fn connect_string(&self) -> String {
        self.local_addr.to_string()
    }

    /// Stops accepting, closes every connection and waits for the tasks to end. Sessions are
    /// not closed: an in-memory server simply forgets them.
    ///
    /// # Cancellation safety
    /// Safe: the shutdown signal is sent before the first await.
    pub async fn shutdown(self) {
        self.inner.shutdown.notify_one();
        let _ = self.tasks.await;
        // Dropping the sender lets the log thread finish its last batch and exit.
        self.inner.lock().log_tx = None;
    }
}

impl Inner {
    /// Stops serving for good: something the server promised (durability) can no longer be
    /// kept. Connections are closed so that clients fail over instead of waiting.
    pub(crate) fn is_failed(&self) -> bool {
        self.fatal.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    pub(crate) fn fail(&self, why: String) {
        tracing::error!("server failed, no longer serving: {why}");
        *self.fatal.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
        self.failed.notify_waiters();
        self.shutdown.notify_one();
    }
}

/// The log thread's view of the server: the core's state under its lock, the durability
/// report, and the failure flag.
impl LogHost for Inner {
    fn mark_durable(&self, zxid: i64) {
        let flush = {
            let mut sh = self.lock();
            sh.core.mark_durable(zxid);
            self.pump(&mut sh)
        };
        flush.run();
    }

    fn with_state<R>(&self, f: impl FnOnce(&State) -> R) -> R {
        f(self.lock().core.state())
    }

    fn durable_zxid(&self) -> i64 {
        self.lock().core.durable_zxid()
    }

    fn fail(&self, why: String) {
        Inner::fail(self, why);
    }

    fn is_failed(&self) -> bool {
        Inner::is_failed(self)
    }
}

async fn run(inner: Arc<Inner>, listener: TcpListener) {
    let mut conns = JoinSet::new();
    let timer = tokio::spawn(timer_loop(inner.clone()));
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    if let Some(task) = admit(&inner, stream, peer) {
                        conns.spawn(task);
                    }
                }
                Err(e) => {
                    // Usually EMFILE: back off instead of spinning.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = inner.shutdown.notified() => break,
        }
    }
    timer.abort();
    conns.shutdown().await;
}

fn admit(
    inner: &Arc<Inner>,
    stream: TcpStream,
    peer: SocketAddr,
) -> Option<impl std::future::Future<Output = ()> + Send + 'static> {
    let _ = stream.set_nodelay(true);
    let cfg = &inner.config;
    let mut sh = inner.lock();
    let ip = peer.ip();
    let from_ip = sh.per_ip.get(&ip).copied().unwrap_or(0);
    if cfg.max_client_connections_per_ip != 0 && from_ip >= cfg.max_client_connections_per_ip {
        tracing::warn!(%peer, limit = cfg.max_client_connections_per_ip,
            "refusing connection: too many connections from this address (maxClientCnxns)");
        return None;
    }
    if sh.conns.len() >= cfg.max_connections {
        tracing::warn!(%peer, limit = cfg.max_connections, "refusing connection: server full");
        return None;
    }
    let conn = sh.next_conn;
    sh.next_conn += 1;
    *sh.per_ip.entry(ip).or_insert(0) += 1;
    let (tx, rx) = mpsc::unbounded_channel();
    let ctl = Arc::new(ConnCtl::default());
    let (rd, wr) = stream.into_split();
    let wr = Arc::new(wr);
    let out = ConnOut { tx, wr: wr.clone(), ctl: ctl.clone(), queue: Default::default() };
    sh.conns.insert(conn, ConnHandle { out: Arc::new(out), ip });
    sh.core.open(conn, peer);
    drop(sh);
    let inner = inner.clone();
    Some(async move {
        let writer = tokio::spawn(write_loop(wr, rx, ctl.clone()));
        if let Err(e) = read_loop(&inner, rd, conn, &ctl).await {
            tracing::info!(conn, %peer, "closing connection: {e}");
        }
        let flush = {
            let mut sh = inner.lock();
            sh.core.closed(conn);
            if let Some(h) = sh.conns.remove(&conn) {
                if let Some(n) = sh.per_ip.get_mut(&h.ip) {
                    *n -= 1;
                    if *n == 0 {
                        sh.per_ip.remove(&h.ip);
                    }
                }
            }
            inner.pump(&mut sh)
        };
        flush.run();
        // A stopped connection (dropped for not reading, a failed write, a close the writer
        // already carried out) sends nothing more: a writer still waiting for the socket to
        // drain would otherwise keep it open. After a client's own close, the writer finishes
        // what it holds and ends once the handle is gone.
        if ctl.stopped.load(Ordering::SeqCst) {
            writer.abort();
        }
        let _ = writer.await;
    })
}

/// Why a connection's reader stopped with an error.
#[derive(Debug, thiserror::Error)]
enum ReadError {
    #[error("read failed: {0}")]
    Io(#[from] io::Error),
    #[error("bad frame: {0}")]
    Frame(#[from] rzk_proto::FrameError),
    #[error("{0}")]
    Protocol(#[from] rzk_core::ConnError),
    #[error("no session after {0} ms")]
    Sessionless(u64),
}

async fn read_loop(
    inner: &Inner,
    mut rd: OwnedReadHalf,
    conn: ConnId,
    ctl: &ConnCtl,
) -> Result<(), ReadError> {
    let max_packet = inner.config.max_packet_bytes;
    let max_in_flight = inner.config.max_outstanding_requests_per_connection.max(1);
    // What one batch of requests may make the core build, and how much may wait for the
    // socket before the next batch: two of these and one more reply stay under the limit
    // that drops a client as not reading.
    let output_budget = inner.config.max_queued_bytes_per_connection / 4;
    // Made once: `select!` builds every branch's future on each read, even a disabled one.
    let sessionless =
        tokio::time::sleep(Duration::from_millis(inner.config.sessionless_connection_timeout_ms));
    tokio::pin!(sessionless);
    let mut buf: Vec<u8> = Vec::with_capacity(READ_CHUNK_BYTES);
    let mut start = 0usize;
    let mut first = true;
    let mut fed_any = false;
    // The last batch left more than the budget in the core, waiting for the log to sync the
    // writes before it; only then is the core asked again, under its lock.
    let mut held_in_core = false;
    let mut frames = Vec::new();
    loop {
        // The limit is exact: frames beyond it wait, undecoded, in `buf` (at most one read
        // chunk plus one packet), and the socket is not read until replies drain.
        loop {
            let queued =
                ctl.queued_bytes.load(Ordering::SeqCst) + ctl.transit_bytes.load(Ordering::SeqCst);
            if held_in_core {
                held_in_core = queued + inner.lock().core.conn_output_bytes(conn) > output_budget;
            }
            let wait = held_in_core
                || queued > output_budget
                || ctl.in_flight.load(Ordering::SeqCst) >= max_in_flight;
            if !wait {
                break;
            }
            tokio::select! {
                _ = ctl.resume_reading.notified() => {}
                _ = ctl.stop.notified() => return Ok(()),
                // Bytes leaving the core are not announced; look again soon.
                _ = tokio::time::sleep(Duration::from_millis(HELD_OUTPUT_POLL_MS)),
                    if held_in_core => {}
            }
        }
        if ctl.stopped.load(Ordering::SeqCst) {
            return Ok(());
        }
        let budget = max_in_flight - ctl.in_flight.load(Ordering::SeqCst);
        while frames.len() < budget {
            let Some(len) = split_frame(&buf[start..], max_packet)? else { break };
            frames.push(start + 4..start + 4 + len);
            start += 4 + len;
        }
        if frames.is_empty() {
            if start == buf.len() {
                buf.clear();
                start = 0;
            } else if start > 0 {
                buf.drain(..start);
                start = 0;
            }
            if buf.capacity() - buf.len() < READ_CHUNK_BYTES / 2 {
                buf.reserve(READ_CHUNK_BYTES);
            }
            let n = tokio::select! {
                n = rd.read_buf(&mut buf) => n?,
                _ = ctl.stop.notified() => return Ok(()),
                _ = &mut sessionless, if !fed_any => {
                    return Err(ReadError::Sessionless(
                        inner.config.sessionless_connection_timeout_ms,
                    ));
                }
            };
            if n == 0 {
                return Ok(());
            }
            if first && buf.len() >= 4 {
                first = false;
                if let Some(word) = four_letter_word(&buf) {
                    let out = {
                        let sh = inner.lock();
                        let text = rzk_core::four_letter::run(&sh.core, word, inner.now());
                        sh.conns.get(&conn).map(|h| {
                            let bytes = text.unwrap_or_default().into_bytes();
                            h.out.push(Outgoing {
                                conn,
                                bytes,
                                replies: 0,
                                close: true,
                                framed: false,
                            });
                            h.out.clone()
                        })
                    };
                    if let Some(o) = out {
                        o.flush(inner.config.max_queued_bytes_per_connection);
                    }
                    ctl.stop.notified().await;
                    return Ok(());
                }
            }
            continue;
        }
        fed_any = true;
        ctl.in_flight.fetch_add(frames.len(), Ordering::SeqCst);
        let mut sh = inner.lock();
        let now = inner.now();
        let mut result = Ok(());
        let output_before = sh.core.output_bytes();
        let mut fed = 0;
        for range in &frames {
            result = sh.core.receive(conn, &buf[range.clone()], now);
            fed += 1;
            if result.is_err()
                || sh.core.output_bytes().saturating_sub(output_before) > output_budget
            {
                break;
            }
        }
        // Frames not fed wait, undecoded, until the output drains.
        if let Some(rest) = frames.get(fed) {
            start = rest.start - 4;
            ctl.in_flight.fetch_sub(frames.len() - fed, Ordering::SeqCst);
        }
        frames.clear();
        let flush = inner.pump(&mut sh);
        held_in_core = sh.core.conn_output_bytes(conn) > output_budget;
        drop(sh);
        flush.run();
        result?;
    }
}

/// Puts on the wire what the router could not write at once, in order. The router writes
/// directly again once `queued_bytes` is back to zero, which happens only after these bytes
/// are in the socket.
async fn write_loop(
    wr: Arc<OwnedWriteHalf>,
    mut rx: mpsc::UnboundedReceiver<WriterMsg>,
    ctl: Arc<ConnCtl>,
) {
    while let Some(msg) = rx.recv().await {
        let (bytes, replies) = match msg {
            WriterMsg::Bytes { bytes, replies } => (bytes, replies),
            WriterMsg::Close => {
                // The socket closes (FIN) when the reader drops its handle, which it does
                // as soon as it sees the stop.
                ctl.stop();
                return;
            }
        };
        let mut sent = 0;
        while sent < bytes.len() {
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
                    ctl.stop();
                    return;
                }
            };
            let written = match writable {
                Ok(()) => wr.try_write(&bytes[sent..]),
                Err(e) => Err(e),
            };
            match written {
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => {
                    ctl.stop();
                    return;
                }
            }
        }
        ctl.queued_bytes.fetch_sub(bytes.len(), Ordering::SeqCst);
        ctl.replies_sent(replies);
        if replies == 0 {
            // The reader may be waiting for the queue to drain rather than for answers.
            ctl.resume_reading.notify_one();
        }
    }
}

async fn timer_loop(inner: Arc<Inner>) {
    loop {
        let now = inner.now();
        let deadline = inner.lock().core.next_deadline();
        if deadline <= now.mono_ms {
            let flush = {
                let mut sh = inner.lock();
                sh.core.tick(inner.now());
                inner.pump(&mut sh)
            };
            flush.run();
            continue;
        }
        let wait_ms = (deadline - now.mono_ms).min(TIMER_SLEEP_MS_MAX);
        inner.timer_target_ms.store(now.mono_ms + wait_ms, Ordering::SeqCst);
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(wait_ms)) => {}
            _ = inner.timer_wake.notified() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(conn: ConnId, replies: usize) -> Outgoing {
        Outgoing { conn, bytes: vec![conn as u8], replies, close: false, framed: true }
    }

    #[test]
    fn notified_connections_are_written_before_answered_ones() {
        let mut o = vec![out(1, 1), out(2, 0), out(3, 2), out(4, 0), out(5, 0)];
        notifications_first(&mut o);
        assert!(o[..3].iter().all(|o| o.replies == 0));
        assert!(o[3..].iter().all(|o| o.replies > 0));
        let mut conns: Vec<ConnId> = o.iter().map(|o| o.conn).collect();
        conns.sort_unstable();
        assert_eq!(conns, [1, 2, 3, 4, 5], "no connection lost or doubled");
    }
}
