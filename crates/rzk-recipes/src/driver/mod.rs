//! The driver of a recipe (docs/election.md §2.9, §2.10): one task per recipe owns all
//! mutable state and every client future; handles talk to it over a channel and
//! read what it publishes in [`RecipeShared`].
//!
//! A queue recipe runs in steps: **join** (create our node), **evaluate** (read the children
//! and decide), then **follow** (watch the predecessor) or **lead** (check ownership, publish
//! the term, hold it), and for a [`Lifecycle::Mutex`] recipe **release** and **idle**. The race
//! election has one step of its own instead of join, evaluate, follow and lead: **race** (try
//! to create the fixed node, watch it, hold the term). **close** ends both. Each step lives in
//! a file of its own; this one holds the state and the waiting that every step shares.

mod close;
pub(crate) mod contender;
mod contest;
pub(crate) mod decide;
pub(crate) mod election_options;
mod evaluate;
mod follow;
mod join;
mod lead;
pub(crate) mod participants;
mod release;
pub(crate) mod rule;
pub(crate) mod shared;
pub(crate) mod status;
mod terms;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rzk_client::{Client, OneshotWatcher, SessionId};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::driver::election_options::ElectionOptions;
use crate::driver::shared::RecipeShared;
use crate::loss::LossReason;
use crate::session::acl_provider::NodeAcls;
use crate::session::{Session, Snapshot};
use crate::term::control::{BoxError, Command, Lifecycle};
use crate::term::guard::{Fence, Term};
use crate::term::leadership::Task;
use crate::term::mailbox::{Inbox, Mailbox};
use crate::zk_error::{classify, normalize, Class, ZkError};
use crate::{driver::status::Status, Error};

/// How long the driver pauses before retrying an operation that failed for a reason a retry
/// may cure (a throttled or otherwise transient error): long enough not to spin against a
/// server that keeps refusing, short against a session timeout.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// What the driver is configured with, beyond the shared state.
pub(crate) struct DriverConfig {
    pub options: ElectionOptions,
    /// LeaderLatch: after a step-down that kept the node, rejoin at the tail.
    pub rejoin_after_step_down: bool,
    /// Set for the race election: the epoch node beside the fixed election node.
    pub race_epoch: Option<String>,
}

/// Our node, in the session generation that created it.
#[derive(Clone)]
struct OwnNode {
    name: String,
    path: String,
    generation: u64,
    session_id: SessionId,
    /// What proves the node is still ours (the term's fence, and a race node's release check).
    fence: Fence,
    /// The stat of the create whose reply came on this session: the node is ours by
    /// construction and needs no ownership check. `None` for a node adopted after a lost reply
    /// (the check guards exactly those), for a race node, and for a latch's (see `create_own`).
    created: Option<rzk_client::Stat>,
}

impl OwnNode {
    /// A queue node: its unique path's existence is the fence.
    fn queued(name: String, path: String, generation: u64, session_id: SessionId) -> OwnNode {
        let fence = Fence::node(&path);
        OwnNode { name, path, generation, session_id, fence, created: None }
    }
}

/// Why a step stopped before its end.
enum Stop {
    /// A close was requested.
    Close,
    /// The session manager is closed: nothing more can happen.
    SessionClosed,
    /// The session generation changed: join again on the new session.
    NewGeneration,
    /// The connection was re-established since the step began, or a handle asked for a fresh
    /// decision: evaluate again.
    Reconnected,
    /// The recipe fails with this error.
    Fail(Error),
    /// A releasing recipe is no longer queued (its acquire was cancelled): delete our node.
    Withdraw,
}

/// The next step of the driver loop.
enum Step {
    Join,
    Race,
    Evaluate,
    Idle,
}

/// How a LeaderSelector task ended.
enum TaskEnd {
    Done(Result<(), BoxError>),
    Cancelled,
}

/// A pending watch event, boxed so that watches of different kinds can be held together.
type WatchFuture = Pin<Box<dyn Future<Output = rzk_client::WatchedEvent> + Send>>;

fn watch_future(w: OneshotWatcher) -> WatchFuture {
    Box::pin(w.changed())
}

/// What a likely leader's listing gave beside the children (see `Driver::evaluate`): the
/// ownership check with the own-node watch, if one was read or armed (a node whose create
/// reply came needs neither: its stat is the create's), and the children watch the listing set.
struct Prefetched {
    sent: Instant,
    owned: Result<(rzk_client::Stat, Option<WatchFuture>), ZkError>,
    child_watch: OneshotWatcher,
}

