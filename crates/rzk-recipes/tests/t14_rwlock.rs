//! InterProcessReadWriteLock on the shared queue driver, against rzk and Apache ZooKeeper 3.8.
//!
//! - Sharing and exclusion: readers hold together; a writer waits for the readers before it
//!   and keeps out the readers after it; nodes are Curator's `__READ__` / `__WRIT__` names.
//! - First come, first served across kinds: a queue of readers and writers is served in node
//!   order, consecutive readers together, a writer alone.
//! - Downgrade: the read taken while holding the write is granted at once, at the write
//!   node's sequence; a writer queued meanwhile does not get in when the write is released
//!   (CURATOR-621), only after the read is.
//! - No node left behind: a failed `try_acquire`, a timed-out `acquire_timeout` and a dropped
//!   `acquire` future of either side withdraw their node.
//! - One lock with Java Curator 5.4's InterProcessReadWriteLock: a Java reader waits for our
//!   writer and then reads beside ours; our reader waits for a Java writer.

mod support;

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rzk_recipes::{
    lock::{InterProcessReadWriteLock, MutexOptions},
    session::Session,
};
#[cfg(feature = "zookeeper-tests")]
use support::java::JavaParticipant;
use support::*;

both_servers! {
    t14_rwlock_readers_share_writers_exclude => readers_share_writers_exclude;
    t14_rwlock_fifo_across_kinds => fifo_across_kinds;
    t14_rwlock_downgrade_keeps_writers_out => downgrade_keeps_writers_out;
    t14_rwlock_no_node_left_behind => no_node_left_behind;
}

// Curator in a JVM, against both servers: the `zookeeper-tests` tier only.
#[cfg(feature = "zookeeper-tests")]
both_servers! {
    t14_rwlock_with_curator => with_curator;
}

const READ: &str = "__READ__";
const WRITE: &str = "__WRIT__";
/// What a writer adds to the holder count; a reader adds 1.
const WRITER: i32 = 1000;

/// A server, a lock path, a raw client watching it and `n` locks on sessions of their own.
struct Fixture {
    // Kept for its lifetime; read only by the Curator scenario.
    #[cfg_attr(not(feature = "zookeeper-tests"), allow(dead_code))]
    server: Server,
    path: String,
    observer: rzk_client::Client,
    _sessions: Vec<Session>,
    locks: Vec<InterProcessReadWriteLock>,
}

async fn fixture(kind: Kind, n: usize) -> Fixture {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t14", kind);
    let observer = raw_client(&server).await;
    let mut sessions = Vec::new();
    let mut locks = Vec::new();
    for _ in 0..n {
        let s = session(&server).await;
        locks.push(InterProcessReadWriteLock::new(&s, &path, MutexOptions::default()).unwrap());
        sessions.push(s);
    }
    Fixture { server, path, observer, _sessions: sessions, locks }
}

/// One side's acquire, spawned; it yields the moment it held and the guard.
fn spawn_acquire(
    lock: &InterProcessReadWriteLock,
    write: bool,
) -> tokio::task::JoinHandle<(Instant, rzk_recipes::lock::LockGuard)> {
    let lock = lock.clone();
    tokio::spawn(async move {
        let side = if write { lock.write_lock() } else { lock.read_lock() };
        let g = side.acquire().await.unwrap();
        (Instant::now(), g)
    })
}

/// Waits for a spawned acquire, or fails after `within`.
async fn granted(
    h: tokio::task::JoinHandle<(Instant, rzk_recipes::lock::LockGuard)>,
    within: Duration,
    what: &str,
) -> (Instant, rzk_recipes::lock::LockGuard) {
    tokio::time::timeout(within, h)
        .await
        .unwrap_or_else(|_| panic!("{what} not granted within {within:?}"))
        .unwrap()
}

