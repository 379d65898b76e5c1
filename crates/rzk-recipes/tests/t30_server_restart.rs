//! Server restart (docs/election.md §2.3, §2.4), against a durable rzk server and Apache ZooKeeper
//! (always durable). A short outage keeps the sessions: the leader steps down on Suspended and
//! resumes with the same token, nobody else leads. A long outage loses every session: everyone
//! rejoins on a new one and exactly one leader emerges, with a token above every earlier one (the
//! server persists zxids). Both for the latch and the race election.
//!
//! The lock recipes (the mutex, the read-write lock with a writer holding and a reader waiting,
//! a semaphore of two leases with two holders), N holding and one waiting: after a short outage
//! the holds are lost (Suspended) and released on the same sessions, and the waiter holds; after
//! a long one every session is lost, the holds end no later than T after the stop, and the
//! waiter, on its new session, holds with a token above every earlier one. Never more than N
//! hold, and once all release no node is left.

mod support;

use std::time::{Duration, Instant};

use rzk_recipes::{
    election::ConnectionPolicy,
    session::{Session, SessionConfig},
    Leadership, LossReason,
};
use support::candidate::{Candidate, Recipe};
use support::checker::Checker;
use support::locks::{hold_each, holders, leaves_with, lockers, queue, wait_leaves};
use support::*;

both_servers! {
    t30_restart_short => restart_short;
    t30_restart_long => restart_long;
    t30_restart_short_race => restart_short_race;
    t30_restart_long_race => restart_long_race;
    t30_restart_short_mutex => restart_short_mutex;
    t30_restart_short_read_write => restart_short_read_write;
    t30_restart_short_semaphore => restart_short_semaphore;
    t30_restart_long_mutex => restart_long_mutex;
    t30_restart_long_read_write => restart_long_read_write;
    t30_restart_long_semaphore => restart_long_semaphore;
}

async fn restart_short(kind: Kind) {
    restart_short_of(kind, Recipe::Latch).await
}

async fn restart_long(kind: Kind) {
    restart_long_of(kind, Recipe::Latch).await
}

async fn restart_short_race(kind: Kind) {
    restart_short_of(kind, Recipe::Race).await
}

async fn restart_long_race(kind: Kind) {
    restart_long_of(kind, Recipe::Race).await
}

/// Three candidates a, b, c, started in that order (so a leads).
async fn latches(
    server: &Server,
    recipe: Recipe,
    path: &str,
    timeout: Duration,
    checker: &Checker,
) -> (Vec<Session>, Vec<Candidate>) {
    let mut sessions = Vec::new();
    let mut latches = Vec::new();
    for id in ["a", "b", "c"] {
        let s = Session::connect(SessionConfig::new(server.hosts()).with_session_timeout(timeout))
            .await
            .unwrap();
        let policy = ConnectionPolicy::default();
        let l = Candidate::start(recipe, &s, path, id, policy, checker).await;
        sessions.push(s);
        latches.push(l);
    }
    (sessions, latches)
}

fn durable() -> Settings {
    Settings { durable: true, ..Settings::default() }
}

async fn restart(server: &mut Server, downtime: Duration) {
    tokio::task::block_in_place(|| server.restart_after(downtime));
}

