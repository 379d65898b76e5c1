//! Mutual exclusion under faults in mixed groups: Rust participants and Apache Curator 5.4
//! holders (`InterProcessMutex`, `InterProcessSemaphoreV2` of two leases) in one lock path,
//! with the faulted holder a Java process (a Rust one faulted while Java waits, too): `kill -9`,
//! SIGSTOP past the session timeout, the holder's connection cut through a proxy, and a server
//! restart that outlives every session. Both languages print the same lines, so one checker
//! judges every hold (no more than N at once, tokens strictly increasing by start) and the
//! witness writes on the server's clock (no more than N tokens writing at once).
//!
//! What the mixed group can give: a Curator holder ends its hold when Curator reports
//! SUSPENDED (its connection listener; Curator itself never stops a holder), which comes before
//! the server can expire the session whenever the process runs. A stopped JVM cannot: after
//! SIGSTOP the Curator holder believes it holds until SIGCONT, past the next holder's start
//! (CURATOR-206), and only the fencing of its writes (a transaction that checks its node) keeps
//! it out; the SIGSTOP scenarios assert exactly that and judge every other hold.
//!
//! The restart shows another Curator gap. A Curator client suspended for a session timeout
//! starts a new session itself, but a restarted ZooKeeper gives every old session a fresh
//! timeout, so the nodes of the old one outlive it by up to T. A Curator waiter then finds its
//! old node listed and takes the lease with it: a hold of a session it has given up, which ends
//! without a word when the server expires that session. The holder marks such a hold `stale`
//! (its node's owner is not its session); the checker leaves it out and the witness writes,
//! fenced by the node, judge it. The Rust recipes never take a node of an earlier session.

// Curator in a JVM in every scenario, against both servers: the `zookeeper-tests` tier only.
#![cfg(feature = "zookeeper-tests")]

mod support;

use std::time::{Duration, Instant};

use rzk_testkit::proxy::Proxy;
use support::checker::check_at_most;
use support::faults::{assert_failover, kill9, sigstop, Group, Lang, Member, Scene};
use support::participant::{stale, token, Proc};
use support::*;

use Lang::{Java as J, Rust as R};

const MUTEX: &str = "mutex";
const SEMAPHORE: &str = "semaphore:2";

both_servers! {
    t61_kill9_java_mutex => kill9_java_mutex;
    t61_kill9_rust_mutex => kill9_rust_mutex;
    t61_kill9_java_semaphore => kill9_java_semaphore;
    t61_kill9_rust_semaphore => kill9_rust_semaphore;
    t61_sigstop_java_mutex => sigstop_java_mutex;
    t61_sigstop_rust_mutex => sigstop_rust_mutex;
    t61_sigstop_java_semaphore => sigstop_java_semaphore;
    t61_cut_java_mutex => cut_java_mutex;
    t61_cut_rust_mutex => cut_rust_mutex;
    t61_cut_java_semaphore => cut_java_semaphore;
    t61_restart_java_mutex => restart_java_mutex;
    t61_restart_rust_mutex => restart_rust_mutex;
    t61_restart_semaphore => restart_semaphore;
}

/// Java holds; Rust is next, Java waits behind it.
async fn kill9_java_mutex(kind: Kind) {
    kill9(kind, "t61-kill", &[(J, MUTEX), (R, MUTEX), (J, MUTEX)], 1).await
}

/// Rust holds; Java is next, Rust waits behind it.
async fn kill9_rust_mutex(kind: Kind) {
    kill9(kind, "t61-kill", &[(R, MUTEX), (J, MUTEX), (R, MUTEX)], 1).await
}

/// Java and Rust hold the two leases; Java is next, Rust waits.
async fn kill9_java_semaphore(kind: Kind) {
    let members = [(J, SEMAPHORE), (R, SEMAPHORE), (J, SEMAPHORE), (R, SEMAPHORE)];
    kill9(kind, "t61-kill", &members, 2).await
}

/// Rust and Java hold the two leases; Java is next, Rust waits.
async fn kill9_rust_semaphore(kind: Kind) {
    let members = [(R, SEMAPHORE), (J, SEMAPHORE), (J, SEMAPHORE), (R, SEMAPHORE)];
    kill9(kind, "t61-kill", &members, 2).await
}

async fn sigstop_java_mutex(kind: Kind) {
    sigstop(kind, "t61-stop", &[(J, MUTEX), (R, MUTEX)]).await
}

async fn sigstop_rust_mutex(kind: Kind) {
    sigstop(kind, "t61-stop", &[(R, MUTEX), (J, MUTEX)]).await
}

/// Java (stopped) and Rust hold the two leases, Java waits.
async fn sigstop_java_semaphore(kind: Kind) {
    sigstop(kind, "t61-stop", &[(J, SEMAPHORE), (R, SEMAPHORE), (J, SEMAPHORE)]).await
}

