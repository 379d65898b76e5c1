//! The session manager, in the role of Curator's `CuratorFramework`: one `zookeeper-client`
//! session at a time, connection states in Curator's vocabulary, a heartbeat that maintains the
//! lease, simulated expiry, and a new session after expiry so that recipes rejoin.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, mpsc, oneshot, watch};
use zookeeper_client::{Client, SessionId, SessionInfo, SessionState};

use crate::Error;

/// How to connect, and the timing of the lease (docs/election.md §2.1, §2.2).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SessionConfig {
    /// The connect string: `host:port[,host:port...][/chroot]`.
    pub hosts: String,
    /// The session timeout to request. The server clamps it to [2, 20] × tickTime; every
    /// timing below is derived from the negotiated value `T`. Default 6 s.
    pub session_timeout: Duration,
    /// `zookeeper-client`'s idle timeout before it declares the connection lost (Curator's
    /// Suspended). Default: the library's, `2/5·T`.
    pub connection_timeout: Option<Duration>,
    /// Bound on the first connect of [`Session::connect`]. Default 10 s.
    pub connect_timeout: Duration,
    /// Period of the lease heartbeat (a `exists /`). Default `T/6`.
    pub heartbeat: Option<Duration>,
    /// Subtracted from `last_ack_sent + T` to get the lease deadline. Default
    /// `max(T/10, 200 ms)`, floor 50 ms.
    pub safety_margin: Option<Duration>,
    /// Declare the session lost when disconnected past the lease deadline, without waiting for
    /// the server (Curator's simulated expiry, measured from the last acknowledged request
    /// instead of from Suspended). Default true.
    pub simulate_expiry: bool,
}

impl SessionConfig {
    /// Defaults for the given connect string.
    pub fn new(hosts: impl Into<String>) -> Self {
        SessionConfig {
            hosts: hosts.into(),
            session_timeout: Duration::from_secs(6),
            connection_timeout: None,
            connect_timeout: Duration::from_secs(10),
            heartbeat: None,
            safety_margin: None,
            simulate_expiry: true,
        }
    }

    /// Sets the requested session timeout.
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// Sets the bound on the first connect.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the library's idle timeout.
    pub fn with_connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = Some(timeout);
        self
    }

    /// Sets the heartbeat period.
    pub fn with_heartbeat(mut self, period: Duration) -> Self {
        self.heartbeat = Some(period);
        self
    }

    /// Sets the safety margin (floor 50 ms).
    pub fn with_safety_margin(mut self, margin: Duration) -> Self {
        self.safety_margin = Some(margin);
        self
    }

    /// Turns simulated expiry on or off.
    pub fn with_simulate_expiry(mut self, on: bool) -> Self {
        self.simulate_expiry = on;
        self
    }

    fn margin_for(&self, t: Duration) -> Duration {
        self.safety_margin
            .unwrap_or_else(|| (t / 10).max(Duration::from_millis(200)))
            .max(Duration::from_millis(50))
    }

    fn heartbeat_for(&self, t: Duration) -> Duration {
        self.heartbeat.unwrap_or(t / 6).max(Duration::from_millis(10))
    }
}

/// Curator's connection states, plus the terminal ones.
///
/// Intermediate: `Connected`, `Suspended`, `Reconnected`, `Lost` (the manager opens a new
/// session after `Lost`). Terminal: `Closed`, `Failed`.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionState {
    /// The first session of this manager is connected.
    Connected,
    /// The connection is down; the session may still be alive on the server.
    Suspended,
    /// Connected again: to the same session (`new_session: false`) or, after `Lost`, to a new
    /// one.
    Reconnected {
        /// True when this is a new session (a new generation).
        new_session: bool,
    },
    /// The session expired, or was declared expired locally (simulated expiry). Every
    /// ephemeral node of it is, or will soon be, gone.
    Lost,
    /// Closed by [`Session::close`] or by dropping every handle.
    Closed,
    /// Authentication failed; nothing more will happen.
    Failed,
}

impl ConnectionState {
    /// True while requests can be served.
    pub fn is_connected(self) -> bool {
        matches!(self, ConnectionState::Connected | ConnectionState::Reconnected { .. })
    }

    /// True for `Closed` and `Failed`.
    pub fn is_terminal(self) -> bool {
        matches!(self, ConnectionState::Closed | ConnectionState::Failed)
    }
}

