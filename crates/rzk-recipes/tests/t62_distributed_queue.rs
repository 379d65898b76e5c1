//! Curator's DistributedQueue layout, with Java Curator 5.4 in one path, against rzk and
//! Apache ZooKeeper 3.8.
//!
//! - Java to Rust and back, without a lock path: Java's `put` and `putMulti` nodes are taken by
//!   ours in order, one `Vec` of items per node; Java's consumer receives our `put` and
//!   `put_multi` items in order. Nodes are `queue-<10 digits>`.
//! - With a lock path: ours consumes Java's nodes with the lock node `<lock>/<node>` present
//!   while it processes and gone afterwards; Java's consumer, on the same lock path, passes
//!   over the node ours holds locked and takes the rest.
//! - A node whose lock another consumer holds (an EPHEMERAL node of another session, as
//!   Curator's) is passed over, and taken once that lock is deleted, with no new put.
//! - Error modes under a lock path: a failed consume requeues the node at the tail (REQUEUE)
//!   or deletes it (DELETE); a consume dropped mid-processing leaves the node, unlocked.
//! - Several consumers under one lock path: every node processed once.
//! - Takes dropped at every point of their progress, with and without a lock path: every
//!   node is returned by exactly one take, in order, and no lock is left.
//! - Bad data: a `queue-` node that is not an envelope is a `BadData` error naming it, is left
//!   in place, and is skipped afterwards; with a lock path its lock is deleted again.

mod support;

use std::collections::HashMap;
use std::time::Duration;

use rzk_client::{Acls, CreateMode};
use rzk_recipes::{
    queue::{DistributedQueue, ErrorMode},
    session::Session,
    Error,
};
#[cfg(feature = "zookeeper-tests")]
use rzk_testkit::wait::within;
#[cfg(feature = "zookeeper-tests")]
use support::curator::{self, JavaCache};
use support::*;

both_servers! {
    t62_queue_error_modes => error_modes;
    t62_queue_consumers_under_one_lock_path => consumers_under_one_lock_path;
    t62_queue_bad_data => bad_data;
    t62_queue_dropped_takes_lose_nothing => dropped_takes_lose_nothing;
    t62_queue_locked_by_another => locked_by_another;
}

// Curator in a JVM, against both servers: the `zookeeper-tests` tier only.
#[cfg(feature = "zookeeper-tests")]
both_servers! {
    t62_queue_with_curator => with_curator;
    t62_queue_with_curator_under_lock_path => with_curator_under_lock_path;
}

/// How long anything that must happen may take on a loaded machine (a JVM start included).
const LIMIT: Duration = Duration::from_secs(60);

async fn queue(server: &Server, path: &str) -> (Session, DistributedQueue) {
    let s = session(server).await;
    let q = DistributedQueue::new(&s, path).unwrap();
    (s, q)
}

fn strings(items: Vec<Vec<u8>>) -> Vec<String> {
    items.into_iter().map(|i| String::from_utf8(i).unwrap()).collect()
}

/// Java's consumer's next item.
#[cfg(feature = "zookeeper-tests")]
async fn java_took(java: &mut JavaCache) -> String {
    let event = java.next(LIMIT).await;
    event.strip_prefix("took ").unwrap_or_else(|| panic!("not an item: {event}")).to_string()
}

