//! [`NodeCache`]: the single-node case of the cache engine, with versioned writes.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use rzk_client::{Acls, CreateMode};

use crate::session::acl_provider::NodeAcls;

use super::event::{CacheEvent, CacheEvents, CacheItem, CachedNode};
use super::options::CacheOptions;
use super::tree::TreeCache;
use crate::counter::atomic_long::RetryPolicy;
use crate::session::ops;
use crate::session::Session;
use crate::zk_error::ZkError;
use crate::Error;

/// One node's latest value (or its absence), kept equal to the server's, and versioned
/// writes to it: seed 002's configuration node. Curator's `NodeCache` (or `CuratorCache` with
/// `SINGLE_NODE_CACHE`), on the same engine as [`TreeCache`], so it has the same guarantees.
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_recipes::Error> {
/// use rzk_recipes::{cache::NodeCache, session::{Session, SessionConfig}};
///
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
/// let config = NodeCache::new(&session, "/config/database")?;
/// let mut changes = config.changes();
/// // Writers: a compare-and-set loop over the version read.
/// config.update(|old| {
///     let n = old.map_or(0, |n| n.data.len());
///     format!("{{\"pool\":{n}}}").into_bytes()
/// }).await?;
/// while let Some(change) = changes.next().await {
///     match change? {
///         Some(node) => println!("v{}: {}", node.version(), String::from_utf8_lossy(&node.data)),
///         None => println!("no config"),
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct NodeCache {
    cache: TreeCache,
    session: Session,
    retry: RetryPolicy,
    acls: NodeAcls,
}

impl NodeCache {
    /// Starts caching the node at `path` (which need not exist).
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn new(session: &Session, path: &str) -> Result<Self, Error> {
        NodeCache::with_options(session, path, CacheOptions::single_node())
    }

    /// [`NodeCache::new`] with options (always single-node).
    ///
    /// # Errors
    /// As [`TreeCache::new`].
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn with_options(
        session: &Session,
        path: &str,
        options: CacheOptions,
    ) -> Result<Self, Error> {
        let options = CacheOptions { single_node: true, ..options };
        Ok(NodeCache {
            cache: TreeCache::new(session, path, options)?,
            session: session.clone(),
            retry: RetryPolicy::default(),
            acls: NodeAcls::new(session, None),
        })
    }

    /// The same cache, its [`NodeCache::update`] retrying lost races under `retry`.
    pub fn with_retry(self, retry: RetryPolicy) -> Self {
        NodeCache { retry, ..self }
    }

    /// The same cache, creating the node (and missing parents) with `acls`.
    pub fn with_acls(self, acls: Acls<'static>) -> Self {
        NodeCache { acls: self.acls.clone().given(acls), ..self }
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        self.cache.path()
    }

    /// The underlying cache engine.
    pub fn cache(&self) -> &TreeCache {
        &self.cache
    }

    /// The node as last read (`None`: absent, or not loaded yet).
    pub fn current(&self) -> Option<CachedNode> {
        self.cache.get(self.path())
    }

    /// Waits for the first read. As [`TreeCache::initialized`].
    ///
    /// # Errors
    /// As [`TreeCache::initialized`] ([`Error::NoAuth`] if the node may not be read).
    ///
    /// # Cancellation safety
    /// Safe: it only waits.
    pub async fn initialized(&self) -> Result<(), Error> {
        self.cache.initialized().await
    }

    /// The node's state now (once loaded), then every change; never the same state twice in
    /// a row. Coalescing is the server's and the cache's: a reader sees the latest state, not
    /// necessarily every intermediate one.
    pub fn changes(&self) -> NodeChanges {
        NodeChanges { events: self.cache.events(), last: None }
    }

    /// Stops the cache (see [`TreeCache::close`]).
    pub fn close(&self) {
        self.cache.close();
    }

    /// Writes `data` if the node is at `version` (`None`: whatever its version; an absent
    /// node is then created with missing parents PERSISTENT).
    ///
    /// # Errors
    /// [`Error::BadVersion`] if the version differs; [`Error::NoNode`] for a version given and
    /// no node; [`Error::ConnectionLoss`] if the reply was lost (it may have been applied);
    /// [`Error::NoAuth`] and other fatal errors as ZooKeeper names them; [`Error::Closed`].
    ///
    /// # Cancellation safety
    /// Dropping it after the write was sent leaves the same uncertainty as a lost reply.
    pub async fn set(&self, data: &[u8], version: Option<i32>) -> Result<CachedNode, Error> {
        let path = self.path();
        loop {
            let client = ops::client(&self.session).await?;
            let written = match client.set_data(path, data, version).await {
                Err(ZkError::NoNode) if version.is_none() => self.create(&client, data).await,
                other => other,
            };
            match written {
                Ok(stat) => return Ok(CachedNode { data: data.to_vec(), stat }),
                // Created by another writer since our setData: ours goes over it.
                Err(ZkError::NodeExists) if version.is_none() => {}
                Err(e @ (ZkError::BadVersion | ZkError::NoNode | ZkError::NodeExists)) => {
                    return Err(Error::from_zk(e, path))
                }
                Err(e) => ops::write_failed(e, path).await?,
            }
        }
    }

    /// Replaces the node's data with `f(current)`, as a compare-and-set over the version read,
    /// retrying lost races under the retry policy; an absent node (`f(None)`) is created.
    /// Returns what was written.
    ///
    /// # Errors
    /// [`Error::RetriesExhausted`] (nothing applied); otherwise as [`NodeCache::set`].
    ///
    /// # Cancellation safety
    /// As [`NodeCache::set`].
    pub async fn update(
        &self,
        mut f: impl FnMut(Option<&CachedNode>) -> Vec<u8>,
    ) -> Result<CachedNode, Error> {
        self.try_update(|old| Ok(f(old))).await
    }

    /// [`NodeCache::update`] with an `f` that may refuse (its error is returned, nothing
    /// written).
    pub(crate) async fn try_update(
        &self,
        mut f: impl FnMut(Option<&CachedNode>) -> Result<Vec<u8>, Error>,
    ) -> Result<CachedNode, Error> {
        let path = self.path();
        for attempt in 1..=self.retry.max_attempts {
            let client = ops::client(&self.session).await?;
            let old = match client.get_data(path).await {
                Ok((data, stat)) => Some(CachedNode { data, stat }),
                Err(ZkError::NoNode) => None,
                Err(e) => {
                    ops::pause_or_fail(e, path).await?;
                    continue;
                }
            };
            let data = f(old.as_ref())?;
            let written = match &old {
                Some(old) => client.set_data(path, &data, Some(old.version())).await,
                None => self.create(&client, &data).await,
            };
            match written {
                Ok(stat) => return Ok(CachedNode { data, stat }),
                Err(ZkError::BadVersion | ZkError::NoNode | ZkError::NodeExists) => {}
                Err(e) => ops::write_failed(e, path).await?,
            }
            if attempt < self.retry.max_attempts {
                tokio::time::sleep(self.retry.pause(attempt)).await;
            }
        }
        let attempts = self.retry.max_attempts;
        Err(Error::RetriesExhausted { path: path.to_string(), attempts })
    }

    async fn create(
        &self,
        client: &rzk_client::Client,
        data: &[u8],
    ) -> Result<rzk_client::Stat, ZkError> {
        let mode = CreateMode::Persistent;
        ops::create_with_parents(client, self.path(), data, mode, mode, &self.acls)
            .await
            .map(|(_, stat)| stat)
    }
}

/// A node state as [`NodeChanges`] yields it: the node, or `None` for its absence.
pub type NodeState = Option<CachedNode>;

/// The changes of a [`NodeCache`], from [`NodeCache::changes`]. Ends when the cache ends.
#[derive(Debug)]
pub struct NodeChanges {
    events: CacheEvents,
    /// The identity (`czxid`, `mzxid`) of the state yielded last; `None` before the first.
    last: Option<Option<(i64, i64)>>,
}

impl NodeChanges {
    /// The next state.
    ///
    /// # Errors
    /// As [`CacheEvents::next`]: an error item is not the end of the stream.
    ///
    /// # Cancellation safety
    /// Safe: no state is lost if the future is dropped.
    pub async fn next(&mut self) -> Option<Result<NodeState, Error>> {
        loop {
            let item = self.events.next().await?;
            if let Some(state) = self.state_of(item) {
                return Some(state);
            }
        }
    }

    /// The state an event leaves the node in, unless it is the one yielded last.
    fn state_of(&mut self, item: CacheItem) -> Option<Result<NodeState, Error>> {
        let state = match item {
            Err(e) => return Some(Err(e)),
            Ok(CacheEvent::Added { node, .. } | CacheEvent::Updated { node, .. }) => Some(node),
            Ok(CacheEvent::Removed { .. }) => None,
            Ok(CacheEvent::Initialized) if self.last.is_none() => None,
            Ok(_) => return None,
        };
        let id = state.as_ref().map(|n| (n.stat.czxid, n.stat.mzxid));
        if self.last == Some(id) {
            return None;
        }
        self.last = Some(id);
        Some(Ok(state))
    }
}

impl Stream for NodeChanges {
    type Item = Result<NodeState, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            match Pin::new(&mut self.events).poll_next(cx) {
                Poll::Ready(Some(item)) => {
                    if let Some(state) = self.state_of(item) {
                        return Poll::Ready(Some(state));
                    }
                }
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
