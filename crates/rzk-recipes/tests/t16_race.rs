//! The race election (docs/recipes.md, "Race election"; the users' article on the non-fair
//! LeaderLatch). Three candidates race for one EPHEMERAL node: one leads with its id as the
//! data, the others wait; when the leader closes, one of the other two wins with a larger
//! token, and the old fence (the epoch's version) no longer passes. An admin's delete of the
//! node ends the leader's term; a deposed leader's release never deletes the next winner's
//! node, but a leader whose epoch was moved under it still frees the path when it closes.
//! Bad input is `t21_race_bad_input.rs`.

mod support;

use std::time::Duration;

use rzk_client::{Acls, CreateMode, MultiWriteError};
use rzk_recipes::{
    election::{RaceElection, RaceOptions, Status},
    session::Session,
    Leadership, LossReason,
};
use rzk_testkit::proxy::Proxy;
use support::checker::{sample_single_leader, Checker};
use support::*;

both_servers! {
    t16_race_round => race_round;
    t16_race_admin_delete => admin_delete;
    t16_race_release_fenced => release_fenced;
    t16_race_epoch_moved => epoch_moved;
    t16_race_epoch_moved_then_close => epoch_moved_then_close;
    t16_race_unseen_win => unseen_win;
}

/// Generous bounds for "it happened at all".
const WITHIN: Duration = Duration::from_secs(10);

async fn candidate(
    server: &Server,
    path: &str,
    id: &str,
    checker: &Checker,
) -> (Session, RaceElection) {
    let s = session(server).await;
    let r = RaceElection::new(&s, path, RaceOptions::default().with_id(id)).unwrap();
    checker.attach(id, r.events(), Some(raw_client(server).await));
    r.start().await.unwrap();
    (s, r)
}

/// Candidate `a` leading at a fresh path of a fresh server (through a proxy of its own when
/// `proxied`), with the harness's raw client. Fields drop in order: the server last.
struct ALeads {
    la: Leadership,
    a: RaceElection,
    _sa: Session,
    proxy: Option<Proxy>,
    checker: Checker,
    raw: rzk_client::Client,
    path: String,
    server: Server,
}

async fn a_leads(kind: Kind, proxied: bool) -> ALeads {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t16", kind);
    let raw = raw_client(&server).await;
    let checker = Checker::new();
    let (_sa, a, proxy) = if proxied {
        let (s, proxy) = session_via_proxy(&server).await;
        let a = RaceElection::new(&s, &path, RaceOptions::default().with_id("a")).unwrap();
        checker.attach("a", a.events(), None);
        a.start().await.unwrap();
        (s, a, Some(proxy))
    } else {
        let (s, a) = candidate(&server, &path, "a", &checker).await;
        (s, a, None)
    };
    let la = a.await_leadership().await.unwrap();
    ALeads { la, a, _sa, proxy, checker, raw, path, server }
}

/// The one candidate of `races` that leads, once exactly one does.
async fn the_leader(races: &[&RaceElection]) -> usize {
    let mut leader = None;
    eventually(WITHIN, "one leader", || {
        let leading: Vec<usize> = (0..races.len()).filter(|&i| races[i].has_leadership()).collect();
        leader = leading.first().copied();
        leading.len() == 1
    })
    .await;
    leader.expect("a leader")
}

async fn epoch_version(raw: &rzk_client::Client, race: &RaceElection) -> (i32, i64) {
    let (_, stat) = raw.get_data(&race.epoch_path()).await.unwrap();
    (stat.version, stat.mzxid)
}

