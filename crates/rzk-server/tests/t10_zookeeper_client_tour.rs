//! A tour of the `zookeeper-client` crate's whole API against an in-process rzk server.
//!
//! Each test starts its own server, so tests are independent and can run in parallel.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rzk_server::TestServer;
use rzk_testkit::wait::within;
use zk::{Acls, AddWatchMode, CreateMode, EventType, LockOptions, LockPrefix};
use zookeeper_client as zk;

const SUPER_DIGEST: &str = "super:D/InIHSb7yEEbrWz8b9l71RjZJU=";

fn server() -> TestServer {
    TestServer::builder()
        .tick_ms(100)
        .extended_types(true)
        .super_digest(SUPER_DIGEST)
        .container_check_interval_ms(100)
        .start()
        .expect("test server")
}

async fn connect(s: &TestServer) -> zk::Client {
    support::connect(s, Duration::from_millis(2000), false).await
}

fn persistent() -> zk::CreateOptions<'static> {
    CreateMode::Persistent.with_acls(Acls::anyone_all())
}

/// How long a test waits for an event or a state change.
const WAIT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn session_timeout_is_negotiated_into_bounds() {
    let s = server();
    for (asked, granted) in [(1, 200), (1_000, 1_000), (1_000_000, 2_000)] {
        let c = zk::Client::connector()
            .with_session_timeout(Duration::from_millis(asked))
            .connect(&s.connect_string())
            .await
            .unwrap();
        assert_eq!(c.session_timeout(), Duration::from_millis(granted), "asked {asked}");
    }
}

#[tokio::test]
async fn crud_and_stat_fields() {
    let s = server();
    let c = connect(&s).await;
    let (stat, _) = c.create("/a", b"hello", &persistent()).await.unwrap();
    assert_eq!((stat.version, stat.cversion, stat.data_length, stat.num_children), (0, 0, 5, 0));
    assert_eq!(stat.czxid, stat.mzxid);
    assert_eq!(stat.czxid, stat.pzxid);
    assert_eq!(stat.ephemeral_owner, 0);

    let (data, got) = c.get_data("/a").await.unwrap();
    assert_eq!(data, b"hello");
    assert_eq!(got, stat);

    let set = c.set_data("/a", b"bye", Some(0)).await.unwrap();
    assert_eq!(set.version, 1);
    assert!(set.mzxid > stat.mzxid);
    assert_eq!(set.czxid, stat.czxid);
    assert_eq!(c.set_data("/a", b"x", Some(0)).await, Err(zk::Error::BadVersion));

    // cversion counts child creates and deletes; pzxid follows the last one.
    c.create("/a/b", b"", &persistent()).await.unwrap();
    c.create("/a/c", b"", &persistent()).await.unwrap();
    c.delete("/a/b", None).await.unwrap();
    let (children, parent) = c.get_children("/a").await.unwrap();
    assert_eq!(children, ["c"]);
    assert_eq!((parent.cversion, parent.num_children), (3, 1));
    assert!(parent.pzxid > set.mzxid);
    assert_eq!(c.list_children("/a").await.unwrap(), ["c"]);

    assert_eq!(c.delete("/a", None).await, Err(zk::Error::NotEmpty));
    assert_eq!(c.delete("/a/c", Some(7)).await, Err(zk::Error::BadVersion));
    c.delete("/a/c", Some(0)).await.unwrap();
    c.delete("/a", Some(1)).await.unwrap();
    assert_eq!(c.check_stat("/a").await.unwrap(), None);
    assert_eq!(c.get_data("/a").await, Err(zk::Error::NoNode));
    assert_eq!(c.create("/x/y", b"", &persistent()).await, Err(zk::Error::NoNode));
    c.create("/x", b"", &persistent()).await.unwrap();
    assert_eq!(c.create("/x", b"", &persistent()).await, Err(zk::Error::NodeExists));
    assert!(matches!(c.delete("/zookeeper", None).await, Err(zk::Error::BadArguments(_))));
}

