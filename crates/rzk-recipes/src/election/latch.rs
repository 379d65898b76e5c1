//! Curator's LeaderLatch (docs/election.md §1.2, §2.9).

use std::ops::Deref;

use crate::driver::contender::Contender;
use crate::driver::election_options::{CloseMode, LatchOptions};
use crate::driver::rule;
use crate::driver::status::JoinInfo;
use crate::session::Session;
use crate::term::control::Lifecycle;
use crate::Error;

/// A LeaderLatch: join the election with one node, lead while it sorts first, until closed.
///
/// Nodes are named exactly as Curator names them (`_c_<uuid>-latch-<10-digit sequence>`, the
/// participant id as data), so Rust and Java latches can share one election path. Each term is
/// handed out as a [`Leadership`](crate::term::leadership::Leadership) with a fencing token, a loss signal and guarded writes.
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_recipes::Error> {
/// use rzk_recipes::{election::{LatchOptions, LeaderLatch}, session::{Session, SessionConfig}};
///
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
/// let latch = LeaderLatch::new(&session, "/demo/leader", LatchOptions::default().with_id("a"))?;
/// let joined = latch.start().await?;
/// println!("queued as {}", joined.node);
/// let leadership = latch.await_leadership().await?;
/// println!("leader with token {}", leadership.token());
/// latch.close().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LeaderLatch {
    contender: Contender,
}

impl std::fmt::Debug for LeaderLatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderLatch")
            .field("path", &self.path())
            .field("status", &self.status())
            .finish()
    }
}

/// Everything a latch shares with the other recipes: status, events, the current term,
/// `await_leadership`, the participants.
impl Deref for LeaderLatch {
    type Target = Contender;

    fn deref(&self) -> &Contender {
        &self.contender
    }
}

impl LeaderLatch {
    /// Creates a latch on `path` (not started).
    ///
    /// # Errors
    /// [`Error::BadArguments`] if the path is not absolute, is the root, or ends with `/`.
    pub fn new(session: &Session, path: &str, options: LatchOptions) -> Result<Self, Error> {
        let LatchOptions { common, rejoin_after_step_down } = options;
        let contender = Contender::new(
            session,
            path,
            Lifecycle::Latch,
            rule::LATCH,
            common,
            rejoin_after_step_down,
            false,
        )?;
        Ok(LeaderLatch { contender })
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
        self.contender.start(None)?;
        self.contender.joined().await
    }

    /// Closes the latch with the configured close mode (see [`LeaderLatch::close_with`]).
    ///
    /// # Errors
    /// As [`LeaderLatch::close_with`].
    ///
    /// # Cancellation safety
    /// As [`LeaderLatch::close_with`].
    pub async fn close(self) -> Result<(), Error> {
        let mode = self.contender.shared().close_mode;
        self.close_with(mode).await
    }

    /// Closes the latch with `mode`. A leading latch's `lost()` resolves with `Closed`
    /// **before** its node is deleted; `close_with` returns once the delete is acknowledged,
    /// or after the close timeout.
    ///
    /// # Errors
    /// [`Error::Closed`] if already closed; [`Error::ConnectionLoss`] if the delete was not
    /// confirmed in time (it keeps being retried while the session lives).
    ///
    /// # Cancellation safety
    /// The close starts synchronously and completes in the background.
    pub async fn close_with(self, mode: CloseMode) -> Result<(), Error> {
        self.contender.close(mode).await
    }
}