/// Our node's ownership check and the watch on it, read while following, so that the wake-up
/// after the predecessor's deletion sends one request (the children read) instead of two.
///
/// A second request on the handoff's path is one more the server must answer, in order,
/// before the successor can claim. What the check reads cannot go stale: the owner and czxid never change, and the node's
/// existence is both in the children list read after the event and guarded by the watch
/// (ZooKeeper delivers a watch event before the reply of any later read on the session).
struct Armed {
    generation: u64,
    path: String,
    stat: rzk_client::Stat,
    event: WatchFuture,
}

impl Armed {
    /// True if this is the check of `own` in generation `generation` (a stale one is not).
    fn is_for(&self, generation: u64, own: &OwnNode) -> bool {
        self.generation == generation && self.path == own.path
    }

    /// True if the check found the node owned by `own`'s session.
    fn owned_by(&self, own: &OwnNode) -> bool {
        self.stat.ephemeral_owner == own.session_id.0
    }
}

pub(crate) struct Driver {
    shared: Arc<RecipeShared>,
    session: Session,
    snap: watch::Receiver<Snapshot>,
    cmd_rx: Inbox,
    cmd_tx: Mailbox,
    options: ElectionOptions,
    /// The ACL of each node it creates.
    acls: NodeAcls,
    rejoin_after_step_down: bool,
    /// The race election's epoch node; `None` for a queue recipe.
    race_epoch: Option<String>,
    own: Option<OwnNode>,
    /// Our predecessor's deletion woke us. Followers only wake when the node before them goes,
    /// which in a settled election is the leader's, so the next evaluation asks the leader's
    /// questions at once (one round trip).
    next_in_line: bool,
    /// Our node was just created and its create's reply came: the first listing is a likely
    /// leader's (with the children watch), so an uncontended acquire sends no other read.
    just_created: bool,
    /// A children watch a follower's listing set and did not use, kept until it fires or the
    /// next one replaces it: dropping it unfired would send removeWatches.
    spare_child_watch: Option<OneshotWatcher>,
    /// The last term's watches, kept until our node is deleted: dropping them first would
    /// send removeWatches ahead of the delete, delaying the handoff by round trips.
    held_watches: Vec<WatchFuture>,
    /// The ownership check and own-node watch of our current node, while we follow.
    armed: Option<Armed>,
    /// UUIDs of create attempts whose outcome is unknown; their nodes are deleted on sight.
    stale_uuids: Vec<String>,
    /// Nodes of older sessions to delete once a new session is up.
    stale_paths: Vec<String>,
    /// Race nodes of older sessions, deleted once a new session is up only if still ours.
    stale_fenced: Vec<OwnNode>,
    /// A winning multi was sent and neither its reply nor a read of the node has told whether
    /// it landed: a close must look before it ends.
    race_unsettled: bool,
    /// The latest term issued (kept after its loss, to detect a resumption).
    term: Option<Arc<Term>>,
    terms_issued: u64,
    task: Option<Task>,
    task_handle: Option<JoinHandle<TaskEnd>>,
    closing: bool,
    in_close: bool,
    /// A handle asked for a fresh decision: a follower or leader evaluates again.
    reevaluate: bool,
    close_waiters: Vec<oneshot::Sender<Result<(), Error>>>,
    resign_waiters: Vec<oneshot::Sender<Result<(), Error>>>,
}

impl Driver {
    pub(crate) fn new(
        shared: Arc<RecipeShared>,
        config: DriverConfig,
        cmd_rx: Inbox,
        cmd_tx: Mailbox,
        task: Option<Task>,
    ) -> Driver {
        let session = shared.session.clone();
        Driver {
            snap: session.subscribe(),
            acls: NodeAcls::new(&session, config.options.acls),
            session,
            shared,
            cmd_rx,
            cmd_tx,
            options: config.options,
            rejoin_after_step_down: config.rejoin_after_step_down,
            race_epoch: config.race_epoch,
            own: None,
            next_in_line: false,
            just_created: false,
            spare_child_watch: None,
            held_watches: Vec::new(),
            armed: None,
            stale_uuids: Vec::new(),
            stale_paths: Vec::new(),
            stale_fenced: Vec::new(),
            race_unsettled: false,
            term: None,
            terms_issued: 0,
            task,
            task_handle: None,
            closing: false,
            in_close: false,
            reevaluate: false,
            close_waiters: Vec::new(),
            resign_waiters: Vec::new(),
        }
    }

