//! The end of a recipe: close (the term ends locally, then our node is deleted), failure,
//! and answering whoever waits.

use super::{Driver, Stop};
use crate::event::ElectionEvent;
use crate::loss::LossReason;
use crate::{Error, Status};

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
        let mut result = Ok(());
        if let Some(own) = self.own.take() {
            let generation = own.generation;
            if let Some(client) = self.client_for(generation) {
                // A race node's path is every winner's: only a fenced delete is ours to send.
                let deleted = match self.race_epoch {
                    Some(_) => self.delete_fenced(&client, generation, &own).await,
                    None => self.delete_node(&client, generation, &own.path).await,
                };
                result = closed(deleted);
            }
        } else if self.race_epoch.is_some() {
            result = closed(self.release_unseen_win().await);
        }
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
        self.armed = None;
        self.shared.set_our_path(None);
        for w in self.close_waiters.drain(..).chain(self.resign_waiters.drain(..)) {
            let _ = w.send(result.clone());
        }
        self.finish(Status::Closed);
    }

    /// The recipe fails with `e`; waiters of a close are answered `Ok`.
    pub(super) async fn fail(&mut self, e: Error) {
        self.lose_term(LossReason::ClientClosed);
        self.stop_task().await;
        for w in self.close_waiters.drain(..).chain(self.resign_waiters.drain(..)) {
            let _ = w.send(Ok(()));
        }
        tracing::warn!(error = %e, path = %self.shared.path, "election failed");
        self.shared.set_status(Status::Failed(e));
        self.shared.emit(ElectionEvent::Closed);
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

/// What a close's delete means to whoever waits for the close: done, unless it could not be
/// confirmed (a delete the end of the session makes moot counts as done).
fn closed(deleted: Result<(), Stop>) -> Result<(), Error> {
    match deleted {
        Ok(()) | Err(Stop::NewGeneration) | Err(Stop::SessionClosed) => Ok(()),
        Err(_) => Err(Error::ConnectionLoss),
    }
}
