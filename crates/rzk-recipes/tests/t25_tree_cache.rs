//! The tree cache (Curator's `CuratorCache` semantics), against rzk and Apache ZooKeeper 3.8.
//!
//! - Events in order on persistent and on one-shot watches: the initial load (parents before
//!   children, then `init`), adds, updates, removals (children before parents); a late
//!   subscriber starts from the current content; the cache equals the server.
//! - A Java Curator `CuratorCache` and ours see the same event sequence for the same writes.
//! - Limits: beyond `max_nodes` the cache fails with `CacheFull` and its streams end; a
//!   subscriber that falls behind its event queue gets `CacheLagged`, a new one the content.
//! - An unreadable node below the path is reported (`NoAuth`) and skipped.

mod support;

use std::time::Duration;

use rzk_client::{Acl, Acls, AuthId, CreateMode, Permission};
use rzk_recipes::{
    cache::{CacheOptions, CacheWatch, TreeCache},
    Error,
};
use support::cache::*;
use support::*;

both_servers! {
    t25_events_in_order => events_in_order;
    t25_limits => limits;
    t25_unreadable_node_skipped => unreadable_node_skipped;
}

// Curator in a JVM, against both servers: the `zookeeper-tests` tier only.
#[cfg(feature = "zookeeper-tests")]
both_servers! {
    t25_same_events_as_curator => same_events_as_curator;
}

/// How long one change may take to reach a cache on a loaded machine.
const WITHIN: Duration = Duration::from_secs(10);

fn persistent() -> rzk_client::CreateOptions<'static> {
    CreateMode::Persistent.with_acls(Acls::anyone_all())
}

/// Waits until `recorder` holds `n` items.
async fn await_items(recorder: &Recorder, n: usize) {
    eventually(WITHIN, "cache events", || recorder.items().len() >= n).await;
}

/// The writes every ordering scenario makes, one at a time: each is awaited by `seen`
/// (given the number of events expected so far) before the next.
async fn writes<F, Fut>(raw: &rzk_client::Client, root: &str, mut seen: F) -> Vec<String>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut expected = vec![
        format!("+{root} r"),
        format!("+{root}/a 1"),
        format!("+{root}/a/x 2"),
        "init".to_string(),
    ];
    seen(expected.len()).await;
    raw.create(&format!("{root}/b"), b"3", &persistent()).await.unwrap();
    expected.push(format!("+{root}/b 3"));
    seen(expected.len()).await;
    raw.set_data(&format!("{root}/a"), b"1b", None).await.unwrap();
    expected.push(format!("~{root}/a 1b"));
    seen(expected.len()).await;
    raw.create(&format!("{root}/a/y"), b"", &persistent()).await.unwrap();
    expected.push(format!("+{root}/a/y "));
    seen(expected.len()).await;
    raw.delete(&format!("{root}/a/x"), None).await.unwrap();
    expected.push(format!("-{root}/a/x"));
    seen(expected.len()).await;
    delete_tree(raw, &format!("{root}/a")).await;
    expected.extend([format!("-{root}/a/y"), format!("-{root}/a")]);
    seen(expected.len()).await;
    raw.set_data(root, b"r2", None).await.unwrap();
    expected.push(format!("~{root} r2"));
    seen(expected.len()).await;
    expected
}

/// The tree the ordering scenarios start from.
async fn initial_tree(raw: &rzk_client::Client, root: &str) {
    raw.mkdir(root.rsplit_once('/').unwrap().0, &persistent()).await.unwrap();
    raw.create(root, b"r", &persistent()).await.unwrap();
    raw.create(&format!("{root}/a"), b"1", &persistent()).await.unwrap();
    raw.create(&format!("{root}/a/x"), b"2", &persistent()).await.unwrap();
}

async fn events_in_order(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let raw = raw_client(&server).await;
    let s = session(&server).await;
    for watch in [CacheWatch::Auto, CacheWatch::OneShot] {
        let root = test_path("t25", kind);
        initial_tree(&raw, &root).await;
        let cache = TreeCache::new(&s, &root, CacheOptions::tree().with_watch(watch)).unwrap();
        let rec = Recorder::start(cache.events());
        let expected = writes(&raw, &root, |n| await_items(&rec, n)).await;
        let lines: Vec<String> = rec.lines().iter().map(|l| l.trim_end().to_string()).collect();
        let expected: Vec<String> = expected.iter().map(|l| l.trim_end().to_string()).collect();
        assert_eq!(lines, expected, "{watch:?}");
        assert!(cache.is_initialized());
        let server_state = assert_converged(&cache, &rec, &raw, false).await;

        // A late subscriber: the current content, then `init`.
        let late = Recorder::start(cache.events());
        await_items(&late, server_state.len() + 1).await;
        assert_eq!(replay(&late.events()), server_state, "{watch:?}: late subscriber");
        assert_eq!(late.lines().last().map(String::as_str), Some("init"));
        cache.close();
    }
}

