//! The node cache (a config watcher), against rzk and Apache ZooKeeper 3.8.
//!
//! - Seed 002's configuration flow: writers update a JSON config node by versioned CAS
//!   (`update`), watchers on persistent and on one-shot watches refresh; every update applies
//!   once, the watchers' versions only grow and end at the server's.
//! - A node absent, created, changed, deleted and created again: the change stream gives
//!   each state once, in order, absence included.
//! - Bad input: malformed JSON is an error item (and `update` refuses to overwrite it), never
//!   a panic; an unreadable node gives `NoAuth`; `set` with a stale version gives `BadVersion`.

mod support;

use std::time::Duration;

use rzk_client::{Acl, AuthId, CreateMode, Permission};
use rzk_recipes::{
    cache::{CacheOptions, CacheWatch, JsonNodeCache, NodeCache, NodeState, Versioned},
    Error,
};
use support::*;

both_servers! {
    t24_config_update_flow => config_update_flow;
    t24_absent_created_deleted_recreated => absent_created_deleted_recreated;
    t24_bad_input => bad_input;
}

/// How long one change may take to reach a watcher on a loaded machine.
const WITHIN: Duration = Duration::from_secs(10);
const WRITERS: u32 = 3;
const UPDATES: u32 = 10;

#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, Default, PartialEq)]
struct Database {
    url: String,
    pool: u32,
}

async fn config_update_flow(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = format!("{}/config/database", test_path("t24", kind));
    let mut watchers = Vec::new();
    for watch in [CacheWatch::Auto, CacheWatch::OneShot] {
        let s = session(&server).await;
        let options = CacheOptions::single_node().with_watch(watch);
        let node = NodeCache::with_options(&s, &path, options).unwrap();
        let typed: JsonNodeCache<Database> = JsonNodeCache::from_node(node);
        typed.node().initialized().await.unwrap();
        let mut changes = typed.changes();
        watchers.push(tokio::spawn(async move {
            let mut seen: Vec<Option<Versioned<Database>>> = Vec::new();
            while seen
                .last()
                .and_then(|v| v.as_ref())
                .is_none_or(|v| v.value.pool < WRITERS * UPDATES)
            {
                let next = tokio::time::timeout(WITHIN, changes.next()).await;
                seen.push(next.expect("a change in time").expect("open").unwrap());
            }
            drop((typed, s));
            seen
        }));
    }
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let s = session(&server).await;
        let config: JsonNodeCache<Database> = JsonNodeCache::new(&s, &path).unwrap();
        writers.push(tokio::spawn(async move {
            let mut pools = Vec::new();
            for _ in 0..UPDATES {
                let written = config
                    .update(|old| {
                        let pool = old.map_or(0, |d| d.pool) + 1;
                        Database { url: format!("db-{w}"), pool }
                    })
                    .await
                    .unwrap();
                pools.push(written.value.pool);
            }
            pools
        }));
    }
    let mut pools = Vec::new();
    for w in writers {
        pools.extend(w.await.unwrap());
    }
    pools.sort();
    assert_eq!(pools, (1..=WRITERS * UPDATES).collect::<Vec<_>>(), "each update applied once");

    let raw = raw_client(&server).await;
    let (data, stat) = raw.get_data(&path).await.unwrap();
    let on_server: Database = serde_json::from_slice(&data).unwrap();
    for w in watchers {
        let seen = w.await.unwrap();
        assert!(seen[0].is_none(), "the first state is the absence");
        let versions: Vec<i32> =
            seen[1..].iter().map(|v| v.as_ref().unwrap().stat.version).collect();
        assert!(versions.windows(2).all(|w| w[0] < w[1]), "versions only grow: {versions:?}");
        let last = seen.last().unwrap().as_ref().unwrap();
        assert_eq!((&last.value, last.stat), (&on_server, stat), "ends at the server's state");
    }
}

/// The next state of `changes`, within [`WITHIN`].
async fn next(changes: &mut rzk_recipes::cache::NodeChanges) -> NodeState {
    tokio::time::timeout(WITHIN, changes.next()).await.expect("in time").expect("open").unwrap()
}