/// The seed's scenario: three clients race, one leads (data = its id), the others wait; the
/// leader closes and one of the other two wins a new round with a larger token; the deposed
/// leader's fence is refused by the server although a node exists at the path.
async fn race_round(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t16", kind);
    let raw = raw_client(&server).await;
    let checker = Checker::new();
    let mut races = Vec::new();
    let mut sessions = Vec::new();
    for id in ["a", "b", "c"] {
        let (s, r) = candidate(&server, &path, id, &checker).await;
        races.push(r);
        sessions.push(s);
    }
    let refs: Vec<&RaceElection> = races.iter().collect();
    let first = the_leader(&refs).await;
    let ids = ["a", "b", "c"];
    let old: Leadership = races[first].current().unwrap();
    let (data, stat) = raw.get_data(&path).await.unwrap();
    assert_eq!(data, ids[first].as_bytes(), "the node's data is the leader's id");
    assert_eq!(stat.czxid, old.token().0, "the token is the node's czxid");
    let (old_version, mzxid) = epoch_version(&raw, &races[first]).await;
    assert_eq!(mzxid, stat.czxid, "the epoch moved in the winning multi");
    let holder = races[(first + 1) % 3].holder().await.unwrap().unwrap();
    assert_eq!(holder.id, ids[first]);
    for (i, r) in races.iter().enumerate().filter(|(i, _)| *i != first) {
        eventually(WITHIN, "waiting", || r.status() == Status::Following { position: 1 }).await;
        assert!(!r.has_leadership(), "{} waits", ids[i]);
    }
    sample_single_leader(&[&|| refs[0].has_leadership(), &|| refs[1].has_leadership(), &|| {
        refs[2].has_leadership()
    }])
    .await;

    races.remove(first).close().await.unwrap();
    let rest: Vec<&RaceElection> = races.iter().collect();
    let next = the_leader(&rest).await;
    let new = races[next].current().unwrap();
    assert!(new.token() > old.token(), "tokens strictly increase");
    let (data, _) = raw.get_data(&path).await.unwrap();
    assert_ne!(data, ids[first].as_bytes(), "a new round elected another candidate");

    // The deposed leader: refused locally, and its fence no longer passes on the server,
    // though a node sits at the path (existence alone would have let it through).
    assert!(old.guarded().is_err_and(|e| e.is_not_leader()));
    let mut stale = raw.new_multi_writer();
    stale.add_check_version(&path, -1).unwrap();
    stale.add_check_version(&races[next].epoch_path(), old_version).unwrap();
    stale.add_set_data(&path, b"stale", None).unwrap();
    match stale.commit().await {
        Err(MultiWriteError::OperationFailed { index: 1, source }) => {
            assert!(matches!(source, rzk_client::Error::BadVersion), "{source}")
        }
        other => panic!("the old fence must fail on the epoch: {other:?}"),
    }
    let witness = format!("{path}-witness");
    let mut w = new.guarded().unwrap();
    w.create(&witness, b"new", &CreateMode::Persistent.with_acls(Acls::anyone_all())).unwrap();
    let results = w.commit().await.expect("the new leader's guarded write");
    // One result per operation the caller added: the fence's checks are not among them.
    assert!(matches!(results[..], [rzk_client::MultiWriteResult::Create { .. }]));

    // The follower first: closed after the leader, it would win a third term first.
    let leader = races.remove(next);
    for r in races.into_iter().chain([leader]) {
        r.close().await.unwrap();
    }
    checker.assert_ok();
    assert_eq!(checker.terms().len(), 2);
    assert!(raw.check_stat(&path).await.unwrap().is_none(), "the node is gone after close");
}

/// An admin deletes the node under the leader: its `lost()` resolves (NodeDeleted), its
/// guarded write is refused, and a new round elects a leader with a larger token.
async fn admin_delete(kind: Kind) {
    let ALeads { la, a, _sa, checker, raw, path, server, .. } = a_leads(kind, false).await;
    let (_sb, b) = candidate(&server, &path, "b", &checker).await;
    assert_eq!(b.status(), Status::Following { position: 1 });

    raw.delete(&path, None).await.unwrap();
    let reason = tokio::time::timeout(WITHIN, la.lost()).await.expect("lost() resolves");
    assert_eq!(reason, LossReason::NodeDeleted);
    assert!(la.guarded().is_err_and(|e| e.is_not_leader()));
    let next = the_leader(&[&a, &b]).await;
    let new = [&a, &b][next].current().unwrap();
    assert!(new.token() > la.token());
    let (_, stat) = raw.get_data(&path).await.unwrap();
    assert_eq!(stat.czxid, new.token().0);
    a.close().await.unwrap();
    b.close().await.unwrap();
    // The leader learns of the delete by a watch, as the next winner does: they may overlap
    // by that delivery (docs/election.md §4.1), never by more.
    checker.assert_ok_with(Duration::from_secs(1));
}

