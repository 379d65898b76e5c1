//! Curator's InterProcessSemaphoreV2: up to N leases under `<path>/leases`, granted one at a
//! time under the InterProcessMutex at `<path>/locks`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rzk_client::{Client, CreateMode, EventType};

use crate::driver::election_options::{close_timeout_for, MutexOptions};
use crate::lock::lease_reaper::{Reaper, Target};
use crate::lock::mutex::{InterProcessMutex, LockGuard};
use crate::lock::{LEASES, LOCKS};
use crate::loss::LossReason;
use crate::naming;
use crate::session::acl_provider::NodeAcls;
use crate::session::{sleep_until, Session};
use crate::telemetry::{self, Labels};
use crate::term::control::{CloseFlags, Lifecycle};
use crate::term::guard::{guard, Fence, Term};
use crate::term::issuer::{HeldNode, Issuer};
use crate::term::leadership::Leadership;
use crate::zk_error::{classify, Class, ZkError};
use crate::Error;

/// Options of an [`InterProcessSemaphore`]: the mutex's. The id is each lease node's data
/// (this host's address by default, as Curator writes it); the policy, stop budget and ACLs
/// apply to the leases and to the internal mutex alike.
pub type SemaphoreOptions = MutexOptions;

/// Pause before another attempt after one that could not finish (a connection loss, the
/// internal mutex lost, our lease node gone with its session).
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// A counting semaphore in Curator's `InterProcessSemaphoreV2` layout, so Java Curator
/// processes and this one share one semaphore: an acquirer takes the internal
/// [`InterProcessMutex`] at `<path>/locks`, creates
/// `<path>/leases/_c_<uuid>-lease-<10-digit sequence>` (EPHEMERAL_SEQUENTIAL), and holds a
/// lease once at most `max_leases` lease nodes exist; until then it waits, holding the mutex,
/// for the leases to change.
///
/// What Curator leaves out is here: each [`SemaphoreLease`] carries a fencing token (its node's czxid),
/// a loss signal that fires before the server can expire the session, and writes guarded by
/// the lease node. No lease node is left behind: a lease lost to a suspension is deleted once
/// reconnected, one of a lost session went with it, and a cancelled or timed-out acquire's
/// node (or a node whose create reply was lost, found by its protected UUID) is deleted while
/// the session lives. The lease parents are containers, so the server reaps them when empty.
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_recipes::Error> {
/// use rzk_recipes::{lock::{InterProcessSemaphore, SemaphoreOptions}, session::{Session, SessionConfig}};
///
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
/// let semaphore =
///     InterProcessSemaphore::new(&session, "/semaphores/workers", 3, SemaphoreOptions::default())?;
/// let lease = semaphore.acquire().await?;
/// println!("one of 3 leases, fencing token {}", lease.token());
/// tokio::select! {
///     reason = lease.lost() => println!("lost the lease: {reason}"),
///     _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
/// }
/// lease.release().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct InterProcessSemaphore {
    inner: Arc<SemaphoreState>,
}

struct SemaphoreState {
    session: Session,
    /// The ACL of each node it creates.
    acls: NodeAcls,
    path: String,
    leases: String,
    max_leases: u32,
    options: SemaphoreOptions,
    mutex: InterProcessMutex,
    /// One acquire of this handle at a time: the internal mutex is re-entrant per handle, so
    /// two acquires of one handle would otherwise both pass it.
    local: tokio::sync::Mutex<()>,
    reaper: Reaper,
    terms: AtomicU64,
    /// The labels of the leases' terms and of the lease children's watches and reads.
    telemetry: Labels,
}

impl std::fmt::Debug for InterProcessSemaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterProcessSemaphore")
            .field("path", &self.inner.path)
            .field("max_leases", &self.inner.max_leases)
            .finish()
    }
}

/// How an acquire waits.
#[derive(Clone, Copy)]
enum Wait {
    Forever,
    Until(Instant),
    /// Not at all: a lease now, or none.
    Never,
}

