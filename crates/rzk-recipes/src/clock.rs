//! The recipes' clock. Every moment a recipe compares (a lease's start and deadline, a
//! term's loss, a wait's deadline) is read here, from tokio's clock: it is the system's
//! monotonic clock in a running program, and the virtual clock of a runtime whose time is
//! paused, so that the recipes run unchanged in a simulated world (crates/rzk-world) and
//! their leases measure the time the world lets pass. Reading `std::time::Instant::now()`
//! directly would let a simulated lease outlive the session it stands for.

use std::time::{Duration, Instant};

/// Now, on tokio's clock.
pub(crate) fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// How long ago `then` was, on the same clock.
pub(crate) fn since(then: Instant) -> Duration {
    now().saturating_duration_since(then)
}
