//! The registrations of one registry: nodes that must exist, with their current data, for as
//! long as they are registered, on whichever session the manager holds.
//!
//! Invariant: an entry's `data` is the latest the application gave (register or update), and
//! it is set before the write that publishes it, so every (re-)registration writes the current
//! data, never the data of the first registration. After every (re)connection each entry's
//! node is checked: one of an earlier session (still there after a simulated expiry) is
//! replaced, a missing one created, one with old data rewritten.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use rzk_client::{Acls, Client, CreateMode, Stat};
use tokio::sync::{oneshot, Mutex};

use crate::naming;
use crate::session::acl_provider::NodeAcls;
use crate::session::ops;
use crate::session::{Session, Snapshot};
use crate::zk_error::{classify, Class, ZkError};
use crate::Error;

/// How many times one check replaces a node that other clients keep recreating before it
/// reports the conflict (Curator tries twice).
const MAX_REPLACE_ATTEMPTS: usize = 3;

/// One registered node.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// The node's path, or the prefix the server appends a sequence number to.
    pub target: String,
    pub mode: CreateMode,
    pub data: Vec<u8>,
    /// The path created; for a sequential mode, `None` until the first create.
    pub path: Option<String>,
    /// A sequential create whose reply was lost: the node may exist unrecorded.
    pub maybe_created: bool,
}

impl Entry {
    /// A registration of `target` in `mode` with `data`.
    pub fn new(target: String, mode: CreateMode, data: Vec<u8>) -> Entry {
        let sequential = matches!(mode, CreateMode::EphemeralSequential);
        let path = (!sequential).then(|| target.clone());
        Entry { target, mode, data, path, maybe_created: false }
    }

    fn persistent(&self) -> bool {
        matches!(self.mode, CreateMode::Persistent)
    }
}

struct Registrations {
    session: Session,
    acls: NodeAcls,
    entries: Mutex<BTreeMap<String, Entry>>,
}

/// The registrations, and the task that re-registers them after every (re)connection. The
/// task ends when the registrar is dropped.
pub(crate) struct Registrar {
    shared: Arc<Registrations>,
    _stop: oneshot::Sender<()>,
}

impl Registrar {
    pub fn new(session: &Session, acls: Option<Acls<'static>>) -> Registrar {
        let acls = NodeAcls::new(session, acls);
        let shared =
            Arc::new(Registrations { session: session.clone(), acls, entries: Mutex::default() });
        let (stop, stopped) = oneshot::channel();
        tokio::spawn(follow(Arc::downgrade(&shared), session.subscribe(), stopped));
        Registrar { shared, _stop: stop }
    }

    pub fn session(&self) -> &Session {
        &self.shared.session
    }

    /// Registers `entry` under `key` (replacing the data of an earlier registration of the
    /// key); returns the node's path. A fatal error removes the registration.
    pub async fn register(&self, key: &str, entry: Entry) -> Result<String, Error> {
        let mut entries = self.shared.entries.lock().await;
        let entry = match entries.remove(key) {
            Some(old) if old.target == entry.target && old.mode == entry.mode => {
                Entry { data: entry.data, ..old }
            }
            // Moved (another name or mode for the same key): the old node goes first.
            Some(old) => {
                self.shared.delete(&old).await?;
                entry
            }
            None => entry,
        };
        let entry = entries.entry(key.to_string()).or_insert(entry);
        match self.shared.settle(entry).await {
            Ok(path) => Ok(path),
            Err(e) => {
                entries.remove(key);
                Err(e)
            }
        }
    }

    /// Replaces the data of the registration `key`; returns its path.
    pub async fn update(&self, key: &str, data: Vec<u8>) -> Result<String, Error> {
        let mut entries = self.shared.entries.lock().await;
        let Some(entry) = entries.get_mut(key) else {
            return Err(Error::NoNode { path: key.to_string() });
        };
        if crate::bugs::registration_keeps_first_data() {
            let mut written = Entry { data, ..entry.clone() };
            let settled = self.shared.settle(&mut written).await;
            entry.path = written.path;
            return settled;
        }
        entry.data = data;
        self.shared.settle(entry).await
    }

    /// Removes the registration `key` and deletes its node (false if it was not registered).
    pub async fn unregister(&self, key: &str) -> Result<bool, Error> {
        let mut entries = self.shared.entries.lock().await;
        let Some(entry) = entries.remove(key) else { return Ok(false) };
        self.shared.delete(&entry).await?;
        Ok(true)
    }

