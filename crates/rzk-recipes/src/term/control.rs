//! What handles and terms hand to a recipe's driver: commands, and the
//! close flags that must be set before the driver hears of a close.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::Error;

/// The error type a LeaderSelector task may return.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request to the driver, which owns every ZooKeeper future of its recipe.
pub(crate) enum Command {
    /// Close the recipe (`done` answers once the node is deleted, if anyone waits).
    Close { done: Option<oneshot::Sender<Result<(), Error>>> },
    /// End term `term` (the application resigned it).
    Resign { term: u64, done: oneshot::Sender<Result<(), Error>> },
    /// Look at the shared queueing state again (a requeue, or a withdrawal).
    Wake,
    /// End the current term, whichever it is (a lock whose term was granted to nobody).
    ReleaseCurrent,
    /// Read the children again and decide afresh (a `try_acquire` wants a current answer).
    Evaluate,
}

/// Waits at most `within` for the driver to confirm a delete it was asked for (a close, a
/// resignation, a release): the driver's answer, `Ok` if it went away without one (the recipe
/// is gone), [`Error::ConnectionLoss`] if the delete was not confirmed in time (it keeps being
/// retried while the session lives).
pub(crate) async fn confirmed(
    done: oneshot::Receiver<Result<(), Error>>,
    within: Duration,
) -> Result<(), Error> {
    match tokio::time::timeout(within, done).await {
        Ok(answer) => answer.unwrap_or(Ok(())),
        Err(_) => Err(Error::ConnectionLoss),
    }
}

/// How a term ends, and what follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lifecycle {
    /// Curator's LeaderLatch: one node for the recipe's life; a term lost to a suspension
    /// resumes on the same node; resigning closes the recipe.
    Latch,
    /// Curator's InterProcessMutex, which LeaderSelector runs on: every term ends by deleting
    /// its node (the release); then the participant idles, or queues again at the tail.
    Mutex,
}

/// Flags a close sets synchronously, before the driver hears of it: a second close must fail
/// at once, and a silent close must never emit the loss event the term's guard is about to
/// send.
#[derive(Debug, Default)]
pub(crate) struct CloseFlags {
    closed: AtomicBool,
    silent: AtomicBool,
}

impl CloseFlags {
    /// Marks the recipe closed; false if it already was (then nothing changes).
    pub fn begin(&self, silent: bool) -> bool {
        if self.closed.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.silent.store(silent, Ordering::Release);
        true
    }

    /// Marks the recipe closed silently, whatever it was (a LeaderLatch's resignation).
    pub fn close_silently(&self) {
        self.closed.store(true, Ordering::Release);
        self.silent.store(true, Ordering::Release);
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    pub fn is_silent(&self) -> bool {
        self.silent.load(Ordering::Acquire)
    }
}
