//! InterProcessSemaphore (Curator's InterProcessSemaphoreV2 layout), against rzk and Apache
//! ZooKeeper 3.8.
//!
//! - Limit and progress: 2 leases, 5 contenders on 5 sessions, two rounds each; a checker
//!   counts the holders: never more than 2, at some point exactly 2, and everyone holds. The
//!   lease node is Curator's `leases/_c_<uuid>-lease-<seq>` with the host's address as data
//!   and its czxid as the token. `acquire_many(2)` takes both leases.
//! - No lease left behind: a failed `try_acquire`, a timed-out `acquire_timeout` and an
//!   aborted `acquire` leave no node in `leases` or `locks`; a dropped lease is released.
//! - Loss: a suspension shorter than the session timeout fires `lost()` and the lease node is
//!   deleted once reconnected; a session expiry fires `lost()` and the lease goes with the
//!   session, so another contender gets it, and the handle acquires again afterwards.
//! - One semaphore with Java Curator 5.4's InterProcessSemaphoreV2: with both leases held by
//!   us, Java waits; it gets a lease when one is released, and our next acquirer waits
//!   behind it until it returns its lease.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rzk_recipes::{
    lock::{InterProcessSemaphore, SemaphoreOptions},
    session::Session,
    FencingToken, LossReason,
};
#[cfg(feature = "zookeeper-tests")]
use support::java::JavaParticipant;
use support::*;

both_servers! {
    t15_semaphore_limit_and_progress => limit_and_progress;
    t15_semaphore_no_lease_left_behind => no_lease_left_behind;
    t15_semaphore_loss_releases => loss_releases;
}

// Curator in a JVM, against both servers: the `zookeeper-tests` tier only.
#[cfg(feature = "zookeeper-tests")]
both_servers! {
    t15_semaphore_with_curator => with_curator;
}

async fn semaphores(
    server: &Server,
    path: &str,
    max: u32,
    n: usize,
) -> (Vec<Session>, Vec<InterProcessSemaphore>) {
    let mut sessions = Vec::new();
    let mut semaphores = Vec::new();
    for _ in 0..n {
        let s = session(server).await;
        let options = SemaphoreOptions::default();
        semaphores.push(InterProcessSemaphore::new(&s, path, max, options).unwrap());
        sessions.push(s);
    }
    (sessions, semaphores)
}

/// Counts concurrent holders and remembers the most.
#[derive(Default)]
struct Holders {
    now: AtomicUsize,
    most: AtomicUsize,
}

impl Holders {
    fn enter(&self) {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
    }

    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn limit_and_progress(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t15", kind);
    let leases = format!("{path}/leases");
    let observer = raw_client(&server).await;
    let (_sessions, sems) = semaphores(&server, &path, 2, 5).await;

    // The layout, as Curator writes it.
    let lease = sems[0].acquire().await.unwrap();
    let kids = children(&observer, &leases).await;
    assert_eq!(kids.len(), 1, "{kids:?}");
    assert_curator_name(&kids[0], "lease-");
    let (data, stat) = observer.get_data(&format!("{leases}/{}", kids[0])).await.unwrap();
    assert_eq!(FencingToken(stat.czxid), lease.token());
    let data = String::from_utf8(data).unwrap();
    assert!(data.parse::<std::net::IpAddr>().is_ok(), "Curator's default data, got {data:?}");
    lease.release().await.unwrap();
    wait_children(&observer, &leases, 0).await;

    // Both leases to one handle; nobody else gets one until they are dropped.
    assert!(sems[0].acquire_many(3).await.is_err(), "more leases than the semaphore has");
    let many = sems[0].acquire_many(2).await.unwrap();
    assert_eq!(children(&observer, &leases).await.len(), 2);
    assert!(sems[1].try_acquire().await.unwrap().is_none(), "both leases are taken");
    drop(many);
    wait_children(&observer, &leases, 0).await;

    let holders = Arc::new(Holders::default());
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for (i, sem) in sems.iter().enumerate() {
        let (sem, holders, tokens) = (sem.clone(), holders.clone(), tokens.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..2 {
                let lease = sem.acquire().await.unwrap();
                holders.enter();
                assert!(lease.is_valid(), "{i} holds an invalid lease");
                tokens.lock().unwrap().push((i, lease.token()));
                tokio::time::sleep(Duration::from_millis(100)).await;
                holders.leave();
                lease.release().await.unwrap();
            }
        }));
    }
    for t in tasks {
        within(Duration::from_secs(30), t).await.unwrap();
    }
    assert_eq!(holders.most.load(Ordering::SeqCst), 2, "at most 2 holders, and 2 at a time");
    let tokens = tokens.lock().unwrap().clone();
    for i in 0..5 {
        assert_eq!(tokens.iter().filter(|(j, _)| *j == i).count(), 2, "{i} held twice");
    }
    let mut distinct: Vec<_> = tokens.iter().map(|(_, t)| *t).collect();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), tokens.len(), "one node per lease: {tokens:?}");
    wait_children(&observer, &leases, 0).await;
    wait_children(&observer, &format!("{path}/locks"), 0).await;
}

async fn within<F: std::future::Future>(d: Duration, f: F) -> F::Output {
    tokio::time::timeout(d, f).await.expect("in time")
}

