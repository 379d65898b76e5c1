//! Read-only sessions on a real ensemble: a ZooKeeper 3.8 member partitioned from its quorum
//! (`readonlymode.enabled=true`) serves reads to a client that asked for a read-only session,
//! refuses one that did not, and the read-only client moves to a read-write member as soon as
//! one answers its probe, on a new session with its watch set again.

// Apache ZooKeeper ensembles only: the fast tier leaves them out.
#![cfg(feature = "zookeeper-tests")]

use std::time::{Duration, Instant};

use rzk_client::{Acls, Client, CreateMode, Error, EventType, SessionState};
use rzk_testkit::ensemble::{Ensemble, Options};
use rzk_testkit::wait::within;

const LIMIT: Duration = Duration::from_secs(30);

/// Three members in read-only mode, each reached through its proxy and partitionable.
fn ensemble() -> Ensemble {
    Ensemble::start_with_options(3, &Options::read_only())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_member_serves_reads_until_a_read_write_member_answers() {
    // Three or five ZooKeeper JVMs and time bounds: a heavy scenario.
    let _slot = rzk_testkit::slots::heavy_async().await;
    let mut e = ensemble();
    let writer = within(LIMIT, "connect", Client::connect(&e.hosts())).await.unwrap();
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    writer.create("/ro", b"before", &open).await.unwrap();
    let a = e.follower();
    // A sync on the member to be partitioned: it has applied the create before it is cut off.
    let on_a = within(LIMIT, "connect", Client::connect(&e.proxy(a).hosts())).await.unwrap();
    on_a.sync("/ro").await.unwrap();
    drop(on_a);
    e.partition_to_read_only(a);
    let others: Vec<usize> = (0..3).filter(|&i| i != a).collect();
    // Only the read-only member can be reached at first.
    for &i in &others {
        e.proxy(i).cut();
    }

    // A client that did not ask for a read-only session is refused.
    let plain = Client::connector().with_session_timeout(Duration::from_secs(2));
    let refused = within(LIMIT, "refused connect", plain.connect(&e.proxied_hosts())).await;
    assert_eq!(refused.err(), Some(Error::Timeout), "a read-only server refuses it");

    let ro = Client::connector().with_session_timeout(Duration::from_secs(4)).with_read_only(true);
    let c = within(LIMIT, "read-only connect", ro.connect(&e.proxied_hosts())).await.unwrap();
    assert_eq!(c.state(), SessionState::ConnectedReadOnly);
    let read_only_session = c.session_id();
    let (data, _, watch) = c.get_and_watch_data("/ro").await.unwrap();
    assert_eq!(data, b"before", "reads are served");
    assert_eq!(c.create("/ro/x", b"", &open).await, Err(Error::NotReadOnly));

    let mut states = c.state_watcher();
    for &i in &others {
        e.proxy(i).heal();
    }
    let healed = Instant::now();
    assert_eq!(within(LIMIT, "leave", states.changed()).await, SessionState::Disconnected);
    assert_eq!(within(LIMIT, "read-write", states.changed()).await, SessionState::SyncConnected);
    let moved_after = healed.elapsed();
    assert_ne!(c.session_id(), read_only_session, "a read-write member opened a new session");
    c.set_data("/ro", b"after", None).await.unwrap();
    let ev = within(LIMIT, "the watch set on the read-only member", watch.changed()).await;
    assert_eq!((ev.event_type, ev.path.as_str()), (EventType::NodeDataChanged, "/ro"));
    // The writer's session was local to its member, which may be the one restarted: read
    // with a new one.
    let reader = within(LIMIT, "connect", Client::connect(&e.hosts())).await.unwrap();
    assert_eq!(reader.get_data("/ro").await.unwrap().0, b"after");
    eprintln!("moved to a read-write member {moved_after:?} after it could be reached");
    e.heal_partition(a);
}

/// A session a read-write member has served is never offered to the read-only one (which
/// would refuse it, and a new read-only session would lose its ephemeral nodes): it waits for
/// a read-write member and is resumed there, same session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_write_session_waits_for_a_read_write_member() {
    // Three or five ZooKeeper JVMs and time bounds: a heavy scenario.
    let _slot = rzk_testkit::slots::heavy_async().await;
    let mut e = ensemble();
    let a = e.follower();
    e.partition_to_read_only(a);
    let others: Vec<usize> = (0..3).filter(|&i| i != a).collect();
    e.proxy(a).cut();
    let ro = Client::connector().with_session_timeout(Duration::from_secs(8)).with_read_only(true);
    let c = within(LIMIT, "connect", ro.connect(&e.proxied_hosts())).await.unwrap();
    assert_eq!(c.state(), SessionState::SyncConnected);
    // An ephemeral node makes the local session global, so another member can resume it.
    let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    c.create("/mine", b"", &ephemeral).await.unwrap();
    let session = c.session_id();

    let mut states = c.state_watcher();
    e.proxy(a).heal();
    for &i in &others {
        e.proxy(i).cut();
    }
    assert_eq!(within(LIMIT, "cut off", states.changed()).await, SessionState::Disconnected);
    let stayed = tokio::time::timeout(Duration::from_secs(2), states.changed()).await;
    assert!(stayed.is_err(), "only the read-only member is reachable: {stayed:?}");
    for &i in &others {
        e.proxy(i).heal();
    }
    assert_eq!(within(LIMIT, "resumed", states.changed()).await, SessionState::SyncConnected);
    assert_eq!(c.session_id(), session, "the same session");
    assert!(c.check_stat("/mine").await.unwrap().is_some(), "its ephemeral node is kept");
}
