//! Curator's InterProcessMutex on the shared queue driver: acquire, hold with a fencing token
//! and a loss signal, release.

use std::ops::Deref;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::driver::contender::Contender;
use crate::driver::election_options::MutexOptions;
use crate::driver::rule::{self, Rule};
use crate::loss::Lost;
use crate::session::Session;
use crate::term::control::{confirmed, Lifecycle};
use crate::term::guarded::GuardedWrite;
use crate::term::leadership::Leadership;
use crate::term::token::FencingToken;
use crate::Error;

/// A distributed lock in Curator's `InterProcessMutex` layout
/// (`<path>/_c_<uuid>-lock-<10-digit sequence>`, EPHEMERAL_SEQUENTIAL, the lowest holds, each
/// waiter watches its predecessor), so Java Curator processes and this one share one lock.
///
/// What Curator leaves out is here: each hold carries a fencing token (its node's czxid,
/// strictly increasing per path), a loss signal that fires before the server can expire the
/// session, and writes guarded by the lock node. Re-entrancy is per handle: every
/// [`LockGuard`] of one handle shares the one node, which is deleted when the last is
/// released. A lock node of an earlier session is never taken as ours.
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_recipes::Error> {
/// use rzk_recipes::{lock::{InterProcessMutex, MutexOptions}, session::{Session, SessionConfig}};
///
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
/// let mutex = InterProcessMutex::new(&session, "/locks/orders", MutexOptions::default())?;
/// let guard = mutex.acquire().await?;
/// println!("holding with fencing token {}", guard.token());
/// tokio::select! {
///     reason = guard.lost() => println!("lost the lock: {reason}"),
///     _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
/// }
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct InterProcessMutex {
    contender: Contender,
    holds: Arc<Mutex<Holds>>,
    /// The holds of another lock on the same path: while it holds, our join creates its node
    /// beside that lock's node instead of queueing (a read-write lock's read side, beside its
    /// write side).
    beside: Option<Arc<Mutex<Holds>>>,
}

/// Who in this handle holds or wants the lock.
#[derive(Default)]
struct Holds {
    /// The term the guards hold, while at least one does.
    term: Option<Leadership>,
    /// Guards of `term` not yet released.
    count: u32,
    /// Acquires in progress.
    waiters: u32,
}

impl std::fmt::Debug for InterProcessMutex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterProcessMutex")
            .field("path", &self.path())
            .field("status", &self.status())
            .finish()
    }
}

/// Everything a mutex shares with the other queue recipes: status, events, the participants
/// (holder first), the current term.
impl Deref for InterProcessMutex {
    type Target = Contender;

    fn deref(&self) -> &Contender {
        &self.contender
    }
}

/// How long an acquire waits.
enum Wait {
    Forever,
    Until(Duration),
    /// Until the first decision: holding, or queued behind someone.
    Decision,
}

impl InterProcessMutex {
    /// A mutex on `path` (nothing is created before the first acquire).
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path.
    pub fn new(session: &Session, path: &str, options: MutexOptions) -> Result<Self, Error> {
        Self::with_rule(session, path, rule::LOCK, options)
    }

    /// A lock on `path` whose nodes `rule` names and orders.
    pub(crate) fn with_rule(
        session: &Session,
        path: &str,
        rule: Rule,
        options: MutexOptions,
    ) -> Result<Self, Error> {
        let lifecycle = Lifecycle::Mutex;
        let contender =
            Contender::new(session, path, lifecycle, rule, options.common, false, false)?;
        Ok(InterProcessMutex { contender, holds: Arc::default(), beside: None })
    }

    /// This lock, joining beside `other`'s node whenever `other` holds (a read-write lock's
    /// downgrade: the read is granted in the write's place, with no writer queued between).
    pub(crate) fn beside(mut self, other: &InterProcessMutex) -> Self {
        self.beside = Some(other.holds.clone());
        self
    }