/// The end of one attempt under the internal mutex.
enum Attempt {
    Granted(SemaphoreLease),
    /// No lease free in time.
    Full,
    /// Start again (the node is handed to the reaper).
    Retry,
}

impl InterProcessSemaphore {
    /// A semaphore of `max_leases` leases on `path` (nothing is created before the first
    /// acquire).
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path or `max_leases == 0`.
    pub fn new(
        session: &Session,
        path: &str,
        max_leases: u32,
        options: SemaphoreOptions,
    ) -> Result<Self, Error> {
        naming::validate_path(path)?;
        if max_leases == 0 {
            return Err(Error::BadArguments("a semaphore needs at least one lease".into()));
        }
        let locks = naming::child_path(path, LOCKS);
        let mutex = InterProcessMutex::new(session, &locks, options.clone())?;
        let leases = naming::child_path(path, LEASES);
        let inner = SemaphoreState {
            acls: NodeAcls::new(session, options.acls),
            session: session.clone(),
            path: path.to_string(),
            reaper: Reaper::spawn(session, leases.clone()),
            leases,
            max_leases,
            options,
            mutex,
            local: tokio::sync::Mutex::new(()),
            terms: AtomicU64::new(0),
            telemetry: Labels::new("semaphore", path),
        };
        Ok(InterProcessSemaphore { inner: Arc::new(inner) })
    }

    /// The semaphore's path.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// The number of leases.
    pub fn max_leases(&self) -> u32 {
        self.inner.max_leases
    }

    /// Waits until this handle holds a lease.
    ///
    /// # Errors
    /// [`Error::Closed`] once the session is closed; a fatal ZooKeeper error (`NoAuth`, ...)
    /// or the internal mutex's failure ([`Error::ForeignNodes`]).
    ///
    /// # Cancellation safety
    /// Safe: dropping the future withdraws the attempt; once the session is healthy no node
    /// of it is left, in `locks` or in `leases`.
    pub async fn acquire(&self) -> Result<SemaphoreLease, Error> {
        let lease = self.acquire_with(Wait::Forever).await?;
        Ok(lease.expect("an unbounded acquire returns a lease"))
    }

    /// [`InterProcessSemaphore::acquire`], giving up after `timeout`: `Ok(None)` then, once
    /// the attempt's lease node is deleted.
    ///
    /// # Errors
    /// As [`InterProcessSemaphore::acquire`].
    ///
    /// # Cancellation safety
    /// As [`InterProcessSemaphore::acquire`].
    pub async fn acquire_timeout(
        &self,
        timeout: Duration,
    ) -> Result<Option<SemaphoreLease>, Error> {
        self.acquire_with(Wait::Until(crate::clock::now() + timeout)).await
    }

    /// Takes a lease only if one is free now and nobody else of any process is acquiring:
    /// `Ok(None)` otherwise, once the attempt's nodes are deleted.
    ///
    /// # Errors
    /// As [`InterProcessSemaphore::acquire`].
    ///
    /// # Cancellation safety
    /// As [`InterProcessSemaphore::acquire`].
    pub async fn try_acquire(&self) -> Result<Option<SemaphoreLease>, Error> {
        self.acquire_with(Wait::Never).await
    }

    /// Waits until this handle holds `n` leases, taken one at a time as Curator does (two
    /// processes each holding some while waiting for more can wait for ever, as in Curator).
    ///
    /// # Errors
    /// [`Error::BadArguments`] unless `1 <= n <= max_leases`; otherwise as
    /// [`InterProcessSemaphore::acquire`], and the leases taken so far are released.
    ///
    /// # Cancellation safety
    /// Safe: the leases taken so far are released, and the pending attempt withdrawn.
    pub async fn acquire_many(&self, n: u32) -> Result<Vec<SemaphoreLease>, Error> {
        if n == 0 || n > self.inner.max_leases {
            let max = self.inner.max_leases;
            return Err(Error::BadArguments(format!("{n} leases of a semaphore of {max}")));
        }
        let mut leases = Vec::with_capacity(n as usize);
        for _ in 0..n {
            leases.push(self.acquire().await?);
        }
        Ok(leases)
    }

