//! The lock node of a Curator `DistributedQueue` node under a lock path
//! (`<lock path>/<node name>`, EPHEMERAL): its deletion, and the wait of a consumer whose
//! head node is locked by another.

use std::sync::Arc;
use std::time::Instant;

use rzk_client::{Client, OneshotWatcher};
use tokio::sync::watch;

use crate::session::ops;
use crate::zk_error::{classify, Class, ZkError};
use crate::Error;

/// Waits for the children watch, a change among the lock nodes under `locks.0` while every
/// busy node of `locks.1` is locked (a consumer holding one may die, and its lock goes with its
/// session), or a change of the session's state; false if `deadline` passed first. Every lock
/// is watched, not only the head's: a later busy node's consumer may die first.
pub(crate) async fn woken_before(
    client: &Client,
    children: OneshotWatcher,
    locks: Option<(&str, Vec<String>)>,
    states: &mut ops::StateWatch,
    deadline: Option<Instant>,
) -> Result<bool, Error> {
    let Some((lock_path, busy)) = locks else {
        return Ok(ops::woken_before(children, states, deadline).await);
    };
    let lock_watch = match client.get_and_watch_children(lock_path).await {
        Ok((held, _, watcher)) if busy.iter().all(|b| held.contains(b)) => watcher,
        // A busy node's lock is gone already: try it again.
        Ok(_) | Err(ZkError::NoNode) => return Ok(true),
        Err(e) => return ops::pause_or_fail(e, lock_path).await.map(|()| true),
    };
    tokio::select! {
        biased;
        woke = ops::woken_before(children, states, deadline) => Ok(woke),
        _ = lock_watch.changed() => Ok(true),
    }
}

/// The lock deletes of one queue handle left to the background (their take or consume was
/// dropped). The handle's next take waits for them: its own lock would otherwise make it pass
/// over its head node, out of order.
#[derive(Clone)]
pub(crate) struct Releases(Arc<watch::Sender<usize>>);

impl Default for Releases {
    fn default() -> Self {
        Releases(Arc::new(watch::Sender::new(0)))
    }
}

impl Releases {
    /// Returns once no lock delete of the handle is left in the background.
    pub async fn settled(&self) {
        let mut pending = self.0.subscribe();
        // The sender lives in `self`: the wait cannot fail.
        let _ = pending.wait_for(|&n| n == 0).await;
    }
}

/// A lock node this consumer may hold: deleted by [`LockNode::release`], or in the background
/// when dropped; retried while the session that owns it lives (a lock left behind would keep
/// its node from every consumer until that session ends).
pub(crate) struct LockNode {
    pub client: Client,
    /// Empty once released.
    pub path: String,
    /// Created by us (false: a create whose reply was lost, which may have lost to another
    /// consumer's).
    pub ours: bool,
    /// The handle's background deletes, this one's counted while it runs.
    pub releases: Releases,
}

impl LockNode {
    /// Forgets a lock that was not created.
    pub fn disarm(&mut self) {
        self.path.clear();
    }

    /// Deletes the lock now.
    pub async fn release(mut self) {
        let path = std::mem::take(&mut self.path);
        delete_lock(self.client.clone(), path, self.ours).await;
    }
}

impl Drop for LockNode {
    fn drop(&mut self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        if !self.path.is_empty() {
            let (client, path, ours) =
                (self.client.clone(), std::mem::take(&mut self.path), self.ours);
            let releases = self.releases.clone();
            releases.0.send_modify(|n| *n += 1);
            runtime.spawn(async move {
                delete_lock(client, path, ours).await;
                releases.0.send_modify(|n| *n -= 1);
            });
        }
    }
}

/// Deletes the lock node `path`: at once if it is `ours`, otherwise (and after a lost reply)
/// only if the session of `client` owns it.
async fn delete_lock(client: Client, path: String, ours: bool) {
    if ours {
        match client.delete(&path, None).await.map_err(crate::zk_error::normalize) {
            Ok(()) | Err(ZkError::NoNode) => return,
            // A lost reply: the delete may have landed and the name been locked again since.
            Err(e) if classify(&e) == Class::ConnectionLoss => {}
            Err(e) => return lock_not_deleted(&path, &e),
        }
    }
    let owner = client.session_id().0;
    loop {
        let failed = match client.check_stat(&path).await {
            Ok(Some(stat)) if stat.ephemeral_owner == owner => {
                match client.delete(&path, Some(stat.version)).await {
                    Ok(()) | Err(ZkError::NoNode | ZkError::BadVersion) => return,
                    Err(e) => e,
                }
            }
            Ok(_) => return,
            Err(e) => e,
        };
        match classify(&failed) {
            Class::ConnectionLoss | Class::Transient => tokio::time::sleep(ops::RETRY_PAUSE).await,
            Class::SessionEnd | Class::NoNode | Class::Fatal => {
                return lock_not_deleted(&path, &failed)
            }
        }
    }
}

/// A lock delete given up: gone with its session, or refused (then it stays until the session
/// ends, and its node with it).
fn lock_not_deleted(path: &str, e: &ZkError) {
    if classify(e) == Class::Fatal {
        tracing::error!(path, "could not delete a queue lock node: {e}");
    }
}
