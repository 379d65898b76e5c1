//! The race election's step: every candidate creates the same EPHEMERAL node; the one whose
//! create lands leads, the others watch the node and race again when it goes.
//!
//! The winning create is one multi with a setData of the epoch node beside it, so the epoch's
//! version moves at exactly the zxid that created the node: `check(epoch, that version)` then
//! proves that no other candidate has won since, which the node's existence alone cannot (the
//! path is the same for every winner).

use rzk_client::{Client, CreateMode, EventType, MultiWriteError, MultiWriteResult, Stat};

use super::{watch_future, Driver, OwnNode, Step, Stop, WatchFuture};
use crate::driver::status::{ElectionEvent, MetricCells};
use crate::loss::LossReason;
use crate::naming;
use crate::term::control::Command;
use crate::term::guard::Fence;
use crate::zk_error::{classify, normalize, Class, ZkError};
use crate::{driver::status::Status, Error};

/// What one look at the race node found.
enum Found {
    /// Our node, won by this session: the node, its token (czxid) and the watch on it.
    Ours(OwnNode, i64, WatchFuture),
    /// Another session's node (an earlier session of ours included): wait for it to go.
    Held(WatchFuture),
    /// No node, or nothing known yet: race (again).
    Race,
}

/// What woke a race leader.
enum Wake {
    Command(Option<Command>),
    Lost(LossReason),
    Own(rzk_client::WatchedEvent),
    /// The session snapshot changed (`false`: its sender is gone).
    Session(bool),
}

impl Driver {
    fn epoch_path(&self) -> String {
        self.race_epoch.clone().expect("the race step runs only with an epoch node")
    }

    /// Races for the node, leads while it is ours, waits while another holds it; returns only
    /// to stop.
    pub(super) async fn race(&mut self) -> Result<Step, Stop> {
        if self.own.is_none() {
            self.shared.set_status(Status::Joining);
        }
        loop {
            let (client, generation, sid) = self.connected().await?;
            if let Some(own) = self.own.take_if(|o| o.generation != generation) {
                // Gone with its session, or (if that session lingers) deleted below while the
                // epoch still proves it ours.
                self.lose_term(LossReason::SessionExpired);
                self.stale_fenced.push(own);
            }
            self.cleanup_fenced(&client, generation).await?;
            // A node this session may hold (a lost reply, a step-down) is looked at, not raced
            // for: a second create would only fail against it.
            let found = match self.own.is_some() {
                true => self.look(&client, generation, sid.0).await?,
                false => self.try_win(&client, generation, sid.0).await?,
            };
            match found {
                Found::Ours(own, token, watch) => {
                    if let Some(step) = self.lead_race(own, token, generation, watch).await? {
                        return Ok(step);
                    }
                }
                Found::Held(watch) => self.wait_holder(generation, watch).await?,
                Found::Race => {}
            }
        }
    }

    /// Sends the winning multi `[create(node, EPHEMERAL, id), setData(epoch, id)]`. A node
    /// already there is looked at (and watched); a lost reply is resolved by looking too.
    async fn try_win(&mut self, client: &Client, generation: u64, sid: i64) -> Result<Found, Stop> {
        let path = self.path().to_string();
        let epoch = self.epoch_path();
        let data = self.options.id.clone().into_bytes();
        let acl = self.acls.at(&path);
        let ephemeral = CreateMode::Ephemeral.with_acls(acl.acls());
        MetricCells::inc(&self.shared.metrics.creates);
        let sent = crate::clock::now();
        let won = async {
            let mut multi = client.new_multi_writer();
            multi.add_create(&path, &data, &ephemeral)?;
            multi.add_set_data(&epoch, &data, None)?;
            multi.commit().await
        };
        self.race_unsettled = true;
        let reply = self.wait(generation, won).await?;
        if !matches!(reply, Err(MultiWriteError::RequestFailed { .. })) {
            self.race_unsettled = false;
        }
        let (e, at) = match reply {
            Ok(results) => {
                self.session.shared().ack(generation, sent);
                // The epoch's new version is our fence. (Without the reply's stat, the look
                // below finds out as after a lost reply.)
                self.own = results.into_iter().find_map(|r| match r {
                    MultiWriteResult::SetData { stat } => {
                        Some(self.race_node(generation, sid, stat.version))
                    }
                    _ => None,
                });
                return self.look(client, generation, sid).await;
            }
            Err(MultiWriteError::OperationFailed { index: 0, source: ZkError::NodeExists }) => {
                return self.look(client, generation, sid).await;
            }
            Err(MultiWriteError::OperationFailed { index: 0, source: ZkError::NoNode }) => {
                self.create_race_parent(client, generation).await?;
                return Ok(Found::Race);
            }
            Err(MultiWriteError::OperationFailed { index: 1, source: ZkError::NoNode }) => {
                self.create_epoch(client, generation).await?;
                return Ok(Found::Race);
            }
            Err(MultiWriteError::OperationFailed { index: 1, source }) => (source, epoch),
            Err(MultiWriteError::OperationFailed { source, .. }) => (source, path),
            Err(MultiWriteError::RequestFailed { source }) => (normalize(source), path),
        };
        if classify(&e) == Class::ConnectionLoss {
            // Whether it landed is unknown: look once connected (a node our session owns
            // whose epoch moved at its czxid is ours).
            self.ride_out(generation, &e).await?;
            return self.look(client, generation, sid).await;
        }
        self.recover(generation, e, "racing for the node", &at).await?;
        Ok(Found::Race)
    }

