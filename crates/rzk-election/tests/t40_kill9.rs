//! `kill -9` of the leader's process (docs/election.md §3.4), latch, selector and race: three
//! participant processes (`src/bin/participant.rs`); the next in node order (for the race,
//! whichever wins) is elected 3.0-5.5 s after the kill (T = 4 s, tick 500 ms) with a larger
//! token, the third still follows, and the witness writes, in server order, never go back to
//! the old token.

mod support;

use std::time::Duration;

use rzk_testkit::lines::Line;
use support::checker::{check, TermRecord};
use support::participant::Proc;
use support::*;
use zookeeper_client::{Acls, CreateMode};

both_servers! {
    t40_kill9_latch => kill9_latch;
    t40_kill9_selector => kill9_selector;
    t40_kill9_race => kill9_race;
}

async fn kill9_latch(kind: Kind) {
    kill9(kind, "latch").await
}

async fn kill9_selector(kind: Kind) {
    kill9(kind, "selector").await
}

async fn kill9_race(kind: Kind) {
    kill9(kind, "race").await
}

/// The first of `procs` to print `elected` within `within`: its index and that line.
async fn first_elected(procs: &[Proc], within: Duration) -> (usize, Line) {
    let end = std::time::Instant::now() + within;
    loop {
        for (i, p) in procs.iter().enumerate() {
            if let Some(line) = p.lines().into_iter().find(|(_, l)| l.starts_with("elected ")) {
                let (at, l) = line;
                return (i, (at, l["elected ".len()..].to_string()));
            }
        }
        assert!(std::time::Instant::now() < end, "nobody elected within {within:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn kill9(kind: Kind, recipe: &str) {
    let server = Server::start(kind, Settings::default());
    let path = test_path("t40", kind);
    let witness = format!("{path}-witness");
    let raw = raw_client(&server).await;
    raw.mkdir(&witness, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    let mut procs = Vec::new();
    for id in ["a", "b", "c"] {
        let mut p = Proc::spawn(&server.hosts(), &path, &witness, id, recipe);
        p.expect("joined", Duration::from_secs(10)).await;
        procs.push(p);
    }
    let (a_start, a_elected) = procs[0].expect("elected", Duration::from_secs(2)).await;
    let token_a: i64 = a_elected.split(' ').next().unwrap().parse().unwrap();
    for _ in 0..3 {
        procs[0].expect("write ok", Duration::from_secs(2)).await;
    }
    let killed = procs[0].kill();
    // The queue recipes elect the next in node order; the race, whoever wins it.
    let (next, (b_start, b_elected)) = match recipe {
        "race" => first_elected(&procs[1..], Duration::from_secs(8)).await,
        _ => (0, procs[1].expect("elected", Duration::from_secs(8)).await),
    };
    let (b, c) = (1 + next, 2 - next);
    let token_b: i64 = b_elected.split(' ').next().unwrap().parse().unwrap();
    let failover = b_start.duration_since(killed);
    eprintln!("{recipe}: {} elected {failover:?} after kill -9 of a", procs[b].id);
    assert!(
        failover >= Duration::from_millis(3000) && failover <= Duration::from_millis(5500),
        "failover {failover:?}"
    );
    assert!(token_b > token_a);
    for _ in 0..3 {
        procs[b].expect("write ok", Duration::from_secs(2)).await;
    }
    assert_eq!(procs[c].elected_count(), 0, "the third still follows");
    let b_end = procs[b].kill();
    procs[c].kill();
    // The checker: a's term ends at the kill; b's starts later, with a larger token.
    let terms = vec![
        TermRecord {
            participant: "a".into(),
            node: String::new(),
            token: token_a,
            start: a_start,
            end: Some(killed),
        },
        TermRecord {
            participant: procs[b].id.clone(),
            node: String::new(),
            token: token_b,
            start: b_start,
            end: Some(b_end),
        },
    ];
    check(&terms, Duration::ZERO).unwrap();
    // The witness in server order: tokens never go back; a's last write precedes b's first.
    let mut writes: Vec<(i64, i64)> = procs.iter().flat_map(|p| p.writes()).collect();
    writes.sort();
    assert!(writes.windows(2).all(|w| w[0].1 <= w[1].1), "witness order {writes:?}");
    assert!(writes.iter().any(|w| w.1 == token_a) && writes.iter().any(|w| w.1 == token_b));
    let (data, _) = raw.get_data(&witness).await.unwrap();
    let b_id = &procs[b].id;
    assert!(String::from_utf8_lossy(&data).starts_with(&format!("{b_id}|{token_b}|")));
}
