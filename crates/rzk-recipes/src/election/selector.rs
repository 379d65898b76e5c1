//! Curator's LeaderSelector on the InterProcessMutex layout (docs/election.md §1.4, §2.10).

use std::future::Future;
use std::ops::Deref;

use crate::driver::contender::Contender;
use crate::driver::election_options::{CloseMode, SelectorOptions};
use crate::driver::rule;
use crate::loss::LossReason;
use crate::session::Session;
use crate::term::control::{BoxError, Lifecycle};
use crate::term::leadership::Leadership;
use crate::term::leadership::Task;
use crate::Error;

/// A LeaderSelector: an application task runs while this participant leads, and is cancelled
/// (its future dropped) the moment leadership may be lost. The node is released when the task
/// ends, then, with auto-requeue, a new node is queued at the tail: strict round-robin.
///
/// Nodes follow Curator's InterProcessMutex layout (`_c_<uuid>-lock-<10-digit sequence>`).
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_recipes::Error> {
/// use rzk_recipes::{election::{LeaderSelector, SelectorOptions}, session::{Session, SessionConfig}};
///
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
/// let selector = LeaderSelector::new(
///     &session,
///     "/demo/leader",
///     SelectorOptions::default().with_id("worker-1").with_auto_requeue(true),
/// )?;
/// selector.start(|leadership| async move {
///     println!("leading with token {}", leadership.token());
///     tokio::time::sleep(std::time::Duration::from_secs(2)).await;
///     Ok(())
/// })?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LeaderSelector {
    contender: Contender,
}

impl std::fmt::Debug for LeaderSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderSelector")
            .field("path", &self.path())
            .field("status", &self.status())
            .finish()
    }
}

/// Everything a selector shares with the other recipes: status, events, the current term,
/// `await_leadership`, the participants.
impl Deref for LeaderSelector {
    type Target = Contender;

    fn deref(&self) -> &Contender {
        &self.contender
    }
}

impl LeaderSelector {
    /// Creates a selector on `path` (not started).
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path.
    pub fn new(session: &Session, path: &str, options: SelectorOptions) -> Result<Self, Error> {
        let SelectorOptions { common, auto_requeue } = options;
        let contender = Contender::new(
            session,
            path,
            Lifecycle::Mutex,
            rule::LOCK,
            common,
            false,
            auto_requeue,
        )?;
        Ok(LeaderSelector { contender: contender.named("leader_selector") })
    }

    /// Queues the first attempt. `task` runs once per term; its future is dropped as soon as
    /// the term's [`Leadership::lost`] resolves. When it returns (or is cancelled) the node is
    /// released, then requeued if auto-requeue is on or [`LeaderSelector::requeue`] was called.
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`]; [`Error::Closed`].
    pub fn start<F, Fut>(&self, mut task: F) -> Result<(), Error>
    where
        F: FnMut(Leadership) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        let task: Task = Box::new(move |l| Box::pin(task(l)));
        self.contender.start(Some(task))
    }

    /// Queues another attempt. Returns true if it did: the selector was idle, or it leads and
    /// will requeue after the release. Returns false if an attempt is already queued (or the
    /// selector is not started or closed).
    pub fn requeue(&self) -> bool {
        self.contender.requeue()
    }

    /// Turns auto-requeue on or off.
    pub fn set_auto_requeue(&self, on: bool) {
        self.contender.shared().queue.lock().expect("poisoned").auto_requeue = on;
    }

    /// Ends the current term: `lost()` resolves with `Interrupted`, the task is cancelled and
    /// the node released (then requeued if configured). No effect when not leading.
    pub fn interrupt_leadership(&self) {
        if let Some(l) = self.contender.shared().current() {
            l.inner.lose(LossReason::Interrupted);
        }
    }

    /// Closes the selector with the configured close mode (see
    /// [`LeaderSelector::close_with`]).
    ///
    /// # Errors
    /// As [`LeaderSelector::close_with`].
    ///
    /// # Cancellation safety
    /// As [`LeaderSelector::close_with`].
    pub async fn close(self) -> Result<(), Error> {
        let mode = self.contender.shared().close_mode;
        self.close_with(mode).await
    }

    /// Closes the selector with `mode`: the task is cancelled (`lost()` resolves with
    /// `Closed`), then the node is deleted.
    ///
    /// # Errors
    /// [`Error::Closed`] if already closed; [`Error::ConnectionLoss`] if the delete was not
    /// confirmed within the close timeout.
    ///
    /// # Cancellation safety
    /// The close starts synchronously and completes in the background.
    pub async fn close_with(self, mode: CloseMode) -> Result<(), Error> {
        self.contender.close(mode).await
    }
}
