//! Following: watching the predecessor (or, for comparison, the whole parent) until it may be
//! our turn, with our own node's ownership check and watch armed off the critical path, and
//! the grant on the predecessor's deletion when the last listing proves it.

use rzk_client::{Client, EventType, OneshotWatcher, Stat, StateWatcher, WatchedEvent};

use super::{watch_future, Armed, Driver, OwnNode, Stop, WatchFuture};
use crate::driver::decide::{decide, Decision};
use crate::driver::rule::Rule;
use crate::driver::status::Status;
use crate::driver::status::{ElectionEvent, MetricCells};
use crate::naming;
use crate::zk_error::{normalize, ZkError};

/// What woke a follower.
enum Woke {
    Predecessor(WatchedEvent),
    Own(WatchedEvent),
    /// The blocker before our predecessor changed (the look-ahead watch).
    Ahead(WatchedEvent),
}

/// Where a listing placed a follower.
pub(super) struct Place {
    /// The nearest blocking node before ours, the one to watch.
    pub predecessor: String,
    /// How many blocking nodes sort before ours.
    pub position: usize,
    /// The nearest blocking node before the predecessor, if any: the look-ahead's to watch,
    /// where the grant applies.
    pub ahead: Option<String>,
}

/// What a follower's fresh listing, taken when the blocker before its predecessor changed,
/// showed.
enum LookAhead {
    /// No blocker but the predecessor (or none at all): its deletion grants.
    Sole,
    /// `position` blockers: watch this one, the nearest before the predecessor.
    Watch { name: String, position: usize },
    /// Anything else (the predecessor replaced, our node missing, a foreign node): evaluate.
    Evaluate,
}

/// The look-ahead's watch on the blocker before the predecessor.
enum AheadWatch {
    Set(WatchFuture),
    /// The node is gone already: list again at once.
    Gone,
    /// It could not be read (an ACL, a throttled server): follow without looking ahead.
    Unreadable,
}

/// What a follower waits on.
struct Waiting {
    /// The node we watch.
    predecessor: String,
    /// Our node's ownership check and watch, if armed.
    armed: Option<Armed>,
    pred_ev: WatchFuture,
    /// The look-ahead's next node to watch, and the watch set on it.
    ahead: Option<String>,
    ahead_ev: Option<WatchFuture>,
    /// The last listing showed no blocker but the predecessor: its deletion grants.
    sole_blocker: bool,
}

impl Waiting {
    /// Takes in what a look-ahead listing showed: the position to publish, or `None` to
    /// evaluate again.
    fn learn(&mut self, seen: LookAhead) -> Option<usize> {
        match seen {
            LookAhead::Sole => {
                self.sole_blocker = true;
                Some(1)
            }
            LookAhead::Watch { name, position } => {
                self.ahead = Some(name);
                Some(position)
            }
            LookAhead::Evaluate => None,
        }
    }
}

/// How a follow ended.
pub(super) enum Followed {
    /// Evaluate again.
    Evaluate,
    /// Our only blocker's deletion proved that we hold (docs/election.md §2.10, "Grant on
    /// the predecessor's deletion"): lead on the armed check, with no read, while the
    /// connection counted `reconnects` lasts.
    Granted { armed: Armed, reconnects: u64 },
}

