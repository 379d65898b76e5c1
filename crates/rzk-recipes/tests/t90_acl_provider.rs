//! The session's ACL provider (Curator's `ACLProvider`): every node a recipe creates, the
//! containers and parents made for it included, gets the ACL the provider names for its own
//! path, unless the recipe was given its own. With [`CreatorOnlyAclProvider`] and digest
//! credentials, another identity can neither queue for a mutex nor read who holds it.

mod support;

use std::time::Duration;

use rzk_client::{Acl, Acls};
use rzk_recipes::{
    counter::{DistributedAtomicLong, RetryPolicy},
    lock::{InterProcessMutex, MutexOptions},
    session::{AclProvider, CreatorOnlyAclProvider, SessionConfig},
    Error,
};
use support::*;

both_servers! {
    t90_creator_only_keeps_another_identity_out_of_a_mutex => creator_only_mutex;
    t90_each_node_gets_its_paths_acl => per_path;
}

/// Open under `/t/open`, creator-only elsewhere.
struct PerPath;

impl AclProvider for PerPath {
    fn default_acl(&self) -> Vec<Acl> {
        Acls::creator_all().as_slice().to_vec()
    }

    fn acl_for_path(&self, path: &str) -> Vec<Acl> {
        if path.starts_with("/t/open") {
            Acls::anyone_all().as_slice().to_vec()
        } else {
            self.default_acl()
        }
    }
}

fn config(server: &Server, user: &str) -> SessionConfig {
    SessionConfig::new(server.hosts())
        .with_session_timeout(T)
        .with_auth("digest", format!("{user}:secret"))
}

/// The ACL of `path`, as `scheme:id` entries.
async fn acl_of(client: &rzk_client::Client, path: &str) -> Vec<String> {
    let (acl, _) = client.get_acl(path).await.unwrap_or_else(|e| panic!("{path}: {e}"));
    acl.iter().map(|a| format!("{}:{}", a.auth_id().scheme, a.auth_id().id)).collect()
}

async fn creator_only_mutex(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = format!("{}/lock", test_path("t90", kind));
    let alice =
        session_with(&server, config(&server, "alice").with_acl_provider(CreatorOnlyAclProvider))
            .await;
    let bob = session_with(&server, config(&server, "bob")).await;
    let mutex = InterProcessMutex::new(&alice, &path, MutexOptions::default()).unwrap();
    let guard = mutex.acquire().await.unwrap();

    let raw = raw_client(&server).await;
    raw.auth("digest", b"alice:secret").await.unwrap();
    // The mutex's node and the container made for it.
    for node in [path.clone(), parent(&path)] {
        let acl = acl_of(&raw, &node).await;
        assert!(acl.len() == 1 && acl[0].starts_with("digest:alice:"), "{kind:?} {node}: {acl:?}");
    }

    let theirs = InterProcessMutex::new(&bob, &path, MutexOptions::default()).unwrap();
    let refused = tokio::time::timeout(Duration::from_secs(10), theirs.acquire()).await;
    assert!(matches!(refused, Ok(Err(Error::NoAuth { .. }))), "{kind:?}: {refused:?}");
    guard.release().await.unwrap();
    alice.close().await;
    bob.close().await;
}

fn parent(path: &str) -> String {
    path.rsplit_once('/').map(|(p, _)| p.to_string()).unwrap()
}

async fn per_path(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let s = session_with(&server, config(&server, "alice").with_acl_provider(PerPath)).await;
    let n = test_path("t90", kind).replace('/', "-");
    let open = format!("/t/open{n}/a/counter");
    let closed = format!("/t/closed{n}/b/counter");
    for path in [&open, &closed] {
        let c = DistributedAtomicLong::new(&s, path, RetryPolicy::default()).unwrap();
        c.increment().await.unwrap();
    }
    let raw = raw_client(&server).await;
    raw.auth("digest", b"alice:secret").await.unwrap();
    for path in [&open, &closed] {
        // The node and each parent the recipe made, each with its own path's ACL.
        let mut node = path.as_str();
        while node != "/t" {
            let acl = acl_of(&raw, node).await;
            if node.starts_with("/t/open") {
                assert_eq!(acl, ["world:anyone"], "{kind:?} {node}");
            } else {
                assert!(
                    acl.len() == 1 && acl[0].starts_with("digest:alice:"),
                    "{kind:?} {node}: {acl:?}"
                );
            }
            node = node.rsplit_once('/').map(|(p, _)| p).unwrap();
        }
    }
    // A recipe given its own ACL keeps it, where the provider would say creator-only.
    let own = format!("/t/closed{n}/own/counter");
    let c = DistributedAtomicLong::new(&s, &own, RetryPolicy::default())
        .unwrap()
        .with_acls(Acls::anyone_all());
    c.increment().await.unwrap();
    assert_eq!(acl_of(&raw, &own).await, ["world:anyone"], "{kind:?}");
    s.close().await;
}
