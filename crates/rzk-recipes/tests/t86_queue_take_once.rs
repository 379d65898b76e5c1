//! SimpleDistributedQueue takes under faults, against a durable rzk server and Apache ZooKeeper
//! 3.8: two producers offer numbered items on their own sessions while three consumer
//! processes (`src/bin/participant.rs --recipe queue`, each through its own proxy) take them;
//! consumers are killed with `kill -9` while busy and replaced, every consumer's connection is
//! cut, and the server is restarted. Afterwards, once the queue is drained:
//!
//! - no item was taken twice, and every item taken was offered;
//! - every acknowledged offer was taken, or is missing only within what the recipe cannot
//!   guard (docs/recipes.md, "Queue"): a consumer killed between its delete and its record, or
//!   a take whose delete's reply was lost (`take unknown`). So at most one item per kill and
//!   per unknown take is missing; the count is printed.

mod support;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use rzk_recipes::{
    queue::SimpleDistributedQueue,
    session::{Session, SessionConfig},
};
use rzk_testkit::proxy::Proxy;
use rzk_testkit::wait::within;
use support::participant::Proc;
use support::*;
use tokio::sync::watch;

both_servers! {
    t86_queue_take_once_under_faults => take_once_under_faults;
}

const PRODUCERS: usize = 2;
const CONSUMERS: usize = 3;
/// The pause between two offers of a producer: items keep coming through every fault.
const OFFER_PAUSE: Duration = Duration::from_millis(10);
/// How long anything that must happen may take on a loaded machine (a JVM restart included).
const LIMIT: Duration = Duration::from_secs(40);

/// What the producers offered, by item: acknowledged, or of unknown outcome (a lost reply).
#[derive(Default)]
struct Offered {
    acked: HashSet<String>,
    unknown: HashSet<String>,
}

/// Offers `p<producer>-<n>` for n = 0, 1, ... on a session of its own until `stop` is set.
async fn produce(
    hosts: String,
    path: String,
    producer: usize,
    stop: watch::Receiver<bool>,
) -> Offered {
    let config = SessionConfig::new(hosts).with_session_timeout(T);
    let s = Session::connect(config).await.expect("connect");
    let queue = SimpleDistributedQueue::new(&s, &path).unwrap();
    let mut offered = Offered::default();
    for n in 0.. {
        if *stop.borrow() {
            break;
        }
        let item = format!("p{producer}-{n}");
        match queue.offer(item.as_bytes()).await {
            Ok(_) => offered.acked.insert(item),
            Err(e) if e.is_indeterminate() => offered.unknown.insert(item),
            Err(e) => panic!("offer {item}: {e}"),
        };
        tokio::time::sleep(OFFER_PAUSE).await;
    }
    offered
}

fn consumer(proxy: &Proxy, path: &str, id: &str) -> Proc {
    Proc::spawn(&proxy.hosts(), path, "", id, "queue")
}

/// The rest of every line `<prefix><rest>` of the processes.
fn lines_of(procs: &[&Proc], prefix: &str) -> Vec<String> {
    let all = procs.iter().flat_map(|p| p.lines());
    all.filter_map(|(_, l)| l.strip_prefix(prefix).map(str::to_string)).collect()
}

/// Waits until `p` has taken `n` more items.
async fn busy(p: &mut Proc, n: usize) {
    for _ in 0..n {
        p.expect("took ", LIMIT).await;
    }
}

/// The acknowledged items neither taken nor `queued`: `Err` for an item taken twice or never
/// offered.
fn missing(
    offered: &Offered,
    procs: &[&Proc],
    queued: &HashSet<String>,
) -> Result<Vec<String>, String> {
    let mut taken: HashMap<String, usize> = HashMap::new();
    for item in lines_of(procs, "took ") {
        *taken.entry(item).or_default() += 1;
    }
    if let Some((item, n)) = taken.iter().find(|(_, n)| **n > 1) {
        return Err(format!("{item} taken {n} times"));
    }
    let known = |i: &String| offered.acked.contains(i) || offered.unknown.contains(i);
    if let Some(item) = taken.keys().chain(queued).find(|i| !known(i)) {
        return Err(format!("{item} taken or queued but never offered"));
    }
    let gone = offered.acked.iter().filter(|i| !taken.contains_key(*i) && !queued.contains(*i));
    Ok(gone.cloned().collect())
}

