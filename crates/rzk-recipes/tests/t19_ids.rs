//! IdGenerator, against rzk and Apache ZooKeeper 3.8.
//!
//! - 4 clients draw ids concurrently: all unique; each client's strictly increasing; an id
//!   returned before another was requested is smaller; no id node is left behind.
//! - Batches: 4 clients reserve ranges of 100 concurrently: disjoint, increasing per client;
//!   a generator of another batch size on the path is refused with `BadData`.

mod support;

use std::collections::BTreeSet;
use std::time::Instant;

use rzk_recipes::{counter::IdGenerator, Error};
use support::*;

both_servers! {
    t19_ids_unique_and_increasing => unique_and_increasing;
    t19_ids_batches_disjoint => batches_disjoint;
}

const CLIENTS: usize = 4;
const PER_CLIENT: usize = 50;

async fn unique_and_increasing(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t19", kind);
    let observer = raw_client(&server).await;
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let s = session(&server).await;
        let ids = IdGenerator::new(&s, &path).unwrap();
        tasks.push(tokio::spawn(async move {
            let mut drawn = Vec::new();
            for _ in 0..PER_CLIENT {
                let asked = Instant::now();
                let id = ids.next().await.unwrap();
                drawn.push((asked, id, Instant::now()));
            }
            drop(s);
            drawn
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        let drawn = t.await.unwrap();
        assert!(drawn.windows(2).all(|w| w[0].1 < w[1].1), "per client increasing");
        all.extend(drawn);
    }
    let unique: BTreeSet<u64> = all.iter().map(|d| d.1).collect();
    assert_eq!(unique.len(), CLIENTS * PER_CLIENT, "unique");
    for a in &all {
        for b in &all {
            if a.2 < b.0 {
                assert!(a.1 < b.1, "id {} returned before {} was asked for", a.1, b.1);
            }
        }
    }
    assert_eq!(children(&observer, &path).await, Vec::<String>::new());
    let (data, _) = observer.get_data(&path).await.unwrap();
    assert_eq!(data, b"1", "the path records its batch size");
}

async fn batches_disjoint(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t19", kind);
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let s = session(&server).await;
        let ids = IdGenerator::with_batch_size(&s, &path, 100).unwrap();
        tasks.push(tokio::spawn(async move {
            let mut ranges = Vec::new();
            for _ in 0..10 {
                ranges.push(ids.next_batch().await.unwrap());
            }
            drop(s);
            ranges
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        let ranges = t.await.unwrap();
        assert!(ranges.windows(2).all(|w| w[0].end <= w[1].start), "per client increasing");
        all.extend(ranges);
    }
    all.sort_by_key(|r| r.start);
    assert!(all.iter().all(|r| r.end - r.start == 100));
    assert!(all.windows(2).all(|w| w[0].end <= w[1].start), "disjoint: {all:?}");

    let s = session(&server).await;
    let other = IdGenerator::with_batch_size(&s, &path, 10).unwrap();
    assert!(matches!(other.next_batch().await, Err(Error::BadData { .. })));
}
