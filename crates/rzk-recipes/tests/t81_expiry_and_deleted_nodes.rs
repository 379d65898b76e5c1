//! Session and node loss (docs/election.md §2.6, §2.9, §4.1 assertion 4). Forced expiry (latch
//! and selector): B is elected within 500 ms, A gets a new session and rejoins behind B with a
//! larger token. The election parent deleted (latch and selector): the leader learns within 100
//! ms, the parent comes back as a container and one leader is elected within 1 s. A follower's
//! node deleted: it rejoins at once, nobody else disturbed. Guarded writes after the loss are
//! refused and never applied.

mod support;

use std::time::{Duration, Instant};

use rzk_client::{Acls, CreateMode};
use rzk_recipes::{
    election::{LatchOptions, LeaderLatch, LeaderSelector},
    session::{ConnectionState, Session},
    Error, Leadership, LossReason,
};
use rzk_testkit::proxy::Proxy;
use support::checker::{sample_single_leader, Checker};
use support::*;

both_servers! {
    t81_forced_expiry_latch => forced_expiry_latch;
    t81_forced_expiry_selector => forced_expiry_selector;
    t81_parent_deleted_latch => parent_deleted_latch;
    t81_parent_deleted_selector => parent_deleted_selector;
    t81_follower_node_deleted => follower_node_deleted;
    t81_guarded_write_after_loss => guarded_write_after_loss;
}

async fn latch(
    server: &Server,
    path: &str,
    id: &str,
    checker: &Checker,
) -> (Session, LeaderLatch, Proxy) {
    let (s, p) = session_via_proxy(server).await;
    let l = LeaderLatch::new(&s, path, LatchOptions::default().with_id(id)).unwrap();
    checker.attach(id, l.events(), Some(raw_client(server).await));
    l.start().await.unwrap();
    (s, l, p)
}

async fn forced_expiry_latch(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t81", kind);
    let checker = Checker::new();
    let (sa, a, pa) = latch(&server, &path, "a", &checker).await;
    let (_sb, b, _pb) = latch(&server, &path, "b", &checker).await;
    let la = a.await_leadership().await.unwrap();
    let mut states = sa.states();
    let (gen0, sid0) = (sa.generation(), sa.session_id().unwrap());

    let expired_at = force_expire(&server, &sa, &pa).await;
    let lb = tokio::time::timeout(Duration::from_millis(1500), b.await_leadership())
        .await
        .expect("b elected")
        .unwrap();
    let took = lb.started_at().duration_since(expired_at);
    eprintln!("b elected {took:?} after the expiry");
    assert!(took < Duration::from_millis(500), "b elected after {took:?}");
    assert!(lb.token() > la.token());
    let reason = tokio::time::timeout(Duration::from_secs(1), la.lost()).await.expect("a lost");
    assert!(
        matches!(
            reason,
            LossReason::Suspended | LossReason::SessionExpired | LossReason::NodeDeleted
        ),
        "a lost with {reason:?}"
    );
    // The session manager reports Lost, then a new session.
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(3);
    while !seen.contains(&ConnectionState::Reconnected { new_session: true }) {
        let e = tokio::time::timeout_at(deadline.into(), states.recv()).await.expect("states");
        seen.push(e.unwrap().state);
    }
    assert!(seen.contains(&ConnectionState::Lost), "{seen:?}");
    assert_eq!(sa.generation(), gen0 + 1);
    assert_ne!(sa.session_id().unwrap(), sid0);
    // A rejoins at the tail with a larger token.
    let p = rejoined_behind(&a, &b, &la, &lb, Duration::from_secs(2)).await;
    assert_eq!(p.list[1].session, sa.session_id().unwrap());
    assert!(!a.has_leadership());
    sample_single_leader(&[&|| a.has_leadership(), &|| b.has_leadership()]).await;
    // When b goes, a leads again on its new session.
    b.close().await.unwrap();
    let la2 = a.await_leadership_timeout(Duration::from_secs(1)).await.unwrap().expect("a leads");
    assert!(la2.token() > lb.token());
    assert_eq!(la2.session_id(), sa.session_id().unwrap());
    a.close().await.unwrap();
    checker.assert_ok();
    assert_eq!(checker.leaders(), ["a", "b", "a"]);
}

