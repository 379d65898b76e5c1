//! Every metric the recipes emit, through the `metrics` facade: an application's own recorder
//! (a Prometheus exporter, StatsD, ...) picks them up, and with none installed each call is a
//! check of an unset global. Names carry the `rzk_recipes_` prefix and their unit; every
//! series is labelled with the recipe and its path. docs/recipes.md lists them.

use std::sync::Arc;
use std::time::Duration;

use metrics::{counter, gauge, histogram, Label};

use crate::loss::LossReason;

/// Terms currently held (0 or 1 for an election or a lock, up to the lease count for a
/// semaphore's process).
pub const HOLDING: &str = "rzk_recipes_holding";
/// Terms started: leaderships, lock holds, leases.
pub const TERMS_STARTED: &str = "rzk_recipes_terms_started_total";
/// Terms ended, labelled by `reason` (the loss reason).
pub const TERMS_ENDED: &str = "rzk_recipes_terms_ended_total";
/// How long each term lasted, from its start to its loss signal.
pub const TERM_DURATION: &str = "rzk_recipes_term_duration_seconds";
/// Watch notifications a recipe woke on (predecessor, leader, race node or children watch).
pub const WATCH_NOTIFICATIONS: &str = "rzk_recipes_watch_notifications_total";
/// Reads a recipe decided on, one per evaluation: the children for a queue (latch, selector,
/// locks, a semaphore's leases), the node for a race.
pub const EVALUATIONS: &str = "rzk_recipes_evaluations_total";

/// The labels of one recipe's series: which recipe, on which path.
#[derive(Debug, Clone)]
pub(crate) struct Labels {
    recipe: &'static str,
    path: Arc<str>,
}

impl Labels {
    pub fn new(recipe: &'static str, path: &str) -> Labels {
        Labels { recipe, path: path.into() }
    }

    fn pairs(&self) -> [Label; 2] {
        [Label::new("recipe", self.recipe), Label::new("path", self.path.to_string())]
    }
}

/// A term started.
pub(crate) fn term_started(l: &Labels) {
    counter!(TERMS_STARTED, l.pairs().iter()).increment(1);
    gauge!(HOLDING, l.pairs().iter()).increment(1.0);
}

/// A term's loss signal resolved with `reason`, `lasted` after it started (once per term).
pub(crate) fn term_ended(l: &Labels, reason: LossReason, lasted: Duration) {
    let [recipe, path] = l.pairs();
    let by_reason = [recipe, path, Label::new("reason", reason_label(reason))];
    counter!(TERMS_ENDED, by_reason.iter()).increment(1);
    gauge!(HOLDING, l.pairs().iter()).decrement(1.0);
    histogram!(TERM_DURATION, l.pairs().iter()).record(lasted.as_secs_f64());
}

/// The driver woke on a watch notification.
pub(crate) fn watch_notification(l: &Labels) {
    counter!(WATCH_NOTIFICATIONS, l.pairs().iter()).increment(1);
}

/// The driver read the children to decide.
pub(crate) fn evaluation(l: &Labels) {
    counter!(EVALUATIONS, l.pairs().iter()).increment(1);
}

/// The `reason` label's value: stable snake-case names, not the human-readable Display.
pub fn reason_label(reason: LossReason) -> &'static str {
    match reason {
        LossReason::Suspended => "suspended",
        LossReason::LeaseExpired => "lease_expired",
        LossReason::SessionExpired => "session_expired",
        LossReason::NodeDeleted => "node_deleted",
        LossReason::ForeignNodes => "foreign_nodes",
        LossReason::Resigned => "resigned",
        LossReason::Closed => "closed",
        LossReason::Interrupted => "interrupted",
        LossReason::ClientClosed => "client_closed",
    }
}
