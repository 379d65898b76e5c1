//! The read-write lock and the semaphore on a 3-node Apache ZooKeeper 3.8 ensemble whose ZAB
//! leader lags: SIGSTOPped (a long GC pause) under a write-lock holder and a semaphore lease
//! whose sessions are on it, while a reader, a second lease and a semaphore waiter are on the
//! other members; then thawed, and it rejoins. ZooKeeper only (rzk has no replication).
//!
//! Asserted: the sessions on the frozen member move to a survivor on the same session within
//! `T`; the write hold and the lease there end with their Suspended state, and only then do
//! the reader and the waiter get theirs, with larger tokens (the followers drop their own
//! clients too while they elect, so the other lease may end as well); the checkers' invariants
//! hold
//! throughout (the read-write lock: no overlap of the writer with the reader; the semaphore:
//! at most 2 leases; token order; token = czxid); the thawed member serves again.

// Apache ZooKeeper ensembles only (rzk refuses them): the `zookeeper-tests` tier.
#![cfg(feature = "zookeeper-tests")]

mod support;

use std::time::{Duration, Instant};

use rzk_client::{Acls, CreateMode};
use rzk_recipes::{
    election::{ConnectionPolicy, LatchOptions, LeaderLatch},
    lock::{InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphore, MutexOptions},
    session::Session,
};
use rzk_testkit::ensemble::Ensemble;
use support::checker::Checker;
use support::ensemble::{blocking, session_placed, sid, T};
use support::locks::{leaves, leaves_with};
use support::{init_tracing, serial};

