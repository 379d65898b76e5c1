//! A session on a server that enforces digest authentication (`enforce.auth.enabled=true`,
//! `enforce.auth.schemes=digest` on ZooKeeper 3.8; `enforced_auth_schemes` on rzk): it
//! resumes across a restart of the server with its watches, and one without credentials ends
//! at once in `AuthFailed` instead of reconnecting for ever.

use std::time::{Duration, Instant};

use rzk_client::{Acls, AddWatchMode, Client, CreateMode, Error, EventType, SessionState};
use rzk_testkit::enforcing::EnforcingServer;
use rzk_testkit::wait::{resumed, within};
use rzk_testkit::Kind;

/// Apache ZooKeeper too only in the `zookeeper-tests` tier (it needs Java and ZooKeeper).
#[cfg(feature = "zookeeper-tests")]
const KINDS: [Kind; 2] = [Kind::Rzk, Kind::ZooKeeper];
#[cfg(not(feature = "zookeeper-tests"))]
const KINDS: [Kind; 1] = [Kind::Rzk];
const LIMIT: Duration = Duration::from_secs(30);

async fn connect(hosts: &str, auth: Option<&str>) -> Client {
    let mut c = Client::connector().with_session_timeout(Duration::from_secs(6));
    if let Some(a) = auth {
        c = c.with_auth("digest", a.as_bytes().to_vec());
    }
    within(LIMIT, "connect", c.connect(hosts)).await.expect("connect")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_with_credentials_resumes_after_a_restart_with_its_watches() {
    for kind in KINDS {
        let mut server = EnforcingServer::start(kind);
        let c = connect(&server.hosts(), Some("u:p")).await;
        let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
        c.create("/w", b"0", &open).await.unwrap();
        let (_, _, once) = c.get_and_watch_data("/w").await.unwrap();
        let mut persistent = c.watch("/w", AddWatchMode::Persistent).await.unwrap();
        let mut states = c.state_watcher();
        let id = c.session_id();

        tokio::task::block_in_place(|| server.restart());
        let started = Instant::now();
        let changes = resumed(&mut states, LIMIT).await;
        eprintln!("{kind:?}: resumed {:?} after the restart: {changes:?}", started.elapsed());
        assert_eq!(c.session_id(), id, "{kind:?}: the same session");

        let other = connect(&server.hosts(), Some("u:p")).await;
        other.set_data("/w", b"1", None).await.unwrap();
        let ev = within(LIMIT, "one-shot watch", once.changed()).await;
        assert_eq!(
            (ev.event_type, ev.path.as_str()),
            (EventType::NodeDataChanged, "/w"),
            "{kind:?}"
        );
        // Told to read again first: ZooKeeper replays no persistent-watch event of the gap.
        let ev = within(LIMIT, "persistent watch", persistent.changed()).await;
        assert_eq!(ev.event_type, EventType::Lagged, "{kind:?}");
        let ev = within(LIMIT, "persistent watch", persistent.changed()).await;
        assert_eq!(ev.event_type, EventType::NodeDataChanged, "{kind:?}");
        assert_eq!(c.get_data("/w").await.unwrap().0, b"1", "{kind:?}: served");
        // Settled: the session stays connected, no flapping after the resume.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(c.state(), SessionState::SyncConnected, "{kind:?}");
        c.close().await;
        other.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_without_credentials_ends_in_auth_failed_at_once() {
    for kind in KINDS {
        let server = EnforcingServer::start(kind);
        let c = connect(&server.hosts(), None).await;
        let mut states = c.state_watcher();
        let started = Instant::now();
        assert_eq!(c.get_data("/").await, Err(Error::SessionClosedRequireAuth), "{kind:?}");
        let end = within(LIMIT, "the end", states.changed()).await;
        assert_eq!(end, SessionState::AuthFailed, "{kind:?}: ended, not reconnecting");
        assert!(started.elapsed() < Duration::from_secs(2), "{kind:?}: {:?}", started.elapsed());
        assert_eq!(c.get_data("/").await, Err(Error::AuthFailed), "{kind:?}");
    }
}
