//! The invariant checker of docs/election.md §4.1: an independent observer that records every
//! term or hold (participant, node, token, start, end), from the recipes' event streams or
//! from the leases the test holds, and asserts that no more than N overlap (N = 1 for an
//! election, a mutex or a write lock; N for a semaphore of N leases) and that tokens strictly
//! increase in start order (equal only for a resumption: same participant, same node). The
//! second holds for a semaphore too: every lease node is created and granted under the
//! semaphore's internal mutex, so grants are in czxid order. `check_writes` asserts the same
//! bound on the server's own clock, from the zxids of the holders' guarded writes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rzk_recipes::{
    election::{ElectionEvent, Events},
    Leadership,
};

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

/// Checks the intervals of a single-holder recipe; `tolerance` is the overlap allowed (0
/// except where a leader can only learn of its loss by a watch, §4.1).
pub fn check(records: &[TermRecord], tolerance: Duration) -> Result<(), String> {
    check_at_most(records, 1, tolerance)
}

/// Checks that at most `holders` intervals overlap (by more than `tolerance`) and that each
/// token is larger than every token that started before it, but for a resumption.
pub fn check_at_most(
    records: &[TermRecord],
    holders: usize,
    tolerance: Duration,
) -> Result<(), String> {
    let mut sorted: Vec<&TermRecord> = records.iter().collect();
    sorted.sort_by_key(|r| r.start);
    for (i, b) in sorted.iter().enumerate() {
        let earlier = &sorted[..i];
        let running: Vec<&&TermRecord> =
            earlier.iter().filter(|a| a.end.is_none_or(|end| end > b.start + tolerance)).collect();
        if running.len() >= holders {
            return Err(format!("{b:?} started while {holders} held: {running:?}"));
        }
        let resumption = |a: &TermRecord| {
            a.token == b.token && a.participant == b.participant && a.node == b.node
        };
        if let Some(a) = earlier.iter().find(|a| a.token >= b.token && !resumption(a)) {
            return Err(format!("token order broken: {a:?} then {b:?}"));
        }
    }
    Ok(())
}

/// Checks acknowledged guarded writes `(mzxid, token)` on the server's clock: a guarded write
/// lands only while its holder's node exists, so the span of each token (its first write to its
/// last) lies within its hold, and at most `holders` spans may overlap. With one holder the
/// token never goes back in server order either.
pub fn check_writes(writes: &[(i64, i64)], holders: usize) -> Result<(), String> {
    let mut sorted = writes.to_vec();
    sorted.sort();
    if holders == 1 && sorted.windows(2).any(|w| w[0].1 > w[1].1) {
        return Err(format!("a token goes back in server order: {sorted:?}"));
    }
    let mut spans: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    for &(zxid, token) in &sorted {
        spans.entry(token).and_modify(|s| s.1 = zxid).or_insert((zxid, zxid));
    }
    let mut spans: Vec<(i64, i64, i64)> = spans.into_iter().map(|(t, (a, b))| (a, b, t)).collect();
    spans.sort();
    for (i, b) in spans.iter().enumerate() {
        let running: Vec<_> = spans[..i].iter().filter(|a| a.1 > b.0).collect();
        if running.len() >= holders {
            return Err(format!("token {} wrote while {running:?} (first, last, token) did", b.2));
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

    /// Records a term or hold the test was granted itself (a semaphore's lease, which has no
    /// event stream).
    pub fn record(&self, participant: &str, leadership: &Leadership) {
        let rec = Rec { participant: participant.to_string(), leadership: leadership.clone() };
        self.recs.lock().unwrap().push(rec);
    }

    /// Follows a recipe's events. Attach before `start` so that no term is missed. With a
    /// `client`, also asserts that each token is the czxid of the node and that the node is
    /// owned by the leader's session (§4.1 assertion 3).
    pub fn attach(
        &self,
        participant: &str,
        mut events: Events,
        client: Option<rzk_client::Client>,
    ) {
        let checker = self.clone();
        let errors = self.czxid_errors.clone();
        let participant = participant.to_string();
        tokio::spawn(async move {
            while let Some(e) = events.recv().await {
                match e {
                    ElectionEvent::Elected { leadership, .. } => {
                        checker.record(&participant, &leadership);
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

    /// Asserts the invariants of a single holder (no overlap, token order, token = czxid).
    pub fn assert_ok(&self) {
        self.assert_ok_with(Duration::ZERO);
    }

    pub fn assert_ok_with(&self, tolerance: Duration) {
        self.assert_at_most(1, tolerance);
    }

    /// Asserts the invariants of a recipe that grants at most `holders` at once.
    pub fn assert_at_most(&self, holders: usize, tolerance: Duration) {
        let terms = self.terms();
        if let Err(e) = check_at_most(&terms, holders, tolerance) {
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