async fn restart_short_of(kind: Kind, recipe: Recipe) {
    // T = 20 s (tick 1.5 s allows up to 30 s), so that a JVM restart stays well inside the
    // lease even on a loaded machine: the client retries with exponential backoff (attempts
    // about 0.9, 1.75, 3.4, 6.6 and 13 s after the cut) and the lease ends at T - T/10 after
    // the last acknowledged heartbeat (sent every T/6), so 14.7 s or more after the cut. With
    // T = 8 s (end 5.9 s or more) a JVM slower than ~3.4 s to serve raced that deadline.
    let mut server = Server::start(kind, Settings { tick_ms: 1500, ..durable() });
    let path = test_path("t30-short", kind);
    let checker = Checker::new();
    let (sessions, latches) =
        latches(&server, recipe, &path, Duration::from_secs(20), &checker).await;
    let la = latches[0].await_leadership().await.unwrap();
    let sid = sessions[0].session_id();
    let downtime = match kind {
        Kind::Rzk => Duration::from_secs(1),
        Kind::ZooKeeper => Duration::ZERO, // the JVM start is the downtime
    };
    let stopped = Instant::now();
    restart(&mut server, downtime).await;
    eprintln!("server back after {:?}", stopped.elapsed());
    assert!(la.lost_at().is_some(), "stepped down (Suspended)");
    let again = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            assert!(!latches[1].has_leadership() && !latches[2].has_leadership());
            if let Some(l) = latches[0].current().filter(|l| l.is_valid()) {
                return l;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("a leads again");
    eprintln!("a resumed {:?} after the stop", again.started_at().duration_since(stopped));
    assert_eq!(sessions[0].session_id(), sid, "the session survived");
    assert!(again.resumed());
    assert_eq!(again.token(), la.token());
    for l in latches {
        l.close().await.unwrap();
    }
    checker.assert_ok();
    assert_eq!(checker.leaders()[0], "a");
}

async fn restart_long_of(kind: Kind, recipe: Recipe) {
    let mut server = Server::start(kind, durable());
    let path = test_path("t30-long", kind);
    let checker = Checker::new();
    let (sessions, latches) = latches(&server, recipe, &path, T, &checker).await;
    let la = latches[0].await_leadership().await.unwrap();
    let before: Vec<i64> = latches[0].members().await.iter().map(|m| m.1).collect();
    let gens: Vec<u64> = sessions.iter().map(|s| s.generation()).collect();
    let stopped = Instant::now();
    restart(&mut server, 2 * T).await;
    let back = Instant::now();
    eprintln!("server back after {:?}", back.duration_since(stopped));
    assert!(la.lost_at().is_some());
    assert!(la.lost_at().unwrap() <= stopped + T, "lost by stop_at");
    // Every manager declared its session lost while the server was down.
    for (s, g) in sessions.iter().zip(&gens) {
        eventually(Duration::from_secs(5), "new session", || s.generation() > *g).await;
    }
    let leader: Leadership = tokio::time::timeout(T + Duration::from_secs(2), async {
        loop {
            let ls: Vec<Leadership> =
                latches.iter().filter_map(|l| l.current()).filter(|l| l.is_valid()).collect();
            assert!(ls.len() <= 1, "two leaders: {ls:?}");
            if let Some(l) = ls.into_iter().next() {
                return l;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("one leader within T + 2 s of the restart");
    eprintln!("leader {:?} after the restart", leader.started_at().duration_since(back));
    let max_before = *before.iter().max().unwrap();
    assert!(leader.token().0 > max_before, "token {} after {before:?}", leader.token());
    eventually(Duration::from_secs(8), "all three rejoined", || {
        latches.iter().all(|l| l.rejoined_after(&la))
    })
    .await;
    let p = latches[0].members().await;
    assert!(p.iter().all(|m| m.1 > max_before), "{p:?}");
    for l in latches {
        l.close().await.unwrap();
    }
    checker.assert_ok();
}

async fn restart_short_mutex(kind: Kind) {
    restart_lock(kind, &["mutex"; 2], false).await
}

async fn restart_short_read_write(kind: Kind) {
    restart_lock(kind, &["write", "read"], false).await
}

async fn restart_short_semaphore(kind: Kind) {
    restart_lock(kind, &["semaphore:2"; 3], false).await
}

async fn restart_long_mutex(kind: Kind) {
    restart_lock(kind, &["mutex"; 2], true).await
}

async fn restart_long_read_write(kind: Kind) {
    restart_lock(kind, &["write", "read"], true).await
}

async fn restart_long_semaphore(kind: Kind) {
    restart_lock(kind, &["semaphore:2"; 3], true).await
}

/// Every locker but the last holds, the last waits; the server restarts after a short
/// outage (sessions of 20 s survive it, as in `restart_short`) or a long one (2·T).
async fn restart_lock(kind: Kind, recipes: &[&str], long: bool) {
    let (settings, timeout) = match long {
        true => (durable(), T),
        false => (Settings { tick_ms: 1500, ..durable() }, Duration::from_secs(20)),
    };
    let mut server = Server::start(kind, settings);
    let path = test_path("t30-lock", kind);
    let raw = raw_client(&server).await;
    let checker = Checker::new();
    let config = SessionConfig::new(server.hosts()).with_session_timeout(timeout);
    let (sessions, lockers) = lockers(&config, &path, recipes).await;
    let (waiter, holding) = lockers.split_last().unwrap();
    let holds = hold_each(holding, &checker).await;
    let pending = queue(waiter, &raw, &path, leaves_with(recipes[0], 1)).await;
    let sids: Vec<_> = sessions.iter().map(|s| s.session_id()).collect();
    drop(raw);
    let stopped = Instant::now();
    let downtime = match (long, kind) {
        (true, _) => 2 * T,
        (false, Kind::Rzk) => Duration::from_secs(1),
        (false, Kind::ZooKeeper) => Duration::ZERO, // the JVM start is the downtime
    };
    restart(&mut server, downtime).await;
    eprintln!("{recipes:?}: server back after {:?}", stopped.elapsed());
    for hold in &holds {
        let reason = hold.loss_reason().expect("lost while the server was down");
        assert!(hold.lost_at().unwrap() <= stopped + T, "lost by stop_at");
        assert!(long || reason == LossReason::Suspended, "{reason:?}");
    }
    let hold = tokio::time::timeout(T + timeout, pending).await.expect("the waiter holds").unwrap();
    let hold = hold.unwrap();
    checker.record("waiter", &hold);
    assert!(holds.iter().all(|h| hold.token() > h.token()), "{hold:?} after {holds:?}");
    let now: Vec<_> = sessions.iter().map(|s| s.session_id()).collect();
    assert_eq!(now == sids, !long, "sessions kept only over a short outage");
    hold.release().await.unwrap();
    for h in holds {
        h.release().await.unwrap();
    }
    checker.assert_at_most(holders(recipes[0]), Duration::ZERO);
    wait_leaves(&raw_client(&server).await, &path, &[]).await;
}