async fn cut_java_mutex(kind: Kind) {
    cut(kind, &[(J, MUTEX), (R, MUTEX)]).await
}

async fn cut_rust_mutex(kind: Kind) {
    cut(kind, &[(R, MUTEX), (J, MUTEX)]).await
}

/// Java (cut off) and Rust hold the two leases, Java waits.
async fn cut_java_semaphore(kind: Kind) {
    cut(kind, &[(J, SEMAPHORE), (R, SEMAPHORE), (J, SEMAPHORE)]).await
}

async fn restart_java_mutex(kind: Kind) {
    restart(kind, &[(J, MUTEX), (R, MUTEX)]).await
}

async fn restart_rust_mutex(kind: Kind) {
    restart(kind, &[(R, MUTEX), (J, MUTEX)]).await
}

/// Java and Rust hold the two leases, Java waits.
async fn restart_semaphore(kind: Kind) {
    restart(kind, &[(J, SEMAPHORE), (R, SEMAPHORE), (J, SEMAPHORE)]).await
}

/// `a`'s connection is cut (closed, and every new one too): it stops holding when its client
/// reports the loss, before b holds 3.0-5.5 s after the cut (the session's expiry). Healed, a
/// acquires again on a new session and holds once b is killed, with a larger token.
async fn cut(kind: Kind, members: &[Member<'_>]) {
    let sc = Scene::start(kind, Settings::default(), "t61-cut").await;
    let proxy = Proxy::start(sc.server.hosts());
    let mut g = Group::start(sc, &proxy.hosts(), members).await;
    proxy.cut();
    let cut = Instant::now();
    let (b_start, elected) = g.b.expect("elected", Duration::from_secs(8)).await;
    let token_b = token(&elected);
    eprintln!("{members:?}: b holds {:?} after the cut", b_start.duration_since(cut));
    assert_failover(b_start.duration_since(cut));
    assert!(token_b > g.token_a);
    let (lost, reason) = g.a.expect("lost", Duration::ZERO).await;
    eprintln!("a stopped ({reason}) {:?} after the cut", lost.duration_since(cut));
    assert!(lost < b_start, "a stopped holding before b held");
    for _ in 0..3 {
        g.b.expect("write ok", Duration::from_secs(2)).await;
    }
    proxy.heal();
    let b_end = g.b.kill();
    let (_, elected) = g.a.expect("elected", Duration::from_secs(20)).await;
    assert!(token(&elected) > token_b);
    let mut terms = g.a.terms(Instant::now());
    terms.extend(g.b.terms(b_end));
    for p in &g.others {
        terms.extend(p.terms(Instant::now()));
    }
    check_at_most(&terms, g.holders(), Duration::ZERO).unwrap();
    g.check_writes();
}

/// The server stops for 2·T and starts again with its data (rzk durable): every hold ends while
/// it is down, every session is gone, and on new sessions as many as may hold do, with tokens
/// above every earlier one.
async fn restart(kind: Kind, members: &[Member<'_>]) {
    let settings = Settings { durable: true, ..Settings::default() };
    let sc = Scene::start(kind, settings, "t61-restart").await;
    let hosts = sc.server.hosts();
    let mut g = Group::start(sc, &hosts, members).await;
    let stopped = Instant::now();
    tokio::task::block_in_place(|| g.sc.server.restart_after(2 * T));
    eprintln!("{members:?}: server back after {:?}", stopped.elapsed());
    let holders = g.holders();
    for p in std::iter::once(&mut g.a).chain(&mut g.others) {
        let (lost, reason) = p.expect("lost", Duration::ZERO).await;
        eprintln!("{} stopped ({reason}) {:?} after the stop", p.id, lost.duration_since(stopped));
        assert!(lost <= stopped + T, "{} held past the stop + T", p.id);
    }
    let procs = || std::iter::once(&g.a).chain(&g.others).chain([&g.b]);
    let end = Instant::now() + Duration::from_secs(30);
    while procs().filter(|p| holding_since(p, stopped)).count() < holders {
        assert!(Instant::now() < end, "{holders} never held again");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let now = Instant::now();
    let terms: Vec<_> = procs().flat_map(|p| p.terms(now)).collect();
    check_at_most(&terms, holders, Duration::ZERO).unwrap();
    assert!(terms.iter().filter(|t| t.start > stopped).all(|t| t.token > g.token_a));
    g.check_writes();
}

/// Whether `p` holds now by a hold that began after `since` on a live session (not a Curator
/// hold of a node of its earlier session).
fn holding_since(p: &Proc, since: Instant) -> bool {
    let lines = p.lines();
    let last = lines.iter().rev().find(|(_, l)| l.starts_with("elected ") || l.starts_with("lost"));
    last.is_some_and(|(at, l)| *at > since && l.starts_with("elected ") && !stale(l))
}
