//! A take's answer that is never lost: the guard both queues' takes read their removing task's
//! answer through.

use tokio::sync::oneshot;

/// The answer of a task that removes a take's node (the simple queue's, and `distributed.rs`'s).
/// Dropped unread (its take was dropped), it hands an answer the task already sent to `keep`,
/// which holds the item for the handle's next take; a task whose send fails because the
/// answer was dropped first holds the item itself.
pub(crate) struct Unread<T> {
    rx: oneshot::Receiver<T>,
    keep: Option<Box<dyn FnOnce(T) + Send>>,
}

impl<T> Unread<T> {
    pub(crate) fn new(rx: oneshot::Receiver<T>, keep: impl FnOnce(T) + Send + 'static) -> Self {
        Unread { rx, keep: Some(Box::new(keep)) }
    }

    /// The task's answer, read: nothing is kept then. `None` if the task ended without one.
    pub(crate) async fn answer(mut self) -> Option<T> {
        let answer = (&mut self.rx).await.ok();
        self.keep = None;
        answer
    }
}

impl<T> Drop for Unread<T> {
    fn drop(&mut self) {
        // Closed first, so the task's send either landed already or fails and keeps the item.
        self.rx.close();
        if let (Ok(answer), Some(keep)) = (self.rx.try_recv(), self.keep.take()) {
            keep(answer);
        }
    }
}
