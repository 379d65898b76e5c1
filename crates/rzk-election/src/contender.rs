//! The driver shared by LeaderLatch and LeaderSelector (docs/election.md §2.9, §2.10).
//!
//! One task per recipe owns all mutable state and every `zookeeper-client` future; handles talk
//! to it over a channel and read its published state (status, current term, metrics).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use zookeeper_client::{Acls, Client, CreateMode, EventType, OneshotWatcher, SessionId};

use crate::decide::{decide, Decision};
use crate::event::{
    ElectionEvent, Events, JoinInfo, MetricCells, Metrics, Participant, Participants,
};
use crate::leadership::{guard, FencingToken, Leadership, LossReason, Term};
use crate::naming;
use crate::options::{CloseMode, ConnectionPolicy, WatchStrategy};
use crate::session::{Session, Snapshot};
use crate::{Error, Status};

/// The error type a LeaderSelector task may return.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

pub(crate) type TaskFuture = Pin<Box<dyn Future<Output = Result<(), BoxError>> + Send>>;
pub(crate) type Task = Box<dyn FnMut(Leadership) -> TaskFuture + Send>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Latch,
    Selector,
}

pub(crate) enum Command {
    Close { done: Option<oneshot::Sender<Result<(), Error>>> },
    Resign { term: u64, done: oneshot::Sender<Result<(), Error>> },
    Wake,
}

/// Selector queueing state (docs/election.md §2.10).
#[derive(Debug, Default)]
pub(crate) struct Queue {
    pub auto_requeue: bool,
    /// An attempt is active (joining, waiting or leading).
    pub queued: bool,
    /// Leading, and `requeue()` asked for another attempt after the release.
    pub requeue_after: bool,
    pub leading: bool,
}

/// State shared between the driver and the handles.
pub(crate) struct RecipeShared {
    pub kind: Kind,
    pub path: String,
    pub lock: &'static str,
    pub session: Session,
    pub status: watch::Sender<Status>,
    pub events: broadcast::Sender<ElectionEvent>,
    pub metrics: MetricCells,
    pub current: Mutex<Option<Leadership>>,
    pub our_path: Mutex<Option<String>>,
    pub last_path_is_leader: Mutex<Option<String>>,
    pub joined: watch::Sender<Option<JoinInfo>>,
    pub queue: Mutex<Queue>,
    pub close_mode: CloseMode,
    pub close_timeout: Option<Duration>,
    /// Set when a close (or a latch resign) begins; a second close is an error.
    pub closed: AtomicBool,
    /// The close in progress is silent (no `Lost` event).
    pub silent: AtomicBool,
    pub started: AtomicBool,
}

impl RecipeShared {
    pub fn emit(&self, e: ElectionEvent) {
        let _ = self.events.send(e);
    }

    pub fn set_status(&self, s: Status) {
        self.status.send_if_modified(|cur| {
            if *cur != s && !cur.is_terminal() {
                *cur = s;
                true
            } else {
                false
            }
        });
    }

    pub fn current(&self) -> Option<Leadership> {
        self.current.lock().expect("poisoned").clone()
    }

    pub fn close_timeout(&self) -> Duration {
        self.close_timeout.unwrap_or_else(|| self.session.negotiated_timeout())
    }
}

/// What a recipe handle holds. Dropping the last one closes the recipe (Silent).
pub(crate) struct Handle {
    pub shared: Arc<RecipeShared>,
    pub cmd: mpsc::UnboundedSender<Command>,
    pub driver: Mutex<Option<DriverSeed>>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        if !self.shared.closed.swap(true, Ordering::AcqRel) {
            self.shared.silent.store(true, Ordering::Release);
            if let Some(l) = self.shared.current() {
                l.inner.lose(LossReason::Closed);
            }
            let _ = self.cmd.send(Command::Close { done: None });
        }
    }
}

/// Everything the driver needs, kept in the handle until `start`.
pub(crate) struct DriverSeed {
    pub cmd_rx: mpsc::UnboundedReceiver<Command>,
    pub id: String,
    pub policy: ConnectionPolicy,
    pub strategy: WatchStrategy,
    pub acls: Acls<'static>,
    pub stop_budget: Option<Duration>,
    pub rejoin_after_step_down: bool,
}

pub(crate) struct Common {
    pub id: String,
    pub close_mode: CloseMode,
    pub policy: ConnectionPolicy,
    pub strategy: WatchStrategy,
    pub acls: Acls<'static>,
    pub stop_budget: Option<Duration>,
    pub close_timeout: Option<Duration>,
    pub rejoin_after_step_down: bool,
    pub auto_requeue: bool,
}

impl Handle {
    pub fn new(session: &Session, path: &str, kind: Kind, c: Common) -> Result<Handle, Error> {
        naming::validate_path(path)?;
        let lock = match kind {
            Kind::Latch => naming::LATCH,
            Kind::Selector => naming::LOCK,
        };
        let (cmd, cmd_rx) = mpsc::unbounded_channel();
        let (status, _) = watch::channel(Status::Latent);
        let (events, _) = broadcast::channel(1024);
        let (joined, _) = watch::channel(None);
        let shared = Arc::new(RecipeShared {
            kind,
            path: path.to_string(),
            lock,
            session: session.clone(),
            status,
            events,
            metrics: MetricCells::default(),
            current: Mutex::new(None),
            our_path: Mutex::new(None),
            last_path_is_leader: Mutex::new(None),
            joined,
            queue: Mutex::new(Queue { auto_requeue: c.auto_requeue, ..Queue::default() }),
            close_mode: c.close_mode,
            close_timeout: c.close_timeout,
            closed: AtomicBool::new(false),
            silent: AtomicBool::new(false),
            started: AtomicBool::new(false),
        });
        let seed = DriverSeed {
            cmd_rx,
            id: c.id,
            policy: c.policy,
            strategy: c.strategy,
            acls: c.acls,
            stop_budget: c.stop_budget,
            rejoin_after_step_down: c.rejoin_after_step_down,
        };
        Ok(Handle { shared, cmd, driver: Mutex::new(Some(seed)) })
    }

    /// Spawns the driver.
    pub fn start(&self, task: Option<Task>) -> Result<(), Error> {
        if self.shared.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if self.shared.started.swap(true, Ordering::AcqRel) {
            return Err(Error::AlreadyStarted);
        }
        let seed = self.driver.lock().expect("poisoned").take().ok_or(Error::AlreadyStarted)?;
        if self.shared.kind == Kind::Selector {
            self.shared.queue.lock().expect("poisoned").queued = true;
        }
        let driver = Driver::new(self.shared.clone(), seed, self.cmd.clone(), task);
        tokio::spawn(forward_connection_events(Arc::downgrade(&self.shared)));
        tokio::spawn(driver.run());
        Ok(())
    }

    /// Waits until our node exists (or the recipe ends).
    pub async fn joined(&self) -> Result<JoinInfo, Error> {
        let mut joined = self.shared.joined.subscribe();
        let mut status = self.shared.status.subscribe();
        loop {
            if let Some(j) = joined.borrow_and_update().clone() {
                return Ok(j);
            }
            match status.borrow_and_update().clone() {
                Status::Failed(e) => return Err(e),
                Status::Closed => return Err(Error::Closed),
                _ => {}
            }
            tokio::select! {
                r = joined.changed() => if r.is_err() { return Err(Error::Closed) },
                r = status.changed() => if r.is_err() { return Err(Error::Closed) },
            }
        }
    }

