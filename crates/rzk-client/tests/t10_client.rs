//! The client against both servers: node operations and their errors, watches of every
//! kind, multi, chroot, credentials, and a session that outlives its connection or expires.

use std::time::Duration;

use rzk_client::{
    Acl, Acls, AddWatchMode, AuthId, Client, CreateMode, Error, EventType, MultiReadResult,
    MultiWriteError, MultiWriteResult, Permission, SessionState, PERSISTENT_WATCH_BACKLOG,
};
use rzk_testkit::proxy::Proxy;
use rzk_testkit::server::AnyServer;
use rzk_testkit::wait::within;
use rzk_testkit::Kind;

/// Apache ZooKeeper too only in the `zookeeper-tests` tier (it needs Java and ZooKeeper).
#[cfg(feature = "zookeeper-tests")]
const KINDS: [Kind; 2] = [Kind::Rzk, Kind::ZooKeeper];
#[cfg(not(feature = "zookeeper-tests"))]
const KINDS: [Kind; 1] = [Kind::Rzk];
const TICK_MS: u32 = 200;
const LIMIT: Duration = Duration::from_secs(20);

fn open() -> rzk_client::CreateOptions<'static> {
    CreateMode::Persistent.with_acls(Acls::anyone_all())
}

async fn connect(hosts: &str) -> Client {
    let c = Client::connector().with_session_timeout(Duration::from_secs(4));
    within(LIMIT, "connect", c.connect(hosts)).await.expect("connect")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_and_their_errors() {
    for kind in KINDS {
        let server = AnyServer::start(kind, TICK_MS);
        let c = connect(&server.hosts()).await;
        let (stat, seq) = c.create("/a", b"one", &open()).await.unwrap();
        assert_eq!((stat.version, seq.into_i64()), (0, -1), "{kind:?}");
        assert_eq!(c.create("/a", b"", &open()).await, Err(Error::NodeExists), "{kind:?}");
        assert_eq!(c.get_data("/a").await.unwrap().0, b"one");
        assert_eq!(c.set_data("/a", b"two", Some(7)).await, Err(Error::BadVersion));
        let stat = c.set_data("/a", b"two", Some(0)).await.unwrap();
        assert_eq!(stat.version, 1);
        let seq_opts = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
        let (_, s1) = c.create("/a/q-", b"", &seq_opts).await.unwrap();
        let (_, s2) = c.create("/a/q-", b"", &seq_opts).await.unwrap();
        assert_eq!(s2.into_i64(), s1.into_i64() + 1, "{kind:?}");
        let mut kids = c.list_children("/a").await.unwrap();
        kids.sort();
        assert_eq!(kids, [format!("q-{s1}"), format!("q-{s2}")], "{kind:?}");
        let (_, stat) = c.get_children("/a").await.unwrap();
        assert_eq!(stat.num_children, 2);
        assert_eq!(c.delete("/a", None).await, Err(Error::NotEmpty));
        assert_eq!(c.delete("/missing", None).await, Err(Error::NoNode));
        assert_eq!(c.check_stat("/missing").await, Ok(None));
        assert!(c.check_stat("/a").await.unwrap().is_some());
        assert_eq!(c.count_descendants_number("/a").await, Ok(2));
        assert!(matches!(c.get_data("no-slash").await, Err(Error::BadArguments(_))));
        c.mkdir("/m/n/o", &open()).await.unwrap();
        c.mkdir("/m/n/o", &open()).await.unwrap();
        c.mkdir("/m/n/o/q", &open()).await.unwrap();
        assert!(c.check_stat("/m/n/o/q").await.unwrap().is_some(), "{kind:?}");
        let e = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
        assert!(matches!(c.mkdir("/z", &e).await, Err(Error::BadArguments(_))));
        let ttl = open().with_ttl(Duration::from_secs(60));
        c.create("/t", b"", &ttl).await.unwrap();
        assert!(c.check_stat("/t").await.unwrap().is_some(), "{kind:?}");
        let ttl_ephemeral =
            CreateMode::Ephemeral.with_acls(Acls::anyone_all()).with_ttl(Duration::from_secs(1));
        assert!(matches!(c.create("/u", b"", &ttl_ephemeral).await, Err(Error::BadArguments(_))));
        c.sync("/").await.unwrap();
        // Requests made one after another are answered in that order.
        let futs: Vec<_> = (0..200).map(|i| c.create(&format!("/m/p{i}"), b"", &open())).collect();
        for f in futs {
            f.await.unwrap();
        }
        assert_eq!(c.list_children("/m").await.unwrap().len(), 201);
        c.close().await;
        assert_eq!(c.state(), SessionState::Closed);
        assert_eq!(c.get_data("/a").await, Err(Error::ClientClosed));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shot_watches_fire_once_per_kind() {
    for kind in KINDS {
        let server = AnyServer::start(kind, TICK_MS);
        let (c, other) = (connect(&server.hosts()).await, connect(&server.hosts()).await);
        let (stat, created) = c.check_and_watch_stat("/w").await.unwrap();
        assert!(stat.is_none());
        other.create("/w", b"", &open()).await.unwrap();
        let ev = within(LIMIT, "created", created.changed()).await;
        assert_eq!((ev.event_type, ev.path.as_str()), (EventType::NodeCreated, "/w"), "{kind:?}");
        let (_, _, data) = c.get_and_watch_data("/w").await.unwrap();
        let (_, _, data2) = c.get_and_watch_data("/w").await.unwrap();
        let (_, children) = c.list_and_watch_children("/w").await.unwrap();
        other.set_data("/w", b"x", None).await.unwrap();
        assert_eq!(
            within(LIMIT, "data", data.changed()).await.event_type,
            EventType::NodeDataChanged
        );
        assert_eq!(
            within(LIMIT, "data2", data2.changed()).await.event_type,
            EventType::NodeDataChanged
        );
        other.create("/w/c", b"", &open()).await.unwrap();
        let ev = within(LIMIT, "children", children.changed()).await;
        assert_eq!((ev.event_type, ev.path.as_str()), (EventType::NodeChildrenChanged, "/w"));
        let (_, gone) = c.check_and_watch_stat("/w/c").await.unwrap();
        other.delete("/w/c", None).await.unwrap();
        assert_eq!(
            within(LIMIT, "deleted", gone.changed()).await.event_type,
            EventType::NodeDeleted
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persistent_recursive_watch_sees_the_subtree() {
    for kind in KINDS {
        let server = AnyServer::start(kind, TICK_MS);
        let (c, other) = (connect(&server.hosts()).await, connect(&server.hosts()).await);
        c.create("/p", b"", &open()).await.unwrap();
        let mut w = c.watch("/p", AddWatchMode::PersistentRecursive).await.unwrap();
        other.create("/p/x", b"", &open()).await.unwrap();
        other.set_data("/p/x", b"1", None).await.unwrap();
        other.delete("/p/x", None).await.unwrap();
        let mut seen = Vec::new();
        for _ in 0..3 {
            let ev = within(LIMIT, "persistent", w.changed()).await;
            seen.push((ev.event_type, ev.path));
        }
        let p = "/p/x".to_owned();
        assert_eq!(
            seen,
            [
                (EventType::NodeCreated, p.clone()),
                (EventType::NodeDataChanged, p.clone()),
                (EventType::NodeDeleted, p)
            ],
            "{kind:?}"
        );
        c.close().await;
        assert_eq!(within(LIMIT, "end", w.changed()).await.event_type, EventType::Session);
    }
}

/// A persistent watcher that is not read holds a bounded backlog, then says it lagged, and
/// delivers again once read empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_watcher_that_falls_behind_is_told_it_lagged() {
    const BATCH: usize = 1000;
    for kind in KINDS {
        let server = AnyServer::start(kind, TICK_MS);
        let c = connect(&server.hosts()).await;
        c.create("/lag", b"", &open()).await.unwrap();
        let mut w = c.watch("/lag", AddWatchMode::Persistent).await.unwrap();
        // The session's own writes: each event arrives before the reply of its write.
        for _ in 0..PERSISTENT_WATCH_BACKLOG.div_ceil(BATCH) + 1 {
            let mut m = c.new_multi_writer();
            for _ in 0..BATCH {
                m.add_set_data("/lag", b"", None).unwrap();
            }
            within(LIMIT, "writes", m.commit()).await.unwrap();
        }
        let mut seen = Vec::new();
        for _ in 0..PERSISTENT_WATCH_BACKLOG {
            seen.push(within(LIMIT, "backlog", w.changed()).await.event_type);
        }
        let changed = seen.iter().filter(|t| **t == EventType::NodeDataChanged).count();
        assert_eq!(changed, PERSISTENT_WATCH_BACKLOG - 1, "{kind:?}");
        assert_eq!(seen.last(), Some(&EventType::Lagged), "{kind:?}");
        c.set_data("/lag", b"after", None).await.unwrap();
        let ev = within(LIMIT, "after", w.changed()).await;
        assert_eq!((ev.event_type, ev.path.as_str()), (EventType::NodeDataChanged, "/lag"));
        c.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_is_all_or_nothing() {
    for kind in KINDS {
        let server = AnyServer::start(kind, TICK_MS);
        let c = connect(&server.hosts()).await;
        c.create("/v", b"", &open()).await.unwrap();
        let mut w = c.new_multi_writer();
        w.add_check_version("/v", 0).unwrap();
        w.add_create("/v/a", b"", &open()).unwrap();
        w.add_set_data("/v", b"s", Some(0)).unwrap();
        let r = w.commit().await.unwrap();
        assert_eq!(r[0], MultiWriteResult::Check);
        assert!(
            matches!(&r[1], MultiWriteResult::Create { path, .. } if path == "/v/a"),
            "{kind:?}"
        );
        let mut w = c.new_multi_writer();
        w.add_create("/v/b", b"", &open()).unwrap();
        w.add_create("/v/a", b"", &open()).unwrap();
        let e = w.commit().await.unwrap_err();
        assert_eq!(
            e,
            MultiWriteError::OperationFailed { index: 1, source: Error::NodeExists },
            "{kind:?}"
        );
        assert_eq!(c.check_stat("/v/b").await, Ok(None), "nothing applied");
        let mut r = c.new_multi_reader();
        r.add_get_data("/v").unwrap();
        r.add_get_children("/missing").unwrap();
        let got = r.commit().await.unwrap();
        assert!(matches!(&got[0], MultiReadResult::Data { data, .. } if data == b"s"));
        assert_eq!(got[1], MultiReadResult::Error { err: Error::NoNode }, "{kind:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chroot_and_credentials() {
    for kind in KINDS {
        let server = AnyServer::start(kind, TICK_MS);
        let root = connect(&server.hosts()).await;
        root.create("/app", b"", &open()).await.unwrap();
        let c = connect(&format!("{}/app", server.hosts())).await;
        c.create("/k", b"v", &open()).await.unwrap();
        assert_eq!(root.get_data("/app/k").await.unwrap().0, b"v", "{kind:?}");
        let (_, w) = c.check_and_watch_stat("/k").await.unwrap();
        root.delete("/app/k", None).await.unwrap();
        assert_eq!(within(LIMIT, "chroot event", w.changed()).await.path, "/k", "{kind:?}");

        let owner = Client::connector().with_auth("digest", "alice:secret");
        let hosts = server.hosts();
        let owner = within(LIMIT, "connect", owner.connect(&hosts)).await.unwrap();
        let mine = CreateMode::Persistent.with_acls(Acls::creator_all());
        owner.create("/secret", b"s", &mine).await.unwrap();
        assert_eq!(root.get_data("/secret").await, Err(Error::NoAuth), "{kind:?}");
        root.auth("digest", b"alice:secret").await.unwrap();
        assert_eq!(root.get_data("/secret").await.unwrap().0, b"s");
        let read_only = [Acl::new(Permission::READ, AuthId::anyone())];
        root.set_acl("/app", &read_only, None).await.unwrap();
        assert_eq!(root.get_acl("/app").await.unwrap().0, read_only);
        assert_eq!(root.create("/app/z", b"", &open()).await, Err(Error::NoAuth));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_outlives_its_connection_and_keeps_its_watches() {
    for kind in KINDS {
        let server = AnyServer::start(kind, TICK_MS);
        let proxy = Proxy::start(server.hosts());
        let c = connect(&proxy.hosts()).await;
        let other = connect(&server.hosts()).await;
        let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
        c.create("/e", b"", &ephemeral).await.unwrap();
        other.create("/r", b"", &open()).await.unwrap();
        let (_, _, w) = c.get_and_watch_data("/r").await.unwrap();
        let mut states = c.state_watcher();
        proxy.cut();
        assert_eq!(
            within(LIMIT, "disconnected", states.changed()).await,
            SessionState::Disconnected
        );
        // A change while disconnected fires on reconnect (SetWatches with the last zxid).
        other.set_data("/r", b"while away", None).await.unwrap();
        let queued = c.get_data("/r");
        let mut w2 = c.new_multi_writer();
        w2.add_set_data("/r", b"never sent", None).unwrap();
        let refused = within(Duration::from_secs(1), "commit_connected", w2.commit_connected());
        assert_eq!(
            refused.await,
            Err(MultiWriteError::RequestFailed { source: Error::ConnectionLoss }),
            "{kind:?}"
        );
        proxy.heal();
        assert_eq!(
            within(LIMIT, "reconnected", states.changed()).await,
            SessionState::SyncConnected
        );
        let ev = within(LIMIT, "watch after reconnect", w.changed()).await;
        assert_eq!(
            (ev.event_type, ev.path.as_str()),
            (EventType::NodeDataChanged, "/r"),
            "{kind:?}"
        );
        assert_eq!(
            queued.await.unwrap().0,
            b"while away",
            "a request made while disconnected is sent"
        );
        assert_eq!(c.get_data("/r").await.unwrap().0, b"while away", "commit_connected: unsent");
        assert!(other.check_stat("/e").await.unwrap().is_some(), "same session: ephemeral kept");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_ends_every_wait() {
    for kind in KINDS {
        let server = AnyServer::start(kind, TICK_MS);
        let proxy = Proxy::start(server.hosts());
        let c = Client::connector().with_session_timeout(Duration::from_millis(800));
        let c = within(LIMIT, "connect", c.connect(&proxy.hosts())).await.unwrap();
        let other = connect(&server.hosts()).await;
        let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
        c.create("/x", b"", &ephemeral).await.unwrap();
        let (_, w) = c.check_and_watch_stat("/nothing").await.unwrap();
        let mut states = c.state_watcher();
        proxy.blackhole();
        rzk_testkit::wait::eventually(LIMIT, "ephemeral gone", || {
            std::thread::sleep(Duration::from_millis(100));
            futures_block(other.check_stat("/x")).unwrap().is_none()
        })
        .await;
        proxy.heal();
        loop {
            let s = within(LIMIT, "expired", states.changed()).await;
            if s.is_terminated() {
                assert_eq!(s, SessionState::Expired, "{kind:?}");
                break;
            }
        }
        let ev = within(LIMIT, "watch ends", w.changed()).await;
        assert_eq!((ev.event_type, ev.session_state), (EventType::Session, SessionState::Expired));
        assert_eq!(c.get_data("/").await, Err(Error::SessionExpired), "{kind:?}");
    }
}

/// Runs a future to completion from a synchronous check.
fn futures_block<F: std::future::Future>(f: F) -> F::Output {
    tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(f))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_while_disconnected_has_ended_the_session_when_it_returns() {
    for kind in KINDS {
        let server = AnyServer::start(kind, TICK_MS);
        let proxy = Proxy::start(server.hosts());
        let c = connect(&proxy.hosts()).await;
        let mut states = c.state_watcher();
        proxy.cut();
        assert_eq!(
            within(LIMIT, "disconnected", states.changed()).await,
            SessionState::Disconnected
        );
        within(LIMIT, "close", c.close()).await;
        assert_eq!(c.state(), SessionState::Closed, "{kind:?}");
        assert_eq!(c.get_data("/").await, Err(Error::ClientClosed), "{kind:?}");
    }
}
