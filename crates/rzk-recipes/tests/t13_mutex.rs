//! InterProcessMutex on the shared queue driver, against rzk and Apache ZooKeeper 3.8.
//!
//! - Exclusion and order: three handles on three sessions; the holder's node is Curator's
//!   `_c_<uuid>-lock-<seq>` with the host's address as data; waiters get the lock in node
//!   order (FIFO), never two at once, with strictly increasing tokens.
//! - Re-entrancy per handle: a second acquire on the same handle shares the node and token;
//!   the lock is free only after both guards are released.
//! - No node left behind: a failed `try_acquire`, a timed-out `acquire_timeout` and a dropped
//!   `acquire` future each withdraw their node; a dropped guard releases the lock.
//! - One lock with Java Curator 5.4's InterProcessMutex: ours holds and Java's acquire waits,
//!   Java holds and ours waits, in node order across both, never two holders at once.
//! - Uncontended pairs are Curator's three requests (create, getChildren, delete), counted by
//!   the server (`cons`), and such a holder, with no watch on its own node, still loses the
//!   lock when its node is deleted behind its back.
//! - A waiter whose only blocker is the holder takes the lock on the holder's deletion event
//!   with no request in between (the server's count and the driver's listings), and such a
//!   holder still lists the children later: a foreign node arriving ends its hold.
//! - The look-ahead: a waiter two places back lists the children when the holder goes, so
//!   that it too takes the lock on its predecessor's deletion with no request in between.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rzk_recipes::{
    election::Status,
    lock::{InterProcessMutex, LockGuard, MutexOptions},
    session::Session,
    FencingToken, LossReason,
};
#[cfg(feature = "zookeeper-tests")]
use support::java::JavaParticipant;
use support::*;

both_servers! {
    t13_mutex_exclusion_and_order => exclusion_and_order;
    t13_mutex_reentrant_per_handle => reentrant_per_handle;
    t13_mutex_no_node_left_behind => no_node_left_behind;
    t13_mutex_uncontended_requests => uncontended_requests;
    t13_mutex_uncontended_holder_node_deleted => uncontended_holder_node_deleted;
    t13_mutex_handoff_requests => handoff_requests;
    t13_mutex_lookahead_requests => lookahead_requests;
}

// Curator in a JVM, against both servers: the `zookeeper-tests` tier only.
#[cfg(feature = "zookeeper-tests")]
both_servers! {
    t13_mutex_with_curator => with_curator;
}

async fn mutexes(server: &Server, path: &str, n: usize) -> (Vec<Session>, Vec<InterProcessMutex>) {
    let mut sessions = Vec::new();
    let mut mutexes = Vec::new();
    for _ in 0..n {
        let s = session(server).await;
        mutexes.push(InterProcessMutex::new(&s, path, MutexOptions::default()).unwrap());
        sessions.push(s);
    }
    (sessions, mutexes)
}

async fn exclusion_and_order(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t13", kind);
    let observer = raw_client(&server).await;
    let (_sessions, mutexes) = mutexes(&server, &path, 3).await;

    let first = mutexes[0].acquire().await.unwrap();
    let kids = children(&observer, &path).await;
    assert_eq!(kids.len(), 1, "{kids:?}");
    assert_curator_name(&kids[0], "lock-");
    let (data, stat) = observer.get_data(&format!("{path}/{}", kids[0])).await.unwrap();
    assert_eq!(FencingToken(stat.czxid), first.token());
    let data = String::from_utf8(data).unwrap();
    assert!(data.parse::<std::net::IpAddr>().is_ok(), "Curator's default data, got {data:?}");
    assert!(mutexes[0].is_held());

    // Two waiters queue in order; each records when it holds and releases.
    let holding = Arc::new(AtomicBool::new(true));
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut waiters = Vec::new();
    for (i, m) in mutexes.iter().enumerate().skip(1) {
        let (m, holding, order) = (m.clone(), holding.clone(), order.clone());
        waiters.push(tokio::spawn(async move {
            let g = m.acquire().await.unwrap();
            assert!(!holding.swap(true, Ordering::SeqCst), "{i} holds while another does");
            order.lock().unwrap().push((i, g.token()));
            tokio::time::sleep(Duration::from_millis(50)).await;
            holding.store(false, Ordering::SeqCst);
            g.release().await.unwrap();
        }));
        // Queued before the next one joins, so that node order is this order.
        wait_children(&observer, &path, i + 1).await;
    }
    assert!(!mutexes[1].is_held() && !mutexes[2].is_held());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(order.lock().unwrap().is_empty(), "nobody else holds while the first does");
    holding.store(false, Ordering::SeqCst);
    first.release().await.unwrap();
    for w in waiters {
        w.await.unwrap();
    }
    let order = order.lock().unwrap().clone();
    assert_eq!(order.iter().map(|(i, _)| *i).collect::<Vec<_>>(), vec![1, 2], "FIFO");
    assert!(order[0].1 < order[1].1, "tokens increase: {order:?}");
    eventually(Duration::from_secs(2), "lock free", || !mutexes.iter().any(|m| m.is_held())).await;
    assert!(children(&observer, &path).await.is_empty());
}