/// The items in the queue now.
async fn queued(raw: &rzk_client::Client, path: &str) -> HashSet<String> {
    let mut items = HashSet::new();
    for name in children(raw, path).await.into_iter().filter(|n| n.starts_with("qn-")) {
        if let Ok((data, _)) = raw.get_data(&format!("{path}/{name}")).await {
            items.insert(String::from_utf8(data).unwrap());
        }
    }
    items
}

async fn take_once_under_faults(kind: Kind) {
    let mut server = Server::start(kind, Settings { durable: true, ..Settings::default() });
    let path = test_path("t86", kind);
    let proxies: Vec<Proxy> = (0..CONSUMERS).map(|_| Proxy::start(server.hosts())).collect();
    let mut live: Vec<Proc> = Vec::new();
    for (i, proxy) in proxies.iter().enumerate() {
        let mut p = consumer(proxy, &path, &format!("c{i}"));
        p.expect("joined", LIMIT).await;
        live.push(p);
    }
    let (stop, stopped) = watch::channel(false);
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|i| tokio::spawn(produce(server.hosts(), path.clone(), i, stopped.clone())))
        .collect();

    // kill -9 of busy consumers, each replaced by a new process on the same proxy.
    let mut dead = Vec::new();
    for (round, i) in [0, 1, 0].into_iter().enumerate() {
        busy(&mut live[i], 5).await;
        live[i].kill();
        let next = consumer(&proxies[i], &path, &format!("c{i}-{round}"));
        dead.push(std::mem::replace(&mut live[i], next));
        live[i].expect("joined", LIMIT).await;
    }
    // Every consumer's connection cut while it takes; its session lives on.
    for (i, proxy) in proxies.iter().enumerate() {
        busy(&mut live[i], 3).await;
        proxy.cut();
        tokio::time::sleep(Duration::from_millis(300)).await;
        proxy.heal();
    }
    // A server restart under everyone.
    busy(&mut live[0], 3).await;
    let downtime = match kind {
        Kind::Rzk => Duration::from_secs(1),
        Kind::ZooKeeper => Duration::ZERO, // the JVM start is the downtime
    };
    tokio::task::block_in_place(|| server.restart_after(downtime));
    for p in &mut live {
        busy(p, 3).await;
    }
    stop.send(true).unwrap();
    let mut offered = Offered::default();
    for p in producers {
        let o = within(LIMIT, "a producer's end", p).await.unwrap();
        offered.acked.extend(o.acked);
        offered.unknown.extend(o.unknown);
    }

    // The consumers drain the queue; then every line of theirs is in (the killed ones' too).
    let raw = raw_client(&server).await;
    let deadline = std::time::Instant::now() + LIMIT;
    let (gone, unknown_takes) = loop {
        let q = queued(&raw, &path).await;
        let procs: Vec<&Proc> = dead.iter().chain(&live).collect();
        let gone = missing(&offered, &procs, &q).unwrap();
        let unknown_takes = lines_of(&procs, "take unknown").len();
        if q.is_empty() && gone.len() <= dead.len() + unknown_takes {
            break (gone, unknown_takes);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} queued, {} acknowledged items gone ({:?}...), {} kills, {unknown_takes} unknown takes",
            q.len(),
            gone.len(),
            &gone[..gone.len().min(5)],
            dead.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let procs: Vec<&Proc> = dead.iter().chain(&live).collect();
    eprintln!(
        "{} acknowledged, {} unknown offers; {} taken; gone {gone:?} after {} kills and \
         {unknown_takes} unknown takes; failed takes: {:?}",
        offered.acked.len(),
        offered.unknown.len(),
        lines_of(&procs, "took ").len(),
        dead.len(),
        lines_of(&procs, "take failed"),
    );
    // Taking nothing twice also holds once the last lines are in.
    missing(&offered, &procs, &HashSet::new()).unwrap();
}
