//! Network faults through a TCP proxy (docs/election.md §2.2, §2.3). Short cut (1 s): under
//! StepDownOnSuspended the latch leader steps down at once and resumes with the same token, a
//! selector's release waits for the heal and B leads after; under StepDownOnLost the leader never
//! loses its term. Long cut or blackhole (6 s > T): the leader stops before the server expires its
//! session (under StepDownOnLost no later than `stop_at`), B is elected 3.0-5.5 s after the cut,
//! and A rejoins on a new session behind B with a larger token; the same for the race election
//! (A waits for B's node on its new session).

mod support;

use std::time::{Duration, Instant};

use rzk_election::{ConnectionPolicy, ConnectionState, LossReason, Session};
use rzk_testkit::proxy::Proxy;
use support::candidate::{Candidate, Recipe};
use support::checker::{sample_single_leader, Checker};
use support::*;
use zookeeper_client::{Acls, CreateMode};

both_servers! {
    t80_short_cut_suspended => short_cut_suspended;
    t80_short_cut_lost => short_cut_lost;
    t80_short_cut_selector => short_cut_selector;
    t80_long_cut_suspended => long_cut_suspended;
    t80_long_cut_lost => long_cut_lost;
    t80_blackhole_lost => blackhole_lost;
    t80_long_cut_race => long_cut_race;
    t80_blackhole_race => blackhole_race;
}

