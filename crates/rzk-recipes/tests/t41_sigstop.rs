//! SIGSTOP of a holder's process past its session timeout, then SIGCONT (docs/election.md
//! §2.2), for the latch, the mutex, the read-write lock (a writer stopped, a reader waiting) and
//! a semaphore of two leases (one of two holders stopped): the waiter takes over after the
//! timeout; the stopped holder's lease had run out before that; after SIGCONT no write of it
//! succeeds, it learns it lost, and it acquires again on a new session behind the new holder.
//! The witness writes never show more than N holders at once.

mod support;

use std::time::{Duration, Instant};

use support::checker::{check_at_most, check_writes};
use support::participant::{token, Proc};
use support::*;
use zookeeper_client::{Acls, CreateMode};

both_servers! {
    t41_sigstop_latch => sigstop_latch;
    t41_sigstop_mutex => sigstop_mutex;
    t41_sigstop_read_write => sigstop_read_write;
    t41_sigstop_semaphore => sigstop_semaphore;
}

async fn sigstop_latch(kind: Kind) {
    sigstop(kind, &["latch"; 2]).await
}

async fn sigstop_mutex(kind: Kind) {
    sigstop(kind, &["mutex"; 2]).await
}

async fn sigstop_read_write(kind: Kind) {
    sigstop(kind, &["write", "read"]).await
}

/// a and c hold the two leases, b waits.
async fn sigstop_semaphore(kind: Kind) {
    sigstop(kind, &["semaphore:2"; 3]).await
}

/// Every participant but the last holds; `a` is stopped, and `b` (the last) waits for it.
async fn sigstop(kind: Kind, recipes: &[&str]) {
    let holders = recipes.len() - 1;
    let server = Server::start(kind, Settings::default());
    let path = test_path("t41-stop", kind);
    let witness = format!("{path}-witness");
    let raw = raw_client(&server).await;
    raw.mkdir(&witness, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    let spawn = |id, recipe| Proc::spawn(&server.hosts(), &path, &witness, id, recipe);
    let mut a = spawn("a", recipes[0]);
    let (_, elected) = a.expect("elected", Duration::from_secs(10)).await;
    let token_a = token(&elected);
    let mut others = Vec::new();
    for (id, recipe) in ["c"].iter().zip(&recipes[1..holders]) {
        let mut p = spawn(id, recipe);
        p.expect("elected", Duration::from_secs(10)).await;
        others.push(p);
    }
    let mut b = spawn("b", recipes[holders]);
    b.expect("joined", Duration::from_secs(10)).await;
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
    let token_b = token(&elected);
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
    // a rejoined on a new session: when b goes, a holds again with a larger token.
    let b_end = b.kill();
    let (_, elected) = a.expect("elected", Duration::from_secs(8)).await;
    assert!(token(&elected) > token_b);
    // The checker: a's first hold ended at its deadline, b's at its kill.
    let mut terms = a.terms(Instant::now());
    terms[0].end = Some(deadline);
    terms.extend(b.terms(b_end));
    for p in &others {
        terms.extend(p.terms(Instant::now()));
    }
    check_at_most(&terms, holders, Duration::ZERO).unwrap();
    // Server order of the witness writes: at most `holders` at once; one holder's token never
    // goes back.
    let writes: Vec<(i64, i64)> =
        [&a, &b].into_iter().chain(&others).flat_map(|p| p.writes()).collect();
    check_writes(&writes, holders).unwrap();
}
