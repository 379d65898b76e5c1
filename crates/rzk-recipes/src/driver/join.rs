//! Joining: creating our node (Curator's protected mode), recreating a missing parent, and
//! deleting the nodes of earlier sessions and of creates whose outcome was lost.

use rzk_client::{Client, CreateMode, CreateOptions, MultiWriteResult, SessionId, Stat};

use super::{Driver, OwnNode, Step, Stop};
use crate::driver::status::{ElectionEvent, JoinInfo, MetricCells};
use crate::loss::LossReason;
use crate::naming;
use crate::zk_error::{classify, Class, ZkError};
use crate::{driver::status::Status, Error};

impl Driver {
    /// Creates our node on the current session (or keeps the one this session has), after
    /// deleting stale ones.
    pub(super) async fn join(&mut self) -> Result<Step, Stop> {
        if self.releases_terms() && self.term.is_some() {
            return self.release().await;
        }
        self.shared.set_status(Status::Joining);
        let (client, generation, sid) = self.connected().await?;
        if let Some(mut own) = self.own.take() {
            if own.generation != generation && crate::bugs::lock_on_earlier_session_node() {
                own.generation = generation;
            }
            if own.generation == generation {
                self.own = Some(own);
                return Ok(Step::Evaluate);
            }
            self.lose_term(LossReason::SessionExpired);
            self.stale_paths.push(own.path);
        }
        self.cleanup_stale(&client, generation).await?;
        let uuid = naming::new_uuid().hyphenated().to_string();
        let beside = self.shared.queue.lock().expect("poisoned").beside.take();
        match self.create_own(&client, generation, sid, &uuid, beside).await {
            Ok((own, created)) => Ok(self.joined(own, created)),
            Err(stop) => {
                // Whatever the create did, a node carrying this UUID is not ours to keep.
                self.stale_uuids.push(uuid);
                Err(stop)
            }
        }
    }

    /// Creates `_c_<uuid>-<lock>` EPHEMERAL_SEQUENTIAL until it is known to exist: after a
    /// lost reply, the children are searched for the UUID before creating again, so a create
    /// that landed is adopted, not doubled. With `beside` (a node path), it first tries the
    /// plain EPHEMERAL `_c_<uuid>-<lock><that node's sequence>`, created only if that node
    /// still exists; it queues as usual once it does not. Returns the node and, if this
    /// create's reply came, its sequence number and czxid.
    async fn create_own(
        &mut self,
        client: &Client,
        generation: u64,
        sid: SessionId,
        uuid: &str,
        beside: Option<String>,
    ) -> Result<(OwnNode, Option<(i64, i64)>), Stop> {
        let prefix = naming::create_path(self.path(), uuid, self.shared.rule.lock);
        let acl = self.acls.at(&prefix);
        let options = CreateMode::EphemeralSequential.with_acls(acl.acls());
        let data = self.options.id.clone().into_bytes();
        let mut beside = beside.and_then(|node| self.beside_sequence(node));
        let mut after_loss = false;
        loop {
            if after_loss {
                if let Some(own) = self.find_protected(client, generation, sid, uuid).await? {
                    return Ok((own, None));
                }
            }
            MetricCells::inc(&self.shared.metrics.creates);
            let sent = crate::clock::now();
            let created = match &beside {
                Some((node, seq)) => {
                    let path = format!("{prefix}{seq}");
                    let plain = CreateMode::Ephemeral.with_acls(acl.acls());
                    let fut = create_beside(client, node, &path, &data, &plain);
                    let r = self.wait_op(generation, fut).await?;
                    r.map(|stat| (stat, path, seq.parse().unwrap_or(-1)))
                }
                None => {
                    let r = self.wait_op(generation, client.create(&prefix, &data, &options));
                    r.await?.map(|(stat, seq)| (stat, format!("{prefix}{seq}"), seq.into_i64()))
                }
            };
            match created {
                Ok((stat, path, seq)) => {
                    self.session.shared().ack(generation, sent);
                    let name = naming::name_of(&path).to_string();
                    let mut own = OwnNode::queued(name, path, generation, sid);
                    // A releasing recipe's terms are short and their requests are the pair's
                    // cost: it claims on the create's reply and leaves its node to the children
                    // watch. A latch's one long term keeps the own-node watch from the claim
                    // on, so an operator's delete ends it before any successor's read returns.
                    let trusted = self.releases_terms() && stat.ephemeral_owner == sid.0;
                    own.created = trusted.then_some(stat);
                    return Ok((own, Some((seq, stat.czxid))));
                }
                // The node to sit beside is gone (or the whole path is): queue instead.
                Err(ZkError::NoNode) if beside.is_some() => beside = None,
                Err(ZkError::NoNode) => self.create_parent(client, generation).await?,
                Err(e) => {
                    after_loss = true;
                    self.recover(generation, e, "creating our node", &prefix).await?;
                }
            }
        }
    }