    async fn acquire_with(&self, wait: Wait) -> Result<Option<SemaphoreLease>, Error> {
        let inner = &self.inner;
        let _local = match wait {
            Wait::Forever => inner.local.lock().await,
            Wait::Until(d) => match tokio::time::timeout_at(d.into(), inner.local.lock()).await {
                Ok(g) => g,
                Err(_) => return Ok(None),
            },
            Wait::Never => match inner.local.try_lock() {
                Ok(g) => g,
                Err(_) => return Ok(None),
            },
        };
        loop {
            let lock = match wait {
                Wait::Forever => Some(inner.mutex.acquire().await?),
                Wait::Until(d) => {
                    let left = d.saturating_duration_since(crate::clock::now());
                    inner.mutex.acquire_timeout(left).await?
                }
                Wait::Never => inner.mutex.try_acquire().await?,
            };
            let Some(lock) = lock else { return Ok(None) };
            match self.attempt(&lock, wait).await? {
                // The mutex is released in the background: nothing may be awaited between
                // the grant and the return, or a cancellation there would lose the lease.
                Attempt::Granted(lease) => return Ok(Some(lease)),
                Attempt::Full => return Ok(None),
                Attempt::Retry => {
                    drop(lock);
                    if let Wait::Until(d) = wait {
                        if crate::clock::now() + RETRY_PAUSE >= d {
                            return Ok(None);
                        }
                    }
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
            }
        }
    }

    /// One attempt while holding the internal mutex: create our lease node, then wait until
    /// at most `max_leases` lease nodes exist (Curator's rule: ours is the newest, since
    /// every creator holds the mutex).
    async fn attempt(&self, lock: &LockGuard, wait: Wait) -> Result<Attempt, Error> {
        let inner = &self.inner;
        let generation = lock.leadership().generation();
        let Some(client) = client_for(&inner.session, generation) else {
            return Ok(Attempt::Retry);
        };
        let uuid = naming::new_uuid().hyphenated().to_string();
        let mut node = AttemptNode::new(&inner.reaper, generation, Target::Uuid(uuid.clone()));
        let Some((path, czxid)) = self.create(&client, generation, &uuid).await? else {
            return Ok(Attempt::Retry);
        };
        node.target = Target::Node(path.clone());
        let name = naming::name_of(&path).to_string();
        loop {
            let sent = crate::clock::now();
            let (children, watcher) = match client.list_and_watch_children(&inner.leases).await {
                Ok(r) => r,
                Err(e) => return fatal_or_retry(e, &inner.leases),
            };
            inner.session.shared().ack(generation, sent);
            telemetry::evaluation(&inner.telemetry);
            if !children.contains(&name) || !lock.is_valid() {
                // Our node went with its session, or the mutex may be someone else's now.
                return Ok(Attempt::Retry);
            }
            if children.len() <= inner.max_leases as usize {
                return Ok(Attempt::Granted(self.grant(node, &client, path, czxid, generation)));
            }
            let deadline = match wait {
                Wait::Never => return node.abandon(self).await,
                Wait::Until(d) => Some(d),
                Wait::Forever => None,
            };
            // The lost lock first: a notification that arrives with it must not be read
            // under a lock that no longer guards the lease count.
            tokio::select! {
                biased;
                _ = lock.lost() => return Ok(Attempt::Retry),
                _ = watcher.changed() => telemetry::watch_notification(&inner.telemetry),
                _ = sleep_until(deadline) => return node.abandon(self).await,
            }
        }
    }

    /// Creates `leases/_c_<uuid>-lease-` (and the lease parent if missing). `None`: the
    /// outcome is unknown or the session is over; the caller's pending node covers it.
    async fn create(
        &self,
        client: &Client,
        generation: u64,
        uuid: &str,
    ) -> Result<Option<(String, i64)>, Error> {
        let inner = &self.inner;
        let prefix = naming::create_path(&inner.leases, uuid, naming::LEASE);
        let acl = inner.acls.at(&prefix);
        let options = CreateMode::EphemeralSequential.with_acls(acl.acls());
        let data = inner.options.id.as_bytes();
        loop {
            let sent = crate::clock::now();
            match client.create(&prefix, data, &options).await {
                Ok((stat, seq)) => {
                    inner.session.shared().ack(generation, sent);
                    return Ok(Some((format!("{prefix}{seq}"), stat.czxid)));
                }
                Err(ZkError::NoNode) => {
                    // Containers, so that an unused semaphore does not stay behind.
                    let containers = CreateMode::Container;
                    match crate::session::ops::mkdirs(
                        client,
                        &inner.leases,
                        containers,
                        &inner.acls,
                    )
                    .await
                    {
                        Ok(()) | Err(ZkError::NodeExists) => {}
                        Err(e) => return fatal_or_retry(e, &inner.leases).map(|_| None),
                    }
                }
                Err(e) => return fatal_or_retry(e, &prefix).map(|_| None),
            }
        }
    }

    /// Turns our node into a lease: a term of its own, resigned to the reaper, guarded by the
    /// session's lease and a watch on the node.
    fn grant(
        &self,
        mut node: AttemptNode<'_>,
        client: &Client,
        path: String,
        czxid: i64,
        generation: u64,
    ) -> SemaphoreLease {
        let inner = &self.inner;
        node.armed = false;
        let number = inner.terms.fetch_add(1, Ordering::Relaxed) + 1;
        inner.reaper.hold(number, &path, generation);
        let issuer = Issuer {
            participant_id: inner.options.id.clone(),
            session: inner.session.shared().clone(),
            cmd: inner.reaper.commands(),
            lifecycle: Lifecycle::Mutex,
            close: Arc::new(CloseFlags::default()),
            telemetry: inner.telemetry.clone(),
        };
        let held = HeldNode {
            fence: Fence::node(&path),
            path,
            czxid,
            session_id: client.session_id(),
            generation,
        };
        let term = issuer.issue(held, number, false);
        let suspensions = inner.session.shared().snap.borrow().suspensions;
        let budget = inner.options.stop_budget_for(inner.session.negotiated_timeout());
        let policy = inner.options.policy;
        let (t, client) = (term.clone(), client.clone());
        tokio::spawn(async move {
            tokio::select! {
                biased;
                _ = guard(t.clone(), policy, budget, suspensions) => {}
                _ = watch_node(&t, &client) => {}
            }
            // Lost without a release (a suspension, the node deleted): the node must not
            // keep counting against the leases.
            if t.loss().map(|l| l.0) != Some(LossReason::Resigned) {
                // Nobody waits for this answer: the reaper deletes the node either way.
                drop(Leadership { inner: t }.resign_now());
            }
        });
        let close_timeout = inner.close_timeout();
        SemaphoreLease { leadership: Leadership { inner: term }, close_timeout, released: false }
    }
}

impl SemaphoreState {
    /// How long a release or an abandoned attempt waits for its delete (default `T`).
    fn close_timeout(&self) -> Duration {
        close_timeout_for(self.options.close_timeout, self.session.negotiated_timeout())
    }
}

/// The client of session generation `generation`, while it is current.
fn client_for(session: &Session, generation: u64) -> Option<Client> {
    let s = session.shared().snap.borrow();
    (s.generation == generation).then(|| s.client.clone()).flatten()
}

/// A fatal error ends the acquire; any other means the attempt starts again.
fn fatal_or_retry(e: ZkError, path: &str) -> Result<Attempt, Error> {
    match classify(&e) {
        Class::Fatal => Err(Error::from_zk(e, path)),
        _ => Ok(Attempt::Retry),
    }
}

/// Resolves the term's loss signal with `NodeDeleted` if its node is deleted; pends otherwise
/// (the session's own troubles are the term guard's).
async fn watch_node(term: &Term, client: &Client) {
    loop {
        match client.check_and_watch_stat(&term.node_path).await {
            Ok((None, _)) => break,
            Ok((Some(_), watcher)) => match watcher.changed().await.event_type {
                EventType::NodeDeleted => break,
                EventType::Session => std::future::pending::<()>().await,
                _ => {}
            },
            Err(_) => std::future::pending::<()>().await,
        }
    }
    term.lose(LossReason::NodeDeleted);
}

/// The node of an attempt in progress. Dropped armed (an error, a retry, a cancelled
/// future), it is handed to the reaper.
struct AttemptNode<'a> {
    reaper: &'a Reaper,
    generation: u64,
    target: Target,
    armed: bool,
}