    /// Waits until a valid term exists.
    pub async fn await_leadership(&self) -> Result<Leadership, Error> {
        let mut status = self.shared.status.subscribe();
        loop {
            match status.borrow_and_update().clone() {
                Status::Failed(e) => return Err(e),
                Status::Closed => return Err(Error::Closed),
                Status::Latent if !self.shared.started.load(Ordering::Acquire) => {
                    return Err(Error::Closed)
                }
                _ => {}
            }
            if let Some(l) = self.shared.current().filter(|l| l.is_valid()) {
                return Ok(l);
            }
            let valid_until = self.shared.current().filter(|l| l.loss_reason().is_none());
            tokio::select! {
                r = status.changed() => if r.is_err() { return Err(Error::Closed) },
                // A published term that is not valid yet: re-check shortly.
                _ = tokio::time::sleep(Duration::from_millis(20)), if valid_until.is_some() => {}
            }
        }
    }

    /// Closes the recipe.
    pub async fn close(&self, mode: CloseMode) -> Result<(), Error> {
        if self.shared.closed.swap(true, Ordering::AcqRel) {
            return Err(Error::Closed);
        }
        self.shared.silent.store(mode == CloseMode::Silent, Ordering::Release);
        if let Some(l) = self.shared.current() {
            l.inner.lose(LossReason::Closed);
        }
        let (tx, rx) = oneshot::channel();
        if self.cmd.send(Command::Close { done: Some(tx) }).is_err() {
            return Ok(());
        }
        if !self.shared.started.load(Ordering::Acquire) {
            // Never started: nothing to delete; the driver seed is dropped with the handle.
            self.shared.set_status(Status::Closed);
            return Ok(());
        }
        match tokio::time::timeout(self.shared.close_timeout(), rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Ok(()),
            Err(_) => Err(Error::ConnectionLoss),
        }
    }

    pub fn events(&self) -> Events {
        Events::new(self.shared.events.subscribe())
    }

    // The read-only accessors both recipes expose, decided here once.
    pub fn has_leadership(&self) -> bool {
        self.shared.current().is_some_and(|l| l.is_valid())
    }

    pub fn live_term(&self) -> Option<Leadership> {
        self.shared.current().filter(|l| l.loss_reason().is_none())
    }

    pub fn our_path(&self) -> Option<String> {
        self.shared.our_path.lock().expect("poisoned").clone()
    }

    pub fn path(&self) -> &str {
        &self.shared.path
    }

    pub fn status(&self) -> Status {
        self.shared.status.borrow().clone()
    }

    pub fn metrics(&self) -> Metrics {
        self.shared.metrics.snapshot()
    }

    pub async fn participants(&self) -> Result<Participants, Error> {
        read_participants(&self.shared.session, &self.shared.path, self.shared.lock).await
    }

    pub async fn leader(&self) -> Result<Option<Participant>, Error> {
        let p = self.participants().await?;
        if !p.foreign.is_empty() {
            return Err(Error::ForeignNodes { path: self.shared.path.clone(), names: p.foreign });
        }
        Ok(p.list.into_iter().next())
    }
}

/// Reads the participants: one getChildren and one multi-read of every node's data.
pub(crate) async fn read_participants(
    session: &Session,
    path: &str,
    lock: &str,
) -> Result<Participants, Error> {
    let client = session.client()?;
    let children = match client.list_children(path).await {
        Ok(c) => c,
        Err(zookeeper_client::Error::NoNode) => return Ok(Participants::default()),
        Err(e) => return Err(Error::from_zk(e, path)),
    };
    let (sorted, foreign) = naming::sort_children(&children, lock);
    let mut list = Vec::with_capacity(sorted.len());
    if !sorted.is_empty() {
        let mut reader = client.new_multi_reader();
        for name in &sorted {
            reader.add_get_data(&naming::child_path(path, name)).map_err(Error::from)?;
        }
        let results = reader.commit().await.map_err(|e| Error::from_zk(e, path))?;
        for (name, r) in sorted.iter().zip(results) {
            if let zookeeper_client::MultiReadResult::Data { data, stat } = r {
                list.push(Participant {
                    id: String::from_utf8_lossy(&data).into_owned(),
                    node: naming::child_path(path, name),
                    token: FencingToken(stat.czxid),
                    session: SessionId(stat.ephemeral_owner),
                    is_leader: list.is_empty(),
                });
            }
        }
    }
    Ok(Participants { list, foreign })
}

async fn forward_connection_events(shared: Weak<RecipeShared>) {
    let Some(s) = shared.upgrade() else { return };
    let mut states = s.session.states();
    let mut status = s.status.subscribe();
    drop(s);
    loop {
        tokio::select! {
            e = states.recv() => {
                let Some(e) = e else { return };
                let Some(s) = shared.upgrade() else { return };
                s.emit(ElectionEvent::Connection(e));
            }
            r = status.changed() => {
                if r.is_err() || status.borrow().is_terminal() {
                    return;
                }
            }
        }
    }
}

#[derive(Clone)]
struct Own {
    name: String,
    path: String,
    generation: u64,
    session_id: SessionId,
}

/// Why a step stopped early.
enum Brk {
    Close,
    SessionClosed,
    NewGeneration,
    Reconnected,
    Fail(Error),
}

enum Step {
    Join,
    Evaluate,
    Idle,
}

enum TaskEnd {
    Done(Result<(), BoxError>),
    Cancelled,
}

/// A pending watch event, boxed so that watches of different kinds can be held together.
type WatchFuture = Pin<Box<dyn Future<Output = zookeeper_client::WatchedEvent> + Send>>;

/// The leader's two reads, sent together by a likely leader (see [`Driver::evaluate`]).
struct Prefetched {
    sent: Instant,
    owned: Result<(zookeeper_client::Stat, WatchFuture), ZkError>,
    child_watch: OneshotWatcher,
}

/// Our node's ownership check and the watch on it, read while following, so that the wake-up
/// after the predecessor's deletion sends one request (the children read) instead of two.
///
/// Two requests issued together leave zookeeper-client in two socket writes, and on its socket
/// (Nagle's algorithm on) the second waits for the first one's acknowledgement, which the
/// server's kernel sends with the first reply: a second round trip on every handoff. What
/// the check reads cannot go stale: the owner and czxid never change, and the node's
/// existence is both in the children list read after the event and guarded by the watch
/// (ZooKeeper delivers a watch event before the reply of any later read on the session).
struct Armed {
    generation: u64,
    path: String,
    stat: zookeeper_client::Stat,
    event: WatchFuture,
}

/// What woke a follower.
enum Woke {
    Predecessor(zookeeper_client::WatchedEvent),
    Own(zookeeper_client::WatchedEvent),
}

