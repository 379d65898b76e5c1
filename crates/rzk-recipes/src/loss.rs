//! Why a term ends, and the future that resolves when it does.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::sync::watch;

/// Why a term ended (or may have ended).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LossReason {
    /// The connection was suspended under
    /// [`ConnectionPolicy::StepDownOnSuspended`](crate::term::guard::ConnectionPolicy::StepDownOnSuspended).
    Suspended,
    /// The lease ran out: no acknowledged request recently enough (docs/election.md §2.2).
    LeaseExpired,
    /// The session was lost (expired, or declared expired locally).
    SessionExpired,
    /// Our node was deleted, or found owned by another session.
    NodeDeleted,
    /// A child this recipe cannot order appeared in the election path.
    ForeignNodes,
    /// The application resigned.
    Resigned,
    /// The recipe was closed.
    Closed,
    /// `LeaderSelector::interrupt_leadership` was called.
    Interrupted,
    /// The session manager was closed or dropped.
    ClientClosed,
}

impl std::fmt::Display for LossReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            LossReason::Suspended => "connection suspended",
            LossReason::LeaseExpired => "lease expired",
            LossReason::SessionExpired => "session expired",
            LossReason::NodeDeleted => "leader node deleted",
            LossReason::ForeignNodes => "foreign nodes in the election path",
            LossReason::Resigned => "resigned",
            LossReason::Closed => "closed",
            LossReason::Interrupted => "interrupted",
            LossReason::ClientClosed => "session closed",
        };
        f.write_str(s)
    }
}

/// The loss of a term, once it happened: the first reason and when.
pub(crate) type LossCell = Option<(LossReason, Instant)>;

/// The future returned by [`Leadership::lost`](crate::term::leadership::Leadership::lost).
pub struct Lost {
    rx: watch::Receiver<LossCell>,
    fut: Option<Pin<Box<dyn Future<Output = LossReason> + Send>>>,
}

impl Lost {
    pub(crate) fn new(rx: watch::Receiver<LossCell>) -> Lost {
        Lost { rx, fut: None }
    }
}

impl Clone for Lost {
    fn clone(&self) -> Self {
        Lost { rx: self.rx.clone(), fut: None }
    }
}

impl Future for Lost {
    type Output = LossReason;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<LossReason> {
        if let Some((reason, _)) = *self.rx.borrow() {
            return Poll::Ready(reason);
        }
        if self.fut.is_none() {
            let mut rx = self.rx.clone();
            self.fut = Some(Box::pin(async move {
                loop {
                    if let Some((reason, _)) = *rx.borrow_and_update() {
                        return reason;
                    }
                    if rx.changed().await.is_err() {
                        return rx.borrow().map(|l| l.0).unwrap_or(LossReason::ClientClosed);
                    }
                }
            }));
        }
        self.fut.as_mut().expect("set above").as_mut().poll(cx)
    }
}
