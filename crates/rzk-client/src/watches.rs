//! The client's watch table: which callers wait for which server notifications, the
//! handles they wait on, and the lists a reconnect re-registers with `SetWatches2`.
//!
//! The server keeps one watch per (session, path, kind) and sends one notification when it
//! fires; the table fans that notification out to every local waiter. A one-shot watch is
//! added only once its request's reply says it was set, and before any later frame is read,
//! so a notification can never arrive for a watch the table does not have yet.

use std::collections::BTreeMap;

use tokio::sync::{mpsc, oneshot};

use crate::types::{AddWatchMode, EventType, SessionState, WatchedEvent, WatcherType};

/// What a watch was set by, which decides the events it fires on and how a reconnect
/// re-registers it.
#[derive(Debug, Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
    Many(Backlog),
}

impl Sink {
    fn deliver(self, ev: &WatchedEvent) {
        match self {
            Sink::Once(s) => drop(s.send(ev.clone())),
            // The backlog keeps a slot for the end (see `Backlog`).
            Sink::Many(b) => drop(b.tx.try_send(ev.clone())),
        }
    }

    fn is_closed(&self) -> bool {
        match self {
            Sink::Once(s) => s.is_closed(),
            Sink::Many(b) => b.tx.is_closed(),
        }
    }
}

/// A persistent watch's queue of unread events, bounded: the session task never waits for a
/// reader, since one slow reader would stall every reply and ping of the session.
///
/// When one slot of the backlog is left, the queue takes an [`EventType::Lagged`] event
/// instead of the next, then drops events until the reader has emptied it. Every dropped
/// event reached the client before the reader took the lagged event, so a read made after it
/// sees their changes. One slot beyond the backlog is kept for the session's end, whose state
/// (expired, closed) the reader could not otherwise tell yet when the channel closes: the
/// session task publishes it after ending the watches.
pub(crate) struct Backlog {
    /// `capacity + END_SLOT` slots.
    tx: mpsc::Sender<WatchedEvent>,
    /// The watched path as the caller named it, which the lagged event carries.
    path: String,
    lagged: bool,
}

/// The slot a persistent watch's queue keeps for the session's end.
const END_SLOT: usize = 1;

impl Backlog {
    /// A backlog of `capacity` events (the lagged event's slot included) and its reader.
    pub fn new(path: &str, capacity: usize) -> (Backlog, mpsc::Receiver<WatchedEvent>) {
        let (tx, rx) = mpsc::channel(capacity.max(1) + END_SLOT);
        (Backlog { tx, path: path.to_owned(), lagged: false }, rx)
    }

    /// Queues `ev` or drops it as above; false once the reader is gone.
    fn offer(&mut self, ev: &WatchedEvent) -> bool {
        self.push(Some(ev))
    }

    /// Queues a lagged event: the session was resumed on a new connection, and ZooKeeper
    /// replays no persistent-watch event of the gap. Later events are still queued (the
    /// backlog is not full); an unread lagged event of a full backlog covers the gap already.
    /// False once the reader is gone.
    fn gap(&mut self) -> bool {
        self.push(None)
    }

    /// Queues `ev`, or a lagged event for `None`; when one slot of the backlog is left, a
    /// lagged event, and nothing more until the reader has emptied the queue.
    fn push(&mut self, ev: Option<&WatchedEvent>) -> bool {
        if self.tx.is_closed() {
            return false;
        }
        if self.lagged {
            if self.tx.capacity() < self.tx.max_capacity() {
                return true;
            }
            self.lagged = false;
        }
        let room = self.tx.capacity() > 1 + END_SLOT;
        self.lagged = !room;
        let ev = match ev {
            Some(ev) if room => ev.clone(),
            _ => WatchedEvent::lagged(&self.path),
        };
        // The session task is the only sender, so the capacity just read is still there.
        !matches!(self.tx.try_send(ev), Err(mpsc::error::TrySendError::Closed(_)))
    }
}

