//! DistributedAtomicLong under concurrent increments from four clients (each through a
//! proxy, two of which cut their connections) and a server restart, against a durable rzk
//! server and Apache ZooKeeper 3.8. Afterwards:
//!
//! - the acknowledged increments are linearizable: each saw its own value (no two acknowledged
//!   `post`s are equal), and each client's `post`s increase;
//! - the final value counts every acknowledged increment, and beyond them only increments that
//!   failed with `ConnectionLoss` (the documented outcome of a lost reply: reported to the
//!   caller, maybe applied): acked <= final <= acked + unknown.

mod support;

use std::collections::HashSet;
use std::time::Duration;

use rzk_recipes::{
    counter::{DistributedAtomicLong, RetryPolicy},
    session::{Session, SessionConfig},
    Error,
};
use rzk_testkit::proxy::Proxy;
use rzk_testkit::wait::within;
use support::*;
use tokio::sync::watch;

both_servers! {
    t87_counter_restart_and_cuts => counter_restart_and_cuts;
}

const CLIENTS: usize = 4;
/// Enough attempts that contention alone never exhausts them.
const RETRY: RetryPolicy = RetryPolicy {
    max_attempts: 10_000,
    backoff: Duration::from_millis(1),
    max_backoff: Duration::from_millis(20),
};
/// How long anything that must happen may take on a loaded machine (a JVM restart included).
const LIMIT: Duration = Duration::from_secs(40);

/// One client's increments: the `post` of each acknowledged one, in order, and how many failed
/// with `ConnectionLoss`.
#[derive(Default)]
struct Adds {
    posts: Vec<i64>,
    unknown: usize,
}

/// Increments until `stop` is set, publishing the acknowledged count on `acked`.
async fn increment(
    hosts: String,
    path: String,
    stop: watch::Receiver<bool>,
    acked: watch::Sender<usize>,
) -> Adds {
    let config = SessionConfig::new(hosts).with_session_timeout(T);
    let s = Session::connect(config).await.expect("connect");
    let counter = DistributedAtomicLong::new(&s, &path, RETRY).unwrap();
    let mut adds = Adds::default();
    while !*stop.borrow() {
        match counter.increment().await {
            Ok(v) => {
                assert_eq!(v.post, v.pre + 1);
                adds.posts.push(v.post);
                acked.send_replace(adds.posts.len());
            }
            Err(Error::ConnectionLoss) => adds.unknown += 1,
            Err(e) => panic!("increment: {e}"),
        }
    }
    adds
}

/// Waits until every client has `n` more acknowledged increments.
async fn progress(acked: &mut [watch::Receiver<usize>], n: usize) {
    let targets: Vec<usize> = acked.iter().map(|a| *a.borrow() + n).collect();
    let all = async {
        for (a, target) in acked.iter_mut().zip(&targets) {
            a.wait_for(|v| v >= target).await.expect("a client ended");
        }
    };
    if tokio::time::timeout(LIMIT, all).await.is_err() {
        let counts: Vec<usize> = acked.iter().map(|a| *a.borrow()).collect();
        panic!(
            "no {n} more increments each within {LIMIT:?}: acked {counts:?}, wanted {targets:?}"
        );
    }
}

async fn counter_restart_and_cuts(kind: Kind) {
    let mut server = Server::start(kind, Settings { durable: true, ..Settings::default() });
    let path = test_path("t87", kind);
    // Every client goes through a proxy, two of which are cut: a compare-and-set loop favours
    // the shortest round trip, and on a loaded machine a proxied client beside direct ones
    // can lose every race for longer than LIMIT.
    let proxies: Vec<Proxy> = (0..CLIENTS).map(|_| Proxy::start(server.hosts())).collect();
    let (stop, stopped) = watch::channel(false);
    let mut acked = Vec::new();
    let mut clients = Vec::new();
    for proxy in &proxies {
        let hosts = proxy.hosts();
        let (tx, rx) = watch::channel(0);
        acked.push(rx);
        clients.push(tokio::spawn(increment(hosts, path.clone(), stopped.clone(), tx)));
    }
    progress(&mut acked, 20).await;
    for proxy in &proxies[..2] {
        proxy.cut();
        tokio::time::sleep(Duration::from_millis(300)).await;
        proxy.heal();
        progress(&mut acked, 10).await;
    }
    let downtime = match kind {
        Kind::Rzk => Duration::from_secs(1),
        Kind::ZooKeeper => Duration::ZERO, // the JVM start is the downtime
    };
    tokio::task::block_in_place(|| server.restart_after(downtime));
    progress(&mut acked, 20).await;
    stop.send(true).unwrap();

    let (mut posts, mut unknown) = (Vec::new(), 0);
    for c in clients {
        let adds = within(LIMIT, "a client's end", c).await.unwrap();
        assert!(adds.posts.windows(2).all(|w| w[0] < w[1]), "a client's posts go back");
        posts.extend(adds.posts);
        unknown += adds.unknown;
    }
    let s = session(&server).await;
    let value = DistributedAtomicLong::new(&s, &path, RETRY).unwrap().get().await.unwrap();
    let distinct: HashSet<i64> = posts.iter().copied().collect();
    eprintln!("{} acknowledged, {unknown} unknown increments; final {value}", posts.len());
    assert_eq!(distinct.len(), posts.len(), "two acknowledged increments saw the same value");
    let acked = posts.len() as i64;
    assert!(posts.iter().all(|p| *p <= value), "an acknowledged post above the final value");
    assert!(
        acked <= value && value <= acked + unknown as i64,
        "final {value}: {acked} acknowledged, {unknown} unknown"
    );
}
