//! SimpleDistributedQueue under session faults, against rzk and Apache ZooKeeper 3.8.
//!
//! - take_timeout keeps its bound while the connection is down.
//! - A take waiting through a cut connection, then through an expired session (the manager
//!   opens a new one), still gets the next item, and the queue holds nothing afterwards.

mod support;

use std::time::Duration;

use rzk_recipes::queue::SimpleDistributedQueue;
use support::*;

both_servers! {
    t82_queue_take_survives_cut_and_expiry => take_survives_cut_and_expiry;
}

/// How long a take that must succeed may take on a loaded machine, a new session included.
const TAKE_LIMIT: Duration = Duration::from_secs(30);

async fn take_survives_cut_and_expiry(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t82", kind);
    let (s1, proxy) = session_via_proxy(&server).await;
    let consumer = SimpleDistributedQueue::new(&s1, &path).unwrap();
    let s2 = session(&server).await;
    let producer = SimpleDistributedQueue::new(&s2, &path).unwrap();

    // Disconnected: take_timeout still returns at its deadline.
    proxy.cut();
    eventually(TAKE_LIMIT, "suspended", || !s1.state().is_connected()).await;
    let bounded = consumer.take_timeout(Duration::from_millis(300));
    let got = tokio::time::timeout(Duration::from_secs(3), bounded).await;
    assert_eq!(got.expect("take_timeout kept its bound").unwrap(), None);
    proxy.heal();
    eventually(TAKE_LIMIT, "reconnected", || s1.state().is_connected()).await;

    // Through a short cut: the session lives on.
    let waiting = tokio::spawn({
        let c = consumer.clone();
        async move { c.take().await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    proxy.cut();
    tokio::time::sleep(Duration::from_millis(500)).await;
    proxy.heal();
    producer.offer(b"after cut").await.unwrap();
    let got = tokio::time::timeout(TAKE_LIMIT, waiting).await.expect("take after a cut");
    assert_eq!(got.unwrap().unwrap(), b"after cut");

    // Through an expiry: the manager's next session serves the take.
    let first = s1.session_id();
    let waiting = tokio::spawn({
        let c = consumer.clone();
        async move { c.take().await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    force_expire(&server, &s1, &proxy).await;
    eventually(TAKE_LIMIT, "a new session", || {
        s1.session_id().is_some() && s1.session_id() != first
    })
    .await;
    producer.offer(b"after expiry").await.unwrap();
    let got = tokio::time::timeout(TAKE_LIMIT, waiting).await.expect("take after expiry");
    assert_eq!(got.unwrap().unwrap(), b"after expiry");
    assert_eq!(producer.len().await.unwrap(), 0);
}
