//! The process-fault scenarios of a group of holders, shared by the Rust-only suites (t40
//! `kill -9`, t41 SIGSTOP) and the mixed ones with Curator holders (t61): every member is a
//! process printing the participant's lines (src/bin/participant.rs, or
//! tests/java/CuratorHolder.java), the first holder is faulted, and one checker judges the
//! holds of every process (`elected` to `lost`) and the witness writes on the server's clock.

use std::time::{Duration, Instant};

use rzk_client::{Acls, CreateMode};
use rzk_testkit::lines::Line;

use super::checker::{check_at_most, check_writes};
use super::participant::{token, Proc};
use super::{raw_client, test_path, wait_children, Kind, Server, Settings, T};

/// The language of a member: the Rust participant or a Curator 5.4 holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Rust,
    Java,
}

/// A member of a group: its language and its recipe (`--recipe`).
pub type Member<'a> = (Lang, &'a str);

impl Lang {
    /// How long its first line may take on a loaded machine (a JVM starts slowly).
    pub fn startup(self) -> Duration {
        match self {
            Lang::Rust => Duration::from_secs(10),
            Lang::Java => Duration::from_secs(30),
        }
    }
}

/// A server, a lock path and its witness node (writable by anyone), and a raw client.
pub struct Scene {
    pub server: Server,
    pub path: String,
    pub witness: String,
    pub raw: rzk_client::Client,
}

