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
}

#[cfg(feature = "bug-switches")]
thread_local! {
    static ON: std::cell::Cell<Option<Bug>> = const { std::cell::Cell::new(None) };
}

/// Brings `bug` back on this thread (`None`: every bug fixed again).
#[cfg(feature = "bug-switches")]
pub fn reintroduce(bug: Option<Bug>) {
    ON.with(|b| b.set(bug));
}

/// Whether the lease should trust the requested timeout (the bug).
pub(crate) fn lease_trusts_requested_timeout() -> bool {
    #[cfg(feature = "bug-switches")]
    {
        ON.with(|b| b.get() == Some(Bug::LeaseTrustsRequestedTimeout))
    }
    #[cfg(not(feature = "bug-switches"))]
    {
        false
    }
}
