//! The end of a recipe: close (the term ends locally, then our node is deleted), failure,
//! and answering whoever waits.

use super::{Driver, Stop};
use crate::driver::status::ElectionEvent;
use crate::loss::LossReason;
use crate::{driver::status::Status, Error};

impl Driver {
    /// Closes the recipe: `lost()` resolves first, then our node and any stale ones are
    /// deleted, then waiters are answered.
    pub(super) async fn close(&mut self) {
        self.in_close = true;
        self.closing = true;
        // The term ends locally before the node is deleted (docs/election.md, W7), so no
        // successor can lead while this participant still acts.
        self.lose_term(LossReason::Closed);
        self.stop_task().await;
        let result = self.delete_own_finally().await;
        let stale = self.stale_uuids.len() + self.stale_paths.len() + self.stale_fenced.len();
        if stale > 0 {
            let (client, generation) = {
                let s = self.snap.borrow();
                (s.client.clone(), s.generation)
            };
            if let Some(client) = client {
                let _ = self.cleanup_stale(&client, generation).await;
                let _ = self.cleanup_fenced(&client, generation).await;
            }
        }
        self.held_watches.clear();
        self.spare_child_watch = None;
        self.armed = None;
        self.shared.set_our_path(None);
        for w in self.close_waiters.drain(..).chain(self.resign_waiters.drain(..)) {
            let _ = w.send(result.clone());
        }
        self.finish(Status::Closed);
    }

    /// The recipe fails with `e`: our node, if any, is deleted, and waiters of a close or a
    /// release are answered `Ok`, or with the delete's error if the node stays.
    pub(super) async fn fail(&mut self, e: Error) {
        self.in_close = true;
        self.lose_term(LossReason::ClientClosed);
        self.stop_task().await;
        let answer = self.delete_own_finally().await;
        for w in self.close_waiters.drain(..).chain(self.resign_waiters.drain(..)) {
            let _ = w.send(answer.clone());
        }
        self.cmd_rx.end(answer);
        tracing::warn!(error = %e, path = %self.shared.path, "election failed");
        self.shared.set_status(Status::Failed(e));
        self.shared.emit(ElectionEvent::Closed);
    }

    /// Deletes our node as the recipe ends (nothing to do for a node of an ended session);
    /// the error if it stays.
    async fn delete_own_finally(&mut self) -> Result<(), Error> {
        let Some(own) = self.own.take() else {
            // A race whose winning multi's reply was lost may hold the node unseen.
            return match self.race_epoch {
                Some(_) => closed(self.release_unseen_win().await),
                None => Ok(()),
            };
        };
        let Some(client) = self.client_for(own.generation) else { return Ok(()) };
        // A race node's path is every winner's: only a fenced delete is ours to send.
        let deleted = match self.race_epoch {
            Some(_) => self.delete_fenced(&client, own.generation, &own).await,
            None => self.delete_node(&client, own.generation, &own.path).await,
        };
        closed(deleted)
    }

    /// Publishes the final status and answers every waiter.
    pub(super) fn finish(&mut self, status: Status) {
        for w in self.close_waiters.drain(..).chain(self.resign_waiters.drain(..)) {
            let _ = w.send(Ok(()));
        }
        self.shared.queue.lock().expect("poisoned").queued = false;
        self.shared.set_status(status);
        self.shared.emit(ElectionEvent::Closed);
    }
}

/// What a final delete means to whoever waits for the close: done, unless it failed (the
/// node stays) or could not be confirmed (a delete the end of the session makes moot counts
/// as done).
fn closed(deleted: Result<(), Stop>) -> Result<(), Error> {
    match deleted {
        Ok(()) | Err(Stop::NewGeneration) | Err(Stop::SessionClosed) => Ok(()),
        Err(Stop::Fail(e)) => Err(e),
        Err(_) => Err(Error::ConnectionLoss),
    }
}
