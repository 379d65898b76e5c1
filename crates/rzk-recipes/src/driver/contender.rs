//! [`Contender`]: what every queue recipe's handle offers, whatever the recipe.
//!
//! A LeaderLatch and a LeaderSelector differ in what a term is for, not in how it is won: both
//! queue one node, wait for it to sort first, and publish the term. This handle holds the
//! part they share; the recipes wrap it and dereference to it.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::driver::election_options::{CloseMode, ElectionOptions};
use crate::driver::participants::read_participants;
use crate::driver::rule::{self, Rule};
use crate::driver::shared::RecipeShared;
use crate::driver::status::{
    ElectionEvent, Events, JoinInfo, Metrics, Participant, Participants, Status,
};
use crate::driver::{Driver, DriverConfig};
use crate::loss::LossReason;
use crate::naming;
use crate::session::Session;
use crate::telemetry::Labels;
use crate::term::control::{confirmed, Command, Lifecycle};
use crate::term::leadership::Leadership;
use crate::term::leadership::Task;
use crate::term::mailbox::{mailbox, Inbox, Mailbox};
use crate::Error;

/// How often a waiter re-checks a published term that is not valid yet (its lease deadline
/// may move forward with the next acknowledged request without a status change).
const TERM_RECHECK: Duration = Duration::from_millis(20);

/// One participant in an election: its status, events, metrics, current term and the
/// participants read from the server. [`LeaderLatch`](crate::election::LeaderLatch) and
/// [`LeaderSelector`](crate::election::LeaderSelector) dereference to it. Cheap to clone; dropping the
/// last clone closes the recipe with its configured close mode.
#[derive(Clone)]
pub struct Contender {
    core: Arc<ContenderState>,
}

/// What the handles of one recipe share. Dropping it closes the recipe.
struct ContenderState {
    shared: Arc<RecipeShared>,
    cmd: Mailbox,
    /// What the driver needs, kept until `start`.
    seed: Mutex<Option<(Inbox, DriverConfig)>>,
}

impl Drop for ContenderState {
    fn drop(&mut self) {
        if self.shared.close.begin(self.shared.close_mode == CloseMode::Silent) {
            if let Some(l) = self.shared.current() {
                l.inner.lose(LossReason::Closed);
            }
            let _ = self.cmd.send(Command::Close { done: None });
        }
    }
}

impl std::fmt::Debug for Contender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Contender")
            .field("path", &self.core.shared.path)
            .field("status", &self.status())
            .finish()
    }
}

impl Contender {
    /// A contender on `path` whose nodes `rule` names and orders, not started.
    pub(crate) fn new(
        session: &Session,
        path: &str,
        lifecycle: Lifecycle,
        rule: Rule,
        options: ElectionOptions,
        rejoin_after_step_down: bool,
        auto_requeue: bool,
    ) -> Result<Contender, Error> {
        naming::validate_path(path)?;
        let shared = RecipeShared::new(
            lifecycle,
            path,
            rule,
            session,
            options.close_mode,
            options.close_timeout,
            auto_requeue,
        );
        let (cmd, cmd_rx) = mailbox();
        let config = DriverConfig { options, rejoin_after_step_down, race_epoch: None };
        let core = ContenderState {
            shared: Arc::new(shared),
            cmd,
            seed: Mutex::new(Some((cmd_rx, config))),
        };
        Ok(Contender { core: Arc::new(core) })
    }

    /// A race election's contender on `path` (the fixed node), not started: a latch's
    /// lifecycle, driven by the race step with the epoch node beside `path`.
    pub(crate) fn new_race(
        session: &Session,
        path: &str,
        options: ElectionOptions,
    ) -> Result<Contender, Error> {
        let c =
            Contender::new(session, path, Lifecycle::Latch, rule::LATCH, options, false, false)?;
        if let Some((_, config)) = c.core.seed.lock().expect("poisoned").as_mut() {
            config.race_epoch = Some(naming::race_epoch_path(path));
        }
        Ok(c.named("race"))
    }

    /// Names this contender's metrics `recipe` (before any term, so every series agrees).
    pub(crate) fn named(self, recipe: &'static str) -> Contender {
        let shared = &self.core.shared;
        let _ = shared.telemetry.set(Labels::new(recipe, &shared.path));
        self
    }

    pub(crate) fn shared(&self) -> &RecipeShared {
        &self.core.shared
    }