async fn reentrant_per_handle(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t13", kind);
    let observer = raw_client(&server).await;
    let (_sessions, mutexes) = mutexes(&server, &path, 2).await;
    let (a, b) = (&mutexes[0], &mutexes[1]);

    let g1 = a.acquire().await.unwrap();
    let g2 = a.acquire().await.unwrap();
    assert_eq!(g1.token(), g2.token(), "one node, one token");
    assert_eq!(children(&observer, &path).await.len(), 1);
    assert!(b.try_acquire().await.unwrap().is_none(), "held by a");

    g1.release().await.unwrap();
    assert!(a.is_held(), "the second hold keeps the lock");
    assert!(g2.is_valid());
    assert!(b.try_acquire().await.unwrap().is_none(), "still held by a");

    let lost = g2.lost();
    g2.release().await.unwrap();
    assert_eq!(lost.await, LossReason::Resigned);
    assert!(!a.is_held());
    let gb = b.try_acquire().await.unwrap().expect("free after the last release");
    assert!(gb.is_valid());
    drop(gb);
    assert!(!b.is_held(), "released on drop");
    wait_children(&observer, &path, 0).await;
}

async fn no_node_left_behind(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t13", kind);
    let observer = raw_client(&server).await;
    let (_sessions, mutexes) = mutexes(&server, &path, 2).await;
    let (a, b) = (&mutexes[0], &mutexes[1]);
    let held = a.acquire().await.unwrap();

    assert!(b.try_acquire().await.unwrap().is_none());
    wait_children(&observer, &path, 1).await;

    let timed_out = b.acquire_timeout(Duration::from_millis(300)).await.unwrap();
    assert!(timed_out.is_none());
    wait_children(&observer, &path, 1).await;

    let pending = tokio::spawn({
        let b = b.clone();
        async move { b.acquire().await }
    });
    wait_children(&observer, &path, 2).await;
    pending.abort();
    let _ = pending.await;
    wait_children(&observer, &path, 1).await;

    // The holder drops its guard: the lock is free for a fresh attempt.
    drop(held);
    wait_children(&observer, &path, 0).await;
    let g = b.try_acquire().await.unwrap().expect("free");
    assert!(g.is_valid());
    g.release().await.unwrap();
    wait_children(&observer, &path, 0).await;
}

