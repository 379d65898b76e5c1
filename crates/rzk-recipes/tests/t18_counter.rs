//! DistributedAtomicLong and SharedCount, against rzk and Apache ZooKeeper 3.8.
//!
//! - Contention: 8 clients increment one counter; the final value is the exact sum, and the
//!   applied increments saw every value once (8 big-endian bytes on the node).
//! - Retry exhaustion: with one attempt, lost races fail with `RetriesExhausted` and apply
//!   nothing: the value equals the successful increments. Bad data is `BadData`.
//! - SharedCount: 4 big-endian bytes, versioned sets, a watch stream of changes.
//! - With Java Curator 5.4: its DistributedAtomicLong and ours increment one counter to the
//!   exact sum; a SharedCount set by either is read by the other, with the same version.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use rzk_recipes::{
    counter::{DistributedAtomicLong, RetryPolicy, SharedCount},
    session::Session,
    Error,
};
use support::*;

both_servers! {
    t18_counter_contention_sums_exactly => contention_sums_exactly;
    t18_counter_retry_exhaustion => retry_exhaustion;
    t18_counter_shared_count => shared_count;
}

// Curator in a JVM, against both servers: the `zookeeper-tests` tier only.
#[cfg(feature = "zookeeper-tests")]
both_servers! {
    t18_counter_with_curator => with_curator;
}

const CLIENTS: usize = 8;
const PER_CLIENT: usize = 25;
/// Enough attempts that 8 contending clients always get through.
const PATIENT: RetryPolicy = RetryPolicy {
    max_attempts: 1000,
    backoff: Duration::from_millis(1),
    max_backoff: Duration::from_millis(20),
};

async fn counters(
    server: &Server,
    path: &str,
    retry: RetryPolicy,
) -> Vec<(Session, DistributedAtomicLong)> {
    let mut v = Vec::new();
    for _ in 0..CLIENTS {
        let s = session(server).await;
        let c = DistributedAtomicLong::new(&s, path, retry).unwrap();
        v.push((s, c));
    }
    v
}

async fn contention_sums_exactly(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t18", kind);
    let observer = raw_client(&server).await;
    let mut tasks = Vec::new();
    for (s, c) in counters(&server, &path, PATIENT).await {
        tasks.push(tokio::spawn(async move {
            let mut posts = Vec::new();
            for _ in 0..PER_CLIENT {
                let v = c.increment().await.unwrap();
                assert_eq!(v.post, v.pre + 1);
                posts.push(v.post);
            }
            drop(s);
            posts
        }));
    }
    let mut posts = BTreeSet::new();
    for t in tasks {
        for p in t.await.unwrap() {
            assert!(posts.insert(p), "two increments wrote {p}");
        }
    }
    let total = (CLIENTS * PER_CLIENT) as i64;
    assert_eq!(posts, (1..=total).collect::<BTreeSet<_>>());
    let (data, _) = observer.get_data(&path).await.unwrap();
    assert_eq!(data, total.to_be_bytes(), "Curator's layout: 8 big-endian bytes");
}

async fn retry_exhaustion(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t18", kind);
    let observer = raw_client(&server).await;
    let once = RetryPolicy { max_attempts: 1, ..RetryPolicy::default() };
    let clients = counters(&server, &path, once).await;
    assert_eq!(clients[0].1.get().await.unwrap(), 0, "an absent counter reads as 0");
    assert!(!clients[0].1.compare_and_set(5, 6).await.unwrap());
    assert!(clients[0].1.compare_and_set(0, 10).await.unwrap());

    // Rounds of contention until lost races have shown up (they do in the first round).
    let (mut applied, mut exhausted) = (10i64, 0usize);
    for _round in 0..20 {
        let mut tasks = Vec::new();
        for (_, c) in &clients {
            let c = c.clone();
            tasks.push(tokio::spawn(async move {
                let mut results = Vec::new();
                for _ in 0..PER_CLIENT {
                    results.push(c.increment().await);
                }
                results
            }));
        }
        for t in tasks {
            for r in t.await.unwrap() {
                match r {
                    Ok(_) => applied += 1,
                    Err(Error::RetriesExhausted { path: p, attempts: 1 }) if p == path => {
                        exhausted += 1
                    }
                    Err(e) => panic!("unexpected {e}"),
                }
            }
        }
        if exhausted > 0 {
            break;
        }
    }
    assert!(exhausted > 0, "8 clients with one attempt each never lost a race");
    assert_eq!(clients[0].1.get().await.unwrap(), applied, "a failed update applied nothing");

    observer.set_data(&path, b"12", None).await.unwrap();
    assert!(matches!(clients[0].1.get().await, Err(Error::BadData { .. })));
    assert!(matches!(clients[0].1.increment().await, Err(Error::BadData { .. })));
}

async fn shared_count(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t18", kind);
    let observer = raw_client(&server).await;
    let (s1, s2) = (session(&server).await, session(&server).await);
    let a = SharedCount::new(&s1, &path, 7).unwrap();
    let b = SharedCount::new(&s2, &path, 0).unwrap();

    let first = a.get().await.unwrap();
    assert_eq!(first.value, 7, "created with the seed");
    assert_eq!(observer.get_data(&path).await.unwrap().0, 7i32.to_be_bytes());
    let mut changes = b.changes();
    let seen = tokio::time::timeout(Duration::from_secs(10), changes.next()).await.unwrap();
    assert_eq!(seen.unwrap().unwrap(), first);

    assert!(a.try_set_count(8, first.version).await.unwrap());
    assert!(!b.try_set_count(9, first.version).await.unwrap(), "a stale version is refused");
    let seen = tokio::time::timeout(Duration::from_secs(10), changes.next()).await.unwrap();
    let now = seen.unwrap().unwrap();
    assert_eq!(now.value, 8);
    assert_eq!(b.get().await.unwrap(), now);
    b.set_count(-3).await.unwrap();
    let seen = tokio::time::timeout(Duration::from_secs(10), changes.next()).await.unwrap();
    assert_eq!(seen.unwrap().unwrap().value, -3);

    observer.set_data(&path, b"x", None).await.unwrap();
    assert!(matches!(a.get().await, Err(Error::BadData { .. })));
}

#[cfg(feature = "zookeeper-tests")]
async fn with_curator(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t18", kind);
    let hosts = server.hosts();
    let (s, ours) = {
        let s = session(&server).await;
        let c = DistributedAtomicLong::new(&s, &path, PATIENT).unwrap();
        (s, c)
    };
    let java = tokio::spawn({
        let (hosts, path) = (hosts.clone(), path.clone());
        async move { curator::run(&hosts, &path, &["long-add", "100"]).await }
    });
    // Ours runs while the JVM starts and increments.
    let mut n = 0;
    while n < 100 {
        ours.increment().await.unwrap();
        n += 1;
        if n % 20 == 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    tokio::time::timeout(Duration::from_secs(60), java).await.unwrap().unwrap();
    assert_eq!(ours.get().await.unwrap(), 200);
    assert_eq!(curator::run(&hosts, &path, &["long-get"]).await, ["long 200"]);

    let count_path = format!("{path}-count");
    let count = SharedCount::new(&s, &count_path, 0).unwrap();
    curator::run(&hosts, &count_path, &["count-set", "41"]).await;
    let read = count.get().await.unwrap();
    assert_eq!(read.value, 41);
    assert!(count.try_set_count(42, read.version).await.unwrap());
    let java = curator::run(&hosts, &count_path, &["count-get"]).await;
    assert_eq!(java, [format!("count 42 {}", read.version + 1)]);
}
