//! The handles callers wait on: a one-shot watch, a persistent watch, the session's state.

use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::task::Command;
use crate::types::{SessionState, WatchedEvent};

/// The events a [`PersistentWatcher`] holds unread, the
/// [`EventType::Lagged`](crate::EventType::Lagged) event's slot included. A reader that
/// falls this far behind gets that event and loses the events after it until it has read
/// everything queued: a slow reader costs a re-read, never the session's memory.
pub const PERSISTENT_WATCH_BACKLOG: usize = 16_384;

/// A one-shot watch: the next change of what the request that set it read, or the end of
/// the session. Dropping it abandons the wait (the server's watch stays until it fires).
#[derive(Debug)]
pub struct OneshotWatcher {
    pub(crate) rx: oneshot::Receiver<WatchedEvent>,
    pub(crate) state: watch::Receiver<SessionState>,
}

impl OneshotWatcher {
    /// Waits for the event.
    ///
    /// An [`EventType::Session`](crate::EventType::Session) event says the session ended
    /// (expired, closed, failed authentication) before the watch fired; a
    /// [`DataWatchRemoved`](crate::EventType::DataWatchRemoved) or
    /// [`ChildWatchRemoved`](crate::EventType::ChildWatchRemoved) event, that
    /// [`Client::remove_watches`](crate::Client::remove_watches) removed it.
    ///
    /// # Cancellation safety
    /// Dropping the future drops the watcher, whose event is then lost.
    pub async fn changed(self) -> WatchedEvent {
        match self.rx.await {
            Ok(ev) => ev,
            Err(_) => WatchedEvent::session(terminal(&self.state)),
        }
    }
}

/// A persistent watch ([`Client::watch`](crate::Client::watch)): every event until removed or
/// the session ends, with an [`EventType::Lagged`](crate::EventType::Lagged) event where the
/// reader fell [`PERSISTENT_WATCH_BACKLOG`] events behind.
///
/// Dropping the last handle watching a path removes the server's watch there (removeWatches),
/// unless a one-shot watch on the path or a request setting one is still waiting: a ZooKeeper
/// 3.8 server keeps one watch per session and path, which the removal would take from it.
#[derive(Debug)]
pub struct PersistentWatcher {
    pub(crate) rx: mpsc::Receiver<WatchedEvent>,
    pub(crate) state: watch::Receiver<SessionState>,
    pub(crate) ended: Option<WatchedEvent>,
    /// The session task, weakly (a watcher does not keep the session open), and the server's
    /// path, to report the drop.
    pub(crate) task: mpsc::WeakUnboundedSender<Command>,
    pub(crate) server_path: String,
}

impl PersistentWatcher {
    /// The next event; after the session ends, an
    /// [`EventType::Session`](crate::EventType::Session) event every time, and after
    /// [`Client::remove_watches`](crate::Client::remove_watches) removed the watch, an
    /// [`EventType::PersistentWatchRemoved`](crate::EventType::PersistentWatchRemoved) one.
    ///
    /// # Cancellation safety
    /// Safe: an event is taken only when the future completes.
    pub async fn changed(&mut self) -> WatchedEvent {
        if let Some(ev) = &self.ended {
            return ev.clone();
        }
        let ev = match self.rx.recv().await {
            Some(ev) => ev,
            None => WatchedEvent::session(terminal(&self.state)),
        };
        if ev.event_type.ends_watch() {
            self.ended = Some(ev.clone());
        }
        ev
    }
}

impl Drop for PersistentWatcher {
    fn drop(&mut self) {
        // Closed before the report is sent, so that the session task, which may read it
        // before this handle's fields are dropped, finds the watcher gone.
        self.rx.close();
        if self.ended.is_none() {
            if let Some(task) = self.task.upgrade() {
                let _ = task.send(Command::Dropped(std::mem::take(&mut self.server_path)));
            }
        }
    }
}

/// The session's state changes, each one in order (a subscriber more than
/// [`STATE_EVENTS_BUFFER`](crate::STATE_EVENTS_BUFFER) behind skips to the current state).
#[derive(Debug)]
pub struct StateWatcher {
    pub(crate) rx: broadcast::Receiver<SessionState>,
    pub(crate) current: watch::Receiver<SessionState>,
    pub(crate) last: SessionState,
}

impl StateWatcher {
    /// The state now.
    pub fn peek_state(&self) -> SessionState {
        now(&self.current)
    }

    /// The next state change; a terminal state, once reached, is returned every time.
    ///
    /// # Cancellation safety
    /// Safe: a change is taken only when the future completes.
    pub async fn changed(&mut self) -> SessionState {
        if self.last.is_terminated() {
            return self.last;
        }
        self.last = match self.rx.recv().await {
            Ok(s) => s,
            Err(broadcast::error::RecvError::Lagged(_)) => now(&self.current),
            Err(broadcast::error::RecvError::Closed) => terminal(&self.current),
        };
        self.last
    }
}

/// The session's state now: `Closed` once its task is gone without reporting an end (its
/// runtime shut down), so that a caller waiting for a terminal state sees one.
pub(crate) fn now(state: &watch::Receiver<SessionState>) -> SessionState {
    let s = *state.borrow();
    if !s.is_terminated() && state.has_changed().is_err() {
        SessionState::Closed
    } else {
        s
    }
}

/// The state a session that can no longer deliver ended in.
fn terminal(state: &watch::Receiver<SessionState>) -> SessionState {
    let s = now(state);
    if s.is_terminated() {
        s
    } else {
        SessionState::Closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session task dropped without reporting an end (its runtime shut down) must not leave
    /// a caller waiting for a terminal state spinning on a state that never changes.
    #[tokio::test]
    async fn a_vanished_session_task_reads_as_closed() {
        let (state, current) = watch::channel(SessionState::SyncConnected);
        let (events, rx) = broadcast::channel(4);
        let mut w = StateWatcher { rx, current, last: SessionState::SyncConnected };
        assert_eq!(w.peek_state(), SessionState::SyncConnected);
        drop((state, events));
        assert_eq!(w.peek_state(), SessionState::Closed);
        assert_eq!(w.changed().await, SessionState::Closed);
        assert!(w.peek_state().is_terminated());
    }
}