/// rust-0 holds; Java queues behind it, then rust-2 behind Java. rust-0 releases: Java holds
/// (for 300 ms) while rust-2 waits, then rust-2 holds.
#[cfg(feature = "zookeeper-tests")]
async fn with_curator(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t13", kind);
    let observer = raw_client(&server).await;
    let (_sessions, mutexes) = mutexes(&server, &path, 2).await;
    let first = mutexes[0].acquire().await.unwrap();
    let mut java = JavaParticipant::start(&server.hosts(), &path, "mutex", "java-1", 1500).await;
    wait_children(&observer, &path, 2).await;
    let second = tokio::spawn({
        let m = mutexes[1].clone();
        async move {
            let g = m.acquire().await.unwrap();
            (std::time::Instant::now(), g)
        }
    });
    wait_children(&observer, &path, 3).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!second.is_finished(), "rust-2 waits behind the holder and Java");
    let released = std::time::Instant::now();
    first.release().await.unwrap();
    let (elected, _) = java.expect("elected", Duration::from_secs(5)).await;
    let (rust_acquired, guard) = second.await.unwrap();
    java.expect("lost", Duration::from_secs(5)).await;
    assert!(elected >= released, "Java acquires after rust-0 released");
    // Java holds for 1.5 s after it says "elected"; rust-2 cannot hold before that is over,
    // less the time the line took to reach us (a loaded machine can delay it by a few
    // hundred ms, hence the slack).
    let waited = rust_acquired.duration_since(elected);
    assert!(waited >= Duration::from_millis(1000), "rust-2 held {waited:?} after Java's hold");
    assert!(guard.token() > FencingToken(0));
    guard.release().await.unwrap();
    wait_children(&observer, &path, 0).await;
}

async fn uncontended_requests(kind: Kind) {
    const PAIRS: u64 = 20;
    // Pings the session may send while the pairs run (one per third of T when idle).
    const PING_SLACK: u64 = 2;
    let server = Server::start(kind, Settings::default());
    let path = test_path("t13", kind);
    let (sessions, mutexes) = mutexes(&server, &path, 1).await;
    // The first pair also creates the lock path.
    mutexes[0].acquire().await.unwrap().release().await.unwrap();
    let sid = sessions[0].session_id().unwrap();
    let before = requests_received(&server, sid);
    for _ in 0..PAIRS {
        let g = mutexes[0].acquire().await.unwrap();
        assert!(g.is_valid());
        g.release().await.unwrap();
    }
    let sent = requests_received(&server, sid) - before;
    assert!(
        (3 * PAIRS..=3 * PAIRS + PING_SLACK).contains(&sent),
        "{sent} requests for {PAIRS} uncontended pairs; Curator sends 3 a pair"
    );
}

async fn uncontended_holder_node_deleted(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t13", kind);
    let observer = raw_client(&server).await;
    let (_sessions, mutexes) = mutexes(&server, &path, 2).await;
    let held = mutexes[0].acquire().await.unwrap();
    let node = wait_children(&observer, &path, 1).await.remove(0);
    observer.delete(&format!("{path}/{node}"), None).await.unwrap();
    let reason = tokio::time::timeout(Duration::from_secs(5), held.lost()).await;
    assert_eq!(reason.expect("the holder learns its node is gone"), LossReason::NodeDeleted);
    assert!(!held.is_valid());
    assert!(held.guarded().is_err(), "no guarded write after the loss");
    // The lock is free for the other handle.
    let next = mutexes[1].acquire_timeout(Duration::from_secs(5)).await.unwrap();
    assert!(next.expect("acquired").token() > held.token());
}

/// Acquires `mutex` on a task of its own; with the guard, the driver's listings counted as soon
/// as the acquire returns, before a hold granted on the event lists the children (50 ms on).
fn acquire_counting_listings(
    mutex: &InterProcessMutex,
) -> tokio::task::JoinHandle<(LockGuard, u64)> {
    let mutex = mutex.clone();
    tokio::spawn(async move {
        let guard = mutex.acquire().await.unwrap();
        (guard, mutex.metrics().get_children_calls)
    })
}

/// `waiter` queues behind `holder`'s hold; once it follows, the hold is released. Returns the
/// waiter's guard, and the requests the server received from `waiter_sid` and the listings
/// the waiter's driver made between its following and its acquire returning.
async fn hand_over(
    server: &Server,
    holder: &InterProcessMutex,
    waiter: &InterProcessMutex,
    waiter_sid: rzk_client::SessionId,
) -> (LockGuard, u64, u64) {
    let held = holder.acquire().await.unwrap();
    let acquiring = acquire_counting_listings(waiter);
    eventually(Duration::from_secs(5), "the waiter follows", || {
        matches!(waiter.status(), Status::Following { position: 1 })
    })
    .await;
    let listings = waiter.metrics().get_children_calls;
    let requests = requests_received(server, waiter_sid);
    held.release().await.unwrap();
    let (granted, listings_at_grant) = acquiring.await.unwrap();
    let listings = listings_at_grant - listings;
    let requests = requests_received(server, waiter_sid) - requests;
    (granted, requests, listings)
}

