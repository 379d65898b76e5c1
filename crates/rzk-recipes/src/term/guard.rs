//! The shared state of one term, and the guard task that ends it when the lease or the
//! connection says it may be over.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rzk_client::SessionId;
use tokio::sync::watch;

use crate::loss::{LossCell, LossReason};
use crate::session::{sleep_until, Publisher};
use crate::telemetry::{self, Labels};
use crate::term::control::{CloseFlags, Lifecycle};
use crate::term::mailbox::Mailbox;
use crate::term::token::FencingToken;
use crate::Error;

/// What a leader does when the connection is suspended (docs/election.md §2.3).
///
/// Under both policies a leader stops before the server can expire its session: its
/// [`Leadership::lost`](crate::term::leadership::Leadership::lost) resolves no later than the lease's
/// `stop_at = last_ack_sent + T − safety_margin − stop_budget`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConnectionPolicy {
    /// Step down at once on Suspended (Curator's `StandardConnectionStateErrorPolicy`). The
    /// default, and the safe choice.
    #[default]
    StepDownOnSuspended,
    /// Keep leading through Suspended; step down on Lost or at the lease's `stop_at`
    /// (Curator's `SessionConnectionStateErrorPolicy`, with a correct clock).
    StepDownOnLost,
}

/// What a guarded write (and a race leader's release) checks before anything else: nodes at
/// versions (`-1`: existence) that all hold exactly while the term's holder leads.
///
/// A queue recipe's node path is unique (sequential), so its existence proves ownership. A
/// race node's path is fixed: after ours is gone, another candidate's node sits there at the
/// same version, so the race fence adds the epoch node at the version our winning multi gave
/// it; every later win bumps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fence {
    checks: Vec<(String, i32)>,
}

impl Fence {
    /// Our own node exists.
    pub fn node(path: &str) -> Fence {
        Fence { checks: vec![(path.to_string(), -1)] }
    }

    /// Our own node exists and the epoch node is at `version`.
    pub fn epoch(node: &str, epoch: &str, version: i32) -> Fence {
        Fence { checks: vec![(node.to_string(), -1), (epoch.to_string(), version)] }
    }

    /// The checks, in the order they are sent (never empty).
    pub fn checks(&self) -> &[(String, i32)] {
        &self.checks
    }
}

/// The shared state of one term; [`Leadership`](crate::term::leadership::Leadership) is its public handle.
pub(crate) struct Term {
    pub token: FencingToken,
    pub node_path: String,
    pub fence: Fence,
    pub participant_id: String,
    pub session_id: SessionId,
    pub generation: u64,
    pub term: u64,
    pub resumed: bool,
    pub started_at: Instant,
    pub session: Arc<Publisher>,
    pub lost: watch::Sender<LossCell>,
    /// The driver of the recipe that issued the term.
    pub cmd: Mailbox,
    pub lifecycle: Lifecycle,
    pub close: Arc<CloseFlags>,
    pub telemetry: Labels,
}

impl Term {
    /// Resolves the loss signal; the first reason wins. Returns true if this call resolved it.
    pub fn lose(&self, reason: LossReason) -> bool {
        let resolved = self.lost.send_if_modified(|cell| {
            if cell.is_none() {
                *cell = Some((reason, crate::clock::now()));
                tracing::debug!(node = %self.node_path, term = self.term, %reason, "leadership lost");
                true
            } else {
                false
            }
        });
        if resolved {
            telemetry::term_ended(&self.telemetry, reason, crate::clock::since(self.started_at));
        }
        resolved
    }

    pub fn loss(&self) -> Option<(LossReason, Instant)> {
        *self.lost.borrow()
    }

    pub fn deadline(&self) -> Option<Instant> {
        self.session.deadline(self.generation)
    }

    pub fn is_valid(&self) -> bool {
        self.loss().is_none() && self.deadline().is_some_and(|d| crate::clock::now() < d)
    }

    /// Refuses locally unless the term is valid.
    pub fn gate(&self) -> Result<(), Error> {
        if let Some((reason, _)) = self.loss() {
            return Err(self.not_leader(reason));
        }
        match self.deadline() {
            None => Err(self.not_leader(LossReason::SessionExpired)),
            Some(d) if crate::clock::now() >= d => Err(self.not_leader(LossReason::LeaseExpired)),
            Some(_) => Ok(()),
        }
    }

    pub fn not_leader(&self, reason: LossReason) -> Error {
        Error::NotLeader { node: self.node_path.clone(), reason }
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        self.lose(LossReason::ClientClosed);
    }
}

/// Watches the session for one term and resolves its loss signal on Suspended (per policy),
/// session loss, or when the lease's `stop_at = deadline − stop_budget` passes.
pub(crate) async fn guard(
    term: Arc<Term>,
    policy: ConnectionPolicy,
    stop_budget: Duration,
    suspensions_at_start: u64,
) {
    let mut snap = term.session.snap.subscribe();
    let mut lost = term.lost.subscribe();
    loop {
        {
            let s = snap.borrow_and_update();
            if s.state.is_terminal() {
                term.lose(LossReason::ClientClosed);
                return;
            }
            if s.generation != term.generation || s.client.is_none() {
                term.lose(LossReason::SessionExpired);
                return;
            }
            if policy == ConnectionPolicy::StepDownOnSuspended
                && (s.suspensions != suspensions_at_start || !s.state.is_connected())
            {
                term.lose(LossReason::Suspended);
                return;
            }
        }
        let Some(deadline) = term.deadline() else {
            term.lose(LossReason::SessionExpired);
            return;
        };
        let stop_at = deadline.checked_sub(stop_budget).unwrap_or(deadline);
        if crate::clock::now() >= stop_at {
            term.lose(LossReason::LeaseExpired);
            return;
        }
        if lost.borrow_and_update().is_some() {
            return;
        }
        tokio::select! {
            biased;
            r = snap.changed() => if r.is_err() { term.lose(LossReason::ClientClosed); return; },
            _ = sleep_until(Some(stop_at)) => {}
            _ = lost.changed() => {}
        }
    }
}
