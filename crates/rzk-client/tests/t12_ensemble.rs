//! The client on Apache ZooKeeper 3.8 ensembles of 3 and 5 nodes, under the faults an
//! ensemble user meets: a follower SIGKILLed, the ZAB leader killed and restarted, two of five
//! members killed in turn, black-holed and refusing hosts in the connect string. Each asserts
//! the same session (no expiry), its watches intact, and a bound on the time to be served.

// Apache ZooKeeper ensembles only: the fast tier leaves them out.
#![cfg(feature = "zookeeper-tests")]

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rzk_client::{
    Acls, AddWatchMode, Client, CreateMode, Error, EventType, OneshotWatcher, PersistentWatcher,
};
use rzk_testkit::ensemble::{Ensemble, Role};
use rzk_testkit::proxy::Proxy;
use rzk_testkit::wait::within;
use rzk_wirekit::stats::percentile;

/// The session timeout: an election of three JVMs on two cores fits in it with room.
const T: Duration = Duration::from_secs(10);
const LIMIT: Duration = Duration::from_secs(60);
/// How long a client of a killed follower may take to be served by another member: no
/// election is needed, so only the reconnect's random pause and one handshake.
const FOLLOWER_FAILOVER_MAX: Duration = Duration::from_secs(1);

fn blocking<R>(f: impl FnOnce() -> R) -> R {
    tokio::task::block_in_place(f)
}

fn sid(c: &Client) -> String {
    format!("{:#x}", c.session_id().0)
}

async fn connect(hosts: &str) -> Client {
    let c = Client::connector().with_session_timeout(T);
    within(LIMIT, "connect", c.connect(hosts)).await.expect("connect")
}

/// `n` clients whose sessions are on node `node`, from the connect string naming them all:
/// sessions placed elsewhere are closed and opened again.
async fn clients_on(ens: &Ensemble, node: usize, n: usize) -> Vec<Client> {
    let hosts = ens.hosts();
    let mut out = Vec::new();
    for _ in 0..40 * n {
        if out.len() == n {
            return out;
        }
        let c = connect(&hosts).await;
        if blocking(|| ens.sessions_on(node).contains(&sid(&c))) {
            out.push(c);
        } else {
            c.close().await;
        }
    }
    panic!("{} of {n} sessions on node {} after {} tries", out.len(), node + 1, 40 * n);
}

fn a_follower(ens: &Ensemble) -> usize {
    (0..ens.size()).find(|&i| ens.role(i) == Some(Role::Follower)).expect("a follower")
}

/// Waits until a read on `c` is served again after a fault (a read on the dying connection
/// fails with ConnectionLoss and is made again); returns when it was.
async fn served_again(c: &Client) -> Instant {
    let deadline = Instant::now() + LIMIT;
    loop {
        match within(LIMIT, "served", c.check_stat("/")).await {
            Ok(_) => return Instant::now(),
            Err(Error::ConnectionLoss) if Instant::now() < deadline => {}
            Err(e) => panic!("session {}: {e}", sid(c)),
        }
    }
}

struct Watched {
    once: OneshotWatcher,
    persistent: PersistentWatcher,
}

/// A one-shot and a persistent watch of `path` on `c`.
async fn watch(c: &Client, path: &str) -> Watched {
    let (_, _, once) = c.get_and_watch_data(path).await.expect("get and watch");
    let persistent = c.watch(path, AddWatchMode::Persistent).await.expect("addWatch");
    Watched { once, persistent }
}

