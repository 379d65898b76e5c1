//! The task that keeps a cache equal to the server: a watch first, then a read, so that no
//! change after the read goes unseen; a read of what each event names (never trusting the
//! event for the data); and after every reconnect or new session a full read of the subtree,
//! whose difference from the model is all that is reported.

use std::collections::BTreeSet;
use std::sync::Arc;

use rzk_client::WatchedEvent;
use rzk_client::{AddWatchMode, Client, EventType, OneshotWatcher, PersistentWatcher};
use tokio::sync::mpsc;

use super::event::CachedNode;
use super::model::{child_of, depth_below};
use super::options::CacheWatch;
use super::state::CacheState;
use crate::session::ops;
use crate::session::{Session, Snapshot};
use crate::zk_error::{classify, Class, ZkError};
use crate::Error;

/// Why the engine left its current connection.
enum Stop {
    /// A connection or session problem: read everything again once connected, after a pause.
    Retry,
    /// Reconnected or a new session: read everything again now.
    Resync,
    /// The cache cannot go on.
    Fatal(Error),
}

/// How much of a node an event asks to read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Its data.
    Node,
    /// The children it has that the model lacks (and the ones it lost).
    Children,
    /// Its data and its whole subtree.
    Full,
}

/// Watch events waiting for the engine. Forwarders wait for room, so a persistent watch
/// whose events the engine cannot keep up with lags (its watcher drops events and says so),
/// and the engine reads the whole subtree again.
const EVENT_BACKLOG: usize = 1024;

/// Runs the cache until its session closes or it fails.
pub(super) async fn run(shared: Arc<CacheState>, session: Session) {
    let (tx, rx) = mpsc::channel(EVENT_BACKLOG);
    let oneshot = shared.options.watch == CacheWatch::OneShot;
    let engine = Engine {
        shared: shared.clone(),
        session,
        oneshot,
        tx,
        rx,
        persistent: None,
        stop: tokio::sync::watch::channel(()).0,
    };
    let failure = engine.run().await;
    shared.end(failure);
}

struct Engine {
    shared: Arc<CacheState>,
    session: Session,
    /// One-shot watches, chosen or forced by a server without `addWatch`.
    oneshot: bool,
    /// Every watcher forwards its events here.
    tx: mpsc::Sender<WatchedEvent>,
    rx: mpsc::Receiver<WatchedEvent>,
    /// The task forwarding the current persistent watch's events.
    persistent: Option<tokio::task::JoinHandle<()>>,
    /// Dropped with the engine, which ends the one-shot forwarders still waiting.
    stop: tokio::sync::watch::Sender<()>,
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Some(task) = self.persistent.take() {
            task.abort();
        }
    }
}

impl Engine {
    /// The failure that ended the cache, or `None` when its session closed.
    async fn run(mut self) -> Option<Error> {
        let mut pause = false;
        loop {
            if pause {
                tokio::time::sleep(ops::RETRY_PAUSE).await;
            }
            let mut states = self.session.subscribe();
            let (client, key) = connected(&mut states).await?;
            let stop = match self.sync(&client).await {
                Ok(()) => {
                    self.shared.initialized();
                    self.follow(&client, &mut states, key).await
                }
                Err(stop) => stop,
            };
            match stop {
                Stop::Retry => pause = true,
                Stop::Resync => pause = false,
                Stop::Fatal(e) => return Some(e),
            }
        }
    }

    /// Sets the watch, then reads the whole subtree.
    async fn sync(&mut self, client: &Client) -> Result<(), Stop> {
        // Every watch is set again after every reconnect, not left to the client's restore.
        // One-shot watches: a restored watch can be one the server already fired into the
        // cut connection, and a child event of ZooKeeper's was lost that way; the reads below
        // set each again (the client may then deliver an event twice: refreshes are
        // idempotent). A persistent watch is not reliably restored either (nor its events
        // during the disconnect, ZOOKEEPER-4698): a new one replaces the old, set before
        // the old is dropped, since dropping the client's last watcher of a path sends
        // RemoveWatches, which the server would apply after our AddWatch, leaving no watch
        // on the server.
        let rewatch = true;
        if !self.oneshot {
            let mode = if self.shared.options.single_node {
                AddWatchMode::Persistent
            } else {
                AddWatchMode::PersistentRecursive
            };
            let set = client.watch(&self.shared.path, mode).await;
            let old = match set {
                Ok(w) => {
                    self.persistent.replace(tokio::spawn(forward_persistent(w, self.tx.clone())))
                }
                Err(ZkError::Unimplemented) => {
                    self.oneshot = true;
                    self.persistent.take()
                }
                Err(e) => return Err(self.failed(e, &self.shared.path.clone())),
            };
            if let Some(old) = old {
                old.abort();
            }
        }
        let root = self.shared.path.clone();
        self.refresh(client, &root, Scope::Full, rewatch).await?;
        Ok(())
    }

