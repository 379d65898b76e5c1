//! Evaluating: reading the children and deciding to lead, follow, rejoin or refuse.

use rzk_client::{Client, OneshotWatcher, Stat};

use super::follow::{Followed, Place};
use super::{watch_future, Armed, Driver, OwnNode, Prefetched, Step, Stop, WatchFuture};
use crate::driver::decide::{decide, Decision};
use crate::driver::election_options::WatchStrategy;
use crate::driver::status::{ElectionEvent, MetricCells};
use crate::loss::LossReason;
use crate::naming;
use crate::telemetry;
use crate::zk_error::{normalize, ZkError};
use crate::Error;

/// What one read of the children gave: the names, the herd strategy's children watch, and
/// the reads a likely leader sent alongside.
struct Listing {
    children: Vec<String>,
    herd_watch: Option<OneshotWatcher>,
    prefetched: Option<Prefetched>,
}

impl Driver {
    /// Reads the children and acts on the decision, until a step other than following comes.
    pub(super) async fn evaluate(&mut self) -> Result<Step, Stop> {
        loop {
            if self.releases_terms() && self.term.is_some() && !self.term_active() {
                return self.release().await;
            }
            let generation = self.snap.borrow().generation;
            let own = match &self.own {
                Some(o) if o.generation == generation => o.clone(),
                _ => return Ok(Step::Join),
            };
            let Some(client) = self.client_for(generation) else { return Ok(Step::Join) };
            MetricCells::inc(&self.shared.metrics.evaluations);
            telemetry::evaluation(self.shared.labels());
            MetricCells::inc(&self.shared.metrics.get_children_calls);
            let listing = match self.list(&client, generation, &own).await? {
                Ok(listing) => listing,
                // The parent was deleted or reaped (CURATOR-724): rejoin.
                Err(ZkError::NoNode) => return self.node_gone(&own),
                Err(e) => {
                    let path = self.path().to_string();
                    self.recover(generation, e, "getChildren", &path).await?;
                    continue;
                }
            };
            if let Some(step) = self.act(&client, generation, &own, listing).await? {
                return Ok(step);
            }
        }
    }

    /// Reads the children. A likely leader (just created, next in line, or leading already)
    /// reads them with the leader's children watch, and needs the ownership check and the
    /// own-node watch only if neither is at hand: a node whose create reply came is ours by
    /// construction, and a follower armed both while it waited. An uncontended acquire then
    /// sends one read, and a handoff one round trip after the event. If it turns out to follow
    /// after all, the children watch is kept unused (see `spare_child_watch`).
    async fn list(
        &mut self,
        client: &Client,
        generation: u64,
        own: &OwnNode,
    ) -> Result<Result<Listing, ZkError>, Stop> {
        let path = self.shared.path.clone();
        let next_in_line = std::mem::take(&mut self.next_in_line);
        let just_created = std::mem::take(&mut self.just_created);
        if self.options.strategy == WatchStrategy::Herd {
            let listed = self.wait_op(generation, client.list_and_watch_children(&path)).await?;
            return Ok(listed.map(|(children, w)| Listing {
                children,
                herd_watch: Some(w),
                prefetched: None,
            }));
        }
        if !(next_in_line || just_created || self.term_active()) {
            let listed = self.wait_op(generation, client.list_children(&path)).await?;
            return Ok(listed.map(|children| Listing {
                children,
                herd_watch: None,
                prefetched: None,
            }));
        }
        let sent = crate::clock::now();
        let known = match self.take_armed(generation, own) {
            Some(armed) => Some((armed.stat, Some(armed.event))),
            None => own.created.map(|stat| (stat, None)),
        };
        let (listed, owned) = match known {
            // Ownership known: one request.
            Some((stat, event)) => {
                match self.wait_op(generation, client.list_and_watch_children(&path)).await {
                    Ok(Ok(listed)) => (Ok(listed), Ok((stat, event))),
                    Ok(Err(e)) => {
                        self.keep_armed(generation, own, stat, event);
                        return Ok(Err(e));
                    }
                    Err(stop) => {
                        self.keep_armed(generation, own, stat, event);
                        return Err(stop);
                    }
                }
            }
            None => {
                let (listed, owned) = self
                    .wait(generation, async {
                        tokio::join!(
                            client.list_and_watch_children(&path),
                            client.get_and_watch_data(&own.path)
                        )
                    })
                    .await?;
                let owned =
                    owned.map(|(_, stat, w)| (stat, Some(watch_future(w)))).map_err(normalize);
                (listed.map_err(normalize), owned)
            }
        };
        Ok(listed.map(|(children, child_watch)| Listing {
            children,
            herd_watch: None,
            prefetched: Some(Prefetched { sent, owned, child_watch }),
        }))
    }