/// Runs `during` for `d` while sampling that `b` never leads.
async fn never_leads(b: &Candidate, d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        assert!(!b.has_leadership(), "b must not be elected");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn short_cut_suspended(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t80", kind);
    let checker = Checker::new();
    let policy = ConnectionPolicy::StepDownOnSuspended;
    let (_sa, a, pa) =
        candidate_via_proxy(&server, Recipe::Latch, &path, "a", policy, &checker).await;
    let (_sb, b, _pb) =
        candidate_via_proxy(&server, Recipe::Latch, &path, "b", policy, &checker).await;
    let la = a.await_leadership().await.unwrap();
    let cut = Instant::now();
    pa.cut();
    let reason = tokio::time::timeout(Duration::from_secs(1), la.lost()).await.expect("lost");
    assert_eq!(reason, LossReason::Suspended);
    let took = la.lost_at().unwrap().duration_since(cut);
    assert!(took < Duration::from_millis(100), "stepped down after {took:?}");
    assert!(!a.has_leadership());
    never_leads(&b, Duration::from_secs(1)).await;
    let healed = Instant::now();
    pa.heal();
    // A resumes on the same node, with the same token (docs/election.md §2.3).
    let resumed = tokio::time::timeout(Duration::from_secs(3), async {
        loop {
            if let Some(l) = a.current() {
                if l.term() != la.term() {
                    return l;
                }
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("a resumes");
    eprintln!("resumed {:?} after the heal", resumed.started_at().duration_since(healed));
    assert!(resumed.resumed());
    assert_eq!(resumed.token(), la.token());
    assert_eq!(resumed.node_path(), la.node_path());
    assert!(!b.has_leadership());
    a.close().await.unwrap();
    b.await_leadership_timeout(Duration::from_secs(1)).await.expect("b after a");
    b.close().await.unwrap();
    checker.assert_ok();
    assert_eq!(checker.leaders(), ["a", "b"]);
}

async fn short_cut_lost(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t80-lost", kind);
    let raw = raw_client(&server).await;
    let witness = format!("{path}-witness");
    raw.mkdir(&witness, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    let checker = Checker::new();
    let policy = ConnectionPolicy::StepDownOnLost;
    let (_sa, a, pa) =
        candidate_via_proxy(&server, Recipe::Latch, &path, "a", policy, &checker).await;
    let (_sb, b, _pb) =
        candidate_via_proxy(&server, Recipe::Latch, &path, "b", policy, &checker).await;
    let la = a.await_leadership().await.unwrap();
    pa.cut();
    // A keeps leading through the cut (its lease is still good) but cannot write.
    let mut w = la.guarded().unwrap();
    w.set_data(&witness, b"during the cut", None).unwrap();
    let pending = tokio::spawn(w.commit());
    never_leads(&b, Duration::from_secs(1)).await;
    assert!(la.is_valid() && a.has_leadership());
    pa.heal();
    // The write issued during the cut either failed with ConnectionLoss or landed after the
    // heal; A never lost its term.
    let r = tokio::time::timeout(Duration::from_secs(3), pending).await.unwrap().unwrap();
    assert!(r.is_ok() || r.as_ref().unwrap_err().is_indeterminate(), "{r:?}");
    eventually(Duration::from_secs(3), "reconnected", || _sa.state().is_connected()).await;
    let mut w = la.guarded().unwrap();
    w.set_data(&witness, b"after the heal", None).unwrap();
    w.commit().await.unwrap();
    assert!(la.loss_reason().is_none(), "never lost: {:?}", la.loss_reason());
    assert_eq!(a.current().unwrap().term(), la.term());
    a.close().await.unwrap();
    b.await_leadership_timeout(Duration::from_secs(1)).await.expect("b after a");
    b.close().await.unwrap();
    checker.assert_ok();
    assert_eq!(checker.leaders(), ["a", "b"]);
}

async fn short_cut_selector(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t80-sel", kind);
    let checker = Checker::new();
    let mut selectors = Vec::new();
    let mut proxies = Vec::new();
    let mut sessions = Vec::new();
    for id in ["a", "b"] {
        let (s, p) = session_via_proxy(&server).await;
        let sel = queued_selector(&s, &path, id, Duration::from_secs(60), &checker).await;
        selectors.push(sel);
        proxies.push(p);
        sessions.push(s);
    }
    let la = selectors[0].await_leadership().await.unwrap();
    let cut = Instant::now();
    proxies[0].cut();
    let reason = tokio::time::timeout(Duration::from_secs(1), la.lost()).await.expect("lost");
    assert_eq!(reason, LossReason::Suspended);
    assert!(la.lost_at().unwrap().duration_since(cut) < Duration::from_millis(100));
    // A's release waits in the client's queue: B is not elected during the cut.
    let end = Instant::now() + Duration::from_secs(1);
    while Instant::now() < end {
        assert!(!selectors[1].has_leadership());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let healed = Instant::now();
    proxies[0].heal();
    let lb = tokio::time::timeout(Duration::from_secs(3), selectors[1].await_leadership())
        .await
        .expect("b elected after the heal")
        .unwrap();
    assert!(lb.started_at() > healed);
    assert!(lb.token() > la.token());
    eventually(Duration::from_secs(2), "a requeued", || {
        selectors[0].our_path().is_some_and(|p| p != la.node_path())
    })
    .await;
    let p = selectors[1].participants().await.unwrap();
    let ids: Vec<&str> = p.list.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["b", "a"]);
    for s in selectors {
        s.close().await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    checker.assert_ok();
}

async fn long_cut_suspended(kind: Kind) {
    long_cut(kind, Recipe::Latch, ConnectionPolicy::StepDownOnSuspended, false).await
}

async fn long_cut_lost(kind: Kind) {
    long_cut(kind, Recipe::Latch, ConnectionPolicy::StepDownOnLost, false).await
}

async fn blackhole_lost(kind: Kind) {
    long_cut(kind, Recipe::Latch, ConnectionPolicy::StepDownOnLost, true).await
}

async fn long_cut_race(kind: Kind) {
    long_cut(kind, Recipe::Race, ConnectionPolicy::StepDownOnSuspended, false).await
}

async fn blackhole_race(kind: Kind) {
    long_cut(kind, Recipe::Race, ConnectionPolicy::StepDownOnLost, true).await
}

async fn candidate_via_proxy(
    server: &Server,
    recipe: Recipe,
    path: &str,
    id: &str,
    policy: ConnectionPolicy,
    checker: &Checker,
) -> (Session, Candidate, Proxy) {
    let (s, p) = session_via_proxy(server).await;
    let c = Candidate::start(recipe, &s, path, id, policy, checker).await;
    (s, c, p)
}

/// A's connection is cut (or blackholed) for 6 s > T = 4 s. A stops before B starts; B is
/// elected once the server expires A's session; A starts a new session after the heal and
/// rejoins at the tail with a larger token.
async fn long_cut(kind: Kind, recipe: Recipe, policy: ConnectionPolicy, blackhole: bool) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t80", kind);
    let checker = Checker::new();
    let (sa, a, pa) = candidate_via_proxy(&server, recipe, &path, "a", policy, &checker).await;
    let (_sb, b, _pb) = candidate_via_proxy(&server, recipe, &path, "b", policy, &checker).await;
    let la = a.await_leadership().await.unwrap();
    let mut states = sa.states();
    let t = sa.negotiated_timeout();
    assert_eq!(t, T);
    let margin = sa.safety_margin();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cut = Instant::now();
    let last_ack = sa.lease().last_ack_sent;
    if blackhole {
        pa.blackhole();
    } else {
        pa.cut();
    }
    let lb = tokio::time::timeout(Duration::from_secs(8), b.await_leadership())
        .await
        .expect("b elected")
        .unwrap();
    let elected = lb.started_at().duration_since(cut);
    eprintln!("{policy:?} blackhole={blackhole}: a lost {:?} after the cut ({:?}), b elected {elected:?} after", la.lost_at().map(|l| l.duration_since(cut)), la.loss_reason());
    assert!(
        elected >= Duration::from_millis(3000) && elected <= Duration::from_millis(5500),
        "b elected {elected:?} after the cut"
    );
    let lost_at = la.lost_at().expect("a stopped before b started");
    assert!(lost_at < lb.started_at());
    match policy {
        ConnectionPolicy::StepDownOnSuspended => {
            // At the cut (EOF), or at idle detection (2/5·T) for a blackhole.
            let bound = if blackhole { t / 2 } else { Duration::from_millis(100) };
            assert!(lost_at.duration_since(cut) < bound);
        }
        _ => {
            // No later than stop_at = last_ack + T − margin − stop_budget (T/5).
            let stop_at = last_ack + t - margin - t / 5;
            assert!(lost_at <= stop_at + Duration::from_millis(50), "lost after stop_at");
            assert!(
                lb.started_at().duration_since(lost_at) >= margin,
                "a stopped only {:?} before b started",
                lb.started_at().duration_since(lost_at)
            );
            assert!(matches!(
                la.loss_reason(),
                Some(LossReason::LeaseExpired | LossReason::SessionExpired)
            ));
        }
    }
    sample_single_leader(&[&|| a.has_leadership(), &|| b.has_leadership()]).await;
    // Heal after 6 s; A has simulated expiry by now and starts a new session.
    tokio::time::sleep_until((cut + Duration::from_secs(6)).into()).await;
    pa.heal();
    eventually(Duration::from_secs(5), "a rejoined on a new session", || a.rejoined_after(&la))
        .await;
    let mut seen = Vec::new();
    while let Some(e) = states.try_recv() {
        seen.push(e.state);
    }
    assert!(seen.contains(&ConnectionState::Lost), "{seen:?}");
    assert!(seen.contains(&ConnectionState::Reconnected { new_session: true }), "{seen:?}");
    let members = b.members().await;
    let ids: Vec<&str> = members.iter().map(|m| m.0.as_str()).collect();
    match recipe {
        // A queued behind B with a node, hence a token, after B's.
        Recipe::Latch => {
            assert_eq!(ids, ["b", "a"]);
            assert!(members[1].1 > lb.token().0);
        }
        // A waits for B's node, which is still B's term.
        Recipe::Race => assert_eq!(members, [("b".to_string(), lb.token().0)]),
    }
    b.close().await.unwrap();
    let la2 = a.await_leadership_timeout(Duration::from_secs(2)).await.expect("a again");
    assert!(la2.token() > lb.token());
    a.close().await.unwrap();
    checker.assert_ok();
    assert_eq!(checker.leaders(), ["a", "b", "a"]);
}
