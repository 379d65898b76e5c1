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

mod support;

use std::time::{Duration, Instant};

use rzk_recipes::{InterProcessReadWriteLock, InterProcessSemaphore, MutexOptions};
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
    let others: Vec<usize> = (0..3).filter(|&i| i != zab).collect();
    loop {
        let moved = [&s_write, &s_lease].iter().all(|s| s.state().is_connected())
            && blocking(|| {
                [&s_write, &s_lease]
                    .iter()
                    .all(|s| others.iter().any(|&i| ens.sessions_on(i).contains(&sid(s))))
            });
        if moved {
            break;
        }
        assert!(t_freeze.elapsed() < T, "the sessions on the frozen leader did not move");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!("the frozen leader's sessions moved {:?} after the stop", t_freeze.elapsed());

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
