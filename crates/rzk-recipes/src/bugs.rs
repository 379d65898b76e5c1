//! Fixed bugs a test can bring back, one at a time and on its own thread only, to prove that
//! a checker finds them (crates/rzk-world's `reintroduced_bugs_are_found`). Compiled only
//! with the `bug-switches` feature; without it every switch is off and costs nothing.

/// A fixed bug that can be brought back.
#[cfg(feature = "bug-switches")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Bug {
    /// The lease trusts the session timeout the client asked for, not the one the server
    /// negotiated (which may be shorter): a holder keeps acting after the server could have
    /// expired its session.
    LeaseTrustsRequestedTimeout,
    /// A guarded write made as the connection drops is kept for the reconnect, as other
    /// requests are: it lands whenever the session comes back, after the holder's loss
    /// signal fired and it stopped acting.
    GuardedWriteKeptForReconnect,
    /// A release asked for while the term's release is already under way (our node taken,
    /// its delete in flight) is answered at once: `release()` returns with the node still
    /// there.
    ResignAnsweredBeforeDelete,
    /// A recipe whose session was replaced keeps the node it created on the earlier session
    /// and leads with it: the earlier session, which the server may still keep alive, expires
    /// on its own schedule and takes the node with it, not on the lease the holder trusts.
    LockOnEarlierSessionNode,
    /// A semaphore lease lost to a suspension, then released, is answered at once while the
    /// reaper still owes its node's delete: `release()` returns with the node still counting
    /// against the leases.
    SemaphoreReleaseBeforeDelete,
    /// An acquire given up (timed out or dropped) forgets its queued node instead of deleting
    /// it: the node stays in the queue for the session's life, and every later waiter queues
    /// behind it.
    WithdrawnNodeKept,
    /// A service registration keeps the data it was first registered with: an update writes
    /// its node, and the next check after a reconnection writes the old data back (Curator's
    /// re-registration once used the instance it was given first).
    RegistrationKeepsFirstData,
    /// A cache's full read (after a reconnect, or a watch that lagged) adds the children it
    /// finds and keeps the ones the server no longer has: a node deleted while the
    /// connection was down, its event lost with it, stays in the cache for good.
    CacheKeepsVanishedChildren,
    /// rzk-client retries every reconnect at once, with no pause or back-off (the storm a
    /// session with credentials once caused against a server enforcing authentication).
    ReconnectStorm,
}

#[cfg(feature = "bug-switches")]
thread_local! {
    static ON: std::cell::Cell<Option<Bug>> = const { std::cell::Cell::new(None) };
}

/// Brings `bug` back on this thread (`None`: every bug fixed again).
#[cfg(feature = "bug-switches")]
pub fn reintroduce(bug: Option<Bug>) {
    ON.with(|b| b.set(bug));
    // Two of them live in rzk-client.
    use rzk_client::bugs::Bug as ClientBug;
    rzk_client::bugs::reintroduce(match bug {
        Some(Bug::ReconnectStorm) => Some(ClientBug::ReconnectStorm),
        Some(Bug::GuardedWriteKeptForReconnect) => Some(ClientBug::ConnectedCommitKept),
        _ => None,
    });
}

/// Declares `fn $name() -> bool`: whether `Bug::$bug` is back on this thread; always false
/// without the feature.
macro_rules! switch {
    ($(#[$doc:meta])* $name:ident => $bug:ident) => {
        $(#[$doc])*
        pub(crate) fn $name() -> bool {
            #[cfg(feature = "bug-switches")]
            {
                ON.with(|b| b.get() == Some(Bug::$bug))
            }
            #[cfg(not(feature = "bug-switches"))]
            {
                false
            }
        }
    };
}

switch!(
    /// Whether the lease should trust the requested timeout.
    lease_trusts_requested_timeout => LeaseTrustsRequestedTimeout
);
switch!(
    /// Whether a resign during a release is answered at once.
    resign_answered_before_delete => ResignAnsweredBeforeDelete
);
switch!(
    /// Whether a lost lease's release skips the delete it owes.
    semaphore_release_before_delete => SemaphoreReleaseBeforeDelete
);
switch!(
    /// Whether a withdrawn attempt's node is forgotten, not deleted.
    withdrawn_node_kept => WithdrawnNodeKept
);
switch!(
    /// Whether a recipe keeps its node across sessions.
    lock_on_earlier_session_node => LockOnEarlierSessionNode
);
switch!(
    /// Whether an update leaves the registration's first data to re-register.
    registration_keeps_first_data => RegistrationKeepsFirstData
);
switch!(
    /// Whether a cache's full read keeps the children it no longer finds.
    cache_keeps_vanished_children => CacheKeepsVanishedChildren
);