async fn no_lease_left_behind(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t15", kind);
    let (leases, locks) = (format!("{path}/leases"), format!("{path}/locks"));
    let observer = raw_client(&server).await;
    let (_sessions, sems) = semaphores(&server, &path, 1, 2).await;
    let (a, b) = (&sems[0], &sems[1]);
    let held = a.acquire().await.unwrap();

    assert!(b.try_acquire().await.unwrap().is_none());
    assert_eq!(children(&observer, &leases).await.len(), 1, "the attempt's node is deleted");
    wait_children(&observer, &locks, 0).await;

    let started = Instant::now();
    assert!(b.acquire_timeout(Duration::from_millis(300)).await.unwrap().is_none());
    assert!(started.elapsed() >= Duration::from_millis(300), "waited the timeout");
    assert_eq!(children(&observer, &leases).await.len(), 1, "the attempt's node is deleted");
    wait_children(&observer, &locks, 0).await;

    let pending = tokio::spawn({
        let b = b.clone();
        async move { b.acquire().await }
    });
    wait_children(&observer, &leases, 2).await;
    pending.abort();
    let _ = pending.await;
    wait_children(&observer, &leases, 1).await;
    wait_children(&observer, &locks, 0).await;

    // The holder drops its lease: free for a fresh attempt.
    drop(held);
    wait_children(&observer, &leases, 0).await;
    let lease = b.try_acquire().await.unwrap().expect("free");
    assert!(lease.is_valid());
    lease.release().await.unwrap();
    assert!(children(&observer, &leases).await.is_empty(), "release awaits the delete");
}

async fn loss_releases(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t15", kind);
    let leases = format!("{path}/leases");
    let observer = raw_client(&server).await;
    let (session_a, proxy) = session_via_proxy(&server).await;
    let a = InterProcessSemaphore::new(&session_a, &path, 1, SemaphoreOptions::default()).unwrap();
    let (_sessions, others) = semaphores(&server, &path, 1, 1).await;
    let b = &others[0];

    // A suspension the session survives: the lease is lost, and its node deleted on return.
    let lease = a.acquire().await.unwrap();
    let lost = lease.lost();
    proxy.cut();
    assert_eq!(within(T, lost).await, LossReason::Suspended);
    assert!(!lease.is_valid());
    tokio::time::sleep(Duration::from_millis(500)).await;
    proxy.heal();
    wait_children(&observer, &leases, 0).await;
    drop(lease);

    // A session expiry: the lease goes with the session, and another contender gets it.
    let lease = a.acquire().await.unwrap();
    let lost = lease.lost();
    force_expire(&server, &session_a, &proxy).await;
    let reason = within(T, lost).await;
    assert!(
        matches!(reason, LossReason::Suspended | LossReason::SessionExpired),
        "lost with {reason:?}"
    );
    let taken = within(2 * T, b.acquire()).await.unwrap();
    assert_eq!(children(&observer, &leases).await.len(), 1, "only b's lease");
    drop(lease);
    taken.release().await.unwrap();
    wait_children(&observer, &leases, 0).await;

    // The handle works on its new session, and leaves nothing behind.
    let again = within(2 * T, a.acquire()).await.unwrap();
    assert!(again.is_valid());
    again.release().await.unwrap();
    wait_children(&observer, &leases, 0).await;
}

/// rust-0 and rust-1 hold both leases; Java waits. rust-0 releases: Java holds (for 300 ms)
/// while rust-2 waits, then rust-2 holds.
#[cfg(feature = "zookeeper-tests")]
async fn with_curator(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t15", kind);
    let (leases, locks) = (format!("{path}/leases"), format!("{path}/locks"));
    let observer = raw_client(&server).await;
    let (_sessions, sems) = semaphores(&server, &path, 2, 3).await;
    let first = sems[0].acquire().await.unwrap();
    let second = sems[1].acquire().await.unwrap();
    let mut java =
        JavaParticipant::start(&server.hosts(), &path, "semaphore:2", "java-1", 1500).await;
    wait_children(&observer, &leases, 3).await;
    for name in children(&observer, &leases).await {
        assert_curator_name(&name, "lease-");
    }
    let third = tokio::spawn({
        let sem = sems[2].clone();
        async move {
            let lease = sem.acquire().await.unwrap();
            (Instant::now(), lease)
        }
    });
    // Java holds the mutex while it waits for a lease; rust-2 queues behind it.
    wait_children(&observer, &locks, 2).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!java.lines().iter().any(|(_, l)| l.starts_with("elected")), "Java waits");
    assert!(!third.is_finished(), "rust-2 waits behind Java");

    let released = Instant::now();
    first.release().await.unwrap();
    let (elected, _) = java.expect("elected", Duration::from_secs(5)).await;
    assert!(elected >= released, "Java acquires after rust-0 released");
    let (rust_acquired, lease) = third.await.unwrap();
    java.expect("lost", Duration::from_secs(5)).await;
    // Java holds for 1.5 s after it says "elected"; rust-2 cannot hold before that is over,
    // less the time the line took to reach us (a loaded machine can delay it by a few
    // hundred ms, hence the slack).
    let waited = rust_acquired.duration_since(elected);
    assert!(waited >= Duration::from_millis(1000), "rust-2 held {waited:?} after Java's hold");
    assert!(lease.token() > second.token());
    lease.release().await.unwrap();
    second.release().await.unwrap();
    wait_children(&observer, &leases, 0).await;
}