/// The table. Paths are the server's (chroot included); events go out with the caller's.
#[derive(Default)]
pub(crate) struct Watches {
    sinks: BTreeMap<(String, Kind), Vec<Sink>>,
    /// Paths whose last persistent watcher was found gone while an event was delivered, for
    /// the session task to remove on the server. At most one entry per watched path, and
    /// emptied after every read.
    orphans: Vec<String>,
}

/// Every kind of watch, in the order [`Watches::remove`] tells their waiters.
const KINDS: [Kind; 5] =
    [Kind::Child, Kind::Data, Kind::Exist, Kind::Persistent, Kind::PersistentRecursive];

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
            _ => &[],
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
            v.retain_mut(|s| match s {
                Sink::Many(b) => b.offer(ev),
                Sink::Once(_) => false,
            });
            if v.is_empty() {
                self.sinks.remove(key);
                if !self.watching(&key.0) {
                    self.orphans.push(key.0.clone());
                }
            }
        }
    }

    /// Removes the watches of `which` at `path` (the server's), telling each waiter with a
    /// removal event naming `client_path`; whether a live one was there. The kinds are the
    /// Java client 3.8's: `Children` is getChildren's, `Data` getData's and exists', `Any`
    /// all of them, persistent ones included.
    pub fn remove(&mut self, path: &str, which: WatcherType, client_path: &str) -> bool {
        let kinds: &[Kind] = match which {
            WatcherType::Children => &[Kind::Child],
            WatcherType::Data => &[Kind::Data, Kind::Exist],
            WatcherType::Any => &KINDS,
        };
        let mut removed = false;
        for kind in kinds {
            let event_type = match kind {
                Kind::Child => EventType::ChildWatchRemoved,
                Kind::Data | Kind::Exist => EventType::DataWatchRemoved,
                Kind::Persistent | Kind::PersistentRecursive => EventType::PersistentWatchRemoved,
            };
            let ev = WatchedEvent {
                event_type,
                session_state: SessionState::SyncConnected,
                path: client_path.to_owned(),
                zxid: -1,
            };
            for sink in self.sinks.remove(&(path.to_owned(), *kind)).into_iter().flatten() {
                removed |= !sink.is_closed();
                // A persistent watch's backlog keeps a slot for its end, which this is.
                sink.deliver(&ev);
            }
        }
        removed
    }

    /// Whether a waiter of any kind is registered at `path` (the server's). On a ZooKeeper
    /// 3.8 server one session has one watch per path and table whatever the kinds, so a
    /// path's watch may be removed there only when no kind is left here.
    pub fn watching(&self, path: &str) -> bool {
        KINDS.iter().any(|k| self.sinks.contains_key(&(path.to_owned(), *k)))
    }

    /// Forgets the waiters at `path` whose handles were dropped; true when it forgot one and
    /// no waiter of any kind is left there (so that drops reported together remove the
    /// server's watch once).
    pub fn forget(&mut self, path: &str) -> bool {
        let mut forgot = false;
        for kind in KINDS {
            let key = (path.to_owned(), kind);
            if let Some(v) = self.sinks.get_mut(&key) {
                let before = v.len();
                v.retain(|s| !s.is_closed());
                forgot |= v.len() < before;
                if v.is_empty() {
                    self.sinks.remove(&key);
                }
            }
        }
        forgot && !self.watching(path)
    }

    /// The paths found orphaned (see `orphans`) that still have no waiter.
    pub fn take_orphans(&mut self) -> Vec<String> {
        let mut v = std::mem::take(&mut self.orphans);
        v.retain(|p| !self.watching(p));
        v.dedup();
        v
    }

    /// Ends every watch with the session's terminal `state`.
    pub fn end(&mut self, state: SessionState) {
        let ev = WatchedEvent::session(state);
        for sink in std::mem::take(&mut self.sinks).into_values().flatten() {
            sink.deliver(&ev);
        }
    }

    /// Tells every persistent watcher that a disconnection may have hidden events (see
    /// [`Backlog::gap`]), pruning the ones whose readers are gone.
    pub fn resumed(&mut self) {
        self.sinks.retain(|_, v| {
            v.retain_mut(|s| match s {
                Sink::Many(b) => b.gap(),
                Sink::Once(o) => !o.is_closed(),
            });
            !v.is_empty()
        });
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A table with one persistent watch, `/app` to its caller (`/c/app` on the server), of a
    /// backlog of `capacity`, and the watch's reader.
    fn watching(capacity: usize) -> (Watches, mpsc::Receiver<WatchedEvent>) {
        let mut w = Watches::default();
        let (backlog, rx) = Backlog::new("/app", capacity);
        w.add("/c/app".into(), Kind::Persistent, Sink::Many(backlog));
        (w, rx)
    }

    fn fire(w: &mut Watches, zxid: i64) {
        w.fire(EventType::NodeDataChanged, "/c/app", zxid, "/app");
    }

    fn drain(rx: &mut mpsc::Receiver<WatchedEvent>) -> Vec<WatchedEvent> {
        std::iter::from_fn(|| rx.try_recv().ok()).collect()
    }

    fn brief(events: Vec<WatchedEvent>) -> Vec<(EventType, String, i64)> {
        events.into_iter().map(|e| (e.event_type, e.path, e.zxid)).collect()
    }

    /// A reader that falls behind gets one lagged event naming its watch, nothing until it has
    /// read the queue empty, then every event again; a gone reader's watch is pruned.
    #[test]
    fn a_full_backlog_says_lagged_and_drops_until_read() {
        let (mut w, mut rx) = watching(3);
        (1..=6).for_each(|z| fire(&mut w, z));
        assert_eq!(rx.try_recv().unwrap().zxid, 1);
        fire(&mut w, 7); // the queue still holds the lagged event: dropped
        let changed = EventType::NodeDataChanged;
        assert_eq!(
            brief(drain(&mut rx)),
            [(changed, "/app".into(), 2), (EventType::Lagged, "/app".into(), -1)]
        );
        (8..=9).for_each(|z| fire(&mut w, z));
        assert_eq!(
            brief(drain(&mut rx)),
            [(changed, "/app".into(), 8), (changed, "/app".into(), 9)]
        );
        drop(rx);
        fire(&mut w, 10);
        assert!(w.live().is_empty());
    }

    /// A resumed session tells a persistent watcher to read again, once per resume, and the
    /// events after it are still delivered.
    #[test]
    fn a_resume_says_lagged_and_keeps_the_events_after_it() {
        let (mut w, mut rx) = watching(8);
        fire(&mut w, 1);
        w.resumed();
        fire(&mut w, 2);
        let (changed, lagged) = (EventType::NodeDataChanged, EventType::Lagged);
        assert_eq!(
            brief(drain(&mut rx)),
            [(changed, "/app".into(), 1), (lagged, "/app".into(), -1), (changed, "/app".into(), 2)]
        );
        // A full backlog keeps the end's slot through a resume.
        let (mut w, mut rx) = watching(2);
        fire(&mut w, 1);
        w.resumed();
        fire(&mut w, 2);
        w.end(SessionState::Closed);
        let kinds: Vec<_> = drain(&mut rx).iter().map(|e| e.event_type).collect();
        assert_eq!(kinds, [changed, lagged, EventType::Session]);
    }

    /// The session's end, and how it ended, is not lost to a full backlog.
    #[test]
    fn a_full_backlog_still_takes_the_end() {
        let (mut w, mut rx) = watching(2);
        (1..=3).for_each(|z| fire(&mut w, z));
        w.end(SessionState::Expired);
        let got = drain(&mut rx);
        let kinds: Vec<_> = got.iter().map(|e| e.event_type).collect();
        assert_eq!(kinds, [EventType::NodeDataChanged, EventType::Lagged, EventType::Session]);
        assert_eq!(got[2].session_state, SessionState::Expired);
        assert!(matches!(rx.try_recv(), Err(mpsc::error::TryRecvError::Disconnected)));
    }
}