    /// The node path and the sequence digits of a node to create beside; `None` if the
    /// recipe's rule does not order that node.
    fn beside_sequence(&self, node: String) -> Option<(String, String)> {
        let seq = self.shared.rule.parse(naming::name_of(&node))?.0.sequence.to_string();
        Some((node, seq))
    }

    /// Recreates the election path as a container (Curator's `creatingParentContainersIfNeeded`).
    async fn create_parent(&mut self, client: &Client, generation: u64) -> Result<(), Stop> {
        let path = self.path().to_string();
        self.create_container(client, generation, path, "creating the election path").await
    }

    /// Creates `path` and its missing parents as containers and reports it recreated; `what`
    /// names the step in an error.
    pub(super) async fn create_container(
        &mut self,
        client: &Client,
        generation: u64,
        path: String,
        what: &str,
    ) -> Result<(), Stop> {
        let (made, acls) = (path.clone(), self.acls.clone());
        let client = client.clone();
        let mkdirs = async move {
            crate::session::ops::mkdirs(&client, &made, CreateMode::Container, &acls).await
        };
        match self.wait_op(generation, mkdirs).await? {
            Ok(()) => {
                self.shared.emit(ElectionEvent::ParentRecreated { path });
                Ok(())
            }
            Err(e) => self.recover(generation, e, what, &path).await,
        }
    }

    /// Publishes our node.
    fn joined(&mut self, own: OwnNode, created: Option<(i64, i64)>) -> Step {
        let (sequence, czxid) = created.unwrap_or_else(|| {
            let seq = (self.shared.rule.parse(&own.name))
                .and_then(|(r, _)| r.sequence.parse().ok())
                .unwrap_or(-1);
            (seq, -1)
        });
        let generation = own.generation;
        let info = JoinInfo { node: own.path.clone(), sequence, czxid, generation };
        tracing::debug!(node = %own.path, "joined");
        self.shared.set_our_path(Some(own.path.clone()));
        self.shared.emit(ElectionEvent::Joined {
            node: own.path.clone(),
            sequence,
            czxid,
            generation,
        });
        self.shared.joined.send_replace(Some(info));
        self.just_created = own.created.is_some();
        self.own = Some(own);
        Step::Evaluate
    }

    /// Looks for a node created by a create whose reply was lost (same UUID); adopts it if it
    /// belongs to this session.
    async fn find_protected(
        &mut self,
        client: &Client,
        generation: u64,
        sid: SessionId,
        uuid: &str,
    ) -> Result<Option<OwnNode>, Stop> {
        let prefix = naming::uuid_prefix(uuid);
        loop {
            MetricCells::inc(&self.shared.metrics.get_children_calls);
            let children = match self.wait_op(generation, client.list_children(self.path())).await?
            {
                Ok(children) => children,
                Err(ZkError::NoNode) => return Ok(None),
                Err(e) => {
                    if self.ride_out(generation, &e).await? {
                        continue;
                    }
                    tracing::debug!(error = %e, "protected find failed");
                    return Ok(None);
                }
            };
            let Some(name) = children.into_iter().find(|c| c.starts_with(&prefix)) else {
                return Ok(None);
            };
            let path = naming::child_path(self.path(), &name);
            match self.wait_op(generation, client.get_data(&path)).await? {
                Ok((_, stat)) if stat.ephemeral_owner == sid.0 => {
                    return Ok(Some(OwnNode::queued(name, path, generation, sid)))
                }
                Ok(_) | Err(ZkError::NoNode) => {
                    self.delete_node(client, generation, &path).await?;
                    return Ok(None);
                }
                Err(ZkError::ConnectionLoss) => self.wait_connected(generation).await?,
                Err(e) => {
                    tracing::debug!(error = %e, "protected find failed");
                    return Ok(None);
                }
            }
        }
    }

