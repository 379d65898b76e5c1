//! [`Client`] and its [`Connector`]: a session's handle and how one is opened.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rzk_proto::Response;
use tokio::sync::{broadcast, mpsc, oneshot, watch, Semaphore};

use crate::core::{Call, Core, WatchOn, Watching, WhileAway};
use crate::hosts::{Chroot, ConnectString};
use crate::reconnect::{Backoff, Hosts};
use crate::sasl::SaslLogin;
use crate::task::{Command, Endpoint, Task};
use crate::transport::{Tcp, Transport};
use crate::types::{SessionId, SessionInfo, SessionState};
use crate::watcher::StateWatcher;
use crate::Error;

/// Requests sent and not yet answered, at most, per client; a caller beyond it waits.
pub const MAX_OUTSTANDING_REQUESTS: usize = 65_536;
/// State changes a [`StateWatcher`] may fall behind by before it skips to the current state.
pub const STATE_EVENTS_BUFFER: usize = 64;
/// The session timeout asked for when none is set (ZooKeeper's servers grant 4-40 s by
/// default: two to twenty ticks of 2 s).
const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(6);

/// How a [`Client`] connects: session timeout, connection timeout, credentials, transport.
#[derive(Clone)]
pub struct Connector {
    session_timeout: Duration,
    connection_timeout: Option<Duration>,
    auth: Vec<(String, Vec<u8>)>,
    sasl: Option<SaslLogin>,
    transport: Arc<dyn Transport>,
    resume: Option<SessionInfo>,
    can_be_read_only: bool,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("session_timeout", &self.session_timeout)
            .field("connection_timeout", &self.connection_timeout)
            .field("sasl", &self.sasl)
            .field("can_be_read_only", &self.can_be_read_only)
            .finish_non_exhaustive()
    }
}

impl Default for Connector {
    fn default() -> Self {
        Connector {
            session_timeout: DEFAULT_SESSION_TIMEOUT,
            connection_timeout: None,
            auth: Vec::new(),
            sasl: None,
            transport: Arc::new(Tcp),
            resume: None,
            can_be_read_only: false,
        }
    }
}

