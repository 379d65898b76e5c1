//! What a cache holds and tells: a node's data and stat, the change events, and the stream of
//! them each subscriber reads.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use rzk_client::Stat;

use crate::subscription::Subscription;
use crate::Error;

/// A cached node: its data and its stat as last read from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedNode {
    /// The node's data.
    pub data: Vec<u8>,
    /// The node's stat (`version` is the data version a versioned write needs).
    pub stat: Stat,
}

impl CachedNode {
    /// The data version.
    pub fn version(&self) -> i32 {
        self.stat.version
    }
}

/// A change of the mirrored subtree, in the order the cache applied it (Curator's
/// `CuratorCacheListener` types). A node is only ever reported in a state different from the
/// one reported before it.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheEvent {
    /// A node appeared (parents before their children).
    Added {
        /// The node's path.
        path: String,
        /// Its data and stat.
        node: CachedNode,
    },
    /// A node's data changed (a newer `mzxid`).
    Updated {
        /// The node's path.
        path: String,
        /// What the cache held before.
        old: CachedNode,
        /// What it holds now.
        node: CachedNode,
    },
    /// A node disappeared (children before their parents). A node deleted and created again
    /// while the cache could not see it is reported removed, then added.
    Removed {
        /// The node's path.
        path: String,
        /// What the cache held last.
        node: CachedNode,
    },
    /// The initial load is complete: the events before this one were the subtree as it was
    /// (Curator's `initialized()`). Sent once per cache.
    Initialized,
}

/// What a subscriber receives: an event, or an error (a node that could not be read, a lag).
pub type CacheItem = Result<CacheEvent, Error>;

/// The events of a cache, from [`TreeCache::events`](crate::cache::TreeCache::events): first the
/// current content as `Added` events, the errors of the initial load so far (the nodes it
/// could not read, so that a subscriber that came after them still learns of them), and
/// `Initialized` if that load is done; then every change. Ends when the cache is closed or
/// fails (the failure is the last item).
pub struct CacheEvents {
    replay: VecDeque<CacheItem>,
    live: Option<Subscription<CacheItem>>,
}

impl std::fmt::Debug for CacheEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheEvents").field("replay", &self.replay.len()).finish()
    }
}

impl CacheEvents {
    pub(super) fn new(replay: VecDeque<CacheItem>, live: Option<Subscription<CacheItem>>) -> Self {
        CacheEvents { replay, live }
    }

    /// The next item; `None` once the cache is closed or failed.
    ///
    /// # Errors
    /// An `Err` item is not the end: a node the cache could not read (`NoAuth`, ...), or
    /// [`Error::CacheLagged`] in place of events missed by a subscriber that fell behind.
    /// A cache failure ([`Error::CacheFull`], a fatal error on the cache path) is the last item.
    ///
    /// # Cancellation safety
    /// Safe: no item is lost if the future is dropped.
    pub async fn next(&mut self) -> Option<CacheItem> {
        if let Some(item) = self.replay.pop_front() {
            return Some(item);
        }
        self.live.as_mut()?.recv().await
    }
}

impl futures_core::Stream for CacheEvents {
    type Item = CacheItem;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<CacheItem>> {
        if let Some(item) = self.replay.pop_front() {
            return Poll::Ready(Some(item));
        }
        match self.live.as_mut() {
            Some(live) => live.poll_next(cx),
            None => Poll::Ready(None),
        }
    }
}

/// The item a subscriber that fell `missed` events behind gets in their place.
pub(super) fn lagged(missed: u64) -> Option<CacheItem> {
    Some(Err(Error::CacheLagged { missed }))
}
