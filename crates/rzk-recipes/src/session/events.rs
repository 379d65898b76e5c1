//! The stream of connection-state changes.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::broadcast;

use super::snapshot::ConnectionEvent;
use crate::subscription::Subscription;

/// A stream of [`ConnectionEvent`]s. A subscriber that falls more than 1024 events behind
/// skips the missed ones.
pub struct ConnectionEvents {
    sub: Subscription<ConnectionEvent>,
}

impl ConnectionEvents {
    pub(super) fn new(rx: broadcast::Receiver<ConnectionEvent>) -> Self {
        ConnectionEvents { sub: Subscription::new(rx, |_| None) }
    }

    /// The next event; `None` once the session is gone.
    ///
    /// # Errors
    /// None; events missed by a subscriber that fell behind are skipped.
    ///
    /// # Cancellation safety
    /// Safe: no event is lost if the future is dropped.
    pub async fn recv(&mut self) -> Option<ConnectionEvent> {
        self.sub.recv().await
    }

    /// The next event if one is ready (missed events are skipped).
    pub fn try_recv(&mut self) -> Option<ConnectionEvent> {
        self.sub.try_recv()
    }
}

impl futures_core::Stream for ConnectionEvents {
    type Item = ConnectionEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.sub.poll_next(cx)
    }
}