async fn readers_share_writers_exclude(kind: Kind) {
    let f = fixture(kind, 4).await;
    let (path, observer, locks) = (&f.path, &f.observer, &f.locks);

    let r0 = locks[0].read_lock().acquire().await.unwrap();
    let r1 = tokio::time::timeout(Duration::from_secs(5), locks[1].read_lock().acquire())
        .await
        .expect("a second reader holds beside the first")
        .unwrap();
    assert!(r0.is_valid() && r1.is_valid());
    assert!(r0.token() < r1.token());
    for name in wait_children(observer, path, 2).await {
        assert_curator_name(&name, READ);
    }

    let writer = spawn_acquire(&locks[2], true);
    let kids = wait_children(observer, path, 3).await;
    assert_curator_name(&kids[2], WRITE);
    let late_reader = spawn_acquire(&locks[3], false);
    wait_children(observer, path, 4).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!writer.is_finished(), "the writer waits for the readers before it");
    assert!(!late_reader.is_finished(), "a reader after a queued writer waits for it");

    r0.release().await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!writer.is_finished(), "the writer waits for the last reader too");
    let released = Instant::now();
    r1.release().await.unwrap();
    let (wrote, w) = granted(writer, Duration::from_secs(5), "the writer").await;
    assert!(wrote >= released);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!late_reader.is_finished(), "no reader while the writer holds");
    let w_token = w.token();
    w.release().await.unwrap();
    let (_, r3) = granted(late_reader, Duration::from_secs(5), "the late reader").await;
    assert!(r3.token() > w_token, "tokens increase: {w_token} then {}", r3.token());
    r3.release().await.unwrap();
    wait_children(observer, path, 0).await;
}

/// W0 holds; R1, W2, R3, R4 queue in this order, each holding 150 ms. They are served in
/// node order, R3 and R4 together, and a writer never beside anyone.
async fn fifo_across_kinds(kind: Kind) {
    let f = fixture(kind, 5).await;
    let (path, observer, locks) = (&f.path, &f.observer, &f.locks);
    let first = locks[0].write_lock().acquire().await.unwrap();

    let holders = Arc::new(AtomicI32::new(WRITER));
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for (i, write) in [(1, false), (2, true), (3, false), (4, false)] {
        let (lock, holders, order) = (locks[i].clone(), holders.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            let side = if write { lock.write_lock() } else { lock.read_lock() };
            let g = side.acquire().await.unwrap();
            let add = if write { WRITER } else { 1 };
            let now = holders.fetch_add(add, Ordering::SeqCst) + add;
            assert!(if write { now == WRITER } else { now < WRITER }, "{i} holds beside {now}");
            order.lock().unwrap().push((i, Instant::now()));
            tokio::time::sleep(Duration::from_millis(150)).await;
            holders.fetch_sub(add, Ordering::SeqCst);
            g.release().await.unwrap();
        }));
        // Queued before the next one joins, so that node order is this order.
        wait_children(observer, path, i + 1).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(order.lock().unwrap().is_empty(), "nobody holds beside the writer");
    holders.fetch_sub(WRITER, Ordering::SeqCst);
    first.release().await.unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    let order = order.lock().unwrap().clone();
    let ids: Vec<usize> = order.iter().map(|(i, _)| *i).collect();
    assert_eq!(&ids[..2], &[1, 2], "R1, then W2: {ids:?}");
    let (r3, r4) = (order[2].1, order[3].1);
    let apart = if r3 > r4 { r3 - r4 } else { r4 - r3 };
    assert!(apart < Duration::from_millis(150), "R3 and R4 read together, {apart:?} apart");
    wait_children(observer, path, 0).await;
}

/// CURATOR-621: A holds the write lock and B queues a write. A takes the read lock (granted
/// at once, at its write node's sequence) and releases the write: B still waits, until A
/// releases the read.
async fn downgrade_keeps_writers_out(kind: Kind) {
    let f = fixture(kind, 2).await;
    let (path, observer, locks) = (&f.path, &f.observer, &f.locks);
    let (a, b) = (&locks[0], &locks[1]);

    let write = a.write_lock().acquire().await.unwrap();
    let queued = spawn_acquire(b, true);
    wait_children(observer, path, 2).await;

    let read = tokio::time::timeout(Duration::from_secs(5), a.read_lock().acquire())
        .await
        .expect("the read under our own write is granted at once")
        .unwrap();
    let kids = wait_children(observer, path, 3).await;
    let write_name = write.leadership().node_path().rsplit('/').next().unwrap().to_string();
    let read_name = read.leadership().node_path().rsplit('/').next().unwrap().to_string();
    assert_curator_name(&read_name, READ);
    assert!(kids.contains(&read_name), "{kids:?}");
    assert_eq!(read_name[read_name.len() - 10..], write_name[write_name.len() - 10..]);
    let (_, stat) = observer.get_data(read.leadership().node_path()).await.unwrap();
    assert_ne!(stat.ephemeral_owner, 0, "an ephemeral node");
    assert!(a.write_lock().is_held() && a.read_lock().is_held());

    write.release().await.unwrap();
    wait_children(observer, path, 2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!queued.is_finished(), "the queued writer did not slip in after the write");
    assert!(read.is_valid() && a.read_lock().is_held(), "the read is still held");
    assert!(!a.write_lock().is_held());

    let released = Instant::now();
    read.release().await.unwrap();
    let (got, g) = granted(queued, Duration::from_secs(5), "the queued writer").await;
    assert!(got >= released);
    g.release().await.unwrap();
    wait_children(observer, path, 0).await;
}

