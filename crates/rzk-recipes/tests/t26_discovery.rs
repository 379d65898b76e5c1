//! Service registry and discovery, against rzk and Apache ZooKeeper 3.8.
//!
//! - Register, update, unregister and the three queries, in curator-x-discovery's layout
//!   (`<base>/<name>/<id>`, EPHEMERAL, the instance JSON); a missing base path answers as
//!   Curator does (names: `NoNode`; instances: empty; an instance: none).
//! - After a forced session expiry the instance is registered again on the new session with
//!   the same id and the data of the latest update.
//! - A provider leaves out disabled instances and the ones reported down.
//! - Malformed instance JSON written by a raw client is skipped and reported; an ACL that
//!   forbids the registration or the query gives `NoAuth`.
//! - The plain layout: EPHEMERAL_SEQUENTIAL `server<seq>` nodes with `host:port`, listed by
//!   another client, re-created on a new session, gone when the session is closed.
//! - With Java curator-x-discovery 5.4: each reads the other's instance with every field.

mod support;

use std::time::Duration;

use rzk_client::{Acl, Acls, CreateMode, Permission};
#[cfg(feature = "zookeeper-tests")]
use rzk_recipes::discovery::{ServiceType, UriSpec};
use rzk_recipes::{
    discovery::{
        Random, ServerList, ServiceDiscovery, ServiceInstance, ServiceProvider, SERVER_PREFIX,
    },
    Error,
};
use serde_json::{json, Value};
use support::*;

both_servers! {
    t26_discovery_register_update_unregister => register_update_unregister;
    t26_discovery_reregisters_current_data_after_expiry => reregisters_current_data;
    t26_discovery_skips_malformed_and_denies => skips_malformed_and_denies;
    t26_discovery_server_list => server_list;
}

// Curator in a JVM, against both servers: the `zookeeper-tests` tier only.
#[cfg(feature = "zookeeper-tests")]
both_servers! {
    t26_discovery_with_curator => with_curator;
}

/// How long a re-registration on a new session may take on a loaded machine.
const LIMIT: Duration = Duration::from_secs(30);

fn instance(id: &str, payload: Value) -> ServiceInstance<Value> {
    ServiceInstance::new("api", "10.0.0.7", 8080).with_id(id).with_payload(payload)
}

async fn register_update_unregister(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let base = test_path("t26", kind);
    let raw = raw_client(&server).await;
    let s = session(&server).await;
    let d = ServiceDiscovery::<Value>::new(&s, &base).unwrap();

    // Nothing registered yet: as Curator answers.
    assert_eq!(d.query_for_names().await, Err(Error::NoNode { path: base.clone() }));
    assert!(d.query_for_instances("api").await.unwrap().is_empty());
    assert_eq!(d.query_for_instance("api", "a").await.unwrap(), None);

    let a = instance("a", json!({"v": 1})).with_ssl_port(8443).with_uri_spec("{scheme}://x");
    let b = ServiceInstance::new("api", "10.0.0.8", 8081).with_id("b").with_enabled(false);
    let path_a = d.register(&a).await.unwrap();
    assert_eq!(path_a, format!("{base}/api/a"));
    d.register(&b).await.unwrap();
    let (bytes, stat) = raw.get_data(&path_a).await.unwrap();
    assert_eq!(stat.ephemeral_owner, s.session_id().unwrap().0, "EPHEMERAL, ours");
    let on_server: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(on_server["sslPort"], 8443);
    assert_eq!(on_server["serviceType"], "DYNAMIC");

    assert_eq!(d.query_for_names().await.unwrap(), ["api"]);
    assert_eq!(d.query_for_instances("api").await.unwrap(), [a.clone(), b.clone()]);
    assert_eq!(d.query_for_instance("api", "a").await.unwrap(), Some(a.clone()));

    // The provider hands out enabled instances that are not down.
    let provider = ServiceProvider::new(&d, "api").with_strategy(Random);
    assert_eq!(provider.get_all_instances().await.unwrap(), std::slice::from_ref(&a));
    provider.note_error(&a);
    assert_eq!(provider.get_instance().await.unwrap(), Some(a.clone()), "one error: still up");
    provider.note_error(&a);
    assert_eq!(provider.get_instance().await.unwrap(), None, "two errors: down");
    drop(provider);

    let mut a2 = a.clone().with_payload(json!({"v": 2}));
    a2.port = Some(9090);
    d.update(&a2).await.unwrap();
    assert_eq!(d.query_for_instance("api", "a").await.unwrap(), Some(a2.clone()));
    let stranger = instance("nobody", Value::Null);
    assert!(matches!(d.update(&stranger).await, Err(Error::NoNode { .. })));

    assert!(d.unregister(&b).await.unwrap());
    assert!(!d.unregister(&b).await.unwrap());
    assert_eq!(d.query_for_instances("api").await.unwrap(), [a2]);
    d.close().await.unwrap();
    assert!(d_empty(&s, &base).await);
    // The service node is a container: the server reaps it once empty.
    let service = format!("{base}/api");
    wait_presence(&raw, &service, false, LIMIT, &format!("{service} not reaped")).await;
}

