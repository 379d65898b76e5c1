//! Options of the recipes.

use std::time::Duration;

use zookeeper_client::Acls;

/// What a leader does when the connection is suspended (docs/election.md §2.3).
///
/// Under both policies a leader stops before the server can expire its session: its
/// [`Leadership::lost`](crate::Leadership::lost) resolves no later than the lease's
/// `stop_at = last_ack_sent + T − safety_margin − stop_budget`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConnectionPolicy {
    /// Step down at once on Suspended (Curator's `StandardConnectionStateErrorPolicy`). The
    /// default, and the safe choice.
    #[default]
    StepDownOnSuspended,
    /// Keep leading through Suspended; step down on Lost or at the lease's `stop_at`
    /// (Curator's `SessionConnectionStateErrorPolicy`, with a correct clock).
    StepDownOnLost,
}

/// How followers learn that it may be their turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WatchStrategy {
    /// Each follower watches only its immediate predecessor (a getData watch), as Curator does.
    #[default]
    Predecessor,
    /// **For comparison benchmarks only.** Every follower watches the parent's children, so
    /// every membership change wakes every follower; O(N) notifications and O(N²) bytes of
    /// getChildren per change (seed 003's "方案一"). Leadership decisions are identical.
    Herd,
}

/// Whether closing a leading LeaderLatch emits a `Lost` event (Curator's `CloseMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CloseMode {
    /// No `Lost` event (the term's `lost()` still resolves with `Closed`). Curator's default.
    #[default]
    Silent,
    /// A closing leader emits `ElectionEvent::Lost { reason: Closed }`.
    NotifyLeader,
}

/// Options of a [`LeaderLatch`](crate::LeaderLatch).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LatchOptions {
    /// The participant id, stored as the node's data (UTF-8). Default `""`, as Curator.
    pub id: String,
    /// The default close mode.
    pub close_mode: CloseMode,
    /// The connection-state policy.
    pub policy: ConnectionPolicy,
    /// The watch strategy.
    pub strategy: WatchStrategy,
    /// ACLs of the nodes created (the participant node and missing containers). Default
    /// `anyone_all`, as Curator.
    pub acls: Acls<'static>,
    /// The time the application needs to stop acting; `lost()` resolves this long before the
    /// lease deadline. Default `T/5`.
    pub stop_budget: Option<Duration>,
    /// How long `close()` waits for the delete of our node. Default `T`.
    pub close_timeout: Option<Duration>,
    /// After a step-down that kept the node, delete it and rejoin at the tail (a fresh token)
    /// instead of resuming with the same token. Default false.
    pub rejoin_after_step_down: bool,
}

impl Default for LatchOptions {
    fn default() -> Self {
        LatchOptions {
            id: String::new(),
            close_mode: CloseMode::Silent,
            policy: ConnectionPolicy::default(),
            strategy: WatchStrategy::default(),
            acls: Acls::anyone_all(),
            stop_budget: None,
            close_timeout: None,
            rejoin_after_step_down: false,
        }
    }
}

impl LatchOptions {
    /// Sets the participant id.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// Sets the default close mode.
    pub fn with_close_mode(mut self, mode: CloseMode) -> Self {
        self.close_mode = mode;
        self
    }

    /// Rejoin at the tail after a step-down instead of resuming.
    pub fn with_rejoin_after_step_down(mut self, on: bool) -> Self {
        self.rejoin_after_step_down = on;
        self
    }
}

/// Options of a [`LeaderSelector`](crate::LeaderSelector).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SelectorOptions {
    /// The participant id (node data). Default `"{hostname}-{pid}"`.
    pub id: Option<String>,
    /// Requeue after every term.
    pub auto_requeue: bool,
    /// The connection-state policy.
    pub policy: ConnectionPolicy,
    /// The watch strategy.
    pub strategy: WatchStrategy,
    /// ACLs of created nodes. Default `anyone_all`.
    pub acls: Acls<'static>,
    /// The stop budget. Default `T/5`.
    pub stop_budget: Option<Duration>,
    /// How long `close()` waits for the delete of our node. Default `T`.
    pub close_timeout: Option<Duration>,
}

impl Default for SelectorOptions {
    fn default() -> Self {
        SelectorOptions {
            id: None,
            auto_requeue: false,
            policy: ConnectionPolicy::default(),
            strategy: WatchStrategy::default(),
            acls: Acls::anyone_all(),
            stop_budget: None,
            close_timeout: None,
        }
    }
}

impl SelectorOptions {
    /// Sets the participant id.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Turns auto-requeue on or off.
    pub fn with_auto_requeue(mut self, on: bool) -> Self {
        self.auto_requeue = on;
        self
    }
}

/// The setters both recipes' options share, with one meaning.
macro_rules! shared_setters {
    ($options:ty) => {
        impl $options {
            /// Sets the connection-state policy.
            pub fn with_policy(mut self, policy: ConnectionPolicy) -> Self {
                self.policy = policy;
                self
            }

            /// Sets the watch strategy.
            pub fn with_strategy(mut self, strategy: WatchStrategy) -> Self {
                self.strategy = strategy;
                self
            }

            /// Sets the ACLs of created nodes.
            pub fn with_acls(mut self, acls: Acls<'static>) -> Self {
                self.acls = acls;
                self
            }

            /// Sets the stop budget.
            pub fn with_stop_budget(mut self, budget: Duration) -> Self {
                self.stop_budget = Some(budget);
                self
            }

            /// Sets the close timeout.
            pub fn with_close_timeout(mut self, timeout: Duration) -> Self {
                self.close_timeout = Some(timeout);
                self
            }
        }
    };
}

shared_setters!(LatchOptions);
shared_setters!(SelectorOptions);

pub(crate) fn default_selector_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into());
    format!("{host}-{}", std::process::id())
}