struct Driver {
    shared: Arc<RecipeShared>,
    session: Session,
    snap: watch::Receiver<Snapshot>,
    cmd_rx: mpsc::UnboundedReceiver<Command>,
    cmd_tx: mpsc::UnboundedSender<Command>,
    id: String,
    policy: ConnectionPolicy,
    strategy: WatchStrategy,
    acls: Acls<'static>,
    stop_budget: Option<Duration>,
    rejoin_after_step_down: bool,
    own: Option<Own>,
    /// Our predecessor's deletion woke us. Followers only wake when the node before them goes,
    /// which in a settled election is the leader's, so the next evaluation asks the leader's
    /// questions at once (one round trip).
    next_in_line: bool,
    /// The last term's watches, kept until our node is deleted: dropping them first would
    /// send removeWatches ahead of the delete, delaying the handoff by round trips.
    held_watches: Vec<WatchFuture>,
    /// The ownership check and own-node watch of our current node, while we follow.
    armed: Option<Armed>,
    /// UUIDs of create attempts whose outcome is unknown; their nodes are deleted on sight.
    stale_uuids: Vec<String>,
    /// Nodes of older sessions to delete once a new session is up.
    stale_paths: Vec<String>,
    /// The latest term issued (kept after its loss, to detect a resumption).
    term: Option<Arc<Term>>,
    terms_issued: u64,
    task: Option<Task>,
    task_handle: Option<JoinHandle<TaskEnd>>,
    closing: bool,
    in_close: bool,
    close_waiters: Vec<oneshot::Sender<Result<(), Error>>>,
    resign_waiters: Vec<oneshot::Sender<Result<(), Error>>>,
}

type ZkError = zookeeper_client::Error;

fn watch_future(w: OneshotWatcher) -> WatchFuture {
    Box::pin(w.changed())
}

/// The library fails requests in flight at a connection failure with the I/O error (a custom
/// error); for us that is a connection loss: the outcome of a write is unknown.
pub(crate) fn normalize(e: ZkError) -> ZkError {
    match e {
        ZkError::Custom(_) => ZkError::ConnectionLoss,
        e => e,
    }
}

fn is_fatal(e: &zookeeper_client::Error) -> bool {
    use zookeeper_client::Error as Z;
    matches!(
        e,
        Z::NoAuth | Z::InvalidAcl | Z::NoChildrenForEphemerals | Z::BadArguments(_) | Z::AuthFailed
    )
}

fn is_session_end(e: &zookeeper_client::Error) -> bool {
    use zookeeper_client::Error as Z;
    matches!(e, Z::SessionExpired | Z::ClientClosed | Z::SessionMoved)
}

impl Driver {
    fn new(
        shared: Arc<RecipeShared>,
        seed: DriverSeed,
        cmd_tx: mpsc::UnboundedSender<Command>,
        task: Option<Task>,
    ) -> Driver {
        let session = shared.session.clone();
        Driver {
            snap: session.subscribe(),
            session,
            shared,
            cmd_rx: seed.cmd_rx,
            cmd_tx,
            id: seed.id,
            policy: seed.policy,
            strategy: seed.strategy,
            acls: seed.acls,
            stop_budget: seed.stop_budget,
            rejoin_after_step_down: seed.rejoin_after_step_down,
            own: None,
            next_in_line: false,
            held_watches: Vec::new(),
            armed: None,
            stale_uuids: Vec::new(),
            stale_paths: Vec::new(),
            term: None,
            terms_issued: 0,
            task,
            task_handle: None,
            closing: false,
            in_close: false,
            close_waiters: Vec::new(),
            resign_waiters: Vec::new(),
        }
    }

    fn is_selector(&self) -> bool {
        self.shared.kind == Kind::Selector
    }

    fn path(&self) -> &str {
        &self.shared.path
    }

    fn stop_budget(&self) -> Duration {
        self.stop_budget.unwrap_or_else(|| self.session.negotiated_timeout() / 5)
    }

    async fn run(mut self) {
        let mut step = Step::Join;
        let end = loop {
            let r = match step {
                Step::Join => self.join().await,
                Step::Evaluate => self.evaluate().await,
                Step::Idle => self.idle().await,
            };
            step = match r {
                Ok(s) => s,
                Err(Brk::NewGeneration) | Err(Brk::Reconnected) => Step::Join,
                Err(b) => break b,
            };
        };
        match end {
            Brk::Fail(e) => self.fail(e).await,
            Brk::SessionClosed => {
                self.lose_term(LossReason::ClientClosed);
                self.stop_task().await;
                self.finish(Status::Closed);
            }
            _ => self.close().await,
        }
    }

    // ---- commands and waiting -------------------------------------------------------------

    fn on_command(&mut self, cmd: Option<Command>) {
        match cmd {
            None => self.closing = true,
            Some(Command::Close { done }) => {
                self.closing = true;
                self.close_waiters.extend(done);
            }
            Some(Command::Resign { term, done }) => {
                let current = self.term.as_ref().is_some_and(|t| t.term == term);
                match self.shared.kind {
                    Kind::Latch => {
                        self.closing = true;
                        self.close_waiters.push(done);
                    }
                    Kind::Selector if current && self.own.is_some() => {
                        self.resign_waiters.push(done)
                    }
                    Kind::Selector => {
                        let _ = done.send(Ok(()));
                    }
                }
            }
            Some(Command::Wake) => {}
        }
    }

    fn check(&mut self, gen: u64, reconnects: Option<u64>) -> Result<(), Brk> {
        if self.closing && !self.in_close {
            return Err(Brk::Close);
        }
        let s = self.snap.borrow_and_update();
        if s.state.is_terminal() {
            return Err(Brk::SessionClosed);
        }
        if s.generation != gen || s.client.is_none() {
            return Err(Brk::NewGeneration);
        }
        if reconnects.is_some_and(|r| r != s.reconnects) {
            return Err(Brk::Reconnected);
        }
        Ok(())
    }

    /// Awaits `fut` unless a close is requested, the session ends, or (with `reconnects`) the
    /// connection was re-established since.
    async fn wait_ext<F: Future>(
        &mut self,
        gen: u64,
        reconnects: Option<u64>,
        fut: F,
    ) -> Result<F::Output, Brk> {
        tokio::pin!(fut);
        loop {
            self.check(gen, reconnects)?;
            tokio::select! {
                biased;
                cmd = self.cmd_rx.recv() => self.on_command(cmd),
                r = &mut fut => return Ok(r),
                r = self.snap.changed() => if r.is_err() { return Err(Brk::SessionClosed) },
            }
        }
    }

    async fn wait<F: Future>(&mut self, gen: u64, fut: F) -> Result<F::Output, Brk> {
        self.wait_ext(gen, None, fut).await
    }

    /// [`Driver::wait`] for a ZooKeeper operation; connection-level I/O errors, which the
    /// library reports as custom errors, become `ConnectionLoss`.
    async fn wait_op<T, F>(&mut self, gen: u64, fut: F) -> Result<Result<T, ZkError>, Brk>
    where
        F: Future<Output = Result<T, ZkError>>,
    {
        Ok(self.wait(gen, fut).await?.map_err(normalize))
    }

    async fn sleep(&mut self, gen: u64, d: Duration) -> Result<(), Brk> {
        self.wait(gen, tokio::time::sleep(d)).await
    }

