//! Curator's LeaderLatch (docs/election.md §1.2, §2.9).

use std::sync::Arc;
use std::time::Duration;

use crate::contender::{Common, Handle, Kind};
use crate::event::{Events, JoinInfo, Metrics, Participant, Participants, Status};
use crate::leadership::Leadership;
use crate::options::{CloseMode, LatchOptions};
use crate::session::Session;
use crate::Error;

/// A LeaderLatch: join the election with one node, lead while it sorts first, until closed.
///
/// Nodes are named exactly as Curator names them (`_c_<uuid>-latch-<10-digit sequence>`, the
/// participant id as data), so Rust and Java latches can share one election path. Each term is
/// handed out as a [`Leadership`] with a fencing token, a loss signal and guarded writes.
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_election::Error> {
/// use rzk_election::{LatchOptions, LeaderLatch, Session, SessionConfig};
///
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
/// let latch = LeaderLatch::new(&session, "/demo/leader", LatchOptions::default().with_id("a"))?;
/// let joined = latch.start().await?;
/// println!("queued as {}", joined.node);
/// let leadership = latch.await_leadership().await?;
/// println!("leader with token {}", leadership.token());
/// latch.close(None).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LeaderLatch {
    h: Arc<Handle>,
}

impl std::fmt::Debug for LeaderLatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderLatch")
            .field("path", &self.h.shared.path)
            .field("status", &self.status())
            .finish()
    }
}

impl LeaderLatch {
    /// Creates a latch on `path` (not started).
    ///
    /// # Errors
    /// [`Error::BadArguments`] if the path is not absolute, is the root, or ends with `/`.
    pub fn new(session: &Session, path: &str, options: LatchOptions) -> Result<Self, Error> {
        let common = Common {
            id: options.id,
            close_mode: options.close_mode,
            policy: options.policy,
            strategy: options.strategy,
            acls: options.acls,
            stop_budget: options.stop_budget,
            close_timeout: options.close_timeout,
            rejoin_after_step_down: options.rejoin_after_step_down,
            auto_requeue: false,
        };
        Ok(LeaderLatch { h: Arc::new(Handle::new(session, path, Kind::Latch, common)?) })
    }

    /// Starts the latch and returns once its node exists.
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`]; [`Error::Closed`]; [`Error::ForeignNodes`]; `NoAuth`,
    /// `InvalidAcl`, `NoChildrenForEphemerals` when the node cannot be created.
    ///
    /// # Cancellation safety
    /// Safe: the join continues in the background; call [`LeaderLatch::close`] to stop it.
    pub async fn start(&self) -> Result<JoinInfo, Error> {
        self.h.start(None)?;
        self.h.joined().await
    }

    /// Waits until this latch leads; returns the current term at once if it does.
    ///
    /// # Errors
    /// [`Error::Closed`] once closed (Curator's `EOFException`); the failure of a failed latch
    /// ([`Error::ForeignNodes`], `NoAuth`, ...).
    ///
    /// # Cancellation safety
    /// Safe: a term granted while nobody waits is kept (see [`LeaderLatch::current`]).
    pub async fn await_leadership(&self) -> Result<Leadership, Error> {
        self.h.await_leadership().await
    }

    /// [`LeaderLatch::await_leadership`] with a bound; `Ok(None)` on timeout (Curator's
    /// `await(timeout) == false`).
    ///
    /// # Errors
    /// As [`LeaderLatch::await_leadership`].
    ///
    /// # Cancellation safety
    /// Safe, as [`LeaderLatch::await_leadership`].
    pub async fn await_leadership_timeout(
        &self,
        timeout: Duration,
    ) -> Result<Option<Leadership>, Error> {
        match tokio::time::timeout(timeout, self.h.await_leadership()).await {
            Ok(r) => r.map(Some),
            Err(_) => Ok(None),
        }
    }

    /// True while a term is valid (its loss signal unresolved and its lease deadline ahead).
    /// Local, as Curator's `hasLeadership()`; no server read.
    pub fn has_leadership(&self) -> bool {
        self.h.has_leadership()
    }

    /// The current term, unless it has ended.
    pub fn current(&self) -> Option<Leadership> {
        self.h.live_term()
    }

    /// Our node's path (Curator's `getOurPath()`).
    pub fn our_path(&self) -> Option<String> {
        self.h.our_path()
    }

    /// The node we last led with (Curator's `getLastPathIsLeader()`).
    pub fn last_path_is_leader(&self) -> Option<String> {
        self.h.shared.last_path_is_leader.lock().expect("poisoned").clone()
    }

    /// The election path.
    pub fn path(&self) -> &str {
        self.h.path()
    }

    /// Where the latch stands.
    pub fn status(&self) -> Status {
        self.h.status()
    }

    /// Events from now on.
    pub fn events(&self) -> Events {
        self.h.events()
    }

    /// Counters.
    pub fn metrics(&self) -> Metrics {
        self.h.metrics()
    }

    /// The participant whose node sorts first, read from the server (it may disagree with
    /// [`LeaderLatch::has_leadership`] for a moment); `Ok(None)` when nobody participates.
    ///
    /// # Errors
    /// [`Error::ForeignNodes`] when the leader is ambiguous; `ConnectionLoss`,
    /// `SessionExpired`.
    ///
    /// # Cancellation safety
    /// Safe: read-only.
    pub async fn leader(&self) -> Result<Option<Participant>, Error> {
        self.h.leader().await
    }

    /// Every participant in node order, read from the server (1 getChildren + 1 multi-read),
    /// and any foreign children.
    ///
    /// # Errors
    /// `ConnectionLoss`, `SessionExpired`, other ZooKeeper errors.
    ///
    /// # Cancellation safety
    /// Safe: read-only.
    pub async fn participants(&self) -> Result<Participants, Error> {
        self.h.participants().await
    }

    /// Closes the latch with `mode` (default: the configured one). A leading latch's
    /// `lost()` resolves with `Closed` **before** its node is deleted; `close` returns once the
    /// delete is acknowledged, or after the close timeout.
    ///
    /// # Errors
    /// [`Error::Closed`] if already closed; [`Error::ConnectionLoss`] if the delete was not
    /// confirmed in time (it keeps being retried while the session lives).
    ///
    /// # Cancellation safety
    /// The close starts synchronously and completes in the background.
    pub async fn close(self, mode: Option<CloseMode>) -> Result<(), Error> {
        self.h.close(mode.unwrap_or(self.h.shared.close_mode)).await
    }
}
