//! Five candidates `候选人-1..5` join in order (docs/election.md §2.5, §2.9): the first leads with
//! Curator's node name and its id as data; after its work it resigns, its `lost()` resolves before
//! an observer sees its node deleted, and the next in node order leads with a larger token. Also:
//! close modes (NotifyLeader emits one `Lost { Closed }`, Silent none; a second close fails) and
//! concurrent joins (leaders follow node order).

mod support;

use std::time::{Duration, Instant};

use rzk_recipes::{
    election::{CloseMode, ElectionEvent, Events, LatchOptions, LeaderLatch},
    session::Session,
    LossReason,
};
use support::checker::Checker;
use support::*;

both_servers! {
    t12_resign_after_work => resign_after_work;
    t12_notify_leader_close => notify_leader_close;
    t12_concurrent => concurrent;
}

struct Candidates {
    _sessions: Vec<Session>,
    latches: Vec<LeaderLatch>,
    events: Vec<Events>,
}

async fn candidates(
    server: &Server,
    path: &str,
    checker: &Checker,
    sequential: bool,
) -> Candidates {
    let observer = raw_client(server).await;
    let mut sessions = Vec::new();
    let mut latches = Vec::new();
    let mut events = Vec::new();
    for i in 1..=5 {
        let s = session(server).await;
        let id = format!("候选人-{i}");
        let latch = LeaderLatch::new(&s, path, LatchOptions::default().with_id(&id)).unwrap();
        checker.attach(&id, latch.events(), Some(observer.clone()));
        events.push(latch.events());
        sessions.push(s);
        latches.push(latch);
    }
    if sequential {
        for l in &latches {
            l.start().await.unwrap();
        }
    } else {
        let starts: Vec<_> = latches
            .iter()
            .map(|l| {
                let l = l.clone();
                tokio::spawn(async move { l.start().await.unwrap() })
            })
            .collect();
        for s in starts {
            s.await.unwrap();
        }
    }
    Candidates { _sessions: sessions, latches, events }
}

/// Waits (like the article's poll) until one candidate leads; returns its index.
async fn first_leader(latches: &[LeaderLatch]) -> usize {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let handles: Vec<_> = latches
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let (l, tx) = (l.clone(), tx.clone());
            tokio::spawn(async move {
                if l.await_leadership().await.is_ok() {
                    let _ = tx.send(i);
                }
            })
        })
        .collect();
    let i = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.unwrap().unwrap();
    for h in handles {
        h.abort();
    }
    i
}

fn drain(events: &mut Events) -> Vec<ElectionEvent> {
    let mut out = Vec::new();
    while let Some(e) = events.try_recv() {
        out.push(e);
    }
    out
}

fn lost_events(events: &[ElectionEvent]) -> Vec<LossReason> {
    events
        .iter()
        .filter_map(|e| match e {
            ElectionEvent::Lost { reason, .. } => Some(*reason),
            _ => None,
        })
        .collect()
}

async fn resign_after_work(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = "/demo/leader-election".to_string();
    let observer = raw_client(&server).await;
    delete_all(&observer, &path).await;
    let checker = Checker::new();
    let mut c = candidates(&server, &path, &checker, true).await;
    let first = first_leader(&c.latches).await;
    assert_eq!(first, 0, "候选人-1 leads");
    let leadership = c.latches[0].current().unwrap();
    let node = leadership.node_path().to_string();
    let name = node.strip_prefix(&format!("{path}/")).unwrap();
    assert_curator_name(name, "latch-");
    assert_eq!(c.latches[0].our_path().as_deref(), Some(node.as_str()));
    let (data, stat) = observer.get_data(&node).await.unwrap();
    assert_eq!(data, "候选人-1".as_bytes());
    assert_eq!(stat.czxid, leadership.token().0);
    let p = c.latches[3].participants().await.unwrap();
    let ids: Vec<&str> = p.list.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["候选人-1", "候选人-2", "候选人-3", "候选人-4", "候选人-5"]);
    assert!(p.list[0].is_leader && !p.list[1].is_leader);
    assert_eq!(c.latches[2].leader().await.unwrap().unwrap().id, "候选人-1");

    // An observer watches the leader's node: lost() must resolve before the delete lands.
    let (_, _, watch) = observer.get_and_watch_data(&node).await.unwrap();
    let deleted_at = tokio::spawn(async move {
        let ev = watch.changed().await;
        assert_eq!(ev.event_type, rzk_client::EventType::NodeDeleted);
        Instant::now()
    });
    tokio::time::sleep(Duration::from_millis(500)).await; // the work
    let resign_at = Instant::now();
    leadership.clone().resign().await.unwrap();
    let deleted_at = deleted_at.await.unwrap();
    assert_eq!(leadership.loss_reason(), Some(LossReason::Resigned));
    assert!(leadership.lost_at().unwrap() <= deleted_at, "lost() resolved after the delete");
    assert!(!c.latches[0].has_leadership());
    let next = c.latches[1].await_leadership_timeout(Duration::from_secs(1)).await.unwrap();
    let next = next.expect("候选人-2 elected within 1 s");
    eprintln!("handoff: {:?}", next.started_at().duration_since(resign_at));
    assert!(next.token() > leadership.token());
    let p = c.latches[3].participants().await.unwrap();
    let ids: Vec<&str> = p.list.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["候选人-2", "候选人-3", "候选人-4", "候选人-5"]);
    // Silent (resign): no Lost event from the resigning leader.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(lost_events(&drain(&mut c.events[0])).is_empty());
    // From the back of the queue: no handoff during teardown.
    for l in c.latches.drain(1..).rev() {
        l.close().await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    checker.assert_ok();
    assert_eq!(checker.leaders(), ["候选人-1", "候选人-2"]);
}

