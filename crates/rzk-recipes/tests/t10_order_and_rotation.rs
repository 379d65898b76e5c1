//! Recipe order (docs/election.md §1.2, §1.4). Five LeaderLatches joined in order close one by
//! one (NotifyLeader): the oldest open node always leads; only closing leaders emit `Lost`. Three
//! auto-requeueing LeaderSelectors rotate strictly round-robin with rising tokens. A selector
//! without auto-requeue leaves the queue; `requeue()` queues it at the tail once;
//! `interrupt_leadership()` cancels its task (`lost()` = `Interrupted`) and, with auto-requeue on,
//! queues it again (CURATOR-518).

mod support;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rzk_recipes::{
    election::{
        CloseMode, ElectionEvent, LatchOptions, LeaderLatch, LeaderSelector, SelectorOptions,
        Status,
    },
    LossReason,
};
use support::checker::Checker;
use support::*;

both_servers! {
    t10_latch_close_order => latch_close_order;
    t10_selector_rotation => selector_rotation;
    t10_selector_requeue => selector_requeue;
}

/// Five latches joined in order; client `i` closes (NotifyLeader) at `2·(i+5)` ticks of
/// 100 ms. The leader is always the oldest open node: 0 until 1.0 s, 1 until 1.2 s, ... 4
/// until 1.8 s.
async fn latch_close_order(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t10", kind);
    let checker = Checker::new();
    let mut latches = Vec::new();
    let mut events = Vec::new();
    let mut sessions = Vec::new();
    for i in 0..5 {
        let s = session(&server).await;
        let l =
            LeaderLatch::new(&s, &path, LatchOptions::default().with_id(i.to_string())).unwrap();
        checker.attach(&i.to_string(), l.events(), None);
        events.push(l.events());
        l.start().await.unwrap();
        latches.push(l);
        sessions.push(s);
    }
    for (i, latch) in latches.into_iter().enumerate() {
        // Each leads once the one before it has closed: waited for, not timed, since a
        // close's delete and the next latch's listing take what the machine gives them.
        eventually(Duration::from_secs(10), &format!("{i} leads"), || latch.has_leadership()).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(latch.has_leadership(), "{i} still leads");
        latch.close_with(CloseMode::NotifyLeader).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    for (i, ev) in events.iter_mut().enumerate() {
        let mut lost = Vec::new();
        while let Some(e) = ev.try_recv() {
            if let ElectionEvent::Lost { reason, .. } = e {
                lost.push(reason);
            }
        }
        assert_eq!(lost, vec![LossReason::Closed], "participant {i}");
    }
    checker.assert_ok();
    assert_eq!(checker.leaders(), ["0", "1", "2", "3", "4"]);
}

type Log = Arc<Mutex<Vec<(String, i64)>>>;

fn selector_task(
    id: &str,
    log: &Log,
    work: Duration,
) -> impl FnMut(
    rzk_recipes::Leadership,
) -> std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<(), rzk_recipes::BoxError>> + Send>,
> + Send
       + 'static {
    let (id, log) = (id.to_string(), log.clone());
    move |l| {
        log.lock().unwrap().push((id.clone(), l.token().0));
        Box::pin(async move {
            tokio::time::sleep(work).await;
            Ok(())
        })
    }
}

async fn selector_rotation(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t10", kind);
    let checker = Checker::new();
    let log: Log = Arc::default();
    let mut selectors = Vec::new();
    let mut sessions = Vec::new();
    for id in ["a", "b", "c"] {
        let s = session(&server).await;
        let sel = LeaderSelector::new(
            &s,
            &path,
            SelectorOptions::default().with_id(id).with_auto_requeue(true),
        )
        .unwrap();
        checker.attach(id, sel.events(), None);
        sel.start(selector_task(id, &log, Duration::from_millis(200))).unwrap();
        selectors.push(sel);
        sessions.push(s);
    }
    // Fifteen terms (five rounds) however long the machine takes for them.
    eventually(Duration::from_secs(60), "15 terms", || checker.leaders().len() >= 15).await;
    let closing = Instant::now();
    for s in selectors {
        s.close().await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    checker.assert_ok();
    let leaders = checker.leaders_before(Some(closing));
    let order = &leaders[..3];
    let mut sorted = order.to_vec();
    sorted.sort();
    assert_eq!(sorted, ["a", "b", "c"], "first round is a permutation: {leaders:?}");
    for (k, l) in leaders.iter().enumerate() {
        assert_eq!(*l, order[k % 3], "strict round-robin: {leaders:?}");
    }
    assert!(leaders.len() >= 15, "15 terms before the close, got {}", leaders.len());
    let count = |id: &str| leaders.iter().filter(|l| *l == id).count();
    let counts = [count("a"), count("b"), count("c")];
    assert!(counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1, "{counts:?}");
    let tokens: Vec<i64> = log.lock().unwrap().iter().map(|(_, t)| *t).collect();
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "tokens {tokens:?}");
}