    /// Our race node in `generation`, fenced by the epoch at `version`.
    fn race_node(&self, generation: u64, sid: i64, version: i32) -> OwnNode {
        let path = self.path().to_string();
        let epoch = self.epoch_path();
        OwnNode {
            name: naming::name_of(&path).to_string(),
            fence: Fence::epoch(&path, &epoch, version),
            path,
            generation,
            session_id: rzk_client::SessionId(sid),
            created: None,
        }
    }

    /// Reads the node with a watch and says whose it is. Our session's node is ours only if
    /// this generation won it: the multi's reply said so, or the epoch moved at its czxid.
    async fn look(&mut self, client: &Client, generation: u64, sid: i64) -> Result<Found, Stop> {
        let path = self.path().to_string();
        let sent = crate::clock::now();
        let read = self.wait_op(generation, client.get_and_watch_data(&path)).await?;
        crate::telemetry::evaluation(self.shared.labels());
        // Whatever an unsettled multi did, this read shows it: no node, another's, or ours
        // (settled once adopted, or deleted).
        let ours = matches!(&read, Ok((_, stat, _)) if stat.ephemeral_owner == sid);
        if !ours && matches!(read, Ok(_) | Err(ZkError::NoNode)) {
            self.race_unsettled = false;
        }
        let (stat, watch) = match read {
            Ok((_, stat, w)) => (stat, watch_future(w)),
            Err(ZkError::NoNode) => {
                self.race_node_gone();
                return Ok(Found::Race);
            }
            Err(e) => {
                self.recover(generation, e, "reading the race node", &path).await?;
                return Ok(Found::Race);
            }
        };
        self.session.shared().ack(generation, sent);
        if !naming::is_session_owner(stat.ephemeral_owner) {
            self.race_node_gone();
            return Err(Stop::Fail(Error::NotEphemeral { path }));
        }
        if stat.ephemeral_owner != sid {
            self.race_node_gone();
            return Ok(Found::Held(watch));
        }
        let own = match self.own.take() {
            Some(own) => own,
            None => match self.adopt(client, generation, sid, &stat).await? {
                Some(own) => own,
                None => return Ok(Found::Race),
            },
        };
        self.race_unsettled = false;
        Ok(Found::Ours(own, stat.czxid, watch))
    }

    /// A node of our session whose win we did not see: ours if the epoch moved at its czxid
    /// (then at the epoch's version). Otherwise the epoch moved after it, by something that
    /// does not race by this protocol: the node is deleted and we race again.
    async fn adopt(
        &mut self,
        client: &Client,
        generation: u64,
        sid: i64,
        node: &Stat,
    ) -> Result<Option<OwnNode>, Stop> {
        let epoch = self.epoch_path();
        match self.wait_op(generation, client.get_data(&epoch)).await? {
            Ok((_, stat)) if stat.mzxid == node.czxid => {
                return Ok(Some(self.race_node(generation, sid, stat.version)))
            }
            Ok(_) | Err(ZkError::NoNode) => {}
            Err(e) => {
                self.recover(generation, e, "reading the epoch node", &epoch).await?;
                return Ok(None);
            }
        }
        tracing::warn!(node = %self.path(), "our race node without its epoch; deleting it");
        self.delete_unfenced(client, generation, node).await.map(|()| None)
    }

