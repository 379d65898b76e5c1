//! SimpleDistributedQueue, against rzk and Apache ZooKeeper 3.8.
//!
//! - Order and exactly-once: 4 producers and 4 consumers on 8 sessions; every item is taken
//!   once, and each consumer takes a producer's items in the order they were offered. Items
//!   are `qn-<10 digits>` nodes holding the raw bytes; a foreign child is skipped.
//! - A waiting take is woken by an offer; take_timeout gives up with None; poll, peek, len.
//! - A dropped take future loses nothing, also when its delete was in flight (and its handle
//!   dropped with it); a queue path
//!   deleted under a waiting take is recreated and the take still gets the next item.
//! - Takes reuse their listing: one consumer takes N queued items with one listing and a read
//!   and a delete per item (2N + 1 requests; Curator lists for every take, 3N). A listed name
//!   found holding a newer item (the queue path deleted and created again, its sequence
//!   numbers started over) sends the take back to listing, so it still takes the lowest.
//! - One queue with Java Curator 5.4's SimpleDistributedQueue: ours takes Java's items in
//!   order, and Java takes ours.

mod support;

use std::collections::HashMap;
use std::time::Duration;

use rzk_recipes::{queue::SimpleDistributedQueue, session::Session};
use support::*;

both_servers! {
    t17_queue_order_and_exactly_once => order_and_exactly_once;
    t17_queue_take_waits_and_wakes => take_waits_and_wakes;
    t17_queue_dropped_take_loses_nothing => dropped_take_loses_nothing;
    t17_queue_take_requests => take_requests;
    t17_queue_listing_of_a_recreated_path => listing_of_a_recreated_path;
}

// Curator in a JVM, against both servers: the `zookeeper-tests` tier only.
#[cfg(feature = "zookeeper-tests")]
both_servers! {
    t17_queue_with_curator => with_curator;
}

const PRODUCERS: usize = 4;
const CONSUMERS: usize = 4;
const PER_PRODUCER: usize = 50;
/// How long a take that must succeed may take on a loaded machine.
const TAKE_LIMIT: Duration = Duration::from_secs(20);

async fn queue(server: &Server, path: &str) -> (Session, SimpleDistributedQueue) {
    let s = session(server).await;
    let q = SimpleDistributedQueue::new(&s, path).unwrap();
    (s, q)
}

/// `(producer, index)` of an item `p<producer>-<index>`.
fn parse(item: &[u8]) -> (usize, usize) {
    let s = std::str::from_utf8(item).unwrap();
    let (p, i) = s.strip_prefix('p').unwrap().split_once('-').unwrap();
    (p.parse().unwrap(), i.parse().unwrap())
}

async fn order_and_exactly_once(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t17", kind);
    let observer = raw_client(&server).await;
    let mut tasks = Vec::new();
    for c in 0..CONSUMERS {
        let (s, q) = queue(&server, &path).await;
        tasks.push(tokio::spawn(async move {
            let mut took = Vec::new();
            for _ in 0..PRODUCERS * PER_PRODUCER / CONSUMERS {
                let item = tokio::time::timeout(TAKE_LIMIT, q.take()).await;
                took.push(parse(&item.unwrap_or_else(|_| panic!("consumer {c} starved")).unwrap()));
            }
            drop(s);
            took
        }));
    }
    let mut producers = Vec::new();
    for p in 0..PRODUCERS {
        let (s, q) = queue(&server, &path).await;
        producers.push(tokio::spawn(async move {
            for i in 0..PER_PRODUCER {
                let name = q.offer(format!("p{p}-{i}").as_bytes()).await.unwrap();
                let seq = name.strip_prefix("qn-").unwrap();
                assert!(seq.len() == 10 && seq.bytes().all(|b| b.is_ascii_digit()), "{name}");
            }
            drop(s);
        }));
        if p == 0 {
            // A foreign child is skipped, not fatal (Curator logs and skips it). The queue's
            // node may not exist yet: producer 0 creates it with its first offer.
            observer.mkdir(&path, &persistent()).await.unwrap();
            observer.create(&format!("{path}/config"), b"x", &persistent()).await.unwrap();
        }
    }
    for p in producers {
        p.await.unwrap();
    }
    let mut seen: HashMap<(usize, usize), usize> = HashMap::new();
    for (c, t) in tasks.into_iter().enumerate() {
        let took = t.await.unwrap();
        for p in 0..PRODUCERS {
            let mine: Vec<usize> = took.iter().filter(|(q, _)| *q == p).map(|(_, i)| *i).collect();
            assert!(mine.windows(2).all(|w| w[0] < w[1]), "consumer {c}, producer {p}: {mine:?}");
        }
        for item in took {
            *seen.entry(item).or_default() += 1;
        }
    }
    assert_eq!(seen.len(), PRODUCERS * PER_PRODUCER, "every item taken");
    assert!(seen.values().all(|&n| n == 1), "no item taken twice");
    assert_eq!(children(&observer, &path).await, ["config"]);
}