    /// Waits until the session is connected; returns its client, generation and id.
    async fn connected(&mut self) -> Result<(Client, u64, SessionId), Brk> {
        loop {
            if self.closing && !self.in_close {
                return Err(Brk::Close);
            }
            {
                let s = self.snap.borrow_and_update();
                if s.state.is_terminal() {
                    return Err(Brk::SessionClosed);
                }
                if let (true, Some(c), Some(id)) = (s.state.is_connected(), &s.client, s.session_id)
                {
                    return Ok((c.clone(), s.generation, id));
                }
            }
            tokio::select! {
                biased;
                cmd = self.cmd_rx.recv() => self.on_command(cmd),
                r = self.snap.changed() => if r.is_err() { return Err(Brk::SessionClosed) },
            }
        }
    }

    /// Waits until generation `gen` is connected again.
    async fn wait_connected(&mut self, gen: u64) -> Result<(), Brk> {
        loop {
            self.check(gen, None)?;
            if self.snap.borrow().state.is_connected() {
                return Ok(());
            }
            tokio::select! {
                biased;
                cmd = self.cmd_rx.recv() => self.on_command(cmd),
                r = self.snap.changed() => if r.is_err() { return Err(Brk::SessionClosed) },
            }
        }
    }

    /// Waits until generation `gen` is over.
    async fn wait_generation_end(&mut self, gen: u64) -> Brk {
        loop {
            if let Err(b) = self.check(gen, None) {
                return b;
            }
            tokio::select! {
                biased;
                cmd = self.cmd_rx.recv() => self.on_command(cmd),
                r = self.snap.changed() => if r.is_err() { return Brk::SessionClosed },
            }
        }
    }

    fn client_for(&self, gen: u64) -> Option<Client> {
        let s = self.snap.borrow();
        (s.generation == gen).then(|| s.client.clone()).flatten()
    }

    // ---- terms ------------------------------------------------------------------------------

    fn lose_term(&mut self, reason: LossReason) {
        if let Some(t) = &self.term {
            t.lose(reason);
        }
    }

    fn term_active(&self) -> bool {
        self.term.as_ref().is_some_and(|t| t.loss().is_none())
    }

    fn issue_term(&mut self, own: &Own, token: i64, resumed: bool) -> Arc<Term> {
        self.terms_issued += 1;
        let (lost, _) = watch::channel(None);
        let term = Arc::new(Term {
            token: FencingToken(token),
            node_path: own.path.clone(),
            participant_id: self.id.clone(),
            session_id: own.session_id,
            generation: own.generation,
            term: self.terms_issued,
            resumed,
            started_at: Instant::now(),
            session: self.session.shared().clone(),
            lost,
            cmd: self.cmd_tx.clone(),
            recipe: Arc::downgrade(&self.shared),
        });
        let suspensions = self.snap.borrow().suspensions;
        let shared = self.shared.clone();
        let t = term.clone();
        let (policy, budget) = (self.policy, self.stop_budget());
        let latch = !self.is_selector();
        tokio::spawn(async move {
            guard(t.clone(), policy, budget, suspensions).await;
            let reason = t.loss().map(|l| l.0).unwrap_or(LossReason::ClientClosed);
            let silent = latch
                && matches!(reason, LossReason::Closed | LossReason::Resigned)
                && shared.silent.load(Ordering::Acquire);
            if !silent {
                shared.emit(ElectionEvent::Lost { token: t.token, term: t.term, reason });
            }
        });
        let leadership = Leadership { inner: term.clone() };
        *self.shared.current.lock().expect("poisoned") = Some(leadership.clone());
        *self.shared.last_path_is_leader.lock().expect("poisoned") = Some(own.path.clone());
        if self.is_selector() {
            self.shared.queue.lock().expect("poisoned").leading = true;
        }
        self.shared.set_status(Status::Leading { token: FencingToken(token) });
        self.shared.emit(ElectionEvent::Elected {
            token: FencingToken(token),
            node: own.path.clone(),
            term: term.term,
            resumed,
            leadership,
        });
        tracing::debug!(node = %own.path, token, resumed, "elected");
        self.term = Some(term.clone());
        term
    }

    // ---- J: join ----------------------------------------------------------------------------

