//! What the session manager publishes: connection states in Curator's vocabulary, the lease,
//! and the snapshot every recipe driver follows.

use std::time::{Duration, Instant};

use rzk_client::{Client, SessionId};
use tokio::sync::{broadcast, watch};

use super::config::SessionConfig;

/// Curator's connection states, plus the terminal ones.
///
/// Intermediate: `Connected`, `Suspended`, `Reconnected`, `Lost` (the manager opens a new
/// session after `Lost`). Terminal: `Closed`, `Failed`.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionState {
    /// The first session of this manager is connected.
    Connected,
    /// The connection is down; the session may still be alive on the server.
    Suspended,
    /// Connected again: to the same session (`new_session: false`) or, after `Lost`, to a new
    /// one.
    Reconnected {
        /// True when this is a new session (a new generation).
        new_session: bool,
    },
    /// The session expired, or was declared expired locally (simulated expiry). Every
    /// ephemeral node of it is, or will soon be, gone.
    Lost,
    /// Closed by [`Session::close`](crate::session::Session::close) or by dropping every handle.
    Closed,
    /// Authentication failed; nothing more will happen.
    Failed,
}

impl ConnectionState {
    /// True while requests can be served.
    pub fn is_connected(self) -> bool {
        matches!(self, ConnectionState::Connected | ConnectionState::Reconnected { .. })
    }

    /// True for `Closed` and `Failed`.
    pub fn is_terminal(self) -> bool {
        matches!(self, ConnectionState::Closed | ConnectionState::Failed)
    }
}

/// One connection-state change.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConnectionEvent {
    /// The new state.
    pub state: ConnectionState,
    /// The session concerned (the new one for `Reconnected { new_session: true }`).
    pub session_id: Option<SessionId>,
    /// The session generation: 1 for the first session, +1 for every new one.
    pub generation: u64,
    /// When the manager saw the change.
    pub at: Instant,
}

/// The lease of the current session (docs/election.md §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// The generation this lease belongs to.
    pub generation: u64,
    /// Send time of the latest request whose successful reply has been received.
    pub last_ack_sent: Instant,
    /// `last_ack_sent + T`: the server cannot expire the session before this.
    pub server_expiry_not_before: Instant,
    /// `last_ack_sent + T − safety_margin`: a leader must not act after this.
    pub deadline: Instant,
}

/// The level state every recipe driver follows.
#[derive(Clone)]
pub(crate) struct Snapshot {
    pub state: ConnectionState,
    pub client: Option<Client>,
    pub session_id: Option<SessionId>,
    pub generation: u64,
    /// Incremented on every `Suspended` (so that a coalesced blip is still seen).
    pub suspensions: u64,
    /// Incremented on every `Reconnected { new_session: false }`.
    pub reconnects: u64,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct LeaseState {
    pub generation: u64,
    pub last_ack_sent: Instant,
    /// The session timeout `T` of the latest handshake: a session that moves to a member
    /// with other bounds gets another, and the server expires it by that one.
    pub timeout: Duration,
    /// The safety margin subtracted from `last_ack_sent + T`, derived from `timeout`.
    pub margin: Duration,
}

impl LeaseState {
    /// The lease of `generation` from `last_ack_sent`, with the timeout `client` negotiated.
    pub fn new(
        generation: u64,
        last_ack_sent: Instant,
        client: &Client,
        config: &SessionConfig,
    ) -> LeaseState {
        let timeout = if crate::bugs::lease_trusts_requested_timeout() {
            config.session_timeout
        } else {
            client.session_timeout()
        };
        LeaseState { generation, last_ack_sent, timeout, margin: config.margin_for(timeout) }
    }

    /// The earliest moment a server could expire the session.
    pub fn server_expiry_not_before(&self) -> Instant {
        self.last_ack_sent + self.timeout
    }

    /// When the holder must stop acting: the server's earliest expiry less the margin.
    pub fn deadline(&self) -> Instant {
        self.server_expiry_not_before() - self.margin
    }
}

pub(crate) struct Publisher {
    pub snap: watch::Sender<Snapshot>,
    pub lease: watch::Sender<LeaseState>,
    /// The final lease of the previous generation (for reporting a lost term's deadline).
    pub prev_lease: std::sync::Mutex<Option<LeaseState>>,
    pub events: broadcast::Sender<ConnectionEvent>,
    pub config: SessionConfig,
    /// The heartbeat's period, from the first session's timeout.
    pub heartbeat: Duration,
}

impl Publisher {
    /// Publishes a change of the snapshot and its connection event.
    pub fn publish(&self, f: impl FnOnce(&mut Snapshot)) {
        self.snap.send_modify(f);
        let s = self.snap.borrow().clone();
        let _ = self.events.send(ConnectionEvent {
            state: s.state,
            session_id: s.session_id,
            generation: s.generation,
            at: crate::clock::now(),
        });
    }

    /// Records a successful reply to a request sent at `sent` on generation `generation`.
    pub fn ack(&self, generation: u64, sent: Instant) {
        self.lease.send_if_modified(|l| {
            if l.generation == generation && sent > l.last_ack_sent {
                l.last_ack_sent = sent;
                true
            } else {
                false
            }
        });
    }

    /// The last lease deadline of `generation`, current or just ended.
    pub fn last_deadline(&self, generation: u64) -> Option<Instant> {
        let l = *self.lease.borrow();
        let l = if l.generation == generation {
            Some(l)
        } else {
            self.prev_lease.lock().expect("poisoned").filter(|p| p.generation == generation)
        };
        l.map(|l| l.deadline())
    }

    /// Takes the timeout `client` renegotiated on a reconnect of `generation`'s session.
    pub fn renegotiated(&self, generation: u64, client: &Client) {
        if crate::bugs::lease_trusts_requested_timeout() {
            return;
        }
        let timeout = client.session_timeout();
        self.lease.send_if_modified(|l| {
            if l.generation != generation || l.timeout == timeout {
                return false;
            }
            tracing::info!(generation, ?timeout, was = ?l.timeout, "the lease takes the renegotiated timeout");
            l.timeout = timeout;
            l.margin = self.config.margin_for(timeout);
            true
        });
    }

    /// Starts the lease of a new generation, keeping the final one of the old.
    pub fn new_lease(&self, lease: LeaseState) {
        let old = self.lease.send_replace(lease);
        *self.prev_lease.lock().expect("poisoned") = Some(old);
    }

    /// The lease deadline of `generation`, or `None` if that generation is over.
    pub fn deadline(&self, generation: u64) -> Option<Instant> {
        let l = *self.lease.borrow();
        (l.generation == generation && self.snap.borrow().generation == generation)
            .then(|| l.deadline())
    }
}
