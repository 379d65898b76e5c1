//! SIGSTOP of the leader's process past its session timeout, then SIGCONT (docs/election.md
//! §2.2): the follower takes over after the timeout; the stopped leader's lease had run out before
//! that; after SIGCONT no write of it succeeds, it learns it lost, and it rejoins on a new session
//! behind the new leader.

mod support;

use std::time::Duration;

use support::participant::Proc;
use support::*;
use zookeeper_client::{Acls, CreateMode};

both_servers! {
    t41_sigstop_latch => sigstop_latch;
}

async fn sigstop_latch(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t41-stop", kind);
    let witness = format!("{path}-witness");
    let raw = raw_client(&server).await;
    raw.mkdir(&witness, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    let mut a = Proc::spawn(&server.hosts(), &path, &witness, "a", "latch");
    a.expect("joined", Duration::from_secs(10)).await;
    let mut b = Proc::spawn(&server.hosts(), &path, &witness, "b", "latch");
    b.expect("joined", Duration::from_secs(10)).await;
    let (_, elected) = a.expect("elected", Duration::from_secs(2)).await;
    let token_a: i64 = elected.split(' ').next().unwrap().parse().unwrap();
    for _ in 0..3 {
        a.expect("write ok", Duration::from_secs(2)).await;
    }
    let stopped = a.signal("STOP");
    // a's last lease report before the stop: its deadline, as a point in our clock.
    let deadline = a
        .lines()
        .iter()
        .rev()
        .find(|(at, l)| *at <= stopped && l.starts_with("lease "))
        .map(|(at, l)| *at + Duration::from_millis(l[6..].parse().unwrap()))
        .expect("a lease line");
    let (b_start, elected) = b.expect("elected", Duration::from_secs(8)).await;
    let token_b: i64 = elected.split(' ').next().unwrap().parse().unwrap();
    let failover = b_start.duration_since(stopped);
    eprintln!(
        "b elected {failover:?} after SIGSTOP; a's deadline was {:?} after it",
        deadline.duration_since(stopped)
    );
    assert!(failover >= Duration::from_millis(3000) && failover <= Duration::from_millis(5500));
    assert!(token_b > token_a);
    assert!(deadline <= stopped + T, "a's deadline past the stop + T");
    assert!(deadline < b_start, "a's lease ran out before b started");
    for _ in 0..3 {
        b.expect("write ok", Duration::from_secs(2)).await;
    }
    tokio::time::sleep_until((stopped + 2 * T).into()).await;
    let resumed = a.signal("CONT");
    let (learned, reason) = a.expect("lost", Duration::from_secs(2)).await;
    eprintln!("a learned ({reason}) {:?} after SIGCONT", learned.duration_since(resumed));
    assert!(learned.duration_since(resumed) < Duration::from_millis(500));
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A write a had in flight when it was stopped may have been applied then (its session was
    // still valid) and its reply read after SIGCONT: at most that one may be reported, and it
    // must precede every write of b on the server. Nothing a sends after waking may succeed.
    let lines = a.lines();
    let late: Vec<&str> = lines
        .iter()
        .filter(|(at, l)| *at > resumed && l.starts_with("write ok"))
        .map(|(_, l)| l.as_str())
        .collect();
    let first_b = b.writes().iter().map(|w| w.0).min().expect("b wrote");
    let token_a_text = token_a.to_string();
    let before_b = |l: &str| {
        // "write ok <token> <mzxid>"
        let mut it = l.split(' ').skip(2);
        it.next() == Some(token_a_text.as_str())
            && it.next().and_then(|z| z.parse::<i64>().ok()).is_some_and(|z| z < first_b)
    };
    assert!(
        late.len() <= 1 && late.iter().all(|l| before_b(l)),
        "a write of a succeeded after SIGCONT: {lines:?}"
    );
    // Server order of the witness writes: the token never goes back.
    let mut writes: Vec<(i64, i64)> = a.writes().into_iter().chain(b.writes()).collect();
    writes.sort();
    assert!(writes.windows(2).all(|w| w[0].1 <= w[1].1), "witness order {writes:?}");
    // a rejoined on a new session: when b goes, a leads with a larger token.
    b.kill();
    let (_, elected) = a.expect("elected", Duration::from_secs(8)).await;
    let token_a2: i64 = elected.split(' ').next().unwrap().parse().unwrap();
    assert!(token_a2 > token_b);
}