    /// Deletes the race node `node`, owned by a session of ours, at its version. Only the
    /// session that created it can own the node at the path, so the owner proves it ours where
    /// the epoch no longer can.
    async fn delete_unfenced(
        &mut self,
        client: &Client,
        generation: u64,
        node: &Stat,
    ) -> Result<(), Stop> {
        let path = self.path().to_string();
        match self.wait_op(generation, client.delete(&path, Some(node.version))).await? {
            Ok(()) | Err(ZkError::NoNode) | Err(ZkError::BadVersion) => Ok(()),
            Err(e) => self.recover(generation, e, "deleting the race node", &path).await,
        }
    }

    /// A fenced delete's check failed: the node is still ours if the session that won it owns
    /// it (the epoch was deleted or moved under us by something that does not race by this
    /// protocol); then it is deleted by owner, or it would block every candidate until that
    /// session ends.
    async fn delete_if_owned(
        &mut self,
        client: &Client,
        generation: u64,
        own: &OwnNode,
    ) -> Result<(), Stop> {
        match self.wait_op(generation, client.get_data(&own.path)).await? {
            Ok((_, stat)) if stat.ephemeral_owner == own.session_id.0 => {
                tracing::warn!(node = %own.path, "our race node's epoch moved; deleting it");
                self.delete_unfenced(client, generation, &stat).await
            }
            _ => Ok(()),
        }
    }

    /// At close, with no node known to be ours: a winning multi interrupted by the close (or
    /// whose reply was lost) may have landed. A node our session owns whose epoch moved at its
    /// czxid is deleted, fenced.
    pub(super) async fn release_unseen_win(&mut self) -> Result<(), Stop> {
        if !std::mem::take(&mut self.race_unsettled) {
            return Ok(());
        }
        let (client, generation, sid) = {
            let s = self.snap.borrow();
            match (&s.client, s.session_id) {
                (Some(c), Some(sid)) => (c.clone(), s.generation, sid.0),
                _ => return Ok(()),
            }
        };
        let path = self.path().to_string();
        let stat = match self.wait_op(generation, client.get_data(&path)).await? {
            Ok((_, stat)) if stat.ephemeral_owner == sid => stat,
            _ => return Ok(()),
        };
        match self.adopt(&client, generation, sid, &stat).await? {
            Some(own) => self.delete_fenced(&client, generation, &own).await,
            None => Ok(()),
        }
    }

    /// Our race node is gone (or another's): the term, if any, ends.
    fn race_node_gone(&mut self) {
        if let Some(own) = self.own.take() {
            let _ = self.node_gone(&own);
        }
    }

    /// Claims (or keeps, or resumes) the term on our node and holds it until something ends
    /// it; `Ok(None)` means look again.
    async fn lead_race(
        &mut self,
        own: OwnNode,
        token: i64,
        generation: u64,
        mut watch: WatchFuture,
    ) -> Result<Option<Step>, Stop> {
        let reconnects = self.snap.borrow().reconnects;
        self.own = Some(own.clone());
        let keep = self
            .term
            .as_ref()
            .filter(|t| t.token.0 == token && t.generation == generation && t.loss().is_none());
        let term = match keep {
            Some(t) => t.clone(),
            None if !self.lease_fresh(generation) => {
                self.held_watches.push(watch);
                return self.stepped_down(&own, generation).await;
            }
            None => {
                let resumed = self.term.as_ref().is_some_and(|t| t.token.0 == token);
                self.issue_term(&own, token, resumed)
            }
        };
        // `term` stays alive while held: its last handle's drop would end it.
        let lost = crate::term::leadership::Leadership { inner: term.clone() }.lost();
        tokio::pin!(lost);
        self.shared.decided();
        loop {
            match self.check(generation, Some(reconnects)) {
                Ok(()) => {}
                Err(Stop::Reconnected) => return Ok(None),
                Err(stop) => {
                    self.held_watches.push(watch);
                    return Err(stop);
                }
            }
            let wake = tokio::select! {
                biased;
                cmd = self.cmd_rx.recv() => Wake::Command(cmd),
                reason = &mut lost => Wake::Lost(reason),
                ev = &mut watch => Wake::Own(ev),
                r = self.snap.changed() => Wake::Session(r.is_ok()),
            };
            match wake {
                Wake::Command(cmd) => self.on_command(cmd),
                Wake::Lost(reason) => {
                    if reason == LossReason::NodeDeleted {
                        // A fence check failed (a guarded write's): the node may still be
                        // ours while the epoch moved on. Forget it; the next look adopts it
                        // only if the epoch still proves it ours, else deletes it and races.
                        self.own = None;
                        self.race_unsettled = true;
                    }
                    return self.on_lost(&own, generation, reason, [watch]).await;
                }
                Wake::Own(ev) => {
                    MetricCells::inc(&self.shared.metrics.leader_watch_events);
                    crate::telemetry::watch_notification(self.shared.labels());
                    return match ev.event_type {
                        EventType::NodeDeleted => {
                            self.node_gone(&own)?;
                            Ok(None)
                        }
                        EventType::Session => Err(self.wait_generation_end(generation).await),
                        // Its data changed: look again (it is still ours while it exists).
                        _ => Ok(None),
                    };
                }
                Wake::Session(true) => {}
                Wake::Session(false) => return Err(Stop::SessionClosed),
            }
        }
    }