impl Connector {
    /// The session timeout to ask for; the server grants one within its bounds.
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How long one connection attempt may take, and how long a connection may stay silent
    /// before it counts as lost (default: two fifths of the session timeout). Pings go out
    /// after three eighths of it without a request.
    pub fn with_connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = Some(timeout);
        self
    }

    /// Credentials sent on every connection of the session, before any request
    /// (ZooKeeper's `addAuthInfo`).
    pub fn with_auth(mut self, scheme: impl Into<String>, auth: impl Into<Vec<u8>>) -> Self {
        self.auth.push((scheme.into(), auth.into()));
        self
    }

    /// Authenticates every connection with SASL, right after the handshake and before any
    /// other packet (credentials of [`Connector::with_auth`] included), as ZooKeeper's Java
    /// client does with a JAAS `Client` section. A refusal ends the session:
    /// [`Connector::connect`] fails with [`Error::SaslAuthFailed`], and a session refused on
    /// a reconnect ends in [`SessionState::AuthFailed`].
    pub fn with_sasl(mut self, login: SaslLogin) -> Self {
        self.sasl = Some(login);
        self
    }

    /// Reaches servers through `transport` (TLS, for instance) instead of plain TCP.
    pub fn with_transport(mut self, transport: Arc<dyn Transport>) -> Self {
        self.transport = transport;
        self
    }

    /// Resumes an existing session (its id and password, from [`Client::session`]) instead
    /// of opening a new one: two connections then share the session, and closing either
    /// closes it.
    pub fn with_session(mut self, session: SessionInfo) -> Self {
        self.resume = Some(session);
        self
    }

    /// Lets a read-only server serve the session (ZooKeeper's `canBeReadOnly`): a member cut
    /// off from its quorum, started with `readonlymode.enabled=true`, then answers reads, and
    /// writes fail with [`Error::NotReadOnly`]. The session is then in
    /// [`SessionState::ConnectedReadOnly`], and the client looks for a read-write server as
    /// the Java client does (`pingRwServer`), moving there when one answers.
    ///
    /// A read-only server's session is its own: until a read-write server has served it,
    /// every connection opens a new session, so [`Client::session_id`] changes when the
    /// session moves to a read-write server (one-shot and persistent watches are set again
    /// there, and persistent watchers get [`EventType::Lagged`](crate::EventType::Lagged)).
    /// A session that a read-write server has served is never offered to a read-only one.
    pub fn with_read_only(mut self, can_be_read_only: bool) -> Self {
        self.can_be_read_only = can_be_read_only;
        self
    }

    /// Opens a session with one of the servers in `cluster` (`host:port[,...][/chroot]`),
    /// trying each in turn from a random one, and returns once the session is established.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad connect string; [`Error::Timeout`] when no server
    /// answered within the session timeout; [`Error::SessionExpired`] from a server that
    /// refused the session; [`Error::SaslAuthFailed`] from a server that refused the SASL
    /// login (the first refusal ends the attempt: every member has the same users).
    ///
    /// # Cancellation safety
    /// Safe: a connection in progress is dropped with the future.
    pub async fn connect(&self, cluster: &str) -> Result<Client, Error> {
        let cs = ConnectString::parse(cluster)?;
        let mut rng = fastrand::Rng::new();
        let shared_timeout_ms = Arc::new(AtomicU64::new(0));
        let mut endpoint = Endpoint {
            hosts: Hosts::shuffled(cs.hosts, &mut rng),
            current: String::new(),
            transport: self.transport.clone(),
            requested_timeout: self.session_timeout,
            configured_connection_timeout: self.connection_timeout,
            session_id: self.resume.as_ref().map_or(0, |s| s.id.0),
            passwd: self.resume.as_ref().map(|s| s.password.clone()).unwrap_or_default(),
            timeout: self.session_timeout,
            shared_timeout_ms: shared_timeout_ms.clone(),
            backoff: Backoff::new(rng),
            sasl: self.sasl.clone(),
            can_be_read_only: self.can_be_read_only,
            seen_rw: self.resume.is_some(),
            read_only: false,
            shared_session: Arc::new(Mutex::new(
                self.resume
                    .clone()
                    .unwrap_or(SessionInfo { id: SessionId(0), password: Vec::new() }),
            )),
        };
        let deadline =
            tokio::time::Instant::now() + self.session_timeout.max(endpoint.connection_timeout());
        let (io, _) = 'connected: loop {
            for _ in 0..endpoint.hosts.len() {
                match endpoint.open(0).await {
                    Ok(ok) => break 'connected ok,
                    Err(e @ (Error::SessionExpired | Error::SaslAuthFailed { .. })) => {
                        return Err(e)
                    }
                    Err(_) if tokio::time::Instant::now() >= deadline => {
                        return Err(Error::Timeout)
                    }
                    Err(_) => {}
                }
            }
            let pause = endpoint.backoff.after_failure();
            tokio::time::sleep_until(deadline.min(tokio::time::Instant::now() + pause)).await;
        };
        let chroot = Chroot::new(cs.chroot);
        let (cmd, cmd_rx) = mpsc::unbounded_channel();
        let (state, state_rx) = watch::channel(endpoint.connected_state());
        let (states, _) = broadcast::channel(STATE_EVENTS_BUFFER);
        let shared = Arc::new(Shared {
            cmd,
            permits: Arc::new(Semaphore::new(MAX_OUTSTANDING_REQUESTS)),
            chroot: chroot.clone(),
            session: endpoint.shared_session.clone(),
            timeout_ms: shared_timeout_ms,
            state: state_rx,
            states: states.clone(),
        });
        let task = Task {
            core: Core::new(chroot),
            endpoint,
            cmd: cmd_rx,
            state,
            states,
            deferred: Vec::new(),
            initial_auth: self.auth.clone(),
        };
        tokio::spawn(task.run(io));
        Ok(Client { shared })
    }
}

pub(crate) struct Shared {
    cmd: mpsc::UnboundedSender<Command>,
    permits: Arc<Semaphore>,
    pub(crate) chroot: Chroot,
    /// The session's id and password, which the session task replaces when a read-only
    /// session moves to a read-write server.
    session: Arc<Mutex<SessionInfo>>,
    /// The negotiated session timeout of the latest handshake, in milliseconds.
    timeout_ms: Arc<AtomicU64>,
    pub(crate) state: watch::Receiver<SessionState>,
    states: broadcast::Sender<SessionState>,
}

impl Shared {
    /// The session task's channel, held weakly: what a watcher reports its drop on.
    pub(crate) fn task(&self) -> mpsc::WeakUnboundedSender<Command> {
        self.cmd.downgrade()
    }

    /// The error for a request on a session that has ended, if it has.
    fn ended(&self) -> Option<Error> {
        Error::ended_in(crate::watcher::now(&self.state))
    }
}

/// A ZooKeeper session. Cheap to clone; the session is closed when [`Client::close`] is
/// called or the last clone is dropped, which deletes its ephemeral nodes.
///
/// Each request is queued when its method is called (not when the returned future is first
/// polled), so requests made one after another are sent, and answered, in that order.
#[derive(Clone)]
pub struct Client {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("session_id", &self.session_id())
            .field("state", &self.state())
            .finish()
    }
}

impl Client {
    /// A [`Connector`] with the defaults.
    pub fn connector() -> Connector {
        Connector::default()
    }

