//! Bad input for the lock recipes (the mutex, either side of the read-write lock, the
//! semaphore), against rzk and Apache ZooKeeper 3.8: each ends with a clear error or recovers,
//! never hangs, and leaves no node of its own behind.
//!
//! - Foreign nodes: a kazoo `__lock__` node where the recipe queues (a semaphore's internal
//!   mutex's `locks`): the acquire fails with `ForeignNodes` naming it, and again on a second
//!   acquire; only the foreign node is left.
//! - An ACL-denied path (the parent readable only): the acquire fails with `NoAuth` naming the
//!   path, and nothing is created. A path where creating is allowed but deleting is not: the
//!   release fails with `NoAuth` naming the node, the next acquire fails at once (it does not
//!   queue behind its own node for ever), and the node goes with the session.
//! - The lock parent deleted, with every node in it at once, while N hold and one waits (a writer
//!   holding and a reader waiting for the read-write lock): the holders' `lost()` resolves with
//!   `NodeDeleted`, the waiter holds, never more than N at once, and once all release nothing
//!   is left.

mod support;

use std::time::Duration;

use rzk_client::{Acl, Acls, AuthId, CreateMode, Permission};
use rzk_recipes::{session::SessionConfig, Error, LossReason};
use support::checker::Checker;
use support::locks::{self, hold_each, holders, leaves_with, wait_leaves, Locker};
use support::*;

both_servers! {
    t22_foreign_nodes => foreign_nodes;
    t22_acl_denied => acl_denied;
    t22_delete_denied => delete_denied;
    t22_parent_deleted_mutex => parent_deleted_mutex;
    t22_parent_deleted_read_write => parent_deleted_read_write;
    t22_parent_deleted_semaphore => parent_deleted_semaphore;
}

const RECIPES: [&str; 4] = ["mutex", "read", "write", "semaphore:2"];

/// Long enough for any answer on a loaded machine; an acquire that takes longer hangs.
const NO_HANG: Duration = Duration::from_secs(10);

async fn foreign_nodes(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let raw = raw_client(&server).await;
    let s = session(&server).await;
    for recipe in RECIPES {
        let path = test_path("t22", kind);
        let queue = Locker::queue_path(&path, recipe);
        raw.mkdir(&queue, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
        let kazoo = format!("{queue}/{KAZOO}");
        raw.create(&kazoo, b"", &CreateMode::Persistent.with_acls(Acls::anyone_all()))
            .await
            .unwrap();
        let locker = Locker::new(&s, &path, recipe).unwrap();
        for attempt in ["first", "second"] {
            let err = tokio::time::timeout(NO_HANG, locker.acquire())
                .await
                .unwrap_or_else(|_| panic!("{recipe}: the {attempt} acquire hangs"))
                .expect_err("no hold beside a foreign node");
            match &err {
                Error::ForeignNodes { path: p, names } => {
                    assert_eq!((p, names), (&queue, &vec![KAZOO.to_string()]), "{recipe}");
                }
                e => panic!("{recipe}: expected ForeignNodes, got {e:?}"),
            }
            assert!(err.to_string().contains(KAZOO), "{recipe}: {err}");
        }
        let left = kazoo.strip_prefix(&format!("{path}/")).unwrap();
        wait_leaves(&raw, &path, &[left]).await;
    }
    s.close().await;
}

async fn acl_denied(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let raw = raw_client(&server).await;
    let s = session(&server).await;
    for recipe in RECIPES {
        let denied = test_path("t22-denied", kind);
        let (parent, _) = denied.rsplit_once('/').unwrap();
        raw.mkdir(parent, &CreateMode::Persistent.with_acls(Acls::anyone_all()))
            .await
            .unwrap_or(());
        let read_only = CreateMode::Persistent.with_acls(Acls::anyone_read());
        raw.create(&denied, b"", &read_only).await.unwrap();
        let path = format!("{denied}/lock");
        let locker = Locker::new(&s, &path, recipe).unwrap();
        let err = tokio::time::timeout(NO_HANG, locker.acquire())
            .await
            .unwrap_or_else(|_| panic!("{recipe}: the acquire hangs"))
            .expect_err("no hold without the right to create");
        assert!(matches!(&err, Error::NoAuth { .. }), "{recipe}: {err:?}");
        assert!(err.to_string().contains(&path), "{recipe}: the path in {err}");
        assert!(raw.list_children(&denied).await.unwrap().is_empty(), "{recipe}");
    }
    s.close().await;
}

async fn parent_deleted_mutex(kind: Kind) {
    parent_deleted(kind, &["mutex"; 2]).await
}

async fn parent_deleted_read_write(kind: Kind) {
    parent_deleted(kind, &["write", "read"]).await
}

async fn parent_deleted_semaphore(kind: Kind) {
    parent_deleted(kind, &["semaphore:2"; 3]).await
}

/// Every locker but the last holds, the last waits; then the lock path goes.
async fn parent_deleted(kind: Kind, recipes: &[&str]) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t22", kind);
    let raw = raw_client(&server).await;
    let checker = Checker::new();
    let config = SessionConfig::new(server.hosts()).with_session_timeout(T);
    let (_sessions, lockers) = locks::lockers(&config, &path, recipes).await;
    let (waiter, holding) = lockers.split_last().unwrap();
    let holds = hold_each(holding, &checker).await;
    let queued = leaves_with(recipes[0], 1);
    let pending = locks::queue(waiter, &raw, &path, queued).await;
    assert!(!pending.is_finished(), "the waiter waits");
    delete_tree(&raw, &path).await;
    for hold in &holds {
        let reason = tokio::time::timeout(NO_HANG, hold.lost()).await.expect("lost");
        assert_eq!(reason, LossReason::NodeDeleted);
    }
    let hold = tokio::time::timeout(NO_HANG, pending).await.expect("the waiter holds").unwrap();
    let mut hold = hold.unwrap();
    checker.record("waiter", &hold);
    if !hold.is_valid() {
        // Granted on its predecessor's deletion before its own node went (docs/election.md
        // §2.10), the waiter's first hold ends with that node: it acquires again.
        assert_eq!(hold.lost().await, LossReason::NodeDeleted);
        hold.release().await.unwrap();
        hold = tokio::time::timeout(NO_HANG, waiter.acquire()).await.expect("held again").unwrap();
        checker.record("waiter", &hold);
    }
    assert!(hold.is_valid());
    hold.release().await.unwrap();
    for hold in holds {
        hold.release().await.unwrap();
    }
    // A holder learns of the delete by a watch, as the waiter does (docs/election.md §4.1).
    checker.assert_at_most(holders(recipes[0]), Duration::from_millis(250));
    wait_leaves(&raw, &path, &[]).await;
}

