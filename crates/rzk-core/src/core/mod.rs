//! [`Core`]: the server as a deterministic state machine.
//!
//! ```text
//!   shell ──open/receive/closed(conn, bytes, now)──▶ Core ──poll_output()──▶ frames, closes
//!   shell ──tick(now)──────────────────────────────▶      ──drain_txns()───▶ log (durable mode)
//!   shell ──mark_durable(zxid)─────────────────────▶      ──next_deadline()─▶ timer
//! ```
//!
//! Writes are applied to the state immediately, so later requests validate against them, but
//! every output waits behind a durability barrier: a reply, notification or close built after
//! zxid Z is released only once the shell reports Z durable. Hence nothing a client learns
//! (an acknowledgement, a read, an event) can be lost by a crash, and each connection's
//! outputs leave in the order they were produced.
//!
//! Each file holds one concern of [`Core`], as an `impl Core` block or the types it uses:
//! - `interface`: what passes between the shell and the core ([`Now`], [`Output`], ...).
//! - `records`, `passwords`: the record kept per connection and per live session; session
//!   passwords.
//! - `outputs`: the output queue and its durability barrier (`poll_output`, `mark_durable`).
//! - `commit`: applying a transaction, queueing it for the log, firing watches.
//! - `connections`: open, closed, the handshake, `receive`.
//! - `dispatch`: decoding a request and routing it; `writes`, `reads` and
//!   `connection_requests` (auth, setWatches) and `sasl` answer it; `frames` builds common replies.
//! - `sessions`: session lifetimes; `tick`: expiry and reaping, and when they are next due.
//! - `monitoring`: what the four-letter words read.

mod commit;
mod connection_requests;
mod connections;
mod dispatch;
mod frames;
mod interface;
mod monitoring;
mod outputs;
mod passwords;
mod reads;
mod records;
mod sasl;
mod sessions;
mod tick;
mod writes;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use crate::config::Config;
use crate::state::State;
use crate::txn::Txn;
use crate::watches::{ConnId, WatchLimits, Watches};

pub use self::interface::{CloseReason, ConnError, Counters, Now, Output};
use self::passwords::Passwords;
use self::records::{Conn, LiveSession};

/// The deterministic server. See the module docs for the event/output model.
#[derive(Debug)]
pub struct Core {
    config: Config,
    state: State,
    watches: Watches,
    conns: BTreeMap<ConnId, Conn>,
    live: HashMap<i64, LiveSession>,
    /// (deadline, session). Entries may be stale (the session was touched since); each live
    /// session has exactly one entry, re-filed at its true deadline when a stale one is popped.
    expiry: BTreeSet<(u64, i64)>,
    next_session_id: i64,
    passwords: Passwords,
    pending: VecDeque<(i64, Output)>,
    ready: VecDeque<Output>,
    /// Bytes of the frames in `pending` and `ready`.
    output_bytes: usize,
    txns: Vec<Txn>,
    durable_zxid: i64,
    next_reap_ms: u64,
    counters: Counters,
    started_mono_ms: u64,
    /// Whether [`Core::start_serving`] has been called. Until then no session expires: the
    /// timeouts of restored sessions count from the moment clients can reach the server.
    serving: bool,
}

impl Core {
    /// A core over a fresh tree, serving from `now`: it has no session to restore.
    pub fn new(config: Config, now: Now) -> Core {
        let mut core = Core::with_state(config, State::new(), now);
        core.start_serving(now);
        core
    }

    /// A core over a recovered state, not yet serving: the sessions in it do not expire until
    /// [`Core::start_serving`], which gives each a full timeout from then to reconnect.
    pub fn with_state(config: Config, state: State, now: Now) -> Core {
        let server_bits = i64::from(config.server_id) << 56;
        let time_bits = ((now.wall_ms << 24) as u64 >> 8) as i64;
        let max_existing = state.sessions().keys().copied().max().unwrap_or(0);
        let next_session_id = (time_bits | server_bits).max(max_existing + 1);
        let watches = Watches::with_limits(WatchLimits {
            watches_max: config.watches_per_connection_max,
            path_bytes_max: config.watch_path_bytes_per_connection_max,
        });
        let mut core = Core {
            passwords: Passwords { key: config.seed.to_be_bytes() },
            next_reap_ms: now.mono_ms + config.container_check_interval_ms,
            config,
            durable_zxid: state.last_zxid(),
            watches,
            conns: BTreeMap::new(),
            live: HashMap::new(),
            expiry: BTreeSet::new(),
            next_session_id,
            pending: VecDeque::new(),
            ready: VecDeque::new(),
            output_bytes: 0,
            txns: Vec::new(),
            counters: Counters::default(),
            started_mono_ms: now.mono_ms,
            serving: false,
            state,
        };
        let sessions: Vec<(i64, i32)> =
            core.state.sessions().iter().map(|(id, s)| (*id, s.timeout_ms)).collect();
        for (id, timeout_ms) in sessions {
            core.start_session(id, timeout_ms, None, now);
        }
        core
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The replicated state.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// Counters for monitoring.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The watch tables.
    pub fn watches(&self) -> &Watches {
        &self.watches
    }

    /// Number of open connections.
    pub fn connection_count(&self) -> usize {
        self.conns.len()
    }

    /// Live sessions and the connection each is attached to.
    pub fn live_sessions(&self) -> impl Iterator<Item = (i64, Option<ConnId>)> + '_ {
        self.live.iter().map(|(id, s)| (*id, s.conn))
    }
}
