//! Following: watching the predecessor (or, for comparison, the whole parent) until it may be
//! our turn, with our own node's ownership check and watch armed off the critical path, and
//! the grant on the predecessor's deletion when the last listing proves it.

use zookeeper_client::{Client, EventType, OneshotWatcher, Stat, StateWatcher, WatchedEvent};

use super::{watch_future, Armed, Driver, OwnNode, Stop};
use crate::event::{ElectionEvent, MetricCells};
use crate::naming;
use crate::zk_error::{normalize, ZkError};
use crate::Status;

/// What woke a follower.
enum Woke {
    Predecessor(WatchedEvent),
    Own(WatchedEvent),
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
    /// Watches the node before ours and waits for it to change. `position` is the count of
    /// blocking nodes before ours in the listing that decided to follow.
    pub(super) async fn follow(
        &mut self,
        client: &Client,
        generation: u64,
        own: &OwnNode,
        predecessor: String,
        position: usize,
        herd_watch: Option<OneshotWatcher>,
    ) -> Result<Followed, Stop> {
        let pred_path = naming::child_path(self.path(), &predecessor);
        let reconnects = self.snap.borrow().reconnects;
        // Subscribed before the predecessor's watch is set: any connection change from here on
        // shows in it at once (the client publishes a state before it delivers the events
        // that follow it), where the session snapshot learns of it a task hop later.
        let mut connection = client.state_watcher();
        let sole_blocker = position == 1
            && herd_watch.is_none()
            && self.releases_terms()
            && self.shared.rule.blockers_only_leave();
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
        self.shared.emit(ElectionEvent::Following { position, predecessor });
        // Our own node's watch wakes us too: a follower whose node was deleted rejoins at
        // once instead of waiting for its predecessor. It is polled first, so an event on our
        // node that came before the predecessor's is seen first.
        let mut armed = self.take_armed(generation, own);
        let woke = self
            .wait_ext(generation, Some(reconnects), async {
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
        let (ev, predecessor_went) = match woke {
            Ok(Woke::Predecessor(ev)) => (ev, true),
            // Deleted or changed: evaluate again (a fresh list tells which).
            Ok(Woke::Own(ev)) => (ev, false),
            Err(stop) => {
                self.armed = armed;
                return match stop {
                    Stop::Reconnected => Ok(Followed::Evaluate),
                    stop => Err(stop),
                };
            }
        };
        if ev.event_type == EventType::Session {
            self.armed = armed;
            return Err(self.wait_generation_end(generation).await);
        }
        MetricCells::inc(&self.shared.metrics.wakeups);
        crate::telemetry::watch_notification(self.shared.labels());
        let armed_ours = armed.as_ref().is_some_and(|a| {
            a.generation == generation
                && a.path == own.path
                && a.stat.ephemeral_owner == own.session_id.0
        });
        if predecessor_went
            && sole_blocker
            && armed_ours
            && ev.event_type == EventType::NodeDeleted
            && self.granted_on_event(generation, &mut connection).await
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

    /// Whether our sole blocker's deletion, just delivered to a follower whose node's ownership
    /// is checked and watched (the armed check: had our node gone before the predecessor, its
    /// event would have come first), proves that we hold without a read (docs/election.md
    /// §2.10): it does while the connection has not changed since the predecessor's watch was
    /// set (after a reconnect, the events of deletions made meanwhile come in no set order).
    async fn granted_on_event(&mut self, generation: u64, connection: &mut StateWatcher) -> bool {
        let changed = tokio::select! {
            biased;
            _ = connection.changed() => true,
            _ = std::future::ready(()) => false,
        };
        let reconnects = self.snap.borrow().reconnects;
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
        if self.armed.as_ref().is_some_and(|a| a.generation == generation && a.path == own.path) {
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
        self.armed.take().filter(|a| a.generation == generation && a.path == own.path)
    }
}
