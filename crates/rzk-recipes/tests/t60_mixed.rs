//! Mixed elections with Java Curator 5.4 in the same path (docs/election.md §3.5): LeaderLatch
//! with LeaderLatch, LeaderSelector with LeaderSelector. One leader at a time, FIFO across the
//! languages, and both sides list the same participants in the same order.

// Curator in a JVM in every scenario, against both servers: the `zookeeper-tests` tier only.
#![cfg(feature = "zookeeper-tests")]

mod support;

use std::time::{Duration, Instant};

use rzk_recipes::election::{CloseMode, LatchOptions, LeaderLatch};
use support::checker::{check, Checker, TermRecord};
use support::java::JavaParticipant;
use support::*;

both_servers! {
    t60_mixed_latch => mixed_latch;
    t61_mixed_selector => mixed_selector;
}

async fn mixed_latch(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t60", kind);
    let raw = raw_client(&server).await;
    let checker = Checker::new();
    let mut sessions = Vec::new();
    let rust = |id: &'static str| {
        let hosts = server.hosts();
        let path = path.clone();
        let checker = checker.clone();
        let raw = raw.clone();
        async move {
            let s = rzk_recipes::session::Session::connect(
                rzk_recipes::session::SessionConfig::new(hosts).with_session_timeout(T),
            )
            .await
            .unwrap();
            let l = LeaderLatch::new(&s, &path, LatchOptions::default().with_id(id)).unwrap();
            checker.attach(id, l.events(), Some(raw));
            l.start().await.unwrap();
            (s, l)
        }
    };
    let (s0, r0) = rust("rust-0").await;
    let mut j1 = JavaParticipant::start(&server.hosts(), &path, "latch", "java-1", 0).await;
    let (s2, r2) = rust("rust-2").await;
    let mut j3 = JavaParticipant::start(&server.hosts(), &path, "latch", "java-3", 0).await;
    sessions.extend([s0, s2]);

    // Both sides list the same participants in the same order.
    let ids: Vec<String> =
        r2.participants().await.unwrap().list.into_iter().map(|p| p.id).collect();
    assert_eq!(ids, ["rust-0", "java-1", "rust-2", "java-3"]);
    j3.send("participants");
    let (_, java_ids) = j3.expect("participants", Duration::from_secs(5)).await;
    assert_eq!(java_ids, "rust-0*,java-1,rust-2,java-3");

    let mut java_terms = Vec::new();
    let mut tokens = Vec::new();
    // rust-0 leads, closes; java-1 leads, closes; rust-2; java-3.
    let l0 = r0.await_leadership_timeout(Duration::from_secs(1)).await.unwrap().expect("rust-0");
    tokens.push(l0.token().0);
    r0.close_with(CloseMode::NotifyLeader).await.unwrap();
    for (java, rust_next) in [(&mut j1, Some(&r2)), (&mut j3, None)] {
        let (elected, _) = java.expect("elected", Duration::from_secs(2)).await;
        let node = java_node(&raw, &path, &java.id).await;
        let czxid = raw.get_data(&node).await.unwrap().1.czxid;
        tokens.push(czxid);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let closed = java.send("close");
        java.expect("lost", Duration::from_secs(2)).await; // NOTIFY_LEADER
        java.expect("closed", Duration::from_secs(2)).await;
        java_terms.push(TermRecord {
            participant: java.id.clone(),
            node,
            token: czxid,
            start: elected,
            end: Some(closed),
        });
        if let Some(r) = rust_next {
            let l = r.await_leadership_timeout(Duration::from_secs(1)).await.unwrap();
            let l = l.expect("the next rust participant leads");
            tokens.push(l.token().0);
            r.clone().close_with(CloseMode::NotifyLeader).await.unwrap();
        }
    }
    checker.assert_ok();
    let mut all = checker.terms();
    all.extend(java_terms);
    all.sort_by_key(|t| t.start);
    let order: Vec<&str> = all.iter().map(|t| t.participant.as_str()).collect();
    assert_eq!(order, ["rust-0", "java-1", "rust-2", "java-3"], "FIFO across languages");
    if let Err(e) = check(&all, Duration::ZERO) {
        panic!("checker over both languages: {e}\n{all:#?}");
    }
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "tokens {tokens:?}");
}

/// The node of a Curator participant, found by its id (its data).
async fn java_node(raw: &rzk_client::Client, path: &str, id: &str) -> String {
    for c in raw.list_children(path).await.unwrap() {
        let node = format!("{path}/{c}");
        if let Ok((data, _)) = raw.get_data(&node).await {
            if data == id.as_bytes() {
                return node;
            }
        }
    }
    panic!("no node of {id} in {path}");
}

async fn mixed_selector(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t61", kind);
    let checker = Checker::new();
    let mut sessions = Vec::new();
    let mut rust = Vec::new();
    let mut java = Vec::new();
    for (i, id) in ["rust-a", "java-b", "rust-c", "java-d"].into_iter().enumerate() {
        if i % 2 == 0 {
            let s = session(&server).await;
            let sel = queued_selector(&s, &path, id, Duration::from_millis(200), &checker).await;
            rust.push(sel);
            sessions.push(s);
        } else {
            java.push(JavaParticipant::start(&server.hosts(), &path, "selector", id, 200).await);
        }
    }
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(4)).await;
    // Terms that begin once closing has started are not part of the rotation: a closed
    // selector leaves the queue, so its turn legitimately passes to the next participant.
    let closing = Instant::now();
    for s in rust {
        s.close().await.unwrap();
    }
    for j in &mut java {
        j.send("close");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    checker.assert_ok();
    // The timeline over both languages: Rust terms from the checker, Java terms from the
    // "elected"/"lost" lines.
    let mut all: Vec<TermRecord> = checker.terms();
    for j in &java {
        let mut open: Option<Instant> = None;
        for (at, line) in j.lines() {
            match line.as_str() {
                "elected" => open = Some(at),
                "lost" => {
                    let s = open.take().expect("lost after elected");
                    all.push(TermRecord {
                        participant: j.id.clone(),
                        node: String::new(),
                        token: 0,
                        start: s,
                        end: Some(at),
                    });
                }
                _ => {}
            }
        }
    }
    all.sort_by_key(|t| t.start);
    let order: Vec<&str> =
        all.iter().filter(|t| t.start < closing).map(|t| t.participant.as_str()).collect();
    eprintln!("{} terms in {:?}: {order:?}", order.len(), start.elapsed());
    assert!(order.len() >= 10, "{order:?}");
    // Participants join one after the other (a JVM takes a while), so the early rounds are
    // shorter; from the first round with all four, the rotation is strict.
    let begin = (0..order.len() - 4)
        .find(|&i| {
            let mut w = order[i..i + 4].to_vec();
            w.sort();
            w == ["java-b", "java-d", "rust-a", "rust-c"]
        })
        .unwrap_or_else(|| panic!("never a full round: {order:?}"));
    let cycle = &order[begin..begin + 4];
    assert!(order.len() - begin >= 12, "at least three full rounds: {order:?}");
    for (k, p) in order[begin..].iter().enumerate() {
        assert_eq!(*p, cycle[k % 4], "strict round-robin across languages: {order:?}");
    }
    // No overlap. Java times are arrival times of its lines (a little late): a Java end may
    // trail the next Rust start by the pipe latency, never by more.
    for w in all.windows(2) {
        let tolerance = if w[0].token == 0 { Duration::from_millis(50) } else { Duration::ZERO };
        let end = w[0].end.expect("ended");
        assert!(end <= w[1].start + tolerance, "overlap: {:?} then {:?}", w[0], w[1]);
    }
}
