//! The watches behind live pages: one persistent recursive watch per path that some open
//! page shows, shared by every page showing it, ended when the last one goes. A change sends
//! a nudge; the page fetches its content again. On a server without persistent watches
//! (before ZooKeeper 3.6) a path's pages are nudged once a second instead.
//!
//! **Invariant:** at most `max_paths` paths are watched; a page beyond it is served without
//! live updates, and the console's memory does not grow with the pages opened.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rzk_client::AddWatchMode;
use rzk_recipes::session::Session;
use tokio::sync::broadcast;

/// Nudges buffered per path: a page that misses some refreshes once, which is all it needs.
const NUDGE_BUFFER: usize = 16;

/// How often a watch task checks whether anyone still listens, and how often a server
/// without persistent watches is polled.
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// The pause before a watch is set again after its client failed.
const REWATCH_PAUSE: Duration = Duration::from_millis(500);

/// The watched paths.
pub(crate) struct Live {
    session: Session,
    max_paths: usize,
    paths: Arc<Mutex<HashMap<String, broadcast::Sender<()>>>>,
}

impl Live {
    pub fn new(session: Session, max_paths: usize) -> Live {
        Live { session, max_paths, paths: Arc::default() }
    }

    /// Nudges for every change under `path`, or `None` when `max_paths` are watched already.
    pub fn subscribe(&self, path: &str) -> Option<broadcast::Receiver<()>> {
        let mut paths = self.paths.lock().expect("poisoned");
        if let Some(tx) = paths.get(path) {
            return Some(tx.subscribe());
        }
        if paths.len() >= self.max_paths {
            return None;
        }
        let (tx, rx) = broadcast::channel(NUDGE_BUFFER);
        paths.insert(path.to_string(), tx.clone());
        let task = Watch { session: self.session.clone(), path: path.to_string(), tx };
        tokio::spawn(task.run(self.paths.clone()));
        Some(rx)
    }
}

/// One path's watch task.
struct Watch {
    session: Session,
    path: String,
    tx: broadcast::Sender<()>,
}

impl Watch {
    /// Watches until no page listens, then forgets the path.
    async fn run(self, paths: Arc<Mutex<HashMap<String, broadcast::Sender<()>>>>) {
        loop {
            self.watch_once().await;
            let mut paths = paths.lock().expect("poisoned");
            if self.tx.receiver_count() == 0 {
                paths.remove(&self.path);
                return;
            }
        }
    }

    /// One watch, on the session's current client, until it fails or nobody listens.
    async fn watch_once(&self) {
        let Ok(client) = self.session.client() else {
            return tokio::time::sleep(REWATCH_PAUSE).await;
        };
        let mut watcher = match client.watch(&self.path, AddWatchMode::PersistentRecursive).await {
            Ok(w) => w,
            Err(rzk_client::Error::Unimplemented) => return self.poll().await,
            Err(e) => {
                tracing::debug!(path = %self.path, "live watch failed: {e}");
                return tokio::time::sleep(REWATCH_PAUSE).await;
            }
        };
        let mut idle = tokio::time::interval(IDLE_CHECK);
        loop {
            tokio::select! {
                biased;
                event = watcher.changed() => {
                    // A session's end or the watch's removal is the watcher's last event.
                    if event.event_type.ends_watch() || self.tx.send(()).is_err() {
                        return;
                    }
                }
                // Checked on a clock of its own, so that a busy tree cannot keep it from firing.
                _ = idle.tick() => {
                    if self.tx.receiver_count() == 0 {
                        return;
                    }
                }
            }
        }
    }

    /// A server without persistent watches: a nudge a second while anyone listens.
    async fn poll(&self) {
        while self.tx.receiver_count() > 0 {
            tokio::time::sleep(IDLE_CHECK).await;
            let _ = self.tx.send(());
        }
    }
}
