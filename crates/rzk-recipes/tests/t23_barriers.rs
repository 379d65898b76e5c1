//! DistributedBarrier and DistributedDoubleBarrier, against rzk and Apache ZooKeeper 3.8.
//! (The normal path of the barriers: the t10 band's numbers are taken.)
//!
//! - A set barrier holds several waiters until it is removed, then wakes them all; setting
//!   and removing are idempotent; a bounded wait gives up with false.
//! - A double barrier of 3: nobody enters before the third member, nobody leaves before the
//!   last; the members are `<uuid>` nodes beside `ready`, and nothing is left afterwards.
//! - Leaving as Curator 5.4 does: the lowest member keeps its node until it is alone, the
//!   others delete theirs at once.
//! - An enter that times out, or is dropped, leaves no member node; a leave that times out
//!   deletes ours, the lowest's too.
//! - With Java Curator 5.4: a Java waiter released by our remove and ours by Java's; one
//!   double barrier of a Java member and two of ours.

mod support;

use std::time::Duration;

use rzk_recipes::{
    barrier::{DistributedBarrier, DistributedDoubleBarrier},
    session::Session,
};
use support::*;
use tokio::task::JoinHandle;

both_servers! {
    t23_barrier_wakes_all_waiters => barrier_wakes_all_waiters;
    t23_double_barrier_enters_and_leaves_together => double_enters_and_leaves_together;
    t23_double_barrier_timeout_leaves_nothing => double_timeout_leaves_nothing;
}

// Curator in a JVM, against both servers: the `zookeeper-tests` tier only.
#[cfg(feature = "zookeeper-tests")]
both_servers! {
    t23_barrier_with_curator => barrier_with_curator;
    t23_double_barrier_with_curator => double_with_curator;
}

/// How long a wait that must end may take on a loaded machine (a JVM start included).
const LIMIT: Duration = Duration::from_secs(30);
/// How long a wait that must not end is given to end wrongly.
const HOLD: Duration = Duration::from_millis(300);

/// The member names in a double barrier path (`ready` left out), sorted.
async fn members(client: &rzk_client::Client, path: &str) -> Vec<String> {
    let mut names = match client.list_children(path).await {
        Ok(names) => names,
        Err(rzk_client::Error::NoNode) => Vec::new(),
        Err(e) => panic!("list {path}: {e}"),
    };
    names.retain(|n| n != "ready");
    names.sort();
    names
}

fn is_uuid(name: &str) -> bool {
    uuid::Uuid::parse_str(name).is_ok() && name.len() == 36
}

