//! The live service cache and the server list's live view, against rzk and Apache ZooKeeper
//! 3.8.
//!
//! - A cache started before its service exists follows registrations, updates and
//!   unregistrations; its stream sends the set once loaded and after each change, never the
//!   same state twice in a row; a provider on it picks from the cache.
//! - Malformed instance JSON written by a raw client is skipped and listed as malformed, and
//!   the instances around it are still served.
//! - The plain `/servers` layout: a server whose session closes leaves the live list.
//! - With Java curator-x-discovery 5.4: its `ServiceCache` and ours see the same instance
//!   sets, registered from either side.

mod support;

use rzk_client::{Acls, CreateMode};
use rzk_recipes::discovery::{
    ServerCache, ServerList, ServiceCache, ServiceDiscovery, ServiceInstance, ServiceProvider,
};
#[cfg(feature = "zookeeper-tests")]
use serde_json::json;
use serde_json::Value;
use support::cache::CONVERGE;
#[cfg(feature = "zookeeper-tests")]
use support::curator::JavaCache;
use support::services::*;
use support::*;

both_servers! {
    t29_service_cache_follows_the_registry => follows_the_registry;
    t29_service_cache_skips_malformed => skips_malformed;
    t29_server_cache_follows_the_list => server_cache_follows_the_list;
}

// Curator in a JVM, against both servers: the `zookeeper-tests` tier only.
#[cfg(feature = "zookeeper-tests")]
both_servers! {
    t29_service_cache_with_curator => with_curator;
}

fn instance(id: &str, port: u16) -> ServiceInstance<Value> {
    ServiceInstance::new("api", "10.0.0.7", port).with_id(id)
}

async fn follows_the_registry(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let base = test_path("t29", kind);
    let watcher = session(&server).await;
    let cache = ServiceCache::<Value>::new(&watcher, &base, "api").unwrap();
    cache.initialized().await.unwrap();
    let rec = SetRecorder::start(&cache);
    converged_to(&cache, &rec, &[]).await;

    let s = session(&server).await;
    let d = ServiceDiscovery::<Value>::new(&s, &base).unwrap();
    d.register(&instance("a", 1)).await.unwrap();
    d.register(&instance("b", 2).with_enabled(false)).await.unwrap();
    converged_to(&cache, &rec, &["a", "b"]).await;

    // An update is a new set with the same ids; the provider reads the cache.
    d.update(&instance("a", 9)).await.unwrap();
    eventually(CONVERGE, "the update", || cache.instances()[0].port == Some(9)).await;
    let provider = ServiceProvider::from_cache(cache.clone());
    let picked = provider.get_instance().await.unwrap().expect("an enabled instance");
    assert_eq!((picked.id.as_str(), picked.port), ("a", Some(9)), "b is disabled");

    d.unregister(&instance("b", 2)).await.unwrap();
    converged_to(&cache, &rec, &["a"]).await;
    d.close().await.unwrap();
    converged_to(&cache, &rec, &[]).await;
    assert_eq!(provider.get_instance().await.unwrap(), None);

    // Each set differs from the one before (nothing here re-creates a node unchanged).
    let sets = rec.sets();
    assert!(sets.windows(2).all(|w| w[0] != w[1] || w[0] == ["a", "b"]), "{sets:?}");
    assert_eq!(sets.first().map(Vec::len), Some(0), "the first set is the empty service");
    cache.close();
    let mut after = cache.changes();
    let drained = tokio::time::timeout(CONVERGE, async { while after.next().await.is_some() {} });
    drained.await.expect("a closed cache's stream ends");
}