#[cfg(feature = "zookeeper-tests")]
async fn with_curator(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t62", kind);
    let hosts = server.hosts();
    let observer = raw_client(&server).await;
    let (_s, q) = queue(&server, &path).await;

    curator::run(&hosts, &path, &["dqueue-put", "1,3,1,2", "java"]).await;
    let names = children(&observer, &path).await;
    assert_eq!(names.len(), 4, "{names:?}");
    for name in &names {
        let seq = name.strip_prefix("queue-").unwrap_or_else(|| panic!("{name}"));
        assert!(seq.len() == 10 && seq.bytes().all(|b| b.is_ascii_digit()), "{name}");
    }
    let nodes: [&[&str]; 4] =
        [&["java-0"], &["java-1", "java-2", "java-3"], &["java-4"], &["java-5", "java-6"]];
    for node in nodes {
        assert_eq!(strings(q.take().await.unwrap()), node);
    }
    assert_eq!(q.poll().await.unwrap(), None);

    q.put(b"rust-0").await.unwrap();
    let name = q.put_multi(["rust-1", "rust-2"]).await.unwrap();
    assert!(name.starts_with("queue-"), "{name}");
    q.put(b"rust-3").await.unwrap();
    let mut java = JavaCache::start_with(&hosts, &path, &["dqueue-consume", "-"]);
    assert_eq!(java.next(LIMIT).await, "started");
    for i in 0..4 {
        assert_eq!(java_took(&mut java).await, format!("rust-{i}"));
    }
    wait_len(&q, 0).await;
}

