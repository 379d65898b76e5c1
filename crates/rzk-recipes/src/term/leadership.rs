//! One term of leadership as the application holds it: the fencing token, the loss signal,
//! the lease deadline, guarded writes and resignation.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rzk_client::SessionId;
use tokio::sync::oneshot;

use crate::loss::{LossReason, Lost};
use crate::term::control::{confirmed, BoxError, Command, Lifecycle};
use crate::term::guard::Term;
use crate::term::guarded::GuardedWrite;
use crate::term::token::FencingToken;
use crate::Error;

/// What a LeaderSelector's task returns.
pub(crate) type TaskFuture = Pin<Box<dyn Future<Output = Result<(), BoxError>> + Send>>;
/// A LeaderSelector's task: called once per term with the term's handle.
pub(crate) type Task = Box<dyn FnMut(Leadership) -> TaskFuture + Send>;

/// A term of leadership, handed to the application. Cheap to clone.
///
/// ```no_run
/// # async fn demo(latch: rzk_recipes::election::LeaderLatch) -> Result<(), rzk_recipes::Error> {
/// use rzk_client::{Acls, CreateMode};
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
        Lost::new(self.inner.lost.subscribe())
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
        Ok(GuardedWrite::new(self.inner.clone(), client))
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
        self.resign_now().await.unwrap_or(Ok(()))
    }

    /// Resigns, then waits at most `timeout` for our node's delete: [`Error::ConnectionLoss`]
    /// if it was not confirmed in time (it keeps being retried while the session lives).
    pub(crate) async fn resign_within(&self, timeout: Duration) -> Result<(), Error> {
        confirmed(self.resign_now(), timeout).await
    }

    /// Starts the resignation synchronously; the receiver answers once our node is deleted,
    /// or at once with how the recipe ended if it has.
    pub(crate) fn resign_now(&self) -> oneshot::Receiver<Result<(), Error>> {
        if self.inner.lifecycle == Lifecycle::Latch {
            // Resigning a latch closes it, silently.
            self.inner.close.close_silently();
        }
        self.inner.lose(LossReason::Resigned);
        let (tx, rx) = oneshot::channel();
        let resign = Command::Resign { term: self.inner.term, done: tx };
        // A driver that has ended answers with how it ended (`Mailbox::send`).
        let _ = self.inner.cmd.send(resign);
        rx
    }
}
