//! The barriers under session faults, against rzk and Apache ZooKeeper 3.8.
//!
//! - A bounded barrier wait keeps its bound while the connection is down.
//! - A barrier wait survives a cut connection (the barrier removed during the cut) and an
//!   expired session (the manager opens a new one): it returns once the barrier is gone.
//! - A double barrier member waiting to enter through an expiry enters again under a new
//!   name: the node of the earlier session is never counted as ours, and nothing is left.

mod support;

use std::time::Duration;

use rzk_recipes::barrier::{DistributedBarrier, DistributedDoubleBarrier};
use support::*;

both_servers! {
    t83_barrier_wait_survives_cut_and_expiry => wait_survives_cut_and_expiry;
    t83_double_barrier_enter_survives_expiry => enter_survives_expiry;
}

/// How long a wait that must end may take on a loaded machine, a new session included.
const LIMIT: Duration = Duration::from_secs(30);

async fn wait_survives_cut_and_expiry(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t83", kind);
    let (s1, proxy) = session_via_proxy(&server).await;
    let waiter = DistributedBarrier::new(&s1, &path).unwrap();
    let s2 = session(&server).await;
    let setter = DistributedBarrier::new(&s2, &path).unwrap();
    setter.set_barrier().await.unwrap();

    // Disconnected: the bounded wait still returns at its deadline.
    proxy.cut();
    eventually(LIMIT, "suspended", || !s1.state().is_connected()).await;
    let bounded = waiter.wait_on_barrier_timeout(Duration::from_millis(300));
    let got = tokio::time::timeout(Duration::from_secs(3), bounded).await;
    assert!(!got.expect("the bounded wait kept its bound").unwrap());
    proxy.heal();
    eventually(LIMIT, "reconnected", || s1.state().is_connected()).await;

    // Removed while the waiter's connection is cut: it returns after the reconnect.
    let waiting = tokio::spawn({
        let w = waiter.clone();
        async move { w.wait_on_barrier().await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    proxy.cut();
    setter.remove_barrier().await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "returned while cut off");
    proxy.heal();
    tokio::time::timeout(LIMIT, waiting).await.expect("wait after a cut").unwrap().unwrap();

    // Through an expiry: the manager's next session serves the wait.
    setter.set_barrier().await.unwrap();
    let first = s1.session_id();
    let waiting = tokio::spawn({
        let w = waiter.clone();
        async move { w.wait_on_barrier().await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    force_expire(&server, &s1, &proxy).await;
    eventually(LIMIT, "a new session", || s1.session_id().is_some() && s1.session_id() != first)
        .await;
    assert!(!waiting.is_finished(), "returned while the barrier is set");
    setter.remove_barrier().await.unwrap();
    tokio::time::timeout(LIMIT, waiting).await.expect("wait after expiry").unwrap().unwrap();
}

async fn enter_survives_expiry(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t83", kind);
    let raw = raw_client(&server).await;
    let (s1, proxy) = session_via_proxy(&server).await;
    let a = std::sync::Arc::new(DistributedDoubleBarrier::new(&s1, &path, 2).unwrap());
    let s2 = session(&server).await;
    let b = DistributedDoubleBarrier::new(&s2, &path, 2).unwrap();

    let entering = tokio::spawn({
        let a = a.clone();
        async move { a.enter().await }
    });
    eventually(LIMIT, "a entered", || a.member().is_some()).await;
    let before = a.member().unwrap();
    let first = s1.session_id();
    force_expire(&server, &s1, &proxy).await;
    eventually(LIMIT, "a new session", || s1.session_id().is_some() && s1.session_id() != first)
        .await;
    eventually(LIMIT, "a entered again", || a.member().is_some_and(|m| m != before)).await;
    assert!(!entering.is_finished(), "entered alone into a barrier of 2");

    tokio::time::timeout(LIMIT, b.enter()).await.expect("b entered").unwrap();
    tokio::time::timeout(LIMIT, entering).await.expect("a entered").unwrap().unwrap();
    let mut names = raw.list_children(&path).await.unwrap();
    names.sort();
    let mut expected = vec![a.member().unwrap(), b.member().unwrap(), "ready".to_string()];
    expected.sort();
    assert_eq!(names, expected, "the earlier session's node is gone, not counted");

    let (left_a, left_b) = tokio::join!(a.leave(), b.leave());
    left_a.unwrap();
    left_b.unwrap();
    let left = match raw.list_children(&path).await {
        Ok(names) => names,
        Err(rzk_client::Error::NoNode) => Vec::new(),
        Err(e) => panic!("list: {e}"),
    };
    assert!(left.is_empty(), "left behind: {left:?}");
}