/// A lock path whose ACL lets anyone create but not delete: the hold is granted, its release
/// fails with `NoAuth` naming its node, and the next acquire fails at once too, rather than
/// queue behind a node of its own that cannot go. The node goes with its session.
async fn delete_denied(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let raw = raw_client(&server).await;
    let acl = [Acl::new(Permission::READ | Permission::CREATE, AuthId::anyone())];
    let no_delete = CreateMode::Persistent.with_acls(Acls::new(&acl));
    for recipe in RECIPES {
        let s = session(&server).await;
        let path = test_path("t22-nodelete", kind);
        let (parent, _) = path.rsplit_once('/').unwrap();
        raw.mkdir(parent, &CreateMode::Persistent.with_acls(Acls::anyone_all()))
            .await
            .unwrap_or(());
        raw.create(&path, b"", &no_delete).await.unwrap();
        // A semaphore's nodes are one level down, under parents it would create deletable.
        let parents: &[&str] = if holders(recipe) > 1 { &["leases", "locks"] } else { &[] };
        for child in parents {
            raw.create(&format!("{path}/{child}"), b"", &no_delete).await.unwrap();
        }
        let locker = Locker::new(&s, &path, recipe).unwrap();
        let hold = tokio::time::timeout(NO_HANG, locker.acquire()).await.expect("holds").unwrap();
        let node = hold.node_path().to_string();
        let err = tokio::time::timeout(NO_HANG, hold.release())
            .await
            .unwrap_or_else(|_| panic!("{recipe}: the release hangs"))
            .err()
            .unwrap_or_else(|| {
                panic!("{recipe}: the release succeeded, though the delete is denied")
            });
        assert!(matches!(&err, Error::NoAuth { .. }), "{recipe}: {err:?}");
        assert!(err.to_string().contains(&node), "{recipe}: the node in {err}");
        let err = tokio::time::timeout(NO_HANG, locker.acquire())
            .await
            .unwrap_or_else(|_| panic!("{recipe}: the next acquire hangs"))
            .expect_err("its own node cannot go");
        assert!(matches!(&err, Error::NoAuth { .. }), "{recipe}: {err:?}");
        s.close().await;
        wait_leaves(&raw, &path, parents).await;
    }
}
