//! The session manager, in the role of Curator's `CuratorFramework`: one rzk-client
//! session at a time, connection states in Curator's vocabulary, a heartbeat that maintains the
//! lease, simulated expiry, and a new session after expiry so that recipes rejoin.
//!
//! **Invariant:** only the server expires a session; the lease is what lets a recipe stop
//! before it could have. Every recipe reads the current client, state and lease from one
//! snapshot (`snapshot`), so a recipe never acts on a client of an earlier session.
//!
//! - `config`: what a session connects with; `supervisor`: the task that connects, pings
//!   and replaces the session; `snapshot`: what it publishes; `events`: the state stream;
//! - `acl_provider`: which ACL every node a recipe creates gets;
//! - `ops`: how the plain recipes (queues, counters, barriers, caches, discovery) run an
//!   operation on the current client: wait for a connection, retry what a retry can cure.

pub(crate) mod acl_provider;
mod config;
mod events;
pub(crate) mod ops;
mod snapshot;
mod supervisor;

use std::sync::Arc;
use std::time::Duration;

use rzk_client::{Client, SessionInfo};
use tokio::sync::{broadcast, mpsc, oneshot, watch};

pub use crate::naming::is_session_owner;
pub use acl_provider::{AclProvider, CreatorOnlyAclProvider, OpenAclProvider};
pub use config::{Credential, SessionConfig};
pub use events::ConnectionEvents;
pub use rzk_client::{Jaas, SaslLogin, SessionId};
pub use snapshot::{ConnectionEvent, ConnectionState, Lease};
pub(crate) use snapshot::{Publisher, Snapshot};
pub(crate) use supervisor::sleep_until;

use crate::Error;
use snapshot::LeaseState;
use supervisor::{connect_client, Command, Supervisor};

/// Connection events a slow subscriber may fall behind by before it skips some.
const CONNECTION_EVENT_BUFFER: usize = 1024;

struct Handle {
    shared: Arc<Publisher>,
    cmd: mpsc::UnboundedSender<Command>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        let _ = self.cmd.send(Command::Close(None));
    }
}

/// A managed ZooKeeper session: the current rzk-client [`Client`], its connection
/// state, its lease, and a fresh session after expiry. Cheap to clone; the session closes when
/// [`Session::close`] is called or the last clone (including the ones recipes hold) is dropped.
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_recipes::Error> {
/// use std::time::Duration;
/// use rzk_recipes::session::{Session, SessionConfig};
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
        let started = crate::clock::now();
        let client =
            match tokio::time::timeout(config.connect_timeout, connect_client(&config)).await {
                Err(_) => return Err(Error::OperationTimeout),
                Ok(r) => r?,
            };
        let heartbeat = config.heartbeat_for(client.session_timeout());
        let snapshot = Snapshot {
            state: ConnectionState::Connected,
            session_id: Some(client.session_id()),
            client: Some(client.clone()),
            generation: 1,
            suspensions: 0,
            reconnects: 0,
        };
        let (snap, _) = watch::channel(snapshot);
        let (lease, _) = watch::channel(LeaseState::new(1, started, &client, &config));
        let (events, _) = broadcast::channel(CONNECTION_EVENT_BUFFER);
        let shared = Arc::new(Publisher {
            snap,
            lease,
            prev_lease: std::sync::Mutex::new(None),
            events,
            config,
            heartbeat,
        });
        let (cmd, cmd_rx) = mpsc::unbounded_channel();
        tokio::spawn(Supervisor { shared: shared.clone(), cmd_rx }.run(client));
        Ok(Session { inner: Arc::new(Handle { shared, cmd }) })
    }

    pub(crate) fn shared(&self) -> &Arc<Publisher> {
        &self.inner.shared
    }

    /// The provider of the ACLs the recipes create nodes with.
    pub(crate) fn acl_provider(&self) -> acl_provider::SharedProvider {
        self.inner.shared.config.acl_provider.clone()
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
        ConnectionEvents::new(self.inner.shared.events.subscribe())
    }

    /// The current session id; `None` between `Lost` and the next session.
    pub fn session_id(&self) -> Option<SessionId> {
        self.inner.shared.snap.borrow().session_id
    }

    /// The session generation: 1 for the first session, +1 for every new one.
    pub fn generation(&self) -> u64 {
        self.inner.shared.snap.borrow().generation
    }

    /// The negotiated session timeout `T` of the latest handshake (a session that moves to
    /// another member may get another).
    pub fn negotiated_timeout(&self) -> Duration {
        self.inner.shared.lease.borrow().timeout
    }

    /// The safety margin subtracted from `last_ack_sent + T`.
    pub fn safety_margin(&self) -> Duration {
        self.inner.shared.lease.borrow().margin
    }

    /// The current lease.
    pub fn lease(&self) -> Lease {
        let l = *self.inner.shared.lease.borrow();
        Lease {
            generation: l.generation,
            last_ack_sent: l.last_ack_sent,
            server_expiry_not_before: l.server_expiry_not_before(),
            deadline: l.deadline(),
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