    /// Opens a session with the defaults; see [`Connector::connect`].
    ///
    /// # Errors
    /// As [`Connector::connect`].
    ///
    /// # Cancellation safety
    /// Safe.
    pub async fn connect(cluster: &str) -> Result<Client, Error> {
        Connector::default().connect(cluster).await
    }

    /// The session's id. It changes only when a read-only session moves to a read-write
    /// server ([`Connector::with_read_only`]).
    pub fn session_id(&self) -> SessionId {
        self.session().id
    }

    /// The session's id and password.
    pub fn session(&self) -> SessionInfo {
        self.shared.session.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The session timeout the server granted in the latest handshake. Members of an
    /// ensemble may bound it differently, so it can change when the session moves.
    pub fn session_timeout(&self) -> Duration {
        Duration::from_millis(self.shared.timeout_ms.load(Ordering::Acquire))
    }

    /// The session's state now.
    pub fn state(&self) -> SessionState {
        crate::watcher::now(&self.shared.state)
    }

    /// Every state change from now on.
    pub fn state_watcher(&self) -> StateWatcher {
        let current = self.shared.state.clone();
        let last = crate::watcher::now(&current);
        StateWatcher { rx: self.shared.states.subscribe(), current, last }
    }

    /// The server's path for the caller's.
    pub(crate) fn server_path(&self, path: &str) -> Result<String, Error> {
        self.shared.chroot.to_server(path)
    }

    /// Queues `request` now; the future resolves with the server's answer. A request made
    /// while disconnected waits for the session to be resumed.
    pub(crate) fn submit(
        &self,
        request: Result<rzk_proto::Request, Error>,
        watch: Option<WatchOn>,
    ) -> impl Future<Output = Result<Response, Error>> + Send + 'static {
        self.submit_with(request, watch.map(Watching::Set), WhileAway::Defer)
    }

    /// [`Client::submit`], with what to do with the request while disconnected.
    pub(crate) fn submit_with(
        &self,
        request: Result<rzk_proto::Request, Error>,
        watch: Option<Watching>,
        away: WhileAway,
    ) -> impl Future<Output = Result<Response, Error>> + Send + 'static {
        let shared = self.shared.clone();
        let queued = request.and_then(|request| {
            if let Some(e) = shared.ended() {
                return Err(e);
            }
            Ok(match shared.permits.clone().try_acquire_owned() {
                Ok(permit) => Ok(send(&shared, request, watch, Some(permit), away)),
                Err(_) => Err((request, watch)),
            })
        });
        async move {
            let rx = match queued? {
                Ok(rx) => rx,
                Err((request, watch)) => {
                    let permit = shared.permits.clone().acquire_owned().await;
                    send(&shared, request, watch, permit.ok(), away)
                }
            };
            match rx.await {
                Ok(r) => r,
                Err(_) => Err(shared.ended().unwrap_or(Error::ClientClosed)),
            }
        }
    }

    /// Sends credentials (ZooKeeper's `addAuthInfo`); they are sent again on every later
    /// connection of the session.
    ///
    /// # Errors
    /// [`Error::AuthFailed`] when the server rejects them, which ends the session;
    /// [`Error::ConnectionLoss`] when the connection failed first.
    ///
    /// # Cancellation safety
    /// The credentials are queued when called; dropping the future does not withdraw them.
    pub fn auth(
        &self,
        scheme: &str,
        auth: &[u8],
    ) -> impl Future<Output = Result<(), Error>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let c = Command::Auth { scheme: scheme.to_owned(), auth: auth.to_vec(), reply: tx };
        let _ = self.shared.cmd.send(c);
        let shared = self.shared.clone();
        async move { rx.await.unwrap_or_else(|_| Err(shared.ended().unwrap_or(Error::ClientClosed))) }
    }

    /// Closes the session (closeSession), which deletes its ephemeral nodes, and waits for
    /// the server's answer (bounded by the session timeout). Other clones stop working.
    ///
    /// # Errors
    /// None: a session that already ended is left as it is.
    ///
    /// # Cancellation safety
    /// The close is queued when called; dropping the future does not stop it.
    pub fn close(&self) -> impl Future<Output = ()> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let _ = self.shared.cmd.send(Command::Close(Some(tx)));
        async move {
            let _ = rx.await;
        }
    }
}

fn send(
    shared: &Shared,
    request: rzk_proto::Request,
    watch: Option<Watching>,
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
    away: WhileAway,
) -> oneshot::Receiver<Result<Response, Error>> {
    let (tx, rx) = oneshot::channel();
    let call = Call { request, watch, reply: tx, permit, away };
    // A send fails only once the task has ended; the dropped reply then reports why.
    let _ = shared.cmd.send(Command::Call(call));
    rx
}
