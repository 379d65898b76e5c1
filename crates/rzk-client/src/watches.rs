//! The client's watch table: which callers wait for which server notifications, the
//! handles they wait on, and the lists a reconnect re-registers with `SetWatches2`.
//!
//! The server keeps one watch per (session, path, kind) and sends one notification when it
//! fires; the table fans that notification out to every local waiter. A one-shot watch is
//! added only once its request's reply says it was set, and before any later frame is read,
//! so a notification can never arrive for a watch the table does not have yet.

use std::collections::HashMap;

use tokio::sync::{mpsc, oneshot};

use crate::types::{AddWatchMode, EventType, SessionState, WatchedEvent};

/// What a watch was set by, which decides the events it fires on and how a reconnect
/// re-registers it.
#[derive(Debug, Copy, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// getData, or exists on a node that was there.
    Data,
    /// exists on a node that was not there.
    Exist,
    /// getChildren.
    Child,
    /// addWatch, persistent.
    Persistent,
    /// addWatch, persistent recursive.
    PersistentRecursive,
}

impl Kind {
    pub fn of_mode(mode: AddWatchMode) -> Kind {
        match mode {
            AddWatchMode::Persistent => Kind::Persistent,
            AddWatchMode::PersistentRecursive => Kind::PersistentRecursive,
        }
    }
}

/// The waiting end of a watch, registered once its request succeeds.
pub(crate) enum Sink {
    Once(oneshot::Sender<WatchedEvent>),
    Many(mpsc::UnboundedSender<WatchedEvent>),
}

impl Sink {
    fn deliver(self, ev: &WatchedEvent) {
        let _ = match self {
            Sink::Once(s) => s.send(ev.clone()).is_ok(),
            Sink::Many(s) => s.send(ev.clone()).is_ok(),
        };
    }

    fn is_closed(&self) -> bool {
        match self {
            Sink::Once(s) => s.is_closed(),
            Sink::Many(s) => s.is_closed(),
        }
    }
}

/// The table. Paths are the server's (chroot included); events go out with the caller's.
#[derive(Default)]
pub(crate) struct Watches {
    sinks: HashMap<(String, Kind), Vec<Sink>>,
}

impl Watches {
    /// Adds a waiter, pruning the ones whose handles were dropped.
    pub fn add(&mut self, path: String, kind: Kind, sink: Sink) {
        let v = self.sinks.entry((path, kind)).or_default();
        v.retain(|s| !s.is_closed());
        v.push(sink);
    }

    /// Delivers a notification for `path` (the server's) to every waiter it fires, as an
    /// event naming `client_path`; one-shot waiters are removed.
    pub fn fire(&mut self, event_type: EventType, path: &str, zxid: i64, client_path: &str) {
        let ev = WatchedEvent {
            event_type,
            session_state: SessionState::SyncConnected,
            path: client_path.to_owned(),
            zxid,
        };
        let once: &[Kind] = match event_type {
            EventType::NodeCreated | EventType::NodeDataChanged => &[Kind::Data, Kind::Exist],
            EventType::NodeDeleted => &[Kind::Data, Kind::Exist, Kind::Child],
            EventType::NodeChildrenChanged => &[Kind::Child],
            EventType::Session => &[],
        };
        for kind in once {
            for sink in self.sinks.remove(&(path.to_owned(), *kind)).into_iter().flatten() {
                sink.deliver(&ev);
            }
        }
        self.fire_many(&(path.to_owned(), Kind::Persistent), &ev);
        if event_type != EventType::NodeChildrenChanged {
            let mut at = path;
            loop {
                self.fire_many(&(at.to_owned(), Kind::PersistentRecursive), &ev);
                if at == "/" {
                    break;
                }
                at = match at.rfind('/') {
                    Some(0) => "/",
                    Some(i) => &at[..i],
                    None => break,
                };
            }
        }
    }

    fn fire_many(&mut self, key: &(String, Kind), ev: &WatchedEvent) {
        if let Some(v) = self.sinks.get_mut(key) {
            v.retain(|s| match s {
                Sink::Many(s) => s.send(ev.clone()).is_ok(),
                Sink::Once(_) => false,
            });
            if v.is_empty() {
                self.sinks.remove(key);
            }
        }
    }

    /// Ends every watch with the session's terminal `state`.
    pub fn end(&mut self, state: SessionState) {
        let ev = WatchedEvent::session(state);
        for sink in self.sinks.drain().flat_map(|(_, v)| v) {
            sink.deliver(&ev);
        }
    }

    /// Every live watch as (kind, the server's path), for `SetWatches` after a reconnect,
    /// pruning the ones whose handles were all dropped.
    pub fn live(&mut self) -> Vec<(Kind, String)> {
        self.sinks.retain(|_, v| {
            v.retain(|s| !s.is_closed());
            !v.is_empty()
        });
        self.sinks.keys().map(|(p, k)| (*k, p.clone())).collect()
    }
}