    async fn join(&mut self) -> Result<Step, Brk> {
        if self.is_selector() && self.term.is_some() {
            return self.release().await;
        }
        self.shared.set_status(Status::Joining);
        let (client, gen, sid) = self.connected().await?;
        if let Some(own) = self.own.take() {
            if own.generation == gen {
                self.own = Some(own);
                return Ok(Step::Evaluate);
            }
            self.lose_term(LossReason::SessionExpired);
            self.stale_paths.push(own.path);
        }
        self.cleanup_stale(&client, gen).await?;
        let uuid = uuid::Uuid::new_v4().hyphenated().to_string();
        let prefix = naming::create_path(self.path(), &uuid, self.shared.lock);
        let options = CreateMode::EphemeralSequential.with_acls(self.acls);
        let data = self.id.clone().into_bytes();
        let mut after_loss = false;
        loop {
            if after_loss {
                // Curator's protected-mode retry: did the lost create land?
                let found = self.find_protected(&client, gen, sid, &uuid).await?;
                if let Some(own) = found {
                    return Ok(self.joined(own, None));
                }
            }
            MetricCells::inc(&self.shared.metrics.creates);
            let sent = Instant::now();
            let r = match self.wait_op(gen, client.create(&prefix, &data, &options)).await {
                Ok(r) => r,
                Err(b) => {
                    self.stale_uuids.push(uuid);
                    return Err(b);
                }
            };
            match r {
                Ok((stat, seq)) => {
                    self.session.shared().ack(gen, sent);
                    let path = format!("{prefix}{seq}");
                    let own = Own {
                        name: naming::name_of(&path).to_string(),
                        path,
                        generation: gen,
                        session_id: sid,
                    };
                    return Ok(self.joined(own, Some((seq.into_i64(), stat.czxid))));
                }
                Err(zookeeper_client::Error::NoNode) => {
                    let containers = CreateMode::Container.with_acls(self.acls);
                    let path = self.path().to_string();
                    match self.wait_op(gen, client.mkdir(&path, &containers)).await? {
                        Ok(()) => self.shared.emit(ElectionEvent::ParentRecreated { path }),
                        Err(e) if is_fatal(&e) => return Err(Brk::Fail(Error::from_zk(e, &path))),
                        Err(zookeeper_client::Error::ConnectionLoss) => {
                            after_loss = true;
                            self.wait_connected(gen).await?;
                        }
                        Err(e) if is_session_end(&e) => {
                            self.stale_uuids.push(uuid);
                            return Err(self.wait_generation_end(gen).await);
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, path, "creating the election path failed");
                            self.sleep(gen, Duration::from_millis(100)).await?;
                        }
                    }
                }
                Err(zookeeper_client::Error::ConnectionLoss) => {
                    after_loss = true;
                    self.wait_connected(gen).await?;
                }
                Err(e) if is_session_end(&e) => {
                    self.stale_uuids.push(uuid);
                    return Err(self.wait_generation_end(gen).await);
                }
                Err(e) if is_fatal(&e) => return Err(Brk::Fail(Error::from_zk(e, &prefix))),
                Err(e) => {
                    tracing::warn!(error = %e, "create failed; retrying");
                    after_loss = true;
                    self.sleep(gen, Duration::from_millis(100)).await?;
                }
            }
        }
    }

    fn joined(&mut self, own: Own, seq_czxid: Option<(i64, i64)>) -> Step {
        let (sequence, czxid) = seq_czxid.unwrap_or_else(|| {
            let seq = naming::parse(&own.name, self.shared.lock)
                .and_then(|r| r.sequence.parse().ok())
                .unwrap_or(-1);
            (seq, -1)
        });
        let info = JoinInfo { node: own.path.clone(), sequence, czxid, generation: own.generation };
        tracing::debug!(node = %own.path, "joined");
        *self.shared.our_path.lock().expect("poisoned") = Some(own.path.clone());
        self.shared.emit(ElectionEvent::Joined {
            node: own.path.clone(),
            sequence,
            czxid,
            generation: own.generation,
        });
        self.shared.joined.send_replace(Some(info));
        self.own = Some(own);
        Step::Evaluate
    }

    /// Looks for a node created by a create whose reply was lost (same UUID); adopts it if it
    /// belongs to this session.
    async fn find_protected(
        &mut self,
        client: &Client,
        gen: u64,
        sid: SessionId,
        uuid: &str,
    ) -> Result<Option<Own>, Brk> {
        let prefix = naming::uuid_prefix(uuid);
        loop {
            MetricCells::inc(&self.shared.metrics.get_children_calls);
            match self.wait_op(gen, client.list_children(&self.shared.path)).await? {
                Ok(children) => {
                    let Some(name) = children.into_iter().find(|c| c.starts_with(&prefix)) else {
                        return Ok(None);
                    };
                    let path = naming::child_path(self.path(), &name);
                    match self.wait_op(gen, client.get_data(&path)).await? {
                        Ok((_, stat)) if stat.ephemeral_owner == sid.0 => {
                            return Ok(Some(Own { name, path, generation: gen, session_id: sid }))
                        }
                        Ok(_) | Err(zookeeper_client::Error::NoNode) => {
                            self.delete_node(client, gen, &path).await?;
                            return Ok(None);
                        }
                        Err(zookeeper_client::Error::ConnectionLoss) => {
                            self.wait_connected(gen).await?
                        }
                        Err(e) => {
                            tracing::debug!(error = %e, "protected find failed");
                            return Ok(None);
                        }
                    }
                }
                Err(zookeeper_client::Error::NoNode) => return Ok(None),
                Err(zookeeper_client::Error::ConnectionLoss) => self.wait_connected(gen).await?,
                Err(e) if is_session_end(&e) => return Err(self.wait_generation_end(gen).await),
                Err(e) => {
                    tracing::debug!(error = %e, "protected find failed");
                    return Ok(None);
                }
            }
        }
    }

    /// Deletes nodes of older sessions and of create attempts with an unknown outcome.
    async fn cleanup_stale(&mut self, client: &Client, gen: u64) -> Result<(), Brk> {
        for path in std::mem::take(&mut self.stale_paths) {
            self.delete_node(client, gen, &path).await?;
        }
        if self.stale_uuids.is_empty() {
            return Ok(());
        }
        MetricCells::inc(&self.shared.metrics.get_children_calls);
        let children = match self.wait_op(gen, client.list_children(&self.shared.path)).await? {
            Ok(c) => c,
            Err(zookeeper_client::Error::NoNode) => {
                self.stale_uuids.clear();
                return Ok(());
            }
            Err(_) => return Ok(()),
        };
        let prefixes: Vec<String> =
            self.stale_uuids.iter().map(|u| naming::uuid_prefix(u)).collect();
        for name in children {
            if prefixes.iter().any(|p| name.starts_with(p)) {
                let path = naming::child_path(self.path(), &name);
                self.delete_node(client, gen, &path).await?;
                self.shared.emit(ElectionEvent::OrphanDeleted { node: path });
            }
        }
        self.stale_uuids.clear();
        Ok(())
    }

    /// Deletes a node, retrying on connection loss while the generation lives. `NoNode` is
    /// success. If the generation ends first, the path is remembered for the next session.
    async fn delete_node(&mut self, client: &Client, gen: u64, path: &str) -> Result<(), Brk> {
        loop {
            MetricCells::inc(&self.shared.metrics.deletes);
            let r = match self.wait_op(gen, client.delete(path, None)).await {
                Ok(r) => r,
                Err(Brk::NewGeneration) => {
                    self.stale_paths.push(path.to_string());
                    return Err(Brk::NewGeneration);
                }
                Err(b) => return Err(b),
            };
            match r {
                Ok(()) | Err(zookeeper_client::Error::NoNode) => return Ok(()),
                Err(zookeeper_client::Error::ConnectionLoss) => {
                    if let Err(b) = self.wait_connected(gen).await {
                        if matches!(b, Brk::NewGeneration) {
                            self.stale_paths.push(path.to_string());
                        }
                        return Err(b);
                    }
                }
                Err(e) if is_session_end(&e) => {
                    self.stale_paths.push(path.to_string());
                    return Err(self.wait_generation_end(gen).await);
                }
                Err(e) => {
                    tracing::warn!(error = %e, path, "delete failed");
                    return Ok(());
                }
            }
        }
    }

    // ---- E: evaluate, F: follow, L: lead ----------------------------------------------------

    async fn evaluate(&mut self) -> Result<Step, Brk> {
        loop {
            if self.is_selector() && self.term.is_some() && !self.term_active() {
                return self.release().await;
            }
            let gen = self.snap.borrow().generation;
            let own = match &self.own {
                Some(o) if o.generation == gen => o.clone(),
                _ => return Ok(Step::Join),
            };
            let Some(client) = self.client_for(gen) else { return Ok(Step::Join) };
            MetricCells::inc(&self.shared.metrics.evaluations);
            MetricCells::inc(&self.shared.metrics.get_children_calls);
            let herd = self.strategy == WatchStrategy::Herd;
            // A likely leader (next in line, or leading already) sends the children read with
            // the leader's watch and the ownership check together: the handoff then costs one
            // round trip after the event instead of three. If it turns out to follow after
            // all, the extra watches are dropped (and removed) unused.
            let speculate = !herd && (self.next_in_line || self.term_active());
            self.next_in_line = false;
            let mut prefetched = None;
            let listed = if herd {
                self.wait_op(gen, client.list_and_watch_children(&self.shared.path))
                    .await?
                    .map(|(c, w)| (c, Some(w)))
            } else if let Some(armed) = speculate.then(|| self.take_armed(gen, &own)).flatten() {
                // Ownership already checked and our node watched: one request.
                let sent = Instant::now();
                let listed = match self
                    .wait_op(gen, client.list_and_watch_children(&self.shared.path))
                    .await
                {
                    Ok(r) => r,
                    Err(b) => {
                        self.armed = Some(armed);
                        return Err(b);
                    }
                };
                match listed {
                    Ok((children, child_watch)) => {
                        prefetched = Some(Prefetched {
                            sent,
                            owned: Ok((armed.stat, armed.event)),
                            child_watch,
                        });
                        Ok((children, None))
                    }
                    Err(e) => {
                        self.armed = Some(armed);
                        Err(e)
                    }
                }
            } else if speculate {
                let sent = Instant::now();
                let parent = self.shared.clone();
                let (listed, owned) = self
                    .wait(gen, async {
                        tokio::join!(
                            client.list_and_watch_children(&parent.path),
                            client.get_and_watch_data(&own.path)
                        )
                    })
                    .await?;
                match listed.map_err(normalize) {
                    Ok((children, child_watch)) => {
                        prefetched = Some(Prefetched {
                            sent,
                            owned: owned
                                .map(|(_, stat, w)| (stat, watch_future(w)))
                                .map_err(normalize),
                            child_watch,
                        });
                        Ok((children, None))
                    }
                    Err(e) => Err(e),
                }
            } else {
                self.wait_op(gen, client.list_children(&self.shared.path)).await?.map(|c| (c, None))
            };
            let (children, herd_watch) = match listed {
                Ok(x) => x,
                Err(zookeeper_client::Error::NoNode) => {
                    // The parent was deleted or reaped (CURATOR-724): rejoin.
                    return self.node_gone(&own);
                }
                Err(zookeeper_client::Error::ConnectionLoss) => {
                    self.wait_connected(gen).await?;
                    continue;
                }
                Err(e) if is_session_end(&e) => return Err(self.wait_generation_end(gen).await),
                Err(e) => {
                    tracing::warn!(error = %e, "getChildren failed");
                    self.sleep(gen, Duration::from_millis(100)).await?;
                    continue;
                }
            };
            match decide(&children, &own.name, self.shared.lock) {
                Decision::Foreign(names) => return Err(self.refuse(&client, gen, names).await),
                Decision::Orphans(names) => {
                    for n in names {
                        let path = naming::child_path(self.path(), &n);
                        self.delete_node(&client, gen, &path).await?;
                        self.shared.emit(ElectionEvent::OrphanDeleted { node: path });
                    }
                }
                Decision::Missing => return self.node_gone(&own),
                Decision::Leader => {
                    let prefetched = prefetched.map(|p| (p, children));
                    if let Some(step) = self.lead(&own, &client, gen, prefetched).await? {
                        return Ok(step);
                    }
                }
                Decision::Follow { predecessor, position } => {
                    if self.term_active() {
                        // Our node is no longer first: whatever happened, we do not lead.
                        self.lose_term(LossReason::NodeDeleted);
                    }
                    if self.is_selector() && self.term.is_some() {
                        continue;
                    }
                    // Keep the speculative ownership check and own-node watch for the wait.
                    if let Some(Prefetched { owned: Ok((stat, event)), .. }) = prefetched {
                        if stat.ephemeral_owner == own.session_id.0 {
                            self.armed = Some(Armed {
                                generation: gen,
                                path: own.path.clone(),
                                stat,
                                event,
                            });
                        }
                    }
                    self.follow(&client, gen, &own, predecessor, position, herd_watch).await?;
                }
            }
        }
    }

    fn node_gone(&mut self, own: &Own) -> Result<Step, Brk> {
        self.shared.emit(ElectionEvent::NodeGone { node: own.path.clone() });
        self.lose_term(LossReason::NodeDeleted);
        self.own = None;
        Ok(Step::Join)
    }

    /// Foreign children: refuse to lead, delete our node, fail (docs/election.md §2.7).
    async fn refuse(&mut self, client: &Client, gen: u64, names: Vec<String>) -> Brk {
        tracing::warn!(path = %self.shared.path, ?names, "foreign nodes; refusing to lead");
        self.lose_term(LossReason::ForeignNodes);
        self.stop_task().await;
        if let Some(own) = self.own.take() {
            self.in_close = true;
            let _ = self.delete_node(client, gen, &own.path).await;
            self.in_close = false;
        }
        self.shared.emit(ElectionEvent::ForeignNodes { names: names.clone() });
        Brk::Fail(Error::ForeignNodes { path: self.shared.path.clone(), names })
    }

    async fn follow(
        &mut self,
        client: &Client,
        gen: u64,
        own: &Own,
        predecessor: String,
        position: usize,
        herd_watch: Option<OneshotWatcher>,
    ) -> Result<(), Brk> {
        let pred_path = naming::child_path(self.path(), &predecessor);
        let reconnects = self.snap.borrow().reconnects;
        let watcher = match herd_watch {
            Some(w) => {
                // Same owner rule as the predecessor strategy, without a watch.
                match self.wait_op(gen, client.check_stat(&pred_path)).await? {
                    Ok(None) => return Ok(()),
                    Ok(Some(stat)) if !naming::is_session_owner(stat.ephemeral_owner) => {
                        return Err(self.refuse(client, gen, vec![predecessor]).await)
                    }
                    Ok(Some(_)) => w,
                    Err(zookeeper_client::Error::ConnectionLoss) => {
                        return self.wait_connected(gen).await
                    }
                    Err(e) if is_session_end(&e) => {
                        return Err(self.wait_generation_end(gen).await)
                    }
                    Err(_) => return self.sleep(gen, Duration::from_millis(100)).await,
                }
            }
            None => match self.watch_predecessor(client, gen, own, &pred_path).await? {
                Err(zookeeper_client::Error::NoNode) => return Ok(()),
                Ok((_, stat, _)) if !naming::is_session_owner(stat.ephemeral_owner) => {
                    return Err(self.refuse(client, gen, vec![predecessor]).await)
                }
                Ok((_, _, w)) => w,
                Err(zookeeper_client::Error::ConnectionLoss) => {
                    return self.wait_connected(gen).await
                }
                Err(e) if is_session_end(&e) => return Err(self.wait_generation_end(gen).await),
                Err(_) => return self.sleep(gen, Duration::from_millis(100)).await,
            },
        };
        self.shared.set_status(Status::Following { position });
        self.shared.emit(ElectionEvent::Following { position, predecessor });
        // Our own node's watch wakes us too: a follower whose node was deleted rejoins at
        // once instead of waiting for its predecessor. It is polled first, so an event on our
        // node that came before the predecessor's is seen first.
        let mut armed = self.take_armed(gen, own);
        let woke = self
            .wait_ext(gen, Some(reconnects), async {
                match armed.as_mut() {
                    Some(a) => tokio::select! {
                        biased;
                        ev = &mut a.event => Woke::Own(ev),
                        ev = watcher.changed() => Woke::Predecessor(ev),
                    },
                    None => Woke::Predecessor(watcher.changed().await),
                }
            })
            .await;
        match woke {
            Ok(Woke::Predecessor(ev)) => {
                self.armed = armed;
                if ev.event_type == EventType::Session {
                    return Err(self.wait_generation_end(gen).await);
                }
                MetricCells::inc(&self.shared.metrics.wakeups);
                self.next_in_line = true;
                Ok(())
            }
            Ok(Woke::Own(ev)) => {
                // Deleted or changed: evaluate again (a fresh list tells which).
                if ev.event_type == EventType::Session {
                    return Err(self.wait_generation_end(gen).await);
                }
                MetricCells::inc(&self.shared.metrics.wakeups);
                Ok(())
            }
            Err(b) => {
                self.armed = armed;
                match b {
                    Brk::Reconnected => Ok(()),
                    b => Err(b),
                }
            }
        }
    }

    /// Sets the watch on our predecessor. Unless our node's ownership check and watch are
    /// already armed, they are read alongside (off the handoff's critical path).
    async fn watch_predecessor(
        &mut self,
        client: &Client,
        gen: u64,
        own: &Own,
        pred_path: &str,
    ) -> Result<Result<(Vec<u8>, zookeeper_client::Stat, OneshotWatcher), ZkError>, Brk> {
        if self.armed.as_ref().is_some_and(|a| a.generation == gen && a.path == own.path) {
            return self.wait_op(gen, client.get_and_watch_data(pred_path)).await;
        }
        let (pred, owned) = self
            .wait(gen, async {
                tokio::join!(
                    client.get_and_watch_data(pred_path),
                    client.get_and_watch_data(&own.path)
                )
            })
            .await?;
        match owned.map_err(normalize) {
            Ok((_, stat, w)) if stat.ephemeral_owner == own.session_id.0 => {
                self.armed = Some(Armed {
                    generation: gen,
                    path: own.path.clone(),
                    stat,
                    event: watch_future(w),
                });
            }
            // Our node is gone: evaluating again finds it missing.
            Err(zookeeper_client::Error::NoNode) => {
                return Ok(Err(zookeeper_client::Error::NoNode))
            }
            // Not ours, or not read: the check before a claim reads it again.
            _ => {}
        }
        Ok(pred.map_err(normalize))
    }

    /// The armed check of our current node, if there is one; a stale one is dropped.
    fn take_armed(&mut self, gen: u64, own: &Own) -> Option<Armed> {
        self.armed.take().filter(|a| a.generation == gen && a.path == own.path)
    }

    /// Our node sorts first. Checks ownership, claims (or keeps, or resumes) the term and waits.
    /// `prefetched`: the ownership check and the watched children list, already read together
    /// (the children are the list that decided we lead). `Ok(None)` means evaluate again.
    async fn lead(
        &mut self,
        own: &Own,
        client: &Client,
        gen: u64,
        prefetched: Option<(Prefetched, Vec<String>)>,
    ) -> Result<Option<Step>, Brk> {
        let reconnects = self.snap.borrow().reconnects;
        let (sent, owned, listed) = match prefetched {
            Some((p, children)) => (p.sent, p.owned, Some((children, p.child_watch))),
            None => {
                // Ownership check (CURATOR-696) and the own-node watch (W3).
                let sent = Instant::now();
                let owned = self.wait_op(gen, client.get_and_watch_data(&own.path)).await?;
                (sent, owned.map(|(_, stat, w)| (stat, watch_future(w))), None)
            }
        };
        let (stat, own_watch) = match owned {
            Ok(x) => x,
            Err(zookeeper_client::Error::NoNode) => return self.node_gone(own).map(Some),
            Err(zookeeper_client::Error::ConnectionLoss) => {
                self.wait_connected(gen).await?;
                return Ok(None);
            }
            Err(e) if is_session_end(&e) => return Err(self.wait_generation_end(gen).await),
            Err(e) => {
                tracing::warn!(error = %e, "ownership check failed");
                self.sleep(gen, Duration::from_millis(100)).await?;
                return Ok(None);
            }
        };
        self.session.shared().ack(gen, sent);
        if stat.ephemeral_owner != own.session_id.0 {
            tracing::info!(node = %own.path, owner = stat.ephemeral_owner, "our node belongs to another session");
            self.stale_paths.push(own.path.clone());
            return self.node_gone(own).map(Some);
        }
        // Children watch: foreign arrivals and membership changes reach the leader.
        let child_watch = match listed {
            Some((_, w)) => w,
            None => {
                MetricCells::inc(&self.shared.metrics.get_children_calls);
                let (children, w) = match self
                    .wait_op(gen, client.list_and_watch_children(&self.shared.path))
                    .await?
                {
                    Ok(x) => x,
                    Err(zookeeper_client::Error::NoNode) => return self.node_gone(own).map(Some),
                    Err(zookeeper_client::Error::ConnectionLoss) => {
                        self.wait_connected(gen).await?;
                        return Ok(None);
                    }
                    Err(e) if is_session_end(&e) => {
                        return Err(self.wait_generation_end(gen).await)
                    }
                    Err(_) => return Ok(None),
                };
                match decide(&children, &own.name, self.shared.lock) {
                    Decision::Leader => {}
                    Decision::Foreign(names) => return Err(self.refuse(client, gen, names).await),
                    _ => return Ok(None),
                }
                w
            }
        };
        // Claim, keep or resume.
        let keep = self
            .term
            .as_ref()
            .filter(|t| t.node_path == own.path && t.generation == gen && t.loss().is_none())
            .cloned();
        let term = match keep {
            Some(t) => t,
            None => {
                if self.is_selector() && self.term.is_some() {
                    // The selector's term ended: release, never resume.
                    return self.release().await.map(Some);
                }
                if !self.lease_fresh(gen) {
                    return self.stepped_down(own, gen).await;
                }
                let resumed = self.term.as_ref().is_some_and(|t| t.node_path == own.path);
                let t = self.issue_term(own, stat.czxid, resumed);
                if self.is_selector() {
                    self.start_task(&t);
                }
                t
            }
        };
        let leadership = Leadership { inner: term.clone() };
        let lost = leadership.lost();
        tokio::pin!(lost);
        let mut own_ev = own_watch;
        let mut child_ev = Box::pin(child_watch.changed());
        enum Sel {
            Cmd(Option<Command>),
            Task(Result<TaskEnd, tokio::task::JoinError>),
            Lost(LossReason),
            Own(zookeeper_client::WatchedEvent),
            Children(zookeeper_client::WatchedEvent),
            Snap(bool),
        }
        loop {
            match self.check(gen, Some(reconnects)) {
                Ok(()) => {}
                Err(Brk::Reconnected) => return Ok(None),
                Err(Brk::Close) => {
                    self.held_watches.push(own_ev);
                    self.held_watches.push(child_ev);
                    return Err(Brk::Close);
                }
                Err(b) => return Err(b),
            }
            let mut task = self.task_handle.take();
            let sel = tokio::select! {
                biased;
                cmd = self.cmd_rx.recv() => Sel::Cmd(cmd),
                end = async { task.as_mut().expect("checked").await }, if task.is_some() => {
                    Sel::Task(end)
                }
                reason = &mut lost => Sel::Lost(reason),
                ev = &mut own_ev => Sel::Own(ev),
                ev = &mut child_ev => Sel::Children(ev),
                r = self.snap.changed() => Sel::Snap(r.is_ok()),
            };
            if !matches!(sel, Sel::Task(_)) {
                self.task_handle = task;
            }
            match sel {
                Sel::Cmd(cmd) => self.on_command(cmd),
                Sel::Task(end) => {
                    match end {
                        Ok(TaskEnd::Done(Err(e))) => {
                            tracing::warn!(error = %e, "leadership task failed")
                        }
                        Err(e) => tracing::warn!(error = %e, "leadership task panicked"),
                        _ => {}
                    }
                    return self.release().await.map(Some);
                }
                Sel::Lost(reason) => {
                    if self.is_selector() {
                        // The task ends with the loss; release after it.
                        return self.release().await.map(Some);
                    }
                    match reason {
                        LossReason::Suspended | LossReason::LeaseExpired => {
                            return self.stepped_down(own, gen).await;
                        }
                        LossReason::ClientClosed => return Err(Brk::SessionClosed),
                        LossReason::Closed | LossReason::Resigned => {
                            // The close command is on its way, or here.
                            self.closing = true;
                            self.held_watches.push(own_ev);
                            self.held_watches.push(child_ev);
                            return Err(Brk::Close);
                        }
                        _ => return Ok(None),
                    }
                }
                Sel::Own(ev) => {
                    MetricCells::inc(&self.shared.metrics.leader_watch_events);
                    return match ev.event_type {
                        EventType::NodeDeleted => self.node_gone(own).map(Some),
                        EventType::Session => Err(self.wait_generation_end(gen).await),
                        _ => Ok(None),
                    };
                }
                Sel::Children(ev) => {
                    MetricCells::inc(&self.shared.metrics.leader_watch_events);
                    if ev.event_type == EventType::Session {
                        return Err(self.wait_generation_end(gen).await);
                    }
                    // The own-node watch stays set: the new look at the children is then one
                    // request, with no removeWatches and no second read before it.
                    self.armed = Some(Armed {
                        generation: gen,
                        path: own.path.clone(),
                        stat,
                        event: own_ev,
                    });
                    return Ok(None);
                }
                Sel::Snap(true) => {}
                Sel::Snap(false) => return Err(Brk::SessionClosed),
            }
        }
    }

    fn lease_fresh(&self, gen: u64) -> bool {
        let s = self.snap.borrow();
        if !s.state.is_connected() && self.policy == ConnectionPolicy::StepDownOnSuspended {
            return false;
        }
        drop(s);
        self.session.shared().deadline(gen).is_some_and(|d| Instant::now() + self.stop_budget() < d)
    }

    /// S: stepped down with our node kept. Resume (E) once connected with a fresh lease.
    async fn stepped_down(&mut self, own: &Own, gen: u64) -> Result<Option<Step>, Brk> {
        self.shared.set_status(Status::SteppedDown);
        if self.rejoin_after_step_down {
            if let Some(client) = self.client_for(gen) {
                self.delete_node(&client, gen, &own.path).await?;
            }
            self.own = None;
            return Ok(Some(Step::Join));
        }
        let mut lease = self.session.shared().lease.subscribe();
        loop {
            self.check(gen, None)?;
            if self.lease_fresh(gen) {
                return Ok(None);
            }
            let stop_at = self.session.shared().deadline(gen);
            tokio::select! {
                biased;
                cmd = self.cmd_rx.recv() => self.on_command(cmd),
                r = self.snap.changed() => if r.is_err() { return Err(Brk::SessionClosed) },
                _ = lease.changed() => {}
                // Re-check now and then: freshness also depends on the clock.
                _ = tokio::time::sleep(Duration::from_millis(50)), if stop_at.is_some() => {}
            }
        }
    }

    // ---- selector ---------------------------------------------------------------------------

    fn start_task(&mut self, term: &Arc<Term>) {
        let Some(task) = self.task.as_mut() else { return };
        let leadership = Leadership { inner: term.clone() };
        let lost = leadership.lost();
        let fut = task(leadership);
        self.task_handle = Some(tokio::spawn(async move {
            tokio::select! {
                biased;
                _ = lost => TaskEnd::Cancelled,
                r = fut => TaskEnd::Done(r),
            }
        }));
    }

    async fn stop_task(&mut self) {
        if let Some(h) = self.task_handle.take() {
            // lost() has resolved, so the task ends at its next poll.
            let _ = tokio::time::timeout(Duration::from_secs(5), h).await;
        }
    }

    /// Ends the selector's term: lost() first, then the delete, then requeue or idle.
    async fn release(&mut self) -> Result<Step, Brk> {
        self.lose_term(LossReason::Resigned);
        self.stop_task().await;
        if let Some(own) = self.own.take() {
            let gen = own.generation;
            match self.client_for(gen) {
                Some(client) => match self.delete_node(&client, gen, &own.path).await {
                    Ok(()) | Err(Brk::NewGeneration) => {}
                    Err(b) => {
                        self.own = Some(own);
                        return Err(b);
                    }
                },
                None => self.stale_paths.push(own.path.clone()),
            }
            *self.shared.our_path.lock().expect("poisoned") = None;
            self.shared.emit(ElectionEvent::Released { node: own.path });
        }
        self.term = None;
        for w in self.resign_waiters.drain(..) {
            let _ = w.send(Ok(()));
        }
        let mut q = self.shared.queue.lock().expect("poisoned");
        q.leading = false;
        if q.auto_requeue || q.requeue_after {
            q.requeue_after = false;
            q.queued = true;
            Ok(Step::Join)
        } else {
            q.queued = false;
            Ok(Step::Idle)
        }
    }

    async fn idle(&mut self) -> Result<Step, Brk> {
        self.shared.set_status(Status::Idle);
        loop {
            if self.closing {
                return Err(Brk::Close);
            }
            if self.shared.queue.lock().expect("poisoned").queued {
                return Ok(Step::Join);
            }
            if self.snap.borrow().state.is_terminal() {
                return Err(Brk::SessionClosed);
            }
            tokio::select! {
                cmd = self.cmd_rx.recv() => self.on_command(cmd),
                r = self.snap.changed() => if r.is_err() { return Err(Brk::SessionClosed) },
            }
        }
    }

    // ---- C: close ---------------------------------------------------------------------------

    async fn close(&mut self) {
        self.in_close = true;
        self.closing = true;
        // W7: the term ends locally before the node is deleted.
        self.lose_term(LossReason::Closed);
        self.stop_task().await;
        let mut result = Ok(());
        if let Some(own) = self.own.take() {
            let gen = own.generation;
            if let Some(client) = self.client_for(gen) {
                match self.delete_node(&client, gen, &own.path).await {
                    Ok(()) | Err(Brk::NewGeneration) | Err(Brk::SessionClosed) => {}
                    Err(_) => result = Err(Error::ConnectionLoss),
                }
            }
        }
        if !self.stale_uuids.is_empty() || !self.stale_paths.is_empty() {
            let (client, gen) = {
                let s = self.snap.borrow();
                (s.client.clone(), s.generation)
            };
            if let Some(client) = client {
                let _ = self.cleanup_stale(&client, gen).await;
            }
        }
        self.held_watches.clear();
        self.armed = None;
        *self.shared.our_path.lock().expect("poisoned") = None;
        for w in self.close_waiters.drain(..).chain(self.resign_waiters.drain(..)) {
            let _ = w.send(result.clone());
        }
        self.finish(Status::Closed);
    }

    async fn fail(&mut self, e: Error) {
        self.lose_term(LossReason::ClientClosed);
        self.stop_task().await;
        for w in self.close_waiters.drain(..).chain(self.resign_waiters.drain(..)) {
            let _ = w.send(Ok(()));
        }
        tracing::warn!(error = %e, path = %self.shared.path, "election failed");
        self.shared.set_status(Status::Failed(e));
        self.shared.emit(ElectionEvent::Closed);
    }

    fn finish(&mut self, status: Status) {
        for w in self.close_waiters.drain(..).chain(self.resign_waiters.drain(..)) {
            let _ = w.send(Ok(()));
        }
        self.shared.queue.lock().expect("poisoned").queued = false;
        self.shared.set_status(status);
        self.shared.emit(ElectionEvent::Closed);
    }
}
