//! What a cache mirrors and how: one node or a subtree, the watch kind, and its limits.

/// The default [`CacheOptions::with_max_nodes`]: 100,000 nodes.
pub const DEFAULT_MAX_NODES: usize = 100_000;
/// The default [`CacheOptions::with_event_queue`]: 4,096 events per subscriber.
pub const DEFAULT_EVENT_QUEUE: usize = 4_096;

/// How a cache learns of changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheWatch {
    /// A persistent watch (`addWatch`, ZooKeeper 3.6+ and rzk): recursive for a tree, on the
    /// node alone for a single node. A server that answers `UNIMPLEMENTED` (3.5) gets
    /// [`CacheWatch::OneShot`] instead.
    #[default]
    Auto,
    /// One-shot data and child watches, set again with every read (what 3.5-era servers offer).
    OneShot,
}

/// Options of a [`TreeCache`](crate::cache::TreeCache) or [`NodeCache`](crate::cache::NodeCache).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheOptions {
    pub(crate) single_node: bool,
    pub(crate) max_depth: Option<usize>,
    pub(crate) watch: CacheWatch,
    pub(crate) max_nodes: usize,
    pub(crate) event_queue: usize,
}

impl Default for CacheOptions {
    /// A subtree, [`CacheWatch::Auto`], [`DEFAULT_MAX_NODES`], [`DEFAULT_EVENT_QUEUE`].
    fn default() -> Self {
        CacheOptions {
            single_node: false,
            max_depth: None,
            watch: CacheWatch::Auto,
            max_nodes: DEFAULT_MAX_NODES,
            event_queue: DEFAULT_EVENT_QUEUE,
        }
    }
}

impl CacheOptions {
    /// The cache path and everything below it (Curator's `CuratorCache` default).
    pub fn tree() -> Self {
        CacheOptions::default()
    }

    /// The cache path alone, its children ignored (Curator's `SINGLE_NODE_CACHE`).
    pub fn single_node() -> Self {
        CacheOptions { single_node: true, ..CacheOptions::default() }
    }

    /// The cache path and the nodes at most `depth` levels below it (Curator's old
    /// `TreeCache.maxDepth`): 1 is the path and its children. Deeper nodes are neither read
    /// nor watched; their changes are ignored.
    pub fn with_max_depth(self, depth: usize) -> Self {
        CacheOptions { max_depth: Some(depth), ..self }
    }

    /// The watch kind (default [`CacheWatch::Auto`]).
    pub fn with_watch(self, watch: CacheWatch) -> Self {
        CacheOptions { watch, ..self }
    }

    /// The most nodes the cache holds. A subtree that grows beyond it fails the cache with
    /// [`Error::CacheFull`](crate::Error::CacheFull): its streams end, its snapshot stays at
    /// the last state it held.
    pub fn with_max_nodes(self, max_nodes: usize) -> Self {
        CacheOptions { max_nodes, ..self }
    }

    /// The events a subscriber may fall behind by. One that falls further behind receives
    /// [`Error::CacheLagged`](crate::Error::CacheLagged) in place of the events it missed,
    /// then the later events; a new [`events`](crate::cache::TreeCache::events) stream starts again
    /// from the current state.
    pub fn with_event_queue(self, events: usize) -> Self {
        CacheOptions { event_queue: events, ..self }
    }
}
