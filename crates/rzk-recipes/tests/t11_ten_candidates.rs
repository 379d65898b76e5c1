//! Ten candidates joined in order (docs/election.md §2.8); the sessions of 0, 1, 3, 4 and 2 are
//! closed in turn, and the leaders are 0, 1, 2, 2, 2, 5: closing a follower leaves the leader's
//! term untouched. Tokens rise with each new leader. Run per watch strategy: Predecessor wakes
//! exactly one follower per change (5 in all), Herd every follower (33 or more).

mod support;

use std::time::Duration;

use rzk_recipes::{
    election::{LatchOptions, LeaderLatch, Status, WatchStrategy},
    session::Session,
};
use support::checker::{sample_single_leader, Checker};
use support::*;

both_servers! {
    t11_predecessor => predecessor;
    t11_herd => herd;
}

async fn predecessor(kind: Kind) {
    ten_candidates(kind, WatchStrategy::Predecessor).await
}

async fn herd(kind: Kind) {
    ten_candidates(kind, WatchStrategy::Herd).await
}

async fn settle(latches: &[LeaderLatch], alive: &[bool]) {
    // Quiescence: every live participant leads or follows, and no counter moves for 150 ms.
    let snapshot = || -> Vec<(Status, u64)> {
        latches.iter().map(|l| (l.status(), l.metrics().wakeups)).collect()
    };
    let mut last = snapshot();
    let mut stable_since = std::time::Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let now = snapshot();
        let settled = now.iter().zip(alive).all(|((s, _), a)| {
            !a || matches!(s, Status::Leading { .. } | Status::Following { .. })
        });
        if now != last || !settled {
            last = now;
            stable_since = std::time::Instant::now();
        } else if stable_since.elapsed() > Duration::from_millis(150) {
            return;
        }
    }
}

/// Joins ten candidates, 0 to 9, each on its own session; checks Curator's names for their
/// nodes and the participants' order.
async fn join_in_order(
    server: &Server,
    path: &str,
    observer: &rzk_client::Client,
    checker: &Checker,
    strategy: WatchStrategy,
) -> (Vec<Option<Session>>, Vec<LeaderLatch>) {
    let mut sessions = Vec::new();
    let mut latches: Vec<LeaderLatch> = Vec::new();
    for i in 0..10 {
        let s = session(server).await;
        let latch = LeaderLatch::new(
            &s,
            path,
            LatchOptions::default().with_id(i.to_string()).with_strategy(strategy),
        )
        .unwrap();
        checker.attach(&i.to_string(), latch.events(), Some(observer.clone()));
        let joined = latch.start().await.unwrap();
        assert!(joined.node.starts_with(&format!("{path}/_c_")));
        sessions.push(Some(s));
        latches.push(latch);
    }
    // Naming: Curator's protected names, the id as data.
    let children = observer.list_children(path).await.unwrap();
    assert_eq!(children.len(), 10);
    for c in &children {
        assert_curator_name(c, "latch-");
    }
    let participants = latches[9].participants().await.unwrap();
    let ids: Vec<&str> = participants.list.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]);
    assert!(participants.list[0].is_leader && participants.foreign.is_empty());
    (sessions, latches)
}

/// Checks who woke up when `k` closed, per watch strategy.
fn assert_woken(
    strategy: WatchStrategy,
    k: usize,
    woken: &[usize],
    delta: u64,
    alive: &[bool],
    leader: usize,
) {
    match strategy {
        WatchStrategy::Predecessor => {
            // The live successor of k, and only it, wakes once.
            let successor = (k + 1..10).find(|&i| alive[i]).unwrap();
            assert_eq!(woken, vec![successor], "close {k}");
            assert_eq!(delta, 1, "close {k}");
        }
        _ => {
            // Every live follower wakes (at least once); the leader does not count.
            for f in (0..10).filter(|&i| alive[i] && i != leader) {
                assert!(woken.contains(&f), "close {k}: follower {f} not woken");
            }
        }
    }
}

async fn ten_candidates(kind: Kind, strategy: WatchStrategy) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t11", kind);
    let observer = raw_client(&server).await;
    let checker = Checker::new();
    let (mut sessions, latches) =
        join_in_order(&server, &path, &observer, &checker, strategy).await;

    let mut alive = [true; 10];
    eventually(Duration::from_secs(2), "0 leads", || latches[0].has_leadership()).await;
    settle(&latches, &alive).await;
    let flags: Vec<Box<dyn Fn() -> bool>> = latches
        .iter()
        .map(|l| {
            let l = l.clone();
            Box::new(move || l.has_leadership()) as Box<dyn Fn() -> bool>
        })
        .collect();
    let flag_refs: Vec<&dyn Fn() -> bool> = flags.iter().map(|f| f.as_ref()).collect();
    sample_single_leader(&flag_refs).await;
    if strategy == WatchStrategy::Predecessor {
        for l in &latches {
            assert_eq!(l.metrics().wakeups, 0, "no wake-ups while joining in order");
        }
    }

    let mut tokens = vec![latches[0].current().unwrap().token()];
    let mut total_wakeups = 0;
    let mut leader = 0;
    for (k, expected) in [(0usize, 1usize), (1, 2), (3, 2), (4, 2), (2, 5)] {
        let before: Vec<u64> = latches.iter().map(|l| l.metrics().wakeups).collect();
        let term2 = latches[2].current();
        sessions[k].take().unwrap().close().await;
        alive[k] = false;
        let took = eventually(
            Duration::from_secs(2),
            &format!("{expected} leads after {k} closed"),
            || latches[expected].has_leadership(),
        )
        .await;
        assert!(took < Duration::from_secs(1), "handoff took {took:?}");
        settle(&latches, &alive).await;
        sample_single_leader(&flag_refs).await;
        for (i, l) in latches.iter().enumerate() {
            assert_eq!(l.has_leadership(), i == expected, "after closing {k}: {i}");
        }
        if k == 3 || k == 4 {
            let (a, b) = (term2.clone().unwrap(), latches[2].current().unwrap());
            assert_eq!(a.term(), b.term(), "2's term was not replaced");
            assert!(a.loss_reason().is_none());
        } else {
            tokens.push(latches[expected].current().unwrap().token());
        }
        let woken: Vec<usize> =
            (0..10).filter(|&i| latches[i].metrics().wakeups > before[i]).collect();
        let delta: u64 = (0..10).map(|i| latches[i].metrics().wakeups - before[i]).sum();
        total_wakeups += delta;
        assert_woken(strategy, k, &woken, delta, &alive, leader);
        leader = expected;
    }
    if strategy == WatchStrategy::Predecessor {
        assert_eq!(total_wakeups, 5);
    } else {
        assert!(total_wakeups >= 33, "herd wake-ups {total_wakeups}");
    }
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "tokens {tokens:?}");
    assert_eq!(checker.leaders(), ["0", "1", "2", "5"]);
    for s in sessions.into_iter().flatten() {
        s.close().await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    checker.assert_ok();
}