    /// Deletes nodes of older sessions and of create attempts with an unknown outcome.
    pub(super) async fn cleanup_stale(
        &mut self,
        client: &Client,
        generation: u64,
    ) -> Result<(), Stop> {
        for path in std::mem::take(&mut self.stale_paths) {
            self.delete_node(client, generation, &path).await?;
        }
        if self.stale_uuids.is_empty() {
            return Ok(());
        }
        MetricCells::inc(&self.shared.metrics.get_children_calls);
        let children = match self.wait_op(generation, client.list_children(self.path())).await? {
            Ok(c) => c,
            Err(ZkError::NoNode) => {
                self.stale_uuids.clear();
                return Ok(());
            }
            // Not now: the UUIDs stay for the next join or the close.
            Err(_) => return Ok(()),
        };
        let prefixes: Vec<String> =
            self.stale_uuids.iter().map(|u| naming::uuid_prefix(u)).collect();
        for name in children {
            if prefixes.iter().any(|p| name.starts_with(p)) {
                let path = naming::child_path(self.path(), &name);
                self.delete_node(client, generation, &path).await?;
                self.shared.emit(ElectionEvent::OrphanDeleted { node: path });
            }
        }
        self.stale_uuids.clear();
        Ok(())
    }

    /// Deletes a node, retrying on connection loss while the generation lives. `NoNode` is
    /// success. If the generation ends first, the path is remembered for the next session; an
    /// error no retry can cure (the ACL forbids the delete) fails the recipe.
    pub(super) async fn delete_node(
        &mut self,
        client: &Client,
        generation: u64,
        path: &str,
    ) -> Result<(), Stop> {
        loop {
            MetricCells::inc(&self.shared.metrics.deletes);
            let e = match self.wait_op(generation, client.delete(path, None)).await {
                Ok(Ok(()) | Err(ZkError::NoNode)) => return Ok(()),
                Ok(Err(e)) => e,
                Err(stop) => return Err(self.remember_undeleted(path, stop)),
            };
            match self.ride_out(generation, &e).await {
                Ok(true) => {}
                Ok(false) if classify(&e) == Class::Fatal => {
                    // The node stays (until its session ends): the recipe fails with the error
                    // rather than queue behind a node of its own no retry can delete.
                    return Err(Stop::Fail(Error::from_zk(e, path)));
                }
                Ok(false) => {
                    tracing::warn!(error = %e, path, "delete failed");
                    return Ok(());
                }
                Err(stop) => {
                    let stop = if classify(&e) == Class::SessionEnd {
                        self.stale_paths.push(path.to_string());
                        stop
                    } else {
                        self.remember_undeleted(path, stop)
                    };
                    return Err(stop);
                }
            }
        }
    }

    /// A delete interrupted by a new generation is owed to the next session.
    fn remember_undeleted(&mut self, path: &str, stop: Stop) -> Stop {
        if matches!(stop, Stop::NewGeneration) {
            self.stale_paths.push(path.to_string());
        }
        stop
    }
}

/// Creates the plain node `path` in one multi with a check that `beside` exists.
async fn create_beside(
    client: &Client,
    beside: &str,
    path: &str,
    data: &[u8],
    options: &CreateOptions<'_>,
) -> Result<Stat, ZkError> {
    let mut multi = client.new_multi_writer();
    multi.add_check_version(beside, -1)?;
    multi.add_create(path, data, options)?;
    let results = multi.commit().await?;
    results
        .into_iter()
        .find_map(|r| match r {
            MultiWriteResult::Create { stat, .. } => Some(stat),
            _ => None,
        })
        .ok_or(ZkError::Protocol("a multi create without its result".into()))
}