    /// Applies watch events until the connection or the session changes.
    async fn follow(
        &mut self,
        client: &Client,
        states: &mut tokio::sync::watch::Receiver<Snapshot>,
        key: (u64, u64),
    ) -> Stop {
        loop {
            tokio::select! {
                biased;
                Some(first) = self.rx.recv() => {
                    let mut batch = vec![first];
                    while let Ok(e) = self.rx.try_recv() {
                        batch.push(e);
                    }
                    batch.retain(|e| !self.beyond_max_depth(&e.path));
                    for (path, scope) in coalesce(batch, self.shared.options.single_node) {
                        if let Err(stop) = self.refresh(client, &path, scope, true).await {
                            return stop;
                        }
                    }
                }
                changed = states.changed() => {
                    if changed.is_err() {
                        return Stop::Retry;
                    }
                    let s = states.borrow_and_update();
                    if s.state.is_terminal() {
                        return Stop::Retry;
                    }
                    if s.state.is_connected() && (s.generation, s.reconnects) != key {
                        return Stop::Resync;
                    }
                }
            }
        }
    }

    /// Reads `path` as `scope` asks, depth first, and records what it found. With `rewatch`
    /// false, one-shot watches are set only on nodes the model lacks (the others keep theirs).
    async fn refresh(
        &mut self,
        client: &Client,
        path: &str,
        scope: Scope,
        rewatch: bool,
    ) -> Result<(), Stop> {
        let single = self.shared.options.single_node;
        let mut todo = vec![(path.to_string(), scope)];
        while let Some((p, scope)) = todo.pop() {
            let watch = self.oneshot && (rewatch || self.shared.get(&p).is_none());
            let exists = scope == Scope::Children || self.read_node(client, &p, watch).await?;
            if !exists || single || scope == Scope::Node || self.at_max_depth(&p) {
                continue;
            }
            let Some(names) = self.read_children(client, &p, watch).await? else { continue };
            let held: BTreeSet<String> = self.shared.children(&p).into_iter().collect();
            let listed: BTreeSet<&String> = names.iter().collect();
            let forgets = !crate::bugs::cache_keeps_vanished_children();
            for gone in held.iter().filter(|h| forgets && !listed.contains(h)) {
                self.shared.remove_subtree(&child_of(&p, gone));
            }
            let mut next: Vec<&String> =
                names.iter().filter(|n| scope == Scope::Full || !held.contains(*n)).collect();
            next.sort();
            todo.extend(next.into_iter().rev().map(|n| (child_of(&p, n), Scope::Full)));
        }
        Ok(())
    }

    /// Reads a node into the model; false if it does not exist (or may not be read).
    async fn read_node(&mut self, client: &Client, path: &str, watch: bool) -> Result<bool, Stop> {
        loop {
            let read = if watch {
                client.get_and_watch_data(path).await.map(|(data, stat, w)| {
                    self.forward_oneshot(w);
                    (data, stat)
                })
            } else {
                client.get_data(path).await
            };
            match read {
                Ok((data, stat)) => {
                    self.shared.put(path, CachedNode { data, stat }).map_err(Stop::Fatal)?;
                    return Ok(true);
                }
                Err(ZkError::NoNode) => {
                    self.shared.remove_subtree(path);
                    if !(self.oneshot && path == self.shared.path) {
                        return Ok(false);
                    }
                    // Nothing else tells a one-shot cache that its own node is created.
                    match client.check_and_watch_stat(path).await {
                        Ok((None, w)) => {
                            self.forward_oneshot(w);
                            return Ok(false);
                        }
                        Ok((Some(_), _)) => continue,
                        Err(e) => {
                            if !self.unreadable(e, path).await? {
                                return Ok(false);
                            }
                        }
                    }
                }
                Err(e) => {
                    if !self.unreadable(e, path).await? {
                        return Ok(false);
                    }
                }
            }
        }
    }

