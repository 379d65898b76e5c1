//! Leading: ownership before a claim (CURATOR-696), claiming, keeping or resuming
//! the term, and holding it until something ends it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use rzk_client::{Client, EventType, OneshotWatcher, Stat, WatchedEvent};

use super::{watch_future, Armed, Driver, OwnNode, Prefetched, Step, Stop, TaskEnd, WatchFuture};
use crate::driver::decide::{decide, Decision};
use crate::driver::status::MetricCells;
use crate::loss::LossReason;
use crate::term::control::Command;
use crate::term::guard::Term;
use crate::term::leadership::Leadership;
use crate::zk_error::ZkError;

/// How long a term granted on its predecessor's deletion (no children read, hence no
/// children watch) runs before it lists the children with a watch, as every other holder
/// does from its claim on (foreign arrivals, docs/election.md §2.7). A term released sooner
/// never reads: a lock handed straight on would otherwise send its delete behind that read,
/// and wait the read's round trip for it (see `Armed`). Short against the time a foreign
/// participant takes to matter.
const GRANTED_LISTING_DELAY: Duration = Duration::from_millis(50);

/// A leader's children watch, or (`None`) the time a granted term's listing is due.
type ChildFuture = Pin<Box<dyn Future<Output = Option<WatchedEvent>> + Send>>;

/// A children watch to keep until our node is deleted (see `Driver::held_watches`).
fn kept(child: ChildFuture) -> WatchFuture {
    Box::pin(async move {
        match child.await {
            Some(ev) => ev,
            None => std::future::pending().await,
        }
    })
}

/// What woke a leader.
enum LeaderWake {
    Command(Option<Command>),
    Task(Result<TaskEnd, tokio::task::JoinError>),
    Lost(LossReason),
    Own(WatchedEvent),
    /// The children watch fired (`None`: a granted term's listing is due).
    Children(Option<WatchedEvent>),
    /// The session snapshot changed (`false`: its sender is gone).
    Session(bool),
}

/// A leader's verified position: our node's stat, the own-node watch if one is set, and the
/// children watch. Without the own-node watch, the children watch alone reports our node's
/// deletion, and the listing it leads to ends the term (docs/election.md §2.9 L).
struct Verified {
    stat: Stat,
    own_watch: Option<WatchFuture>,
    /// `None` for a term granted on its predecessor's deletion: it lists, and sets the watch,
    /// after [`GRANTED_LISTING_DELAY`].
    child_watch: Option<OneshotWatcher>,
}

impl Driver {
    /// Our node sorts first. Checks ownership, claims (or keeps, or resumes) the term and holds
    /// it. `prefetched`: the ownership (checked, armed or from the create's reply) and the
    /// watched children list that decided we lead. `Ok(None)` means evaluate again.
    pub(super) async fn lead(
        &mut self,
        own: &OwnNode,
        client: &Client,
        generation: u64,
        prefetched: Option<(Prefetched, Vec<String>)>,
    ) -> Result<Option<Step>, Stop> {
        let reconnects = self.snap.borrow().reconnects;
        let verified = match self.verify(own, client, generation, prefetched).await? {
            Ok(v) => v,
            Err(step) => return Ok(step),
        };
        let term = match self.claim(own, generation, verified.stat.czxid).await? {
            Ok(term) => term,
            Err(step) => return Ok(step),
        };
        self.hold(own, generation, reconnects, term, verified).await
    }

    /// Our sole blocker's deletion proved that we hold (docs/election.md §2.10): claims on the
    /// armed check, with no read, and holds. `reconnects`: the connection the proof came on.
    /// `Ok(None)` means evaluate again.
    pub(super) async fn lead_granted(
        &mut self,
        own: &OwnNode,
        generation: u64,
        reconnects: u64,
        armed: Armed,
    ) -> Result<Option<Step>, Stop> {
        let Armed { stat, event, .. } = armed;
        let term = match self.claim(own, generation, stat.czxid).await? {
            Ok(term) => term,
            Err(step) => {
                self.keep_armed(generation, own, stat, Some(event));
                return Ok(step);
            }
        };
        let verified = Verified { stat, own_watch: Some(event), child_watch: None };
        self.hold(own, generation, reconnects, term, verified).await
    }

