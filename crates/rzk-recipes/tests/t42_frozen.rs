//! The leader freezes past its session timeout (docs/election.md §2.2), in-process: the whole
//! participant (its rzk-client session task, the session manager, the recipe driver and
//! the term guardian) runs on one current-thread runtime whose thread the test blocks for 2·T, as
//! SIGSTOP would. While it is frozen its term must already be invalid (the synchronous lease
//! check, with nobody running to resolve `lost()`), the server expires its session and the
//! follower takes over; after the thaw it learns it lost and rejoins.

mod support;

use std::time::{Duration, Instant};

use rzk_recipes::{
    election::{LatchOptions, LeaderLatch},
    session::{Session, SessionConfig},
    Error, Leadership, LossReason,
};
use support::checker::Checker;
use support::*;

both_servers! {
    t42_frozen_leader => frozen_leader;
}

enum Cmd {
    /// Freeze for the duration, then answer with the moment of the thaw.
    Freeze(Duration, tokio::sync::oneshot::Sender<Instant>),
    Stop,
}

async fn frozen_leader(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t42", kind);
    let checker = Checker::new();
    let (lead_tx, lead_rx) = tokio::sync::oneshot::channel::<(Leadership, LeaderLatch, Session)>();
    let (cmd_tx, mut cmd_rx) = tokio::sync::mpsc::unbounded_channel::<Cmd>();
    let (hosts, p, c) = (server.hosts(), path.clone(), checker.clone());
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let s =
                Session::connect(SessionConfig::new(hosts).with_session_timeout(T)).await.unwrap();
            let l = LeaderLatch::new(&s, &p, LatchOptions::default().with_id("a")).unwrap();
            c.attach("a", l.events(), None);
            l.start().await.unwrap();
            let la = l.await_leadership().await.unwrap();
            lead_tx.send((la, l.clone(), s.clone())).unwrap();
            while let Some(cmd) = cmd_rx.recv().await {
                match cmd {
                    // Blocks the runtime's only thread: every task of this participant stops.
                    Cmd::Freeze(d, thawed) => {
                        std::thread::sleep(d);
                        let _ = thawed.send(Instant::now());
                    }
                    Cmd::Stop => break,
                }
            }
            let _ = l.close().await;
            s.close().await;
        });
    });
    let (la, a, sa) = lead_rx.await.unwrap();
    let sb = session(&server).await;
    let b = LeaderLatch::new(&sb, &path, LatchOptions::default().with_id("b")).unwrap();
    checker.attach("b", b.events(), Some(raw_client(&server).await));
    b.start().await.unwrap();
    assert!(la.is_valid());
    let margin = sa.safety_margin();
    tokio::time::sleep(Duration::from_millis(300)).await;

    let frozen = Instant::now();
    let (thawed_tx, thawed_rx) = tokio::sync::oneshot::channel();
    cmd_tx.send(Cmd::Freeze(2 * T, thawed_tx)).unwrap();
    let lb = tokio::time::timeout(Duration::from_secs(7), b.await_leadership())
        .await
        .expect("b elected while a is frozen")
        .unwrap();
    let elected = lb.started_at().duration_since(frozen);
    eprintln!("b elected {elected:?} after the freeze");
    assert!(elected >= Duration::from_millis(3000) && elected <= Duration::from_millis(5500));
    assert!(lb.token() > la.token());
    // Still frozen: nothing of a has run, yet its term is invalid and its writes are refused.
    assert!(frozen.elapsed() < 2 * T);
    assert_eq!(la.loss_reason(), None, "nobody could resolve lost() yet");
    assert!(!la.is_valid(), "the lease check is synchronous");
    match la.guarded() {
        Err(Error::NotLeader { reason: LossReason::LeaseExpired, .. }) => {}
        r => panic!("expected NotLeader(LeaseExpired), got {r:?}"),
    }
    assert!(
        la.deadline() <= frozen + T - margin,
        "deadline {:?} after the freeze",
        la.deadline().duration_since(frozen)
    );
    assert!(la.deadline() < lb.started_at());
    // The thaw: a learns at once, then rejoins on a new session behind b. Timed from the
    // thaw itself, which the frozen thread reports: it froze when it got the command.
    let thawed = tokio::time::timeout(3 * T, thawed_rx).await.expect("thawed").unwrap();
    let reason = tokio::time::timeout(Duration::from_millis(500), la.lost())
        .await
        .expect("a learns it lost right after the thaw");
    let learned = la.lost_at().unwrap().duration_since(thawed);
    eprintln!("a lost ({reason:?}) {learned:?} after the thaw");
    // Whichever it sees first after the thaw: its lease timer, the session's end, or the
    // deletion of its node (rzk delivers that event to the expired session's connection before
    // closing it).
    assert!(matches!(
        reason,
        LossReason::LeaseExpired | LossReason::SessionExpired | LossReason::NodeDeleted
    ));
    assert!(learned < Duration::from_millis(100));
    rejoined_behind(&a, &b, &la, &lb, Duration::from_secs(5)).await;
    b.close().await.unwrap();
    let la2 = tokio::time::timeout(Duration::from_secs(2), a.await_leadership())
        .await
        .expect("a leads again")
        .unwrap();
    assert!(la2.token() > lb.token());
    cmd_tx.send(Cmd::Stop).unwrap();
    tokio::task::spawn_blocking(move || thread.join().unwrap()).await.unwrap();
    checker.assert_ok();
    assert_eq!(checker.leaders(), ["a", "b", "a"]);
}
