//! A broadcast subscription read as a future or a `Stream`, the one mechanism under both
//! event streams ([`Events`](crate::driver::status::Events) and [`ConnectionEvents`](crate::session::ConnectionEvents)).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::broadcast;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

type NextItem<T> = Pin<Box<dyn Future<Output = (Option<T>, broadcast::Receiver<T>)> + Send>>;

/// A subscriber's receiver. When it falls more than the channel's capacity behind, `on_lag`
/// says what it gets instead of the missed items: an item of its own, or nothing (skip them).
pub(crate) struct Subscription<T> {
    rx: broadcast::Receiver<T>,
    on_lag: fn(u64) -> Option<T>,
    /// The receive in progress of a `Stream` poll, which owns the receiver meanwhile.
    pending: Option<NextItem<T>>,
}

impl<T: Clone + Send + 'static> Subscription<T> {
    pub fn new(rx: broadcast::Receiver<T>, on_lag: fn(u64) -> Option<T>) -> Self {
        Subscription { rx, on_lag, pending: None }
    }

    /// The next item; `None` once every sender is gone. Cancellation safe.
    pub async fn recv(&mut self) -> Option<T> {
        next(&mut self.rx, self.on_lag).await
    }

    /// The next item if one is ready.
    pub fn try_recv(&mut self) -> Option<T> {
        loop {
            match self.rx.try_recv() {
                Ok(item) => return Some(item),
                Err(TryRecvError::Lagged(missed)) => match (self.on_lag)(missed) {
                    Some(item) => return Some(item),
                    None => continue,
                },
                Err(_) => return None,
            }
        }
    }

    /// `Stream::poll_next` for the wrapping stream type.
    pub fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        if self.pending.is_none() {
            let mut rx = self.rx.resubscribe();
            std::mem::swap(&mut rx, &mut self.rx);
            let on_lag = self.on_lag;
            self.pending = Some(Box::pin(async move {
                let item = next(&mut rx, on_lag).await;
                (item, rx)
            }));
        }
        match self.pending.as_mut().expect("set above").as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready((item, rx)) => {
                self.rx = rx;
                self.pending = None;
                Poll::Ready(item)
            }
        }
    }
}

async fn next<T: Clone>(
    rx: &mut broadcast::Receiver<T>,
    on_lag: fn(u64) -> Option<T>,
) -> Option<T> {
    loop {
        match rx.recv().await {
            Ok(item) => return Some(item),
            Err(RecvError::Lagged(missed)) => match on_lag(missed) {
                Some(item) => return Some(item),
                None => continue,
            },
            Err(RecvError::Closed) => return None,
        }
    }
}