async fn wait_joined(sel: &LeaderSelector) {
    eventually(Duration::from_secs(2), "joined", || sel.our_path().is_some()).await;
}

/// C's node was created after every node of `before`: it queued at the tail. A and B keep
/// rotating, each requeueing behind C within one term, so "C is last now" holds only briefly.
async fn assert_at_tail(a: &LeaderSelector, before: &rzk_recipes::election::Participants) {
    let now = a.participants().await.unwrap();
    let c = now.list.iter().find(|p| p.id == "c").expect("c queued");
    assert!(
        before.list.iter().all(|p| p.token < c.token),
        "c at the tail: {before:?}, then {now:?}"
    );
}

async fn selector_requeue(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t10", kind);
    let checker = Checker::new();
    let log: Log = Arc::default();
    let mut sessions = Vec::new();
    let make = |id: &str, auto: bool, s: &rzk_recipes::session::Session| {
        let sel = LeaderSelector::new(
            s,
            &path,
            SelectorOptions::default().with_id(id).with_auto_requeue(auto),
        )
        .unwrap();
        checker.attach(id, sel.events(), None);
        sel
    };
    let (sa, sb, sc) = (session(&server).await, session(&server).await, session(&server).await);
    let a = make("a", true, &sa);
    let b = make("b", true, &sb);
    let c = make("c", false, &sc);
    sessions.extend([sa, sb, sc]);
    // C's second term blocks until it is interrupted; a drop guard records the cancellation.
    let c_terms = Arc::new(AtomicU32::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let c_task = {
        let (log, c_terms, dropped) = (log.clone(), c_terms.clone(), dropped.clone());
        move |l: rzk_recipes::Leadership| {
            log.lock().unwrap().push(("c".into(), l.token().0));
            let n = c_terms.fetch_add(1, Ordering::SeqCst);
            let dropped = dropped.clone();
            async move {
                struct Guard(Arc<AtomicBool>);
                impl Drop for Guard {
                    fn drop(&mut self) {
                        self.0.store(true, Ordering::SeqCst);
                    }
                }
                let _g = Guard(dropped);
                let work = if n == 0 { 200 } else { 60_000 };
                tokio::time::sleep(Duration::from_millis(work)).await;
                Ok(())
            }
        }
    };
    a.start(selector_task("a", &log, Duration::from_millis(150))).unwrap();
    wait_joined(&a).await;
    b.start(selector_task("b", &log, Duration::from_millis(150))).unwrap();
    wait_joined(&b).await;
    c.start(c_task).unwrap();
    assert!(!c.requeue(), "queued already");
    // C leads third, once; then it is idle.
    eventually(Duration::from_secs(3), "c's first term ends", || {
        c_terms.load(Ordering::SeqCst) == 1 && c.status() == Status::Idle
    })
    .await;
    assert!(!c.has_leadership());
    let p = a.participants().await.unwrap();
    assert!(p.list.iter().all(|p| p.id != "c"), "c absent: {p:?}");
    tokio::time::sleep(Duration::from_millis(700)).await;
    // Requeue: true once, then false.
    let before = a.participants().await.unwrap();
    assert!(c.requeue());
    assert!(!c.requeue());
    wait_joined(&c).await;
    assert_at_tail(&a, &before).await;
    // C leads after at most two more terms.
    let l = tokio::time::timeout(Duration::from_secs(2), c.await_leadership())
        .await
        .expect("c leads again")
        .unwrap();
    c.set_auto_requeue(true);
    let node = l.node_path().to_string();
    let observer = raw_client(&server).await;
    assert!(observer.check_stat(&node).await.unwrap().is_some());
    let before = a.participants().await.unwrap();
    c.interrupt_leadership();
    assert_eq!(l.clone().lost().await, LossReason::Interrupted);
    eventually(Duration::from_secs(1), "c's task future dropped", || {
        dropped.load(Ordering::SeqCst)
    })
    .await;
    wait_presence(&observer, &node, false, Duration::from_secs(1), "c's node deleted").await;
    // Auto-requeue (CURATOR-518 regression): C is queued again, at the tail.
    eventually(Duration::from_secs(2), "c requeued", || c.our_path().is_some_and(|p| p != node))
        .await;
    assert_at_tail(&a, &before).await;
    for s in [a, b, c] {
        s.close().await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    checker.assert_ok();
    let leaders = checker.leaders();
    // The rotation before C's requeue is a, b, c, a, b, a, b, ...
    assert_eq!(&leaders[..3], ["a", "b", "c"], "{leaders:?}");
    let tokens: Vec<i64> = log.lock().unwrap().iter().map(|(_, t)| *t).collect();
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "tokens {tokens:?}");
}