#[cfg(feature = "zookeeper-tests")]
async fn same_events_as_curator(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let raw = raw_client(&server).await;
    let s = session(&server).await;
    let root = test_path("t25", kind);
    initial_tree(&raw, &root).await;
    let java = curator::JavaCache::start(&server.hosts(), &root);
    let java = std::sync::Arc::new(tokio::sync::Mutex::new((java, Vec::<String>::new())));
    let cache = TreeCache::new(&s, &root, CacheOptions::tree()).unwrap();
    let rec = std::sync::Arc::new(Recorder::start(cache.events()));
    let ours = writes(&raw, &root, |n| {
        let (java, rec) = (java.clone(), rec.clone());
        async move {
            let mut java = java.lock().await;
            while java.1.len() < n {
                // The first line waits for the JVM to start.
                let line = java.0.next(Duration::from_secs(60)).await;
                java.1.push(line);
            }
            await_items(&rec, n).await;
        }
    })
    .await;
    let trim = |v: &[String]| v.iter().map(|l| l.trim_end().to_string()).collect::<Vec<_>>();
    assert_eq!(trim(&java.lock().await.1), trim(&ours), "Curator's events");
    assert_eq!(trim(&rec.lines()), trim(&ours), "our events");
}

async fn limits(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let raw = raw_client(&server).await;
    let s = session(&server).await;
    let root = test_path("t25", kind);
    raw.mkdir(&root, &persistent()).await.unwrap();
    raw.create(&format!("{root}/1"), b"", &persistent()).await.unwrap();

    let small = TreeCache::new(&s, &root, CacheOptions::tree().with_max_nodes(3)).unwrap();
    small.initialized().await.unwrap();
    let rec = Recorder::start(small.events());
    raw.create(&format!("{root}/2"), b"", &persistent()).await.unwrap();
    raw.create(&format!("{root}/3"), b"", &persistent()).await.unwrap();
    eventually(WITHIN, "the stream ends", || rec.items().last().is_some_and(|i| i.is_err())).await;
    let last = rec.items().pop().unwrap();
    assert!(matches!(last, Err(Error::CacheFull { max_nodes: 3, .. })), "{last:?}");
    assert_eq!(small.snapshot().len(), 3, "the nodes within the limit");
    assert!(TreeCache::new(&s, &root, CacheOptions::tree().with_max_nodes(0)).is_err());

    // A subscriber that does not read falls behind an event queue of 2.
    let cache = TreeCache::new(&s, &root, CacheOptions::tree().with_event_queue(2)).unwrap();
    cache.initialized().await.unwrap();
    let mut slow = cache.events();
    let rec = Recorder::start(cache.events());
    for i in 4..14 {
        raw.create(&format!("{root}/{i}"), b"", &persistent()).await.unwrap();
    }
    let server_state = server_tree(&raw, &root, false).await;
    eventually(WITHIN, "loaded", || cache_tree(&cache) == server_state).await;
    let mut lagged = false;
    while let Ok(Some(item)) = tokio::time::timeout(Duration::from_millis(200), slow.next()).await {
        lagged |= matches!(item, Err(Error::CacheLagged { .. }));
    }
    assert!(lagged, "the slow subscriber was told it lagged");
    drop(rec);
    let fresh = Recorder::start(cache.events());
    await_items(&fresh, server_state.len() + 1).await;
    assert_eq!(replay(&fresh.events()), server_state, "a new stream has the content");
}

async fn unreadable_node_skipped(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let raw = raw_client(&server).await;
    let s = session(&server).await;
    let root = test_path("t25", kind);
    raw.mkdir(&root, &persistent()).await.unwrap();
    let secret = format!("{root}/secret");
    raw.create(&secret, b"x", &persistent()).await.unwrap();
    raw.set_acl(&secret, &[Acl::new(Permission::WRITE, AuthId::anyone())], None).await.unwrap();
    raw.create(&format!("{root}/open"), b"y", &persistent()).await.unwrap();
    let cache = TreeCache::new(&s, &root, CacheOptions::tree()).unwrap();
    let rec = Recorder::start(cache.events());
    cache.initialized().await.unwrap();
    eventually(WITHIN, "loaded", || rec.items().iter().any(|i| i.is_err())).await;
    let errors: Vec<Error> = rec.items().into_iter().filter_map(Result::err).collect();
    assert!(matches!(&errors[..], [Error::NoAuth { path }] if *path == secret), "{errors:?}");
    let held: Vec<String> = cache.snapshot().into_keys().collect();
    assert_eq!(held, [root.clone(), format!("{root}/open")]);
    // A subscriber that comes after the load learns of the skipped node too (the first one
    // may also have come after it: the load starts with the cache).
    let late = Recorder::start(cache.events());
    eventually(WITHIN, "replayed", || late.items().iter().any(|i| i.is_err())).await;
}