async fn forced_expiry_selector(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t81-sel", kind);
    let checker = Checker::new();
    let mut selectors = Vec::new();
    let mut sessions = Vec::new();
    let mut proxies = Vec::new();
    for id in ["a", "b"] {
        let (s, p) = session_via_proxy(&server).await;
        proxies.push(p);
        let sel = queued_selector(&s, &path, id, Duration::from_secs(60), &checker).await;
        selectors.push(sel);
        sessions.push(s);
    }
    let la = selectors[0].await_leadership().await.unwrap();
    let expired_at = Instant::now();
    force_expire(&server, &sessions[0], &proxies[0]).await;
    let lb = tokio::time::timeout(Duration::from_millis(1500), selectors[1].await_leadership())
        .await
        .expect("b elected")
        .unwrap();
    eprintln!("b elected {:?} after the expiry", lb.started_at().duration_since(expired_at));
    assert!(lb.token() > la.token());
    assert!(la.lost_at().is_some());
    // A's task was cancelled and A requeued on its new session, behind B.
    requeued_behind_then_close(selectors, &la, &lb, Duration::from_secs(3), &checker).await;
}

/// Deletes the election parent with everything in it; returns when the server has applied it
/// (the multi's reply), so that a bound on how fast the leader learns excludes the server's
/// fdatasync, which on a loaded machine is not the recipe's doing.
async fn parent_deleted_latch(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t81", kind);
    let raw = raw_client(&server).await;
    let checker = Checker::new();
    let mut latches = Vec::new();
    let mut sessions = Vec::new();
    let mut proxies = Vec::new();
    for id in ["a", "b", "c"] {
        let (s, l, p) = latch(&server, &path, id, &checker).await;
        latches.push(l);
        sessions.push(s);
        proxies.push(p);
    }
    let old = latches[0].await_leadership().await.unwrap();
    let deleted_at = delete_tree(&raw, &path).await;
    let reason = tokio::time::timeout(Duration::from_secs(1), old.lost()).await.expect("lost");
    assert_eq!(reason, LossReason::NodeDeleted);
    let learned = old.lost_at().unwrap().saturating_duration_since(deleted_at);
    assert!(learned < Duration::from_millis(100), "old leader learned after {learned:?}");
    let new = wait_one_leader(&latches).await;
    assert!(new.token() > old.token(), "{new:?} after {old:?}");
    assert!(new.started_at().duration_since(deleted_at) < Duration::from_secs(1));
    assert_parent_is_container(&raw, &path).await;
    // The new leader can claim before the last participant has rejoined (a woken candidate
    // claims in one round trip): every one must be back within a second.
    let rejoined = Instant::now() + Duration::from_secs(1);
    while latches[0].participants().await.unwrap().list.len() < 3 {
        assert!(Instant::now() < rejoined, "not all participants rejoined within 1 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(latches[0].participants().await.unwrap().list.len(), 3);
    for l in latches {
        l.close().await.unwrap();
    }
    checker.assert_ok_with(Duration::from_millis(250));
    assert_reaped(&raw, &path).await;
}

/// A follower's node deleted by someone else, its predecessor staying: the follower's watch on
/// its own node tells it, and it rejoins at once (a Curator follower would wait for its
/// predecessor to change). The leader and the other follower are not disturbed.
async fn follower_node_deleted(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t81", kind);
    let raw = raw_client(&server).await;
    let checker = Checker::new();
    let (_sa, a, _pa) = latch(&server, &path, "a", &checker).await;
    let (_sb, b, _pb) = latch(&server, &path, "b", &checker).await;
    let (_sc, c, _pc) = latch(&server, &path, "c", &checker).await;
    let la = a.await_leadership().await.unwrap();
    let old_c = c.our_path().unwrap();
    let old_b = b.our_path().unwrap();
    let mut events = c.events();
    // c says it follows once its watches are set.
    let following = Instant::now() + Duration::from_secs(5);
    while !matches!(c.status(), rzk_recipes::election::Status::Following { position: 2 }) {
        assert!(Instant::now() < following, "c never followed: {:?}", c.status());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    raw.delete(&old_c, None).await.unwrap();
    let deleted_at = Instant::now();
    let gone = tokio::time::timeout(Duration::from_secs(2), async {
        loop {
            match events.recv().await {
                Some(rzk_recipes::election::ElectionEvent::NodeGone { node }) => return node,
                Some(_) => {}
                None => panic!("events ended"),
            }
        }
    })
    .await
    .expect("c learned its node was deleted");
    assert_eq!(gone, old_c);
    eprintln!("c learned {:?} after the delete's reply", deleted_at.elapsed());
    let back = Instant::now() + Duration::from_secs(2);
    loop {
        let new_c = c.our_path();
        if new_c.as_ref().is_some_and(|p| *p != old_c) {
            let list = a.participants().await.unwrap().list;
            if list.len() == 3 {
                break;
            }
        }
        assert!(Instant::now() < back, "c did not rejoin: {new_c:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(la.is_valid() && a.has_leadership(), "the leader was disturbed");
    assert_eq!(b.our_path().unwrap(), old_b);
    // Its node listed is not yet its listing read: it follows once its driver has read.
    eventually(Duration::from_secs(5), "c follows b", || {
        matches!(c.status(), rzk_recipes::election::Status::Following { position: 2 })
    })
    .await;
    for l in [a, b, c] {
        l.close().await.unwrap();
    }
    checker.assert_ok_with(Duration::from_millis(250));
}

async fn parent_deleted_selector(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t81-sel", kind);
    let raw = raw_client(&server).await;
    let checker = Checker::new();
    let mut selectors = Vec::new();
    let mut sessions = Vec::new();
    for id in ["a", "b", "c"] {
        let s = session(&server).await;
        let sel = queued_selector(&s, &path, id, Duration::from_secs(60), &checker).await;
        selectors.push(sel);
        sessions.push(s);
    }
    let old = selectors[0].await_leadership().await.unwrap();
    let deleted_at = delete_tree(&raw, &path).await;
    let reason = tokio::time::timeout(Duration::from_secs(1), old.lost()).await.expect("lost");
    assert_eq!(reason, LossReason::NodeDeleted);
    let learned = old.lost_at().unwrap().saturating_duration_since(deleted_at);
    assert!(learned < Duration::from_millis(100), "old leader learned after {learned:?}");
    let flags: Vec<LeaderSelector> = selectors.to_vec();
    let new = tokio::time::timeout(Duration::from_secs(1), async {
        loop {
            if let Some(l) = flags.iter().find_map(|s| s.current()) {
                if l.token() != old.token() {
                    return l;
                }
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("a new leader within 1 s");
    assert!(new.token() > old.token());
    assert_parent_is_container(&raw, &path).await;
    sample_single_leader(&[
        &|| selectors[0].has_leadership(),
        &|| selectors[1].has_leadership(),
        &|| selectors[2].has_leadership(),
    ])
    .await;
    for s in selectors {
        s.close().await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    checker.assert_ok_with(Duration::from_millis(250));
    assert_reaped(&raw, &path).await;
}

async fn wait_one_leader(latches: &[LeaderLatch]) -> Leadership {
    let start = Instant::now();
    loop {
        let leaders: Vec<Leadership> = latches.iter().filter_map(|l| l.current()).collect();
        if leaders.len() == 1 && leaders[0].is_valid() {
            return leaders[0].clone();
        }
        assert!(start.elapsed() < Duration::from_secs(2), "no single leader: {leaders:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// ZooKeeper (and rzk) report `ephemeralOwner = 0` for containers, so a container shows only
/// by being reaped once empty; here: it exists and is not ephemeral.
async fn assert_parent_is_container(raw: &rzk_client::Client, path: &str) {
    let stat = raw.check_stat(path).await.unwrap().expect("election path recreated");
    assert_eq!(stat.ephemeral_owner, 0);
}

/// A container parent is reaped once empty (container check every 500 ms).
async fn assert_reaped(raw: &rzk_client::Client, path: &str) {
    let what = format!("{path} not reaped: not a container?");
    wait_presence(raw, path, false, Duration::from_secs(5), &what).await;
}

async fn guarded_write_after_loss(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t81", kind);
    let raw = raw_client(&server).await;
    let witness = format!("{path}-witness");
    raw.mkdir(&witness, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    let checker = Checker::new();
    let (sa, a, _pa) = latch(&server, &path, "a", &checker).await;
    let (sb, b, pb) = latch(&server, &path, "b", &checker).await;

    // 1. A leads and writes.
    let la = a.await_leadership().await.unwrap();
    let mut w = la.guarded().unwrap();
    w.set_data(&witness, format!("a|{}|1", la.token()).as_bytes(), None).unwrap();
    let r = w.commit().await.unwrap();
    assert_eq!(r.len(), 1);
    // A user op that fails after the check passed: OperationFailed, nothing applied.
    let mut w = la.guarded().unwrap();
    w.set_data(&witness, b"never", None).unwrap();
    w.create(&format!("{witness}/x/y"), b"", &CreateMode::Persistent.with_acls(Acls::anyone_all()))
        .unwrap();
    match w.commit().await {
        Err(Error::OperationFailed { index: 1, source }) => {
            assert!(matches!(*source, Error::NoNode { .. }), "{source:?}")
        }
        r => panic!("expected OperationFailed, got {r:?}"),
    }
    assert_eq!(raw.get_data(&witness).await.unwrap().0, format!("a|{}|1", la.token()).as_bytes());

    // 2. Someone deletes A's node behind its back; a write prepared before the loss fails at
    //    the server (or at the local gate, if the watch came first) and is not applied.
    let mut w = la.guarded().unwrap();
    w.set_data(&witness, b"a|stale", None).unwrap();
    raw.delete(la.node_path(), None).await.unwrap();
    match w.commit().await {
        Err(Error::NotLeader { reason: LossReason::NodeDeleted, node }) => {
            assert_eq!(node, la.node_path())
        }
        r => panic!("expected NotLeader(NodeDeleted), got {r:?}"),
    }
    assert_eq!(la.clone().lost().await, LossReason::NodeDeleted);
    assert!(!la.is_valid());
    let err = la.guarded().unwrap_err();
    assert!(err.is_not_leader(), "{err}");
    assert_eq!(raw.get_data(&witness).await.unwrap().0, format!("a|{}|1", la.token()).as_bytes());

    // 3. B leads now (A rejoined behind it); B's session is expired on the server: its write
    //    fails, clearly.
    let lb = b.await_leadership_timeout(Duration::from_secs(1)).await.unwrap().expect("b leads");
    assert!(lb.token() > la.token());
    let mut w = lb.guarded().unwrap();
    w.set_data(&witness, format!("b|{}|1", lb.token()).as_bytes(), None).unwrap();
    w.commit().await.unwrap();
    let mut w = lb.guarded().unwrap();
    w.set_data(&witness, b"b|stale", None).unwrap();
    force_expire(&server, &sb, &pb).await;
    let err = w.commit().await.unwrap_err();
    assert!(err.is_not_leader() || err.is_indeterminate(), "{err:?}");
    let reason = tokio::time::timeout(Duration::from_secs(2), lb.lost()).await.expect("b lost");
    assert!(
        matches!(
            reason,
            LossReason::Suspended | LossReason::SessionExpired | LossReason::NodeDeleted
        ),
        "{reason:?}"
    );
    let err = lb.guarded().unwrap_err();
    assert!(err.is_not_leader(), "{err}");
    assert!(err.to_string().contains("not leader"), "{err}");

    // 4. A leads again with a larger token; B's stale write never landed.
    let la2 = a.await_leadership_timeout(Duration::from_secs(2)).await.unwrap().expect("a leads");
    assert!(la2.token() > lb.token());
    assert_eq!(raw.get_data(&witness).await.unwrap().0, format!("b|{}|1", lb.token()).as_bytes());
    let mut w = la2.guarded().unwrap();
    w.set_data(&witness, format!("a|{}|2", la2.token()).as_bytes(), None).unwrap();
    w.commit().await.unwrap();
    // 5. After resigning, the term's writes are refused locally.
    la2.clone().resign().await.unwrap();
    let err = la2.guarded().unwrap_err();
    assert!(matches!(err, Error::NotLeader { reason: LossReason::Resigned, .. }), "{err:?}");
    drop(sa);
    b.close().await.unwrap();
    // A learned of the delete in step 2 by its watch, B by its own watch and a read: the two
    // sessions' deliveries have no order a client can enforce, so on a loaded machine B's
    // term may start before A's is seen to end (the same tolerance as the parent-deleted
    // scenarios). The fence above is what keeps A's writes out.
    checker.assert_ok_with(Duration::from_millis(250));
}
