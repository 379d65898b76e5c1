//! The race election's bad input (docs/recipes.md, "Race election"): a PERSISTENT node at the
//! path and a parent whose ACL denies the create fail at `start` with a clear error, leave
//! nothing behind and close at once; a holder that does not race by the protocol (a plain
//! EPHEMERAL create, no epoch) is waited for, then the race is won and the epoch created.

mod support;

use std::time::Duration;

use rzk_client::{Acls, CreateMode};
use rzk_recipes::{
    election::{ElectionEvent, RaceElection, RaceOptions, Status},
    Error,
};
use support::checker::Checker;
use support::*;

both_servers! {
    t21_race_persistent_node => persistent_node;
    t21_race_acl_denied_parent => acl_denied_parent;
    t21_race_foreign_holder => foreign_holder;
}

/// Generous bounds for "it happened at all".
const WITHIN: Duration = Duration::from_secs(10);

/// A PERSISTENT node at the path: no session's end frees it, so `start` fails at once with
/// `NotEphemeral`; nothing is created (no epoch), the node is untouched, close returns.
async fn persistent_node(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t21", kind);
    let raw = raw_client(&server).await;
    raw.mkdir(&path, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    let s = session(&server).await;
    let r = RaceElection::new(&s, &path, RaceOptions::default().with_id("a")).unwrap();
    let e = tokio::time::timeout(WITHIN, r.start()).await.expect("start returns").unwrap_err();
    assert_eq!(e, Error::NotEphemeral { path: path.clone() });
    assert!(e.to_string().contains("not ephemeral"), "{e}");
    assert!(matches!(r.status(), Status::Failed(_)));
    assert!(tokio::time::timeout(Duration::from_secs(2), r.clone().close()).await.is_ok());
    assert!(raw.check_stat(&r.epoch_path()).await.unwrap().is_none(), "no epoch left behind");
    let (_, stat) = raw.get_data(&path).await.unwrap();
    assert_eq!((stat.ephemeral_owner, stat.version), (0, 0), "the node is untouched");
}

/// A parent whose ACL lets nobody create: `start` fails with `NoAuth` naming the path;
/// nothing is created under it; close returns.
async fn acl_denied_parent(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let parent = test_path("t21", kind);
    let raw = raw_client(&server).await;
    raw.mkdir(&parent, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    raw.set_acl(&parent, Acls::anyone_read().as_ref(), None).await.unwrap();
    let path = format!("{parent}/leader");
    let s = session(&server).await;
    let r = RaceElection::new(&s, &path, RaceOptions::default().with_id("a")).unwrap();
    let e = tokio::time::timeout(WITHIN, r.start()).await.expect("start returns").unwrap_err();
    assert!(matches!(e, Error::NoAuth { .. }), "{e:?}");
    assert!(tokio::time::timeout(Duration::from_secs(2), r.close()).await.is_ok());
    assert!(raw.list_children(&parent).await.unwrap().is_empty(), "nothing left behind");
}

/// A holder that does not race by the protocol (a plain EPHEMERAL create, no epoch): waited
/// for like any holder; when its session ends, the candidate wins and the epoch is created.
async fn foreign_holder(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t21", kind);
    let raw = raw_client(&server).await;
    let foreign = raw_client(&server).await;
    let parent = path.rsplit_once('/').unwrap().0.to_string();
    raw.mkdir(&parent, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    foreign.create(&path, b"other", &ephemeral).await.unwrap();
    let checker = Checker::new();
    let s = session(&server).await;
    let r = RaceElection::new(&s, &path, RaceOptions::default().with_id("a")).unwrap();
    checker.attach("a", r.events(), Some(raw_client(&server).await));
    r.start().await.unwrap();
    let mut events = r.events();
    assert_eq!(r.status(), Status::Following { position: 1 });
    assert_eq!(r.holder().await.unwrap().unwrap().id, "other");
    drop(foreign);
    let l = tokio::time::timeout(WITHIN, r.await_leadership()).await.unwrap().unwrap();
    let (_, epoch) = raw.get_data(&r.epoch_path()).await.unwrap();
    let (version, mzxid) = (epoch.version, epoch.mzxid);
    assert_eq!((version, mzxid), (1, l.token().0), "the epoch was created and moved");
    // The term is visible (await_leadership returns) a moment before its event is emitted.
    let elected = async {
        while let Some(e) = events.recv().await {
            if matches!(e, ElectionEvent::Elected { .. }) {
                return true;
            }
        }
        false
    };
    assert!(tokio::time::timeout(WITHIN, elected).await.unwrap_or(false), "no Elected event");
    r.close().await.unwrap();
    checker.assert_ok();
}
