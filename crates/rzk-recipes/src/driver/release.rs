//! The release of a [`Lifecycle::Mutex`](crate::term::control::Lifecycle::Mutex) recipe's term
//! (LeaderSelector, and the locks), the selector's task, and idling until a requeue.

use std::sync::Arc;
use std::time::Duration;

use super::{Driver, OwnNode, Step, Stop, TaskEnd};
use crate::driver::status::ElectionEvent;
use crate::driver::status::Status;
use crate::loss::LossReason;
use crate::term::guard::Term;
use crate::term::leadership::Leadership;

/// How long a release waits for a cancelled task to stop. Its `lost()` has resolved, so it
/// ends at its next poll; a task that blocks its thread instead must not hold the release
/// (and the next holder) forever.
const TASK_STOP_WAIT: Duration = Duration::from_secs(5);

impl Driver {
    /// Starts the selector's task for `term`; it is cancelled when the term's `lost()`
    /// resolves.
    pub(super) fn start_task(&mut self, term: &Arc<Term>) {
        let Some(task) = self.task.as_mut() else { return };
        let leadership = Leadership { inner: term.clone() };
        let lost = leadership.lost();
        let fut = task(leadership);
        self.task_handle = Some(tokio::spawn(async move {
            tokio::select! {
                biased;
                _ = lost => TaskEnd::Cancelled,
                r = fut => TaskEnd::Done(r),
            }
        }));
    }

    /// Waits for the task of the ended term to stop.
    pub(super) async fn stop_task(&mut self) {
        if let Some(h) = self.task_handle.take() {
            // lost() has resolved, so the task ends at its next poll.
            let _ = tokio::time::timeout(TASK_STOP_WAIT, h).await;
        }
    }

    /// Ends a releasing recipe's term: `lost()` first, then the delete, then requeue or idle.
    pub(super) async fn release(&mut self) -> Result<Step, Stop> {
        self.lose_term(LossReason::Resigned);
        self.stop_task().await;
        if let Some(own) = self.own.take() {
            self.delete_own(own).await?;
        }
        self.term = None;
        for w in self.resign_waiters.drain(..) {
            let _ = w.send(Ok(()));
        }
        let mut q = self.shared.queue.lock().expect("poisoned");
        q.leading = false;
        if q.auto_requeue || q.requeue_after {
            q.requeue_after = false;
            q.queued = true;
            Ok(Step::Join)
        } else {
            q.queued = false;
            Ok(Step::Idle)
        }
    }

    /// Withdraws a queued attempt that nobody waits for any more: deletes our node, then joins
    /// again if a new attempt was queued meanwhile, or idles.
    pub(super) async fn withdraw(&mut self) -> Result<Step, Stop> {
        if let Some(own) = self.own.take() {
            if crate::bugs::withdrawn_node_kept() {
                self.shared.set_our_path(None);
                return Ok(Step::Idle);
            }
            self.delete_own(own).await?;
        }
        let queued = self.shared.queue.lock().expect("poisoned").queued;
        Ok(if queued { Step::Join } else { Step::Idle })
    }

    /// Deletes our node (now, or on the next session) and says so.
    async fn delete_own(&mut self, own: OwnNode) -> Result<(), Stop> {
        let generation = own.generation;
        match self.client_for(generation) {
            Some(client) => match self.delete_node(&client, generation, &own.path).await {
                Ok(()) | Err(Stop::NewGeneration) => {}
                Err(stop) => {
                    self.own = Some(own);
                    return Err(stop);
                }
            },
            None => self.stale_paths.push(own.path.clone()),
        }
        self.shared.set_our_path(None);
        self.shared.emit(ElectionEvent::Released { node: own.path });
        Ok(())
    }

    /// Not queued: waits for a requeue, a close or the end of the session manager.
    pub(super) async fn idle(&mut self) -> Result<Step, Stop> {
        self.shared.set_status(Status::Idle);
        loop {
            if self.closing {
                return Err(Stop::Close);
            }
            if self.shared.queue.lock().expect("poisoned").queued {
                return Ok(Step::Join);
            }
            if self.snap.borrow().state.is_terminal() {
                return Err(Stop::SessionClosed);
            }
            tokio::select! {
                biased;
                cmd = self.cmd_rx.recv() => self.on_command(cmd),
                r = self.snap.changed() => if r.is_err() { return Err(Stop::SessionClosed) },
            }
        }
    }
}
