//! removeWatches against both servers: each kind of removal, its event, the server's side
//! (a second removal finds nothing there), a dropped persistent watcher, and a local removal
//! made while the session has no connection.

use std::time::Duration;

use rzk_client::{
    Acls, AddWatchMode, Client, CreateMode, Error, EventType, SessionState, WatcherType,
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

async fn connect(hosts: &str) -> Client {
    let c = Client::connector().with_session_timeout(Duration::from_secs(4));
    within(LIMIT, "connect", c.connect(hosts)).await.expect("connect")
}

async fn node(c: &Client, path: &str) {
    c.create(path, b"", &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
}

/// Each watcher hears its own removal; the server's watch is gone too, so removing again
/// answers NoWatcher; a removal of another kind leaves a watch alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_kind_of_removal_ends_its_watchers_here_and_on_the_server() {
    for kind in KINDS {
        let server = AnyServer::start(kind, TICK_MS);
        let c = connect(&server.hosts()).await;
        node(&c, "/n").await;
        assert_eq!(c.remove_watches("/n", WatcherType::Any).await, Err(Error::NoWatcher));

        let (_, _, data) = c.get_and_watch_data("/n").await.unwrap();
        let (_, children) = c.list_and_watch_children("/n").await.unwrap();
        c.remove_watches("/n", WatcherType::Children).await.unwrap();
        let ev = within(LIMIT, "child removal", children.changed()).await;
        assert_eq!((ev.event_type, ev.path.as_str()), (EventType::ChildWatchRemoved, "/n"));
        let again = c.remove_watches("/n", WatcherType::Children).await;
        assert_eq!(again, Err(Error::NoWatcher), "{kind:?}: the server's child watch is gone");
        c.set_data("/n", b"1", None).await.unwrap();
        let ev = within(LIMIT, "data watch still set", data.changed()).await;
        assert_eq!(ev.event_type, EventType::NodeDataChanged, "{kind:?}");

        let (_, missing) = c.check_and_watch_stat("/missing").await.unwrap();
        c.remove_watches("/missing", WatcherType::Data).await.unwrap();
        let ev = within(LIMIT, "exists removal", missing.changed()).await;
        assert_eq!(ev.event_type, EventType::DataWatchRemoved, "{kind:?}");

        let mut persistent = c.watch("/n", AddWatchMode::Persistent).await.unwrap();
        c.remove_watches("/n", WatcherType::Any).await.unwrap();
        for _ in 0..2 {
            let ev = within(LIMIT, "persistent removal", persistent.changed()).await;
            assert_eq!(ev.event_type, EventType::PersistentWatchRemoved, "{kind:?}");
        }
        let again = c.remove_watches("/n", WatcherType::Any).await;
        assert_eq!(again, Err(Error::NoWatcher), "{kind:?}: the persistent watch is gone");
    }
}

/// Dropping the last persistent watcher of a path removes the server's watch; dropping one
/// of two does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_persistent_watcher_stops_the_servers_events() {
    for kind in KINDS {
        let server = AnyServer::start(kind, TICK_MS);
        let c = connect(&server.hosts()).await;
        node(&c, "/p").await;
        let first = c.watch("/p", AddWatchMode::PersistentRecursive).await.unwrap();
        let mut second = c.watch("/p", AddWatchMode::PersistentRecursive).await.unwrap();
        drop(first);
        c.set_data("/p", b"1", None).await.unwrap();
        let ev = within(LIMIT, "the other watcher", second.changed()).await;
        assert_eq!(ev.event_type, EventType::NodeDataChanged, "{kind:?}");
        drop(second);
        // The drop reaches the session task before this request, which then finds no watch.
        let left = c.remove_watches("/p", WatcherType::Any).await;
        assert_eq!(left, Err(Error::NoWatcher), "{kind:?}: the drop removed the server's watch");
    }
}

/// With no connection, a local removal is done at once; the reconnect does not set the
/// removed watch again, and the watch kept beside it still fires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_removal_needs_no_connection() {
    for kind in KINDS {
        let server = AnyServer::start(kind, TICK_MS);
        let proxy = Proxy::start(server.hosts());
        let c = connect(&proxy.hosts()).await;
        let other = connect(&server.hosts()).await;
        node(&c, "/l").await;
        let mut removed = c.watch("/l", AddWatchMode::Persistent).await.unwrap();
        node(&c, "/k").await;
        let (_, _, kept) = c.get_and_watch_data("/k").await.unwrap();
        let mut states = c.state_watcher();
        proxy.cut();
        assert_eq!(
            within(LIMIT, "disconnected", states.changed()).await,
            SessionState::Disconnected
        );
        let local = c.remove_watches_locally("/l", WatcherType::Any);
        within(Duration::from_secs(1), "local removal", local).await.unwrap();
        let ev = within(LIMIT, "removal event", removed.changed()).await;
        assert_eq!(ev.event_type, EventType::PersistentWatchRemoved, "{kind:?}");
        let none = c.remove_watches_locally("/l", WatcherType::Any);
        assert_eq!(
            within(Duration::from_secs(1), "nothing left", none).await,
            Err(Error::NoWatcher)
        );
        proxy.heal();
        assert_eq!(
            within(LIMIT, "reconnected", states.changed()).await,
            SessionState::SyncConnected
        );
        other.set_data("/k", b"1", None).await.unwrap();
        let ev = within(LIMIT, "kept watch", kept.changed()).await;
        assert_eq!(ev.event_type, EventType::NodeDataChanged, "{kind:?}");
        let left = c.remove_watches("/l", WatcherType::Any).await;
        assert_eq!(left, Err(Error::NoWatcher), "{kind:?}: SetWatches left the removed watch out");
    }
}
