//! The race election (Kafka's `/controller`, HBase's master node, Hadoop's
//! ActiveStandbyElector): every candidate creates the same EPHEMERAL node; whoever's create
//! lands leads (docs/recipes.md, "Race election").

use std::time::Duration;

use crate::driver::contender::Contender;
use crate::driver::election_options::{CloseMode, RaceOptions};
use crate::driver::participants::read_race_holder;
use crate::driver::status::{Events, Metrics, Participant, Status};
use crate::naming;
use crate::session::Session;
use crate::term::leadership::Leadership;
use crate::Error;

/// A non-fair election on one fixed node: every candidate tries to create `path` (EPHEMERAL,
/// data = its id); the one that succeeds leads, the others watch it with `exists` and race
/// again when it is deleted. Every waiter is woken on each deletion (the herd: N creates per
/// handoff, against one for [`LeaderLatch`](crate::election::LeaderLatch)'s predecessor watch), and who
/// wins next is not predictable.
///
/// The winner's create is one multi with a setData of the epoch node `<path>_epoch`
/// (PERSISTENT, created if missing), so the epoch's version moves with every win. The term is
/// the same [`Leadership`] a latch hands out: the token is the node's czxid; `lost()` fires
/// before the server can expire the session; [`Leadership::guarded`] writes and the release
/// check the node **and** the epoch's version, so a deposed leader's write is refused once
/// another candidate has won, and its release never deletes the new winner's node. That
/// fencing covers candidates that race by this protocol; a client that creates the node
/// without the epoch (an older tool, by hand) is waited for like any holder, but its writes
/// are not fenced. Never delete the epoch node while candidates run: its version restarts.
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_recipes::Error> {
/// use rzk_recipes::{election::{RaceElection, RaceOptions}, session::{Session, SessionConfig}};
///
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
/// let race = RaceElection::new(&session, "/app/controller", RaceOptions::default().with_id("b1"))?;
/// race.start().await?;
/// let leadership = race.await_leadership().await?;
/// println!("controller with token {}", leadership.token());
/// let mut w = leadership.guarded()?;
/// w.set_data("/app/state", b"v2", None)?;
/// match w.commit().await {
///     Ok(_) => println!("written"),
///     // Another candidate won since (or our node is gone): nothing was written.
///     Err(e) if e.is_not_leader() => println!("deposed: {e}"),
///     Err(e) => return Err(e),
/// }
/// race.close().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RaceElection {
    contender: Contender,
}

impl std::fmt::Debug for RaceElection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RaceElection")
            .field("path", &self.path())
            .field("status", &self.status())
            .finish()
    }
}

impl RaceElection {
    /// A race on the node `path` (not started); the epoch node is `<path>_epoch`.
    ///
    /// # Errors
    /// [`Error::BadArguments`] if the path is not absolute, is the root, or ends with `/`.
    pub fn new(session: &Session, path: &str, options: RaceOptions) -> Result<Self, Error> {
        let contender = Contender::new_race(session, path, options.common)?;
        Ok(RaceElection { contender })
    }

    /// Starts racing; returns once the first round is decided (this candidate leads, or
    /// waits for the holder).
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`]; [`Error::Closed`]; [`Error::NotEphemeral`] when a
    /// PERSISTENT node sits at the path; `NoAuth`, `InvalidAcl`, `NoChildrenForEphemerals`
    /// when the node or the epoch node cannot be written. The recipe has failed then, and
    /// created nothing but (maybe) the epoch node and missing parents.
    ///
    /// # Cancellation safety
    /// Safe: the race continues in the background; call [`RaceElection::close`] to stop it.
    pub async fn start(&self) -> Result<(), Error> {
        self.contender.start(None)?;
        self.contender.first_decision().await
    }

    /// Waits until this candidate leads; returns the current term at once if it does.
    ///
    /// # Errors
    /// As [`Contender::await_leadership`].
    ///
    /// # Cancellation safety
    /// Safe: it only waits on published state.
    pub async fn await_leadership(&self) -> Result<Leadership, Error> {
        self.contender.await_leadership().await
    }

    /// [`RaceElection::await_leadership`] with a bound; `Ok(None)` on timeout.
    ///
    /// # Errors
    /// As [`Contender::await_leadership`].
    ///
    /// # Cancellation safety
    /// Safe.
    pub async fn await_leadership_timeout(
        &self,
        timeout: Duration,
    ) -> Result<Option<Leadership>, Error> {
        self.contender.await_leadership_timeout(timeout).await
    }

    /// True while a term is valid (local, no server read).
    pub fn has_leadership(&self) -> bool {
        self.contender.has_leadership()
    }

    /// The current term, unless it has ended.
    pub fn current(&self) -> Option<Leadership> {
        self.contender.current()
    }

    /// The race node's path.
    pub fn path(&self) -> &str {
        self.contender.path()
    }

    /// The epoch node's path.
    pub fn epoch_path(&self) -> String {
        naming::race_epoch_path(self.path())
    }

    /// Where the candidate stands: `Following { position: 1 }` while another holds the node.
    pub fn status(&self) -> Status {
        self.contender.status()
    }

    /// Events from now on.
    pub fn events(&self) -> Events {
        self.contender.events()
    }

    /// Counters (`creates` counts the races run, `wakeups` the holder's deletions seen).
    pub fn metrics(&self) -> Metrics {
        self.contender.metrics()
    }

    /// The holder, read from the server: its id (the node's data), token and session;
    /// `Ok(None)` when nobody holds the node.
    ///
    /// # Errors
    /// `ConnectionLoss`, `SessionExpired`, `NoAuth`.
    ///
    /// # Cancellation safety
    /// Safe: read-only.
    pub async fn holder(&self) -> Result<Option<Participant>, Error> {
        read_race_holder(&self.contender.shared().session, self.path()).await
    }

    /// Closes with the configured close mode (see [`RaceElection::close_with`]).
    ///
    /// # Errors
    /// As [`RaceElection::close_with`].
    ///
    /// # Cancellation safety
    /// As [`RaceElection::close_with`].
    pub async fn close(self) -> Result<(), Error> {
        let mode = self.contender.shared().close_mode;
        self.close_with(mode).await
    }

    /// Closes with `mode`. A leader's `lost()` resolves with `Closed` **before** its node is
    /// deleted (by a delete fenced by the epoch: never another winner's node); returns once
    /// the delete is acknowledged, or after the close timeout.
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
