//! [`TreeCache`]: the public face of one cache engine.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::engine;
use super::event::{CacheEvents, CachedNode};
use super::options::CacheOptions;
use super::state::{CacheState, Status};
use crate::naming;
use crate::session::Session;
use crate::Error;

struct Handle {
    shared: Arc<CacheState>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.task.abort();
        self.shared.end(None);
    }
}

/// A subtree mirrored in memory, with Curator's `CuratorCache` semantics: every node at and
/// below the path (or the path alone, [`CacheOptions::single_node`]), `Added` / `Updated` /
/// `Removed` events in the order they were applied, one `Initialized` after the first load.
///
/// It stays equal to the server across disconnects, session expiry, server restarts and
/// delete-and-recreate: the watch is set before the read it covers, every event is followed
/// by a read of what it names, and after every reconnect or new session the whole subtree is
/// read again and only its difference from what the cache held is reported (a node deleted
/// and created again meanwhile is `Removed`, then `Added`). No node is ever reported twice in
/// the same state. Watches are persistent (`addWatch`) where the server has them, one-shot
/// otherwise ([`CacheWatch`](crate::cache::CacheWatch)).
///
/// Cheap to clone; the cache stops when [`TreeCache::close`] is called or the last clone is
/// dropped, or when its session closes.
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_recipes::Error> {
/// use rzk_recipes::{cache::{CacheEvent, CacheOptions, TreeCache}, session::{Session, SessionConfig}};
///
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
/// let cache = TreeCache::new(&session, "/cluster-config", CacheOptions::tree())?;
/// let mut events = cache.events();
/// while let Some(item) = events.next().await {
///     match item? {
///         CacheEvent::Added { path, node } | CacheEvent::Updated { path, node, .. } => {
///             println!("{path} = {}", String::from_utf8_lossy(&node.data));
///         }
///         CacheEvent::Removed { path, .. } => println!("{path} removed"),
///         CacheEvent::Initialized => println!("{} nodes loaded", cache.snapshot().len()),
///         _ => {}
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct TreeCache {
    inner: Arc<Handle>,
}

impl std::fmt::Debug for TreeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeCache").field("path", &self.path()).finish()
    }
}

impl TreeCache {
    /// Starts caching `path` on `session` (in the background, on the current tokio runtime).
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path or a limit of 0.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn new(session: &Session, path: &str, options: CacheOptions) -> Result<Self, Error> {
        naming::validate_path(path)?;
        if options.max_nodes == 0 || options.event_queue == 0 {
            return Err(Error::BadArguments("a cache limit of 0".into()));
        }
        let shared = Arc::new(CacheState::new(path.to_string(), options));
        let task = tokio::spawn(engine::run(shared.clone(), session.clone()));
        Ok(TreeCache { inner: Arc::new(Handle { shared, task }) })
    }

    /// The cache path.
    pub fn path(&self) -> &str {
        &self.inner.shared.path
    }

    /// The events from now on, preceded by the current content (see [`CacheEvents`]).
    pub fn events(&self) -> CacheEvents {
        self.inner.shared.subscribe()
    }

    /// Every cached node by path (a copy).
    pub fn snapshot(&self) -> BTreeMap<String, CachedNode> {
        self.inner.shared.snapshot()
    }

    /// The cached node at `path`, if any.
    pub fn get(&self, path: &str) -> Option<CachedNode> {
        self.inner.shared.get(path)
    }

    /// True once the first load is complete.
    pub fn is_initialized(&self) -> bool {
        *self.inner.shared.status.borrow() == Status::Ready
    }

    /// Waits for the first complete load.
    ///
    /// # Errors
    /// The cache's failure ([`Error::NoAuth`] on the cache path, [`Error::CacheFull`], ...);
    /// [`Error::Closed`] if it was closed (or its session) first.
    ///
    /// # Cancellation safety
    /// Safe: it only waits.
    pub async fn initialized(&self) -> Result<(), Error> {
        let mut status = self.inner.shared.status.subscribe();
        let s = status.wait_for(|s| *s != Status::Loading).await.map_err(|_| Error::Closed)?;
        match &*s {
            Status::Ready => Ok(()),
            Status::Ended(Some(e)) => Err(e.clone()),
            _ => Err(Error::Closed),
        }
    }

    /// Stops the cache: its streams end, its snapshot stays as it was.
    pub fn close(&self) {
        self.inner.task.abort();
        self.inner.shared.end(None);
    }
}
