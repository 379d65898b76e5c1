//! What a cache's engine and its handles share: the model, the subscribers' channel and the
//! cache's status. The model changes and the events go out under one lock, so a subscriber
//! that joins sees the model up to some event and every event after it, never a gap or a
//! repeat.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use tokio::sync::{broadcast, watch};

use super::event::{lagged, CacheEvent, CacheEvents, CacheItem, CachedNode};
use super::model::{Full, Model};
use super::options::CacheOptions;
use crate::subscription::Subscription;
use crate::Error;

/// Where a cache stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Status {
    Loading,
    Ready,
    /// Closed by its owner (`None`) or failed.
    Ended(Option<Error>),
}

struct Mirror {
    model: Model,
    initialized: bool,
    /// The errors of the first load (nodes it could not read), at most the event queue's
    /// length: a subscriber that comes after them still learns why its content lacks them.
    load_errors: Vec<Error>,
    /// `None` once the cache has ended: the streams end.
    tx: Option<broadcast::Sender<CacheItem>>,
}

pub(super) struct CacheState {
    pub path: String,
    pub options: CacheOptions,
    inner: Mutex<Mirror>,
    pub status: watch::Sender<Status>,
}

impl CacheState {
    pub fn new(path: String, options: CacheOptions) -> Self {
        let (tx, _) = broadcast::channel(options.event_queue.max(1));
        let inner = Mirror {
            model: Model::default(),
            initialized: false,
            load_errors: Vec::new(),
            tx: Some(tx),
        };
        let (status, _) = watch::channel(Status::Loading);
        CacheState { path, options, inner: Mutex::new(inner), status }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Mirror> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the model and sends the events it made, under one lock.
    pub fn change<R>(&self, f: impl FnOnce(&mut Model, &mut Vec<CacheEvent>) -> R) -> R {
        let mut inner = self.lock();
        let mut out = Vec::new();
        let r = f(&mut inner.model, &mut out);
        if let Some(tx) = &inner.tx {
            for e in out {
                let _ = tx.send(Ok(e));
            }
        }
        r
    }

    /// Records `node` at `path`, failing the cache at its node limit.
    pub fn put(&self, path: &str, node: CachedNode) -> Result<(), Error> {
        let max = self.options.max_nodes;
        self.change(|m, out| m.put(path, node, max, out))
            .map_err(|Full| Error::CacheFull { path: self.path.clone(), max_nodes: max })
    }

    pub fn remove_subtree(&self, path: &str) {
        self.change(|m, out| m.remove_subtree(path, out));
    }

    pub fn children(&self, path: &str) -> Vec<String> {
        self.lock().model.children(path)
    }

    /// Tells the subscribers of an error that does not end the cache.
    pub fn report(&self, e: Error) {
        let mut inner = self.lock();
        if !inner.initialized && inner.load_errors.len() < self.options.event_queue {
            inner.load_errors.push(e.clone());
        }
        if let Some(tx) = &inner.tx {
            let _ = tx.send(Err(e));
        }
    }

    /// The first complete load is done.
    pub fn initialized(&self) {
        let mut inner = self.lock();
        if !inner.initialized {
            inner.initialized = true;
            if let Some(tx) = &inner.tx {
                let _ = tx.send(Ok(CacheEvent::Initialized));
            }
            self.status.send_if_modified(|s| {
                let loading = *s == Status::Loading;
                if loading {
                    *s = Status::Ready;
                }
                loading
            });
        }
    }

    /// Ends the cache: with `failure` as the last item of every stream, or closed.
    pub fn end(&self, failure: Option<Error>) {
        let mut inner = self.lock();
        if let (Some(tx), Some(e)) = (inner.tx.take(), failure.clone()) {
            let _ = tx.send(Err(e));
        }
        self.status.send_if_modified(|s| {
            let open = !matches!(s, Status::Ended(_));
            if open {
                *s = Status::Ended(failure);
            }
            open
        });
    }

    /// A new subscriber: the current content and the first load's errors, then every change.
    pub fn subscribe(&self) -> CacheEvents {
        let inner = self.lock();
        let mut replay: VecDeque<CacheItem> = inner
            .model
            .nodes()
            .iter()
            .map(|(path, node)| Ok(CacheEvent::Added { path: path.clone(), node: node.clone() }))
            .chain(inner.load_errors.iter().cloned().map(Err))
            .collect();
        if inner.initialized {
            replay.push_back(Ok(CacheEvent::Initialized));
        }
        let live = inner.tx.as_ref().map(|tx| Subscription::new(tx.subscribe(), lagged));
        if live.is_none() {
            if let Status::Ended(Some(e)) = &*self.status.borrow() {
                replay.push_back(Err(e.clone()));
            }
        }
        CacheEvents::new(replay, live)
    }

    pub fn get(&self, path: &str) -> Option<CachedNode> {
        self.lock().model.get(path).cloned()
    }

    pub fn snapshot(&self) -> BTreeMap<String, CachedNode> {
        self.lock().model.nodes().clone()
    }
}