impl Scene {
    pub async fn start(kind: Kind, settings: Settings, test: &str) -> Scene {
        let server = Server::start(kind, settings);
        let path = test_path(test, kind);
        let witness = format!("{path}-witness");
        let raw = raw_client(&server).await;
        raw.mkdir(&witness, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
        Scene { server, path, witness, raw }
    }

    /// Starts a member connected to `hosts` (the server's, or a proxy's).
    pub fn spawn(&self, hosts: &str, id: &str, (lang, recipe): Member<'_>) -> Proc {
        match lang {
            Lang::Rust => Proc::spawn(hosts, &self.path, &self.witness, id, recipe),
            Lang::Java => super::java::holder(hosts, &self.path, &self.witness, id, recipe),
        }
    }

    /// Starts a member that holds; returns it and its token.
    pub async fn holding(&self, hosts: &str, id: &str, member: Member<'_>) -> (Proc, i64) {
        let mut p = self.spawn(hosts, id, member);
        let (_, elected) = p.expect("elected", member.0.startup()).await;
        (p, token(&elected))
    }

    /// Starts a member that queues as the `n`-th waiter (from 0) behind `before` members;
    /// returns once its node is there: below the lock path (one per member), or for a
    /// semaphore under `locks`, where the first waiter holds the internal mutex. A race
    /// election has no node of its own until it wins: its `joined` line says the first round
    /// is decided.
    pub async fn waiting(&self, id: &str, member: Member<'_>, before: usize, n: usize) -> Proc {
        let mut p = self.spawn(&self.server.hosts(), id, member);
        p.expect("joined", member.0.startup()).await;
        match member.1 {
            "race" => {}
            r if r.starts_with("semaphore") => {
                wait_children(&self.raw, &format!("{}/locks", self.path), n + 1).await;
            }
            _ => {
                wait_children(&self.raw, &self.path, before + 1).await;
            }
        }
        p
    }
}

/// The failover limits after a holder's session can only end by expiry (T = 4 s, tick 500 ms).
pub fn assert_failover(failover: Duration) {
    assert!(
        failover >= Duration::from_millis(3000) && failover <= Duration::from_millis(5500),
        "failover {failover:?}"
    );
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

/// `kill -9` of the first holder: members start in order, the first `holders` hold, the
/// others queue. The next in line (a race: whoever wins) holds 3.0-5.5 s after the kill with a
/// larger token, the last still waits, the checker sees at most `holders` at once, and the
/// witness writes in server order show the same and end with a living holder's token.
pub async fn kill9(kind: Kind, test: &str, members: &[Member<'_>], holders: usize) {
    let sc = Scene::start(kind, Settings::default(), test).await;
    let mut procs = Vec::new();
    let mut tokens = Vec::new();
    for (i, (id, member)) in ["a", "b", "c", "d"].into_iter().zip(members).enumerate() {
        if i < holders {
            let (p, t) = sc.holding(&sc.server.hosts(), id, *member).await;
            procs.push(p);
            tokens.push(t);
        } else {
            procs.push(sc.waiting(id, *member, i, i - holders).await);
        }
    }
    for _ in 0..3 {
        procs[0].expect("write ok", Duration::from_secs(2)).await;
    }
    let killed = procs[0].kill();
    let (n, (next_start, elected)) = match members[0].1 {
        "race" => first_elected(&procs[holders..], Duration::from_secs(8)).await,
        _ => (0, procs[holders].expect("elected", Duration::from_secs(8)).await),
    };
    let (next_i, last_i) = (holders + n, holders + 1 - n);
    let next = &mut procs[next_i];
    let token_next = token(&elected);
    let failover = next_start.duration_since(killed);
    eprintln!("{members:?}: {} holds {failover:?} after kill -9 of a", next.id);
    assert_failover(failover);
    assert!(tokens.iter().all(|t| token_next > *t), "{token_next} after {tokens:?}");
    for _ in 0..3 {
        next.expect("write ok", Duration::from_secs(2)).await;
    }
    tokens.push(token_next);
    assert_eq!(procs[last_i].elected_count(), 0, "the last still waits");
    // a's hold ends at the kill, the others' at the end.
    let end = Instant::now();
    let mut terms = procs[0].terms(killed);
    for p in &mut procs[1..] {
        terms.extend(p.terms(end));
        p.kill();
    }
    check_at_most(&terms, holders, Duration::ZERO).unwrap();
    // a's old token and the next holder's both wrote, and the last write is a living holder's.
    let writes: Vec<(i64, i64)> = procs.iter().flat_map(|p| p.writes()).collect();
    check_writes(&writes, holders).unwrap();
    assert!(writes.iter().any(|w| w.1 == tokens[0]) && writes.iter().any(|w| w.1 == token_next));
    let (data, _) = sc.raw.get_data(&sc.witness).await.unwrap();
    let data = String::from_utf8_lossy(&data).to_string();
    let last: i64 = data.split('|').nth(1).unwrap().parse().unwrap();
    assert!(last != tokens[0] && tokens.contains(&last), "last write {data} of {tokens:?}");
}

/// A group whose members but the last hold: `a` (the first, to be faulted, connected to
/// `a_hosts`), the `others`, and `b`, the last, waiting.
pub struct Group {
    pub sc: Scene,
    pub a: Proc,
    pub token_a: i64,
    pub others: Vec<Proc>,
    pub b: Proc,
}

impl Group {
    pub async fn start(sc: Scene, a_hosts: &str, members: &[Member<'_>]) -> Group {
        let (a, token_a) = sc.holding(a_hosts, "a", members[0]).await;
        let mut others = Vec::new();
        let holders = members.len() - 1;
        for (id, member) in ["c", "d"].into_iter().zip(&members[1..holders]) {
            others.push(sc.holding(&sc.server.hosts(), id, *member).await.0);
        }
        let b = sc.waiting("b", members[holders], holders, 0).await;
        let mut g = Group { sc, a, token_a, others, b };
        for _ in 0..3 {
            g.a.expect("write ok", Duration::from_secs(2)).await;
        }
        g
    }

    /// How many hold at once.
    pub fn holders(&self) -> usize {
        1 + self.others.len()
    }

    /// Every process's witness writes, checked on the server's clock.
    pub fn check_writes(&self) {
        let procs = [&self.a, &self.b].into_iter().chain(&self.others);
        let writes: Vec<(i64, i64)> = procs.flat_map(|p| p.writes()).collect();
        check_writes(&writes, self.holders()).unwrap();
    }
}

/// The end of a's first hold by its own account: the last `lease` line before `stopped` plus
/// the time it had left (the participant's deadline), for the Rust participant; none for a
/// Curator holder, which knows no deadline.
fn deadline_before(a: &Proc, stopped: Instant) -> Option<Instant> {
    a.lines()
        .iter()
        .rev()
        .find(|(at, l)| *at <= stopped && l.starts_with("lease "))
        .map(|(at, l)| *at + Duration::from_millis(l[6..].parse().unwrap()))
}

/// SIGSTOP of `a` past its session timeout, then SIGCONT: `b` holds 3.0-5.5 s after the stop
/// with a larger token; after SIGCONT no write of a succeeds, it learns it lost, and it
/// acquires again on a new session behind b.
///
/// The Rust participant's hold ends at its deadline, before b's start, so the checker judges
/// every hold. A stopped JVM cannot end anything: a Curator holder's first hold, by its own
/// lines, runs until after SIGCONT, past b's start (CURATOR-206: two holders after an expiry),
/// so the checker judges every other hold, and what keeps a out is its fenced writes.
pub async fn sigstop(kind: Kind, test: &str, members: &[Member<'_>]) {
    let sc = Scene::start(kind, Settings::default(), test).await;
    let hosts = sc.server.hosts();
    let mut g = Group::start(sc, &hosts, members).await;
    let stopped = g.a.signal("STOP");
    let deadline = deadline_before(&g.a, stopped);
    assert_eq!(deadline.is_some(), members[0].0 == Lang::Rust, "lease lines of a");
    let (b_start, elected) = g.b.expect("elected", Duration::from_secs(8)).await;
    let token_b = token(&elected);
    eprintln!("{members:?}: b holds {:?} after SIGSTOP", b_start.duration_since(stopped));
    assert_failover(b_start.duration_since(stopped));
    assert!(token_b > g.token_a);
    if let Some(deadline) = deadline {
        assert!(deadline <= stopped + T, "a's deadline past the stop + T");
        assert!(deadline < b_start, "a's lease ran out before b started");
    }
    for _ in 0..3 {
        g.b.expect("write ok", Duration::from_secs(2)).await;
    }
    tokio::time::sleep_until((stopped + 2 * T).into()).await;
    g.a.signal("CONT");
    // Once `kill` has returned the signal is delivered: the bound below excludes its start.
    let resumed = Instant::now();
    let (learned, reason) = g.a.expect("lost", Duration::from_secs(3)).await;
    eprintln!("a learned ({reason}) {:?} after SIGCONT", learned.duration_since(resumed));
    if members[0].0 == Lang::Rust {
        assert!(learned.duration_since(resumed) < Duration::from_millis(500));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_no_late_write(&g.a, resumed, g.token_a, &g.b);
    // a rejoined on a new session: when b goes, a holds again with a larger token.
    let b_end = g.b.kill();
    let (_, elected) = g.a.expect("elected", Duration::from_secs(8)).await;
    assert!(token(&elected) > token_b);
    let mut terms = g.a.terms(Instant::now());
    match deadline {
        Some(deadline) => terms[0].end = Some(deadline),
        None => {
            assert!(terms[0].end.unwrap() > b_start, "a Curator hold ends after SIGCONT");
            terms.remove(0);
        }
    }
    terms.extend(g.b.terms(b_end));
    for p in &g.others {
        terms.extend(p.terms(Instant::now()));
    }
    check_at_most(&terms, g.holders(), Duration::ZERO).unwrap();
    g.check_writes();
}

/// A write `a` had in flight when it was stopped may have been applied then (its session was
/// still valid) and its reply read after SIGCONT: at most that one may be reported, and it must
/// precede every write of `b` on the server. Nothing a sends after waking may succeed.
fn assert_no_late_write(a: &Proc, resumed: Instant, token_a: i64, b: &Proc) {
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
}
