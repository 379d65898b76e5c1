//! `rzk services NAME --watch` and seed 002's online/offline flow, against the in-process
//! server and Apache ZooKeeper: three instances registered by separate `rzk register`
//! processes are listed by two `rzk services --watch` processes (text and `--json`) and by
//! three live service caches on sessions of their own; one registration killed with SIGKILL
//! disappears from every one of them, the others stay; Ctrl-C stops a watch with status 0.

mod support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rzk_recipes::{
    discovery::ServiceCache,
    session::{Session, SessionConfig},
};
use rzk_testkit::lines::Lines;
use serde_json::Value;
use support::{Kind, Server, TICK_MS};

both_servers! {
    killed_instance_leaves_every_watch => a_killed_instance_leaves_every_watch;
}

/// The session timeout the registrations ask for (the servers' maximum at a 100 ms tick).
const SESSION_MS: u64 = 2_000;
/// How long after the SIGKILL every list may still show the instance. The server expires a
/// session at most one tick after its timeout (expiry is checked per tick); then one
/// notification and one read per list. The slack covers a loaded 2-core machine running a
/// JVM server; the measured figure is printed, and the benchmark measures it properly.
const GONE_LIMIT: Duration = Duration::from_millis(SESSION_MS + TICK_MS as u64 + 10_000);
/// How long registrations and first listings may take.
const START_LIMIT: Duration = Duration::from_secs(30);

/// A child process, killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn register(cs: &str, id: &str) -> Proc {
    let child = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["--connect", cs, "register", "web", "--address", "10.0.0.2", "--port", "8080"])
        .args(["--id", id, "--session-timeout-ms", &SESSION_MS.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    Proc(child)
}

/// `rzk services web --watch [extra]`, its standard output captured.
fn watch(cs: &str, extra: &[&str]) -> (Proc, Lines) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["--connect", cs, "services", "web", "--watch"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = Lines::capture("rzk services --watch", child.stdout.take().unwrap());
    (Proc(child), lines)
}

/// The sets a `--watch --json` printed, as id lists (each line must be one set).
fn json_sets(lines: &Lines) -> Vec<Vec<String>> {
    let parse = |l: &str| -> Vec<String> {
        let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
        assert_eq!(v["name"], "web", "{l}");
        let instances = v["instances"].as_array().unwrap_or_else(|| panic!("no instances: {l}"));
        instances.iter().map(|i| i["id"].as_str().unwrap().to_string()).collect()
    };
    lines.all().iter().map(|(_, l)| parse(l)).collect()
}

/// The sets a text `--watch` printed: a `web: N instances` line, then N instance lines.
fn text_sets(lines: &Lines) -> Vec<Vec<String>> {
    let all: Vec<String> = lines.all().into_iter().map(|(_, l)| l).collect();
    let mut sets = Vec::new();
    let mut i = 0;
    while i < all.len() {
        let n: usize = all[i]
            .strip_prefix("web: ")
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("not a set header: {:?}", all[i]));
        if i + n >= all.len() {
            break; // the set is still being printed
        }
        sets.push(all[i + 1..=i + n].iter().map(|l| l.split(' ').next().unwrap().into()).collect());
        i += n + 1;
    }
    sets
}

fn ids(want: &[&str]) -> Vec<String> {
    want.iter().map(|s| s.to_string()).collect()
}

/// Waits until the last set of both watches and every cache is `want`; returns when.
fn wait_all(
    watches: &[(Proc, Lines); 2],
    caches: &[ServiceCache<Value>],
    want: &[&str],
    limit: Duration,
) -> Instant {
    let want = ids(want);
    let deadline = Instant::now() + limit;
    loop {
        let (text, json) = (text_sets(&watches[0].1), json_sets(&watches[1].1));
        let cached: Vec<Vec<String>> =
            caches.iter().map(|c| c.instances().into_iter().map(|i| i.id).collect()).collect();
        if text.last() == Some(&want)
            && json.last() == Some(&want)
            && cached.iter().all(|c| *c == want)
        {
            return Instant::now();
        }
        assert!(
            Instant::now() < deadline,
            "want {want:?}: text {text:?}, json {json:?}, caches {cached:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn a_killed_instance_leaves_every_watch(kind: Kind) {
    let server = Server::start(kind);
    let cs = server.hosts();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let _in_rt = rt.enter();
    let sessions: Vec<Session> =
        (0..3).map(|_| rt.block_on(Session::connect(SessionConfig::new(&cs))).unwrap()).collect();
    let caches: Vec<ServiceCache<Value>> =
        sessions.iter().map(|s| ServiceCache::new(s, "/services", "web").unwrap()).collect();
    let watches = [watch(&cs, &[]), watch(&cs, &["--json"])];
    // The watches print the empty service before any instance registers, so that their
    // first set is known.
    wait_all(&watches, &caches, &[], START_LIMIT);
    let mut registered: Vec<Proc> = ["i1", "i2", "i3"].iter().map(|id| register(&cs, id)).collect();
    wait_all(&watches, &caches, &["i1", "i2", "i3"], START_LIMIT);

    registered[1].0.kill().unwrap(); // SIGKILL: nothing unregisters, the session must expire
    let killed = Instant::now();
    let gone = wait_all(&watches, &caches, &["i1", "i3"], GONE_LIMIT);
    eprintln!("SIGKILLed instance gone from every list after {:?}", gone - killed);

    // The JSON watch printed the sets in order: growing to three, then the two survivors.
    let sets = json_sets(&watches[1].1);
    assert_eq!(sets.first().map(Vec::len), Some(0), "the first set is the empty service");
    assert!(sets.windows(2).all(|w| w[0] != w[1]), "a set printed twice: {sets:?}");
    assert!(sets.contains(&ids(&["i1", "i2", "i3"])), "{sets:?}");

    for (mut p, _) in watches {
        let pid = p.0.id().to_string();
        Command::new("kill").args(["-INT", &pid]).status().unwrap();
        assert_eq!(p.0.wait().unwrap().code(), Some(0), "Ctrl-C ends a watch cleanly");
    }
    drop(registered);
    for s in sessions {
        rt.block_on(s.close());
    }
}