impl Driver {
    /// Watches the node before ours and waits for it to change.
    ///
    /// Where the grant on the predecessor's deletion applies, a follower with more than one
    /// blocker also watches the blocker before its predecessor, and lists the children when
    /// that one changes (the look-ahead, docs/election.md §2.10): in a queue that moves, the
    /// listing then shows the predecessor alone before the predecessor's own release, so the
    /// successor takes the lock on the event, and the listing is off the handoff's path.
    pub(super) async fn follow(
        &mut self,
        client: &Client,
        generation: u64,
        own: &OwnNode,
        place: Place,
        herd_watch: Option<OneshotWatcher>,
    ) -> Result<Followed, Stop> {
        let Place { predecessor, position, ahead } = place;
        let pred_path = naming::child_path(self.path(), &predecessor);
        let reconnects = self.snap.borrow().reconnects;
        // Subscribed before the predecessor's watch is set: any connection change from here on
        // shows in it at once (the client publishes a state before it delivers the events
        // that follow it), where the session snapshot learns of it a task hop later.
        let mut connection = client.state_watcher();
        let grants = self.grants_on_event(herd_watch.is_none());
        let sole_blocker = grants && position == 1;
        let watched = match herd_watch {
            // Same owner rule as the predecessor strategy, without a watch.
            Some(w) => match self.wait_op(generation, client.check_stat(&pred_path)).await? {
                Ok(None) => return Ok(Followed::Evaluate),
                Ok(Some(stat)) => Ok((stat, w)),
                Err(e) => Err(e),
            },
            None => self
                .watch_predecessor(client, generation, own, &pred_path)
                .await?
                .map(|(_, stat, w)| (stat, w)),
        };
        let watcher = match watched {
            Ok((stat, _)) if !naming::is_session_owner(stat.ephemeral_owner) => {
                return Err(self.refuse(client, generation, vec![predecessor]).await)
            }
            Ok((_, w)) => w,
            Err(ZkError::NoNode) => return Ok(Followed::Evaluate),
            Err(e) => {
                self.recover(generation, e, "watching the predecessor", &pred_path).await?;
                return Ok(Followed::Evaluate);
            }
        };
        self.shared.set_status(Status::Following { position });
        self.shared.decided();
        self.shared.emit(ElectionEvent::Following { position, predecessor: predecessor.clone() });
        // Our own node's watch wakes us too: a follower whose node was deleted rejoins at
        // once instead of waiting for its predecessor. It is polled first, so an event on our
        // node that came before the predecessor's is seen first.
        let mut waiting = Waiting {
            armed: self.take_armed(generation, own),
            pred_ev: watch_future(watcher),
            ahead: ahead.filter(|_| grants && !sole_blocker),
            ahead_ev: None,
            sole_blocker,
            predecessor,
        };
        let woke = self.await_turn(client, generation, own, reconnects, &mut waiting).await;
        let Waiting { armed, sole_blocker, pred_ev, ahead_ev, .. } = waiting;
        let (ev, predecessor_went) = match woke {
            Ok(Some(Woke::Predecessor(ev))) => (ev, true),
            // Our node deleted or changed: evaluate again (a fresh list tells which). The
            // look-ahead's watch ends the wait only with a session event.
            Ok(Some(Woke::Own(ev) | Woke::Ahead(ev))) => (ev, false),
            Ok(None) | Err(Stop::Reconnected) => {
                self.armed = armed;
                return Ok(Followed::Evaluate);
            }
            Err(stop) => {
                if matches!(stop, Stop::Close) {
                    // Unfired watches dropped now would send removeWatches ahead of our
                    // node's delete (§2.9 C).
                    self.held_watches.extend([pred_ev].into_iter().chain(ahead_ev));
                }
                self.armed = armed;
                return Err(stop);
            }
        };
        if ev.event_type == EventType::Session {
            self.armed = armed;
            return Err(self.wait_generation_end(generation).await);
        }
        MetricCells::inc(&self.shared.metrics.wakeups);
        crate::telemetry::watch_notification(self.shared.labels());
        let proven = predecessor_went && sole_blocker && ev.event_type == EventType::NodeDeleted;
        if proven
            && armed.as_ref().is_some_and(|a| a.is_for(generation, own) && a.owned_by(own))
            && self.granted_on_event(generation, reconnects, &mut connection).await
        {
            if let Some(armed) = armed {
                return Ok(Followed::Granted { armed, reconnects });
            }
        }
        if predecessor_went {
            self.armed = armed;
        }
        self.next_in_line = predecessor_went;
        Ok(Followed::Evaluate)
    }

    /// Waits for the predecessor's or our own node's event, looking ahead meanwhile (see
    /// [`Driver::follow`]). `Ok(None)`: a look-ahead listing calls for a fresh evaluation.
    async fn await_turn(
        &mut self,
        client: &Client,
        generation: u64,
        own: &OwnNode,
        reconnects: u64,
        w: &mut Waiting,
    ) -> Result<Option<Woke>, Stop> {
        loop {
            if let Some(name) = w.ahead.take() {
                match self.watch_ahead(client, generation, &name).await? {
                    AheadWatch::Set(ev) => w.ahead_ev = Some(ev),
                    AheadWatch::Gone => {
                        if !self.look_ahead(client, generation, own, w).await? {
                            return Ok(None);
                        }
                        continue;
                    }
                    AheadWatch::Unreadable => {
                        tracing::debug!(node = %name, "the look-ahead cannot read the node");
                    }
                }
            }
            let (has_armed, has_ahead) = (w.armed.is_some(), w.ahead_ev.is_some());
            let (armed, pred_ev, ahead_ev) = (&mut w.armed, &mut w.pred_ev, &mut w.ahead_ev);
            let woke = self
                .wait_ext(generation, Some(reconnects), async {
                    tokio::select! {
                        biased;
                        ev = async { (&mut armed.as_mut().expect("checked").event).await },
                            if has_armed => Woke::Own(ev),
                        ev = pred_ev => Woke::Predecessor(ev),
                        ev = async { ahead_ev.as_mut().expect("checked").await },
                            if has_ahead => Woke::Ahead(ev),
                    }
                })
                .await?;
            match woke {
                Woke::Ahead(ev) if ev.event_type != EventType::Session => {
                    w.ahead_ev = None;
                    MetricCells::inc(&self.shared.metrics.wakeups);
                    crate::telemetry::watch_notification(self.shared.labels());
                    if !self.look_ahead(client, generation, own, w).await? {
                        return Ok(None);
                    }
                }
                woke => return Ok(Some(woke)),
            }
        }
    }