async fn no_node_left_behind(kind: Kind) {
    let f = fixture(kind, 2).await;
    let (path, observer, locks) = (&f.path, &f.observer, &f.locks);
    let (a, b) = (&locks[0], &locks[1]);

    // A writer holds: B's read attempts withdraw; then a reader holds: B's write attempts do.
    let write = a.write_lock().acquire().await.unwrap();
    withdrawals(observer, path, b, false).await;
    write.release().await.unwrap();
    let read = a.read_lock().acquire().await.unwrap();
    withdrawals(observer, path, b, true).await;
    drop(read);
    wait_children(observer, path, 0).await;
    let g = b.write_lock().try_acquire().await.unwrap().expect("free");
    g.release().await.unwrap();
    wait_children(observer, path, 0).await;
}

/// One side of `lock` tries, times out and is cancelled while another holds (one node).
async fn withdrawals(
    observer: &rzk_client::Client,
    path: &str,
    lock: &InterProcessReadWriteLock,
    write: bool,
) {
    let side = if write { lock.write_lock() } else { lock.read_lock() };
    wait_children(observer, path, 1).await;
    assert!(side.try_acquire().await.unwrap().is_none(), "write {write}: try");
    wait_children(observer, path, 1).await;
    let timed_out = side.acquire_timeout(Duration::from_millis(300)).await.unwrap();
    assert!(timed_out.is_none(), "write {write}: timeout");
    wait_children(observer, path, 1).await;
    let pending = spawn_acquire(lock, write);
    wait_children(observer, path, 2).await;
    pending.abort();
    let _ = pending.await;
    wait_children(observer, path, 1).await;
}

/// Our writer holds; a Java reader queues, then ours. The release lets both readers in at
/// once. Then a Java writer holds and our reader waits for it.
#[cfg(feature = "zookeeper-tests")]
async fn with_curator(kind: Kind) {
    let f = fixture(kind, 2).await;
    let (path, observer, locks) = (&f.path, &f.observer, &f.locks);

    let write = locks[0].write_lock().acquire().await.unwrap();
    let mut reader = JavaParticipant::start(&f.server.hosts(), path, "read", "java-r", 1000).await;
    let kids = wait_children(observer, path, 2).await;
    assert_curator_name(&kids[1], READ);
    let ours = spawn_acquire(&locks[1], false);
    wait_children(observer, path, 3).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!ours.is_finished(), "our reader waits behind our writer");
    let released = Instant::now();
    write.release().await.unwrap();
    let (java_read, _) = reader.expect("elected", Duration::from_secs(5)).await;
    let (our_read, r) = granted(ours, Duration::from_secs(5), "our reader").await;
    let (java_done, _) = reader.expect("lost", Duration::from_secs(5)).await;
    assert!(java_read >= released, "the Java reader waited for our writer");
    assert!(our_read < java_done, "both readers held at once");
    r.release().await.unwrap();
    wait_children(observer, path, 0).await;

    let mut writer = JavaParticipant::start(&f.server.hosts(), path, "write", "java-w", 1500).await;
    let (java_wrote, _) = writer.expect("elected", Duration::from_secs(10)).await;
    assert_curator_name(&wait_children(observer, path, 1).await[0], WRITE);
    let ours = spawn_acquire(&locks[1], false);
    let (java_done, _) = writer.expect("lost", Duration::from_secs(5)).await;
    let (our_read, r) = granted(ours, Duration::from_secs(5), "our reader").await;
    // Java holds for 1.5 s after "elected"; our reader cannot hold before that is over. Both
    // bounds allow for Java's lines reaching us late on a loaded machine.
    let waited = our_read.duration_since(java_wrote);
    assert!(waited >= Duration::from_millis(1000), "read {waited:?} after Java's write");
    assert!(our_read + Duration::from_millis(500) >= java_done);
    r.release().await.unwrap();
    wait_children(observer, path, 0).await;
}
