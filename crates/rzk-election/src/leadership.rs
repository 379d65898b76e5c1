//! One term of leadership: the fencing token, the loss signal, the lease and guarded writes.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, watch};
use zookeeper_client::{CheckWriteError, Client, CreateOptions, MultiWriteResult, SessionId};

use crate::contender::{Command, Kind, RecipeShared};
use crate::options::ConnectionPolicy;
use crate::session::{sleep_until, Shared};
use crate::Error;

/// A fencing token: the `czxid` of the leader's own node.
///
/// It strictly increases from term to term within one election path (docs/election.md §2.4),
/// across parent deletions and, on a server that never reuses zxids, across restarts. A resumed
/// LeaderLatch term (same node) carries the same token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FencingToken(pub i64);

impl FencingToken {
    /// The ZAB epoch: the high 32 bits of the zxid.
    pub fn epoch(self) -> u32 {
        ((self.0 as u64) >> 32) as u32
    }

    /// The counter within the epoch: the low 32 bits.
    pub fn counter(self) -> u32 {
        self.0 as u32
    }
}

impl std::fmt::Display for FencingToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::fmt::LowerHex for FencingToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::LowerHex::fmt(&self.0, f)
    }
}

/// Why a term ended (or may have ended).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LossReason {
    /// The connection was suspended under [`ConnectionPolicy::StepDownOnSuspended`].
    Suspended,
    /// The lease ran out: no acknowledged request recently enough (docs/election.md §2.2).
    LeaseExpired,
    /// The session was lost (expired, or declared expired locally).
    SessionExpired,
    /// Our node was deleted, or found owned by another session.
    NodeDeleted,
    /// A child this recipe cannot order appeared in the election path.
    ForeignNodes,
    /// The application resigned.
    Resigned,
    /// The recipe was closed.
    Closed,
    /// `LeaderSelector::interrupt_leadership` was called.
    Interrupted,
    /// The session manager was closed or dropped.
    ClientClosed,
}

impl std::fmt::Display for LossReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            LossReason::Suspended => "connection suspended",
            LossReason::LeaseExpired => "lease expired",
            LossReason::SessionExpired => "session expired",
            LossReason::NodeDeleted => "leader node deleted",
            LossReason::ForeignNodes => "foreign nodes in the election path",
            LossReason::Resigned => "resigned",
            LossReason::Closed => "closed",
            LossReason::Interrupted => "interrupted",
            LossReason::ClientClosed => "session closed",
        };
        f.write_str(s)
    }
}

pub(crate) type LossCell = Option<(LossReason, Instant)>;

/// The shared state of one term.
pub(crate) struct Term {
    pub token: FencingToken,
    pub node_path: String,
    pub participant_id: String,
    pub session_id: SessionId,
    pub generation: u64,
    pub term: u64,
    pub resumed: bool,
    pub started_at: Instant,
    pub session: Arc<Shared>,
    pub lost: watch::Sender<LossCell>,
    pub cmd: mpsc::UnboundedSender<Command>,
    pub recipe: Weak<RecipeShared>,
}

impl Term {
    /// Resolves the loss signal; the first reason wins. Returns true if this call resolved it.
    pub fn lose(&self, reason: LossReason) -> bool {
        self.lost.send_if_modified(|cell| {
            if cell.is_none() {
                *cell = Some((reason, Instant::now()));
                tracing::debug!(node = %self.node_path, term = self.term, %reason, "leadership lost");
                true
            } else {
                false
            }
        })
    }

    pub fn loss(&self) -> Option<(LossReason, Instant)> {
        *self.lost.borrow()
    }

    pub fn deadline(&self) -> Option<Instant> {
        self.session.deadline(self.generation)
    }

    pub fn is_valid(&self) -> bool {
        self.loss().is_none() && self.deadline().is_some_and(|d| Instant::now() < d)
    }

    /// Refuses locally unless the term is valid.
    fn gate(&self) -> Result<(), Error> {
        if let Some((reason, _)) = self.loss() {
            return Err(self.not_leader(reason));
        }
        match self.deadline() {
            None => Err(self.not_leader(LossReason::SessionExpired)),
            Some(d) if Instant::now() >= d => Err(self.not_leader(LossReason::LeaseExpired)),
            Some(_) => Ok(()),
        }
    }

    fn not_leader(&self, reason: LossReason) -> Error {
        Error::NotLeader { node: self.node_path.clone(), reason }
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        self.lose(LossReason::ClientClosed);
    }
}

