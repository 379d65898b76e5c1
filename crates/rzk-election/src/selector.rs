//! Curator's LeaderSelector on the InterProcessMutex layout (docs/election.md §1.4, §2.10).

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::contender::{BoxError, Command, Common, Handle, Kind, Task};
use crate::event::{Events, Metrics, Participant, Participants, Status};
use crate::leadership::{Leadership, LossReason};
use crate::options::{default_selector_id, CloseMode, SelectorOptions};
use crate::session::Session;
use crate::Error;

/// A LeaderSelector: an application task runs while this participant leads, and is cancelled
/// (its future dropped) the moment leadership may be lost. The node is released when the task
/// ends, then, with auto-requeue, a new node is queued at the tail: strict round-robin.
///
/// Nodes follow Curator's InterProcessMutex layout (`_c_<uuid>-lock-<10-digit sequence>`).
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_election::Error> {
/// use rzk_election::{LeaderSelector, SelectorOptions, Session, SessionConfig};
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
    h: Arc<Handle>,
}

impl std::fmt::Debug for LeaderSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderSelector")
            .field("path", &self.h.shared.path)
            .field("status", &self.status())
            .finish()
    }
}

impl LeaderSelector {
    /// Creates a selector on `path` (not started).
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path.
    pub fn new(session: &Session, path: &str, options: SelectorOptions) -> Result<Self, Error> {
        let common = Common {
            id: options.id.unwrap_or_else(default_selector_id),
            close_mode: CloseMode::Silent,
            policy: options.policy,
            strategy: options.strategy,
            acls: options.acls,
            stop_budget: options.stop_budget,
            close_timeout: options.close_timeout,
            rejoin_after_step_down: false,
            auto_requeue: options.auto_requeue,
        };
        Ok(LeaderSelector { h: Arc::new(Handle::new(session, path, Kind::Selector, common)?) })
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
        self.h.start(Some(task))
    }

    /// Queues another attempt. Returns true if it did: the selector was idle, or it leads and
    /// will requeue after the release. Returns false if an attempt is already queued (or the
    /// selector is not started or closed).
    pub fn requeue(&self) -> bool {
        let s = &self.h.shared;
        if !s.started.load(Ordering::Acquire) || s.closed.load(Ordering::Acquire) {
            return false;
        }
        let mut q = s.queue.lock().expect("poisoned");
        if q.leading {
            if q.auto_requeue || q.requeue_after {
                return false;
            }
            q.requeue_after = true;
            return true;
        }
        if q.queued {
            return false;
        }
        q.queued = true;
        drop(q);
        let _ = self.h.cmd.send(Command::Wake);
        true
    }

    /// Turns auto-requeue on or off.
    pub fn set_auto_requeue(&self, on: bool) {
        self.h.shared.queue.lock().expect("poisoned").auto_requeue = on;
    }

    /// Ends the current term: `lost()` resolves with `Interrupted`, the task is cancelled and
    /// the node released (then requeued if configured). No effect when not leading.
    pub fn interrupt_leadership(&self) {
        if let Some(l) = self.h.shared.current() {
            l.inner.lose(LossReason::Interrupted);
        }
    }

    /// True while a term is valid. Local; no server read.
    pub fn has_leadership(&self) -> bool {
        self.h.has_leadership()
    }

    /// The current term, unless it has ended.
    pub fn current(&self) -> Option<Leadership> {
        self.h.live_term()
    }

    /// Our node's path, while queued or leading.
    pub fn our_path(&self) -> Option<String> {
        self.h.our_path()
    }

    /// The election path.
    pub fn path(&self) -> &str {
        self.h.path()
    }

    /// Where the selector stands.
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

    /// Waits for the next term (or returns the current one).
    ///
    /// # Errors
    /// [`Error::Closed`] once closed; the failure of a failed selector.
    ///
    /// # Cancellation safety
    /// Safe: it only waits on published state.
    pub async fn await_leadership(&self) -> Result<Leadership, Error> {
        self.h.await_leadership().await
    }

    /// The participant whose node sorts first, read from the server.
    ///
    /// # Errors
    /// [`Error::ForeignNodes`] when ambiguous; `ConnectionLoss`, `SessionExpired`.
    ///
    /// # Cancellation safety
    /// Safe: read-only.
    pub async fn leader(&self) -> Result<Option<Participant>, Error> {
        self.h.leader().await
    }

    /// Every participant in node order, and foreign children, read from the server.
    ///
    /// # Errors
    /// `ConnectionLoss`, `SessionExpired`, other ZooKeeper errors.
    ///
    /// # Cancellation safety
    /// Safe: read-only.
    pub async fn participants(&self) -> Result<Participants, Error> {
        self.h.participants().await
    }

    /// Closes the selector: the task is cancelled (`lost()` resolves with `Closed`), then the
    /// node is deleted.
    ///
    /// # Errors
    /// [`Error::Closed`] if already closed; [`Error::ConnectionLoss`] if the delete was not
    /// confirmed within the close timeout.
    ///
    /// # Cancellation safety
    /// The close starts synchronously and completes in the background.
    pub async fn close(self) -> Result<(), Error> {
        self.h.close(CloseMode::Silent).await
    }
}