    /// Takes our node's ownership from `prefetched` or the create's reply, or reads it, and
    /// the children with a watch. `Err(step)`: not leading after all, take `step` (`None`:
    /// evaluate again).
    async fn verify(
        &mut self,
        own: &OwnNode,
        client: &Client,
        generation: u64,
        prefetched: Option<(Prefetched, Vec<String>)>,
    ) -> Result<Result<Verified, Option<Step>>, Stop> {
        let (sent, owned, child_watch) = match (prefetched, own.created) {
            (Some((p, _children)), _) => (Some(p.sent), p.owned, Some(p.child_watch)),
            (None, Some(stat)) => (None, Ok((stat, None)), None),
            (None, None) => {
                // The ownership check (CURATOR-696) and the own-node watch.
                let sent = crate::clock::now();
                let owned = self.wait_op(generation, client.get_and_watch_data(&own.path)).await?;
                (Some(sent), owned.map(|(_, stat, w)| (stat, Some(watch_future(w)))), None)
            }
        };
        let (stat, own_watch) = match owned {
            Ok(x) => x,
            Err(ZkError::NoNode) => return Ok(Err(Some(self.node_gone(own)?))),
            Err(e) => {
                self.recover(generation, e, "the ownership check", &own.path).await?;
                return Ok(Err(None));
            }
        };
        if let Some(sent) = sent {
            self.session.shared().ack(generation, sent);
        }
        if stat.ephemeral_owner != own.session_id.0 {
            let owner = stat.ephemeral_owner;
            tracing::info!(node = %own.path, owner, "our node belongs to another session");
            self.stale_paths.push(own.path.clone());
            return Ok(Err(Some(self.node_gone(own)?)));
        }
        let child_watch = match child_watch {
            Some(w) => w,
            // Children watch: foreign arrivals and membership changes reach the leader.
            None => match self.watch_children(own, client, generation).await? {
                Ok(w) => w,
                Err(step) => return Ok(Err(step)),
            },
        };
        Ok(Ok(Verified { stat, own_watch, child_watch: Some(child_watch) }))
    }

    /// Lists the children with a watch and checks that we still sort first.
    async fn watch_children(
        &mut self,
        own: &OwnNode,
        client: &Client,
        generation: u64,
    ) -> Result<Result<OneshotWatcher, Option<Step>>, Stop> {
        MetricCells::inc(&self.shared.metrics.get_children_calls);
        let path = self.shared.path.clone();
        let (children, w) =
            match self.wait_op(generation, client.list_and_watch_children(&path)).await? {
                Ok(x) => x,
                Err(ZkError::NoNode) => return Ok(Err(Some(self.node_gone(own)?))),
                Err(e) => {
                    self.recover(generation, e, "getChildren", &path).await?;
                    return Ok(Err(None));
                }
            };
        match decide(&children, &own.name, &self.shared.rule) {
            Decision::Leader => Ok(Ok(w)),
            Decision::Foreign(names) => Err(self.refuse(client, generation, names).await),
            _ => Ok(Err(None)),
        }
    }

    /// Keeps the live term on this node, or issues a new one (resumed if on the same node).
    /// `Err(step)`: no term now, take `step`.
    async fn claim(
        &mut self,
        own: &OwnNode,
        generation: u64,
        czxid: i64,
    ) -> Result<Result<Arc<Term>, Option<Step>>, Stop> {
        let keep = self.term.as_ref().filter(|t| {
            t.node_path == own.path && t.generation == generation && t.loss().is_none()
        });
        if let Some(t) = keep {
            return Ok(Ok(t.clone()));
        }
        if self.releases_terms() && self.term.is_some() {
            // A releasing recipe's term ended: release, never resume.
            return self.release().await.map(|step| Err(Some(step)));
        }
        if !self.lease_fresh(generation) {
            return self.stepped_down(own, generation).await.map(Err);
        }
        if self.releases_terms() {
            // Under the queue lock: a handle withdrawing sees either no term, or `leading`.
            let mut q = self.shared.queue.lock().expect("poisoned");
            if !q.queued {
                return Err(Stop::Withdraw);
            }
            q.leading = true;
        }
        let resumed = self.term.as_ref().is_some_and(|t| t.node_path == own.path);
        let t = self.issue_term(own, czxid, resumed);
        if self.releases_terms() {
            self.start_task(&t);
        }
        Ok(Ok(t))
    }