    /// Acts on the decision for one listing; `Ok(None)` means evaluate again.
    async fn act(
        &mut self,
        client: &Client,
        generation: u64,
        own: &OwnNode,
        listing: Listing,
    ) -> Result<Option<Step>, Stop> {
        let Listing { children, herd_watch, prefetched } = listing;
        match decide(&children, &own.name, &self.shared.rule) {
            Decision::Foreign(names) => Err(self.refuse(client, generation, names).await),
            Decision::Orphans(names) => {
                for n in names {
                    let path = naming::child_path(self.path(), &n);
                    self.delete_node(client, generation, &path).await?;
                    self.shared.emit(ElectionEvent::OrphanDeleted { node: path });
                }
                Ok(None)
            }
            Decision::Missing => self.node_gone(own).map(Some),
            Decision::Leader => {
                let prefetched = prefetched.map(|p| (p, children));
                self.lead(own, client, generation, prefetched).await
            }
            Decision::Follow { predecessor, position, ahead } => {
                if self.term_active() {
                    // Our node is no longer first: whatever happened, we do not lead.
                    self.lose_term(LossReason::NodeDeleted);
                }
                if self.releases_terms() && self.term.is_some() {
                    return Ok(None);
                }
                // Keep the speculative ownership check and own-node watch for the wait, and the
                // children watch until it fires.
                if let Some(Prefetched { owned, child_watch, .. }) = prefetched {
                    self.spare_child_watch = Some(child_watch);
                    if let Ok((stat, event)) = owned {
                        if stat.ephemeral_owner == own.session_id.0 {
                            self.keep_armed(generation, own, stat, event);
                        }
                    }
                }
                let place = Place { predecessor, position, ahead };
                match self.follow(client, generation, own, place, herd_watch).await? {
                    Followed::Evaluate => Ok(None),
                    Followed::Granted { armed, reconnects } => {
                        self.lead_granted(own, generation, reconnects, armed).await
                    }
                }
            }
        }
    }

    /// Keeps an own-node watch, with the ownership check that came with it, as the armed check.
    pub(super) fn keep_armed(
        &mut self,
        generation: u64,
        own: &OwnNode,
        stat: Stat,
        event: Option<WatchFuture>,
    ) {
        if let Some(event) = event {
            self.armed = Some(Armed { generation, path: own.path.clone(), stat, event });
        }
    }

    /// Our node is gone: the term (if any) ends and we join again.
    pub(super) fn node_gone(&mut self, own: &OwnNode) -> Result<Step, Stop> {
        self.shared.emit(ElectionEvent::NodeGone { node: own.path.clone() });
        self.lose_term(LossReason::NodeDeleted);
        self.own = None;
        Ok(Step::Join)
    }

    /// Foreign children: refuse to lead, delete our node, fail (docs/election.md §2.7).
    pub(super) async fn refuse(
        &mut self,
        client: &Client,
        generation: u64,
        names: Vec<String>,
    ) -> Stop {
        tracing::warn!(path = %self.shared.path, ?names, "foreign nodes; refusing to lead");
        self.lose_term(LossReason::ForeignNodes);
        self.stop_task().await;
        if let Some(own) = self.own.take() {
            self.in_close = true;
            let _ = self.delete_node(client, generation, &own.path).await;
            self.in_close = false;
        }
        self.shared.emit(ElectionEvent::ForeignNodes { names: names.clone() });
        Stop::Fail(Error::ForeignNodes { path: self.shared.path.clone(), names })
    }
}
