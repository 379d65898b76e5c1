//! The invariant checker of docs/election.md §4.1: an independent observer that records every
//! term (participant, node, token, start, end) from the recipes' event streams and asserts that
//! no two terms overlap and that tokens strictly increase (equal only for a resumption: same
//! participant, same node, nothing in between).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rzk_election::{ElectionEvent, Events, Leadership};

/// One interval of leadership.
#[derive(Debug, Clone)]
pub struct TermRecord {
    pub participant: String,
    pub node: String,
    pub token: i64,
    pub start: Instant,
    /// `None` while the term is still running.
    pub end: Option<Instant>,
}

/// Checks a set of intervals; `tolerance` is the overlap allowed (0 except where a leader
/// can only learn of its loss by a watch, §4.1).
pub fn check(records: &[TermRecord], tolerance: Duration) -> Result<(), String> {
    let mut sorted: Vec<&TermRecord> = records.iter().collect();
    sorted.sort_by_key(|r| r.start);
    for pair in sorted.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let Some(end) = a.end else {
            return Err(format!("term {a:?} is still running while {b:?} started"));
        };
        if end > b.start + tolerance {
            return Err(format!(
                "overlap of {:?}: {a:?} ends after {b:?} starts",
                end.duration_since(b.start)
            ));
        }
        let resumption = a.token == b.token && a.participant == b.participant && a.node == b.node;
        if b.token < a.token || (b.token == a.token && !resumption) {
            return Err(format!("token order broken: {a:?} then {b:?}"));
        }
    }
    Ok(())
}

struct Rec {
    participant: String,
    leadership: Leadership,
}

/// Records terms from recipes' event streams.
#[derive(Clone, Default)]
pub struct Checker {
    recs: Arc<Mutex<Vec<Rec>>>,
    czxid_errors: Arc<Mutex<Vec<String>>>,
}

impl Checker {
    pub fn new() -> Self {
        Checker::default()
    }

    /// Follows a recipe's events. Attach before `start` so that no term is missed. With a
    /// `client`, also asserts that each token is the czxid of the node and that the node is
    /// owned by the leader's session (§4.1 assertion 3).
    pub fn attach(
        &self,
        participant: &str,
        mut events: Events,
        client: Option<zookeeper_client::Client>,
    ) {
        let recs = self.recs.clone();
        let errors = self.czxid_errors.clone();
        let participant = participant.to_string();
        tokio::spawn(async move {
            while let Some(e) = events.recv().await {
                match e {
                    ElectionEvent::Elected { leadership, .. } => {
                        recs.lock().unwrap().push(Rec {
                            participant: participant.clone(),
                            leadership: leadership.clone(),
                        });
                        if let Some(c) = &client {
                            if let Ok((_, stat)) = c.get_data(leadership.node_path()).await {
                                // A race node's path is every winner's: a node created after
                                // the term is a later winner's, not a wrong token.
                                let later = stat.czxid > leadership.token().0;
                                if !later
                                    && (stat.czxid != leadership.token().0
                                        || stat.ephemeral_owner != leadership.session_id().0)
                                {
                                    errors.lock().unwrap().push(format!(
                                        "{participant}: token {} / session {} but node has czxid \
                                         {} owner {:#x}",
                                        leadership.token(),
                                        leadership.session_id(),
                                        stat.czxid,
                                        stat.ephemeral_owner
                                    ));
                                }
                            }
                        }
                    }
                    ElectionEvent::Lagged { missed } => {
                        errors.lock().unwrap().push(format!("{participant}: lagged {missed}"))
                    }
                    ElectionEvent::Closed => break,
                    _ => {}
                }
            }
        });
    }

    /// The recorded intervals, in start order.
    pub fn terms(&self) -> Vec<TermRecord> {
        let mut v: Vec<TermRecord> = self
            .recs
            .lock()
            .unwrap()
            .iter()
            .map(|r| TermRecord {
                participant: r.participant.clone(),
                node: r.leadership.node_path().to_string(),
                token: r.leadership.token().0,
                start: r.leadership.started_at(),
                end: r.leadership.lost_at().map(|_| r.leadership.deadline()),
            })
            .collect();
        v.sort_by_key(|r| r.start);
        v
    }

    /// Participants of the terms in order, with resumptions collapsed.
    pub fn leaders(&self) -> Vec<String> {
        self.leaders_before(None)
    }

    /// As `leaders`, counting only terms that began before `cutoff`: once participants start
    /// closing, a closed one's turn passes to the next, so later terms say nothing of the order.
    pub fn leaders_before(&self, cutoff: Option<Instant>) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut last: Option<(String, i64)> = None;
        for t in self.terms() {
            if cutoff.is_some_and(|c| t.start >= c) {
                break;
            }
            if last.as_ref() != Some(&(t.participant.clone(), t.token)) {
                out.push(t.participant.clone());
            }
            last = Some((t.participant, t.token));
        }
        out
    }

    /// Asserts the invariants (no overlap, token order, token = czxid).
    pub fn assert_ok(&self) {
        self.assert_ok_with(Duration::ZERO);
    }

    pub fn assert_ok_with(&self, tolerance: Duration) {
        let terms = self.terms();
        if let Err(e) = check(&terms, tolerance) {
            panic!("checker: {e}\nterms: {terms:#?}");
        }
        let errors = self.czxid_errors.lock().unwrap();
        assert!(errors.is_empty(), "checker: {errors:?}");
    }
}

/// Single-leader sampling: 20 samples 10 ms apart; at most one `has_leadership()` is true.
pub async fn sample_single_leader(flags: &[&dyn Fn() -> bool]) {
    for _ in 0..20 {
        let n = flags.iter().filter(|f| f()).count();
        assert!(n <= 1, "{n} participants believe they lead");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