/// Close modes, on the same five candidates: closing leaders emit exactly one
/// `Lost { Closed }` under NotifyLeader and none under Silent; closing followers never do; the
/// leader's `lost()` resolves with `Closed` either way. Leaders follow node order.
async fn notify_leader_close(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    for mode in [CloseMode::NotifyLeader, CloseMode::Silent] {
        let path = test_path("t12-close", kind);
        let checker = Checker::new();
        let mut c = candidates(&server, &path, &checker, true).await;
        first_leader(&c.latches).await;
        // Close a follower first: no event at all.
        let follower = c.latches.remove(2);
        let mut follower_events = c.events.remove(2);
        follower.close_with(mode).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(lost_events(&drain(&mut follower_events)).is_empty());
        // Then each leader in turn.
        let expected = ["候选人-1", "候选人-2", "候选人-4", "候选人-5"];
        for (i, id) in expected.iter().enumerate() {
            let latch = c.latches.remove(0);
            let mut events = c.events.remove(0);
            let l = latch.await_leadership_timeout(Duration::from_secs(1)).await.unwrap();
            let l = l.unwrap_or_else(|| panic!("{id} should lead (step {i})"));
            assert_eq!(l.participant_id(), *id);
            let closed = Instant::now();
            latch.clone().close_with(mode).await.unwrap();
            assert_eq!(l.loss_reason(), Some(LossReason::Closed));
            assert!(latch.clone().close().await.is_err(), "second close is an error");
            tokio::time::sleep(Duration::from_millis(30)).await;
            let lost = lost_events(&drain(&mut events));
            match mode {
                CloseMode::NotifyLeader => assert_eq!(lost, vec![LossReason::Closed]),
                CloseMode::Silent => assert!(lost.is_empty(), "{lost:?}"),
            }
            if let Some(next) = c.latches.first() {
                let n = next.await_leadership_timeout(Duration::from_secs(1)).await.unwrap();
                let n = n.expect("next leader within 1 s");
                assert!(n.token() > l.token());
                eprintln!("{mode:?} handoff {i}: {:?}", n.started_at().duration_since(closed));
            }
            assert!(matches!(latch.await_leadership().await, Err(rzk_recipes::Error::Closed)));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        checker.assert_ok();
        assert_eq!(checker.leaders(), expected);
    }
}

/// The concurrent variant: the first leader owns the smallest sequence, the second is the next
/// in node order.
async fn concurrent(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t12-concurrent", kind);
    let checker = Checker::new();
    let c = candidates(&server, &path, &checker, false).await;
    let order: Vec<String> =
        c.latches[0].participants().await.unwrap().list.into_iter().map(|p| p.id).collect();
    assert_eq!(order.len(), 5);
    let first = first_leader(&c.latches).await;
    assert_eq!(format!("候选人-{}", first + 1), order[0]);
    let l = c.latches[first].current().unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    l.resign().await.unwrap();
    let second: usize = order[1].strip_prefix("候选人-").unwrap().parse::<usize>().unwrap() - 1;
    let next = c.latches[second].await_leadership_timeout(Duration::from_secs(1)).await.unwrap();
    assert!(next.is_some(), "the next in node order takes over");
    // From the back of the queue: no handoff during teardown.
    let mut rest: Vec<(usize, _)> = c
        .latches
        .into_iter()
        .enumerate()
        .filter(|(i, _)| *i != first)
        .map(|(i, l)| (order.iter().position(|id| *id == format!("候选人-{}", i + 1)), l))
        .map(|(pos, l)| (pos.expect("in the order"), l))
        .collect();
    rest.sort_by_key(|(pos, _)| std::cmp::Reverse(*pos));
    for (_, l) in rest {
        l.close().await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    checker.assert_ok();
    assert_eq!(checker.leaders(), order[..2]);
}