/// Watches the session for one term and resolves its loss signal on Suspended (per policy),
/// session loss, or when the lease's `stop_at = deadline − stop_budget` passes.
pub(crate) async fn guard(
    term: Arc<Term>,
    policy: ConnectionPolicy,
    stop_budget: Duration,
    suspensions_at_start: u64,
) {
    let mut snap = term.session.snap.subscribe();
    let mut lost = term.lost.subscribe();
    loop {
        {
            let s = snap.borrow_and_update();
            if s.state.is_terminal() {
                term.lose(LossReason::ClientClosed);
                return;
            }
            if s.generation != term.generation || s.client.is_none() {
                term.lose(LossReason::SessionExpired);
                return;
            }
            if policy == ConnectionPolicy::StepDownOnSuspended
                && (s.suspensions != suspensions_at_start || !s.state.is_connected())
            {
                term.lose(LossReason::Suspended);
                return;
            }
        }
        let Some(deadline) = term.deadline() else {
            term.lose(LossReason::SessionExpired);
            return;
        };
        let stop_at = deadline.checked_sub(stop_budget).unwrap_or(deadline);
        if Instant::now() >= stop_at {
            term.lose(LossReason::LeaseExpired);
            return;
        }
        if lost.borrow_and_update().is_some() {
            return;
        }
        tokio::select! {
            r = snap.changed() => if r.is_err() { term.lose(LossReason::ClientClosed); return; },
            _ = sleep_until(Some(stop_at)) => {}
            _ = lost.changed() => {}
        }
    }
}

/// A term of leadership, handed to the application. Cheap to clone.
///
/// ```no_run
/// # async fn demo(latch: rzk_election::LeaderLatch) -> Result<(), rzk_election::Error> {
/// use zookeeper_client::{Acls, CreateMode};
///
/// let leadership = latch.await_leadership().await?;
/// println!("leading with fencing token {}", leadership.token());
/// // A write that only lands while we still lead:
/// let mut w = leadership.guarded()?;
/// w.set_data("/app/config", b"v2", None)?;
/// match w.commit().await {
///     Ok(_) => println!("written"),
///     Err(e) if e.is_not_leader() => println!("not leader any more: {e}"),
///     Err(e) => return Err(e),
/// }
/// tokio::select! {
///     reason = leadership.lost() => println!("lost: {reason}"),
///     _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => leadership.resign().await?,
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Leadership {
    pub(crate) inner: Arc<Term>,
}

impl std::fmt::Debug for Leadership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leadership")
            .field("token", &self.inner.token)
            .field("node", &self.inner.node_path)
            .field("term", &self.inner.term)
            .field("resumed", &self.inner.resumed)
            .field("loss", &self.inner.loss().map(|l| l.0))
            .finish()
    }
}

impl Leadership {
    /// The fencing token (the czxid of our node).
    pub fn token(&self) -> FencingToken {
        self.inner.token
    }

    /// The full path of our node.
    pub fn node_path(&self) -> &str {
        &self.inner.node_path
    }

    /// The participant id (our node's data).
    pub fn participant_id(&self) -> &str {
        &self.inner.participant_id
    }

    /// The session that owns our node.
    pub fn session_id(&self) -> SessionId {
        self.inner.session_id
    }

    /// The session generation the term belongs to.
    pub fn generation(&self) -> u64 {
        self.inner.generation
    }

    /// A local counter: +1 for every Leadership this recipe issues.
    pub fn term(&self) -> u64 {
        self.inner.term
    }

    /// True if this term continues an earlier one on the same node (LeaderLatch after a
    /// step-down on Suspended; docs/election.md §2.3). The token is then the same.
    pub fn resumed(&self) -> bool {
        self.inner.resumed
    }

    /// When the recipe published this term.
    pub fn started_at(&self) -> Instant {
        self.inner.started_at
    }

    /// The current lease deadline: the leader must not act after it. Moves forward with every
    /// acknowledged request while the term lasts; once the term is lost, the earlier of the
    /// session's last deadline and the loss time (the end of the term, as a checker sees it).
    pub fn deadline(&self) -> Instant {
        let last = self.inner.session.last_deadline(self.inner.generation);
        match (last, self.inner.loss()) {
            (Some(d), Some((_, at))) => d.min(at),
            (Some(d), None) => d,
            (None, Some((_, at))) => at,
            (None, None) => self.inner.started_at,
        }
    }