    /// Waits until this handle holds the lock (at once if it already does: re-entrant).
    ///
    /// # Errors
    /// [`Error::Closed`] once closed; the failure of the recipe ([`Error::ForeignNodes`],
    /// `NoAuth`, ...).
    ///
    /// # Cancellation safety
    /// Safe: dropping the future withdraws the attempt; once the session is healthy no node
    /// is left behind, and a hold granted meanwhile is released.
    pub async fn acquire(&self) -> Result<LockGuard, Error> {
        let guard = self.acquire_with(Wait::Forever).await?;
        Ok(guard.expect("an unbounded acquire returns a guard"))
    }

    /// [`InterProcessMutex::acquire`], giving up after `timeout`: `Ok(None)` then, and the
    /// queued node is withdrawn.
    ///
    /// # Errors
    /// As [`InterProcessMutex::acquire`].
    ///
    /// # Cancellation safety
    /// As [`InterProcessMutex::acquire`].
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<LockGuard>, Error> {
        self.acquire_with(Wait::Until(timeout)).await
    }

    /// Takes the lock only if nobody holds or waits for it: one node is queued, and withdrawn
    /// (`Ok(None)`) if it does not sort first.
    ///
    /// # Errors
    /// As [`InterProcessMutex::acquire`].
    ///
    /// # Cancellation safety
    /// As [`InterProcessMutex::acquire`].
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>, Error> {
        self.acquire_with(Wait::Decision).await
    }

    /// True while a guard of this handle holds a valid term (local; no server read; Curator's
    /// `isAcquiredInThisProcess`).
    pub fn is_held(&self) -> bool {
        held_node(&self.holds.lock().expect("poisoned")).is_some()
    }

    /// Closes the mutex: a held term ends (`lost()` resolves with `Closed`), then the node is
    /// deleted.
    ///
    /// # Errors
    /// [`Error::Closed`] if already closed; [`Error::ConnectionLoss`] if the delete was not
    /// confirmed within the close timeout.
    ///
    /// # Cancellation safety
    /// The close starts synchronously and completes in the background.
    pub async fn close(self) -> Result<(), Error> {
        let mode = self.contender.shared().close_mode;
        self.contender.close(mode).await
    }

    async fn acquire_with(&self, wait: Wait) -> Result<Option<LockGuard>, Error> {
        if let Some(guard) = self.reenter() {
            return Ok(Some(guard));
        }
        let waiter = Waiter::new(self);
        let beside = self.beside.as_ref().and_then(|b| held_node(&b.lock().expect("poisoned")));
        let joins_beside = beside.is_some();
        self.contender.set_beside(beside);
        if let Err(Error::AlreadyStarted) = self.contender.start(None) {
            if !self.contender.requeue() && joins_beside {
                // An attempt already queued: it keeps its place.
                self.contender.set_beside(None);
            }
        }
        let leadership = match wait {
            Wait::Forever => Some(self.contender.await_leadership().await?),
            Wait::Until(d) => self.contender.await_leadership_timeout(d).await?,
            Wait::Decision => self.contender.decide_now().await?,
        };
        Ok(leadership.map(|l| waiter.hold(l)))
    }

    /// Another guard on the term this handle holds, if it holds one.
    fn reenter(&self) -> Option<LockGuard> {
        let mut h = self.holds.lock().expect("poisoned");
        let term = h.term.clone().filter(|t| h.count > 0 && t.loss_reason().is_none())?;
        h.count += 1;
        Some(LockGuard::new(self, term))
    }
}

/// The node of a valid hold, if the holds have one.
fn held_node(h: &Holds) -> Option<String> {
    let term = h.term.as_ref().filter(|t| h.count > 0 && t.is_valid())?;
    Some(term.node_path().to_string())
}

/// An acquire in progress. Dropped without [`Waiter::hold`] (a timeout, a cancelled future,
/// an error), the last waiter of a handle that holds nothing withdraws its node.
struct Waiter<'a> {
    mutex: &'a InterProcessMutex,
    armed: bool,
}

