//! Network faults through a TCP proxy (docs/election.md §2.2, §2.3). Short cut (1 s): under
//! StepDownOnSuspended the latch leader steps down at once and resumes with the same token, a
//! selector's release waits for the heal and B leads after; under StepDownOnLost the leader never
//! loses its term. Long cut or blackhole (6 s > T): the leader stops before the server expires its
//! session (under StepDownOnLost no later than `stop_at`), B is elected 3.0-5.5 s after the cut,
//! and A rejoins on a new session behind B with a larger token; the same for the race election
//! (A waits for B's node on its new session).
//!
//! The lock recipes (the mutex, the read-write lock with a writer holding and a reader waiting,
//! a semaphore of two leases with two holders): a short cut of a holder and of the first waiter
//! loses the hold at once, no waiter holds during the cut, the cut waiter's acquire and the
//! holder's guard are dropped during the cut, and once healed the second waiter holds and
//! nothing of the dropped ones is left. A long cut of a holder: the waiter holds 3.0-5.5 s
//! after the cut, and the cut handle acquires again on a new session. Never more than N hold.
//! An acquire started and dropped while its session is cut (its create not yet sent, or sent
//! with no reply) leaves no node once healed: another handle then holds at once.

mod support;

use std::time::{Duration, Instant};

use rzk_client::{Acls, CreateMode};
use rzk_recipes::{
    election::ConnectionPolicy,
    session::{ConnectionState, Session},
    LossReason,
};
use rzk_testkit::proxy::Proxy;
use support::candidate::{Candidate, Recipe};
use support::checker::{sample_single_leader, Checker};
use support::locks::{hold_each, holders, leaves_with, queue, wait_leaves, Hold, Locker};
use support::*;

both_servers! {
    t80_short_cut_suspended => short_cut_suspended;
    t80_short_cut_lost => short_cut_lost;
    t80_short_cut_selector => short_cut_selector;
    t80_long_cut_suspended => long_cut_suspended;
    t80_long_cut_lost => long_cut_lost;
    t80_blackhole_lost => blackhole_lost;
    t80_long_cut_race => long_cut_race;
    t80_blackhole_race => blackhole_race;
    t80_short_cut_mutex => short_cut_mutex;
    t80_short_cut_read_write => short_cut_read_write;
    t80_short_cut_semaphore => short_cut_semaphore;
    t80_long_cut_mutex => long_cut_mutex;
    t80_long_cut_read_write => long_cut_read_write;
    t80_long_cut_semaphore => long_cut_semaphore;
    t80_acquire_dropped_while_cut => acquire_dropped_while_cut;
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
    eventually(Duration::from_secs(3), "suspended", || !_sa.state().is_connected()).await;
    // A keeps leading through the cut (its lease is still good), but a guarded write made
    // meanwhile fails at once and is never sent: it must not land at some later moment.
    let mut w = la.guarded().unwrap();
    w.set_data(&witness, b"during the cut", None).unwrap();
    let r = tokio::time::timeout(Duration::from_secs(1), w.commit()).await.expect("at once");
    assert!(r.as_ref().is_err_and(|e| e.is_indeterminate()), "{r:?}");
    never_leads(&b, Duration::from_secs(1)).await;
    assert!(la.is_valid() && a.has_leadership());
    pa.heal();
    eventually(Duration::from_secs(3), "reconnected", || _sa.state().is_connected()).await;
    let (data, _) = raw.get_data(&witness).await.unwrap();
    assert!(data.is_empty(), "the write made during the cut was sent: {data:?}");
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
    requeued_behind_then_close(selectors, &la, &lb, Duration::from_secs(2), &checker).await;
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

async fn short_cut_mutex(kind: Kind) {
    short_cut_lock(kind, &["mutex"; 3]).await
}

async fn short_cut_read_write(kind: Kind) {
    short_cut_lock(kind, &["write", "read", "write"]).await
}

async fn short_cut_semaphore(kind: Kind) {
    short_cut_lock(kind, &["semaphore:2"; 4]).await
}

async fn long_cut_mutex(kind: Kind) {
    long_cut_lock(kind, &["mutex"; 2]).await
}

async fn long_cut_read_write(kind: Kind) {
    long_cut_lock(kind, &["write", "read"]).await
}

async fn long_cut_semaphore(kind: Kind) {
    long_cut_lock(kind, &["semaphore:2"; 3]).await
}

/// One locker per recipe, each on a session through its own proxy.
async fn lockers_via_proxy(
    server: &Server,
    path: &str,
    recipes: &[&str],
) -> Vec<(Session, Locker, Proxy)> {
    let mut out = Vec::new();
    for recipe in recipes {
        let (s, p) = session_via_proxy(server).await;
        let l = Locker::new(&s, path, recipe).unwrap();
        out.push((s, l, p));
    }
    out
}

/// A lock scenario's start: N holders (recorded), through their own proxies.
struct Scene {
    n: usize,
    path: String,
    raw: rzk_client::Client,
    checker: Checker,
    lockers: Vec<(Session, Locker, Proxy)>,
    holds: Vec<Hold>,
    _server: Server,
}

async fn scene(kind: Kind, recipes: &[&str]) -> Scene {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t80-lock", kind);
    let raw = raw_client(&server).await;
    let checker = Checker::new();
    let lockers = lockers_via_proxy(&server, &path, recipes).await;
    let n = holders(recipes[0]);
    let holds = hold_each(lockers[..n].iter().map(|(_, l, _)| l), &checker).await;
    Scene { n, path, raw, checker, lockers, holds, _server: server }
}

/// N holders, then waiters b and c; the first holder and b (a semaphore's b holds the internal
/// mutex and has its lease node) are cut for 1 s, and both dropped during the cut.
async fn short_cut_lock(kind: Kind, recipes: &[&str]) {
    let Scene { n, path, raw, checker, lockers, mut holds, _server } = scene(kind, recipes).await;
    let b = queue(&lockers[n].1, &raw, &path, leaves_with(recipes[0], 1)).await;
    let c = queue(&lockers[n + 1].1, &raw, &path, leaves_with(recipes[0], 2)).await;
    let cut = Instant::now();
    lockers[0].2.cut();
    lockers[n].2.cut();
    let reason = tokio::time::timeout(T, holds[0].lost()).await.expect("lost");
    assert_eq!(reason, LossReason::Suspended);
    let took = holds[0].lost_at().unwrap().duration_since(cut);
    assert!(took < Duration::from_millis(100), "lost {took:?} after the cut");
    // Both dropped while disconnected: nothing of them may stay once healed.
    drop(holds.remove(0));
    b.abort();
    assert!(b.await.unwrap_err().is_cancelled());
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!c.is_finished(), "a waiter holds while the lost holder's node may live");
    let healed = Instant::now();
    lockers[0].2.heal();
    lockers[n].2.heal();
    let hold_c = tokio::time::timeout(T, c).await.expect("c holds after the heal").unwrap();
    let hold_c = hold_c.unwrap();
    assert!(hold_c.started_at() > healed);
    checker.record("c", &hold_c);
    // Only the holders' nodes are left: the cut holder's and b's are gone.
    let mut nodes: Vec<&str> = holds.iter().chain([&hold_c]).map(|h| h.node_path()).collect();
    nodes.sort();
    let expected: Vec<&str> = nodes.iter().map(|p| &p[path.len() + 1..]).collect();
    wait_leaves(&raw, &path, &expected).await;
    hold_c.release().await.unwrap();
    for h in holds {
        h.release().await.unwrap();
    }
    wait_leaves(&raw, &path, &[]).await;
    checker.assert_at_most(n, Duration::ZERO);
}