    /// True for a recipe whose every term ends in a release (LeaderSelector and the locks).
    fn releases_terms(&self) -> bool {
        self.shared.lifecycle == Lifecycle::Mutex
    }

    fn path(&self) -> &str {
        &self.shared.path
    }

    fn stop_budget(&self) -> Duration {
        self.options.stop_budget_for(self.session.negotiated_timeout())
    }

    /// Where the recipe starts, and starts again on a new session or connection.
    fn first_step(&self) -> Step {
        if self.race_epoch.is_some() {
            Step::Race
        } else {
            Step::Join
        }
    }

    /// Runs the steps until the recipe closes, fails or loses its session manager.
    pub(crate) async fn run(mut self) {
        let mut step = self.first_step();
        let end = loop {
            let r = match step {
                Step::Join => self.join().await,
                Step::Race => self.race().await,
                Step::Evaluate => self.evaluate().await,
                Step::Idle => self.idle().await,
            };
            let r = match r {
                Err(Stop::Withdraw) => self.withdraw().await,
                r => r,
            };
            step = match r {
                Ok(s) => s,
                Err(Stop::NewGeneration) | Err(Stop::Reconnected) => self.first_step(),
                Err(stop) => break stop,
            };
        };
        match end {
            Stop::Fail(e) => self.fail(e).await,
            Stop::SessionClosed => {
                self.lose_term(LossReason::ClientClosed);
                self.stop_task().await;
                self.finish(Status::Closed);
            }
            _ => self.close().await,
        }
    }

    // ---- commands and waiting ---------------------------------------------------------------

    fn on_command(&mut self, cmd: Option<Command>) {
        match cmd {
            None => self.closing = true,
            Some(Command::Close { done }) => {
                self.closing = true;
                self.close_waiters.extend(done);
            }
            Some(Command::Resign { term, done }) => {
                let current = self.term.as_ref().is_some_and(|t| t.term == term);
                match self.shared.lifecycle {
                    Lifecycle::Latch => {
                        self.closing = true;
                        self.close_waiters.push(done);
                    }
                    // The current term's release answers once its node is deleted, also when
                    // the release is already under way (our node taken, its delete in flight).
                    Lifecycle::Mutex
                        if current
                            && (self.own.is_some()
                                || !crate::bugs::resign_answered_before_delete()) =>
                    {
                        self.resign_waiters.push(done)
                    }
                    Lifecycle::Mutex => {
                        let _ = done.send(Ok(()));
                    }
                }
            }
            Some(Command::Wake) => {}
            Some(Command::Evaluate) => self.reevaluate = true,
            Some(Command::ReleaseCurrent) => {
                if self.releases_terms() {
                    self.lose_term(LossReason::Resigned);
                }
            }
        }
    }

    /// Whether the step on `generation` may go on; with `reconnects`, also stops once the
    /// connection was re-established since.
    fn check(&mut self, generation: u64, reconnects: Option<u64>) -> Result<(), Stop> {
        if self.closing && !self.in_close {
            return Err(Stop::Close);
        }
        let s = self.snap.borrow_and_update();
        if s.state.is_terminal() {
            return Err(Stop::SessionClosed);
        }
        if s.generation != generation || s.client.is_none() {
            return Err(Stop::NewGeneration);
        }
        if reconnects.is_some_and(|r| r != s.reconnects) {
            return Err(Stop::Reconnected);
        }
        // Only the waits of a follower and a leader (those that pass `reconnects`) end for a
        // fresh look; a create or delete in flight finishes first.
        if reconnects.is_some() && std::mem::take(&mut self.reevaluate) {
            return Err(Stop::Reconnected);
        }
        drop(s);
        if self.withdrawn() {
            return Err(Stop::Withdraw);
        }
        Ok(())
    }

    /// A releasing recipe waiting for its turn that nobody wants any more: it holds a node but
    /// no term, and is not queued.
    fn withdrawn(&self) -> bool {
        self.releases_terms()
            && !self.in_close
            && self.own.is_some()
            && self.term.is_none()
            && !self.shared.queue.lock().expect("poisoned").queued
    }

