//! Terms: issuing one when we lead, ending it, and stepping down while the lease is stale.

use std::sync::Arc;
use std::time::Duration;

use super::{Driver, OwnNode, Step, Stop};
use crate::driver::election_options::ConnectionPolicy;
use crate::driver::status::ElectionEvent;
use crate::driver::status::Status;
use crate::loss::LossReason;
use crate::term::control::Lifecycle;
use crate::term::guard::{guard, Term};
use crate::term::issuer::{HeldNode, Issuer};
use crate::term::leadership::Leadership;
use crate::term::token::FencingToken;

/// How often a stepped-down latch re-checks its lease: freshness also depends on the clock,
/// not only on acknowledged requests.
const LEASE_RECHECK: Duration = Duration::from_millis(50);

impl Driver {
    pub(super) fn lose_term(&mut self, reason: LossReason) {
        if let Some(t) = &self.term {
            t.lose(reason);
        }
    }

    pub(super) fn term_active(&self) -> bool {
        self.term.as_ref().is_some_and(|t| t.loss().is_none())
    }

    /// Publishes a new term on `own` with fencing token `token` and starts its guard.
    pub(super) fn issue_term(&mut self, own: &OwnNode, token: i64, resumed: bool) -> Arc<Term> {
        self.terms_issued += 1;
        let issuer = Issuer {
            participant_id: self.options.id.clone(),
            session: self.session.shared().clone(),
            cmd: self.cmd_tx.clone(),
            lifecycle: self.shared.lifecycle,
            close: self.shared.close.clone(),
            telemetry: self.shared.labels().clone(),
        };
        let node = HeldNode {
            path: own.path.clone(),
            fence: own.fence.clone(),
            czxid: token,
            session_id: own.session_id,
            generation: own.generation,
        };
        let term = issuer.issue(node, self.terms_issued, resumed);
        let suspensions = self.snap.borrow().suspensions;
        let shared = self.shared.clone();
        let t = term.clone();
        let (policy, budget) = (self.options.policy, self.stop_budget());
        let lifecycle = self.shared.lifecycle;
        tokio::spawn(async move {
            guard(t.clone(), policy, budget, suspensions).await;
            let reason = t.loss().map(|l| l.0).unwrap_or(LossReason::ClientClosed);
            // A silent close ends the term without the event; a latch's resignation is a
            // silent close, a releasing recipe's is a release, which is always reported.
            let closing = match lifecycle {
                Lifecycle::Latch => matches!(reason, LossReason::Closed | LossReason::Resigned),
                Lifecycle::Mutex => reason == LossReason::Closed,
            };
            if !(closing && shared.close.is_silent()) {
                shared.emit(ElectionEvent::Lost { token: t.token, term: t.term, reason });
            }
        });
        let leadership = Leadership { inner: term.clone() };
        *self.shared.current.lock().expect("poisoned") = Some(leadership.clone());
        *self.shared.last_path_is_leader.lock().expect("poisoned") = Some(own.path.clone());
        if self.releases_terms() {
            self.shared.queue.lock().expect("poisoned").leading = true;
        }
        self.shared.set_status(Status::Leading { token: FencingToken(token) });
        self.shared.emit(ElectionEvent::Elected {
            token: FencingToken(token),
            node: own.path.clone(),
            term: term.term,
            resumed,
            leadership,
        });
        tracing::debug!(node = %own.path, token, resumed, "elected");
        self.term = Some(term.clone());
        term
    }

    /// True while a claim on `generation` may be made: connected (under the step-down-on-
    /// suspended policy) and more than the stop budget before the lease deadline.
    pub(super) fn lease_fresh(&self, generation: u64) -> bool {
        let s = self.snap.borrow();
        if !s.state.is_connected() && self.options.policy == ConnectionPolicy::StepDownOnSuspended {
            return false;
        }
        drop(s);
        self.session
            .shared()
            .deadline(generation)
            .is_some_and(|d| crate::clock::now() + self.stop_budget() < d)
    }

    /// Stepped down with our node kept: resume (evaluate again) once connected with a fresh
    /// lease, or, if so configured, delete the node and rejoin at the tail.
    pub(super) async fn stepped_down(
        &mut self,
        own: &OwnNode,
        generation: u64,
    ) -> Result<Option<Step>, Stop> {
        self.shared.set_status(Status::SteppedDown);
        self.shared.decided();
        if self.rejoin_after_step_down {
            if let Some(client) = self.client_for(generation) {
                self.delete_node(&client, generation, &own.path).await?;
            }
            self.own = None;
            return Ok(Some(Step::Join));
        }
        let mut lease = self.session.shared().lease.subscribe();
        loop {
            self.check(generation, None)?;
            if self.lease_fresh(generation) {
                return Ok(None);
            }
            let stop_at = self.session.shared().deadline(generation);
            tokio::select! {
                biased;
                cmd = self.cmd_rx.recv() => self.on_command(cmd),
                r = self.snap.changed() => if r.is_err() { return Err(Stop::SessionClosed) },
                _ = lease.changed() => {}
                // Re-check now and then: freshness also depends on the clock.
                _ = tokio::time::sleep(LEASE_RECHECK), if stop_at.is_some() => {}
            }
        }
    }
}