/// N holders and a waiter b; the first holder is cut for 6 s > T.
async fn long_cut_lock(kind: Kind, recipes: &[&str]) {
    let Scene { n, path, raw, checker, lockers, holds, _server } = scene(kind, recipes).await;
    let b = queue(&lockers[n].1, &raw, &path, leaves_with(recipes[0], 1)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cut = Instant::now();
    lockers[0].2.cut();
    let hold_b = tokio::time::timeout(Duration::from_secs(8), b).await.expect("b holds").unwrap();
    let hold_b = hold_b.unwrap();
    checker.record("b", &hold_b);
    let took = hold_b.started_at().duration_since(cut);
    eprintln!("{recipes:?}: b holds {took:?} after the cut");
    assert!(took >= Duration::from_millis(3000) && took <= Duration::from_millis(5500), "{took:?}");
    let lost_at = holds[0].lost_at().expect("a stopped before b started");
    assert!(lost_at < hold_b.started_at());
    tokio::time::sleep_until((cut + Duration::from_secs(6)).into()).await;
    lockers[0].2.heal();
    // The cut handle acquires again, on its new session, once b is done.
    let a = &lockers[0].1;
    let again = tokio::spawn({
        let a = a.clone();
        async move { a.acquire().await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(n > 1 || !again.is_finished(), "a holds beside b");
    hold_b.release().await.unwrap();
    let again = tokio::time::timeout(2 * T, again).await.expect("a holds again").unwrap().unwrap();
    checker.record("a again", &again);
    assert!(again.token() > holds[0].token());
    again.release().await.unwrap();
    for h in holds {
        h.release().await.unwrap();
    }
    wait_leaves(&raw, &path, &[]).await;
    checker.assert_at_most(n, Duration::ZERO);
}

async fn acquire_dropped_while_cut(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let raw = raw_client(&server).await;
    for recipe in ["mutex", "read", "write", "semaphore:1"] {
        let path = test_path("t80-drop", kind);
        let lockers = lockers_via_proxy(&server, &path, &[recipe, recipe]).await;
        let (session, cut, proxy) = &lockers[0];
        proxy.cut();
        let pending = tokio::spawn({
            let l = cut.clone();
            async move { l.acquire().await }
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        pending.abort();
        assert!(pending.await.unwrap_err().is_cancelled());
        proxy.heal();
        eventually(T, "reconnected", || session.state().is_connected()).await;
        wait_leaves(&raw, &path, &[]).await;
        let other = &lockers[1].1;
        let hold = other.acquire_timeout(T).await.unwrap().expect("nothing left in the way");
        hold.release().await.unwrap();
        wait_leaves(&raw, &path, &[]).await;
    }
}
