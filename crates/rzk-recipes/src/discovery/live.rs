//! A live set of one parent's children, decoded: a [`TreeCache`] one level deep, and the
//! stream of the decoded set after each change. The service cache and the server list's live
//! view are this with their own decoder.

use std::collections::{BTreeMap, HashSet};
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;

use super::query::MalformedInstance;
use crate::cache::{CacheEvent, CacheEvents, CacheOptions, TreeCache};
use crate::session::Session;
use crate::Error;

/// Reads one child (its name and data): the value, or why it is not one.
pub(crate) type Decoder<V> = fn(&str, &[u8]) -> Result<V, String>;

/// A decoded set: the children that decoded, by name, and the ones that did not.
pub(crate) struct Decoded<V> {
    pub items: Vec<V>,
    pub malformed: Vec<MalformedInstance>,
}

/// What identifies one state of the set: each child's path, creation and modification zxid.
type Key = Vec<(String, i64, i64)>;

/// The children of one parent, cached (the parent may be absent, deleted, created again).
#[derive(Debug, Clone)]
pub(crate) struct LiveSet {
    cache: TreeCache,
}

impl LiveSet {
    /// Starts caching the children of `parent`.
    pub fn new(session: &Session, parent: &str) -> Result<Self, Error> {
        let cache = TreeCache::new(session, parent, CacheOptions::tree().with_max_depth(1))?;
        Ok(LiveSet { cache })
    }

    pub fn cache(&self) -> &TreeCache {
        &self.cache
    }

    /// The current children decoded by `decode`.
    pub fn current<V>(&self, decode: Decoder<V>) -> Decoded<V> {
        decode_children(&self.cache, decode, &mut HashSet::new()).1
    }

    /// The decoded set from now on: the current one once the cache is loaded, then one after
    /// every change of the set (a burst of changes that are all ready is one set).
    pub fn changes<V, S: From<Decoded<V>>>(&self, decode: Decoder<V>) -> LiveChanges<V, S> {
        LiveChanges {
            cache: self.cache.clone(),
            events: self.cache.events(),
            decode,
            into_set: S::from,
            initialized: false,
            dirty: false,
            ended: false,
            last: None,
            logged: HashSet::new(),
            _set: PhantomData,
        }
    }
}

/// The children of the cache path, decoded, with the state that identifies them. A child
/// that does not decode is logged once per state (`logged` remembers which).
fn decode_children<V>(
    cache: &TreeCache,
    decode: Decoder<V>,
    logged: &mut HashSet<(String, i64)>,
) -> (Key, Decoded<V>) {
    let prefix = format!("{}/", cache.path().trim_end_matches('/'));
    let children: BTreeMap<_, _> =
        cache.snapshot().into_iter().filter(|(p, _)| p.starts_with(&prefix)).collect();
    let mut key = Vec::with_capacity(children.len());
    let mut set = Decoded { items: Vec::with_capacity(children.len()), malformed: Vec::new() };
    for (path, node) in children {
        key.push((path.clone(), node.stat.czxid, node.stat.mzxid));
        match decode(crate::naming::name_of(&path), &node.data) {
            Ok(v) => set.items.push(v),
            Err(reason) => {
                if logged.insert((path.clone(), node.stat.mzxid)) {
                    tracing::warn!(%path, %reason, "skipping a node that is not a live-set entry");
                }
                set.malformed.push(MalformedInstance { path, reason });
            }
        }
    }
    (key, set)
}

/// The decoded set of a live cache after each change (`S` is the public set type). Ends when
/// the cache is closed or fails; the failure is the last item.
pub struct LiveChanges<V, S> {
    cache: TreeCache,
    events: CacheEvents,
    decode: Decoder<V>,
    into_set: fn(Decoded<V>) -> S,
    /// The cache's first load is complete: sets may be sent.
    initialized: bool,
    /// Events arrived since the last set was computed.
    dirty: bool,
    ended: bool,
    /// The state of the set last sent.
    last: Option<Key>,
    logged: HashSet<(String, i64)>,
    _set: PhantomData<fn() -> S>,
}

impl<V, S> std::fmt::Debug for LiveChanges<V, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveChanges").field("path", &self.cache.path()).finish()
    }
}

impl<V, S> LiveChanges<V, S> {
    /// The next set; `None` once the cache is closed or failed.
    ///
    /// # Errors
    /// An `Err` item is not the end: an instance node the cache could not read (`NoAuth`).
    /// A cache failure ([`Error::CacheFull`], [`Error::NoAuth`] on the parent) is the last
    /// item.
    ///
    /// # Cancellation safety
    /// Safe: the set is computed from the cache when polled, so nothing is lost.
    pub async fn next(&mut self) -> Option<Result<S, Error>> {
        std::future::poll_fn(|cx| self.poll_set(cx)).await
    }

    /// The set if it differs from the one last sent.
    fn changed_set(&mut self) -> Option<S> {
        let (key, set) = decode_children(&self.cache, self.decode, &mut self.logged);
        if self.last.as_ref() == Some(&key) {
            return None;
        }
        self.last = Some(key);
        Some((self.into_set)(set))
    }

    fn poll_set(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<S, Error>>> {
        while !self.ended {
            match Pin::new(&mut self.events).poll_next(cx) {
                Poll::Ready(Some(Ok(CacheEvent::Initialized))) => {
                    self.initialized = true;
                    self.dirty = true;
                }
                Poll::Ready(Some(Ok(_))) => self.dirty = true,
                // The set is read from the cache, not rebuilt from events: a lag loses nothing.
                Poll::Ready(Some(Err(Error::CacheLagged { .. }))) => self.dirty = true,
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => self.ended = true,
                Poll::Pending => break,
            }
        }
        if self.initialized && std::mem::take(&mut self.dirty) {
            if let Some(set) = self.changed_set() {
                return Poll::Ready(Some(Ok(set)));
            }
        }
        if self.ended {
            Poll::Ready(None)
        } else {
            Poll::Pending
        }
    }
}

impl<V, S> Stream for LiveChanges<V, S> {
    type Item = Result<S, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_set(cx)
    }
}
