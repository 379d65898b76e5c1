//! `kill -9` of a holder's process (docs/election.md §3.4), for every recipe: participant
//! processes (`src/bin/participant.rs`) hold in turn; after the kill of the first holder the
//! next in line holds 3.0-5.5 s later (T = 4 s, tick 500 ms) with a larger token, the last
//! still waits, and the witness writes, in server order, show at most N holders at once (one
//! for the latch, the selector, the mutex and the read-write lock, whose writer is killed with a
//! reader and a writer waiting; two for a semaphore of two leases) and, with one holder, never
//! go back to an older token. The checker sees the same on the processes' own lines. In the
//! race election the next holder is whichever waiter wins the race.

mod support;

use std::time::{Duration, Instant};

use rzk_testkit::lines::Line;
use support::checker::{check_at_most, check_writes};
use support::participant::{token, Proc};
use support::*;
use zookeeper_client::{Acls, CreateMode};

both_servers! {
    t40_kill9_latch => kill9_latch;
    t40_kill9_selector => kill9_selector;
    t40_kill9_mutex => kill9_mutex;
    t40_kill9_read_write => kill9_read_write;
    t40_kill9_semaphore => kill9_semaphore;
    t40_kill9_race => kill9_race;
}

async fn kill9_latch(kind: Kind) {
    kill9(kind, &["latch"; 3], 1).await
}

async fn kill9_selector(kind: Kind) {
    kill9(kind, &["selector"; 3], 1).await
}

async fn kill9_mutex(kind: Kind) {
    kill9(kind, &["mutex"; 3], 1).await
}

/// A writer holds, a reader and a writer wait: the reader holds alone once the writer is
/// killed, and the second writer waits for the reader.
async fn kill9_read_write(kind: Kind) {
    kill9(kind, &["write", "read", "write"], 1).await
}

/// Two leases: a and b hold, c and d wait; a is killed, c takes its lease, d still waits.
async fn kill9_semaphore(kind: Kind) {
    kill9(kind, &["semaphore:2"; 4], 2).await
}

async fn kill9_race(kind: Kind) {
    kill9(kind, &["race"; 3], 1).await
}

/// The first of `procs` to print `elected` within `within`: its index and that line.
async fn first_elected(procs: &[Proc], within: Duration) -> (usize, Line) {
    let end = Instant::now() + within;
    loop {
        for (i, p) in procs.iter().enumerate() {
            if let Some((at, l)) = p.lines().into_iter().find(|(_, l)| l.starts_with("elected ")) {
                return (i, (at, l["elected ".len()..].to_string()));
            }
        }
        assert!(Instant::now() < end, "nobody elected within {within:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Starts a participant per recipe, in order: the first `holders` hold, the others queue.
async fn kill9(kind: Kind, recipes: &[&str], holders: usize) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t40", kind);
    let witness = format!("{path}-witness");
    let raw = raw_client(&server).await;
    raw.mkdir(&witness, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    let mut procs = Vec::new();
    let mut tokens = Vec::new();
    for (i, (id, recipe)) in ["a", "b", "c", "d"].iter().zip(recipes).enumerate() {
        let mut p = Proc::spawn(&server.hosts(), &path, &witness, id, recipe);
        if i < holders {
            tokens.push(token(&p.expect("elected", Duration::from_secs(10)).await.1));
        } else {
            queued(&mut p, &raw, &path, i - holders).await;
        }
        procs.push(p);
    }
    for _ in 0..3 {
        procs[0].expect("write ok", Duration::from_secs(2)).await;
    }
    let killed = procs[0].kill();
    // The queue recipes hand over to the next in line; the race, to whoever wins it.
    let (n, (next_start, elected)) = match recipes[0] {
        "race" => first_elected(&procs[holders..], Duration::from_secs(8)).await,
        _ => (0, procs[holders].expect("elected", Duration::from_secs(8)).await),
    };
    let (next_i, last_i) = (holders + n, holders + 1 - n);
    let next = &mut procs[next_i];
    let token_next = token(&elected);
    let failover = next_start.duration_since(killed);
    eprintln!("{recipes:?}: {} holds {failover:?} after kill -9 of a", next.id);
    assert!(
        failover >= Duration::from_millis(3000) && failover <= Duration::from_millis(5500),
        "failover {failover:?}"
    );
    assert!(tokens.iter().all(|t| token_next > *t), "{token_next} after {tokens:?}");
    for _ in 0..3 {
        next.expect("write ok", Duration::from_secs(2)).await;
    }
    tokens.push(token_next);
    assert_eq!(procs[last_i].elected_count(), 0, "the last still waits");
    // The checker on the processes' lines: a's hold ends at the kill, the others' at the end.
    let end = Instant::now();
    let mut terms = procs[0].terms(killed);
    for p in &mut procs[1..] {
        terms.extend(p.terms(end));
        p.kill();
    }
    check_at_most(&terms, holders, Duration::ZERO).unwrap();
    // The witness in server order: at most `holders` writing at once; a's old token and the
    // next holder's both wrote, and the last write is a living holder's.
    let writes: Vec<(i64, i64)> = procs.iter().flat_map(|p| p.writes()).collect();
    check_writes(&writes, holders).unwrap();
    assert!(writes.iter().any(|w| w.1 == tokens[0]) && writes.iter().any(|w| w.1 == token_next));
    let (data, _) = raw.get_data(&witness).await.unwrap();
    let data = String::from_utf8_lossy(&data).to_string();
    let last: i64 = data.split('|').nth(1).unwrap().parse().unwrap();
    assert!(last != tokens[0] && tokens.contains(&last), "last write {data} of {tokens:?}");
}

/// Waits until the `n`-th waiter (from 0) is queued: its `joined` line for a queue recipe; for
/// a semaphore (whose line comes before it queues), its node under `locks`, where the first
/// waiter holds the internal mutex and the others queue.
async fn queued(p: &mut Proc, raw: &zookeeper_client::Client, path: &str, n: usize) {
    p.expect("joined", Duration::from_secs(10)).await;
    if p.recipe().starts_with("semaphore") {
        wait_children(raw, &format!("{path}/locks"), n + 1).await;
    }
}