    /// Queues another attempt of a [`Lifecycle::Mutex`] recipe. True if it did: the recipe
    /// was idle, or it leads and will requeue after the release; false if an attempt is
    /// already queued (or the recipe is not started, or closed).
    pub(crate) fn requeue(&self) -> bool {
        let s = &self.core.shared;
        if !s.started.load(Ordering::Acquire) || s.close.is_closed() {
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
        let _ = self.core.cmd.send(Command::Wake);
        true
    }

    /// Where the next join of a [`Lifecycle::Mutex`] recipe creates its node: beside `node`
    /// (a plain EPHEMERAL node at its sequence, if it still exists then), or queued (`None`).
    pub(crate) fn set_beside(&self, node: Option<String>) {
        self.core.shared.queue.lock().expect("poisoned").beside = node;
    }

    /// Asks the driver for a fresh decision and waits for it: the current term if our node
    /// sorts first, `None` if it waits behind another.
    pub(crate) async fn decide_now(&self) -> Result<Option<Leadership>, Error> {
        let shared = &self.core.shared;
        let mut decisions = shared.decisions.subscribe();
        decisions.borrow_and_update();
        let _ = self.core.cmd.send(Command::Evaluate);
        let mut status = shared.status.subscribe();
        loop {
            match status.borrow_and_update().clone() {
                Status::Failed(e) => return Err(e),
                Status::Closed => return Err(Error::Closed),
                _ => {}
            }
            tokio::select! {
                biased;
                r = decisions.changed() => {
                    return match r {
                        Ok(()) => Ok(shared.current().filter(|l| l.is_valid())),
                        Err(_) => Err(Error::Closed),
                    };
                }
                r = status.changed() => if r.is_err() { return Err(Error::Closed) },
            }
        }
    }

    /// Withdraws the attempt of a [`Lifecycle::Mutex`] recipe that nobody waits for any more:
    /// a queued node is deleted, and a term granted meanwhile is released.
    pub(crate) fn withdraw(&self) {
        let mut q = self.core.shared.queue.lock().expect("poisoned");
        q.requeue_after = false;
        let cmd = if q.leading {
            Command::ReleaseCurrent
        } else {
            q.queued = false;
            Command::Wake
        };
        drop(q);
        let _ = self.core.cmd.send(cmd);
    }

    /// Spawns the driver (and the task that forwards connection events).
    pub(crate) fn start(&self, task: Option<Task>) -> Result<(), Error> {
        let shared = &self.core.shared;
        if shared.close.is_closed() {
            return Err(Error::Closed);
        }
        if shared.started.swap(true, Ordering::AcqRel) {
            return Err(Error::AlreadyStarted);
        }
        let (cmd_rx, config) =
            self.core.seed.lock().expect("poisoned").take().ok_or(Error::AlreadyStarted)?;
        if shared.lifecycle == Lifecycle::Mutex {
            shared.queue.lock().expect("poisoned").queued = true;
        }
        let driver = Driver::new(shared.clone(), config, cmd_rx, self.core.cmd.clone(), task);
        tokio::spawn(forward_connection_events(Arc::downgrade(shared)));
        tokio::spawn(driver.run());
        Ok(())
    }

    /// Waits until our node exists (or the recipe ends).
    pub(crate) async fn joined(&self) -> Result<JoinInfo, Error> {
        let shared = &self.core.shared;
        let mut joined = shared.joined.subscribe();
        let mut status = shared.status.subscribe();
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
                biased;
                r = joined.changed() => if r.is_err() { return Err(Error::Closed) },
                r = status.changed() => if r.is_err() { return Err(Error::Closed) },
            }
        }
    }

    /// Waits until the driver has decided once (leads or waits), or the recipe ends.
    pub(crate) async fn first_decision(&self) -> Result<(), Error> {
        let shared = &self.core.shared;
        let mut decisions = shared.decisions.subscribe();
        let mut status = shared.status.subscribe();
        loop {
            if *decisions.borrow_and_update() > 0 {
                return Ok(());
            }
            match status.borrow_and_update().clone() {
                Status::Failed(e) => return Err(e),
                Status::Closed => return Err(Error::Closed),
                _ => {}
            }
            tokio::select! {
                biased;
                r = decisions.changed() => if r.is_err() { return Err(Error::Closed) },
                r = status.changed() => if r.is_err() { return Err(Error::Closed) },
            }
        }
    }

    /// Closes the recipe with `mode`. A leading recipe's `lost()` resolves with `Closed`
    /// **before** its node is deleted; the future returns once the delete is acknowledged, or
    /// after the close timeout.
    pub(crate) async fn close(&self, mode: CloseMode) -> Result<(), Error> {
        let shared = &self.core.shared;
        if !shared.close.begin(mode == CloseMode::Silent) {
            return Err(Error::Closed);
        }
        if let Some(l) = shared.current() {
            l.inner.lose(LossReason::Closed);
        }
        let (tx, rx) = oneshot::channel();
        if self.core.cmd.send(Command::Close { done: Some(tx) }).is_err() {
            return Ok(());
        }
        if !shared.started.load(Ordering::Acquire) {
            // Never started: nothing to delete; the driver seed is dropped with the handle.
            shared.set_status(Status::Closed);
            return Ok(());
        }
        confirmed(rx, shared.close_timeout()).await
    }

    /// Waits until this participant leads; returns the current term at once if it does.
    ///
    /// # Errors
    /// [`Error::Closed`] once closed (Curator's `EOFException`), or if never started; the
    /// failure of a failed recipe ([`Error::ForeignNodes`], `NoAuth`, ...).
    ///
    /// # Cancellation safety
    /// Safe: it only waits on published state; a term granted while nobody waits is kept
    /// (see [`Contender::current`]).
    pub async fn await_leadership(&self) -> Result<Leadership, Error> {
        let shared = &self.core.shared;
        let mut status = shared.status.subscribe();
        loop {
            match status.borrow_and_update().clone() {
                Status::Failed(e) => return Err(e),
                Status::Closed => return Err(Error::Closed),
                Status::Latent if !shared.started.load(Ordering::Acquire) => {
                    return Err(Error::Closed)
                }
                _ => {}
            }
            if let Some(l) = shared.current().filter(|l| l.is_valid()) {
                return Ok(l);
            }
            let pending = shared.current().is_some_and(|l| l.loss_reason().is_none());
            tokio::select! {
                biased;
                r = status.changed() => if r.is_err() { return Err(Error::Closed) },
                _ = tokio::time::sleep(TERM_RECHECK), if pending => {}
            }
        }
    }

    /// [`Contender::await_leadership`] with a bound; `Ok(None)` on timeout (Curator's
    /// `await(timeout) == false`).
    ///
    /// # Errors
    /// As [`Contender::await_leadership`].
    ///
    /// # Cancellation safety
    /// Safe, as [`Contender::await_leadership`].
    pub async fn await_leadership_timeout(
        &self,
        timeout: Duration,
    ) -> Result<Option<Leadership>, Error> {
        match tokio::time::timeout(timeout, self.await_leadership()).await {
            Ok(r) => r.map(Some),
            Err(_) => Ok(None),
        }
    }

    /// True while a term is valid (its loss signal unresolved and its lease deadline ahead).
    /// Local, as Curator's `hasLeadership()`; no server read.
    pub fn has_leadership(&self) -> bool {
        self.core.shared.current().is_some_and(|l| l.is_valid())
    }

    /// The current term, unless it has ended.
    pub fn current(&self) -> Option<Leadership> {
        self.core.shared.current().filter(|l| l.loss_reason().is_none())
    }

    /// Our node's path while we have one (Curator's `getOurPath()`).
    pub fn our_path(&self) -> Option<String> {
        self.core.shared.our_path.lock().expect("poisoned").clone()
    }

    /// The node we last led with (Curator's `getLastPathIsLeader()`).
    pub fn last_path_is_leader(&self) -> Option<String> {
        self.core.shared.last_path_is_leader.lock().expect("poisoned").clone()
    }

    /// The election path.
    pub fn path(&self) -> &str {
        &self.core.shared.path
    }

    /// Where the participant stands.
    pub fn status(&self) -> Status {
        self.core.shared.status.borrow().clone()
    }

    /// Events from now on.
    pub fn events(&self) -> Events {
        Events::new(self.core.shared.events.subscribe())
    }

    /// Counters.
    pub fn metrics(&self) -> Metrics {
        self.core.shared.metrics.snapshot()
    }

    /// Every participant in node order, read from the server (1 getChildren + 1 multi-read),
    /// and any foreign children.
    ///
    /// # Errors
    /// `ConnectionLoss`, `SessionExpired`, other ZooKeeper errors.
    ///
    /// # Cancellation safety
    /// Safe: read-only.
    pub async fn participants(&self) -> Result<Participants, Error> {
        let shared = &self.core.shared;
        read_participants(&shared.session, &shared.path, &shared.rule).await
    }

    /// The participant whose node sorts first, read from the server (it may disagree with
    /// [`Contender::has_leadership`] for a moment); `Ok(None)` when nobody participates.
    ///
    /// # Errors
    /// [`Error::ForeignNodes`] when the leader is ambiguous; `ConnectionLoss`,
    /// `SessionExpired`.
    ///
    /// # Cancellation safety
    /// Safe: read-only.
    pub async fn leader(&self) -> Result<Option<Participant>, Error> {
        let p = self.participants().await?;
        if !p.foreign.is_empty() {
            let path = self.core.shared.path.clone();
            return Err(Error::ForeignNodes { path, names: p.foreign });
        }
        Ok(p.list.into_iter().next())
    }
}

/// Forwards the session's connection events to the recipe's event stream until the recipe
/// ends.
async fn forward_connection_events(shared: Weak<RecipeShared>) {
    let Some(s) = shared.upgrade() else { return };
    let mut states = s.session.states();
    let mut status = s.status.subscribe();
    drop(s);
    loop {
        tokio::select! {
            biased;
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
