//! Curator's DistributedQueue under a lock path is at least once, against rzk and Apache
//! ZooKeeper 3.8: consumer processes (`src/bin/participant.rs --recipe curator-queue:LOCK`)
//! are killed with `kill -9` while they process a node. Each killed consumer's node stays in
//! the queue, passed over by the consumer in this process while its lock lives, and is
//! delivered to it once the killed process's session has expired (woken by the lock node's
//! deletion, with no new put). Every item is processed to the end exactly once by the
//! surviving consumer, none is lost, and no lock node is left.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use rzk_recipes::{queue::DistributedQueue, session::Session};
use support::participant::Proc;
use support::*;

both_servers! {
    t43_queue_consumer_killed_mid_processing => killed_mid_processing;
    t43_queue_later_busy_node_freed => later_busy_node_freed;
}

const NODES: usize = 12;
/// Consumer processes killed, one after another.
const KILLED: usize = 2;
/// How long anything that must happen may take on a loaded machine: the killed consumers'
/// sessions expire within T of the kill.
const LIMIT: Duration = Duration::from_secs(40);
/// A killed consumer's processing: longer than any test, so the kill lands inside it.
const STALL_MS: &str = "3600000";

async fn killed_mid_processing(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let hosts = server.hosts();
    let path = test_path("t43", kind);
    let locks = format!("{path}-locks");
    let observer = raw_client(&server).await;
    let s: Session = session(&server).await;
    let q = DistributedQueue::new(&s, &path).unwrap().with_lock_path(&locks).unwrap();
    for i in 0..NODES {
        q.put(format!("item-{i}").as_bytes()).await.unwrap();
    }

    let (mut procs, stalled) = stall(&hosts, &path, &locks, KILLED).await;
    assert_eq!(stalled, ["item-0", "item-1"], "each process has the lowest unlocked node");
    assert_eq!(wait_children(&observer, &locks, KILLED).await.len(), KILLED);
    for p in &mut procs {
        p.kill();
    }

    // Ours takes the rest while the locks live, then the stalled nodes once they are freed.
    let took = consume(&q, NODES, "every node delivered").await;
    let expected: BTreeSet<String> = (0..NODES).map(|i| format!("item-{i}")).collect();
    assert_eq!(took.iter().cloned().collect::<BTreeSet<_>>(), expected, "none lost: {took:?}");
    assert_eq!(took.len(), NODES, "none twice: {took:?}");
    // Which of the killed sessions expires first is the server's choice.
    let last: BTreeSet<_> = took[NODES - KILLED..].iter().cloned().collect();
    assert_eq!(last, stalled.iter().cloned().collect(), "the stalled nodes came last: {took:?}");
    assert_eq!(q.poll().await.unwrap(), None);
    assert_eq!(children(&observer, &locks).await, Vec::<String>::new(), "no lock left");
}

/// The items of `nodes` nodes consumed under the lock path, each within LIMIT (`what` names the
/// delivery a timeout missed).
async fn consume(q: &DistributedQueue, nodes: usize, what: &str) -> Vec<String> {
    let mut took = Vec::new();
    for _ in 0..nodes {
        let consumed = q.consume(|items| async { Ok::<_, ()>(items) });
        let items = tokio::time::timeout(LIMIT, consumed).await.expect(what).unwrap().unwrap();
        took.extend(items.into_iter().map(|i| String::from_utf8(i).unwrap()));
    }
    took
}

/// Starts `n` consumer processes one after another; each locks the lowest node free of locks
/// and stalls in processing it. The processes, and the items they stall on.
async fn stall(hosts: &str, path: &str, locks: &str, n: usize) -> (Vec<Proc>, Vec<String>) {
    let (mut procs, mut stalled) = (Vec::new(), Vec::new());
    for k in 0..n {
        let recipe = format!("curator-queue:{locks}");
        let id = format!("consumer-{k}");
        let mut p = Proc::spawn_with(hosts, path, &id, &recipe, &["--work-ms", STALL_MS]);
        stalled.push(p.expect("processing ", LIMIT).await.1);
        procs.push(p);
    }
    (procs, stalled)
}

/// The head node's consumer is alive and slow; the next busy node's consumer is killed. Ours,
/// waiting behind both, takes that node once the killed session expires, without waiting for
/// the head's consumer (every lock is watched, not only the head's).
async fn later_busy_node_freed(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t43-later", kind);
    let locks = format!("{path}-locks");
    let s: Session = session(&server).await;
    let q = DistributedQueue::new(&s, &path).unwrap().with_lock_path(&locks).unwrap();
    for i in 0..3 {
        q.put(format!("item-{i}").as_bytes()).await.unwrap();
    }
    let (mut procs, stalled) = stall(&server.hosts(), &path, &locks, 2).await;
    assert_eq!(stalled, ["item-0", "item-1"]);
    procs[1].kill();
    let delivered = "the killed consumer's node delivered while the head's consumer lives";
    let took = consume(&q, 2, delivered).await;
    assert_eq!(took, ["item-2", "item-1"]);
    assert_eq!(q.len().await.unwrap(), 1, "the live consumer's node stays");
}