    /// Removes every registration and deletes their nodes.
    pub async fn unregister_all(&self) -> Result<(), Error> {
        let mut entries = self.shared.entries.lock().await;
        let mut first_error = None;
        for (_, entry) in std::mem::take(&mut *entries) {
            if let Err(e) = self.shared.delete(&entry).await {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The registered paths, by key (sequential entries not yet created are left out).
    pub async fn paths(&self) -> Vec<(String, String)> {
        let entries = self.shared.entries.lock().await;
        entries.iter().filter_map(|(k, e)| Some((k.clone(), e.path.clone()?))).collect()
    }
}

impl Registrations {
    /// Brings `entry`'s node in line, retrying what a retry cures (each check is idempotent).
    async fn settle(&self, entry: &mut Entry) -> Result<String, Error> {
        loop {
            let client = ops::client(&self.session).await?;
            match self.check(&client, entry).await {
                Ok(path) => return Ok(path),
                Err(e) => ops::pause_or_fail(e, &entry.target).await?,
            }
        }
    }

    /// One check of `entry` on `client`'s session: the node exists, is ours, holds the data.
    async fn check(&self, client: &Client, entry: &mut Entry) -> Result<String, ZkError> {
        let owner = if entry.persistent() { 0 } else { client.session_id().0 };
        let ours = |stat: &Stat| stat.ephemeral_owner == owner;
        if entry.path.is_none() && entry.maybe_created {
            entry.path = self.find_lost_create(client, entry).await?;
            entry.maybe_created = false;
        }
        for _ in 0..MAX_REPLACE_ATTEMPTS {
            if let Some(path) = entry.path.clone() {
                match client.get_data(&path).await {
                    Ok((data, stat)) if ours(&stat) => {
                        if data != entry.data {
                            client.set_data(&path, &entry.data, Some(stat.version)).await?;
                        }
                        return Ok(path);
                    }
                    // An earlier session's node (or a stranger's): replaced, so that it is
                    // ours and goes with our session.
                    Ok((_, stat)) => match client.delete(&path, Some(stat.version)).await {
                        Ok(()) | Err(ZkError::NoNode | ZkError::BadVersion) => {}
                        Err(e) => return Err(e),
                    },
                    Err(ZkError::NoNode) => {}
                    Err(e) => return Err(e),
                }
            }
            let parents = CreateMode::Container;
            let created = ops::create_with_parents(
                client,
                &entry.target,
                &entry.data,
                entry.mode,
                parents,
                &self.acls,
            )
            .await;
            match created {
                Ok((path, _)) => {
                    entry.path = Some(path.clone());
                    return Ok(path);
                }
                Err(ZkError::NodeExists) => continue,
                Err(e) => {
                    let lost = classify(&e) == Class::ConnectionLoss;
                    entry.maybe_created |= lost && entry.path.is_none();
                    return Err(e);
                }
            }
        }
        Err(ZkError::NodeExists)
    }

    /// The node a sequential create whose reply was lost made, if it did: ours, under the
    /// prefix, with our data, recorded by no other entry.
    async fn find_lost_create(
        &self,
        client: &Client,
        entry: &Entry,
    ) -> Result<Option<String>, ZkError> {
        let parent = naming::parent_of(&entry.target);
        let prefix = naming::name_of(&entry.target);
        let children = match client.list_children(parent).await {
            Err(ZkError::NoNode) => return Ok(None),
            other => other?,
        };
        for child in children.iter().filter(|c| c.starts_with(prefix)) {
            let path = naming::child_path(parent, child);
            match client.get_data(&path).await {
                Ok((data, stat))
                    if stat.ephemeral_owner == client.session_id().0 && data == entry.data =>
                {
                    return Ok(Some(path));
                }
                Ok(_) | Err(ZkError::NoNode) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Deletes `entry`'s node if there is one (retrying a lost reply: a delete that happened
    /// answers `NoNode` the second time).
    async fn delete(&self, entry: &Entry) -> Result<(), Error> {
        let Some(path) = &entry.path else { return Ok(()) };
        loop {
            let client = ops::client(&self.session).await?;
            match client.delete(path, None).await {
                Ok(()) | Err(ZkError::NoNode) => return Ok(()),
                Err(e) => ops::pause_or_fail(e, path).await?,
            }
        }
    }

    /// Checks every entry on the current session after a (re)connection; what fails on a
    /// connection or session problem waits for the next one, other failures are logged.
    async fn recheck_all(&self) {
        let mut entries = self.entries.lock().await;
        for entry in entries.values_mut() {
            loop {
                let Ok(client) = self.session.client() else { return };
                let Err(e) = self.check(&client, entry).await else { break };
                match classify(&e) {
                    Class::ConnectionLoss | Class::SessionEnd => return,
                    Class::Transient | Class::NoNode => {
                        tokio::time::sleep(ops::RETRY_PAUSE).await;
                    }
                    Class::Fatal => {
                        tracing::error!(path = %entry.target, error = %e, "could not re-register");
                        break;
                    }
                }
            }
        }
    }
}

/// Follows the session: on every transition into a connected state (a reconnection to the
/// same session or a new session), rechecks every registration.
async fn follow(
    shared: Weak<Registrations>,
    mut snap: tokio::sync::watch::Receiver<Snapshot>,
    mut stop: oneshot::Receiver<()>,
) {
    let mut was = (snap.borrow().generation, snap.borrow().state.is_connected());
    loop {
        tokio::select! {
            biased;
            _ = &mut stop => return,
            changed = snap.changed() => if changed.is_err() { return },
        }
        let now = {
            let s = snap.borrow_and_update();
            if s.state.is_terminal() {
                return;
            }
            (s.generation, s.state.is_connected())
        };
        let reconnected = now.1 && (!was.1 || now.0 != was.0);
        was = now;
        if reconnected {
            let Some(shared) = shared.upgrade() else { return };
            tracing::debug!(generation = now.0, "re-registering after a reconnection");
            tokio::select! {
                biased;
                _ = &mut stop => return,
                () = shared.recheck_all() => {}
            }
        }
    }
}