/// True when no instance of "api" is left under `base`.
async fn d_empty(s: &rzk_recipes::session::Session, base: &str) -> bool {
    let d = ServiceDiscovery::<Value>::new(s, base).unwrap();
    d.query_for_instances("api").await.unwrap().is_empty()
}

async fn reregisters_current_data(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let base = test_path("t26", kind);
    let raw = raw_client(&server).await;
    let (s, proxy) = session_via_proxy(&server).await;
    let d = ServiceDiscovery::<Value>::new(&s, &base).unwrap();
    let first = instance("a", json!({"v": 1}));
    let path = d.register(&first).await.unwrap();
    let updated = instance("a", json!({"v": 2}));
    d.update(&updated).await.unwrap();

    let old = s.session_id().unwrap();
    force_expire(&server, &s, &proxy).await;
    eventually(LIMIT, "a new session", || s.session_id().is_some_and(|id| id != old)).await;
    let want = updated.to_json().unwrap();
    let deadline = std::time::Instant::now() + LIMIT;
    loop {
        let now = s.session_id();
        match raw.get_data(&path).await {
            Ok((data, stat)) if Some(stat.ephemeral_owner) == now.map(|id| id.0) => {
                assert_eq!(data, want, "re-registered with the updated data");
                break;
            }
            Ok(_) | Err(rzk_client::Error::NoNode) => {}
            Err(e) => panic!("read {path}: {e}"),
        }
        assert!(std::time::Instant::now() < deadline, "not re-registered on the new session");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Still managed: an update after the re-registration lands on the new node.
    let third = instance("a", json!({"v": 3}));
    d.update(&third).await.unwrap();
    assert_eq!(d.query_for_instance("api", "a").await.unwrap(), Some(third));
    d.close().await.unwrap();
}

async fn skips_malformed_and_denies(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let base = test_path("t26", kind);
    let raw = raw_client(&server).await;
    let s = session(&server).await;
    let d = ServiceDiscovery::<Value>::new(&s, &base).unwrap();
    let good = instance("good", json!({"ok": true}));
    d.register(&good).await.unwrap();
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    for (id, data) in [("bad", &b"{not json"[..]), ("array", b"[]"), ("port", br#"{"port":"x"}"#)] {
        raw.create(&format!("{base}/api/{id}"), data, &open).await.unwrap();
    }
    let found = d.query_for_instances_reporting("api").await.unwrap();
    assert_eq!(found.instances, [good]);
    let bad: Vec<&str> =
        found.malformed.iter().map(|m| m.path.rsplit('/').next().unwrap()).collect();
    assert_eq!(bad, ["array", "bad", "port"]);
    assert!(matches!(d.query_for_instance("api", "bad").await, Err(Error::BadData { .. })));

    // A typed payload that another client's JSON does not fit is skipped the same way.
    #[derive(serde::Deserialize, serde::Serialize, Debug, PartialEq, Clone)]
    struct Strict {
        ok: u8,
    }
    let typed = ServiceDiscovery::<Strict>::new(&s, &base).unwrap();
    let found = typed.query_for_instances_reporting("api").await.unwrap();
    assert!(found.instances.is_empty() && found.malformed.len() == 4, "{found:?}");

    // Read-only and unreadable parents.
    let read_only = format!("{base}-ro");
    raw.create(&read_only, b"", &CreateMode::Persistent.with_acls(Acls::anyone_read()))
        .await
        .unwrap();
    let ro = ServiceDiscovery::<Value>::new(&s, &read_only).unwrap();
    let denied = ro.register(&instance("x", Value::Null)).await;
    assert!(matches!(denied, Err(Error::NoAuth { .. })), "{denied:?}");
    assert!(ro.query_for_instances("api").await.unwrap().is_empty(), "nothing left registered");
    let write_only =
        [Acl::new(Permission::WRITE | Permission::CREATE, rzk_client::AuthId::anyone())];
    let hidden = format!("{base}-wo");
    raw.create(&hidden, b"", &CreateMode::Persistent.with_acls(Acls::new(&write_only)))
        .await
        .unwrap();
    let wo = ServiceDiscovery::<Value>::new(&s, &hidden).unwrap();
    assert!(matches!(wo.query_for_names().await, Err(Error::NoAuth { .. })));
}

async fn server_list(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let parent = test_path("t26-servers", kind);
    let (s1, proxy) = session_via_proxy(&server).await;
    let mine = ServerList::new(&s1, &parent).unwrap();
    let key = mine.register("10.0.0.1:80").await.unwrap();
    let s2 = session(&server).await;
    let theirs = ServerList::new(&s2, &parent).unwrap();
    let listed = theirs.list().await.unwrap().servers;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].address, "10.0.0.1:80");
    let first = listed[0].name.clone();
    let seq = first.strip_prefix(SERVER_PREFIX).expect("server<seq>");
    assert!(seq.len() == 10 && seq.bytes().all(|b| b.is_ascii_digit()), "{first}");
    assert_eq!(mine.path_of(&key).await, Some(format!("{parent}/{first}")));

    let old = s1.session_id();
    force_expire(&server, &s1, &proxy).await;
    eventually(LIMIT, "a new session", || s1.session_id().is_some_and(|id| Some(id) != old)).await;
    let deadline = std::time::Instant::now() + LIMIT;
    loop {
        let now = theirs.list().await.unwrap().servers;
        if now.len() == 1 && now[0].name != first {
            assert_eq!(now[0].address, "10.0.0.1:80");
            break;
        }
        assert!(now.len() <= 1, "duplicated: {now:?}");
        assert!(std::time::Instant::now() < deadline, "not re-created: {now:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    s1.close().await;
    let deadline = std::time::Instant::now() + LIMIT;
    while !theirs.list().await.unwrap().servers.is_empty() {
        assert!(std::time::Instant::now() < deadline, "still listed after close");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[cfg(feature = "zookeeper-tests")]
async fn with_curator(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let base = test_path("t26", kind);
    let s = session(&server).await;
    let d = ServiceDiscovery::<Value>::new(&s, &base).unwrap();

    // Java's STATIC instance, read by us with every field.
    curator::run(&server.hosts(), &base, &["discovery-register", "api", "java-1"]).await;
    let java = d.query_for_instance("api", "java-1").await.unwrap().expect("java's instance");
    assert_eq!((java.name.as_str(), java.id.as_str()), ("api", "java-1"));
    assert_eq!(java.address.as_deref(), Some("10.1.2.3"));
    assert_eq!((java.port, java.ssl_port), (Some(8080), Some(8443)));
    let payload = java.payload.clone().unwrap();
    assert_eq!((&payload["zone"], &payload["weight"]), (&json!("eu-1"), &json!(3)));
    assert!(payload["@class"].is_string(), "Jackson's type id kept: {payload}");
    assert_eq!(java.registration_time_utc, 1_700_000_000_123);
    assert_eq!(java.service_type, ServiceType::Static);
    assert_eq!(java.uri_spec, Some(UriSpec::parse("{scheme}://{address}:{port}/v1")));
    assert!(java.enabled);

    // Ours, read by Java's queryForInstances with every field.
    let mut ours = ServiceInstance::new("api", "10.9.8.7", 7000)
        .with_id("rust-1")
        .with_ssl_port(7443)
        .with_payload(json!({"zone": "us-2", "weight": 5}))
        .with_uri_spec("{scheme}://{address}:{port}/v2")
        .with_enabled(false);
    ours.registration_time_utc = 1_600_000_000_456;
    d.register(&ours).await.unwrap();
    let mut lines = curator::run(&server.hosts(), &base, &["discovery-query", "api"]).await;
    lines.sort();
    let want_java = "instance name=api id=java-1 address=10.1.2.3 port=8080 sslPort=8443 \
        payload={weight=3, zone=eu-1} time=1700000000123 type=STATIC \
        uri=https://10.1.2.3:8080/v1 enabled=true";
    let want_ours = "instance name=api id=rust-1 address=10.9.8.7 port=7000 sslPort=7443 \
        payload={weight=5, zone=us-2} time=1600000000456 type=DYNAMIC \
        uri=https://10.9.8.7:7000/v2 enabled=false";
    assert_eq!(lines, [want_java, want_ours]);
    d.close().await.unwrap();
}