fn persistent() -> rzk_client::CreateOptions<'static> {
    rzk_client::CreateMode::Persistent.with_acls(rzk_client::Acls::anyone_all())
}

async fn take_waits_and_wakes(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t17", kind);
    let (_s1, consumer) = queue(&server, &path).await;
    let (_s2, producer) = queue(&server, &path).await;
    assert_eq!(consumer.poll().await.unwrap(), None);
    assert_eq!(consumer.peek().await.unwrap(), None);
    assert_eq!(consumer.len().await.unwrap(), 0);
    assert_eq!(consumer.take_timeout(Duration::from_millis(300)).await.unwrap(), None);

    let waiting = tokio::spawn({
        let c = consumer.clone();
        async move { c.take().await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "take returned from an empty queue");
    producer.offer(b"first").await.unwrap();
    producer.offer(b"second").await.unwrap();
    let woke = tokio::time::timeout(TAKE_LIMIT, waiting).await.expect("take woken");
    assert_eq!(woke.unwrap().unwrap(), b"first");
    assert_eq!(consumer.len().await.unwrap(), 1);
    assert_eq!(consumer.peek().await.unwrap().as_deref(), Some(&b"second"[..]));
    assert_eq!(consumer.poll().await.unwrap().as_deref(), Some(&b"second"[..]));
    assert_eq!(consumer.poll().await.unwrap(), None);
}

async fn dropped_take_loses_nothing(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t17", kind);
    let observer = raw_client(&server).await;
    let (_s1, consumer) = queue(&server, &path).await;
    let (_s2, producer) = queue(&server, &path).await;

    // A waiting take, dropped: the item offered afterwards stays for the next take.
    let waiting = consumer.take();
    assert!(tokio::time::timeout(Duration::from_millis(300), waiting).await.is_err());
    producer.offer(b"kept").await.unwrap();
    assert_eq!(producer.len().await.unwrap(), 1);
    assert_eq!(consumer.take().await.unwrap(), b"kept");

    // Takes dropped at every point of their progress, the delete included: each item is
    // returned by exactly one take of the consumer.
    const ITEMS: usize = 30;
    for i in 0..ITEMS {
        producer.offer(format!("{i}").as_bytes()).await.unwrap();
    }
    let got = take_dropping(ITEMS, || consumer.clone()).await;
    let expected: Vec<String> = (0..ITEMS).map(|i| i.to_string()).collect();
    assert_eq!(got, expected, "every item once, in order");
    assert_eq!(consumer.poll().await.unwrap(), None);

    // The same with a handle of its own per take, dropped with it: an item whose delete was
    // in flight is offered again (at the tail) when the handle goes, never lost.
    for i in 0..ITEMS {
        producer.offer(format!("{i}").as_bytes()).await.unwrap();
    }
    let mut got = take_dropping(ITEMS, || SimpleDistributedQueue::new(&_s1, &path).unwrap()).await;
    got.sort_by_key(|s| s.parse::<usize>().unwrap());
    assert_eq!(got, expected, "every item once");
    assert_eq!(consumer.poll().await.unwrap(), None);

    // The queue path deleted under a waiting take: recreated, and the take still works.
    let waiting = tokio::spawn({
        let c = consumer.clone();
        async move { c.take().await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    delete_all(&observer, &path).await;
    wait_presence(&observer, &path, true, Duration::from_secs(10), "queue path recreated").await;
    producer.offer(b"after").await.unwrap();
    let woke = tokio::time::timeout(TAKE_LIMIT, waiting).await.expect("take woken");
    assert_eq!(woke.unwrap().unwrap(), b"after");
}

/// Takes `n` items, each through a take future on `handle()` that is dropped at a later
/// point of its progress than the last one was, until one returns.
async fn take_dropping(n: usize, handle: impl Fn() -> SimpleDistributedQueue) -> Vec<String> {
    let drain = async {
        let mut got = Vec::new();
        let mut budget = Duration::from_micros(50);
        while got.len() < n {
            match tokio::time::timeout(budget, handle().take()).await {
                Ok(item) => got.push(String::from_utf8(item.unwrap()).unwrap()),
                Err(_) => budget += Duration::from_micros(50),
            }
        }
        got
    };
    tokio::time::timeout(TAKE_LIMIT, drain).await.expect("an item was lost")
}

#[cfg(feature = "zookeeper-tests")]
async fn with_curator(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t17", kind);
    let hosts = server.hosts();
    let (_s, q) = queue(&server, &path).await;

    curator::run(&hosts, &path, &["queue-offer", "20", "java"]).await;
    for i in 0..20 {
        assert_eq!(q.poll().await.unwrap(), Some(format!("java-{i}").into_bytes()));
    }
    assert_eq!(q.poll().await.unwrap(), None);

    let taker = tokio::spawn({
        let hosts = hosts.clone();
        let path = path.clone();
        async move { curator::run(&hosts, &path, &["queue-take", "20"]).await }
    });
    for i in 0..20 {
        q.offer(format!("rust-{i}").as_bytes()).await.unwrap();
    }
    let took = tokio::time::timeout(Duration::from_secs(60), taker).await.unwrap().unwrap();
    let expected: Vec<String> = (0..20).map(|i| format!("took rust-{i}")).collect();
    assert_eq!(took, expected);
    assert_eq!(q.len().await.unwrap(), 0);
}

async fn take_requests(kind: Kind) {
    const ITEMS: u64 = 20;
    // Pings the session may send while the takes run (one per third of T when idle).
    const PING_SLACK: u64 = 2;
    let server = Server::start(kind, Settings::default());
    let path = test_path("t17", kind);
    let (_p, producer) = queue(&server, &path).await;
    for i in 0..ITEMS {
        producer.offer(format!("{i}").as_bytes()).await.unwrap();
    }
    let (s, consumer) = queue(&server, &path).await;
    let sid = s.session_id().unwrap();
    let before = requests_received(&server, sid);
    for i in 0..ITEMS {
        assert_eq!(consumer.take().await.unwrap(), format!("{i}").into_bytes());
    }
    let sent = requests_received(&server, sid) - before;
    assert!(
        (2 * ITEMS + 1..=2 * ITEMS + 1 + PING_SLACK).contains(&sent),
        "{sent} requests for {ITEMS} takes; one listing and 2 a take expected"
    );
}

async fn listing_of_a_recreated_path(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t17", kind);
    let observer = raw_client(&server).await;
    let (_p, producer) = queue(&server, &path).await;
    let (_c, consumer) = queue(&server, &path).await;
    for item in ["old-0", "old-1", "old-2"] {
        producer.offer(item.as_bytes()).await.unwrap();
    }
    // The consumer's listing now holds qn-..01 and qn-..02.
    assert_eq!(consumer.take().await.unwrap(), b"old-0");
    delete_all(&observer, &path).await;
    assert_eq!(observer.check_stat(&path).await.unwrap(), None, "queue path deleted");
    for item in ["new-0", "new-1", "new-2"] {
        producer.offer(item.as_bytes()).await.unwrap();
    }
    assert_eq!(children(&observer, &path).await[1], "qn-0000000001", "numbers started over");
    for item in ["new-0", "new-1", "new-2"] {
        assert_eq!(consumer.take().await.unwrap(), item.as_bytes(), "lowest first");
    }
}