impl<'a> AttemptNode<'a> {
    fn new(reaper: &'a Reaper, generation: u64, target: Target) -> Self {
        AttemptNode { reaper, generation, target, armed: true }
    }

    /// Gives the attempt up and waits (at most the close timeout) until its node is deleted.
    async fn abandon(mut self, sem: &InterProcessSemaphore) -> Result<Attempt, Error> {
        self.armed = false;
        let done = self.reaper.abandon(self.generation, self.target.clone());
        match tokio::time::timeout(sem.inner.close_timeout(), done).await {
            Ok(Ok(Err(e))) => Err(e),
            _ => Ok(Attempt::Full),
        }
    }
}

impl Drop for AttemptNode<'_> {
    fn drop(&mut self) {
        if self.armed {
            // Nobody waits for the answer.
            drop(self.reaper.abandon(self.generation, self.target.clone()));
        }
    }
}

/// One lease of an [`InterProcessSemaphore`]: the fencing token, the loss signal and guarded
/// writes of its node, through [`Leadership`], which it dereferences to. Released by
/// [`SemaphoreLease::release`] or on drop.
pub struct SemaphoreLease {
    leadership: Leadership,
    close_timeout: Duration,
    released: bool,
}

impl std::fmt::Debug for SemaphoreLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemaphoreLease")
            .field("node", &self.leadership.node_path())
            .field("token", &self.leadership.token())
            .finish()
    }
}