/// The epoch moves under a leader (a client that does not race by the protocol, or an
/// admin): nothing tells the leader, but its next guarded write is refused by the server,
/// its term ends, and it races again (deleting its own node) for a fresh term.
async fn epoch_moved(kind: Kind) {
    let ALeads { la, a, _sa, checker, raw, path, server: _server, .. } = a_leads(kind, false).await;
    let witness = format!("{path}-witness");
    let mut w = la.guarded().unwrap();
    w.create(&witness, b"1", &CreateMode::Persistent.with_acls(Acls::anyone_all())).unwrap();
    w.commit().await.unwrap();
    raw.set_data(&a.epoch_path(), b"admin", None).await.unwrap();
    assert!(la.is_valid(), "nothing has told the leader");
    let mut w = la.guarded().unwrap();
    w.set_data(&witness, b"2", None).unwrap();
    let e = w.commit().await.unwrap_err();
    assert!(e.is_not_leader(), "{e:?}");
    assert_eq!(la.loss_reason(), Some(LossReason::NodeDeleted));
    assert_eq!(raw.get_data(&witness).await.unwrap().0, b"1", "the refused write left nothing");
    let again = tokio::time::timeout(WITHIN, async {
        loop {
            match a.current() {
                Some(l) if l.token() > la.token() => return l,
                _ => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    })
    .await
    .expect("a fresh term");
    let (_, mzxid) = epoch_version(&raw, &a).await;
    assert_eq!(mzxid, again.token().0, "won by the protocol again");
    let mut w = again.guarded().unwrap();
    w.set_data(&witness, b"3", None).unwrap();
    w.commit().await.expect("the fresh term writes");
    a.close().await.unwrap();
    checker.assert_ok();
}

/// The epoch is moved under a leader that then closes without writing: its fenced delete
/// fails, and the node, still its session's, is deleted by owner, so the next candidate wins
/// while that session lives on.
async fn epoch_moved_then_close(kind: Kind) {
    let ALeads { la, a, _sa, checker, raw, path, server, .. } = a_leads(kind, false).await;
    let (_sb, b) = candidate(&server, &path, "b", &checker).await;
    raw.set_data(&a.epoch_path(), b"admin", None).await.unwrap();
    a.close().await.unwrap();
    assert!(!la.is_valid());
    let lb = tokio::time::timeout(WITHIN, b.await_leadership()).await.expect("b wins").unwrap();
    assert!(lb.token() > la.token());
    b.close().await.unwrap();
    checker.assert_ok();
}

/// A winning multi whose reply was lost leaves a node the candidate's own session holds. It
/// is adopted when the epoch moved at its czxid (the multi landed whole); a node the session
/// created otherwise (a plain create) is not a win by the protocol: it is deleted and the race
/// won afresh.
async fn unseen_win(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t16", kind);
    let raw = raw_client(&server).await;
    let parent = path.rsplit_once('/').unwrap().0;
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    raw.mkdir(parent, &persistent).await.unwrap();
    let epoch = format!("{path}_epoch");
    raw.create(&epoch, b"", &persistent).await.unwrap();
    for whole in [true, false] {
        let s = session(&server).await;
        let own = s.client().unwrap();
        let mut multi = own.new_multi_writer();
        multi.add_create(&path, b"a", &ephemeral).unwrap();
        if whole {
            multi.add_set_data(&epoch, b"a", None).unwrap();
        }
        multi.commit().await.unwrap();
        let (_, node) = raw.get_data(&path).await.unwrap();
        let r = RaceElection::new(&s, &path, RaceOptions::default().with_id("a")).unwrap();
        r.start().await.unwrap();
        let l = tokio::time::timeout(WITHIN, r.await_leadership()).await.unwrap().unwrap();
        if whole {
            assert_eq!(l.token().0, node.czxid, "the landed win is adopted");
        } else {
            assert!(l.token().0 > node.czxid, "the plain node is not taken as a win");
        }
        assert_eq!(epoch_version(&raw, &r).await.1, l.token().0);
        r.close().await.unwrap();
        assert!(raw.check_stat(&path).await.unwrap().is_none(), "released");
    }
}

/// A leader cut off from the server loses its node to an admin's delete and the race to B;
/// its close, sent while cut off and retried after the heal, must not delete B's node.
async fn release_fenced(kind: Kind) {
    let ALeads { la, a, _sa, proxy, checker, raw, path, server } = a_leads(kind, true).await;
    let proxy = proxy.expect("a proxy");
    let (_sb, b) = candidate(&server, &path, "b", &checker).await;

    proxy.cut();
    raw.delete(&path, None).await.unwrap();
    let lb = tokio::time::timeout(WITHIN, b.await_leadership()).await.unwrap().unwrap();
    assert!(lb.token() > la.token());
    let closing = tokio::spawn(a.close());
    tokio::time::sleep(Duration::from_millis(500)).await;
    proxy.heal();
    let _ = tokio::time::timeout(WITHIN, closing).await.expect("close returns");
    let (data, stat) = raw.get_data(&path).await.expect("b's node survives a's release");
    assert_eq!(data, b"b");
    assert_eq!(stat.czxid, lb.token().0);
    assert!(b.has_leadership());
    assert!(la.loss_reason().is_some());
    b.close().await.unwrap();
    checker.assert_ok();
}