async fn wait_members(client: &rzk_client::Client, path: &str, n: usize) -> Vec<String> {
    let deadline = std::time::Instant::now() + LIMIT;
    loop {
        let names = members(client, path).await;
        if names.len() == n {
            return names;
        }
        assert!(std::time::Instant::now() < deadline, "expected {n} members, have {names:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn spawn_wait(barrier: DistributedBarrier) -> JoinHandle<()> {
    tokio::spawn(async move { barrier.wait_on_barrier().await.unwrap() })
}

async fn joined<T>(handle: JoinHandle<T>, what: &str) -> T {
    tokio::time::timeout(LIMIT, handle).await.unwrap_or_else(|_| panic!("{what}")).unwrap()
}

async fn barrier_wakes_all_waiters(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = format!("{}/deep/gate", test_path("t23", kind));
    let s = session(&server).await;
    let barrier = DistributedBarrier::new(&s, &path).unwrap();
    // Not set: a wait returns at once.
    assert!(barrier.wait_on_barrier_timeout(LIMIT).await.unwrap());
    barrier.set_barrier().await.unwrap();
    barrier.set_barrier().await.unwrap();
    let raw = raw_client(&server).await;
    let (data, _) = raw.get_data(&path).await.unwrap();
    assert!(data.is_empty(), "the barrier node holds no data");

    let mut sessions = Vec::new();
    let mut waiters = Vec::new();
    for _ in 0..3 {
        let s = session(&server).await;
        waiters.push(spawn_wait(DistributedBarrier::new(&s, &path).unwrap()));
        sessions.push(s);
    }
    assert!(!barrier.wait_on_barrier_timeout(HOLD).await.unwrap(), "a bounded wait gives up");
    assert!(waiters.iter().all(|w| !w.is_finished()), "a waiter passed a set barrier");

    barrier.remove_barrier().await.unwrap();
    for w in waiters {
        joined(w, "a waiter was not woken").await;
    }
    barrier.remove_barrier().await.unwrap();
    assert!(raw.check_stat(&path).await.unwrap().is_none());
}

async fn enter(b: &std::sync::Arc<DistributedDoubleBarrier>) -> JoinHandle<()> {
    let b = b.clone();
    tokio::spawn(async move { b.enter().await.unwrap() })
}

async fn leave(b: &std::sync::Arc<DistributedDoubleBarrier>) -> JoinHandle<()> {
    let b = b.clone();
    tokio::spawn(async move { b.leave().await.unwrap() })
}

async fn double_members(
    server: &Server,
    path: &str,
    n: usize,
    threshold: usize,
) -> Vec<(Session, std::sync::Arc<DistributedDoubleBarrier>)> {
    let mut out = Vec::new();
    for _ in 0..n {
        let s = session(server).await;
        let b = std::sync::Arc::new(DistributedDoubleBarrier::new(&s, path, threshold).unwrap());
        out.push((s, b));
    }
    out
}

async fn double_enters_and_leaves_together(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t23", kind);
    let raw = raw_client(&server).await;
    let m = double_members(&server, &path, 3, 3).await;

    let first = vec![enter(&m[0].1).await, enter(&m[1].1).await];
    let names = wait_members(&raw, &path, 2).await;
    assert!(names.iter().all(|n| is_uuid(n)), "member names are UUIDs: {names:?}");
    tokio::time::sleep(HOLD).await;
    assert!(first.iter().all(|e| !e.is_finished()), "entered before the third member");
    assert!(raw.check_stat(&format!("{path}/ready")).await.unwrap().is_none());

    joined(enter(&m[2].1).await, "the third member entered").await;
    for e in first {
        joined(e, "an early member entered").await;
    }
    assert!(raw.check_stat(&format!("{path}/ready")).await.unwrap().is_some());
    let all = wait_members(&raw, &path, 3).await;
    assert!(m.iter().all(|(_, b)| b.member().is_some()));

    // Curator 5.4's leave: the lowest keeps its node until it is alone, the others delete
    // theirs at once.
    let last = m[2].1.member().unwrap();
    let early = vec![leave(&m[0].1).await, leave(&m[1].1).await];
    let mut staying = vec![all[0].clone(), last];
    staying.sort();
    staying.dedup();
    wait_members(&raw, &path, staying.len()).await;
    tokio::time::sleep(HOLD).await;
    assert_eq!(members(&raw, &path).await, staying, "the lowest waits, the others left");
    assert!(early.iter().all(|l| !l.is_finished()), "left before the last member");
    joined(leave(&m[2].1).await, "the last member left").await;
    for l in early {
        joined(l, "an early member left").await;
    }
    assert!(members(&raw, &path).await.is_empty());
    assert!(raw.check_stat(&format!("{path}/ready")).await.unwrap().is_none());
}

async fn double_timeout_leaves_nothing(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t23", kind);
    let raw = raw_client(&server).await;
    let m = double_members(&server, &path, 1, 3).await;
    let b = &m[0].1;

    assert!(!b.enter_timeout(HOLD).await.unwrap(), "entered alone into a barrier of 3");
    wait_members(&raw, &path, 0).await;
    assert!(b.member().is_none());

    // A dropped enter deletes its member node too.
    let entering = enter(b).await;
    wait_members(&raw, &path, 1).await;
    entering.abort();
    wait_members(&raw, &path, 0).await;
    assert!(raw.check_stat(&format!("{path}/ready")).await.unwrap().is_none());

    // A leave that times out deletes our node anyway, the lowest's too: nobody waits for us.
    let pair_path = format!("{path}-pair");
    let pair = double_members(&server, &pair_path, 2, 2).await;
    let entering = vec![enter(&pair[0].1).await, enter(&pair[1].1).await];
    for e in entering {
        joined(e, "a pair member entered").await;
    }
    let (lo, hi) = if pair[0].1.member() < pair[1].1.member() { (0, 1) } else { (1, 0) };
    assert!(!pair[lo].1.leave_timeout(HOLD).await.unwrap(), "left while the other is in");
    assert_eq!(wait_members(&raw, &pair_path, 1).await, [pair[hi].1.member().unwrap()]);
    joined(leave(&pair[hi].1).await, "the other left").await;
    wait_members(&raw, &pair_path, 0).await;
}

#[cfg(feature = "zookeeper-tests")]
async fn barrier_with_curator(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let base = test_path("t23", kind);
    let (path, signal) = (format!("{base}/gate"), format!("{base}/java-waiting"));
    let raw = raw_client(&server).await;
    let s = session(&server).await;
    let barrier = DistributedBarrier::new(&s, &path).unwrap();

    // A Java waiter, released by our remove.
    barrier.set_barrier().await.unwrap();
    let hosts = server.hosts();
    let java = tokio::spawn({
        let (hosts, path, signal) = (hosts.clone(), path.clone(), signal.clone());
        async move { curator::run(&hosts, &path, &["barrier-wait", &signal]).await }
    });
    wait_presence(&raw, &signal, true, LIMIT, "the Java waiter never waited").await;
    barrier.remove_barrier().await.unwrap();
    assert_eq!(joined(java, "the Java waiter was not released").await, ["released"]);

    // Ours, released by Java's remove of a barrier Java set.
    curator::run(&hosts, &path, &["barrier-set"]).await;
    let ours = spawn_wait(barrier.clone());
    assert!(!barrier.wait_on_barrier_timeout(HOLD).await.unwrap(), "Java's barrier is up");
    curator::run(&hosts, &path, &["barrier-remove"]).await;
    joined(ours, "our waiter was not released").await;
}

#[cfg(feature = "zookeeper-tests")]
async fn double_with_curator(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t23", kind);
    let raw = raw_client(&server).await;
    let m = double_members(&server, &path, 2, 3).await;
    let hosts = server.hosts();
    let java = tokio::spawn({
        let (hosts, path) = (hosts.clone(), path.clone());
        async move { curator::run(&hosts, &path, &["double", "3"]).await }
    });
    let ours = vec![enter(&m[0].1).await, enter(&m[1].1).await];
    // Ours can only enter with the Java member: the barrier is for 3.
    for e in ours {
        joined(e, "a Rust member did not enter with Java's").await;
    }
    let ours = vec![leave(&m[0].1).await, leave(&m[1].1).await];
    for l in ours {
        joined(l, "a Rust member did not leave").await;
    }
    assert_eq!(joined(java, "the Java member did not enter and leave").await, ["entered", "left"]);
    assert!(members(&raw, &path).await.is_empty());
    assert!(raw.check_stat(&format!("{path}/ready")).await.unwrap().is_none());
}