/// One connection-state change.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConnectionEvent {
    /// The new state.
    pub state: ConnectionState,
    /// The session concerned (the new one for `Reconnected { new_session: true }`).
    pub session_id: Option<SessionId>,
    /// The session generation: 1 for the first session, +1 for every new one.
    pub generation: u64,
    /// When the manager saw the change.
    pub at: Instant,
}

/// The lease of the current session (docs/election.md §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// The generation this lease belongs to.
    pub generation: u64,
    /// Send time of the latest request whose successful reply has been received.
    pub last_ack_sent: Instant,
    /// `last_ack_sent + T`: the server cannot expire the session before this.
    pub server_expiry_not_before: Instant,
    /// `last_ack_sent + T − safety_margin`: a leader must not act after this.
    pub deadline: Instant,
}

/// The level state every recipe driver follows.
#[derive(Clone)]
pub(crate) struct Snapshot {
    pub state: ConnectionState,
    pub client: Option<Client>,
    pub session_id: Option<SessionId>,
    pub generation: u64,
    /// Incremented on every `Suspended` (so that a coalesced blip is still seen).
    pub suspensions: u64,
    /// Incremented on every `Reconnected { new_session: false }`.
    pub reconnects: u64,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct LeaseState {
    pub generation: u64,
    pub last_ack_sent: Instant,
}

pub(crate) struct Shared {
    pub snap: watch::Sender<Snapshot>,
    pub lease: watch::Sender<LeaseState>,
    /// The final lease of the previous generation (for reporting a lost term's deadline).
    prev_lease: std::sync::Mutex<Option<LeaseState>>,
    events: broadcast::Sender<ConnectionEvent>,
    config: SessionConfig,
    /// Negotiated session timeout of the first session (every session of one manager asks for
    /// the same value, so this does not change).
    pub timeout: Duration,
    pub margin: Duration,
    pub heartbeat: Duration,
}

impl Shared {
    fn publish(&self, f: impl FnOnce(&mut Snapshot)) {
        self.snap.send_modify(f);
        let s = self.snap.borrow().clone();
        let _ = self.events.send(ConnectionEvent {
            state: s.state,
            session_id: s.session_id,
            generation: s.generation,
            at: Instant::now(),
        });
    }

    /// Records a successful reply to a request sent at `sent` on generation `generation`.
    pub fn ack(&self, generation: u64, sent: Instant) {
        self.lease.send_if_modified(|l| {
            if l.generation == generation && sent > l.last_ack_sent {
                l.last_ack_sent = sent;
                true
            } else {
                false
            }
        });
    }

    /// The last lease deadline of `generation`, current or just ended.
    pub fn last_deadline(&self, generation: u64) -> Option<Instant> {
        let l = *self.lease.borrow();
        let l = if l.generation == generation {
            Some(l)
        } else {
            self.prev_lease.lock().expect("poisoned").filter(|p| p.generation == generation)
        };
        l.map(|l| l.last_ack_sent + self.timeout - self.margin)
    }

    /// Starts the lease of a new generation, keeping the final one of the old.
    fn new_lease(&self, lease: LeaseState) {
        let old = self.lease.send_replace(lease);
        *self.prev_lease.lock().expect("poisoned") = Some(old);
    }

    /// The lease deadline of `generation`, or `None` if that generation is over.
    pub fn deadline(&self, generation: u64) -> Option<Instant> {
        let l = *self.lease.borrow();
        (l.generation == generation && self.snap.borrow().generation == generation)
            .then(|| l.last_ack_sent + self.timeout - self.margin)
    }
}

enum Command {
    Close(Option<oneshot::Sender<()>>),
}

struct Handle {
    shared: Arc<Shared>,
    cmd: mpsc::UnboundedSender<Command>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        let _ = self.cmd.send(Command::Close(None));
    }
}

