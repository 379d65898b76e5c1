//! Curator's `DistributedDoubleBarrier`: members enter together and leave together.
//!
//! Layout: one EPHEMERAL `<path>/<uuid>` node per member (empty data) and `<path>/ready`,
//! created by the member that sees the threshold reached. Leaving follows ZooKeeper's recipe
//! as Curator 5.4 runs it: the lowest member (by name) keeps its node until it is alone,
//! watching the highest; every other deletes its node and watches the lowest. Whoever finds
//! the barrier empty deletes `ready`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rzk_client::{Acls, Client, CreateMode};

use crate::session::acl_provider::NodeAcls;

use crate::naming;
use crate::session::ops::{self, StateWatch};
use crate::session::Session;
use crate::zk_error::ZkError;
use crate::Error;

/// The name of the node that opens the barrier (Curator's `READY_NODE`).
pub(crate) const READY: &str = "ready";

/// A double barrier in the layout of Curator's `DistributedDoubleBarrier`, so Java and Rust
/// members share one: [`enter`](DistributedDoubleBarrier::enter) returns once `members`
/// members have entered, [`leave`](DistributedDoubleBarrier::leave) once all have left.
/// `members` is a threshold, not a limit: more may enter.
///
/// Our member node is ours only in the session that created it: after a session expiry, a
/// node of the earlier session is never counted as ours, and an enter still waiting enters
/// again under a new name. An enter that times out or is dropped deletes the node it created
/// (once the session is connected again, if it is not).
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_recipes::Error> {
/// use rzk_recipes::{barrier::DistributedDoubleBarrier, session::{Session, SessionConfig}};
///
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
/// let barrier = DistributedDoubleBarrier::new(&session, "/jobs/phase-1", 3)?;
/// barrier.enter().await?; // returns when 3 members have entered
/// // ... the computation ...
/// barrier.leave().await?; // returns when all of them have left
/// # Ok(()) }
/// ```
pub struct DistributedDoubleBarrier {
    session: Session,
    path: String,
    ready: String,
    members: usize,
    acls: NodeAcls,
    /// Our member node, once an enter has created (or sent the create of) it.
    ours: Arc<Mutex<Option<Member>>>,
}

/// Our member node and the session generation that owns it.
#[derive(Clone)]
struct Member {
    path: String,
    generation: u64,
    /// The create's reply came: the node exists (until the session ends).
    created: bool,
}

impl std::fmt::Debug for DistributedDoubleBarrier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DistributedDoubleBarrier")
            .field("path", &self.path)
            .field("members", &self.members)
            .finish()
    }
}

impl DistributedDoubleBarrier {
    /// A double barrier at `path` for `members` members.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path or `members == 0`.
    pub fn new(session: &Session, path: &str, members: usize) -> Result<Self, Error> {
        naming::validate_path(path)?;
        if members == 0 {
            return Err(Error::BadArguments("a double barrier needs at least 1 member".into()));
        }
        Ok(DistributedDoubleBarrier {
            session: session.clone(),
            path: path.to_string(),
            ready: naming::child_path(path, READY),
            members,
            acls: NodeAcls::new(session, None),
            ours: Arc::default(),
        })
    }

    /// The same barrier, creating its nodes with `acls` (default: the session's
    /// [`crate::session::AclProvider`]).
    pub fn with_acls(self, acls: Acls<'static>) -> Self {
        DistributedDoubleBarrier { acls: self.acls.clone().given(acls), ..self }
    }

    /// The barrier path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The name of our member node (a UUID) while we have entered.
    pub fn member(&self) -> Option<String> {
        let ours = self.ours.lock().expect("poisoned");
        ours.as_ref().map(|m| naming::name_of(&m.path).to_string())
    }

    /// Enters and waits until `members` members have entered (or `ready` exists).
    ///
    /// # Errors
    /// [`Error::Closed`] once the session is closed; `NoAuth`, `NoChildrenForEphemerals` and
    /// other fatal errors as ZooKeeper names them. Disconnects and session expiries are waited
    /// out (entering again in a new session).
    ///
    /// # Cancellation safety
    /// Safe: dropping the future deletes the member node it created, on its own task, once
    /// the session is connected.
    pub async fn enter(&self) -> Result<(), Error> {
        self.enter_until(None).await.map(drop)
    }

