//! A 3-node Apache ZooKeeper 3.8 ensemble on loopback, its ZAB
//! leader killed with SIGKILL mid-election, i.e. while a latch term is active and three
//! followers wait. ZooKeeper only (rzk has no replication); docs/election.md §2.4, §3.4.
//!
//! The latch leader's client is placed on the ZAB leader (the one that dies); the others land
//! wherever the client's shuffle puts them (clients on followers are dropped too while the
//! survivors are LOOKING). Asserted:
//! - the two survivors elect a new ZAB leader;
//! - every participant's client fails over to a survivor, on the same session (no expiry,
//!   same generation): the new ZAB leader gives every session a fresh timeout;
//! - the latch leader steps down (Suspended), then resumes with the same token; nobody else
//!   leads in between; a leader exists again within `T` of the kill;
//! - after the failover, a resignation hands over to the next in node order within 30 s (in
//!   practice milliseconds) with a larger token;
//! - a node created after the failover has a larger ZAB epoch (`token >> 32`);
//! - the path holds exactly one node per live participant (no orphans, no duplicates);
//! - the §4.1 checker (no overlap, token order, token = czxid) and single-leader sampling every
//!   5 ms throughout (the sampler shares the scenario's task, so it pauses while the harness
//!   runs its blocking `srvr`/`cons` probes; the checker covers those gaps).
//!
//! The second scenario: p0 resigns in the same millisecond as the kill, and a fifth
//! participant joins while the survivors are LOOKING. Exactly one successor (p1) within `T` of
//! the kill with a larger token, sessions survive, p4 has exactly one node.

// Apache ZooKeeper ensembles only (rzk refuses them): the `zookeeper-tests` tier.
#![cfg(feature = "zookeeper-tests")]

mod support;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::Poll;
use std::time::{Duration, Instant};

use rzk_client::{Acls, CreateMode};
use rzk_recipes::{
    cache::{CacheOptions, TreeCache},
    election::{LatchOptions, LeaderLatch},
    lock::{InterProcessMutex, MutexOptions},
    session::Session,
};
use rzk_testkit::ensemble::Ensemble;
use support::cache::{assert_converged, Recorder};
use support::checker::Checker;
use support::ensemble::{blocking, config, session_placed, sid, T};
use support::{init_tracing, serial};

/// The common setup: the ensemble, four participants p0..p3 on one latch path, p0 leading and
/// connected to the ZAB leader.
struct Setup {
    ens: Ensemble,
    zab0: usize,
    hosts: String,
    path: String,
    checker: Checker,
    observer: rzk_client::Client,
    sessions: Vec<Session>,
    latches: Vec<LeaderLatch>,
    /// (session id, generation) of every participant before the fault.
    ids_before: Vec<(Option<rzk_recipes::session::SessionId>, u64)>,
    la: rzk_recipes::Leadership,
    before: rzk_recipes::election::Participants,
}

async fn setup(test: &str) -> Setup {
    let t0 = Instant::now();
    let ens = blocking(|| Ensemble::start(3));
    let zab0 = ens.leader().expect("a ZAB leader");
    let hosts = ens.hosts();
    eprintln!("ensemble up in {:?}, ZAB leader node {}", t0.elapsed(), zab0 + 1);

    // The first participant (the latch leader to be) on the ZAB leader: reconnect until the
    // client's shuffle puts it there.
    let mut first = None;
    for _ in 0..30 {
        let s = Session::connect(config(&hosts)).await.expect("connect");
        let id = sid(&s);
        if blocking(|| ens.sessions_on(zab0).contains(&id)) {
            first = Some(s);
            break;
        }
        s.close().await;
    }
    let mut sessions = vec![first.expect("a session on the ZAB leader within 30 tries")];
    for _ in 1..4 {
        sessions.push(Session::connect(config(&hosts)).await.expect("connect"));
    }
    let placed: Vec<Option<usize>> =
        blocking(|| sessions.iter().map(|s| ens.node_of(&sid(s)).map(|n| n + 1)).collect());
    eprintln!("participants p0..p3 on nodes {placed:?}");
    let ids_before: Vec<_> = sessions.iter().map(|s| (s.session_id(), s.generation())).collect();

    let path = format!("/t/{test}/{}", std::process::id());
    let checker = Checker::new();
    let observer = rzk_client::Client::connector()
        .with_session_timeout(T)
        .connect(&hosts)
        .await
        .expect("observer");
    let mut latches = Vec::new();
    for (i, s) in sessions.iter().enumerate() {
        let id = format!("p{i}");
        let l = LeaderLatch::new(s, &path, LatchOptions::default().with_id(&id)).unwrap();
        checker.attach(&id, l.events(), Some(observer.clone()));
        l.start().await.unwrap();
        latches.push(l);
    }
    let la = latches[0].await_leadership_timeout(Duration::from_secs(10)).await.unwrap();
    let la = la.expect("p0 leads");
    let before = latches[0].participants().await.unwrap();
    assert_eq!(before.list.len(), 4);
    Setup { ens, zab0, hosts, path, checker, observer, sessions, latches, ids_before, la, before }
}