/// A managed ZooKeeper session: the current `zookeeper-client` [`Client`], its connection
/// state, its lease, and a fresh session after expiry. Cheap to clone; the session closes when
/// [`Session::close`] is called or the last clone (including the ones recipes hold) is dropped.
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_election::Error> {
/// use std::time::Duration;
/// use rzk_election::{Session, SessionConfig};
///
/// let session = Session::connect(
///     SessionConfig::new("127.0.0.1:2181").with_session_timeout(Duration::from_secs(4)),
/// )
/// .await?;
/// println!("session {:?}, T = {:?}", session.session_id(), session.negotiated_timeout());
/// session.close().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Session {
    inner: Arc<Handle>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("session_id", &self.session_id())
            .field("generation", &self.generation())
            .field("state", &self.state())
            .finish()
    }
}

async fn connect_client(config: &SessionConfig) -> Result<Client, zookeeper_client::Error> {
    let mut c = Client::connector().with_session_timeout(config.session_timeout);
    if let Some(t) = config.connection_timeout {
        c = c.with_connection_timeout(t);
    }
    c.connect(&config.hosts).await
}

impl Session {
    /// Connects and returns once the first session is established.
    ///
    /// # Errors
    /// [`Error::OperationTimeout`] after `connect_timeout`; [`Error::AuthFailed`];
    /// [`Error::BadArguments`] for a bad connect string; other connection errors as
    /// ZooKeeper names them.
    ///
    /// # Cancellation safety
    /// Safe: dropping the future abandons the attempt, and a half-made session is closed.
    pub async fn connect(config: SessionConfig) -> Result<Session, Error> {
        let started = Instant::now();
        let client =
            match tokio::time::timeout(config.connect_timeout, connect_client(&config)).await {
                Err(_) => return Err(Error::OperationTimeout),
                Ok(r) => r.map_err(Error::from)?,
            };
        let timeout = client.session_timeout();
        let margin = config.margin_for(timeout);
        let heartbeat = config.heartbeat_for(timeout);
        let snapshot = Snapshot {
            state: ConnectionState::Connected,
            session_id: Some(client.session_id()),
            client: Some(client.clone()),
            generation: 1,
            suspensions: 0,
            reconnects: 0,
        };
        let (snap, _) = watch::channel(snapshot);
        let (lease, _) = watch::channel(LeaseState { generation: 1, last_ack_sent: started });
        let (events, _) = broadcast::channel(1024);
        let shared = Arc::new(Shared {
            snap,
            lease,
            prev_lease: std::sync::Mutex::new(None),
            events,
            config,
            timeout,
            margin,
            heartbeat,
        });
        let (cmd, cmd_rx) = mpsc::unbounded_channel();
        tokio::spawn(Driver { shared: shared.clone(), cmd_rx }.run(client));
        Ok(Session { inner: Arc::new(Handle { shared, cmd }) })
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.inner.shared
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<Snapshot> {
        self.inner.shared.snap.subscribe()
    }

    /// The current connection state (level-triggered).
    pub fn state(&self) -> ConnectionState {
        self.inner.shared.snap.borrow().state
    }

    /// A stream of connection-state changes from now on (edge-triggered).
    pub fn states(&self) -> ConnectionEvents {
        ConnectionEvents { rx: self.inner.shared.events.subscribe(), fut: None }
    }

    /// The current session id; `None` between `Lost` and the next session.
    pub fn session_id(&self) -> Option<SessionId> {
        self.inner.shared.snap.borrow().session_id
    }

    /// The session generation: 1 for the first session, +1 for every new one.
    pub fn generation(&self) -> u64 {
        self.inner.shared.snap.borrow().generation
    }

    /// The negotiated session timeout `T`.
    pub fn negotiated_timeout(&self) -> Duration {
        self.inner.shared.timeout
    }

    /// The safety margin subtracted from `last_ack_sent + T`.
    pub fn safety_margin(&self) -> Duration {
        self.inner.shared.margin
    }

    /// The current lease.
    pub fn lease(&self) -> Lease {
        let s = &self.inner.shared;
        let l = *s.lease.borrow();
        Lease {
            generation: l.generation,
            last_ack_sent: l.last_ack_sent,
            server_expiry_not_before: l.last_ack_sent + s.timeout,
            deadline: l.last_ack_sent + s.timeout - s.margin,
        }
    }

    /// The current client, for the application's own reads and writes.
    ///
    /// # Errors
    /// [`Error::ConnectionLoss`] between sessions; [`Error::Closed`] once closed.
    pub fn client(&self) -> Result<Client, Error> {
        let s = self.inner.shared.snap.borrow();
        match (&s.client, s.state) {
            (Some(c), _) => Ok(c.clone()),
            (None, st) if st.is_terminal() => Err(Error::Closed),
            (None, _) => Err(Error::ConnectionLoss),
        }
    }

    /// Closes the session: every recipe on it stops (its `lost()` resolves with `ClientClosed`),
    /// then the ZooKeeper session is closed, which deletes its ephemeral nodes.
    ///
    /// # Errors
    /// None: a session that is already closed or failed is left as it is.
    ///
    /// # Cancellation safety
    /// The close is started synchronously; dropping the future does not stop it.
    pub async fn close(self) {
        let (tx, rx) = oneshot::channel();
        if self.inner.cmd.send(Command::Close(Some(tx))).is_ok() {
            let _ = rx.await;
        }
    }

    /// The current session's id and password, for tests that expire it from another client.
    #[doc(hidden)]
    pub fn session_info(&self) -> Option<SessionInfo> {
        self.inner.shared.snap.borrow().client.as_ref().map(|c| c.session().clone())
    }
}

/// A stream of [`ConnectionEvent`]s. A subscriber that falls more than 1024 events behind
/// skips the missed ones.
pub struct ConnectionEvents {
    rx: broadcast::Receiver<ConnectionEvent>,
    #[allow(clippy::type_complexity)]
    fut: Option<
        Pin<
            Box<
                dyn std::future::Future<
                        Output = (Option<ConnectionEvent>, broadcast::Receiver<ConnectionEvent>),
                    > + Send,
            >,
        >,
    >,
}

impl ConnectionEvents {
    /// The next event; `None` once the session is gone.
    ///
    /// # Errors
    /// None; events missed by a subscriber that fell behind are skipped.
    ///
    /// # Cancellation safety
    /// Safe: no event is lost if the future is dropped.
    pub async fn recv(&mut self) -> Option<ConnectionEvent> {
        loop {
            match self.rx.recv().await {
                Ok(e) => return Some(e),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

impl ConnectionEvents {
    /// The next event if one is ready (missed events are skipped).
    pub fn try_recv(&mut self) -> Option<ConnectionEvent> {
        loop {
            match self.rx.try_recv() {
                Ok(e) => return Some(e),
                Err(broadcast::error::TryRecvError::Lagged(_)) => continue,
                Err(_) => return None,
            }
        }
    }
}

impl futures_core::Stream for ConnectionEvents {
    type Item = ConnectionEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.fut.is_none() {
            let mut rx = this.rx.resubscribe();
            std::mem::swap(&mut rx, &mut this.rx);
            this.fut = Some(Box::pin(async move {
                loop {
                    match rx.recv().await {
                        Ok(e) => return (Some(e), rx),
                        Err(broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(broadcast::error::RecvError::Closed) => return (None, rx),
                    }
                }
            }));
        }
        let fut = this.fut.as_mut().expect("set above");
        match fut.as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready((item, rx)) => {
                this.rx = rx;
                this.fut = None;
                Poll::Ready(item)
            }
        }
    }
}

enum End {
    Lost,
    Close(Option<oneshot::Sender<()>>),
    Failed,
}

struct Driver {
    shared: Arc<Shared>,
    cmd_rx: mpsc::UnboundedReceiver<Command>,
}

impl Driver {
    async fn run(mut self, first: Client) {
        let mut client = first;
        loop {
            let end = self.serve(client).await;
            match end {
                End::Failed => {
                    self.shared.publish(|s| {
                        s.state = ConnectionState::Failed;
                        s.client = None;
                        s.session_id = None;
                    });
                    return;
                }
                End::Close(done) => {
                    self.close(done).await;
                    return;
                }
                End::Lost => {
                    self.shared.publish(|s| {
                        s.state = ConnectionState::Lost;
                        s.client = None;
                        s.session_id = None;
                    });
                    match self.reconnect().await {
                        Ok((c, started)) => {
                            let generation = self.shared.snap.borrow().generation + 1;
                            self.shared
                                .new_lease(LeaseState { generation, last_ack_sent: started });
                            self.shared.publish(|s| {
                                s.state = ConnectionState::Reconnected { new_session: true };
                                s.session_id = Some(c.session_id());
                                s.client = Some(c.clone());
                                s.generation = generation;
                            });
                            tracing::info!(
                                session = %c.session_id(),
                                generation,
                                "new session after loss"
                            );
                            client = c;
                        }
                        Err(done) => {
                            self.close(done).await;
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Connects a new session with back-off (100 ms doubling to 2 s) until it works or a close
    /// is requested.
    async fn reconnect(&mut self) -> Result<(Client, Instant), Option<oneshot::Sender<()>>> {
        let mut backoff = Duration::from_millis(100);
        loop {
            let started = Instant::now();
            let attempt = connect_client(&self.shared.config);
            tokio::select! {
                r = attempt => match r {
                    Ok(c) => return Ok((c, started)),
                    Err(e) => tracing::debug!(error = %e, "reconnect failed"),
                },
                cmd = self.cmd_rx.recv() => match cmd {
                    Some(Command::Close(done)) => return Err(done),
                    None => return Err(None),
                },
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                cmd = self.cmd_rx.recv() => match cmd {
                    Some(Command::Close(done)) => return Err(done),
                    None => return Err(None),
                },
            }
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
    }

    async fn close(&mut self, done: Option<oneshot::Sender<()>>) {
        let generation_client = self.shared.snap.borrow().client.clone();
        let watcher = generation_client.as_ref().map(|c| c.state_watcher());
        drop(generation_client);
        self.shared.publish(|s| {
            s.state = ConnectionState::Closed;
            s.client = None;
            s.session_id = None;
        });
        // Every clone of the client must be dropped for the library to send CloseSession;
        // recipe drivers drop theirs when they see Closed. Wait (bounded) for the library.
        if let Some(mut w) = watcher {
            let bound = self.shared.timeout.min(Duration::from_secs(3));
            let _ = tokio::time::timeout(bound, async {
                while !w.peek_state().is_terminated() {
                    w.changed().await;
                }
            })
            .await;
        }
        if let Some(done) = done {
            let _ = done.send(());
        }
    }

    async fn serve(&mut self, client: Client) -> End {
        let shared = self.shared.clone();
        let generation = shared.snap.borrow().generation;
        let mut states = client.state_watcher();
        let mut connected = true;
        let mut beat = tokio::time::interval(shared.heartbeat);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let inflight = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let send_beat = |client: &Client| {
            if inflight.swap(true, std::sync::atomic::Ordering::AcqRel) {
                return;
            }
            let sent = Instant::now();
            let fut = client.check_stat("/");
            let shared = shared.clone();
            let inflight = inflight.clone();
            tokio::spawn(async move {
                if fut.await.is_ok() {
                    shared.ack(generation, sent);
                }
                inflight.store(false, std::sync::atomic::Ordering::Release);
            });
        };
        loop {
            let expiry = (!connected && shared.config.simulate_expiry).then(|| {
                let l = *shared.lease.borrow();
                l.last_ack_sent + shared.timeout - shared.margin
            });
            tokio::select! {
                st = states.changed() => match st {
                    SessionState::Disconnected => {
                        if connected {
                            connected = false;
                            tracing::debug!(generation, "suspended");
                            shared.publish(|s| {
                                s.state = ConnectionState::Suspended;
                                s.suspensions += 1;
                            });
                        }
                    }
                    SessionState::SyncConnected | SessionState::ConnectedReadOnly => {
                        if !connected {
                            connected = true;
                            tracing::debug!(generation, "reconnected");
                            shared.publish(|s| {
                                s.state = ConnectionState::Reconnected { new_session: false };
                                s.reconnects += 1;
                            });
                            send_beat(&client);
                        }
                    }
                    SessionState::Expired | SessionState::Closed => {
                        tracing::info!(generation, state = %st, "session lost");
                        return End::Lost;
                    }
                    SessionState::AuthFailed => return End::Failed,
                },
                _ = beat.tick(), if connected => send_beat(&client),
                _ = sleep_until(expiry), if expiry.is_some() => {
                    let l = *shared.lease.borrow();
                    if Instant::now() >= l.last_ack_sent + shared.timeout - shared.margin {
                        tracing::info!(generation, "simulated expiry: disconnected past the lease");
                        return End::Lost;
                    }
                }
                cmd = self.cmd_rx.recv() => match cmd {
                    Some(Command::Close(done)) => return End::Close(done),
                    None => return End::Close(None),
                },
            }
        }
    }
}

pub(crate) async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}