/// The lease is a term of its own: [`Leadership::token`] (the lease node's czxid),
/// [`Leadership::lost`] (resolves before the server can expire the session, when the node is
/// deleted, or on release; a lease lost while its session lives has its node deleted at once),
/// [`Leadership::is_valid`], [`Leadership::guarded`] (a multi that applies only while the
/// lease node exists), the node path and the deadline.
impl std::ops::Deref for SemaphoreLease {
    type Target = Leadership;

    fn deref(&self) -> &Leadership {
        &self.leadership
    }
}

impl SemaphoreLease {
    /// Releases the lease: [`Leadership::lost`] resolves with `Resigned`, then the node is deleted;
    /// returns once the delete is acknowledged.
    ///
    /// # Errors
    /// [`Error::ConnectionLoss`] if the delete was not confirmed within the close timeout (it
    /// keeps being retried while the session lives); a fatal error of the delete.
    ///
    /// # Cancellation safety
    /// The release happens synchronously; dropping the future only stops waiting for the
    /// delete's acknowledgement.
    pub async fn release(mut self) -> Result<(), Error> {
        self.released = true;
        self.leadership.resign_within(self.close_timeout).await
    }
}

impl Drop for SemaphoreLease {
    fn drop(&mut self) {
        if !self.released {
            drop(self.leadership.resign_now());
        }
    }
}