/// Changes `path` and asserts every watch in `watched`, whose sessions all moved, fires for
/// it; a persistent watcher was first told to read again (once per move), since ZooKeeper
/// replays no persistent-watch event of a disconnection.
async fn assert_watches_fire(writer: &Client, path: &str, watched: Vec<Watched>) {
    writer.set_data(path, b"changed", None).await.expect("set");
    for mut w in watched {
        let ev = within(LIMIT, "one-shot watch", w.once.changed()).await;
        assert_eq!((ev.event_type, ev.path.as_str()), (EventType::NodeDataChanged, path));
        let mut lagged = 0;
        loop {
            let ev = within(LIMIT, "persistent watch", w.persistent.changed()).await;
            assert_eq!(ev.path, path);
            match ev.event_type {
                EventType::Lagged => lagged += 1,
                t => {
                    assert_eq!(t, EventType::NodeDataChanged);
                    break;
                }
            }
        }
        assert!(lagged >= 1, "told to read again after moving");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_follower_s_client_is_served_by_another_member_within_a_second() {
    // Three or five ZooKeeper JVMs and time bounds: a heavy scenario.
    let _slot = rzk_testkit::slots::heavy_async().await;
    let mut ens = blocking(|| Ensemble::start(3));
    let f = blocking(|| a_follower(&ens));
    let writer = connect(&ens.hosts()).await;
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    writer.create("/f", b"0", &open).await.unwrap();
    let c = clients_on(&ens, f, 1).await.remove(0);
    let watched = watch(&c, "/f").await;
    let id = c.session_id();

    let killed = blocking(|| {
        ens.kill(f);
        Instant::now()
    });
    let took = served_again(&c).await - killed;
    eprintln!("client of follower {} served again after {took:?}", f + 1);
    assert!(took <= FOLLOWER_FAILOVER_MAX, "served after {took:?}");
    assert_eq!(c.session_id(), id, "the same session");
    let now_on = blocking(|| ens.node_of(&sid(&c)));
    assert!(now_on.is_some_and(|n| n != f), "on another member: {now_on:?}");
    assert_watches_fire(&writer, "/f", vec![watched]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_of_a_killed_member_spread_and_survive_two_kills_of_five() {
    // Three or five ZooKeeper JVMs and time bounds: a heavy scenario.
    let _slot = rzk_testkit::slots::heavy_async().await;
    const CLIENTS: usize = 30;
    let mut ens = blocking(|| Ensemble::start(5));
    let k = blocking(|| a_follower(&ens));
    let writer = connect(&ens.hosts()).await;
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    writer.create("/s", b"0", &open).await.unwrap();
    let clients = clients_on(&ens, k, CLIENTS).await;
    let mut watched = Vec::new();
    for c in &clients {
        watched.push(watch(c, "/s").await);
    }
    let ids: Vec<_> = clients.iter().map(Client::session_id).collect();

    // A follower: only its clients move, each to a survivor of its own shuffled order.
    let killed = blocking(|| {
        ens.kill(k);
        Instant::now()
    });
    let mut took = Vec::new();
    for c in &clients {
        took.push(served_again(c).await - killed);
    }
    took.sort();
    let on: Vec<Option<usize>> =
        blocking(|| clients.iter().map(|c| ens.node_of(&sid(c))).collect());
    let mut per_node: HashMap<usize, usize> = HashMap::new();
    for n in on.iter().map(|n| n.expect("every session on a member")) {
        *per_node.entry(n).or_default() += 1;
    }
    eprintln!(
        "{CLIENTS} clients of node {} served again: p50 {:?}, p99 {:?}; now per node {per_node:?}",
        k + 1,
        percentile(&took, 0.5),
        percentile(&took, 0.99)
    );
    let share = CLIENTS as f64 / 4.0;
    assert!(
        per_node.values().all(|&n| n as f64 <= 2.0 * share),
        "a survivor took more than twice its share ({share}): {per_node:?}"
    );

    // The ZAB leader next: three of five still make a quorum, every session lives on.
    let leader = blocking(|| ens.leader()).expect("a ZAB leader");
    blocking(|| ens.kill(leader));
    for c in &clients {
        served_again(c).await;
    }
    assert_eq!(clients.iter().map(Client::session_id).collect::<Vec<_>>(), ids, "same sessions");
    assert_watches_fire(&writer, "/s", watched).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_killed_restarted_and_rejoining_keeps_every_session() {
    // Three or five ZooKeeper JVMs and time bounds: a heavy scenario.
    let _slot = rzk_testkit::slots::heavy_async().await;
    let mut ens = blocking(|| Ensemble::start(3));
    let hosts = ens.hosts();
    let writer = connect(&hosts).await;
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    writer.create("/r", b"0", &open).await.unwrap();
    let mut clients = Vec::new();
    let mut watched = Vec::new();
    for _ in 0..6 {
        let c = connect(&hosts).await;
        watched.push(watch(&c, "/r").await);
        clients.push(c);
    }
    let ids: Vec<_> = clients.iter().map(Client::session_id).collect();

    let leader = blocking(|| ens.leader()).expect("a ZAB leader");
    let killed = blocking(|| {
        ens.kill(leader);
        Instant::now()
    });
    let mut slowest = Duration::ZERO;
    for c in &clients {
        slowest = slowest.max(served_again(c).await - killed);
    }
    eprintln!("after the leader's kill every session was served again within {slowest:?}");
    blocking(|| ens.restart(leader));
    // The restarted node must hold the sessions too: with another member gone, it is half of
    // the quorum that serves them.
    let other = (0..3).find(|&i| i != leader && ens.role(i) == Some(Role::Follower));
    let other = other.or_else(|| (0..3).find(|&i| i != leader)).expect("a member");
    blocking(|| ens.kill(other));
    for c in &clients {
        served_again(c).await;
    }
    assert_eq!(clients.iter().map(Client::session_id).collect::<Vec<_>>(), ids, "same sessions");
    let writer = connect(&hosts).await;
    assert_watches_fire(&writer, "/r", watched).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn black_holed_and_refusing_hosts_cost_at_most_their_share() {
    // Three or five ZooKeeper JVMs and time bounds: a heavy scenario.
    let _slot = rzk_testkit::slots::heavy_async().await;
    const CONNECTS: usize = 20;
    let ens = blocking(|| Ensemble::start(3));
    // Two hosts that accept TCP and answer nothing, one that closes every connection at once,
    // then the three members: six hosts, so an attempt may take T/6.
    let dead: Vec<Proxy> =
        (0..3).map(|_| Proxy::start(ens.hosts().split(',').next().unwrap())).collect();
    dead[0].blackhole();
    dead[1].blackhole();
    dead[2].cut();
    let hosts = format!(
        "{},{},{},{}",
        dead[0].hosts(),
        dead[1].hosts(),
        dead[2].hosts(),
        ens.proxied_hosts()
    );
    let share = T / 6;
    let bound = share * 2 + Duration::from_millis(1500);
    let mut slowest = Duration::ZERO;
    for _ in 0..CONNECTS {
        let started = Instant::now();
        let c = connect(&hosts).await;
        slowest = slowest.max(started.elapsed());
        c.close().await;
    }
    eprintln!("{CONNECTS} connects past 2 black holes and a refusal: slowest {slowest:?}");
    assert!(slowest <= bound, "a connect took {slowest:?}, bound {bound:?}");

    // A session whose member goes black moves within the read timeout and its shares.
    let c = connect(&ens.proxied_hosts()).await;
    let id = c.session_id();
    let on = blocking(|| ens.node_of(&sid(&c))).expect("on a member");
    let cut = Instant::now();
    ens.proxy(on).blackhole();
    let took = served_again(&c).await - cut;
    eprintln!("a session on a black-holed member was served again after {took:?}");
    assert!(took <= T * 2 / 5 + share * 2 + Duration::from_millis(1500), "{took:?}");
    assert_eq!(c.session_id(), id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ensemble_s_config_and_a_session_s_ephemerals_under_a_chroot_of_many_hosts() {
    // Three or five ZooKeeper JVMs and time bounds: a heavy scenario.
    let _slot = rzk_testkit::slots::heavy_async().await;
    let ens = blocking(|| Ensemble::start(3));
    let c = connect(&ens.hosts()).await;
    let (config, _) = c.get_config().await.unwrap();
    let config = String::from_utf8(config).unwrap();
    for i in 1..=3 {
        assert!(config.contains(&format!("server.{i}=")), "{config}");
    }
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    c.create("/app", b"", &open).await.unwrap();
    let rooted = connect(&format!("{}/app", ens.hosts())).await;
    let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    rooted.create("/e1", b"", &ephemeral).await.unwrap();
    rooted.create("/e2", b"", &ephemeral).await.unwrap();
    c.create("/mine", b"", &ephemeral).await.unwrap();
    let mut listed = rooted.list_ephemerals("/").await.unwrap();
    listed.sort();
    assert_eq!(listed, ["/e1", "/e2"], "the chroot's view, this session's only");
    assert_eq!(rooted.list_ephemerals("/e2").await.unwrap(), ["/e2"]);
    assert_eq!(c.list_ephemerals("/").await.unwrap(), ["/mine"]);
    assert_eq!(rooted.get_config().await.unwrap().0, config.as_bytes(), "whatever the chroot");
}
