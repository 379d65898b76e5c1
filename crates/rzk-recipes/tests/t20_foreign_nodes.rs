//! Foreign-node refusal (docs/election.md §2.7): a kazoo node or a LeaderLatch node in a selector
//! path, a persistent `config` child in a latch path, a foreign node arriving while we lead, and a
//! persistent node with a recognized name (the predecessor-owner rule). Each time the recipe
//! refuses to lead, deletes its node and fails with `Error::ForeignNodes`; a leader loses with
//! `ForeignNodes` within 100 ms. Nobody ever becomes a second leader.

mod support;

use std::time::Duration;

use rzk_client::{Acls, CreateMode};
use rzk_recipes::{
    election::{ElectionEvent, LatchOptions, LeaderLatch, LeaderSelector, SelectorOptions, Status},
    Error, LossReason,
};
use support::checker::Checker;
use support::*;

both_servers! {
    t20_kazoo_in_selector => kazoo_in_selector;
    t20_latch_in_selector_path => latch_in_selector_path;
    t20_junk_in_latch_path => junk_in_latch_path;
    t20_foreign_arrives_while_leading => foreign_arrives_while_leading;
    t20_persistent_predecessor => persistent_predecessor;
}

async fn prepare(server: &Server, path: &str, child: &str, mode: CreateMode) -> rzk_client::Client {
    let raw = raw_client(server).await;
    raw.mkdir(path, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    raw.create(&format!("{path}/{child}"), b"", &mode.with_acls(Acls::anyone_all())).await.unwrap();
    raw
}

/// Joins a selector beside a foreign child; asserts the refusal.
async fn selector_refuses(server: &Server, path: &str, raw: &rzk_client::Client, foreign: &str) {
    let s = session(server).await;
    let checker = Checker::new();
    let sel = LeaderSelector::new(&s, path, SelectorOptions::default().with_id("rzk")).unwrap();
    checker.attach("rzk", sel.events(), None);
    let mut events = sel.events();
    sel.start(|_| async { panic!("must never lead beside a foreign node") }).unwrap();
    let err = tokio::time::timeout(Duration::from_secs(2), sel.await_leadership())
        .await
        .expect("refusal within 2 s")
        .unwrap_err();
    match &err {
        Error::ForeignNodes { path: p, names } => {
            assert_eq!(p, path);
            assert_eq!(names, &vec![foreign.to_string()]);
        }
        e => panic!("expected ForeignNodes, got {e:?}"),
    }
    assert!(err.to_string().contains("refusing to lead"), "{err}");
    assert!(matches!(sel.status(), Status::Failed(Error::ForeignNodes { .. })));
    // Its own node is gone; only the foreign one is left.
    let children = raw.list_children(path).await.unwrap();
    assert_eq!(children, vec![foreign.to_string()]);
    let mut saw = false;
    while let Some(e) = events.try_recv() {
        saw |= matches!(e, ElectionEvent::ForeignNodes { .. });
        assert!(!matches!(e, ElectionEvent::Elected { .. }));
    }
    assert!(saw, "ForeignNodes event");
    assert!(checker.terms().is_empty());
    s.close().await;
}

async fn kazoo_in_selector(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t20", kind);
    let raw = prepare(&server, &path, KAZOO, CreateMode::Ephemeral).await;
    selector_refuses(&server, &path, &raw, KAZOO).await;
}

async fn latch_in_selector_path(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t20", kind);
    // A Curator LeaderLatch node (as Java would create it) in a selector path.
    let raw = raw_client(&server).await;
    raw.mkdir(&path, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    let prefix = format!("{path}/_c_906dd4bd-3113-4241-9fec-edd54134c945-latch-");
    let (_, seq) = raw
        .create(&prefix, b"java", &CreateMode::EphemeralSequential.with_acls(Acls::anyone_all()))
        .await
        .unwrap();
    let name = format!("_c_906dd4bd-3113-4241-9fec-edd54134c945-latch-{seq}");
    selector_refuses(&server, &path, &raw, &name).await;
}

async fn junk_in_latch_path(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t20", kind);
    let raw = prepare(&server, &path, "config", CreateMode::Persistent).await;
    let s = session(&server).await;
    let latch = LeaderLatch::new(&s, &path, LatchOptions::default().with_id("a")).unwrap();
    // start() returns once our node exists; the refusal follows.
    let _ = latch.start().await;
    let err = latch.await_leadership().await.unwrap_err();
    assert!(
        matches!(&err, Error::ForeignNodes { names, .. } if names == &["config".to_string()]),
        "{err:?}"
    );
    assert!(!latch.has_leadership());
    assert_eq!(raw.list_children(&path).await.unwrap(), vec!["config".to_string()]);
    s.close().await;
}

async fn foreign_arrives_while_leading(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t20", kind);
    let raw = raw_client(&server).await;
    let s = session(&server).await;
    let latch = LeaderLatch::new(&s, &path, LatchOptions::default().with_id("a")).unwrap();
    let checker = Checker::new();
    checker.attach("a", latch.events(), Some(raw.clone()));
    latch.start().await.unwrap();
    let l = latch.await_leadership().await.unwrap();
    raw.create(
        &format!("{path}/{KAZOO}"),
        b"",
        &CreateMode::Ephemeral.with_acls(Acls::anyone_all()),
    )
    .await
    .unwrap();
    // From the create's reply, when the server has applied it: the bound is on the recipe's
    // reaction, not on the server's fdatasync.
    let created = std::time::Instant::now();
    let reason = tokio::time::timeout(Duration::from_secs(1), l.lost()).await.expect("lost");
    let took = created.elapsed();
    assert_eq!(reason, LossReason::ForeignNodes);
    assert!(took < Duration::from_millis(100), "lost after {took:?}");
    eventually(Duration::from_secs(1), "failed", || matches!(latch.status(), Status::Failed(_)))
        .await;
    assert!(raw.check_stat(l.node_path()).await.unwrap().is_none(), "our node deleted");
    assert!(l.guarded().unwrap_err().is_not_leader());
    checker.assert_ok();
    s.close().await;
}

/// t31: a persistent node with a recognized name sorts first and never goes away with a
/// session. By the predecessor-owner rule both A and B refuse; nobody ever leads (with
/// Curator everyone would wait forever).
async fn persistent_predecessor(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t20", kind);
    let raw = raw_client(&server).await;
    raw.mkdir(&path, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    let uuid = "0f8e2b9a-5c3d-4e1f-8a7b-6c5d4e3f2a1b";
    raw.create(
        &format!("{path}/_c_{uuid}-latch-"),
        b"",
        &CreateMode::PersistentSequential.with_acls(Acls::anyone_all()),
    )
    .await
    .unwrap();
    let checker = Checker::new();
    for id in ["a", "b"] {
        let s = session(&server).await;
        let latch = LeaderLatch::new(&s, &path, LatchOptions::default().with_id(id)).unwrap();
        checker.attach(id, latch.events(), None);
        let joined = latch.start().await.unwrap();
        let (_, stat) = raw.get_data(&joined.node).await.unwrap_or_default_stat();
        if let Some(stat) = stat {
            assert_eq!(stat.ephemeral_owner, s.session_id().unwrap().0);
        }
        let err = latch.await_leadership().await.unwrap_err();
        assert!(matches!(err, Error::ForeignNodes { .. }), "{id}: {err:?}");
        assert_eq!(raw.list_children(&path).await.unwrap().len(), 1, "{id}'s node deleted");
        s.close().await;
    }
    assert!(checker.terms().is_empty(), "nobody led");
}

trait OrDefault {
    fn unwrap_or_default_stat(self) -> ((), Option<rzk_client::Stat>);
}

impl OrDefault for Result<(Vec<u8>, rzk_client::Stat), rzk_client::Error> {
    fn unwrap_or_default_stat(self) -> ((), Option<rzk_client::Stat>) {
        ((), self.ok().map(|(_, s)| s))
    }
}