    /// True while leadership holds: the loss signal has not resolved and the lease deadline
    /// has not passed. Checked synchronously against the clock.
    pub fn is_valid(&self) -> bool {
        self.inner.is_valid()
    }

    /// Why the term ended, once it has.
    pub fn loss_reason(&self) -> Option<LossReason> {
        self.inner.loss().map(|l| l.0)
    }

    /// When the term ended, once it has.
    pub fn lost_at(&self) -> Option<Instant> {
        self.inner.loss().map(|l| l.1)
    }

    /// A future that resolves, with the reason, as soon as leadership may be lost
    /// (docs/election.md §2.5); at once if it already is. It resolves no later than the lease's
    /// `stop_at`, and before our node is deleted on resign, close or release.
    ///
    /// # Cancellation safety
    /// Safe; it may be awaited from many tasks, and many times.
    pub fn lost(&self) -> Lost {
        Lost { rx: self.inner.lost.subscribe(), fut: None }
    }

    /// Starts a guarded write: a multi whose first operation checks that our node still exists
    /// (docs/election.md §2.6).
    ///
    /// # Errors
    /// [`Error::NotLeader`] at once, without a request, if the term is not valid.
    pub fn guarded(&self) -> Result<GuardedWrite, Error> {
        self.inner.gate()?;
        let client = {
            let s = self.inner.session.snap.borrow();
            match (&s.client, s.generation == self.inner.generation) {
                (Some(c), true) => c.clone(),
                _ => return Err(self.inner.not_leader(LossReason::SessionExpired)),
            }
        };
        Ok(GuardedWrite { term: self.inner.clone(), client, ops: Vec::new() })
    }

    /// Ends the term: [`Leadership::lost`] resolves with `Resigned`, then our node is deleted.
    /// A LeaderLatch closes (Silent); a LeaderSelector releases its node and requeues if so
    /// configured.
    ///
    /// # Errors
    /// [`Error::ConnectionLoss`] if the delete could not be confirmed within the recipe's
    /// close timeout (it keeps being retried while the session lives).
    ///
    /// # Cancellation safety
    /// The resignation starts synchronously; dropping the future does not undo it.
    pub async fn resign(self) -> Result<(), Error> {
        if let Some(r) = self.inner.recipe.upgrade() {
            if r.kind == Kind::Latch {
                // Resigning a latch closes it, silently.
                r.closed.store(true, Ordering::Release);
                r.silent.store(true, Ordering::Release);
            }
        }
        self.inner.lose(LossReason::Resigned);
        let (tx, rx) = oneshot::channel();
        if self.inner.cmd.send(Command::Resign { term: self.inner.term, done: tx }).is_err() {
            return Ok(());
        }
        rx.await.unwrap_or(Ok(()))
    }
}

/// The future returned by [`Leadership::lost`].
pub struct Lost {
    rx: watch::Receiver<LossCell>,
    fut: Option<Pin<Box<dyn Future<Output = LossReason> + Send>>>,
}

impl Clone for Lost {
    fn clone(&self) -> Self {
        Lost { rx: self.rx.clone(), fut: None }
    }
}

impl Future for Lost {
    type Output = LossReason;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<LossReason> {
        if let Some((reason, _)) = *self.rx.borrow() {
            return Poll::Ready(reason);
        }
        if self.fut.is_none() {
            let mut rx = self.rx.clone();
            self.fut = Some(Box::pin(async move {
                loop {
                    if let Some((reason, _)) = *rx.borrow_and_update() {
                        return reason;
                    }
                    if rx.changed().await.is_err() {
                        return rx.borrow().map(|l| l.0).unwrap_or(LossReason::ClientClosed);
                    }
                }
            }));
        }
        self.fut.as_mut().expect("set above").as_mut().poll(cx)
    }
}

enum Op {
    Create { path: String, data: Vec<u8>, options: CreateOptions<'static> },
    SetData { path: String, data: Vec<u8>, version: Option<i32> },
    Delete { path: String, version: Option<i32> },
    Check { path: String, version: i32 },
}

impl Op {
    fn path(&self) -> &str {
        match self {
            Op::Create { path, .. }
            | Op::SetData { path, .. }
            | Op::Delete { path, .. }
            | Op::Check { path, .. } => path,
        }
    }
}

/// A multi guarded by a check on the leader's own node. Build it with the `create`, `set_data`,
/// `delete` and `check` methods, then [`GuardedWrite::commit`].
pub struct GuardedWrite {
    term: Arc<Term>,
    client: Client,
    ops: Vec<Op>,
}

impl std::fmt::Debug for GuardedWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedWrite")
            .field("node", &self.term.node_path)
            .field("ops", &self.ops.len())
            .finish()
    }
}