#[tokio::test]
async fn node_modes() {
    let s = server();
    let c = connect(&s).await;
    c.create("/m", b"", &persistent()).await.unwrap();

    let (_, seq0) = c
        .create("/m/s-", b"", &CreateMode::PersistentSequential.with_acls(Acls::anyone_all()))
        .await
        .unwrap();
    let (_, seq1) = c
        .create("/m/e-", b"", &CreateMode::EphemeralSequential.with_acls(Acls::anyone_all()))
        .await
        .unwrap();
    assert_eq!((seq0.into_i64(), seq1.into_i64()), (0, 1));
    assert_eq!(c.list_children("/m").await.unwrap().len(), 2);
    let mut names = c.list_children("/m").await.unwrap();
    names.sort();
    assert_eq!(names, ["e-0000000001", "s-0000000000"]);

    let (stat, _) = c
        .create("/m/eph", b"", &CreateMode::Ephemeral.with_acls(Acls::anyone_all()))
        .await
        .unwrap();
    assert_eq!(stat.ephemeral_owner, c.session_id().0);
    assert_eq!(
        c.create("/m/eph/child", b"", &persistent()).await,
        Err(zk::Error::NoChildrenForEphemerals)
    );
    let mut ephemerals = c.list_ephemerals("/").await.unwrap();
    ephemerals.sort();
    assert_eq!(ephemerals, ["/m/e-0000000001", "/m/eph"]);
    assert_eq!(c.list_ephemerals("/m/eph").await.unwrap(), ["/m/eph"]);
    assert_eq!(c.count_descendants_number("/m").await.unwrap(), 3);

    // Containers show ephemeralOwner 0 and are reaped once they have had and lost children.
    let (stat, _) =
        c.create("/box", b"", &CreateMode::Container.with_acls(Acls::anyone_all())).await.unwrap();
    assert_eq!(stat.ephemeral_owner, 0);
    c.create("/box/x", b"", &persistent()).await.unwrap();
    c.delete("/box/x", None).await.unwrap();
    let gone = within(WAIT, "container reaping", async {
        while c.check_stat("/box").await.unwrap().is_some() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    gone.await;

    // TTL nodes expire when unmodified for longer than their TTL.
    let ttl =
        CreateMode::Persistent.with_acls(Acls::anyone_all()).with_ttl(Duration::from_millis(200));
    let (stat, _) = c.create("/ttl", b"", &ttl).await.unwrap();
    assert_eq!(stat.ephemeral_owner, 0);
    let started = Instant::now();
    within(WAIT, "TTL expiry", async {
        while c.check_stat("/ttl").await.unwrap().is_some() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(started.elapsed() >= Duration::from_millis(150), "expired too early");
}

#[tokio::test]
async fn one_shot_watches_fire_once_in_order() {
    let s = server();
    let c = connect(&s).await;
    let other = connect(&s).await;

    let (_, created) = c.check_and_watch_stat("/w").await.unwrap();
    other.create("/w", b"1", &persistent()).await.unwrap();
    let ev = within(WAIT, "NodeCreated", created.changed()).await;
    assert_eq!((ev.event_type, ev.path.as_str()), (EventType::NodeCreated, "/w"));

    let (_, _, data_changed) = c.get_and_watch_data("/w").await.unwrap();
    let (_, _, children_changed) = c.get_and_watch_children("/w").await.unwrap();
    other.set_data("/w", b"2", None).await.unwrap();
    let ev = within(WAIT, "NodeDataChanged", data_changed.changed()).await;
    assert_eq!(ev.event_type, EventType::NodeDataChanged);
    other.create("/w/kid", b"", &persistent()).await.unwrap();
    let ev = within(WAIT, "NodeChildrenChanged", children_changed.changed()).await;
    assert_eq!((ev.event_type, ev.path.as_str()), (EventType::NodeChildrenChanged, "/w"));

    let (_, _, deleted) = c.get_and_watch_data("/w/kid").await.unwrap();
    other.delete("/w/kid", None).await.unwrap();
    let ev = within(WAIT, "NodeDeleted", deleted.changed()).await;
    assert_eq!(ev.event_type, EventType::NodeDeleted);
}

#[tokio::test]
async fn persistent_and_recursive_watches() {
    let s = server();
    let c = connect(&s).await;
    c.create("/p", b"", &persistent()).await.unwrap();
    let mut persistent_w = c.watch("/p", AddWatchMode::Persistent).await.unwrap();
    let mut recursive_w = c.watch("/p", AddWatchMode::PersistentRecursive).await.unwrap();

    c.create("/p/a", b"", &persistent()).await.unwrap();
    c.create("/p/a/b", b"", &persistent()).await.unwrap();
    c.set_data("/p", b"x", None).await.unwrap();

    let mut seen = Vec::new();
    for _ in 0..2 {
        let ev = within(WAIT, "persistent event", persistent_w.changed()).await;
        seen.push((ev.event_type, ev.path));
    }
    assert_eq!(
        seen,
        [
            (EventType::NodeChildrenChanged, "/p".to_string()),
            (EventType::NodeDataChanged, "/p".into())
        ]
    );
    let mut seen = Vec::new();
    for _ in 0..3 {
        let ev = within(WAIT, "recursive event", recursive_w.changed()).await;
        seen.push((ev.event_type, ev.path));
    }
    assert_eq!(
        seen,
        [
            (EventType::NodeCreated, "/p/a".to_string()),
            (EventType::NodeCreated, "/p/a/b".into()),
            (EventType::NodeDataChanged, "/p".into()),
        ]
    );
    // Dropping a persistent watcher removes it on the server (removeWatches).
    drop(recursive_w);
    drop(persistent_w);
    c.set_data("/p", b"y", None).await.unwrap();
    c.sync("/p").await.unwrap();
}

#[tokio::test]
async fn multi_read_and_write() {
    let s = server();
    let c = connect(&s).await;
    let mut w = c.new_multi_writer();
    w.add_create("/t", b"", &persistent()).unwrap();
    w.add_create("/t/1", b"one", &persistent()).unwrap();
    w.add_set_data("/t/1", b"uno", Some(0)).unwrap();
    w.add_check_version("/t", 0).unwrap();
    let results = w.commit().await.unwrap();
    assert_eq!(results.len(), 4);
    assert!(matches!(&results[0], zk::MultiWriteResult::Create { path, .. } if path == "/t"));
    assert!(matches!(&results[2], zk::MultiWriteResult::SetData { stat } if stat.version == 1));
    assert!(matches!(results[3], zk::MultiWriteResult::Check));
    let (_, t1) = c.get_data("/t/1").await.unwrap();
    let (_, t) = c.get_data("/t").await.unwrap();
    assert_eq!(t1.czxid, t.czxid, "all ops of a multi share one zxid");

    // A failing op rolls everything back and names the failing index.
    let mut w = c.new_multi_writer();
    w.add_create("/t/2", b"", &persistent()).unwrap();
    w.add_delete("/t/1", Some(5)).unwrap();
    match w.commit().await {
        Err(zk::MultiWriteError::OperationFailed { index, source }) => {
            assert_eq!((index, source), (1, zk::Error::BadVersion));
        }
        other => panic!("expected a failed op, got {other:?}"),
    }
    assert_eq!(c.check_stat("/t/2").await.unwrap(), None);

    let mut r = c.new_multi_reader();
    r.add_get_data("/t/1").unwrap();
    r.add_get_children("/t").unwrap();
    r.add_get_data("/nope").unwrap();
    let results = r.commit().await.unwrap();
    assert!(matches!(&results[0], zk::MultiReadResult::Data { data, .. } if data == b"uno"));
    assert!(
        matches!(&results[1], zk::MultiReadResult::Children { children } if children == &["1"])
    );
    assert!(matches!(&results[2], zk::MultiReadResult::Error { err: zk::Error::NoNode }));
}

#[tokio::test]
async fn acls_and_auth() {
    let s = server();
    let owner = zk::Client::connector()
        .with_auth("digest", b"alice:secret")
        .connect(&s.connect_string())
        .await
        .unwrap();
    let stranger = connect(&s).await;
    let creator_all = CreateMode::Persistent.with_acls(Acls::creator_all());
    owner.create("/secret", b"s", &creator_all).await.unwrap();
    let (acl, stat) = owner.get_acl("/secret").await.unwrap();
    assert_eq!(acl.len(), 1);
    assert_eq!(acl[0].scheme(), "digest");
    assert!(acl[0].id().starts_with("alice:"));
    assert_eq!(stat.aversion, 0);
    assert_eq!(stranger.get_data("/secret").await, Err(zk::Error::NoAuth));
    assert_eq!(stranger.set_data("/secret", b"x", None).await, Err(zk::Error::NoAuth));

    let users = owner.list_auth_users().await.unwrap();
    assert!(users.iter().any(|u| u.scheme() == "digest" && u.user() == "alice"), "{users:?}");
    assert!(users.iter().any(|u| u.scheme() == "ip"), "{users:?}");

    let stat = owner.set_acl("/secret", &Acls::anyone_read(), Some(0)).await.unwrap();
    assert_eq!(stat.aversion, 1);
    assert_eq!(stranger.get_data("/secret").await.unwrap().0, b"s");
    assert_eq!(stranger.set_data("/secret", b"x", None).await, Err(zk::Error::NoAuth));

    // The super user passes every check.
    let root = zk::Client::connector()
        .with_auth("digest", b"super:test")
        .connect(&s.connect_string())
        .await
        .unwrap();
    root.set_data("/secret", b"root", None).await.unwrap();

    let (config, _) = stranger.get_config().await.unwrap();
    assert!(config.is_empty());
    stranger.sync("/secret").await.unwrap();
}

#[tokio::test]
async fn lock_recipe_is_mutually_exclusive() {
    let s = server();
    let holders = Arc::new(AtomicUsize::new(0));
    let entered = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..5 {
        let cs = s.connect_string();
        let holders = holders.clone();
        let entered = entered.clone();
        tasks.push(tokio::spawn(async move {
            let c = zk::Client::connect(&cs).await.unwrap();
            for _ in 0..3 {
                let options = LockOptions::new(Acls::anyone_all())
                    .with_ancestor_options(CreateMode::Persistent.with_acls(Acls::anyone_all()))
                    .unwrap();
                let lock = c
                    .lock(
                        LockPrefix::new_curator("/locks/l", "lock-").unwrap(),
                        format!("{i}").as_bytes(),
                        options,
                    )
                    .await
                    .unwrap();
                assert_eq!(holders.fetch_add(1, Ordering::SeqCst), 0, "two holders at once");
                // Guarded writes succeed while the lock is held.
                lock.set_data("/locks", format!("{i}").as_bytes(), None).await.unwrap();
                tokio::time::sleep(Duration::from_millis(5)).await;
                holders.fetch_sub(1, Ordering::SeqCst);
                entered.fetch_add(1, Ordering::SeqCst);
                drop(lock);
            }
        }));
    }
    for t in tasks {
        within(WAIT, "lock contenders", t).await.unwrap();
    }
    assert_eq!(entered.load(Ordering::SeqCst), 15);
}

#[tokio::test]
async fn close_and_expiry_remove_ephemerals() {
    let s = server();
    let watcher = connect(&s).await;
    let eph = CreateMode::Ephemeral.with_acls(Acls::anyone_all());

    // Close: the ephemeral goes at once.
    let c = connect(&s).await;
    c.create("/closing", b"", &eph).await.unwrap();
    let (_, _, w) = watcher.get_and_watch_data("/closing").await.unwrap();
    drop(c);
    assert_eq!(
        within(WAIT, "NodeDeleted on close", w.changed()).await.event_type,
        EventType::NodeDeleted
    );

    // Expiry: a detached client vanishes without closing; the server expires it after the
    // negotiated timeout, precisely, not rounded up to ticks.
    let c = support::connect(&s, Duration::from_millis(600), true).await;
    c.create("/expiring", b"", &eph).await.unwrap();
    let (_, _, w) = watcher.get_and_watch_data("/expiring").await.unwrap();
    let dropped = Instant::now();
    drop(c);
    let ev = within(WAIT, "NodeDeleted on expiry", w.changed()).await;
    let waited = dropped.elapsed();
    assert_eq!(ev.event_type, EventType::NodeDeleted);
    assert!(waited >= Duration::from_millis(500), "expired early: {waited:?}");
    assert!(waited < Duration::from_millis(900), "expired late: {waited:?}");
}

#[tokio::test]
async fn session_resumes_on_a_new_connection() {
    let s = server();
    let c = support::connect(&s, Duration::from_millis(2000), true).await;
    c.create("/mine", b"", &CreateMode::Ephemeral.with_acls(Acls::anyone_all())).await.unwrap();
    let session = c.session().clone();
    let id = c.session_id();
    drop(c);
    let resumed =
        zk::Client::connector().with_session(session).connect(&s.connect_string()).await.unwrap();
    assert_eq!(resumed.session_id(), id);
    let (_, stat) = resumed.get_data("/mine").await.unwrap();
    assert_eq!(stat.ephemeral_owner, id.0);
}