async fn handoff_requests(kind: Kind) {
    const HANDOFFS: u64 = 10;
    // Pings the waiter's session may send meanwhile (one per third of T when idle).
    const PING_SLACK: u64 = 2;
    let server = Server::start(kind, Settings::default());
    let path = test_path("t13", kind);
    let observer = raw_client(&server).await;
    let (sessions, mutexes) = mutexes(&server, &path, 2).await;
    let sid = sessions[1].session_id().unwrap();
    let (mut requests, mut listings) = (0, 0);
    for _ in 0..HANDOFFS {
        let (granted, r, l) = hand_over(&server, &mutexes[0], &mutexes[1], sid).await;
        assert!(granted.is_valid());
        requests += r;
        listings += l;
        granted.release().await.unwrap();
    }
    assert_eq!(listings, 0, "the successor listed the children after the holder's delete");
    assert!(
        requests <= PING_SLACK,
        "{requests} requests between following and holding in {HANDOFFS} handoffs"
    );

    // A hold granted on the event lists the children soon after, with a watch: a foreign node
    // arriving ends it, as any other hold.
    let (granted, _, _) = hand_over(&server, &mutexes[0], &mutexes[1], sid).await;
    let foreign = format!("{path}/config");
    let persistent = rzk_client::CreateMode::Persistent.with_acls(rzk_client::Acls::anyone_all());
    observer.create(&foreign, b"", &persistent).await.unwrap();
    let reason = tokio::time::timeout(Duration::from_secs(5), granted.lost()).await;
    assert_eq!(reason.expect("the holder sees the foreign node"), LossReason::ForeignNodes);
    assert!(!granted.is_valid());
    observer.delete(&foreign, None).await.unwrap();
}

/// Three handles: `c` queues behind `b`, which queues behind `a`'s hold. `a`'s release moves
/// `b` to the front, and `c` looks ahead then; `b`'s release grants `c` with no request.
async fn lookahead_requests(kind: Kind) {
    const PING_SLACK: u64 = 2;
    let server = Server::start(kind, Settings::default());
    let path = test_path("t13", kind);
    let (sessions, mutexes) = mutexes(&server, &path, 3).await;
    let c_sid = sessions[2].session_id().unwrap();
    let (a, b, c) = (&mutexes[0], &mutexes[1], &mutexes[2]);
    let held = a.acquire().await.unwrap();
    let b_acquiring = {
        let b = b.clone();
        tokio::spawn(async move { b.acquire().await.unwrap() })
    };
    eventually(Duration::from_secs(5), "b follows the holder", || {
        matches!(b.status(), Status::Following { position: 1 })
    })
    .await;
    let c_acquiring = acquire_counting_listings(c);
    eventually(Duration::from_secs(5), "c follows b", || {
        matches!(c.status(), Status::Following { position: 2 })
    })
    .await;
    held.release().await.unwrap();
    let b_held = b_acquiring.await.unwrap();
    eventually(Duration::from_secs(5), "c sees b alone ahead of it", || {
        matches!(c.status(), Status::Following { position: 1 })
    })
    .await;
    let listings = c.metrics().get_children_calls;
    let requests = requests_received(&server, c_sid);
    let b_token = b_held.token();
    b_held.release().await.unwrap();
    let (c_held, listings_at_grant) = c_acquiring.await.unwrap();
    assert_eq!(listings_at_grant - listings, 0, "c listed after b's delete");
    let requests = requests_received(&server, c_sid) - requests;
    assert!(requests <= PING_SLACK, "{requests} requests between b's release and c's hold");
    assert!(c_held.is_valid());
    assert!(c_held.token() > b_token);
    c_held.release().await.unwrap();
}