    /// [`DistributedDoubleBarrier::enter`], giving up after `timeout`: true once entered,
    /// false if the time ran out first, with our member node deleted again.
    ///
    /// # Errors
    /// As [`DistributedDoubleBarrier::enter`].
    ///
    /// # Cancellation safety
    /// As [`DistributedDoubleBarrier::enter`].
    pub async fn enter_timeout(&self, timeout: Duration) -> Result<bool, Error> {
        ops::bounded(timeout, |deadline| self.enter_until(deadline)).await
    }

    /// Leaves and waits until every member has left; the last one deletes `ready`.
    ///
    /// # Errors
    /// [`Error::Closed`] once the session is closed; `NoAuth` and other fatal errors as
    /// ZooKeeper names them. Disconnects and session expiries are waited out.
    ///
    /// Called without having entered (or after our session ended), it waits for the members
    /// that are in to leave.
    ///
    /// # Cancellation safety
    /// Safe: dropping the future deletes our member node (on its own task, once connected),
    /// so the others do not wait for us; we do not wait for them.
    pub async fn leave(&self) -> Result<(), Error> {
        self.leave_until(None).await.map(drop)
    }

    /// [`DistributedDoubleBarrier::leave`], giving up after `timeout`: true once all have
    /// left, false if the time ran out first. Our member node is deleted either way (the
    /// lowest member's, which it keeps while it waits, on the timeout), so nobody waits for us.
    ///
    /// # Errors
    /// As [`DistributedDoubleBarrier::leave`].
    ///
    /// # Cancellation safety
    /// As [`DistributedDoubleBarrier::leave`].
    pub async fn leave_timeout(&self, timeout: Duration) -> Result<bool, Error> {
        ops::bounded(timeout, |deadline| self.leave_until(deadline)).await
    }

    async fn enter_until(&self, deadline: Option<Instant>) -> Result<bool, Error> {
        let mut pending = InProgress { barrier: self, done: false };
        loop {
            let (client, generation, mut states) = self.connected().await?;
            let ready = match client.check_and_watch_stat(&self.ready).await {
                Ok(ready) => ready,
                Err(e) => {
                    ops::pause_or_fail(e, &self.ready).await?;
                    continue;
                }
            };
            if !self.ensure_member(&client, generation).await? {
                continue;
            }
            if ready.0.is_some() {
                pending.done = true;
                return Ok(true);
            }
            let members = match client.list_children(&self.path).await {
                Ok(names) => names.iter().filter(|n| *n != READY).count(),
                Err(e) => {
                    ops::pause_or_fail(e, &self.path).await?;
                    continue;
                }
            };
            if members >= self.members {
                let ready_acl = self.acls.at(&self.ready);
                match client
                    .create(&self.ready, &[], &CreateMode::Persistent.with_acls(ready_acl.acls()))
                    .await
                {
                    Ok(_) | Err(ZkError::NodeExists) => {
                        pending.done = true;
                        return Ok(true);
                    }
                    // Idempotent: checked again on the next round.
                    Err(e) => ops::pause_or_fail(e, &self.ready).await?,
                }
                continue;
            }
            if !ops::woken_before(ready.1, &mut states, deadline).await {
                return Ok(false);
            }
        }
    }

    /// Creates our member node in session `generation` unless it exists; false if a
    /// connection or session problem calls for another round.
    async fn ensure_member(&self, client: &Client, generation: u64) -> Result<bool, Error> {
        let path = {
            let mut ours = self.ours.lock().expect("poisoned");
            match &*ours {
                Some(m) if m.generation == generation && m.created => return Ok(true),
                // A create whose reply was lost: sent again under the same name.
                Some(m) if m.generation == generation => m.path.clone(),
                // None, or a node of an earlier session: never ours again.
                _ => {
                    let uuid = naming::new_uuid().hyphenated().to_string();
                    let path = naming::child_path(&self.path, &uuid);
                    *ours = Some(Member { path: path.clone(), generation, created: false });
                    path
                }
            }
        };
        let (mode, parents) = (CreateMode::Ephemeral, CreateMode::Container);
        let created =
            match ops::create_with_parents(client, &path, &[], mode, parents, &self.acls).await {
                Ok(_) => true,
                // Our earlier create was applied if this session owns the node.
                Err(ZkError::NodeExists) => match client.check_stat(&path).await {
                    Ok(Some(stat)) if stat.ephemeral_owner == client.session_id().0 => true,
                    Ok(Some(_)) => return Err(Error::NodeExists { path }),
                    Ok(None) => false,
                    Err(e) => return ops::pause_or_fail(e, &path).await.map(|()| false),
                },
                Err(e) => return ops::pause_or_fail(e, &path).await.map(|()| false),
            };
        if let Some(m) = self.ours.lock().expect("poisoned").as_mut() {
            m.created = created;
        }
        Ok(created)
    }