    /// Another session holds the node: wait for it to go (every waiter is woken then, and
    /// races), a new connection, or a stop.
    async fn wait_holder(&mut self, generation: u64, watch: WatchFuture) -> Result<(), Stop> {
        let reconnects = self.snap.borrow().reconnects;
        let holder = naming::name_of(self.path()).to_string();
        self.shared.set_status(Status::Following { position: 1 });
        self.shared.decided();
        self.shared.emit(ElectionEvent::Following { position: 1, predecessor: holder });
        let ev = match self.wait_ext(generation, Some(reconnects), watch).await {
            Ok(ev) => ev,
            Err(Stop::Reconnected) => return Ok(()),
            Err(stop) => return Err(stop),
        };
        if ev.event_type == EventType::Session {
            return Err(self.wait_generation_end(generation).await);
        }
        MetricCells::inc(&self.shared.metrics.wakeups);
        crate::telemetry::watch_notification(self.shared.labels());
        Ok(())
    }

    /// Creates the race node's parent as a container (Curator's
    /// `creatingParentContainersIfNeeded`).
    async fn create_race_parent(&mut self, client: &Client, generation: u64) -> Result<(), Stop> {
        let parent = naming::parent_of(self.path()).to_string();
        self.create_container(client, generation, parent, "creating the parent").await
    }

    /// Creates the epoch node (PERSISTENT: its version must outlive every candidate).
    async fn create_epoch(&mut self, client: &Client, generation: u64) -> Result<(), Stop> {
        let epoch = self.epoch_path();
        let acl = self.acls.at(&epoch);
        let persistent = CreateMode::Persistent.with_acls(acl.acls());
        match self.wait_op(generation, client.create(&epoch, b"", &persistent)).await? {
            Ok(_) | Err(ZkError::NodeExists) => Ok(()),
            Err(ZkError::NoNode) => self.create_race_parent(client, generation).await,
            Err(e) => self.recover(generation, e, "creating the epoch node", &epoch).await,
        }
    }

    /// Deletes the race nodes of older sessions that are still ours.
    pub(super) async fn cleanup_fenced(
        &mut self,
        client: &Client,
        generation: u64,
    ) -> Result<(), Stop> {
        for own in std::mem::take(&mut self.stale_fenced) {
            self.delete_fenced(client, generation, &own).await?;
        }
        Ok(())
    }

    /// Deletes a race node in one multi with its fence, so that another candidate's node at
    /// the same path is never deleted: `[check(node), check(epoch, version), delete(node)]`.
    /// A failed check means it is not ours any more, unless this session still owns it. Retried
    /// on connection loss while the generation lives; if it ends first, the node is owed to the
    /// next session.
    pub(super) async fn delete_fenced(
        &mut self,
        client: &Client,
        generation: u64,
        own: &OwnNode,
    ) -> Result<(), Stop> {
        loop {
            MetricCells::inc(&self.shared.metrics.deletes);
            let delete = async {
                let mut multi = client.new_multi_writer();
                for (path, version) in own.fence.checks() {
                    multi.add_check_version(path, *version)?;
                }
                multi.add_delete(&own.path, None)?;
                multi.commit().await
            };
            let e = match self.wait(generation, delete).await {
                Ok(Ok(_)) => return Ok(()),
                Ok(Err(MultiWriteError::OperationFailed { .. })) => {
                    return self.delete_if_owned(client, generation, own).await
                }
                Ok(Err(MultiWriteError::RequestFailed { source })) => normalize(source),
                Err(stop) => return Err(self.owe_fenced(own, stop)),
            };
            match self.ride_out(generation, &e).await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::warn!(error = %e, node = %own.path, "delete failed");
                    return Ok(());
                }
                Err(stop) => return Err(self.owe_fenced(own, stop)),
            }
        }
    }

    /// A fenced delete interrupted by the end of its generation is owed to the next session.
    fn owe_fenced(&mut self, own: &OwnNode, stop: Stop) -> Stop {
        if matches!(stop, Stop::NewGeneration) {
            self.stale_fenced.push(own.clone());
        }
        stop
    }
}