    /// The children of a node; `None` if they may not be read (reported).
    async fn read_children(
        &mut self,
        client: &Client,
        path: &str,
        watch: bool,
    ) -> Result<Option<Vec<String>>, Stop> {
        loop {
            let read = if watch {
                client.get_and_watch_children(path).await.map(|(names, _, w)| {
                    self.forward_oneshot(w);
                    names
                })
            } else {
                client.list_children(path).await
            };
            match read {
                Ok(names) => return Ok(Some(names)),
                // Gone since its data was read: its own event removes it.
                Err(ZkError::NoNode) => return Ok(Some(Vec::new())),
                Err(e) => {
                    if !self.unreadable(e, path).await? {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// After a failed read: `Ok(true)` to try again (after a pause), `Ok(false)` to skip a
    /// node below the cache path that may not be read (reported to the subscribers); `Err` to
    /// leave the connection or end the cache.
    async fn unreadable(&self, e: ZkError, path: &str) -> Result<bool, Stop> {
        match classify(&e) {
            Class::Transient => {
                tokio::time::sleep(ops::RETRY_PAUSE).await;
                Ok(true)
            }
            Class::Fatal | Class::NoNode if path != self.shared.path => {
                self.shared.remove_subtree(path);
                self.shared.report(Error::from_zk(e, path));
                Ok(false)
            }
            _ => Err(self.failed(e, path)),
        }
    }

    fn failed(&self, e: ZkError, path: &str) -> Stop {
        match classify(&e) {
            Class::ConnectionLoss | Class::SessionEnd | Class::Transient => Stop::Retry,
            Class::NoNode | Class::Fatal => Stop::Fatal(Error::from_zk(e, path)),
        }
    }

    /// True for a node whose children the cache does not hold.
    fn at_max_depth(&self, path: &str) -> bool {
        let max = self.shared.options.max_depth;
        max.is_some_and(|max| depth_below(&self.shared.path, path).is_some_and(|d| d >= max))
    }

    /// True for an event about a node deeper than the cache holds (a recursive watch sees
    /// them all).
    fn beyond_max_depth(&self, path: &str) -> bool {
        let max = self.shared.options.max_depth;
        max.is_some_and(|max| depth_below(&self.shared.path, path).is_some_and(|d| d > max))
    }

    fn forward_oneshot(&self, w: OneshotWatcher) {
        let (tx, mut stop) = (self.tx.clone(), self.stop.subscribe());
        tokio::spawn(async move {
            tokio::select! {
                biased;
                event = w.changed() => { let _ = tx.send(event).await; }
                _ = stop.changed() => {}
            }
        });
    }
}

/// Forwards a persistent watch's events until its session ends or the cache is gone.
async fn forward_persistent(mut w: PersistentWatcher, tx: mpsc::Sender<WatchedEvent>) {
    loop {
        tokio::select! {
            biased;
            event = w.changed() => {
                // The watcher may not be polled after a terminal session state.
                let end = event.event_type == EventType::Session
                    && event.session_state.is_terminated();
                if tx.send(event).await.is_err() || end {
                    return;
                }
            }
            _ = tx.closed() => return,
        }
    }
}

/// The reads a batch of events asks for, one per path, in the order first named.
fn coalesce(batch: Vec<WatchedEvent>, single: bool) -> Vec<(String, Scope)> {
    let mut out: Vec<(String, Scope)> = Vec::new();
    for e in batch {
        let scope = match e.event_type {
            // The cache never removes its watches; a removal is an end, like a session's.
            EventType::Session
            | EventType::DataWatchRemoved
            | EventType::ChildWatchRemoved
            | EventType::PersistentWatchRemoved => continue,
            // Events were dropped: everything the watch covers (it names its own path).
            EventType::Lagged | EventType::NodeCreated if !single => Scope::Full,
            EventType::Lagged => Scope::Node,
            EventType::NodeCreated | EventType::NodeDataChanged | EventType::NodeDeleted => {
                Scope::Node
            }
            EventType::NodeChildrenChanged if single => continue,
            EventType::NodeChildrenChanged => Scope::Children,
        };
        match out.iter_mut().find(|(p, _)| *p == e.path) {
            Some((_, s)) if *s != scope => *s = Scope::Full,
            Some(_) => {}
            None => out.push((e.path, scope)),
        }
    }
    out
}

/// Waits for a connected client; `None` once the session is closed.
async fn connected(
    states: &mut tokio::sync::watch::Receiver<Snapshot>,
) -> Option<(Client, (u64, u64))> {
    let s = states
        .wait_for(|s| (s.client.is_some() && s.state.is_connected()) || s.state.is_terminal())
        .await
        .ok()?;
    if s.state.is_terminal() {
        return None;
    }
    Some((s.client.clone()?, (s.generation, s.reconnects)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rzk_client::SessionState;

    fn event(event_type: EventType, path: &str) -> WatchedEvent {
        WatchedEvent {
            event_type,
            session_state: SessionState::SyncConnected,
            path: path.into(),
            zxid: -1,
        }
    }

    /// A lagged watch asks for its whole subtree, whatever else the batch names for it.
    #[test]
    fn a_lagged_watch_reads_its_subtree_again() {
        let batch = vec![
            event(EventType::NodeDataChanged, "/app"),
            event(EventType::NodeChildrenChanged, "/app/a"),
            event(EventType::Lagged, "/app"),
        ];
        let want = [("/app".to_string(), Scope::Full), ("/app/a".to_string(), Scope::Children)];
        assert_eq!(coalesce(batch.clone(), false), want);
        let alone = vec![event(EventType::Lagged, "/app")];
        assert_eq!(coalesce(alone, false), [("/app".to_string(), Scope::Full)]);
        // A single-node cache reads its one node.
        assert_eq!(coalesce(batch, true), [("/app".to_string(), Scope::Node)]);
    }
}