impl<'a> Waiter<'a> {
    fn new(mutex: &'a InterProcessMutex) -> Self {
        mutex.holds.lock().expect("poisoned").waiters += 1;
        Waiter { mutex, armed: true }
    }

    /// The term was granted: this waiter becomes a guard.
    fn hold(mut self, term: Leadership) -> LockGuard {
        let mut h = self.mutex.holds.lock().expect("poisoned");
        h.waiters -= 1;
        self.armed = false;
        if h.term.as_ref().map(Leadership::term) != Some(term.term()) {
            // A new term: guards of an earlier one no longer count.
            h.term = Some(term.clone());
            h.count = 0;
        }
        h.count += 1;
        drop(h);
        LockGuard::new(self.mutex, term)
    }
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut h = self.mutex.holds.lock().expect("poisoned");
        h.waiters -= 1;
        if h.waiters == 0 && h.count == 0 {
            drop(h);
            self.mutex.contender.withdraw();
        }
    }
}

/// One hold of an [`InterProcessMutex`]: the fencing token, the loss signal and guarded
/// writes of the term. The lock is released when the last guard of the handle is released
/// or dropped.
pub struct LockGuard {
    holds: Arc<Mutex<Holds>>,
    contender: Contender,
    leadership: Leadership,
    released: bool,
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("node", &self.leadership.node_path())
            .field("token", &self.leadership.token())
            .finish()
    }
}

impl LockGuard {
    fn new(mutex: &InterProcessMutex, leadership: Leadership) -> LockGuard {
        LockGuard {
            holds: mutex.holds.clone(),
            contender: mutex.contender.clone(),
            leadership,
            released: false,
        }
    }

    /// The fencing token: the czxid of the lock node, strictly increasing per lock path.
    pub fn token(&self) -> FencingToken {
        self.leadership.token()
    }

    /// Resolves as soon as the lock may be lost: before the server can expire the session,
    /// when the lock node is deleted, or on release.
    ///
    /// # Cancellation safety
    /// Safe; it may be awaited from many tasks, and many times.
    pub fn lost(&self) -> Lost {
        self.leadership.lost()
    }

    /// True while the hold is valid (loss unresolved, lease deadline ahead).
    pub fn is_valid(&self) -> bool {
        self.leadership.is_valid()
    }

    /// A multi that applies only while the lock node exists.
    ///
    /// # Errors
    /// [`Error::NotLeader`] at once if the hold is not valid.
    pub fn guarded(&self) -> Result<GuardedWrite, Error> {
        self.leadership.guarded()
    }

    /// The term behind the hold (node path, session, deadline, ...).
    pub fn leadership(&self) -> &Leadership {
        &self.leadership
    }

    /// Releases this hold; the last of the handle deletes the lock node and returns once the
    /// delete is acknowledged (or after the close timeout).
    ///
    /// # Errors
    /// [`Error::ConnectionLoss`] if the delete was not confirmed in time (it keeps being
    /// retried while the session lives).
    ///
    /// # Cancellation safety
    /// The release happens synchronously; dropping the future only stops waiting for the
    /// delete's acknowledgement.
    pub async fn release(mut self) -> Result<(), Error> {
        self.released = true;
        let Some(done) = self.release_now() else { return Ok(()) };
        confirmed(done, self.contender.shared().close_timeout()).await
    }

    /// Counts this hold out; the last one of its term resigns the term.
    fn release_now(&self) -> Option<tokio::sync::oneshot::Receiver<Result<(), Error>>> {
        let mut h = self.holds.lock().expect("poisoned");
        if h.term.as_ref().map(Leadership::term) != Some(self.leadership.term()) {
            return None; // A term already over; the driver released it.
        }
        h.count -= 1;
        if h.count > 0 {
            return None;
        }
        h.term = None;
        let waiting = h.waiters > 0;
        drop(h);
        let done = Some(self.leadership.resign_now());
        if waiting {
            // An acquire of this handle waits: it queues again after the release.
            self.contender.requeue();
        }
        done
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if !self.released {
            self.released = true;
            let _ = self.release_now();
        }
    }
}