/// Waits until the survivors have a new ZAB leader; returns it.
async fn new_zab_leader(ens: &Ensemble, zab0: usize, t_kill: Instant) -> usize {
    let zab1 = loop {
        if let Some(l) = blocking(|| ens.leader()) {
            break l;
        }
        assert!(t_kill.elapsed() < Duration::from_secs(15), "no new ZAB leader:\n{}", ens.logs());
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_ne!(zab1, zab0);
    eprintln!("new ZAB leader node {} after {:?}", zab1 + 1, t_kill.elapsed());
    zab1
}

/// Waits until every session is connected again, to a survivor, on its old session.
async fn failed_over(ens: &Ensemble, zab0: usize, sessions: &[&Session], t_kill: Instant) {
    loop {
        let all = sessions.iter().all(|s| s.state().is_connected());
        let on: Vec<Option<usize>> =
            blocking(|| sessions.iter().map(|s| ens.node_of(&sid(s))).collect());
        if all && on.iter().all(|n| n.is_some_and(|n| n != zab0)) {
            eprintln!(
                "all clients reconnected {:?} after the kill, on nodes {:?}",
                t_kill.elapsed(),
                on.iter().map(|n| n.map(|n| n + 1)).collect::<Vec<_>>()
            );
            return;
        }
        assert!(t_kill.elapsed() < Duration::from_secs(15), "clients did not fail over: {on:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The participants once they are exactly `want`, as seen by `latch`'s own server (another
/// participant's server may not have applied the latest create or delete yet: ZooKeeper is
/// sequentially consistent per client only).
async fn live(latch: &LeaderLatch, want: &[&str]) -> rzk_recipes::election::Participants {
    let start = Instant::now();
    loop {
        let p = latch.participants().await.unwrap();
        if p.list.iter().map(|p| p.id.as_str()).eq(want.iter().copied()) {
            return p;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "not one node per live participant: {p:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The fifth participant p4, on a session of its own, attached to the checker; not started.
async fn p4(
    hosts: &str,
    path: &str,
    checker: &Checker,
    observer: &rzk_client::Client,
) -> (Session, LeaderLatch) {
    let s4 = Session::connect(config(hosts)).await.expect("connect");
    let l4 = LeaderLatch::new(&s4, path, LatchOptions::default().with_id("p4")).unwrap();
    checker.attach("p4", l4.events(), Some(observer.clone()));
    (s4, l4)
}

/// Single-leader sampling every 5 ms until `stop`: at most one of `latches` believes it leads.
async fn sample_until_stopped(latches: &[&LeaderLatch], stop: &AtomicBool, samples: &AtomicUsize) {
    while !stop.load(Ordering::Acquire) {
        let n = latches.iter().filter(|l| l.has_leadership()).count();
        assert!(n <= 1, "{n} latches believe they lead");
        samples.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits until the leadership `la` is lost, within `T` of the kill.
async fn stepped_down(la: &rzk_recipes::Leadership, t_kill: Instant) {
    let lost_at = loop {
        if let Some(at) = la.lost_at() {
            break at;
        }
        assert!(t_kill.elapsed() < T, "p0 never stepped down");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    eprintln!(
        "p0 stepped down {:?} after the kill ({:?})",
        lost_at.duration_since(t_kill),
        la.loss_reason()
    );
}

/// Waits until p0 (`latches[0]`) holds a valid term again, within `T` of the kill, while no
/// other participant leads; returns that term.
async fn p0_back(latches: &[LeaderLatch], t_kill: Instant) -> rzk_recipes::Leadership {
    let again = loop {
        if let Some(l) = latches[0].current().filter(|l| l.is_valid()) {
            break l;
        }
        assert!(latches[1..].iter().all(|l| !l.has_leadership()), "another participant leads");
        assert!(t_kill.elapsed() < T, "p0 not back within T of the kill");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    eprintln!("p0 resumed {:?} after the kill", again.started_at().duration_since(t_kill));
    again
}

/// Closes the latches from the back of the queue, so that no closing hands over a term.
async fn close_all(l4: LeaderLatch, latches: Vec<LeaderLatch>) {
    l4.close().await.unwrap();
    for (i, l) in latches.into_iter().enumerate().rev() {
        let r = l.close().await;
        if i > 0 {
            r.unwrap(); // p0 resigned: already closed
        }
    }
}

/// Steady: The ZAB leader dies while p0 leads and p1..p3 wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t85a_ensemble_leader_killed_mid_election() {
    init_tracing();
    let _g = serial().await;
    let t_test = Instant::now();
    let Setup {
        mut ens,
        zab0,
        hosts,
        path,
        checker,
        observer,
        sessions,
        latches,
        ids_before,
        la,
        before,
    } = setup("t85a").await;

    // Single-leader sampling every 5 ms for the whole failover and handoff.
    let stop = AtomicBool::new(false);
    let samples = AtomicUsize::new(0);
    let sampled: Vec<&LeaderLatch> = latches.iter().collect();
    let sampler = sample_until_stopped(&sampled, &stop, &samples);

    let scenario = async {
        // Mid-election: p0's term is active, p1..p3 wait on their predecessors.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(la.is_valid());
        let t_kill = Instant::now();
        blocking(|| ens.kill(zab0));
        eprintln!("SIGKILL ZAB leader node {}", zab0 + 1);

        // The survivors elect a new ZAB leader.
        new_zab_leader(&ens, zab0, t_kill).await;

        // p0 learnt of the disconnect and stepped down (default policy: on Suspended).
        stepped_down(&la, t_kill).await;

        // Every client fails over to a survivor, on its old session.
        failed_over(&ens, zab0, &sessions.iter().collect::<Vec<_>>(), t_kill).await;
        let ids_after: Vec<_> = sessions.iter().map(|s| (s.session_id(), s.generation())).collect();
        assert_eq!(ids_after, ids_before, "every session survived the failover");

        // p0 resumes with the same token within T of the kill; nobody else led.
        let again = p0_back(&latches, t_kill).await;
        assert!(again.resumed());
        assert_eq!(again.token(), la.token());
        let after = latches[3].participants().await.unwrap();
        assert_eq!(
            after.list.iter().map(|p| &p.node).collect::<Vec<_>>(),
            before.list.iter().map(|p| &p.node).collect::<Vec<_>>(),
            "same nodes after the failover"
        );

        // The election goes on: p0 resigns, p1 takes over.
        let t_resign = Instant::now();
        again.clone().resign().await.expect("resign");
        let next = latches[1]
            .await_leadership_timeout(Duration::from_secs(30))
            .await
            .unwrap()
            .expect("p1 elected within 30 s of the resignation");
        eprintln!("handoff after the failover: {:?}", next.started_at().duration_since(t_resign));
        assert!(next.token() > la.token());

        // A node created after the failover carries the new epoch.
        let (s4, l4) = p4(&hosts, &path, &checker, &observer).await;
        l4.start().await.unwrap();
        let p = live(&l4, &["p1", "p2", "p3", "p4"]).await;
        assert!(p.foreign.is_empty());
        let t4 = p.list[3].token;
        assert!(
            t4.epoch() > la.token().epoch(),
            "epoch of a post-failover node {t4} vs {}",
            la.token()
        );
        eprintln!("epochs: before {} after {}", la.token().epoch(), t4.epoch());
        stop.store(true, Ordering::Release);
        (s4, l4)
    };
    let ((), (s4, l4)) = tokio::join!(sampler, scenario);
    eprintln!("{} single-leader samples", samples.load(Ordering::Relaxed));

    close_all(l4, latches).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    checker.assert_ok();
    assert_eq!(checker.leaders(), ["p0", "p1"]);
    s4.close().await;
    for s in sessions {
        s.close().await;
    }
    drop(ens);
    eprintln!("t85a: {:?}", t_test.elapsed());
}

/// Mid-handoff and join during failover. p0 resigns and, in the same millisecond,
/// the ZAB leader is killed; right after the kill, while the survivors are LOOKING, a fifth
/// participant joins (its create may meet `ConnectionLoss` and go through the protected retry).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t85b_ensemble_leader_killed_mid_handoff() {
    init_tracing();
    let _g = serial().await;
    let t_test = Instant::now();
    let Setup {
        mut ens,
        zab0,
        hosts,
        path,
        checker,
        observer,
        sessions,
        latches,
        ids_before,
        la,
        before: _,
    } = setup("t85b").await;
    let (s4, l4) = p4(&hosts, &path, &checker, &observer).await;

    let stop = AtomicBool::new(false);
    let samples = AtomicUsize::new(0);
    let sampled: Vec<&LeaderLatch> = latches.iter().chain([&l4]).collect();
    let sampler = sample_until_stopped(&sampled, &stop, &samples);
    let scenario = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(la.is_valid());
        // Poll the resignation once (its synchronous start: lost() resolves, the latch is
        // marked closed, the delete is queued), then kill at once.
        let mut resign = Box::pin(la.clone().resign());
        let first = std::future::poll_fn(|cx| Poll::Ready(resign.as_mut().poll(cx))).await;
        let t_kill = Instant::now();
        blocking(|| ens.kill(zab0));
        eprintln!("p0 resigns and SIGKILL ZAB leader node {}", zab0 + 1);
        let join = tokio::time::timeout(Duration::from_secs(15), l4.start()).await;
        eprintln!("p4 joined {:?} after the kill: {join:?}", t_kill.elapsed());
        join.expect("p4 joins within 15 s").expect("p4 joins");
        new_zab_leader(&ens, zab0, t_kill).await;
        let resigned = match first {
            Poll::Ready(r) => r,
            Poll::Pending => resign.await,
        };
        eprintln!("resign: {resigned:?} ({:?} after the kill)", t_kill.elapsed());

        // Exactly one successor, the next in node order, within T of the kill.
        let next = latches[1]
            .await_leadership_timeout(T.saturating_sub(t_kill.elapsed()))
            .await
            .unwrap()
            .expect("p1 elected within T of the kill");
        eprintln!("p1 elected {:?} after the kill", next.started_at().duration_since(t_kill));
        assert!(next.token() > la.token());

        let mut all: Vec<&Session> = sessions.iter().collect();
        all.push(&s4);
        failed_over(&ens, zab0, &all, t_kill).await;
        let ids_after: Vec<_> = sessions.iter().map(|s| (s.session_id(), s.generation())).collect();
        assert_eq!(ids_after, ids_before, "every session survived the failover");

        // One node per live participant: the resigned node is gone, p4 has exactly one.
        let p = live(&l4, &["p1", "p2", "p3", "p4"]).await;
        assert!(p.foreign.is_empty());
        assert_eq!(Some(&p.list[3].node), l4.our_path().as_ref());
        // If p4.s node was created after the failover, it carries the new epoch.
        eprintln!("epochs: p0 {} p4 {}", la.token().epoch(), p.list[3].token.epoch());
        assert!(p.list[3].token.epoch() >= la.token().epoch());
        tokio::time::sleep(Duration::from_millis(200)).await;
        stop.store(true, Ordering::Release);
    };
    tokio::join!(sampler, scenario);
    eprintln!("{} single-leader samples", samples.load(Ordering::Relaxed));

    close_all(l4, latches).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    checker.assert_ok();
    assert_eq!(checker.leaders(), ["p0", "p1"]);
    s4.close().await;
    for s in sessions {
        s.close().await;
    }
    drop(ens);
    eprintln!("t85b: {:?}", t_test.elapsed());
}

/// A follower dies (no election) under a latch leader, a mutex holder and a tree cache whose
/// sessions are on it, while a latch follower and a mutex waiter are elsewhere:
/// - every session on it moves to a survivor on the same session;
/// - the checker's invariants hold for the latch and the mutex (no overlap, token order,
///   token = czxid): the holder's hold ends with its Suspended state, and the waiter gets the
///   lock after that, with a larger token;
/// - the cache converges on the server's tree, writes made during the failover included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t85c_ensemble_follower_killed_under_latch_lock_and_cache() {
    init_tracing();
    let _g = serial().await;
    let mut ens = blocking(|| Ensemble::start(3));
    let hosts = ens.hosts();
    let f = blocking(|| ens.follower());
    let s_on = session_placed(&ens, &hosts, f, true).await;
    let s_cache = session_placed(&ens, &hosts, f, true).await;
    let s_off = session_placed(&ens, &hosts, f, false).await;
    let writer = s_off.client().unwrap();
    let ids: Vec<_> =
        [&s_on, &s_cache, &s_off].iter().map(|s| (s.session_id(), s.generation())).collect();
    let path = format!("/t/t85c/{}", std::process::id());

    let (latches, locks) = (Checker::new(), Checker::new());
    let l0 =
        LeaderLatch::new(&s_on, &format!("{path}/latch"), LatchOptions::default().with_id("p0"))
            .unwrap();
    latches.attach("p0", l0.events(), Some(writer.clone()));
    l0.start().await.unwrap();
    let l1 =
        LeaderLatch::new(&s_off, &format!("{path}/latch"), LatchOptions::default().with_id("p1"))
            .unwrap();
    latches.attach("p1", l1.events(), Some(writer.clone()));
    l1.start().await.unwrap();
    assert!(l0.await_leadership_timeout(Duration::from_secs(10)).await.unwrap().is_some());

    let lock = format!("{path}/lock");
    let m0 = InterProcessMutex::new(&s_on, &lock, MutexOptions::default().with_id("m0")).unwrap();
    locks.attach("m0", m0.events(), Some(writer.clone()));
    let g0 = m0.acquire().await.unwrap();
    let m1 = InterProcessMutex::new(&s_off, &lock, MutexOptions::default().with_id("m1")).unwrap();
    locks.attach("m1", m1.events(), Some(writer.clone()));
    let waiter = tokio::spawn(async move { m1.acquire().await.map(|g| (g.token(), g)) });

    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    writer.mkdir(&format!("{path}/tree/a"), &open).await.unwrap();
    let cache = TreeCache::new(&s_cache, &format!("{path}/tree"), CacheOptions::tree()).unwrap();
    let recorder = Recorder::start(cache.events());
    cache.initialized().await.unwrap();

    let t_kill = Instant::now();
    blocking(|| ens.kill(f));
    eprintln!("SIGKILL follower node {}", f + 1);
    for i in 0..10 {
        writer.create(&format!("{path}/tree/a/n{i}"), b"x", &open).await.unwrap();
    }
    loop {
        let moved = [&s_on, &s_cache].iter().all(|s| s.state().is_connected())
            && blocking(|| {
                [&s_on, &s_cache].iter().all(|s| ens.node_of(&sid(s)).is_some_and(|n| n != f))
            });
        if moved {
            break;
        }
        assert!(t_kill.elapsed() < T, "the sessions on the follower did not move");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!("the follower's sessions moved {:?} after the kill", t_kill.elapsed());
    let after: Vec<_> =
        [&s_on, &s_cache, &s_off].iter().map(|s| (s.session_id(), s.generation())).collect();
    assert_eq!(after, ids, "the same sessions");

    // The holder's connection was lost, so (Curator's standard error policy) its hold ended
    // with the Suspended state and the waiter may take the lock: after it, never beside it.
    let token0 = g0.token();
    let (token1, g1) = tokio::time::timeout(T, waiter).await.expect("acquires").unwrap().unwrap();
    assert!(!g0.is_valid(), "the holder was told before the waiter got the lock");
    assert!(token1 > token0, "token order: {token1} after {token0}");
    drop(g0);
    g1.release().await.unwrap();
    assert_converged(&cache, &recorder, &writer, false).await;
    latches.assert_ok();
    locks.assert_ok();
    assert!(l0.has_leadership() ^ l1.has_leadership(), "one latch leads");
}

/// Members bound session timeouts differently: node 1 grants up to 12 s, the others 4 s. A
/// session on node 1 with T = 10 s moves when node 1 dies, and the member it reaches
/// renegotiates 4 s, by which the ensemble now expires it: the client's `session_timeout()`
/// and the lease take it, so the lease ends 4 s after the last acknowledgement, not 10.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t85d_ensemble_renegotiated_timeout_reaches_the_lease() {
    const SHORT: Duration = Duration::from_secs(4);
    init_tracing();
    let _g = serial().await;
    let mut ens = blocking(|| {
        Ensemble::start_with(3, |i| {
            if i == 0 {
                String::new()
            } else {
                "maxSessionTimeout=4000\n".into()
            }
        })
    });
    let hosts = ens.hosts();
    let s = session_placed(&ens, &hosts, 0, true).await;
    let id = s.session_id();
    assert_eq!(s.negotiated_timeout(), T, "node 1 grants T");
    let t_kill = Instant::now();
    blocking(|| ens.kill(0));
    loop {
        let moved =
            s.state().is_connected() && blocking(|| ens.node_of(&sid(&s)).is_some_and(|n| n != 0));
        if moved && s.negotiated_timeout() == SHORT {
            break;
        }
        assert!(t_kill.elapsed() < T, "not moved and renegotiated: {:?}", s.negotiated_timeout());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(s.session_id(), id, "the same session");
    assert_eq!(s.client().unwrap().session_timeout(), SHORT);
    let lease = s.lease();
    assert_eq!(lease.server_expiry_not_before - lease.last_ack_sent, SHORT, "{lease:?}");
    assert!(lease.deadline < lease.server_expiry_not_before);
}