async fn skips_malformed(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let base = test_path("t29", kind);
    let raw = raw_client(&server).await;
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    raw.mkdir(&format!("{base}/api"), &persistent).await.unwrap();
    raw.create(&format!("{base}/api/junk"), b"{not json", &persistent).await.unwrap();
    let good = instance("good", 1).to_json().unwrap();
    raw.create(&format!("{base}/api/good"), &good, &persistent).await.unwrap();

    let s = session(&server).await;
    let cache = ServiceCache::<Value>::new(&s, &base, "api").unwrap();
    let rec = SetRecorder::start(&cache);
    converged_to(&cache, &rec, &["good"]).await;
    let found = cache.instances_reporting();
    assert_eq!(found.malformed.len(), 1);
    assert_eq!(found.malformed[0].path, format!("{base}/api/junk"));

    // Fixed by its writer, the node becomes an instance.
    let fixed = instance("junk", 2).to_json().unwrap();
    raw.set_data(&format!("{base}/api/junk"), &fixed, None).await.unwrap();
    converged_to(&cache, &rec, &["good", "junk"]).await;
    assert!(cache.instances_reporting().malformed.is_empty());
    // A node below an instance is not part of the set (the cache is one level deep).
    raw.create(&format!("{base}/api/good/child"), b"{", &persistent).await.unwrap();
    raw.set_data(&format!("{base}/api/junk"), b"[]", None).await.unwrap();
    converged_to(&cache, &rec, &["good"]).await;
    assert_eq!(cache.instances_reporting().malformed.len(), 1);
}

async fn server_cache_follows_the_list(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let parent = test_path("t29-servers", kind);
    let s = session(&server).await;
    let live = ServerCache::new(&s, &parent).unwrap();
    live.initialized().await.unwrap();
    let mut lists = live.changes();
    let first = lists.next().await.unwrap().unwrap();
    assert!(first.servers.is_empty());

    let (s1, s2) = (session(&server).await, session(&server).await);
    let one = ServerList::new(&s1, &parent).unwrap();
    let two = ServerList::new(&s2, &parent).unwrap();
    one.register("10.0.0.1:80").await.unwrap();
    two.register("10.0.0.2:80").await.unwrap();
    let addresses = |l: &rzk_recipes::discovery::Servers| -> Vec<String> {
        let mut a: Vec<String> = l.servers.iter().map(|s| s.address.clone()).collect();
        a.sort();
        a
    };
    eventually(CONVERGE, "both listed", || {
        addresses(&live.servers()) == ["10.0.0.1:80", "10.0.0.2:80"]
    })
    .await;
    s1.close().await;
    eventually(CONVERGE, "one left", || addresses(&live.servers()) == ["10.0.0.2:80"]).await;
    // The stream got there too, one list at a time.
    loop {
        let list = tokio::time::timeout(CONVERGE, lists.next()).await.unwrap().unwrap().unwrap();
        if addresses(&list) == ["10.0.0.2:80"] {
            break;
        }
    }
}

/// Waits until the Java cache prints `want` (its set, sorted ids joined by commas).
#[cfg(feature = "zookeeper-tests")]
async fn java_sees(java: &mut JavaCache, want: &str) {
    loop {
        let line = java.next(CONVERGE).await;
        if line == format!("set [{want}]") {
            return;
        }
    }
}

#[cfg(feature = "zookeeper-tests")]
async fn with_curator(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let base = test_path("t29", kind);
    let s = session(&server).await;
    let cache = ServiceCache::<Value>::new(&s, &base, "api").unwrap();
    let rec = SetRecorder::start(&cache);
    let mut java = JavaCache::start_with(&server.hosts(), &base, &["service-cache", "api"]);
    java_sees(&mut java, "").await;

    let d = ServiceDiscovery::<Value>::new(&s, &base).unwrap();
    d.register(&instance("rust-1", 1).with_payload(json!({"zone": "eu"}))).await.unwrap();
    d.register(&instance("rust-2", 2)).await.unwrap();
    converged_to(&cache, &rec, &["rust-1", "rust-2"]).await;
    java_sees(&mut java, "rust-1,rust-2").await;

    curator::run(&server.hosts(), &base, &["discovery-register", "api", "java-1"]).await;
    converged_to(&cache, &rec, &["java-1", "rust-1", "rust-2"]).await;
    java_sees(&mut java, "java-1,rust-1,rust-2").await;
    let theirs = cache.instances().into_iter().find(|i| i.id == "java-1").unwrap();
    assert_eq!((theirs.port, theirs.ssl_port), (Some(8080), Some(8443)));

    d.unregister(&instance("rust-1", 1)).await.unwrap();
    converged_to(&cache, &rec, &["java-1", "rust-2"]).await;
    java_sees(&mut java, "java-1,rust-2").await;
    d.close().await.unwrap();
}