/// Waits until the queue holds `n` nodes (Java's consumer deletes a node after its items).
#[cfg(feature = "zookeeper-tests")]
async fn wait_len(q: &DistributedQueue, n: usize) {
    within(LIMIT, &format!("{n} nodes left in the queue"), async {
        while q.len().await.unwrap() != n {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[cfg(feature = "zookeeper-tests")]
async fn with_curator_under_lock_path(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t62", kind);
    let locks = format!("{path}-locks");
    let hosts = server.hosts();
    let observer = raw_client(&server).await;
    let (_s, q) = queue(&server, &path).await;
    let q = q.with_lock_path(&locks).unwrap();

    curator::run(&hosts, &path, &["dqueue-put", "1,2,1", "java"]).await;
    let nodes: [&[&str]; 3] = [&["java-0"], &["java-1", "java-2"], &["java-3"]];
    for node in nodes {
        let head = children(&observer, &path).await[0].clone();
        let reader = &observer;
        let lock = format!("{locks}/{head}");
        let got = q
            .consume(|items| async move {
                let held = reader.check_stat(&lock).await.unwrap();
                assert!(
                    held.is_some_and(|s| s.ephemeral_owner != 0),
                    "{lock} held while processing"
                );
                Ok::<_, ()>(strings(items))
            })
            .await;
        assert_eq!(got.unwrap().unwrap(), node);
        assert_eq!(children(&observer, &locks).await, Vec::<String>::new(), "lock deleted");
    }
    assert_eq!(q.len().await.unwrap(), 0);

    // Ours holds the head locked while Java's consumer, on the same lock path, takes the rest.
    for i in 0..4 {
        q.put(format!("rust-{i}").as_bytes()).await.unwrap();
    }
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let (started, processing) = tokio::sync::oneshot::channel();
    let holder = tokio::spawn({
        let q = q.clone();
        async move {
            q.consume(|items| async move {
                started.send(()).unwrap();
                released.await.unwrap();
                Ok::<_, ()>(strings(items))
            })
            .await
        }
    });
    processing.await.unwrap();
    let mut java = JavaCache::start_with(&hosts, &path, &["dqueue-consume", &locks]);
    assert_eq!(java.next(LIMIT).await, "started");
    for i in 1..4 {
        assert_eq!(java_took(&mut java).await, format!("rust-{i}"));
    }
    wait_len(&q, 1).await;
    release.send(()).unwrap();
    assert_eq!(holder.await.unwrap().unwrap().unwrap(), ["rust-0"]);
    assert_eq!(q.len().await.unwrap(), 0);
}

async fn error_modes(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t62", kind);
    let locks = format!("{path}-locks");
    let observer = raw_client(&server).await;
    let (_s, q) = queue(&server, &path).await;
    let q = q.with_lock_path(&locks).unwrap();
    let fail = |items: Vec<Vec<u8>>| async move { Err::<(), _>(strings(items)) };
    let ok = |items: Vec<Vec<u8>>| async move { Ok::<_, ()>(strings(items)) };

    // REQUEUE (the default): the failed node goes to the tail, behind "b".
    q.put(b"a").await.unwrap();
    q.put(b"b").await.unwrap();
    let first = children(&observer, &path).await[0].clone();
    assert_eq!(q.consume(fail).await.unwrap().unwrap_err(), ["a"]);
    let names = children(&observer, &path).await;
    assert_eq!(names.len(), 2);
    assert!(!names.contains(&first) && names[1] > first, "requeued at the tail: {names:?}");
    assert_eq!(q.consume(ok).await.unwrap().unwrap(), ["b"]);
    assert_eq!(q.consume(ok).await.unwrap().unwrap(), ["a"]);

    // DELETE: the failed node is gone.
    let deleting = q.clone().with_error_mode(ErrorMode::Delete);
    deleting.put_multi(["c", "d"]).await.unwrap();
    assert_eq!(deleting.consume(fail).await.unwrap().unwrap_err(), ["c", "d"]);
    assert_eq!(q.len().await.unwrap(), 0);

    // Dropped mid-processing: the node stays, its lock is deleted, the next consume gets it.
    q.put(b"e").await.unwrap();
    let stalled = q.consume(|_| std::future::pending::<Result<(), ()>>());
    assert!(tokio::time::timeout(Duration::from_millis(500), stalled).await.is_err());
    wait_children(&observer, &locks, 0).await;
    assert_eq!(q.consume(ok).await.unwrap().unwrap(), ["e"]);

    // Without a lock path, the node is deleted before processing: a failure loses it.
    let plain = DistributedQueue::new(&_s, &path).unwrap();
    plain.put(b"f").await.unwrap();
    assert_eq!(plain.consume(fail).await.unwrap().unwrap_err(), ["f"]);
    assert_eq!(plain.len().await.unwrap(), 0);
    assert_eq!(children(&observer, &locks).await, Vec::<String>::new());
}

async fn consumers_under_one_lock_path(kind: Kind) {
    const CONSUMERS: usize = 3;
    const NODES: usize = 30;
    let server = Server::start(kind, Settings::default());
    let path = test_path("t62", kind);
    let locks = format!("{path}-locks");
    let (_p, producer) = queue(&server, &path).await;
    for i in 0..NODES {
        producer.put(format!("{i}").as_bytes()).await.unwrap();
    }
    let mut tasks = Vec::new();
    for _ in 0..CONSUMERS {
        let (s, q) = queue(&server, &path).await;
        let q = q.with_lock_path(&locks).unwrap();
        tasks.push(tokio::spawn(async move {
            let mut took = Vec::new();
            while let Some(items) = q.take_timeout(Duration::from_secs(2)).await.unwrap() {
                took.extend(strings(items).iter().map(|i| i.parse::<usize>().unwrap()));
            }
            drop(s);
            took
        }));
    }
    let mut seen: HashMap<usize, usize> = HashMap::new();
    for t in tasks {
        let took = tokio::time::timeout(LIMIT, t).await.expect("consumers finish").unwrap();
        assert!(took.windows(2).all(|w| w[0] < w[1]), "each consumer in order: {took:?}");
        for i in took {
            *seen.entry(i).or_default() += 1;
        }
    }
    assert_eq!(seen.len(), NODES, "every node taken");
    assert!(seen.values().all(|&n| n == 1), "no node taken twice: {seen:?}");
}

async fn bad_data(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t62", kind);
    let locks = format!("{path}-locks");
    let observer = raw_client(&server).await;
    let (s, q) = queue(&server, &path).await;
    q.put(b"first").await.unwrap();
    let raw = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
    let (_, seq) = observer.create(&format!("{path}/queue-"), b"raw bytes", &raw).await.unwrap();
    let bad = format!("{path}/queue-{seq}");
    observer.create(&format!("{path}/config"), b"x", &raw).await.unwrap();
    q.put(b"last").await.unwrap();

    assert_eq!(strings(q.take().await.unwrap()), ["first"]);
    match q.take().await {
        Err(Error::BadData { path, reason }) => {
            assert_eq!(path, bad);
            assert!(reason.contains("version word"), "{reason}");
        }
        other => panic!("expected BadData, got {other:?}"),
    }
    assert!(observer.check_stat(&bad).await.unwrap().is_some(), "bad node left in place");
    assert_eq!(strings(q.take().await.unwrap()), ["last"]);
    assert_eq!(q.poll().await.unwrap(), None, "the bad node is skipped afterwards");
    assert_eq!(q.len().await.unwrap(), 1, "and still counted");

    // Under a lock path, on a new handle: reported, the node kept, the lock deleted.
    let locked = DistributedQueue::new(&s, &path).unwrap().with_lock_path(&locks).unwrap();
    locked.put(b"after").await.unwrap();
    let got = locked.consume(|items| async move { Ok::<_, ()>(strings(items)) }).await;
    assert!(matches!(&got, Err(Error::BadData { path, .. }) if *path == bad), "{got:?}");
    assert!(observer.check_stat(&bad).await.unwrap().is_some(), "bad node left in place");
    wait_children(&observer, &locks, 0).await;
    let got = locked.consume(|items| async move { Ok::<_, ()>(strings(items)) }).await;
    assert_eq!(got.unwrap().unwrap(), ["after"]);
    assert_eq!(locked.poll().await.unwrap(), None);
}

async fn dropped_takes_lose_nothing(kind: Kind) {
    const NODES: usize = 20;
    let server = Server::start(kind, Settings::default());
    let path = test_path("t62", kind);
    let locks = format!("{path}-locks");
    let observer = raw_client(&server).await;
    let (_s, plain) = queue(&server, &path).await;
    for q in [plain.clone(), plain.with_lock_path(&locks).unwrap()] {
        for i in 0..NODES {
            q.put_multi([format!("{i}"), "x".into()]).await.unwrap();
        }
        // Each take is dropped at a later point of its progress than the last one was,
        // until one returns.
        let drain = async {
            let mut got = Vec::new();
            let mut budget = Duration::from_micros(50);
            while got.len() < NODES {
                match tokio::time::timeout(budget, q.take()).await {
                    Ok(items) => got.push(strings(items.unwrap()).remove(0)),
                    Err(_) => budget += Duration::from_micros(50),
                }
            }
            got
        };
        let lost = format!("a node was lost (lock path {:?})", q.lock_path());
        let got = tokio::time::timeout(LIMIT, drain).await.expect(&lost);
        let expected: Vec<String> = (0..NODES).map(|i| i.to_string()).collect();
        assert_eq!(got, expected, "every node once, in order ({:?})", q.lock_path());
        assert_eq!(q.poll().await.unwrap(), None);
        wait_children(&observer, &locks, 0).await;
    }
}

async fn locked_by_another(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t62", kind);
    let locks = format!("{path}-locks");
    let other = raw_client(&server).await;
    let (_s, q) = queue(&server, &path).await;
    let q = q.with_lock_path(&locks).unwrap();
    q.put(b"held").await.unwrap();
    q.put(b"free").await.unwrap();
    let head = children(&other, &path).await[0].clone();
    let lock = format!("{locks}/{head}");
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    other.mkdir(&locks, &persistent).await.unwrap();
    let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    other.create(&lock, b"", &ephemeral).await.unwrap();

    assert_eq!(strings(q.take().await.unwrap()), ["free"], "the locked head passed over");
    assert_eq!(q.poll().await.unwrap(), None, "nothing free to take");
    let waiting = tokio::spawn({
        let q = q.clone();
        async move { q.take().await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "took a node another consumer holds");
    other.delete(&lock, None).await.unwrap();
    let took = tokio::time::timeout(LIMIT, waiting).await.expect("woken by the lock's deletion");
    assert_eq!(strings(took.unwrap().unwrap()), ["held"]);
}
