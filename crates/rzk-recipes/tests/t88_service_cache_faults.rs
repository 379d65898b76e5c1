//! The service cache under faults, against rzk and Apache ZooKeeper 3.8: instances come and
//! go while the cache's connection is cut, while its session expires, across a server
//! restart, and while the service node is deleted and created again. The cache, and the last
//! set its stream sent, end equal to the server's children, and live changes still arrive
//! afterwards.

mod support;

use rzk_client::{Acls, CreateMode};
use rzk_recipes::{
    discovery::{ServiceCache, ServiceDiscovery, ServiceInstance},
    session::Session,
};
use serde_json::Value;
use support::cache::CONVERGE;
use support::services::*;
use support::*;

both_servers! {
    t88_service_cache_converges_after_cut => converges_after_cut;
    t88_service_cache_converges_after_expiry => converges_after_expiry;
    t88_service_cache_converges_after_restart => converges_after_restart;
    t88_service_cache_follows_delete_and_recreate => follows_delete_and_recreate;
}

fn instance(id: &str) -> ServiceInstance<Value> {
    ServiceInstance::new("api", "10.0.0.7", 8080).with_id(id)
}

/// A cache of "api" under `base` on `s`, loaded, and the recorder of its sets.
async fn started(s: &Session, base: &str) -> (ServiceCache<Value>, SetRecorder) {
    let cache = ServiceCache::<Value>::new(s, base, "api").unwrap();
    cache.initialized().await.unwrap();
    let rec = SetRecorder::start(&cache);
    (cache, rec)
}

/// A cache on a session through a proxy, and a registry on a direct session.
struct Proxied {
    server: Server,
    watcher: Session,
    proxy: rzk_testkit::proxy::Proxy,
    cache: ServiceCache<Value>,
    rec: SetRecorder,
    d: ServiceDiscovery<Value>,
}

async fn proxied(kind: Kind) -> Proxied {
    let server = Server::start(kind, Settings::default());
    let base = test_path("t88", kind);
    let (watcher, proxy) = session_via_proxy(&server).await;
    let (cache, rec) = started(&watcher, &base).await;
    let s = session(&server).await;
    let d = ServiceDiscovery::<Value>::new(&s, &base).unwrap();
    Proxied { server, watcher, proxy, cache, rec, d }
}

async fn converges_after_cut(kind: Kind) {
    let Proxied { server: _server, watcher, proxy, cache, rec, d } = proxied(kind).await;
    d.register(&instance("a")).await.unwrap();
    d.register(&instance("b")).await.unwrap();
    converged_to(&cache, &rec, &["a", "b"]).await;
    for (add, remove, want) in [("c", "a", ["b", "c"]), ("d", "b", ["c", "d"])] {
        proxy.cut();
        eventually(CONVERGE, "disconnected", || !watcher.state().is_connected()).await;
        d.register(&instance(add)).await.unwrap();
        d.unregister(&instance(remove)).await.unwrap();
        proxy.heal();
        converged_to(&cache, &rec, &want).await;
    }
    d.register(&instance("e")).await.unwrap();
    converged_to(&cache, &rec, &["c", "d", "e"]).await;
}

async fn converges_after_expiry(kind: Kind) {
    let Proxied { server, watcher, proxy, cache, rec, d } = proxied(kind).await;
    d.register(&instance("a")).await.unwrap();
    converged_to(&cache, &rec, &["a"]).await;

    let first = watcher.session_id();
    proxy.cut();
    d.register(&instance("b")).await.unwrap();
    d.unregister(&instance("a")).await.unwrap();
    force_expire(&server, &watcher, &proxy).await;
    eventually(CONVERGE, "a new session", || {
        watcher.session_id().is_some_and(|id| Some(id) != first)
    })
    .await;
    converged_to(&cache, &rec, &["b"]).await;
    d.register(&instance("c")).await.unwrap();
    converged_to(&cache, &rec, &["b", "c"]).await;
}

async fn converges_after_restart(kind: Kind) {
    let settings = Settings { durable: true, ..Settings::default() };
    let mut server = Server::start(kind, settings);
    let base = test_path("t88", kind);
    let watcher = session(&server).await;
    let (cache, rec) = started(&watcher, &base).await;
    let s = session(&server).await;
    let d = ServiceDiscovery::<Value>::new(&s, &base).unwrap();
    d.register(&instance("a")).await.unwrap();
    converged_to(&cache, &rec, &["a"]).await;

    server.restart();
    d.register(&instance("b")).await.unwrap();
    converged_to(&cache, &rec, &["a", "b"]).await;
    let raw = raw_client(&server).await;
    assert_eq!(server_ids(&raw, &format!("{base}/api")).await, ["a", "b"]);
    d.unregister(&instance("a")).await.unwrap();
    converged_to(&cache, &rec, &["b"]).await;
}

/// Creates the service node with PERSISTENT instances `ids` (another registry's, say).
async fn create_service(raw: &rzk_client::Client, service: &str, ids: &[&str]) {
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    raw.mkdir(service, &persistent).await.unwrap();
    for id in ids {
        let data = instance(id).to_json().unwrap();
        raw.create(&format!("{service}/{id}"), &data, &persistent).await.unwrap();
    }
}

async fn follows_delete_and_recreate(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let base = test_path("t88", kind);
    let service = format!("{base}/api");
    let raw = raw_client(&server).await;
    create_service(&raw, &service, &["x1", "x2"]).await;
    let (watcher, proxy) = session_via_proxy(&server).await;
    let (cache, rec) = started(&watcher, &base).await;
    converged_to(&cache, &rec, &["x1", "x2"]).await;

    // Live: the service node goes, then comes back with other instances.
    delete_tree(&raw, &service).await;
    converged_to(&cache, &rec, &[]).await;
    create_service(&raw, &service, &["y1"]).await;
    converged_to(&cache, &rec, &["y1"]).await;

    // Unseen: deleted and created again with the same instance ids while cut off.
    proxy.cut();
    eventually(CONVERGE, "disconnected", || !watcher.state().is_connected()).await;
    delete_tree(&raw, &service).await;
    create_service(&raw, &service, &["y1", "z1"]).await;
    proxy.heal();
    converged_to(&cache, &rec, &["y1", "z1"]).await;
    let held = cache.instances_reporting();
    assert!(held.malformed.is_empty());
    raw.delete(&format!("{service}/y1"), None).await.unwrap();
    converged_to(&cache, &rec, &["z1"]).await;
}