/// Waits until `path` has `n` leaves, as `client` sees them.
async fn queued(client: &rzk_client::Client, path: &str, n: usize) {
    let start = Instant::now();
    while leaves(client, path).await.len() < n {
        assert!(start.elapsed() < Duration::from_secs(8), "never queued below {path}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits (at most `T`) until every session in `moved` is connected to a member other than
/// `gone`; returns how long that took from `since`.
async fn moved_off(ens: &Ensemble, gone: usize, moved: &[&Session], since: Instant) -> Duration {
    let others: Vec<usize> = (0..ens.size()).filter(|&i| i != gone).collect();
    loop {
        let on_others = moved.iter().all(|s| s.state().is_connected())
            && blocking(|| {
                moved.iter().all(|s| others.iter().any(|&i| ens.sessions_on(i).contains(&sid(s))))
            });
        if on_others {
            return since.elapsed();
        }
        assert!(since.elapsed() < T, "the sessions on node {} did not move", gone + 1);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t91_ensemble_leader_frozen_under_rwlock_and_semaphore() {
    init_tracing();
    let _g = serial().await;
    let ens = blocking(|| Ensemble::start(3));
    let hosts = ens.hosts();
    let zab = blocking(|| ens.leader()).expect("a ZAB leader");
    let s_write = session_placed(&ens, &hosts, zab, true).await;
    let s_lease = session_placed(&ens, &hosts, zab, true).await;
    let s_read = session_placed(&ens, &hosts, zab, false).await;
    let s_lease2 = session_placed(&ens, &hosts, zab, false).await;
    let s_wait = session_placed(&ens, &hosts, zab, false).await;
    let observer = s_read.client().unwrap();
    let all = [&s_write, &s_lease, &s_read, &s_lease2, &s_wait];
    let ids: Vec<_> = all.iter().map(|s| (s.session_id(), s.generation())).collect();
    let path = format!("/t/t91/{}", std::process::id());
    let options = |id: &str| MutexOptions::default().with_id(id);

    let rw = Checker::new();
    let rw_path = format!("{path}/rw");
    let writer = InterProcessReadWriteLock::new(&s_write, &rw_path, options("w")).unwrap();
    rw.attach("w", writer.write_lock().events(), Some(observer.clone()));
    let g_write = writer.write_lock().acquire().await.unwrap();
    let reader = InterProcessReadWriteLock::new(&s_read, &rw_path, options("r")).unwrap();
    rw.attach("r", reader.read_lock().events(), Some(observer.clone()));
    let read = tokio::spawn({
        let side = reader.read_lock().clone();
        async move { side.acquire().await }
    });
    queued(&observer, &rw_path, 2).await;

    let sem = Checker::new();
    let sem_path = format!("{path}/sem");
    let s1 = InterProcessSemaphore::new(&s_lease, &sem_path, 2, options("s1")).unwrap();
    let lease1 = s1.acquire().await.unwrap();
    sem.record("s1", &lease1);
    let s2 = InterProcessSemaphore::new(&s_lease2, &sem_path, 2, options("s2")).unwrap();
    let lease2 = s2.acquire().await.unwrap();
    sem.record("s2", &lease2);
    let s3 = InterProcessSemaphore::new(&s_wait, &sem_path, 2, options("s3")).unwrap();
    let wait = tokio::spawn(async move { s3.acquire().await });
    queued(&observer, &sem_path, leaves_with("semaphore:2", 1)).await;

    let t_freeze = Instant::now();
    blocking(|| ens.freeze(zab));
    eprintln!("SIGSTOP of the ZAB leader, node {}", zab + 1);
    let took = moved_off(&ens, zab, &[&s_write, &s_lease], t_freeze).await;
    eprintln!("the frozen leader's sessions moved {took:?} after the stop");

    let g_read = tokio::time::timeout(T, read).await.expect("reads").unwrap().unwrap();
    assert!(!g_write.is_valid(), "the writer was told before the reader got the lock");
    assert!(g_read.token() > g_write.token(), "token order");
    let lease3 = tokio::time::timeout(T, wait).await.expect("leases").unwrap().unwrap();
    sem.record("s3", &lease3);
    assert!(!lease1.is_valid(), "the frozen leader's lease ended before the waiter's began");

    blocking(|| ens.thaw(zab));
    blocking(|| ens.wait_until("the thawed member rejoins", |e| e.role(zab).is_some()));
    let after: Vec<_> = all.iter().map(|s| (s.session_id(), s.generation())).collect();
    assert_eq!(after, ids, "the same sessions");
    rw.assert_ok();
    sem.assert_at_most(2, Duration::ZERO);
    drop(g_write);
    g_read.release().await.unwrap();
    for lease in [lease1, lease2, lease3] {
        drop(lease);
    }
    for s in [s_write, s_lease, s_read, s_lease2, s_wait] {
        s.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t91b_ensemble_follower_killed_under_step_down_on_lost_keeps_every_term() {
    init_tracing();
    let _g = serial().await;
    let mut ens = blocking(|| Ensemble::start(3));
    let hosts = ens.hosts();
    let f = blocking(|| ens.follower());
    let s_on = session_placed(&ens, &hosts, f, true).await;
    let s_off = session_placed(&ens, &hosts, f, false).await;
    let observer = s_off.client().unwrap();
    let ids: Vec<_> = [&s_on, &s_off].iter().map(|s| (s.session_id(), s.generation())).collect();
    let path = format!("/t/t91b/{}", std::process::id());
    let policy = ConnectionPolicy::StepDownOnLost;

    let latches = Checker::new();
    let latch_path = format!("{path}/latch");
    let latch = |s: &Session, id: &str| {
        let options = LatchOptions::default().with_id(id).with_policy(policy);
        let l = LeaderLatch::new(s, &latch_path, options).unwrap();
        latches.attach(id, l.events(), Some(observer.clone()));
        l
    };
    let (l0, l1) = (latch(&s_on, "p0"), latch(&s_off, "p1"));
    l0.start().await.unwrap();
    let term = l0.await_leadership_timeout(T).await.unwrap().expect("p0 leads");
    l1.start().await.unwrap();

    let locks = Checker::new();
    let lock = format!("{path}/lock");
    let mutex = |s: &Session, id: &str| {
        let options = MutexOptions::default().with_id(id).with_policy(policy);
        let m = InterProcessMutex::new(s, &lock, options).unwrap();
        locks.attach(id, m.events(), Some(observer.clone()));
        m
    };
    let g0 = mutex(&s_on, "m0").acquire().await.unwrap();
    let m1 = mutex(&s_off, "m1");
    let waiter = tokio::spawn(async move { m1.acquire().await });
    queued(&observer, &lock, 2).await;

    let t_kill = Instant::now();
    blocking(|| ens.kill(f));
    let took = moved_off(&ens, f, &[&s_on], t_kill).await;
    eprintln!("the killed follower's session moved {took:?} after the kill");
    let after: Vec<_> = [&s_on, &s_off].iter().map(|s| (s.session_id(), s.generation())).collect();
    assert_eq!(after, ids, "the same sessions");

    // Both still hold, on the server too: a guarded write checks the holder's node.
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    for (what, leadership) in [("latch", &term), ("mutex", g0.leadership())] {
        assert!(leadership.is_valid(), "the {what} term survived the move");
        let mut w = leadership.guarded().unwrap();
        w.create(&format!("{path}-{what}-after-move"), b"", &open).unwrap();
        w.commit().await.unwrap_or_else(|e| panic!("the {what}'s guarded write: {e}"));
    }
    assert!(l0.has_leadership() && !l1.has_leadership(), "p0 still leads, alone");
    assert!(!waiter.is_finished(), "the waiter got nothing while m0 held");
    assert_eq!(latches.leaders(), ["p0"], "one latch term");

    let token0 = g0.token();
    g0.release().await.unwrap();
    let g1 = tokio::time::timeout(T, waiter).await.expect("acquires").unwrap().unwrap();
    assert!(g1.token() > token0, "token order");
    g1.release().await.unwrap();
    latches.assert_ok();
    locks.assert_ok();
    for l in [l0, l1] {
        l.close().await.unwrap();
    }
    for s in [s_on, s_off] {
        s.close().await;
    }
}
