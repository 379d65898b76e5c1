//! Fixed client bugs a simulation can bring back, one at a time and on its own thread only, to
//! prove that its checks find them (crates/rzk-world's `reintroduced_bugs_are_found`). Compiled
//! only with the `bug-switches` feature; without it every switch is off and costs nothing.

/// A fixed client bug that can be brought back (without the feature, nothing can bring one
/// back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Bug {
    /// Every reconnect is tried at once, with no pause and no back-off: a server that refuses
    /// or closes at once (one recovering its log, or one that enforces authentication) is
    /// hammered in a loop that serves nothing.
    ReconnectStorm,
    /// `MultiWriter::commit_connected` keeps a multi made while disconnected for the next
    /// connection, as `commit` does, instead of failing it unsent.
    ConnectedCommitKept,
}

#[cfg(feature = "bug-switches")]
thread_local! {
    static ON: std::cell::Cell<Option<Bug>> = const { std::cell::Cell::new(None) };
}

/// Brings `bug` back on this thread (`None`: every client bug fixed again).
#[cfg(feature = "bug-switches")]
pub fn reintroduce(bug: Option<Bug>) {
    ON.with(|b| b.set(bug));
}

/// Whether a connected-only multi is kept for the reconnect.
pub(crate) fn connected_commit_kept() -> bool {
    is_on(|b| b == Bug::ConnectedCommitKept)
}

/// Whether reconnects skip their pauses (the storm).
pub(crate) fn reconnect_storm() -> bool {
    is_on(|b| b == Bug::ReconnectStorm)
}

#[cfg(feature = "bug-switches")]
fn is_on(which: impl Fn(Bug) -> bool) -> bool {
    ON.with(|b| b.get().is_some_and(which))
}

#[cfg(not(feature = "bug-switches"))]
fn is_on(which: impl Fn(Bug) -> bool) -> bool {
    let _ = which;
    false
}
