//! The options every queue recipe shares ([`ElectionOptions`]) and each one's own: a latch's,
//! a selector's, a mutex's, a race election's. A leader's connection policy is the term's
//! (`term::guard`), re-exported here beside the rest.

use std::time::Duration;

use rzk_client::Acls;

pub use crate::term::guard::ConnectionPolicy;

/// How followers learn that it may be their turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WatchStrategy {
    /// Each follower watches only its immediate predecessor (a getData watch), as Curator does.
    #[default]
    Predecessor,
    /// **For comparison benchmarks only.** Every follower watches the parent's children, so
    /// every membership change wakes every follower; O(N) notifications and O(N²) bytes of
    /// getChildren per change (the "herd effect" scheme). Leadership decisions are identical.
    Herd,
}

/// Whether closing a leading recipe emits a `Lost` event (Curator's LeaderLatch `CloseMode`).
/// A silent close still resolves the term's `lost()` with `Closed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CloseMode {
    /// No `Lost` event (the term's `lost()` still resolves with `Closed`). Curator's default.
    #[default]
    Silent,
    /// A closing leader emits `ElectionEvent::Lost { reason: Closed }`.
    NotifyLeader,
}

/// The options every recipe shares, embedded in [`LatchOptions`] and [`SelectorOptions`]
/// (which dereference to it, so `options.policy` reads the same on both).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ElectionOptions {
    /// The participant id, stored as the node's data (UTF-8). A LeaderLatch defaults to `""`
    /// and a LeaderSelector to `"{hostname}-{pid}"`, as Curator.
    pub id: String,
    /// The default close mode: `Silent` for a LeaderLatch (as Curator), `NotifyLeader` for a
    /// LeaderSelector.
    pub close_mode: CloseMode,
    /// The connection-state policy.
    pub policy: ConnectionPolicy,
    /// The watch strategy.
    pub strategy: WatchStrategy,
    /// ACLs of the nodes created (the participant node and missing containers). Default
    /// `None`: the session's [`crate::session::AclProvider`] names one for each path, as Curator's.
    pub acls: Option<Acls<'static>>,
    /// The time the application needs to stop acting; `lost()` resolves this long before the
    /// lease deadline. Default `T/5`.
    pub stop_budget: Option<Duration>,
    /// How long `close()` waits for the delete of our node. Default `T`.
    pub close_timeout: Option<Duration>,
}

impl ElectionOptions {
    fn for_id(id: String) -> Self {
        ElectionOptions {
            id,
            close_mode: CloseMode::Silent,
            policy: ConnectionPolicy::default(),
            strategy: WatchStrategy::default(),
            acls: None,
            stop_budget: None,
            close_timeout: None,
        }
    }

    /// The stop budget for a session of timeout `session_timeout`.
    pub(crate) fn stop_budget_for(&self, session_timeout: Duration) -> Duration {
        self.stop_budget.unwrap_or(session_timeout / 5)
    }
}

/// How long a close or a release waits for its delete to be confirmed: the configured
/// [`ElectionOptions::close_timeout`], else the session timeout `session_timeout`. The one
/// rule for every recipe.
pub(crate) fn close_timeout_for(
    configured: Option<Duration>,
    session_timeout: Duration,
) -> Duration {
    configured.unwrap_or(session_timeout)
}

impl Default for ElectionOptions {
    fn default() -> Self {
        ElectionOptions::for_id(String::new())
    }
}

/// Options of a [`LeaderLatch`](crate::election::LeaderLatch): the shared ones, and what only a latch
/// has.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct LatchOptions {
    /// The options every recipe shares.
    pub common: ElectionOptions,
    /// After a step-down that kept the node, delete it and rejoin at the tail (a fresh token)
    /// instead of resuming with the same token. Default false.
    pub rejoin_after_step_down: bool,
}

impl LatchOptions {
    /// Rejoin at the tail after a step-down instead of resuming.
    pub fn with_rejoin_after_step_down(mut self, on: bool) -> Self {
        self.rejoin_after_step_down = on;
        self
    }
}

/// Options of a [`LeaderSelector`](crate::election::LeaderSelector): the shared ones, and what only a
/// selector has.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SelectorOptions {
    /// The options every recipe shares (the id defaults to `"{hostname}-{pid}"`).
    pub common: ElectionOptions,
    /// Requeue after every term.
    pub auto_requeue: bool,
}

impl Default for SelectorOptions {
    fn default() -> Self {
        // A selector's every term ends in a release, and its end has always been reported:
        // closing one reports it too, unless closed with `CloseMode::Silent`.
        let mut common = ElectionOptions::for_id(default_selector_id());
        common.close_mode = CloseMode::NotifyLeader;
        SelectorOptions { common, auto_requeue: false }
    }
}

impl SelectorOptions {
    /// Turns auto-requeue on or off.
    pub fn with_auto_requeue(mut self, on: bool) -> Self {
        self.auto_requeue = on;
        self
    }
}

/// Options of an [`InterProcessMutex`](crate::lock::InterProcessMutex).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct MutexOptions {
    /// The options every recipe shares. The id (the lock node's data) defaults to this host's
    /// address, as Curator's default data is.
    pub common: ElectionOptions,
}

impl Default for MutexOptions {
    fn default() -> Self {
        let mut common = ElectionOptions::for_id(local_address());
        common.close_mode = CloseMode::NotifyLeader;
        MutexOptions { common }
    }
}

/// Options of a [`RaceElection`](crate::election::RaceElection): the shared ones (the id, the node's
/// data, defaults to `"{hostname}-{pid}"`; the close mode to `Silent`, as a latch's). The
/// watch strategy does not apply: every waiter watches the one node.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RaceOptions {
    /// The options every recipe shares.
    pub common: ElectionOptions,
}

impl Default for RaceOptions {
    fn default() -> Self {
        RaceOptions { common: ElectionOptions::for_id(default_selector_id()) }
    }
}

/// The setters of the shared options, declared once for every options type.
macro_rules! shared_setters {
    ($($options:ty),*) => {$(
        impl $options {
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

            /// Sets the ACLs of created nodes, instead of the session's ACL provider's.
            pub fn with_acls(mut self, acls: Acls<'static>) -> Self {
                self.acls = Some(acls);
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
    )*};
}

// Through `DerefMut`, `self.policy` is the embedded options' field on every type.
shared_setters!(ElectionOptions, LatchOptions, SelectorOptions, MutexOptions, RaceOptions);

macro_rules! deref_to_common {
    ($($options:ty),*) => {$(
        impl std::ops::Deref for $options {
            type Target = ElectionOptions;
            fn deref(&self) -> &ElectionOptions {
                &self.common
            }
        }

        impl std::ops::DerefMut for $options {
            fn deref_mut(&mut self) -> &mut ElectionOptions {
                &mut self.common
            }
        }
    )*};
}

deref_to_common!(LatchOptions, SelectorOptions, MutexOptions, RaceOptions);

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

fn default_selector_id() -> String {
    format!("{}-{}", hostname(), std::process::id())
}

/// This host's address as Java's `InetAddress.getLocalHost().getHostAddress()` gives it (the
/// host name resolved, IPv4 first), which is what Curator writes into a lock node by default.
fn local_address() -> String {
    use std::net::ToSocketAddrs;
    let addrs: Vec<std::net::SocketAddr> =
        (hostname(), 0).to_socket_addrs().map(|a| a.collect()).unwrap_or_default();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .map(|a| a.ip().to_string())
        .unwrap_or_else(|| "127.0.0.1".into())
}
