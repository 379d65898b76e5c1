//! The state a recipe's handles and its driver share: what the driver publishes (status,
//! current term, our node, events, metrics) and what handles set (queueing, close flags).

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::{broadcast, watch};

use crate::driver::election_options::{close_timeout_for, CloseMode};
use crate::driver::rule::Rule;
use crate::driver::status::{ElectionEvent, JoinInfo, MetricCells, Status};
use crate::session::Session;
use crate::telemetry::Labels;
use crate::term::control::{CloseFlags, Lifecycle};
use crate::term::leadership::Leadership;

/// Events a slow subscriber may fall behind by before it misses some (it is told how many).
pub(crate) const EVENT_BUFFER_EVENTS: usize = 1024;

/// The queueing state of a [`Lifecycle::Mutex`] recipe (docs/election.md §2.10).
#[derive(Debug, Default)]
pub(crate) struct Queue {
    pub auto_requeue: bool,
    /// An attempt is active (joining, waiting or leading).
    pub queued: bool,
    /// Leading, and `requeue()` asked for another attempt after the release.
    pub requeue_after: bool,
    pub leading: bool,
    /// The next join creates a plain EPHEMERAL node at this node's sequence instead of
    /// queueing, if this node still exists then (the read-write lock's downgrade: a read
    /// beside the write its handle holds).
    pub beside: Option<String>,
}

pub(crate) struct RecipeShared {
    pub lifecycle: Lifecycle,
    pub path: String,
    /// How the recipe names and orders its nodes.
    pub rule: Rule,
    pub session: Session,
    pub status: watch::Sender<Status>,
    pub events: broadcast::Sender<ElectionEvent>,
    pub metrics: MetricCells,
    pub current: Mutex<Option<Leadership>>,
    pub our_path: Mutex<Option<String>>,
    pub last_path_is_leader: Mutex<Option<String>>,
    pub joined: watch::Sender<Option<JoinInfo>>,
    /// Counts the driver's decisions (following, or holding a term), so that a handle can
    /// wait for one made after its request.
    pub decisions: watch::Sender<u64>,
    pub queue: Mutex<Queue>,
    pub close_mode: CloseMode,
    /// The configured close timeout; [`close_timeout_for`] applies the default.
    pub close_timeout: Option<Duration>,
    pub close: Arc<CloseFlags>,
    pub started: AtomicBool,
    /// The metric labels; set before the start by a recipe that names itself, else derived
    /// from the lifecycle and rule on first use.
    pub telemetry: OnceLock<Labels>,
}

impl RecipeShared {
    pub fn new(
        lifecycle: Lifecycle,
        path: &str,
        rule: Rule,
        session: &Session,
        close_mode: CloseMode,
        close_timeout: Option<Duration>,
        auto_requeue: bool,
    ) -> RecipeShared {
        RecipeShared {
            lifecycle,
            path: path.to_string(),
            rule,
            session: session.clone(),
            status: watch::channel(Status::Latent).0,
            events: broadcast::channel(EVENT_BUFFER_EVENTS).0,
            metrics: MetricCells::default(),
            current: Mutex::new(None),
            our_path: Mutex::new(None),
            last_path_is_leader: Mutex::new(None),
            joined: watch::channel(None).0,
            decisions: watch::channel(0).0,
            queue: Mutex::new(Queue { auto_requeue, ..Queue::default() }),
            close_mode,
            close_timeout,
            close: Arc::default(),
            started: AtomicBool::new(false),
            telemetry: OnceLock::new(),
        }
    }

    /// The labels of this recipe's metrics.
    pub fn labels(&self) -> &Labels {
        self.telemetry
            .get_or_init(|| Labels::new(recipe_label(self.lifecycle, self.rule), &self.path))
    }

    pub fn emit(&self, e: ElectionEvent) {
        let _ = self.events.send(e);
    }

    /// Publishes a status; a terminal status is final.
    pub fn set_status(&self, s: Status) {
        self.status.send_if_modified(|cur| {
            if *cur != s && !cur.is_terminal() {
                *cur = s;
                true
            } else {
                false
            }
        });
    }

    /// Records a decision: the participant follows, or holds a term.
    pub fn decided(&self) {
        self.decisions.send_modify(|n| *n += 1);
    }

    pub fn current(&self) -> Option<Leadership> {
        self.current.lock().expect("poisoned").clone()
    }

    pub fn set_our_path(&self, path: Option<String>) {
        *self.our_path.lock().expect("poisoned") = path;
    }

    pub fn close_timeout(&self) -> Duration {
        close_timeout_for(self.close_timeout, self.session.negotiated_timeout())
    }
}

/// The `recipe` label of a contender, from how it orders and ends its terms; a recipe that
/// shares another's (a selector is a mutex, a race a latch) names itself instead.
fn recipe_label(lifecycle: Lifecycle, rule: Rule) -> &'static str {
    match (lifecycle, rule.lock) {
        (Lifecycle::Latch, _) => "leader_latch",
        (_, crate::driver::rule::READ_MARKER) => "read_lock",
        (_, crate::driver::rule::WRITE_MARKER) => "write_lock",
        _ => "mutex",
    }
}