async fn absent_created_deleted_recreated(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = format!("{}/flag", test_path("t24", kind));
    let raw = raw_client(&server).await;
    let s = session(&server).await;
    for watch in [CacheWatch::Auto, CacheWatch::OneShot] {
        let options = CacheOptions::single_node().with_watch(watch);
        let cache = NodeCache::with_options(&s, &path, options).unwrap();
        let mut changes = cache.changes();
        assert_eq!(next(&mut changes).await, None, "{watch:?}: absent first");
        let a = cache.set(b"a", None).await.unwrap();
        assert_eq!(next(&mut changes).await, Some(a.clone()), "{watch:?}: created");
        let b = cache.update(|old| [&old.unwrap().data[..], b"b"].concat()).await.unwrap();
        assert_eq!(b.data, b"ab");
        assert_eq!(next(&mut changes).await, Some(b.clone()), "{watch:?}: changed");
        raw.delete(&path, None).await.unwrap();
        assert_eq!(next(&mut changes).await, None, "{watch:?}: deleted");
        let c = cache.set(b"c", None).await.unwrap();
        assert_eq!(next(&mut changes).await, Some(c.clone()), "{watch:?}: recreated");
        assert_eq!(cache.current(), Some(c));
        // A stale version is refused and changes nothing.
        let stale = cache.set(b"d", Some(b.version())).await;
        assert!(matches!(stale, Err(Error::BadVersion { .. })), "{stale:?}");
        raw.delete(&path, None).await.unwrap();
        assert_eq!(next(&mut changes).await, None, "{watch:?}: deleted again");
        cache.close();
        assert!(tokio::time::timeout(WITHIN, changes.next()).await.unwrap().is_none(), "ends");
    }
}

async fn bad_input(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let base = test_path("t24", kind);
    let raw = raw_client(&server).await;
    let path = format!("{base}/database");
    let persistent = CreateMode::Persistent.with_acls(rzk_client::Acls::anyone_all());
    raw.mkdir(&base, &persistent).await.unwrap();
    raw.create(&path, b"{\"url\": not json", &persistent).await.unwrap();
    let s = session(&server).await;

    let config: JsonNodeCache<Database> = JsonNodeCache::new(&s, &path).unwrap();
    let mut changes = config.changes();
    let first = tokio::time::timeout(WITHIN, changes.next()).await.unwrap().unwrap();
    assert!(matches!(&first, Err(Error::BadData { path: p, .. }) if *p == path), "{first:?}");
    assert!(matches!(config.current(), Err(Error::BadData { .. })));
    let refused = config.update(|_| Database::default()).await;
    assert!(matches!(refused, Err(Error::BadData { .. })), "{refused:?}");
    assert_eq!(raw.get_data(&path).await.unwrap().0, b"{\"url\": not json", "not overwritten");
    let fixed = Database { url: "pg://db".into(), pool: 4 };
    raw.set_data(&path, &serde_json::to_vec(&fixed).unwrap(), None).await.unwrap();
    let next = tokio::time::timeout(WITHIN, changes.next()).await.unwrap().unwrap();
    assert_eq!(next.unwrap().unwrap().value, fixed, "the cache goes on after bad data");

    // Readable by nobody: the cache fails with NoAuth naming the node.
    let secret = format!("{base}/secret");
    raw.create(&secret, b"x", &persistent).await.unwrap();
    let write_only = [Acl::new(Permission::WRITE, AuthId::anyone())];
    raw.set_acl(&secret, &write_only, None).await.unwrap();
    let denied = NodeCache::new(&s, &secret).unwrap();
    let e = tokio::time::timeout(WITHIN, denied.initialized()).await.unwrap().unwrap_err();
    assert!(matches!(&e, Error::NoAuth { path: p } if *p == secret), "{e:?}");
    let mut ended = denied.changes();
    let last = tokio::time::timeout(WITHIN, ended.next()).await.unwrap();
    assert!(matches!(last, Some(Err(Error::NoAuth { .. }))), "{last:?}");
}
