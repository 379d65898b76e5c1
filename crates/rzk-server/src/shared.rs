//! [`Inner`]: what every task of a server shares: the core and the connection table behind one
//! mutex, the failure flag, the timer's wake-up and the shutdown signal.
//!
//! The mutex is never held across an `.await`. A reader decodes every whole frame it has,
//! feeds them to the core under one lock, and routes what the core emits into each
//! connection's queue before releasing it (see [`Inner::pump`]), so every queue holds its frames
//! in the core's order.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use parking_lot::MutexGuard;
use rzk_core::{ConnId, Core, Now, State, Txn};
use tokio::sync::Notify;

use crate::config::ServerConfig;
use crate::durable::LogHost;
use crate::flow_control::ConnCtl;
use crate::output_queue::{ConnOut, Outgoing};
use crate::server_stats::{Report, ServerStats};

/// A connection in the table: where its output goes, and the address it counts against.
pub(crate) struct ConnHandle {
    pub(crate) out: Arc<ConnOut>,
    pub(crate) ip: IpAddr,
    pub(crate) ctl: Arc<ConnCtl>,
}

/// What the core's mutex guards: the core and everything that must change in step with it.
pub(crate) struct Shared {
    pub(crate) core: Core,
    /// Where transactions go to be made durable; `None` in memory.
    pub(crate) log_tx: Option<std::sync::mpsc::Sender<Vec<Txn>>>,
    /// The log thread, joined at shutdown: it ends once `log_tx` is dropped and its last
    /// batch is synced.
    pub(crate) log_thread: Option<std::thread::JoinHandle<()>>,
    pub(crate) conns: HashMap<ConnId, ConnHandle>,
    pub(crate) per_ip: HashMap<IpAddr, usize>,
    pub(crate) next_conn: ConnId,
    /// Scratch for `pump`: each connection's frames of one pump, and where each connection
    /// sits in it. Kept to reuse their allocations.
    pub(crate) outgoing: Vec<Outgoing>,
    pub(crate) outgoing_at: HashMap<ConnId, usize>,
}

pub(crate) struct Inner {
    /// The core and the connections. parking_lot's mutex, for its eventual fairness: with
    /// std's, the connection tasks could re-take the lock so fast under load that the log
    /// thread, woken to mark a batch durable, lost the race again and again, and every write's
    /// reply waited with it.
    /// It does not poison: after a panic mid-update the state is still the best we have.
    shared: parking_lot::Mutex<Shared>,
    /// Set when the server can no longer keep its promises (a failed fsync).
    fatal: Mutex<Option<String>>,
    pub(crate) failed: Notify,
    origin: Instant,
    pub(crate) config: ServerConfig,
    pub(crate) timer_wake: Notify,
    pub(crate) timer_target_ms: AtomicU64,
    pub(crate) shutdown: Notify,
    pub(crate) stats: ServerStats,
}

impl Inner {
    /// A server's shared part around `core`, with no connection yet; `origin` is the zero of
    /// its monotonic clock.
    pub(crate) fn new(config: ServerConfig, core: Core, origin: Instant) -> Inner {
        Inner {
            fatal: Mutex::new(None),
            failed: Notify::new(),
            shared: parking_lot::Mutex::new(Shared {
                core,
                log_tx: None,
                log_thread: None,
                conns: HashMap::new(),
                per_ip: HashMap::new(),
                next_conn: 1,
                outgoing: Vec::new(),
                outgoing_at: HashMap::new(),
            }),
            origin,
            config,
            timer_wake: Notify::new(),
            timer_target_ms: AtomicU64::new(u64::MAX),
            shutdown: Notify::new(),
            stats: ServerStats::default(),
        }
    }

    /// The shell's figures now (see [`ServerStats::report`]); takes the core's lock briefly.
    pub(crate) fn stats_report(&self) -> Report {
        let queued = {
            let sh = self.lock();
            sh.conns.values().map(|h| h.ctl.queued_bytes() as u64).sum()
        };
        self.stats.report(queued)
    }

    pub(crate) fn now(&self) -> Now {
        let wall_ms =
            SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
        Now { mono_ms: self.origin.elapsed().as_millis() as u64, wall_ms }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock()
    }

    /// The core's lock if it comes free within `within` (a liveness probe).
    pub(crate) fn try_lock_for(
        &self,
        within: std::time::Duration,
    ) -> Option<MutexGuard<'_, Shared>> {
        self.shared.try_lock_for(within)
    }

    /// Why the server failed, if it has (see [`Inner::fail`]).
    pub(crate) fn failure(&self) -> Option<String> {
        self.fatal.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether the server has failed (see [`Inner::fail`]).
    pub(crate) fn is_failed(&self) -> bool {
        self.fatal.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// Stops serving for good: something the server promised (durability) can no longer be
    /// kept. Connections are closed so that clients fail over instead of waiting.
    pub(crate) fn fail(&self, why: String) {
        tracing::error!("server failed, no longer serving: {why}");
        *self.fatal.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
        self.failed.notify_waiters();
        self.shutdown.notify_one();
    }
}

/// The log thread's view of the server: the core's state under its lock, the durability
/// report, and the failure flag.
impl LogHost for Inner {
    fn mark_durable(&self, zxid: i64) {
        let flush = {
            let mut sh = self.lock();
            sh.core.mark_durable(zxid);
            self.pump(&mut sh)
        };
        flush.run();
    }

    fn with_state<R>(&self, f: impl FnOnce(&State) -> R) -> R {
        f(self.lock().core.state())
    }

    fn durable_zxid(&self) -> i64 {
        self.lock().core.durable_zxid()
    }

    fn fail(&self, why: String) {
        Inner::fail(self, why);
    }

    fn is_failed(&self) -> bool {
        Inner::is_failed(self)
    }

    fn stats(&self) -> &ServerStats {
        &self.stats
    }
}