    async fn leave_until(&self, deadline: Option<Instant>) -> Result<bool, Error> {
        let mut pending = InProgress { barrier: self, done: false };
        loop {
            let (client, generation, mut states) = self.connected().await?;
            let mut names = match client.list_children(&self.path).await {
                Ok(names) => names,
                Err(ZkError::NoNode) => Vec::new(),
                Err(e) => {
                    ops::pause_or_fail(e, &self.path).await?;
                    continue;
                }
            };
            names.retain(|n| n != READY);
            names.sort_unstable();
            let ours = self.our_index(&names, generation);
            let Some(lowest) = names.first() else { break };
            // ZooKeeper's recipe, as Curator 5.4 runs it: the lowest member keeps its node and
            // waits for the highest; every other deletes its node and waits for the lowest.
            let (watch, delete) = match ours {
                Some((0, _)) if names.len() == 1 => (None, ours),
                Some((0, _)) => (names.last(), None),
                Some(_) => (Some(lowest), ours),
                None => (Some(lowest), None),
            };
            if let Some((_, path)) = delete {
                match client.delete(&path, None).await {
                    Ok(()) | Err(ZkError::NoNode) => {
                        drop(self.ours.lock().expect("poisoned").take())
                    }
                    // Idempotent: deleted on the next round.
                    Err(e) => {
                        ops::pause_or_fail(e, &path).await?;
                        continue;
                    }
                }
            }
            let Some(watch) = watch else { break };
            let watch = naming::child_path(&self.path, watch);
            match client.check_and_watch_stat(&watch).await {
                Ok((None, _)) => {}
                Ok((Some(_), watcher)) => {
                    if !ops::woken_before(watcher, &mut states, deadline).await {
                        return Ok(false);
                    }
                }
                Err(e) => ops::pause_or_fail(e, &watch).await?,
            }
        }
        loop {
            let client = ops::client(&self.session).await?;
            match client.delete(&self.ready, None).await {
                Ok(()) | Err(ZkError::NoNode) => {
                    pending.done = true;
                    return Ok(true);
                }
                Err(e) => ops::pause_or_fail(e, &self.ready).await?,
            }
        }
    }

    /// Our member's index among the sorted `names` and its path; `None` (and we are no
    /// member any more) if our node is not among them or belongs to an earlier session.
    fn our_index(&self, names: &[String], generation: u64) -> Option<(usize, String)> {
        let mut ours = self.ours.lock().expect("poisoned");
        let found = ours.as_ref().filter(|m| m.generation == generation).and_then(|m| {
            let name = naming::name_of(&m.path);
            names.iter().position(|n| n == name).map(|i| (i, m.path.clone()))
        });
        if found.is_none() {
            *ours = None;
        }
        found
    }

    /// The current client once connected, its session generation, and the session's state
    /// subscribed before it.
    async fn connected(&self) -> Result<(Client, u64, StateWatch), Error> {
        let mut states = self.session.subscribe();
        let client = ops::client(&self.session).await?;
        let generation = states.borrow_and_update().generation;
        Ok((client, generation, states))
    }
}

/// An enter or a leave in progress: dropped unfinished (timed out, failed or cancelled), it
/// deletes our member node, so that nobody counts or waits for a member that gave up.
struct InProgress<'a> {
    barrier: &'a DistributedDoubleBarrier,
    /// Entered, or left with everyone else.
    done: bool,
}

impl Drop for InProgress<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let Some(member) = self.barrier.ours.lock().expect("poisoned").take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let session = self.barrier.session.clone();
        runtime.spawn(async move {
            loop {
                let Ok(client) = ops::client(&session).await else { return };
                // A node of an earlier session went with it.
                if session.generation() != member.generation {
                    return;
                }
                match client.delete(&member.path, None).await {
                    Ok(()) | Err(ZkError::NoNode) => return,
                    Err(e) => {
                        if ops::pause_or_fail(e, &member.path).await.is_err() {
                            tracing::error!(path = member.path, "could not delete a member node");
                            return;
                        }
                    }
                }
            }
        });
    }
}