    /// Awaits `fut` unless a close is requested, the session ends, or (with `reconnects`) the
    /// connection was re-established since.
    async fn wait_ext<F: Future>(
        &mut self,
        generation: u64,
        reconnects: Option<u64>,
        fut: F,
    ) -> Result<F::Output, Stop> {
        tokio::pin!(fut);
        loop {
            self.check(generation, reconnects)?;
            tokio::select! {
                biased;
                cmd = self.cmd_rx.recv() => self.on_command(cmd),
                r = &mut fut => return Ok(r),
                r = self.snap.changed() => if r.is_err() { return Err(Stop::SessionClosed) },
            }
        }
    }

    async fn wait<F: Future>(&mut self, generation: u64, fut: F) -> Result<F::Output, Stop> {
        self.wait_ext(generation, None, fut).await
    }

    /// [`Driver::wait`] for a ZooKeeper operation, its connection-level I/O error normalized.
    async fn wait_op<T, F>(&mut self, generation: u64, fut: F) -> Result<Result<T, ZkError>, Stop>
    where
        F: Future<Output = Result<T, ZkError>>,
    {
        Ok(self.wait(generation, fut).await?.map_err(normalize))
    }

    async fn sleep(&mut self, generation: u64, d: Duration) -> Result<(), Stop> {
        self.wait(generation, tokio::time::sleep(d)).await
    }

    /// Waits out what a connection loss or a session end asks for: `Ok(true)` once the
    /// connection is back after a loss (retry), `Ok(false)` for any other error (the caller
    /// decides), `Err` when the session ended or the wait was interrupted.
    async fn ride_out(&mut self, generation: u64, e: &ZkError) -> Result<bool, Stop> {
        match classify(e) {
            Class::ConnectionLoss => self.wait_connected(generation).await.map(|()| true),
            Class::SessionEnd => Err(self.wait_generation_end(generation).await),
            _ => Ok(false),
        }
    }

    /// The one answer to an error the caller has no special case for: wait out a connection
    /// loss or a session end, fail the recipe on an error no retry can cure, and pause before
    /// a retry otherwise. `Ok(())` means: try again.
    async fn recover(
        &mut self,
        generation: u64,
        e: ZkError,
        what: &str,
        path: &str,
    ) -> Result<(), Stop> {
        if self.ride_out(generation, &e).await? {
            return Ok(());
        }
        if classify(&e) == Class::Fatal {
            return Err(Stop::Fail(Error::from_zk(e, path)));
        }
        tracing::warn!(error = %e, path, "{what} failed; retrying");
        self.sleep(generation, RETRY_PAUSE).await
    }

    /// Waits until the session is connected; returns its client, generation and id.
    async fn connected(&mut self) -> Result<(Client, u64, SessionId), Stop> {
        loop {
            if self.closing && !self.in_close {
                return Err(Stop::Close);
            }
            {
                let s = self.snap.borrow_and_update();
                if s.state.is_terminal() {
                    return Err(Stop::SessionClosed);
                }
                if let (true, Some(c), Some(id)) = (s.state.is_connected(), &s.client, s.session_id)
                {
                    return Ok((c.clone(), s.generation, id));
                }
            }
            self.next_signal().await?;
        }
    }

    /// Waits until generation `generation` is connected again.
    async fn wait_connected(&mut self, generation: u64) -> Result<(), Stop> {
        loop {
            self.check(generation, None)?;
            if self.snap.borrow().state.is_connected() {
                return Ok(());
            }
            self.next_signal().await?;
        }
    }

    /// Waits until generation `generation` is over; returns why.
    async fn wait_generation_end(&mut self, generation: u64) -> Stop {
        loop {
            if let Err(stop) = self.check(generation, None) {
                return stop;
            }
            if let Err(stop) = self.next_signal().await {
                return stop;
            }
        }
    }

    /// Waits for the next command or session change (a command is handled).
    async fn next_signal(&mut self) -> Result<(), Stop> {
        tokio::select! {
            biased;
            cmd = self.cmd_rx.recv() => self.on_command(cmd),
            r = self.snap.changed() => if r.is_err() { return Err(Stop::SessionClosed) },
        }
        Ok(())
    }

    /// The client of generation `generation`, while it lasts.
    fn client_for(&self, generation: u64) -> Option<Client> {
        let s = self.snap.borrow();
        (s.generation == generation).then(|| s.client.clone()).flatten()
    }
}