    /// Sets the look-ahead watch on the blocker `name`.
    async fn watch_ahead(
        &mut self,
        client: &Client,
        generation: u64,
        name: &str,
    ) -> Result<AheadWatch, Stop> {
        let path = naming::child_path(self.path(), name);
        Ok(match self.wait_op(generation, client.get_and_watch_data(&path)).await? {
            Ok((_, _, w)) => AheadWatch::Set(watch_future(w)),
            Err(ZkError::NoNode) => AheadWatch::Gone,
            Err(_) => AheadWatch::Unreadable,
        })
    }

    /// Lists the children once the blocker before our predecessor changed, takes in what the
    /// listing shows and publishes our new position; `false` means evaluate again. The
    /// predecessor alone before ours grants on its deletion, by the same proof as a first
    /// listing's: nothing new sorts ahead of ours.
    async fn look_ahead(
        &mut self,
        client: &Client,
        generation: u64,
        own: &OwnNode,
        w: &mut Waiting,
    ) -> Result<bool, Stop> {
        MetricCells::inc(&self.shared.metrics.get_children_calls);
        let path = self.shared.path.clone();
        let seen = match self.wait_op(generation, client.list_children(&path)).await? {
            Ok(children) => look(&children, own, &w.predecessor, &self.shared.rule),
            Err(_) => LookAhead::Evaluate,
        };
        let Some(position) = w.learn(seen) else { return Ok(false) };
        self.shared.set_status(Status::Following { position });
        Ok(true)
    }

    /// True for the followers the grant on the predecessor's deletion applies to: those of a
    /// releasing recipe whose blockers only leave, watching their predecessor (not the herd).
    fn grants_on_event(&self, predecessor_strategy: bool) -> bool {
        predecessor_strategy && self.releases_terms() && self.shared.rule.blockers_only_leave()
    }

    /// Whether our sole blocker's deletion, just delivered to a follower whose node's ownership
    /// is checked and watched (the armed check: had our node gone before the predecessor, its
    /// event would have come first), proves that we hold without a read (docs/election.md
    /// §2.10): it does while the connection has not changed since the predecessor's watch was
    /// set (after a reconnect, the events of deletions made meanwhile come in no set order).
    async fn granted_on_event(
        &mut self,
        generation: u64,
        reconnects: u64,
        connection: &mut StateWatcher,
    ) -> bool {
        let changed = tokio::select! {
            biased;
            _ = connection.changed() => true,
            _ = std::future::ready(()) => false,
        };
        !changed && self.check(generation, Some(reconnects)).is_ok()
    }

    /// Sets the watch on our predecessor. Unless our node's ownership check and watch are
    /// already armed, they are read alongside (off the handoff's critical path).
    async fn watch_predecessor(
        &mut self,
        client: &Client,
        generation: u64,
        own: &OwnNode,
        pred_path: &str,
    ) -> Result<Result<(Vec<u8>, Stat, OneshotWatcher), ZkError>, Stop> {
        if self.armed.as_ref().is_some_and(|a| a.is_for(generation, own)) {
            return self.wait_op(generation, client.get_and_watch_data(pred_path)).await;
        }
        let (pred, owned) = self
            .wait(generation, async {
                tokio::join!(
                    client.get_and_watch_data(pred_path),
                    client.get_and_watch_data(&own.path)
                )
            })
            .await?;
        match owned.map_err(normalize) {
            Ok((_, stat, w)) if stat.ephemeral_owner == own.session_id.0 => {
                let path = own.path.clone();
                self.armed = Some(Armed { generation, path, stat, event: watch_future(w) });
            }
            // Our node is gone: evaluating again finds it missing.
            Err(ZkError::NoNode) => return Ok(Err(ZkError::NoNode)),
            // Not ours, or not read: the check before a claim reads it again.
            _ => {}
        }
        Ok(pred.map_err(normalize))
    }

    /// The armed check of our current node, if there is one; a stale one is dropped.
    pub(super) fn take_armed(&mut self, generation: u64, own: &OwnNode) -> Option<Armed> {
        self.armed.take().filter(|a| a.is_for(generation, own))
    }
}

/// What a look-ahead listing `children` shows a follower of `predecessor` with node `own`.
fn look(children: &[String], own: &OwnNode, predecessor: &str, rule: &Rule) -> LookAhead {
    match decide(children, &own.name, rule) {
        // The predecessor is gone too; its event is on its way.
        Decision::Leader => LookAhead::Sole,
        Decision::Follow { predecessor: p, position, ahead } if p == predecessor => match ahead {
            None => LookAhead::Sole,
            Some(name) => LookAhead::Watch { name, position },
        },
        _ => LookAhead::Evaluate,
    }
}