impl GuardedWrite {
    /// Adds a create.
    ///
    /// # Errors
    /// None today; the `Result` leaves room for validation.
    pub fn create(
        &mut self,
        path: &str,
        data: &[u8],
        options: &CreateOptions<'static>,
    ) -> Result<&mut Self, Error> {
        self.ops.push(Op::Create {
            path: path.into(),
            data: data.into(),
            options: options.clone(),
        });
        Ok(self)
    }

    /// Adds a setData (`version: None` for any version).
    ///
    /// # Errors
    /// None today; the `Result` leaves room for validation.
    pub fn set_data(
        &mut self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<&mut Self, Error> {
        self.ops.push(Op::SetData { path: path.into(), data: data.into(), version });
        Ok(self)
    }

    /// Adds a delete (`version: None` for any version).
    ///
    /// # Errors
    /// None today; the `Result` leaves room for validation.
    pub fn delete(&mut self, path: &str, version: Option<i32>) -> Result<&mut Self, Error> {
        self.ops.push(Op::Delete { path: path.into(), version });
        Ok(self)
    }

    /// Adds a version check (`-1` for existence).
    ///
    /// # Errors
    /// None today; the `Result` leaves room for validation.
    pub fn check(&mut self, path: &str, version: i32) -> Result<&mut Self, Error> {
        self.ops.push(Op::Check { path: path.into(), version });
        Ok(self)
    }

    /// Sends the multi `[check(our node), ops...]` and returns one result per added operation.
    ///
    /// # Errors
    /// - [`Error::NotLeader`]: refused locally (the term is lost or its lease passed), or the
    ///   server found our node gone (then the term's `lost()` resolves with `NodeDeleted`) or
    ///   our session expired. Not applied.
    /// - [`Error::OperationFailed`]: an operation failed after the check passed. Not applied.
    /// - [`Error::ConnectionLoss`]: **unknown** whether it was applied; find out before
    ///   retrying. The crate never retries a guarded write.
    /// - other ZooKeeper errors, by name.
    ///
    /// # Cancellation safety
    /// Not cancellation safe. The gate is checked and the request sent at the first poll;
    /// dropping the future after that leaves the outcome unknown. Dropping it before the first
    /// poll sends nothing.
    pub async fn commit(self) -> Result<Vec<MultiWriteResult>, Error> {
        let term = self.term;
        term.gate()?;
        let node = term.node_path.clone();
        let sent = Instant::now();
        let fut = {
            let mut w = self.client.new_check_writer(&node, None).map_err(Error::from)?;
            for op in &self.ops {
                let r = match op {
                    Op::Create { path, data, options } => w.add_create(path, data, options),
                    Op::SetData { path, data, version } => w.add_set_data(path, data, *version),
                    Op::Delete { path, version } => w.add_delete(path, *version),
                    Op::Check { path, version } => w.add_check_version(path, *version),
                };
                r.map_err(|e| Error::from_zk(e, op.path()))?;
            }
            w.commit()
        };
        match fut.await {
            Ok(results) => {
                term.session.ack(term.generation, sent);
                Ok(results)
            }
            Err(CheckWriteError::CheckFailed { source: zookeeper_client::Error::NoNode }) => {
                term.lose(LossReason::NodeDeleted);
                Err(term.not_leader(LossReason::NodeDeleted))
            }
            Err(CheckWriteError::CheckFailed { source: zookeeper_client::Error::Custom(_) }) => {
                Err(Error::ConnectionLoss)
            }
            Err(CheckWriteError::CheckFailed { source }) => Err(Error::from_zk(source, &node)),
            Err(CheckWriteError::RequestFailed {
                source: zookeeper_client::Error::SessionExpired,
            }) => {
                term.lose(LossReason::SessionExpired);
                Err(term.not_leader(LossReason::SessionExpired))
            }
            Err(CheckWriteError::RequestFailed { source }) => Err(Error::from_zk(source, "")),
            Err(CheckWriteError::OperationFailed { index, source }) => {
                let path = self.ops.get(index).map(|o| o.path()).unwrap_or("");
                term.session.ack(term.generation, sent);
                Err(Error::OperationFailed {
                    index,
                    source: Box::new(Error::from_zk(source, path)),
                })
            }
        }
    }
}