    /// Holds the term until a command, the task's end, the loss signal, a watch or the session
    /// ends it; `Ok(None)` means evaluate again.
    async fn hold(
        &mut self,
        own: &OwnNode,
        generation: u64,
        reconnects: u64,
        term: Arc<Term>,
        verified: Verified,
    ) -> Result<Option<Step>, Stop> {
        let Verified { stat, own_watch: mut own_ev, child_watch } = verified;
        let has_own_watch = own_ev.is_some();
        // `term` stays alive while held: its last handle's drop would end it.
        let lost = Leadership { inner: term.clone() }.lost();
        tokio::pin!(lost);
        let mut child_ev: ChildFuture = match child_watch {
            Some(w) => Box::pin(async move { Some(w.changed().await) }),
            None => Box::pin(async {
                tokio::time::sleep(GRANTED_LISTING_DELAY).await;
                None
            }),
        };
        self.shared.decided();
        loop {
            match self.check(generation, Some(reconnects)) {
                Ok(()) => {}
                Err(Stop::Reconnected) => return Ok(None),
                Err(Stop::Close) => {
                    self.held_watches.extend(own_ev.into_iter().chain([kept(child_ev)]));
                    return Err(Stop::Close);
                }
                Err(stop) => return Err(stop),
            }
            let mut task = self.task_handle.take();
            let wake = tokio::select! {
                biased;
                cmd = self.cmd_rx.recv() => LeaderWake::Command(cmd),
                end = async { task.as_mut().expect("checked").await }, if task.is_some() => {
                    LeaderWake::Task(end)
                }
                reason = &mut lost => LeaderWake::Lost(reason),
                ev = async { own_ev.as_mut().expect("checked").await }, if has_own_watch => {
                    LeaderWake::Own(ev)
                }
                ev = &mut child_ev => LeaderWake::Children(ev),
                r = self.snap.changed() => LeaderWake::Session(r.is_ok()),
            };
            if !matches!(wake, LeaderWake::Task(_)) {
                self.task_handle = task;
            }
            match wake {
                LeaderWake::Command(cmd) => self.on_command(cmd),
                LeaderWake::Task(end) => {
                    match end {
                        Ok(TaskEnd::Done(Err(e))) => {
                            tracing::warn!(error = %e, "leadership task failed")
                        }
                        Err(e) => tracing::warn!(error = %e, "leadership task panicked"),
                        _ => {}
                    }
                    return self.release().await.map(Some);
                }
                LeaderWake::Lost(reason) => {
                    let watches = own_ev.into_iter().chain([kept(child_ev)]);
                    return self.on_lost(own, generation, reason, watches).await;
                }
                LeaderWake::Own(ev) => {
                    MetricCells::inc(&self.shared.metrics.leader_watch_events);
                    crate::telemetry::watch_notification(self.shared.labels());
                    return match ev.event_type {
                        EventType::NodeDeleted => self.node_gone(own).map(Some),
                        EventType::Session => Err(self.wait_generation_end(generation).await),
                        _ => Ok(None),
                    };
                }
                LeaderWake::Children(ev) => {
                    if let Some(ev) = ev {
                        MetricCells::inc(&self.shared.metrics.leader_watch_events);
                        crate::telemetry::watch_notification(self.shared.labels());
                        if ev.event_type == EventType::Session {
                            return Err(self.wait_generation_end(generation).await);
                        }
                    }
                    // The own-node watch stays set: the new look at the children is then one
                    // request, with no removeWatches and no second read before it.
                    self.keep_armed(generation, own, stat, own_ev);
                    return Ok(None);
                }
                LeaderWake::Session(true) => {}
                LeaderWake::Session(false) => return Err(Stop::SessionClosed),
            }
        }
    }

    /// The term's loss signal resolved while holding.
    pub(super) async fn on_lost(
        &mut self,
        own: &OwnNode,
        generation: u64,
        reason: LossReason,
        watches: impl IntoIterator<Item = WatchFuture>,
    ) -> Result<Option<Step>, Stop> {
        if self.releases_terms() {
            // The task ends with the loss; release after it.
            return self.release().await.map(Some);
        }
        match reason {
            LossReason::Suspended | LossReason::LeaseExpired => {
                self.stepped_down(own, generation).await
            }
            LossReason::ClientClosed => Err(Stop::SessionClosed),
            LossReason::Closed | LossReason::Resigned => {
                // The close command is on its way, or here.
                self.closing = true;
                self.held_watches.extend(watches);
                Err(Stop::Close)
            }
            _ => Ok(None),
        }
    }
}
